//! The data folder: created on first start with the database, the
//! human-reference secret, a signing key and an admin API key; reused as is
//! on every later start. The folder is 0700 and every file in it 0600; a
//! folder found open to group or others is tightened at start.

use std::fs::{DirBuilder, OpenOptions, Permissions};
use std::io::Write as _;
use std::os::unix::fs::{DirBuilderExt as _, OpenOptionsExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};

use rusqlite::{Connection, OptionalExtension};

use crate::keyring::{self, Ring, SECRET_KEY};
use crate::store::{DB_FILE, open_writer};
use crate::{apikeys, random};

/// The admin key's file inside the data folder (mode 0600).
pub const ADMIN_KEY_FILE: &str = "admin.key";

/// How to tell the operator about a new admin key. On a terminal the key
/// is shown once; anywhere else (a pipe, a file, a container's log) only
/// where it was written, so no log keeps the key.
pub fn admin_key_notice(data_dir: &Path, key: &str, to_terminal: bool) -> String {
    let path = data_dir.join(ADMIN_KEY_FILE);
    if to_terminal {
        format!(
            "admin API key (shown once; also in {}): {key}",
            path.display()
        )
    } else {
        format!("admin API key written to {} (mode 0600)", path.display())
    }
}

/// What a start needs from the data folder.
#[derive(Debug)]
pub struct Prepared {
    pub db_path: PathBuf,
    pub ring: Ring,
    pub human_secret: [u8; 32],
    /// The admin key, when this start created it.
    pub new_admin_key: Option<String>,
}

/// Opens the data folder, creating everything on first start.
pub fn prepare(data_dir: &Path) -> anyhow::Result<Prepared> {
    DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(data_dir)
        .map_err(|e| anyhow::anyhow!("cannot create data folder {}: {e}", data_dir.display()))?;
    tighten(data_dir)?;
    let db_path = data_dir.join(DB_FILE);
    let conn = open_writer(&db_path)?;
    let new_admin_key = match read_secret(&conn)? {
        Some(_) => None,
        None => Some(first_start(&conn, data_dir)?),
    };
    let human_secret = read_secret(&conn)?
        .ok_or_else(|| anyhow::anyhow!("the deployment secret is missing after set-up"))?;
    let ring =
        keyring::load(&conn).map_err(|e| anyhow::anyhow!("cannot load signing keys: {e}"))?;
    conn.close().map_err(|(_, e)| e)?;
    Ok(Prepared {
        db_path,
        ring,
        human_secret,
        new_admin_key,
    })
}

/// Makes the data folder 0700 and every file in it 0600 when group or
/// others may read, write or enter them (a folder made by hand, by another
/// tool or by an older release), with a warning naming each change. A
/// change the file system refuses (a folder owned by another user) is a
/// warning too: the files Mandate creates are 0600 anyway.
fn tighten(data_dir: &Path) -> anyhow::Result<()> {
    tighten_one(data_dir, 0o700);
    let entries = std::fs::read_dir(data_dir)
        .map_err(|e| anyhow::anyhow!("cannot read data folder {}: {e}", data_dir.display()))?;
    for entry in entries {
        let entry = entry
            .map_err(|e| anyhow::anyhow!("cannot read data folder {}: {e}", data_dir.display()))?;
        // `file_type` does not follow symbolic links: a link is left alone,
        // and so is whatever it points to.
        if entry.file_type().is_ok_and(|kind| kind.is_file()) {
            tighten_one(&entry.path(), 0o600);
        }
    }
    Ok(())
}

fn tighten_one(path: &Path, private: u32) {
    let mode = match std::fs::metadata(path) {
        Ok(metadata) => metadata.permissions().mode() & 0o7777,
        Err(error) => {
            tracing::warn!(path = %path.display(), %error, "cannot read the mode of a data file");
            return;
        }
    };
    if mode & 0o077 == 0 {
        return;
    }
    match std::fs::set_permissions(path, Permissions::from_mode(private)) {
        Ok(()) => tracing::warn!(
            path = %path.display(),
            from = format!("{mode:04o}"),
            to = format!("{private:04o}"),
            "tightened the permissions of a data folder entry open to group or others"
        ),
        Err(error) => tracing::warn!(
            path = %path.display(),
            mode = format!("{mode:04o}"),
            %error,
            "a data folder entry is open to group or others and cannot be tightened"
        ),
    }
}

fn read_secret(conn: &Connection) -> anyhow::Result<Option<[u8; 32]>> {
    let value: Option<Vec<u8>> = conn
        .query_row(
            "SELECT value FROM meta WHERE key = ?1",
            [SECRET_KEY],
            |row| row.get(0),
        )
        .optional()?;
    value
        .map(|bytes| {
            <[u8; 32]>::try_from(bytes.as_slice())
                .map_err(|_| anyhow::anyhow!("the stored deployment secret is not 32 bytes"))
        })
        .transpose()
}

/// Creates the secret, the first signing key and the admin key in one
/// transaction; the admin key file is written and synced before it commits.
fn first_start(conn: &Connection, data_dir: &Path) -> anyhow::Result<String> {
    let tx = conn.unchecked_transaction()?;
    let secret: [u8; 32] = random::bytes();
    tx.execute(
        "INSERT INTO meta (key, value) VALUES (?1, ?2)",
        rusqlite::params![SECRET_KEY, secret.as_slice()],
    )?;
    keyring::rotate(&tx)?;
    let (_, admin_key) = apikeys::create(&tx, None, true)?;
    let path = data_dir.join(ADMIN_KEY_FILE);
    let mut file = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&path)
        .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", path.display()))?;
    writeln!(file, "{admin_key}")?;
    file.sync_all()?;
    tx.commit()?;
    Ok(admin_key)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_admin_key_is_shown_on_a_terminal_only() {
        let dir = Path::new("data");
        let key = "mk_0123456789abcdefghijklmnopqrstuvwxyzABCDEFG";
        let shown = admin_key_notice(dir, key, true);
        assert!(shown.contains(key), "{shown}");
        let piped = admin_key_notice(dir, key, false);
        assert!(!piped.contains(key), "{piped}");
        assert_eq!(piped, "admin API key written to data/admin.key (mode 0600)");
    }
}

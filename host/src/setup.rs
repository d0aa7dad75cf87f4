//! The data folder: created on first start with the database, the
//! human-reference secret, a signing key and an admin API key; reused as is
//! on every later start. The folder is 0700 and every file in it 0600; a
//! folder found open to group or others is tightened at start.
//!
//! The signing keys and the human-reference secret are stored sealed under
//! the key-encryption key (`secrets`), whose file never enters the
//! database. The rules for that file:
//! - a database without the key's check value (a new one, or one made
//!   before secrets were sealed) takes the key file, creating it when there
//!   is none, and has its plain-text secrets sealed in one transaction;
//! - a database with a check value needs that key: no key file, or another
//!   one, and the start is refused; a new key file is never made for it.

use std::fs::{DirBuilder, OpenOptions, Permissions};
use std::io::Write as _;
use std::os::unix::fs::{DirBuilderExt as _, OpenOptionsExt as _, PermissionsExt as _};
use std::path::Path;
use std::sync::Arc;

use crate::store::sql::{self, Connection, OptionalExtension, params};
use mandate_core::Role;

use crate::clock::Now;
use crate::config::Config;
use crate::keyring::{self, Ring, SECRET_KEY};
use crate::recordlog;
use crate::secrets::{CHECK_KEY, Kek, Purpose};
use crate::store::Database;
use crate::store::database::SETUP_LOCK;
use crate::store::orgs::Org;
use crate::store::sql::Dialect;
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

/// What to do next, shown once on a terminal by the start that created the
/// deployment: the dashboard, where the admin key is, a request that issues
/// a first token with it (to `base`, the address the server is reached at),
/// and the SDK's install line.
pub fn first_run_guide(base: &str, data_dir: &Path) -> String {
    let key = data_dir.join(ADMIN_KEY_FILE);
    let key = key.display();
    format!(
        "\
Next steps:
  dashboard   {base}/
  admin key   {key} (an owner key of the organisation \"default\"; keep it secret)
  a first token, for an agent acting for dev@example.com:
    curl -s {base}/v1/vat/issue/l1 -H \"authorization: Bearer $(cat '{key}')\" \\
      -H 'content-type: application/json' \\
      -d '{{\"developer_email\":\"dev@example.com\",\"agent_id\":\"research-bot\",\"resources\":[\"crm:*\"],\"actions\":[\"read\"]}}'
  the SDK     npm install mandate-sdk
  options     mandate config reference (docs/configuration.md)"
    )
}

/// What a start needs from the data folder and the database.
#[derive(Debug)]
pub struct Prepared {
    pub ring: Ring,
    pub human_secret: [u8; 32],
    /// The key-encryption key the secrets were opened with.
    pub kek: Arc<Kek>,
    /// The admin key, when this start created it.
    pub new_admin_key: Option<String>,
    /// The record log's name and keys.
    pub log: recordlog::Prepared,
}

/// Opens the data folder and the database of `config`, creating everything
/// on first start, and opens the secrets with the key file (see the
/// module's rules); sets the record log up (`recordlog::prepare`). On
/// PostgreSQL, hosts starting together take turns (a transaction-level
/// advisory lock, everything in one transaction): the first creates the
/// deployment, the others find it.
pub fn prepare(config: &Config, database: &Database, now: Now) -> anyhow::Result<Prepared> {
    let data_dir = config.data_dir.as_path();
    DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(data_dir)
        .map_err(|e| anyhow::anyhow!("cannot create data folder {}: {e}", data_dir.display()))?;
    tighten(data_dir)?;
    let writer = database.open_writer()?;
    let prepared = match writer.dialect() {
        Dialect::Sqlite => prepare_on(config, &writer, now)?,
        Dialect::Postgres => {
            // One transaction under a transaction-level lock (a pooler in
            // transaction mode keeps neither a session's lock nor its
            // connection): the transactions inside are its savepoints.
            let tx = writer.unchecked_transaction()?;
            tx.execute("SELECT pg_advisory_xact_lock(?1)", params![SETUP_LOCK])?;
            let prepared = prepare_on(config, &tx, now)?;
            tx.commit()?;
            prepared
        }
    };
    writer.close()?;
    Ok(prepared)
}

/// [`prepare`]'s reads and writes, on the writer's connection `conn`.
fn prepare_on(config: &Config, conn: &Connection, now: Now) -> anyhow::Result<Prepared> {
    let data_dir = config.data_dir.as_path();
    let key_file = config.key_file_path();
    let key_file = key_file.as_path();
    let kek = unlock(conn, key_file)?;
    let new_admin_key = match read_secret(conn, &kek)? {
        Some(_) => None,
        None => Some(first_start(conn, data_dir, &kek, now)?),
    };
    let human_secret = read_secret(conn, &kek)?
        .ok_or_else(|| anyhow::anyhow!("the deployment secret is missing after set-up"))?;
    let ring = keyring::load(conn, &kek, now)
        .map_err(|e| anyhow::anyhow!("cannot load signing keys: {e}"))?;
    let log = recordlog::prepare(conn, &kek, &config.log, config.public_url.as_deref(), now)?;
    warn_unreachable(conn, now)?;
    Ok(Prepared {
        ring,
        human_secret,
        kek: Arc::new(kek),
        new_admin_key,
        log,
    })
}

/// Warns of each live token whose approval requirement could never match
/// (issued before the server refused such requirements at issue and
/// delegation): its requirement asks for approval of nothing, so the
/// operator should revoke it and issue a corrected one.
fn warn_unreachable(conn: &Connection, now: Now) -> anyhow::Result<()> {
    for token in crate::store::tokens::unreachable_requirements(conn, now.s())? {
        tracing::warn!(
            org = token.org.number(),
            jth = %token.jth,
            agent_id = %token.agent_id,
            code = token.reason.code(),
            "a live token's require_approval could never match: {}; revoke it and issue one that asks for approval of what it can do",
            token.reason,
        );
    }
    Ok(())
}

fn read_meta(conn: &Connection, key: &str) -> sql::Result<Option<Vec<u8>>> {
    conn.query_row("SELECT value FROM meta WHERE key = ?1", [key], |row| {
        row.get(0)
    })
    .optional()
}

/// The key-encryption key of this database, checked against its check
/// value; on a database without one, the key file's key (created if there
/// is none), with every plain-text secret sealed under it.
fn unlock(conn: &Connection, key_file: &Path) -> anyhow::Result<Kek> {
    let Some(check) = read_meta(conn, CHECK_KEY)? else {
        let kek = match Kek::read_file(key_file)? {
            Some(kek) => kek,
            None => Kek::create_file(key_file)?,
        };
        seal_plaintext(conn, &kek, key_file)?;
        return Ok(kek);
    };
    let kek = Kek::read_file(key_file)?.ok_or_else(|| {
        anyhow::anyhow!(
            "the key file {} is missing, and this database's secrets are encrypted under it; \
             restore it, or name it with --key-file (MANDATE_KEY_FILE, config key_file)",
            key_file.display()
        )
    })?;
    if !kek.matches_check(&check) {
        anyhow::bail!(
            "the key file {} does not open this database's secrets; \
             name the key file this data folder was made with (--key-file, MANDATE_KEY_FILE, config key_file)",
            key_file.display()
        );
    }
    Ok(kek)
}

/// Seals the secrets a database made before they were encrypted holds in
/// plain text (32-byte values), and stores the key's check value, in one
/// transaction. On a new database it only stores the check value. The plain
/// text is overwritten on its pages (`secure_delete`) and the log is emptied
/// afterwards, so no copy of it stays in the files.
fn seal_plaintext(conn: &Connection, kek: &Kek, key_file: &Path) -> anyhow::Result<()> {
    let plain = |what: &str, bytes: &[u8]| {
        <[u8; 32]>::try_from(bytes).map_err(|_| {
            anyhow::anyhow!(
                "{what} is not a plain 32-byte secret, yet the database has no key check value; \
                 it cannot be opened"
            )
        })
    };
    if let Some(sqlite) = conn.as_sqlite() {
        sqlite.pragma_update(None, "secure_delete", "ON")?;
    }
    let tx = conn.unchecked_transaction()?;
    let keys: Vec<(String, Vec<u8>)> = tx
        .prepare_cached("SELECT kid, secret FROM signing_keys")?
        .query_map([], |row| Ok((row.get(0)?, row.get(1)?)))?
        .collect::<sql::Result<_>>()?;
    for (kid, secret) in &keys {
        let secret = plain(&format!("the signing key {kid}"), secret)?;
        let sealed = kek.seal(Purpose::SigningKey, kid, &secret)?;
        tx.execute(
            "UPDATE signing_keys SET secret = ?1 WHERE kid = ?2",
            params![sealed, kid],
        )?;
    }
    let human = read_meta(&tx, SECRET_KEY)?;
    if let Some(secret) = &human {
        let secret = plain("the human-reference secret", secret)?;
        let sealed = kek.seal(Purpose::HumanRefSecret, SECRET_KEY, &secret)?;
        tx.execute(
            "UPDATE meta SET value = ?1 WHERE key = ?2",
            params![sealed, SECRET_KEY],
        )?;
    }
    tx.execute(
        "INSERT INTO meta (key, value) VALUES (?1, ?2)",
        params![CHECK_KEY, kek.check_value()],
    )?;
    tx.commit()?;
    if let Some(sqlite) = conn.as_sqlite() {
        sqlite.pragma_update(None, "secure_delete", "OFF")?;
    }
    if keys.is_empty() && human.is_none() {
        return Ok(());
    }
    let busy: i64 = conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |row| row.get(0))?;
    if busy != 0 {
        tracing::warn!(
            "another connection kept the write-ahead log from being emptied; \
             it may hold the secrets in plain text until its next checkpoint"
        );
    }
    tracing::warn!(
        key_file = %key_file.display(),
        signing_keys = keys.len(),
        "sealed the plain-text signing keys and human-reference secret under the key file; \
         keep the key file: the database cannot be used without it"
    );
    Ok(())
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

/// The human-reference secret, opened with `kek`; `None` before the first
/// start.
fn read_secret(conn: &Connection, kek: &Kek) -> anyhow::Result<Option<[u8; 32]>> {
    read_meta(conn, SECRET_KEY)?
        .map(|sealed| {
            kek.open(Purpose::HumanRefSecret, SECRET_KEY, &sealed)
                .map_err(|e| anyhow::anyhow!("the human-reference secret cannot be opened: {e}"))
        })
        .transpose()
}

/// The deployment's admin key: the owner of `default`, which also manages
/// organisations.
const ADMIN: apikeys::NewKey<'static> = apikeys::NewKey {
    org: Org::DEFAULT,
    role: Role::Owner,
    email: None,
    is_admin: true,
};

/// Creates the secret, the first signing key and the admin key in one
/// transaction, the secrets sealed under `kek`; the admin key file is
/// written and synced before it commits.
fn first_start(conn: &Connection, data_dir: &Path, kek: &Kek, now: Now) -> anyhow::Result<String> {
    let tx = conn.unchecked_transaction()?;
    let secret: [u8; 32] = random::bytes();
    tx.execute(
        "INSERT INTO meta (key, value) VALUES (?1, ?2)",
        params![
            SECRET_KEY,
            kek.seal(Purpose::HumanRefSecret, SECRET_KEY, &secret)?
        ],
    )?;
    keyring::rotate(&tx, kek, now)?;
    let (_, admin_key) = apikeys::create(&tx, ADMIN, now)?;
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
    use mandate_core::{Identity, Jwks, SigningKey, VerifyOptions, human_ref, verify};
    use serde_json::{Value, json};

    use base64::Engine as _;
    use base64::engine::general_purpose::URL_SAFE_NO_PAD;
    use sha2::{Digest as _, Sha256};

    use super::*;
    use crate::clock::now_s;
    use crate::config::Config;
    use crate::secrets::KEY_FILE;
    use crate::store::{DB_FILE, schema};

    const HUMAN_SECRET: [u8; 32] = [0x5a; 32];
    const RETIRED_KEY: [u8; 32] = [0x6b; 32];
    const ACTIVE_KEY: [u8; 32] = [0x7c; 32];

    /// A data folder as the release before sealed secrets left it: schema
    /// version 2, the secrets in plain rows (one signing key retired while
    /// its tokens live, one active), an admin key.
    fn plaintext_folder(data: &Path) -> String {
        let conn = rusqlite::Connection::open(data.join(DB_FILE)).unwrap();
        conn.pragma_update(None, "journal_mode", "WAL").unwrap();
        conn.execute_batch(schema::SCHEMA).unwrap();
        conn.execute_batch(schema::WORKFLOW_COUNTS).unwrap();
        conn.pragma_update(None, "user_version", 2).unwrap();
        conn.execute(
            "INSERT INTO meta (key, value) VALUES (?1, ?2)",
            rusqlite::params![SECRET_KEY, HUMAN_SECRET.as_slice()],
        )
        .unwrap();
        let now = now_s();
        for (secret, created, retired, max_exp) in [
            (RETIRED_KEY, now - 100, Some(now - 50), now + 3600),
            (ACTIVE_KEY, now - 50, None, 0),
        ] {
            conn.execute(
                "INSERT INTO signing_keys (kid, secret, created_at, retired_at, max_exp)
                 VALUES (?1, ?2, ?3, ?4, ?5)",
                rusqlite::params![
                    SigningKey::from_secret(&secret).kid(),
                    secret.as_slice(),
                    created,
                    retired,
                    max_exp
                ],
            )
            .unwrap();
        }
        let admin_key = format!("{}{}", apikeys::PREFIX, URL_SAFE_NO_PAD.encode([0x3c; 32]));
        conn.execute(
            "INSERT INTO api_keys (id, hash, email, is_admin, created_at)
             VALUES ('key_01kaqv3f0000000000000000ad', ?1, NULL, 1, ?2)",
            rusqlite::params![Sha256::digest(admin_key.as_bytes()).as_slice(), now],
        )
        .unwrap();
        std::fs::write(data.join(ADMIN_KEY_FILE), format!("{admin_key}\n")).unwrap();
        conn.close().unwrap();
        admin_key
    }

    /// Every stored file of the database, concatenated.
    fn database_bytes(data: &Path) -> Vec<u8> {
        ["", "-wal", "-shm"]
            .iter()
            .filter_map(|suffix| std::fs::read(data.join(format!("{DB_FILE}{suffix}"))).ok())
            .flatten()
            .collect()
    }

    fn holds(haystack: &[u8], needle: &[u8]) -> bool {
        haystack.windows(needle.len()).any(|w| w == needle)
    }

    #[tokio::test]
    async fn a_plaintext_database_is_sealed_in_place_and_keeps_its_keys() {
        crate::install_tls_provider();
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path();
        let admin_key = plaintext_folder(data);
        let before = database_bytes(data);
        assert!(holds(&before, &HUMAN_SECRET) && holds(&before, &ACTIVE_KEY));
        let keys = [ACTIVE_KEY, RETIRED_KEY].map(|k| SigningKey::from_secret(&k));
        let jwks_before = Jwks::from_signing_keys(keys.iter());
        let kids = |document: &Value| {
            let mut keys: Vec<Value> = document["keys"].as_array().unwrap().clone();
            keys.sort_by_key(|k| k["kid"].as_str().unwrap().to_owned());
            keys
        };
        let document_before = serde_json::to_value(jwks_before.to_jwk_set()).unwrap();

        let (state, new_admin_key) = crate::AppState::open(Config::for_test(data)).unwrap();
        assert_eq!(new_admin_key, None, "the data folder is reused");
        assert_eq!(state.human_secret, HUMAN_SECRET);
        let key_file = data.join(KEY_FILE);
        let kek_bytes = std::fs::read(&key_file).unwrap();
        assert_eq!(kek_bytes.len(), 32, "the key file was created");

        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let server = tokio::spawn(crate::serve_until(listener, state, async move {
            let _ = stopped.await;
        }));
        let client = reqwest::Client::new();
        let document: Value = client
            .get(format!("{base}/.well-known/jwks.json"))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert_eq!(kids(&document), kids(&document_before));
        let issued: Value = client
            .post(format!("{base}/v1/vat/issue/l1"))
            .bearer_auth(&admin_key)
            .json(
                &json!({"developer_email": "dev@example.com", "agent_id": "bot",
                          "resources": ["crm:*"], "actions": ["read"]}),
            )
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let verified = verify(
            issued["compact_jwt"].as_str().unwrap(),
            &jwks_before,
            now_s(),
            &VerifyOptions::default(),
        )
        .unwrap();
        assert_eq!(verified.header.kid, keys[0].kid());
        let expected = human_ref(&HUMAN_SECRET, &Identity::email("dev@example.com").unwrap());
        assert_eq!(verified.claims.svc_human, expected);

        let after = database_bytes(data);
        for (name, secret) in [
            ("the human-reference secret", HUMAN_SECRET.as_slice()),
            ("the active signing key", ACTIVE_KEY.as_slice()),
            ("the retired signing key", RETIRED_KEY.as_slice()),
            ("the key-encryption key", kek_bytes.as_slice()),
        ] {
            assert!(!holds(&after, secret), "{name} is in the database files");
        }
        let _ = stop.send(());
        server.await.unwrap().unwrap();
        let after = database_bytes(data);
        assert!(!holds(&after, &HUMAN_SECRET) && !holds(&after, &ACTIVE_KEY));
    }

    #[test]
    fn the_first_run_guide_names_the_dashboard_the_key_file_a_working_curl_and_the_sdk() {
        let guide = first_run_guide("http://127.0.0.1:8080", Path::new("data"));
        assert!(
            guide.contains("dashboard   http://127.0.0.1:8080/\n"),
            "{guide}"
        );
        assert!(guide.contains("data/admin.key"), "{guide}");
        assert!(
            guide.contains("curl -s http://127.0.0.1:8080/v1/vat/issue/l1 "),
            "{guide}"
        );
        assert!(guide.contains("$(cat 'data/admin.key')"), "{guide}");
        assert!(guide.contains("npm install mandate-sdk"), "{guide}");
    }

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

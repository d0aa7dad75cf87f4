//! Storage: one SQLite database in WAL mode with `synchronous=FULL`, written
//! by a single writer thread that commits concurrent requests together (group
//! commit), and read through a small pool of read-only connections.
//!
//! A write is a closure run in the writer's current transaction. Its answer
//! is delivered only after the transaction commits, so a 2xx for a write
//! always means the write is on disk. A closure that fails before changing
//! anything leaves the others alone; one that fails after changing something,
//! or a commit that fails (a full disk), fails every write of the group and
//! nothing of it is acknowledged (see `writer`).

pub(crate) mod schema;
mod writer;

use std::os::unix::fs::OpenOptionsExt as _;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use mandate_core::{Jti, Outcome, Status, result_key};
use rusqlite::{Connection, OpenFlags, params};
use tokio::sync::Semaphore;

use crate::error::{ApiError, ApiResult};
use crate::metrics::Metrics;
pub(crate) use writer::{Hooks, Writer};

/// The database file's name inside the data folder.
pub const DB_FILE: &str = "mandate.db";

/// Opens a connection with the pragmas every connection needs.
fn open(path: &Path, flags: OpenFlags) -> rusqlite::Result<Connection> {
    let conn = Connection::open_with_flags(path, flags)?;
    conn.busy_timeout(std::time::Duration::from_secs(5))?;
    conn.pragma_update(None, "foreign_keys", "ON")?;
    // Statement journals and sorts stay in memory, not in temporary files.
    conn.pragma_update(None, "temp_store", "MEMORY")?;
    Ok(conn)
}

/// Creates the database file, empty and mode 0600, unless it exists. SQLite
/// gives the `-wal` and `-shm` files the database file's mode, so they are
/// 0600 too, whatever the process umask.
fn create_private(path: &Path) -> anyhow::Result<()> {
    std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .open(path)
        .map(drop)
        .map_err(|e| anyhow::anyhow!("cannot create the database {}: {e}", path.display()))
}

/// Opens the writer connection, enforces WAL and `synchronous=FULL`, and
/// creates or migrates the schema.
pub fn open_writer(path: &Path) -> anyhow::Result<Connection> {
    create_private(path)?;
    let conn = open(
        path,
        OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_CREATE
            | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )?;
    let mode: String =
        conn.pragma_update_and_check(None, "journal_mode", "WAL", |row| row.get(0))?;
    if !mode.eq_ignore_ascii_case("wal") {
        anyhow::bail!(
            "SQLite refused WAL mode (got `{mode}`); the data folder's file system cannot hold Mandate's database"
        );
    }
    conn.pragma_update(None, "synchronous", "FULL")?;
    let synchronous: i64 = conn.pragma_query_value(None, "synchronous", |row| row.get(0))?;
    if synchronous != 2 {
        anyhow::bail!("SQLite refused synchronous=FULL (got {synchronous})");
    }
    migrate(&conn)?;
    Ok(conn)
}

fn migrate(conn: &Connection) -> anyhow::Result<()> {
    let version: i64 = conn.pragma_query_value(None, "user_version", |row| row.get(0))?;
    if version > schema::VERSION {
        anyhow::bail!(
            "the database has schema version {version}, newer than this build understands ({})",
            schema::VERSION
        );
    }
    if version == schema::VERSION {
        return Ok(());
    }
    let tx = conn.unchecked_transaction()?;
    if version < 1 {
        tx.execute_batch(schema::SCHEMA)?;
    }
    if version < 2 {
        tx.execute_batch(schema::WORKFLOW_COUNTS)?;
        count_workflows(&tx)?;
    }
    if version < 3 {
        tx.execute_batch(schema::SIGNING_KEY_REVOCATION)?;
        tx.execute_batch(schema::AUTHORITY)?;
        hash_token_ids(&tx)?;
        tx.execute_batch(schema::AUTHORITY_INDEX)?;
    }
    tx.pragma_update(None, "user_version", schema::VERSION)?;
    tx.commit()?;
    Ok(())
}

/// Names every stored token's ancestors by jti hash, as tokens now do, and
/// fills each token's own `jth` (upgrading a version 2 database). Tokens
/// delegated before keep their signed text, which still carries jtis: the
/// server reads the stored claims, so they keep working with a bare
/// `vat_jti`, but as `Authorization: Bearer` they no longer verify.
fn hash_token_ids(conn: &Connection) -> anyhow::Result<()> {
    use serde_json::Value;
    let hash = |value: &Value| -> anyhow::Result<Value> {
        let text = value
            .as_str()
            .ok_or_else(|| anyhow::anyhow!("a stored ancestor is not a string"))?;
        Ok(Value::String(Jti::parse(text)?.hash().to_string()))
    };
    let mut rows = conn.prepare("SELECT jti, claims FROM tokens")?;
    let mut update = conn.prepare("UPDATE tokens SET jth = ?1, claims = ?2 WHERE jti = ?3")?;
    let tokens = rows
        .query_map([], |row| {
            Ok((row.get::<_, String>(0)?, row.get::<_, String>(1)?))
        })?
        .collect::<Result<Vec<_>, _>>()?;
    for (jti, text) in tokens {
        let mut claims: Value = serde_json::from_str(&text)?;
        if let Some(parent) = claims.get("svc_parent") {
            claims["svc_parent"] = hash(parent)?;
        }
        if let Some(Value::Array(chain)) = claims.get("svc_chain") {
            let hashed = chain.iter().map(hash).collect::<anyhow::Result<Vec<_>>>()?;
            claims["svc_chain"] = Value::Array(hashed);
        }
        let claims = serde_json::to_string(&claims)?;
        serde_json::from_str::<mandate_core::Claims>(&claims)?;
        update.execute(params![Jti::parse(&jti)?.hash().as_str(), claims, jti])?;
    }
    Ok(())
}

/// Fills `workflow_counts` from the records already stored (upgrading a
/// version 1 database), with core's result keys.
fn count_workflows(conn: &Connection) -> anyhow::Result<()> {
    let mut groups = conn.prepare(
        "SELECT provenance_ref, agent_id, action, status, result, count(*) FROM records
         GROUP BY provenance_ref, agent_id, action, status, result",
    )?;
    let mut insert = conn.prepare(
        "INSERT INTO workflow_counts (provenance_ref, agent_id, action, result_key, count)
         VALUES (?1, ?2, ?3, ?4, ?5)
         ON CONFLICT DO UPDATE SET count = count + excluded.count",
    )?;
    let mut rows = groups.query([])?;
    while let Some(row) = rows.next()? {
        let status: Status = row.get::<_, String>(3)?.parse()?;
        let result = row
            .get::<_, Option<String>>(4)?
            .map(|r| r.parse::<Outcome>())
            .transpose()?;
        insert.execute(params![
            row.get::<_, String>(0)?,
            row.get::<_, String>(1)?,
            row.get::<_, String>(2)?,
            result_key(status, result),
            row.get::<_, i64>(5)?,
        ])?;
    }
    Ok(())
}

/// Read-only connections handed out to blocking tasks.
#[derive(Debug)]
struct ReaderPool {
    path: PathBuf,
    idle: Mutex<Vec<Connection>>,
    permits: Arc<Semaphore>,
}

impl ReaderPool {
    fn open_reader(&self) -> rusqlite::Result<Connection> {
        let conn = open(
            &self.path,
            OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )?;
        conn.pragma_update(None, "query_only", "ON")?;
        Ok(conn)
    }

    fn take(&self) -> rusqlite::Result<Connection> {
        let idle = self.idle.lock().ok().and_then(|mut idle| idle.pop());
        match idle {
            Some(conn) => Ok(conn),
            None => self.open_reader(),
        }
    }

    fn give_back(&self, conn: Connection) {
        if let Ok(mut idle) = self.idle.lock() {
            idle.push(conn);
        }
    }
}

/// The database: one writer, several readers.
#[derive(Debug, Clone)]
pub struct Store {
    writer: Writer,
    readers: Arc<ReaderPool>,
}

impl Store {
    /// Opens (creating if needed) the database at `path` and starts the
    /// writer thread. `max_batch` caps how many writes share a commit;
    /// `hooks` run around each commit.
    pub(crate) fn open(
        path: &Path,
        readers: usize,
        max_batch: usize,
        metrics: Arc<Metrics>,
        hooks: Hooks,
    ) -> anyhow::Result<Store> {
        let conn = open_writer(path)?;
        let writer = Writer::start(conn, max_batch, metrics, hooks)?;
        let pool = ReaderPool {
            path: path.to_path_buf(),
            idle: Mutex::new(Vec::new()),
            permits: Arc::new(Semaphore::new(readers.max(1))),
        };
        Ok(Store {
            writer,
            readers: Arc::new(pool),
        })
    }

    /// Runs `work` in the writer; answers once its batch has committed.
    pub async fn write<T: Send + 'static>(
        &self,
        work: impl FnOnce(&Connection) -> ApiResult<T> + Send + 'static,
    ) -> ApiResult<T> {
        self.writer.write(work).await
    }

    /// Runs `work` on a read-only connection in a blocking task.
    pub async fn read<T: Send + 'static>(
        &self,
        work: impl FnOnce(&Connection) -> ApiResult<T> + Send + 'static,
    ) -> ApiResult<T> {
        let permit = self
            .readers
            .permits
            .clone()
            .acquire_owned()
            .await
            .map_err(|_| ApiError::unavailable("the store is closed"))?;
        let pool = self.readers.clone();
        tokio::task::spawn_blocking(move || {
            let conn = pool.take()?;
            let result = work(&conn);
            pool.give_back(conn);
            drop(permit);
            result
        })
        .await
        .map_err(ApiError::internal)?
    }

    /// Stops accepting writes, lets queued ones commit, and waits for the
    /// writer to close the database.
    pub async fn close(self) {
        let writer = self.writer;
        drop(self.readers);
        if tokio::task::spawn_blocking(move || writer.close())
            .await
            .is_err()
        {
            tracing::error!("the writer thread did not shut down cleanly");
        }
    }
}

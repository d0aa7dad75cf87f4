//! Storage: one database — the embedded SQLite in WAL mode with
//! `synchronous=FULL`, or PostgreSQL shared by any number of hosts — written
//! by a single writer thread that commits concurrent requests together (group
//! commit), and read through read-only connections in three lanes, so that
//! a long read never delays the API-key check every request waits for. Both
//! engines run the same statements through [`sql::Connection`].
//!
//! A write is a closure run in the writer's current transaction. Its answer
//! is delivered only after the transaction commits, so a 2xx for a write
//! always means the write is on disk. A closure that fails before changing
//! anything leaves the others alone; one that fails after changing something,
//! or a commit that fails (a full disk), fails every write of the group and
//! nothing of it is acknowledged (see `writer`).

pub mod agents;
pub mod approvals;
pub mod dashboard;
pub mod database;
pub mod events;
pub mod idempotency;
pub mod locks;
pub mod log;
pub mod oauth;
pub mod orgs;
mod proofs;
pub mod records;
pub(crate) mod schema;
pub mod sql;
pub mod status_lists;
pub mod tokens;
pub mod trust;
pub mod webhooks;
mod writer;

use std::os::unix::fs::OpenOptionsExt as _;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use mandate_core::{Jti, OrgId, Outcome, Status, result_key};
use prometheus_client::metrics::gauge::Gauge;
use rusqlite::OpenFlags;
use tokio::sync::Semaphore;

use crate::metrics::{DbTally, Metrics};
pub use database::Database;
pub use sql::Connection;
pub use writer::Owned;
use writer::Writer;

/// What the store itself can fail with, whatever the work it ran.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StoreError {
    /// Storage cannot take writes now (a full disk, an I/O error, a busy or
    /// read-only file, a shutdown, a failed group): a retry in a few seconds
    /// may succeed.
    #[error("{0}")]
    Unavailable(&'static str),
    /// A read stopped at its time budget (`query_budget_ms`).
    #[error("the read ran past the query time budget")]
    OverBudget,
    /// Mandate's own fault: a statement that should not fail, a stored row
    /// of the wrong shape. The text is for the log, never for a client.
    #[error("{0}")]
    Internal(String),
}

impl From<sql::Error> for StoreError {
    fn from(error: sql::Error) -> StoreError {
        match error {
            sql::Error::Sqlite(error) => StoreError::from(error),
            sql::Error::Postgres(error) => database::store_error(&error),
            sql::Error::Connect(error) => {
                tracing::error!(%error, "cannot connect to the database");
                StoreError::Unavailable("the database cannot be reached; retry later")
            }
            sql::Error::RolledBack => {
                tracing::error!("a group reached its commit after a failed statement");
                StoreError::Internal(sql::Error::RolledBack.to_string())
            }
            other => {
                tracing::error!(error = %other, "a stored value has the wrong shape");
                StoreError::Internal(other.to_string())
            }
        }
    }
}

impl From<rusqlite::Error> for StoreError {
    fn from(error: rusqlite::Error) -> StoreError {
        // Only the read budget's progress handler interrupts statements.
        if error.sqlite_error_code() == Some(rusqlite::ErrorCode::OperationInterrupted) {
            StoreError::OverBudget
        } else if is_storage_failure(&error) {
            tracing::error!(%error, "storage failure");
            StoreError::Unavailable("storage cannot take writes right now; retry later")
        } else {
            StoreError::Internal(error.to_string())
        }
    }
}

/// Whether an SQLite error means the disk or the file is unusable (full,
/// read-only, I/O error) rather than a bug.
pub fn is_storage_failure(error: &rusqlite::Error) -> bool {
    use rusqlite::ErrorCode::{
        CannotOpen, DatabaseBusy, DatabaseLocked, DiskFull, ReadOnly, SystemIoFailure,
    };
    matches!(
        error.sqlite_error_code(),
        Some(DiskFull | SystemIoFailure | ReadOnly | CannotOpen | DatabaseBusy | DatabaseLocked)
    )
}

/// The schema version this build writes, on both engines.
pub const SCHEMA_VERSION: i64 = schema::VERSION;

/// The database file's name inside the data folder.
pub const DB_FILE: &str = "mandate.db";

/// Opens a connection with the pragmas every connection needs.
fn open(path: &Path, flags: OpenFlags) -> rusqlite::Result<rusqlite::Connection> {
    let conn = rusqlite::Connection::open_with_flags(path, flags)?;
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

/// Opens the SQLite writer connection, enforces WAL and `synchronous=FULL`,
/// and creates or migrates the schema.
pub fn open_writer(path: &Path) -> anyhow::Result<Connection> {
    let conn = Connection::sqlite(open_durable(path)?);
    migrate(&conn)?;
    Ok(conn)
}

/// Opens (creating it 0600) an SQLite database for writing, in WAL mode
/// with `synchronous=FULL`: a transaction is on disk when its commit
/// returns. Refuses a file system that cannot give both.
pub(crate) fn open_durable(path: &Path) -> anyhow::Result<rusqlite::Connection> {
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
    Ok(conn)
}

/// A private in-memory database with the schema, for tests of what runs on
/// the write connection.
pub fn open_in_memory() -> anyhow::Result<Connection> {
    let conn = rusqlite::Connection::open_in_memory()?;
    conn.pragma_update(None, "foreign_keys", "ON")?;
    let conn = Connection::sqlite(conn);
    migrate(&conn)?;
    Ok(conn)
}

/// Creates or migrates SQLite's schema; counters a version adds are filled
/// through `wrapped`, the same connection as both engines' statements use.
fn migrate(wrapped: &Connection) -> anyhow::Result<()> {
    let conn = wrapped
        .as_sqlite()
        .ok_or_else(|| anyhow::anyhow!("SQLite's migrations ran on another engine"))?;
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
    if version < 4 {
        tx.execute_batch(schema::ORGANISATIONS)?;
        let now = crate::clock::Clock::system().now();
        tx.execute(
            orgs::ADD_DEFAULT,
            rusqlite::params![OrgId::new(crate::random::ulid(now)).as_str(), now.ms()],
        )?;
    }
    if version < 5 {
        tx.execute_batch(schema::LOG)?;
    }
    if version < 6 {
        tx.execute_batch(schema::EVENTS)?;
    }
    if version < 7 {
        tx.execute_batch(schema::DASHBOARD)?;
        dashboard::backfill(wrapped)?;
    }
    if version < 8 {
        tx.execute_batch(schema::TRUST)?;
    }
    if version < 9 {
        tx.execute_batch(schema::RECORD_ORIGIN)?;
    }
    if version < 10 {
        tx.execute_batch(schema::AGENTS)?;
        agents::register_existing(wrapped)?;
    }
    if version < 11 {
        tx.execute_batch(schema::ARGS)?;
    }
    if version < 12 {
        tx.execute_batch(schema::OAUTH)?;
    }
    if version < 13 {
        tx.execute_batch(schema::WITNESSED)?;
    }
    if version < 14 {
        tx.execute_batch(schema::RELAY)?;
    }
    if version < 15 {
        tx.execute_batch(schema::LOG_SIZE)?;
    }
    if version < 16 {
        tx.execute_batch(schema::SEQUENCER)?;
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
fn hash_token_ids(conn: &rusqlite::Connection) -> anyhow::Result<()> {
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
        update.execute(rusqlite::params![
            Jti::parse(&jti)?.hash().as_str(),
            claims,
            jti
        ])?;
    }
    Ok(())
}

/// Fills `workflow_counts` from the records already stored (upgrading a
/// version 1 database), with core's result keys.
fn count_workflows(conn: &rusqlite::Connection) -> anyhow::Result<()> {
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
        insert.execute(rusqlite::params![
            row.get::<_, String>(0)?,
            row.get::<_, String>(1)?,
            row.get::<_, String>(2)?,
            result_key(status, result),
            row.get::<_, i64>(5)?,
        ])?;
    }
    Ok(())
}

/// Connections of the lane that gates requests: API-key and signing-key
/// lookups, one indexed row each.
const KEY_READERS: usize = 2;
/// Connections of the lane of single-item reads.
const LOOKUP_READERS: usize = 2;
/// Connections that store DPoP proofs (PostgreSQL).
const PROOF_WRITERS: usize = 2;
/// The least time budget of a read or write of one item by its key on
/// PostgreSQL (see `Store::open`).
const ONE_ITEM_FLOOR: Duration = Duration::from_millis(100);
/// SQLite virtual-machine steps between two looks at the clock of a read
/// with a budget: some 25 µs of a scan, against ~30 ns for reading the clock.
const BUDGET_CHECK_STEPS: std::ffi::c_int = 1000;

/// Read-only connections handed out to blocking tasks, a fixed number at a
/// time. In a pool with a budget, a statement still running when the budget
/// has passed since the read began is stopped: on SQLite by its progress
/// handler (which also stops a read nobody waits for any more), on
/// PostgreSQL by the connection's `statement_timeout`. A connection found
/// lost (the database server restarted) is dropped and a new one opened.
#[derive(Debug)]
struct ReaderPool {
    database: Database,
    /// Whether its connections may write (the `proofs` lane).
    writable: bool,
    idle: Mutex<Vec<Connection>>,
    permits: Arc<Semaphore>,
    budget: Option<Duration>,
    busy: Gauge,
    /// What the lane's connections send to the database.
    tally: DbTally,
}

impl ReaderPool {
    fn new(
        database: &Database,
        size: usize,
        budget: Option<Duration>,
        metrics: &Metrics,
        lane: &'static str,
    ) -> Arc<ReaderPool> {
        Arc::new(ReaderPool {
            database: database.clone(),
            writable: false,
            idle: Mutex::new(Vec::new()),
            permits: Arc::new(Semaphore::new(size.max(1))),
            budget,
            busy: metrics.readers_busy(lane),
            tally: metrics.db_lane(lane),
        })
    }

    fn open_reader(&self) -> Result<Connection, StoreError> {
        let conn = match &self.database {
            Database::Sqlite(path) => {
                let conn = open(
                    path,
                    OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
                )?;
                conn.pragma_update(None, "query_only", "ON")?;
                Connection::sqlite(conn)
            }
            Database::Postgres(pg) => database::open_reader(pg, self.budget, self.writable)?,
        };
        Ok(conn.tallied(self.tally.clone()))
    }

    fn take(&self) -> Result<Connection, StoreError> {
        let idle = self.idle.lock().ok().and_then(|mut idle| idle.pop());
        match idle {
            Some(conn) if !conn.is_lost() => Ok(conn),
            _ => self.open_reader(),
        }
    }

    /// Drops every idle connection, on a thread of its own (see `Drop`).
    fn forget_idle(&self) {
        let idle = self
            .idle
            .lock()
            .map(|mut idle| std::mem::take(&mut *idle))
            .unwrap_or_default();
        close_elsewhere(idle);
    }

    fn give_back(&self, conn: Connection) {
        if let Ok(mut idle) = self.idle.lock() {
            idle.push(conn);
        }
    }

    /// Runs `work` at once on this thread when the pool reads SQLite
    /// without a budget and one of its connections is free: an indexed read
    /// of a few rows from a WAL database, which never waits for the writer,
    /// costs less than handing it to a blocking thread and back (the `keys`
    /// lane on every API-key request; docs/decisions.md "API-key look-ups
    /// on SQLite run inline"). Else as [`ReaderPool::run`].
    async fn run_inline<T, E>(
        self: &Arc<ReaderPool>,
        work: impl Fn(&Connection) -> Result<T, E> + Send + 'static,
    ) -> Result<T, E>
    where
        T: Send + 'static,
        E: From<StoreError> + Send + 'static,
    {
        if matches!(self.database, Database::Sqlite(_))
            && self.budget.is_none()
            && let Ok(permit) = self.permits.clone().try_acquire_owned()
        {
            let _busy = Busy::start(&self.busy);
            let conn = self.take()?;
            let result = work(&conn);
            self.give_back(conn);
            drop(permit);
            return result;
        }
        self.run(work).await
    }

    /// Runs `work` on one of the pool's connections in a blocking task,
    /// waiting for a free one first.
    async fn run<T, E>(
        self: &Arc<ReaderPool>,
        work: impl Fn(&Connection) -> Result<T, E> + Send + 'static,
    ) -> Result<T, E>
    where
        T: Send + 'static,
        E: From<StoreError> + Send + 'static,
    {
        let permit = self
            .permits
            .clone()
            .acquire_owned()
            .await
            .map_err(|_| StoreError::Unavailable("the store is closed"))?;
        let pool = self.clone();
        let abandon = Abandon::default();
        let abandoned = abandon.flag.clone();
        let cancel = abandon.cancel.clone();
        tokio::task::spawn_blocking(move || {
            let _busy = Busy::start(&pool.busy);
            let mut conn = pool.take()?;
            let set_cancel = |token| {
                if let Ok(mut slot) = cancel.lock() {
                    *slot = token;
                }
            };
            set_cancel(conn.canceller());
            // Abandoned before its cancel token was in place: Abandon's drop
            // set the flag before it looked for a token (both sequentially
            // consistent), so one of the two sees the other.
            if abandon_seen(&abandoned) {
                set_cancel(None);
                pool.give_back(conn);
                return Err(StoreError::OverBudget.into());
            }
            if let (Some(sqlite), Some(budget)) = (conn.as_sqlite_mut(), pool.budget) {
                let deadline = Instant::now().checked_add(budget);
                sqlite
                    .progress_handler(
                        BUDGET_CHECK_STEPS,
                        Some(move || {
                            abandoned.load(Ordering::Relaxed)
                                || deadline.is_some_and(|d| Instant::now() >= d)
                        }),
                    )
                    .map_err(StoreError::from)?;
            }
            let mut result = scoped(&conn, &work);
            set_cancel(None);
            if conn.is_lost() {
                // The server went away since the connection was last used
                // (a restart): every idle connection is as stale. A read
                // changes nothing, so it runs again on a new connection.
                drop(conn);
                pool.forget_idle();
                conn = pool.take()?;
                set_cancel(conn.canceller());
                result = scoped(&conn, &work);
                set_cancel(None);
            }
            pool.give_back(conn);
            drop(permit);
            result
        })
        .await
        .map_err(|e| StoreError::Internal(format!("a read panicked: {e}")))?
    }
}

/// Runs `work` on `conn`; behind a pooler in transaction mode, in a
/// transaction of its own, which carries the lane's settings (see
/// `database::open_reader`), committed when `work` succeeds.
fn scoped<T, E: From<StoreError>>(
    conn: &Connection,
    work: &impl Fn(&Connection) -> Result<T, E>,
) -> Result<T, E> {
    if !conn.pooled() {
        return work(conn);
    }
    let tx = conn.unchecked_transaction().map_err(StoreError::from)?;
    let result = work(&tx)?;
    tx.commit().map_err(StoreError::from)?;
    Ok(result)
}

impl Drop for ReaderPool {
    fn drop(&mut self) {
        let idle = self.idle.get_mut().map(std::mem::take).unwrap_or_default();
        close_elsewhere(idle);
    }
}

/// Closes connections on a thread of their own: closing a PostgreSQL client
/// blocks, which an async task must never do.
fn close_elsewhere(conns: Vec<Connection>) {
    if conns
        .iter()
        .any(|conn| conn.dialect() == sql::Dialect::Postgres)
    {
        let closing = std::thread::Builder::new()
            .name("mandate-close".into())
            .spawn(move || drop(conns));
        if let Err(error) = closing {
            tracing::warn!(%error, "cannot start a thread to close idle connections");
        }
    }
}

/// Takes the data folder's serve lock (an exclusive `flock` on
/// `mandate.db.serve-lock`, held by the writer thread until it closes the
/// database): SQLite serves one process, whose writer hands out record
/// numbers from memory. Operator commands take no lock: they write through
/// SQLite's own locking, as before.
fn serve_lock(db: &Path) -> anyhow::Result<std::fs::File> {
    let path = db.with_extension("db.serve-lock");
    let file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .open(&path)
        .map_err(|e| anyhow::anyhow!("cannot create {}: {e}", path.display()))?;
    rustix::fs::flock(&file, rustix::fs::FlockOperation::NonBlockingLockExclusive).map_err(
        |_| {
            anyhow::anyhow!(
                "another `mandate serve` serves {}; SQLite serves one process \
                 (for several hosts, give them one PostgreSQL database: --database postgres://…)",
                db.display()
            )
        },
    )?;
    Ok(file)
}

/// Runs `open` on a thread of its own and waits for it: opening PostgreSQL
/// connections blocks, and a caller may be an async task.
pub fn off_runtime<T: Send>(open: impl FnOnce() -> anyhow::Result<T> + Send) -> anyhow::Result<T> {
    std::thread::scope(|scope| {
        scope
            .spawn(open)
            .join()
            .unwrap_or_else(|_| Err(anyhow::anyhow!("opening the database panicked")))
    })
}

/// Marks a read abandoned when dropped: when the request waiting for it goes
/// away (its client disconnected), the read stops instead of holding its
/// connection until the budget — on SQLite at its progress handler's next
/// check, on PostgreSQL by a cancel request for the statement running.
/// Dropped after an answer too, when it changes nothing (the read no longer
/// holds a cancel token then).
#[derive(Default)]
struct Abandon {
    flag: Arc<AtomicBool>,
    cancel: Arc<Mutex<Option<sql::Canceller>>>,
}

fn abandon_seen(flag: &AtomicBool) -> bool {
    flag.load(Ordering::SeqCst)
}

/// How often, and how many times at most, an abandoned PostgreSQL read is
/// asked to stop: a cancel request stops the statement running when it
/// arrives, and a read may be between two statements then.
const CANCEL_EVERY: Duration = Duration::from_millis(50);
const CANCEL_TRIES: u32 = 200;

impl Drop for Abandon {
    fn drop(&mut self) {
        self.flag.store(true, Ordering::SeqCst);
        let running =
            |slot: &Mutex<Option<sql::Canceller>>| slot.lock().ok().and_then(|token| token.clone());
        if running(&self.cancel).is_none() {
            return;
        }
        let slot = self.cancel.clone();
        // Cancel requests block: not on an async task.
        let sent = std::thread::Builder::new()
            .name("mandate-cancel".into())
            .spawn(move || {
                for _ in 0..CANCEL_TRIES {
                    let Some(token) = running(&slot) else {
                        return;
                    };
                    if let Err(error) = token.cancel() {
                        tracing::warn!(%error, "cancelling an abandoned read failed");
                        return;
                    }
                    std::thread::sleep(CANCEL_EVERY);
                }
            });
        if let Err(error) = sent {
            tracing::warn!(%error, "cannot start a thread to cancel an abandoned read");
        }
    }
}

/// A connection counted as in use until this is dropped (also by a panic).
struct Busy<'a>(&'a Gauge);

impl<'a> Busy<'a> {
    fn start(gauge: &'a Gauge) -> Busy<'a> {
        gauge.inc();
        Busy(gauge)
    }
}

impl Drop for Busy<'_> {
    fn drop(&mut self) {
        self.0.dec();
    }
}

/// The database: one writer, and readers in three lanes that never wait for
/// each other. `keys` serves the lookups that gate requests (API keys,
/// signing keys); `lookups` single items found by their key (a record, a
/// reputation, a workflow summary); `queries` everything that may read many
/// rows (record filters, graphs, workflow lists, token trees). Reads in
/// `lookups` and `queries` have a time budget; a scan can hold a `queries`
/// connection for that long at most, and can never hold the other two.
/// `S` is what the writer thread owns (the ledger): writes run against it.
pub struct Store<S> {
    writer: Writer<S>,
    keys: Arc<ReaderPool>,
    lookups: Arc<ReaderPool>,
    queries: Arc<ReaderPool>,
    /// PostgreSQL only: connections that record DPoP proofs for every host.
    proofs: Option<Arc<ReaderPool>>,
}

impl<S> Clone for Store<S> {
    fn clone(&self) -> Store<S> {
        Store {
            writer: self.writer.clone(),
            keys: self.keys.clone(),
            lookups: self.lookups.clone(),
            queries: self.queries.clone(),
            proofs: self.proofs.clone(),
        }
    }
}

impl<S> std::fmt::Debug for Store<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store")
            .field("keys", &self.keys)
            .field("lookups", &self.lookups)
            .field("queries", &self.queries)
            .finish_non_exhaustive()
    }
}

/// Sizes and budgets of a [`Store`].
#[derive(Debug, Clone, Copy)]
pub struct Lanes {
    /// Connections of the `queries` lane.
    pub readers: usize,
    /// Time budget of each read in the `lookups` and `queries` lanes.
    pub budget: Duration,
    /// Most writes that share a commit.
    pub max_batch: usize,
}

impl<S: Owned> Store<S> {
    /// Opens (creating if needed) the database, hands the write
    /// connection to `own` and starts the writer thread on what it makes.
    pub fn open(
        database: &Database,
        lanes: Lanes,
        metrics: Arc<Metrics>,
        own: impl FnOnce(Connection) -> S,
    ) -> anyhow::Result<Store<S>> {
        let conn = database.open_writer()?.tallied(metrics.db_lane("writer"));
        let keys = ReaderPool::new(database, KEY_READERS, None, &metrics, "keys");
        // PostgreSQL's timeout counts wall-clock time, waiting for a CPU
        // included; SQLite's budget counts a read's steps, which a read of
        // one item by its key never runs out of. Such reads get at least
        // `ONE_ITEM_FLOOR` on PostgreSQL, so a busy machine never refuses
        // them; reads that may scan keep the budget as configured.
        let one_item = match database {
            Database::Postgres(_) => lanes.budget.max(ONE_ITEM_FLOOR),
            Database::Sqlite(_) => lanes.budget,
        };
        let lookups = ReaderPool::new(
            database,
            LOOKUP_READERS,
            Some(one_item),
            &metrics,
            "lookups",
        );
        let queries = ReaderPool::new(
            database,
            lanes.readers,
            Some(lanes.budget),
            &metrics,
            "queries",
        );
        let proofs = matches!(database, Database::Postgres(_)).then(|| {
            let mut lane =
                ReaderPool::new(database, PROOF_WRITERS, Some(one_item), &metrics, "proofs");
            if let Some(lane) = Arc::get_mut(&mut lane) {
                lane.writable = true;
            }
            lane
        });
        let guard = match database {
            Database::Sqlite(path) => Some(serve_lock(path)?),
            Database::Postgres(_) => None,
        };
        let writer = Writer::start(own(conn), guard, lanes.max_batch, metrics)?;
        Ok(Store {
            writer,
            keys,
            lookups,
            queries,
            proofs,
        })
    }

    /// Records the first use of a DPoP proof (by its replay key, good until
    /// `until`) for every host: `false` when any host saw it before. On
    /// PostgreSQL the proof is stored, committed before the call goes on;
    /// SQLite serves one process, whose memory (`crate::proofs`) is enough:
    /// always `true`.
    pub async fn first_use_of_proof(
        &self,
        key: [u8; 32],
        until: i64,
        now: i64,
    ) -> Result<bool, StoreError> {
        let Some(lane) = &self.proofs else {
            return Ok(true);
        };
        lane.run(move |conn| Ok(proofs::first_use(conn, &key, until, now)?))
            .await
    }

    /// Runs `work` on the `proofs` lane, PostgreSQL's writable one (the
    /// log's integrator); `None` on SQLite, which has no such lane.
    pub async fn on_proofs_lane<T: Send + 'static>(
        &self,
        work: impl Fn(&Connection) -> Result<T, StoreError> + Send + 'static,
    ) -> Option<Result<T, StoreError>> {
        let lane = self.proofs.as_ref()?;
        Some(lane.run(work).await)
    }

    /// Forgets the stored proofs no longer accepted anyway (PostgreSQL).
    pub async fn forget_lapsed_proofs(&self, now: i64) -> Result<(), StoreError> {
        let Some(lane) = &self.proofs else {
            return Ok(());
        };
        lane.run(move |conn| Ok(proofs::forget_lapsed(conn, now)?))
            .await
    }

    /// Runs `work` in the writer; answers once its group has committed.
    pub async fn write<T, E>(
        &self,
        work: impl FnMut(&mut S) -> Result<T, E> + Send + 'static,
    ) -> Result<T, E>
    where
        T: Send + 'static,
        E: From<StoreError> + Send + 'static,
    {
        self.writer.write(work).await
    }

    /// Runs `work`, a read that may touch many rows, in the `queries` lane
    /// under the time budget: past it, the read fails with
    /// [`StoreError::OverBudget`].
    pub async fn read<T, E>(
        &self,
        work: impl Fn(&Connection) -> Result<T, E> + Send + 'static,
    ) -> Result<T, E>
    where
        T: Send + 'static,
        E: From<StoreError> + Send + 'static,
    {
        self.queries.run(work).await
    }

    /// Runs `work`, a read of one item by its key, in the `lookups` lane
    /// under the time budget. Slow queries never hold these connections.
    pub async fn lookup<T, E>(
        &self,
        work: impl Fn(&Connection) -> Result<T, E> + Send + 'static,
    ) -> Result<T, E>
    where
        T: Send + 'static,
        E: From<StoreError> + Send + 'static,
    {
        self.lookups.run(work).await
    }

    /// Runs `work`, an API-key or signing-key lookup that a request waits
    /// for before anything else, in the `keys` lane, which nothing else
    /// uses. It has no budget: only indexed reads of a few rows belong here
    /// (on SQLite they run on the calling thread, see
    /// [`ReaderPool::run_inline`]).
    pub async fn read_keys<T, E>(
        &self,
        work: impl Fn(&Connection) -> Result<T, E> + Send + 'static,
    ) -> Result<T, E>
    where
        T: Send + 'static,
        E: From<StoreError> + Send + 'static,
    {
        self.keys.run_inline(work).await
    }

    /// Cancelled when the writer thread has ended by a panic outside any
    /// write: no write can be taken any more ([`Writer::lost`]).
    pub fn writer_lost(&self) -> tokio_util::sync::CancellationToken {
        self.writer.lost()
    }

    /// Stops accepting writes, lets queued ones commit, and waits for the
    /// writer to close the database.
    pub async fn close(self) {
        let writer = self.writer;
        drop((self.keys, self.lookups, self.queries));
        if tokio::task::spawn_blocking(move || writer.close())
            .await
            .is_err()
        {
            tracing::error!("the writer thread did not shut down cleanly");
        }
    }
}

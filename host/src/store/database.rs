//! Where the database is ([`Database`]): the embedded SQLite in the data
//! folder, or PostgreSQL shared by any number of hosts. For PostgreSQL:
//! connecting, the schema and its versioned migrations (run under an
//! advisory lock, so hosts starting together take turns), the durability
//! check, and what its errors mean to a caller.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use mandate_core::OrgId;
use tokio_postgres::error::SqlState;

use super::sql::{self, Connection, OptionalExtension as _, Tls, params};
use super::{StoreError, orgs, schema};

/// Where the database is.
#[derive(Clone)]
pub enum Database {
    /// The SQLite file at this path.
    Sqlite(PathBuf),
    /// A PostgreSQL database.
    Postgres(Box<Postgres>),
}

/// A PostgreSQL database: where it is and how to reach it.
#[derive(Clone)]
pub struct Postgres {
    pub config: tokio_postgres::Config,
    pub tls: Tls,
    /// Behind a pooler in transaction mode (`[database] pooler`).
    pub pooled: bool,
}

impl fmt::Debug for Postgres {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Postgres")
            .field("tls", &self.tls)
            .finish_non_exhaustive()
    }
}

impl fmt::Debug for Database {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.describe())
    }
}

/// How long a host waits for PostgreSQL to accept a connection.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// How long data sent to PostgreSQL may stay unacknowledged, and an idle
/// connection unchecked, before the connection counts as lost.
const UNANSWERED_TIMEOUT: Duration = Duration::from_secs(10);

/// The advisory lock migrations run under: one host migrates, the others
/// wait and then find the schema current.
const MIGRATION_LOCK: i64 = 0x4d41_4e44_0000_0001;

/// The advisory lock a first start runs under: one host creates the
/// deployment's secrets, signing key and admin key; the others then find
/// them.
pub(crate) const SETUP_LOCK: i64 = 0x4d41_4e44_0000_0002;

/// The advisory lock organisation numbers are handed out under.
pub(crate) const ORGS_LOCK: i64 = 0x4d41_4e44_0000_0003;

/// The advisory locks of token status lists, list `n` at this plus `n`
/// (lists are numbered from 0, far below 2^32): a revocation's
/// read-modify-write of a list takes its lock.
pub(crate) const STATUS_LIST_LOCKS: i64 = 0x4d41_4e45_0000_0000;

impl Database {
    /// The database a `--database` URL names: `postgres://…` or
    /// `postgresql://…` (libpq's URL form). TLS follows `sslmode`:
    /// `disable`, `prefer` (the default: TLS when the server offers it) or
    /// `require`; the server's certificate is always verified, against
    /// `ca_file` (PEM) when given, else the system's roots.
    pub fn from_url(url: &str, ca_file: Option<&Path>, pooled: bool) -> anyhow::Result<Database> {
        if !(url.starts_with("postgres://") || url.starts_with("postgresql://")) {
            anyhow::bail!(
                "the database URL must start with postgres:// or postgresql:// (leave it unset for the embedded SQLite)"
            );
        }
        let mut config: tokio_postgres::Config = url
            .parse()
            .map_err(|e| anyhow::anyhow!("the database URL is not valid: {e}"))?;
        if config.get_user().is_none() {
            // As libpq does: the operating system's user.
            let user = std::env::var("USER")
                .or_else(|_| std::env::var("LOGNAME"))
                .map_err(|_| {
                    anyhow::anyhow!("the database URL names no user (postgres://USER@…)")
                })?;
            config.user(&user);
        }
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(CONNECT_TIMEOUT);
        }
        if config.get_application_name().is_none() {
            config.application_name("mandate");
        }
        // A server that stops answering (a partition, a crashed machine) is
        // given up on within seconds, never waited for: writes answer 503.
        if config.get_tcp_user_timeout().is_none() {
            config.tcp_user_timeout(UNANSWERED_TIMEOUT);
        }
        config.keepalives_idle(UNANSWERED_TIMEOUT);
        let tls = tls(&config, ca_file)?;
        Ok(Database::Postgres(Box::new(Postgres {
            config,
            tls,
            pooled,
        })))
    }

    /// Where it is, for logs and messages (never a password).
    pub fn describe(&self) -> String {
        match self {
            Database::Sqlite(path) => format!("SQLite at {}", path.display()),
            Database::Postgres(pg) => {
                let config = &pg.config;
                let hosts: Vec<String> = config
                    .get_hosts()
                    .iter()
                    .map(|host| match host {
                        tokio_postgres::config::Host::Tcp(name) => name.clone(),
                        tokio_postgres::config::Host::Unix(path) => path.display().to_string(),
                    })
                    .collect();
                let port = config.get_ports().first().copied().unwrap_or(5432);
                format!(
                    "PostgreSQL database {} on {}:{port}",
                    config.get_dbname().unwrap_or("(default)"),
                    hosts.join(",")
                )
            }
        }
    }

    /// The writer's connection: the schema created or migrated, and
    /// durability checked (SQLite: WAL with `synchronous=FULL`; PostgreSQL:
    /// `fsync` and `synchronous_commit` on).
    pub fn open_writer(&self) -> anyhow::Result<Connection> {
        match self {
            Database::Sqlite(path) => super::open_writer(path),
            Database::Postgres(pg) => {
                let conn = Connection::postgres(&pg.config, &pg.tls, "", WRITER_BEGIN, pg.pooled)
                    .map_err(|e| {
                    anyhow::anyhow!("cannot connect to the {}: {}", self.describe(), explain(&e))
                })?;
                check_durable(&conn)?;
                migrate(&conn)?;
                Ok(conn)
            }
        }
    }
}

/// How the writer starts each transaction. Every write transaction reads
/// what was committed before each of its statements; the ledger takes row
/// locks where a decision depends on a row another host may change. The
/// settings are the transaction's own (`SET LOCAL`), sent with its `BEGIN`
/// in one message, so a pooler in transaction mode, which hands each
/// transaction any server connection, keeps them: nothing is set on the
/// session. A transaction left open by a host that stopped answering
/// mid-group ends after 5 s idle, releasing its locks.
const WRITER_BEGIN: &str = "BEGIN ISOLATION LEVEL READ COMMITTED;
SET LOCAL client_min_messages = warning;
SET LOCAL synchronous_commit = on;
SET LOCAL lock_timeout = '10s';
SET LOCAL statement_timeout = '30s';
SET LOCAL idle_in_transaction_session_timeout = '5s'";

/// How connections to `config` are made (see [`Database::from_url`]).
fn tls(config: &tokio_postgres::Config, ca_file: Option<&Path>) -> anyhow::Result<Tls> {
    use rustls_pki_types::CertificateDer;
    use rustls_pki_types::pem::PemObject as _;
    if config.get_ssl_mode() == tokio_postgres::config::SslMode::Disable {
        return Ok(Tls::None);
    }
    let mut roots = rustls::RootCertStore::empty();
    match ca_file {
        Some(file) => {
            let certs = CertificateDer::pem_file_iter(file)
                .and_then(Iterator::collect::<Result<Vec<_>, _>>)
                .map_err(|e| anyhow::anyhow!("cannot read the CA file {}: {e}", file.display()))?;
            if certs.is_empty() {
                anyhow::bail!("the CA file {} holds no certificate", file.display());
            }
            for cert in certs {
                roots.add(cert).map_err(|e| {
                    anyhow::anyhow!(
                        "the CA file {} holds a bad certificate: {e}",
                        file.display()
                    )
                })?;
            }
        }
        None => {
            let found = rustls_native_certs::load_native_certs();
            roots.add_parsable_certificates(found.certs);
        }
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let client = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| anyhow::anyhow!("TLS to the database: {e}"))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(Tls::Rustls(tokio_postgres_rustls::MakeRustlsConnect::new(
        client,
    )))
}

/// What went wrong, with the server's own message when it sent one.
fn explain(error: &sql::Error) -> String {
    match error {
        sql::Error::Postgres(e) | sql::Error::Connect(e) => match e.as_db_error() {
            Some(db) => format!("{} ({})", db.message(), db.code().code()),
            None => {
                let cause =
                    std::error::Error::source(e).map_or_else(|| e.to_string(), ToString::to_string);
                if cause.contains("certificate") {
                    format!(
                        "{cause} (name the authority that signed the server's certificate with \
                         [database] ca_file, or connect without TLS: sslmode=disable)"
                    )
                } else {
                    cause
                }
            }
        },
        other => other.to_string(),
    }
}

/// Refuses a server that may lose committed transactions.
fn check_durable(conn: &Connection) -> anyhow::Result<()> {
    for (setting, refused) in [("fsync", "off"), ("synchronous_commit", "off")] {
        let value: String = conn.query_row(&format!("SHOW {setting}"), [], |row| row.get(0))?;
        if value.eq_ignore_ascii_case(refused) {
            anyhow::bail!(
                "PostgreSQL runs with {setting} = {value}: a commit could be lost, and Mandate answers a write only once it is durable"
            );
        }
    }
    Ok(())
}

/// A connection for one lane: read-only unless `writable` (the proofs
/// lane, whose writes commit one statement at a time), with the lane's time
/// budget as `statement_timeout`. Behind a pooler in transaction mode the
/// settings cannot be the session's (the server connection is another
/// client's after the transaction): they are the transaction's, and the
/// lane runs each read in a transaction of its own (`Connection::pooled`).
pub(super) fn open_reader(
    pg: &Postgres,
    budget: Option<Duration>,
    writable: bool,
) -> Result<Connection, StoreError> {
    let timeout_ms = budget.map_or(0, |b| b.as_millis().max(1));
    if pg.pooled {
        let access = if writable { "READ WRITE" } else { "READ ONLY" };
        let begin = format!(
            "BEGIN {access}; SET LOCAL statement_timeout = {timeout_ms}; \
             SET LOCAL synchronous_commit = on"
        );
        return Ok(Connection::postgres(&pg.config, &pg.tls, "", &begin, true)?);
    }
    let read_only = if writable { "off" } else { "on" };
    let session = format!(
        "SET default_transaction_read_only = {read_only}; SET statement_timeout = {timeout_ms}; \
         SET synchronous_commit = on"
    );
    Ok(Connection::postgres(
        &pg.config, &pg.tls, &session, "BEGIN", false,
    )?)
}

/// Creates or migrates the schema, one host at a time.
fn migrate(conn: &Connection) -> anyhow::Result<()> {
    let tx = conn.unchecked_transaction()?;
    tx.execute("SELECT pg_advisory_xact_lock(?1)", params![MIGRATION_LOCK])?;
    tx.execute_batch("CREATE TABLE IF NOT EXISTS mandate_schema (version BIGINT NOT NULL)")?;
    let version: Option<i64> = tx
        .query_row("SELECT version FROM mandate_schema", [], |row| row.get(0))
        .optional()?;
    match version {
        Some(version) if version > schema::VERSION => anyhow::bail!(
            "the database has schema version {version}, newer than this build understands ({})",
            schema::VERSION
        ),
        Some(version) if version == schema::VERSION => return Ok(()),
        Some(version @ (5..=16)) => {
            if version == 5 {
                tx.execute_batch(schema::POSTGRES_EVENTS)?;
            }
            if version <= 6 {
                tx.execute_batch(schema::POSTGRES_DASHBOARD)?;
                super::dashboard::backfill(&tx)?;
            }
            if version <= 7 {
                tx.execute_batch(schema::POSTGRES_TRUST)?;
            }
            if version <= 8 {
                tx.execute_batch(schema::POSTGRES_RECORD_ORIGIN)?;
            }
            if version <= 9 {
                tx.execute_batch(schema::POSTGRES_AGENTS)?;
                super::agents::register_existing(&tx)?;
            }
            if version <= 10 {
                tx.execute_batch(schema::POSTGRES_ARGS)?;
            }
            if version <= 11 {
                tx.execute_batch(schema::POSTGRES_OAUTH)?;
            }
            if version <= 12 {
                tx.execute_batch(schema::POSTGRES_WITNESSED)?;
            }
            if version <= 13 {
                tx.execute_batch(schema::POSTGRES_RELAY)?;
            }
            if version <= 14 {
                tx.execute_batch(schema::POSTGRES_LOG_SIZE)?;
            }
            if version <= 15 {
                tx.execute_batch(schema::POSTGRES_SEQUENCER)?;
            }
            tx.execute_batch(schema::POSTGRES_ORG_SEQS)?;
            tx.execute(
                "UPDATE mandate_schema SET version = ?1",
                params![schema::VERSION],
            )?;
        }
        Some(version) => anyhow::bail!(
            "the database has schema version {version}, which PostgreSQL never had (its first is 5)"
        ),
        None => {
            tx.execute_batch(schema::POSTGRES)?;
            tx.execute_batch(schema::POSTGRES_EVENTS)?;
            tx.execute_batch(schema::POSTGRES_DASHBOARD)?;
            tx.execute_batch(schema::POSTGRES_TRUST)?;
            tx.execute_batch(schema::POSTGRES_RECORD_ORIGIN)?;
            tx.execute_batch(schema::POSTGRES_AGENTS)?;
            tx.execute_batch(schema::POSTGRES_ARGS)?;
            tx.execute_batch(schema::POSTGRES_OAUTH)?;
            tx.execute_batch(schema::POSTGRES_WITNESSED)?;
            tx.execute_batch(schema::POSTGRES_RELAY)?;
            tx.execute_batch(schema::POSTGRES_LOG_SIZE)?;
            tx.execute_batch(schema::POSTGRES_SEQUENCER)?;
            tx.execute_batch(schema::POSTGRES_ORG_SEQS)?;
            // Nothing to count yet; run anyway, so every new database
            // checks the statements an upgrade from version 6 runs.
            super::dashboard::backfill(&tx)?;
            let now = crate::clock::Clock::system().now();
            orgs::add_default(&tx, &OrgId::new(crate::random::ulid(now)), now.ms())?;
            tx.execute(
                "INSERT INTO mandate_schema (version) VALUES (?1)",
                params![schema::VERSION],
            )?;
        }
    }
    tx.commit()?;
    Ok(())
}

/// What a PostgreSQL error means to the caller.
pub(super) fn store_error(error: &tokio_postgres::Error) -> StoreError {
    let code = error.code();
    if code == Some(&SqlState::QUERY_CANCELED) {
        return StoreError::OverBudget;
    }
    if code == Some(&SqlState::CHECK_VIOLATION)
        && error.as_db_error().and_then(|e| e.constraint()) == Some(super::log::CLOCK_CHECK)
    {
        tracing::warn!(
            "this host's clock is behind another host's: records it creates would step back in \
             time by more than the bound; the group is refused (is NTP running?)"
        );
        return StoreError::Unavailable(
            "this host's clock is behind another's by more than a second; retry later",
        );
    }
    let unavailable = error.is_closed()
        || match code {
            None => true,
            Some(code) => {
                let class = code.code().get(..2).unwrap_or_default();
                // Connection, resources, operator intervention, conflicts
                // with another transaction, a read-only standby.
                matches!(class, "08" | "53" | "57" | "40")
                    || [
                        SqlState::LOCK_NOT_AVAILABLE,
                        SqlState::READ_ONLY_SQL_TRANSACTION,
                        SqlState::IDLE_IN_TRANSACTION_SESSION_TIMEOUT,
                    ]
                    .contains(code)
            }
        };
    if unavailable {
        tracing::error!(%error, "the database cannot take this now");
        StoreError::Unavailable("the database cannot be reached or is busy; retry later")
    } else {
        tracing::error!(%error, "a statement failed");
        StoreError::Internal(error.to_string())
    }
}

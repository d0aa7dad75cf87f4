//! `mandate witness serve`: a C2SP tlog-witness for other deployments'
//! record logs (docs/log.md).
//!
//! The witness rule is core's ([`Submission::route`], then
//! [`Submission::apply`]); this module keeps the state it needs, signs and
//! speaks HTTP:
//!
//! - its key: an Ed25519 seed in [`KEY_FILE`] in the data folder, made
//!   (0600) at the first start; its vkey (type 0x04) is printed at start,
//!   by `mandate witness vkey`, and served at `GET /vkey`;
//! - its state: [`DB_FILE`] in the data folder, SQLite in WAL mode with
//!   `synchronous=FULL`; per origin the size and root of the last
//!   checkpoint it cosigned and that checkpoint with its cosignature;
//! - `POST /add-checkpoint`: one connection behind a mutex, so requests
//!   are checked one at a time against the state the one before left; in
//!   one transaction the state is read, the rule applied, the cosignature
//!   made and the new state written, and the cosignature is answered only
//!   after the commit returned — a kill at any moment leaves the old state
//!   or the new one, and a cosignature answered is never forgotten;
//! - `GET /checkpoint/<origin>`: the last checkpoint it cosigned for that
//!   log, with its cosignature.
//!
//! Answers are tlog-witness's, not problem documents: 200 with the
//! cosignature line, 409 with the witness's size (`text/x.tlog.size`), and
//! 400, 403, 404 and 422 with one line of plain text saying why. A split
//! view (the size it cosigned, another root) is kept as evidence in the
//! `split_views` table and logged with both roots.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};

use axum::Router;
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use mandate_core::limits::MAX_ADD_CHECKPOINT_BYTES;
use mandate_core::tlog::{
    AddCheckpoint, Checkpoint, Hash, LogError, Refusal, Submission, TLOG_SIZE_CONTENT_TYPE,
    WitnessSigner, WitnessState, WitnessedLogs,
};
use rusqlite::{OptionalExtension as _, TransactionBehavior, params};
use tokio::net::TcpListener;
use tower_http::catch_panic::CatchPanicLayer;
use tower_http::timeout::TimeoutLayer;

use crate::config::Config;
use crate::secrets::{create_key_file, read_key_file};

/// The witness's key file (its Ed25519 seed) in the data folder.
pub const KEY_FILE: &str = "witness.key";

/// The witness's database in the data folder.
pub const DB_FILE: &str = "witness.db";

/// The schema this build writes (`PRAGMA user_version`).
const SCHEMA_VERSION: i64 = 1;

const SCHEMA: &str = "
CREATE TABLE witnessed (
    origin TEXT PRIMARY KEY NOT NULL,
    size INTEGER NOT NULL CHECK (size >= 0),
    root BLOB NOT NULL CHECK (length(root) = 32),
    checkpoint TEXT NOT NULL,
    cosigned_at INTEGER NOT NULL
) STRICT;
CREATE TABLE split_views (
    id INTEGER PRIMARY KEY,
    origin TEXT NOT NULL,
    size INTEGER NOT NULL,
    cosigned_root BLOB NOT NULL,
    checkpoint TEXT NOT NULL,
    seen_at INTEGER NOT NULL,
    UNIQUE (origin, checkpoint)
) STRICT;
";

/// Why an add-checkpoint got no cosignature.
#[derive(Debug, thiserror::Error)]
pub enum Failure {
    /// The witness rule refused it.
    #[error(transparent)]
    Refused(#[from] Refusal),
    /// The state could not be read or written; nothing was cosigned.
    #[error("the witness's database: {0}")]
    Storage(#[from] rusqlite::Error),
    /// Signing failed (a clock before 1970).
    #[error("cosigning: {0}")]
    Signing(LogError),
}

/// A witness: the logs it witnesses, its key and its state.
pub struct Witness {
    logs: WitnessedLogs,
    signer: WitnessSigner,
    db: Mutex<rusqlite::Connection>,
}

impl std::fmt::Debug for Witness {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Witness")
            .field("signer", &self.signer)
            .field("logs", &self.logs.keys().collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}

/// The witness's key: read from [`KEY_FILE`] in `data_dir`, made there
/// (0600) when there is none.
fn signer(config: &Config) -> anyhow::Result<WitnessSigner> {
    let name = config.witness.name.as_deref().ok_or_else(|| {
        anyhow::anyhow!("[witness] name is not set: name the witness (e.g. witness.example.com/w1)")
    })?;
    std::fs::create_dir_all(&config.data_dir).map_err(|e| {
        anyhow::anyhow!(
            "cannot create the data folder {}: {e}",
            config.data_dir.display()
        )
    })?;
    let path = config.data_dir.join(KEY_FILE);
    let seed = match read_key_file(&path)? {
        Some(seed) => seed,
        None => create_key_file(&path)?,
    };
    WitnessSigner::new(&seed, name)
        .map_err(|e| anyhow::anyhow!("[witness] name {name:?} is not a key name: {e}"))
}

/// The witness's vkey (`mandate witness vkey`), making its key if needed.
pub fn vkey(config: &Config) -> anyhow::Result<String> {
    Ok(signer(config)?.vkey())
}

fn open_database(path: &Path) -> anyhow::Result<rusqlite::Connection> {
    let conn = crate::store::open_durable(path)?;
    let version: i64 = conn.pragma_query_value(None, "user_version", |row| row.get(0))?;
    match version {
        0 => {
            let tx = conn.unchecked_transaction()?;
            tx.execute_batch(SCHEMA)?;
            tx.pragma_update(None, "user_version", SCHEMA_VERSION)?;
            tx.commit()?;
        }
        SCHEMA_VERSION => {}
        newer => anyhow::bail!(
            "the witness database {} is at schema version {newer}, newer than this build's \
             {SCHEMA_VERSION}",
            path.display()
        ),
    }
    Ok(conn)
}

/// A size as SQLite stores it; a checkpoint above 2^63 − 1 leaves is
/// refused before any state is read.
fn stored_size(size: u64) -> Result<i64, Refusal> {
    i64::try_from(size).map_err(|_| Refusal::BadRequest(LogError::CheckpointMalformed))
}

impl Witness {
    /// Opens the witness of `config`: its logs, its key (made at the first
    /// start) and its database (made, or checked, in the data folder).
    pub fn open(config: &Config) -> anyhow::Result<Witness> {
        let logs = config.witness.witnessed_logs()?;
        let signer = signer(config)?;
        let db = open_database(&config.data_dir.join(DB_FILE))?;
        Ok(Witness {
            logs,
            signer,
            db: Mutex::new(db),
        })
    }

    /// The witness's vkey.
    pub fn vkey(&self) -> String {
        self.signer.vkey()
    }

    /// tlog-witness `add-checkpoint` at `now` (POSIX seconds): the
    /// cosignature line, once the new state is committed.
    pub fn add_checkpoint(&self, body: &[u8], now: i64) -> Result<String, Failure> {
        let body = std::str::from_utf8(body)
            .map_err(|_| Refusal::BadRequest(LogError::AddCheckpointMalformed))?;
        let request = AddCheckpoint::parse(body).map_err(Refusal::BadRequest)?;
        let submission = Submission::route(&self.logs, &request)?;
        let origin = submission.origin().to_owned();
        let mut conn = self.db.lock().unwrap_or_else(PoisonError::into_inner);
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let state = tx
            .query_row(
                "SELECT size, root FROM witnessed WHERE origin = ?1",
                params![origin],
                |row| Ok((row.get::<_, i64>(0)?, row.get::<_, Vec<u8>>(1)?)),
            )
            .optional()?
            .map(|(size, root)| {
                // The table's checks hold both: size ≥ 0, a 32-byte root.
                let size = u64::try_from(size)
                    .map_err(|_| rusqlite::Error::IntegralValueOutOfRange(0, size))?;
                let root: Hash = root.try_into().map_err(|_| {
                    rusqlite::Error::InvalidColumnType(
                        1,
                        "root".into(),
                        rusqlite::types::Type::Blob,
                    )
                })?;
                Ok::<_, rusqlite::Error>(WitnessState { size, root })
            })
            .transpose()?;
        let accepted = match submission.apply(state.as_ref()) {
            Ok(accepted) => accepted,
            Err(refusal) => {
                if let Refusal::SplitView {
                    size,
                    known,
                    submitted,
                } = &refusal
                {
                    tx.execute(
                        "INSERT OR IGNORE INTO split_views \
                         (origin, size, cosigned_root, checkpoint, seen_at) \
                         VALUES (?1, ?2, ?3, ?4, ?5)",
                        params![
                            origin,
                            stored_size(*size)?,
                            known.as_slice(),
                            request.checkpoint,
                            now
                        ],
                    )?;
                    tx.commit()?;
                    tracing::warn!(
                        origin,
                        size,
                        cosigned_root = %hex(known),
                        submitted_root = %hex(submitted),
                        "split view: the log signed another tree of a size this witness cosigned"
                    );
                }
                return Err(refusal.into());
            }
        };
        let line = self
            .signer
            .cosign(&accepted.checkpoint, now)
            .map_err(Failure::Signing)?;
        let cosigned = cosigned_note(
            &accepted.checkpoint,
            &request.checkpoint,
            &self.signer,
            &line,
        );
        tx.execute(
            "INSERT INTO witnessed (origin, size, root, checkpoint, cosigned_at) \
             VALUES (?1, ?2, ?3, ?4, ?5) \
             ON CONFLICT (origin) DO UPDATE SET size = excluded.size, root = excluded.root, \
             checkpoint = excluded.checkpoint, cosigned_at = excluded.cosigned_at",
            params![
                origin,
                stored_size(accepted.state.size)?,
                accepted.state.root.as_slice(),
                cosigned,
                now
            ],
        )?;
        tx.commit()?;
        Ok(line)
    }

    /// The last checkpoint cosigned for `origin`, with the cosignature.
    pub fn latest(&self, origin: &str) -> Result<Option<String>, rusqlite::Error> {
        let conn = self.db.lock().unwrap_or_else(PoisonError::into_inner);
        conn.query_row(
            "SELECT checkpoint FROM witnessed WHERE origin = ?1",
            params![origin],
            |row| row.get(0),
        )
        .optional()
    }
}

/// The checkpoint as the witness keeps it: its text, the signature lines
/// it came with except any under the witness's own name, and the new
/// cosignature.
fn cosigned_note(
    checkpoint: &Checkpoint,
    note: &str,
    signer: &WitnessSigner,
    line: &str,
) -> String {
    let ours = format!("\u{2014} {} ", signer.name());
    let mut cosigned = checkpoint.body();
    cosigned.push('\n');
    let signatures = note.split_once("\n\n").map_or("", |(_, lines)| lines);
    for signature in signatures.lines() {
        if !signature.starts_with(&ours) {
            cosigned.push_str(signature);
            cosigned.push('\n');
        }
    }
    cosigned.push_str(line);
    cosigned
}

fn hex(hash: &Hash) -> String {
    hash.iter().map(|b| format!("{b:02x}")).collect()
}

/// Plain text, one line or a note.
fn text(status: StatusCode, body: String) -> Response {
    (
        status,
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("text/plain; charset=utf-8"),
        )],
        body,
    )
        .into_response()
}

impl IntoResponse for Failure {
    fn into_response(self) -> Response {
        match self {
            Failure::Refused(Refusal::Conflict { size }) => (
                StatusCode::CONFLICT,
                [(
                    header::CONTENT_TYPE,
                    HeaderValue::from_static(TLOG_SIZE_CONTENT_TYPE),
                )],
                format!("{size}\n"),
            )
                .into_response(),
            Failure::Refused(refusal) => text(
                StatusCode::from_u16(refusal.status()).unwrap_or(StatusCode::BAD_REQUEST),
                format!("{}: {refusal}\n", refusal.code()),
            ),
            Failure::Storage(error) => {
                tracing::error!(%error, "the witness's database failed; nothing was cosigned");
                text(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "the witness cannot read or write its state now; retry later\n".to_owned(),
                )
            }
            Failure::Signing(error) => {
                tracing::error!(%error, "cosigning failed");
                text(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "the witness could not cosign\n".to_owned(),
                )
            }
        }
    }
}

async fn add_checkpoint(State(witness): State<Arc<Witness>>, body: Bytes) -> Response {
    let now = crate::clock::now_s();
    match tokio::task::spawn_blocking(move || witness.add_checkpoint(&body, now)).await {
        Ok(Ok(line)) => text(StatusCode::OK, line),
        Ok(Err(failure)) => failure.into_response(),
        Err(_) => text(
            StatusCode::INTERNAL_SERVER_ERROR,
            "the witness could not cosign\n".to_owned(),
        ),
    }
}

async fn latest(
    State(witness): State<Arc<Witness>>,
    axum::extract::Path(origin): axum::extract::Path<String>,
) -> Response {
    let read = tokio::task::spawn_blocking(move || witness.latest(&origin)).await;
    let mut response = match read {
        Ok(Ok(Some(note))) => text(StatusCode::OK, note),
        Ok(Ok(None)) => text(
            StatusCode::NOT_FOUND,
            "this witness has cosigned no checkpoint of that log\n".to_owned(),
        ),
        Ok(Err(error)) => Failure::Storage(error).into_response(),
        Err(_) => text(
            StatusCode::INTERNAL_SERVER_ERROR,
            "the witness could not read its state\n".to_owned(),
        ),
    };
    response
        .headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

async fn vkey_of(State(witness): State<Arc<Witness>>) -> Response {
    text(StatusCode::OK, format!("{}\n", witness.vkey()))
}

async fn not_found() -> Response {
    text(StatusCode::NOT_FOUND, "not found\n".to_owned())
}

fn panicked(_: Box<dyn std::any::Any + Send + 'static>) -> Response {
    text(
        StatusCode::INTERNAL_SERVER_ERROR,
        "the witness failed on this request\n".to_owned(),
    )
}

/// The witness's HTTP interface: `POST /add-checkpoint` (bodies up to
/// [`MAX_ADD_CHECKPOINT_BYTES`]), `GET /checkpoint/<origin>`, `GET /vkey`;
/// a request slower than `timeout`, its body included, is answered 408.
pub fn router(witness: Arc<Witness>, timeout: std::time::Duration) -> Router {
    Router::new()
        .route("/add-checkpoint", axum::routing::post(add_checkpoint))
        .route("/checkpoint/{*origin}", axum::routing::get(latest))
        .route("/vkey", axum::routing::get(vkey_of))
        .fallback(not_found)
        .layer(DefaultBodyLimit::max(MAX_ADD_CHECKPOINT_BYTES))
        .layer(TimeoutLayer::with_status_code(
            StatusCode::REQUEST_TIMEOUT,
            timeout,
        ))
        .layer(CatchPanicLayer::custom(panicked))
        .with_state(witness)
}

/// `mandate witness serve`: opens the witness, prints its vkey and the
/// address it listens on (stdout), and serves until SIGTERM or Ctrl-C.
pub async fn serve(config: Config) -> anyhow::Result<()> {
    let witness = Arc::new(Witness::open(&config)?);
    let listen = config.witness.listen;
    let listener = TcpListener::bind(listen)
        .await
        .map_err(|e| anyhow::anyhow!("cannot listen on {listen}: {e}"))?;
    let address: SocketAddr = listener.local_addr()?;
    let stop = crate::shutdown_signal()?;
    report(&witness.vkey(), address, witness.logs.len());
    let timeout = config.witness.request_timeout();
    crate::listen::serve(listener, router(witness, timeout), timeout, stop).await;
    tracing::info!("witness stopped");
    Ok(())
}

#[allow(
    clippy::print_stdout,
    reason = "the operator reads these lines once, at start"
)]
fn report(vkey: &str, address: SocketAddr, logs: usize) {
    println!("witness {vkey} for {logs} logs");
    println!("listening on http://{address}");
}

#[cfg(test)]
mod tests {
    use mandate_core::tlog::NoteSigner;

    use super::*;
    use crate::config::WitnessedLogConfig;

    const ORIGIN: &str = "log.example/a";

    fn config(dir: &Path) -> Config {
        let mut config = Config::for_test(dir);
        config.witness.name = Some("witness.example/w".to_owned());
        config.witness.log = vec![WitnessedLogConfig {
            origin: ORIGIN.to_owned(),
            vkeys: vec![log().vkey()],
        }];
        config
    }

    fn log() -> NoteSigner {
        NoteSigner::new(&[1; 32], ORIGIN).unwrap()
    }

    #[test]
    fn the_stored_note_keeps_one_cosignature_of_the_witness() {
        let dir = tempfile::tempdir().unwrap();
        let witness = Witness::open(&config(dir.path())).unwrap();
        let empty = Checkpoint::new(ORIGIN, 0, mandate_core::tlog::empty_root());
        let note = empty.sign(&log()).unwrap();
        let body = |note: &str| format!("old 0\n\n{note}");
        let first = witness.add_checkpoint(body(&note).as_bytes(), 100).unwrap();
        // The log resends the note it got back, with that cosignature.
        let again = witness
            .add_checkpoint(body(&format!("{note}{first}")).as_bytes(), 200)
            .unwrap();
        assert_ne!(first, again);
        let stored = witness.latest(ORIGIN).unwrap().unwrap();
        assert_eq!(stored, format!("{note}{again}"));
        assert_eq!(witness.latest("log.example/b").unwrap(), None);
    }

    #[test]
    fn a_witness_needs_a_name_and_refuses_a_newer_database() {
        let dir = tempfile::tempdir().unwrap();
        let mut unnamed = config(dir.path());
        unnamed.witness.name = None;
        let refused = Witness::open(&unnamed).unwrap_err().to_string();
        assert!(refused.contains("[witness] name"), "{refused}");
        let named = config(dir.path());
        let vkey = vkey(&named).unwrap();
        assert_eq!(Witness::open(&named).unwrap().vkey(), vkey);
        let conn = rusqlite::Connection::open(dir.path().join(DB_FILE)).unwrap();
        conn.pragma_update(None, "user_version", SCHEMA_VERSION + 1)
            .unwrap();
        drop(conn);
        let refused = Witness::open(&named).unwrap_err().to_string();
        assert!(refused.contains("newer than this build's"), "{refused}");
    }
}

//! The record log: one append-only Merkle log (RFC 6962) of every state
//! change — a token issued, delegated or revoked; a record created,
//! completed or rated — with checkpoints signed as C2SP signed notes, so
//! an edited, inserted or deleted record is caught by anyone holding a
//! checkpoint (docs/log.md).
//!
//! The rules (leaf bytes, tree hashing, proofs, notes) are core's `tlog`;
//! this module holds what the host adds: the log's name (`origin`, fixed at
//! the first start), its keys ([`keys`]), the tiles read from the tables
//! ([`TableTiles`]), signing a checkpoint, and setting all of it up at
//! start. The ledger appends (`crate::ledger`); the read side serves
//! checkpoints, tiles and proofs (`crate::queries`); `mandate audit`
//! checks the whole log against the database ([`audit`]) or follows a
//! remote one ([`watch`]).

pub mod audit;
pub mod events;
pub mod keys;
pub mod proofs;
pub mod submit;
pub mod watch;

use std::collections::HashMap;
use std::sync::{Arc, LazyLock};

use mandate_core::tlog::{self, Checkpoint, Frontier, Hash, LogEntry, LogEvent, TileReader};
use mandate_core::{Claims, OrgId};

use crate::clock::Now;
use crate::config::LogConfig;
use crate::secrets::Kek;
use crate::store::StoreError;
use crate::store::log::{self as rows, StoredCheckpoint};
use crate::store::orgs::Org;
use crate::store::records::{self, Record};
use crate::store::sql::{self, Connection, OptionalExtension, params};

pub use keys::{LogKeys, Signers};

/// The `meta` key of the log's origin.
pub const ORIGIN_KEY: &str = "log_origin";

/// Reads the tiles of the log from its tables: leaf hashes for level 0,
/// stored nodes above.
#[derive(Debug)]
pub struct TableTiles<'a> {
    conn: &'a Connection,
}

impl<'a> TableTiles<'a> {
    pub fn new(conn: &'a Connection) -> TableTiles<'a> {
        TableTiles { conn }
    }
}

impl TileReader for TableTiles<'_> {
    type Error = sql::Error;

    fn tile(&mut self, level: u8, index: u64, width: u16) -> Result<Vec<Hash>, sql::Error> {
        let start = index.saturating_mul(tlog_width());
        let hashes = rows::tile_hashes(self.conn, level, start, u64::from(width))?;
        if hashes.len() != usize::from(width) {
            return Err(sql::Error::corrupt(
                format_args!("log tile {level}/{index}"),
                format_args!("{} hashes stored, {width} expected", hashes.len()),
            ));
        }
        Ok(hashes)
    }
}

/// Hashes in a full tile.
fn tlog_width() -> u64 {
    u64::try_from(mandate_core::limits::LOG_TILE_WIDTH).unwrap_or(256)
}

/// The right edge of the stored log of `size` leaves, read from its tiles.
pub fn frontier_at(conn: &Connection, size: u64) -> Result<Frontier, StoreError> {
    Frontier::read(&mut TableTiles::new(conn), size).map_err(|error| match error {
        tlog::ReadError::Reader(error) => error.into(),
        tlog::ReadError::Log(error) => {
            StoreError::Internal(format!("the stored log breaks a rule: {error}"))
        }
    })
}

/// Leaf hashes read at once while integrating.
const INTEGRATE_PAGE: u64 = 4096;

/// Integrates the log up to `to` leaves (every leaf below committed):
/// stores the tile entries of levels 1 and up the leaves from the
/// integrated size on complete, and the new integrated size, under the
/// `log_integration` row's lock (PostgreSQL: one host at a time, to the
/// end of the transaction). `kept` is the right edge this process last
/// integrated to, used when the stored size is still its size (else read
/// from the tiles) and left at the new edge. Answers the right edge at
/// `to`, or at the integrated size when another host integrated further.
pub fn integrate(
    conn: &Connection,
    to: u64,
    kept: &mut Option<Frontier>,
) -> Result<Frontier, StoreError> {
    integrate_unless_busy(conn, to, kept, true)?
        .ok_or_else(|| StoreError::Internal("the log's integration row is missing".to_owned()))
}

/// [`integrate`]; unless `wait`, `None` at once while another transaction
/// integrates (PostgreSQL).
pub fn integrate_unless_busy(
    conn: &Connection,
    to: u64,
    kept: &mut Option<Frontier>,
    wait: bool,
) -> Result<Option<Frontier>, StoreError> {
    let Some(size) = rows::lock_integrated(conn, wait)? else {
        return Ok(None);
    };
    let mut frontier = match kept.take() {
        Some(edge) if edge.size() == size => edge,
        _ => frontier_at(conn, size)?,
    };
    let mut nodes = Vec::new();
    while frontier.size() < to {
        let start = frontier.size();
        let hashes = rows::tile_hashes(conn, 0, start, INTEGRATE_PAGE.min(to - start))?;
        if hashes.is_empty() {
            return Err(StoreError::Internal(format!(
                "the log's leaf {start} is missing below its committed size {to}"
            )));
        }
        for hash in hashes {
            for node in frontier
                .push(hash)
                .map_err(|e| StoreError::Internal(format!("the log cannot grow: {e}")))?
            {
                nodes.push(vec![
                    sql::types::Value::Integer(node.level.into()),
                    number(node.index)?,
                    sql::types::Value::Blob(node.hash.to_vec()),
                ]);
            }
        }
    }
    if frontier.size() > size {
        static NODES: LazyLock<sql::InsertTexts> =
            LazyLock::new(|| sql::InsertTexts::new("log_nodes (level, idx, hash)", &NODE_COLUMNS));
        conn.apply_tables(&[NODES.rows(&NODE_COLUMNS, &nodes)])?;
        rows::save_integrated(conn, frontier.size())?;
    }
    *kept = Some(frontier.clone());
    Ok(Some(frontier))
}

/// How soon after a local commit the integrator runs (commits within it
/// share one run): under load, a few runs a second per host. A
/// checkpoint's signing integrates what is left itself, so the cadence
/// bounds its work, not when a proof exists. At 20 ms, three hosts
/// through the 0.5 ms proxy sent about as many round trips integrating as
/// writing.
const INTEGRATE_AFTER: std::time::Duration = std::time::Duration::from_millis(250);
/// How often it runs without local commits (other hosts append too).
const INTEGRATE_EVERY: std::time::Duration = std::time::Duration::from_secs(1);

/// The integrator of a PostgreSQL host: integrates the committed log
/// ([`integrate`]) on the `proofs` lane, [`INTEGRATE_AFTER`] a local
/// commit and every [`INTEGRATE_EVERY`], so a checkpoint's signing rarely
/// integrates more than a second's leaves itself. A run first reads both
/// sizes without a lock (one round trip, and nothing more when there is
/// nothing to integrate), and goes on without waiting when another host
/// is integrating: that host integrates what it found committed, and
/// what it did not, a next run here does (after the next local commit, or
/// within a second). Waiting would hold a connection of the lane the DPoP
/// proofs use, and hosts would queue for the row, each integrating leaves
/// another just did. Returns at once on SQLite, whose writer integrates in
/// each group.
pub async fn integrator(state: crate::AppState) {
    let mut committed = state.committed.subscribe();
    let kept: Arc<std::sync::Mutex<Option<Frontier>>> = Arc::default();
    loop {
        tokio::select! {
            changed = committed.changed() => {
                if changed.is_err() {
                    return;
                }
                tokio::time::sleep(INTEGRATE_AFTER).await;
                committed.borrow_and_update();
            }
            () = tokio::time::sleep(INTEGRATE_EVERY) => {}
        }
        let edge = kept.clone();
        let ran = state
            .store
            .on_proofs_lane(move |conn| {
                let (committed, integrated) = rows::sizes(conn)?;
                if committed <= integrated {
                    return Ok(());
                }
                let mut kept = edge.lock().map(|mut kept| kept.take()).unwrap_or_default();
                let tx = conn.unchecked_transaction()?;
                integrate_unless_busy(&tx, committed, &mut kept, false)?;
                tx.commit()?;
                if let Ok(mut slot) = edge.lock() {
                    *slot = kept;
                }
                Ok(())
            })
            .await;
        match ran {
            None => return,
            Some(Ok(())) => {}
            Some(Err(error)) => tracing::warn!(%error, "integrating the record log failed"),
        }
    }
}

/// A checkpoint of the tree at `size` with `root`, signed by every signing
/// key (one signature line each, newest key first).
pub fn sign_checkpoint(
    signers: &Signers,
    origin: &str,
    size: u64,
    root: Hash,
    at_ms: i64,
) -> Result<StoredCheckpoint, StoreError> {
    let body = Checkpoint::new(origin, size, root).body();
    let mut note = format!("{body}\n");
    for signer in &signers.signing {
        let line = signer
            .signature_line(&body)
            .map_err(|e| StoreError::Internal(format!("signing a checkpoint: {e}")))?;
        note.push_str(&line);
    }
    Ok(StoredCheckpoint {
        size,
        root,
        note,
        created_at: at_ms,
    })
}

/// Whether `origin` may name a log: non-empty, without spaces, `+` or
/// control characters (a C2SP key name and checkpoint origin line).
fn valid_origin(origin: &str) -> bool {
    !origin.is_empty()
        && origin.len() <= 256
        && !origin
            .chars()
            .any(|c| c.is_whitespace() || c == '+' || c.is_control())
}

/// The default origin: `public_url` without its scheme, and `/v1/log`;
/// without one, `mandate.invalid/` and 16 random hex digits (a name, not an
/// address).
fn default_origin(public_url: Option<&str>) -> String {
    if let Some(url) = public_url {
        let rest = url
            .split_once("://")
            .map_or(url, |(_, rest)| rest)
            .trim_end_matches('/');
        return format!("{rest}/v1/log");
    }
    let random: [u8; 8] = crate::random::bytes();
    let hex: String = random.iter().map(|b| format!("{b:02x}")).collect();
    format!("mandate.invalid/{hex}")
}

/// The log's origin: stored at the first start (from `[log] origin`, else
/// the default) and the same ever after; a configuration naming another is
/// refused.
/// The log's origin as the database keeps it, once a start has fixed it.
pub fn stored_origin(conn: &Connection) -> anyhow::Result<Option<String>> {
    let stored: Option<Vec<u8>> = conn
        .query_row(
            "SELECT value FROM meta WHERE key = ?1",
            [ORIGIN_KEY],
            |row| row.get(0),
        )
        .optional()?;
    stored
        .map(|bytes| {
            String::from_utf8(bytes)
                .map_err(|_| anyhow::anyhow!("the stored log origin is not UTF-8"))
        })
        .transpose()
}

fn origin(
    conn: &Connection,
    config: &LogConfig,
    public_url: Option<&str>,
) -> anyhow::Result<String> {
    if let Some(stored) = stored_origin(conn)? {
        if let Some(configured) = &config.origin
            && configured != &stored
        {
            anyhow::bail!(
                "[log] origin is {configured}, but this deployment's log is {stored}: a log's \
                 name never changes (monitors and proofs name it); remove the setting or give \
                 the stored name"
            );
        }
        return Ok(stored);
    }
    let origin = config
        .origin
        .clone()
        .unwrap_or_else(|| default_origin(public_url));
    if !valid_origin(&origin) {
        anyhow::bail!(
            "the log origin {origin:?} is not a valid name: no spaces, '+' or control characters, \
             at most 256 bytes (set [log] origin)"
        );
    }
    conn.execute(
        "INSERT INTO meta (key, value) VALUES (?1, ?2)",
        params![ORIGIN_KEY, origin.as_bytes()],
    )?;
    Ok(origin)
}

/// What a start needs of the log.
#[derive(Debug, Clone)]
pub struct Prepared {
    pub origin: String,
    pub keys: Arc<LogKeys>,
}

/// Sets the log up at start, in one transaction: its origin, a first key,
/// and a checkpoint of the tree as it stands when none covers it yet (a
/// new deployment's empty tree, or the leaves an upgrade appended for what
/// was stored before the log).
pub fn prepare(
    conn: &Connection,
    kek: &Kek,
    config: &LogConfig,
    public_url: Option<&str>,
    now: Now,
) -> anyhow::Result<Prepared> {
    let tx = conn.unchecked_transaction()?;
    let origin = origin(&tx, config, public_url)?;
    let keys: i64 = tx.query_row("SELECT count(*) FROM log_keys", [], |row| row.get(0))?;
    if keys == 0 {
        keys::rotate(&tx, kek, &origin, now)?;
    }
    let signers = keys::load(&tx, kek, &origin)?;
    let mut frontier = integrate(&tx, rows::committed_size(&tx)?, &mut None)?;
    if config.enabled && frontier.size() == 0 {
        let appended = backfill(&tx, &mut frontier)?;
        rows::save_integrated(&tx, appended)?;
        tx.execute(
            "UPDATE ledger_state SET next_log_idx = ?1 WHERE id = 1",
            [appended],
        )?;
        if appended > 0 {
            tracing::warn!(
                leaves = appended,
                "the record log starts with what was stored before it: every token and record \
                 as it stands now"
            );
        }
    }
    let latest = rows::latest_checkpoint(&tx)?.map(|checkpoint| checkpoint.size);
    if latest != Some(frontier.size()) {
        let checkpoint = sign_checkpoint(
            &signers,
            &origin,
            frontier.size(),
            frontier.root(),
            now.ms(),
        )?;
        rows::insert_checkpoint(&tx, &checkpoint)?;
    }
    tx.commit()?;
    Ok(Prepared {
        origin,
        keys: Arc::new(LogKeys::new(signers)),
    })
}

/// Appends an event of organisation `org` at `at` (unix ms) to the log whose
/// right edge is `frontier`: its leaf and hash, and the tile entries it
/// completes, stored through `conn`. Answers the leaf's index.
pub fn append(
    conn: &Connection,
    frontier: &mut Frontier,
    org: &OrgId,
    at: i64,
    event: LogEvent,
) -> Result<u64, StoreError> {
    let mut rows = LogRows::default();
    let index = frontier.size();
    rows.append(Some(frontier), index, org, at, event)?;
    rows.store(conn)?;
    Ok(index)
}

/// Leaves and tile entries appended in memory, to be stored together
/// ([`LogRows::store`]: one statement per table on PostgreSQL).
#[derive(Debug, Default)]
pub struct LogRows {
    /// `log_leaves (idx, hash, leaf)` rows.
    leaves: Vec<Vec<sql::types::Value>>,
    /// `log_nodes (level, idx, hash)` rows.
    nodes: Vec<Vec<sql::types::Value>>,
}

impl LogRows {
    /// Keeps the leaf of an event of organisation `org` at `at` (unix ms)
    /// at `index`, with its hash. With the log's right edge (`frontier`,
    /// whose size must be `index`), the tile entries the leaf completes
    /// are kept too; without (a PostgreSQL group, whose `index` is
    /// provisional until its tail), they are integrated after commit
    /// ([`integrate`]).
    pub fn append(
        &mut self,
        frontier: Option<&mut Frontier>,
        index: u64,
        org: &OrgId,
        at: i64,
        event: LogEvent,
    ) -> Result<(), StoreError> {
        use sql::types::Value;
        let leaf = LogEntry::new(org.clone(), at, event)
            .to_leaf()
            .map_err(|e| StoreError::Internal(format!("an event the log refuses: {e}")))?;
        let hash = tlog::leaf_hash(&leaf);
        if let Some(frontier) = frontier {
            if frontier.size() != index {
                return Err(StoreError::Internal(
                    "a leaf appended away from the log's edge".to_owned(),
                ));
            }
            let nodes = frontier
                .push(hash)
                .map_err(|e| StoreError::Internal(format!("the log cannot grow: {e}")))?;
            for node in nodes {
                self.nodes.push(vec![
                    Value::Integer(node.level.into()),
                    number(node.index)?,
                    Value::Blob(node.hash.to_vec()),
                ]);
            }
        }
        self.leaves.push(vec![
            number(index)?,
            Value::Blob(hash.to_vec()),
            Value::Blob(leaf),
        ]);
        Ok(())
    }

    /// Rows kept and not yet stored.
    pub fn len(&self) -> usize {
        self.leaves.len() + self.nodes.len()
    }

    /// Whether none are kept.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Stores what was kept, and forgets it: one statement on PostgreSQL.
    pub fn store(&mut self, conn: &Connection) -> sql::Result<()> {
        conn.apply_tables(&self.take(true).parts(false))
    }

    /// What was kept, taken out to be stored with other tables' rows
    /// ([`Connection::apply_tables`]); `integrated` when the tile entries
    /// were kept with the leaves (SQLite: the log's size and integrated
    /// size are stored with them; PostgreSQL's sequencer keeps the size,
    /// [`integrate`] the integrated size).
    pub fn take(&mut self, integrated: bool) -> TakenLogRows {
        // The log's size after them: the last leaf's index, plus one.
        let size = self
            .leaves
            .last()
            .and_then(|leaf| match leaf.first() {
                Some(sql::types::Value::Integer(index)) => {
                    Some(vec![sql::types::Value::Integer(index + 1)])
                }
                _ => None,
            })
            .filter(|_| integrated);
        TakenLogRows {
            leaves: std::mem::take(&mut self.leaves),
            nodes: std::mem::take(&mut self.nodes),
            size: size.into_iter().collect(),
        }
    }
}

/// Leaves and tile entries taken from [`LogRows`], to be stored with the
/// log's size and integrated size after them when their tile entries were
/// kept (SQLite: `ledger_state.next_log_idx`, read by the next group, and
/// `log_integration.size`).
#[derive(Debug, Default)]
pub struct TakenLogRows {
    leaves: Vec<Vec<sql::types::Value>>,
    nodes: Vec<Vec<sql::types::Value>>,
    /// One row, the size, when there are leaves and their tile entries;
    /// else none.
    size: Vec<Vec<sql::types::Value>>,
}

/// An index or level as stored.
fn number(n: u64) -> Result<sql::types::Value, StoreError> {
    i64::try_from(n)
        .map(sql::types::Value::Integer)
        .map_err(|_| StoreError::Internal("the log outgrew its index".to_owned()))
}

/// `log_leaves (idx, hash, leaf)`'s columns.
const LEAF_COLUMNS: [sql::Column; 3] = [sql::Column::Integer, sql::Column::Blob, sql::Column::Blob];
/// The same, as a PostgreSQL tail writes them: the index provisional,
/// numbered on the server from the sequencer's base
/// ([`crate::store::log::LEAF`]).
const NUMBERED_LEAF_COLUMNS: [sql::Column; 3] = [
    sql::Column::Numbered(crate::store::log::LEAF),
    sql::Column::Blob,
    sql::Column::Blob,
];
/// `log_nodes (level, idx, hash)`'s columns.
const NODE_COLUMNS: [sql::Column; 3] = [
    sql::Column::Integer,
    sql::Column::Integer,
    sql::Column::Blob,
];

impl TakenLogRows {
    /// The rows as parts of [`Connection::apply_tables`], a table each;
    /// `numbered`: the leaves' indexes are provisional, numbered by the
    /// statement ([`sql::Numbering`], a PostgreSQL tail).
    pub fn parts(&self, numbered: bool) -> [sql::RowsFor<'_>; 4] {
        static LEAVES: LazyLock<sql::InsertTexts> =
            LazyLock::new(|| sql::InsertTexts::new("log_leaves (idx, hash, leaf)", &LEAF_COLUMNS));
        static NODES: LazyLock<sql::InsertTexts> =
            LazyLock::new(|| sql::InsertTexts::new("log_nodes (level, idx, hash)", &NODE_COLUMNS));
        [
            LEAVES.rows(
                if numbered {
                    &NUMBERED_LEAF_COLUMNS
                } else {
                    &LEAF_COLUMNS
                },
                &self.leaves,
            ),
            NODES.rows(&NODE_COLUMNS, &self.nodes),
            sql::RowsFor {
                sqlite: "UPDATE ledger_state SET next_log_idx = ?1 WHERE id = 1",
                postgres: "UPDATE ledger_state SET next_log_idx = d.size \
                           FROM unnest($1::bigint[]) AS d(size) WHERE ledger_state.id = 1",
                columns: &[sql::Column::Integer],
                rows: &self.size,
            },
            sql::RowsFor {
                sqlite: "UPDATE log_integration SET size = ?1 WHERE id = 1",
                postgres: "UPDATE log_integration SET size = d.size \
                           FROM unnest($1::bigint[]) AS d(size) WHERE log_integration.id = 1",
                columns: &[sql::Column::Integer],
                rows: &self.size,
            },
        ]
    }
}

/// A token as the backfill reads it.
struct StoredToken {
    jti: String,
    org: Org,
    claims: String,
    kid: String,
    revoked_at: Option<i64>,
    reason: Option<String>,
}

/// Fills an empty log with what the database held before the log existed
/// (an upgrade, or a deployment that turns the log on): every token's
/// issue, every record's events, every revocation, each as its row stands
/// now, with the rows pointing at their leaves. Answers how many leaves.
fn backfill(conn: &Connection, frontier: &mut Frontier) -> anyhow::Result<u64> {
    let orgs: HashMap<Org, OrgId> = conn
        .prepare_cached("SELECT num, id FROM orgs")?
        .query_map([], |row| {
            Ok((row.get::<_, Org>(0)?, row.get::<_, String>(1)?))
        })?
        .map(|row| {
            let (org, id) = row?;
            Ok((org, OrgId::parse(&id)?))
        })
        .collect::<anyhow::Result<_>>()?;
    let org_id = |org: Org| {
        orgs.get(&org)
            .cloned()
            .ok_or_else(|| anyhow::anyhow!("a stored object stands in no organisation"))
    };
    let tokens: Vec<StoredToken> = conn
        .prepare_cached(
            "SELECT jti, org, claims, kid, revoked_at, revoke_reason FROM tokens
             ORDER BY issued_at, depth, jti",
        )?
        .query_map([], |row| {
            Ok(StoredToken {
                jti: row.get(0)?,
                org: row.get(1)?,
                claims: row.get(2)?,
                kid: row.get(3)?,
                revoked_at: row.get(4)?,
                reason: row.get(5)?,
            })
        })?
        .collect::<sql::Result<_>>()?;
    for StoredToken {
        jti,
        org,
        claims: text,
        kid,
        ..
    } in &tokens
    {
        let claims: Claims = serde_json::from_str(text)?;
        let index = append(
            conn,
            frontier,
            &org_id(*org)?,
            claims.iat.saturating_mul(1000),
            events::token_issued(&claims, text, kid),
        )?;
        conn.execute(
            "UPDATE tokens SET log_issued = ?1 WHERE jti = ?2",
            params![index, jti],
        )?;
    }
    let select = format!("{} ORDER BY seq", records::select_sql());
    let stored: Vec<Record> = conn
        .prepare_cached(&select)?
        .query_map([], records::from_row)?
        .collect::<sql::Result<_>>()?;
    for record in &stored {
        let org = org_id(record.org())?;
        let created = events::created_of(record, false)?;
        let index = append(conn, frontier, &org, record.created_at, created)?;
        conn.execute(
            "UPDATE records SET log_created = ?1 WHERE seq = ?2",
            params![index, record.seq],
        )?;
        if events::needs_completion(record) {
            let completed = events::record_completed(record)?;
            let at = record.completed_at.unwrap_or(record.created_at);
            let index = append(conn, frontier, &org, at, completed)?;
            conn.execute(
                "UPDATE records SET log_completed = ?1 WHERE seq = ?2",
                params![index, record.seq],
            )?;
        }
        if record.state.rating().is_some() {
            let rated = events::record_rated(record)?;
            let at = record.feedback_at.unwrap_or(record.created_at);
            let index = append(conn, frontier, &org, at, rated)?;
            conn.execute(
                "UPDATE records SET log_rated = ?1 WHERE seq = ?2",
                params![index, record.seq],
            )?;
        }
    }
    for StoredToken {
        jti,
        org,
        claims: text,
        revoked_at,
        reason,
        ..
    } in &tokens
    {
        let Some(revoked_at) = revoked_at else {
            continue;
        };
        let claims: Claims = serde_json::from_str(text)?;
        let jth = claims.jth();
        let event = events::token_revoked(jth.as_str(), jth.as_str(), reason.as_deref())?;
        let index = append(
            conn,
            frontier,
            &org_id(*org)?,
            revoked_at.saturating_mul(1000),
            event,
        )?;
        conn.execute(
            "UPDATE tokens SET log_revoked = ?1, revoke_cause = ?2 WHERE jti = ?3",
            params![index, jth.as_str(), jti],
        )?;
    }
    Ok(frontier.size())
}

/// The root of the tree at `size`, from the tables.
pub fn root_at(conn: &Connection, size: u64) -> Result<Hash, tlog::ReadError<sql::Error>> {
    tlog::tree_root(&mut TableTiles::new(conn), size)
}

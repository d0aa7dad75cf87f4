//! The record log's tables: every statement that reads or writes them, once,
//! for the ledger (appending), the read side (proofs, tiles, checkpoints)
//! and `mandate audit verify`.
//!
//! - `log_leaves`: by index, each leaf's bytes and its RFC 6962 leaf hash;
//!   the hashes are the level-0 tiles (C2SP `tlog-tiles`).
//! - `log_nodes`: the tile entries of levels 1 and up, each the root of a
//!   full tile of the level below, written once when that tile fills.
//! - `log_checkpoints`: every checkpoint signed, by tree size.
//! - `ledger_state`: one row, the next token status index, event `seq`
//!   and leaf index; on PostgreSQL a group's tail takes it first
//!   ([`SEQUENCE`]) and holds it to its commit.
//! - `log_integration`: one row, how many leaves `log_nodes` covers.
//!
//! Hashes and leaves are bytes here; what they mean is core's (`tlog`).

use std::sync::LazyLock;

use crate::store::sql::{self, Connection, Dialect, OptionalExtension, params};

/// A 32-byte hash as stored.
pub type Hash = [u8; 32];

fn hash_of(bytes: Vec<u8>) -> sql::Result<Hash> {
    Hash::try_from(bytes.as_slice()).map_err(|_| sql::Error::corrupt("a log hash", "not 32 bytes"))
}

/// The ledger's counters, read by a group on SQLite (its one writer
/// numbers leaves, events and status indexes as it goes). PostgreSQL
/// groups number them in their tail instead ([`SEQUENCE`]) and take status
/// indexes from the `status_idx` sequence ([`status_block`]): no group
/// holds this row across its round trips.
pub fn state(conn: &Connection) -> sql::Result<LedgerState> {
    conn.prepare_cached(
        "SELECT next_status_idx, next_event_seq, next_log_idx FROM ledger_state WHERE id = 1",
    )?
    .query_row([], |row| {
        Ok(LedgerState {
            next_status_idx: row.get(0)?,
            next_event_seq: row.get(1)?,
            next_log_idx: row.get(2)?,
        })
    })
}

/// The counters of the one `ledger_state` row.
#[derive(Debug, Clone, Copy)]
pub struct LedgerState {
    /// The next token status index.
    pub next_status_idx: u64,
    /// The `seq` of the next event of the outbox.
    pub next_event_seq: i64,
    /// The index of the next leaf of the record log, once a group has
    /// stored leaves since schema 15 (else read the log's size).
    pub next_log_idx: Option<u64>,
}

/// Where a PostgreSQL group numbers its leaves and events before its tail
/// hands out the real numbers: far above any index or `seq` the log or
/// the outbox reaches, so a provisional number is never a real one.
pub const PENDING: u64 = 1 << 62;

/// The sequencer (PostgreSQL), a group tail's first statement, with its
/// parameters the group's count of leaves and of events: takes the state
/// row — held to the commit, so numbers are handed out in commit order
/// without a gap — and moves its counters past the group's numbers. The
/// tail's next statement reads where they start from the row ([`BASES`]),
/// so both go in one flight with the `COMMIT`.
pub const SEQUENCE: &str = "UPDATE ledger_state SET next_log_idx = COALESCE(next_log_idx,
         (SELECT COALESCE(max(idx) + 1, 0) FROM log_leaves)) + ?1,
         next_event_seq = next_event_seq + ?2 WHERE id = 1";

/// The first leaf index ([`LEAF`]) and event `seq` ([`EVENT`]) the
/// sequencer ([`SEQUENCE`]) handed the transaction, read after it with the
/// same counts as `$1` and `$2` (a [`sql::Numbering`]'s bases).
pub const BASES: &str = "SELECT next_log_idx - $1::bigint AS leaf, \
     next_event_seq - $2::bigint AS event FROM ledger_state WHERE id = 1";

/// [`BASES`]' column of the first leaf index.
pub const LEAF: &str = "leaf";
/// [`BASES`]' column of the first event `seq`.
pub const EVENT: &str = "event";

/// Makes the missing `org_seqs` rows of the organisations of a JSON list
/// `$1` (`[{"org": …}]`, [`org_records`]; PostgreSQL, in a tail's flight
/// before [`NUMBER_ORGS`]): each from its organisation's newest record —
/// an organisation new to the table, or a database upgraded or imported.
/// Rows that exist are left alone.
pub static MAKE_ORG_SEQS: LazyLock<String> = LazyLock::new(|| {
    format!(
        "INSERT INTO org_seqs (org, next_seq, last_created_at)
         SELECT d.org, COALESCE(r.seq + 1, d.org << 40), COALESCE(r.created_at, 0)
         FROM jsonb_to_recordset((?1::text)::jsonb) AS d(org bigint)
         LEFT JOIN LATERAL (SELECT seq, created_at FROM records
             WHERE seq >= d.org << 40 AND seq < (d.org << 40) + {PENDING_SEQS}
             ORDER BY seq DESC LIMIT 1) r ON true
         ORDER BY d.org
         ON CONFLICT (org) DO NOTHING"
    )
});

/// Numbers the group's records of each organisation of a JSON list `$1`
/// ([`org_records`]: how many, the first and last `created_at`) from its
/// `org_seqs` row (PostgreSQL, the first statement of a tail's flight
/// after [`MAKE_ORG_SEQS`]): takes the rows — held to the commit, so
/// records are numbered in commit order without a gap — and keeps the
/// first `seq` handed out in `base`, which the flight's later statements
/// read ([`NUMBERED_SEQ`], [`RENUMBER_RECORDS`]). Every tail takes its
/// `org_seqs` rows before the sequencer's ([`SEQUENCE`]), several of them
/// by [`LOCK_ORG_SEQS`] first, in the order of their numbers, so tails
/// never wait on one another in a cycle. The row's checks refuse a tail whose first record was created
/// more than the bound before the newest record another host committed
/// (`org_seqs_clock`: its clock is behind), or that would fill the
/// organisation's range (`org_seqs_range`).
pub const NUMBER_ORGS: &str = "UPDATE org_seqs SET base = org_seqs.next_seq,
         next_seq = org_seqs.next_seq + d.n,
         last_created_at = GREATEST(org_seqs.last_created_at, d.max_at),
         lag_ms = GREATEST(0, org_seqs.last_created_at - d.min_at),
         max_lag_ms = GREATEST(org_seqs.max_lag_ms, org_seqs.last_created_at - d.min_at)
     FROM (SELECT * FROM jsonb_to_recordset((?1::text)::jsonb)
         AS d(org bigint, n bigint, min_at bigint, max_at bigint) ORDER BY org) d
     WHERE org_seqs.org = d.org";

/// Takes the `org_seqs` rows of the organisations of a JSON list `$1` (as
/// [`NUMBER_ORGS`]'s) in the order of their numbers (a locking clause
/// applies after `ORDER BY`), before [`NUMBER_ORGS`] updates them: an
/// `UPDATE … FROM` locks its rows in the order its plan meets them (the
/// table's physical order, which every update changes), so two tails
/// numbering the same two organisations could each hold one row and wait
/// for the other — a deadlock, which PostgreSQL breaks by failing one
/// group (a 503).
pub const LOCK_ORG_SEQS: &str = "SELECT org FROM org_seqs
     WHERE org IN (SELECT org FROM jsonb_to_recordset((?1::text)::jsonb) AS d(org bigint))
     ORDER BY org FOR UPDATE";

/// The `seq` a record numbered provisionally as `t.v` takes (an
/// expression for [`sql::Column::Computed`], with [`NUMBERED_SEQ_JOIN`]):
/// its organisation's `base` ([`NUMBER_ORGS`]) plus its place in the
/// group's block; a `seq` that is not provisional is kept.
pub static NUMBERED_SEQ: LazyLock<String> = LazyLock::new(|| {
    format!(
        "CASE WHEN (t.v & {RANGE_MASK}) >= {PENDING_SEQS} \
         THEN s.base + (t.v & {BLOCK_MASK}) ELSE t.v END",
        RANGE_MASK = (1_i64 << 40) - 1,
        BLOCK_MASK = PENDING_BLOCK - 1,
    )
});

/// The join [`NUMBERED_SEQ`] reads a provisional record's `org_seqs` row
/// by. A subquery in the expression ran an index scan for every record;
/// as a join, the planner hashes the group's records against the rows
/// while the table is small and looks each record up by the index once
/// it is large (`EXPLAIN` of the generic plan at 2 and at 20 000 rows) —
/// no worse than before. Measured: the tail's statement 13 % less
/// server time a record (one host direct, `log_min_duration_statement`).
pub static NUMBERED_SEQ_JOIN: LazyLock<String> = LazyLock::new(|| {
    format!(
        " LEFT JOIN org_seqs s ON s.org = t.v >> 40 AND (t.v & {RANGE_MASK}) >= {PENDING_SEQS}",
        RANGE_MASK = (1_i64 << 40) - 1,
    )
});

/// Moves the `seq` of records a PostgreSQL group stored before its tail,
/// numbered provisionally in the blocks starting at a JSON list `$1` of
/// `[{"pending": …}]`, to the numbers [`NUMBER_ORGS`] handed out earlier
/// in the same flight.
pub static RENUMBER_RECORDS: LazyLock<String> = LazyLock::new(|| {
    format!(
        "UPDATE records SET seq = o.base + (records.seq - d.pending)
         FROM jsonb_to_recordset((?1::text)::jsonb) AS d(pending bigint), org_seqs o
         WHERE o.org = d.pending >> 40
             AND records.seq >= d.pending AND records.seq < d.pending + {PENDING_BLOCK}"
    )
});

/// The constraint of `org_seqs` refusing a tail of a host whose clock is
/// behind ([`NUMBER_ORGS`]).
pub const CLOCK_CHECK: &str = "org_seqs_clock";

/// Where in its organisation's range of `seq` a PostgreSQL group numbers
/// its records before its tail hands out the real numbers: the range's
/// upper half, which no organisation's records reach.
pub const PENDING_SEQS: i64 = 1 << 39;

/// How many records one group numbers provisionally in an organisation's
/// range at most: a block of the range's upper half, one per host and
/// group, so two hosts' groups never take the same provisional number.
pub const PENDING_BLOCK: i64 = 1 << 20;

/// A group's records of one organisation, for the sequencer: how many, and
/// the first and last `created_at` among them.
#[derive(Debug, Clone, Copy)]
pub struct OrgRecords {
    pub org: i64,
    pub n: i64,
    pub min_at: i64,
    pub max_at: i64,
}

/// How far (ms) `created_at` has stepped back along `org`'s records at most
/// (PostgreSQL; 0 for an organisation whose records never did).
pub fn max_time_disorder(conn: &Connection, org: i64) -> sql::Result<i64> {
    Ok(conn
        .prepare_cached("SELECT max_lag_ms FROM org_seqs WHERE org = ?1")?
        .query_row(params![org], |row| row.get(0))
        .optional()?
        .unwrap_or(0))
}

/// The JSON list of [`MAKE_ORG_SEQS`] and [`NUMBER_ORGS`].
pub fn org_records(orgs: &[OrgRecords]) -> String {
    let list: Vec<serde_json::Value> = orgs
        .iter()
        .map(
            |o| serde_json::json!({"org": o.org, "n": o.n, "min_at": o.min_at, "max_at": o.max_at}),
        )
        .collect();
    serde_json::Value::Array(list).to_string()
}

/// The JSON list of [`RENUMBER_RECORDS`].
pub fn pending_blocks(starts: &[i64]) -> String {
    let list: Vec<serde_json::Value> = starts
        .iter()
        .map(|pending| serde_json::json!({"pending": pending}))
        .collect();
    serde_json::Value::Array(list).to_string()
}

/// How many leaves the committed log holds: every index below is
/// committed (the sequencer's row is held to each tail's commit).
pub fn committed_size(conn: &Connection) -> sql::Result<u64> {
    sizes(conn).map(|(committed, _)| committed)
}

/// [`committed_size`] and how many leaves the stored tile entries cover
/// ([`integrated`]), read together without a lock: whether there is
/// anything to integrate.
pub fn sizes(conn: &Connection) -> sql::Result<(u64, u64)> {
    conn.prepare_cached(
        "SELECT COALESCE(next_log_idx, (SELECT COALESCE(max(idx) + 1, 0) FROM log_leaves)),
                (SELECT size FROM log_integration WHERE id = 1)
         FROM ledger_state WHERE id = 1",
    )?
    .query_row([], |row| Ok((row.get(0)?, row.get(1)?)))
}

/// How many leaves the stored tile entries (`log_nodes`) cover; on
/// PostgreSQL the row is locked to the end of the transaction, so hosts
/// integrate one at a time — after a wait for another holder, or (`wait`
/// false) `None` at once while another holds it.
pub fn lock_integrated(conn: &Connection, wait: bool) -> sql::Result<Option<u64>> {
    let sql = match (conn.dialect(), wait) {
        (Dialect::Postgres, true) => "SELECT size FROM log_integration WHERE id = 1 FOR UPDATE",
        (Dialect::Postgres, false) => {
            "SELECT size FROM log_integration WHERE id = 1 FOR UPDATE SKIP LOCKED"
        }
        (Dialect::Sqlite, _) => "SELECT size FROM log_integration WHERE id = 1",
    };
    conn.prepare_cached(sql)?
        .query_row([], |row| row.get(0))
        .optional()
}

/// How many leaves the stored tile entries cover, without a lock.
pub fn integrated(conn: &Connection) -> sql::Result<u64> {
    conn.prepare_cached("SELECT size FROM log_integration WHERE id = 1")?
        .query_row([], |row| row.get(0))
}

/// Stores how many leaves the stored tile entries cover.
pub fn save_integrated(conn: &Connection, size: u64) -> sql::Result<()> {
    conn.prepare_cached("UPDATE log_integration SET size = ?1 WHERE id = 1")?
        .execute([size])?;
    Ok(())
}

/// Status indexes taken at once by a PostgreSQL host from the
/// `status_idx` sequence (its `INCREMENT BY`).
pub const STATUS_BLOCK: u64 = 256;

/// The first of a block of [`STATUS_BLOCK`] status indexes no other host
/// or block has (PostgreSQL): no lock, and a block a host never uses up is
/// bits never set.
pub fn status_block(conn: &Connection) -> sql::Result<u64> {
    conn.prepare_cached("SELECT nextval('status_idx')")?
        .query_row([], |row| row.get(0))
}

/// Stores the `seq` of the next event.
pub fn save_next_event_seq(conn: &Connection, next: i64) -> sql::Result<()> {
    conn.prepare_cached("UPDATE ledger_state SET next_event_seq = ?1 WHERE id = 1")?
        .execute([next])?;
    Ok(())
}

/// A bound on the status indexes handed out, read without a lock: the
/// next one (SQLite), or the end of the last block taken from the
/// `status_idx` sequence (PostgreSQL).
pub fn next_status_idx(conn: &Connection) -> sql::Result<u64> {
    let sql = if conn.dialect() == Dialect::Postgres {
        "SELECT CASE WHEN is_called THEN last_value + 256 ELSE last_value END FROM status_idx"
    } else {
        "SELECT next_status_idx FROM ledger_state WHERE id = 1"
    };
    conn.prepare_cached(sql)?.query_row([], |row| row.get(0))
}

/// Stores the next token status index.
pub fn save_next_status_idx(conn: &Connection, next: u64) -> sql::Result<()> {
    conn.prepare_cached("UPDATE ledger_state SET next_status_idx = ?1 WHERE id = 1")?
        .execute([next])?;
    Ok(())
}

/// How many leaves the log holds (its leaves are numbered from 0 with no
/// gap: the last one's index, plus one).
pub fn size(conn: &Connection) -> sql::Result<u64> {
    let last: Option<u64> = conn
        .prepare_cached("SELECT max(idx) FROM log_leaves")?
        .query_row([], |row| row.get(0))?;
    Ok(last.map_or(0, |last| last + 1))
}

/// The leaf at `idx`, if the log has one there.
pub fn leaf(conn: &Connection, idx: u64) -> sql::Result<Option<Vec<u8>>> {
    conn.prepare_cached("SELECT leaf FROM log_leaves WHERE idx = ?1")?
        .query_row([idx], |row| row.get(0))
        .optional()
}

/// The hashes of tile entries `start .. start + count` of `level`: leaf
/// hashes at level 0, stored nodes above. Fewer come back when the log has
/// fewer.
pub fn tile_hashes(conn: &Connection, level: u8, start: u64, count: u64) -> sql::Result<Vec<Hash>> {
    let end = start.saturating_add(count);
    let rows: Vec<Vec<u8>> = if level == 0 {
        conn.prepare_cached(
            "SELECT hash FROM log_leaves WHERE idx >= ?1 AND idx < ?2 ORDER BY idx",
        )?
        .query_map(params![start, end], |row| row.get(0))?
        .collect::<sql::Result<_>>()?
    } else {
        conn.prepare_cached(
            "SELECT hash FROM log_nodes WHERE level = ?1 AND idx >= ?2 AND idx < ?3 ORDER BY idx",
        )?
        .query_map(params![level, start, end], |row| row.get(0))?
        .collect::<sql::Result<_>>()?
    };
    rows.into_iter().map(hash_of).collect()
}

/// A signed checkpoint as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredCheckpoint {
    pub size: u64,
    pub root: Hash,
    /// The signed note (C2SP `tlog-checkpoint`).
    pub note: String,
    /// Unix milliseconds.
    pub created_at: i64,
}

/// Stores a checkpoint of the tree at `size`.
pub fn insert_checkpoint(conn: &Connection, checkpoint: &StoredCheckpoint) -> sql::Result<()> {
    conn.prepare_cached(
        "INSERT INTO log_checkpoints (size, root, note, created_at) VALUES (?1, ?2, ?3, ?4)",
    )?
    .execute(params![
        checkpoint.size,
        checkpoint.root.as_slice(),
        checkpoint.note,
        checkpoint.created_at
    ])?;
    Ok(())
}

fn checkpoint_row(row: &sql::Row<'_>) -> sql::Result<(u64, Vec<u8>, String, i64)> {
    Ok((row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?))
}

fn checkpoint_of(
    (size, root, note, created_at): (u64, Vec<u8>, String, i64),
) -> sql::Result<StoredCheckpoint> {
    Ok(StoredCheckpoint {
        size,
        root: hash_of(root)?,
        note,
        created_at,
    })
}

/// The newest checkpoint, if any was signed.
pub fn latest_checkpoint(conn: &Connection) -> sql::Result<Option<StoredCheckpoint>> {
    conn.prepare_cached(
        "SELECT size, root, note, created_at FROM log_checkpoints ORDER BY size DESC LIMIT 1",
    )?
    .query_row([], checkpoint_row)
    .optional()?
    .map(checkpoint_of)
    .transpose()
}

/// Up to `limit` checkpoints of sizes from `from` on, smallest first.
pub fn checkpoints_from(
    conn: &Connection,
    from: u64,
    limit: u64,
) -> sql::Result<Vec<StoredCheckpoint>> {
    conn.prepare_cached(
        "SELECT size, root, note, created_at FROM log_checkpoints WHERE size >= ?1 ORDER BY size LIMIT ?2",
    )?
    .query_map(params![from, limit], checkpoint_row)?
    .map(|row| row.and_then(checkpoint_of))
    .collect()
}

/// Up to `limit` leaves from `start` on, with their hashes, in order.
pub fn leaves_from(
    conn: &Connection,
    start: u64,
    limit: u64,
) -> sql::Result<Vec<(u64, Hash, Vec<u8>)>> {
    conn.prepare_cached(
        "SELECT idx, hash, leaf FROM log_leaves WHERE idx >= ?1 ORDER BY idx LIMIT ?2",
    )?
    .query_map(params![start, limit], |row| {
        Ok((
            row.get::<_, u64>(0)?,
            row.get::<_, Vec<u8>>(1)?,
            row.get(2)?,
        ))
    })?
    .map(|row| {
        let (idx, hash, leaf) = row?;
        Ok((idx, hash_of(hash)?, leaf))
    })
    .collect()
}

/// Every stored tile entry of levels 1 and up, by level and index.
pub fn nodes(conn: &Connection) -> sql::Result<Vec<(u8, u64, Hash)>> {
    conn.prepare_cached("SELECT level, idx, hash FROM log_nodes ORDER BY level, idx")?
        .query_map([], |row| {
            Ok((
                row.get::<_, u8>(0)?,
                row.get::<_, u64>(1)?,
                row.get::<_, Vec<u8>>(2)?,
            ))
        })?
        .map(|row| {
            let (level, idx, hash) = row?;
            Ok((level, idx, hash_of(hash)?))
        })
        .collect()
}

/// A cosignature gathered from a witness of `[log] witnesses`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredCosignature {
    /// The size of the checkpoint it cosigns.
    pub size: u64,
    /// The witness's key name and id.
    pub name: String,
    pub key_id: u32,
    /// When the witness cosigned, POSIX seconds (the signature's own).
    pub timestamp: u64,
    /// The signature line, without its newline.
    pub line: String,
}

/// The tree size the witness `(name, key_id)` last cosigned, as its
/// answers told the submitter; `None` before its first answer.
pub fn witness_size(conn: &Connection, name: &str, key_id: u32) -> sql::Result<Option<u64>> {
    conn.prepare_cached("SELECT size FROM log_witnesses WHERE name = ?1 AND key_id = ?2")?
        .query_row(params![name, i64::from(key_id)], |row| row.get(0))
        .optional()
}

/// When the witness `(name, key_id)` last cosigned the checkpoint of
/// `size`, POSIX seconds (its cosignature's own), if it did.
pub fn cosigned_at(
    conn: &Connection,
    size: u64,
    name: &str,
    key_id: u32,
) -> sql::Result<Option<u64>> {
    conn.prepare_cached(
        "SELECT timestamp FROM log_cosignatures WHERE size = ?1 AND name = ?2 AND key_id = ?3",
    )?
    .query_row(params![size, name, i64::from(key_id)], |row| row.get(0))
    .optional()
}

/// Remembers that the witness `(name, key_id)` is at `size`.
pub fn save_witness_size(
    conn: &Connection,
    name: &str,
    key_id: u32,
    size: u64,
    at_ms: i64,
) -> sql::Result<()> {
    conn.prepare_cached(
        "INSERT INTO log_witnesses (name, key_id, size, updated_at) VALUES (?1, ?2, ?3, ?4)
         ON CONFLICT (name, key_id) DO UPDATE SET size = excluded.size, updated_at = excluded.updated_at",
    )?
    .execute(params![name, i64::from(key_id), size, at_ms])?;
    Ok(())
}

/// Stores a cosignature: of a size the witness cosigned before, a newer
/// one replaces the older (a refresh, see `[log]
/// cosignature_refresh_seconds`), an older one is ignored.
pub fn insert_cosignature(conn: &Connection, cosignature: &StoredCosignature) -> sql::Result<()> {
    conn.prepare_cached(
        "INSERT INTO log_cosignatures (size, name, key_id, timestamp, line)
         VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT (size, name, key_id)
         DO UPDATE SET timestamp = excluded.timestamp, line = excluded.line
         WHERE excluded.timestamp > log_cosignatures.timestamp",
    )?
    .execute(params![
        cosignature.size,
        cosignature.name,
        i64::from(cosignature.key_id),
        cosignature.timestamp,
        cosignature.line
    ])?;
    Ok(())
}

/// The cosignatures gathered for the checkpoint of `size`, by witness name.
pub fn cosignatures(conn: &Connection, size: u64) -> sql::Result<Vec<StoredCosignature>> {
    conn.prepare_cached(
        "SELECT name, key_id, timestamp, line FROM log_cosignatures WHERE size = ?1
         ORDER BY name, key_id",
    )?
    .query_map(params![size], |row| {
        Ok((
            row.get::<_, String>(0)?,
            row.get::<_, i64>(1)?,
            row.get::<_, u64>(2)?,
            row.get::<_, String>(3)?,
        ))
    })?
    .map(|row| {
        let (name, key_id, timestamp, line) = row?;
        let key_id = u32::try_from(key_id)
            .map_err(|_| sql::Error::corrupt("a cosignature's key id", "not 32 bits"))?;
        Ok(StoredCosignature {
            size,
            name,
            key_id,
            timestamp,
            line,
        })
    })
    .collect()
}

/// Leases the submitter to the host `owner` until `until_ms`, unless
/// another host holds it past `now_ms`; answers whether `owner` holds it.
pub fn claim_submitter(
    conn: &Connection,
    owner: &str,
    now_ms: i64,
    until_ms: i64,
) -> sql::Result<bool> {
    let changed = conn
        .prepare_cached(
            "INSERT INTO log_submitter (id, owner, until_ms) VALUES (1, ?1, ?3)
             ON CONFLICT (id) DO UPDATE SET owner = excluded.owner, until_ms = excluded.until_ms
             WHERE log_submitter.owner = excluded.owner OR log_submitter.until_ms <= ?2",
        )?
        .execute(params![owner, now_ms, until_ms])?;
    Ok(changed == 1)
}

/// Ends the submitter's lease held by `owner`, or by anyone (`None`: a
/// process that alone submits, at its start).
pub fn release_submitter(conn: &Connection, owner: Option<&str>) -> sql::Result<usize> {
    match owner {
        Some(owner) => conn
            .prepare_cached("DELETE FROM log_submitter WHERE owner = ?1")?
            .execute([owner]),
        None => conn
            .prepare_cached("DELETE FROM log_submitter")?
            .execute([]),
    }
}

/// Up to `limit` checkpoint sizes with at least `threshold` cosignatures
/// stored, largest first.
pub fn cosigned_sizes(conn: &Connection, threshold: usize, limit: u64) -> sql::Result<Vec<u64>> {
    let threshold = i64::try_from(threshold).unwrap_or(i64::MAX);
    conn.prepare_cached(
        "SELECT size FROM log_cosignatures GROUP BY size HAVING count(*) >= ?1
         ORDER BY size DESC LIMIT ?2",
    )?
    .query_map(params![threshold, limit], |row| row.get(0))?
    .collect()
}

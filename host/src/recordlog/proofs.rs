//! The log's read side: the latest checkpoint, a record's events with their
//! inclusion proofs (C2SP `tlog-proof@v1`), consistency proofs between two
//! sizes, and tiles (C2SP `tlog-tiles`) — all from the tables, on the
//! read lanes, proven against the newest checkpoint, which is committed
//! with the leaves it covers.

use mandate_core::limits::LOG_TILE_WIDTH;
use mandate_core::tlog::{self, Hash, ReadError, TileId, TlogProof, tile_width};

use super::TableTiles;
use crate::queries::{self, QueryError};
use crate::store::StoreError;
use crate::store::log::{self as rows, StoredCheckpoint};
use crate::store::orgs::Org;
use crate::store::sql::{self, Connection};

fn internal(cause: impl std::fmt::Display) -> QueryError {
    QueryError::Store(StoreError::Internal(cause.to_string()))
}

fn read_error(error: ReadError<sql::Error>) -> QueryError {
    match error {
        ReadError::Reader(error) => QueryError::Store(error.into()),
        ReadError::Log(error) => internal(format!("the stored log breaks a rule: {error}")),
    }
}

/// The newest checkpoint (there is always one: the first start signs the
/// empty tree's).
pub fn latest(conn: &Connection) -> Result<StoredCheckpoint, QueryError> {
    rows::latest_checkpoint(conn)?.ok_or_else(|| internal("the log has no checkpoint"))
}

/// One event of a record in the log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventProof {
    /// `record.created`, `record.completed` or `record.rated`.
    pub kind: &'static str,
    pub index: u64,
    /// The leaf's bytes (its canonical JSON).
    pub leaf: Vec<u8>,
    /// The C2SP `tlog-proof@v1` text against the checkpoint.
    pub proof: String,
}

/// A record's events, each proven against one checkpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordProof {
    pub aar_id: String,
    /// The signed checkpoint every proof leads to, with the cosignatures
    /// gathered for it.
    pub checkpoint: String,
    pub events: Vec<EventProof>,
    /// When that checkpoint is not yet cosigned by enough witnesses: the
    /// newest that is, and the consistency proof from it to the proofs'.
    pub cosigned: Option<(String, Vec<Hash>)>,
}

/// The witnesses a deployment names (key name and id) and how many of
/// them a checkpoint needs.
pub type WitnessSet<'a> = (&'a [(String, u32)], usize);

/// Every event of the record `aar_id` of `org` with its inclusion proof in
/// the newest checkpoint — with `witnesses`, the checkpoint carries the
/// cosignatures gathered, and when they are fewer than the threshold the
/// answer links to the newest checkpoint that has enough (a verifier with
/// a policy checks the link: core's `verify_witnessed_inclusion`). A record
/// of another organisation is unknown; one written while the log was off
/// is [`QueryError::NotInLog`].
pub fn record_proof(
    conn: &Connection,
    org: Org,
    aar_id: &str,
    witnesses: Option<WitnessSet<'_>>,
) -> Result<RecordProof, QueryError> {
    let record = queries::record(conn, org, aar_id)?;
    let mut checkpoint = latest(conn)?;
    let mut cosigned = None;
    if let Some((keys, threshold)) = witnesses {
        let count;
        (checkpoint, count) = with_cosignatures(conn, checkpoint, keys)?;
        if count < threshold
            && let Some(older) = cosigned_checkpoint(conn, keys, threshold)?
            && older.size <= checkpoint.size
        {
            let proof =
                tlog::consistency_proof(&mut TableTiles::new(conn), older.size, checkpoint.size)
                    .map_err(read_error)?;
            cosigned = Some((older.note, proof));
        }
    }
    let mut tiles = TableTiles::new(conn);
    let mut events = Vec::new();
    for (kind, index) in [
        ("record.created", record.log.created),
        ("record.completed", record.log.completed),
        ("record.rated", record.log.rated),
    ] {
        let Some(index) = index else { continue };
        if index >= checkpoint.size {
            return Err(internal(
                "a record's leaf lies beyond the newest checkpoint",
            ));
        }
        let leaf =
            rows::leaf(conn, index)?.ok_or_else(|| internal("a record's leaf is missing"))?;
        let path = tlog::inclusion_proof(&mut tiles, index, checkpoint.size).map_err(read_error)?;
        let proof = TlogProof {
            extra: None,
            index,
            path,
            checkpoint: checkpoint.note.clone(),
        }
        .to_text();
        events.push(EventProof {
            kind,
            index,
            leaf,
            proof,
        });
    }
    if events.is_empty() {
        return Err(QueryError::NotInLog);
    }
    Ok(RecordProof {
        aar_id: record.aar_id,
        checkpoint: checkpoint.note,
        events,
        cosigned,
    })
}

/// The RFC 6962 consistency proof from the tree of `old` leaves to the tree
/// of `new`, both at most the newest checkpoint's size.
pub fn consistency(conn: &Connection, old: u64, new: u64) -> Result<Vec<Hash>, QueryError> {
    if old > new {
        return Err(QueryError::InvalidQuery("old must not be larger than new"));
    }
    let size = latest(conn)?.size;
    if new > size {
        return Err(QueryError::InvalidQuery(
            "new is larger than the newest checkpoint's tree size",
        ));
    }
    tlog::consistency_proof(&mut TableTiles::new(conn), old, new).map_err(read_error)
}

/// A tile's bytes (its hashes, concatenated), if
/// the newest checkpoint's tree has it: a full tile, or a partial one no
/// wider than the tree's.
pub fn tile(conn: &Connection, id: TileId) -> Result<Vec<u8>, QueryError> {
    let size = latest(conn)?.size;
    let available = tile_width(id.level, id.index, size).ok_or(QueryError::UnknownTile)?;
    if id.width > available {
        return Err(QueryError::UnknownTile);
    }
    let width = u64::try_from(LOG_TILE_WIDTH).unwrap_or(256);
    let hashes = rows::tile_hashes(
        conn,
        id.level,
        id.index.saturating_mul(width),
        u64::from(id.width),
    )?;
    if hashes.len() != usize::from(id.width) {
        return Err(internal("a tile's hashes are missing"));
    }
    Ok(hashes.concat())
}

/// `checkpoint` with the cosignatures stored for its size by the
/// witnesses `witnesses` (key name and id) appended, one signature line
/// each (C2SP signed-note: a cosignature is one more signature line).
pub fn with_cosignatures(
    conn: &Connection,
    mut checkpoint: StoredCheckpoint,
    witnesses: &[(String, u32)],
) -> Result<(StoredCheckpoint, usize), QueryError> {
    let mut count = 0;
    for cosignature in rows::cosignatures(conn, checkpoint.size)? {
        if witnesses
            .iter()
            .any(|(name, id)| *name == cosignature.name && *id == cosignature.key_id)
        {
            checkpoint.note.push_str(&cosignature.line);
            checkpoint.note.push('\n');
            count += 1;
        }
    }
    Ok((checkpoint, count))
}

/// How many cosigned sizes [`witnessed`] looks through for one cosigned
/// by enough of the configured witnesses.
const COSIGNED_LOOKBACK: u64 = 16;

/// The newest checkpoint cosigned by at least `threshold` of `witnesses`,
/// with their cosignatures, if one of the last cosigned sizes is.
pub fn cosigned_checkpoint(
    conn: &Connection,
    witnesses: &[(String, u32)],
    threshold: usize,
) -> Result<Option<StoredCheckpoint>, QueryError> {
    for size in rows::cosigned_sizes(conn, threshold, COSIGNED_LOOKBACK)? {
        let Some(checkpoint) = rows::checkpoints_from(conn, size, 1)?
            .into_iter()
            .find(|c| c.size == size)
        else {
            continue;
        };
        let (checkpoint, count) = with_cosignatures(conn, checkpoint, witnesses)?;
        if count >= threshold {
            return Ok(Some(checkpoint));
        }
    }
    Ok(None)
}

/// The newest checkpoint cosigned by at least `threshold` of `witnesses`,
/// with their cosignatures; else the newest checkpoint with whatever
/// cosignatures it has.
pub fn witnessed(
    conn: &Connection,
    witnesses: &[(String, u32)],
    threshold: usize,
) -> Result<StoredCheckpoint, QueryError> {
    match cosigned_checkpoint(conn, witnesses, threshold)? {
        Some(checkpoint) => Ok(checkpoint),
        None => Ok(with_cosignatures(conn, latest(conn)?, witnesses)?.0),
    }
}

//! The `events` table, the outbox: one row per event, written in the
//! transaction of the write it reports, with its payload exactly as it is
//! delivered. Webhook deliveries and `GET /v1/events` read it after a
//! `seq`; `seq` grows in commit order (a group numbers its events in its
//! tail, holding the ledger's state row to its commit, see
//! `crate::store::log::SEQUENCE`; SQLite's one writer numbers as it goes).

use super::orgs::Org;
use crate::store::sql::types::Value;
use crate::store::sql::{self, Connection, OptionalExtension, Row, params};

/// A stored event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredEvent {
    pub seq: i64,
    /// The message id, `msg_<ulid>`: `webhook-id` and the SSE `id`.
    pub id: String,
    pub org: Org,
    /// The event type, `record.denied` …
    pub kind: String,
    /// Unix milliseconds.
    pub created_at: i64,
    /// The payload as delivered: `{"data":…,"timestamp":…,"type":…}`.
    pub payload: Vec<u8>,
}

const COLUMNS: &str = "seq, id, org, type, created_at, payload";

fn from_row(row: &Row<'_>) -> sql::Result<StoredEvent> {
    Ok(StoredEvent {
        seq: row.get(0)?,
        id: row.get(1)?,
        org: row.get(2)?,
        kind: row.get(3)?,
        created_at: row.get(4)?,
        payload: row.get(5)?,
    })
}

/// The columns of a stored event, in the order of [`row`]'s values: events
/// a group writes are stored together through
/// [`Connection::insert_rows`].
pub const INSERT_INTO: &str = "events (seq, id, org, type, created_at, payload)";

/// The types of [`INSERT_INTO`]'s columns.
pub const INSERTED: [sql::Column; 6] = {
    use sql::Column::{Blob as B, Integer as I, Text as T};
    [I, T, I, T, I, B]
};

/// An event's row for [`INSERT_INTO`] and [`INSERTED`].
pub fn row(event: StoredEvent) -> Vec<Value> {
    vec![
        Value::Integer(event.seq),
        Value::Text(event.id),
        Value::Integer(event.org.number()),
        Value::Text(event.kind),
        Value::Integer(event.created_at),
        Value::Blob(event.payload),
    ]
}

/// Up to `limit` events of `org` after `seq`, in order.
pub fn after(conn: &Connection, org: Org, seq: i64, limit: u32) -> sql::Result<Vec<StoredEvent>> {
    conn.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM events WHERE org = ?1 AND seq > ?2 ORDER BY seq LIMIT ?3"
    ))?
    .query_map(params![org, seq, limit], from_row)?
    .collect()
}

/// The `seq` of the event of `org` with this id, if it is still kept.
pub fn seq_of(conn: &Connection, org: Org, id: &str) -> sql::Result<Option<i64>> {
    conn.prepare_cached("SELECT seq FROM events WHERE id = ?1 AND org = ?2")?
        .query_row(params![id, org], |row| row.get(0))
        .optional()
}

/// The `seq` of the newest event (0 when there is none).
pub fn last_seq(conn: &Connection) -> sql::Result<i64> {
    let last: Option<i64> = conn
        .prepare_cached("SELECT max(seq) FROM events")?
        .query_row([], |row| row.get(0))?;
    Ok(last.unwrap_or(0))
}

/// Deletes events created before `before_ms` that every webhook of their
/// organisation has been sent (a `seq` at or below each one's `cursor`),
/// at most `limit`; answers how many.
pub fn prune(conn: &Connection, before_ms: i64, limit: u32) -> sql::Result<usize> {
    conn.prepare_cached(
        "DELETE FROM events WHERE seq IN (
            SELECT seq FROM events e
            WHERE created_at < ?1
              AND seq <= COALESCE((SELECT min(cursor) FROM webhooks w WHERE w.org = e.org), seq)
            ORDER BY seq LIMIT ?2)",
    )?
    .execute(params![before_ms, limit])
}

//! The `status_lists` table: each token status list's bytes (one bit per
//! token, as core's `StatusList` lays them out), by list number, with a
//! revision that grows with every change (the served list's `ETag`). A list
//! no token has been revoked in has no row: all its bits are 0.

use crate::store::sql::{self, Connection, OptionalExtension, params};

/// A stored list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredList {
    pub bytes: Vec<u8>,
    pub revision: u64,
}

/// Takes the lock of list `list` to the end of the transaction
/// (PostgreSQL; SQLite's one writer needs none): a group reads a list,
/// changes it in memory and writes it whole.
pub fn lock(conn: &Connection, list: u64) -> sql::Result<()> {
    if conn.dialect() == sql::Dialect::Postgres {
        let key = i64::try_from(list)
            .ok()
            .and_then(|list| super::database::STATUS_LIST_LOCKS.checked_add(list))
            .ok_or_else(|| sql::Error::corrupt("a status list number", "too large"))?;
        conn.execute("SELECT pg_advisory_xact_lock(?1)", params![key])?;
    }
    Ok(())
}

/// List `list`, if a token of it was ever revoked.
pub fn get(conn: &Connection, list: u64) -> sql::Result<Option<StoredList>> {
    conn.prepare_cached("SELECT bits, revision FROM status_lists WHERE list = ?1")?
        .query_row([list], |row| {
            Ok(StoredList {
                bytes: row.get(0)?,
                revision: row.get(1)?,
            })
        })
        .optional()
}

/// Stores list `list` with its next revision.
pub fn put(conn: &Connection, list: u64, stored: &StoredList, at_ms: i64) -> sql::Result<()> {
    conn.prepare_cached(
        "INSERT INTO status_lists (list, bits, revision, updated_at) VALUES (?1, ?2, ?3, ?4)
         ON CONFLICT (list) DO UPDATE SET bits = excluded.bits, revision = excluded.revision,
             updated_at = excluded.updated_at",
    )?
    .execute(params![list, stored.bytes, stored.revision, at_ms])?;
    Ok(())
}

//! The `idempotency` table: answers stored under an `Idempotency-Key`,
//! within an organisation and a scope (the route and the credential that
//! sent the key), with the SHA-256 of the request body they answered.

use crate::store::sql::types::Value;
use crate::store::sql::{self, Connection, OptionalExtension, Row, params};

use super::orgs::Org;

/// An answer as stored and replayed: an HTTP status and its body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredReply {
    pub status: u16,
    pub body: Vec<u8>,
}

/// A stored answer and the digest of the request it answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stored {
    pub request_sha256: Vec<u8>,
    pub reply: StoredReply,
}

/// The statement finding the answer stored under a key: `?1` the
/// organisation, `?2` the scope, `?3` the key, `?4` the earliest time kept
/// (answers at or before it are forgotten); read by [`stored_row`].
pub const FIND: &str = "SELECT request_hash, status, body FROM idempotency
     WHERE org = ?1 AND scope = ?2 AND key = ?3 AND created_at > ?4";

/// The answer stored under `key` in `org` and `scope` after `since_ms`.
pub fn find(
    conn: &Connection,
    org: Org,
    scope: &str,
    key: &str,
    since_ms: i64,
) -> sql::Result<Option<Stored>> {
    conn.prepare_cached(FIND)?
        .query_row(params![org, scope, key, since_ms], stored_row)
        .optional()
}

/// A row of [`FIND`].
pub fn stored_row(row: &Row<'_>) -> sql::Result<Stored> {
    Ok(Stored {
        request_sha256: row.get(0)?,
        reply: StoredReply {
            status: row.get(1)?,
            body: row.get(2)?,
        },
    })
}

/// The columns of [`store_all`]'s rows.
pub const STORED: [sql::Column; 7] = {
    use sql::Column::{Blob as B, Integer as I, Text as T};
    [I, T, T, B, I, B, I]
};

/// The answer to a request under `key` in `org` and `scope`, given at
/// `at_ms`, as a row of [`store_all`].
pub fn stored(
    org: Org,
    scope: &str,
    key: &str,
    request_sha256: &[u8; 32],
    reply: &StoredReply,
    at_ms: i64,
) -> Vec<Value> {
    vec![
        Value::Integer(org.number()),
        Value::Text(scope.to_owned()),
        Value::Text(key.to_owned()),
        Value::Blob(request_sha256.to_vec()),
        Value::Integer(i64::from(reply.status)),
        Value::Blob(reply.body.clone()),
        Value::Integer(at_ms),
    ]
}

/// The part of a group's statement ([`sql::Connection::apply_tables`])
/// storing answers ([`stored`] rows, one per key: `ON CONFLICT` refuses
/// one key twice in a statement), each replacing an expired one.
pub fn store_all(rows: &[Vec<Value>]) -> sql::RowsFor<'_> {
    sql::RowsFor {
        sqlite: "INSERT INTO idempotency (org, scope, key, request_hash, status, body, created_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
         ON CONFLICT (org, scope, key) DO UPDATE SET request_hash = excluded.request_hash,
             status = excluded.status, body = excluded.body, created_at = excluded.created_at",
        postgres:
            "INSERT INTO idempotency (org, scope, key, request_hash, status, body, created_at)
         SELECT * FROM unnest($1::bigint[], $2::text[], $3::text[], $4::bytea[], $5::bigint[],
             $6::bytea[], $7::bigint[])
         ON CONFLICT (org, scope, key) DO UPDATE SET request_hash = excluded.request_hash,
             status = excluded.status, body = excluded.body, created_at = excluded.created_at",
        columns: &STORED,
        rows,
    }
}

/// Deletes the answers stored before `before_ms`; returns how many.
pub fn forget_before(conn: &Connection, before_ms: i64) -> sql::Result<usize> {
    conn.prepare_cached("DELETE FROM idempotency WHERE created_at <= ?1")?
        .execute([before_ms])
}

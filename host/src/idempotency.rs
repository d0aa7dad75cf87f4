//! `Idempotency-Key`: a retried write returns the response of the first
//! attempt and changes nothing. The key is scoped to the route and the
//! credential (API key or token) that sent it; the stored entry remembers a
//! SHA-256 of the request body, so the same key with another body is refused
//! (422). The check, the write and the stored response share one savepoint
//! of the writer's transaction, so two concurrent retries cannot both act.
//! Entries are kept for 24 hours.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use rusqlite::{Connection, OptionalExtension, params};

use crate::clock::now_ms;
use crate::error::{ApiError, ApiResult};

/// The request header.
pub const HEADER: &str = "idempotency-key";
/// Longest key accepted.
pub const MAX_KEY_LEN: usize = 255;
/// How long a key is remembered.
pub const RETENTION_MS: i64 = 24 * 3600 * 1000;

/// A response as stored and replayed: status and body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rendered {
    pub status: StatusCode,
    pub body: Vec<u8>,
}

impl Rendered {
    /// A JSON success body.
    pub fn json(status: StatusCode, value: &impl serde::Serialize) -> ApiResult<Rendered> {
        Ok(Rendered {
            status,
            body: serde_json::to_vec(value).map_err(ApiError::internal)?,
        })
    }

    /// A problem body.
    pub fn problem(error: &ApiError) -> ApiResult<Rendered> {
        Rendered::json(error.status, &error.problem())
    }
}

impl IntoResponse for Rendered {
    fn into_response(self) -> Response {
        let content_type = if self.status.is_success() {
            "application/json"
        } else {
            "application/problem+json"
        };
        (
            self.status,
            [(axum::http::header::CONTENT_TYPE, content_type)],
            self.body,
        )
            .into_response()
    }
}

/// A key presented with a request, with the digest of the request body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Presented {
    pub key: String,
    pub body_sha256: [u8; 32],
}

impl Presented {
    /// Checks the header's form: 1 to 255 printable ASCII characters.
    pub fn parse(key: &str, body_sha256: [u8; 32]) -> ApiResult<Presented> {
        let valid = !key.is_empty()
            && key.len() <= MAX_KEY_LEN
            && key.bytes().all(|b| b.is_ascii_graphic());
        if !valid {
            return Err(ApiError::bad_request(
                "invalid_idempotency_key",
                "Idempotency-Key must be 1 to 255 printable ASCII characters",
            ));
        }
        Ok(Presented {
            key: key.to_owned(),
            body_sha256,
        })
    }

    /// The key within a route and a credential.
    pub fn scoped(self, route: &str, credential: &str) -> Scoped {
        Scoped {
            scope: format!("{route} {credential}"),
            presented: self,
        }
    }
}

/// A key bound to its route and credential.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scoped {
    scope: String,
    presented: Presented,
}

/// What came of an idempotent write.
#[derive(Debug)]
pub enum Reply<T> {
    /// The write ran now.
    Fresh(T),
    /// An earlier attempt's response.
    Replayed(Rendered),
}

/// Runs `write` once per key: replays a stored response for a repeated key
/// with the same body, refuses it with another body, else writes and stores
/// what `render` makes of the outcome. Without a key, just writes.
pub fn run<T>(
    conn: &Connection,
    key: Option<&Scoped>,
    write: impl FnOnce(&Connection) -> ApiResult<T>,
    render: impl FnOnce(&T) -> ApiResult<Rendered>,
) -> ApiResult<Reply<T>> {
    let Some(key) = key else {
        return write(conn).map(Reply::Fresh);
    };
    let now = now_ms();
    let stored: Option<(Vec<u8>, u16, Vec<u8>)> = conn
        .prepare_cached(
            "SELECT request_hash, status, body FROM idempotency WHERE scope = ?1 AND key = ?2 AND created_at > ?3",
        )?
        .query_row(params![key.scope, key.presented.key, now - RETENTION_MS], |row| {
            Ok((row.get(0)?, row.get(1)?, row.get(2)?))
        })
        .optional()?;
    if let Some((hash, status, body)) = stored {
        if hash != key.presented.body_sha256 {
            return Err(ApiError::invalid(
                "Idempotency-Key",
                "idempotency_key_reused",
                "this Idempotency-Key was used with another request body",
            ));
        }
        let status = StatusCode::from_u16(status).map_err(ApiError::internal)?;
        return Ok(Reply::Replayed(Rendered { status, body }));
    }
    let outcome = write(conn)?;
    let rendered = render(&outcome)?;
    conn.prepare_cached(
        "INSERT OR REPLACE INTO idempotency (scope, key, request_hash, status, body, created_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
    )?
    .execute(params![
        key.scope,
        key.presented.key,
        key.presented.body_sha256.as_slice(),
        rendered.status.as_u16(),
        rendered.body,
        now,
    ])?;
    Ok(Reply::Fresh(outcome))
}

/// Forgets keys older than the retention period.
pub fn forget_expired(conn: &Connection) -> ApiResult<usize> {
    Ok(conn
        .prepare_cached("DELETE FROM idempotency WHERE created_at <= ?1")?
        .execute([now_ms() - RETENTION_MS])?)
}

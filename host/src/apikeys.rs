//! API keys: `mk_` and 43 base64url characters (256 random bits). Only their
//! SHA-256 is stored — the keys are random enough that a plain hash cannot be
//! reversed — so a stolen database holds no usable key.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use rusqlite::{Connection, OptionalExtension, params};
use sha2::{Digest as _, Sha256};

use crate::clock::Now;

/// Every API key starts with this.
pub const PREFIX: &str = "mk_";
const ENCODED_LEN: usize = 43;

/// Who an API key belongs to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Principal {
    pub id: String,
    /// The developer the key was made for; `None` for the admin key.
    pub email: Option<String>,
    pub is_admin: bool,
}

/// A key as listed for operators (never the key itself).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyInfo {
    pub id: String,
    pub email: Option<String>,
    pub is_admin: bool,
    pub created_at: i64,
    pub revoked_at: Option<i64>,
}

fn hash(key: &str) -> [u8; 32] {
    Sha256::digest(key.as_bytes()).into()
}

/// Whether `text` has the form of an API key (not whether it is valid).
pub fn looks_like_key(text: &str) -> bool {
    text.strip_prefix(PREFIX).is_some_and(|rest| {
        rest.len() == ENCODED_LEN
            && rest
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    })
}

/// Creates a key; returns its id and the key, which is shown once.
pub fn create(
    conn: &Connection,
    email: Option<&str>,
    is_admin: bool,
    now: Now,
) -> rusqlite::Result<(String, String)> {
    let key = format!(
        "{PREFIX}{}",
        URL_SAFE_NO_PAD.encode(crate::random::bytes::<32>())
    );
    let id = format!("key_{}", crate::random::ulid(now));
    conn.execute(
        "INSERT INTO api_keys (id, hash, email, is_admin, created_at) VALUES (?1, ?2, ?3, ?4, ?5)",
        params![id, hash(&key).as_slice(), email, is_admin, now.s()],
    )?;
    Ok((id, key))
}

/// Every key, newest first.
pub fn list(conn: &Connection) -> rusqlite::Result<Vec<KeyInfo>> {
    let mut statement = conn.prepare(
        "SELECT id, email, is_admin, created_at, revoked_at FROM api_keys ORDER BY created_at DESC, id DESC",
    )?;
    let rows = statement.query_map([], |row| {
        Ok(KeyInfo {
            id: row.get(0)?,
            email: row.get(1)?,
            is_admin: row.get(2)?,
            created_at: row.get(3)?,
            revoked_at: row.get(4)?,
        })
    })?;
    rows.collect()
}

/// Revokes a key by id; `false` if no active key has it.
pub fn revoke(conn: &Connection, id: &str, now: Now) -> rusqlite::Result<bool> {
    let changed = conn.execute(
        "UPDATE api_keys SET revoked_at = ?1 WHERE id = ?2 AND revoked_at IS NULL",
        params![now.s(), id],
    )?;
    Ok(changed == 1)
}

/// The active key matching a presented key, if any.
pub fn lookup(conn: &Connection, presented: &str) -> rusqlite::Result<Option<Principal>> {
    if !looks_like_key(presented) {
        return Ok(None);
    }
    conn.prepare_cached(
        "SELECT id, email, is_admin FROM api_keys WHERE hash = ?1 AND revoked_at IS NULL",
    )?
    .query_row([hash(presented).as_slice()], |row| {
        Ok(Principal {
            id: row.get(0)?,
            email: row.get(1)?,
            is_admin: row.get(2)?,
        })
    })
    .optional()
}

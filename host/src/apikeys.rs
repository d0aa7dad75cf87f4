//! API keys: `mk_` and 43 base64url characters (256 random bits). Only their
//! SHA-256 is stored — the keys are random enough that a plain hash cannot
//! be reversed — so a stolen database holds no usable key. Each key belongs
//! to one organisation and has a role in it (core's permission table).

use crate::store::sql::{self, Connection, OptionalExtension, Row, params};
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use mandate_core::{KeyId, Permission, Role};
use sha2::{Digest as _, Sha256};

use crate::clock::Now;
use crate::store::orgs::Org;

/// Every API key starts with this.
pub const PREFIX: &str = "mk_";
const ENCODED_LEN: usize = 43;

/// Who an API key belongs to: an organisation, with a role in it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Principal {
    pub id: String,
    /// The person the key was made for; `None` for the admin key and for
    /// keys made without one.
    pub email: Option<String>,
    pub org: Org,
    pub role: Role,
    /// The deployment's admin key: the owner of `default` that also
    /// manages organisations.
    pub is_admin: bool,
}

impl Principal {
    /// Whether the key's role holds `permission`.
    pub fn may(&self, permission: Permission) -> bool {
        self.role.allows(permission)
    }
}

/// A key as listed for owners and operators (never the key itself).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyInfo {
    pub id: String,
    pub email: Option<String>,
    pub org: Org,
    pub role: Role,
    pub is_admin: bool,
    /// Unix seconds.
    pub created_at: i64,
    /// Unix seconds.
    pub revoked_at: Option<i64>,
}

/// A key about to be made.
#[derive(Debug, Clone, Copy)]
pub struct NewKey<'a> {
    pub org: Org,
    pub role: Role,
    pub email: Option<&'a str>,
    pub is_admin: bool,
}

/// The SHA-256 of a key: what the database stores and look-ups find.
pub fn hash(key: &str) -> [u8; 32] {
    Sha256::digest(key.as_bytes()).into()
}

/// Whether `text` was meant as an API key: it starts as every key does
/// (a token never does), whatever follows. A call that takes a key or a
/// token reads such a credential as a key, so a mistyped key is told it
/// was not accepted rather than judged as a token.
pub fn meant_as_key(text: &str) -> bool {
    text.starts_with(PREFIX)
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

fn stored_role(row: &Row<'_>, column: usize) -> sql::Result<Role> {
    let text: String = row.get(column)?;
    text.parse()
        .map_err(|e| sql::Error::corrupt(format_args!("api_keys column {column}"), e))
}

/// Creates a key; returns it as listed and the key, which is shown once.
pub fn create(conn: &Connection, new: NewKey<'_>, now: Now) -> sql::Result<(KeyInfo, String)> {
    let key = format!(
        "{PREFIX}{}",
        URL_SAFE_NO_PAD.encode(crate::random::bytes::<32>())
    );
    let id = KeyId::new(crate::random::ulid(now)).to_string();
    conn.execute(
        "INSERT INTO api_keys (id, hash, email, is_admin, created_at, org, role)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
        params![
            id,
            hash(&key).as_slice(),
            new.email,
            new.is_admin,
            now.s(),
            new.org,
            new.role.as_str()
        ],
    )?;
    let info = KeyInfo {
        id,
        email: new.email.map(str::to_owned),
        org: new.org,
        role: new.role,
        is_admin: new.is_admin,
        created_at: now.s(),
        revoked_at: None,
    };
    Ok((info, key))
}

const KEY_COLUMNS: &str = "id, email, org, role, is_admin, created_at, revoked_at";

fn key_info(row: &Row<'_>) -> sql::Result<KeyInfo> {
    Ok(KeyInfo {
        id: row.get(0)?,
        email: row.get(1)?,
        org: row.get(2)?,
        role: stored_role(row, 3)?,
        is_admin: row.get(4)?,
        created_at: row.get(5)?,
        revoked_at: row.get(6)?,
    })
}

/// The keys of an organisation, or of every organisation with `None`,
/// newest first.
pub fn list(conn: &Connection, org: Option<Org>) -> sql::Result<Vec<KeyInfo>> {
    let mut statement = conn.prepare_cached(&format!(
        "SELECT {KEY_COLUMNS} FROM api_keys WHERE CAST(?1 AS BIGINT) IS NULL OR org = ?1
         ORDER BY created_at DESC, id DESC"
    ))?;
    let rows = statement.query_map([org], key_info)?;
    rows.collect()
}

/// Why a key was not revoked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NotRevoked {
    /// No key of the organisation has the id.
    Unknown,
    /// The admin key is revoked only by its operator, never over the API.
    AdminKey,
    /// The organisation's last active owner: it would lock its keys away.
    LastOwner,
}

/// Revokes a key of `org` by id (again: a revoked key keeps its first
/// revocation time); an operator passes `None` for any organisation and
/// may revoke the admin key.
pub fn revoke(
    conn: &Connection,
    org: Option<Org>,
    id: &str,
    now: Now,
) -> sql::Result<Result<KeyInfo, NotRevoked>> {
    let Some(key) = conn
        .prepare_cached(&format!(
            "SELECT {KEY_COLUMNS} FROM api_keys WHERE id = ?1 AND (CAST(?2 AS BIGINT) IS NULL OR org = ?2)"
        ))?
        .query_row(params![id, org], key_info)
        .optional()?
    else {
        return Ok(Err(NotRevoked::Unknown));
    };
    if key.revoked_at.is_some() {
        return Ok(Ok(key));
    }
    if org.is_some() {
        if key.is_admin {
            return Ok(Err(NotRevoked::AdminKey));
        }
        let owners: i64 = conn.query_row(
            "SELECT count(*) FROM api_keys WHERE org = ?1 AND role = 'owner' AND revoked_at IS NULL",
            [key.org],
            |row| row.get(0),
        )?;
        if key.role == Role::Owner && owners <= 1 {
            return Ok(Err(NotRevoked::LastOwner));
        }
    }
    conn.execute(
        "UPDATE api_keys SET revoked_at = ?1 WHERE id = ?2",
        params![now.s(), id],
    )?;
    Ok(Ok(KeyInfo {
        revoked_at: Some(now.s()),
        ..key
    }))
}

/// The active key whose [`hash`] is `hash`, if any.
pub fn lookup(conn: &Connection, hash: &[u8; 32]) -> sql::Result<Option<Principal>> {
    conn.prepare_cached(
        "SELECT id, email, org, role, is_admin FROM api_keys WHERE hash = ?1 AND revoked_at IS NULL",
    )?
    .query_row([hash.as_slice()], |row| {
        Ok(Principal {
            id: row.get(0)?,
            email: row.get(1)?,
            org: row.get(2)?,
            role: stored_role(row, 3)?,
            is_admin: row.get(4)?,
        })
    })
    .optional()
}

//! Signing keys and the deployment secret.
//!
//! One key signs; keys retired by `mandate signing-key rotate` stay in the
//! published JWKS until every token they signed has expired (`max_exp`). The
//! ring is read from the database at start and refreshed periodically and
//! whenever a token names a kid the ring does not know, so a rotation made by
//! the CLI reaches a running server within seconds.

use std::sync::{Arc, RwLock};

use mandate_core::{JwkSet, Jwks, SigningKey};
use rusqlite::{Connection, params};

use crate::clock::now_s;
use crate::error::{ApiError, ApiResult};

/// The `meta` key of the human-reference secret.
pub const SECRET_KEY: &str = "human_ref_secret";

/// The keys in force at one moment.
#[derive(Debug)]
pub struct Ring {
    /// The key that signs new tokens.
    pub active: Arc<SigningKey>,
    /// Every published key, for verification.
    pub jwks: Jwks,
    /// The published JWKS document.
    pub document: JwkSet,
}

/// The current ring, swapped whole on refresh.
#[derive(Debug)]
pub struct KeyRing {
    current: RwLock<Arc<Ring>>,
}

fn secret_array(bytes: &[u8]) -> ApiResult<[u8; 32]> {
    bytes
        .try_into()
        .map_err(|_| ApiError::internal("a stored secret is not 32 bytes"))
}

/// Reads the ring from the database.
pub fn load(conn: &Connection) -> ApiResult<Ring> {
    let now = now_s();
    let mut statement = conn.prepare_cached(
        "SELECT kid, secret, retired_at IS NULL FROM signing_keys
         WHERE retired_at IS NULL OR max_exp > ?1 ORDER BY created_at DESC",
    )?;
    let rows = statement.query_map(params![now], |row| {
        Ok((
            row.get::<_, String>(0)?,
            row.get::<_, Vec<u8>>(1)?,
            row.get::<_, bool>(2)?,
        ))
    })?;
    let mut keys = Vec::new();
    let mut active = None;
    for row in rows {
        let (kid, secret, is_active) = row?;
        let key = Arc::new(SigningKey::from_secret(&secret_array(&secret)?));
        if key.kid() != kid {
            return Err(ApiError::internal(
                "a stored signing key does not match its kid",
            ));
        }
        if is_active && active.is_none() {
            active = Some(key.clone());
        }
        keys.push(key);
    }
    let active = active.ok_or_else(|| ApiError::internal("no active signing key"))?;
    let jwks = Jwks::from_signing_keys(keys.iter().map(Arc::as_ref));
    let document = jwks.to_jwk_set();
    Ok(Ring {
        active,
        jwks,
        document,
    })
}

impl KeyRing {
    /// A ring with its first state.
    pub fn new(ring: Ring) -> KeyRing {
        KeyRing {
            current: RwLock::new(Arc::new(ring)),
        }
    }

    /// The ring in force.
    pub fn current(&self) -> Arc<Ring> {
        match self.current.read() {
            Ok(ring) => ring.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    /// Replaces the ring.
    pub fn replace(&self, ring: Ring) {
        match self.current.write() {
            Ok(mut slot) => *slot = Arc::new(ring),
            Err(poisoned) => *poisoned.into_inner() = Arc::new(ring),
        }
    }
}

/// Creates a new signing key and makes it the active one; the previous key,
/// if any, is retired but stays published while tokens it signed are alive.
/// Returns the new kid. Run it inside a transaction.
pub fn rotate(conn: &Connection) -> rusqlite::Result<String> {
    let secret: [u8; 32] = crate::random::bytes();
    let kid = SigningKey::from_secret(&secret).kid().to_owned();
    conn.execute(
        "UPDATE signing_keys SET retired_at = ?1 WHERE retired_at IS NULL",
        [now_s()],
    )?;
    conn.execute(
        "INSERT INTO signing_keys (kid, secret, created_at) VALUES (?1, ?2, ?3)",
        params![kid, secret.as_slice(), now_s()],
    )?;
    Ok(kid)
}

//! Signing keys and the deployment secret.
//!
//! Both are stored sealed under the key-encryption key (`secrets`); this
//! module opens a signing key as it loads it and seals one as it makes it.
//!
//! One key signs; keys retired by `mandate signing-key rotate` stay in the
//! published JWKS until every token they signed has expired (`max_exp`). A
//! key revoked by `mandate signing-key revoke` is never loaded again, and
//! every token it signed is revoked with it. The
//! ring is read from the database at start and refreshed periodically and
//! when a token names a kid the ring does not know (at most once per
//! [`UNKNOWN_KID_REFRESH_INTERVAL`], so forged kids cannot make every request
//! a database read), and a rotation made by the CLI reaches a running server
//! within seconds.

use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use crate::store::sql::{Connection, OptionalExtension, params};
use mandate_core::{JwkSet, Jwks, SigningKey};

use crate::clock::Now;
use crate::secrets::{Kek, Purpose};
use crate::store::StoreError;

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

/// The least time between two re-reads of the keys prompted by tokens that
/// name an unknown kid.
pub const UNKNOWN_KID_REFRESH_INTERVAL: Duration = Duration::from_secs(1);

/// The current ring, swapped whole on refresh.
#[derive(Debug)]
pub struct KeyRing {
    current: RwLock<Arc<Ring>>,
    /// When an unknown kid last let a re-read through.
    last_unknown_kid_refresh: Mutex<Option<Instant>>,
}

/// Reads the ring from the database at `now`, opening each key with `kek`.
pub fn load(conn: &Connection, kek: &Kek, now: Now) -> Result<Ring, StoreError> {
    let now = now.s();
    let mut statement = conn.prepare_cached(
        "SELECT kid, secret, retired_at IS NULL FROM signing_keys
         WHERE revoked_at IS NULL AND (retired_at IS NULL OR max_exp > ?1)
         ORDER BY created_at DESC",
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
        let (kid, sealed, is_active) = row?;
        let secret = kek.open(Purpose::SigningKey, &kid, &sealed).map_err(|e| {
            StoreError::Internal(format!("the signing key {kid} cannot be opened: {e}"))
        })?;
        let key = Arc::new(SigningKey::from_secret(&secret));
        if key.kid() != kid {
            return Err(StoreError::Internal(
                "a stored signing key does not match its kid".to_owned(),
            ));
        }
        if is_active && active.is_none() {
            active = Some(key.clone());
        }
        keys.push(key);
    }
    let active = active.ok_or_else(|| StoreError::Internal("no active signing key".to_owned()))?;
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
            last_unknown_kid_refresh: Mutex::new(None),
        }
    }

    /// Whether a token naming an unknown kid at `now` may make the server
    /// re-read its keys: yes once per [`UNKNOWN_KID_REFRESH_INTERVAL`], and
    /// a yes starts the next interval. An instant before the last yes (a
    /// caller that read the clock earlier) is a no.
    pub fn may_refresh_for_unknown_kid(&self, now: Instant) -> bool {
        let mut last = match self.last_unknown_kid_refresh.lock() {
            Ok(last) => last,
            Err(poisoned) => poisoned.into_inner(),
        };
        let due = last.is_none_or(|previous| {
            now.checked_duration_since(previous)
                .is_some_and(|since| since >= UNKNOWN_KID_REFRESH_INTERVAL)
        });
        if due {
            *last = Some(now);
        }
        due
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

/// Creates a new signing key, sealed under `kek`, and makes it the active
/// one; the previous key, if any, is retired but stays published while
/// tokens it signed are alive. Returns the new kid. Run it inside a
/// transaction.
pub fn rotate(conn: &Connection, kek: &Kek, now: Now) -> Result<String, StoreError> {
    let secret: [u8; 32] = crate::random::bytes();
    let kid = SigningKey::from_secret(&secret).kid().to_owned();
    let sealed = kek
        .seal(Purpose::SigningKey, &kid, &secret)
        .map_err(|e| StoreError::Internal(e.to_string()))?;
    conn.execute(
        "UPDATE signing_keys SET retired_at = ?1 WHERE retired_at IS NULL",
        [now.s()],
    )?;
    conn.execute(
        "INSERT INTO signing_keys (kid, secret, created_at) VALUES (?1, ?2, ?3)",
        params![kid, sealed, now.s()],
    )?;
    Ok(kid)
}

/// The reason recorded on the tokens revoked with their signing key.
pub const KEY_REVOKED_REASON: &str = "signing key revoked";

/// What revoking a signing key did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyRevocation {
    /// The key that signs from now on, when the revoked key was the active
    /// one.
    pub new_kid: Option<String>,
    /// How many tokens were revoked now: those the key signed and their
    /// descendants, less those already revoked.
    pub tokens_revoked: usize,
    /// Whether the key had been revoked before (revoking again is harmless,
    /// and revokes tokens signed with it since).
    pub already_revoked: bool,
}

/// Revokes a signing key: it is never loaded again (so it leaves the
/// published JWKS at a running server's next refresh). Revoking the active
/// key rotates first, so a new key signs. `None` when no key has this kid.
/// The tokens it signed are the ledger's to revoke
/// (`Ledger::revoke_signing_key`, which calls this); `tokens_revoked` is 0
/// here. Run it inside a transaction.
pub fn revoke_key(
    conn: &Connection,
    kek: &Kek,
    kid: &str,
    now: Now,
) -> Result<Option<KeyRevocation>, StoreError> {
    let state: Option<(bool, bool)> = conn
        .query_row(
            "SELECT retired_at IS NULL, revoked_at IS NOT NULL FROM signing_keys WHERE kid = ?1",
            [kid],
            |row| Ok((row.get(0)?, row.get(1)?)),
        )
        .optional()?;
    let Some((is_active, already_revoked)) = state else {
        return Ok(None);
    };
    let new_kid = if is_active && !already_revoked {
        Some(rotate(conn, kek, now)?)
    } else {
        None
    };
    conn.execute(
        "UPDATE signing_keys SET revoked_at = coalesce(revoked_at, ?1),
             retired_at = coalesce(retired_at, ?1)
         WHERE kid = ?2",
        params![now.s(), kid],
    )?;
    Ok(Some(KeyRevocation {
        new_kid,
        tokens_revoked: 0,
        already_revoked,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ring() -> Ring {
        let key = Arc::new(SigningKey::from_secret(&[1; 32]));
        let jwks = Jwks::from_signing_keys([key.as_ref()]);
        let document = jwks.to_jwk_set();
        Ring {
            active: key,
            jwks,
            document,
        }
    }

    #[test]
    fn unknown_kids_refresh_the_keys_at_most_once_a_second() {
        let keys = KeyRing::new(ring());
        let start = Instant::now();
        let at = |millis| start + Duration::from_millis(millis);
        assert!(keys.may_refresh_for_unknown_kid(at(0)));
        assert!(!keys.may_refresh_for_unknown_kid(at(0)));
        assert!(!keys.may_refresh_for_unknown_kid(at(999)));
        assert!(keys.may_refresh_for_unknown_kid(at(1000)));
        assert!(!keys.may_refresh_for_unknown_kid(at(1500)));
        assert!(
            !keys.may_refresh_for_unknown_kid(at(900)),
            "an instant before the last refresh is not let through"
        );
        assert!(keys.may_refresh_for_unknown_kid(at(2000)));
        assert!(keys.may_refresh_for_unknown_kid(at(60_000)));
    }

    #[test]
    fn a_flood_of_unknown_kids_is_let_through_once_per_interval() {
        let keys = KeyRing::new(ring());
        let start = Instant::now();
        // 10,000 requests spread over 5 seconds: one re-read per second.
        let passed = (0..10_000u64)
            .filter(|n| keys.may_refresh_for_unknown_kid(start + Duration::from_micros(n * 500)))
            .count();
        assert_eq!(passed, 5);
    }
}

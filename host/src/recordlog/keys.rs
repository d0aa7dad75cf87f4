//! The keys that sign the log's checkpoints: Ed25519 keys named after the
//! log's origin (C2SP `signed-note`), stored sealed under the
//! key-encryption key like the token signing keys, each by its verifier
//! key.
//!
//! Every key not retired signs every checkpoint, so a rotation never leaves
//! a monitor that trusts only the older key without a signature it can
//! check: `mandate log-key rotate` adds a key, and `mandate log-key retire`
//! stops the older one once monitors trust the new one. Retired keys stay
//! published (`GET /v1/log/key`): the checkpoints they signed still verify.

use std::sync::{Arc, RwLock};

use mandate_core::tlog::NoteSigner;

use crate::clock::Now;
use crate::secrets::{Kek, Purpose};
use crate::store::StoreError;
use crate::store::sql::{Connection, OptionalExtension, params};

/// The log's keys at one moment.
#[derive(Debug)]
pub struct Signers {
    /// The keys that sign checkpoints, newest first (at least one).
    pub signing: Vec<NoteSigner>,
    /// Every key's verifier key, the signing ones first (newest first),
    /// then the retired ones.
    pub vkeys: Vec<String>,
}

/// The keys in force, swapped whole when they are read again (every few
/// seconds: a rotation by the operator reaches a running server).
#[derive(Debug)]
pub struct LogKeys {
    current: RwLock<Arc<Signers>>,
}

impl LogKeys {
    pub fn new(signers: Signers) -> LogKeys {
        LogKeys {
            current: RwLock::new(Arc::new(signers)),
        }
    }

    /// The keys in force.
    pub fn current(&self) -> Arc<Signers> {
        match self.current.read() {
            Ok(signers) => signers.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    /// Replaces the keys.
    pub fn replace(&self, signers: Signers) {
        match self.current.write() {
            Ok(mut slot) => *slot = Arc::new(signers),
            Err(poisoned) => *poisoned.into_inner() = Arc::new(signers),
        }
    }
}

fn internal(cause: impl std::fmt::Display) -> StoreError {
    StoreError::Internal(cause.to_string())
}

/// Reads the log's keys, named `origin`, opening each with `kek`.
pub fn load(conn: &Connection, kek: &Kek, origin: &str) -> Result<Signers, StoreError> {
    let rows: Vec<(String, Vec<u8>, bool)> = conn
        .prepare_cached(
            "SELECT key_id, secret, retired_at IS NULL FROM log_keys
             ORDER BY retired_at IS NULL DESC, created_at DESC, key_id",
        )?
        .query_map([], |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)))?
        .collect::<Result<_, _>>()?;
    let mut signing = Vec::new();
    let mut vkeys = Vec::new();
    for (vkey, sealed, active) in rows {
        let seed = kek
            .open(Purpose::LogKey, &vkey, &sealed)
            .map_err(|e| internal(format!("the log key {vkey} cannot be opened: {e}")))?;
        let signer = NoteSigner::new(&seed, origin).map_err(internal)?;
        if signer.vkey() != vkey {
            return Err(internal(
                "a stored log key does not match its verifier key (another origin?)",
            ));
        }
        vkeys.push(vkey);
        if active {
            signing.push(signer);
        }
    }
    if signing.is_empty() {
        return Err(internal("no log key signs checkpoints"));
    }
    Ok(Signers { signing, vkeys })
}

/// Makes a new log key named `origin`, sealed under `kek`; it signs every
/// checkpoint from the next one on, beside the keys already signing.
/// Returns its verifier key. Run it inside a transaction.
pub fn rotate(conn: &Connection, kek: &Kek, origin: &str, now: Now) -> Result<String, StoreError> {
    let seed: [u8; 32] = crate::random::bytes();
    let vkey = NoteSigner::new(&seed, origin).map_err(internal)?.vkey();
    let sealed = kek.seal(Purpose::LogKey, &vkey, &seed).map_err(internal)?;
    conn.execute(
        "INSERT INTO log_keys (key_id, secret, created_at) VALUES (?1, ?2, ?3)",
        params![vkey, sealed, now.s()],
    )?;
    Ok(vkey)
}

/// Why a log key was not retired.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RetireError {
    #[error("no log key has this verifier key")]
    Unknown,
    #[error("this is the only key signing checkpoints; rotate first")]
    Last,
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Stops a log key from signing checkpoints (it stays published). The last
/// signing key cannot be retired. Answers whether it was signing until now.
pub fn retire(conn: &Connection, vkey: &str, now: Now) -> Result<bool, RetireError> {
    let state: Option<bool> = conn
        .query_row(
            "SELECT retired_at IS NULL FROM log_keys WHERE key_id = ?1",
            [vkey],
            |row| row.get(0),
        )
        .optional()
        .map_err(StoreError::from)?;
    let Some(signing) = state else {
        return Err(RetireError::Unknown);
    };
    if !signing {
        return Ok(false);
    }
    let others: i64 = conn
        .query_row(
            "SELECT count(*) FROM log_keys WHERE retired_at IS NULL AND key_id <> ?1",
            [vkey],
            |row| row.get(0),
        )
        .map_err(StoreError::from)?;
    if others == 0 {
        return Err(RetireError::Last);
    }
    conn.execute(
        "UPDATE log_keys SET retired_at = ?1 WHERE key_id = ?2",
        params![now.s(), vkey],
    )
    .map_err(StoreError::from)?;
    Ok(true)
}

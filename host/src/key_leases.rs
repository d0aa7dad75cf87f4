//! API keys this server has looked up lately, each answered from memory
//! for a short lease instead of read again on every call — exact, because
//! a key's revocation is acknowledged only once every lease that could
//! have seen the key active has ended.
//!
//! A lease runs for [`LEASE`] from the moment its look-up *began* (before
//! the read, so before the snapshot it read): a look-up that began before
//! a revocation committed ends its lease less than [`LEASE`] after that
//! commit. Whoever revokes a key — the API on any host, or the operator's
//! `mandate keys revoke` beside a running server — waits [`LEASE`] after
//! the commit before saying it is revoked ([`settle`]). So no call that
//! starts after a revocation is acknowledged is let in by the key, on any
//! host, whichever process revoked it: the time is each process's own
//! monotonic clock, compared with nothing across machines. Nothing else
//! about a key changes once made (its organisation, role, e-mail).
//!
//! Only keys found active are leased: an unknown key is read every time,
//! so a key is usable the moment its creation is acknowledged. Found by
//! the SHA-256 of the presented key (as the database stores it: no key's
//! text is kept). Bounded: at most [`CAPACITY`] leases; when full, the
//! ended ones are dropped, and if none has ended, all are.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::apikeys::Principal;

/// How long a look-up answers for its key: a key read at most this often
/// per host, a revocation acknowledged this long after its commit.
pub const LEASE: Duration = Duration::from_millis(100);

/// Most keys leased at once.
pub const CAPACITY: usize = 4096;

/// The SHA-256 of a presented key.
pub type KeyHash = [u8; 32];

/// The leases, by key hash: who the key is and when its look-up began.
#[derive(Debug, Default)]
pub struct KeyLeases {
    leases: Mutex<HashMap<KeyHash, (Principal, Instant)>>,
}

impl KeyLeases {
    /// Who `hash` is, if a look-up of it that began less than [`LEASE`]
    /// before `now` found it active.
    pub fn get(&self, hash: &KeyHash, now: Instant) -> Option<Principal> {
        let leases = self.leases.lock().ok()?;
        let (principal, began) = leases.get(hash)?;
        (now.saturating_duration_since(*began) < LEASE).then(|| principal.clone())
    }

    /// Remembers that a look-up which began at `began` found `hash` active
    /// as `principal`.
    pub fn insert(&self, hash: KeyHash, principal: Principal, began: Instant) {
        let Ok(mut leases) = self.leases.lock() else {
            return;
        };
        if leases.len() >= CAPACITY && !leases.contains_key(&hash) {
            let now = Instant::now();
            leases.retain(|_, (_, at)| now.saturating_duration_since(*at) < LEASE);
            if leases.len() >= CAPACITY {
                leases.clear();
            }
        }
        leases.insert(hash, (principal, began));
    }

    /// How many keys are leased (ended leases included until dropped).
    pub fn len(&self) -> usize {
        self.leases.lock().map_or(0, |leases| leases.len())
    }

    /// Whether none is.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Waits until every lease begun before now has ended: called by whoever
/// revoked a key, after the revocation committed and before saying so.
pub fn settle() {
    std::thread::sleep(LEASE);
}

/// [`settle`] without blocking the caller's thread.
pub async fn settled() {
    tokio::time::sleep(LEASE).await;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::orgs::Org;
    use mandate_core::Role;

    fn principal(id: &str) -> Principal {
        Principal {
            id: id.to_owned(),
            email: None,
            org: Org::DEFAULT,
            role: Role::Gateway,
            is_admin: false,
        }
    }

    #[test]
    fn a_lease_answers_from_its_look_ups_start_until_the_lease_ends() {
        let leases = KeyLeases::default();
        let began = Instant::now();
        leases.insert([1; 32], principal("key_a"), began);
        assert_eq!(leases.get(&[1; 32], began).unwrap().id, "key_a");
        let last = began + LEASE - Duration::from_nanos(1);
        assert_eq!(leases.get(&[1; 32], last).unwrap().id, "key_a");
        assert!(leases.get(&[1; 32], began + LEASE).is_none());
        assert!(leases.get(&[2; 32], began).is_none());
    }

    #[test]
    fn a_full_memory_drops_ended_leases_first_and_else_everything() {
        let leases = KeyLeases::default();
        let now = Instant::now();
        let ended = now.checked_sub(LEASE * 2).unwrap();
        for n in 0..CAPACITY - 1 {
            let mut hash = [0; 32];
            hash[..8].copy_from_slice(&(n as u64).to_le_bytes());
            leases.insert(hash, principal("key_old"), ended);
        }
        leases.insert([255; 32], principal("key_live"), now);
        assert_eq!(leases.len(), CAPACITY);
        leases.insert([254; 32], principal("key_new"), now);
        assert_eq!(leases.len(), 2);
        assert_eq!(leases.get(&[255; 32], now).unwrap().id, "key_live");

        let full = KeyLeases::default();
        for n in 0..CAPACITY {
            let mut hash = [0; 32];
            hash[..8].copy_from_slice(&(n as u64).to_le_bytes());
            full.insert(hash, principal("key_live"), now);
        }
        full.insert([254; 32], principal("key_new"), now);
        assert_eq!(full.len(), 1);
        assert_eq!(full.get(&[254; 32], now).unwrap().id, "key_new");
    }
}

//! The DPoP proofs this server has accepted, remembered for as long as each
//! would still be accepted, so a captured proof cannot be used twice. One
//! memory for every HTTP worker of the process (RFC 9449 §11.1).
//!
//! It holds the proof's replay key (SHA-256 of the holder's thumbprint and
//! the proof's `jti`, from core) and the last second the proof is good for.
//! It is bounded: when full, it first drops what has lapsed, and if it is
//! still full it refuses new proofs (503) rather than forgetting one that a
//! replay could still use.

use std::collections::HashMap;
use std::sync::Mutex;

use mandate_core::VerifiedProof;

/// Most proofs remembered at once: a minute of bound-token calls at over
/// 4 000 a second, in 12 to 24 MiB.
pub const CAPACITY: usize = 1 << 18;

/// Why a proof cannot be used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    /// This proof was used before.
    Replayed,
    /// Too many live proofs to remember one more.
    Full,
}

/// Proofs seen and when each can be forgotten.
#[derive(Debug)]
pub struct SeenProofs {
    capacity: usize,
    seen: Mutex<HashMap<[u8; 32], i64>>,
}

impl SeenProofs {
    /// A memory of at most `capacity` proofs.
    pub fn new(capacity: usize) -> SeenProofs {
        SeenProofs {
            capacity,
            seen: Mutex::new(HashMap::new()),
        }
    }

    /// Records the first use of a proof at `now` (unix seconds), or says why
    /// it cannot be used.
    pub fn first_use(&self, proof: &VerifiedProof, now: i64) -> Result<(), Refused> {
        let mut seen = match self.seen.lock() {
            Ok(seen) => seen,
            Err(poisoned) => poisoned.into_inner(),
        };
        let key = proof.replay_key();
        if seen.get(&key).is_some_and(|until| *until >= now) {
            return Err(Refused::Replayed);
        }
        if seen.len() >= self.capacity {
            seen.retain(|_, until| *until >= now);
            if seen.len() >= self.capacity {
                return Err(Refused::Full);
            }
        }
        seen.insert(key, proof.remember_until());
        Ok(())
    }

    /// Forgets proofs that are no longer accepted anyway.
    pub fn forget_lapsed(&self, now: i64) {
        if let Ok(mut seen) = self.seen.lock() {
            seen.retain(|_, until| *until >= now);
        }
    }

    /// How many proofs are remembered.
    pub fn len(&self) -> usize {
        self.seen.lock().map_or(0, |seen| seen.len())
    }

    /// Whether none is.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mandate_core::SigningKey;

    fn proof(jti: &str, iat: i64) -> VerifiedProof {
        VerifiedProof {
            jti: jti.to_owned(),
            iat,
            jkt: SigningKey::from_secret(&[1; 32]).holder_key().jkt().clone(),
        }
    }

    #[test]
    fn a_proof_is_good_once_while_it_lives() {
        let seen = SeenProofs::new(16);
        let p = proof("0123456789abcdef", 100);
        assert_eq!(seen.first_use(&p, 100), Ok(()));
        assert_eq!(seen.first_use(&p, 130), Err(Refused::Replayed));
        assert_eq!(seen.first_use(&p, 160), Err(Refused::Replayed));
        assert_eq!(seen.first_use(&proof("0123456789abcdeg", 100), 100), Ok(()));
        seen.forget_lapsed(161);
        assert!(seen.is_empty());
    }

    #[test]
    fn full_memory_drops_lapsed_proofs_then_refuses() {
        let seen = SeenProofs::new(2);
        assert_eq!(seen.first_use(&proof("aaaaaaaaaaaaaaaa", 100), 100), Ok(()));
        assert_eq!(seen.first_use(&proof("bbbbbbbbbbbbbbbb", 150), 150), Ok(()));
        assert_eq!(
            seen.first_use(&proof("cccccccccccccccc", 150), 150),
            Err(Refused::Full)
        );
        // The first lapses at 161: its room is reused.
        assert_eq!(seen.first_use(&proof("cccccccccccccccc", 170), 170), Ok(()));
        assert_eq!(seen.len(), 2);
    }
}

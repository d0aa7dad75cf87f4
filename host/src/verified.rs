//! Tokens this server has verified, remembered by their exact text, so an
//! agent presenting the same token call after call pays for its signature
//! check once instead of on every call.
//!
//! A hit is the very text that verified (the key is the SHA-256 of the whole
//! compact token, so a hit for another text needs a SHA-256 collision),
//! against the very key ring that verified it: an entry names the ring it
//! was checked with, and once the ring is read again (every 10 s, and after
//! an unknown kid or a revoked signing key) the entry no longer counts. What changes over time is checked on every hit
//! by the caller: the token's lifetime here, its revocation in the writer.
//! Bounded: two generations of half the capacity each, the older dropped
//! when the younger fills.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use mandate_core::Claims;
use sha2::{Digest as _, Sha256};

use crate::keyring::Ring;

/// Most tokens remembered: each entry is a 32-byte digest and the token's
/// parsed claims (a token's text is at most 8 KiB), and only tokens this
/// server signed get in.
pub const CAPACITY: usize = 4096;

/// The SHA-256 of a compact token: what entries are found by.
type Digest = [u8; 32];

#[derive(Debug, Clone)]
struct Entry {
    claims: Arc<Claims>,
    /// The ring the token verified against; kept alive by the entry, so a
    /// later ring can never share its address.
    ring: Arc<Ring>,
}

#[derive(Debug, Default)]
struct Generations {
    young: HashMap<Digest, Entry>,
    old: HashMap<Digest, Entry>,
}

/// Verified tokens and the claims they carry.
#[derive(Debug)]
pub struct VerifiedTokens {
    half: usize,
    generations: Mutex<Generations>,
}

impl VerifiedTokens {
    /// A memory of at most `capacity` tokens.
    pub fn new(capacity: usize) -> VerifiedTokens {
        VerifiedTokens {
            half: capacity / 2,
            generations: Mutex::new(Generations::default()),
        }
    }

    /// The claims of `compact` if it verified against `ring`.
    pub fn get(&self, compact: &str, ring: &Arc<Ring>) -> Option<Arc<Claims>> {
        let digest = Sha256::digest(compact).into();
        let mut generations = self.generations.lock().ok()?;
        let entry = match generations.young.get(&digest) {
            Some(entry) => entry.clone(),
            None => {
                let entry = generations.old.remove(&digest)?;
                self.insert_locked(&mut generations, digest, entry.clone());
                entry
            }
        };
        Arc::ptr_eq(&entry.ring, ring).then_some(entry.claims)
    }

    /// Remembers that `compact` verified against `ring`.
    pub fn insert(&self, compact: &str, claims: Arc<Claims>, ring: Arc<Ring>) {
        let digest = Sha256::digest(compact).into();
        if let Ok(mut generations) = self.generations.lock() {
            self.insert_locked(&mut generations, digest, Entry { claims, ring });
        }
    }

    fn insert_locked(&self, generations: &mut Generations, digest: Digest, entry: Entry) {
        if self.half == 0 {
            return;
        }
        if generations.young.len() >= self.half {
            generations.old = std::mem::take(&mut generations.young);
        }
        generations.young.insert(digest, entry);
    }

    /// How many tokens are remembered.
    pub fn len(&self) -> usize {
        self.generations
            .lock()
            .map_or(0, |g| g.young.len() + g.old.len())
    }

    /// Whether none is.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mandate_core::{
        AgentId, AssuranceLevel, HumanRef, Jwks, Policy, RootIssue, Scope, SigningKey,
        TokenRequest, Ulid, issue_root,
    };

    fn ring(seed: u8) -> Arc<Ring> {
        let key = Arc::new(SigningKey::from_secret(&[seed; 32]));
        let jwks = Jwks::from_signing_keys([key.as_ref()]);
        Arc::new(Ring {
            document: jwks.to_jwk_set(),
            jwks,
            active: key,
        })
    }

    fn claims() -> Arc<Claims> {
        Arc::new(
            issue_root(
                TokenRequest {
                    agent_id: AgentId::parse("bot").unwrap(),
                    scope: Scope::parse(&["crm:*"], &["read"]).unwrap(),
                    constraints: Default::default(),
                    policy: Policy::default(),
                    ttl_seconds: None,
                    holder: None,
                },
                RootIssue {
                    issuer: "mandate".into(),
                    human: HumanRef::from_digest(&[1; 32]),
                    level: AssuranceLevel::L1,
                    now: 1_000,
                    jti: Ulid::new(1, [1; 10]).unwrap(),
                    provenance: Ulid::new(1, [2; 10]).unwrap(),
                    status: None,
                },
            )
            .unwrap(),
        )
    }

    #[test]
    fn a_hit_is_the_same_text_under_the_same_ring() {
        let tokens = VerifiedTokens::new(8);
        let (first, second) = (ring(1), ring(1));
        tokens.insert("a.b.c", claims(), first.clone());
        assert!(tokens.get("a.b.c", &first).is_some());
        // The same keys read again: another ring, so no longer a hit.
        assert!(tokens.get("a.b.c", &second).is_none());
        assert!(tokens.get("a.b.cd", &first).is_none());
        assert!(tokens.get("a.b.", &first).is_none());
    }

    #[test]
    fn it_never_holds_more_than_its_capacity() {
        let tokens = VerifiedTokens::new(4);
        let ring = ring(1);
        for n in 0..20 {
            tokens.insert(&format!("t{n}"), claims(), ring.clone());
            assert!(tokens.len() <= 4);
        }
        assert!(tokens.get("t19", &ring).is_some());
        assert!(tokens.get("t0", &ring).is_none());
        assert!(VerifiedTokens::new(1).is_empty());
    }
}

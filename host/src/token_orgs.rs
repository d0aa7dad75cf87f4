//! The organisation of each token agents act with, remembered: a token
//! never changes organisation, so a remembered answer is always right, and
//! an agent call pays for reading it once per token (per process), not per
//! request. Bounded: when full, it starts again empty.

use std::collections::HashMap;
use std::sync::Mutex;

use mandate_core::Jti;

use crate::store::orgs::Org;

/// How many tokens' organisations are remembered.
pub const CAPACITY: usize = 100_000;

/// Tokens' organisations, by jti.
#[derive(Debug, Default)]
pub struct TokenOrgs {
    known: Mutex<HashMap<Jti, Org>>,
}

impl TokenOrgs {
    /// The remembered organisation of a token.
    pub fn get(&self, jti: &Jti) -> Option<Org> {
        self.known.lock().ok()?.get(jti).copied()
    }

    /// Remembers a token's organisation.
    pub fn insert(&self, jti: &Jti, org: Org) {
        if let Ok(mut known) = self.known.lock() {
            if known.len() >= CAPACITY {
                known.clear();
            }
            known.insert(jti.clone(), org);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remembers_and_starts_again_when_full() {
        let orgs = TokenOrgs::default();
        let jti = |n: u64| Jti::root(mandate_core::Ulid::new(n, [0; 10]).unwrap());
        orgs.insert(&jti(0), Org::from_number(2));
        assert_eq!(orgs.get(&jti(0)), Some(Org::from_number(2)));
        assert_eq!(orgs.get(&jti(1)), None);
        for n in 1..=CAPACITY as u64 {
            orgs.insert(&jti(n), Org::DEFAULT);
        }
        assert_eq!(orgs.get(&jti(0)), None);
        assert_eq!(orgs.get(&jti(CAPACITY as u64)), Some(Org::DEFAULT));
    }
}

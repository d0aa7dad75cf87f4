//! The prepared verifier for hot paths: a key set parsed once, a revocation
//! set, the status lists it was given (IETF Token Status List), an optional
//! bounded cache of tokens that already verified, so a caller that sees the
//! same token many times checks its signature once, and a memory of the DPoP
//! proofs it accepted, so none is used twice.
//!
//! A cache hit is not a free pass: every hit re-checks the token's lifetime
//! with core's `Claims::check_time`, its line (the token and every ancestor
//! it names) against the revocation set, its status in the list it holds for
//! the token's uri (when status checking is on), and its binding, exactly as
//! a miss does.
//!
//! What a verified token's result is, each façade says: the wasm façade
//! keeps a frozen JavaScript object, the Python façade JSON text.

use std::collections::{BTreeSet, HashMap};

use mandate_core::{
    Claims, DpopError, Jth, Jwks, StatusCheckError, VerifiedProof, VerifiedStatusList,
    VerifiedToken, VerifyOptions,
};

use crate::failure::{Failure, Stage, dpop_failure, revoked_failure, status_failure};
use crate::failure::{status_list_failure, verify_failure};
use crate::token::{Binding, ListInfo, StatusOptions};

/// Most proofs a verifier remembers at once (about 3 MiB).
const PROOF_MEMORY: usize = 65_536;
/// Most status lists a verifier holds at once (a Mandate list is 8 KiB);
/// past it, the list signed longest ago is dropped, and a token of that list
/// is refused (`status_unknown`) until it is given again.
const MAX_HELD_LISTS: usize = 256;

/// Status checking: the lists held, newest per uri, and the options. A few
/// lists are held (one per 65,536 tokens), so a vector searched in order is
/// enough, and smaller in the wasm module than a map.
#[derive(Debug, Default)]
struct StatusLists {
    options: StatusOptions,
    lists: Vec<VerifiedStatusList>,
}

impl StatusLists {
    /// The token's status in the list held for its uri: a token without a
    /// status claim passes; one whose list is not held is `status_unknown`.
    fn check(&self, claims: &Claims, now: i64) -> Result<(), Failure> {
        if let Some(origins) = &self.options.origins {
            mandate_core::check_status_origin(claims, origins).map_err(|e| status_failure(&e))?;
        }
        mandate_core::check_status_with(
            claims,
            |uri| self.lists.iter().find(|list| list.uri == *uri),
            now,
            self.options.max_staleness_seconds,
        )
        .map_err(|e| status_failure(&e))
    }

    /// Whether a list of `list`'s uri signed later than it is held.
    fn has_newer(&self, list: &VerifiedStatusList) -> bool {
        self.lists
            .iter()
            .any(|held| held.uri == list.uri && held.iat > list.iat)
    }

    /// Holds `list` for its uri, in place of the one held, if any; when the
    /// verifier holds as many lists as it may, the list signed longest ago
    /// makes room.
    fn hold(&mut self, list: VerifiedStatusList) {
        self.lists.retain(|held| held.uri != list.uri);
        if self.lists.len() >= MAX_HELD_LISTS {
            let oldest = (0..self.lists.len()).min_by_key(|i| self.lists.get(*i).map(|l| l.iat));
            if let Some(oldest) = oldest {
                self.lists.swap_remove(oldest);
            }
        }
        self.lists.push(list);
    }
}

/// A bounded map from tokens to what their verification found, in two
/// generations. A lookup moves a token to the young generation; when the
/// young one is full it becomes the old one, and the previous old one is
/// dropped. Recently used tokens survive, and the map never holds more than
/// its capacity.
#[derive(Debug)]
struct Cache<V> {
    /// The capacity of each generation, half the whole.
    half: usize,
    young: HashMap<String, V>,
    old: HashMap<String, V>,
}

impl<V> Cache<V> {
    /// A cache of at most `capacity` tokens; below 2 it keeps none.
    fn new(capacity: usize) -> Cache<V> {
        Cache {
            half: capacity / 2,
            young: HashMap::new(),
            old: HashMap::new(),
        }
    }

    fn get(&mut self, token: &str) -> Option<&V> {
        if !self.young.contains_key(token) {
            let value = self.old.remove(token)?;
            self.insert(token.to_owned(), value);
        }
        self.young.get(token)
    }

    fn insert(&mut self, token: String, value: V) {
        if self.half == 0 {
            return;
        }
        if self.young.len() >= self.half {
            self.old = std::mem::take(&mut self.young);
        }
        self.young.insert(token, value);
    }

    fn remove(&mut self, token: &str) {
        self.young.remove(token);
        self.old.remove(token);
    }

    fn len(&self) -> usize {
        self.young.len() + self.old.len()
    }

    fn clear(&mut self) {
        self.young.clear();
        self.old.clear();
    }
}

/// A token that verified: its claims, and its result as the façade hands it
/// out.
#[derive(Debug)]
struct Entry<V> {
    claims: Claims,
    result: V,
}

/// What a verifier is made from, read and checked by its façade.
#[derive(Debug)]
pub struct VerifierSetup {
    pub keys: Jwks,
    pub options: VerifyOptions,
    pub revoked: BTreeSet<Jth>,
    /// Most tokens cached; below 2, none.
    pub cache_size: usize,
    /// With status checking, its options; `None` checks no status.
    pub status: Option<StatusOptions>,
}

/// Verifies tokens against one key set, prepared once, keeping each
/// verified token's result `V`.
#[derive(Debug)]
pub struct Verifier<V> {
    keys: Jwks,
    options: VerifyOptions,
    revoked: BTreeSet<Jth>,
    cache: Cache<Entry<V>>,
    /// Replay keys of accepted proofs, with the last second each is good for.
    proofs: HashMap<[u8; 32], i64>,
    /// With status checking, the status lists held; `None` checks no status.
    status: Option<StatusLists>,
}

impl<V: Clone> Verifier<V> {
    pub fn new(setup: VerifierSetup) -> Verifier<V> {
        Verifier {
            keys: setup.keys,
            options: setup.options,
            revoked: setup.revoked,
            cache: Cache::new(setup.cache_size),
            proofs: HashMap::new(),
            status: setup.status.map(|options| StatusLists {
                options,
                lists: Vec::new(),
            }),
        }
    }

    /// Whether verified tokens are kept (the cache holds at least 2).
    pub fn caches(&self) -> bool {
        self.cache.half > 0
    }

    /// How many verified tokens the cache holds.
    pub fn cached(&self) -> usize {
        self.cache.len()
    }

    /// Forgets every cached token (the revocation set and status lists stay).
    pub fn clear_cache(&mut self) {
        self.cache.clear();
    }

    /// The verdict on a token at `now`, from the cache or afresh (`result`
    /// makes the result of a token verified afresh), with the binding rule
    /// for `request` (none: the token must not be bound).
    pub fn check(
        &mut self,
        token: &str,
        now: i64,
        request: Option<&crate::RequestInput>,
        result: impl FnOnce(&VerifiedToken) -> V,
    ) -> Result<V, Failure> {
        let binding = request.map_or(Binding::Bearer, Binding::Request);
        let leeway = self.options.leeway_seconds;
        if let Some(entry) = self.cache.get(token) {
            if let Err(error) = entry.claims.check_time(now, leeway) {
                self.cache.remove(token);
                return Err(verify_failure(&error));
            }
            let proof = judge(
                &entry.claims,
                &self.revoked,
                self.status.as_ref(),
                token,
                now,
                binding,
            )?;
            let result = entry.result.clone();
            if let Some(proof) = proof {
                self.first_use(&proof, now)?;
            }
            return Ok(result);
        }
        let verified = mandate_core::verify(token, &self.keys, now, &self.options)
            .map_err(|e| verify_failure(&e))?;
        if let Some(proof) = judge(
            &verified.claims,
            &self.revoked,
            self.status.as_ref(),
            token,
            now,
            binding,
        )? {
            self.first_use(&proof, now)?;
        }
        let result = result(&verified);
        self.cache.insert(
            token.to_owned(),
            Entry {
                claims: verified.claims,
                result: result.clone(),
            },
        );
        Ok(result)
    }

    /// Remembers a proof's first use, or refuses a second.
    fn first_use(&mut self, proof: &VerifiedProof, now: i64) -> Result<(), Failure> {
        let key = proof.replay_key();
        if self.proofs.get(&key).is_some_and(|until| *until >= now) {
            return Err(dpop_failure(&DpopError::Replayed));
        }
        if self.proofs.len() >= PROOF_MEMORY {
            self.proofs.retain(|_, until| *until >= now);
            if self.proofs.len() >= PROOF_MEMORY {
                return Err(Failure::new(
                    Stage::Dpop,
                    "dpop_memory_full",
                    "too many live proofs to remember one more; retry in a minute",
                ));
            }
        }
        self.proofs.insert(key, proof.remember_until());
        Ok(())
    }

    /// Puts `keys` in force in place of the key set it has (a refresh after
    /// a rotation): the cached tokens and the held status lists were
    /// verified with the old keys and are dropped; the revocation set and the
    /// memory of accepted proofs are kept, so a refresh, which anyone can
    /// cause by naming a kid nobody publishes, never makes a proof good again.
    pub fn set_keys(&mut self, keys: Jwks) {
        self.keys = keys;
        self.cache.clear();
        if let Some(status) = self.status.as_mut() {
            status.lists.clear();
        }
    }

    /// Adds revoked tokens (their jti hashes, from [`parse_revoked`]); a
    /// revoked token voids every token delegated below it.
    pub fn revoke(&mut self, jths: BTreeSet<Jth>) {
        self.revoked.extend(jths);
    }

    /// Verifies a status list token against the key set at `now` and holds
    /// it for its `sub`, unless a list of that uri signed later is held.
    /// Answers `answer` of whether it is now the one checked against and of
    /// what the list says about itself. Refused (`status_checking_off`) when
    /// the verifier checks no status; `off` says how to make one that does.
    pub fn set_status_list<R>(
        &mut self,
        jwt: &str,
        now: i64,
        off: &str,
        answer: impl FnOnce(bool, ListInfo<'_>) -> R,
    ) -> Result<R, Failure> {
        let Some(status) = self.status.as_mut() else {
            return Err(Failure::input("status_checking_off", off));
        };
        let list = mandate_core::verify_status_list(jwt, &self.keys, now, None)
            .map_err(|e| status_list_failure(&e))?;
        if status
            .options
            .origins
            .as_ref()
            .is_some_and(|origins| !list.uri.on_origin(origins))
        {
            return Err(status_failure(&StatusCheckError::OriginNotAllowed));
        }
        let held = !status.has_newer(&list);
        let result = answer(held, ListInfo::of(&list));
        if held {
            status.hold(list);
        }
        Ok(result)
    }
}

/// Parses revoked tokens, each named by its jti or its jti hash, into the
/// jti hashes verification compares (core's rule).
pub fn parse_revoked(entries: &[String]) -> Result<BTreeSet<Jth>, Failure> {
    mandate_core::revocation_set(entries).map_err(|e| Failure::input(e.code(), e))
}

/// Revocation, the token's status (when checked), then the binding rule.
/// Returns the proof to remember.
fn judge(
    claims: &Claims,
    revoked: &BTreeSet<Jth>,
    status: Option<&StatusLists>,
    token: &str,
    now: i64,
    binding: Binding<'_>,
) -> Result<Option<VerifiedProof>, Failure> {
    if let Some(jth) = claims.first_revoked(|jth| revoked.contains(jth)) {
        return Err(revoked_failure(jth));
    }
    if let Some(status) = status {
        status.check(claims, now)?;
    }
    binding.check(claims, token, now)
}

#[cfg(test)]
mod tests {
    use super::Cache;

    fn token(n: usize) -> String {
        format!("token-{n}")
    }

    #[test]
    fn never_holds_more_than_its_capacity() {
        for capacity in 0..10 {
            let mut cache = Cache::new(capacity);
            for n in 0..50 {
                cache.insert(token(n), n);
                assert!(
                    cache.len() <= capacity,
                    "capacity {capacity}: {}",
                    cache.len()
                );
            }
        }
    }

    #[test]
    fn below_two_it_keeps_nothing() {
        let mut cache = Cache::new(1);
        cache.insert(token(1), 1);
        assert_eq!(cache.get(&token(1)), None);
    }

    #[test]
    fn recently_used_tokens_survive() {
        let mut cache = Cache::new(4);
        for n in 0..4 {
            cache.insert(token(n), n);
        }
        // Token 0 is old; reading it makes it young again.
        assert_eq!(cache.get(&token(0)), Some(&0));
        for n in 4..6 {
            cache.insert(token(n), n);
        }
        assert_eq!(cache.get(&token(0)), Some(&0));
        assert_eq!(cache.get(&token(1)), None);
    }

    #[test]
    fn remove_and_clear() {
        let mut cache = Cache::new(8);
        for n in 0..6 {
            cache.insert(token(n), n);
        }
        cache.remove(&token(0));
        cache.remove(&token(5));
        assert_eq!(cache.get(&token(0)), None);
        assert_eq!(cache.get(&token(5)), None);
        assert_eq!(cache.len(), 4);
        cache.clear();
        assert_eq!(cache.len(), 0);
    }
}

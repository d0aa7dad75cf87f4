//! The prepared verifier for hot paths: a key set parsed once, a revocation
//! set, the status lists it was given (IETF Token Status List), an optional
//! bounded cache of tokens that already verified, so an edge worker that sees
//! the same token many times checks its signature once, and a memory of the
//! DPoP proofs it accepted, so none is used twice.
//!
//! A cache hit is not a free pass: every hit re-checks the token's lifetime
//! with core's `Claims::check_time`, its line (the token and every ancestor
//! it names) against the revocation set, its status in the list it holds for
//! the token's uri (when status checking is on), and its binding, exactly as
//! a miss does.

use std::collections::{BTreeSet, HashMap};

use mandate_core::{
    Claims, DpopError, Jth, Jwks, StatusCheckError, VerifiedProof, VerifiedStatusList,
    VerifyOptions,
};
use serde::{Deserialize, Serialize};
use wasm_bindgen::prelude::*;

use crate::js::{
    Failure, from_js, from_json_text, invalid, not_ok, now_or_clock, object_from_js, to_js,
};
use crate::{
    Checks, ListInfo, RequestInput, Use, dpop_failure, parse_revoked, revoked_failure,
    status_failure, status_list_failure, valid_json, verify_failure,
};

/// Most proofs a verifier remembers at once (about 3 MiB).
const PROOF_MEMORY: usize = 65_536;
/// Most status lists a verifier holds at once (a Mandate list is 8 KiB);
/// past it, the list signed longest ago is dropped, and a token of that list
/// is refused (`status_unknown`) until it is given again.
const MAX_HELD_LISTS: usize = 256;

/// Status checking: the lists held, newest per uri, and the oldest list
/// accepted. A few lists are held (one per 65,536 tokens), so a vector
/// searched in order is enough, and smaller in the module than a map.
#[derive(Debug, Default)]
struct StatusLists {
    max_staleness_seconds: Option<u64>,
    /// The issuer's origins (`statusOrigins`), when given: a token or a list
    /// naming another is refused.
    origins: Option<Vec<String>>,
    lists: Vec<VerifiedStatusList>,
}

impl StatusLists {
    /// The token's status in the list held for its uri: a token without a
    /// status claim passes; one whose list is not held is `status_unknown`.
    fn check(&self, claims: &Claims, now: i64) -> Result<(), Failure> {
        if let Some(origins) = &self.origins {
            mandate_core::check_status_origin(claims, origins).map_err(|e| status_failure(&e))?;
        }
        mandate_core::check_status_with(
            claims,
            |uri| self.lists.iter().find(|list| list.uri == *uri),
            now,
            self.max_staleness_seconds,
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

/// A token that verified, with its result ready to hand out again.
#[derive(Debug)]
struct Entry {
    claims: Claims,
    /// `{ valid: true, header, claims }`, deeply frozen: every hit hands out
    /// this same object, so no caller can change what another one sees.
    result: JsValue,
}

/// Freezes an object and everything in it.
fn deep_freeze(value: &JsValue) {
    if let Some(object) = value.dyn_ref::<js_sys::Object>() {
        for member in js_sys::Object::values(object).iter() {
            deep_freeze(&member);
        }
        js_sys::Object::freeze(object);
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

/// Verifies tokens against one key set, prepared once.
///
/// The constructor never throws: when the key set or the options are
/// unusable, `error` says why and every `verify` returns that error.
/// Revocation, the token's status (when checked), then the binding rule: a
/// bound token needs a valid proof for `request`; without a request, a bound
/// token is refused. Returns the proof to remember.
fn judge(
    claims: &Claims,
    revoked: &BTreeSet<Jth>,
    status: Option<&StatusLists>,
    token: &str,
    now: i64,
    request: Option<&RequestInput>,
) -> Result<Option<VerifiedProof>, Failure> {
    if let Some(jth) = claims.first_revoked(|jth| revoked.contains(jth)) {
        return Err(revoked_failure(jth));
    }
    if let Some(status) = status {
        status.check(claims, now)?;
    }
    match request {
        Some(request) => request.check(claims, token, now),
        None if claims.cnf.is_some() => Err(dpop_failure(&DpopError::Required)),
        None => Ok(None),
    }
}

#[wasm_bindgen]
#[derive(Debug)]
pub struct Verifier {
    keys: Result<Jwks, Failure>,
    options: VerifyOptions,
    revoked: BTreeSet<Jth>,
    cache: Cache<Entry>,
    /// Replay keys of accepted proofs, with the last second each is good for.
    proofs: HashMap<[u8; 32], i64>,
    /// With `checkStatus`, the status lists held; `None` checks no status.
    status: Option<StatusLists>,
}

/// The request `verifyRequest` checks a token against.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RequestOptions {
    #[serde(flatten)]
    request: RequestInput,
    #[serde(default)]
    now: Option<f64>,
}

#[wasm_bindgen]
impl Verifier {
    /// Parses the key set (an object or JSON text) and the options
    /// `{ leewaySeconds?, issuer?, cacheSize?, revoked?, checkStatus?,
    /// maxStalenessSeconds?, statusOrigins? }`. With `checkStatus`, a token
    /// carrying a status claim is refused unless a list given to
    /// `setStatusList` for its uri says it is VALID, and that list was
    /// signed at most `maxStalenessSeconds` ago (fail closed:
    /// `status_unknown`, `status_stale`); with `statusOrigins`, a token or a
    /// list whose uri is on another origin is refused
    /// (`status_origin_not_allowed`).
    #[wasm_bindgen(constructor)]
    pub fn new(
        #[wasm_bindgen(unchecked_param_type = "Jwks | string")] jwks: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "VerifierOptions")] options: Option<JsValue>,
    ) -> Verifier {
        match Checks::read(&jwks, options, Use::Verifier) {
            Ok(checks) => Verifier {
                keys: Ok(checks.keys),
                revoked: checks.revoked,
                cache: Cache::new(checks.cache_size),
                options: checks.options,
                proofs: HashMap::new(),
                status: checks.check_status.then(|| StatusLists {
                    max_staleness_seconds: checks.max_staleness_seconds,
                    origins: checks.status_origins,
                    lists: Vec::new(),
                }),
            },
            Err(failure) => Verifier {
                keys: Err(failure),
                options: VerifyOptions::default(),
                revoked: BTreeSet::new(),
                cache: Cache::new(0),
                proofs: HashMap::new(),
                status: None,
            },
        }
    }

    /// Why the verifier cannot verify anything, or `null` when it can.
    #[wasm_bindgen(getter, unchecked_return_type = "ErrorInfo | null")]
    pub fn error(&self) -> JsValue {
        match &self.keys {
            Ok(_) => JsValue::NULL,
            Err(failure) => to_js(failure),
        }
    }

    /// How many verified tokens the cache holds.
    #[wasm_bindgen(getter)]
    pub fn cached(&self) -> usize {
        self.cache.len()
    }

    /// Verifies a token at `now` (unix seconds; default the JavaScript
    /// clock), refusing it when it or an ancestor is revoked. A bound token
    /// is refused (`dpop_required`): check it with `verifyRequest`.
    #[wasm_bindgen(unchecked_return_type = "VerifyResult")]
    pub fn verify(
        &mut self,
        #[wasm_bindgen(unchecked_param_type = "string")] token: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "number")] now: Option<JsValue>,
    ) -> JsValue {
        let now = match now.map(|now| now.as_f64()) {
            None => now_or_clock(None),
            Some(Some(now)) => now_or_clock(Some(now)),
            Some(None) => {
                return invalid(Failure::input("invalid_argument", "now must be a number"));
            }
        };
        let Some(token) = token.as_string() else {
            return invalid(Failure::input("invalid_argument", "token must be a string"));
        };
        match self.checked(&token, now, None) {
            Ok(result) => result,
            Err(failure) => invalid(failure),
        }
    }

    /// Verifies a token presented with a request: everything `verify` checks,
    /// then the binding rule — a bound token needs `proof`, a valid DPoP
    /// proof (RFC 9449) by its holder for this `method` and `url`, never
    /// seen before by this verifier; an unbound token takes none.
    #[wasm_bindgen(js_name = verifyRequest, unchecked_return_type = "VerifyResult")]
    pub fn verify_request(
        &mut self,
        #[wasm_bindgen(unchecked_param_type = "string")] token: JsValue,
        #[wasm_bindgen(unchecked_param_type = "RequestCheck")] request: JsValue,
    ) -> JsValue {
        let Some(token) = token.as_string() else {
            return invalid(Failure::input("invalid_argument", "token must be a string"));
        };
        let request: RequestOptions = match object_from_js(&request, "request") {
            Ok(request) => request,
            Err(message) => return invalid(Failure::input("invalid_argument", message)),
        };
        let now = now_or_clock(request.now);
        match self.checked(&token, now, Some(&request.request)) {
            Ok(result) => result,
            Err(failure) => invalid(failure),
        }
    }

    /// The verdict on a token at `now`, from the cache or afresh, with the
    /// binding rule for `request` (none: the token must not be bound).
    fn checked(
        &mut self,
        token: &str,
        now: i64,
        request: Option<&RequestInput>,
    ) -> Result<JsValue, Failure> {
        let keys = self.keys.as_ref().map_err(Clone::clone)?;
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
                request,
            )?;
            let result = entry.result.clone();
            if let Some(proof) = proof {
                self.first_use(&proof, now)?;
            }
            return Ok(result);
        }
        let verified = mandate_core::verify(token, keys, now, &self.options)
            .map_err(|e| verify_failure(&e))?;
        if let Some(proof) = judge(
            &verified.claims,
            &self.revoked,
            self.status.as_ref(),
            token,
            now,
            request,
        )? {
            self.first_use(&proof, now)?;
        }
        let result = from_json_text(&valid_json(&verified));
        if self.cache.half > 0 {
            deep_freeze(&result);
            self.cache.insert(
                token.to_owned(),
                Entry {
                    claims: verified.claims,
                    result: result.clone(),
                },
            );
        }
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
                    crate::js::Stage::Dpop,
                    "dpop_memory_full",
                    "too many live proofs to remember one more; retry in a minute",
                ));
            }
        }
        self.proofs.insert(key, proof.remember_until());
        Ok(())
    }

    /// Adds one revoked token or a list to the revocation set, each named by
    /// its jti or its jti hash; a revoked token voids every token delegated
    /// below it. All or nothing: a malformed entry adds none.
    #[wasm_bindgen(unchecked_return_type = "RevokeResult")]
    pub fn revoke(
        &mut self,
        #[wasm_bindgen(unchecked_param_type = "string | string[]")] jtis: JsValue,
    ) -> JsValue {
        #[derive(Serialize)]
        struct Revoked {
            ok: bool,
        }
        let list = match jtis.as_string() {
            Some(one) => Ok(vec![one]),
            None => from_js::<Vec<String>>(&jtis, "jtis")
                .map_err(|message| Failure::input("invalid_argument", message)),
        };
        match list.and_then(|list| parse_revoked(&list)) {
            Ok(jths) => {
                self.revoked.extend(jths);
                to_js(&Revoked { ok: true })
            }
            Err(failure) => not_ok(failure),
        }
    }

    /// Verifies a status list token against the verifier's key set at `now`
    /// (unix seconds; default the JavaScript clock) and holds it for its
    /// `sub`, unless a list of that uri signed later is held. Answers
    /// `{ ok: true, held, uri, kid, iat, exp, ttl, bits, size }` (`held`:
    /// whether this list is now the one checked against), or the list's
    /// refusal. Refused when the verifier was not made with `checkStatus`.
    #[wasm_bindgen(js_name = setStatusList, unchecked_return_type = "SetStatusListResult")]
    pub fn set_status_list(
        &mut self,
        #[wasm_bindgen(unchecked_param_type = "string")] jwt: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "number")] now: Option<JsValue>,
    ) -> JsValue {
        #[derive(Serialize)]
        struct Set<'a> {
            ok: bool,
            held: bool,
            #[serde(flatten)]
            info: ListInfo<'a>,
        }
        let now = match now.map(|now| now.as_f64()) {
            None => now_or_clock(None),
            Some(Some(now)) => now_or_clock(Some(now)),
            Some(None) => {
                return not_ok(Failure::input("invalid_argument", "now must be a number"));
            }
        };
        let Some(jwt) = jwt.as_string() else {
            return not_ok(Failure::input("invalid_argument", "jwt must be a string"));
        };
        let keys = match &self.keys {
            Ok(keys) => keys,
            Err(failure) => return not_ok(failure.clone()),
        };
        let Some(status) = self.status.as_mut() else {
            return not_ok(Failure::input(
                "status_checking_off",
                "this verifier checks no status: make it with checkStatus: true",
            ));
        };
        match mandate_core::verify_status_list(&jwt, keys, now, None) {
            Ok(list)
                if status
                    .origins
                    .as_ref()
                    .is_some_and(|origins| !list.uri.on_origin(origins)) =>
            {
                not_ok(status_failure(&StatusCheckError::OriginNotAllowed))
            }
            Ok(list) => {
                let held = !status.has_newer(&list);
                let result = to_js(&Set {
                    ok: true,
                    held,
                    info: ListInfo::of(&list),
                });
                if held {
                    status.hold(list);
                }
                result
            }
            Err(error) => not_ok(status_list_failure(&error)),
        }
    }

    /// Forgets every cached token (the revocation set and status lists stay).
    #[wasm_bindgen(js_name = clearCache)]
    pub fn clear_cache(&mut self) {
        self.cache.clear();
    }
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

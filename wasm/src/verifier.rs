//! The prepared verifier for hot paths: a key set parsed once, a revocation
//! set, and an optional bounded cache of tokens that already verified, so an
//! edge worker that sees the same token many times checks its signature once.
//!
//! A cache hit is not a free pass: every hit re-checks the token's lifetime
//! with core's `Claims::check_time` and its line (the token and every
//! ancestor it names) against the revocation set, exactly as a miss does.

use std::collections::{BTreeSet, HashMap};

use mandate_core::{Claims, Jti, Jwks, VerifyOptions};
use serde::Serialize;
use wasm_bindgen::prelude::*;

use crate::js::{Failure, from_js, from_json_text, invalid, not_ok, now_or_clock, to_js};
use crate::{Checks, parse_jtis, revoked_failure, valid_json, verify_failure};

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
#[wasm_bindgen]
#[derive(Debug)]
pub struct Verifier {
    keys: Result<Jwks, Failure>,
    options: VerifyOptions,
    revoked: BTreeSet<Jti>,
    cache: Cache<Entry>,
}

#[wasm_bindgen]
impl Verifier {
    /// Parses the key set (an object or JSON text) and the options
    /// `{ leewaySeconds?, issuer?, cacheSize?, revoked? }`.
    #[wasm_bindgen(constructor)]
    pub fn new(
        #[wasm_bindgen(unchecked_param_type = "Jwks | string")] jwks: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "VerifierOptions")] options: Option<JsValue>,
    ) -> Verifier {
        match Checks::read(&jwks, options, true) {
            Ok(checks) => Verifier {
                keys: Ok(checks.keys),
                revoked: checks.revoked,
                cache: Cache::new(checks.cache_size),
                options: checks.options,
            },
            Err(failure) => Verifier {
                keys: Err(failure),
                options: VerifyOptions::default(),
                revoked: BTreeSet::new(),
                cache: Cache::new(0),
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
    /// clock), refusing it when it or an ancestor is revoked.
    #[wasm_bindgen(unchecked_return_type = "VerifyResult")]
    pub fn verify(
        &mut self,
        #[wasm_bindgen(unchecked_param_type = "string")] token: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "number")] now: Option<JsValue>,
    ) -> JsValue {
        let keys = match &self.keys {
            Ok(keys) => keys,
            Err(failure) => return invalid(failure.clone()),
        };
        let Some(token) = token.as_string() else {
            return invalid(Failure::input("invalid_argument", "token must be a string"));
        };
        let now = match now.map(|now| now.as_f64()) {
            None => now_or_clock(None),
            Some(Some(now)) => now_or_clock(Some(now)),
            Some(None) => {
                return invalid(Failure::input("invalid_argument", "now must be a number"));
            }
        };
        let leeway = self.options.leeway_seconds;
        if let Some(entry) = self.cache.get(&token) {
            if let Err(error) = entry.claims.check_time(now, leeway) {
                self.cache.remove(&token);
                return invalid(verify_failure(&error));
            }
            if let Some(jti) = entry.claims.first_revoked(|jti| self.revoked.contains(jti)) {
                return invalid(revoked_failure(jti));
            }
            return entry.result.clone();
        }
        let verified = match mandate_core::verify(&token, keys, now, &self.options) {
            Ok(verified) => verified,
            Err(error) => return invalid(verify_failure(&error)),
        };
        if let Some(jti) = verified
            .claims
            .first_revoked(|jti| self.revoked.contains(jti))
        {
            return invalid(revoked_failure(jti));
        }
        let result = from_json_text(&valid_json(&verified));
        if self.cache.half > 0 {
            deep_freeze(&result);
            self.cache.insert(
                token,
                Entry {
                    claims: verified.claims,
                    result: result.clone(),
                },
            );
        }
        result
    }

    /// Adds one jti or a list of jtis to the revocation set; a revoked token
    /// voids every token delegated below it. All or nothing: a malformed jti
    /// adds none.
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
        match list.and_then(|list| parse_jtis(&list)) {
            Ok(jtis) => {
                self.revoked.extend(jtis);
                to_js(&Revoked { ok: true })
            }
            Err(failure) => not_ok(failure),
        }
    }

    /// Forgets every cached token (the revocation set stays).
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

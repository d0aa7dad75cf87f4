//! The prepared verifier for hot paths, over mandate-facade's `Verifier`:
//! a key set parsed once, a revocation set, the status lists it was given,
//! an optional bounded cache of tokens that already verified and a memory
//! of the DPoP proofs it accepted, judged by the same sequence as the
//! Python package's (a cache hit re-checks lifetime, revocation, status and
//! binding exactly as a miss does). This file converts JavaScript values in
//! and out, and keeps each verified token's result as a deeply frozen
//! object: every hit hands out that same object, so no caller can change
//! what another one sees.

use mandate_facade::{Failure, ListInfo, RequestInput, VerifierSetup};
use serde::{Deserialize, Serialize};
use wasm_bindgen::prelude::*;

use crate::js::{from_js, from_json_text, invalid, not_ok, now_or_clock, object_from_js, to_js};
use crate::{Checks, Use, parse_jwks, valid_json};

/// Freezes an object and everything in it.
fn deep_freeze(value: &JsValue) {
    if let Some(object) = value.dyn_ref::<js_sys::Object>() {
        for member in js_sys::Object::values(object).iter() {
            deep_freeze(&member);
        }
        js_sys::Object::freeze(object);
    }
}

/// The answer of a change that succeeded: `{ ok: true }`.
#[derive(Serialize)]
struct Done {
    ok: bool,
}

/// Verifies tokens against one key set, prepared once.
///
/// The constructor never throws: when the key set or the options are
/// unusable, `error` says why and every `verify` returns that error.
#[wasm_bindgen]
#[derive(Debug)]
pub struct Verifier {
    inner: Result<mandate_facade::Verifier<JsValue>, Failure>,
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
        let inner = Checks::read(&jwks, options, Use::Verifier).map(|checks| {
            mandate_facade::Verifier::new(VerifierSetup {
                keys: checks.keys,
                options: checks.options,
                revoked: checks.revoked,
                cache_size: checks.cache_size,
                status: checks.status,
            })
        });
        Verifier { inner }
    }

    /// Why the verifier cannot verify anything, or `null` when it can.
    #[wasm_bindgen(getter, unchecked_return_type = "ErrorInfo | null")]
    pub fn error(&self) -> JsValue {
        match &self.inner {
            Ok(_) => JsValue::NULL,
            Err(failure) => to_js(failure),
        }
    }

    /// How many verified tokens the cache holds.
    #[wasm_bindgen(getter)]
    pub fn cached(&self) -> usize {
        self.inner.as_ref().map_or(0, |inner| inner.cached())
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
        self.checked(&token, now, None).unwrap_or_else(invalid)
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
        self.checked(&token, now, Some(&request.request))
            .unwrap_or_else(invalid)
    }

    /// The verdict on a token at `now`: the result object, frozen when the
    /// verifier keeps it.
    fn checked(
        &mut self,
        token: &str,
        now: i64,
        request: Option<&RequestInput>,
    ) -> Result<JsValue, Failure> {
        let inner = self.inner.as_mut().map_err(|failure| failure.clone())?;
        let caches = inner.caches();
        inner.check(token, now, request, |verified| {
            let result = from_json_text(&valid_json(verified));
            if caches {
                deep_freeze(&result);
            }
            result
        })
    }

    /// Adds one revoked token or a list to the revocation set, each named by
    /// its jti or its jti hash; a revoked token voids every token delegated
    /// below it. All or nothing: a malformed entry adds none.
    #[wasm_bindgen(unchecked_return_type = "RevokeResult")]
    pub fn revoke(
        &mut self,
        #[wasm_bindgen(unchecked_param_type = "string | string[]")] jtis: JsValue,
    ) -> JsValue {
        let list = match jtis.as_string() {
            Some(one) => Ok(vec![one]),
            None => from_js::<Vec<String>>(&jtis, "jtis")
                .map_err(|message| Failure::input("invalid_argument", message)),
        };
        match list.and_then(|list| mandate_facade::parse_revoked(&list)) {
            Ok(jths) => {
                // A verifier that cannot verify keeps nothing.
                if let Ok(inner) = &mut self.inner {
                    inner.revoke(jths);
                }
                to_js(&Done { ok: true })
            }
            Err(failure) => not_ok(failure),
        }
    }

    /// Replaces the key set (an object or JSON text; a key rotated in or
    /// out). Cached tokens and held status lists are dropped, as they were
    /// verified with the old keys: give the lists again. The revocation set
    /// and the memory of accepted proofs stay, so a proof is not good twice
    /// across a key refresh. An unusable key set changes nothing.
    #[wasm_bindgen(js_name = setKeys, unchecked_return_type = "SetKeysResult")]
    pub fn set_keys(
        &mut self,
        #[wasm_bindgen(unchecked_param_type = "Jwks | string")] jwks: JsValue,
    ) -> JsValue {
        let keys = match parse_jwks(&jwks) {
            Ok(keys) => keys,
            Err(failure) => return not_ok(failure),
        };
        match &mut self.inner {
            Ok(inner) => {
                inner.set_keys(keys);
                to_js(&Done { ok: true })
            }
            Err(failure) => not_ok(failure.clone()),
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
        let set = self
            .inner
            .as_mut()
            .map_err(|failure| failure.clone())
            .and_then(|inner| {
                inner.set_status_list(
                    &jwt,
                    now,
                    "this verifier checks no status: make it with checkStatus: true",
                    |held, info| {
                        to_js(&Set {
                            ok: true,
                            held,
                            info,
                        })
                    },
                )
            });
        set.unwrap_or_else(not_ok)
    }

    /// Forgets every cached token (the revocation set and status lists stay).
    #[wasm_bindgen(js_name = clearCache)]
    pub fn clear_cache(&mut self) {
        if let Ok(inner) = &mut self.inner {
            inner.clear_cache();
        }
    }
}

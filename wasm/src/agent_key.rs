//! An agent's own Ed25519 key, for tokens bound to it (RFC 9449 DPoP): made
//! from 32 random bytes (`crypto.getRandomValues` of the JavaScript host,
//! or bytes the caller gives), it signs one proof per request with core's
//! signer, which the server and every offline verifier check with core's
//! verifier. The secret stays in the wasm instance unless `exportJwk` is
//! called to store it.

use js_sys::{Function, Reflect, Uint8Array};
use mandate_core::{NewProof, NewRelay, SigningKey};
use serde::{Deserialize, Serialize};
use wasm_bindgen::prelude::*;

use crate::error_only;
use crate::js::{Failure, json_text, not_ok, now_or_clock, object_from_js, to_js};

/// `n` bytes from the host's `crypto.getRandomValues`, if it has one.
fn random_bytes<const N: usize>() -> Option<[u8; N]> {
    let crypto = Reflect::get(&js_sys::global(), &JsValue::from_str("crypto")).ok()?;
    let fill: Function = Reflect::get(&crypto, &JsValue::from_str("getRandomValues"))
        .ok()?
        .dyn_into()
        .ok()?;
    let array = Uint8Array::new_with_length(u32::try_from(N).ok()?);
    fill.call1(&crypto, &array).ok()?;
    let mut bytes = [0u8; N];
    array.copy_to(&mut bytes);
    Some(bytes)
}

fn no_randomness() -> Failure {
    Failure::input(
        "no_randomness",
        "this JavaScript host has no crypto.getRandomValues; pass 32 random bytes",
    )
}

/// What a proof is made for.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct ProofFor {
    method: String,
    url: String,
    access_token: String,
    #[serde(default)]
    now: Option<f64>,
}

/// What a relay proof is made for.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RelayFor {
    method: String,
    url: String,
    access_token: String,
    #[serde(default)]
    forwarded_proof: Option<String>,
    #[serde(default)]
    now: Option<f64>,
}

#[derive(Serialize)]
struct Made {
    ok: bool,
    proof: String,
}

/// An agent's own key.
#[wasm_bindgen]
#[derive(Debug)]
pub struct AgentKey {
    key: SigningKey,
}

#[wasm_bindgen]
impl AgentKey {
    /// A new key: from `secret` (32 random bytes) when given, else from the
    /// host's `crypto.getRandomValues`. `{ error }` when neither is usable.
    #[wasm_bindgen(unchecked_return_type = "AgentKey | { error: ErrorInfo }")]
    pub fn generate(
        #[wasm_bindgen(unchecked_optional_param_type = "Uint8Array")] secret: Option<JsValue>,
    ) -> JsValue {
        let secret = match secret {
            Some(bytes) => bytes
                .dyn_ref::<Uint8Array>()
                .filter(|array| array.length() == 32)
                .map(|array| {
                    let mut secret = [0u8; 32];
                    array.copy_to(&mut secret);
                    secret
                })
                .ok_or_else(|| Failure::input("invalid_argument", "secret must be 32 bytes")),
            None => random_bytes::<32>().ok_or_else(no_randomness),
        };
        match secret {
            Ok(secret) => JsValue::from(AgentKey {
                key: SigningKey::from_secret(&secret),
            }),
            Err(failure) => error_only(failure),
        }
    }

    /// A key stored with `exportJwk` (an object or JSON text).
    #[wasm_bindgen(js_name = fromJwk, unchecked_return_type = "AgentKey | { error: ErrorInfo }")]
    pub fn from_jwk(
        #[wasm_bindgen(unchecked_param_type = "PrivateJwk | string")] jwk: JsValue,
    ) -> JsValue {
        let text = jwk.as_string().or_else(|| json_text(&jwk));
        let key = text
            .ok_or_else(|| Failure::input("invalid_argument", "jwk must be a JWK"))
            .and_then(|text| {
                SigningKey::from_private_jwk(text.as_bytes())
                    .map_err(|e| Failure::input(e.code(), e))
            });
        match key {
            Ok(key) => JsValue::from(AgentKey { key }),
            Err(failure) => error_only(failure),
        }
    }

    /// The public key, as `holder_key` takes it when a token is issued or
    /// delegated to this agent.
    #[wasm_bindgen(getter, js_name = publicJwk, unchecked_return_type = "PublicJwk")]
    pub fn public_jwk(&self) -> JsValue {
        to_js(&self.key.holder_key().public_jwk())
    }

    /// The key's RFC 7638 thumbprint: `cnf.jkt` of the tokens bound to it.
    #[wasm_bindgen(getter)]
    pub fn jkt(&self) -> String {
        self.key.holder_key().jkt().to_string()
    }

    /// The key with its secret (`d`), to store it; `AgentKey.fromJwk` reads
    /// it back. Whoever holds this can act with every token bound to it.
    #[wasm_bindgen(js_name = exportJwk, unchecked_return_type = "PrivateJwk")]
    pub fn export_jwk(&self) -> JsValue {
        to_js(&self.key.to_private_jwk())
    }

    /// A DPoP proof for one request made with `accessToken`: the value of
    /// its `DPoP` header. `{ ok: true, proof }` or `{ ok: false, error }`.
    #[wasm_bindgen(unchecked_return_type = "ProofMade")]
    pub fn proof(
        &self,
        #[wasm_bindgen(unchecked_param_type = "ProofFor")] request: JsValue,
    ) -> JsValue {
        let made = object_from_js::<ProofFor>(&request, "request")
            .map_err(|message| Failure::input("invalid_argument", message))
            .and_then(|request| {
                let jti_random = random_bytes::<16>().ok_or_else(no_randomness)?;
                mandate_core::sign_proof(
                    &self.key,
                    &NewProof {
                        method: &request.method,
                        url: &request.url,
                        access_token: Some(&request.access_token),
                        now: now_or_clock(request.now),
                        jti_random,
                    },
                )
                .map_err(|e| Failure::input(e.code(), e))
            });
        match made {
            Ok(proof) => to_js(&Made { ok: true, proof }),
            Err(failure) => not_ok(failure),
        }
    }

    /// A gate's relay proof for one Mandate request made with a client's
    /// `accessToken` (the value of its `Mandate-Relay` header), naming the
    /// client's proof it forwards, if any (docs/oauth.md, "The gate relays
    /// the client's proof"). `{ ok: true, proof }` or `{ ok: false, error }`.
    #[wasm_bindgen(js_name = relayProof, unchecked_return_type = "ProofMade")]
    pub fn relay_proof(
        &self,
        #[wasm_bindgen(unchecked_param_type = "RelayFor")] request: JsValue,
    ) -> JsValue {
        let made = object_from_js::<RelayFor>(&request, "request")
            .map_err(|message| Failure::input("invalid_argument", message))
            .and_then(|request| {
                let jti_random = random_bytes::<16>().ok_or_else(no_randomness)?;
                mandate_core::sign_relay(
                    &self.key,
                    &NewRelay {
                        method: &request.method,
                        url: &request.url,
                        access_token: &request.access_token,
                        forwarded: request.forwarded_proof.as_deref(),
                        now: now_or_clock(request.now),
                        jti_random,
                    },
                )
                .map_err(|e| Failure::input(e.code(), e))
            });
        match made {
            Ok(proof) => to_js(&Made { ok: true, proof }),
            Err(failure) => not_ok(failure),
        }
    }
}

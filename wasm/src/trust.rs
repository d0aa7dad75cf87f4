//! The trust graph, offline: an organisation's trust scores computed by
//! core's rule (`trustScores`), and a signed trust statement verified
//! against the server's key set (`verifyTrustStatement`).
//!
//! Results are `{ scores }` or `{ error }` (stage `input`), and
//! `{ valid: true, claims }` or `{ valid: false, error }` with core's code
//! (stage `trust`). Nothing here signs.

use std::collections::BTreeMap;

use mandate_core::trust::{TrustGraph, TrustParams, TrustScore};
use mandate_core::{AgentId, TrustStatementClaims};
use serde::{Deserialize, Serialize};
use wasm_bindgen::prelude::*;

use crate::js::{
    Failure, Stage, invalid, now_or_clock, object_from_js, options_from_js, string_arg, to_js,
};
use crate::{error_only, parse_jwks};

/// Options of `trustScores`.
#[derive(Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
struct ScoreOptions {
    now: Option<f64>,
    params: Option<TrustParams>,
}

fn try_scores(
    graph: &JsValue,
    options: Option<JsValue>,
) -> Result<BTreeMap<AgentId, TrustScore>, Failure> {
    let options: ScoreOptions = options_from_js(options, "options")?;
    let graph: TrustGraph = object_from_js(graph, "graph")
        .map_err(|message| Failure::input("invalid_graph", message))?;
    let params = options.params.unwrap_or_default();
    mandate_core::trust_scores(&graph, now_or_clock(options.now), &params)
        .map_err(|error| Failure::input(error.code(), &error))
}

/// Every agent's trust in an organisation's graph (`{ agents, vouches }`,
/// the server's inputs), at `now` (default the JavaScript clock), with the
/// default parameters or those given: `{ scores: { [agent_id]: TrustScore } }`.
#[wasm_bindgen(js_name = trustScores, unchecked_return_type = "TrustScoresResult")]
pub fn trust_scores(
    #[wasm_bindgen(unchecked_param_type = "TrustGraph")] graph: JsValue,
    #[wasm_bindgen(unchecked_optional_param_type = "TrustScoresOptions")] options: Option<JsValue>,
) -> JsValue {
    #[derive(Serialize)]
    struct Scores {
        scores: BTreeMap<AgentId, TrustScore>,
    }
    match try_scores(&graph, options) {
        Ok(scores) => to_js(&Scores { scores }),
        Err(failure) => error_only(failure),
    }
}

/// Options of `verifyTrustStatement`.
#[derive(Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields, rename_all = "camelCase")]
struct StatementOptions {
    now: Option<f64>,
    leeway_seconds: Option<u64>,
}

fn try_verify(
    jwt: &JsValue,
    jwks: &JsValue,
    options: Option<JsValue>,
) -> Result<TrustStatementClaims, Failure> {
    let jwt = string_arg(jwt, "jwt")?;
    let options: StatementOptions = options_from_js(options, "options")?;
    let keys = parse_jwks(jwks)?;
    mandate_core::verify_trust_statement(
        &jwt,
        &keys,
        now_or_clock(options.now),
        options
            .leeway_seconds
            .unwrap_or(mandate_core::limits::DEFAULT_LEEWAY_SECONDS),
    )
    .map(|statement| statement.claims)
    .map_err(|error| Failure::new(Stage::Trust, error.code(), &error))
}

/// Verifies a signed trust statement (`trust-statement+jwt`, from
/// `GET /v1/trust/agents/{agent_id}/statement`) against the server's key
/// set at `now` (default the JavaScript clock), with the strictness of token
/// verification: `{ valid: true, claims }` or `{ valid: false, error }`.
#[wasm_bindgen(js_name = verifyTrustStatement, unchecked_return_type = "TrustStatementResult")]
pub fn verify_trust_statement(
    #[wasm_bindgen(unchecked_param_type = "string")] jwt: JsValue,
    #[wasm_bindgen(unchecked_param_type = "Jwks | string")] jwks: JsValue,
    #[wasm_bindgen(unchecked_optional_param_type = "TrustStatementCheck")] options: Option<JsValue>,
) -> JsValue {
    #[derive(Serialize)]
    struct Valid {
        valid: bool,
        claims: TrustStatementClaims,
    }
    match try_verify(&jwt, &jwks, options) {
        Ok(claims) => to_js(&Valid {
            valid: true,
            claims,
        }),
        Err(failure) => invalid(failure),
    }
}

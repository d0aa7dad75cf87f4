//! # mandate-wasm
//!
//! The wasm-bindgen façade over `mandate-core` that the npm package
//! `mandate-sdk` ships to browsers, edge workers and Node. It owns no rule:
//! every verdict, error code and number comes from a core function. This crate
//! only converts JavaScript values in and out, and reads the JavaScript clock
//! when a caller passes no `now`.
//!
//! Bad input never throws: an exception, or a panic that would abort the
//! host page, is replaced by a plain object naming the problem with core's
//! stable code. Function names are camelCase; the objects they return carry
//! the snake_case members of the server's JSON, because they are that JSON.
//!
//! It also holds an agent's own key ([`AgentKey`]): made from random bytes
//! the JavaScript host draws, it signs DPoP proofs with core's signer, so a
//! bound token's proofs are made and checked by the same code.
//!
//! Not here: the HTTP client (hand-written TypeScript in `ts/`), and signing
//! tokens (the server's business).

#![cfg_attr(
    not(test),
    deny(
        clippy::unwrap_used,
        clippy::expect_used,
        clippy::panic,
        clippy::indexing_slicing,
        clippy::unreachable,
        clippy::todo
    )
)]

mod agent_key;
mod js;
mod log;
mod policy;
mod trust;
mod verifier;
mod webhook;

use std::cell::RefCell;
use std::collections::BTreeSet;
use std::str::FromStr as _;

use mandate_core::{
    Action, Claims, Grant, Header, Jkt, Jth, Jwks, JwksError, Outcome, ProofRequest, RecordError,
    RecordRow, ReputationCounts, Resource, Scope, Status, VerifiedProof, VerifiedStatusList,
    VerifiedToken, VerifyOptions, WorkflowSummary, check_args,
};
use serde::{Deserialize, Serialize};
use wasm_bindgen::prelude::*;

use mandate_facade::scope::{self, GrantInput, Reason, ViolationOut};
use mandate_facade::{
    Binding, Failure, ListInfo, RequestInput, StatusListCheck, StatusOptionFault, StatusOptions,
    chain_failure, dpop_failure, jwks_failure, parse_revoked, scope_failure, status_list_failure,
    verify_failure, verify_options,
};

use crate::js::{
    bytes_arg, from_js, from_json_text, has_member, invalid, json_text, member, not_ok,
    now_or_clock, object_from_js, options_from_js, string_arg, to_js,
};

pub use crate::agent_key::AgentKey;
pub use crate::log::{
    parse_log_leaf, verify_checkpoint, verify_consistency, verify_cosignature, verify_log_proof,
    verify_witnessed,
};
pub use crate::policy::evaluate_policy;
pub use crate::trust::{trust_scores, verify_trust_statement};
pub use crate::verifier::Verifier;
pub use crate::webhook::verify_webhook_pairs;

#[wasm_bindgen(typescript_custom_section)]
const TYPES: &str = include_str!("types.d.ts");

/// `{ valid: true, header, claims }` as JSON text.
fn valid_json(token: &VerifiedToken) -> String {
    #[derive(Serialize)]
    struct Valid<'a> {
        valid: bool,
        header: &'a Header,
        claims: &'a Claims,
    }
    let valid = Valid {
        valid: true,
        header: &token.header,
        claims: &token.claims,
    };
    // Serialising core's claims cannot fail; an empty text parses to `null`.
    serde_json::to_string(&valid).unwrap_or_default()
}

thread_local! {
    /// The key set parsed last, with the JSON text it was parsed from. A
    /// caller verifying many tokens against one key set with `verifyToken`
    /// pays for checking its keys once; the text is the key, so a key set
    /// changed in place is parsed again.
    static LAST_JWKS: RefCell<Option<(String, Jwks)>> = const { RefCell::new(None) };
}

/// Parses a key set given as an object or as JSON text.
fn parse_jwks(jwks: &JsValue) -> Result<Jwks, Failure> {
    let text = jwks
        .as_string()
        .or_else(|| json_text(jwks))
        .ok_or_else(|| jwks_failure(&JwksError::Malformed))?;
    let last = LAST_JWKS.with_borrow(|last| {
        last.as_ref()
            .filter(|(last_text, _)| *last_text == text)
            .map(|(_, keys)| keys.clone())
    });
    if let Some(keys) = last {
        return Ok(keys);
    }
    let keys = Jwks::parse(text.as_bytes()).map_err(|e| jwks_failure(&e))?;
    LAST_JWKS.set(Some((text, keys.clone())));
    Ok(keys)
}

/// Which function options are read for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Use {
    /// `verifyToken` and `verifyChain`.
    Token,
    /// `new Verifier`.
    Verifier,
    /// `verifyStatusList`.
    StatusList,
}

/// Options of `verifyToken`, `verifyChain`, `new Verifier` and
/// `verifyStatusList`, read by one parser (one parser is also less code in
/// the module than one per function). `now` is not an option of `new
/// Verifier` (it is an argument of `verify`); `cacheSize` and `checkStatus`
/// are of `new Verifier` only; `verifyStatusList` takes `uri` and `now` only.
#[derive(Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields, rename_all = "camelCase")]
struct Options {
    now: Option<f64>,
    leeway_seconds: Option<u64>,
    issuer: Option<String>,
    revoked: Vec<String>,
    cache_size: Option<usize>,
    /// `verifyToken` only: the request a bound token came with.
    request: Option<RequestInput>,
    /// `verifyToken` only: check a bound token without its proof, to show
    /// it; never to authorize a request with it.
    skip_proof_of_possession: bool,
    /// `verifyToken` only: the status list token to check the token's
    /// status in.
    status_list: Option<String>,
    /// `new Verifier` only: refuse a token whose status cannot be checked
    /// in a list given to `setStatusList`.
    check_status: bool,
    /// With `statusList` or `checkStatus`: the oldest list (by its `iat`)
    /// accepted, in seconds.
    max_staleness_seconds: Option<u64>,
    /// `verifyStatusList` only: the `uri` of the token whose status is
    /// wanted; the list's `sub` must equal it.
    uri: Option<String>,
    /// With `statusList` or `checkStatus`: the origins the issuer serves
    /// status lists from; a token (or a list) naming another is refused
    /// `status_origin_not_allowed`.
    status_origins: Option<Vec<String>>,
}

impl Options {
    /// The options, and with `statusList` or `checkStatus` how a status is
    /// checked (mandate-facade's rules of the status options).
    fn read(
        value: Option<JsValue>,
        purpose: Use,
    ) -> Result<(Options, Option<StatusOptions>), Failure> {
        let mut options: Options = options_from_js(value, "options")?;
        let for_token_only = options.request.is_some()
            || options.skip_proof_of_possession
            || options.status_list.is_some();
        let for_tokens = options.leeway_seconds.is_some()
            || options.issuer.is_some()
            || !options.revoked.is_empty()
            || options.cache_size.is_some()
            || for_token_only
            || options.status_list.is_some()
            || options.check_status
            || options.max_staleness_seconds.is_some()
            || options.status_origins.is_some();
        let stray = match purpose {
            Use::StatusList if for_tokens => {
                Some("verifyStatusList takes uri and now; verify the token with verifyToken")
            }
            Use::StatusList => None,
            _ if options.uri.is_some() => Some("uri is an option of verifyStatusList"),
            Use::Verifier if options.now.is_some() => Some("now is an argument of verifier.verify"),
            Use::Token if options.cache_size.is_some() => {
                Some("cacheSize is an option of new Verifier")
            }
            Use::Token if options.check_status => Some(
                "checkStatus is an option of new Verifier; give verifyToken the list as statusList",
            ),
            Use::Verifier if for_token_only => Some(
                "request, skipProofOfPossession and statusList are options of verifyToken; use verifier.verifyRequest and verifier.setStatusList",
            ),
            _ if options.request.is_some() && options.skip_proof_of_possession => {
                Some("request and skipProofOfPossession exclude each other")
            }
            _ => None,
        };
        let status = match stray {
            Some(message) => Err(message),
            None => mandate_facade::status_options(
                options.status_list.is_some() || options.check_status,
                options.max_staleness_seconds,
                options.status_origins.take(),
            )
            .map_err(|fault| match fault {
                StatusOptionFault::StalenessWithoutStatus => {
                    "maxStalenessSeconds applies to status lists: give statusList (verifyToken) or checkStatus (new Verifier)"
                }
                StatusOptionFault::OriginsWithoutStatus => {
                    "statusOrigins applies to status lists: give statusList (verifyToken) or checkStatus (new Verifier)"
                }
                StatusOptionFault::NotOrigins => {
                    "statusOrigins holds origins: http(s)://host[:port], without a path"
                }
            }),
        };
        match status {
            Err(message) => Err(Failure::input("invalid_options", message)),
            Ok(status) => Ok((options, status)),
        }
    }
}

/// The options read, the revocation set parsed and the key set prepared.
pub(crate) struct Checks {
    keys: Jwks,
    now: Option<f64>,
    options: VerifyOptions,
    revoked: BTreeSet<Jth>,
    cache_size: usize,
    request: Option<RequestInput>,
    skip_proof_of_possession: bool,
    status_list: Option<String>,
    /// With `statusList` or `checkStatus`, how a status is checked.
    status: Option<StatusOptions>,
}

impl Checks {
    fn read(jwks: &JsValue, options: Option<JsValue>, purpose: Use) -> Result<Checks, Failure> {
        let (options, status) = Options::read(options, purpose)?;
        Ok(Checks {
            revoked: parse_revoked(&options.revoked)?,
            keys: parse_jwks(jwks)?,
            now: options.now,
            cache_size: options.cache_size.unwrap_or(0),
            options: verify_options(options.leeway_seconds, options.issuer),
            request: options.request,
            skip_proof_of_possession: options.skip_proof_of_possession,
            status_list: options.status_list,
            status,
        })
    }
}

fn try_verify_token(
    token: &JsValue,
    jwks: &JsValue,
    options: Option<JsValue>,
) -> Result<VerifiedToken, Failure> {
    let token = string_arg(token, "token")?;
    let checks = Checks::read(jwks, options, Use::Token)?;
    let status = checks
        .status_list
        .as_deref()
        .zip(checks.status.as_ref())
        .map(|(list, options)| StatusListCheck { list, options });
    let binding = match &checks.request {
        _ if checks.skip_proof_of_possession => Binding::Skip,
        Some(request) => Binding::Request(request),
        None => Binding::Bearer,
    };
    mandate_facade::verify_token(
        &token,
        &checks.keys,
        now_or_clock(checks.now),
        &checks.options,
        &checks.revoked,
        status,
        binding,
    )
}

/// Verifies a compact token against a key set (an object or JSON text):
/// signature, header, claims, issuer and lifetime, exactly as the server
/// does; with `revoked`, also that neither the token nor an ancestor is
/// revoked; with `statusList` (a status list token, verified against the
/// same key set for the token's status uri), that the token's status is
/// VALID in it, refusing a list older than `maxStalenessSeconds` (a token
/// without a status claim passes). A bound token is refused
/// (`dpop_required`) unless `request` carries its proof for that request
/// (no replay check: a `Verifier` remembers proofs), or
/// `skipProofOfPossession` says it is only shown.
#[wasm_bindgen(js_name = verifyToken, unchecked_return_type = "VerifyResult")]
pub fn verify_token(
    #[wasm_bindgen(unchecked_param_type = "string")] token: JsValue,
    #[wasm_bindgen(unchecked_param_type = "Jwks | string")] jwks: JsValue,
    #[wasm_bindgen(unchecked_optional_param_type = "VerifyOptions")] options: Option<JsValue>,
) -> JsValue {
    match try_verify_token(&token, &jwks, options) {
        Ok(verified) => from_json_text(&valid_json(&verified)),
        Err(failure) => invalid(failure),
    }
}

/// Reads a token's header and claims **without checking its signature,
/// issuer or lifetime**. For display and debugging only: nothing read this
/// way may be trusted.
#[wasm_bindgen(js_name = decodeTokenUnverified, unchecked_return_type = "DecodeResult")]
pub fn decode_token_unverified(
    #[wasm_bindgen(unchecked_param_type = "string")] token: JsValue,
) -> JsValue {
    #[derive(Serialize)]
    struct Decoded<'a> {
        ok: bool,
        header: &'a Header,
        claims: &'a Claims,
    }
    let decoded = string_arg(&token, "token")
        .and_then(|token| mandate_core::decode_unverified(&token).map_err(|e| verify_failure(&e)));
    match decoded {
        Ok(token) => to_js(&Decoded {
            ok: true,
            header: &token.header,
            claims: &token.claims,
        }),
        Err(failure) => not_ok(failure),
    }
}

fn try_verify_chain(
    tokens: &JsValue,
    jwks: &JsValue,
    options: Option<JsValue>,
) -> Result<Vec<VerifiedToken>, Failure> {
    let tokens: Vec<String> =
        from_js(tokens, "tokens").map_err(|message| Failure::input("invalid_argument", message))?;
    let checks = Checks::read(jwks, options, Use::Token)?;
    if checks.request.is_some() || checks.skip_proof_of_possession || checks.status_list.is_some() {
        return Err(Failure::input(
            "invalid_options",
            "request, skipProofOfPossession and statusList are options of verifyToken",
        ));
    }
    let tokens: Vec<&str> = tokens.iter().map(String::as_str).collect();
    let now = now_or_clock(checks.now);
    mandate_core::verify_chain(&tokens, &checks.keys, now, &checks.options, |jth| {
        checks.revoked.contains(jth)
    })
    .map_err(|e| chain_failure(&e))
}

/// Verifies a delegation chain given root first: every token verifies, each
/// names the previous as its parent and is no wider, depths and provenance
/// agree, and no token (nor any ancestor a token names) is in `revoked`.
#[wasm_bindgen(js_name = verifyChain, unchecked_return_type = "ChainResult")]
pub fn verify_chain(
    #[wasm_bindgen(unchecked_param_type = "string[]")] tokens: JsValue,
    #[wasm_bindgen(unchecked_param_type = "Jwks | string")] jwks: JsValue,
    #[wasm_bindgen(unchecked_optional_param_type = "VerifyOptions")] options: Option<JsValue>,
) -> JsValue {
    #[derive(Serialize)]
    struct Link<'a> {
        header: &'a Header,
        claims: &'a Claims,
    }
    #[derive(Serialize)]
    struct Valid<'a> {
        valid: bool,
        tokens: Vec<Link<'a>>,
    }
    match try_verify_chain(&tokens, &jwks, options) {
        Ok(chain) => to_js(&Valid {
            valid: true,
            tokens: chain
                .iter()
                .map(|token| Link {
                    header: &token.header,
                    claims: &token.claims,
                })
                .collect(),
        }),
        Err(failure) => invalid(failure),
    }
}

fn try_verify_status_list(
    jwt: &JsValue,
    jwks: &JsValue,
    options: Option<JsValue>,
) -> Result<VerifiedStatusList, Failure> {
    let jwt = string_arg(jwt, "jwt")?;
    let (options, _) = Options::read(options, Use::StatusList)?;
    let keys = parse_jwks(jwks)?;
    mandate_core::verify_status_list(
        &jwt,
        &keys,
        now_or_clock(options.now),
        options.uri.as_deref(),
    )
    .map_err(|e| status_list_failure(&e))
}

/// Verifies a status list token (IETF Token Status List, `statuslist+jwt`)
/// against a key set at `now`, with the strictness of token verification;
/// with `uri`, its `sub` must equal it (the `uri` of the token whose status
/// is wanted). Answers what the list says about itself: `uri`, `kid`,
/// `iat`, `exp`, `ttl`, `bits` and `size` (entries). To check a token's
/// status, give the list to `verifyToken` (`statusList`) or to a
/// `Verifier` (`setStatusList`).
#[wasm_bindgen(js_name = verifyStatusList, unchecked_return_type = "StatusListResult")]
pub fn verify_status_list(
    #[wasm_bindgen(unchecked_param_type = "string")] jwt: JsValue,
    #[wasm_bindgen(unchecked_param_type = "Jwks | string")] jwks: JsValue,
    #[wasm_bindgen(unchecked_optional_param_type = "StatusListCheck")] options: Option<JsValue>,
) -> JsValue {
    #[derive(Serialize)]
    struct Valid<'a> {
        valid: bool,
        #[serde(flatten)]
        info: ListInfo<'a>,
    }
    match try_verify_status_list(&jwt, &jwks, options) {
        Ok(list) => to_js(&Valid {
            valid: true,
            info: ListInfo::of(&list),
        }),
        Err(failure) => invalid(failure),
    }
}

/// A scope as JavaScript gives it, before core parses its entries.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ScopeInput {
    resources: Vec<String>,
    actions: Vec<String>,
}

/// The scope of a `{ resources, actions }` object or of a claims object.
fn scope_of(value: &JsValue) -> Result<Scope, Failure> {
    if !value.is_object() {
        return Err(Failure::input(
            "invalid_argument",
            "expected a scope { resources, actions } or token claims",
        ));
    }
    let scope = if has_member(value, "svc_scope") {
        member(value, "svc_scope")
    } else {
        value.clone()
    };
    let input: ScopeInput = object_from_js(&scope, "scope")
        .map_err(|message| Failure::input("invalid_scope", message))?;
    Scope::parse(&input.resources, &input.actions).map_err(|e| scope_failure(&e))
}

/// The decision, in the order core's vectors parse: scope, action,
/// resource; then the token's argument rules over `args`.
fn try_permit(
    scope_or_claims: &JsValue,
    action: &JsValue,
    resource: &JsValue,
    args: Option<&JsValue>,
) -> Result<Result<(), Reason>, Failure> {
    let scope = scope_of(scope_or_claims)?;
    let action = Action::parse(&string_arg(action, "action")?).map_err(|e| scope_failure(&e))?;
    let resource =
        Resource::parse(&string_arg(resource, "resource")?).map_err(|e| scope_failure(&e))?;
    if let Err(denial) = scope.check(&action, &resource) {
        return Ok(Err(Reason::scope(denial)));
    }
    let rules = policy::rules_of(scope_or_claims)?;
    let args = policy::args_of(args)?;
    Ok(check_args(&rules, &action, &resource, args.as_ref()).map_err(Reason::args))
}

/// Whether a scope (or token claims: their scope and argument rules)
/// allows `action` on `resource` with `args`, and if not, why.
#[wasm_bindgen(unchecked_return_type = "PermitResult")]
pub fn permits(
    #[wasm_bindgen(js_name = scopeOrClaims, unchecked_param_type = "Scope | Claims")]
    scope_or_claims: JsValue,
    #[wasm_bindgen(unchecked_param_type = "string")] action: JsValue,
    #[wasm_bindgen(unchecked_param_type = "string")] resource: JsValue,
    #[wasm_bindgen(unchecked_optional_param_type = "Record<string, unknown> | string")]
    args: Option<JsValue>,
) -> JsValue {
    #[derive(Serialize)]
    struct Permit {
        ok: bool,
        #[serde(skip_serializing_if = "Option::is_none")]
        reason: Option<Reason>,
    }
    match try_permit(&scope_or_claims, &action, &resource, args.as_ref()) {
        Ok(Ok(())) => to_js(&Permit {
            ok: true,
            reason: None,
        }),
        Ok(Err(reason)) => to_js(&Permit {
            ok: false,
            reason: Some(reason),
        }),
        Err(failure) => not_ok(failure),
    }
}

/// The grant members of token claims (`svc_scope`, `svc_constraints`,
/// `svc_policy`, `exp`) as a grant object; the other claims are left out.
fn claims_grant(claims: &JsValue) -> JsValue {
    let scope = member(claims, "svc_scope");
    let grant = js_sys::Object::new();
    for (name, value) in [
        ("resources", member(&scope, "resources")),
        ("actions", member(&scope, "actions")),
        ("constraints", member(claims, "svc_constraints")),
        ("policy", member(claims, "svc_policy")),
        ("exp", member(claims, "exp")),
        ("aud", member(claims, "aud")),
    ] {
        // Setting a member of a fresh plain object cannot fail.
        let _ = js_sys::Reflect::set(&grant, &JsValue::from_str(name), &value);
    }
    grant.into()
}

/// The grant of a grant object or of token claims.
fn grant_of(value: &JsValue, name: &str) -> Result<Grant, Failure> {
    if !value.is_object() {
        return Err(Failure::input(
            "invalid_argument",
            format!("{name} must be a grant or token claims"),
        ));
    }
    let (value, code) = if has_member(value, "svc_scope") {
        (claims_grant(value), "invalid_claims")
    } else {
        (value.clone(), "invalid_grant")
    };
    let input: GrantInput =
        object_from_js(&value, name).map_err(|message| Failure::input(code, message))?;
    input.grant()
}

/// Checks that `child` grants nothing `parent` does not, listing every way it
/// is wider. Each side is a grant object or token claims.
#[wasm_bindgen(js_name = checkNarrowing, unchecked_return_type = "NarrowingResult")]
pub fn check_narrowing(
    #[wasm_bindgen(unchecked_param_type = "Grant | Claims")] child: JsValue,
    #[wasm_bindgen(unchecked_param_type = "Grant | Claims")] parent: JsValue,
) -> JsValue {
    #[derive(Serialize)]
    struct Narrowing {
        ok: bool,
        violations: Vec<ViolationOut>,
        #[serde(skip_serializing_if = "Option::is_none")]
        error: Option<Failure>,
    }
    let grants = grant_of(&child, "child").and_then(|c| Ok((c, grant_of(&parent, "parent")?)));
    let result = match grants {
        Err(error) => Narrowing {
            ok: false,
            violations: Vec::new(),
            error: Some(error),
        },
        Ok((child, parent)) => {
            let violations = scope::violations(&child, &parent);
            Narrowing {
                ok: violations.is_empty(),
                violations,
                error: None,
            }
        }
    };
    to_js(&result)
}

/// What `verifyProof` checks a proof against.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct ProofInput {
    method: String,
    url: String,
    access_token: String,
    jkt: Jkt,
    #[serde(default)]
    now: Option<f64>,
}

fn try_verify_proof(proof: &JsValue, input: &JsValue) -> Result<VerifiedProof, Failure> {
    let proof = string_arg(proof, "proof")?;
    let input: ProofInput = object_from_js(input, "request")
        .map_err(|message| Failure::input("invalid_argument", message))?;
    mandate_core::verify_proof(
        &proof,
        &input.access_token,
        &input.jkt,
        &ProofRequest {
            method: &input.method,
            url: &input.url,
            now: now_or_clock(input.now),
        },
    )
    .map_err(|e| dpop_failure(&e))
}

/// Checks a DPoP proof (RFC 9449) sent with `accessToken`, a token bound to
/// `jkt`, against a request's `method` and `url` at `now`: every rule but
/// replay, which needs memory (`verifier.verifyRequest` keeps one).
#[wasm_bindgen(js_name = verifyProof, unchecked_return_type = "ProofResult")]
pub fn verify_proof(
    #[wasm_bindgen(unchecked_param_type = "string")] proof: JsValue,
    #[wasm_bindgen(unchecked_param_type = "ProofCheck")] request: JsValue,
) -> JsValue {
    #[derive(Serialize)]
    struct Valid<'a> {
        valid: bool,
        jti: &'a str,
        iat: i64,
        jkt: &'a Jkt,
    }
    match try_verify_proof(&proof, &request) {
        Ok(proof) => to_js(&Valid {
            valid: true,
            jti: &proof.jti,
            iat: proof.iat,
            jkt: &proof.jkt,
        }),
        Err(failure) => invalid(failure),
    }
}

/// The grant a delegation request gets under `parent`: the limits and
/// frameworks it leaves out are inherited, and anything wider is refused
/// with every violation, as the server decides it.
#[wasm_bindgen(js_name = delegatedGrant, unchecked_return_type = "DelegatedGrantResult")]
pub fn delegated_grant(
    #[wasm_bindgen(unchecked_param_type = "Grant")] request: JsValue,
    #[wasm_bindgen(unchecked_param_type = "Grant | Claims")] parent: JsValue,
) -> JsValue {
    let grants = grant_of(&request, "request").and_then(|r| Ok((r, grant_of(&parent, "parent")?)));
    match grants {
        Ok((request, parent)) => to_js(&scope::delegated_grant(request, &parent)),
        Err(failure) => not_ok(failure),
    }
}

/// SHA-256 of a string (as UTF-8) or of bytes, as `sha256:<hex>`: the form of
/// `result_hash`. `null` for anything else.
#[wasm_bindgen(js_name = sha256Ref, unchecked_return_type = "string | null")]
pub fn sha256_ref(
    #[wasm_bindgen(unchecked_param_type = "string | Uint8Array | ArrayBuffer")] data: JsValue,
) -> JsValue {
    match bytes_arg(&data) {
        Some(bytes) => JsValue::from_str(mandate_core::sha256_ref(&bytes).as_str()),
        None => JsValue::NULL,
    }
}

/// Whether a token's `aud` names the resource server whose own identifier
/// (its protected-resource metadata `resource`) is `resource`: equal after
/// RFC 3986 normalisation (scheme and host case, default port, empty path,
/// percent-encoding, dot segments), the query exact. False when `aud` is not
/// a resource URI Mandate takes.
#[wasm_bindgen(js_name = audienceMatches)]
pub fn audience_matches(aud: &str, resource: &str) -> bool {
    mandate_core::Audience::parse(aud).is_ok_and(|audience| audience.matches(resource))
}

/// `{ error }`, the refusal of the functions that otherwise return numbers
/// or objects.
pub(crate) fn error_only(error: Failure) -> JsValue {
    #[derive(Serialize)]
    struct ErrorOnly {
        error: Failure,
    }
    to_js(&ErrorOnly { error })
}

/// Record counts as JavaScript holds them: doubles, which past 2^53 are
/// only close to the count they stand for.
#[derive(Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
struct CountsInput {
    successes: f64,
    failures: f64,
    pending: f64,
    denied_requests: f64,
    approved: f64,
    flagged: f64,
    rejected: f64,
}

impl CountsInput {
    /// Core's counts: whole numbers, not negative; a double above `u64::MAX`
    /// (the rounding of a count near it) saturates.
    fn counts(&self) -> Result<ReputationCounts, Failure> {
        let count = |name: &str, value: f64| {
            if value >= 0.0 && value.fract() == 0.0 {
                Ok(value as u64)
            } else {
                Err(Failure::input(
                    "invalid_counts",
                    format!("counts: {name} must be a whole number, not negative"),
                ))
            }
        };
        Ok(ReputationCounts {
            successes: count("successes", self.successes)?,
            failures: count("failures", self.failures)?,
            pending: count("pending", self.pending)?,
            denied_requests: count("denied_requests", self.denied_requests)?,
            approved: count("approved", self.approved)?,
            flagged: count("flagged", self.flagged)?,
            rejected: count("rejected", self.rejected)?,
        })
    }
}

/// An agent's reputation from its record counts, the numbers the server
/// reports at `GET /v1/vat/reputation/{agent_id}`.
#[wasm_bindgen(unchecked_return_type = "Reputation | { error: ErrorInfo }")]
pub fn reputation(
    #[wasm_bindgen(unchecked_param_type = "ReputationCounts")] counts: JsValue,
) -> JsValue {
    let counts = object_from_js::<CountsInput>(&counts, "counts")
        .map_err(|message| Failure::input("invalid_counts", message))
        .and_then(|input| input.counts());
    match counts {
        Ok(counts) => to_js(&mandate_core::reputation(&counts)),
        Err(failure) => error_only(failure),
    }
}

/// The members of a record a workflow summary reads. They are read one by
/// one and the others ignored, so records from the server's
/// `GET /v1/vat/aar` can be passed as they are.
#[derive(Debug)]
struct RecordInput {
    agent_id: String,
    action: String,
    status: Status,
    result: Option<Outcome>,
    provenance_ref: Option<String>,
}

impl RecordInput {
    fn read(record: &JsValue, index: usize) -> Result<RecordInput, Failure> {
        let invalid = |message: String| Failure::input("invalid_records", message);
        if !record.is_object() {
            return Err(invalid(format!("records[{index}] is not an object")));
        }
        let text = |name: &str| {
            let value = member(record, name);
            if value.is_undefined() || value.is_null() {
                return Ok(None);
            }
            value
                .as_string()
                .map(Some)
                .ok_or_else(|| invalid(format!("records[{index}].{name} must be a string")))
        };
        let required = |name: &str| {
            text(name)?.ok_or_else(|| invalid(format!("records[{index}] has no {name}")))
        };
        let record_failure = |e: RecordError| Failure::input(e.code(), e);
        Ok(RecordInput {
            agent_id: required("agent_id")?,
            action: required("action")?,
            status: Status::from_str(&required("status")?).map_err(record_failure)?,
            result: text("result")?
                .map(|result| Outcome::from_str(&result))
                .transpose()
                .map_err(record_failure)?,
            provenance_ref: text("provenance_ref")?,
        })
    }
}

fn try_summarize(
    records: &JsValue,
    provenance_ref: Option<JsValue>,
) -> Result<WorkflowSummary, Failure> {
    if !js_sys::Array::is_array(records) {
        return Err(Failure::input(
            "invalid_records",
            "records must be an array",
        ));
    }
    // Read through Reflect, which reports a throwing getter instead of throwing.
    let length = member(records, "length").as_f64().unwrap_or(0.0) as u32;
    let records = (0..length)
        .map(|index| {
            let record = js_sys::Reflect::get_u32(records, index).unwrap_or(JsValue::UNDEFINED);
            RecordInput::read(&record, index as usize)
        })
        .collect::<Result<Vec<_>, _>>()?;
    let provenance = provenance_ref
        .map(|value| string_arg(&value, "provenanceRef"))
        .transpose()?;
    let rows: Vec<RecordRow<'_>> = records
        .iter()
        .map(|record| RecordRow {
            agent_id: &record.agent_id,
            action: &record.action,
            status: record.status,
            result: record.result,
            provenance_ref: record.provenance_ref.as_deref(),
        })
        .collect();
    mandate_core::summarize_records(&rows, provenance.as_deref())
        .map_err(|e| Failure::input(e.code(), e))
}

/// The summary of one workflow from its records, the numbers the server
/// reports at `GET /v1/vat/aar/provenance/{provenance_ref}`. The workflow is
/// `provenanceRef`, or else the records' own; records of another workflow
/// are refused.
#[wasm_bindgen(js_name = summarizeWorkflow, unchecked_return_type = "WorkflowSummary | { error: ErrorInfo }")]
pub fn summarize_workflow(
    #[wasm_bindgen(unchecked_param_type = "SummaryRecord[]")] records: JsValue,
    #[wasm_bindgen(js_name = provenanceRef, unchecked_optional_param_type = "string")]
    provenance_ref: Option<JsValue>,
) -> JsValue {
    match try_summarize(&records, provenance_ref) {
        Ok(summary) => to_js(&summary),
        Err(failure) => error_only(failure),
    }
}

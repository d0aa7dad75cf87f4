//! Tokens: one verified with the binding rule and its status, a chain,
//! a status list, a DPoP proof, and a token read without verification.

use std::collections::BTreeSet;

use mandate_core::{
    ChainError, ChainFault, Claims, DpopError, Header, Jkt, Jth, Jwks, ProofRequest, StatusUri,
    TokenStatusError, VerifiedProof, VerifiedStatusList, VerifiedToken, VerifyOptions,
};
use pyo3::prelude::*;
use serde::{Deserialize, Serialize};

use crate::convert::{
    Answer, flag_arg, json_or_text, now_arg, object_arg, optional_string, seconds_arg, string_arg,
    strings_arg, to_py,
};
use crate::error::{Failure, Stage};

/// Parses a key set given as a dict or as JSON text.
pub(crate) fn parse_jwks(jwks: &Bound<'_, PyAny>) -> PyResult<Jwks> {
    let text = json_or_text(jwks, "jwks").map_err(|_| {
        Failure::new(
            Stage::Jwks,
            "malformed_jwks",
            "jwks must be a dict or JSON text",
        )
    })?;
    Jwks::parse(text.as_bytes()).map_err(|e| Failure::new(Stage::Jwks, e.code(), &e).into())
}

/// The revocation set: jtis or jti hashes (core's rule).
pub(crate) fn parse_revoked(revoked: Option<&Bound<'_, PyAny>>) -> PyResult<BTreeSet<Jth>> {
    let Some(revoked) = revoked.filter(|r| !r.is_none()) else {
        return Ok(BTreeSet::new());
    };
    let entries = strings_arg(revoked, "revoked")?;
    mandate_core::revocation_set(&entries).map_err(|e| Failure::input(e.code(), e).into())
}

/// Core's verification options with the caller's overrides.
pub(crate) fn verify_options(
    leeway_seconds: Option<&Bound<'_, PyAny>>,
    issuer: Option<&Bound<'_, PyAny>>,
) -> PyResult<VerifyOptions> {
    let defaults = VerifyOptions::default();
    Ok(VerifyOptions {
        leeway_seconds: seconds_arg(leeway_seconds, "leeway_seconds", "invalid_options")?
            .unwrap_or(defaults.leeway_seconds),
        issuer: optional_string(issuer, "issuer")?,
    })
}

/// The origins a token's status list must be on, when given: each
/// `http(s)://host[:port]`.
pub(crate) fn status_origins(value: Option<&Bound<'_, PyAny>>) -> PyResult<Option<Vec<String>>> {
    let Some(value) = value.filter(|v| !v.is_none()) else {
        return Ok(None);
    };
    let origins = strings_arg(value, "status_origins")?;
    if !origins.iter().all(|o| StatusUri::is_origin(o)) {
        return Err(Failure::input(
            "invalid_options",
            "status_origins holds origins: http(s)://host[:port], without a path",
        )
        .into());
    }
    Ok(Some(origins))
}

pub(crate) fn verify_failure(error: &mandate_core::VerifyError) -> Failure {
    Failure::new(Stage::Verify, error.code(), error)
}

pub(crate) fn dpop_failure(error: &DpopError) -> Failure {
    Failure::new(Stage::Dpop, error.code(), error)
}

pub(crate) fn status_failure(error: &mandate_core::StatusCheckError) -> Failure {
    Failure::new(Stage::Status, error.code(), error)
}

pub(crate) fn status_list_failure(error: &mandate_core::StatusListError) -> Failure {
    Failure::new(Stage::StatusList, error.code(), error)
}

/// Why a token is void through revocation, as core's chain check says it.
pub(crate) fn revoked_failure(jth: Jth) -> Failure {
    let fault = ChainFault::Revoked(jth);
    Failure::new(Stage::Verify, fault.code(), fault)
}

/// The request a proof of possession is checked against.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RequestInput {
    /// The `DPoP` header; none for an unbound token.
    #[serde(default)]
    pub(crate) proof: Option<String>,
    pub(crate) method: String,
    pub(crate) url: String,
}

impl RequestInput {
    /// Applies core's binding rule to verified claims.
    pub(crate) fn check(
        &self,
        claims: &Claims,
        token: &str,
        now: i64,
    ) -> Result<Option<VerifiedProof>, Failure> {
        mandate_core::check_binding(
            claims,
            token,
            self.proof.as_deref(),
            &ProofRequest {
                method: &self.method,
                url: &self.url,
                now,
            },
        )
        .map_err(|e| dpop_failure(&e))
    }
}

/// `{header, claims}` as JSON text.
pub(crate) fn verified_json(token: &VerifiedToken) -> String {
    #[derive(Serialize)]
    struct Verified<'a> {
        header: &'a Header,
        claims: &'a Claims,
    }
    // Serialising core's header and claims cannot fail.
    serde_json::to_string(&Verified {
        header: &token.header,
        claims: &token.claims,
    })
    .unwrap_or_default()
}

/// Verifies a compact token against a key set (a dict or JSON text), as the
/// server does, and applies the checks the options ask for.
#[pyfunction]
#[pyo3(signature = (
    token, jwks, *, now = None, leeway_seconds = None, issuer = None, revoked = None,
    request = None, skip_proof_of_possession = None, status_list = None,
    max_staleness_seconds = None, status_origins = None,
))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn verify_token(
    py: Python<'_>,
    token: &Bound<'_, PyAny>,
    jwks: &Bound<'_, PyAny>,
    now: Option<&Bound<'_, PyAny>>,
    leeway_seconds: Option<&Bound<'_, PyAny>>,
    issuer: Option<&Bound<'_, PyAny>>,
    revoked: Option<&Bound<'_, PyAny>>,
    request: Option<&Bound<'_, PyAny>>,
    skip_proof_of_possession: Option<&Bound<'_, PyAny>>,
    status_list: Option<&Bound<'_, PyAny>>,
    max_staleness_seconds: Option<&Bound<'_, PyAny>>,
    status_origins: Option<&Bound<'_, PyAny>>,
) -> Answer {
    let token = string_arg(token, "token")?;
    let skip = flag_arg(skip_proof_of_possession, "skip_proof_of_possession")?;
    let request: Option<RequestInput> = request
        .filter(|r| !r.is_none())
        .map(|r| object_arg(r, "request", "invalid_options"))
        .transpose()?;
    let status_list = optional_string(status_list, "status_list")?;
    let max_staleness = seconds_arg(
        max_staleness_seconds,
        "max_staleness_seconds",
        "invalid_options",
    )?;
    let origins = self::status_origins(status_origins)?;
    let stray = if request.is_some() && skip {
        Some("request and skip_proof_of_possession exclude each other")
    } else if status_list.is_none() && (max_staleness.is_some() || origins.is_some()) {
        Some("max_staleness_seconds and status_origins apply to a status list: give status_list")
    } else {
        None
    };
    if let Some(message) = stray {
        return Err(Failure::input("invalid_options", message).into());
    }
    let options = verify_options(leeway_seconds, issuer)?;
    let revoked = parse_revoked(revoked)?;
    let keys = parse_jwks(jwks)?;
    let now = now_arg(now)?;
    let verified =
        mandate_core::verify(&token, &keys, now, &options).map_err(|e| verify_failure(&e))?;
    if let Some(jth) = verified.claims.first_revoked(|jth| revoked.contains(jth)) {
        return Err(revoked_failure(jth).into());
    }
    if let Some(list) = &status_list {
        mandate_core::check_status_in_list(
            &verified.claims,
            list,
            &keys,
            now,
            max_staleness,
            origins.as_deref(),
        )
        .map_err(|e| match e {
            TokenStatusError::List(e) => status_list_failure(&e),
            TokenStatusError::Status(e) => status_failure(&e),
        })?;
    }
    if !skip {
        match &request {
            Some(request) => {
                request.check(&verified.claims, &token, now)?;
            }
            None if verified.claims.cnf.is_some() => {
                return Err(dpop_failure(&DpopError::Required).into());
            }
            None => {}
        }
    }
    crate::convert::loads(py, &verified_json(&verified))
}

/// Reads a token's header and claims **without checking its signature,
/// issuer or lifetime**: for display and debugging only.
#[pyfunction]
pub(crate) fn decode_token_unverified(py: Python<'_>, token: &Bound<'_, PyAny>) -> Answer {
    let token = string_arg(token, "token")?;
    let decoded = mandate_core::decode_unverified(&token).map_err(|e| verify_failure(&e))?;
    crate::convert::loads(py, &verified_json(&decoded))
}

fn chain_failure(error: &ChainError) -> Failure {
    let (stage, index) = match error {
        ChainError::Link {
            index,
            fault: ChainFault::Verify(_),
        } => (Stage::Verify, Some(*index)),
        ChainError::Link { index, .. } => (Stage::Chain, Some(*index)),
        ChainError::Empty | ChainError::TooLong => (Stage::Chain, None),
    };
    Failure {
        index,
        ..Failure::new(stage, error.code(), error)
    }
}

/// Verifies a delegation chain given root first; answers each token's
/// header and claims.
#[pyfunction]
#[pyo3(signature = (tokens, jwks, *, now = None, leeway_seconds = None, issuer = None, revoked = None))]
pub(crate) fn verify_chain(
    py: Python<'_>,
    tokens: &Bound<'_, PyAny>,
    jwks: &Bound<'_, PyAny>,
    now: Option<&Bound<'_, PyAny>>,
    leeway_seconds: Option<&Bound<'_, PyAny>>,
    issuer: Option<&Bound<'_, PyAny>>,
    revoked: Option<&Bound<'_, PyAny>>,
) -> Answer {
    #[derive(Serialize)]
    struct Link<'a> {
        header: &'a Header,
        claims: &'a Claims,
    }
    let tokens = strings_arg(tokens, "tokens")?;
    let options = verify_options(leeway_seconds, issuer)?;
    let revoked = parse_revoked(revoked)?;
    let keys = parse_jwks(jwks)?;
    let now = now_arg(now)?;
    let tokens: Vec<&str> = tokens.iter().map(String::as_str).collect();
    let chain =
        mandate_core::verify_chain(&tokens, &keys, now, &options, |jth| revoked.contains(jth))
            .map_err(|e| chain_failure(&e))?;
    let links: Vec<Link<'_>> = chain
        .iter()
        .map(|token| Link {
            header: &token.header,
            claims: &token.claims,
        })
        .collect();
    to_py(py, &links)
}

/// A verified list: what it says about itself, not its entries.
#[derive(Serialize)]
pub(crate) struct ListInfo<'a> {
    uri: &'a str,
    kid: &'a str,
    iat: i64,
    exp: i64,
    ttl: u64,
    bits: u8,
    size: u64,
}

impl<'a> ListInfo<'a> {
    pub(crate) fn of(list: &'a VerifiedStatusList) -> ListInfo<'a> {
        ListInfo {
            uri: list.uri.as_str(),
            kid: &list.kid,
            iat: list.iat,
            exp: list.exp,
            ttl: list.ttl,
            bits: list.list.bits().get(),
            size: list.list.len(),
        }
    }
}

/// Verifies a status list token (`statuslist+jwt`); with `uri`, its `sub`
/// must equal it. Answers what the list says about itself.
#[pyfunction]
#[pyo3(signature = (jwt, jwks, *, now = None, uri = None))]
pub(crate) fn verify_status_list(
    py: Python<'_>,
    jwt: &Bound<'_, PyAny>,
    jwks: &Bound<'_, PyAny>,
    now: Option<&Bound<'_, PyAny>>,
    uri: Option<&Bound<'_, PyAny>>,
) -> Answer {
    let jwt = string_arg(jwt, "jwt")?;
    let uri = optional_string(uri, "uri")?;
    let keys = parse_jwks(jwks)?;
    let list = mandate_core::verify_status_list(&jwt, &keys, now_arg(now)?, uri.as_deref())
        .map_err(|e| status_list_failure(&e))?;
    to_py(py, &ListInfo::of(&list))
}

/// Checks a DPoP proof (RFC 9449) sent with `access_token`, a token bound
/// to `jkt`, for a request's `method` and `url`: every rule but replay,
/// which needs memory (`Verifier.verify_request` keeps one).
#[pyfunction]
#[pyo3(signature = (proof, *, method, url, access_token, jkt, now = None))]
pub(crate) fn verify_proof(
    py: Python<'_>,
    proof: &Bound<'_, PyAny>,
    method: &Bound<'_, PyAny>,
    url: &Bound<'_, PyAny>,
    access_token: &Bound<'_, PyAny>,
    jkt: &Bound<'_, PyAny>,
    now: Option<&Bound<'_, PyAny>>,
) -> Answer {
    #[derive(Serialize)]
    struct Verified<'a> {
        jti: &'a str,
        iat: i64,
        jkt: &'a Jkt,
    }
    let proof = string_arg(proof, "proof")?;
    let method = string_arg(method, "method")?;
    let url = string_arg(url, "url")?;
    let access_token = string_arg(access_token, "access_token")?;
    let jkt =
        Jkt::parse(&string_arg(jkt, "jkt")?).map_err(|e| Failure::argument(format!("jkt: {e}")))?;
    let verified = mandate_core::verify_proof(
        &proof,
        &access_token,
        &jkt,
        &ProofRequest {
            method: &method,
            url: &url,
            now: now_arg(now)?,
        },
    )
    .map_err(|e| dpop_failure(&e))?;
    to_py(
        py,
        &Verified {
            jti: &verified.jti,
            iat: verified.iat,
            jkt: &verified.jkt,
        },
    )
}

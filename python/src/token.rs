//! Tokens: one verified with the binding rule and its status, a chain,
//! a status list, a DPoP proof, and a token read without verification.

use std::collections::BTreeSet;

use mandate_core::{Claims, Header, Jkt, Jth, Jwks, ProofRequest, VerifiedToken, VerifyOptions};
use mandate_facade::{
    Binding, ListInfo, RequestInput, StatusListCheck, StatusOptionFault, StatusOptions,
    chain_failure, dpop_failure, status_list_failure, verify_failure,
};
use pyo3::prelude::*;
use serde::Serialize;

use crate::convert::{
    Answer, flag_arg, json_or_text, now_arg, object_arg, optional_string, seconds_arg, string_arg,
    strings_arg, to_py,
};
use crate::error::{Failure, Stage, raised};

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
    mandate_facade::parse_revoked(&entries).map_err(raised)
}

/// Core's verification options with the caller's overrides.
pub(crate) fn verify_options(
    leeway_seconds: Option<&Bound<'_, PyAny>>,
    issuer: Option<&Bound<'_, PyAny>>,
) -> PyResult<VerifyOptions> {
    Ok(mandate_facade::verify_options(
        seconds_arg(leeway_seconds, "leeway_seconds", "invalid_options")?,
        optional_string(issuer, "issuer")?,
    ))
}

/// The status options of a verifier (`check_status`): the staleness bound
/// and the origins apply to status lists only (mandate-facade's rule).
pub(crate) fn status_options(
    check_status: bool,
    max_staleness_seconds: Option<&Bound<'_, PyAny>>,
    status_origins: Option<&Bound<'_, PyAny>>,
) -> PyResult<Option<StatusOptions>> {
    status_options_for(
        check_status,
        max_staleness_seconds,
        status_origins,
        "max_staleness_seconds and status_origins apply to status lists: give check_status=True",
    )
}

/// The status options read, refused with `without_status` when they are
/// given and no status is checked.
fn status_options_for(
    checks_status: bool,
    max_staleness_seconds: Option<&Bound<'_, PyAny>>,
    status_origins: Option<&Bound<'_, PyAny>>,
    without_status: &str,
) -> PyResult<Option<StatusOptions>> {
    let max_staleness = seconds_arg(
        max_staleness_seconds,
        "max_staleness_seconds",
        "invalid_options",
    )?;
    let origins = status_origins
        .filter(|v| !v.is_none())
        .map(|origins| strings_arg(origins, "status_origins"))
        .transpose()?;
    mandate_facade::status_options(checks_status, max_staleness, origins).map_err(|fault| {
        let message = match fault {
            StatusOptionFault::StalenessWithoutStatus | StatusOptionFault::OriginsWithoutStatus => {
                without_status
            }
            StatusOptionFault::NotOrigins => {
                "status_origins holds origins: http(s)://host[:port], without a path"
            }
        };
        Failure::input("invalid_options", message).into()
    })
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
    if request.is_some() && skip {
        return Err(Failure::input(
            "invalid_options",
            "request and skip_proof_of_possession exclude each other",
        )
        .into());
    }
    let status = status_options_for(
        status_list.is_some(),
        max_staleness_seconds,
        status_origins,
        "max_staleness_seconds and status_origins apply to a status list: give status_list",
    )?;
    let options = verify_options(leeway_seconds, issuer)?;
    let revoked = parse_revoked(revoked)?;
    let keys = parse_jwks(jwks)?;
    let now = now_arg(now)?;
    let status = status_list
        .as_deref()
        .zip(status.as_ref())
        .map(|(list, options)| StatusListCheck { list, options });
    let binding = match &request {
        _ if skip => Binding::Skip,
        Some(request) => Binding::Request(request),
        None => Binding::Bearer,
    };
    let verified =
        mandate_facade::verify_token(&token, &keys, now, &options, &revoked, status, binding)
            .map_err(raised)?;
    crate::convert::loads(py, &verified_json(&verified))
}

/// Reads a token's header and claims **without checking its signature,
/// issuer or lifetime**: for display and debugging only.
#[pyfunction]
pub(crate) fn decode_token_unverified(py: Python<'_>, token: &Bound<'_, PyAny>) -> Answer {
    let token = string_arg(token, "token")?;
    let decoded =
        mandate_core::decode_unverified(&token).map_err(|e| raised(verify_failure(&e)))?;
    crate::convert::loads(py, &verified_json(&decoded))
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
            .map_err(|e| raised(chain_failure(&e)))?;
    let links: Vec<Link<'_>> = chain
        .iter()
        .map(|token| Link {
            header: &token.header,
            claims: &token.claims,
        })
        .collect();
    to_py(py, &links)
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
        .map_err(|e| raised(status_list_failure(&e)))?;
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
    .map_err(|e| raised(dpop_failure(&e)))?;
    to_py(
        py,
        &Verified {
            jti: &verified.jti,
            iat: verified.iat,
            jkt: &verified.jkt,
        },
    )
}

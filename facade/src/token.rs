//! A token checked once: `verifyToken` / `verify_token`'s sequence, the
//! binding rule as the SDKs apply it, and the rules of the status options.

use std::collections::BTreeSet;

use mandate_core::{
    Claims, DpopError, Jth, Jwks, ProofRequest, StatusUri, TokenStatusError, VerifiedProof,
    VerifiedStatusList, VerifiedToken, VerifyOptions,
};
use serde::{Deserialize, Serialize};

use crate::failure::{
    Failure, dpop_failure, revoked_failure, status_failure, status_list_failure, verify_failure,
};

/// The request a proof of possession is checked against.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RequestInput {
    /// The `DPoP` header; none for an unbound token.
    #[serde(default)]
    pub proof: Option<String>,
    pub method: String,
    pub url: String,
}

/// How a bound token's binding is checked.
#[derive(Debug, Clone, Copy)]
pub enum Binding<'a> {
    /// Presented with this request: a bound token needs its proof.
    Request(&'a RequestInput),
    /// Presented without a request: a bound token is refused
    /// (`dpop_required`).
    Bearer,
    /// Only shown, never to authorize a request with it: no check.
    Skip,
}

impl Binding<'_> {
    /// Core's binding rule over verified claims; answers the proof to
    /// remember, if one was checked.
    pub(crate) fn check(
        self,
        claims: &Claims,
        token: &str,
        now: i64,
    ) -> Result<Option<VerifiedProof>, Failure> {
        match self {
            Binding::Request(request) => mandate_core::check_binding(
                claims,
                token,
                request.proof.as_deref(),
                &ProofRequest {
                    method: &request.method,
                    url: &request.url,
                    now,
                },
            )
            .map_err(|e| dpop_failure(&e)),
            Binding::Bearer if claims.cnf.is_some() => Err(dpop_failure(&DpopError::Required)),
            Binding::Bearer | Binding::Skip => Ok(None),
        }
    }
}

/// Core's verification options with the caller's overrides.
pub fn verify_options(leeway_seconds: Option<u64>, issuer: Option<String>) -> VerifyOptions {
    let defaults = VerifyOptions::default();
    VerifyOptions {
        leeway_seconds: leeway_seconds.unwrap_or(defaults.leeway_seconds),
        issuer,
    }
}

/// The status checking options: the oldest list accepted, and the origins
/// the issuer serves lists from.
#[derive(Debug, Clone, Default)]
pub struct StatusOptions {
    pub max_staleness_seconds: Option<u64>,
    /// When given, a token or a list naming another origin is refused
    /// (`status_origin_not_allowed`).
    pub origins: Option<Vec<String>>,
}

/// Why status options are refused (`invalid_options`); each façade words it
/// with its own option names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StatusOptionFault {
    /// A staleness bound without a status to check.
    StalenessWithoutStatus,
    /// Origins without a status to check.
    OriginsWithoutStatus,
    /// An origin that is not `http(s)://host[:port]` without a path.
    NotOrigins,
}

/// The status options when a status is checked (`checks_status`), none
/// when not; the staleness bound and the origins apply to status lists only.
pub fn status_options(
    checks_status: bool,
    max_staleness_seconds: Option<u64>,
    origins: Option<Vec<String>>,
) -> Result<Option<StatusOptions>, StatusOptionFault> {
    if !checks_status && max_staleness_seconds.is_some() {
        return Err(StatusOptionFault::StalenessWithoutStatus);
    }
    if !checks_status && origins.is_some() {
        return Err(StatusOptionFault::OriginsWithoutStatus);
    }
    if origins
        .as_ref()
        .is_some_and(|origins| !origins.iter().all(|o| StatusUri::is_origin(o)))
    {
        return Err(StatusOptionFault::NotOrigins);
    }
    Ok(checks_status.then_some(StatusOptions {
        max_staleness_seconds,
        origins,
    }))
}

/// A status list token given with the token, and how it is judged.
#[derive(Debug, Clone, Copy)]
pub struct StatusListCheck<'a> {
    pub list: &'a str,
    pub options: &'a StatusOptions,
}

/// Verifies a token as the server does, then refuses it when it or an
/// ancestor is in `revoked`, when `status` is given and the token's status
/// in that list is not VALID, and when its binding fails.
pub fn verify_token(
    token: &str,
    keys: &Jwks,
    now: i64,
    options: &VerifyOptions,
    revoked: &BTreeSet<Jth>,
    status: Option<StatusListCheck<'_>>,
    binding: Binding<'_>,
) -> Result<VerifiedToken, Failure> {
    let verified =
        mandate_core::verify(token, keys, now, options).map_err(|e| verify_failure(&e))?;
    if let Some(jth) = verified.claims.first_revoked(|jth| revoked.contains(jth)) {
        return Err(revoked_failure(jth));
    }
    if let Some(status) = status {
        mandate_core::check_status_in_list(
            &verified.claims,
            status.list,
            keys,
            now,
            status.options.max_staleness_seconds,
            status.options.origins.as_deref(),
        )
        .map_err(|e| match e {
            TokenStatusError::List(e) => status_list_failure(&e),
            TokenStatusError::Status(e) => status_failure(&e),
        })?;
    }
    binding.check(&verified.claims, token, now)?;
    Ok(verified)
}

/// A verified list: what it says about itself, not its entries.
#[derive(Debug, Serialize)]
pub struct ListInfo<'a> {
    uri: &'a str,
    kid: &'a str,
    iat: i64,
    exp: i64,
    ttl: u64,
    bits: u8,
    size: u64,
}

impl<'a> ListInfo<'a> {
    pub fn of(list: &'a VerifiedStatusList) -> ListInfo<'a> {
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

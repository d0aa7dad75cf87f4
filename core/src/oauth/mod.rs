//! The rules of Mandate as an OAuth 2.1 authorization server (DESIGN §17):
//! what an authorization, token or token-exchange request may hold, judged
//! without I/O. The server (`mandate-host`) reads forms, fetches client
//! metadata documents, keeps codes, grants and refresh tokens in its
//! database and draws every random byte; this module owns what those
//! values must look like and how they compare.
//!
//! - [`redirect`]: redirect URIs, their exact matching and the loopback
//!   exception (RFC 9700 §2.1, §4.1.3; RFC 8252 §7.3).
//! - [`pkce`]: code verifiers and S256 challenges (RFC 7636).
//! - [`scope`]: the `scope` parameter ↔ Mandate's actions × resources.
//! - [`client_document`]: client ID metadata documents
//!   (draft-ietf-oauth-client-id-metadata-document-01) and their URLs.
//! - [`agent`]: the agent id a consent names when the human names none.
//! - [`family`]: the refresh-token family (rotation, reuse, expiry).
//! - [`exchange`]: RFC 8693 token-exchange requests.
//!
//! Every refusal is a value with a stable snake_case `code()`, like the
//! rest of core, and [`OAuthError::for_code`] is the one table from those
//! codes to the `error` names OAuth answers with (RFC 6749 §4.1.2.1, §5.2;
//! RFC 8707 §2; RFC 8693 §2.2.2; RFC 9449 §5 and its IANA error registration).
//!
//! Not here: fetching anything (the host, with its SSRF rules), time and
//! randomness (parameters), storage, HTTP.

pub mod agent;
pub mod client_document;
pub mod exchange;
pub mod family;
pub mod pkce;
pub mod redirect;
pub mod scope;
mod uri;

use serde::Serialize;

/// The error names of OAuth's error responses that Mandate answers with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum OAuthError {
    /// RFC 6749 §4.1.2.1, §5.2.
    InvalidRequest,
    /// RFC 6749 §5.2.
    InvalidClient,
    /// RFC 6749 §5.2.
    InvalidGrant,
    /// RFC 6749 §4.1.2.1, §5.2.
    UnauthorizedClient,
    /// RFC 6749 §5.2.
    UnsupportedGrantType,
    /// RFC 6749 §4.1.2.1.
    UnsupportedResponseType,
    /// RFC 6749 §4.1.2.1, §5.2.
    InvalidScope,
    /// RFC 8707 §2; RFC 8693 §2.2.2.
    InvalidTarget,
    /// RFC 9449 §5 (registered by its IANA considerations).
    InvalidDpopProof,
    /// RFC 6749 §4.1.2.1.
    AccessDenied,
}

impl OAuthError {
    /// The `error` value as sent.
    pub fn as_str(self) -> &'static str {
        match self {
            OAuthError::InvalidRequest => "invalid_request",
            OAuthError::InvalidClient => "invalid_client",
            OAuthError::InvalidGrant => "invalid_grant",
            OAuthError::UnauthorizedClient => "unauthorized_client",
            OAuthError::UnsupportedGrantType => "unsupported_grant_type",
            OAuthError::UnsupportedResponseType => "unsupported_response_type",
            OAuthError::InvalidScope => "invalid_scope",
            OAuthError::InvalidTarget => "invalid_target",
            OAuthError::InvalidDpopProof => "invalid_dpop_proof",
            OAuthError::AccessDenied => "access_denied",
        }
    }

    /// The OAuth `error` for a Mandate code, from [`ERRORS`]; a code the
    /// table does not list is `invalid_request` (fail closed: never an
    /// answer that suggests the client retry as is).
    pub fn for_code(code: &str) -> OAuthError {
        ERRORS
            .iter()
            .find(|(c, _)| *c == code)
            .map_or(OAuthError::InvalidRequest, |(_, e)| *e)
    }
}

use OAuthError as E;

/// The one table from the codes of this module's refusals (and the core
/// refusals a token exchange ends in) to OAuth's error names. Each row
/// names where the standard says so.
pub const ERRORS: &[(&str, OAuthError)] = &[
    // redirect: never sent to the redirect URI (RFC 6749 §4.1.2.1: the
    // resource owner is told, the client is not redirected to).
    ("redirect_uri_invalid", E::InvalidRequest),
    ("redirect_uri_fragment", E::InvalidRequest),
    ("redirect_uri_userinfo", E::InvalidRequest),
    ("redirect_uri_not_https", E::InvalidRequest),
    ("redirect_uri_mismatch", E::InvalidGrant),
    // pkce: RFC 7636 §4.4.1 at the authorization endpoint, §4.6 at the token endpoint.
    ("pkce_method_not_s256", E::InvalidRequest),
    ("code_challenge_missing", E::InvalidRequest),
    ("code_challenge_invalid", E::InvalidRequest),
    ("code_verifier_missing", E::InvalidRequest),
    ("code_verifier_invalid", E::InvalidRequest),
    ("code_verifier_mismatch", E::InvalidGrant),
    // scope: RFC 6749 §3.3, §4.1.2.1.
    ("scope_malformed", E::InvalidScope),
    ("scope_token_invalid", E::InvalidScope),
    ("scope_too_long", E::InvalidScope),
    ("scope_not_a_token", E::InvalidScope),
    ("scope_reserved_action", E::InvalidScope),
    ("scope_widening", E::InvalidScope),
    // resource (`audience::check_resource_uri`): RFC 8707 §2.
    ("resource_uri_too_long", E::InvalidTarget),
    ("resource_uri_fragment", E::InvalidTarget),
    ("resource_uri_scheme", E::InvalidTarget),
    ("resource_uri_malformed", E::InvalidTarget),
    ("audience_mismatch", E::InvalidTarget),
    // client identifiers and documents: an unknown or unusable client
    // (RFC 6749 §5.2 `invalid_client`; at the authorization endpoint the
    // resource owner is told and nobody is redirected, §4.1.2.1).
    ("client_id_invalid", E::InvalidClient),
    ("client_document_too_large", E::InvalidClient),
    ("client_document_not_json", E::InvalidClient),
    ("client_document_duplicate_member", E::InvalidClient),
    ("client_document_client_id_mismatch", E::InvalidClient),
    ("client_document_missing_member", E::InvalidClient),
    ("client_document_invalid_member", E::InvalidClient),
    ("client_document_shared_secret", E::InvalidClient),
    ("client_document_auth_method", E::InvalidClient),
    ("client_document_redirect_uri", E::InvalidClient),
    // refresh families: RFC 6749 §5.2 `invalid_grant` ("expired, revoked
    // … or was issued to another client").
    ("refresh_token_reused", E::InvalidGrant),
    ("refresh_token_unknown", E::InvalidGrant),
    ("grant_revoked", E::InvalidGrant),
    ("grant_expired", E::InvalidGrant),
    ("grant_idle", E::InvalidGrant),
    ("grant_exhausted", E::InvalidGrant),
    // token exchange: RFC 8693 §2.2.2.
    ("unsupported_grant_type", E::UnsupportedGrantType),
    ("parameter_missing", E::InvalidRequest),
    ("subject_token_type_unsupported", E::InvalidRequest),
    ("requested_token_type_unsupported", E::InvalidRequest),
    ("actor_token_refused", E::InvalidRequest),
    ("mandate_grant_invalid", E::InvalidRequest),
    ("holder_key_invalid", E::InvalidRequest),
    // the delegation an exchange ends in (core's own codes).
    ("delegate_not_held", E::InvalidScope),
    ("parent_expired", E::InvalidGrant),
    ("ttl_out_of_range", E::InvalidRequest),
    ("delegation_too_deep", E::InvalidRequest),
    ("too_many_children", E::InvalidRequest),
];

/// Whether [`ERRORS`] lists `code` (each module's tests hold every code of
/// its errors to the table).
#[cfg(test)]
pub(crate) fn listed(code: &str) -> bool {
    ERRORS.iter().any(|(c, _)| *c == code)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_code_is_listed_once() {
        let mut codes: Vec<&str> = ERRORS.iter().map(|(c, _)| *c).collect();
        codes.sort_unstable();
        let before = codes.len();
        codes.dedup();
        assert_eq!(codes.len(), before, "a code is listed twice");
    }

    #[test]
    fn names_are_the_registered_ones() {
        assert_eq!(
            serde_json::to_value(OAuthError::InvalidDpopProof).unwrap(),
            "invalid_dpop_proof"
        );
        for (_, error) in ERRORS {
            assert_eq!(serde_json::to_value(error).unwrap(), error.as_str());
        }
        assert_eq!(
            OAuthError::for_code("no_such_code"),
            OAuthError::InvalidRequest
        );
        assert_eq!(
            OAuthError::for_code("code_verifier_mismatch"),
            OAuthError::InvalidGrant
        );
    }
}

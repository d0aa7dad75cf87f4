//! Errors of the OAuth endpoints the client calls directly (the token
//! endpoint): the same [`ApiError`]s as everywhere, rendered the way OAuth
//! clients read them (RFC 6749 §5.2): a JSON body whose `error` is one of
//! OAuth's codes, with `error_description` (the problem's detail) and
//! Mandate's own `code` beside it, so a client that knows Mandate's codes
//! still reads the precise one. One table ([`OAUTH_ERRORS`]) says which
//! OAuth `error` each Mandate code is.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use utoipa::ToSchema;

use super::ApiError;

/// The `error` values an OAuth client reads (RFC 6749 §5.2, §4.1.2.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OAuthErrorCode {
    /// A parameter is missing, repeated, malformed or not supported, or
    /// the body is not a form.
    InvalidRequest,
    /// The code is unknown, expired, used, or was issued for another
    /// client or redirect URI, or the PKCE verifier does not prove it.
    InvalidGrant,
    /// The `resource` is not the one authorized (RFC 8707 §2).
    InvalidTarget,
    /// The `scope` is malformed or wider than the grant (RFC 6749 §5.2).
    InvalidScope,
    /// The token was issued to another client (RFC 7009 §2.1; RFC 6749
    /// §5.2).
    UnauthorizedClient,
    /// The `grant_type` is not one this server supports.
    UnsupportedGrantType,
    /// The `DPoP` proof is missing where the grant is bound, invalid,
    /// replayed, or by another key than the grant's (RFC 9449 §5, §10).
    InvalidDpopProof,
    /// The server failed (RFC 6749 §4.1.2.1 names it for the authorization
    /// endpoint; token clients read it too).
    ServerError,
    /// The server cannot answer now (a 503); retrying later may work.
    TemporarilyUnavailable,
    /// The request waits for a person's decision; the client repeats it
    /// once decided (RFC 8628 §3.5's code, as plan §3.4 uses it for a token
    /// exchange whose delegation needs an approval).
    AuthorizationPending,
}

impl OAuthErrorCode {
    /// The code as the body carries it.
    pub fn as_str(self) -> &'static str {
        match self {
            OAuthErrorCode::InvalidRequest => "invalid_request",
            OAuthErrorCode::InvalidGrant => "invalid_grant",
            OAuthErrorCode::InvalidTarget => "invalid_target",
            OAuthErrorCode::InvalidScope => "invalid_scope",
            OAuthErrorCode::UnauthorizedClient => "unauthorized_client",
            OAuthErrorCode::UnsupportedGrantType => "unsupported_grant_type",
            OAuthErrorCode::InvalidDpopProof => "invalid_dpop_proof",
            OAuthErrorCode::ServerError => "server_error",
            OAuthErrorCode::TemporarilyUnavailable => "temporarily_unavailable",
            OAuthErrorCode::AuthorizationPending => "authorization_pending",
        }
    }
}

/// Each Mandate code the OAuth endpoints produce and the OAuth `error` it
/// is sent as. Every one is answered 400 (RFC 6749 §5.2: "The
/// authorization server responds with an HTTP 400 (Bad Request) status
/// code (unless specified otherwise)").
#[rustfmt::skip]
pub const OAUTH_ERRORS: &[(&str, OAuthErrorCode)] = &[
    ("action_not_permitted",            OAuthErrorCode::InvalidScope),
    ("agent_not_yours",                 OAuthErrorCode::InvalidGrant),
    ("approval_denied",                 OAuthErrorCode::InvalidGrant),
    ("approval_expired",                OAuthErrorCode::InvalidGrant),
    ("approval_pending",                OAuthErrorCode::AuthorizationPending),
    ("audience_mismatch",               OAuthErrorCode::InvalidTarget),
    ("budget_max_actions",              OAuthErrorCode::InvalidGrant),
    ("budget_max_spend_per_action_usd", OAuthErrorCode::InvalidGrant),
    ("budget_max_spend_usd",            OAuthErrorCode::InvalidGrant),
    ("client_mismatch",                 OAuthErrorCode::UnauthorizedClient),
    ("code_invalid",                    OAuthErrorCode::InvalidGrant),
    ("code_verifier_invalid",           OAuthErrorCode::InvalidRequest),
    ("code_verifier_mismatch",          OAuthErrorCode::InvalidGrant),
    ("code_verifier_missing",           OAuthErrorCode::InvalidRequest),
    ("dpop_from_future",                OAuthErrorCode::InvalidDpopProof),
    ("dpop_invalid_jti",                OAuthErrorCode::InvalidDpopProof),
    ("dpop_invalid_key",                OAuthErrorCode::InvalidDpopProof),
    ("dpop_invalid_signature",          OAuthErrorCode::InvalidDpopProof),
    ("dpop_invalid_typ",                OAuthErrorCode::InvalidDpopProof),
    ("dpop_invalid_url",                OAuthErrorCode::InvalidDpopProof),
    ("dpop_key_mismatch",               OAuthErrorCode::InvalidDpopProof),
    ("dpop_malformed",                  OAuthErrorCode::InvalidDpopProof),
    ("dpop_malformed_claims",           OAuthErrorCode::InvalidDpopProof),
    ("dpop_malformed_header",           OAuthErrorCode::InvalidDpopProof),
    ("dpop_method_mismatch",            OAuthErrorCode::InvalidDpopProof),
    ("dpop_not_bound",                  OAuthErrorCode::InvalidDpopProof),
    ("dpop_replayed",                   OAuthErrorCode::InvalidDpopProof),
    ("dpop_required",                   OAuthErrorCode::InvalidDpopProof),
    ("dpop_stale",                      OAuthErrorCode::InvalidDpopProof),
    ("dpop_too_large",                  OAuthErrorCode::InvalidDpopProof),
    ("dpop_unsupported_alg",            OAuthErrorCode::InvalidDpopProof),
    ("dpop_url_mismatch",               OAuthErrorCode::InvalidDpopProof),
    ("form_malformed",                  OAuthErrorCode::InvalidRequest),
    ("form_required",                   OAuthErrorCode::InvalidRequest),
    ("grant_exhausted",                 OAuthErrorCode::InvalidGrant),
    ("grant_expired",                   OAuthErrorCode::InvalidGrant),
    ("grant_idle",                      OAuthErrorCode::InvalidGrant),
    ("grant_revoked",                   OAuthErrorCode::InvalidGrant),
    ("grant_type_unsupported",          OAuthErrorCode::UnsupportedGrantType),
    ("parameter_missing",               OAuthErrorCode::InvalidRequest),
    ("parameter_repeated",              OAuthErrorCode::InvalidRequest),
    ("payload_too_large",               OAuthErrorCode::InvalidRequest),
    ("redirect_uri_mismatch",           OAuthErrorCode::InvalidGrant),
    ("refresh_token_invalid",           OAuthErrorCode::InvalidGrant),
    ("refresh_token_reused",            OAuthErrorCode::InvalidGrant),
    ("refresh_token_unknown",           OAuthErrorCode::InvalidGrant),
    ("resource_mismatch",               OAuthErrorCode::InvalidTarget),
    ("resource_uri_fragment",           OAuthErrorCode::InvalidTarget),
    ("resource_uri_malformed",          OAuthErrorCode::InvalidTarget),
    ("resource_uri_scheme",             OAuthErrorCode::InvalidTarget),
    ("resource_uri_too_long",           OAuthErrorCode::InvalidTarget),
    ("scope_malformed",                 OAuthErrorCode::InvalidScope),
    ("scope_token_invalid",             OAuthErrorCode::InvalidScope),
    ("scope_too_long",                  OAuthErrorCode::InvalidScope),
    ("scope_widening",                  OAuthErrorCode::InvalidScope),
    ("subject_token_invalid",           OAuthErrorCode::InvalidGrant),
    ("token_expired",                   OAuthErrorCode::InvalidGrant),
    ("token_revoked",                   OAuthErrorCode::InvalidGrant),
    ("trust_too_low",                   OAuthErrorCode::InvalidGrant),
    ("unreadable_body",                 OAuthErrorCode::InvalidRequest),
];

/// The OAuth `error` of a problem and the status it is sent with: the
/// table's code with 400; for a code outside the table (the server's own
/// failures, which every endpoint may give) its own status, with
/// `temporarily_unavailable` for a 503, `server_error` for any other 5xx
/// and `invalid_request` for anything else.
pub fn oauth_error(error: &ApiError) -> (OAuthErrorCode, StatusCode) {
    if let Some((_, code)) = OAUTH_ERRORS.iter().find(|(code, _)| *code == error.code) {
        return (*code, StatusCode::BAD_REQUEST);
    }
    let code = match error.status {
        StatusCode::SERVICE_UNAVAILABLE => OAuthErrorCode::TemporarilyUnavailable,
        status if status.is_server_error() => OAuthErrorCode::ServerError,
        _ => OAuthErrorCode::InvalidRequest,
    };
    (code, error.status)
}

/// An OAuth error body (RFC 6749 §5.2).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
pub struct OAuthErrorBody {
    /// OAuth's code: `invalid_request`, `unsupported_grant_type`, …
    pub error: String,
    /// What went wrong, for the developer (the problem's detail).
    pub error_description: String,
    /// Mandate's stable code, more precise than `error`.
    pub code: String,
    /// The record a refused token exchange wrote (its denied `delegate`
    /// record), when there is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub aar_id: Option<String>,
    /// The approval a token exchange waits for (`authorization_pending`):
    /// the client repeats the same exchange once a person approved it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mandate_approval: Option<MandateApproval>,
}

/// The approval an `authorization_pending` answer names.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
pub struct MandateApproval {
    #[schema(value_type = crate::model::forms::ApprovalId)]
    pub approval_id: String,
    /// Where a person reads and decides it (`GET` with a key).
    pub url: String,
    pub expires_at: String,
}

/// An [`ApiError`] on its way out of an OAuth endpoint.
#[derive(Debug, Clone, PartialEq)]
pub struct OAuthError(pub ApiError);

impl From<ApiError> for OAuthError {
    fn from(error: ApiError) -> OAuthError {
        OAuthError(error)
    }
}

impl OAuthError {
    /// The body and status it is sent with.
    pub fn body(&self) -> (StatusCode, OAuthErrorBody) {
        let (error, status) = oauth_error(&self.0);
        (
            status,
            OAuthErrorBody {
                error: error.as_str().to_owned(),
                error_description: self.0.detail.clone(),
                code: self.0.code.to_owned(),
                aar_id: self.0.aar_id().map(str::to_owned),
                mandate_approval: self.0.approval().cloned(),
            },
        )
    }
}

impl IntoResponse for OAuthError {
    fn into_response(self) -> Response {
        let (status, body) = self.body();
        let mut response = (status, axum::Json(body)).into_response();
        let headers = response.headers_mut();
        headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        if let Some(seconds) = self.0.retry_after() {
            headers.insert(header::RETRY_AFTER, HeaderValue::from(seconds));
        }
        response
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_code_of_the_table_has_a_title_and_is_listed_once_in_order() {
        for (code, _) in OAUTH_ERRORS {
            assert!(super::super::title(code).is_some(), "{code} has no title");
        }
        let codes: Vec<&str> = OAUTH_ERRORS.iter().map(|(code, _)| *code).collect();
        let mut sorted = codes.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(codes, sorted);
    }

    /// RFC 6749 §5.2: 400 unless specified otherwise, `error` one of its
    /// codes; the problem's detail and code travel along.
    #[test]
    fn a_table_code_is_a_400_with_its_oauth_error() {
        let error = OAuthError(ApiError::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "form_required",
            "send the body as a form",
        ));
        let (status, body) = error.body();
        assert_eq!(status, StatusCode::BAD_REQUEST);
        assert_eq!(
            body,
            OAuthErrorBody {
                error: "invalid_request".to_owned(),
                error_description: "send the body as a form".to_owned(),
                code: "form_required".to_owned(),
                aar_id: None,
                mandate_approval: None,
            }
        );
        let unsupported = OAuthError(ApiError::bad_request("grant_type_unsupported", "no"));
        assert_eq!(unsupported.body().1.error, "unsupported_grant_type");
    }

    #[test]
    fn the_servers_own_failures_keep_their_status() {
        for (error, status, oauth) in [
            (
                ApiError::unavailable("busy"),
                StatusCode::SERVICE_UNAVAILABLE,
                "temporarily_unavailable",
            ),
            (
                ApiError::internal("broken"),
                StatusCode::INTERNAL_SERVER_ERROR,
                "server_error",
            ),
            (
                ApiError::new(StatusCode::TOO_MANY_REQUESTS, "rate_limited", "slow down"),
                StatusCode::TOO_MANY_REQUESTS,
                "invalid_request",
            ),
        ] {
            let (sent, body) = OAuthError(error.clone()).body();
            assert_eq!((sent, body.error.as_str()), (status, oauth), "{error}");
            assert_eq!(body.code, error.code);
        }
    }

    #[test]
    fn the_answer_is_json_and_keeps_retry_after() {
        let response = OAuthError(ApiError::unavailable("busy")).into_response();
        assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(response.headers()[header::CONTENT_TYPE], "application/json");
        assert!(response.headers().contains_key(header::RETRY_AFTER));
    }
}

//! The one place errors become HTTP: every failure is an [`ApiError`] and
//! leaves as an RFC 9457 `application/problem+json` body with a stable
//! `code`. Internal error text is logged, never sent.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use utoipa::ToSchema;

#[cfg(test)]
mod codes;
pub mod oauth;
mod titles;

pub use titles::{known_code, title};

/// One way a delegation would widen its parent, as sent to clients.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
pub struct ViolationBody {
    /// The widening request field (`resources`, `constraints.max_spend_usd`, …).
    pub field: String,
    /// Stable code (`resource_not_covered`, `action_not_held`, …).
    pub code: String,
    pub message: String,
}

/// An RFC 9457 problem body.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct Problem {
    /// `urn:mandate:problem:<code>`.
    #[serde(rename = "type")]
    pub type_: String,
    pub title: String,
    pub status: u16,
    pub detail: String,
    /// Stable snake_case code.
    pub code: String,
    /// The denied record written for this refusal, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub aar_id: Option<String>,
    /// The request field at fault, for input errors.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
    /// The precise rule that refused the request, when `code` names a
    /// family (`dpop_invalid` → `dpop_url_mismatch`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Every widening, for refused delegations.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub violations: Vec<ViolationBody>,
}

/// A failure on its way to becoming a problem response.
#[derive(Debug, Clone, PartialEq)]
pub struct ApiError {
    pub status: StatusCode,
    pub code: &'static str,
    pub detail: String,
    /// Members only some problems carry, boxed to keep errors small.
    extra: Option<Box<Extra>>,
}

#[derive(Debug, Clone, Default, PartialEq)]
struct Extra {
    aar_id: Option<String>,
    field: Option<String>,
    reason: Option<&'static str>,
    violations: Vec<ViolationBody>,
    retry_after: Option<u64>,
    /// `WWW-Authenticate` of a 401 other than the Bearer default.
    challenge: Option<&'static str>,
    /// The approval an OAuth request waits for.
    approval: Option<oauth::MandateApproval>,
}

/// The challenge of a 401 about a bound token (RFC 9449 §7.1).
const DPOP_CHALLENGE: &str =
    r#"DPoP realm="mandate", error="invalid_dpop_proof", algs="EdDSA Ed25519""#;
/// The challenge of a 401 for a bound token sent without its proof.
const DPOP_TOKEN_CHALLENGE: &str =
    r#"DPoP realm="mandate", error="invalid_token", algs="EdDSA Ed25519""#;

/// The code of [`ApiError::query_too_broad`].
pub const QUERY_TOO_BROAD: &str = "query_too_broad";

/// Longest path a 404's detail repeats, in characters.
const MAX_PATH_CHARS: usize = 200;

/// `Retry-After` of a 503: long enough for a group commit or a freed disk.
const UNAVAILABLE_RETRY_SECONDS: u64 = 5;

impl ApiError {
    /// A problem with a status, a stable code and a human-readable detail.
    pub fn new(status: StatusCode, code: &'static str, detail: impl Into<String>) -> ApiError {
        ApiError {
            status,
            code,
            detail: detail.into(),
            extra: None,
        }
    }

    fn extra(&mut self) -> &mut Extra {
        self.extra.get_or_insert_with(Box::default)
    }

    pub fn bad_request(code: &'static str, detail: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::BAD_REQUEST, code, detail)
    }

    pub fn unauthorized(code: &'static str, detail: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::UNAUTHORIZED, code, detail)
    }

    pub fn forbidden(code: &'static str, detail: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::FORBIDDEN, code, detail)
    }

    pub fn not_found(code: &'static str, detail: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::NOT_FOUND, code, detail)
    }

    pub fn conflict(code: &'static str, detail: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::CONFLICT, code, detail)
    }

    /// A request that is well-formed JSON but breaks a rule about `field`.
    pub fn invalid(field: &str, code: &'static str, detail: impl Into<String>) -> ApiError {
        let mut error = ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, code, detail);
        error.extra().field = Some(field.to_owned());
        error
    }

    /// Nothing is routed at `path` (a wrong base URL, a typo): a 404 that
    /// names the path it got, cut to [`MAX_PATH_CHARS`] characters.
    pub fn no_route(path: &str) -> ApiError {
        let mut path = path.to_owned();
        truncate_chars(&mut path, MAX_PATH_CHARS);
        ApiError::not_found("not_found", format!("there is nothing at {path}"))
    }

    /// Storage cannot take writes (disk full, I/O error, shutting down); the
    /// client is told to retry in a few seconds.
    pub fn unavailable(detail: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "unavailable", detail)
            .with_retry_after(UNAVAILABLE_RETRY_SECONDS)
    }

    /// The key a token was signed with was revoked a moment ago; the
    /// server reads its keys again and a retry is signed by the new one.
    pub fn signing_key_revoked() -> ApiError {
        ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "signing_key_revoked",
            "the signing key was just revoked; retry and the token is signed by the new key",
        )
        .with_retry_after(1)
    }

    /// A read stopped at its time budget (`query_budget_ms`): the request
    /// asks for more than an index can find quickly. `detail` says what to
    /// narrow; the same request would be stopped again, so it is no 503.
    pub fn query_too_broad(detail: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, QUERY_TOO_BROAD, detail)
    }

    /// Something Mandate got wrong. The cause is logged here and never sent.
    pub fn internal(cause: impl std::fmt::Display) -> ApiError {
        tracing::error!(%cause, "internal error");
        ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal",
            "an internal error occurred; it has been logged",
        )
    }

    /// An API key whose role does not hold what the operation needs.
    pub fn role_forbidden(
        role: mandate_core::Role,
        permission: mandate_core::Permission,
    ) -> ApiError {
        ApiError::forbidden(
            "role_forbidden",
            format!(
                "this key's role ({role}) does not allow this: it needs the `{}` permission",
                permission.as_str()
            ),
        )
    }

    /// The token of an agent call is unknown, revoked or expired. All three
    /// answer alike so callers cannot probe which tokens exist.
    pub fn token_inactive() -> ApiError {
        ApiError::forbidden("token_inactive", "the token is unknown, revoked or expired")
    }

    /// The call needs the token itself, not its id.
    pub fn token_required(detail: impl Into<String>) -> ApiError {
        ApiError::unauthorized("token_required", detail)
    }

    /// A caller presenting the token itself learns exactly why it is
    /// inactive: it holds the token, so nothing is disclosed.
    pub fn holder_inactive(expired: bool) -> ApiError {
        if expired {
            ApiError::unauthorized("token_expired", "the token has expired")
        } else {
            ApiError::unauthorized(
                "token_revoked",
                "the token, or a token it was delegated from, is revoked",
            )
        }
    }

    /// A bound token used without its proof, or as a Bearer token.
    pub fn dpop_required() -> ApiError {
        let mut error = ApiError::unauthorized(
            "dpop_required",
            mandate_core::DpopError::Required.to_string(),
        );
        error.extra().challenge = Some(DPOP_TOKEN_CHALLENGE);
        error
    }

    /// A bound token's proof was refused; `reason` names the rule.
    pub fn dpop_invalid(error: &mandate_core::DpopError) -> ApiError {
        let mut problem = ApiError::unauthorized(
            "dpop_invalid",
            format!("the DPoP proof was refused: {error}"),
        );
        let extra = problem.extra();
        extra.reason = Some(error.code());
        extra.challenge = Some(DPOP_CHALLENGE);
        problem
    }

    /// A relayed call refused for a rule of core's relay (`reason`): the
    /// client's forwarded proof (`client_proof_invalid`) or the relay's own
    /// proof, or the token (`relay_invalid`).
    pub fn relay_invalid(error: &mandate_core::RelayError) -> ApiError {
        let code = match error.is_client_proof() {
            true => "client_proof_invalid",
            false => "relay_invalid",
        };
        let mut problem = ApiError::unauthorized(code, error.to_string());
        problem.extra().reason = Some(error.code());
        problem
    }

    /// The same input error about a member of entry `index` of the list
    /// `list`: its `field` becomes `list.field` and its detail names the
    /// entry (`records[3]: …`). An error about no member is unchanged.
    pub fn in_item(mut self, list: &str, index: usize) -> ApiError {
        let Some(field) = self.extra.as_mut().and_then(|extra| extra.field.as_mut()) else {
            return self;
        };
        *field = format!("{list}.{field}");
        self.detail = format!("{list}[{index}]: {}", self.detail);
        self
    }

    /// Attaches the id of the denied record written for this refusal.
    pub fn with_record(mut self, aar_id: &str) -> ApiError {
        self.extra().aar_id = Some(aar_id.to_owned());
        self
    }

    /// The record the problem is about, if any.
    pub fn aar_id(&self) -> Option<&str> {
        self.extra.as_ref()?.aar_id.as_deref()
    }

    /// Attaches the approval an OAuth request waits for.
    pub fn with_approval(mut self, approval: oauth::MandateApproval) -> ApiError {
        self.extra().approval = Some(approval);
        self
    }

    /// The approval an OAuth request waits for, if any.
    pub fn approval(&self) -> Option<&oauth::MandateApproval> {
        self.extra.as_ref()?.approval.as_ref()
    }

    /// Attaches every widening of a refused delegation.
    pub fn with_violations(mut self, violations: Vec<ViolationBody>) -> ApiError {
        self.extra().violations = violations;
        self
    }

    /// Tells the client when to retry (429).
    pub fn with_retry_after(mut self, seconds: u64) -> ApiError {
        self.extra().retry_after = Some(seconds);
        self
    }

    /// Seconds until a retry may succeed, for 429.
    pub fn retry_after(&self) -> Option<u64> {
        self.extra.as_ref().and_then(|extra| extra.retry_after)
    }

    /// The code's title from the table in [`titles`]; a code missing there
    /// (a test keeps the table whole) gets its status's reason phrase.
    fn title(&self) -> &'static str {
        title(self.code)
            .or(self.status.canonical_reason())
            .unwrap_or("Error")
    }

    /// The problem body.
    pub fn problem(&self) -> Problem {
        let extra = self.extra.as_deref().cloned().unwrap_or_default();
        Problem {
            type_: format!("urn:mandate:problem:{}", self.code),
            title: self.title().to_owned(),
            status: self.status.as_u16(),
            detail: self.detail.clone(),
            code: self.code.to_owned(),
            aar_id: extra.aar_id,
            field: extra.field,
            reason: extra.reason.map(str::to_owned),
            violations: extra.violations,
        }
    }
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}: {}", self.status.as_u16(), self.code, self.detail)
    }
}

impl std::error::Error for ApiError {}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = serde_json::to_vec(&self.problem()).unwrap_or_default();
        let mut response = (self.status, body).into_response();
        let headers = response.headers_mut();
        headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/problem+json"),
        );
        if self.status == StatusCode::UNAUTHORIZED {
            let challenge = self
                .extra
                .as_ref()
                .and_then(|extra| extra.challenge)
                .unwrap_or(r#"Bearer realm="mandate""#);
            headers.insert(
                header::WWW_AUTHENTICATE,
                HeaderValue::from_static(challenge),
            );
        }
        if let Some(seconds) = self.retry_after() {
            headers.insert(header::RETRY_AFTER, HeaderValue::from(seconds));
        }
        response
    }
}

/// Shorthand for handler results.
pub type ApiResult<T> = Result<T, ApiError>;

/// Shortens `text` to at most `max_chars` characters. `String::truncate`
/// takes a byte index and panics inside a character, so text that came from
/// a client or a plugin is cut here, on a character boundary.
pub fn truncate_chars(text: &mut String, max_chars: usize) {
    if let Some((end, _)) = text.char_indices().nth(max_chars) {
        text.truncate(end);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn problem_shape() {
        let error = ApiError::forbidden("action_not_permitted", "no").with_record("aar_x");
        let body = serde_json::to_value(error.problem()).unwrap();
        assert_eq!(body["type"], "urn:mandate:problem:action_not_permitted");
        assert_eq!(body["title"], "Action not permitted");
        assert_eq!(body["status"], 403);
        assert_eq!(body["aar_id"], "aar_x");
        assert!(body.get("violations").is_none());
    }

    #[test]
    fn truncation_counts_characters_and_never_splits_one() {
        let cases: [(&str, usize, &str); 6] = [
            ("abc", 2, "ab"),
            ("abc", 3, "abc"),
            ("abc", 10, "abc"),
            ("éé", 1, "é"),
            ("a😀中", 2, "a😀"),
            ("e\u{301}x", 1, "e"),
        ];
        for (text, max, expected) in cases {
            let mut cut = text.to_owned();
            truncate_chars(&mut cut, max);
            assert_eq!(cut, expected, "{text:?} to {max}");
        }
        let mut long = "é".repeat(301);
        truncate_chars(&mut long, 300);
        assert_eq!(long, "é".repeat(300));
    }

    #[test]
    fn unauthorized_carries_www_authenticate() {
        let response = ApiError::unauthorized("unauthorized", "no key").into_response();
        assert!(response.headers().contains_key(header::WWW_AUTHENTICATE));
        assert_eq!(
            response.headers()[header::CONTENT_TYPE],
            "application/problem+json"
        );
    }
}

//! Issuing at assurance levels L2 (an OIDC ID token) and L3 (a verifier's
//! verdict on captured evidence). Both need an API key, as every issue does;
//! the human is whoever the ID token or the verifier names.

use axum::extract::State;
use mandate_core::{AssuranceLevel, Identity};

use super::docs::Errors;
use super::extract::{ApiKeyAuth, IdempotentJson};
use super::input;
use super::issue::{Root, issue_root_token};
use super::status::public_base;
use super::write::Rendered;
use crate::AppState;
use crate::error::{ApiError, ApiResult};
use crate::model::{CaptureRequest, IssueL2Request, IssuedToken};

/// Longest `id_token` or `nonce` accepted.
const MAX_ID_TOKEN_BYTES: usize = 16 * 1024;

/// Issues a root token on an OIDC sign-in (assurance level L2).
#[utoipa::path(
    post,
    path = "/v1/vat/issue/l2",
    params(("Idempotency-Key" = Option<String>, Header, pattern = r"^[!-~]{1,255}$", description = "Retry-safe key: a repeat with the same body returns the first response")),
    tag = "tokens",
    request_body = IssueL2Request,
    responses(
        (status = 201, description = "The new root token", body = IssuedToken),
        (status = 502, description = "The identity provider's keys cannot be fetched", body = crate::error::Problem, content_type = "application/problem+json"),
        Errors,
    )
)]
pub(crate) async fn issue_l2(
    State(state): State<AppState>,
    ApiKeyAuth(principal): ApiKeyAuth,
    IdempotentJson { body, key }: IdempotentJson<IssueL2Request>,
) -> ApiResult<Rendered> {
    let now = state.clock.now();
    if body.id_token.len() > MAX_ID_TOKEN_BYTES {
        return Err(ApiError::invalid(
            "id_token",
            "too_long",
            "id_token is longer than 16 KiB",
        ));
    }
    let nonce = input::text("nonce", body.nonce.as_deref(), 1024)?;
    let request = input::token_request(&body)?;
    if state.assurance.oidc.is_empty() {
        return Err(ApiError::unauthorized(
            "id_token_unknown_issuer",
            "the id_token was refused: this deployment trusts no OIDC issuer",
        ));
    }
    let who = state
        .assurance
        .oidc
        .verify(&body.id_token, nonce.as_deref(), now)
        .await?;
    let identity = Identity::Oidc {
        issuer: who.issuer,
        subject: who.subject,
    };
    let label = who.label;
    let key = key.map(|k| k.scoped(principal.org, "issue_l2", &principal.id));
    let root = Root {
        identity: &identity,
        level: AssuranceLevel::L2,
        request,
        status_base: public_base(&state),
        label,
    };
    issue_root_token(&state, &principal, key, root, now).await
}

/// Issues a root token on an identity verifier's verdict (assurance level L3).
#[utoipa::path(
    post,
    path = "/v1/vat/auth/capture",
    params(("Idempotency-Key" = Option<String>, Header, pattern = r"^[!-~]{1,255}$", description = "Retry-safe key: a repeat with the same body returns the first response")),
    tag = "tokens",
    request_body = CaptureRequest,
    responses(
        (status = 201, description = "The new root token", body = IssuedToken),
        (status = 502, description = "The verifier failed (trapped, ran out of fuel, time or memory, or answered garbage)", body = crate::error::Problem, content_type = "application/problem+json"),
        Errors,
    )
)]
pub(crate) async fn auth_capture(
    State(state): State<AppState>,
    ApiKeyAuth(principal): ApiKeyAuth,
    IdempotentJson { body, key }: IdempotentJson<CaptureRequest>,
) -> ApiResult<Rendered> {
    let now = state.clock.now();
    let request = input::token_request(&body)?;
    let verified = state
        .assurance
        .verifiers
        .verify(&body.verifier, &body.evidence, now)
        .await?;
    let identity = Identity::Verified {
        verifier: body.verifier,
        subject: verified.subject,
    };
    let key = key.map(|k| k.scoped(principal.org, "auth_capture", &principal.id));
    let root = Root {
        identity: &identity,
        level: AssuranceLevel::L3,
        request,
        status_base: public_base(&state),
        label: None,
    };
    issue_root_token(&state, &principal, key, root, now).await
}

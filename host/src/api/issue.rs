//! Issuing root tokens: at L1 on an API key alone, and the one path every
//! assurance level ends in (sign, store, answer once per idempotency key).

use axum::extract::State;
use axum::http::StatusCode;
use mandate_core::{
    AssuranceLevel, Claims, HumanRef, Identity, IssueError, Permission, RootIssue, TokenRequest,
    human_ref, issue_root,
};

use super::bodies;
use super::docs::Errors;
use super::extract::{ApiKeyAuth, IdempotentJson};
use super::input;
use super::status::public_base;
use super::write::{Rendered, once};
use crate::apikeys::Principal;
use crate::clock::Now;
use crate::error::{ApiError, ApiResult};
use crate::ledger::{IdempotencyKey, LedgerError};
use crate::model::{IssueL1Request, IssuedToken};
use crate::{AppState, random};

/// Issues a root token on an API key (assurance level L1).
#[utoipa::path(
    post,
    path = "/v1/vat/issue/l1",
    params(("Idempotency-Key" = Option<String>, Header, pattern = r"^[!-~]{1,255}$", description = "Retry-safe key: a repeat with the same body returns the first response")),
    tag = "tokens",
    request_body = IssueL1Request,
    responses((status = 201, description = "The new root token", body = IssuedToken), Errors)
)]
pub(crate) async fn issue_l1(
    State(state): State<AppState>,
    ApiKeyAuth(principal): ApiKeyAuth,
    IdempotentJson { body, key }: IdempotentJson<IssueL1Request>,
) -> ApiResult<Rendered> {
    let now = state.clock.now();
    let identity = input::email(&body.developer_email)?;
    if !principal.may(Permission::IssueForAnyone) {
        let own = principal
            .email
            .as_deref()
            .and_then(|email| Identity::email(email).ok());
        if own.as_ref() != Some(&identity) {
            return Err(ApiError::forbidden(
                "email_mismatch",
                "a developer key may only issue tokens for its own developer_email",
            ));
        }
    }
    let request = input::token_request(&body)?;
    let key = key.map(|k| k.scoped(principal.org, "issue_l1", &principal.id));
    let root = Root {
        identity: &identity,
        level: AssuranceLevel::L1,
        request,
        status_base: public_base(&state),
        label: Some(body.developer_email.to_lowercase()),
    };
    issue_root_token(&state, &principal, key, root, now).await
}

/// A root token to issue: for whom, at which level, with what scope.
#[derive(Debug)]
pub(crate) struct Root<'a> {
    pub(crate) identity: &'a Identity,
    pub(crate) level: AssuranceLevel,
    pub(crate) request: TokenRequest,
    /// The server's public address, under which the token's status list
    /// is (see `status::public_base`).
    pub(crate) status_base: String,
    /// What the organisation will know the human by: the e-mail for L1,
    /// the ID token's `name` (else `email`) for L2, none for L3.
    pub(crate) label: Option<String>,
}

/// Core's claims of a root token for `human` at `level`, issued now by this
/// server (fresh `jti` and provenance), or the problem a client's request
/// makes of core's refusal. Shared by the issue endpoints and the consent
/// decision, which checks a grant as its redemption will issue it.
pub(crate) fn root_claims(
    state: &AppState,
    request: TokenRequest,
    human: HumanRef,
    level: AssuranceLevel,
    now: Now,
) -> ApiResult<Claims> {
    issue_root(
        request,
        RootIssue {
            issuer: state.config.issuer.clone(),
            human,
            level,
            now: now.s(),
            jti: random::ulid(now),
            provenance: random::ulid(now),
            // No status list entry yet: the server does not publish lists.
            status: None,
        },
    )
    .map_err(|e| match e {
        IssueError::TtlOutOfRange => LedgerError::TtlOutOfRange(e).into(),
        IssueError::Scope(error) => input::scope_error(error),
        other => ApiError::internal(other),
    })
}

/// Issues, signs and stores a root token for a verified human, whatever the
/// assurance level. With an idempotency key, a retry returns the first
/// token and issues nothing.
pub(crate) async fn issue_root_token(
    state: &AppState,
    principal: &Principal,
    key_for_replay: Option<IdempotencyKey>,
    root: Root<'_>,
    now: Now,
) -> ApiResult<Rendered> {
    let ring = state.keys.current();
    let claims = root_claims(
        state,
        root.request,
        human_ref(&state.human_secret, root.identity),
        root.level,
        now,
    )?;
    let key = ring.active.clone();
    let by = principal.id.clone();
    let for_anyone = principal.may(Permission::IssueForAnyone);
    let org = principal.org;
    let base = root.status_base;
    let label = root.label;
    let (_, rendered) = once(
        state,
        key_for_replay,
        now,
        move |ledger| {
            let issued =
                ledger.store_root(org, claims.clone(), &key, Some(&by), for_anyone, &base, now)?;
            if let Some(label) = &label {
                ledger.label_human(org, &issued.0.svc_human, label, now)?;
            }
            Ok(issued)
        },
        |(claims, compact)| match bodies::issued(claims, compact.clone(), None) {
            Ok(token) => Rendered::json(StatusCode::CREATED, &token),
            Err(error) => Rendered::problem(&error),
        },
    )
    .await?;
    Ok(rendered)
}

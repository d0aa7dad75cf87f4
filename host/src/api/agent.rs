//! Agent calls: record an action, authorize, complete, delegate. The agent
//! acts with a token: presented itself (`Authorization: Bearer`, or `DPoP`
//! with a proof for a bound token), or — for `record/action` and
//! `authorize`, as the spec shows — named by a bare `vat_jti` in the body.
//! `delegate` changes authority and always needs the token itself.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use mandate_core::{AarId, DenyReason, Usd};

use super::docs::Errors;
use super::extract::{Acting, AgentCall, IdempotentJson, Json, Need};
use super::input;
use crate::clock::now_ms;
use crate::error::{ApiError, ApiResult};
use crate::idempotency::{self, Rendered, Reply};
use crate::ledger::{
    self, Attempt, AttemptOutcome, Completion, Credential, Delegation, DelegationOutcome,
};
use crate::model::{
    AuthorizeRequest, AuthorizeResponse, CompleteRequest, DelegateRequest, IssuedToken,
    RecordActionRequest, RecordActionResponse, RecordBody,
};
use crate::{AppState, random};

/// The problem a denied attempt answers with. An inactive token is named
/// only to a caller who presented the token itself.
fn denial(reason: DenyReason, credential: Credential) -> ApiError {
    match reason {
        DenyReason::TokenRevoked | DenyReason::TokenExpired => match credential {
            Credential::Token => ApiError::holder_inactive(reason == DenyReason::TokenExpired),
            Credential::Jti => ApiError::token_inactive(),
        },
        DenyReason::ActionNotPermitted => {
            ApiError::forbidden(reason.code(), "the token does not hold this action")
        }
        DenyReason::ResourceNotPermitted => ApiError::forbidden(
            reason.code(),
            "no resource pattern of the token covers this resource",
        ),
        DenyReason::BudgetMaxSpendUsd => ApiError::forbidden(
            reason.code(),
            "this spend would pass max_spend_usd of the token or an ancestor",
        ),
        DenyReason::BudgetMaxActions => ApiError::forbidden(
            reason.code(),
            "one more action would pass max_actions of the token or an ancestor",
        ),
        DenyReason::ScopeWidening | DenyReason::DelegationTooDeep | DenyReason::TooManyChildren => {
            ApiError::forbidden(reason.code(), "the delegation was refused")
        }
    }
}

/// What an agent asks to do, checked.
fn attempt(
    acting: Acting,
    action: &str,
    resource: &str,
    spend_usd: Option<f64>,
) -> ApiResult<Attempt> {
    Ok(Attempt {
        jti: acting.jti,
        credential: acting.credential,
        action: input::action(action)?,
        resource: input::resource(resource)?,
        spend: input::amount("spend_usd", spend_usd)?.unwrap_or(Usd::ZERO),
        random: random::bytes(),
    })
}

fn count_record(state: &AppState, outcome: &AttemptOutcome, allowed_status: &str) {
    let status = if outcome.denied.is_some() {
        "denied"
    } else {
        allowed_status
    };
    state.metrics.record_written(status);
}

/// Authorize, record and complete an action in one call.
#[utoipa::path(
    post,
    path = "/v1/vat/record/action",
    params(("Idempotency-Key" = Option<String>, Header, pattern = r"^[!-~]{1,255}$", description = "Retry-safe key: a repeat with the same body returns the first response")),
    tag = "agent",
    request_body = RecordActionRequest,
    responses(
        (status = 201, description = "Recorded", body = RecordActionResponse),
        Errors,
    )
)]
pub(crate) async fn record_action(
    State(state): State<AppState>,
    call: AgentCall,
    IdempotentJson { body, key }: IdempotentJson<RecordActionRequest>,
) -> ApiResult<Rendered> {
    let acting = call
        .acting(&state, body.vat_jti.as_deref(), Need::TokenOrJti)
        .await?;
    let key = key.map(|k| k.scoped("record_action", acting.jti.as_str()));
    let attempt = attempt(acting, &body.action, &body.resource, body.spend_usd)?;
    let result = input::outcome(&body.result)?;
    let result_hash = input::result_hash(body.result_hash.as_deref())?;
    let cache = state.claims.clone();
    let reply = state
        .store
        .write(move |conn| {
            idempotency::run(
                conn,
                key.as_ref(),
                |conn| ledger::record_action(conn, &cache, &attempt, result, result_hash.as_ref()),
                render_recorded,
            )
        })
        .await?;
    match reply {
        Reply::Fresh(outcome) => {
            count_record(&state, &outcome, "completed");
            render_recorded(&outcome)
        }
        Reply::Replayed(rendered) => Ok(rendered),
    }
}

fn render_recorded(outcome: &AttemptOutcome) -> ApiResult<Rendered> {
    match outcome.denied {
        Some(reason) => Rendered::problem(
            &denial(reason, outcome.credential).with_record(outcome.aar_id.as_str()),
        ),
        None => Rendered::json(
            StatusCode::CREATED,
            &RecordActionResponse {
                recorded: true,
                aar_id: outcome.aar_id.to_string(),
                provenance_ref: outcome.claims.svc_prov.to_string(),
                trust_score: outcome.claims.svc_trust_score,
                delegation_depth: outcome.claims.svc_depth,
            },
        ),
    }
}

/// Pre-flight check of an action; creates a pending record (or a denied one).
#[utoipa::path(
    post,
    path = "/v1/vat/authorize",
    params(("Idempotency-Key" = Option<String>, Header, pattern = r"^[!-~]{1,255}$", description = "Retry-safe key: a repeat with the same body returns the first response")),
    tag = "agent",
    request_body = AuthorizeRequest,
    responses(
        (status = 200, description = "The decision; a refusal is `authorized: false`", body = AuthorizeResponse),
        Errors,
    )
)]
pub(crate) async fn authorize(
    State(state): State<AppState>,
    call: AgentCall,
    IdempotentJson { body, key }: IdempotentJson<AuthorizeRequest>,
) -> ApiResult<Rendered> {
    let acting = call
        .acting(&state, body.vat_jti.as_deref(), Need::TokenOrJti)
        .await?;
    let key = key.map(|k| k.scoped("authorize", acting.jti.as_str()));
    let attempt = attempt(acting, &body.action, &body.resource, body.spend_usd)?;
    let cache = state.claims.clone();
    let reply = state
        .store
        .write(move |conn| {
            idempotency::run(
                conn,
                key.as_ref(),
                |conn| ledger::authorize(conn, &cache, &attempt),
                render_decision,
            )
        })
        .await?;
    match reply {
        Reply::Fresh(outcome) => {
            count_record(&state, &outcome, "pending");
            render_decision(&outcome)
        }
        Reply::Replayed(rendered) => Ok(rendered),
    }
}

fn render_decision(outcome: &AttemptOutcome) -> ApiResult<Rendered> {
    if let Some(reason @ (DenyReason::TokenRevoked | DenyReason::TokenExpired)) = outcome.denied {
        return Rendered::problem(
            &denial(reason, outcome.credential).with_record(outcome.aar_id.as_str()),
        );
    }
    let claims = &outcome.claims;
    Rendered::json(
        StatusCode::OK,
        &AuthorizeResponse {
            authorized: outcome.denied.is_none(),
            aar_id: outcome.aar_id.to_string(),
            trust_score: claims.svc_trust_score,
            provenance_ref: claims.svc_prov.to_string(),
            human_ref: claims.svc_human.to_string(),
            assurance_level: claims.svc_assurance.as_str().to_owned(),
            reason: outcome.denied.map(|r| r.code().to_owned()),
        },
    )
}

/// Closes a pending record with its result.
#[utoipa::path(
    post,
    path = "/v1/vat/aar/{aar_id}/complete",
    tag = "agent",
    params(("aar_id" = String, Path, description = "The record, `aar_<ulid>`")),
    request_body = CompleteRequest,
    responses(
        (status = 200, description = "The completed record", body = RecordBody),
        Errors,
    )
)]
pub(crate) async fn complete(
    State(state): State<AppState>,
    Path(aar_id): Path<String>,
    call: AgentCall,
    Json(body): Json<CompleteRequest>,
) -> ApiResult<axum::Json<RecordBody>> {
    let presented = call.completer(&state).await?;
    let aar_id = AarId::parse(&aar_id)
        .map_err(|_| ApiError::not_found("record_not_found", "no record has this aar_id"))?;
    let completion = Completion {
        aar_id,
        result: input::outcome(&body.result)?,
        result_hash: input::result_hash(body.result_hash.as_deref())?,
        spend: input::amount("spend_usd", body.spend_usd)?,
        presented,
    };
    let cache = state.claims.clone();
    let now = now_ms();
    let record = state
        .store
        .write(move |conn| ledger::complete(conn, &cache, &completion, now))
        .await?;
    state.metrics.record_written("completed");
    Ok(axum::Json(record))
}

/// Delegates a narrower token to a sub-agent.
#[utoipa::path(
    post,
    path = "/v1/vat/delegate",
    params(("Idempotency-Key" = Option<String>, Header, pattern = r"^[!-~]{1,255}$", description = "Retry-safe key: a repeat with the same body returns the first response")),
    tag = "agent",
    request_body = DelegateRequest,
    responses(
        (status = 201, description = "The child token", body = IssuedToken),
        Errors,
    )
)]
pub(crate) async fn delegate(
    State(state): State<AppState>,
    call: AgentCall,
    IdempotentJson { body, key }: IdempotentJson<DelegateRequest>,
) -> ApiResult<Rendered> {
    let parent = call
        .acting(&state, body.vat_jti.as_deref(), Need::Token)
        .await?
        .jti;
    let key = key.map(|k| k.scoped("delegate", parent.as_str()));
    let request = input::token_request(&body)?;
    let delegation = Delegation {
        parent,
        request,
        child_random: random::bytes(),
        record_random: random::bytes(),
    };
    let signing_key = state.keys.current().active.clone();
    let cache = state.claims.clone();
    let reply = state
        .write_signed(move |conn| {
            idempotency::run(
                conn,
                key.as_ref(),
                |conn| ledger::delegate_token(conn, &cache, &signing_key, delegation),
                render_delegation,
            )
        })
        .await?;
    match reply {
        Reply::Fresh(outcome) => {
            let status = match outcome {
                DelegationOutcome::Issued(_) => "completed",
                DelegationOutcome::Denied { .. } => "denied",
            };
            state.metrics.record_written(status);
            render_delegation(&outcome)
        }
        Reply::Replayed(rendered) => Ok(rendered),
    }
}

fn render_delegation(outcome: &DelegationOutcome) -> ApiResult<Rendered> {
    match outcome {
        DelegationOutcome::Issued(token) => Rendered::json(StatusCode::CREATED, token),
        DelegationOutcome::Denied { error, .. } => Rendered::problem(error),
    }
}

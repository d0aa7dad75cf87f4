//! Agent calls: record an action, authorize, complete, delegate. The agent
//! acts with a token: presented itself (`Authorization: Bearer`, or `DPoP`
//! with a proof for a bound token), or — for `record/action` and
//! `authorize`, as the spec shows — named by a bare `vat_jti` in the body.
//! `delegate` changes authority and always needs the token itself.

use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use mandate_core::{DenyReason, Usd};

use super::bodies;
use super::docs::Errors;
use super::extract::{Acting, AgentCall, IdempotentJson, Json, Need};
use super::input;
use super::problems::{denial, refusal};
use super::query::record_id;
use super::status::public_base;
use super::write::{Rendered, once};
use crate::clock::iso_ms;
use crate::error::ApiResult;
use crate::ledger::{Attempt, Attempted, Completion, Delegated, Delegation};
use crate::model::{
    ApprovalRef, AuthorizeRequest, AuthorizeResponse, CompleteRequest, DelegateRequest,
    IssuedToken, RecordActionRequest, RecordActionResponse, RecordBody,
};
use crate::store::approvals::ApprovalStatus;
use crate::{AppState, random, spans};

/// What an agent asks to do, checked.
fn attempt(
    acting: Acting,
    call: &AgentCall,
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
        traceparent: call.traceparent(),
    })
}

/// Counts a record written now (not a replayed answer's), and exports its
/// span once it has ended.
fn count_record(state: &AppState, attempted: Option<&Attempted>, allowed_status: &str) {
    if let Some(attempted) = attempted {
        let status = match (attempted.denied, &attempted.approval) {
            (Some(_), _) => "denied",
            (None, Some(_)) => "awaiting_approval",
            (None, None) => allowed_status,
        };
        state.metrics.record_written(status);
        spans::export(state, &attempted.aar_id);
    }
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
    let now = state.clock.now();
    let acting = call
        .acting(&state, now, body.vat_jti.as_deref(), Need::TokenOrJti)
        .await?;
    let key = key.map(|k| k.scoped(acting.org, "record_action", acting.jti.as_str()));
    let attempt = attempt(acting, &call, &body.action, &body.resource, body.spend_usd)?;
    let result = input::outcome(&body.result)?;
    let result_hash = input::result_hash(body.result_hash.as_deref())?;
    let (attempted, rendered) = once(
        &state,
        key,
        now,
        move |ledger| ledger.record_action(&attempt, result, result_hash.as_ref(), now),
        render_recorded,
    )
    .await?;
    count_record(&state, attempted.as_ref(), "completed");
    Ok(rendered)
}

fn render_recorded(attempted: &Attempted) -> Rendered {
    match attempted.denied {
        Some(reason) => Rendered::problem(
            &denial(reason, attempted.credential).with_record(attempted.aar_id.as_str()),
        ),
        None => Rendered::json(
            StatusCode::CREATED,
            &RecordActionResponse {
                recorded: true,
                aar_id: attempted.aar_id.to_string(),
                provenance_ref: attempted.claims.svc_prov.to_string(),
                trust_score: attempted.claims.svc_trust_score,
                delegation_depth: attempted.claims.svc_depth,
            },
        ),
    }
}

/// Pre-flight check of an action; creates a pending record (or a denied
/// one, or one awaiting a human's approval).
#[utoipa::path(
    post,
    path = "/v1/vat/authorize",
    params(("Idempotency-Key" = Option<String>, Header, pattern = r"^[!-~]{1,255}$", description = "Retry-safe key: a repeat with the same body returns the first response")),
    tag = "agent",
    request_body = AuthorizeRequest,
    responses(
        (status = 200, description = "The decision; a refusal is `authorized: false`", body = AuthorizeResponse),
        (status = 202, description = "A grant requires a human's approval first: `authorized: false` with the `approval` to wait for (`GET /v1/vat/approvals/{approval_id}`)", body = AuthorizeResponse),
        Errors,
    )
)]
pub(crate) async fn authorize(
    State(state): State<AppState>,
    call: AgentCall,
    IdempotentJson { body, key }: IdempotentJson<AuthorizeRequest>,
) -> ApiResult<Rendered> {
    let now = state.clock.now();
    let acting = call
        .acting(&state, now, body.vat_jti.as_deref(), Need::TokenOrJti)
        .await?;
    let key = key.map(|k| k.scoped(acting.org, "authorize", acting.jti.as_str()));
    let attempt = attempt(acting, &call, &body.action, &body.resource, body.spend_usd)?;
    let (attempted, rendered) = once(
        &state,
        key,
        now,
        move |ledger| ledger.authorize(&attempt, now),
        render_decision,
    )
    .await?;
    count_record(&state, attempted.as_ref(), "pending");
    Ok(rendered)
}

fn render_decision(attempted: &Attempted) -> Rendered {
    if let Some(reason @ (DenyReason::TokenRevoked | DenyReason::TokenExpired)) = attempted.denied {
        return Rendered::problem(
            &denial(reason, attempted.credential).with_record(attempted.aar_id.as_str()),
        );
    }
    let claims = &attempted.claims;
    let status = match attempted.approval {
        Some(_) => StatusCode::ACCEPTED,
        None => StatusCode::OK,
    };
    Rendered::json(
        status,
        &AuthorizeResponse {
            authorized: attempted.denied.is_none() && attempted.approval.is_none(),
            aar_id: attempted.aar_id.to_string(),
            trust_score: claims.svc_trust_score,
            provenance_ref: claims.svc_prov.to_string(),
            human_ref: claims.svc_human.to_string(),
            assurance_level: claims.svc_assurance.as_str().to_owned(),
            reason: attempted.denied.map(|r| r.code().to_owned()),
            approval: attempted.approval.as_ref().map(|approval| ApprovalRef {
                approval_id: approval.approval_id.to_string(),
                status: ApprovalStatus::Pending.as_str().to_owned(),
                expires_at: iso_ms(approval.expires_at),
            }),
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
    let now = state.clock.now();
    let presented = call.completer(&state, now).await?;
    let aar_id = record_id(&aar_id)?;
    let completion = Completion {
        aar_id,
        result: input::outcome(&body.result)?,
        result_hash: input::result_hash(body.result_hash.as_deref())?,
        spend: input::amount("spend_usd", body.spend_usd)?,
        presented,
    };
    let presented_token = completion.presented.is_some();
    let completed_id = completion.aar_id.clone();
    let record = state
        .write(move |ledger| ledger.complete(&completion, now))
        .await?;
    state.metrics.record_written("completed");
    spans::export(&state, &completed_id);
    Ok(axum::Json(bodies::completed(record, presented_token)))
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
    headers: HeaderMap,
    IdempotentJson { body, key }: IdempotentJson<DelegateRequest>,
) -> ApiResult<Rendered> {
    let now = state.clock.now();
    let acting = call
        .acting(&state, now, body.vat_jti.as_deref(), Need::Token)
        .await?;
    let parent = acting.jti;
    let key = key.map(|k| k.scoped(acting.org, "delegate", parent.as_str()));
    let request = input::token_request(&body)?;
    let delegation = Delegation {
        parent,
        request,
        child_random: random::bytes(),
        record_random: random::bytes(),
        status_base: public_base(&state, &headers),
        traceparent: call.traceparent(),
    };
    let signing_key = state.keys.current().active.clone();
    let (delegated, rendered) = once(
        &state,
        key,
        now,
        move |ledger| ledger.delegate(delegation, &signing_key, now),
        render_delegation,
    )
    .await?;
    if let Some(delegated) = delegated {
        let (status, aar_id) = match &delegated {
            Delegated::Issued { aar_id, .. } => ("completed", aar_id),
            Delegated::Refused { aar_id, .. } => ("denied", aar_id),
        };
        state.metrics.record_written(status);
        spans::export(&state, aar_id);
    }
    Ok(rendered)
}

fn render_delegation(delegated: &Delegated) -> Rendered {
    match delegated {
        Delegated::Issued {
            child,
            compact_jwt,
            aar_id,
        } => match bodies::issued(child, compact_jwt.clone(), Some(aar_id)) {
            Ok(token) => Rendered::json(StatusCode::CREATED, &token),
            Err(error) => Rendered::problem(&error),
        },
        Delegated::Refused { aar_id, refusal: r } => {
            Rendered::problem(&refusal(r).with_record(aar_id.as_str()))
        }
    }
}

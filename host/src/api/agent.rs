//! Agent calls: record an action (or a batch of them), authorize, complete,
//! delegate. The agent acts with a token: presented itself (`Authorization:
//! Bearer`, or `DPoP` with a proof for a bound token), or — for
//! `record/action` (and each record of a batch) and `authorize`, as the
//! spec shows — named by a bare `vat_jti` in the body. `delegate` changes
//! authority and always needs the token itself.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use mandate_core::limits::MAX_BATCH_RECORDS;
use mandate_core::policy::Selector;
use mandate_core::{
    AarId, Action, Args, DenyReason, Outcome, Resource, ResultHash, StrictJson, Usd,
};

use super::bodies;
use super::docs::Errors;
use super::extract::{Acting, AgentCall, IdempotentJson, Need, Relaying};
use super::input;
use super::problems::{args_detail, denial, refusal};
use super::query::record_id;
use super::status::public_base;
use super::write::{Rendered, once, once_resuming, once_where};
use crate::clock::iso_ms;
use crate::error::{ApiError, ApiResult};
use crate::ledger::{
    ActionReport, Attempt, Attempted, Completion, Delegated, Delegation, LedgerError,
};
use crate::model::{
    ApprovalRef, AuthorizeRequest, AuthorizeResponse, CompleteRequest, DelegateRequest,
    DelegationAwaitingApproval, IssuedToken, RecordActionRequest, RecordActionResponse,
    RecordActionResult, RecordActionsRequest, RecordActionsResponse, RecordBody, RecordedAction,
    RefusedAction,
};
use crate::store::StoreError;
use crate::store::approvals::ApprovalStatus;
use crate::store::idempotency::StoredReply;
use crate::store::records::{Credential, Record};
use crate::{AppState, random, spans};

/// What an agent asks to do, checked (by `authorize`, `record/action` and
/// an AuthZEN evaluation alike).
pub(super) struct Asked {
    action: Action,
    resource: Resource,
    spend: Usd,
    args: Option<Args>,
}

impl Asked {
    pub(super) fn of(
        action: &str,
        resource: &str,
        spend_usd: Option<f64>,
        args: Option<&StrictJson>,
    ) -> ApiResult<Asked> {
        Ok(Asked {
            action: input::action(action)?,
            resource: input::resource(resource)?,
            spend: input::amount("spend_usd", spend_usd)?.unwrap_or(Usd::ZERO),
            args: input::args(args)?,
        })
    }

    /// The attempt of the token `acting` with, in `call`; its arguments
    /// stored with `redact` replaced.
    pub(super) fn by(
        self,
        acting: Acting,
        call: &AgentCall,
        redact: &[Selector],
    ) -> ApiResult<Attempt> {
        let stored_args = self
            .args
            .as_ref()
            .map(|args| stored_args(args, redact))
            .transpose()?;
        Ok(Attempt {
            relay_jkt: acting.relay,
            jti: acting.jti,
            credential: acting.credential,
            action: self.action,
            resource: self.resource,
            spend: self.spend,
            random: random::bytes(),
            traceparent: call.traceparent(),
            args: self.args,
            stored_args,
        })
    }
}

/// Arguments as a record stores them: canonical JSON, each value a
/// `redact` selector finds replaced by `"[redacted]"`.
fn stored_args(args: &Args, redact: &[Selector]) -> ApiResult<String> {
    mandate_core::policy::redact(args, redact)
        .ok_or_else(|| ApiError::internal("arguments read strictly could not be written"))
}

/// A `record/action` body, checked: what was done and how it ended.
struct Report {
    asked: Asked,
    result: Outcome,
    result_hash: Option<ResultHash>,
}

impl Report {
    fn of(body: &RecordActionRequest) -> ApiResult<Report> {
        Ok(Report {
            asked: Asked::of(
                &body.action,
                &body.resource,
                body.spend_usd,
                body.args.as_ref(),
            )?,
            result: input::outcome(&body.result)?,
            result_hash: input::result_hash(body.result_hash.as_deref())?,
        })
    }

    /// The report of the token `acting` with, in `call`.
    fn by(self, acting: Acting, call: &AgentCall, redact: &[Selector]) -> ApiResult<ActionReport> {
        Ok(ActionReport {
            attempt: self.asked.by(acting, call, redact)?,
            result: self.result,
            result_hash: self.result_hash,
        })
    }
}

/// Counts a record written now (not a replayed answer's), and exports its
/// span once it has ended.
pub(super) fn count_record(state: &AppState, attempted: Option<&Attempted>, allowed_status: &str) {
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
    let report = Report::of(&body)?.by(acting, &call, &state.redact_args)?;
    let (attempted, rendered) = once(
        &state,
        key,
        now,
        move |ledger| {
            let result_hash = report.result_hash.as_ref();
            ledger.record_action(&report.attempt, report.result, result_hash, now)
        },
        render_recorded,
    )
    .await?;
    count_record(&state, attempted.as_ref(), "completed");
    Ok(rendered)
}

/// What `record/action` answers for an attempt: the record, or the problem
/// of its denial.
fn recorded(attempted: &Attempted) -> Result<RecordActionResponse, ApiError> {
    match attempted.denied {
        Some(reason) => Err(denial(reason, attempted).with_record(attempted.aar_id.as_str())),
        None => Ok(RecordActionResponse {
            recorded: true,
            aar_id: attempted.aar_id.to_string(),
            provenance_ref: attempted.claims.svc_prov.to_string(),
            trust_score: attempted.claims.svc_trust_score,
            trust_in_force: attempted.trust_in_force,
            delegation_depth: attempted.claims.svc_depth,
        }),
    }
}

fn render_recorded(attempted: &Attempted) -> Rendered {
    match recorded(attempted) {
        Ok(body) => Rendered::json(StatusCode::CREATED, &body),
        Err(problem) => Rendered::problem(&problem),
    }
}

/// Many actions recorded in one call and one commit, each exactly as
/// `record/action` records one.
#[utoipa::path(
    post,
    path = "/v1/vat/record/actions",
    params(("Idempotency-Key" = Option<String>, Header, pattern = r"^[!-~]{1,255}$", description = "Retry-safe key for the whole batch: a repeat with the same body returns the first response")),
    tag = "agent",
    request_body = RecordActionsRequest,
    responses(
        (status = 200, description = "The batch was committed: one result per record, in the order sent, each recorded or refused as `record/action` would answer it alone", body = RecordActionsResponse),
        Errors,
    )
)]
pub(crate) async fn record_actions(
    State(state): State<AppState>,
    call: AgentCall,
    IdempotentJson { body, key }: IdempotentJson<RecordActionsRequest>,
) -> ApiResult<Rendered> {
    let now = state.clock.now();
    input::list_length("records", body.records.len(), MAX_BATCH_RECORDS)?;
    let named: Vec<Option<&str>> = body
        .records
        .iter()
        .map(|record| record.vat_jti.as_deref())
        .collect();
    let acting = call.acting_each(&state, now, &named).await?;
    // The key belongs to the first token that acts: the one presented, or
    // the first record's that this server holds.
    let first = acting.iter().flatten().next();
    let key = key.and_then(|k| {
        first.map(|acting| k.scoped(acting.org, "record_actions", acting.jti.as_str()))
    });
    // A malformed record refuses the batch: nothing is written.
    let mut reports = Vec::with_capacity(acting.len());
    let mut refused = Vec::with_capacity(acting.len());
    for (index, (body, acting)) in body.records.iter().zip(acting).enumerate() {
        let report = Report::of(body).map_err(|error| error.in_item("records", index))?;
        match acting {
            Ok(acting) => {
                reports.push(
                    report
                        .by(acting, &call, &state.redact_args)
                        .map_err(|error| error.in_item("records", index))?,
                );
                refused.push(None);
            }
            Err(error) => refused.push(Some(error)),
        }
    }
    let (attempted, rendered) = once(
        &state,
        key,
        now,
        move |ledger| {
            let mut recorded = ledger.record_actions(&reports, now)?.into_iter();
            Ok(Batch(
                refused
                    .iter()
                    .map(|refused| match refused {
                        Some(error) => Err(error.clone()),
                        None => match recorded.next() {
                            Some(outcome) => outcome.map_err(ApiError::from),
                            None => Err(ApiError::internal("a batch lost a record's outcome")),
                        },
                    })
                    .collect(),
            ))
        },
        render_batch,
    )
    .await?;
    let written = attempted.iter().flat_map(|batch| &batch.0).flatten();
    for attempted in written {
        count_record(&state, Some(attempted), "completed");
    }
    Ok(rendered)
}

/// What came of each record of a batch, in order: the attempt, or the
/// problem of a record refused without one.
struct Batch(Vec<Result<Attempted, ApiError>>);

/// The answer to a committed batch: each record's result, in order.
fn render_batch(Batch(outcomes): &Batch) -> Rendered {
    let results = outcomes
        .iter()
        .enumerate()
        .map(|(index, outcome)| {
            let index = u32::try_from(index).unwrap_or(u32::MAX);
            match outcome.as_ref().map_err(Clone::clone).and_then(recorded) {
                Ok(body) => RecordActionResult::Recorded(RecordedAction {
                    index,
                    recorded: true,
                    aar_id: body.aar_id,
                    provenance_ref: body.provenance_ref,
                    trust_score: body.trust_score,
                    trust_in_force: body.trust_in_force,
                    delegation_depth: body.delegation_depth,
                }),
                Err(error) => {
                    let problem = error.problem();
                    RecordActionResult::Refused(RefusedAction {
                        index,
                        recorded: false,
                        status: problem.status,
                        code: problem.code,
                        detail: problem.detail,
                        aar_id: problem.aar_id,
                    })
                }
            }
        })
        .collect();
    Rendered::json(StatusCode::OK, &RecordActionsResponse { results })
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
        .acting_relayed(
            &state,
            now,
            body.vat_jti.as_deref(),
            Need::TokenOrJti,
            Relaying::WithClientProof,
        )
        .await?;
    let key = key.map(|k| k.scoped(acting.org, "authorize", acting.jti.as_str()));
    let attempt = Asked::of(
        &body.action,
        &body.resource,
        body.spend_usd,
        body.args.as_ref(),
    )?
    .by(acting, &call, &state.redact_args)?;
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
            &denial(reason, attempted).with_record(attempted.aar_id.as_str()),
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
            trust_in_force: attempted.trust_in_force,
            provenance_ref: claims.svc_prov.to_string(),
            human_ref: claims.svc_human.to_string(),
            assurance_level: claims.svc_assurance.as_str().to_owned(),
            reason: attempted.denied.map(|r| r.code().to_owned()),
            reason_detail: attempted
                .args_denial
                .as_ref()
                .filter(|_| attempted.credential == Credential::Token)
                .map(args_detail),
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
    params(
        ("aar_id" = String, Path, description = "The record, `aar_<ulid>`"),
        ("Idempotency-Key" = Option<String>, Header, pattern = r"^[!-~]{1,255}$", description = "Retry-safe key: a repeat with the same body returns the first response"),
    ),
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
    IdempotentJson { body, key }: IdempotentJson<CompleteRequest>,
) -> ApiResult<Rendered> {
    let now = state.clock.now();
    let presented = call.completer(&state, now).await?;
    let aar_id = record_id(&aar_id)?;
    // The key belongs to the record and to how the completion was made: a
    // retry replays the first answer only with the same token (or, for a
    // record made with a bare `vat_jti`, again without one), so a replay
    // shows nobody more than the first answer showed its sender.
    let credential = match &presented {
        Some((jti, None)) => format!("{aar_id} {jti}"),
        Some((jti, Some(relay))) => format!("{aar_id} {jti} {relay}"),
        None => aar_id.to_string(),
    };
    let completed_id = aar_id.clone();
    let keyed_id = aar_id.clone();
    let completion = Completion {
        aar_id,
        result: input::outcome(&body.result)?,
        result_hash: input::result_hash(body.result_hash.as_deref())?,
        spend: input::amount("spend_usd", body.spend_usd)?,
        relay: presented.as_ref().and_then(|(_, relay)| relay.clone()),
        presented: presented.map(|(jti, _)| jti),
    };
    let (completed, rendered) = once_where(
        &state,
        move |ledger| match key.clone() {
            Some(key) => {
                let org = ledger.record_org(&keyed_id)?;
                Ok(Some(key.scoped(org, "complete", &credential)))
            }
            None => Ok(None),
        },
        now,
        move |ledger| ledger.complete(&completion, now),
        render_completed,
    )
    .await?;
    if completed.is_some() {
        state.metrics.record_written("completed");
        spans::export(&state, &completed_id);
    }
    Ok(rendered)
}

fn render_completed(record: &Record) -> Rendered {
    Rendered::json(StatusCode::OK, &bodies::named_record(record.clone()))
}

/// Delegates a narrower token to a sub-agent: a new agent (registered
/// under the delegating agent) or one registered under it. When a grant of
/// the chain requires approval of `delegate`, answers 202 with the
/// approval; the same request repeated with the same `Idempotency-Key`
/// once it is approved returns the child token.
#[utoipa::path(
    post,
    path = "/v1/vat/delegate",
    params(("Idempotency-Key" = Option<String>, Header, pattern = r"^[!-~]{1,255}$", description = "Retry-safe key: a repeat with the same body returns the first response; required when the delegation needs a human's approval, whose child the repeat returns once approved")),
    tag = "agent",
    request_body = DelegateRequest,
    responses(
        (status = 201, description = "The child token", body = IssuedToken),
        (status = 202, description = "The delegation waits for a human's approval", body = DelegationAwaitingApproval),
        Errors,
    )
)]
pub(crate) async fn delegate(
    State(state): State<AppState>,
    call: AgentCall,
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
        status_base: public_base(&state),
        traceparent: call.traceparent(),
        resumable: key.is_some(),
    };
    let signing_key = state.keys.current().active.clone();
    let resumed = delegation.clone();
    let resume_key = signing_key.clone();
    let (delegated, rendered) = once_resuming(
        &state,
        key,
        now,
        move |ledger| ledger.delegate(delegation.clone(), &signing_key, now),
        move |ledger, waiting| {
            let aar_id = waiting_delegation(waiting)?;
            ledger.resume_delegation(&aar_id, resumed.clone(), &resume_key, now)
        },
        render_delegation,
    )
    .await?;
    if let Some(delegated) = delegated {
        delegation_written(&state, &delegated);
    }
    Ok(rendered)
}

/// Counts and exports the `delegate` record a delegation wrote (by
/// `POST /v1/vat/delegate` or a token exchange).
pub(crate) fn delegation_written(state: &AppState, delegated: &Delegated) {
    let (status, aar_id) = match delegated {
        Delegated::Issued { aar_id, .. } => ("completed", aar_id),
        Delegated::Refused { aar_id, .. } => ("denied", aar_id),
        Delegated::AwaitingApproval { aar_id, .. } => ("awaiting_approval", aar_id),
    };
    state.metrics.record_written(status);
    spans::export(state, aar_id);
}

/// The `delegate` record of a stored 202 answer.
pub(crate) fn waiting_delegation(waiting: &StoredReply) -> Result<AarId, LedgerError> {
    serde_json::from_slice::<DelegationAwaitingApproval>(&waiting.body)
        .ok()
        .and_then(|body| AarId::parse(&body.aar_id).ok())
        .ok_or_else(|| {
            LedgerError::Store(StoreError::Internal(
                "a stored delegation answer names no record".to_owned(),
            ))
        })
}

pub(crate) fn render_delegation(delegated: &Delegated) -> Rendered {
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
        Delegated::AwaitingApproval { aar_id, approval } => Rendered::json(
            StatusCode::ACCEPTED,
            &DelegationAwaitingApproval {
                aar_id: aar_id.to_string(),
                approval: ApprovalRef {
                    approval_id: approval.approval_id.to_string(),
                    status: ApprovalStatus::Pending.as_str().to_owned(),
                    expires_at: iso_ms(approval.expires_at),
                },
            },
        ),
    }
}

//! The OpenID AuthZEN Authorization API 1.0 (DESIGN.md section 18): a
//! gateway in front of tools asks for a decision on an agent's act. The
//! subject is the agent's token, the action and resource Mandate's, and
//! `context.args` the arguments; the decision is `authorize`'s, made by the
//! same code (`Asked`, the ledger's judgement), and recorded as a record of
//! its own kind (origin `evaluation`). See docs/authzen.md.

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use mandate_core::limits::MAX_BATCH_RECORDS;

use super::agent::{Asked, count_record};
use super::docs::Errors;
use super::extract::{Acting, AgentCall, ApiKeyAuth, Presented, RequestIdJson};
use super::input;
use super::problems::denial;
use super::status::public_base;
use super::write::{Rendered, once};
use crate::AppState;
use crate::apikeys::Principal;
use crate::clock::{Now, iso_ms};
use crate::error::{ApiError, ApiResult};
use crate::ledger::{Attempt, Evaluated, LedgerError};
use crate::model::authzen::{
    AccessApproval, AccessDecision, AccessDecisionContext, AuthzenAction, AuthzenContext,
    AuthzenResource, AuthzenSubject, EvaluationItem, EvaluationRequest, EvaluationsAnswer,
    EvaluationsRequest, EvaluationsResponse, EvaluationsSemantic, PdpMetadata, SUBJECT_TYPE,
};
use crate::store::approvals::ApprovalStatus;

/// Where the single evaluation is served.
const EVALUATION_PATH: &str = "/v1/access/evaluation";
/// Where evaluations are served.
const EVALUATIONS_PATH: &str = "/v1/access/evaluations";

/// One evaluation, its defaults applied.
struct Item {
    subject: AuthzenSubject,
    action: AuthzenAction,
    resource: AuthzenResource,
    context: AuthzenContext,
}

/// A request's shape problem: AuthZEN answers it 400 ("JSON
/// Serialization": a required attribute omitted is a Bad Request).
fn missing(field: &str) -> ApiError {
    let mut error = ApiError::invalid(
        field,
        "missing_field",
        format!("{field} is required (here, or as the request's default)"),
    );
    error.status = StatusCode::BAD_REQUEST;
    error
}

/// Mandate's resource for an AuthZEN resource: `type:id`. A type that is
/// empty or holds a `:` would make the split ambiguous and is refused, as
/// is anything Mandate's resource names refuse.
fn resource(resource: &AuthzenResource) -> ApiResult<String> {
    if resource.kind.is_empty() || resource.kind.contains(':') {
        return Err(ApiError::invalid(
            "resource.type",
            "invalid_resource",
            "resource.type must be the system part of a Mandate resource: not empty, no `:`",
        ));
    }
    Ok(format!("{}:{}", resource.kind, resource.id))
}

/// A subject verified earlier in the same request: its token, the proof
/// it came with, and who acts.
type Verified = (String, Option<String>, Acting);

/// The attempt an evaluation asks about, or why it cannot be one: a
/// subject that is not an agent token this organisation holds (verified,
/// with its proof when bound), or an action, resource or arguments
/// Mandate's rules refuse. A subject and proof verified for an earlier
/// evaluation of the same request (`seen`) are not verified again — one
/// proof is for one request, whichever of its evaluations share it — but
/// each evaluation counts against the rate limits.
async fn attempt(
    state: &AppState,
    call: &AgentCall,
    now: Now,
    gateway: &Principal,
    item: &Item,
    seen: &mut Vec<Verified>,
) -> ApiResult<Attempt> {
    if item.subject.kind != SUBJECT_TYPE {
        return Err(ApiError::bad_request(
            "subject_unsupported",
            format!(
                "subject.type must be `{SUBJECT_TYPE}` with the agent's compact token as subject.id"
            ),
        ));
    }
    let (id, proof) = (&item.subject.id, &item.context.dpop);
    let acting = match seen.iter().find(|(i, p, _)| i == id && p == proof) {
        Some((_, _, acting)) => {
            state.limiters.token(acting.jti.as_str())?;
            state.limiters.org(acting.org)?;
            acting.clone()
        }
        None => {
            let acting = call.subject(state, now, id, proof.as_deref()).await?;
            seen.push((id.clone(), proof.clone(), acting.clone()));
            acting
        }
    };
    // Another organisation's token is, to this gateway, none at all.
    if acting.org != gateway.org {
        return Err(LedgerError::TokenInactive.into());
    }
    let resource = resource(&item.resource)?;
    Asked::of(
        &item.action.name,
        &resource,
        item.context.spend_usd,
        item.context.args.as_ref(),
    )?
    .by(acting, call, &state.redact_args)
}

/// A refusal before any judgement, as a decision.
fn refused(error: &ApiError) -> AccessDecision {
    let problem = error.problem();
    AccessDecision {
        decision: false,
        context: Some(AccessDecisionContext {
            reason: Some(problem.code),
            detail: Some(problem.detail),
            aar_id: problem.aar_id,
            approval: None,
        }),
    }
}

/// The decision on a judged attempt: permitted only when allowed and
/// waiting for nobody; a denial with Mandate's code and words; an approval
/// to wait for with where to read it (under the deployment's public URL,
/// `base`, built only for an approval).
fn decided(evaluated: &Evaluated, base: impl FnOnce() -> String) -> AccessDecision {
    let attempted = &evaluated.attempted;
    let aar_id = Some(attempted.aar_id.to_string());
    if let Some(reason) = attempted.denied {
        let problem = denial(reason, attempted).problem();
        return AccessDecision {
            decision: false,
            context: Some(AccessDecisionContext {
                reason: Some(problem.code),
                detail: Some(problem.detail),
                aar_id,
                approval: None,
            }),
        };
    }
    match &attempted.approval {
        Some(approval) => AccessDecision {
            decision: false,
            context: Some(AccessDecisionContext {
                reason: Some(mandate_core::DenyReason::ApprovalRequired.code().to_owned()),
                detail: Some(
                    "a grant of the token's chain requires a human's approval of this act; \
                     once approved, the first matching evaluation is permitted"
                        .to_owned(),
                ),
                aar_id,
                approval: Some(AccessApproval {
                    approval_id: approval.approval_id.to_string(),
                    status: ApprovalStatus::Pending.as_str().to_owned(),
                    expires_at: iso_ms(approval.expires_at),
                    url: format!("{}/v1/vat/approvals/{}", base(), approval.approval_id),
                }),
            }),
        },
        None => AccessDecision {
            decision: true,
            context: Some(AccessDecisionContext {
                aar_id,
                ..AccessDecisionContext::default()
            }),
        },
    }
}

/// The answer of an evaluation request as stored and replayed, with the
/// records written now.
struct Answered {
    answer: EvaluationsAnswer,
    written: Vec<Evaluated>,
}

/// The decisions as answered (untagged: a Decision, or `{evaluations}`).
fn render(answered: &Answered) -> Rendered {
    Rendered::json(StatusCode::OK, &answered.answer)
}

/// Decides `items` in order under `semantic`, in one commit, once per
/// `X-Request-ID`: a retry with the same body answers the first decisions
/// and records nothing.
async fn decide(
    state: &AppState,
    gateway: &Principal,
    call: &AgentCall,
    key: Option<Presented>,
    items: Vec<Item>,
    semantic: EvaluationsSemantic,
    single: bool,
) -> ApiResult<Rendered> {
    let now = state.clock.now();
    let route = match single {
        true => "evaluation",
        false => "evaluations",
    };
    let key = key.map(|k| k.scoped(gateway.org, route, &gateway.id));
    let mut attempts = Vec::with_capacity(items.len());
    let mut seen = Vec::new();
    for item in &items {
        let attempt = attempt(state, call, now, gateway, item, &mut seen).await;
        // A limit reached or a server that cannot answer now is the
        // request's answer (retry later), not a decision.
        if let Err(error) = &attempt
            && (error.status == StatusCode::TOO_MANY_REQUESTS || error.status.is_server_error())
        {
            return Err(error.clone());
        }
        attempts.push(attempt);
    }
    let shared = state.clone();
    let (answered, rendered) = once(
        state,
        key,
        now,
        move |ledger| {
            let mut decisions = Vec::with_capacity(attempts.len());
            let mut written = Vec::new();
            for attempt in &attempts {
                let decision = match attempt {
                    Err(error) => refused(error),
                    Ok(attempt) => match ledger.evaluate_one(attempt, now)? {
                        Err(error) => refused(&ApiError::from(error)),
                        Ok(evaluated) => {
                            let decision = decided(&evaluated, || public_base(&shared));
                            if evaluated.written {
                                written.push(evaluated);
                            }
                            decision
                        }
                    },
                };
                let permitted = decision.decision;
                decisions.push(decision);
                let stop = match semantic {
                    EvaluationsSemantic::ExecuteAll => false,
                    EvaluationsSemantic::DenyOnFirstDeny => !permitted,
                    EvaluationsSemantic::PermitOnFirstPermit => permitted,
                };
                if stop {
                    break;
                }
            }
            let answer = match (single, decisions.pop()) {
                (true, Some(decision)) => EvaluationsAnswer::One(decision),
                (_, last) => {
                    decisions.extend(last);
                    EvaluationsAnswer::Many(EvaluationsResponse {
                        evaluations: decisions,
                    })
                }
            };
            Ok(Answered { answer, written })
        },
        render,
    )
    .await
    .map_err(|error| match error.code {
        // The shared machinery names its own header.
        "idempotency_key_reused" => ApiError::invalid(
            "X-Request-ID",
            "idempotency_key_reused",
            "this X-Request-ID was sent before with another body: a retry sends the same body, another request another id",
        ),
        _ => error,
    })?;
    for evaluated in answered.iter().flat_map(|answered| &answered.written) {
        count_record(state, Some(&evaluated.attempted), "completed");
    }
    Ok(rendered)
}

/// AuthZEN Access Evaluation (§6): may this agent's token do this act?
/// The decision is `authorize`'s, recorded as a completed record of its
/// own kind (permitted or denied) that counts once against budgets and
/// `max_actions`; an act that needs a human's approval is `decision:
/// false` with the approval in `context` until approved, and then the first
/// matching evaluation is permitted. A refusal's `context.reason` is
/// Mandate's code. With `X-Request-ID`, a retry answers the same decision
/// and records nothing.
#[utoipa::path(
    post,
    path = "/v1/access/evaluation",
    params(("X-Request-ID" = Option<String>, Header, pattern = r"^[!-~]{1,255}$", description = "The request's id (AuthZEN §10.1.3), echoed on the answer: a retry with the same id and body answers the first decision and records nothing")),
    tag = "authzen",
    request_body = EvaluationRequest,
    responses(
        (status = 200, description = "The decision", body = AccessDecision),
        Errors,
    )
)]
pub(crate) async fn evaluation(
    State(state): State<AppState>,
    ApiKeyAuth(gateway): ApiKeyAuth,
    call: AgentCall,
    RequestIdJson { body, key }: RequestIdJson<EvaluationRequest>,
) -> ApiResult<Rendered> {
    let item = Item {
        subject: body.subject,
        action: body.action,
        resource: body.resource,
        context: body.context.unwrap_or_default(),
    };
    decide(
        &state,
        &gateway,
        &call,
        key,
        vec![item],
        EvaluationsSemantic::ExecuteAll,
        true,
    )
    .await
}

/// Each evaluation with the request's defaults: a member it holds
/// replaces the default whole (AuthZEN §7.1.1).
fn items(body: EvaluationsRequest) -> ApiResult<(Vec<Item>, bool)> {
    let evaluations = body.evaluations.unwrap_or_default();
    let single = evaluations.is_empty();
    if evaluations.len() > MAX_BATCH_RECORDS {
        let mut error = input::list_length("evaluations", evaluations.len(), MAX_BATCH_RECORDS)
            .err()
            .unwrap_or_else(|| ApiError::internal("a list over its cap was let through"));
        error.status = StatusCode::BAD_REQUEST;
        return Err(error);
    }
    let evaluations = match single {
        true => vec![EvaluationItem::default()],
        false => evaluations,
    };
    let at = |index: usize, field: &str| match single {
        true => field.to_owned(),
        false => format!("evaluations[{index}].{field}"),
    };
    evaluations
        .into_iter()
        .enumerate()
        .map(|(index, item)| {
            Ok(Item {
                subject: item
                    .subject
                    .or_else(|| body.subject.clone())
                    .ok_or_else(|| missing(&at(index, "subject")))?,
                action: item
                    .action
                    .or_else(|| body.action.clone())
                    .ok_or_else(|| missing(&at(index, "action")))?,
                resource: item
                    .resource
                    .or_else(|| body.resource.clone())
                    .ok_or_else(|| missing(&at(index, "resource")))?,
                context: item
                    .context
                    .or_else(|| body.context.clone())
                    .unwrap_or_default(),
            })
        })
        .collect::<ApiResult<Vec<Item>>>()
        .map(|items| (items, single))
}

/// AuthZEN Access Evaluations (§7): several evaluations in one request and
/// one commit, each decided as `POST /v1/access/evaluation` decides one, in
/// order, under `options.evaluations_semantic` (`execute_all`, the default;
/// `deny_on_first_deny`; `permit_on_first_permit`). Without `evaluations`
/// it is one evaluation of the top-level members, answered as one
/// decision.
#[utoipa::path(
    post,
    path = "/v1/access/evaluations",
    params(("X-Request-ID" = Option<String>, Header, pattern = r"^[!-~]{1,255}$", description = "The request's id (AuthZEN §10.1.3), echoed on the answer: a retry with the same id and body answers the first decisions and records nothing")),
    tag = "authzen",
    request_body = EvaluationsRequest,
    responses(
        (status = 200, description = "The decisions, in the order asked (fewer when a semantic stopped early); one decision for a request without `evaluations`", body = EvaluationsAnswer),
        Errors,
    )
)]
pub(crate) async fn evaluations(
    State(state): State<AppState>,
    ApiKeyAuth(gateway): ApiKeyAuth,
    call: AgentCall,
    RequestIdJson { body, key }: RequestIdJson<EvaluationsRequest>,
) -> ApiResult<Rendered> {
    let semantic = body
        .options
        .as_ref()
        .and_then(|options| options.evaluations_semantic)
        .unwrap_or_default();
    let (items, single) = items(body)?;
    decide(&state, &gateway, &call, key, items, semantic, single).await
}

/// AuthZEN Policy Decision Point metadata (§9), every URL built from the
/// deployment's public URL (never a request's `Host`).
#[utoipa::path(
    get,
    path = "/.well-known/authzen-configuration",
    tag = "authzen",
    responses((status = 200, description = "The PDP metadata", body = PdpMetadata))
)]
pub(crate) async fn configuration(State(state): State<AppState>) -> Response {
    let base = public_base(&state);
    axum::Json(PdpMetadata {
        access_evaluation_endpoint: format!("{base}{EVALUATION_PATH}"),
        access_evaluations_endpoint: format!("{base}{EVALUATIONS_PATH}"),
        policy_decision_point: base,
    })
    .into_response()
}

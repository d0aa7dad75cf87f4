//! The one mapping from the typed failures of the write side, the read side
//! and the store to HTTP: status, code and detail of each problem.

use axum::http::StatusCode;
use mandate_core::{
    ArgsDenial, ChainArgsDenial, DenyReason, IssueError, RecordError, Scope, Widening,
};

use crate::error::{ApiError, ViolationBody};
use crate::ledger::{Attempted, LedgerError, QuotaExceeded, Refusal};
use crate::queries::QueryError;
use crate::store::StoreError;
use crate::store::records::Credential;

impl From<StoreError> for ApiError {
    fn from(error: StoreError) -> ApiError {
        match error {
            StoreError::Unavailable(detail) => ApiError::unavailable(detail),
            StoreError::OverBudget => ApiError::query_too_broad(
                "the request needs more reading than the query time budget allows; narrow it",
            ),
            StoreError::Internal(cause) => ApiError::internal(cause),
        }
    }
}

/// The answer to an illegal record lifecycle transition.
fn lifecycle(error: RecordError) -> ApiError {
    match error {
        RecordError::NoRecord => ApiError::not_found(error.code(), error.to_string()),
        RecordError::AlreadyCompleted
        | RecordError::AlreadyRated
        | RecordError::NotCompletable
        | RecordError::NotRatable
        | RecordError::ApprovalPending
        | RecordError::NotAwaitingApproval => ApiError::conflict(error.code(), error.to_string()),
        other => ApiError::internal(other),
    }
}

impl From<LedgerError> for ApiError {
    fn from(error: LedgerError) -> ApiError {
        let message = error.to_string();
        match error {
            LedgerError::TokenInactive => ApiError::token_inactive(),
            LedgerError::HolderInactive { expired } => ApiError::holder_inactive(expired),
            LedgerError::DpopRequired => ApiError::dpop_required(),
            LedgerError::TokenRequired => ApiError::token_required(message),
            LedgerError::NotTheRecordsToken => ApiError::forbidden("token_mismatch", message),
            LedgerError::NotAnAncestor => ApiError::forbidden("not_an_ancestor", message),
            LedgerError::UnknownToken => ApiError::not_found("token_not_found", message),
            LedgerError::UnknownRecord => ApiError::not_found("record_not_found", message),
            LedgerError::UnknownApproval => ApiError::not_found("approval_not_found", message),
            LedgerError::UnknownWorkflow => ApiError::not_found("workflow_not_found", message),
            LedgerError::ApprovalExpired => ApiError::conflict("approval_expired", message),
            LedgerError::TooManyRecords => ApiError::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "too_many_records",
                message,
            ),
            LedgerError::Lifecycle(error) => lifecycle(error),
            LedgerError::DelegationCloses => ApiError::conflict("not_completable", message),
            LedgerError::BeyondReservation { aar_id, expired } => {
                let mut problem = ApiError::holder_inactive(expired);
                problem.detail.push_str("; ");
                problem.detail.push_str(&message);
                problem.with_record(aar_id.as_str())
            }
            LedgerError::BeyondReservationWithoutToken { .. } => ApiError::token_required(message),
            LedgerError::BeyondReservationByRelay { .. } => {
                ApiError::forbidden("relay_beyond_reservation", message)
            }
            LedgerError::OverBudget { aar_id, exceeded } => {
                ApiError::forbidden(exceeded.code(), exceeded.to_string())
                    .with_record(aar_id.as_str())
            }
            LedgerError::CompletionNeedsApproval { ref aar_id, .. } => {
                ApiError::forbidden(DenyReason::ApprovalRequired.code(), message)
                    .with_record(aar_id.as_str())
            }
            LedgerError::TokenTooLarge => {
                ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, "token_too_large", message)
            }
            LedgerError::TtlOutOfRange(error) => {
                ApiError::invalid("ttl_seconds", error.code(), error.to_string())
            }
            LedgerError::Frameworks(cause) => {
                ApiError::invalid(super::input::scope_field(&cause), cause.code(), message)
            }
            LedgerError::SigningKeyRevoked => ApiError::signing_key_revoked(),
            LedgerError::IdempotencyKeyReused => {
                ApiError::invalid("Idempotency-Key", "idempotency_key_reused", message)
            }
            LedgerError::QuotaExceeded(exceeded) => {
                let problem =
                    ApiError::new(StatusCode::TOO_MANY_REQUESTS, "quota_exceeded", message);
                match exceeded {
                    QuotaExceeded::RecordsPerDay { retry_after_s, .. } => {
                        problem.with_retry_after(retry_after_s)
                    }
                    QuotaExceeded::TokensOutstanding { .. } => problem,
                }
            }
            LedgerError::UnknownOrg => ApiError::not_found("org_not_found", message),
            LedgerError::OrgExists => ApiError::conflict("org_exists", message),
            LedgerError::TooManyOrgs => ApiError::conflict("too_many_orgs", message),
            LedgerError::UnknownKey => ApiError::not_found("key_not_found", message),
            LedgerError::AdminKey => ApiError::conflict("admin_key", message),
            LedgerError::LastOwner => ApiError::conflict("last_owner", message),
            LedgerError::UnknownWebhook => ApiError::not_found("webhook_not_found", message),
            LedgerError::TooManyWebhooks => ApiError::conflict("too_many_webhooks", message),
            LedgerError::UnknownClient => ApiError::not_found("client_not_found", message),
            LedgerError::TooManyClients => ApiError::conflict("too_many_clients", message),
            LedgerError::UnknownResource => ApiError::not_found("resource_not_found", message),
            LedgerError::ResourceExists => ApiError::conflict("resource_exists", message),
            LedgerError::TooManyResources => ApiError::conflict("too_many_resources", message),
            LedgerError::NotTheRelaysRecord => ApiError::forbidden("relay_not_yours", message),
            LedgerError::UnknownGrant => ApiError::not_found("grant_not_found", message),
            LedgerError::RequestAnswered => ApiError::conflict("request_answered", message),
            LedgerError::UnknownAgent => ApiError::not_found("agent_not_found", message),
            LedgerError::UnknownVouch => ApiError::not_found("vouch_not_found", message),
            LedgerError::VouchExists(_) => ApiError::conflict("vouch_exists", message),
            LedgerError::VouchWithdrawn => ApiError::conflict("vouch_withdrawn", message),
            LedgerError::VouchNotAllowed(_) => ApiError::forbidden("vouch_not_allowed", message),
            LedgerError::AgentNotYours(_) => ApiError::forbidden("agent_not_yours", message),
            LedgerError::IdempotencyKeyRequired => {
                ApiError::invalid("Idempotency-Key", "idempotency_key_required", message)
            }
            LedgerError::Store(error) => error.into(),
        }
    }
}

/// The problem a denied attempt answers with. An inactive token is named,
/// and the scope of a token refused an action or resource is listed, only
/// to a caller who presented the token itself: it holds the token, so
/// nothing is disclosed.
pub(crate) fn denial(reason: DenyReason, attempted: &Attempted) -> ApiError {
    let held = (attempted.credential == Credential::Token).then_some(&attempted.claims.svc_scope);
    match (held, &attempted.args_denial) {
        (Some(_), Some(denial)) => ApiError::forbidden(reason.code(), args_detail(denial)),
        _ => denial_to(reason, held),
    }
}

/// Which argument rule and statement refused an attempt, in words, for
/// the token's holder: the rule by its place in the token's own
/// `constraints.args`, or in an ancestor's.
pub(crate) fn args_detail(denial: &ChainArgsDenial) -> String {
    let grant = if denial.grant == 0 {
        "of the token"
    } else {
        "of an ancestor's grant"
    };
    match denial.denial {
        ArgsDenial::Required { rule } => format!(
            "argument rule {rule} {grant} (constraints.args[{rule}]) applies to this action and resource, and no args were given"
        ),
        ArgsDenial::NotPermitted {
            rule,
            statement,
            truth,
        } => format!(
            "statement {statement} of argument rule {rule} {grant} (constraints.args[{rule}].pol[{statement}]) is {} for these args",
            truth.as_str()
        ),
    }
}

/// [`denial`] for a caller who presented a token of scope `held`, or who
/// named one (`None`).
fn denial_to(reason: DenyReason, held: Option<&Scope>) -> ApiError {
    match reason {
        DenyReason::TokenRevoked | DenyReason::TokenExpired if held.is_some() => {
            ApiError::holder_inactive(reason == DenyReason::TokenExpired)
        }
        DenyReason::TokenRevoked | DenyReason::TokenExpired => ApiError::token_inactive(),
        DenyReason::ActionNotPermitted => match held {
            Some(scope) => ApiError::forbidden(
                reason.code(),
                format!(
                    "the token does not hold this action; it holds: {}",
                    listed(scope.actions())
                ),
            ),
            None => ApiError::forbidden(reason.code(), "the token does not hold this action"),
        },
        DenyReason::ResourceNotPermitted => match held {
            Some(scope) => ApiError::forbidden(
                reason.code(),
                format!(
                    "no resource pattern of the token covers this resource; its patterns: {}",
                    listed(scope.resources())
                ),
            ),
            None => ApiError::forbidden(
                reason.code(),
                "no resource pattern of the token covers this resource",
            ),
        },
        DenyReason::BudgetMaxSpendUsd => ApiError::forbidden(
            reason.code(),
            "this spend would pass max_spend_usd of the token or an ancestor",
        ),
        DenyReason::BudgetMaxSpendPerActionUsd => ApiError::forbidden(
            reason.code(),
            "this spend is over max_spend_per_action_usd of the token or an ancestor",
        ),
        DenyReason::BudgetMaxActions => ApiError::forbidden(
            reason.code(),
            "one more action would pass max_actions of the token or an ancestor",
        ),
        DenyReason::ScopeWidening | DenyReason::DelegationTooDeep | DenyReason::TooManyChildren => {
            ApiError::forbidden(reason.code(), "the delegation was refused")
        }
        DenyReason::ApprovalRequired => ApiError::forbidden(
            reason.code(),
            "this action needs a human's approval first: ask for it with authorize",
        ),
        DenyReason::ApprovalDenied => {
            ApiError::forbidden(reason.code(), "a human denied the approval of this action")
        }
        DenyReason::ApprovalExpired => ApiError::forbidden(
            reason.code(),
            "the approval of this action expired before anyone decided",
        ),
        DenyReason::TrustTooLow => ApiError::forbidden(
            reason.code(),
            "the agent's trust is below the token's min_trust",
        ),
        DenyReason::ArgsRequired => ApiError::forbidden(
            reason.code(),
            "an argument rule applies to this action and no args were given",
        ),
        DenyReason::ArgsNotPermitted => ApiError::forbidden(
            reason.code(),
            "the arguments are not permitted by an argument rule",
        ),
    }
}

/// Entries of a scope as a comma-separated list.
fn listed<T: std::fmt::Display>(items: &[T]) -> String {
    items
        .iter()
        .map(T::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

/// A grant wider than what it narrows: 403, every widening named with
/// its field.
pub(crate) fn widening_problem(widening: &Widening) -> ApiError {
    let violations = widening
        .violations
        .iter()
        .map(|v| ViolationBody {
            field: v.field(),
            code: v.code().to_owned(),
            message: v.to_string(),
        })
        .collect();
    ApiError::forbidden(widening.code(), widening.to_string()).with_violations(violations)
}

/// The problem a refused delegation answers with.
pub(crate) fn refusal(refusal: &Refusal) -> ApiError {
    match refusal {
        Refusal::Inactive(reason) => ApiError::holder_inactive(*reason == DenyReason::TokenExpired),
        Refusal::Issue(_, IssueError::DelegateNotHeld) => ApiError::forbidden(
            "action_not_permitted",
            "the parent token does not hold the `delegate` action",
        ),
        Refusal::Issue(_, IssueError::Widening(widening)) => widening_problem(widening),
        Refusal::Issue(_, IssueError::ParentExpired) => ApiError::holder_inactive(true),
        Refusal::Issue(_, error @ (IssueError::DepthExceeded | IssueError::TooManyChildren)) => {
            ApiError::forbidden(error.code(), error.to_string())
        }
        Refusal::Issue(_, other) => ApiError::internal(other),
        Refusal::Budget(exceeded) => ApiError::forbidden(exceeded.code(), exceeded.to_string()),
        Refusal::TrustTooLow => denial_to(DenyReason::TrustTooLow, None),
        Refusal::Approval(reason) => denial_to(*reason, None),
    }
}

impl From<QueryError> for ApiError {
    fn from(error: QueryError) -> ApiError {
        let message = error.to_string();
        match error {
            QueryError::UnknownRecord => ApiError::not_found("record_not_found", message),
            QueryError::UnknownAgent => ApiError::not_found("agent_not_found", message),
            QueryError::UnknownWorkflow => ApiError::not_found("workflow_not_found", message),
            QueryError::UnknownToken => ApiError::not_found("token_not_found", message),
            QueryError::NotInLog => ApiError::new(StatusCode::CONFLICT, "not_in_log", message),
            QueryError::UnknownTile => ApiError::not_found("tile_not_found", message),
            QueryError::UnknownStatusList => ApiError::not_found("status_list_not_found", message),
            QueryError::UnknownApproval => ApiError::not_found("approval_not_found", message),
            QueryError::UnknownWebhook => ApiError::not_found("webhook_not_found", message),
            QueryError::InvalidQuery(detail) => ApiError::bad_request("invalid_query", detail),
            QueryError::InvalidCursor => ApiError::bad_request("invalid_cursor", message),
            QueryError::TooBroad(detail) => ApiError::query_too_broad(detail),
            QueryError::Store(error) => error.into(),
        }
    }
}

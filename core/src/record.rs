//! The action-record (AAR) lifecycle, as one pure transition function.
//!
//! ```text
//!            authorize (allowed, needs approval)
//!   (none) ────────────────────────────────────▶ awaiting_approval ─deny_approval──┐
//!    │ │ │                                          │              expire_approval │
//!    │ │ │                                          │ approve                      ▼
//!    │ │ │  authorize (allowed)                     ▼                            denied
//!    │ │ └────────────────────────────────────▶ pending                            ▲
//!    │ │                                            │ complete(result)             │
//!    │ │                                            ▼                              │
//!    │ └─ record_action (allowed) ────────────▶ completed ──rate(r)──▶ rated       │
//!    │                                                                             │
//!    └── authorize / record_action (refused; record_action needing approval) ──────┘
//! ```
//!
//! "Allowed" is in scope and within budget (and, on the paths to `pending`
//! and `completed`, needing no approval); "needs approval" is a
//! `require_approval` of the token's chain matching the attempt.
//!
//! - `authorize` creates a `pending` record, or a `denied` one when refused:
//!   refusals are recorded too, because accountability includes them. An
//!   allowed attempt that a grant's `require_approval` matches
//!   (`request_approval`, see [`RecordEvent::authorize`]) waits in
//!   `awaiting_approval` instead.
//! - `record_action` is authorize + complete in one step: `completed`, or
//!   `denied`. An attempt that needs approval is refused
//!   (`approval_required`): the act is already done, nobody was asked.
//! - `approve` moves an awaiting record to `pending`, and it goes on as any
//!   authorized one; `deny_approval` and `expire_approval` close it
//!   `denied` (`approval_denied`, `approval_expired`). Each needs a record
//!   awaiting approval (`not_awaiting_approval`): a decision is made once.
//! - `complete` closes a `pending` record with a result. A completed or rated
//!   record cannot be completed again (409); a denied one never can, nor
//!   one still awaiting approval (`approval_pending`).
//! - `rate` gives a completed record its one human rating. A rating never
//!   changes; pending, awaiting and denied records cannot be rated.
//!
//! Results an agent may report: `success`, `error`, `timeout`, `cancelled`.
//! A denied record has no result; in summaries it counts under `denied`, a
//! pending record under `pending` and one awaiting approval under
//! `awaiting_approval`.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::budget::BudgetExceeded;
use crate::scope::{Limit, ScopeDenial};

/// How an action ended, as the agent reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    Success,
    Error,
    Timeout,
    Cancelled,
}

impl Outcome {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Success => "success",
            Outcome::Error => "error",
            Outcome::Timeout => "timeout",
            Outcome::Cancelled => "cancelled",
        }
    }
}

impl FromStr for Outcome {
    type Err = RecordError;
    fn from_str(text: &str) -> Result<Outcome, RecordError> {
        match text {
            "success" => Ok(Outcome::Success),
            "error" => Ok(Outcome::Error),
            "timeout" => Ok(Outcome::Timeout),
            "cancelled" => Ok(Outcome::Cancelled),
            _ => Err(RecordError::UnknownResult),
        }
    }
}

/// How a record came to be: the call that made it. Reputation counts a
/// refusal by it ([`crate::CountsChange`]): a refused `authorize` is the
/// agent asking first, a refused `record/action` is the agent acting
/// without asking.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RecordOrigin {
    /// `authorize`: a pre-flight check, before acting.
    Authorize,
    /// `record/action`, or one report of the batch `record/actions`: the
    /// act and its report in one step.
    RecordAction,
    /// `delegate`: the delegation is the act itself (there is no
    /// pre-flight for it), so a refused one counts as a refused act.
    Delegate,
    /// An AuthZEN evaluation by a gateway in front of the tool: asked
    /// first, like `authorize`, and — since a gateway never completes —
    /// completed (`success`) in the same step when permitted.
    Evaluation,
    /// Made before its origin was stored (a host's schema 9): a refusal
    /// counts as it always did, as a failure unless an approval's decision
    /// made it.
    Unknown,
}

impl RecordOrigin {
    /// The stored name.
    pub fn as_str(self) -> &'static str {
        match self {
            RecordOrigin::Authorize => "authorize",
            RecordOrigin::RecordAction => "record_action",
            RecordOrigin::Delegate => "delegate",
            RecordOrigin::Evaluation => "evaluation",
            RecordOrigin::Unknown => "unknown",
        }
    }

    /// The origin a stored name names, if any.
    pub fn parse(text: &str) -> Option<RecordOrigin> {
        match text {
            "authorize" => Some(RecordOrigin::Authorize),
            "record_action" => Some(RecordOrigin::RecordAction),
            "delegate" => Some(RecordOrigin::Delegate),
            "evaluation" => Some(RecordOrigin::Evaluation),
            "unknown" => Some(RecordOrigin::Unknown),
            _ => None,
        }
    }
}

/// A human's verdict on a completed action.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Rating {
    Approved,
    Flagged,
    Rejected,
}

impl Rating {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Rating::Approved => "approved",
            Rating::Flagged => "flagged",
            Rating::Rejected => "rejected",
        }
    }
}

impl FromStr for Rating {
    type Err = RecordError;
    fn from_str(text: &str) -> Result<Rating, RecordError> {
        match text {
            "approved" => Ok(Rating::Approved),
            "flagged" => Ok(Rating::Flagged),
            "rejected" => Ok(Rating::Rejected),
            _ => Err(RecordError::UnknownRating),
        }
    }
}

/// What became of an approval an attempt waited for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalDecision {
    /// A human approved: the record goes on as authorized (`pending`).
    Approved,
    /// A human denied: the record is `denied` (`approval_denied`).
    Denied,
    /// Nobody decided in time: the record is `denied` (`approval_expired`).
    Expired,
}

impl ApprovalDecision {
    /// Every decision.
    pub const ALL: [ApprovalDecision; 3] = [
        ApprovalDecision::Approved,
        ApprovalDecision::Denied,
        ApprovalDecision::Expired,
    ];

    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            ApprovalDecision::Approved => "approved",
            ApprovalDecision::Denied => "denied",
            ApprovalDecision::Expired => "expired",
        }
    }

    /// Reads a wire name.
    pub fn parse(text: &str) -> Option<ApprovalDecision> {
        ApprovalDecision::ALL
            .into_iter()
            .find(|decision| decision.as_str() == text)
    }

    /// The event this decision is to the record that waited for it.
    pub fn event(self) -> RecordEvent {
        match self {
            ApprovalDecision::Approved => RecordEvent::Approve,
            ApprovalDecision::Denied => RecordEvent::DenyApproval,
            ApprovalDecision::Expired => RecordEvent::ExpireApproval,
        }
    }

    /// Whether a person made it (approved or denied), rather than time.
    pub fn is_human(self) -> bool {
        !matches!(self, ApprovalDecision::Expired)
    }
}

/// Why an attempt was refused and recorded as denied.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DenyReason {
    /// The token does not hold the action.
    ActionNotPermitted,
    /// No resource pattern of the token covers the resource.
    ResourceNotPermitted,
    /// The spend would pass `max_spend_usd` of the token or an ancestor.
    BudgetMaxSpendUsd,
    /// The act's own spend is over `max_spend_per_action_usd` of the token
    /// or an ancestor.
    BudgetMaxSpendPerActionUsd,
    /// One more action would pass `max_actions` of the token or an ancestor.
    BudgetMaxActions,
    /// A delegation asked for more than its parent holds.
    ScopeWidening,
    /// A delegation would pass the depth limit.
    DelegationTooDeep,
    /// The token has delegated to as many tokens as one may.
    TooManyChildren,
    /// The token or an ancestor was revoked.
    TokenRevoked,
    /// The token has expired.
    TokenExpired,
    /// `record/action` of an action a grant requires approval for: the act
    /// was done without asking first.
    ApprovalRequired,
    /// A human denied the approval the attempt waited for.
    ApprovalDenied,
    /// Nobody decided the approval before it expired.
    ApprovalExpired,
    /// The agent's trust is below the token's `constraints.min_trust`
    /// ([`crate::trust`]).
    TrustTooLow,
    /// An argument rule of the chain applies and no arguments were given
    /// ([`crate::policy`]).
    ArgsRequired,
    /// A statement of an argument rule that applies is not true of the
    /// arguments.
    ArgsNotPermitted,
}

impl DenyReason {
    /// Stable snake_case code, as stored on the record.
    pub fn code(self) -> &'static str {
        match self {
            DenyReason::ActionNotPermitted => "action_not_permitted",
            DenyReason::ResourceNotPermitted => "resource_not_permitted",
            DenyReason::BudgetMaxSpendUsd => "budget_max_spend_usd",
            DenyReason::BudgetMaxSpendPerActionUsd => "budget_max_spend_per_action_usd",
            DenyReason::BudgetMaxActions => "budget_max_actions",
            DenyReason::ScopeWidening => "scope_widening",
            DenyReason::DelegationTooDeep => "delegation_too_deep",
            DenyReason::TooManyChildren => "too_many_children",
            DenyReason::TokenRevoked => "token_revoked",
            DenyReason::TokenExpired => "token_expired",
            DenyReason::ApprovalRequired => "approval_required",
            DenyReason::ApprovalDenied => "approval_denied",
            DenyReason::ApprovalExpired => "approval_expired",
            DenyReason::TrustTooLow => "trust_too_low",
            DenyReason::ArgsRequired => "args_required",
            DenyReason::ArgsNotPermitted => "args_not_permitted",
        }
    }

    /// Every reason, in declaration order.
    pub const ALL: [DenyReason; 16] = [
        DenyReason::ActionNotPermitted,
        DenyReason::ResourceNotPermitted,
        DenyReason::BudgetMaxSpendUsd,
        DenyReason::BudgetMaxSpendPerActionUsd,
        DenyReason::BudgetMaxActions,
        DenyReason::ScopeWidening,
        DenyReason::DelegationTooDeep,
        DenyReason::TooManyChildren,
        DenyReason::TokenRevoked,
        DenyReason::TokenExpired,
        DenyReason::ApprovalRequired,
        DenyReason::ApprovalDenied,
        DenyReason::ApprovalExpired,
        DenyReason::TrustTooLow,
        DenyReason::ArgsRequired,
        DenyReason::ArgsNotPermitted,
    ];

    /// Whether the record was denied by an approval's decision (denied or
    /// expired): the agent asked first and was told no, which counts
    /// apart from failures ([`crate::CountsChange`]).
    pub fn is_approval_decision(self) -> bool {
        matches!(
            self,
            DenyReason::ApprovalDenied | DenyReason::ApprovalExpired
        )
    }
}

impl From<ScopeDenial> for DenyReason {
    fn from(denial: ScopeDenial) -> DenyReason {
        match denial {
            ScopeDenial::ActionNotPermitted => DenyReason::ActionNotPermitted,
            ScopeDenial::ResourceNotPermitted => DenyReason::ResourceNotPermitted,
        }
    }
}

impl From<BudgetExceeded> for DenyReason {
    fn from(exceeded: BudgetExceeded) -> DenyReason {
        match exceeded.0 {
            Limit::MaxSpendUsd => DenyReason::BudgetMaxSpendUsd,
            Limit::MaxSpendPerActionUsd => DenyReason::BudgetMaxSpendPerActionUsd,
            Limit::MaxActions => DenyReason::BudgetMaxActions,
        }
    }
}

impl FromStr for DenyReason {
    type Err = RecordError;
    fn from_str(text: &str) -> Result<DenyReason, RecordError> {
        DenyReason::ALL
            .into_iter()
            .find(|reason| reason.code() == text)
            .ok_or(RecordError::UnknownDenyReason)
    }
}

/// Where a record stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecordState {
    /// Allowed, but waiting for a human's approval before the act.
    AwaitingApproval,
    Pending,
    Completed {
        result: Outcome,
    },
    Denied {
        reason: DenyReason,
    },
    Rated {
        result: Outcome,
        rating: Rating,
    },
}

/// The lifecycle statuses stored with a record (a rated record is
/// `completed` with a rating).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    AwaitingApproval,
    Pending,
    Completed,
    Denied,
}

impl Status {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::AwaitingApproval => "awaiting_approval",
            Status::Pending => "pending",
            Status::Completed => "completed",
            Status::Denied => "denied",
        }
    }
}

impl FromStr for Status {
    type Err = RecordError;
    fn from_str(text: &str) -> Result<Status, RecordError> {
        match text {
            "awaiting_approval" => Ok(Status::AwaitingApproval),
            "pending" => Ok(Status::Pending),
            "completed" => Ok(Status::Completed),
            "denied" => Ok(Status::Denied),
            _ => Err(RecordError::Inconsistent),
        }
    }
}

impl RecordState {
    /// The stored status.
    pub fn status(self) -> Status {
        match self {
            RecordState::AwaitingApproval => Status::AwaitingApproval,
            RecordState::Pending => Status::Pending,
            RecordState::Completed { .. } | RecordState::Rated { .. } => Status::Completed,
            RecordState::Denied { .. } => Status::Denied,
        }
    }

    /// The reported result, once completed.
    pub fn result(self) -> Option<Outcome> {
        match self {
            RecordState::Completed { result } | RecordState::Rated { result, .. } => Some(result),
            RecordState::AwaitingApproval | RecordState::Pending | RecordState::Denied { .. } => {
                None
            }
        }
    }

    /// The human rating, once rated.
    pub fn rating(self) -> Option<Rating> {
        match self {
            RecordState::Rated { rating, .. } => Some(rating),
            _ => None,
        }
    }

    /// Why the attempt was refused, when denied.
    pub fn deny_reason(self) -> Option<DenyReason> {
        match self {
            RecordState::Denied { reason } => Some(reason),
            _ => None,
        }
    }

    /// The key a record counts under in `results_by_type`: its result,
    /// `denied`, `pending` or `awaiting_approval`.
    pub fn result_key(self) -> &'static str {
        result_key(self.status(), self.result())
    }

    /// Rebuilds a state from its stored parts, refusing combinations no
    /// transition can produce.
    pub fn from_parts(
        status: Status,
        result: Option<Outcome>,
        rating: Option<Rating>,
        reason: Option<DenyReason>,
    ) -> Result<RecordState, RecordError> {
        match (status, result, rating, reason) {
            (Status::AwaitingApproval, None, None, None) => Ok(RecordState::AwaitingApproval),
            (Status::Pending, None, None, None) => Ok(RecordState::Pending),
            (Status::Completed, Some(result), None, None) => Ok(RecordState::Completed { result }),
            (Status::Completed, Some(result), Some(rating), None) => {
                Ok(RecordState::Rated { result, rating })
            }
            (Status::Denied, None, None, Some(reason)) => Ok(RecordState::Denied { reason }),
            _ => Err(RecordError::Inconsistent),
        }
    }
}

/// The key a record of this status and result counts under in
/// `results_by_type`: the result of a completed record, else the status
/// (`denied`, `pending`, `awaiting_approval`).
pub fn result_key(status: Status, result: Option<Outcome>) -> &'static str {
    match (status, result) {
        (Status::Completed, Some(result)) => result.as_str(),
        _ => status.as_str(),
    }
}

/// Whether an attempt was allowed, and if not, why.
pub type Decision = Result<(), DenyReason>;

/// Something that happens to a record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecordEvent {
    /// Pre-flight check of an action (full-control path).
    Authorize(Decision),
    /// Pre-flight check of an action that is allowed (in scope, within
    /// budget) but that a grant requires a human's approval for.
    RequestApproval,
    /// Authorize and complete in one step (simple path).
    RecordAction { decision: Decision, result: Outcome },
    /// A human approves the action awaiting approval.
    Approve,
    /// A human denies the action awaiting approval.
    DenyApproval,
    /// The approval was not decided in time.
    ExpireApproval,
    /// The agent reports how a pending action ended.
    Complete(Outcome),
    /// A human rates a completed action.
    Rate(Rating),
}

impl RecordEvent {
    /// The event of an `authorize`: refused when `decision` is a denial
    /// (a refusal wins over an approval requirement: nobody is asked to
    /// approve what the token cannot do), else waiting for approval when
    /// `needs_approval`, else allowed.
    pub fn authorize(decision: Decision, needs_approval: bool) -> RecordEvent {
        match decision {
            Ok(()) if needs_approval => RecordEvent::RequestApproval,
            decision => RecordEvent::Authorize(decision),
        }
    }

    /// The event of a `record/action`: refused when `decision` is a denial,
    /// else refused `approval_required` when `needs_approval` (the act was
    /// done without asking), else completed with `result`.
    pub fn record_action(decision: Decision, needs_approval: bool, result: Outcome) -> RecordEvent {
        let decision = match decision {
            Ok(()) if needs_approval => Err(DenyReason::ApprovalRequired),
            decision => decision,
        };
        RecordEvent::RecordAction { decision, result }
    }

    /// The event of an AuthZEN evaluation: refused when `decision` is a
    /// denial, else waiting for approval when `needs_approval` (as
    /// `authorize`), else the act permitted and, since a gateway never
    /// completes, completed `success` at once (as `record/action`).
    pub fn evaluate(decision: Decision, needs_approval: bool) -> RecordEvent {
        match decision {
            Ok(()) if needs_approval => RecordEvent::RequestApproval,
            decision => RecordEvent::RecordAction {
                decision,
                result: Outcome::Success,
            },
        }
    }
}

/// An illegal transition or an unknown value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum RecordError {
    #[error("a record with this id already exists")]
    AlreadyExists,
    #[error("there is no such record")]
    NoRecord,
    #[error("the record is already completed")]
    AlreadyCompleted,
    #[error("a denied record cannot be completed")]
    NotCompletable,
    #[error("the record awaits a human's approval; it can be completed once approved")]
    ApprovalPending,
    #[error(
        "the record is not awaiting approval: its approval was decided, or it never needed one"
    )]
    NotAwaitingApproval,
    #[error("the record is already rated; a rating never changes")]
    AlreadyRated,
    #[error("only a completed record can be rated")]
    NotRatable,
    #[error("result must be one of success, error, timeout, cancelled")]
    UnknownResult,
    #[error("rating must be one of approved, flagged, rejected")]
    UnknownRating,
    #[error("unknown deny reason")]
    UnknownDenyReason,
    #[error("stored record parts do not form a state")]
    Inconsistent,
}

impl RecordError {
    /// Stable snake_case code for this error.
    pub fn code(self) -> &'static str {
        match self {
            RecordError::AlreadyExists => "record_exists",
            RecordError::NoRecord => "record_not_found",
            RecordError::AlreadyCompleted => "already_completed",
            RecordError::NotCompletable => "not_completable",
            RecordError::ApprovalPending => "approval_pending",
            RecordError::NotAwaitingApproval => "not_awaiting_approval",
            RecordError::AlreadyRated => "already_rated",
            RecordError::NotRatable => "not_ratable",
            RecordError::UnknownResult => "unknown_result",
            RecordError::UnknownRating => "unknown_rating",
            RecordError::UnknownDenyReason => "unknown_deny_reason",
            RecordError::Inconsistent => "inconsistent_record",
        }
    }
}

/// The one transition function of the lifecycle: `state` is `None` before
/// the record exists.
pub fn transition(
    state: Option<RecordState>,
    event: RecordEvent,
) -> Result<RecordState, RecordError> {
    use RecordEvent as E;
    use RecordState as S;
    match (state, event) {
        (None, E::Authorize(Ok(()))) => Ok(S::Pending),
        (
            None,
            E::Authorize(Err(reason))
            | E::RecordAction {
                decision: Err(reason),
                ..
            },
        ) => Ok(S::Denied { reason }),
        (
            None,
            E::RecordAction {
                decision: Ok(()),
                result,
            },
        ) => Ok(S::Completed { result }),
        (None, E::RequestApproval) => Ok(S::AwaitingApproval),
        (None, E::Complete(_) | E::Rate(_) | E::Approve | E::DenyApproval | E::ExpireApproval) => {
            Err(RecordError::NoRecord)
        }
        (Some(_), E::Authorize(_) | E::RequestApproval | E::RecordAction { .. }) => {
            Err(RecordError::AlreadyExists)
        }
        (Some(S::AwaitingApproval), E::Approve) => Ok(S::Pending),
        (Some(S::AwaitingApproval), E::DenyApproval) => Ok(S::Denied {
            reason: DenyReason::ApprovalDenied,
        }),
        (Some(S::AwaitingApproval), E::ExpireApproval) => Ok(S::Denied {
            reason: DenyReason::ApprovalExpired,
        }),
        (Some(_), E::Approve | E::DenyApproval | E::ExpireApproval) => {
            Err(RecordError::NotAwaitingApproval)
        }
        (Some(S::AwaitingApproval), E::Complete(_)) => Err(RecordError::ApprovalPending),
        (Some(S::AwaitingApproval), E::Rate(_)) => Err(RecordError::NotRatable),
        (Some(S::Pending), E::Complete(result)) => Ok(S::Completed { result }),
        (Some(S::Completed { .. } | S::Rated { .. }), E::Complete(_)) => {
            Err(RecordError::AlreadyCompleted)
        }
        (Some(S::Denied { .. }), E::Complete(_)) => Err(RecordError::NotCompletable),
        (Some(S::Completed { result }), E::Rate(rating)) => Ok(S::Rated { result, rating }),
        (Some(S::Rated { .. }), E::Rate(_)) => Err(RecordError::AlreadyRated),
        (Some(S::Pending | S::Denied { .. }), E::Rate(_)) => Err(RecordError::NotRatable),
    }
}

impl fmt::Display for RecordState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.status().as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use RecordEvent as E;
    use RecordState as S;

    const DENY: DenyReason = DenyReason::ActionNotPermitted;
    const OK: Outcome = Outcome::Success;

    #[test]
    fn legal_paths() {
        let pending = transition(None, E::Authorize(Ok(()))).unwrap();
        assert_eq!(pending, S::Pending);
        let done = transition(Some(pending), E::Complete(Outcome::Error)).unwrap();
        assert_eq!(
            done,
            S::Completed {
                result: Outcome::Error
            }
        );
        let rated = transition(Some(done), E::Rate(Rating::Flagged)).unwrap();
        assert_eq!(
            rated,
            S::Rated {
                result: Outcome::Error,
                rating: Rating::Flagged
            }
        );
        assert_eq!(
            transition(
                None,
                E::RecordAction {
                    decision: Ok(()),
                    result: OK
                }
            ),
            Ok(S::Completed { result: OK })
        );
        assert_eq!(
            transition(None, E::Authorize(Err(DENY))),
            Ok(S::Denied { reason: DENY })
        );
        assert_eq!(
            transition(
                None,
                E::RecordAction {
                    decision: Err(DENY),
                    result: OK
                }
            ),
            Ok(S::Denied { reason: DENY })
        );
    }

    #[test]
    fn illegal_transitions_are_typed() {
        let completed = S::Completed { result: OK };
        let rated = S::Rated {
            result: OK,
            rating: Rating::Approved,
        };
        let denied = S::Denied { reason: DENY };
        let cases = [
            (None, E::Complete(OK), RecordError::NoRecord),
            (None, E::Rate(Rating::Approved), RecordError::NoRecord),
            (
                Some(S::Pending),
                E::Authorize(Ok(())),
                RecordError::AlreadyExists,
            ),
            (
                Some(completed),
                E::Complete(OK),
                RecordError::AlreadyCompleted,
            ),
            (Some(rated), E::Complete(OK), RecordError::AlreadyCompleted),
            (Some(denied), E::Complete(OK), RecordError::NotCompletable),
            (
                Some(rated),
                E::Rate(Rating::Rejected),
                RecordError::AlreadyRated,
            ),
            (
                Some(S::Pending),
                E::Rate(Rating::Approved),
                RecordError::NotRatable,
            ),
            (
                Some(denied),
                E::Rate(Rating::Approved),
                RecordError::NotRatable,
            ),
        ];
        for (state, event, expected) in cases {
            assert_eq!(
                transition(state, event),
                Err(expected),
                "{state:?} {event:?}"
            );
        }
    }

    #[test]
    fn approval_paths() {
        let awaiting = transition(None, E::RequestApproval).unwrap();
        assert_eq!(awaiting, S::AwaitingApproval);
        let approved = transition(Some(awaiting), E::Approve).unwrap();
        assert_eq!(approved, S::Pending);
        assert_eq!(
            transition(Some(approved), E::Complete(OK)),
            Ok(S::Completed { result: OK })
        );
        assert_eq!(
            transition(Some(awaiting), E::DenyApproval),
            Ok(S::Denied {
                reason: DenyReason::ApprovalDenied
            })
        );
        assert_eq!(
            transition(Some(awaiting), E::ExpireApproval),
            Ok(S::Denied {
                reason: DenyReason::ApprovalExpired
            })
        );
    }

    #[test]
    fn events_of_an_attempt() {
        let denied = Err(DenyReason::BudgetMaxActions);
        assert_eq!(RecordEvent::authorize(Ok(()), true), E::RequestApproval);
        assert_eq!(RecordEvent::authorize(Ok(()), false), E::Authorize(Ok(())));
        // A refusal wins: nobody is asked to approve what cannot be done.
        assert_eq!(RecordEvent::authorize(denied, true), E::Authorize(denied));
        assert_eq!(
            RecordEvent::record_action(Ok(()), true, OK),
            E::RecordAction {
                decision: Err(DenyReason::ApprovalRequired),
                result: OK
            }
        );
        assert_eq!(
            RecordEvent::record_action(Ok(()), false, OK),
            E::RecordAction {
                decision: Ok(()),
                result: OK
            }
        );
        assert_eq!(
            RecordEvent::record_action(denied, true, OK),
            E::RecordAction {
                decision: denied,
                result: OK
            }
        );
    }

    #[test]
    fn approval_events_out_of_place_are_typed() {
        let settled = [
            S::Pending,
            S::Completed { result: OK },
            S::Rated {
                result: OK,
                rating: Rating::Approved,
            },
            S::Denied {
                reason: DenyReason::ApprovalDenied,
            },
        ];
        for event in [E::Approve, E::DenyApproval, E::ExpireApproval] {
            assert_eq!(transition(None, event), Err(RecordError::NoRecord));
            for state in settled {
                assert_eq!(
                    transition(Some(state), event),
                    Err(RecordError::NotAwaitingApproval),
                    "{state:?} {event:?}"
                );
            }
        }
        let awaiting = Some(S::AwaitingApproval);
        assert_eq!(
            transition(awaiting, E::Complete(OK)),
            Err(RecordError::ApprovalPending)
        );
        assert_eq!(
            transition(awaiting, E::Rate(Rating::Approved)),
            Err(RecordError::NotRatable)
        );
        for event in [
            E::RequestApproval,
            E::Authorize(Ok(())),
            E::RecordAction {
                decision: Ok(()),
                result: OK,
            },
        ] {
            assert_eq!(transition(awaiting, event), Err(RecordError::AlreadyExists));
            assert_eq!(
                transition(Some(S::Pending), E::RequestApproval),
                Err(RecordError::AlreadyExists)
            );
        }
        assert_eq!(RecordError::ApprovalPending.code(), "approval_pending");
        assert_eq!(
            RecordError::NotAwaitingApproval.code(),
            "not_awaiting_approval"
        );
    }

    #[test]
    fn parse_wire_values() {
        assert_eq!("success".parse::<Outcome>(), Ok(Outcome::Success));
        assert_eq!("cancelled".parse::<Outcome>(), Ok(Outcome::Cancelled));
        assert_eq!(
            "Success".parse::<Outcome>(),
            Err(RecordError::UnknownResult)
        );
        assert_eq!("flagged".parse::<Rating>(), Ok(Rating::Flagged));
        assert_eq!("meh".parse::<Rating>(), Err(RecordError::UnknownRating));
        assert_eq!(RecordError::UnknownRating.code(), "unknown_rating");
        for reason in DenyReason::ALL {
            assert_eq!(reason.code().parse::<DenyReason>(), Ok(reason));
            assert_eq!(serde_json::to_value(reason).unwrap(), reason.code());
        }
        assert_eq!(DenyReason::ApprovalRequired.code(), "approval_required");
        assert_eq!(
            "approval_expired".parse::<DenyReason>(),
            Ok(DenyReason::ApprovalExpired)
        );
        for status in [
            Status::AwaitingApproval,
            Status::Pending,
            Status::Completed,
            Status::Denied,
        ] {
            assert_eq!(status.as_str().parse::<Status>(), Ok(status));
            assert_eq!(serde_json::to_value(status).unwrap(), status.as_str());
        }
        assert_eq!(
            "awaiting_approval".parse::<Status>(),
            Ok(Status::AwaitingApproval)
        );
    }

    #[test]
    fn parts_round_trip() {
        let states = [
            S::AwaitingApproval,
            S::Pending,
            S::Completed {
                result: Outcome::Timeout,
            },
            S::Rated {
                result: OK,
                rating: Rating::Rejected,
            },
            S::Denied {
                reason: DenyReason::TokenExpired,
            },
        ];
        for state in states {
            let rebuilt = RecordState::from_parts(
                state.status(),
                state.result(),
                state.rating(),
                state.deny_reason(),
            );
            assert_eq!(rebuilt, Ok(state));
        }
        assert_eq!(
            RecordState::from_parts(Status::Pending, Some(OK), None, None),
            Err(RecordError::Inconsistent)
        );
        assert_eq!(S::Pending.result_key(), "pending");
        assert_eq!(S::AwaitingApproval.result_key(), "awaiting_approval");
        assert_eq!(
            RecordState::from_parts(Status::AwaitingApproval, None, None, Some(DENY)),
            Err(RecordError::Inconsistent)
        );
        assert_eq!(S::Denied { reason: DENY }.result_key(), "denied");
        assert_eq!(
            S::Rated {
                result: Outcome::Error,
                rating: Rating::Approved
            }
            .result_key(),
            "error"
        );
    }
}

//! The action-record (AAR) lifecycle, as one pure transition function.
//!
//! ```text
//!                 authorize (in scope, within budget)
//!   (none) ─────────────────────────────────────────▶ pending
//!     │  │                                              │
//!     │  │ authorize / record_action (refused)          │ complete(result)
//!     │  └─────────────────────────────────▶ denied     ▼
//!     │                                             completed ──rate(r)──▶ rated
//!     └──── record_action (in scope, within budget) ───▲
//! ```
//!
//! - `authorize` creates a `pending` record, or a `denied` one when refused:
//!   refusals are recorded too, because accountability includes them.
//! - `record_action` is authorize + complete in one step: `completed`, or
//!   `denied`.
//! - `complete` closes a `pending` record with a result. A completed or rated
//!   record cannot be completed again (409); a denied one never can.
//! - `rate` gives a completed record its one human rating. A rating never
//!   changes; pending and denied records cannot be rated.
//!
//! Results an agent may report: `success`, `error`, `timeout`, `cancelled`.
//! A denied record has no result; in summaries it counts under `denied`, and
//! a pending record under `pending`.

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
}

impl DenyReason {
    /// Stable snake_case code, as stored on the record.
    pub fn code(self) -> &'static str {
        match self {
            DenyReason::ActionNotPermitted => "action_not_permitted",
            DenyReason::ResourceNotPermitted => "resource_not_permitted",
            DenyReason::BudgetMaxSpendUsd => "budget_max_spend_usd",
            DenyReason::BudgetMaxActions => "budget_max_actions",
            DenyReason::ScopeWidening => "scope_widening",
            DenyReason::DelegationTooDeep => "delegation_too_deep",
            DenyReason::TooManyChildren => "too_many_children",
            DenyReason::TokenRevoked => "token_revoked",
            DenyReason::TokenExpired => "token_expired",
        }
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
            Limit::MaxActions => DenyReason::BudgetMaxActions,
        }
    }
}

impl FromStr for DenyReason {
    type Err = RecordError;
    fn from_str(text: &str) -> Result<DenyReason, RecordError> {
        [
            DenyReason::ActionNotPermitted,
            DenyReason::ResourceNotPermitted,
            DenyReason::BudgetMaxSpendUsd,
            DenyReason::BudgetMaxActions,
            DenyReason::ScopeWidening,
            DenyReason::DelegationTooDeep,
            DenyReason::TooManyChildren,
            DenyReason::TokenRevoked,
            DenyReason::TokenExpired,
        ]
        .into_iter()
        .find(|reason| reason.code() == text)
        .ok_or(RecordError::UnknownDenyReason)
    }
}

/// Where a record stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecordState {
    Pending,
    Completed { result: Outcome },
    Denied { reason: DenyReason },
    Rated { result: Outcome, rating: Rating },
}

/// The three lifecycle statuses stored with a record (a rated record is
/// `completed` with a rating).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Pending,
    Completed,
    Denied,
}

impl Status {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
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
            RecordState::Pending => Status::Pending,
            RecordState::Completed { .. } | RecordState::Rated { .. } => Status::Completed,
            RecordState::Denied { .. } => Status::Denied,
        }
    }

    /// The reported result, once completed.
    pub fn result(self) -> Option<Outcome> {
        match self {
            RecordState::Completed { result } | RecordState::Rated { result, .. } => Some(result),
            RecordState::Pending | RecordState::Denied { .. } => None,
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
    /// `denied` or `pending`.
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
/// (`denied`, `pending`).
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
    /// Authorize and complete in one step (simple path).
    RecordAction { decision: Decision, result: Outcome },
    /// The agent reports how a pending action ended.
    Complete(Outcome),
    /// A human rates a completed action.
    Rate(Rating),
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
        (None, E::Complete(_) | E::Rate(_)) => Err(RecordError::NoRecord),
        (Some(_), E::Authorize(_) | E::RecordAction { .. }) => Err(RecordError::AlreadyExists),
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
        for reason in [
            DenyReason::TokenRevoked,
            DenyReason::BudgetMaxActions,
            DenyReason::ResourceNotPermitted,
        ] {
            assert_eq!(reason.code().parse::<DenyReason>(), Ok(reason));
        }
    }

    #[test]
    fn parts_round_trip() {
        let states = [
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

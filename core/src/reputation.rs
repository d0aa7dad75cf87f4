//! Agent reputation from record counts.
//!
//! Both scores are Beta(1,1) posterior means, so an agent with no history
//! starts at 0.5 rather than at 0 or 1, and a few outcomes move it gently:
//!
//! - `execution_score = (successes + 1) / (outcomes + 2)`, where outcomes are
//!   completed records (any result) and refused acts: records denied at
//!   `record/action` (or in the batch `record/actions`) or `delegate`. A
//!   record denied at `authorize` (the pre-flight check, refused by scope,
//!   budget, standing or trust) or by an approval's decision (denied or
//!   expired) is no outcome: the agent asked first, as it should, and was
//!   told no, which is no failure of its own; those are counted apart as
//!   `denied_requests`;
//! - `feedback_score = (approved + 0.5 · flagged + 1) / (ratings + 2)`;
//! - `combined_reputation = 0.6 · execution_score + 0.4 · feedback_score`.
//!
//! `total_actions` counts every record of the agent: pending (awaiting
//! approval included), completed and denied.
//!
//! The counts are kept by the caller; [`CountsChange::of`] says how one
//! record's change of state moves them, given how the record came to be
//! ([`RecordOrigin`]).

use serde::{Deserialize, Serialize};

use crate::limits::{EXECUTION_WEIGHT, FEEDBACK_WEIGHT};
use crate::record::{Outcome, Rating, RecordOrigin, RecordState};

/// What reputation is computed from.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReputationCounts {
    /// Completed records with result `success`.
    #[serde(default)]
    pub successes: u64,
    /// Completed records with any other result, plus records denied at
    /// `record/action` or `delegate` (but by an approval's decision).
    #[serde(default)]
    pub failures: u64,
    /// Records still pending or awaiting approval (count only towards
    /// `total_actions`).
    #[serde(default)]
    pub pending: u64,
    /// Records denied at `authorize` (the pre-flight check), or by an
    /// approval's decision, denied or expired (count only towards
    /// `total_actions`).
    #[serde(default)]
    pub denied_requests: u64,
    #[serde(default)]
    pub approved: u64,
    #[serde(default)]
    pub flagged: u64,
    #[serde(default)]
    pub rejected: u64,
}

/// How an agent's [`ReputationCounts`] move when one of its records comes
/// into being or changes state.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CountsChange {
    pub successes: i64,
    pub failures: i64,
    pub pending: i64,
    pub denied_requests: i64,
    pub approved: i64,
    pub flagged: i64,
    pub rejected: i64,
}

impl CountsChange {
    /// The change when a record made by `origin` goes from `before`
    /// (`None`: it did not exist) to `after`:
    ///
    /// - a new record counts once by its state: pending (or awaiting
    ///   approval); a success (completed or rated with result `success`); a
    ///   denied request (denied at `authorize` or by an AuthZEN evaluation,
    ///   for any reason, or by an
    ///   approval's decision: `approval_denied`, `approval_expired`); or a
    ///   failure (any other result, or denied at `record/action` or
    ///   `delegate`, or with an [`RecordOrigin::Unknown`] origin, for any
    ///   other reason);
    /// - a pending or awaiting record that changes state leaves `pending`
    ///   and counts by its new state (so one that stays pending, or is
    ///   approved, changes nothing);
    /// - a record that was not pending counts only a rating it receives.
    pub fn of(
        origin: RecordOrigin,
        before: Option<&RecordState>,
        after: &RecordState,
    ) -> CountsChange {
        match (before, after) {
            (None, after) => CountsChange::of_new(origin, after),
            (Some(RecordState::Pending | RecordState::AwaitingApproval), after) => {
                let mut change = CountsChange::of_new(origin, after);
                change.pending -= 1;
                change
            }
            (Some(_), RecordState::Rated { rating, .. }) => CountsChange::of_rating(*rating),
            (Some(_), _) => CountsChange::default(),
        }
    }

    /// How a new record made by `origin` in `state` counts.
    fn of_new(origin: RecordOrigin, state: &RecordState) -> CountsChange {
        match state {
            RecordState::Pending | RecordState::AwaitingApproval => CountsChange {
                pending: 1,
                ..CountsChange::default()
            },
            RecordState::Denied { reason }
                if matches!(origin, RecordOrigin::Authorize | RecordOrigin::Evaluation)
                    || reason.is_approval_decision() =>
            {
                CountsChange {
                    denied_requests: 1,
                    ..CountsChange::default()
                }
            }
            RecordState::Completed {
                result: Outcome::Success,
            }
            | RecordState::Rated {
                result: Outcome::Success,
                ..
            } => CountsChange {
                successes: 1,
                ..CountsChange::default()
            },
            RecordState::Completed { .. }
            | RecordState::Rated { .. }
            | RecordState::Denied { .. } => CountsChange {
                failures: 1,
                ..CountsChange::default()
            },
        }
    }

    fn of_rating(rating: Rating) -> CountsChange {
        let none = CountsChange::default();
        match rating {
            Rating::Approved => CountsChange {
                approved: 1,
                ..none
            },
            Rating::Flagged => CountsChange { flagged: 1, ..none },
            Rating::Rejected => CountsChange {
                rejected: 1,
                ..none
            },
        }
    }

    /// Adds `other` to this change, counter by counter (saturating: a sum
    /// never wraps).
    pub fn add(&mut self, other: CountsChange) {
        self.successes = self.successes.saturating_add(other.successes);
        self.failures = self.failures.saturating_add(other.failures);
        self.pending = self.pending.saturating_add(other.pending);
        self.denied_requests = self.denied_requests.saturating_add(other.denied_requests);
        self.approved = self.approved.saturating_add(other.approved);
        self.flagged = self.flagged.saturating_add(other.flagged);
        self.rejected = self.rejected.saturating_add(other.rejected);
    }

    /// Whether no counter changes.
    pub fn is_zero(&self) -> bool {
        *self == CountsChange::default()
    }
}

/// An agent's reputation, as the spec's section 2.3 lists it (without the id).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Reputation {
    pub total_actions: u64,
    pub execution_score: f64,
    pub feedback_score: f64,
    pub combined_reputation: f64,
    pub has_human_feedback: bool,
}

/// Computes reputation from counts. Every score lies in [0, 1]; none is NaN.
pub fn reputation(counts: &ReputationCounts) -> Reputation {
    let outcomes = counts.successes.saturating_add(counts.failures);
    let ratings = counts
        .approved
        .saturating_add(counts.flagged)
        .saturating_add(counts.rejected);
    let execution_score = (counts.successes as f64 + 1.0) / (outcomes as f64 + 2.0);
    let feedback_sum = counts.approved as f64 + 0.5 * counts.flagged as f64;
    let feedback_score = (feedback_sum + 1.0) / (ratings as f64 + 2.0);
    let combined = EXECUTION_WEIGHT * execution_score + FEEDBACK_WEIGHT * feedback_score;
    Reputation {
        total_actions: outcomes
            .saturating_add(counts.pending)
            .saturating_add(counts.denied_requests),
        execution_score: execution_score.clamp(0.0, 1.0),
        feedback_score: feedback_score.clamp(0.0, 1.0),
        combined_reputation: combined.clamp(0.0, 1.0),
        has_human_feedback: ratings > 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn new_agent_is_neutral() {
        let r = reputation(&ReputationCounts::default());
        assert_eq!(r.execution_score, 0.5);
        assert_eq!(r.feedback_score, 0.5);
        assert_eq!(r.combined_reputation, 0.5);
        assert_eq!(r.total_actions, 0);
        assert!(!r.has_human_feedback);
    }

    #[test]
    fn worked_example() {
        let counts = ReputationCounts {
            successes: 8,
            failures: 2,
            pending: 1,
            denied_requests: 2,
            approved: 3,
            flagged: 1,
            rejected: 1,
        };
        let r = reputation(&counts);
        assert_eq!(r.total_actions, 13);
        assert!((r.execution_score - 9.0 / 12.0).abs() < 1e-12);
        assert!((r.feedback_score - 4.5 / 7.0).abs() < 1e-12);
        assert!((r.combined_reputation - (0.6 * 0.75 + 0.4 * 4.5 / 7.0)).abs() < 1e-12);
        assert!(r.has_human_feedback);
    }

    fn change(edit: impl FnOnce(&mut CountsChange)) -> CountsChange {
        let mut change = CountsChange::default();
        edit(&mut change);
        change
    }

    /// A record made by `record/action`, and one made by `authorize`.
    const ACTED: RecordOrigin = RecordOrigin::RecordAction;
    const ASKED: RecordOrigin = RecordOrigin::Authorize;

    const DENIED: RecordState = RecordState::Denied {
        reason: crate::record::DenyReason::BudgetMaxActions,
    };

    fn completed(result: Outcome) -> RecordState {
        RecordState::Completed { result }
    }

    fn rated(result: Outcome, rating: Rating) -> RecordState {
        RecordState::Rated { result, rating }
    }

    #[test]
    fn a_new_record_counts_once_by_its_state() {
        let cases = [
            (RecordState::Pending, change(|c| c.pending = 1)),
            (completed(Outcome::Success), change(|c| c.successes = 1)),
            (completed(Outcome::Error), change(|c| c.failures = 1)),
            (completed(Outcome::Timeout), change(|c| c.failures = 1)),
            (completed(Outcome::Cancelled), change(|c| c.failures = 1)),
            (DENIED, change(|c| c.failures = 1)),
            // A record is rated only once completed, but the rule is total.
            (
                rated(Outcome::Success, Rating::Rejected),
                change(|c| c.successes = 1),
            ),
            (
                rated(Outcome::Error, Rating::Approved),
                change(|c| c.failures = 1),
            ),
        ];
        for (after, expected) in cases {
            assert_eq!(CountsChange::of(ACTED, None, &after), expected, "{after:?}");
        }
    }

    #[test]
    fn a_pending_record_moves_out_of_pending() {
        let cases = [
            (
                completed(Outcome::Success),
                change(|c| {
                    c.pending = -1;
                    c.successes = 1;
                }),
            ),
            (
                completed(Outcome::Timeout),
                change(|c| {
                    c.pending = -1;
                    c.failures = 1;
                }),
            ),
            (
                DENIED,
                change(|c| {
                    c.pending = -1;
                    c.failures = 1;
                }),
            ),
            // The rule is total: a record that stays pending changes nothing.
            (RecordState::Pending, CountsChange::default()),
        ];
        for (after, expected) in cases {
            let got = CountsChange::of(ACTED, Some(&RecordState::Pending), &after);
            assert_eq!(got, expected, "{after:?}");
        }
    }

    #[test]
    fn a_settled_record_counts_only_its_rating() {
        let settled = [
            completed(Outcome::Success),
            completed(Outcome::Cancelled),
            rated(Outcome::Error, Rating::Flagged),
            DENIED,
        ];
        for before in settled {
            for (rating, expected) in [
                (Rating::Approved, change(|c| c.approved = 1)),
                (Rating::Flagged, change(|c| c.flagged = 1)),
                (Rating::Rejected, change(|c| c.rejected = 1)),
            ] {
                let after = rated(Outcome::Success, rating);
                assert_eq!(CountsChange::of(ACTED, Some(&before), &after), expected);
            }
            for after in [
                RecordState::Pending,
                completed(Outcome::Success),
                completed(Outcome::Error),
                DENIED,
            ] {
                let got = CountsChange::of(ACTED, Some(&before), &after);
                assert!(got.is_zero(), "{before:?} -> {after:?}: {got:?}");
            }
        }
    }

    #[test]
    fn an_awaiting_record_counts_as_pending_and_a_no_as_a_denied_request() {
        use crate::record::DenyReason;
        let awaiting = RecordState::AwaitingApproval;
        let no = |reason| RecordState::Denied { reason };
        assert_eq!(
            CountsChange::of(ASKED, None, &awaiting),
            change(|c| c.pending = 1)
        );
        // Approved: still not an outcome.
        assert!(CountsChange::of(ASKED, Some(&awaiting), &RecordState::Pending).is_zero());
        for reason in [DenyReason::ApprovalDenied, DenyReason::ApprovalExpired] {
            assert_eq!(
                CountsChange::of(ASKED, Some(&awaiting), &no(reason)),
                change(|c| {
                    c.pending = -1;
                    c.denied_requests = 1;
                })
            );
            assert_eq!(
                CountsChange::of(ASKED, None, &no(reason)),
                change(|c| c.denied_requests = 1)
            );
        }
        // A record/action that needed approval is a refused attempt: a
        // failure, as every other refused record/action.
        assert_eq!(
            CountsChange::of(ACTED, None, &no(DenyReason::ApprovalRequired)),
            change(|c| c.failures = 1)
        );
        let r = reputation(&ReputationCounts {
            denied_requests: 3,
            ..ReputationCounts::default()
        });
        assert_eq!((r.total_actions, r.execution_score), (3, 0.5));
    }

    #[test]
    fn a_refused_pre_flight_is_a_denied_request_and_a_refused_act_a_failure() {
        use crate::record::DenyReason;
        let no = |reason| RecordState::Denied { reason };
        for reason in DenyReason::ALL {
            for asked in [ASKED, RecordOrigin::Evaluation] {
                assert_eq!(
                    CountsChange::of(asked, None, &no(reason)),
                    change(|c| c.denied_requests = 1),
                    "{asked:?} {reason:?}"
                );
            }
            let acted = if reason.is_approval_decision() {
                change(|c| c.denied_requests = 1)
            } else {
                change(|c| c.failures = 1)
            };
            for origin in [ACTED, RecordOrigin::Delegate, RecordOrigin::Unknown] {
                assert_eq!(
                    CountsChange::of(origin, None, &no(reason)),
                    acted,
                    "{origin:?} {reason:?}"
                );
            }
        }
        // The origin decides only refusals.
        for origin in [
            ASKED,
            ACTED,
            RecordOrigin::Delegate,
            RecordOrigin::Evaluation,
            RecordOrigin::Unknown,
        ] {
            assert_eq!(
                CountsChange::of(origin, None, &completed(Outcome::Error)),
                change(|c| c.failures = 1)
            );
            assert_eq!(
                CountsChange::of(
                    origin,
                    Some(&RecordState::Pending),
                    &completed(Outcome::Success)
                ),
                change(|c| {
                    c.pending = -1;
                    c.successes = 1;
                })
            );
        }
        // The example: two successes and one refused pre-flight
        // give (2 + 1) / (2 + 2); one refused act instead, (2 + 1) / (3 + 2).
        let mut asked = CountsChange::default();
        let mut acted = CountsChange::default();
        for total in [&mut asked, &mut acted] {
            for _ in 0..2 {
                total.add(CountsChange::of(ACTED, None, &completed(Outcome::Success)));
            }
        }
        asked.add(CountsChange::of(ASKED, None, &DENIED));
        acted.add(CountsChange::of(ACTED, None, &DENIED));
        let counts = |c: CountsChange| ReputationCounts {
            successes: c.successes.unsigned_abs(),
            failures: c.failures.unsigned_abs(),
            denied_requests: c.denied_requests.unsigned_abs(),
            ..ReputationCounts::default()
        };
        let asked = reputation(&counts(asked));
        let acted = reputation(&counts(acted));
        assert_eq!((asked.execution_score, asked.total_actions), (0.75, 3));
        assert_eq!((acted.execution_score, acted.total_actions), (0.6, 3));
    }

    #[test]
    fn origin_names_round_trip() {
        for origin in [
            RecordOrigin::Authorize,
            RecordOrigin::RecordAction,
            RecordOrigin::Delegate,
            RecordOrigin::Evaluation,
            RecordOrigin::Unknown,
        ] {
            assert_eq!(RecordOrigin::parse(origin.as_str()), Some(origin));
            assert_eq!(
                serde_json::to_value(origin).unwrap(),
                serde_json::json!(origin.as_str())
            );
        }
        assert_eq!(RecordOrigin::parse("Authorize"), None);
    }

    #[test]
    fn changes_add_up_and_saturate() {
        let mut total = CountsChange::default();
        assert!(total.is_zero());
        total.add(CountsChange::of(ACTED, None, &RecordState::Pending));
        total.add(CountsChange::of(
            ACTED,
            Some(&RecordState::Pending),
            &completed(Outcome::Success),
        ));
        total.add(CountsChange::of(
            ACTED,
            Some(&completed(Outcome::Success)),
            &rated(Outcome::Success, Rating::Approved),
        ));
        assert_eq!(
            total,
            change(|c| {
                c.successes = 1;
                c.approved = 1;
            })
        );
        assert!(!total.is_zero());
        let mut extreme = change(|c| {
            c.failures = i64::MAX;
            c.pending = i64::MIN;
        });
        extreme.add(change(|c| {
            c.failures = 1;
            c.pending = -1;
        }));
        assert_eq!((extreme.failures, extreme.pending), (i64::MAX, i64::MIN));
    }

    #[test]
    fn change_as_json() {
        let json = serde_json::to_value(change(|c| c.pending = -1)).unwrap();
        assert_eq!(
            json,
            serde_json::json!({"successes": 0, "failures": 0, "pending": -1, "denied_requests": 0, "approved": 0, "flagged": 0, "rejected": 0})
        );
        assert_eq!(
            serde_json::from_value::<CountsChange>(json).unwrap(),
            change(|c| c.pending = -1)
        );
    }

    #[test]
    fn extremes_stay_in_range() {
        let all = reputation(&ReputationCounts {
            successes: u64::MAX,
            failures: u64::MAX,
            pending: u64::MAX,
            denied_requests: u64::MAX,
            approved: u64::MAX,
            flagged: u64::MAX,
            rejected: u64::MAX,
        });
        for score in [
            all.execution_score,
            all.feedback_score,
            all.combined_reputation,
        ] {
            assert!((0.0..=1.0).contains(&score));
        }
        assert_eq!(all.total_actions, u64::MAX);
    }
}

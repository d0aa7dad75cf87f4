//! Agent reputation from record counts.
//!
//! Both scores are Beta(1,1) posterior means, so an agent with no history
//! starts at 0.5 rather than at 0 or 1, and a few outcomes move it gently:
//!
//! - `execution_score = (successes + 1) / (outcomes + 2)`, where outcomes are
//!   completed records (any result) and denied records;
//! - `feedback_score = (approved + 0.5 · flagged + 1) / (ratings + 2)`;
//! - `combined_reputation = 0.6 · execution_score + 0.4 · feedback_score`.
//!
//! `total_actions` counts every record of the agent: pending, completed and
//! denied.

use serde::{Deserialize, Serialize};

use crate::limits::{EXECUTION_WEIGHT, FEEDBACK_WEIGHT};

/// What reputation is computed from.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReputationCounts {
    /// Completed records with result `success`.
    #[serde(default)]
    pub successes: u64,
    /// Completed records with any other result, plus denied records.
    #[serde(default)]
    pub failures: u64,
    /// Records still pending (count only towards `total_actions`).
    #[serde(default)]
    pub pending: u64,
    #[serde(default)]
    pub approved: u64,
    #[serde(default)]
    pub flagged: u64,
    #[serde(default)]
    pub rejected: u64,
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
        total_actions: outcomes.saturating_add(counts.pending),
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
            approved: 3,
            flagged: 1,
            rejected: 1,
        };
        let r = reputation(&counts);
        assert_eq!(r.total_actions, 11);
        assert!((r.execution_score - 9.0 / 12.0).abs() < 1e-12);
        assert!((r.feedback_score - 4.5 / 7.0).abs() < 1e-12);
        assert!((r.combined_reputation - (0.6 * 0.75 + 0.4 * 4.5 / 7.0)).abs() < 1e-12);
        assert!(r.has_human_feedback);
    }

    #[test]
    fn extremes_stay_in_range() {
        let all = reputation(&ReputationCounts {
            successes: u64::MAX,
            failures: u64::MAX,
            pending: u64::MAX,
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

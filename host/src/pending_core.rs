//! TEMPORARY: the core rules being added on branch core-rules, with the same
//! names, so the host compiles before that branch merges. Deleted on merge.

use mandate_core::{
    BudgetExceeded, Claims, Constraints, DenyReason, IssueError, Jti, Outcome, Rating, RecordState,
    Usage, Usd, check_budget, check_extra_spend,
};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenStatus {
    Active,
    Revoked,
    Expired,
}

impl TokenStatus {
    pub fn at(exp: i64, revoked: bool, now: i64) -> TokenStatus {
        if revoked {
            TokenStatus::Revoked
        } else if now >= exp {
            TokenStatus::Expired
        } else {
            TokenStatus::Active
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            TokenStatus::Active => "active",
            TokenStatus::Revoked => "revoked",
            TokenStatus::Expired => "expired",
        }
    }

    pub fn deny_reason(self) -> Option<DenyReason> {
        match self {
            TokenStatus::Active => None,
            TokenStatus::Revoked => Some(DenyReason::TokenRevoked),
            TokenStatus::Expired => Some(DenyReason::TokenExpired),
        }
    }
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CountsChange {
    pub successes: i64,
    pub failures: i64,
    pub pending: i64,
    pub approved: i64,
    pub flagged: i64,
    pub rejected: i64,
}

impl CountsChange {
    pub fn of(before: Option<&RecordState>, after: &RecordState) -> CountsChange {
        let outcome = |state: &RecordState| match state {
            RecordState::Pending => CountsChange {
                pending: 1,
                ..CountsChange::default()
            },
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
        };
        match (before, after) {
            (None, state) => outcome(state),
            (Some(RecordState::Pending), state) => CountsChange {
                pending: -1,
                ..outcome(state)
            },
            (Some(_), RecordState::Rated { rating, .. }) => match rating {
                Rating::Approved => CountsChange {
                    approved: 1,
                    ..CountsChange::default()
                },
                Rating::Flagged => CountsChange {
                    flagged: 1,
                    ..CountsChange::default()
                },
                Rating::Rejected => CountsChange {
                    rejected: 1,
                    ..CountsChange::default()
                },
            },
            (Some(_), _) => CountsChange::default(),
        }
    }

    pub fn add(&mut self, other: CountsChange) {
        self.successes += other.successes;
        self.failures += other.failures;
        self.pending += other.pending;
        self.approved += other.approved;
        self.flagged += other.flagged;
        self.rejected += other.rejected;
    }
}

pub fn check_chain_budgets(
    chain: &[(Constraints, Usage)],
    spend: Usd,
) -> Result<(), BudgetExceeded> {
    chain
        .iter()
        .try_for_each(|(constraints, used)| check_budget(constraints, *used, spend))
}

pub fn check_chain_extra_spend(
    chain: &[(Constraints, Usage)],
    extra: Usd,
) -> Result<(), BudgetExceeded> {
    chain
        .iter()
        .try_for_each(|(constraints, used)| check_extra_spend(constraints, *used, extra))
}

pub trait IssueErrorExt {
    fn deny_reason(&self) -> Option<DenyReason>;
}

impl IssueErrorExt for IssueError {
    fn deny_reason(&self) -> Option<DenyReason> {
        match self {
            IssueError::DelegateNotHeld => Some(DenyReason::ActionNotPermitted),
            IssueError::Widening(_) => Some(DenyReason::ScopeWidening),
            IssueError::DepthExceeded => Some(DenyReason::DelegationTooDeep),
            IssueError::TooManyChildren => Some(DenyReason::TooManyChildren),
            IssueError::ParentExpired => Some(DenyReason::TokenExpired),
            _ => None,
        }
    }
}

pub trait ClaimsExt {
    fn is_governed_by(&self, jti: &Jti) -> bool;
}

impl ClaimsExt for Claims {
    fn is_governed_by(&self, jti: &Jti) -> bool {
        *jti == self.jti || self.ancestors().contains(&jti.hash())
    }
}

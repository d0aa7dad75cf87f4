//! Budgets: whether one more action, spending this much, stays within a
//! token's limits. Limits are cumulative over a token and all its
//! descendants; the caller sums the usage and applies the check to the token
//! and to each ancestor ([`check_chain_budgets`]), atomically with recording
//! the action.
//!
//! Every authorized action counts towards `max_actions`, delegations
//! included (a delegation is recorded as an action). Denied attempts count
//! towards nothing.

use crate::approval::chain_requires_approval;
use crate::money::Usd;
use crate::scope::{Action, Constraints, Limit, Resource};

/// What a token and its descendants have used so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage {
    pub spent: Usd,
    pub actions: u64,
}

/// The limit one more action would break.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("this action would exceed the token's {}", .0.as_str())]
pub struct BudgetExceeded(pub Limit);

impl BudgetExceeded {
    /// Stable snake_case code: `budget_max_spend_usd`,
    /// `budget_max_spend_per_action_usd` or `budget_max_actions`.
    pub fn code(&self) -> &'static str {
        match self.0 {
            Limit::MaxSpendUsd => "budget_max_spend_usd",
            Limit::MaxSpendPerActionUsd => "budget_max_spend_per_action_usd",
            Limit::MaxActions => "budget_max_actions",
        }
    }
}

/// Checks one more action spending `this_spend` against `constraints`, given
/// what has been `used`: the act's own spend against
/// `max_spend_per_action_usd`, then the sum against `max_spend_usd`, then
/// the action count.
pub fn check_budget(
    constraints: &Constraints,
    used: Usage,
    this_spend: Usd,
) -> Result<(), BudgetExceeded> {
    check_per_action(constraints, this_spend)?;
    if let Some(max) = constraints.max_spend_usd {
        let within = used
            .spent
            .checked_add(this_spend)
            .is_some_and(|total| total <= max);
        if !within {
            return Err(BudgetExceeded(Limit::MaxSpendUsd));
        }
    }
    if constraints
        .max_actions
        .is_some_and(|max| used.actions >= max)
    {
        return Err(BudgetExceeded(Limit::MaxActions));
    }
    Ok(())
}

/// Checks the spend of one act against `max_spend_per_action_usd`.
fn check_per_action(constraints: &Constraints, spend: Usd) -> Result<(), BudgetExceeded> {
    if constraints
        .max_spend_per_action_usd
        .is_some_and(|max| spend > max)
    {
        return Err(BudgetExceeded(Limit::MaxSpendPerActionUsd));
    }
    Ok(())
}

/// Checks a change of spend on an action already counted (a completion that
/// reports more than was reserved): only the extra amount is checked.
pub fn check_extra_spend(
    constraints: &Constraints,
    used: Usage,
    extra: Usd,
) -> Result<(), BudgetExceeded> {
    let counted = Constraints {
        max_spend_usd: constraints.max_spend_usd,
        ..Constraints::default()
    };
    check_budget(&counted, used, extra)
}

/// Checks one more action spending `spend` against every budget of a
/// chain: `check_budget` applied to each `(constraints, usage)` in order, the
/// first failure returned. The caller passes the tokens that carry a budget,
/// ancestors root first and the token itself last, each with the usage of
/// it and its descendants.
pub fn check_chain_budgets(
    chain: &[(Constraints, Usage)],
    spend: Usd,
) -> Result<(), BudgetExceeded> {
    chain
        .iter()
        .try_for_each(|(constraints, used)| check_budget(constraints, *used, spend))
}

/// Checks extra spend on an action already counted against every budget of a
/// chain, as [`check_chain_budgets`] does with [`check_extra_spend`].
pub fn check_chain_extra_spend(
    chain: &[(Constraints, Usage)],
    extra: Usd,
) -> Result<(), BudgetExceeded> {
    chain
        .iter()
        .try_for_each(|(constraints, used)| check_extra_spend(constraints, *used, extra))
}

/// Why a completion may not report the spend it reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum CompletionSpendRefused {
    /// The spend above what was authorized would pass a budget of the
    /// chain.
    #[error(transparent)]
    Budget(#[from] BudgetExceeded),
    /// A requirement of the chain matches the action at this spend: it
    /// needs a human's approval, which nobody gave for this much.
    #[error("spending this much needs a human's approval")]
    ApprovalRequired,
}

/// Judges a completion of `action` on `resource` that reports `spend`
/// where `authorized` was authorized: the reservation made at authorize,
/// which is also what an approval, when the action waited for one, was
/// granted for. Up to it, the spend is covered. Above it, the completion is
/// judged as the attempt was, in the same order: the whole new spend
/// against every `max_spend_per_action_usd` of the chain, the extra amount against
/// every budget of the chain, root first (the action is counted already,
/// so only spend is checked), then the whole new spend against every
/// approval requirement of the chain — an approval covers the spend it was
/// granted for and no more, so any requirement that matches needs a new
/// one. `chain` is as [`check_chain_budgets`] takes it.
pub fn check_completion_spend(
    chain: &[(Constraints, Usage)],
    action: &Action,
    resource: &Resource,
    authorized: Usd,
    spend: Usd,
) -> Result<(), CompletionSpendRefused> {
    let extra = spend.saturating_sub(authorized);
    if extra == Usd::ZERO {
        return Ok(());
    }
    chain
        .iter()
        .try_for_each(|(constraints, _)| check_per_action(constraints, spend))?;
    check_chain_extra_spend(chain, extra)?;
    let constraints = chain.iter().map(|(constraints, _)| constraints);
    if chain_requires_approval(constraints, action, resource, spend) {
        return Err(CompletionSpendRefused::ApprovalRequired);
    }
    Ok(())
}

/// The shares of a limit, in percent, whose reaching is reported
/// (`budget.threshold`): nearly spent, and spent.
pub const BUDGET_THRESHOLDS: [u32; 2] = [80, 100];

/// A budget's use reaching one of [`BUDGET_THRESHOLDS`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ThresholdReached {
    pub limit: Limit,
    /// 80 or 100.
    pub percent: u32,
}

/// The thresholds of `constraints`' limits that a change of usage from
/// `before` to `after` reaches: a threshold `t` of a limit `L` is reached
/// when `before < t% of L <= after`, so each is reported once as use
/// grows, and again only if it fell below first (a released
/// reservation). A zero limit has no thresholds (nothing is ever allowed
/// under it). Spend before actions, each in ascending order.
pub fn thresholds_reached(
    constraints: &Constraints,
    before: Usage,
    after: Usage,
) -> Vec<ThresholdReached> {
    let mut reached = Vec::new();
    let limits = [
        (
            Limit::MaxSpendUsd,
            constraints.max_spend_usd.map(Usd::micros),
            before.spent.micros(),
            after.spent.micros(),
        ),
        (
            Limit::MaxActions,
            constraints.max_actions,
            before.actions,
            after.actions,
        ),
    ];
    for (limit, max, before, after) in limits {
        let Some(max) = max.filter(|max| *max > 0) else {
            continue;
        };
        for percent in BUDGET_THRESHOLDS {
            let mark = u128::from(max) * u128::from(percent);
            if u128::from(before) * 100 < mark && mark <= u128::from(after) * 100 {
                reached.push(ThresholdReached { limit, percent });
            }
        }
    }
    reached
}

/// The budget of `constraints` that `used` has used the largest share of,
/// and that share in percent (above 100 when a released reservation was
/// spent again, never below 0). A zero limit is left out, as it is from
/// [`thresholds_reached`]; `None` when no limit is left.
pub fn largest_share(constraints: &Constraints, used: Usage) -> Option<(Limit, f64)> {
    let limits = [
        (
            Limit::MaxSpendUsd,
            constraints.max_spend_usd.map(Usd::micros),
            used.spent.micros(),
        ),
        (Limit::MaxActions, constraints.max_actions, used.actions),
    ];
    limits
        .into_iter()
        .filter_map(|(limit, max, used)| {
            let max = max.filter(|max| *max > 0)?;
            Some((limit, used as f64 * 100.0 / max as f64))
        })
        .fold(
            None,
            |best: Option<(Limit, f64)>, (limit, share)| match best {
                Some((_, most)) if most >= share => best,
                _ => Some((limit, share)),
            },
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_largest_share_is_of_the_most_used_budget() {
        let both = Constraints {
            max_spend_usd: Some(usd(10_000_000)),
            max_actions: Some(10),
            ..Constraints::default()
        };
        assert_eq!(
            largest_share(&both, used(5_000_000, 8)),
            Some((Limit::MaxActions, 80.0))
        );
        assert_eq!(
            largest_share(&both, used(9_000_000, 1)),
            Some((Limit::MaxSpendUsd, 90.0))
        );
        let zero = Constraints {
            max_actions: Some(0),
            ..Constraints::default()
        };
        assert_eq!(largest_share(&zero, used(0, 0)), None);
        assert_eq!(largest_share(&Constraints::default(), used(1, 1)), None);
    }

    fn usd(micros: u64) -> Usd {
        Usd::from_micros(micros).unwrap()
    }

    fn used(spent: u64, actions: u64) -> Usage {
        Usage {
            spent: usd(spent),
            actions,
        }
    }

    #[test]
    fn unlimited() {
        assert_eq!(
            check_budget(
                &Constraints::default(),
                used(u64::MAX / 2_000_000, 1 << 40),
                usd(5)
            ),
            Ok(())
        );
    }

    #[test]
    fn spend_limit_is_inclusive() {
        let c = Constraints {
            max_spend_per_action_usd: None,
            min_trust: None,
            max_spend_usd: Some(usd(100)),
            max_actions: None,
            require_approval: None,
            args: Default::default(),
        };
        assert_eq!(check_budget(&c, used(60, 0), usd(40)), Ok(()));
        assert_eq!(
            check_budget(&c, used(60, 0), usd(41)),
            Err(BudgetExceeded(Limit::MaxSpendUsd))
        );
        assert_eq!(check_budget(&c, used(100, 0), usd(0)), Ok(()));
    }

    #[test]
    fn action_limit_counts_this_action() {
        let c = Constraints {
            max_spend_per_action_usd: None,
            min_trust: None,
            max_spend_usd: None,
            max_actions: Some(2),
            require_approval: None,
            args: Default::default(),
        };
        assert_eq!(check_budget(&c, used(0, 1), Usd::ZERO), Ok(()));
        assert_eq!(
            check_budget(&c, used(0, 2), Usd::ZERO),
            Err(BudgetExceeded(Limit::MaxActions))
        );
        let none = Constraints {
            max_spend_per_action_usd: None,
            min_trust: None,
            max_spend_usd: None,
            max_actions: Some(0),
            require_approval: None,
            args: Default::default(),
        };
        assert_eq!(
            check_budget(&none, used(0, 0), Usd::ZERO),
            Err(BudgetExceeded(Limit::MaxActions))
        );
    }

    #[test]
    fn spend_reported_first_and_codes() {
        let c = Constraints {
            max_spend_per_action_usd: None,
            min_trust: None,
            max_spend_usd: Some(usd(1)),
            max_actions: Some(0),
            require_approval: None,
            args: Default::default(),
        };
        let err = check_budget(&c, used(0, 0), usd(2)).unwrap_err();
        assert_eq!(err, BudgetExceeded(Limit::MaxSpendUsd));
        assert_eq!(err.code(), "budget_max_spend_usd");
        assert_eq!(
            BudgetExceeded(Limit::MaxActions).code(),
            "budget_max_actions"
        );
    }

    fn limits(spend: Option<u64>, actions: Option<u64>) -> Constraints {
        Constraints {
            max_spend_per_action_usd: None,
            min_trust: None,
            max_spend_usd: spend.map(usd),
            max_actions: actions,
            require_approval: None,
            args: Default::default(),
        }
    }

    #[test]
    fn a_chain_is_checked_root_first() {
        let root = (limits(Some(100), Some(10)), used(50, 3));
        let child = (limits(Some(20), None), used(15, 3));
        let chain = [root, child.clone()];
        assert_eq!(check_chain_budgets(&chain, usd(5)), Ok(()));
        // The second token fails.
        assert_eq!(
            check_chain_budgets(&chain, usd(6)),
            Err(BudgetExceeded(Limit::MaxSpendUsd))
        );
        // Both fail, each on its own limit: the root's is reported.
        let spent_root = [(limits(Some(100), Some(3)), used(0, 3)), child];
        assert_eq!(
            check_chain_budgets(&spent_root, usd(6)),
            Err(BudgetExceeded(Limit::MaxActions))
        );
        assert_eq!(check_chain_budgets(&[], usd(u64::MAX / 2_000_000)), Ok(()));
    }

    #[test]
    fn a_chain_is_checked_for_extra_spend_without_the_count() {
        let chain = [
            (limits(None, Some(1)), used(0, 1)),
            (limits(Some(20), Some(1)), used(15, 1)),
        ];
        assert_eq!(
            check_chain_budgets(&chain, usd(1)),
            Err(BudgetExceeded(Limit::MaxActions))
        );
        assert_eq!(check_chain_extra_spend(&chain, usd(5)), Ok(()));
        assert_eq!(
            check_chain_extra_spend(&chain, usd(6)),
            Err(BudgetExceeded(Limit::MaxSpendUsd))
        );
        assert_eq!(check_chain_extra_spend(&[], usd(6)), Ok(()));
    }

    #[test]
    fn spend_past_the_largest_amount_exceeds_any_limit() {
        let max = crate::limits::MAX_USD * crate::limits::MICROS_PER_USD;
        let chain = [
            (limits(None, None), used(max, 0)),
            (limits(Some(max), None), used(max, 0)),
        ];
        assert_eq!(check_chain_budgets(&chain, usd(0)), Ok(()));
        assert_eq!(
            check_chain_budgets(&chain, usd(1)),
            Err(BudgetExceeded(Limit::MaxSpendUsd))
        );
        assert_eq!(
            check_chain_extra_spend(&chain, usd(max)),
            Err(BudgetExceeded(Limit::MaxSpendUsd))
        );
    }

    fn guarded(spend: Option<u64>, requirement: serde_json::Value) -> Constraints {
        Constraints {
            require_approval: Some(serde_json::from_value(requirement).unwrap()),
            ..limits(spend, None)
        }
    }

    fn pay() -> (Action, Resource) {
        (
            Action::parse("pay").unwrap(),
            Resource::parse("billing:invoice/7").unwrap(),
        )
    }

    #[test]
    fn a_completion_up_to_what_was_authorized_is_covered() {
        let (action, resource) = pay();
        // Over the threshold and the budget already, and approved so: the
        // authorized amount stands, and so does anything less.
        let chain = [(
            guarded(
                Some(100),
                serde_json::json!({"actions": ["pay"], "spend_over_usd": 0}),
            ),
            used(150_000_000, 1),
        )];
        for spend in [usd(150_000_000), usd(1), Usd::ZERO] {
            assert_eq!(
                check_completion_spend(&chain, &action, &resource, usd(150_000_000), spend),
                Ok(())
            );
        }
    }

    #[test]
    fn spend_above_what_was_authorized_is_judged_again() {
        let (action, resource) = pay();
        let threshold = serde_json::json!({"spend_over_usd": 100});
        let chain = [(guarded(None, threshold.clone()), used(1_000_000, 1))];
        let check = |chain: &[(Constraints, Usage)], authorized, spend| {
            check_completion_spend(chain, &action, &resource, usd(authorized), usd(spend))
        };
        // Authorized $1, completed $50,000: the threshold matches.
        assert_eq!(
            check(&chain, 1_000_000, 50_000_000_000),
            Err(CompletionSpendRefused::ApprovalRequired)
        );
        assert_eq!(check(&chain, 1_000_000, 100_000_000), Ok(()));
        assert_eq!(
            check(&chain, 1_000_000, 100_000_001),
            Err(CompletionSpendRefused::ApprovalRequired)
        );
        // Approved for $150: $150.000001 needs another approval.
        assert_eq!(
            check(&chain, 150_000_000, 150_000_001),
            Err(CompletionSpendRefused::ApprovalRequired)
        );
        // An action that always needs approval: any raise needs one.
        let always = [(
            guarded(None, serde_json::json!({"actions": ["pay"]})),
            used(40_000_000, 1),
        )];
        assert_eq!(
            check(&always, 40_000_000, 40_000_001),
            Err(CompletionSpendRefused::ApprovalRequired)
        );
        // A requirement of any token of the chain counts; a budget of any
        // is judged first.
        let chain = [
            (guarded(Some(10_000_000), threshold), used(4_000_000, 1)),
            (
                guarded(None, serde_json::json!({"spend_over_usd": 5})),
                used(4_000_000, 1),
            ),
        ];
        assert_eq!(
            check(&chain, 4_000_000, 10_000_001),
            Err(CompletionSpendRefused::Budget(BudgetExceeded(
                Limit::MaxSpendUsd
            )))
        );
        assert_eq!(
            check(&chain, 4_000_000, 5_000_001),
            Err(CompletionSpendRefused::ApprovalRequired)
        );
        assert_eq!(check(&chain, 4_000_000, 5_000_000), Ok(()));
        assert_eq!(check(&[], 0, 1 << 40), Ok(()));
    }

    #[test]
    fn extra_spend_ignores_the_count() {
        let c = Constraints {
            max_spend_per_action_usd: None,
            min_trust: None,
            max_spend_usd: Some(usd(10)),
            max_actions: Some(1),
            require_approval: None,
            args: Default::default(),
        };
        assert_eq!(check_extra_spend(&c, used(5, 1), usd(5)), Ok(()));
        assert_eq!(
            check_extra_spend(&c, used(5, 1), usd(6)),
            Err(BudgetExceeded(Limit::MaxSpendUsd))
        );
    }

    #[test]
    fn thresholds_are_reached_once_each_as_use_grows() {
        let c = Constraints {
            max_spend_per_action_usd: None,
            min_trust: None,
            max_spend_usd: Some(usd(100)),
            max_actions: Some(10),
            require_approval: None,
            args: Default::default(),
        };
        let spend = |percent| ThresholdReached {
            limit: Limit::MaxSpendUsd,
            percent,
        };
        let actions = |percent| ThresholdReached {
            limit: Limit::MaxActions,
            percent,
        };
        assert_eq!(thresholds_reached(&c, used(0, 0), used(79, 7)), vec![]);
        assert_eq!(
            thresholds_reached(&c, used(79, 7), used(80, 8)),
            vec![spend(80), actions(80)]
        );
        assert_eq!(thresholds_reached(&c, used(80, 8), used(99, 9)), vec![]);
        assert_eq!(
            thresholds_reached(&c, used(0, 9), used(100, 10)),
            vec![spend(80), spend(100), actions(100)]
        );
        // Falling back (a released reservation) reports nothing; reaching
        // again reports again.
        assert_eq!(thresholds_reached(&c, used(100, 10), used(50, 9)), vec![]);
        assert_eq!(
            thresholds_reached(&c, used(50, 9), used(85, 9)),
            vec![spend(80)]
        );
    }

    #[test]
    fn unlimited_and_zero_limits_have_no_thresholds() {
        assert_eq!(
            thresholds_reached(&Constraints::default(), used(0, 0), used(1 << 40, 1 << 40)),
            vec![]
        );
        let zero = Constraints {
            max_spend_per_action_usd: None,
            min_trust: None,
            max_spend_usd: Some(usd(0)),
            max_actions: Some(0),
            require_approval: None,
            args: Default::default(),
        };
        assert_eq!(thresholds_reached(&zero, used(0, 0), used(5, 5)), vec![]);
    }

    #[test]
    fn one_act_is_capped_on_its_own_wherever_its_spend_is_told() {
        let capped = Constraints {
            max_spend_per_action_usd: Some(usd(100)),
            max_spend_usd: Some(usd(1_000)),
            ..Constraints::default()
        };
        let used = Usage {
            spent: usd(0),
            actions: 0,
        };
        assert_eq!(check_budget(&capped, used, usd(100)), Ok(()));
        assert_eq!(
            check_budget(&capped, used, usd(101)),
            Err(BudgetExceeded(Limit::MaxSpendPerActionUsd))
        );
        assert_eq!(
            BudgetExceeded(Limit::MaxSpendPerActionUsd).code(),
            "budget_max_spend_per_action_usd"
        );
        let chain = [(capped, used)];
        let (pay, invoice) = (
            Action::parse("pay").unwrap(),
            Resource::parse("billing:1").unwrap(),
        );
        // A completion above its reservation is judged on the whole spend.
        assert_eq!(
            check_completion_spend(&chain, &pay, &invoice, usd(60), usd(101)),
            Err(CompletionSpendRefused::Budget(BudgetExceeded(
                Limit::MaxSpendPerActionUsd
            )))
        );
        assert_eq!(
            check_completion_spend(&chain, &pay, &invoice, usd(60), usd(100)),
            Ok(())
        );
    }
}

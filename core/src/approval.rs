//! Approval before the act: when a grant needs a human's yes before an
//! action is done (`require_approval` in `svc_constraints`), and how a
//! delegation keeps that requirement.
//!
//! # Form
//! `{"actions": [...], "resources": [...], "spend_over_usd": n, "args":
//! [statement, ...]}`, every member optional but at least one present;
//! `args` is a policy of [`crate::policy`]. The lists hold 1–64 distinct
//! entries (actions and resource patterns in the forms of [`crate::scope`]);
//! an empty list is refused rather than read as absent, so each requirement
//! has one spelling. Unknown members are refused.
//!
//! # Matching
//! An attempt (action, resource, spend) needs approval when any member
//! matches: the action is listed, a listed pattern covers the resource, or
//! the spend is strictly over `spend_over_usd`, or the `args` statements
//! all hold or are undefined over the attempt's arguments (fail closed:
//! arguments that lack what a statement looks at, or no arguments at all,
//! ask for approval). Over a chain, an attempt
//! needs approval when the requirement of any token of the chain matches
//! ([`chain_requires_approval`]); a child carries its parent's requirement,
//! so this is defence in depth.
//!
//! # Narrowing
//! A child's requirement must ask for approval wherever its parent's does:
//! every parent action stays listed, every parent pattern is covered by a
//! child pattern, and the threshold may only go down. A delegation request
//! that leaves `require_approval` out inherits the parent's; one that sets
//! it adds its actions and patterns to the parent's and replaces the
//! threshold (refused when higher) — see [`ApprovalRequirement::merged`].
//! The parent's `args` statements are kept unchanged: a request that sets
//! other ones is refused (`approval_args_changed`).
//!
//! # Failing closed
//! A requirement must be able to match under the grant it is part of
//! ([`check_reachable`]): every listed action is one the grant holds, every
//! listed pattern overlaps a granted pattern, and a spend threshold lies
//! below `max_spend_usd`. A typo (`sned`, `mial:*`) would otherwise turn
//! approval off in silence. At a delegation only what the request adds is
//! judged, against the child's grant after inheritance: what the child
//! inherits and cannot do needs no approval because it cannot be done.
//!
//! This module knows nothing of who approves, how long an approval waits or
//! where it is stored: those are the server's.

use serde::{Deserialize, Serialize};

use crate::money::Usd;
use crate::policy::{Args, Pol, approval_args_match};
use crate::scope::{
    Action, Constraints, Resource, ResourcePattern, Scope, ScopeError, Violation, check_list,
};

/// When an action needs a human's approval before it is done.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "RawApprovalRequirement")]
pub struct ApprovalRequirement {
    #[serde(skip_serializing_if = "Vec::is_empty")]
    actions: Vec<Action>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    resources: Vec<ResourcePattern>,
    #[serde(skip_serializing_if = "Option::is_none")]
    spend_over_usd: Option<Usd>,
    /// Statements over the arguments (see [`crate::policy`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    args: Option<Pol>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawApprovalRequirement {
    #[serde(default)]
    actions: Option<Vec<Action>>,
    #[serde(default)]
    resources: Option<Vec<ResourcePattern>>,
    #[serde(default)]
    spend_over_usd: Option<Usd>,
    #[serde(default, deserialize_with = "crate::policy::approval_args")]
    args: Option<Pol>,
}

impl TryFrom<RawApprovalRequirement> for ApprovalRequirement {
    type Error = ScopeError;
    fn try_from(raw: RawApprovalRequirement) -> Result<ApprovalRequirement, ScopeError> {
        let only_args =
            raw.actions.is_none() && raw.resources.is_none() && raw.spend_over_usd.is_none();
        match raw.args {
            Some(args) if only_args => Ok(ApprovalRequirement::of_args(args)),
            args => Ok(ApprovalRequirement::from_members(
                raw.actions,
                raw.resources,
                raw.spend_over_usd,
            )?
            .with_args(args)),
        }
    }
}

/// The request field of a requirement's actions.
const ACTIONS_FIELD: &str = "require_approval.actions";
/// The request field of a requirement's resource patterns.
const RESOURCES_FIELD: &str = "require_approval.resources";

impl ApprovalRequirement {
    /// A requirement of the members given (`None`: absent). A present list
    /// holds 1–64 distinct entries; at least one member is present.
    pub fn from_members(
        actions: Option<Vec<Action>>,
        resources: Option<Vec<ResourcePattern>>,
        spend_over_usd: Option<Usd>,
    ) -> Result<ApprovalRequirement, ScopeError> {
        if actions.is_none() && resources.is_none() && spend_over_usd.is_none() {
            return Err(ScopeError::ApprovalRequirementEmpty);
        }
        Ok(ApprovalRequirement {
            actions: present(ACTIONS_FIELD, actions)?,
            resources: present(RESOURCES_FIELD, resources)?,
            spend_over_usd,
            args: None,
        })
    }

    /// A requirement of `args` statements alone: an attempt needs approval
    /// when they hold or are undefined over its arguments.
    pub fn of_args(args: Pol) -> ApprovalRequirement {
        ApprovalRequirement {
            actions: Vec::new(),
            resources: Vec::new(),
            spend_over_usd: None,
            args: Some(args),
        }
    }

    /// Parses a requirement given as text, as [`ApprovalRequirement::from_members`]
    /// takes it.
    pub fn parse<A: AsRef<str>, R: AsRef<str>>(
        actions: Option<&[A]>,
        resources: Option<&[R]>,
        spend_over_usd: Option<Usd>,
    ) -> Result<ApprovalRequirement, ScopeError> {
        let actions = actions
            .map(|list| parse_list(ACTIONS_FIELD, list, Action::parse))
            .transpose()?;
        let resources = resources
            .map(|list| parse_list(RESOURCES_FIELD, list, ResourcePattern::parse))
            .transpose()?;
        ApprovalRequirement::from_members(actions, resources, spend_over_usd)
    }

    /// The actions that always need approval (empty when none is listed).
    pub fn actions(&self) -> &[Action] {
        &self.actions
    }

    /// The resource patterns whose resources always need approval (empty
    /// when none is listed).
    pub fn resources(&self) -> &[ResourcePattern] {
        &self.resources
    }

    /// The requirement with `args` statements (see [`crate::policy`]) in
    /// place of its own.
    pub fn with_args(mut self, args: Option<Pol>) -> ApprovalRequirement {
        self.args = args;
        self
    }

    /// The statements over the arguments that ask for approval when they
    /// all hold or are undefined.
    pub fn args(&self) -> Option<&Pol> {
        self.args.as_ref()
    }

    /// Spending strictly more than this needs approval.
    pub fn spend_over_usd(&self) -> Option<Usd> {
        self.spend_over_usd
    }

    /// Whether an attempt of `action` on `resource` spending `spend` needs
    /// approval: the action is listed, a listed pattern covers the
    /// resource, or the spend is strictly over the threshold.
    /// With `args` statements, an attempt whose arguments are not given
    /// needs approval ([`ApprovalRequirement::applies_with_args`]).
    pub fn applies(&self, action: &Action, resource: &Resource, spend: Usd) -> bool {
        self.applies_with_args(action, resource, spend, None)
    }

    /// Whether an attempt needs approval, its arguments judged too: as
    /// [`ApprovalRequirement::applies`], or the `args` statements all hold
    /// or are undefined over `args` (absent arguments: undefined).
    pub fn applies_with_args(
        &self,
        action: &Action,
        resource: &Resource,
        spend: Usd,
        args: Option<&Args>,
    ) -> bool {
        self.actions.contains(action)
            || self.resources.iter().any(|p| p.covers(resource))
            || self
                .spend_over_usd
                .is_some_and(|threshold| spend > threshold)
            || self
                .args
                .as_ref()
                .is_some_and(|pol| approval_args_match(pol, args))
    }

    /// The requirement of a delegated token: the parent's (`self`), with
    /// the request's actions and patterns added (each once, the parent's
    /// first) and the request's threshold in place of the parent's when it
    /// sets one. A higher threshold is not refused here: the merged result
    /// keeps it and [`crate::scope::check_narrowing`] reports it, so the
    /// refusal names the field. Fails only when a list would pass 64 entries.
    pub fn merged(&self, request: &ApprovalRequirement) -> Result<ApprovalRequirement, ScopeError> {
        let mut actions = self.actions.clone();
        for action in &request.actions {
            if !actions.contains(action) {
                actions.push(action.clone());
            }
        }
        let mut resources = self.resources.clone();
        for pattern in &request.resources {
            if !resources.contains(pattern) {
                resources.push(pattern.clone());
            }
        }
        check_list(ACTIONS_FIELD, &actions, true)?;
        check_list(RESOURCES_FIELD, &resources, true)?;
        Ok(ApprovalRequirement {
            actions,
            resources,
            spend_over_usd: request.spend_over_usd.or(self.spend_over_usd),
            args: request.args.clone().or_else(|| self.args.clone()),
        })
    }
}

/// Refuses a requirement that could never match under its grant: an
/// action `scope` does not hold, a pattern no pattern of `scope` overlaps,
/// a `spend_over_usd` at or above `max_spend_usd` (spend strictly over the
/// threshold would be over the budget). Members of `inherited` (the
/// parent's requirement, at a delegation) are not judged: the child may
/// not be able to do what its parent needed approval for. Reports the first
/// member that fails, in the order actions, resources, threshold.
pub fn check_reachable(
    requirement: &ApprovalRequirement,
    inherited: Option<&ApprovalRequirement>,
    scope: &Scope,
    max_spend_usd: Option<Usd>,
) -> Result<(), ScopeError> {
    let inherited_actions = inherited.map_or(&[][..], |parent| parent.actions());
    if let Some(action) = requirement
        .actions
        .iter()
        .find(|a| !inherited_actions.contains(a) && !scope.actions().contains(a))
    {
        return Err(ScopeError::ApprovalActionNotHeld(action.clone()));
    }
    let inherited_patterns = inherited.map_or(&[][..], |parent| parent.resources());
    if let Some(pattern) = requirement.resources.iter().find(|p| {
        !inherited_patterns.contains(p) && !scope.resources().iter().any(|g| g.overlaps(p))
    }) {
        return Err(ScopeError::ApprovalResourceOutsideScope(pattern.clone()));
    }
    let inherited_threshold = inherited.and_then(ApprovalRequirement::spend_over_usd);
    if let (Some(threshold), Some(budget)) = (requirement.spend_over_usd, max_spend_usd)
        && Some(threshold) != inherited_threshold
        && threshold >= budget
    {
        return Err(ScopeError::ApprovalThresholdUnreachable { threshold, budget });
    }
    Ok(())
}

/// Refuses constraints whose approval requirement could never match under
/// `scope` ([`check_reachable`], nothing inherited): the rule at issue.
pub fn check_constraints_reachable(
    scope: &Scope,
    constraints: &Constraints,
) -> Result<(), ScopeError> {
    match &constraints.require_approval {
        Some(requirement) => check_reachable(requirement, None, scope, constraints.spend_cap()),
        None => Ok(()),
    }
}

/// A list member as given: absent (held as empty), or 1–64 distinct
/// entries.
fn present<T: PartialEq + std::fmt::Display>(
    field: &'static str,
    items: Option<Vec<T>>,
) -> Result<Vec<T>, ScopeError> {
    let Some(items) = items else {
        return Ok(Vec::new());
    };
    check_list(field, &items, false)?;
    Ok(items)
}

fn parse_list<T, S: AsRef<str>>(
    field: &'static str,
    list: &[S],
    parse: fn(&str) -> Result<T, ScopeError>,
) -> Result<Vec<T>, ScopeError> {
    if list.len() > crate::limits::MAX_LIST_LEN {
        return Err(ScopeError::TooMany(field));
    }
    list.iter().map(|item| parse(item.as_ref())).collect()
}

/// Whether `child` asks for approval wherever `parent` does; pushes a
/// violation for each way it does not.
pub(crate) fn check_covers(
    child: Option<&ApprovalRequirement>,
    parent: Option<&ApprovalRequirement>,
    violations: &mut Vec<Violation>,
) {
    let Some(parent) = parent else {
        return;
    };
    let Some(child) = child else {
        violations.push(Violation::ApprovalDropped);
        return;
    };
    for action in &parent.actions {
        if !child.actions.contains(action) {
            violations.push(Violation::ApprovalActionDropped(action.clone()));
        }
    }
    for pattern in &parent.resources {
        if !child.resources.iter().any(|c| c.covers_pattern(pattern)) {
            violations.push(Violation::ApprovalResourceNotCovered(pattern.clone()));
        }
    }
    match (child.spend_over_usd, parent.spend_over_usd) {
        (None, Some(_)) => violations.push(Violation::ApprovalThresholdDropped),
        (Some(c), Some(p)) if c > p => violations.push(Violation::ApprovalThresholdRaised),
        _ => {}
    }
    if parent.args.is_some() && child.args != parent.args {
        violations.push(Violation::ApprovalArgsChanged);
    }
}

/// Whether an attempt needs approval under any token of a chain: `chain`
/// is the constraints of the ancestors, root first, and of the token
/// itself last, as [`crate::check_chain_budgets`] takes them (pass
/// `chain.iter().map(|(constraints, _)| constraints)`); tokens without a
/// requirement may be left out or passed.
pub fn chain_requires_approval<'a>(
    chain: impl IntoIterator<Item = &'a Constraints>,
    action: &Action,
    resource: &Resource,
    spend: Usd,
) -> bool {
    chain_requires_approval_with_args(chain, action, resource, spend, None)
}

/// [`chain_requires_approval`] with the attempt's arguments judged by the
/// requirements' `args` statements (absent arguments: undefined, so a
/// requirement with `args` asks for approval).
pub fn chain_requires_approval_with_args<'a>(
    chain: impl IntoIterator<Item = &'a Constraints>,
    action: &Action,
    resource: &Resource,
    spend: Usd,
    args: Option<&Args>,
) -> bool {
    chain.into_iter().any(|constraints| {
        constraints
            .require_approval
            .as_ref()
            .is_some_and(|requirement| requirement.applies_with_args(action, resource, spend, args))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scope() -> Scope {
        Scope::parse(&["mail:*", "crm:contacts"], &["send", "read"]).unwrap()
    }

    fn requirement(
        actions: &[&str],
        resources: &[&str],
        spend: Option<f64>,
    ) -> ApprovalRequirement {
        ApprovalRequirement::parse(
            Some(actions).filter(|a| !a.is_empty()),
            Some(resources).filter(|r| !r.is_empty()),
            spend.map(|s| Usd::from_f64(s).unwrap()),
        )
        .unwrap()
    }

    fn usd(amount: f64) -> Option<Usd> {
        Some(Usd::from_f64(amount).unwrap())
    }

    #[test]
    fn a_requirement_that_can_match_is_kept() {
        let ok = requirement(&["send"], &["mail:inbox", "crm:*"], Some(99.99));
        assert_eq!(check_reachable(&ok, None, &scope(), usd(100.0)), Ok(()));
        let unbudgeted = requirement(&[], &[], Some(1_000_000.0));
        assert_eq!(check_reachable(&unbudgeted, None, &scope(), None), Ok(()));
    }

    #[test]
    fn an_action_the_grant_does_not_hold_is_refused() {
        let typo = requirement(&["send", "sned"], &[], None);
        let error = check_reachable(&typo, None, &scope(), None).unwrap_err();
        assert_eq!(error.code(), "approval_action_not_held");
        assert!(error.to_string().contains("`sned`"));
    }

    #[test]
    fn a_pattern_no_granted_pattern_overlaps_is_refused() {
        for pattern in ["mial:*", "crm:deals", "mailbox:x"] {
            let typo = requirement(&[], &[pattern], None);
            let error = check_reachable(&typo, None, &scope(), None).unwrap_err();
            assert_eq!(error.code(), "approval_resource_outside_scope", "{pattern}");
        }
    }

    #[test]
    fn a_threshold_at_or_above_the_per_action_cap_is_refused() {
        let constraints = |threshold: f64| -> Constraints {
            serde_json::from_value(serde_json::json!({
                "max_spend_usd": 1000,
                "max_spend_per_action_usd": 100,
                "require_approval": {"spend_over_usd": threshold}
            }))
            .unwrap()
        };
        let error = check_constraints_reachable(&scope(), &constraints(100.0)).unwrap_err();
        assert_eq!(error.code(), "approval_threshold_unreachable");
        assert_eq!(
            check_constraints_reachable(&scope(), &constraints(99.0)),
            Ok(())
        );
    }

    #[test]
    fn a_threshold_at_or_above_the_budget_is_refused() {
        for threshold in [100.0, 100.000001, 5000.0] {
            let high = requirement(&[], &[], Some(threshold));
            let error = check_reachable(&high, None, &scope(), usd(100.0)).unwrap_err();
            assert_eq!(
                error.code(),
                "approval_threshold_unreachable",
                "{threshold}"
            );
        }
    }

    #[test]
    fn what_a_child_inherits_is_not_judged() {
        let parent = requirement(&["pay"], &["bank:*"], Some(500.0));
        let child = parent.merged(&requirement(&["send"], &[], None)).unwrap();
        assert_eq!(
            check_reachable(&child, Some(&parent), &scope(), usd(100.0)),
            Ok(())
        );
        let added = parent.merged(&requirement(&["sned"], &[], None)).unwrap();
        assert_eq!(
            check_reachable(&added, Some(&parent), &scope(), None)
                .unwrap_err()
                .code(),
            "approval_action_not_held"
        );
        let lowered = parent.merged(&requirement(&[], &[], Some(200.0))).unwrap();
        assert_eq!(
            check_reachable(&lowered, Some(&parent), &scope(), usd(100.0))
                .unwrap_err()
                .code(),
            "approval_threshold_unreachable"
        );
    }
}

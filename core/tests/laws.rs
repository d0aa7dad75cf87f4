//! Property tests for the laws the rules must keep.

mod common;

use common::{NOW, key, root};
use mandate_core::{
    Action, ApprovalRequirement, Constraints, Framework, Grant, Jwks, Policy, Reputation,
    ReputationCounts, Resource, ResourcePattern, Scope, Usd, VerifyOptions,
    chain_requires_approval, check_narrowing, delegated_grant, permits, reputation, sign, verify,
};
use proptest::prelude::*;

const NAMESPACES: [&str; 3] = ["crm", "mail", "files"];
const NAMES: [&str; 3] = ["a", "b", "c"];
const ACTIONS: [&str; 4] = ["read", "write", "delegate", "pay"];
const FRAMEWORKS: [&str; 3] = ["gdpr", "hipaa", "soc2"];

fn pattern() -> impl Strategy<Value = ResourcePattern> {
    (0..3usize, 0..4usize).prop_map(|(ns, name)| {
        let name = NAMES.get(name).copied().unwrap_or("*");
        ResourcePattern::parse(&format!("{}:{name}", NAMESPACES[ns])).unwrap()
    })
}

fn resource() -> impl Strategy<Value = Resource> {
    (0..3usize, 0..3usize).prop_map(|(ns, name)| {
        Resource::parse(&format!("{}:{}", NAMESPACES[ns], NAMES[name])).unwrap()
    })
}

fn action() -> impl Strategy<Value = Action> {
    (0..4usize).prop_map(|i| Action::parse(ACTIONS[i]).unwrap())
}

/// Pattern `i` of 12: each namespace's three names, then its `*`.
fn pattern_at(i: usize) -> ResourcePattern {
    let name = NAMES.get(i % 4).copied().unwrap_or("*");
    ResourcePattern::parse(&format!("{}:{name}", NAMESPACES[i / 4])).unwrap()
}

fn usd(micros: u64) -> Usd {
    Usd::from_micros(micros).unwrap()
}

/// Spends around the thresholds requirements are drawn with.
fn spend() -> impl Strategy<Value = Usd> {
    (0..120u64).prop_map(usd)
}

/// A requirement of 0–2 actions, 0–2 patterns and perhaps a threshold,
/// with at least one member.
fn requirement() -> impl Strategy<Value = ApprovalRequirement> {
    (
        prop::collection::btree_set(0..4usize, 0..3),
        prop::collection::btree_set(0..12usize, 0..3),
        prop::option::of(0..100u64),
    )
        .prop_filter_map(
            "a requirement has a member",
            |(actions, patterns, spend)| {
                let actions: Vec<Action> = actions
                    .into_iter()
                    .map(|i| Action::parse(ACTIONS[i]).unwrap())
                    .collect();
                let patterns: Vec<ResourcePattern> = patterns.into_iter().map(pattern_at).collect();
                ApprovalRequirement::from_members(
                    Some(actions).filter(|a| !a.is_empty()),
                    Some(patterns).filter(|p| !p.is_empty()),
                    spend.map(usd),
                )
                .ok()
            },
        )
}

/// Whether `requirement` (if any) asks for approval of the attempt.
fn asks(requirement: Option<&ApprovalRequirement>, a: &Action, r: &Resource, s: Usd) -> bool {
    requirement.is_some_and(|req| req.applies(a, r, s))
}

fn grant() -> impl Strategy<Value = Grant> {
    (
        prop::collection::btree_set(0..12usize, 1..5),
        prop::collection::btree_set(0..4usize, 1..4),
        prop::option::of(0..100u64),
        prop::option::of(0..10u64),
        prop::collection::btree_set(0..3usize, 0..3),
        0..100i64,
        prop::option::of(requirement()),
    )
        .prop_map(
            |(resources, actions, spend, count, frameworks, exp, approval)| {
                let resources: Vec<ResourcePattern> =
                    resources.into_iter().map(pattern_at).collect();
                let actions = actions
                    .into_iter()
                    .map(|i| Action::parse(ACTIONS[i]).unwrap())
                    .collect();
                Grant {
                    scope: Scope::new(resources, actions).unwrap(),
                    constraints: Constraints {
                        min_trust: None,
                        max_spend_usd: spend.map(usd),
                        max_actions: count,
                        require_approval: approval,
                        args: Default::default(),
                    },
                    policy: Policy::new(
                        frameworks
                            .into_iter()
                            .map(|i| Framework::parse(FRAMEWORKS[i]).unwrap())
                            .collect(),
                    )
                    .unwrap(),
                    expires_at: exp,
                }
            },
        )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    /// A child that passes narrowing permits nothing its parent does not,
    /// and asks for approval wherever its parent does.
    #[test]
    fn narrowing_never_widens(
        child in grant(), parent in grant(), a in action(), r in resource(), s in spend(),
    ) {
        if check_narrowing(&child, &parent).is_ok() {
            if asks(parent.constraints.require_approval.as_ref(), &a, &r, s) {
                prop_assert!(asks(child.constraints.require_approval.as_ref(), &a, &r, s));
            }
            if permits(&child.scope, &a, &r) {
                prop_assert!(permits(&parent.scope, &a, &r));
            }
            prop_assert!(child.expires_at <= parent.expires_at);
            if let Some(max) = parent.constraints.max_spend_usd {
                prop_assert!(child.constraints.max_spend_usd.is_some_and(|c| c <= max));
            }
            if let Some(max) = parent.constraints.max_actions {
                prop_assert!(child.constraints.max_actions.is_some_and(|c| c <= max));
            }
        }
    }

    /// Whatever a delegation asks for, what it gets keeps every limit and
    /// framework of its parent, grants nothing more, and keeps what the
    /// request set explicitly.
    #[test]
    fn delegation_keeps_what_it_does_not_restate(asked in grant(), parent in grant()) {
        if let Ok(child) = delegated_grant(asked.clone(), &parent) {
            prop_assert!(check_narrowing(&child, &parent).is_ok());
            for framework in parent.policy.frameworks().iter().chain(asked.policy.frameworks()) {
                prop_assert!(child.policy.frameworks().contains(framework));
            }
            prop_assert_eq!(
                child.constraints.max_spend_usd,
                asked.constraints.max_spend_usd.or(parent.constraints.max_spend_usd)
            );
            prop_assert_eq!(
                child.constraints.max_actions,
                asked.constraints.max_actions.or(parent.constraints.max_actions)
            );
            let (child_req, parent_req, asked_req) = (
                child.constraints.require_approval.as_ref(),
                parent.constraints.require_approval.as_ref(),
                asked.constraints.require_approval.as_ref(),
            );
            prop_assert_eq!(child_req.is_some(), parent_req.is_some() || asked_req.is_some());
            if let Some(child_req) = child_req {
                for action in parent_req.iter().chain(&asked_req).flat_map(|q| q.actions()) {
                    prop_assert!(child_req.actions().contains(action));
                }
                for pattern in parent_req.iter().chain(&asked_req).flat_map(|q| q.resources()) {
                    prop_assert!(child_req.resources().contains(pattern));
                }
                prop_assert_eq!(
                    child_req.spend_over_usd(),
                    asked_req
                        .and_then(ApprovalRequirement::spend_over_usd)
                        .or(parent_req.and_then(ApprovalRequirement::spend_over_usd))
                );
            }
            prop_assert_eq!(child.scope, asked.scope);
        }
    }

    /// A delegated grant asks for approval wherever its parent does, and
    /// wherever its request asked to.
    #[test]
    fn a_delegated_requirement_covers_the_parents(
        asked in grant(), parent in grant(), a in action(), r in resource(), s in spend(),
    ) {
        if let Ok(child) = delegated_grant(asked.clone(), &parent) {
            let child_asks = asks(child.constraints.require_approval.as_ref(), &a, &r, s);
            if asks(parent.constraints.require_approval.as_ref(), &a, &r, s) {
                prop_assert!(child_asks);
            }
            if asks(asked.constraints.require_approval.as_ref(), &a, &r, s) {
                prop_assert!(child_asks);
            }
        }
    }

    /// A delegation is refused for its approval requirement only when it
    /// sets a higher threshold than the parent's.
    #[test]
    fn only_a_higher_threshold_refuses_a_requirement(asked in requirement(), parent in requirement()) {
        let scope = Scope::parse(&["crm:*"], &["read"]).unwrap();
        let of = |requirement: ApprovalRequirement| Grant {
            scope: scope.clone(),
            constraints: Constraints { require_approval: Some(requirement), ..Constraints::default() },
            policy: Policy::default(),
            expires_at: 10,
        };
        let raised = matches!(
            (asked.spend_over_usd(), parent.spend_over_usd()),
            (Some(a), Some(p)) if a > p
        );
        let outcome = delegated_grant(of(asked), &of(parent));
        prop_assert_eq!(outcome.is_err(), raised);
    }

    /// Over a chain, an attempt needs approval when any token's
    /// requirement matches it.
    #[test]
    fn a_chain_requires_approval_when_any_token_does(
        chain in prop::collection::vec(grant(), 0..4), a in action(), r in resource(), s in spend(),
    ) {
        let constraints: Vec<Constraints> = chain.into_iter().map(|g| g.constraints).collect();
        let any = constraints
            .iter()
            .any(|c| asks(c.require_approval.as_ref(), &a, &r, s));
        prop_assert_eq!(chain_requires_approval(&constraints, &a, &r, s), any);
    }

    /// Narrowing is transitive.
    #[test]
    fn narrowing_is_transitive(a in grant(), b in grant(), c in grant()) {
        if check_narrowing(&c, &b).is_ok() && check_narrowing(&b, &a).is_ok() {
            prop_assert!(check_narrowing(&c, &a).is_ok());
        }
    }

    /// Every grant is as narrow as itself.
    #[test]
    fn narrowing_is_reflexive(g in grant()) {
        prop_assert!(check_narrowing(&g, &g).is_ok());
    }

    /// Pattern coverage agrees with resource coverage.
    #[test]
    fn covering_patterns_cover_resources(p in pattern(), q in pattern(), r in resource()) {
        if p.covers_pattern(&q) && q.covers(&Resource::parse(r.as_str()).unwrap()) {
            prop_assert!(p.covers(&r));
        }
    }

    /// Combined reputation is 0.6 e + 0.4 f and stays in [0, 1].
    #[test]
    fn combined_reputation_formula(
        successes in 0..1_000_000u64, failures in 0..1_000_000u64, pending in 0..1000u64,
        denied_requests in 0..1000u64,
        approved in 0..1000u64, flagged in 0..1000u64, rejected in 0..1000u64,
    ) {
        let r: Reputation = reputation(&ReputationCounts {
            successes, failures, pending, denied_requests, approved, flagged, rejected,
        });
        prop_assert!((r.combined_reputation - (0.6 * r.execution_score + 0.4 * r.feedback_score)).abs() < 1e-12);
        for score in [r.execution_score, r.feedback_score, r.combined_reputation] {
            prop_assert!((0.0..=1.0).contains(&score));
        }
        prop_assert_eq!(r.total_actions, successes + failures + pending + denied_requests);
        let without = reputation(&ReputationCounts {
            successes, failures, pending, approved, flagged, rejected, ..ReputationCounts::default()
        });
        // Denied requests are no outcome: they move no score.
        prop_assert_eq!(r.execution_score, without.execution_score);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(3000))]

    /// Flipping any bit of a signed token makes verification fail.
    #[test]
    fn any_bit_flip_breaks_verification(position in any::<prop::sample::Index>(), bit in 0..8u32) {
        let token = sign(&root(), &key(1)).unwrap();
        let jwks = Jwks::from_signing_keys([&key(1)]);
        let mut bytes = token.into_bytes();
        let i = position.index(bytes.len());
        bytes[i] ^= 1 << bit;
        let outcome = match String::from_utf8(bytes) {
            Ok(flipped) => verify(&flipped, &jwks, NOW, &VerifyOptions::default()).map(|_| ()),
            Err(_) => return Ok(()),
        };
        prop_assert!(outcome.is_err());
    }
}

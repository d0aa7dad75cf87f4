//! Property tests for the laws the rules must keep.

mod common;

use common::{NOW, key, root};
use mandate_core::{
    Action, Constraints, Framework, Grant, Jwks, Policy, Reputation, ReputationCounts, Resource,
    ResourcePattern, Scope, Usd, VerifyOptions, check_narrowing, delegated_grant, permits,
    reputation, sign, verify,
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

fn grant() -> impl Strategy<Value = Grant> {
    (
        prop::collection::btree_set(0..12usize, 1..5),
        prop::collection::btree_set(0..4usize, 1..4),
        prop::option::of(0..100u64),
        prop::option::of(0..10u64),
        prop::collection::btree_set(0..3usize, 0..3),
        0..100i64,
    )
        .prop_map(|(resources, actions, spend, count, frameworks, exp)| {
            let resources: Vec<ResourcePattern> = resources
                .into_iter()
                .map(|i| {
                    let name = NAMES.get(i % 4).copied().unwrap_or("*");
                    ResourcePattern::parse(&format!("{}:{name}", NAMESPACES[i / 4])).unwrap()
                })
                .collect();
            let actions = actions
                .into_iter()
                .map(|i| Action::parse(ACTIONS[i]).unwrap())
                .collect();
            Grant {
                scope: Scope::new(resources, actions).unwrap(),
                constraints: Constraints {
                    max_spend_usd: spend.map(|s| Usd::from_micros(s).unwrap()),
                    max_actions: count,
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
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    /// A child that passes narrowing permits nothing its parent does not.
    #[test]
    fn narrowing_never_widens(child in grant(), parent in grant(), a in action(), r in resource()) {
        if check_narrowing(&child, &parent).is_ok() {
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
            prop_assert_eq!(child.scope, asked.scope);
        }
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
        approved in 0..1000u64, flagged in 0..1000u64, rejected in 0..1000u64,
    ) {
        let r: Reputation = reputation(&ReputationCounts { successes, failures, pending, approved, flagged, rejected });
        prop_assert!((r.combined_reputation - (0.6 * r.execution_score + 0.4 * r.feedback_score)).abs() < 1e-12);
        for score in [r.execution_score, r.feedback_score, r.combined_reputation] {
            prop_assert!((0.0..=1.0).contains(&score));
        }
        prop_assert_eq!(r.total_actions, successes + failures + pending);
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

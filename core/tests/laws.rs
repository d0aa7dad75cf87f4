//! Property tests for the laws the rules must keep.

mod common;

use common::{NOW, key, root};
use mandate_core::policy::Pol;
use mandate_core::{
    Action, ApprovalRequirement, Audience, Constraints, Framework, Grant, Jwks, Policy, Reputation,
    ReputationCounts, Resource, ResourcePattern, Scope, Usd, VerifyOptions,
    chain_requires_approval, check_narrowing, delegated_grant, permits, reputation, sign, verify,
};
use mandate_core::{Args, ArgsRules, check_args};
use proptest::prelude::*;
use serde_json::{Value, json};

const NAMESPACES: [&str; 3] = ["crm", "mail", "files"];
/// Resource names, and the names of patterns (a name, a prefix covering
/// the first two names, another name; then `*`).
const NAMES: [&str; 3] = ["a/x", "a/y", "b"];
const PATTERN_NAMES: [&str; 3] = ["a/x", "a/*", "b"];
const ACTIONS: [&str; 4] = ["read", "write", "delegate", "pay"];
const FRAMEWORKS: [&str; 3] = ["gdpr", "hipaa", "soc2"];
/// Audiences: two resource servers, one a path under the other.
const AUDIENCES: [&str; 2] = ["https://mcp.example.com", "https://mcp.example.com/crm"];

fn pattern() -> impl Strategy<Value = ResourcePattern> {
    (0..3usize, 0..4usize).prop_map(|(ns, name)| {
        let name = PATTERN_NAMES.get(name).copied().unwrap_or("*");
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
    let name = PATTERN_NAMES.get(i % 4).copied().unwrap_or("*");
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
        prop::option::of(0..50u64),
        prop::option::of(0..10u64),
        prop::collection::btree_set(0..3usize, 0..3),
        0..100i64,
        prop::option::of(requirement()),
        prop::option::of(0..AUDIENCES.len()),
    )
        .prop_map(
            |(resources, actions, spend, per_action, count, frameworks, exp, approval, aud)| {
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
                        max_spend_per_action_usd: per_action.map(usd),
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
                    audience: aud.map(|i| Audience::parse(AUDIENCES[i]).unwrap()),
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
            if parent.audience.is_some() {
                prop_assert_eq!(&child.audience, &parent.audience);
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
            prop_assert_eq!(
                &child.audience,
                &asked.audience.clone().or(parent.audience.clone())
            );
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

    /// Under a scope that holds every action and resource, a delegation is
    /// refused for its approval requirement only when it sets a higher
    /// threshold than the parent's.
    #[test]
    fn only_a_higher_threshold_refuses_a_requirement(asked in requirement(), parent in requirement()) {
        let scope = Scope::parse(&["crm:*", "mail:*", "files:*"], &ACTIONS).unwrap();
        let of = |requirement: ApprovalRequirement| Grant {
            scope: scope.clone(),
            constraints: Constraints { require_approval: Some(requirement), ..Constraints::default() },
            policy: Policy::default(),
            expires_at: 10,
            audience: None,
        };
        let raised = matches!(
            (asked.spend_over_usd(), parent.spend_over_usd()),
            (Some(a), Some(p)) if a > p
        );
        let outcome = delegated_grant(of(asked), &of(parent));
        prop_assert_eq!(outcome.is_err(), raised);
    }

    /// What a delegation adds to its requirement must be able to match
    /// under the child's grant: refused exactly when an added action is
    /// not the child's, an added pattern overlaps none of the child's, or
    /// an added threshold is at or above the child's budget (or raised);
    /// what the child inherits never refuses it.
    #[test]
    fn an_added_requirement_must_be_able_to_match(
        asked in requirement(),
        parent_req in requirement(),
        actions in prop::collection::btree_set(0..4usize, 1..4),
        resources in prop::collection::btree_set(0..12usize, 1..5),
        budget in prop::option::of(0..100u64),
    ) {
        let everything = Scope::parse(&["crm:*", "mail:*", "files:*"], &ACTIONS).unwrap();
        let parent = Grant {
            scope: everything,
            constraints: Constraints { require_approval: Some(parent_req.clone()), ..Constraints::default() },
            policy: Policy::default(),
            expires_at: 10,
            audience: None,
        };
        let actions: Vec<Action> = actions.into_iter().map(|i| Action::parse(ACTIONS[i]).unwrap()).collect();
        let patterns: Vec<ResourcePattern> = resources.into_iter().map(pattern_at).collect();
        let request = Grant {
            scope: Scope::new(patterns.clone(), actions.clone()).unwrap(),
            constraints: Constraints {
                max_spend_usd: budget.map(usd),
                require_approval: Some(asked.clone()),
                ..Constraints::default()
            },
            policy: Policy::default(),
            expires_at: 10,
            audience: None,
        };
        let parts = |p: &ResourcePattern| {
            let (ns, name) = p.as_str().split_once(':').unwrap();
            (ns.to_owned(), name.to_owned())
        };
        // A model of coverage over the names drawn (`*` every name, a
        // prefix every name extending it, a name itself): two patterns
        // overlap when some name is covered by both.
        let covers = |pattern: &str, name: &str| {
            pattern == "*"
                || pattern == name
                || pattern
                    .strip_suffix('*')
                    .is_some_and(|prefix| name.len() > prefix.len() && name.starts_with(prefix))
        };
        let overlap = |a: &ResourcePattern, b: &ResourcePattern| {
            let ((an, a_name), (bn, b_name)) = (parts(a), parts(b));
            an == bn && NAMES.iter().any(|name| covers(&a_name, name) && covers(&b_name, name))
        };
        let action_unheld = asked
            .actions()
            .iter()
            .any(|a| !parent_req.actions().contains(a) && !actions.contains(a));
        let pattern_outside = asked.resources().iter().any(|p| {
            !parent_req.resources().contains(p) && !patterns.iter().any(|g| overlap(g, p))
        });
        let (threshold, inherited) = (asked.spend_over_usd(), parent_req.spend_over_usd());
        let raised = matches!((threshold, inherited), (Some(a), Some(p)) if a > p);
        let unreachable = threshold.is_some_and(|t| {
            Some(t) != inherited && budget.map(usd).is_some_and(|b| t >= b)
        });
        let outcome = delegated_grant(request, &parent);
        prop_assert_eq!(
            outcome.is_err(),
            action_unheld || pattern_outside || raised || unreachable,
            "{:?}", outcome
        );
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

/// A selector over the arguments [`arguments`] draws.
fn selector() -> impl Strategy<Value = &'static str> {
    prop::sample::select(vec![
        ".",
        ".to",
        ".to[0]",
        ".to[-1]",
        ".to[]",
        ".amount",
        ".amount?",
        ".cc?",
        ".items[].qty",
        ".meta.kind",
        ".[\"x y\"]",
    ])
}

/// A policy statement of UCAN's language, up to three levels deep.
fn statement() -> impl Strategy<Value = Value> {
    let value = prop::sample::select(vec![
        json!(null),
        json!(5),
        json!(5.0),
        json!("a@example.com"),
        json!(["a@example.com"]),
        json!({"kind": "x"}),
    ]);
    let bound = prop::sample::select(vec![json!(0), json!(5), json!(50), json!(100.5)]);
    let pattern = prop::sample::select(vec!["*@example.com", "a*", "*", "\\*x", ""]);
    let order = prop::sample::select(vec!["<", "<=", ">", ">="]);
    let leaf = prop_oneof![
        (selector(), value.clone()).prop_map(|(s, v)| json!(["==", s, v])),
        (selector(), value).prop_map(|(s, v)| json!(["!=", s, v])),
        (order, selector(), bound).prop_map(|(o, s, b)| json!([o, s, b])),
        (selector(), pattern).prop_map(|(s, p)| json!(["like", s, p])),
    ];
    leaf.prop_recursive(3, 16, 3, |inner| {
        prop_oneof![
            inner.clone().prop_map(|s| json!(["not", s])),
            prop::collection::vec(inner.clone(), 0..3).prop_map(|v| json!(["and", v])),
            prop::collection::vec(inner.clone(), 0..3).prop_map(|v| json!(["or", v])),
            (selector(), inner.clone()).prop_map(|(s, i)| json!(["all", s, i])),
            (selector(), inner).prop_map(|(s, i)| json!(["any", s, i])),
        ]
    })
}

/// A rule: perhaps some actions, perhaps some patterns, 1–3 statements.
fn rule() -> impl Strategy<Value = Value> {
    (
        prop::option::of(prop::collection::btree_set(0..4usize, 1..3)),
        prop::option::of(prop::collection::btree_set(0..12usize, 1..3)),
        prop::collection::vec(statement(), 1..4),
    )
        .prop_map(|(actions, patterns, pol)| {
            let mut rule = json!({"pol": pol});
            if let Some(actions) = actions {
                rule["actions"] =
                    json!(actions.into_iter().map(|i| ACTIONS[i]).collect::<Vec<_>>());
            }
            if let Some(patterns) = patterns {
                let patterns: Vec<String> = patterns
                    .into_iter()
                    .map(|i| pattern_at(i).to_string())
                    .collect();
                rule["resources"] = json!(patterns);
            }
            rule
        })
}

/// The rules, `None` when they are too many or too large for a grant.
fn rules_of(rules: &[Value]) -> Option<ArgsRules> {
    if rules.is_empty() {
        Some(ArgsRules::default())
    } else {
        ArgsRules::parse(&Value::Array(rules.to_vec()), "args").ok()
    }
}

/// Arguments around what the statements look at: members present or not,
/// of the expected type or not.
fn arguments() -> impl Strategy<Value = Args> {
    let to = prop::sample::select(vec![
        None,
        Some(json!("a@example.com")),
        Some(json!(["a@example.com", "b@evil.com"])),
        Some(json!(["a@example.com"])),
        Some(json!([])),
        Some(json!(5)),
    ]);
    let amount = prop::sample::select(vec![
        None,
        Some(json!(5)),
        Some(json!(50)),
        Some(json!(150.5)),
        Some(json!("50")),
    ]);
    let cc = prop::sample::select(vec![None, Some(json!(null)), Some(json!("a@example.com"))]);
    let items = prop::sample::select(vec![
        None,
        Some(json!([{"qty": 1}, {"qty": 0}])),
        Some(json!([{"qty": 5}])),
        Some(json!([{"sku": 1}])),
    ]);
    let meta = prop::sample::select(vec![
        None,
        Some(json!({"kind": "x"})),
        Some(json!({"kind": 5})),
    ]);
    let spaced = prop::sample::select(vec![None, Some(json!(5))]);
    (to, amount, cc, items, meta, spaced).prop_map(|(to, amount, cc, items, meta, spaced)| {
        let mut args = serde_json::Map::new();
        for (name, value) in [
            ("to", to),
            ("amount", amount),
            ("cc", cc),
            ("items", items),
            ("meta", meta),
            ("x y", spaced),
        ] {
            if let Some(value) = value {
                args.insert(name.to_owned(), value);
            }
        }
        Args::from_value(Value::Object(args)).unwrap()
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    /// A child that passes narrowing never permits arguments its parent
    /// refuses, and asks for approval wherever its parent does; with or
    /// without arguments.
    #[test]
    fn narrowing_never_widens_arguments(
        parent_rules in prop::collection::vec(rule(), 0..3),
        keep in prop::collection::vec(any::<bool>(), 3),
        extra in prop::collection::vec(rule(), 0..2),
        reverse in any::<bool>(),
        parent_approval in prop::option::of(prop::collection::vec(statement(), 1..3)),
        child_approval in prop::option::of(prop::collection::vec(statement(), 1..3)),
        keep_approval in any::<bool>(),
        a in action(), r in resource(), args in arguments(), with_args in any::<bool>(),
    ) {
        let scope = Scope::parse(&["crm:*", "mail:*", "files:*"], &ACTIONS).unwrap();
        let mut child_rules: Vec<Value> = parent_rules
            .iter()
            .zip(&keep)
            .filter(|(_, k)| **k)
            .map(|(rule, _)| rule.clone())
            .chain(extra)
            .collect();
        if reverse {
            child_rules.reverse();
        }
        let requirement = |statements: &Option<Vec<Value>>| {
            statements.as_ref().map(|s| {
                ApprovalRequirement::parse(Some(&["delegate"]), None::<&[&str]>, None)
                    .unwrap()
                    .with_args(Some(Pol::parse(&Value::Array(s.clone()), "args").unwrap()))
            })
        };
        let parent_requirement = requirement(&parent_approval);
        let child_requirement = if keep_approval {
            parent_requirement.clone()
        } else {
            requirement(&child_approval)
        };
        let (Some(parent_args), Some(child_args)) = (rules_of(&parent_rules), rules_of(&child_rules)) else {
            return Ok(());
        };
        let grant = |args: ArgsRules, requirement: Option<ApprovalRequirement>| Grant {
            scope: scope.clone(),
            constraints: Constraints {
                args,
                require_approval: requirement,
                ..Constraints::default()
            },
            policy: Policy::default(),
            expires_at: 10,
            audience: None,
        };
        let parent = grant(parent_args, parent_requirement);
        let child = grant(child_args, child_requirement);
        if check_narrowing(&child, &parent).is_ok() {
            let args = with_args.then_some(&args);
            if check_args(&child.constraints.args, &a, &r, args).is_ok() {
                prop_assert!(check_args(&parent.constraints.args, &a, &r, args).is_ok());
            }
            let asks = |g: &Grant| g
                .constraints
                .require_approval
                .as_ref()
                .is_some_and(|q| q.applies_with_args(&a, &r, Usd::ZERO, args));
            if asks(&parent) {
                prop_assert!(asks(&child));
            }
        }
    }

    /// A policy's truth is the Kleene conjunction of its statements', and
    /// an undefined statement never permits.
    #[test]
    fn a_policy_permits_only_when_every_statement_is_true(
        statements in prop::collection::vec(statement(), 1..4), args in arguments(),
    ) {
        let pol = Pol::parse(&Value::Array(statements), "pol").unwrap();
        let truths: Vec<_> = pol.statements().iter().map(|s| s.evaluate(args.value())).collect();
        let all_true = truths.iter().all(|t| *t == mandate_core::Truth::True);
        prop_assert_eq!(pol.evaluate(args.value()) == mandate_core::Truth::True, all_true);
        prop_assert_eq!(pol.first_not_true(args.value()).is_none(), all_true);
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

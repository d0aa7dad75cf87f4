//! The narrowing law with arguments, as property tests: for random grants
//! (scopes, argument rules over a few selectors with every operator, and
//! approval statements), random children and random arguments — members
//! missing, of the wrong type, arrays, objects — a child that passes
//! [`check_narrowing`] never permits what its parent refuses, judged as the
//! server judges an attempt (scope, then [`check_chain_args`]); and a child
//! that drops or changes a parent's rule is refused.
//!
//! `core/tests/laws.rs` (`narrowing_never_widens_arguments`) holds the law
//! for one grant's rules over a fixed scope and arguments picked around its
//! statements; these add what the server does with a token (its scope, its
//! own rules and its ancestors'), children of a narrower scope or drawn at
//! random, arguments of any shape, a lineage of three, and the refusal of a
//! rule dropped or changed in each way.

use proptest::prelude::*;
use proptest::sample::{Index, subsequence};
use serde_json::{Map, Value, json};

use super::*;
use crate::scope::Violation;
use crate::{ApprovalRequirement, Constraints, Grant, Policy, Scope, Usd, check_narrowing};

const ACTIONS: [&str; 3] = ["send", "read", "pay"];
const PATTERNS: [&str; 6] = [
    "mail:*",
    "mail:outbox",
    "fs:*",
    "fs:/srv/*",
    "fs:/srv/reports/*",
    "bank:acct/1",
];
/// Attempts: some outside every scope, so the scope check refuses too.
const ATTEMPT_ACTIONS: [&str; 4] = ["send", "read", "pay", "delete"];
const ATTEMPT_RESOURCES: [&str; 6] = [
    "mail:outbox",
    "mail:inbox",
    "fs:/srv/reports/q3.pdf",
    "fs:/srv/x",
    "fs:/etc/shadow",
    "bank:acct/1",
];
/// Selectors over an attempt's arguments.
const SELECTORS: [&str; 16] = [
    ".",
    ".a",
    ".b",
    ".to",
    ".n",
    ".list",
    ".list[]",
    ".list[0]",
    ".list[-1]",
    ".o.x",
    ".a?",
    ".to?",
    ".list[]?",
    ".o?.x?",
    ".[\"to\"]",
    ".list[].v",
];
/// Selectors inside `all` and `any`, over one element.
const ELEMENT_SELECTORS: [&str; 4] = [".", ".v", ".x?", ".[0]"];
const STRINGS: [&str; 4] = ["a@example.com", "eve@evil.test", "é@example.com", "x"];
const NUMBERS: [f64; 4] = [1.0, 1.5, 5.0, 100.0];
const PATTERNS_LIKE: [&str; 6] = ["*", "*@example.com", "x*", "\\*", "*é*", ""];
/// The members of an attempt's arguments (`list` apart: mostly an array).
const MEMBERS: [&str; 6] = ["a", "b", "to", "n", "o", "v"];

fn number(x: f64) -> Value {
    if x.fract() == 0.0 {
        json!(x as i64)
    } else {
        json!(x)
    }
}

/// A JSON value of every type, arrays and objects of a few members.
fn value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        1 => Just(Value::Null),
        1 => any::<bool>().prop_map(Value::Bool),
        4 => prop::sample::select(&NUMBERS[..]).prop_map(number),
        4 => prop::sample::select(&STRINGS[..]).prop_map(|s| json!(s)),
    ];
    leaf.prop_recursive(2, 12, 3, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map(prop::sample::select(&MEMBERS[..]), inner, 0..3).prop_map(
                |members| Value::Object(
                    members
                        .into_iter()
                        .map(|(k, v)| (k.to_owned(), v))
                        .collect::<Map<_, _>>()
                )
            ),
        ]
    })
}

/// An attempt's arguments: an object of most of the members the
/// statements look at, any of them missing or of any type.
fn args_value() -> impl Strategy<Value = Value> {
    let list = prop_oneof![
        3 => prop::collection::vec(value(), 0..4).prop_map(Value::Array),
        1 => value(),
    ];
    (
        prop::collection::vec(prop::option::weighted(0.85, value()), MEMBERS.len()),
        prop::option::weighted(0.85, list),
    )
        .prop_map(|(values, list)| {
            let mut members: Map<String, Value> = MEMBERS
                .iter()
                .zip(values)
                .filter_map(|(k, v)| Some(((*k).to_owned(), v?)))
                .collect();
            if let Some(list) = list {
                members.insert("list".to_owned(), list);
            }
            Value::Object(members)
        })
}

/// A value a statement compares with: a scalar, or an array of a few.
fn operand() -> impl Strategy<Value = Value> {
    let scalar = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        prop::sample::select(&NUMBERS[..]).prop_map(number),
        prop::sample::select(&STRINGS[..]).prop_map(|s| json!(s)),
    ];
    prop_oneof![
        4 => scalar.clone(),
        1 => prop::collection::vec(scalar, 0..3).prop_map(Value::Array),
    ]
}

/// A statement with a selector from `selectors`, every operator drawn.
fn statement(selectors: &'static [&'static str]) -> BoxedStrategy<Value> {
    let sel = prop::sample::select(selectors);
    let leaf = prop_oneof![
        (
            prop::sample::select(&["==", "!="][..]),
            sel.clone(),
            operand()
        )
            .prop_map(|(op, s, v)| json!([op, s, v])),
        (
            prop::sample::select(&["<", "<=", ">", ">="][..]),
            sel.clone(),
            prop::sample::select(&NUMBERS[..]),
        )
            .prop_map(|(op, s, n)| json!([op, s, number(n)])),
        (sel.clone(), prop::sample::select(&PATTERNS_LIKE[..]))
            .prop_map(|(s, p)| json!(["like", s, p])),
    ];
    leaf.prop_recursive(3, 12, 3, move |inner| {
        prop_oneof![
            inner.clone().prop_map(|s| json!(["not", s])),
            prop::collection::vec(inner.clone(), 0..3).prop_map(|s| json!(["and", s])),
            prop::collection::vec(inner.clone(), 0..3).prop_map(|s| json!(["or", s])),
            (
                prop::sample::select(&["all", "any"][..]),
                prop::sample::select(&[".list", ".list[]", ".o", ".a"][..]),
                statement_over_elements(),
            )
                .prop_map(|(op, s, body)| json!([op, s, body])),
        ]
    })
    .boxed()
}

/// A statement inside `all` or `any`: over one element.
fn statement_over_elements() -> BoxedStrategy<Value> {
    let sel = prop::sample::select(&ELEMENT_SELECTORS[..]);
    prop_oneof![
        (
            prop::sample::select(&["==", "!="][..]),
            sel.clone(),
            operand()
        )
            .prop_map(|(op, s, v)| json!([op, s, v])),
        (
            prop::sample::select(&["<", ">="][..]),
            sel.clone(),
            prop::sample::select(&NUMBERS[..])
        )
            .prop_map(|(op, s, n)| json!([op, s, number(n)])),
        (sel, prop::sample::select(&PATTERNS_LIKE[..])).prop_map(|(s, p)| json!(["like", s, p])),
    ]
    .boxed()
}

/// A policy: one or two statements.
fn pol_value() -> impl Strategy<Value = Value> {
    prop::collection::vec(statement(&SELECTORS), 1..3).prop_map(Value::Array)
}

/// A rule, with or without actions and resources.
fn rule_value() -> impl Strategy<Value = Value> {
    (
        prop::option::weighted(0.3, subsequence(&ACTIONS[..], 1..=2)),
        prop::option::weighted(0.3, subsequence(&PATTERNS[..], 1..=2)),
        pol_value(),
    )
        .prop_map(|(actions, resources, pol)| {
            let mut rule = Map::new();
            if let Some(actions) = actions {
                rule.insert("actions".to_owned(), json!(actions));
            }
            if let Some(resources) = resources {
                rule.insert("resources".to_owned(), json!(resources));
            }
            rule.insert("pol".to_owned(), pol);
            Value::Object(rule)
        })
}

/// A grant as JSON parts: its scope, its rules and its approval statements.
#[derive(Debug, Clone)]
struct Side {
    resources: Vec<&'static str>,
    actions: Vec<&'static str>,
    rules: Vec<Value>,
    approval: Option<Value>,
}

fn side() -> impl Strategy<Value = Side> {
    (
        subsequence(&PATTERNS[..], 1..=4),
        subsequence(&ACTIONS[..], 1..=3),
        prop::collection::vec(rule_value(), 0..3),
        prop::option::of(pol_value()),
    )
        .prop_map(|(resources, actions, rules, approval)| Side {
            resources,
            actions,
            rules,
            approval,
        })
}

impl Side {
    /// The grant, or `None` when its rules pass a limit (4 KiB, 64
    /// statements a policy): the generators keep that rare.
    fn grant(&self) -> Option<Grant> {
        let args = if self.rules.is_empty() {
            ArgsRules::default()
        } else {
            ArgsRules::parse(&Value::Array(self.rules.clone()), "args").ok()?
        };
        Some(Grant {
            scope: Scope::parse(&self.resources, &self.actions).unwrap(),
            constraints: Constraints {
                args,
                require_approval: match &self.approval {
                    Some(pol) => Some(ApprovalRequirement::of_args(Pol::parse(pol, "pol").ok()?)),
                    None => None,
                },
                ..Constraints::default()
            },
            policy: Policy::default(),
            expires_at: 1_000,
            audience: None,
        })
    }
}

/// A child made from `parent`: a part of its scope, every one of its rules
/// and some of its own (in an order of the child's), and the parent's
/// approval statements.
fn narrowed(parent: Side) -> impl Strategy<Value = Side> {
    (
        subsequence(parent.resources.clone(), 1..=parent.resources.len()),
        subsequence(parent.actions.clone(), 1..=parent.actions.len()),
        prop::collection::vec(rule_value(), 0..3),
    )
        .prop_flat_map(move |(resources, actions, added)| {
            let mut rules = parent.rules.clone();
            rules.extend(added);
            let approval = parent.approval.clone();
            Just(rules).prop_shuffle().prop_map(move |rules| Side {
                resources: resources.clone(),
                actions: actions.clone(),
                rules,
                approval: approval.clone(),
            })
        })
}

/// A parent and a child: most made by narrowing, some drawn at random.
fn family() -> impl Strategy<Value = (Side, Side)> {
    side().prop_flat_map(|parent| {
        let child = prop_oneof![4 => narrowed(parent.clone()).boxed(), 1 => side().boxed()];
        (Just(parent), child)
    })
}

/// What the server decides for an attempt with a token of `chain` (its
/// own grant first, then its ancestors'): the scope of the token's own
/// grant, then every grant's rules.
fn permitted(chain: &[&Grant], action: &Action, resource: &Resource, args: Option<&Args>) -> bool {
    chain
        .first()
        .is_some_and(|own| own.scope.check(action, resource).is_ok())
        && check_chain_args(
            chain.iter().map(|g| &g.constraints.args),
            action,
            resource,
            args,
        )
        .is_ok()
}

fn asks_approval(grant: &Grant, action: &Action, resource: &Resource, args: Option<&Args>) -> bool {
    crate::chain_requires_approval_with_args(
        [&grant.constraints],
        action,
        resource,
        Usd::ZERO,
        args,
    )
}

/// Where an attempt is made: mostly inside the scope of the grant it is
/// judged by (where the argument rules decide), else anywhere.
#[derive(Debug, Clone)]
struct Attempt {
    inside: bool,
    action: Index,
    resource: Index,
}

fn attempt() -> impl Strategy<Value = Attempt> {
    (prop::bool::weighted(0.75), any::<Index>(), any::<Index>()).prop_map(
        |(inside, action, resource)| Attempt {
            inside,
            action,
            resource,
        },
    )
}

/// Arguments of attempts: mostly given.
fn some_args() -> impl Strategy<Value = Vec<Option<Args>>> {
    prop::collection::vec(
        prop::option::weighted(0.9, args_value())
            .prop_map(|value| value.map(|value| Args::from_value(value).unwrap())),
        4,
    )
}

impl Attempt {
    /// The attempt's action and resource, drawn from `scope` when inside.
    fn at(&self, scope: &Scope) -> (Action, Resource) {
        let all_actions: Vec<Action> = ATTEMPT_ACTIONS
            .iter()
            .map(|a| Action::parse(a).unwrap())
            .collect();
        let all_resources: Vec<Resource> = ATTEMPT_RESOURCES
            .iter()
            .map(|r| Resource::parse(r).unwrap())
            .collect();
        let covered: Vec<Resource> = all_resources
            .iter()
            .filter(|r| scope.resources().iter().any(|p| p.covers(r)))
            .cloned()
            .collect();
        let (actions, resources) = if self.inside && !covered.is_empty() {
            (scope.actions().to_vec(), covered)
        } else {
            (all_actions, all_resources)
        };
        (
            self.action.get(&actions).clone(),
            self.resource.get(&resources).clone(),
        )
    }
}

/// How a child changes one parent rule.
#[derive(Debug, Clone)]
enum Change {
    /// Leaves it out.
    Drop,
    /// Adds a statement to its policy (narrower, and still refused: a rule
    /// is kept unchanged or not at all).
    AddStatement(Value),
    /// Puts another policy in place of its own.
    ReplacePol(Value),
    /// Lists other actions, or drops its list (applies more or less).
    Actions(Option<Vec<&'static str>>),
}

fn change() -> impl Strategy<Value = Change> {
    prop_oneof![
        Just(Change::Drop),
        statement(&SELECTORS).prop_map(Change::AddStatement),
        pol_value().prop_map(Change::ReplacePol),
        prop::option::of(subsequence(&ACTIONS[..], 1..=3)).prop_map(Change::Actions),
    ]
}

fn changed(rule: &Value, change: &Change) -> Option<Value> {
    let mut rule = rule.clone();
    match change {
        Change::Drop => return None,
        Change::AddStatement(statement) => {
            rule["pol"].as_array_mut().unwrap().push(statement.clone());
        }
        Change::ReplacePol(pol) => rule["pol"] = pol.clone(),
        Change::Actions(Some(actions)) => rule["actions"] = json!(actions),
        Change::Actions(None) => {
            rule.as_object_mut().unwrap().remove("actions");
        }
    }
    Some(rule)
}

/// A root, its child and its grandchild, each narrowed from the one before.
fn lineage() -> impl Strategy<Value = [Side; 3]> {
    side().prop_flat_map(|root| {
        narrowed(root.clone()).prop_flat_map(move |child| {
            let root = root.clone();
            narrowed(child.clone())
                .prop_map(move |grandchild| [root.clone(), child.clone(), grandchild])
        })
    })
}

proptest! {
    // Each case judges 6 attempts with each of 4 arguments; the three laws
    // take about 2 s together in a debug build on a busy two-core machine.
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn a_child_that_passes_narrowing_permits_nothing_its_parent_refuses(
        (parent, child) in family(),
        attempts in prop::collection::vec(attempt(), 6),
        args in some_args(),
    ) {
        let (Some(parent), Some(child)) = (parent.grant(), child.grant()) else {
            return Err(TestCaseError::reject("rules over a limit"));
        };
        if check_narrowing(&child, &parent).is_err() {
            return Ok(());
        }
        for (attempt, args) in attempts.iter().flat_map(|a| args.iter().map(move |g| (a, g))) {
            let ((action, resource), args) = (&attempt.at(&child.scope), args.as_ref());
            // A token of the child's grant judged by its own rules (what
            // an offline verifier of the token sees) …
            if permitted(&[&child], action, resource, args) {
                prop_assert!(permitted(&[&parent], action, resource, args));
            }
            // … and as the server judges the delegated token, with its
            // ancestor's rules too: they add nothing to the rules kept.
            prop_assert_eq!(
                permitted(&[&child, &parent], action, resource, args),
                permitted(&[&child], action, resource, args),
            );
            // Where the parent asks for approval, the child asks too.
            if asks_approval(&parent, action, resource, args) {
                prop_assert!(asks_approval(&child, action, resource, args));
            }
        }
    }

    #[test]
    fn the_law_holds_down_a_chain(
        lineage in lineage(),
        attempts in prop::collection::vec(attempt(), 6),
        args in some_args(),
    ) {
        let grants: Option<Vec<Grant>> = lineage.iter().map(Side::grant).collect();
        let Some(grants) = grants else {
            return Err(TestCaseError::reject("rules over a limit"));
        };
        prop_assert_eq!(check_narrowing(&grants[1], &grants[0]), Ok(()));
        prop_assert_eq!(check_narrowing(&grants[2], &grants[1]), Ok(()));
        // The grandchild's own rules never permit what the root refuses.
        for (attempt, args) in attempts.iter().flat_map(|a| args.iter().map(move |g| (a, g))) {
            let ((action, resource), args) = (&attempt.at(&grants[2].scope), args.as_ref());
            if permitted(&[&grants[2]], action, resource, args) {
                prop_assert!(permitted(&[&grants[0]], action, resource, args));
            }
        }
    }

    #[test]
    fn a_child_that_drops_or_changes_a_parent_rule_is_refused(
        parent in side().prop_filter("a rule to change", |p| !p.rules.is_empty()),
        at in any::<Index>(),
        how in change(),
        added in prop::collection::vec(rule_value(), 0..2),
    ) {
        let i = at.index(parent.rules.len());
        let mut child = parent.clone();
        match changed(&parent.rules[i], &how) {
            Some(rule) => child.rules[i] = rule,
            None => {
                child.rules.remove(i);
            }
        }
        child.rules.extend(added);
        let (Some(parent), Some(child)) = (parent.grant(), child.grant()) else {
            return Err(TestCaseError::reject("rules over a limit"));
        };
        let rule = &parent.constraints.args.rules()[i];
        // Unless the change left the rule as it was, or the child lists
        // the same rule elsewhere, the child is refused naming the rule.
        prop_assume!(!child.constraints.args.rules().contains(rule));
        let refused = check_narrowing(&child, &parent).err();
        prop_assert!(
            refused.is_some_and(|r| r.violations.contains(&Violation::ArgsRuleDropped(i))),
            "rule {} changed by {:?} and not refused", i, how
        );
    }
}

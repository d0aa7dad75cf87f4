//! Argument rules from arbitrary input: reading policies, rules and
//! arguments from any text refuses cleanly, judging any policy that parses
//! over any arguments that parse never panics, and the narrowing law holds
//! for whatever parses — a child that passes narrowing never permits, by
//! its scope and its own rules, arguments its parent refuses, and a child
//! that does not keep a parent's rule unchanged is refused naming it.
//!
//! A target of its own rather than more of `scope`: the statements and
//! arguments are built from their own structured input, and libFuzzer's
//! coverage of the policy language would crowd out that of scope text.

#![no_main]

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use mandate_core::policy::{Args, ArgsRules, Pol, Selector, check_args, check_chain_args};
use mandate_core::scope::Violation;
use mandate_core::{
    Action, ApprovalRequirement, Constraints, Grant, Policy, Resource, Scope, Usd,
    chain_requires_approval_with_args, check_narrowing,
};
use serde_json::{Map, Value, json};

const ACTIONS: [&str; 4] = ["send", "read", "pay", "delete"];
const PATTERNS: [&str; 6] = [
    "mail:*",
    "mail:outbox",
    "fs:*",
    "fs:/srv/*",
    "fs:/srv/reports/*",
    "bank:acct/1",
];
const RESOURCES: [&str; 6] = [
    "mail:outbox",
    "mail:inbox",
    "fs:/srv/reports/q3.pdf",
    "fs:/srv/x",
    "fs:/etc/shadow",
    "bank:acct/1",
];
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
const MEMBERS: [&str; 8] = ["a", "b", "to", "n", "list", "o", "x", "v"];
const OPERATORS: [&str; 7] = ["==", "!=", "<", "<=", ">", ">=", "like"];

fn pick<'a>(table: &[&'a str], i: u8) -> &'a str {
    table[usize::from(i) % table.len()]
}

/// Values statements and arguments share, so that the fuzzer often makes
/// a statement true (`*` and `*@example.com` are `like` patterns too).
fn known(i: u8) -> Value {
    let table = [
        json!(1),
        json!(5),
        json!(1.5),
        json!(100),
        json!("a@example.com"),
        json!("eve@evil.test"),
        json!("*"),
        json!("*@example.com"),
        json!(null),
        json!(true),
        json!([1, 5]),
        json!({"x": 1}),
    ];
    table[usize::from(i) % table.len()].clone()
}

/// A JSON value.
#[derive(Arbitrary, Debug)]
enum Val {
    Known(u8),
    Null,
    Bool(bool),
    Int(i32),
    Float(f64),
    /// A number near or past ±2^53, refused in arguments and bounds.
    Big(i64),
    Str(String),
    Arr(Vec<Val>),
    Obj(Vec<(u8, Val)>),
}

impl Val {
    fn json(&self) -> Value {
        match self {
            Val::Known(i) => known(*i),
            Val::Null => Value::Null,
            Val::Bool(b) => json!(b),
            Val::Int(n) => json!(n),
            Val::Float(x) => json!(x),
            Val::Big(n) => json!(n),
            Val::Str(s) => json!(s),
            Val::Arr(items) => Value::Array(items.iter().map(Val::json).collect()),
            Val::Obj(members) => Value::Object(
                members
                    .iter()
                    .map(|(k, v)| (pick(&MEMBERS, *k).to_owned(), v.json()))
                    .collect::<Map<_, _>>(),
            ),
        }
    }
}

/// A selector: one of the table, or any text.
#[derive(Arbitrary, Debug)]
enum Sel {
    Known(u8),
    Text(String),
}

impl Sel {
    fn json(&self) -> Value {
        match self {
            Sel::Known(i) => json!(pick(&SELECTORS, *i)),
            Sel::Text(text) => json!(text),
        }
    }
}

/// A statement of every operator, and now and then not one at all.
#[derive(Arbitrary, Debug)]
enum Stmt {
    Compare(u8, Sel, Val),
    Not(Box<Stmt>),
    And(Vec<Stmt>),
    Or(Vec<Stmt>),
    All(Sel, Box<Stmt>),
    Any(Sel, Box<Stmt>),
    Other(Val),
}

impl Stmt {
    fn json(&self) -> Value {
        match self {
            Stmt::Compare(op, sel, val) => json!([pick(&OPERATORS, *op), sel.json(), val.json()]),
            Stmt::Not(s) => json!(["not", s.json()]),
            Stmt::And(s) => json!(["and", s.iter().map(Stmt::json).collect::<Vec<_>>()]),
            Stmt::Or(s) => json!(["or", s.iter().map(Stmt::json).collect::<Vec<_>>()]),
            Stmt::All(sel, s) => json!(["all", sel.json(), s.json()]),
            Stmt::Any(sel, s) => json!(["any", sel.json(), s.json()]),
            Stmt::Other(val) => val.json(),
        }
    }
}

/// A rule: its lists (distinct entries; none listed is no list) and its
/// policy (a first statement and more).
#[derive(Arbitrary, Debug)]
struct Rule {
    actions: Vec<u8>,
    resources: Vec<u8>,
    first: Stmt,
    more: Vec<Stmt>,
}

/// The distinct entries of `table` that `picks` name, in table order.
fn distinct(table: &[&'static str], picks: &[u8]) -> Vec<&'static str> {
    table
        .iter()
        .enumerate()
        .filter(|(i, _)| picks.iter().any(|p| usize::from(*p) % table.len() == *i))
        .map(|(_, entry)| *entry)
        .collect()
}

impl Rule {
    fn json(&self) -> Value {
        let mut rule = Map::new();
        let actions = distinct(&ACTIONS, &self.actions);
        if !actions.is_empty() {
            rule.insert("actions".to_owned(), json!(actions));
        }
        let resources = distinct(&PATTERNS, &self.resources);
        if !resources.is_empty() {
            rule.insert("resources".to_owned(), json!(resources));
        }
        let pol = std::iter::once(&self.first).chain(&self.more);
        rule.insert(
            "pol".to_owned(),
            Value::Array(pol.map(Stmt::json).collect()),
        );
        Value::Object(rule)
    }
}

/// A grant: a scope from the tables, rules and approval statements.
#[derive(Arbitrary, Debug)]
struct Side {
    resources: Vec<u8>,
    actions: Vec<u8>,
    rules: Vec<Rule>,
    approval: Option<Vec<Stmt>>,
}

/// How the child is made from the parent.
#[derive(Arbitrary, Debug)]
struct Derive {
    /// Keep the parent's rules and a part of its scope (else the child has
    /// only its own).
    keep: bool,
    /// Where the parent's rules go among the child's own.
    at: u8,
    /// Keep the parent's approval statements (else the child's own).
    keep_approval: bool,
}

#[derive(Arbitrary, Debug)]
struct Attempt {
    action: u8,
    resource: u8,
    args: Option<Vec<(u8, Val)>>,
}

/// One of two inputs, so that neither spends the other's bytes.
#[derive(Arbitrary, Debug)]
enum Input {
    /// Any text, read as a policy, as rules and as arguments, and judged.
    Texts {
        pol: String,
        rules: String,
        args: String,
        action: u8,
        resource: u8,
    },
    /// A parent, a child made from it (or not) and attempts (how the
    /// child is made first: what comes last gets the bytes left).
    Law {
        derive: Derive,
        attempts: Vec<Attempt>,
        parent: Side,
        child: Side,
    },
}

fn action(i: u8) -> Action {
    Action::parse(pick(&ACTIONS, i)).expect("a valid action")
}

fn resource(i: u8) -> Resource {
    Resource::parse(pick(&RESOURCES, i)).expect("a valid resource")
}

fn rules_json(rules: &[Rule]) -> Value {
    Value::Array(rules.iter().map(Rule::json).collect())
}

/// The distinct entries of `table` that `picks` name; all of them when
/// they name none.
fn entries(table: &[&'static str], picks: &[u8]) -> Vec<&'static str> {
    let chosen = distinct(table, picks);
    if chosen.is_empty() {
        table.to_vec()
    } else {
        chosen
    }
}

/// A scope: the parent's, or with `within` a part of it.
fn scope(side: &Side, within: Option<&Side>) -> (Vec<&'static str>, Vec<&'static str>) {
    let resources = entries(&PATTERNS, &side.resources);
    let actions = entries(&ACTIONS, &side.actions);
    match within {
        None => (resources, actions),
        Some(parent) => {
            let (theirs, their_actions) = scope(parent, None);
            let keep = |ours: Vec<&'static str>, theirs: Vec<&'static str>| {
                let kept: Vec<&str> = ours.into_iter().filter(|x| theirs.contains(x)).collect();
                if kept.is_empty() { theirs } else { kept }
            };
            (keep(resources, theirs), keep(actions, their_actions))
        }
    }
}

fn grant(
    (resources, actions): (Vec<&str>, Vec<&str>),
    rules: Value,
    approval: Option<&Vec<Stmt>>,
) -> Option<Grant> {
    let scope = Scope::parse(&resources, &actions).ok()?;
    let args = match &rules {
        Value::Array(items) if items.is_empty() => ArgsRules::default(),
        _ => ArgsRules::parse(&rules, "args").ok()?,
    };
    let require_approval = match approval {
        Some(statements) => {
            let pol = Value::Array(statements.iter().map(Stmt::json).collect());
            Some(ApprovalRequirement::of_args(Pol::parse(&pol, "pol").ok()?))
        }
        None => None,
    };
    Some(Grant {
        scope,
        constraints: Constraints {
            args,
            require_approval,
            ..Constraints::default()
        },
        policy: Policy::default(),
        expires_at: 1_000,
        audience: None,
    })
}

/// Judged as the server judges an attempt with a token of `chain` (its
/// own grant first): the token's scope, then every grant's rules.
fn permitted(chain: &[&Grant], action: &Action, resource: &Resource, args: Option<&Args>) -> bool {
    chain[0].scope.check(action, resource).is_ok()
        && check_chain_args(
            chain.iter().map(|g| &g.constraints.args),
            action,
            resource,
            args,
        )
        .is_ok()
}

fn asks(grant: &Grant, action: &Action, resource: &Resource, args: Option<&Args>) -> bool {
    chain_requires_approval_with_args([&grant.constraints], action, resource, Usd::ZERO, args)
}

/// Any text: refused cleanly or read, and whatever is read is judged
/// without a panic.
fn texts(pol: &str, rules: &str, args: &str, action: &Action, resource: &Resource) {
    let _ = Selector::parse(pol);
    let _ = mandate_core::policy::evaluate_json(pol.as_bytes(), args.as_bytes());
    let pol = Pol::from_json(pol.as_bytes(), "pol");
    let rules = ArgsRules::from_json(rules.as_bytes());
    let args = Args::parse(args.as_bytes());
    if let Ok(args) = &args {
        let _ = args.hash();
        if let Ok(pol) = &pol {
            let _ = pol.evaluate(args.value());
            let _ = pol.first_not_true(args.value());
        }
    }
    if let Ok(rules) = &rules {
        let _ = check_args(rules, action, resource, args.as_ref().ok());
    }
}

/// Arguments that make the parent's simplest statements true (a
/// comparison of a member by name, at the top of a policy), so that the
/// law is often judged where the parent's rules permit: random arguments
/// seldom satisfy random statements.
fn witness(parent: &Grant) -> Map<String, Value> {
    let mut members = Map::new();
    for rule in parent.constraints.args.rules() {
        for statement in rule.pol().source().as_array().into_iter().flatten() {
            let Some([Value::String(op), Value::String(selector), operand]) =
                statement.as_array().map(Vec::as_slice)
            else {
                continue;
            };
            let Some(name) = selector.strip_prefix('.') else {
                continue;
            };
            if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphabetic()) {
                continue;
            }
            let bound = operand.as_f64();
            let value = match (op.as_str(), bound) {
                ("==" | "<=" | ">=", _) => operand.clone(),
                ("<", Some(n)) => json!(n - 1.0),
                (">", Some(n)) => json!(n + 1.0),
                ("like", _) => json!(operand.as_str().unwrap_or_default().replace('*', "")),
                _ => continue,
            };
            members.insert(name.to_owned(), value);
        }
    }
    members
}

/// The narrowing law for what parses.
fn law(parent_side: &Side, child_side: &Side, derive: &Derive, attempts: &[Attempt]) {
    let parent_rules = rules_json(&parent_side.rules);
    let child_rules = if derive.keep {
        let mut own: Vec<Value> = child_side.rules.iter().map(Rule::json).collect();
        let at = usize::from(derive.at) % (own.len() + 1);
        let kept = parent_rules.as_array().cloned().unwrap_or_default();
        own.splice(at..at, kept);
        Value::Array(own)
    } else {
        rules_json(&child_side.rules)
    };
    let child_approval = if derive.keep_approval {
        parent_side.approval.as_ref()
    } else {
        child_side.approval.as_ref()
    };
    let child_scope = scope(child_side, derive.keep.then_some(parent_side));
    let (Some(parent), Some(child)) = (
        grant(
            scope(parent_side, None),
            parent_rules,
            parent_side.approval.as_ref(),
        ),
        grant(child_scope, child_rules, child_approval),
    ) else {
        return;
    };
    assert!(check_narrowing(&parent, &parent).is_ok());
    let narrows = check_narrowing(&child, &parent);
    for (i, rule) in parent.constraints.args.rules().iter().enumerate() {
        if !child.constraints.args.rules().contains(rule) {
            let refused = narrows.as_ref().expect_err("a rule was not kept");
            assert!(refused.violations.contains(&Violation::ArgsRuleDropped(i)));
        }
    }
    if narrows.is_err() {
        return;
    }
    let witness = witness(&parent);
    for attempt in attempts {
        let (action, resource) = (action(attempt.action), resource(attempt.resource));
        let mut members: Map<String, Value> = attempt
            .args
            .iter()
            .flatten()
            .map(|(k, v)| (pick(&MEMBERS, *k).to_owned(), v.json()))
            .collect();
        let own = Args::from_value(Value::Object(members.clone())).ok();
        members.extend(witness.clone());
        let witnessed = Args::from_value(Value::Object(members)).ok();
        let given = attempt.args.is_some();
        for args in [own.filter(|_| given).as_ref(), witnessed.as_ref()] {
            if permitted(&[&child], &action, &resource, args) {
                assert!(permitted(&[&parent], &action, &resource, args));
            }
            assert_eq!(
                permitted(&[&child, &parent], &action, &resource, args),
                permitted(&[&child], &action, &resource, args)
            );
            if asks(&parent, &action, &resource, args) {
                assert!(asks(&child, &action, &resource, args));
            }
        }
    }
}

fuzz_target!(|input: Input| {
    match &input {
        Input::Texts {
            pol,
            rules,
            args,
            action: a,
            resource: r,
        } => texts(pol, rules, args, &action(*a), &resource(*r)),
        Input::Law {
            parent,
            child,
            derive,
            attempts,
        } => law(parent, child, derive, attempts),
    }
});

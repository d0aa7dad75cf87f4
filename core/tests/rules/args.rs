//! The judge of `tests/vectors/args.json`: argument constraints — policy
//! statements in three-valued logic, rules and their faults, arguments
//! read strictly and hashed, attempts checked against a grant's rules,
//! narrowing, and `require_approval.args`. Compiled natively and for
//! wasm32 with the rest of `rules`.

use mandate_core::policy::{Pol, evaluate_json};
use mandate_core::{
    Action, Args, ArgsDenial, ArgsRules, Constraints, Grant, IssueError, Policy, Resource, Scope,
    Usd, check_args, check_narrowing, delegated_grant,
};
use serde::Deserialize;
use serde_json::{Value, json};

use super::read;

const ARGS: &str = include_str!("../../../tests/vectors/args.json");

#[derive(Deserialize)]
struct ArgsFile {
    evaluate: Vec<EvaluateCase>,
    rule_errors: Vec<RuleErrorCase>,
    args: Vec<ArgsCase>,
    check: CheckFile,
    narrowing: NarrowingFile,
    approval: ApprovalFile,
}

fn file() -> ArgsFile {
    read(ARGS)
}

#[derive(Deserialize)]
struct EvaluateCase {
    name: String,
    pol: Value,
    args_json: String,
    expect: String,
    #[serde(default)]
    divergence: Option<String>,
}

#[derive(Deserialize)]
struct RuleErrorCase {
    name: String,
    rules_json: String,
    path: String,
    code: String,
}

#[derive(Deserialize)]
struct ArgsCase {
    name: String,
    args_json: String,
    #[serde(default)]
    canonical: Option<String>,
    #[serde(default)]
    args_hash: Option<String>,
    #[serde(default)]
    code: Option<String>,
}

#[derive(Deserialize)]
struct CheckFile {
    rules: Value,
    cases: Vec<CheckCase>,
}

#[derive(Deserialize)]
struct CheckCase {
    name: String,
    action: String,
    resource: String,
    #[serde(default)]
    args: Option<Value>,
    expect: Value,
}

#[derive(Deserialize)]
struct NarrowingFile {
    check: Vec<NarrowingCase>,
    delegate: Vec<DelegateCase>,
}

#[derive(Deserialize)]
struct GrantJson {
    resources: Vec<String>,
    actions: Vec<String>,
    #[serde(default)]
    constraints: Constraints,
    exp: i64,
}

impl GrantJson {
    fn grant(&self) -> Grant {
        Grant {
            scope: Scope::parse(&self.resources, &self.actions).unwrap(),
            constraints: self.constraints.clone(),
            policy: Policy::default(),
            expires_at: self.exp,
            audience: None,
        }
    }
}

#[derive(Deserialize)]
struct NarrowingCase {
    name: String,
    parent: GrantJson,
    child: GrantJson,
    expect: Value,
}

#[derive(Deserialize)]
struct DelegateCase {
    name: String,
    parent: GrantJson,
    request: GrantJson,
    expect: Value,
}

#[derive(Deserialize)]
struct ApprovalFile {
    require_approval: Value,
    cases: Vec<ApprovalCase>,
    refused: Vec<ApprovalRefusedCase>,
}

#[derive(Deserialize)]
struct ApprovalCase {
    name: String,
    action: String,
    resource: String,
    #[serde(default)]
    args: Option<Value>,
    needs_approval: bool,
}

#[derive(Deserialize)]
struct ApprovalRefusedCase {
    name: String,
    require_approval: Value,
    path: String,
    code: String,
}

fn args_of(value: Option<&Value>) -> Option<Args> {
    value.map(|v| Args::parse(v.to_string().as_bytes()).unwrap())
}

/// `evaluate`: each policy's truth over its arguments.
pub fn evaluations() {
    let cases = file().evaluate;
    assert!(cases.len() >= 80, "only {} evaluation cases", cases.len());
    for case in &cases {
        let pol = serde_json::to_vec(&case.pol).unwrap();
        let got = evaluate_json(&pol, case.args_json.as_bytes()).map(|t| t.as_str());
        assert_eq!(got, Ok(case.expect.as_str()), "{}", case.name);
        if case.divergence.is_some() {
            assert_ne!(
                case.expect, "true",
                "{}: a divergence never permits",
                case.name
            );
        }
    }
}

/// `rule_errors`: rules refused with the path and code of the fault.
pub fn rule_errors() {
    for case in file().rule_errors {
        let got = match ArgsRules::from_json(case.rules_json.as_bytes()) {
            Ok(_) => ("".to_owned(), "ok".to_owned()),
            Err(e) => (e.path.clone(), e.code().to_owned()),
        };
        assert_eq!(got, (case.path.clone(), case.code.clone()), "{}", case.name);
    }
}

/// `args`: arguments read strictly, with canonical form and hash.
pub fn args_forms() {
    for case in file().args {
        match Args::parse(case.args_json.as_bytes()) {
            Ok(args) => {
                assert_eq!(case.code, None, "{}: read", case.name);
                let canonical = std::str::from_utf8(args.canonical()).unwrap();
                assert_eq!(Some(canonical), case.canonical.as_deref(), "{}", case.name);
                assert_eq!(
                    Some(args.hash().as_str()),
                    case.args_hash.as_deref(),
                    "{}",
                    case.name
                );
            }
            Err(e) => assert_eq!(Some(e.code()), case.code.as_deref(), "{}", case.name),
        }
    }
}

/// `check`: attempts judged by a grant's rules.
pub fn checks() {
    let CheckFile { rules, cases } = file().check;
    let rules = ArgsRules::from_json(rules.to_string().as_bytes()).unwrap();
    for case in cases {
        let args = args_of(case.args.as_ref());
        let got = match check_args(
            &rules,
            &Action::parse(&case.action).unwrap(),
            &Resource::parse(&case.resource).unwrap(),
            args.as_ref(),
        ) {
            Ok(()) => json!({"ok": true}),
            Err(ArgsDenial::Required { rule }) => {
                json!({"ok": false, "code": "args_required", "rule": rule})
            }
            Err(ArgsDenial::NotPermitted {
                rule,
                statement,
                truth,
            }) => json!({
                "ok": false,
                "code": "args_not_permitted",
                "rule": rule,
                "statement": statement,
                "truth": truth.as_str()
            }),
        };
        assert_eq!(got, case.expect, "{}", case.name);
    }
}

fn violations(widening: &mandate_core::Widening) -> Vec<Value> {
    widening
        .violations
        .iter()
        .map(|v| json!({"field": v.field(), "code": v.code()}))
        .collect()
}

/// `narrowing`: rules and approval statements kept by a child.
pub fn narrowing() {
    let NarrowingFile { check, delegate } = file().narrowing;
    for case in check {
        let got = match check_narrowing(&case.child.grant(), &case.parent.grant()) {
            Ok(()) => json!({"ok": true, "violations": []}),
            Err(w) => json!({"ok": false, "violations": violations(&w)}),
        };
        assert_eq!(got, case.expect, "{}", case.name);
    }
    for case in delegate {
        let got = match delegated_grant(case.request.grant(), &case.parent.grant()) {
            Ok(grant) => json!({"ok": true, "constraints": grant.constraints}),
            Err(IssueError::Widening(w)) => json!({
                "ok": false,
                "error": "scope_widening",
                "violations": violations(&w)
            }),
            Err(e) => json!({"ok": false, "error": e.code()}),
        };
        assert_eq!(got, case.expect, "{}", case.name);
    }
}

/// `approval`: when `require_approval.args` asks for approval.
pub fn approval() {
    let ApprovalFile {
        require_approval,
        cases,
        refused,
    } = file().approval;
    let constraints: Constraints =
        serde_json::from_value(json!({ "require_approval": require_approval })).unwrap();
    let requirement = constraints.require_approval.unwrap();
    for case in cases {
        let args = args_of(case.args.as_ref());
        let got = requirement.applies_with_args(
            &Action::parse(&case.action).unwrap(),
            &Resource::parse(&case.resource).unwrap(),
            Usd::ZERO,
            args.as_ref(),
        );
        assert_eq!(got, case.needs_approval, "{}", case.name);
    }
    for case in refused {
        let statements = case.require_approval["args"].to_string();
        let got = Pol::from_json(statements.as_bytes(), "require_approval.args").unwrap_err();
        assert_eq!(
            (got.path.as_str(), got.code()),
            (case.path.as_str(), case.code.as_str()),
            "{}",
            case.name
        );
        let whole = json!({ "require_approval": case.require_approval });
        let refused = serde_json::from_value::<Constraints>(whole).unwrap_err();
        assert!(
            refused.to_string().contains(&case.path),
            "{}: {refused}",
            case.name
        );
    }
}

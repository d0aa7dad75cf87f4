//! UCAN's published policy fixtures (ucan-wg/rs-ucan
//! `ucan/tests/fixtures/policy.json`), run unchanged against core's policy
//! language. The file is not in this repository, and no registry these
//! machines reach serves it, so that test is ignored unless asked for; it
//! reads the file from the path in `MANDATE_UCAN_POLICY_FIXTURES` (failing
//! when that is unset): `MANDATE_UCAN_POLICY_FIXTURES=…/policy.json cargo
//! test -p mandate-conformance --test ucan_policy -- --include-ignored`.
//!
//! Each statement of a `valid` policy must be true, and no `invalid` policy
//! may be true (we never permit what UCAN refuses). Where a `valid`
//! statement is not true for us, the difference must be one of the
//! fail-closed divergences documented in `docs/decisions.md` ("Argument
//! constraints"), recognised here by judging the statement again with
//! UCAN's two-valued reading; every difference is printed.

#![allow(
    clippy::print_stderr,
    reason = "the test reports which fixture cases differ"
)]

use mandate_core::policy::{Pol, Statement, Truth};
use serde_json::Value;

const FIXTURES: &str = "MANDATE_UCAN_POLICY_FIXTURES";

/// UCAN's reading: a comparison that cannot be made is false, and `not`
/// of false is true; an empty `or` and (in rs-ucan) an empty `any` hold.
fn ucan(statement: &Statement, args: &Value) -> bool {
    let over = |sel: &mandate_core::policy::Selector| match sel
        .select(args)
        .map(std::borrow::Cow::into_owned)
    {
        Some(Value::Array(items)) => Some(items),
        Some(Value::Object(members)) => Some(members.into_iter().map(|(_, v)| v).collect()),
        _ => None,
    };
    match statement {
        Statement::Not(inner) => !ucan(inner, args),
        Statement::Ne(sel, value) => !ucan(&Statement::Eq(sel.clone(), value.clone()), args),
        Statement::And(inner) => inner.iter().all(|s| ucan(s, args)),
        Statement::Or(inner) => inner.is_empty() || inner.iter().any(|s| ucan(s, args)),
        Statement::All(sel, inner) => {
            over(sel).is_some_and(|items| items.iter().all(|item| ucan(inner, item)))
        }
        Statement::Any(sel, inner) => over(sel)
            .is_some_and(|items| items.is_empty() || items.iter().any(|item| ucan(inner, item))),
        leaf => leaf.evaluate(args) == Truth::True,
    }
}

/// Why a valid UCAN statement is not true for us, if it is a documented
/// divergence.
fn divergence(pol: &Pol, args: &Value) -> Option<&'static str> {
    let ours = pol.evaluate(args);
    let theirs = pol.statements().iter().all(|s| ucan(s, args));
    match (ours, theirs) {
        (Truth::Undefined, true) => {
            Some("not_over_absent: what a statement cannot see is undefined")
        }
        (Truth::False, true) => Some("any_over_empty: an empty any is false"),
        _ => None,
    }
}

#[test]
#[ignore = "needs MANDATE_UCAN_POLICY_FIXTURES naming rs-ucan's policy.json"]
fn ucan_published_policy_fixtures() {
    let path = std::env::var_os(FIXTURES).unwrap_or_else(|| {
        panic!("{FIXTURES} must name UCAN's policy.json (rs-ucan ucan/tests/fixtures/policy.json)")
    });
    let text = std::fs::read_to_string(&path).unwrap();
    let fixtures: Value = serde_json::from_str(&text).unwrap();
    let mut judged = 0;
    let mut differences = Vec::new();
    for (i, scenario) in fixtures["valid"].as_array().unwrap().iter().enumerate() {
        let args = &scenario["args"];
        for (j, policy) in scenario["policies"].as_array().unwrap().iter().enumerate() {
            for (k, statement) in policy.as_array().unwrap().iter().enumerate() {
                let name = format!("valid[{i}].policies[{j}][{k}]");
                let pol = Pol::parse(&Value::Array(vec![statement.clone()]), &name)
                    .unwrap_or_else(|e| panic!("{name}: refused: {e}"));
                judged += 1;
                if pol.evaluate(args) != Truth::True {
                    let why = divergence(&pol, args)
                        .unwrap_or_else(|| panic!("{name}: {statement} is not true, undocumented"));
                    differences.push(format!("{name}: {statement}: {why}"));
                }
            }
        }
    }
    for (i, scenario) in fixtures["invalid"].as_array().unwrap().iter().enumerate() {
        let args = &scenario["args"];
        for (j, policy) in scenario["policies"].as_array().unwrap().iter().enumerate() {
            let name = format!("invalid[{i}].policies[{j}]");
            let pol = Pol::parse(policy, &name).unwrap_or_else(|e| panic!("{name}: refused: {e}"));
            judged += 1;
            assert_ne!(pol.evaluate(args), Truth::True, "{name}: {policy} permits");
        }
    }
    eprintln!(
        "UCAN policy fixtures: {judged} judged, {} differ{}",
        differences.len(),
        if differences.is_empty() { "" } else { ":" }
    );
    for difference in &differences {
        eprintln!("  {difference}");
    }
    assert!(judged >= 30, "only {judged} fixture cases");
}

#[test]
fn the_divergences_are_recognised() {
    let args: Value = serde_json::json!({"from": "x", "to": []});
    let pol = |v: Value| Pol::parse(&v, "pol").unwrap();
    assert!(divergence(&pol(serde_json::json!([["!=", ".cc", "x"]])), &args).is_some());
    assert!(divergence(&pol(serde_json::json!([["not", ["<", ".from", 1]]])), &args).is_some());
    assert!(
        divergence(
            &pol(serde_json::json!([["any", ".to", ["==", ".", 1]]])),
            &args
        )
        .is_some()
    );
    assert_eq!(
        divergence(&pol(serde_json::json!([["==", ".from", "y"]])), &args),
        None
    );
    assert_eq!(
        divergence(&pol(serde_json::json!([["==", ".cc", "y"]])), &args),
        None
    );
}

//! `approvals.json`: approval before the act (DESIGN §11). The
//! `require_approval` constraint (its forms, what it matches, over a
//! chain), its narrowing and how a delegation keeps it, the record states
//! and events of an approval, how they move an agent's counts, and the log
//! leaves of a decision.
//!
//! Every verdict here is written by hand from the rules in
//! `docs/decisions.md` ("Approvals"), not computed by core: the vectors
//! state the rules, and core (natively and as wasm32) must reach them.

use mandate_core::{AarId, AgentId, Jti, KeyId, OrgId, ProvenanceRef, Ulid};
use serde_json::{Value, json};

/// Unix milliseconds of the leaves' `at`.
const AT_MS: u64 = 1_800_000_000_123;

fn ulid(n: u8) -> Ulid {
    Ulid::new(AT_MS, [n; 10]).expect("a vector time fits a ULID")
}

/// Cases of the constraint's forms: the `require_approval` value and the
/// verdict: `ok`, the code of the value that is refused, or `malformed`
/// for what is no requirement at all (an unknown member, a wrong type).
fn requirements() -> Value {
    let case = |name: &str, value: Value, expect: &str| json!({"name": name, "require_approval": value, "expect": expect});
    let many: Vec<String> = (0..65).map(|i| format!("act{i}")).collect();
    let most: Vec<String> = (0..64).map(|i| format!("ns{i}:*")).collect();
    json!([
        case("actions_only", json!({"actions": ["pay"]}), "ok"),
        case(
            "resources_only",
            json!({"resources": ["bank:*", "files:/payroll.csv"]}),
            "ok"
        ),
        case("threshold_only", json!({"spend_over_usd": 100}), "ok"),
        case("threshold_zero", json!({"spend_over_usd": 0}), "ok"),
        case(
            "every_member",
            json!({"actions": ["pay", "send"], "resources": ["bank:*"], "spend_over_usd": 2.5}),
            "ok"
        ),
        case("the_most_patterns", json!({"resources": most}), "ok"),
        case("no_member", json!({}), "empty_approval_requirement"),
        case("an_empty_list", json!({"actions": []}), "empty_list"),
        case(
            "an_empty_list_beside_another_member",
            json!({"resources": [], "spend_over_usd": 1}),
            "empty_list"
        ),
        case(
            "too_many_actions",
            json!({"actions": many}),
            "list_too_long"
        ),
        case(
            "an_action_twice",
            json!({"actions": ["pay", "pay"]}),
            "duplicate_entry"
        ),
        case(
            "a_pattern_twice",
            json!({"resources": ["bank:*", "bank:*"]}),
            "duplicate_entry"
        ),
        case(
            "an_action_misspelt",
            json!({"actions": ["Pay"]}),
            "invalid_action"
        ),
        case(
            "a_glob",
            json!({"resources": ["bank:acc*"]}),
            "invalid_resource_pattern"
        ),
        case(
            "every_namespace",
            json!({"resources": ["*:*"]}),
            "invalid_resource_pattern"
        ),
        case(
            "a_negative_threshold",
            json!({"spend_over_usd": -1}),
            "amount_negative"
        ),
        case(
            "a_threshold_past_a_micro_dollar",
            json!({"spend_over_usd": 0.0000001}),
            "amount_too_precise"
        ),
        case(
            "an_unknown_member",
            json!({"actions": ["pay"], "reviewers": ["alice"]}),
            "malformed"
        ),
        case(
            "a_threshold_as_text",
            json!({"spend_over_usd": "100"}),
            "malformed"
        ),
        case("actions_as_text", json!({"actions": "pay"}), "malformed"),
        case("null", Value::Null, "malformed"),
    ])
}

/// Cases of `ApprovalRequirement::applies`.
fn applies() -> Value {
    let every = json!({"actions": ["pay"], "resources": ["bank:*", "files:/payroll.csv"], "spend_over_usd": 100});
    let case = |name: &str,
                requirement: &Value,
                action: &str,
                resource: &str,
                spend: Value,
                expect: bool| {
        json!({
            "name": name, "require_approval": requirement, "action": action,
            "resource": resource, "spend": spend, "expect": expect,
        })
    };
    let threshold = json!({"spend_over_usd": 100});
    let zero = json!({"spend_over_usd": 0});
    json!([
        case(
            "a_listed_action",
            &every,
            "pay",
            "crm:contacts",
            json!(0),
            true
        ),
        case(
            "an_action_not_listed",
            &every,
            "read",
            "crm:contacts",
            json!(0),
            false
        ),
        case(
            "a_resource_of_a_listed_namespace",
            &every,
            "read",
            "bank:savings",
            json!(0),
            true
        ),
        case(
            "a_namespace_that_only_starts_alike",
            &every,
            "read",
            "banking:savings",
            json!(0),
            false
        ),
        case(
            "a_listed_resource",
            &every,
            "read",
            "files:/payroll.csv",
            json!(0),
            true
        ),
        case(
            "a_resource_below_a_listed_one",
            &every,
            "read",
            "files:/payroll.csv/2027",
            json!(0),
            false
        ),
        case(
            "spend_over_the_threshold",
            &every,
            "read",
            "crm:contacts",
            json!(100.000001),
            true
        ),
        case(
            "spend_at_the_threshold",
            &every,
            "read",
            "crm:contacts",
            json!(100),
            false
        ),
        case(
            "spend_at_the_threshold_alone",
            &threshold,
            "pay",
            "bank:savings",
            json!(100),
            false
        ),
        case(
            "any_spend_over_zero",
            &zero,
            "read",
            "crm:contacts",
            json!(0.000001),
            true
        ),
        case(
            "no_spend_over_zero",
            &zero,
            "read",
            "crm:contacts",
            json!(0),
            false
        ),
        case(
            "one_member_is_enough",
            &every,
            "pay",
            "bank:savings",
            json!(1000),
            true
        ),
    ])
}

/// Cases of `chain_requires_approval`: the constraints of a chain, root
/// first.
fn chains() -> Value {
    let case =
        |name: &str, chain: Value, action: &str, resource: &str, spend: Value, expect: bool| {
            json!({
                "name": name, "chain": chain, "action": action, "resource": resource,
                "spend": spend, "expect": expect,
            })
        };
    let pay = json!({"require_approval": {"actions": ["pay"]}});
    let budget = json!({"max_spend_usd": 500, "max_actions": 10});
    let big = json!({"max_spend_usd": 500, "require_approval": {"spend_over_usd": 50}});
    json!([
        case(
            "no_token",
            json!([]),
            "pay",
            "bank:savings",
            json!(10),
            false
        ),
        case(
            "budgets_only",
            json!([budget, {}]),
            "pay",
            "bank:savings",
            json!(10),
            false
        ),
        case(
            "the_token_requires",
            json!([budget, pay]),
            "pay",
            "bank:savings",
            json!(0),
            true
        ),
        case(
            "an_ancestor_requires",
            json!([pay, budget]),
            "pay",
            "bank:savings",
            json!(0),
            true
        ),
        case(
            "the_root_requires_above_a_spend",
            json!([big, pay]),
            "read",
            "crm:contacts",
            json!(50.5),
            true
        ),
        case(
            "nobody_requires_this_attempt",
            json!([big, pay]),
            "read",
            "crm:contacts",
            json!(50),
            false
        ),
    ])
}

/// A grant of the narrowing and delegation cases, with `require_approval`
/// as its only constraint when given.
fn grant(resources: &[&str], actions: &[&str], requirement: Option<Value>, exp: i64) -> Value {
    let constraints = match requirement {
        Some(requirement) => json!({"require_approval": requirement}),
        None => json!({}),
    };
    json!({
        "resources": resources, "actions": actions, "constraints": constraints, "exp": exp,
    })
}

const RESOURCES: [&str; 3] = ["crm:*", "bank:*", "files:/payroll.csv"];
const ACTIONS: [&str; 4] = ["read", "pay", "send", "delegate"];

fn the_parents_requirement() -> Value {
    json!({"actions": ["pay"], "resources": ["bank:*"], "spend_over_usd": 100})
}

fn violation(field: &str, code: &str) -> Value {
    json!({"field": format!("constraints.require_approval{field}"), "code": code})
}

/// Cases of `check_narrowing` on approval requirements: a child grant
/// against its parent.
fn narrowing() -> Value {
    let parent = grant(&RESOURCES, &ACTIONS, Some(the_parents_requirement()), 2000);
    let child = |requirement: Option<Value>| grant(&RESOURCES, &ACTIONS, requirement, 2000);
    let ok = json!({"ok": true, "violations": []});
    let refused = |violations: Vec<Value>| json!({"ok": false, "violations": violations});
    let case = |name: &str, parent: &Value, child: Value, expect: Value| json!({"name": name, "parent": parent, "child": child, "expect": expect});
    json!([
        case("equal", &parent, parent.clone(), ok.clone()),
        case(
            "stricter_every_way",
            &parent,
            child(Some(json!({
                "actions": ["send", "pay"], "resources": ["crm:deals", "bank:*"], "spend_over_usd": 20,
            }))),
            ok.clone(),
        ),
        case(
            "a_broader_pattern_covers_the_parents",
            &grant(
                &RESOURCES,
                &ACTIONS,
                Some(json!({"resources": ["bank:savings"]})),
                2000
            ),
            child(Some(json!({"resources": ["bank:*"]}))),
            ok.clone(),
        ),
        case(
            "added_where_the_parent_has_none",
            &grant(&RESOURCES, &ACTIONS, None, 2000),
            child(Some(json!({"spend_over_usd": 0}))),
            ok.clone(),
        ),
        case(
            "a_threshold_added",
            &grant(
                &RESOURCES,
                &ACTIONS,
                Some(json!({"actions": ["pay"]})),
                2000
            ),
            child(Some(json!({"actions": ["pay"], "spend_over_usd": 1000}))),
            ok.clone(),
        ),
        case(
            "dropped",
            &parent,
            child(None),
            refused(vec![violation("", "approval_dropped")]),
        ),
        case(
            "an_action_dropped",
            &parent,
            child(Some(
                json!({"actions": ["send"], "resources": ["bank:*"], "spend_over_usd": 100})
            )),
            refused(vec![violation(".actions", "approval_action_dropped")]),
        ),
        case(
            "an_action_dropped_that_the_child_cannot_do",
            &parent,
            grant(
                &["bank:*"],
                &["read"],
                Some(json!({"resources": ["bank:*"], "spend_over_usd": 100})),
                2000
            ),
            refused(vec![violation(".actions", "approval_action_dropped")]),
        ),
        case(
            "a_pattern_no_longer_covered",
            &parent,
            child(Some(
                json!({"actions": ["pay"], "resources": ["bank:savings"], "spend_over_usd": 100})
            )),
            refused(vec![violation(
                ".resources",
                "approval_resource_not_covered"
            )]),
        ),
        case(
            "the_threshold_raised",
            &parent,
            child(Some(
                json!({"actions": ["pay"], "resources": ["bank:*"], "spend_over_usd": 100.000001})
            )),
            refused(vec![violation(
                ".spend_over_usd",
                "approval_threshold_raised"
            )]),
        ),
        case(
            "the_threshold_dropped",
            &parent,
            child(Some(json!({"actions": ["pay"], "resources": ["bank:*"]}))),
            refused(vec![violation(
                ".spend_over_usd",
                "approval_threshold_dropped"
            )]),
        ),
        case(
            "weakened_every_way",
            &parent,
            child(Some(
                json!({"actions": ["send"], "resources": ["crm:*"], "spend_over_usd": 1000})
            )),
            refused(vec![
                violation(".actions", "approval_action_dropped"),
                violation(".resources", "approval_resource_not_covered"),
                violation(".spend_over_usd", "approval_threshold_raised"),
            ]),
        ),
        case(
            "with_the_other_widenings_in_order",
            &parent,
            grant(&["crm:*", "calendar:*"], &["read"], None, 2001),
            refused(vec![
                json!({"field": "resources", "code": "resource_not_covered"}),
                violation("", "approval_dropped"),
                json!({"field": "exp", "code": "lifetime_beyond_parent"}),
            ]),
        ),
    ])
}

/// Cases of `delegated_grant`: what a delegation request gets under its
/// parent.
fn delegation() -> Value {
    let parent = grant(&RESOURCES, &ACTIONS, Some(the_parents_requirement()), 2000);
    let request =
        |requirement: Option<Value>| grant(&["bank:*"], &["read", "pay"], requirement, 1500);
    let granted = |requirement: Value| json!({"ok": true, "grant": request(Some(requirement))});
    let case = |name: &str, parent: &Value, request: Value, expect: Value| json!({"name": name, "parent": parent, "request": request, "expect": expect});
    let full: Vec<String> = (0..64).map(|i| format!("act{i}")).collect();
    json!([
        case(
            "left_out_is_inherited",
            &parent,
            request(None),
            granted(the_parents_requirement())
        ),
        case(
            "actions_added_to_the_parents",
            &parent,
            grant(
                &["bank:*"],
                &["read", "pay", "send"],
                Some(json!({"actions": ["send", "read"]})),
                1500
            ),
            json!({"ok": true, "grant": grant(
                &["bank:*"],
                &["read", "pay", "send"],
                Some(json!({"actions": ["pay", "send", "read"], "resources": ["bank:*"], "spend_over_usd": 100})),
                1500
            )}),
        ),
        case(
            "an_inherited_action_the_child_cannot_do_is_kept",
            &parent,
            grant(&["crm:*"], &["read"], None, 1500),
            json!({"ok": true, "grant": grant(&["crm:*"], &["read"], Some(the_parents_requirement()), 1500)}),
        ),
        case(
            "patterns_added_to_the_parents",
            &parent,
            grant(
                &["bank:*", "files:/payroll.csv"],
                &["read", "pay"],
                Some(json!({"resources": ["files:/payroll.csv", "bank:*"]})),
                1500
            ),
            json!({"ok": true, "grant": grant(
                &["bank:*", "files:/payroll.csv"],
                &["read", "pay"],
                Some(json!({"actions": ["pay"], "resources": ["bank:*", "files:/payroll.csv"], "spend_over_usd": 100})),
                1500
            )}),
        ),
        case(
            "a_list_restated_without_a_parent_entry_keeps_it",
            &parent,
            request(Some(
                json!({"actions": ["read"], "resources": ["bank:savings"]})
            )),
            granted(
                json!({"actions": ["pay", "read"], "resources": ["bank:*", "bank:savings"], "spend_over_usd": 100})
            ),
        ),
        case(
            "a_lower_threshold_replaces_the_parents",
            &parent,
            request(Some(json!({"spend_over_usd": 25}))),
            granted(json!({"actions": ["pay"], "resources": ["bank:*"], "spend_over_usd": 25})),
        ),
        case(
            "a_requirement_where_the_parent_has_none",
            &grant(&RESOURCES, &ACTIONS, None, 2000),
            request(Some(json!({"actions": ["pay"]}))),
            granted(json!({"actions": ["pay"]})),
        ),
        case(
            "a_threshold_where_the_parent_has_lists",
            &grant(
                &RESOURCES,
                &ACTIONS,
                Some(json!({"actions": ["pay"]})),
                2000
            ),
            request(Some(json!({"spend_over_usd": 10}))),
            granted(json!({"actions": ["pay"], "spend_over_usd": 10})),
        ),
        case(
            "a_higher_threshold_is_refused",
            &parent,
            request(Some(json!({"spend_over_usd": 500}))),
            json!({"ok": false, "error": "scope_widening", "violations": [
                violation(".spend_over_usd", "approval_threshold_raised"),
            ]}),
        ),
        case(
            "an_added_action_the_child_does_not_hold_is_refused",
            &parent,
            request(Some(json!({"actions": ["sned"]}))),
            json!({"ok": false, "error": "approval_action_not_held", "violations": []}),
        ),
        case(
            "an_added_pattern_the_child_does_not_overlap_is_refused",
            &parent,
            request(Some(json!({"resources": ["bnak:*"]}))),
            json!({"ok": false, "error": "approval_resource_outside_scope", "violations": []}),
        ),
        case(
            "an_added_threshold_at_the_inherited_budget_is_refused",
            &json!({
                "resources": RESOURCES, "actions": ACTIONS, "exp": 2000,
                "constraints": {"max_spend_usd": 50, "require_approval": the_parents_requirement()},
            }),
            request(Some(json!({"spend_over_usd": 50}))),
            json!({"ok": false, "error": "approval_threshold_unreachable", "violations": []}),
        ),
        case(
            "the_lists_overflow",
            &grant(&RESOURCES, &ACTIONS, Some(json!({"actions": full})), 2000),
            request(Some(json!({"actions": ["pay"]}))),
            json!({"ok": false, "error": "list_too_long", "violations": []}),
        ),
    ])
}

/// Cases of the rule at issue: a root grant whose approval requirement
/// could never match under its own scope and budget is refused.
fn reachable() -> Value {
    let case = |name: &str, requirement: Value, max_spend: Option<f64>, expect: Value| {
        let mut constraints = json!({"require_approval": requirement});
        if let Some(max) = max_spend {
            constraints["max_spend_usd"] = json!(max);
        }
        json!({"name": name, "grant": {
            "resources": ["mail:*", "crm:contacts"], "actions": ["send", "read"],
            "constraints": constraints, "exp": 2000,
        }, "expect": expect})
    };
    let ok = json!({"ok": true});
    let refused = |code: &str| json!({"ok": false, "error": code});
    json!([
        case(
            "every_member_can_match",
            json!({"actions": ["send"], "resources": ["mail:inbox", "crm:*"], "spend_over_usd": 99.99}),
            Some(100.0),
            ok.clone()
        ),
        case(
            "a_threshold_without_a_budget",
            json!({"spend_over_usd": 1_000_000}),
            None,
            ok.clone()
        ),
        case(
            "a_misspelt_action",
            json!({"actions": ["sned"]}),
            None,
            refused("approval_action_not_held")
        ),
        case(
            "one_action_of_two_misspelt",
            json!({"actions": ["send", "sned"]}),
            None,
            refused("approval_action_not_held")
        ),
        case(
            "a_misspelt_namespace",
            json!({"resources": ["mial:*"]}),
            None,
            refused("approval_resource_outside_scope")
        ),
        case(
            "a_resource_the_grant_does_not_cover",
            json!({"resources": ["crm:deals"]}),
            None,
            refused("approval_resource_outside_scope")
        ),
        case(
            "a_threshold_at_the_budget",
            json!({"spend_over_usd": 100}),
            Some(100.0),
            refused("approval_threshold_unreachable")
        ),
        case(
            "a_threshold_over_the_budget",
            json!({"spend_over_usd": 100.000001}),
            Some(100.0),
            refused("approval_threshold_unreachable")
        ),
    ])
}

/// A record state as the vectors write it: its stored parts.
fn state(name: &str) -> Value {
    match name {
        "awaiting_approval" | "pending" => json!({"status": name}),
        "completed" => json!({"status": "completed", "result": "success"}),
        "rated" => json!({"status": "completed", "result": "success", "rating": "approved"}),
        reason => json!({"status": "denied", "reason": reason}),
    }
}

/// Cases of `RecordEvent::authorize` and `RecordEvent::record_action`
/// followed by the transition from no record: the state an attempt
/// creates.
fn attempts() -> Value {
    let case = |path: &str, deny_reason: Option<&str>, needs_approval: bool, expect: &str| {
        json!({
            "path": path, "deny_reason": deny_reason, "needs_approval": needs_approval,
            "expect": state(expect),
        })
    };
    json!([
        case("authorize", None, false, "pending"),
        case("authorize", None, true, "awaiting_approval"),
        case(
            "authorize",
            Some("budget_max_actions"),
            false,
            "budget_max_actions"
        ),
        case(
            "authorize",
            Some("budget_max_actions"),
            true,
            "budget_max_actions"
        ),
        case("record_action", None, false, "completed"),
        case("record_action", None, true, "approval_required"),
        case(
            "record_action",
            Some("resource_not_permitted"),
            false,
            "resource_not_permitted"
        ),
        case(
            "record_action",
            Some("resource_not_permitted"),
            true,
            "resource_not_permitted"
        ),
    ])
}

/// The events of the transition cases.
fn events() -> Vec<(&'static str, Value)> {
    vec![
        (
            "authorize",
            json!({"event": "authorize", "deny_reason": null}),
        ),
        (
            "authorize_refused",
            json!({"event": "authorize", "deny_reason": "action_not_permitted"}),
        ),
        ("request_approval", json!({"event": "request_approval"})),
        (
            "record_action",
            json!({"event": "record_action", "deny_reason": null, "result": "success"}),
        ),
        (
            "record_action_refused",
            json!({"event": "record_action", "deny_reason": "approval_required", "result": "success"}),
        ),
        ("approve", json!({"event": "approve"})),
        ("deny_approval", json!({"event": "deny_approval"})),
        ("expire_approval", json!({"event": "expire_approval"})),
        (
            "complete",
            json!({"event": "complete", "result": "success"}),
        ),
        ("rate", json!({"event": "rate", "rating": "approved"})),
    ]
}

/// The lifecycle, stated once more by hand: the state after `event`, or
/// the error's code.
fn lifecycle(before: Option<&str>, event: &str) -> Result<&'static str, &'static str> {
    let Some(before) = before else {
        return match event {
            "authorize" => Ok("pending"),
            "authorize_refused" => Ok("action_not_permitted"),
            "request_approval" => Ok("awaiting_approval"),
            "record_action" => Ok("completed"),
            "record_action_refused" => Ok("approval_required"),
            _ => Err("record_not_found"),
        };
    };
    match (before, event) {
        (
            _,
            "authorize"
            | "authorize_refused"
            | "request_approval"
            | "record_action"
            | "record_action_refused",
        ) => Err("record_exists"),
        ("awaiting_approval", "approve") => Ok("pending"),
        ("awaiting_approval", "deny_approval") => Ok("approval_denied"),
        ("awaiting_approval", "expire_approval") => Ok("approval_expired"),
        (_, "approve" | "deny_approval" | "expire_approval") => Err("not_awaiting_approval"),
        ("awaiting_approval", "complete") => Err("approval_pending"),
        ("pending", "complete") => Ok("completed"),
        ("completed" | "rated", "complete") => Err("already_completed"),
        (_, "complete") => Err("not_completable"),
        ("completed", "rate") => Ok("rated"),
        ("rated", "rate") => Err("already_rated"),
        (_, _) => Err("not_ratable"),
    }
}

/// Every state an approval can leave a record in, and those around them.
const STATES: [&str; 7] = [
    "awaiting_approval",
    "pending",
    "completed",
    "rated",
    "approval_denied",
    "approval_expired",
    "action_not_permitted",
];

/// Cases of `transition` for every state (and none) and every event.
fn transitions() -> Value {
    let mut cases = Vec::new();
    for before in std::iter::once(None).chain(STATES.iter().copied().map(Some)) {
        for (name, event) in events() {
            let expect = match lifecycle(before, name) {
                Ok(after) => json!({"state": state(after)}),
                Err(code) => json!({"error": code}),
            };
            cases.push(json!({
                "before": before.map(state), "event": event, "expect": expect,
            }));
        }
    }
    Value::Array(cases)
}

/// How a record counts as a new one, by the rules of `reputation`.
fn counts_as(name: &str) -> &'static str {
    match name {
        "awaiting_approval" | "pending" => "pending",
        "completed" | "rated" => "successes",
        "approval_denied" | "approval_expired" => "denied_requests",
        _ => "failures",
    }
}

/// Cases of `CountsChange::of` along the paths of an approval.
fn counts() -> Value {
    let pairs: [(Option<&str>, &str); 8] = [
        (None, "awaiting_approval"),
        (Some("awaiting_approval"), "pending"),
        (Some("awaiting_approval"), "approval_denied"),
        (Some("awaiting_approval"), "approval_expired"),
        (Some("pending"), "completed"),
        (None, "approval_required"),
        (None, "approval_denied"),
        (Some("completed"), "rated"),
    ];
    let cases: Vec<Value> = pairs
        .into_iter()
        .map(|(before, after)| {
            let mut change = json!({
                "successes": 0, "failures": 0, "pending": 0, "denied_requests": 0,
                "approved": 0, "flagged": 0, "rejected": 0,
            });
            match before.map(counts_as) {
                None => change[counts_as(after)] = json!(1),
                Some("pending") => {
                    change[counts_as(after)] = json!(1);
                    let pending = change["pending"].as_i64().expect("a count") - 1;
                    change["pending"] = json!(pending);
                }
                Some(_) => {
                    assert_eq!(after, "rated", "a settled record counts only its rating");
                    change["approved"] = json!(1);
                }
            }
            // Only `approval_required` is made by record/action (acting
            // without the approval a grant requires); the rest by authorize.
            let origin = if after == "approval_required" {
                "record_action"
            } else {
                "authorize"
            };
            json!({
                "origin": origin, "before": before.map(state), "after": state(after),
                "expect": change,
            })
        })
        .collect();
    Value::Array(cases)
}

/// Cases of `LogEntry::from_leaf` for the leaves of approvals: the leaf's
/// text, and `ok` or the code it is refused with.
fn leaves() -> Value {
    let org = OrgId::new(ulid(1));
    let aar = AarId::new(ulid(2));
    let key = KeyId::new(ulid(3));
    let jth = Jti::root(ulid(4)).hash();
    let provenance = ProvenanceRef::new(ulid(5));
    let agent = AgentId::parse("payer").expect("a valid agent id");
    let decided = |members: &str| {
        format!(
            r#"{{"aar_id":"{aar}","at":{AT_MS},{members}"kind":"approval.decided",{{note}}"org":"{org}","v":1}}"#
        )
    };
    let with_note = |members: &str, note: &str| decided(members).replace("{note}", note);
    let created = |status: &str, more: &str| {
        format!(
            r#"{{"aar_id":"{aar}","action":"pay","agent_id":"{agent}","at":{AT_MS},"credential":"token",{more}"jth":"{jth}","kind":"record.created","org":"{org}","provenance_ref":"{provenance}","resource":"bank:savings","spend_micros":250000000,"status":"{status}","v":1}}"#
        )
    };
    let case = |name: &str, leaf: String, expect: &str| json!({"name": name, "leaf": leaf, "expect": expect});
    let by = format!(r#""by":"{key}","#);
    json!([
        case(
            "approved",
            with_note(
                &format!(r#"{by}"decision":"approved","#),
                r#""note":"fine for \"Q3\"\n","#
            ),
            "ok"
        ),
        case(
            "denied_without_a_note",
            with_note(&format!(r#"{by}"decision":"denied","#), ""),
            "ok"
        ),
        case("expired", with_note(r#""decision":"expired","#, ""), "ok"),
        case(
            "approved_by_nobody",
            with_note(r#""decision":"approved","#, ""),
            "leaf_malformed"
        ),
        case(
            "expired_by_someone",
            with_note(&format!(r#"{by}"decision":"expired","#), ""),
            "leaf_malformed"
        ),
        case(
            "expired_with_a_note",
            with_note(r#""decision":"expired","#, r#""note":"too late","#),
            "leaf_malformed"
        ),
        case(
            "a_decision_as_asked",
            with_note(&format!(r#"{by}"decision":"approve","#), ""),
            "leaf_malformed"
        ),
        case(
            "a_note_with_a_bell",
            with_note(
                &format!(r#"{by}"decision":"denied","#),
                r#""note":"\u0007","#
            ),
            "leaf_malformed"
        ),
        case(
            "an_unknown_member",
            with_note(&format!(r#"{by}"decision":"denied","expires_at":1,"#), ""),
            "leaf_malformed"
        ),
        case(
            "members_out_of_order",
            with_note(&format!(r#""decision":"denied",{by}"#), ""),
            "leaf_not_canonical"
        ),
        case(
            "created_awaiting_approval",
            created("awaiting_approval", ""),
            "ok"
        ),
        case(
            "created_awaiting_with_a_reason",
            created("awaiting_approval", r#""deny_reason":"approval_required","#),
            "leaf_malformed"
        ),
        case(
            "created_refused_for_approval",
            created("denied", r#""deny_reason":"approval_required","#),
            "ok"
        ),
    ])
}

/// The approvals vectors.
pub(crate) fn approvals_vectors() -> Value {
    json!({
        "description": "Approval before the act (DESIGN section 11; docs/decisions.md, \"Approvals\"). `requirements`: read `require_approval` (a member of svc_constraints) and expect `ok`, the code of the refused value, or `malformed` (an unknown member, a wrong type). `applies`: whether the requirement matches an attempt of `action` on `resource` spending `spend` USD (any member: a listed action, a pattern covering the resource, spend strictly over `spend_over_usd`). `chains`: whether any token of a chain (its constraints, root first) requires approval for the attempt. `narrowing`: check `child` against `parent` (grants as in scope.json) and expect ok and the violations in order. `delegation`: the grant a delegation `request` gets under `parent` (a requirement left out is inherited; its lists are added to the parent's, a threshold it sets replaces the parent's and is refused when higher; what the request adds must be able to match under the child's grant: an action it holds, a pattern overlapping one of its patterns, a threshold below its max_spend_usd — what the child inherits is not judged), or the error code and violations. `reachable`: issue a root `grant` and expect ok, or the error code when its `require_approval` could never match (an action the grant does not hold, a pattern no granted pattern overlaps, `spend_over_usd` at or above `max_spend_usd`). `attempts`: the record an authorize or record/action creates, allowed (`deny_reason` null) or not, needing approval or not. `transitions`: the state after `event` from `before` (null: no record yet; a state is its stored parts), or the error code. `counts`: how an agent's counts move along an approval's paths, for a record made by `origin` (authorize or record_action). `leaves`: read `leaf` (its text) as a record log entry and expect `ok` or the error code.",
        "generator": "cargo xtask vectors",
        "requirements": requirements(),
        "applies": applies(),
        "chains": chains(),
        "narrowing": narrowing(),
        "delegation": delegation(),
        "reachable": reachable(),
        "attempts": attempts(),
        "transitions": transitions(),
        "counts": counts(),
        "leaves": leaves(),
    })
}

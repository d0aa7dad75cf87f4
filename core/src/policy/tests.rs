use serde_json::{Value, json};

use super::*;
use crate::Usd;
use crate::scope::ScopeError;
use crate::{Constraints, Grant, Policy, Scope, check_narrowing, delegated_grant};

fn pol(value: Value) -> Pol {
    Pol::parse(&value, "pol").unwrap()
}

fn args(value: Value) -> Args {
    Args::from_value(value).unwrap()
}

fn truth(p: Value, a: Value) -> Truth {
    pol(p).evaluate(&a)
}

fn rules(value: Value) -> ArgsRules {
    ArgsRules::parse(&value, "args").unwrap()
}

fn act(text: &str) -> Action {
    Action::parse(text).unwrap()
}

fn res(text: &str) -> Resource {
    Resource::parse(text).unwrap()
}

fn err(value: Value) -> PolicyError {
    ArgsRules::parse(&value, "args").unwrap_err()
}

#[test]
fn kleene_tables() {
    use Truth::{False as F, True as T, Undefined as U};
    assert_eq!(Truth::all([]), T);
    assert_eq!(Truth::any([]), F);
    for (a, b, and, or) in [
        (T, T, T, T),
        (T, F, F, T),
        (T, U, U, T),
        (F, F, F, F),
        (F, U, F, U),
        (U, U, U, U),
    ] {
        assert_eq!(Truth::all([a, b]), and, "{a:?} and {b:?}");
        assert_eq!(Truth::all([b, a]), and, "{b:?} and {a:?}");
        assert_eq!(Truth::any([a, b]), or, "{a:?} or {b:?}");
        assert_eq!(Truth::any([b, a]), or, "{b:?} or {a:?}");
    }
    assert_eq!(T.not(), F);
    assert_eq!(F.not(), T);
    assert_eq!(U.not(), U);
}

#[test]
fn absent_fields_are_undefined_and_never_permit() {
    let a = json!({"from": "alice@example.com"});
    // UCAN would say true for both (a failed selector is false, negated).
    assert_eq!(
        truth(json!([["not", ["==", ".to", "x"]]]), a.clone()),
        Truth::Undefined
    );
    assert_eq!(
        truth(json!([["!=", ".to", "x"]]), a.clone()),
        Truth::Undefined
    );
    assert_eq!(truth(json!([["==", ".to?", null]]), a.clone()), Truth::True);
    assert_eq!(truth(json!([["!=", ".to?", "x"]]), a.clone()), Truth::True);
    assert_eq!(
        truth(json!([["<", ".from", 3]]), a.clone()),
        Truth::Undefined
    );
    assert_eq!(
        truth(json!([["like", ".n", "*"]]), json!({"n": 5})),
        Truth::Undefined
    );
    assert_eq!(
        truth(json!([["all", ".from", ["==", ".", 1]]]), a.clone()),
        Truth::Undefined
    );
    assert_eq!(
        truth(json!([["any", ".to", ["==", ".", 1]]]), a.clone()),
        Truth::Undefined
    );
    assert_eq!(
        truth(
            json!([[
                "or",
                [["==", ".to", "x"], ["==", ".from", "alice@example.com"]]
            ]]),
            a.clone()
        ),
        Truth::True
    );
    assert_eq!(
        truth(
            json!([["and", [["==", ".to", "x"], ["==", ".from", "bob"]]]]),
            a
        ),
        Truth::False
    );
}

#[test]
fn numbers_compare_by_value() {
    let a = args(json!({"n": 1, "f": 1.5}));
    for statement in [
        json!(["==", ".n", 1]),
        json!(["==", ".n", 1.0]),
        json!(["==", ".f", 1.5]),
        json!(["<", ".f", 2]),
        json!([">=", ".n", 1.0]),
        json!(["==", ".", {"f": 1.5, "n": 1.0}]),
    ] {
        assert_eq!(
            pol(json!([statement])).evaluate(a.value()),
            Truth::True,
            "{statement}"
        );
    }
    let parsed = Args::parse(br#"{"n": 1e0, "m": 100E-2}"#).unwrap();
    assert_eq!(
        pol(json!([["==", ".n", 1]])).evaluate(parsed.value()),
        Truth::True
    );
    assert_eq!(
        pol(json!([["==", ".m", 1]])).evaluate(parsed.value()),
        Truth::True
    );
    assert_eq!(parsed.canonical(), br#"{"m":1,"n":1}"#);
}

#[test]
fn args_are_read_strictly() {
    assert_eq!(
        Args::parse(br#"{"a": {"b": 1, "b": 2}}"#),
        Err(ArgsError::DuplicateMember)
    );
    assert_eq!(
        Args::parse(br#"{"a": 1, "a": 1}"#),
        Err(ArgsError::DuplicateMember)
    );
    assert_eq!(
        Args::parse(br#"{"a": [{"x": 1, "x": 1}]}"#),
        Err(ArgsError::DuplicateMember)
    );
    assert_eq!(
        Args::parse(br#"{"n": 9007199254740992}"#),
        Err(ArgsError::UnsafeNumber)
    );
    assert_eq!(
        Args::parse(br#"{"n": -9007199254740992}"#),
        Err(ArgsError::UnsafeNumber)
    );
    assert_eq!(
        Args::parse(br#"{"n": 1e300}"#),
        Err(ArgsError::UnsafeNumber)
    );
    assert!(Args::parse(br#"{"n": 9007199254740991, "m": -9007199254740991}"#).is_ok());
    assert_eq!(Args::parse(b"[1]"), Err(ArgsError::NotAnObject));
    assert_eq!(Args::parse(b"{"), Err(ArgsError::Malformed));
    assert_eq!(
        Args::from_value(json!({"n": 18_446_744_073_709_551_615u64})),
        Err(ArgsError::UnsafeNumber)
    );
    let big = "x".repeat(MAX_ARGS_BYTES - 8);
    assert!(Args::from_value(json!({"a": big})).is_ok());
    let big = "x".repeat(MAX_ARGS_BYTES - 7);
    assert_eq!(
        Args::from_value(json!({"a": big})),
        Err(ArgsError::TooLarge)
    );
    // Serde reads args strictly too.
    assert!(serde_json::from_str::<Args>(r#"{"a":1,"a":2}"#).is_err());
}

#[test]
fn args_hash_is_of_the_canonical_form() {
    let a = Args::parse(br#"{ "b": [1.0, "\u00e9"], "a": {"z": null, "y": true} }"#).unwrap();
    let expected = serde_jcs::to_vec(a.value()).unwrap();
    assert_eq!(a.canonical(), expected.as_slice());
    assert_eq!(
        a.canonical(),
        "{\"a\":{\"y\":true,\"z\":null},\"b\":[1,\"é\"]}".as_bytes()
    );
    let digest: [u8; 32] = Sha256::digest(&expected).into();
    assert_eq!(a.hash(), ArgsHash::from_digest(&digest));
    assert!(a.hash().as_str().starts_with("sha256:"));
}

#[test]
fn faults_name_their_path() {
    let cases = [
        (
            json!([{"pol": [["==", ".a", 1], ["~=", ".a", 1]]}]),
            "args[0].pol[1][0]",
            "unknown_operator",
        ),
        (
            json!([{"pol": [["==", ".a", 1]]}, {"pol": [["==", ".a", 1]]}, {"pol": [["==", "a", 1]]}]),
            "args[2].pol[0][1]",
            "malformed_selector",
        ),
        (
            json!([{"pol": [["<", ".a", "1"]]}]),
            "args[0].pol[0][2]",
            "not_a_number",
        ),
        (
            json!([{"pol": [["like", ".a", "a\\b"]]}]),
            "args[0].pol[0][2]",
            "malformed_pattern",
        ),
        (
            json!([{"pol": [["like", ".a", 1]]}]),
            "args[0].pol[0][2]",
            "malformed_pattern",
        ),
        (
            json!([{"pol": [["==", ".a"]]}]),
            "args[0].pol[0]",
            "malformed_statement",
        ),
        (
            json!([{"pol": ["=="]}]),
            "args[0].pol[0]",
            "malformed_statement",
        ),
        (
            json!([{"pol": [[1, ".a", 1]]}]),
            "args[0].pol[0][0]",
            "malformed_statement",
        ),
        (
            json!([{"pol": [["and", [["==", ".a", 1], ["xor", ".a", 1]]]]}]),
            "args[0].pol[0][1][1][0]",
            "unknown_operator",
        ),
        (
            json!([{"pol": [["and", ["==", ".a", 1]]]}]),
            "args[0].pol[0][1][0]",
            "malformed_statement",
        ),
        (
            json!([{"pol": [["not", ["any", ".a", ["==", ".b?", 1]]]]}]),
            "",
            "",
        ),
        (json!([{"pol": []}]), "args[0].pol", "empty_list"),
        (
            json!([{"pol": [["==", ".a", 1]], "extra": 1}]),
            "args[0].extra",
            "malformed_rule",
        ),
        (
            json!([{"actions": ["read"]}]),
            "args[0].pol",
            "malformed_rule",
        ),
        (
            json!([{"actions": [], "pol": [["==", ".a", 1]]}]),
            "args[0].actions",
            "empty_list",
        ),
        (
            json!([{"actions": ["Read"], "pol": [["==", ".a", 1]]}]),
            "args[0].actions[0]",
            "invalid_rule_list",
        ),
        (
            json!([{"resources": ["crm:*", "crm:*"], "pol": [["==", ".a", 1]]}]),
            "args[0].resources[1]",
            "invalid_rule_list",
        ),
        (json!([]), "args", "empty_list"),
        (json!({}), "args", "malformed_rule"),
        (
            json!([{"pol": [["==", ".a", 9_007_199_254_740_992u64]]}]),
            "args",
            "unsafe_number",
        ),
    ];
    for (value, path, code) in cases {
        match ArgsRules::parse(&value, "args") {
            Ok(_) => assert_eq!(path, "", "{value} parsed"),
            Err(e) => {
                assert_eq!((e.path.as_str(), e.code()), (path, code), "{value}");
            }
        }
    }
}

/// `["not", ["not", … ["==", ".a", 1]]]` with `levels` statements in all.
fn nested(levels: usize) -> Value {
    let mut statement = json!(["==", ".a", 1]);
    for _ in 1..levels {
        statement = json!(["not", statement]);
    }
    statement
}

#[test]
fn limits() {
    assert!(Pol::parse(&json!([nested(16)]), "pol").is_ok());
    let e = Pol::parse(&json!([nested(17)]), "pol").unwrap_err();
    assert_eq!(e.code(), "policy_too_deep");
    assert_eq!(e.path, format!("pol[0]{}", "[1]".repeat(16)));

    let many: Vec<Value> = (0..64).map(|_| json!(["==", ".a", 1])).collect();
    assert!(Pol::parse(&Value::Array(many.clone()), "pol").is_ok());
    let mut more = many;
    more.push(json!(["==", ".a", 1]));
    let e = Pol::parse(&Value::Array(more), "pol").unwrap_err();
    assert_eq!(
        (e.code(), e.path.as_str()),
        ("too_many_statements", "pol[64]")
    );
    // Nested statements count.
    let inner: Vec<Value> = (0..63).map(|_| json!(["==", ".a", 1])).collect();
    let e = Pol::parse(&json!([["and", inner], ["==", ".a", 1]]), "pol").unwrap_err();
    assert_eq!(
        (e.code(), e.path.as_str()),
        ("too_many_statements", "pol[1]")
    );

    let rule = json!({"pol": [["==", ".a", 1]]});
    let rules32 = Value::Array(vec![rule.clone(); 32]);
    assert!(ArgsRules::parse(&rules32, "args").is_ok());
    let rules33 = Value::Array(vec![rule; 33]);
    assert_eq!(err(rules33).code(), "too_many_rules");

    let long = "x".repeat(4100);
    let e = err(json!([{"pol": [["==", ".a", long]]}]));
    assert_eq!((e.code(), e.path.as_str()), ("rules_too_large", "args"));
    // The approval requirement's statements count toward the same 4 KiB.
    let half = "x".repeat(2500);
    let text = format!(
        r#"{{"args":[{{"pol":[["==",".a","{half}"]]}}],"require_approval":{{"args":[["==",".b","{half}"]]}}}}"#
    );
    let e = serde_json::from_str::<Constraints>(&text).unwrap_err();
    assert!(e.to_string().contains("over 4 KiB"), "{e}");
}

#[test]
fn rules_and_policies_are_read_strictly() {
    let e = ArgsRules::from_json(br#"[{"pol": [["==", ".a", {"x": 1, "x": 2}]]}]"#).unwrap_err();
    assert_eq!((e.code(), e.path.as_str()), ("duplicate_member", "args"));
    let e = ArgsRules::from_json(br#"[{"pol": [["==", ".a", 1]], "pol": []}]"#).unwrap_err();
    assert_eq!(e.code(), "duplicate_member");
    let text = r#"{"args":[{"pol":[["==",".a",1]],"pol":[["==",".a",2]]}]}"#;
    assert!(serde_json::from_str::<Constraints>(text).is_err());
    let text = r#"{"args":[{"pol":[["==",".a",1.0]]}]}"#;
    let parsed: Constraints = serde_json::from_str(text).unwrap();
    assert_eq!(serde_json::to_string(&parsed).unwrap(), text);
    let text = r#"{"require_approval":{"args":[["~",".a",1]]}}"#;
    let e = serde_json::from_str::<Constraints>(text).unwrap_err();
    assert!(e.to_string().contains("require_approval.args[0][0]"), "{e}");
}

#[test]
fn rules_apply_by_action_and_resource() {
    let r = rules(json!([
        {"actions": ["send"], "resources": ["mail:*"], "pol": [["like", ".to", "*@example.com"]]},
        {"actions": ["pay"], "pol": [["<=", ".amount", 100]]},
        {"resources": ["files:reports"], "pol": [["like", ".path", "/srv/reports/*"]]}
    ]));
    let ok = |a: &str, r_: &str, v: Option<Value>| {
        let v = v.map(args);
        check_args(&r, &act(a), &res(r_), v.as_ref())
    };
    assert_eq!(
        ok("send", "mail:out", Some(json!({"to": "bob@example.com"}))),
        Ok(())
    );
    assert_eq!(
        ok("send", "mail:out", Some(json!({"to": "bob@evil.com"}))),
        Err(ArgsDenial::NotPermitted {
            rule: 0,
            statement: 0,
            truth: Truth::False
        })
    );
    assert_eq!(
        ok("send", "mail:out", Some(json!({"cc": "bob@example.com"}))),
        Err(ArgsDenial::NotPermitted {
            rule: 0,
            statement: 0,
            truth: Truth::Undefined
        })
    );
    assert_eq!(
        ok("send", "mail:out", None),
        Err(ArgsDenial::Required { rule: 0 })
    );
    assert_eq!(ok("send", "crm:x", None), Ok(()));
    assert_eq!(ok("pay", "crm:x", Some(json!({"amount": 100}))), Ok(()));
    assert_eq!(
        ok("pay", "crm:x", Some(json!({"amount": 100.5})))
            .unwrap_err()
            .code(),
        "args_not_permitted"
    );
    assert_eq!(
        ok("pay", "crm:x", Some(json!({"amount": "1"})))
            .unwrap_err()
            .code(),
        "args_not_permitted"
    );
    assert_eq!(
        ok("pay", "crm:x", None).unwrap_err().code(),
        "args_required"
    );
    assert_eq!(
        ok(
            "read",
            "files:reports",
            Some(json!({"path": "/srv/reports/q3.pdf"}))
        ),
        Ok(())
    );
    assert_eq!(
        ok(
            "read",
            "files:reports",
            Some(json!({"path": "/etc/passwd"}))
        ),
        Err(ArgsDenial::NotPermitted {
            rule: 2,
            statement: 0,
            truth: Truth::False
        })
    );
    assert_eq!(ok("read", "files:other", None), Ok(()));
    assert_eq!(
        check_args(&ArgsRules::default(), &act("pay"), &res("crm:x"), None),
        Ok(())
    );
}

#[test]
fn recipients_any_versus_all() {
    let any = pol(json!([["any", ".to", ["like", ".", "*@example.com"]]]));
    let all = pol(json!([["all", ".to", ["like", ".", "*@example.com"]]]));
    let mixed = json!({"to": ["bob@example.com", "eve@evil.com"]});
    assert_eq!(any.evaluate(&mixed), Truth::True);
    assert_eq!(all.evaluate(&mixed), Truth::False);
    let empty = json!({"to": []});
    assert_eq!(any.evaluate(&empty), Truth::False);
    assert_eq!(all.evaluate(&empty), Truth::True);
    let odd = json!({"to": ["bob@example.com", 7]});
    assert_eq!(all.evaluate(&odd), Truth::Undefined);
    assert_eq!(any.evaluate(&odd), Truth::True);
    let single = json!({"to": "bob@example.com"});
    assert_eq!(all.evaluate(&single), Truth::Undefined);
}

fn grant(args_rules: Option<Value>) -> Grant {
    Grant {
        scope: Scope::parse(&["mail:*"], &["send", "delegate"]).unwrap(),
        constraints: Constraints {
            args: args_rules.map(rules).unwrap_or_default(),
            ..Constraints::default()
        },
        policy: Policy::default(),
        expires_at: 1_000,
        audience: None,
    }
}

#[test]
fn narrowing_keeps_every_rule() {
    let parent = grant(Some(json!([
        {"pol": [["like", ".to", "*@example.com"]]},
        {"actions": ["send"], "pol": [["<", ".n", 5]]}
    ])));
    // Inherited when the request leaves rules out.
    let child = delegated_grant(grant(None), &parent).unwrap();
    assert_eq!(child.constraints.args, parent.constraints.args);
    // Kept and added to, in any order; 5 and 5.0 are the same rule.
    let more = grant(Some(json!([
        {"actions": ["send"], "pol": [["<", ".n", 5.0]]},
        {"pol": [["like", ".to", "*@example.com"]]},
        {"pol": [["!=", ".bcc?", null]]}
    ])));
    assert_eq!(check_narrowing(&more, &parent), Ok(()));
    // Dropped or changed.
    let changed = grant(Some(json!([
        {"pol": [["like", ".to", "*@example.com"]]},
        {"actions": ["send"], "pol": [["<", ".n", 6]]}
    ])));
    let e = check_narrowing(&changed, &parent).unwrap_err();
    assert_eq!(e.violations, vec![Violation::ArgsRuleDropped(1)]);
    assert_eq!(e.violations[0].code(), "args_rule_dropped");
    assert_eq!(e.violations[0].field(), "constraints.args");
    let e = delegated_grant(grant(Some(json!([{"pol": [["==", ".a", 1]]}]))), &parent).unwrap_err();
    assert_eq!(e.code(), "scope_widening");
    // The child's own rules carry their parent's unchanged.
    assert_eq!(check_narrowing(&parent, &grant(None)), Ok(()));
}

#[test]
fn approval_args() {
    let text = r#"{"require_approval":{"args":[[">",".amount_usd",100]]}}"#;
    let c: Constraints = serde_json::from_str(text).unwrap();
    assert_eq!(serde_json::to_string(&c).unwrap(), text);
    let requirement = c.require_approval.clone().unwrap();
    let needs = |v: Option<Value>| {
        let v = v.map(args);
        requirement.applies_with_args(&act("pay"), &res("bank:x"), Usd::ZERO, v.as_ref())
    };
    assert!(needs(Some(json!({"amount_usd": 101}))));
    assert!(!needs(Some(json!({"amount_usd": 100}))));
    // Undefined asks for approval: fail closed.
    assert!(needs(Some(json!({"amount": 500}))));
    assert!(needs(None));
    assert!(requirement.applies(&act("pay"), &res("bank:x"), Usd::ZERO));

    let parent = Grant {
        constraints: c.clone(),
        ..grant(None)
    };
    let inherited = delegated_grant(grant(None), &parent).unwrap();
    assert_eq!(inherited.constraints.require_approval, c.require_approval);
    let other: Constraints =
        serde_json::from_str(r#"{"require_approval":{"args":[[">",".amount_usd",200]]}}"#).unwrap();
    let e = delegated_grant(
        Grant {
            constraints: other,
            ..grant(None)
        },
        &parent,
    )
    .unwrap_err();
    assert_eq!(e.code(), "scope_widening");
    let mut dropped = parent.clone();
    dropped.constraints.require_approval =
        Some(crate::ApprovalRequirement::parse(Some(&["send"]), None::<&[&str]>, None).unwrap());
    let e = check_narrowing(&dropped, &parent).unwrap_err();
    assert_eq!(e.violations, vec![Violation::ApprovalArgsChanged]);
    assert_eq!(e.violations[0].field(), "constraints.require_approval.args");
}

#[test]
fn selector_forms_in_statements() {
    let a = json!({"a": [1, 2, {"b": 3}], "k w": {"x": "y"}, "list": [{"v": 1}, {"v": 2}]});
    for (statement, expected) in [
        (json!(["==", ".a[0]", 1]), Truth::True),
        (json!(["==", ".a[-1].b", 3]), Truth::True),
        (json!(["==", ".[\"k w\"].x", "y"]), Truth::True),
        (json!(["==", ".list[].v", [1, 2]]), Truth::True),
        (json!(["all", ".list[].v", [">", ".", 0]]), Truth::True),
        (json!(["==", ".a[5]", 1]), Truth::Undefined),
        (json!(["==", ".a[5]?", null]), Truth::True),
        (json!(["==", ".nope?", null]), Truth::True),
        (json!(["==", ".a", [1, 2, {"b": 3.0}]]), Truth::True),
        (json!(["!=", ".a", [1, 2]]), Truth::True),
    ] {
        assert_eq!(
            pol(json!([statement])).evaluate(&a),
            expected,
            "{statement}"
        );
    }
}

#[test]
fn scope_error_carries_policy_path() {
    let e =
        serde_json::from_str::<Constraints>(r#"{"args":[{"pol":[["==","x",1]]}]}"#).unwrap_err();
    assert!(e.to_string().contains("args[0].pol[0][1]"), "{e}");
    let policy_error = PolicyError::at("args", PolicyFault::TooLarge);
    assert_eq!(ScopeError::Args(policy_error).code(), "rules_too_large");
}

#[test]
fn evaluate_json_reads_both_strictly() {
    assert_eq!(
        evaluate_json(br#"[["==",".a",1]]"#, br#"{"a":1.0}"#),
        Ok(Truth::True)
    );
    assert_eq!(
        evaluate_json(br#"[["==",".a",1]]"#, br#"{"a":1,"a":2}"#)
            .unwrap_err()
            .code(),
        "duplicate_member"
    );
    assert_eq!(
        evaluate_json(br#"[["=",".a",1]]"#, br#"{}"#)
            .unwrap_err()
            .code(),
        "unknown_operator"
    );
}

#[test]
fn an_approval_scoped_to_present_members() {
    let scoped = pol(json!([[
        "and",
        [["!=", ".amount_usd?", null], [">", ".amount_usd", 100]]
    ]]));
    let asks = |v: Value| approval_args_match(&scoped, Some(&args(v)));
    assert!(!asks(json!({})));
    assert!(!asks(json!({"amount_usd": 5})));
    assert!(asks(json!({"amount_usd": 500})));
    assert!(asks(json!({"amount_usd": "500"})));
    assert!(approval_args_match(&scoped, None));
}

#[test]
fn a_chain_is_judged_grant_by_grant_and_names_the_first_that_refuses() {
    let own = rules(json!([{"actions": ["send"], "pol": [["<=", ".count", 5]]}]));
    let ancestor = rules(json!([
        {"resources": ["mail:*"], "pol": [["like", ".to", "*@example.com"]]},
    ]));
    let (send, outbox) = (act("send"), res("mail:outbox"));
    let judge = |value: Option<Value>| {
        check_chain_args([&own, &ancestor], &send, &outbox, value.map(args).as_ref())
    };
    assert_eq!(
        judge(Some(json!({"count": 1, "to": "a@example.com"}))),
        Ok(())
    );
    assert_eq!(
        judge(Some(json!({"count": 1, "to": "eve@evil.test"}))),
        Err(ChainArgsDenial {
            grant: 1,
            denial: ArgsDenial::NotPermitted {
                rule: 0,
                statement: 0,
                truth: Truth::False
            }
        })
    );
    assert_eq!(
        judge(Some(json!({"to": "a@example.com"}))),
        Err(ChainArgsDenial {
            grant: 0,
            denial: ArgsDenial::NotPermitted {
                rule: 0,
                statement: 0,
                truth: Truth::Undefined
            }
        })
    );
    assert_eq!(
        judge(None),
        Err(ChainArgsDenial {
            grant: 0,
            denial: ArgsDenial::Required { rule: 0 }
        })
    );
    assert_eq!(
        crate::DenyReason::from(ArgsDenial::Required { rule: 0 }).code(),
        "args_required"
    );
    // Rules that do not apply ask nothing, not even arguments.
    assert_eq!(
        check_chain_args([&own, &ancestor], &act("read"), &res("crm:lead/1"), None),
        Ok(())
    );
}

#[test]
fn redaction_replaces_what_each_selector_finds_and_nothing_else() {
    let given = args(json!({
        "user": "ann", "password": "hunter2",
        "cards": [{"number": "4111", "exp": "12/30"}, {"number": "5500"}],
        "nested": {"a": {"token": "t"}},
    }));
    let selectors: Vec<Selector> = [
        ".password",
        ".cards[].number",
        ".nested.a.token",
        ".absent.x",
        ".",
    ]
    .iter()
    .map(|text| Selector::parse(text).unwrap())
    .collect();
    let stored = redact(&given, &selectors).unwrap();
    assert_eq!(
        serde_json::from_str::<Value>(&stored).unwrap(),
        json!({
            "user": "ann", "password": REDACTED,
            "cards": [{"number": REDACTED, "exp": "12/30"}, {"number": REDACTED}],
            "nested": {"a": {"token": REDACTED}},
        })
    );
    // Canonical JSON, and without selectors the canonical form itself.
    assert!(stored.starts_with(r#"{"cards":"#), "{stored}");
    assert_eq!(redact(&given, &[]).unwrap().as_bytes(), given.canonical());
}

#[test]
fn strict_json_keeps_its_refusal_for_the_caller_to_place() {
    let read = |text: &str| serde_json::from_str::<StrictJson>(text).unwrap();
    assert_eq!(
        read(r#"[{"pol": [], "pol": []}]"#).rules("constraints.args"),
        Err(PolicyError::at(
            "constraints.args",
            PolicyFault::DuplicateMember
        ))
    );
    assert_eq!(
        read(r#"{"n": 9007199254740992}"#).args(),
        Err(ArgsError::UnsafeNumber)
    );
    assert_eq!(read(r#"[1]"#).args(), Err(ArgsError::NotAnObject));
    assert_eq!(
        read(r#"[["<", ".n", "x"]]"#)
            .pol("require_approval.args")
            .unwrap_err()
            .path,
        "require_approval.args[0][2]"
    );
    assert!(read(r#"{"to": "a"}"#).args().is_ok());
}

//! `args.json`: argument constraints (DESIGN §15) — UCAN 1.0's policy
//! language judged in three-valued logic, the rules of a grant and what
//! they permit, their narrowing, the approval requirement's `args`, the
//! strict reading of arguments and their hash.
//!
//! Every verdict here is written by hand from the rules in
//! `docs/decisions.md` ("Argument constraints"), not computed by core: the
//! vectors state the rules, and core (natively and as wasm32) must reach
//! them. Cases named `ucan_*` restate the semantics of UCAN's published
//! policy fixtures (ucan-wg/rs-ucan `ucan/tests/fixtures/policy.json`) case
//! by case, with our own data; a case with `"divergence"` is one where
//! UCAN's answer would permit and ours does not (fail closed), the reason
//! named.

use serde_json::{Value, json};
use sha2::{Digest as _, Sha256};

use crate::hex;

/// A statement list, arguments as JSON text, and the expected truth.
fn eval(name: &str, pol: Value, args: &str, expect: &str) -> Value {
    json!({"name": name, "pol": pol, "args_json": args, "expect": expect})
}

/// As [`eval`], with arguments given as a value.
fn evalv(name: &str, pol: Value, args: Value, expect: &str) -> Value {
    eval(name, pol, &args.to_string(), expect)
}

/// As [`evalv`], for a case where UCAN permits and we do not.
fn diverges(name: &str, pol: Value, args: Value, expect: &str, divergence: &str) -> Value {
    let mut case = evalv(name, pol, args, expect);
    case["divergence"] = json!(divergence);
    case
}

fn evaluate() -> Value {
    let person = json!({"name": "Ada", "age": 36, "langs": ["en", "fr"]});
    let data = json!({"a": [1, 2, {"b": 3}], "b": 1});
    let mail = json!({
        "from": "ops@example.com",
        "to": ["ann@example.com", "raj@elsewhere.example.org"],
        "subject": "Quarterly report"
    });
    let items = json!({"items": [{"qty": 1}, {"qty": 4}, {"sku": "x"}]});
    let nested = json!({"lists": {"weekly": {"to": [{"email": "ann@example.com"}, {"email": "raj@example.com"}]}}});
    let stars = json!({
        "exact": "Ann*, Raj, Lee.",
        "more": "Ann*, Raj, Kim, Lee.",
        "spaced": "Ann*, Raj  , Lee.",
        "starred": "Ann*, Raj*, Lee.",
        "no_star": "Ann, Raj, Lee.",
        "bang": "Ann*, Raj*, Lee!",
        "short": "Ann*, Raj, Lee",
        "padded": " Ann*, Raj, Lee. "
    });
    let star_pattern = "Ann\\*, Raj*, Lee.";
    Value::Array(vec![
        // Equality: deep, numbers by value.
        evalv(
            "ucan_eq_array",
            json!([["==", ".a", [1, 2, {"b": 3}]]]),
            data.clone(),
            "true",
        ),
        evalv(
            "ucan_eq_int",
            json!([["==", ".b", 1]]),
            data.clone(),
            "true",
        ),
        evalv(
            "ucan_eq_int_as_float",
            json!([["==", ".b", 1.0]]),
            data.clone(),
            "true",
        ),
        evalv(
            "ucan_ne_string",
            json!([["!=", ".b", "one"]]),
            data.clone(),
            "true",
        ),
        evalv(
            "ucan_ne_null",
            json!([["!=", ".b", null]]),
            data.clone(),
            "true",
        ),
        evalv(
            "ucan_ne_other_int",
            json!([["!=", ".b", 2]]),
            data.clone(),
            "true",
        ),
        evalv(
            "ucan_ne_object",
            json!([["!=", ".b", {"b": 3}]]),
            data.clone(),
            "true",
        ),
        evalv(
            "ucan_ne_true",
            json!([["!=", ".b", true]]),
            data.clone(),
            "true",
        ),
        evalv(
            "ucan_ne_false",
            json!([["!=", ".b", false]]),
            data.clone(),
            "true",
        ),
        evalv(
            "ucan_not_eq",
            json!([["not", ["==", ".b", 2]]]),
            data.clone(),
            "true",
        ),
        evalv("eq_false", json!([["==", ".b", 2]]), data.clone(), "false"),
        evalv(
            "eq_type_mismatch_is_false",
            json!([["==", ".a", "1, 2"]]),
            data.clone(),
            "false",
        ),
        evalv(
            "eq_whole_value",
            json!([["==", ".", {"b": 1.0, "a": [1.0, 2, {"b": 3e0}]}]]),
            data.clone(),
            "true",
        ),
        // Ordering: numbers only.
        evalv(
            "ucan_lt",
            json!([["<", ".b", 2], ["<", ".b", 2.0]]),
            data.clone(),
            "true",
        ),
        evalv(
            "ucan_gt",
            json!([[">", ".b", 0], [">", ".b", 0.0]]),
            data.clone(),
            "true",
        ),
        evalv(
            "ucan_le",
            json!([["<=", ".b", 2], ["<=", ".b", 1.0]]),
            data.clone(),
            "true",
        ),
        evalv(
            "ucan_ge",
            json!([[">=", ".b", 0], [">=", ".b", 1]]),
            data.clone(),
            "true",
        ),
        evalv("lt_false", json!([["<", ".b", 1]]), data.clone(), "false"),
        evalv(
            "gt_fraction",
            json!([[">", ".x", 0.5]]),
            json!({"x": 0.75}),
            "true",
        ),
        evalv(
            "lt_on_string_undefined",
            json!([["<", ".s", 10]]),
            json!({"s": "5"}),
            "undefined",
        ),
        evalv(
            "lt_on_array_undefined",
            json!([["<", ".a", 10]]),
            data.clone(),
            "undefined",
        ),
        evalv(
            "lt_on_null_undefined",
            json!([["<", ".n?", 10]]),
            json!({}),
            "undefined",
        ),
        // Number forms: 1, 1.0, 1e0, 100e-2 and -0 are values, not spellings.
        eval(
            "number_forms_equal",
            json!([
                ["==", ".a", 1],
                ["==", ".b", 1],
                ["==", ".c", 1],
                ["==", ".d", 1],
                ["==", ".z", 0]
            ]),
            r#"{"a":1,"b":1.0,"c":1e0,"d":100E-2,"z":-0}"#,
            "true",
        ),
        eval(
            "largest_safe_integer",
            json!([
                ["==", ".n", 9_007_199_254_740_991u64],
                [">", ".n", 9_007_199_254_740_990u64]
            ]),
            r#"{"n":9007199254740991}"#,
            "true",
        ),
        eval(
            "smallest_safe_integer",
            json!([["<", ".n", -9_007_199_254_740_990i64]]),
            r#"{"n":-9007199254740991}"#,
            "true",
        ),
        // like: `*` any run of characters, `\*` a literal star.
        evalv(
            "ucan_like_exact",
            json!([["like", ".exact", star_pattern]]),
            stars.clone(),
            "true",
        ),
        evalv(
            "ucan_like_more",
            json!([["like", ".more", star_pattern]]),
            stars.clone(),
            "true",
        ),
        evalv(
            "ucan_like_spaced",
            json!([["like", ".spaced", star_pattern]]),
            stars.clone(),
            "true",
        ),
        evalv(
            "ucan_like_starred",
            json!([["like", ".starred", star_pattern]]),
            stars.clone(),
            "true",
        ),
        evalv(
            "ucan_like_no_star",
            json!([["like", ".no_star", star_pattern]]),
            stars.clone(),
            "false",
        ),
        evalv(
            "ucan_like_bang",
            json!([["like", ".bang", star_pattern]]),
            stars.clone(),
            "false",
        ),
        evalv(
            "ucan_like_short",
            json!([["like", ".short", star_pattern]]),
            stars.clone(),
            "false",
        ),
        evalv(
            "ucan_like_padded",
            json!([["like", ".padded", star_pattern]]),
            stars,
            "false",
        ),
        evalv(
            "like_suffix",
            json!([["like", ".to", "*@example.com"]]),
            json!({"to": "ann@example.com"}),
            "true",
        ),
        evalv(
            "like_suffix_then_more",
            json!([["like", ".to", "*@example.com"]]),
            json!({"to": "ann@example.com.evil.net"}),
            "false",
        ),
        evalv(
            "like_star_matches_empty",
            json!([["like", ".s", "*"]]),
            json!({"s": ""}),
            "true",
        ),
        evalv(
            "like_empty_pattern",
            json!([["like", ".s", ""]]),
            json!({"s": "x"}),
            "false",
        ),
        evalv(
            "like_literal_star_only",
            json!([["like", ".s", "\\*"]]),
            json!({"s": "*"}),
            "true",
        ),
        evalv(
            "like_literal_star_not_wildcard",
            json!([["like", ".s", "\\*"]]),
            json!({"s": "x"}),
            "false",
        ),
        evalv(
            "like_overlapping_ends",
            json!([["like", ".s", "ab*ba"]]),
            json!({"s": "aba"}),
            "false",
        ),
        evalv(
            "like_unicode_nfc",
            json!([["like", ".s", "caf\u{e9}*"]]),
            json!({"s": "caf\u{e9} noir"}),
            "true",
        ),
        evalv(
            "like_unicode_not_normalised",
            json!([["like", ".s", "caf\u{e9}*"]]),
            json!({"s": "cafe\u{301} noir"}),
            "false",
        ),
        evalv(
            "like_unicode_star_spans_characters",
            json!([["like", ".s", "*\u{1f600}"]]),
            json!({"s": "\u{65e5}\u{672c}\u{1f600}"}),
            "true",
        ),
        evalv(
            "like_on_number_undefined",
            json!([["like", ".n", "*"]]),
            json!({"n": 5}),
            "undefined",
        ),
        // Connectives, as UCAN: empty and/or hold.
        evalv(
            "ucan_and_empty",
            json!([["and", []]]),
            person.clone(),
            "true",
        ),
        evalv(
            "ucan_and_one",
            json!([["and", [["==", ".name", "Ada"]]]]),
            person.clone(),
            "true",
        ),
        evalv(
            "ucan_and_two",
            json!([["and", [["==", ".name", "Ada"], ["==", ".age", 36]]]]),
            person.clone(),
            "true",
        ),
        evalv(
            "ucan_and_array",
            json!([[
                "and",
                [["==", ".name", "Ada"], ["==", ".langs", ["en", "fr"]]]
            ]]),
            person.clone(),
            "true",
        ),
        evalv("ucan_or_empty", json!([["or", []]]), person.clone(), "true"),
        evalv(
            "ucan_or_one_true",
            json!([["or", [["==", ".name", "Ada"], [">", ".age", 90]]]]),
            person.clone(),
            "true",
        ),
        evalv(
            "ucan_not_and",
            json!([[
                "not",
                ["and", [["==", ".name", "Ada"], ["==", ".langs", ["de"]]]]
            ]]),
            person.clone(),
            "true",
        ),
        evalv(
            "ucan_and_fails_on_mismatch",
            json!([[
                "and",
                [
                    ["==", ".name", "Ada"],
                    ["==", ".age", 36],
                    ["==", ".langs", "de"]
                ]
            ]]),
            person.clone(),
            "false",
        ),
        evalv(
            "or_all_false",
            json!([["or", [["==", ".name", "Bo"], [">", ".age", 90]]]]),
            person.clone(),
            "false",
        ),
        evalv(
            "policy_is_a_conjunction",
            json!([["==", ".name", "Ada"], ["==", ".age", 37]]),
            person.clone(),
            "false",
        ),
        // Quantifiers.
        evalv(
            "ucan_any_element",
            json!([["any", ".a", ["==", ".b", 2]]]),
            json!({"a": [{"b": 1}, {"b": 2}, {"z": [7, 8, 9]}]}),
            "true",
        ),
        evalv(
            "ucan_all_over_object_values",
            json!([[
                "all",
                ".lists",
                ["any", ".to", ["==", ".email", "ann@example.com"]]
            ]]),
            nested.clone(),
            "true",
        ),
        evalv(
            "ucan_mail_any_recipient",
            json!([
                ["==", ".from", "ops@example.com"],
                ["any", ".to", ["like", ".", "*@example.com"]]
            ]),
            mail.clone(),
            "true",
        ),
        evalv(
            "ucan_mail_no_recipient_matches",
            json!([
                ["==", ".from", "ops@example.com"],
                ["any", ".to", ["like", ".", "*@example.com"]]
            ]),
            json!({"from": "ops@example.com", "to": ["kim@elsewhere.example.org"]}),
            "false",
        ),
        evalv(
            "ucan_all_with_a_gap",
            json!([["all", ".items", [">", ".qty", 0]]]),
            items.clone(),
            "undefined",
        ),
        evalv(
            "all_recipients_must_match",
            json!([["all", ".to", ["like", ".", "*@example.com"]]]),
            mail.clone(),
            "false",
        ),
        evalv(
            "all_recipients_match",
            json!([["all", ".to", ["like", ".", "*@example.com"]]]),
            json!({"to": ["ann@example.com", "raj@example.com"]}),
            "true",
        ),
        evalv(
            "all_over_empty_holds",
            json!([["all", ".to", ["like", ".", "*@example.com"]]]),
            json!({"to": []}),
            "true",
        ),
        evalv(
            "any_over_empty_fails",
            json!([["any", ".to", ["like", ".", "*@example.com"]]]),
            json!({"to": []}),
            "false",
        ),
        evalv(
            "any_true_beside_undefined",
            json!([["any", ".to", ["like", ".", "*@example.com"]]]),
            json!({"to": [7, "ann@example.com"]}),
            "true",
        ),
        evalv(
            "any_false_beside_undefined",
            json!([["any", ".to", ["like", ".", "*@example.com"]]]),
            json!({"to": [7, "kim@x.org"]}),
            "undefined",
        ),
        evalv(
            "all_over_a_string_undefined",
            json!([["all", ".to", ["like", ".", "*@example.com"]]]),
            json!({"to": "ann@example.com"}),
            "undefined",
        ),
        evalv(
            "nested_quantifiers",
            json!([[
                "all",
                ".lists[]",
                ["all", ".to", ["like", ".email", "*@example.com"]]
            ]]),
            nested.clone(),
            "true",
        ),
        // Selectors.
        evalv(
            "selector_identity",
            json!([["==", ".", {"k": 1}]]),
            json!({"k": 1}),
            "true",
        ),
        evalv(
            "selector_index",
            json!([["==", ".a[0]", 1]]),
            data.clone(),
            "true",
        ),
        evalv(
            "selector_negative_index",
            json!([["==", ".a[-1].b", 3]]),
            data.clone(),
            "true",
        ),
        evalv(
            "selector_index_out_of_range",
            json!([["==", ".a[3]", 1]]),
            data.clone(),
            "undefined",
        ),
        evalv(
            "selector_negative_out_of_range",
            json!([["==", ".a[-4]", 1]]),
            data.clone(),
            "undefined",
        ),
        evalv(
            "selector_quoted_member",
            json!([["==", ".[\"a b\"][\"c.d\"]", true]]),
            json!({"a b": {"c.d": true}}),
            "true",
        ),
        evalv(
            "selector_iterator",
            json!([["==", ".to[].email", ["ann@example.com", "raj@example.com"]]]),
            json!({"to": [{"email": "ann@example.com"}, {"email": "raj@example.com"}]}),
            "true",
        ),
        evalv(
            "selector_iterator_object_values_in_name_order",
            json!([["==", ".m[]", [1, 2, 3]]]),
            json!({"m": {"b": 2, "a": 1, "c": 3}}),
            "true",
        ),
        evalv(
            "selector_iterator_gap_undefined",
            json!([["==", ".to[].email", ["ann@example.com"]]]),
            json!({"to": [{"email": "ann@example.com"}, {}]}),
            "undefined",
        ),
        evalv(
            "selector_member_of_array_undefined",
            json!([["==", ".a.b", 1]]),
            data.clone(),
            "undefined",
        ),
        evalv(
            "optional_absent_is_null",
            json!([["==", ".cc?", null]]),
            json!({}),
            "true",
        ),
        evalv(
            "optional_present",
            json!([["==", ".cc?", "x"]]),
            json!({"cc": "x"}),
            "true",
        ),
        evalv(
            "optional_absent_not_equal",
            json!([["!=", ".cc?", "x"]]),
            json!({}),
            "true",
        ),
        evalv(
            "optional_stops_the_selector",
            json!([["==", ".cc?.name", null]]),
            json!({}),
            "true",
        ),
        evalv(
            "optional_index",
            json!([["==", ".a[9]?", null]]),
            data.clone(),
            "true",
        ),
        // Fail closed beyond UCAN: what a statement cannot see is undefined.
        diverges(
            "absent_not_eq",
            json!([["not", ["==", ".to", "x"]]]),
            json!({"from": "ops@example.com"}),
            "undefined",
            "not_over_absent",
        ),
        diverges(
            "absent_ne",
            json!([["!=", ".to", "x"]]),
            json!({"from": "ops@example.com"}),
            "undefined",
            "not_over_absent",
        ),
        diverges(
            "absent_not_like",
            json!([["not", ["like", ".to", "*@evil.com"]]]),
            json!({}),
            "undefined",
            "not_over_absent",
        ),
        diverges(
            "wrong_type_not_lt",
            json!([["not", ["<", ".n", 5]]]),
            json!({"n": "9"}),
            "undefined",
            "not_over_wrong_type",
        ),
        diverges(
            "absent_in_or_with_false",
            json!([["or", [["!=", ".to", "x"], ["==", ".a", 2]]]]),
            json!({"a": 1}),
            "undefined",
            "not_over_absent",
        ),
        diverges(
            "any_over_empty",
            json!([["any", ".to", ["==", ".", "x"]]]),
            json!({"to": []}),
            "false",
            "any_over_empty",
        ),
        evalv(
            "absent_and_false_is_false",
            json!([["and", [["==", ".to", "x"], ["==", ".a", 2]]]]),
            json!({"a": 1}),
            "false",
        ),
        evalv(
            "absent_or_true_is_true",
            json!([["or", [["==", ".to", "x"], ["==", ".a", 1]]]]),
            json!({"a": 1}),
            "true",
        ),
        evalv(
            "absent_not_not",
            json!([["not", ["not", ["==", ".to", "x"]]]]),
            json!({}),
            "undefined",
        ),
        evalv(
            "present_not_eq",
            json!([["not", ["==", ".to", "x"]]]),
            json!({"to": "y"}),
            "true",
        ),
    ])
}

/// Rules (or one policy) refused, with the JSON path and code of the fault.
fn rule_errors() -> Value {
    let case = |name: &str, rules: &str, path: &str, code: &str| json!({"name": name, "rules_json": rules, "path": path, "code": code});
    let deep = {
        let mut statement = r#"["==",".a",1]"#.to_owned();
        for _ in 1..17 {
            statement = format!(r#"["not",{statement}]"#);
        }
        format!(r#"[{{"pol":[{statement}]}}]"#)
    };
    let deepest_ok = {
        let mut statement = r#"["==",".a",1]"#.to_owned();
        for _ in 1..16 {
            statement = format!(r#"["not",{statement}]"#);
        }
        format!(r#"[{{"pol":[{statement}]}}]"#)
    };
    let statements = |n: usize| {
        let list = vec![r#"["==",".a",1]"#; n].join(",");
        format!(r#"[{{"pol":[{list}]}}]"#)
    };
    let rules = |n: usize| format!("[{}]", vec![r#"{"pol":[["==",".a",1]]}"#; n].join(","));
    let big = format!(r#"[{{"pol":[["==",".a","{}"]]}}]"#, "x".repeat(4100));
    Value::Array(vec![
        case("ok_one_rule", r#"[{"pol":[["==",".a",1]]}]"#, "", "ok"),
        case(
            "ok_scoped_rule",
            r#"[{"actions":["send"],"resources":["mail:*"],"pol":[["like",".to","*@example.com"]]}]"#,
            "",
            "ok",
        ),
        case("ok_deepest", &deepest_ok, "", "ok"),
        case("ok_most_statements", &statements(64), "", "ok"),
        case("ok_most_rules", &rules(32), "", "ok"),
        case(
            "unknown_operator",
            r#"[{"pol":[["==",".a",1]]},{"pol":[["==",".a",1]]},{"pol":[["==",".a",1],["matches",".a","x"]]}]"#,
            "args[2].pol[1][0]",
            "unknown_operator",
        ),
        case(
            "unknown_operator_nested",
            r#"[{"pol":[["or",[["==",".a",1],["in",".a",[1]]]]]}]"#,
            "args[0].pol[0][1][1][0]",
            "unknown_operator",
        ),
        case(
            "operator_case_matters",
            r#"[{"pol":[["AND",[]]]}]"#,
            "args[0].pol[0][0]",
            "unknown_operator",
        ),
        case(
            "selector_without_dot",
            r#"[{"pol":[["==","a",1]]}]"#,
            "args[0].pol[0][1]",
            "malformed_selector",
        ),
        case(
            "selector_double_dot",
            r#"[{"pol":[["==","..a",1]]}]"#,
            "args[0].pol[0][1]",
            "malformed_selector",
        ),
        case(
            "selector_trailing_dot",
            r#"[{"pol":[["==",".a.",1]]}]"#,
            "args[0].pol[0][1]",
            "malformed_selector",
        ),
        case(
            "selector_bad_index",
            r#"[{"pol":[["==",".a[x]",1]]}]"#,
            "args[0].pol[0][1]",
            "malformed_selector",
        ),
        case(
            "selector_two_questions",
            r#"[{"pol":[["==",".a??",1]]}]"#,
            "args[0].pol[0][1]",
            "malformed_selector",
        ),
        case(
            "selector_unclosed_quote",
            r#"[{"pol":[["==",".[\"a]",1]]}]"#,
            "args[0].pol[0][1]",
            "malformed_selector",
        ),
        case(
            "selector_not_a_string",
            r#"[{"pol":[["==",1,1]]}]"#,
            "args[0].pol[0][1]",
            "malformed_selector",
        ),
        case(
            "quantifier_selector",
            r#"[{"pol":[["all","to",["==",".",1]]]}]"#,
            "args[0].pol[0][1]",
            "malformed_selector",
        ),
        case(
            "bound_not_a_number",
            r#"[{"pol":[["<",".a","5"]]}]"#,
            "args[0].pol[0][2]",
            "not_a_number",
        ),
        case(
            "bound_unsafe",
            r#"[{"pol":[["<",".a",9007199254740992]]}]"#,
            "args",
            "unsafe_number",
        ),
        case(
            "like_not_a_string",
            r#"[{"pol":[["like",".a",5]]}]"#,
            "args[0].pol[0][2]",
            "malformed_pattern",
        ),
        case(
            "like_stray_backslash",
            r#"[{"pol":[["like",".a","a\\b"]]}]"#,
            "args[0].pol[0][2]",
            "malformed_pattern",
        ),
        case(
            "like_trailing_backslash",
            r#"[{"pol":[["like",".a","a\\"]]}]"#,
            "args[0].pol[0][2]",
            "malformed_pattern",
        ),
        case(
            "statement_too_short",
            r#"[{"pol":[["==",".a"]]}]"#,
            "args[0].pol[0]",
            "malformed_statement",
        ),
        case(
            "statement_too_long",
            r#"[{"pol":[["not",["==",".a",1],1]]}]"#,
            "args[0].pol[0]",
            "malformed_statement",
        ),
        case(
            "statement_not_an_array",
            r#"[{"pol":[{"op":"=="}]}]"#,
            "args[0].pol[0]",
            "malformed_statement",
        ),
        case(
            "and_of_a_statement",
            r#"[{"pol":[["and",["==",".a",1]]]}]"#,
            "args[0].pol[0][1][0]",
            "malformed_statement",
        ),
        case(
            "and_of_not_a_list",
            r#"[{"pol":[["and",5]]}]"#,
            "args[0].pol[0][1]",
            "malformed_statement",
        ),
        case(
            "too_deep",
            &deep,
            &format!("args[0].pol[0]{}", "[1]".repeat(16)),
            "policy_too_deep",
        ),
        case(
            "too_many_statements",
            &statements(65),
            "args[0].pol[64]",
            "too_many_statements",
        ),
        case("too_many_rules", &rules(33), "args", "too_many_rules"),
        case("too_large", &big, "args", "rules_too_large"),
        case("empty_rules", "[]", "args", "empty_list"),
        case("empty_pol", r#"[{"pol":[]}]"#, "args[0].pol", "empty_list"),
        case(
            "no_pol",
            r#"[{"actions":["send"]}]"#,
            "args[0].pol",
            "malformed_rule",
        ),
        case(
            "unknown_member",
            r#"[{"pol":[["==",".a",1]],"when":"always"}]"#,
            "args[0].when",
            "malformed_rule",
        ),
        case(
            "rule_not_an_object",
            r#"[["==",".a",1]]"#,
            "args[0]",
            "malformed_rule",
        ),
        case(
            "rules_not_a_list",
            r#"{"pol":[["==",".a",1]]}"#,
            "args",
            "malformed_rule",
        ),
        case(
            "empty_actions",
            r#"[{"actions":[],"pol":[["==",".a",1]]}]"#,
            "args[0].actions",
            "empty_list",
        ),
        case(
            "action_misspelt",
            r#"[{"actions":["Send"],"pol":[["==",".a",1]]}]"#,
            "args[0].actions[0]",
            "invalid_rule_list",
        ),
        case(
            "resource_twice",
            r#"[{"resources":["mail:*","mail:*"],"pol":[["==",".a",1]]}]"#,
            "args[0].resources[1]",
            "invalid_rule_list",
        ),
        case(
            "duplicate_member_in_value",
            r#"[{"pol":[["==",".a",{"x":1,"x":2}]]}]"#,
            "args",
            "duplicate_member",
        ),
        case(
            "duplicate_pol",
            r#"[{"pol":[["==",".a",1]],"pol":[["==",".a",2]]}]"#,
            "args",
            "duplicate_member",
        ),
    ])
}

/// Arguments read strictly, as JSON text: refused with a code, or read
/// with their canonical form and `args_hash`.
fn args_forms() -> Value {
    let read = |name: &str, text: &str, canonical: &str| {
        let hash = format!("sha256:{}", hex(&Sha256::digest(canonical.as_bytes())));
        json!({"name": name, "args_json": text, "canonical": canonical, "args_hash": hash})
    };
    let refused =
        |name: &str, text: &str, code: &str| json!({"name": name, "args_json": text, "code": code});
    let near = "x".repeat(16 * 1024 - 8);
    let over = "x".repeat(16 * 1024 - 7);
    Value::Array(vec![
        read(
            "sorted_and_spaced",
            r#"{ "b": [1.0, "é"], "a": {"z": null, "y": true} }"#,
            r#"{"a":{"y":true,"z":null},"b":[1,"é"]}"#,
        ),
        read(
            "number_forms",
            r#"{"a":1e0,"b":100E-2,"c":-0,"d":0.5,"e":1.5e3}"#,
            r#"{"a":1,"b":1,"c":0,"d":0.5,"e":1500}"#,
        ),
        read(
            "safe_extremes",
            r#"{"max":9007199254740991,"min":-9007199254740991}"#,
            r#"{"max":9007199254740991,"min":-9007199254740991}"#,
        ),
        read(
            "escapes",
            r#"{"s":"\u0041\n\u00e9\ud83d\ude00\u001f"}"#,
            "{\"s\":\"A\\n\u{e9}\u{1f600}\\u001f\"}",
        ),
        read(
            "utf16_member_order",
            r#"{"\ud83d\ude00":1,"\ufb01":2,"a":3}"#,
            "{\"a\":3,\"\u{1f600}\":1,\"\u{fb01}\":2}",
        ),
        read("empty", "{}", "{}"),
        read(
            "largest",
            &format!(r#"{{"a":"{near}"}}"#),
            &format!(r#"{{"a":"{near}"}}"#),
        ),
        refused(
            "too_large",
            &format!(r#"{{"a":"{over}"}}"#),
            "args_too_large",
        ),
        refused(
            "duplicate_top",
            r#"{"to":"ann@example.com","to":"eve@evil.com"}"#,
            "duplicate_member",
        ),
        refused(
            "duplicate_nested",
            r#"{"msg":{"to":"a","cc":"b","to":"c"}}"#,
            "duplicate_member",
        ),
        refused(
            "duplicate_in_array",
            r#"{"list":[{"x":1},{"x":1,"x":2}]}"#,
            "duplicate_member",
        ),
        refused(
            "duplicate_by_escape",
            r#"{"to":"a","\u0074o":"b"}"#,
            "duplicate_member",
        ),
        refused("integer_2_53", r#"{"n":9007199254740992}"#, "unsafe_number"),
        refused(
            "negative_2_53",
            r#"{"n":-9007199254740992}"#,
            "unsafe_number",
        ),
        refused(
            "big_integer",
            r#"{"n":123456789012345678901234567890}"#,
            "unsafe_number",
        ),
        refused("big_float", r#"{"n":1e16}"#, "unsafe_number"),
        refused("nested_big", r#"{"a":[{"n":1e300}]}"#, "unsafe_number"),
        refused("not_an_object", "[1,2]", "args_not_an_object"),
        refused("a_string", r#""x""#, "args_not_an_object"),
        refused("not_json", "{to:1}", "invalid_args"),
        refused("trailing", r#"{"a":1} x"#, "invalid_args"),
    ])
}

/// Attempts judged by a grant's rules: permitted, or the denial with the
/// rule and statement that refused and its truth.
fn checks() -> Value {
    let rules = json!([
        {"actions": ["send"], "resources": ["mail:*"], "pol": [
            ["all", ".to", ["like", ".", "*@example.com"]],
            ["!=", ".bcc?", "archive@evil.com"]
        ]},
        {"actions": ["pay"], "pol": [["<=", ".amount_usd", 100], ["==", ".currency", "USD"]]},
        {"resources": ["files:reports"], "pol": [["like", ".path", "/srv/reports/*"]]}
    ]);
    let case = |name: &str, action: &str, resource: &str, args: Option<Value>, expect: Value| {
        let mut c = json!({"name": name, "action": action, "resource": resource, "expect": expect});
        if let Some(args) = args {
            c["args"] = args;
        }
        c
    };
    let ok = || json!({"ok": true});
    let denied = |rule: usize, statement: usize, truth: &str| json!({"ok": false, "code": "args_not_permitted", "rule": rule, "statement": statement, "truth": truth});
    let required = |rule: usize| json!({"ok": false, "code": "args_required", "rule": rule});
    json!({
        "rules": rules,
        "cases": [
            case("send_to_example", "send", "mail:outbox", Some(json!({"to": ["ann@example.com", "raj@example.com"]})), ok()),
            case("send_one_outsider", "send", "mail:outbox", Some(json!({"to": ["ann@example.com", "eve@evil.com"]})), denied(0, 0, "false")),
            case("send_to_a_string", "send", "mail:outbox", Some(json!({"to": "ann@example.com"})), denied(0, 0, "undefined")),
            case("send_without_to", "send", "mail:outbox", Some(json!({"subject": "hi"})), denied(0, 0, "undefined")),
            case("send_bcc_forbidden", "send", "mail:outbox", Some(json!({"to": ["ann@example.com"], "bcc": "archive@evil.com"})), denied(0, 1, "false")),
            case("send_bcc_other", "send", "mail:outbox", Some(json!({"to": ["ann@example.com"], "bcc": "ann@example.com"})), ok()),
            case("send_without_args", "send", "mail:outbox", None, required(0)),
            case("send_elsewhere_unconstrained", "send", "chat:general", None, ok()),
            case("pay_within", "pay", "bank:acct", Some(json!({"amount_usd": 100, "currency": "USD"})), ok()),
            case("pay_over", "pay", "bank:acct", Some(json!({"amount_usd": 100.01, "currency": "USD"})), denied(1, 0, "false")),
            case("pay_amount_as_string", "pay", "bank:acct", Some(json!({"amount_usd": "5", "currency": "USD"})), denied(1, 0, "undefined")),
            case("pay_wrong_currency", "pay", "bank:acct", Some(json!({"amount_usd": 5, "currency": "EUR"})), denied(1, 1, "false")),
            case("pay_without_args", "pay", "bank:acct", None, required(1)),
            case("read_report", "read", "files:reports", Some(json!({"path": "/srv/reports/q3.pdf"})), ok()),
            case("read_escape", "read", "files:reports", Some(json!({"path": "/etc/passwd"})), denied(2, 0, "false")),
            case("read_other_file", "read", "files:other", None, ok()),
            case("first_refusing_rule_named", "pay", "files:reports", Some(json!({"amount_usd": 500, "path": "/etc/passwd"})), denied(1, 0, "false")),
            case("read_unconstrained", "read", "mail:outbox", None, ok()),
        ]
    })
}

/// A grant of sending and paying with `constraints`, as the scope vectors
/// write grants.
fn grant(constraints: Value) -> Value {
    json!({
        "resources": ["mail:*", "bank:*"],
        "actions": ["send", "pay", "delegate"],
        "constraints": constraints,
        "exp": 1_800_003_600
    })
}

/// Narrowing of rules: `check_narrowing(child, parent)` on whole grants,
/// and `delegated_grant(request, parent)` for what a request without rules
/// inherits.
fn narrowing() -> Value {
    let a = json!({"pol": [["like", ".to", "*@example.com"]]});
    let b = json!({"actions": ["pay"], "pol": [["<", ".amount_usd", 50]]});
    let b_float = json!({"actions": ["pay"], "pol": [["<", ".amount_usd", 50.0]]});
    let b_wider = json!({"actions": ["pay"], "pol": [["<", ".amount_usd", 60]]});
    let b_unscoped = json!({"pol": [["<", ".amount_usd", 50]]});
    let c = json!({"pol": [["!=", ".bcc?", "archive@evil.com"]]});
    let parent = grant(json!({"args": [a, b]}));
    let case = |name: &str, parent: &Value, child: Value, violations: Value| {
        let ok = violations.as_array().is_some_and(Vec::is_empty);
        json!({"name": name, "parent": parent, "child": grant(child), "expect": {"ok": ok, "violations": violations}})
    };
    let dropped = json!({"field": "constraints.args", "code": "args_rule_dropped"});
    let approval_changed =
        json!({"field": "constraints.require_approval.args", "code": "approval_args_changed"});
    let approval_dropped =
        json!({"field": "constraints.require_approval", "code": "approval_dropped"});
    let guarded = grant(json!({"require_approval": {"args": [[">", ".amount_usd", 100]]}}));
    json!({
        "check": [
            case("kept", &parent, json!({"args": [a, b]}), json!([])),
            case("kept_reordered_and_added", &parent, json!({"args": [c, b, a]}), json!([])),
            case("same_number_other_spelling", &parent, json!({"args": [a, b_float]}), json!([])),
            case("added_to_none", &grant(json!({})), json!({"args": [c]}), json!([])),
            case("dropped", &parent, json!({"args": [a]}), json!([dropped])),
            case("left_out", &parent, json!({}), json!([dropped, dropped])),
            case("changed", &parent, json!({"args": [a, b_wider]}), json!([dropped])),
            case("unscoped_is_another_rule", &parent, json!({"args": [a, b_unscoped]}), json!([dropped])),
            case("all_replaced", &parent, json!({"args": [c]}), json!([dropped, dropped])),
            case("approval_args_kept", &guarded, json!({"require_approval": {"args": [[">", ".amount_usd", 100.0]], "actions": ["pay"]}}), json!([])),
            case("approval_args_changed", &guarded, json!({"require_approval": {"args": [[">", ".amount_usd", 200]]}}), json!([approval_changed])),
            case("approval_args_dropped", &guarded, json!({"require_approval": {"actions": ["pay"]}}), json!([approval_changed])),
            case("approval_dropped", &guarded, json!({}), json!([approval_dropped])),
        ],
        "delegate": [
            {
                "name": "rules_inherited",
                "parent": parent,
                "request": grant(json!({})),
                "expect": {"ok": true, "constraints": {"args": [a, b]}}
            },
            {
                "name": "rules_replaced_must_keep_the_parents",
                "parent": parent,
                "request": grant(json!({"args": [c]})),
                "expect": {"ok": false, "error": "scope_widening", "violations": [dropped, dropped]}
            },
            {
                "name": "approval_args_inherited",
                "parent": guarded,
                "request": grant(json!({"require_approval": {"actions": ["send"]}})),
                "expect": {"ok": true, "constraints": {"require_approval": {"actions": ["send"], "args": [[">", ".amount_usd", 100]]}}}
            },
            {
                "name": "approval_args_changed",
                "parent": guarded,
                "request": grant(json!({"require_approval": {"args": [[">=", ".amount_usd", 100]]}})),
                "expect": {"ok": false, "error": "scope_widening", "violations": [approval_changed]}
            },
        ]
    })
}

/// The approval requirement's `args`: whether an attempt needs approval
/// (the statements all hold or are undefined), and requirements refused.
fn approval() -> Value {
    let requirement = json!({"args": [[">", ".amount_usd", 100]]});
    let case = |name: &str, args: Option<Value>, needs: bool| {
        let mut c = json!({"name": name, "action": "pay", "resource": "bank:acct", "needs_approval": needs});
        if let Some(args) = args {
            c["args"] = args;
        }
        c
    };
    json!({
        "require_approval": requirement,
        "cases": [
            case("over", Some(json!({"amount_usd": 100.5})), true),
            case("at", Some(json!({"amount_usd": 100})), false),
            case("under", Some(json!({"amount_usd": 3})), false),
            case("absent_member_asks", Some(json!({"amount": 500})), true),
            case("wrong_type_asks", Some(json!({"amount_usd": "500"})), true),
            case("no_args_asks", None, true),
        ],
        "refused": [
            {"name": "unknown_operator", "require_approval": {"args": [["~", ".a", 1]]}, "path": "require_approval.args[0][0]", "code": "unknown_operator"},
            {"name": "empty", "require_approval": {"args": []}, "path": "require_approval.args", "code": "empty_list"},
            {"name": "malformed_selector", "require_approval": {"spend_over_usd": 5, "args": [[">", "amount", 1]]}, "path": "require_approval.args[0][1]", "code": "malformed_selector"},
        ]
    })
}

pub(crate) fn args_vectors() -> Value {
    json!({
        "description": "Argument constraints (DESIGN §15): UCAN 1.0 policy statements judged in three-valued logic (expect: true, false or undefined; only true permits), rules and their faults (JSON path and code), arguments read strictly with their canonical form and args_hash, attempts checked against a grant's rules, narrowing, and require_approval.args. Verdicts are written by hand; cases named ucan_* restate UCAN's published policy fixtures; a case with divergence is one where UCAN permits and Mandate does not.",
        "evaluate": evaluate(),
        "rule_errors": rule_errors(),
        "args": args_forms(),
        "check": checks(),
        "narrowing": narrowing(),
        "approval": approval(),
    })
}

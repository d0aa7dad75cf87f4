//! Argument constraints over HTTP (DESIGN §15), attack first: rules that
//! cannot be judged never reach a token, arguments are read strictly, an
//! attempt a rule applies to is denied unless every statement is true of
//! its arguments (absent arguments included), a delegation can only keep
//! and add rules, a batch is judged record by record, an approval
//! condition that cannot be decided asks a human, and records keep the
//! arguments' hash and (redacted, or only while a human decides) the
//! arguments.

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::helpers::{TestApp, expect_json, expect_problem, text};

/// A root token for a mailer: `send` on `mail:*` only to addresses at
/// example.com, at most 5 of them; `read` unconstrained.
async fn mailer(app: &TestApp) -> Value {
    app.issue(json!({
        "developer_email": "dev@example.com",
        "agent_id": "mailer",
        "resources": ["mail:*", "crm:*"],
        "actions": ["send", "read", "delegate"],
        "constraints": {"args": [
            {"actions": ["send"], "resources": ["mail:*"], "pol": [
                ["all", ".to", ["like", ".", "*@example.com"]],
                ["<=", ".count", 5],
            ]},
        ]},
    }))
    .await
}

/// `record/action` of `action` on `resource` with `args` (left out when
/// `None`), presenting the token itself.
async fn act_with(
    app: &TestApp,
    token: &Value,
    action: &str,
    resource: &str,
    args: Option<Value>,
) -> reqwest::Response {
    let mut body = json!({"action": action, "resource": resource, "result": "success"});
    if let Some(args) = args {
        body["args"] = args;
    }
    app.post_auth("/v1/vat/record/action", text(&token["compact_jwt"]), &body)
        .await
}

/// Posts a body given as text (what `json!` cannot write: a member twice).
async fn post_raw(app: &TestApp, path: &str, bearer: &str, body: &str) -> reqwest::Response {
    app.client
        .post(app.url(path))
        .bearer_auth(bearer)
        .header("content-type", "application/json")
        .body(body.to_owned())
        .send()
        .await
        .unwrap()
}

async fn record(app: &TestApp, aar_id: &str) -> Value {
    expect_json(
        app.get_auth(&format!("/v1/vat/aar/{aar_id}"), &app.admin_key)
            .await,
        StatusCode::OK,
    )
    .await
}

/// `args_hash` of arguments given as JSON text, as core computes it.
fn args_hash(args: &str) -> String {
    mandate_core::Args::parse(args.as_bytes())
        .unwrap()
        .hash()
        .to_string()
}

#[tokio::test]
async fn rules_that_cannot_be_judged_never_reach_a_token() {
    let app = TestApp::spawn().await;
    let good = json!({"pol": [["==", ".to", "a@example.com"]]});
    let many: Vec<Value> = (0..33).map(|_| good.clone()).collect();
    let large: Vec<Value> = (0..20)
        .map(|i| json!({"pol": [["==", format!(".f{i}"), "x".repeat(200)]]}))
        .collect();
    let cases = [
        (
            json!({"args": [good.clone(), {"pol": [["~=", ".a", 1]]}]}),
            "constraints.args[1].pol[0][0]",
            "unknown_operator",
        ),
        (
            json!({"args": [{"pol": [["==", "to", "a"]]}]}),
            "constraints.args[0].pol[0][1]",
            "malformed_selector",
        ),
        (
            json!({"args": [{"pol": [["<", ".n", "5"]]}]}),
            "constraints.args[0].pol[0][2]",
            "not_a_number",
        ),
        (json!({"args": []}), "constraints.args", "empty_list"),
        (json!({"args": many}), "constraints.args", "too_many_rules"),
        (
            json!({"args": large}),
            "constraints.args",
            "rules_too_large",
        ),
        (
            json!({"args": [{"resources": ["mail:*", "no colon"], "pol": [["==", ".a", 1]]}]}),
            "constraints.args[0].resources[1]",
            "invalid_rule_list",
        ),
        (
            json!({"args": [{"pol": [["==", ".a", 1]], "when": "always"}]}),
            "constraints.args[0].when",
            "malformed_rule",
        ),
        (
            json!({"args": [{"pol": [["==", ".a", 9_007_199_254_740_993u64]]}]}),
            "constraints.args",
            "unsafe_number",
        ),
        (
            json!({"require_approval": {"args": [["like", ".to", 5]]}}),
            "constraints.require_approval.args[0][2]",
            "malformed_pattern",
        ),
    ];
    for (constraints, field, code) in cases {
        let body = json!({
            "developer_email": "dev@example.com", "agent_id": "mailer",
            "resources": ["mail:*"], "actions": ["send"], "constraints": constraints,
        });
        let problem = expect_problem(
            app.post_auth("/v1/vat/issue/l1", &app.admin_key, &body)
                .await,
            StatusCode::UNPROCESSABLE_ENTITY,
            code,
        )
        .await;
        assert_eq!(problem["field"], field, "{problem}");
    }
    // A member named twice is refused, not read as the last one.
    let problem = expect_problem(
        post_raw(
            &app,
            "/v1/vat/issue/l1",
            &app.admin_key,
            r#"{"developer_email": "dev@example.com", "agent_id": "mailer",
                "resources": ["mail:*"], "actions": ["send"],
                "constraints": {"args": [{"pol": [["==", ".to", "a"]], "pol": []}]}}"#,
        )
        .await,
        StatusCode::UNPROCESSABLE_ENTITY,
        "duplicate_member",
    )
    .await;
    assert_eq!(problem["field"], "constraints.args");
    // A grant whose token would be over 8 KiB is refused, and no 500.
    let resources: Vec<String> = (0..64)
        .map(|i| format!("files:/srv/{}/{i}", "r".repeat(180)))
        .collect();
    expect_problem(
        app.post_auth(
            "/v1/vat/issue/l1",
            &app.admin_key,
            &json!({
                "developer_email": "dev@example.com", "agent_id": "mailer",
                "resources": resources, "actions": ["read"],
            }),
        )
        .await,
        StatusCode::UNPROCESSABLE_ENTITY,
        "token_too_large",
    )
    .await;
    // Nothing above was issued.
    let tokens = expect_json(
        app.get_auth("/v1/vat/tokens", &app.admin_key).await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(tokens["tokens"], json!([]), "{tokens}");
}

#[tokio::test]
async fn arguments_are_read_strictly() {
    let app = TestApp::spawn().await;
    let token = mailer(&app).await;
    let bearer = text(&token["compact_jwt"]);
    let attempt =
        |args: &str| format!(r#"{{"action": "read", "resource": "crm:lead/1", "args": {args}"#);
    let body = |args: &str| format!(r#"{}, "result": "success"}}"#, attempt(args));
    for (args, code) in [
        (
            r#"{"to": ["a@example.com"], "to": ["eve@evil.test"]}"#,
            "duplicate_member",
        ),
        (r#"{"deep": {"x": 1, "x": 2}}"#, "duplicate_member"),
        (r#"{"amount": 9007199254740992}"#, "unsafe_number"),
        (r#"{"amount": -1e300}"#, "unsafe_number"),
        (r#"["a@example.com"]"#, "args_not_an_object"),
        (r#""to""#, "args_not_an_object"),
    ] {
        for (path, sent) in [
            ("/v1/vat/record/action", body(args)),
            ("/v1/vat/authorize", format!("{}}}", attempt(args))),
        ] {
            let problem = expect_problem(
                post_raw(&app, path, bearer, &sent).await,
                StatusCode::UNPROCESSABLE_ENTITY,
                code,
            )
            .await;
            assert_eq!(problem["field"], "args", "{args} {problem}");
        }
    }
    let big = json!({"blob": "x".repeat(16 * 1024)});
    let problem = expect_problem(
        act_with(&app, &token, "read", "crm:lead/1", Some(big)).await,
        StatusCode::UNPROCESSABLE_ENTITY,
        "args_too_large",
    )
    .await;
    assert_eq!(problem["field"], "args");
    // In a batch, a malformed record's arguments refuse the batch, named.
    let problem = expect_problem(
        post_raw(
            &app,
            "/v1/vat/record/actions",
            bearer,
            &format!(
                r#"{{"records": [{}, {}]}}"#,
                body("{}"),
                body(r#"{"a": 1, "a": 1}"#)
            ),
        )
        .await,
        StatusCode::UNPROCESSABLE_ENTITY,
        "duplicate_member",
    )
    .await;
    // As for any field of a batch's record: the member path, the
    // record's place in the detail.
    assert_eq!(problem["field"], "records.args", "{problem}");
    assert!(
        text(&problem["detail"]).starts_with("records[1]"),
        "{problem}"
    );
    // Nothing was recorded.
    let records = expect_json(
        app.get_auth("/v1/vat/aar?agent_id=mailer", &app.admin_key)
            .await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(records["records"], json!([]), "{records}");
}

#[tokio::test]
async fn a_rule_denies_what_it_does_not_permit_and_tells_only_the_holder() {
    let app = TestApp::spawn().await;
    let token = mailer(&app).await;
    let outside = json!({"to": ["bob@example.com", "eve@evil.test"], "count": 2});
    // The holder is told which rule and statement, and why.
    let problem = expect_problem(
        act_with(&app, &token, "send", "mail:outbox", Some(outside.clone())).await,
        StatusCode::FORBIDDEN,
        "args_not_permitted",
    )
    .await;
    let detail = text(&problem["detail"]);
    assert!(
        detail.contains("constraints.args[0].pol[0]") && detail.contains("false"),
        "{detail}"
    );
    let denied = record(&app, text(&problem["aar_id"])).await;
    assert_eq!(denied["deny_reason"], "args_not_permitted");
    assert_eq!(denied["status"], "denied");
    assert_eq!(denied["args"], outside);
    assert_eq!(denied["args_hash"], args_hash(&outside.to_string()));
    // Left out, the arguments are required where a rule applies.
    let problem = expect_problem(
        act_with(&app, &token, "send", "mail:outbox", None).await,
        StatusCode::FORBIDDEN,
        "args_required",
    )
    .await;
    assert!(text(&problem["detail"]).contains("constraints.args[0]"));
    assert!(
        record(&app, text(&problem["aar_id"]))
            .await
            .get("args_hash")
            .is_none()
    );
    // A member the rule looks at, missing or of the wrong type, is
    // undefined, and undefined does not permit.
    for args in [
        json!({"to": ["bob@example.com"]}),
        json!({"to": ["bob@example.com"], "count": "2"}),
        json!({"to": "bob@example.com", "count": 1}),
        json!({"to": ["bob@example.com"], "count": null}),
    ] {
        let problem = expect_problem(
            act_with(&app, &token, "send", "mail:outbox", Some(args.clone())).await,
            StatusCode::FORBIDDEN,
            "args_not_permitted",
        )
        .await;
        assert!(
            text(&problem["detail"]).contains("undefined"),
            "{args} {problem}"
        );
    }
    // Named by a bare jti, the caller proves nothing: the reason only.
    let problem = expect_problem(
        app.post(
            "/v1/vat/record/action",
            &json!({"vat_jti": token["jti"], "action": "send", "resource": "mail:outbox",
                    "result": "success", "args": outside}),
        )
        .await,
        StatusCode::FORBIDDEN,
        "args_not_permitted",
    )
    .await;
    assert!(!text(&problem["detail"]).contains("pol"), "{problem}");
    // authorize answers the same decision; the detail to the holder only.
    let decision = expect_json(
        app.post_auth(
            "/v1/vat/authorize",
            text(&token["compact_jwt"]),
            &json!({"action": "send", "resource": "mail:outbox", "args": outside}),
        )
        .await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(decision["authorized"], false);
    assert_eq!(decision["reason"], "args_not_permitted");
    assert!(text(&decision["reason_detail"]).contains("constraints.args[0].pol[0]"));
    let decision = expect_json(
        app.post(
            "/v1/vat/authorize",
            &json!({"vat_jti": token["jti"], "action": "send", "resource": "mail:outbox",
                    "args": outside}),
        )
        .await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(decision["reason"], "args_not_permitted");
    assert!(decision.get("reason_detail").is_none(), "{decision}");
    // What the rule permits is recorded; what it does not apply to needs
    // no arguments.
    let allowed = json!({"to": ["bob@example.com", "ann@example.com"], "count": 2});
    let recorded = expect_json(
        act_with(&app, &token, "send", "mail:outbox", Some(allowed.clone())).await,
        StatusCode::CREATED,
    )
    .await;
    let kept = record(&app, text(&recorded["aar_id"])).await;
    assert_eq!(kept["args"], allowed);
    expect_json(
        act_with(&app, &token, "read", "crm:lead/1", None).await,
        StatusCode::CREATED,
    )
    .await;
    // Listings show the reason, never the rule.
    let page = expect_json(
        app.get_auth("/v1/vat/aar?agent_id=mailer", &app.admin_key)
            .await,
        StatusCode::OK,
    )
    .await;
    let listed = page["records"].as_array().unwrap();
    assert!(
        listed
            .iter()
            .any(|r| r["deny_reason"] == "args_not_permitted")
    );
    assert!(!page.to_string().contains("pol["), "{page}");
}

#[tokio::test]
async fn a_delegation_keeps_every_rule_of_its_parent() {
    let app = TestApp::spawn().await;
    let root = mailer(&app).await;
    let child_body = |constraints: Value| {
        json!({"agent_id": "helper", "resources": ["mail:outbox"], "actions": ["send"],
               "constraints": constraints})
    };
    let parents_rule = root["claims"]["svc_constraints"]["args"][0].clone();
    assert!(parents_rule.is_object(), "{root}");
    // Left out, the parent's rules are inherited.
    let inherited = expect_json(
        app.delegate(&root, child_body(json!({}))).await,
        StatusCode::CREATED,
    )
    .await;
    assert_eq!(
        inherited["claims"]["svc_constraints"]["args"],
        json!([parents_rule])
    );
    expect_problem(
        act_with(
            &app,
            &inherited,
            "send",
            "mail:outbox",
            Some(json!({"to": ["eve@evil.test"], "count": 1})),
        )
        .await,
        StatusCode::FORBIDDEN,
        "args_not_permitted",
    )
    .await;
    // Dropped or changed, it is widening.
    let loosened = json!({"actions": ["send"], "resources": ["mail:*"], "pol": [
        ["all", ".to", ["like", ".", "*"]], ["<=", ".count", 5]]});
    for rules in [json!([loosened]), json!([{"pol": [["==", ".count", 1]]}])] {
        let problem = expect_problem(
            app.delegate(&root, child_body(json!({"args": rules})))
                .await,
            StatusCode::FORBIDDEN,
            "scope_widening",
        )
        .await;
        assert_eq!(
            problem["violations"][0]["code"], "args_rule_dropped",
            "{problem}"
        );
        assert_eq!(problem["violations"][0]["field"], "constraints.args");
    }
    // Kept, with one added, both bind the child.
    let added = json!({"actions": ["send"], "pol": [["<=", ".count", 1]]});
    let narrower = expect_json(
        app.delegate(&root, child_body(json!({"args": [parents_rule, added]})))
            .await,
        StatusCode::CREATED,
    )
    .await;
    let problem = expect_problem(
        act_with(
            &app,
            &narrower,
            "send",
            "mail:outbox",
            Some(json!({"to": ["a@example.com", "b@example.com"], "count": 2})),
        )
        .await,
        StatusCode::FORBIDDEN,
        "args_not_permitted",
    )
    .await;
    assert!(text(&problem["detail"]).contains("constraints.args[1].pol[0]"));
    expect_json(
        act_with(
            &app,
            &narrower,
            "send",
            "mail:outbox",
            Some(json!({"to": ["a@example.com"], "count": 1})),
        )
        .await,
        StatusCode::CREATED,
    )
    .await;
}

/// The largest compact token DESIGN §2 lets anyone mint.
const MAX_TOKEN_BYTES: usize = 8192;

#[tokio::test]
async fn a_chain_that_inherits_its_rules_stops_at_8_kib() {
    let app = TestApp::spawn().await;
    // Rules near the 4 KiB a grant may carry, and resources that bring the
    // root near 8 KiB: each delegation carries every rule again, and its
    // link to its parent, so a chain grows until a token would pass 8 KiB.
    let rules: Vec<Value> = (0..30)
        .map(|i| json!({"pol": [["!=", format!(".f{i:02}"), "v".repeat(100)]]}))
        .collect();
    let resources: Vec<String> = (0..9)
        .map(|i| format!("files:/srv/{}/{i}", "r".repeat(150)))
        .collect();
    let root = app
        .issue(json!({
            "developer_email": "dev@example.com", "agent_id": "deep-0",
            "resources": resources, "actions": ["read", "delegate"],
            "constraints": {"args": rules},
        }))
        .await;
    let mut parent = root;
    let mut minted = vec!["deep-0".to_owned()];
    let refusal = loop {
        assert!(text(&parent["compact_jwt"]).len() <= MAX_TOKEN_BYTES);
        assert_eq!(parent["claims"]["svc_constraints"]["args"], json!(rules));
        let agent_id = format!("deep-{}", minted.len());
        let response = app
            .delegate(
                &parent,
                json!({"agent_id": agent_id, "resources": resources,
                       "actions": ["read", "delegate"]}),
            )
            .await;
        if response.status() != StatusCode::CREATED {
            break response;
        }
        parent = response.json().await.expect("a token");
        minted.push(agent_id);
        assert!(minted.len() < 5, "no delegation was refused");
    };
    assert!(minted.len() >= 2, "the root's child fits: {minted:?}");
    expect_problem(refusal, StatusCode::UNPROCESSABLE_ENTITY, "token_too_large").await;
    // Nothing was written for the refused delegation.
    let tokens = expect_json(
        app.get_auth("/v1/vat/tokens", &app.admin_key).await,
        StatusCode::OK,
    )
    .await;
    let mut agents: Vec<String> = tokens["tokens"]
        .as_array()
        .expect("tokens")
        .iter()
        .map(|t| text(&t["agent_id"]).to_owned())
        .collect();
    agents.sort();
    assert_eq!(agents, minted);
}

/// The dashboard's token page shows the rules in words: a token's status
/// carries the constraints the token does, inherited ones included.
#[tokio::test]
async fn a_tokens_status_carries_every_rule_that_binds_it() {
    let app = TestApp::spawn().await;
    let root = mailer(&app).await;
    let child = expect_json(
        app.delegate(
            &root,
            json!({"agent_id": "helper", "resources": ["mail:outbox"], "actions": ["send"],
                   "constraints": {"require_approval": {"args": [[">", ".count", 3]]}}}),
        )
        .await,
        StatusCode::CREATED,
    )
    .await;
    let status = async |token: &Value| {
        let path = format!("/v1/vat/tokens/{}", text(&token["jti"]));
        expect_json(app.get_auth(&path, &app.admin_key).await, StatusCode::OK).await
    };
    let shown = status(&child).await;
    assert_eq!(
        shown["constraints"]["args"], root["claims"]["svc_constraints"]["args"],
        "{shown}"
    );
    assert_eq!(
        shown["constraints"]["require_approval"],
        json!({"args": [[">", ".count", 3]]})
    );
    let plain = app
        .issue(
            json!({"developer_email": "dev@example.com", "agent_id": "reader",
                      "resources": ["crm:*"], "actions": ["read"]}),
        )
        .await;
    let shown = status(&plain).await;
    assert!(shown.get("constraints").is_none(), "{shown}");
}

#[tokio::test]
async fn a_batch_is_judged_record_by_record() {
    let app = TestApp::spawn().await;
    let token = mailer(&app).await;
    let send = |args: Option<Value>| {
        let mut body = json!({"action": "send", "resource": "mail:outbox", "result": "success"});
        if let Some(args) = args {
            body["args"] = args;
        }
        body
    };
    let answer = expect_json(
        app.post_auth(
            "/v1/vat/record/actions",
            text(&token["compact_jwt"]),
            &json!({"records": [
                send(Some(json!({"to": ["a@example.com"], "count": 1}))),
                send(Some(json!({"to": ["eve@evil.test"], "count": 1}))),
                send(None),
                send(Some(json!({"to": ["b@example.com"], "count": 1}))),
            ]}),
        )
        .await,
        StatusCode::OK,
    )
    .await;
    let results = answer["results"].as_array().unwrap();
    let outcomes: Vec<(Value, Value)> = results
        .iter()
        .map(|r| (r["recorded"].clone(), r["code"].clone()))
        .collect();
    assert_eq!(
        outcomes,
        vec![
            (json!(true), Value::Null),
            (json!(false), json!("args_not_permitted")),
            (json!(false), json!("args_required")),
            (json!(true), Value::Null),
        ],
        "{answer}"
    );
    assert!(text(&results[1]["detail"]).contains("constraints.args[0].pol[0]"));
    let denied = record(&app, text(&results[1]["aar_id"])).await;
    assert_eq!(denied["args"], json!({"to": ["eve@evil.test"], "count": 1}));
}

/// A root token whose `pay` needs approval when the amount is over 100 —
/// or cannot be told.
async fn payer(app: &TestApp) -> Value {
    app.issue(json!({
        "developer_email": "dev@example.com",
        "agent_id": "payer",
        "resources": ["billing:*"],
        "actions": ["pay"],
        "constraints": {"require_approval": {"args": [[">", ".amount_usd", 100]]}},
    }))
    .await
}

#[tokio::test]
async fn an_approval_condition_that_holds_or_cannot_be_decided_asks_a_human() {
    let app = TestApp::spawn().await;
    let token = payer(&app).await;
    let ask = async |args: Option<Value>| {
        let mut body = json!({"action": "pay", "resource": "billing:invoice/7"});
        if let Some(args) = args {
            body["args"] = args;
        }
        app.post_auth("/v1/vat/authorize", text(&token["compact_jwt"]), &body)
            .await
    };
    let small = expect_json(ask(Some(json!({"amount_usd": 50}))).await, StatusCode::OK).await;
    assert_eq!(small["authorized"], true, "{small}");
    for args in [
        Some(json!({"amount_usd": 500})),
        Some(json!({"amount": 500})),
        Some(json!({"amount_usd": "50"})),
        None,
    ] {
        let waiting = expect_json(ask(args.clone()).await, StatusCode::ACCEPTED).await;
        assert_eq!(waiting["authorized"], false, "{args:?}");
        assert_eq!(waiting["approval"]["status"], "pending");
    }
    // Done without asking, it is refused.
    expect_problem(
        app.post_auth(
            "/v1/vat/record/action",
            text(&token["compact_jwt"]),
            &json!({"action": "pay", "resource": "billing:invoice/7", "result": "success",
                    "args": {"amount_usd": 500}}),
        )
        .await,
        StatusCode::FORBIDDEN,
        "approval_required",
    )
    .await;
    // The reviewer sees what they decide: the arguments, as given.
    let waiting = expect_json(
        ask(Some(
            json!({"amount_usd": 700, "memo": "<script>alert(1)</script>"}),
        ))
        .await,
        StatusCode::ACCEPTED,
    )
    .await;
    let approval = expect_json(
        app.get_auth(
            &format!(
                "/v1/vat/approvals/{}",
                text(&waiting["approval"]["approval_id"])
            ),
            &app.admin_key,
        )
        .await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(
        approval["args"],
        json!({"amount_usd": 700, "memo": "<script>alert(1)</script>"})
    );
    assert_eq!(
        approval["args_hash"],
        args_hash(r#"{"memo": "<script>alert(1)</script>", "amount_usd": 700}"#)
    );
}

#[tokio::test]
async fn records_keep_the_hash_of_the_arguments_and_redact_what_must_not_be_stored() {
    let app = TestApp::spawn_with(|config| {
        config.records.redact_args = vec![".password".to_owned(), ".cards[].number".to_owned()];
    })
    .await;
    let token = app.root("login", &["crm:*"], &["read"]).await;
    let given = r#"{"user": "ann", "password": "hunter2", "cards": [{"number": "4111", "exp": "12/30"}], "n": 1.0}"#;
    let recorded = expect_json(
        post_raw(
            &app,
            "/v1/vat/record/action",
            text(&token["compact_jwt"]),
            &format!(
                r#"{{"action": "read", "resource": "crm:lead/1", "result": "success", "args": {given}}}"#
            ),
        )
        .await,
        StatusCode::CREATED,
    )
    .await;
    let kept = record(&app, text(&recorded["aar_id"])).await;
    assert_eq!(
        kept["args"],
        json!({"user": "ann", "password": "[redacted]",
               "cards": [{"number": "[redacted]", "exp": "12/30"}], "n": 1})
    );
    // The hash is of the arguments as given (canonical: 1.0 is 1).
    assert_eq!(kept["args_hash"], args_hash(given));
    assert_eq!(
        kept["args_hash"],
        args_hash(
            r#"{"n": 1, "cards": [{"exp": "12/30", "number": "4111"}], "user": "ann", "password": "hunter2"}"#
        )
    );
    assert!(!kept.to_string().contains("hunter2"));
}

#[tokio::test]
async fn without_keep_args_arguments_last_only_until_the_approval_is_decided() {
    let app = TestApp::spawn_with(|config| config.records.keep_args = false).await;
    let token = payer(&app).await;
    let pay = |amount: u32| json!({"action": "pay", "resource": "billing:invoice/7", "args": {"amount_usd": amount}});
    let small = expect_json(
        app.post_auth("/v1/vat/authorize", text(&token["compact_jwt"]), &pay(5))
            .await,
        StatusCode::OK,
    )
    .await;
    let kept = record(&app, text(&small["aar_id"])).await;
    assert!(kept.get("args").is_none(), "{kept}");
    assert_eq!(kept["args_hash"], args_hash(r#"{"amount_usd": 5}"#));
    let waiting = expect_json(
        app.post_auth("/v1/vat/authorize", text(&token["compact_jwt"]), &pay(500))
            .await,
        StatusCode::ACCEPTED,
    )
    .await;
    let id = text(&waiting["approval"]["approval_id"]).to_owned();
    let shown = expect_json(
        app.get_auth(&format!("/v1/vat/approvals/{id}"), &app.admin_key)
            .await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(shown["args"], json!({"amount_usd": 500}));
    expect_json(
        app.post_auth(
            &format!("/v1/vat/approvals/{id}/decision"),
            &app.admin_key,
            &json!({"decision": "approve"}),
        )
        .await,
        StatusCode::OK,
    )
    .await;
    let decided = record(&app, text(&waiting["aar_id"])).await;
    assert!(decided.get("args").is_none(), "{decided}");
    assert_eq!(decided["args_hash"], args_hash(r#"{"amount_usd": 500}"#));
}

/// The upgrade to schema 11, on either engine: a database of the release
/// before (no argument columns) gains them, its records read without
/// arguments, and new records keep theirs.
#[tokio::test]
async fn the_upgrade_to_schema_11_adds_the_argument_columns() {
    let app = TestApp::spawn().await;
    let token = mailer(&app).await;
    let before = expect_json(
        act_with(&app, &token, "read", "crm:lead/1", None).await,
        StatusCode::CREATED,
    )
    .await;
    let dir = app.stop().await;
    crate::helpers::with_database(dir.path(), |conn| {
        conn.execute_batch(
            "ALTER TABLE records DROP COLUMN args_hash; ALTER TABLE records DROP COLUMN args",
        )
        .unwrap();
        conn.execute_batch(crate::helpers::DROP_OAUTH_TABLES)
            .unwrap();
        crate::helpers::set_schema_version(conn, 10);
    });
    let app = TestApp::spawn_in(dir, |_| {}).await;
    let old = record(&app, text(&before["aar_id"])).await;
    assert!(
        old.get("args_hash").is_none() && old.get("args").is_none(),
        "{old}"
    );
    let args = json!({"to": ["a@example.com"], "count": 1});
    let after = expect_json(
        act_with(&app, &token, "send", "mail:outbox", Some(args.clone())).await,
        StatusCode::CREATED,
    )
    .await;
    let new = record(&app, text(&after["aar_id"])).await;
    assert_eq!(new["args"], args);
    assert_eq!(new["args_hash"], args_hash(&args.to_string()));
}

#[tokio::test]
async fn prefix_patterns_grant_a_folder_and_no_path_escapes_it() {
    let app = TestApp::spawn().await;
    let body = |resources: Value| {
        json!({"developer_email": "dev@example.com", "agent_id": "files",
               "resources": resources, "actions": ["read", "delegate"]})
    };
    for (bad, code) in [
        (
            "files:/srv/reports/../../etc/shadow",
            "invalid_resource_pattern",
        ),
        ("files:/srv//reports/*", "invalid_resource_pattern"),
        ("files:/srv/%2e%2e/*", "invalid_resource_pattern"),
        ("files:/srv/reports*", "invalid_resource_pattern"),
    ] {
        let problem = expect_problem(
            app.post_auth(
                "/v1/vat/issue/l1",
                &app.admin_key,
                &body(json!(["crm:*", "files:/srv/reports/*", bad])),
            )
            .await,
            StatusCode::UNPROCESSABLE_ENTITY,
            code,
        )
        .await;
        assert_eq!(problem["field"], "resources[2]", "{bad}: {problem}");
    }
    let token = app
        .issue(body(json!(["crm:contact/*", "files:/srv/reports/*"])))
        .await;
    for resource in [
        "files:/srv/reports/q3.pdf",
        "files:/srv/reports/2026/q1.pdf",
        "crm:contact/42",
    ] {
        expect_json(
            act_with(&app, &token, "read", resource, None).await,
            StatusCode::CREATED,
        )
        .await;
    }
    expect_problem(
        act_with(&app, &token, "read", "files:/srv/other.pdf", None).await,
        StatusCode::FORBIDDEN,
        "resource_not_permitted",
    )
    .await;
    for escape in [
        "files:/srv/reports/../../etc/shadow",
        "files:/srv/reports/./x",
        "files:/srv/reports//x",
        "files:/srv/reports/%2e%2e/x",
        "files:/srv/reports/..%2Fx",
    ] {
        let problem = expect_problem(
            act_with(&app, &token, "read", escape, None).await,
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_resource",
        )
        .await;
        assert_eq!(problem["field"], "resource", "{escape}");
    }
    // Narrowing: a child prefix extending the parent's is covered; one
    // wider is not.
    expect_json(
        app.delegate(
            &token,
            json!({"agent_id": "reader", "resources": ["files:/srv/reports/2026/*", "crm:contact/42"],
                   "actions": ["read"]}),
        )
        .await,
        StatusCode::CREATED,
    )
    .await;
    let problem = expect_problem(
        app.delegate(
            &token,
            json!({"agent_id": "reader", "resources": ["files:/srv/*"], "actions": ["read"]}),
        )
        .await,
        StatusCode::FORBIDDEN,
        "scope_widening",
    )
    .await;
    assert_eq!(problem["violations"][0]["code"], "resource_not_covered");
}

//! AuthZEN (DESIGN.md section 18): a gateway's key asks for decisions on
//! agents' acts at `/v1/access/evaluation(s)`. The shapes are the
//! specification's own examples (OpenID AuthZEN Authorization API 1.0);
//! the decisions `authorize`'s, recorded once as records of their own
//! kind; retries by `X-Request-ID` record nothing; an approval is used
//! once; anything that is not the agent's token is refused.

use reqwest::{Response, StatusCode};
use serde_json::{Value, json};

use crate::helpers::{Holder, TestApp, expect_json, expect_problem, text};

const EVALUATION: &str = "/v1/access/evaluation";
const EVALUATIONS: &str = "/v1/access/evaluations";

/// A gateway key of the default organisation.
async fn gateway(app: &TestApp) -> String {
    app.key(&app.admin_key, "gateway", None).await
}

/// Posts `body` to `path` with the gateway's key and, when given, an
/// `X-Request-ID`.
async fn ask(
    app: &TestApp,
    key: &str,
    path: &str,
    request_id: Option<&str>,
    body: &Value,
) -> Response {
    let mut request = app.client.post(app.url(path)).bearer_auth(key).json(body);
    if let Some(id) = request_id {
        request = request.header("x-request-id", id);
    }
    request.send().await.unwrap()
}

/// The decision of one evaluation, checked to have the specification's
/// shape: a boolean `decision` and, if any, an object `context`.
async fn decision(response: Response) -> Value {
    let body = expect_json(response, StatusCode::OK).await;
    assert!(body["decision"].is_boolean(), "{body}");
    assert!(body.get("context").is_none_or(Value::is_object), "{body}");
    body
}

/// The subject for a token.
fn subject(token: &Value) -> Value {
    json!({"type": "mandate_vat", "id": text(&token["compact_jwt"])})
}

/// Every record of `agent`, newest first.
async fn records(app: &TestApp, agent: &str) -> Vec<Value> {
    let page = expect_json(
        app.get_auth(&format!("/v1/vat/aar?agent_id={agent}"), &app.admin_key)
            .await,
        StatusCode::OK,
    )
    .await;
    page["records"].as_array().unwrap().clone()
}

#[tokio::test]
async fn metadata_names_the_public_url_never_the_host_header() {
    let app =
        TestApp::spawn_with(|c| c.public_url = Some("https://mandate.example/api/".into())).await;
    let response = app
        .client
        .get(app.url("/.well-known/authzen-configuration"))
        .header("host", "attacker.example")
        .send()
        .await
        .unwrap();
    assert_eq!(
        response.headers()["content-type"].to_str().unwrap(),
        "application/json"
    );
    let metadata = expect_json(response, StatusCode::OK).await;
    assert_eq!(
        metadata,
        json!({
            "policy_decision_point": "https://mandate.example/api",
            "access_evaluation_endpoint": "https://mandate.example/api/v1/access/evaluation",
            "access_evaluations_endpoint": "https://mandate.example/api/v1/access/evaluations",
        })
    );
}

#[tokio::test]
async fn the_specifications_examples_are_read_and_answered_in_its_shapes() {
    let app = TestApp::spawn().await;
    let key = gateway(&app).await;
    // §6.1's example, as written: a subject that is no agent token is
    // refused, as a decision, not an error; its unknown members ignored.
    let example = json!({
        "subject": {"type": "user", "id": "alice@example.com"},
        "resource": {"type": "account", "id": "123"},
        "action": {"name": "can_read", "properties": {"method": "GET"}},
        "context": {"time": "1985-10-26T01:22-07:00"},
    });
    let answer = decision(ask(&app, &key, EVALUATION, None, &example).await).await;
    assert_eq!(answer["decision"], false);
    assert_eq!(answer["context"]["reason"], "subject_unsupported");

    // §7.1.2.1's example: `read` of documents 1, 2 and 3 under each
    // semantic, for a token that may read 1 and 3.
    let token = app
        .root("reader", &["document:1", "document:3"], &["read"])
        .await;
    let request = |semantic: &str| {
        json!({
            "subject": subject(&token),
            "action": {"name": "read"},
            "options": {"evaluations_semantic": semantic},
            "evaluations": [
                {"resource": {"type": "document", "id": "1"}},
                {"resource": {"type": "document", "id": "2"}},
                {"resource": {"type": "document", "id": "3"}},
            ],
        })
    };
    let decisions = |answer: &Value| -> Vec<bool> {
        assert!(answer.get("decision").is_none(), "{answer}");
        answer["evaluations"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d["decision"].as_bool().unwrap())
            .collect()
    };
    for (semantic, expected) in [
        ("execute_all", vec![true, false, true]),
        ("deny_on_first_deny", vec![true, false]),
        ("permit_on_first_permit", vec![true]),
    ] {
        let answer = expect_json(
            ask(&app, &key, EVALUATIONS, None, &request(semantic)).await,
            StatusCode::OK,
        )
        .await;
        assert_eq!(decisions(&answer), expected, "{semantic}: {answer}");
        if semantic != "permit_on_first_permit" {
            assert_eq!(
                answer["evaluations"][1]["context"]["reason"], "resource_not_permitted",
                "{answer}"
            );
        }
    }
    // Without `options`, execute_all; without `evaluations`, one decision
    // of the top-level members.
    let mut plain = request("execute_all");
    plain.as_object_mut().unwrap().remove("options");
    let answer = expect_json(
        ask(&app, &key, EVALUATIONS, None, &plain).await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(decisions(&answer), vec![true, false, true]);
    let one = json!({
        "subject": subject(&token),
        "action": {"name": "read"},
        "resource": {"type": "document", "id": "3"},
    });
    let answer = decision(ask(&app, &key, EVALUATIONS, None, &one).await).await;
    assert_eq!(answer["decision"], true);

    // §7.1's first example: every evaluation whole, no defaults (its
    // `context.time` ignored).
    let whole = |id: &str| {
        json!({
            "subject": subject(&token),
            "action": {"name": "read"},
            "resource": {"type": "document", "id": id},
            "context": {"time": "2024-05-31T15:22-07:00"},
        })
    };
    let answer = expect_json(
        ask(
            &app,
            &key,
            EVALUATIONS,
            None,
            &json!({"evaluations": [whole("1"), whole("2"), whole("3")]}),
        )
        .await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(decisions(&answer), vec![true, false, true]);
    // §7.1.1: an item's member replaces the default whole; the context too.
    let overridden = json!({
        "subject": subject(&token),
        "action": {"name": "read"},
        "context": {"args": {"n": 1}},
        "evaluations": [
            {"resource": {"type": "document", "id": "1"}},
            {"action": {"name": "write"}, "resource": {"type": "document", "id": "1"}},
            {"resource": {"type": "document", "id": "3"}, "context": {}},
        ],
    });
    let answer = expect_json(
        ask(&app, &key, EVALUATIONS, None, &overridden).await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(decisions(&answer), vec![true, false, true]);
    assert_eq!(
        answer["evaluations"][1]["context"]["reason"],
        "action_not_permitted"
    );
    let kept = records(&app, "reader").await;
    let with_args = kept.iter().filter(|r| r["args_hash"].is_string()).count();
    let without = kept.iter().filter(|r| r["args_hash"].is_null()).count();
    assert!(with_args >= 2 && without >= 1, "{kept:?}");
}

#[tokio::test]
async fn a_traefik_shaped_request_is_decided_recorded_and_its_id_echoed() {
    let app = TestApp::spawn().await;
    let key = gateway(&app).await;
    let token = app
        .issue(json!({
            "developer_email": "dev@example.com",
            "agent_id": "mailer",
            "resources": ["mcp:mail/*"],
            "actions": ["call"],
            "constraints": {"args": [{"pol": [["like", ".to", "*@example.com"]]}]},
        }))
        .await;
    // What the authzen-mcp middleware of docs/authzen.md sends for a
    // `tools/call` of `send_email`: the agent's bearer token as the
    // subject, `call` as the action, the server and tool as the
    // resource, the tool's arguments as `context.args`.
    let call = |to: &str| {
        json!({
            "subject": {"type": "mandate_vat", "id": text(&token["compact_jwt"])},
            "action": {"name": "call"},
            "resource": {"type": "mcp", "id": "mail/send_email"},
            "context": {"args": {"to": to, "subject": "hi"}},
        })
    };
    let response = ask(
        &app,
        &key,
        EVALUATION,
        Some("bfe9eb29-ab87-4ca3-be83-a1d5d8305716"),
        &call("ann@example.com"),
    )
    .await;
    assert_eq!(
        response.headers()["x-request-id"].to_str().unwrap(),
        "bfe9eb29-ab87-4ca3-be83-a1d5d8305716"
    );
    let permitted = decision(response).await;
    assert_eq!(permitted["decision"], true, "{permitted}");
    let aar_id = text(&permitted["context"]["aar_id"]).to_owned();
    let record = expect_json(
        app.get_auth(&format!("/v1/vat/aar/{aar_id}"), &app.admin_key)
            .await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(record["origin"], "evaluation");
    assert_eq!(record["status"], "completed");
    assert_eq!(record["resource"], "mcp:mail/send_email");
    assert!(record["args_hash"].as_str().unwrap().starts_with("sha256:"));

    // The argument rules apply exactly as at `authorize`.
    let refused =
        decision(ask(&app, &key, EVALUATION, None, &call("eve@evil.example")).await).await;
    assert_eq!(refused["decision"], false);
    assert_eq!(refused["context"]["reason"], "args_not_permitted");
    let aar_id = text(&refused["context"]["aar_id"]);
    let record = expect_json(
        app.get_auth(&format!("/v1/vat/aar/{aar_id}"), &app.admin_key)
            .await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(
        (record["origin"].clone(), record["status"].clone()),
        (json!("evaluation"), json!("denied"))
    );
    let mut missing = call("x");
    missing["context"] = json!({});
    let refused = decision(ask(&app, &key, EVALUATION, None, &missing).await).await;
    assert_eq!(refused["context"]["reason"], "args_required");
    // Nothing stays pending.
    assert!(
        records(&app, "mailer")
            .await
            .iter()
            .all(|r| r["status"] != "pending")
    );
}

#[tokio::test]
async fn a_retry_answers_the_same_and_budgets_count_each_act_once() {
    let app = TestApp::spawn().await;
    let key = gateway(&app).await;
    let token = app
        .issue(json!({
            "developer_email": "dev@example.com",
            "agent_id": "payer",
            "resources": ["billing:*"],
            "actions": ["pay"],
            "constraints": {"max_actions": 2, "max_spend_usd": 10},
        }))
        .await;
    let pay = |usd: f64| {
        json!({
            "subject": subject(&token),
            "action": {"name": "pay"},
            "resource": {"type": "billing", "id": "invoice/7"},
            "context": {"spend_usd": usd},
        })
    };
    let first = decision(ask(&app, &key, EVALUATION, Some("r1"), &pay(4.0)).await).await;
    assert_eq!(first["decision"], true);
    for _ in 0..3 {
        let again = decision(ask(&app, &key, EVALUATION, Some("r1"), &pay(4.0)).await).await;
        assert_eq!(again, first);
    }
    assert_eq!(records(&app, "payer").await.len(), 1);
    // The same id with another body is another request: refused.
    let reused = expect_problem(
        ask(&app, &key, EVALUATION, Some("r1"), &pay(5.0)).await,
        StatusCode::UNPROCESSABLE_ENTITY,
        "idempotency_key_reused",
    )
    .await;
    assert_eq!(reused["field"], "X-Request-ID");
    // Spend counts once: 4 + 7 is over 10.
    let over = decision(ask(&app, &key, EVALUATION, Some("r2"), &pay(7.0)).await).await;
    assert_eq!(over["context"]["reason"], "budget_max_spend_usd", "{over}");
    let second = decision(ask(&app, &key, EVALUATION, Some("r3"), &pay(4.0)).await).await;
    assert_eq!(second["decision"], true);
    // Two acts permitted: max_actions is reached.
    let third = decision(ask(&app, &key, EVALUATION, Some("r4"), &pay(0.0)).await).await;
    assert_eq!(third["context"]["reason"], "budget_max_actions", "{third}");
    let kept = records(&app, "payer").await;
    assert_eq!(kept.len(), 4);
    assert_eq!(
        kept.iter().filter(|r| r["status"] == "completed").count(),
        2
    );
    // A batch is one request: its retry replays every decision.
    let batch = json!({
        "subject": subject(&token),
        "action": {"name": "pay"},
        "evaluations": [{"resource": {"type": "billing", "id": "a"}}, {"resource": {"type": "billing", "id": "b"}}],
    });
    let answer = expect_json(
        ask(&app, &key, EVALUATIONS, Some("b1"), &batch).await,
        StatusCode::OK,
    )
    .await;
    let again = expect_json(
        ask(&app, &key, EVALUATIONS, Some("b1"), &batch).await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(answer, again);
    assert_eq!(records(&app, "payer").await.len(), 6);
}

#[tokio::test]
async fn an_approved_act_is_permitted_once_to_the_first_matching_evaluation() {
    let app = TestApp::spawn().await;
    let key = gateway(&app).await;
    let reviewer = app.key(&app.admin_key, "reviewer", None).await;
    let token = app
        .issue(json!({
            "developer_email": "dev@example.com",
            "agent_id": "gated",
            "resources": ["billing:*"],
            "actions": ["pay"],
            "constraints": {"require_approval": {"actions": ["pay"]}},
        }))
        .await;
    let pay = |amount: u64| {
        json!({
            "subject": subject(&token),
            "action": {"name": "pay"},
            "resource": {"type": "billing", "id": "invoice/7"},
            "context": {"args": {"amount": amount}},
        })
    };
    let waiting = decision(ask(&app, &key, EVALUATION, None, &pay(40)).await).await;
    assert_eq!(waiting["decision"], false);
    assert_eq!(waiting["context"]["reason"], "approval_required");
    let approval = &waiting["context"]["approval"];
    let id = text(&approval["approval_id"]).to_owned();
    assert_eq!(approval["status"], "pending");
    assert!(text(&approval["url"]).ends_with(&format!("/v1/vat/approvals/{id}")));
    // Asked again while it waits: the same approval, nothing new written.
    let again = decision(ask(&app, &key, EVALUATION, None, &pay(40)).await).await;
    assert_eq!(again["context"]["approval"]["approval_id"], id.as_str());
    assert_eq!(records(&app, "gated").await.len(), 1);
    // Other arguments are another act: another approval.
    let other = decision(ask(&app, &key, EVALUATION, None, &pay(41)).await).await;
    assert_ne!(other["context"]["approval"]["approval_id"], id.as_str());

    expect_json(
        app.post_auth(
            &format!("/v1/vat/approvals/{id}/decision"),
            &reviewer,
            &json!({"decision": "approve"}),
        )
        .await,
        StatusCode::OK,
    )
    .await;
    let permitted = decision(ask(&app, &key, EVALUATION, None, &pay(40)).await).await;
    assert_eq!(permitted["decision"], true, "{permitted}");
    assert_eq!(permitted["context"]["aar_id"], waiting["context"]["aar_id"]);
    let record = expect_json(
        app.get_auth(
            &format!("/v1/vat/aar/{}", text(&permitted["context"]["aar_id"])),
            &app.admin_key,
        )
        .await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(
        (record["status"].clone(), record["origin"].clone()),
        (json!("completed"), json!("evaluation"))
    );
    // Used once: the next asks anew.
    let next = decision(ask(&app, &key, EVALUATION, None, &pay(40)).await).await;
    assert_eq!(next["decision"], false);
    assert_eq!(next["context"]["reason"], "approval_required");
    assert_ne!(next["context"]["approval"]["approval_id"], id.as_str());
}

#[tokio::test]
async fn only_a_verifiable_token_of_the_gateways_organisation_is_a_subject() {
    let app = TestApp::spawn().await;
    let key = gateway(&app).await;
    let token = app.root("bot", &["crm:*"], &["read"]).await;
    let ask_for = |id: &str, kind: &str| {
        json!({
            "subject": {"type": kind, "id": id},
            "action": {"name": "read"},
            "resource": {"type": "crm", "id": "contact/1"},
        })
    };
    let reason = |answer: &Value| answer["context"]["reason"].as_str().unwrap().to_owned();
    let compact = text(&token["compact_jwt"]);
    let permitted = decision(
        ask(
            &app,
            &key,
            EVALUATION,
            None,
            &ask_for(compact, "mandate_vat"),
        )
        .await,
    )
    .await;
    assert_eq!(permitted["decision"], true);
    // A bare jti names a token and proves nothing.
    let jti = decision(
        ask(
            &app,
            &key,
            EVALUATION,
            None,
            &ask_for(text(&token["jti"]), "mandate_vat"),
        )
        .await,
    )
    .await;
    assert_eq!(jti["decision"], false);
    assert!(!reason(&jti).is_empty());
    // A token with a forged signature, another type, an API key.
    let forged = format!("{}AAAA", &compact[..compact.len() - 4]);
    for (id, kind) in [
        (forged.as_str(), "mandate_vat"),
        (compact, "user"),
        (key.as_str(), "mandate_vat"),
        ("", "mandate_vat"),
    ] {
        let answer = decision(ask(&app, &key, EVALUATION, None, &ask_for(id, kind)).await).await;
        assert_eq!(answer["decision"], false, "{kind} {answer}");
    }
    assert_eq!(
        reason(&decision(ask(&app, &key, EVALUATION, None, &ask_for(compact, "user")).await).await),
        "subject_unsupported"
    );
    // Another organisation's gateway sees no such token.
    let (_, beta_owner) = app.org("beta").await;
    let beta_gateway = app.key(&beta_owner, "gateway", None).await;
    let answer = decision(
        ask(
            &app,
            &beta_gateway,
            EVALUATION,
            None,
            &ask_for(compact, "mandate_vat"),
        )
        .await,
    )
    .await;
    assert_eq!(reason(&answer), "token_inactive");
    // A resource that cannot be Mandate's.
    let mut bad = ask_for(compact, "mandate_vat");
    bad["resource"] = json!({"type": "crm:contact", "id": "1"});
    let answer = decision(ask(&app, &key, EVALUATION, None, &bad).await).await;
    assert_eq!(reason(&answer), "invalid_resource");
    bad["resource"] = json!({"type": "crm", "id": "../etc"});
    let answer = decision(ask(&app, &key, EVALUATION, None, &bad).await).await;
    assert_eq!(answer["decision"], false);
    // Only the permitted evaluation and nothing of the refused subjects
    // was recorded.
    assert_eq!(records(&app, "bot").await.len(), 1);
}

#[tokio::test]
async fn a_bound_token_needs_its_proof_for_the_evaluation_request_used_once() {
    let app = TestApp::spawn().await;
    let key = gateway(&app).await;
    let holder = Holder::new();
    let token = app
        .issue(json!({
            "developer_email": "dev@example.com",
            "agent_id": "bound",
            "resources": ["crm:*"],
            "actions": ["read"],
            "holder_key": holder.jwk(),
        }))
        .await;
    let compact = text(&token["compact_jwt"]);
    let body = |proof: Option<&str>| {
        let mut body = json!({
            "subject": subject(&token),
            "action": {"name": "read"},
            "resource": {"type": "crm", "id": "contact/1"},
        });
        if let Some(proof) = proof {
            body["context"] = json!({"dpop": proof});
        }
        body
    };
    let without = decision(ask(&app, &key, EVALUATION, None, &body(None)).await).await;
    assert_eq!(without["context"]["reason"], "dpop_required");
    // A proof for the tool's request is not one for this request.
    let elsewhere = holder.proof("POST", "https://tools.example/mcp", compact);
    let answer = decision(ask(&app, &key, EVALUATION, None, &body(Some(&elsewhere))).await).await;
    assert_eq!(answer["context"]["reason"], "dpop_invalid");
    let proof = holder.proof("POST", &app.url(EVALUATION), compact);
    let answer = decision(ask(&app, &key, EVALUATION, None, &body(Some(&proof))).await).await;
    assert_eq!(answer["decision"], true, "{answer}");
    let replayed = decision(ask(&app, &key, EVALUATION, None, &body(Some(&proof))).await).await;
    assert_eq!(replayed["context"]["reason"], "dpop_invalid");
    // Another key's proof.
    let thief = Holder::new().proof("POST", &app.url(EVALUATION), compact);
    let answer = decision(ask(&app, &key, EVALUATION, None, &body(Some(&thief))).await).await;
    assert_eq!(answer["decision"], false);
    // One proof for one evaluations request, shared by its evaluations
    // through the default context; used up with it.
    let proof = holder.proof("POST", &app.url(EVALUATIONS), compact);
    let batch = json!({
        "subject": subject(&token),
        "action": {"name": "read"},
        "context": {"dpop": proof},
        "evaluations": [
            {"resource": {"type": "crm", "id": "contact/1"}},
            {"resource": {"type": "crm", "id": "contact/2"}},
        ],
    });
    let answer = expect_json(
        ask(&app, &key, EVALUATIONS, None, &batch).await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(answer["evaluations"][0]["decision"], true, "{answer}");
    assert_eq!(answer["evaluations"][1]["decision"], true, "{answer}");
    let again = expect_json(
        ask(&app, &key, EVALUATIONS, None, &batch).await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(again["evaluations"][0]["context"]["reason"], "dpop_invalid");
}

#[tokio::test]
async fn only_gateway_and_owner_keys_may_ask_and_a_gateway_key_nothing_else() {
    let app = TestApp::spawn().await;
    let key = gateway(&app).await;
    let token = app.root("bot", &["crm:*"], &["read"]).await;
    let body = json!({
        "subject": subject(&token),
        "action": {"name": "read"},
        "resource": {"type": "crm", "id": "contact/1"},
    });
    expect_problem(
        app.post(EVALUATION, &body).await,
        StatusCode::UNAUTHORIZED,
        "unauthorized",
    )
    .await;
    for role in ["developer", "reviewer", "auditor"] {
        let other = app
            .key(&app.admin_key, role, Some(&format!("{role}@example.com")))
            .await;
        expect_problem(
            ask(&app, &other, EVALUATION, None, &body).await,
            StatusCode::FORBIDDEN,
            "role_forbidden",
        )
        .await;
        expect_problem(
            ask(&app, &other, EVALUATIONS, None, &body).await,
            StatusCode::FORBIDDEN,
            "role_forbidden",
        )
        .await;
    }
    decision(ask(&app, &app.admin_key, EVALUATION, None, &body).await).await;
    // The gateway's key as an agent's credential, and on API-key calls.
    let jti = text(&token["jti"]);
    for (path, body) in [
        (
            "/v1/vat/authorize",
            json!({"vat_jti": jti, "action": "read", "resource": "crm:x"}),
        ),
        (
            "/v1/vat/record/action",
            json!({"vat_jti": jti, "action": "read", "resource": "crm:x", "result": "success"}),
        ),
        (
            "/v1/vat/delegate",
            json!({"agent_id": "sub", "resources": ["crm:x"], "actions": ["read"]}),
        ),
    ] {
        let status = app.post_auth(path, &key, &body).await.status();
        assert!(
            status == StatusCode::UNAUTHORIZED || status == StatusCode::FORBIDDEN,
            "{path}: {status}"
        );
    }
    assert_eq!(records(&app, "bot").await.len(), 1);
}

#[tokio::test]
async fn bad_requests_are_400_problems() {
    let app = TestApp::spawn().await;
    let key = gateway(&app).await;
    let token = app.root("bot", &["crm:*"], &["read"]).await;
    let full = json!({
        "subject": subject(&token),
        "action": {"name": "read"},
        "resource": {"type": "crm", "id": "contact/1"},
    });
    for member in ["subject", "action", "resource"] {
        let mut body = full.clone();
        body.as_object_mut().unwrap().remove(member);
        let problem = expect_problem(
            ask(&app, &key, EVALUATION, None, &body).await,
            StatusCode::BAD_REQUEST,
            "missing_field",
        )
        .await;
        assert_eq!(problem["field"], member);
        expect_problem(
            ask(&app, &key, EVALUATIONS, None, &body).await,
            StatusCode::BAD_REQUEST,
            "missing_field",
        )
        .await;
    }
    for body in [
        json!({"subject": 5, "action": {"name": "read"}, "resource": {"type": "crm", "id": "1"}}),
        json!({"subject": subject(&token), "action": {}, "resource": {"type": "crm", "id": "1"}}),
        json!({"subject": subject(&token), "action": {"name": "read"}, "resource": {"type": "crm", "id": "1"}, "context": {"spend_usd": "many"}}),
    ] {
        let response = ask(&app, &key, EVALUATION, None, &body).await;
        assert_eq!(response.status(), StatusCode::BAD_REQUEST, "{body}");
    }
    // What Mandate's rules refuse in a well-formed request is a decision.
    let mut listed_args = full.clone();
    listed_args["context"] = json!({"args": [1]});
    let answer = decision(ask(&app, &key, EVALUATION, None, &listed_args).await).await;
    assert_eq!(answer["decision"], false);
    let item_without_action = json!({
        "subject": subject(&token),
        "evaluations": [{"resource": {"type": "crm", "id": "1"}}],
    });
    let problem = expect_problem(
        ask(&app, &key, EVALUATIONS, None, &item_without_action).await,
        StatusCode::BAD_REQUEST,
        "missing_field",
    )
    .await;
    assert_eq!(problem["field"], "evaluations[0].action");
    let unknown_semantic = json!({
        "subject": subject(&token), "action": {"name": "read"},
        "options": {"evaluations_semantic": "first_come"},
        "evaluations": [{"resource": {"type": "crm", "id": "1"}}],
    });
    let status = ask(&app, &key, EVALUATIONS, None, &unknown_semantic)
        .await
        .status();
    assert_eq!(status, StatusCode::BAD_REQUEST);
    let too_many = json!({
        "subject": subject(&token), "action": {"name": "read"},
        "evaluations": vec![json!({"resource": {"type": "crm", "id": "1"}}); 1001],
    });
    expect_problem(
        ask(&app, &key, EVALUATIONS, None, &too_many).await,
        StatusCode::BAD_REQUEST,
        "list_too_long",
    )
    .await;
    let long_id = "x".repeat(256);
    expect_problem(
        ask(&app, &key, EVALUATION, Some(&long_id), &full).await,
        StatusCode::BAD_REQUEST,
        "invalid_request_id",
    )
    .await;
    let not_json = app
        .client
        .post(app.url(EVALUATION))
        .bearer_auth(&key)
        .header("content-type", "application/json")
        .body("{\"subject\":")
        .send()
        .await
        .unwrap();
    expect_problem(not_json, StatusCode::BAD_REQUEST, "malformed_json").await;
    assert!(records(&app, "bot").await.is_empty());
}

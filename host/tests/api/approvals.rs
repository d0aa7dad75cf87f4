//! Approval before the act, over HTTP: an action a grant requires approval
//! for waits (202) until a reviewer or an owner says yes or no, or time
//! runs out — even across a restart; nobody else decides, least of all the
//! agent; and doing it without asking is refused.

use std::time::{Duration, Instant};

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::helpers::{TestApp, expect_json, expect_problem, text};

/// A root token for `agent` whose `pay` needs approval, as does any spend
/// over $100, within a $500 budget.
async fn guarded_root(app: &TestApp, agent: &str) -> Value {
    app.issue(json!({
        "developer_email": "dev@example.com",
        "agent_id": agent,
        "resources": ["billing:*"],
        "actions": ["read", "pay", "delegate"],
        "constraints": {
            "max_spend_usd": 500,
            "require_approval": {"actions": ["pay"], "spend_over_usd": 100},
        },
    }))
    .await
}

/// `authorize` of `pay` with the token itself; the answer.
async fn ask(app: &TestApp, token: &Value, action: &str, spend: f64) -> reqwest::Response {
    app.post_auth(
        "/v1/vat/authorize",
        text(&token["compact_jwt"]),
        &json!({"action": action, "resource": "billing:invoice/7", "spend_usd": spend}),
    )
    .await
}

/// Asks for `pay` and expects to wait: the approval's id.
async fn awaiting(app: &TestApp, token: &Value, spend: f64) -> (String, String) {
    let answer = expect_json(ask(app, token, "pay", spend).await, StatusCode::ACCEPTED).await;
    assert_eq!(answer["authorized"], false);
    assert_eq!(answer["approval"]["status"], "pending");
    assert!(answer.get("reason").is_none(), "{answer}");
    let id = text(&answer["approval"]["approval_id"]).to_owned();
    assert!(id.starts_with("apr_"), "{id}");
    (id, text(&answer["aar_id"]).to_owned())
}

async fn decide(app: &TestApp, key: &str, id: &str, decision: &str) -> reqwest::Response {
    app.post_auth(
        &format!("/v1/vat/approvals/{id}/decision"),
        key,
        &json!({"decision": decision, "note": "checked the invoice"}),
    )
    .await
}

async fn approval(app: &TestApp, bearer: &str, id: &str, wait: u64) -> Value {
    expect_json(
        app.get_auth(&format!("/v1/vat/approvals/{id}?wait={wait}"), bearer)
            .await,
        StatusCode::OK,
    )
    .await
}

async fn record(app: &TestApp, aar_id: &str) -> Value {
    expect_json(
        app.get_auth(&format!("/v1/vat/aar/{aar_id}"), &app.admin_key)
            .await,
        StatusCode::OK,
    )
    .await
}

async fn complete(app: &TestApp, token: &Value, aar_id: &str) -> reqwest::Response {
    app.post_auth(
        &format!("/v1/vat/aar/{aar_id}/complete"),
        text(&token["compact_jwt"]),
        &json!({"result": "success", "spend_usd": 40}),
    )
    .await
}

#[tokio::test]
async fn a_reviewer_approves_and_the_waiting_agent_goes_on() {
    let app = TestApp::spawn().await;
    let reviewer = app.key(&app.admin_key, "reviewer", None).await;
    let token = guarded_root(&app, "billing-bot").await;
    let (id, aar_id) = awaiting(&app, &token, 40.0).await;
    assert_eq!(record(&app, &aar_id).await["status"], "awaiting_approval");
    // Nothing is done before the yes.
    expect_problem(
        complete(&app, &token, &aar_id).await,
        StatusCode::CONFLICT,
        "approval_pending",
    )
    .await;

    // The agent waits with its own token; the reviewer's yes ends the wait.
    let waiting = {
        let client = app.client.clone();
        let url = app.url(&format!("/v1/vat/approvals/{id}?wait=20"));
        let bearer = text(&token["compact_jwt"]).to_owned();
        tokio::spawn(async move {
            let started = Instant::now();
            let body: Value = client
                .get(url)
                .bearer_auth(bearer)
                .send()
                .await
                .unwrap()
                .json()
                .await
                .unwrap();
            (body, started.elapsed())
        })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    let decided = expect_json(
        decide(&app, &reviewer, &id, "approve").await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(decided["status"], "approved");
    assert_eq!(decided["note"], "checked the invoice");
    assert!(text(&decided["decided_by"]).starts_with("key_"));
    assert_eq!(decided["record_status"], "pending");
    assert_eq!(
        decided["chain"],
        json!([{"agent_id": "agent:billing-bot", "delegation_depth": 0}])
    );
    let (seen, waited) = waiting.await.unwrap();
    assert_eq!(seen["status"], "approved");
    assert!(
        waited < Duration::from_secs(10),
        "woken by the decision, {waited:?}"
    );

    let completed = expect_json(complete(&app, &token, &aar_id).await, StatusCode::OK).await;
    assert_eq!(completed["status"], "completed");
    // Decided once.
    expect_problem(
        decide(&app, &reviewer, &id, "deny").await,
        StatusCode::CONFLICT,
        "not_awaiting_approval",
    )
    .await;
    let pending = expect_json(
        app.get_auth("/v1/vat/approvals?status=approved", &reviewer)
            .await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(pending["approvals"][0]["approval_id"], id.as_str());
}

#[tokio::test]
async fn a_denial_closes_the_record_and_gives_back_the_budget() {
    let app = TestApp::spawn().await;
    let token = guarded_root(&app, "billing-bot").await;
    let (id, aar_id) = awaiting(&app, &token, 400.0).await;
    // The reservation holds the budget while it waits.
    let over = expect_json(ask(&app, &token, "read", 150.0).await, StatusCode::OK).await;
    assert_eq!(over["reason"], "budget_max_spend_usd");
    let decided = expect_json(
        decide(&app, &app.admin_key, &id, "deny").await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(decided["status"], "denied");
    let denied = record(&app, &aar_id).await;
    assert_eq!(denied["status"], "denied");
    assert_eq!(denied["deny_reason"], "approval_denied");
    assert_eq!(denied["spend_usd"], 0.0);
    expect_problem(
        complete(&app, &token, &aar_id).await,
        StatusCode::CONFLICT,
        "not_completable",
    )
    .await;
    // Released: a spend that did not fit before does now (below the
    // approval threshold, with an action no requirement names).
    let fits = expect_json(ask(&app, &token, "read", 90.0).await, StatusCode::OK).await;
    assert_eq!(fits["authorized"], true);
    let reputation = expect_json(
        app.get_auth("/v1/vat/reputation/billing-bot", &app.admin_key)
            .await,
        StatusCode::OK,
    )
    .await;
    // The approval's no and the budget refusal at authorize: both asked
    // first, neither a failure.
    assert_eq!(reputation["counts"]["denied_requests"], 2);
    assert_eq!(reputation["counts"]["failures"], 0);
}

#[tokio::test]
async fn an_approval_nobody_decides_expires_on_its_own() {
    let app = TestApp::spawn_with(|config| {
        config.approvals.ttl_seconds = std::num::NonZeroU64::new(60).unwrap();
    })
    .await;
    let token = guarded_root(&app, "billing-bot").await;
    let (id, aar_id) = awaiting(&app, &token, 10.0).await;
    app.clock.advance(Duration::from_secs(61));
    // No request makes it expire: the server's timer does.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let seen = record(&app, &aar_id).await;
        if seen["status"] == "denied" {
            assert_eq!(seen["deny_reason"], "approval_expired");
            break;
        }
        assert!(Instant::now() < deadline, "not expired: {seen}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let expired = approval(&app, &app.admin_key, &id, 0).await;
    assert_eq!(expired["status"], "expired");
    assert!(expired.get("decided_by").is_none(), "{expired}");
    expect_problem(
        decide(&app, &app.admin_key, &id, "approve").await,
        StatusCode::CONFLICT,
        "approval_expired",
    )
    .await;
}

#[tokio::test]
async fn a_wait_survives_a_restart_and_so_does_the_expiry() {
    let app = TestApp::spawn_with(|config| {
        config.approvals.ttl_seconds = std::num::NonZeroU64::new(120).unwrap();
    })
    .await;
    let token = guarded_root(&app, "billing-bot").await;
    let (first, _) = awaiting(&app, &token, 10.0).await;
    let (second, second_record) = awaiting(&app, &token, 10.0).await;
    let dir = app.stop().await;
    let app = TestApp::spawn_in(dir, |config| {
        config.approvals.ttl_seconds = std::num::NonZeroU64::new(120).unwrap();
    })
    .await;
    assert_eq!(
        approval(&app, &app.admin_key, &first, 0).await["status"],
        "pending"
    );
    let approved = expect_json(
        decide(&app, &app.admin_key, &first, "approve").await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(approved["status"], "approved");
    // The other one lapses after the restart, by the new process's timer.
    app.clock.advance(Duration::from_secs(121));
    let seen = approval(&app, &app.admin_key, &second, 0).await;
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut seen = seen;
    while seen["status"] == "pending" {
        assert!(Instant::now() < deadline, "not expired after the restart");
        tokio::time::sleep(Duration::from_millis(100)).await;
        seen = approval(&app, &app.admin_key, &second, 0).await;
    }
    assert_eq!(seen["status"], "expired");
    assert_eq!(
        record(&app, &second_record).await["deny_reason"],
        "approval_expired"
    );
}

#[tokio::test]
async fn only_a_reviewer_or_an_owner_decides_never_the_agent() {
    let app = TestApp::spawn().await;
    let developer = app
        .key(&app.admin_key, "developer", Some("dev@example.com"))
        .await;
    let auditor = app.key(&app.admin_key, "auditor", None).await;
    let (_, other_owner) = app.org("other").await;
    let token = guarded_root(&app, "billing-bot").await;
    let (id, _) = awaiting(&app, &token, 10.0).await;

    // The agent, with its own token: a decision takes an API key.
    expect_problem(
        decide(&app, text(&token["compact_jwt"]), &id, "approve").await,
        StatusCode::UNAUTHORIZED,
        "unauthorized",
    )
    .await;
    // Nor may it name its way in with a bare jti.
    let named = app
        .post(
            &format!("/v1/vat/approvals/{id}/decision"),
            &json!({"decision": "approve", "vat_jti": token["jti"]}),
        )
        .await;
    assert_eq!(named.status(), StatusCode::UNAUTHORIZED);
    for key in [&developer, &auditor] {
        expect_problem(
            decide(&app, key, &id, "approve").await,
            StatusCode::FORBIDDEN,
            "role_forbidden",
        )
        .await;
    }
    // Another organisation's owner does not find it, to read or decide.
    expect_problem(
        decide(&app, &other_owner, &id, "approve").await,
        StatusCode::NOT_FOUND,
        "approval_not_found",
    )
    .await;
    expect_problem(
        app.get_auth(&format!("/v1/vat/approvals/{id}"), &other_owner)
            .await,
        StatusCode::NOT_FOUND,
        "approval_not_found",
    )
    .await;
    // Another agent's token does not read it either.
    let stranger = app.root("stranger", &["billing:*"], &["read"]).await;
    expect_problem(
        app.get_auth(
            &format!("/v1/vat/approvals/{id}"),
            text(&stranger["compact_jwt"]),
        )
        .await,
        StatusCode::NOT_FOUND,
        "approval_not_found",
    )
    .await;
    // Bad decisions and waits are the caller's mistakes.
    expect_problem(
        decide(&app, &app.admin_key, &id, "maybe").await,
        StatusCode::UNPROCESSABLE_ENTITY,
        "invalid_decision",
    )
    .await;
    expect_problem(
        app.get_auth(&format!("/v1/vat/approvals/{id}?wait=31"), &app.admin_key)
            .await,
        StatusCode::BAD_REQUEST,
        "invalid_query",
    )
    .await;
    expect_problem(
        app.get_auth("/v1/vat/approvals/apr_nothing", &app.admin_key)
            .await,
        StatusCode::NOT_FOUND,
        "approval_not_found",
    )
    .await;
    assert_eq!(
        approval(&app, &app.admin_key, &id, 0).await["status"],
        "pending"
    );
}

#[tokio::test]
async fn acting_without_asking_first_is_refused_approval_required() {
    let app = TestApp::spawn().await;
    let token = guarded_root(&app, "billing-bot").await;
    let refused = expect_problem(
        app.act(text(&token["jti"]), "pay", "billing:invoice/7", "success")
            .await,
        StatusCode::FORBIDDEN,
        "approval_required",
    )
    .await;
    let denied = record(&app, text(&refused["aar_id"])).await;
    assert_eq!(denied["deny_reason"], "approval_required");
    // What no member of the requirement matches goes through.
    expect_json(
        app.act(text(&token["jti"]), "read", "billing:invoice/7", "success")
            .await,
        StatusCode::CREATED,
    )
    .await;
}

#[tokio::test]
async fn a_child_keeps_its_parents_requirement_and_may_only_add_to_it() {
    let app = TestApp::spawn().await;
    let root = guarded_root(&app, "billing-bot").await;
    let child = expect_json(
        app.delegate(
            &root,
            json!({"agent_id": "helper", "resources": ["billing:*"], "actions": ["pay", "read"]}),
        )
        .await,
        StatusCode::CREATED,
    )
    .await;
    assert_eq!(
        child["claims"]["svc_constraints"]["require_approval"],
        json!({"actions": ["pay"], "spend_over_usd": 100.0})
    );
    let (id, _) = awaiting(&app, &child, 5.0).await;
    let seen = approval(&app, text(&child["compact_jwt"]), &id, 0).await;
    assert_eq!(
        seen["chain"],
        json!([
            {"agent_id": "agent:billing-bot", "delegation_depth": 0},
            {"agent_id": "agent:helper", "delegation_depth": 1},
        ])
    );
    // The parent's token reads its descendant's approval too.
    assert_eq!(
        approval(&app, text(&root["compact_jwt"]), &id, 0).await["status"],
        "pending"
    );
    // A child may add a requirement, never loosen one.
    let raised = expect_problem(
        app.delegate(
            &root,
            json!({
                "agent_id": "helper-2", "resources": ["billing:*"], "actions": ["read"],
                "constraints": {"require_approval": {"spend_over_usd": 500}},
            }),
        )
        .await,
        StatusCode::FORBIDDEN,
        "scope_widening",
    )
    .await;
    assert_eq!(raised["violations"][0]["code"], "approval_threshold_raised");
    let stricter = expect_json(
        app.delegate(
            &root,
            json!({
                "agent_id": "helper-3", "resources": ["billing:*"], "actions": ["read"],
                "constraints": {"require_approval": {"actions": ["read"]}},
            }),
        )
        .await,
        StatusCode::CREATED,
    )
    .await;
    expect_json(
        ask(&app, &stricter, "read", 1.0).await,
        StatusCode::ACCEPTED,
    )
    .await;
}

#[tokio::test]
async fn revoking_the_root_ends_what_the_chain_waits_for() {
    let app = TestApp::spawn().await;
    let root = guarded_root(&app, "billing-bot").await;
    let (id, aar_id) = awaiting(&app, &root, 10.0).await;
    expect_json(
        app.post_auth(
            "/v1/vat/revoke",
            &app.admin_key,
            &json!({"jti": root["jti"], "reason": "done"}),
        )
        .await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(
        approval(&app, &app.admin_key, &id, 0).await["status"],
        "expired"
    );
    assert_eq!(
        record(&app, &aar_id).await["deny_reason"],
        "approval_expired"
    );
}

#[tokio::test]
async fn a_requirement_is_checked_like_any_grant_field() {
    let app = TestApp::spawn().await;
    for (requirement, field, code) in [
        (
            json!({}),
            "constraints.require_approval",
            "empty_approval_requirement",
        ),
        (
            json!({"actions": []}),
            "constraints.require_approval.actions",
            "empty_list",
        ),
        (
            json!({"actions": ["Pay!"]}),
            "constraints.require_approval.actions",
            "invalid_action",
        ),
        (
            json!({"resources": ["*"]}),
            "constraints.require_approval.resources",
            "invalid_resource_pattern",
        ),
        (
            json!({"spend_over_usd": -1}),
            "constraints.require_approval.spend_over_usd",
            "amount_negative",
        ),
    ] {
        let problem = expect_problem(
            app.post_auth(
                "/v1/vat/issue/l1",
                &app.admin_key,
                &json!({
                    "developer_email": "dev@example.com", "agent_id": "bot",
                    "resources": ["billing:*"], "actions": ["pay"],
                    "constraints": {"require_approval": requirement},
                }),
            )
            .await,
            StatusCode::UNPROCESSABLE_ENTITY,
            code,
        )
        .await;
        assert_eq!(problem["field"], field, "{requirement}");
    }
}

#[tokio::test]
async fn a_stopping_server_answers_a_waiting_agent_at_once() {
    let app = TestApp::spawn().await;
    let token = guarded_root(&app, "billing-bot").await;
    let (approval_id, _) = awaiting(&app, &token, 5.0).await;
    let url = app.url(&format!("/v1/vat/approvals/{approval_id}?wait=30"));
    let waiting = app.client.get(url).bearer_auth(&app.admin_key).send();
    let waiting = tokio::spawn(waiting);
    tokio::time::sleep(Duration::from_millis(300)).await;
    tokio::time::timeout(Duration::from_secs(10), app.stop())
        .await
        .expect("the server did not stop within 10 s while an agent waited");
    let answer = waiting.await.unwrap().unwrap();
    assert_eq!(answer.status(), StatusCode::OK);
    let body: Value = answer.json().await.unwrap();
    assert_eq!(body["status"], "pending", "answered as it stands");
}

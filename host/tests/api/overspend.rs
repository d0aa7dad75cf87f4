//! A completion reports what was spent, and what was authorized bounds it:
//! spend above the reservation (and above what an approval was granted for)
//! is judged again against the chain's approval requirements and budgets,
//! and a completion by `aar_id` alone never raises it. A refused completion
//! changes nothing: the record stays pending, its reservation in place.

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::helpers::{TestApp, expect_json, expect_problem, text};

/// A root token for `agent` that may `pay` on `billing:*` under
/// `constraints`.
async fn payer(app: &TestApp, agent: &str, constraints: Value) -> Value {
    app.issue(json!({
        "developer_email": "dev@example.com",
        "agent_id": agent,
        "resources": ["billing:*"],
        "actions": ["pay", "delegate"],
        "constraints": constraints,
    }))
    .await
}

/// `authorize` of `pay` with the token itself, spending `spend`; the
/// answer, expected with `status`.
async fn authorize(app: &TestApp, token: &Value, spend: f64, status: StatusCode) -> Value {
    expect_json(
        app.post_auth(
            "/v1/vat/authorize",
            text(&token["compact_jwt"]),
            &json!({"action": "pay", "resource": "billing:invoice/7", "spend_usd": spend}),
        )
        .await,
        status,
    )
    .await
}

/// Completes `aar_id` with `spend`, presenting `token` (none: by the
/// `aar_id` alone).
async fn complete(
    app: &TestApp,
    token: Option<&Value>,
    aar_id: &str,
    spend: f64,
) -> reqwest::Response {
    let path = format!("/v1/vat/aar/{aar_id}/complete");
    let body = json!({"result": "success", "spend_usd": spend});
    match token {
        Some(token) => {
            app.post_auth(&path, text(&token["compact_jwt"]), &body)
                .await
        }
        None => app.post(&path, &body).await,
    }
}

async fn record(app: &TestApp, aar_id: &str) -> Value {
    expect_json(
        app.get_auth(&format!("/v1/vat/aar/{aar_id}"), &app.admin_key)
            .await,
        StatusCode::OK,
    )
    .await
}

/// The record is still pending with `spend` reserved: the refusal changed
/// nothing.
async fn still_pending(app: &TestApp, aar_id: &str, spend: f64) {
    let seen = record(app, aar_id).await;
    assert_eq!(seen["status"], "pending", "{seen}");
    assert_eq!(seen["spend_usd"], spend, "{seen}");
    assert!(seen.get("completed_at").is_none(), "{seen}");
}

async fn decide(app: &TestApp, approval_id: &str, decision: &str) {
    expect_json(
        app.post_auth(
            &format!("/v1/vat/approvals/{approval_id}/decision"),
            &app.admin_key,
            &json!({"decision": decision}),
        )
        .await,
        StatusCode::OK,
    )
    .await;
}

/// The issue's first reproduction: authorized for $1 under a $100 approval
/// threshold, completed for $50,000 — that spend needed a human's yes.
#[tokio::test]
async fn completing_past_the_approval_threshold_needs_approval() {
    let app = TestApp::spawn().await;
    let token = payer(
        &app,
        "billing-bot",
        json!({"require_approval": {"spend_over_usd": 100}}),
    )
    .await;
    let asked = authorize(&app, &token, 1.0, StatusCode::OK).await;
    assert_eq!(asked["authorized"], true);
    let aar = text(&asked["aar_id"]);
    let problem = expect_problem(
        complete(&app, Some(&token), aar, 50_000.0).await,
        StatusCode::FORBIDDEN,
        "approval_required",
    )
    .await;
    assert_eq!(problem["aar_id"], aar);
    assert!(text(&problem["detail"]).contains("50000"), "{problem}");
    still_pending(&app, aar, 1.0).await;
    // Just over the threshold is over it.
    expect_problem(
        complete(&app, Some(&token), aar, 100.01).await,
        StatusCode::FORBIDDEN,
        "approval_required",
    )
    .await;
    // Up to the threshold needs nobody: a completion above the reservation
    // that no requirement matches is settled as before.
    let done = expect_json(
        complete(&app, Some(&token), aar, 100.0).await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(done["status"], "completed");
    assert_eq!(done["spend_usd"], 100.0);
}

/// The issue's second reproduction: an approval for $150 does not cover a
/// completion of $900,000; nor does an approval of an action cover more
/// spend than it was asked for.
#[tokio::test]
async fn an_approval_covers_only_the_spend_it_was_granted_for() {
    let app = TestApp::spawn().await;
    let token = payer(
        &app,
        "billing-bot",
        json!({"require_approval": {"spend_over_usd": 100}}),
    )
    .await;
    let asked = authorize(&app, &token, 150.0, StatusCode::ACCEPTED).await;
    let aar = text(&asked["aar_id"]);
    decide(&app, text(&asked["approval"]["approval_id"]), "approve").await;
    still_pending(&app, aar, 150.0).await;
    for spend in [900_000.0, 150.01] {
        expect_problem(
            complete(&app, Some(&token), aar, spend).await,
            StatusCode::FORBIDDEN,
            "approval_required",
        )
        .await;
        still_pending(&app, aar, 150.0).await;
    }
    let done = expect_json(
        complete(&app, Some(&token), aar, 150.0).await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(done["spend_usd"], 150.0);

    // An action that always needs approval: approved for $40, not for $41.
    let guarded = payer(
        &app,
        "pay-bot",
        json!({"require_approval": {"actions": ["pay"]}}),
    )
    .await;
    let asked = authorize(&app, &guarded, 40.0, StatusCode::ACCEPTED).await;
    let aar = text(&asked["aar_id"]);
    decide(&app, text(&asked["approval"]["approval_id"]), "approve").await;
    expect_problem(
        complete(&app, Some(&guarded), aar, 41.0).await,
        StatusCode::FORBIDDEN,
        "approval_required",
    )
    .await;
    still_pending(&app, aar, 40.0).await;
    // Less than approved is within the approval.
    let done = expect_json(
        complete(&app, Some(&guarded), aar, 12.5).await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(done["spend_usd"], 12.5);
}

/// A child's completion is judged by the requirements of its whole chain:
/// a root's threshold binds the child, whatever the child's own token says.
#[tokio::test]
async fn a_child_completing_past_its_roots_threshold_needs_approval() {
    let app = TestApp::spawn().await;
    let root = payer(
        &app,
        "billing-bot",
        json!({"require_approval": {"spend_over_usd": 100}}),
    )
    .await;
    let child = expect_json(
        app.delegate(
            &root,
            json!({"agent_id": "billing-helper", "resources": ["billing:*"], "actions": ["pay"]}),
        )
        .await,
        StatusCode::CREATED,
    )
    .await;
    let asked = authorize(&app, &child, 2.0, StatusCode::OK).await;
    let aar = text(&asked["aar_id"]);
    for presented in [&child, &root] {
        expect_problem(
            complete(&app, Some(presented), aar, 5_000.0).await,
            StatusCode::FORBIDDEN,
            "approval_required",
        )
        .await;
    }
    still_pending(&app, aar, 2.0).await;
}

/// The third: anyone who has seen an `aar_id` of a record made with a bare
/// `vat_jti` may complete it, so a completion by the `aar_id` alone reports
/// spend up to the reservation and no more — with no approval requirement
/// and no budget at all. The token's holder may report more.
#[tokio::test]
async fn a_completion_by_aar_id_alone_never_raises_the_spend() {
    let app = TestApp::spawn().await;
    let token = payer(&app, "billing-bot", json!({})).await;
    let by_jti = |spend: f64| json!({"vat_jti": token["jti"], "action": "pay", "resource": "billing:x", "spend_usd": spend});
    let mut aars = Vec::new();
    for _ in 0..3 {
        let asked = expect_json(
            app.post("/v1/vat/authorize", &by_jti(5.0)).await,
            StatusCode::OK,
        )
        .await;
        assert_eq!(asked["authorized"], true);
        aars.push(text(&asked["aar_id"]).to_owned());
    }
    for spend in [5.000001, 900_000.0] {
        let problem = expect_problem(
            complete(&app, None, &aars[0], spend).await,
            StatusCode::UNAUTHORIZED,
            "token_required",
        )
        .await;
        assert!(text(&problem["detail"]).contains("reserved"), "{problem}");
        still_pending(&app, &aars[0], 5.0).await;
    }
    // At or below the reservation, by the aar_id alone, as the spec shows.
    let done = expect_json(complete(&app, None, &aars[0], 5.0).await, StatusCode::OK).await;
    assert_eq!(done["spend_usd"], 5.0);
    let done = expect_json(complete(&app, None, &aars[1], 0.5).await, StatusCode::OK).await;
    assert_eq!(done["spend_usd"], 0.5);
    // The token itself may report more.
    let done = expect_json(
        complete(&app, Some(&token), &aars[2], 7.0).await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(done["spend_usd"], 7.0);
}

/// The fifth: spend above the reservation that would pass a budget of the
/// chain — the root's first — is refused with that budget's code; a
/// budget is judged before a requirement, as at authorize (nobody is asked
/// to approve what the chain cannot spend).
#[tokio::test]
async fn a_completion_past_a_budget_of_the_chain_is_refused() {
    let app = TestApp::spawn().await;
    let root = payer(
        &app,
        "billing-bot",
        json!({"max_spend_usd": 10, "require_approval": {"spend_over_usd": 5}}),
    )
    .await;
    let child = expect_json(
        app.delegate(
            &root,
            json!({"agent_id": "billing-helper", "resources": ["billing:*"], "actions": ["pay"]}),
        )
        .await,
        StatusCode::CREATED,
    )
    .await;
    let asked = authorize(&app, &child, 4.0, StatusCode::OK).await;
    let aar = text(&asked["aar_id"]);
    let problem = expect_problem(
        complete(&app, Some(&child), aar, 10.5).await,
        StatusCode::FORBIDDEN,
        "budget_max_spend_usd",
    )
    .await;
    assert_eq!(problem["aar_id"], aar);
    still_pending(&app, aar, 4.0).await;
    // Within the budget but past the threshold: approval.
    expect_problem(
        complete(&app, Some(&child), aar, 6.0).await,
        StatusCode::FORBIDDEN,
        "approval_required",
    )
    .await;
    still_pending(&app, aar, 4.0).await;
    let done = expect_json(complete(&app, Some(&child), aar, 5.0).await, StatusCode::OK).await;
    assert_eq!(done["spend_usd"], 5.0);
    // The refusals charged nothing: the rest of the root's budget is there.
    let rest = authorize(&app, &child, 5.0, StatusCode::OK).await;
    assert_eq!(rest["authorized"], true, "{rest}");
    let over = authorize(&app, &child, 5.01, StatusCode::OK).await;
    assert_eq!(over["reason"], "budget_max_spend_usd");
}

/// `max_spend_per_action_usd` caps one act, wherever its spend is told —
/// `authorize`, `record/action`, a completion above the reservation —
/// however much of `max_spend_usd` is left; a delegation inherits it and
/// may only lower it.
#[tokio::test]
async fn one_act_may_not_spend_more_than_the_per_action_cap() {
    let app = TestApp::spawn().await;
    let token = payer(
        &app,
        "capped",
        json!({"max_spend_usd": 1000, "max_spend_per_action_usd": 100}),
    )
    .await;
    let refused = authorize(&app, &token, 100.01, StatusCode::OK).await;
    assert_eq!(
        refused["reason"], "budget_max_spend_per_action_usd",
        "{refused}"
    );
    let problem = expect_problem(
        app.post_auth(
            "/v1/vat/record/action",
            text(&token["compact_jwt"]),
            &json!({"action": "pay", "resource": "billing:invoice/7", "result": "success",
                    "spend_usd": 150}),
        )
        .await,
        StatusCode::FORBIDDEN,
        "budget_max_spend_per_action_usd",
    )
    .await;
    assert!(problem["aar_id"].is_string());
    let allowed = authorize(&app, &token, 100.0, StatusCode::OK).await;
    assert_eq!(allowed["authorized"], true, "{allowed}");
    let aar_id = text(&allowed["aar_id"]).to_owned();
    expect_problem(
        complete(&app, Some(&token), &aar_id, 100.5).await,
        StatusCode::FORBIDDEN,
        "budget_max_spend_per_action_usd",
    )
    .await;
    still_pending(&app, &aar_id, 100.0).await;
    expect_json(
        complete(&app, Some(&token), &aar_id, 99.0).await,
        StatusCode::OK,
    )
    .await;
    // Inherited when left out; raised or dropped, it widens.
    let child = expect_json(
        app.delegate(
            &token,
            json!({"agent_id": "capped-child", "resources": ["billing:*"], "actions": ["pay"]}),
        )
        .await,
        StatusCode::CREATED,
    )
    .await;
    assert_eq!(
        child["claims"]["svc_constraints"]["max_spend_per_action_usd"],
        100.0
    );
    let problem = expect_problem(
        app.delegate(
            &token,
            json!({"agent_id": "capped-child", "resources": ["billing:*"], "actions": ["pay"],
                   "constraints": {"max_spend_per_action_usd": 500}}),
        )
        .await,
        StatusCode::FORBIDDEN,
        "scope_widening",
    )
    .await;
    assert_eq!(
        problem["violations"][0]["field"],
        "constraints.max_spend_per_action_usd"
    );
    let lower = expect_json(
        app.delegate(
            &token,
            json!({"agent_id": "capped-child", "resources": ["billing:*"], "actions": ["pay"],
                   "constraints": {"max_spend_per_action_usd": 10}}),
        )
        .await,
        StatusCode::CREATED,
    )
    .await;
    let refused = authorize(&app, &lower, 11.0, StatusCode::OK).await;
    assert_eq!(refused["reason"], "budget_max_spend_per_action_usd");
}

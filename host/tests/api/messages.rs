//! What a refusal tells the caller: the truth about what happened, and
//! what to do — an expired approval says it expired, a key that was sent
//! but not accepted says so, and a token's holder refused an action learns
//! what the token does allow.

use std::time::{Duration, Instant};

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::helpers::{TestApp, expect_json, expect_problem, text};

async fn decide(app: &TestApp, id: &str, decision: &str) -> reqwest::Response {
    app.post_auth(
        &format!("/v1/vat/approvals/{id}/decision"),
        &app.admin_key,
        &json!({"decision": decision}),
    )
    .await
}

/// A token whose `pay` always needs approval; an approval it waits for.
async fn waiting(app: &TestApp, agent: &str) -> (Value, String) {
    let token = app
        .issue(json!({
            "developer_email": "dev@example.com",
            "agent_id": agent,
            "resources": ["billing:*"],
            "actions": ["pay"],
            "constraints": {"require_approval": {"actions": ["pay"]}},
        }))
        .await;
    let asked = expect_json(
        app.post_auth(
            "/v1/vat/authorize",
            text(&token["compact_jwt"]),
            &json!({"action": "pay", "resource": "billing:invoice/7", "spend_usd": 10}),
        )
        .await,
        StatusCode::ACCEPTED,
    )
    .await;
    let id = text(&asked["approval"]["approval_id"]).to_owned();
    (token, id)
}

async fn approval_status(app: &TestApp, id: &str) -> Value {
    let seen = expect_json(
        app.get_auth(&format!("/v1/vat/approvals/{id}"), &app.admin_key)
            .await,
        StatusCode::OK,
    )
    .await;
    seen["status"].clone()
}

/// An approval that time (or a revocation) expired is answered
/// `approval_expired`, as the docs promise, whether the timer came by
/// first or not; one a person decided is `not_awaiting_approval`.
#[tokio::test]
async fn deciding_an_expired_approval_answers_approval_expired() {
    let app = TestApp::spawn_with(|config| {
        config.approvals.ttl_seconds = std::num::NonZeroU64::new(60).unwrap();
    })
    .await;
    let (_, lapsed) = waiting(&app, "billing-bot").await;
    let (_, decided) = waiting(&app, "other-bot").await;
    expect_json(decide(&app, &decided, "deny").await, StatusCode::OK).await;

    app.clock.advance(Duration::from_secs(61));
    let deadline = Instant::now() + Duration::from_secs(10);
    while approval_status(&app, &lapsed).await != "expired" {
        assert!(Instant::now() < deadline, "the timer never expired it");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    for decision in ["approve", "deny"] {
        let problem = expect_problem(
            decide(&app, &lapsed, decision).await,
            StatusCode::CONFLICT,
            "approval_expired",
        )
        .await;
        assert!(text(&problem["detail"]).contains("expired"), "{problem}");
    }
    assert_eq!(approval_status(&app, &lapsed).await, "expired");

    // Revoking the token (here by itself) expires what it waits for, at
    // once.
    let (token, revoked) = waiting(&app, "pay-bot").await;
    expect_json(
        app.post_auth(
            "/v1/vat/revoke",
            text(&token["compact_jwt"]),
            &json!({"jti": token["jti"]}),
        )
        .await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(approval_status(&app, &revoked).await, "expired");
    expect_problem(
        decide(&app, &revoked, "approve").await,
        StatusCode::CONFLICT,
        "approval_expired",
    )
    .await;

    expect_problem(
        decide(&app, &decided, "approve").await,
        StatusCode::CONFLICT,
        "not_awaiting_approval",
    )
    .await;
}

/// A key sent but not accepted — unknown, revoked or malformed — is told
/// so; "an API key is required" is for a request that sent none.
#[tokio::test]
async fn a_key_that_is_not_accepted_is_told_so() {
    let app = TestApp::spawn().await;
    let owner = app.key(&app.admin_key, "owner", None).await;
    let revoked = expect_json(
        app.post_auth("/v1/keys", &owner, &json!({"role": "reviewer"}))
            .await,
        StatusCode::CREATED,
    )
    .await;
    expect_json(
        app.send(
            reqwest::Method::DELETE,
            &format!("/v1/keys/{}", text(&revoked["key_id"])),
            &owner,
            None,
        )
        .await,
        StatusCode::OK,
    )
    .await;
    let unknown = format!("mk_{}", "A".repeat(43));
    let issue = json!({
        "developer_email": "dev@example.com", "agent_id": "bot",
        "resources": ["crm:*"], "actions": ["read"],
    });
    for wrong in [
        unknown.as_str(),
        text(&revoked["api_key"]),
        "mk_typo",
        &owner[..owner.len() - 1],
    ] {
        for response in [
            app.post_auth("/v1/vat/issue/l1", wrong, &issue).await,
            app.get_auth("/v1/keys", wrong).await,
            // A call that takes a key or a token reads an `mk_` credential
            // as a key.
            app.get_auth("/v1/vat/approvals/apr_01HZY5Q6F5Y0K1M8G1C9T9X3AB", wrong)
                .await,
        ] {
            let problem = expect_problem(response, StatusCode::UNAUTHORIZED, "unauthorized").await;
            let detail = text(&problem["detail"]);
            assert!(detail.contains("not accepted"), "{wrong}: {problem}");
            assert!(!detail.contains("is required"), "{wrong}: {problem}");
        }
    }
    // None at all: one is required.
    let response = app
        .client
        .post(app.url("/v1/vat/issue/l1"))
        .json(&issue)
        .send()
        .await
        .unwrap();
    let problem = expect_problem(response, StatusCode::UNAUTHORIZED, "unauthorized").await;
    assert!(text(&problem["detail"]).contains("required"), "{problem}");
    // An agent's token where a key is needed is not a key.
    let token = app.root("bot", &["crm:*"], &["read"]).await;
    let problem = expect_problem(
        app.post_auth("/v1/vat/issue/l1", text(&token["compact_jwt"]), &issue)
            .await,
        StatusCode::UNAUTHORIZED,
        "unauthorized",
    )
    .await;
    assert!(
        text(&problem["detail"]).contains("not an API key"),
        "{problem}"
    );
}

/// A token's holder refused an action learns what the token allows: its
/// actions, or its resource patterns. A caller naming the token by its
/// bare `vat_jti` is told only that it was refused.
#[tokio::test]
async fn a_refused_holder_learns_what_the_token_allows() {
    let app = TestApp::spawn().await;
    let token = app
        .root("crm-bot", &["crm:*", "files:reports"], &["read", "write"])
        .await;
    let act = |action: &str, resource: &str| json!({"action": action, "resource": resource, "result": "success"});
    let problem = expect_problem(
        app.post_auth(
            "/v1/vat/record/action",
            text(&token["compact_jwt"]),
            &act("send", "crm:deals"),
        )
        .await,
        StatusCode::FORBIDDEN,
        "action_not_permitted",
    )
    .await;
    let detail = text(&problem["detail"]);
    assert!(detail.contains("read, write"), "{problem}");
    assert!(problem["aar_id"].is_string(), "{problem}");

    let problem = expect_problem(
        app.post_auth(
            "/v1/vat/record/action",
            text(&token["compact_jwt"]),
            &act("read", "mail:inbox"),
        )
        .await,
        StatusCode::FORBIDDEN,
        "resource_not_permitted",
    )
    .await;
    let detail = text(&problem["detail"]);
    assert!(detail.contains("crm:*, files:reports"), "{problem}");

    // By bare vat_jti: refused, and nothing of the scope is told.
    let problem = expect_problem(
        app.act(text(&token["jti"]), "send", "crm:deals", "success")
            .await,
        StatusCode::FORBIDDEN,
        "action_not_permitted",
    )
    .await;
    assert!(!text(&problem["detail"]).contains("read"), "{problem}");
}

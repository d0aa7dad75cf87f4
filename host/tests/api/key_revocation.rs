//! `mandate signing-key revoke`: a compromised signing key leaves the key set
//! and every token it signed, with every descendant, stops working.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::helpers::{TestApp, expect_json, expect_problem, text};
use crate::process::operator;

/// The kid in a compact token's header.
fn kid_of(token: &Value) -> String {
    let header = text(&token["compact_jwt"]).split('.').next().unwrap();
    let header: Value = serde_json::from_slice(&URL_SAFE_NO_PAD.decode(header).unwrap()).unwrap();
    text(&header["kid"]).to_owned()
}

async fn published_kids(app: &TestApp) -> Vec<String> {
    let jwks: Value = app
        .client
        .get(app.url("/.well-known/jwks.json"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let mut kids: Vec<String> = jwks["keys"]
        .as_array()
        .unwrap()
        .iter()
        .map(|key| text(&key["kid"]).to_owned())
        .collect();
    kids.sort();
    kids
}

fn action(token: &Value) -> Value {
    json!({"vat_jti": text(&token["jti"]), "action": "read", "resource": "crm:a",
           "result": "success"})
}

/// Records an action with a token's bare jti; returns the response.
async fn act_bare(app: &TestApp, token: &Value) -> reqwest::Response {
    app.post("/v1/vat/record/action", &action(token)).await
}

/// Records an action with the token as `Authorization: Bearer`.
async fn act_bearer(app: &TestApp, token: &Value) -> reqwest::Response {
    app.post_auth(
        "/v1/vat/record/action",
        text(&token["compact_jwt"]),
        &action(token),
    )
    .await
}

#[tokio::test]
async fn a_revoked_signing_key_and_every_token_it_signed_stop_working() {
    // A root token signed by key A; then, after a rotation, a child of it and
    // another root signed by key B.
    let app = TestApp::spawn().await;
    let root = app.root("bot", &["crm:*"], &["read", "delegate"]).await;
    let kid_a = kid_of(&root);
    let dir = app.stop().await;
    let (status, _, stderr) = operator(dir.path(), &["signing-key", "rotate"]);
    assert!(status.success(), "{stderr}");
    let app = TestApp::spawn_in(dir, |_| {}).await;
    let child = expect_json(
        app.delegate(
            &root,
            json!({"agent_id": "helper", "resources": ["crm:a"], "actions": ["read"]}),
        )
        .await,
        StatusCode::CREATED,
    )
    .await;
    let other = app.root("other", &["crm:*"], &["read"]).await;
    let kid_b = kid_of(&child);
    assert_ne!(kid_b, kid_a);
    assert_eq!(kid_of(&other), kid_b);
    let dir = app.stop().await;

    // Key A is retired, not active: revoking it needs no rotation.
    let (status, stdout, stderr) = operator(dir.path(), &["signing-key", "revoke", &kid_a]);
    assert!(status.success(), "{stderr}");
    assert!(!stdout.contains("new signing key"), "{stdout}");
    assert!(
        stdout.contains(&format!("revoked signing key {kid_a} and 2 tokens")),
        "{stdout}"
    );

    let app = TestApp::spawn_in(dir, |_| {}).await;
    assert_eq!(published_kids(&app).await, std::slice::from_ref(&kid_b));
    expect_problem(
        act_bearer(&app, &root).await,
        StatusCode::UNAUTHORIZED,
        "unknown_kid",
    )
    .await;
    expect_problem(
        act_bare(&app, &root).await,
        StatusCode::FORBIDDEN,
        "token_inactive",
    )
    .await;
    // The child is signed by key B, which stays valid, and is revoked as a
    // descendant of a token key A signed; its holder is told so.
    expect_problem(
        act_bare(&app, &child).await,
        StatusCode::FORBIDDEN,
        "token_inactive",
    )
    .await;
    expect_problem(
        act_bearer(&app, &child).await,
        StatusCode::UNAUTHORIZED,
        "token_revoked",
    )
    .await;
    let status = expect_json(
        app.get_auth(
            &format!("/v1/vat/tokens/{}", text(&child["jti"])),
            &app.admin_key,
        )
        .await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(status["revoke_reason"], "signing key revoked");
    expect_json(act_bearer(&app, &other).await, StatusCode::CREATED).await;

    // Key B is the active key: revoking it, with the server running, rotates
    // first. The server refuses B's tokens at once; it stops publishing B
    // from its next key refresh (here, the restart).
    let (status, stdout, stderr) = operator(
        app.dir.as_ref().unwrap().path(),
        &["signing-key", "revoke", &kid_b],
    );
    assert!(status.success(), "{stderr}");
    assert!(stdout.starts_with("new signing key "), "{stdout}");
    expect_problem(
        act_bare(&app, &other).await,
        StatusCode::FORBIDDEN,
        "token_inactive",
    )
    .await;
    // Nothing is signed with B from now: the running server's next token is
    // refused until it has read the new key, which it does at once.
    let issue = json!({"developer_email": "dev@example.com", "agent_id": "bot",
                       "resources": ["crm:*"], "actions": ["read"]});
    let refused = app
        .post_auth("/v1/vat/issue/l1", &app.admin_key, &issue)
        .await;
    assert_eq!(refused.headers()["retry-after"], "1");
    expect_problem(
        refused,
        StatusCode::SERVICE_UNAVAILABLE,
        "signing_key_revoked",
    )
    .await;
    let retried = app.issue(issue).await;
    let kid_c = kid_of(&retried);
    assert!(kid_c != kid_a && kid_c != kid_b);
    let dir = app.stop().await;
    let app = TestApp::spawn_in(dir, |_| {}).await;
    let fresh = app.root("bot", &["crm:*"], &["read"]).await;
    assert_eq!(kid_of(&fresh), kid_c);
    assert!(kid_c != kid_a && kid_c != kid_b);
    assert_eq!(published_kids(&app).await, [kid_c]);
    expect_problem(
        act_bearer(&app, &other).await,
        StatusCode::UNAUTHORIZED,
        "unknown_kid",
    )
    .await;
    expect_json(act_bearer(&app, &fresh).await, StatusCode::CREATED).await;
    app.stop().await;
}

#[tokio::test]
async fn revoking_an_unknown_kid_fails_and_changes_nothing() {
    let app = TestApp::spawn().await;
    let root = app.root("bot", &["crm:*"], &["read"]).await;
    let kids = published_kids(&app).await;
    let dir = app.stop().await;
    let (status, stdout, stderr) = operator(dir.path(), &["signing-key", "revoke", "no-such-kid"]);
    assert!(!status.success());
    assert_eq!(stdout, "");
    assert!(
        stderr.contains("no signing key has the kid no-such-kid"),
        "{stderr}"
    );
    let app = TestApp::spawn_in(dir, |_| {}).await;
    assert_eq!(published_kids(&app).await, kids);
    expect_json(act_bearer(&app, &root).await, StatusCode::CREATED).await;
    app.stop().await;
}

//! `Idempotency-Key` on record/action, authorize, complete, delegate and issue.

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::helpers::{TestApp, expect_json, expect_problem, jth, text};

async fn send(
    app: &TestApp,
    path: &str,
    bearer: Option<&str>,
    key: &str,
    body: &Value,
) -> (StatusCode, Value) {
    let mut request = app
        .client
        .post(app.url(path))
        .header("idempotency-key", key)
        .json(body);
    if let Some(bearer) = bearer {
        request = request.bearer_auth(bearer);
    }
    let response = request.send().await.unwrap();
    let status = response.status();
    (status, response.json().await.unwrap())
}

async fn record_count(app: &TestApp, jti: &str) -> usize {
    let page = expect_json(
        app.get_auth(
            &format!("/v1/vat/aar?vat_jti={jti}&limit=500"),
            &app.admin_key,
        )
        .await,
        StatusCode::OK,
    )
    .await;
    page["records"].as_array().unwrap().len()
}

#[tokio::test]
async fn retries_return_the_first_response_and_create_nothing() {
    let app = TestApp::spawn().await;
    let root = app.root("bot", &["crm:*"], &["read", "delegate"]).await;
    let jti = text(&root["jti"]).to_owned();
    let act = json!({"vat_jti": jti, "action": "read", "resource": "crm:a", "result": "success"});
    let first = send(&app, "/v1/vat/record/action", None, "act-1", &act).await;
    assert_eq!(first.0, StatusCode::CREATED);
    for _ in 0..3 {
        assert_eq!(
            send(&app, "/v1/vat/record/action", None, "act-1", &act).await,
            first
        );
    }
    assert_eq!(record_count(&app, &jti).await, 1);

    let denied =
        json!({"vat_jti": jti, "action": "write", "resource": "crm:a", "result": "success"});
    let refused = send(&app, "/v1/vat/record/action", None, "act-2", &denied).await;
    assert_eq!(refused.0, StatusCode::FORBIDDEN);
    assert_eq!(
        send(&app, "/v1/vat/record/action", None, "act-2", &denied).await,
        refused
    );
    assert_eq!(
        record_count(&app, &jti).await,
        2,
        "a retried denial writes no second record"
    );

    let check = json!({"vat_jti": jti, "action": "read", "resource": "crm:b"});
    let authorized = send(&app, "/v1/vat/authorize", None, "auth-1", &check).await;
    assert_eq!(authorized.0, StatusCode::OK);
    assert_eq!(
        send(&app, "/v1/vat/authorize", None, "auth-1", &check).await,
        authorized
    );
    assert_eq!(record_count(&app, &jti).await, 3);

    let child =
        json!({"vat_jti": jti, "agent_id": "helper", "resources": ["crm:a"], "actions": ["read"]});
    let parent = Some(text(&root["compact_jwt"]));
    let delegated = send(&app, "/v1/vat/delegate", parent, "del-1", &child).await;
    assert_eq!(delegated.0, StatusCode::CREATED);
    assert_eq!(
        send(&app, "/v1/vat/delegate", parent, "del-1", &child).await,
        delegated
    );
    let status = expect_json(
        app.get_auth(&format!("/v1/vat/tokens/{jti}"), &app.admin_key)
            .await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(status["descendants"].as_array().unwrap().len(), 1);

    let issue = json!({"developer_email": "dev@example.com", "agent_id": "bot", "resources": ["crm:*"], "actions": ["read"]});
    let issued = send(
        &app,
        "/v1/vat/issue/l1",
        Some(&app.admin_key),
        "iss-1",
        &issue,
    )
    .await;
    assert_eq!(issued.0, StatusCode::CREATED);
    assert_eq!(
        send(
            &app,
            "/v1/vat/issue/l1",
            Some(&app.admin_key),
            "iss-1",
            &issue
        )
        .await,
        issued
    );
}

/// A completion whose answer was lost is sent again with its key: the first
/// answer comes back, the record is completed once (one `completed` leaf),
/// and another outcome under the key is refused. The key is the record's
/// and its sender's: the same key and body without the token that completed
/// it replays nothing (it is judged afresh and refused), so a replay never
/// shows the token's jti to a caller who only knows the `aar_id`.
#[tokio::test]
async fn a_retried_completion_gets_the_first_answer_and_only_its_sender_does() {
    let app = TestApp::spawn().await;
    let root = app.root("bot", &["crm:*"], &["read"]).await;
    let token = text(&root["compact_jwt"]).to_owned();
    let check = json!({"action": "read", "resource": "crm:a"});
    let (status, authorized) = send(&app, "/v1/vat/authorize", Some(&token), "a-1", &check).await;
    assert_eq!(status, StatusCode::OK);
    let aar_id = text(&authorized["aar_id"]).to_owned();
    let path = format!("/v1/vat/aar/{aar_id}/complete");
    let done = json!({"result": "success", "result_hash": format!("sha256:{}", "ab".repeat(32))});

    let first = send(&app, &path, Some(&token), "c-1", &done).await;
    assert_eq!(first.0, StatusCode::OK);
    assert_eq!(first.1["status"], "completed");
    assert_eq!(first.1["jth"], jth(text(&root["jti"])));
    for _ in 0..2 {
        assert_eq!(send(&app, &path, Some(&token), "c-1", &done).await, first);
    }
    let other = json!({"result": "error"});
    let (status, problem) = send(&app, &path, Some(&token), "c-1", &other).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(problem["code"], "idempotency_key_reused");
    // Without the key, a second completion is what it always was.
    let response = app
        .client
        .post(app.url(&path))
        .bearer_auth(&token)
        .json(&done)
        .send()
        .await
        .unwrap();
    expect_problem(response, StatusCode::CONFLICT, "already_completed").await;

    // The same key and body by the aar_id alone: no replay, no jti; the
    // record is not the caller's to see.
    let (status, problem) = send(&app, &path, None, "c-1", &done).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{problem}");
    assert_eq!(problem["code"], "record_not_found");
    assert!(!problem.to_string().contains(text(&root["jti"])));

    let record = expect_json(
        app.get_auth(&format!("/v1/vat/aar/{aar_id}"), &app.admin_key)
            .await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(record["result"], "success");
    assert_eq!(record_count(&app, text(&root["jti"])).await, 1);
}

#[tokio::test]
async fn the_same_key_with_another_body_is_refused() {
    let app = TestApp::spawn().await;
    let root = app.root("bot", &["crm:*"], &["read"]).await;
    let jti = text(&root["jti"]).to_owned();
    let act = |resource: &str| json!({"vat_jti": jti, "action": "read", "resource": resource, "result": "success"});
    assert_eq!(
        send(&app, "/v1/vat/record/action", None, "k", &act("crm:a"))
            .await
            .0,
        StatusCode::CREATED
    );
    let response = app
        .client
        .post(app.url("/v1/vat/record/action"))
        .header("idempotency-key", "k")
        .json(&act("crm:b"))
        .send()
        .await
        .unwrap();
    let problem = expect_problem(
        response,
        StatusCode::UNPROCESSABLE_ENTITY,
        "idempotency_key_reused",
    )
    .await;
    assert_eq!(problem["field"], "Idempotency-Key");
    assert_eq!(record_count(&app, &jti).await, 1);

    // Keys are scoped to the token: another token may use the same key.
    let other = app.root("bot", &["crm:*"], &["read"]).await;
    let body = json!({"vat_jti": other["jti"], "action": "read", "resource": "crm:a", "result": "success"});
    assert_eq!(
        send(&app, "/v1/vat/record/action", None, "k", &body)
            .await
            .0,
        StatusCode::CREATED
    );

    let response = app
        .client
        .post(app.url("/v1/vat/record/action"))
        .header("idempotency-key", "x".repeat(256))
        .json(&act("crm:a"))
        .send()
        .await
        .unwrap();
    expect_problem(response, StatusCode::BAD_REQUEST, "invalid_idempotency_key").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_retries_act_once() {
    let app = TestApp::spawn().await;
    let root = app.root("bot", &["crm:*"], &["read"]).await;
    let jti = text(&root["jti"]).to_owned();
    let body = json!({"vat_jti": jti, "action": "read", "resource": "crm:a", "result": "success"});
    let mut tasks = Vec::new();
    for _ in 0..16 {
        let (client, url, body) = (
            app.client.clone(),
            app.url("/v1/vat/record/action"),
            body.clone(),
        );
        tasks.push(tokio::spawn(async move {
            let response = client
                .post(url)
                .header("idempotency-key", "same")
                .json(&body)
                .send()
                .await
                .unwrap();
            (response.status(), response.json::<Value>().await.unwrap())
        }));
    }
    let mut answers = Vec::new();
    for task in tasks {
        answers.push(task.await.unwrap());
    }
    assert!(answers.windows(2).all(|w| w[0] == w[1]), "{answers:?}");
    assert_eq!(answers[0].0, StatusCode::CREATED);
    assert_eq!(record_count(&app, &jti).await, 1);
}

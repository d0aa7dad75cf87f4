//! Every error status with its problem body.

use std::time::Duration;

use mandate_host::{apikeys, store};
use reqwest::StatusCode;
use serde_json::json;

use crate::helpers::{TestApp, expect_json, expect_problem, text};

#[tokio::test]
async fn bad_requests_are_problems() {
    let app = TestApp::spawn().await;
    let url = app.url("/v1/vat/record/action");
    let send = |body: &'static [u8], content_type: Option<&'static str>| {
        let mut request = app.client.post(url.clone()).body(body);
        if let Some(ct) = content_type {
            request = request.header("content-type", ct);
        }
        request.send()
    };
    let json_type = Some("application/json");
    expect_problem(
        send(b"{not json", json_type).await.unwrap(),
        StatusCode::BAD_REQUEST,
        "malformed_json",
    )
    .await;
    expect_problem(
        send(b"\xef\xbb\xbf{}", json_type).await.unwrap(),
        StatusCode::BAD_REQUEST,
        "malformed_json",
    )
    .await;
    expect_problem(
        send(b"{\"action\":\"\\ud800\"}", json_type).await.unwrap(),
        StatusCode::BAD_REQUEST,
        "malformed_json",
    )
    .await;
    expect_problem(
        send(b"{\"action\":\"\xff\"}", json_type).await.unwrap(),
        StatusCode::BAD_REQUEST,
        "malformed_json",
    )
    .await;
    expect_problem(
        send(b"{}", None).await.unwrap(),
        StatusCode::UNSUPPORTED_MEDIA_TYPE,
        "unsupported_media_type",
    )
    .await;
    expect_problem(
        send(b"{}", Some("text/plain")).await.unwrap(),
        StatusCode::UNSUPPORTED_MEDIA_TYPE,
        "unsupported_media_type",
    )
    .await;
    for deep in [
        format!("{}{}", "[".repeat(5000), "]".repeat(5000)),
        format!(
            "{{\"action\":{}{}}}",
            "{\"a\":".repeat(5000),
            "}".repeat(5000)
        ),
    ] {
        let response = app
            .client
            .post(url.clone())
            .header("content-type", "application/json")
            .body(deep)
            .send()
            .await
            .unwrap();
        assert!(response.status().is_client_error(), "{}", response.status());
        assert_eq!(
            response.headers()["content-type"],
            "application/problem+json"
        );
    }

    let big = vec![b' '; 64 * 1024 + 1];
    let response = app
        .client
        .post(url.clone())
        .header("content-type", "application/json")
        .body(big)
        .send()
        .await
        .unwrap();
    expect_problem(response, StatusCode::PAYLOAD_TOO_LARGE, "payload_too_large").await;

    expect_problem(
        app.client
            .get(app.url("/v1/vat/aar?limit=abc"))
            .bearer_auth(&app.admin_key)
            .send()
            .await
            .unwrap(),
        StatusCode::BAD_REQUEST,
        "invalid_query",
    )
    .await;
    expect_problem(
        app.client
            .get(app.url("/v1/vat/aar?limit=501"))
            .bearer_auth(&app.admin_key)
            .send()
            .await
            .unwrap(),
        StatusCode::BAD_REQUEST,
        "invalid_query",
    )
    .await;
    expect_problem(
        app.client
            .get(app.url("/v1/vat/aar?cursor=zzz"))
            .bearer_auth(&app.admin_key)
            .send()
            .await
            .unwrap(),
        StatusCode::BAD_REQUEST,
        "invalid_cursor",
    )
    .await;
    expect_problem(
        app.client
            .get(app.url("/v1/vat/aar?since=yesterday"))
            .bearer_auth(&app.admin_key)
            .send()
            .await
            .unwrap(),
        StatusCode::BAD_REQUEST,
        "invalid_query",
    )
    .await;
}

#[tokio::test]
async fn wrong_shapes_and_broken_rules_are_422_naming_the_field() {
    let app = TestApp::spawn().await;
    let token = app.root("bot", &["crm:*"], &["read"]).await;
    let jti = text(&token["jti"]);
    let base = json!({"vat_jti": jti, "action": "read", "resource": "crm:a", "result": "success"});
    let cases = [
        (json!({"action": 5}), "invalid_field", None),
        (json!({"extra": true}), "unknown_field", None),
        (json!({"result": "great"}), "unknown_result", Some("result")),
        (
            json!({"resource": "crm"}),
            "invalid_resource",
            Some("resource"),
        ),
        (
            json!({"resource": "crm:a\u{0}"}),
            "invalid_resource",
            Some("resource"),
        ),
        (json!({"action": "Read"}), "invalid_action", Some("action")),
        (
            json!({"vat_jti": "vat_root_\u{1}"}),
            "invalid_id",
            Some("vat_jti"),
        ),
        (
            json!({"vat_jti": "tok_123"}),
            "invalid_id_prefix",
            Some("vat_jti"),
        ),
        (
            json!({"spend_usd": -1}),
            "amount_negative",
            Some("spend_usd"),
        ),
        (
            json!({"spend_usd": 0.1234567}),
            "amount_too_precise",
            Some("spend_usd"),
        ),
        (
            json!({"spend_usd": 1e30}),
            "amount_too_large",
            Some("spend_usd"),
        ),
        (
            json!({"result_hash": "md5:abc"}),
            "invalid_digest",
            Some("result_hash"),
        ),
    ];
    for (edit, code, field) in cases {
        let mut body = base.clone();
        for (k, v) in edit.as_object().unwrap() {
            body[k] = v.clone();
        }
        let problem = expect_problem(
            app.post("/v1/vat/record/action", &body).await,
            StatusCode::UNPROCESSABLE_ENTITY,
            code,
        )
        .await;
        if let Some(field) = field {
            assert_eq!(problem["field"], field, "{body}");
        }
    }
    let mut body = base.clone();
    body.as_object_mut().unwrap().remove("action");
    expect_problem(
        app.post("/v1/vat/record/action", &body).await,
        StatusCode::UNPROCESSABLE_ENTITY,
        "missing_field",
    )
    .await;
    for raw in [
        r#"{"vat_jti":"x","action":"read","resource":"crm:a","result":"success","spend_usd":1e400}"#,
        r#"{"vat_jti":"x","action":"read","resource":"crm:a","result":"success","spend_usd":123456789012345678901234567890}"#,
    ] {
        let response = app
            .client
            .post(app.url("/v1/vat/record/action"))
            .header("content-type", "application/json")
            .body(raw)
            .send()
            .await
            .unwrap();
        assert!(
            response.status().is_client_error(),
            "{raw}: {}",
            response.status()
        );
    }

    let issue = |edit: serde_json::Value| {
        let mut body = json!({"developer_email": "dev@example.com", "agent_id": "bot", "resources": ["crm:*"], "actions": ["read"]});
        for (k, v) in edit.as_object().unwrap() {
            body[k] = v.clone();
        }
        body
    };
    let many: Vec<String> = (0..65).map(|i| format!("ns:r{i}")).collect();
    let issue_cases = [
        (
            json!({"developer_email": "not-an-email"}),
            "invalid_email",
            "developer_email",
        ),
        (
            json!({"agent_id": "bad agent"}),
            "invalid_agent_id",
            "agent_id",
        ),
        (
            json!({"agent_id": "x".repeat(300)}),
            "invalid_agent_id",
            "agent_id",
        ),
        (json!({"resources": many}), "list_too_long", "resources"),
        (json!({"resources": []}), "empty_list", "resources"),
        (
            json!({"actions": ["read", "read"]}),
            "duplicate_entry",
            "actions",
        ),
        (json!({"ttl_seconds": 0}), "ttl_out_of_range", "ttl_seconds"),
        (
            json!({"constraints": {"max_spend_usd": -5}}),
            "amount_negative",
            "constraints.max_spend_usd",
        ),
        (
            json!({"policy": {"frameworks": ["HIPAA"]}}),
            "invalid_framework",
            "policy.frameworks",
        ),
    ];
    for (edit, code, field) in issue_cases {
        let body = issue(edit);
        let problem = expect_problem(
            app.post_auth("/v1/vat/issue/l1", &app.admin_key, &body)
                .await,
            StatusCode::UNPROCESSABLE_ENTITY,
            code,
        )
        .await;
        assert_eq!(problem["field"], field, "{body}");
    }
    let unknown_constraint = issue(json!({"constraints": {"max_spend": 5}}));
    expect_problem(
        app.post_auth("/v1/vat/issue/l1", &app.admin_key, &unknown_constraint)
            .await,
        StatusCode::UNPROCESSABLE_ENTITY,
        "unknown_field",
    )
    .await;
    // serde reads a struct from a positional list too; the API takes objects only.
    let positional = [
        issue(json!({"constraints": [null, null]})),
        issue(json!({"constraints": [1, 5]})),
        issue(json!({"policy": [["hipaa"]]})),
        json!([jti, "read", "crm:a", "success"]),
    ];
    for body in positional {
        let response = if body.is_array() {
            app.post("/v1/vat/record/action", &body).await
        } else {
            app.post_auth("/v1/vat/issue/l1", &app.admin_key, &body)
                .await
        };
        expect_problem(response, StatusCode::UNPROCESSABLE_ENTITY, "invalid_field").await;
    }
    let broken_list = app
        .client
        .post(app.url("/v1/vat/record/action"))
        .header("content-type", "application/json")
        .body("[1,")
        .send()
        .await
        .unwrap();
    expect_problem(broken_list, StatusCode::BAD_REQUEST, "malformed_json").await;

    let record = expect_json(
        app.act(jti, "read", "crm:a", "success").await,
        StatusCode::CREATED,
    )
    .await;
    let path = format!("/v1/vat/aar/{}/feedback", text(&record["aar_id"]));
    let long_note = json!({"rating": "approved", "note": "n".repeat(2049)});
    expect_problem(
        app.post_auth(&path, &app.admin_key, &long_note).await,
        StatusCode::UNPROCESSABLE_ENTITY,
        "too_long",
    )
    .await;
    expect_problem(
        app.post_auth(&path, &app.admin_key, &json!({"rating": "great"}))
            .await,
        StatusCode::UNPROCESSABLE_ENTITY,
        "unknown_rating",
    )
    .await;
}

#[tokio::test]
async fn api_keys_are_required_checked_and_revocable() {
    let app = TestApp::spawn().await;
    let body = json!({"developer_email": "dev@example.com", "agent_id": "bot", "resources": ["crm:*"], "actions": ["read"]});
    let response = app.post("/v1/vat/issue/l1", &body).await;
    assert_eq!(
        response.headers()["www-authenticate"],
        r#"Bearer realm="mandate""#
    );
    expect_problem(response, StatusCode::UNAUTHORIZED, "unauthorized").await;
    let forged = format!("mk_{}", "A".repeat(43));
    expect_problem(
        app.post_auth("/v1/vat/issue/l1", &forged, &body).await,
        StatusCode::UNAUTHORIZED,
        "unauthorized",
    )
    .await;
    expect_problem(
        app.get_auth("/v1/vat/reputation/bot", "not-a-key").await,
        StatusCode::UNAUTHORIZED,
        "unauthorized",
    )
    .await;

    let db = app.dir.as_ref().unwrap().path().join(store::DB_FILE);
    let conn = store::open_writer(&db).unwrap();
    let (id, key) =
        apikeys::create(&conn, Some("Alice@Example.com"), false, app.clock.now()).unwrap();
    let own = json!({"developer_email": "alice@example.com", "agent_id": "bot", "resources": ["crm:*"], "actions": ["read"]});
    expect_json(
        app.post_auth("/v1/vat/issue/l1", &key, &own).await,
        StatusCode::CREATED,
    )
    .await;
    expect_problem(
        app.post_auth("/v1/vat/issue/l1", &key, &body).await,
        StatusCode::FORBIDDEN,
        "email_mismatch",
    )
    .await;
    assert!(apikeys::revoke(&conn, &id, app.clock.now()).unwrap());
    expect_problem(
        app.post_auth("/v1/vat/issue/l1", &key, &own).await,
        StatusCode::UNAUTHORIZED,
        "unauthorized",
    )
    .await;
}

#[tokio::test]
async fn unknown_revoked_and_expired_tokens_answer_alike() {
    let app = TestApp::spawn().await;
    let unknown = "vat_root_01m80mjknah632wmr5mq81vn6x";
    let problem = expect_problem(
        app.act(unknown, "read", "crm:a", "success").await,
        StatusCode::FORBIDDEN,
        "token_inactive",
    )
    .await;
    assert!(
        problem.get("aar_id").is_none(),
        "nothing is recorded for an unknown token"
    );

    let short = app
        .issue(json!({"developer_email": "dev@example.com", "agent_id": "bot", "resources": ["crm:*"], "actions": ["read"], "ttl_seconds": 1}))
        .await;
    app.clock.advance(Duration::from_millis(2100));
    let expired = expect_problem(
        app.act(text(&short["jti"]), "read", "crm:a", "success")
            .await,
        StatusCode::FORBIDDEN,
        "token_inactive",
    )
    .await;
    assert_eq!(problem["detail"], expired["detail"]);
    let record = expect_json(
        app.get_auth(
            &format!("/v1/vat/aar/{}", text(&expired["aar_id"])),
            &app.admin_key,
        )
        .await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(record["deny_reason"], "token_expired");
    let body = json!({"vat_jti": short["jti"], "action": "read", "resource": "crm:a"});
    expect_problem(
        app.post("/v1/vat/authorize", &body).await,
        StatusCode::FORBIDDEN,
        "token_inactive",
    )
    .await;
    let status = expect_json(
        app.get_auth(
            &format!("/v1/vat/tokens/{}", text(&short["jti"])),
            &app.admin_key,
        )
        .await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(status["status"], "expired");
}

#[tokio::test]
async fn unknown_things_are_404_and_methods_405() {
    let app = TestApp::spawn().await;
    let key = app.admin_key.clone();
    for path in [
        "/v1/vat/aar/aar_01m80mjknah632wmr5mq81vn6x",
        "/v1/vat/aar/not-an-id",
        "/v1/vat/aar/provenance/prov_01m80mjknah632wmr5mq81vn6x",
        "/v1/vat/aar/provenance/prov_01m80mjknah632wmr5mq81vn6x/graph",
        "/v1/vat/reputation/nobody",
        "/v1/vat/tokens/vat_root_01m80mjknah632wmr5mq81vn6x",
        "/v2/anything",
    ] {
        let response = app.get_auth(path, &key).await;
        assert_eq!(response.status(), StatusCode::NOT_FOUND, "{path}");
        assert_eq!(
            response.headers()["content-type"],
            "application/problem+json"
        );
    }
    let complete = app
        .post(
            "/v1/vat/aar/aar_01m80mjknah632wmr5mq81vn6x/complete",
            &json!({"result": "success"}),
        )
        .await;
    expect_problem(complete, StatusCode::NOT_FOUND, "record_not_found").await;
    let response = app
        .client
        .delete(app.url("/v1/vat/record/action"))
        .send()
        .await
        .unwrap();
    expect_problem(
        response,
        StatusCode::METHOD_NOT_ALLOWED,
        "method_not_allowed",
    )
    .await;
}

#[tokio::test]
async fn rate_limits_answer_429_with_retry_after() {
    let app = TestApp::spawn_with(|c| {
        c.rate_limits.per_api_key = 1;
        c.rate_limits.burst = 2;
    })
    .await;
    let mut statuses = Vec::new();
    for _ in 0..4 {
        let response = app.get_auth("/v1/vat/reputation/bot", &app.admin_key).await;
        if response.status() == StatusCode::TOO_MANY_REQUESTS {
            let retry: u64 = response.headers()["retry-after"]
                .to_str()
                .unwrap()
                .parse()
                .unwrap();
            assert!(retry >= 1);
            expect_problem(response, StatusCode::TOO_MANY_REQUESTS, "rate_limited").await;
            statuses.push(429);
        } else {
            statuses.push(response.status().as_u16());
        }
    }
    assert_eq!(statuses, [404, 404, 429, 429]);
}

//! Every error status with its problem body.

use std::time::Duration;

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::helpers::{TestApp, expect_json, expect_problem, text};

/// Bodies sent to `record/action` and the problem each gets.
const BODIES: [(&[u8], Option<&str>, StatusCode, &str); 6] = [
    (
        b"{not json",
        Some("application/json"),
        StatusCode::BAD_REQUEST,
        "malformed_json",
    ),
    (
        b"\xef\xbb\xbf{}",
        Some("application/json"),
        StatusCode::BAD_REQUEST,
        "malformed_json",
    ),
    (
        b"{\"action\":\"\\ud800\"}",
        Some("application/json"),
        StatusCode::BAD_REQUEST,
        "malformed_json",
    ),
    (
        b"{\"action\":\"\xff\"}",
        Some("application/json"),
        StatusCode::BAD_REQUEST,
        "malformed_json",
    ),
    (
        b"{}",
        None,
        StatusCode::UNSUPPORTED_MEDIA_TYPE,
        "unsupported_media_type",
    ),
    (
        b"{}",
        Some("text/plain"),
        StatusCode::UNSUPPORTED_MEDIA_TYPE,
        "unsupported_media_type",
    ),
];

/// Queries of `GET /v1/vat/aar` and the code of the 400 each gets.
const QUERIES: [(&str, &str); 4] = [
    ("limit=abc", "invalid_query"),
    ("limit=501", "invalid_query"),
    ("cursor=zzz", "invalid_cursor"),
    ("since=yesterday", "invalid_query"),
];

#[tokio::test]
async fn bad_requests_are_problems() {
    let app = TestApp::spawn().await;
    let url = app.url("/v1/vat/record/action");
    for (body, content_type, status, code) in BODIES {
        let mut request = app.client.post(&url).body(body);
        if let Some(content_type) = content_type {
            request = request.header("content-type", content_type);
        }
        expect_problem(request.send().await.unwrap(), status, code).await;
    }
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
            .post(&url)
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
        .post(&url)
        .header("content-type", "application/json")
        .body(big)
        .send()
        .await
        .unwrap();
    expect_problem(response, StatusCode::PAYLOAD_TOO_LARGE, "payload_too_large").await;

    for (query, code) in QUERIES {
        expect_problem(
            app.get_auth(&format!("/v1/vat/aar?{query}"), &app.admin_key)
                .await,
            StatusCode::BAD_REQUEST,
            code,
        )
        .await;
    }
}

/// Sets `edit`'s members in a copy of `base`.
fn edited(base: &Value, edit: &Value) -> Value {
    let mut body = base.clone();
    for (k, v) in edit.as_object().unwrap() {
        body[k] = v.clone();
    }
    body
}

/// How a well-formed body breaks a rule of `record/action` (its edit of a
/// valid body), the code of the 422 it gets and the field it names.
fn action_cases() -> Vec<(Value, &'static str, Option<&'static str>)> {
    vec![
        (json!({"action": 5}), "invalid_field", Some("action")),
        (json!({"extra": true}), "unknown_field", Some("extra")),
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
    ]
}

/// Bodies of `record/action` written by hand, the code of the 422 each
/// gets and the field it names.
const RAW_BODIES: [(&str, &str, &str); 1] = [(
    r#"{"vat_jti":"x","action":"read","action":"read","resource":"crm:a","result":"success"}"#,
    "invalid_field",
    "action",
)];

/// Numbers no amount holds, in bodies serde_json must read or refuse.
const HUGE_NUMBERS: [&str; 2] = [
    r#"{"vat_jti":"x","action":"read","resource":"crm:a","result":"success","spend_usd":1e400}"#,
    r#"{"vat_jti":"x","action":"read","resource":"crm:a","result":"success","spend_usd":123456789012345678901234567890}"#,
];

/// How a well-formed body breaks a rule of `issue/l1` (its edit of a valid
/// body), the code of the 422 it gets and the field it names.
fn issue_cases() -> Vec<(Value, &'static str, &'static str)> {
    let many: Vec<String> = (0..65).map(|i| format!("ns:r{i}")).collect();
    vec![
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
        // Wrong shapes, down to the member: serde's own message names none.
        (json!({"resources": "crm:*"}), "invalid_field", "resources"),
        (
            json!({"resources": ["crm:a", 5]}),
            "invalid_field",
            "resources",
        ),
        (json!({"ttl_seconds": 1.5}), "invalid_field", "ttl_seconds"),
        (
            json!({"constraints": {"max_actions": "5"}}),
            "invalid_field",
            "constraints.max_actions",
        ),
        (
            json!({"policy": {"frameworks": "gdpr"}}),
            "invalid_field",
            "policy.frameworks",
        ),
        (
            json!({"constraints": {"max_spend": 5}}),
            "unknown_field",
            "constraints.max_spend",
        ),
        (json!({"policy": {}}), "missing_field", "policy.frameworks"),
    ]
}

/// Edits of a valid `issue/l1` body giving an object as a positional list
/// (serde reads a struct from one too; the API takes objects only), and the
/// member each names.
fn issue_positional() -> [(Value, &'static str); 3] {
    [
        (json!({"constraints": [null, null]}), "constraints"),
        (json!({"constraints": [1, 5]}), "constraints"),
        (json!({"policy": [["hipaa"]]}), "policy"),
    ]
}

/// Feedback bodies that get a 422, with its code.
fn feedback_cases() -> [(Value, &'static str); 2] {
    [
        (
            json!({"rating": "approved", "note": "n".repeat(2049)}),
            "too_long",
        ),
        (json!({"rating": "great"}), "unknown_rating"),
    ]
}

#[tokio::test]
async fn wrong_shapes_and_broken_rules_are_422_naming_the_field() {
    let app = TestApp::spawn().await;
    let token = app.root("bot", &["crm:*"], &["read"]).await;
    let jti = text(&token["jti"]);
    let base = json!({"vat_jti": jti, "action": "read", "resource": "crm:a", "result": "success"});
    for (edit, code, field) in action_cases() {
        let body = edited(&base, &edit);
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
    let problem = expect_problem(
        app.post("/v1/vat/record/action", &body).await,
        StatusCode::UNPROCESSABLE_ENTITY,
        "missing_field",
    )
    .await;
    assert_eq!(problem["field"], "action");
    for (raw, code, field) in RAW_BODIES {
        let response = app
            .client
            .post(app.url("/v1/vat/record/action"))
            .header("content-type", "application/json")
            .body(raw)
            .send()
            .await
            .unwrap();
        let problem = expect_problem(response, StatusCode::UNPROCESSABLE_ENTITY, code).await;
        assert_eq!(problem["field"], field, "{raw}");
    }
    for raw in HUGE_NUMBERS {
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

    let issue_base = json!({"developer_email": "dev@example.com", "agent_id": "bot", "resources": ["crm:*"], "actions": ["read"]});
    for (edit, code, field) in issue_cases() {
        let body = edited(&issue_base, &edit);
        let problem = expect_problem(
            app.post_auth("/v1/vat/issue/l1", &app.admin_key, &body)
                .await,
            StatusCode::UNPROCESSABLE_ENTITY,
            code,
        )
        .await;
        assert_eq!(problem["field"], field, "{body}");
    }
    for (edit, field) in issue_positional() {
        let problem = expect_problem(
            app.post_auth(
                "/v1/vat/issue/l1",
                &app.admin_key,
                &edited(&issue_base, &edit),
            )
            .await,
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_field",
        )
        .await;
        assert_eq!(problem["field"], field, "{edit}");
    }
    // The body as a whole is at fault: no field.
    let whole = expect_problem(
        app.post(
            "/v1/vat/record/action",
            &json!([jti, "read", "crm:a", "success"]),
        )
        .await,
        StatusCode::UNPROCESSABLE_ENTITY,
        "invalid_field",
    )
    .await;
    assert!(whole.get("field").is_none(), "{whole}");
    // A wrong value inside a list is told with its position.
    let in_list = expect_problem(
        app.post_auth(
            "/v1/vat/issue/l1",
            &app.admin_key,
            &edited(&issue_base, &json!({"resources": ["crm:a", 5]})),
        )
        .await,
        StatusCode::UNPROCESSABLE_ENTITY,
        "invalid_field",
    )
    .await;
    assert!(
        text(&in_list["detail"]).starts_with("resources[1]: invalid type"),
        "{in_list}"
    );
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
    for (body, code) in feedback_cases() {
        expect_problem(
            app.post_auth(&path, &app.admin_key, &body).await,
            StatusCode::UNPROCESSABLE_ENTITY,
            code,
        )
        .await;
    }
}

/// Titles are written for people, not spelled out from the code (they were
/// "Malformed json" and "Ttl out of range").
#[tokio::test]
async fn titles_are_written_for_people() {
    let app = TestApp::spawn().await;
    let malformed = app
        .client
        .post(app.url("/v1/vat/record/action"))
        .header("content-type", "application/json")
        .body("{not json")
        .send()
        .await
        .unwrap();
    let problem = expect_problem(malformed, StatusCode::BAD_REQUEST, "malformed_json").await;
    assert_eq!(problem["title"], "Malformed JSON");
    let body = json!({"developer_email": "dev@example.com", "agent_id": "bot",
                      "resources": ["crm:*"], "actions": ["read"], "ttl_seconds": 0});
    let problem = expect_problem(
        app.post_auth("/v1/vat/issue/l1", &app.admin_key, &body)
            .await,
        StatusCode::UNPROCESSABLE_ENTITY,
        "ttl_out_of_range",
    )
    .await;
    assert_eq!(problem["title"], "Lifetime out of range");
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

    let created = expect_json(
        app.post_auth(
            "/v1/keys",
            &app.admin_key,
            &json!({"role": "developer", "email": "Alice@Example.com"}),
        )
        .await,
        StatusCode::CREATED,
    )
    .await;
    let (id, key) = (text(&created["key_id"]), text(&created["api_key"]));
    let own = json!({"developer_email": "alice@example.com", "agent_id": "bot", "resources": ["crm:*"], "actions": ["read"]});
    expect_json(
        app.post_auth("/v1/vat/issue/l1", key, &own).await,
        StatusCode::CREATED,
    )
    .await;
    expect_problem(
        app.post_auth("/v1/vat/issue/l1", key, &body).await,
        StatusCode::FORBIDDEN,
        "email_mismatch",
    )
    .await;
    let revoked = expect_json(
        app.send(
            reqwest::Method::DELETE,
            &format!("/v1/keys/{id}"),
            &app.admin_key,
            None,
        )
        .await,
        StatusCode::OK,
    )
    .await;
    assert!(revoked["revoked_at"].is_string());
    expect_problem(
        app.post_auth("/v1/vat/issue/l1", key, &own).await,
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
    // A wrong base URL: the 404 names the path it got, never the query.
    let problem = expect_problem(
        app.get_auth("/v2/vat/tokens/vat_x?limit=5", &key).await,
        StatusCode::NOT_FOUND,
        "not_found",
    )
    .await;
    assert_eq!(
        problem["detail"],
        "there is nothing at /v2/vat/tokens/vat_x"
    );
    let long = format!("/{}", "é".repeat(300));
    let problem = expect_problem(
        app.get_auth(&long, &key).await,
        StatusCode::NOT_FOUND,
        "not_found",
    )
    .await;
    let detail = text(&problem["detail"]);
    assert!(
        detail.starts_with("there is nothing at /%C3%A9"),
        "{detail}"
    );
    assert_eq!(detail.chars().count(), "there is nothing at ".len() + 200);
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

//! What the server logs: one line per request at `info`, so an operator
//! sees traffic without `debug`; and, down to `debug`, never a token, an API
//! key or a jti: a whole flow runs against the real binary and its log is
//! searched for every secret the flow used.

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::helpers::{expect_json, expect_problem, text};
use crate::process::{Server, admin_key, config_without_limits};

/// How a request's log line begins after its level.
const REQUEST_LINE: &str = "mandate_host::api: request ";

#[tokio::test]
async fn logs_never_hold_tokens_api_keys_or_jtis() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let log = dir.path().join("server.log");
    let server = Server::start_logging(&data, &config_without_limits(dir.path()), &log);
    let key = admin_key(&data);
    let post = |path: &str, bearer: Option<&str>, body: Value| {
        let mut request = server.client.post(server.url(path)).json(&body);
        if let Some(bearer) = bearer {
            request = request.bearer_auth(bearer);
        }
        request.send()
    };

    let root = expect_json(
        post(
            "/v1/vat/issue/l1",
            Some(&key),
            json!({"developer_email": "dev@example.com", "agent_id": "log-bot",
                   "resources": ["crm:*"], "actions": ["read", "delegate"]}),
        )
        .await
        .unwrap(),
        StatusCode::CREATED,
    )
    .await;
    let jti = text(&root["jti"]).to_owned();
    let jwt = text(&root["compact_jwt"]).to_owned();
    let action =
        json!({"vat_jti": jti, "action": "read", "resource": "crm:a", "result": "success"});
    let record = expect_json(
        post("/v1/vat/record/action", Some(&jwt), action.clone())
            .await
            .unwrap(),
        StatusCode::CREATED,
    )
    .await;
    let (signed, signature) = jwt.rsplit_once('.').unwrap();
    let flipped = if signature.starts_with('A') { 'B' } else { 'A' };
    let tampered = format!("{signed}.{flipped}{}", &signature[1..]);
    expect_problem(
        post("/v1/vat/record/action", Some(&tampered), action)
            .await
            .unwrap(),
        StatusCode::UNAUTHORIZED,
        "invalid_signature",
    )
    .await;
    let child = expect_json(
        post(
            "/v1/vat/delegate",
            Some(&jwt),
            json!({"vat_jti": jti, "agent_id": "log-helper", "resources": ["crm:a"], "actions": ["read"]}),
        )
        .await
        .unwrap(),
        StatusCode::CREATED,
    )
    .await;
    let aar = text(&record["aar_id"]);
    expect_json(
        post(
            &format!("/v1/vat/aar/{aar}/feedback"),
            Some(&key),
            json!({"rating": "approved"}),
        )
        .await
        .unwrap(),
        StatusCode::OK,
    )
    .await;
    let status = server
        .client
        .get(server.url(&format!("/v1/vat/tokens/{jti}")))
        .bearer_auth(&key)
        .send()
        .await
        .unwrap();
    expect_json(status, StatusCode::OK).await;
    let wrong_key = format!("{}x", &key[..key.len() - 1]);
    expect_problem(
        post("/v1/vat/revoke", Some(&wrong_key), json!({"jti": jti}))
            .await
            .unwrap(),
        StatusCode::UNAUTHORIZED,
        "unauthorized",
    )
    .await;
    expect_json(
        post("/v1/vat/revoke", Some(&key), json!({"jti": jti}))
            .await
            .unwrap(),
        StatusCode::OK,
    )
    .await;
    server.stop();

    let written = std::fs::read_to_string(&log).unwrap();
    let requests = written.lines().filter(|l| l.contains("request")).count();
    assert!(
        requests >= 8,
        "the log holds {requests} request lines:\n{written}"
    );
    let child_jti = text(&child["jti"]);
    let child_jwt = text(&child["compact_jwt"]);
    let mut secrets = vec![
        key.as_str(),
        &wrong_key,
        &jti,
        child_jti,
        &jwt,
        &tampered,
        child_jwt,
    ];
    secrets.extend(jwt.split('.'));
    secrets.extend(child_jwt.split('.'));
    for secret in secrets {
        assert!(!written.contains(secret), "the log holds {secret}");
    }
    // The random part of a key or a jti, in case a prefix were cut off.
    assert!(!written.contains(&key[3..]));
    assert!(!written.contains(&jti[9..]));
}

#[tokio::test]
async fn every_request_is_logged_once_at_info_by_route_template() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let log = dir.path().join("server.log");
    let server = Server::start_logging_by_default(&data, &config_without_limits(dir.path()), &log);
    let key = admin_key(&data);
    let issued = expect_json(
        server
            .client
            .post(server.url("/v1/vat/issue/l1"))
            .bearer_auth(&key)
            .json(
                &json!({"developer_email": "dev@example.com", "agent_id": "log-bot",
                          "resources": ["crm:*"], "actions": ["read"]}),
            )
            .send()
            .await
            .unwrap(),
        StatusCode::CREATED,
    )
    .await;
    let jti = text(&issued["jti"]).to_owned();
    let get = |path: String| {
        server
            .client
            .get(server.url(&path))
            .bearer_auth(&key)
            .send()
    };
    expect_json(
        get(format!("/v1/vat/tokens/{jti}?limit=5")).await.unwrap(),
        StatusCode::OK,
    )
    .await;
    expect_json(get("/healthz".to_owned()).await.unwrap(), StatusCode::OK).await;
    expect_problem(
        get(format!("/v2/vat/tokens/{jti}?secret=abc"))
            .await
            .unwrap(),
        StatusCode::NOT_FOUND,
        "not_found",
    )
    .await;
    expect_problem(
        server
            .client
            .post(server.url("/v1/vat/record/action"))
            .bearer_auth("not.a.token")
            .json(&json!({"action": "read", "resource": "crm:a", "result": "success"}))
            .send()
            .await
            .unwrap(),
        StatusCode::UNAUTHORIZED,
        "invalid_base64",
    )
    .await;
    server.stop();

    let written = std::fs::read_to_string(&log).unwrap();
    let requests: Vec<&str> = written
        .lines()
        .filter(|line| line.contains(REQUEST_LINE))
        .collect();
    let expected = [
        "INFO mandate_host::api: request method=POST route=/v1/vat/issue/l1 status=201 micros=",
        "INFO mandate_host::api: request method=GET route=/v1/vat/tokens/{jth} status=200 micros=",
        "INFO mandate_host::api: request method=GET route=/healthz status=200 micros=",
        "INFO mandate_host::api: request method=GET route=unmatched status=404 micros=",
        "INFO mandate_host::api: request method=POST route=/v1/vat/record/action status=401 micros=",
    ];
    assert_eq!(requests.len(), expected.len(), "{written}");
    for (line, expected) in requests.iter().zip(expected) {
        let (_, logged) = line.split_once("INFO ").unwrap_or_else(|| panic!("{line}"));
        let rest = logged
            .strip_prefix(expected.trim_start_matches("INFO "))
            .unwrap_or_else(|| panic!("{line} is not {expected}"));
        let (micros, request_id) = rest
            .split_once(" request_id=req_")
            .unwrap_or_else(|| panic!("{line} names no request id"));
        assert!(micros.parse::<u64>().is_ok(), "{line}");
        assert_eq!(request_id.len(), 26, "{line}");
    }
    for secret in [jti.as_str(), &key, "limit=5", "secret=abc", "not.a.token"] {
        assert!(
            !written.contains(secret),
            "the log holds {secret}:\n{written}"
        );
    }
}

//! The public and operational surface: OpenAPI, JWKS, health, metrics,
//! headers, and the page at `/`.

use reqwest::StatusCode;
use serde_json::Value;

use crate::helpers::{TestApp, expect_json, expect_problem};

#[tokio::test]
async fn openapi_lists_every_route() {
    let app = TestApp::spawn().await;
    let document: Value = expect_json(
        app.client
            .get(app.url("/v1/openapi.json"))
            .send()
            .await
            .unwrap(),
        StatusCode::OK,
    )
    .await;
    assert!(document["openapi"].as_str().unwrap().starts_with("3.1"));
    let paths = document["paths"].as_object().unwrap();
    let expected = [
        ("/v1/vat/issue/l1", "post"),
        ("/v1/vat/issue/l2", "post"),
        ("/v1/vat/auth/capture", "post"),
        ("/v1/vat/record/action", "post"),
        ("/v1/vat/record/actions", "post"),
        ("/v1/vat/authorize", "post"),
        ("/v1/vat/aar/{aar_id}/complete", "post"),
        ("/v1/vat/aar/{aar_id}/feedback", "post"),
        ("/v1/vat/reputation/{agent_id}", "get"),
        ("/v1/vat/aar/provenance/{provenance_ref}", "get"),
        ("/v1/vat/aar/provenance/{provenance_ref}/graph", "get"),
        ("/v1/vat/delegate", "post"),
        ("/v1/vat/revoke", "post"),
        ("/v1/vat/tokens/{jth}", "get"),
        ("/v1/vat/aar/{aar_id}", "get"),
        ("/v1/vat/aar", "get"),
        ("/v1/vat/workflows", "get"),
        ("/v1/me", "get"),
        ("/v1/orgs", "post"),
        ("/v1/orgs", "get"),
        ("/v1/orgs/{org_id}", "patch"),
        ("/v1/keys", "post"),
        ("/v1/keys", "get"),
        ("/v1/keys/{key_id}", "delete"),
        ("/.well-known/jwks.json", "get"),
        ("/healthz", "get"),
        ("/readyz", "get"),
        ("/metrics", "get"),
        ("/v1/openapi.json", "get"),
        ("/v1/vat/status/{list}", "get"),
        ("/v1/log/checkpoint", "get"),
        ("/v1/log/key", "get"),
        ("/v1/log/consistency", "get"),
        ("/v1/vat/aar/{aar_id}/proof", "get"),
        ("/v1/vat/approvals", "get"),
        ("/v1/vat/approvals/{approval_id}", "get"),
        ("/v1/vat/approvals/{approval_id}/decision", "post"),
        ("/v1/events", "get"),
        ("/v1/webhooks", "post"),
        ("/v1/webhooks", "get"),
        ("/v1/webhooks/{webhook_id}", "get"),
        ("/v1/webhooks/{webhook_id}", "patch"),
        ("/v1/webhooks/{webhook_id}", "delete"),
        ("/v1/webhooks/{webhook_id}/rotate-secret", "post"),
        ("/v1/webhooks/{webhook_id}/deliveries", "get"),
        ("/v1/vat/aar/feedback", "post"),
        ("/v1/vat/agents", "get"),
        ("/v1/vat/agents/{agent_id}/history", "get"),
        ("/v1/vat/overview", "get"),
        ("/v1/vat/inbox/counts", "get"),
        ("/v1/vat/tokens", "get"),
        ("/v1/trust/vouches", "post"),
        ("/v1/trust/vouches/{vouch_id}", "delete"),
        ("/v1/trust/agents/{agent_id}", "get"),
        ("/v1/trust/graph", "get"),
        ("/v1/trust/agents/{agent_id}/statement", "get"),
        ("/v1/access/evaluation", "post"),
        ("/v1/access/evaluations", "post"),
        ("/.well-known/authzen-configuration", "get"),
        ("/.well-known/oauth-authorization-server", "get"),
        ("/v1/oauth/authorize", "get"),
        ("/v1/oauth/requests/open", "post"),
        ("/v1/oauth/requests/decision", "post"),
        ("/v1/oauth/oidc/providers", "get"),
        ("/v1/oauth/oidc/{name}/start", "get"),
        ("/v1/oauth/oidc/{name}/callback", "get"),
        ("/v1/oauth/token", "post"),
        ("/v1/oauth/clients", "post"),
        ("/v1/oauth/clients", "get"),
        ("/v1/oauth/clients/{client_id}", "delete"),
        ("/v1/oauth/revoke", "post"),
        ("/v1/oauth/grants", "get"),
        ("/v1/oauth/grants/{grant_id}", "delete"),
        ("/v1/oauth/resources", "post"),
        ("/v1/oauth/resources", "get"),
        ("/v1/oauth/resources/{resource_id}", "delete"),
    ];
    for (path, method) in expected {
        assert!(
            paths.get(path).and_then(|p| p.get(method)).is_some(),
            "{method} {path} missing"
        );
    }
    assert_eq!(paths.len(), 69, "paths (some with two methods)");
    assert!(document["components"]["securitySchemes"]["api_key"].is_object());
    assert!(document["components"]["schemas"]["Problem"].is_object());
    let mut references = Vec::new();
    collect_references(&document, &mut references);
    assert!(!references.is_empty());
    for reference in references {
        let name = reference
            .strip_prefix("#/components/schemas/")
            .unwrap_or_else(|| panic!("{reference} is not a schema reference"));
        assert!(
            document["components"]["schemas"][name].is_object(),
            "{reference} does not resolve"
        );
    }
}

/// Every `$ref` in a JSON document.
fn collect_references(value: &Value, references: &mut Vec<String>) {
    match value {
        Value::Object(members) => {
            for (name, member) in members {
                match member {
                    Value::String(target) if name == "$ref" => references.push(target.clone()),
                    _ => collect_references(member, references),
                }
            }
        }
        Value::Array(items) => items
            .iter()
            .for_each(|item| collect_references(item, references)),
        _ => {}
    }
}

/// Every answer names its request with an id of the server's own drawing,
/// a fresh one each time, whatever the caller sent: a refusal too, so a
/// client can quote it.
#[tokio::test]
async fn every_answer_carries_a_fresh_request_id_of_the_servers_own() {
    let app = TestApp::spawn().await;
    let id = |response: &reqwest::Response| {
        let value = response.headers()["x-request-id"]
            .to_str()
            .unwrap()
            .to_owned();
        let ulid = value.strip_prefix("req_").expect("req_ prefix");
        assert_eq!(ulid.len(), 26, "{value}");
        value
    };
    let first = app.client.get(app.url("/healthz")).send().await.unwrap();
    let sent = app
        .client
        .get(app.url("/healthz"))
        .header("x-request-id", "req_chosen-by-the-caller")
        .send()
        .await
        .unwrap();
    let refused = app
        .client
        .post(app.url("/v1/vat/authorize"))
        .bearer_auth("not-a-token")
        .json(&serde_json::json!({"action": "read", "resource": "crm:x"}))
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), StatusCode::UNAUTHORIZED);
    let ids = [id(&first), id(&sent), id(&refused)];
    assert_ne!(ids[0], ids[1]);
    assert_ne!(ids[1], ids[2]);
    assert_ne!(ids[1], "req_chosen-by-the-caller");
}

#[tokio::test]
async fn health_readiness_metrics_and_headers() {
    let app = TestApp::spawn().await;
    let health = app.client.get(app.url("/healthz")).send().await.unwrap();
    let headers = health.headers().clone();
    assert_eq!(headers["x-content-type-options"], "nosniff");
    assert_eq!(headers["referrer-policy"], "no-referrer");
    assert!(
        headers["content-security-policy"]
            .to_str()
            .unwrap()
            .contains("frame-ancestors 'none'")
    );
    assert_eq!(expect_json(health, StatusCode::OK).await["status"], "ok");
    assert_eq!(
        expect_json(
            app.client.get(app.url("/readyz")).send().await.unwrap(),
            StatusCode::OK
        )
        .await["status"],
        "ready"
    );

    app.root("bot", &["crm:*"], &["read"]).await;
    let metrics = app.client.get(app.url("/metrics")).send().await.unwrap();
    assert_eq!(metrics.status(), StatusCode::OK, "open on loopback");
    let text = metrics.text().await.unwrap();
    assert!(text.contains("mandate_http_requests_total{route=\"/v1/vat/issue/l1\",method=\"POST\",status=\"201\"} 1"), "{text}");
    assert!(text.contains("mandate_group_commit_batch_size_bucket"));
    assert!(
        !text.contains("vat_root_"),
        "no token id leaks into metrics"
    );

    let jwks = app
        .client
        .get(app.url("/.well-known/jwks.json"))
        .send()
        .await
        .unwrap();
    assert_eq!(jwks.headers()["access-control-allow-origin"], "*");

    let page = app.client.get(app.url("/")).send().await.unwrap();
    assert_eq!(page.status(), StatusCode::OK);
    assert!(
        page.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/html")
    );
    assert!(
        page.headers()["content-security-policy"]
            .to_str()
            .unwrap()
            .contains("script-src 'self'")
    );
}

#[tokio::test]
async fn metrics_need_a_key_from_loopback_when_a_proxy_is_trusted() {
    for proxy in ["127.0.0.1", "10.0.0.1"] {
        let app = TestApp::spawn_with(|c| c.trusted_proxies = vec![proxy.parse().unwrap()]).await;
        assert!(app.base.starts_with("http://127.0.0.1:"));
        let response = app.client.get(app.url("/metrics")).send().await.unwrap();
        expect_problem(response, StatusCode::UNAUTHORIZED, "unauthorized").await;
        let response = app.get_auth("/metrics", &app.admin_key).await;
        assert_eq!(response.status(), StatusCode::OK, "behind {proxy}");
    }
    let direct = TestApp::spawn().await;
    let response = direct
        .client
        .get(direct.url("/metrics"))
        .send()
        .await
        .unwrap();
    assert_eq!(
        response.status(),
        StatusCode::OK,
        "no proxy: open on loopback"
    );
}

#[tokio::test]
async fn metrics_need_a_key_off_loopback_policy() {
    let app = TestApp::spawn_with(|c| c.metrics_open_on_loopback = false).await;
    let response = app.client.get(app.url("/metrics")).send().await.unwrap();
    assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
    let response = app.get_auth("/metrics", &app.admin_key).await;
    assert_eq!(response.status(), StatusCode::OK);
}

//! Failing closed (issue 32): a requirement that could never match is
//! refused rather than issued; nothing a token signs comes from the
//! request; out-of-range numbers are 4xx before any query; a batch pays for
//! each record; webhook URLs neither echo what DNS answers nor reach other
//! ports; a vouch weight is in (0, 1] as sent.

use std::time::Duration;

use mandate_core::Claims;
use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::helpers::{TestApp, expect_json, expect_problem, text};

/// An issue request for an agent that may read and send mail, with
/// `constraints`.
fn mailer(constraints: Value) -> Value {
    json!({
        "developer_email": "dev@example.com",
        "agent_id": "mailer",
        "resources": ["mail:*", "crm:contacts"],
        "actions": ["read", "send", "delegate"],
        "constraints": constraints,
    })
}

async fn issue(app: &TestApp, body: &Value) -> reqwest::Response {
    app.post_auth("/v1/vat/issue/l1", &app.admin_key, body)
        .await
}

/// A 422 naming `field` with `code`, whose detail names `named`.
async fn refused(response: reqwest::Response, field: &str, code: &str, named: &str) {
    let problem = expect_problem(response, StatusCode::UNPROCESSABLE_ENTITY, code).await;
    assert_eq!(problem["field"], field, "{problem}");
    assert!(text(&problem["detail"]).contains(named), "{problem}");
}

#[tokio::test]
async fn a_requirement_that_could_never_match_is_refused_at_issue() {
    let app = TestApp::spawn().await;
    refused(
        issue(
            &app,
            &mailer(json!({"require_approval": {"actions": ["sned"]}})),
        )
        .await,
        "constraints.require_approval.actions",
        "approval_action_not_held",
        "`sned`",
    )
    .await;
    refused(
        issue(
            &app,
            &mailer(json!({"require_approval": {"actions": ["send", "sned"]}})),
        )
        .await,
        "constraints.require_approval.actions",
        "approval_action_not_held",
        "`sned`",
    )
    .await;
    refused(
        issue(
            &app,
            &mailer(json!({"require_approval": {"resources": ["mial:*"]}})),
        )
        .await,
        "constraints.require_approval.resources",
        "approval_resource_outside_scope",
        "`mial:*`",
    )
    .await;
    refused(
        issue(
            &app,
            &mailer(json!({"require_approval": {"resources": ["crm:deals"]}})),
        )
        .await,
        "constraints.require_approval.resources",
        "approval_resource_outside_scope",
        "`crm:deals`",
    )
    .await;
    for threshold in [500.0, 500.000001, 10_000.0] {
        refused(
            issue(
                &app,
                &mailer(json!({
                    "max_spend_usd": 500,
                    "require_approval": {"spend_over_usd": threshold},
                })),
            )
            .await,
            "constraints.require_approval.spend_over_usd",
            "approval_threshold_unreachable",
            "max_spend_usd",
        )
        .await;
    }
    // Nothing was issued for any of them; a requirement that can match is
    // issued, and asks.
    let tokens = expect_json(
        app.get_auth("/v1/vat/tokens", &app.admin_key).await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(tokens["tokens"].as_array().unwrap().len(), 0, "{tokens}");
    let token = expect_json(
        issue(
            &app,
            &mailer(json!({
                "max_spend_usd": 500,
                "require_approval": {"actions": ["send"], "resources": ["mail:outbox"], "spend_over_usd": 499.99},
            })),
        )
        .await,
        StatusCode::CREATED,
    )
    .await;
    let asked = app
        .post_auth(
            "/v1/vat/authorize",
            text(&token["compact_jwt"]),
            &json!({"action": "send", "resource": "mail:x"}),
        )
        .await;
    assert_eq!(asked.status(), StatusCode::ACCEPTED);
}

#[tokio::test]
async fn a_delegation_adding_a_requirement_that_could_never_match_is_refused() {
    let app = TestApp::spawn().await;
    let parent = expect_json(
        issue(
            &app,
            &mailer(
                json!({"max_spend_usd": 100, "require_approval": {"resources": ["crm:contacts"]}}),
            ),
        )
        .await,
        StatusCode::CREATED,
    )
    .await;
    let child = |requirement: Value| {
        json!({
            "agent_id": "helper",
            "resources": ["mail:*"],
            "actions": ["read", "send"],
            "constraints": {"require_approval": requirement},
        })
    };
    refused(
        app.delegate(&parent, child(json!({"actions": ["sned"]})))
            .await,
        "constraints.require_approval.actions",
        "approval_action_not_held",
        "`sned`",
    )
    .await;
    // The child may not hold what it would ask approval for, even where
    // the parent does.
    refused(
        app.delegate(&parent, child(json!({"actions": ["delegate"]})))
            .await,
        "constraints.require_approval.actions",
        "approval_action_not_held",
        "`delegate`",
    )
    .await;
    refused(
        app.delegate(&parent, child(json!({"resources": ["mial:*"]})))
            .await,
        "constraints.require_approval.resources",
        "approval_resource_outside_scope",
        "`mial:*`",
    )
    .await;
    // The budget after inheritance: the parent's $100.
    refused(
        app.delegate(&parent, child(json!({"spend_over_usd": 100})))
            .await,
        "constraints.require_approval.spend_over_usd",
        "approval_threshold_unreachable",
        "max_spend_usd",
    )
    .await;
    // What the child inherits and cannot do (crm:contacts) is not its
    // typo: the child is issued, with the parent's requirement kept.
    let issued = expect_json(
        app.delegate(&parent, child(json!({"actions": ["send"]})))
            .await,
        StatusCode::CREATED,
    )
    .await;
    let claims: Claims = serde_json::from_value(issued["claims"].clone()).unwrap();
    let requirement = claims.svc_constraints.unwrap().require_approval.unwrap();
    assert_eq!(requirement.actions().len(), 1);
    assert_eq!(requirement.resources()[0].as_str(), "crm:contacts");
}

#[tokio::test]
async fn a_live_token_whose_requirement_could_never_match_is_listed_at_start() {
    let app = TestApp::spawn().await;
    let good = expect_json(
        issue(
            &app,
            &mailer(json!({"require_approval": {"actions": ["send"]}})),
        )
        .await,
        StatusCode::CREATED,
    )
    .await;
    let typo = expect_json(
        issue(
            &app,
            &mailer(json!({"require_approval": {"actions": ["read"]}})),
        )
        .await,
        StatusCode::CREATED,
    )
    .await;
    // As a release before the rule would have stored it.
    let jti = text(&typo["jti"]).to_owned();
    app.with_database(move |conn| {
        conn.execute(
            "UPDATE tokens SET claims = replace(claims, '\"require_approval\":{\"actions\":[\"read\"]}', '\"require_approval\":{\"actions\":[\"sned\"]}') WHERE jti = ?1",
            [jti.as_str()],
        )
        .unwrap();
    });
    let now = mandate_host::clock::now_s() + 60;
    let found = app.with_database(move |conn| {
        mandate_host::store::tokens::unreachable_requirements(conn, now).unwrap()
    });
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].agent_id, "mailer");
    assert_eq!(found[0].reason.code(), "approval_action_not_held");
    let typo_claims: Claims = serde_json::from_value(typo["claims"].clone()).unwrap();
    assert_eq!(found[0].jth, typo_claims.jth().as_str());
    drop(good);
}

/// The status list URI of an issued token.
fn status_uri(token: &Value) -> String {
    text(&token["claims"]["status"]["status_list"]["uri"]).to_owned()
}

#[tokio::test]
async fn a_forged_host_is_never_signed() {
    let app = TestApp::spawn().await;
    let root = app
        .issue(json!({
            "developer_email": "dev@example.com",
            "agent_id": "bot",
            "resources": ["crm:*"],
            "actions": ["read", "delegate"],
        }))
        .await;
    let honest = status_uri(&root);
    assert!(honest.starts_with(&app.base), "{honest}");
    // A status list fetched with a forged Host is the deployment's list,
    // signed for the deployment's URI, and so is the next one anyone gets.
    let list = |host: Option<&'static str>| {
        let mut request = app.client.get(app.url("/v1/vat/status/0"));
        if let Some(host) = host {
            request = request.header("host", host);
        }
        async move {
            let response = request.send().await.unwrap();
            assert_eq!(response.status(), StatusCode::OK);
            let jwt = response.text().await.unwrap();
            let payload = jwt.split('.').nth(1).unwrap().to_owned();
            let claims: Value = serde_json::from_slice(
                &base64::Engine::decode(&base64::engine::general_purpose::URL_SAFE_NO_PAD, payload)
                    .unwrap(),
            )
            .unwrap();
            text(&claims["sub"]).to_owned()
        }
    };
    assert_eq!(list(Some("evil.example")).await, honest);
    assert_eq!(list(None).await, honest);
    // A delegation sent with a forged Host gets the deployment's URI.
    let child = app
        .client
        .post(app.url("/v1/vat/delegate"))
        .header("host", "evil.example")
        .bearer_auth(text(&root["compact_jwt"]))
        .json(&json!({"agent_id": "helper", "resources": ["crm:a"], "actions": ["read"]}))
        .send()
        .await
        .unwrap();
    let child = expect_json(child, StatusCode::CREATED).await;
    let uri = status_uri(&child);
    assert!(uri.starts_with(&app.base), "{uri}");
    assert!(!uri.contains("evil"), "{uri}");
    // And so does an issue.
    let issued = app
        .client
        .post(app.url("/v1/vat/issue/l1"))
        .header("host", "evil.example")
        .bearer_auth(&app.admin_key)
        .json(
            &json!({"developer_email": "dev@example.com", "agent_id": "bot2",
                      "resources": ["crm:*"], "actions": ["read"]}),
        )
        .send()
        .await
        .unwrap();
    let issued = expect_json(issued, StatusCode::CREATED).await;
    assert!(status_uri(&issued).starts_with(&app.base));
}

#[tokio::test]
async fn signed_urls_come_from_public_url_when_set() {
    let app = TestApp::spawn_with(|config| {
        config.public_url = Some("https://mandate.example.com/prefix/".to_owned());
    })
    .await;
    let root = app.root("bot", &["crm:*"], &["read"]).await;
    assert_eq!(
        status_uri(&root),
        "https://mandate.example.com/prefix/v1/vat/status/0"
    );
}

#[tokio::test]
async fn out_of_range_numbers_are_refused_before_any_query() {
    let app = TestApp::spawn().await;
    app.root("bot", &["crm:*"], &["read"]).await;
    for list in [
        "9223372036854775807",
        "9223372036854775808",
        "18446744073709551615",
        "18446744073709551616",
        "99999999999999999999999",
        "-1",
        "1",
    ] {
        expect_problem(
            app.client
                .get(app.url(&format!("/v1/vat/status/{list}")))
                .send()
                .await
                .unwrap(),
            StatusCode::NOT_FOUND,
            "status_list_not_found",
        )
        .await;
    }
    for query in [
        "old=0&new=18446744073709551615",
        "old=9223372036854775808&new=9223372036854775809",
        "old=0&new=18446744073709551616",
    ] {
        let response = app
            .client
            .get(app.url(&format!("/v1/log/consistency?{query}")))
            .send()
            .await
            .unwrap();
        assert!(
            response.status().is_client_error(),
            "{query}: {}",
            response.status()
        );
    }
    for tile in ["0/x999/999/999/999/999/999/999", "0/18446744073709551615"] {
        let response = app
            .client
            .get(app.url(&format!("/v1/log/tile/{tile}")))
            .send()
            .await
            .unwrap();
        assert!(response.status().is_client_error(), "{tile}");
    }
}

#[tokio::test]
async fn a_batch_looks_its_tokens_up_in_one_query() {
    let app = TestApp::spawn().await;
    let root = app.root("bot", &["crm:*"], &["read"]).await;
    let known = text(&root["jti"]).to_owned();
    let mut jtis: Vec<String> = (0..600).map(|n| format!("vat_root_01j{n:023}")).collect();
    jtis.push(known.clone());
    let asked = jtis.clone();
    let found =
        app.with_database(move |conn| mandate_host::store::tokens::orgs_of(conn, &asked).unwrap());
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found.contains_key(&known));
    // Over HTTP: every unknown bare jti is its own record's refusal, the
    // known one records.
    let records: Vec<Value> = jtis
        .iter()
        .map(|jti| json!({"vat_jti": jti, "action": "read", "resource": "crm:a", "result": "success"}))
        .collect();
    let body = expect_json(
        app.post("/v1/vat/record/actions", &json!({"records": records}))
            .await,
        StatusCode::OK,
    )
    .await;
    let results = body["results"].as_array().unwrap();
    assert_eq!(results.len(), 601);
    assert!(
        results[..600]
            .iter()
            .all(|r| r["recorded"] == false && r["code"] == "token_inactive"),
        "{}",
        results[0]
    );
    assert_eq!(results[600]["recorded"], true, "{}", results[600]);
}

#[tokio::test]
async fn a_batch_pays_for_each_record_against_the_token_limit() {
    let app = TestApp::spawn_with(|config| {
        config.rate_limits = mandate_host::config::RateLimits {
            per_token: 2,
            burst: 4,
            ..mandate_host::config::RateLimits::off()
        };
    })
    .await;
    let root = app.root("bot", &["crm:*"], &["read"]).await;
    let jwt = text(&root["compact_jwt"]).to_owned();
    let record = json!({"action": "read", "resource": "crm:a", "result": "success"});
    let records = vec![record.clone(); 40];
    let body = expect_json(
        app.post_auth("/v1/vat/record/actions", &jwt, &json!({"records": records}))
            .await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(body["results"].as_array().unwrap().len(), 40);
    // 40 records at 2 a second: the token is out for about 20 s, not for
    // the second the burst alone would cost.
    let refused = app.post_auth("/v1/vat/record/action", &jwt, &record).await;
    assert_eq!(refused.status(), StatusCode::TOO_MANY_REQUESTS);
    let wait: u64 = refused.headers()["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!(wait >= 15, "Retry-After {wait}");
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let still = app.post_auth("/v1/vat/record/action", &jwt, &record).await;
    assert_eq!(still.status(), StatusCode::TOO_MANY_REQUESTS);
}

#[tokio::test]
async fn a_vouch_weight_above_one_is_refused_as_sent() {
    let app = TestApp::spawn().await;
    app.root("target", &["crm:*"], &["read"]).await;
    for weight in [1.0000001, 1.0000004, 1.5] {
        let problem = expect_problem(
            app.post_auth(
                "/v1/trust/vouches",
                &app.admin_key,
                &json!({"agent_id": "target", "weight": weight}),
            )
            .await,
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_weight",
        )
        .await;
        assert_eq!(problem["field"], "weight");
    }
    expect_json(
        app.post_auth(
            "/v1/trust/vouches",
            &app.admin_key,
            &json!({"agent_id": "target", "weight": 1.0}),
        )
        .await,
        StatusCode::CREATED,
    )
    .await;
}

#[tokio::test]
async fn webhook_urls_neither_echo_dns_answers_nor_reach_other_ports() {
    let app = TestApp::spawn().await;
    let create = async |url: &str| {
        app.post_auth(
            "/v1/webhooks",
            &app.admin_key,
            &json!({"url": url, "events": ["record.denied"]}),
        )
        .await
    };
    let problem = expect_problem(
        create("https://localhost/hook").await,
        StatusCode::UNPROCESSABLE_ENTITY,
        "webhook_url_not_public",
    )
    .await;
    let detail = text(&problem["detail"]);
    for answer in ["127.0.0.1", "::1", "loopback"] {
        assert!(!detail.contains(answer), "{detail}");
    }
    for url in [
        "https://8.8.8.8:22/hook",
        "https://8.8.8.8:6379/",
        "https://8.8.4.4:25/",
    ] {
        let problem = expect_problem(
            create(url).await,
            StatusCode::UNPROCESSABLE_ENTITY,
            "webhook_port_not_allowed",
        )
        .await;
        assert_eq!(problem["field"], "url");
    }
}

#[tokio::test]
async fn metrics_through_an_unconfigured_same_host_proxy_need_a_key() {
    let app = TestApp::spawn().await;
    for (name, value) in [
        ("x-forwarded-for", "203.0.113.9"),
        ("forwarded", "for=203.0.113.9"),
        ("x-real-ip", "203.0.113.9"),
        ("via", "1.1 proxy"),
    ] {
        let response = app
            .client
            .get(app.url("/metrics"))
            .header(name, value)
            .send()
            .await
            .unwrap();
        expect_problem(response, StatusCode::UNAUTHORIZED, "unauthorized").await;
    }
    let direct = app.client.get(app.url("/metrics")).send().await.unwrap();
    assert_eq!(
        direct.status(),
        StatusCode::OK,
        "a direct scrape stays open"
    );
}

//! Budgets under concurrency, and the feedback race.

use reqwest::StatusCode;
use serde_json::json;

use crate::helpers::{TestApp, expect_json, text};

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn thirty_two_concurrent_spenders_never_overspend() {
    let app = TestApp::spawn().await;
    let root = app
        .issue(json!({
            "developer_email": "dev@example.com", "agent_id": "boss",
            "resources": ["shop:*"], "actions": ["buy", "delegate"],
            "constraints": {"max_spend_usd": 10, "max_actions": 40}
        }))
        .await;
    // Two children share the root's budget (each delegation is an action).
    let mut jtis = vec![text(&root["jti"]).to_owned()];
    for agent in ["left", "right"] {
        let child = expect_json(
            app.delegate(
                &root,
                json!({
                    "agent_id": agent, "resources": ["shop:*"], "actions": ["buy"],
                    "constraints": {"max_spend_usd": 10, "max_actions": 40}
                }),
            )
            .await,
            StatusCode::CREATED,
        )
        .await;
        jtis.push(text(&child["jti"]).to_owned());
    }
    let mut tasks = Vec::new();
    for i in 0..32 {
        let client = app.client.clone();
        let url = app.url("/v1/vat/record/action");
        let jti = jtis[i % jtis.len()].clone();
        tasks.push(tokio::spawn(async move {
            let body = json!({"vat_jti": jti, "action": "buy", "resource": "shop:item", "result": "success", "spend_usd": 0.75});
            client.post(url).json(&body).send().await.unwrap().status()
        }));
    }
    let mut accepted = 0;
    for task in tasks {
        match task.await.unwrap() {
            StatusCode::CREATED => accepted += 1,
            StatusCode::FORBIDDEN => {}
            other => panic!("unexpected {other}"),
        }
    }
    // 13 × 0.75 = 9.75 ≤ 10 < 14 × 0.75.
    assert_eq!(accepted, 13);
    let page = expect_json(
        app.get_auth(
            "/v1/vat/aar?action=buy&result=success&limit=500",
            &app.admin_key,
        )
        .await,
        StatusCode::OK,
    )
    .await;
    let spent: f64 = page["records"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["spend_usd"].as_f64().unwrap())
        .sum();
    assert!(spent <= 10.0, "spent {spent}");
    let denied = expect_json(
        app.get_auth("/v1/vat/aar?result=denied&limit=500", &app.admin_key)
            .await,
        StatusCode::OK,
    )
    .await;
    assert!(
        denied["records"]
            .as_array()
            .unwrap()
            .iter()
            .all(|r| r["deny_reason"] == "budget_max_spend_usd")
    );
    assert_eq!(denied["records"].as_array().unwrap().len(), 19);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn max_actions_holds_under_concurrency() {
    let app = TestApp::spawn().await;
    let root = app
        .issue(json!({
            "developer_email": "dev@example.com", "agent_id": "counter",
            "resources": ["api:*"], "actions": ["call"], "constraints": {"max_actions": 7}
        }))
        .await;
    let jti = text(&root["jti"]).to_owned();
    let mut tasks = Vec::new();
    for _ in 0..32 {
        let (client, url, jti) = (
            app.client.clone(),
            app.url("/v1/vat/authorize"),
            jti.clone(),
        );
        tasks.push(tokio::spawn(async move {
            let body = json!({"vat_jti": jti, "action": "call", "resource": "api:x"});
            let response: serde_json::Value = client
                .post(url)
                .json(&body)
                .send()
                .await
                .unwrap()
                .json()
                .await
                .unwrap();
            response["authorized"].as_bool().unwrap()
        }));
    }
    let mut authorized = 0;
    for task in tasks {
        if task.await.unwrap() {
            authorized += 1;
        }
    }
    assert_eq!(authorized, 7);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn fifty_concurrent_ratings_exactly_one_wins() {
    let app = TestApp::spawn().await;
    let root = app.root("bot", &["crm:*"], &["read"]).await;
    let record = expect_json(
        app.act(text(&root["jti"]), "read", "crm:a", "success")
            .await,
        StatusCode::CREATED,
    )
    .await;
    let path = app.url(&format!("/v1/vat/aar/{}/feedback", text(&record["aar_id"])));
    let ratings = ["approved", "flagged", "rejected"];
    let mut tasks = Vec::new();
    for i in 0..50 {
        let (client, path, key) = (app.client.clone(), path.clone(), app.admin_key.clone());
        let rating = ratings[i % 3];
        tasks.push(tokio::spawn(async move {
            let response = client
                .post(path)
                .bearer_auth(key)
                .json(&json!({"rating": rating}))
                .send()
                .await
                .unwrap();
            (response.status(), rating)
        }));
    }
    let mut winners = Vec::new();
    for task in tasks {
        let (status, rating) = task.await.unwrap();
        match status {
            StatusCode::OK => winners.push(rating),
            StatusCode::CONFLICT => {}
            other => panic!("unexpected {other}"),
        }
    }
    assert_eq!(winners.len(), 1);
    let stored = expect_json(
        app.get_auth(
            &format!("/v1/vat/aar/{}", text(&record["aar_id"])),
            &app.admin_key,
        )
        .await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(stored["rating"], winners[0]);
    let reputation = expect_json(
        app.get_auth("/v1/vat/reputation/bot", &app.admin_key).await,
        StatusCode::OK,
    )
    .await;
    let counts = &reputation["counts"];
    let total = counts["approved"].as_u64().unwrap()
        + counts["flagged"].as_u64().unwrap()
        + counts["rejected"].as_u64().unwrap();
    assert_eq!(total, 1);
}

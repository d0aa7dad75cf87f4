//! Races: the double rating, concurrent spenders (of one token, over many
//! trials, and through children sharing their root's budget), concurrent
//! authorizations against `max_actions`, revocation racing actions, and
//! delegation racing revocation of the parent.

use std::sync::Arc;
use std::time::{Duration, Instant};

use reqwest::StatusCode;
use serde_json::{Value, json};
use tokio::sync::Barrier;

use crate::helpers::{TestApp, expect_json, text};

const TRIALS: usize = 25;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn double_rating_has_exactly_one_winner_every_time() {
    let app = TestApp::spawn().await;
    let root = app.root("bot", &["crm:*"], &["read"]).await;
    for trial in 0..TRIALS {
        ratings_race(&[&app], &root, trial).await;
    }
    assert_eq!(ratings_counted(&app, "bot").await, TRIALS as u64);
}

/// Eight ratings at once of a new record of `root`, spread over `hosts` in
/// turn: exactly one wins, and the record holds its rating.
pub async fn ratings_race(hosts: &[&TestApp], root: &Value, trial: usize) {
    ratings_race_by(hosts, root, &hosts[0].admin_key, trial).await;
}

/// [`ratings_race`] with every rating and the read made by the API key
/// `rater` (of `root`'s organisation).
pub async fn ratings_race_by(hosts: &[&TestApp], root: &Value, rater: &str, trial: usize) {
    let record = expect_json(
        hosts[trial % hosts.len()]
            .act(text(&root["jti"]), "read", "crm:a", "success")
            .await,
        StatusCode::CREATED,
    )
    .await;
    let path = format!("/v1/vat/aar/{}/feedback", text(&record["aar_id"]));
    let barrier = Arc::new(Barrier::new(8));
    let mut tasks = Vec::new();
    for i in 0..8 {
        let host = hosts[i % hosts.len()];
        let (client, url, key, barrier) = (
            host.client.clone(),
            host.url(&path),
            rater.to_owned(),
            barrier.clone(),
        );
        let rating = ["approved", "flagged", "rejected"][i % 3];
        tasks.push(tokio::spawn(async move {
            barrier.wait().await;
            let status = client
                .post(url)
                .bearer_auth(key)
                .json(&json!({"rating": rating}))
                .send()
                .await
                .unwrap()
                .status();
            (status, rating)
        }));
    }
    let mut winners = Vec::new();
    for task in tasks {
        match task.await.unwrap() {
            (StatusCode::OK, rating) => winners.push(rating),
            (StatusCode::CONFLICT, _) => {}
            (other, _) => panic!("trial {trial}: {other}"),
        }
    }
    assert_eq!(winners.len(), 1, "trial {trial}");
    let reader = hosts[hosts.len() - 1];
    let stored = expect_json(
        reader
            .get_auth(&format!("/v1/vat/aar/{}", text(&record["aar_id"])), rater)
            .await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(stored["rating"], winners[0], "trial {trial}");
}

/// How many ratings `agent`'s reputation counts.
pub async fn ratings_counted(app: &TestApp, agent: &str) -> u64 {
    let reputation = expect_json(
        app.get_auth(&format!("/v1/vat/reputation/{agent}"), &app.admin_key)
            .await,
        StatusCode::OK,
    )
    .await;
    let counts = &reputation["counts"];
    ["approved", "flagged", "rejected"]
        .iter()
        .map(|r| counts[r].as_u64().unwrap())
        .sum()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_spenders_never_pass_a_budget() {
    let app = TestApp::spawn().await;
    for trial in 0..10 {
        spenders_race(&[&app], 24, trial).await;
    }
}

/// `spenders` concurrent record/action calls, spread over `hosts` in turn,
/// against a fresh root token with a budget of $1 and 9 actions,
/// alternating spends of $0.15 and $0.05 so either limit may bind first:
/// the budget is never passed, and mostly used. Returns the token's jti
/// and how many spends passed.
pub async fn spenders_race(hosts: &[&TestApp], spenders: usize, trial: usize) -> (String, usize) {
    spenders_race_in(hosts, &hosts[0].admin_key, spenders, trial).await
}

/// [`spenders_race`] with a root token issued by the API key `issuer`, in
/// its organisation.
pub async fn spenders_race_in(
    hosts: &[&TestApp],
    issuer: &str,
    spenders: usize,
    trial: usize,
) -> (String, usize) {
    let root = expect_json(
        hosts[0]
            .post_auth(
                "/v1/vat/issue/l1",
                issuer,
                &json!({
                    "developer_email": "dev@example.com", "agent_id": "spender",
                    "resources": ["shop:*"], "actions": ["buy"],
                    "constraints": {"max_spend_usd": 1, "max_actions": 9}
                }),
            )
            .await,
        StatusCode::CREATED,
    )
    .await;
    let jti = text(&root["jti"]).to_owned();
    let barrier = Arc::new(Barrier::new(spenders));
    let mut tasks = Vec::new();
    for i in 0..spenders {
        let host = hosts[i % hosts.len()];
        let (client, url, jti, barrier) = (
            host.client.clone(),
            host.url("/v1/vat/record/action"),
            jti.clone(),
            barrier.clone(),
        );
        let spend = if i % 2 == 0 { 0.15 } else { 0.05 };
        tasks.push(tokio::spawn(async move {
            barrier.wait().await;
            let body = json!({"vat_jti": jti, "action": "buy", "resource": "shop:x", "result": "success", "spend_usd": spend});
            let status = client.post(url).json(&body).send().await.unwrap().status();
            (status, spend)
        }));
    }
    let (mut spent, mut actions) = (0.0, 0);
    for task in tasks {
        match task.await.unwrap() {
            (StatusCode::CREATED, spend) => {
                spent += spend;
                actions += 1;
            }
            (StatusCode::FORBIDDEN, _) => {}
            (other, _) => panic!("trial {trial}: {other}"),
        }
    }
    assert!(spent <= 1.0 + 1e-9, "trial {trial}: spent {spent}");
    assert!(actions <= 9, "trial {trial}: {actions} actions");
    assert!(
        actions >= 6,
        "trial {trial}: only {actions} actions; the budget was not used"
    );
    (jti, actions)
}

/// Thirty-two spenders at once through a root and its two children, which
/// share the root's budget: exactly as many spends as it holds pass.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn spenders_through_children_share_the_root_budget_exactly() {
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

/// Thirty-two authorizations at once: exactly `max_actions` pass.
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

/// Per request: when it was sent and whether it was accepted.
type Seen = Arc<std::sync::Mutex<Vec<(Instant, StatusCode)>>>;

/// Agents act on `jti` until told to stop, noting every answer in `seen`.
async fn act_until(
    client: reqwest::Client,
    url: String,
    jti: String,
    stop: Arc<tokio::sync::Notify>,
    seen: Seen,
) {
    let stopped = stop.notified();
    tokio::pin!(stopped);
    loop {
        let body =
            json!({"vat_jti": jti, "action": "read", "resource": "crm:a", "result": "success"});
        let sent = Instant::now();
        tokio::select! {
            () = &mut stopped => return,
            response = client.post(&url).json(&body).send() => {
                let status = response.unwrap().status();
                seen.lock().unwrap().push((sent, status));
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn nothing_is_authorized_after_a_revoke_returns() {
    let app = TestApp::spawn().await;
    for trial in 0..10 {
        let root = app.root("boss", &["crm:*"], &["read", "delegate"]).await;
        let child = expect_json(
            app.delegate(
                &root,
                json!({"agent_id": "worker", "resources": ["crm:*"], "actions": ["read"]}),
            )
            .await,
            StatusCode::CREATED,
        )
        .await;
        let stop = Arc::new(tokio::sync::Notify::new());
        let seen = Seen::default();
        let mut workers = Vec::new();
        for jti in [&root["jti"], &child["jti"], &child["jti"]] {
            let (client, url) = (app.client.clone(), app.url("/v1/vat/record/action"));
            let (jti, stop, seen) = (text(jti).to_owned(), stop.clone(), seen.clone());
            workers.push(tokio::spawn(act_until(client, url, jti, stop, seen)));
        }
        tokio::time::sleep(Duration::from_millis(20 + 7 * trial as u64)).await;
        expect_json(
            app.post_auth(
                "/v1/vat/revoke",
                &app.admin_key,
                &json!({"jti": root["jti"]}),
            )
            .await,
            StatusCode::OK,
        )
        .await;
        let revoked = Instant::now();
        // However busy the machine, wait until requests sent after the revoke
        // have been answered (at most ten seconds).
        let answered_after = || {
            seen.lock()
                .unwrap()
                .iter()
                .filter(|(sent, _)| *sent > revoked)
                .count()
        };
        while answered_after() < 3 && revoked.elapsed() < Duration::from_secs(10) {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        stop.notify_waiters();
        for worker in workers {
            worker.await.unwrap();
        }
        let mut after = 0;
        for (sent, status) in seen.lock().unwrap().iter() {
            if *sent > revoked {
                after += 1;
                assert_eq!(
                    *status,
                    StatusCode::FORBIDDEN,
                    "trial {trial}: accepted after the revoke returned"
                );
            }
        }
        assert!(after > 0, "trial {trial}: no request raced the revoke");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn delegation_racing_revocation_leaves_no_live_child() {
    let app = TestApp::spawn().await;
    for trial in 0..10 {
        let root = app.root("boss", &["crm:*"], &["read", "delegate"]).await;
        let parent = expect_json(
            app.delegate(
                &root,
                json!({"agent_id": "mid", "resources": ["crm:*"], "actions": ["read", "delegate"]}),
            )
            .await,
            StatusCode::CREATED,
        )
        .await;
        let parent_jti = text(&parent["jti"]).to_owned();
        let barrier = Arc::new(Barrier::new(13));
        let mut tasks = Vec::new();
        for i in 0..12 {
            let (client, url, token, barrier) = (
                app.client.clone(),
                app.url("/v1/vat/delegate"),
                text(&parent["compact_jwt"]).to_owned(),
                barrier.clone(),
            );
            tasks.push(tokio::spawn(async move {
                barrier.wait().await;
                tokio::time::sleep(Duration::from_millis(i)).await;
                let body = json!({"agent_id": format!("leaf{i}"), "resources": ["crm:a"], "actions": ["read"]});
                let response = client
                    .post(url)
                    .bearer_auth(token)
                    .json(&body)
                    .send()
                    .await
                    .unwrap();
                (response.status(), response.json::<Value>().await.unwrap())
            }));
        }
        barrier.wait().await;
        tokio::time::sleep(Duration::from_millis(trial as u64)).await;
        expect_json(
            app.post_auth(
                "/v1/vat/revoke",
                &app.admin_key,
                &json!({"jti": parent_jti}),
            )
            .await,
            StatusCode::OK,
        )
        .await;
        let mut children = Vec::new();
        for task in tasks {
            let (status, body) = task.await.unwrap();
            match status {
                StatusCode::CREATED => children.push(text(&body["jti"]).to_owned()),
                StatusCode::UNAUTHORIZED => {
                    assert_eq!(body["code"], "token_revoked", "trial {trial}")
                }
                other => panic!("trial {trial}: {other} {body}"),
            }
        }
        for child in &children {
            let status = expect_json(
                app.get_auth(&format!("/v1/vat/tokens/{child}"), &app.admin_key)
                    .await,
                StatusCode::OK,
            )
            .await;
            assert_eq!(
                status["status"], "revoked",
                "trial {trial}: a child outlived its revoked parent"
            );
            let acted = app.act(child, "read", "crm:a", "success").await;
            assert_eq!(acted.status(), StatusCode::FORBIDDEN);
        }
        let tree = expect_json(
            app.get_auth(&format!("/v1/vat/tokens/{parent_jti}"), &app.admin_key)
                .await,
            StatusCode::OK,
        )
        .await;
        assert_eq!(
            tree["descendants"].as_array().unwrap().len(),
            children.len()
        );
    }
}

//! What an agent is (DESIGN §14; issue 32, findings 1 and 3): an agent id
//! is registered to one owner the first time a token is issued for it, and
//! naming it proves nothing. Each attack of the issue, replayed: a
//! `delegate` token minting a child named as another's agent, a developer
//! key issuing for another human's agent, a low-trust agent vouching or
//! fetching a statement as a trusted one, a name inheriting trust; and
//! `delegate` judged as an act (`min_trust`, `require_approval`).

use std::time::Duration;

use mandate_host::store::sql::params;
use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::helpers::{TestApp, expect_json, expect_problem, text, with_database};

/// Issues on `key` for `email`'s agent `agent`, able to read and delegate,
/// with `constraints` when given.
async fn issue(
    app: &TestApp,
    key: &str,
    email: &str,
    agent: &str,
    constraints: Option<Value>,
) -> reqwest::Response {
    let mut body = json!({
        "developer_email": email,
        "agent_id": agent,
        "resources": ["crm:*"],
        "actions": ["read", "delegate"],
    });
    if let Some(constraints) = constraints {
        body["constraints"] = constraints;
    }
    app.post_auth("/v1/vat/issue/l1", key, &body).await
}

async fn root(app: &TestApp, key: &str, email: &str, agent: &str, c: Option<Value>) -> Value {
    expect_json(issue(app, key, email, agent, c).await, StatusCode::CREATED).await
}

fn child_body(agent: &str) -> Value {
    json!({"agent_id": agent, "resources": ["crm:*"], "actions": ["read", "delegate"]})
}

async fn act(app: &TestApp, token: &Value) -> reqwest::Response {
    app.post_auth(
        "/v1/vat/record/action",
        text(&token["compact_jwt"]),
        &json!({"action": "read", "resource": "crm:contacts", "result": "success"}),
    )
    .await
}

async fn vouch(app: &TestApp, bearer: &str, agent: &str) -> reqwest::Response {
    app.post_auth(
        "/v1/trust/vouches",
        bearer,
        &json!({"agent_id": agent, "weight": 1.0}),
    )
    .await
}

/// The agent's trust once the background scores satisfy `until`.
async fn trust_when(app: &TestApp, key: &str, agent: &str, until: impl Fn(f64) -> bool) -> f64 {
    let mut last = Value::Null;
    // A busy machine may take a while to recompute: wait up to a minute.
    let started = std::time::Instant::now();
    while started.elapsed() < Duration::from_secs(60) {
        last = expect_json(
            app.get_auth(&format!("/v1/trust/agents/{agent}"), key)
                .await,
            StatusCode::OK,
        )
        .await;
        if let Some(trust) = last["trust"].as_f64()
            && until(trust)
        {
            return trust;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the trust of {agent} never met the condition: {last}");
}

#[tokio::test]
async fn a_delegation_cannot_name_an_agent_outside_its_subtree() {
    let app = TestApp::spawn().await;
    let (_, owner) = app.org("acme").await;
    let developer = app.key(&owner, "developer", Some("low@example.com")).await;
    let trusted = root(&app, &owner, "trusted@example.com", "trusted-x", None).await;
    let low = root(&app, &developer, "low@example.com", "low-a", None).await;

    // The issue's reproduction: a `delegate` token mints a child named as
    // an existing agent of another owner.
    let refused = expect_problem(
        app.delegate(&low, child_body("trusted-x")).await,
        StatusCode::FORBIDDEN,
        "agent_not_yours",
    )
    .await;
    assert!(refused.get("aar_id").is_none(), "{refused}");
    // Nor the other way round, nor naming its own root as a child.
    expect_problem(
        app.delegate(&trusted, child_body("low-a")).await,
        StatusCode::FORBIDDEN,
        "agent_not_yours",
    )
    .await;

    // A new agent is registered under the delegator; anything registered
    // under it may be named again by it and by its ancestors.
    let helper = expect_json(
        app.delegate(&low, child_body("helper")).await,
        StatusCode::CREATED,
    )
    .await;
    let grandchild = expect_json(
        app.delegate(&helper, child_body("helper-2")).await,
        StatusCode::CREATED,
    )
    .await;
    assert_eq!(grandchild["claims"]["sub"], "agent:helper-2");
    expect_json(
        app.delegate(&low, child_body("helper-2")).await,
        StatusCode::CREATED,
    )
    .await;
    expect_json(
        app.delegate(&low, child_body("low-a")).await,
        StatusCode::CREATED,
    )
    .await;
    // A sub-agent never names its delegator, nor a sibling's agent.
    expect_problem(
        app.delegate(&helper, child_body("low-a")).await,
        StatusCode::FORBIDDEN,
        "agent_not_yours",
    )
    .await;
    let sibling = expect_json(
        app.delegate(&low, child_body("sibling")).await,
        StatusCode::CREATED,
    )
    .await;
    expect_problem(
        app.delegate(&sibling, child_body("helper-2")).await,
        StatusCode::FORBIDDEN,
        "agent_not_yours",
    )
    .await;
    // Trusted-x's name never entered low-a's tree: its reputation holds
    // none of low-a's records.
    let reputation = expect_json(
        app.get_auth("/v1/vat/reputation/trusted-x", &owner).await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(reputation["total_actions"], 0, "{reputation}");
}

#[tokio::test]
async fn a_developer_key_cannot_issue_for_another_humans_agent() {
    let app = TestApp::spawn().await;
    let (_, owner) = app.org("acme").await;
    let alice = app
        .key(&owner, "developer", Some("alice@example.com"))
        .await;
    let bob = app.key(&owner, "developer", Some("bob@example.com")).await;
    root(&app, &alice, "alice@example.com", "shared-bot", None).await;
    expect_problem(
        issue(&app, &bob, "bob@example.com", "shared-bot", None).await,
        StatusCode::FORBIDDEN,
        "agent_not_yours",
    )
    .await;
    // A sub-agent of alice's agent is alice's too.
    let alices = root(&app, &alice, "alice@example.com", "shared-bot", None).await;
    expect_json(
        app.delegate(&alices, child_body("shared-helper")).await,
        StatusCode::CREATED,
    )
    .await;
    expect_problem(
        issue(&app, &bob, "bob@example.com", "shared-helper", None).await,
        StatusCode::FORBIDDEN,
        "agent_not_yours",
    )
    .await;
    // The owner's key holds issue_for_anyone: it may issue for alice's
    // agent to bob, and the agent stays alice's.
    root(&app, &owner, "bob@example.com", "shared-bot", None).await;
    expect_problem(
        issue(&app, &bob, "bob@example.com", "shared-bot", None).await,
        StatusCode::FORBIDDEN,
        "agent_not_yours",
    )
    .await;
    // Bob's own new agent is his.
    root(&app, &bob, "bob@example.com", "bobs-bot", None).await;
    // Another organisation's agent of the same id is another agent.
    let (_, other_owner) = app.org("other").await;
    let other_dev = app
        .key(&other_owner, "developer", Some("bob@example.com"))
        .await;
    root(&app, &other_dev, "bob@example.com", "shared-bot", None).await;
}

#[tokio::test]
async fn a_low_trust_agent_cannot_vouch_or_speak_as_a_trusted_one() {
    let app = TestApp::spawn().await;
    let (_, owner) = app.org("acme").await;
    let reviewer = app.key(&owner, "reviewer", Some("rev@example.com")).await;
    let developer = app.key(&owner, "developer", Some("low@example.com")).await;
    root(&app, &owner, "trusted@example.com", "trusted-x", None).await;
    for key in [&owner, &reviewer] {
        expect_json(vouch(&app, key, "trusted-x").await, StatusCode::CREATED).await;
    }
    trust_when(&app, &owner, "trusted-x", |t| t > 0.6).await;
    let floor = Some(json!({"min_trust": 0.6}));
    let low = root(&app, &developer, "low@example.com", "low-a", floor).await;

    // The child named trusted-x, which would vouch for low-a as trusted-x,
    // is never minted.
    expect_problem(
        app.delegate(&low, child_body("trusted-x")).await,
        StatusCode::FORBIDDEN,
        "agent_not_yours",
    )
    .await;
    // Low-a's own token vouches as low-a only: not for itself, and not for
    // trusted-x, which it never delegated to.
    let low_jwt = text(&low["compact_jwt"]);
    expect_problem(
        vouch(&app, low_jwt, "low-a").await,
        StatusCode::FORBIDDEN,
        "vouch_not_allowed",
    )
    .await;
    expect_problem(
        vouch(&app, low_jwt, "trusted-x").await,
        StatusCode::FORBIDDEN,
        "vouch_not_allowed",
    )
    .await;
    // It fetches no statement but its own.
    expect_problem(
        app.get_auth("/v1/trust/agents/trusted-x/statement", low_jwt)
            .await,
        StatusCode::FORBIDDEN,
        "not_the_agent",
    )
    .await;
    // And it still does not pass min_trust with its own root token.
    expect_problem(
        act(&app, &low).await,
        StatusCode::FORBIDDEN,
        "trust_too_low",
    )
    .await;
}

#[tokio::test]
async fn trust_follows_the_chain_that_acts() {
    let app = TestApp::spawn().await;
    let (_, owner) = app.org("acme").await;
    let reviewer = app.key(&owner, "reviewer", Some("rev@example.com")).await;
    let floor = || Some(json!({"min_trust": 0.6}));
    let trusted = root(&app, &owner, "trusted@example.com", "trusted-y", floor()).await;
    for key in [&owner, &reviewer] {
        expect_json(vouch(&app, key, "trusted-y").await, StatusCode::CREATED).await;
    }
    let trusted_trust = trust_when(&app, &owner, "trusted-y", |t| t > 0.6).await;

    // A fresh sub-agent acts with its delegator's trust: not refused for
    // being new.
    let sub = expect_json(
        app.delegate(&trusted, child_body("sub-y")).await,
        StatusCode::CREATED,
    )
    .await;
    let recorded = expect_json(act(&app, &sub).await, StatusCode::CREATED).await;
    // The spec's trust_score stays the token's base trust (L1: 0.4); the
    // trust in force is a field of its own.
    assert_eq!(recorded["trust_score"], 0.4, "{recorded}");
    let in_force = recorded["trust_in_force"].as_f64().unwrap();
    assert!((in_force - trusted_trust).abs() < 0.05, "{recorded}");
    assert!(in_force >= 0.6, "{recorded}");
    let record = expect_json(
        app.get_auth(
            &format!("/v1/vat/aar/{}", text(&recorded["aar_id"])),
            &owner,
        )
        .await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(record["trust_in_force"], recorded["trust_in_force"]);
    assert_eq!(record["trust_score"], 0.4);

    // A low agent's chain stays low, whatever its children are named or
    // hold: the child of a 0.25 agent under min_trust 0.6 is refused, and
    // so is its delegation (delegate is an act).
    let low = root(&app, &owner, "low@example.com", "low-b", None).await;
    let low_child = expect_json(
        app.delegate(
            &low,
            json!({"agent_id": "low-child", "resources": ["crm:*"], "actions": ["read", "delegate"],
                   "constraints": {"min_trust": 0.6}}),
        )
        .await,
        StatusCode::CREATED,
    )
    .await;
    let refused = expect_problem(
        act(&app, &low_child).await,
        StatusCode::FORBIDDEN,
        "trust_too_low",
    )
    .await;
    let denied = expect_json(
        app.get_auth(&format!("/v1/vat/aar/{}", text(&refused["aar_id"])), &owner)
            .await,
        StatusCode::OK,
    )
    .await;
    assert!(denied["trust_in_force"].as_f64().unwrap() < 0.6, "{denied}");
    expect_problem(
        app.delegate(&low_child, child_body("low-grandchild")).await,
        StatusCode::FORBIDDEN,
        "trust_too_low",
    )
    .await;
    // Vouching for the child alone does not lift the chain above its
    // delegator.
    for key in [&owner, &reviewer] {
        expect_json(vouch(&app, key, "low-child").await, StatusCode::CREATED).await;
    }
    trust_when(&app, &owner, "low-child", |t| t > 0.2).await;
    expect_problem(
        act(&app, &low_child).await,
        StatusCode::FORBIDDEN,
        "trust_too_low",
    )
    .await;
}

#[tokio::test]
async fn a_delegation_requiring_approval_waits_then_returns_the_child_once() {
    let app = TestApp::spawn().await;
    let (_, owner) = app.org("acme").await;
    let reviewer = app.key(&owner, "reviewer", Some("rev@example.com")).await;
    let parent = root(
        &app,
        &owner,
        "dev@example.com",
        "lead",
        Some(json!({"require_approval": {"actions": ["delegate"]}})),
    )
    .await;
    let jwt = text(&parent["compact_jwt"]).to_owned();
    let delegate = |key: Option<&'static str>, agent: &'static str| {
        let mut request = app
            .client
            .post(app.url("/v1/vat/delegate"))
            .bearer_auth(&jwt)
            .json(&child_body(agent));
        if let Some(key) = key {
            request = request.header("Idempotency-Key", key);
        }
        async move { request.send().await.unwrap() }
    };

    // Without a key the child could never be fetched: refused, nothing
    // asked.
    expect_problem(
        delegate(None, "worker").await,
        StatusCode::UNPROCESSABLE_ENTITY,
        "idempotency_key_required",
    )
    .await;
    let waiting = expect_json(delegate(Some("d-1"), "worker").await, StatusCode::ACCEPTED).await;
    assert_eq!(waiting["approval"]["status"], "pending", "{waiting}");
    let approval_id = text(&waiting["approval"]["approval_id"]).to_owned();
    let record = |aar_id: String| {
        let app = &app;
        let owner = owner.clone();
        async move {
            expect_json(
                app.get_auth(&format!("/v1/vat/aar/{aar_id}"), &owner).await,
                StatusCode::OK,
            )
            .await
        }
    };
    let aar_id = text(&waiting["aar_id"]).to_owned();
    assert_eq!(record(aar_id.clone()).await["status"], "awaiting_approval");
    // Repeating before the decision waits still, and issues nothing.
    let again = expect_json(delegate(Some("d-1"), "worker").await, StatusCode::ACCEPTED).await;
    assert_eq!(again, waiting);

    expect_json(
        app.post_auth(
            &format!("/v1/vat/approvals/{approval_id}/decision"),
            &reviewer,
            &json!({"decision": "approve"}),
        )
        .await,
        StatusCode::OK,
    )
    .await;
    // The delegation's record is the delegation's to close: completing it
    // directly is refused, so the repeat below is not left answering 202.
    expect_problem(
        app.post_auth(
            &format!("/v1/vat/aar/{aar_id}/complete"),
            &jwt,
            &json!({"result": "success"}),
        )
        .await,
        StatusCode::CONFLICT,
        "not_completable",
    )
    .await;
    let child = expect_json(delegate(Some("d-1"), "worker").await, StatusCode::CREATED).await;
    assert_eq!(child["claims"]["sub"], "agent:worker");
    assert_eq!(child["aar_id"], waiting["aar_id"]);
    // Once: the same key replays the same child, and mints no other.
    let replayed = expect_json(delegate(Some("d-1"), "worker").await, StatusCode::CREATED).await;
    assert_eq!(replayed["claims"]["jti"], child["claims"]["jti"]);
    let done = record(aar_id).await;
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["result"], "success", "{done}");
    expect_json(act(&app, &child).await, StatusCode::CREATED).await;
    let tokens = expect_json(app.get_auth("/v1/vat/tokens", &owner).await, StatusCode::OK).await;
    let workers = tokens["tokens"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["agent_id"] == "worker" || t["agent_id"] == "agent:worker")
        .count();
    assert_eq!(workers, 1, "{tokens}");

    // Denied: the repeat is refused with the denial, and nothing is issued.
    let waiting = expect_json(delegate(Some("d-2"), "other").await, StatusCode::ACCEPTED).await;
    expect_json(
        app.post_auth(
            &format!(
                "/v1/vat/approvals/{}/decision",
                text(&waiting["approval"]["approval_id"])
            ),
            &reviewer,
            &json!({"decision": "deny"}),
        )
        .await,
        StatusCode::OK,
    )
    .await;
    expect_problem(
        delegate(Some("d-2"), "other").await,
        StatusCode::FORBIDDEN,
        "approval_denied",
    )
    .await;
    // Each delegation waiting for approval stored its record before its
    // group's tail (to show it with the approval's event); on PostgreSQL
    // the tail numbered it with the others: no record keeps a provisional
    // `seq` (the upper half of its organisation's range).
    let dir = app.stop().await;
    crate::helpers::with_database(dir.path(), |conn| {
        let count = |sql: &str| -> i64 { conn.query_row(sql, [], |row| row.get(0)).unwrap() };
        assert!(count("SELECT count(*) FROM records") >= 2);
        assert_eq!(
            count("SELECT count(*) FROM records WHERE seq % 1099511627776 >= 549755813888"),
            0
        );
    });
}

/// The upgrade to schema 10, on either engine: every agent stored before
/// gets the human of its earliest root token, a sub-agent seen only
/// through delegation the agent that delegated to it; and a token minted
/// before under a name another owns (an impostor of `trusted-x` under
/// `low-a`, made here by renaming a stored child, as the old release let
/// any `delegate` token do) vouches and speaks as no one, and acts with
/// its chain's trust.
#[tokio::test]
async fn the_upgrade_to_schema_10_registers_every_agent_and_disowns_impostors() {
    let app = TestApp::spawn().await;
    let (_, owner) = app.org("acme").await;
    let reviewer = app.key(&owner, "reviewer", Some("rev@example.com")).await;
    let developer = app.key(&owner, "developer", Some("low@example.com")).await;
    root(&app, &owner, "trusted@example.com", "trusted-x", None).await;
    let low = root(&app, &developer, "low@example.com", "low-a", None).await;
    expect_json(
        app.delegate(&low, child_body("helper")).await,
        StatusCode::CREATED,
    )
    .await;
    let impostor = expect_json(
        app.delegate(
            &low,
            json!({"agent_id": "impostor", "resources": ["crm:*"], "actions": ["read"],
                   "constraints": {"min_trust": 0.6}}),
        )
        .await,
        StatusCode::CREATED,
    )
    .await;
    let impostor_jti = text(&impostor["jti"]).to_owned();
    let dir = app.stop().await;
    with_database(dir.path(), |conn| {
        let claims: String = conn
            .query_row(
                "SELECT claims FROM tokens WHERE jti = ?1",
                params![impostor_jti],
                |row| row.get(0),
            )
            .unwrap();
        let claims = claims.replace("agent:impostor", "agent:trusted-x");
        conn.execute(
            "UPDATE tokens SET agent_id = 'trusted-x', claims = ?1 WHERE jti = ?2",
            params![claims, impostor_jti],
        )
        .unwrap();
        conn.execute_batch(
            "ALTER TABLE records DROP COLUMN trust_ppm;
             ALTER TABLE records DROP COLUMN args_hash; ALTER TABLE records DROP COLUMN args;
             ALTER TABLE agents DROP COLUMN owner; ALTER TABLE agents DROP COLUMN parent",
        )
        .unwrap();
        conn.execute_batch(crate::helpers::DROP_OAUTH_TABLES)
            .unwrap();
        crate::helpers::set_schema_version(conn, 9);
    });

    let app = TestApp::spawn_in(dir, |_| {}).await;
    let registry: Vec<(String, Option<String>, bool)> = app.with_database(|conn| {
        let humans: Vec<(String, String)> = conn
            .prepare_cached(
                "SELECT DISTINCT t.agent_id, w.human_ref FROM tokens t
                 JOIN workflows w ON w.provenance_ref = t.provenance_ref WHERE t.depth = 0",
            )
            .unwrap()
            .query_map([], |row| Ok((row.get(0)?, row.get(1)?)))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        let owner_of = |agent: &str| {
            humans
                .iter()
                .find(|(a, _)| a == agent)
                .map(|(_, h)| h.clone())
        };
        let rows: Vec<(String, Option<String>, Option<String>)> = conn
            .prepare_cached("SELECT agent_id, owner, parent FROM agents ORDER BY agent_id")
            .unwrap()
            .query_map([], |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        let low_owner = owner_of("low-a");
        rows.into_iter()
            .map(|(agent, owner, parent)| {
                let expected = match agent.as_str() {
                    "helper" | "low-a" => low_owner.clone(),
                    "trusted-x" => owner_of("trusted-x"),
                    _ => None,
                };
                (agent, parent, owner == expected && owner.is_some())
            })
            .collect()
    });
    assert_eq!(
        registry,
        [
            ("helper".to_owned(), Some("low-a".to_owned()), true),
            // Its only token was renamed: no token of it is left to own it.
            ("impostor".to_owned(), None, false),
            ("low-a".to_owned(), None, true),
            ("trusted-x".to_owned(), None, true),
        ]
    );

    // The registry holds after the upgrade.
    let low = root(&app, &developer, "low@example.com", "low-a", None).await;
    expect_problem(
        app.delegate(&low, child_body("trusted-x")).await,
        StatusCode::FORBIDDEN,
        "agent_not_yours",
    )
    .await;
    expect_json(
        app.delegate(&low, child_body("helper")).await,
        StatusCode::CREATED,
    )
    .await;
    expect_problem(
        issue(&app, &developer, "low@example.com", "trusted-x", None).await,
        StatusCode::FORBIDDEN,
        "agent_not_yours",
    )
    .await;

    // The impostor minted before: trusted-x is trusted now, but the
    // impostor vouches, withdraws and fetches a statement as no one, and
    // acts with low-a's trust.
    for key in [&owner, &reviewer] {
        expect_json(vouch(&app, key, "trusted-x").await, StatusCode::CREATED).await;
    }
    trust_when(&app, &owner, "trusted-x", |t| t > 0.6).await;
    let impostor_jwt = text(&impostor["compact_jwt"]);
    expect_problem(
        vouch(&app, impostor_jwt, "low-a").await,
        StatusCode::FORBIDDEN,
        "agent_not_yours",
    )
    .await;
    expect_problem(
        app.get_auth("/v1/trust/agents/trusted-x/statement", impostor_jwt)
            .await,
        StatusCode::FORBIDDEN,
        "agent_not_yours",
    )
    .await;
    expect_problem(
        act(&app, &impostor).await,
        StatusCode::FORBIDDEN,
        "trust_too_low",
    )
    .await;
    app.stop().await;
}

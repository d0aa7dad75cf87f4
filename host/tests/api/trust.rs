//! The trust graph: vouches by each kind of principal (and refusals by
//! role, across organisations, by an agent for an agent it did not
//! delegate to), their leaves, sybil rings that gain nothing, a ceiling
//! through a 3-deep chain, `min_trust` following trust down and back up,
//! and the signed statement.

use std::time::Duration;

use mandate_host::trust::MAX_AGE;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use crate::helpers::{TestApp, expect_json, expect_problem, text};

/// A root token for `agent`, issued with `key` (an owner's or developer's
/// key of the organisation), able to delegate; `constraints` when given.
async fn root(app: &TestApp, key: &str, agent: &str, constraints: Option<Value>) -> Value {
    let mut body = json!({
        "developer_email": "dev@example.com",
        "agent_id": agent,
        "resources": ["crm:*"],
        "actions": ["read", "delegate"],
    });
    if let Some(constraints) = constraints {
        body["constraints"] = constraints;
    }
    expect_json(
        app.post_auth("/v1/vat/issue/l1", key, &body).await,
        StatusCode::CREATED,
    )
    .await
}

/// Delegates from `parent` to `agent`.
async fn child(app: &TestApp, parent: &Value, agent: &str) -> Value {
    expect_json(
        app.delegate(
            parent,
            json!({"agent_id": agent, "resources": ["crm:*"], "actions": ["read", "delegate"]}),
        )
        .await,
        StatusCode::CREATED,
    )
    .await
}

async fn vouch(app: &TestApp, bearer: &str, agent: &str, weight: f64) -> reqwest::Response {
    app.post_auth(
        "/v1/trust/vouches",
        bearer,
        &json!({"agent_id": agent, "weight": weight, "reason": "seen its work"}),
    )
    .await
}

async fn withdraw(app: &TestApp, bearer: &str, vouch_id: &str) -> reqwest::Response {
    app.send(
        Method::DELETE,
        &format!("/v1/trust/vouches/{vouch_id}"),
        bearer,
        None,
    )
    .await
}

async fn trust(app: &TestApp, key: &str, agent: &str) -> Value {
    expect_json(
        app.get_auth(&format!("/v1/trust/agents/{agent}"), key)
            .await,
        StatusCode::OK,
    )
    .await
}

/// The agent's trust once `until` holds of it: the scores are recomputed
/// in the background.
async fn trust_when(
    app: &TestApp,
    key: &str,
    agent: &str,
    until: impl Fn(&Value) -> bool,
) -> Value {
    // A recomputation that ran between the last write's commit and the
    // caller's reading of the clock is the last one its writes asked for:
    // the next comes when the scores are [`MAX_AGE`] old, checked every
    // quarter of that. Wait for that one, and a minute more on a busy
    // machine.
    let deadline = MAX_AGE + MAX_AGE / 4 + Duration::from_secs(60);
    let started = std::time::Instant::now();
    while started.elapsed() < deadline {
        let body = trust(app, key, agent).await;
        if until(&body) {
            return body;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!(
        "the trust of {agent} never met the condition: {}",
        trust(app, key, agent).await
    );
}

/// The agent's trust computed after `since` (RFC 3339, the server's time
/// of the last change).
async fn trust_after(app: &TestApp, key: &str, agent: &str, since: &str) -> Value {
    trust_when(app, key, agent, |t| text(&t["computed_at"]) > since).await
}

fn number(value: &Value) -> f64 {
    value.as_f64().unwrap()
}

/// What the rule gives a new agent: reputation 0.5 at weight 0.5, no
/// vouches, active now.
const NEW_AGENT: f64 = 0.25;

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-6
}

#[tokio::test]
async fn each_kind_of_principal_vouches_and_withdraws_within_its_organisation() {
    let app = TestApp::spawn().await;
    let (_, owner) = app.org("acme").await;
    let reviewer = app.key(&owner, "reviewer", Some("rev@example.com")).await;
    let developer = app.key(&owner, "developer", Some("dev@example.com")).await;
    let auditor = app.key(&owner, "auditor", None).await;
    let (_, stranger) = app.org("other").await;
    let planner = root(&app, &owner, "planner", None).await;
    let worker = child(&app, &planner, "worker").await;
    root(&app, &owner, "outsider", None).await;

    // A person with `vouch`: owner and reviewer.
    let by_owner = expect_json(
        vouch(&app, &owner, "worker", 0.8).await,
        StatusCode::CREATED,
    )
    .await;
    assert!(text(&by_owner["vouch_id"]).starts_with("vch_"));
    assert_eq!(by_owner["voucher"]["kind"], "human");
    assert!(text(&by_owner["voucher"]["key_id"]).starts_with("key_"));
    assert_eq!(by_owner["weight"], 0.8);
    assert_eq!(by_owner["reason"], "seen its work");
    assert!(by_owner.get("withdrawn_at").is_none());
    expect_problem(
        vouch(&app, &owner, "worker", 0.5).await,
        StatusCode::CONFLICT,
        "vouch_exists",
    )
    .await;
    let by_reviewer = expect_json(
        vouch(&app, &reviewer, "agent:worker", 1.0).await,
        StatusCode::CREATED,
    )
    .await;
    assert_eq!(by_reviewer["agent_id"], "worker");

    // Roles without `vouch`, and other organisations.
    for key in [&developer, &auditor] {
        expect_problem(
            vouch(&app, key, "worker", 0.5).await,
            StatusCode::FORBIDDEN,
            "role_forbidden",
        )
        .await;
    }
    expect_problem(
        vouch(&app, &stranger, "worker", 0.5).await,
        StatusCode::NOT_FOUND,
        "agent_not_found",
    )
    .await;
    expect_problem(
        vouch(&app, &owner, "nobody", 0.5).await,
        StatusCode::NOT_FOUND,
        "agent_not_found",
    )
    .await;
    for weight in [0.0, 1.5, -0.1] {
        expect_problem(
            vouch(&app, &owner, "outsider", weight).await,
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_weight",
        )
        .await;
    }
    let past = app
        .post_auth(
            "/v1/trust/vouches",
            &owner,
            &json!({"agent_id": "outsider", "weight": 0.5, "expires_at": "2020-01-01T00:00:00Z"}),
        )
        .await;
    expect_problem(past, StatusCode::UNPROCESSABLE_ENTITY, "expires_in_past").await;

    // An agent, with its token, for an agent it delegated to, and only those.
    let planner_jwt = text(&planner["compact_jwt"]);
    let by_agent = expect_json(
        vouch(&app, planner_jwt, "worker", 0.6).await,
        StatusCode::CREATED,
    )
    .await;
    assert_eq!(
        by_agent["voucher"],
        json!({"kind": "agent", "agent_id": "planner"})
    );
    expect_problem(
        vouch(&app, planner_jwt, "outsider", 0.6).await,
        StatusCode::FORBIDDEN,
        "vouch_not_allowed",
    )
    .await;
    let worker_jwt = text(&worker["compact_jwt"]);
    expect_problem(
        vouch(&app, worker_jwt, "planner", 0.6).await,
        StatusCode::FORBIDDEN,
        "vouch_not_allowed",
    )
    .await;

    let seen = trust(&app, &developer, "worker").await;
    let received: Vec<&str> = seen["vouches"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| text(&v["vouch_id"]))
        .collect();
    assert_eq!(received.len(), 3, "{seen}");
    assert_eq!(
        trust(&app, &auditor, "planner").await["vouched"][0]["agent_id"],
        "worker"
    );
    expect_problem(
        app.get_auth("/v1/trust/agents/worker", &stranger).await,
        StatusCode::NOT_FOUND,
        "agent_not_found",
    )
    .await;

    // Withdrawing: the voucher, or an owner; others are refused.
    let owners_id = text(&by_owner["vouch_id"]);
    let reviewers_id = text(&by_reviewer["vouch_id"]);
    let agents_id = text(&by_agent["vouch_id"]);
    expect_problem(
        withdraw(&app, &reviewer, owners_id).await,
        StatusCode::FORBIDDEN,
        "vouch_not_allowed",
    )
    .await;
    expect_problem(
        withdraw(&app, &developer, owners_id).await,
        StatusCode::FORBIDDEN,
        "role_forbidden",
    )
    .await;
    expect_problem(
        withdraw(&app, &stranger, owners_id).await,
        StatusCode::NOT_FOUND,
        "vouch_not_found",
    )
    .await;
    expect_problem(
        withdraw(&app, worker_jwt, agents_id).await,
        StatusCode::FORBIDDEN,
        "vouch_not_allowed",
    )
    .await;
    let withdrawn = expect_json(withdraw(&app, &owner, reviewers_id).await, StatusCode::OK).await;
    assert!(withdrawn["withdrawn_at"].is_string());
    expect_problem(
        withdraw(&app, &owner, reviewers_id).await,
        StatusCode::CONFLICT,
        "vouch_withdrawn",
    )
    .await;
    expect_json(
        withdraw(&app, &reviewer, owners_id).await,
        StatusCode::FORBIDDEN,
    )
    .await;
    expect_json(withdraw(&app, &owner, owners_id).await, StatusCode::OK).await;
    expect_json(withdraw(&app, planner_jwt, agents_id).await, StatusCode::OK).await;
    // Withdrawn, a voucher may vouch again.
    expect_json(
        vouch(&app, &reviewer, "worker", 0.3).await,
        StatusCode::CREATED,
    )
    .await;
    assert_eq!(
        trust(&app, &owner, "worker").await["vouches"]
            .as_array()
            .unwrap()
            .len(),
        1
    );

    // Every vouch and withdrawal is a leaf, and the audit finds them all.
    let (kinds, report) = app.with_database(|conn| {
        let mut kinds = Vec::new();
        let mut statement = conn
            .prepare_cached("SELECT leaf FROM log_leaves ORDER BY idx")
            .unwrap();
        let mut rows = statement.query([]).unwrap();
        while let Some(row) = rows.next().unwrap() {
            let leaf: Vec<u8> = row.get(0).unwrap();
            let entry: Value = serde_json::from_slice(&leaf).unwrap();
            kinds.push(text(&entry["kind"]).to_owned());
        }
        let origin = mandate_host::recordlog::stored_origin(conn)
            .unwrap()
            .unwrap();
        (
            kinds,
            mandate_host::recordlog::audit::verify(conn, &origin).unwrap(),
        )
    });
    let count = |kind: &str| kinds.iter().filter(|k| *k == kind).count();
    assert_eq!(count("vouch.created"), 4);
    assert_eq!(count("vouch.withdrawn"), 3);
    assert_eq!(report.findings, [], "{}", report.summary());
    app.stop().await;
}

#[tokio::test]
async fn a_sybil_ring_gains_nothing() {
    let app = TestApp::spawn().await;
    let (_, owner) = app.org("acme").await;
    root(&app, &owner, "control", None).await;
    // Eight fresh agents of one human, each delegating to the next (a
    // chain as deep as one may be: an agent names only agents of its own
    // subtree, so the ring cannot close) and each to the target below the
    // last, vouching for both at full weight.
    let mut sybils = vec![root(&app, &owner, "sybil-0", None).await];
    for i in 1..8 {
        let next = child(&app, &sybils[i - 1], &format!("sybil-{i}")).await;
        sybils.push(next);
    }
    child(&app, &sybils[7], "target").await;
    crate::helpers::expect_problem(
        app.delegate(
            &sybils[7],
            json!({"agent_id": "sybil-0", "resources": ["crm:*"], "actions": ["read"]}),
        )
        .await,
        StatusCode::FORBIDDEN,
        "agent_not_yours",
    )
    .await;
    for (i, sybil) in sybils.iter().enumerate() {
        // The chain's own vouches, too.
        child(&app, sybil, "target").await;
        let jwt = text(&sybil["compact_jwt"]);
        if i < 7 {
            let next = format!("sybil-{}", i + 1);
            expect_json(vouch(&app, jwt, &next, 1.0).await, StatusCode::CREATED).await;
        }
        expect_json(vouch(&app, jwt, "target", 1.0).await, StatusCode::CREATED).await;
    }
    let changed = mandate_host::clock::iso_ms(app.clock.now().ms());
    let target = trust_after(&app, &owner, "target", &changed).await;
    let control = trust(&app, &owner, "control").await;
    assert_eq!(number(&target["graph"]), 0.0, "{target}");
    assert!(
        close(number(&target["trust"]), number(&control["trust"])),
        "{target} {control}"
    );
    assert!(close(number(&target["trust"]), NEW_AGENT), "{target}");
    for i in 0..8 {
        let sybil = trust(&app, &owner, &format!("sybil-{i}")).await;
        assert_eq!(number(&sybil["graph"]), 0.0, "{sybil}");
    }
    let page = expect_json(
        app.get_auth("/v1/trust/graph?limit=5", &owner).await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(page["nodes"].as_array().unwrap().len(), 5);
    let next = text(&page["next_cursor"]).to_owned();
    let rest = expect_json(
        app.get_auth(&format!("/v1/trust/graph?limit=1000&cursor={next}"), &owner)
            .await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(rest["nodes"].as_array().unwrap().len(), 10 - 5);
    assert!(rest.get("next_cursor").is_none());
    let edges = page["edges"].as_array().unwrap().len() + rest["edges"].as_array().unwrap().len();
    assert_eq!(edges, 15);
    app.stop().await;
}

#[tokio::test]
async fn a_delegated_agent_never_has_more_trust_than_its_delegators_three_deep() {
    let app = TestApp::spawn().await;
    let (_, owner) = app.org("acme").await;
    let a = root(&app, &owner, "agent-a", None).await;
    let b = child(&app, &a, "agent-b").await;
    let c = child(&app, &b, "agent-c").await;
    child(&app, &c, "agent-d").await;
    // People vouch for the deepest agent only: alone it would reach far
    // above its delegators.
    expect_json(
        vouch(&app, &owner, "agent-d", 1.0).await,
        StatusCode::CREATED,
    )
    .await;
    let d = trust_when(&app, &owner, "agent-d", |t| number(&t["graph"]) > 0.0).await;
    assert!(number(&d["graph"]) > 0.8, "{d}");
    let chain: Vec<Value> =
        futures_util_join(&app, &owner, &["agent-a", "agent-b", "agent-c", "agent-d"]).await;
    for pair in chain.windows(2) {
        let (upper, lower) = (&pair[0], &pair[1]);
        assert!(
            number(&lower["trust"]) <= number(&upper["trust"]) + 1e-12,
            "{upper} {lower}"
        );
        assert!(
            close(number(&lower["ceiling"]), number(&upper["trust"])),
            "{upper} {lower}"
        );
    }
    assert_eq!(number(&chain[0]["ceiling"]), 1.0);
    assert!(
        close(number(&chain[3]["trust"]), number(&chain[0]["trust"])),
        "{chain:?}"
    );
    app.stop().await;
}

async fn futures_util_join(app: &TestApp, key: &str, agents: &[&str]) -> Vec<Value> {
    let mut out = Vec::new();
    for agent in agents {
        out.push(trust(app, key, agent).await);
    }
    out
}

#[tokio::test]
async fn min_trust_refuses_an_agent_whose_trust_fell_and_allows_it_after_vouches() {
    let app = TestApp::spawn().await;
    let (_, owner) = app.org("acme").await;
    let reviewer = app.key(&owner, "reviewer", Some("rev@example.com")).await;
    let token = root(&app, &owner, "clumsy", Some(json!({"min_trust": 0.15}))).await;
    let jwt = text(&token["compact_jwt"]);
    let server = &app;
    let act = |result: &'static str| {
        let body = json!({"action": "read", "resource": "crm:contacts", "result": result});
        async move { server.post_auth("/v1/vat/record/action", jwt, &body).await }
    };
    // A new agent (0.25) meets 0.15. It fails three times (its trust
    // falls to 0.16, still enough), then a reviewer flags one of those
    // records and rejects two: 0.12.
    let mut made = Vec::new();
    for _ in 0..3 {
        made.push(expect_json(act("error").await, StatusCode::CREATED).await);
    }
    for (record, rating) in made.iter().zip(["flagged", "rejected", "rejected"]) {
        expect_json(
            app.post_auth(
                &format!("/v1/vat/aar/{}/feedback", text(&record["aar_id"])),
                &reviewer,
                &json!({"rating": rating}),
            )
            .await,
            StatusCode::OK,
        )
        .await;
    }
    let fallen = trust_when(&app, &owner, "clumsy", |t| number(&t["trust"]) < 0.15).await;
    assert!(close(number(&fallen["reputation"]), 0.24), "{fallen}");

    let refused =
        expect_problem(act("success").await, StatusCode::FORBIDDEN, "trust_too_low").await;
    let aar_id = text(&refused["aar_id"]).to_owned();
    let record = expect_json(
        app.get_auth(&format!("/v1/vat/aar/{aar_id}"), &owner).await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(record["status"], "denied");
    assert_eq!(record["deny_reason"], "trust_too_low");
    let asked = expect_json(
        app.post_auth(
            "/v1/vat/authorize",
            jwt,
            &json!({"action": "read", "resource": "crm:contacts"}),
        )
        .await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(asked["authorized"], false);
    assert_eq!(asked["reason"], "trust_too_low");
    // Out of scope is judged first.
    expect_problem(
        app.post_auth(
            "/v1/vat/record/action",
            jwt,
            &json!({"action": "write", "resource": "crm:contacts", "result": "success"}),
        )
        .await,
        StatusCode::FORBIDDEN,
        "action_not_permitted",
    )
    .await;

    // People vouch for it: its trust rises above the floor, and it acts.
    expect_json(
        vouch(&app, &owner, "clumsy", 1.0).await,
        StatusCode::CREATED,
    )
    .await;
    expect_json(
        vouch(&app, &reviewer, "clumsy", 1.0).await,
        StatusCode::CREATED,
    )
    .await;
    let risen = trust_when(&app, &owner, "clumsy", |t| number(&t["trust"]) >= 0.15).await;
    assert!(number(&risen["graph"]) > 0.9, "{risen}");
    expect_json(act("success").await, StatusCode::CREATED).await;

    // A delegation may raise min_trust, never drop or lower it.
    let lowered = app
        .delegate(
            &token,
            json!({"agent_id": "helper", "resources": ["crm:*"], "actions": ["read"],
                   "constraints": {"min_trust": 0.1}}),
        )
        .await;
    assert_eq!(lowered.status(), StatusCode::FORBIDDEN);
    app.stop().await;
}

#[tokio::test]
async fn the_trust_statement_verifies_against_the_jwks_and_not_once_expired_or_tampered() {
    let app = TestApp::spawn().await;
    let (org_id, owner) = app.org("acme").await;
    let token = root(&app, &owner, "carrier", None).await;
    root(&app, &owner, "bystander", None).await;
    let jwt = text(&token["compact_jwt"]);
    let by_agent = app
        .get_auth("/v1/trust/agents/carrier/statement", jwt)
        .await;
    assert_eq!(by_agent.status(), StatusCode::OK);
    assert_eq!(
        by_agent.headers()["content-type"],
        "application/trust-statement+jwt"
    );
    let statement = by_agent.text().await.unwrap();
    let by_key = app
        .get_auth("/v1/trust/agents/carrier/statement", &owner)
        .await;
    assert_eq!(by_key.status(), StatusCode::OK);
    expect_problem(
        app.get_auth("/v1/trust/agents/bystander/statement", jwt)
            .await,
        StatusCode::FORBIDDEN,
        "not_the_agent",
    )
    .await;

    let jwks = app
        .client
        .get(app.url("/.well-known/jwks.json"))
        .send()
        .await
        .unwrap()
        .bytes()
        .await
        .unwrap();
    let jwks = mandate_core::Jwks::parse(&jwks).unwrap();
    let now = app.clock.now().s();
    let verified = mandate_core::verify_trust_statement(&statement, &jwks, now, 0).unwrap();
    let claims = &verified.claims;
    assert_eq!(verified.agent_id.as_str(), "carrier");
    assert_eq!(claims.sub, "agent:carrier");
    assert_eq!(claims.org.as_str(), org_id);
    assert!(close(claims.trust, NEW_AGENT), "{claims:?}");
    assert_eq!(claims.exp - claims.iat, 300);

    let mut tampered = statement.clone().into_bytes();
    let middle = statement.find('.').unwrap() + 5;
    tampered[middle] = if tampered[middle] == b'A' { b'B' } else { b'A' };
    let tampered = String::from_utf8(tampered).unwrap();
    let refused = mandate_core::verify_trust_statement(&tampered, &jwks, now, 0).unwrap_err();
    assert!(
        ["invalid_signature", "malformed_header", "invalid_base64"].contains(&refused.code()),
        "{}",
        refused.code()
    );

    app.clock.advance(Duration::from_secs(301));
    let later = app.clock.now().s();
    let expired = mandate_core::verify_trust_statement(&statement, &jwks, later, 0).unwrap_err();
    assert_eq!(expired.code(), "statement_expired");
    app.stop().await;
}

#[tokio::test]
async fn a_database_of_schema_7_gains_the_vouches_table_on_both_engines() {
    let app = TestApp::spawn().await;
    let (_, owner) = app.org("acme").await;
    root(&app, &owner, "kept", None).await;
    let dir = app.stop().await;
    // Back to schema 7: the table version 8 adds is not there, nor the
    // column version 9 adds.
    crate::helpers::with_database(dir.path(), |conn| {
        conn.execute_batch("DROP TABLE vouches").unwrap();
        conn.execute_batch(crate::helpers::DROP_OAUTH_TABLES)
            .unwrap();
        conn.execute_batch(
            "ALTER TABLE records DROP COLUMN origin; ALTER TABLE records DROP COLUMN trust_ppm;
             ALTER TABLE records DROP COLUMN args_hash; ALTER TABLE records DROP COLUMN args;
             ALTER TABLE agents DROP COLUMN owner; ALTER TABLE agents DROP COLUMN parent",
        )
        .unwrap();
        crate::helpers::set_schema_version(conn, 7);
    });
    let app = TestApp::spawn_in(dir, |_| {}).await;
    let made = expect_json(vouch(&app, &owner, "kept", 0.5).await, StatusCode::CREATED).await;
    assert_eq!(made["agent_id"], "kept");
    let version = app.with_database(|conn| match conn.dialect() {
        mandate_host::store::sql::Dialect::Sqlite => conn
            .query_row("PRAGMA user_version", [], |row| row.get::<_, i64>(0))
            .unwrap(),
        mandate_host::store::sql::Dialect::Postgres => conn
            .query_row("SELECT version FROM mandate_schema", [], |row| {
                row.get::<_, i64>(0)
            })
            .unwrap(),
    });
    assert_eq!(version, mandate_host::store::SCHEMA_VERSION);
    app.stop().await;
}

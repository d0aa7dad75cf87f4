//! What reputation counts (issue 22, "Reputation inputs, reconsidered"): a
//! refused pre-flight check (`authorize`) is a denied request, not a
//! failure; a refused act (`record/action`, a report of `record/actions`,
//! `delegate`) is a failure. The reputation body, the agents list and the
//! agent's history (from the dashboard's day counters) agree, and the
//! upgrade to schema 9, which stores each record's origin, recounts nothing.

use std::time::Duration;

use mandate_core::{ReputationCounts, reputation};
use mandate_host::store::Connection;
use mandate_host::store::sql::{Dialect, params};
use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::helpers::{TestApp, expect_json, text, with_database};

async fn get(app: &TestApp, path: &str) -> Value {
    expect_json(app.get_auth(path, &app.admin_key).await, StatusCode::OK).await
}

/// Two successes by `record/action` for a fresh agent that may read `crm:*`;
/// returns its token.
async fn two_successes(app: &TestApp, agent: &str) -> Value {
    let token = app
        .issue(
            json!({"developer_email": "dev@example.com", "agent_id": agent,
                      "resources": ["crm:*"], "actions": ["read"], "ttl_seconds": 172_800}),
        )
        .await;
    for _ in 0..2 {
        let made = app
            .act(text(&token["jti"]), "read", "crm:a", "success")
            .await;
        assert_eq!(made.status(), StatusCode::CREATED);
    }
    token
}

/// The agent's reputation body, checked against the agents list (which
/// reads the same counters) and core's formula on `counts`.
async fn reputation_of(app: &TestApp, agent: &str, counts: ReputationCounts) -> Value {
    let body = get(app, &format!("/v1/vat/reputation/{agent}")).await;
    let expected = reputation(&counts);
    assert_eq!(
        body["counts"],
        json!({
            "successes": counts.successes, "failures": counts.failures,
            "pending": counts.pending, "denied_requests": counts.denied_requests,
            "approved": counts.approved, "flagged": counts.flagged, "rejected": counts.rejected,
        }),
        "{agent}: {body}"
    );
    assert_eq!(
        body["execution_score"].as_f64(),
        Some(expected.execution_score)
    );
    assert_eq!(
        body["combined_reputation"].as_f64(),
        Some(expected.combined_reputation)
    );
    assert_eq!(body["total_actions"], expected.total_actions);
    let page = get(app, "/v1/vat/agents?limit=100").await;
    let listed = page["agents"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["agent_id"] == format!("agent:{agent}"))
        .unwrap_or_else(|| panic!("{agent} missing from {page}"));
    assert_eq!(listed["execution_score"], body["execution_score"]);
    assert_eq!(listed["combined_reputation"], body["combined_reputation"]);
    assert_eq!(listed["total_actions"], body["total_actions"]);
    body
}

#[tokio::test]
async fn a_refused_pre_flight_is_a_denied_request_not_a_failure() {
    let app = TestApp::spawn().await;

    // Asked first and was told no: (2 + 1) / (2 + 2).
    let asker = two_successes(&app, "asker").await;
    let refused = expect_json(
        app.post_auth(
            "/v1/vat/authorize",
            text(&asker["compact_jwt"]),
            &json!({"action": "delete", "resource": "crm:a"}),
        )
        .await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(refused["authorized"], false);
    assert_eq!(refused["reason"], "action_not_permitted");
    let body = reputation_of(
        &app,
        "asker",
        ReputationCounts {
            successes: 2,
            denied_requests: 1,
            ..ReputationCounts::default()
        },
    )
    .await;
    assert_eq!(body["execution_score"], 0.75);

    // Acted without asking: (2 + 1) / (3 + 2).
    let actor = two_successes(&app, "actor").await;
    let acted = app
        .act(text(&actor["jti"]), "delete", "crm:a", "success")
        .await;
    assert_eq!(acted.status(), StatusCode::FORBIDDEN);
    let body = reputation_of(
        &app,
        "actor",
        ReputationCounts {
            successes: 2,
            failures: 1,
            ..ReputationCounts::default()
        },
    )
    .await;
    assert_eq!(body["execution_score"], 0.6);

    // The same in a batch: a refused report is a refused act.
    let batcher = app.root("batcher", &["crm:*"], &["read"]).await;
    let batch = expect_json(
        app.post_auth(
            "/v1/vat/record/actions",
            text(&batcher["compact_jwt"]),
            &json!({"records": [
                {"action": "read", "resource": "crm:a", "result": "success"},
                {"action": "read", "resource": "crm:b", "result": "success"},
                {"action": "delete", "resource": "crm:c", "result": "success"},
            ]}),
        )
        .await,
        StatusCode::OK,
    )
    .await;
    // Refused, with its denied record.
    assert_eq!(
        batch["results"][2]["code"], "action_not_permitted",
        "{batch}"
    );
    assert!(batch["results"][2]["aar_id"].is_string(), "{batch}");
    let body = reputation_of(
        &app,
        "batcher",
        ReputationCounts {
            successes: 2,
            failures: 1,
            ..ReputationCounts::default()
        },
    )
    .await;
    assert_eq!(body["execution_score"], 0.6);

    // A refused delegation is the act itself: a failure, as before.
    let delegator = two_successes(&app, "delegator").await;
    let widened = app
        .delegate(
            &delegator,
            json!({"agent_id": "helper", "resources": ["erp:*"], "actions": ["read"]}),
        )
        .await;
    assert_eq!(widened.status(), StatusCode::FORBIDDEN);
    reputation_of(
        &app,
        "delegator",
        ReputationCounts {
            successes: 2,
            failures: 1,
            ..ReputationCounts::default()
        },
    )
    .await;
}

#[tokio::test]
async fn the_day_counters_count_a_refused_pre_flight_as_the_agents_table_does() {
    let app = TestApp::spawn().await;
    let asker = two_successes(&app, "asker").await;
    app.clock.advance(Duration::from_secs(86_400));
    for action in ["delete", "write"] {
        let refused = expect_json(
            app.post_auth(
                "/v1/vat/authorize",
                text(&asker["compact_jwt"]),
                &json!({"action": action, "resource": "crm:a"}),
            )
            .await,
            StatusCode::OK,
        )
        .await;
        assert_eq!(refused["authorized"], false);
    }
    let acted = app
        .act(text(&asker["jti"]), "delete", "crm:a", "success")
        .await;
    assert_eq!(acted.status(), StatusCode::FORBIDDEN);
    let now = ReputationCounts {
        successes: 2,
        failures: 1,
        denied_requests: 2,
        ..ReputationCounts::default()
    };
    let body = reputation_of(&app, "asker", now).await;
    assert_eq!(body["execution_score"], 0.6);
    // Yesterday is today's counts less today's changes, from the day
    // counters: right only if they moved as the agents table did.
    let history = get(&app, "/v1/vat/agents/asker/history?days=2").await;
    let days = history["days"].as_array().unwrap();
    let yesterday = reputation(&ReputationCounts {
        successes: 2,
        ..ReputationCounts::default()
    });
    assert_eq!(
        days[0]["combined_reputation"].as_f64(),
        Some(yesterday.combined_reputation),
        "{history}"
    );
    assert_eq!(
        days[1]["combined_reputation"].as_f64(),
        Some(reputation(&now).combined_reputation),
        "{history}"
    );
    assert_eq!(
        (&days[1]["records"], &days[1]["denied"]),
        (&json!(3), &json!(3))
    );

    // And they stand after a restart.
    let dir = app.stop().await;
    let app = TestApp::spawn_in(dir, |_| {}).await;
    reputation_of(&app, "asker", now).await;
}

/// Which origin each record of `agent` has (null before schema 9), oldest
/// first.
fn origins(conn: &Connection, agent: &str) -> Vec<Option<String>> {
    conn.prepare_cached("SELECT origin FROM records WHERE agent_id = ?1 ORDER BY seq")
        .unwrap()
        .query_map(params![agent], |row| row.get::<_, Option<String>>(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap()
}

/// The upgrade to schema 9, on either engine: a database of schema 8
/// (this one, its `origin` column dropped and its version set back) gets
/// the column, null for the records it held, whose counts the upgrade
/// leaves as they were; records made after it carry their origin and
/// count by it.
#[tokio::test]
async fn the_upgrade_to_schema_9_keeps_the_counts_and_stores_the_origin_of_new_records() {
    let app = TestApp::spawn().await;
    let asker = two_successes(&app, "asker").await;
    let refused = expect_json(
        app.post_auth(
            "/v1/vat/authorize",
            text(&asker["compact_jwt"]),
            &json!({"action": "delete", "resource": "crm:a"}),
        )
        .await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(refused["authorized"], false);
    let counted = ReputationCounts {
        successes: 2,
        denied_requests: 1,
        ..ReputationCounts::default()
    };
    reputation_of(&app, "asker", counted).await;
    let history = get(&app, "/v1/vat/agents/asker/history?days=1").await;
    let dir = app.stop().await;
    with_database(dir.path(), |conn| {
        assert_eq!(
            origins(conn, "asker"),
            [
                Some("record_action"),
                Some("record_action"),
                Some("authorize")
            ]
            .map(|o| o.map(str::to_owned))
        );
        conn.execute_batch(
            "ALTER TABLE records DROP COLUMN origin; ALTER TABLE records DROP COLUMN trust_ppm;
             ALTER TABLE records DROP COLUMN args_hash; ALTER TABLE records DROP COLUMN args;
             ALTER TABLE agents DROP COLUMN owner; ALTER TABLE agents DROP COLUMN parent",
        )
        .unwrap();
        conn.execute_batch(crate::helpers::DROP_OAUTH_TABLES)
            .unwrap();
        crate::helpers::set_schema_version(conn, 8);
    });

    // Upgraded at start: nothing recounted.
    let app = TestApp::spawn_in(dir, |_| {}).await;
    reputation_of(&app, "asker", counted).await;
    assert_eq!(
        get(&app, "/v1/vat/agents/asker/history?days=1").await,
        history
    );
    let version = app.with_database(|conn| match conn.dialect() {
        Dialect::Sqlite => conn
            .as_sqlite()
            .unwrap()
            .pragma_query_value(None, "user_version", |row| row.get::<_, i64>(0))
            .unwrap(),
        Dialect::Postgres => conn
            .query_row("SELECT version FROM mandate_schema", [], |row| {
                row.get::<_, i64>(0)
            })
            .unwrap(),
    });
    assert_eq!(version, mandate_host::store::SCHEMA_VERSION);

    // Made after the upgrade: a refused act, then a refused pre-flight.
    let acted = app
        .act(text(&asker["jti"]), "delete", "crm:a", "success")
        .await;
    assert_eq!(acted.status(), StatusCode::FORBIDDEN);
    let refused = app
        .post_auth(
            "/v1/vat/authorize",
            text(&asker["compact_jwt"]),
            &json!({"action": "write", "resource": "crm:a"}),
        )
        .await;
    assert_eq!(refused.status(), StatusCode::OK);
    reputation_of(
        &app,
        "asker",
        ReputationCounts {
            successes: 2,
            failures: 1,
            denied_requests: 2,
            ..ReputationCounts::default()
        },
    )
    .await;
    let stored = app.with_database(|conn| origins(conn, "asker"));
    assert_eq!(
        stored,
        [None, None, None, Some("record_action"), Some("authorize")].map(|o| o.map(str::to_owned))
    );
}

//! The read budget: a read still running at `query_budget_ms` is stopped and
//! answered 422 `query_too_broad`, indexed filters are not, and the API-key
//! check and single-item reads never wait for slow reads.
//!
//! Slow reads are made two ways: records written straight into the database
//! (far more than a scan can read within a budget of a millisecond), and a
//! token made its own parent, whose descendants query never ends by itself.

use std::num::NonZeroU64;
use std::time::{Duration, Instant};

use mandate_host::clock::{iso_ms, parse_iso_ms};
use mandate_host::config::Config;
use mandate_host::store::sql::Dialect;
use reqwest::{Response, StatusCode};
use serde_json::Value;
use tokio::task::JoinHandle;

use crate::helpers::{TestApp, expect_json, expect_problem, text};

/// How long a test waits for what must become true, on a busy machine.
const WAIT: Duration = Duration::from_secs(30);

fn budget_ms(ms: u64) -> impl FnOnce(&mut Config) {
    move |config| config.query_budget_ms = NonZeroU64::new(ms).unwrap()
}

/// Writes `count` completed `read` records of `jti` on `crm:bulk`, stamped
/// `at` (unix ms), straight into the database of a running server.
fn plant_records(app: &TestApp, jti: &str, count: u64, at: i64) {
    let (numbers, id, seq) = match dialect(app) {
        Dialect::Sqlite => (
            format!(
                "(WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < {count}) SELECT i FROM n) AS n"
            ),
            "printf('aar_%026d', i)",
            "NULL",
        ),
        Dialect::Postgres => (
            format!("generate_series(1, {count}) AS n(i)"),
            "'aar_' || lpad(i::text, 26, '0')",
            "(SELECT coalesce(max(seq), -1) FROM records WHERE seq < 1099511627776) + i",
        ),
    };
    app.with_database(|conn| {
        conn.execute(
            &format!(
                "INSERT INTO records (seq, aar_id, provenance_ref, jti, agent_id, action, resource, status, result,
                     spend_micros, trust_score, delegation_depth, human_ref, assurance_level, created_at, completed_at)
                 SELECT {seq}, {id}, t.provenance_ref, t.jti, t.agent_id, 'read', 'crm:bulk',
                     'completed', 'success', 0, 0.4, t.depth, w.human_ref, w.assurance_level, {at}, {at}
                 FROM {numbers}, tokens t JOIN workflows w ON w.provenance_ref = t.provenance_ref
                 WHERE t.jti = ?1"
            ),
            [jti],
        )
        .unwrap();
        if conn.dialect() == Dialect::Postgres {
            // Rows arrive over time in service and autovacuum keeps the
            // planner's statistics; 200 000 at once need them made now.
            conn.execute_batch("ANALYZE records").unwrap();
        }
    });
}

/// The engine the suite runs on.
fn dialect(app: &TestApp) -> Dialect {
    app.with_database(|conn| conn.dialect())
}

/// Adds a token that is its own parent under the workflow of `jti`; the
/// query of its descendants never ends. Returns its jti.
fn plant_endless_token(app: &TestApp, jti: &str) -> String {
    let endless = "vat_del_00000000000000000000000000";
    app.with_database(|conn| {
        conn.execute(
            "INSERT INTO tokens (jti, parent, jth, provenance_ref, agent_id, depth, claims, kid, issued_at, expires_at)
             SELECT ?1, ?1, 'planted-endless', provenance_ref, agent_id, 1, claims, kid, issued_at, expires_at
             FROM tokens WHERE jti = ?2",
            [endless, jti],
        )
        .unwrap()
    });
    endless.to_owned()
}

/// Writes `count` children of the root token `jti`, held by `fan-bot`,
/// straight into the database of a running server.
fn plant_children(app: &TestApp, jti: &str, count: u64) {
    let (numbers, id, jth) = match dialect(app) {
        Dialect::Sqlite => (
            format!(
                "(WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < {count}) SELECT i FROM n) AS n"
            ),
            "printf('vat_del_%026d', i)",
            "printf('planted-%d', i)",
        ),
        Dialect::Postgres => (
            format!("generate_series(1, {count}) AS n(i)"),
            "'vat_del_' || lpad(i::text, 26, '0')",
            "'planted-' || i",
        ),
    };
    app.with_database(|conn| {
        conn.execute(
            &format!(
                "INSERT INTO tokens (jti, parent, jth, provenance_ref, agent_id, depth, claims, kid, issued_at, expires_at)
                 SELECT {id}, t.jti, {jth}, t.provenance_ref, 'fan-bot', 1, t.claims, t.kid, t.issued_at, t.expires_at
                 FROM {numbers}, tokens t WHERE t.jti = ?1"
            ),
            [jti],
        )
        .unwrap()
    });
}

/// A GET with the admin key, sent on its own task.
fn spawn_get(app: &TestApp, path: &str) -> JoinHandle<Response> {
    let request = app.client.get(app.url(path)).bearer_auth(&app.admin_key);
    tokio::spawn(async move { request.send().await.unwrap() })
}

/// Read connections of `lane` in use, from `/metrics`.
/// Polls the busy readers of `lane` until `done` holds of their number;
/// fails naming `what` after `within`.
async fn until_readers(
    app: &TestApp,
    lane: &str,
    within: Duration,
    what: &str,
    done: impl Fn(u64) -> bool,
) {
    let started = Instant::now();
    loop {
        let busy = readers_busy(app, lane).await;
        if done(busy) {
            return;
        }
        assert!(started.elapsed() < within, "{what} ({busy} busy)");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

async fn readers_busy(app: &TestApp, lane: &str) -> u64 {
    let metrics = app
        .client
        .get(app.url("/metrics"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let prefix = format!("mandate_readers_busy{{lane=\"{lane}\"}} ");
    metrics
        .lines()
        .find_map(|line| line.strip_prefix(&prefix))
        .map_or(0, |n| n.trim().parse().unwrap())
}

fn records_of(page: &Value) -> Vec<&str> {
    page["records"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| text(&r["aar_id"]))
        .collect()
}

#[tokio::test]
async fn unindexed_record_filters_stop_at_the_budget() {
    let app = TestApp::spawn_with(budget_ms(1)).await;
    let token = app.root("bulk-bot", &["crm:*"], &["read", "write"]).await;
    let jti = text(&token["jti"]);
    plant_records(&app, jti, 200_000, mandate_host::clock::now_ms());
    for query in [
        "resource=crm:none",
        "action=write",
        "result=timeout",
        "result=denied",
        // The agent's index finds its records, but every one must be read
        // to find a write among them.
        "agent_id=bulk-bot&action=write",
    ] {
        // No record matches: a scan that finished would answer 200 with
        // none, so the refusal is the budget stopping it (no bound on the
        // time taken, which a busy machine stretches).
        let response = app
            .get_auth(&format!("/v1/vat/aar?{query}"), &app.admin_key)
            .await;
        let problem = expect_problem(
            response,
            StatusCode::UNPROCESSABLE_ENTITY,
            "query_too_broad",
        )
        .await;
        let detail = text(&problem["detail"]);
        for indexed in ["agent_id", "provenance_ref", "vat_jti", "since", "until"] {
            assert!(detail.contains(indexed), "{query}: {detail}");
        }
    }
    // A page the first records fill is no scan.
    let page = expect_json(
        app.get_auth("/v1/vat/aar?action=read&limit=5", &app.admin_key)
            .await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(records_of(&page).len(), 5);
}

#[tokio::test]
async fn large_graphs_workflow_lists_and_token_trees_stop_at_the_budget() {
    let app = TestApp::spawn_with(budget_ms(1)).await;
    let token = app.root("bot", &["crm:*"], &["read", "delegate"]).await;
    let jti = text(&token["jti"]);
    let provenance = text(&token["provenance_ref"]);
    plant_children(&app, jti, 100_000);
    for (path, detail) in [
        (format!("/v1/vat/tokens/{jti}"), "descendants"),
        (
            format!("/v1/vat/aar/provenance/{provenance}/graph"),
            "limit",
        ),
        ("/v1/vat/workflows?agent_id=fan-bot".to_owned(), "since"),
    ] {
        let problem = expect_problem(
            app.get_auth(&path, &app.admin_key).await,
            StatusCode::UNPROCESSABLE_ENTITY,
            "query_too_broad",
        )
        .await;
        assert!(
            text(&problem["detail"]).contains(detail),
            "{path}: {problem}"
        );
    }
    // Reads by a key are not affected by the size of the workflow.
    expect_json(
        app.get_auth(
            &format!("/v1/vat/aar/provenance/{provenance}"),
            &app.admin_key,
        )
        .await,
        StatusCode::OK,
    )
    .await;
    expect_json(
        app.get_auth("/v1/vat/reputation/bot", &app.admin_key).await,
        StatusCode::OK,
    )
    .await;
}

#[tokio::test]
async fn a_read_that_never_ends_is_stopped_at_the_budget() {
    let app = TestApp::spawn_with(budget_ms(50)).await;
    let token = app.root("bot", &["crm:*"], &["read"]).await;
    let endless = plant_endless_token(&app, text(&token["jti"]));
    let problem = expect_problem(
        app.get_auth(&format!("/v1/vat/tokens/{endless}"), &app.admin_key)
            .await,
        StatusCode::UNPROCESSABLE_ENTITY,
        "query_too_broad",
    )
    .await;
    assert!(text(&problem["detail"]).contains("descendants"));
    // The connection it held serves the next read.
    expect_json(
        app.get_auth(
            &format!("/v1/vat/tokens/{}", text(&token["jti"])),
            &app.admin_key,
        )
        .await,
        StatusCode::OK,
    )
    .await;
}

#[tokio::test]
async fn a_read_whose_client_went_away_frees_its_reader() {
    let budget = 60_000;
    let app = TestApp::spawn_with(budget_ms(budget)).await;
    let token = app.root("bot", &["crm:*"], &["read"]).await;
    let endless = plant_endless_token(&app, text(&token["jti"]));
    let request = spawn_get(&app, &format!("/v1/vat/tokens/{endless}"));
    until_readers(&app, "queries", WAIT, "the read never began", |n| n >= 1).await;
    request.abort();
    until_readers(
        &app,
        "queries",
        WAIT,
        "the abandoned read still holds its reader",
        |n| n == 0,
    )
    .await;
}

#[tokio::test]
async fn api_keys_and_lookups_answer_while_slow_reads_hold_every_reader() {
    // The slow reads must outlast the API-key requests on a busy machine.
    let budget = 10_000;
    let app = TestApp::spawn_with(budget_ms(budget)).await;
    let token = app.root("bot", &["crm:*"], &["read"]).await;
    let jti = text(&token["jti"]);
    let recorded = expect_json(
        app.act(jti, "read", "crm:a", "success").await,
        StatusCode::CREATED,
    )
    .await;
    let endless = plant_endless_token(&app, jti);
    let readers = Config::default().readers;
    let slow: Vec<_> = (0..readers)
        .map(|_| spawn_get(&app, &format!("/v1/vat/tokens/{endless}")))
        .collect();
    until_readers(
        &app,
        "queries",
        WAIT,
        "the slow reads never held every reader",
        |n| n == readers as u64,
    )
    .await;

    let started = Instant::now();
    let reputation = expect_json(
        app.get_auth("/v1/vat/reputation/bot", &app.admin_key).await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(reputation["total_actions"], 1);
    expect_json(
        app.get_auth(
            &format!("/v1/vat/aar/{}", text(&recorded["aar_id"])),
            &app.admin_key,
        )
        .await,
        StatusCode::OK,
    )
    .await;
    app.root("other-bot", &["crm:*"], &["read"]).await;
    let answered = started.elapsed();
    assert!(
        slow.iter().all(|request| !request.is_finished()),
        "a slow read ended before the API-key requests answered ({answered:?})"
    );
    assert_eq!(readers_busy(&app, "queries").await, readers as u64);

    for request in slow {
        let problem = expect_problem(
            request.await.unwrap(),
            StatusCode::UNPROCESSABLE_ENTITY,
            "query_too_broad",
        )
        .await;
        assert!(text(&problem["detail"]).contains("descendants"));
    }
    // A reader is given back once its answer is sent, a moment after the
    // client has it.
    until_readers(
        &app,
        "queries",
        WAIT,
        "the slow reads still hold their readers",
        |n| n == 0,
    )
    .await;
}

#[tokio::test]
async fn indexed_record_filters_are_not_cut_off() {
    // Reading every planted record takes ~100 ms in a test build here, five
    // times this budget; the indexed filters below read a handful.
    let app = TestApp::spawn_with(budget_ms(20)).await;
    let token = app.root("bot", &["crm:*"], &["read", "write"]).await;
    let jti = text(&token["jti"]);
    let mut ids = Vec::new();
    for (action, resource) in [("read", "crm:a"), ("write", "crm:b"), ("read", "crm:c")] {
        let recorded = expect_json(
            app.act(jti, action, resource, "success").await,
            StatusCode::CREATED,
        )
        .await;
        ids.push(text(&recorded["aar_id"]).to_owned());
    }
    let newest = expect_json(
        app.get_auth(&format!("/v1/vat/aar/{}", ids[2]), &app.admin_key)
            .await,
        StatusCode::OK,
    )
    .await;
    let newest_ms = parse_iso_ms(text(&newest["created_at"])).unwrap();
    // Records of another agent, newer than bot's: a scan for bot's would
    // read them all first.
    let bulk = app.root("bulk-bot", &["crm:*"], &["read"]).await;
    plant_records(&app, text(&bulk["jti"]), 200_000, newest_ms + 1);
    let until = iso_ms(newest_ms + 1).replace('+', "%2B");
    let provenance = text(&token["provenance_ref"]);
    for (query, expected) in [
        ("agent_id=bot".to_owned(), vec![&ids[2], &ids[1], &ids[0]]),
        ("agent_id=agent:bot&action=write".to_owned(), vec![&ids[1]]),
        (
            format!("provenance_ref={provenance}&resource=crm:c"),
            vec![&ids[2]],
        ),
        (
            format!("vat_jti={jti}&result=success"),
            vec![&ids[2], &ids[1], &ids[0]],
        ),
        (format!("until={until}&action=write"), vec![&ids[1]]),
        (format!("until={until}&limit=2"), vec![&ids[2], &ids[1]]),
    ] {
        let page = expect_json(
            app.get_auth(&format!("/v1/vat/aar?{query}"), &app.admin_key)
                .await,
            StatusCode::OK,
        )
        .await;
        assert_eq!(records_of(&page), expected, "{query}");
    }
    // Without the range, bot's write is found only after every newer record.
    expect_problem(
        app.get_auth("/v1/vat/aar?action=write", &app.admin_key)
            .await,
        StatusCode::UNPROCESSABLE_ENTITY,
        "query_too_broad",
    )
    .await;
}

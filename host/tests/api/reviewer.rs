//! The reviewer's dashboard over HTTP: agents with their windows and
//! sparklines, an agent's history, the overview, the inbox counts, the
//! `rated` filter, bulk ratings and the token list — exact numbers from
//! seeded records, the organisation wall, roles, bad parameters, and the
//! counters as they stand after a restart.

use std::time::Duration;

use mandate_core::{ReputationCounts, reputation};
use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::helpers::{TestApp, expect_json, expect_problem, jth, text};

/// Today (UTC) of the server's clock, as `YYYY-MM-DD`.
fn today(app: &TestApp) -> String {
    let ms = app.clock.now().ms();
    mandate_host::clock::iso_ms(ms)[..10].to_owned()
}

async fn get(app: &TestApp, key: &str, path: &str) -> Value {
    expect_json(app.get_auth(path, key).await, StatusCode::OK).await
}

/// Seeds `bot` with 3 successes, 1 error and 1 denial (an action outside
/// its scope), and `idle` with one success; returns bot's token.
async fn seed(app: &TestApp) -> Value {
    let bot = app.root("bot", &["crm:*"], &["read", "write"]).await;
    let jti = text(&bot["jti"]);
    for result in ["success", "success", "success", "error"] {
        let response = app.act(jti, "read", "crm:a", result).await;
        assert_eq!(response.status(), StatusCode::CREATED);
    }
    let denied = app.act(jti, "delete", "crm:a", "success").await;
    assert_eq!(denied.status(), StatusCode::FORBIDDEN);
    let idle = app.root("idle", &["crm:*"], &["read"]).await;
    app.act(text(&idle["jti"]), "read", "crm:b", "success")
        .await;
    bot
}

fn agent<'a>(page: &'a Value, id: &str) -> &'a Value {
    page["agents"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["agent_id"] == id)
        .unwrap_or_else(|| panic!("{id} missing from {page}"))
}

#[tokio::test]
async fn agents_list_windows_sparklines_and_reputation_from_counters() {
    let app = TestApp::spawn().await;
    seed(&app).await;
    let page = get(&app, &app.admin_key, "/v1/vat/agents").await;
    let bot = agent(&page, "agent:bot");
    assert_eq!(bot["total_actions"], 5);
    assert_eq!(
        bot["window"],
        json!({"records": 5, "successes": 3, "errors": 1, "denied": 1,
               "denial_rate": 0.2, "error_rate": 0.25})
    );
    let expected = reputation(&ReputationCounts {
        successes: 3,
        failures: 2,
        ..ReputationCounts::default()
    });
    assert_eq!(
        bot["combined_reputation"].as_f64().unwrap(),
        expected.combined_reputation
    );
    assert_eq!(
        bot["execution_score"].as_f64().unwrap(),
        expected.execution_score
    );
    let recent = bot["recent"].as_array().unwrap();
    assert_eq!(recent.len(), 14);
    assert_eq!(recent[13]["day"], today(&app));
    assert_eq!(
        recent[13],
        json!({"day": today(&app), "successes": 3, "errors": 1, "denied": 1})
    );
    assert!(
        recent[..13]
            .iter()
            .all(|d| d["successes"] == 0 && d["errors"] == 0 && d["denied"] == 0)
    );
    assert!(bot["last_activity"].is_string());

    // Sorted and searched; a cursor walks the pages.
    let by_id = get(&app, &app.admin_key, "/v1/vat/agents?sort=agent_id&limit=1").await;
    assert_eq!(by_id["agents"][0]["agent_id"], "agent:bot");
    let next = text(&by_id["next_cursor"]);
    let rest = get(
        &app,
        &app.admin_key,
        &format!("/v1/vat/agents?sort=agent_id&limit=1&cursor={next}"),
    )
    .await;
    assert_eq!(rest["agents"][0]["agent_id"], "agent:idle");
    assert!(rest.get("next_cursor").is_none());
    let by_rate = get(&app, &app.admin_key, "/v1/vat/agents?sort=denial_rate").await;
    assert_eq!(by_rate["agents"][0]["agent_id"], "agent:bot");
    let ascending = get(
        &app,
        &app.admin_key,
        "/v1/vat/agents?sort=reputation&order=asc",
    )
    .await;
    assert_eq!(ascending["agents"][0]["agent_id"], "agent:bot");
    let searched = get(&app, &app.admin_key, "/v1/vat/agents?q=id").await;
    assert_eq!(searched["agents"].as_array().unwrap().len(), 1);
    assert_eq!(searched["agents"][0]["agent_id"], "agent:idle");

    // Ten days later the records have left the 7-day window, not the
    // sparkline, nor the 30-day window.
    app.clock.advance(Duration::from_secs(10 * 86_400));
    let later = get(&app, &app.admin_key, "/v1/vat/agents").await;
    assert_eq!(agent(&later, "agent:bot")["window"]["records"], 0);
    assert_eq!(agent(&later, "agent:bot")["recent"][3]["successes"], 3);
    let month = get(&app, &app.admin_key, "/v1/vat/agents?window=30d").await;
    assert_eq!(agent(&month, "agent:bot")["window"]["records"], 5);
}

#[tokio::test]
async fn history_gives_each_days_counts_and_reputation_as_core_computes_it() {
    let app = TestApp::spawn().await;
    let bot = app
        .issue(
            json!({"developer_email": "dev@example.com", "agent_id": "bot",
                      "resources": ["crm:*"], "actions": ["read"], "ttl_seconds": 172_800}),
        )
        .await;
    let jti = text(&bot["jti"]).to_owned();
    let mut ids = Vec::new();
    for result in ["success", "error"] {
        let made = expect_json(
            app.act(&jti, "read", "crm:a", result).await,
            StatusCode::CREATED,
        )
        .await;
        ids.push(text(&made["aar_id"]).to_owned());
    }
    app.clock.advance(Duration::from_secs(86_400));
    let third = app.act(&jti, "read", "crm:a", "success").await;
    assert_eq!(third.status(), StatusCode::CREATED);
    let rated = app
        .post_auth(
            &format!("/v1/vat/aar/{}/feedback", ids[0]),
            &app.admin_key,
            &json!({"rating": "approved"}),
        )
        .await;
    assert_eq!(rated.status(), StatusCode::OK);

    let history = get(&app, &app.admin_key, "/v1/vat/agents/bot/history?days=3").await;
    assert_eq!(history["agent_id"], "agent:bot");
    let days = history["days"].as_array().unwrap();
    assert_eq!(days.len(), 3);
    assert_eq!(days[2]["day"], today(&app));
    let first = reputation(&ReputationCounts {
        successes: 1,
        failures: 1,
        ..ReputationCounts::default()
    });
    let second = reputation(&ReputationCounts {
        successes: 2,
        failures: 1,
        approved: 1,
        ..ReputationCounts::default()
    });
    assert_eq!(days[0]["records"], 0);
    assert_eq!(days[0]["combined_reputation"].as_f64().unwrap(), 0.5);
    assert_eq!(
        (
            &days[1]["records"],
            &days[1]["successes"],
            &days[1]["errors"]
        ),
        (&json!(2), &json!(1), &json!(1))
    );
    assert_eq!(
        days[1]["combined_reputation"].as_f64().unwrap(),
        first.combined_reputation
    );
    assert_eq!(
        (&days[2]["records"], &days[2]["approved"]),
        (&json!(1), &json!(1))
    );
    assert_eq!(
        days[2]["combined_reputation"].as_f64().unwrap(),
        second.combined_reputation
    );
    let reputation_now = get(&app, &app.admin_key, "/v1/vat/reputation/bot").await;
    assert_eq!(
        reputation_now["combined_reputation"],
        days[2]["combined_reputation"]
    );
    let default = get(&app, &app.admin_key, "/v1/vat/agents/agent:bot/history").await;
    assert_eq!(default["days"].as_array().unwrap().len(), 30);
    for days in ["0", "91", "x"] {
        let response = app
            .get_auth(
                &format!("/v1/vat/agents/bot/history?days={days}"),
                &app.admin_key,
            )
            .await;
        expect_problem(response, StatusCode::BAD_REQUEST, "invalid_query").await;
    }
    let unknown = app
        .get_auth("/v1/vat/agents/nobody/history", &app.admin_key)
        .await;
    expect_problem(unknown, StatusCode::NOT_FOUND, "agent_not_found").await;
}

/// A root token for `agent` whose `pay` needs approval.
async fn guarded(app: &TestApp, agent: &str) -> Value {
    app.issue(json!({
        "developer_email": "dev@example.com",
        "agent_id": agent,
        "resources": ["billing:*"],
        "actions": ["read", "pay"],
        "constraints": {"max_actions": 4, "require_approval": {"actions": ["pay"]}},
    }))
    .await
}

/// Asks for `pay` with the token itself: the approval's id.
async fn ask(app: &TestApp, token: &Value) -> String {
    let answer = expect_json(
        app.post_auth(
            "/v1/vat/authorize",
            text(&token["compact_jwt"]),
            &json!({"action": "pay", "resource": "billing:1"}),
        )
        .await,
        StatusCode::ACCEPTED,
    )
    .await;
    text(&answer["approval"]["approval_id"]).to_owned()
}

#[tokio::test]
async fn overview_and_inbox_count_records_ratings_approvals_and_budgets() {
    let app = TestApp::spawn().await;
    let payer = guarded(&app, "payer").await;
    let first = ask(&app, &payer).await;
    ask(&app, &payer).await;
    let counts = get(&app, &app.admin_key, "/v1/vat/inbox/counts").await;
    assert_eq!(
        counts,
        json!({"approvals_pending": 2, "records_unrated": 0})
    );
    app.clock.advance(Duration::from_secs(90));
    let decided = app
        .post_auth(
            &format!("/v1/vat/approvals/{first}/decision"),
            &app.admin_key,
            &json!({"decision": "deny"}),
        )
        .await;
    assert_eq!(decided.status(), StatusCode::OK);
    let jti = text(&payer["jti"]).to_owned();
    let read = expect_json(
        app.act(&jti, "read", "billing:2", "success").await,
        StatusCode::CREATED,
    )
    .await;
    app.act(&jti, "read", "billing:2", "timeout").await;
    let counts = get(&app, &app.admin_key, "/v1/vat/inbox/counts").await;
    assert_eq!(
        counts,
        json!({"approvals_pending": 1, "records_unrated": 2})
    );
    app.post_auth(
        &format!("/v1/vat/aar/{}/feedback", text(&read["aar_id"])),
        &app.admin_key,
        &json!({"rating": "flagged"}),
    )
    .await;
    let counts = get(&app, &app.admin_key, "/v1/vat/inbox/counts").await;
    assert_eq!(counts["records_unrated"], 1);

    let overview = get(&app, &app.admin_key, "/v1/vat/overview").await;
    assert_eq!(overview["window"], "24h");
    assert_eq!(overview["bucket"], "hour");
    let series = overview["series"].as_array().unwrap();
    assert_eq!(series.len(), 24);
    let totals = &overview["totals"];
    assert_eq!(
        (&totals["records"], &totals["denied"], &totals["errors"]),
        (&json!(4), &json!(1), &json!(1))
    );
    assert_eq!(
        (&totals["ratings"], &totals["approvals_decided"]),
        (&json!(1), &json!(1))
    );
    assert_eq!(
        (&totals["denial_rate"], &totals["error_rate"]),
        (&json!(0.25), &json!(0.5))
    );
    let wait = totals["approval_wait_ms_mean"].as_f64().unwrap();
    assert!((90_000.0..120_000.0).contains(&wait), "{wait}");
    let busy: Vec<&Value> = series.iter().filter(|b| b["records"] != 0).collect();
    assert!(!busy.is_empty());
    let budgets = overview["budgets"].as_array().unwrap();
    assert_eq!(budgets.len(), 1);
    // Two asks (one released by the denial) and two reads: 3 of 4 actions.
    let jth = text(&budgets[0]["jth"]).to_owned();
    assert!(!jth.contains(text(&payer["jti"])), "a hash, never the jti");
    assert_eq!(
        budgets[0],
        json!({"jth": jth, "agent_id": "agent:payer", "provenance_ref": payer["provenance_ref"],
               "budget": "max_actions", "used": 3.0, "limit": 4.0, "percent": 75.0})
    );
    let week = get(&app, &app.admin_key, "/v1/vat/overview?window=7d").await;
    assert_eq!(week["bucket"], "day");
    assert_eq!(week["series"].as_array().unwrap().len(), 7);
    assert_eq!(week["totals"]["records"], 4);
    let response = app
        .get_auth("/v1/vat/overview?window=1y", &app.admin_key)
        .await;
    let problem = expect_problem(response, StatusCode::BAD_REQUEST, "invalid_query").await;
    assert!(text(&problem["detail"]).contains("window"));
}

#[tokio::test]
async fn rated_false_lists_completed_records_awaiting_a_rating() {
    let app = TestApp::spawn().await;
    let bot = seed(&app).await;
    let page = get(&app, &app.admin_key, "/v1/vat/aar?rated=false&agent_id=bot").await;
    let records = page["records"].as_array().unwrap();
    assert_eq!(records.len(), 4, "completed only, never the denial");
    let first = text(&records[0]["aar_id"]).to_owned();
    app.post_auth(
        &format!("/v1/vat/aar/{first}/feedback"),
        &app.admin_key,
        &json!({"rating": "approved"}),
    )
    .await;
    assert_eq!(records[0]["result"], "error", "newest first");
    let unrated = get(
        &app,
        &app.admin_key,
        "/v1/vat/aar?rated=false&result=success",
    )
    .await;
    assert_eq!(
        unrated["records"].as_array().unwrap().len(),
        4,
        "bot's and idle's"
    );
    let errors = get(&app, &app.admin_key, "/v1/vat/aar?rated=false&result=error").await;
    assert_eq!(errors["records"], json!([]));
    let rated = get(&app, &app.admin_key, "/v1/vat/aar?rated=true").await;
    assert_eq!(rated["records"][0]["aar_id"], first);
    let of_workflow = get(
        &app,
        &app.admin_key,
        &format!(
            "/v1/vat/aar?rated=false&provenance_ref={}",
            text(&bot["provenance_ref"])
        ),
    )
    .await;
    assert_eq!(of_workflow["records"].as_array().unwrap().len(), 3);
    let until = get(
        &app,
        &app.admin_key,
        &format!(
            "/v1/vat/aar?rated=false&action=read&until={}",
            rated["records"][0]["created_at"].as_str().unwrap()
        ),
    )
    .await;
    assert_eq!(
        until["records"].as_array().unwrap().len(),
        3,
        "bot's first three"
    );
    let response = app
        .get_auth("/v1/vat/aar?rated=maybe", &app.admin_key)
        .await;
    let problem = expect_problem(response, StatusCode::BAD_REQUEST, "invalid_query").await;
    assert!(text(&problem["detail"]).contains("rated"), "{problem}");
}

#[tokio::test]
async fn bulk_rating_rates_each_unrated_success_of_a_workflow_once() {
    let app = TestApp::spawn().await;
    let bot = seed(&app).await;
    let workflow = text(&bot["provenance_ref"]).to_owned();
    let body = json!({"provenance_ref": workflow, "result": "success", "rating": "approved",
                      "note": "batch"});
    let size = |app: &TestApp| {
        app.with_database(|conn| {
            conn.query_row("SELECT count(*) FROM log_leaves", [], |row| {
                row.get::<_, i64>(0)
            })
            .unwrap()
        })
    };
    let leaves = size(&app);
    let rated = expect_json(
        app.post_auth("/v1/vat/aar/feedback", &app.admin_key, &body)
            .await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(rated["rated"], 3);
    assert_eq!(rated["aar_ids"].as_array().unwrap().len(), 3);
    assert_eq!(size(&app), leaves + 3, "one log leaf per rating");
    for id in rated["aar_ids"].as_array().unwrap() {
        let record = get(&app, &app.admin_key, &format!("/v1/vat/aar/{}", text(id))).await;
        assert_eq!(record["rating"], "approved");
        assert_eq!(record["result"], "success");
        assert_eq!(record["note"], "batch");
    }
    let events = app.with_database(|conn| {
        conn.query_row(
            "SELECT count(*) FROM events WHERE type = 'record.rated'",
            [],
            |row| row.get::<_, i64>(0),
        )
        .unwrap()
    });
    assert_eq!(events, 3);
    let reputation_now = get(&app, &app.admin_key, "/v1/vat/reputation/bot").await;
    assert_eq!(reputation_now["counts"]["approved"], 3);
    let again = expect_json(
        app.post_auth("/v1/vat/aar/feedback", &app.admin_key, &body)
            .await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(again, json!({"rated": 0, "aar_ids": []}));
    let errors = app.get_auth("/v1/vat/inbox/counts", &app.admin_key).await;
    assert_eq!(
        expect_json(errors, StatusCode::OK).await["records_unrated"],
        2,
        "bot's error and idle's success wait still"
    );

    // Bad bodies name their field; an unknown workflow is not found.
    for (body, field) in [
        (
            json!({"provenance_ref": "prov_x", "result": "success", "rating": "approved"}),
            "provenance_ref",
        ),
        (
            json!({"provenance_ref": workflow, "result": "fine", "rating": "approved"}),
            "result",
        ),
        (
            json!({"provenance_ref": workflow, "result": "success", "rating": "great"}),
            "rating",
        ),
    ] {
        let response = app
            .post_auth("/v1/vat/aar/feedback", &app.admin_key, &body)
            .await;
        assert_eq!(response.status(), StatusCode::UNPROCESSABLE_ENTITY);
        let problem: Value = response.json().await.unwrap();
        assert_eq!(problem["field"], field, "{problem}");
    }
    let unknown = app
        .post_auth(
            "/v1/vat/aar/feedback",
            &app.admin_key,
            &json!({"provenance_ref": "prov_01jf3m4k5n6p7q8r9s0t1v2w3x", "result": "success", "rating": "approved"}),
        )
        .await;
    expect_problem(unknown, StatusCode::NOT_FOUND, "workflow_not_found").await;
}

#[tokio::test]
async fn more_than_a_thousand_records_rate_none() {
    let app = TestApp::spawn().await;
    let bot = app.root("bot", &["crm:*"], &["read"]).await;
    let jti = text(&bot["jti"]).to_owned();
    // 1001 records, sent concurrently so the writer commits them in groups.
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..1001 {
        let (client, url, jti) = (
            app.client.clone(),
            app.url("/v1/vat/record/action"),
            jti.clone(),
        );
        tasks.spawn(async move {
            client
                .post(url)
                .json(&json!({"vat_jti": jti, "action": "read", "resource": "crm:a", "result": "success"}))
                .send()
                .await
                .unwrap()
                .status()
        });
    }
    while let Some(status) = tasks.join_next().await {
        assert_eq!(status.unwrap(), StatusCode::CREATED);
    }
    let body =
        json!({"provenance_ref": bot["provenance_ref"], "result": "success", "rating": "approved"});
    let response = app
        .post_auth("/v1/vat/aar/feedback", &app.admin_key, &body)
        .await;
    expect_problem(
        response,
        StatusCode::UNPROCESSABLE_ENTITY,
        "too_many_records",
    )
    .await;
    let counts = get(&app, &app.admin_key, "/v1/vat/inbox/counts").await;
    assert_eq!(counts["records_unrated"], 1001, "nothing was rated");
}

#[tokio::test]
async fn tokens_list_active_first_with_labels_and_filters() {
    let app = TestApp::spawn().await;
    let (_, owner) = app.org("acme").await;
    let developer = app.key(&owner, "developer", Some("Ada@Example.com")).await;
    let issue = |key: String, agent: &'static str, email: &'static str| {
        let app = &app;
        async move {
            expect_json(
                app.post_auth(
                    "/v1/vat/issue/l1",
                    &key,
                    &json!({"developer_email": email, "agent_id": agent,
                            "resources": ["crm:*"], "actions": ["read", "delegate"]}),
                )
                .await,
                StatusCode::CREATED,
            )
            .await
        }
    };
    let old = issue(developer.clone(), "alpha", "ada@example.com").await;
    app.clock.advance(Duration::from_secs(5));
    let newer = issue(owner.clone(), "beta", "bob@example.com").await;
    app.clock.advance(Duration::from_secs(5));
    let newest = issue(developer.clone(), "gamma", "ada@example.com").await;
    let revoked = app
        .post_auth(
            "/v1/vat/revoke",
            &owner,
            &json!({"jti": newest["jti"], "reason": "done"}),
        )
        .await;
    assert_eq!(revoked.status(), StatusCode::OK);

    let page = get(&app, &owner, "/v1/vat/tokens").await;
    let tokens = page["tokens"].as_array().unwrap();
    // Named by jti hash: a list never shows a jti.
    let order: Vec<&str> = tokens.iter().map(|t| text(&t["jth"])).collect();
    assert_eq!(
        order,
        [&newer, &old, &newest].map(|t| jth(text(&t["jti"]))),
        "active first, newest issued first"
    );
    assert_eq!(tokens[1]["human_label"], "ada@example.com");
    assert_eq!(tokens[0]["human_label"], "bob@example.com");
    assert_eq!(tokens[2]["status"], "revoked");
    assert!(tokens[2]["revoked_at"].is_string());
    assert_eq!(tokens[1]["assurance_level"], "L1");
    assert_eq!(tokens[1]["delegation_depth"], 0);

    let human = text(&old["claims"]["svc_human"]).to_owned();
    let mine = get(&app, &owner, &format!("/v1/vat/tokens?human_ref={human}")).await;
    assert_eq!(mine["tokens"].as_array().unwrap().len(), 2);
    let active = get(
        &app,
        &owner,
        &format!("/v1/vat/tokens?human_ref={human}&status=active"),
    )
    .await;
    assert_eq!(active["tokens"].as_array().unwrap().len(), 1);
    let gone = get(&app, &owner, "/v1/vat/tokens?status=revoked").await;
    assert_eq!(gone["tokens"][0]["jth"], jth(text(&newest["jti"])));
    let beta = get(&app, &owner, "/v1/vat/tokens?agent_id=agent:beta").await;
    assert_eq!(beta["tokens"].as_array().unwrap().len(), 1);
    let paged = get(&app, &owner, "/v1/vat/tokens?limit=2").await;
    assert_eq!(paged["tokens"].as_array().unwrap().len(), 2);
    let rest = get(
        &app,
        &owner,
        &format!(
            "/v1/vat/tokens?limit=2&cursor={}",
            text(&paged["next_cursor"])
        ),
    )
    .await;
    assert_eq!(rest["tokens"][0]["jth"], jth(text(&newest["jti"])));
    assert!(rest.get("next_cursor").is_none());

    // Workflows filter by human and carry the label.
    let workflows = get(
        &app,
        &owner,
        &format!("/v1/vat/workflows?human_ref={human}"),
    )
    .await;
    let listed = workflows["workflows"].as_array().unwrap();
    assert_eq!(listed.len(), 2);
    assert!(listed.iter().all(|w| w["human_label"] == "ada@example.com"));

    // Expired, an hour and more later.
    app.clock.advance(Duration::from_secs(30 * 86_400));
    let expired = get(&app, &owner, "/v1/vat/tokens?status=expired").await;
    assert_eq!(expired["tokens"].as_array().unwrap().len(), 2);

    for query in [
        "status=gone",
        "human_ref=ada",
        "provenance_ref=nope",
        "limit=0",
        "agent_id=-x",
        "cursor=%21",
    ] {
        let response = app
            .get_auth(&format!("/v1/vat/tokens?{query}"), &owner)
            .await;
        assert_eq!(response.status(), StatusCode::BAD_REQUEST, "{query}");
    }
}

#[tokio::test]
async fn the_organisation_wall_and_roles_hold() {
    let app = TestApp::spawn().await;
    seed(&app).await;
    let (_, other) = app.org("other").await;
    let page = get(&app, &other, "/v1/vat/agents").await;
    assert_eq!(page["agents"], json!([]));
    let history = app.get_auth("/v1/vat/agents/bot/history", &other).await;
    expect_problem(history, StatusCode::NOT_FOUND, "agent_not_found").await;
    let overview = get(&app, &other, "/v1/vat/overview?window=30d").await;
    assert_eq!(overview["totals"]["records"], 0);
    assert_eq!(overview["budgets"], json!([]));
    assert_eq!(
        get(&app, &other, "/v1/vat/inbox/counts").await,
        json!({"approvals_pending": 0, "records_unrated": 0})
    );
    assert_eq!(
        get(&app, &other, "/v1/vat/tokens").await["tokens"],
        json!([])
    );
    assert_eq!(
        get(&app, &other, "/v1/vat/aar?rated=false").await["records"],
        json!([])
    );

    let (_, owner) = app.org("roles").await;
    let auditor = app.key(&owner, "auditor", Some("audit@example.com")).await;
    for path in [
        "/v1/vat/agents",
        "/v1/vat/overview",
        "/v1/vat/inbox/counts",
        "/v1/vat/tokens",
    ] {
        get(&app, &auditor, path).await;
    }
    let body = json!({"provenance_ref": "prov_01jf3m4k5n6p7q8r9s0t1v2w3x", "result": "success", "rating": "approved"});
    let refused = app.post_auth("/v1/vat/aar/feedback", &auditor, &body).await;
    expect_problem(refused, StatusCode::FORBIDDEN, "role_forbidden").await;

    let token = app.root("agent-self", &["crm:*"], &["read"]).await;
    let as_agent = app
        .get_auth("/v1/vat/agents", text(&token["compact_jwt"]))
        .await;
    assert_eq!(as_agent.status(), StatusCode::UNAUTHORIZED);

    for query in [
        "window=1d",
        "sort=name",
        "order=up",
        "q=a%20b",
        "limit=501",
        "unknown=1",
    ] {
        let response = app
            .get_auth(&format!("/v1/vat/agents?{query}"), &app.admin_key)
            .await;
        expect_problem(response, StatusCode::BAD_REQUEST, "invalid_query").await;
    }
    let response = app
        .get_auth("/v1/vat/agents?cursor=bad", &app.admin_key)
        .await;
    expect_problem(response, StatusCode::BAD_REQUEST, "invalid_cursor").await;
}

#[tokio::test]
async fn counters_stand_after_a_restart() {
    let app = TestApp::spawn().await;
    seed(&app).await;
    let before = get(&app, &app.admin_key, "/v1/vat/agents").await;
    let overview = get(&app, &app.admin_key, "/v1/vat/overview").await;
    let dir = app.stop().await;
    let app = TestApp::spawn_in(dir, |_| {}).await;
    assert_eq!(get(&app, &app.admin_key, "/v1/vat/agents").await, before);
    assert_eq!(
        get(&app, &app.admin_key, "/v1/vat/overview").await["totals"],
        overview["totals"]
    );
    assert_eq!(
        get(&app, &app.admin_key, "/v1/vat/inbox/counts").await["records_unrated"],
        5
    );
}

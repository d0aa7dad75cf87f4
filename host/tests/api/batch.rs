//! `POST /v1/vat/record/actions`: many records in one call and one commit,
//! each judged exactly as `record/action` judges it alone — and written
//! exactly as it would have been: the same answers, records, log leaves,
//! events and counters as the same records sent one by one. Authority is
//! held item by item: a record naming another token than the one presented
//! borrows nothing from it.

use std::collections::BTreeMap;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use mandate_core::limits::MAX_BATCH_RECORDS;
use mandate_host::api::MAX_BODY_BYTES;
use mandate_host::config::AgentAuth;
use mandate_host::store::orgs::Org;
use reqwest::{Method, Response, StatusCode};
use serde_json::{Value, json};

use crate::helpers::{Holder, TestApp, expect_json, expect_problem, jth, text};

const PATH: &str = "/v1/vat/record/actions";

/// Sends a batch, with the token itself when `bearer` is given.
async fn batch(app: &TestApp, bearer: Option<&str>, records: &[Value]) -> Response {
    send(app, bearer, &json!({ "records": records }), None).await
}

/// Sends a batch body, with an `Idempotency-Key` when given.
async fn send(app: &TestApp, bearer: Option<&str>, body: &Value, key: Option<&str>) -> Response {
    let mut request = app.client.post(app.url(PATH)).json(body);
    if let Some(bearer) = bearer {
        request = request.bearer_auth(bearer);
    }
    if let Some(key) = key {
        request = request.header("idempotency-key", key);
    }
    request.send().await.unwrap()
}

/// The results of a committed batch, each checked to stand at its index.
async fn results(response: Response) -> Vec<Value> {
    let body = expect_json(response, StatusCode::OK).await;
    let results = body["results"].as_array().unwrap().clone();
    for (index, result) in results.iter().enumerate() {
        assert_eq!(result["index"], index, "{result}");
    }
    results
}

/// What a result says, without its ids: recorded or not, the status and
/// code `record/action` would have answered, and whether a record was
/// written.
type Outcome = (bool, u64, String, bool);

/// A record recorded.
fn recorded() -> Outcome {
    (true, 201, String::new(), true)
}

/// A record refused with `status` and `code`, leaving a denied record or
/// none.
fn refused(status: u64, code: &str, written: bool) -> Outcome {
    (false, status, code.to_owned(), written)
}

fn outcome(result: &Value) -> Outcome {
    if result["recorded"] == true {
        assert!(text(&result["aar_id"]).starts_with("aar_"));
        return recorded();
    }
    assert_eq!(result["recorded"], false, "{result}");
    assert!(!text(&result["detail"]).is_empty());
    refused(
        result["status"].as_u64().unwrap(),
        text(&result["code"]),
        result.get("aar_id").is_some(),
    )
}

/// What each result of a batch says.
fn outcomes(results: &[Value]) -> Vec<Outcome> {
    results.iter().map(outcome).collect()
}

/// A grant with a spend budget and approval required for `send`.
fn grant(agent: &str) -> Value {
    json!({
        "developer_email": "dev@example.com",
        "agent_id": agent,
        "resources": ["crm:*"],
        "actions": ["read", "send", "delegate"],
        "constraints": {"max_spend_usd": 10, "require_approval": {"actions": ["send"]}},
    })
}

/// A run of an agent under [`grant`]: allowed, out of scope (action, then
/// resource), the budget reached in the middle (so a later record sees the
/// earlier spend), a failure, and an action that needs approval first.
fn mixed() -> Vec<Value> {
    let hash = format!("sha256:{}", "ab".repeat(32));
    vec![
        json!({"action": "read", "resource": "crm:a", "result": "success", "spend_usd": 4}),
        json!({"action": "write", "resource": "crm:a", "result": "success"}),
        json!({"action": "read", "resource": "erp:x", "result": "success"}),
        json!({"action": "read", "resource": "crm:b", "result": "success", "spend_usd": 5, "result_hash": hash}),
        json!({"action": "read", "resource": "crm:c", "result": "success", "spend_usd": 2}),
        json!({"action": "read", "resource": "crm:d", "result": "error", "spend_usd": 1}),
        json!({"action": "send", "resource": "crm:e", "result": "success"}),
    ]
}

/// What [`mixed`] comes to, record by record.
fn mixed_outcomes() -> Vec<Outcome> {
    let denied = |code: &str| refused(403, code, true);
    vec![
        recorded(),
        denied("action_not_permitted"),
        denied("resource_not_permitted"),
        recorded(),
        denied("budget_max_spend_usd"),
        recorded(),
        denied("approval_required"),
    ]
}

/// The records made with `jti`, oldest first.
async fn records_of(app: &TestApp, jti: &str) -> Vec<Value> {
    let page = expect_json(
        app.get_auth(
            &format!("/v1/vat/aar?vat_jti={jti}&limit=500"),
            &app.admin_key,
        )
        .await,
        StatusCode::OK,
    )
    .await;
    let mut records = page["records"].as_array().unwrap().clone();
    records.reverse();
    records
}

/// The number of leaves in the record log.
async fn log_size(app: &TestApp) -> u64 {
    let note = public_text(app, "/v1/log/checkpoint").await;
    note.lines().nth(1).unwrap().parse().unwrap()
}

/// The text a public path answers.
async fn public_text(app: &TestApp, path: &str) -> String {
    let response = app.client.get(app.url(path)).send().await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    response.text().await.unwrap()
}

/// `mandate_records_written_total` by status.
async fn written(app: &TestApp) -> BTreeMap<String, f64> {
    public_text(app, "/metrics")
        .await
        .lines()
        .filter_map(|line| line.strip_prefix("mandate_records_written_total{status=\""))
        .filter_map(|rest| rest.split_once("\"} "))
        .map(|(status, count)| (status.to_owned(), count.trim().parse().unwrap()))
        .collect()
}

fn delta(before: &BTreeMap<String, f64>, after: &BTreeMap<String, f64>) -> BTreeMap<String, f64> {
    after
        .iter()
        .map(|(status, count)| {
            (
                status.clone(),
                count - before.get(status).copied().unwrap_or(0.0),
            )
        })
        .filter(|(_, change)| *change != 0.0)
        .collect()
}

/// A value without what names one run rather than another: ids, agents,
/// workflows, jti hashes and times (and the trust in force, which decays
/// with time).
fn normalised(value: &Value) -> Value {
    const NAMING: [&str; 10] = [
        "trust_in_force",
        "aar_id",
        "agent_id",
        "provenance_ref",
        "jth",
        "at",
        "created_at",
        "completed_at",
        "timestamp",
        "approval_id",
    ];
    match value {
        Value::Object(members) => Value::Object(
            members
                .iter()
                .filter(|(name, _)| !NAMING.contains(&name.as_str()))
                .map(|(name, member)| (name.clone(), normalised(member)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(normalised).collect()),
        other => other.clone(),
    }
}

/// The record log's leaves of a record, as JSON.
async fn leaves(app: &TestApp, aar_id: &str) -> Vec<Value> {
    let proof = expect_json(
        app.get_auth(&format!("/v1/vat/aar/{aar_id}/proof"), &app.admin_key)
            .await,
        StatusCode::OK,
    )
    .await;
    proof["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|event| {
            let leaf = STANDARD.decode(text(&event["leaf"])).unwrap();
            serde_json::from_slice(&leaf).unwrap()
        })
        .collect()
}

/// The payloads of the default organisation's events about the workflow
/// `provenance_ref`, in order.
fn events_of(app: &TestApp, provenance_ref: &str) -> Vec<Value> {
    let stored = app.with_database(|conn| {
        mandate_host::store::events::after(conn, Org::DEFAULT, 0, 10_000).unwrap()
    });
    stored
        .iter()
        .map(|event| serde_json::from_slice::<Value>(&event.payload).unwrap())
        .filter(|payload| payload["data"]["provenance_ref"] == provenance_ref)
        .collect()
}

#[tokio::test]
async fn a_mixed_batch_judges_each_record_in_order_and_commits_them_all() {
    let app = TestApp::spawn().await;
    let token = app.issue(grant("batcher")).await;
    let (jti, jwt) = (text(&token["jti"]), text(&token["compact_jwt"]));

    let results = results(batch(&app, Some(jwt), &mixed()).await).await;
    assert_eq!(outcomes(&results), mixed_outcomes());
    for result in results.iter().filter(|r| r["recorded"] == true) {
        assert_eq!(result["provenance_ref"], token["provenance_ref"]);
        assert_eq!(result["trust_score"], 0.4);
        assert_eq!(result["delegation_depth"], 0);
    }

    // Every record, allowed or denied, is stored as sent, in order, made
    // with the token itself.
    let records = records_of(&app, jti).await;
    assert_eq!(records.len(), 7);
    let expected = [
        ("read", "crm:a", "completed", Some("success"), None, 4.0),
        (
            "write",
            "crm:a",
            "denied",
            None,
            Some("action_not_permitted"),
            0.0,
        ),
        (
            "read",
            "erp:x",
            "denied",
            None,
            Some("resource_not_permitted"),
            0.0,
        ),
        ("read", "crm:b", "completed", Some("success"), None, 5.0),
        (
            "read",
            "crm:c",
            "denied",
            None,
            Some("budget_max_spend_usd"),
            0.0,
        ),
        ("read", "crm:d", "completed", Some("error"), None, 1.0),
        (
            "send",
            "crm:e",
            "denied",
            None,
            Some("approval_required"),
            0.0,
        ),
    ];
    for ((record, result), (action, resource, status, outcome, reason, spend)) in
        records.iter().zip(&results).zip(expected)
    {
        assert_eq!(record["aar_id"], result["aar_id"]);
        let one = expect_json(
            app.get_auth(
                &format!("/v1/vat/aar/{}", text(&record["aar_id"])),
                &app.admin_key,
            )
            .await,
            StatusCode::OK,
        )
        .await;
        assert_eq!(one["action"], action);
        assert_eq!(one["resource"], resource);
        assert_eq!(one["status"], status, "{one}");
        assert_eq!(one["result"].as_str(), outcome, "{one}");
        assert_eq!(one["deny_reason"].as_str(), reason, "{one}");
        assert_eq!(one["spend_usd"], spend, "{one}");
        assert_eq!(one["credential"], "token");
        assert_eq!(one["jth"], jth(jti));
    }
    assert_eq!(
        records[3]["result_hash"],
        format!("sha256:{}", "ab".repeat(32))
    );

    // The budget stands where the batch left it: 10 of 10 spent.
    expect_problem(
        app.post_auth(
            "/v1/vat/record/action",
            jwt,
            &json!({"action": "read", "resource": "crm:f", "result": "success", "spend_usd": 0.5}),
        )
        .await,
        StatusCode::FORBIDDEN,
        "budget_max_spend_usd",
    )
    .await;
    let summary = expect_json(
        app.get_auth(
            &format!("/v1/vat/aar/provenance/{}", text(&token["provenance_ref"])),
            &app.admin_key,
        )
        .await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(summary["total_records"], 8);
    assert_eq!(
        summary["results_by_type"],
        json!({"success": 2, "error": 1, "denied": 5})
    );
}

#[tokio::test]
async fn a_batch_writes_what_the_same_records_sent_one_by_one_write() {
    let app = TestApp::spawn().await;
    let alone = app.issue(grant("one-by-one")).await;
    let together = app.issue(grant("batched")).await;

    let (metrics, size) = (written(&app).await, log_size(&app).await);
    let mut one_by_one = Vec::new();
    for record in mixed() {
        let response = app
            .post_auth(
                "/v1/vat/record/action",
                text(&alone["compact_jwt"]),
                &record,
            )
            .await;
        let status = response.status();
        let body: Value = response.json().await.unwrap();
        one_by_one.push(if status == StatusCode::CREATED {
            json!({"recorded": true, "aar_id": body["aar_id"], "provenance_ref": body["provenance_ref"],
                   "trust_score": body["trust_score"], "trust_in_force": body["trust_in_force"],
                   "delegation_depth": body["delegation_depth"]})
        } else {
            json!({"recorded": false, "status": body["status"], "code": body["code"],
                   "detail": body["detail"], "aar_id": body["aar_id"]})
        });
    }
    let (metrics_alone, size_alone) = (written(&app).await, log_size(&app).await);
    let batched = results(batch(&app, Some(text(&together["compact_jwt"])), &mixed()).await).await;
    let (metrics_batched, size_batched) = (written(&app).await, log_size(&app).await);

    // The same answers, record by record.
    assert_eq!(batched.len(), one_by_one.len());
    for (single, result) in one_by_one.iter().zip(&batched) {
        let mut result = result.clone();
        result.as_object_mut().unwrap().remove("index");
        assert_eq!(normalised(single), normalised(&result));
        assert_eq!(single["aar_id"].is_string(), result["aar_id"].is_string());
    }
    assert_eq!(outcomes(&batched), mixed_outcomes());

    // The same counters moved, and as many leaves were logged.
    assert_eq!(
        delta(&metrics, &metrics_alone),
        delta(&metrics_alone, &metrics_batched)
    );
    assert_eq!(
        delta(&metrics_alone, &metrics_batched),
        BTreeMap::from([("completed".to_owned(), 3.0), ("denied".to_owned(), 4.0)])
    );
    assert_eq!(size_alone - size, 7);
    assert_eq!(size_batched - size_alone, 7);

    // The same leaves, record by record.
    for (single, result) in one_by_one.iter().zip(&batched) {
        let (single, result) = (
            leaves(&app, text(&single["aar_id"])).await,
            leaves(&app, text(&result["aar_id"])).await,
        );
        assert_eq!(single.len(), 1);
        assert_eq!(
            single.iter().map(normalised).collect::<Vec<_>>(),
            result.iter().map(normalised).collect::<Vec<_>>()
        );
    }

    // The same events, in the same order.
    let events_alone = events_of(&app, text(&alone["provenance_ref"]));
    let events_batched = events_of(&app, text(&together["provenance_ref"]));
    let kinds: Vec<&str> = events_batched.iter().map(|e| text(&e["type"])).collect();
    assert_eq!(
        kinds,
        [
            "record.denied",
            "record.denied",
            "budget.threshold",
            "record.denied",
            "record.failed",
            "budget.threshold",
            "record.denied"
        ]
    );
    assert_eq!(
        events_alone.iter().map(normalised).collect::<Vec<_>>(),
        events_batched.iter().map(normalised).collect::<Vec<_>>()
    );

    // The same reputation, workflow summary and dashboard counters.
    for (path_alone, path_batched) in [
        (
            "/v1/vat/reputation/one-by-one".to_owned(),
            "/v1/vat/reputation/batched".to_owned(),
        ),
        (
            format!("/v1/vat/aar/provenance/{}", text(&alone["provenance_ref"])),
            format!(
                "/v1/vat/aar/provenance/{}",
                text(&together["provenance_ref"])
            ),
        ),
        (
            "/v1/vat/agents?q=one-by-one".to_owned(),
            "/v1/vat/agents?q=batched".to_owned(),
        ),
    ] {
        let read = |path: String| {
            let app = &app;
            async move {
                let body =
                    expect_json(app.get_auth(&path, &app.admin_key).await, StatusCode::OK).await;
                let mut body = normalised(&body);
                if let Some(agents) = body.get_mut("agents") {
                    for agent in agents.as_array_mut().unwrap() {
                        agent.as_object_mut().unwrap().remove("last_activity");
                    }
                }
                body
            }
        };
        let (one, other) = (read(path_alone).await, read(path_batched).await);
        assert_eq!(one, other);
        assert_ne!(one, json!({}));
    }
}

#[tokio::test]
async fn a_child_naming_its_parents_jti_in_a_batch_borrows_nothing() {
    let app = TestApp::spawn().await;
    let root = app
        .root("planner", &["crm:*"], &["read", "write", "delegate"])
        .await;
    let child = expect_json(
        app.delegate(
            &root,
            json!({"agent_id": "sub", "resources": ["crm:a"], "actions": ["read"]}),
        )
        .await,
        StatusCode::CREATED,
    )
    .await;
    let (root_jti, child_jti) = (text(&root["jti"]), text(&child["jti"]));

    // The sub-agent presents its own token and names its parent's jti:
    // those records are refused alone (401 token_mismatch, nothing
    // written); the others act under the child, and the child only.
    let borrowed = results(
        batch(
            &app,
            Some(text(&child["compact_jwt"])),
            &[
                json!({"action": "read", "resource": "crm:a", "result": "success"}),
                json!({"vat_jti": root_jti, "action": "write", "resource": "crm:b", "result": "success", "spend_usd": 3}),
                json!({"vat_jti": root_jti, "action": "read", "resource": "crm:a", "result": "success"}),
                json!({"vat_jti": child_jti, "action": "read", "resource": "crm:a", "result": "success"}),
                json!({"action": "write", "resource": "crm:a", "result": "success"}),
            ],
        )
        .await,
    )
    .await;
    assert_eq!(
        outcomes(&borrowed),
        [
            recorded(),
            refused(401, "token_mismatch", false),
            refused(401, "token_mismatch", false),
            recorded(),
            refused(403, "action_not_permitted", true),
        ]
    );
    assert_eq!(borrowed[0]["delegation_depth"], 1);
    // The root made nothing but its delegation.
    let root_records = records_of(&app, root_jti).await;
    assert_eq!(
        root_records
            .iter()
            .map(|r| text(&r["action"]))
            .collect::<Vec<_>>(),
        ["delegate"]
    );
    let child_records = records_of(&app, child_jti).await;
    assert_eq!(child_records.len(), 3);
    for record in &child_records {
        assert_eq!(record["jth"], jth(child_jti));
        assert_eq!(record["credential"], "token");
        assert_eq!(record["agent_id"], "sub");
    }

    // Without a token presented, each record acts with the token it names,
    // by its bare jti and nothing more; a jti this server does not hold is
    // refused alone, as `record/action` refuses it.
    let unknown = "vat_root_01kaqv3f00000000000000000a";
    let bare = results(
        batch(
            &app,
            None,
            &[
                json!({"vat_jti": child_jti, "action": "read", "resource": "crm:a", "result": "success"}),
                json!({"vat_jti": child_jti, "action": "write", "resource": "crm:a", "result": "success"}),
                json!({"vat_jti": unknown, "action": "read", "resource": "crm:a", "result": "success"}),
                json!({"vat_jti": root_jti, "action": "write", "resource": "crm:b", "result": "success"}),
            ],
        )
        .await,
    )
    .await;
    assert_eq!(
        outcomes(&bare),
        [
            recorded(),
            refused(403, "action_not_permitted", true),
            refused(403, "token_inactive", false),
            recorded(),
        ]
    );
    let named = records_of(&app, root_jti).await;
    assert_eq!(named.len(), 2);
    assert_eq!(named[1]["credential"], "jti");

    // A revoked chain: by the token itself each record is a denied record
    // told `token_revoked`; by the bare jti, `token_inactive`.
    expect_json(
        app.post_auth("/v1/vat/revoke", &app.admin_key, &json!({"jti": root_jti}))
            .await,
        StatusCode::OK,
    )
    .await;
    let act = json!({"action": "read", "resource": "crm:a", "result": "success"});
    let mut by_jti = act.clone();
    by_jti["vat_jti"] = json!(child_jti);
    let revoked = results(batch(&app, Some(text(&child["compact_jwt"])), &[act]).await).await;
    assert_eq!(outcome(&revoked[0]), refused(401, "token_revoked", true));
    let inactive = results(batch(&app, None, &[by_jti]).await).await;
    assert_eq!(outcome(&inactive[0]), refused(403, "token_inactive", true));
}

#[tokio::test]
async fn the_call_itself_is_authenticated_once_and_refused_whole() {
    let app = TestApp::spawn().await;
    let holder = Holder::new();
    let bound = app
        .issue(json!({
            "developer_email": "dev@example.com", "agent_id": "bound-bot",
            "resources": ["crm:*"], "actions": ["read"], "holder_key": holder.jwk(),
        }))
        .await;
    let (jti, jwt) = (text(&bound["jti"]), text(&bound["compact_jwt"]));
    let act = json!({"action": "read", "resource": "crm:a", "result": "success"});
    let body = json!({"records": [act, act, act]});

    // A bound token with one proof for the call: every record acts.
    let proof = holder.proof("POST", &app.url(PATH), jwt);
    let bound_results = results(app.post_dpop(PATH, jwt, Some(&proof), &body).await).await;
    assert!(bound_results.iter().all(|r| r["recorded"] == true));
    // The proof once more, or the token without one: refused whole.
    let replayed = expect_problem(
        app.post_dpop(PATH, jwt, Some(&proof), &body).await,
        StatusCode::UNAUTHORIZED,
        "dpop_invalid",
    )
    .await;
    assert_eq!(replayed["reason"], "dpop_replayed");
    expect_problem(
        app.post_auth(PATH, jwt, &body).await,
        StatusCode::UNAUTHORIZED,
        "dpop_required",
    )
    .await;
    // Named by its bare jti, a bound token acts for no record.
    let mut by_jti = act.clone();
    by_jti["vat_jti"] = json!(jti);
    let named = results(batch(&app, None, &[by_jti.clone(), by_jti]).await).await;
    for result in &named {
        assert_eq!(outcome(result), refused(401, "dpop_required", false));
    }
    assert_eq!(records_of(&app, jti).await.len(), 3);

    // An API key is no agent token; a token that fails verification
    // refuses the call.
    expect_problem(
        app.post_auth(PATH, &app.admin_key, &body).await,
        StatusCode::UNAUTHORIZED,
        "token_required",
    )
    .await;
    let mut tampered = jwt.to_owned();
    let last = tampered.pop();
    tampered.push(if last == Some('A') { 'B' } else { 'A' });
    let forged = app.post_auth(PATH, &tampered, &body).await;
    assert_eq!(forged.status(), StatusCode::UNAUTHORIZED);

    // A deployment that takes tokens only refuses a batch of bare jtis.
    let strict = TestApp::spawn_with(|config| config.agent_auth = AgentAuth::Bearer).await;
    let token = strict.root("bot", &["crm:*"], &["read"]).await;
    let mut named = act.clone();
    named["vat_jti"] = token["jti"].clone();
    expect_problem(
        batch(&strict, None, &[named]).await,
        StatusCode::UNAUTHORIZED,
        "token_required",
    )
    .await;
    let presented = results(batch(&strict, Some(text(&token["compact_jwt"])), &[act]).await).await;
    assert_eq!(presented[0]["recorded"], true);
}

#[tokio::test]
async fn an_idempotent_replay_returns_the_first_answer_and_writes_nothing() {
    let app = TestApp::spawn().await;
    let token = app.issue(grant("flusher")).await;
    let (jti, jwt) = (text(&token["jti"]), text(&token["compact_jwt"]));
    let body = json!({ "records": mixed() });

    let first = send(&app, Some(jwt), &body, Some("flush-1")).await;
    assert_eq!(first.status(), StatusCode::OK);
    let first = first.text().await.unwrap();
    let (records, size) = (records_of(&app, jti).await.len(), log_size(&app).await);
    let events = events_of(&app, text(&token["provenance_ref"])).len();
    assert_eq!((records, events), (7, 7));
    for _ in 0..2 {
        let again = send(&app, Some(jwt), &body, Some("flush-1")).await;
        assert_eq!(again.status(), StatusCode::OK);
        assert_eq!(again.text().await.unwrap(), first);
    }
    // The same key with another body: refused, nothing written.
    let mut other = body.clone();
    other["records"][0]["resource"] = json!("crm:z");
    expect_problem(
        send(&app, Some(jwt), &other, Some("flush-1")).await,
        StatusCode::UNPROCESSABLE_ENTITY,
        "idempotency_key_reused",
    )
    .await;
    assert_eq!(records_of(&app, jti).await.len(), records);
    assert_eq!(log_size(&app).await, size);
    assert_eq!(
        events_of(&app, text(&token["provenance_ref"])).len(),
        events
    );

    // By bare jti, the key is the first record's token's.
    let bare = app.root("bare", &["crm:*"], &["read"]).await;
    let named = json!({"records": [
        {"vat_jti": bare["jti"], "action": "read", "resource": "crm:a", "result": "success"},
        {"vat_jti": bare["jti"], "action": "read", "resource": "crm:b", "result": "success"},
    ]});
    let first = send(&app, None, &named, Some("flush-2")).await;
    assert_eq!(first.status(), StatusCode::OK);
    let first = first.text().await.unwrap();
    let again = send(&app, None, &named, Some("flush-2")).await;
    assert_eq!(again.text().await.unwrap(), first);
    assert_eq!(records_of(&app, text(&bare["jti"])).await.len(), 2);
}

#[tokio::test]
async fn malformed_batches_are_refused_whole_with_a_clean_problem() {
    let app = TestApp::spawn().await;
    let token = app.root("careful", &["crm:*"], &["read"]).await;
    let (jti, jwt) = (text(&token["jti"]), text(&token["compact_jwt"]));
    let good = json!({"action": "read", "resource": "crm:a", "result": "success"});

    let empty = expect_problem(
        batch(&app, Some(jwt), &[]).await,
        StatusCode::UNPROCESSABLE_ENTITY,
        "empty_list",
    )
    .await;
    assert_eq!(empty["field"], "records");
    let too_many = vec![good.clone(); MAX_BATCH_RECORDS + 1];
    assert!(json!({ "records": too_many }).to_string().len() < MAX_BODY_BYTES);
    let long = expect_problem(
        batch(&app, Some(jwt), &too_many).await,
        StatusCode::UNPROCESSABLE_ENTITY,
        "list_too_long",
    )
    .await;
    assert_eq!(long["field"], "records");
    // The most a batch holds is accepted.
    let most = results(batch(&app, Some(jwt), &too_many[1..]).await).await;
    assert_eq!(most.len(), MAX_BATCH_RECORDS);
    assert!(most.iter().all(|result| result["recorded"] == true));
    let summary = expect_json(
        app.get_auth(
            &format!("/v1/vat/aar/provenance/{}", text(&token["provenance_ref"])),
            &app.admin_key,
        )
        .await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(summary["total_records"], MAX_BATCH_RECORDS);
    assert_eq!(records_of(&app, jti).await.len(), 500);

    let fresh = app.root("careful-2", &["crm:*"], &["read"]).await;
    let (jti, jwt) = (text(&fresh["jti"]), text(&fresh["compact_jwt"]));
    // One bad record refuses the batch, naming the record and its member.
    let cases: Vec<(Value, StatusCode, &str, Option<&str>, &str)> = vec![
        (
            json!({"action": "Read!", "resource": "crm:a", "result": "success"}),
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_action",
            Some("records.action"),
            "records[1]: ",
        ),
        (
            json!({"action": "read", "resource": "no-namespace", "result": "success"}),
            StatusCode::UNPROCESSABLE_ENTITY,
            "",
            Some("records.resource"),
            "records[1]: ",
        ),
        (
            json!({"action": "read", "resource": "crm:a", "result": "done"}),
            StatusCode::UNPROCESSABLE_ENTITY,
            "",
            Some("records.result"),
            "records[1]: ",
        ),
        (
            json!({"action": "read", "resource": "crm:a", "result": "success", "spend_usd": -1}),
            StatusCode::UNPROCESSABLE_ENTITY,
            "",
            Some("records.spend_usd"),
            "records[1]: ",
        ),
        (
            json!({"action": "read", "resource": "crm:a", "result": "success", "result_hash": "md5:x"}),
            StatusCode::UNPROCESSABLE_ENTITY,
            "",
            Some("records.result_hash"),
            "records[1]: ",
        ),
        (
            json!({"action": "read", "resource": "crm:a", "result": "success", "vat_jti": "vat_x"}),
            StatusCode::UNPROCESSABLE_ENTITY,
            "",
            Some("records.vat_jti"),
            "records[1]: ",
        ),
        (
            json!({"action": "read", "resource": "crm:a"}),
            StatusCode::UNPROCESSABLE_ENTITY,
            "missing_field",
            None,
            "",
        ),
        (
            json!({"action": "read", "resource": "crm:a", "result": "success", "colour": "red"}),
            StatusCode::UNPROCESSABLE_ENTITY,
            "unknown_field",
            None,
            "",
        ),
        (
            json!("read crm:a"),
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_field",
            None,
            "records[1]",
        ),
    ];
    for (bad, status, code, field, detail) in cases {
        let response = batch(&app, Some(jwt), &[good.clone(), bad.clone()]).await;
        let problem = expect_json_problem(response, status).await;
        if !code.is_empty() {
            assert_eq!(problem["code"], code, "{bad}: {problem}");
        }
        if let Some(field) = field {
            assert_eq!(problem["field"], field, "{bad}: {problem}");
        }
        assert!(
            text(&problem["detail"]).contains(detail),
            "{bad}: {problem}"
        );
    }
    // Without a token presented every record must name one.
    let mut named = good.clone();
    named["vat_jti"] = json!(jti);
    let unnamed = expect_problem(
        batch(&app, None, &[named, good.clone()]).await,
        StatusCode::UNPROCESSABLE_ENTITY,
        "missing_field",
    )
    .await;
    assert_eq!(unnamed["field"], "records.vat_jti");
    assert!(text(&unnamed["detail"]).starts_with("records[1]: "));

    // Bodies of the wrong kind.
    for (body, status, code) in [
        (
            json!({"records": {"action": "read"}}),
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_field",
        ),
        (json!({}), StatusCode::UNPROCESSABLE_ENTITY, "missing_field"),
        (
            json!({"records": [], "vat_jti": jti}),
            StatusCode::UNPROCESSABLE_ENTITY,
            "unknown_field",
        ),
        (
            json!([good]),
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_field",
        ),
    ] {
        expect_problem(send(&app, Some(jwt), &body, None).await, status, code).await;
    }
    let not_json = app
        .client
        .post(app.url(PATH))
        .bearer_auth(jwt)
        .header("content-type", "application/json")
        .body("{\"records\": [")
        .send()
        .await
        .unwrap();
    expect_problem(not_json, StatusCode::BAD_REQUEST, "malformed_json").await;
    let padded = json!({"action": "read", "resource": format!("crm:{}", "a".repeat(200)), "result": "success"});
    let too_large = batch(&app, Some(jwt), &vec![padded; 400]).await;
    expect_problem(
        too_large,
        StatusCode::PAYLOAD_TOO_LARGE,
        "payload_too_large",
    )
    .await;
    let wrong_method = app.send(Method::GET, PATH, jwt, None).await;
    assert_eq!(wrong_method.status(), StatusCode::METHOD_NOT_ALLOWED);

    assert_eq!(records_of(&app, jti).await, Vec::<Value>::new());
}

/// A problem answer with `status`, its body.
async fn expect_json_problem(response: Response, status: StatusCode) -> Value {
    let code = response
        .headers()
        .get("content-type")
        .map(|v| v.to_str().unwrap().to_owned());
    assert_eq!(code.as_deref(), Some("application/problem+json"));
    let body = expect_json(response, status).await;
    let title = mandate_host::error::title(text(&body["code"]));
    assert!(title.is_some(), "{body}");
    body
}

#[tokio::test]
async fn rate_limits_count_each_record_and_quotas_refuse_records_alone() {
    let app = TestApp::spawn_with(|config| {
        config.rate_limits.per_token = 1;
        config.rate_limits.burst = 5;
    })
    .await;
    let token = app.root("limited", &["crm:*"], &["read"]).await;
    let (jti, jwt) = (text(&token["jti"]), text(&token["compact_jwt"]));
    let act = json!({"action": "read", "resource": "crm:a", "result": "success"});
    let three = vec![act.clone(); 3];
    assert_eq!(results(batch(&app, Some(jwt), &three).await).await.len(), 3);
    // Three more than the two left: refused whole, nothing written.
    let limited = batch(&app, Some(jwt), &three).await;
    assert!(limited.headers().contains_key("retry-after"));
    expect_problem(limited, StatusCode::TOO_MANY_REQUESTS, "rate_limited").await;
    assert_eq!(records_of(&app, jti).await.len(), 3);
    // A batch larger than the burst takes the whole burst, then waits.
    let other = app.root("limited-2", &["crm:*"], &["read"]).await;
    let ten = vec![act.clone(); 10];
    assert_eq!(
        results(batch(&app, Some(text(&other["compact_jwt"])), &ten).await)
            .await
            .len(),
        10
    );
    expect_problem(
        app.act(text(&other["jti"]), "read", "crm:a", "success")
            .await,
        StatusCode::TOO_MANY_REQUESTS,
        "rate_limited",
    )
    .await;

    // A quota reached in the middle of a batch refuses the records past it,
    // each alone, and writes none of them.
    let (beta_id, beta_owner) = app.org("beta").await;
    expect_json(
        app.send(
            Method::PATCH,
            &format!("/v1/orgs/{beta_id}"),
            &app.admin_key,
            Some(&json!({"quotas": {"records_per_day": 3}})),
        )
        .await,
        StatusCode::OK,
    )
    .await;
    let beta = expect_json(
        app.post_auth(
            "/v1/vat/issue/l1",
            &beta_owner,
            &json!({"developer_email": "dev@beta.test", "agent_id": "bot", "resources": ["crm:*"], "actions": ["read"]}),
        )
        .await,
        StatusCode::CREATED,
    )
    .await;
    let mut named = act.clone();
    named["vat_jti"] = beta["jti"].clone();
    let quotas = results(batch(&app, None, &vec![named; 5]).await).await;
    let quota = refused(429, "quota_exceeded", false);
    assert_eq!(
        outcomes(&quotas),
        [recorded(), recorded(), recorded(), quota.clone(), quota,]
    );
    let listed = expect_json(
        app.get_auth("/v1/vat/aar", &beta_owner).await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(listed["records"].as_array().unwrap().len(), 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_batches_and_single_calls_never_pass_a_budget() {
    let app = TestApp::spawn().await;
    let token = app
        .issue(json!({
            "developer_email": "dev@example.com", "agent_id": "spender",
            "resources": ["shop:*"], "actions": ["buy"],
            "constraints": {"max_spend_usd": 5, "max_actions": 40}
        }))
        .await;
    let jti = text(&token["jti"]).to_owned();
    let buy = |spend: f64| json!({"vat_jti": jti, "action": "buy", "resource": "shop:x", "result": "success", "spend_usd": spend});
    let barrier = std::sync::Arc::new(tokio::sync::Barrier::new(16));
    let mut tasks = Vec::new();
    for i in 0..16 {
        let (client, barrier) = (app.client.clone(), barrier.clone());
        let (url, body) = if i % 2 == 0 {
            let records: Vec<Value> = (0..6).map(|_| buy(0.25)).collect();
            (app.url(PATH), json!({ "records": records }))
        } else {
            (app.url("/v1/vat/record/action"), buy(0.25))
        };
        tasks.push(tokio::spawn(async move {
            barrier.wait().await;
            let response = client.post(url).json(&body).send().await.unwrap();
            let status = response.status();
            (status, response.json::<Value>().await.unwrap())
        }));
    }
    let mut allowed = 0;
    for task in tasks {
        match task.await.unwrap() {
            (StatusCode::OK, body) => {
                for result in body["results"].as_array().unwrap() {
                    match outcome(result) {
                        (true, ..) => allowed += 1,
                        (false, 403, code, true) => assert!(code.starts_with("budget_"), "{code}"),
                        other => panic!("{other:?}"),
                    }
                }
            }
            (StatusCode::CREATED, _) => allowed += 1,
            (StatusCode::FORBIDDEN, body) => {
                assert!(text(&body["code"]).starts_with("budget_"), "{body}");
            }
            (other, body) => panic!("{other}: {body}"),
        }
    }
    // 5 dollars at 0.25 a record: exactly 20 of the 56 attempts pass.
    assert_eq!(allowed, 20);
    let records = records_of(&app, &jti).await;
    assert_eq!(records.len(), 56);
    let spent: f64 = records
        .iter()
        .filter(|record| record["status"] == "completed")
        .map(|record| record["spend_usd"].as_f64().unwrap())
        .sum();
    assert!((spent - 5.0).abs() < 1e-9, "{spent}");
}

/// What the writer lane sent the database, read from `/metrics`: round
/// trips on PostgreSQL, statements on SQLite (which has no round trips).
async fn writer_sent(app: &TestApp) -> u64 {
    let name = if crate::helpers::postgres_server().is_some() {
        "mandate_db_round_trips_total{lane=\"writer\"} "
    } else {
        "mandate_db_statements_total{lane=\"writer\"} "
    };
    public_text(app, "/metrics")
        .await
        .lines()
        .find_map(|line| line.strip_prefix(name))
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

/// [`writer_sent`] once the writer is idle: a commit that expected more
/// writes (a timer's write in the same group, or one queued behind it)
/// begins the next transaction ahead and ends it after a wait of 2 ms with
/// nothing to do (`store::writer::AHEAD_WAIT`); counted from then, a
/// write sent alone costs what the comments below say.
async fn writer_idle(app: &TestApp) -> u64 {
    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    writer_sent(app).await
}

#[tokio::test]
async fn the_writer_lane_counts_what_a_group_sends_the_database() {
    let app = TestApp::spawn().await;
    let token = app.root("counted", &["crm:*"], &["read"]).await;
    let jti = text(&token["jti"]);
    let act = || async {
        expect_json(
            app.act(jti, "read", "crm:a", "success").await,
            StatusCode::CREATED,
        )
        .await
    };
    // The first write reads the token's claims and prepares statements.
    act().await;
    let before = writer_idle(&app).await;
    act().await;
    let one = writer_sent(&app).await - before;
    let record =
        json!({"vat_jti": jti, "action": "read", "resource": "crm:a", "result": "success"});
    let before = writer_idle(&app).await;
    let ten_bare = results(batch(&app, None, &vec![record.clone(); 10]).await).await;
    assert!(
        ten_bare.iter().all(|r| r["recorded"] == true),
        "{ten_bare:?}"
    );
    let ten = writer_sent(&app).await - before;
    // Today's costs (docs/plans/write-path-at-scale.md §0.1, §0.4).
    // PostgreSQL: 2 round trips a group — the organisation's key, its row
    // (with its quotas) and the first token's standing read after it,
    // BEGIN and its settings, one flight; and the commit's flight: the
    // group's records numbered from each organisation's `org_seqs` row,
    // the sequencer — the log's state row, handing out the group's leaf
    // indexes and event `seq`, both rows held to the commit —, one
    // statement for everything the group holds — records, the log's
    // leaves, events, charges, idempotency answers, counters, numbered
    // from those rows on the server — and COMMIT, sent together —, one
    // for each other token of a group (its standing; a token's
    // organisation is read once, the first time) and none a record.
    // SQLite (statements): 11 a group (no organisation lock, tail or
    // quotas re-read; the log's size and integrated size written with its
    // leaves), one a token a group, and 2 a record (its row and its leaf,
    // each a cached insert run in process).
    let postgres = crate::helpers::postgres_server().is_some();
    let (group, per_record) = if postgres { (2, 0) } else { (11, 2) };
    let (first_token, per_token) = if postgres { (0, 1) } else { (1, 1) };
    assert_eq!(one, group + first_token + per_record, "one record");
    assert_eq!(
        ten,
        group + first_token + 10 * per_record,
        "a batch of ten of one token"
    );
    // With an Idempotency-Key: on PostgreSQL the key's lock and the look-up
    // of its stored answer are one flight (one round trip more); on SQLite
    // the look-up and the answer's row (two statements more).
    // (The first prepares the key's statements.)
    let body = json!({ "records": [record.clone(), record.clone()] });
    results(send(&app, None, &body, Some("counted-first")).await).await;
    let before = writer_idle(&app).await;
    results(send(&app, None, &body, Some("counted-once")).await).await;
    let keyed = writer_sent(&app).await - before;
    let idempotency = if postgres { 1 } else { 2 };
    assert_eq!(
        keyed,
        group + first_token + 2 * per_record + idempotency,
        "a batch of two under an idempotency key"
    );

    // Ten agents in ten workflows, a record each in one batch: their
    // counters (reputation, day, workflow, summary) are one statement a
    // table for the group, not one a row.
    let mut many = Vec::new();
    for i in 0..10 {
        let token = app
            .root(&format!("counted-{i}"), &["crm:*"], &["read"])
            .await;
        let jti = text(&token["jti"]).to_owned();
        // Its first write reads its claims and organisation.
        expect_json(
            app.act(&jti, "read", "crm:a", "success").await,
            StatusCode::CREATED,
        )
        .await;
        many.push(
            json!({"vat_jti": jti, "action": "read", "resource": "crm:a",
                         "result": "success"}),
        );
    }
    let before = writer_idle(&app).await;
    let answered = results(batch(&app, None, &many).await).await;
    assert!(
        answered.iter().all(|r| r["recorded"] == true),
        "{answered:?}"
    );
    // (SQLite runs the cached single-row statement once per counter row,
    // in process: four tables have a row for each agent but the first.)
    let more_counter_rows = if postgres { 0 } else { 4 * 9 };
    assert_eq!(
        writer_sent(&app).await - before,
        group + first_token + 9 * per_token + 10 * per_record + more_counter_rows,
        "ten agents' records"
    );

    // A chain with a budget: its usage is read once a group and its
    // charges stored with the group's other rows (they were three
    // statements a record: the read, the charge and the budget's share;
    // SQLite runs the charge as a statement of its own, in process). On
    // PostgreSQL the chain's key is taken first, once a group.
    let charges = if postgres { 0 } else { 1 };
    let chain_key = u64::from(postgres);
    let budgeted = app
        .issue(
            json!({"developer_email": "dev@example.com", "agent_id": "counted",
                      "resources": ["crm:*"], "actions": ["read"],
                      "constraints": {"max_actions": 1_000_000}}),
        )
        .await;
    let budgeted = text(&budgeted["jti"]);
    let record = json!({"vat_jti": budgeted, "action": "read", "resource": "crm:a",
                        "result": "success"});
    let sent = |records: usize| {
        let record = record.clone();
        let app = &app;
        async move {
            let before = writer_sent(app).await;
            let answered = results(batch(app, None, &vec![record; records]).await).await;
            assert!(
                answered.iter().all(|r| r["recorded"] == true),
                "{answered:?}"
            );
            writer_sent(app).await - before
        }
    };
    sent(1).await;
    assert_eq!(
        sent(1).await,
        group + chain_key + 1 + charges + first_token + per_record,
        "one budgeted record"
    );
    assert_eq!(
        sent(10).await,
        group + chain_key + 1 + charges + first_token + 10 * per_record,
        "ten budgeted records"
    );

    // Records denied over their budget: their events are stored with the
    // group's other rows (the usage read once, nothing charged).
    let poor = app
        .issue(
            json!({"developer_email": "dev@example.com", "agent_id": "counted",
                      "resources": ["crm:*"], "actions": ["read"],
                      "constraints": {"max_spend_usd": 1}}),
        )
        .await;
    let denied = json!({"vat_jti": text(&poor["jti"]), "action": "read", "resource": "crm:a",
                        "result": "success", "spend_usd": 2});
    let denials = |records: usize| {
        let denied = denied.clone();
        let app = &app;
        async move {
            let before = writer_sent(app).await;
            let answered = results(batch(app, None, &vec![denied; records]).await).await;
            assert!(
                answered.iter().all(|r| r["code"] == "budget_max_spend_usd"),
                "{answered:?}"
            );
            writer_sent(app).await - before
        }
    };
    // (On PostgreSQL they ride in the group's one statement, numbered by
    // the sequencer, which every writing group runs. SQLite runs the cached
    // single-row insert once per event, in process; the save is made up
    // for by a denial's counters, one table fewer than a success's.)
    let events = |records: u64| if postgres { 0 } else { records };
    denials(1).await;
    assert_eq!(
        denials(1).await,
        group + chain_key + 1 + events(1) + first_token + per_record,
        "one denial"
    );
    assert_eq!(
        denials(10).await,
        group + chain_key + 1 + events(10) + first_token + 10 * per_record,
        "ten denials and their events"
    );
}

/// Refusals between good records of one group (one batch: an unknown token,
/// a record over its budget, one past its organisation's quota) leave the
/// good ones committed: the refusals that write nothing write nothing (the
/// group's records are kept in memory and written together before it
/// commits), the budget's denial is recorded, and the log holds a leaf for
/// each record stored and no other.
#[tokio::test]
async fn a_refused_write_leaves_its_group_committed() {
    let app = TestApp::spawn().await;
    let budgeted = app
        .issue(
            json!({"developer_email": "dev@example.com", "agent_id": "spender",
                      "resources": ["crm:*"], "actions": ["read"],
                      "constraints": {"max_spend_usd": 5}}),
        )
        .await;
    let (beta_id, beta_owner) = app.org("beta").await;
    expect_json(
        app.send(
            Method::PATCH,
            &format!("/v1/orgs/{beta_id}"),
            &app.admin_key,
            Some(&json!({"quotas": {"records_per_day": 1}})),
        )
        .await,
        StatusCode::OK,
    )
    .await;
    let beta = expect_json(
        app.post_auth(
            "/v1/vat/issue/l1",
            &beta_owner,
            &json!({"developer_email": "dev@beta.test", "agent_id": "bot",
                    "resources": ["crm:*"], "actions": ["read"]}),
        )
        .await,
        StatusCode::CREATED,
    )
    .await;
    let act = |jti: &str, spend: u64| {
        json!({"vat_jti": jti, "action": "read", "resource": "crm:a", "result": "success",
               "spend_usd": spend})
    };
    let (spender, bot) = (text(&budgeted["jti"]), text(&beta["jti"]));
    let before = log_size(&app).await;
    let answered = results(
        batch(
            &app,
            None,
            &[
                act(spender, 3),
                act("vat_root_01kaqv3f00000000000000000a", 0),
                act(bot, 0),
                act(spender, 3),
                act(bot, 0),
                act(spender, 2),
            ],
        )
        .await,
    )
    .await;
    assert_eq!(
        outcomes(&answered),
        [
            recorded(),
            refused(403, "token_inactive", false),
            recorded(),
            refused(403, "budget_max_spend_usd", true),
            refused(429, "quota_exceeded", false),
            recorded(),
        ]
    );
    let spent: Vec<(String, f64)> = records_of(&app, spender)
        .await
        .iter()
        .map(|record| {
            (
                text(&record["status"]).to_owned(),
                record["spend_usd"].as_f64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        spent,
        [
            ("completed".to_owned(), 3.0),
            ("denied".to_owned(), 0.0),
            ("completed".to_owned(), 2.0),
        ]
    );
    let listed = expect_json(
        app.get_auth("/v1/vat/aar", &beta_owner).await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(listed["records"].as_array().unwrap().len(), 1);
    assert_eq!(log_size(&app).await - before, 4);
}

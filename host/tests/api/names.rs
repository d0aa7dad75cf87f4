//! What a name lets its reader do (DESIGN.md sections 7 and 14), as an
//! attacker would try it: a jti is shown only to whoever receives the
//! token, so a read-only key, a dashboard, an event stream or a webhook
//! receiver never learns one, and nothing they are shown acts; a pending
//! record made with a bare `vat_jti` is completed by its `aar_id`, so that
//! `aar_id` is shown only to the agent that made it until it is completed;
//! and what another organisation holds answers exactly like what does not
//! exist, whatever the credential.

use std::num::NonZeroU64;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::extract::State;
use reqwest::StatusCode;
use serde_json::{Value, json};

use mandate_host::config::Config;

use crate::helpers::{TestApp, expect_json, expect_problem, jth, text};

/// The longest a test waits for something to happen.
const WAIT: Duration = Duration::from_secs(60);

/// The ULID of an `aar_…` or `apr_…` id.
fn ulid(id: &str) -> &str {
    id.split_once('_').map_or(id, |(_, ulid)| ulid)
}

/// Every string anywhere in `value`.
fn strings(value: &Value) -> Vec<String> {
    match value {
        Value::String(text) => vec![text.clone()],
        Value::Array(items) => items.iter().flat_map(strings).collect(),
        Value::Object(members) => members
            .iter()
            .flat_map(|(name, value)| {
                let mut found = strings(value);
                found.push(name.clone());
                found
            })
            .collect(),
        _ => Vec::new(),
    }
}

async fn get(app: &TestApp, key: &str, path: &str) -> Value {
    expect_json(app.get_auth(path, key).await, StatusCode::OK).await
}

/// Everything an auditor key can read about the organisation's tokens,
/// records and workflows, as the dashboard reads it.
async fn everything_read(app: &TestApp, key: &str, provenance_ref: &str, root_jti: &str) -> Value {
    let mut pages = Vec::new();
    for path in [
        "/v1/vat/tokens",
        "/v1/vat/tokens?status=active",
        "/v1/vat/aar",
        "/v1/vat/aar?result=pending",
        "/v1/vat/aar?result=awaiting_approval",
        "/v1/vat/workflows",
        "/v1/vat/approvals",
        "/v1/vat/overview",
        "/v1/vat/agents",
        "/v1/vat/inbox/counts",
    ] {
        pages.push(get(app, key, path).await);
    }
    for path in [
        format!("/v1/vat/aar/provenance/{provenance_ref}/graph"),
        format!("/v1/vat/aar/provenance/{provenance_ref}"),
        format!("/v1/vat/tokens/{}", jth(root_jti)),
        format!("/v1/vat/aar?jth={}", jth(root_jti)),
    ] {
        pages.push(get(app, key, &path).await);
    }
    // A page's cursor is a name too.
    let first = get(app, key, "/v1/vat/tokens?limit=1").await;
    pages.push(first.clone());
    if let Some(cursor) = first["next_cursor"].as_str() {
        pages.push(get(app, key, &format!("/v1/vat/tokens?limit=1&cursor={cursor}")).await);
    }
    Value::Array(pages)
}

/// Whether `text` holds `secret`, directly or inside a base64url cursor.
fn reveals(text: &str, secret: &str) -> bool {
    use base64::Engine as _;
    text.contains(secret)
        || text
            .split(|c: char| !(c.is_ascii_alphanumeric() || c == '-' || c == '_'))
            .filter_map(|word| {
                base64::engine::general_purpose::URL_SAFE_NO_PAD
                    .decode(word)
                    .ok()
            })
            .any(|bytes| String::from_utf8_lossy(&bytes).contains(secret))
}

/// A root token over `crm:*` that may delegate, and a child of it.
async fn tokens(app: &TestApp, key: &str) -> (Value, Value) {
    let root = expect_json(
        app.post_auth(
            "/v1/vat/issue/l1",
            key,
            &json!({
                "developer_email": "dev@example.com", "agent_id": "crm-bot",
                "resources": ["crm:*"], "actions": ["read", "write", "delegate"],
            }),
        )
        .await,
        StatusCode::CREATED,
    )
    .await;
    let child = expect_json(
        app.delegate(
            &root,
            json!({"agent_id": "crm-helper", "resources": ["crm:*"], "actions": ["read"]}),
        )
        .await,
        StatusCode::CREATED,
    )
    .await;
    (root, child)
}

#[tokio::test]
async fn an_auditor_reads_every_list_and_page_and_learns_no_jti() {
    let app = TestApp::spawn().await;
    let auditor = app.key(&app.admin_key, "auditor", None).await;
    let (root, child) = tokens(&app, &app.admin_key).await;
    let root_jti = text(&root["jti"]).to_owned();
    let child_jti = text(&child["jti"]).to_owned();
    // Records made both ways: with the bare jti, and with the token.
    let made = expect_json(
        app.act(&root_jti, "read", "crm:a", "success").await,
        StatusCode::CREATED,
    )
    .await;
    expect_json(
        app.post_auth(
            "/v1/vat/record/action",
            text(&child["compact_jwt"]),
            &json!({"action": "read", "resource": "crm:b", "result": "success"}),
        )
        .await,
        StatusCode::CREATED,
    )
    .await;
    let provenance_ref = text(&root["provenance_ref"]).to_owned();

    let read = everything_read(&app, &auditor, &provenance_ref, &root_jti).await;
    let all = read.to_string();
    for jti in [&root_jti, &child_jti] {
        assert!(!reveals(&all, jti), "an auditor was shown {jti}: {all}");
    }
    assert!(
        !all.contains("vat_root_") && !all.contains("vat_del_"),
        "{all}"
    );
    let record = get(
        &app,
        &auditor,
        &format!("/v1/vat/aar/{}", text(&made["aar_id"])),
    )
    .await;
    assert!(!record.to_string().contains("vat_"), "{record}");

    // Tokens are named by jti hash, and so are their parents.
    let list = get(&app, &auditor, "/v1/vat/tokens").await;
    let named: Vec<(&str, Option<&str>)> = list["tokens"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| (text(&t["jth"]), t["parent"].as_str()))
        .collect();
    assert!(named.contains(&(jth(&root_jti).as_str(), None)), "{list}");
    assert!(
        named.contains(&(jth(&child_jti).as_str(), Some(jth(&root_jti).as_str()))),
        "{list}"
    );
    assert_eq!(record["jth"], jth(&root_jti), "{record}");
    let status = get(
        &app,
        &auditor,
        &format!("/v1/vat/tokens/{}", jth(&root_jti)),
    )
    .await;
    assert_eq!(status["jth"], jth(&root_jti));
    assert_eq!(status["descendants"][0]["jth"], jth(&child_jti), "{status}");
    assert_eq!(
        status["descendants"][0]["parent"],
        jth(&root_jti),
        "{status}"
    );
}

#[tokio::test]
async fn nothing_a_read_only_key_is_shown_acts_as_an_agent() {
    let app = TestApp::spawn().await;
    let auditor = app.key(&app.admin_key, "auditor", None).await;
    let (root, _child) = tokens(&app, &app.admin_key).await;
    let root_jti = text(&root["jti"]);
    let before = get(&app, &auditor, "/v1/vat/aar").await["records"]
        .as_array()
        .unwrap()
        .len();
    let read = everything_read(&app, &auditor, text(&root["provenance_ref"]), root_jti).await;
    let mut names = strings(&read);
    names.sort();
    names.dedup();
    assert!(names.contains(&jth(root_jti)));
    for name in &names {
        let answer = app.act(name, "write", "crm:forged", "success").await;
        assert!(
            !answer.status().is_success(),
            "{name} from a list acted: {}",
            answer.text().await.unwrap()
        );
    }
    let after = get(&app, &auditor, "/v1/vat/aar").await["records"]
        .as_array()
        .unwrap()
        .len();
    assert_eq!(before, after, "a forged record was written");
}

#[tokio::test]
async fn revoking_by_api_key_takes_the_jth_and_the_holder_still_names_its_jti() {
    let app = TestApp::spawn().await;
    let reviewer = app.key(&app.admin_key, "reviewer", None).await;
    let (root, child) = tokens(&app, &app.admin_key).await;
    let (root_jti, child_jti) = (text(&root["jti"]), text(&child["jti"]));

    // The holder revokes its own child by the jti it was given.
    let revoked = expect_json(
        app.post_auth(
            "/v1/vat/revoke",
            text(&root["compact_jwt"]),
            &json!({"jti": child_jti}),
        )
        .await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(revoked["revoked"], json!([jth(child_jti)]), "{revoked}");

    // A key revokes by the jti hash it was shown, and is answered in jti
    // hashes.
    let revoked = expect_json(
        app.post_auth(
            "/v1/vat/revoke",
            &reviewer,
            &json!({"jth": jth(root_jti), "reason": "done"}),
        )
        .await,
        StatusCode::OK,
    )
    .await;
    let mut expected = vec![jth(root_jti), jth(child_jti)];
    expected.sort();
    assert_eq!(revoked["revoked"], json!(expected), "{revoked}");
    assert_eq!(revoked["revoked_count"], 2);
    expect_problem(
        app.act(root_jti, "read", "crm:a", "success").await,
        StatusCode::FORBIDDEN,
        "token_inactive",
    )
    .await;

    // One name, of one form.
    for body in [
        json!({"jth": jth(root_jti), "jti": root_jti}),
        json!({"reason": "neither"}),
        json!({"jth": root_jti}),
        json!({"jti": jth(root_jti)}),
    ] {
        let answer = app.post_auth("/v1/vat/revoke", &reviewer, &body).await;
        assert_eq!(answer.status(), StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    }
}

/// A root token whose `pay` needs a human's approval.
async fn guarded(app: &TestApp, key: &str) -> Value {
    expect_json(
        app.post_auth(
            "/v1/vat/issue/l1",
            key,
            &json!({
                "developer_email": "dev@example.com", "agent_id": "billing-bot",
                "resources": ["billing:*"], "actions": ["read", "pay"],
                "constraints": {"max_spend_usd": 500, "require_approval": {"actions": ["pay"]}},
            }),
        )
        .await,
        StatusCode::CREATED,
    )
    .await
}

/// A webhook receiver on loopback: every body it got.
struct Receiver {
    url: String,
    got: Arc<Mutex<Vec<String>>>,
}

async fn receive(State(got): State<Arc<Mutex<Vec<String>>>>, body: Bytes) -> StatusCode {
    got.lock()
        .unwrap()
        .push(String::from_utf8_lossy(&body).into_owned());
    StatusCode::OK
}

impl Receiver {
    async fn start() -> Receiver {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/hook", listener.local_addr().unwrap());
        let got = Arc::<Mutex<Vec<String>>>::default();
        let router = axum::Router::new()
            .route("/hook", axum::routing::post(receive))
            .with_state(got.clone());
        tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
        Receiver { url, got }
    }

    /// Every body received once one holds each of `kinds`, within [`WAIT`].
    async fn until(&self, kinds: &[&str]) -> String {
        let started = Instant::now();
        loop {
            let all = self.got.lock().unwrap().join("\n");
            if kinds
                .iter()
                .all(|kind| all.contains(&format!("\"{kind}\"")))
            {
                return all;
            }
            assert!(started.elapsed() < WAIT, "no {kinds:?} delivered: {all}");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

/// An open event stream, read as raw text.
struct Stream(reqwest::Response, String);

impl Stream {
    async fn open(app: &TestApp, key: &str) -> Stream {
        let response = app
            .client
            .get(app.url("/v1/events"))
            .bearer_auth(key)
            .timeout(Duration::from_secs(120))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), StatusCode::OK);
        Stream(response, String::new())
    }

    /// Everything read once each of `kinds` was, within [`WAIT`].
    async fn until(&mut self, kinds: &[&str]) -> String {
        let deadline = tokio::time::Instant::now() + WAIT;
        while !kinds
            .iter()
            .all(|kind| self.1.contains(&format!("event: {kind}")))
        {
            let chunk = tokio::time::timeout_at(deadline, self.0.chunk())
                .await
                .unwrap_or_else(|_| panic!("no {kinds:?} streamed: {}", self.1))
                .unwrap()
                .unwrap();
            self.1.push_str(std::str::from_utf8(&chunk).unwrap());
        }
        self.1.clone()
    }
}

fn deliver_quickly(config: &mut Config) {
    config.webhooks.allow_private = true;
    config.webhooks.retry_first_delay_ms = NonZeroU64::new(100).unwrap();
}

/// Tries to complete `aar_id` with no credential, as anyone who has seen
/// it could, spending far over what was asked.
async fn complete_anonymously(app: &TestApp, aar_id: &str) -> reqwest::Response {
    app.post(
        &format!("/v1/vat/aar/{aar_id}/complete"),
        &json!({"result": "success", "spend_usd": 100}),
    )
    .await
}

#[tokio::test]
async fn a_pending_bare_jti_records_aar_id_is_shown_only_to_the_agent_that_made_it() {
    let app = TestApp::spawn_with(deliver_quickly).await;
    let auditor = app.key(&app.admin_key, "auditor", None).await;
    let reviewer = app.key(&app.admin_key, "reviewer", None).await;
    let receiver = Receiver::start().await;
    expect_json(
        app.post_auth(
            "/v1/webhooks",
            &app.admin_key,
            &json!({"url": receiver.url, "events": ["approval.requested", "approval.decided", "budget.threshold", "record.denied"]}),
        )
        .await,
        StatusCode::CREATED,
    )
    .await;
    let mut stream = Stream::open(&app, &auditor).await;
    let token = guarded(&app, &app.admin_key).await;
    let jti = text(&token["jti"]);

    // The agent asks with its bare jti; only it is told the record's id.
    let asked = expect_json(
        app.post(
            "/v1/vat/authorize",
            &json!({"vat_jti": jti, "action": "pay", "resource": "billing:inv/1", "spend_usd": 450}),
        )
        .await,
        StatusCode::ACCEPTED,
    )
    .await;
    let aar_id = text(&asked["aar_id"]).to_owned();
    let approval_id = text(&asked["approval"]["approval_id"]).to_owned();
    assert_ne!(
        ulid(&approval_id),
        ulid(&aar_id),
        "an approval id names its record"
    );
    // And a plain pending one, with no approval.
    let plain = expect_json(
        app.post(
            "/v1/vat/authorize",
            &json!({"vat_jti": jti, "action": "read", "resource": "billing:inv/2"}),
        )
        .await,
        StatusCode::OK,
    )
    .await;
    let plain_id = text(&plain["aar_id"]).to_owned();

    let approved = expect_json(
        app.post_auth(
            &format!("/v1/vat/approvals/{approval_id}/decision"),
            &reviewer,
            &json!({"decision": "approve"}),
        )
        .await,
        StatusCode::OK,
    )
    .await;
    assert!(approved.get("aar_id").is_none(), "{approved}");

    // Nobody else is shown either id while they are pending: not an
    // auditor, nor the dashboard's pages, nor a reviewer, nor an event
    // stream or a webhook receiver.
    let provenance_ref = text(&token["provenance_ref"]).to_owned();
    let mut shown = String::new();
    for key in [&auditor, &reviewer] {
        shown.push_str(
            &everything_read(&app, key, &provenance_ref, jti)
                .await
                .to_string(),
        );
        shown.push_str(
            &get(&app, key, &format!("/v1/vat/approvals/{approval_id}"))
                .await
                .to_string(),
        );
    }
    shown.push_str(
        &stream
            .until(&["approval.requested", "approval.decided", "budget.threshold"])
            .await,
    );
    shown.push_str(
        &receiver
            .until(&["approval.requested", "approval.decided", "budget.threshold"])
            .await,
    );
    for id in [&aar_id, &plain_id] {
        assert!(!shown.contains(ulid(id)), "{id} was shown: {shown}");
    }
    // The records are listed, all the same.
    let listed = get(&app, &auditor, "/v1/vat/aar?result=pending").await;
    assert_eq!(listed["records"].as_array().unwrap().len(), 2, "{listed}");

    // What they were shown completes nothing.
    let mut tried: Vec<String> = shown
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter(|word| word.starts_with("aar_") || word.starts_with("apr_"))
        .map(|word| format!("aar_{}", ulid(word)))
        .collect();
    tried.push(format!("aar_{}", ulid(&approval_id)));
    for candidate in tried {
        let answer = complete_anonymously(&app, &candidate).await;
        assert!(
            !answer.status().is_success(),
            "{candidate} completed a record"
        );
    }

    // The agent completes both with the ids it was given; then they are
    // shown like any record.
    for id in [&aar_id, &plain_id] {
        expect_json(
            app.post(
                &format!("/v1/vat/aar/{id}/complete"),
                &json!({"result": "success"}),
            )
            .await,
            StatusCode::OK,
        )
        .await;
    }
    let listed = get(&app, &auditor, "/v1/vat/aar").await.to_string();
    assert!(
        listed.contains(&aar_id) && listed.contains(&plain_id),
        "{listed}"
    );
}

#[tokio::test]
async fn a_record_made_with_the_token_keeps_its_aar_id_in_lists() {
    let app = TestApp::spawn().await;
    let auditor = app.key(&app.admin_key, "auditor", None).await;
    let token = guarded(&app, &app.admin_key).await;
    let asked = expect_json(
        app.post_auth(
            "/v1/vat/authorize",
            text(&token["compact_jwt"]),
            &json!({"action": "read", "resource": "billing:inv/3"}),
        )
        .await,
        StatusCode::OK,
    )
    .await;
    let listed = get(&app, &auditor, "/v1/vat/aar?result=pending").await;
    assert_eq!(listed["records"][0]["aar_id"], asked["aar_id"], "{listed}");
    // Its aar_id alone completes nothing: it answers as an absent record.
    let absent = complete_anonymously(&app, "aar_01j00000000000000000000000").await;
    let absent_status = absent.status();
    let absent: Value = absent.json().await.unwrap();
    let answer = complete_anonymously(&app, text(&asked["aar_id"])).await;
    assert_eq!(answer.status(), absent_status);
    let answer: Value = answer.json().await.unwrap();
    assert_eq!(answer["code"], absent["code"], "{answer} {absent}");
    assert_eq!(answer["detail"], absent["detail"], "{answer} {absent}");
}

#[tokio::test]
async fn what_another_organisation_holds_answers_as_absent_whatever_the_credential() {
    let app = TestApp::spawn().await;
    let (_, other_owner) = app.org("other").await;
    let (mine, _) = tokens(&app, &app.admin_key).await;
    let (theirs, _) = tokens(&app, &other_owner).await;
    let made = expect_json(
        app.post_auth(
            "/v1/vat/authorize",
            text(&mine["compact_jwt"]),
            &json!({"action": "read", "resource": "crm:a"}),
        )
        .await,
        StatusCode::OK,
    )
    .await;

    // Completing: another organisation's token is told what an absent
    // record's caller is told.
    let complete = |id: String| {
        let app = &app;
        let bearer = text(&theirs["compact_jwt"]).to_owned();
        async move {
            app.post_auth(
                &format!("/v1/vat/aar/{id}/complete"),
                &bearer,
                &json!({"result": "success"}),
            )
            .await
        }
    };
    let absent = expect_problem(
        complete("aar_01j00000000000000000000000".to_owned()).await,
        StatusCode::NOT_FOUND,
        "record_not_found",
    )
    .await;
    let existing = expect_problem(
        complete(text(&made["aar_id"]).to_owned()).await,
        StatusCode::NOT_FOUND,
        "record_not_found",
    )
    .await;
    assert_eq!(existing["detail"], absent["detail"]);

    // Revoking: another organisation's token naming my token, by jti or
    // jth, is told what naming an absent one is.
    let revoke = |body: Value| {
        let app = &app;
        let bearer = text(&theirs["compact_jwt"]).to_owned();
        async move { app.post_auth("/v1/vat/revoke", &bearer, &body).await }
    };
    let absent = expect_problem(
        revoke(json!({"jti": "vat_root_01j00000000000000000000000"})).await,
        StatusCode::NOT_FOUND,
        "token_not_found",
    )
    .await;
    for body in [
        json!({"jti": text(&mine["jti"])}),
        json!({"jth": jth(text(&mine["jti"]))}),
    ] {
        let existing =
            expect_problem(revoke(body).await, StatusCode::NOT_FOUND, "token_not_found").await;
        assert_eq!(existing["detail"], absent["detail"]);
    }
    // And mine is untouched.
    expect_json(
        app.act(text(&mine["jti"]), "read", "crm:a", "success")
            .await,
        StatusCode::CREATED,
    )
    .await;
}

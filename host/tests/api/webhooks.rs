//! Webhooks end to end: receivers in the test (small HTTP servers on
//! 127.0.0.1, so these servers set `[webhooks] allow_private`) get every
//! event kind, each signature checked by the Standard Webhooks project's own
//! Rust library, not by Mandate's code; a receiver down for a while gets
//! everything in order once it returns; nothing acknowledged is lost across
//! `kill -9`; an endpoint failing for the retry window is disabled and,
//! re-enabled, resumes with nothing lost; secrets rotate with both valid for
//! a day. And the attacks: a tenant naming the server's own network (at
//! creation, at delivery, through a redirect), reading another
//! organisation's events or webhooks, or holding a role that may not manage
//! them.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::num::NonZeroU64;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, header};
use axum::response::{IntoResponse, Response};
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use mandate_host::config::Config;

use crate::crash::random_below;
use crate::helpers::{TestApp, expect_json, expect_problem, text};
use crate::process::{Server, admin_key};

/// Every event type.
const ALL: [&str; 7] = [
    "record.denied",
    "record.failed",
    "record.rated",
    "token.revoked",
    "approval.requested",
    "approval.decided",
    "budget.threshold",
];

/// The longest a test waits for something to happen.
const WAIT: Duration = Duration::from_secs(60);

/// Polls `probe` until it answers, for at most [`WAIT`].
async fn eventually<T>(what: &str, mut probe: impl AsyncFnMut() -> Option<T>) -> T {
    let started = Instant::now();
    loop {
        if let Some(found) = probe().await {
            return found;
        }
        assert!(started.elapsed() < WAIT, "gave up waiting for {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// What a receiver answers.
#[derive(Debug, Clone)]
enum Answer {
    Status(u16),
    /// 302 to this URL.
    Redirect(String),
    /// 500 to a body holding this text, this many times more; 200 to every
    /// other request.
    FailFor(String, usize),
}

/// A request a receiver got.
#[derive(Debug, Clone)]
struct Received {
    headers: HeaderMap,
    body: Vec<u8>,
}

impl Received {
    fn header(&self, name: &str) -> &str {
        self.headers
            .get(name)
            .and_then(|value| value.to_str().ok())
            .unwrap_or_default()
    }

    fn payload(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap()
    }

    fn kind(&self) -> String {
        text(&self.payload()["type"]).to_owned()
    }

    /// The record's resource, for `record.*` events.
    fn resource(&self) -> String {
        text(&self.payload()["data"]["resource"]).to_owned()
    }

    /// Whether the Standard Webhooks library accepts it under `secret`
    /// (signature and timestamp, against the system clock).
    fn verifies(&self, secret: &str) -> bool {
        standardwebhooks::Webhook::new(secret)
            .unwrap()
            .verify(&self.body, &self.headers)
            .is_ok()
    }

    /// Whether one of its signatures is the one the Standard Webhooks
    /// library makes under `secret` for its id, timestamp and body (for
    /// messages sent on a test clock moved ahead of the system's).
    fn signed_with(&self, secret: &str) -> bool {
        let expected = standardwebhooks::Webhook::new(secret)
            .unwrap()
            .sign(
                self.header("webhook-id"),
                self.header("webhook-timestamp").parse().unwrap(),
                &self.body,
            )
            .unwrap();
        self.header("webhook-signature")
            .split(' ')
            .any(|signature| signature == expected)
    }
}

/// What a receiver got, and how it answers; it outlives a stop, so a
/// receiver can come back on the same address.
#[derive(Debug, Clone)]
struct Inbox {
    got: Arc<Mutex<Vec<Received>>>,
    answer: Arc<Mutex<Answer>>,
    /// How long it takes to answer.
    delay: Duration,
}

impl Inbox {
    fn new(answer: Answer) -> Inbox {
        Inbox {
            got: Arc::default(),
            answer: Arc::new(Mutex::new(answer)),
            delay: Duration::ZERO,
        }
    }
}

async fn receive(State(inbox): State<Inbox>, headers: HeaderMap, body: Bytes) -> Response {
    tokio::time::sleep(inbox.delay).await;
    let received = Received {
        headers,
        body: body.to_vec(),
    };
    let answer = {
        let mut answer = inbox.answer.lock().unwrap();
        match &mut *answer {
            Answer::Status(status) => StatusCode::from_u16(*status).unwrap().into_response(),
            Answer::Redirect(to) => {
                (StatusCode::FOUND, [(header::LOCATION, to.clone())], "moved").into_response()
            }
            Answer::FailFor(needle, left) => {
                let hit = String::from_utf8_lossy(&received.body).contains(needle.as_str());
                if hit && *left > 0 {
                    *left -= 1;
                    StatusCode::INTERNAL_SERVER_ERROR.into_response()
                } else {
                    StatusCode::OK.into_response()
                }
            }
        }
    };
    inbox.got.lock().unwrap().push(received);
    answer
}

/// A webhook receiver: an HTTP server on 127.0.0.1.
struct Receiver {
    address: SocketAddr,
    inbox: Inbox,
    stop: oneshot::Sender<()>,
    server: JoinHandle<()>,
}

impl Receiver {
    /// A receiver answering 200.
    async fn start() -> Receiver {
        Receiver::start_with(Inbox::new(Answer::Status(200))).await
    }

    async fn start_with(inbox: Inbox) -> Receiver {
        Receiver::start_on("127.0.0.1:0".parse().unwrap(), inbox).await
    }

    async fn start_on(address: SocketAddr, inbox: Inbox) -> Receiver {
        let listener = tokio::net::TcpListener::bind(address).await.unwrap();
        let address = listener.local_addr().unwrap();
        let router = axum::Router::new()
            .route("/hook", axum::routing::post(receive))
            .with_state(inbox.clone());
        let (stop, stopped) = oneshot::channel::<()>();
        let server = tokio::spawn(async move {
            axum::serve(listener, router)
                .with_graceful_shutdown(async move {
                    let _ = stopped.await;
                })
                .await
                .unwrap();
        });
        Receiver {
            address,
            inbox,
            stop,
            server,
        }
    }

    fn url(&self) -> String {
        format!("http://{}/hook", self.address)
    }

    fn answer(&self, answer: Answer) {
        *self.inbox.answer.lock().unwrap() = answer;
    }

    fn received(&self) -> Vec<Received> {
        self.inbox.got.lock().unwrap().clone()
    }

    /// Waits until it has received `n` requests; answers them.
    async fn wait_for(&self, n: usize) -> Vec<Received> {
        eventually(&format!("{n} deliveries"), async || {
            let got = self.received();
            (got.len() >= n).then_some(got)
        })
        .await
    }

    /// Stops listening and closes its connections: the address refuses
    /// connections until a receiver starts on it again.
    async fn stop(self) -> (SocketAddr, Inbox) {
        let _ = self.stop.send(());
        self.server.await.unwrap();
        (self.address, self.inbox)
    }
}

/// A test server delivering quickly to receivers on loopback.
fn quick(config: &mut Config) {
    config.webhooks.allow_private = true;
    config.webhooks.retry_first_delay_ms = NonZeroU64::new(100).unwrap();
    config.webhooks.timeout_ms = NonZeroU64::new(2_000).unwrap();
}

/// Creates a webhook with `key`; answers its id and secret.
async fn create(app: &TestApp, key: &str, url: &str, events: &[&str]) -> (String, String) {
    let created = expect_json(
        app.post_auth("/v1/webhooks", key, &json!({"url": url, "events": events}))
            .await,
        StatusCode::CREATED,
    )
    .await;
    (
        text(&created["webhook_id"]).to_owned(),
        text(&created["secret"]).to_owned(),
    )
}

/// A token of the organisation of `key` that may only read `crm:*`.
async fn reader(app: &TestApp, key: &str) -> String {
    let body = json!({
        "developer_email": "dev@example.com", "agent_id": "hook-bot",
        "resources": ["crm:*"], "actions": ["read"]
    });
    let issued = expect_json(
        app.post_auth("/v1/vat/issue/l1", key, &body).await,
        StatusCode::CREATED,
    )
    .await;
    text(&issued["jti"]).to_owned()
}

/// An attempt out of the token's scope on `crm:item{n}`: a denied record,
/// reported as `record.denied`.
async fn deny(app: &TestApp, jti: &str, n: usize) {
    let response = app
        .act(jti, "write", &format!("crm:item{n}"), "success")
        .await;
    assert_eq!(response.status(), StatusCode::FORBIDDEN);
}

fn items(range: std::ops::Range<usize>) -> Vec<String> {
    range.map(|n| format!("crm:item{n}")).collect()
}

fn resources(received: &[Received]) -> Vec<String> {
    received.iter().map(Received::resource).collect()
}

/// The whole delivery log of a webhook, newest first, read page by page.
async fn delivery_log(app: &TestApp, key: &str, id: &str) -> Vec<Value> {
    let mut log = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let path = match &cursor {
            Some(cursor) => format!("/v1/webhooks/{id}/deliveries?limit=3&cursor={cursor}"),
            None => format!("/v1/webhooks/{id}/deliveries?limit=3"),
        };
        let page = expect_json(app.get_auth(&path, key).await, StatusCode::OK).await;
        log.extend(page["deliveries"].as_array().unwrap().iter().cloned());
        match page["next_cursor"].as_str() {
            Some(next) => cursor = Some(next.to_owned()),
            None => return log,
        }
    }
}

async fn webhook(app: &TestApp, key: &str, id: &str) -> Value {
    expect_json(
        app.get_auth(&format!("/v1/webhooks/{id}"), key).await,
        StatusCode::OK,
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn every_event_arrives_as_standard_webhooks_says() {
    let app = TestApp::spawn_with(quick).await;
    let receiver = Receiver::start().await;
    let admin = app.admin_key.clone();
    let (id, secret) = create(&app, &admin, &receiver.url(), &ALL).await;
    assert!(secret.starts_with("whsec_"));
    let root = app
        .issue(json!({
            "developer_email": "dev@example.com", "agent_id": "hook-bot",
            "resources": ["crm:*", "bank:*"], "actions": ["read", "pay"],
            "constraints": {"max_spend_usd": 10, "require_approval": {"actions": ["pay"]}}
        }))
        .await;
    let jti = text(&root["jti"]);
    expect_json(
        app.act(jti, "read", "crm:failed", "error").await,
        StatusCode::CREATED,
    )
    .await;
    assert_eq!(
        app.act(jti, "write", "crm:denied", "success")
            .await
            .status(),
        StatusCode::FORBIDDEN
    );
    let spent = expect_json(
        app.post(
            "/v1/vat/record/action",
            &json!({"vat_jti": jti, "action": "read", "resource": "crm:spent", "result": "success", "spend_usd": 8.5}),
        )
        .await,
        StatusCode::CREATED,
    )
    .await;
    expect_json(
        app.post_auth(
            &format!("/v1/vat/aar/{}/feedback", text(&spent["aar_id"])),
            &admin,
            &json!({"rating": "approved"}),
        )
        .await,
        StatusCode::OK,
    )
    .await;
    let asked = expect_json(
        app.post(
            "/v1/vat/authorize",
            &json!({"vat_jti": jti, "action": "pay", "resource": "bank:acct"}),
        )
        .await,
        StatusCode::ACCEPTED,
    )
    .await;
    let approval = text(&asked["approval"]["approval_id"]);
    expect_json(
        app.post_auth(
            &format!("/v1/vat/approvals/{approval}/decision"),
            &admin,
            &json!({"decision": "deny", "note": "not today"}),
        )
        .await,
        StatusCode::OK,
    )
    .await;
    expect_json(
        app.post_auth("/v1/vat/revoke", &admin, &json!({"jti": jti}))
            .await,
        StatusCode::OK,
    )
    .await;

    let got = receiver.wait_for(7).await;
    let kinds: Vec<String> = got.iter().map(Received::kind).collect();
    assert_eq!(
        kinds,
        [
            "record.failed",
            "record.denied",
            "budget.threshold",
            "record.rated",
            "approval.requested",
            "approval.decided",
            "token.revoked"
        ],
        "in the order they happened"
    );
    for message in &got {
        assert!(message.verifies(&secret), "{}", message.kind());
        assert!(
            !message.verifies("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"),
            "another secret verifies"
        );
        assert_eq!(message.header("content-type"), "application/json");
        assert!(
            message
                .header("user-agent")
                .starts_with("Mandate-Webhooks/")
        );
        let id = message.header("webhook-id").to_owned();
        assert!(id.starts_with("msg_"), "{id}");
        let stored: Vec<u8> = app.with_database(move |conn| {
            conn.query_row("SELECT payload FROM events WHERE id = ?1", [id], |row| {
                row.get(0)
            })
            .unwrap()
        });
        assert_eq!(message.body, stored, "the outbox's bytes, exactly");
        let body = String::from_utf8(message.body.clone()).unwrap();
        assert!(!body.contains(jti), "an event names a jti: {body}");
        assert!(!body.contains(&admin), "an event holds a key: {body}");
        assert!(message.payload()["timestamp"].is_string());
    }
    let data = |n: usize| got[n].payload()["data"].clone();
    assert_eq!(data(1)["deny_reason"], "action_not_permitted");
    assert_eq!(data(2)["threshold_percent"], 80);
    assert_eq!(data(3)["rating"], "approved");
    assert_eq!(data(5)["status"], "denied");
    assert_eq!(data(5)["note"], "not today");

    // The receiver may answer before the deliverer has logged the attempt.
    let log = eventually("every delivery logged", async || {
        let log = delivery_log(&app, &admin, &id).await;
        (log.len() >= 7).then_some(log)
    })
    .await;
    assert_eq!(log.len(), 7, "{log:?}");
    let logged: Vec<&str> = log.iter().rev().map(|d| text(&d["message_id"])).collect();
    let sent: Vec<&str> = got.iter().map(|m| m.header("webhook-id")).collect();
    assert_eq!(logged, sent, "newest first");
    for (entry, message) in log.iter().rev().zip(&got) {
        assert_eq!(entry["type"], message.kind().as_str());
        assert_eq!(entry["outcome"], "delivered");
        assert_eq!(entry["attempt"], 1);
        assert_eq!(entry["http_status"], 200);
        assert!(entry.get("error").is_none());
    }
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_receiver_down_for_a_while_gets_everything_in_order_once_it_returns() {
    let app = TestApp::spawn_with(quick).await;
    let admin = app.admin_key.clone();
    let down = Receiver::start().await;
    let up = Receiver::start().await;
    let (down_id, down_secret) = create(&app, &admin, &down.url(), &["record.denied"]).await;
    let (_, up_secret) = create(&app, &admin, &up.url(), &["record.denied"]).await;
    let (address, inbox) = down.stop().await;
    let jti = reader(&app, &admin).await;
    for n in 0..10 {
        deny(&app, &jti, n).await;
    }
    let healthy = up.wait_for(10).await;
    assert_eq!(resources(&healthy), items(0..10), "not held back");
    assert!(healthy.iter().all(|m| m.verifies(&up_secret)));

    let failed = eventually("failed attempts", async || {
        let log = delivery_log(&app, &admin, &down_id).await;
        (log.len() >= 3).then_some(log)
    })
    .await;
    let head = text(&failed[0]["message_id"]).to_owned();
    for entry in &failed {
        assert_eq!(entry["outcome"], "failed");
        assert_eq!(
            entry["message_id"],
            head.as_str(),
            "only the first is tried"
        );
        assert!(entry.get("http_status").is_none());
        assert!(
            text(&entry["error"]).contains("connect"),
            "{}",
            entry["error"]
        );
    }
    let attempts: Vec<u64> = failed
        .iter()
        .map(|entry| entry["attempt"].as_u64().unwrap())
        .collect();
    assert!(
        attempts.windows(2).all(|w| w[0] == w[1] + 1),
        "{attempts:?}"
    );
    let state = webhook(&app, &admin, &down_id).await;
    assert!(state["failed_attempts"].as_u64().unwrap() >= 3);
    assert!(state["failing_since"].is_string() && state["next_attempt_at"].is_string());

    let back = Receiver::start_on(address, inbox).await;
    let got = back.wait_for(10).await;
    assert_eq!(resources(&got), items(0..10), "every event, in order");
    assert!(got.iter().all(|m| m.verifies(&down_secret)));
    assert_eq!(
        got[0].header("webhook-id"),
        head,
        "the same id on every retry"
    );
    let log = eventually("the log of the deliveries", async || {
        let log = delivery_log(&app, &admin, &down_id).await;
        let delivered = log.iter().filter(|e| e["outcome"] == "delivered").count();
        (delivered == 10).then_some(log)
    })
    .await;
    let first = log
        .iter()
        .find(|e| e["message_id"] == head.as_str() && e["outcome"] == "delivered")
        .unwrap();
    assert!(first["attempt"].as_u64().unwrap() > attempts[0]);
    let state = webhook(&app, &admin, &down_id).await;
    assert_eq!(state["failed_attempts"], 0);
    assert!(state.get("failing_since").is_none());
    app.stop().await;
}

/// The configuration of the `mandate` binary for the crash test.
fn crash_config(dir: &Path) -> std::path::PathBuf {
    let path = dir.join("mandate.toml");
    std::fs::write(
        &path,
        "[rate_limits]\nper_api_key = 0\nper_token = 0\nper_org = 0\nper_ip = 0\n\
         [webhooks]\nallow_private = true\nretry_first_delay_ms = 100\ntimeout_ms = 2000\n",
    )
    .unwrap();
    path
}

/// Records denied actions one after another until the server goes away;
/// appends each acknowledged one's resource to `acked`.
async fn denier(base: String, jti: String, acked: Arc<Mutex<Vec<String>>>, from: usize) {
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(5))
        .build()
        .unwrap();
    for n in from.. {
        let resource = format!("crm:item{n}");
        let body =
            json!({"vat_jti": jti, "action": "write", "resource": resource, "result": "success"});
        let Ok(response) = client
            .post(format!("{base}/v1/vat/record/action"))
            .json(&body)
            .send()
            .await
        else {
            return;
        };
        if response.status() != StatusCode::FORBIDDEN || response.bytes().await.is_err() {
            return;
        }
        acked.lock().unwrap().push(resource);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn nothing_acknowledged_is_lost_across_kill_9() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let config = crash_config(dir.path());
    let mut inbox = Inbox::new(Answer::Status(200));
    // Slower than the writes: a backlog waits at every kill.
    inbox.delay = Duration::from_millis(10);
    let receiver = Receiver::start_with(inbox).await;
    let acked = Arc::new(Mutex::new(Vec::new()));
    let mut jti = String::new();
    let mut secret = String::new();
    const CYCLES: usize = 3;
    for cycle in 0..CYCLES {
        let server = Server::start(&data, &config);
        let key = admin_key(&data);
        if cycle == 0 {
            let created = server
                .client
                .post(server.url("/v1/webhooks"))
                .bearer_auth(&key)
                .json(&json!({"url": receiver.url(), "events": ["record.denied"]}))
                .send()
                .await
                .unwrap();
            secret = text(&expect_json(created, StatusCode::CREATED).await["secret"]).to_owned();
            let issued = server
                .client
                .post(server.url("/v1/vat/issue/l1"))
                .bearer_auth(&key)
                .json(&json!({
                    "developer_email": "dev@example.com", "agent_id": "hook-bot",
                    "resources": ["crm:*"], "actions": ["read"], "ttl_seconds": 86400
                }))
                .send()
                .await
                .unwrap();
            jti = text(&expect_json(issued, StatusCode::CREATED).await["jti"]).to_owned();
        }
        let before = acked.lock().unwrap().len();
        let writer = tokio::spawn(denier(
            server.base.clone(),
            jti.clone(),
            acked.clone(),
            cycle * 100_000,
        ));
        eventually("writes acknowledged", async || {
            (acked.lock().unwrap().len() >= before + 60).then_some(())
        })
        .await;
        tokio::time::sleep(Duration::from_millis(random_below(300))).await;
        server.kill();
        writer.await.unwrap();
    }
    let server = Server::start(&data, &config);
    let acked = acked.lock().unwrap().clone();
    eventually("every acknowledged event", async || {
        let got: std::collections::BTreeSet<String> =
            resources(&receiver.received()).into_iter().collect();
        acked.iter().all(|r| got.contains(r)).then_some(())
    })
    .await;
    let got = receiver.received();
    let mut ids: BTreeMap<String, String> = BTreeMap::new();
    let mut first_arrivals = Vec::new();
    for message in &got {
        assert!(message.verifies(&secret));
        let resource = message.resource();
        let id = message.header("webhook-id").to_owned();
        match ids.get(&resource) {
            Some(earlier) => assert_eq!(*earlier, id, "{resource} sent again under another id"),
            None => {
                ids.insert(resource.clone(), id);
                first_arrivals.push(resource);
            }
        }
    }
    let acked_arrivals: Vec<&String> = first_arrivals
        .iter()
        .filter(|resource| acked.contains(resource))
        .collect();
    let in_order: Vec<&String> = acked.iter().collect();
    assert_eq!(
        acked_arrivals, in_order,
        "in the order they were acknowledged"
    );
    server.stop();
}

#[tokio::test]
async fn urls_reaching_private_addresses_are_refused() {
    let app = TestApp::spawn().await;
    let admin = app.admin_key.clone();
    for (url, code) in [
        ("https://127.0.0.1/hook", "webhook_url_not_public"),
        ("https://127.1/hook", "webhook_url_not_public"),
        ("https://0x7f.1/hook", "webhook_url_not_public"),
        ("https://2130706433/hook", "webhook_url_not_public"),
        ("https://10.0.0.1/hook", "webhook_url_not_public"),
        ("https://172.16.5.4/hook", "webhook_url_not_public"),
        ("https://192.168.0.10/hook", "webhook_url_not_public"),
        ("https://100.64.0.1/hook", "webhook_url_not_public"),
        (
            "https://169.254.169.254/latest/meta-data/",
            "webhook_url_not_public",
        ),
        ("https://0.0.0.0/hook", "webhook_url_not_public"),
        ("https://[::1]/hook", "webhook_url_not_public"),
        ("https://[::]/hook", "webhook_url_not_public"),
        ("https://[::ffff:127.0.0.1]/hook", "webhook_url_not_public"),
        ("https://[::ffff:a9fe:a9fe]/hook", "webhook_url_not_public"),
        ("https://[64:ff9b::a00:1]/hook", "webhook_url_not_public"),
        ("https://[fd00::1]/hook", "webhook_url_not_public"),
        ("https://[fe80::1]/hook", "webhook_url_not_public"),
        ("https://localhost/hook", "webhook_url_not_public"),
        ("https://localhost:8080/hook", "webhook_url_not_public"),
        ("http://8.8.8.8/hook", "invalid_webhook_url"),
        ("https://user:pw@8.8.8.8/hook", "invalid_webhook_url"),
        ("file:///etc/passwd", "invalid_webhook_url"),
        ("gopher://8.8.8.8/", "invalid_webhook_url"),
        ("/hook", "invalid_webhook_url"),
        (
            "https://no-such-host.invalid/hook",
            "webhook_url_unresolvable",
        ),
    ] {
        let refused = expect_problem(
            app.post_auth(
                "/v1/webhooks",
                &admin,
                &json!({"url": url, "events": ["record.denied"]}),
            )
            .await,
            StatusCode::UNPROCESSABLE_ENTITY,
            code,
        )
        .await;
        assert_eq!(refused["field"], "url", "{url}");
    }
    let (id, _) = create(&app, &admin, "https://8.8.8.8/hook", &["record.denied"]).await;
    expect_problem(
        app.send(
            Method::PATCH,
            &format!("/v1/webhooks/{id}"),
            &admin,
            Some(&json!({"url": "https://[::ffff:10.0.0.1]/hook"})),
        )
        .await,
        StatusCode::UNPROCESSABLE_ENTITY,
        "webhook_url_not_public",
    )
    .await;
    assert_eq!(
        webhook(&app, &admin, &id).await["url"],
        "https://8.8.8.8/hook"
    );
    let listed = expect_json(app.get_auth("/v1/webhooks", &admin).await, StatusCode::OK).await;
    assert_eq!(listed["webhooks"].as_array().unwrap().len(), 1, "{listed}");
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn every_delivery_checks_the_addresses_again() {
    let receiver = Receiver::start().await;
    let port = receiver.address.port();
    // Stored while private addresses were allowed; then the deployment
    // stops allowing them.
    let app = TestApp::spawn_with(quick).await;
    let admin = app.admin_key.clone();
    let (literal, _) = create(
        &app,
        &admin,
        &format!("https://127.0.0.1:{port}/hook"),
        &["record.denied"],
    )
    .await;
    let (named, _) = create(
        &app,
        &admin,
        &format!("https://localhost:{port}/hook"),
        &["record.denied"],
    )
    .await;
    let jti = reader(&app, &admin).await;
    let dir = app.stop().await;
    let app = TestApp::spawn_in(dir, |config| {
        quick(config);
        config.webhooks.allow_private = false;
        config.webhooks.ports = vec![port];
    })
    .await;
    deny(&app, &jti, 0).await;
    for (id, written) in [(literal, true), (named, false)] {
        let log = eventually("a refused attempt", async || {
            let log = delivery_log(&app, &admin, &id).await;
            (!log.is_empty()).then_some(log)
        })
        .await;
        assert_eq!(log[0]["outcome"], "failed");
        let error = text(&log[0]["error"]);
        if written {
            // The address the URL wrote is named.
            assert!(error.contains("is not a public address"), "{error}");
            assert!(error.contains("loopback"), "{error}");
        } else {
            // What the name resolved to is not: it is the network's answer.
            assert!(error.contains("not public"), "{error}");
            for answer in ["127.0.0.1", "::1", "loopback"] {
                assert!(!error.contains(answer), "{error}");
            }
        }
    }
    assert!(receiver.received().is_empty(), "nothing reached loopback");
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn redirects_are_never_followed() {
    let app = TestApp::spawn_with(quick).await;
    let admin = app.admin_key.clone();
    let inner = Receiver::start().await;
    let bouncer = Receiver::start_with(Inbox::new(Answer::Redirect(inner.url()))).await;
    let (id, _) = create(&app, &admin, &bouncer.url(), &["record.denied"]).await;
    let jti = reader(&app, &admin).await;
    deny(&app, &jti, 0).await;
    bouncer.wait_for(2).await;
    let log = delivery_log(&app, &admin, &id).await;
    assert!(!log.is_empty());
    for entry in &log {
        assert_eq!(entry["outcome"], "failed");
        assert_eq!(entry["http_status"], 302);
        assert!(text(&entry["error"]).contains("redirect"));
    }
    assert!(inner.received().is_empty(), "the redirect was followed");
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_rotated_secret_signs_beside_the_new_one_for_a_day() {
    let app = TestApp::spawn_with(quick).await;
    let admin = app.admin_key.clone();
    let receiver = Receiver::start().await;
    let (id, old) = create(&app, &admin, &receiver.url(), &["record.denied"]).await;
    let jti = reader(&app, &admin).await;
    deny(&app, &jti, 0).await;
    let before = receiver.wait_for(1).await;
    assert!(before[0].verifies(&old));
    assert_eq!(before[0].header("webhook-signature").split(' ').count(), 1);

    let rotated = expect_json(
        app.post_auth(
            &format!("/v1/webhooks/{id}/rotate-secret"),
            &admin,
            &json!({}),
        )
        .await,
        StatusCode::OK,
    )
    .await;
    let new = text(&rotated["secret"]).to_owned();
    assert!(new.starts_with("whsec_") && new != old);
    let until =
        mandate_host::clock::parse_iso_ms(text(&rotated["previous_secret_expires_at"])).unwrap();
    let day = until - app.clock.now().ms();
    assert!((86_000_000..=86_400_000).contains(&day), "{day}");
    assert_eq!(
        webhook(&app, &admin, &id).await["previous_secret_expires_at"],
        rotated["previous_secret_expires_at"]
    );
    deny(&app, &jti, 1).await;
    let during = receiver.wait_for(2).await;
    assert_eq!(during[1].header("webhook-signature").split(' ').count(), 2);
    assert!(during[1].verifies(&new), "the new secret");
    assert!(during[1].verifies(&old), "the old secret, still");

    app.clock.advance(Duration::from_secs(25 * 3600));
    deny(&app, &jti, 2).await;
    let after = receiver.wait_for(3).await;
    assert_eq!(after[2].header("webhook-signature").split(' ').count(), 1);
    assert!(after[2].signed_with(&new));
    assert!(!after[2].signed_with(&old), "the old secret has lapsed");
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_endpoint_failing_for_a_day_is_disabled_and_resumes_with_nothing_lost() {
    let app = TestApp::spawn_with(quick).await;
    let admin = app.admin_key.clone();
    let receiver = Receiver::start_with(Inbox::new(Answer::Status(500))).await;
    let (id, secret) = create(&app, &admin, &receiver.url(), &["record.denied"]).await;
    let jti = reader(&app, &admin).await;
    for n in 0..3 {
        deny(&app, &jti, n).await;
    }
    let failing = receiver.wait_for(2).await;
    assert!(
        failing.iter().all(|m| m.resource() == "crm:item0"),
        "later events wait for the first"
    );
    app.clock.advance(Duration::from_secs(25 * 3600));
    let disabled = eventually("the endpoint disabled", async || {
        let state = webhook(&app, &admin, &id).await;
        (state["enabled"] == false).then_some(state)
    })
    .await;
    let reason = text(&disabled["disabled_reason"]);
    assert!(
        reason.contains("24 hours") && reason.ends_with("HTTP 500"),
        "{reason}"
    );
    assert!(disabled["disabled_at"].is_string());
    let tried = receiver.received().len();
    for n in 3..5 {
        deny(&app, &jti, n).await;
    }

    receiver.answer(Answer::Status(200));
    let enabled = expect_json(
        app.send(
            Method::PATCH,
            &format!("/v1/webhooks/{id}"),
            &admin,
            Some(&json!({"enabled": true})),
        )
        .await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(enabled["enabled"], true);
    assert!(enabled.get("disabled_reason").is_none());
    assert_eq!(enabled["failed_attempts"], 0);
    let got = receiver.wait_for(tried + 5).await;
    assert_eq!(got.len(), tried + 5, "nothing was sent while disabled");
    let resumed = &got[tried..];
    assert_eq!(resources(resumed), items(0..5), "nothing lost, in order");
    assert!(resumed.iter().all(|m| m.signed_with(&secret)));

    // An owner's own pause holds events too.
    expect_json(
        app.send(
            Method::PATCH,
            &format!("/v1/webhooks/{id}"),
            &admin,
            Some(&json!({"enabled": false})),
        )
        .await,
        StatusCode::OK,
    )
    .await;
    deny(&app, &jti, 5).await;
    let paused = webhook(&app, &admin, &id).await;
    assert_eq!(paused["disabled_reason"], "disabled by its owner");
    expect_json(
        app.send(
            Method::PATCH,
            &format!("/v1/webhooks/{id}"),
            &admin,
            Some(&json!({"enabled": true})),
        )
        .await,
        StatusCode::OK,
    )
    .await;
    let got = receiver.wait_for(tried + 6).await;
    assert_eq!(got[tried + 5].resource(), "crm:item5");
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn several_in_flight_deliver_each_event_once_and_retry_only_failures() {
    let app = TestApp::spawn_with(|config| {
        quick(config);
        config.webhooks.per_endpoint_concurrency = NonZeroU64::new(4).unwrap();
    })
    .await;
    let admin = app.admin_key.clone();
    let receiver =
        Receiver::start_with(Inbox::new(Answer::FailFor("crm:item2\"".to_owned(), 2))).await;
    let (id, _) = create(&app, &admin, &receiver.url(), &["record.denied"]).await;
    let jti = reader(&app, &admin).await;
    for n in 0..9 {
        deny(&app, &jti, n).await;
    }
    let got = receiver.wait_for(11).await;
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    for resource in resources(&got) {
        *counts.entry(resource).or_default() += 1;
    }
    for (resource, count) in &counts {
        let expected = if resource == "crm:item2" { 3 } else { 1 };
        assert_eq!(*count, expected, "{resource}: {counts:?}");
    }
    assert_eq!(counts.len(), 9);
    // The receiver has the third attempt before the server has logged its
    // answer: wait for the log to hold the three attempts.
    let two: Vec<(u64, String)> = eventually("item2's three attempts logged", async || {
        let log = delivery_log(&app, &admin, &id).await;
        let two: Vec<(u64, String)> = log
            .iter()
            .filter(|entry| {
                got.iter()
                    .find(|m| m.header("webhook-id") == text(&entry["message_id"]))
                    .is_some_and(|m| m.resource() == "crm:item2")
            })
            .map(|entry| {
                (
                    entry["attempt"].as_u64().unwrap(),
                    text(&entry["outcome"]).to_owned(),
                )
            })
            .collect();
        (two.len() == 3).then_some(two)
    })
    .await;
    assert_eq!(
        two,
        [
            (3, "delivered".to_owned()),
            (2, "failed".to_owned()),
            (1, "failed".to_owned())
        ]
    );
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn only_owners_manage_webhooks_and_each_sees_its_own_organisation() {
    let app = TestApp::spawn_with(quick).await;
    let (_, beta) = app.org("beta").await;
    let (_, gamma) = app.org("gamma").await;
    let beta_inbox = Receiver::start().await;
    let gamma_inbox = Receiver::start().await;
    let (beta_hook, _) = create(&app, &beta, &beta_inbox.url(), &ALL).await;
    let (gamma_hook, _) = create(&app, &gamma, &gamma_inbox.url(), &ALL).await;
    let operations = |id: &str| {
        vec![
            (
                Method::POST,
                "/v1/webhooks".to_owned(),
                Some(json!({"url": "https://8.8.8.8/", "events": ["record.denied"]})),
            ),
            (Method::GET, "/v1/webhooks".to_owned(), None),
            (Method::GET, format!("/v1/webhooks/{id}"), None),
            (
                Method::PATCH,
                format!("/v1/webhooks/{id}"),
                Some(json!({"enabled": false})),
            ),
            (Method::DELETE, format!("/v1/webhooks/{id}"), None),
            (
                Method::POST,
                format!("/v1/webhooks/{id}/rotate-secret"),
                None,
            ),
            (Method::GET, format!("/v1/webhooks/{id}/deliveries"), None),
        ]
    };
    for role in ["developer", "reviewer", "auditor"] {
        let key = app
            .key(&beta, role, Some(&format!("{role}@beta.test")))
            .await;
        for (method, path, body) in operations(&beta_hook) {
            expect_problem(
                app.send(method, &path, &key, body.as_ref()).await,
                StatusCode::FORBIDDEN,
                "role_forbidden",
            )
            .await;
        }
    }
    // Another organisation's owner: its webhooks are unknown there, and
    // nothing of them changes.
    for (method, path, body) in operations(&beta_hook).into_iter().skip(2) {
        expect_problem(
            app.send(method, &path, &gamma, body.as_ref()).await,
            StatusCode::NOT_FOUND,
            "webhook_not_found",
        )
        .await;
    }
    for unknown in [
        "wh_01kaqv3f00000000000000000a",
        "wh_nope",
        "key_01kaqv3f00000000000000000a",
    ] {
        expect_problem(
            app.get_auth(&format!("/v1/webhooks/{unknown}"), &beta)
                .await,
            StatusCode::NOT_FOUND,
            "webhook_not_found",
        )
        .await;
    }
    let listed = expect_json(app.get_auth("/v1/webhooks", &gamma).await, StatusCode::OK).await;
    let ids: Vec<&str> = listed["webhooks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| text(&w["webhook_id"]))
        .collect();
    assert_eq!(ids, [gamma_hook.as_str()]);
    assert!(
        listed.to_string().find("whsec_").is_none(),
        "a list shows no secret"
    );
    assert_eq!(webhook(&app, &beta, &beta_hook).await["enabled"], true);
    // An agent's token is no key.
    let token = expect_json(
        app.post_auth(
            "/v1/vat/issue/l1",
            &beta,
            &json!({"developer_email": "dev@beta.test", "agent_id": "hook-bot", "resources": ["crm:*"], "actions": ["read"]}),
        )
        .await,
        StatusCode::CREATED,
    )
    .await;
    assert_eq!(
        app.get_auth("/v1/webhooks", text(&token["compact_jwt"]))
            .await
            .status(),
        StatusCode::UNAUTHORIZED
    );

    // Each organisation's events reach its own webhooks only.
    let beta_jti = text(&token["jti"]).to_owned();
    let gamma_jti = reader(&app, &gamma).await;
    deny(&app, &beta_jti, 0).await;
    deny(&app, &gamma_jti, 100).await;
    deny(&app, &beta_jti, 1).await;
    assert_eq!(
        resources(&beta_inbox.wait_for(2).await),
        ["crm:item0", "crm:item1"]
    );
    assert_eq!(resources(&gamma_inbox.wait_for(1).await), ["crm:item100"]);
    assert_eq!(beta_inbox.received().len(), 2);
    assert_eq!(gamma_inbox.received().len(), 1);
    // The receiver may answer before the deliverer has logged the attempt.
    let logged = eventually("gamma's delivery logged", async || {
        let log = delivery_log(&app, &gamma, &gamma_hook).await;
        (!log.is_empty()).then_some(log)
    })
    .await;
    assert_eq!(logged.len(), 1, "gamma's log holds gamma's delivery only");

    // The owner deletes its webhook: it is gone, and sent nothing more.
    let deleted = app
        .send(
            Method::DELETE,
            &format!("/v1/webhooks/{beta_hook}"),
            &beta,
            None,
        )
        .await;
    assert_eq!(deleted.status(), StatusCode::NO_CONTENT);
    expect_problem(
        app.get_auth(&format!("/v1/webhooks/{beta_hook}/deliveries"), &beta)
            .await,
        StatusCode::NOT_FOUND,
        "webhook_not_found",
    )
    .await;
    app.stop().await;
}

#[tokio::test]
async fn bad_input_is_refused_naming_the_field() {
    let app = TestApp::spawn().await;
    let admin = app.admin_key.clone();
    let url = "https://8.8.8.8/hook";
    let many: Vec<String> = (0..65).map(|_| "record.denied".to_owned()).collect();
    for (body, field, code) in [
        (json!({"url": url, "events": []}), "events", "empty_list"),
        (
            json!({"url": url, "events": ["record.created"]}),
            "events",
            "webhook_event_type_unknown",
        ),
        (
            json!({"url": url, "events": ["record.denied", "record.denied"]}),
            "events",
            "duplicate_entry",
        ),
        (
            json!({"url": url, "events": many}),
            "events",
            "list_too_long",
        ),
        (
            json!({"url": url, "events": "record.denied"}),
            "events",
            "invalid_field",
        ),
        (json!({"events": ["record.denied"]}), "url", "missing_field"),
        (
            json!({"url": 7, "events": ["record.denied"]}),
            "url",
            "invalid_field",
        ),
        (
            json!({"url": format!("{url}/{}", "a".repeat(3000)), "events": ["record.denied"]}),
            "url",
            "too_long",
        ),
        (
            json!({"url": url, "events": ["record.denied"], "description": "x".repeat(257)}),
            "description",
            "too_long",
        ),
        (
            json!({"url": url, "events": ["record.denied"], "description": "a\u{7}b"}),
            "description",
            "control_character",
        ),
        (
            json!({"url": url, "events": ["record.denied"], "secret": "whsec_mine"}),
            "secret",
            "unknown_field",
        ),
    ] {
        let refused = expect_problem(
            app.post_auth("/v1/webhooks", &admin, &body).await,
            StatusCode::UNPROCESSABLE_ENTITY,
            code,
        )
        .await;
        assert_eq!(refused["field"], field, "{body}");
    }
    let (id, _) = create(&app, &admin, url, &["record.denied"]).await;
    for (body, field, code) in [
        (json!({"events": []}), "events", "empty_list"),
        (json!({"enabled": "yes"}), "enabled", "invalid_field"),
        (
            json!({"url": "https://[::1]/"}),
            "url",
            "webhook_url_not_public",
        ),
    ] {
        let refused = expect_problem(
            app.send(
                Method::PATCH,
                &format!("/v1/webhooks/{id}"),
                &admin,
                Some(&body),
            )
            .await,
            StatusCode::UNPROCESSABLE_ENTITY,
            code,
        )
        .await;
        assert_eq!(refused["field"], field, "{body}");
    }
    let changed = expect_json(
        app.send(
            Method::PATCH,
            &format!("/v1/webhooks/{id}"),
            &admin,
            Some(&json!({"events": ["token.revoked", "record.denied"], "description": "pager"})),
        )
        .await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(changed["events"], json!(["token.revoked", "record.denied"]));
    assert_eq!(changed["description"], "pager");
    expect_problem(
        app.get_auth(
            &format!("/v1/webhooks/{id}/deliveries?cursor=bm9wZQ"),
            &admin,
        )
        .await,
        StatusCode::BAD_REQUEST,
        "invalid_cursor",
    )
    .await;
    app.stop().await;
}

/// Several hosts on one PostgreSQL database (the PostgreSQL pass only:
/// `cargo xtask test` skips `hosts::` on SQLite).
mod hosts {
    use super::*;

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn hosts_sharing_a_database_deliver_an_endpoint_one_at_a_time_in_order() {
        let first = TestApp::spawn_with(quick).await;
        let second = first.another_host(quick).await;
        let admin = first.admin_key.clone();
        let receiver = Receiver::start().await;
        let (_, secret) = create(&first, &admin, &receiver.url(), &["record.denied"]).await;
        let jti = reader(&first, &admin).await;
        for n in 0..20 {
            let host = if n % 2 == 0 { &first } else { &second };
            deny(host, &jti, n).await;
        }
        let got = receiver.wait_for(20).await;
        assert_eq!(resources(&got), items(0..20), "each once, in order");
        assert!(got.iter().all(|m| m.verifies(&secret)));
        second.stop().await;
        first.stop().await;
    }
}

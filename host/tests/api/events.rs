//! `GET /v1/events`: an organisation's events as Server-Sent Events, read
//! with a parser written here from the HTML standard's rules; resumed
//! after a dropped connection with `Last-Event-ID`, nothing missed and
//! nothing repeated; kept behind the organisation's wall; quiet streams
//! sent heartbeat comments.

use std::time::Duration;

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::helpers::{TestApp, expect_json, expect_problem, text};

/// One event of the stream.
#[derive(Debug, Clone, PartialEq)]
pub struct SseEvent {
    pub id: String,
    pub event: String,
    pub data: String,
}

/// An open stream and what has been read of it.
pub struct Stream {
    response: reqwest::Response,
    buffer: String,
    /// Comment lines seen.
    comments: usize,
}

impl Stream {
    pub async fn open(app: &TestApp, key: &str, last_event_id: Option<&str>) -> Stream {
        let mut request = app
            .client
            .get(app.url("/v1/events"))
            .bearer_auth(key)
            .timeout(Duration::from_secs(120));
        if let Some(id) = last_event_id {
            request = request.header("last-event-id", id);
        }
        let response = request.send().await.unwrap();
        assert_eq!(response.status(), StatusCode::OK);
        assert_eq!(
            response.headers()["content-type"],
            "text/event-stream",
            "{:?}",
            response.headers()
        );
        Stream {
            response,
            buffer: String::new(),
            comments: 0,
        }
    }

    /// The next event (fields `id`, `event`, `data`; comments counted),
    /// within `within`.
    pub async fn next(&mut self, within: Duration) -> Option<SseEvent> {
        let deadline = tokio::time::Instant::now() + within;
        loop {
            if let Some(end) = self.buffer.find("\n\n") {
                let block: String = self.buffer.drain(..end + 2).collect();
                let mut event = SseEvent {
                    id: String::new(),
                    event: String::new(),
                    data: String::new(),
                };
                let mut fields = 0;
                for line in block.lines().filter(|line| !line.is_empty()) {
                    if line.starts_with(':') {
                        self.comments += 1;
                        continue;
                    }
                    let (name, value) = line.split_once(':').unwrap_or((line, ""));
                    let value = value.strip_prefix(' ').unwrap_or(value);
                    fields += 1;
                    match name {
                        "id" => event.id = value.to_owned(),
                        "event" => event.event = value.to_owned(),
                        "data" => {
                            if !event.data.is_empty() {
                                event.data.push('\n');
                            }
                            event.data.push_str(value);
                        }
                        other => panic!("an unknown field {other}"),
                    }
                }
                if fields > 0 {
                    return Some(event);
                }
                continue;
            }
            let chunk = tokio::time::timeout_at(deadline, self.response.chunk())
                .await
                .ok()?
                .unwrap()?;
            self.buffer.push_str(std::str::from_utf8(&chunk).unwrap());
        }
    }
}

/// A denied action of `jti`: one `record.denied` event; its record id.
pub async fn deny(app: &TestApp, jti: &str) -> String {
    let problem = expect_problem(
        app.act(jti, "write", "crm:a", "success").await,
        StatusCode::FORBIDDEN,
        "action_not_permitted",
    )
    .await;
    text(&problem["aar_id"]).to_owned()
}

pub fn payload(event: &SseEvent) -> Value {
    serde_json::from_str(&event.data).unwrap()
}

#[tokio::test]
async fn a_dropped_stream_resumes_after_its_last_event_with_none_missed() {
    let app = TestApp::spawn().await;
    let token = app.root("bot", &["crm:*"], &["read"]).await;
    let jti = text(&token["jti"]).to_owned();
    // Events before the stream opens are not sent to it: it starts now.
    deny(&app, &jti).await;
    let mut stream = Stream::open(&app, &app.admin_key, None).await;
    let first = deny(&app, &jti).await;
    let event = stream.next(Duration::from_secs(10)).await.unwrap();
    assert_eq!(event.event, "record.denied");
    assert!(event.id.starts_with("msg_"), "{event:?}");
    let body = payload(&event);
    assert_eq!(body["type"], "record.denied");
    assert_eq!(body["data"]["aar_id"], first.as_str());
    assert_eq!(body["data"]["deny_reason"], "action_not_permitted");
    assert!(!event.data.contains(&jti), "no jti in an event");

    // The connection drops; three things happen meanwhile.
    drop(stream);
    let mut missed = Vec::new();
    for _ in 0..3 {
        missed.push(deny(&app, &jti).await);
    }
    let mut resumed = Stream::open(&app, &app.admin_key, Some(&event.id)).await;
    for aar_id in &missed {
        let event = resumed.next(Duration::from_secs(10)).await.unwrap();
        assert_eq!(payload(&event)["data"]["aar_id"], aar_id.as_str());
    }
    // And it goes on live, with nothing repeated.
    let rated_record = expect_json(
        app.act(&jti, "read", "crm:a", "success").await,
        StatusCode::CREATED,
    )
    .await;
    expect_json(
        app.post_auth(
            &format!("/v1/vat/aar/{}/feedback", text(&rated_record["aar_id"])),
            &app.admin_key,
            &json!({"rating": "approved"}),
        )
        .await,
        StatusCode::OK,
    )
    .await;
    let rated = resumed.next(Duration::from_secs(10)).await.unwrap();
    assert_eq!(rated.event, "record.rated");
    assert!(resumed.next(Duration::from_millis(300)).await.is_none());
}

#[tokio::test]
async fn an_organisation_sees_only_its_own_events() {
    let app = TestApp::spawn().await;
    let (_, other_owner) = app.org("other").await;
    let mut ours = Stream::open(&app, &app.admin_key, None).await;
    let mut theirs = Stream::open(&app, &other_owner, None).await;
    let token = app.root("bot", &["crm:*"], &["read"]).await;
    deny(&app, text(&token["jti"])).await;
    assert!(ours.next(Duration::from_secs(10)).await.is_some());
    assert!(
        theirs.next(Duration::from_secs(2)).await.is_none(),
        "another organisation's event"
    );
    // Nor can it resume from one of ours.
    let event = {
        deny(&app, text(&token["jti"])).await;
        ours.next(Duration::from_secs(10)).await.unwrap()
    };
    expect_problem(
        app.client
            .get(app.url("/v1/events"))
            .bearer_auth(&other_owner)
            .header("last-event-id", &event.id)
            .send()
            .await
            .unwrap(),
        StatusCode::BAD_REQUEST,
        "invalid_last_event_id",
    )
    .await;
    // Reading events takes an API key, not an agent's token.
    expect_problem(
        app.get_auth("/v1/events", text(&token["compact_jwt"]))
            .await,
        StatusCode::UNAUTHORIZED,
        "unauthorized",
    )
    .await;
}

#[tokio::test]
async fn a_quiet_stream_gets_heartbeats() {
    let app = TestApp::spawn_with(|config| config.events.heartbeat_seconds = 1).await;
    let mut stream = Stream::open(&app, &app.admin_key, None).await;
    assert!(stream.next(Duration::from_secs(3)).await.is_none());
    assert!(stream.comments >= 1, "no heartbeat in 3 s at one a second");
}

#[tokio::test]
async fn an_organisation_holds_a_bounded_number_of_streams() {
    let app = TestApp::spawn_with(|config| config.events.max_streams_per_org = 2).await;
    let (_, other_owner) = app.org("other").await;
    let first = Stream::open(&app, &app.admin_key, None).await;
    let _second = Stream::open(&app, &app.admin_key, None).await;
    expect_problem(
        app.get_auth("/v1/events", &app.admin_key).await,
        StatusCode::TOO_MANY_REQUESTS,
        "too_many_streams",
    )
    .await;
    // Another organisation's streams are counted apart.
    let _theirs = Stream::open(&app, &other_owner, None).await;
    // A stream closed by its client gives its place back.
    drop(first);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        let response = app.get_auth("/v1/events", &app.admin_key).await;
        if response.status() == StatusCode::OK {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the place stayed taken"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test]
async fn one_key_cannot_hold_all_of_its_organisations_streams() {
    let app = TestApp::spawn_with(|config| {
        config.events.max_streams_per_org = 3;
        config.events.max_streams_per_key = 2;
    })
    .await;
    let auditor = app.key(&app.admin_key, "auditor", None).await;
    let _first = Stream::open(&app, &auditor, None).await;
    let _second = Stream::open(&app, &auditor, None).await;
    let refused = expect_problem(
        app.get_auth("/v1/events", &auditor).await,
        StatusCode::TOO_MANY_REQUESTS,
        "too_many_streams",
    )
    .await;
    assert!(text(&refused["detail"]).contains("API key"), "{refused}");
    // The owner's key still gets the organisation's last one.
    let _owners = Stream::open(&app, &app.admin_key, None).await;
    expect_problem(
        app.get_auth("/v1/events", &app.admin_key).await,
        StatusCode::TOO_MANY_REQUESTS,
        "too_many_streams",
    )
    .await;
}

#[tokio::test]
async fn a_stopping_server_ends_its_streams_instead_of_waiting_for_them() {
    let app = TestApp::spawn().await;
    let mut stream = Stream::open(&app, &app.admin_key, None).await;
    // A client that never hangs up does not hold the server open.
    tokio::time::timeout(Duration::from_secs(10), app.stop())
        .await
        .expect("the server did not stop within 10 s with a stream open");
    assert!(stream.next(Duration::from_secs(3)).await.is_none());
}

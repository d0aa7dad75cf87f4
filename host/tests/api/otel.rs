//! OpenTelemetry export: each record the server writes, once it has ended,
//! reaches an OTLP/HTTP receiver (an axum server here, decoding protobuf
//! with `opentelemetry-proto`, code we did not write) as one span under the
//! GenAI conventions' names — a child of the agent's span when its call
//! carried a `traceparent`, which the record keeps — with no jti or API key
//! in it; and the spans of requests answered before the server stops are
//! sent before it has stopped.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode as HttpStatus, header};
use axum::routing::post;
use mandate_core::{Jti, OrgId};
use mandate_host::otel::Telemetry;
use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue, any_value};
use opentelemetry_proto::tonic::trace::v1::{Span, span::SpanKind, status::StatusCode};
use prost::Message as _;
use reqwest::StatusCode as ApiStatus;

use serde_json::{Value, json};

use crate::helpers::{TestApp, expect_json, expect_problem, text};

/// One export request as the receiver saw it.
struct Export {
    headers: HeaderMap,
    request: ExportTraceServiceRequest,
}

type Exports = Arc<Mutex<Vec<Export>>>;

/// A collector's OTLP/HTTP traces endpoint on 127.0.0.1: every request
/// must be protobuf, and is kept.
async fn receiver() -> (String, Exports) {
    let exports = Exports::default();
    let app = axum::Router::new()
        .route("/v1/traces", post(receive))
        .with_state(exports.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    (base, exports)
}

async fn receive(
    State(exports): State<Exports>,
    headers: HeaderMap,
    body: Bytes,
) -> (HttpStatus, [(header::HeaderName, &'static str); 1], Vec<u8>) {
    let protobuf = headers
        .get(header::CONTENT_TYPE)
        .is_some_and(|v| v == "application/x-protobuf");
    let Some(request) = protobuf
        .then(|| ExportTraceServiceRequest::decode(body).ok())
        .flatten()
    else {
        return (
            HttpStatus::BAD_REQUEST,
            [(header::CONTENT_TYPE, "text/plain")],
            b"not an OTLP protobuf request".to_vec(),
        );
    };
    exports.lock().unwrap().push(Export { headers, request });
    (
        HttpStatus::OK,
        [(header::CONTENT_TYPE, "application/x-protobuf")],
        ExportTraceServiceResponse::default().encode_to_vec(),
    )
}

/// Every span received so far.
fn spans(exports: &Exports) -> Vec<Span> {
    exports
        .lock()
        .unwrap()
        .iter()
        .flat_map(|export| &export.request.resource_spans)
        .flat_map(|resource| &resource.scope_spans)
        .flat_map(|scope| scope.spans.clone())
        .collect()
}

/// Flushes and polls until `count` spans have arrived; at most 10 s.
async fn wait_for_spans(telemetry: &Telemetry, exports: &Exports, count: usize) -> Vec<Span> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        telemetry.flush().await.unwrap();
        let received = spans(exports);
        if received.len() >= count {
            return received;
        }
        assert!(
            Instant::now() < deadline,
            "{} of {count} spans arrived",
            received.len()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn string(value: &str) -> Option<AnyValue> {
    Some(AnyValue {
        value: Some(any_value::Value::StringValue(value.to_owned())),
    })
}

fn attribute<'a>(attributes: &'a [KeyValue], key: &str) -> Option<&'a any_value::Value> {
    attributes
        .iter()
        .find(|kv| kv.key == key)
        .and_then(|kv| kv.value.as_ref())
        .and_then(|v| v.value.as_ref())
}

fn text_attribute<'a>(attributes: &'a [KeyValue], key: &str) -> Option<&'a str> {
    match attribute(attributes, key) {
        Some(any_value::Value::StringValue(text)) => Some(text),
        _ => None,
    }
}

/// Every string in an attribute value, however nested.
fn strings(value: &any_value::Value, into: &mut Vec<String>) {
    match value {
        any_value::Value::StringValue(text) => into.push(text.clone()),
        any_value::Value::ArrayValue(array) => {
            for value in array.values.iter().filter_map(|v| v.value.as_ref()) {
                strings(value, into);
            }
        }
        any_value::Value::KvlistValue(list) => {
            for kv in &list.values {
                into.push(kv.key.clone());
                if let Some(value) = kv.value.as_ref().and_then(|v| v.value.as_ref()) {
                    strings(value, into);
                }
            }
        }
        _ => {}
    }
}

/// The organisation the admin key's tokens are issued in.
async fn default_org(app: &TestApp) -> OrgId {
    let orgs = expect_json(
        app.get_auth("/v1/orgs", &app.admin_key).await,
        ApiStatus::OK,
    )
    .await;
    let default = orgs["orgs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|org| org["name"] == "default")
        .unwrap();
    OrgId::parse(text(&default["org_id"])).unwrap()
}

/// The agent's own span, as its `traceparent` names it.
const TRACE_ID: [u8; 16] = *b"\x4b\xf9\x2f\x35\x77\xb3\x4d\xa6\xa3\xce\x92\x9d\x0e\x0e\x47\x36";
const AGENT_SPAN: [u8; 8] = *b"\x00\xf0\x67\xaa\x0b\xa9\x02\xb7";
const TRACEPARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

/// The span whose `mandate.aar_id` is `aar_id`.
fn span_of<'a>(spans: &'a [Span], aar_id: &str) -> &'a Span {
    spans
        .iter()
        .find(|span| text_attribute(&span.attributes, "mandate.aar_id") == Some(aar_id))
        .unwrap_or_else(|| panic!("no span for {aar_id}"))
}

/// Unix nanoseconds of an RFC 3339 time the API answered.
fn nanos(time: &Value) -> u64 {
    let at =
        time::OffsetDateTime::parse(text(time), &time::format_description::well_known::Rfc3339)
            .unwrap();
    u64::try_from(at.unix_timestamp_nanos()).unwrap()
}

#[tokio::test]
async fn a_record_is_a_genai_execute_tool_span_under_the_agents_span() {
    let (collector, exports) = receiver().await;
    let mut telemetry: Option<Telemetry> = None;
    let app = TestApp::spawn_inspecting(
        tempfile::tempdir().unwrap(),
        |config| {
            config.otel.endpoint = Some(format!("{collector}/"));
            config.otel.service_name = "mandate-test".to_owned();
            config.otel.headers.insert(
                "authorization".to_owned(),
                "Bearer collector-token".to_owned(),
            );
        },
        |state| telemetry = state.telemetry.clone(),
    )
    .await;
    let telemetry = telemetry.expect("[otel] endpoint set: the exporter runs");
    let token = app.root("research-bot", &["crm:*"], &["read"]).await;
    let jti = text(&token["jti"]).to_owned();

    // An action recorded with the agent's trace context: its span is a
    // child of the agent's span, and the record keeps the context.
    let recorded = expect_json(
        app.client
            .post(app.url("/v1/vat/record/action"))
            .header("traceparent", TRACEPARENT)
            .json(&json!({
                "vat_jti": jti, "action": "read", "resource": "crm:contacts",
                "result": "success", "spend_usd": 1.25,
            }))
            .send()
            .await
            .unwrap(),
        ApiStatus::CREATED,
    )
    .await;
    let aar_id = text(&recorded["aar_id"]).to_owned();
    let stored = app.with_database(|conn| {
        conn.query_row(
            "SELECT traceparent FROM records WHERE aar_id = ?1",
            [aar_id.as_str()],
            |row| row.get::<_, Option<String>>(0),
        )
        .unwrap()
    });
    assert_eq!(stored.as_deref(), Some(TRACEPARENT));
    // A trace context that does not parse is ignored, as W3C asks.
    let ignored = expect_json(
        app.client
            .post(app.url("/v1/vat/record/action"))
            .header(
                "traceparent",
                "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            )
            .json(&json!({
                "vat_jti": jti, "action": "read", "resource": "crm:contacts", "result": "success",
            }))
            .send()
            .await
            .unwrap(),
        ApiStatus::CREATED,
    )
    .await;
    // Authorized now, completed later: one span from one to the other,
    // sent once the record ends.
    let pending = expect_json(
        app.post(
            "/v1/vat/authorize",
            &json!({"vat_jti": jti, "action": "read", "resource": "crm:contacts"}),
        )
        .await,
        ApiStatus::OK,
    )
    .await;
    let pending_id = text(&pending["aar_id"]).to_owned();
    tokio::time::sleep(Duration::from_millis(20)).await;
    let completed = expect_json(
        app.post(
            &format!("/v1/vat/aar/{pending_id}/complete"),
            &json!({"result": "timeout"}),
        )
        .await,
        ApiStatus::OK,
    )
    .await;

    let received = wait_for_spans(&telemetry, &exports, 3).await;
    assert_eq!(received.len(), 3, "one span per record, once it ended");
    let span = span_of(&received, &aar_id);
    assert_eq!(span.name, "execute_tool read");
    assert_eq!(span.kind, SpanKind::Internal as i32);
    assert_eq!(span.trace_id, TRACE_ID);
    assert_eq!(span.parent_span_id, AGENT_SPAN);
    assert_eq!(span.span_id.len(), 8);
    assert_ne!(span.span_id, AGENT_SPAN);
    assert_eq!(
        span.start_time_unix_nano,
        nanos(&created_at(&app, &aar_id).await)
    );
    assert_eq!(
        span.status.as_ref().map_or(0, |s| s.code),
        StatusCode::Unset as i32
    );
    let org_id = default_org(&app).await;
    let jth = Jti::parse(&jti).unwrap().hash();
    let attributes = &span.attributes;
    for (key, value) in [
        ("gen_ai.operation.name", "execute_tool"),
        ("gen_ai.tool.name", "read"),
        ("gen_ai.agent.id", "research-bot"),
        ("mandate.aar_id", aar_id.as_str()),
        ("mandate.provenance_ref", text(&token["provenance_ref"])),
        ("mandate.resource", "crm:contacts"),
        ("mandate.org_id", org_id.as_str()),
        ("mandate.token.jth", jth.as_str()),
        ("mandate.outcome", "completed"),
        ("mandate.result", "success"),
    ] {
        assert_eq!(text_attribute(attributes, key), Some(value), "{key}");
    }
    assert_eq!(
        attribute(attributes, "mandate.spend_usd"),
        Some(&any_value::Value::DoubleValue(1.25))
    );
    for absent in [
        "error.type",
        "mandate.deny_reason",
        "gen_ai.tool.call.id",
        "gen_ai.agent.name",
    ] {
        assert_eq!(attribute(attributes, absent), None, "{absent}");
    }
    let root = span_of(&received, text(&ignored["aar_id"]));
    assert!(root.parent_span_id.is_empty(), "a root of its own");
    assert_ne!(root.trace_id, TRACE_ID);
    let timed_out = span_of(&received, &pending_id);
    assert_eq!(
        timed_out.start_time_unix_nano,
        nanos(&created_at(&app, &pending_id).await)
    );
    assert_eq!(
        timed_out.end_time_unix_nano,
        nanos(&completed["completed_at"])
    );
    assert!(timed_out.end_time_unix_nano > timed_out.start_time_unix_nano);
    assert_eq!(
        text_attribute(&timed_out.attributes, "error.type"),
        Some("timeout")
    );
    assert_eq!(
        timed_out.status.as_ref().map(|s| s.code),
        Some(StatusCode::Error as i32)
    );
    {
        let exports = exports.lock().unwrap();
        let export = &exports[0];
        assert_eq!(
            export.headers.get("authorization").unwrap(),
            "Bearer collector-token"
        );
        let resource = export.request.resource_spans[0].resource.as_ref().unwrap();
        assert!(
            resource
                .attributes
                .iter()
                .any(|kv| kv.key == "service.name" && kv.value == string("mandate-test"))
        );
        let scope = &export.request.resource_spans[0].scope_spans[0];
        assert_eq!(scope.scope.as_ref().unwrap().name, "mandate");
        assert_eq!(scope.schema_url, mandate_host::otel::SCHEMA_URL);
    }

    // Denied, and the server stopped at once: the span is sent before the
    // server has stopped.
    let denied = expect_problem(
        app.act(&jti, "write", "crm:contacts", "success").await,
        ApiStatus::FORBIDDEN,
        "action_not_permitted",
    )
    .await;
    let admin_key = app.admin_key.clone();
    app.stop().await;
    let received = spans(&exports);
    assert_eq!(received.len(), 4);
    let span = span_of(&received, text(&denied["aar_id"]));
    assert_eq!(span.name, "execute_tool write");
    assert_eq!(
        span.status.as_ref().map(|s| s.code),
        Some(StatusCode::Error as i32)
    );
    for (key, value) in [
        ("error.type", "action_not_permitted"),
        ("mandate.outcome", "denied"),
        ("mandate.deny_reason", "action_not_permitted"),
    ] {
        assert_eq!(text_attribute(&span.attributes, key), Some(value), "{key}");
    }

    // No jti and no API key anywhere in what was exported.
    let mut exported = Vec::new();
    for export in exports.lock().unwrap().iter() {
        for resource in &export.request.resource_spans {
            let resource_attributes = resource.resource.iter().flat_map(|r| &r.attributes);
            let span_attributes = resource
                .scope_spans
                .iter()
                .flat_map(|scope| &scope.spans)
                .flat_map(|span| &span.attributes);
            for kv in resource_attributes.chain(span_attributes) {
                exported.push(kv.key.clone());
                if let Some(value) = kv.value.as_ref().and_then(|v| v.value.as_ref()) {
                    strings(value, &mut exported);
                }
            }
        }
    }
    assert!(!exported.is_empty());
    for value in &exported {
        assert!(!value.contains(jti.as_str()) && !value.contains(&admin_key));
        // The jth is base64url, where `mk_` may occur by chance.
        if value != jth.as_str() {
            assert!(
                !value.contains("vat_") && !value.contains("mk_"),
                "exported: {value}"
            );
        }
    }
}

#[tokio::test]
async fn a_batch_exports_one_span_per_record_under_the_calls_trace() {
    let (collector, exports) = receiver().await;
    let mut telemetry: Option<Telemetry> = None;
    let app = TestApp::spawn_inspecting(
        tempfile::tempdir().unwrap(),
        |config| config.otel.endpoint = Some(format!("{collector}/")),
        |state| telemetry = state.telemetry.clone(),
    )
    .await;
    let telemetry = telemetry.expect("[otel] endpoint set: the exporter runs");
    let token = app.root("flushing-bot", &["crm:*"], &["read"]).await;
    let committed = expect_json(
        app.client
            .post(app.url("/v1/vat/record/actions"))
            .header("traceparent", TRACEPARENT)
            .bearer_auth(text(&token["compact_jwt"]))
            .json(&json!({"records": [
                {"action": "read", "resource": "crm:a", "result": "success"},
                {"action": "write", "resource": "crm:a", "result": "success"},
                {"action": "read", "resource": "crm:b", "result": "error"},
            ]}))
            .send()
            .await
            .unwrap(),
        ApiStatus::OK,
    )
    .await;
    let results = committed["results"].as_array().unwrap();
    let received = wait_for_spans(&telemetry, &exports, 3).await;
    assert_eq!(received.len(), 3, "one span per record, as one by one");
    for (result, (name, outcome)) in results.iter().zip([
        ("execute_tool read", "completed"),
        ("execute_tool write", "denied"),
        ("execute_tool read", "completed"),
    ]) {
        let span = span_of(&received, text(&result["aar_id"]));
        assert_eq!(span.name, name);
        assert_eq!(span.trace_id, TRACE_ID);
        assert_eq!(span.parent_span_id, AGENT_SPAN);
        assert_eq!(
            text_attribute(&span.attributes, "mandate.outcome"),
            Some(outcome)
        );
    }
    let failed = span_of(&received, text(&results[2]["aar_id"]));
    assert_eq!(
        text_attribute(&failed.attributes, "error.type"),
        Some("error")
    );
}

/// When a record was created, as the API shows it.
async fn created_at(app: &TestApp, aar_id: &str) -> Value {
    let record = expect_json(
        app.get_auth(&format!("/v1/vat/aar/{aar_id}"), &app.admin_key)
            .await,
        ApiStatus::OK,
    )
    .await;
    record["created_at"].clone()
}

#[tokio::test]
async fn without_an_endpoint_nothing_is_started() {
    let mut started = true;
    let app = TestApp::spawn_inspecting(
        tempfile::tempdir().unwrap(),
        |_| {},
        |state| started = state.telemetry.is_some(),
    )
    .await;
    assert!(!started);
    app.stop().await;
}

#[tokio::test]
async fn a_bad_endpoint_or_header_stops_the_start() {
    let dir = tempfile::tempdir().unwrap();
    for edit in [
        (|c: &mut mandate_host::config::Config| {
            c.otel.endpoint = Some("collector:4318".to_owned());
        }) as fn(&mut _),
        |c| {
            c.otel.endpoint = Some("http://127.0.0.1:4318".to_owned());
            c.otel
                .headers
                .insert("authorization".to_owned(), "Bearer a\nb".to_owned());
        },
    ] {
        let mut config = mandate_host::config::Config::for_test(dir.path());
        edit(&mut config);
        let error = mandate_host::AppState::open(config).unwrap_err();
        let message = format!("{error:#}");
        assert!(message.contains("[otel]"), "{message}");
        assert!(!message.contains("Bearer"), "{message}");
    }
}

//! Hostile bodies at every POST route the served OpenAPI document lists,
//! with and without an API key: field names and values of multi-byte text
//! at lengths around every bound where Mandate cuts text, in every position
//! (top level, `constraints`, `policy`, `evidence` and deeper), lone
//! surrogates, wrong types, huge numbers, deep nesting and broken JSON. No
//! answer may be a 5xx, and every error must be a problem body.
//!
//! The corpus is a fixed table, so a failure names a body that fails again.
//! Each route's base body is drawn from its schema in the document, so a
//! new route is covered without touching this file. Routes the document
//! says need an API key refuse before reading the body when it is missing,
//! so they get every body with the key and an eighth of them without.

use std::sync::Arc;

use reqwest::StatusCode;
use serde_json::{Map, Value, json};
use tokio::sync::Semaphore;

use crate::assurance::answering;
use crate::helpers::{TestApp, expect_json, text};

/// Text lengths, in characters, around every bound where text is cut: a
/// plugin's refusal reason (200) and a parse error's detail (300).
const LENGTHS: [usize; 8] = [1, 199, 200, 201, 299, 300, 301, 1000];

/// Text of several bytes per character: 2-, 3- and 4-byte UTF-8, a
/// combining mark, a right-to-left mark, the replacement character, and
/// all of them mixed.
const UNITS: [&str; 7] = [
    "é",
    "中",
    "😀",
    "e\u{301}",
    "\u{200f}",
    "\u{fffd}",
    "aé中😀\u{301}\u{200f}\u{fffd}",
];

/// JSON values spliced in as text: wrong types, numbers no type holds, and
/// strings serde_json must refuse or decode (lone surrogates, NUL).
const RAW_VALUES: [&str; 26] = [
    "null",
    "true",
    "0",
    "-1",
    "1.5",
    "[]",
    "{}",
    "\"\"",
    "[1, \"a\", null]",
    "{\"a\": [{}]}",
    "1e999",
    "-1e999",
    "1e-999",
    "123456789012345678901234567890",
    "18446744073709551616",
    "-9223372036854775809",
    "0.0000001",
    "1.00000000000000000000001",
    "\"\\ud800\"",
    "\"\\udfff\"",
    "\"\\ud800\\u0041\"",
    "\"\\ud83d\\ude00\"",
    "\"\\u0000\"",
    "\"\\ufffe\"",
    "\"\\ud800\\ud800\\ud800\"",
    "\"x\\ud800\"",
];

/// Member names spliced in as text: lone and doubled surrogates.
const RAW_NAMES: [&str; 4] = [
    "\"\\ud800\"",
    "\"\\udc00x\"",
    "\"\\ud800\\ud800\"",
    "\"\\u0000\"",
];

/// Nesting depths around serde_json's limit of 128, and far beyond it.
const DEPTHS: [usize; 3] = [128, 129, 10_000];

/// The nested objects of request bodies, whose member names get two hostile
/// strings per length (the body itself gets all of them, other places one
/// per length).
const NESTED: [&str; 3] = ["/constraints", "/policy", "/evidence"];

/// Stands in for spliced text while a body is still a `Value`.
const MARKER: &str = "\u{1}hostile\u{1}";

/// `len` characters of `unit`, repeated.
fn repeated(unit: &str, len: usize) -> String {
    unit.chars().cycle().take(len).collect()
}

/// Every hostile string: each unit at each length, and a 4-byte character
/// after one to three ASCII letters, so a cut by bytes lands at every
/// offset inside it.
fn hostile_strings() -> Vec<String> {
    let mut strings = Vec::new();
    for len in LENGTHS {
        for unit in UNITS {
            strings.push(repeated(unit, len));
        }
        for prefix in 1..=3 {
            strings.push(format!("{}{}", "a".repeat(prefix), repeated("😀", len - 1)));
        }
    }
    strings
}

/// `per_length` hostile strings of each length, the units turning with
/// `seed`.
fn some_hostile_strings(seed: usize, per_length: usize) -> Vec<String> {
    let mut strings = Vec::new();
    for (index, len) in LENGTHS.iter().enumerate() {
        for step in 0..per_length {
            strings.push(repeated(
                UNITS[(seed + index + 3 * step) % UNITS.len()],
                *len,
            ));
        }
    }
    strings
}

fn deep_lists(depth: usize) -> String {
    format!("{}{}", "[".repeat(depth), "]".repeat(depth))
}

fn deep_objects(depth: usize) -> String {
    format!("{}1{}", "{\"a\":".repeat(depth), "}".repeat(depth))
}

/// Ids of real objects, so bodies and paths get past lookups.
struct Ids {
    jti: String,
    aar_id: String,
    provenance_ref: String,
    approval_id: String,
}

/// Evidence of the shape identity verifiers take.
fn evidence() -> Value {
    json!({"subject": "person-42", "captures": [{"modality": "face_liveness", "score": 0.97}]})
}

/// A plausible value for a schema of the document.
fn sample(document: &Value, schema: &Value, ids: &Ids) -> Value {
    if let Some(reference) = schema["$ref"].as_str() {
        let name = reference
            .strip_prefix("#/components/schemas/")
            .unwrap_or_else(|| panic!("{reference} is not a schema reference"));
        return match name {
            "AgentId" => json!("hostile-bot"),
            "Action" => json!("read"),
            "Resource" => json!("crm:a"),
            "ResourcePattern" => json!("crm:*"),
            "Framework" => json!("soc2"),
            "Email" => json!("dev@example.com"),
            "Sha256Ref" => json!(format!("sha256:{}", "0".repeat(64))),
            "Jti" => json!(ids.jti),
            "AarId" => json!(ids.aar_id),
            "ProvenanceRef" => json!(ids.provenance_ref),
            _ => sample(document, &document["components"]["schemas"][name], ids),
        };
    }
    let options = schema["oneOf"].as_array().or(schema["anyOf"].as_array());
    if let Some(option) = options
        .into_iter()
        .flatten()
        .find(|option| option["type"] != "null")
    {
        return sample(document, option, ids);
    }
    if let Some(first) = schema["enum"]
        .as_array()
        .and_then(|values| values.iter().find(|v| !v.is_null()))
    {
        return first.clone();
    }
    let kind = match &schema["type"] {
        Value::Array(kinds) => kinds.iter().find(|k| *k != "null").cloned(),
        other => Some(other.clone()),
    };
    match kind.as_ref().and_then(Value::as_str) {
        Some("object") => {
            let mut members = Map::new();
            for (name, property) in schema["properties"].as_object().into_iter().flatten() {
                let value = match name.as_str() {
                    "verifier" => json!("refuser"),
                    "evidence" => evidence(),
                    _ => sample(document, property, ids),
                };
                members.insert(name.clone(), value);
            }
            Value::Object(members)
        }
        Some("array") => json!([sample(document, &schema["items"], ids)]),
        Some("integer" | "number") => json!(1),
        Some("boolean") => json!(true),
        Some("string") => json!("x"),
        _ => Value::Null,
    }
}

/// A path template with its parameters filled with real ids.
fn fill_path(template: &str, ids: &Ids) -> String {
    let mut path = String::new();
    for (index, part) in template.split(['{', '}']).enumerate() {
        if index % 2 == 0 {
            path.push_str(part);
            continue;
        }
        path.push_str(match part {
            "aar_id" => &ids.aar_id,
            "jti" => &ids.jti,
            "provenance_ref" => &ids.provenance_ref,
            "agent_id" => "hostile-bot",
            "approval_id" => &ids.approval_id,
            "webhook_id" => "wh_01kaqv3f00000000000000000a",
            other => panic!("no sample for the path parameter {other}"),
        });
    }
    path
}

/// JSON pointers of every node of `value`, with their depth.
fn positions(value: &Value, pointer: String, depth: usize, out: &mut Vec<(String, usize)>) {
    match value {
        Value::Object(members) => {
            for (name, member) in members {
                positions(member, format!("{pointer}/{name}"), depth + 1, out);
            }
        }
        Value::Array(items) => {
            for (index, item) in items.iter().enumerate() {
                positions(item, format!("{pointer}/{index}"), depth + 1, out);
            }
        }
        _ => {}
    }
    out.push((pointer, depth));
}

/// `base` with the node at `pointer` replaced by `raw` JSON text.
fn splice_value(base: &Value, pointer: &str, raw: &str) -> Vec<u8> {
    let mut body = base.clone();
    *body.pointer_mut(pointer).unwrap() = json!(MARKER);
    let marker = json!(MARKER).to_string();
    body.to_string().replacen(&marker, raw, 1).into_bytes()
}

/// `base` with a member named by `raw` JSON text added to the object at
/// `pointer`.
fn splice_name(base: &Value, pointer: &str, raw: &str) -> Vec<u8> {
    let mut body = base.clone();
    body.pointer_mut(pointer)
        .and_then(Value::as_object_mut)
        .unwrap()
        .insert(MARKER.to_owned(), json!(1));
    let marker = json!(MARKER).to_string();
    body.to_string().replacen(&marker, raw, 1).into_bytes()
}

/// Every hostile body for a route whose well-formed body is `base`.
fn corpus(base: &Value) -> Vec<Vec<u8>> {
    let all = hostile_strings();
    let mut bodies: Vec<Vec<u8>> = vec![base.to_string().into_bytes()];
    let mut nodes = Vec::new();
    positions(base, String::new(), 0, &mut nodes);
    for (seed, (pointer, depth)) in nodes.iter().enumerate() {
        let node = base.pointer(pointer).unwrap();
        if node.is_object() {
            let names = match pointer.as_str() {
                "" => all.clone(),
                nested if NESTED.contains(&nested) => some_hostile_strings(seed, 2),
                _ => some_hostile_strings(seed, 1),
            };
            for (index, name) in names.iter().enumerate() {
                let mut body = base.clone();
                let value = if index % 2 == 0 {
                    json!(1)
                } else {
                    json!(name)
                };
                body.pointer_mut(pointer)
                    .and_then(Value::as_object_mut)
                    .unwrap()
                    .insert(name.clone(), value);
                bodies.push(body.to_string().into_bytes());
            }
            for raw in RAW_NAMES {
                bodies.push(splice_name(base, pointer, raw));
            }
        } else if node.is_string() {
            for string in some_hostile_strings(seed, 1) {
                let mut body = base.clone();
                *body.pointer_mut(pointer).unwrap() = json!(string);
                bodies.push(body.to_string().into_bytes());
            }
        }
        // Wrong types, huge numbers and deep nesting replace the members of
        // the body (half of the raw values each, in turn) and of its nested
        // objects and lists (a quarter, and one nesting).
        let share = match depth {
            1 => 2,
            2 => 4,
            _ => continue,
        };
        for raw in RAW_VALUES.iter().skip(seed % share).step_by(share) {
            bodies.push(splice_value(base, pointer, raw));
        }
        for (index, depth) in DEPTHS.iter().enumerate() {
            if share == 2 || index == seed % DEPTHS.len() {
                bodies.push(splice_value(base, pointer, &deep_lists(*depth)));
                bodies.push(splice_value(base, pointer, &deep_objects(*depth)));
            }
        }
    }
    let whole: [&[u8]; 16] = [
        b"",
        b" ",
        b"null",
        b"[]",
        b"[{}]",
        b"1",
        "\"é\"".as_bytes(),
        b"{",
        b"{\"a\":",
        "\u{feff}{}".as_bytes(),
        b"{\"\xff\xfe\": 1}",
        b"{\"agent_id\": \"\xc3\"}",
        b"{\"agent_id\": \"a\", \"agent_id\": \"b\"}",
        b"{\"\\ud800\": \"\\udfff\"}",
        b"{}{}",
        b"\x00",
    ];
    bodies.extend(whole.iter().map(|body| body.to_vec()));
    for depth in DEPTHS {
        bodies.push(deep_lists(depth).into_bytes());
        bodies.push(deep_objects(depth).into_bytes());
    }
    bodies
}

/// What is wrong with an answer, if anything.
async fn judge(response: reqwest::Response) -> Option<String> {
    let status = response.status();
    let content_type = response
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    let text = response.text().await.unwrap_or_default();
    if status.is_server_error() {
        return Some(format!("{status}: {text}"));
    }
    if status.is_client_error() {
        if content_type != "application/problem+json" {
            return Some(format!("{status} as {content_type}: {text}"));
        }
        let problem: Value = serde_json::from_str(&text).unwrap_or_default();
        if problem["status"] != status.as_u16() || !problem["code"].is_string() {
            return Some(format!("{status}, not a problem body: {text}"));
        }
    }
    None
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_hostile_body_gets_a_server_error_at_any_post_route() {
    // A verifier whose every refusal is long enough to be cut, with a cut
    // by bytes falling inside a character.
    let fixtures = tempfile::tempdir().unwrap();
    let refusal = json!({"verified": false, "reason": format!("a{}", "é".repeat(201))});
    let refuser = answering(fixtures.path(), "refuser", &refusal.to_string());
    let app = TestApp::spawn_with(move |config| {
        config.verifier = vec![mandate_host::config::Verifier::Plugin {
            name: "refuser".into(),
            module: refuser,
            fuel: 1_000_000,
            memory_mib: 4,
            timeout_ms: 1_000,
        }];
    })
    .await;
    let root = app
        .root("hostile-bot", &["crm:*"], &["read", "delegate"])
        .await;
    let pending = expect_json(
        app.post(
            "/v1/vat/authorize",
            &json!({"vat_jti": root["jti"], "action": "read", "resource": "crm:a"}),
        )
        .await,
        StatusCode::OK,
    )
    .await;
    let guarded = app
        .issue(json!({
            "developer_email": "dev@example.com",
            "agent_id": "guarded-bot",
            "resources": ["crm:*"],
            "actions": ["pay"],
            "constraints": {"require_approval": {"actions": ["pay"]}},
        }))
        .await;
    let awaiting = expect_json(
        app.post(
            "/v1/vat/authorize",
            &json!({"vat_jti": guarded["jti"], "action": "pay", "resource": "crm:a"}),
        )
        .await,
        StatusCode::ACCEPTED,
    )
    .await;
    let ids = Ids {
        jti: text(&root["jti"]).to_owned(),
        aar_id: text(&pending["aar_id"]).to_owned(),
        provenance_ref: text(&root["provenance_ref"]).to_owned(),
        approval_id: text(&awaiting["approval"]["approval_id"]).to_owned(),
    };
    let document = expect_json(
        app.client
            .get(app.url("/v1/openapi.json"))
            .send()
            .await
            .unwrap(),
        StatusCode::OK,
    )
    .await;

    let mut routes = Vec::new();
    for (template, item) in document["paths"].as_object().unwrap() {
        let Some(operation) = item.get("post") else {
            continue;
        };
        let schema = &operation["requestBody"]["content"]["application/json"]["schema"];
        let base = if schema.is_null() {
            json!({})
        } else {
            sample(&document, schema, &ids)
        };
        // Without a key such a route refuses before it reads the body, so a
        // sample of the bodies is enough there.
        let key_required = operation["security"]
            .as_array()
            .is_some_and(|ways| !ways.iter().any(|way| way == &json!({})));
        routes.push((fill_path(template, &ids), corpus(&base), key_required));
    }
    assert!(routes.len() >= 9, "the document lists every POST route");

    // A fresh connection per request: the server closes a connection whose
    // body it answered without reading (no API key), and a pooled one could
    // be reused just as it closes, failing in the client rather than the server.
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(0)
        .build()
        .unwrap();
    let in_flight = Arc::new(Semaphore::new(8));
    let mut requests = tokio::task::JoinSet::new();
    let mut sent = 0;
    for (path, bodies, key_required) in routes {
        let url = app.url(&path);
        for (index, body) in bodies.into_iter().enumerate() {
            let without_key = !key_required || index % 8 == 0;
            let keys = [Some(app.admin_key.clone()), None];
            for key in keys.into_iter().take(if without_key { 2 } else { 1 }) {
                let permit = in_flight.clone().acquire_owned().await.unwrap();
                let mut request = client
                    .post(&url)
                    .header("content-type", "application/json")
                    .body(body.clone());
                if let Some(key) = &key {
                    request = request.bearer_auth(key);
                }
                let label = format!(
                    "POST {path} {}, {} bytes: {}",
                    if key.is_some() {
                        "with key"
                    } else {
                        "without key"
                    },
                    body.len(),
                    String::from_utf8_lossy(&body)
                        .chars()
                        .take(160)
                        .collect::<String>()
                );
                sent += 1;
                requests.spawn(async move {
                    let _permit = permit;
                    // A server that answers before reading a body may reset
                    // the connection under the client's feet; only a request
                    // that never gets an answer is a fault.
                    let mut fault = None;
                    for _ in 0..3 {
                        match request.try_clone().unwrap().send().await {
                            Ok(response) => {
                                fault = judge(response).await;
                                break;
                            }
                            Err(error) => fault = Some(format!("no answer: {error:?}")),
                        }
                    }
                    fault.map(|fault| format!("{label}\n  → {fault}"))
                });
            }
        }
    }
    let mut faults = Vec::new();
    while let Some(fault) = requests.join_next().await {
        faults.extend(fault.unwrap());
    }
    assert!(
        faults.is_empty(),
        "{} of {sent} answers are wrong; at most ten of them:\n{}",
        faults.len(),
        faults
            .iter()
            .take(10)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
}

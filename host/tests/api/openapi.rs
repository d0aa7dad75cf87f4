//! The served OpenAPI document against the server and against core: each
//! operation's declared credentials match what its door takes, and every
//! number of `mandate_core::limits` the document states is core's. (The
//! validators written by others, openapi-spec-validator and Redocly, run on
//! the same document in `cargo xtask test`.)

use mandate_core::limits;
use mandate_host::api::MAX_BODY_BYTES;
use mandate_host::config::AgentAuth;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use crate::helpers::{TestApp, expect_json, text};

async fn served_document(app: &TestApp) -> Value {
    expect_json(
        app.client
            .get(app.url("/v1/openapi.json"))
            .send()
            .await
            .unwrap(),
        StatusCode::OK,
    )
    .await
}

/// Every operation: `(method, path, operation)`.
fn operations(document: &Value) -> Vec<(&str, &str, &Value)> {
    let mut all = Vec::new();
    for (path, item) in document["paths"].as_object().unwrap() {
        for (method, operation) in item.as_object().unwrap() {
            all.push((method.as_str(), path.as_str(), operation));
        }
    }
    all
}

/// Whether a `security` list lets a request with no credential through.
fn open(security: &[Value]) -> bool {
    security.is_empty()
        || security
            .iter()
            .any(|requirement| requirement.as_object().unwrap().is_empty())
}

#[tokio::test]
async fn every_operation_declares_the_credentials_its_door_takes() {
    let app = TestApp::spawn().await;
    let document = served_document(&app).await;
    assert_eq!(document["servers"], json!([{ "url": "/" }]));
    let schemes = document["components"]["securitySchemes"]
        .as_object()
        .unwrap();
    assert_eq!(schemes["api_key"]["scheme"], "bearer");
    assert_eq!(schemes["agent_token"]["scheme"], "bearer");
    // RFC 9449 §7.1: the token as `Authorization: DPoP`, its proof as `DPoP`.
    assert_eq!(schemes["dpop_token"]["type"], "http");
    assert_eq!(schemes["dpop_token"]["scheme"], "DPoP");
    assert_eq!(schemes["dpop_proof"]["type"], "apiKey");
    assert_eq!(schemes["dpop_proof"]["in"], "header");
    assert_eq!(schemes["dpop_proof"]["name"], "DPoP");
    let mut api_key_only = 0;
    for (method, path, operation) in operations(&document) {
        let security = operation["security"]
            .as_array()
            .unwrap_or_else(|| panic!("{method} {path} declares no security"));
        for name in security.iter().flat_map(|r| r.as_object().unwrap().keys()) {
            assert!(schemes.contains_key(name), "{method} {path}: {name}");
        }
        let closed = !open(security);
        let key_or_session = [
            json!({"api_key": []}),
            json!({"consent_session": [], "consent_csrf": []}),
        ];
        if closed && security != &[json!({"api_key": []})] && security != &key_or_session {
            // The agent calls read their body before the token: a request
            // without one is refused for the body first.
            continue;
        }
        let url = app.url(&path.replace(['{', '}'], ""));
        let method = Method::from_bytes(method.to_uppercase().as_bytes()).unwrap();
        let status = app
            .client
            .request(method, url)
            .send()
            .await
            .unwrap()
            .status();
        if closed {
            api_key_only += 1;
            assert_eq!(status, StatusCode::UNAUTHORIZED, "{path} took no API key");
        } else {
            assert_ne!(status, StatusCode::UNAUTHORIZED, "{path} is declared open");
        }
    }
    assert_eq!(api_key_only, 49);
}

#[tokio::test]
async fn the_document_follows_the_deployment() {
    let app = TestApp::spawn_with(|config| {
        config.agent_auth = AgentAuth::Bearer;
        config.public_url = Some("https://mandate.example/prefix/".to_owned());
        config.trusted_proxies = vec!["127.0.0.1".parse().unwrap()];
    })
    .await;
    let document = served_document(&app).await;
    assert_eq!(
        document["servers"],
        json!([{ "url": "https://mandate.example/prefix" }])
    );
    let token = json!([{"agent_token": []}, {"dpop_proof": [], "dpop_token": []}]);
    for path in [
        "/v1/vat/record/action",
        "/v1/vat/record/actions",
        "/v1/vat/authorize",
        "/v1/vat/aar/{aar_id}/complete",
    ] {
        assert_eq!(document["paths"][path]["post"]["security"], token, "{path}");
    }
    assert_eq!(
        document["paths"]["/metrics"]["get"]["security"],
        json!([{"api_key": []}])
    );
}

/// The schemas of what requests may send: each operation's body, and every
/// schema those refer to.
fn request_schemas(document: &Value) -> Vec<&Value> {
    let mut pending: Vec<&Value> = operations(document)
        .into_iter()
        .filter_map(|(_, _, operation)| operation["requestBody"]["content"].as_object())
        .flat_map(|content| content.values().map(|media| &media["schema"]))
        .collect();
    let mut seen = Vec::new();
    let mut schemas = Vec::new();
    while let Some(schema) = pending.pop() {
        let mut references = Vec::new();
        references_in(schema, &mut references);
        for reference in references {
            let name = reference.trim_start_matches("#/components/schemas/");
            if !seen.contains(&name) {
                seen.push(name);
                pending.push(&document["components"]["schemas"][name]);
            }
        }
        schemas.push(schema);
    }
    schemas
}

fn references_in<'a>(value: &'a Value, found: &mut Vec<&'a str>) {
    match value {
        Value::Object(members) => {
            if let Some(Value::String(reference)) = members.get("$ref") {
                found.push(reference);
            }
            members
                .values()
                .for_each(|member| references_in(member, found));
        }
        Value::Array(items) => items.iter().for_each(|item| references_in(item, found)),
        _ => {}
    }
}

/// The property `name` of every request schema that has one; at least
/// `at_least` of them, so a renamed property cannot pass unchecked.
fn property<'a>(requests: &[&'a Value], name: &str, at_least: usize) -> Vec<&'a Value> {
    let found: Vec<&Value> = requests
        .iter()
        .filter_map(|schema| schema["properties"].get(name))
        .collect();
    assert!(found.len() >= at_least, "{name}: {found:?}");
    found
}

fn number(value: &Value) -> f64 {
    value
        .as_f64()
        .unwrap_or_else(|| panic!("{value} is not a number"))
}

/// The repetitions a pattern allows, `{n}` and `{m,n}` in order.
fn quantifiers(pattern: &str) -> Vec<(usize, usize)> {
    pattern
        .split('{')
        .skip(1)
        .filter_map(|rest| rest.split_once('}'))
        .map(|(inside, _)| match inside.split_once(',') {
            Some((low, high)) => (low.parse().unwrap(), high.parse().unwrap()),
            None => (inside.parse().unwrap(), inside.parse().unwrap()),
        })
        .collect()
}

#[tokio::test]
async fn the_document_states_cores_limits() {
    let app = TestApp::spawn().await;
    let document = served_document(&app).await;
    let schema = |name: &str| &document["components"]["schemas"][name];
    let requests = request_schemas(&document);

    for ttl in property(&requests, "ttl_seconds", 4) {
        assert_eq!(number(&ttl["minimum"]), limits::MIN_TTL_SECONDS as f64);
        assert_eq!(number(&ttl["maximum"]), limits::MAX_TTL_SECONDS as f64);
    }
    assert!(
        text(&schema("IssueL1Request")["properties"]["ttl_seconds"]["description"]).contains(
            &format!(
                "default {}, at most {}",
                limits::DEFAULT_TTL_SECONDS,
                limits::MAX_TTL_SECONDS
            )
        )
    );

    let amounts = [
        property(&requests, "spend_usd", 3),
        property(&requests, "max_spend_usd", 1),
    ];
    for amount in amounts.iter().flatten() {
        assert_eq!(number(&amount["minimum"]), 0.0);
        assert_eq!(number(&amount["maximum"]), limits::MAX_USD as f64);
        assert_eq!(
            number(&amount["multipleOf"]),
            1.0 / limits::MICROS_PER_USD as f64
        );
    }
    let decimals = limits::MICROS_PER_USD.ilog10();
    assert!(
        text(&schema("ConstraintsBody")["properties"]["max_spend_usd"]["description"])
            .contains(&format!("≤ {decimals} decimals"))
    );
    for max_actions in property(&requests, "max_actions", 1) {
        assert_eq!(
            number(&max_actions["maximum"]),
            limits::MAX_ACTIONS_LIMIT as f64
        );
    }

    let lists = [
        property(&requests, "resources", 4),
        property(&requests, "actions", 4),
    ];
    for list in lists.iter().flatten() {
        assert_eq!(number(&list["minItems"]), 1.0);
        assert_eq!(number(&list["maxItems"]), limits::MAX_LIST_LEN as f64);
    }
    for frameworks in property(&requests, "frameworks", 1) {
        assert_eq!(number(&frameworks["maxItems"]), limits::MAX_LIST_LEN as f64);
    }

    for name in ["Resource", "ResourcePattern"] {
        let resource = schema(name);
        assert_eq!(
            number(&resource["maxLength"]),
            limits::MAX_RESOURCE_LEN as f64
        );
        assert_eq!(
            quantifiers(text(&resource["pattern"])),
            [(0, limits::MAX_NAMESPACE_LEN - 1)],
            "{name}"
        );
    }
    for name in ["Action", "Framework"] {
        assert_eq!(
            quantifiers(text(&schema(name)["pattern"])),
            [(0, limits::MAX_NAME_LEN - 1)],
            "{name}"
        );
    }
    assert!(
        text(&schema("Action")["description"])
            .contains(&format!("at most {}", limits::MAX_NAME_LEN))
    );

    let mut agent_patterns = vec![text(&schema("AgentId")["pattern"])];
    for (_, _, operation) in operations(&document) {
        for parameter in operation["parameters"].as_array().into_iter().flatten() {
            if parameter["name"] == "agent_id" && parameter["in"] == "query" {
                agent_patterns.push(text(&parameter["schema"]["pattern"]));
            }
        }
    }
    assert_eq!(agent_patterns.len(), 4);
    for pattern in agent_patterns {
        assert_eq!(
            quantifiers(pattern),
            [(0, limits::MAX_AGENT_ID_LEN - 1)],
            "{pattern}"
        );
    }
    assert!(
        text(&schema("AgentId")["description"])
            .contains(&format!("1–{}", limits::MAX_AGENT_ID_LEN))
    );

    for name in ["Jti", "ProvenanceRef"] {
        // The first character of a ULID is 0-7, the rest any of the alphabet.
        assert_eq!(
            quantifiers(text(&schema(name)["pattern"])),
            [(limits::ULID_LEN - 1, limits::ULID_LEN - 1)],
            "{name}"
        );
    }

    let batch = &schema("RecordActionsRequest")["properties"]["records"];
    assert_eq!(number(&batch["minItems"]), 1.0);
    assert_eq!(number(&batch["maxItems"]), limits::MAX_BATCH_RECORDS as f64);
    assert!(text(&batch["description"]).contains(&format!("1 to {}", limits::MAX_BATCH_RECORDS)));

    assert_eq!(MAX_BODY_BYTES % 1024, 0);
    let body_limit = format!("{} KiB", MAX_BODY_BYTES / 1024);
    let mut stated = 0;
    for (method, path, operation) in operations(&document) {
        if let Some(description) = operation["responses"]["413"]["description"].as_str() {
            assert!(description.contains(&body_limit), "{method} {path}");
            stated += 1;
        }
    }
    assert!(stated > 0);
}

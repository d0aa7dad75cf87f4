//! Organisations tried as a second customer would: another organisation's
//! objects answer exactly like missing ones and change not at all; every
//! role against every API-key operation; per-organisation rate limits and
//! quotas; key management, over the API and by the operator.

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use crate::helpers::{TestApp, expect_json, expect_problem, text};
use crate::process::{Server, admin_key, config_without_limits, operator};

/// One organisation's objects: a root token that delegates, a child, a
/// completed and a pending record, all of agent `shared-bot` (the same id
/// in both organisations) and `only-<name>`.
struct Seeded {
    owner: String,
    root: Value,
    completed: String,
    pending: String,
    key_id: String,
}

async fn seed(app: &TestApp, owner: &str, name: &str) -> Seeded {
    let issue = |agent: &str| {
        json!({
            "developer_email": format!("dev@{name}.test"),
            "agent_id": agent,
            "resources": ["crm:*"],
            "actions": ["read", "delegate"],
        })
    };
    let root = expect_json(
        app.post_auth("/v1/vat/issue/l1", owner, &issue("shared-bot"))
            .await,
        StatusCode::CREATED,
    )
    .await;
    expect_json(
        app.post_auth("/v1/vat/issue/l1", owner, &issue(&format!("only-{name}")))
            .await,
        StatusCode::CREATED,
    )
    .await;
    let jti = text(&root["jti"]);
    let completed = expect_json(
        app.act(jti, "read", "crm:a", "success").await,
        StatusCode::CREATED,
    )
    .await;
    let pending = expect_json(
        app.post(
            "/v1/vat/authorize",
            &json!({"vat_jti": jti, "action": "read", "resource": "crm:b"}),
        )
        .await,
        StatusCode::OK,
    )
    .await;
    let created = expect_json(
        app.post_auth(
            "/v1/keys",
            owner,
            &json!({"role": "auditor", "email": format!("audit@{name}.test")}),
        )
        .await,
        StatusCode::CREATED,
    )
    .await;
    Seeded {
        owner: owner.to_owned(),
        root,
        completed: text(&completed["aar_id"]).to_owned(),
        pending: text(&pending["aar_id"]).to_owned(),
        key_id: text(&created["key_id"]).to_owned(),
    }
}

impl Seeded {
    fn jti(&self) -> &str {
        text(&self.root["jti"])
    }

    fn provenance(&self) -> &str {
        text(&self.root["provenance_ref"])
    }
}

/// Everything `owner` can read of its organisation, to compare before and
/// after the other organisation tried its keys.
async fn snapshot(app: &TestApp, seeded: &Seeded) -> Value {
    let key = &seeded.owner;
    let get = |path: String| async move {
        expect_json(app.get_auth(&path, key).await, StatusCode::OK).await
    };
    json!({
        "records": get("/v1/vat/aar".to_owned()).await,
        "workflows": get("/v1/vat/workflows".to_owned()).await,
        "reputation": get("/v1/vat/reputation/shared-bot".to_owned()).await,
        "token": get(format!("/v1/vat/tokens/{}", seeded.jti())).await,
        "summary": get(format!("/v1/vat/aar/provenance/{}", seeded.provenance())).await,
        "keys": get("/v1/keys".to_owned()).await,
    })
}

fn listed(page: &Value, list: &str, member: &str) -> Vec<String> {
    page[list]
        .as_array()
        .unwrap()
        .iter()
        .map(|item| text(&item[member]).to_owned())
        .collect()
}

#[tokio::test]
async fn another_organisations_objects_answer_like_missing_ones_and_stay_unchanged() {
    let app = TestApp::spawn().await;
    let (_, beta_owner) = app.org("beta").await;
    let alpha = seed(&app, &app.admin_key, "alpha").await;
    let beta = seed(&app, &beta_owner, "beta").await;
    let before = snapshot(&app, &alpha).await;
    let b = &beta.owner;

    // Each read and write that names an object: 404 with the code a missing
    // object of that kind answers with.
    let missing_record = "aar_01kaqv3f00000000000000000a";
    let missing_prov = "prov_01kaqv3f00000000000000000a";
    let missing_jti = "vat_root_01kaqv3f00000000000000000a";
    let cases: Vec<(Method, String, Option<Value>, &str)> = vec![
        (
            Method::GET,
            format!("/v1/vat/aar/{}", alpha.completed),
            None,
            "record_not_found",
        ),
        (
            Method::GET,
            format!("/v1/vat/aar/{missing_record}"),
            None,
            "record_not_found",
        ),
        (
            Method::POST,
            format!("/v1/vat/aar/{}/feedback", alpha.completed),
            Some(json!({"rating": "rejected"})),
            "record_not_found",
        ),
        (
            Method::POST,
            format!("/v1/vat/aar/{missing_record}/feedback"),
            Some(json!({"rating": "rejected"})),
            "record_not_found",
        ),
        (
            Method::GET,
            "/v1/vat/reputation/only-alpha".to_owned(),
            None,
            "agent_not_found",
        ),
        (
            Method::GET,
            "/v1/vat/reputation/nobody".to_owned(),
            None,
            "agent_not_found",
        ),
        (
            Method::GET,
            format!("/v1/vat/aar/provenance/{}", alpha.provenance()),
            None,
            "workflow_not_found",
        ),
        (
            Method::GET,
            format!("/v1/vat/aar/provenance/{missing_prov}"),
            None,
            "workflow_not_found",
        ),
        (
            Method::GET,
            format!("/v1/vat/aar/provenance/{}/graph", alpha.provenance()),
            None,
            "workflow_not_found",
        ),
        (
            Method::GET,
            format!("/v1/vat/tokens/{}", alpha.jti()),
            None,
            "token_not_found",
        ),
        (
            Method::GET,
            format!("/v1/vat/tokens/{missing_jti}"),
            None,
            "token_not_found",
        ),
        (
            Method::POST,
            "/v1/vat/revoke".to_owned(),
            Some(json!({"jti": alpha.jti(), "reason": "hostile"})),
            "token_not_found",
        ),
        (
            Method::POST,
            "/v1/vat/revoke".to_owned(),
            Some(json!({"jti": missing_jti})),
            "token_not_found",
        ),
        (
            Method::DELETE,
            format!("/v1/keys/{}", alpha.key_id),
            None,
            "key_not_found",
        ),
        (
            Method::DELETE,
            "/v1/keys/key_01kaqv3f00000000000000000a".to_owned(),
            None,
            "key_not_found",
        ),
    ];
    let mut answers = std::collections::BTreeMap::new();
    for (method, path, body, code) in cases {
        let response = app.send(method.clone(), &path, b, body.as_ref()).await;
        let problem = expect_problem(response, StatusCode::NOT_FOUND, code).await;
        // The other organisation's object and a missing one read the same,
        // but for the id the detail may name.
        let shape = json!({"title": problem["title"], "type": problem["type"], "status": problem["status"]});
        if let Some(earlier) = answers.insert(code, shape.clone()) {
            assert_eq!(earlier, shape, "{method} {path}");
        }
    }

    // Lists show only the caller's organisation, whatever the filter.
    let records = expect_json(app.get_auth("/v1/vat/aar", b).await, StatusCode::OK).await;
    let mut ids: Vec<String> = records["records"]
        .as_array()
        .unwrap()
        .iter()
        .map(|record| record["aar_id"].as_str().unwrap_or("(left out)").to_owned())
        .collect();
    ids.sort();
    // The pending record was made with a bare `vat_jti`: its aar_id
    // completes it, so a list leaves it out.
    let mut own = vec![beta.completed.clone(), "(left out)".to_owned()];
    own.sort();
    assert_eq!(ids, own);
    for query in [
        format!("provenance_ref={}", alpha.provenance()),
        format!("vat_jti={}", alpha.jti()),
        "agent_id=only-alpha".to_owned(),
    ] {
        let page = expect_json(
            app.get_auth(&format!("/v1/vat/aar?{query}"), b).await,
            StatusCode::OK,
        )
        .await;
        assert_eq!(page["records"], json!([]), "{query}");
        if !query.starts_with("vat_jti") {
            let page = expect_json(
                app.get_auth(&format!("/v1/vat/workflows?{query}"), b).await,
                StatusCode::OK,
            )
            .await;
            assert_eq!(page["workflows"], json!([]), "{query}");
        }
    }
    let workflows = expect_json(app.get_auth("/v1/vat/workflows", b).await, StatusCode::OK).await;
    let provenances = listed(&workflows, "workflows", "provenance_ref");
    assert!(!provenances.contains(&alpha.provenance().to_owned()));
    assert!(provenances.contains(&beta.provenance().to_owned()));
    let keys = expect_json(app.get_auth("/v1/keys", b).await, StatusCode::OK).await;
    assert!(!listed(&keys, "keys", "key_id").contains(&alpha.key_id));

    // The same agent id is two agents: beta's reputation counts beta's
    // records only.
    let reputation = expect_json(
        app.get_auth("/v1/vat/reputation/shared-bot", b).await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(reputation["total_actions"], 2);

    // Nothing of alpha changed: not rated, not revoked, not counted.
    assert_eq!(snapshot(&app, &alpha).await, before);
    expect_json(
        app.post_auth(
            &format!("/v1/vat/aar/{}/feedback", alpha.completed),
            &alpha.owner,
            &json!({"rating": "approved"}),
        )
        .await,
        StatusCode::OK,
    )
    .await;
}

/// An API-key operation, with a body that gets it past its extractors.
struct Operation {
    method: Method,
    path: String,
    body: Option<Value>,
}

fn operation(method: Method, path: impl Into<String>, body: Option<Value>) -> Operation {
    Operation {
        method,
        path: path.into(),
        body,
    }
}

/// Whether a role may call an operation, by DESIGN.md section 8: owner
/// everything of its organisation; developer issues (for its own e-mail),
/// consents to OAuth requests and reads (OAuth grants: its own human's);
/// reviewer reads, rates, revokes (tokens, OAuth grants) and vouches;
/// auditor reads;
/// gateway asks for AuthZEN decisions and nothing else; only the admin key
/// manages organisations and reads the metrics.
fn allowed(role: &str, path: &str, method: &Method) -> bool {
    let read = *method == Method::GET
        && (path.starts_with("/v1/vat/")
            || path.starts_with("/v1/trust/")
            || path.starts_with("/v1/oauth/grants")
            || path == "/v1/me");
    let vouch = path.starts_with("/v1/trust/vouches");
    let issue = path.starts_with("/v1/vat/issue")
        || path == "/v1/vat/auth/capture"
        || path.starts_with("/v1/oauth/requests/");
    let rate = path.ends_with("/feedback");
    let revoke = path == "/v1/vat/revoke"
        || (*method == Method::DELETE && path.starts_with("/v1/oauth/grants/"));
    let admin_only = path.starts_with("/v1/orgs") || path == "/metrics";
    let evaluate = path.starts_with("/v1/access/");
    match role {
        "admin" => true,
        "owner" => !admin_only,
        "developer" => read || issue,
        "reviewer" => read || rate || revoke || vouch,
        "auditor" => read,
        "gateway" => evaluate,
        _ => false,
    }
}

#[tokio::test]
async fn every_role_against_every_api_key_operation() {
    // Metrics open to loopback would answer every caller here.
    let app = TestApp::spawn_with(|config| {
        config.metrics_open_on_loopback = false;
        config.public_url = Some(format!("http://{}", config.listen));
        config.issuer = format!("http://{}", config.listen);
        config.oauth = mandate_host::config::OAuthConfig::for_test();
    })
    .await;
    let (beta_id, beta_owner) = app.org("beta").await;
    let beta = seed(&app, &beta_owner, "beta").await;
    let mut keys = vec![
        ("admin", app.admin_key.clone()),
        ("owner", beta_owner.clone()),
    ];
    for role in ["developer", "reviewer", "auditor", "gateway"] {
        let key = app
            .key(&beta_owner, role, Some(&format!("{role}@beta.test")))
            .await;
        keys.push((role, key));
    }
    let operations = |n: usize| {
        vec![
            operation(
                Method::POST,
                "/v1/vat/issue/l1",
                Some(
                    json!({"developer_email": "developer@beta.test", "agent_id": format!("bot{n}"), "resources": ["crm:*"], "actions": ["read"]}),
                ),
            ),
            operation(Method::POST, "/v1/vat/issue/l2", Some(json!({}))),
            operation(Method::POST, "/v1/vat/auth/capture", Some(json!({}))),
            operation(
                Method::POST,
                format!("/v1/vat/aar/{}/feedback", beta.completed),
                Some(json!({"rating": "flagged"})),
            ),
            operation(Method::GET, "/v1/vat/reputation/shared-bot", None),
            operation(
                Method::GET,
                format!("/v1/vat/aar/provenance/{}", beta.provenance()),
                None,
            ),
            operation(
                Method::GET,
                format!("/v1/vat/aar/provenance/{}/graph", beta.provenance()),
                None,
            ),
            operation(
                Method::POST,
                "/v1/vat/revoke",
                Some(json!({"jti": "vat_root_01kaqv3f00000000000000000a"})),
            ),
            operation(Method::GET, format!("/v1/vat/tokens/{}", beta.jti()), None),
            operation(Method::GET, format!("/v1/vat/aar/{}", beta.pending), None),
            operation(Method::GET, "/v1/vat/aar", None),
            operation(Method::GET, "/v1/vat/workflows", None),
            operation(Method::GET, "/v1/me", None),
            operation(
                Method::POST,
                "/v1/orgs",
                Some(json!({"name": format!("org{n}")})),
            ),
            operation(Method::GET, "/v1/orgs", None),
            operation(
                Method::PATCH,
                format!("/v1/orgs/{beta_id}"),
                Some(json!({"quotas": {}})),
            ),
            operation(Method::POST, "/v1/keys", Some(json!({"role": "auditor"}))),
            operation(Method::GET, "/v1/keys", None),
            operation(
                Method::DELETE,
                "/v1/keys/key_01kaqv3f00000000000000000a",
                None,
            ),
            operation(Method::GET, "/metrics", None),
            operation(
                Method::POST,
                "/v1/trust/vouches",
                Some(json!({"agent_id": "shared-bot", "weight": 0.5})),
            ),
            operation(
                Method::DELETE,
                "/v1/trust/vouches/vch_01kaqv3f00000000000000000a",
                None,
            ),
            operation(Method::GET, "/v1/trust/agents/shared-bot", None),
            operation(Method::GET, "/v1/trust/graph", None),
            operation(Method::GET, "/v1/trust/agents/shared-bot/statement", None),
            operation(
                Method::POST,
                "/v1/access/evaluation",
                Some(
                    json!({"subject": {"type": "mandate_vat", "id": beta.root["compact_jwt"]}, "action": {"name": "read"}, "resource": {"type": "crm", "id": "x"}}),
                ),
            ),
            operation(
                Method::POST,
                "/v1/oauth/clients",
                Some(json!({"name": "x", "redirect_uris": ["https://a.example/cb"]})),
            ),
            operation(Method::GET, "/v1/oauth/clients", None),
            operation(
                Method::POST,
                "/v1/oauth/requests/open",
                Some(json!({"request": "x"})),
            ),
            operation(
                Method::POST,
                "/v1/oauth/requests/decision",
                Some(json!({"request": "x", "decision": "deny"})),
            ),
            operation(
                Method::DELETE,
                "/v1/oauth/clients/mcl_01kaqv3f00000000000000000a",
                None,
            ),
            operation(Method::GET, "/v1/oauth/grants", None),
            operation(
                Method::DELETE,
                "/v1/oauth/grants/ogr_01kaqv3f00000000000000000a",
                None,
            ),
            operation(
                Method::POST,
                "/v1/access/evaluations",
                Some(
                    json!({"subject": {"type": "mandate_vat", "id": beta.root["compact_jwt"]}, "action": {"name": "read"}, "evaluations": [{"resource": {"type": "crm", "id": "x"}}]}),
                ),
            ),
        ]
    };
    let mut table = String::new();
    for (n, (role, key)) in keys.iter().enumerate() {
        for op in operations(n) {
            let response = app
                .send(op.method.clone(), &op.path, key, op.body.as_ref())
                .await;
            let status = response.status();
            let body: Value = response.json().await.unwrap_or(Value::Null);
            let refused = status == StatusCode::FORBIDDEN
                && matches!(
                    body["code"].as_str(),
                    Some("role_forbidden" | "admin_required")
                );
            assert_ne!(
                status,
                StatusCode::UNAUTHORIZED,
                "{role} {} {}",
                op.method,
                op.path
            );
            assert_eq!(
                !refused,
                allowed(role, &op.path, &op.method),
                "{role} {} {}: {status} {body}",
                op.method,
                op.path
            );
            table.push_str(&format!("{role} {} {} {}\n", op.method, op.path, !refused));
        }
    }
    // An agent's token is never a key: every one of these refuses it.
    let token = text(&beta.root["compact_jwt"]);
    for op in operations(99) {
        // These take an agent's token too.
        if op.path == "/v1/vat/revoke"
            || op.path.starts_with("/v1/trust/vouches")
            || op.path.ends_with("/statement")
        {
            continue;
        }
        let status = app
            .send(op.method.clone(), &op.path, token, op.body.as_ref())
            .await
            .status();
        assert_eq!(
            status,
            StatusCode::UNAUTHORIZED,
            "token {} {}",
            op.method,
            op.path
        );
    }
    assert_eq!(table.lines().count(), 6 * 34);
}

#[tokio::test]
async fn an_agent_token_never_rates_or_reads() {
    let app = TestApp::spawn().await;
    let alpha = seed(&app, &app.admin_key, "alpha").await;
    let token = text(&alpha.root["compact_jwt"]);
    for (method, path, body) in [
        (
            Method::POST,
            format!("/v1/vat/aar/{}/feedback", alpha.completed),
            Some(json!({"rating": "approved"})),
        ),
        (
            Method::GET,
            format!("/v1/vat/aar/{}", alpha.completed),
            None,
        ),
        (Method::GET, "/v1/vat/aar".to_owned(), None),
        (
            Method::GET,
            "/v1/vat/reputation/shared-bot".to_owned(),
            None,
        ),
    ] {
        expect_problem(
            app.send(method, &path, token, body.as_ref()).await,
            StatusCode::UNAUTHORIZED,
            "unauthorized",
        )
        .await;
    }
}

#[tokio::test]
async fn a_noisy_organisation_spends_only_its_own_rate_limit() {
    let app = TestApp::spawn_with(|config| {
        config.rate_limits.per_org = 5;
        config.rate_limits.burst = 5;
    })
    .await;
    let (_, beta_owner) = app.org("beta").await;
    let second = app.key(&beta_owner, "auditor", None).await;
    let mut refused = None;
    for n in 0..20 {
        let key = if n % 2 == 0 { &beta_owner } else { &second };
        let response = app.get_auth("/v1/vat/workflows", key).await;
        if response.status() == StatusCode::TOO_MANY_REQUESTS {
            refused = Some(response);
            break;
        }
    }
    let refused = refused.expect("beta's keys together were never limited");
    assert!(refused.headers().contains_key("retry-after"));
    expect_problem(refused, StatusCode::TOO_MANY_REQUESTS, "rate_limited").await;
    // beta's agents count against the same allowance, with a bare jti or
    // the token itself.
    let (_, gamma_owner) = app.org("gamma").await;
    let token = expect_json(
        app.post_auth(
            "/v1/vat/issue/l1",
            &gamma_owner,
            &json!({"developer_email": "dev@gamma.test", "agent_id": "bot", "resources": ["crm:*"], "actions": ["read"]}),
        )
        .await,
        StatusCode::CREATED,
    )
    .await;
    let mut refused = None;
    for n in 0..20 {
        let response = if n % 2 == 0 {
            app.act(text(&token["jti"]), "read", "crm:a", "success")
                .await
        } else {
            app.post_auth(
                "/v1/vat/record/action",
                text(&token["compact_jwt"]),
                &json!({"action": "read", "resource": "crm:a", "result": "success"}),
            )
            .await
        };
        if response.status() == StatusCode::TOO_MANY_REQUESTS {
            refused = Some(response);
            break;
        }
    }
    let refused = refused.expect("gamma's agent was never limited");
    assert!(refused.headers().contains_key("retry-after"));
    expect_problem(refused, StatusCode::TOO_MANY_REQUESTS, "rate_limited").await;
    // The default organisation is untouched by beta's traffic.
    expect_json(
        app.get_auth("/v1/vat/workflows", &app.admin_key).await,
        StatusCode::OK,
    )
    .await;
}

#[tokio::test]
async fn quotas_refuse_records_and_tokens_beyond_them() {
    let app = TestApp::spawn().await;
    let (beta_id, beta_owner) = app.org("beta").await;
    let alpha = seed(&app, &app.admin_key, "alpha").await;
    let beta = seed(&app, &beta_owner, "beta").await;
    // beta wrote 2 records today (a success and a pending one).
    let org = expect_json(
        app.send(
            Method::PATCH,
            &format!("/v1/orgs/{beta_id}"),
            &app.admin_key,
            Some(&json!({"quotas": {"records_per_day": 3, "tokens_outstanding": 2}})),
        )
        .await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(org["quotas"]["records_per_day"], 3);
    expect_json(
        app.act(beta.jti(), "read", "crm:c", "success").await,
        StatusCode::CREATED,
    )
    .await;
    for attempt in [
        app.act(beta.jti(), "read", "crm:d", "success").await,
        // A denied attempt would be a record too.
        app.act(beta.jti(), "write", "crm:d", "success").await,
    ] {
        let retry: u64 = attempt.headers()["retry-after"]
            .to_str()
            .unwrap()
            .parse()
            .unwrap();
        assert!((1..=86_400).contains(&retry));
        expect_problem(attempt, StatusCode::TOO_MANY_REQUESTS, "quota_exceeded").await;
    }
    let listed = expect_json(
        app.get_auth("/v1/vat/aar", &beta_owner).await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(listed["records"].as_array().unwrap().len(), 3);
    // alpha has no quota and is not slowed by beta's.
    expect_json(
        app.act(alpha.jti(), "read", "crm:c", "success").await,
        StatusCode::CREATED,
    )
    .await;
    // beta holds two live tokens: a third is refused until one is revoked.
    let issue = json!({"developer_email": "dev@beta.test", "agent_id": "third", "resources": ["crm:*"], "actions": ["read"]});
    expect_problem(
        app.post_auth("/v1/vat/issue/l1", &beta_owner, &issue).await,
        StatusCode::TOO_MANY_REQUESTS,
        "quota_exceeded",
    )
    .await;
    expect_json(
        app.post_auth("/v1/vat/revoke", &beta_owner, &json!({"jti": beta.jti()}))
            .await,
        StatusCode::OK,
    )
    .await;
    expect_json(
        app.post_auth("/v1/vat/issue/l1", &beta_owner, &issue).await,
        StatusCode::CREATED,
    )
    .await;
}

#[tokio::test]
async fn owners_manage_their_keys_and_cannot_lock_themselves_out() {
    let app = TestApp::spawn().await;
    let (_, beta_owner) = app.org("beta").await;
    let me = expect_json(app.get_auth("/v1/me", &beta_owner).await, StatusCode::OK).await;
    assert_eq!(me["role"], "owner");
    assert_eq!(me["org"]["name"], "beta");
    assert_eq!(me["admin"], false);
    let admin = expect_json(app.get_auth("/v1/me", &app.admin_key).await, StatusCode::OK).await;
    assert_eq!(admin["org"]["name"], "default");
    assert_eq!(admin["admin"], true);

    expect_problem(
        app.post_auth("/v1/keys", &beta_owner, &json!({"role": "developer"}))
            .await,
        StatusCode::UNPROCESSABLE_ENTITY,
        "missing_field",
    )
    .await;
    expect_problem(
        app.post_auth("/v1/keys", &beta_owner, &json!({"role": "admin"}))
            .await,
        StatusCode::UNPROCESSABLE_ENTITY,
        "invalid_role",
    )
    .await;
    let own_id = text(&me["key_id"]).to_owned();
    expect_problem(
        app.send(
            Method::DELETE,
            &format!("/v1/keys/{own_id}"),
            &beta_owner,
            None,
        )
        .await,
        StatusCode::CONFLICT,
        "last_owner",
    )
    .await;
    let admin_id = text(&admin["key_id"]).to_owned();
    expect_problem(
        app.send(
            Method::DELETE,
            &format!("/v1/keys/{admin_id}"),
            &app.admin_key,
            None,
        )
        .await,
        StatusCode::CONFLICT,
        "admin_key",
    )
    .await;
    // A second owner may revoke the first; the revoked key stops at once,
    // though it was let in just before (its look-up leased).
    let second = app
        .key(&beta_owner, "owner", Some("second@beta.test"))
        .await;
    expect_json(app.get_auth("/v1/me", &beta_owner).await, StatusCode::OK).await;
    expect_json(
        app.send(Method::DELETE, &format!("/v1/keys/{own_id}"), &second, None)
            .await,
        StatusCode::OK,
    )
    .await;
    expect_problem(
        app.get_auth("/v1/me", &beta_owner).await,
        StatusCode::UNAUTHORIZED,
        "unauthorized",
    )
    .await;

    expect_problem(
        app.post_auth("/v1/orgs", &app.admin_key, &json!({"name": "beta"}))
            .await,
        StatusCode::CONFLICT,
        "org_exists",
    )
    .await;
    expect_problem(
        app.post_auth("/v1/orgs", &app.admin_key, &json!({"name": "Not A Slug"}))
            .await,
        StatusCode::UNPROCESSABLE_ENTITY,
        "invalid_org_name",
    )
    .await;
    expect_problem(
        app.send(
            Method::PATCH,
            "/v1/orgs/org_01kaqv3f00000000000000000a",
            &app.admin_key,
            Some(&json!({"quotas": {}})),
        )
        .await,
        StatusCode::NOT_FOUND,
        "org_not_found",
    )
    .await;
    let orgs = expect_json(
        app.get_auth("/v1/orgs", &app.admin_key).await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(listed(&orgs, "orgs", "name"), ["default", "beta"]);
}

#[tokio::test]
async fn operators_create_organisations_and_keys_with_roles() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let (status, stdout, stderr) = operator(
        &data,
        &[
            "orgs",
            "create",
            "acme",
            "--owner-email",
            "ops@acme.test",
            "--records-per-day",
            "10",
        ],
    );
    assert!(status.success(), "{stderr}");
    let mut lines = stdout
        .lines()
        .filter(|l| !l.starts_with("created the data folder"));
    let org_line = lines.next().unwrap();
    assert!(
        org_line.starts_with("org_") && org_line.ends_with(" acme"),
        "{stdout}"
    );
    let owner_key = lines.next().unwrap().split(' ').nth(1).unwrap().to_owned();
    assert!(owner_key.starts_with("mk_"), "{stdout}");
    let (status, _, stderr) = operator(&data, &["orgs", "create", "acme"]);
    assert!(!status.success());
    assert!(stderr.contains("exists"), "{stderr}");
    let (status, _, stderr) = operator(
        &data,
        &["keys", "create", "--org", "acme", "--role", "developer"],
    );
    assert!(!status.success());
    assert!(stderr.contains("--email"), "{stderr}");
    let (status, _, stderr) = operator(
        &data,
        &["keys", "create", "--org", "nowhere", "--role", "auditor"],
    );
    assert!(!status.success());
    assert!(stderr.contains("nowhere"), "{stderr}");
    let (status, stdout, stderr) = operator(
        &data,
        &[
            "keys",
            "create",
            "--org",
            "acme",
            "--role",
            "reviewer",
            "--email",
            "r@acme.test",
        ],
    );
    assert!(status.success(), "{stderr}");
    let reviewer = stdout.split_whitespace().nth(1).unwrap().to_owned();
    let (_, listed, _) = operator(&data, &["orgs", "list"]);
    assert!(
        listed.contains(" default ")
            && listed.contains(" acme records_per_day=10 tokens_outstanding=unlimited"),
        "{listed}"
    );
    let (_, keys, _) = operator(&data, &["keys", "list", "--org", "acme"]);
    assert_eq!(keys.lines().count(), 2, "{keys}");
    assert!(keys.contains(" acme reviewer r@acme.test active"), "{keys}");

    let server = Server::start(&data, &config_without_limits(dir.path()));
    let client = reqwest::Client::new();
    let me: Value = client
        .get(server.url("/v1/me"))
        .bearer_auth(&reviewer)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(me["role"], "reviewer");
    assert_eq!(me["org"]["name"], "acme");
    assert_eq!(
        me["permissions"],
        json!(["read", "rate", "revoke", "decide", "vouch"])
    );
    let quotas: Value = client
        .get(server.url("/v1/orgs"))
        .bearer_auth(admin_key(&data))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(quotas["orgs"][1]["quotas"]["records_per_day"], 10);

    // The operator revokes the reviewer's key beside the running server,
    // just after the server let it in: refused the moment the command
    // returns.
    let reviewer_id = stdout.split_whitespace().next().unwrap().to_owned();
    let me = |key: String| {
        let request = client.get(server.url("/v1/me")).bearer_auth(key);
        async move { request.send().await.unwrap().status() }
    };
    assert_eq!(me(reviewer.clone()).await, StatusCode::OK);
    let (status, revoked, stderr) = operator(&data, &["keys", "revoke", &reviewer_id]);
    assert!(status.success(), "{stderr}");
    assert!(revoked.contains(&reviewer_id), "{revoked}");
    assert_eq!(me(reviewer).await, StatusCode::UNAUTHORIZED);
    server.kill();
}

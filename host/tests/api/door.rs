//! Hostile tokens at the door: every rejection case of the conformance
//! vectors, made under the server's own signing key, presented as
//! `Authorization: Bearer` on agent calls. Each is refused with 401 and its
//! verification code, and nothing is recorded or authorized.

use mandate_core::{
    AgentId, AssuranceLevel, HumanRef, Policy, RootIssue, Scope, SigningKey, TokenRequest, Ulid,
    issue_root, sign,
};
use mandate_host::clock::now_s;
use mandate_host::secrets::{self, Kek, Purpose};
use reqwest::StatusCode;
use serde_json::json;

use crate::helpers::{TestApp, expect_json, expect_problem};

/// The server's active signing key, opened with its key file.
fn signing_secret(app: &TestApp) -> [u8; 32] {
    let data = app.dir.as_ref().unwrap().path();
    let kek = Kek::read_file(&data.join(secrets::KEY_FILE))
        .unwrap()
        .unwrap();
    let (kid, sealed): (String, Vec<u8>) = app.with_database(|conn| {
        conn.query_row(
            "SELECT kid, secret FROM signing_keys WHERE retired_at IS NULL",
            [],
            |row| Ok((row.get(0)?, row.get(1)?)),
        )
        .unwrap()
    });
    kek.open(Purpose::SigningKey, &kid, &sealed).unwrap()
}

#[tokio::test]
async fn every_hostile_token_is_refused_with_its_code() {
    let app = TestApp::spawn().await;
    let secret = signing_secret(&app);
    // Made ten minutes ahead, so `nbf_future` stays in the future however
    // long the run takes; every other case fails before time is checked.
    let mut cases = mandate_conformance::hostile_tokens(secret, "mandate", now_s() + 600);
    // An empty Bearer credential is no token at all: 401 `unauthorized`.
    cases.retain(|case| !case.token.is_empty());
    // A token of this server that expired two hours ago.
    let expired = issue_root(
        TokenRequest {
            agent_id: AgentId::parse("bot").unwrap(),
            scope: Scope::parse(&["crm:*"], &["read", "delegate"]).unwrap(),
            constraints: Default::default(),
            policy: Policy::default(),
            ttl_seconds: Some(3600),
            holder: None,
        },
        RootIssue {
            issuer: "mandate".into(),
            human: HumanRef::from_digest(&[1; 32]),
            level: AssuranceLevel::L1,
            now: now_s() - 7200,
            jti: Ulid::new(1, [1; 10]).unwrap(),
            provenance: Ulid::new(1, [2; 10]).unwrap(),
            status: None,
        },
    )
    .unwrap();
    cases.push(mandate_conformance::Hostile {
        name: "expired_server_token".into(),
        token: sign(&expired, &SigningKey::from_secret(&secret)).unwrap(),
        code: "token_expired".into(),
    });
    assert!(cases.len() >= 45, "only {} hostile cases", cases.len());

    let calls = [
        (
            "/v1/vat/record/action",
            json!({"action": "read", "resource": "crm:a", "result": "success"}),
        ),
        (
            "/v1/vat/authorize",
            json!({"action": "read", "resource": "crm:a"}),
        ),
        (
            "/v1/vat/delegate",
            json!({"agent_id": "x", "resources": ["crm:a"], "actions": ["read"]}),
        ),
    ];
    for case in &cases {
        for (path, body) in &calls {
            let response = app.post_auth(path, &case.token, body).await;
            assert_eq!(
                response.status(),
                StatusCode::UNAUTHORIZED,
                "{} on {path}",
                case.name
            );
            expect_problem(response, StatusCode::UNAUTHORIZED, &case.code).await;
        }
    }
    let page = expect_json(
        app.get_auth("/v1/vat/aar?limit=500", &app.admin_key).await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(page["records"], json!([]), "nothing was recorded");
    let workflows = expect_json(
        app.get_auth("/v1/vat/workflows", &app.admin_key).await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(workflows["workflows"], json!([]));
    let metrics = app
        .client
        .get(app.url("/metrics"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        metrics.contains("mandate_token_verification_failures_total{code=\"unsupported_alg\"}")
    );
}

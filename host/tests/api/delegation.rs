//! Delegation chains, widening refusals, and revocation cascades.

use mandate_core::{Jti, Jwks, VerifyOptions, verify, verify_chain};
use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::helpers::{TestApp, expect_json, expect_problem, jth, text};

async fn jwks(app: &TestApp) -> Jwks {
    let response = app
        .client
        .get(app.url("/.well-known/jwks.json"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    Jwks::parse(&response.bytes().await.unwrap()).unwrap()
}

/// Root → planner → researcher → reader, each narrower.
async fn chain(app: &TestApp) -> [Value; 4] {
    let root = app
        .issue(json!({
            "developer_email": "dev@example.com", "agent_id": "orchestrator",
            "resources": ["crm:*", "mail:*", "files:*"], "actions": ["read", "write", "delegate"],
            "constraints": {"max_spend_usd": 100, "max_actions": 1000},
            "policy": {"frameworks": ["gdpr"]}
        }))
        .await;
    let planner = expect_json(
        app.delegate(&root, json!({
            "agent_id": "planner", "resources": ["crm:*", "mail:inbox"], "actions": ["read", "delegate"],
            "constraints": {"max_spend_usd": 50, "max_actions": 100}, "policy": {"frameworks": ["gdpr", "soc2"]}
        }))
        .await,
        StatusCode::CREATED,
    )
    .await;
    let researcher = expect_json(
        app.delegate(&planner, json!({
            "agent_id": "researcher", "resources": ["crm:contacts"], "actions": ["read", "delegate"],
            "constraints": {"max_spend_usd": 10, "max_actions": 10}, "policy": {"frameworks": ["gdpr", "soc2"]},
            "ttl_seconds": 600
        }))
        .await,
        StatusCode::CREATED,
    )
    .await;
    let reader = expect_json(
        app.delegate(&researcher, json!({
            "agent_id": "reader", "resources": ["crm:contacts"], "actions": ["read"],
            "constraints": {"max_spend_usd": 1, "max_actions": 5}, "policy": {"frameworks": ["gdpr", "soc2"]}
        }))
        .await,
        StatusCode::CREATED,
    )
    .await;
    [root, planner, researcher, reader]
}

#[tokio::test]
async fn three_deep_chain_inherits_narrows_and_verifies() {
    let app = TestApp::spawn().await;
    let tokens = chain(&app).await;
    let keys = jwks(&app).await;
    let options = VerifyOptions {
        issuer: Some("mandate".into()),
        ..VerifyOptions::default()
    };
    let now = mandate_host::clock::now_s();
    for (depth, token) in tokens.iter().enumerate() {
        let verified = verify(text(&token["compact_jwt"]), &keys, now, &options).unwrap();
        assert_eq!(verified.claims.svc_depth as usize, depth);
        assert_eq!(
            verified.claims.svc_prov.as_str(),
            text(&tokens[0]["provenance_ref"])
        );
        assert_eq!(
            serde_json::to_value(&verified.claims).unwrap(),
            token["claims"]
        );
        assert_eq!(token["delegation_depth"], depth);
        if depth > 0 {
            assert!(text(&token["jti"]).starts_with("vat_del_"));
            assert!(text(&token["aar_id"]).starts_with("aar_"));
        }
    }
    let compact: Vec<&str> = tokens.iter().map(|t| text(&t["compact_jwt"])).collect();
    verify_chain(&compact, &keys, now, &options, |_| false).unwrap();
    let jth = |token: &Value| Jti::parse(text(&token["jti"])).unwrap().hash().to_string();
    assert_eq!(
        tokens[3]["claims"]["svc_chain"],
        json!([jth(&tokens[0]), jth(&tokens[1]), jth(&tokens[2])])
    );
    assert_eq!(tokens[3]["claims"]["svc_parent"], json!(jth(&tokens[2])));
    assert_eq!(tokens[3]["claims"]["act"]["sub"], "agent:researcher");
    assert_eq!(
        tokens[3]["claims"]["act"]["act"]["act"]["sub"],
        "agent:orchestrator"
    );

    let reader = text(&tokens[3]["jti"]);
    let recorded = expect_json(
        app.act(reader, "read", "crm:contacts", "success").await,
        StatusCode::CREATED,
    )
    .await;
    assert_eq!(recorded["delegation_depth"], 3);
    assert_eq!(recorded["provenance_ref"], tokens[0]["provenance_ref"]);

    let prov = text(&tokens[0]["provenance_ref"]);
    let summary = expect_json(
        app.get_auth(&format!("/v1/vat/aar/provenance/{prov}"), &app.admin_key)
            .await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(summary["total_records"], 4);
    assert_eq!(summary["unique_agents"], 4);
    assert_eq!(
        summary["actions_by_type"],
        json!({"delegate": 3, "read": 1})
    );

    let graph = expect_json(
        app.get_auth(
            &format!("/v1/vat/aar/provenance/{prov}/graph"),
            &app.admin_key,
        )
        .await,
        StatusCode::OK,
    )
    .await;
    let nodes = graph["nodes"].as_array().unwrap();
    assert_eq!(nodes.iter().filter(|n| n["kind"] == "token").count(), 4);
    assert_eq!(nodes.iter().filter(|n| n["kind"] == "record").count(), 4);
    assert_eq!(nodes.iter().filter(|n| n["kind"] == "human").count(), 1);
    let edges = graph["edges"].as_array().unwrap();
    assert_eq!(edges.iter().filter(|e| e["kind"] == "delegated").count(), 3);
    assert_eq!(edges.iter().filter(|e| e["kind"] == "issued").count(), 1);
    assert_eq!(edges.iter().filter(|e| e["kind"] == "action").count(), 4);
}

#[tokio::test]
async fn every_widening_is_refused_naming_the_field() {
    let app = TestApp::spawn().await;
    let tokens = chain(&app).await;
    let researcher = &tokens[2];
    let narrow = json!({
        "agent_id": "sub", "resources": ["crm:contacts"], "actions": ["read"],
        "constraints": {"max_spend_usd": 5, "max_actions": 5}, "policy": {"frameworks": ["gdpr", "soc2"]}
    });
    let cases = [
        (
            json!({"resources": ["crm:*"]}),
            "resources",
            "resource_not_covered",
        ),
        (
            json!({"resources": ["mail:inbox"]}),
            "resources",
            "resource_not_covered",
        ),
        (
            json!({"actions": ["read", "write"]}),
            "actions",
            "action_not_held",
        ),
        (
            json!({"constraints": {"max_spend_usd": 11, "max_actions": 5}}),
            "constraints.max_spend_usd",
            "constraint_raised",
        ),
        (
            json!({"ttl_seconds": 3000}),
            "exp",
            "lifetime_beyond_parent",
        ),
    ];
    for (edit, field, code) in cases {
        let mut body = narrow.clone();
        for (k, v) in edit.as_object().unwrap() {
            body[k] = v.clone();
        }
        let problem = expect_problem(
            app.delegate(researcher, body.clone()).await,
            StatusCode::FORBIDDEN,
            "scope_widening",
        )
        .await;
        assert_eq!(
            problem["violations"],
            json!([{"field": field, "code": code, "message": problem["violations"][0]["message"]}]),
            "{body}"
        );
        let record = expect_json(
            app.get_auth(
                &format!("/v1/vat/aar/{}", text(&problem["aar_id"])),
                &app.admin_key,
            )
            .await,
            StatusCode::OK,
        )
        .await;
        assert_eq!(
            (record["action"].clone(), record["status"].clone()),
            (json!("delegate"), json!("denied"))
        );
        assert_eq!(record["deny_reason"], "scope_widening");
    }
    let reader = &tokens[3];
    let problem = expect_problem(
        app.delegate(reader, narrow.clone()).await,
        StatusCode::FORBIDDEN,
        "action_not_permitted",
    )
    .await;
    assert!(problem["aar_id"].is_string());
    expect_json(app.delegate(researcher, narrow).await, StatusCode::CREATED).await;
}

/// Tried as a new user would: a child that sets a limit of its own and
/// leaves out the parent's other limit and framework inherits them.
#[tokio::test]
async fn what_a_delegation_leaves_out_it_inherits() {
    let app = TestApp::spawn().await;
    let parent = app
        .issue(json!({
            "developer_email": "dev@example.com", "agent_id": "boss",
            "resources": ["crm:*"], "actions": ["read", "delegate"],
            "constraints": {"max_spend_usd": 10}, "policy": {"frameworks": ["gdpr"]}
        }))
        .await;
    let child = expect_json(
        app.delegate(
            &parent,
            json!({"agent_id": "helper", "resources": ["crm:a"], "actions": ["read"],
                   "constraints": {"max_actions": 5}, "policy": {"frameworks": ["hipaa"]}}),
        )
        .await,
        StatusCode::CREATED,
    )
    .await;
    assert_eq!(
        child["claims"]["svc_constraints"],
        json!({"max_spend_usd": 10.0, "max_actions": 5})
    );
    assert_eq!(
        child["claims"]["svc_policy"],
        json!({"frameworks": ["gdpr", "hipaa"]})
    );
    let bare = expect_json(
        app.delegate(
            &parent,
            json!({"agent_id": "helper", "resources": ["crm:a"], "actions": ["read"]}),
        )
        .await,
        StatusCode::CREATED,
    )
    .await;
    assert_eq!(
        bare["claims"]["svc_constraints"],
        json!({"max_spend_usd": 10.0})
    );
}

async fn status(app: &TestApp, token: &Value) -> String {
    let body = expect_json(
        app.get_auth(
            &format!("/v1/vat/tokens/{}", text(&token["jti"])),
            &app.admin_key,
        )
        .await,
        StatusCode::OK,
    )
    .await;
    text(&body["status"]).to_owned()
}

#[tokio::test]
async fn revoking_the_root_ends_the_whole_chain() {
    let app = TestApp::spawn().await;
    let tokens = chain(&app).await;
    let revoked = expect_json(
        app.post_auth(
            "/v1/vat/revoke",
            &app.admin_key,
            &json!({"jti": tokens[0]["jti"], "reason": "done"}),
        )
        .await,
        StatusCode::OK,
    )
    .await;
    let mut expected: Vec<String> = tokens.iter().map(|t| jth(text(&t["jti"]))).collect();
    expected.sort_unstable();
    assert_eq!(revoked["revoked"], json!(expected));
    for token in &tokens {
        assert_eq!(status(&app, token).await, "revoked");
        expect_problem(
            app.act(text(&token["jti"]), "read", "crm:contacts", "success")
                .await,
            StatusCode::FORBIDDEN,
            "token_inactive",
        )
        .await;
        // The holder of the token itself is told why.
        let bearer = app
            .post_auth(
                "/v1/vat/record/action",
                text(&token["compact_jwt"]),
                &json!({"action": "read", "resource": "crm:contacts", "result": "success"}),
            )
            .await;
        let problem = expect_problem(bearer, StatusCode::UNAUTHORIZED, "token_revoked").await;
        assert!(problem["aar_id"].is_string());
    }
    let root = expect_json(
        app.get_auth(
            &format!("/v1/vat/tokens/{}", text(&tokens[0]["jti"])),
            &app.admin_key,
        )
        .await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(root["revoke_reason"], "done");
    assert_eq!(root["descendants"].as_array().unwrap().len(), 3);
    assert!(
        root["descendants"]
            .as_array()
            .unwrap()
            .iter()
            .all(|d| d["status"] == "revoked")
    );
    expect_problem(
        app.delegate(
            &tokens[1],
            json!({"agent_id": "x", "resources": ["crm:contacts"], "actions": ["read"]}),
        )
        .await,
        StatusCode::UNAUTHORIZED,
        "token_revoked",
    )
    .await;
    expect_json(
        app.post_auth(
            "/v1/vat/revoke",
            &app.admin_key,
            &json!({"jti": tokens[0]["jti"]}),
        )
        .await,
        StatusCode::OK,
    )
    .await;
}

#[tokio::test]
async fn revoking_the_middle_keeps_the_ancestors() {
    let app = TestApp::spawn().await;
    let tokens = chain(&app).await;
    // The planner revokes the researcher with its own token.
    let revoked = expect_json(
        app.post_auth(
            "/v1/vat/revoke",
            text(&tokens[1]["compact_jwt"]),
            &json!({"jti": tokens[2]["jti"], "vat_jti": tokens[1]["jti"]}),
        )
        .await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(revoked["revoked"].as_array().unwrap().len(), 2);
    assert_eq!(revoked["revoked_count"], 2);
    assert_eq!(revoked["truncated"], false);
    assert_eq!(status(&app, &tokens[0]).await, "active");
    assert_eq!(status(&app, &tokens[1]).await, "active");
    assert_eq!(status(&app, &tokens[2]).await, "revoked");
    assert_eq!(status(&app, &tokens[3]).await, "revoked");
    expect_json(
        app.act(text(&tokens[1]["jti"]), "read", "crm:contacts", "success")
            .await,
        StatusCode::CREATED,
    )
    .await;
    // A descendant may not revoke its ancestor; nobody may without credentials.
    let upward = app
        .post_auth(
            "/v1/vat/revoke",
            text(&tokens[1]["compact_jwt"]),
            &json!({"jti": tokens[0]["jti"]}),
        )
        .await;
    expect_problem(upward, StatusCode::FORBIDDEN, "not_an_ancestor").await;
    expect_problem(
        app.post("/v1/vat/revoke", &json!({"jti": tokens[0]["jti"]}))
            .await,
        StatusCode::UNAUTHORIZED,
        "unauthorized",
    )
    .await;
    assert_eq!(status(&app, &tokens[0]).await, "active");
}

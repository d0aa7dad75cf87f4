//! Authority is delegated, never taken: attacks on the agent endpoints by a
//! caller who knows identifiers (a jti, a jti hash, an `aar_id`), holds a
//! lesser token, or has stolen a bound token without its key.

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::helpers::{Holder, TestApp, expect_json, expect_problem, jth, text};

async fn token_status(app: &TestApp, jti: &str) -> Value {
    expect_json(
        app.get_auth(&format!("/v1/vat/tokens/{jti}"), &app.admin_key)
            .await,
        StatusCode::OK,
    )
    .await
}

async fn record_count(app: &TestApp) -> usize {
    let page = expect_json(
        app.get_auth("/v1/vat/aar?limit=500", &app.admin_key).await,
        StatusCode::OK,
    )
    .await;
    page["records"].as_array().unwrap().len()
}

/// The escalation found on the first release, step by step: a sub-agent
/// reads its root's id from its own token and acts as the root with it.
#[tokio::test]
async fn a_sub_agent_cannot_make_itself_its_root() {
    let app = TestApp::spawn().await;
    // 1. A root over crm and bank; a child with crm:contacts read + delegate.
    let root = app
        .issue(json!({
            "developer_email": "dev@example.com", "agent_id": "root-agent",
            "resources": ["crm:*", "bank:*"], "actions": ["read", "write", "delegate"],
            "constraints": {"max_spend_usd": 1000}
        }))
        .await;
    let root_jti = text(&root["jti"]);
    let child = expect_json(
        app.delegate(
            &root,
            json!({"agent_id": "child", "resources": ["crm:contacts"], "actions": ["read", "delegate"],
                   "constraints": {"max_spend_usd": 10}}),
        )
        .await,
        StatusCode::CREATED,
    )
    .await;

    // 2. The child's token does not carry the root's jti anywhere.
    let ancestor = text(&child["claims"]["svc_chain"][0]);
    assert_ne!(ancestor, root_jti);
    assert!(!child.to_string().contains(root_jti));
    assert!(!text(&child["compact_jwt"]).contains(root_jti));
    let records_before = record_count(&app).await;

    // 3. Delegating with a jti (the root's, leaked some other way), no credential.
    let widest = json!({"vat_jti": root_jti, "agent_id": "sub2", "resources": ["bank:*", "crm:*"],
                        "actions": ["read", "write"], "constraints": {"max_spend_usd": 1000}});
    expect_problem(
        app.post("/v1/vat/delegate", &widest).await,
        StatusCode::UNAUTHORIZED,
        "token_required",
    )
    .await;
    // … with the jti hash it can read: not a jti at all.
    let mut by_hash = widest.clone();
    by_hash["vat_jti"] = json!(ancestor);
    let refused = app.post("/v1/vat/delegate", &by_hash).await;
    assert_eq!(refused.status(), StatusCode::UNPROCESSABLE_ENTITY);
    // … with its own token, naming the root.
    expect_problem(
        app.post_auth("/v1/vat/delegate", text(&child["compact_jwt"]), &widest)
            .await,
        StatusCode::UNAUTHORIZED,
        "token_mismatch",
    )
    .await;
    // … with its own token, asking for the root's authority.
    let mut own = widest.clone();
    own.as_object_mut().unwrap().remove("vat_jti");
    let problem = expect_problem(
        app.post_auth("/v1/vat/delegate", text(&child["compact_jwt"]), &own)
            .await,
        StatusCode::FORBIDDEN,
        "scope_widening",
    )
    .await;
    let fields: Vec<&str> = problem["violations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| text(&v["field"]))
        .collect();
    assert!(fields.contains(&"resources") && fields.contains(&"actions"));
    assert!(fields.contains(&"constraints.max_spend_usd"));
    assert_eq!(
        token_status(&app, root_jti).await["descendants"]
            .as_array()
            .unwrap()
            .len(),
        1,
        "no token was minted"
    );

    // 4. Revoking the root with its jti and no credential, then with the
    //    child's own token.
    expect_problem(
        app.post(
            "/v1/vat/revoke",
            &json!({"vat_jti": root_jti, "jti": root_jti}),
        )
        .await,
        StatusCode::UNAUTHORIZED,
        "token_required",
    )
    .await;
    expect_problem(
        app.post_auth(
            "/v1/vat/revoke",
            text(&child["compact_jwt"]),
            &json!({"jti": root_jti}),
        )
        .await,
        StatusCode::FORBIDDEN,
        "not_an_ancestor",
    )
    .await;
    assert_eq!(token_status(&app, root_jti).await["status"], "active");
    // Only the refused widening was recorded (on the child).
    assert_eq!(record_count(&app).await, records_before + 1);
}

/// A jti names a token; where the spec accepts one it still gets only what
/// that token holds, and never authority over other tokens.
#[tokio::test]
async fn a_bare_jti_acts_within_its_token_only() {
    let app = TestApp::spawn().await;
    let root = app.root("boss", &["crm:*"], &["read", "delegate"]).await;
    let jti = text(&root["jti"]);
    // record/action and authorize keep the spec's bare vat_jti.
    expect_json(
        app.act(jti, "read", "crm:a", "success").await,
        StatusCode::CREATED,
    )
    .await;
    let check = expect_json(
        app.post(
            "/v1/vat/authorize",
            &json!({"vat_jti": jti, "action": "read", "resource": "crm:a"}),
        )
        .await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(check["authorized"], true);
    let record = expect_json(
        app.get_auth(
            &format!("/v1/vat/aar/{}", text(&check["aar_id"])),
            &app.admin_key,
        )
        .await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(record["credential"], "jti");
    // A child's Bearer token naming its root's jti is refused outright.
    let child = expect_json(
        app.delegate(
            &root,
            json!({"agent_id": "helper", "resources": ["crm:a"], "actions": ["read"]}),
        )
        .await,
        StatusCode::CREATED,
    )
    .await;
    expect_problem(
        app.post_auth(
            "/v1/vat/record/action",
            text(&child["compact_jwt"]),
            &json!({"vat_jti": jti, "action": "read", "resource": "crm:b", "result": "success"}),
        )
        .await,
        StatusCode::UNAUTHORIZED,
        "token_mismatch",
    )
    .await;
}

/// A record made with the token itself is completed only by that token or
/// an ancestor's; one made with a bare jti by its aar_id.
#[tokio::test]
async fn a_stranger_cannot_complete_a_record_made_with_a_token() {
    let app = TestApp::spawn().await;
    let root = app.root("boss", &["crm:*"], &["read", "delegate"]).await;
    let child = expect_json(
        app.delegate(
            &root,
            json!({"agent_id": "helper", "resources": ["crm:*"], "actions": ["read"]}),
        )
        .await,
        StatusCode::CREATED,
    )
    .await;
    let stranger = app.root("stranger", &["crm:*"], &["read"]).await;
    let authorize = |token: &Value| {
        let token = text(&token["compact_jwt"]).to_owned();
        let app = &app;
        async move {
            let answer = expect_json(
                app.post_auth(
                    "/v1/vat/authorize",
                    &token,
                    &json!({"action": "read", "resource": "crm:a"}),
                )
                .await,
                StatusCode::OK,
            )
            .await;
            text(&answer["aar_id"]).to_owned()
        }
    };
    let done = json!({"result": "success"});
    let aar = authorize(&child).await;
    let path = format!("/v1/vat/aar/{aar}/complete");
    // No token: told what an absent record's caller is told (its aar_id
    // completes nothing, and says nothing).
    expect_problem(
        app.post(&path, &done).await,
        StatusCode::NOT_FOUND,
        "record_not_found",
    )
    .await;
    expect_problem(
        app.post_auth(&path, text(&stranger["compact_jwt"]), &done)
            .await,
        StatusCode::FORBIDDEN,
        "token_mismatch",
    )
    .await;
    let completed = expect_json(
        app.post_auth(&path, text(&child["compact_jwt"]), &done)
            .await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(completed["credential"], "token");
    // An ancestor's token completes a descendant's record too.
    let aar = authorize(&child).await;
    expect_json(
        app.post_auth(
            &format!("/v1/vat/aar/{aar}/complete"),
            text(&root["compact_jwt"]),
            &done,
        )
        .await,
        StatusCode::OK,
    )
    .await;
    // A record made with a bare jti is completed by its aar_id, as the spec
    // shows; the answer does not name the token to a caller holding none.
    let check = expect_json(
        app.post(
            "/v1/vat/authorize",
            &json!({"vat_jti": child["jti"], "action": "read", "resource": "crm:a"}),
        )
        .await,
        StatusCode::OK,
    )
    .await;
    let by_aar_id = expect_json(
        app.post(
            &format!("/v1/vat/aar/{}/complete", text(&check["aar_id"])),
            &done,
        )
        .await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(by_aar_id["status"], "completed");
    assert!(by_aar_id.get("vat_jti").is_none(), "{by_aar_id}");
    assert!(!by_aar_id.to_string().contains(text(&child["jti"])));
    // Both answers name the token by jti hash only.
    assert_eq!(by_aar_id["jth"], jth(text(&child["jti"])));
    assert_eq!(completed["jth"], jth(text(&child["jti"])));
    assert!(!completed.to_string().contains(text(&child["jti"])));
}

/// After a revocation a completion still reports what happened, but never
/// charges more than was reserved.
#[tokio::test]
async fn completion_after_revocation_stays_within_the_reservation() {
    let app = TestApp::spawn().await;
    let token = app
        .issue(json!({
            "developer_email": "dev@example.com", "agent_id": "buyer",
            "resources": ["shop:*"], "actions": ["buy"], "constraints": {"max_spend_usd": 100}
        }))
        .await;
    let jwt = text(&token["compact_jwt"]);
    let mut aars = Vec::new();
    for _ in 0..2 {
        let answer = expect_json(
            app.post_auth(
                "/v1/vat/authorize",
                jwt,
                &json!({"action": "buy", "resource": "shop:x", "spend_usd": 2}),
            )
            .await,
            StatusCode::OK,
        )
        .await;
        aars.push(text(&answer["aar_id"]).to_owned());
    }
    expect_json(
        app.post_auth(
            "/v1/vat/revoke",
            &app.admin_key,
            &json!({"jti": token["jti"]}),
        )
        .await,
        StatusCode::OK,
    )
    .await;
    let problem = expect_problem(
        app.post_auth(
            &format!("/v1/vat/aar/{}/complete", aars[0]),
            jwt,
            &json!({"result": "success", "spend_usd": 5}),
        )
        .await,
        StatusCode::UNAUTHORIZED,
        "token_revoked",
    )
    .await;
    assert!(text(&problem["detail"]).contains("reserved"));
    for (aar, spend) in [(&aars[0], 1.5), (&aars[1], 2.0)] {
        let done = expect_json(
            app.post_auth(
                &format!("/v1/vat/aar/{aar}/complete"),
                jwt,
                &json!({"result": "success", "spend_usd": spend}),
            )
            .await,
            StatusCode::OK,
        )
        .await;
        assert_eq!(done["spend_usd"], spend);
    }
}

#[tokio::test]
async fn an_api_key_where_an_agent_token_is_needed_says_so() {
    let app = TestApp::spawn().await;
    let root = app.root("bot", &["crm:*"], &["read", "delegate"]).await;
    for (path, body) in [
        (
            "/v1/vat/authorize",
            json!({"action": "read", "resource": "crm:a"}),
        ),
        (
            "/v1/vat/record/action",
            json!({"vat_jti": root["jti"], "action": "read", "resource": "crm:a", "result": "success"}),
        ),
        (
            "/v1/vat/delegate",
            json!({"agent_id": "x", "resources": ["crm:a"], "actions": ["read"]}),
        ),
    ] {
        let problem = expect_problem(
            app.post_auth(path, &app.admin_key, &body).await,
            StatusCode::UNAUTHORIZED,
            "token_required",
        )
        .await;
        assert!(text(&problem["detail"]).contains("API key"), "{path}");
    }
}

#[tokio::test]
async fn expired_and_revoked_tokens_are_named_to_their_holder_only() {
    let app = TestApp::spawn().await;
    let root = app.root("bot", &["crm:*"], &["read"]).await;
    let act = json!({"action": "read", "resource": "crm:a", "result": "success"});
    // Each token works once first, so the server has verified it before and
    // remembers that it did: what it remembers must not outlive the token.
    let short = app
        .issue(
            json!({"developer_email": "dev@example.com", "agent_id": "bot",
                      "resources": ["crm:*"], "actions": ["read"], "ttl_seconds": 60}),
        )
        .await;
    for token in [&root, &short] {
        expect_json(
            app.post_auth("/v1/vat/record/action", text(&token["compact_jwt"]), &act)
                .await,
            StatusCode::CREATED,
        )
        .await;
    }
    expect_json(
        app.post_auth(
            "/v1/vat/revoke",
            &app.admin_key,
            &json!({"jti": root["jti"]}),
        )
        .await,
        StatusCode::OK,
    )
    .await;
    expect_problem(
        app.post_auth("/v1/vat/record/action", text(&root["compact_jwt"]), &act)
            .await,
        StatusCode::UNAUTHORIZED,
        "token_revoked",
    )
    .await;
    // A minute's lifetime outlasts the steps above on a busy machine; the
    // test's clock then moves past it.
    app.clock.advance(std::time::Duration::from_secs(61));
    expect_problem(
        app.post_auth("/v1/vat/record/action", text(&short["compact_jwt"]), &act)
            .await,
        StatusCode::UNAUTHORIZED,
        "token_expired",
    )
    .await;
    // By jti alone, revoked and unknown answer alike.
    expect_problem(
        app.act(text(&root["jti"]), "read", "crm:a", "success")
            .await,
        StatusCode::FORBIDDEN,
        "token_inactive",
    )
    .await;
    expect_problem(
        app.act(
            "vat_root_00000000000000000000000000",
            "read",
            "crm:a",
            "success",
        )
        .await,
        StatusCode::FORBIDDEN,
        "token_inactive",
    )
    .await;
}

/// Bound tokens (RFC 9449): each call carries a fresh proof by the holder's
/// key; the token alone, however obtained, does nothing.
#[tokio::test]
async fn a_bound_token_is_useless_without_its_key() {
    let app = TestApp::spawn().await;
    let holder = Holder::new();
    let token = app
        .issue(json!({
            "developer_email": "dev@example.com", "agent_id": "courier",
            "resources": ["mail:*"], "actions": ["send", "delegate"], "holder_key": holder.jwk()
        }))
        .await;
    assert_eq!(token["token_type"], "DPoP");
    assert_eq!(
        token["claims"]["cnf"]["jkt"],
        holder.key.holder_key().jkt().as_str()
    );
    let jwt = text(&token["compact_jwt"]);
    let path = "/v1/vat/record/action";
    let url = app.url(path);
    let act = json!({"action": "send", "resource": "mail:outbox", "result": "success"});
    let records = record_count(&app).await;

    // A valid proof.
    let proof = holder.proof("POST", &url, jwt);
    let recorded = expect_json(
        app.post_dpop(path, jwt, Some(&proof), &act).await,
        StatusCode::CREATED,
    )
    .await;
    let record = expect_json(
        app.get_auth(
            &format!("/v1/vat/aar/{}", text(&recorded["aar_id"])),
            &app.admin_key,
        )
        .await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(record["credential"], "token");

    // The same proof again.
    let replayed = expect_problem(
        app.post_dpop(path, jwt, Some(&proof), &act).await,
        StatusCode::UNAUTHORIZED,
        "dpop_invalid",
    )
    .await;
    assert_eq!(replayed["reason"], "dpop_replayed");

    // No proof; the Bearer scheme; the bare jti.
    let missing = app.post_dpop(path, jwt, None, &act).await;
    let challenge = missing.headers()["www-authenticate"]
        .to_str()
        .unwrap()
        .to_owned();
    assert!(challenge.starts_with("DPoP "), "{challenge}");
    expect_problem(missing, StatusCode::UNAUTHORIZED, "dpop_required").await;
    expect_problem(
        app.post_auth(path, jwt, &act).await,
        StatusCode::UNAUTHORIZED,
        "dpop_required",
    )
    .await;
    let mut bare = act.clone();
    bare["vat_jti"] = token["jti"].clone();
    expect_problem(
        app.post(path, &bare).await,
        StatusCode::UNAUTHORIZED,
        "dpop_required",
    )
    .await;

    // Proofs that are not for this call.
    let thief = Holder::new();
    let other_url = app.url("/v1/vat/authorize");
    let other = app.root("other", &["mail:*"], &["send"]).await;
    for (proof, reason) in [
        (thief.proof("POST", &url, jwt), "dpop_key_mismatch"),
        (holder.proof("POST", &other_url, jwt), "dpop_url_mismatch"),
        (holder.proof("PUT", &url, jwt), "dpop_method_mismatch"),
        (holder.proof_aged("POST", &url, jwt, 120), "dpop_stale"),
        (
            holder.proof_aged("POST", &url, jwt, -120),
            "dpop_from_future",
        ),
        (
            holder.proof("POST", &url, text(&other["compact_jwt"])),
            "dpop_ath_mismatch",
        ),
        ("not.a.proof".to_owned(), "dpop_malformed"),
    ] {
        let problem = expect_problem(
            app.post_dpop(path, jwt, Some(&proof), &act).await,
            StatusCode::UNAUTHORIZED,
            "dpop_invalid",
        )
        .await;
        assert_eq!(problem["reason"], reason);
    }
    // A proof without ath, signed by the right key.
    let no_ath = raw_proof(
        &holder,
        &json!({"jti": "0123456789abcdefghij", "htm": "POST", "htu": url,
                "iat": mandate_host::clock::now_s()}),
    );
    let problem = expect_problem(
        app.post_dpop(path, jwt, Some(&no_ath), &act).await,
        StatusCode::UNAUTHORIZED,
        "dpop_invalid",
    )
    .await;
    assert_eq!(problem["reason"], "dpop_missing_ath");
    // An unbound token sent as DPoP.
    let problem = expect_problem(
        app.post_dpop(
            path,
            text(&other["compact_jwt"]),
            Some(&holder.proof("POST", &url, text(&other["compact_jwt"]))),
            &act,
        )
        .await,
        StatusCode::UNAUTHORIZED,
        "dpop_invalid",
    )
    .await;
    assert_eq!(problem["reason"], "dpop_not_bound");
    assert_eq!(
        record_count(&app).await,
        records + 1,
        "no refused proof wrote a record"
    );
}

/// Signs proof claims as they are given, with the holder's key.
fn raw_proof(holder: &Holder, claims: &Value) -> String {
    use base64::Engine as _;
    use ed25519_dalek::Signer as _;
    let b64 = |bytes: &[u8]| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes);
    let header = json!({"typ": "dpop+jwt", "alg": "EdDSA", "jwk": holder.jwk()});
    let input = format!(
        "{}.{}",
        b64(header.to_string().as_bytes()),
        b64(claims.to_string().as_bytes())
    );
    let secret = holder.secret();
    let signature = ed25519_dalek::SigningKey::from_bytes(&secret).sign(input.as_bytes());
    format!("{input}.{}", b64(&signature.to_bytes()))
}

#[tokio::test]
async fn a_bound_token_delegates_to_the_same_key_or_another() {
    let app = TestApp::spawn().await;
    let holder = Holder::new();
    let parent = app
        .issue(json!({
            "developer_email": "dev@example.com", "agent_id": "lead",
            "resources": ["mail:*"], "actions": ["send", "delegate"], "holder_key": holder.jwk()
        }))
        .await;
    let jwt = text(&parent["compact_jwt"]);
    let delegate_url = app.url("/v1/vat/delegate");
    let delegate = |proof: String, body: Value| {
        let app = &app;
        async move {
            app.post_dpop("/v1/vat/delegate", jwt, Some(&proof), &body)
                .await
        }
    };
    // Left out, the binding is inherited.
    let same = expect_json(
        delegate(
            holder.proof("POST", &delegate_url, jwt),
            json!({"agent_id": "helper", "resources": ["mail:outbox"], "actions": ["send"]}),
        )
        .await,
        StatusCode::CREATED,
    )
    .await;
    assert_eq!(same["token_type"], "DPoP");
    assert_eq!(same["claims"]["cnf"], parent["claims"]["cnf"]);
    // Given, the child is bound to the sub-agent's own key.
    let sub = Holder::new();
    let moved = expect_json(
        delegate(
            holder.proof("POST", &delegate_url, jwt),
            json!({"agent_id": "helper", "resources": ["mail:outbox"], "actions": ["send"],
                   "holder_key": sub.jwk()}),
        )
        .await,
        StatusCode::CREATED,
    )
    .await;
    let child = text(&moved["compact_jwt"]);
    let url = app.url("/v1/vat/record/action");
    let act = json!({"action": "send", "resource": "mail:outbox", "result": "success"});
    let problem = expect_problem(
        app.post_dpop(
            "/v1/vat/record/action",
            child,
            Some(&holder.proof("POST", &url, child)),
            &act,
        )
        .await,
        StatusCode::UNAUTHORIZED,
        "dpop_invalid",
    )
    .await;
    assert_eq!(problem["reason"], "dpop_key_mismatch");
    expect_json(
        app.post_dpop(
            "/v1/vat/record/action",
            child,
            Some(&sub.proof("POST", &url, child)),
            &act,
        )
        .await,
        StatusCode::CREATED,
    )
    .await;
    // A private key is never accepted as a holder key.
    let mut private = sub.jwk();
    private["d"] = json!("AAAA");
    let refused = app
        .post_auth(
            "/v1/vat/issue/l1",
            &app.admin_key,
            &json!({"developer_email": "dev@example.com", "agent_id": "x", "resources": ["mail:*"],
                    "actions": ["send"], "holder_key": private}),
        )
        .await;
    let problem = expect_problem(
        refused,
        StatusCode::UNPROCESSABLE_ENTITY,
        "private_key_material",
    )
    .await;
    assert_eq!(problem["field"], "holder_key");
}

#[tokio::test]
async fn proofs_name_the_public_url_behind_a_proxy() {
    let app =
        TestApp::spawn_with(|c| c.public_url = Some("https://mandate.example/api".into())).await;
    let holder = Holder::new();
    let token = app
        .issue(json!({
            "developer_email": "dev@example.com", "agent_id": "courier",
            "resources": ["mail:*"], "actions": ["send"], "holder_key": holder.jwk()
        }))
        .await;
    let jwt = text(&token["compact_jwt"]);
    let act = json!({"action": "send", "resource": "mail:outbox", "result": "success"});
    let path = "/v1/vat/record/action";
    let problem = expect_problem(
        app.post_dpop(
            path,
            jwt,
            Some(&holder.proof("POST", &app.url(path), jwt)),
            &act,
        )
        .await,
        StatusCode::UNAUTHORIZED,
        "dpop_invalid",
    )
    .await;
    assert_eq!(problem["reason"], "dpop_url_mismatch");
    let public = format!("https://mandate.example/api{path}");
    expect_json(
        app.post_dpop(path, jwt, Some(&holder.proof("POST", &public, jwt)), &act)
            .await,
        StatusCode::CREATED,
    )
    .await;
}

/// A token cannot mint children without end, and the answers about a big
/// subtree come in pages.
#[tokio::test]
async fn fan_out_is_capped_and_subtrees_are_paged() {
    let app = TestApp::spawn().await;
    let root = app.root("spawner", &["crm:*"], &["read", "delegate"]).await;
    let limit = mandate_core::limits::MAX_CHILDREN_PER_TOKEN as usize;
    let mut tasks = Vec::new();
    for i in 0..limit {
        let (client, url, jwt) = (
            app.client.clone(),
            app.url("/v1/vat/delegate"),
            text(&root["compact_jwt"]).to_owned(),
        );
        tasks.push(tokio::spawn(async move {
            let body =
                json!({"agent_id": format!("w{i}"), "resources": ["crm:a"], "actions": ["read"]});
            client
                .post(url)
                .bearer_auth(jwt)
                .json(&body)
                .send()
                .await
                .unwrap()
                .status()
        }));
        if tasks.len() == 64 {
            for task in tasks.drain(..) {
                assert_eq!(task.await.unwrap(), StatusCode::CREATED);
            }
        }
    }
    for task in tasks {
        assert_eq!(task.await.unwrap(), StatusCode::CREATED);
    }
    let problem = expect_problem(
        app.delegate(
            &root,
            json!({"agent_id": "one-more", "resources": ["crm:a"], "actions": ["read"]}),
        )
        .await,
        StatusCode::FORBIDDEN,
        "too_many_children",
    )
    .await;
    assert!(problem["aar_id"].is_string());

    let jti = text(&root["jti"]);
    let first = expect_json(
        app.get_auth(&format!("/v1/vat/tokens/{jti}?limit=600"), &app.admin_key)
            .await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(first["descendants"].as_array().unwrap().len(), 600);
    let cursor = text(&first["next_cursor"]);
    let second = expect_json(
        app.get_auth(
            &format!("/v1/vat/tokens/{jti}?limit=600&cursor={cursor}"),
            &app.admin_key,
        )
        .await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(second["descendants"].as_array().unwrap().len(), limit - 600);
    assert!(second.get("next_cursor").is_none());
    let mut seen: Vec<&str> = first["descendants"]
        .as_array()
        .unwrap()
        .iter()
        .chain(second["descendants"].as_array().unwrap())
        .map(|d| text(&d["jth"]))
        .collect();
    seen.sort_unstable();
    seen.dedup();
    assert_eq!(seen.len(), limit);

    let graph = expect_json(
        app.get_auth(
            &format!(
                "/v1/vat/aar/provenance/{}/graph?limit=100",
                text(&root["provenance_ref"])
            ),
            &app.admin_key,
        )
        .await,
        StatusCode::OK,
    )
    .await;
    let tokens = graph["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|n| n["kind"] == "token")
        .count();
    assert_eq!((tokens, graph["truncated"].clone()), (100, json!(true)));

    let revoked = expect_json(
        app.post_auth("/v1/vat/revoke", &app.admin_key, &json!({"jti": jti}))
            .await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(revoked["revoked_count"], limit + 1);
    assert_eq!(revoked["truncated"], true);
    assert_eq!(revoked["revoked"].as_array().unwrap().len(), 1000);
}

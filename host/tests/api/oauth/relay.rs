//! The MCP gate's relay (docs/oauth.md, "The gate relays the client's
//! proof"; plan §4): `oauth_resources` registration, and each row of the
//! threat table as a test. The client's token is bound to the client's
//! key and names the MCP server (`RESOURCE`) in `aud`: an OAuth grant's
//! access token, delegated with `holder_key` (the token endpoint does not
//! issue bound tokens yet).

use mandate_core::{NewRelay, sign_relay};
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use super::{Flow, RESOURCE, location, query_of, text};
use crate::helpers::{Holder, TestApp, expect_json, expect_problem};

const RESOURCES: &str = "/v1/oauth/resources";
const AUTHORIZE: &str = "/v1/vat/authorize";

fn jkt(holder: &Holder) -> String {
    holder.key.holder_key().jkt().as_str().to_owned()
}

/// A relay proof by `gate` for `method` on this server's `path`, with
/// `token` and the client proof it forwards, if any.
fn relay_proof(
    app: &TestApp,
    gate: &Holder,
    method: &str,
    path: &str,
    token: &str,
    forwarded: Option<&str>,
) -> String {
    use rand_core::RngCore as _;
    let mut jti = [0u8; 16];
    rand_core::OsRng.fill_bytes(&mut jti);
    sign_relay(
        &gate.key,
        &NewRelay {
            method,
            url: &app.url(path),
            access_token: token,
            forwarded,
            now: mandate_host::clock::now_s(),
            jti_random: jti,
        },
    )
    .unwrap()
}

/// Registers `resource` with the relay keys of `gates`, with `key`.
async fn register(app: &TestApp, key: &str, resource: &str, gates: &[&Holder]) -> Value {
    let jkts: Vec<String> = gates.iter().map(|gate| jkt(gate)).collect();
    expect_json(
        app.post_auth(
            RESOURCES,
            key,
            &json!({"resource": resource, "relay_jkts": jkts}),
        )
        .await,
        StatusCode::CREATED,
    )
    .await
}

/// A call as a gate makes it: the client's token as `DPoP`, and the relay
/// headers given.
async fn relayed(
    app: &TestApp,
    method: Method,
    path: &str,
    token: &str,
    forwarded: Option<&str>,
    relay: Option<&str>,
    body: Option<&Value>,
) -> reqwest::Response {
    let mut request = app
        .client
        .request(method, app.url(path))
        .header("authorization", format!("DPoP {token}"));
    if let Some(forwarded) = forwarded {
        request = request.header("mandate-client-dpop", forwarded);
    }
    if let Some(relay) = relay {
        request = request.header("mandate-relay", relay);
    }
    if let Some(body) = body {
        request = request.json(body);
    }
    request.send().await.unwrap()
}

/// A server with `[oauth]` on; the client's bound token for `RESOURCE`;
/// the client's key and a gate's, registered for `RESOURCE`.
struct Relay {
    flow: Flow,
    client: Holder,
    gate: Holder,
    token: String,
}

fn act() -> Value {
    json!({"action": "read", "resource": "crm:lead/1", "spend_usd": 1.0})
}

impl Relay {
    async fn start() -> Relay {
        Relay::on(Flow::start().await).await
    }

    async fn on(flow: Flow) -> Relay {
        let response = flow
            .authorize(&[("scope", Some("read delegate crm:*"))])
            .await;
        assert_eq!(response.status(), StatusCode::SEE_OTHER);
        let sealed = query_of(&location(&response))["request"].clone();
        let code = flow
            .approve(
                &sealed,
                json!({"actions": ["read", "delegate"], "resources": ["crm:*"]}),
            )
            .await["code"]
            .clone();
        let granted = expect_json(flow.redeem(&code).await, StatusCode::OK).await;
        let access = text(&granted["access_token"]).to_owned();
        let client = Holder::new();
        let child = expect_json(
            flow.app
                .post_auth(
                    "/v1/vat/delegate",
                    &access,
                    &json!({"agent_id": "claude-desktop", "resources": ["crm:*"],
                            "actions": ["read"], "holder_key": client.jwk(),
                            "constraints": {"require_approval": {"spend_over_usd": 5}}}),
                )
                .await,
            StatusCode::CREATED,
        )
        .await;
        assert_eq!(child["claims"]["aud"], RESOURCE);
        let gate = Holder::new();
        register(&flow.app, &flow.app.admin_key, RESOURCE, &[&gate]).await;
        Relay {
            token: text(&child["compact_jwt"]).to_owned(),
            flow,
            client,
            gate,
        }
    }

    fn app(&self) -> &TestApp {
        &self.flow.app
    }

    /// The client's proof for its MCP request (`POST RESOURCE`).
    fn client_proof(&self) -> String {
        self.client.proof("POST", RESOURCE, &self.token)
    }

    fn relay_proof(
        &self,
        gate: &Holder,
        method: &str,
        path: &str,
        forwarded: Option<&str>,
    ) -> String {
        relay_proof(self.app(), gate, method, path, &self.token, forwarded)
    }

    /// `authorize` relayed by `gate` with `forwarded`.
    async fn authorize_by(&self, gate: &Holder, forwarded: &str) -> reqwest::Response {
        let relay = self.relay_proof(gate, "POST", AUTHORIZE, Some(forwarded));
        relayed(
            self.app(),
            Method::POST,
            AUTHORIZE,
            &self.token,
            Some(forwarded),
            Some(&relay),
            Some(&act()),
        )
        .await
    }

    /// A record `authorize` made through the registered gate.
    async fn authorized(&self) -> String {
        let answer = expect_json(
            self.authorize_by(&self.gate, &self.client_proof()).await,
            StatusCode::OK,
        )
        .await;
        assert_eq!(answer["authorized"], true, "{answer}");
        text(&answer["aar_id"]).to_owned()
    }

    /// `complete` of `aar_id` by `gate`, with its proof alone.
    async fn complete_by(&self, gate: &Holder, aar_id: &str, body: &Value) -> reqwest::Response {
        let path = format!("/v1/vat/aar/{aar_id}/complete");
        let relay = self.relay_proof(gate, "POST", &path, None);
        relayed(
            self.app(),
            Method::POST,
            &path,
            &self.token,
            None,
            Some(&relay),
            Some(body),
        )
        .await
    }

    fn records(&self) -> i64 {
        self.app().with_database(|conn| {
            conn.query_row("SELECT count(*) FROM records", [], |row| row.get(0))
                .unwrap()
        })
    }
}

/// The gate relays: `authorize` with the client's proof, the record keeps
/// the relay key, the gate completes it with its own proof alone.
#[tokio::test]
async fn relay_authorizes_with_the_clients_proof_and_completes_alone() {
    let relay = Relay::start().await;
    let aar_id = relay.authorized().await;
    let (relay_jkt, credential): (Option<String>, String) = relay.app().with_database(|conn| {
        conn.query_row(
            "SELECT relay_jkt, credential FROM records WHERE aar_id = ?1",
            [aar_id.as_str()],
            |row| Ok((row.get(0)?, row.get(1)?)),
        )
        .unwrap()
    });
    assert_eq!(relay_jkt.as_deref(), Some(jkt(&relay.gate).as_str()));
    assert_eq!(credential, "token");
    let completed = expect_json(
        relay
            .complete_by(&relay.gate, &aar_id, &json!({"result": "success"}))
            .await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(completed["status"], "completed", "{completed}");
}

/// Threat: the access token only. No client proof: nothing.
#[tokio::test]
async fn relay_with_the_token_only_does_nothing() {
    let relay = Relay::start().await;
    let app = relay.app();
    let records = relay.records();
    // As a client would send it, without any proof.
    expect_problem(
        app.post_dpop(AUTHORIZE, &relay.token, None, &act()).await,
        StatusCode::UNAUTHORIZED,
        "dpop_required",
    )
    .await;
    // Through the registered gate, without the client's proof.
    let alone = relay.relay_proof(&relay.gate, "POST", AUTHORIZE, None);
    expect_problem(
        relayed(
            app,
            Method::POST,
            AUTHORIZE,
            &relay.token,
            None,
            Some(&alone),
            Some(&act()),
        )
        .await,
        StatusCode::UNAUTHORIZED,
        "client_proof_required",
    )
    .await;
    // A client proof without the gate's.
    expect_problem(
        relayed(
            app,
            Method::POST,
            AUTHORIZE,
            &relay.token,
            Some(&relay.client_proof()),
            None,
            Some(&act()),
        )
        .await,
        StatusCode::UNAUTHORIZED,
        "relay_required",
    )
    .await;
    assert_eq!(relay.records(), records, "nothing was recorded");
}

/// Threat: token and one captured client proof. One act at most: the
/// proof is used once, in the store every DPoP proof is remembered in.
#[tokio::test]
async fn relay_client_proof_is_used_once() {
    let relay = Relay::start().await;
    let forwarded = relay.client_proof();
    let first = expect_json(
        relay.authorize_by(&relay.gate, &forwarded).await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(first["authorized"], true);
    let again = expect_problem(
        relay.authorize_by(&relay.gate, &forwarded).await,
        StatusCode::UNAUTHORIZED,
        "client_proof_invalid",
    )
    .await;
    assert_eq!(again["reason"], "dpop_replayed");
    // Old proofs are stale.
    let old = relay.client.proof_aged("POST", RESOURCE, &relay.token, 120);
    let stale = expect_problem(
        relay.authorize_by(&relay.gate, &old).await,
        StatusCode::UNAUTHORIZED,
        "client_proof_invalid",
    )
    .await;
    assert_eq!(stale["reason"], "dpop_stale");
    // A proof by another key than the token's.
    let thief = Holder::new();
    let stolen = expect_problem(
        relay
            .authorize_by(&relay.gate, &thief.proof("POST", RESOURCE, &relay.token))
            .await,
        StatusCode::UNAUTHORIZED,
        "client_proof_invalid",
    )
    .await;
    assert_eq!(stolen["reason"], "dpop_key_mismatch");
}

/// Threat: replaying a relay proof, or pairing it with another forwarded
/// proof: `jti` once; `cph` binds it to one forwarded proof.
#[tokio::test]
async fn relay_proof_is_used_once_and_for_its_forwarded_proof_only() {
    let relay = Relay::start().await;
    let app = relay.app();
    let forwarded = relay.client_proof();
    let proof = relay.relay_proof(&relay.gate, "POST", AUTHORIZE, Some(&forwarded));
    let other = relay.client_proof();
    let paired = expect_problem(
        relayed(
            app,
            Method::POST,
            AUTHORIZE,
            &relay.token,
            Some(&other),
            Some(&proof),
            Some(&act()),
        )
        .await,
        StatusCode::UNAUTHORIZED,
        "relay_invalid",
    )
    .await;
    assert_eq!(paired["reason"], "relay_cph_mismatch");
    expect_json(
        relayed(
            app,
            Method::POST,
            AUTHORIZE,
            &relay.token,
            Some(&forwarded),
            Some(&proof),
            Some(&act()),
        )
        .await,
        StatusCode::OK,
    )
    .await;
    // The same relay proof with a fresh client proof it does not name, and
    // again with its own (used) one.
    let replayed = expect_problem(
        relayed(
            app,
            Method::POST,
            AUTHORIZE,
            &relay.token,
            Some(&forwarded),
            Some(&proof),
            Some(&act()),
        )
        .await,
        StatusCode::UNAUTHORIZED,
        "client_proof_invalid",
    )
    .await;
    assert_eq!(replayed["reason"], "dpop_replayed");
    // A relay proof made for another request of this server.
    let elsewhere = relay.relay_proof(&relay.gate, "POST", "/v1/vat/record/action", Some(&other));
    let moved = expect_problem(
        relayed(
            app,
            Method::POST,
            AUTHORIZE,
            &relay.token,
            Some(&other),
            Some(&elsewhere),
            Some(&act()),
        )
        .await,
        StatusCode::UNAUTHORIZED,
        "relay_invalid",
    )
    .await;
    assert_eq!(moved["reason"], "dpop_url_mismatch");
    // A DPoP proof is not a relay proof.
    let dpop = relay.gate.proof("POST", &app.url(AUTHORIZE), &relay.token);
    let typ = expect_problem(
        relayed(
            app,
            Method::POST,
            AUTHORIZE,
            &relay.token,
            Some(&other),
            Some(&dpop),
            Some(&act()),
        )
        .await,
        StatusCode::UNAUTHORIZED,
        "relay_invalid",
    )
    .await;
    assert_eq!(typ["reason"], "relay_invalid_typ");
}

/// A relay proof is used once even when its forwarded proof is new: the
/// relay's `jti` is remembered too.
#[tokio::test]
async fn relay_proof_replayed_with_its_own_claims_is_refused() {
    let relay = Relay::start().await;
    let aar_id = relay.authorized().await;
    let path = format!("/v1/vat/aar/{aar_id}/complete");
    let proof = relay.relay_proof(&relay.gate, "POST", &path, None);
    let body = json!({"result": "success"});
    expect_json(
        relayed(
            relay.app(),
            Method::POST,
            &path,
            &relay.token,
            None,
            Some(&proof),
            Some(&body),
        )
        .await,
        StatusCode::OK,
    )
    .await;
    let again = expect_problem(
        relayed(
            relay.app(),
            Method::POST,
            &path,
            &relay.token,
            None,
            Some(&proof),
            Some(&body),
        )
        .await,
        StatusCode::UNAUTHORIZED,
        "relay_invalid",
    )
    .await;
    assert_eq!(again["reason"], "dpop_replayed");
}

/// Threat: another MCP server that received the token by mistake: its
/// relay key is not registered for the token's `aud` (refused), and its
/// own URL is not under `aud` (refused).
#[tokio::test]
async fn relay_key_not_registered_for_the_audience_is_refused() {
    let relay = Relay::start().await;
    let app = relay.app();
    let stranger = Holder::new();
    register(
        app,
        &app.admin_key,
        "https://other.example/mcp",
        &[&stranger],
    )
    .await;
    let records = relay.records();
    expect_problem(
        relay.authorize_by(&stranger, &relay.client_proof()).await,
        StatusCode::FORBIDDEN,
        "relay_not_registered",
    )
    .await;
    // The client's proof for the other server's own URL.
    let theirs = relay
        .client
        .proof("POST", "https://other.example/mcp", &relay.token);
    let outside = expect_problem(
        relay.authorize_by(&relay.gate, &theirs).await,
        StatusCode::UNAUTHORIZED,
        "client_proof_invalid",
    )
    .await;
    assert_eq!(outside["reason"], "client_proof_outside_audience");
    // Under `aud` at a `/` boundary is the resource's; beside it is not.
    let beside = relay
        .client
        .proof("POST", "https://mcp.example/mcp-admin", &relay.token);
    let beside = expect_problem(
        relay.authorize_by(&relay.gate, &beside).await,
        StatusCode::UNAUTHORIZED,
        "client_proof_invalid",
    )
    .await;
    assert_eq!(beside["reason"], "client_proof_outside_audience");
    let below = relay
        .client
        .proof("POST", "https://mcp.example/mcp/session", &relay.token);
    expect_json(
        relay.authorize_by(&relay.gate, &below).await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(relay.records(), records + 1);
}

/// Threat: the gate's relay key. Revoked by deleting the resource: from
/// then on it relays nothing, completions included.
#[tokio::test]
async fn relay_key_deleted_with_its_resource_relays_nothing() {
    let relay = Relay::start().await;
    let app = relay.app();
    let aar_id = relay.authorized().await;
    let listed = expect_json(
        app.get_auth(RESOURCES, &app.admin_key).await,
        StatusCode::OK,
    )
    .await;
    let id = text(&listed["resources"][0]["resource_id"]).to_owned();
    let deleted = app
        .send(
            Method::DELETE,
            &format!("{RESOURCES}/{id}"),
            &app.admin_key,
            None,
        )
        .await;
    assert_eq!(deleted.status(), StatusCode::NO_CONTENT);
    expect_problem(
        relay.authorize_by(&relay.gate, &relay.client_proof()).await,
        StatusCode::FORBIDDEN,
        "relay_not_registered",
    )
    .await;
    expect_problem(
        relay
            .complete_by(&relay.gate, &aar_id, &json!({"result": "success"}))
            .await,
        StatusCode::FORBIDDEN,
        "relay_not_registered",
    )
    .await;
}

/// Threat: a relay key of another organisation. The token's organisation
/// did not register it: refused as unregistered (the other organisation's
/// registration is not there for it).
#[tokio::test]
async fn relay_registered_by_another_organisation_is_refused() {
    let relay = Relay::start().await;
    let app = relay.app();
    let (_, beta) = app.org("beta").await;
    let theirs = Holder::new();
    register(app, &beta, RESOURCE, &[&theirs]).await;
    expect_problem(
        relay.authorize_by(&theirs, &relay.client_proof()).await,
        StatusCode::FORBIDDEN,
        "relay_not_registered",
    )
    .await;
    // Beta sees its own registration only, and cannot delete alpha's.
    let listed = expect_json(app.get_auth(RESOURCES, &beta).await, StatusCode::OK).await;
    assert_eq!(listed["resources"].as_array().unwrap().len(), 1);
    let alpha = expect_json(
        app.get_auth(RESOURCES, &app.admin_key).await,
        StatusCode::OK,
    )
    .await;
    let alpha_id = text(&alpha["resources"][0]["resource_id"]).to_owned();
    expect_problem(
        app.send(
            Method::DELETE,
            &format!("{RESOURCES}/{alpha_id}"),
            &beta,
            None,
        )
        .await,
        StatusCode::NOT_FOUND,
        "resource_not_found",
    )
    .await;
}

/// A relay completes only what it authorized: not another relay's record,
/// not a record the client made itself, and never above the reservation.
#[tokio::test]
async fn relay_completes_only_its_own_records_within_the_reservation() {
    let relay = Relay::start().await;
    let app = relay.app();
    let second = Holder::new();
    register(app, &app.admin_key, "https://mcp.example/mcp/", &[&second]).await;
    let aar_id = relay.authorized().await;
    expect_problem(
        relay
            .complete_by(&second, &aar_id, &json!({"result": "success"}))
            .await,
        StatusCode::FORBIDDEN,
        "relay_not_registered",
    )
    .await;
    // Registered for the token's audience too: still not its record.
    let listed = expect_json(
        app.get_auth(RESOURCES, &app.admin_key).await,
        StatusCode::OK,
    )
    .await;
    for resource in listed["resources"].as_array().unwrap() {
        let id = text(&resource["resource_id"]);
        app.send(
            Method::DELETE,
            &format!("{RESOURCES}/{id}"),
            &app.admin_key,
            None,
        )
        .await;
    }
    register(app, &app.admin_key, RESOURCE, &[&relay.gate, &second]).await;
    expect_problem(
        relay
            .complete_by(&second, &aar_id, &json!({"result": "success"}))
            .await,
        StatusCode::FORBIDDEN,
        "relay_not_yours",
    )
    .await;
    expect_problem(
        relay
            .complete_by(
                &relay.gate,
                &aar_id,
                &json!({"result": "success", "spend_usd": 2.0}),
            )
            .await,
        StatusCode::FORBIDDEN,
        "relay_beyond_reservation",
    )
    .await;
    // A record the client made with its own proof at Mandate.
    let own = expect_json(
        app.post_dpop(
            AUTHORIZE,
            &relay.token,
            Some(
                &relay
                    .client
                    .proof("POST", &app.url(AUTHORIZE), &relay.token),
            ),
            &act(),
        )
        .await,
        StatusCode::OK,
    )
    .await;
    expect_problem(
        relay
            .complete_by(
                &relay.gate,
                text(&own["aar_id"]),
                &json!({"result": "success"}),
            )
            .await,
        StatusCode::FORBIDDEN,
        "relay_not_yours",
    )
    .await;
    expect_json(
        relay
            .complete_by(
                &relay.gate,
                &aar_id,
                &json!({"result": "success", "spend_usd": 0.5}),
            )
            .await,
        StatusCode::OK,
    )
    .await;
}

/// A relay reads the approval of what it authorized, with its proof
/// alone; another relay key of the same resource does not see it.
#[tokio::test]
async fn relay_reads_the_approval_of_what_it_authorized_only() {
    let relay = Relay::start().await;
    let app = relay.app();
    let second = Holder::new();
    let listed = expect_json(
        app.get_auth(RESOURCES, &app.admin_key).await,
        StatusCode::OK,
    )
    .await;
    let id = text(&listed["resources"][0]["resource_id"]);
    app.send(
        Method::DELETE,
        &format!("{RESOURCES}/{id}"),
        &app.admin_key,
        None,
    )
    .await;
    register(app, &app.admin_key, RESOURCE, &[&relay.gate, &second]).await;
    let forwarded = relay.client_proof();
    let proof = relay.relay_proof(&relay.gate, "POST", AUTHORIZE, Some(&forwarded));
    let body = json!({"action": "read", "resource": "crm:lead/1", "spend_usd": 10.0});
    let waiting = expect_json(
        relayed(
            app,
            Method::POST,
            AUTHORIZE,
            &relay.token,
            Some(&forwarded),
            Some(&proof),
            Some(&body),
        )
        .await,
        StatusCode::ACCEPTED,
    )
    .await;
    let path = format!(
        "/v1/vat/approvals/{}",
        text(&waiting["approval"]["approval_id"])
    );
    let read_by = |gate: &Holder| relay.relay_proof(gate, "GET", &path, None);
    let read = expect_json(
        relayed(
            app,
            Method::GET,
            &path,
            &relay.token,
            None,
            Some(&read_by(&relay.gate)),
            None,
        )
        .await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(read["status"], "pending");
    expect_problem(
        relayed(
            app,
            Method::GET,
            &path,
            &relay.token,
            None,
            Some(&read_by(&second)),
            None,
        )
        .await,
        StatusCode::NOT_FOUND,
        "approval_not_found",
    )
    .await;
}

/// Relayed calls are taken by `authorize` (with the client's proof) and by
/// completions and approval reads (relay proof alone) only.
#[tokio::test]
async fn relay_is_not_allowed_elsewhere_or_mixed() {
    let relay = Relay::start().await;
    let app = relay.app();
    let path = "/v1/vat/record/action";
    let forwarded = relay.client_proof();
    let proof = relay.relay_proof(&relay.gate, "POST", path, Some(&forwarded));
    let mut body = act();
    body["result"] = json!("success");
    expect_problem(
        relayed(
            app,
            Method::POST,
            path,
            &relay.token,
            Some(&forwarded),
            Some(&proof),
            Some(&body),
        )
        .await,
        StatusCode::UNAUTHORIZED,
        "relay_not_allowed",
    )
    .await;
    // The client's proof forwarded to a completion.
    let aar_id = relay.authorized().await;
    let complete = format!("/v1/vat/aar/{aar_id}/complete");
    let forwarded = relay.client_proof();
    let proof = relay.relay_proof(&relay.gate, "POST", &complete, Some(&forwarded));
    expect_problem(
        relayed(
            app,
            Method::POST,
            &complete,
            &relay.token,
            Some(&forwarded),
            Some(&proof),
            Some(&json!({"result": "success"})),
        )
        .await,
        StatusCode::UNAUTHORIZED,
        "relay_not_allowed",
    )
    .await;
    // The token as Bearer beside relay headers.
    let forwarded = relay.client_proof();
    let proof = relay.relay_proof(&relay.gate, "POST", AUTHORIZE, Some(&forwarded));
    expect_problem(
        app.client
            .post(app.url(AUTHORIZE))
            .bearer_auth(&relay.token)
            .header("mandate-client-dpop", &forwarded)
            .header("mandate-relay", &proof)
            .json(&act())
            .send()
            .await
            .unwrap(),
        StatusCode::UNAUTHORIZED,
        "relay_not_allowed",
    )
    .await;
}

/// Only a bound token naming a resource is relayed.
#[tokio::test]
async fn relay_needs_a_bound_token_for_a_resource() {
    let relay = Relay::start().await;
    let app = relay.app();
    let holder = Holder::new();
    let rootless = app
        .issue(json!({
            "developer_email": "dev@example.com", "agent_id": "courier",
            "resources": ["crm:*"], "actions": ["read"], "holder_key": holder.jwk()
        }))
        .await;
    let token = text(&rootless["compact_jwt"]);
    let forwarded = holder.proof("POST", RESOURCE, token);
    let proof = relay_proof(app, &relay.gate, "POST", AUTHORIZE, token, Some(&forwarded));
    let problem = expect_problem(
        relayed(
            app,
            Method::POST,
            AUTHORIZE,
            token,
            Some(&forwarded),
            Some(&proof),
            Some(&act()),
        )
        .await,
        StatusCode::UNAUTHORIZED,
        "relay_invalid",
    )
    .await;
    assert_eq!(problem["reason"], "relay_no_audience");
    let unbound = app.root("plain", &["crm:*"], &["read"]).await;
    let token = text(&unbound["compact_jwt"]);
    let forwarded = holder.proof("POST", RESOURCE, token);
    let proof = relay_proof(app, &relay.gate, "POST", AUTHORIZE, token, Some(&forwarded));
    let problem = expect_problem(
        relayed(
            app,
            Method::POST,
            AUTHORIZE,
            token,
            Some(&forwarded),
            Some(&proof),
            Some(&act()),
        )
        .await,
        StatusCode::UNAUTHORIZED,
        "dpop_invalid",
    )
    .await;
    assert_eq!(problem["reason"], "dpop_not_bound");
}

/// The registration API: owners register a resource and its relay keys,
/// list and delete them; the resource and each thumbprint are checked.
#[tokio::test]
async fn an_owner_registers_lists_and_deletes_resources() {
    let flow = Flow::start().await;
    let app = &flow.app;
    let gate = Holder::new();
    let made = register(app, &app.admin_key, RESOURCE, &[&gate]).await;
    assert!(text(&made["resource_id"]).starts_with("ors_"), "{made}");
    assert_eq!(made["resource"], RESOURCE);
    assert_eq!(made["relay_jkts"], json!([jkt(&gate)]));
    // The same resource, spelt otherwise.
    expect_problem(
        app.post_auth(
            RESOURCES,
            &app.admin_key,
            &json!({"resource": "https://MCP.example:443/mcp", "relay_jkts": [jkt(&gate)]}),
        )
        .await,
        StatusCode::CONFLICT,
        "resource_exists",
    )
    .await;
    for (body, field, code) in [
        (
            json!({"resource": "https://a.example/mcp", "relay_jkts": []}),
            "relay_jkts",
            "empty_list",
        ),
        (
            json!({"resource": "https://a.example/mcp", "relay_jkts": ["nope"]}),
            "relay_jkts[0]",
            "invalid_digest",
        ),
        (
            json!({"resource": "https://a.example/mcp", "relay_jkts": [jkt(&gate), jkt(&gate)]}),
            "relay_jkts",
            "duplicate_entry",
        ),
        (
            json!({"resource": "http://a.example/mcp", "relay_jkts": [jkt(&gate)]}),
            "resource",
            "resource_uri_scheme",
        ),
        (
            json!({"resource": "https://a.example/mcp#x", "relay_jkts": [jkt(&gate)]}),
            "resource",
            "resource_uri_fragment",
        ),
    ] {
        let problem = expect_problem(
            app.post_auth(RESOURCES, &app.admin_key, &body).await,
            StatusCode::UNPROCESSABLE_ENTITY,
            code,
        )
        .await;
        assert_eq!(problem["field"], field, "{problem}");
    }
    let listed = expect_json(
        app.get_auth(RESOURCES, &app.admin_key).await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(listed["resources"], json!([made]));
    // A developer may not.
    expect_problem(
        app.get_auth(RESOURCES, &flow.developer).await,
        StatusCode::FORBIDDEN,
        "role_forbidden",
    )
    .await;
    let path = format!("{RESOURCES}/{}", text(&made["resource_id"]));
    let deleted = app.send(Method::DELETE, &path, &app.admin_key, None).await;
    assert_eq!(deleted.status(), StatusCode::NO_CONTENT);
    expect_problem(
        app.send(Method::DELETE, &path, &app.admin_key, None).await,
        StatusCode::NOT_FOUND,
        "resource_not_found",
    )
    .await;
    let listed = expect_json(
        app.get_auth(RESOURCES, &app.admin_key).await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(listed["resources"], json!([]));
}

/// With `[oauth]` off the registration paths are not there.
#[tokio::test]
async fn resources_are_not_there_with_oauth_off() {
    let app = TestApp::spawn().await;
    expect_problem(
        app.get_auth(RESOURCES, &app.admin_key).await,
        StatusCode::NOT_FOUND,
        "not_found",
    )
    .await;
}

/// The upgrade to schema 14, on either engine: a database of the release
/// before gains the resources table, empty, and a null `relay_jkt` on
/// every record it held.
#[tokio::test]
async fn the_upgrade_to_schema_14_adds_the_relay_table_and_column() {
    use mandate_host::store::sql::Dialect;
    let app = TestApp::spawn().await;
    let token = app.root("mailer", &["crm:*"], &["read"]).await;
    expect_json(
        app.act(text(&token["jti"]), "read", "crm:lead/1", "success")
            .await,
        StatusCode::CREATED,
    )
    .await;
    let dir = app.stop().await;
    crate::helpers::with_database(dir.path(), |conn| {
        conn.execute_batch(crate::helpers::DROP_RELAY).unwrap();
        crate::helpers::set_schema_version(conn, 13);
    });
    let app = TestApp::spawn_in(dir, |_| {}).await;
    expect_json(
        app.act(text(&token["jti"]), "read", "crm:lead/2", "success")
            .await,
        StatusCode::CREATED,
    )
    .await;
    let dir = app.stop().await;
    crate::helpers::with_database(dir.path(), |conn| {
        let count = |sql: &str| -> i64 { conn.query_row(sql, [], |row| row.get(0)).unwrap() };
        assert_eq!(count("SELECT count(*) FROM oauth_resources"), 0);
        assert_eq!(count("SELECT count(*) FROM records"), 2);
        assert_eq!(
            count("SELECT count(*) FROM records WHERE relay_jkt IS NULL"),
            2
        );
        let version: i64 = match conn.dialect() {
            Dialect::Sqlite => count("PRAGMA user_version"),
            Dialect::Postgres => count("SELECT version FROM mandate_schema"),
        };
        assert_eq!(version, mandate_host::store::SCHEMA_VERSION);
        assert_eq!(version, 17);
    });
}

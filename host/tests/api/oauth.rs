//! The OAuth authorization server (docs/oauth.md): start checks, the
//! metadata document (RFC 8414), the token endpoint's form reader and error
//! bodies (RFC 6749 §3.1, §5.2), the schema 12 upgrade.

use mandate_host::AppState;
use mandate_host::clock::Clock;
use mandate_host::config::{Config, OAuthConfig};
use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::helpers::{TestApp, expect_json, expect_problem};

mod documents;
mod exchange;
mod relay;
mod signin;

/// `[oauth]` on, the issuer being this server's own address (plus `path`).
fn oauth_at(config: &mut Config, path: &str) {
    let url = format!("http://{}{path}", config.listen);
    config.public_url = Some(url.clone());
    config.issuer = url;
    config.oauth = OAuthConfig::for_test();
}

fn oauth_on(config: &mut Config) {
    oauth_at(config, "");
}

fn expected_metadata(issuer: &str) -> Value {
    json!({
        "issuer": issuer,
        "authorization_endpoint": format!("{issuer}/v1/oauth/authorize"),
        "token_endpoint": format!("{issuer}/v1/oauth/token"),
        "revocation_endpoint": format!("{issuer}/v1/oauth/revoke"),
        "jwks_uri": format!("{issuer}/.well-known/jwks.json"),
        "response_types_supported": ["code"],
        "response_modes_supported": ["query"],
        "grant_types_supported": [
            "authorization_code",
            "refresh_token",
            "urn:ietf:params:oauth:grant-type:token-exchange"
        ],
        "code_challenge_methods_supported": ["S256"],
        "token_endpoint_auth_methods_supported": ["none"],
        "revocation_endpoint_auth_methods_supported": ["none"],
        "client_id_metadata_document_supported": true,
        "authorization_response_iss_parameter_supported": true,
        "dpop_signing_alg_values_supported": ["EdDSA", "Ed25519"]
    })
}

/// RFC 8414 §3.2: the metadata as JSON, every member listed and no other;
/// its `issuer` is the issuer byte for byte (§3.3); any origin may read it.
#[tokio::test]
async fn the_metadata_names_the_issuer_and_exactly_its_members() {
    let app = TestApp::spawn_with(oauth_on).await;
    let response = app
        .client
        .get(app.url("/.well-known/oauth-authorization-server"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.headers()["access-control-allow-origin"], "*");
    assert!(
        response.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("application/json")
    );
    let metadata = expect_json(response, StatusCode::OK).await;
    assert_eq!(metadata, expected_metadata(&app.base));
    assert!(!app.base.ends_with('/'));
}

/// RFC 8414 §3.1: an issuer with a path is asked at the well-known path
/// followed by the issuer's path; the plain well-known path answers too
/// (clients that append the well-known path to the issuer reach it there
/// through the proxy that strips the prefix).
#[tokio::test]
async fn an_issuer_with_a_path_is_served_at_the_path_inserted_address() {
    let app = TestApp::spawn_with(|config| oauth_at(config, "/tenant")).await;
    let issuer = format!("{}/tenant", app.base);
    for path in [
        "/.well-known/oauth-authorization-server/tenant",
        "/.well-known/oauth-authorization-server",
    ] {
        let metadata = expect_json(
            app.client.get(app.url(path)).send().await.unwrap(),
            StatusCode::OK,
        )
        .await;
        assert_eq!(metadata, expected_metadata(&issuer), "{path}");
    }
    expect_problem(
        app.client
            .get(app.url("/.well-known/oauth-authorization-server/other"))
            .send()
            .await
            .unwrap(),
        StatusCode::NOT_FOUND,
        "not_found",
    )
    .await;
}

#[tokio::test]
async fn with_oauth_off_its_paths_are_not_there() {
    let app = TestApp::spawn().await;
    for response in [
        app.client
            .get(app.url("/.well-known/oauth-authorization-server"))
            .send()
            .await
            .unwrap(),
        app.client
            .post(app.url("/v1/oauth/token"))
            .header("content-type", "application/x-www-form-urlencoded")
            .body("grant_type=authorization_code")
            .send()
            .await
            .unwrap(),
        app.client
            .post(app.url("/v1/oauth/revoke"))
            .header("content-type", "application/x-www-form-urlencoded")
            .body("token=mrt_x")
            .send()
            .await
            .unwrap(),
    ] {
        expect_problem(response, StatusCode::NOT_FOUND, "not_found").await;
    }
}

/// The token endpoint answers OAuth errors (RFC 6749 §5.2): 400, JSON,
/// `error` one of OAuth's codes, Mandate's code beside it, never cached.
async fn token_error(request: reqwest::RequestBuilder) -> Value {
    let response = request.send().await.unwrap();
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
    assert_eq!(response.headers()["content-type"], "application/json");
    assert_eq!(response.headers()["cache-control"], "no-store");
    assert_eq!(response.headers()["access-control-allow-origin"], "*");
    let body: Value = response.json().await.unwrap();
    let members: Vec<&str> = body
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(members, ["code", "error", "error_description"], "{body}");
    body
}

#[tokio::test]
async fn the_token_endpoint_reads_forms_as_rfc_6749_says() {
    let app = TestApp::spawn_with(oauth_on).await;
    let token = || app.client.post(app.url("/v1/oauth/token"));
    let form = |body: &'static str| {
        token()
            .header("content-type", "application/x-www-form-urlencoded")
            .body(body)
    };
    for (request, error, code) in [
        // Unknown parameters are ignored, even repeated.
        (
            form("grant_type=refresh_token&refresh_token=x&unknown=1&unknown=2"),
            "invalid_request",
            "parameter_missing",
        ),
        (
            form("grant_type=authorization_code&unknown=1&unknown=2"),
            "invalid_request",
            "parameter_missing",
        ),
        (
            form("grant_type=password"),
            "unsupported_grant_type",
            "grant_type_unsupported",
        ),
        // §3.1: an empty value is an omitted parameter.
        (form("grant_type="), "invalid_request", "parameter_missing"),
        (form("code=x"), "invalid_request", "parameter_missing"),
        // §3.1: sent twice.
        (
            form("grant_type=authorization_code&grant_type=authorization_code"),
            "invalid_request",
            "parameter_repeated",
        ),
        (form("grant_type=%FF"), "invalid_request", "form_malformed"),
        (
            token().json(&json!({"grant_type": "authorization_code"})),
            "invalid_request",
            "form_required",
        ),
        (
            token()
                .header("content-type", "text/plain")
                .body("grant_type=authorization_code"),
            "invalid_request",
            "form_required",
        ),
    ] {
        let body = token_error(request).await;
        assert_eq!(
            (text(&body["error"]), text(&body["code"])),
            (error, code),
            "{body}"
        );
        assert!(!text(&body["error_description"]).is_empty());
    }
    let huge = format!("grant_type=x&pad={}", "a".repeat(70 * 1024));
    let body = token_error(
        token()
            .header(
                "content-type",
                "application/x-www-form-urlencoded; charset=UTF-8",
            )
            .body(huge),
    )
    .await;
    assert_eq!(
        (text(&body["error"]), text(&body["code"])),
        ("invalid_request", "payload_too_large")
    );
}

fn text(value: &Value) -> &str {
    value.as_str().unwrap_or_default()
}

/// The plan's F1: tokens' `iss` is `issuer`, so an authorization server
/// needs `issuer == public_url`, https (RFC 8414 §2) or loopback http. A
/// deployment that breaks it does not start, and says why.
#[tokio::test]
async fn a_deployment_whose_issuer_is_not_its_https_url_does_not_start() {
    for (public_url, issuer, says) in [
        (None, "mandate", "needs public_url"),
        (
            Some("http://mandate.example"),
            "http://mandate.example",
            "must be an https URL",
        ),
        (
            Some("https://mandate.example"),
            "mandate",
            "must equal public_url",
        ),
        (
            Some("https://mandate.example/"),
            "https://mandate.example/",
            "must not end with a slash",
        ),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let mut config = Config::for_test(dir.path());
        config.database.url = crate::helpers::test_database(dir.path());
        config.oauth = OAuthConfig::for_test();
        config.public_url = public_url.map(str::to_owned);
        config.issuer = issuer.to_owned();
        let refused = AppState::open_with_clock(config, Clock::shifted())
            .map(|_| ())
            .unwrap_err()
            .to_string();
        assert!(refused.contains(says), "{public_url:?}: {refused}");
    }
}

/// The upgrade to schema 12, on either engine: a database of the release
/// before (no OAuth tables) gains them, empty, and keeps what it held.
#[tokio::test]
async fn the_upgrade_to_schema_12_adds_the_oauth_tables() {
    use mandate_host::store::sql::Dialect;
    const TABLES: [&str; 4] = [
        "oauth_clients",
        "oauth_codes",
        "oauth_grants",
        "oauth_refresh_tokens",
    ];
    let app = TestApp::spawn().await;
    let token = app.root("mailer", &["crm:*"], &["read"]).await;
    let dir = app.stop().await;
    crate::helpers::with_database(dir.path(), |conn| {
        conn.execute_batch(crate::helpers::DROP_OAUTH_TABLES)
            .unwrap();
        crate::helpers::set_schema_version(conn, 11);
    });
    let app = TestApp::spawn_in(dir, |_| {}).await;
    expect_json(
        app.act(text(&token["jti"]), "read", "crm:lead/1", "success")
            .await,
        StatusCode::CREATED,
    )
    .await;
    let dir = app.stop().await;
    crate::helpers::with_database(dir.path(), |conn| {
        for table in TABLES {
            let rows: i64 = conn
                .query_row(&format!("SELECT count(*) FROM {table}"), [], |row| {
                    row.get(0)
                })
                .unwrap();
            assert_eq!(rows, 0, "{table}");
        }
        let version: i64 = match conn.dialect() {
            Dialect::Sqlite => conn
                .query_row("PRAGMA user_version", [], |row| row.get(0))
                .unwrap(),
            Dialect::Postgres => conn
                .query_row("SELECT version FROM mandate_schema", [], |row| row.get(0))
                .unwrap(),
        };
        assert_eq!(version, mandate_host::store::SCHEMA_VERSION);
        assert_eq!(version, 17);
    });
}

const CLIENTS: &str = "/v1/oauth/clients";

async fn register(app: &TestApp, key: &str, body: Value) -> reqwest::Response {
    app.post_auth(CLIENTS, key, &body).await
}

/// MCP "Client Registration" (pre-registration): an owner registers a
/// public client; it has an `mcl_` id, no secret, and both grant types
/// unless it asks for fewer; the list shows it until it is deleted.
#[tokio::test]
async fn an_owner_registers_lists_and_deletes_public_clients() {
    let app = TestApp::spawn_with(oauth_on).await;
    let created = expect_json(
        register(
            &app,
            &app.admin_key,
            json!({"name": "Claude Desktop", "redirect_uris": [
                "https://app.example/callback",
                "http://127.0.0.1/callback",
                "http://[::1]:8080/cb",
                "http://localhost:6274/oauth/callback"
            ]}),
        )
        .await,
        StatusCode::CREATED,
    )
    .await;
    let id = text(&created["client_id"]).to_owned();
    assert!(id.starts_with("mcl_") && id.len() == 30, "{id}");
    assert_eq!(created["name"], "Claude Desktop");
    assert_eq!(
        created["grant_types"],
        json!(["authorization_code", "refresh_token"])
    );
    assert_eq!(created["token_endpoint_auth_method"], "none");
    assert_eq!(
        created["redirect_uris"][3],
        "http://localhost:6274/oauth/callback"
    );
    let only_code = expect_json(
        register(
            &app,
            &app.admin_key,
            json!({"name": "One-off", "redirect_uris": ["https://a.example/cb"], "grant_types": ["authorization_code"]}),
        )
        .await,
        StatusCode::CREATED,
    )
    .await;
    assert_eq!(only_code["grant_types"], json!(["authorization_code"]));
    let listed = expect_json(app.get_auth(CLIENTS, &app.admin_key).await, StatusCode::OK).await;
    assert_eq!(listed["clients"], json!([only_code, created]));
    let delete = |key: String, id: String| {
        let app = &app;
        async move {
            app.send(
                reqwest::Method::DELETE,
                &format!("{CLIENTS}/{id}"),
                &key,
                None,
            )
            .await
        }
    };
    assert_eq!(
        delete(app.admin_key.clone(), id.clone()).await.status(),
        StatusCode::NO_CONTENT
    );
    expect_problem(
        delete(app.admin_key.clone(), id.clone()).await,
        StatusCode::NOT_FOUND,
        "client_not_found",
    )
    .await;
    let listed = expect_json(app.get_auth(CLIENTS, &app.admin_key).await, StatusCode::OK).await;
    assert_eq!(listed["clients"], json!([only_code]));
}

/// Another organisation's client is unknown, exactly like one that does
/// not exist; its list holds only its own.
#[tokio::test]
async fn another_organisations_client_is_unknown() {
    let app = TestApp::spawn_with(oauth_on).await;
    let (_, beta) = app.org("beta").await;
    let alpha_client = expect_json(
        register(
            &app,
            &app.admin_key,
            json!({"name": "A", "redirect_uris": ["https://a.example/cb"]}),
        )
        .await,
        StatusCode::CREATED,
    )
    .await;
    let listed = expect_json(app.get_auth(CLIENTS, &beta).await, StatusCode::OK).await;
    assert_eq!(listed["clients"], json!([]));
    for id in [
        text(&alpha_client["client_id"]),
        "mcl_01kaqv3f00000000000000000a",
        "nonsense",
    ] {
        expect_problem(
            app.send(
                reqwest::Method::DELETE,
                &format!("{CLIENTS}/{id}"),
                &beta,
                None,
            )
            .await,
            StatusCode::NOT_FOUND,
            "client_not_found",
        )
        .await;
    }
    let listed = expect_json(app.get_auth(CLIENTS, &app.admin_key).await, StatusCode::OK).await;
    assert_eq!(listed["clients"].as_array().unwrap().len(), 1);
}

/// Redirect URIs (RFC 6749 §3.1.2: absolute, no fragment; RFC 8252
/// §7.3/§8.3 and OAuth 2.1: https, or http only on a loopback host).
#[tokio::test]
async fn redirect_uris_must_be_https_or_loopback_absolute_and_without_fragment() {
    let app = TestApp::spawn_with(oauth_on).await;
    let long = format!("https://app.example/{}", "a".repeat(2048));
    for (uris, code, field) in [
        (
            json!(["http://app.example/cb"]),
            "redirect_uri_invalid",
            "redirect_uris[0]",
        ),
        (
            json!(["http://10.0.0.1/cb"]),
            "redirect_uri_invalid",
            "redirect_uris[0]",
        ),
        (
            json!(["https://app.example/cb#frag"]),
            "redirect_uri_invalid",
            "redirect_uris[0]",
        ),
        (
            json!(["https://app.example/cb#"]),
            "redirect_uri_invalid",
            "redirect_uris[0]",
        ),
        (
            json!(["/callback"]),
            "redirect_uri_invalid",
            "redirect_uris[0]",
        ),
        (
            json!(["app.example/cb"]),
            "redirect_uri_invalid",
            "redirect_uris[0]",
        ),
        (
            json!(["com.example.app:/cb"]),
            "redirect_uri_invalid",
            "redirect_uris[0]",
        ),
        (
            json!(["javascript:alert(1)"]),
            "redirect_uri_invalid",
            "redirect_uris[0]",
        ),
        (
            json!(["https://u:p@app.example/cb"]),
            "redirect_uri_invalid",
            "redirect_uris[0]",
        ),
        (
            json!([" https://app.example/cb"]),
            "redirect_uri_invalid",
            "redirect_uris[0]",
        ),
        (
            json!(["https://app.example/c b"]),
            "redirect_uri_invalid",
            "redirect_uris[0]",
        ),
        (
            json!(["https://ok.example/cb", long]),
            "redirect_uri_invalid",
            "redirect_uris[1]",
        ),
        (json!([]), "empty_list", "redirect_uris"),
        (
            json!(["https://a.example/cb", "https://a.example/cb"]),
            "duplicate_entry",
            "redirect_uris",
        ),
        (
            json!(
                (0..11)
                    .map(|n| format!("https://a.example/{n}"))
                    .collect::<Vec<_>>()
            ),
            "list_too_long",
            "redirect_uris",
        ),
    ] {
        let problem = expect_problem(
            register(
                &app,
                &app.admin_key,
                json!({"name": "X", "redirect_uris": uris}),
            )
            .await,
            StatusCode::UNPROCESSABLE_ENTITY,
            code,
        )
        .await;
        assert_eq!(problem["field"], field, "{uris}");
    }
    for (body, code, field) in [
        (
            json!({"name": " ", "redirect_uris": ["https://a.example/cb"]}),
            "empty_text",
            "name",
        ),
        (
            json!({"name": "x".repeat(101), "redirect_uris": ["https://a.example/cb"]}),
            "too_long",
            "name",
        ),
        (
            json!({"name": "x", "redirect_uris": ["https://a.example/cb"], "grant_types": ["refresh_token"]}),
            "grant_type_unsupported",
            "grant_types",
        ),
        (
            json!({"name": "x", "redirect_uris": ["https://a.example/cb"], "grant_types": ["authorization_code", "password"]}),
            "grant_type_unsupported",
            "grant_types",
        ),
        (
            json!({"name": "x", "redirect_uris": ["https://a.example/cb"], "client_secret": "s"}),
            "unknown_field",
            "client_secret",
        ),
    ] {
        let problem = expect_problem(
            register(&app, &app.admin_key, body.clone()).await,
            StatusCode::UNPROCESSABLE_ENTITY,
            code,
        )
        .await;
        assert_eq!(problem["field"], field, "{body}");
    }
    let listed = expect_json(app.get_auth(CLIENTS, &app.admin_key).await, StatusCode::OK).await;
    assert_eq!(listed["clients"], json!([]));
}

/// Only `manage_clients` (owners) may touch clients; with `[oauth]` off
/// the paths are not there even for an owner.
#[tokio::test]
async fn only_owners_manage_clients_and_only_with_oauth_on() {
    let app = TestApp::spawn_with(oauth_on).await;
    let body = json!({"name": "X", "redirect_uris": ["https://a.example/cb"]});
    for role in ["developer", "reviewer", "auditor", "gateway"] {
        let key = app
            .key(&app.admin_key, role, Some(&format!("{role}@example.com")))
            .await;
        expect_problem(
            register(&app, &key, body.clone()).await,
            StatusCode::FORBIDDEN,
            "role_forbidden",
        )
        .await;
        expect_problem(
            app.get_auth(CLIENTS, &key).await,
            StatusCode::FORBIDDEN,
            "role_forbidden",
        )
        .await;
    }
    let off = TestApp::spawn().await;
    expect_problem(
        register(&off, &off.admin_key, body).await,
        StatusCode::NOT_FOUND,
        "not_found",
    )
    .await;
    expect_problem(
        off.get_auth(CLIENTS, &off.admin_key).await,
        StatusCode::NOT_FOUND,
        "not_found",
    )
    .await;
}

// ---- The authorization code flow (docs/oauth.md; plan §2.1, §2.5, §1.4) ----

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use sha2::{Digest as _, Sha256};

const VERIFIER: &str = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk";
const RESOURCE: &str = "https://mcp.example/mcp";
const REDIRECT: &str = "https://app.example/cb";

/// `name=value&…`, each part percent-encoded (the test client has no
/// form or query encoder of its own).
fn encoded<K: AsRef<str>, V: AsRef<str>>(pairs: &[(K, V)]) -> String {
    use percent_encoding::{NON_ALPHANUMERIC, utf8_percent_encode};
    pairs
        .iter()
        .map(|(k, v)| {
            format!(
                "{}={}",
                utf8_percent_encode(k.as_ref(), NON_ALPHANUMERIC),
                utf8_percent_encode(v.as_ref(), NON_ALPHANUMERIC)
            )
        })
        .collect::<Vec<_>>()
        .join("&")
}

/// A form body (RFC 6749 §3.2).
trait FormBody {
    fn form_of<K: AsRef<str>, V: AsRef<str>>(self, pairs: &[(K, V)]) -> Self;
}

impl FormBody for reqwest::RequestBuilder {
    fn form_of<K: AsRef<str>, V: AsRef<str>>(self, pairs: &[(K, V)]) -> Self {
        self.header("content-type", "application/x-www-form-urlencoded")
            .body(encoded(pairs))
    }
}

fn challenge(verifier: &str) -> String {
    URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()))
}

/// A client that shows redirects instead of following them.
fn browser() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
}

/// A server with `[oauth]` on, a client of the default organisation
/// (`REDIRECT` and the port-free loopback callback), and a developer's
/// key to consent with.
struct Flow {
    app: TestApp,
    client_id: String,
    developer: String,
}

impl Flow {
    async fn start() -> Flow {
        Flow::on(TestApp::spawn_with(oauth_on).await).await
    }

    async fn on(app: TestApp) -> Flow {
        Flow::registered(app, json!({})).await
    }

    /// As [`Flow::on`], the client registered with `more` (e.g. its
    /// `grant_types`) besides its name and redirect URIs.
    async fn registered(app: TestApp, more: Value) -> Flow {
        let mut body =
            json!({"name": "Claude", "redirect_uris": [REDIRECT, "http://127.0.0.1/callback"]});
        for (name, value) in more.as_object().unwrap() {
            body[name] = value.clone();
        }
        let client = expect_json(
            register(&app, &app.admin_key, body).await,
            StatusCode::CREATED,
        )
        .await;
        let developer = app
            .key(&app.admin_key, "developer", Some("dev@example.com"))
            .await;
        Flow {
            client_id: text(&client["client_id"]).to_owned(),
            developer,
            app,
        }
    }

    /// The authorization request's parameters, changed by `edit` (a
    /// `None` value drops the parameter).
    fn parameters(&self, edit: &[(&str, Option<&str>)]) -> Vec<(String, String)> {
        let challenge = challenge(VERIFIER);
        let mut parameters: Vec<(String, Option<String>)> = [
            ("response_type", "code"),
            ("client_id", self.client_id.as_str()),
            ("redirect_uri", REDIRECT),
            ("code_challenge", challenge.as_str()),
            ("code_challenge_method", "S256"),
            ("resource", RESOURCE),
            ("scope", "read write crm:*"),
            ("state", "af0ifjsldkj+/ =x"),
        ]
        .iter()
        .map(|(k, v)| ((*k).to_owned(), Some((*v).to_owned())))
        .collect();
        for (name, value) in edit {
            match parameters.iter_mut().find(|(k, _)| k == name) {
                Some(slot) => slot.1 = value.map(str::to_owned),
                None => parameters.push(((*name).to_owned(), value.map(str::to_owned))),
            }
        }
        parameters
            .into_iter()
            .filter_map(|(k, v)| v.map(|v| (k, v)))
            .collect()
    }

    async fn authorize_with(&self, parameters: &[(String, String)]) -> reqwest::Response {
        browser()
            .get(format!(
                "{}?{}",
                self.app.url("/v1/oauth/authorize"),
                encoded(parameters)
            ))
            .send()
            .await
            .unwrap()
    }

    async fn authorize(&self, edit: &[(&str, Option<&str>)]) -> reqwest::Response {
        self.authorize_with(&self.parameters(edit)).await
    }

    /// The sealed request of a successful authorization.
    async fn sealed(&self) -> String {
        let response = self.authorize(&[]).await;
        assert_eq!(response.status(), StatusCode::SEE_OTHER);
        let location = location(&response);
        let consent = format!("{}/oauth/consent?request=", self.app.base);
        assert!(location.starts_with(&consent), "{location}");
        query_of(&location)["request"].clone()
    }

    async fn decide(&self, key: &str, body: Value) -> reqwest::Response {
        self.app
            .post_auth("/v1/oauth/requests/decision", key, &body)
            .await
    }

    /// Approves `sealed` with `grant`; the redirect's parameters.
    async fn approve(
        &self,
        sealed: &str,
        grant: Value,
    ) -> std::collections::BTreeMap<String, String> {
        let answer = expect_json(
            self.decide(
                &self.developer,
                json!({"request": sealed, "decision": "approve", "grant": grant}),
            )
            .await,
            StatusCode::OK,
        )
        .await;
        let redirect = text(&answer["redirect"]);
        assert!(redirect.starts_with(&format!("{REDIRECT}?")), "{redirect}");
        query_of(redirect)
    }

    async fn code(&self) -> String {
        let sealed = self.sealed().await;
        self.approve(
            &sealed,
            json!({"actions": ["read"], "resources": ["crm:*"]}),
        )
        .await["code"]
            .clone()
    }

    async fn token(&self, form: &[(&str, &str)]) -> reqwest::Response {
        self.app
            .client
            .post(self.app.url("/v1/oauth/token"))
            .form_of(form)
            .send()
            .await
            .unwrap()
    }

    /// A redeemed consent granting `grant`: the token response.
    async fn granted(&self, grant: Value) -> Value {
        let sealed = self.sealed().await;
        let code = self.approve(&sealed, grant).await["code"].clone();
        expect_json(self.redeem(&code).await, StatusCode::OK).await
    }

    /// A refresh with `refresh_token` by this client, and `more`.
    async fn refresh(&self, refresh_token: &str, more: &[(&str, &str)]) -> reqwest::Response {
        let mut form = vec![
            ("grant_type", "refresh_token"),
            ("refresh_token", refresh_token),
            ("client_id", self.client_id.as_str()),
        ];
        form.extend_from_slice(more);
        self.token(&form).await
    }

    /// The OAuth error of a refresh.
    async fn refresh_refused(
        &self,
        refresh_token: &str,
        more: &[(&str, &str)],
    ) -> (String, String) {
        let response = self.refresh(refresh_token, more).await;
        oauth_error_of(response).await
    }

    /// RFC 7009 revocation of `token` with `more`.
    async fn revoke(&self, token: &str, more: &[(&str, &str)]) -> reqwest::Response {
        let mut form = vec![("token", token)];
        form.extend_from_slice(more);
        self.app
            .client
            .post(self.app.url("/v1/oauth/revoke"))
            .form_of(&form)
            .send()
            .await
            .unwrap()
    }

    async fn redeem(&self, code: &str) -> reqwest::Response {
        self.token(&[
            ("grant_type", "authorization_code"),
            ("code", code),
            ("client_id", &self.client_id),
            ("redirect_uri", REDIRECT),
            ("code_verifier", VERIFIER),
            ("resource", RESOURCE),
        ])
        .await
    }
}

/// An OAuth error answer (RFC 6749 §5.2): 400, JSON, `no-store`; its
/// `error` and Mandate's `code`.
async fn oauth_error_of(response: reqwest::Response) -> (String, String) {
    assert_eq!(response.headers()["cache-control"], "no-store");
    let body = expect_json(response, StatusCode::BAD_REQUEST).await;
    (
        text(&body["error"]).to_owned(),
        text(&body["code"]).to_owned(),
    )
}

fn location(response: &reqwest::Response) -> String {
    response.headers()["location"].to_str().unwrap().to_owned()
}

fn query_of(url: &str) -> std::collections::BTreeMap<String, String> {
    reqwest::Url::parse(url)
        .unwrap()
        .query_pairs()
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect()
}

/// The claims of a compact token, unverified.
fn claims_of(compact: &str) -> Value {
    let payload = compact.split('.').nth(1).unwrap();
    serde_json::from_slice(&URL_SAFE_NO_PAD.decode(payload).unwrap()).unwrap()
}

/// RFC 6749 §4.1.2.1, RFC 9700 §4.1.3: until the redirect URI is matched
/// exactly (a loopback IP literal on any port, RFC 8252 §7.3), a refusal is
/// a problem on the page and no `Location` is sent anywhere.
#[tokio::test]
async fn redirect_uri_must_match_exactly() {
    let flow = Flow::start().await;
    for (redirect, accepted) in [
        ("https://app.example/cb/evil", false),
        ("https://app.example/c", false),
        ("https://APP.example/cb", false),
        ("https://app.example/cb/", false),
        ("https://app.example/cb?x=1", false),
        ("https://app.example@evil.example/cb", false),
        ("https://app.example/cb#f", false),
        ("http://app.example/cb", false),
        ("http://localhost/callback", false),
        ("http://127.0.0.1:53682/callback", true),
        ("http://127.0.0.1/callback", true),
        ("http://127.0.0.1:53682/other", false),
        ("https://app.example/cb", true),
    ] {
        let response = flow.authorize(&[("redirect_uri", Some(redirect))]).await;
        if accepted {
            assert_eq!(response.status(), StatusCode::SEE_OTHER, "{redirect}");
            assert!(location(&response).contains("/oauth/consent?request="));
        } else {
            assert!(response.headers().get("location").is_none(), "{redirect}");
            expect_problem(response, StatusCode::BAD_REQUEST, "redirect_uri_mismatch").await;
        }
    }
    for (edit, status, code) in [
        (
            vec![("client_id", None)],
            StatusCode::BAD_REQUEST,
            "parameter_missing",
        ),
        (
            vec![("redirect_uri", None)],
            StatusCode::BAD_REQUEST,
            "parameter_missing",
        ),
        (
            vec![("client_id", Some("mcl_01kaqv3f00000000000000000a"))],
            StatusCode::NOT_FOUND,
            "client_not_found",
        ),
        // A metadata document's URL is checked for its form here (the
        // document is fetched after sign-in: oauth/documents.rs).
        (
            vec![("client_id", Some("https://client.example/meta.json?v=1"))],
            StatusCode::BAD_REQUEST,
            "client_id_invalid",
        ),
    ] {
        let response = flow.authorize(&edit).await;
        assert!(response.headers().get("location").is_none(), "{edit:?}");
        expect_problem(response, status, code).await;
    }
    let mut twice = flow.parameters(&[]);
    twice.push(("redirect_uri".to_owned(), REDIRECT.to_owned()));
    let response = flow.authorize_with(&twice).await;
    assert!(response.headers().get("location").is_none());
    expect_problem(response, StatusCode::BAD_REQUEST, "parameter_repeated").await;
}

/// After the redirect URI is verified, refusals go back to it with
/// `error`, `state` as sent and `iss` (RFC 6749 §4.1.2.1, RFC 9207 §2);
/// PKCE is S256 only (RFC 7636 §4.4.1, RFC 9700 §2.1.1) — and at the token
/// endpoint the verifier must prove the challenge (§4.6).
#[tokio::test]
async fn pkce_downgrade_is_refused() {
    let flow = Flow::start().await;
    let short = "a".repeat(42);
    for (edit, error) in [
        (vec![("code_challenge", None)], "invalid_request"),
        (
            vec![("code_challenge_method", Some("plain"))],
            "invalid_request",
        ),
        (vec![("code_challenge_method", None)], "invalid_request"),
        (
            vec![("code_challenge", Some(short.as_str()))],
            "invalid_request",
        ),
        (
            vec![("response_type", Some("token"))],
            "unsupported_response_type",
        ),
        (vec![("response_type", None)], "invalid_request"),
        (vec![("resource", None)], "invalid_target"),
        (vec![("resource", Some("/mcp"))], "invalid_target"),
        (
            vec![("resource", Some("https://mcp.example/mcp#x"))],
            "invalid_target",
        ),
        (vec![("scope", Some("read  crm:*"))], "invalid_scope"),
        (vec![("scope", Some("Read"))], "invalid_scope"),
        (vec![("dpop_jkt", Some("short"))], "invalid_request"),
    ] {
        let response = flow.authorize(&edit).await;
        assert_eq!(response.status(), StatusCode::SEE_OTHER, "{edit:?}");
        let back = location(&response);
        assert!(back.starts_with(&format!("{REDIRECT}?")), "{back}");
        let query = query_of(&back);
        assert_eq!(query["error"], error, "{edit:?}");
        assert_eq!(query["state"], "af0ifjsldkj+/ =x", "{edit:?}");
        assert_eq!(query["iss"], flow.app.base, "{edit:?}");
    }
    // `state` absent: omitted; too long: refused, not echoed.
    let query = query_of(&location(
        &flow
            .authorize(&[("state", None), ("code_challenge_method", Some("plain"))])
            .await,
    ));
    assert!(!query.contains_key("state"));
    let long = "s".repeat(1025);
    let query = query_of(&location(&flow.authorize(&[("state", Some(&long))]).await));
    assert_eq!(
        (query["error"].as_str(), query.contains_key("state")),
        ("invalid_request", false)
    );
    let mut two = flow.parameters(&[]);
    two.push((
        "resource".to_owned(),
        "https://other.example/mcp".to_owned(),
    ));
    let query = query_of(&location(&flow.authorize_with(&two).await));
    assert_eq!(query["error"], "invalid_target");
    // At the token endpoint (RFC 7636 §4.6).
    for (verifier, error, code) in [
        (None, "invalid_request", "code_verifier_missing"),
        (
            Some("x".repeat(42)),
            "invalid_request",
            "code_verifier_invalid",
        ),
        (
            Some("x".repeat(129)),
            "invalid_request",
            "code_verifier_invalid",
        ),
        (
            Some(format!("{}!", "x".repeat(42))),
            "invalid_request",
            "code_verifier_invalid",
        ),
        (
            Some(challenge(VERIFIER)),
            "invalid_grant",
            "code_verifier_mismatch",
        ),
        (
            Some("y".repeat(43)),
            "invalid_grant",
            "code_verifier_mismatch",
        ),
    ] {
        let code_value = flow.code().await;
        let mut form = vec![
            ("grant_type", "authorization_code"),
            ("code", code_value.as_str()),
            ("client_id", flow.client_id.as_str()),
            ("redirect_uri", REDIRECT),
        ];
        if let Some(verifier) = &verifier {
            form.push(("code_verifier", verifier));
        }
        let body = token_error(
            flow.app
                .client
                .post(flow.app.url("/v1/oauth/token"))
                .form_of(&form),
        )
        .await;
        assert_eq!(
            (text(&body["error"]), text(&body["code"])),
            (error, code),
            "{verifier:?}"
        );
    }
}

/// The sealed request (plan §1.3): changed, expired, or made by another
/// deployment, it opens nowhere — 400 `request_invalid`, never a redirect.
#[tokio::test]
async fn a_sealed_request_opens_only_unchanged_unexpired_and_here() {
    let flow = Flow::start().await;
    let sealed = flow.sealed().await;
    let open = |key: String, request: String| {
        let app = &flow.app;
        async move {
            app.post_auth(
                "/v1/oauth/requests/open",
                &key,
                &json!({"request": request}),
            )
            .await
        }
    };
    let opened = expect_json(
        open(flow.developer.clone(), sealed.clone()).await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(opened["client_id"], flow.client_id.as_str());
    assert_eq!(opened["client_name"], "Claude");
    assert_eq!(opened["redirect_host"], "app.example");
    assert_eq!(opened["redirect_loopback"], false);
    assert_eq!(opened["resource"], RESOURCE);
    assert_eq!(opened["actions"], json!(["read", "write"]));
    assert_eq!(opened["resources"], json!(["crm:*"]));
    assert!(text(&opened["agent_id"]).starts_with("oauth-"));
    let mut bytes = URL_SAFE_NO_PAD.decode(&sealed).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 1;
    let other = Flow::start().await;
    let elsewhere = other.sealed().await;
    for changed in [
        URL_SAFE_NO_PAD.encode(&bytes),
        "nonsense".to_owned(),
        elsewhere,
    ] {
        expect_problem(
            open(flow.developer.clone(), changed.clone()).await,
            StatusCode::BAD_REQUEST,
            "request_invalid",
        )
        .await;
        expect_problem(
            flow.decide(
                &flow.developer,
                json!({"request": changed, "decision": "deny"}),
            )
            .await,
            StatusCode::BAD_REQUEST,
            "request_invalid",
        )
        .await;
    }
    flow.app.clock.advance(std::time::Duration::from_secs(601));
    expect_problem(
        open(flow.developer.clone(), sealed).await,
        StatusCode::BAD_REQUEST,
        "request_invalid",
    )
    .await;
}

/// The decision API (plan §2.5): an API key in a header (no ambient
/// credential: a cross-site form can send neither it nor JSON), JSON only;
/// deny writes nothing and answers `access_denied` with `state` and `iss`;
/// a grant wider than asked is refused naming the field; one approval per
/// request.
#[tokio::test]
async fn the_decision_needs_a_key_json_and_a_grant_no_wider_than_asked() {
    let flow = Flow::start().await;
    let sealed = flow.sealed().await;
    let decision = flow.app.url("/v1/oauth/requests/decision");
    let approve = json!({"request": sealed, "decision": "approve", "grant": {"actions": ["read"], "resources": ["crm:*"]}});
    expect_problem(
        flow.app
            .client
            .post(&decision)
            .json(&approve)
            .send()
            .await
            .unwrap(),
        StatusCode::UNAUTHORIZED,
        "unauthorized",
    )
    .await;
    expect_problem(
        flow.app
            .client
            .post(&decision)
            .bearer_auth(&flow.developer)
            .header("content-type", "text/plain")
            .body(approve.to_string())
            .send()
            .await
            .unwrap(),
        StatusCode::UNSUPPORTED_MEDIA_TYPE,
        "unsupported_media_type",
    )
    .await;
    // The admin key is made for nobody: a consent is a person's.
    expect_problem(
        flow.decide(&flow.app.admin_key, approve.clone()).await,
        StatusCode::FORBIDDEN,
        "consent_needs_email",
    )
    .await;
    for (grant, field) in [
        (
            json!({"actions": ["read", "delete"], "resources": ["crm:*"]}),
            "actions",
        ),
        (
            json!({"actions": ["read"], "resources": ["mail:*"]}),
            "resources",
        ),
    ] {
        let problem = expect_problem(
            flow.decide(
                &flow.developer,
                json!({"request": sealed, "decision": "approve", "grant": grant}),
            )
            .await,
            StatusCode::FORBIDDEN,
            "scope_widening",
        )
        .await;
        assert_eq!(problem["violations"][0]["field"], field, "{problem}");
    }
    let denied = expect_json(
        flow.decide(
            &flow.developer,
            json!({"request": sealed, "decision": "deny"}),
        )
        .await,
        StatusCode::OK,
    )
    .await;
    let query = query_of(text(&denied["redirect"]));
    assert_eq!(query["error"], "access_denied");
    assert_eq!(query["state"], "af0ifjsldkj+/ =x");
    assert_eq!(query["iss"], flow.app.base);
    let codes = || {
        flow.app.with_database(|conn| {
            conn.query_row("SELECT count(*) FROM oauth_codes", [], |row| {
                row.get::<_, i64>(0)
            })
            .unwrap()
        })
    };
    assert_eq!(codes(), 0);
    let query = flow
        .approve(
            &sealed,
            json!({"actions": ["read"], "resources": ["crm:contacts"]}),
        )
        .await;
    assert!(query["code"].starts_with("moc_") && query["code"].len() == 47);
    assert_eq!(query["state"], "af0ifjsldkj+/ =x");
    assert_eq!(query["iss"], flow.app.base);
    assert_eq!(codes(), 1);
    expect_problem(
        flow.decide(&flow.developer, approve).await,
        StatusCode::CONFLICT,
        "request_answered",
    )
    .await;
    assert_eq!(codes(), 1);
}

/// A request without `scope` (the MCP conformance suite's sends none) is
/// granted what the person names on the consent page, actions and
/// resource patterns (RFC 6749 §3.3: the resource owner's instructions);
/// the token response says what was granted (§5.1).
#[tokio::test]
async fn a_request_without_scope_is_granted_what_the_person_names() {
    let flow = Flow::start().await;
    let response = flow.authorize(&[("scope", None)]).await;
    assert_eq!(response.status(), StatusCode::SEE_OTHER);
    let sealed = query_of(&location(&response))["request"].clone();
    let opened = expect_json(
        flow.app
            .post_auth(
                "/v1/oauth/requests/open",
                &flow.developer,
                &json!({"request": sealed}),
            )
            .await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(opened["actions"], json!([]));
    assert_eq!(opened["resources"], json!([]));
    let redirect = flow
        .approve(
            &sealed,
            json!({"actions": ["read"], "resources": ["crm:contacts"]}),
        )
        .await;
    let issued = expect_json(flow.redeem(&redirect["code"]).await, StatusCode::OK).await;
    assert_eq!(issued["scope"], "read crm:contacts");
}

/// Plan §1.4 end to end: authorize → open → decision → token; the access
/// token is a VAT renewing the grant root (`aud` the resource, 900 s), it
/// records an action in the root's workflow, and revoking the root ends
/// it. A code used twice is refused and revokes what it issued (RFC 6749
/// §4.1.2).
#[tokio::test]
async fn a_code_becomes_a_vat_in_the_grant_roots_workflow_once() {
    let flow = Flow::start().await;
    let code = flow.code().await;
    let response = flow.redeem(&code).await;
    assert_eq!(response.headers()["cache-control"], "no-store");
    let issued = expect_json(response, StatusCode::OK).await;
    assert_eq!(issued["token_type"], "Bearer");
    assert_eq!(issued["expires_in"], 900);
    assert_eq!(issued["scope"], "read crm:*");
    // The client is registered for `refresh_token` (the default).
    let refresh = text(&issued["refresh_token"]).to_owned();
    assert!(
        refresh.starts_with("mrt_") && refresh.len() == 47,
        "{refresh}"
    );
    let access = text(&issued["access_token"]).to_owned();
    let claims = claims_of(&access);
    assert_eq!(claims["aud"], RESOURCE);
    assert_eq!(claims["iss"], flow.app.base);
    assert_eq!(claims["svc_depth"], 1);
    assert!(text(&claims["sub"]).starts_with("agent:oauth-"), "{claims}");
    let (root_jti, agent): (String, String) = flow.app.with_database(|conn| {
        conn.query_row("SELECT root_jti, agent_id FROM oauth_grants", [], |row| {
            Ok((row.get(0)?, row.get(1)?))
        })
        .unwrap()
    });
    assert_eq!(format!("agent:{agent}"), text(&claims["sub"]));
    // A renewal is not a delegation: the root counts no child.
    let children: i64 = flow.app.with_database(|conn| {
        conn.query_row(
            "SELECT children FROM tokens WHERE jti = ?1",
            [root_jti.as_str()],
            |row| row.get(0),
        )
        .unwrap()
    });
    assert_eq!(children, 0);
    let record = expect_json(
        flow.app
            .post_auth(
                "/v1/vat/record/action",
                &access,
                &json!({"action": "read", "resource": "crm:lead/1", "result": "success"}),
            )
            .await,
        StatusCode::CREATED,
    )
    .await;
    assert_eq!(record["provenance_ref"], claims["svc_prov"], "{record}");
    // Replayed: refused, and what the code issued is revoked.
    let body = token_error(
        flow.app
            .client
            .post(flow.app.url("/v1/oauth/token"))
            .form_of(&[
                ("grant_type", "authorization_code"),
                ("code", code.as_str()),
                ("client_id", flow.client_id.as_str()),
                ("redirect_uri", REDIRECT),
                ("code_verifier", VERIFIER),
            ]),
    )
    .await;
    assert_eq!(
        (text(&body["error"]), text(&body["code"])),
        ("invalid_grant", "code_invalid")
    );
    let after = flow
        .app
        .post_auth(
            "/v1/vat/record/action",
            &access,
            &json!({"action": "read", "resource": "crm:lead/2", "result": "success"}),
        )
        .await;
    assert_eq!(
        after.status(),
        StatusCode::UNAUTHORIZED,
        "{}",
        after.text().await.unwrap()
    );
    let reason: Option<String> = flow.app.with_database(|conn| {
        conn.query_row("SELECT revoke_reason FROM oauth_grants", [], |row| {
            row.get(0)
        })
        .unwrap()
    });
    assert_eq!(reason.as_deref(), Some("code_replayed"));
    // The refresh token the code issued died with the grant.
    assert_eq!(
        flow.refresh_refused(&refresh, &[]).await,
        ("invalid_grant".to_owned(), "grant_revoked".to_owned())
    );
    // Revoking the grant root ends a grant's access token.
    let second = flow.code().await;
    let access =
        text(&expect_json(flow.redeem(&second).await, StatusCode::OK).await["access_token"])
            .to_owned();
    let root_jti: String = flow.app.with_database(|conn| {
        conn.query_row(
            "SELECT root_jti FROM oauth_grants WHERE revoked_at IS NULL",
            [],
            |row| row.get(0),
        )
        .unwrap()
    });
    expect_json(
        flow.app
            .post_auth(
                "/v1/vat/revoke",
                &flow.app.admin_key,
                &json!({"jti": root_jti}),
            )
            .await,
        StatusCode::OK,
    )
    .await;
    let after = flow
        .app
        .post_auth(
            "/v1/vat/record/action",
            &access,
            &json!({"action": "read", "resource": "crm:lead/3", "result": "success"}),
        )
        .await;
    assert_eq!(after.status(), StatusCode::UNAUTHORIZED);
}

/// RFC 8707 §2.2 and the token request's equalities: `resource` the
/// authorized one, `redirect_uri` and `client_id` the code's; a code
/// expires (60 s).
#[tokio::test]
async fn the_token_request_must_repeat_what_was_authorized() {
    let flow = Flow::start().await;
    for (name, value, error, code) in [
        (
            "resource",
            "https://other.example/mcp",
            "invalid_target",
            "resource_mismatch",
        ),
        (
            "redirect_uri",
            "http://127.0.0.1/callback",
            "invalid_grant",
            "redirect_uri_mismatch",
        ),
        (
            "client_id",
            "mcl_01kaqv3f00000000000000000a",
            "invalid_grant",
            "code_invalid",
        ),
    ] {
        let code_value = flow.code().await;
        let mut form: Vec<(&str, &str)> = vec![
            ("grant_type", "authorization_code"),
            ("code", &code_value),
            ("client_id", &flow.client_id),
            ("redirect_uri", REDIRECT),
            ("code_verifier", VERIFIER),
            ("resource", RESOURCE),
        ];
        form.iter_mut().find(|(k, _)| *k == name).unwrap().1 = value;
        let body = token_error(
            flow.app
                .client
                .post(flow.app.url("/v1/oauth/token"))
                .form_of(&form),
        )
        .await;
        assert_eq!(
            (text(&body["error"]), text(&body["code"])),
            (error, code),
            "{name}"
        );
        // The refusal did not use the code up.
        expect_json(flow.redeem(&code_value).await, StatusCode::OK).await;
    }
    let late = flow.code().await;
    flow.app.clock.advance(std::time::Duration::from_secs(61));
    let body = token_error(
        flow.app
            .client
            .post(flow.app.url("/v1/oauth/token"))
            .form_of(&[
                ("grant_type", "authorization_code"),
                ("code", late.as_str()),
                ("client_id", flow.client_id.as_str()),
                ("redirect_uri", REDIRECT),
                ("code_verifier", VERIFIER),
            ]),
    )
    .await;
    assert_eq!(text(&body["code"]), "code_invalid");
}

/// Mix-up (RFC 9700 §4.4, RFC 9207): a code from another deployment is
/// unknown here.
#[tokio::test]
async fn a_code_from_another_issuer_is_refused() {
    let a = Flow::start().await;
    let b = Flow::start().await;
    let code = a.code().await;
    let body = token_error(b.app.client.post(b.app.url("/v1/oauth/token")).form_of(&[
        ("grant_type", "authorization_code"),
        ("code", code.as_str()),
        ("client_id", b.client_id.as_str()),
        ("redirect_uri", REDIRECT),
        ("code_verifier", VERIFIER),
    ]))
    .await;
    assert_eq!(
        (text(&body["error"]), text(&body["code"])),
        ("invalid_grant", "code_invalid")
    );
    expect_json(a.redeem(&code).await, StatusCode::OK).await;
}

/// DESIGN §14: the agent of a consent is `oauth-…` of (client, human)
/// unless the human names one; two humans are two agents; an agent
/// another human owns is refused.
#[tokio::test]
async fn the_agent_is_the_humans_own() {
    let flow = Flow::start().await;
    let other = flow
        .app
        .key(&flow.app.admin_key, "developer", Some("other@example.com"))
        .await;
    let grant = json!({"actions": ["read"], "resources": ["crm:*"]});
    let agent_of = |access: &str| text(&claims_of(access)["sub"]).to_owned();
    let mut agents = Vec::new();
    for key in [&flow.developer, &flow.developer, &other] {
        let sealed = flow.sealed().await;
        let answer = expect_json(
            flow.decide(
                key,
                json!({"request": sealed, "decision": "approve", "grant": grant}),
            )
            .await,
            StatusCode::OK,
        )
        .await;
        let code = query_of(text(&answer["redirect"]))["code"].clone();
        let issued = expect_json(flow.redeem(&code).await, StatusCode::OK).await;
        agents.push(agent_of(text(&issued["access_token"])));
    }
    assert_eq!(agents[0], agents[1]);
    assert_ne!(agents[0], agents[2]);
    // Named: the developer's own new agent, then the other human refused it.
    let sealed = flow.sealed().await;
    let named = flow
        .approve(
            &sealed,
            json!({"agent_id": "my-crm-bot", "actions": ["read"], "resources": ["crm:*"]}),
        )
        .await;
    let issued = expect_json(flow.redeem(&named["code"]).await, StatusCode::OK).await;
    assert_eq!(agent_of(text(&issued["access_token"])), "agent:my-crm-bot");
    let sealed = flow.sealed().await;
    expect_problem(
        flow.decide(
            &other,
            json!({"request": sealed, "decision": "approve", "grant": {"agent_id": "my-crm-bot", "actions": ["read"], "resources": ["crm:*"]}}),
        )
        .await,
        StatusCode::FORBIDDEN,
        "agent_not_yours",
    )
    .await;
}

// ---- Refresh tokens, revocation, grants (chunk C8; plan §3.2, §3.3) ----

/// What a grant is read as in these tests.
const READ_CRM: &str = r#"{"actions": ["read"], "resources": ["crm:*"]}"#;

fn read_crm() -> Value {
    serde_json::from_str(READ_CRM).unwrap()
}

/// Records an act with `access`; the answer's status and code.
async fn act_with(app: &TestApp, access: &str, action: &str) -> (StatusCode, Value) {
    let response = app
        .post_auth(
            "/v1/vat/record/action",
            access,
            &json!({"action": action, "resource": "crm:lead/1", "result": "success"}),
        )
        .await;
    let status = response.status();
    (status, response.json().await.unwrap_or(Value::Null))
}

/// Whether the status list the server publishes says `compact` is revoked.
async fn revoked_in_status_list(app: &TestApp, compact: &str) -> bool {
    let claims = mandate_core::decode_unverified(compact).unwrap().claims;
    let status = claims.status.as_ref().unwrap();
    let list = app
        .client
        .get(app.url(&format!("/v1/vat/status/{}", status.idx() / 65_536)))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let jwks = app
        .client
        .get(app.url("/.well-known/jwks.json"))
        .send()
        .await
        .unwrap()
        .bytes()
        .await
        .unwrap();
    let jwks = mandate_core::Jwks::parse(&jwks).unwrap();
    let now = app.clock.now().s();
    let list = mandate_core::verify_status_list(&list, &jwks, now, None).unwrap();
    mandate_core::check_status(&claims, &list, now, None)
        == Err(mandate_core::StatusCheckError::Revoked)
}

/// The grant row's `revoke_reason`, of the only grant.
fn revoke_reason(app: &TestApp) -> Option<String> {
    app.with_database(|conn| {
        conn.query_row("SELECT revoke_reason FROM oauth_grants", [], |row| {
            row.get(0)
        })
        .unwrap()
    })
}

fn pair(error: &str, code: &str) -> (String, String) {
    (error.to_owned(), code.to_owned())
}

/// OAuth 2.1 "Refresh Token Grant", MCP security considerations "Token
/// Theft": a refresh answers a new access token — a renewal of the same
/// grant root, in the same workflow — and a new refresh token; the one
/// presented is used up. Only the hashes are stored. A client registered
/// without `refresh_token` gets none.
#[tokio::test]
async fn a_refresh_rotates_the_refresh_token_and_renews_the_grant_root() {
    let flow = Flow::start().await;
    let issued = flow.granted(read_crm()).await;
    let (first_access, first_refresh) = (
        text(&issued["access_token"]).to_owned(),
        text(&issued["refresh_token"]).to_owned(),
    );
    flow.app.clock.advance(std::time::Duration::from_secs(600));
    let response = flow.refresh(&first_refresh, &[]).await;
    assert_eq!(response.headers()["cache-control"], "no-store");
    assert_eq!(response.headers()["access-control-allow-origin"], "*");
    let renewed = expect_json(response, StatusCode::OK).await;
    assert_eq!(renewed["token_type"], "Bearer");
    assert_eq!(renewed["expires_in"], 900);
    assert_eq!(renewed["scope"], "read crm:*");
    let access = text(&renewed["access_token"]).to_owned();
    let refresh = text(&renewed["refresh_token"]).to_owned();
    assert!(refresh.starts_with("mrt_") && refresh.len() == 47);
    assert_ne!(refresh, first_refresh);
    let (before, after) = (claims_of(&first_access), claims_of(&access));
    assert_ne!(before["jti"], after["jti"]);
    for same in ["svc_parent", "svc_prov", "sub", "aud", "svc_scope"] {
        assert_eq!(before[same], after[same], "{same}");
    }
    assert_eq!(after["svc_depth"], 1);
    // Both access tokens act, in the grant root's workflow.
    for token in [&first_access, &access] {
        let (status, record) = act_with(&flow.app, token, "read").await;
        assert_eq!(status, StatusCode::CREATED, "{record}");
        assert_eq!(record["provenance_ref"], after["svc_prov"]);
    }
    let (rows, used, last_used, created): (i64, i64, i64, i64) = flow.app.with_database(|conn| {
        conn.query_row(
            "SELECT (SELECT count(*) FROM oauth_refresh_tokens),
                        (SELECT count(*) FROM oauth_refresh_tokens WHERE used_at IS NOT NULL),
                        last_used_at, created_at FROM oauth_grants",
            [],
            |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?)),
        )
        .unwrap()
    });
    assert_eq!((rows, used), (2, 1));
    assert!(last_used - created >= 600_000, "{last_used} {created}");
    let stored: Vec<Vec<u8>> = flow.app.with_database(|conn| {
        let mut statement = conn
            .prepare_cached("SELECT token_hash FROM oauth_refresh_tokens ORDER BY generation")
            .unwrap();
        statement
            .query_map([], |row| row.get(0))
            .unwrap()
            .map(Result::unwrap)
            .collect()
    });
    assert_eq!(
        stored,
        [&first_refresh, &refresh]
            .map(|token| Sha256::digest(token.as_bytes()).to_vec())
            .to_vec()
    );
    // The new one refreshes in its turn.
    expect_json(flow.refresh(&refresh, &[]).await, StatusCode::OK).await;

    let narrow = Flow::registered(
        TestApp::spawn_with(oauth_on).await,
        json!({"grant_types": ["authorization_code"]}),
    )
    .await;
    let issued = narrow.granted(read_crm()).await;
    assert!(issued.get("refresh_token").is_none(), "{issued}");
    let (error, code) = narrow.refresh_refused("mrt_none", &[]).await;
    assert_eq!(
        (error.as_str(), code.as_str()),
        ("invalid_grant", "refresh_token_invalid")
    );
}

/// RFC 9700 §4.14.2: a refresh token presented after it was rotated means
/// two parties hold the grant; the grant ends — the current refresh token
/// too, every access token of it (`token_revoked`, the status list's bit
/// set). Two refreshes racing with one token: one wins, the other is reuse
/// and ends the grant (no grace window).
#[tokio::test]
async fn a_refresh_token_reused_after_rotation_revokes_the_family() {
    let flow = Flow::start().await;
    let issued = flow.granted(read_crm()).await;
    let first_access = text(&issued["access_token"]).to_owned();
    let stolen = text(&issued["refresh_token"]).to_owned();
    let renewed = expect_json(flow.refresh(&stolen, &[]).await, StatusCode::OK).await;
    let access = text(&renewed["access_token"]).to_owned();
    let current = text(&renewed["refresh_token"]).to_owned();
    // Reuse, even by another client_id or for another resource.
    let (error, code) = flow
        .refresh_refused(&stolen, &[("resource", "https://other.example/mcp")])
        .await;
    assert_eq!((error, code), pair("invalid_grant", "refresh_token_reused"));
    assert_eq!(
        revoke_reason(&flow.app).as_deref(),
        Some("refresh_token_reused")
    );
    assert_eq!(
        flow.refresh_refused(&current, &[]).await,
        pair("invalid_grant", "grant_revoked")
    );
    for token in [&first_access, &access] {
        let (status, body) = act_with(&flow.app, token, "read").await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "{body}");
        assert_eq!(body["code"], "token_revoked", "{body}");
        assert!(revoked_in_status_list(&flow.app, token).await);
    }

    // The race.
    let race = Flow::start().await;
    let issued = race.granted(read_crm()).await;
    let token = text(&issued["refresh_token"]).to_owned();
    let (one, two) = tokio::join!(race.refresh(&token, &[]), race.refresh(&token, &[]));
    let mut statuses = [one.status(), two.status()];
    statuses.sort();
    assert_eq!(statuses, [StatusCode::OK, StatusCode::BAD_REQUEST]);
    let (won, lost) = if one.status() == StatusCode::OK {
        (one, two)
    } else {
        (two, one)
    };
    assert_eq!(
        oauth_error_of(lost).await,
        pair("invalid_grant", "refresh_token_reused")
    );
    let won = expect_json(won, StatusCode::OK).await;
    assert_eq!(
        race.refresh_refused(text(&won["refresh_token"]), &[]).await,
        pair("invalid_grant", "grant_revoked")
    );
    let (status, _) = act_with(&race.app, text(&won["access_token"]), "read").await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
}

/// `[oauth] refresh_idle_days` (7 here): a grant not refreshed for that
/// long refreshes no more, though its root lives on; each refresh starts
/// the wait again. At the root's end the grant has expired.
#[tokio::test]
async fn a_grant_idle_too_long_or_expired_refreshes_no_more() {
    let day = std::time::Duration::from_secs(86_400);
    let flow = Flow::on(
        TestApp::spawn_with(|config| {
            oauth_on(config);
            config.oauth.refresh_idle_days = std::num::NonZeroU64::new(7).unwrap();
        })
        .await,
    )
    .await;
    let thirty_days =
        json!({"actions": ["read"], "resources": ["crm:*"], "ttl_seconds": 2_592_000});
    let issued = flow.granted(thirty_days).await;
    let mut token = text(&issued["refresh_token"]).to_owned();
    // Day 6 and day 12: twelve days from the redemption, six from the last
    // refresh.
    for _ in 0..2 {
        flow.app.clock.advance(day * 6);
        let renewed = expect_json(flow.refresh(&token, &[]).await, StatusCode::OK).await;
        token = text(&renewed["refresh_token"]).to_owned();
    }
    flow.app.clock.advance(day * 7);
    assert_eq!(
        flow.refresh_refused(&token, &[]).await,
        pair("invalid_grant", "grant_idle")
    );
    // Refused, not revoked: nothing was used up or ended.
    assert_eq!(revoke_reason(&flow.app), None);

    let short = Flow::start().await;
    let issued = short.granted(read_crm()).await;
    short
        .app
        .clock
        .advance(std::time::Duration::from_secs(3_600));
    assert_eq!(
        short
            .refresh_refused(text(&issued["refresh_token"]), &[])
            .await,
        pair("invalid_grant", "grant_expired")
    );
}

/// RFC 6749 §6 and RFC 8707 §2.2: a refresh names the grant's client and,
/// if any, its resource; refusals leave the token current. Both parameters
/// are required as the form reader requires them.
#[tokio::test]
async fn a_refresh_must_name_the_grants_client_and_resource() {
    let flow = Flow::start().await;
    let other = expect_json(
        register(
            &flow.app,
            &flow.app.admin_key,
            json!({"name": "Other", "redirect_uris": [REDIRECT]}),
        )
        .await,
        StatusCode::CREATED,
    )
    .await;
    let issued = flow.granted(read_crm()).await;
    let token = text(&issued["refresh_token"]).to_owned();
    let wrong_client = flow
        .token(&[
            ("grant_type", "refresh_token"),
            ("refresh_token", &token),
            ("client_id", text(&other["client_id"])),
        ])
        .await;
    assert_eq!(
        oauth_error_of(wrong_client).await,
        pair("invalid_grant", "refresh_token_invalid")
    );
    assert_eq!(
        flow.refresh_refused(&token, &[("resource", "https://other.example/mcp")])
            .await,
        pair("invalid_target", "resource_mismatch")
    );
    let no_client = flow
        .token(&[("grant_type", "refresh_token"), ("refresh_token", &token)])
        .await;
    assert_eq!(
        oauth_error_of(no_client).await,
        pair("invalid_request", "parameter_missing")
    );
    let no_token = flow
        .token(&[
            ("grant_type", "refresh_token"),
            ("client_id", &flow.client_id),
        ])
        .await;
    assert_eq!(
        oauth_error_of(no_token).await,
        pair("invalid_request", "parameter_missing")
    );
    assert_eq!(
        flow.refresh_refused("mrt_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", &[])
            .await,
        pair("invalid_grant", "refresh_token_invalid")
    );
    // None of that used the token up; the grant's own resource is taken.
    expect_json(
        flow.refresh(&token, &[("resource", RESOURCE)]).await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(revoke_reason(&flow.app), None);
}

/// RFC 6749 §6: `scope` on a refresh may narrow the new access token —
/// by core's delegation rules, so what it leaves out is the grant's — and
/// never widen it (`invalid_scope`); the grant keeps its scope for the next
/// refresh.
#[tokio::test]
async fn a_refresh_may_narrow_the_scope_and_never_widen_it() {
    let flow = Flow::start().await;
    let issued = flow
        .granted(json!({"actions": ["read", "write"], "resources": ["crm:*"], "constraints": {"max_actions": 50}}))
        .await;
    let mut token = text(&issued["refresh_token"]).to_owned();
    for (asked, error, code) in [
        ("read delete", "invalid_scope", "scope_widening"),
        ("mail:*", "invalid_scope", "scope_widening"),
        ("read  crm:*", "invalid_scope", "scope_malformed"),
        ("read crm:a\"b", "invalid_scope", "scope_malformed"),
    ] {
        assert_eq!(
            flow.refresh_refused(&token, &[("scope", asked)]).await,
            pair(error, code),
            "{asked}"
        );
    }
    for (asked, granted) in [
        ("read crm:contacts", "read crm:contacts"),
        ("write", "write crm:*"),
        ("offline_access", "read write crm:*"),
    ] {
        let renewed = expect_json(
            flow.refresh(&token, &[("scope", asked)]).await,
            StatusCode::OK,
        )
        .await;
        assert_eq!(renewed["scope"], granted, "{asked}");
        let claims = claims_of(text(&renewed["access_token"]));
        assert_eq!(claims["svc_constraints"]["max_actions"], 50, "{claims}");
        assert_eq!(claims["aud"], RESOURCE);
        token = text(&renewed["refresh_token"]).to_owned();
        if asked == "read crm:contacts" {
            let (status, body) = act_with(&flow.app, text(&renewed["access_token"]), "write").await;
            assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
        }
    }
    let whole = expect_json(flow.refresh(&token, &[]).await, StatusCode::OK).await;
    assert_eq!(whole["scope"], "read write crm:*");
}

/// Revoking the grant root by the API (`/v1/vat/revoke`) ends the grant:
/// its refresh token is refused and the grant marked `root_revoked`.
#[tokio::test]
async fn a_grant_whose_root_was_revoked_refreshes_no_more() {
    let flow = Flow::start().await;
    let issued = flow.granted(read_crm()).await;
    let root_jti: String = flow.app.with_database(|conn| {
        conn.query_row("SELECT root_jti FROM oauth_grants", [], |row| row.get(0))
            .unwrap()
    });
    expect_json(
        flow.app
            .post_auth(
                "/v1/vat/revoke",
                &flow.app.admin_key,
                &json!({"jti": root_jti}),
            )
            .await,
        StatusCode::OK,
    )
    .await;
    // The grants API tells the truth before any refresh found it out.
    let listed = expect_json(
        flow.app
            .get_auth("/v1/oauth/grants", &flow.app.admin_key)
            .await,
        StatusCode::OK,
    )
    .await;
    let grant = &listed["grants"][0];
    assert_eq!(grant["revoke_reason"], "root_revoked", "{listed}");
    assert!(grant["revoked_at"].is_string(), "{listed}");
    assert_eq!(revoke_reason(&flow.app), None);
    assert_eq!(
        flow.refresh_refused(text(&issued["refresh_token"]), &[])
            .await,
        pair("invalid_grant", "grant_revoked")
    );
    assert_eq!(revoke_reason(&flow.app).as_deref(), Some("root_revoked"));
}

/// RFC 7009: a refresh token ends its grant, an access token only itself;
/// an unknown or invalid token is 200 all the same (§2.2); a `client_id`
/// that is not the token's client revokes nothing (§2.1:
/// `unauthorized_client`). Answers carry CORS `*` and `no-store`.
#[tokio::test]
async fn revocation_follows_rfc_7009() {
    let flow = Flow::start().await;
    // An access token alone.
    let issued = flow.granted(read_crm()).await;
    let access = text(&issued["access_token"]).to_owned();
    let refresh = text(&issued["refresh_token"]).to_owned();
    let response = flow
        .revoke(&access, &[("token_type_hint", "access_token")])
        .await;
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(response.headers()["access-control-allow-origin"], "*");
    assert_eq!(response.headers()["cache-control"], "no-store");
    assert_eq!(response.text().await.unwrap(), "");
    let (status, body) = act_with(&flow.app, &access, "read").await;
    assert_eq!(
        (status, &body["code"]),
        (StatusCode::UNAUTHORIZED, &json!("token_revoked"))
    );
    assert!(revoked_in_status_list(&flow.app, &access).await);
    let renewed = expect_json(flow.refresh(&refresh, &[]).await, StatusCode::OK).await;
    let access = text(&renewed["access_token"]).to_owned();
    let refresh = text(&renewed["refresh_token"]).to_owned();
    assert_eq!(
        act_with(&flow.app, &access, "read").await.0,
        StatusCode::CREATED
    );
    // Another client's: refused, nothing revoked.
    let response = flow
        .revoke(&refresh, &[("client_id", "mcl_01kaqv3f00000000000000000a")])
        .await;
    assert_eq!(
        oauth_error_of(response).await,
        pair("unauthorized_client", "client_mismatch")
    );
    let response = flow
        .revoke(&access, &[("client_id", "mcl_01kaqv3f00000000000000000a")])
        .await;
    assert_eq!(
        oauth_error_of(response).await,
        pair("unauthorized_client", "client_mismatch")
    );
    assert_eq!(
        act_with(&flow.app, &access, "read").await.0,
        StatusCode::CREATED
    );
    // The refresh token: the whole grant (the hint is not needed).
    let client_id = flow.client_id.clone();
    let response = flow
        .revoke(
            &refresh,
            &[
                ("token_type_hint", "access_token"),
                ("client_id", &client_id),
            ],
        )
        .await;
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(
        act_with(&flow.app, &access, "read").await.0,
        StatusCode::UNAUTHORIZED
    );
    assert!(revoked_in_status_list(&flow.app, &access).await);
    assert_eq!(
        flow.refresh_refused(&refresh, &[]).await,
        pair("invalid_grant", "grant_revoked")
    );
    assert_eq!(revoke_reason(&flow.app).as_deref(), Some("client_revoked"));
    // Again, and tokens that are none of this server's: 200, nothing done.
    let api_token = flow.app.root("api-bot", &["crm:*"], &["read"]).await;
    let api_token = text(&api_token["compact_jwt"]).to_owned();
    let forged = {
        let mut parts: Vec<String> = api_token.split('.').map(str::to_owned).collect();
        parts[2] = URL_SAFE_NO_PAD.encode([0u8; 64]);
        parts.join(".")
    };
    for token in [
        refresh.as_str(),
        access.as_str(),
        "mrt_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
        "not a token",
        forged.as_str(),
        api_token.as_str(),
    ] {
        assert_eq!(
            flow.revoke(token, &[]).await.status(),
            StatusCode::OK,
            "{token}"
        );
    }
    let (status, body) = act_with(&flow.app, &api_token, "read").await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    // A request that is no revocation request.
    let missing = flow
        .app
        .client
        .post(flow.app.url("/v1/oauth/revoke"))
        .form_of(&[("token_type_hint", "refresh_token")])
        .send()
        .await
        .unwrap();
    assert_eq!(
        oauth_error_of(missing).await,
        pair("invalid_request", "parameter_missing")
    );
    let json_body = flow
        .app
        .post("/v1/oauth/revoke", &json!({"token": refresh}))
        .await;
    assert_eq!(
        oauth_error_of(json_body).await,
        pair("invalid_request", "form_required")
    );
}

/// The grants API: `read` lists (a developer its own human's only),
/// `revoke` revokes — the root and so every access token; the refresh
/// token is refused after. Another organisation's grant is unknown.
#[tokio::test]
async fn the_grants_api_lists_and_revokes_what_clients_hold() {
    let flow = Flow::start().await;
    let other = flow
        .app
        .key(&flow.app.admin_key, "developer", Some("other@example.com"))
        .await;
    let mine = flow.granted(read_crm()).await;
    // The other developer's consent.
    let sealed = flow.sealed().await;
    let answer = expect_json(
        flow.decide(
            &other,
            json!({"request": sealed, "decision": "approve", "grant": read_crm()}),
        )
        .await,
        StatusCode::OK,
    )
    .await;
    let code = query_of(text(&answer["redirect"]))["code"].clone();
    expect_json(flow.redeem(&code).await, StatusCode::OK).await;

    let list = |key: String, query: String| {
        let app = &flow.app;
        async move {
            expect_json(
                app.get_auth(&format!("/v1/oauth/grants{query}"), &key)
                    .await,
                StatusCode::OK,
            )
            .await["grants"]
                .as_array()
                .unwrap()
                .clone()
        }
    };
    let all = list(flow.app.admin_key.clone(), String::new()).await;
    assert_eq!(all.len(), 2);
    let own = list(flow.developer.clone(), String::new()).await;
    assert_eq!(own.len(), 1);
    let grant = own[0].clone();
    assert_eq!(grant["client_id"], json!(flow.client_id));
    assert_eq!(grant["client_name"], "Claude");
    assert_eq!(grant["resource"], RESOURCE);
    assert_eq!(grant["scope"], "read crm:*");
    assert_eq!(grant["revoked_at"], Value::Null);
    assert_eq!(
        format!("agent:{}", text(&grant["agent_id"])),
        text(&claims_of(text(&mine["access_token"]))["sub"])
    );
    let human = text(&grant["human_ref"]).to_owned();
    assert_eq!(
        list(flow.app.admin_key.clone(), format!("?human_ref={human}")).await,
        own
    );
    assert_eq!(
        list(
            flow.app.admin_key.clone(),
            format!("?client_id={}&limit=1", flow.client_id)
        )
        .await
        .len(),
        1
    );
    // Pages of one, newest first, end to end; a forged cursor is 400.
    let first = expect_json(
        flow.app
            .get_auth("/v1/oauth/grants?limit=1", &flow.app.admin_key)
            .await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(first["grants"].as_array().unwrap(), &all[..1]);
    let cursor = text(&first["next_cursor"]).to_owned();
    let second = expect_json(
        flow.app
            .get_auth(
                &format!("/v1/oauth/grants?limit=1&cursor={cursor}"),
                &flow.app.admin_key,
            )
            .await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(second["grants"].as_array().unwrap(), &all[1..]);
    assert!(second.get("next_cursor").is_none(), "{second}");
    expect_problem(
        flow.app
            .get_auth(
                "/v1/oauth/grants?cursor=bm90LWEtY3Vyc29y",
                &flow.app.admin_key,
            )
            .await,
        StatusCode::BAD_REQUEST,
        "invalid_cursor",
    )
    .await;
    let theirs = all.iter().find(|g| g["human_ref"] != json!(human)).unwrap();
    expect_problem(
        flow.app
            .get_auth(
                &format!("/v1/oauth/grants?human_ref={}", text(&theirs["human_ref"])),
                &flow.developer,
            )
            .await,
        StatusCode::FORBIDDEN,
        "human_not_yours",
    )
    .await;
    // Another organisation sees none and revokes none.
    let (_, beta_owner) = flow.app.org("beta").await;
    assert_eq!(
        list(beta_owner.clone(), String::new()).await,
        Vec::<Value>::new()
    );
    let path = format!("/v1/oauth/grants/{}", text(&grant["grant_id"]));
    expect_problem(
        flow.app
            .send(reqwest::Method::DELETE, &path, &beta_owner, None)
            .await,
        StatusCode::NOT_FOUND,
        "grant_not_found",
    )
    .await;
    // A reviewer revokes it: the access token and the refresh token die.
    let reviewer = flow
        .app
        .key(&flow.app.admin_key, "reviewer", Some("rev@example.com"))
        .await;
    for _ in 0..2 {
        let response = flow
            .app
            .send(reqwest::Method::DELETE, &path, &reviewer, None)
            .await;
        assert_eq!(response.status(), StatusCode::NO_CONTENT);
    }
    let (status, _) = act_with(&flow.app, text(&mine["access_token"]), "read").await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert_eq!(
        flow.refresh_refused(text(&mine["refresh_token"]), &[])
            .await,
        pair("invalid_grant", "grant_revoked")
    );
    let own = list(flow.developer.clone(), String::new()).await;
    assert_eq!(own[0]["revoke_reason"], "revoked");
    assert!(own[0]["revoked_at"].is_string());
    // With `[oauth]` off there are no grants to see.
    let off = TestApp::spawn().await;
    expect_problem(
        off.get_auth("/v1/oauth/grants", &off.admin_key).await,
        StatusCode::NOT_FOUND,
        "not_found",
    )
    .await;
}

// DPoP at the token endpoint (RFC 9449 §5, §10).

use crate::helpers::Holder;

impl Flow {
    /// The token endpoint's address, as a proof's `htu` names it.
    fn token_url(&self) -> String {
        self.app.url("/v1/oauth/token")
    }

    /// A token-request proof by `holder` for `POST` to the token endpoint,
    /// made now by the server's clock.
    fn token_proof(&self, holder: &Holder) -> String {
        holder.proof_at("POST", &self.token_url(), None, self.app.clock.now().s())
    }

    /// A token request with the `DPoP` headers `proofs`.
    async fn token_with(&self, form: &[(&str, &str)], proofs: &[&str]) -> reqwest::Response {
        let mut request = self.app.client.post(self.token_url()).form_of(form);
        for proof in proofs {
            request = request.header("dpop", *proof);
        }
        request.send().await.unwrap()
    }

    /// The redemption of `code` with the `DPoP` headers `proofs`.
    async fn redeem_with(&self, code: &str, proofs: &[&str]) -> reqwest::Response {
        self.token_with(
            &[
                ("grant_type", "authorization_code"),
                ("code", code),
                ("client_id", &self.client_id),
                ("redirect_uri", REDIRECT),
                ("code_verifier", VERIFIER),
                ("resource", RESOURCE),
            ],
            proofs,
        )
        .await
    }

    /// A refresh with `refresh_token` and the `DPoP` headers `proofs`.
    async fn refresh_with(&self, refresh_token: &str, proofs: &[&str]) -> reqwest::Response {
        self.token_with(
            &[
                ("grant_type", "refresh_token"),
                ("refresh_token", refresh_token),
                ("client_id", &self.client_id),
            ],
            proofs,
        )
        .await
    }

    /// A code for an authorization request naming `holder`'s key as
    /// `dpop_jkt` (RFC 9449 §10), granting `read` on `crm:*`.
    async fn code_for_key(&self, holder: &Holder) -> String {
        let jkt = holder.jkt();
        let response = self.authorize(&[("dpop_jkt", Some(jkt.as_str()))]).await;
        assert_eq!(response.status(), StatusCode::SEE_OTHER);
        let sealed = query_of(&location(&response))["request"].clone();
        self.approve(&sealed, read_crm()).await["code"].clone()
    }

    /// The grant row's `cnf_jkt`, of the only grant.
    fn grant_jkt(&self) -> Option<String> {
        self.app.with_database(|conn| {
            conn.query_row("SELECT cnf_jkt FROM oauth_grants", [], |row| row.get(0))
                .unwrap()
        })
    }
}

/// Records an act with the bound token `access`, with a proof by `holder`
/// (none when `None`); the answer's status and body.
async fn act_bound(app: &TestApp, access: &str, holder: Option<&Holder>) -> (StatusCode, Value) {
    let path = "/v1/vat/record/action";
    let proof = holder.map(|holder| holder.proof("POST", &app.url(path), access));
    let response = app
        .post_dpop(
            path,
            access,
            proof.as_deref(),
            &json!({"action": "read", "resource": "crm:lead/1", "result": "success"}),
        )
        .await;
    let status = response.status();
    (status, response.json().await.unwrap_or(Value::Null))
}

/// RFC 9449 §5, §10: a code whose request named a key, redeemed with a
/// proof by it, answers a `DPoP` token bound to that key (`cnf.jkt`) and
/// binds the grant; the token acts at the agent endpoints only with a
/// proof by that key — not as a Bearer token, not with another key's
/// proof. A refresh with a proof by the same key answers a token bound to
/// it again. A code whose request named no key, redeemed with a proof, is
/// bound to the proof's key all the same.
#[tokio::test]
async fn dpop_bound_code_flow() {
    let flow = Flow::start().await;
    let holder = Holder::new();
    let code = flow.code_for_key(&holder).await;
    let response = flow.redeem_with(&code, &[&flow.token_proof(&holder)]).await;
    assert_eq!(response.headers()["cache-control"], "no-store");
    let issued = expect_json(response, StatusCode::OK).await;
    assert_eq!(issued["token_type"], "DPoP");
    let access = text(&issued["access_token"]).to_owned();
    assert_eq!(claims_of(&access)["cnf"]["jkt"], json!(holder.jkt()));
    assert_eq!(flow.grant_jkt(), Some(holder.jkt()));

    let (status, record) = act_bound(&flow.app, &access, Some(&holder)).await;
    assert_eq!(status, StatusCode::CREATED, "{record}");
    let (status, refused) = act_with(&flow.app, &access, "read").await;
    assert_eq!(
        (status, &refused["code"]),
        (StatusCode::UNAUTHORIZED, &json!("dpop_required"))
    );
    let (status, refused) = act_bound(&flow.app, &access, Some(&Holder::new())).await;
    assert_eq!(
        (status, &refused["reason"]),
        (StatusCode::UNAUTHORIZED, &json!("dpop_key_mismatch")),
        "{refused}"
    );

    let refresh = text(&issued["refresh_token"]).to_owned();
    let renewed = expect_json(
        flow.refresh_with(&refresh, &[&flow.token_proof(&holder)])
            .await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(renewed["token_type"], "DPoP");
    let access = text(&renewed["access_token"]).to_owned();
    assert_eq!(claims_of(&access)["cnf"]["jkt"], json!(holder.jkt()));
    let (status, record) = act_bound(&flow.app, &access, Some(&holder)).await;
    assert_eq!(status, StatusCode::CREATED, "{record}");

    let unnamed = Flow::start().await;
    let other = Holder::new();
    let code = unnamed.code().await;
    let issued = expect_json(
        unnamed
            .redeem_with(&code, &[&unnamed.token_proof(&other)])
            .await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(issued["token_type"], "DPoP");
    assert_eq!(
        claims_of(text(&issued["access_token"]))["cnf"]["jkt"],
        json!(other.jkt())
    );
    assert_eq!(unnamed.grant_jkt(), Some(other.jkt()));
}

/// RFC 9449 §10: a code whose request named a key is redeemed only with a
/// proof by that key — none, or another key's, is `invalid_dpop_proof`
/// and leaves the code unused; the right proof then redeems it.
#[tokio::test]
async fn dpop_jkt_mismatch_is_refused() {
    let flow = Flow::start().await;
    let holder = Holder::new();
    let code = flow.code_for_key(&holder).await;
    assert_eq!(
        oauth_error_of(flow.redeem_with(&code, &[]).await).await,
        pair("invalid_dpop_proof", "dpop_required")
    );
    let thief = Holder::new();
    assert_eq!(
        oauth_error_of(flow.redeem_with(&code, &[&flow.token_proof(&thief)]).await).await,
        pair("invalid_dpop_proof", "dpop_key_mismatch")
    );
    let issued = expect_json(
        flow.redeem_with(&code, &[&flow.token_proof(&holder)]).await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(issued["token_type"], "DPoP");
}

/// RFC 9449 §11.1: a token request's proof is used once — the same proof
/// again, even for another grant type, is refused; the replay memory is
/// the agent calls' own (on PostgreSQL, the table every host shares).
#[tokio::test]
async fn a_token_proof_is_used_once() {
    let flow = Flow::start().await;
    let holder = Holder::new();
    let code = flow.code_for_key(&holder).await;
    let proof = flow.token_proof(&holder);
    let issued = expect_json(flow.redeem_with(&code, &[&proof]).await, StatusCode::OK).await;
    let refresh = text(&issued["refresh_token"]).to_owned();
    assert_eq!(
        oauth_error_of(flow.refresh_with(&refresh, &[&proof]).await).await,
        pair("invalid_dpop_proof", "dpop_replayed")
    );
    // The refused refresh left the refresh token current.
    expect_json(
        flow.refresh_with(&refresh, &[&flow.token_proof(&holder)])
            .await,
        StatusCode::OK,
    )
    .await;
}

/// RFC 9449 §4.3 at the token endpoint: a proof made for another URL or
/// method, one carrying `ath` (made for a resource), a stale one, a
/// malformed one, or two `DPoP` headers are refused with
/// `invalid_dpop_proof` naming the rule; none of them uses the code up.
#[tokio::test]
async fn a_proof_for_another_endpoint_is_refused() {
    let flow = Flow::start().await;
    let holder = Holder::new();
    let code = flow.code_for_key(&holder).await;
    let now = flow.app.clock.now().s();
    let token_url = flow.token_url();
    let cases = [
        (
            holder.proof_at("POST", &flow.app.url("/v1/oauth/revoke"), None, now),
            "dpop_url_mismatch",
        ),
        (
            holder.proof_at("GET", &token_url, None, now),
            "dpop_method_mismatch",
        ),
        (
            holder.proof_at("POST", &token_url, Some("token"), now),
            "dpop_malformed_claims",
        ),
        (
            holder.proof_at("POST", &token_url, None, now - 61),
            "dpop_stale",
        ),
        ("not.a.proof".to_owned(), "dpop_malformed"),
    ];
    for (proof, expected) in cases {
        assert_eq!(
            oauth_error_of(flow.redeem_with(&code, &[&proof]).await).await,
            pair("invalid_dpop_proof", expected)
        );
    }
    let (one, two) = (flow.token_proof(&holder), flow.token_proof(&holder));
    assert_eq!(
        oauth_error_of(flow.redeem_with(&code, &[&one, &two]).await).await,
        pair("invalid_dpop_proof", "dpop_malformed")
    );
    expect_json(
        flow.redeem_with(&code, &[&flow.token_proof(&holder)]).await,
        StatusCode::OK,
    )
    .await;
}

/// RFC 9449 §5: the refresh token of a bound grant is used only with a
/// proof by the grant's key; without one, or with another key's, the
/// refresh is refused and the token stays current (a refusal is not
/// reuse); the holder then refreshes.
#[tokio::test]
async fn refresh_of_a_bound_family_needs_the_same_key() {
    let flow = Flow::start().await;
    let holder = Holder::new();
    let code = flow.code_for_key(&holder).await;
    let issued = expect_json(
        flow.redeem_with(&code, &[&flow.token_proof(&holder)]).await,
        StatusCode::OK,
    )
    .await;
    let refresh = text(&issued["refresh_token"]).to_owned();
    assert_eq!(
        oauth_error_of(flow.refresh_with(&refresh, &[]).await).await,
        pair("invalid_dpop_proof", "dpop_required")
    );
    assert_eq!(
        oauth_error_of(
            flow.refresh_with(&refresh, &[&flow.token_proof(&Holder::new())])
                .await
        )
        .await,
        pair("invalid_dpop_proof", "dpop_key_mismatch")
    );
    assert_eq!(revoke_reason(&flow.app), None);
    let renewed = expect_json(
        flow.refresh_with(&refresh, &[&flow.token_proof(&holder)])
            .await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(renewed["token_type"], "DPoP");
}

/// Decision "no silent upgrade": a grant redeemed without a proof stays
/// unbound — a refresh with a proof is refused (`dpop_not_bound`), leaves
/// the refresh token current, and a refresh without one answers a Bearer
/// token.
#[tokio::test]
async fn an_unbound_family_is_not_bound_by_a_refresh() {
    let flow = Flow::start().await;
    let issued = flow.granted(read_crm()).await;
    assert_eq!(issued["token_type"], "Bearer");
    assert_eq!(flow.grant_jkt(), None);
    let refresh = text(&issued["refresh_token"]).to_owned();
    assert_eq!(
        oauth_error_of(
            flow.refresh_with(&refresh, &[&flow.token_proof(&Holder::new())])
                .await
        )
        .await,
        pair("invalid_dpop_proof", "dpop_not_bound")
    );
    let renewed = expect_json(flow.refresh_with(&refresh, &[]).await, StatusCode::OK).await;
    assert_eq!(renewed["token_type"], "Bearer");
    assert!(
        claims_of(text(&renewed["access_token"]))
            .get("cnf")
            .is_none()
    );
    assert_eq!(flow.grant_jkt(), None);
}

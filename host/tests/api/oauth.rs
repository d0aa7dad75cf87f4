//! The OAuth authorization server (docs/oauth.md): start checks, the
//! metadata document (RFC 8414), the token endpoint's form reader and error
//! bodies (RFC 6749 §3.1, §5.2), the schema 12 upgrade.

use mandate_host::AppState;
use mandate_host::clock::Clock;
use mandate_host::config::{Config, OAuthConfig};
use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::helpers::{TestApp, expect_json, expect_problem};

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
        "dpop_signing_alg_values_supported": ["EdDSA"]
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
        // No grant is served yet: every grant type is unsupported (§5.2).
        (
            form("grant_type=authorization_code&code=x&unknown=1&unknown=2"),
            "unsupported_grant_type",
            "grant_type_unsupported",
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
        match conn.dialect() {
            Dialect::Sqlite => conn.execute_batch("PRAGMA user_version = 11").unwrap(),
            Dialect::Postgres => conn
                .execute_batch("UPDATE mandate_schema SET version = 11")
                .unwrap(),
        }
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
        assert_eq!(version, 12);
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

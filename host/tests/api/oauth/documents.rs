//! Clients named by a client ID metadata document (CIMD,
//! draft-ietf-oauth-client-id-metadata-document-01; docs/oauth.md): the
//! document is fetched only after sign-in, under the webhooks' rules
//! against server-side request forgery (§6.5), capped, timed, never
//! through a redirect; its `redirect_uris` verify the request; it is kept
//! as its cache headers say and an error never is (§4.4). The documents
//! are served by an HTTPS server of the test's own, over a test
//! certificate authority (tests/fixtures/cimd-tls).

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use reqwest::StatusCode;
use rustls_pki_types::pem::PemObject as _;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

use super::{Flow, REDIRECT, claims_of, location, oauth_on, query_of, text};
use crate::helpers::{TestApp, expect_json, expect_problem};
use mandate_host::config::Config;

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/cimd-tls");

/// What the test server answers at a path.
#[derive(Clone)]
enum Reply {
    /// The status line's text, headers and body, then the connection
    /// closes; `length` says whether `content-length` is sent.
    Answer {
        status: &'static str,
        headers: Vec<(&'static str, String)>,
        body: Vec<u8>,
        length: bool,
    },
    /// Reads the request and never answers.
    Silent,
}

/// An HTTPS server on loopback answering what each path is set to,
/// counting what it is asked.
struct DocServer {
    origin: String,
    replies: Arc<Mutex<HashMap<String, Reply>>>,
    asked: Arc<Mutex<Vec<String>>>,
}

impl DocServer {
    async fn start() -> DocServer {
        let certs = CertificateDer::pem_file_iter(format!("{FIXTURES}/server.pem"))
            .unwrap()
            .collect::<Result<Vec<_>, _>>()
            .unwrap();
        let key = PrivateKeyDer::from_pem_file(format!("{FIXTURES}/server.key")).unwrap();
        let config = rustls::ServerConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .unwrap();
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let origin = format!(
            "https://127.0.0.1:{}",
            listener.local_addr().unwrap().port()
        );
        let replies: Arc<Mutex<HashMap<String, Reply>>> = Arc::default();
        let asked: Arc<Mutex<Vec<String>>> = Arc::default();
        let (served, counted) = (replies.clone(), asked.clone());
        tokio::spawn(async move {
            while let Ok((tcp, _)) = listener.accept().await {
                let (acceptor, served, counted) =
                    (acceptor.clone(), served.clone(), counted.clone());
                tokio::spawn(async move {
                    let Ok(mut tls) = acceptor.accept(tcp).await else {
                        return;
                    };
                    let mut head = Vec::new();
                    let mut buffer = [0u8; 1024];
                    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                        match tls.read(&mut buffer).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => head.extend_from_slice(&buffer[..n]),
                        }
                    }
                    let path = String::from_utf8_lossy(&head)
                        .split_whitespace()
                        .nth(1)
                        .unwrap_or_default()
                        .to_owned();
                    counted.lock().unwrap().push(path.clone());
                    let reply = served.lock().unwrap().get(&path).cloned();
                    let (status, headers, body, length) = match reply {
                        Some(Reply::Silent) => return std::future::pending().await,
                        Some(Reply::Answer {
                            status,
                            headers,
                            body,
                            length,
                        }) => (status, headers, body, length),
                        None => ("404 Not Found", Vec::new(), Vec::new(), true),
                    };
                    let mut out = format!("HTTP/1.1 {status}\r\nconnection: close\r\n");
                    for (name, value) in headers {
                        out.push_str(&format!("{name}: {value}\r\n"));
                    }
                    if length {
                        out.push_str(&format!("content-length: {}\r\n", body.len()));
                    }
                    out.push_str("\r\n");
                    let mut bytes = out.into_bytes();
                    bytes.extend_from_slice(&body);
                    if tls.write_all(&bytes).await.is_ok() {
                        let _ = tls.shutdown().await;
                    }
                });
            }
        });
        DocServer {
            origin,
            replies,
            asked,
        }
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.origin)
    }

    fn serve(&self, path: &str, reply: Reply) {
        self.replies.lock().unwrap().insert(path.to_owned(), reply);
    }

    /// `document` as JSON at `path`, with these extra headers.
    fn json(&self, path: &str, document: &Value, headers: &[(&'static str, &str)]) {
        let mut all = vec![("content-type", "application/json".to_owned())];
        all.extend(headers.iter().map(|(k, v)| (*k, (*v).to_owned())));
        self.serve(
            path,
            Reply::Answer {
                status: "200 OK",
                headers: all,
                body: document.to_string().into_bytes(),
                length: true,
            },
        );
    }

    /// A valid document for the client at `path`.
    fn client(&self, path: &str, headers: &[(&'static str, &str)]) -> String {
        let url = self.url(path);
        self.json(path, &document(&url), headers);
        url
    }

    /// How many requests asked for `path`.
    fn asked(&self, path: &str) -> usize {
        self.asked
            .lock()
            .unwrap()
            .iter()
            .filter(|p| *p == path)
            .count()
    }

    fn asked_at_all(&self) -> usize {
        self.asked.lock().unwrap().len()
    }
}

/// A public client's document for `url`: the name a phisher would like.
fn document(url: &str) -> Value {
    json!({
        "client_id": url,
        "client_name": "Example Agent",
        "redirect_uris": [REDIRECT, "http://127.0.0.1/callback"],
        "token_endpoint_auth_method": "none",
        "logo_uri": "https://logo.example/l.png"
    })
}

/// `[oauth]` on, the test CA trusted for documents (loopback literals are
/// allowed by `OAuthConfig::for_test`).
fn documents_on(config: &mut Config) {
    oauth_on(config);
    config.oauth.client_documents.extra_roots = vec![PathBuf::from(format!("{FIXTURES}/ca.pem"))];
}

/// A flow whose client is the document at `client_id`.
async fn flow_for(client_id: &str, edit: impl FnOnce(&mut Config)) -> Flow {
    let app = TestApp::spawn_with(|config| {
        documents_on(config);
        edit(config);
    })
    .await;
    let developer = app
        .key(&app.admin_key, "developer", Some("dev@example.com"))
        .await;
    Flow {
        app,
        client_id: client_id.to_owned(),
        developer,
    }
}

/// The sealed request of an authorization by `client_id` (with `edit`).
async fn sealed_for(flow: &Flow, client_id: &str, edit: &[(&str, Option<&str>)]) -> String {
    let mut edits = vec![("client_id", Some(client_id))];
    edits.extend_from_slice(edit);
    let response = flow.authorize(&edits).await;
    assert_eq!(response.status(), StatusCode::SEE_OTHER, "{client_id}");
    let location = location(&response);
    assert!(
        location.starts_with(&format!("{}/oauth/consent?request=", flow.app.base)),
        "{location}"
    );
    query_of(&location)["request"].clone()
}

async fn open(flow: &Flow, sealed: &str) -> reqwest::Response {
    flow.app
        .post_auth(
            "/v1/oauth/requests/open",
            &flow.developer,
            &json!({ "request": sealed }),
        )
        .await
}

/// Issue 35: "fetched only after the human has signed in". `/authorize`
/// fetches nothing; the consent page's signed-in open does, once (the
/// decision uses the document kept); the client's page data are the
/// URL's host and what the document says; the code becomes a token for
/// the agent named by the URL, exactly as for a registered client.
#[tokio::test]
async fn a_document_client_is_fetched_after_sign_in_and_gets_a_token() {
    let server = DocServer::start().await;
    let client_id = server.client("/client.json", &[("cache-control", "max-age=600")]);
    let flow = flow_for(&client_id, |_| {}).await;
    let sealed = sealed_for(&flow, &client_id, &[]).await;
    assert_eq!(
        server.asked_at_all(),
        0,
        "nothing is fetched before sign-in"
    );
    let opened = expect_json(open(&flow, &sealed).await, StatusCode::OK).await;
    assert_eq!(server.asked("/client.json"), 1);
    assert_eq!(opened["client_kind"], "document");
    assert_eq!(opened["client_id"], client_id.as_str());
    assert_eq!(opened["client_host"], "127.0.0.1");
    assert_eq!(opened["client_name"], "Example Agent");
    assert_eq!(opened["redirect_host"], "app.example");
    let redirect = flow
        .approve(
            &sealed,
            json!({"actions": ["read"], "resources": ["crm:*"]}),
        )
        .await;
    assert_eq!(
        server.asked("/client.json"),
        1,
        "the decision uses the kept document"
    );
    assert_eq!(redirect["iss"], flow.app.base);
    assert_eq!(redirect["state"], "af0ifjsldkj+/ =x");
    let issued = expect_json(flow.redeem(&redirect["code"]).await, StatusCode::OK).await;
    assert_eq!(issued["token_type"], "Bearer");
    assert!(
        issued.get("refresh_token").is_none(),
        "a document without the refresh_token grant type gets no refresh token: {issued}"
    );
    let access = text(&issued["access_token"]).to_owned();
    let claims = claims_of(&access);
    assert_eq!(
        text(&claims["sub"]),
        format!("agent:{}", text(&opened["agent_id"]))
    );
    assert!(text(&opened["agent_id"]).starts_with("oauth-"));
    let (stored_client, host, name): (String, Option<String>, String) =
        flow.app.with_database(|conn| {
            conn.query_row(
                "SELECT client_id, client_host, client_name FROM oauth_grants",
                [],
                |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)),
            )
            .unwrap()
        });
    assert_eq!(
        (stored_client.as_str(), host.as_deref(), name.as_str()),
        (client_id.as_str(), Some("127.0.0.1"), "Example Agent")
    );
    expect_json(
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
    assert_eq!(server.asked_at_all(), 1);
}

/// Plan §5.1 "a metadata document on a private address", and the other
/// ways a document is refused: each is a 422 `client_document_refused`
/// on the page, with a reason that never names a resolved address; no
/// redirect is followed; nothing is fetched before sign-in.
#[tokio::test]
async fn a_client_document_on_a_private_address_is_not_fetched() {
    let server = DocServer::start().await;
    let good = server.client("/good.json", &[]);
    server.serve(
        "/redirect.json",
        Reply::Answer {
            status: "302 Found",
            headers: vec![("location", good.clone())],
            body: Vec::new(),
            length: true,
        },
    );
    let padded = |url: &str| {
        let mut doc = document(url);
        doc["padding"] = json!("x".repeat(6000));
        doc.to_string().into_bytes()
    };
    for (path, length) in [("/big.json", true), ("/big-unsized.json", false)] {
        server.serve(
            path,
            Reply::Answer {
                status: "200 OK",
                headers: vec![("content-type", "application/json".to_owned())],
                body: padded(&server.url(path)),
                length,
            },
        );
    }
    server.serve(
        "/html.json",
        Reply::Answer {
            status: "200 OK",
            headers: vec![("content-type", "text/html".to_owned())],
            body: document(&server.url("/html.json")).to_string().into_bytes(),
            length: true,
        },
    );
    server.json("/mismatch.json", &document(&good), &[]);
    let mut secret = document(&server.url("/secret.json"));
    secret["token_endpoint_auth_method"] = json!("client_secret_basic");
    server.json("/secret.json", &secret, &[]);
    let port = good
        .rsplit(':')
        .next()
        .unwrap()
        .split('/')
        .next()
        .unwrap()
        .to_owned();
    let cases = [
        (
            "https://10.0.0.1/c.json".to_owned(),
            "10.0.0.1 is not a public address",
        ),
        (
            "https://169.254.169.254/latest.json".to_owned(),
            "169.254.169.254 is not a public address",
        ),
        (
            format!("https://localhost:{port}/good.json"),
            "resolves to an address that is not public",
        ),
        (server.url("/redirect.json"), "HTTP 302"),
        (server.url("/missing.json"), "HTTP 404"),
        (server.url("/big.json"), "larger than 5120 bytes"),
        (server.url("/big-unsized.json"), "larger than 5120 bytes"),
        (server.url("/html.json"), "JSON media type"),
        (server.url("/mismatch.json"), "client_id is not its URL"),
        (server.url("/secret.json"), "token_endpoint_auth_method"),
    ];
    let flow = flow_for(&good, |_| {}).await;
    let mut sealed = Vec::new();
    for (url, _) in &cases {
        sealed.push(sealed_for(&flow, url, &[]).await);
    }
    assert_eq!(
        server.asked_at_all(),
        0,
        "nothing is fetched before sign-in"
    );
    for ((url, says), sealed) in cases.iter().zip(&sealed) {
        let response = open(&flow, sealed).await;
        assert!(response.headers().get("location").is_none());
        let problem = expect_problem(
            response,
            StatusCode::UNPROCESSABLE_ENTITY,
            "client_document_refused",
        )
        .await;
        let detail = text(&problem["detail"]);
        assert!(detail.contains(says), "{url}: {detail}");
        if url.contains("localhost") {
            assert!(
                !detail.contains("127.0.0.1") && !detail.contains("::1"),
                "a resolved address is not told: {detail}"
            );
        }
        // The decision refuses the same way: nobody is redirected.
        let decided = flow
            .decide(
                &flow.developer,
                json!({"request": sealed, "decision": "deny"}),
            )
            .await;
        expect_problem(
            decided,
            StatusCode::UNPROCESSABLE_ENTITY,
            "client_document_refused",
        )
        .await;
    }
    assert_eq!(
        server.asked("/good.json"),
        0,
        "the redirect was not followed"
    );
    assert_eq!(server.asked("/redirect.json"), 2, "and errors are not kept");
}

/// Loopback is refused unless the test hook is on, and a document that
/// does not answer in time is refused after `timeout_ms`.
#[tokio::test]
async fn loopback_needs_the_hook_and_a_slow_document_times_out() {
    let server = DocServer::start().await;
    let good = server.client("/good.json", &[]);
    let flow = flow_for(&good, |config| {
        config.oauth.client_documents.allow_loopback = false;
    })
    .await;
    let sealed = sealed_for(&flow, &good, &[]).await;
    let problem = expect_problem(
        open(&flow, &sealed).await,
        StatusCode::UNPROCESSABLE_ENTITY,
        "client_document_refused",
    )
    .await;
    assert!(
        text(&problem["detail"]).contains("127.0.0.1 is not a public address (loopback"),
        "{problem}"
    );
    assert_eq!(server.asked_at_all(), 0);

    server.serve("/slow.json", Reply::Silent);
    let slow = server.url("/slow.json");
    let flow = flow_for(&slow, |config| {
        config.oauth.client_documents.timeout_ms = std::num::NonZeroU64::new(300).unwrap();
    })
    .await;
    let sealed = sealed_for(&flow, &slow, &[]).await;
    let problem = expect_problem(
        open(&flow, &sealed).await,
        StatusCode::UNPROCESSABLE_ENTITY,
        "client_document_refused",
    )
    .await;
    assert!(
        text(&problem["detail"]).contains("did not answer within 300 ms"),
        "{problem}"
    );
    assert_eq!(server.asked("/slow.json"), 1);
}

/// The hooks are for tests: a server not on loopback refuses to start
/// with them.
#[tokio::test]
async fn the_test_hooks_need_a_loopback_listener() {
    for edit in [
        (|config: &mut Config| config.oauth.client_documents.allow_loopback = true)
            as fn(&mut Config),
        |config: &mut Config| {
            config.oauth.client_documents.allow_loopback = false;
            config.oauth.client_documents.extra_roots =
                vec![PathBuf::from(format!("{FIXTURES}/ca.pem"))];
        },
    ] {
        let dir = tempfile::tempdir().unwrap();
        let mut config = Config::for_test(dir.path());
        config.listen = "0.0.0.0:0".parse().unwrap();
        config.public_url = Some("https://mandate.example".to_owned());
        config.issuer = "https://mandate.example".to_owned();
        config.oauth = mandate_host::config::OAuthConfig::for_test();
        edit(&mut config);
        let refused = config.check().unwrap_err().to_string();
        assert!(refused.contains("loopback"), "{refused}");
    }
}

/// The document's `redirect_uris` verify the request's redirect URI when
/// it is opened (before, `/authorize` could verify nothing, so it refused
/// on the page whatever was wrong); an http loopback literal may use any
/// port (RFC 8252 §7.3).
#[tokio::test]
async fn the_documents_redirect_uris_verify_the_request() {
    let server = DocServer::start().await;
    let client_id = server.client("/client.json", &[]);
    let flow = flow_for(&client_id, |_| {}).await;
    let sealed = sealed_for(
        &flow,
        &client_id,
        &[("redirect_uri", Some("https://app.example/cb/evil"))],
    )
    .await;
    let response = open(&flow, &sealed).await;
    assert!(response.headers().get("location").is_none());
    expect_problem(response, StatusCode::BAD_REQUEST, "redirect_uri_mismatch").await;
    let response = flow
        .decide(
            &flow.developer,
            json!({"request": sealed, "decision": "deny"}),
        )
        .await;
    expect_problem(response, StatusCode::BAD_REQUEST, "redirect_uri_mismatch").await;
    let sealed = sealed_for(
        &flow,
        &client_id,
        &[("redirect_uri", Some("http://127.0.0.1:5555/callback"))],
    )
    .await;
    let opened = expect_json(open(&flow, &sealed).await, StatusCode::OK).await;
    assert_eq!(opened["redirect_loopback"], true);
    // Denied: access_denied goes back to the verified redirect URI.
    let denied = expect_json(
        flow.decide(
            &flow.developer,
            json!({"request": sealed, "decision": "deny"}),
        )
        .await,
        StatusCode::OK,
    )
    .await;
    let back = text(&denied["redirect"]);
    assert!(
        back.starts_with("http://127.0.0.1:5555/callback?"),
        "{back}"
    );
    assert_eq!(query_of(back)["error"], "access_denied");
    // Before sign-in nothing is verified: a bad request is refused on the
    // page, never redirected.
    for (edit, code) in [
        (
            ("code_challenge_method", Some("plain")),
            "authorization_request_refused",
        ),
        (("resource", None), "authorization_request_refused"),
        (
            ("response_type", Some("token")),
            "authorization_request_refused",
        ),
        (
            ("redirect_uri", Some("https://app.example/cb#x")),
            "redirect_uri_fragment",
        ),
    ] {
        let response = flow
            .authorize(&[("client_id", Some(&client_id)), edit])
            .await;
        assert!(response.headers().get("location").is_none(), "{edit:?}");
        expect_problem(response, StatusCode::BAD_REQUEST, code).await;
    }
    for bad in [
        "https://client.example/c.json?x=1",
        "https://client.example/",
        "https://user@client.example/c.json",
        "https://client.example/a/../c.json",
    ] {
        let response = flow.authorize(&[("client_id", Some(bad))]).await;
        assert!(response.headers().get("location").is_none(), "{bad}");
        expect_problem(response, StatusCode::BAD_REQUEST, "client_id_invalid").await;
    }
    // One fetch: the document, without `Cache-Control`, is kept
    // `cache_min_s`; a document that does not list the redirect URI is a
    // valid document.
    assert_eq!(server.asked_at_all(), 1);
}

/// CIMD §4.4: a document is kept for its `max-age`, clamped to
/// `[cache_min_s, cache_max_s]`; `no-store` is not kept; an error or an
/// invalid document is never kept, so the next open fetches again.
#[tokio::test]
async fn documents_are_kept_as_their_cache_headers_say_and_errors_never() {
    let server = DocServer::start().await;
    let kept = server.client("/kept.json", &[("cache-control", "public, max-age=10")]);
    let unkept = server.client("/unkept.json", &[("cache-control", "no-store")]);
    let broken = server.url("/broken.json");
    let flow = flow_for(&kept, |_| {}).await;
    for _ in 0..2 {
        let sealed = sealed_for(&flow, &kept, &[]).await;
        expect_json(open(&flow, &sealed).await, StatusCode::OK).await;
        let sealed = sealed_for(&flow, &unkept, &[]).await;
        expect_json(open(&flow, &sealed).await, StatusCode::OK).await;
        let sealed = sealed_for(&flow, &broken, &[]).await;
        expect_problem(
            open(&flow, &sealed).await,
            StatusCode::UNPROCESSABLE_ENTITY,
            "client_document_refused",
        )
        .await;
    }
    assert_eq!(
        (
            server.asked("/kept.json"),
            server.asked("/unkept.json"),
            server.asked("/broken.json")
        ),
        (1, 2, 2)
    );
    // max-age=10 is kept cache_min_s (300 s): still kept after 200 s,
    // fetched again after 300.
    flow.app.clock.advance(Duration::from_secs(200));
    let sealed = sealed_for(&flow, &kept, &[]).await;
    expect_json(open(&flow, &sealed).await, StatusCode::OK).await;
    assert_eq!(server.asked("/kept.json"), 1);
    flow.app.clock.advance(Duration::from_secs(101));
    let sealed = sealed_for(&flow, &kept, &[]).await;
    expect_json(open(&flow, &sealed).await, StatusCode::OK).await;
    assert_eq!(server.asked("/kept.json"), 2);
    // The broken one, fixed, is used at once.
    server.client("/broken.json", &[]);
    let sealed = sealed_for(&flow, &broken, &[]).await;
    expect_json(open(&flow, &sealed).await, StatusCode::OK).await;
    assert_eq!(server.asked("/broken.json"), 3);
}

/// A document that registers the `refresh_token` grant type gets a refresh
/// token when its code is redeemed — what the document said at consent,
/// kept by the code, so nothing is fetched at the token endpoint — and the
/// token rotates on use like a registered client's; the one used, shown
/// again, is reuse and ends the grant.
#[tokio::test]
async fn a_document_registering_refresh_tokens_gets_one_that_rotates() {
    let server = DocServer::start().await;
    let client_id = server.url("/refreshing.json");
    let mut refreshing = document(&client_id);
    refreshing["grant_types"] = json!(["authorization_code", "refresh_token"]);
    server.json("/refreshing.json", &refreshing, &[]);
    let flow = flow_for(&client_id, |_| {}).await;
    let sealed = sealed_for(&flow, &client_id, &[]).await;
    expect_json(open(&flow, &sealed).await, StatusCode::OK).await;
    let redirect = flow
        .approve(
            &sealed,
            json!({"actions": ["read"], "resources": ["crm:*"]}),
        )
        .await;
    let issued = expect_json(flow.redeem(&redirect["code"]).await, StatusCode::OK).await;
    let first = text(&issued["refresh_token"]).to_owned();
    assert!(first.starts_with("mrt_"), "{issued}");
    let asked = server.asked("/refreshing.json");
    let refreshed = expect_json(flow.refresh(&first, &[]).await, StatusCode::OK).await;
    assert_ne!(text(&refreshed["refresh_token"]), first);
    assert_ne!(refreshed["access_token"], issued["access_token"]);
    assert_eq!(
        server.asked("/refreshing.json"),
        asked,
        "a refresh fetches nothing"
    );
    let (error, code) = flow.refresh_refused(&first, &[]).await;
    assert_eq!(
        (error.as_str(), code.as_str()),
        ("invalid_grant", "refresh_token_reused")
    );
}

//! Assurance levels L2 (OIDC ID tokens from a test identity provider) and L3
//! (the reference verifier plugin, hostile plugins, provider attestations).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use axum::Router;
use axum::routing::get;
use jsonwebtoken::jwk::{Jwk, JwkSet};
use jsonwebtoken::{Algorithm, EncodingKey, Header, encode};
use mandate_host::config::{OidcIssuer, Verifier};
use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::helpers::{TestApp, expect_json, expect_problem, text};

/// A signing key of the test identity provider.
#[derive(Clone)]
pub(crate) struct TestKey {
    kid: String,
    alg: Algorithm,
    encoding: EncodingKey,
}

impl TestKey {
    fn rsa(kid: &str) -> TestKey {
        use rsa::pkcs1::EncodeRsaPrivateKey;
        static RSA: OnceLock<Vec<Vec<u8>>> = OnceLock::new();
        // RSA key generation is slow; two keys serve every test.
        let ders = RSA.get_or_init(|| {
            (0..2)
                .map(|_| {
                    let key = rsa::RsaPrivateKey::new(&mut rand_core::OsRng, 2048).unwrap();
                    key.to_pkcs1_der().unwrap().as_bytes().to_vec()
                })
                .collect()
        });
        let index = usize::from(kid.ends_with('2'));
        TestKey {
            kid: kid.into(),
            alg: Algorithm::RS256,
            encoding: EncodingKey::from_rsa_der(&ders[index]),
        }
    }

    fn ec(kid: &str) -> TestKey {
        use p256::pkcs8::EncodePrivateKey;
        let key = p256::SecretKey::random(&mut rand_core::OsRng);
        TestKey {
            kid: kid.into(),
            alg: Algorithm::ES256,
            encoding: EncodingKey::from_ec_der(key.to_pkcs8_der().unwrap().as_bytes()),
        }
    }

    pub(crate) fn ed(kid: &str) -> TestKey {
        // PKCS#8 v1 of an Ed25519 seed: a fixed 16-byte prefix, then the seed.
        const PREFIX: [u8; 16] = [
            0x30, 0x2e, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x04, 0x22,
            0x04, 0x20,
        ];
        let seed = ed25519_dalek::SigningKey::generate(&mut rand_core::OsRng).to_bytes();
        let der: Vec<u8> = PREFIX.iter().chain(seed.iter()).copied().collect();
        TestKey {
            kid: kid.into(),
            alg: Algorithm::EdDSA,
            encoding: EncodingKey::from_ed_der(&der),
        }
    }

    pub(crate) fn jwk(&self) -> Jwk {
        let mut jwk = Jwk::from_encoding_key(&self.encoding, self.alg).unwrap();
        jwk.common.key_id = Some(self.kid.clone());
        jwk
    }

    pub(crate) fn sign(&self, claims: &Value) -> String {
        let mut header = Header::new(self.alg);
        header.kid = Some(self.kid.clone());
        encode(&header, claims, &self.encoding).unwrap()
    }
}

/// How a test identity provider departs from a well-behaved one.
#[derive(Default)]
struct Quirks {
    /// The `issuer` its discovery document names, made from its own.
    discovery_issuer: Option<fn(&str) -> String>,
    /// The `jwks_uri` its discovery document names, if not its own.
    jwks_uri: Option<String>,
    /// Bytes of padding in its key set.
    padding: usize,
}

/// An identity provider on 127.0.0.1 with discovery and a JWKS that tests
/// may change (key rotation) or slow down.
struct TestIdp {
    issuer: String,
    keys: Arc<Mutex<Vec<Jwk>>>,
    /// How long the key set takes to answer.
    delay: Arc<Mutex<Duration>>,
    /// Key-set requests received so far.
    fetches: Arc<AtomicUsize>,
}

impl TestIdp {
    async fn start(keys: &[&TestKey]) -> TestIdp {
        TestIdp::start_with(keys, Quirks::default()).await
    }

    async fn start_with(keys: &[&TestKey], quirks: Quirks) -> TestIdp {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let issuer = format!("http://{}", listener.local_addr().unwrap());
        let published = Arc::new(Mutex::new(keys.iter().map(|k| k.jwk()).collect::<Vec<_>>()));
        let delay = Arc::new(Mutex::new(Duration::ZERO));
        let fetches = Arc::new(AtomicUsize::new(0));
        let discovery = json!({
            "issuer": quirks.discovery_issuer.map_or_else(|| issuer.clone(), |name| name(&issuer)),
            "jwks_uri": quirks.jwks_uri.unwrap_or_else(|| format!("{issuer}/keys")),
        });
        let (jwks, wait, count) = (published.clone(), delay.clone(), fetches.clone());
        let padding = "x".repeat(quirks.padding);
        let app = Router::new()
            .route(
                "/.well-known/openid-configuration",
                get(move || {
                    let discovery = discovery.clone();
                    async move { axum::Json(discovery) }
                }),
            )
            .route(
                "/keys",
                get(move || {
                    count.fetch_add(1, Ordering::SeqCst);
                    let keys = jwks.lock().unwrap().clone();
                    let wait = *wait.lock().unwrap();
                    let padding = padding.clone();
                    async move {
                        tokio::time::sleep(wait).await;
                        axum::Json(json!({"keys": keys, "padding": padding}))
                    }
                }),
            );
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        TestIdp {
            issuer,
            keys: published,
            delay,
            fetches,
        }
    }

    fn publish(&self, key: &TestKey) {
        self.keys.lock().unwrap().push(key.jwk());
    }

    fn claims(&self, edit: impl FnOnce(&mut Value)) -> Value {
        let now = mandate_host::clock::now_s();
        let mut claims = json!({
            "iss": self.issuer, "aud": "mandate", "sub": "user-1234",
            "iat": now, "exp": now + 300, "nonce": "n-1"
        });
        edit(&mut claims);
        claims
    }
}

fn l2_request(id_token: &str) -> Value {
    json!({
        "id_token": id_token, "agent_id": "sso-bot",
        "resources": ["crm:*"], "actions": ["read", "delegate"]
    })
}

/// The configuration of a test identity provider, which serves plain http
/// on loopback.
fn oidc_issuer(issuer: &str, jwks_uri: Option<String>) -> OidcIssuer {
    OidcIssuer {
        issuer: issuer.to_owned(),
        audience: "mandate".into(),
        jwks_file: None,
        jwks_uri,
        allow_insecure_http: true,
        sign_in: None,
    }
}

async fn l2_app(idp: &TestIdp) -> TestApp {
    let issuer = oidc_issuer(&idp.issuer, None);
    TestApp::spawn_with(move |config| config.oidc.issuer.push(issuer)).await
}

#[tokio::test]
async fn l2_accepts_good_id_tokens_and_names_each_failed_check() {
    let (rs, es, ed) = (
        TestKey::rsa("rsa-1"),
        TestKey::ec("ec-1"),
        TestKey::ed("ed-1"),
    );
    let idp = TestIdp::start(&[&rs, &es, &ed]).await;
    let app = l2_app(&idp).await;
    let issue = |token: String| {
        let body = l2_request(&token);
        let app = &app;
        async move {
            app.post_auth("/v1/vat/issue/l2", &app.admin_key, &body)
                .await
        }
    };

    let mut human_refs = Vec::new();
    for key in [&rs, &es, &ed] {
        let issued = expect_json(
            issue(key.sign(&idp.claims(|_| {}))).await,
            StatusCode::CREATED,
        )
        .await;
        assert_eq!(issued["claims"]["svc_assurance"], "L2", "{:?}", key.alg);
        assert_eq!(issued["claims"]["svc_trust_score"], 0.7);
        human_refs.push(issued["claims"]["svc_human"].clone());
    }
    assert!(
        human_refs.windows(2).all(|w| w[0] == w[1]),
        "one person, one reference"
    );

    let forger = TestKey::rsa("rsa-2");
    let mut forged = forger.clone();
    forged.kid = "rsa-1".into();
    let none = {
        let header = base64url(br#"{"alg":"none","typ":"JWT"}"#);
        let payload = base64url(idp.claims(|_| {}).to_string().as_bytes());
        format!("{header}.{payload}.")
    };
    let cases: Vec<(String, &str)> = vec![
        (
            rs.sign(&idp.claims(|c| c["exp"] = json!(mandate_host::clock::now_s() - 120))),
            "id_token_expired",
        ),
        (
            es.sign(&idp.claims(|c| c["aud"] = json!("someone-else"))),
            "id_token_wrong_audience",
        ),
        (
            ed.sign(&idp.claims(|c| c["iss"] = json!("https://other.example"))),
            "id_token_unknown_issuer",
        ),
        (forged.sign(&idp.claims(|_| {})), "id_token_bad_signature"),
        (forger.sign(&idp.claims(|_| {})), "id_token_unknown_kid"),
        (none, "id_token_unsupported_alg"),
        (
            rs.sign(&idp.claims(|c| c["iat"] = json!(mandate_host::clock::now_s() - 700))),
            "id_token_too_old",
        ),
        ("not.a.jwt".into(), "id_token_malformed"),
    ];
    for (token, code) in cases {
        let problem = expect_problem(issue(token).await, StatusCode::UNAUTHORIZED, code).await;
        assert!(text(&problem["detail"]).starts_with("the id_token was refused"));
    }

    let mut with_nonce = l2_request(&ed.sign(&idp.claims(|_| {})));
    with_nonce["nonce"] = json!("n-2");
    let response = app
        .post_auth("/v1/vat/issue/l2", &app.admin_key, &with_nonce)
        .await;
    expect_problem(
        response,
        StatusCode::UNAUTHORIZED,
        "id_token_nonce_mismatch",
    )
    .await;
    with_nonce["nonce"] = json!("n-1");
    expect_json(
        app.post_auth("/v1/vat/issue/l2", &app.admin_key, &with_nonce)
            .await,
        StatusCode::CREATED,
    )
    .await;

    // The provider rotates in a new key: after the refetch interval, tokens
    // under the new kid are accepted.
    idp.publish(&forger);
    app.clock.advance(Duration::from_millis(5_100));
    expect_json(
        issue(forger.sign(&idp.claims(|_| {}))).await,
        StatusCode::CREATED,
    )
    .await;

    let response = app
        .post(
            "/v1/vat/issue/l2",
            &l2_request(&rs.sign(&idp.claims(|_| {}))),
        )
        .await;
    expect_problem(response, StatusCode::UNAUTHORIZED, "unauthorized").await;
}

fn base64url(bytes: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

/// The chain under any root behaves as under L1: delegate, act, revoke.
async fn chain_behaves_as_under_l1(app: &TestApp, root: &Value) {
    let child = expect_json(
        app.delegate(
            root,
            json!({"agent_id": "helper", "resources": ["crm:contacts"], "actions": ["read"]}),
        )
        .await,
        StatusCode::CREATED,
    )
    .await;
    assert_eq!(
        child["claims"]["svc_assurance"],
        root["claims"]["svc_assurance"]
    );
    assert_eq!(
        child["claims"]["svc_trust_score"],
        root["claims"]["svc_trust_score"]
    );
    let recorded = expect_json(
        app.act(text(&child["jti"]), "read", "crm:contacts", "success")
            .await,
        StatusCode::CREATED,
    )
    .await;
    assert_eq!(recorded["trust_score"], root["claims"]["svc_trust_score"]);
    let widened = app
        .delegate(
            &child,
            json!({"agent_id": "x", "resources": ["crm:*"], "actions": ["read"]}),
        )
        .await;
    expect_problem(widened, StatusCode::FORBIDDEN, "action_not_permitted").await;
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
        app.act(text(&child["jti"]), "read", "crm:contacts", "success")
            .await,
        StatusCode::FORBIDDEN,
        "token_inactive",
    )
    .await;
}

#[tokio::test]
async fn a_chain_under_an_l2_root_behaves_as_under_l1() {
    let key = TestKey::ed("ed-1");
    let idp = TestIdp::start(&[&key]).await;
    let app = l2_app(&idp).await;
    let root = expect_json(
        app.post_auth(
            "/v1/vat/issue/l2",
            &app.admin_key,
            &l2_request(&key.sign(&idp.claims(|_| {}))),
        )
        .await,
        StatusCode::CREATED,
    )
    .await;
    chain_behaves_as_under_l1(&app, &root).await;
}

async fn issue_l2(app: &TestApp, id_token: &str) -> reqwest::Response {
    app.post_auth("/v1/vat/issue/l2", &app.admin_key, &l2_request(id_token))
        .await
}

#[tokio::test]
async fn a_discovery_document_naming_another_issuer_is_refused() {
    let key = TestKey::ed("ed-1");
    let names: [fn(&str) -> String; 2] = [
        |_| "https://impostor.example".to_owned(),
        |own| format!("{own}/"),
    ];
    for name in names {
        let quirks = Quirks {
            discovery_issuer: Some(name),
            ..Quirks::default()
        };
        let idp = TestIdp::start_with(&[&key], quirks).await;
        let app = l2_app(&idp).await;
        let response = issue_l2(&app, &key.sign(&idp.claims(|_| {}))).await;
        expect_problem(response, StatusCode::BAD_GATEWAY, "oidc_discovery_mismatch").await;
        assert_eq!(
            idp.fetches.load(Ordering::SeqCst),
            0,
            "its keys are not fetched"
        );
    }
}

#[tokio::test]
async fn oidc_keys_come_over_https_or_allowed_loopback_http_only() {
    let key = TestKey::ed("ed-1");
    let idp = TestIdp::start(&[&key]).await;
    let fixtures = tempfile::tempdir().unwrap();
    let refused_at_start = [
        OidcIssuer {
            allow_insecure_http: false,
            ..oidc_issuer(&idp.issuer, None)
        },
        OidcIssuer {
            allow_insecure_http: false,
            ..oidc_issuer("https://idp.example", Some(format!("{}/keys", idp.issuer)))
        },
        oidc_issuer(
            "https://idp.example",
            Some("http://idp.example/keys".into()),
        ),
        oidc_issuer("http://idp.example", None),
    ];
    for issuer in refused_at_start {
        let mut config = mandate_host::config::Config::for_test(fixtures.path());
        config.oidc.issuer = vec![issuer.clone()];
        let error = mandate_host::AppState::open(config)
            .unwrap_err()
            .to_string();
        assert!(error.contains("must be https"), "{issuer:?}: {error}");
    }
    assert_eq!(idp.fetches.load(Ordering::SeqCst), 0);

    // A discovered jwks_uri is held to the same rule, flag or not.
    let quirks = Quirks {
        jwks_uri: Some("http://192.0.2.1/keys".into()),
        ..Quirks::default()
    };
    let idp = TestIdp::start_with(&[&key], quirks).await;
    let app = l2_app(&idp).await;
    let started = Instant::now();
    let response = issue_l2(&app, &key.sign(&idp.claims(|_| {}))).await;
    expect_problem(response, StatusCode::BAD_GATEWAY, "oidc_insecure_uri").await;
    // A fetch of that address would wait for the 5 s fetch timeout; the
    // bound leaves a busy machine room below it.
    assert!(
        started.elapsed() < Duration::from_secs(4),
        "nothing was fetched"
    );
}

/// A server on 127.0.0.1 that answers every request with an endless body
/// of undeclared length.
async fn endless_server() -> String {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut request = [0u8; 4096];
                let _ = socket.read(&mut request).await;
                let head = "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nconnection: close\r\n\r\n";
                let chunk = vec![b' '; 16 * 1024];
                if socket.write_all(head.as_bytes()).await.is_ok() {
                    while socket.write_all(&chunk).await.is_ok() {}
                }
            });
        }
    });
    base
}

#[tokio::test]
async fn an_oversized_oidc_answer_is_a_failed_fetch() {
    let key = TestKey::ed("ed-1");
    let quirks = Quirks {
        padding: mandate_host::assurance::oidc::MAX_FETCH_BYTES,
        ..Quirks::default()
    };
    let padded = TestIdp::start_with(&[&key], quirks).await;
    let app = l2_app(&padded).await;
    let response = issue_l2(&app, &key.sign(&padded.claims(|_| {}))).await;
    expect_problem(response, StatusCode::BAD_GATEWAY, "oidc_keys_unavailable").await;
    assert_eq!(padded.fetches.load(Ordering::SeqCst), 1);

    // Without a declared length the body is read up to the cap, then dropped.
    let idp = TestIdp::start(&[&key]).await;
    let issuer = oidc_issuer(
        &idp.issuer,
        Some(format!("{}/keys", endless_server().await)),
    );
    let app = TestApp::spawn_with(move |config| config.oidc.issuer.push(issuer)).await;
    let started = Instant::now();
    let response = issue_l2(&app, &key.sign(&idp.claims(|_| {}))).await;
    expect_problem(response, StatusCode::BAD_GATEWAY, "oidc_keys_unavailable").await;
    assert!(
        started.elapsed() < Duration::from_secs(4),
        "the endless body was read for {:?}",
        started.elapsed()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_provider_does_not_delay_tokens_whose_keys_are_cached() {
    let (known, unknown) = (TestKey::ed("ed-1"), TestKey::ed("ed-2"));
    let idp = TestIdp::start(&[&known]).await;
    let app = l2_app(&idp).await;
    expect_json(
        issue_l2(&app, &known.sign(&idp.claims(|_| {}))).await,
        StatusCode::CREATED,
    )
    .await;
    assert_eq!(idp.fetches.load(Ordering::SeqCst), 1);

    // Past the refetch interval, unknown kids make Mandate fetch again, from
    // a provider that now takes 4.5 s to answer (within the fetch's 5 s
    // timeout, and long enough that a cached answer within 3 s, margin for a
    // busy machine, cannot have waited for it).
    app.clock.advance(Duration::from_millis(5_100));
    *idp.delay.lock().unwrap() = Duration::from_millis(4_500);
    let mut unknown_kids = Vec::new();
    for _ in 0..3 {
        let (client, url, key) = (
            app.client.clone(),
            app.url("/v1/vat/issue/l2"),
            app.admin_key.clone(),
        );
        let body = l2_request(&unknown.sign(&idp.claims(|_| {})));
        unknown_kids.push(tokio::spawn(async move {
            client
                .post(url)
                .bearer_auth(key)
                .json(&body)
                .send()
                .await
                .unwrap()
        }));
    }
    let waited = Instant::now();
    while idp.fetches.load(Ordering::SeqCst) < 2 {
        assert!(
            waited.elapsed() < Duration::from_secs(10),
            "no refetch started"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let cached = tokio::time::timeout(
        Duration::from_secs(3),
        issue_l2(&app, &known.sign(&idp.claims(|_| {}))),
    )
    .await
    .expect("a token whose keys are cached waited for the slow fetch");
    expect_json(cached, StatusCode::CREATED).await;
    for task in unknown_kids {
        let response = task.await.unwrap();
        expect_problem(response, StatusCode::UNAUTHORIZED, "id_token_unknown_kid").await;
    }
    assert_eq!(
        idp.fetches.load(Ordering::SeqCst),
        2,
        "one fetch for all the unknown kids at once"
    );
}

/// Builds the reference verifier plugin once per test run.
fn reference_plugin() -> PathBuf {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT
        .get_or_init(|| {
            let manifest =
                Path::new(env!("CARGO_MANIFEST_DIR")).join("plugins/reference-verifier/Cargo.toml");
            let target = Path::new(env!("CARGO_TARGET_TMPDIR")).join("plugins");
            let status = std::process::Command::new(env!("CARGO"))
                .args([
                    "build",
                    "--release",
                    "--target",
                    "wasm32-unknown-unknown",
                    "--manifest-path",
                ])
                .arg(&manifest)
                .arg("--target-dir")
                .arg(&target)
                .status()
                .unwrap();
            assert!(status.success(), "building the reference plugin failed");
            target.join("wasm32-unknown-unknown/release/reference_verifier.wasm")
        })
        .clone()
}

const DESCRIBE: &str = r#"{"abi":1,"kind":"identity-verifier"}"#;

/// A plugin in the text format whose `mandate_call` runs `body`; `answer`
/// (at most 512 bytes) lies at offset 512 of its memory.
fn wat_plugin(dir: &Path, name: &str, answer: &str, body: &str) -> PathBuf {
    assert!(answer.len() <= 512, "the answer would overlap the input");
    let wat = format!(
        r#"(module
             (memory (export "memory") 1)
             (data (i32.const 0) "{describe}")
             (data (i32.const 512) "{answer}")
             (func (export "mandate_alloc") (param i32) (result i32) (i32.const 1024))
             (func (export "mandate_describe") (result i64) (i64.const {len}))
             (func (export "mandate_call") (param i32 i32) (result i64) {body}))"#,
        describe = wat_string(DESCRIBE),
        answer = wat_string(answer),
        len = DESCRIBE.len(),
    );
    let path = dir.join(format!("{name}.wat"));
    std::fs::write(&path, wat).unwrap();
    path
}

/// Bytes as a string of the text format: every byte escaped.
fn wat_string(text: &str) -> String {
    text.bytes().map(|b| format!("\\{b:02x}")).collect()
}

/// A plugin in the text format whose `mandate_call` runs `body`.
fn hostile(dir: &Path, name: &str, body: &str) -> PathBuf {
    wat_plugin(dir, name, "not json at all", body)
}

/// A plugin that answers `answer` to every call.
pub(crate) fn answering(dir: &Path, name: &str, answer: &str) -> PathBuf {
    let location = (512_i64 << 32) | i64::try_from(answer.len()).unwrap();
    wat_plugin(dir, name, answer, &format!("(i64.const {location})"))
}

fn plugin(name: &str, module: PathBuf, fuel: u64, timeout_ms: u64) -> Verifier {
    Verifier::Plugin {
        name: name.into(),
        module,
        fuel,
        memory_mib: 4,
        timeout_ms,
    }
}

fn evidence(score: f64) -> Value {
    let captures: Vec<Value> = [
        "face_liveness",
        "deepfake_detection",
        "voice",
        "gesture",
        "geolocation",
        "behavioural",
    ]
    .iter()
    .map(|m| json!({"modality": m, "score": score}))
    .collect();
    json!({"subject": "person-42", "captures": captures})
}

fn capture(verifier: &str, evidence: Value) -> Value {
    json!({
        "verifier": verifier, "evidence": evidence, "agent_id": "bio-bot",
        "resources": ["crm:*"], "actions": ["read", "delegate"]
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn l3_plugins_verify_and_hostile_plugins_are_stopped() {
    let fixtures = tempfile::tempdir().unwrap();
    let dir = fixtures.path().to_owned();
    let reference = reference_plugin();
    let app = TestApp::spawn_with(move |config| {
        config.verifier = vec![
            plugin("reference", reference, 50_000_000, 1_000),
            plugin("spin", hostile(&dir, "spin", "(loop $l (br $l)) (i64.const 0)"), 20_000_000, 5_000),
            plugin("spin-forever", hostile(&dir, "spin-forever", "(loop $l (br $l)) (i64.const 0)"), u64::MAX / 2, 200),
            plugin(
                "hog",
                hostile(
                    &dir,
                    "hog",
                    "(loop $l (br_if $l (i32.ne (memory.grow (i32.const 16)) (i32.const -1)))) unreachable",
                ),
                u64::MAX / 2,
                5_000,
            ),
            plugin("trap", hostile(&dir, "trap", "unreachable"), 1_000_000, 1_000),
            plugin("garbage", hostile(&dir, "garbage", "(i64.const 2199023255567)"), 1_000_000, 1_000),
            plugin("flood", hostile(&dir, "flood", "(i64.const 1048576)"), 1_000_000, 1_000),
        ];
    })
    .await;

    let issued = expect_json(
        app.post_auth(
            "/v1/vat/auth/capture",
            &app.admin_key,
            &capture("reference", evidence(0.97)),
        )
        .await,
        StatusCode::CREATED,
    )
    .await;
    assert_eq!(issued["claims"]["svc_assurance"], "L3");
    assert_eq!(issued["claims"]["svc_trust_score"], 0.95);
    let weak = app
        .post_auth(
            "/v1/vat/auth/capture",
            &app.admin_key,
            &capture("reference", evidence(0.5)),
        )
        .await;
    let problem = expect_problem(weak, StatusCode::UNAUTHORIZED, "evidence_not_verified").await;
    assert!(text(&problem["detail"]).contains("score"));
    let unknown = app
        .post_auth(
            "/v1/vat/auth/capture",
            &app.admin_key,
            &capture("nobody", evidence(0.97)),
        )
        .await;
    expect_problem(unknown, StatusCode::NOT_FOUND, "unknown_verifier").await;

    // Ordinary traffic keeps flowing while hostile plugins run.
    let token = app.root("bystander", &["crm:*"], &["read"]).await;
    let jti = text(&token["jti"]).to_owned();
    let (client, url) = (app.client.clone(), app.url("/v1/vat/record/action"));
    let bystander = tokio::spawn(async move {
        let mut slowest = Duration::ZERO;
        for _ in 0..40 {
            let started = Instant::now();
            let body =
                json!({"vat_jti": jti, "action": "read", "resource": "crm:a", "result": "success"});
            let status = client.post(&url).json(&body).send().await.unwrap().status();
            assert_eq!(status, StatusCode::CREATED);
            slowest = slowest.max(started.elapsed());
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        slowest
    });
    let cases = [
        ("spin", &["plugin_out_of_fuel"][..]),
        ("spin-forever", &["plugin_timeout"][..]),
        ("hog", &["plugin_out_of_memory"][..]),
        ("trap", &["plugin_trapped"][..]),
        ("garbage", &["plugin_bad_output"][..]),
        ("flood", &["plugin_oversized_output"][..]),
    ];
    let mut running = Vec::new();
    for (name, codes) in cases {
        let (client, url, key) = (
            app.client.clone(),
            app.url("/v1/vat/auth/capture"),
            app.admin_key.clone(),
        );
        running.push(tokio::spawn(async move {
            let started = Instant::now();
            let response = client
                .post(url)
                .bearer_auth(key)
                .json(&capture(name, evidence(0.97)))
                .send()
                .await
                .unwrap();
            (name, codes, response, started.elapsed())
        }));
    }
    for task in running {
        let (name, codes, response, elapsed) = task.await.unwrap();
        assert_eq!(response.status(), StatusCode::BAD_GATEWAY, "{name}");
        let problem: Value = response.json().await.unwrap();
        assert!(codes.contains(&text(&problem["code"])), "{name}: {problem}");
        assert!(elapsed < Duration::from_secs(5), "{name} took {elapsed:?}");
    }
    let slowest = bystander.await.unwrap();
    assert!(
        slowest < Duration::from_secs(1),
        "an ordinary request waited {slowest:?}"
    );
    expect_json(
        app.client.get(app.url("/healthz")).send().await.unwrap(),
        StatusCode::OK,
    )
    .await;
    // The server still verifies after all that.
    let again = app
        .post_auth(
            "/v1/vat/auth/capture",
            &app.admin_key,
            &capture("reference", evidence(0.99)),
        )
        .await;
    let root = expect_json(again, StatusCode::CREATED).await;
    chain_behaves_as_under_l1(&app, &root).await;
}

#[tokio::test]
async fn a_long_multibyte_refusal_reason_is_cut_between_characters() {
    let fixtures = tempfile::tempdir().unwrap();
    // Byte 200 of the reason falls inside an `é`: cutting there would panic.
    let reason = format!("a{}", "é".repeat(201));
    let answer = json!({"verified": false, "reason": reason}).to_string();
    let module = answering(fixtures.path(), "refuser", &answer);
    let app = TestApp::spawn_with(move |config| {
        config.verifier = vec![plugin("refuser", module, 1_000_000, 1_000)];
    })
    .await;
    let response = app
        .post_auth(
            "/v1/vat/auth/capture",
            &app.admin_key,
            &capture("refuser", evidence(0.97)),
        )
        .await;
    let problem = expect_problem(response, StatusCode::UNAUTHORIZED, "evidence_not_verified").await;
    assert_eq!(
        text(&problem["detail"]),
        format!(
            "the verifier did not verify the evidence: a{}",
            "é".repeat(199)
        )
    );
}

#[tokio::test]
async fn a_plugin_that_imports_or_lies_about_its_kind_is_refused_at_start() {
    let fixtures = tempfile::tempdir().unwrap();
    let importer = fixtures.path().join("importer.wat");
    std::fs::write(
        &importer,
        r#"(module (import "env" "clock" (func)) (memory (export "memory") 1))"#,
    )
    .unwrap();
    let liar = fixtures.path().join("liar.wat");
    let described = r#"{"abi":1,"kind":"policy"}"#;
    std::fs::write(
        &liar,
        format!(
            r#"(module (memory (export "memory") 1) (data (i32.const 0) "{}")
                 (func (export "mandate_describe") (result i64) (i64.const {})))"#,
            described.replace('"', "\\\""),
            described.len()
        ),
    )
    .unwrap();
    for (module, expected) in [(importer, "imports"), (liar, "not a `identity-verifier`")] {
        let mut config = mandate_host::config::Config::for_test(fixtures.path());
        config.verifier = vec![plugin("p", module, 1_000_000, 1_000)];
        let error = mandate_host::AppState::open(config)
            .unwrap_err()
            .to_string();
        assert!(error.contains(expected), "{error}");
    }
}

#[tokio::test]
async fn provider_attestations_must_be_signed_by_the_provider() {
    let provider = TestKey::ed("idv-1");
    let fixtures = tempfile::tempdir().unwrap();
    let jwks_file = fixtures.path().join("provider.json");
    std::fs::write(
        &jwks_file,
        serde_json::to_vec(&JwkSet {
            keys: vec![provider.jwk()],
        })
        .unwrap(),
    )
    .unwrap();
    let app = TestApp::spawn_with(|config| {
        config.verifier = vec![
            Verifier::Provider {
                name: "acme".into(),
                issuer: "https://idv.acme.example".into(),
                jwks_file: jwks_file.clone(),
                audience: Some("mandate".into()),
            },
            Verifier::Provider {
                name: "acme-any-audience".into(),
                issuer: "https://idv.acme.example".into(),
                jwks_file,
                audience: None,
            },
        ];
    })
    .await;
    let attestation = |key: &TestKey, edit: &dyn Fn(&mut Value)| {
        let now = mandate_host::clock::now_s();
        let mut claims = json!({
            "iss": "https://idv.acme.example", "aud": "mandate", "sub": "person-7",
            "iat": now, "exp": now + 300, "verified": true,
            "modalities": ["face_liveness", "document"]
        });
        edit(&mut claims);
        json!({"attestation": key.sign(&claims)})
    };
    let good = app
        .post_auth(
            "/v1/vat/auth/capture",
            &app.admin_key,
            &capture("acme", attestation(&provider, &|_| {})),
        )
        .await;
    let root = expect_json(good, StatusCode::CREATED).await;
    assert_eq!(root["claims"]["svc_assurance"], "L3");

    let mut forger = TestKey::ed("other");
    forger.kid = "idv-1".into();
    let cases: Vec<(Value, StatusCode, &str)> = vec![
        (
            attestation(&forger, &|_| {}),
            StatusCode::UNAUTHORIZED,
            "attestation_bad_signature",
        ),
        (
            attestation(&provider, &|c| c["verified"] = json!(false)),
            StatusCode::UNAUTHORIZED,
            "evidence_not_verified",
        ),
        (
            attestation(&provider, &|c| c["iss"] = json!("https://evil.example")),
            StatusCode::UNAUTHORIZED,
            "attestation_wrong_issuer",
        ),
        (
            attestation(&provider, &|c| c["aud"] = json!("other")),
            StatusCode::UNAUTHORIZED,
            "attestation_wrong_audience",
        ),
        (
            attestation(&provider, &|c| {
                c.as_object_mut().unwrap().remove("aud");
            }),
            StatusCode::UNAUTHORIZED,
            "attestation_missing_claim",
        ),
        (
            attestation(&provider, &|c| c["aud"] = json!(42)),
            StatusCode::UNAUTHORIZED,
            "attestation_missing_claim",
        ),
        (
            attestation(&provider, &|c| {
                let now = mandate_host::clock::now_s();
                c["iat"] = json!(now + 120);
                c["exp"] = json!(now + 600);
            }),
            StatusCode::UNAUTHORIZED,
            "attestation_issued_in_future",
        ),
        (
            json!({"verified": true, "sub": "me"}),
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_evidence",
        ),
        (
            json!({"attestation": "eyJhbGciOiJub25lIn0.e30."}),
            StatusCode::UNAUTHORIZED,
            "attestation_invalid",
        ),
    ];
    for (evidence, status, code) in cases {
        let response = app
            .post_auth(
                "/v1/vat/auth/capture",
                &app.admin_key,
                &capture("acme", evidence),
            )
            .await;
        expect_problem(response, status, code).await;
    }
    // Within the 60 s leeway an `iat` ahead of the clock is skew, not forgery.
    let skewed = attestation(&provider, &|c| {
        c["iat"] = json!(mandate_host::clock::now_s() + 30);
    });
    // A provider configured without an audience takes attestations without `aud`.
    let without_aud = attestation(&provider, &|c| {
        c.as_object_mut().unwrap().remove("aud");
    });
    for (verifier, evidence) in [("acme", skewed), ("acme-any-audience", without_aud)] {
        let response = app
            .post_auth(
                "/v1/vat/auth/capture",
                &app.admin_key,
                &capture(verifier, evidence),
            )
            .await;
        expect_json(response, StatusCode::CREATED).await;
    }
    chain_behaves_as_under_l1(&app, &root).await;
}

/// The token list shows an L2 human by the ID token's `name`, else its
/// `email`; the newest issue's label wins.
#[tokio::test]
async fn l2_humans_are_labelled_by_their_name_or_email() {
    let key = TestKey::rsa("rsa-1");
    let idp = TestIdp::start(&[&key]).await;
    let app = l2_app(&idp).await;
    let issued = expect_json(
        issue_l2(
            &app,
            &key.sign(&idp.claims(|c| c["email"] = json!("ada@idp.example"))),
        )
        .await,
        StatusCode::CREATED,
    )
    .await;
    let human = text(&issued["claims"]["svc_human"]).to_owned();
    let path = format!("/v1/vat/tokens?human_ref={human}");
    let label = || {
        let (app, path) = (&app, &path);
        async move {
            let page = expect_json(app.get_auth(path, &app.admin_key).await, StatusCode::OK).await;
            page["tokens"][0]["human_label"].clone()
        }
    };
    assert_eq!(label().await, "ada@idp.example");
    let named = key.sign(&idp.claims(|c| {
        c["email"] = json!("ada@idp.example");
        c["name"] = json!("Ada Lovelace");
    }));
    expect_json(issue_l2(&app, &named).await, StatusCode::CREATED).await;
    assert_eq!(label().await, "Ada Lovelace");
    let listed = expect_json(app.get_auth(&path, &app.admin_key).await, StatusCode::OK).await;
    assert!(
        listed["tokens"]
            .as_array()
            .unwrap()
            .iter()
            .all(|t| t["human_label"] == "Ada Lovelace" && t["assurance_level"] == "L2")
    );
}

//! The request bodies of every POST endpoint, through the real router in
//! process. Whatever the body, the answer is never a 5xx, and every error is
//! a problem body. `$JTI`, `$JWT` and `$AAR` in a body stand for a live
//! token, its compact form and one of its records, so inputs reach past the
//! token check; `$VICTIM` for a token there to be revoked.

#![no_main]

use std::sync::OnceLock;

use axum::Router;
use axum::body::Body;
use axum::http::{Request, header};
use libfuzzer_sys::fuzz_target;
use mandate_host::AppState;
use mandate_host::config::{Config, RateLimits};
use tower::ServiceExt as _;

const ROUTES: [&str; 9] = [
    "/v1/vat/issue/l1",
    "/v1/vat/record/action",
    "/v1/vat/authorize",
    "/v1/vat/aar/$AAR/complete",
    "/v1/vat/aar/$AAR/feedback",
    "/v1/vat/delegate",
    "/v1/vat/revoke",
    "/v1/vat/issue/l2",
    "/v1/vat/auth/capture",
];

struct World {
    runtime: tokio::runtime::Runtime,
    app: Router,
    admin_key: String,
    jti: String,
    jwt: String,
    aar: String,
    victim: String,
    _dir: tempfile::TempDir,
}

async fn post(app: &Router, path: &str, key: &str, body: Vec<u8>) -> (u16, Vec<u8>, String) {
    let request = Request::post(path)
        .header(header::CONTENT_TYPE, "application/json")
        .header(header::AUTHORIZATION, format!("Bearer {key}"))
        .body(Body::from(body))
        .expect("a request builds");
    let response = app.clone().oneshot(request).await.expect("the router answers");
    let status = response.status().as_u16();
    let content_type = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    let bytes = axum::body::to_bytes(response.into_body(), 1 << 20).await.expect("a body reads");
    (status, bytes.to_vec(), content_type)
}

fn field(body: &[u8], name: &str) -> String {
    let value: serde_json::Value = serde_json::from_slice(body).expect("JSON");
    value[name].as_str().expect("a string member").to_owned()
}

fn world() -> &'static World {
    static WORLD: OnceLock<World> = OnceLock::new();
    WORLD.get_or_init(|| {
        let dir = tempfile::tempdir().expect("a temporary folder");
        let mut config = Config::for_test(dir.path());
        config.rate_limits = RateLimits::off();
        let (state, _) = AppState::open(config).expect("the server opens");
        let admin_key = std::fs::read_to_string(dir.path().join("admin.key")).expect("the admin key").trim().to_owned();
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a runtime");
        let app = runtime.block_on(async { mandate_host::app(state) });
        let (jti, jwt, aar, victim) = runtime.block_on(async {
            let issued = br#"{"developer_email":"dev@example.com","agent_id":"fuzz","resources":["crm:*"],"actions":["read","delegate"],"constraints":{"max_spend_usd":100}}"#;
            let (_, body, _) = post(&app, "/v1/vat/issue/l1", &admin_key, issued.to_vec()).await;
            let (jti, jwt) = (field(&body, "jti"), field(&body, "compact_jwt"));
            let authorize = br#"{"action":"read","resource":"crm:a"}"#;
            let (_, body, _) = post(&app, "/v1/vat/authorize", &jwt, authorize.to_vec()).await;
            let aar = field(&body, "aar_id");
            let (_, body, _) = post(&app, "/v1/vat/issue/l1", &admin_key, issued.to_vec()).await;
            (jti, jwt, aar, field(&body, "jti"))
        });
        World { runtime, app, admin_key, jti, jwt, aar, victim, _dir: dir }
    })
}

fn substitute(text: &str, world: &World) -> String {
    text.replace("$JTI", &world.jti)
        .replace("$JWT", &world.jwt)
        .replace("$AAR", &world.aar)
        .replace("$VICTIM", &world.victim)
}

fuzz_target!(|data: &[u8]| {
    let Some((&selector, body)) = data.split_first() else { return };
    let world = world();
    let route = substitute(ROUTES[usize::from(selector) % ROUTES.len()], world);
    let body = match std::str::from_utf8(body) {
        Ok(text) => substitute(text, world).into_bytes(),
        Err(_) => body.to_vec(),
    };
    let key = if selector & 0x80 == 0 { world.admin_key.clone() } else { world.jwt.clone() };
    let (status, response, content_type) = world.runtime.block_on(post(&world.app, &route, &key, body));
    assert!(status < 500, "{route} answered {status}: {}", String::from_utf8_lossy(&response));
    if status >= 400 {
        assert_eq!(content_type, "application/problem+json", "{route} {status}");
        let problem: serde_json::Value = serde_json::from_slice(&response).expect("a problem body is JSON");
        assert!(problem["code"].is_string());
    }
});

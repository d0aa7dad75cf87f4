//! Signing in on the consent page with an identity provider (chunk C13;
//! docs/oauth.md): Mandate as the provider's relying party — code, PKCE
//! S256, `state`, `nonce`, the ID token verified as an L2 one — and the
//! consent session it gives the browser: for one request, from the consent
//! page's own origin with its CSRF value. The provider is a test one on
//! 127.0.0.1 that keeps its codes, checks the verifier, the redirect URI
//! and the client's secret, and uses each code once.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::routing::{get, post};
use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use mandate_host::config::{Config, OidcIssuer, OidcSignIn};
use reqwest::StatusCode;
use serde_json::{Value, json};
use sha2::{Digest as _, Sha256};

use super::{Flow, REDIRECT, browser, claims_of, location, oauth_on, query_of, text};
use crate::assurance::TestKey;
use crate::helpers::{TestApp, expect_json, expect_problem};

/// Mandate's client at the provider.
const CLIENT_ID: &str = "mandate-consent";
const SECRET: &str = "s3cret:&=+";
const PROVIDER: &str = "corp";

/// A code the provider handed out, and what it was for.
#[derive(Clone)]
struct Grant {
    subject: String,
    nonce: String,
    challenge: String,
    redirect_uri: String,
    used: bool,
}

#[derive(Default)]
struct Provider {
    codes: HashMap<String, Grant>,
    /// The `Authorization` header of each token request.
    auth: Vec<Option<String>>,
}

/// A test OpenID provider: discovery, keys, and a token endpoint.
struct TestProvider {
    issuer: String,
    key: TestKey,
    state: Arc<Mutex<Provider>>,
}

async fn token_endpoint(
    State((issuer, key, state)): State<(String, TestKey, Arc<Mutex<Provider>>)>,
    headers: HeaderMap,
    body: String,
) -> (StatusCode, axum::Json<Value>) {
    let form: HashMap<String, String> = url_form(&body);
    let auth = headers
        .get("authorization")
        .map(|value| value.to_str().unwrap().to_owned());
    let mut provider = state.lock().unwrap();
    provider.auth.push(auth.clone());
    let expected = format!(
        "Basic {}",
        STANDARD.encode(format!("{CLIENT_ID}:{}", encoded(SECRET)))
    );
    let refused = |error: &str| (StatusCode::BAD_REQUEST, axum::Json(json!({"error": error})));
    if auth.as_deref() != Some(expected.as_str()) {
        return (
            StatusCode::UNAUTHORIZED,
            axum::Json(json!({"error": "invalid_client"})),
        );
    }
    let Some(grant) = form
        .get("code")
        .and_then(|code| provider.codes.get_mut(code))
    else {
        return refused("invalid_grant");
    };
    let verifier = form.get("code_verifier").cloned().unwrap_or_default();
    if grant.used
        || form.get("grant_type").map(String::as_str) != Some("authorization_code")
        || form.get("redirect_uri") != Some(&grant.redirect_uri)
        || URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes())) != grant.challenge
    {
        grant.used = true;
        return refused("invalid_grant");
    }
    grant.used = true;
    let now = mandate_host::clock::now_s();
    let id_token = key.sign(&json!({
        "iss": issuer, "aud": CLIENT_ID, "sub": grant.subject, "nonce": grant.nonce,
        "iat": now, "exp": now + 300, "name": "Ada Lovelace"
    }));
    (
        StatusCode::OK,
        axum::Json(json!({"access_token": "at", "token_type": "Bearer", "id_token": id_token})),
    )
}

fn url_form(body: &str) -> HashMap<String, String> {
    reqwest::Url::parse(&format!("http://x/?{body}"))
        .unwrap()
        .query_pairs()
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect()
}

fn encoded(text: &str) -> String {
    percent_encoding::utf8_percent_encode(text, percent_encoding::NON_ALPHANUMERIC)
        .to_string()
        .replace("%2D", "-")
        .replace("%2E", ".")
        .replace("%5F", "_")
        .replace("%7E", "~")
}

impl TestProvider {
    async fn start() -> TestProvider {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let issuer = format!("http://{}", listener.local_addr().unwrap());
        let key = TestKey::ed("corp-1");
        let state = Arc::new(Mutex::new(Provider::default()));
        let discovery = json!({
            "issuer": issuer,
            "jwks_uri": format!("{issuer}/keys"),
            "authorization_endpoint": format!("{issuer}/authorize?tenant=t1"),
            "token_endpoint": format!("{issuer}/token"),
            "code_challenge_methods_supported": ["S256"],
        });
        let keys = json!({"keys": [key.jwk()]});
        let app = Router::new()
            .route(
                "/.well-known/openid-configuration",
                get(move || async move { axum::Json(discovery) }),
            )
            .route("/keys", get(move || async move { axum::Json(keys) }))
            .route(
                "/token",
                post(token_endpoint).with_state((issuer.clone(), key.clone(), state.clone())),
            );
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        TestProvider { issuer, key, state }
    }

    fn config(&self) -> OidcIssuer {
        OidcIssuer {
            issuer: self.issuer.clone(),
            audience: CLIENT_ID.into(),
            jwks_file: None,
            jwks_uri: None,
            allow_insecure_http: true,
            sign_in: Some(OidcSignIn {
                name: PROVIDER.into(),
                client_secret: Some(SECRET.into()),
                org: "default".into(),
            }),
        }
    }

    /// The person signs in at the provider for the authentication request
    /// at `url`: the code it sends the browser back with, and the query of
    /// that redirect (`code`, `state`; `iss` left to the test).
    fn sign_in(&self, url: &str, subject: &str, nonce: Option<&str>) -> HashMap<String, String> {
        let query = query_of(url);
        let code = format!("code-{}", self.state.lock().unwrap().codes.len());
        self.state.lock().unwrap().codes.insert(
            code.clone(),
            Grant {
                subject: subject.into(),
                nonce: nonce.unwrap_or(&query["nonce"]).into(),
                challenge: query["code_challenge"].clone(),
                redirect_uri: query["redirect_uri"].clone(),
                used: false,
            },
        );
        HashMap::from([
            ("code".into(), code),
            ("state".into(), query["state"].clone()),
        ])
    }
}

/// A consent flow whose server signs people in with a test provider.
struct SignInFlow {
    flow: Flow,
    provider: TestProvider,
}

/// A browser's cookie jar, as far as these tests need one: each cookie by
/// name, from `Set-Cookie` headers, with its attributes.
fn set_cookies(response: &reqwest::Response) -> HashMap<String, (String, String)> {
    response
        .headers()
        .get_all("set-cookie")
        .iter()
        .map(|value| {
            let value = value.to_str().unwrap();
            let (pair, attributes) = value.split_once(';').unwrap_or((value, ""));
            let (name, value) = pair.split_once('=').unwrap();
            (
                name.to_owned(),
                (value.to_owned(), attributes.trim().to_owned()),
            )
        })
        .collect()
}

/// A signed-in browser: its session cookie and CSRF value, for `sealed`.
struct Session {
    cookie: String,
    csrf: String,
}

impl SignInFlow {
    async fn start() -> SignInFlow {
        SignInFlow::start_with(|_| {}).await
    }

    /// [`SignInFlow::start`] with the server's configuration changed by
    /// `edit` besides.
    async fn start_with(edit: impl FnOnce(&mut Config)) -> SignInFlow {
        let provider = TestProvider::start().await;
        let config = provider.config();
        let app = TestApp::spawn_with(move |c| {
            oauth_on(c);
            c.oidc.issuer.push(config);
            edit(c);
        })
        .await;
        SignInFlow {
            flow: Flow::on(app).await,
            provider,
        }
    }

    fn app(&self) -> &TestApp {
        &self.flow.app
    }

    async fn start_sign_in(&self, sealed: &str) -> reqwest::Response {
        browser()
            .get(format!(
                "{}?request={sealed}",
                self.app().url(&format!("/v1/oauth/oidc/{PROVIDER}/start"))
            ))
            .send()
            .await
            .unwrap()
    }

    /// The sign-in cookie and the provider's authentication request URL.
    async fn begin(&self, sealed: &str) -> (String, String) {
        let response = self.start_sign_in(sealed).await;
        assert_eq!(response.status(), StatusCode::SEE_OTHER);
        let cookies = set_cookies(&response);
        let (value, attributes) = &cookies["__Host-mandate-sign-in"];
        assert_eq!(
            attributes,
            "Path=/; Secure; HttpOnly; SameSite=Lax; Max-Age=600"
        );
        (value.clone(), location(&response))
    }

    async fn callback(&self, cookie: Option<&str>, query: &[(&str, &str)]) -> reqwest::Response {
        let mut request = browser().get(format!(
            "{}?{}",
            self.app()
                .url(&format!("/v1/oauth/oidc/{PROVIDER}/callback")),
            super::encoded(query)
        ));
        if let Some(cookie) = cookie {
            request = request.header("cookie", format!("__Host-mandate-sign-in={cookie}"));
        }
        request.send().await.unwrap()
    }

    /// Signs `subject` in for `sealed`: the session the browser holds.
    async fn signed_in(&self, sealed: &str, subject: &str) -> Session {
        let (cookie, url) = self.begin(sealed).await;
        let answer = self.provider.sign_in(&url, subject, None);
        let response = self
            .callback(
                Some(&cookie),
                &[
                    ("code", &answer["code"]),
                    ("state", &answer["state"]),
                    ("iss", &self.provider.issuer),
                ],
            )
            .await;
        assert_eq!(response.status(), StatusCode::SEE_OTHER);
        let to = location(&response);
        let (page, csrf) = to.split_once("#signed-in=").unwrap();
        assert_eq!(page, format!("{}/oauth/consent", self.app().base));
        let cookies = set_cookies(&response);
        let (value, attributes) = &cookies["__Host-mandate-consent"];
        assert!(
            attributes.starts_with("Path=/; Secure; HttpOnly; SameSite=Strict; Max-Age="),
            "{attributes}"
        );
        assert_eq!(cookies["__Host-mandate-sign-in"].0, "");
        assert_eq!(response.headers()["cache-control"], "no-store");
        Session {
            cookie: value.clone(),
            csrf: csrf.to_owned(),
        }
    }

    /// A consent API call the page makes with a session: the cookie, its
    /// own origin, `Sec-Fetch-Site` and the CSRF value, each replaceable.
    async fn as_page(
        &self,
        path: &str,
        session: &Session,
        headers: &[(&str, Option<&str>)],
        body: &Value,
    ) -> reqwest::Response {
        let origin = self.app().base.clone();
        let cookie = format!("__Host-mandate-consent={}", session.cookie);
        let mut sent: Vec<(&str, Option<String>)> = vec![
            ("cookie", Some(cookie)),
            ("origin", Some(origin)),
            ("sec-fetch-site", Some("same-origin".into())),
            ("mandate-csrf", Some(session.csrf.clone())),
        ];
        for (name, value) in headers {
            match sent.iter_mut().find(|(known, _)| known == name) {
                Some(slot) => slot.1 = value.map(str::to_owned),
                None => sent.push((name, value.map(str::to_owned))),
            }
        }
        let mut request = self.app().client.post(self.app().url(path)).json(body);
        for (name, value) in sent {
            if let Some(value) = value {
                request = request.header(name, value);
            }
        }
        request.send().await.unwrap()
    }
}

/// The whole flow: the page lists the provider, the person signs in there,
/// opens and approves the request with the session; the code becomes a
/// VAT at L2 for the person the provider named — the same human an L2
/// issue with that provider's ID token names — and Mandate authenticated
/// to the provider with its secret (`client_secret_basic`, form-encoded).
#[tokio::test]
async fn a_person_the_provider_signs_in_consents_at_l2() {
    let signin = SignInFlow::start().await;
    let app = signin.app();
    let providers = expect_json(
        app.client
            .get(app.url("/v1/oauth/oidc/providers"))
            .send()
            .await
            .unwrap(),
        StatusCode::OK,
    )
    .await;
    assert_eq!(
        providers,
        json!({"providers": [{"name": PROVIDER, "issuer": signin.provider.issuer, "host": "127.0.0.1"}]})
    );
    let sealed = signin.flow.sealed().await;
    let (_, url) = signin.begin(&sealed).await;
    let request = query_of(&url);
    assert!(url.starts_with(&format!("{}/authorize?tenant=t1&", signin.provider.issuer)));
    assert_eq!(request["response_type"], "code");
    assert_eq!(request["client_id"], CLIENT_ID);
    assert_eq!(request["scope"], "openid profile email");
    assert_eq!(request["code_challenge_method"], "S256");
    assert_eq!(
        request["redirect_uri"],
        format!("{}/v1/oauth/oidc/{PROVIDER}/callback", app.base)
    );
    assert_eq!(request["state"].len(), 43);
    assert_eq!(request["nonce"].len(), 43);
    let session = signin.signed_in(&sealed, "ada-42").await;
    let opened = expect_json(
        signin
            .as_page(
                "/v1/oauth/requests/open",
                &session,
                &[],
                &json!({"request": sealed}),
            )
            .await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(opened["client_name"], "Claude");
    assert_eq!(opened["signed_in_as"], "Ada Lovelace");
    assert_eq!(opened["assurance"], "L2");
    let approved = expect_json(
        signin
            .as_page(
                "/v1/oauth/requests/decision",
                &session,
                &[],
                &json!({"request": sealed, "decision": "approve",
                        "grant": {"actions": ["read"], "resources": ["crm:*"]}}),
            )
            .await,
        StatusCode::OK,
    )
    .await;
    let redirect = text(&approved["redirect"]);
    assert!(redirect.starts_with(&format!("{REDIRECT}?")), "{redirect}");
    let code = query_of(redirect)["code"].clone();
    let issued = expect_json(signin.flow.redeem(&code).await, StatusCode::OK).await;
    let claims = claims_of(text(&issued["access_token"]));
    assert_eq!(claims["svc_assurance"], "L2");
    assert_eq!(
        text(&claims["sub"]),
        format!("agent:{}", text(&opened["agent_id"]))
    );
    // An L2 issue with an ID token of the same person names the same human.
    let now = mandate_host::clock::now_s();
    let id_token = signin.provider.key.sign(&json!({
        "iss": signin.provider.issuer, "aud": CLIENT_ID, "sub": "ada-42",
        "iat": now, "exp": now + 300
    }));
    let direct = expect_json(
        app.post_auth(
            "/v1/vat/issue/l2",
            &signin.flow.developer,
            &json!({"id_token": id_token, "agent_id": "sso-bot",
                    "resources": ["crm:*"], "actions": ["read"]}),
        )
        .await,
        StatusCode::CREATED,
    )
    .await;
    let direct_claims = claims_of(text(&direct["compact_jwt"]));
    assert_eq!(claims["svc_human"], direct_claims["svc_human"]);
    let auth = signin.provider.state.lock().unwrap().auth.clone();
    assert_eq!(auth.len(), 1);
    assert!(auth[0].as_deref().unwrap().starts_with("Basic "));
}

/// A callback's sign-in cookie, if sent, and query.
type Refusal<'a> = (Option<&'a str>, Vec<(&'a str, &'a str)>);

/// Every way a provider's answer can be wrong ends the sign-in with a
/// problem and no session: an unknown provider, no sign-in under way,
/// another provider's callback, a `state` or `iss` not the sign-in's, the
/// provider's refusal, a code replayed, an ID token with another nonce, a
/// sign-in that took too long, a request not this server's.
#[tokio::test]
async fn a_sign_in_fails_closed() {
    let signin = SignInFlow::start().await;
    let app = signin.app();
    let sealed = signin.flow.sealed().await;
    let unknown = browser()
        .get(app.url(&format!("/v1/oauth/oidc/other/start?request={sealed}")))
        .send()
        .await
        .unwrap();
    expect_problem(unknown, StatusCode::NOT_FOUND, "sign_in_provider_unknown").await;
    let tampered = signin.start_sign_in(&format!("{sealed}x")).await;
    expect_problem(tampered, StatusCode::BAD_REQUEST, "request_invalid").await;

    let (cookie, url) = signin.begin(&sealed).await;
    let answer = signin.provider.sign_in(&url, "ada-42", None);
    let (code, state) = (answer["code"].as_str(), answer["state"].as_str());
    let refusals: [Refusal; 5] = [
        (None, vec![("code", code), ("state", state)]),
        (Some("not-sealed"), vec![("code", code), ("state", state)]),
        (Some(&cookie), vec![("code", code), ("state", "other")]),
        (
            Some(&cookie),
            vec![
                ("code", code),
                ("state", state),
                ("iss", "https://evil.example"),
            ],
        ),
        (
            Some(&cookie),
            vec![("error", "access_denied"), ("state", state)],
        ),
    ];
    for (sent, query) in refusals {
        let response = signin.callback(sent, &query).await;
        assert!(!set_cookies(&response).contains_key("__Host-mandate-consent"));
        expect_problem(response, StatusCode::BAD_REQUEST, "sign_in_refused").await;
    }
    // The sign-in of another provider's callback path is not this one's.
    let other = browser()
        .get(app.url(&format!(
            "/v1/oauth/oidc/other/callback?code={code}&state={state}"
        )))
        .header("cookie", format!("__Host-mandate-sign-in={cookie}"))
        .send()
        .await
        .unwrap();
    expect_problem(other, StatusCode::NOT_FOUND, "sign_in_provider_unknown").await;
    // None of the refusals used the code: it works once, then never again.
    let query = [("code", code), ("state", state)];
    assert_eq!(
        signin.callback(Some(&cookie), &query).await.status(),
        StatusCode::SEE_OTHER
    );
    let replayed = signin.callback(Some(&cookie), &query).await;
    expect_problem(replayed, StatusCode::BAD_REQUEST, "sign_in_refused").await;

    // An ID token whose nonce is not the sign-in's.
    let (cookie, url) = signin.begin(&sealed).await;
    let answer = signin
        .provider
        .sign_in(&url, "ada-42", Some("another-nonce"));
    let response = signin
        .callback(
            Some(&cookie),
            &[("code", &answer["code"]), ("state", &answer["state"])],
        )
        .await;
    expect_problem(
        response,
        StatusCode::UNAUTHORIZED,
        "id_token_nonce_mismatch",
    )
    .await;

    // A sign-in that took longer than ten minutes.
    let (cookie, url) = signin.begin(&sealed).await;
    let answer = signin.provider.sign_in(&url, "ada-42", None);
    app.clock.advance(Duration::from_secs(601));
    let response = signin
        .callback(
            Some(&cookie),
            &[("code", &answer["code"]), ("state", &answer["state"])],
        )
        .await;
    expect_problem(response, StatusCode::BAD_REQUEST, "sign_in_refused").await;
}

/// A session decides its own request only, from the consent page only:
/// without the CSRF value, with another, from another origin or site, with
/// a changed cookie or the sign-in's cookie in its place, for another
/// request, or expired, nothing is opened or decided; and a signed-in
/// person grants only their own agents.
#[tokio::test]
async fn a_consent_session_is_for_its_request_from_its_page_only() {
    let signin = SignInFlow::start().await;
    let app = signin.app();
    let sealed = signin.flow.sealed().await;
    let session = signin.signed_in(&sealed, "ada-42").await;
    let open = json!({"request": sealed});
    for headers in [
        vec![("mandate-csrf", None)],
        vec![("mandate-csrf", Some("x"))],
        vec![("origin", None)],
        vec![("origin", Some("https://evil.example"))],
        vec![("sec-fetch-site", Some("cross-site"))],
        vec![("sec-fetch-site", Some("same-site"))],
    ] {
        let response = signin
            .as_page("/v1/oauth/requests/open", &session, &headers, &open)
            .await;
        expect_problem(response, StatusCode::FORBIDDEN, "csrf_refused").await;
    }
    let (sign_in_cookie, _) = signin.begin(&sealed).await;
    let mut changed = session.cookie.clone().into_bytes();
    changed[30] = if changed[30] == b'A' { b'B' } else { b'A' };
    for cookie in [String::from_utf8(changed).unwrap(), sign_in_cookie] {
        let forged = Session {
            cookie,
            csrf: session.csrf.clone(),
        };
        let response = signin
            .as_page("/v1/oauth/requests/open", &forged, &[], &open)
            .await;
        expect_problem(
            response,
            StatusCode::UNAUTHORIZED,
            "consent_session_invalid",
        )
        .await;
    }
    let another = signin.flow.sealed().await;
    for (path, body) in [
        ("/v1/oauth/requests/open", json!({"request": another})),
        (
            "/v1/oauth/requests/decision",
            json!({"request": another, "decision": "deny"}),
        ),
    ] {
        let response = signin.as_page(path, &session, &[], &body).await;
        expect_problem(
            response,
            StatusCode::FORBIDDEN,
            "consent_session_other_request",
        )
        .await;
    }
    // An agent another human owns is not granted by a signed-in person.
    let theirs = signin
        .flow
        .approve(
            &another,
            json!({"agent_id": "dev-bot", "actions": ["read"], "resources": ["crm:*"]}),
        )
        .await;
    expect_json(signin.flow.redeem(&theirs["code"]).await, StatusCode::OK).await;
    let response = signin
        .as_page(
            "/v1/oauth/requests/decision",
            &session,
            &[],
            &json!({"request": sealed, "decision": "approve",
                    "grant": {"agent_id": "dev-bot", "actions": ["read"], "resources": ["crm:*"]}}),
        )
        .await;
    expect_problem(response, StatusCode::FORBIDDEN, "agent_not_yours").await;
    // Past its fifteen minutes (and the request's own expiry) it is gone.
    app.clock.advance(Duration::from_secs(901));
    let response = signin
        .as_page("/v1/oauth/requests/open", &session, &[], &open)
        .await;
    expect_problem(
        response,
        StatusCode::UNAUTHORIZED,
        "consent_session_invalid",
    )
    .await;
}

/// A signed-in person spends a rate limit as an API key does: past the
/// burst their consent calls are 429 with `Retry-After`, and another
/// person signed in beside them is not held back by it.
#[tokio::test]
async fn a_signed_in_person_is_rate_limited_as_a_key_is() {
    let signin = SignInFlow::start_with(|c| {
        c.rate_limits.per_api_key = 1;
        c.rate_limits.burst = 2;
    })
    .await;
    let sealed = signin.flow.sealed().await;
    let ada = signin.signed_in(&sealed, "ada-42").await;
    let grace = signin.signed_in(&sealed, "grace-7").await;
    let open = json!({"request": sealed});
    let mut statuses = Vec::new();
    for _ in 0..3 {
        let response = signin
            .as_page("/v1/oauth/requests/open", &ada, &[], &open)
            .await;
        statuses.push(response.status().as_u16());
        if response.status() == StatusCode::TOO_MANY_REQUESTS {
            assert!(response.headers().contains_key("retry-after"));
            expect_problem(response, StatusCode::TOO_MANY_REQUESTS, "rate_limited").await;
        }
    }
    assert_eq!(statuses, [200, 200, 429]);
    expect_json(
        signin
            .as_page("/v1/oauth/requests/open", &grace, &[], &open)
            .await,
        StatusCode::OK,
    )
    .await;
}

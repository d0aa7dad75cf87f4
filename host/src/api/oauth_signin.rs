//! Signing in on the consent page with an identity provider (docs/oauth.md,
//! "Signing in with an identity provider"): where `[[oidc.issuer]]` has a
//! `[oidc.issuer.sign_in]` table, Mandate is that provider's OpenID Connect
//! relying party. The page sends the browser to `…/oidc/<name>/start` with
//! the sealed authorization request; Mandate sends it on to the provider
//! (authorization code, PKCE S256, `state`, `nonce`), redeems the code the
//! provider sends back at `…/oidc/<name>/callback`, verifies the ID token
//! as an L2 one (the flow's `nonce`, the provider's own issuer), and gives
//! the browser a consent session for that one request.
//!
//! Nothing is stored: the sign-in under way and the session travel sealed
//! (`secrets::Carried`) in `__Host-` cookies — `HttpOnly`, `Secure`,
//! `Path=/`. The sign-in's is `SameSite=Lax` (it must come back with the
//! provider's top-level redirect); the session's is `SameSite=Strict`,
//! names the request it may decide, and lives at most until that request
//! expires. The consent APIs take the session only with the request's
//! `Origin` this server's, `Sec-Fetch-Site` (when sent) `same-origin`, and
//! the session's CSRF value in `Mandate-CSRF`, which the page learns from
//! the callback's redirect fragment.

use axum::extract::{Path, RawQuery, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use mandate_core::{AssuranceLevel, Identity, human_ref};
use serde::{Deserialize, Serialize};
use sha2::{Digest as _, Sha256};

use super::docs::Errors;
use super::extract::form_parameters;
use super::oauth_consent::{Consenter, issuer, open_pending, single, with_query};
use crate::assurance::oidc::SignInProvider;
use crate::clock::Now;
use crate::error::{ApiError, ApiResult};
use crate::model::oauth::{SignInProviderInfo, SignInProviders};
use crate::queries::QueryError;
use crate::secrets::Carried;
use crate::store::orgs::{self, Org};
use crate::{AppState, random};

/// The cookie of a sign-in under way.
const SIGN_IN_COOKIE: &str = "__Host-mandate-sign-in";
/// The consent session's cookie.
pub(crate) const SESSION_COOKIE: &str = "__Host-mandate-consent";
/// The header the page sends the session's CSRF value in.
pub(crate) const CSRF_HEADER: &str = "mandate-csrf";
/// Longest a person may take at the provider.
const SIGN_IN_TTL_SECONDS: i64 = 600;
/// Longest a consent session lives (never past its request's expiry).
const SESSION_TTL_SECONDS: i64 = 900;
/// Longest cookie value opened, in characters.
const MAX_COOKIE_CHARS: usize = 4096;
/// The consent page, under `public_url`.
const CONSENT_PATH: &str = "/oauth/consent";
/// What Mandate asks the provider for: who the person is and what to call
/// them.
const SCOPE: &str = "openid profile email";

/// A sign-in under way, sealed in [`SIGN_IN_COOKIE`].
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct SignIn {
    provider: String,
    state: String,
    nonce: String,
    verifier: String,
    /// The hash of the sealed authorization request it signs in for.
    request: String,
    /// When that request expires.
    request_exp: i64,
    exp: i64,
}

/// A person signed in by a provider, sealed in [`SESSION_COOKIE`]: they
/// may open and decide the one request it names, until `exp`.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Session {
    issuer: String,
    subject: String,
    label: Option<String>,
    org: i64,
    /// The hash of the sealed authorization request it may decide.
    request: String,
    csrf: String,
    exp: i64,
}

fn random_text() -> String {
    URL_SAFE_NO_PAD.encode(random::bytes::<32>())
}

/// Whether two secrets are equal, compared by their hashes (no early exit
/// on the secrets themselves).
fn same_secret(a: &str, b: &str) -> bool {
    Sha256::digest(a.as_bytes()) == Sha256::digest(b.as_bytes())
}

fn seal<T: Serialize>(state: &AppState, kind: Carried, value: &T) -> ApiResult<String> {
    let plain = serde_json::to_vec(value).map_err(ApiError::internal)?;
    let sealed = state
        .kek
        .seal_carried(kind, &plain)
        .map_err(ApiError::internal)?;
    Ok(URL_SAFE_NO_PAD.encode(sealed))
}

fn open<T: for<'de> Deserialize<'de>>(state: &AppState, kind: Carried, text: &str) -> Option<T> {
    if text.len() > MAX_COOKIE_CHARS {
        return None;
    }
    let bytes = URL_SAFE_NO_PAD.decode(text).ok()?;
    let plain = state.kek.open_carried(kind, &bytes).ok()?;
    serde_json::from_slice(&plain).ok()
}

/// The value of cookie `name` among the request's `Cookie` headers.
fn cookie<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(key, _)| *key == name)
        .map(|(_, value)| value)
}

/// A `Set-Cookie` for a `__Host-` cookie (RFC 6265bis §4.1.3.2: `Secure`,
/// `Path=/`, no `Domain`), readable by no script.
fn set_cookie(name: &str, value: &str, same_site: &str, max_age: i64) -> ApiResult<HeaderValue> {
    HeaderValue::from_str(&format!(
        "{name}={value}; Path=/; Secure; HttpOnly; SameSite={same_site}; Max-Age={max_age}"
    ))
    .map_err(ApiError::internal)
}

fn sign_in_refused(detail: impl Into<String>) -> ApiError {
    ApiError::bad_request("sign_in_refused", detail.into())
}

fn provider(state: &AppState, name: &str) -> ApiResult<SignInProvider> {
    state.assurance.oidc.sign_in(name).ok_or_else(|| {
        ApiError::not_found(
            "sign_in_provider_unknown",
            "no identity provider of this name signs people in here",
        )
    })
}

/// Where the provider sends the browser back to: one URI per provider.
fn callback_uri(iss: &str, name: &str) -> String {
    format!("{iss}/v1/oauth/oidc/{name}/callback")
}

/// The providers people may sign in with on the consent page (each by its
/// name in the start path, its issuer and that issuer's host, to show on
/// the button). Empty when none is configured.
#[utoipa::path(
    get,
    path = "/v1/oauth/oidc/providers",
    operation_id = "oauth_sign_in_providers",
    tag = "oauth",
    responses((status = 200, description = "The sign-in providers", body = SignInProviders), Errors)
)]
pub(crate) async fn providers(
    State(state): State<AppState>,
) -> ApiResult<axum::Json<SignInProviders>> {
    issuer(&state, "/v1/oauth/oidc/providers")?;
    let providers = state
        .assurance
        .oidc
        .sign_in_providers()
        .filter_map(|provider| {
            let config = provider.config();
            let name = config.sign_in.as_ref()?.name.clone();
            let host = reqwest::Url::parse(&config.issuer)
                .ok()
                .and_then(|url| url.host_str().map(str::to_owned))
                .unwrap_or_default();
            Some(SignInProviderInfo {
                name,
                issuer: config.issuer.clone(),
                host,
            })
        })
        .collect();
    Ok(axum::Json(SignInProviders { providers }))
}

/// Starts signing a person in with a provider for a pending authorization
/// request (`request`, as sealed in the consent page's URL): the sign-in
/// is sealed in a cookie (`state`, `nonce`, PKCE verifier, the request's
/// hash; ten minutes) and the browser sent on to the provider with an
/// OpenID Connect authentication request (OIDC Core §3.1.2.1).
#[utoipa::path(
    get,
    path = "/v1/oauth/oidc/{name}/start",
    operation_id = "oauth_sign_in_start",
    tag = "oauth",
    params(
        ("name" = String, Path, description = "The provider's name"),
        ("request" = String, Query, description = "The sealed authorization request"),
    ),
    responses((status = 303, description = "To the identity provider"), Errors)
)]
pub(crate) async fn start(
    State(state): State<AppState>,
    Path(name): Path<String>,
    RawQuery(query): RawQuery,
) -> ApiResult<Response> {
    let iss = issuer(&state, "/v1/oauth/oidc/{name}/start")?.to_owned();
    let now = state.clock.now();
    let provider = provider(&state, &name)?;
    let parameters = form_parameters(query.unwrap_or_default().as_bytes())?;
    let sealed = parameter(&parameters, "request")?.ok_or_else(|| {
        ApiError::bad_request(
            "request_invalid",
            "`request`, the sealed authorization request, is required",
        )
    })?;
    let (pending, request_hash) = open_pending(&state, sealed, now)?;
    let endpoints = provider.endpoints(now).await?;
    let sign_in = SignIn {
        provider: name.clone(),
        state: random_text(),
        nonce: random_text(),
        verifier: random_text(),
        request: URL_SAFE_NO_PAD.encode(request_hash),
        request_exp: pending.exp,
        exp: now.s().saturating_add(SIGN_IN_TTL_SECONDS).min(pending.exp),
    };
    let challenge = URL_SAFE_NO_PAD.encode(Sha256::digest(sign_in.verifier.as_bytes()));
    let location = with_query(
        endpoints.authorization.as_str(),
        &[
            ("response_type", Some("code")),
            ("client_id", Some(&provider.config().audience)),
            ("redirect_uri", Some(&callback_uri(&iss, &name))),
            ("scope", Some(SCOPE)),
            ("state", Some(&sign_in.state)),
            ("nonce", Some(&sign_in.nonce)),
            ("code_challenge", Some(&challenge)),
            ("code_challenge_method", Some("S256")),
        ],
    );
    let cookie = set_cookie(
        SIGN_IN_COOKIE,
        &seal(&state, Carried::SignIn, &sign_in)?,
        "Lax",
        SIGN_IN_TTL_SECONDS,
    )?;
    see_other(&location, &[cookie])
}

/// A 303 to `location` setting `cookies`.
fn see_other(location: &str, cookies: &[HeaderValue]) -> ApiResult<Response> {
    let mut response = (
        StatusCode::SEE_OTHER,
        [(
            header::LOCATION,
            HeaderValue::from_str(location).map_err(ApiError::internal)?,
        )],
    )
        .into_response();
    for cookie in cookies {
        response
            .headers_mut()
            .append(header::SET_COOKIE, cookie.clone());
    }
    response
        .headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    Ok(response)
}

/// The one value of a callback parameter.
fn parameter<'a>(
    parameters: &'a [(String, Vec<String>)],
    name: &str,
) -> ApiResult<Option<&'a str>> {
    single(parameters, name).map_err(sign_in_refused)
}

/// Where the provider sends the browser back (OIDC Core §3.1.2.5): the
/// sign-in cookie must be this provider's, unexpired, with this `state`;
/// `iss`, when sent, the provider's (RFC 9207). The code is redeemed with
/// the PKCE verifier, the ID token verified as an L2 one with the
/// sign-in's `nonce` and must be the provider's own. The browser then goes
/// back to the consent page with a session for its request (the CSRF
/// value in the fragment, which no server sees).
#[utoipa::path(
    get,
    path = "/v1/oauth/oidc/{name}/callback",
    operation_id = "oauth_sign_in_callback",
    tag = "oauth",
    params(
        ("name" = String, Path, description = "The provider's name"),
        ("code" = Option<String>, Query, description = "The provider's authorization code"),
        ("state" = Option<String>, Query, description = "The sign-in's state"),
        ("iss" = Option<String>, Query, description = "RFC 9207 issuer identifier"),
        ("error" = Option<String>, Query, description = "The provider's refusal"),
    ),
    responses((status = 303, description = "To the consent page, signed in"), Errors)
)]
pub(crate) async fn callback(
    State(state): State<AppState>,
    Path(name): Path<String>,
    headers: HeaderMap,
    RawQuery(query): RawQuery,
) -> ApiResult<Response> {
    let iss = issuer(&state, "/v1/oauth/oidc/{name}/callback")?.to_owned();
    let now = state.clock.now();
    let provider = provider(&state, &name)?;
    let parameters = form_parameters(query.unwrap_or_default().as_bytes())?;
    let sign_in: SignIn = cookie(&headers, SIGN_IN_COOKIE)
        .and_then(|value| open(&state, Carried::SignIn, value))
        .ok_or_else(|| {
            sign_in_refused(
                "no sign-in is under way in this browser (its cookie is missing or not this server's): sign in again from the consent page",
            )
        })?;
    if sign_in.provider != name {
        return Err(sign_in_refused(
            "the sign-in under way is with another identity provider: sign in again",
        ));
    }
    if now.s() >= sign_in.exp {
        return Err(sign_in_refused(
            "the sign-in took too long: sign in again from the consent page",
        ));
    }
    let returned = parameter(&parameters, "state")?.unwrap_or_default();
    if !same_secret(returned, &sign_in.state) {
        return Err(sign_in_refused(
            "`state` is not the sign-in's: this answer is not for the sign-in under way",
        ));
    }
    let config = provider.config();
    if parameter(&parameters, "iss")?.is_some_and(|sent| sent != config.issuer) {
        return Err(sign_in_refused(
            "`iss` names another identity provider (RFC 9207)",
        ));
    }
    if let Some(error) = parameter(&parameters, "error")? {
        let known = error.len() <= 64 && error.bytes().all(|b| b.is_ascii_lowercase() || b == b'_');
        return Err(sign_in_refused(if known {
            format!("the identity provider did not sign you in: {error}")
        } else {
            "the identity provider did not sign you in".to_owned()
        }));
    }
    let code = parameter(&parameters, "code")?
        .filter(|code| !code.is_empty() && code.len() <= MAX_COOKIE_CHARS)
        .ok_or_else(|| sign_in_refused("the identity provider sent no `code`"))?;
    let endpoints = provider.endpoints(now).await?;
    let id_token = provider
        .redeem(
            &endpoints,
            code,
            &sign_in.verifier,
            &callback_uri(&iss, &name),
        )
        .await?;
    let who = state
        .assurance
        .oidc
        .verify(&id_token, Some(&sign_in.nonce), now)
        .await?;
    if who.issuer != config.issuer {
        return Err(ApiError::unauthorized(
            "id_token_unknown_issuer",
            "the id_token was refused: it is not the signing-in provider's",
        ));
    }
    let org = sign_in_org(&state, &provider).await?;
    let csrf = random_text();
    let session = Session {
        issuer: who.issuer,
        subject: who.subject,
        label: who.label,
        org: org.number(),
        request: sign_in.request,
        csrf: csrf.clone(),
        exp: now
            .s()
            .saturating_add(SESSION_TTL_SECONDS)
            .min(sign_in.request_exp),
    };
    let cookies = [
        set_cookie(
            SESSION_COOKIE,
            &seal(&state, Carried::Session, &session)?,
            "Strict",
            session.exp.saturating_sub(now.s()),
        )?,
        set_cookie(SIGN_IN_COOKIE, "", "Lax", 0)?,
    ];
    see_other(&format!("{iss}{CONSENT_PATH}#signed-in={csrf}"), &cookies)
}

/// The organisation a provider signs people in to, by its configured
/// name; 403 when it does not exist.
async fn sign_in_org(state: &AppState, provider: &SignInProvider) -> ApiResult<Org> {
    let name = provider
        .config()
        .sign_in
        .as_ref()
        .map(|sign_in| sign_in.org.clone())
        .unwrap_or_default();
    state
        .store
        .lookup(move |conn| Ok::<_, QueryError>(orgs::by_name(conn, &name)?))
        .await?
        .map(|row| row.org)
        .ok_or_else(|| {
            ApiError::forbidden(
                "sign_in_refused",
                "the organisation this identity provider signs people in to does not exist: ask the operator",
            )
        })
}

/// The person of a consent session sent with a consent API request, when
/// the request carries the session cookie and no API key: the cookie must
/// open as a session of this server, unexpired (401
/// `consent_session_invalid`); the request must come from this server's
/// own pages — `Origin` the public URL's origin, `Sec-Fetch-Site` (when
/// sent) `same-origin`, and `Mandate-CSRF` the session's value (403
/// `csrf_refused`). `None` when no session cookie is sent.
pub(crate) fn session_consenter(
    state: &AppState,
    headers: &HeaderMap,
    now: Now,
) -> ApiResult<Option<Consenter>> {
    let Some(value) = cookie(headers, SESSION_COOKIE) else {
        return Ok(None);
    };
    let session: Session = open(state, Carried::Session, value)
        .filter(|session: &Session| now.s() < session.exp)
        .ok_or_else(|| {
            ApiError::unauthorized(
                "consent_session_invalid",
                "the sign-in has expired or is not this server's: sign in again",
            )
        })?;
    let header_text = |name: &str| headers.get(name).and_then(|value| value.to_str().ok());
    let own_origin = state
        .config
        .public_url
        .as_deref()
        .and_then(|url| reqwest::Url::parse(url).ok())
        .map(|url| url.origin().ascii_serialization());
    let same_origin = header_text("origin")
        .is_some_and(|origin| Some(origin) == own_origin.as_deref())
        && header_text("sec-fetch-site").is_none_or(|site| site == "same-origin");
    let csrf = header_text(CSRF_HEADER).is_some_and(|sent| same_secret(sent, &session.csrf));
    if !same_origin || !csrf {
        return Err(ApiError::forbidden(
            "csrf_refused",
            "a signed-in consent is given from this server's consent page only (Origin, Sec-Fetch-Site and Mandate-CSRF)",
        ));
    }
    let identity = Identity::Oidc {
        issuer: session.issuer,
        subject: session.subject.clone(),
    };
    let (org, human) = (
        Org::from_number(session.org),
        human_ref(&state.human_secret, &identity),
    );
    // A signed-in person is limited as an API key is: by who they are, and
    // by their organisation.
    state.limiters.signed_in(human.as_str())?;
    state.limiters.org(org)?;
    Ok(Some(Consenter {
        org,
        human,
        label: session.label.unwrap_or(session.subject),
        approved_by: None,
        for_anyone: false,
        level: AssuranceLevel::L2,
        request: Some(session.request),
    }))
}

/// Whether a session names the request with this hash.
pub(crate) fn names_request(session_request: &str, request_hash: &[u8]) -> bool {
    session_request == URL_SAFE_NO_PAD.encode(request_hash)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cookies_are_found_by_exact_name_across_headers() {
        let mut headers = HeaderMap::new();
        headers.append(
            header::COOKIE,
            HeaderValue::from_static("a=1; __Host-mandate-consent-x=2"),
        );
        headers.append(
            header::COOKIE,
            HeaderValue::from_static("__Host-mandate-consent=3"),
        );
        assert_eq!(cookie(&headers, SESSION_COOKIE), Some("3"));
        assert_eq!(cookie(&headers, "a"), Some("1"));
        assert_eq!(cookie(&headers, "b"), None);
    }
}

//! L2: OpenID Connect ID tokens from configured issuers.
//!
//! An ID token is accepted when its `alg` is RS256, ES256 or EdDSA, its
//! issuer is configured, its key (by `kid`) is in that issuer's key set, its
//! signature verifies, `aud` holds the configured audience, `exp` has not
//! passed, `iat` is at most ten minutes old, and `nonce` matches when the
//! caller gives one. Each failure has its own code. Keys come from a file or
//! from the issuer's `jwks_uri`, cached, and re-read when a token names an
//! unknown `kid` (at most once every few seconds per issuer).
//!
//! Fetching is guarded: every URL is https (or loopback http, when the
//! issuer allows it), a discovery document must name the configured issuer
//! exactly, an answer larger than [`MAX_FETCH_BYTES`] is a failed fetch, and
//! at most one fetch per issuer is in flight. No lock is held across a
//! fetch: a token whose keys are cached is checked at once, however slow
//! the provider is.

use std::net::IpAddr;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use axum::http::StatusCode;
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use jsonwebtoken::errors::ErrorKind;
use jsonwebtoken::jwk::JwkSet;
use jsonwebtoken::{Algorithm, DecodingKey, Validation, decode};
use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};
use reqwest::Url;
use serde::Deserialize;
use serde::de::DeserializeOwned;

use crate::clock::Now;
use crate::config::OidcIssuer;
use crate::error::{ApiError, ApiResult};

/// Oldest ID token accepted, by `iat`.
pub const MAX_ID_TOKEN_AGE_SECONDS: i64 = 600;
/// Largest discovery document or key set read from a provider; a larger
/// answer is a failed fetch.
pub const MAX_FETCH_BYTES: usize = 256 * 1024;
/// Clock skew tolerated on `exp`, `nbf` and `iat`.
const LEEWAY_SECONDS: u64 = 60;
/// How long fetched keys are trusted before they are fetched again.
const KEYS_TTL: Duration = Duration::from_secs(3600);
/// Least time between two fetches for unknown kids.
const REFETCH_INTERVAL: Duration = Duration::from_secs(5);
/// Longest a fetch (discovery or keys) may take.
const FETCH_TIMEOUT: Duration = Duration::from_secs(5);
/// Redirects followed by one request, each to an allowed URL.
const MAX_REDIRECTS: usize = 5;
/// The algorithms ID tokens may use.
const ALGORITHMS: [&str; 3] = ["RS256", "ES256", "EdDSA"];

/// The verified human behind an ID token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OidcIdentity {
    pub issuer: String,
    pub subject: String,
    /// What to show the human as: the ID token's `name`, else its `email`
    /// (each only when 1–256 characters with no control character); it
    /// names, never identifies.
    pub label: Option<String>,
}

/// The longest label kept from an ID token.
const MAX_LABEL_CHARS: usize = 256;

/// A claim fit to show as a label.
fn label(claim: Option<String>) -> Option<String> {
    claim.map(|text| text.trim().to_owned()).filter(|text| {
        !text.is_empty()
            && text.chars().count() <= MAX_LABEL_CHARS
            && !text.chars().any(char::is_control)
    })
}

fn refused(code: &'static str, detail: &str) -> ApiError {
    ApiError::unauthorized(code, format!("the id_token was refused: {detail}"))
}

#[derive(Debug)]
struct CachedKeys {
    keys: Arc<JwkSet>,
    fetched: Now,
}

/// What is known of an issuer's keys. Locked only to read or update it,
/// never across an await.
#[derive(Debug, Default)]
struct KeyCache {
    keys: Option<CachedKeys>,
    /// When the last fetch started, whether or not it succeeded.
    last_attempt: Option<Now>,
    /// Why the last fetch failed, answered while nothing is cached.
    last_error: Option<ApiError>,
}

fn has_kid(keys: &JwkSet, kid: Option<&str>) -> bool {
    kid.is_none_or(|kid| keys.find(kid).is_some())
}

impl KeyCache {
    /// Whether a fetch started too recently for another.
    fn throttled(&self, now: Now) -> bool {
        self.last_attempt
            .is_some_and(|at| now.since(at) < REFETCH_INTERVAL)
    }

    /// The cached keys, when they answer for `kid` without a fetch: fresh,
    /// and either holding `kid` or fetched too recently to fetch again.
    fn usable(&self, kid: Option<&str>, now: Now) -> Option<Arc<JwkSet>> {
        let cached = self.keys.as_ref()?;
        let fresh = now.since(cached.fetched) < KEYS_TTL;
        (fresh && (has_kid(&cached.keys, kid) || self.throttled(now))).then(|| cached.keys.clone())
    }

    /// The cached keys, however old, when they hold `kid`.
    fn holding(&self, kid: Option<&str>) -> Option<Arc<JwkSet>> {
        let cached = self.keys.as_ref()?;
        has_kid(&cached.keys, kid).then(|| cached.keys.clone())
    }

    /// The answer when no fetch may run: whatever is cached, else why the
    /// last fetch failed.
    fn fallback(&self) -> ApiResult<Arc<JwkSet>> {
        match (&self.keys, &self.last_error) {
            (Some(cached), _) => Ok(cached.keys.clone()),
            (None, Some(error)) => Err(error.clone()),
            (None, None) => Err(keys_unavailable()),
        }
    }
}

fn keys_unavailable() -> ApiError {
    ApiError::new(
        StatusCode::BAD_GATEWAY,
        "oidc_keys_unavailable",
        "the identity provider's keys cannot be fetched right now",
    )
}

/// Why fetching an issuer's keys failed.
#[derive(Debug, thiserror::Error)]
enum FetchError {
    #[error("the discovery document names the issuer `{0}`")]
    DiscoveryMismatch(String),
    #[error("`{0}` is neither https nor loopback http allowed by the issuer")]
    Insecure(String),
    #[error("the answer is larger than {MAX_FETCH_BYTES} bytes")]
    TooLarge,
    #[error(transparent)]
    Failed(#[from] anyhow::Error),
}

impl From<reqwest::Error> for FetchError {
    fn from(error: reqwest::Error) -> FetchError {
        FetchError::Failed(error.into())
    }
}

impl From<serde_json::Error> for FetchError {
    fn from(error: serde_json::Error) -> FetchError {
        FetchError::Failed(error.into())
    }
}

impl FetchError {
    /// The problem a request gets when this failure leaves no keys.
    fn problem(&self) -> ApiError {
        match self {
            FetchError::DiscoveryMismatch(_) => ApiError::new(
                StatusCode::BAD_GATEWAY,
                "oidc_discovery_mismatch",
                "the identity provider's discovery document names another issuer",
            ),
            FetchError::Insecure(_) => ApiError::new(
                StatusCode::BAD_GATEWAY,
                "oidc_insecure_uri",
                "the identity provider's keys are not served over https",
            ),
            FetchError::TooLarge | FetchError::Failed(_) => keys_unavailable(),
        }
    }
}

/// Whether Mandate may fetch from `url`: https, or http to a loopback
/// address (an IP literal) when the issuer allows it.
fn allowed_url(url: &Url, allow_insecure_http: bool) -> bool {
    match url.scheme() {
        "https" => true,
        "http" => {
            allow_insecure_http
                && url
                    .host_str()
                    .map(|host| host.trim_start_matches('[').trim_end_matches(']'))
                    .and_then(|host| host.parse::<IpAddr>().ok())
                    .is_some_and(|ip| ip.is_loopback())
        }
        _ => false,
    }
}

fn discovery_url(issuer: &str) -> String {
    format!(
        "{}/.well-known/openid-configuration",
        issuer.trim_end_matches('/')
    )
}

#[derive(Debug)]
struct Issuer {
    config: OidcIssuer,
    http: reqwest::Client,
    cache: Mutex<KeyCache>,
    /// Held by the one fetch in flight; requests that need its result wait
    /// here, never on `cache`.
    fetching: Arc<tokio::sync::Mutex<()>>,
    /// The sign-in endpoints its discovery document named, and when read.
    endpoints: Mutex<Option<(SignInEndpoints, Now)>>,
}

impl Issuer {
    fn new(config: &OidcIssuer) -> anyhow::Result<Issuer> {
        if config.jwks_file.is_none() {
            let first = config
                .jwks_uri
                .clone()
                .unwrap_or_else(|| discovery_url(&config.issuer));
            let url = Url::parse(&first)
                .map_err(|e| anyhow::anyhow!("OIDC issuer {}: `{first}`: {e}", config.issuer))?;
            if !allowed_url(&url, config.allow_insecure_http) {
                anyhow::bail!(
                    "OIDC issuer {}: `{first}` must be https (plain http only to a loopback \
                     address, with allow_insecure_http = true)",
                    config.issuer
                );
            }
        }
        let allow_insecure_http = config.allow_insecure_http;
        let redirects = reqwest::redirect::Policy::custom(move |attempt| {
            if attempt.previous().len() >= MAX_REDIRECTS {
                attempt.error("too many redirects")
            } else if allowed_url(attempt.url(), allow_insecure_http) {
                attempt.follow()
            } else {
                attempt.error("a redirect to a URL that is not https")
            }
        });
        let http = reqwest::Client::builder()
            .timeout(FETCH_TIMEOUT)
            .redirect(redirects)
            .build()?;
        Ok(Issuer {
            config: config.clone(),
            http,
            cache: Mutex::new(KeyCache::default()),
            fetching: Arc::new(tokio::sync::Mutex::new(())),
            endpoints: Mutex::new(None),
        })
    }

    fn cache(&self) -> MutexGuard<'_, KeyCache> {
        self.cache.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// GETs `url` and parses its JSON, reading at most [`MAX_FETCH_BYTES`].
    async fn get_json<T: DeserializeOwned>(&self, url: &str) -> Result<T, FetchError> {
        let url = Url::parse(url).map_err(|e| anyhow::anyhow!("`{url}`: {e}"))?;
        if !allowed_url(&url, self.config.allow_insecure_http) {
            return Err(FetchError::Insecure(url.to_string()));
        }
        let response = self.http.get(url).send().await?.error_for_status()?;
        read_json(response).await
    }

    async fn fetch(&self) -> Result<JwkSet, FetchError> {
        if let Some(file) = &self.config.jwks_file {
            let text = std::fs::read(file).map_err(anyhow::Error::from)?;
            return Ok(serde_json::from_slice(&text)?);
        }
        let uri = match &self.config.jwks_uri {
            Some(uri) => uri.clone(),
            None => {
                let discovery: Discovery =
                    self.get_json(&discovery_url(&self.config.issuer)).await?;
                // OpenID Connect Discovery 1.0, section 4.3: the issuer must
                // be exactly the one whose document was asked for, or its
                // keys are someone else's.
                if discovery.issuer != self.config.issuer {
                    return Err(FetchError::DiscoveryMismatch(discovery.issuer));
                }
                discovery.jwks_uri
            }
        };
        self.get_json(&uri).await
    }

    /// Fetches the keys and caches them; on failure answers the cached keys
    /// if any. The caller holds the fetch lock.
    async fn refresh(&self, now: Now) -> ApiResult<Arc<JwkSet>> {
        let fetched = self.fetch().await;
        let mut cache = self.cache();
        match fetched {
            Ok(keys) => {
                let keys = Arc::new(keys);
                cache.keys = Some(CachedKeys {
                    keys: keys.clone(),
                    fetched: now,
                });
                cache.last_error = None;
                Ok(keys)
            }
            Err(error) => {
                tracing::warn!(issuer = %self.config.issuer, %error, "fetching OIDC keys failed");
                cache.last_error = Some(error.problem());
                cache.fallback()
            }
        }
    }

    /// The issuer's keys; fetched when missing, stale, or (at most every few
    /// seconds) when `kid` is not among them. While a fetch is in flight,
    /// cached keys that hold `kid` answer at once; others wait for its result.
    async fn keys(self: &Arc<Issuer>, kid: Option<&str>, now: Now) -> ApiResult<Arc<JwkSet>> {
        if let Some(keys) = self.cache().usable(kid, now) {
            return Ok(keys);
        }
        let fetching = match self.fetching.clone().try_lock_owned() {
            Ok(fetching) => fetching,
            Err(_) => {
                if let Some(keys) = self.cache().holding(kid) {
                    return Ok(keys);
                }
                self.fetching.clone().lock_owned().await
            }
        };
        {
            // The fetch that was in flight may have brought what is needed,
            // or failed too recently to try again.
            let mut cache = self.cache();
            if let Some(keys) = cache.usable(kid, now) {
                return Ok(keys);
            }
            if cache.throttled(now) {
                return cache.fallback();
            }
            cache.last_attempt = Some(now);
        }
        // The fetch runs as a task of its own, holding the fetch lock, so a
        // client that goes away cannot abandon it halfway.
        let issuer = self.clone();
        tokio::spawn(async move {
            let _fetching = fetching;
            issuer.refresh(now).await
        })
        .await
        .map_err(ApiError::internal)?
    }
}

/// Parses a provider's JSON answer, reading at most [`MAX_FETCH_BYTES`].
async fn read_json<T: DeserializeOwned>(mut response: reqwest::Response) -> Result<T, FetchError> {
    if response
        .content_length()
        .is_some_and(|length| length > MAX_FETCH_BYTES as u64)
    {
        return Err(FetchError::TooLarge);
    }
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await? {
        if body.len() + chunk.len() > MAX_FETCH_BYTES {
            return Err(FetchError::TooLarge);
        }
        body.extend_from_slice(&chunk);
    }
    Ok(serde_json::from_slice(&body)?)
}

/// Where a sign-in provider signs people in and redeems codes, from its
/// discovery document (OpenID Connect Discovery 1.0 §3).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignInEndpoints {
    pub authorization: Url,
    pub token: Url,
}

#[derive(Deserialize)]
struct SignInDiscovery {
    issuer: String,
    authorization_endpoint: String,
    token_endpoint: String,
    #[serde(default)]
    code_challenge_methods_supported: Option<Vec<String>>,
}

/// A configured provider people sign in with on the consent page.
#[derive(Debug, Clone)]
pub struct SignInProvider {
    issuer: Arc<Issuer>,
}

fn sign_in_failed(detail: String) -> ApiError {
    ApiError::new(StatusCode::BAD_GATEWAY, "sign_in_provider_failed", detail)
}

/// `text` as a form value (RFC 6749 Appendix B): every byte but RFC 3986's
/// unreserved ones escaped.
fn form_encoded(text: &str) -> String {
    const UNRESERVED: &AsciiSet = &NON_ALPHANUMERIC
        .remove(b'-')
        .remove(b'.')
        .remove(b'_')
        .remove(b'~');
    utf8_percent_encode(text, UNRESERVED).to_string()
}

/// What a provider's token endpoint answers (OIDC Core §3.1.3.3).
#[derive(Deserialize)]
struct TokenAnswer {
    id_token: String,
}

impl SignInProvider {
    /// The provider's configuration (issuer, `audience` = Mandate's
    /// `client_id`, `sign_in`).
    pub fn config(&self) -> &OidcIssuer {
        &self.issuer.config
    }

    fn secret(&self) -> Option<&str> {
        self.config()
            .sign_in
            .as_ref()
            .and_then(|sign_in| sign_in.client_secret.as_deref())
    }

    /// Its endpoints: read from its discovery document (whose `issuer`
    /// must be the configured one, and whose endpoints must be URLs Mandate
    /// may fetch from; one that lists PKCE methods must list S256), kept
    /// for an hour.
    pub async fn endpoints(&self, now: Now) -> ApiResult<SignInEndpoints> {
        let issuer = &self.issuer;
        if let Some((endpoints, read)) = &*issuer
            .endpoints
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            && now.since(*read) < KEYS_TTL
        {
            return Ok(endpoints.clone());
        }
        let name = &issuer.config.issuer;
        let discovery: SignInDiscovery =
            issuer
                .get_json(&discovery_url(name))
                .await
                .map_err(|error| {
                    sign_in_failed(format!(
                        "the identity provider's discovery document cannot be read: {error}"
                    ))
                })?;
        if discovery.issuer != *name {
            return Err(sign_in_failed(
                "the identity provider's discovery document names another issuer".into(),
            ));
        }
        if discovery
            .code_challenge_methods_supported
            .is_some_and(|methods| !methods.iter().any(|method| method == "S256"))
        {
            return Err(sign_in_failed(
                "the identity provider does not support PKCE with S256".into(),
            ));
        }
        let url = |text: &str| {
            Url::parse(text)
                .ok()
                .filter(|url| {
                    allowed_url(url, issuer.config.allow_insecure_http) && url.fragment().is_none()
                })
                .ok_or_else(|| {
                    sign_in_failed(format!(
                        "the identity provider's endpoint `{text}` is not an https URL"
                    ))
                })
        };
        let endpoints = SignInEndpoints {
            authorization: url(&discovery.authorization_endpoint)?,
            token: url(&discovery.token_endpoint)?,
        };
        *issuer
            .endpoints
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some((endpoints.clone(), now));
        Ok(endpoints)
    }

    /// Redeems an authorization code at the provider's token endpoint
    /// (OIDC Core §3.1.3.1: `redirect_uri` and the PKCE verifier; the
    /// secret, when configured, by HTTP Basic as RFC 6749 §2.3.1 says,
    /// else `client_id` in the form) and answers the ID token, unverified.
    pub async fn redeem(
        &self,
        endpoints: &SignInEndpoints,
        code: &str,
        verifier: &str,
        redirect_uri: &str,
    ) -> ApiResult<String> {
        let client_id = self.config().audience.as_str();
        let mut form = vec![
            ("grant_type", "authorization_code"),
            ("code", code),
            ("redirect_uri", redirect_uri),
            ("code_verifier", verifier),
        ];
        let mut request = self.issuer.http.post(endpoints.token.clone());
        match self.secret() {
            Some(secret) => {
                request = request.basic_auth(form_encoded(client_id), Some(form_encoded(secret)));
            }
            None => form.push(("client_id", client_id)),
        }
        let body = form
            .iter()
            .map(|(name, value)| format!("{name}={}", form_encoded(value)))
            .collect::<Vec<_>>()
            .join("&");
        let response = request
            .header("accept", "application/json")
            .header("content-type", "application/x-www-form-urlencoded")
            .body(body)
            .send()
            .await
            .map_err(|error| {
                sign_in_failed(format!(
                    "the identity provider's token endpoint cannot be reached: {error}"
                ))
            })?;
        let status = response.status();
        if status.is_client_error() {
            // RFC 6749 §5.2: a code used before, expired or not for this
            // client or redirect URI — a sign-in to start again.
            return Err(ApiError::bad_request(
                "sign_in_refused",
                format!("the identity provider refused the code ({status}): sign in again"),
            ));
        }
        if !status.is_success() {
            return Err(sign_in_failed(format!(
                "the identity provider's token endpoint failed ({status})"
            )));
        }
        let answer: TokenAnswer = read_json(response).await.map_err(|error| {
            sign_in_failed(format!(
                "the identity provider's token answer has no ID token: {error}"
            ))
        })?;
        Ok(answer.id_token)
    }
}

/// The configured issuers and their keys.
#[derive(Debug)]
pub struct OidcIssuers {
    issuers: Vec<Arc<Issuer>>,
}

#[derive(Deserialize)]
struct RawHeader {
    alg: String,
    #[serde(default)]
    kid: Option<String>,
}

#[derive(Deserialize)]
struct Unverified {
    iss: String,
}

#[derive(Deserialize)]
struct IdClaims {
    sub: String,
    iat: i64,
    #[serde(default)]
    nonce: Option<String>,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    email: Option<String>,
}

#[derive(Deserialize)]
struct Discovery {
    issuer: String,
    jwks_uri: String,
}

fn segment<T: for<'de> Deserialize<'de>>(token: &str, index: usize) -> Option<T> {
    let part = token.split('.').nth(index)?;
    let bytes = URL_SAFE_NO_PAD.decode(part).ok()?;
    serde_json::from_slice(&bytes).ok()
}

fn algorithm(name: &str) -> Option<Algorithm> {
    match name {
        "RS256" => Some(Algorithm::RS256),
        "ES256" => Some(Algorithm::ES256),
        "EdDSA" => Some(Algorithm::EdDSA),
        _ => None,
    }
}

impl OidcIssuers {
    /// The issuers of a configuration. Nothing is fetched until needed, but
    /// a URL Mandate may not fetch from stops the server from starting.
    pub fn new(issuers: &[OidcIssuer]) -> anyhow::Result<OidcIssuers> {
        crate::install_tls_provider();
        Ok(OidcIssuers {
            issuers: issuers
                .iter()
                .map(|config| Issuer::new(config).map(Arc::new))
                .collect::<anyhow::Result<_>>()?,
        })
    }

    /// Whether any issuer is configured.
    pub fn is_empty(&self) -> bool {
        self.issuers.is_empty()
    }

    /// The providers people may sign in with on the consent page, in the
    /// configuration's order.
    pub fn sign_in_providers(&self) -> impl Iterator<Item = SignInProvider> + '_ {
        self.issuers
            .iter()
            .filter(|issuer| issuer.config.sign_in.is_some())
            .map(|issuer| SignInProvider {
                issuer: issuer.clone(),
            })
    }

    /// The sign-in provider of this name.
    pub fn sign_in(&self, name: &str) -> Option<SignInProvider> {
        self.sign_in_providers().find(|provider| {
            provider
                .config()
                .sign_in
                .as_ref()
                .is_some_and(|sign_in| sign_in.name == name)
        })
    }

    /// Verifies an ID token at `now`; returns who it names.
    pub async fn verify(
        &self,
        id_token: &str,
        nonce: Option<&str>,
        now: Now,
    ) -> ApiResult<OidcIdentity> {
        let header: RawHeader = segment(id_token, 0)
            .filter(|_| id_token.split('.').count() == 3)
            .ok_or_else(|| refused("id_token_malformed", "it is not a compact JWS"))?;
        let alg = algorithm(&header.alg).ok_or_else(|| {
            refused(
                "id_token_unsupported_alg",
                &format!("alg must be one of {}", ALGORITHMS.join(", ")),
            )
        })?;
        let unverified: Unverified = segment(id_token, 1)
            .ok_or_else(|| refused("id_token_malformed", "its claims are not JSON with `iss`"))?;
        let issuer = self
            .issuers
            .iter()
            .find(|i| i.config.issuer == unverified.iss)
            .ok_or_else(|| refused("id_token_unknown_issuer", "its issuer is not configured"))?;
        let keys = issuer.keys(header.kid.as_deref(), now).await?;
        let jwk = match &header.kid {
            Some(kid) => keys.find(kid),
            None if keys.keys.len() == 1 => keys.keys.first(),
            None => None,
        }
        .ok_or_else(|| {
            refused(
                "id_token_unknown_kid",
                "its kid is not among the issuer's keys",
            )
        })?;
        let key = DecodingKey::from_jwk(jwk).map_err(|_| {
            refused(
                "id_token_unknown_kid",
                "the issuer's key for its kid is unusable",
            )
        })?;
        let mut validation = Validation::new(alg);
        validation.leeway = LEEWAY_SECONDS;
        validation.set_issuer(&[&issuer.config.issuer]);
        validation.set_audience(&[&issuer.config.audience]);
        validation.set_required_spec_claims(&["exp", "iat", "iss", "aud", "sub"]);
        let claims = decode::<IdClaims>(id_token, &key, &validation)
            .map_err(|e| match e.kind() {
                ErrorKind::InvalidSignature => {
                    refused("id_token_bad_signature", "its signature does not verify")
                }
                ErrorKind::ExpiredSignature => refused("id_token_expired", "it has expired"),
                ErrorKind::ImmatureSignature => {
                    refused("id_token_not_yet_valid", "it is not valid yet")
                }
                ErrorKind::InvalidAudience => {
                    refused("id_token_wrong_audience", "its audience is not Mandate's")
                }
                ErrorKind::InvalidIssuer => {
                    refused("id_token_unknown_issuer", "its issuer is not configured")
                }
                ErrorKind::InvalidAlgorithm => refused(
                    "id_token_unsupported_alg",
                    "its alg does not match the issuer's key",
                ),
                ErrorKind::MissingRequiredClaim(_) => refused(
                    "id_token_missing_claim",
                    "it lacks exp, iat, iss, aud or sub",
                ),
                _ => refused("id_token_malformed", "it could not be decoded"),
            })?
            .claims;
        let now = now.s();
        if claims.iat > now + LEEWAY_SECONDS as i64 {
            return Err(refused(
                "id_token_issued_in_future",
                "its iat is in the future",
            ));
        }
        if now - claims.iat > MAX_ID_TOKEN_AGE_SECONDS {
            return Err(refused(
                "id_token_too_old",
                "it was issued more than ten minutes ago",
            ));
        }
        if nonce.is_some_and(|expected| claims.nonce.as_deref() != Some(expected)) {
            return Err(refused(
                "id_token_nonce_mismatch",
                "its nonce is not the one given",
            ));
        }
        if claims.sub.is_empty() {
            return Err(refused("id_token_missing_claim", "its sub is empty"));
        }
        Ok(OidcIdentity {
            issuer: issuer.config.issuer.clone(),
            subject: claims.sub,
            label: label(claims.name).or_else(|| label(claims.email)),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_https_or_allowed_loopback_http_is_fetched() {
        let cases = [
            ("https://idp.example/keys", false, true),
            ("https://127.0.0.1/keys", false, true),
            ("http://127.0.0.1:8080/keys", false, false),
            ("http://127.0.0.1:8080/keys", true, true),
            ("http://127.1.2.3/keys", true, true),
            ("http://0x7f.1/keys", true, true),
            ("http://[::1]:8080/keys", true, true),
            ("http://[::ffff:127.0.0.1]/keys", true, false),
            ("http://localhost/keys", true, false),
            ("http://idp.example/keys", true, false),
            ("http://10.0.0.1/keys", true, false),
            ("ftp://127.0.0.1/keys", true, false),
            ("file:///etc/keys", true, false),
        ];
        for (url, allow_insecure_http, allowed) in cases {
            let parsed = Url::parse(url).unwrap();
            assert_eq!(
                allowed_url(&parsed, allow_insecure_http),
                allowed,
                "{url} (allow_insecure_http = {allow_insecure_http})"
            );
        }
    }

    fn issuer(issuer: &str, jwks_uri: Option<&str>, allow_insecure_http: bool) -> OidcIssuer {
        OidcIssuer {
            issuer: issuer.to_owned(),
            audience: "mandate".to_owned(),
            jwks_file: None,
            jwks_uri: jwks_uri.map(str::to_owned),
            allow_insecure_http,
            sign_in: None,
        }
    }

    #[test]
    fn a_url_that_may_not_be_fetched_stops_the_start() {
        let refused = [
            issuer("http://idp.example", None, true),
            issuer("http://127.0.0.1:9000", None, false),
            issuer("https://idp.example", Some("http://idp.example/keys"), true),
            issuer("https://idp.example", Some("not a url"), false),
        ];
        for config in refused {
            assert!(
                OidcIssuers::new(std::slice::from_ref(&config)).is_err(),
                "{config:?}"
            );
        }
        let accepted = [
            issuer("https://idp.example", None, false),
            issuer("http://127.0.0.1:9000", None, true),
            issuer(
                "http://idp.example",
                Some("https://idp.example/keys"),
                false,
            ),
        ];
        for config in accepted {
            assert!(
                OidcIssuers::new(std::slice::from_ref(&config)).is_ok(),
                "{config:?}"
            );
        }
    }

    #[test]
    fn while_throttled_the_cache_answers_what_it_has_or_the_last_failure() {
        let keys: JwkSet = serde_json::from_value(serde_json::json!({"keys": [{
            "kty": "OKP", "crv": "Ed25519", "kid": "a",
            "x": "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"
        }]}))
        .unwrap();
        let now = Now::from_ms(1_800_000_000_000);
        let cache = KeyCache {
            keys: Some(CachedKeys {
                keys: Arc::new(keys),
                fetched: now,
            }),
            last_attempt: Some(now),
            last_error: None,
        };
        assert!(cache.throttled(now));
        assert!(cache.usable(Some("a"), now).is_some());
        assert!(cache.usable(None, now).is_some());
        assert!(
            cache.usable(Some("b"), now).is_some(),
            "an unknown kid waits for the next allowed fetch"
        );
        assert!(cache.holding(Some("b")).is_none());
        let later = Now::from_ms(now.ms() + REFETCH_INTERVAL.as_millis() as i64);
        assert!(!cache.throttled(later));
        assert!(cache.usable(Some("a"), later).is_some());
        assert!(cache.usable(Some("b"), later).is_none(), "a fetch is due");

        let failed = FetchError::DiscoveryMismatch("https://other.example".into()).problem();
        let empty = KeyCache {
            keys: None,
            last_attempt: Some(now),
            last_error: Some(failed.clone()),
        };
        assert_eq!(empty.fallback().unwrap_err(), failed);
        assert_eq!(
            KeyCache::default().fallback().unwrap_err().code,
            "oidc_keys_unavailable"
        );
        assert!(cache.fallback().is_ok());
    }
}

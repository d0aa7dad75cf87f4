//! L2: OpenID Connect ID tokens from configured issuers.
//!
//! An ID token is accepted when its `alg` is RS256, ES256 or EdDSA, its
//! issuer is configured, its key (by `kid`) is in that issuer's key set, its
//! signature verifies, `aud` holds the configured audience, `exp` has not
//! passed, `iat` is at most ten minutes old, and `nonce` matches when the
//! caller gives one. Each failure has its own code. Keys come from a file or
//! from the issuer's `jwks_uri`, cached, and re-read when a token names an
//! unknown `kid` (at most once every few seconds per issuer).

use std::sync::Arc;
use std::time::{Duration, Instant};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use jsonwebtoken::errors::ErrorKind;
use jsonwebtoken::jwk::JwkSet;
use jsonwebtoken::{Algorithm, DecodingKey, Validation, decode};
use serde::Deserialize;
use tokio::sync::Mutex;

use crate::clock::now_s;
use crate::config::OidcIssuer;
use crate::error::{ApiError, ApiResult};

/// Oldest ID token accepted, by `iat`.
pub const MAX_ID_TOKEN_AGE_SECONDS: i64 = 600;
/// Clock skew tolerated on `exp`, `nbf` and `iat`.
const LEEWAY_SECONDS: u64 = 60;
/// How long fetched keys are trusted before they are fetched again.
const KEYS_TTL: Duration = Duration::from_secs(3600);
/// Least time between two fetches for unknown kids.
const REFETCH_INTERVAL: Duration = Duration::from_secs(5);
/// The algorithms ID tokens may use.
const ALGORITHMS: [&str; 3] = ["RS256", "ES256", "EdDSA"];

/// The verified human behind an ID token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OidcIdentity {
    pub issuer: String,
    pub subject: String,
}

fn refused(code: &'static str, detail: &str) -> ApiError {
    ApiError::unauthorized(code, format!("the id_token was refused: {detail}"))
}

#[derive(Debug)]
struct CachedKeys {
    keys: Arc<JwkSet>,
    fetched: Instant,
}

#[derive(Debug)]
struct Issuer {
    config: OidcIssuer,
    cache: Mutex<Option<CachedKeys>>,
}

/// The configured issuers and their keys.
#[derive(Debug)]
pub struct OidcIssuers {
    issuers: Vec<Issuer>,
    http: reqwest::Client,
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
}

#[derive(Deserialize)]
struct Discovery {
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
    /// The issuers of a configuration. Nothing is fetched until needed.
    pub fn new(issuers: &[OidcIssuer]) -> anyhow::Result<OidcIssuers> {
        crate::install_tls_provider();
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(5))
            .build()?;
        Ok(OidcIssuers {
            issuers: issuers
                .iter()
                .map(|config| Issuer {
                    config: config.clone(),
                    cache: Mutex::new(None),
                })
                .collect(),
            http,
        })
    }

    /// Whether any issuer is configured.
    pub fn is_empty(&self) -> bool {
        self.issuers.is_empty()
    }

    async fn fetch(&self, issuer: &OidcIssuer) -> anyhow::Result<JwkSet> {
        if let Some(file) = &issuer.jwks_file {
            let text = std::fs::read(file)?;
            return Ok(serde_json::from_slice(&text)?);
        }
        let uri = match &issuer.jwks_uri {
            Some(uri) => uri.clone(),
            None => {
                let discovery = format!(
                    "{}/.well-known/openid-configuration",
                    issuer.issuer.trim_end_matches('/')
                );
                self.http
                    .get(discovery)
                    .send()
                    .await?
                    .error_for_status()?
                    .json::<Discovery>()
                    .await?
                    .jwks_uri
            }
        };
        Ok(self
            .http
            .get(uri)
            .send()
            .await?
            .error_for_status()?
            .json()
            .await?)
    }

    /// The issuer's keys; fetched when missing, stale, or (at most every few
    /// seconds) when `kid` is not among them.
    async fn keys(&self, issuer: &Issuer, kid: Option<&str>) -> ApiResult<Arc<JwkSet>> {
        let mut cache = issuer.cache.lock().await;
        let has_kid = |keys: &JwkSet| kid.is_none_or(|kid| keys.find(kid).is_some());
        if let Some(cached) = cache.as_ref() {
            let fresh = cached.fetched.elapsed() < KEYS_TTL;
            let may_refetch = cached.fetched.elapsed() >= REFETCH_INTERVAL;
            if fresh && (has_kid(&cached.keys) || !may_refetch) {
                return Ok(cached.keys.clone());
            }
        }
        match self.fetch(&issuer.config).await {
            Ok(keys) => {
                let keys = Arc::new(keys);
                *cache = Some(CachedKeys {
                    keys: keys.clone(),
                    fetched: Instant::now(),
                });
                Ok(keys)
            }
            Err(error) => {
                tracing::warn!(issuer = %issuer.config.issuer, %error, "fetching OIDC keys failed");
                match cache.as_ref() {
                    Some(cached) => Ok(cached.keys.clone()),
                    None => Err(ApiError::new(
                        axum::http::StatusCode::BAD_GATEWAY,
                        "oidc_keys_unavailable",
                        "the identity provider's keys cannot be fetched right now",
                    )),
                }
            }
        }
    }

    /// Verifies an ID token; returns who it names.
    pub async fn verify(&self, id_token: &str, nonce: Option<&str>) -> ApiResult<OidcIdentity> {
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
        let keys = self.keys(issuer, header.kid.as_deref()).await?;
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
        let now = now_s();
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
        })
    }
}

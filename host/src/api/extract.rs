//! Extractors: JSON bodies whose every failure is a problem body, API-key
//! authentication, and the agent-token rules (body `vat_jti`, optional or
//! required `Authorization: Bearer <compact_jwt>`).

use axum::body::Bytes;
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::request::Parts;
use axum::http::{HeaderMap, StatusCode, header};
use mandate_core::{Jti, VerifyError, VerifyOptions, verify};
use serde::de::DeserializeOwned;
use sha2::{Digest as _, Sha256};

use crate::AppState;
use crate::apikeys::{self, Principal};
use crate::clock::now_s;
use crate::error::{ApiError, ApiResult};
use crate::idempotency::{self, Presented};

/// A JSON request body. Wrong content type → 415, too large → 413, not JSON
/// → 400, JSON of the wrong shape → 422; each a problem body.
#[derive(Debug, Clone)]
pub(crate) struct Json<T>(pub(crate) T);

fn is_json(headers: &HeaderMap) -> bool {
    let Some(value) = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
    else {
        return false;
    };
    let essence = value
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase();
    essence == "application/json"
        || (essence.starts_with("application/") && essence.ends_with("+json"))
}

/// Turns a serde_json error into a 400 (not JSON) or a 422 (wrong shape).
fn json_error(error: &serde_json::Error) -> ApiError {
    use serde_json::error::Category;
    let mut detail = error.to_string();
    detail.truncate(300);
    match error.classify() {
        Category::Data => {
            let code = if detail.starts_with("unknown field") {
                "unknown_field"
            } else if detail.starts_with("missing field") {
                "missing_field"
            } else {
                "invalid_field"
            };
            ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, code, detail)
        }
        Category::Syntax | Category::Eof | Category::Io => {
            ApiError::bad_request("malformed_json", detail)
        }
    }
}

/// Reads and parses a JSON body; returns the value and the raw bytes.
async fn json_body<T: DeserializeOwned, S: Send + Sync>(
    request: Request,
    state: &S,
) -> Result<(T, Bytes), ApiError> {
    if !is_json(request.headers()) {
        return Err(ApiError::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "unsupported_media_type",
            "send the body as Content-Type: application/json",
        ));
    }
    let too_large = || {
        ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "payload_too_large",
            "the body is larger than 64 KiB",
        )
    };
    // A declared length over the cap is refused before a byte of the body is
    // read; an undeclared one is cut off at the cap while reading.
    let declared = request
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|length| length > super::MAX_BODY_BYTES as u64) {
        return Err(too_large());
    }
    let bytes = Bytes::from_request(request, state)
        .await
        .map_err(|rejection| {
            if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
                too_large()
            } else {
                ApiError::bad_request("unreadable_body", "the request body could not be read")
            }
        })?;
    // Every body is an object; serde would read a struct from a list too.
    if bytes.trim_ascii_start().first() == Some(&b'[') {
        serde_json::from_slice::<serde::de::IgnoredAny>(&bytes).map_err(|e| json_error(&e))?;
        return Err(ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_field",
            "invalid type: array, expected a JSON object",
        ));
    }
    let value = serde_json::from_slice(&bytes).map_err(|e| json_error(&e))?;
    Ok((value, bytes))
}

impl<T: DeserializeOwned, S: Send + Sync> FromRequest<S> for Json<T> {
    type Rejection = ApiError;

    async fn from_request(request: Request, state: &S) -> Result<Json<T>, ApiError> {
        json_body(request, state)
            .await
            .map(|(value, _)| Json(value))
    }
}

/// A JSON body of a write that may carry an `Idempotency-Key`.
#[derive(Debug, Clone)]
pub(crate) struct IdempotentJson<T> {
    pub(crate) body: T,
    pub(crate) key: Option<Presented>,
}

impl<T: DeserializeOwned, S: Send + Sync> FromRequest<S> for IdempotentJson<T> {
    type Rejection = ApiError;

    async fn from_request(request: Request, state: &S) -> Result<IdempotentJson<T>, ApiError> {
        let header = request
            .headers()
            .get(idempotency::HEADER)
            .map(|value| {
                value.to_str().map(str::to_owned).map_err(|_| {
                    ApiError::bad_request(
                        "invalid_idempotency_key",
                        "Idempotency-Key must be printable ASCII",
                    )
                })
            })
            .transpose()?;
        let (body, bytes) = json_body(request, state).await?;
        let key = header
            .map(|key| Presented::parse(&key, Sha256::digest(&bytes).into()))
            .transpose()?;
        Ok(IdempotentJson { body, key })
    }
}

/// The credential in `Authorization: Bearer …`, if any.
fn bearer(headers: &HeaderMap) -> ApiResult<Option<&str>> {
    let Some(value) = headers.get(header::AUTHORIZATION) else {
        return Ok(None);
    };
    let value = value.to_str().map_err(|_| {
        ApiError::unauthorized("unauthorized", "the Authorization header is not readable")
    })?;
    let credential = value
        .strip_prefix("Bearer ")
        .or_else(|| value.strip_prefix("bearer "))
        .map(str::trim)
        .filter(|c| !c.is_empty())
        .ok_or_else(|| {
            ApiError::unauthorized("unauthorized", "use Authorization: Bearer <credential>")
        })?;
    Ok(Some(credential))
}

/// A caller authenticated by API key.
#[derive(Debug, Clone)]
pub(crate) struct ApiKeyAuth(pub(crate) Principal);

/// Looks up the API key of a request; 401 when missing, unknown or revoked.
pub(crate) async fn api_key(state: &AppState, headers: &HeaderMap) -> ApiResult<Principal> {
    let presented = bearer(headers)?
        .filter(|c| apikeys::looks_like_key(c))
        .ok_or_else(|| {
            ApiError::unauthorized(
                "unauthorized",
                "an API key is required: Authorization: Bearer mk_…",
            )
        })?
        .to_owned();
    let principal = state
        .store
        .read_keys(move |conn| Ok(apikeys::lookup(conn, &presented)?))
        .await?
        .ok_or_else(|| {
            ApiError::unauthorized("unauthorized", "the API key is unknown or revoked")
        })?;
    state.limiters.api_key(&principal.id)?;
    Ok(principal)
}

impl FromRequestParts<AppState> for ApiKeyAuth {
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &AppState,
    ) -> Result<ApiKeyAuth, ApiError> {
        api_key(state, &parts.headers).await.map(ApiKeyAuth)
    }
}

/// Whether a request carries an API key (rather than an agent token).
pub(crate) fn has_api_key(headers: &HeaderMap) -> bool {
    matches!(bearer(headers), Ok(Some(c)) if apikeys::looks_like_key(c))
}

/// Verifies a compact token against the published keys, refreshing them once
/// when the token names a kid the server does not know yet.
async fn verify_bearer(state: &AppState, compact: &str) -> Result<Jti, VerifyError> {
    let options = VerifyOptions {
        issuer: Some(state.config.issuer.clone()),
        ..VerifyOptions::default()
    };
    let attempt = verify(compact, &state.keys.current().jwks, now_s(), &options);
    let verified = match attempt {
        Err(VerifyError::UnknownKid) if state.refresh_keys().await.is_ok() => {
            verify(compact, &state.keys.current().jwks, now_s(), &options)
        }
        other => other,
    }?;
    Ok(verified.claims.jti)
}

/// Parses a `vat_jti` from a body.
pub(crate) fn parse_jti(field: &str, text: &str) -> ApiResult<Jti> {
    Jti::parse(text).map_err(|e| ApiError::invalid(field, e.code(), e.to_string()))
}

/// The token an agent call acts with: the body's `vat_jti` and/or a verified
/// Bearer token (which must name the same jti). Counts the call against the
/// token's rate limit.
pub(crate) async fn agent_token(
    state: &AppState,
    headers: &HeaderMap,
    body_jti: Option<&str>,
) -> ApiResult<Jti> {
    let from_bearer = match bearer(headers)? {
        Some(compact) if !apikeys::looks_like_key(compact) => {
            match verify_bearer(state, compact).await {
                Ok(jti) => Some(jti),
                Err(error) => {
                    state.metrics.verification_failed(error.code());
                    return Err(ApiError::unauthorized(error.code(), error.to_string()));
                }
            }
        }
        _ => None,
    };
    if from_bearer.is_none() && state.config.require_bearer_token {
        return Err(ApiError::unauthorized(
            "bearer_required",
            "this deployment requires the token as Authorization: Bearer <compact_jwt>",
        ));
    }
    let from_body = body_jti
        .map(|text| parse_jti("vat_jti", text))
        .transpose()?;
    let jti = match (from_bearer, from_body) {
        (Some(bearer), Some(body)) if bearer != body => {
            return Err(ApiError::unauthorized(
                "token_mismatch",
                "vat_jti is not the jti of the Bearer token",
            ));
        }
        (Some(jti), _) | (None, Some(jti)) => jti,
        (None, None) => {
            return Err(ApiError::invalid(
                "vat_jti",
                "missing_field",
                "vat_jti is required (or a Bearer token)",
            ));
        }
    };
    state.limiters.token(jti.as_str())?;
    Ok(jti)
}

/// The jti of a verified Bearer token, if the request carries one (for
/// `complete`, where the record names the token).
pub(crate) async fn optional_bearer_jti(
    state: &AppState,
    headers: &HeaderMap,
) -> ApiResult<Option<Jti>> {
    match bearer(headers)? {
        Some(compact) if !apikeys::looks_like_key(compact) => {
            match verify_bearer(state, compact).await {
                Ok(jti) => {
                    state.limiters.token(jti.as_str())?;
                    Ok(Some(jti))
                }
                Err(error) => {
                    state.metrics.verification_failed(error.code());
                    Err(ApiError::unauthorized(error.code(), error.to_string()))
                }
            }
        }
        _ => Ok(None),
    }
}

/// The peer's address, when the server knows it (not in in-process tests).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Peer(pub(crate) Option<std::net::SocketAddr>);

impl<S: Send + Sync> FromRequestParts<S> for Peer {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Peer, Self::Rejection> {
        let address = parts
            .extensions
            .get::<axum::extract::ConnectInfo<std::net::SocketAddr>>()
            .map(|info| info.0);
        Ok(Peer(address))
    }
}

//! Extractors: JSON bodies whose every failure is a problem body, API-key
//! authentication, and the agent-token rules: which calls take a bare
//! `vat_jti` (it names a token and proves nothing) and which need the token
//! itself (`Authorization: Bearer`, or for a bound token `DPoP` with a proof
//! by the holder's key, RFC 9449).

use axum::body::Bytes;
use axum::extract::{FromRequest, FromRequestParts, MatchedPath, Request};
use axum::http::request::Parts;
use axum::http::{HeaderMap, Method, StatusCode, header};
use mandate_core::{
    Claims, DpopError, Jkt, Jti, ProofRequest, RelayError, VerifiedProof, VerifyError,
    VerifyOptions, check_binding, verify_forwarded, verify_ignoring_lifetime, verify_relay,
};
use serde::de::DeserializeOwned;
use sha2::{Digest as _, Sha256};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use super::access::{self, Access, KeyNeeds};
use crate::AppState;
use crate::apikeys::{self, Principal};
use crate::clock::Now;
use crate::config::AgentAuth;
use crate::error::oauth::OAuthError;
use crate::error::{ApiError, ApiResult, truncate_chars};
use crate::ledger::{IdempotencyKey, LedgerError};
use crate::proofs::Refused;
use crate::store::StoreError;
use crate::store::oauth as oauth_rows;
use crate::store::orgs::Org;
use crate::store::records::Credential;
use crate::store::tokens;

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

/// Longest detail of a body's problem, in characters.
const MAX_DETAIL_CHARS: usize = 300;
/// Longest `field` of a body's problem, in characters: an unknown member's
/// name is the client's text and may be as long as the body.
const MAX_FIELD_CHARS: usize = 100;

fn clipped(mut text: String, max_chars: usize) -> String {
    truncate_chars(&mut text, max_chars);
    text
}

/// A body that is not JSON: 400.
fn malformed(error: &serde_json::Error) -> ApiError {
    ApiError::bad_request(
        "malformed_json",
        clipped(error.to_string(), MAX_DETAIL_CHARS),
    )
}

/// How serde's message begins when it names a member the path to the error
/// does not hold: one missing (noticed at the end of its object) or one
/// repeated. An unknown member is on the path.
const NAMED_IN_MESSAGE: [&str; 2] = ["missing field `", "duplicate field `"];

/// The member a refusal is about, as `field` names it: the path's member
/// names joined by dots, without list positions (`resources`,
/// `constraints.max_spend_usd`), then the member serde's message names, if
/// any. `None` for the body as a whole.
fn field(path: &serde_path_to_error::Path, message: &str) -> Option<String> {
    use serde_path_to_error::Segment;
    let mut members: Vec<&str> = path
        .iter()
        .filter_map(|segment| match segment {
            Segment::Map { key } => Some(key.as_str()),
            _ => None,
        })
        .collect();
    let named = NAMED_IN_MESSAGE
        .iter()
        .find_map(|prefix| message.strip_prefix(prefix))
        .and_then(|rest| rest.split_once('`'));
    if let Some((named, _)) = named {
        members.push(named);
    }
    (!members.is_empty()).then(|| clipped(members.join("."), MAX_FIELD_CHARS))
}

/// Turns a serde error into a 400 (not JSON) or a 422 (JSON of the wrong
/// shape) naming the member at fault.
fn json_error(error: &serde_path_to_error::Error<serde_json::Error>) -> ApiError {
    use serde_json::error::Category;
    let inner = error.inner();
    if !matches!(inner.classify(), Category::Data) {
        return malformed(inner);
    }
    let message = inner.to_string();
    let code = if message.starts_with("unknown field") {
        "unknown_field"
    } else if message.starts_with("missing field") {
        "missing_field"
    } else {
        "invalid_field"
    };
    let field = field(error.path(), &message);
    // A wrong value is told with its full path (`resources[2]: invalid
    // type…`); serde's message already names a missing or unknown member.
    let detail = match (code, error.path().iter().next()) {
        ("invalid_field", Some(_)) => format!("{}: {message}", error.path()),
        _ => message,
    };
    let detail = clipped(detail, MAX_DETAIL_CHARS);
    match field {
        Some(field) => ApiError::invalid(&field, code, detail),
        None => ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, code, detail),
    }
}

/// Reads a body of at most [`super::MAX_BODY_BYTES`]: 413 beyond.
async fn capped_body<S: Send + Sync>(request: Request, state: &S) -> Result<Bytes, ApiError> {
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
    Bytes::from_request(request, state)
        .await
        .map_err(|rejection| {
            if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
                too_large()
            } else {
                ApiError::bad_request("unreadable_body", "the request body could not be read")
            }
        })
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
    let bytes = capped_body(request, state).await?;
    // Every body is an object; serde would read a struct from a list too.
    if bytes.trim_ascii_start().first() != Some(&b'{') {
        serde_json::from_slice::<serde::de::IgnoredAny>(&bytes).map_err(|e| malformed(&e))?;
        return Err(ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_field",
            "the body must be a JSON object",
        ));
    }
    // Parsed plainly first; only a body refused is parsed again with its
    // path tracked, to name the member at fault (the same refusal).
    if let Ok(value) = serde_json::from_slice(&bytes) {
        return Ok((value, bytes));
    }
    let mut deserializer = serde_json::Deserializer::from_slice(&bytes);
    let value = serde_path_to_error::deserialize(&mut deserializer).map_err(|e| json_error(&e))?;
    deserializer.end().map_err(|e| malformed(&e))?;
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

/// A form body of an OAuth endpoint (RFC 6749 §3.2: the token endpoint
/// takes `application/x-www-form-urlencoded`), read into `T` (a struct of
/// optional strings). RFC 6749 §3.1 decides the rest: a parameter sent
/// without a value is treated as omitted; a parameter `T` names sent twice
/// is refused ("Request and response parameters MUST NOT be included more
/// than once"); a parameter `T` does not name is ignored ("The
/// authorization server MUST ignore unrecognized request parameters").
/// Every refusal is an [`OAuthError`] (`invalid_request`): wrong content
/// type `form_required`, over 64 KiB `payload_too_large`, bad
/// percent-encoding or UTF-8 `form_malformed`, a repeat
/// `parameter_repeated`, a required parameter absent `parameter_missing`.
#[derive(Debug, Clone)]
pub(crate) struct OAuthForm<T>(pub(crate) T);

/// Whether the body is declared a form (any parameters, such as a
/// charset, after the media type are ignored).
fn is_form(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|value| value.split(';').next())
        .is_some_and(|essence| {
            essence
                .trim()
                .eq_ignore_ascii_case("application/x-www-form-urlencoded")
        })
}

/// One name or value of a form, decoded: `+` is a space, `%XX` a byte, and
/// the bytes must be UTF-8 (the WHATWG URL standard's
/// `application/x-www-form-urlencoded` parser, strict where it would
/// substitute U+FFFD).
fn form_text(raw: &[u8]) -> Result<String, ApiError> {
    let spaced: Vec<u8> = raw
        .iter()
        .map(|&b| if b == b'+' { b' ' } else { b })
        .collect();
    let malformed_escape = spaced.iter().enumerate().any(|(at, &b)| {
        b == b'%'
            && !spaced
                .get(at + 1..at + 3)
                .is_some_and(|hex| hex.iter().all(u8::is_ascii_hexdigit))
    });
    if malformed_escape {
        return Err(ApiError::bad_request(
            "form_malformed",
            "the form holds a % not followed by two hexadecimal digits",
        ));
    }
    let bytes: Vec<u8> = percent_encoding::percent_decode(&spaced).collect();
    String::from_utf8(bytes)
        .map_err(|_| ApiError::bad_request("form_malformed", "the form's text is not UTF-8"))
}

/// The parameters of a form, each name with every non-empty value it was
/// sent with, in order.
pub(crate) fn form_parameters(body: &[u8]) -> Result<Vec<(String, Vec<String>)>, ApiError> {
    let mut parameters: Vec<(String, Vec<String>)> = Vec::new();
    for pair in body.split(|&b| b == b'&').filter(|pair| !pair.is_empty()) {
        let (name, value) = match pair.iter().position(|&b| b == b'=') {
            Some(at) => (&pair[..at], &pair[at + 1..]),
            None => (pair, &b""[..]),
        };
        let (name, value) = (form_text(name)?, form_text(value)?);
        if value.is_empty() {
            continue;
        }
        match parameters.iter_mut().find(|(known, _)| *known == name) {
            Some((_, values)) => values.push(value),
            None => parameters.push((name, vec![value])),
        }
    }
    Ok(parameters)
}

/// Reads `T` from a form's parameters: one value a string, a repeated one
/// a list, which `T`'s string member refuses (and a member `T` lacks is
/// never read).
pub(crate) fn from_form<T: DeserializeOwned>(body: &[u8]) -> Result<T, ApiError> {
    let object: serde_json::Map<String, serde_json::Value> = form_parameters(body)?
        .into_iter()
        .map(|(name, mut values)| {
            let value = if values.len() == 1 {
                serde_json::Value::String(values.remove(0))
            } else {
                values.into_iter().map(serde_json::Value::String).collect()
            };
            (name, value)
        })
        .collect();
    serde_path_to_error::deserialize(serde_json::Value::Object(object)).map_err(
        |error: serde_path_to_error::Error<serde_json::Error>| {
            let message = error.inner().to_string();
            let named = error
                .path()
                .iter()
                .find_map(|segment| match segment {
                    serde_path_to_error::Segment::Map { key } => Some(key.clone()),
                    _ => None,
                })
                .or_else(|| {
                    message
                        .strip_prefix("missing field `")
                        .and_then(|rest| rest.split_once('`'))
                        .map(|(name, _)| name.to_owned())
                })
                .unwrap_or_default();
            let name = clipped(named, MAX_FIELD_CHARS);
            if message.starts_with("missing field") {
                ApiError::bad_request("parameter_missing", format!("`{name}` is required"))
            } else if message.starts_with("invalid type: sequence") {
                ApiError::bad_request(
                    "parameter_repeated",
                    format!("`{name}` is sent more than once (RFC 6749 §3.1)"),
                )
            } else {
                ApiError::bad_request(
                    "form_malformed",
                    clipped(format!("`{name}`: {message}"), MAX_DETAIL_CHARS),
                )
            }
        },
    )
}

impl<T: DeserializeOwned, S: Send + Sync> FromRequest<S> for OAuthForm<T> {
    type Rejection = OAuthError;

    async fn from_request(request: Request, state: &S) -> Result<OAuthForm<T>, OAuthError> {
        if !is_form(request.headers()) {
            return Err(ApiError::new(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "form_required",
                "send the body as Content-Type: application/x-www-form-urlencoded (RFC 6749 §3.2)",
            )
            .into());
        }
        let bytes = capped_body(request, state).await?;
        Ok(OAuthForm(from_form(&bytes)?))
    }
}

/// The request header of an idempotent write.
pub(crate) const IDEMPOTENCY_KEY: &str = "idempotency-key";
/// Longest `Idempotency-Key` accepted.
const MAX_IDEMPOTENCY_KEY_LEN: usize = 255;

/// An `Idempotency-Key` as sent, with the digest of the request body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Presented {
    key: String,
    body_sha256: [u8; 32],
}

impl Presented {
    /// Checks the header's form: 1 to 255 printable ASCII characters.
    fn parse(key: &str, body_sha256: [u8; 32]) -> ApiResult<Presented> {
        let valid = !key.is_empty()
            && key.len() <= MAX_IDEMPOTENCY_KEY_LEN
            && key.bytes().all(|b| b.is_ascii_graphic());
        if !valid {
            return Err(ApiError::bad_request(
                "invalid_idempotency_key",
                "Idempotency-Key must be 1 to 255 printable ASCII characters",
            ));
        }
        Ok(Presented {
            key: key.to_owned(),
            body_sha256,
        })
    }

    /// The key within an organisation, a route and a credential (an API
    /// key's id, a jti).
    pub(crate) fn scoped(self, org: Org, route: &str, credential: &str) -> IdempotencyKey {
        IdempotencyKey {
            org,
            scope: format!("{route} {credential}"),
            key: self.key,
            body_sha256: self.body_sha256,
        }
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
            .get(IDEMPOTENCY_KEY)
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

/// The header identifying an AuthZEN request (AuthZEN 1.0, "Request
/// Identification"): echoed on the answer, and the key a retry is
/// recognised by.
pub(crate) const X_REQUEST_ID: &str = "x-request-id";

/// A JSON body of an AuthZEN call with its `X-Request-ID`, if any, as the
/// key a retry with the same body replays the first answer by. AuthZEN
/// answers a request it cannot take with 400: JSON of the wrong shape (a
/// required member missing, a member of the wrong type) is a 400 problem
/// here, not 422.
#[derive(Debug, Clone)]
pub(crate) struct RequestIdJson<T> {
    pub(crate) body: T,
    pub(crate) key: Option<Presented>,
}

impl<T: DeserializeOwned, S: Send + Sync> FromRequest<S> for RequestIdJson<T> {
    type Rejection = ApiError;

    async fn from_request(request: Request, state: &S) -> Result<RequestIdJson<T>, ApiError> {
        let invalid = || {
            ApiError::bad_request(
                "invalid_request_id",
                "X-Request-ID must be 1 to 255 printable ASCII characters",
            )
        };
        let header = request
            .headers()
            .get(X_REQUEST_ID)
            .map(|value| value.to_str().map(str::to_owned).map_err(|_| invalid()))
            .transpose()?;
        let (body, bytes) = json_body(request, state).await.map_err(|mut error| {
            if error.status == StatusCode::UNPROCESSABLE_ENTITY {
                error.status = StatusCode::BAD_REQUEST;
            }
            error
        })?;
        let key = header
            .map(|key| {
                let valid = !key.is_empty()
                    && key.len() <= MAX_IDEMPOTENCY_KEY_LEN
                    && key.bytes().all(|b| b.is_ascii_graphic());
                match valid {
                    true => Ok(Presented {
                        key,
                        body_sha256: Sha256::digest(&bytes).into(),
                    }),
                    false => Err(invalid()),
                }
            })
            .transpose()?;
        Ok(RequestIdJson { body, key })
    }
}

/// The credential in `Authorization: Bearer …`, if any.
fn bearer(headers: &HeaderMap) -> ApiResult<Option<&str>> {
    match authorization(headers)? {
        Some((Scheme::Bearer, credential)) => Ok(Some(credential)),
        Some((Scheme::Dpop, _)) => Err(ApiError::unauthorized(
            "unauthorized",
            "this call takes an API key: Authorization: Bearer mk_…",
        )),
        None => Ok(None),
    }
}

/// The operation a request matched: its method and route template, which
/// the access table is keyed by.
#[derive(Debug, Clone)]
pub(crate) struct Operation {
    method: Method,
    route: Option<String>,
}

impl<S: Send + Sync> FromRequestParts<S> for Operation {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Operation, Self::Rejection> {
        Ok(Operation {
            method: parts.method.clone(),
            route: parts
                .extensions
                .get::<MatchedPath>()
                .map(|path| path.as_str().to_owned()),
        })
    }
}

impl Operation {
    /// What an API key must be allowed for this operation, from the access
    /// table.
    fn key_needs(&self) -> ApiResult<KeyNeeds> {
        self.route
            .as_deref()
            .and_then(|route| access::of(&self.method, route))
            .and_then(Access::key_needs)
            .ok_or_else(|| {
                ApiError::internal("an operation that takes an API key is not in the access table")
            })
    }

    /// Looks up the API key of a request and checks that the access table
    /// allows it this operation: 401 when missing, unknown or revoked, 403
    /// when its role does not allow the operation, 429 past the key's or
    /// its organisation's rate limit.
    pub(crate) async fn api_key(
        &self,
        state: &AppState,
        headers: &HeaderMap,
    ) -> ApiResult<Principal> {
        let needs = self.key_needs()?;
        let presented = match bearer(headers)? {
            Some(key) if apikeys::looks_like_key(key) => key.to_owned(),
            Some(key) if apikeys::meant_as_key(key) => {
                return Err(ApiError::unauthorized(
                    "unauthorized",
                    "the API key was not accepted: it is not of the form mk_ and 43 characters; check that it was copied whole",
                ));
            }
            Some(_) => {
                return Err(ApiError::unauthorized(
                    "unauthorized",
                    "the credential sent is not an API key, and this call takes one: Authorization: Bearer mk_…",
                ));
            }
            None => {
                return Err(ApiError::unauthorized(
                    "unauthorized",
                    "an API key is required: Authorization: Bearer mk_…",
                ));
            }
        };
        let hash = apikeys::hash(&presented);
        let began = Instant::now();
        let principal = match state.key_leases.get(&hash, began) {
            Some(principal) => Some(principal),
            None => {
                let found = state
                    .store
                    .read_keys(move |conn| Ok::<_, StoreError>(apikeys::lookup(conn, &hash)?))
                    .await?;
                if let Some(principal) = &found {
                    state.key_leases.insert(hash, principal.clone(), began);
                }
                found
            }
        };
        let principal = principal.ok_or_else(|| {
            ApiError::unauthorized(
                "unauthorized",
                "the API key was not accepted: no active key matches it (unknown or revoked)",
            )
        })?;
        state.limiters.api_key(&principal.id)?;
        state.limiters.org(principal.org)?;
        match needs {
            KeyNeeds::Role(permission) if !principal.may(permission) => {
                Err(ApiError::role_forbidden(principal.role, permission))
            }
            KeyNeeds::Admin if !principal.is_admin => Err(ApiError::forbidden(
                "admin_required",
                "only the deployment's admin key may do this",
            )),
            _ => Ok(principal),
        }
    }
}

/// A caller authenticated by API key and allowed the operation by the
/// access table.
#[derive(Debug, Clone)]
pub(crate) struct ApiKeyAuth(pub(crate) Principal);

impl FromRequestParts<AppState> for ApiKeyAuth {
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &AppState,
    ) -> Result<ApiKeyAuth, ApiError> {
        let operation = Operation::from_request_parts(parts, state)
            .await
            .unwrap_or_else(|never| match never {});
        operation
            .api_key(state, &parts.headers)
            .await
            .map(ApiKeyAuth)
    }
}

/// Whether a request carries an API key (rather than an agent token),
/// well-formed or not: one that is not is refused as a key.
pub(crate) fn has_api_key(headers: &HeaderMap) -> bool {
    matches!(bearer(headers), Ok(Some(c)) if apikeys::meant_as_key(c))
}

/// The scheme of an `Authorization` header that carries a token.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Scheme {
    Bearer,
    /// RFC 9449: a bound token, with its proof in the `DPoP` header.
    Dpop,
}

/// The scheme and credential of the `Authorization` header, if any.
fn authorization(headers: &HeaderMap) -> ApiResult<Option<(Scheme, &str)>> {
    let Some(value) = headers.get(header::AUTHORIZATION) else {
        return Ok(None);
    };
    let value = value.to_str().map_err(|_| {
        ApiError::unauthorized("unauthorized", "the Authorization header is not readable")
    })?;
    let (scheme, credential) = value.split_once(' ').ok_or_else(|| {
        ApiError::unauthorized("unauthorized", "use Authorization: Bearer <credential>")
    })?;
    let scheme = if scheme.eq_ignore_ascii_case("bearer") {
        Scheme::Bearer
    } else if scheme.eq_ignore_ascii_case("dpop") {
        Scheme::Dpop
    } else {
        return Err(ApiError::unauthorized(
            "unauthorized",
            "use Authorization: Bearer <credential> (DPoP <token> for a bound token)",
        ));
    };
    let credential = credential.trim();
    if credential.is_empty() {
        return Err(ApiError::unauthorized(
            "unauthorized",
            "the Authorization header names no credential",
        ));
    }
    Ok(Some((scheme, credential)))
}

/// Parses a `vat_jti` from a body.
pub(crate) fn parse_jti(field: &str, text: &str) -> ApiResult<Jti> {
    Jti::parse(text).map_err(|e| ApiError::invalid(field, e.code(), e.to_string()))
}

/// Whether `proof` is used for the first time (`now` in unix seconds):
/// this host's memory of proofs, then the store's, which every host on the
/// same database shares, so a proof is accepted once by the whole
/// deployment — at the agent endpoints and the token endpoint alike.
/// `false` is a replay.
pub(crate) async fn first_use_of_proof(
    state: &AppState,
    proof: &VerifiedProof,
    now: i64,
) -> ApiResult<bool> {
    match state.proofs.first_use(proof, now) {
        Ok(()) => {}
        Err(Refused::Replayed) => return Ok(false),
        Err(Refused::Full) => {
            return Err(ApiError::unavailable(
                "too many proofs of possession are in flight to remember one more; retry",
            ));
        }
    }
    Ok(state
        .store
        .first_use_of_proof(proof.replay_key(), proof.remember_until(), now)
        .await?)
}

/// The subject token of an RFC 8693 exchange (`compact`, never a bare
/// jti), verified as an agent call's token is — signature, issuer,
/// lifetime — and counted against the token's rate limit; its
/// organisation (a token this server does not hold is refused) and its
/// claims. Its binding is the token endpoint's to check: the proof there
/// is made for the token request, not for this token (RFC 9449 §5).
pub(crate) async fn token_subject(
    state: &AppState,
    now: Now,
    compact: &str,
) -> ApiResult<(Org, Arc<Claims>)> {
    if apikeys::meant_as_key(compact) {
        return Err(ApiError::token_required(
            "the subject is an API key (mk_…); it must be the agent's token",
        ));
    }
    let claims = verify_token(state, compact, Lifetime::Checked, now).await?;
    state.limiters.token(claims.jti.as_str())?;
    let org = org_acting(state, &claims.jti, Credential::Token).await?;
    Ok((org, claims))
}

/// What an agent call must present.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Need {
    /// The token itself: acts that change authority (`delegate`, an agent's
    /// `revoke`).
    Token,
    /// The token, or (unless the deployment says otherwise) its bare
    /// `vat_jti` in the body, as the spec shows for `record/action` and
    /// `authorize`.
    TokenOrJti,
}

/// The token an agent call acts with, what the caller proved about it, and
/// its organisation.
#[derive(Debug, Clone)]
pub(crate) struct Acting {
    pub(crate) jti: Jti,
    pub(crate) credential: Credential,
    pub(crate) org: Org,
    /// The relay key of the gate that relayed the call, if one did.
    pub(crate) relay: Option<Jkt>,
}

/// The header a gate forwards the client's DPoP proof in, exactly as
/// received (docs/oauth.md, "The gate relays the client's proof").
pub(crate) const CLIENT_DPOP_HEADER: &str = "mandate-client-dpop";
/// The header of the gate's own proof, by its relay key.
pub(crate) const RELAY_HEADER: &str = "mandate-relay";

/// Whether, and how, a call may come from a gate relaying a client's
/// proof.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Relaying {
    /// Not at all: the relay headers are refused (`relay_not_allowed`).
    Refused,
    /// With the client's proof forwarded, which the call uses up
    /// (`authorize`).
    WithClientProof,
    /// With the relay's proof alone, for a record the same relay key
    /// authorized (`complete`, an approval read).
    RelayAlone,
}

/// The token presented, verified, and the relay key that relayed it.
type Shown = (Jti, Option<Jkt>);

/// The proof a replay was spotted for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ProofOf {
    Holder,
    Client,
    Relay,
}

/// An agent call: what it needs to authenticate the token it presents —
/// the headers, and the method and URL a DPoP proof must name.
#[derive(Debug, Clone)]
pub(crate) struct AgentCall {
    method: Method,
    path: String,
    headers: HeaderMap,
}

impl<S: Send + Sync> FromRequestParts<S> for AgentCall {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<AgentCall, Self::Rejection> {
        Ok(AgentCall {
            method: parts.method.clone(),
            path: parts.uri.path().to_owned(),
            headers: parts.headers.clone(),
        })
    }
}

/// What the token an agent presents must verify as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Lifetime {
    /// Unexpired: for acting.
    Checked,
    /// Whatever it is now: for reporting what the token did while valid.
    Ignored,
}

impl AgentCall {
    /// The W3C `traceparent` the call carries, as sent, when it is one
    /// (Trace Context §4.2: a header that does not parse is ignored, as if
    /// absent, and a request with two is ignored too).
    pub(crate) fn traceparent(&self) -> Option<String> {
        let mut values = self.headers.get_all("traceparent").iter();
        let (Some(value), None) = (values.next(), values.next()) else {
            return None;
        };
        let text = value.to_str().ok()?;
        mandate_core::trace::TraceParent::parse(text)
            .ok()
            .map(|parent| parent.to_string())
    }

    /// The URL the request was sent to, as a proof's `htu` names it.
    fn url(&self, state: &AppState) -> String {
        match &state.config.public_url {
            Some(base) => format!("{}{}", base.trim_end_matches('/'), self.path),
            None => {
                let host = self
                    .headers
                    .get(header::HOST)
                    .and_then(|h| h.to_str().ok())
                    .unwrap_or_default();
                format!("http://{host}{}", self.path)
            }
        }
    }

    /// The one `name` header, if any; two are refused as `two`.
    fn header_once(&self, name: &str, two: impl FnOnce() -> ApiError) -> ApiResult<Option<&str>> {
        let mut values = self.headers.get_all(name).iter();
        match (values.next(), values.next()) {
            (None, _) => Ok(None),
            (Some(value), None) => value.to_str().map(Some).map_err(|_| two()),
            (Some(_), Some(_)) => Err(two()),
        }
    }

    /// The one `DPoP` header, if any (RFC 9449 §4.3: never two).
    fn proof(&self) -> ApiResult<Option<&str>> {
        let mut proofs = self.headers.get_all("dpop").iter();
        let (Some(proof), None) = (proofs.next(), proofs.next()) else {
            return match self.headers.contains_key("dpop") {
                true => Err(ApiError::dpop_invalid(&DpopError::Malformed)),
                false => Ok(None),
            };
        };
        proof
            .to_str()
            .map(Some)
            .map_err(|_| ApiError::dpop_invalid(&DpopError::Malformed))
    }

    /// The token the caller presents, verified — its signature, issuer,
    /// lifetime (unless `lifetime` says otherwise), and for a bound token
    /// its proof, used once — or `None` when it presents none.
    async fn presented(
        &self,
        state: &AppState,
        now: Now,
        lifetime: Lifetime,
        relaying: Relaying,
    ) -> ApiResult<Option<Shown>> {
        let malformed = |name: &'static str| {
            move || {
                ApiError::unauthorized(
                    "relay_invalid",
                    format!("send one readable {name} header, not two"),
                )
            }
        };
        let relay = self.header_once(RELAY_HEADER, malformed("Mandate-Relay"))?;
        let forwarded = self.header_once(CLIENT_DPOP_HEADER, malformed("Mandate-Client-DPoP"))?;
        let Some((scheme, compact)) = authorization(&self.headers)? else {
            if relay.is_some() || forwarded.is_some() {
                return Err(ApiError::unauthorized(
                    "relay_not_allowed",
                    "a relayed call carries the client's token: Authorization: DPoP <token>",
                ));
            }
            return Ok(None);
        };
        if apikeys::meant_as_key(compact) {
            return Err(ApiError::token_required(
                "an API key (mk_…) was sent; agent calls take the agent's token: \
                 Authorization: Bearer <compact_jwt> (DPoP <compact_jwt> with a proof when bound)",
            ));
        }
        if relay.is_some() || forwarded.is_some() {
            let relayed = Relayed {
                scheme,
                compact,
                relay,
                forwarded,
            };
            return self
                .relayed(state, now, lifetime, relaying, relayed)
                .await
                .map(|(jti, relay)| Some((jti, Some(relay))));
        }
        let proof = || match scheme {
            // RFC 9449 §7.2: a bound token sent as a Bearer token is refused.
            Scheme::Bearer => Ok(None),
            Scheme::Dpop => Ok(Some(self.proof()?.ok_or_else(ApiError::dpop_required)?)),
        };
        self.verified(state, now, lifetime, compact, proof)
            .await
            .map(|jti| Some((jti, None)))
    }

    /// A call a gate relays (see [`mandate_core::relay`]): the client's
    /// token, verified; the relay's proof, made for this request by a key
    /// the token's organisation registered for the token's audience; the
    /// client's forwarded proof where `relaying` takes one; both used
    /// once, in the store DPoP proofs are remembered in. The token and
    /// the relay key.
    async fn relayed(
        &self,
        state: &AppState,
        now: Now,
        lifetime: Lifetime,
        relaying: Relaying,
        relayed: Relayed<'_>,
    ) -> ApiResult<(Jti, Jkt)> {
        let Some(relay) = relayed.relay else {
            return Err(ApiError::unauthorized(
                "relay_required",
                "a client proof forwarded in Mandate-Client-DPoP goes with the gate's own proof in Mandate-Relay",
            ));
        };
        let not_allowed =
            |detail: &str| ApiError::unauthorized("relay_not_allowed", detail.to_owned());
        match (relaying, relayed.forwarded.is_some()) {
            (Relaying::Refused, _) => {
                return Err(not_allowed(
                    "this operation takes no relayed call: a gate relays authorize, and then completes or reads the approval of what it authorized",
                ));
            }
            (Relaying::WithClientProof, false) => {
                return Err(ApiError::unauthorized(
                    "client_proof_required",
                    "a relay authorizes with the client's proof, forwarded exactly as received in Mandate-Client-DPoP",
                ));
            }
            (Relaying::RelayAlone, true) => {
                return Err(not_allowed(
                    "the client's proof is used up by authorize; a completion or an approval read carries the relay's proof alone",
                ));
            }
            _ => {}
        }
        if relayed.scheme != Scheme::Dpop || self.proof()?.is_some() {
            return Err(not_allowed(
                "a relayed call sends the client's token as Authorization: DPoP <token>, and no DPoP header",
            ));
        }
        let compact = relayed.compact;
        let claims = verify_token(state, compact, lifetime, now).await?;
        let cnf = claims
            .cnf
            .as_ref()
            .ok_or_else(|| ApiError::dpop_invalid(&DpopError::NotBound))?;
        let audience = claims
            .aud
            .as_ref()
            .ok_or_else(|| ApiError::relay_invalid(&RelayError::NoAudience))?;
        let now = now.s();
        let url = self.url(state);
        let request = ProofRequest {
            method: self.method.as_str(),
            url: &url,
            now,
        };
        let relay_proof = verify_relay(relay, compact, relayed.forwarded, &request)
            .map_err(|e| ApiError::relay_invalid(&e))?;
        let client_proof = relayed
            .forwarded
            .map(|forwarded| verify_forwarded(forwarded, compact, &cnf.jkt, audience, now))
            .transpose()
            .map_err(|e| ApiError::relay_invalid(&e))?;
        let org = org_acting(state, &claims.jti, Credential::Token).await?;
        let relay_jkt = relay_proof.jkt.clone();
        let audience = audience.clone();
        let registered = state
            .store
            .lookup(move |conn| {
                let resources = oauth_rows::resources(conn, org).map_err(StoreError::from)?;
                Ok::<_, StoreError>(resources.iter().any(|row| {
                    audience.matches(&row.resource)
                        && row.relay_jkts.iter().any(|jkt| jkt == relay_jkt.as_str())
                }))
            })
            .await?;
        if !registered {
            return Err(ApiError::forbidden(
                "relay_not_registered",
                "the relay key is not registered for the token's audience in the token's organisation (POST /v1/oauth/resources)",
            ));
        }
        if let Some(client_proof) = &client_proof {
            first_use(state, client_proof, now, ProofOf::Client).await?;
        }
        first_use(state, &relay_proof, now, ProofOf::Relay).await?;
        Ok((claims.jti.clone(), relay_proof.jkt))
    }

    /// `compact` verified — its signature, issuer, lifetime (unless
    /// `lifetime` says otherwise) — and then, for a bound token, the proof
    /// `proof` finds checked for this request's method and URL and used
    /// once; a proof beside an unbound token is refused.
    async fn verified<'a>(
        &'a self,
        state: &AppState,
        now: Now,
        lifetime: Lifetime,
        compact: &str,
        proof: impl FnOnce() -> ApiResult<Option<&'a str>>,
    ) -> ApiResult<Jti> {
        let claims = verify_token(state, compact, lifetime, now).await?;
        let proof = proof()?;
        let now = now.s();
        let url = self.url(state);
        let request = ProofRequest {
            method: self.method.as_str(),
            url: &url,
            now,
        };
        let checked = check_binding(&claims, compact, proof, &request).map_err(|e| match e {
            DpopError::Required => ApiError::dpop_required(),
            other => ApiError::dpop_invalid(&other),
        })?;
        if let Some(proof) = checked {
            first_use(state, &proof, now, ProofOf::Holder).await?;
        }
        Ok(claims.jti.clone())
    }

    /// The token an AuthZEN evaluation names as its subject (`compact`,
    /// never a bare jti), verified as a token presented to this request is
    /// — for a bound token with `proof` (the evaluation's
    /// `context.dpop`), made for this request's method and URL and used
    /// once — and counted against the token's and its organisation's rate
    /// limits. A token this server does not hold is refused.
    pub(crate) async fn subject(
        &self,
        state: &AppState,
        now: Now,
        compact: &str,
        proof: Option<&str>,
    ) -> ApiResult<Acting> {
        if apikeys::meant_as_key(compact) {
            return Err(ApiError::token_required(
                "the subject is an API key (mk_…); it must be the agent's token",
            ));
        }
        let jti = self
            .verified(state, now, Lifetime::Checked, compact, || Ok(proof))
            .await?;
        state.limiters.token(jti.as_str())?;
        let org = org_acting(state, &jti, Credential::Token).await?;
        state.limiters.org(org)?;
        Ok(Acting {
            jti,
            credential: Credential::Token,
            org,
            relay: None,
        })
    }

    /// The token an agent call acts with: the token presented, or the
    /// body's bare `vat_jti` where `need` and the deployment allow one. A
    /// `vat_jti` beside a presented token must name it. Counted against
    /// the token's and its organisation's rate limits. A relayed call is
    /// refused.
    pub(crate) async fn acting(
        &self,
        state: &AppState,
        now: Now,
        body_jti: Option<&str>,
        need: Need,
    ) -> ApiResult<Acting> {
        self.acting_relayed(state, now, body_jti, need, Relaying::Refused)
            .await
    }

    /// [`AgentCall::acting`], taking a call relayed as `relaying` says.
    pub(crate) async fn acting_relayed(
        &self,
        state: &AppState,
        now: Now,
        body_jti: Option<&str>,
        need: Need,
        relaying: Relaying,
    ) -> ApiResult<Acting> {
        let presented = self
            .presented(state, now, Lifetime::Checked, relaying)
            .await?;
        let named = body_jti
            .map(|text| parse_jti("vat_jti", text))
            .transpose()?;
        let (jti, credential) = choose(state, presented.as_ref().map(|(jti, _)| jti), named, need)?;
        state.limiters.token(jti.as_str())?;
        let org = org_acting(state, &jti, credential).await?;
        state.limiters.org(org)?;
        Ok(Acting {
            jti,
            credential,
            org,
            relay: presented.and_then(|(_, relay)| relay),
        })
    }

    /// The tokens the records of a batch act with, one answer per record in
    /// order, each chosen as [`AgentCall::acting`] chooses for a call that
    /// carries that record alone. The token presented is verified once and
    /// its proof used once. What concerns the call fails it as a whole: a
    /// presented token that fails (or that this server does not hold), no
    /// token presented where the deployment wants it, a record naming no
    /// token when none is presented, a `vat_jti` of a wrong form (field
    /// `records.vat_jti`). What concerns one record is its own answer: a
    /// `vat_jti` naming another token than the one presented
    /// (`token_mismatch`: it borrows nothing), a bare `vat_jti` naming a
    /// token this server does not hold (`token_inactive`).
    ///
    /// Each record counts once against its token's and its organisation's
    /// rate limits, as if sent alone; a batch larger than a limit's burst
    /// takes the whole burst and owes the rest (see `crate::ratelimit`).
    /// Past a limit the batch is refused whole.
    pub(crate) async fn acting_each(
        &self,
        state: &AppState,
        now: Now,
        named: &[Option<&str>],
    ) -> ApiResult<Vec<ApiResult<Acting>>> {
        let presented = self
            .presented(state, now, Lifetime::Checked, Relaying::Refused)
            .await?
            .map(|(jti, _)| jti);
        let mut chosen = Vec::with_capacity(named.len());
        for (index, text) in named.iter().enumerate() {
            let named = text
                .map(|text| parse_jti("vat_jti", text))
                .transpose()
                .map_err(|error| error.in_item("records", index))?;
            match choose(state, presented.as_ref(), named, Need::TokenOrJti) {
                Ok(actor) => chosen.push(Ok(actor)),
                // Beside a presented token only a mismatch is refused,
                // and it is this record's alone.
                Err(error) if presented.is_some() => chosen.push(Err(error)),
                Err(error) => return Err(error.in_item("records", index)),
            }
        }
        // Every token the records act with, once, in order, with how many
        // records it makes; then each one's organisation.
        let mut tokens: Vec<(Jti, Credential)> = Vec::new();
        let mut records: HashMap<&Jti, u32> = HashMap::new();
        for (jti, credential) in chosen.iter().flatten() {
            let count = records.entry(jti).or_default();
            if *count == 0 {
                tokens.push((jti.clone(), *credential));
            }
            *count += 1;
        }
        for (jti, _) in &tokens {
            state.limiters.tokens(jti.as_str(), records[jti])?;
        }
        let jtis = tokens.iter().map(|(jti, _)| jti.clone()).collect();
        let orgs = orgs_of_tokens(state, jtis).await?;
        let mut per_org: Vec<(Org, u32)> = Vec::new();
        let mut org_of: HashMap<&Jti, Org> = HashMap::new();
        for ((jti, credential), org) in tokens.iter().zip(orgs) {
            match (org, credential) {
                (Some(org), _) => {
                    org_of.insert(jti, org);
                    match per_org.iter_mut().find(|(counted, _)| *counted == org) {
                        Some((_, total)) => *total += records[jti],
                        None => per_org.push((org, records[jti])),
                    }
                }
                // The token presented: the call's, refused whole.
                (None, Credential::Token) => return Err(unheld(*credential).into()),
                // A record's bare jti: that record's alone.
                (None, Credential::Jti) => {}
            }
        }
        for (org, records) in per_org {
            state.limiters.orgs(org, records)?;
        }
        let acting = chosen
            .iter()
            .map(|chosen| {
                let (jti, credential) = chosen.as_ref().map_err(Clone::clone)?;
                let org = *org_of
                    .get(jti)
                    .ok_or_else(|| ApiError::from(unheld(*credential)))?;
                Ok(Acting {
                    jti: jti.clone(),
                    credential: *credential,
                    org,
                    relay: None,
                })
            })
            .collect();
        Ok(acting)
    }

    /// The token presented with a completion, if any: verified as for any
    /// call, but whatever its lifetime, since a completion reports what the
    /// token did while it was valid; counted against its organisation's
    /// rate limit. A completion by `aar_id` alone is counted by address.
    /// A relay completes with its own proof alone: the token presented and
    /// its relay key.
    pub(crate) async fn completer(&self, state: &AppState, now: Now) -> ApiResult<Option<Shown>> {
        let presented = self
            .presented(state, now, Lifetime::Ignored, Relaying::RelayAlone)
            .await?;
        match presented {
            Some((jti, relay)) => {
                state.limiters.token(jti.as_str())?;
                let org = org_acting(state, &jti, Credential::Token).await?;
                state.limiters.org(org)?;
                Ok(Some((jti, relay)))
            }
            None if state.config.agent_auth == AgentAuth::Bearer => Err(ApiError::token_required(
                "this deployment takes agent calls with the token itself: \
                 Authorization: Bearer <compact_jwt> (DPoP <compact_jwt> with a proof when bound)",
            )),
            None => Ok(None),
        }
    }
}

/// Which token a call acts with, from the token it presents (verified) and
/// the `vat_jti` it names, and how it holds it; or why it may not act.
fn choose(
    state: &AppState,
    presented: Option<&Jti>,
    named: Option<Jti>,
    need: Need,
) -> ApiResult<(Jti, Credential)> {
    match (presented, named) {
        (Some(presented), Some(named)) if *presented != named => Err(ApiError::unauthorized(
            "token_mismatch",
            "vat_jti is not the jti of the token presented",
        )),
        (Some(jti), _) => Ok((jti.clone(), Credential::Token)),
        (None, Some(_)) if need == Need::Token => Err(ApiError::token_required(
            "this call changes authority and needs the token itself: \
             Authorization: Bearer <compact_jwt> (DPoP <compact_jwt> with a proof when bound); \
             a vat_jti names a token and proves nothing",
        )),
        (None, Some(_)) if state.config.agent_auth == AgentAuth::Bearer => {
            Err(ApiError::token_required(
                "this deployment takes agent calls with the token itself: \
                 Authorization: Bearer <compact_jwt> (DPoP <compact_jwt> with a proof when bound)",
            ))
        }
        (None, Some(jti)) => Ok((jti, Credential::Jti)),
        (None, None) if need == Need::Token => Err(ApiError::token_required(
            "this call needs the token itself: Authorization: Bearer <compact_jwt> \
             (DPoP <compact_jwt> with a proof when bound)",
        )),
        (None, None) => Err(ApiError::invalid(
            "vat_jti",
            "missing_field",
            "vat_jti is required, or the token itself as Authorization: Bearer <compact_jwt>",
        )),
    }
}

/// What a relayed call sent: the `Authorization` scheme and token, and
/// the relay headers.
struct Relayed<'a> {
    scheme: Scheme,
    compact: &'a str,
    relay: Option<&'a str>,
    forwarded: Option<&'a str>,
}

/// Remembers `proof` as used ([`first_use_of_proof`]: the replay store
/// the token endpoint shares); a proof seen before is refused as a replay
/// of the proof it is (`of`).
async fn first_use(
    state: &AppState,
    proof: &VerifiedProof,
    now: i64,
    of: ProofOf,
) -> ApiResult<()> {
    if first_use_of_proof(state, proof, now).await? {
        return Ok(());
    }
    Err(match of {
        ProofOf::Holder => ApiError::dpop_invalid(&DpopError::Replayed),
        ProofOf::Client => ApiError::relay_invalid(&RelayError::Client(DpopError::Replayed)),
        ProofOf::Relay => ApiError::relay_invalid(&RelayError::Relay(DpopError::Replayed)),
    })
}

/// How a token this server does not hold is refused, as the ledger would
/// refuse it.
fn unheld(credential: Credential) -> LedgerError {
    match credential {
        Credential::Jti => LedgerError::TokenInactive,
        Credential::Token => LedgerError::HolderInactive { expired: false },
    }
}

/// The organisation of the token an agent acts with; a token this server
/// does not hold is refused.
async fn org_acting(state: &AppState, jti: &Jti, credential: Credential) -> ApiResult<Org> {
    org_of_token(state, jti)
        .await?
        .ok_or_else(|| unheld(credential).into())
}

/// The organisation of a token: remembered, or read once (a token never
/// changes organisation).
async fn org_of_token(state: &AppState, jti: &Jti) -> ApiResult<Option<Org>> {
    let orgs = orgs_of_tokens(state, vec![jti.clone()]).await?;
    Ok(orgs.into_iter().next().flatten())
}

/// The organisations of tokens, in order (`None` for one this server does
/// not hold): those remembered, and the others read together, in one
/// visit to the keys lane, and remembered (a token never changes
/// organisation).
async fn orgs_of_tokens(state: &AppState, jtis: Vec<Jti>) -> ApiResult<Vec<Option<Org>>> {
    let remembered: Vec<Option<Org>> = jtis.iter().map(|jti| state.token_orgs.get(jti)).collect();
    let unknown: Vec<String> = jtis
        .iter()
        .zip(&remembered)
        .filter(|(_, org)| org.is_none())
        .map(|(jti, _)| jti.as_str().to_owned())
        .collect();
    if unknown.is_empty() {
        return Ok(remembered);
    }
    // One query for them all, in the lane of single-item reads: a batch
    // of bare jtis costs neither a query each nor the lane API keys wait
    // on.
    let read = state
        .store
        .lookup(move |conn| tokens::orgs_of(conn, &unknown).map_err(StoreError::from))
        .await?;
    Ok(jtis
        .iter()
        .zip(remembered)
        .map(|(jti, org)| {
            org.or_else(|| {
                let org = *read.get(jti.as_str())?;
                state.token_orgs.insert(jti, org);
                Some(org)
            })
        })
        .collect())
}

/// Verifies a compact token against the published keys, reading them again
/// when it names a kid the server does not know yet. A holder is told why
/// its token fails. A token already verified against the keys as they are
/// now is not checked again: only its lifetime is (see
/// [`crate::verified`]).
async fn verify_token(
    state: &AppState,
    compact: &str,
    lifetime: Lifetime,
    now: Now,
) -> ApiResult<Arc<Claims>> {
    let refused = |error: VerifyError| {
        state.metrics.verification_failed(error.code());
        match error {
            VerifyError::Expired => ApiError::holder_inactive(true),
            other => ApiError::unauthorized(other.code(), other.to_string()),
        }
    };
    let options = VerifyOptions {
        issuer: Some(state.config.issuer.clone()),
        ..VerifyOptions::default()
    };
    let ring = state.keys.current();
    let claims = match state.verified.get(compact, &ring) {
        Some(claims) => claims,
        None => {
            let (ring, outcome) = match verify_ignoring_lifetime(compact, &ring.jwks, &options) {
                Err(VerifyError::UnknownKid)
                    if state.refresh_keys_for_unknown_kid().await.is_ok() =>
                {
                    let ring = state.keys.current();
                    let outcome = verify_ignoring_lifetime(compact, &ring.jwks, &options);
                    (ring, outcome)
                }
                other => (ring, other),
            };
            let claims = Arc::new(outcome.map_err(refused)?.claims);
            state.verified.insert(compact, claims.clone(), ring);
            claims
        }
    };
    if lifetime == Lifetime::Checked {
        claims
            .check_time(now.s(), options.leeway_seconds)
            .map_err(refused)?;
    }
    Ok(claims)
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

#[cfg(test)]
mod tests {
    use serde::Deserialize;

    use super::{form_parameters, from_form};

    #[derive(Debug, Deserialize, PartialEq)]
    struct Token {
        grant_type: String,
        code: Option<String>,
    }

    fn refused(body: &str) -> (&'static str, String) {
        let error = from_form::<Token>(body.as_bytes()).unwrap_err();
        (error.code, error.detail)
    }

    #[test]
    fn a_form_decodes_plus_and_percent_and_ignores_unknown_parameters() {
        let token: Token =
            from_form(b"grant_type=authorization_code&code=a+b%2Fc%C3%A9&client_id=x&client_id=y")
                .unwrap();
        assert_eq!(
            token,
            Token {
                grant_type: "authorization_code".to_owned(),
                code: Some("a b/cé".to_owned()),
            }
        );
    }

    /// RFC 6749 §3.1: "Parameters sent without a value MUST be treated as
    /// if they were omitted from the request."
    #[test]
    fn a_parameter_without_a_value_is_omitted() {
        let token: Token = from_form(b"grant_type=x&code=&code").unwrap();
        assert_eq!(token.code, None);
        assert_eq!(
            refused("grant_type=&code=1"),
            ("parameter_missing", "`grant_type` is required".to_owned())
        );
        assert_eq!(
            form_parameters(b"&&a=1&").unwrap(),
            [("a".to_owned(), vec!["1".to_owned()])]
        );
    }

    /// RFC 6749 §3.1: "Request and response parameters MUST NOT be
    /// included more than once."
    #[test]
    fn a_known_parameter_sent_twice_is_refused() {
        let (code, detail) = refused("grant_type=a&grant_type=a");
        assert_eq!(code, "parameter_repeated");
        assert!(detail.contains("`grant_type`"), "{detail}");
        assert_eq!(
            refused("grant_type=a&code=1&code=2").0,
            "parameter_repeated"
        );
        assert_eq!(
            refused("grant_type=a&code=1&code=1").0,
            "parameter_repeated"
        );
    }

    #[test]
    fn bad_escapes_and_bytes_that_are_not_utf8_are_refused() {
        for body in [
            "grant_type=%zz",
            "grant_type=%4",
            "grant_type=%",
            "grant_type=%FF",
            "gr%C3=x",
        ] {
            assert_eq!(refused(body).0, "form_malformed", "{body}");
        }
    }
}

//! Mandate as the OAuth 2.1 authorization server of MCP servers
//! (docs/oauth.md): the metadata document (RFC 8414) and the token
//! endpoint. With `[oauth]` off every one answers 404, as if nothing were
//! routed there. The issuer is `public_url`, which the server's start
//! checks hold equal to `issuer` (`Config::check`).

use axum::extract::{FromRequest as _, State};
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};

use super::docs::Errors;
use super::extract::OAuthForm;
use crate::AppState;
use crate::error::oauth::{OAuthError, OAuthErrorBody};
use crate::error::{ApiError, ApiResult, truncate_chars};
use crate::model::oauth::{AuthorizationServerMetadata, TokenRequest};

/// Where the metadata document is (RFC 8414 §3).
pub(crate) const METADATA_PATH: &str = "/.well-known/oauth-authorization-server";
/// The authorization endpoint (RFC 6749 §3.1).
const AUTHORIZE_PATH: &str = "/v1/oauth/authorize";
/// The token endpoint (RFC 6749 §3.2).
const TOKEN_PATH: &str = "/v1/oauth/token";
/// The revocation endpoint (RFC 7009 §2).
const REVOKE_PATH: &str = "/v1/oauth/revoke";
/// Longest client text an error description repeats, in characters.
const MAX_SHOWN_CHARS: usize = 100;

/// The issuer, when `[oauth]` is on: `public_url` exactly (the start
/// checks refuse a deployment where it is unset, not https, or not equal
/// to `issuer`). Off, the path answers as unrouted.
fn issuer<'a>(state: &'a AppState, path: &str) -> ApiResult<&'a str> {
    match (&state.config.oauth.enabled, &state.config.public_url) {
        (true, Some(issuer)) => Ok(issuer),
        _ => Err(ApiError::no_route(path)),
    }
}

/// The path `public_url` has after its host, if any (`/tenant` of
/// `https://mandate.example/tenant`): the metadata is then also served at
/// [`METADATA_PATH`] followed by it (RFC 8414 §3.1).
pub(crate) fn issuer_path(state: &AppState) -> Option<String> {
    if !state.config.oauth.enabled {
        return None;
    }
    let url = reqwest::Url::parse(state.config.public_url.as_deref()?).ok()?;
    let path = url.path().trim_end_matches('/');
    (!path.is_empty()).then(|| path.to_owned())
}

/// The metadata of the authorization server at `issuer` (RFC 8414 §2):
/// exactly these members. The authorization, token and revocation
/// endpoints are those this deployment serves under `/v1/oauth/`.
pub(crate) fn metadata_of(issuer: &str) -> AuthorizationServerMetadata {
    let list = |items: &[&str]| items.iter().map(|&item| item.to_owned()).collect();
    AuthorizationServerMetadata {
        issuer: issuer.to_owned(),
        authorization_endpoint: format!("{issuer}{AUTHORIZE_PATH}"),
        token_endpoint: format!("{issuer}{TOKEN_PATH}"),
        revocation_endpoint: format!("{issuer}{REVOKE_PATH}"),
        jwks_uri: format!("{issuer}/.well-known/jwks.json"),
        response_types_supported: list(&["code"]),
        response_modes_supported: list(&["query"]),
        grant_types_supported: list(&[
            "authorization_code",
            "refresh_token",
            "urn:ietf:params:oauth:grant-type:token-exchange",
        ]),
        code_challenge_methods_supported: list(&["S256"]),
        token_endpoint_auth_methods_supported: list(&["none"]),
        revocation_endpoint_auth_methods_supported: list(&["none"]),
        client_id_metadata_document_supported: true,
        authorization_response_iss_parameter_supported: true,
        dpop_signing_alg_values_supported: list(&["EdDSA"]),
    }
}

/// Lets any origin read an answer: browser-based clients (MCP Inspector)
/// fetch the metadata and call the token endpoint directly, without
/// credentials.
fn open_to_any_origin(mut response: Response) -> Response {
    response.headers_mut().insert(
        header::ACCESS_CONTROL_ALLOW_ORIGIN,
        HeaderValue::from_static("*"),
    );
    response
}

/// The authorization server's metadata (RFC 8414): where to send the
/// browser, where to get tokens, what is supported. Also served at this
/// path followed by `public_url`'s path when it has one (RFC 8414 §3.1).
/// 404 unless `[oauth]` is on.
#[utoipa::path(
    get,
    path = "/.well-known/oauth-authorization-server",
    operation_id = "oauth_metadata",
    tag = "oauth",
    responses((status = 200, description = "The metadata (RFC 8414 §3.2)", body = AuthorizationServerMetadata), Errors)
)]
pub(crate) async fn metadata(State(state): State<AppState>) -> ApiResult<Response> {
    let issuer = issuer(&state, METADATA_PATH)?;
    Ok(open_to_any_origin(
        axum::Json(metadata_of(issuer)).into_response(),
    ))
}

/// The metadata at its path-inserted address (RFC 8414 §3.1), when
/// `public_url` has a path.
pub(crate) async fn metadata_at_issuer_path(
    State(state): State<AppState>,
    uri: axum::http::Uri,
) -> ApiResult<Response> {
    let issuer = issuer(&state, uri.path())?;
    Ok(open_to_any_origin(
        axum::Json(metadata_of(issuer)).into_response(),
    ))
}

/// The token endpoint (RFC 6749 §3.2): a form, no client authentication
/// (public clients). No grant is served yet: every `grant_type` is
/// answered `unsupported_grant_type` (RFC 6749 §5.2), a missing one
/// `invalid_request`. 404 unless `[oauth]` is on.
#[utoipa::path(
    post,
    path = "/v1/oauth/token",
    operation_id = "oauth_token",
    tag = "oauth",
    request_body(content = TokenRequest, content_type = "application/x-www-form-urlencoded"),
    responses(
        (status = 400, description = "An OAuth error (RFC 6749 §5.2)", body = OAuthErrorBody),
        (status = 404, description = "`[oauth]` is off", body = crate::error::Problem, content_type = "application/problem+json"),
        (status = 503, description = "Storage cannot take writes right now (`temporarily_unavailable`)", body = OAuthErrorBody)
    )
)]
pub(crate) async fn token(
    State(state): State<AppState>,
    request: axum::extract::Request,
) -> Response {
    if let Err(off) = issuer(&state, TOKEN_PATH) {
        return off.into_response();
    }
    let answer = match OAuthForm::<TokenRequest>::from_request(request, &state).await {
        Ok(OAuthForm(form)) => {
            let mut shown = form.grant_type;
            truncate_chars(&mut shown, MAX_SHOWN_CHARS);
            OAuthError::from(ApiError::bad_request(
                "grant_type_unsupported",
                format!("grant_type {shown:?} is not supported by this server"),
            ))
        }
        Err(refused) => refused,
    };
    open_to_any_origin(answer.into_response())
}

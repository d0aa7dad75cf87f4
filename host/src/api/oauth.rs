//! Mandate as the OAuth 2.1 authorization server of MCP servers
//! (docs/oauth.md): the metadata document (RFC 8414) and the token
//! endpoint (the authorization endpoint and the consent APIs are
//! `oauth_consent`). With `[oauth]` off every one answers 404, as if nothing were
//! routed there. The issuer is `public_url`, which the server's start
//! checks hold equal to `issuer` (`Config::check`).

use axum::extract::{FromRequest as _, State};
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};

use mandate_core::audience::Audience;
use mandate_core::oauth::client_document::ClientIdUrl;
use mandate_core::oauth::pkce::CodeChallenge;
use mandate_core::oauth::scope::format;
use mandate_core::{AssuranceLevel, HumanRef, IssueError, RootIssue, issue_root};
use sha2::{Digest as _, Sha256};

use super::docs::Errors;
use super::extract::OAuthForm;
use super::oauth_consent::{CONSENT_ASSURANCE, Choice, issuer};
use super::status::public_base;
use crate::clock::Now;
use crate::error::oauth::{OAuthError, OAuthErrorBody};
use crate::error::{ApiError, ApiResult, truncate_chars};
use crate::ledger::{LedgerError, Redeemed, Redemption};
use crate::model::oauth::{AuthorizationServerMetadata, TokenRequest, TokenResponse};
use crate::queries::QueryError;
use crate::store::oauth::{self as rows, OAuthCode, OAuthGrant};
use crate::{AppState, random};

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
/// (public clients). `authorization_code` (RFC 6749 §4.1.3) is served;
/// every other `grant_type` is answered `unsupported_grant_type` (RFC 6749
/// §5.2), a missing one `invalid_request`. 404 unless `[oauth]` is on.
#[utoipa::path(
    post,
    path = "/v1/oauth/token",
    operation_id = "oauth_token",
    tag = "oauth",
    request_body(content = TokenRequest, content_type = "application/x-www-form-urlencoded"),
    responses(
        (status = 200, description = "The access token (RFC 6749 §5.1)", body = TokenResponse),
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
        Ok(OAuthForm(form)) if form.grant_type == "authorization_code" => {
            match redeem(&state, form).await {
                Ok(issued) => axum::Json(issued).into_response(),
                Err(refused) => OAuthError::from(refused).into_response(),
            }
        }
        Ok(OAuthForm(form)) => {
            let mut shown = form.grant_type;
            truncate_chars(&mut shown, MAX_SHOWN_CHARS);
            OAuthError::from(ApiError::bad_request(
                "grant_type_unsupported",
                format!("grant_type {shown:?} is not supported by this server"),
            ))
            .into_response()
        }
        Err(refused) => refused.into_response(),
    };
    open_to_any_origin(answer)
}

fn code_invalid(detail: &str) -> ApiError {
    ApiError::bad_request("code_invalid", detail.to_owned())
}

/// A required parameter of the token request.
fn required<'a>(value: Option<&'a String>, name: &str) -> ApiResult<&'a str> {
    value
        .map(String::as_str)
        .ok_or_else(|| ApiError::bad_request("parameter_missing", format!("`{name}` is required")))
}

/// The `authorization_code` grant (RFC 6749 §4.1.3): the code known,
/// unused and unexpired, for this `client_id` and exactly this
/// `redirect_uri`; the verifier proves the S256 challenge (RFC 7636 §4.6);
/// a `resource`, when sent, is the authorized one (RFC 8707 §2.2). Then
/// one ledger job stores the grant root, its first access token and the
/// grant. A code from another server is unknown here (mix-up: RFC 9700
/// §4.4); a code used before is refused and revokes what it issued.
async fn redeem(state: &AppState, form: TokenRequest) -> ApiResult<TokenResponse> {
    const UNKNOWN: &str = "the code is unknown, expired or used, or was issued to another client";
    let now = state.clock.now();
    let code = required(form.code.as_ref(), "code")?;
    let client_id = required(form.client_id.as_ref(), "client_id")?;
    let redirect_uri = required(form.redirect_uri.as_ref(), "redirect_uri")?;
    let code_hash = Sha256::digest(code.as_bytes()).to_vec();
    let lookup = code_hash.clone();
    let Some(stored) = state
        .store
        .lookup(move |conn| Ok::<_, QueryError>(rows::code(conn, &lookup)?))
        .await?
    else {
        return Err(code_invalid(UNKNOWN));
    };
    if stored.used_at.is_none() {
        if stored.client_id != client_id {
            return Err(code_invalid(UNKNOWN));
        }
        // OAuth 2.1 "Redirect URI Parameter in Token Request": equal to
        // the authorization request's, as sent.
        if stored.redirect_uri != redirect_uri {
            return Err(ApiError::bad_request(
                "redirect_uri_mismatch",
                "redirect_uri must be the authorization request's, exactly",
            ));
        }
        CodeChallenge::parse(&stored.code_challenge)
            .map_err(ApiError::internal)?
            .verify(form.code_verifier.as_deref())
            .map_err(|why| ApiError::bad_request(why.code(), why.to_string()))?;
        if let Some(resource) = &form.resource
            && Some(resource) != stored.resource.as_ref()
        {
            return Err(ApiError::bad_request(
                "resource_mismatch",
                "resource must be the one the authorization request named (RFC 8707 §2.2)",
            ));
        }
    }
    let redemption = redemption(state, &stored, code_hash, now)?;
    let ttl = redemption.access_ttl_seconds;
    match state
        .write(move |ledger| ledger.redeem_code(redemption, now))
        .await?
    {
        Redeemed::Issued { access, compact } => Ok(TokenResponse {
            access_token: compact,
            token_type: "Bearer".to_owned(),
            expires_in: u64::try_from(access.exp - now.s()).unwrap_or(ttl),
            scope: format(&access.svc_scope).ok(),
        }),
        Redeemed::Replayed => Err(code_invalid(
            "the code was used before: what it issued is revoked (RFC 6749 §4.1.2)",
        )),
        Redeemed::Invalid => Err(code_invalid(UNKNOWN)),
    }
}

/// What the ledger needs to redeem `code`: the grant root core makes of
/// the human's choice (`aud` the request's `resource`), the grant row, the
/// access token's lifetime and id.
fn redemption(
    state: &AppState,
    code: &OAuthCode,
    code_hash: Vec<u8>,
    now: Now,
) -> ApiResult<Redemption> {
    let choice: Choice = serde_json::from_str(&code.choice).map_err(ApiError::internal)?;
    if code.assurance != CONSENT_ASSURANCE {
        return Err(ApiError::internal("a code of an unknown sign-in"));
    }
    let human = HumanRef::parse(&code.human_ref).map_err(ApiError::internal)?;
    let mut root = issue_root(
        choice.token_request(),
        RootIssue {
            issuer: state.config.issuer.clone(),
            human,
            level: AssuranceLevel::L1,
            now: now.s(),
            jti: random::ulid(now),
            provenance: random::ulid(now),
            status: None,
        },
    )
    .map_err(|e| match e {
        IssueError::TtlOutOfRange => LedgerError::TtlOutOfRange(e).into(),
        other => ApiError::internal(other),
    })?;
    // RFC 8707 §2: the token is for the resource the request named.
    root.aud = code
        .resource
        .as_deref()
        .map(Audience::parse)
        .transpose()
        .map_err(ApiError::internal)?;
    let grant = OAuthGrant {
        grant_id: format!("ogr_{}", random::ulid(now)),
        org: code.org,
        human_ref: code.human_ref.clone(),
        client_id: code.client_id.clone(),
        client_host: ClientIdUrl::parse(&code.client_id)
            .ok()
            .map(|url| url.host().to_owned()),
        client_name: choice.client_name.clone(),
        resource: code.resource.clone(),
        agent_id: choice.agent_id.as_str().to_owned(),
        root_jti: root.jti.as_str().to_owned(),
        scope: format(&root.svc_scope).unwrap_or_default(),
        created_at: now.ms(),
        expires_at: root.exp.saturating_mul(1000),
    };
    Ok(Redemption {
        code_hash,
        root,
        issued_by: choice.approved_by,
        for_anyone: choice.for_anyone,
        label: choice.label,
        grant,
        access_ttl_seconds: state.config.oauth.access_token_ttl_seconds.get(),
        access_jti: random::ulid(now),
        status_base: public_base(state),
        key: state.keys.current().active.clone(),
    })
}

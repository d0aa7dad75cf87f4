//! Mandate as the OAuth 2.1 authorization server of MCP servers
//! (docs/oauth.md): the metadata document (RFC 8414), the token endpoint
//! (codes and refresh tokens) and the revocation endpoint (RFC 7009) (the
//! authorization endpoint and the consent APIs are `oauth_consent`). With `[oauth]` off every one answers 404, as if nothing were
//! routed there. The issuer is `public_url`, which the server's start
//! checks hold equal to `issuer` (`Config::check`).

use axum::extract::{FromRequest as _, State};
use axum::http::{HeaderMap, HeaderValue, header};
use axum::response::{IntoResponse, Response};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use mandate_core::audience::Audience;
use mandate_core::oauth::client_document::ClientIdUrl;
use mandate_core::oauth::exchange;
use mandate_core::oauth::pkce::CodeChallenge;
use mandate_core::oauth::scope::{RequestedScope, format};
use mandate_core::{
    AssuranceLevel, DpopError, HumanRef, Jkt, Jti, ProofRequest, VerifyOptions,
    verify_ignoring_lifetime, verify_token_request_proof,
};
use sha2::{Digest as _, Sha256};

use super::agent::{delegation_written, render_delegation, waiting_delegation};
use super::docs::Errors;
use super::extract::{OAuthForm, first_use_of_proof, token_subject};
use super::input;
use super::issue::root_claims;
use super::oauth_consent::{Choice, issuer};
use super::status::public_base;
use super::write::{Rendered, once_resuming};
use crate::clock::Now;
use crate::error::oauth::{MandateApproval, OAuthError, OAuthErrorBody};
use crate::error::{ApiError, ApiResult, known_code, truncate_chars};
use crate::ledger::{
    ClientRevocation, Delegated, Delegation, IdempotencyKey, LedgerError, Redeemed, Redemption,
    Refresh, RefreshRefusal, Refreshed,
};
use crate::model::oauth::{
    AuthorizationServerMetadata, RevocationRequest, TokenRequest, TokenResponse,
};
use crate::model::{DelegateRequest, DelegationAwaitingApproval, IssuedToken};
use crate::queries::QueryError;
use crate::store::oauth::{self as rows, OAuthCode, OAuthGrant};
use crate::store::orgs::Org;
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
/// What a refresh token starts with.
const REFRESH_PREFIX: &str = "mrt_";
/// The grant type that lets a client refresh (RFC 6749 §6).
const REFRESH_GRANT: &str = "refresh_token";
/// Seconds in a day, for `[oauth] refresh_idle_days`.
const DAY_SECONDS: u64 = 86_400;

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
        dpop_signing_alg_values_supported: list(&mandate_core::dpop::ACCEPTED_ALGS),
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
/// (public clients). `authorization_code` (RFC 6749 §4.1.3),
/// `refresh_token` (§6) and token exchange (RFC 8693 §2.1, a delegation)
/// are served, with an optional `DPoP` proof (RFC 9449 §5); every other
/// `grant_type` is answered
/// `unsupported_grant_type` (RFC 6749 §5.2), a missing one
/// `invalid_request`. 404 unless `[oauth]` is on.
#[utoipa::path(
    post,
    path = "/v1/oauth/token",
    operation_id = "oauth_token",
    tag = "oauth",
    request_body(content = TokenRequest, content_type = "application/x-www-form-urlencoded"),
    responses(
        (status = 200, description = "The access token, and a refresh token when the client may refresh (RFC 6749 §5.1)", body = TokenResponse),
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
    let answered = |issued: ApiResult<TokenResponse>| match issued {
        Ok(issued) => axum::Json(issued).into_response(),
        Err(refused) => OAuthError::from(refused).into_response(),
    };
    let headers = request.headers().clone();
    let answer = match OAuthForm::<TokenRequest>::from_request(request, &state).await {
        Ok(OAuthForm(form)) if form.grant_type == "authorization_code" => {
            answered(redeem(&state, &headers, form).await)
        }
        Ok(OAuthForm(form)) if form.grant_type == REFRESH_GRANT => {
            answered(refresh(&state, &headers, form).await)
        }
        Ok(OAuthForm(form)) if form.grant_type == exchange::GRANT_TYPE => {
            answered(exchange_token(&state, &headers, form).await)
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

/// A refused DPoP proof at the token endpoint: 400 `invalid_dpop_proof`
/// (RFC 9449 §5), Mandate's code naming the rule.
fn proof_refused(error: &DpopError) -> ApiError {
    ApiError::bad_request(error.code(), format!("the DPoP proof was refused: {error}"))
}

/// The key of the token request's `DPoP` proof (RFC 9449 §5), if it
/// carries one: the proof checked by core for `POST` to this token
/// endpoint (`{issuer}/v1/oauth/token`) at about now, without `ath`, and
/// used once in the replay memory every agent call's proof goes through.
/// Two `DPoP` headers, or one that is not text, are malformed (§4.3).
async fn token_proof(state: &AppState, headers: &HeaderMap, now: Now) -> ApiResult<Option<Jkt>> {
    let mut values = headers.get_all("dpop").iter();
    let proof = match (values.next(), values.next()) {
        (None, _) => return Ok(None),
        (Some(one), None) => one
            .to_str()
            .map_err(|_| proof_refused(&DpopError::Malformed))?,
        (Some(_), Some(_)) => return Err(proof_refused(&DpopError::Malformed)),
    };
    let url = format!("{}{TOKEN_PATH}", issuer(state, TOKEN_PATH)?);
    let request = ProofRequest {
        method: "POST",
        url: &url,
        now: now.s(),
    };
    let verified = verify_token_request_proof(proof, &request).map_err(|e| proof_refused(&e))?;
    if !first_use_of_proof(state, &verified, now.s()).await? {
        return Err(proof_refused(&DpopError::Replayed));
    }
    Ok(Some(verified.jkt))
}

/// `Bearer`, or `DPoP` for a token bound to a key (RFC 9449 §5).
fn token_type(access: &mandate_core::Claims) -> String {
    match access.cnf {
        Some(_) => "DPoP",
        None => "Bearer",
    }
    .to_owned()
}

/// A new refresh token (`mrt_` and 43 base64url characters: 256 random
/// bits) and its SHA-256, which is all that is stored.
fn new_refresh_token() -> (String, Vec<u8>) {
    let token = format!(
        "{REFRESH_PREFIX}{}",
        URL_SAFE_NO_PAD.encode(random::bytes::<32>())
    );
    let hash = Sha256::digest(token.as_bytes()).to_vec();
    (token, hash)
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
/// §4.4); a code used before is refused and revokes what it issued. A
/// request with a `DPoP` proof gets a token bound to the proof's key and a
/// grant whose refreshes need that key (RFC 9449 §5); a code whose
/// authorization request named a key (`dpop_jkt`) needs a proof by it
/// (§10).
async fn redeem(
    state: &AppState,
    headers: &HeaderMap,
    form: TokenRequest,
) -> ApiResult<TokenResponse> {
    const UNKNOWN: &str = "the code is unknown, expired or used, or was issued to another client";
    let now = state.clock.now();
    let holder = token_proof(state, headers, now).await?;
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
        // RFC 9449 §10: a request that named a key (`dpop_jkt`) is redeemed
        // only with a proof by that key.
        if let Some(bound) = &stored.dpop_jkt {
            match &holder {
                None => return Err(proof_refused(&DpopError::Required)),
                Some(jkt) if jkt.as_str() != bound => {
                    return Err(proof_refused(&DpopError::KeyMismatch));
                }
                Some(_) => {}
            }
        }
    }
    // A client deleted since the consent redeems nothing; one registered
    // for `refresh_token` gets a refresh token (plan §1.4), and so does a
    // client named by its metadata document when the document, as read at
    // consent, registered the grant type (the code keeps what it said). A
    // used code goes on to the ledger whatever its client, to revoke what
    // it issued.
    let choice: Choice = serde_json::from_str(&stored.choice).map_err(ApiError::internal)?;
    let refresh = if stored.used_at.is_some() {
        None
    } else if ClientIdUrl::is_url(&stored.client_id) {
        choice.document_refresh.then(new_refresh_token)
    } else {
        let (org, client_id) = (stored.org, stored.client_id.clone());
        let Some(client) = state
            .store
            .lookup(move |conn| Ok::<_, QueryError>(rows::client(conn, org, &client_id)?))
            .await?
        else {
            return Err(code_invalid(UNKNOWN));
        };
        client
            .grant_types
            .iter()
            .any(|kind| kind == REFRESH_GRANT)
            .then(new_refresh_token)
    };
    let mut redemption = redemption(state, &stored, choice, code_hash, holder, now)?;
    redemption.refresh_hash = refresh.as_ref().map(|(_, hash)| hash.clone());
    let ttl = redemption.access_ttl_seconds;
    match state
        .write(move |ledger| ledger.redeem_code(redemption.clone(), now))
        .await?
    {
        Redeemed::Issued { access, compact } => Ok(TokenResponse {
            token_type: token_type(&access),
            access_token: compact,
            expires_in: u64::try_from(access.exp - now.s()).unwrap_or(ttl),
            scope: format(&access.svc_scope).ok(),
            refresh_token: refresh.map(|(token, _)| token),
            issued_token_type: None,
        }),
        Redeemed::Replayed => Err(code_invalid(
            "the code was used before: what it issued is revoked (RFC 6749 §4.1.2)",
        )),
        Redeemed::Invalid => Err(code_invalid(UNKNOWN)),
    }
}

/// What the ledger needs to redeem `code`: the grant root core makes of
/// the human's choice (kept with the code, read once by the caller; `aud`
/// the request's `resource`), the grant row
/// (bound to `holder`, the key of the request's proof, if any), the access
/// token's lifetime and id.
fn redemption(
    state: &AppState,
    code: &OAuthCode,
    choice: Choice,
    code_hash: Vec<u8>,
    holder: Option<Jkt>,
    now: Now,
) -> ApiResult<Redemption> {
    // An API key's consent is L1, an identity provider's sign-in L2.
    let level = match code.assurance.as_str() {
        "L1" => AssuranceLevel::L1,
        "L2" => AssuranceLevel::L2,
        _ => return Err(ApiError::internal("a code of an unknown sign-in")),
    };
    let human = HumanRef::parse(&code.human_ref).map_err(ApiError::internal)?;
    let mut root = root_claims(state, choice.token_request(), human, level, now)?;
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
        cnf_jkt: holder.as_ref().map(|jkt| jkt.as_str().to_owned()),
        created_at: now.ms(),
        expires_at: root.exp.saturating_mul(1000),
        last_used_at: now.ms(),
        revoked_at: None,
        revoke_reason: None,
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
        holder,
        refresh_hash: None,
        status_base: public_base(state),
        key: state.keys.current().active.clone(),
    })
}

/// The `refresh_token` grant (RFC 6749 §6): the current refresh token of a
/// live grant, for the grant's client; `resource`, when sent, the grant's
/// (RFC 8707 §2.2); `scope`, when sent, no wider than the grant (core's
/// delegation rules narrow the new access token; the grant keeps its
/// scope). One ledger job rotates the refresh token and renews the grant
/// root; a refresh token used before revokes the grant (RFC 9700
/// §4.14.2). Two refreshes with one token at once: one succeeds, the other
/// is reuse and ends the grant — there is no grace window. A grant bound to
/// a key is refreshed only with a proof by that key, and its new access
/// token is bound to it; an unbound grant is refreshed without a proof and
/// stays unbound (RFC 9449 §5; a proof there is refused, not taken as a
/// binding).
async fn refresh(
    state: &AppState,
    headers: &HeaderMap,
    form: TokenRequest,
) -> ApiResult<TokenResponse> {
    let now = state.clock.now();
    let holder = token_proof(state, headers, now).await?;
    let token = required(form.refresh_token.as_ref(), "refresh_token")?;
    let client_id = required(form.client_id.as_ref(), "client_id")?.to_owned();
    let scope = form
        .scope
        .as_deref()
        .map(RequestedScope::parse)
        .transpose()
        .map_err(|why| ApiError::bad_request(why.code(), why.to_string()))?;
    let (next, next_hash) = new_refresh_token();
    let oauth = &state.config.oauth;
    let job = Refresh {
        token_hash: Sha256::digest(token.as_bytes()).to_vec(),
        client_id,
        resource: form.resource,
        scope,
        next_hash,
        idle_seconds: i64::try_from(oauth.refresh_idle_days.get().saturating_mul(DAY_SECONDS))
            .unwrap_or(i64::MAX),
        access_ttl_seconds: oauth.access_token_ttl_seconds.get(),
        access_jti: random::ulid(now),
        holder,
        status_base: public_base(state),
        key: state.keys.current().active.clone(),
    };
    let ttl = job.access_ttl_seconds;
    match state
        .write(move |ledger| ledger.refresh(job.clone(), now))
        .await?
    {
        Refreshed::Issued { access, compact } => Ok(TokenResponse {
            token_type: token_type(&access),
            access_token: compact,
            expires_in: u64::try_from(access.exp - now.s()).unwrap_or(ttl),
            scope: format(&access.svc_scope).ok(),
            refresh_token: Some(next),
            issued_token_type: None,
        }),
        Refreshed::Refused(RefreshRefusal::Unknown) => Err(ApiError::bad_request(
            "refresh_token_invalid",
            "the refresh token is unknown, or was issued to another client",
        )),
        Refreshed::Refused(RefreshRefusal::Resource) => Err(ApiError::bad_request(
            "resource_mismatch",
            "resource must be the grant's (RFC 8707 §2.2)",
        )),
        Refreshed::Refused(RefreshRefusal::Scope(widening)) => Err(ApiError::bad_request(
            "scope_widening",
            format!("scope may only narrow the grant (RFC 6749 §6): {widening}"),
        )),
        Refreshed::Refused(RefreshRefusal::Proof(why)) => Err(proof_refused(&why)),
        Refreshed::Refused(RefreshRefusal::Family(why)) => {
            Err(ApiError::bad_request(why.code(), why.to_string()))
        }
    }
}

/// What a token exchange's delegation came to.
enum Exchanged {
    Delegated(Delegated),
    /// The delegation needs a person's approval, which a token exchange
    /// does not wait for.
    NeedsApproval,
}

/// Token exchange (RFC 8693 §2.1; plan §3.4): the subject token is the
/// parent VAT, verified as an agent call's token is (never looked up by
/// jti); a bound subject needs the request's proof by its key. The child
/// is made by `delegate`'s own path — core's parameter reader writes the
/// body `POST /v1/vat/delegate` would have received, read by the same
/// parser, and `Ledger::delegate` applies every delegation rule and writes
/// the `delegate` record. The child is bound to `holder_key` when given,
/// else to a bound subject's key, else to the proof's key when there is
/// one. No refresh token (§2.2.1). A client's mistake is a 400 with
/// OAuth's `error` for its code (§2.2.2), the denied record's `aar_id`
/// beside it.
async fn exchange_token(
    state: &AppState,
    headers: &HeaderMap,
    form: TokenRequest,
) -> ApiResult<TokenResponse> {
    exchanged(state, headers, form)
        .await
        .map_err(|mut refused| {
            // RFC 6749 §5.2: an OAuth error is a 400 unless said otherwise;
            // the delegation's own refusals (401, 403, 422) are the client's.
            if refused.status.is_client_error()
                && refused.status != axum::http::StatusCode::TOO_MANY_REQUESTS
            {
                refused.status = axum::http::StatusCode::BAD_REQUEST;
            }
            refused
        })
}

async fn exchanged(
    state: &AppState,
    headers: &HeaderMap,
    form: TokenRequest,
) -> ApiResult<TokenResponse> {
    let now = state.clock.now();
    let asked = exchange::parse(&form.parameters())
        .map_err(|why| ApiError::bad_request(why.code(), why.to_string()))?;
    let proof = token_proof(state, headers, now).await?;
    let (org, subject) = token_subject(state, now, &asked.subject_token)
        .await
        .map_err(|refused| {
            ApiError::bad_request(
                "subject_token_invalid",
                format!(
                    "the subject token was refused: {} ({})",
                    refused.detail, refused.code
                ),
            )
        })?;
    // RFC 9449 §5 for the token endpoint: a bound subject is exchanged
    // only by its holder.
    if let Some(cnf) = &subject.cnf {
        match &proof {
            None => return Err(proof_refused(&DpopError::Required)),
            Some(jkt) if jkt != &cnf.jkt => return Err(proof_refused(&DpopError::KeyMismatch)),
            Some(_) => {}
        }
    }
    let parent_aud = subject.aud.as_ref().map(Audience::as_str);
    let aud = asked
        .audience(parent_aud)
        .map_err(|why| ApiError::bad_request(why.code(), why.to_string()))?;
    if aud.as_deref() != parent_aud {
        return Err(ApiError::bad_request(
            "audience_mismatch",
            "the subject token has no audience, and an exchange keeps the subject's: \
             `resource` cannot give the child one",
        ));
    }
    let body = asked.delegate_body(&subject.sub, &subject.svc_scope);
    let canonical = serde_json::to_vec(&body).map_err(ApiError::internal)?;
    let body: DelegateRequest = serde_json::from_value(serde_json::Value::Object(body))
        .map_err(|why| ApiError::bad_request("mandate_grant_invalid", why.to_string()))?;
    let mut request = input::token_request(&body)?;
    if request.holder.is_none() && subject.cnf.is_none() {
        request.holder = proof;
    }
    let waiting = waiting_key(org, &subject.jti, &canonical, request.holder.as_ref());
    let delegation = Delegation {
        parent: subject.jti.clone(),
        request,
        child_random: random::bytes(),
        record_random: random::bytes(),
        status_base: public_base(state),
        traceparent: None,
        resumable: false,
    };
    state.limiters.org(org)?;
    let key = state.keys.current().active.clone();
    let asked = delegation.clone();
    let exchanged = state
        .write(
            move |ledger| match ledger.delegate(asked.clone(), &key, now) {
                Ok(delegated) => Ok(Exchanged::Delegated(delegated)),
                Err(LedgerError::IdempotencyKeyRequired) => Ok(Exchanged::NeedsApproval),
                Err(other) => Err(other),
            },
        )
        .await?;
    let rendered = match exchanged {
        Exchanged::Delegated(delegated) => {
            delegation_written(state, &delegated);
            render_delegation(&delegated)
        }
        Exchanged::NeedsApproval => {
            let delegation = Delegation {
                resumable: true,
                ..delegation
            };
            let resumed = delegation.clone();
            let signing = state.keys.current().active.clone();
            let resuming = signing.clone();
            let (delegated, rendered) = once_resuming(
                state,
                Some(waiting),
                now,
                move |ledger| ledger.delegate(delegation.clone(), &signing, now),
                move |ledger, stored| {
                    let aar_id = waiting_delegation(stored)?;
                    ledger.resume_delegation(&aar_id, resumed.clone(), &resuming, now)
                },
                render_delegation,
            )
            .await?;
            if let Some(delegated) = &delegated {
                delegation_written(state, delegated);
            }
            rendered
        }
    };
    exchange_answer(state, &rendered, now)
}

/// Where an exchange that waits for an approval keeps its answer (plan
/// §3.4): under the subject, keyed by the SHA-256 of everything its child
/// is made from — the delegation's body, as core wrote it from the
/// parameters, and the key the child is bound to — so only the same
/// exchange by the same subject finds it, and an approval given for one
/// child never issues another.
fn waiting_key(org: Org, subject: &Jti, body: &[u8], holder: Option<&Jkt>) -> IdempotencyKey {
    let mut digest = Sha256::new();
    digest.update(body);
    digest.update([0]);
    if let Some(holder) = holder {
        digest.update(holder.as_str().as_bytes());
    }
    let sha256: [u8; 32] = digest.finalize().into();
    IdempotencyKey {
        org,
        scope: format!("token_exchange {subject}"),
        key: URL_SAFE_NO_PAD.encode(sha256),
        body_sha256: sha256,
    }
}

/// An exchange's answer from its delegation's, as `POST /v1/vat/delegate`
/// would have rendered it (and as it is kept while an approval is
/// awaited): the child as RFC 8693 §2.2.1's response; waiting, OAuth's
/// `authorization_pending` with the approval; refused, the refusal's
/// code with the denied record.
fn exchange_answer(state: &AppState, rendered: &Rendered, now: Now) -> ApiResult<TokenResponse> {
    match rendered.status.as_u16() {
        201 => {
            let issued: IssuedToken =
                serde_json::from_slice(&rendered.body).map_err(ApiError::internal)?;
            let child: mandate_core::Claims =
                serde_json::from_value(issued.claims).map_err(ApiError::internal)?;
            Ok(TokenResponse {
                token_type: token_type(&child),
                access_token: issued.compact_jwt,
                expires_in: u64::try_from(child.exp - now.s()).unwrap_or(0),
                scope: format(&child.svc_scope).ok(),
                refresh_token: None,
                issued_token_type: Some(exchange::ACCESS_TOKEN_TYPE.to_owned()),
            })
        }
        202 => {
            let waiting: DelegationAwaitingApproval =
                serde_json::from_slice(&rendered.body).map_err(ApiError::internal)?;
            let url = format!(
                "{}/v1/vat/approvals/{}",
                public_base(state),
                waiting.approval.approval_id
            );
            Err(ApiError::bad_request(
                "approval_pending",
                "this delegation waits for a person's approval: repeat the same exchange once \
                 it is decided",
            )
            .with_record(&waiting.aar_id)
            .with_approval(MandateApproval {
                approval_id: waiting.approval.approval_id,
                url,
                expires_at: waiting.approval.expires_at,
            }))
        }
        _ => {
            let problem: serde_json::Value =
                serde_json::from_slice(&rendered.body).map_err(ApiError::internal)?;
            let code = problem["code"]
                .as_str()
                .and_then(known_code)
                .ok_or_else(|| ApiError::internal("a delegation's problem has no known code"))?;
            let detail = problem["detail"].as_str().unwrap_or_default();
            let refused = ApiError::new(rendered.status, code, detail);
            Err(match problem["aar_id"].as_str() {
                Some(aar_id) => refused.with_record(aar_id),
                None => refused,
            })
        }
    }
}

/// Token revocation (RFC 7009 §2.1): a form naming `token`, with
/// `token_type_hint` and `client_id` optional. A refresh token ends its
/// whole grant (the grant root revoked, so every access token of it); an
/// access token of a grant is revoked alone. An unknown, invalid, expired
/// or already revoked token is answered 200 like a revoked one (§2.2).
/// When `client_id` is given and the token was issued to another client,
/// nothing is revoked and the answer is `unauthorized_client` (§2.1: the
/// server verifies the token was issued to the client asking). The hint
/// is not needed: the two kinds of token differ by their form. CORS `*`.
#[utoipa::path(
    post,
    path = "/v1/oauth/revoke",
    operation_id = "oauth_revoke",
    tag = "oauth",
    request_body(content = RevocationRequest, content_type = "application/x-www-form-urlencoded"),
    responses(
        (status = 200, description = "Revoked, or nothing to revoke (RFC 7009 §2.2); no body"),
        (status = 400, description = "An OAuth error (RFC 7009 §2.2.1)", body = OAuthErrorBody),
        (status = 404, description = "`[oauth]` is off", body = crate::error::Problem, content_type = "application/problem+json"),
        (status = 503, description = "Storage cannot take writes right now (`temporarily_unavailable`)", body = OAuthErrorBody)
    )
)]
pub(crate) async fn revoke(
    State(state): State<AppState>,
    request: axum::extract::Request,
) -> Response {
    if let Err(off) = issuer(&state, REVOKE_PATH) {
        return off.into_response();
    }
    let answer = match OAuthForm::<RevocationRequest>::from_request(request, &state).await {
        Ok(OAuthForm(form)) => match revoke_token(&state, form).await {
            Ok(()) => axum::http::StatusCode::OK.into_response(),
            Err(refused) => OAuthError::from(refused).into_response(),
        },
        Err(refused) => refused.into_response(),
    };
    open_to_any_origin(answer)
}

async fn revoke_token(state: &AppState, form: RevocationRequest) -> ApiResult<()> {
    let now = state.clock.now();
    let client_id = form.client_id;
    let done = if form.token.starts_with(REFRESH_PREFIX) {
        let hash = Sha256::digest(form.token.as_bytes()).to_vec();
        state
            .write(move |ledger| ledger.revoke_refresh_token(&hash, client_id.as_deref(), now))
            .await?
    } else {
        // Only a token this server signed names a token to revoke: a
        // forged one naming another's jti revokes nothing.
        let options = VerifyOptions {
            issuer: Some(state.config.issuer.clone()),
            ..VerifyOptions::default()
        };
        let Ok(verified) =
            verify_ignoring_lifetime(&form.token, &state.keys.current().jwks, &options)
        else {
            return Ok(());
        };
        let access = verified.claims;
        state
            .write(move |ledger| ledger.revoke_access_token(&access, client_id.as_deref(), now))
            .await?
    };
    match done {
        ClientRevocation::Done => Ok(()),
        ClientRevocation::OtherClient => Err(ApiError::bad_request(
            "client_mismatch",
            "the token was not issued to this client_id: nothing was revoked (RFC 7009 §2.1)",
        )),
    }
}

//! The authorization endpoint and the consent APIs (docs/oauth.md): a
//! client sends the browser to `GET /v1/oauth/authorize`, which checks the
//! request, seals it and sends the browser on to the consent page; the
//! page, signed in with an API key that may `issue`, opens the sealed
//! request to show it and posts the human's decision, which answers where
//! the browser goes back to — with a code, or `access_denied`.
//!
//! Until the redirect URI is verified every refusal is a problem on the
//! page, never a redirect (RFC 6749 §4.1.2.1); after, refusals go back to
//! the client with `error`, `state` and `iss` (RFC 9207 §2). Nothing is
//! written until a signed-in human approves: the pending request travels
//! sealed in the consent page's URL (`secrets::Kek::seal_carried`).
//!
//! A client is either registered by an organisation (`mcl_…`) or named by
//! the `https` URL of its metadata document (CIMD,
//! `crate::client_documents`). Such a document is fetched only once a
//! person has signed in, so `/authorize` checks the URL's form alone and
//! cannot verify the redirect URI: every refusal there is on the page. The
//! document's `redirect_uris` verify it when the request is opened.

use std::sync::Arc;

use axum::extract::{FromRequestParts, RawQuery, State};
use axum::http::request::Parts;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use mandate_core::audience::check_resource_uri;
use mandate_core::oauth::OAuthError as Oauth;
use mandate_core::oauth::agent::oauth_agent_id;
use mandate_core::oauth::client_document::{ClientDocument, ClientIdUrl};
use mandate_core::oauth::pkce::CodeChallenge;
use mandate_core::oauth::redirect::{self, RedirectUri};
use mandate_core::oauth::scope::RequestedScope;
use mandate_core::{
    AgentId, AssuranceLevel, Constraints, Grant, HumanRef, Identity, Permission, Policy, Scope,
    TokenRequest, check_narrowing, human_ref, may_issue_for,
};
use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};
use serde::{Deserialize, Serialize};
use sha2::{Digest as _, Sha256};

use super::docs::Errors;
use super::extract::{ApiKeyAuth, Json, form_parameters};
use super::input;
use super::issue::root_claims;
use super::oauth_signin::{names_request, session_consenter};
use super::problems::widening_problem;
use crate::apikeys::Principal;
use crate::clock::{Now, iso_s};
use crate::error::{ApiError, ApiResult};
use crate::ledger::LedgerError;
use crate::model::oauth::{
    ConsentDecision, ConsentDecisionRequest, ConsentDecisionResponse, OpenRequest, OpenedRequest,
};
use crate::queries::QueryError;
use crate::secrets::Carried;
use crate::store::agents;
use crate::store::oauth::{self as rows, OAuthClient, OAuthCode};
use crate::store::orgs::Org;
use crate::{AppState, random};

/// The client of a request.
enum Client {
    /// Registered by the signer's organisation.
    Registered(OAuthClient),
    /// Named by its metadata document's URL (CIMD), with the document.
    Document(ClientIdUrl, Arc<ClientDocument>),
}

impl Client {
    fn id(&self) -> &str {
        match self {
            Client::Registered(client) => &client.client_id,
            Client::Document(url, _) => url.as_str(),
        }
    }

    /// The registered name, or the name the document says.
    fn name(&self) -> &str {
        match self {
            Client::Registered(client) => &client.name,
            Client::Document(_, document) => &document.client_name,
        }
    }

    /// The host of a document's URL: who the client really is (CIMD §6.4).
    fn host(&self) -> Option<&str> {
        match self {
            Client::Registered(_) => None,
            Client::Document(url, _) => Some(url.host()),
        }
    }

    fn kind(&self) -> &'static str {
        match self {
            Client::Registered(_) => "registered",
            Client::Document(..) => "document",
        }
    }
}

/// The client and redirect URI of an authorization request, as far as
/// `/authorize` can know them.
struct Named {
    client_id: String,
    redirect_uri: String,
    /// Whether the redirect URI is verified (a registered client's): only
    /// then may a refusal be sent there.
    verified: bool,
}

/// The authorization endpoint (RFC 6749 §3.1).
const AUTHORIZE_PATH: &str = "/v1/oauth/authorize";
/// The consent page, under `public_url`.
const CONSENT_PATH: &str = "/oauth/consent";
/// Longest `client_id`, in bytes.
const MAX_CLIENT_ID_BYTES: usize = 2048;
/// Longest `state` taken, in bytes.
const MAX_STATE_BYTES: usize = 1024;
/// Longest sealed request accepted, in characters.
const MAX_SEALED_CHARS: usize = 16_384;
/// A `dpop_jkt`: base64url of a SHA-256 (RFC 9449 §10, RFC 7638).
const JKT_CHARS: usize = 43;
/// What a code starts with.
const CODE_PREFIX: &str = "moc_";
/// What a query value keeps unescaped: RFC 3986 `unreserved`.
const QUERY_VALUE: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// The issuer, when `[oauth]` is on: `public_url` exactly (the start
/// checks refuse a deployment where it is unset, not https, or not equal
/// to `issuer`). Off, `path` answers as unrouted.
pub(crate) fn issuer<'a>(state: &'a AppState, path: &str) -> ApiResult<&'a str> {
    match (&state.config.oauth.enabled, &state.config.public_url) {
        (true, Some(issuer)) => Ok(issuer),
        _ => Err(ApiError::no_route(path)),
    }
}

/// An authorization request checked by [`authorize`], as sealed into the
/// consent page's URL.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Pending {
    /// The issuer that sealed it: a request opens only where it was made.
    pub(crate) iss: String,
    pub(crate) client_id: String,
    /// As sent (matched against the client's registered ones).
    pub(crate) redirect_uri: String,
    pub(crate) state: Option<String>,
    /// S256.
    pub(crate) code_challenge: String,
    pub(crate) resource: String,
    pub(crate) scope: Option<String>,
    pub(crate) dpop_jkt: Option<String>,
    /// Unix seconds after which it can no longer be decided.
    pub(crate) exp: i64,
}

/// `uri` with these query parameters added (after its own query, if any),
/// each value percent-encoded.
pub(crate) fn with_query(uri: &str, parameters: &[(&str, Option<&str>)]) -> String {
    let mut out = uri.to_owned();
    let mut separator = if uri.contains('?') { '&' } else { '?' };
    for (name, value) in parameters {
        if let Some(value) = value {
            out.push(separator);
            out.push_str(name);
            out.push('=');
            out.extend(utf8_percent_encode(value, QUERY_VALUE));
            separator = '&';
        }
    }
    out
}

/// A 303 to `location` (RFC 9700 §4.12: 303 where the browser is sent on).
fn see_other(location: &str) -> ApiResult<Response> {
    let value = HeaderValue::from_str(location).map_err(ApiError::internal)?;
    Ok((StatusCode::SEE_OTHER, [(header::LOCATION, value)]).into_response())
}

/// An error response sent back to a verified redirect URI (RFC 6749
/// §4.1.2.1), with `state` as sent and `iss` (RFC 9207 §2).
fn error_redirect(
    redirect_uri: &str,
    error: Oauth,
    description: &str,
    state: Option<&str>,
    iss: &str,
) -> String {
    with_query(
        redirect_uri,
        &[
            ("error", Some(error.as_str())),
            ("error_description", Some(description)),
            ("state", state),
            ("iss", Some(iss)),
        ],
    )
}

/// The one value of a parameter, if sent; sent twice is refused (RFC 6749
/// §3.1).
pub(crate) fn single<'a>(
    parameters: &'a [(String, Vec<String>)],
    name: &str,
) -> Result<Option<&'a str>, String> {
    match parameters.iter().find(|(known, _)| known == name) {
        None => Ok(None),
        Some((_, values)) if values.len() == 1 => Ok(values.first().map(String::as_str)),
        Some(_) => Err(format!("`{name}` is sent more than once (RFC 6749 §3.1)")),
    }
}

/// The client a request names, and the redirect URI it may be answered
/// at; every refusal here is shown on the page (nobody is redirected to a
/// URI not yet verified). A metadata document's URL is checked for its
/// form only (nothing is fetched before sign-in), and its redirect URI
/// only for its form.
async fn named_client(state: &AppState, parameters: &[(String, Vec<String>)]) -> ApiResult<Named> {
    let repeated = |detail| ApiError::bad_request("parameter_repeated", detail);
    let client_id = single(parameters, "client_id")
        .map_err(repeated)?
        .ok_or_else(|| ApiError::bad_request("parameter_missing", "`client_id` is required"))?;
    if client_id.len() > MAX_CLIENT_ID_BYTES {
        return Err(ApiError::bad_request(
            "client_id_invalid",
            format!("client_id may be at most {MAX_CLIENT_ID_BYTES} bytes"),
        ));
    }
    if ClientIdUrl::is_url(client_id) {
        let url = ClientIdUrl::parse(client_id)
            .map_err(|why| ApiError::bad_request(why.code(), why.to_string()))?;
        let requested = single(parameters, "redirect_uri")
            .map_err(repeated)?
            .ok_or_else(|| {
                ApiError::bad_request("parameter_missing", "`redirect_uri` is required")
            })?;
        RedirectUri::parse(requested).map_err(|why| {
            ApiError::bad_request(
                why.code(),
                format!("redirect_uri cannot be one a client registers: {why}"),
            )
        })?;
        return Ok(Named {
            client_id: url.as_str().to_owned(),
            redirect_uri: requested.to_owned(),
            verified: false,
        });
    }
    let id = client_id.to_owned();
    let client = state
        .store
        .lookup(move |conn| Ok::<_, QueryError>(rows::client_by_id(conn, &id)?))
        .await?
        .ok_or_else(|| {
            ApiError::not_found(
                "client_not_found",
                "no client is registered with this client_id",
            )
        })?;
    let requested = single(parameters, "redirect_uri")
        .map_err(repeated)?
        .ok_or_else(|| ApiError::bad_request("parameter_missing", "`redirect_uri` is required"))?;
    let registered: Vec<RedirectUri> = client
        .redirect_uris
        .iter()
        .filter_map(|uri| RedirectUri::parse(uri).ok())
        .collect();
    if redirect::find(&registered, requested).is_none() {
        return Err(ApiError::bad_request(
            "redirect_uri_mismatch",
            "redirect_uri is not one the client registered (compared exactly; an http loopback IP literal may use any port, RFC 8252 §7.3)",
        ));
    }
    Ok(Named {
        client_id: client.client_id,
        redirect_uri: requested.to_owned(),
        verified: true,
    })
}

/// Checks what follows the redirect URI, in the order of
/// docs/oauth.md; a refusal is the OAuth error and its description.
fn checked_request(
    parameters: &[(String, Vec<String>)],
    client_id: &str,
    redirect_uri: String,
    state: Option<String>,
    iss: &str,
    exp: i64,
) -> Result<Pending, (Oauth, String)> {
    let one = |name| single(parameters, name).map_err(|why| (Oauth::InvalidRequest, why));
    match one("response_type")? {
        None => {
            return Err((
                Oauth::InvalidRequest,
                "`response_type` is required".to_owned(),
            ));
        }
        Some("code") => {}
        Some(_) => {
            return Err((
                Oauth::UnsupportedResponseType,
                "response_type must be `code`".to_owned(),
            ));
        }
    }
    // RFC 7636 §4.4.1: without S256 PKCE the request is refused.
    let challenge =
        CodeChallenge::from_request(one("code_challenge")?, one("code_challenge_method")?)
            .map_err(|why| (why.oauth_error(), why.to_string()))?;
    // RFC 8707 §2: one absolute URI without fragment; MCP: required.
    let resource = single(parameters, "resource")
        .map_err(|why| (Oauth::InvalidTarget, why))?
        .ok_or_else(|| {
            (
                Oauth::InvalidTarget,
                "`resource` is required: the URI of the MCP server the token is for (RFC 8707)"
                    .to_owned(),
            )
        })?;
    check_resource_uri(resource).map_err(|why| (Oauth::InvalidTarget, why.to_string()))?;
    let scope = one("scope")?;
    if let Some(scope) = scope {
        RequestedScope::parse(scope).map_err(|why| (why.oauth_error(), why.to_string()))?;
    }
    let dpop_jkt = one("dpop_jkt")?;
    if let Some(jkt) = dpop_jkt
        && (jkt.len() != JKT_CHARS || URL_SAFE_NO_PAD.decode(jkt).is_err())
    {
        return Err((
            Oauth::InvalidRequest,
            "dpop_jkt must be a JWK SHA-256 thumbprint: 43 base64url characters (RFC 9449 §10)"
                .to_owned(),
        ));
    }
    Ok(Pending {
        iss: iss.to_owned(),
        client_id: client_id.to_owned(),
        redirect_uri,
        state,
        code_challenge: challenge.as_str().to_owned(),
        resource: resource.to_owned(),
        scope: scope.map(str::to_owned),
        dpop_jkt: dpop_jkt.map(str::to_owned),
        exp,
    })
}

/// The authorization endpoint (RFC 6749 §4.1.1): checks the request in
/// order — the client and its redirect URI first, refused on the page
/// (a problem, never a redirect); then `response_type`, S256 PKCE (RFC
/// 7636 §4.3), `resource` (RFC 8707 §2), `scope`, `state`, `dpop_jkt`,
/// refused back at the redirect URI with `error`, `state` and `iss` (RFC
/// 9207 §2) — seals it and sends the browser to the consent page (303).
/// A client named by its metadata document's URL has no verified redirect
/// URI yet (nothing is fetched before sign-in): its refusals are all on
/// the page (`authorization_request_refused`). Writes nothing, fetches
/// nothing. 404 unless `[oauth]` is on.
#[utoipa::path(
    get,
    path = "/v1/oauth/authorize",
    operation_id = "oauth_authorize",
    tag = "oauth",
    params(
        ("response_type" = String, Query, description = "`code`"),
        ("client_id" = String, Query, description = "A client registered by the organisation (`mcl_…`), or the https URL of the client's metadata document (fetched only after sign-in)"),
        ("redirect_uri" = String, Query, description = "One of the client's, exactly (an http loopback IP literal may use any port)"),
        ("code_challenge" = String, Query, description = "S256 PKCE challenge: 43 base64url characters"),
        ("code_challenge_method" = String, Query, description = "`S256`"),
        ("resource" = String, Query, description = "The MCP server the token is for (RFC 8707)"),
        ("scope" = Option<String>, Query, description = "Actions and resource patterns, separated by spaces"),
        ("state" = Option<String>, Query, description = "Returned as sent (at most 1024 bytes)"),
        ("dpop_jkt" = Option<String>, Query, description = "RFC 9449 §10 key thumbprint"),
    ),
    responses(
        (status = 303, description = "To the consent page (the request sealed in its URL), or back to the redirect URI with `error`, `state` and `iss`"),
        Errors
    )
)]
pub(crate) async fn authorize(
    State(state): State<AppState>,
    RawQuery(query): RawQuery,
) -> ApiResult<Response> {
    let iss = issuer(&state, AUTHORIZE_PATH)?;
    let now = state.clock.now();
    let parameters = form_parameters(query.unwrap_or_default().as_bytes())?;
    let named = named_client(&state, &parameters).await?;
    let redirect_uri = named.redirect_uri.clone();
    // From here on, refusals go back to the client when its redirect URI
    // is verified; a metadata document's client hears them on the page.
    let (client_state, state_refused) = match single(&parameters, "state") {
        Ok(Some(value)) if value.len() > MAX_STATE_BYTES => (
            None,
            Some(format!("state may be at most {MAX_STATE_BYTES} bytes")),
        ),
        Ok(value) => (value.map(str::to_owned), None),
        Err(why) => (None, Some(why)),
    };
    let exp = now.s().saturating_add(
        i64::try_from(state.config.oauth.request_ttl_seconds.get()).unwrap_or(i64::MAX),
    );
    let checked = checked_request(
        &parameters,
        &named.client_id,
        redirect_uri.clone(),
        client_state.clone(),
        iss,
        exp,
    )
    .and_then(|pending| match state_refused {
        Some(why) => Err((Oauth::InvalidRequest, why)),
        None => Ok(pending),
    });
    let pending = match checked {
        Ok(pending) => pending,
        Err((error, why)) if !named.verified => {
            return Err(ApiError::bad_request(
                "authorization_request_refused",
                format!("{}: {why}", error.as_str()),
            ));
        }
        Err((error, why)) => {
            return see_other(&error_redirect(
                &redirect_uri,
                error,
                &why,
                client_state.as_deref(),
                iss,
            ));
        }
    };
    let plain = serde_json::to_vec(&pending).map_err(ApiError::internal)?;
    let sealed = state
        .kek
        .seal_carried(Carried::Request, &plain)
        .map_err(ApiError::internal)?;
    see_other(&with_query(
        &format!("{iss}{CONSENT_PATH}"),
        &[("request", Some(&URL_SAFE_NO_PAD.encode(sealed)))],
    ))
}

fn request_invalid(detail: &str) -> ApiError {
    ApiError::bad_request("request_invalid", detail.to_owned())
}

/// Opens a sealed request: made by this deployment (its key file and its
/// issuer), unchanged, not expired — else 400 `request_invalid`. Also its
/// hash, which names it in `oauth_codes`.
pub(crate) fn open_pending(
    state: &AppState,
    sealed: &str,
    now: Now,
) -> ApiResult<(Pending, Vec<u8>)> {
    const REFUSED: &str = "the authorization request is not one this server made, or was changed; start again from the client";
    if sealed.len() > MAX_SEALED_CHARS {
        return Err(request_invalid(REFUSED));
    }
    let bytes = URL_SAFE_NO_PAD
        .decode(sealed)
        .map_err(|_| request_invalid(REFUSED))?;
    let plain = state
        .kek
        .open_carried(Carried::Request, &bytes)
        .map_err(|_| request_invalid(REFUSED))?;
    let pending: Pending = serde_json::from_slice(&plain).map_err(|_| request_invalid(REFUSED))?;
    if Some(pending.iss.as_str()) != state.config.public_url.as_deref() {
        return Err(request_invalid(REFUSED));
    }
    if now.s() >= pending.exp {
        return Err(request_invalid(
            "the authorization request has expired; start again from the client",
        ));
    }
    Ok((pending, Sha256::digest(sealed.as_bytes()).to_vec()))
}

/// Who consents: the person an API key that may `issue` was made for (L1;
/// a key made for nobody — the admin key, or one without an e-mail —
/// cannot), or a person signed in by an identity provider for this one
/// request (L2, `oauth_signin`).
pub(crate) struct Consenter {
    pub(crate) org: Org,
    pub(crate) human: HumanRef,
    /// What the organisation knows the person by.
    pub(crate) label: String,
    /// The API key that consents, if a key does.
    pub(crate) approved_by: Option<String>,
    /// Whether they may grant for another human's agent.
    pub(crate) for_anyone: bool,
    pub(crate) level: AssuranceLevel,
    /// A session's request (the hash of the sealed request it may decide).
    pub(crate) request: Option<String>,
}

impl Consenter {
    fn of_key(state: &AppState, principal: &Principal) -> ApiResult<Consenter> {
        let email = principal.email.as_deref().ok_or_else(|| {
            ApiError::forbidden(
                "consent_needs_email",
                "a consent is given by a person: sign in with an API key made for your e-mail",
            )
        })?;
        let identity = Identity::email(email).map_err(|_| {
            ApiError::forbidden(
                "consent_needs_email",
                "this API key's e-mail is not one a consent can name",
            )
        })?;
        Ok(Consenter {
            org: principal.org,
            human: human_ref(&state.human_secret, &identity),
            label: email.to_lowercase(),
            approved_by: Some(principal.id.clone()),
            for_anyone: principal.may(Permission::IssueForAnyone),
            level: AssuranceLevel::L1,
            request: None,
        })
    }

    /// Checks that the consenter may act on the request with this hash: a
    /// session only on its own (403 `consent_session_other_request`).
    fn may_decide(&self, request_hash: &[u8]) -> ApiResult<()> {
        match &self.request {
            Some(named) if !names_request(named, request_hash) => Err(ApiError::forbidden(
                "consent_session_other_request",
                "this sign-in was for another authorization request: sign in again from this one",
            )),
            _ => Ok(()),
        }
    }
}

impl FromRequestParts<AppState> for Consenter {
    type Rejection = ApiError;

    /// An API key when the request carries one (`Authorization`), else
    /// the consent session's cookie; neither is 401.
    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> ApiResult<Consenter> {
        if !parts.headers.contains_key(header::AUTHORIZATION)
            && let Some(consenter) = session_consenter(state, &parts.headers, state.clock.now())?
        {
            return Ok(consenter);
        }
        let ApiKeyAuth(principal) = ApiKeyAuth::from_request_parts(parts, state).await?;
        Consenter::of_key(state, &principal)
    }
}

/// The pending request's client: registered in the signer's organisation
/// (another organisation's is unknown), or named by its metadata
/// document's URL — fetched now (or kept from a fetch before), which must
/// list the request's redirect URI (compared as a registered one is).
/// Until that holds, the page shows the refusal and nobody is redirected.
async fn client_of(state: &AppState, org: Org, pending: &Pending, now: Now) -> ApiResult<Client> {
    if ClientIdUrl::is_url(&pending.client_id) {
        let url = ClientIdUrl::parse(&pending.client_id)
            .map_err(|_| request_invalid("the sealed request's client_id does not read"))?;
        let document = state
            .client_documents
            .get(&url, now)
            .await
            .map_err(|refused| {
                ApiError::new(
                    StatusCode::UNPROCESSABLE_ENTITY,
                    "client_document_refused",
                    format!(
                        "the client's metadata document at {} cannot be used: {refused}",
                        url.as_str()
                    ),
                )
            })?;
        if redirect::find(&document.redirect_uris, &pending.redirect_uri).is_none() {
            return Err(ApiError::bad_request(
                "redirect_uri_mismatch",
                "redirect_uri is not one the client's metadata document lists (compared exactly; an http loopback IP literal may use any port, RFC 8252 §7.3)",
            ));
        }
        return Ok(Client::Document(url, document));
    }
    let id = pending.client_id.clone();
    state
        .store
        .lookup(move |conn| Ok::<_, QueryError>(rows::client(conn, org, &id)?))
        .await?
        .map(Client::Registered)
        .ok_or_else(|| {
            ApiError::not_found(
                "client_not_found",
                "the client of this request is not registered in your organisation",
            )
        })
}

/// The `scope` a pending request asked for (checked at `/authorize`).
fn requested_scope(pending: &Pending) -> ApiResult<RequestedScope> {
    pending
        .scope
        .as_deref()
        .map(RequestedScope::parse)
        .transpose()
        .map(Option::unwrap_or_default)
        .map_err(|_| request_invalid("the sealed request's scope does not read"))
}

/// Opens a pending authorization request for the consent page: the
/// client, where the browser goes back to, the resource, what is asked
/// and for which agent by default. Needs an API key that may `issue`,
/// made for a person (who consents as themselves). A client named by its
/// metadata document's URL is fetched now (422 `client_document_refused`,
/// with the reason, when it cannot be used) and its document must list the
/// redirect URI.
#[utoipa::path(
    post,
    path = "/v1/oauth/requests/open",
    operation_id = "oauth_open_request",
    tag = "oauth",
    request_body = OpenRequest,
    responses((status = 200, description = "The request", body = OpenedRequest), Errors)
)]
pub(crate) async fn open_request(
    State(state): State<AppState>,
    consenter: Consenter,
    Json(body): Json<OpenRequest>,
) -> ApiResult<axum::Json<OpenedRequest>> {
    issuer(&state, "/v1/oauth/requests/open")?;
    let now = state.clock.now();
    let (pending, request_hash) = open_pending(&state, &body.request, now)?;
    consenter.may_decide(&request_hash)?;
    let human = consenter.human.clone();
    let client = client_of(&state, consenter.org, &pending, now).await?;
    let requested = requested_scope(&pending)?;
    let redirect =
        RedirectUri::parse(&pending.redirect_uri).map_err(|_| request_invalid("redirect_uri"))?;
    Ok(axum::Json(OpenedRequest {
        client_id: client.id().to_owned(),
        client_name: client.name().to_owned(),
        client_kind: client.kind().to_owned(),
        client_host: client.host().map(str::to_owned),
        redirect_host: redirect.host().to_owned(),
        redirect_loopback: redirect.kind().is_loopback(),
        redirect_uri: pending.redirect_uri,
        resource: pending.resource,
        scope: pending.scope,
        actions: requested
            .actions()
            .iter()
            .map(ToString::to_string)
            .collect(),
        resources: requested
            .resources()
            .iter()
            .map(ToString::to_string)
            .collect(),
        agent_id: oauth_agent_id(client.id(), &human).to_string(),
        expires_at: iso_s(pending.exp),
        signed_in_as: consenter.label,
        assurance: consenter.level.as_str().to_owned(),
    }))
}

/// What a human chose, kept with the code (`oauth_codes.choice`) until
/// the code is redeemed: everything the grant root is made of.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Choice {
    pub(crate) agent_id: AgentId,
    pub(crate) scope: Scope,
    pub(crate) constraints: Constraints,
    pub(crate) policy: Policy,
    pub(crate) ttl_seconds: Option<u64>,
    /// The API key that approved; none for a person signed in by an
    /// identity provider.
    pub(crate) approved_by: Option<String>,
    /// Whether the consenting key may issue for another human's agent.
    pub(crate) for_anyone: bool,
    /// What the organisation knows the human by (the key's e-mail, or the
    /// ID token's name or e-mail, else its subject).
    pub(crate) label: String,
    /// The client's name as the page showed it.
    pub(crate) client_name: String,
    /// Whether the client's metadata document, as read at consent,
    /// registered the `refresh_token` grant type (a client named by its
    /// document: the code keeps what the document said; a code stored
    /// before this member reads as none).
    #[serde(default)]
    pub(crate) document_refresh: bool,
}

impl Choice {
    /// Core's token request for the grant root.
    pub(crate) fn token_request(&self) -> TokenRequest {
        TokenRequest {
            agent_id: self.agent_id.clone(),
            scope: self.scope.clone(),
            constraints: self.constraints.clone(),
            policy: self.policy.clone(),
            ttl_seconds: self.ttl_seconds,
            holder: None,
        }
    }
}

/// The most a consent may grant: the actions asked for × the resource
/// patterns asked for, nothing else, for at most the longest lifetime. A
/// request without `scope` (RFC 6749 §3.3 lets the authorization server
/// follow "the resource owner's instructions") is granted what the person
/// names: the actions and patterns they chose are the ceiling; a request
/// that named resources but no action, likewise for its actions.
fn ceiling(requested: &RequestedScope, chosen: &Scope, now_s: i64) -> ApiResult<Grant> {
    let resources = if requested.resources().is_empty() {
        chosen.resources().to_vec()
    } else {
        requested.resources().to_vec()
    };
    let actions = if requested.actions().is_empty() {
        chosen.actions().to_vec()
    } else {
        requested.actions().to_vec()
    };
    let scope = Scope::new(resources, actions).map_err(|_| {
        ApiError::forbidden(
            "scope_widening",
            "the grant names no action: there is nothing to grant",
        )
    })?;
    Ok(Grant {
        scope,
        constraints: Constraints::default(),
        policy: Policy::default(),
        expires_at: now_s.saturating_add(
            i64::try_from(mandate_core::limits::MAX_TTL_SECONDS).unwrap_or(i64::MAX),
        ),
        audience: None,
    })
}

/// Checks a chosen grant as the redemption will issue it: core's rules for
/// a root token (lifetime, approvals that can match), nothing wider than
/// the request (every widening named), and an agent the human may act for.
async fn checked_choice(
    state: &AppState,
    consenter: &Consenter,
    pending: &Pending,
    request: &TokenRequest,
    now: Now,
) -> ApiResult<()> {
    let chosen = root_claims(
        state,
        request.clone(),
        consenter.human.clone(),
        consenter.level,
        now,
    )?;
    let choice = Grant {
        scope: chosen.svc_scope,
        constraints: chosen.svc_constraints.unwrap_or_default(),
        policy: chosen.svc_policy.unwrap_or_default(),
        expires_at: chosen.exp,
        audience: None,
    };
    let ceiling = ceiling(&requested_scope(pending)?, &choice.scope, now.s())?;
    check_narrowing(&choice, &ceiling).map_err(|widening| widening_problem(&widening))?;
    let (org, agent) = (consenter.org, request.agent_id.as_str().to_owned());
    let registered = state
        .store
        .lookup(move |conn| Ok::<_, QueryError>(agents::registered(conn, org, &agent)?))
        .await?;
    let for_anyone = consenter.for_anyone;
    let allowed = match registered.map(|agent| agent.owner) {
        None => true,
        Some(None) => for_anyone,
        Some(Some(owner)) => may_issue_for(Some(&owner), &consenter.human, for_anyone),
    };
    if allowed {
        Ok(())
    } else {
        Err(LedgerError::AgentNotYours(
            "this agent id is registered to another human; granting for it needs the issue_for_anyone permission (an owner's key)",
        )
        .into())
    }
}

/// The human's decision on a pending request (JSON only; an API key that
/// may `issue`, made for the person who consents). `deny` answers the
/// redirect with `access_denied` and writes nothing; `approve` checks the
/// grant — never wider than asked (`scope_widening`, naming each field),
/// for an agent of the human's — stores a code (60 s by default, its hash
/// only; one per request: a second approval is 409 `request_answered`) and
/// answers the redirect with `code`, `state` as sent and `iss` (RFC 6749
/// §4.1.2, RFC 9207 §2). The page sends the browser there.
#[utoipa::path(
    post,
    path = "/v1/oauth/requests/decision",
    operation_id = "oauth_decide_request",
    tag = "oauth",
    request_body = ConsentDecisionRequest,
    responses((status = 200, description = "Where the browser goes", body = ConsentDecisionResponse), Errors)
)]
pub(crate) async fn decide_request(
    State(state): State<AppState>,
    consenter: Consenter,
    Json(body): Json<ConsentDecisionRequest>,
) -> ApiResult<axum::Json<ConsentDecisionResponse>> {
    let iss = issuer(&state, "/v1/oauth/requests/decision")?.to_owned();
    let now = state.clock.now();
    let (pending, request_hash) = open_pending(&state, &body.request, now)?;
    consenter.may_decide(&request_hash)?;
    let client = client_of(&state, consenter.org, &pending, now).await?;
    let grant = match body.decision {
        ConsentDecision::Deny => {
            return Ok(axum::Json(ConsentDecisionResponse {
                redirect: error_redirect(
                    &pending.redirect_uri,
                    Oauth::AccessDenied,
                    "the person asked did not grant access",
                    pending.state.as_deref(),
                    &iss,
                ),
            }));
        }
        ConsentDecision::Approve => body.grant.ok_or_else(|| {
            ApiError::invalid("grant", "missing_field", "an approval names the grant")
        })?,
    };
    let agent = match &grant.agent_id {
        Some(agent) => agent.clone(),
        None => oauth_agent_id(client.id(), &consenter.human).to_string(),
    };
    let request = input::consent_request(&agent, &grant)?;
    checked_choice(&state, &consenter, &pending, &request, now).await?;
    let choice = Choice {
        agent_id: request.agent_id,
        scope: request.scope,
        constraints: request.constraints,
        policy: request.policy,
        ttl_seconds: request.ttl_seconds,
        approved_by: consenter.approved_by.clone(),
        for_anyone: consenter.for_anyone,
        label: consenter.label.clone(),
        client_name: client.name().to_owned(),
        document_refresh: match &client {
            Client::Document(_, document) => document.refresh_token,
            Client::Registered(_) => false,
        },
    };
    let code = format!(
        "{CODE_PREFIX}{}",
        URL_SAFE_NO_PAD.encode(random::bytes::<32>())
    );
    let ttl_ms = i64::try_from(state.config.oauth.code_ttl_seconds.get())
        .unwrap_or(i64::MAX)
        .saturating_mul(1000);
    let row = OAuthCode {
        code_hash: Sha256::digest(code.as_bytes()).to_vec(),
        request_hash,
        org: consenter.org,
        human_ref: consenter.human.as_str().to_owned(),
        assurance: consenter.level.as_str().to_owned(),
        client_id: client.id().to_owned(),
        redirect_uri: pending.redirect_uri.clone(),
        code_challenge: pending.code_challenge,
        resource: Some(pending.resource),
        dpop_jkt: pending.dpop_jkt,
        choice: serde_json::to_string(&choice).map_err(ApiError::internal)?,
        created_at: now.ms(),
        expires_at: now.ms().saturating_add(ttl_ms),
        used_at: None,
        grant_id: None,
    };
    state.write(move |ledger| ledger.approve(&row)).await?;
    Ok(axum::Json(ConsentDecisionResponse {
        redirect: with_query(
            &pending.redirect_uri,
            &[
                ("code", Some(&code)),
                ("state", pending.state.as_deref()),
                ("iss", Some(&iss)),
            ],
        ),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_values_are_escaped_and_appended_after_the_uris_own() {
        assert_eq!(
            with_query(
                "https://app.example/cb",
                &[
                    ("code", Some("moc_a-b_c")),
                    ("state", None),
                    ("iss", Some("https://m.example/t"))
                ]
            ),
            "https://app.example/cb?code=moc_a-b_c&iss=https%3A%2F%2Fm.example%2Ft"
        );
        assert_eq!(
            with_query("https://app.example/cb?x=1", &[("state", Some("a b&c=d~"))]),
            "https://app.example/cb?x=1&state=a%20b%26c%3Dd~"
        );
    }
}

//! The organisation's OAuth clients registered in advance (MCP
//! "Client Registration": pre-registration): public clients, without a
//! secret, each with the redirect URIs the authorization server may send
//! a browser back to. Every operation needs `manage_clients` (owners);
//! another organisation's client answers exactly like one that does not
//! exist; with `[oauth]` off the paths answer 404, as if unrouted.
//!
//! And the resources whose MCP gates relay clients' proofs, with their
//! relay keys (`manage_clients`, as clients).
//!
//! And the grants consents made (what each client holds for each human):
//! listed with `read` — a developer key sees its own human's only — and
//! revoked with `revoke`, which ends the grant as RFC 7009 revocation of
//! its refresh token does.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use mandate_core::audience::check_resource_uri;
use mandate_core::oauth::redirect::RedirectUri;
use mandate_core::{Identity, Jkt, Role, human_ref};
use serde::Deserialize;
use utoipa::IntoParams;

use super::docs::Errors;
use super::extract::{ApiKeyAuth, Json};
use super::input;
use super::query::{Query, limit};
use crate::clock::iso_ms;
use crate::error::{ApiError, ApiResult};
use crate::ledger::LedgerError;
use crate::model::oauth::{
    ClientBody, ClientList, CreateClientRequest, CreateResourceRequest, GrantBody, GrantList,
    ResourceBody, ResourceList,
};
use crate::queries::{self, QueryError};
use crate::store::oauth::{self as rows, OAuthClient, OAuthGrant, OAuthResource};
use crate::{AppState, random};

/// Longest client name, in characters.
const MAX_CLIENT_NAME_CHARS: usize = 100;
/// Most redirect URIs of one client.
const MAX_REDIRECT_URIS: usize = 10;
/// The grant types a client may be registered for, and its default.
const GRANT_TYPES: [&str; 2] = ["authorization_code", "refresh_token"];

/// `Ok` when `[oauth]` is on; else the 404 of an unrouted `path`.
fn oauth_on(state: &AppState, path: &str) -> ApiResult<()> {
    if state.config.oauth.enabled {
        Ok(())
    } else {
        Err(ApiError::no_route(path))
    }
}

fn client_body(client: OAuthClient) -> ClientBody {
    ClientBody {
        client_id: client.client_id,
        name: client.name,
        redirect_uris: client.redirect_uris,
        grant_types: client.grant_types,
        token_endpoint_auth_method: "none".to_owned(),
        created_at: iso_ms(client.created_at),
        created_by: client.created_by,
    }
}

/// One redirect URI, by core's rule — the one the authorization request's
/// `redirect_uri` is later matched with (`mandate_core::oauth::redirect`):
/// absolute `https`, or `http` on a loopback host; no fragment (RFC 6749
/// §3.1.2), no user information, at most 2048 bytes, nothing outside URI
/// characters. Stored as written: redirects are matched as written.
fn redirect_uri(index: usize, text: &str) -> ApiResult<String> {
    let field = format!("redirect_uris[{index}]");
    RedirectUri::parse(text)
        .map(|uri| uri.as_str().to_owned())
        .map_err(|why| ApiError::invalid(&field, "redirect_uri_invalid", format!("{field}: {why}")))
}

/// The redirect URIs: 1 to [`MAX_REDIRECT_URIS`], each valid and given
/// once.
fn redirect_uris(texts: &[String]) -> ApiResult<Vec<String>> {
    if texts.is_empty() {
        return Err(ApiError::invalid(
            "redirect_uris",
            "empty_list",
            "redirect_uris must name at least one URI",
        ));
    }
    if texts.len() > MAX_REDIRECT_URIS {
        return Err(ApiError::invalid(
            "redirect_uris",
            "list_too_long",
            format!("redirect_uris may hold at most {MAX_REDIRECT_URIS} entries"),
        ));
    }
    let mut uris: Vec<String> = Vec::with_capacity(texts.len());
    for (index, text) in texts.iter().enumerate() {
        let uri = redirect_uri(index, text)?;
        if uris.contains(&uri) {
            return Err(ApiError::invalid(
                "redirect_uris",
                "duplicate_entry",
                format!("redirect_uris: {uri:?} is given twice"),
            ));
        }
        uris.push(uri);
    }
    Ok(uris)
}

/// The grant types: `authorization_code` always, `refresh_token` if
/// asked; both by default.
fn grant_types(asked: Option<&[String]>) -> ApiResult<Vec<String>> {
    let Some(asked) = asked else {
        return Ok(GRANT_TYPES.iter().map(|&kind| kind.to_owned()).collect());
    };
    if let Some(unknown) = asked
        .iter()
        .find(|kind| !GRANT_TYPES.contains(&kind.as_str()))
    {
        return Err(ApiError::invalid(
            "grant_types",
            "grant_type_unsupported",
            format!(
                "grant_types: {unknown:?} is not one of {}",
                GRANT_TYPES.join(", ")
            ),
        ));
    }
    if !asked.iter().any(|kind| kind == "authorization_code") {
        return Err(ApiError::invalid(
            "grant_types",
            "grant_type_unsupported",
            "grant_types must hold authorization_code: the only grant that starts with a human",
        ));
    }
    Ok(GRANT_TYPES
        .iter()
        .filter(|kind| asked.iter().any(|asked| asked == *kind))
        .map(|&kind| kind.to_owned())
        .collect())
}

/// Registers a public client. Its `client_id` (`mcl_<ulid>`) is what the
/// client sends; it has no secret.
#[utoipa::path(
    post,
    path = "/v1/oauth/clients",
    tag = "oauth",
    request_body = CreateClientRequest,
    responses((status = 201, description = "The client", body = ClientBody), Errors)
)]
pub(crate) async fn create_client(
    State(state): State<AppState>,
    ApiKeyAuth(principal): ApiKeyAuth,
    Json(body): Json<CreateClientRequest>,
) -> ApiResult<(StatusCode, axum::Json<ClientBody>)> {
    oauth_on(&state, "/v1/oauth/clients")?;
    let now = state.clock.now();
    let name = input::text("name", Some(&body.name), MAX_CLIENT_NAME_CHARS)?
        .filter(|name| !name.trim().is_empty())
        .ok_or_else(|| ApiError::invalid("name", "empty_text", "name must not be empty"))?;
    let client = OAuthClient {
        client_id: format!("mcl_{}", random::ulid(now)),
        org: principal.org,
        name,
        redirect_uris: redirect_uris(&body.redirect_uris)?,
        grant_types: grant_types(body.grant_types.as_deref())?,
        created_by: principal.id,
        created_at: now.ms(),
    };
    let client = state
        .write(move |ledger| ledger.create_client(&client))
        .await?;
    Ok((StatusCode::CREATED, axum::Json(client_body(client))))
}

/// The organisation's clients, newest first.
#[utoipa::path(
    get,
    path = "/v1/oauth/clients",
    tag = "oauth",
    responses((status = 200, description = "The clients", body = ClientList), Errors)
)]
pub(crate) async fn list_clients(
    State(state): State<AppState>,
    ApiKeyAuth(principal): ApiKeyAuth,
) -> ApiResult<axum::Json<ClientList>> {
    oauth_on(&state, "/v1/oauth/clients")?;
    let org = principal.org;
    let clients = state
        .store
        .lookup(move |conn| Ok::<_, QueryError>(rows::clients(conn, org)?))
        .await?;
    Ok(axum::Json(ClientList {
        clients: clients.into_iter().map(client_body).collect(),
    }))
}

/// Deletes a client: from now on it is unknown.
#[utoipa::path(
    delete,
    path = "/v1/oauth/clients/{client_id}",
    tag = "oauth",
    params(("client_id" = String, Path, description = "The client, `mcl_<ulid>`")),
    responses((status = 204, description = "Deleted"), Errors)
)]
pub(crate) async fn delete_client(
    State(state): State<AppState>,
    ApiKeyAuth(principal): ApiKeyAuth,
    Path(client_id): Path<String>,
) -> ApiResult<StatusCode> {
    oauth_on(&state, "/v1/oauth/clients/{client_id}")?;
    let now = state.clock.now();
    let org = principal.org;
    state
        .write(move |ledger| ledger.delete_client(org, &client_id, now))
        .await
        .map_err(|error: LedgerError| ApiError::from(error))?;
    Ok(StatusCode::NO_CONTENT)
}

/// Most relay keys of one resource.
const MAX_RELAY_JKTS: usize = 10;

fn resource_body(resource: OAuthResource) -> ResourceBody {
    ResourceBody {
        resource_id: resource.resource_id,
        resource: resource.resource,
        relay_jkts: resource.relay_jkts,
        created_at: iso_ms(resource.created_at),
        created_by: resource.created_by,
    }
}

/// The relay key thumbprints: 1 to [`MAX_RELAY_JKTS`], each an RFC 7638
/// thumbprint and given once.
fn relay_jkts(texts: &[String]) -> ApiResult<Vec<String>> {
    if texts.is_empty() {
        return Err(ApiError::invalid(
            "relay_jkts",
            "empty_list",
            "relay_jkts must name at least one relay key",
        ));
    }
    if texts.len() > MAX_RELAY_JKTS {
        return Err(ApiError::invalid(
            "relay_jkts",
            "list_too_long",
            format!("relay_jkts may hold at most {MAX_RELAY_JKTS} entries"),
        ));
    }
    let mut jkts: Vec<String> = Vec::with_capacity(texts.len());
    for (index, text) in texts.iter().enumerate() {
        let field = format!("relay_jkts[{index}]");
        let jkt = Jkt::parse(text)
            .map_err(|e| ApiError::invalid(&field, e.code(), format!("{field}: {e}")))?;
        if jkts.iter().any(|seen| seen == jkt.as_str()) {
            return Err(ApiError::invalid(
                "relay_jkts",
                "duplicate_entry",
                format!("relay_jkts: {text:?} is given twice"),
            ));
        }
        jkts.push(jkt.as_str().to_owned());
    }
    Ok(jkts)
}

/// Registers a resource and the relay keys of its MCP gates: a gate
/// acting at Mandate for a client whose token names this resource in
/// `aud` signs its `Mandate-Relay` proof with one of these keys.
#[utoipa::path(
    post,
    path = "/v1/oauth/resources",
    tag = "oauth",
    request_body = CreateResourceRequest,
    responses((status = 201, description = "The resource", body = ResourceBody), Errors)
)]
pub(crate) async fn create_resource(
    State(state): State<AppState>,
    ApiKeyAuth(principal): ApiKeyAuth,
    Json(body): Json<CreateResourceRequest>,
) -> ApiResult<(StatusCode, axum::Json<ResourceBody>)> {
    oauth_on(&state, "/v1/oauth/resources")?;
    let now = state.clock.now();
    check_resource_uri(&body.resource)
        .map_err(|why| ApiError::invalid("resource", why.code(), format!("resource: {why}")))?;
    let resource = OAuthResource {
        resource_id: format!("ors_{}", random::ulid(now)),
        org: principal.org,
        resource: body.resource,
        relay_jkts: relay_jkts(&body.relay_jkts)?,
        created_by: principal.id,
        created_at: now.ms(),
    };
    let resource = state
        .write(move |ledger| ledger.create_resource(&resource))
        .await?;
    Ok((StatusCode::CREATED, axum::Json(resource_body(resource))))
}

/// The organisation's resources, newest first.
#[utoipa::path(
    get,
    path = "/v1/oauth/resources",
    tag = "oauth",
    responses((status = 200, description = "The resources", body = ResourceList), Errors)
)]
pub(crate) async fn list_resources(
    State(state): State<AppState>,
    ApiKeyAuth(principal): ApiKeyAuth,
) -> ApiResult<axum::Json<ResourceList>> {
    oauth_on(&state, "/v1/oauth/resources")?;
    let org = principal.org;
    let resources = state
        .store
        .lookup(move |conn| Ok::<_, QueryError>(rows::resources(conn, org)?))
        .await?;
    Ok(axum::Json(ResourceList {
        resources: resources.into_iter().map(resource_body).collect(),
    }))
}

/// Deletes a resource: its relay keys relay nothing from now on.
#[utoipa::path(
    delete,
    path = "/v1/oauth/resources/{resource_id}",
    tag = "oauth",
    params(("resource_id" = String, Path, description = "The resource, `ors_<ulid>`")),
    responses((status = 204, description = "Deleted"), Errors)
)]
pub(crate) async fn delete_resource(
    State(state): State<AppState>,
    ApiKeyAuth(principal): ApiKeyAuth,
    Path(resource_id): Path<String>,
) -> ApiResult<StatusCode> {
    oauth_on(&state, "/v1/oauth/resources/{resource_id}")?;
    let org = principal.org;
    state
        .write(move |ledger| ledger.delete_resource(org, &resource_id))
        .await
        .map_err(|error: LedgerError| ApiError::from(error))?;
    Ok(StatusCode::NO_CONTENT)
}

/// Grants listed at once by default, and at most.
const DEFAULT_GRANTS: u32 = 100;
const MAX_GRANTS: u32 = 500;

/// `GET /v1/oauth/grants`: whose grants.
#[derive(Debug, Clone, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
pub(crate) struct GrantsQuery {
    /// Only this human's (`sha256:<hex>`, as a grant shows it). A
    /// developer key sees its own human's only: naming another is 403.
    pub(crate) human_ref: Option<String>,
    /// Only this client's.
    pub(crate) client_id: Option<String>,
    /// At most this many, newest first (1–500, default 100).
    #[param(minimum = 1, maximum = 500)]
    pub(crate) limit: Option<u32>,
    /// The `next_cursor` of the previous page.
    #[param(pattern = r"^[A-Za-z0-9_-]+$")]
    pub(crate) cursor: Option<String>,
}

fn grant_body(grant: OAuthGrant) -> GrantBody {
    GrantBody {
        grant_id: grant.grant_id,
        human_ref: grant.human_ref,
        client_id: grant.client_id,
        client_name: grant.client_name,
        client_host: grant.client_host,
        resource: grant.resource,
        agent_id: grant.agent_id,
        root_jti: grant.root_jti,
        scope: grant.scope,
        created_at: iso_ms(grant.created_at),
        expires_at: iso_ms(grant.expires_at),
        last_used_at: iso_ms(grant.last_used_at),
        revoked_at: grant.revoked_at.map(iso_ms),
        revoke_reason: grant.revoke_reason,
    }
}

/// The grants of the organisation's consents, newest first: one human's,
/// one client's, or all. A developer key sees its own human's only (the
/// human its e-mail names).
#[utoipa::path(
    get,
    path = "/v1/oauth/grants",
    tag = "oauth",
    params(GrantsQuery),
    responses((status = 200, description = "The grants", body = GrantList), Errors)
)]
pub(crate) async fn list_grants(
    State(state): State<AppState>,
    ApiKeyAuth(principal): ApiKeyAuth,
    Query(query): Query<GrantsQuery>,
) -> ApiResult<axum::Json<GrantList>> {
    oauth_on(&state, "/v1/oauth/grants")?;
    let limit = limit(query.limit, DEFAULT_GRANTS, MAX_GRANTS)?;
    let human = if principal.role == Role::Developer {
        let own = principal
            .email
            .as_deref()
            .and_then(|email| Identity::email(email).ok())
            .map(|identity| {
                human_ref(&state.human_secret, &identity)
                    .as_str()
                    .to_owned()
            })
            .ok_or_else(|| {
                ApiError::forbidden(
                    "human_not_yours",
                    "a developer key without an e-mail has no grants",
                )
            })?;
        if query.human_ref.as_ref().is_some_and(|asked| *asked != own) {
            return Err(ApiError::forbidden(
                "human_not_yours",
                "a developer key sees its own human's grants only",
            ));
        }
        Some(own)
    } else {
        query.human_ref
    };
    let org = principal.org;
    let client_id = query.client_id;
    let cursor = query.cursor;
    let page = state
        .store
        .lookup(move |conn| {
            queries::grants(
                conn,
                org,
                human.as_deref(),
                client_id.as_deref(),
                limit,
                cursor.as_deref(),
            )
        })
        .await?;
    Ok(axum::Json(GrantList {
        grants: page.items.into_iter().map(grant_body).collect(),
        next_cursor: page.next_cursor,
    }))
}

/// Revokes a grant: its root is revoked, and with it every access token
/// the grant issued; its refresh token refreshes no more. Revoking a
/// revoked grant changes nothing.
#[utoipa::path(
    delete,
    path = "/v1/oauth/grants/{grant_id}",
    tag = "oauth",
    params(("grant_id" = String, Path, description = "The grant, `ogr_<ulid>`")),
    responses((status = 204, description = "Revoked"), Errors)
)]
pub(crate) async fn revoke_grant(
    State(state): State<AppState>,
    ApiKeyAuth(principal): ApiKeyAuth,
    Path(grant_id): Path<String>,
) -> ApiResult<StatusCode> {
    oauth_on(&state, "/v1/oauth/grants/{grant_id}")?;
    let now = state.clock.now();
    let org = principal.org;
    state
        .write(move |ledger| ledger.revoke_grant(org, &grant_id, now))
        .await
        .map_err(|error: LedgerError| ApiError::from(error))?;
    Ok(StatusCode::NO_CONTENT)
}

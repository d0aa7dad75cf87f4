//! Organisations and their keys: who the caller is (`/v1/me`), the
//! organisations the admin key manages, and the keys an owner makes, lists
//! and revokes. What each may call is the access table's (`access.rs`);
//! another organisation's key answers exactly like one that does not exist.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use mandate_core::{KeyId, OrgId, Role};
use serde::Deserialize;
use utoipa::IntoParams;

use super::bodies;
use super::docs::Errors;
use super::extract::{ApiKeyAuth, Json};
use super::input;
use super::query::{Query, limit};
use crate::apikeys::NewKey;
use crate::error::{ApiError, ApiResult};
use crate::key_leases;
use crate::ledger::{LedgerError, NewOrg};
use crate::model::{
    CreateKeyRequest, CreateOrgRequest, IssuedKeyBody, KeyBody, KeyList, MeBody, OrgBody,
    OrgCreatedBody, OrgPage, UpdateOrgRequest,
};
use crate::queries;
use crate::{AppState, random};

/// The key a request is made with: its organisation, role and what the
/// role allows.
#[utoipa::path(
    get,
    path = "/v1/me",
    tag = "organisations",
    responses((status = 200, description = "The caller's key", body = MeBody), Errors)
)]
pub(crate) async fn me(
    State(state): State<AppState>,
    ApiKeyAuth(principal): ApiKeyAuth,
) -> ApiResult<axum::Json<MeBody>> {
    let org = principal.org;
    let row = state
        .store
        .lookup(move |conn| queries::org(conn, org))
        .await?;
    Ok(axum::Json(bodies::me(principal, row)))
}

/// Creates an organisation and its first `owner` key, shown once.
#[utoipa::path(
    post,
    path = "/v1/orgs",
    tag = "organisations",
    request_body = CreateOrgRequest,
    responses((status = 201, description = "The organisation and its owner key", body = OrgCreatedBody), Errors)
)]
pub(crate) async fn create_org(
    State(state): State<AppState>,
    _: ApiKeyAuth,
    Json(body): Json<CreateOrgRequest>,
) -> ApiResult<(StatusCode, axum::Json<OrgCreatedBody>)> {
    let now = state.clock.now();
    if let Some(email) = &body.owner_email {
        input::email_in("owner_email", email)?;
    }
    let new = NewOrg {
        id: OrgId::new(random::ulid(now)),
        name: input::org_name(&body.name)?,
        quotas: input::quotas(&body.quotas.unwrap_or_default())?,
        owner_email: body.owner_email,
    };
    let created = state
        .write(move |ledger| ledger.create_org(&new, now))
        .await?;
    Ok((
        StatusCode::CREATED,
        axum::Json(bodies::org_created(created)),
    ))
}

/// Query of the organisation list.
#[derive(Debug, Clone, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
pub(crate) struct OrgQuery {
    /// Page size, 1–500 (default 50).
    #[param(minimum = 1, maximum = 500)]
    pub(crate) limit: Option<u32>,
    /// The `next_cursor` of the previous page.
    #[param(pattern = r"^[A-Za-z0-9_-]+$")]
    pub(crate) cursor: Option<String>,
}

/// The deployment's organisations, oldest first.
#[utoipa::path(
    get,
    path = "/v1/orgs",
    tag = "organisations",
    params(OrgQuery),
    responses((status = 200, description = "A page of organisations", body = OrgPage), Errors)
)]
pub(crate) async fn list_orgs(
    State(state): State<AppState>,
    _: ApiKeyAuth,
    Query(query): Query<OrgQuery>,
) -> ApiResult<axum::Json<OrgPage>> {
    let limit = limit(query.limit, queries::DEFAULT_LIMIT, queries::MAX_LIMIT)?;
    let page = state
        .store
        .read(move |conn| queries::orgs(conn, limit, query.cursor.as_deref()))
        .await?;
    Ok(axum::Json(bodies::org_page(page)))
}

/// Replaces an organisation's quotas.
#[utoipa::path(
    patch,
    path = "/v1/orgs/{org_id}",
    tag = "organisations",
    params(("org_id" = String, Path, description = "The organisation, `org_<ulid>`")),
    request_body = UpdateOrgRequest,
    responses((status = 200, description = "The organisation", body = OrgBody), Errors)
)]
pub(crate) async fn update_org(
    State(state): State<AppState>,
    _: ApiKeyAuth,
    Path(org_id): Path<String>,
    Json(body): Json<UpdateOrgRequest>,
) -> ApiResult<axum::Json<OrgBody>> {
    let id = OrgId::parse(&org_id).map_err(|_| ApiError::from(LedgerError::UnknownOrg))?;
    let quotas = input::quotas(&body.quotas)?;
    let org = state
        .write(move |ledger| ledger.set_quotas(&id, quotas))
        .await?;
    Ok(axum::Json(bodies::org(org)))
}

/// Creates an API key of the caller's organisation; the key is shown once.
#[utoipa::path(
    post,
    path = "/v1/keys",
    tag = "organisations",
    request_body = CreateKeyRequest,
    responses((status = 201, description = "The key, shown once", body = IssuedKeyBody), Errors)
)]
pub(crate) async fn create_key(
    State(state): State<AppState>,
    ApiKeyAuth(principal): ApiKeyAuth,
    Json(body): Json<CreateKeyRequest>,
) -> ApiResult<(StatusCode, axum::Json<IssuedKeyBody>)> {
    let now = state.clock.now();
    let role = input::role(&body.role)?;
    if let Some(email) = &body.email {
        input::email_in("email", email)?;
    }
    let email = body.email;
    if role == Role::Developer && email.is_none() {
        return Err(ApiError::invalid(
            "email",
            "missing_field",
            "a developer key issues tokens for its own e-mail only: give it one",
        ));
    }
    let org = principal.org;
    let (key, api_key) = state
        .write(move |ledger| {
            ledger.create_key(
                NewKey {
                    org,
                    role,
                    email: email.as_deref(),
                    is_admin: false,
                },
                now,
            )
        })
        .await?;
    Ok((
        StatusCode::CREATED,
        axum::Json(bodies::issued_key(key, api_key)),
    ))
}

/// The API keys of the caller's organisation, newest first (never the keys
/// themselves).
#[utoipa::path(
    get,
    path = "/v1/keys",
    tag = "organisations",
    responses((status = 200, description = "The keys", body = KeyList), Errors)
)]
pub(crate) async fn list_keys(
    State(state): State<AppState>,
    ApiKeyAuth(principal): ApiKeyAuth,
) -> ApiResult<axum::Json<KeyList>> {
    let org = principal.org;
    let keys = state
        .store
        .read(move |conn| queries::keys(conn, org))
        .await?;
    Ok(axum::Json(bodies::key_list(keys)))
}

/// Revokes an API key of the caller's organisation at once: answered once
/// no host will let the key in any more (0.1 s after the revocation
/// commits). The admin key and the organisation's last active owner are
/// refused.
#[utoipa::path(
    delete,
    path = "/v1/keys/{key_id}",
    tag = "organisations",
    params(("key_id" = String, Path, description = "The key, `key_<ulid>`")),
    responses((status = 200, description = "The key, revoked", body = KeyBody), Errors)
)]
pub(crate) async fn revoke_key(
    State(state): State<AppState>,
    ApiKeyAuth(principal): ApiKeyAuth,
    Path(key_id): Path<String>,
) -> ApiResult<axum::Json<KeyBody>> {
    let now = state.clock.now();
    let id = KeyId::parse(&key_id).map_err(|_| ApiError::from(LedgerError::UnknownKey))?;
    let org = principal.org;
    let key = state
        .write(move |ledger| ledger.revoke_key(org, id.as_str(), now))
        .await?;
    // Every host's look-up that could have found the key active ends its
    // lease before the revocation is acknowledged.
    key_leases::settled().await;
    Ok(axum::Json(bodies::key(key)))
}

//! Tokens after issue: revoking one with every descendant (by API key, or
//! by an agent with its own token), and a token's status with its
//! descendants', and the organisation's tokens. Every answer names tokens
//! by jti hash (a jti is shown only to whoever receives the token); a
//! token is named here by its jti hash, or by its jti by whoever holds it.

use axum::extract::{Path, State};
use axum::http::HeaderMap;
use mandate_core::{Claims, HumanRef, Jth, Jti, ProvenanceRef};
use serde::Deserialize;
use utoipa::IntoParams;

use super::bodies;
use super::docs::Errors;
use super::extract::{AgentCall, ApiKeyAuth, Json, Need, Operation, has_api_key, parse_jti};
use super::input::{self, MAX_REASON_CHARS};
use super::query::{Query, agent_filter, checked, limit};
use crate::AppState;
use crate::error::{ApiError, ApiResult};
use crate::ledger::Revoker;
use crate::model::dashboard::TokenPage;
use crate::model::{RevokeRequest, RevokeResponse, TokenStatus, forms};
use crate::queries::dashboard::{self, TokenFilter, TokenState};
use crate::queries::{self, DEFAULT_LIMIT, DescendantPage, MAX_LIMIT, QueryError};
use crate::store::{StoreError, tokens};

/// Revokes a token and every descendant.
#[utoipa::path(
    post,
    path = "/v1/vat/revoke",
    tag = "tokens",
    request_body = RevokeRequest,
    responses((status = 200, description = "Every token now revoked, by jti hash", body = RevokeResponse), Errors)
)]
pub(crate) async fn revoke(
    State(state): State<AppState>,
    operation: Operation,
    headers: HeaderMap,
    call: AgentCall,
    Json(body): Json<RevokeRequest>,
) -> ApiResult<axum::Json<RevokeResponse>> {
    let now = state.clock.now();
    let by = if has_api_key(&headers) {
        Revoker::ApiKey(operation.api_key(&state, &headers).await?.org)
    } else if headers.contains_key(axum::http::header::AUTHORIZATION) || body.vat_jti.is_some() {
        let acting = call
            .acting(&state, now, body.vat_jti.as_deref(), Need::Token)
            .await?;
        Revoker::Token(acting.jti)
    } else {
        return Err(ApiError::unauthorized(
            "unauthorized",
            "revoking needs an API key (Authorization: Bearer mk_…), or the revoking agent's token itself",
        ));
    };
    let target = target(body.jti.as_deref(), body.jth.as_deref())?;
    let reason = input::text("reason", body.reason.as_deref(), MAX_REASON_CHARS)?;
    let revoked = state
        .write(move |ledger| {
            let target = match target.clone() {
                Named::Jti(jti) => jti,
                Named::Jth(jth) => ledger.jti_of(&jth)?,
            };
            ledger.revoke(&target, reason.as_deref(), &by, now)
        })
        .await?;
    Ok(axum::Json(bodies::revoked(revoked)))
}

/// A token as a caller names it.
#[derive(Debug, Clone)]
enum Named {
    /// By its jti: its holder, who was given it.
    Jti(Jti),
    /// By its jti hash: anyone shown it.
    Jth(Jth),
}

/// The token a revocation names: exactly one of `jti` and `jth`.
fn target(jti: Option<&str>, jth: Option<&str>) -> ApiResult<Named> {
    match (jti, jth) {
        (Some(jti), None) => Ok(Named::Jti(parse_jti("jti", jti)?)),
        (None, Some(jth)) => Jth::parse(jth)
            .map(Named::Jth)
            .map_err(|e| ApiError::invalid("jth", e.code(), e.to_string())),
        (Some(_), Some(_)) => Err(ApiError::invalid(
            "jth",
            "invalid_field",
            "name the token once: its jti or its jti hash (jth), not both",
        )),
        (None, None) => Err(ApiError::invalid(
            "jth",
            "missing_field",
            "name the token to revoke: its jth (as lists show it), or its jti (as its holder was given it)",
        )),
    }
}

/// Query of the token status.
#[derive(Debug, Clone, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
pub(crate) struct TokenQuery {
    /// Descendants per page, 1–1000 (default 500).
    #[param(minimum = 1, maximum = 1000)]
    pub(crate) limit: Option<u32>,
    /// The `next_cursor` of the previous page.
    #[param(pattern = r"^[A-Za-z0-9_-]+$")]
    pub(crate) cursor: Option<String>,
}

/// The status of a token and a page of its descendants.
#[utoipa::path(
    get,
    path = "/v1/vat/tokens/{jth}",
    tag = "tokens",
    params(("jth" = String, Path, description = "The token's jti hash, as lists show it (its jti, `vat_root_…` or `vat_del_…`, names it too)"), TokenQuery),
    responses((status = 200, description = "Status", body = TokenStatus), Errors)
)]
pub(crate) async fn token(
    State(state): State<AppState>,
    super::extract::ApiKeyAuth(principal): super::extract::ApiKeyAuth,
    Path(name): Path<String>,
    Query(query): Query<TokenQuery>,
) -> ApiResult<axum::Json<TokenStatus>> {
    let now = state.clock.now();
    let named = match Jti::parse(&name) {
        Ok(jti) => Named::Jti(jti),
        Err(_) => Named::Jth(Jth::parse(&name).map_err(|_| QueryError::UnknownToken)?),
    };
    let page = DescendantPage {
        limit: limit(query.limit, 500, 1000)?,
        cursor: query.cursor,
    };
    let (tree, claims) = state
        .store
        .read(move |conn| {
            let jti = match &named {
                Named::Jti(jti) => jti.clone(),
                Named::Jth(jth) => {
                    tokens::jti_by_jth(conn, jth)?.ok_or(QueryError::UnknownToken)?
                }
            };
            let tree = queries::token_tree(conn, principal.org, jti.as_str(), &page)?;
            let claims = tokens::claims_text(conn, &jti.hash())?.ok_or(QueryError::UnknownToken)?;
            Ok::<_, QueryError>((tree, claims))
        })
        .await?;
    // The constraints as the token carries them: a delegated token's hold
    // what it inherited, so the page shows every rule that binds it.
    let claims: Claims = serde_json::from_str(&claims)
        .map_err(|e| QueryError::Store(StoreError::Internal(e.to_string())))?;
    let mut status = bodies::token_tree(tree, now);
    status.constraints = claims.svc_constraints;
    Ok(axum::Json(status))
}

/// Query of the token list.
#[derive(Debug, Clone, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
pub(crate) struct TokenListQuery {
    /// Tokens held by this agent (bare or `agent:<id>`).
    #[param(pattern = r"^(agent:)?[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")]
    pub(crate) agent_id: Option<String>,
    /// Tokens of this human's workflows.
    #[param(value_type = Option<forms::Sha256Ref>)]
    pub(crate) human_ref: Option<String>,
    #[param(value_type = Option<forms::ProvenanceRef>)]
    pub(crate) provenance_ref: Option<String>,
    /// `active`, `revoked` or `expired`.
    #[param(pattern = "^(active|revoked|expired)$")]
    pub(crate) status: Option<String>,
    /// Page size, 1–500 (default 50).
    #[param(minimum = 1, maximum = 500)]
    pub(crate) limit: Option<u32>,
    /// The `next_cursor` of the previous page.
    #[param(pattern = r"^[A-Za-z0-9_-]+$")]
    pub(crate) cursor: Option<String>,
}

/// The organisation's tokens: active ones first, then newest issued.
#[utoipa::path(
    get,
    path = "/v1/vat/tokens",
    tag = "tokens",
    params(TokenListQuery),
    responses((status = 200, description = "A page of tokens", body = TokenPage), Errors)
)]
pub(crate) async fn tokens(
    State(state): State<AppState>,
    ApiKeyAuth(principal): ApiKeyAuth,
    Query(query): Query<TokenListQuery>,
) -> ApiResult<axum::Json<TokenPage>> {
    let now = state.clock.now();
    let status = query
        .status
        .as_deref()
        .map(|text| {
            TokenState::parse(text).ok_or_else(|| {
                ApiError::bad_request("invalid_query", "status must be active, revoked or expired")
            })
        })
        .transpose()?;
    let filter = TokenFilter {
        agent_id: agent_filter(query.agent_id.as_deref())?,
        human_ref: checked(query.human_ref, HumanRef::parse)?,
        provenance_ref: checked(query.provenance_ref, ProvenanceRef::parse)?,
        status,
        limit: limit(query.limit, DEFAULT_LIMIT, MAX_LIMIT)?,
        cursor: query.cursor,
    };
    let page = state
        .store
        .read(move |conn| dashboard::tokens(conn, principal.org, &filter, now.s()))
        .await?;
    Ok(axum::Json(bodies::token_page(page, now)))
}

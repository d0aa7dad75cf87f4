//! Tokens after issue: revoking one with every descendant (by API key, or
//! by an agent with its own token), and a token's status with its
//! descendants', and the organisation's tokens.

use axum::extract::{Path, State};
use axum::http::HeaderMap;
use mandate_core::{HumanRef, Jti, ProvenanceRef};
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

/// Revokes a token and every descendant.
#[utoipa::path(
    post,
    path = "/v1/vat/revoke",
    tag = "tokens",
    request_body = RevokeRequest,
    responses((status = 200, description = "Every jti now revoked", body = RevokeResponse), Errors)
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
    let target = parse_jti("jti", &body.jti)?;
    let reason = input::text("reason", body.reason.as_deref(), MAX_REASON_CHARS)?;
    let revoked = state
        .write(move |ledger| ledger.revoke(&target, reason.as_deref(), &by, now))
        .await?;
    Ok(axum::Json(bodies::revoked(revoked)))
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
    path = "/v1/vat/tokens/{jti}",
    tag = "tokens",
    params(("jti" = String, Path, description = "The token, `vat_root_…` or `vat_del_…`"), TokenQuery),
    responses((status = 200, description = "Status", body = TokenStatus), Errors)
)]
pub(crate) async fn token(
    State(state): State<AppState>,
    super::extract::ApiKeyAuth(principal): super::extract::ApiKeyAuth,
    Path(jti): Path<String>,
    Query(query): Query<TokenQuery>,
) -> ApiResult<axum::Json<TokenStatus>> {
    let now = state.clock.now();
    let jti = Jti::parse(&jti).map_err(|_| ApiError::from(QueryError::UnknownToken))?;
    let page = DescendantPage {
        limit: limit(query.limit, 500, 1000)?,
        cursor: query.cursor,
    };
    let tree = state
        .store
        .read(move |conn| queries::token_tree(conn, principal.org, jti.as_str(), &page))
        .await?;
    Ok(axum::Json(bodies::token_tree(tree, now)))
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

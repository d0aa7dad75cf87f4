//! The reviewer's dashboard, by API key: the agents with their windows and
//! sparklines, an agent's history, the organisation's overview and its
//! inbox counts — each read from counters, never by scanning records.

use axum::extract::{Path, State};
use mandate_core::AgentId;
use serde::Deserialize;
use utoipa::IntoParams;

use super::bodies;
use super::docs::Errors;
use super::extract::ApiKeyAuth;
use super::query::{Query, limit};
use crate::AppState;
use crate::error::{ApiError, ApiResult};
use crate::model::dashboard::{AgentHistoryBody, AgentPage, InboxCounts, OverviewBody};
use crate::queries::dashboard::{self, AgentFilter, AgentSort, Window};
use crate::queries::{DEFAULT_LIMIT, MAX_LIMIT, QueryError};
use crate::store::dashboard::day_of;

/// Longest history asked for, in days.
const MAX_HISTORY_DAYS: u32 = 90;

/// A window named in a query, or `default`.
fn window(value: Option<&str>, default: Window) -> ApiResult<Window> {
    value.map_or(Ok(default), |text| {
        Window::parse(text)
            .ok_or_else(|| ApiError::bad_request("invalid_query", "window must be 24h, 7d or 30d"))
    })
}

/// Query of the agent list.
#[derive(Debug, Clone, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
pub(crate) struct AgentQuery {
    /// `24h` (today's and yesterday's UTC days), `7d` or `30d` (default `7d`).
    #[param(pattern = "^(24h|7d|30d)$")]
    pub(crate) window: Option<String>,
    /// Agents whose id starts with this (bare or as `agent:<prefix>`).
    #[param(pattern = r"^(agent:)?[A-Za-z0-9._-]{1,128}$")]
    pub(crate) q: Option<String>,
    /// `agent_id`, `reputation`, `activity` (default), `actions`, `denial_rate` or `error_rate`.
    #[param(pattern = "^(agent_id|reputation|activity|actions|denial_rate|error_rate)$")]
    pub(crate) sort: Option<String>,
    /// `asc` or `desc` (default `desc`, but `asc` for `agent_id`).
    #[param(pattern = "^(asc|desc)$")]
    pub(crate) order: Option<String>,
    /// Page size, 1–500 (default 50).
    #[param(minimum = 1, maximum = 500)]
    pub(crate) limit: Option<u32>,
    /// The `next_cursor` of the previous page.
    #[param(pattern = r"^[A-Za-z0-9_-]+$")]
    pub(crate) cursor: Option<String>,
}

/// An agent id prefix: the characters agent ids are made of.
fn prefix(value: Option<&str>) -> ApiResult<Option<String>> {
    value
        .map(|text| {
            let bare = text.strip_prefix("agent:").unwrap_or(text);
            let ok = (1..=128).contains(&bare.len())
                && bare
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
            ok.then(|| bare.to_owned()).ok_or_else(|| {
                ApiError::bad_request(
                    "invalid_query",
                    "q must be the start of an agent id: 1–128 of A-Z a-z 0-9 . _ -",
                )
            })
        })
        .transpose()
}

/// The organisation's agents with their reputation, window and recent days.
#[utoipa::path(
    get,
    path = "/v1/vat/agents",
    tag = "records",
    params(AgentQuery),
    responses((status = 200, description = "A page of agents", body = AgentPage), Errors)
)]
pub(crate) async fn agents(
    State(state): State<AppState>,
    ApiKeyAuth(principal): ApiKeyAuth,
    Query(query): Query<AgentQuery>,
) -> ApiResult<axum::Json<AgentPage>> {
    let now = state.clock.now();
    let sort = match query.sort.as_deref() {
        None => AgentSort::Activity,
        Some(text) => AgentSort::parse(text).ok_or_else(|| {
            ApiError::bad_request(
                "invalid_query",
                "sort must be agent_id, reputation, activity, actions, denial_rate or error_rate",
            )
        })?,
    };
    let descending = match query.order.as_deref() {
        None => sort != AgentSort::AgentId,
        Some("desc") => true,
        Some("asc") => false,
        Some(_) => {
            return Err(ApiError::bad_request(
                "invalid_query",
                "order must be asc or desc",
            ));
        }
    };
    let filter = AgentFilter {
        window: window(query.window.as_deref(), Window::Week)?,
        prefix: prefix(query.q.as_deref())?,
        sort,
        descending,
        limit: limit(query.limit, DEFAULT_LIMIT, MAX_LIMIT)?,
        cursor: query.cursor,
    };
    let today = day_of(now.ms());
    let page = state
        .store
        .read(move |conn| dashboard::agents(conn, principal.org, &filter, today))
        .await?;
    Ok(axum::Json(bodies::agent_page(page)))
}

/// Query of an agent's history.
#[derive(Debug, Clone, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
pub(crate) struct HistoryQuery {
    /// UTC days up to today, 1–90 (default 30).
    #[param(minimum = 1, maximum = 90)]
    pub(crate) days: Option<u32>,
}

/// An agent's days: what happened each, and its reputation as each ended.
#[utoipa::path(
    get,
    path = "/v1/vat/agents/{agent_id}/history",
    tag = "records",
    params(("agent_id" = String, Path, description = "The agent, bare or as `agent:<id>`"), HistoryQuery),
    responses((status = 200, description = "The agent's history", body = AgentHistoryBody), Errors)
)]
pub(crate) async fn agent_history(
    State(state): State<AppState>,
    ApiKeyAuth(principal): ApiKeyAuth,
    Path(agent_id): Path<String>,
    Query(query): Query<HistoryQuery>,
) -> ApiResult<axum::Json<AgentHistoryBody>> {
    let now = state.clock.now();
    let days = match query.days {
        None => 30,
        Some(n) if (1..=MAX_HISTORY_DAYS).contains(&n) => n,
        Some(_) => {
            return Err(ApiError::bad_request(
                "invalid_query",
                format!("days must be between 1 and {MAX_HISTORY_DAYS}"),
            ));
        }
    };
    let agent =
        AgentId::parse_lenient(&agent_id).map_err(|_| ApiError::from(QueryError::UnknownAgent))?;
    let id = agent.as_str().to_owned();
    let today = day_of(now.ms());
    let history = state
        .store
        .lookup(move |conn| {
            dashboard::agent_history(conn, principal.org, &id, i64::from(days), today)
        })
        .await?;
    Ok(axum::Json(bodies::agent_history(agent.as_str(), history)))
}

/// Query of the overview.
#[derive(Debug, Clone, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
pub(crate) struct OverviewQuery {
    /// `24h` (hourly buckets; default), `7d` or `30d` (daily buckets).
    #[param(pattern = "^(24h|7d|30d)$")]
    pub(crate) window: Option<String>,
}

/// The organisation over a window: records, denials, errors, ratings and
/// approval decisions per bucket, and the budgets nearest their end.
#[utoipa::path(
    get,
    path = "/v1/vat/overview",
    tag = "records",
    params(OverviewQuery),
    responses((status = 200, description = "The overview", body = OverviewBody), Errors)
)]
pub(crate) async fn overview(
    State(state): State<AppState>,
    ApiKeyAuth(principal): ApiKeyAuth,
    Query(query): Query<OverviewQuery>,
) -> ApiResult<axum::Json<OverviewBody>> {
    let now = state.clock.now();
    let window = window(query.window.as_deref(), Window::Day)?;
    let overview = state
        .store
        .read(move |conn| dashboard::overview(conn, principal.org, window, now.ms()))
        .await?;
    Ok(axum::Json(bodies::overview(overview)))
}

/// What waits for a reviewer: approvals pending and records unrated.
#[utoipa::path(
    get,
    path = "/v1/vat/inbox/counts",
    tag = "records",
    responses((status = 200, description = "The inbox's counts", body = InboxCounts), Errors)
)]
pub(crate) async fn inbox_counts(
    State(state): State<AppState>,
    ApiKeyAuth(principal): ApiKeyAuth,
) -> ApiResult<axum::Json<InboxCounts>> {
    let (approvals_pending, records_unrated) = state
        .store
        .lookup(move |conn| dashboard::inbox(conn, principal.org))
        .await?;
    Ok(axum::Json(InboxCounts {
        approvals_pending,
        records_unrated,
    }))
}

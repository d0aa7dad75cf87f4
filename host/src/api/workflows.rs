//! What records add up to, by API key: an agent's reputation, a workflow's
//! summary and execution graph, and the list of recent workflows.

use axum::extract::{Path, State};
use mandate_core::{AgentId, HumanRef, ProvenanceRef};
use serde::Deserialize;
use utoipa::IntoParams;

use super::bodies;
use super::docs::Errors;
use super::extract::ApiKeyAuth;
use super::query::{Query, agent_filter, checked, limit, provenance, time};
use crate::AppState;
use crate::error::{ApiError, ApiResult};
use crate::model::{GraphBody, ReputationBody, SummaryBody, WorkflowPage, forms};
use crate::queries::{self, DEFAULT_LIMIT, MAX_LIMIT, QueryError, WorkflowFilter};

/// An agent's reputation (spec 2.3).
#[utoipa::path(
    get,
    path = "/v1/vat/reputation/{agent_id}",
    tag = "records",
    params(("agent_id" = String, Path, description = "The agent, bare or as `agent:<id>`")),
    responses((status = 200, description = "Reputation", body = ReputationBody), Errors)
)]
pub(crate) async fn reputation(
    State(state): State<AppState>,
    ApiKeyAuth(principal): ApiKeyAuth,
    Path(agent_id): Path<String>,
) -> ApiResult<axum::Json<ReputationBody>> {
    let agent =
        AgentId::parse_lenient(&agent_id).map_err(|_| ApiError::from(QueryError::UnknownAgent))?;
    let id = agent.as_str().to_owned();
    let counts = state
        .store
        .lookup(move |conn| queries::agent_counts(conn, principal.org, &id))
        .await?;
    Ok(axum::Json(bodies::reputation_of(agent.as_str(), &counts)))
}

/// Every action of a workflow, counted (spec 2.4).
#[utoipa::path(
    get,
    path = "/v1/vat/aar/provenance/{provenance_ref}",
    tag = "records",
    params(("provenance_ref" = String, Path, description = "The workflow, `prov_<ulid>`")),
    responses((status = 200, description = "The summary", body = SummaryBody), Errors)
)]
pub(crate) async fn provenance_summary(
    State(state): State<AppState>,
    ApiKeyAuth(principal): ApiKeyAuth,
    Path(provenance_ref): Path<String>,
) -> ApiResult<axum::Json<SummaryBody>> {
    let provenance_ref = provenance(&provenance_ref)?;
    let summary = state
        .store
        .lookup(move |conn| queries::workflow_summary(conn, principal.org, provenance_ref.as_str()))
        .await?;
    Ok(axum::Json(bodies::summary(summary)))
}

/// Query of the graph endpoint.
#[derive(Debug, Clone, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
pub(crate) struct GraphQuery {
    /// Most records to include, newest first (1–2000, default 500).
    #[param(minimum = 1, maximum = 2000)]
    pub(crate) limit: Option<u32>,
}

/// The execution graph of a workflow.
#[utoipa::path(
    get,
    path = "/v1/vat/aar/provenance/{provenance_ref}/graph",
    tag = "records",
    params(("provenance_ref" = String, Path, description = "The workflow, `prov_<ulid>`"), GraphQuery),
    responses((status = 200, description = "Nodes and edges", body = GraphBody), Errors)
)]
pub(crate) async fn graph(
    State(state): State<AppState>,
    ApiKeyAuth(principal): ApiKeyAuth,
    Path(provenance_ref): Path<String>,
    Query(query): Query<GraphQuery>,
) -> ApiResult<axum::Json<GraphBody>> {
    let now = state.clock.now();
    let provenance_ref = provenance(&provenance_ref)?;
    let limit = limit(query.limit, 500, 2000)?;
    let id = provenance_ref.as_str().to_owned();
    let graph = state
        .store
        .read(move |conn| queries::workflow_graph(conn, principal.org, &id, limit))
        .await?;
    Ok(axum::Json(bodies::graph(
        provenance_ref.to_string(),
        graph,
        now,
    )))
}

/// Query of the workflow list.
#[derive(Debug, Clone, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
pub(crate) struct WorkflowQuery {
    /// Workflows in which this agent holds a token.
    #[param(pattern = r"^(agent:)?[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")]
    pub(crate) agent_id: Option<String>,
    #[param(value_type = Option<forms::ProvenanceRef>)]
    pub(crate) provenance_ref: Option<String>,
    /// Workflows of this human.
    #[param(value_type = Option<forms::Sha256Ref>)]
    pub(crate) human_ref: Option<String>,
    /// Last activity at or after (RFC 3339).
    #[param(format = DateTime)]
    pub(crate) since: Option<String>,
    /// Last activity before (RFC 3339).
    #[param(format = DateTime)]
    pub(crate) until: Option<String>,
    /// Page size, 1–500 (default 50).
    #[param(minimum = 1, maximum = 500)]
    pub(crate) limit: Option<u32>,
    /// The `next_cursor` of the previous page.
    #[param(pattern = r"^[A-Za-z0-9_-]+$")]
    pub(crate) cursor: Option<String>,
}

/// Recent workflows, most recently active first.
#[utoipa::path(
    get,
    path = "/v1/vat/workflows",
    tag = "records",
    params(WorkflowQuery),
    responses((status = 200, description = "A page of workflows", body = WorkflowPage), Errors)
)]
pub(crate) async fn workflows(
    State(state): State<AppState>,
    ApiKeyAuth(principal): ApiKeyAuth,
    Query(query): Query<WorkflowQuery>,
) -> ApiResult<axum::Json<WorkflowPage>> {
    let filter = WorkflowFilter {
        agent_id: agent_filter(query.agent_id.as_deref())?,
        provenance_ref: checked(query.provenance_ref, ProvenanceRef::parse)?,
        human_ref: checked(query.human_ref, HumanRef::parse)?,
        since: time("since", query.since.as_deref())?,
        until: time("until", query.until.as_deref())?,
        limit: limit(query.limit, DEFAULT_LIMIT, MAX_LIMIT)?,
        cursor: query.cursor,
    };
    let page = state
        .store
        .read(move |conn| queries::workflows(conn, principal.org, &filter))
        .await?;
    Ok(axum::Json(bodies::workflow_page(page)))
}

//! Calls made with an API key: issuing, rating, revoking, and every read —
//! records, reputation, workflow summaries and graphs, token status.

use axum::extract::{FromRequestParts, Path, State};
use axum::http::request::Parts;
use axum::http::{HeaderMap, StatusCode};
use mandate_core::{
    AarId, Action, AgentId, AssuranceLevel, Identity, IssueError, Jti, ProvenanceRef, Resource,
    RootIssue, TokenRequest, human_ref, issue_root, sign,
};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use utoipa::IntoParams;

use super::docs::Errors;
use super::extract::{AgentCall, ApiKeyAuth, IdempotentJson, Json, Need, has_api_key, parse_jti};
use super::input::{self, MAX_NOTE_CHARS, MAX_REASON_CHARS};
use crate::apikeys::Principal;
use crate::clock::{now_s, parse_iso_ms};
use crate::error::{ApiError, ApiResult};
use crate::idempotency::{self, Rendered, Reply, Scoped};
use crate::ledger::{self, Revoker};
use crate::model::{
    FeedbackRequest, FeedbackResponse, GraphBody, IssueL1Request, IssuedToken, RecordBody,
    RecordPage, ReputationBody, RevokeRequest, RevokeResponse, SummaryBody, TokenStatus,
    WorkflowPage, forms,
};
use crate::queries::{
    self, DEFAULT_LIMIT, DescendantPage, MAX_LIMIT, RecordFilter, WorkflowFilter,
};
use crate::{AppState, random};

/// Query parameters, with a problem body (400) for any that do not parse.
#[derive(Debug, Clone)]
pub(crate) struct Query<T>(pub(crate) T);

impl<T: DeserializeOwned, S: Send + Sync> FromRequestParts<S> for Query<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Query<T>, ApiError> {
        axum::extract::Query::<T>::try_from_uri(&parts.uri)
            .map(|q| Query(q.0))
            .map_err(|e| ApiError::bad_request("invalid_query", e.body_text()))
    }
}

fn not_found_record() -> ApiError {
    ApiError::not_found("record_not_found", "no record has this aar_id")
}

fn limit(requested: Option<u32>, default: u32, max: u32) -> ApiResult<u32> {
    match requested {
        None => Ok(default),
        Some(n) if (1..=max).contains(&n) => Ok(n),
        Some(_) => Err(ApiError::bad_request(
            "invalid_query",
            format!("limit must be between 1 and {max}"),
        )),
    }
}

fn time(field: &str, value: Option<&str>) -> ApiResult<Option<i64>> {
    value
        .map(|text| {
            parse_iso_ms(text).ok_or_else(|| {
                ApiError::bad_request(
                    "invalid_query",
                    format!("{field} must be an ISO 8601 timestamp such as 2026-11-22T10:00:00Z"),
                )
            })
        })
        .transpose()
}

/// A query value that must have the form `parse` accepts.
fn checked<T, E: std::fmt::Display>(
    value: Option<String>,
    parse: impl FnOnce(&str) -> Result<T, E>,
) -> ApiResult<Option<String>> {
    match value {
        Some(text) => match parse(&text) {
            Ok(_) => Ok(Some(text)),
            Err(error) => Err(ApiError::bad_request("invalid_query", error.to_string())),
        },
        None => Ok(None),
    }
}

fn agent_filter(value: Option<&str>) -> ApiResult<Option<String>> {
    value
        .map(|text| {
            AgentId::parse_lenient(text)
                .map(|id| id.as_str().to_owned())
                .map_err(|e| ApiError::bad_request("invalid_query", e.to_string()))
        })
        .transpose()
}

/// Issues a root token on an API key (assurance level L1).
#[utoipa::path(
    post,
    path = "/v1/vat/issue/l1",
    params(("Idempotency-Key" = Option<String>, Header, pattern = r"^[!-~]{1,255}$", description = "Retry-safe key: a repeat with the same body returns the first response")),
    tag = "tokens",
    request_body = IssueL1Request,
    responses((status = 201, description = "The new root token", body = IssuedToken), Errors),
    security(("api_key" = []))
)]
pub(crate) async fn issue_l1(
    State(state): State<AppState>,
    ApiKeyAuth(principal): ApiKeyAuth,
    IdempotentJson { body, key }: IdempotentJson<IssueL1Request>,
) -> ApiResult<Rendered> {
    let identity = input::email(&body.developer_email)?;
    if !principal.is_admin {
        let own = principal
            .email
            .as_deref()
            .and_then(|email| Identity::email(email).ok());
        if own.as_ref() != Some(&identity) {
            return Err(ApiError::forbidden(
                "email_mismatch",
                "a developer key may only issue tokens for its own developer_email",
            ));
        }
    }
    let request = input::token_request(&body)?;
    let key = key.map(|k| k.scoped("issue_l1", &principal.id));
    issue_root_token(
        &state,
        &principal,
        key,
        &identity,
        AssuranceLevel::L1,
        request,
    )
    .await
}

/// Issues, signs and stores a root token for a verified human, whatever the
/// assurance level; the same for L1, L2 and L3. With an idempotency key, a
/// retry returns the first token and issues nothing.
pub(crate) async fn issue_root_token(
    state: &AppState,
    principal: &Principal,
    key: Option<Scoped>,
    identity: &Identity,
    level: AssuranceLevel,
    request: TokenRequest,
) -> ApiResult<Rendered> {
    let ring = state.keys.current();
    let claims = issue_root(
        request,
        RootIssue {
            issuer: state.config.issuer.clone(),
            human: human_ref(&state.human_secret, identity),
            level,
            now: now_s(),
            jti: random::ulid(),
            provenance: random::ulid(),
        },
    )
    .map_err(|e| match e {
        IssueError::TtlOutOfRange => ApiError::invalid("ttl_seconds", e.code(), e.to_string()),
        other => ApiError::internal(other),
    })?;
    let compact = sign(&claims, &ring.active).map_err(ApiError::internal)?;
    let kid = ring.active.kid().to_owned();
    let by = principal.id.clone();
    let render = |token: &IssuedToken| Rendered::json(StatusCode::CREATED, token);
    let reply = state
        .write_signed(move |conn| {
            idempotency::run(
                conn,
                key.as_ref(),
                |conn| ledger::store_root(conn, &claims, compact, &kid, &by),
                render,
            )
        })
        .await?;
    match reply {
        Reply::Fresh(token) => render(&token),
        Reply::Replayed(rendered) => Ok(rendered),
    }
}

/// A human rates a completed action, once.
#[utoipa::path(
    post,
    path = "/v1/vat/aar/{aar_id}/feedback",
    tag = "records",
    params(("aar_id" = String, Path, description = "The record, `aar_<ulid>`")),
    request_body = FeedbackRequest,
    responses((status = 200, description = "The rating", body = FeedbackResponse), Errors),
    security(("api_key" = []))
)]
pub(crate) async fn feedback(
    State(state): State<AppState>,
    _: ApiKeyAuth,
    Path(aar_id): Path<String>,
    Json(body): Json<FeedbackRequest>,
) -> ApiResult<axum::Json<FeedbackResponse>> {
    let aar_id = AarId::parse(&aar_id).map_err(|_| not_found_record())?;
    let rating = input::rating(&body.rating)?;
    let note = input::text("note", body.note.as_deref(), MAX_NOTE_CHARS)?;
    let response = state
        .store
        .write(move |conn| ledger::rate(conn, &aar_id, rating, note.as_deref()))
        .await?;
    Ok(axum::Json(response))
}

/// Revokes a token and every descendant.
#[utoipa::path(
    post,
    path = "/v1/vat/revoke",
    tag = "tokens",
    request_body = RevokeRequest,
    responses((status = 200, description = "Every jti now revoked", body = RevokeResponse), Errors),
    security(("api_key" = []), ())
)]
pub(crate) async fn revoke(
    State(state): State<AppState>,
    headers: HeaderMap,
    call: AgentCall,
    Json(body): Json<RevokeRequest>,
) -> ApiResult<axum::Json<RevokeResponse>> {
    let by = if has_api_key(&headers) {
        super::extract::api_key(&state, &headers).await?;
        Revoker::ApiKey
    } else if headers.contains_key(axum::http::header::AUTHORIZATION) || body.vat_jti.is_some() {
        let acting = call
            .acting(&state, body.vat_jti.as_deref(), Need::Token)
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
    let cache = state.claims.clone();
    let now = crate::clock::now_ms();
    let revoked = state
        .store
        .write(move |conn| ledger::revoke(conn, &cache, &target, reason.as_deref(), &by, now))
        .await?;
    Ok(axum::Json(RevokeResponse {
        truncated: revoked.count > revoked.jtis.len() as u64,
        revoked: revoked.jtis,
        revoked_count: revoked.count,
        revoked_at: crate::clock::iso_s(revoked.at),
    }))
}

/// An agent's reputation (spec 2.3).
#[utoipa::path(
    get,
    path = "/v1/vat/reputation/{agent_id}",
    tag = "records",
    params(("agent_id" = String, Path, description = "The agent, bare or as `agent:<id>`")),
    responses((status = 200, description = "Reputation", body = ReputationBody), Errors),
    security(("api_key" = []))
)]
pub(crate) async fn reputation(
    State(state): State<AppState>,
    _: ApiKeyAuth,
    Path(agent_id): Path<String>,
) -> ApiResult<axum::Json<ReputationBody>> {
    let agent = AgentId::parse_lenient(&agent_id).map_err(|_| {
        ApiError::not_found("agent_not_found", "no token was ever issued to this agent")
    })?;
    let body = state
        .store
        .lookup(move |conn| queries::agent_reputation(conn, agent.as_str()))
        .await?;
    Ok(axum::Json(body))
}

fn provenance(text: &str) -> ApiResult<ProvenanceRef> {
    ProvenanceRef::parse(text).map_err(|_| {
        ApiError::not_found("workflow_not_found", "no workflow has this provenance_ref")
    })
}

/// Every action of a workflow, counted (spec 2.4).
#[utoipa::path(
    get,
    path = "/v1/vat/aar/provenance/{provenance_ref}",
    tag = "records",
    params(("provenance_ref" = String, Path, description = "The workflow, `prov_<ulid>`")),
    responses((status = 200, description = "The summary", body = SummaryBody), Errors),
    security(("api_key" = []))
)]
pub(crate) async fn provenance_summary(
    State(state): State<AppState>,
    _: ApiKeyAuth,
    Path(provenance_ref): Path<String>,
) -> ApiResult<axum::Json<SummaryBody>> {
    let provenance_ref = provenance(&provenance_ref)?;
    let body = state
        .store
        .lookup(move |conn| queries::workflow_summary(conn, provenance_ref.as_str()))
        .await?;
    Ok(axum::Json(body))
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
    responses((status = 200, description = "Nodes and edges", body = GraphBody), Errors),
    security(("api_key" = []))
)]
pub(crate) async fn graph(
    State(state): State<AppState>,
    _: ApiKeyAuth,
    Path(provenance_ref): Path<String>,
    Query(query): Query<GraphQuery>,
) -> ApiResult<axum::Json<GraphBody>> {
    let provenance_ref = provenance(&provenance_ref)?;
    let limit = limit(query.limit, 500, 2000)?;
    let body = state
        .store
        .read(move |conn| queries::workflow_graph(conn, provenance_ref.as_str(), limit, now_s()))
        .await?;
    Ok(axum::Json(body))
}

/// One record in full.
#[utoipa::path(
    get,
    path = "/v1/vat/aar/{aar_id}",
    tag = "records",
    params(("aar_id" = String, Path, description = "The record, `aar_<ulid>`")),
    responses((status = 200, description = "The record", body = RecordBody), Errors),
    security(("api_key" = []))
)]
pub(crate) async fn record(
    State(state): State<AppState>,
    _: ApiKeyAuth,
    Path(aar_id): Path<String>,
) -> ApiResult<axum::Json<RecordBody>> {
    let aar_id = AarId::parse(&aar_id).map_err(|_| not_found_record())?;
    let body = state
        .store
        .lookup(move |conn| queries::record(conn, aar_id.as_str()))
        .await?;
    Ok(axum::Json(body))
}

/// Query of the record list.
#[derive(Debug, Clone, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
pub(crate) struct RecordQuery {
    /// Records of this agent (bare or `agent:<id>`).
    #[param(pattern = r"^(agent:)?[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")]
    pub(crate) agent_id: Option<String>,
    #[param(value_type = Option<forms::Action>)]
    pub(crate) action: Option<String>,
    /// A result (`success`, `error`, `timeout`, `cancelled`), `denied` or `pending`.
    #[param(value_type = Option<ResultFilter>)]
    pub(crate) result: Option<String>,
    #[param(value_type = Option<forms::Resource>)]
    pub(crate) resource: Option<String>,
    #[param(value_type = Option<forms::ProvenanceRef>)]
    pub(crate) provenance_ref: Option<String>,
    /// Records of this token.
    #[param(value_type = Option<forms::Jti>)]
    pub(crate) vat_jti: Option<String>,
    /// Created at or after (RFC 3339).
    #[param(format = DateTime)]
    pub(crate) since: Option<String>,
    /// Created before (RFC 3339).
    #[param(format = DateTime)]
    pub(crate) until: Option<String>,
    /// Page size, 1–500 (default 50).
    #[param(minimum = 1, maximum = 500)]
    pub(crate) limit: Option<u32>,
    /// The `next_cursor` of the previous page.
    #[param(pattern = r"^[A-Za-z0-9_-]+$")]
    pub(crate) cursor: Option<String>,
}

/// The `result` filter of a record query.
#[derive(Debug, utoipa::ToSchema)]
#[schema(rename_all = "snake_case")]
#[allow(dead_code, reason = "only describes the query parameter")]
pub(crate) enum ResultFilter {
    Success,
    Error,
    Timeout,
    Cancelled,
    Denied,
    Pending,
}

/// Records by agent, action, result, resource, workflow, token and time, newest first.
#[utoipa::path(
    get,
    path = "/v1/vat/aar",
    tag = "records",
    params(RecordQuery),
    responses((status = 200, description = "A page of records", body = RecordPage), Errors),
    security(("api_key" = []))
)]
pub(crate) async fn records(
    State(state): State<AppState>,
    _: ApiKeyAuth,
    Query(query): Query<RecordQuery>,
) -> ApiResult<axum::Json<RecordPage>> {
    let filter = RecordFilter {
        agent_id: agent_filter(query.agent_id.as_deref())?,
        action: checked(query.action, Action::parse)?,
        result: query.result,
        resource: checked(query.resource, Resource::parse)?,
        provenance_ref: checked(query.provenance_ref, ProvenanceRef::parse)?,
        vat_jti: checked(query.vat_jti, Jti::parse)?,
        since: time("since", query.since.as_deref())?,
        until: time("until", query.until.as_deref())?,
        limit: limit(query.limit, DEFAULT_LIMIT, MAX_LIMIT)?,
        cursor: query.cursor,
    };
    let page = state
        .store
        .read(move |conn| queries::records(conn, &filter))
        .await?;
    Ok(axum::Json(page))
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
    responses((status = 200, description = "A page of workflows", body = WorkflowPage), Errors),
    security(("api_key" = []))
)]
pub(crate) async fn workflows(
    State(state): State<AppState>,
    _: ApiKeyAuth,
    Query(query): Query<WorkflowQuery>,
) -> ApiResult<axum::Json<WorkflowPage>> {
    let filter = WorkflowFilter {
        agent_id: agent_filter(query.agent_id.as_deref())?,
        provenance_ref: checked(query.provenance_ref, ProvenanceRef::parse)?,
        since: time("since", query.since.as_deref())?,
        until: time("until", query.until.as_deref())?,
        limit: limit(query.limit, DEFAULT_LIMIT, MAX_LIMIT)?,
        cursor: query.cursor,
    };
    let page = state
        .store
        .read(move |conn| queries::workflows(conn, &filter))
        .await?;
    Ok(axum::Json(page))
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
    responses((status = 200, description = "Status", body = TokenStatus), Errors),
    security(("api_key" = []))
)]
pub(crate) async fn token(
    State(state): State<AppState>,
    _: ApiKeyAuth,
    Path(jti): Path<String>,
    Query(query): Query<TokenQuery>,
) -> ApiResult<axum::Json<TokenStatus>> {
    let jti = Jti::parse(&jti)
        .map_err(|_| ApiError::not_found("token_not_found", "no token has this jti"))?;
    let page = DescendantPage {
        limit: limit(query.limit, 500, 1000)?,
        cursor: query.cursor,
    };
    let body = state
        .store
        .read(move |conn| queries::token_status(conn, jti.as_str(), &page, now_s()))
        .await?;
    Ok(axum::Json(body))
}

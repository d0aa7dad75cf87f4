//! Records by API key: rating one, or a workflow's at once, reading one,
//! and the filtered list.

use axum::extract::{Path, State};
use mandate_core::{Action, Jth, Jti, ProvenanceRef, Resource};
use serde::Deserialize;
use utoipa::IntoParams;

use super::bodies;
use super::docs::Errors;
use super::extract::{ApiKeyAuth, Json};
use super::input::{self, MAX_NOTE_CHARS};
use super::query::{Query, agent_filter, checked, limit, record_id, time};
use crate::AppState;
use crate::clock::iso_ms;
use crate::error::{ApiError, ApiResult};
use crate::ledger::BulkRating;
use crate::model::dashboard::{BulkFeedbackRequest, BulkFeedbackResponse};
use crate::model::{FeedbackRequest, FeedbackResponse, RecordBody, RecordPage, forms};
use crate::queries::{self, DEFAULT_LIMIT, MAX_LIMIT, Page, RecordFilter};
use crate::store::tokens;

/// A human rates a completed action, once.
#[utoipa::path(
    post,
    path = "/v1/vat/aar/{aar_id}/feedback",
    tag = "records",
    params(("aar_id" = String, Path, description = "The record, `aar_<ulid>`")),
    request_body = FeedbackRequest,
    responses((status = 200, description = "The rating", body = FeedbackResponse), Errors)
)]
pub(crate) async fn feedback(
    State(state): State<AppState>,
    ApiKeyAuth(principal): ApiKeyAuth,
    Path(aar_id): Path<String>,
    Json(body): Json<FeedbackRequest>,
) -> ApiResult<axum::Json<FeedbackResponse>> {
    let now = state.clock.now();
    let aar_id = record_id(&aar_id)?;
    let rating = input::rating(&body.rating)?;
    let note = input::text("note", body.note.as_deref(), MAX_NOTE_CHARS)?;
    let rated = state
        .write(move |ledger| {
            ledger.rate(
                principal.org,
                &aar_id,
                rating,
                note.as_deref(),
                &principal.id,
                now,
            )
        })
        .await?;
    Ok(axum::Json(FeedbackResponse {
        aar_id: rated.aar_id.to_string(),
        rating: rated.rating.as_str().to_owned(),
        feedback_at: iso_ms(rated.at),
    }))
}

/// Rates at once every completed record of a workflow with one result that
/// awaits a rating.
#[utoipa::path(
    post,
    path = "/v1/vat/aar/feedback",
    tag = "records",
    request_body = BulkFeedbackRequest,
    responses((status = 200, description = "The records rated", body = BulkFeedbackResponse), Errors)
)]
pub(crate) async fn bulk_feedback(
    State(state): State<AppState>,
    ApiKeyAuth(principal): ApiKeyAuth,
    Json(body): Json<BulkFeedbackRequest>,
) -> ApiResult<axum::Json<BulkFeedbackResponse>> {
    let now = state.clock.now();
    let provenance_ref = input::provenance_ref(&body.provenance_ref)?;
    let result = input::outcome(&body.result)?;
    let bulk = BulkRating {
        provenance_ref,
        result,
        rating: input::rating(&body.rating)?,
        note: input::text("note", body.note.as_deref(), MAX_NOTE_CHARS)?,
    };
    let rated = state
        .write(move |ledger| ledger.rate_workflow(principal.org, &bulk, &principal.id, now))
        .await?;
    Ok(axum::Json(BulkFeedbackResponse {
        rated: rated.len() as u64,
        aar_ids: rated.iter().map(ToString::to_string).collect(),
    }))
}

/// One record in full.
#[utoipa::path(
    get,
    path = "/v1/vat/aar/{aar_id}",
    tag = "records",
    params(("aar_id" = String, Path, description = "The record, `aar_<ulid>`")),
    responses((status = 200, description = "The record", body = RecordBody), Errors)
)]
pub(crate) async fn record(
    State(state): State<AppState>,
    ApiKeyAuth(principal): ApiKeyAuth,
    Path(aar_id): Path<String>,
) -> ApiResult<axum::Json<RecordBody>> {
    let aar_id = record_id(&aar_id)?;
    let record = state
        .store
        .lookup(move |conn| queries::record(conn, principal.org, aar_id.as_str()))
        .await?;
    Ok(axum::Json(bodies::named_record(record)))
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
    /// A result (`success`, `error`, `timeout`, `cancelled`), `denied`, `pending` or `awaiting_approval`.
    #[param(value_type = Option<forms::ResultFilter>)]
    pub(crate) result: Option<String>,
    /// Completed records rated (`true`) or awaiting a rating (`false`,
    /// served by an index).
    pub(crate) rated: Option<bool>,
    #[param(value_type = Option<forms::Resource>)]
    pub(crate) resource: Option<String>,
    #[param(value_type = Option<forms::ProvenanceRef>)]
    pub(crate) provenance_ref: Option<String>,
    /// Records of this token, by jti hash (as lists show it).
    #[param(value_type = Option<forms::Jth>)]
    pub(crate) jth: Option<String>,
    /// Records of this token, by jti (as its holder was given it).
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

/// Records by agent, action, result, resource, workflow, token and time, newest first.
#[utoipa::path(
    get,
    path = "/v1/vat/aar",
    tag = "records",
    params(RecordQuery),
    responses((status = 200, description = "A page of records", body = RecordPage), Errors)
)]
pub(crate) async fn records(
    State(state): State<AppState>,
    ApiKeyAuth(principal): ApiKeyAuth,
    Query(query): Query<RecordQuery>,
) -> ApiResult<axum::Json<RecordPage>> {
    let filter = RecordFilter {
        agent_id: agent_filter(query.agent_id.as_deref())?,
        action: checked(query.action, Action::parse)?,
        result: query.result,
        rated: query.rated,
        resource: checked(query.resource, Resource::parse)?,
        provenance_ref: checked(query.provenance_ref, ProvenanceRef::parse)?,
        vat_jti: checked(query.vat_jti, Jti::parse)?,
        since: time("since", query.since.as_deref())?,
        until: time("until", query.until.as_deref())?,
        limit: limit(query.limit, DEFAULT_LIMIT, MAX_LIMIT)?,
        cursor: query.cursor,
    };
    if query.jth.is_some() && filter.vat_jti.is_some() {
        return Err(ApiError::bad_request(
            "invalid_query",
            "name the token once: jth or vat_jti, not both",
        ));
    }
    let jth = query
        .jth
        .as_deref()
        .map(Jth::parse)
        .transpose()
        .map_err(|error| ApiError::bad_request("invalid_query", error.to_string()))?;
    let page = state
        .store
        .read(move |conn| {
            let mut filter = filter.clone();
            if let Some(jth) = &jth {
                match tokens::jti_by_jth(conn, jth)? {
                    Some(jti) => filter.vat_jti = Some(jti.to_string()),
                    None => {
                        return Ok(Page {
                            items: Vec::new(),
                            next_cursor: None,
                        });
                    }
                }
            }
            queries::records(conn, principal.org, &filter)
        })
        .await?;
    Ok(axum::Json(bodies::record_page(page)))
}

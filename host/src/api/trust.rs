//! The trust graph over HTTP: vouching for an agent (a person's API key
//! with `vouch`, or an agent's token for an agent it delegated to) and
//! withdrawing a vouch; an agent's trust in force with its parts and
//! vouches; pages of the organisation's graph; and the signed trust
//! statement an agent carries to relying parties. Every vouch stands inside
//! the organisation's wall: another organisation's agent or vouch is
//! unknown (404).

use axum::extract::{Path, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use mandate_core::trust::TrustScore;
use mandate_core::{AgentId, KeyId, Role, VouchId};
use serde::Deserialize;
use utoipa::IntoParams;

use super::docs::Errors;
use super::extract::{AgentCall, ApiKeyAuth, Json, Need, Operation, has_api_key};
use super::input::{self, MAX_REASON_CHARS};
use super::query::{Query, limit};
use crate::AppState;
use crate::clock::{Now, iso_ms, parse_iso_ms};
use crate::error::{ApiError, ApiResult};
use crate::ledger::{LedgerError, NewVouch, VouchBy};
use crate::model::trust::{
    AgentTrustBody, TrustEdge, TrustGraphPage, TrustNode, VouchBody, VouchRequest, VoucherBody,
};
use crate::store::StoreError;
use crate::store::orgs::Org;
use crate::store::trust::{self as rows, Vouch};
use crate::trust::{self as scores, OrgTrust};

/// Most vouches listed per direction on an agent's trust.
const MAX_LISTED: u32 = 1000;

/// A vouch as the API shows it.
pub(crate) fn vouch_body(vouch: &Vouch) -> VouchBody {
    let voucher = match (&vouch.by_key, &vouch.by_agent) {
        (Some(key_id), _) => VoucherBody::Human {
            key_id: key_id.clone(),
        },
        (None, agent) => VoucherBody::Agent {
            agent_id: agent.clone().unwrap_or_default(),
        },
    };
    VouchBody {
        vouch_id: vouch.id.clone(),
        voucher,
        agent_id: vouch.agent_id.clone(),
        weight: vouch.weight_ppm as f64 / 1_000_000.0,
        reason: vouch.reason.clone(),
        created_at: iso_ms(vouch.created_at),
        expires_at: vouch.expires_at.map(iso_ms),
        withdrawn_at: vouch.withdrawn_at.map(iso_ms),
    }
}

/// Who calls a vouch operation: a person's API key whose role holds
/// `vouch`, or an agent with its token itself.
async fn vouch_by(
    state: &AppState,
    operation: &Operation,
    headers: &HeaderMap,
    call: &AgentCall,
    now: Now,
) -> ApiResult<VouchBy> {
    if has_api_key(headers) {
        let principal = operation.api_key(state, headers).await?;
        let key_id = KeyId::parse(&principal.id)
            .map_err(|_| ApiError::internal("an API key's id has the wrong form"))?;
        Ok(VouchBy::Key {
            org: principal.org,
            key_id,
            owner: principal.role == Role::Owner,
        })
    } else if headers.contains_key(header::AUTHORIZATION) {
        let acting = call.acting(state, now, None, Need::Token).await?;
        Ok(VouchBy::Token(acting.jti))
    } else {
        Err(ApiError::unauthorized(
            "unauthorized",
            "vouching needs an API key whose role holds `vouch` (Authorization: Bearer mk_…), or an agent's token itself",
        ))
    }
}

/// The weight in millionths: a finite number in (0, 1], rounded to six
/// decimals. The range is judged on the number sent, before rounding, so
/// 1.0000001 is refused rather than read as 1.
fn weight_ppm(weight: f64) -> ApiResult<u64> {
    let ppm = (weight * 1_000_000.0).round();
    if weight.is_finite() && weight > 0.0 && weight <= 1.0 && ppm >= 1.0 {
        Ok(ppm as u64)
    } else {
        Err(ApiError::invalid(
            "weight",
            "invalid_weight",
            "weight must be a number in (0, 1], at least 0.000001",
        ))
    }
}

fn agent(text: &str) -> ApiResult<AgentId> {
    AgentId::parse_lenient(text).map_err(|_| LedgerError::UnknownAgent.into())
}

/// Vouches for an agent.
#[utoipa::path(
    post,
    path = "/v1/trust/vouches",
    tag = "trust",
    request_body = VouchRequest,
    responses((status = 201, description = "The vouch, in force", body = VouchBody), Errors)
)]
pub(crate) async fn create_vouch(
    State(state): State<AppState>,
    operation: Operation,
    headers: HeaderMap,
    call: AgentCall,
    Json(body): Json<VouchRequest>,
) -> ApiResult<(StatusCode, axum::Json<VouchBody>)> {
    let now = state.clock.now();
    let by = vouch_by(&state, &operation, &headers, &call, now).await?;
    let agent_id = agent(&body.agent_id)?;
    let weight_ppm = weight_ppm(body.weight)?;
    let reason = input::text("reason", body.reason.as_deref(), MAX_REASON_CHARS)?;
    let expires_at = body
        .expires_at
        .as_deref()
        .map(|text| {
            let at = parse_iso_ms(text).ok_or_else(|| {
                ApiError::invalid(
                    "expires_at",
                    "invalid_time",
                    "expires_at must be an RFC 3339 time such as 2026-12-31T00:00:00Z",
                )
            })?;
            if at <= now.ms() {
                return Err(ApiError::invalid(
                    "expires_at",
                    "expires_in_past",
                    "expires_at must be in the future",
                ));
            }
            Ok(at)
        })
        .transpose()?;
    let new = NewVouch {
        by,
        agent_id,
        weight_ppm,
        reason,
        expires_at,
        random: crate::random::bytes(),
    };
    let vouch = state.write(move |ledger| ledger.vouch(&new, now)).await?;
    Ok((StatusCode::CREATED, axum::Json(vouch_body(&vouch))))
}

/// Withdraws a vouch.
#[utoipa::path(
    delete,
    path = "/v1/trust/vouches/{vouch_id}",
    tag = "trust",
    params(("vouch_id" = String, Path, description = "The vouch, `vch_<ulid>`")),
    responses((status = 200, description = "The vouch, withdrawn", body = VouchBody), Errors)
)]
pub(crate) async fn withdraw_vouch(
    State(state): State<AppState>,
    operation: Operation,
    headers: HeaderMap,
    call: AgentCall,
    Path(vouch_id): Path<String>,
) -> ApiResult<axum::Json<VouchBody>> {
    let now = state.clock.now();
    let by = vouch_by(&state, &operation, &headers, &call, now).await?;
    let id = VouchId::parse(&vouch_id).map_err(|_| ApiError::from(LedgerError::UnknownVouch))?;
    let vouch = state
        .write(move |ledger| ledger.withdraw_vouch(&id, &by, now))
        .await?;
    Ok(axum::Json(vouch_body(&vouch)))
}

/// The organisation's scores in force, computed now if they never were or
/// do not hold `agent` yet (a new agent whose token came after the last
/// computation).
async fn scores_with(
    state: &AppState,
    org: Org,
    agent: Option<&str>,
) -> ApiResult<std::sync::Arc<OrgTrust>> {
    if let Some(scores) = state.trust.org(org)
        && agent.is_none_or(|agent| scores.get(agent).is_some())
    {
        return Ok(scores);
    }
    scores::refresh(state, org).await.map_err(|error| {
        tracing::error!(%error, "computing trust scores failed");
        ApiError::internal("computing trust scores failed")
    })?;
    state
        .trust
        .org(org)
        .ok_or_else(|| ApiError::internal("trust scores vanished"))
}

/// The score of an agent of `org`, which must exist (else 404), with
/// `computed_at`.
async fn score_of(state: &AppState, org: Org, agent_id: &str) -> ApiResult<(TrustScore, i64)> {
    let id = agent_id.to_owned();
    let exists = state
        .store
        .lookup(move |conn| rows::agent_exists(conn, org, &id).map_err(StoreError::from))
        .await?;
    if !exists {
        return Err(LedgerError::UnknownAgent.into());
    }
    let scores = scores_with(state, org, Some(agent_id)).await?;
    let score = scores
        .get(agent_id)
        .copied()
        .ok_or_else(|| ApiError::from(LedgerError::UnknownAgent))?;
    Ok((score, scores.computed_at))
}

/// An agent's trust in force, its parts, and the vouches it receives and
/// gives.
#[utoipa::path(
    get,
    path = "/v1/trust/agents/{agent_id}",
    tag = "trust",
    params(("agent_id" = String, Path, description = "The agent, bare or as `agent:<id>`")),
    responses((status = 200, description = "Its trust", body = AgentTrustBody), Errors)
)]
pub(crate) async fn agent_trust(
    State(state): State<AppState>,
    ApiKeyAuth(principal): ApiKeyAuth,
    Path(agent_id): Path<String>,
) -> ApiResult<axum::Json<AgentTrustBody>> {
    let agent = agent(&agent_id)?;
    let org = principal.org;
    let (score, computed_at) = score_of(&state, org, agent.as_str()).await?;
    let now = state.clock.now();
    let id = agent.as_str().to_owned();
    let (vouches, vouched) = state
        .store
        .read(move |conn| {
            Ok::<_, StoreError>((
                rows::received(conn, org, &id, now.ms(), MAX_LISTED)?,
                rows::given_by_agent(conn, org, &id, now.ms(), MAX_LISTED)?,
            ))
        })
        .await?;
    Ok(axum::Json(AgentTrustBody {
        agent_id: agent.as_str().to_owned(),
        trust: score.trust,
        reputation: score.reputation,
        graph: score.graph,
        decay: score.decay,
        ceiling: score.ceiling,
        computed_at: iso_ms(computed_at),
        vouches: vouches.iter().map(vouch_body).collect(),
        vouched: vouched.iter().map(vouch_body).collect(),
    }))
}

/// Query of a page of the graph.
#[derive(Debug, Clone, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
pub(crate) struct GraphQuery {
    /// Agents per page, 1–1000 (default 100).
    #[param(minimum = 1, maximum = 1000)]
    pub(crate) limit: Option<u32>,
    /// The `next_cursor` of the previous page.
    pub(crate) cursor: Option<String>,
}

/// A page of the organisation's trust graph: agents by id with their
/// trust, and the vouches in force they receive.
#[utoipa::path(
    get,
    path = "/v1/trust/graph",
    tag = "trust",
    params(GraphQuery),
    responses((status = 200, description = "A page of the graph", body = TrustGraphPage), Errors)
)]
pub(crate) async fn trust_graph(
    State(state): State<AppState>,
    ApiKeyAuth(principal): ApiKeyAuth,
    Query(query): Query<GraphQuery>,
) -> ApiResult<axum::Json<TrustGraphPage>> {
    let limit = limit(query.limit, 100, 1000)? as usize;
    let org = principal.org;
    let scores = scores_with(&state, org, None).await?;
    let after = query.cursor.unwrap_or_default();
    let mut page = scores
        .scores
        .range::<str, _>((
            std::ops::Bound::Excluded(after.as_str()),
            std::ops::Bound::Unbounded,
        ))
        .take(limit + 1)
        .map(|(agent, score)| TrustNode {
            agent_id: agent.clone(),
            trust: score.trust,
        })
        .collect::<Vec<_>>();
    let next_cursor = if page.len() > limit {
        page.truncate(limit);
        page.last().map(|node| node.agent_id.clone())
    } else {
        None
    };
    let edges = match (page.first(), page.last()) {
        (Some(first), Some(last)) => {
            let (first, last) = (first.agent_id.clone(), last.agent_id.clone());
            let now = state.clock.now();
            state
                .store
                .read(move |conn| {
                    rows::received_by_range(conn, org, &first, &last, now.ms())
                        .map_err(StoreError::from)
                })
                .await?
        }
        _ => Vec::new(),
    };
    Ok(axum::Json(TrustGraphPage {
        nodes: page,
        edges: edges
            .iter()
            .map(|vouch| {
                let body = vouch_body(vouch);
                TrustEdge {
                    vouch_id: body.vouch_id,
                    voucher: body.voucher,
                    agent_id: body.agent_id,
                    weight: body.weight,
                }
            })
            .collect(),
        computed_at: iso_ms(scores.computed_at),
        next_cursor,
    }))
}

use mandate_core::trust_statement::{
    TRUST_STATEMENT_MEDIA_TYPE as STATEMENT_TYPE, TRUST_STATEMENT_TTL_SECONDS,
};

/// A signed trust statement of an agent: a JWT (`typ`
/// `trust-statement+jwt`) by a key of the JWKS, with its trust in force and
/// its parts, good for five minutes.
#[utoipa::path(
    get,
    path = "/v1/trust/agents/{agent_id}/statement",
    tag = "trust",
    params(("agent_id" = String, Path, description = "The agent, bare or as `agent:<id>`")),
    responses(
        (status = 200, description = "The compact JWT", body = String, content_type = "application/trust-statement+jwt"),
        Errors
    )
)]
pub(crate) async fn statement(
    State(state): State<AppState>,
    operation: Operation,
    headers: HeaderMap,
    call: AgentCall,
    Path(agent_id): Path<String>,
) -> ApiResult<Response> {
    let now = state.clock.now();
    let agent = agent(&agent_id)?;
    let org = if has_api_key(&headers) {
        operation.api_key(&state, &headers).await?.org
    } else if headers.contains_key(header::AUTHORIZATION) {
        let acting = call.acting(&state, now, None, Need::Token).await?;
        let jti = acting.jti.as_str().to_owned();
        let holder = state
            .store
            .lookup(move |conn| {
                crate::store::tokens::by_jti(conn, acting.org, &jti).map_err(StoreError::from)
            })
            .await?
            .ok_or_else(|| ApiError::from(LedgerError::TokenInactive))?;
        if holder.agent_id != agent.as_str() {
            return Err(ApiError::forbidden(
                "not_the_agent",
                "an agent's token fetches only that agent's own trust statement",
            ));
        }
        let (org, jti) = (acting.org, acting.jti.as_str().to_owned());
        let speaks = state
            .store
            .lookup(move |conn| {
                crate::store::agents::speaks_for_its_agent(conn, org, &jti)
                    .map_err(StoreError::from)
            })
            .await?;
        if !speaks {
            return Err(LedgerError::AgentNotYours(crate::ledger::NOT_ITS_AGENT).into());
        }
        acting.org
    } else {
        return Err(ApiError::unauthorized(
            "unauthorized",
            "a trust statement needs an API key (Authorization: Bearer mk_…), or the agent's own token",
        ));
    };
    let (score, computed_at) = score_of(&state, org, agent.as_str()).await?;
    let org_id = state
        .store
        .lookup(move |conn| crate::store::orgs::by_number(conn, org).map_err(StoreError::from))
        .await?
        .ok_or_else(|| ApiError::internal("the caller's organisation is missing"))?
        .id;
    let jwt = scores::sign_statement(
        &state,
        &agent,
        &org_id,
        &score,
        computed_at,
        now,
        TRUST_STATEMENT_TTL_SECONDS,
    )?;
    let mut response = jwt.into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(STATEMENT_TYPE),
    );
    Ok(response)
}

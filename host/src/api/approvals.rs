//! Approvals: what an agent waits for when a grant requires a human's yes
//! before the act. The agent (with its token) or a reader of its
//! organisation (with an API key) reads one, waiting up to 30 s for its
//! decision; a `reviewer` or `owner` key decides it. An agent's token never
//! decides, whatever it holds.

use std::time::Duration;

use axum::extract::{Path, State};
use axum::http::HeaderMap;
use mandate_core::{ApprovalDecision, ApprovalId, Jkt, Jth, Jti, KeyId};
use serde::Deserialize;
use utoipa::IntoParams;

use super::docs::Errors;
use super::extract::{AgentCall, ApiKeyAuth, Json, Need, Operation, Relaying, has_api_key};
use super::query::{Query, limit};
use crate::clock::iso_ms;
use crate::error::{ApiError, ApiResult};
use crate::ledger::LedgerError;
use crate::model::{ApprovalBody, ApprovalPage, ChainLink, DecisionRequest, forms};
use crate::queries::{self, ApprovalInFull, DEFAULT_LIMIT, MAX_LIMIT, QueryError};
use crate::store::approvals::ApprovalStatus;
use crate::store::orgs::Org;
use crate::store::tokens;
use crate::{AppState, spans};

/// Longest `wait` accepted, seconds.
pub(crate) const MAX_WAIT_SECONDS: u64 = 30;
/// How often a waiting read looks again without a local write to wake it
/// (another host may decide).
const WAIT_POLL: Duration = Duration::from_secs(1);

/// An approval as every endpoint shows it.
pub(crate) fn approval_body(full: ApprovalInFull) -> ApprovalBody {
    let ApprovalInFull {
        approval,
        record,
        chain,
    } = full;
    ApprovalBody {
        aar_id: record.shown_aar_id().map(str::to_owned),
        approval_id: approval.id,
        status: approval.status.as_str().to_owned(),
        agent_id: format!("agent:{}", record.agent_id),
        provenance_ref: record.provenance_ref,
        action: record.action,
        resource: record.resource,
        spend_usd: record.reserved.unwrap_or(record.spend).as_f64(),
        delegation_depth: record.delegation_depth,
        human_ref: record.human_ref,
        assurance_level: record.assurance_level,
        chain: chain
            .into_iter()
            .map(|(agent_id, delegation_depth)| ChainLink {
                agent_id: format!("agent:{agent_id}"),
                delegation_depth,
            })
            .collect(),
        record_status: record.state.status().as_str().to_owned(),
        requested_at: iso_ms(approval.requested_at),
        expires_at: iso_ms(approval.expires_at),
        decided_at: approval.decided_at.map(iso_ms),
        decided_by: approval.decided_by,
        note: approval.note,
        args: super::bodies::shown_args(record.args.as_deref()),
        args_hash: record.args_hash,
    }
}

/// An approval id from a path; any other form is unknown.
fn approval_id(text: &str) -> ApiResult<ApprovalId> {
    ApprovalId::parse(text).map_err(|_| QueryError::UnknownApproval.into())
}

/// Who reads an approval.
#[derive(Debug, Clone)]
enum Reader {
    /// A key of the organisation.
    Key(Org),
    /// The agent with this token: it reads approvals of records made with
    /// it or a token delegated from it; through a relay (its key), only
    /// those of records that relay key authorized.
    Token(Org, Jti, Option<Jkt>),
}

/// The approval `id` as `reader` may see it.
async fn read(state: &AppState, reader: &Reader, id: &ApprovalId) -> ApiResult<ApprovalInFull> {
    let (org, holder, relay) = match reader {
        Reader::Key(org) => (*org, None, None),
        Reader::Token(org, jti, relay) => (*org, Some(jti.clone()), relay.clone()),
    };
    let id = id.to_string();
    let full = state
        .store
        .lookup(move |conn| {
            let full = queries::approval(conn, org, &id)?;
            if let Some(holder) = &holder {
                let jth = Jti::parse(&full.record.jti)
                    .map(|jti| jti.hash())
                    .map_err(|_| QueryError::UnknownApproval)?;
                if !governed_by(conn, &jth, holder)? {
                    return Err(QueryError::UnknownApproval);
                }
                if let Some(relay) = &relay
                    && full.record.relay_jkt.as_deref() != Some(relay.as_str())
                {
                    return Err(QueryError::UnknownApproval);
                }
            }
            Ok(full)
        })
        .await?;
    Ok(full)
}

/// Whether the token `jth` is `holder`'s own or was delegated from it.
fn governed_by(
    conn: &crate::store::sql::Connection,
    jth: &Jth,
    holder: &Jti,
) -> Result<bool, QueryError> {
    let Some(text) = tokens::claims_text(conn, jth)? else {
        return Ok(false);
    };
    let claims: mandate_core::Claims = serde_json::from_str(&text)
        .map_err(|e| QueryError::Store(crate::store::StoreError::Internal(e.to_string())))?;
    Ok(claims.is_governed_by(holder))
}

/// Query of an approval read.
#[derive(Debug, Clone, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
pub(crate) struct WaitQuery {
    /// Wait up to this many seconds (0–30) for a pending approval to be
    /// decided before answering.
    #[param(minimum = 0, maximum = 30)]
    pub(crate) wait: Option<u64>,
}

/// An approval; with `wait`, answered once it is decided or the wait ends.
#[utoipa::path(
    get,
    path = "/v1/vat/approvals/{approval_id}",
    tag = "approvals",
    params(("approval_id" = String, Path, description = "The approval, `apr_<ulid>`"), WaitQuery),
    responses((status = 200, description = "The approval", body = ApprovalBody), Errors)
)]
pub(crate) async fn approval(
    State(state): State<AppState>,
    operation: Operation,
    headers: HeaderMap,
    call: AgentCall,
    Path(id): Path<String>,
    Query(query): Query<WaitQuery>,
) -> ApiResult<axum::Json<ApprovalBody>> {
    let wait = query.wait.unwrap_or(0);
    if wait > MAX_WAIT_SECONDS {
        return Err(ApiError::bad_request(
            "invalid_query",
            format!("wait must be between 0 and {MAX_WAIT_SECONDS}"),
        ));
    }
    let reader = if has_api_key(&headers) {
        Reader::Key(operation.api_key(&state, &headers).await?.org)
    } else {
        let acting = call
            .acting_relayed(
                &state,
                state.clock.now(),
                None,
                Need::Token,
                Relaying::RelayAlone,
            )
            .await?;
        Reader::Token(acting.org, acting.jti, acting.relay)
    };
    let id = approval_id(&id)?;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(wait);
    let mut committed = state.committed.subscribe();
    loop {
        committed.mark_unchanged();
        let full = read(&state, &reader, &id).await?;
        if full.approval.status != ApprovalStatus::Pending
            || tokio::time::Instant::now() >= deadline
        {
            return Ok(axum::Json(approval_body(full)));
        }
        let poll = tokio::time::Instant::now() + WAIT_POLL;
        tokio::select! {
            _ = committed.changed() => {}
            () = tokio::time::sleep_until(poll.min(deadline)) => {}
            // The server is stopping: answered as it stands.
            () = state.stopping.cancelled() => {
                return Ok(axum::Json(approval_body(full)));
            }
        }
    }
}

/// Query of the approval list.
#[derive(Debug, Clone, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
pub(crate) struct ApprovalQuery {
    /// Approvals in this status only.
    #[param(value_type = Option<forms::ApprovalStatus>)]
    pub(crate) status: Option<String>,
    /// Page size, 1–500 (default 50).
    #[param(minimum = 1, maximum = 500)]
    pub(crate) limit: Option<u32>,
    /// The `next_cursor` of the previous page.
    #[param(pattern = r"^[A-Za-z0-9_-]+$")]
    pub(crate) cursor: Option<String>,
}

/// The organisation's approvals, newest first.
#[utoipa::path(
    get,
    path = "/v1/vat/approvals",
    tag = "approvals",
    params(ApprovalQuery),
    responses((status = 200, description = "A page of approvals", body = ApprovalPage), Errors)
)]
pub(crate) async fn approvals(
    State(state): State<AppState>,
    ApiKeyAuth(principal): ApiKeyAuth,
    Query(query): Query<ApprovalQuery>,
) -> ApiResult<axum::Json<ApprovalPage>> {
    let status = query
        .status
        .as_deref()
        .map(|text| {
            ApprovalStatus::parse(text).ok_or_else(|| {
                ApiError::bad_request(
                    "invalid_query",
                    "status must be pending, approved, denied or expired",
                )
            })
        })
        .transpose()?;
    let limit = limit(query.limit, DEFAULT_LIMIT, MAX_LIMIT)?;
    let cursor = query.cursor;
    let org = principal.org;
    let page = state
        .store
        .read(move |conn| queries::approvals(conn, org, status, limit, cursor.as_deref()))
        .await?;
    Ok(axum::Json(ApprovalPage {
        approvals: page.items.into_iter().map(approval_body).collect(),
        next_cursor: page.next_cursor,
    }))
}

/// A person approves or denies an action waiting for approval.
#[utoipa::path(
    post,
    path = "/v1/vat/approvals/{approval_id}/decision",
    tag = "approvals",
    params(("approval_id" = String, Path, description = "The approval, `apr_<ulid>`")),
    request_body = DecisionRequest,
    responses((status = 200, description = "The decided approval", body = ApprovalBody), Errors)
)]
pub(crate) async fn decide(
    State(state): State<AppState>,
    ApiKeyAuth(principal): ApiKeyAuth,
    Path(id): Path<String>,
    Json(body): Json<DecisionRequest>,
) -> ApiResult<axum::Json<ApprovalBody>> {
    let now = state.clock.now();
    let id = approval_id(&id)?;
    let decision = match body.decision.as_str() {
        "approve" => ApprovalDecision::Approved,
        "deny" => ApprovalDecision::Denied,
        _ => {
            return Err(ApiError::invalid(
                "decision",
                "invalid_decision",
                "decision must be approve or deny",
            ));
        }
    };
    let note = super::input::text(
        "note",
        body.note.as_deref(),
        mandate_core::limits::MAX_APPROVAL_NOTE_CHARS,
    )?;
    let by = KeyId::parse(&principal.id).map_err(ApiError::internal)?;
    let org = principal.org;
    let decided = id.clone();
    let view = state
        .write(move |ledger| ledger.decide(org, &decided, decision, note.as_deref(), &by, now))
        .await?;
    if let Ok(aar_id) = mandate_core::AarId::parse(&view.record.aar_id) {
        spans::export(&state, &aar_id);
    }
    if view.approval.status != ApprovalStatus::Decided(decision) {
        return Err(LedgerError::ApprovalExpired.into());
    }
    let full = read(&state, &Reader::Key(org), &id).await?;
    Ok(axum::Json(approval_body(full)))
}

//! The events Mandate reports (DESIGN.md section 12): what each event's
//! `data` holds. The ledger writes them to the outbox in the transaction of
//! the write they report; webhooks and `GET /v1/events` deliver them.
//!
//! | type | when | data |
//! |---|---|---|
//! | `record.denied` | an attempt (authorize, record/action, delegate) is refused | [`RecordData`] |
//! | `record.failed` | a record completes with a result other than `success` | [`RecordData`] |
//! | `record.rated` | a human rates a record | [`RecordData`] |
//! | `token.revoked` | a revocation ends a token (and its descendants) | [`TokenRevokedData`] |
//! | `approval.requested` | an authorize waits for a human's approval | [`ApprovalData`] |
//! | `approval.decided` | an approval is approved, denied or expires | [`ApprovalData`] |
//! | `budget.threshold` | a chain's use of a budget reaches 80 % or 100 % | [`BudgetThresholdData`] |
//!
//! No event carries a jti or a key: a token is named by its jti hash
//! (`jth`, as the record log names it), a key by its id. Nor the `aar_id`
//! of a record it completes: one made with a bare `vat_jti` and not yet
//! completed is completed by its `aar_id` alone (spec §4.4), so events
//! about it leave the `aar_id` out.

use serde::Serialize;
use utoipa::ToSchema;

/// A record, as `record.*` events carry it.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct RecordData {
    pub aar_id: String,
    pub agent_id: String,
    pub provenance_ref: String,
    pub action: String,
    pub resource: String,
    /// `completed` or `denied`.
    pub status: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub result: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deny_reason: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rating: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// The API key that rated it (`record.rated`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rated_by: Option<String>,
    pub spend_usd: f64,
    pub delegation_depth: u32,
    pub created_at: String,
}

/// `token.revoked`: the token a revocation named, and how many tokens it
/// ended (the token and its descendants not revoked before).
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct TokenRevokedData {
    /// The jti hash of the token revoked.
    pub jth: String,
    pub agent_id: String,
    pub provenance_ref: String,
    pub delegation_depth: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Tokens the revocation ended: the token and descendants.
    pub tokens_revoked: u64,
    pub revoked_at: String,
}

/// `approval.requested` and `approval.decided`.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ApprovalData {
    pub approval_id: String,
    /// The record waiting; left out while its `aar_id` completes it (a
    /// record made with a bare `vat_jti`, not yet completed).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub aar_id: Option<String>,
    /// `pending`, `approved`, `denied` or `expired`.
    pub status: String,
    pub agent_id: String,
    pub provenance_ref: String,
    pub action: String,
    pub resource: String,
    pub spend_usd: f64,
    pub delegation_depth: u32,
    pub requested_at: String,
    pub expires_at: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub decided_at: Option<String>,
    /// The API key that decided (none for an expiry).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub decided_by: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// `budget.threshold`: a token's budget, shared by its chain, reached a
/// threshold.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct BudgetThresholdData {
    /// The jti hash of the token whose budget it is.
    pub jth: String,
    pub agent_id: String,
    pub provenance_ref: String,
    /// `max_spend_usd` or `max_actions`.
    pub budget: String,
    /// 80 or 100.
    pub threshold_percent: u32,
    /// What the token and its descendants have used (spend in US dollars
    /// including reservations, or actions).
    pub used: f64,
    pub limit: f64,
    /// The record whose charge reached the threshold; left out while its
    /// `aar_id` completes it (a record made with a bare `vat_jti`, not yet
    /// completed when charged).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub aar_id: Option<String>,
}

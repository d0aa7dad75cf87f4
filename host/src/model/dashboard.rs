//! The bodies of the reviewer's dashboard: agents with their windows and
//! sparklines, an agent's history, the overview, the inbox counts, the
//! token list and bulk ratings.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::forms;

/// An agent's counts over the window asked for.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct AgentWindowBody {
    /// Records made.
    pub records: u64,
    pub successes: u64,
    /// Records completed with a result other than `success`.
    pub errors: u64,
    /// Records denied.
    pub denied: u64,
    /// `denied / records` (0 without records).
    pub denial_rate: f64,
    /// `errors / (successes + errors)` (0 without outcomes).
    pub error_rate: f64,
}

/// One UTC day of an agent's sparkline.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct SparkDayBody {
    /// `YYYY-MM-DD` (UTC).
    pub day: String,
    pub successes: u64,
    pub errors: u64,
    pub denied: u64,
}

/// An agent in the list.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct AgentListItem {
    /// `agent:<agent_id>`.
    pub agent_id: String,
    pub combined_reputation: f64,
    pub execution_score: f64,
    pub feedback_score: f64,
    pub total_actions: u64,
    /// When it last made or completed a record; absent if never.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_activity: Option<String>,
    pub window: AgentWindowBody,
    /// The last 14 UTC days, oldest first, days without records included.
    pub recent: Vec<SparkDayBody>,
}

/// A page of agents.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct AgentPage {
    pub agents: Vec<AgentListItem>,
    /// Pass back as `cursor` (with the same `sort` and `order`) for the
    /// next page; absent on the last page.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

/// One UTC day of an agent's history.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct HistoryDayBody {
    /// `YYYY-MM-DD` (UTC).
    pub day: String,
    /// Records made that day.
    pub records: u64,
    /// Outcomes, denials and ratings that happened that day.
    pub successes: u64,
    pub errors: u64,
    pub denied: u64,
    pub approved: u64,
    pub flagged: u64,
    pub rejected: u64,
    /// The agent's combined reputation as the day ended.
    pub combined_reputation: f64,
}

/// An agent's history, oldest day first.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct AgentHistoryBody {
    /// `agent:<agent_id>`.
    pub agent_id: String,
    pub days: Vec<HistoryDayBody>,
}

/// One bucket (hour or day) of the overview.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct OverviewBucket {
    /// The bucket's start (RFC 3339, UTC).
    pub start: String,
    pub records: u64,
    pub denied: u64,
    pub errors: u64,
    /// Ratings given.
    pub ratings: u64,
    /// Approvals decided by a person (expiries are not decisions).
    pub approvals_decided: u64,
    /// Their mean and longest wait, in milliseconds; absent without any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub approval_wait_ms_mean: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub approval_wait_ms_max: Option<u64>,
}

/// The overview's window, summed.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct OverviewTotals {
    pub records: u64,
    pub denied: u64,
    pub errors: u64,
    pub ratings: u64,
    pub approvals_decided: u64,
    /// `denied / records` (0 without records).
    pub denial_rate: f64,
    /// `errors / (successes + errors)` (0 without outcomes).
    pub error_rate: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub approval_wait_ms_mean: Option<f64>,
}

/// A budget among the most used.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct BudgetUse {
    /// The token's jti hash (as events name it; a list never shows a jti
    /// of a chain's root).
    pub jth: String,
    /// `agent:<agent_id>`.
    pub agent_id: String,
    pub provenance_ref: String,
    /// `max_spend_usd` or `max_actions`.
    pub budget: String,
    pub used: f64,
    pub limit: f64,
    /// `used / limit` in percent.
    pub percent: f64,
}

/// The organisation over a window.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct OverviewBody {
    /// `24h`, `7d` or `30d`.
    pub window: String,
    pub from: String,
    pub to: String,
    /// `hour` (24h) or `day`.
    pub bucket: String,
    /// Every bucket from `from` to `to`, oldest first.
    pub series: Vec<OverviewBucket>,
    pub totals: OverviewTotals,
    /// The 10 budgets of tokens alive in the window with the largest share
    /// used, largest first.
    pub budgets: Vec<BudgetUse>,
}

/// What waits for a reviewer.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct InboxCounts {
    pub approvals_pending: u64,
    /// Completed records without a rating.
    pub records_unrated: u64,
}

/// `POST /v1/vat/aar/feedback`.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct BulkFeedbackRequest {
    #[schema(value_type = forms::ProvenanceRef)]
    pub provenance_ref: String,
    /// The result of the records to rate.
    #[schema(value_type = forms::Outcome)]
    pub result: String,
    #[schema(value_type = forms::Rating)]
    pub rating: String,
    /// Free text, at most 2 KiB, given to every rating.
    #[schema(value_type = Option<forms::Text>, max_length = 2048)]
    pub note: Option<String>,
}

/// The records a bulk rating rated.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct BulkFeedbackResponse {
    pub rated: u64,
    pub aar_ids: Vec<String>,
}

/// A token in the list.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct TokenListItem {
    /// The token's jti hash: a list never shows a jti.
    #[schema(value_type = crate::model::forms::Jth)]
    pub jth: String,
    pub agent_id: String,
    /// The parent's jti hash.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<crate::model::forms::Jth>)]
    pub parent: Option<String>,
    pub delegation_depth: u32,
    pub provenance_ref: String,
    pub human_ref: String,
    /// What the organisation knows the human by: the e-mail a token was
    /// issued for (L1), the ID token's name or e-mail (L2).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub human_label: Option<String>,
    pub assurance_level: String,
    /// `active`, `revoked` or `expired`.
    pub status: String,
    pub issued_at: String,
    pub expires_at: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub revoked_at: Option<String>,
}

/// A page of tokens: active ones first, then the others, newest issued
/// first.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct TokenPage {
    pub tokens: Vec<TokenListItem>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

//! The JSON bodies of `/v1/trust`: vouches, an agent's trust and its
//! parts, and pages of an organisation's trust graph.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// Text forms of trust values, for the OpenAPI document only.
#[allow(
    dead_code,
    reason = "these types only describe schemas; nothing builds them"
)]
pub mod forms {
    use utoipa::ToSchema;

    /// A vouch id, `vch_<ulid>`.
    #[derive(Debug, ToSchema)]
    #[schema(value_type = String, pattern = r"^vch_[0-7][0-9a-hjkmnp-tv-z]{25}$")]
    pub struct VouchId(String);
}

/// `POST /v1/trust/vouches`.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct VouchRequest {
    /// The agent vouched for, bare or as `agent:<id>`: an agent of the
    /// caller's organisation.
    pub agent_id: String,
    /// How strongly, in (0, 1]; kept to six decimals.
    #[schema(exclusive_minimum = 0, maximum = 1)]
    pub weight: f64,
    /// Why, for people reading the graph (at most 512 characters).
    #[schema(max_length = 512)]
    pub reason: Option<String>,
    /// RFC 3339, in the future: from then on the vouch no longer counts.
    pub expires_at: Option<String>,
}

/// Who vouched: a person, by the API key they vouched with, or an agent.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum VoucherBody {
    /// A verified person of the organisation (`owner`, `reviewer`).
    Human {
        /// The API key's id, `key_<ulid>`.
        key_id: String,
    },
    /// An agent of the organisation, with its token.
    Agent { agent_id: String },
}

/// A vouch.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct VouchBody {
    #[schema(value_type = forms::VouchId)]
    pub vouch_id: String,
    pub voucher: VoucherBody,
    /// The agent vouched for.
    pub agent_id: String,
    /// In (0, 1].
    pub weight: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// RFC 3339.
    pub created_at: String,
    /// RFC 3339: from then on it no longer counts.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<String>,
    /// RFC 3339: when it was withdrawn.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub withdrawn_at: Option<String>,
}

/// `GET /v1/trust/agents/{agent_id}`: an agent's trust in force and its
/// parts (see docs/api.md, "Trust"), with the vouches in force it
/// receives and gives.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct AgentTrustBody {
    pub agent_id: String,
    /// `T`, in [0, 1]: `min(ceiling, decay · (β · reputation + (1 − β) ·
    /// graph))`.
    pub trust: f64,
    /// Its combined reputation, in [0, 1].
    pub reputation: f64,
    /// What the vouches it receives give, in [0, 1].
    pub graph: f64,
    /// What inactivity leaves (1: active now).
    pub decay: f64,
    /// The most its delegators let it have (1 with a root token).
    pub ceiling: f64,
    /// RFC 3339: when the scores in force were computed (the server's
    /// time); a change made before it is counted.
    pub computed_at: String,
    /// Vouches in force it receives, oldest first (at most 1000).
    pub vouches: Vec<VouchBody>,
    /// Vouches in force it gives, oldest first (at most 1000).
    pub vouched: Vec<VouchBody>,
}

/// An agent of a page of the graph.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct TrustNode {
    pub agent_id: String,
    pub trust: f64,
}

/// A vouch in force of a page of the graph.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct TrustEdge {
    #[schema(value_type = forms::VouchId)]
    pub vouch_id: String,
    pub voucher: VoucherBody,
    /// The agent vouched for: a node of the page.
    pub agent_id: String,
    pub weight: f64,
}

/// `GET /v1/trust/graph`: a page of the organisation's agents by id, with
/// the vouches in force they receive.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct TrustGraphPage {
    pub nodes: Vec<TrustNode>,
    pub edges: Vec<TrustEdge>,
    /// RFC 3339: when the scores were computed.
    pub computed_at: String,
    /// The next page's `cursor`, when there is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

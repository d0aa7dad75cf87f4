//! The bodies of the OpenID AuthZEN Authorization API 1.0 (a gateway asks
//! Mandate for a decision): names and shapes exactly the specification's.
//! Unlike Mandate's own requests, unknown members are ignored, as the
//! specification requires ("JSON Serialization": receivers MUST ignore
//! unknown fields). How they map to Mandate's attempt is in
//! `api::authzen` and docs/authzen.md.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use utoipa::ToSchema;

/// The type of the subject Mandate decides for: its `id` is an agent's
/// compact token (a VAT).
pub const SUBJECT_TYPE: &str = "mandate_vat";

/// AuthZEN Subject (§5.1): for Mandate, the agent's token.
#[derive(Debug, Clone, Deserialize, ToSchema)]
pub struct AuthzenSubject {
    /// `mandate_vat`: `id` is the agent's compact token. Anything else is
    /// refused (`decision: false`, reason `subject_unsupported`).
    #[serde(rename = "type")]
    pub kind: String,
    /// The agent's compact token (`Authorization`'s credential as the agent
    /// sent it to the tool), never a bare jti: a jti proves nothing.
    pub id: String,
    /// Ignored.
    #[serde(default)]
    pub properties: Option<Map<String, Value>>,
}

/// AuthZEN Action (§5.3): the act, by Mandate's action name.
#[derive(Debug, Clone, Deserialize, ToSchema)]
pub struct AuthzenAction {
    /// Mandate's action (`read`, `send_email`, …).
    pub name: String,
    /// Ignored.
    #[serde(default)]
    pub properties: Option<Map<String, Value>>,
}

/// AuthZEN Resource (§5.2): Mandate's resource `type:id`.
#[derive(Debug, Clone, Deserialize, ToSchema)]
pub struct AuthzenResource {
    /// The resource's system: the part of Mandate's resource before the
    /// first `:` (`crm` in `crm:contact/42`); it holds no `:`.
    #[serde(rename = "type")]
    pub kind: String,
    /// The rest of Mandate's resource, after the first `:`
    /// (`contact/42`).
    pub id: String,
    /// Ignored.
    #[serde(default)]
    pub properties: Option<Map<String, Value>>,
}

/// AuthZEN Context (§5.4): what Mandate reads of it. Other members are
/// ignored.
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
pub struct AuthzenContext {
    /// The arguments of the act, judged exactly as `authorize` judges its
    /// `args` (a JSON object, at most 16 KiB as RFC 8785 canonical JSON; no
    /// member twice; numbers within ±(2^53 − 1)).
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    pub args: Option<mandate_core::StrictJson>,
    /// US dollars the act spends, reserved and charged as `authorize`'s
    /// `spend_usd`.
    #[serde(default)]
    #[schema(minimum = 0, maximum = 1_000_000_000, multiple_of = 0.000001)]
    pub spend_usd: Option<f64>,
    /// For a bound (DPoP) token: the holder's proof (RFC 9449), made for
    /// this evaluation request (`htm` `POST`, `htu` the URL of the
    /// endpoint asked, checked as every proof's `htu` is: `public_url` +
    /// path when set, as the metadata names it; `ath` the token's hash);
    /// used once per request.
    #[serde(default)]
    pub dpop: Option<String>,
}

/// `POST /v1/access/evaluation` (AuthZEN §6.1).
#[derive(Debug, Clone, Deserialize, ToSchema)]
pub struct EvaluationRequest {
    pub subject: AuthzenSubject,
    pub action: AuthzenAction,
    pub resource: AuthzenResource,
    #[serde(default)]
    pub context: Option<AuthzenContext>,
}

/// One evaluation of `POST /v1/access/evaluations`: each member it leaves
/// out is the request's top-level one (AuthZEN §7.1.1, "Default values");
/// one it holds replaces that default whole.
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
pub struct EvaluationItem {
    #[serde(default)]
    pub subject: Option<AuthzenSubject>,
    #[serde(default)]
    pub action: Option<AuthzenAction>,
    #[serde(default)]
    pub resource: Option<AuthzenResource>,
    #[serde(default)]
    pub context: Option<AuthzenContext>,
}

/// How the evaluations of a request run (AuthZEN §7.1.2.1).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum EvaluationsSemantic {
    /// Every evaluation, in order; one decision each.
    #[default]
    ExecuteAll,
    /// In order, stopping after the first that is not permitted.
    DenyOnFirstDeny,
    /// In order, stopping after the first that is permitted.
    PermitOnFirstPermit,
}

/// `options` of an evaluations request (AuthZEN §7.1.2); other members are
/// ignored.
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
pub struct EvaluationsOptions {
    #[serde(default)]
    pub evaluations_semantic: Option<EvaluationsSemantic>,
}

/// `POST /v1/access/evaluations` (AuthZEN §7.1). Without `evaluations`
/// (or with none) it is one evaluation of the top-level members, answered
/// as `POST /v1/access/evaluation` answers.
#[derive(Debug, Clone, Deserialize, ToSchema)]
pub struct EvaluationsRequest {
    #[serde(default)]
    pub subject: Option<AuthzenSubject>,
    #[serde(default)]
    pub action: Option<AuthzenAction>,
    #[serde(default)]
    pub resource: Option<AuthzenResource>,
    #[serde(default)]
    pub context: Option<AuthzenContext>,
    /// At most 1000.
    #[serde(default)]
    pub evaluations: Option<Vec<EvaluationItem>>,
    #[serde(default)]
    pub options: Option<EvaluationsOptions>,
}

/// The approval a gated act waits for.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct AccessApproval {
    pub approval_id: String,
    /// `pending`.
    pub status: String,
    pub expires_at: String,
    /// Where the approval is read (`GET`, with the agent's token or an API
    /// key): the deployment's public URL.
    pub url: String,
}

/// What Mandate says of a decision (the Decision's `context`, AuthZEN
/// §5.5.1).
#[derive(Debug, Clone, Default, Serialize, Deserialize, ToSchema)]
pub struct AccessDecisionContext {
    /// Why it is not permitted: Mandate's code (`action_not_permitted`,
    /// `budget_max_actions`, `args_not_permitted`, `approval_required`,
    /// `token_revoked`, `subject_unsupported`, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The reason in words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// The record the evaluation made or used.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aar_id: Option<String>,
    /// The approval the act waits for (`reason` `approval_required`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval: Option<AccessApproval>,
}

/// AuthZEN Decision (§5.5).
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct AccessDecision {
    pub decision: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<AccessDecisionContext>,
}

/// The decisions of an evaluations request, in the order asked; fewer when
/// a short-circuiting semantic stopped early (AuthZEN §7.2).
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct EvaluationsResponse {
    pub evaluations: Vec<AccessDecision>,
}

/// The answer to `POST /v1/access/evaluations`: the decisions, or one
/// decision for a request without `evaluations`.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(untagged)]
pub enum EvaluationsAnswer {
    Many(EvaluationsResponse),
    One(AccessDecision),
}

/// Policy Decision Point metadata (AuthZEN §9), at
/// `/.well-known/authzen-configuration`.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct PdpMetadata {
    /// The deployment's public URL.
    pub policy_decision_point: String,
    pub access_evaluation_endpoint: String,
    pub access_evaluations_endpoint: String,
}

//! The JSON bodies of `/v1/webhooks`: an organisation's webhook endpoints,
//! their secrets (shown only when made), and their delivery log.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// Text forms of webhook values, for the OpenAPI document only.
#[allow(
    dead_code,
    reason = "these types only describe schemas; nothing builds them"
)]
pub mod forms {
    use utoipa::ToSchema;

    /// A webhook id, `wh_<ulid>`.
    #[derive(Debug, ToSchema)]
    #[schema(value_type = String, pattern = r"^wh_[0-7][0-9a-hjkmnp-tv-z]{25}$")]
    pub struct WebhookId(String);

    /// A signing secret as Standard Webhooks writes it: `whsec_` and the
    /// secret's 32 bytes in standard base64.
    #[derive(Debug, ToSchema)]
    #[schema(value_type = String, pattern = r"^whsec_[A-Za-z0-9+/]{43}=$")]
    pub struct Secret(String);

    /// An event type.
    #[derive(Debug, ToSchema)]
    pub enum EventType {
        #[serde(rename = "record.denied")]
        RecordDenied,
        #[serde(rename = "record.failed")]
        RecordFailed,
        #[serde(rename = "record.rated")]
        RecordRated,
        #[serde(rename = "token.revoked")]
        TokenRevoked,
        #[serde(rename = "approval.requested")]
        ApprovalRequested,
        #[serde(rename = "approval.decided")]
        ApprovalDecided,
        #[serde(rename = "budget.threshold")]
        BudgetThreshold,
    }

    /// How an attempt at a delivery ended.
    #[derive(Debug, ToSchema)]
    #[schema(rename_all = "snake_case")]
    pub enum DeliveryOutcome {
        Delivered,
        Failed,
    }
}

/// `POST /v1/webhooks`.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateWebhookRequest {
    /// Where events are POSTed: an absolute `https` URL without user
    /// information, whose host has only public addresses (unless the
    /// deployment allows private ones).
    #[schema(max_length = 2048)]
    pub url: String,
    /// The event types to send: 1–64, each once.
    #[schema(value_type = Vec<forms::EventType>, min_items = 1, max_items = 64)]
    pub events: Vec<String>,
    /// A note for people (at most 256 characters).
    #[schema(max_length = 256)]
    pub description: Option<String>,
}

/// `PATCH /v1/webhooks/{webhook_id}`: what to change; members left out stay
/// as they are.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct UpdateWebhookRequest {
    /// A new URL, checked as at creation; the next event is tried at once.
    #[schema(max_length = 2048)]
    pub url: Option<String>,
    /// A new list of event types (1–64, each once).
    #[schema(value_type = Option<Vec<forms::EventType>>, min_items = 1, max_items = 64)]
    pub events: Option<Vec<String>>,
    /// A new note; an empty one removes it.
    #[schema(max_length = 256)]
    pub description: Option<String>,
    /// `false` stops deliveries; `true` resumes a disabled webhook from the
    /// event it stopped at, so nothing is lost.
    pub enabled: Option<bool>,
}

/// A webhook (never its secret).
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct WebhookBody {
    #[schema(value_type = forms::WebhookId)]
    pub webhook_id: String,
    pub url: String,
    #[schema(value_type = Vec<forms::EventType>)]
    pub events: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    pub enabled: bool,
    pub created_at: String,
    /// The API key that created it.
    pub created_by: String,
    /// When it was disabled, by its owner or after failing for the retry
    /// window.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub disabled_at: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub disabled_reason: Option<String>,
    /// Until when deliveries are also signed with the secret before the
    /// last rotation.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub previous_secret_expires_at: Option<String>,
    /// Failed attempts in a row at the next event to send.
    pub failed_attempts: u64,
    /// When the first of them was made.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failing_since: Option<String>,
    /// When the next attempt is due.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_attempt_at: Option<String>,
}

/// A webhook just created, with its signing secret: shown only now.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct WebhookCreatedBody {
    #[serde(flatten)]
    pub webhook: WebhookBody,
    #[schema(value_type = forms::Secret)]
    pub secret: String,
}

/// The webhooks of an organisation, newest first.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct WebhookList {
    pub webhooks: Vec<WebhookBody>,
}

/// A webhook's new signing secret: shown only now.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct SecretRotatedBody {
    #[schema(value_type = forms::WebhookId)]
    pub webhook_id: String,
    #[schema(value_type = forms::Secret)]
    pub secret: String,
    /// Until then deliveries are signed with the previous secret too.
    pub previous_secret_expires_at: String,
}

/// One attempt at delivering an event.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct DeliveryBody {
    /// The event's message id, the `webhook-id` header: the same on every
    /// attempt at one event.
    pub message_id: String,
    /// The event type.
    #[serde(rename = "type")]
    #[schema(value_type = forms::EventType)]
    pub kind: String,
    /// 1 for the first attempt at this event, then 2, …
    pub attempt: u64,
    pub at: String,
    #[schema(value_type = forms::DeliveryOutcome)]
    pub outcome: String,
    /// The status the endpoint answered, if it answered.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub http_status: Option<u16>,
    /// Why there was no answer, or why it does not count (a redirect).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    pub duration_ms: u64,
}

/// A page of a webhook's delivery log, newest first.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct DeliveryPage {
    pub deliveries: Vec<DeliveryBody>,
    /// Pass back as `cursor` for the next page; absent on the last page.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

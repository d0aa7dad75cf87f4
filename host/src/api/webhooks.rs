//! Webhooks: an organisation's owner registers endpoints that are sent its
//! events (Standard Webhooks), changes, disables, re-enables and deletes
//! them, rotates their signing secrets, and reads their delivery log. Every
//! operation needs `manage_webhooks` (owners); another organisation's
//! webhook answers exactly like one that does not exist. URLs are checked
//! by the SSRF guard (`crate::webhooks::ssrf`) before anything is stored.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use mandate_core::limits::{MAX_WEBHOOK_DESCRIPTION_CHARS, MAX_WEBHOOK_EVENTS};
use mandate_core::webhook::{EventType, Secret};
use mandate_core::{WebhookId, limits::WEBHOOK_SECRET_BYTES};
use serde::Deserialize;
use utoipa::IntoParams;

use super::docs::Errors;
use super::extract::{ApiKeyAuth, Json};
use super::input;
use super::query::{Query, limit};
use crate::clock::iso_ms;
use crate::error::{ApiError, ApiResult};
use crate::ledger::{NewWebhook, WebhookChange};
use crate::model::webhooks::{
    CreateWebhookRequest, DeliveryBody, DeliveryPage, SecretRotatedBody, UpdateWebhookRequest,
    WebhookBody, WebhookCreatedBody, WebhookList,
};
use crate::queries::{self, DEFAULT_LIMIT, MAX_LIMIT, QueryError};
use crate::secrets::Purpose;
use crate::store::webhooks::{Delivery, Webhook};
use crate::webhooks::ssrf;
use crate::{AppState, random};

/// A webhook as every endpoint shows it.
fn webhook_body(webhook: Webhook) -> WebhookBody {
    let (disabled_at, disabled_reason) = webhook.disabled.unzip();
    WebhookBody {
        webhook_id: webhook.id,
        url: webhook.url,
        events: webhook
            .events
            .iter()
            .map(|kind| kind.as_str().to_owned())
            .collect(),
        description: webhook.description,
        enabled: webhook.enabled,
        created_at: iso_ms(webhook.created_at),
        created_by: webhook.created_by,
        disabled_at: disabled_at.map(iso_ms),
        disabled_reason,
        previous_secret_expires_at: webhook.previous.map(|(_, until)| iso_ms(until)),
        failed_attempts: u64::try_from(webhook.streak.attempts).unwrap_or(0),
        failing_since: webhook.streak.first_attempt_at.map(iso_ms),
        next_attempt_at: webhook.streak.next_attempt_at.map(iso_ms),
    }
}

/// An attempt as the delivery log shows it.
fn delivery_body(delivery: Delivery) -> DeliveryBody {
    DeliveryBody {
        message_id: delivery.message_id,
        kind: delivery.kind,
        attempt: u64::try_from(delivery.attempt).unwrap_or(0),
        at: iso_ms(delivery.at),
        outcome: delivery.outcome.as_str().to_owned(),
        http_status: delivery.http_status,
        error: delivery.error,
        duration_ms: u64::try_from(delivery.duration_ms).unwrap_or(0),
    }
}

/// A webhook id from a path; any other form is unknown.
fn webhook_id(text: &str) -> ApiResult<WebhookId> {
    WebhookId::parse(text).map_err(|_| QueryError::UnknownWebhook.into())
}

/// Checks a URL with the SSRF guard; answers it as the URL standard writes
/// it.
async fn url(state: &AppState, text: &str) -> ApiResult<String> {
    let webhooks = &state.config.webhooks;
    ssrf::check_url(text, webhooks.allow_private, &webhooks.ports)
        .await
        .map(String::from)
        .map_err(|error| ApiError::invalid("url", error.code(), error.to_string()))
}

/// Reads a list of event types: 1 to [`MAX_WEBHOOK_EVENTS`], each known and
/// given once.
fn events(names: &[String]) -> ApiResult<Vec<EventType>> {
    if names.is_empty() {
        return Err(ApiError::invalid(
            "events",
            "empty_list",
            "events must name at least one event type",
        ));
    }
    if names.len() > MAX_WEBHOOK_EVENTS {
        return Err(ApiError::invalid(
            "events",
            "list_too_long",
            format!("events may hold at most {MAX_WEBHOOK_EVENTS} entries"),
        ));
    }
    let mut events = Vec::with_capacity(names.len());
    for name in names {
        let kind: EventType = name.parse().map_err(|_| {
            let known: Vec<&str> = EventType::ALL.iter().map(|kind| kind.as_str()).collect();
            ApiError::invalid(
                "events",
                "webhook_event_type_unknown",
                format!("events: `{name}` is not one of {}", known.join(", ")),
            )
        })?;
        if events.contains(&kind) {
            return Err(ApiError::invalid(
                "events",
                "duplicate_entry",
                format!("events: `{name}` is given twice"),
            ));
        }
        events.push(kind);
    }
    Ok(events)
}

/// A description: bounded text; an empty one is none.
fn description(text: Option<&str>) -> ApiResult<Option<String>> {
    Ok(
        input::text("description", text, MAX_WEBHOOK_DESCRIPTION_CHARS)?
            .filter(|text| !text.is_empty()),
    )
}

/// A new signing secret for the webhook `id`: as shown to its owner, and
/// sealed for the database.
fn new_secret(state: &AppState, id: &WebhookId) -> ApiResult<(String, Vec<u8>)> {
    let bytes: [u8; WEBHOOK_SECRET_BYTES] = random::bytes();
    let sealed = state
        .kek
        .seal(Purpose::WebhookSecret, id.as_str(), &bytes)
        .map_err(ApiError::internal)?;
    Ok((Secret::generate(bytes).to_whsec(), sealed))
}

/// Registers a webhook: the organisation's events written from now on, of
/// the types it names, are POSTed to its URL. Its signing secret is shown
/// only in this answer.
#[utoipa::path(
    post,
    path = "/v1/webhooks",
    tag = "webhooks",
    request_body = CreateWebhookRequest,
    responses((status = 201, description = "The webhook and its signing secret, shown once", body = WebhookCreatedBody), Errors)
)]
pub(crate) async fn create_webhook(
    State(state): State<AppState>,
    ApiKeyAuth(principal): ApiKeyAuth,
    Json(body): Json<CreateWebhookRequest>,
) -> ApiResult<(StatusCode, axum::Json<WebhookCreatedBody>)> {
    let now = state.clock.now();
    let events = events(&body.events)?;
    let description = description(body.description.as_deref())?;
    let url = url(&state, &body.url).await?;
    let id = WebhookId::new(random::ulid(now));
    let (secret, sealed) = new_secret(&state, &id)?;
    let new = NewWebhook {
        id,
        org: principal.org,
        url,
        events,
        description,
        secret: sealed,
        created_by: principal.id,
    };
    let webhook = state
        .write(move |ledger| ledger.create_webhook(&new, now))
        .await?;
    Ok((
        StatusCode::CREATED,
        axum::Json(WebhookCreatedBody {
            webhook: webhook_body(webhook),
            secret,
        }),
    ))
}

/// The organisation's webhooks, newest first (never their secrets).
#[utoipa::path(
    get,
    path = "/v1/webhooks",
    tag = "webhooks",
    responses((status = 200, description = "The webhooks", body = WebhookList), Errors)
)]
pub(crate) async fn list_webhooks(
    State(state): State<AppState>,
    ApiKeyAuth(principal): ApiKeyAuth,
) -> ApiResult<axum::Json<WebhookList>> {
    let org = principal.org;
    let webhooks = state
        .store
        .lookup(move |conn| queries::webhooks::webhooks(conn, org))
        .await?;
    Ok(axum::Json(WebhookList {
        webhooks: webhooks.into_iter().map(webhook_body).collect(),
    }))
}

/// A webhook.
#[utoipa::path(
    get,
    path = "/v1/webhooks/{webhook_id}",
    tag = "webhooks",
    params(("webhook_id" = String, Path, description = "The webhook, `wh_<ulid>`")),
    responses((status = 200, description = "The webhook", body = WebhookBody), Errors)
)]
pub(crate) async fn webhook(
    State(state): State<AppState>,
    ApiKeyAuth(principal): ApiKeyAuth,
    Path(id): Path<String>,
) -> ApiResult<axum::Json<WebhookBody>> {
    let id = webhook_id(&id)?;
    let org = principal.org;
    let webhook = state
        .store
        .lookup(move |conn| queries::webhooks::webhook(conn, org, id.as_str()))
        .await?;
    Ok(axum::Json(webhook_body(webhook)))
}

/// Changes a webhook's URL, events or description, or disables or
/// re-enables it. Re-enabled, it resumes from the event it stopped at.
#[utoipa::path(
    patch,
    path = "/v1/webhooks/{webhook_id}",
    tag = "webhooks",
    params(("webhook_id" = String, Path, description = "The webhook, `wh_<ulid>`")),
    request_body = UpdateWebhookRequest,
    responses((status = 200, description = "The webhook", body = WebhookBody), Errors)
)]
pub(crate) async fn update_webhook(
    State(state): State<AppState>,
    ApiKeyAuth(principal): ApiKeyAuth,
    Path(id): Path<String>,
    Json(body): Json<UpdateWebhookRequest>,
) -> ApiResult<axum::Json<WebhookBody>> {
    let now = state.clock.now();
    let id = webhook_id(&id)?;
    let events = body.events.as_deref().map(events).transpose()?;
    let description = match body.description.as_deref() {
        Some(text) => Some(description(Some(text))?),
        None => None,
    };
    let url = match body.url.as_deref() {
        Some(text) => Some(url(&state, text).await?),
        None => None,
    };
    let change = WebhookChange {
        url,
        events,
        description,
        enabled: body.enabled,
    };
    let org = principal.org;
    let webhook = state
        .write(move |ledger| ledger.update_webhook(org, &id, &change, now))
        .await?;
    Ok(axum::Json(webhook_body(webhook)))
}

/// Deletes a webhook and its delivery log; nothing more is sent to it.
#[utoipa::path(
    delete,
    path = "/v1/webhooks/{webhook_id}",
    tag = "webhooks",
    params(("webhook_id" = String, Path, description = "The webhook, `wh_<ulid>`")),
    responses((status = 204, description = "Deleted"), Errors)
)]
pub(crate) async fn delete_webhook(
    State(state): State<AppState>,
    ApiKeyAuth(principal): ApiKeyAuth,
    Path(id): Path<String>,
) -> ApiResult<StatusCode> {
    let id = webhook_id(&id)?;
    let org = principal.org;
    state
        .write(move |ledger| ledger.delete_webhook(org, &id))
        .await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Gives a webhook a new signing secret, shown only in this answer. For 24
/// hours deliveries are signed with the previous secret too, so receivers
/// can switch without refusing a delivery.
#[utoipa::path(
    post,
    path = "/v1/webhooks/{webhook_id}/rotate-secret",
    tag = "webhooks",
    params(("webhook_id" = String, Path, description = "The webhook, `wh_<ulid>`")),
    responses((status = 200, description = "The new secret, shown once", body = SecretRotatedBody), Errors)
)]
pub(crate) async fn rotate_secret(
    State(state): State<AppState>,
    ApiKeyAuth(principal): ApiKeyAuth,
    Path(id): Path<String>,
) -> ApiResult<axum::Json<SecretRotatedBody>> {
    let now = state.clock.now();
    let id = webhook_id(&id)?;
    let (secret, sealed) = new_secret(&state, &id)?;
    let org = principal.org;
    let webhook = state
        .write(move |ledger| ledger.rotate_webhook_secret(org, &id, &sealed, now))
        .await?;
    let until = webhook
        .previous
        .map(|(_, until)| until)
        .ok_or_else(|| ApiError::internal("a rotated webhook has no previous secret"))?;
    Ok(axum::Json(SecretRotatedBody {
        webhook_id: webhook.id,
        secret,
        previous_secret_expires_at: iso_ms(until),
    }))
}

/// Query of a delivery log.
#[derive(Debug, Clone, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
pub(crate) struct DeliveryQuery {
    /// Page size, 1–500 (default 50).
    #[param(minimum = 1, maximum = 500)]
    pub(crate) limit: Option<u32>,
    /// The `next_cursor` of the previous page.
    #[param(pattern = r"^[A-Za-z0-9_-]+$")]
    pub(crate) cursor: Option<String>,
}

/// A webhook's delivery log: every attempt, newest first.
#[utoipa::path(
    get,
    path = "/v1/webhooks/{webhook_id}/deliveries",
    tag = "webhooks",
    params(("webhook_id" = String, Path, description = "The webhook, `wh_<ulid>`"), DeliveryQuery),
    responses((status = 200, description = "A page of attempts", body = DeliveryPage), Errors)
)]
pub(crate) async fn deliveries(
    State(state): State<AppState>,
    ApiKeyAuth(principal): ApiKeyAuth,
    Path(id): Path<String>,
    Query(query): Query<DeliveryQuery>,
) -> ApiResult<axum::Json<DeliveryPage>> {
    let id = webhook_id(&id)?;
    let limit = limit(query.limit, DEFAULT_LIMIT, MAX_LIMIT)?;
    let org = principal.org;
    let cursor = query.cursor;
    let page = state
        .store
        .read(move |conn| {
            queries::webhooks::deliveries(conn, org, id.as_str(), limit, cursor.as_deref())
        })
        .await?;
    Ok(axum::Json(DeliveryPage {
        deliveries: page.items.into_iter().map(delivery_body).collect(),
        next_cursor: page.next_cursor,
    }))
}

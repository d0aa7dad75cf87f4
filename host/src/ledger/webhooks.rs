//! Webhooks on the write side: an owner creates, changes, rotates and
//! deletes its organisation's endpoints; a host's delivery worker leases
//! one, and stores each attempt with how far the endpoint's delivery has
//! come, in one transaction (so a crash between a receiver's 2xx and this
//! write sends that event again, with the same `webhook-id`). Every write
//! takes its organisation's lock first (PostgreSQL), as every write does,
//! so webhook rows are locked in the one order the ledger keeps.
//!
//! What to send and when to retry is the worker's decision
//! (`crate::webhooks::schedule`); the ledger stores it only if the worker
//! still holds the lease and nobody moved the endpoint meanwhile.

use mandate_core::WebhookId;
use mandate_core::limits::{MAX_WEBHOOKS_PER_ORG, WEBHOOK_ROTATION_OVERLAP_MS};
use mandate_core::webhook::EventType;

use super::{Ledger, LedgerError};
use crate::clock::Now;
use crate::store::events;
use crate::store::orgs::Org;
use crate::store::webhooks::{self as rows, Delivery, Outcome, Streak, Webhook};

/// The `disabled_reason` of a webhook its owner disabled.
pub const DISABLED_BY_OWNER: &str = "disabled by its owner";

/// A webhook to create.
#[derive(Debug, Clone)]
pub struct NewWebhook {
    pub id: WebhookId,
    pub org: Org,
    pub url: String,
    pub events: Vec<EventType>,
    pub description: Option<String>,
    /// The signing secret, sealed under the key-encryption key.
    pub secret: Vec<u8>,
    /// The API key creating it.
    pub created_by: String,
}

/// What an owner changes of a webhook; `None` leaves it as it is.
#[derive(Debug, Clone, Default)]
pub struct WebhookChange {
    pub url: Option<String>,
    pub events: Option<Vec<EventType>>,
    /// `Some(None)` removes the description.
    pub description: Option<Option<String>>,
    pub enabled: Option<bool>,
}

/// One attempt at delivering an event, as the worker made it.
#[derive(Debug, Clone)]
pub struct AttemptMade {
    pub event_seq: i64,
    pub message_id: String,
    pub kind: String,
    /// Unix milliseconds.
    pub at: i64,
    pub outcome: Outcome,
    pub http_status: Option<u16>,
    pub error: Option<String>,
    pub duration_ms: i64,
}

/// What a round of delivery to one webhook did, and where it leaves the
/// endpoint.
#[derive(Debug, Clone)]
pub struct RoundReport {
    pub webhook: String,
    pub org: Org,
    /// The host that holds the lease.
    pub owner: String,
    /// The endpoint's streak as the round found it.
    pub expected: Streak,
    /// The streak it leaves.
    pub next: Streak,
    /// Disable the endpoint at this time (unix milliseconds) for this
    /// reason: it failed for the whole retry window.
    pub disable: Option<(i64, String)>,
    /// The lease's new end (unix milliseconds).
    pub lease_until: i64,
    pub attempts: Vec<AttemptMade>,
}

impl Ledger {
    /// The webhook `id` of `org`; another organisation's is unknown.
    fn own_webhook(&self, org: Org, id: &WebhookId) -> Result<Webhook, LedgerError> {
        rows::by_id(&self.conn, id.as_str())?
            .filter(|webhook| webhook.org == org)
            .ok_or(LedgerError::UnknownWebhook)
    }

    /// Creates a webhook, sent the events written after this moment.
    pub fn create_webhook(&mut self, new: &NewWebhook, now: Now) -> Result<Webhook, LedgerError> {
        self.enter(new.org)?;
        if rows::count(&self.conn, new.org)? >= MAX_WEBHOOKS_PER_ORG {
            return Err(LedgerError::TooManyWebhooks);
        }
        // SQLite's one writer: every event up to here is stored once this
        // group's own are. PostgreSQL: every committed event; the events of
        // this group and of groups not yet committed take their `seq` in
        // their tails, after it.
        self.store_events()?;
        let cursor = events::last_seq(&self.conn)?;
        rows::insert(
            &self.conn,
            &rows::NewWebhook {
                id: new.id.as_str(),
                org: new.org,
                url: &new.url,
                events: &new.events,
                description: new.description.as_deref(),
                secret: &new.secret,
                created_at: now.ms(),
                created_by: &new.created_by,
                cursor,
            },
        )?;
        self.own_webhook(new.org, &new.id)
    }

    /// Changes a webhook. A new URL, or enabling a disabled webhook,
    /// forgets the failed attempts at its next event, which is tried at
    /// once; its cursor never moves, so nothing is skipped.
    pub fn update_webhook(
        &mut self,
        org: Org,
        id: &WebhookId,
        change: &WebhookChange,
        now: Now,
    ) -> Result<Webhook, LedgerError> {
        self.enter(org)?;
        let webhook = self.own_webhook(org, id)?;
        let url = change.url.as_deref().unwrap_or(&webhook.url);
        let events = change.events.as_deref().unwrap_or(&webhook.events);
        let description = match &change.description {
            Some(description) => description.as_deref(),
            None => webhook.description.as_deref(),
        };
        if url != webhook.url
            || events != webhook.events
            || description != webhook.description.as_deref()
        {
            rows::set_settings(&self.conn, id.as_str(), url, events, description)?;
        }
        match change.enabled {
            Some(true) if !webhook.enabled => rows::enable(&self.conn, id.as_str())?,
            Some(false) if webhook.enabled => {
                rows::disable(&self.conn, id.as_str(), now.ms(), DISABLED_BY_OWNER)?;
            }
            _ if url != webhook.url => rows::reset_streak(&self.conn, id.as_str())?,
            _ => {}
        }
        self.own_webhook(org, id)
    }

    /// Deletes a webhook and its delivery log; its organisation's events
    /// are no longer kept for it.
    pub fn delete_webhook(&mut self, org: Org, id: &WebhookId) -> Result<(), LedgerError> {
        self.enter(org)?;
        self.own_webhook(org, id)?;
        rows::delete(&self.conn, id.as_str())?;
        Ok(())
    }

    /// Makes `secret` (sealed) the webhook's signing secret; the one it
    /// replaces signs deliveries too for
    /// [`WEBHOOK_ROTATION_OVERLAP_MS`] more (a previous one still in its
    /// overlap is dropped).
    pub fn rotate_webhook_secret(
        &mut self,
        org: Org,
        id: &WebhookId,
        secret: &[u8],
        now: Now,
    ) -> Result<Webhook, LedgerError> {
        self.enter(org)?;
        self.own_webhook(org, id)?;
        rows::rotate(
            &self.conn,
            id.as_str(),
            secret,
            now.ms().saturating_add(WEBHOOK_ROTATION_OVERLAP_MS),
        )?;
        self.own_webhook(org, id)
    }

    /// Leases the webhook `id` of `org` to the host `owner` until
    /// `until_ms`, unless another host holds it; answers whether `owner`
    /// holds it.
    pub fn claim_webhook(
        &mut self,
        org: Org,
        id: &str,
        owner: &str,
        now: Now,
        until_ms: i64,
    ) -> Result<bool, LedgerError> {
        self.enter(org)?;
        Ok(rows::claim(&self.conn, id, owner, now.ms(), until_ms)?)
    }

    /// Stores a round's attempts and, if its host still holds the lease
    /// and the endpoint did not move meanwhile, where the round leaves it;
    /// answers whether it did. The attempts are stored either way (they
    /// were made), unless the webhook was deleted meanwhile.
    pub fn record_round(&mut self, report: &RoundReport) -> Result<bool, LedgerError> {
        self.enter(report.org)?;
        if rows::by_id(&self.conn, &report.webhook)?.is_none() {
            return Ok(false);
        }
        for attempt in &report.attempts {
            let number = rows::next_attempt(&self.conn, &report.webhook, attempt.event_seq)?;
            rows::insert_delivery(
                &self.conn,
                &Delivery {
                    webhook: report.webhook.clone(),
                    event_seq: attempt.event_seq,
                    attempt: number,
                    message_id: attempt.message_id.clone(),
                    kind: attempt.kind.clone(),
                    at: attempt.at,
                    outcome: attempt.outcome,
                    http_status: attempt.http_status,
                    error: attempt.error.clone(),
                    duration_ms: attempt.duration_ms,
                },
            )?;
        }
        let moved = rows::advance(
            &self.conn,
            &report.webhook,
            &report.owner,
            &report.expected,
            &report.next,
            report.lease_until,
        )?;
        if moved && let Some((at, reason)) = &report.disable {
            rows::disable(&self.conn, &report.webhook, *at, reason)?;
        }
        Ok(moved)
    }

    /// Ends the leases of the host `owner` (when it stops), or of every
    /// host (`None`: a process that alone delivers, at its start).
    pub fn release_webhooks(&mut self, owner: Option<&str>) -> Result<usize, LedgerError> {
        Ok(match owner {
            Some(owner) => rows::release(&self.conn, owner)?,
            None => rows::release_all(&self.conn)?,
        })
    }

    /// Deletes up to `limit` delivery attempts made before `before_ms`;
    /// answers how many.
    pub fn prune_deliveries(&mut self, before_ms: i64, limit: u32) -> Result<usize, LedgerError> {
        Ok(rows::prune_deliveries(&self.conn, before_ms, limit)?)
    }
}

//! Webhook delivery: a task per process that sends each organisation's
//! events from the outbox to its webhooks, as Standard Webhooks says.
//!
//! ```text
//! outbox (events, in seq order) ──▶ due webhooks (enabled, events past their cursor,
//!                                    retry due, lease free or ours)
//!   ─▶ claim the lease (a write) ─▶ round: read the webhook and the events after its
//!      cursor ─▶ schedule::plan ─▶ POST each (signed) ─▶ schedule::after_round
//!   ─▶ record the attempts and the new cursor, renewing the lease (one write) ─▶ again
//!      while everything was delivered
//! ```
//!
//! Each request carries the stored payload's bytes exactly, `content-type:
//! application/json`, a user agent and the three Standard Webhooks headers:
//! `webhook-id` (the event's message id, the same on every retry),
//! `webhook-timestamp` (the attempt's unix seconds) and `webhook-signature`
//! (core's `sign_headers`, with the current secret and, during a rotation,
//! the previous one). A 2xx is delivered; anything else — another status, a
//! redirect (never followed), a timeout, no connection, an address refused
//! by the SSRF guard ([`ssrf`]) — is a failed attempt, retried as
//! [`schedule`] says. Every attempt is a row of the delivery log, written
//! with the endpoint's progress in one transaction after it was made: at
//! least once, as a crash between a receiver's 2xx and that write sends the
//! event again, with the same `webhook-id`.
//!
//! One host delivers an endpoint at a time: the lease columns name it and
//! until when, renewed by every write of a round, so with several
//! PostgreSQL hosts an endpoint's events still go out in order. A host that
//! dies leaves its leases to lapse; on SQLite, where one process serves,
//! they are released at start. Decisions (due, retry times, the retry
//! window, leases) read the server's clock, so tests move it; waiting is in
//! real time, in short steps: a local commit wakes the task, and it polls
//! every second for what other hosts write. The task never holds the
//! writer for more than a few statements, never blocks a request, and
//! stops at shutdown, abandoning attempts in flight (their events are sent
//! again later) and releasing its leases.

pub mod schedule;
pub mod ssrf;

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::http::{HeaderValue, StatusCode, header};
use mandate_core::webhook::{MessageId, Secret, sign_headers};
use reqwest::Url;
use tokio::sync::oneshot;
use tokio::task::JoinSet;

use crate::AppState;
use crate::clock::Now;
use crate::config::WebhooksConfig;
use crate::error::truncate_chars;
use crate::ledger::{AttemptMade, LedgerError, RoundReport};
use crate::secrets::Purpose;
use crate::store::StoreError;
use crate::store::events::{self, StoredEvent};
use crate::store::orgs::Org;
use crate::store::webhooks::{self as rows, Outcome, Webhook};
use schedule::{Next, Policy};

/// How often the task looks for due webhooks without a local commit to
/// wake it (another host may have written, a retry may have come due).
const POLL: Duration = Duration::from_secs(1);
/// How long a task woken by a commit waits for more before reading.
const COALESCE: Duration = Duration::from_millis(50);
/// Most webhooks one process delivers to at once.
const MAX_SESSIONS: usize = 64;
/// Events read per round.
const SCAN: u32 = 256;
/// How often the delivery log is pruned.
const PRUNE_EVERY: Duration = Duration::from_secs(60);
/// Most delivery attempts one prune deletes.
const PRUNE_BATCH: u32 = 10_000;
/// Longest error kept with a failed attempt, in characters.
const MAX_ERROR_CHARS: usize = 300;
/// A lease outlives the longest round (one attempt's timeout, the events
/// of a round sent at once) by this much.
const LEASE_MARGIN_MS: i64 = 10_000;
/// The `user-agent` of deliveries.
const USER_AGENT: &str = concat!("Mandate-Webhooks/", env!("CARGO_PKG_VERSION"));

/// What every delivery session of a process shares.
#[derive(Debug)]
struct Deliverer {
    state: AppState,
    client: reqwest::Client,
    /// This process's name in the lease columns.
    owner: String,
    policy: Policy,
    allow_private: bool,
    /// The ports a URL may name (`[webhooks] ports`).
    ports: Vec<u16>,
    /// How long a lease lasts, milliseconds.
    lease_ms: i64,
}

/// The HTTP client of deliveries: no redirects, no proxy, the timeout of
/// `[webhooks] timeout_ms`, and (unless private addresses are allowed) a
/// resolver that refuses names with an address that is not public.
fn client(config: &WebhooksConfig) -> reqwest::Result<reqwest::Client> {
    let builder = reqwest::Client::builder()
        .user_agent(USER_AGENT)
        .timeout(Duration::from_millis(config.timeout_ms.get()))
        .redirect(reqwest::redirect::Policy::none())
        .no_proxy();
    if config.allow_private {
        builder.build()
    } else {
        builder.dns_resolver(ssrf::PublicOnly).build()
    }
}

/// Delivers webhooks until `stop` resolves (or its sender is dropped).
pub async fn deliver(state: AppState, mut stop: oneshot::Receiver<()>) {
    let config = &state.config.webhooks;
    let client = match client(config) {
        Ok(client) => client,
        Err(error) => {
            tracing::error!(%error, "webhook delivery is off: its HTTP client cannot be built");
            return;
        }
    };
    let timeout_ms = i64::try_from(config.timeout_ms.get()).unwrap_or(i64::MAX);
    let deliverer = Arc::new(Deliverer {
        client,
        owner: format!("host_{}", crate::random::ulid(state.clock.now())),
        policy: Policy::of(config),
        allow_private: config.allow_private,
        ports: config.ports.clone(),
        lease_ms: timeout_ms.saturating_add(LEASE_MARGIN_MS),
        state: state.clone(),
    });
    if state.config.database.url.is_none()
        && let Err(error) = state.write(|ledger| ledger.release_webhooks(None)).await
    {
        tracing::warn!(%error, "releasing the webhook leases of an earlier process failed");
    }
    let mut committed = state.committed.subscribe();
    let mut sessions = JoinSet::new();
    let mut busy: HashMap<tokio::task::Id, String> = HashMap::new();
    let mut pruned = Instant::now();
    loop {
        committed.mark_unchanged();
        if busy.len() < MAX_SESSIONS {
            start_due(&deliverer, &mut sessions, &mut busy).await;
        }
        if pruned.elapsed() >= PRUNE_EVERY {
            prune(&state).await;
            pruned = Instant::now();
        }
        tokio::select! {
            _ = &mut stop => break,
            Some(ended) = sessions.join_next_with_id() => {
                let id = match ended {
                    Ok((id, ())) => id,
                    Err(error) => error.id(),
                };
                busy.remove(&id);
            }
            _ = committed.changed() => tokio::time::sleep(COALESCE).await,
            () = tokio::time::sleep(POLL) => {}
        }
    }
    sessions.shutdown().await;
    let owner = deliverer.owner.clone();
    if let Err(error) = state
        .write(move |ledger| ledger.release_webhooks(Some(&owner)))
        .await
    {
        tracing::warn!(%error, "releasing this process's webhook leases failed");
    }
}

/// Starts a session for each due webhook no session of this process
/// serves yet.
async fn start_due(
    deliverer: &Arc<Deliverer>,
    sessions: &mut JoinSet<()>,
    busy: &mut HashMap<tokio::task::Id, String>,
) {
    let now = deliverer.state.clock.now().ms();
    let owner = deliverer.owner.clone();
    let limit = u32::try_from(MAX_SESSIONS).unwrap_or(u32::MAX);
    // The deliverer's reads are indexed and bounded: the lookups lane, so
    // a poll never takes a reader from the organisations' list queries.
    let due = deliverer
        .state
        .store
        .lookup(move |conn| Ok::<_, StoreError>(rows::due(conn, now, &owner, limit)?))
        .await;
    let due = match due {
        Ok(due) => due,
        Err(error) => {
            tracing::warn!(%error, "reading the webhooks due failed");
            return;
        }
    };
    let serving: HashSet<String> = busy.values().cloned().collect();
    for (id, org) in due {
        if busy.len() >= MAX_SESSIONS {
            break;
        }
        if serving.contains(&id) {
            continue;
        }
        let task = sessions.spawn(session(deliverer.clone(), id.clone(), org));
        busy.insert(task.id(), id);
    }
}

/// Deletes delivery attempts older than `[events] retain_hours`.
async fn prune(state: &AppState) {
    let retain_ms = i64::try_from(
        state
            .config
            .events
            .retain_hours
            .get()
            .saturating_mul(3_600_000),
    )
    .unwrap_or(i64::MAX);
    let before = state.clock.now().ms().saturating_sub(retain_ms);
    if let Err(error) = state
        .write(move |ledger| ledger.prune_deliveries(before, PRUNE_BATCH))
        .await
    {
        tracing::warn!(%error, "pruning the webhook delivery log failed");
    }
}

/// Claims the webhook `id` and delivers to it round after round while
/// every event sent is delivered.
async fn session(deliverer: Arc<Deliverer>, id: String, org: Org) {
    let now = deliverer.state.clock.now();
    let until = now.ms().saturating_add(deliverer.lease_ms);
    let (claimed, owner) = (id.clone(), deliverer.owner.clone());
    let held = deliverer
        .state
        .write(move |ledger| ledger.claim_webhook(org, &claimed, &owner, now, until))
        .await;
    match held {
        Ok(true) => {}
        Ok(false) => return,
        Err(error) => {
            tracing::warn!(%error, "claiming a webhook failed");
            return;
        }
    }
    loop {
        match deliverer.round(&id, org).await {
            Ok(true) => {}
            Ok(false) => return,
            Err(error) => {
                tracing::warn!(%error, "a webhook delivery round failed");
                return;
            }
        }
    }
}

/// What a round reads: the webhook, the events after its cursor and those
/// of them it was delivered already.
struct Window {
    webhook: Webhook,
    events: Vec<StoredEvent>,
    delivered: Vec<i64>,
}

/// A round's failure that is Mandate's, not the endpoint's.
#[derive(Debug, thiserror::Error)]
enum RoundError {
    #[error(transparent)]
    Ledger(#[from] LedgerError),
    #[error("a webhook secret does not open: {0}")]
    Secret(crate::secrets::SealError),
}

impl From<StoreError> for RoundError {
    fn from(error: StoreError) -> RoundError {
        RoundError::Ledger(error.into())
    }
}

impl Deliverer {
    /// One round for the webhook `id`: answers whether another should
    /// follow at once (everything sent was delivered and this process still
    /// holds the lease).
    async fn round(&self, id: &str, org: Org) -> Result<bool, RoundError> {
        let now = self.state.clock.now();
        let read = id.to_owned();
        let window = self
            .state
            .store
            .lookup(move |conn| {
                let Some(webhook) = rows::by_id(conn, &read)? else {
                    return Ok::<_, StoreError>(None);
                };
                let cursor = webhook.streak.cursor;
                Ok(Some(Window {
                    events: events::after(conn, webhook.org, cursor, SCAN)?,
                    delivered: rows::delivered_after(conn, &webhook.id, cursor)?,
                    webhook,
                }))
            })
            .await?;
        let Some(Window {
            webhook,
            events,
            delivered,
        }) = window
        else {
            return Ok(false);
        };
        let ours = webhook
            .lease
            .as_ref()
            .is_some_and(|(owner, until)| *owner == self.owner && *until > now.ms());
        let due = webhook
            .streak
            .next_attempt_at
            .is_none_or(|at| at <= now.ms());
        if !webhook.enabled || webhook.org != org || !ours || !due {
            return Ok(false);
        }
        let mut plan = schedule::plan(&events, &webhook.events, &delivered, self.policy.round());
        if plan.seen.is_empty() {
            return Ok(false);
        }
        // Groups of `concurrency` at once, one group after the other, until
        // one has a failure, or until the lease could lapse during the next
        // group (it is renewed by the round's write); a failure's streak
        // begins with its group.
        let lease_until = webhook.lease.as_ref().map_or(0, |(_, until)| *until);
        let attempt_ms = self.lease_ms.saturating_sub(LEASE_MARGIN_MS);
        let mut attempts = Vec::with_capacity(plan.send.len());
        let mut failed = None;
        let mut failed_at = now;
        if !plan.send.is_empty() {
            let secrets = self.secrets(&webhook, now)?;
            for group in plan.send.chunks(self.policy.concurrency.max(1)) {
                let sent_at = self.state.clock.now();
                if !attempts.is_empty() && sent_at.ms().saturating_add(attempt_ms) >= lease_until {
                    break;
                }
                let made = futures_util::future::join_all(
                    group
                        .iter()
                        .map(|event| self.attempt(&webhook.url, &secrets, event)),
                )
                .await;
                failed = made
                    .iter()
                    .find(|made| made.outcome == Outcome::Failed)
                    .map(|made| (made.event_seq, failure(made)));
                attempts.extend(made);
                if failed.is_some() {
                    failed_at = sent_at;
                    break;
                }
            }
        }
        if failed.is_none() {
            plan.keep_sent(attempts.len());
        }
        let ended = self.state.clock.now();
        let next = schedule::after_round(
            &webhook.streak,
            &plan,
            failed.as_ref().map(|(seq, error)| (*seq, error.as_str())),
            failed_at.ms(),
            ended.ms(),
            &self.policy,
            jitter(),
        );
        let caught_up = matches!(next, Next::Caught(_));
        let report = RoundReport {
            webhook: webhook.id.clone(),
            org,
            owner: self.owner.clone(),
            expected: webhook.streak,
            next: *next.streak(),
            disable: match next {
                Next::Disable(_, reason) => Some((ended.ms(), reason)),
                Next::Caught(_) | Next::Retry(_) => None,
            },
            lease_until: ended.ms().saturating_add(self.lease_ms),
            attempts,
        };
        let kept = self
            .state
            .write(move |ledger| ledger.record_round(&report))
            .await?;
        Ok(kept && caught_up)
    }

    /// The secrets deliveries of `webhook` are signed with at `now`: the
    /// current one, and the previous one until its overlap ends.
    fn secrets(&self, webhook: &Webhook, now: Now) -> Result<Vec<Secret>, RoundError> {
        let open = |sealed: &[u8]| {
            self.state
                .kek
                .open(Purpose::WebhookSecret, &webhook.id, sealed)
                .map(Secret::generate)
                .map_err(RoundError::Secret)
        };
        let mut secrets = vec![open(&webhook.secret)?];
        if let Some((sealed, until)) = &webhook.previous
            && now.ms() < *until
        {
            secrets.push(open(sealed)?);
        }
        Ok(secrets)
    }

    /// One attempt at delivering `event` to `url`.
    async fn attempt(&self, url: &str, secrets: &[Secret], event: &StoredEvent) -> AttemptMade {
        let at = self.state.clock.now();
        let started = Instant::now();
        let (outcome, http_status, error) = match self.send(url, secrets, event, at).await {
            Ok(status) if status.is_success() => (Outcome::Delivered, Some(status.as_u16()), None),
            Ok(status) if status.is_redirection() => (
                Outcome::Failed,
                Some(status.as_u16()),
                Some("a redirect, which is never followed".to_owned()),
            ),
            Ok(status) => (Outcome::Failed, Some(status.as_u16()), None),
            Err(error) => (Outcome::Failed, None, Some(error)),
        };
        AttemptMade {
            event_seq: event.seq,
            message_id: event.id.clone(),
            kind: event.kind.clone(),
            at: at.ms(),
            outcome,
            http_status,
            error,
            duration_ms: i64::try_from(started.elapsed().as_millis()).unwrap_or(i64::MAX),
        }
    }

    /// POSTs `event` to `url`, signed at `at`; the status answered, or why
    /// there was none.
    async fn send(
        &self,
        url: &str,
        secrets: &[Secret],
        event: &StoredEvent,
        at: Now,
    ) -> Result<StatusCode, String> {
        let url: Url = ssrf::parse(url, self.allow_private).map_err(|e| e.to_string())?;
        if !self.allow_private {
            ssrf::check_literal(&url).map_err(|e| format!("refused: {e}"))?;
            ssrf::check_port(&url, &self.ports).map_err(|e| format!("refused: {e}"))?;
        }
        let id = MessageId::parse(&event.id).map_err(|e| e.to_string())?;
        let signed =
            sign_headers(secrets, &id, at.s(), &event.payload).map_err(|e| e.to_string())?;
        let mut request = self
            .client
            .post(url)
            .header(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            )
            .body(event.payload.clone());
        for (name, value) in signed.pairs() {
            request = request.header(name, value);
        }
        let response = request.send().await.map_err(|e| describe(&e))?;
        Ok(response.status())
    }
}

/// Why an attempt failed, as the retry and disable reasons say it.
fn failure(made: &AttemptMade) -> String {
    match (&made.error, made.http_status) {
        (Some(error), _) => error.clone(),
        (None, Some(status)) => format!("HTTP {status}"),
        (None, None) => "failed".to_owned(),
    }
}

/// A request's failure as the delivery log keeps it: what went wrong and
/// its causes, never the URL (its query may hold the receiver's token).
fn describe(error: &reqwest::Error) -> String {
    let mut text = if error.is_timeout() {
        "timed out".to_owned()
    } else if error.is_connect() {
        "could not connect".to_owned()
    } else {
        "the request failed".to_owned()
    };
    let mut cause = std::error::Error::source(error);
    while let Some(error) = cause {
        let said = error.to_string();
        if !text.ends_with(&said) {
            text.push_str(": ");
            text.push_str(&said);
        }
        cause = error.source();
    }
    truncate_chars(&mut text, MAX_ERROR_CHARS);
    text
}

/// A random number from 0 to 1, for a retry's jitter.
fn jitter() -> f64 {
    let bytes: [u8; 4] = crate::random::bytes();
    f64::from(u32::from_le_bytes(bytes)) / f64::from(u32::MAX)
}

//! `GET /v1/events`: the organisation's events as Server-Sent Events (the
//! HTML Living Standard's `text/event-stream`), read from the outbox. Each
//! event is `id` (its message id, `msg_<ulid>`, the same as its webhook's
//! `webhook-id`), `event` (its type) and `data` (its payload exactly as a
//! webhook receives it). A client that reconnects with `Last-Event-ID`
//! gets every event after that one, in order; without it, the events from
//! now on. A comment line is sent while nothing happens, so proxies keep
//! the connection open and the client notices a dead one.

use std::collections::{HashMap, VecDeque};
use std::convert::Infallible;
use std::sync::Mutex;
use std::time::Duration;

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::sse::{Event, KeepAlive, Sse};
use futures_util::{Stream, StreamExt as _};

use super::docs::Errors;
use super::extract::ApiKeyAuth;
use crate::AppState;
use crate::error::{ApiError, ApiResult};
use crate::store::StoreError;
use crate::store::events::{self, StoredEvent};
use crate::store::orgs::Org;

/// How often the outbox is read again without a local write to wake the
/// stream (another host may have written).
const POLL: Duration = Duration::from_secs(1);
/// Events read at once.
const BATCH: u32 = 256;
/// How long a stream woken by a write waits for more before reading.
const COALESCE: Duration = Duration::from_millis(20);

/// The `seq` a stream starts after: that of `Last-Event-ID`, or the
/// newest event's.
async fn start(state: &AppState, org: Org, headers: &HeaderMap) -> ApiResult<i64> {
    let last = match headers.get("last-event-id") {
        None => None,
        Some(value) => {
            let text = value.to_str().map_err(|_| {
                ApiError::bad_request("invalid_last_event_id", "Last-Event-ID is not readable")
            })?;
            Some(text.trim().to_owned()).filter(|id| !id.is_empty())
        }
    };
    match last {
        None => Ok(state
            .store
            .lookup(|conn| Ok::<_, StoreError>(events::last_seq(conn)?))
            .await?),
        Some(id) => state
            .store
            .lookup(move |conn| Ok::<_, StoreError>(events::seq_of(conn, org, &id)?))
            .await?
            .ok_or_else(|| {
                ApiError::bad_request(
                    "invalid_last_event_id",
                    "Last-Event-ID names no event of this organisation that is still kept \
                     (events are kept for [events] retain_hours); reconnect without it",
                )
            }),
    }
}

/// The event streams each organisation, and each API key, holds open on
/// this process.
#[derive(Debug, Default)]
pub struct OpenStreams(Mutex<Open>);

#[derive(Debug, Default)]
struct Open {
    by_org: HashMap<Org, usize>,
    /// By API key id: one key may not hold all of its organisation's.
    by_key: HashMap<String, usize>,
}

/// One open stream of an organisation's key, counted until it is dropped
/// (the client went away, or the server stops).
struct StreamSlot {
    state: AppState,
    org: Org,
    key: String,
}

impl OpenStreams {
    /// A slot for one more stream of `org` on the API key `key`, unless
    /// the organisation holds `max_streams_per_org` already or the key
    /// `max_streams_per_key`.
    fn take(state: &AppState, org: Org, key: &str) -> ApiResult<StreamSlot> {
        let config = &state.config.events;
        let mut open = state.streams.0.lock().unwrap_or_else(|e| e.into_inner());
        let of_org = open.by_org.get(&org).copied().unwrap_or(0);
        if of_org >= config.max_streams_per_org {
            return Err(ApiError::new(
                StatusCode::TOO_MANY_REQUESTS,
                "too_many_streams",
                "this organisation holds as many event streams open as it may; close one",
            ));
        }
        let of_key = open.by_key.get(key).copied().unwrap_or(0);
        if of_key >= config.max_streams_per_key {
            return Err(ApiError::new(
                StatusCode::TOO_MANY_REQUESTS,
                "too_many_streams",
                format!(
                    "this API key holds as many event streams open as one key may ({}); close one",
                    config.max_streams_per_key
                ),
            ));
        }
        *open.by_org.entry(org).or_default() += 1;
        *open.by_key.entry(key.to_owned()).or_default() += 1;
        Ok(StreamSlot {
            state: state.clone(),
            org,
            key: key.to_owned(),
        })
    }
}

/// Counts one stream fewer under `key`, forgetting it at zero.
fn release<K: std::hash::Hash + Eq>(counts: &mut HashMap<K, usize>, key: &K) {
    if let Some(count) = counts.get_mut(key) {
        *count = count.saturating_sub(1);
        if *count == 0 {
            counts.remove(key);
        }
    }
}

impl Drop for StreamSlot {
    fn drop(&mut self) {
        let mut open = self
            .state
            .streams
            .0
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        release(&mut open.by_org, &self.org);
        release(&mut open.by_key, &self.key);
    }
}

/// Where a stream stands: after which event, and the events read but not
/// yet sent.
struct Tail {
    /// Held for as long as the stream is open.
    _slot: StreamSlot,
    state: AppState,
    org: Org,
    after: i64,
    /// Subscribed at the first wait, so a stream that never waits holds
    /// nothing.
    committed: Option<tokio::sync::watch::Receiver<u64>>,
    ready: VecDeque<StoredEvent>,
}

impl Tail {
    /// The next event, once there is one: read from the outbox, waiting
    /// for a local write (or the poll interval) between reads.
    async fn next(&mut self) -> StoredEvent {
        loop {
            if let Some(event) = self.ready.pop_front() {
                self.after = event.seq;
                return event;
            }
            let committed = self
                .committed
                .get_or_insert_with(|| self.state.committed.subscribe());
            committed.mark_unchanged();
            let (org, after) = (self.org, self.after);
            let read = self
                .state
                .store
                .lookup(move |conn| Ok::<_, StoreError>(events::after(conn, org, after, BATCH)?))
                .await;
            match read {
                Ok(batch) if !batch.is_empty() => {
                    self.ready.extend(batch);
                    continue;
                }
                Ok(_) => {}
                Err(error) => tracing::warn!(%error, "reading events for a stream failed"),
            }
            let committed = self
                .committed
                .get_or_insert_with(|| self.state.committed.subscribe());
            tokio::select! {
                _ = committed.changed() => {
                    // Let a burst of writes land before reading again.
                    tokio::time::sleep(COALESCE).await;
                }
                () = tokio::time::sleep(POLL) => {}
            }
        }
    }
}

fn sse_event(event: &StoredEvent) -> Event {
    Event::default()
        .id(event.id.clone())
        .event(event.kind.clone())
        .data(String::from_utf8_lossy(&event.payload))
}

/// The organisation's events as they happen, as Server-Sent Events.
#[utoipa::path(
    get,
    path = "/v1/events",
    tag = "events",
    params(("Last-Event-ID" = Option<String>, Header, description = "Resume after this event (`msg_<ulid>`), as an EventSource sends it on reconnecting")),
    responses(
        (status = 200, description = "`text/event-stream`: `id` the message id, `event` the type, `data` the payload as webhooks receive it", content_type = "text/event-stream", body = String),
        Errors,
    )
)]
pub(crate) async fn events(
    State(state): State<AppState>,
    ApiKeyAuth(principal): ApiKeyAuth,
    headers: HeaderMap,
) -> ApiResult<Sse<impl Stream<Item = Result<Event, Infallible>>>> {
    let org = principal.org;
    let slot = OpenStreams::take(&state, org, &principal.id)?;
    let after = start(&state, org, &headers).await?;
    let tail = Tail {
        _slot: slot,
        state,
        org,
        after,
        committed: None,
        ready: VecDeque::new(),
    };
    let heartbeat = tail.state.config.events.heartbeat();
    let stopping = tail.state.stopping.clone().cancelled_owned();
    let stream = futures_util::stream::unfold(tail, |mut tail| async move {
        let event = tail.next().await;
        Some((Ok(sse_event(&event)), tail))
    })
    .take_until(stopping);
    Ok(Sse::new(stream).keep_alive(KeepAlive::new().interval(heartbeat).text("heartbeat")))
}

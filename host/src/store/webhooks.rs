//! The `webhooks` and `deliveries` tables: each endpoint of an organisation
//! with its sealed secrets, how far its delivery has come (`cursor`, the
//! `seq` of the last event it was sent or skipped), the streak of failed
//! attempts at its next event, and which host delivers it (a lease); and
//! every attempt at a delivery. Only the ledger writes them; the read side
//! and the delivery worker read them.

use mandate_core::webhook::EventType;

use super::orgs::Org;
use crate::store::sql::{self, Connection, OptionalExtension, Row, params};

/// A stored webhook.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Webhook {
    /// `wh_<ulid>`.
    pub id: String,
    pub org: Org,
    pub url: String,
    /// The event types it is sent, in the order its owner gave them.
    pub events: Vec<EventType>,
    pub description: Option<String>,
    /// The signing secret, sealed (`crate::secrets::Purpose::WebhookSecret`).
    pub secret: Vec<u8>,
    /// The secret before the last rotation, sealed, and until when (unix
    /// milliseconds) deliveries are still signed with it.
    pub previous: Option<(Vec<u8>, i64)>,
    /// Unix milliseconds.
    pub created_at: i64,
    /// The API key that created it.
    pub created_by: String,
    pub enabled: bool,
    /// When and why it was disabled (by its owner, or after failing for
    /// `[webhooks] retry_for_hours`).
    pub disabled: Option<(i64, String)>,
    pub streak: Streak,
    /// The host delivering it and until when (unix milliseconds).
    pub lease: Option<(String, i64)>,
}

/// Where an endpoint's delivery stands: the `seq` of the last event it was
/// sent (or that it does not subscribe to), and the failed attempts at the
/// event after it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Streak {
    pub cursor: i64,
    /// Failed attempts in a row at the next event.
    pub attempts: i64,
    /// When the first of them was made (unix milliseconds).
    pub first_attempt_at: Option<i64>,
    /// Not before then is the next attempt made (unix milliseconds).
    pub next_attempt_at: Option<i64>,
}

const COLUMNS: &str = "id, org, url, events, description, secret, previous_secret, \
     previous_until, created_at, created_by, enabled, disabled_at, disabled_reason, cursor, \
     attempts, first_attempt_at, next_attempt_at, lease_owner, lease_until";

fn from_row(row: &Row<'_>) -> sql::Result<Webhook> {
    let events: String = row.get("events")?;
    let previous_secret: Option<Vec<u8>> = row.get("previous_secret")?;
    let previous_until: Option<i64> = row.get("previous_until")?;
    let disabled_at: Option<i64> = row.get("disabled_at")?;
    let disabled_reason: Option<String> = row.get("disabled_reason")?;
    let lease_owner: Option<String> = row.get("lease_owner")?;
    let lease_until: Option<i64> = row.get("lease_until")?;
    Ok(Webhook {
        id: row.get("id")?,
        org: row.get("org")?,
        url: row.get("url")?,
        events: serde_json::from_str(&events)
            .map_err(|e| sql::Error::corrupt("webhooks column events", e))?,
        description: row.get("description")?,
        secret: row.get("secret")?,
        previous: previous_secret.zip(previous_until),
        created_at: row.get("created_at")?,
        created_by: row.get("created_by")?,
        enabled: row.get("enabled")?,
        disabled: disabled_at.map(|at| (at, disabled_reason.unwrap_or_default())),
        streak: Streak {
            cursor: row.get("cursor")?,
            attempts: row.get("attempts")?,
            first_attempt_at: row.get("first_attempt_at")?,
            next_attempt_at: row.get("next_attempt_at")?,
        },
        lease: lease_owner.zip(lease_until),
    })
}

/// A list of event types as the `events` column stores it: a JSON array
/// of their names.
fn events_text(events: &[EventType]) -> sql::Result<String> {
    serde_json::to_string(events).map_err(|e| sql::Error::Conversion(e.to_string()))
}

/// A webhook about to be stored.
#[derive(Debug, Clone, Copy)]
pub struct NewWebhook<'a> {
    pub id: &'a str,
    pub org: Org,
    pub url: &'a str,
    pub events: &'a [EventType],
    pub description: Option<&'a str>,
    /// Sealed.
    pub secret: &'a [u8],
    /// Unix milliseconds.
    pub created_at: i64,
    pub created_by: &'a str,
    /// The `seq` of the newest event: it is sent the events after it.
    pub cursor: i64,
}

/// Stores a new, enabled webhook.
pub fn insert(conn: &Connection, new: &NewWebhook<'_>) -> sql::Result<()> {
    conn.prepare_cached(
        "INSERT INTO webhooks (id, org, url, events, description, secret, created_at,
                               created_by, enabled, cursor)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, 1, ?9)",
    )?
    .execute(params![
        new.id,
        new.org,
        new.url,
        events_text(new.events)?,
        new.description,
        new.secret,
        new.created_at,
        new.created_by,
        new.cursor
    ])?;
    Ok(())
}

/// The webhook with this id, if any.
pub fn by_id(conn: &Connection, id: &str) -> sql::Result<Option<Webhook>> {
    conn.prepare_cached(&format!("SELECT {COLUMNS} FROM webhooks WHERE id = ?1"))?
        .query_row([id], from_row)
        .optional()
}

/// The webhooks of `org`, newest first.
pub fn of_org(conn: &Connection, org: Org) -> sql::Result<Vec<Webhook>> {
    conn.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM webhooks WHERE org = ?1 ORDER BY created_at DESC, id DESC"
    ))?
    .query_map([org], from_row)?
    .collect()
}

/// How many webhooks `org` has.
pub fn count(conn: &Connection, org: Org) -> sql::Result<u64> {
    let count: i64 = conn
        .prepare_cached("SELECT count(*) FROM webhooks WHERE org = ?1")?
        .query_row([org], |row| row.get(0))?;
    Ok(u64::try_from(count).unwrap_or(0))
}

/// Stores what an owner may change of a webhook.
pub fn set_settings(
    conn: &Connection,
    id: &str,
    url: &str,
    events: &[EventType],
    description: Option<&str>,
) -> sql::Result<()> {
    conn.prepare_cached(
        "UPDATE webhooks SET url = ?2, events = ?3, description = ?4 WHERE id = ?1",
    )?
    .execute(params![id, url, events_text(events)?, description])?;
    Ok(())
}

/// Forgets the failed attempts at the next event: it is tried at once.
pub fn reset_streak(conn: &Connection, id: &str) -> sql::Result<()> {
    conn.prepare_cached(
        "UPDATE webhooks SET attempts = 0, first_attempt_at = NULL, next_attempt_at = NULL
         WHERE id = ?1",
    )?
    .execute([id])?;
    Ok(())
}

/// Enables a webhook: its delivery goes on from its cursor.
pub fn enable(conn: &Connection, id: &str) -> sql::Result<()> {
    conn.prepare_cached(
        "UPDATE webhooks SET enabled = 1, disabled_at = NULL, disabled_reason = NULL
         WHERE id = ?1",
    )?
    .execute([id])?;
    reset_streak(conn, id)
}

/// Disables a webhook at `at` (unix milliseconds) for `reason`; its cursor
/// stays where it is.
pub fn disable(conn: &Connection, id: &str, at: i64, reason: &str) -> sql::Result<()> {
    conn.prepare_cached(
        "UPDATE webhooks SET enabled = 0, disabled_at = ?2, disabled_reason = ?3,
                next_attempt_at = NULL, lease_owner = NULL, lease_until = NULL
         WHERE id = ?1",
    )?
    .execute(params![id, at, reason])?;
    Ok(())
}

/// Deletes a webhook and its delivery log.
pub fn delete(conn: &Connection, id: &str) -> sql::Result<()> {
    conn.prepare_cached("DELETE FROM deliveries WHERE webhook = ?1")?
        .execute([id])?;
    conn.prepare_cached("DELETE FROM webhooks WHERE id = ?1")?
        .execute([id])?;
    Ok(())
}

/// Makes `secret` (sealed) the current secret and the current one the
/// previous, which signs deliveries until `previous_until` (unix
/// milliseconds).
pub fn rotate(conn: &Connection, id: &str, secret: &[u8], previous_until: i64) -> sql::Result<()> {
    conn.prepare_cached(
        "UPDATE webhooks SET previous_secret = secret, previous_until = ?3, secret = ?2
         WHERE id = ?1",
    )?
    .execute(params![id, secret, previous_until])?;
    Ok(())
}

/// Up to `limit` enabled webhooks with events after their cursor, due at
/// `now` (unix milliseconds) and not leased to another host than `owner`,
/// with their organisations: the first due first.
pub fn due(
    conn: &Connection,
    now: i64,
    owner: &str,
    limit: u32,
) -> sql::Result<Vec<(String, Org)>> {
    conn.prepare_cached(
        "SELECT id, org FROM webhooks w
         WHERE enabled = 1
           AND (next_attempt_at IS NULL OR next_attempt_at <= ?1)
           AND (lease_owner IS NULL OR lease_owner = ?2 OR lease_until <= ?1)
           AND EXISTS (SELECT 1 FROM events e WHERE e.org = w.org AND e.seq > w.cursor)
         ORDER BY COALESCE(next_attempt_at, 0), id
         LIMIT ?3",
    )?
    .query_map(params![now, owner, limit], |row| {
        Ok((row.get(0)?, row.get(1)?))
    })?
    .collect()
}

/// Leases an enabled webhook to `owner` until `until` unless another host
/// holds an unexpired lease on it; answers whether `owner` holds it now.
pub fn claim(conn: &Connection, id: &str, owner: &str, now: i64, until: i64) -> sql::Result<bool> {
    let changed = conn
        .prepare_cached(
            "UPDATE webhooks SET lease_owner = ?2, lease_until = ?4
             WHERE id = ?1 AND enabled = 1
               AND (lease_owner IS NULL OR lease_owner = ?2 OR lease_until <= ?3)",
        )?
        .execute(params![id, owner, now, until])?;
    Ok(changed == 1)
}

/// Ends every lease `owner` holds; answers how many.
pub fn release(conn: &Connection, owner: &str) -> sql::Result<usize> {
    conn.prepare_cached(
        "UPDATE webhooks SET lease_owner = NULL, lease_until = NULL WHERE lease_owner = ?1",
    )?
    .execute([owner])
}

/// Ends every lease: for a process that is the only one delivering (on
/// SQLite), at its start, whatever a process before it held when it died.
pub fn release_all(conn: &Connection) -> sql::Result<usize> {
    conn.prepare_cached(
        "UPDATE webhooks SET lease_owner = NULL, lease_until = NULL
         WHERE lease_owner IS NOT NULL",
    )?
    .execute([])
}

/// Moves a webhook's delivery on from `expected` to `next`, renewing
/// `owner`'s lease until `lease_until`, if `owner` still holds the lease and
/// nobody changed the streak meanwhile (an owner's edit resets it); answers
/// whether it did.
pub fn advance(
    conn: &Connection,
    id: &str,
    owner: &str,
    expected: &Streak,
    next: &Streak,
    lease_until: i64,
) -> sql::Result<bool> {
    let changed = conn
        .prepare_cached(
            "UPDATE webhooks SET cursor = ?5, attempts = ?6, first_attempt_at = ?7,
                    next_attempt_at = ?8, lease_until = ?9
             WHERE id = ?1 AND lease_owner = ?2 AND cursor = ?3 AND attempts = ?4",
        )?
        .execute(params![
            id,
            owner,
            expected.cursor,
            expected.attempts,
            next.cursor,
            next.attempts,
            next.first_attempt_at,
            next.next_attempt_at,
            lease_until
        ])?;
    Ok(changed == 1)
}

/// How an attempt at a delivery ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// The endpoint answered 2xx.
    Delivered,
    /// Anything else: another status, a timeout, no connection, an address
    /// refused.
    Failed,
}

impl Outcome {
    /// The stored (and wire) name.
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Delivered => "delivered",
            Outcome::Failed => "failed",
        }
    }

    fn parse(text: &str) -> Option<Outcome> {
        match text {
            "delivered" => Some(Outcome::Delivered),
            "failed" => Some(Outcome::Failed),
            _ => None,
        }
    }
}

/// One attempt at delivering one event to one webhook.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Delivery {
    pub webhook: String,
    pub event_seq: i64,
    /// 1 for the first attempt at this event, then 2, …
    pub attempt: i64,
    /// The event's message id (`webhook-id`).
    pub message_id: String,
    /// The event type.
    pub kind: String,
    /// Unix milliseconds.
    pub at: i64,
    pub outcome: Outcome,
    pub http_status: Option<u16>,
    pub error: Option<String>,
    pub duration_ms: i64,
}

const DELIVERY_COLUMNS: &str =
    "webhook, event_seq, attempt, message_id, type, at, outcome, http_status, error, duration_ms";

fn delivery_from_row(row: &Row<'_>) -> sql::Result<Delivery> {
    let outcome: String = row.get("outcome")?;
    Ok(Delivery {
        webhook: row.get("webhook")?,
        event_seq: row.get("event_seq")?,
        attempt: row.get("attempt")?,
        message_id: row.get("message_id")?,
        kind: row.get("type")?,
        at: row.get("at")?,
        outcome: Outcome::parse(&outcome)
            .ok_or_else(|| sql::Error::corrupt("deliveries column outcome", outcome))?,
        http_status: row.get("http_status")?,
        error: row.get("error")?,
        duration_ms: row.get("duration_ms")?,
    })
}

/// The number the next attempt at the event `event_seq` of a webhook gets.
pub fn next_attempt(conn: &Connection, webhook: &str, event_seq: i64) -> sql::Result<i64> {
    let last: Option<i64> = conn
        .prepare_cached(
            "SELECT max(attempt) FROM deliveries WHERE webhook = ?1 AND event_seq = ?2",
        )?
        .query_row(params![webhook, event_seq], |row| row.get(0))?;
    Ok(last.unwrap_or(0) + 1)
}

/// Stores an attempt.
pub fn insert_delivery(conn: &Connection, delivery: &Delivery) -> sql::Result<()> {
    conn.prepare_cached(&format!(
        "INSERT INTO deliveries ({DELIVERY_COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)"
    ))?
    .execute(params![
        delivery.webhook,
        delivery.event_seq,
        delivery.attempt,
        delivery.message_id,
        delivery.kind,
        delivery.at,
        delivery.outcome.as_str(),
        delivery.http_status,
        delivery.error,
        delivery.duration_ms
    ])?;
    Ok(())
}

/// The events after `cursor` a webhook has already been delivered (with
/// several deliveries in flight, a later event may arrive while an earlier
/// one is retried).
pub fn delivered_after(conn: &Connection, webhook: &str, cursor: i64) -> sql::Result<Vec<i64>> {
    conn.prepare_cached(
        "SELECT DISTINCT event_seq FROM deliveries
         WHERE webhook = ?1 AND event_seq > ?2 AND outcome = 'delivered'
         ORDER BY event_seq",
    )?
    .query_map(params![webhook, cursor], |row| row.get(0))?
    .collect()
}

/// Where a page of the delivery log starts: after the attempt at `at` (unix
/// milliseconds) of event `event_seq` numbered `attempt`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeliveryKey {
    pub at: i64,
    pub event_seq: i64,
    pub attempt: i64,
}

/// Up to `limit` attempts of a webhook, newest first, before `before`.
pub fn deliveries(
    conn: &Connection,
    webhook: &str,
    before: Option<DeliveryKey>,
    limit: u32,
) -> sql::Result<Vec<Delivery>> {
    let before = before.unwrap_or(DeliveryKey {
        at: i64::MAX,
        event_seq: i64::MAX,
        attempt: i64::MAX,
    });
    conn.prepare_cached(&format!(
        "SELECT {DELIVERY_COLUMNS} FROM deliveries
         WHERE webhook = ?1 AND (at, event_seq, attempt) < (?2, ?3, ?4)
         ORDER BY at DESC, event_seq DESC, attempt DESC
         LIMIT ?5"
    ))?
    .query_map(
        params![webhook, before.at, before.event_seq, before.attempt, limit],
        delivery_from_row,
    )?
    .collect()
}

/// Deletes up to `limit` attempts made before `before_ms`; answers how
/// many.
pub fn prune_deliveries(conn: &Connection, before_ms: i64, limit: u32) -> sql::Result<usize> {
    conn.prepare_cached(
        "DELETE FROM deliveries WHERE (webhook, event_seq, attempt) IN (
            SELECT webhook, event_seq, attempt FROM deliveries WHERE at < ?1 LIMIT ?2)",
    )?
    .execute(params![before_ms, limit])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn webhook(conn: &Connection, id: &str, org: Org, cursor: i64) {
        insert(
            conn,
            &NewWebhook {
                id,
                org,
                url: "https://example.com/hook",
                events: &[EventType::RecordDenied, EventType::TokenRevoked],
                description: Some("pager"),
                secret: b"sealed",
                created_at: 1,
                created_by: "key_1",
                cursor,
            },
        )
        .unwrap();
    }

    fn event(conn: &Connection, seq: i64, org: Org) {
        use crate::store::events::{INSERT_INTO, INSERTED, StoredEvent, row};
        let event = StoredEvent {
            seq,
            id: format!("msg_{seq}"),
            org,
            kind: "record.denied".to_owned(),
            created_at: seq,
            payload: b"{}".to_vec(),
        };
        conn.insert_rows(INSERT_INTO, &INSERTED, &[row(event)])
            .unwrap();
    }

    #[test]
    fn a_webhook_reads_back_as_stored() {
        let conn = crate::store::open_in_memory().unwrap();
        webhook(&conn, "wh_1", Org::DEFAULT, 7);
        let stored = by_id(&conn, "wh_1").unwrap().unwrap();
        assert_eq!(
            stored.events,
            [EventType::RecordDenied, EventType::TokenRevoked]
        );
        assert_eq!(stored.description.as_deref(), Some("pager"));
        assert!(stored.enabled);
        assert_eq!(
            stored.streak,
            Streak {
                cursor: 7,
                ..Streak::default()
            }
        );
        assert_eq!(stored.previous, None);
        rotate(&conn, "wh_1", b"new", 99).unwrap();
        let rotated = by_id(&conn, "wh_1").unwrap().unwrap();
        assert_eq!(rotated.secret, b"new");
        assert_eq!(rotated.previous, Some((b"sealed".to_vec(), 99)));
    }

    #[test]
    fn only_webhooks_with_events_past_their_cursor_and_no_other_lease_are_due() {
        let conn = crate::store::open_in_memory().unwrap();
        let other = Org::from_number(1);
        webhook(&conn, "wh_a", Org::DEFAULT, 0);
        webhook(&conn, "wh_b", other, 0);
        assert!(due(&conn, 10, "me", 10).unwrap().is_empty(), "no events");
        event(&conn, 1, Org::DEFAULT);
        assert_eq!(
            due(&conn, 10, "me", 10).unwrap(),
            [("wh_a".to_owned(), Org::DEFAULT)],
            "another organisation's event is not wh_b's"
        );
        assert!(claim(&conn, "wh_a", "other", 10, 20).unwrap());
        assert!(due(&conn, 10, "me", 10).unwrap().is_empty(), "leased");
        assert!(!claim(&conn, "wh_a", "me", 10, 30).unwrap());
        assert_eq!(due(&conn, 20, "me", 10).unwrap().len(), 1, "lapsed");
        assert!(claim(&conn, "wh_a", "me", 20, 30).unwrap());
        let held = by_id(&conn, "wh_a").unwrap().unwrap();
        let moved = Streak {
            cursor: 1,
            ..Streak::default()
        };
        assert!(!advance(&conn, "wh_a", "other", &held.streak, &moved, 40).unwrap());
        assert!(advance(&conn, "wh_a", "me", &held.streak, &moved, 40).unwrap());
        assert!(
            !advance(&conn, "wh_a", "me", &held.streak, &moved, 40).unwrap(),
            "the streak moved"
        );
        assert!(due(&conn, 20, "me", 10).unwrap().is_empty(), "sent");
        disable(&conn, "wh_a", 21, "test").unwrap();
        assert!(!claim(&conn, "wh_a", "me", 21, 30).unwrap(), "disabled");
    }

    #[test]
    fn the_delivery_log_pages_newest_first() {
        let conn = crate::store::open_in_memory().unwrap();
        webhook(&conn, "wh_1", Org::DEFAULT, 0);
        for (seq, at) in [(1, 10), (1, 30), (2, 20), (2, 40)] {
            let attempt = next_attempt(&conn, "wh_1", seq).unwrap();
            insert_delivery(
                &conn,
                &Delivery {
                    webhook: "wh_1".to_owned(),
                    event_seq: seq,
                    attempt,
                    message_id: format!("msg_{seq}"),
                    kind: "record.denied".to_owned(),
                    at,
                    outcome: if at >= 30 {
                        Outcome::Delivered
                    } else {
                        Outcome::Failed
                    },
                    http_status: Some(500),
                    error: None,
                    duration_ms: 1,
                },
            )
            .unwrap();
        }
        let first = deliveries(&conn, "wh_1", None, 3).unwrap();
        let keys: Vec<(i64, i64)> = first.iter().map(|d| (d.at, d.attempt)).collect();
        assert_eq!(keys, [(40, 2), (30, 2), (20, 1)]);
        let last = first.last().unwrap();
        let rest = deliveries(
            &conn,
            "wh_1",
            Some(DeliveryKey {
                at: last.at,
                event_seq: last.event_seq,
                attempt: last.attempt,
            }),
            3,
        )
        .unwrap();
        assert_eq!(rest.len(), 1);
        assert_eq!(rest[0].at, 10);
        assert_eq!(delivered_after(&conn, "wh_1", 0).unwrap(), [1, 2]);
        assert_eq!(delivered_after(&conn, "wh_1", 1).unwrap(), [2]);
        assert_eq!(prune_deliveries(&conn, 25, 100).unwrap(), 2);
        delete(&conn, "wh_1").unwrap();
        assert!(deliveries(&conn, "wh_1", None, 10).unwrap().is_empty());
        assert!(by_id(&conn, "wh_1").unwrap().is_none());
    }
}

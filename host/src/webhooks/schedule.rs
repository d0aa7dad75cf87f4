//! What a webhook is sent next, and what follows a round of attempts: pure
//! functions of what is stored and what happened, so the rules of order,
//! skipping, backoff and the retry window are tested without a network, a
//! clock or a database.
//!
//! An endpoint's `cursor` is the `seq` of the last event of its
//! organisation it was sent, or skipped because it does not subscribe to
//! its type. A round takes the events after it in `seq` order, skips those
//! of other types (and those already delivered while an earlier one was
//! retried), and sends up to `per_endpoint_concurrency` of the rest at once
//! (one, by default: strict order), then the next as many, up to
//! [`BURST`] times, stopping at the first failure; what happened is written
//! once, at the round's end. Afterwards the cursor moves past every
//! event before the first that failed; that one heads the endpoint's queue
//! and is retried, with every later one of the round not delivered, after
//! a delay that doubles from `retry_first_delay_ms` up to an hour, with
//! jitter. An event that has failed for `retry_for_hours` since its first
//! attempt disables the endpoint, its cursor still before that event.

use mandate_core::limits::WEBHOOK_MAX_RETRY_DELAY_MS;
use mandate_core::webhook::EventType;

use crate::config::WebhooksConfig;
use crate::store::events::StoredEvent;
use crate::store::webhooks::Streak;

/// The delivery rules a deployment configures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Policy {
    /// The delay before the first retry, milliseconds.
    pub first_delay_ms: u64,
    /// How long an event is retried before its endpoint is disabled,
    /// milliseconds.
    pub retry_for_ms: i64,
    /// Events sent to one endpoint at once.
    pub concurrency: usize,
}

impl Policy {
    /// The most events one round sends: [`BURST`] groups of
    /// `concurrency`.
    pub fn round(&self) -> usize {
        self.concurrency.saturating_mul(BURST)
    }

    pub fn of(config: &WebhooksConfig) -> Policy {
        Policy {
            first_delay_ms: config.retry_first_delay_ms.get(),
            retry_for_ms: i64::try_from(config.retry_for_hours.get().saturating_mul(3_600_000))
                .unwrap_or(i64::MAX),
            concurrency: usize::try_from(config.per_endpoint_concurrency.get())
                .unwrap_or(usize::MAX),
        }
    }
}

/// How many times a round sends `per_endpoint_concurrency` events, one
/// after the other, before it writes their attempts and the endpoint's
/// progress in one write. A durable write per event would bound an
/// endpoint at the commit rate; a crash mid-round sends up to this many
/// times the concurrency again, with the same `webhook-id`s.
pub const BURST: usize = 32;

/// What one round sends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan<'a> {
    /// The events to send now, in `seq` order.
    pub send: Vec<&'a StoredEvent>,
    /// Every event the round looked at (sent, skipped or delivered
    /// before), in `seq` order: the cursor may move past them.
    pub seen: Vec<i64>,
}

/// The events of a round: the first `most` of `events` (those after the
/// cursor, in `seq` order) of a `subscribed` type and not `delivered`
/// already. A round asks for [`Policy::round`] of them.
pub fn plan<'a>(
    events: &'a [StoredEvent],
    subscribed: &[EventType],
    delivered: &[i64],
    most: usize,
) -> Plan<'a> {
    let mut plan = Plan {
        send: Vec::new(),
        seen: Vec::new(),
    };
    for event in events {
        if plan.send.len() >= most {
            break;
        }
        plan.seen.push(event.seq);
        let wanted = subscribed.iter().any(|kind| kind.as_str() == event.kind);
        if wanted && !delivered.contains(&event.seq) {
            plan.send.push(event);
        }
    }
    plan
}

impl Plan<'_> {
    /// Keeps the first `sent` events to send, and of those seen only the
    /// ones up to the last of them: a round that stopped early (its lease
    /// nearly over) moves the cursor past what it sent, not past what it
    /// was to send.
    pub fn keep_sent(&mut self, sent: usize) {
        if sent >= self.send.len() {
            return;
        }
        self.send.truncate(sent);
        let last = self.send.last().map_or(i64::MIN, |event| event.seq);
        self.seen.retain(|seq| *seq <= last);
    }
}

/// How a round ended for an endpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Next {
    /// Everything sent was delivered: the cursor moved past what the round
    /// saw.
    Caught(Streak),
    /// An event failed: it is retried at `next_attempt_at`.
    Retry(Streak),
    /// An event failed for the whole retry window: the endpoint is
    /// disabled, its cursor still before that event.
    Disable(Streak, String),
}

impl Next {
    /// The endpoint's streak after the round.
    pub fn streak(&self) -> &Streak {
        match self {
            Next::Caught(streak) | Next::Retry(streak) | Next::Disable(streak, _) => streak,
        }
    }
}

/// The wait before the next attempt after `attempts` failed ones in a row:
/// `first_delay_ms` doubled for each failure after the first, at most an
/// hour, then "equal jitter": half of it, plus `jitter` (0 to 1) times the
/// other half, so endpoints that failed together do not all come back at
/// once.
pub fn retry_delay_ms(first_delay_ms: u64, attempts: i64, jitter: f64) -> u64 {
    let doublings = u32::try_from(attempts.saturating_sub(1).clamp(0, 63)).unwrap_or(63);
    let base = first_delay_ms
        .saturating_mul(1u64.checked_shl(doublings).unwrap_or(u64::MAX))
        .min(WEBHOOK_MAX_RETRY_DELAY_MS);
    let half = base / 2;
    half + (half as f64 * jitter.clamp(0.0, 1.0)) as u64
}

/// Where a round leaves an endpoint that was at `streak`: `plan` is what it
/// was to send, `failed` the first event that failed (its `seq` and why;
/// the round sent nothing after its group), `at` when that group was sent
/// and `now` when the round ended (unix milliseconds), `jitter` a random
/// number from 0 to 1.
pub fn after_round(
    streak: &Streak,
    plan: &Plan<'_>,
    failed: Option<(i64, &str)>,
    at: i64,
    now: i64,
    policy: &Policy,
    jitter: f64,
) -> Next {
    let Some((failed_seq, error)) = failed else {
        return Next::Caught(Streak {
            cursor: plan.seen.last().copied().unwrap_or(streak.cursor),
            ..Streak::default()
        });
    };
    let cursor = plan
        .seen
        .iter()
        .copied()
        .take_while(|seq| *seq < failed_seq)
        .last()
        .unwrap_or(streak.cursor);
    let (attempts, first_attempt_at) = if cursor == streak.cursor {
        (
            streak.attempts.saturating_add(1),
            streak.first_attempt_at.unwrap_or(at),
        )
    } else {
        (1, at)
    };
    let mut next = Streak {
        cursor,
        attempts,
        first_attempt_at: Some(first_attempt_at),
        next_attempt_at: None,
    };
    if now.saturating_sub(first_attempt_at) >= policy.retry_for_ms {
        let hours = policy.retry_for_ms / 3_600_000;
        let reason = format!(
            "every attempt at an event failed for {hours} hours ({attempts} attempts); the last: {error}"
        );
        return Next::Disable(next, reason);
    }
    let delay = retry_delay_ms(policy.first_delay_ms, attempts, jitter);
    next.next_attempt_at = Some(now.saturating_add(i64::try_from(delay).unwrap_or(i64::MAX)));
    Next::Retry(next)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::orgs::Org;

    const HOUR: i64 = 3_600_000;

    fn event(seq: i64, kind: EventType) -> StoredEvent {
        StoredEvent {
            seq,
            id: format!("msg_{seq}"),
            org: Org::DEFAULT,
            kind: kind.as_str().to_owned(),
            created_at: seq,
            payload: Vec::new(),
        }
    }

    fn policy(concurrency: usize) -> Policy {
        Policy {
            first_delay_ms: 5_000,
            retry_for_ms: 24 * HOUR,
            concurrency,
        }
    }

    fn seqs(plan: &Plan<'_>) -> Vec<i64> {
        plan.send.iter().map(|event| event.seq).collect()
    }

    #[test]
    fn a_round_sends_subscribed_events_in_order_up_to_the_concurrency() {
        let events = [
            event(3, EventType::RecordDenied),
            event(5, EventType::RecordRated),
            event(8, EventType::RecordDenied),
            event(9, EventType::TokenRevoked),
            event(12, EventType::RecordDenied),
        ];
        let denied = [EventType::RecordDenied];
        let one = plan(&events, &denied, &[], 1);
        assert_eq!(seqs(&one), [3]);
        assert_eq!(one.seen, [3]);
        let two = plan(&events, &denied, &[], 2);
        assert_eq!(seqs(&two), [3, 8]);
        assert_eq!(two.seen, [3, 5, 8], "the rated event between is skipped");
        let retried = plan(&events, &denied, &[3], 2);
        assert_eq!(seqs(&retried), [8, 12], "3 was delivered already");
        let none = plan(&events, &[EventType::BudgetThreshold], &[], 1);
        assert!(none.send.is_empty());
        assert_eq!(none.seen, [3, 5, 8, 9, 12], "everything is skipped");
    }

    #[test]
    fn a_round_stopped_early_moves_the_cursor_past_what_it_sent_only() {
        let events = [
            event(3, EventType::RecordDenied),
            event(5, EventType::RecordRated),
            event(8, EventType::RecordDenied),
            event(9, EventType::RecordRated),
            event(12, EventType::RecordDenied),
        ];
        let mut sent = plan(&events, &[EventType::RecordDenied], &[], 3);
        sent.keep_sent(2);
        assert_eq!(seqs(&sent), [3, 8]);
        assert_eq!(sent.seen, [3, 5, 8], "9 and 12 are left for the next round");
        let streak = Streak {
            cursor: 1,
            ..Streak::default()
        };
        assert_eq!(
            after_round(&streak, &sent, None, 30, 31, &policy(1), 0.5),
            Next::Caught(Streak {
                cursor: 8,
                ..Streak::default()
            })
        );
        let mut whole = plan(&events, &[EventType::RecordDenied], &[], 3);
        whole.keep_sent(3);
        assert_eq!(whole.seen, [3, 5, 8, 9, 12], "all sent: nothing is cut");
        let mut nothing = plan(&events, &[EventType::RecordDenied], &[], 3);
        nothing.keep_sent(0);
        assert!(nothing.seen.is_empty() && nothing.send.is_empty());
    }

    #[test]
    fn success_moves_the_cursor_past_everything_seen() {
        let events = [
            event(3, EventType::RecordDenied),
            event(5, EventType::RecordRated),
            event(8, EventType::RecordDenied),
        ];
        let sent = plan(&events, &[EventType::RecordDenied], &[], 2);
        let failing = Streak {
            cursor: 1,
            attempts: 4,
            first_attempt_at: Some(10),
            next_attempt_at: Some(20),
        };
        assert_eq!(
            after_round(&failing, &sent, None, 30, 31, &policy(2), 0.5),
            Next::Caught(Streak {
                cursor: 8,
                ..Streak::default()
            })
        );
    }

    #[test]
    fn a_failure_keeps_the_cursor_before_it_and_counts_the_streak() {
        let events = [
            event(3, EventType::RecordDenied),
            event(5, EventType::RecordRated),
            event(8, EventType::RecordDenied),
        ];
        let sent = plan(&events, &[EventType::RecordDenied], &[], 2);
        let fresh = Streak {
            cursor: 1,
            ..Streak::default()
        };
        let Next::Retry(first) = after_round(
            &fresh,
            &sent,
            Some((3, "HTTP 500")),
            100,
            150,
            &policy(2),
            0.0,
        ) else {
            panic!("not a retry");
        };
        assert_eq!(first.cursor, 1);
        assert_eq!(first.attempts, 1);
        assert_eq!(first.first_attempt_at, Some(100));
        assert_eq!(first.next_attempt_at, Some(150 + 2_500));
        let Next::Retry(second) = after_round(
            &first,
            &sent,
            Some((3, "HTTP 500")),
            9_000,
            9_100,
            &policy(2),
            1.0,
        ) else {
            panic!("not a retry");
        };
        assert_eq!(second.attempts, 2);
        assert_eq!(second.first_attempt_at, Some(100), "the streak began then");
        assert_eq!(second.next_attempt_at, Some(9_100 + 10_000));
        let Next::Retry(later) = after_round(
            &second,
            &sent,
            Some((8, "timed out")),
            20_000,
            20_100,
            &policy(2),
            0.0,
        ) else {
            panic!("not a retry");
        };
        assert_eq!(later.cursor, 5, "3 was delivered and 5 skipped");
        assert_eq!(later.attempts, 1, "a new event heads the queue");
        assert_eq!(later.first_attempt_at, Some(20_000));
    }

    #[test]
    fn an_event_failing_for_the_whole_window_disables_its_endpoint() {
        let events = [event(3, EventType::RecordDenied)];
        let sent = plan(&events, &[EventType::RecordDenied], &[], 1);
        let failing = Streak {
            cursor: 1,
            attempts: 30,
            first_attempt_at: Some(0),
            next_attempt_at: Some(24 * HOUR - 10),
        };
        assert!(matches!(
            after_round(
                &failing,
                &sent,
                Some((3, "HTTP 503")),
                24 * HOUR - 1,
                24 * HOUR - 1,
                &policy(1),
                0.5
            ),
            Next::Retry(_)
        ));
        let Next::Disable(streak, reason) = after_round(
            &failing,
            &sent,
            Some((3, "HTTP 503")),
            24 * HOUR,
            24 * HOUR,
            &policy(1),
            0.5,
        ) else {
            panic!("not disabled");
        };
        assert_eq!(streak.cursor, 1, "it stays on the event");
        assert_eq!(streak.attempts, 31);
        assert!(
            reason.contains("24 hours") && reason.ends_with("HTTP 503"),
            "{reason}"
        );
    }

    #[test]
    fn retries_double_up_to_an_hour_with_jitter() {
        let delays: Vec<u64> = (1..=12).map(|n| retry_delay_ms(5_000, n, 1.0)).collect();
        assert_eq!(
            delays,
            [
                5_000, 10_000, 20_000, 40_000, 80_000, 160_000, 320_000, 640_000, 1_280_000,
                2_560_000, 3_600_000, 3_600_000
            ]
        );
        assert_eq!(retry_delay_ms(5_000, 1, 0.0), 2_500, "never less than half");
        assert_eq!(retry_delay_ms(5_000, 1_000, 0.5), 2_700_000);
        assert_eq!(retry_delay_ms(u64::MAX, i64::MAX, 1.0), 3_600_000);
    }
}

//! The write path's transaction-level advisory locks (PostgreSQL; the
//! write path's plan §1.4): what several hosts' groups take so that they
//! exclude one another only where their writes meet. Each key is the first
//! 8 bytes of SHA-256(kind, NUL, the object's id) as a signed integer; two
//! objects sharing a key only take turns. Every lock is released at the
//! group's `COMMIT` or `ROLLBACK` (so a pooler in transaction mode keeps
//! working).
//!
//! | Key | Taken by |
//! |---|---|
//! | [`org`] | every write of the organisation: shared by the writes that take the keys below for what they touch (record, authorize, complete, evaluate, rate), exclusive by every other (issue, delegate, revoke, settings, approvals' decisions, webhooks…) — so a revocation waits for the writes in flight and every later one sees it |
//! | [`chain`] | a shared write judging or charging a chain with a budget, exclusive: the chain's usage read once and charged in the tail |
//! | [`record`] | a shared write changing a stored record (complete, rate), exclusive: its state machine and its one rating |
//! | [`quota`] | a shared write of an organisation with a `records_per_day` quota, exclusive: the day's count |
//! | [`gate`] | a gated evaluation, exclusive: one approval asked per token, action, resource and arguments |
//! | [`idempotency`] | a write sent with an `Idempotency-Key`, exclusive, before it looks the key up: one answer per key, whatever the write takes after |

use sha2::{Digest, Sha256};

use crate::store::orgs::Org;
use crate::store::sql::{self, Connection, Query, Row, params};

/// The key of `kind` for the object named by `parts`.
fn key(kind: &str, parts: &[&str]) -> i64 {
    let mut hash = Sha256::new();
    hash.update(kind.as_bytes());
    for part in parts {
        hash.update([0]);
        hash.update(part.as_bytes());
    }
    let digest = hash.finalize();
    let mut first = [0u8; 8];
    first.copy_from_slice(&digest[..8]);
    i64::from_be_bytes(first)
}

/// An organisation's key.
pub fn org(org: Org) -> i64 {
    key("org", &[&org.number().to_string()])
}

/// A chain's key, by its root token's jti hash.
pub fn chain(root: &str) -> i64 {
    key("chain", &[root])
}

/// A stored record's key, by its `aar_id`.
pub fn record(aar_id: &str) -> i64 {
    key("record", &[aar_id])
}

/// An organisation's quota key.
pub fn quota(org: Org) -> i64 {
    key("quota", &[&org.number().to_string()])
}

/// A gated evaluation's key: its token, action, resource and arguments'
/// hash.
pub fn gate(jti: &str, action: &str, resource: &str, args_hash: &str) -> i64 {
    key("gate", &[jti, action, resource, args_hash])
}

/// An idempotency key's key: its organisation, scope and the key sent.
pub fn idempotency(org: Org, scope: &str, key: &str) -> i64 {
    self::key("idempotency", &[&org.number().to_string(), scope, key])
}

/// Tries for a key shared, without waiting: answers whether it was taken.
pub const TRY_SHARED: &str = "SELECT pg_try_advisory_xact_lock_shared(?1)";

/// Takes `key` until the transaction ends, exclusive or shared: waiting
/// for it (`wait`), or only if it is free now. Answers whether it was
/// taken.
pub fn take(conn: &Connection, key: i64, exclusive: bool, wait: bool) -> sql::Result<bool> {
    let text = match (exclusive, wait) {
        (true, true) => "SELECT true FROM pg_advisory_xact_lock(?1)",
        (false, true) => "SELECT true FROM pg_advisory_xact_lock_shared(?1)",
        (true, false) => "SELECT pg_try_advisory_xact_lock(?1)",
        (false, false) => TRY_SHARED,
    };
    conn.prepare_cached(text)?
        .query_row(params![key], |row| row.get(0))
}

/// How [`take_then`] went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Taken {
    /// The key was free: taken by the flight's first statement, so the
    /// queries after it were read under it.
    Free,
    /// The key was held by another transaction and taken after waiting
    /// for it: what the queries read came before, and is read again.
    AfterWait,
    /// The key was held by another transaction and the caller would not
    /// wait.
    Busy,
}

/// Takes `key` as [`take`] does, and runs `then` in the same flight, after
/// the statement trying for the key (one round trip; each statement of a
/// flight begins after the one before has finished, so sees what the key's
/// last holder committed). What `then` read counts only when the answer is
/// [`Taken::Free`]: when the key was busy it was read before the holder's
/// commit, and after a wait (`wait`) the caller reads again.
pub fn take_then(
    conn: &Connection,
    key: i64,
    exclusive: bool,
    wait: bool,
    then: Vec<Query<'_>>,
) -> sql::Result<Taken> {
    let try_lock = if exclusive {
        "SELECT pg_try_advisory_xact_lock(?1)"
    } else {
        TRY_SHARED
    };
    let param = [key];
    let mut taken = false;
    let mut read_taken = |row: &Row<'_>| {
        taken = row.get(0)?;
        Ok(())
    };
    let mut flight = vec![Query {
        sql: try_lock,
        params: &param,
        read: &mut read_taken,
    }];
    // Their borrows shortened to the flight's.
    flight.extend(then.into_iter().map(|query| Query {
        sql: query.sql,
        params: query.params,
        read: query.read,
    }));
    conn.query_flight(&mut flight)?;
    drop(flight);
    Ok(if taken {
        Taken::Free
    } else if wait {
        take(conn, key, exclusive, true)?;
        Taken::AfterWait
    } else {
        Taken::Busy
    })
}

//! `Idempotency-Key`: a retried write returns the answer of the first
//! attempt and changes nothing. The key is scoped to the organisation, the
//! route and the credential (API key or token) that sent it; the stored answer remembers
//! the SHA-256 of the request body, so the same key with another body is
//! refused. The check, the write and the stored answer share the writer's
//! transaction, so two concurrent retries cannot both act (a group's
//! answers are kept in memory and stored by one statement just before it
//! commits; a repeat within the group finds them there; on PostgreSQL the
//! key's own lock, [`crate::store::locks::idempotency`], makes other
//! hosts' retries wait for that commit, while the write takes its
//! organisation's key as it would without an `Idempotency-Key`). Answers
//! are kept for 24 hours.

use super::{Ledger, LedgerError};
use crate::clock::Now;
use crate::store::idempotency::{self, Stored, StoredReply};
use crate::store::orgs::Org;
use crate::store::sql::types::Value;
use crate::store::sql::{Query, Row, params};

/// The status of a stored answer that waits (202 Accepted): a repeat may
/// resume it ([`Ledger::once_resuming`]).
const WAITING: u16 = 202;

/// How long an answer is remembered.
pub const RETENTION_MS: i64 = 24 * 3600 * 1000;

/// A key presented with a request, bound to its route and credential, with
/// the digest of the request body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdempotencyKey {
    /// The organisation of the credential.
    pub org: Org,
    /// `<route> <credential id>`.
    pub scope: String,
    pub key: String,
    pub body_sha256: [u8; 32],
}

/// Where an answer is kept: organisation, scope and key.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(super) struct HeldKey {
    org: Org,
    scope: String,
    key: String,
}

impl HeldKey {
    fn of(key: &IdempotencyKey) -> HeldKey {
        HeldKey {
            org: key.org,
            scope: key.scope.clone(),
            key: key.key.clone(),
        }
    }
}

/// An answer the current group gave under a key, stored just before it
/// commits ([`Ledger::store_tail`]); a repeat of the key later in the
/// group finds it here.
#[derive(Debug)]
pub(super) struct HeldReply {
    request_sha256: [u8; 32],
    reply: StoredReply,
    at_ms: i64,
}

/// What came of an idempotent write.
#[derive(Debug)]
pub enum Reply<T> {
    /// The write ran now; with a key, the answer stored for it.
    Fresh(T, Option<StoredReply>),
    /// An earlier attempt's answer.
    Replayed(StoredReply),
}

impl Ledger {
    /// Runs `write` once per key: replays the stored answer for a repeated
    /// key with the same body, refuses it with another body, else writes and
    /// stores what `answer` makes of the outcome and returns it. Without a
    /// key, just writes: the caller makes its answer after the commit, off
    /// the writer thread.
    pub fn once<T>(
        &mut self,
        key: Option<&IdempotencyKey>,
        now: Now,
        write: impl FnOnce(&mut Ledger) -> Result<T, LedgerError>,
        answer: impl FnOnce(&T) -> StoredReply,
    ) -> Result<Reply<T>, LedgerError> {
        self.once_resuming(key, now, write, |_, _| Ok(None), answer)
    }

    /// [`Ledger::once`] for a write whose answer may be to wait (202, as a
    /// delegation awaiting approval answers): a repeat of the key whose
    /// stored answer is a 202 runs `resume` with it, and an outcome it
    /// returns replaces the stored answer (so what it issues is issued
    /// once, and replayed after); `None` replays the 202.
    pub fn once_resuming<T>(
        &mut self,
        key: Option<&IdempotencyKey>,
        now: Now,
        write: impl FnOnce(&mut Ledger) -> Result<T, LedgerError>,
        resume: impl FnOnce(&mut Ledger, &StoredReply) -> Result<Option<T>, LedgerError>,
        answer: impl FnOnce(&T) -> StoredReply,
    ) -> Result<Reply<T>, LedgerError> {
        let Some(key) = key else {
            return write(self).map(|outcome| Reply::Fresh(outcome, None));
        };
        let lock = crate::store::locks::idempotency(key.org, &key.scope, &key.key);
        let since = now.ms() - RETENTION_MS;
        let held = self.replies_held.get(&HeldKey::of(key)).map(|held| {
            (held.at_ms > since).then(|| Stored {
                request_sha256: held.request_sha256.to_vec(),
                reply: held.reply.clone(),
            })
        });
        let found = match held {
            Some(held) => {
                self.take(lock)?;
                held
            }
            // Looked up in the flight taking the key, counted if the key
            // was free; else looked up again, under it.
            None => {
                let mut found = None;
                let mut read = |row: &Row<'_>| {
                    found = Some(idempotency::stored_row(row)?);
                    Ok(())
                };
                let params = params![key.org, key.scope.as_str(), key.key.as_str(), since];
                let look_up = Query {
                    sql: idempotency::FIND,
                    params: &params,
                    read: &mut read,
                };
                if self.take_reading(lock, vec![look_up])? {
                    found
                } else {
                    idempotency::find(&self.conn, key.org, &key.scope, &key.key, since)?
                }
            }
        };
        let outcome = match found {
            Some(stored) if stored.request_sha256 != key.body_sha256 => {
                return Err(LedgerError::IdempotencyKeyReused);
            }
            Some(stored) if stored.reply.status == WAITING => match resume(self, &stored.reply)? {
                Some(outcome) => outcome,
                None => return Ok(Reply::Replayed(stored.reply)),
            },
            Some(stored) => return Ok(Reply::Replayed(stored.reply)),
            None => write(self)?,
        };
        let reply = answer(&outcome);
        self.replies_held.insert(
            HeldKey::of(key),
            HeldReply {
                request_sha256: key.body_sha256,
                reply: reply.clone(),
                at_ms: now.ms(),
            },
        );
        self.buffered += 1;
        Ok(Reply::Fresh(outcome, Some(reply)))
    }

    /// The rows of the answers the group gave under keys, which it then
    /// forgets: stored with the group's other held rows before it commits
    /// ([`Ledger::store_tail`]), or alone before old answers are forgotten.
    pub(super) fn reply_rows(&mut self) -> Vec<Vec<Value>> {
        let mut held: Vec<(HeldKey, HeldReply)> =
            std::mem::take(&mut self.replies_held).into_iter().collect();
        // One order of rows, whatever the map's.
        held.sort_unstable_by(|(a, _), (b, _)| a.cmp(b));
        held.iter()
            .map(|(key, held)| {
                idempotency::stored(
                    key.org,
                    &key.scope,
                    &key.key,
                    &held.request_sha256,
                    &held.reply,
                    held.at_ms,
                )
            })
            .collect()
    }

    /// Forgets the answers older than the retention period; returns how
    /// many.
    pub fn forget_old_replies(&mut self, now: Now) -> Result<usize, LedgerError> {
        let rows = self.reply_rows();
        let before = self.conn.total_changes();
        self.conn.apply_tables(&[idempotency::store_all(&rows)])?;
        self.flushed += self.conn.total_changes() - before;
        Ok(idempotency::forget_before(
            &self.conn,
            now.ms() - RETENTION_MS,
        )?)
    }
}

//! The write side: every change to tokens and records, made by the
//! [`Ledger`], a value the writer thread owns, so that checks and writes are
//! atomic — revocation, scope and budgets are judged against exactly the
//! state the write commits on top of.
//!
//! Every rule comes from core: scope (`Scope::check`), narrowing and
//! delegation (`delegate`), budgets, the record lifecycle (`transition`),
//! reputation counters, who may act on a token. The ledger loads state, asks
//! core, and stores the answer through `store`'s statements. It knows
//! nothing of HTTP: it answers with typed values and a typed
//! [`LedgerError`], which `api` turns into responses. It never reads a
//! clock: each call is given `now`.
//!
//! ```text
//! handler ──(now, checked input)──▶ Store::write ──▶ writer thread
//!                                                     │ owns Ledger {conn, claims, counters}
//!                                                     ▼
//!                                   Ledger::record_action / complete / delegate …
//!                                                     │ core decides, store/ writes
//!                                                     ▼
//!                     COMMIT (counters flushed first) ── answer to the handler
//! ```

mod acts;
mod authority;
mod idempotency;
#[cfg(test)]
mod tests;

use std::collections::HashMap;
use std::sync::Arc;

use mandate_core::{
    AarId, BudgetExceeded, Claims, Constraints, CountsChange, DenyReason, IssueError, Jth, Jti,
    RecordError, ScopeError, TokenStatus, Ulid, Usage,
};
use rusqlite::Connection;

use crate::store::records::{self, SummaryKey};
use crate::store::{Owned, StoreError, tokens};

pub use acts::{Attempt, Attempted, Completion, Rated};
pub use authority::{Delegated, Delegation, REVOKED_LIST_LIMIT, Refusal, Revoked, Revoker};
pub use idempotency::{IdempotencyKey, Reply};

/// How many parsed claim sets the ledger keeps.
const CLAIMS_CACHE_LIMIT: usize = 50_000;

/// Why a write was refused or failed. Refusals that leave a denied record
/// are not errors (see [`Attempted`] and [`Delegated`]); these change
/// nothing.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum LedgerError {
    /// An agent call named by a bare `vat_jti` a token that is unknown,
    /// revoked or expired: all three alike, since a jti proves nothing.
    #[error("the token is unknown, revoked or expired")]
    TokenInactive,
    /// The caller presented the token itself, and it is revoked (or a token
    /// it was delegated from is) or expired: the holder is told which.
    #[error("the presented token is {}", if *.expired { "expired" } else { "revoked" })]
    HolderInactive { expired: bool },
    /// A bound token was named by its bare `vat_jti`: it acts only with a
    /// proof by its holder's key.
    #[error("a bound token acts only with a proof of possession")]
    DpopRequired,
    /// A record made with the token itself was completed without it.
    #[error(
        "this record was made with the token itself; complete it with that token (or one it was delegated from)"
    )]
    TokenRequired,
    /// The token presented with a completion is neither the record's nor an
    /// ancestor's.
    #[error("the token sent is neither the record's token nor one it was delegated from")]
    NotTheRecordsToken,
    /// An agent tried to revoke a token that is neither its own nor a
    /// descendant of it.
    #[error("a token may revoke only itself and its descendants")]
    NotAnAncestor,
    /// No token has this jti.
    #[error("no token has this jti")]
    UnknownToken,
    /// No record has this id.
    #[error("no record has this aar_id")]
    UnknownRecord,
    /// The record is not in a state for this (already completed, rated…).
    #[error(transparent)]
    Lifecycle(RecordError),
    /// A completion reported more than was reserved after the record's
    /// token became inactive.
    #[error("a completion may report spend up to the amount reserved at authorize, no more")]
    BeyondReservation {
        aar_id: AarId,
        /// The token expired (rather than was revoked).
        expired: bool,
        /// The caller presented the token itself.
        presented: bool,
    },
    /// A completion's extra spend would break a budget of the chain.
    #[error("{exceeded}")]
    OverBudget {
        aar_id: AarId,
        exceeded: BudgetExceeded,
    },
    /// A requested lifetime outside the allowed range.
    #[error(transparent)]
    TtlOutOfRange(IssueError),
    /// A delegation's frameworks (the parent's and the requested ones
    /// together) are not a valid policy.
    #[error("{0} (the parent's frameworks and the requested ones together)")]
    Frameworks(ScopeError),
    /// The key the token was signed with was revoked since the key ring
    /// was read: nothing was stored; a retry is signed by the new key.
    #[error("the signing key was just revoked")]
    SigningKeyRevoked,
    /// An `Idempotency-Key` sent again with another request body.
    #[error("this Idempotency-Key was used with another request body")]
    IdempotencyKeyReused,
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl From<rusqlite::Error> for LedgerError {
    fn from(error: rusqlite::Error) -> LedgerError {
        LedgerError::Store(error.into())
    }
}

/// Mandate's own fault: something stored that should be there is not, or
/// has the wrong shape.
fn internal(cause: impl std::fmt::Display) -> LedgerError {
    LedgerError::Store(StoreError::Internal(cause.to_string()))
}

/// A token as the ledger sees it: its claims and its standing.
#[derive(Debug, Clone)]
struct Token {
    claims: Arc<Claims>,
    standing: tokens::Standing,
}

impl Token {
    /// Why the token cannot act at `now_s` (unix seconds), if it cannot.
    fn inactive_reason(&self, now_s: i64) -> Option<DenyReason> {
        TokenStatus::at(self.claims.exp, self.standing.revoked, now_s).deny_reason()
    }
}

/// The tokens of a chain (ancestors first, then the token) that carry a
/// budget, by jti hash, with their limits.
type Budgeted = Vec<(Jth, Constraints)>;

/// Agent and workflow counters changed by the writes of the current group,
/// written once just before it commits: many records of one agent or one
/// workflow then cost one update, not one each. Nothing in the writer reads
/// these counters.
#[derive(Debug, Default)]
struct Counters {
    agents: HashMap<String, CountsChange>,
    /// Records added and the latest activity, per workflow.
    workflows: HashMap<String, (i64, i64)>,
    /// Changes to workflow summaries, keyed by provenance ref, agent,
    /// action and result key joined with NUL (which none of them can hold).
    summaries: HashMap<String, i64>,
    /// The key being looked up, reused so a known key costs no allocation.
    scratch: String,
}

impl Counters {
    fn count_for_agent(&mut self, agent_id: &str, change: CountsChange) {
        self.agents
            .entry(agent_id.to_owned())
            .or_default()
            .add(change);
    }

    fn touch_workflow(&mut self, provenance_ref: &str, records: i64, at_ms: i64) {
        let entry = self
            .workflows
            .entry(provenance_ref.to_owned())
            .or_insert((0, at_ms));
        entry.0 += records;
        entry.1 = entry.1.max(at_ms);
    }

    fn count_in_summary(&mut self, key: &SummaryKey<'_>, change: i64) {
        let Counters {
            summaries, scratch, ..
        } = self;
        scratch.clear();
        for (i, part) in [key.provenance_ref, key.agent_id, key.action, key.result_key]
            .into_iter()
            .enumerate()
        {
            if i > 0 {
                scratch.push('\0');
            }
            scratch.push_str(part);
        }
        match summaries.get_mut(scratch.as_str()) {
            Some(count) => *count += change,
            None => {
                summaries.insert(scratch.clone(), change);
            }
        }
    }

    /// Writes every counter the group changed, and forgets them.
    fn flush(&mut self, conn: &Connection) -> Result<(), StoreError> {
        let Counters {
            agents,
            workflows,
            summaries,
            ..
        } = std::mem::take(self);
        for (agent_id, change) in &agents {
            records::count_for_agent(conn, agent_id, change)?;
        }
        for (provenance_ref, (added, at_ms)) in &workflows {
            records::count_for_workflow(conn, provenance_ref, *added, *at_ms)?;
        }
        for (key, change) in &summaries {
            let mut parts = key.split('\0');
            let (Some(provenance_ref), Some(agent_id), Some(action), Some(result_key), None) = (
                parts.next(),
                parts.next(),
                parts.next(),
                parts.next(),
                parts.next(),
            ) else {
                return Err(StoreError::Internal(
                    "a workflow summary key lost its shape".to_owned(),
                ));
            };
            let key = SummaryKey {
                provenance_ref,
                agent_id,
                action,
                result_key,
            };
            records::count_in_summary(conn, &key, *change)?;
        }
        Ok(())
    }
}

/// The write side's state, owned by the writer thread: the connection,
/// parsed claims (claims never change once issued, so a cached copy is
/// always right; revocation and usage are always read from the database),
/// the counters of the current group, and when the last record was made.
#[derive(Debug)]
pub struct Ledger {
    conn: Connection,
    claims: HashMap<Jth, Arc<Claims>>,
    counters: Counters,
    last_record_ms: Option<i64>,
}

impl Owned for Ledger {
    fn connection(&self) -> &Connection {
        &self.conn
    }

    fn before_commit(&mut self) -> Result<(), StoreError> {
        self.counters.flush(&self.conn)
    }

    fn after_rollback(&mut self) {
        self.counters = Counters::default();
    }

    fn close(self) {
        if let Err((_, error)) = self.conn.close() {
            tracing::error!(%error, "closing the database failed");
        }
    }
}

impl Ledger {
    /// A ledger writing through `conn`, which has the schema.
    pub fn new(conn: Connection) -> Ledger {
        Ledger {
            conn,
            claims: HashMap::new(),
            counters: Counters::default(),
            last_record_ms: None,
        }
    }

    /// The claims of a token, found by its jti hash (how descendants name
    /// it).
    fn claims(&mut self, jth: &Jth) -> Result<Option<Arc<Claims>>, LedgerError> {
        if let Some(claims) = self.claims.get(jth) {
            return Ok(Some(claims.clone()));
        }
        let Some(text) = tokens::claims_text(&self.conn, jth)? else {
            return Ok(None);
        };
        let claims: Arc<Claims> = Arc::new(serde_json::from_str(&text).map_err(internal)?);
        if self.claims.len() >= CLAIMS_CACHE_LIMIT {
            self.claims.clear();
        }
        self.claims.insert(jth.clone(), claims.clone());
        Ok(Some(claims))
    }

    /// A token and its standing, by jti; `None` for a token never issued
    /// here.
    fn token(&mut self, jti: &Jti) -> Result<Option<Token>, LedgerError> {
        let jth = jti.hash();
        let Some(standing) = tokens::standing(&self.conn, &jth)? else {
            return Ok(None);
        };
        let claims = self
            .claims(&jth)?
            .ok_or_else(|| internal("a token row vanished"))?;
        Ok(Some(Token { claims, standing }))
    }

    /// The tokens of `claims`' chain that carry a budget.
    fn budgeted(&mut self, claims: &Claims) -> Result<Budgeted, LedgerError> {
        let mut budgeted = Vec::new();
        for jth in claims.ancestors() {
            let ancestor = self
                .claims(jth)?
                .ok_or_else(|| internal("an ancestor token is missing"))?;
            if !ancestor.constraints().is_empty() {
                budgeted.push((jth.clone(), ancestor.constraints()));
            }
        }
        if !claims.constraints().is_empty() {
            budgeted.push((claims.jth(), claims.constraints()));
        }
        Ok(budgeted)
    }

    /// The budgets of a chain with what each has used so far, for core's
    /// checks over a chain.
    fn usage(&self, budgeted: &Budgeted) -> Result<Vec<(Constraints, Usage)>, LedgerError> {
        budgeted
            .iter()
            .map(|(jth, constraints)| Ok((*constraints, tokens::usage(&self.conn, jth)?)))
            .collect()
    }

    /// Adds spend and actions to the usage of every budgeted token of a
    /// chain.
    fn charge(
        &self,
        budgeted: &Budgeted,
        spend_micros: i64,
        actions: i64,
    ) -> Result<(), LedgerError> {
        for (jth, _) in budgeted {
            tokens::charge(&self.conn, jth, spend_micros, actions)?;
        }
        Ok(())
    }

    /// The creation time of a new record: `now`, but never before the last
    /// record's, so `created_at` never decreases along `seq` even when the
    /// clock steps back (record queries turn time ranges into `seq` ranges).
    fn record_time(&mut self, now_ms: i64) -> Result<i64, LedgerError> {
        let last = match self.last_record_ms {
            Some(last) => last,
            None => records::latest_created_at(&self.conn)?.unwrap_or(0),
        };
        let at = now_ms.max(last);
        self.last_record_ms = Some(at);
        Ok(at)
    }

    /// Stores a record and counts it for its agent and workflow.
    fn insert_record(&mut self, record: &records::NewRecord<'_>) -> Result<(), LedgerError> {
        records::insert(&self.conn, record)?;
        let claims = record.token;
        let agent_id = claims.agent_id().as_str();
        self.counters
            .count_for_agent(agent_id, CountsChange::of(None, &record.state));
        self.counters
            .touch_workflow(claims.svc_prov.as_str(), 1, record.created_at);
        self.counters.count_in_summary(
            &SummaryKey {
                provenance_ref: claims.svc_prov.as_str(),
                agent_id,
                action: record.action,
                result_key: record.state.result_key(),
            },
            1,
        );
        Ok(())
    }
}

/// A record id made at `now_ms` from random bits.
fn new_aar_id(now_ms: i64, random: [u8; 10]) -> Result<AarId, LedgerError> {
    let ulid = Ulid::new(u64::try_from(now_ms).unwrap_or(0), random).map_err(internal)?;
    Ok(AarId::new(ulid))
}

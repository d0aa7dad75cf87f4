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
mod approvals;
mod authority;
mod idempotency;
mod log;
mod oauth;
mod orgs;
mod outbox;
#[cfg(test)]
mod tests;
mod trust;
mod webhooks;

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, LazyLock};

use crate::store::sql::types::Value;
use crate::store::sql::{self, Connection, Dialect, InsertTexts, Query, Row, RowsFor, Step};
use mandate_core::{
    AarId, BudgetExceeded, Claims, Constraints, CountsChange, DenyReason, IssueError, Jth, Jti,
    RecordError, RecordOrigin, RecordState, ScopeError, TokenStatus, Ulid, Usage, Usd,
};

use mandate_core::Outcome;
use mandate_core::limits::{MAX_BULK_RATINGS, MAX_WEBHOOKS_PER_ORG};
use mandate_core::webhook::EventType;

use crate::recordlog::events;
use crate::store::locks::Taken;
use crate::store::log as rows_log;
use crate::store::orgs::{self as org_rows, Org, Quotas};
use crate::store::records::{self, SummaryKey};
use crate::store::{Owned, StoreError, dashboard, tokens};
use log::Logged;

/// Where a record's row for [`records::INSERT_INTO`] holds a column.
fn record_column(name: &str) -> usize {
    records::INSERT_INTO
        .trim_start_matches("records (")
        .trim_end_matches(')')
        .split(',')
        .position(|column| column.trim() == name)
        .unwrap_or(usize::MAX)
}

/// A held record row's `aar_id`.
static RECORD_AAR_ID: LazyLock<usize> = LazyLock::new(|| record_column("aar_id"));
/// A held record row's `log_created`.
static RECORD_LOG_CREATED: LazyLock<usize> = LazyLock::new(|| record_column("log_created"));
/// A held record row's `seq`.
static RECORD_SEQ: LazyLock<usize> = LazyLock::new(|| record_column("seq"));

/// How far (ms) a record's `created_at` may fall behind the newest record
/// of its organisation before it in `seq` (PostgreSQL, where hosts
/// number records in commit order with times their own clocks gave): a
/// group that would step back further fails (503, retried), and time
/// filters read this much beyond each edge of the range they ask for.
pub const MAX_TIME_DISORDER_MS: i64 = 1_000;

pub use acts::{
    ActionReport, Attempt, Attempted, AwaitedApproval, BulkRating, Completion, Evaluated, Rated,
};
pub use approvals::{ApprovalView, EXPIRY_BATCH, approval_id_of};
pub use authority::{Delegated, Delegation, REVOKED_LIST_LIMIT, Refusal, Revoked, Revoker};
pub use idempotency::{IdempotencyKey, Reply};
pub use log::LogSetup;
pub use oauth::{
    ClientRevocation, MAX_CLIENTS_PER_ORG, MAX_RESOURCES_PER_ORG, Redeemed, Redemption, Refresh,
    RefreshRefusal, Refreshed,
};
pub use orgs::{NewOrg, OrgCreated, create_org};
pub use trust::{NOT_ITS_AGENT, NewVouch, VouchBy};
pub use webhooks::{AttemptMade, DISABLED_BY_OWNER, NewWebhook, RoundReport, WebhookChange};

/// How long an approval waits for a decision unless configured
/// (`[approvals] ttl_seconds`): fifteen minutes.
pub const DEFAULT_APPROVAL_TTL_MS: i64 = 15 * 60 * 1000;

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
    /// No approval of the caller's organisation has this id.
    #[error("no approval has this approval_id")]
    UnknownApproval,
    /// A person's decision on an approval that time (or a revocation)
    /// expired before: nothing is left to decide.
    #[error("the approval expired before this decision arrived")]
    ApprovalExpired,
    /// No workflow of the caller's organisation has this provenance_ref.
    #[error("no workflow has this provenance_ref")]
    UnknownWorkflow,
    /// A bulk rating matched more records than one may rate.
    #[error(
        "more than {MAX_BULK_RATINGS} records match; nothing was rated. Rate them one by one, or narrow the workflow"
    )]
    TooManyRecords,
    /// The record is not in a state for this (already completed, rated…).
    #[error(transparent)]
    Lifecycle(RecordError),
    /// A completion of a delegation's record, which only repeating the
    /// delegation closes.
    #[error(
        "this record is a delegation's: repeat the delegation with its Idempotency-Key to get the child token (or its refusal) once the approval is decided"
    )]
    DelegationCloses,
    /// A completion reported more than was reserved after the record's
    /// token became inactive.
    #[error("a completion may report spend up to the amount reserved at authorize, no more")]
    BeyondReservation {
        aar_id: AarId,
        /// The token expired (rather than was revoked).
        expired: bool,
    },
    /// A completion by `aar_id` alone reported more than was reserved:
    /// anyone who has seen the `aar_id` may complete the record, so only
    /// the token's holder may raise its spend.
    #[error(
        "a completion by aar_id alone may report spend up to the ${reserved} reserved at authorize, no more; to report more, complete with the record's token (or one it was delegated from)"
    )]
    BeyondReservationWithoutToken { reserved: Usd },
    /// A relay completing without the client's proof reported more than
    /// was reserved.
    #[error(
        "a relay completing without the client's proof may report spend up to the ${reserved} reserved at authorize, no more"
    )]
    BeyondReservationByRelay { reserved: Usd },
    /// A completion's extra spend would break a budget of the chain.
    #[error("{exceeded}")]
    OverBudget {
        aar_id: AarId,
        exceeded: BudgetExceeded,
    },
    /// A completion's spend above what was authorized matches an approval
    /// requirement of the chain: an approval covers only the spend it was
    /// granted for.
    #[error(
        "spending ${spend} needs a human's approval; this action was authorized for ${authorized}. Complete it with at most that, and authorize the rest as an action of its own"
    )]
    CompletionNeedsApproval {
        aar_id: AarId,
        authorized: Usd,
        spend: Usd,
    },
    /// A requested lifetime outside the allowed range.
    #[error(transparent)]
    TtlOutOfRange(IssueError),
    /// The token asked for would be over 8 KiB signed (DESIGN §2): its
    /// grant (argument rules above all, which a chain inherits) is too
    /// large.
    #[error(
        "the token would be over {} bytes signed; ask for a smaller grant (fewer or shorter argument rules, resources or actions)",
        mandate_core::limits::MAX_TOKEN_BYTES
    )]
    TokenTooLarge,
    /// A delegation's grant cannot be formed: its frameworks or approval
    /// lists (the parent's and the requested ones together) pass 64, or
    /// what the request adds to `require_approval` could never match
    /// under the child's grant.
    #[error("{0} (the parent's grant and the request together)")]
    Frameworks(ScopeError),
    /// The key the token was signed with was revoked since the key ring
    /// was read: nothing was stored; a retry is signed by the new key.
    #[error("the signing key was just revoked")]
    SigningKeyRevoked,
    /// An `Idempotency-Key` sent again with another request body.
    #[error("this Idempotency-Key was used with another request body")]
    IdempotencyKeyReused,
    /// The organisation has used a quota up; nothing was written.
    #[error("{0}")]
    QuotaExceeded(QuotaExceeded),
    /// No organisation has this id (or the caller may not see it).
    #[error("no organisation has this id")]
    UnknownOrg,
    /// Another organisation has this name.
    #[error("an organisation with this name exists")]
    OrgExists,
    /// The deployment holds as many organisations as it can.
    #[error("this deployment holds as many organisations as it can")]
    TooManyOrgs,
    /// No key of the caller's organisation has this id.
    #[error("no API key of this organisation has this id")]
    UnknownKey,
    /// The admin key is revoked by its operator, not over the API.
    #[error(
        "the deployment's admin key is revoked only with `mandate keys revoke` by its operator"
    )]
    AdminKey,
    /// Revoking the organisation's last active owner would lock its keys
    /// away.
    #[error("this is the organisation's last active owner key; create another owner first")]
    LastOwner,
    /// No webhook of the caller's organisation has this id.
    #[error("no webhook of this organisation has this id")]
    UnknownWebhook,
    /// The organisation has as many webhooks as it may.
    #[error(
        "the organisation has {MAX_WEBHOOKS_PER_ORG} webhooks, as many as it may; delete one first"
    )]
    TooManyWebhooks,
    /// No OAuth client of the caller's organisation has this id.
    #[error("no OAuth client of this organisation has this client_id")]
    UnknownClient,
    /// The organisation has as many OAuth clients as it may.
    #[error(
        "the organisation has {MAX_CLIENTS_PER_ORG} OAuth clients, as many as it may; delete one first"
    )]
    TooManyClients,
    /// No OAuth resource of the caller's organisation has this id.
    #[error("no OAuth resource of this organisation has this id")]
    UnknownResource,
    /// The organisation registered this resource already.
    #[error(
        "the organisation registered this resource already; delete it first to change its relay keys"
    )]
    ResourceExists,
    /// The organisation has as many OAuth resources as it may.
    #[error(
        "the organisation has {MAX_RESOURCES_PER_ORG} OAuth resources, as many as it may; delete one first"
    )]
    TooManyResources,
    /// A relay completed (or read) a record another relay key authorized,
    /// or one no relay authorized.
    #[error(
        "this record was not authorized through this relay key; only the relay that authorized it completes it without the client's proof"
    )]
    NotTheRelaysRecord,
    /// No OAuth grant of the caller's organisation has this id.
    #[error("no OAuth grant of this organisation has this id")]
    UnknownGrant,
    /// A code answers this sealed authorization request already.
    #[error("this authorization request was approved already; start again from the client")]
    RequestAnswered,
    /// No agent of the caller's organisation has this id.
    #[error("no agent of this organisation has this id")]
    UnknownAgent,
    /// No vouch of the caller's organisation has this id.
    #[error("no vouch of this organisation has this id")]
    UnknownVouch,
    /// The voucher already has a vouch in force for this agent.
    #[error("{0}")]
    VouchExists(String),
    /// The vouch was withdrawn before.
    #[error("this vouch was withdrawn before")]
    VouchWithdrawn,
    /// An agent vouching for an agent it did not delegate to, or a
    /// principal withdrawing a vouch that is not theirs.
    #[error("{0}")]
    VouchNotAllowed(&'static str),
    /// A token named an agent another human owns: a root token without
    /// `issue_for_anyone`, a delegation an agent outside the delegator's
    /// subtree, or a token minted before the registry under such a name
    /// that vouches as it.
    #[error("{0}")]
    AgentNotYours(&'static str),
    /// A delegation needs a human's approval, and its request carried no
    /// `Idempotency-Key` to fetch the child by once approved.
    #[error(
        "this delegation needs a human's approval first; send it with an Idempotency-Key, and repeat it with that key once approved to receive the child token"
    )]
    IdempotencyKeyRequired,
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl From<sql::Error> for LedgerError {
    fn from(error: sql::Error) -> LedgerError {
        LedgerError::Store(error.into())
    }
}

/// A quota an organisation has used up.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum QuotaExceeded {
    /// Records per UTC day; a new day starts in `retry_after_s` seconds.
    #[error(
        "the organisation has written its {limit} records of today (UTC), its records_per_day quota"
    )]
    RecordsPerDay { limit: u64, retry_after_s: u64 },
    /// Tokens neither revoked nor expired.
    #[error(
        "the organisation holds {limit} tokens neither revoked nor expired, its tokens_outstanding quota; revoke some or wait for them to expire"
    )]
    TokensOutstanding { limit: u64 },
}

/// Mandate's own fault: something stored that should be there is not, or
/// has the wrong shape.
fn internal(cause: impl std::fmt::Display) -> LedgerError {
    LedgerError::Store(StoreError::Internal(cause.to_string()))
}

/// A token as the ledger sees it: its claims and its standing (with its
/// organisation).
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
    /// Reputation counts and the latest activity, per agent.
    agents: HashMap<(Org, String), (CountsChange, Option<i64>)>,
    /// The dashboard's: per agent and UTC day, per organisation and UTC
    /// hour, and each organisation's inbox (approvals pending, records
    /// unrated).
    days: HashMap<(Org, String, i64), dashboard::DayCounts>,
    hours: HashMap<(Org, i64), dashboard::HourCounts>,
    inboxes: HashMap<Org, (i64, i64)>,
    /// Records added and the latest activity, per workflow.
    workflows: HashMap<String, (i64, i64)>,
    /// Changes to workflow summaries, keyed by provenance ref, agent,
    /// action and result key joined with NUL (which none of them can hold).
    summaries: HashMap<String, i64>,
    /// The key being looked up, reused so a known key costs no allocation.
    scratch: String,
}

impl Counters {
    /// Counts a record of an agent of `org`, made by `origin`, going from
    /// `before` (`None`: made now) to `after` at `at_ms`: its agent's
    /// reputation counts and activity, and the dashboard's counters.
    fn record_moved(
        &mut self,
        org: Org,
        agent_id: &str,
        at_ms: i64,
        origin: RecordOrigin,
        before: Option<&RecordState>,
        after: &RecordState,
    ) {
        let moved = dashboard::Moved::of(origin, before, after);
        let agent = self.agents.entry((org, agent_id.to_owned())).or_default();
        agent.0.add(moved.day.counts);
        if moved.activity {
            agent.1 = Some(agent.1.map_or(at_ms, |at| at.max(at_ms)));
        }
        self.days
            .entry((org, agent_id.to_owned(), dashboard::day_of(at_ms)))
            .or_default()
            .add(&moved.day);
        self.hours
            .entry((org, dashboard::hour_of(at_ms)))
            .or_default()
            .add(&moved.hour);
        if moved.approvals_pending != 0 || moved.records_unrated != 0 {
            let inbox = self.inboxes.entry(org).or_default();
            inbox.0 += moved.approvals_pending;
            inbox.1 += moved.records_unrated;
        }
    }

    /// Counts an approval of `org` decided by a person at `at_ms` after
    /// waiting `wait_ms`.
    fn approval_decided(&mut self, org: Org, at_ms: i64, wait_ms: i64) {
        self.hours
            .entry((org, dashboard::hour_of(at_ms)))
            .or_default()
            .add(&dashboard::HourCounts {
                approvals_decided: 1,
                approval_wait_ms: wait_ms,
                approval_wait_max_ms: wait_ms,
                ..dashboard::HourCounts::default()
            });
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

    /// The rows of every counter the group changed, which it then
    /// forgets, in the order of their keys (so two writers' row locks are
    /// taken in one order).
    fn take_rows(&mut self) -> Result<CounterRows, StoreError> {
        let Counters {
            agents,
            days,
            hours,
            inboxes,
            workflows,
            summaries,
            ..
        } = std::mem::take(self);
        let mut summary_rows = Vec::with_capacity(summaries.len());
        for (key, change) in sorted(summaries) {
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
            summary_rows.push(records::summary_counted(&key, change));
        }
        Ok(CounterRows {
            agents: sorted(agents)
                .map(|((org, agent_id), (change, active_at))| {
                    records::agent_counted(org, &agent_id, &change, active_at)
                })
                .collect(),
            days: sorted(days)
                .map(|((org, agent_id, day), counts)| {
                    dashboard::agent_day(org, &agent_id, day, &counts)
                })
                .collect(),
            hours: sorted(hours)
                .map(|((org, hour), counts)| dashboard::org_hour(org, hour, &counts))
                .collect(),
            inboxes: sorted(inboxes)
                .map(|(org, (pending, unrated))| dashboard::inbox_moved(org, pending, unrated))
                .collect(),
            workflows: sorted(workflows)
                .map(|(provenance_ref, (added, at_ms))| {
                    records::workflow_counted(&provenance_ref, added, at_ms)
                })
                .collect(),
            summaries: summary_rows,
        })
    }
}

/// The rows of a group's counters, a table each.
struct CounterRows {
    agents: Vec<Vec<Value>>,
    days: Vec<Vec<Value>>,
    hours: Vec<Vec<Value>>,
    inboxes: Vec<Vec<Value>>,
    workflows: Vec<Vec<Value>>,
    summaries: Vec<Vec<Value>>,
}

impl CounterRows {
    fn is_empty(&self) -> bool {
        self.agents.is_empty()
            && self.days.is_empty()
            && self.hours.is_empty()
            && self.inboxes.is_empty()
            && self.workflows.is_empty()
            && self.summaries.is_empty()
    }

    fn parts(&self) -> [RowsFor<'_>; 6] {
        [
            records::count_for_agents(&self.agents),
            dashboard::add_agent_days(&self.days),
            dashboard::add_org_hours(&self.hours),
            dashboard::add_inboxes(&self.inboxes),
            records::count_for_workflows(&self.workflows),
            records::count_in_summaries(&self.summaries),
        ]
    }
}

/// A map's entries in the order of their keys.
fn sorted<K: Ord, V>(map: HashMap<K, V>) -> impl Iterator<Item = (K, V)> {
    let mut entries: Vec<(K, V)> = map.into_iter().collect();
    entries.sort_unstable_by(|(a, _), (b, _)| a.cmp(b));
    entries.into_iter()
}

/// A budgeted token's usage as the current group sees it: read once, then
/// changed in memory by the group's charges, which are stored just before
/// it commits.
#[derive(Debug)]
struct HeldUsage {
    /// Spent (micro-USD) and actions: as stored plus the group's charges.
    spent_micros: i64,
    actions: i64,
    /// What the group's charges added, and the token's constraints: `None`
    /// when the group only read the usage.
    charged: Option<(i64, i64, Constraints)>,
}

impl HeldUsage {
    fn usage(&self) -> Result<Usage, StoreError> {
        Ok(Usage {
            spent: Usd::from_micros(u64::try_from(self.spent_micros).unwrap_or(0))
                .map_err(|e| StoreError::Internal(format!("a token's spend: {e}")))?,
            actions: u64::try_from(self.actions).unwrap_or(0),
        })
    }
}

/// The newest record of an organisation: where its next `seq` follows, and
/// the time no later record may be created before.
#[derive(Debug, Clone, Copy)]
struct Tail {
    seq: i64,
    created_at: i64,
}

/// A PostgreSQL group's records of one organisation, numbered
/// provisionally until its tail ([`Ledger::numbering_steps`]).
#[derive(Debug, Clone, Copy)]
struct Numbering {
    /// How many, and the first and last `created_at` among them.
    count: i64,
    min_at: i64,
    max_at: i64,
    /// Whether some were stored before the tail (and are renumbered by a
    /// statement).
    inline: bool,
}

/// Records an organisation with a `records_per_day` quota wrote on one UTC
/// day.
#[derive(Debug, Clone, Copy)]
struct DayCount {
    day: i64,
    records: u64,
}

/// Milliseconds of a day.
const DAY_MS: i64 = 86_400_000;

/// The write side's state, owned by the writer thread: the connection,
/// parsed claims (claims never change once issued, so a cached copy is
/// always right, and neither does a token's organisation; revocation and
/// usage are read from the database once a group), the counters of the
/// current group, and per organisation its newest
/// record, its quotas and what it wrote today. What the database says
/// decides: everything but the claims is forgotten when a group rolls back
/// and read again.
#[derive(Debug)]
pub struct Ledger {
    conn: Connection,
    claims: HashMap<Jth, Arc<Claims>>,
    /// The organisation of each token whose claims are kept (it never
    /// changes).
    token_orgs: HashMap<Jth, Org>,
    /// The standing of the tokens the current group read: forgotten after
    /// every group, and whenever the group stores or revokes a token (a
    /// child changes its parent's count, a revocation a whole subtree).
    standings: HashMap<Jth, tokens::Standing>,
    counters: Counters,
    tails: HashMap<Org, Tail>,
    /// The records of the current group per organisation (PostgreSQL).
    numbering: HashMap<Org, Numbering>,
    /// The organisations whose `org_seqs` row a commit of this ledger saw
    /// (PostgreSQL; rows are never removed): the tail makes only the
    /// others.
    seqs_made: HashSet<Org>,
    /// Where this ledger's provisional `seq` numbers lie in each
    /// organisation's range (PostgreSQL; chosen at random, so two hosts'
    /// uncommitted rows do not share numbers).
    seq_block: i64,
    /// The newest `created_at` this ledger gave a record of each
    /// organisation (PostgreSQL: kept across groups; the tail bounds how far
    /// another host's records may be ahead of it).
    times: HashMap<Org, i64>,
    quotas: HashMap<Org, Quotas>,
    days: HashMap<Org, DayCount>,
    /// Whether other processes write to the database too (PostgreSQL).
    shared: bool,
    /// The advisory keys the current group holds (see [`Ledger::enter`]),
    /// each with whether it holds it exclusively.
    held: HashMap<i64, bool>,
    /// Whether the write running now took a key.
    entered: bool,
    /// Whether the write running now began with the group holding no key
    /// (nor the log's integration row): only such a write waits for a key
    /// (or one that changed something already, see [`Ledger::may_wait`]).
    first: bool,
    /// [`Owned::changes`] when the write running now began.
    changes_before: u64,
    /// Whether the write running now takes its organisation's key shared
    /// (with the keys of what it touches) rather than exclusive: set by the
    /// writes of [`crate::store::locks`]' table before they take a key.
    sharing: bool,
    /// Whether the group holds the log's integration row (PostgreSQL: a
    /// checkpoint signed, [`Ledger::checkpoint`]).
    integrating: bool,
    /// Whether the write that just ran asked to run again first in the
    /// next group (see [`Ledger::enter`]).
    deferred: bool,
    /// Whether a next group is likely as this one commits
    /// ([`Owned::expect_more`]): its commit may begin the next group's
    /// transaction ahead (PostgreSQL, [`Ledger::store_tail`]), which the
    /// writer ends if no write comes soon ([`Owned::idle`]).
    more_expected: bool,
    /// The organisation (and token) of the group's first write that took
    /// its organisation's key shared: the next group's likely first write.
    next_entry: Option<(Org, Option<Jth>)>,
    /// What the last commit read ahead for [`Ledger::next_entry`]'s
    /// organisation and token, in the transaction it began: taken over by
    /// the next group's first write entering that organisation shared
    /// ([`Ledger::enter_reading`]).
    ahead: Option<(Org, Option<Jth>, org_rows::EnteredAhead)>,
    /// How the record log is written.
    log: LogSetup,
    /// The record log and status lists as the current group changes them.
    group: Option<log::GroupLog>,
    /// The log's right edge as the last committed group left it (SQLite).
    frontier: Option<mandate_core::tlog::Frontier>,
    /// The log's right edge as this process last integrated it
    /// (PostgreSQL, [`crate::recordlog::integrate`]).
    integrated: Option<mandate_core::tlog::Frontier>,
    /// Status indexes of this host's block not yet used (PostgreSQL).
    status_block: std::ops::Range<u64>,
    /// Organisation ids by number (they never change), for log leaves.
    org_ids: HashMap<Org, mandate_core::OrgId>,
    /// Whether events are written to the outbox.
    events: bool,
    /// How long an approval waits for a decision, in milliseconds.
    approval_ttl_ms: i64,
    /// Whether records keep the arguments of their acts (`[records]
    /// keep_args`); without, only while an approval waits.
    keep_args: bool,
    /// The trust scores in force, which `min_trust` is judged against.
    trust: Arc<crate::trust::Board>,
    /// Organisations whose trust inputs the current group changed: marked
    /// stale when it commits.
    touched: HashSet<Org>,
    /// The records the current group made, not yet stored: written by one
    /// statement just before it commits, or before anything reads records.
    records: Vec<Vec<Value>>,
    /// The events the current group reported, not yet stored: written by
    /// one statement just before it commits, or before anything reads
    /// events.
    events_held: Vec<Vec<Value>>,
    /// The usage of budgeted tokens the current group read or charged.
    usage_held: HashMap<Jth, HeldUsage>,
    /// The answers the current group gave under idempotency keys.
    replies_held: HashMap<idempotency::HeldKey, idempotency::HeldReply>,
    /// Rows ever kept to be written, and changes made by writing them (see
    /// [`Owned::changes`]).
    buffered: u64,
    flushed: u64,
}

impl Owned for Ledger {
    fn connection(&self) -> &Connection {
        &self.conn
    }

    /// Rows kept to be written count when kept, not when written: a write
    /// that reads records (and so writes those of earlier writes first)
    /// changed nothing of its own by that.
    fn changes(&self) -> u64 {
        self.conn.total_changes() - self.flushed + self.buffered
    }

    fn commit(&mut self) -> Result<(), StoreError> {
        self.touched
            .extend(self.counters.agents.keys().map(|(org, _)| *org));
        self.flush_log().map_err(|error| match error {
            LedgerError::Store(error) => error,
            other => StoreError::Internal(other.to_string()),
        })?;
        self.store_tail()
    }

    fn after_commit(&mut self) {
        if let Some(group) = self.group.take() {
            self.frontier = group.frontier;
        }
        self.integrating = false;
        self.standings.clear();
        self.seqs_made
            .extend(self.numbering.drain().map(|(org, _)| org));
        self.held.clear();
        self.trust.mark_stale(self.touched.drain());
        if self.shared {
            // Other hosts may change them before the next group.
            self.tails.clear();
            self.quotas.clear();
            self.days.clear();
        }
    }

    fn after_rollback(&mut self) {
        self.more_expected = false;
        self.next_entry = None;
        self.ahead = None;
        self.records.clear();
        self.events_held.clear();
        self.usage_held.clear();
        self.replies_held.clear();
        self.standings.clear();
        self.group = None;
        self.frontier = None;
        self.numbering.clear();
        self.held.clear();
        self.integrating = false;
        self.touched.clear();
        self.counters = Counters::default();
        self.tails.clear();
        self.quotas.clear();
        self.days.clear();
    }

    fn before_write(&mut self) {
        self.entered = false;
        self.first = self.held.is_empty() && !self.integrating;
        self.changes_before = Owned::changes(self);
        self.sharing = false;
        self.deferred = false;
    }

    fn take_deferred(&mut self) -> bool {
        std::mem::take(&mut self.deferred)
    }

    fn expect_more(&mut self) {
        self.more_expected = true;
    }

    fn idle(&mut self) {
        self.ahead = None;
        if let Err(error) = self.conn.end_ahead() {
            tracing::warn!(%error, "ending a transaction begun ahead failed");
        }
    }

    fn close(self) {
        if let Err(error) = self.conn.close() {
            tracing::error!(%error, "closing the database failed");
        }
    }
}

impl Ledger {
    /// A ledger writing through `conn`, which has the schema, logging as
    /// `log` says.
    pub fn new(conn: Connection, log: LogSetup) -> Ledger {
        Ledger {
            shared: conn.dialect() == Dialect::Postgres,
            held: HashMap::new(),
            entered: false,
            first: true,
            changes_before: 0,
            sharing: false,
            integrating: false,
            deferred: false,
            more_expected: false,
            next_entry: None,
            ahead: None,
            log,
            group: None,
            frontier: None,
            integrated: None,
            status_block: 0..0,
            org_ids: HashMap::new(),
            events: true,
            approval_ttl_ms: DEFAULT_APPROVAL_TTL_MS,
            keep_args: true,
            trust: Arc::default(),
            touched: HashSet::new(),
            records: Vec::new(),
            events_held: Vec::new(),
            usage_held: HashMap::new(),
            replies_held: HashMap::new(),
            buffered: 0,
            flushed: 0,
            conn,
            claims: HashMap::new(),
            token_orgs: HashMap::new(),
            standings: HashMap::new(),
            counters: Counters::default(),
            tails: HashMap::new(),
            numbering: HashMap::new(),
            seqs_made: HashSet::new(),
            seq_block: {
                let [a, b, c] = crate::random::bytes::<3>();
                i64::from(u32::from_be_bytes([0, a, b, c]))
                    % (rows_log::PENDING_SEQS / rows_log::PENDING_BLOCK)
            },
            times: HashMap::new(),
            quotas: HashMap::new(),
            days: HashMap::new(),
        }
    }

    /// The ledger writing events to the outbox or not (`[events] enabled`;
    /// on by default).
    pub fn with_events(mut self, enabled: bool) -> Ledger {
        self.events = enabled;
        self
    }

    /// The ledger judging `min_trust` against `board`, and marking there
    /// the organisations whose trust inputs its writes change.
    pub fn with_trust(mut self, board: Arc<crate::trust::Board>) -> Ledger {
        self.trust = board;
        self
    }

    /// The ledger giving approvals `ttl_ms` to be decided.
    pub fn with_approval_ttl(mut self, ttl_ms: i64) -> Ledger {
        self.approval_ttl_ms = ttl_ms;
        self
    }

    /// The ledger keeping the arguments of acts on their records (`true`),
    /// or only while an approval waits for a decision (`false`).
    pub fn with_keep_args(mut self, keep: bool) -> Ledger {
        self.keep_args = keep;
        self
    }

    /// Runs `work` in a transaction of its own and commits it as the writer
    /// commits a group (what the group kept in memory written first): for
    /// operator commands, which change the database without a server.
    pub fn transact<T>(
        &mut self,
        work: impl FnOnce(&mut Ledger) -> Result<T, LedgerError>,
    ) -> Result<T, LedgerError> {
        self.conn.begin()?;
        let outcome = work(self).and_then(|value| {
            self.commit()?;
            Ok(value)
        });
        match outcome {
            Ok(value) => {
                self.after_commit();
                Ok(value)
            }
            Err(error) => {
                let _ = self.conn.execute_batch("ROLLBACK");
                self.after_rollback();
                Err(error)
            }
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

    /// The jti of the token with this jti hash: how a caller shown only the
    /// hash names a token to act on (an API key revoking). Unknown when no
    /// token has it.
    pub fn jti_of(&self, jth: &Jth) -> Result<Jti, LedgerError> {
        tokens::jti_by_jth(&self.conn, jth)?.ok_or(LedgerError::UnknownToken)
    }

    /// A token and its standing, by jti; `None` for a token never issued
    /// here.
    ///
    /// The standing is read once a group: the group holds the key of the
    /// token's organisation from that read to its commit (a revocation
    /// takes it exclusive), and what of the group changes a standing
    /// forgets what was read
    /// ([`Ledger::forget_standings`]).
    fn token(&mut self, jti: &Jti) -> Result<Option<Token>, LedgerError> {
        let jth = jti.hash();
        // Even with the standing read: a write taking the key exclusive
        // (a revocation) after one of the group took it shared. The
        // standing, unless read already, rides in the key's flight.
        if self.shared
            && let Some(org) = self.org_of(&jth)?
        {
            let unread = !self.standings.contains_key(&jth);
            self.enter_reading(org, unread.then_some(&jth))?;
        }
        let standing = match self.standings.get(&jth) {
            Some(standing) => *standing,
            None => {
                let Some(standing) = tokens::standing(&self.conn, &jth)? else {
                    return Ok(None);
                };
                self.standings.insert(jth.clone(), standing);
                standing
            }
        };
        let claims = self
            .claims(&jth)?
            .ok_or_else(|| internal("a token row vanished"))?;
        Ok(Some(Token { claims, standing }))
    }

    /// The organisation of the token with this jti hash, read once (it
    /// never changes); `None` for a token never issued here.
    fn org_of(&mut self, jth: &Jth) -> Result<Option<Org>, LedgerError> {
        if let Some(org) = self.token_orgs.get(jth) {
            return Ok(Some(*org));
        }
        let Some(org) = tokens::org_by_jth(&self.conn, jth)? else {
            return Ok(None);
        };
        if self.token_orgs.len() >= CLAIMS_CACHE_LIMIT {
            self.token_orgs.clear();
        }
        self.token_orgs.insert(jth.clone(), org);
        Ok(Some(org))
    }

    /// Forgets the standings the group read: it is about to store a token
    /// (its parent's count of children changes) or revoke one.
    fn forget_standings(&mut self) {
        self.standings.clear();
    }

    /// Takes the key of `org` ([`crate::store::locks::org`]) for the rest
    /// of the group — exclusive, or shared when the write running is one
    /// that takes the keys of what it touches ([`Ledger::share`]) — and
    /// answers whether it took it just now. On PostgreSQL, where other
    /// hosts write too, every write takes its organisation's key before it
    /// reads anything a decision of it depends on: writes that exclude one
    /// another across hosts take turns, each seeing what the others
    /// committed (what this ledger remembers of an organisation — quotas,
    /// today's count — is forgotten after every commit on PostgreSQL, and
    /// read again under the key). Writes taking the key shared (records,
    /// authorizations, completions, evaluations, ratings) run at once on
    /// every host, each taking the keys of the chain, record, quota or
    /// gate it touches; every other write (issue, delegate, revoke,
    /// settings…) takes it exclusive, waiting for those in flight, and the
    /// next ones see its change. A group waits only for the keys of a
    /// write that began with the group holding none (its organisation's
    /// key first; a cycle among two such writes' other keys — rare: an
    /// evaluation using an approval takes its chain's key before the
    /// record's, a completion after — is PostgreSQL's to break, as a
    /// 503): a later write needing a key another transaction holds (or
    /// any key, once the group holds the log's integration row) asks to
    /// run again first in the next group (the writer keeps it,
    /// [`crate::store::Owned::take_deferred`]) — so no group waits for a
    /// key while holding one an earlier write took, and groups never wait
    /// on one another in a cycle. (Before, every group took the record
    /// log's state row first, which ordered them all; it is taken only in
    /// the tail now, after every key, [`Ledger::store_tail`].) On SQLite the
    /// single writer's `BEGIN IMMEDIATE` already excludes everyone:
    /// nothing to do.
    fn enter(&mut self, org: Org) -> Result<bool, LedgerError> {
        self.enter_reading(org, None)
    }

    /// [`Ledger::enter`], and when it takes the key now, the standing of
    /// the token `standing_of` read in the same flight, after the key (one
    /// round trip for both, [`org_rows::enter`]); kept only when read
    /// under the key, so a revocation that held the key is seen.
    fn enter_reading(&mut self, org: Org, standing_of: Option<&Jth>) -> Result<bool, LedgerError> {
        if !self.shared {
            return Ok(false);
        }
        let key = crate::store::locks::org(org);
        let exclusive = !self.sharing;
        if self.holds(key, exclusive) {
            return Ok(false);
        }
        if let Some((ahead_org, ahead_jth, entered)) = self.ahead.take()
            && ahead_org == org
            && !exclusive
            && entered.taken
            && let Some(row) = entered.row
            && self.conn.adopt_ahead()
        {
            // The reads this write would send now, sent after the last
            // group's commit in its flight: the same statements in the
            // same order, in the transaction this group runs in.
            self.took(key, false);
            self.quotas.insert(org, row.quotas);
            if let (Some(jth), Some(standing)) = (standing_of, entered.standing)
                && ahead_jth.as_ref() == Some(jth)
            {
                self.standings.insert(jth.clone(), standing);
            }
            self.next_entry = Some((org, ahead_jth));
            return Ok(true);
        }
        let wait = self.may_wait();
        let jth_param = standing_of.map(|jth| [jth.as_str()]);
        let mut standing = None;
        let mut read = |row: &Row<'_>| {
            standing = Some(tokens::standing_row(row)?);
            Ok(())
        };
        let then = jth_param.as_ref().map(|param| Query {
            sql: tokens::STANDING,
            params: param,
            read: &mut read,
        });
        let (entered, under_key) = org_rows::enter(&self.conn, org, exclusive, wait, then)?;
        match entered {
            org_rows::Entered::Missing => {
                Err(internal("an organisation of a stored object is missing"))
            }
            org_rows::Entered::Busy => Err(self.defer()),
            org_rows::Entered::Row(row) => {
                self.took(key, exclusive);
                self.quotas.insert(org, row.quotas);
                if !exclusive && self.next_entry.is_none() {
                    self.next_entry = Some((org, standing_of.cloned()));
                }
                if under_key && let (Some(jth), Some(standing)) = (standing_of, standing) {
                    self.standings.insert(jth.clone(), standing);
                }
                Ok(true)
            }
        }
    }

    /// Marks the write running now as one that takes its organisation's
    /// key shared and the keys of what it touches (see
    /// [`crate::store::locks`]), unless it took a key already (it then
    /// goes on as it began).
    fn share(&mut self) {
        if !self.entered {
            self.sharing = true;
        }
    }

    /// Takes the key of an object of `org` a shared write touches
    /// (exclusive), unless the group holds `org`'s key exclusively, which
    /// covers it; answers whether it took it just now (what was read
    /// before is then read again).
    fn touch(&mut self, org: Org, key: i64) -> Result<bool, LedgerError> {
        if !self.shared || self.holds(crate::store::locks::org(org), true) || self.holds(key, true)
        {
            return Ok(false);
        }
        let wait = self.may_wait();
        if !crate::store::locks::take(&self.conn, key, true, wait)? {
            return Err(self.defer());
        }
        self.took(key, true);
        Ok(true)
    }

    /// Takes `key` exclusively for the rest of the group (PostgreSQL)
    /// without deciding how the write running takes its organisation's
    /// key: an idempotency key's, taken before the key is looked up
    /// ([`Ledger::once`]), so two hosts' writes of one key take turns, and
    /// the write then shares its organisation's key or not as it would
    /// without one.
    fn take(&mut self, key: i64) -> Result<(), LedgerError> {
        self.take_reading(key, Vec::new()).map(drop)
    }

    /// [`Ledger::take`], running `then` in the flight that takes the key
    /// ([`crate::store::locks::take_then`]); answers whether what `then`
    /// read counts (read under the key). `then` does not run when the
    /// group holds the key already, nor on SQLite: the caller reads.
    fn take_reading(&mut self, key: i64, then: Vec<Query<'_>>) -> Result<bool, LedgerError> {
        if !self.shared || self.holds(key, true) {
            return Ok(false);
        }
        let wait = self.may_wait();
        let taken = crate::store::locks::take_then(&self.conn, key, true, wait, then)?;
        if taken == Taken::Busy {
            return Err(self.defer());
        }
        self.held.insert(key, true);
        Ok(taken == Taken::Free)
    }

    /// Whether the group holds `key` (exclusively, when `exclusive`).
    fn holds(&self, key: i64, exclusive: bool) -> bool {
        self.held.get(&key).is_some_and(|held| *held || !exclusive)
    }

    /// Whether the write running now may wait for a key: the group held
    /// none when it began (a write waiting while its group holds keys of
    /// earlier writes could close a cycle with another host's group), or
    /// it changed something already (a batch's record after the first), so
    /// that asking to run again would fail its group at once: it waits, and
    /// only a cycle, which PostgreSQL breaks, fails the group.
    fn may_wait(&self) -> bool {
        !self.integrating && (self.first || Owned::changes(self) != self.changes_before)
    }

    fn took(&mut self, key: i64, exclusive: bool) {
        let held = self.held.entry(key).or_insert(exclusive);
        *held |= exclusive;
        self.entered = true;
    }

    /// A key is held by another transaction: the write asks to run again
    /// first in the next group.
    fn defer(&mut self) -> LedgerError {
        self.deferred = true;
        LedgerError::Store(StoreError::Unavailable(
            "a key the write needs is held: the write runs again in the next group",
        ))
    }

    /// The tokens of `claims`' chain that carry a budget. A chain with a
    /// budget limit is judged and charged by one host's group at a time:
    /// its root's key ([`crate::store::locks::chain`]) is taken before its
    /// usage is read.
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
        if self.shared && budgeted.iter().any(|(_, c)| c.has_budget()) {
            let jth = claims.jth();
            let org = self
                .org_of(&jth)?
                .ok_or_else(|| internal("a budgeted token is missing"))?;
            let root = claims.ancestors().first().unwrap_or(&jth);
            // Usage is read after this (and kept to the group's end).
            self.touch(org, crate::store::locks::chain(root.as_str()))?;
        }
        Ok(budgeted)
    }

    /// The constraints of a chain with what each token has used so far, for
    /// core's checks over a chain. Only a token with a budget limit keeps
    /// its usage (see [`Ledger::charge`]); another's reads as none, without
    /// a statement. A token's usage is read once per group, then kept with
    /// the group's charges added.
    fn usage(&mut self, budgeted: &Budgeted) -> Result<Vec<(Constraints, Usage)>, LedgerError> {
        budgeted
            .iter()
            .map(|(jth, constraints)| {
                let used = if constraints.has_budget() {
                    self.held_usage(jth)?.usage()?
                } else {
                    Usage::default()
                };
                Ok((constraints.clone(), used))
            })
            .collect()
    }

    /// A budgeted token's usage as the group sees it: read when the group
    /// first needs it.
    fn held_usage(&mut self, jth: &Jth) -> Result<&mut HeldUsage, LedgerError> {
        match self.usage_held.entry(jth.clone()) {
            std::collections::hash_map::Entry::Occupied(held) => Ok(held.into_mut()),
            std::collections::hash_map::Entry::Vacant(slot) => {
                let stored = tokens::usage(&self.conn, jth)?;
                Ok(slot.insert(HeldUsage {
                    spent_micros: i64::try_from(stored.spent.micros()).map_err(internal)?,
                    actions: i64::try_from(stored.actions).map_err(internal)?,
                    charged: None,
                }))
            }
        }
    }

    /// Adds spend and actions to the usage of every token of a chain that
    /// has a budget limit, for the record `by`, and reports each budget
    /// threshold the charge makes a token's usage reach. A token whose
    /// constraints set no limit (only an approval requirement, a trust
    /// floor or argument rules) keeps no usage, as a token without
    /// constraints keeps none: nothing is measured against it, and
    /// charging it cost every one of its records three statements on the
    /// writer. The charges are kept in memory and stored with the group
    /// ([`Ledger::store_usage`]).
    fn charge(
        &mut self,
        budgeted: &Budgeted,
        spend_micros: i64,
        actions: i64,
        by: outbox::ChargedBy<'_>,
    ) -> Result<(), LedgerError> {
        for (jth, constraints) in budgeted.iter().filter(|(_, c)| c.has_budget()) {
            let held = self.held_usage(jth)?;
            let before = held.usage()?;
            held.spent_micros += spend_micros;
            held.actions += actions;
            let charged = held.charged.get_or_insert((0, 0, constraints.clone()));
            charged.0 += spend_micros;
            charged.1 += actions;
            let after = held.usage()?;
            self.buffered += 1;
            if spend_micros > 0 || actions > 0 {
                self.report_thresholds(jth, constraints, before, after, by)?;
            }
        }
        Ok(())
    }

    /// The rows of the group's charges, one a token charged, which it
    /// then forgets.
    fn usage_rows(&mut self) -> Result<Vec<Vec<Value>>, StoreError> {
        let mut rows = Vec::new();
        let mut held: Vec<(Jth, HeldUsage)> =
            std::mem::take(&mut self.usage_held).into_iter().collect();
        // One order of rows, whatever the map's.
        held.sort_by(|(a, _), (b, _)| a.as_str().cmp(b.as_str()));
        for (jth, held) in held {
            let Some((spend_micros, actions, constraints)) = &held.charged else {
                continue;
            };
            let share = mandate_core::largest_share(constraints, held.usage()?);
            rows.push(tokens::charged(
                &jth,
                *spend_micros,
                *actions,
                share.map(|(limit, percent)| (limit.as_str(), percent)),
            ));
        }
        Ok(rows)
    }

    /// Writes what the group still holds — its records, the log's leaves,
    /// events, charges, idempotency answers and counters — and commits:
    /// on PostgreSQL one flight ([`Connection::commit_flight`]) of the
    /// numbering of the group's records ([`Ledger::numbering_steps`]), the
    /// sequencer ([`rows_log::SEQUENCE`]), one statement for every table
    /// that numbers the group's rows from them on the server
    /// ([`rows_log::BASES`], [`rows_log::NUMBERED_SEQ`]), and `COMMIT`.
    /// The organisations' and the sequencer's rows are held from their
    /// statements to the commit: for the server's work and the commit's
    /// flush, no network round trip.
    fn store_tail(&mut self) -> Result<(), StoreError> {
        static RECORDS: LazyLock<InsertTexts> =
            LazyLock::new(|| InsertTexts::new(records::INSERT_INTO, &records::INSERTED));
        static EVENTS: LazyLock<InsertTexts> = LazyLock::new(|| {
            InsertTexts::new(
                crate::store::events::INSERT_INTO,
                &crate::store::events::INSERTED,
            )
        });
        // The same columns, their leaf index and event `seq` provisional
        // until the tail numbers them (PostgreSQL).
        static NUMBERED_RECORDS: LazyLock<Vec<sql::Column>> = LazyLock::new(|| {
            let mut columns = records::INSERTED.to_vec();
            if let Some(column) = columns.get_mut(*RECORD_LOG_CREATED) {
                *column = sql::Column::Numbered(rows_log::LEAF);
            }
            if let Some(column) = columns.get_mut(*RECORD_SEQ) {
                *column = sql::Column::Computed(
                    rows_log::NUMBERED_SEQ.as_str(),
                    rows_log::NUMBERED_SEQ_JOIN.as_str(),
                );
            }
            columns
        });
        static NUMBERED_EVENTS: LazyLock<Vec<sql::Column>> = LazyLock::new(|| {
            let mut columns = crate::store::events::INSERTED.to_vec();
            if let Some(column) = columns.first_mut() {
                *column = sql::Column::Numbered(rows_log::EVENT);
            }
            columns
        });
        const NUMBERED_RENUMBERING: [sql::Column; 2] =
            [sql::Column::Text, sql::Column::Numbered(rows_log::LEAF)];
        let records = std::mem::take(&mut self.records);
        let events = std::mem::take(&mut self.events_held);
        let usage = self.usage_rows()?;
        let replies = self.reply_rows();
        let counters = self.counters.take_rows()?;
        let writes = !(records.is_empty()
            && events.is_empty()
            && usage.is_empty()
            && replies.is_empty()
            && counters.is_empty());
        let integrated = !self.shared;
        let (leaves, emitted) = self
            .group
            .as_ref()
            .map_or((0, 0), |group| (group.leaves, group.events));
        let sequenced = self.shared && (writes || leaves > 0 || emitted > 0);
        let counts = [
            i64::try_from(leaves)
                .map_err(|_| StoreError::Internal("the log outgrew its index".to_owned()))?,
            emitted,
        ];
        let numbered = self.numbering_steps();
        let pending = i64::try_from(rows_log::PENDING)
            .map_err(|_| StoreError::Internal("the provisional numbers".to_owned()))?;
        let (log, renumber) = self.group.as_mut().map_or_else(Default::default, |group| {
            (
                group.rows.take(integrated),
                std::mem::take(&mut group.renumber),
            )
        });
        // Rows written inline with a provisional leaf index: moved by the
        // base from `pending` (their index's offset kept).
        let renumber: Vec<(Logged, Vec<Vec<Value>>)> = renumber
            .into_iter()
            .map(|(table, keys)| {
                let rows = keys
                    .into_iter()
                    .map(|key| vec![Value::Text(key), Value::Integer(pending)])
                    .collect();
                (table, rows)
            })
            .collect();
        let (record_columns, event_columns): (&[sql::Column], &[sql::Column]) = if sequenced {
            (&NUMBERED_RECORDS, &NUMBERED_EVENTS)
        } else {
            (&records::INSERTED, &crate::store::events::INSERTED)
        };
        let mut parts = vec![
            RECORDS.rows(record_columns, &records),
            EVENTS.rows(event_columns, &events),
            tokens::charge_all(&usage),
            crate::store::idempotency::store_all(&replies),
        ];
        parts.extend(log.parts(sequenced));
        parts.extend(counters.parts());
        // A statement of their own, before the others: a token issued and
        // charged by the group is a row both would change, which one
        // statement must not do twice.
        let renumbered: Vec<RowsFor<'_>> = renumber
            .iter()
            .map(|(table, rows)| RowsFor {
                sqlite: table.renumbering(),
                postgres: table.renumbering(),
                columns: &NUMBERED_RENUMBERING,
                rows,
            })
            .collect();
        let sequence = [Value::Integer(counts[0]), Value::Integer(counts[1])];
        let numbering = sql::Numbering {
            bases: rows_log::BASES,
            params: &counts,
            from: pending,
        };
        let numbering = sequenced.then_some(numbering);
        let mut steps = Vec::with_capacity(6);
        for (sql, values) in &numbered {
            steps.push(Step::Execute(sql, values));
        }
        if sequenced {
            steps.push(Step::Execute(rows_log::SEQUENCE, &sequence));
        }
        steps.push(Step::Tables(&renumbered, numbering));
        steps.push(Step::Tables(&parts, numbering));
        let before = self.conn.total_changes();
        self.ahead = None;
        let next = self
            .next_entry
            .take()
            .filter(|_| std::mem::take(&mut self.more_expected));
        match next {
            Some((org, jth)) => {
                let standing_of = jth.as_ref().map(Jth::as_str);
                let entered = org_rows::commit_entering(&self.conn, &steps, org, standing_of)?;
                self.ahead = entered.map(|entered| (org, jth, entered));
            }
            None => {
                self.conn.commit_flight(&steps, &mut [])?;
            }
        }
        self.flushed += self.conn.total_changes() - before;
        Ok(())
    }

    /// The statements of the tail's flight that number the group's
    /// records of each organisation (PostgreSQL), before the sequencer's:
    /// the `org_seqs` rows this ledger has not seen made
    /// ([`rows_log::MAKE_ORG_SEQS`]), the rows of several taken in order
    /// ([`rows_log::LOCK_ORG_SEQS`]), the numbers handed out
    /// ([`rows_log::NUMBER_ORGS`], taking the rows to the commit, so
    /// records are numbered in commit order without a gap), and the records
    /// stored before the tail moved to them ([`rows_log::RENUMBER_RECORDS`]);
    /// the records the tail stores are numbered by its statement
    /// ([`rows_log::NUMBERED_SEQ`]). A host whose clock is behind another's
    /// by more than [`MAX_TIME_DISORDER_MS`] is refused by the row's check
    /// (`org_seqs_clock`, a 503).
    fn numbering_steps(&self) -> Vec<(&'static str, [Value; 1])> {
        if self.numbering.is_empty() {
            return Vec::new();
        }
        let mut orgs: Vec<rows_log::OrgRecords> = self
            .numbering
            .iter()
            .map(|(org, n)| rows_log::OrgRecords {
                org: org.number(),
                n: n.count,
                min_at: n.min_at,
                max_at: n.max_at,
            })
            .collect();
        orgs.sort_by_key(|o| o.org);
        let mut steps = Vec::with_capacity(4);
        let unseen: Vec<rows_log::OrgRecords> = orgs
            .iter()
            .filter(|o| !self.seqs_made.contains(&Org::from_number(o.org)))
            .copied()
            .collect();
        if !unseen.is_empty() {
            steps.push((
                rows_log::MAKE_ORG_SEQS.as_str(),
                [Value::Text(rows_log::org_records(&unseen))],
            ));
        }
        let listed = rows_log::org_records(&orgs);
        if orgs.len() > 1 {
            steps.push((rows_log::LOCK_ORG_SEQS, [Value::Text(listed.clone())]));
        }
        steps.push((rows_log::NUMBER_ORGS, [Value::Text(listed)]));
        let mut inline: Vec<i64> = self
            .numbering
            .iter()
            .filter(|(_, n)| n.inline)
            .map(|(org, _)| self.pending_seqs(*org).start)
            .collect();
        if !inline.is_empty() {
            inline.sort_unstable();
            steps.push((
                rows_log::RENUMBER_RECORDS.as_str(),
                [Value::Text(rows_log::pending_blocks(&inline))],
            ));
        }
        steps
    }

    /// The provisional `seq` of the group's next record of `org` made at
    /// `at_ms` (PostgreSQL; the tail numbers it, [`Ledger::numbering_steps`]).
    fn number_pending(&mut self, org: Org, at_ms: i64) -> Result<i64, LedgerError> {
        let start = self.pending_seqs(org).start;
        let numbering = self.numbering.entry(org).or_insert(Numbering {
            count: 0,
            min_at: at_ms,
            max_at: at_ms,
            inline: false,
        });
        if numbering.count >= rows_log::PENDING_BLOCK {
            return Err(internal(
                "a group made more records of one organisation than it may",
            ));
        }
        let seq = start + numbering.count;
        numbering.count += 1;
        numbering.min_at = numbering.min_at.min(at_ms);
        numbering.max_at = numbering.max_at.max(at_ms);
        Ok(seq)
    }

    /// Where this ledger numbers records of `org` provisionally
    /// (PostgreSQL): a block of the upper half of the organisation's range.
    fn pending_seqs(&self, org: Org) -> std::ops::Range<i64> {
        let start =
            org.seqs().start + rows_log::PENDING_SEQS + self.seq_block * rows_log::PENDING_BLOCK;
        start..start + rows_log::PENDING_BLOCK
    }

    /// Writes the records the group made so far, in one statement: before
    /// anything reads or changes records, and before the group commits.
    fn store_records(&mut self) -> Result<(), StoreError> {
        if self.records.is_empty() {
            return Ok(());
        }
        let rows = std::mem::take(&mut self.records);
        if self.shared {
            // Their `seq` and leaves are numbered in the tail: renumbered
            // there.
            for row in &rows {
                if let Some(Value::Integer(seq)) = row.get(*RECORD_SEQ)
                    && let Some(numbering) = self.numbering.get_mut(&Org::of_seq(*seq))
                {
                    numbering.inline = true;
                }
                if let Some(Value::Text(aar_id)) = row.get(*RECORD_AAR_ID) {
                    self.logged_in(Logged::Records, aar_id)
                        .map_err(|error| StoreError::Internal(error.to_string()))?;
                }
            }
        }
        let before = self.conn.total_changes();
        self.conn
            .insert_rows(records::INSERT_INTO, &records::INSERTED, &rows)?;
        self.flushed += self.conn.total_changes() - before;
        Ok(())
    }

    /// Writes the events the group reported so far, in one statement:
    /// before anything reads or deletes events, and before the group
    /// commits.
    /// On PostgreSQL they wait for the tail, where their `seq` is handed
    /// out: what reads events mid-group (a new webhook's cursor, pruning)
    /// reads what is committed, which the group's own events come after.
    fn store_events(&mut self) -> Result<(), StoreError> {
        if self.events_held.is_empty() || self.shared {
            return Ok(());
        }
        let rows = std::mem::take(&mut self.events_held);
        let before = self.conn.total_changes();
        self.conn.insert_rows(
            crate::store::events::INSERT_INTO,
            &crate::store::events::INSERTED,
            &rows,
        )?;
        self.flushed += self.conn.total_changes() - before;
        Ok(())
    }

    /// The newest record of `org`.
    fn tail(&mut self, org: Org) -> Result<Tail, LedgerError> {
        if let Some(tail) = self.tails.get(&org) {
            return Ok(*tail);
        }
        self.store_records()?;
        let tail = match records::tail(&self.conn, org)? {
            Some((seq, created_at)) => Tail { seq, created_at },
            None => Tail {
                seq: org.seqs().start - 1,
                created_at: 0,
            },
        };
        self.tails.insert(org, tail);
        Ok(tail)
    }

    /// The creation time of the next record of `org`: `now`, but never
    /// before its last record's, so `created_at` never decreases along an
    /// organisation's `seq` even when the clock steps back (record queries
    /// turn time ranges into `seq` ranges). On PostgreSQL, never before
    /// the last this ledger gave: other hosts' records may be up to
    /// [`MAX_TIME_DISORDER_MS`] ahead along `seq` (bounded by the tail,
    /// [`Ledger::numbering_steps`]).
    fn record_time(&mut self, org: Org, now_ms: i64) -> Result<i64, LedgerError> {
        if self.shared {
            return Ok(now_ms.max(self.times.get(&org).copied().unwrap_or(0)));
        }
        Ok(now_ms.max(self.tail(org)?.created_at))
    }

    /// An organisation's quotas.
    fn quotas(&mut self, org: Org) -> Result<Quotas, LedgerError> {
        if let Some(quotas) = self.quotas.get(&org) {
            return Ok(*quotas);
        }
        let quotas = org_rows::by_number(&self.conn, org)?
            .ok_or_else(|| internal("an organisation of a stored object is missing"))?
            .quotas;
        self.quotas.insert(org, quotas);
        Ok(quotas)
    }

    /// Refuses one more record of `org` at `at_ms` beyond its
    /// `records_per_day` quota. Only an organisation with the quota is
    /// counted: its records of the day are counted once — the hours of
    /// the day in `org_hours`, as committed, and as the group's counters
    /// move them — then kept. (Not by `seq`: on PostgreSQL `created_at`
    /// may step back a little along it, [`MAX_TIME_DISORDER_MS`].)
    fn check_record_quota(&mut self, org: Org, at_ms: i64) -> Result<(), LedgerError> {
        let Some(limit) = self.quotas(org)?.records_per_day else {
            return Ok(());
        };
        // The day is counted after this (and kept to the group's end).
        self.touch(org, crate::store::locks::quota(org))?;
        let day = at_ms.div_euclid(DAY_MS);
        let records = match self.days.get(&org) {
            Some(count) if count.day == day => count.records,
            _ => {
                let hours =
                    dashboard::hour_of(day * DAY_MS)..dashboard::hour_of((day + 1) * DAY_MS);
                let held: i64 = self
                    .counters
                    .hours
                    .iter()
                    .filter(|((o, hour), _)| *o == org && hours.contains(hour))
                    .map(|(_, counts)| counts.records)
                    .sum();
                let records = dashboard::records_in_hours(&self.conn, org, hours)?
                    + u64::try_from(held).unwrap_or(0);
                self.days.insert(org, DayCount { day, records });
                records
            }
        };
        if records >= limit {
            let next_day_ms = (day + 1) * DAY_MS;
            let retry_after_s = u64::try_from((next_day_ms - at_ms + 999) / 1000).unwrap_or(1);
            return Err(LedgerError::QuotaExceeded(QuotaExceeded::RecordsPerDay {
                limit,
                retry_after_s,
            }));
        }
        Ok(())
    }

    /// Refuses one more token of `org` beyond its `tokens_outstanding`
    /// quota.
    fn check_token_quota(&mut self, org: Org, now_s: i64) -> Result<(), LedgerError> {
        let Some(limit) = self.quotas(org)?.tokens_outstanding else {
            return Ok(());
        };
        if tokens::outstanding(&self.conn, org, now_s, limit)? >= limit {
            return Err(LedgerError::QuotaExceeded(
                QuotaExceeded::TokensOutstanding { limit },
            ));
        }
        Ok(())
    }

    /// Stores a record of `org` made at `record.created_at` (from
    /// [`Ledger::record_time`]) after its last one, and counts it for its
    /// agent, its workflow and the organisation's day. The caller checked
    /// the quota ([`Ledger::check_record_quota`]) before writing anything.
    fn insert_record(
        &mut self,
        org: Org,
        record: &records::NewRecord<'_>,
    ) -> Result<(), LedgerError> {
        let seq = if self.shared {
            self.number_pending(org, record.created_at)?
        } else {
            let seq = self.tail(org)?.seq + 1;
            if !org.seqs().contains(&seq) {
                return Err(internal(
                    "the organisation's records fill their range of seq",
                ));
            }
            seq
        };
        let claims = record.token;
        let created = events::record_created(events::Created {
            aar_id: record.aar_id,
            jth: claims.jth(),
            agent_id: claims.agent_id(),
            provenance_ref: &claims.svc_prov,
            action: record.action,
            resource: record.resource,
            state: record.state,
            result_hash: record.result_hash,
            spend_micros: record.spend.micros(),
            credential: record.credential,
            delegated_jth: record.delegated_jti.map(Jti::hash),
            args_hash: record.args_hash,
        })?;
        let log_created = self.append(org, record.created_at, created)?;
        self.records.push(records::row(seq, record, log_created)?);
        self.buffered += 1;
        let reported = match record.state {
            mandate_core::RecordState::Denied { .. } => Some(EventType::RecordDenied),
            mandate_core::RecordState::Completed { result } if result != Outcome::Success => {
                Some(EventType::RecordFailed)
            }
            _ => None,
        };
        if let Some(kind) = reported {
            self.emit(
                org,
                record.created_at,
                kind,
                &outbox::new_record_data(record),
            )?;
        }
        if self.shared {
            if self.times.len() >= CLAIMS_CACHE_LIMIT {
                self.times.clear();
            }
            let newest = self.times.entry(org).or_insert(record.created_at);
            *newest = (*newest).max(record.created_at);
        } else {
            self.tails.insert(
                org,
                Tail {
                    seq,
                    created_at: record.created_at,
                },
            );
        }
        if let Some(count) = self.days.get_mut(&org) {
            count.records += 1;
        }
        let agent_id = claims.agent_id().as_str();
        self.counters.record_moved(
            org,
            agent_id,
            record.created_at,
            record.origin,
            None,
            &record.state,
        );
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

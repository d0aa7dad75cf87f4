//! The write side: every change to tokens and records, run inside the
//! single writer so that checks and writes are atomic — revocation, scope and
//! budgets are judged against exactly the state the write commits on top of.
//!
//! Every rule comes from core: scope (`Scope::check`), narrowing and
//! delegation (`delegate`), budgets (`check_budget`), the record lifecycle
//! (`transition`). This module only loads state, asks core, and stores the
//! answer.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use mandate_core::{
    AarId, Action, BudgetExceeded, Claims, Constraints, DenyReason, IssueError, Jth, Jti, Outcome,
    Rating, RecordError, RecordEvent, RecordState, Resource, ResultHash, SigningKey, Status,
    TokenRequest, Ulid, Usage, Usd, check_budget, check_extra_spend, check_fan_out, delegate, sign,
    transition,
};
use rusqlite::{Connection, OptionalExtension, params};

use crate::clock::{iso_ms, iso_s, now_ms};
use crate::error::{ApiError, ApiResult, ViolationBody};
use crate::model::{FeedbackResponse, IssuedToken, RecordBody};
use crate::store::Hooks;

/// How many parsed claim sets the writer keeps.
const CLAIMS_CACHE_LIMIT: usize = 50_000;

/// Parsed claims by jti hash. Claims never change once issued, so a cached
/// copy is always right; the mutable state (revocation, usage) is always
/// read from the database.
#[derive(Debug, Default)]
pub struct ClaimsCache(Mutex<HashMap<Jth, Arc<Claims>>>);

impl ClaimsCache {
    fn get(&self, jth: &Jth) -> Option<Arc<Claims>> {
        self.0.lock().ok()?.get(jth).cloned()
    }

    fn put(&self, jth: Jth, claims: Arc<Claims>) {
        if let Ok(mut map) = self.0.lock() {
            if map.len() >= CLAIMS_CACHE_LIMIT {
                map.clear();
            }
            map.insert(jth, claims);
        }
    }
}

/// A token as the writer sees it: its claims and its mutable state.
struct TokenRow {
    claims: Arc<Claims>,
    revoked: bool,
    children: u64,
}

/// The claims of a token, found by its jti hash (how descendants name it).
fn load_claims(
    conn: &Connection,
    cache: &ClaimsCache,
    jth: &Jth,
) -> ApiResult<Option<Arc<Claims>>> {
    if let Some(claims) = cache.get(jth) {
        return Ok(Some(claims));
    }
    let text: Option<String> = conn
        .prepare_cached("SELECT claims FROM tokens WHERE jth = ?1")?
        .query_row([jth.as_str()], |row| row.get(0))
        .optional()?;
    let Some(text) = text else { return Ok(None) };
    let claims: Claims = serde_json::from_str(&text).map_err(ApiError::internal)?;
    let claims = Arc::new(claims);
    cache.put(jth.clone(), claims.clone());
    Ok(Some(claims))
}

fn load_token(conn: &Connection, cache: &ClaimsCache, jti: &Jti) -> ApiResult<Option<TokenRow>> {
    let jth = jti.hash();
    let state: Option<(bool, i64)> = conn
        .prepare_cached("SELECT revoked_at IS NOT NULL, children FROM tokens WHERE jth = ?1")?
        .query_row([jth.as_str()], |row| Ok((row.get(0)?, row.get(1)?)))
        .optional()?;
    let Some((revoked, children)) = state else {
        return Ok(None);
    };
    let claims =
        load_claims(conn, cache, &jth)?.ok_or_else(|| ApiError::internal("token row vanished"))?;
    Ok(Some(TokenRow {
        claims,
        revoked,
        children: u64::try_from(children).unwrap_or(0),
    }))
}

/// Why a token cannot act now, if it cannot.
fn inactive_reason(token: &TokenRow, now_s: i64) -> Option<DenyReason> {
    if token.revoked {
        Some(DenyReason::TokenRevoked)
    } else if now_s >= token.claims.exp {
        Some(DenyReason::TokenExpired)
    } else {
        None
    }
}

/// The tokens of a chain that carry a budget (by jti hash), with their limits.
type Budgeted = Vec<(Jth, Constraints)>;

/// The tokens of a chain (ancestors, then the token) that carry a budget.
fn budgeted_chain(conn: &Connection, cache: &ClaimsCache, claims: &Claims) -> ApiResult<Budgeted> {
    let mut budgeted = Vec::new();
    for jth in claims.ancestors() {
        let ancestor = load_claims(conn, cache, jth)?
            .ok_or_else(|| ApiError::internal("an ancestor token is missing"))?;
        if !ancestor.constraints().is_empty() {
            budgeted.push((jth.clone(), ancestor.constraints()));
        }
    }
    if !claims.constraints().is_empty() {
        budgeted.push((claims.jth(), claims.constraints()));
    }
    Ok(budgeted)
}

fn usage(conn: &Connection, jth: &Jth) -> ApiResult<Usage> {
    let (spent, actions): (i64, i64) = conn
        .prepare_cached("SELECT spent_micros, actions FROM tokens WHERE jth = ?1")?
        .query_row([jth.as_str()], |row| Ok((row.get(0)?, row.get(1)?)))?;
    Ok(Usage {
        spent: Usd::from_micros(u64::try_from(spent).unwrap_or(0)).map_err(ApiError::internal)?,
        actions: u64::try_from(actions).unwrap_or(0),
    })
}

/// Checks one more action spending `spend` against every budget of the chain.
fn check_chain(
    conn: &Connection,
    budgeted: &[(Jth, Constraints)],
    spend: Usd,
) -> ApiResult<Result<(), BudgetExceeded>> {
    for (jth, constraints) in budgeted {
        if let Err(exceeded) = check_budget(constraints, usage(conn, jth)?, spend) {
            return Ok(Err(exceeded));
        }
    }
    Ok(Ok(()))
}

/// Adds spend and actions to the usage of every budgeted token of a chain.
fn charge(
    conn: &Connection,
    budgeted: &[(Jth, Constraints)],
    spend_micros: i64,
    actions: i64,
) -> ApiResult<()> {
    let mut update = conn.prepare_cached(
        "UPDATE tokens SET spent_micros = spent_micros + ?1, actions = actions + ?2 WHERE jth = ?3",
    )?;
    for (jth, _) in budgeted {
        update.execute(params![spend_micros, actions, jth.as_str()])?;
    }
    Ok(())
}

fn micros(amount: Usd) -> i64 {
    i64::try_from(amount.micros()).unwrap_or(i64::MAX)
}

/// What an agent call proved about holding the token it acts with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Credential {
    /// A bare `vat_jti` in the body: it names the token and proves nothing.
    Jti,
    /// The token itself: `Authorization: Bearer`, or `DPoP` with a valid
    /// proof for a bound token.
    Token,
}

impl Credential {
    /// How the record stores it.
    fn as_str(self) -> &'static str {
        match self {
            Credential::Jti => "jti",
            Credential::Token => "token",
        }
    }
}

/// A record about to be written.
struct NewRecord<'a> {
    aar_id: &'a AarId,
    token: &'a Claims,
    action: &'a str,
    resource: &'a str,
    state: RecordState,
    result_hash: Option<&'a ResultHash>,
    spend: Usd,
    created_at: i64,
    delegated_jti: Option<&'a Jti>,
    credential: Credential,
}

/// Changes to an agent's counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct AgentDelta {
    successes: i64,
    failures: i64,
    pending: i64,
    approved: i64,
    flagged: i64,
    rejected: i64,
}

impl AgentDelta {
    fn add(&mut self, other: AgentDelta) {
        self.successes += other.successes;
        self.failures += other.failures;
        self.pending += other.pending;
        self.approved += other.approved;
        self.flagged += other.flagged;
        self.rejected += other.rejected;
    }
}

/// The agent counter changes of one more record in `state`.
fn counter_delta(state: RecordState) -> AgentDelta {
    match state {
        RecordState::Pending => AgentDelta {
            pending: 1,
            ..AgentDelta::default()
        },
        RecordState::Completed {
            result: Outcome::Success,
        }
        | RecordState::Rated {
            result: Outcome::Success,
            ..
        } => AgentDelta {
            successes: 1,
            ..AgentDelta::default()
        },
        RecordState::Completed { .. } | RecordState::Rated { .. } | RecordState::Denied { .. } => {
            AgentDelta {
                failures: 1,
                ..AgentDelta::default()
            }
        }
    }
}

/// Agent and workflow counters changed by the writes of the current group,
/// written once just before it commits: many records of one agent or one
/// workflow then cost one update, not one each. Only the writer thread
/// touches it, and nothing in the writer reads these counters.
#[derive(Debug, Default)]
struct Deferred {
    agents: HashMap<String, AgentDelta>,
    /// Records added and the latest activity, per workflow.
    workflows: HashMap<String, (i64, i64)>,
    /// Changes to `workflow_counts`, keyed by its four key columns joined
    /// with NUL (which no id, action or result key can hold).
    counts: HashMap<String, i64>,
    /// The key being looked up, reused so a known key costs no allocation.
    scratch: String,
}

thread_local! {
    static DEFERRED: std::cell::RefCell<Deferred> = std::cell::RefCell::new(Deferred::default());
}

fn bump_agent(agent_id: &str, delta: AgentDelta) {
    DEFERRED.with_borrow_mut(|deferred| {
        deferred
            .agents
            .entry(agent_id.to_owned())
            .or_default()
            .add(delta);
    });
}

fn touch_workflow(provenance_ref: &str, records: i64, at_ms: i64) {
    DEFERRED.with_borrow_mut(|deferred| {
        let entry = deferred
            .workflows
            .entry(provenance_ref.to_owned())
            .or_insert((0, at_ms));
        entry.0 += records;
        entry.1 = entry.1.max(at_ms);
    });
}

/// Counts `change` more records of `agent_id`'s `action` with `result_key`
/// in a workflow.
fn count_in_workflow(
    provenance_ref: &str,
    agent_id: &str,
    action: &str,
    result_key: &str,
    change: i64,
) {
    DEFERRED.with_borrow_mut(|deferred| {
        let Deferred {
            counts, scratch, ..
        } = deferred;
        scratch.clear();
        for (i, part) in [provenance_ref, agent_id, action, result_key]
            .into_iter()
            .enumerate()
        {
            if i > 0 {
                scratch.push('\0');
            }
            scratch.push_str(part);
        }
        match counts.get_mut(scratch.as_str()) {
            Some(count) => *count += change,
            None => {
                counts.insert(scratch.clone(), change);
            }
        }
    });
}

/// Writes the counters the group changed (the writer's `before_commit`).
fn flush_deferred(conn: &Connection) -> ApiResult<()> {
    let deferred = DEFERRED.take();
    let mut agents = conn.prepare_cached(
        "UPDATE agents SET successes = successes + ?1, failures = failures + ?2, pending = pending + ?3,
            approved = approved + ?4, flagged = flagged + ?5, rejected = rejected + ?6
         WHERE agent_id = ?7",
    )?;
    for (agent_id, d) in &deferred.agents {
        agents.execute(params![
            d.successes,
            d.failures,
            d.pending,
            d.approved,
            d.flagged,
            d.rejected,
            agent_id
        ])?;
    }
    let mut workflows = conn.prepare_cached(
        "UPDATE workflows SET total_records = total_records + ?1, last_activity = max(last_activity, ?2)
         WHERE provenance_ref = ?3",
    )?;
    for (provenance_ref, (records, at_ms)) in &deferred.workflows {
        workflows.execute(params![records, at_ms, provenance_ref])?;
    }
    let mut counts = conn.prepare_cached(
        "INSERT INTO workflow_counts (provenance_ref, agent_id, action, result_key, count)
         VALUES (?1, ?2, ?3, ?4, ?5)
         ON CONFLICT DO UPDATE SET count = count + excluded.count",
    )?;
    for (key, change) in &deferred.counts {
        let mut parts = key.split('\0');
        let (Some(provenance_ref), Some(agent_id), Some(action), Some(result_key), None) = (
            parts.next(),
            parts.next(),
            parts.next(),
            parts.next(),
            parts.next(),
        ) else {
            return Err(ApiError::internal("a workflow count key lost its shape"));
        };
        counts.execute(params![
            provenance_ref,
            agent_id,
            action,
            result_key,
            change
        ])?;
    }
    Ok(())
}

/// Forgets the counters of a group that rolled back.
fn discard_deferred() {
    DEFERRED.take();
}

/// The writer's commit hooks: the ledger's deferred counters.
pub(crate) fn commit_hooks() -> Hooks {
    Hooks {
        before_commit: flush_deferred,
        after_rollback: discard_deferred,
    }
}

fn insert_record(conn: &Connection, record: &NewRecord<'_>) -> ApiResult<()> {
    let claims = record.token;
    let completed_at =
        matches!(record.state.status(), Status::Completed).then_some(record.created_at);
    conn.prepare_cached(
        "INSERT INTO records (aar_id, provenance_ref, jti, agent_id, action, resource, status, result,
            deny_reason, result_hash, spend_micros, trust_score, delegation_depth, human_ref,
            assurance_level, created_at, completed_at, delegated_jti, credential)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19)",
    )?
    .execute(params![
        record.aar_id.as_str(),
        claims.svc_prov.as_str(),
        claims.jti.as_str(),
        claims.agent_id().as_str(),
        record.action,
        record.resource,
        record.state.status().as_str(),
        record.state.result().map(Outcome::as_str),
        record.state.deny_reason().map(DenyReason::code),
        record.result_hash.map(ResultHash::as_str),
        micros(record.spend),
        claims.svc_trust_score,
        claims.svc_depth,
        claims.svc_human.as_str(),
        claims.svc_assurance.as_str(),
        record.created_at,
        completed_at,
        record.delegated_jti.map(Jti::as_str),
        record.credential.as_str(),
    ])?;
    bump_agent(claims.agent_id().as_str(), counter_delta(record.state));
    touch_workflow(claims.svc_prov.as_str(), 1, record.created_at);
    count_in_workflow(
        claims.svc_prov.as_str(),
        claims.agent_id().as_str(),
        record.action,
        record.state.result_key(),
        1,
    );
    Ok(())
}

/// Stores a newly signed token and makes its agent and workflow known; a
/// delegated token counts as a child of `parent`.
fn insert_token(
    conn: &Connection,
    claims: &Claims,
    parent: Option<&Jti>,
    kid: &str,
    issued_by: Option<&str>,
    now_ms: i64,
) -> ApiResult<()> {
    // First, so a key revoked since the caller read the key ring leaves
    // nothing changed: the token is refused and signed again by a fresh key.
    let signable = conn
        .prepare_cached(
            "UPDATE signing_keys SET max_exp = max(max_exp, ?1) WHERE kid = ?2 AND revoked_at IS NULL",
        )?
        .execute(params![claims.exp, kid])?;
    if signable == 0 {
        return Err(ApiError::signing_key_revoked());
    }
    let json = serde_json::to_string(claims).map_err(ApiError::internal)?;
    conn.prepare_cached(
        "INSERT INTO tokens (jti, parent, jth, provenance_ref, agent_id, depth, claims, kid, issued_at,
            expires_at, issued_by)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
    )?
    .execute(params![
        claims.jti.as_str(),
        parent.map(Jti::as_str),
        claims.jth().as_str(),
        claims.svc_prov.as_str(),
        claims.agent_id().as_str(),
        claims.svc_depth,
        json,
        kid,
        claims.iat,
        claims.exp,
        issued_by,
    ])?;
    if let Some(parent) = parent {
        conn.prepare_cached("UPDATE tokens SET children = children + 1 WHERE jti = ?1")?
            .execute([parent.as_str()])?;
    }
    conn.prepare_cached("INSERT OR IGNORE INTO agents (agent_id) VALUES (?1)")?
        .execute([claims.agent_id().as_str()])?;
    if claims.svc_depth == 0 {
        conn.prepare_cached(
            "INSERT INTO workflows (provenance_ref, root_jti, root_agent_id, human_ref, assurance_level,
                created_at, last_activity)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?6)",
        )?
        .execute(params![
            claims.svc_prov.as_str(),
            claims.jti.as_str(),
            claims.agent_id().as_str(),
            claims.svc_human.as_str(),
            claims.svc_assurance.as_str(),
            now_ms,
        ])?;
    }
    Ok(())
}

fn issued(claims: &Claims, compact_jwt: String, aar_id: Option<&AarId>) -> ApiResult<IssuedToken> {
    Ok(IssuedToken {
        jti: claims.jti.to_string(),
        provenance_ref: claims.svc_prov.to_string(),
        compact_jwt,
        token_type: if claims.cnf.is_some() {
            "DPoP"
        } else {
            "Bearer"
        }
        .to_owned(),
        claims: serde_json::to_value(claims).map_err(ApiError::internal)?,
        expires_at: iso_s(claims.exp),
        delegation_depth: claims.svc_depth,
        aar_id: aar_id.map(AarId::to_string),
    })
}

/// Stores a root token signed by the handler.
pub fn store_root(
    conn: &Connection,
    claims: &Claims,
    compact_jwt: String,
    kid: &str,
    issued_by: &str,
) -> ApiResult<IssuedToken> {
    insert_token(conn, claims, None, kid, Some(issued_by), now_ms())?;
    issued(claims, compact_jwt, None)
}

/// What an agent asks to do.
#[derive(Debug, Clone)]
pub struct Attempt {
    pub jti: Jti,
    pub credential: Credential,
    pub action: Action,
    pub resource: Resource,
    pub spend: Usd,
    /// Random bits of the record id.
    pub random: [u8; 10],
}

/// What happened to an attempt that reached a token.
#[derive(Debug, Clone)]
pub struct AttemptOutcome {
    pub aar_id: AarId,
    pub claims: Arc<Claims>,
    /// How the caller held the token: a refusal tells a holder more.
    pub credential: Credential,
    /// `None` when allowed; otherwise why the attempt was denied.
    pub denied: Option<DenyReason>,
}

thread_local! {
    /// The creation time of the last record this writer stored.
    static LAST_RECORD_MS: std::cell::Cell<Option<i64>> = const { std::cell::Cell::new(None) };
}

/// The creation time of a new record: now, but never before the last
/// record's, so `created_at` never decreases along `seq` even when the clock
/// steps back (record queries turn time ranges into `seq` ranges).
fn record_time(conn: &Connection) -> ApiResult<i64> {
    let last = match LAST_RECORD_MS.get() {
        Some(last) => last,
        // The newest record by `seq` is the latest (a lookup at the end of
        // the table; `max(created_at)` would read every record).
        None => conn
            .prepare_cached("SELECT created_at FROM records ORDER BY seq DESC LIMIT 1")?
            .query_row([], |row| row.get(0))
            .optional()?
            .unwrap_or(0),
    };
    let at = now_ms().max(last);
    LAST_RECORD_MS.set(Some(at));
    Ok(at)
}

fn new_aar_id(now_ms: i64, random: [u8; 10]) -> ApiResult<AarId> {
    let ulid = Ulid::new(u64::try_from(now_ms).unwrap_or(0), random).map_err(ApiError::internal)?;
    Ok(AarId::new(ulid))
}

/// Judges an attempt: token state, then scope, then budgets. Returns the
/// decision and the budgeted tokens to charge when it is allowed.
fn judge(
    conn: &Connection,
    cache: &ClaimsCache,
    token: &TokenRow,
    attempt: &Attempt,
    now_s: i64,
) -> ApiResult<(Result<(), DenyReason>, Budgeted)> {
    if let Some(reason) = inactive_reason(token, now_s) {
        return Ok((Err(reason), Vec::new()));
    }
    if let Err(denial) = token
        .claims
        .svc_scope
        .check(&attempt.action, &attempt.resource)
    {
        return Ok((Err(denial.into()), Vec::new()));
    }
    let budgeted = budgeted_chain(conn, cache, &token.claims)?;
    let decision = check_chain(conn, &budgeted, attempt.spend)?.map_err(DenyReason::from);
    Ok((decision, budgeted))
}

/// Authorize, record and complete in one step (`record/action`), or record
/// the denial. An unknown token writes nothing.
pub fn record_action(
    conn: &Connection,
    cache: &ClaimsCache,
    attempt: &Attempt,
    result: Outcome,
    result_hash: Option<&ResultHash>,
) -> ApiResult<AttemptOutcome> {
    attempt_with(conn, cache, attempt, result_hash, |decision| {
        RecordEvent::RecordAction { decision, result }
    })
}

/// Pre-flight check (`authorize`): a pending record, or a denied one.
pub fn authorize(
    conn: &Connection,
    cache: &ClaimsCache,
    attempt: &Attempt,
) -> ApiResult<AttemptOutcome> {
    attempt_with(conn, cache, attempt, None, RecordEvent::Authorize)
}

fn attempt_with(
    conn: &Connection,
    cache: &ClaimsCache,
    attempt: &Attempt,
    result_hash: Option<&ResultHash>,
    event: impl FnOnce(Result<(), DenyReason>) -> RecordEvent,
) -> ApiResult<AttemptOutcome> {
    let now = record_time(conn)?;
    let token = load_token(conn, cache, &attempt.jti)?.ok_or_else(ApiError::token_inactive)?;
    if attempt.credential == Credential::Jti && token.claims.cnf.is_some() {
        return Err(ApiError::dpop_required());
    }
    let (decision, budgeted) = judge(conn, cache, &token, attempt, now / 1000)?;
    let state = transition(None, event(decision)).map_err(ApiError::internal)?;
    let aar_id = new_aar_id(now, attempt.random)?;
    let allowed = decision.is_ok();
    let spend = if allowed { attempt.spend } else { Usd::ZERO };
    insert_record(
        conn,
        &NewRecord {
            aar_id: &aar_id,
            token: &token.claims,
            action: attempt.action.as_str(),
            resource: attempt.resource.as_str(),
            state,
            result_hash: if allowed { result_hash } else { None },
            spend,
            created_at: now,
            delegated_jti: None,
            credential: attempt.credential,
        },
    )?;
    if allowed {
        charge(conn, &budgeted, micros(spend), 1)?;
    }
    Ok(AttemptOutcome {
        aar_id,
        claims: token.claims,
        credential: attempt.credential,
        denied: decision.err(),
    })
}

/// A stored record with what the writer needs to change it.
struct StoredRecord {
    body: RecordBody,
    state: RecordState,
    jti: Jti,
    spend: Usd,
    credential: Credential,
}

const RECORD_COLUMNS: &str = "aar_id, provenance_ref, jti, agent_id, action, resource, status, result,
    deny_reason, result_hash, spend_micros, trust_score, delegation_depth, human_ref, assurance_level,
    rating, note, feedback_at, created_at, completed_at, delegated_jti, credential";

/// Reads a record row selected with [`RECORD_COLUMNS`].
pub fn record_from_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<(RecordBody, i64)> {
    let spend_micros: i64 = row.get(10)?;
    let feedback_at: Option<i64> = row.get(17)?;
    let completed_at: Option<i64> = row.get(19)?;
    let body = RecordBody {
        aar_id: row.get(0)?,
        provenance_ref: row.get(1)?,
        vat_jti: Some(row.get(2)?),
        agent_id: row.get(3)?,
        action: row.get(4)?,
        resource: row.get(5)?,
        status: row.get(6)?,
        result: row.get(7)?,
        deny_reason: row.get(8)?,
        result_hash: row.get(9)?,
        spend_usd: Usd::from_micros(u64::try_from(spend_micros).unwrap_or(0))
            .map_or(0.0, Usd::as_f64),
        trust_score: row.get(11)?,
        delegation_depth: row.get(12)?,
        human_ref: row.get(13)?,
        assurance_level: row.get(14)?,
        rating: row.get(15)?,
        note: row.get(16)?,
        feedback_at: feedback_at.map(iso_ms),
        created_at: iso_ms(row.get(18)?),
        completed_at: completed_at.map(iso_ms),
        delegated_jti: row.get(20)?,
        credential: row.get(21)?,
    };
    Ok((body, spend_micros))
}

/// The SQL that selects one record by id.
pub fn select_record_sql() -> String {
    format!("SELECT {RECORD_COLUMNS} FROM records WHERE aar_id = ?1")
}

/// The SQL prefix that selects records, for queries to extend.
pub fn select_records_sql() -> String {
    format!("SELECT {RECORD_COLUMNS}, seq FROM records")
}

fn parse_state(body: &RecordBody) -> ApiResult<RecordState> {
    let parse = |e: RecordError| ApiError::internal(e);
    let status: Status = body.status.parse().map_err(parse)?;
    let result = body
        .result
        .as_deref()
        .map(str::parse::<Outcome>)
        .transpose()
        .map_err(parse)?;
    let rating = body
        .rating
        .as_deref()
        .map(str::parse::<Rating>)
        .transpose()
        .map_err(parse)?;
    let reason = body
        .deny_reason
        .as_deref()
        .map(str::parse::<DenyReason>)
        .transpose()
        .map_err(parse)?;
    RecordState::from_parts(status, result, rating, reason).map_err(parse)
}

fn load_record(conn: &Connection, aar_id: &AarId) -> ApiResult<StoredRecord> {
    let row = conn
        .prepare_cached(&select_record_sql())?
        .query_row([aar_id.as_str()], record_from_row)
        .optional()?;
    let (body, spend_micros) =
        row.ok_or_else(|| ApiError::not_found("record_not_found", "no record has this aar_id"))?;
    let state = parse_state(&body)?;
    let credential = match body.credential.as_str() {
        "token" => Credential::Token,
        _ => Credential::Jti,
    };
    Ok(StoredRecord {
        jti: Jti::parse(body.vat_jti.as_deref().unwrap_or_default()).map_err(ApiError::internal)?,
        spend: Usd::from_micros(u64::try_from(spend_micros).unwrap_or(0))
            .map_err(ApiError::internal)?,
        credential,
        body,
        state,
    })
}

/// Maps an illegal lifecycle transition to its HTTP answer.
fn lifecycle_error(error: RecordError) -> ApiError {
    match error {
        RecordError::NoRecord => ApiError::not_found(error.code(), error.to_string()),
        RecordError::AlreadyCompleted
        | RecordError::AlreadyRated
        | RecordError::NotCompletable
        | RecordError::NotRatable => ApiError::conflict(error.code(), error.to_string()),
        other => ApiError::internal(other),
    }
}

/// What an agent reports when completing a pending record.
#[derive(Debug, Clone)]
pub struct Completion {
    pub aar_id: AarId,
    pub result: Outcome,
    pub result_hash: Option<ResultHash>,
    /// The actual spend; `None` keeps the reservation.
    pub spend: Option<Usd>,
    /// The token presented with the call (verified, with its proof when
    /// bound), if any.
    pub presented: Option<Jti>,
}

/// Who may complete a record: a record made with the token itself is
/// completed with that token or an ancestor's; one made with a bare
/// `vat_jti` by its `aar_id`, as the spec shows. A token presented anyway
/// must be the record's or an ancestor's.
fn check_completer(
    record: &StoredRecord,
    claims: &Claims,
    presented: Option<&Jti>,
) -> ApiResult<()> {
    match (presented, record.credential) {
        (Some(jti), _) => {
            if *jti == record.jti || claims.ancestors().contains(&jti.hash()) {
                Ok(())
            } else {
                Err(ApiError::forbidden(
                    "token_mismatch",
                    "the token sent is neither the record's token nor one it was delegated from",
                ))
            }
        }
        (None, Credential::Token) => Err(ApiError::token_required(
            "this record was made with the token itself; complete it with that token (or one it was delegated from)",
        )),
        (None, Credential::Jti) => Ok(()),
    }
}

/// Closes a pending record. Spend above the reservation is checked against
/// every budget of the chain; spend below it is released. Once the record's
/// token is revoked or expired, a completion still reports what happened,
/// but may report spend up to the reservation and no more.
pub fn complete(
    conn: &Connection,
    cache: &ClaimsCache,
    completion: &Completion,
    now: i64,
) -> ApiResult<RecordBody> {
    let record = load_record(conn, &completion.aar_id)?;
    let token = load_token(conn, cache, &record.jti)?
        .ok_or_else(|| ApiError::internal("the record's token is missing"))?;
    check_completer(&record, &token.claims, completion.presented.as_ref())?;
    let state = transition(Some(record.state), RecordEvent::Complete(completion.result))
        .map_err(lifecycle_error)?;
    let budgeted = budgeted_chain(conn, cache, &token.claims)?;
    let spend = completion.spend.unwrap_or(record.spend);
    let extra = spend.saturating_sub(record.spend);
    if extra > Usd::ZERO {
        if let Some(reason) = inactive_reason(&token, now / 1000) {
            let mut error = match completion.presented {
                Some(_) => ApiError::holder_inactive(reason == DenyReason::TokenExpired),
                None => ApiError::token_inactive(),
            };
            error.detail.push_str(
                "; a completion may report spend up to the amount reserved at authorize, no more",
            );
            return Err(error.with_record(completion.aar_id.as_str()));
        }
        for (jth, constraints) in &budgeted {
            if let Err(exceeded) = check_extra_spend(constraints, usage(conn, jth)?, extra) {
                return Err(ApiError::forbidden(exceeded.code(), exceeded.to_string())
                    .with_record(completion.aar_id.as_str()));
            }
        }
    }
    charge(conn, &budgeted, micros(spend) - micros(record.spend), 0)?;
    conn.prepare_cached(
        "UPDATE records SET status = ?1, result = ?2, result_hash = ?3, spend_micros = ?4, completed_at = ?5
         WHERE aar_id = ?6",
    )?
    .execute(params![
        state.status().as_str(),
        completion.result.as_str(),
        completion.result_hash.as_ref().map(ResultHash::as_str),
        micros(spend),
        now,
        completion.aar_id.as_str(),
    ])?;
    let mut delta = counter_delta(state);
    delta.pending = -1;
    bump_agent(&record.body.agent_id, delta);
    touch_workflow(&record.body.provenance_ref, 0, now);
    for (key, change) in [(record.state.result_key(), -1), (state.result_key(), 1)] {
        count_in_workflow(
            &record.body.provenance_ref,
            &record.body.agent_id,
            &record.body.action,
            key,
            change,
        );
    }
    let mut body = record.body;
    if completion.presented.is_none() {
        // The caller named the record by `aar_id` and holds no token: the
        // answer names none.
        body.vat_jti = None;
        body.delegated_jti = None;
    }
    body.status = state.status().as_str().to_owned();
    body.result = Some(completion.result.as_str().to_owned());
    body.result_hash = completion.result_hash.as_ref().map(ResultHash::to_string);
    body.spend_usd = spend.as_f64();
    body.completed_at = Some(iso_ms(now));
    Ok(body)
}

/// Gives a completed record its one human rating.
pub fn rate(
    conn: &Connection,
    aar_id: &AarId,
    rating: Rating,
    note: Option<&str>,
) -> ApiResult<FeedbackResponse> {
    let record = load_record(conn, aar_id)?;
    transition(Some(record.state), RecordEvent::Rate(rating)).map_err(lifecycle_error)?;
    let now = now_ms();
    conn.prepare_cached(
        "UPDATE records SET rating = ?1, note = ?2, feedback_at = ?3 WHERE aar_id = ?4",
    )?
    .execute(params![rating.as_str(), note, now, aar_id.as_str()])?;
    let delta = match rating {
        Rating::Approved => AgentDelta {
            approved: 1,
            ..AgentDelta::default()
        },
        Rating::Flagged => AgentDelta {
            flagged: 1,
            ..AgentDelta::default()
        },
        Rating::Rejected => AgentDelta {
            rejected: 1,
            ..AgentDelta::default()
        },
    };
    bump_agent(&record.body.agent_id, delta);
    Ok(FeedbackResponse {
        aar_id: aar_id.to_string(),
        rating: rating.as_str().to_owned(),
        feedback_at: iso_ms(now),
    })
}

/// A delegation request that reached its parent token.
#[derive(Debug)]
pub struct Delegation {
    pub parent: Jti,
    pub request: TokenRequest,
    pub child_random: [u8; 10],
    pub record_random: [u8; 10],
}

/// What came of a delegation.
#[derive(Debug)]
pub enum DelegationOutcome {
    Issued(IssuedToken),
    /// Refused; the denied `delegate` record is written.
    Denied {
        aar_id: AarId,
        error: ApiError,
    },
}

/// The problem a delegation refused by core answers with.
fn refusal(error: IssueError) -> (DenyReason, ApiError) {
    match error {
        IssueError::DelegateNotHeld => (
            DenyReason::ActionNotPermitted,
            ApiError::forbidden(
                "action_not_permitted",
                "the parent token does not hold the `delegate` action",
            ),
        ),
        IssueError::Widening(widening) => {
            let violations = widening
                .violations
                .iter()
                .map(|v| ViolationBody {
                    field: v.field(),
                    code: v.code().to_owned(),
                    message: v.to_string(),
                })
                .collect();
            let error = ApiError::forbidden(widening.code(), widening.to_string())
                .with_violations(violations);
            (DenyReason::ScopeWidening, error)
        }
        error @ IssueError::DepthExceeded => (
            DenyReason::DelegationTooDeep,
            ApiError::forbidden(error.code(), error.to_string()),
        ),
        error @ IssueError::TooManyChildren => (
            DenyReason::TooManyChildren,
            ApiError::forbidden(error.code(), error.to_string()),
        ),
        IssueError::ParentExpired => (DenyReason::TokenExpired, ApiError::holder_inactive(true)),
        other => (DenyReason::ScopeWidening, ApiError::internal(other)),
    }
}

/// Delegates from a parent token presented by its holder: core decides, the
/// writer records the `delegate` action either way, signs and stores the
/// child when allowed.
pub fn delegate_token(
    conn: &Connection,
    cache: &ClaimsCache,
    key: &SigningKey,
    delegation: Delegation,
) -> ApiResult<DelegationOutcome> {
    let now = record_time(conn)?;
    let parent = load_token(conn, cache, &delegation.parent)?
        .ok_or_else(|| ApiError::holder_inactive(false))?;
    let child_agent = format!("agent:{}", delegation.request.agent_id);
    let aar_id = new_aar_id(now, delegation.record_random)?;
    let refuse = |reason: DenyReason, error: ApiError| -> ApiResult<DelegationOutcome> {
        let state =
            transition(None, RecordEvent::Authorize(Err(reason))).map_err(ApiError::internal)?;
        insert_record(
            conn,
            &NewRecord {
                aar_id: &aar_id,
                token: &parent.claims,
                action: mandate_core::scope::DELEGATE_ACTION,
                resource: &child_agent,
                state,
                result_hash: None,
                spend: Usd::ZERO,
                created_at: now,
                delegated_jti: None,
                credential: Credential::Token,
            },
        )?;
        Ok(DelegationOutcome::Denied {
            error: error.with_record(aar_id.as_str()),
            aar_id: aar_id.clone(),
        })
    };
    if let Some(reason) = inactive_reason(&parent, now / 1000) {
        return refuse(
            reason,
            ApiError::holder_inactive(reason == DenyReason::TokenExpired),
        );
    }
    let ulid = Ulid::new(u64::try_from(now).unwrap_or(0), delegation.child_random)
        .map_err(ApiError::internal)?;
    let child = check_fan_out(parent.children)
        .and_then(|()| delegate(&parent.claims, delegation.request, now / 1000, ulid));
    let child = match child {
        Ok(child) => child,
        Err(error @ IssueError::TtlOutOfRange) => {
            return Err(ApiError::invalid(
                "ttl_seconds",
                error.code(),
                error.to_string(),
            ));
        }
        Err(IssueError::Scope(error)) => {
            return Err(ApiError::invalid(
                "policy.frameworks",
                error.code(),
                format!("{error} (the parent's frameworks and the requested ones together)"),
            ));
        }
        Err(error) => {
            let (reason, problem) = refusal(error);
            return refuse(reason, problem);
        }
    };
    let budgeted = budgeted_chain(conn, cache, &parent.claims)?;
    if let Err(exceeded) = check_chain(conn, &budgeted, Usd::ZERO)? {
        return refuse(
            exceeded.into(),
            ApiError::forbidden(exceeded.code(), exceeded.to_string()),
        );
    }
    let compact = sign(&child, key).map_err(ApiError::internal)?;
    insert_token(conn, &child, Some(&delegation.parent), key.kid(), None, now)?;
    let state = transition(
        None,
        RecordEvent::RecordAction {
            decision: Ok(()),
            result: Outcome::Success,
        },
    )
    .map_err(ApiError::internal)?;
    insert_record(
        conn,
        &NewRecord {
            aar_id: &aar_id,
            token: &parent.claims,
            action: mandate_core::scope::DELEGATE_ACTION,
            resource: &child_agent,
            state,
            result_hash: None,
            spend: Usd::ZERO,
            created_at: now,
            delegated_jti: Some(&child.jti),
            credential: Credential::Token,
        },
    )?;
    charge(conn, &budgeted, 0, 1)?;
    Ok(DelegationOutcome::Issued(issued(
        &child,
        compact,
        Some(&aar_id),
    )?))
}

/// Who is revoking.
#[derive(Debug, Clone)]
pub enum Revoker {
    /// A human or operator with an API key: may revoke any token.
    ApiKey,
    /// An agent presenting its own token: may revoke it or a descendant.
    Token(Jti),
}

/// Most jtis a revocation answer lists; the rest are counted.
pub const REVOKED_LIST_LIMIT: usize = 1000;

/// What a revocation ended.
#[derive(Debug, Clone)]
pub struct Revoked {
    /// The revoked token and its descendants, at most [`REVOKED_LIST_LIMIT`].
    pub jtis: Vec<String>,
    /// How many tokens the revocation covers in all.
    pub count: u64,
    /// Unix seconds.
    pub at: i64,
}

/// Revokes a token and every descendant.
pub fn revoke(
    conn: &Connection,
    cache: &ClaimsCache,
    target: &Jti,
    reason: Option<&str>,
    by: &Revoker,
    now_ms: i64,
) -> ApiResult<Revoked> {
    let now = now_ms / 1000;
    let token = load_token(conn, cache, target)?
        .ok_or_else(|| ApiError::not_found("token_not_found", "no token has this jti"))?;
    if let Revoker::Token(revoker) = by {
        let own =
            load_token(conn, cache, revoker)?.ok_or_else(|| ApiError::holder_inactive(false))?;
        if let Some(reason) = inactive_reason(&own, now) {
            return Err(ApiError::holder_inactive(
                reason == DenyReason::TokenExpired,
            ));
        }
        let allowed = revoker == target || token.claims.ancestors().contains(&revoker.hash());
        if !allowed {
            return Err(ApiError::forbidden(
                "not_an_ancestor",
                "a token may revoke only itself and its descendants",
            ));
        }
    }
    let mut statement = conn.prepare_cached(
        "WITH RECURSIVE subtree(jti) AS (
             SELECT ?1 UNION ALL SELECT t.jti FROM tokens t JOIN subtree s ON t.parent = s.jti
         )
         UPDATE tokens SET revoked_at = coalesce(revoked_at, ?2), revoke_reason = coalesce(revoke_reason, ?3)
         WHERE jti IN (SELECT jti FROM subtree)
         RETURNING jti",
    )?;
    let mut rows = statement.query(params![target.as_str(), now, reason])?;
    let mut jtis = Vec::new();
    let mut count = 0u64;
    while let Some(row) = rows.next()? {
        count += 1;
        if jtis.len() < REVOKED_LIST_LIMIT {
            jtis.push(row.get::<_, String>(0)?);
        }
    }
    jtis.sort();
    Ok(Revoked {
        jtis,
        count,
        at: now,
    })
}

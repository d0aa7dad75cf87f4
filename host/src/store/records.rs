//! The `records` table and the counters kept with it (`agents`, `workflows`,
//! `workflow_counts`): every statement that reads or writes them, once, for
//! the ledger, the read side and the prefill tool.
//!
//! Ids come back as the text they were stored as: only the ledger writes
//! them, from parsed ids, and readers only show them. What code decides on
//! comes back typed: the record's state, its spend, its times, the
//! credential it was made with.

use crate::store::sql::types::Value;
use crate::store::sql::{self, Connection, OptionalExtension, Row, params};
use mandate_core::{
    AarId, ArgsHash, Claims, CountsChange, DenyReason, Jti, Outcome, Rating, RecordError,
    RecordOrigin, RecordState, ResultHash, Status, Usd,
};

use super::orgs::Org;

/// What the caller proved it held when a record was made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Credential {
    /// A bare `vat_jti` in the body: it names the token and proves nothing.
    Jti,
    /// The token itself: `Authorization: Bearer`, or `DPoP` with a valid
    /// proof for a bound token.
    Token,
}

impl Credential {
    /// How the record stores it: `jti` or `token`.
    pub fn as_str(self) -> &'static str {
        match self {
            Credential::Jti => "jti",
            Credential::Token => "token",
        }
    }

    fn parse(text: &str) -> Option<Credential> {
        match text {
            "jti" => Some(Credential::Jti),
            "token" => Some(Credential::Token),
            _ => None,
        }
    }
}

/// A stored action record.
#[derive(Debug, Clone, PartialEq)]
pub struct Record {
    /// Insertion order within its organisation, whose number is its high
    /// bits: the table's key and the record cursor.
    pub seq: i64,
    pub aar_id: String,
    pub provenance_ref: String,
    /// The token the record was made with.
    pub jti: String,
    /// The bare agent id.
    pub agent_id: String,
    pub action: String,
    pub resource: String,
    pub state: RecordState,
    pub result_hash: Option<String>,
    pub spend: Usd,
    pub trust_score: f64,
    pub delegation_depth: u32,
    pub human_ref: String,
    pub assurance_level: String,
    pub note: Option<String>,
    /// Unix milliseconds.
    pub feedback_at: Option<i64>,
    /// Unix milliseconds; never decreases along `seq`.
    pub created_at: i64,
    /// Unix milliseconds.
    pub completed_at: Option<i64>,
    /// The child token, for `delegate` records.
    pub delegated_jti: Option<String>,
    pub credential: Credential,
    /// What `authorize` reserved, for a record made pending.
    pub reserved: Option<Usd>,
    /// The API key that rated it.
    pub rated_by: Option<String>,
    /// Where its events are in the record log.
    pub log: LogIndices,
    /// The W3C `traceparent` of the call that made it.
    pub traceparent: Option<String>,
    /// The call that made it (`Unknown` for a record made before schema
    /// 9, whose column is null).
    pub origin: RecordOrigin,
    /// The trust in force it was judged with (schema 10; `None` for a
    /// record made before, or refused before trust was judged).
    pub trust_in_force: Option<f64>,
    /// `sha256:` of the canonical JSON of the arguments it was attempted
    /// with (schema 11; `None` without arguments).
    pub args_hash: Option<String>,
    /// The arguments as stored: canonical JSON, `[records] redact_args`
    /// replaced; `None` when none were given or they are not kept.
    pub args: Option<String>,
    /// The relay key that authorized it for a client (schema 14; `None`
    /// for any record not made through a gate's relay).
    pub relay_jkt: Option<String>,
}

/// The leaf indices of a record's events in the record log; `None` for an
/// event it has not had, or had while the log was off.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LogIndices {
    pub created: Option<u64>,
    pub completed: Option<u64>,
    pub rated: Option<u64>,
}

/// Declares the columns a [`Record`] is read from, once: the list the
/// statements select, and each column's position in it by name.
macro_rules! record_columns {
    ($($column:ident),+ $(,)?) => {
        /// The columns of a record, in the order they are selected.
        const COLUMNS: &str = concat!($(stringify!($column), ", ",)+ "seq");

        /// A selected column's position, by name.
        #[allow(non_camel_case_types, reason = "named after the SQL columns")]
        #[derive(Clone, Copy)]
        enum Column { $($column,)+ seq }
    };
}

record_columns!(
    aar_id,
    provenance_ref,
    jti,
    agent_id,
    action,
    resource,
    status,
    result,
    deny_reason,
    result_hash,
    spend_micros,
    trust_score,
    delegation_depth,
    human_ref,
    assurance_level,
    rating,
    note,
    feedback_at,
    created_at,
    completed_at,
    delegated_jti,
    credential,
    reserved_micros,
    rated_by,
    log_created,
    log_completed,
    log_rated,
    traceparent,
    origin,
    trust_ppm,
    args_hash,
    args,
    relay_jkt,
);

/// `SELECT <every record column> FROM records`, for queries to extend with
/// `WHERE` and `ORDER BY`; rows are read with [`from_row`].
pub fn select_sql() -> String {
    format!("SELECT {COLUMNS} FROM records")
}

fn get<T: sql::types::FromSql>(row: &Row<'_>, column: Column) -> sql::Result<T> {
    row.get(column as usize)
}

/// A stored value that does not have the form the writer gave it.
fn corrupt(column: Column, cause: impl std::fmt::Display) -> sql::Error {
    sql::Error::corrupt(format_args!("records column {}", column as usize), cause)
}

fn parsed<T: std::str::FromStr<Err = RecordError>>(
    row: &Row<'_>,
    column: Column,
) -> sql::Result<Option<T>> {
    get::<Option<String>>(row, column)?
        .map(|text| text.parse().map_err(|e| corrupt(column, e)))
        .transpose()
}

/// Reads a row selected with [`select_sql`].
pub fn from_row(row: &Row<'_>) -> sql::Result<Record> {
    let status: Status =
        parsed(row, Column::status)?.ok_or_else(|| corrupt(Column::status, "no status"))?;
    let state = RecordState::from_parts(
        status,
        parsed::<Outcome>(row, Column::result)?,
        parsed::<Rating>(row, Column::rating)?,
        parsed::<DenyReason>(row, Column::deny_reason)?,
    )
    .map_err(|e| corrupt(Column::status, e))?;
    let spend_micros: i64 = get(row, Column::spend_micros)?;
    let spend = Usd::from_micros(u64::try_from(spend_micros).unwrap_or(0))
        .map_err(|e| corrupt(Column::spend_micros, e))?;
    let credential: String = get(row, Column::credential)?;
    let origin = match get::<Option<String>>(row, Column::origin)? {
        None => RecordOrigin::Unknown,
        Some(text) => RecordOrigin::parse(&text).ok_or_else(|| corrupt(Column::origin, text))?,
    };
    let reserved = get::<Option<i64>>(row, Column::reserved_micros)?
        .map(|micros| {
            Usd::from_micros(u64::try_from(micros).unwrap_or(0))
                .map_err(|e| corrupt(Column::reserved_micros, e))
        })
        .transpose()?;
    Ok(Record {
        seq: get(row, Column::seq)?,
        aar_id: get(row, Column::aar_id)?,
        provenance_ref: get(row, Column::provenance_ref)?,
        jti: get(row, Column::jti)?,
        agent_id: get(row, Column::agent_id)?,
        action: get(row, Column::action)?,
        resource: get(row, Column::resource)?,
        state,
        result_hash: get(row, Column::result_hash)?,
        spend,
        trust_score: get(row, Column::trust_score)?,
        delegation_depth: get(row, Column::delegation_depth)?,
        human_ref: get(row, Column::human_ref)?,
        assurance_level: get(row, Column::assurance_level)?,
        note: get(row, Column::note)?,
        feedback_at: get(row, Column::feedback_at)?,
        created_at: get(row, Column::created_at)?,
        completed_at: get(row, Column::completed_at)?,
        delegated_jti: get(row, Column::delegated_jti)?,
        credential: Credential::parse(&credential)
            .ok_or_else(|| corrupt(Column::credential, credential))?,
        reserved,
        rated_by: get(row, Column::rated_by)?,
        log: LogIndices {
            created: get(row, Column::log_created)?,
            completed: get(row, Column::log_completed)?,
            rated: get(row, Column::log_rated)?,
        },
        traceparent: get(row, Column::traceparent)?,
        origin,
        trust_in_force: get::<Option<i64>>(row, Column::trust_ppm)?
            .map(|ppm| ppm.clamp(0, 1_000_000) as f64 / 1_000_000.0),
        args_hash: get(row, Column::args_hash)?,
        args: get(row, Column::args)?,
        relay_jkt: get(row, Column::relay_jkt)?,
    })
}

/// The record with this id, if any.
pub fn by_id(conn: &Connection, aar_id: &str) -> sql::Result<Option<Record>> {
    conn.prepare_cached(&format!("{} WHERE aar_id = ?1", select_sql()))?
        .query_row([aar_id], from_row)
        .optional()
}

impl Record {
    /// The organisation the record stands in.
    pub fn org(&self) -> Org {
        Org::of_seq(self.seq)
    }

    /// Whether its `aar_id` is a credential now: a record made with a bare
    /// `vat_jti` is completed by its `aar_id` alone (spec §4.4), so until
    /// it is completed (pending, or awaiting approval) its `aar_id` is
    /// shown only to the agent that made it (DESIGN.md section 14).
    pub fn aar_id_completes(&self) -> bool {
        self.credential == Credential::Jti
            && matches!(
                self.state,
                RecordState::Pending | RecordState::AwaitingApproval
            )
    }

    /// Its `aar_id` where others are shown it: none while the `aar_id`
    /// completes it.
    pub fn shown_aar_id(&self) -> Option<&str> {
        (!self.aar_id_completes()).then_some(self.aar_id.as_str())
    }
}

/// The newest record of an organisation: its `seq` and when it was created
/// (unix ms), found at the end of the organisation's range of `seq`.
pub fn tail(conn: &Connection, org: Org) -> sql::Result<Option<(i64, i64)>> {
    let seqs = org.seqs();
    conn.prepare_cached(
        "SELECT seq, created_at FROM records WHERE seq >= ?1 AND seq < ?2 ORDER BY seq DESC LIMIT 1",
    )?
    .query_row([seqs.start, seqs.end], |row| Ok((row.get(0)?, row.get(1)?)))
    .optional()
}

/// When the first record of `org` at or after a `seq` was created.
pub(crate) const CREATED_AT_FROM: &str =
    "SELECT created_at FROM records WHERE seq >= ?1 AND seq < ?2 ORDER BY seq LIMIT 1";

/// The first `seq` of a record of `org` created at or after `at_ms` (one
/// past its last record when none is). `created_at` never decreases along
/// an organisation's `seq` on SQLite, so a binary search over its range
/// finds it in some forty index lookups. On PostgreSQL it may step back by
/// up to `MAX_TIME_DISORDER_MS` from the newest before it: the search then
/// answers a `seq` below which every record was created before `at_ms`,
/// and from which every record was created at or after `at_ms −` that
/// bound (record queries search that much wider and compare times).
pub fn first_seq_at(conn: &Connection, org: Org, at_ms: i64) -> sql::Result<i64> {
    let Some((last, _)) = tail(conn, org)? else {
        return Ok(org.seqs().start);
    };
    let seqs = org.seqs();
    let mut low = seqs.start;
    let mut high = last + 1;
    let mut created_at = conn.prepare_cached(CREATED_AT_FROM)?;
    while low < high {
        let middle = low + (high - low) / 2;
        let at: Option<i64> = created_at
            .query_row([middle, seqs.end], |row| row.get(0))
            .optional()?;
        if at.is_some_and(|at| at >= at_ms) {
            high = middle;
        } else {
            low = middle + 1;
        }
    }
    Ok(low)
}

/// A record about to be stored, made with `token`.
#[derive(Debug, Clone, Copy)]
pub struct NewRecord<'a> {
    pub aar_id: &'a AarId,
    pub token: &'a Claims,
    pub action: &'a str,
    pub resource: &'a str,
    pub state: RecordState,
    pub result_hash: Option<&'a ResultHash>,
    pub spend: Usd,
    /// Unix milliseconds; a completed record is completed then too.
    pub created_at: i64,
    pub delegated_jti: Option<&'a Jti>,
    pub credential: Credential,
    /// The W3C `traceparent` the call carried.
    pub traceparent: Option<&'a str>,
    /// The call that made it: reputation counts a refusal by it.
    pub origin: RecordOrigin,
    /// The trust in force it was judged with (the minimum over its
    /// token's chain); `None` when judging stopped before trust.
    pub trust: Option<f64>,
    /// `sha256:` of the canonical JSON of the arguments given, if any.
    pub args_hash: Option<&'a ArgsHash>,
    /// The arguments as stored (redacted), if kept.
    pub args: Option<&'a str>,
    /// The relay key that authorized it for a client, if a gate relayed.
    pub relay_jkt: Option<&'a str>,
}

/// An amount as the tables store it.
pub fn micros(amount: Usd) -> i64 {
    i64::try_from(amount.micros()).unwrap_or(i64::MAX)
}

/// The columns of a new record, in the order of [`row`]'s values.
pub const INSERT_INTO: &str = "records (aar_id, provenance_ref, jti, agent_id, action, resource,
    status, result, deny_reason, result_hash, spend_micros, trust_score, delegation_depth,
    human_ref, assurance_level, created_at, completed_at, delegated_jti, credential, seq,
    reserved_micros, log_created, traceparent, origin, trust_ppm, args_hash, args,
    relay_jkt)";

/// The types of [`INSERT_INTO`]'s columns.
pub const INSERTED: [sql::Column; 28] = {
    use sql::Column::{Integer as I, Real as R, Text as T};
    [
        T, T, T, T, T, T, T, T, T, T, I, R, I, T, T, I, I, T, T, I, I, I, T, T, I, T, T, T,
    ]
};

/// A new record's row, to store as `seq` (which lies in the range of the
/// token's organisation after its last record) with the leaf index of its
/// creation in the record log, through [`Connection::insert_rows`] with
/// [`INSERT_INTO`] and [`INSERTED`]. A pending record keeps its spend as
/// what was reserved, as does one awaiting approval. The counters it
/// changes are the caller's to add.
pub fn row(seq: i64, record: &NewRecord<'_>, log_created: Option<u64>) -> sql::Result<Vec<Value>> {
    let claims = record.token;
    let completed_at =
        matches!(record.state.status(), Status::Completed).then_some(record.created_at);
    let reserved = matches!(
        record.state.status(),
        Status::Pending | Status::AwaitingApproval
    )
    .then_some(micros(record.spend));
    sql::owned(&params![
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
        seq,
        reserved,
        log_created,
        record.traceparent,
        record.origin.as_str(),
        record.trust.map(trust_ppm),
        record.args_hash.map(ArgsHash::as_str),
        record.args,
        record.relay_jkt,
    ])
}

/// The AuthZEN evaluation of `jti` for this action, resource and
/// arguments (`args_hash`, `None` for none) that is still open: awaiting
/// a human's approval, or approved (pending) and not yet used by an
/// evaluation. The oldest, if several.
pub fn open_evaluation(
    conn: &Connection,
    jti: &str,
    action: &str,
    resource: &str,
    args_hash: Option<&ArgsHash>,
) -> sql::Result<Option<Record>> {
    conn.prepare_cached(&format!(
        "{} WHERE jti = ?1 AND action = ?2 AND resource = ?3 AND COALESCE(args_hash, '') = ?4
           AND origin = 'evaluation' AND status IN ('pending', 'awaiting_approval')
         ORDER BY seq LIMIT 1",
        select_sql()
    ))?
    .query_row(
        params![
            jti,
            action,
            resource,
            args_hash.map_or("", ArgsHash::as_str)
        ],
        from_row,
    )
    .optional()
}

/// A trust in [0, 1] as the tables store it: millionths.
fn trust_ppm(trust: f64) -> i64 {
    (trust.clamp(0.0, 1.0) * 1_000_000.0).round() as i64
}

/// Names the child token a `delegate` record issued once its approval
/// came (the record was stored waiting for it, with none).
pub fn set_delegated(conn: &Connection, aar_id: &str, child_jti: &str) -> sql::Result<()> {
    conn.prepare_cached("UPDATE records SET delegated_jti = ?1 WHERE aar_id = ?2")?
        .execute(params![child_jti, aar_id])?;
    Ok(())
}

/// Stores the outcome of the approval a record awaited: `pending` when
/// approved, else `denied` with nothing spent (what was reserved stays in
/// `reserved_micros`).
pub fn decide(conn: &Connection, aar_id: &str, state: RecordState, spend: Usd) -> sql::Result<()> {
    conn.prepare_cached(
        "UPDATE records SET status = ?1, deny_reason = ?2, spend_micros = ?3 WHERE aar_id = ?4",
    )?
    .execute(params![
        state.status().as_str(),
        state.deny_reason().map(DenyReason::code),
        micros(spend),
        aar_id,
    ])?;
    Ok(())
}

/// Forgets the arguments a record kept while its approval waited
/// (`[records] keep_args = false`); its `args_hash` stays.
pub fn forget_args(conn: &Connection, aar_id: &str) -> sql::Result<()> {
    conn.prepare_cached("UPDATE records SET args = NULL WHERE aar_id = ?1")?
        .execute([aar_id])?;
    Ok(())
}

/// A pending record's completion.
#[derive(Debug, Clone, Copy)]
pub struct Completed<'a> {
    pub state: RecordState,
    pub result_hash: Option<&'a ResultHash>,
    pub spend: Usd,
    /// Unix milliseconds.
    pub at: i64,
    /// The leaf index of the completion in the record log.
    pub log: Option<u64>,
}

/// Stores a pending record's completion.
pub fn complete(conn: &Connection, aar_id: &str, completed: &Completed<'_>) -> sql::Result<()> {
    conn.prepare_cached(
        "UPDATE records SET status = ?1, result = ?2, result_hash = ?3, spend_micros = ?4, completed_at = ?5,
            log_completed = ?6
         WHERE aar_id = ?7",
    )?
    .execute(params![
        completed.state.status().as_str(),
        completed.state.result().map(Outcome::as_str),
        completed.result_hash.map(ResultHash::as_str),
        micros(completed.spend),
        completed.at,
        completed.log,
        aar_id,
    ])?;
    Ok(())
}

/// A completed record's one rating.
#[derive(Debug, Clone, Copy)]
pub struct NewRating<'a> {
    pub rating: Rating,
    pub note: Option<&'a str>,
    /// The API key that rated.
    pub by: &'a str,
    /// Unix milliseconds.
    pub at: i64,
    /// The leaf index of the rating in the record log.
    pub log: Option<u64>,
}

/// Stores a completed record's rating.
pub fn rate(conn: &Connection, aar_id: &str, rated: &NewRating<'_>) -> sql::Result<()> {
    conn.prepare_cached(
        "UPDATE records SET rating = ?1, note = ?2, feedback_at = ?3, rated_by = ?4, log_rated = ?5
         WHERE aar_id = ?6",
    )?
    .execute(params![
        rated.rating.as_str(),
        rated.note,
        rated.at,
        rated.by,
        rated.log,
        aar_id
    ])?;
    Ok(())
}

/// Whether `org` has a workflow with this provenance ref.
pub fn workflow_exists(conn: &Connection, org: Org, provenance_ref: &str) -> sql::Result<bool> {
    Ok(conn
        .prepare_cached("SELECT 1 FROM workflows WHERE provenance_ref = ?1 AND org = ?2")?
        .query_row(params![provenance_ref, org], |row| row.get::<_, i64>(0))
        .optional()?
        .is_some())
}

/// Up to `limit` ids of the completed records of a workflow of `org` with
/// `result` that await a rating, oldest first (`records_by_provenance`,
/// within the organisation's range of `seq`).
pub fn unrated_of_workflow(
    conn: &Connection,
    org: Org,
    provenance_ref: &str,
    result: Outcome,
    limit: i64,
) -> sql::Result<Vec<String>> {
    let seqs = org.seqs();
    conn.prepare_cached(
        "SELECT aar_id FROM records WHERE provenance_ref = ?1 AND seq >= ?2 AND seq < ?3
            AND status = 'completed' AND rating IS NULL AND result = ?4
         ORDER BY seq LIMIT ?5",
    )?
    .query_map(
        params![provenance_ref, seqs.start, seqs.end, result.as_str(), limit],
        |row| row.get(0),
    )?
    .collect()
}

/// Makes an agent of `org` known, with no counts.
pub fn add_agent(conn: &Connection, org: Org, agent_id: &str) -> sql::Result<()> {
    conn.prepare_cached(
        "INSERT INTO agents (org, agent_id) VALUES (?1, ?2) ON CONFLICT DO NOTHING",
    )?
    .execute(params![org, agent_id])?;
    Ok(())
}

/// The columns of [`count_for_agents`]' rows.
pub const AGENT_COUNTED: [sql::Column; 10] = {
    use sql::Column::{Integer as I, Text as T};
    [I, T, I, I, I, I, I, I, I, I]
};

/// How a group moved an agent's reputation counts, and its latest activity
/// (`None`: no activity), as a row of [`count_for_agents`].
pub fn agent_counted(
    org: Org,
    agent_id: &str,
    change: &CountsChange,
    active_at: Option<i64>,
) -> Vec<Value> {
    vec![
        Value::Integer(org.number()),
        Value::Text(agent_id.to_owned()),
        Value::Integer(change.successes),
        Value::Integer(change.failures),
        Value::Integer(change.pending),
        Value::Integer(change.approved),
        Value::Integer(change.flagged),
        Value::Integer(change.rejected),
        Value::Integer(change.denied_requests),
        active_at.map_or(Value::Null, Value::Integer),
    ]
}

/// The part of a group's statement ([`Connection::apply_tables`]) adding
/// its changes of agents' counts ([`agent_counted`] rows, one per agent).
pub fn count_for_agents(rows: &[Vec<Value>]) -> sql::RowsFor<'_> {
    sql::RowsFor {
        sqlite: "UPDATE agents SET successes = successes + ?3, failures = failures + ?4,
            pending = pending + ?5, approved = approved + ?6, flagged = flagged + ?7,
            rejected = rejected + ?8, denied_requests = denied_requests + ?9,
            last_activity = CASE WHEN last_activity IS NULL OR last_activity < ?10 THEN ?10
                ELSE last_activity END
         WHERE org = ?1 AND agent_id = ?2",
        postgres: "UPDATE agents SET successes = agents.successes + d.successes,
            failures = agents.failures + d.failures, pending = agents.pending + d.pending,
            approved = agents.approved + d.approved, flagged = agents.flagged + d.flagged,
            rejected = agents.rejected + d.rejected,
            denied_requests = agents.denied_requests + d.denied_requests,
            last_activity = CASE WHEN agents.last_activity IS NULL
                OR agents.last_activity < d.active_at THEN d.active_at
                ELSE agents.last_activity END
         FROM unnest($1::bigint[], $2::text[], $3::bigint[], $4::bigint[], $5::bigint[],
             $6::bigint[], $7::bigint[], $8::bigint[], $9::bigint[], $10::bigint[])
             AS d(org, agent_id, successes, failures, pending, approved, flagged, rejected,
                 denied_requests, active_at)
         WHERE agents.org = d.org AND agents.agent_id = d.agent_id",
        columns: &AGENT_COUNTED,
        rows,
    }
}

/// A workflow, opened when its root token is issued.
#[derive(Debug, Clone, Copy)]
pub struct NewWorkflow<'a> {
    pub org: Org,
    pub root: &'a Claims,
    /// Unix milliseconds.
    pub created_at: i64,
}

/// Stores a new workflow, with no records yet.
pub fn open_workflow(conn: &Connection, workflow: &NewWorkflow<'_>) -> sql::Result<()> {
    let root = workflow.root;
    conn.prepare_cached(
        "INSERT INTO workflows (provenance_ref, root_jti, root_agent_id, human_ref, assurance_level,
            created_at, last_activity, org)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?6, ?7)",
    )?
    .execute(params![
        root.svc_prov.as_str(),
        root.jti.as_str(),
        root.agent_id().as_str(),
        root.svc_human.as_str(),
        root.svc_assurance.as_str(),
        workflow.created_at,
        workflow.org,
    ])?;
    Ok(())
}

/// The columns of [`count_for_workflows`]' rows.
pub const WORKFLOW_COUNTED: [sql::Column; 3] = {
    use sql::Column::{Integer as I, Text as T};
    [T, I, I]
};

/// Records a group added to a workflow and its latest activity (unix
/// milliseconds), as a row of [`count_for_workflows`].
pub fn workflow_counted(provenance_ref: &str, records: i64, at_ms: i64) -> Vec<Value> {
    vec![
        Value::Text(provenance_ref.to_owned()),
        Value::Integer(records),
        Value::Integer(at_ms),
    ]
}

/// The part of a group's statement ([`Connection::apply_tables`]) adding
/// its records to their workflows ([`workflow_counted`] rows, one per
/// workflow).
pub fn count_for_workflows(rows: &[Vec<Value>]) -> sql::RowsFor<'_> {
    sql::RowsFor {
        sqlite: "UPDATE workflows SET total_records = total_records + ?2,
            last_activity = CASE WHEN last_activity > ?3 THEN last_activity ELSE ?3 END
         WHERE provenance_ref = ?1",
        postgres: "UPDATE workflows SET total_records = workflows.total_records + d.added,
            last_activity = CASE WHEN workflows.last_activity > d.at THEN workflows.last_activity
                ELSE d.at END
         FROM unnest($1::text[], $2::bigint[], $3::bigint[]) AS d(provenance_ref, added, at)
         WHERE workflows.provenance_ref = d.provenance_ref",
        columns: &WORKFLOW_COUNTED,
        rows,
    }
}

/// One group of a workflow's summary: its records of one agent and action
/// with one result key (core's `result_key`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SummaryKey<'a> {
    pub provenance_ref: &'a str,
    pub agent_id: &'a str,
    pub action: &'a str,
    pub result_key: &'a str,
}

/// The columns of [`count_in_summaries`]' rows.
pub const SUMMARY_COUNTED: [sql::Column; 5] = {
    use sql::Column::{Integer as I, Text as T};
    [T, T, T, T, I]
};

/// `change` records of a group of a workflow's summary, as a row of
/// [`count_in_summaries`].
pub fn summary_counted(key: &SummaryKey<'_>, change: i64) -> Vec<Value> {
    vec![
        Value::Text(key.provenance_ref.to_owned()),
        Value::Text(key.agent_id.to_owned()),
        Value::Text(key.action.to_owned()),
        Value::Text(key.result_key.to_owned()),
        Value::Integer(change),
    ]
}

/// The part of a group's statement ([`Connection::apply_tables`]) adding
/// its changes to workflows' summaries ([`summary_counted`] rows, one per
/// key: `ON CONFLICT` refuses one key twice in a statement).
pub fn count_in_summaries(rows: &[Vec<Value>]) -> sql::RowsFor<'_> {
    sql::RowsFor {
        sqlite: "INSERT INTO workflow_counts (provenance_ref, agent_id, action, result_key, count)
         VALUES (?1, ?2, ?3, ?4, ?5)
         ON CONFLICT (provenance_ref, agent_id, action, result_key)
         DO UPDATE SET count = workflow_counts.count + excluded.count",
        postgres:
            "INSERT INTO workflow_counts (provenance_ref, agent_id, action, result_key, count)
         SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::bigint[])
         ON CONFLICT (provenance_ref, agent_id, action, result_key)
         DO UPDATE SET count = workflow_counts.count + excluded.count",
        columns: &SUMMARY_COUNTED,
        rows,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_column_list_and_the_positions_agree() {
        let names: Vec<&str> = COLUMNS.split(", ").collect();
        assert_eq!(names.len(), Column::seq as usize + 1);
        assert_eq!(names[Column::aar_id as usize], "aar_id");
        assert_eq!(names[Column::credential as usize], "credential");
        assert_eq!(names[Column::seq as usize], "seq");
        let conn = crate::store::open_in_memory().unwrap();
        let statement = conn.prepare_cached(&select_sql()).unwrap();
        assert_eq!(statement.column_names(), Some(names));
    }
}

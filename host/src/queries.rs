//! The read side: records, reputation, workflow summaries and graphs, token
//! status and workflow lists, read on the read-only connections. Numbers
//! come from core (`summarize`, `result_key`); answers are typed values
//! that `api` turns into response bodies, and failures a typed
//! [`QueryError`].
//!
//! Every read is of one organisation's objects: another organisation's
//! record, token, agent or workflow is unknown, exactly like one that does
//! not exist, and lists never show one.
//!
//! Every read runs under the store's time budget. A read stopped there fails
//! with [`QueryError::TooBroad`], saying what the caller can narrow.

pub mod dashboard;
pub mod webhooks;

use crate::store::sql::types::Value;
use crate::store::sql::{self, Connection, Dialect, OptionalExtension, params_from_iter};
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use mandate_core::{Outcome, ReputationCounts, Status, SummaryRow, WorkflowSummary, summarize};

use crate::apikeys::{self, KeyInfo};
use crate::store::StoreError;
use crate::store::approvals;
use crate::store::orgs::{self as org_rows, Org, OrgRow};
use crate::store::records::{self, Record};
use crate::store::tokens::{self, After, TokenRow};

/// Why a read failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum QueryError {
    #[error("no record has this aar_id")]
    UnknownRecord,
    #[error("no token was ever issued to this agent")]
    UnknownAgent,
    #[error("no workflow has this provenance_ref")]
    UnknownWorkflow,
    #[error("no token has this jti")]
    UnknownToken,
    /// The record was written while the record log was off.
    #[error("this record was written while the record log was off: it has no proof")]
    NotInLog,
    /// The log has no such tile (yet): a full tile past its tree, or a
    /// partial one wider than its tree's.
    #[error("the log's newest checkpoint has no such tile")]
    UnknownTile,
    /// No token status list has this number (yet).
    #[error("no token status list has this number")]
    UnknownStatusList,
    /// No approval of the caller's organisation has this id.
    #[error("no approval has this approval_id")]
    UnknownApproval,
    /// No webhook of the caller's organisation has this id.
    #[error("no webhook of this organisation has this id")]
    UnknownWebhook,
    /// A query parameter outside its form.
    #[error("{0}")]
    InvalidQuery(&'static str),
    #[error("the cursor is not one this server handed out")]
    InvalidCursor,
    /// The read ran past its time budget; the text says what to narrow.
    #[error("{0}")]
    TooBroad(&'static str),
    #[error(transparent)]
    Store(StoreError),
}

/// What a read stopped at its budget says when its kind has nothing more
/// precise to say.
const TOO_BROAD: &str =
    "the request needs more reading than the query time budget allows; narrow it";

impl From<StoreError> for QueryError {
    fn from(error: StoreError) -> QueryError {
        match error {
            StoreError::OverBudget => QueryError::TooBroad(TOO_BROAD),
            other => QueryError::Store(other),
        }
    }
}

impl From<sql::Error> for QueryError {
    fn from(error: sql::Error) -> QueryError {
        StoreError::from(error).into()
    }
}

/// A page of items, and the cursor of the next page if there is one.
#[derive(Debug, Clone, PartialEq)]
pub struct Page<T> {
    pub items: Vec<T>,
    pub next_cursor: Option<String>,
}

/// Default and largest page sizes.
pub const DEFAULT_LIMIT: u32 = 50;
pub const MAX_LIMIT: u32 = 500;

/// Why a record query ran out of time, and what is indexed.
const RECORDS_TOO_BROAD: &str = "reading the records this filter matches takes longer than the query time budget. \
     agent_id, provenance_ref, vat_jti and rated=false are served by indexes, and since and until bound the records read; \
     action, result and resource are checked record by record. Add an indexed filter or narrow since and until";
/// Why a workflow graph ran out of time.
const GRAPH_TOO_BROAD: &str = "this workflow has more tokens and records than can be drawn within the query time budget; \
     ask for fewer records with limit, or page through GET /v1/vat/aar?provenance_ref=…";
/// Why a token's status ran out of time.
const TOKEN_TOO_BROAD: &str =
    "this token has more descendants than can be listed within the query time budget";
/// Why a workflow list ran out of time.
const WORKFLOWS_TOO_BROAD: &str = "listing these workflows takes longer than the query time budget. \
     provenance_ref is served by an index and since and until by the activity index; with agent_id, \
     the workflows of the agent's tokens are read. Narrow since and until";

/// Gives a read stopped at its time budget the detail of its kind.
fn narrow(detail: &'static str) -> impl FnOnce(QueryError) -> QueryError {
    move |error| match error {
        QueryError::TooBroad(_) => QueryError::TooBroad(detail),
        other => other,
    }
}

fn count(value: i64) -> u64 {
    u64::try_from(value).unwrap_or(0)
}

fn encode_cursor(text: &str) -> String {
    URL_SAFE_NO_PAD.encode(text)
}

/// A cursor of `kind` for a keyset of a time and an id (`kind:at:id`),
/// read back.
fn decode_keyset(cursor: &str, kind: char) -> Result<(i64, String), QueryError> {
    let text = decode_cursor(cursor, kind)?;
    let (at, id) = text.split_once(':').ok_or(QueryError::InvalidCursor)?;
    let at: i64 = at.parse().map_err(|_| QueryError::InvalidCursor)?;
    Ok((at, id.to_owned()))
}

/// The page of `found` (read with `limit + 1`, so one more means more):
/// its first `limit`, with the cursor of the last, as `cursor_of` writes
/// it, when more follow.
fn page_of<T>(mut found: Vec<T>, limit: u32, cursor_of: impl Fn(&T) -> String) -> Page<T> {
    let more = found.len() > limit as usize;
    found.truncate(limit as usize);
    let next_cursor = if more {
        found.last().map(|last| encode_cursor(&cursor_of(last)))
    } else {
        None
    };
    Page {
        items: found,
        next_cursor,
    }
}

fn decode_cursor(cursor: &str, kind: char) -> Result<String, QueryError> {
    let bytes = URL_SAFE_NO_PAD
        .decode(cursor)
        .map_err(|_| QueryError::InvalidCursor)?;
    let text = String::from_utf8(bytes).map_err(|_| QueryError::InvalidCursor)?;
    let mut prefix = [0u8; 4];
    let rest = text
        .strip_prefix(kind.encode_utf8(&mut prefix) as &str)
        .and_then(|rest| rest.strip_prefix(':'))
        .ok_or(QueryError::InvalidCursor)?;
    Ok(rest.to_owned())
}

/// An approval, with its record and the agents of the record's chain
/// (root first).
#[derive(Debug, Clone)]
pub struct ApprovalInFull {
    pub approval: approvals::Approval,
    pub record: Record,
    /// Agent ids (bare) and depths, root first.
    pub chain: Vec<(String, u32)>,
}

/// The agents of the chain of the token `jti`, root first.
fn chain_of(conn: &Connection, jti: &str) -> Result<Vec<(String, u32)>, QueryError> {
    let mut chain = Vec::new();
    let mut next = Some(jti.to_owned());
    let mut statement =
        conn.prepare_cached("SELECT agent_id, depth, parent FROM tokens WHERE jti = ?1")?;
    while let Some(jti) = next.take() {
        let found: Option<(String, u32, Option<String>)> = statement
            .query_row([jti.as_str()], |row| {
                Ok((row.get(0)?, row.get(1)?, row.get(2)?))
            })
            .optional()?;
        let Some((agent_id, depth, parent)) = found else {
            break;
        };
        chain.push((agent_id, depth));
        if chain.len() > mandate_core::limits::MAX_DELEGATION_DEPTH as usize + 1 {
            break;
        }
        next = parent;
    }
    chain.reverse();
    Ok(chain)
}

fn in_full(conn: &Connection, approval: approvals::Approval) -> Result<ApprovalInFull, QueryError> {
    let record = records::by_id(conn, &approval.aar_id)?.ok_or(QueryError::UnknownApproval)?;
    let chain = chain_of(conn, &record.jti)?;
    Ok(ApprovalInFull {
        approval,
        record,
        chain,
    })
}

/// An approval of `org`, in full.
pub fn approval(conn: &Connection, org: Org, id: &str) -> Result<ApprovalInFull, QueryError> {
    let approval = approvals::by_id(conn, id)?
        .filter(|approval| approval.org == org)
        .ok_or(QueryError::UnknownApproval)?;
    in_full(conn, approval)
}

/// A page of the approvals of `org`, newest first, in `status` when given.
pub fn approvals(
    conn: &Connection,
    org: Org,
    status: Option<approvals::ApprovalStatus>,
    limit: u32,
    cursor: Option<&str>,
) -> Result<Page<ApprovalInFull>, QueryError> {
    let before = cursor
        .map(|cursor| decode_keyset(cursor, 'a'))
        .transpose()?;
    let found = approvals::list(
        conn,
        org,
        status,
        before.as_ref().map(|(at, id)| (*at, id.as_str())),
        limit + 1,
    )?;
    let page = page_of(found, limit, |a| format!("a:{}:{}", a.requested_at, a.id));
    let items = page
        .items
        .into_iter()
        .map(|approval| in_full(conn, approval))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Page {
        items,
        next_cursor: page.next_cursor,
    })
}

/// A page of `org`'s OAuth grants, newest first: one human's and one
/// client's when named.
pub fn grants(
    conn: &Connection,
    org: Org,
    human_ref: Option<&str>,
    client_id: Option<&str>,
    limit: u32,
    cursor: Option<&str>,
) -> Result<Page<crate::store::oauth::OAuthGrant>, QueryError> {
    let before = cursor
        .map(|cursor| decode_keyset(cursor, 'g'))
        .transpose()?;
    let found = crate::store::oauth::grants(
        conn,
        org,
        human_ref,
        client_id,
        before.as_ref().map(|(at, id)| (*at, id.as_str())),
        limit + 1,
    )?;
    Ok(page_of(found, limit, |g| {
        format!("g:{}:{}", g.created_at, g.grant_id)
    }))
}

/// One record of `org` in full.
pub fn record(conn: &Connection, org: Org, aar_id: &str) -> Result<Record, QueryError> {
    records::by_id(conn, aar_id)?
        .filter(|record| record.org() == org)
        .ok_or(QueryError::UnknownRecord)
}

/// Filters of a record query; all optional, combined with AND.
#[derive(Debug, Clone, Default)]
pub struct RecordFilter {
    pub agent_id: Option<String>,
    pub action: Option<String>,
    /// A result, `denied`, `pending` or `awaiting_approval`.
    pub result: Option<String>,
    /// Completed records rated (`true`) or awaiting a rating (`false`).
    pub rated: Option<bool>,
    pub resource: Option<String>,
    pub provenance_ref: Option<String>,
    pub vat_jti: Option<String>,
    /// Unix milliseconds, inclusive.
    pub since: Option<i64>,
    /// Unix milliseconds, exclusive.
    pub until: Option<i64>,
    pub limit: u32,
    pub cursor: Option<String>,
}

/// Records of `org` matching a filter, newest first, one page.
pub fn records(
    conn: &Connection,
    org: Org,
    filter: &RecordFilter,
) -> Result<Page<Record>, QueryError> {
    record_page(conn, org, filter).map_err(narrow(RECORDS_TOO_BROAD))
}

/// The statement and parameters of a record query. The organisation, since,
/// until and the cursor become a range of `seq`, the table's own key;
/// agent_id, provenance_ref and vat_jti each have an index ending in `seq`,
/// searched within that range. The other filters are checked row by row.
fn record_query(
    conn: &Connection,
    org: Org,
    filter: &RecordFilter,
) -> Result<(String, Vec<Value>), QueryError> {
    let mut sql = records::select_sql();
    let mut clauses: Vec<&str> = Vec::new();
    let mut values: Vec<Value> = Vec::new();
    let mut equal = |clause: &'static str, value: &Option<String>, values: &mut Vec<Value>| {
        if let Some(value) = value {
            clauses.push(clause);
            values.push(Value::Text(value.clone()));
        }
    };
    equal("agent_id = ?", &filter.agent_id, &mut values);
    equal("action = ?", &filter.action, &mut values);
    equal("resource = ?", &filter.resource, &mut values);
    equal("provenance_ref = ?", &filter.provenance_ref, &mut values);
    equal("jti = ?", &filter.vat_jti, &mut values);
    if let Some(result) = &filter.result {
        match result.parse::<Status>() {
            Ok(status @ (Status::Denied | Status::Pending | Status::AwaitingApproval)) => {
                clauses.push("status = ?");
                values.push(Value::Text(status.as_str().to_owned()));
            }
            _ => {
                let outcome: Outcome = result.parse().map_err(|_| {
                    QueryError::InvalidQuery(
                        "result must be success, error, timeout, cancelled, denied, pending or awaiting_approval",
                    )
                })?;
                clauses.push("status = 'completed' AND result = ?");
                values.push(Value::Text(outcome.as_str().to_owned()));
            }
        }
    }
    match filter.rated {
        // Exactly the partial indexes' condition, so they serve it.
        Some(false) => clauses.push("status = 'completed' AND rating IS NULL"),
        Some(true) => clauses.push("status = 'completed' AND rating IS NOT NULL"),
        None => {}
    }
    // One lower and one upper bound of `seq`, the tightest: SQLite bounds a
    // range of the key by one of each, and might pick a looser one.
    // On PostgreSQL `created_at` may step back along `seq` (hosts number
    // records in commit order with their own clocks' times; by up to
    // `MAX_TIME_DISORDER_MS`, and by as much as the organisation's records
    // ever did, which its `org_seqs` row keeps): the `seq` range is found
    // that much wider, and the times are compared exactly within it.
    let disorder = match conn.dialect() {
        Dialect::Postgres if filter.since.is_some() || filter.until.is_some() => {
            crate::store::log::max_time_disorder(conn, org.number())?
        }
        _ => 0,
    };
    let mut seqs = org.seqs();
    if let Some(since) = filter.since {
        let from = since.saturating_sub(disorder);
        seqs.start = seqs.start.max(records::first_seq_at(conn, org, from)?);
        if disorder > 0 {
            clauses.push("created_at >= ?");
            values.push(Value::Integer(since));
        }
    }
    if let Some(until) = filter.until {
        let to = until.saturating_add(disorder);
        seqs.end = seqs.end.min(records::first_seq_at(conn, org, to)?);
        if disorder > 0 {
            clauses.push("created_at < ?");
            values.push(Value::Integer(until));
        }
    }
    if let Some(cursor) = &filter.cursor {
        let seq: i64 = decode_cursor(cursor, 'r')?
            .parse()
            .map_err(|_| QueryError::InvalidCursor)?;
        seqs.end = seqs.end.min(seq);
    }
    clauses.extend(["seq >= ?", "seq < ?"]);
    values.extend([Value::Integer(seqs.start), Value::Integer(seqs.end)]);
    sql.push_str(" WHERE ");
    sql.push_str(&clauses.join(" AND "));
    sql.push_str(" ORDER BY seq DESC LIMIT ?");
    values.push(Value::Integer(i64::from(filter.limit) + 1));
    Ok((sql, values))
}

fn record_page(
    conn: &Connection,
    org: Org,
    filter: &RecordFilter,
) -> Result<Page<Record>, QueryError> {
    let (sql, values) = record_query(conn, org, filter)?;
    let mut statement = conn.prepare_cached(&sql)?;
    let mut page = statement
        .query_map(params_from_iter(values), records::from_row)?
        .collect::<Result<Vec<_>, _>>()?;
    let more = page.len() > filter.limit as usize;
    page.truncate(filter.limit as usize);
    let next_cursor = more
        .then(|| page.last().map(|r| encode_cursor(&format!("r:{}", r.seq))))
        .flatten();
    Ok(Page {
        items: page,
        next_cursor,
    })
}

/// The counters of an agent of `org`, which its reputation is computed
/// from.
pub fn agent_counts(
    conn: &Connection,
    org: Org,
    agent_id: &str,
) -> Result<ReputationCounts, QueryError> {
    conn.prepare_cached(
        "SELECT successes, failures, pending, approved, flagged, rejected, denied_requests
             FROM agents WHERE org = ?1 AND agent_id = ?2",
    )?
    .query_row(sql::params![org, agent_id], |row| {
        Ok(ReputationCounts {
            successes: count(row.get(0)?),
            failures: count(row.get(1)?),
            pending: count(row.get(2)?),
            denied_requests: count(row.get(6)?),
            approved: count(row.get(3)?),
            flagged: count(row.get(4)?),
            rejected: count(row.get(5)?),
        })
    })
    .optional()?
    .ok_or(QueryError::UnknownAgent)
}

/// The human at the root of a workflow of `org` and how they were
/// verified.
fn workflow_root(
    conn: &Connection,
    org: Org,
    provenance_ref: &str,
) -> Result<(String, String), QueryError> {
    conn.prepare_cached(
        "SELECT human_ref, assurance_level FROM workflows WHERE provenance_ref = ?1 AND org = ?2",
    )?
    .query_row(sql::params![provenance_ref, org], |row| {
        Ok((row.get(0)?, row.get(1)?))
    })
    .optional()?
    .ok_or(QueryError::UnknownWorkflow)
}

/// The spec's workflow summary (2.4), of a workflow of `org`.
pub fn workflow_summary(
    conn: &Connection,
    org: Org,
    provenance_ref: &str,
) -> Result<WorkflowSummary, QueryError> {
    workflow_root(conn, org, provenance_ref)?;
    let mut statement = conn.prepare_cached(
        "SELECT agent_id, action, result_key, count FROM workflow_counts WHERE provenance_ref = ?1",
    )?;
    let groups = statement
        .query_map([provenance_ref], |row| {
            Ok((
                row.get::<_, String>(0)?,
                row.get::<_, String>(1)?,
                row.get::<_, String>(2)?,
                count(row.get(3)?),
            ))
        })?
        .collect::<Result<Vec<_>, _>>()?;
    let rows = groups
        .iter()
        .map(|(agent_id, action, result, n)| SummaryRow {
            agent_id,
            action,
            result,
            count: *n,
        });
    Ok(summarize(provenance_ref, rows))
}

/// Which descendants of a token to list: a page of them in the order of
/// depth, issue time and jti.
#[derive(Debug, Clone, Default)]
pub struct DescendantPage {
    pub limit: u32,
    pub cursor: Option<String>,
}

/// A token and a page of its descendants.
#[derive(Debug, Clone, PartialEq)]
pub struct TokenTree {
    pub token: TokenRow,
    pub descendants: Page<TokenRow>,
}

/// A token of `org` and a page of its descendants (which are all of `org`:
/// a token delegates only within its organisation).
pub fn token_tree(
    conn: &Connection,
    org: Org,
    jti: &str,
    page: &DescendantPage,
) -> Result<TokenTree, QueryError> {
    read_token_tree(conn, org, jti, page).map_err(narrow(TOKEN_TOO_BROAD))
}

fn read_token_tree(
    conn: &Connection,
    org: Org,
    jti: &str,
    page: &DescendantPage,
) -> Result<TokenTree, QueryError> {
    let token = tokens::by_jti(conn, org, jti)?.ok_or(QueryError::UnknownToken)?;
    let after = match page.cursor.as_deref() {
        None => After::start(),
        Some(cursor) => {
            let text = decode_cursor(cursor, 'd')?;
            let mut parts = text.splitn(3, ':');
            let (Some(depth), Some(issued_at), Some(jth)) =
                (parts.next(), parts.next(), parts.next())
            else {
                return Err(QueryError::InvalidCursor);
            };
            let number = |text: &str| text.parse::<i64>().map_err(|_| QueryError::InvalidCursor);
            After {
                depth: number(depth)?,
                issued_at: number(issued_at)?,
                jth: jth.to_owned(),
            }
        }
    };
    let mut descendants = tokens::descendants(conn, jti, &after, i64::from(page.limit) + 1)?;
    let more = descendants.len() > page.limit as usize;
    descendants.truncate(page.limit as usize);
    let next_cursor = more
        .then(|| {
            descendants.last().map(|t| {
                let jth = tokens::jth_of(&t.jti);
                encode_cursor(&format!("d:{}:{}:{jth}", t.depth, t.issued_at))
            })
        })
        .flatten();
    Ok(TokenTree {
        token,
        descendants: Page {
            items: descendants,
            next_cursor,
        },
    })
}

/// What the execution graph of a workflow is drawn from.
#[derive(Debug, Clone, PartialEq)]
pub struct Graph {
    pub human_ref: String,
    pub assurance_level: String,
    /// Its tokens, in the order of depth, issue time and jti.
    pub tokens: Vec<TokenRow>,
    /// Its newest records, oldest first.
    pub records: Vec<Record>,
    /// Whether tokens or records were left out.
    pub truncated: bool,
}

/// The execution graph of a workflow of `org`: the human, every token, and
/// the newest `limit` records.
pub fn workflow_graph(
    conn: &Connection,
    org: Org,
    provenance_ref: &str,
    limit: u32,
) -> Result<Graph, QueryError> {
    graph(conn, org, provenance_ref, limit).map_err(narrow(GRAPH_TOO_BROAD))
}

fn graph(
    conn: &Connection,
    org: Org,
    provenance_ref: &str,
    limit: u32,
) -> Result<Graph, QueryError> {
    let (human_ref, assurance_level) = workflow_root(conn, org, provenance_ref)?;
    let mut tokens = tokens::of_workflow(conn, provenance_ref, i64::from(limit) + 1)?;
    let tokens_truncated = tokens.len() > limit as usize;
    tokens.truncate(limit as usize);
    let page = record_page(
        conn,
        org,
        &RecordFilter {
            provenance_ref: Some(provenance_ref.to_owned()),
            limit,
            ..RecordFilter::default()
        },
    )?;
    let truncated = page.next_cursor.is_some() || tokens_truncated;
    let mut records = page.items;
    records.reverse();
    Ok(Graph {
        human_ref,
        assurance_level,
        tokens,
        records,
        truncated,
    })
}

/// Filters of the workflow list.
#[derive(Debug, Clone, Default)]
pub struct WorkflowFilter {
    /// Workflows in which this agent holds a token.
    pub agent_id: Option<String>,
    pub provenance_ref: Option<String>,
    /// Workflows of this human.
    pub human_ref: Option<String>,
    /// Last activity at or after (unix ms).
    pub since: Option<i64>,
    /// Last activity before (unix ms).
    pub until: Option<i64>,
    pub limit: u32,
    pub cursor: Option<String>,
}

/// A workflow as the list shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Workflow {
    pub provenance_ref: String,
    pub root_jti: String,
    pub root_agent_id: String,
    pub human_ref: String,
    /// What the organisation knows the human by, if anything.
    pub human_label: Option<String>,
    pub assurance_level: String,
    pub total_records: u64,
    /// Unix milliseconds.
    pub created_at: i64,
    /// Unix milliseconds.
    pub last_activity: i64,
}

/// Workflows of `org`, most recently active first.
pub fn workflows(
    conn: &Connection,
    org: Org,
    filter: &WorkflowFilter,
) -> Result<Page<Workflow>, QueryError> {
    workflow_page(conn, org, filter).map_err(narrow(WORKFLOWS_TOO_BROAD))
}

fn workflow_page(
    conn: &Connection,
    org: Org,
    filter: &WorkflowFilter,
) -> Result<Page<Workflow>, QueryError> {
    let mut sql = String::from(
        "SELECT w.provenance_ref, w.root_jti, w.root_agent_id, w.human_ref, w.assurance_level,
                w.total_records, w.created_at, w.last_activity, h.label
         FROM workflows w LEFT JOIN human_labels h ON h.org = w.org AND h.human_ref = w.human_ref",
    );
    let mut clauses: Vec<&str> = vec!["w.org = ?"];
    let mut values: Vec<Value> = vec![Value::Integer(org.number())];
    if let Some(agent) = &filter.agent_id {
        clauses.push(
            "w.provenance_ref IN (SELECT provenance_ref FROM tokens WHERE org = ? AND agent_id = ?)",
        );
        values.push(Value::Integer(org.number()));
        values.push(Value::Text(agent.clone()));
    }
    if let Some(provenance_ref) = &filter.provenance_ref {
        clauses.push("w.provenance_ref = ?");
        values.push(Value::Text(provenance_ref.clone()));
    }
    if let Some(human_ref) = &filter.human_ref {
        clauses.push("w.human_ref = ?");
        values.push(Value::Text(human_ref.clone()));
    }
    if let Some(since) = filter.since {
        clauses.push("w.last_activity >= ?");
        values.push(Value::Integer(since));
    }
    if let Some(until) = filter.until {
        clauses.push("w.last_activity < ?");
        values.push(Value::Integer(until));
    }
    if let Some(cursor) = &filter.cursor {
        let text = decode_cursor(cursor, 'w')?;
        let (at, provenance_ref) = text
            .split_once(':')
            .and_then(|(at, p)| Some((at.parse::<i64>().ok()?, p.to_owned())))
            .ok_or(QueryError::InvalidCursor)?;
        clauses.push("(w.last_activity < ? OR (w.last_activity = ? AND w.provenance_ref < ?))");
        values.extend([
            Value::Integer(at),
            Value::Integer(at),
            Value::Text(provenance_ref),
        ]);
    }
    sql.push_str(" WHERE ");
    sql.push_str(&clauses.join(" AND "));
    sql.push_str(" ORDER BY w.last_activity DESC, w.provenance_ref DESC LIMIT ?");
    values.push(Value::Integer(i64::from(filter.limit) + 1));
    let mut statement = conn.prepare_cached(&sql)?;
    let rows = statement.query_map(params_from_iter(values), |row| {
        Ok(Workflow {
            provenance_ref: row.get(0)?,
            root_jti: row.get(1)?,
            root_agent_id: row.get(2)?,
            human_ref: row.get(3)?,
            assurance_level: row.get(4)?,
            total_records: count(row.get(5)?),
            created_at: row.get(6)?,
            last_activity: row.get(7)?,
            human_label: row.get(8)?,
        })
    })?;
    let mut page = rows.collect::<Result<Vec<_>, _>>()?;
    let more = page.len() > filter.limit as usize;
    page.truncate(filter.limit as usize);
    let next_cursor = more
        .then(|| {
            page.last()
                .map(|w| encode_cursor(&format!("w:{}:{}", w.last_activity, w.provenance_ref)))
        })
        .flatten();
    Ok(Page {
        items: page,
        next_cursor,
    })
}

/// A page of the deployment's organisations, oldest first.
pub fn orgs(
    conn: &Connection,
    limit: u32,
    cursor: Option<&str>,
) -> Result<Page<OrgRow>, QueryError> {
    let after = cursor
        .map(|cursor| {
            decode_cursor(cursor, 'o')?
                .parse::<i64>()
                .map(Org::from_number)
                .map_err(|_| QueryError::InvalidCursor)
        })
        .transpose()?;
    let mut page = org_rows::list(conn, after, i64::from(limit) + 1)?;
    let more = page.len() > limit as usize;
    page.truncate(limit as usize);
    let next_cursor = more
        .then(|| {
            page.last()
                .map(|o| encode_cursor(&format!("o:{}", o.org.number())))
        })
        .flatten();
    Ok(Page {
        items: page,
        next_cursor,
    })
}

/// An organisation by its number (a key's own).
pub fn org(conn: &Connection, org: Org) -> Result<OrgRow, QueryError> {
    org_rows::by_number(conn, org)?.ok_or_else(|| {
        QueryError::Store(StoreError::Internal(
            "a key's organisation is missing".to_owned(),
        ))
    })
}

/// The API keys of an organisation, newest first.
pub fn keys(conn: &Connection, org: Org) -> Result<Vec<KeyInfo>, QueryError> {
    Ok(apikeys::list(conn, Some(org))?)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// How SQLite would run `sql`, one line a step.
    fn steps(conn: &Connection, sql: &str, values: Vec<Value>) -> String {
        let mut statement = conn
            .prepare_cached(&format!("EXPLAIN QUERY PLAN {sql}"))
            .unwrap();
        let steps = statement
            .query_map(params_from_iter(values), |row| row.get::<_, String>(3))
            .unwrap()
            .collect::<Result<Vec<_>, _>>()
            .unwrap();
        steps.join("\n")
    }

    /// How SQLite would run the record query of `filter`.
    fn plan(conn: &Connection, filter: RecordFilter) -> String {
        let (sql, values) = record_query(conn, Org::from_number(2), &filter).unwrap();
        steps(conn, &sql, values)
    }

    fn text(value: &str) -> Option<String> {
        Some(value.to_owned())
    }

    #[test]
    fn indexed_record_filters_never_scan_the_table() {
        let dir = tempfile::tempdir().unwrap();
        let conn = crate::store::open_writer(&dir.path().join("plans.db")).unwrap();
        let others = RecordFilter {
            action: text("read"),
            result: text("success"),
            resource: text("crm:a"),
            limit: DEFAULT_LIMIT,
            ..RecordFilter::default()
        };
        let cases = [
            (
                RecordFilter {
                    agent_id: text("bot"),
                    ..others.clone()
                },
                "SEARCH records USING INDEX records_by_agent (agent_id=? AND seq>? AND seq<?)",
            ),
            (
                RecordFilter {
                    provenance_ref: text("prov_x"),
                    ..others.clone()
                },
                "SEARCH records USING INDEX records_by_provenance (provenance_ref=? AND seq>? AND seq<?)",
            ),
            (
                RecordFilter {
                    vat_jti: text("vat_root_x"),
                    ..others.clone()
                },
                "SEARCH records USING INDEX records_by_token (jti=? AND seq>? AND seq<?)",
            ),
            (
                RecordFilter {
                    since: Some(1),
                    until: Some(2),
                    ..others.clone()
                },
                "SEARCH records USING INTEGER PRIMARY KEY (rowid>? AND rowid<?)",
            ),
        ];
        for (filter, expected) in cases {
            let described = format!("{filter:?}");
            assert_eq!(plan(&conn, filter), expected, "{described}");
        }
        // Without one of them the organisation's newest records are read
        // until a page is full; the read budget, not an index, bounds how
        // many, and no other organisation's record is read.
        assert_eq!(
            plan(&conn, others),
            "SEARCH records USING INTEGER PRIMARY KEY (rowid>? AND rowid<?)"
        );
    }

    #[test]
    fn finding_a_time_never_scans_the_records() {
        let dir = tempfile::tempdir().unwrap();
        let conn = crate::store::open_writer(&dir.path().join("plans.db")).unwrap();
        assert_eq!(
            steps(
                &conn,
                records::CREATED_AT_FROM,
                vec![Value::Integer(1), Value::Integer(2)]
            ),
            "SEARCH records USING INTEGER PRIMARY KEY (rowid>? AND rowid<?)"
        );
    }
}

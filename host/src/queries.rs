//! The read side: records, reputation, workflow summaries and graphs, token
//! status and workflow lists, read on the read-only connections. Numbers
//! come from core (`reputation`, `summarize`, `result_key`).
//!
//! Every read runs under the store's time budget. A read stopped there fails
//! with `query_too_broad`; the functions that can read many rows replace its
//! detail with what the caller can narrow.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use mandate_core::{Outcome, ReputationCounts, Status, SummaryRow, reputation, summarize};
use rusqlite::types::Value;
use rusqlite::{Connection, OptionalExtension, params, params_from_iter};

use crate::clock::{iso_ms, iso_s};
use crate::error::{ApiError, ApiResult, QUERY_TOO_BROAD};
use crate::ledger::{record_from_row, select_record_sql, select_records_sql};
use crate::model::{
    GraphBody, GraphEdge, GraphNode, RecordBody, RecordPage, ReputationBody, ReputationCountsBody,
    SummaryBody, TokenStatus, TokenSummary, WorkflowBody, WorkflowPage,
};

/// Default and largest page sizes.
pub const DEFAULT_LIMIT: u32 = 50;
pub const MAX_LIMIT: u32 = 500;

/// Why a record query ran out of time, and what is indexed.
const RECORDS_TOO_BROAD: &str = "reading the records this filter matches takes longer than the query time budget. \
     agent_id, provenance_ref and vat_jti are served by indexes, and since and until bound the records read; \
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
fn narrow(detail: &'static str) -> impl FnOnce(ApiError) -> ApiError {
    move |error| {
        if error.code == QUERY_TOO_BROAD {
            ApiError::query_too_broad(detail)
        } else {
            error
        }
    }
}

fn count(value: i64) -> u64 {
    u64::try_from(value).unwrap_or(0)
}

fn encode_cursor(text: &str) -> String {
    URL_SAFE_NO_PAD.encode(text)
}

fn decode_cursor(cursor: &str, kind: char) -> ApiResult<String> {
    let invalid = || {
        ApiError::bad_request(
            "invalid_cursor",
            "the cursor is not one this server handed out",
        )
    };
    let bytes = URL_SAFE_NO_PAD.decode(cursor).map_err(|_| invalid())?;
    let text = String::from_utf8(bytes).map_err(|_| invalid())?;
    let mut prefix = [0u8; 4];
    let rest = text
        .strip_prefix(kind.encode_utf8(&mut prefix) as &str)
        .and_then(|rest| rest.strip_prefix(':'))
        .ok_or_else(invalid)?;
    Ok(rest.to_owned())
}

/// One record in full.
pub fn record(conn: &Connection, aar_id: &str) -> ApiResult<RecordBody> {
    conn.prepare_cached(&select_record_sql())?
        .query_row([aar_id], record_from_row)
        .optional()?
        .map(|(body, _)| body)
        .ok_or_else(|| ApiError::not_found("record_not_found", "no record has this aar_id"))
}

/// Filters of a record query; all optional, combined with AND.
#[derive(Debug, Clone, Default)]
pub struct RecordFilter {
    pub agent_id: Option<String>,
    pub action: Option<String>,
    /// A result, `denied` or `pending`.
    pub result: Option<String>,
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

/// The first and the last `seq`. Each in a subquery of its own: SQLite
/// finds a lone `min` or `max` at an end of the key, but reads every record
/// for the two together.
const SEQ_BOUNDS: &str = "SELECT (SELECT min(seq) FROM records), (SELECT max(seq) FROM records)";
/// When the first record at or after a `seq` was created.
const CREATED_AT_FROM: &str = "SELECT created_at FROM records WHERE seq >= ?1 ORDER BY seq LIMIT 1";

/// The first `seq` of a record created at or after `at_ms` (one past the
/// last record when none is). `created_at` never decreases along `seq`, so a
/// binary search over `seq` finds it in some twenty-odd index lookups.
fn first_seq_at(conn: &Connection, at_ms: i64) -> ApiResult<i64> {
    let (low, high): (Option<i64>, Option<i64>) = conn
        .prepare_cached(SEQ_BOUNDS)?
        .query_row([], |row| Ok((row.get(0)?, row.get(1)?)))?;
    let (Some(mut low), Some(high)) = (low, high) else {
        return Ok(0);
    };
    let mut high = high + 1;
    let mut created_at = conn.prepare_cached(CREATED_AT_FROM)?;
    while low < high {
        let middle = low + (high - low) / 2;
        let at: Option<i64> = created_at
            .query_row([middle], |row| row.get(0))
            .optional()?;
        if at.is_some_and(|at| at >= at_ms) {
            high = middle;
        } else {
            low = middle + 1;
        }
    }
    Ok(low)
}

/// Records matching a filter, newest first, one page.
pub fn records(conn: &Connection, filter: &RecordFilter) -> ApiResult<RecordPage> {
    record_page(conn, filter).map_err(narrow(RECORDS_TOO_BROAD))
}

/// The statement and parameters of a record query. agent_id,
/// provenance_ref and vat_jti each have an index; since, until and the
/// cursor become a range of `seq`, the table's own key. The other filters
/// are checked row by row.
fn record_query(conn: &Connection, filter: &RecordFilter) -> ApiResult<(String, Vec<Value>)> {
    let mut sql = select_records_sql();
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
            Ok(status @ (Status::Denied | Status::Pending)) => {
                clauses.push("status = ?");
                values.push(Value::Text(status.as_str().to_owned()));
            }
            _ => {
                let outcome: Outcome = result.parse().map_err(|_| {
                    ApiError::bad_request(
                        "invalid_query",
                        "result must be success, error, timeout, cancelled, denied or pending",
                    )
                })?;
                clauses.push("status = 'completed' AND result = ?");
                values.push(Value::Text(outcome.as_str().to_owned()));
            }
        }
    }
    if let Some(since) = filter.since {
        clauses.push("seq >= ?");
        values.push(Value::Integer(first_seq_at(conn, since)?));
    }
    if let Some(until) = filter.until {
        clauses.push("seq < ?");
        values.push(Value::Integer(first_seq_at(conn, until)?));
    }
    if let Some(cursor) = &filter.cursor {
        let seq: i64 = decode_cursor(cursor, 'r')?.parse().map_err(|_| {
            ApiError::bad_request(
                "invalid_cursor",
                "the cursor is not one this server handed out",
            )
        })?;
        clauses.push("seq < ?");
        values.push(Value::Integer(seq));
    }
    if !clauses.is_empty() {
        sql.push_str(" WHERE ");
        sql.push_str(&clauses.join(" AND "));
    }
    sql.push_str(" ORDER BY seq DESC LIMIT ?");
    values.push(Value::Integer(i64::from(filter.limit) + 1));
    Ok((sql, values))
}

fn record_page(conn: &Connection, filter: &RecordFilter) -> ApiResult<RecordPage> {
    let (sql, values) = record_query(conn, filter)?;
    let mut statement = conn.prepare_cached(&sql)?;
    let rows = statement.query_map(params_from_iter(values), |row| {
        let (body, _) = record_from_row(row)?;
        Ok((body, row.get::<_, i64>(22)?))
    })?;
    let mut page = Vec::new();
    for row in rows {
        page.push(row?);
    }
    let more = page.len() > filter.limit as usize;
    page.truncate(filter.limit as usize);
    let next_cursor = more
        .then(|| {
            page.last()
                .map(|(_, seq)| encode_cursor(&format!("r:{seq}")))
        })
        .flatten();
    Ok(RecordPage {
        records: page.into_iter().map(|(body, _)| body).collect(),
        next_cursor,
    })
}

/// An agent's reputation, from its counters.
pub fn agent_reputation(conn: &Connection, agent_id: &str) -> ApiResult<ReputationBody> {
    let counts = conn
        .prepare_cached(
            "SELECT successes, failures, pending, approved, flagged, rejected FROM agents WHERE agent_id = ?1",
        )?
        .query_row([agent_id], |row| {
            Ok(ReputationCounts {
                successes: count(row.get(0)?),
                failures: count(row.get(1)?),
                pending: count(row.get(2)?),
                approved: count(row.get(3)?),
                flagged: count(row.get(4)?),
                rejected: count(row.get(5)?),
            })
        })
        .optional()?
        .ok_or_else(|| ApiError::not_found("agent_not_found", "no token was ever issued to this agent"))?;
    let scores = reputation(&counts);
    Ok(ReputationBody {
        agent_id: format!("agent:{agent_id}"),
        total_actions: scores.total_actions,
        execution_score: scores.execution_score,
        feedback_score: scores.feedback_score,
        combined_reputation: scores.combined_reputation,
        has_human_feedback: scores.has_human_feedback,
        counts: ReputationCountsBody {
            successes: counts.successes,
            failures: counts.failures,
            pending: counts.pending,
            approved: counts.approved,
            flagged: counts.flagged,
            rejected: counts.rejected,
        },
    })
}

fn workflow_exists(conn: &Connection, provenance_ref: &str) -> ApiResult<String> {
    conn.prepare_cached("SELECT human_ref FROM workflows WHERE provenance_ref = ?1")?
        .query_row([provenance_ref], |row| row.get(0))
        .optional()?
        .ok_or_else(|| {
            ApiError::not_found("workflow_not_found", "no workflow has this provenance_ref")
        })
}

/// The spec's workflow summary (2.4).
pub fn workflow_summary(conn: &Connection, provenance_ref: &str) -> ApiResult<SummaryBody> {
    workflow_exists(conn, provenance_ref)?;
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
    let summary = summarize(provenance_ref, rows);
    Ok(SummaryBody {
        provenance_ref: summary.provenance_ref,
        total_records: summary.total_records,
        unique_agents: summary.unique_agents,
        actions_by_type: summary.actions_by_type,
        results_by_type: summary.results_by_type,
    })
}

fn token_status_text(revoked_at: Option<i64>, expires_at: i64, now_s: i64) -> &'static str {
    if revoked_at.is_some() {
        "revoked"
    } else if now_s >= expires_at {
        "expired"
    } else {
        "active"
    }
}

/// A token row as the read side needs it.
struct TokenRow {
    jti: String,
    parent: Option<String>,
    agent_id: String,
    depth: u32,
    provenance_ref: String,
    issued_at: i64,
    expires_at: i64,
    revoked_at: Option<i64>,
    revoke_reason: Option<String>,
}

const TOKEN_COLUMNS: &str = "jti, parent, agent_id, depth, provenance_ref, issued_at, expires_at, revoked_at, revoke_reason";

fn token_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<TokenRow> {
    Ok(TokenRow {
        jti: row.get(0)?,
        parent: row.get(1)?,
        agent_id: row.get(2)?,
        depth: row.get(3)?,
        provenance_ref: row.get(4)?,
        issued_at: row.get(5)?,
        expires_at: row.get(6)?,
        revoked_at: row.get(7)?,
        revoke_reason: row.get(8)?,
    })
}

/// Which descendants of a token to list: a page of them in the order of
/// depth, issue time and jti.
#[derive(Debug, Clone, Default)]
pub struct DescendantPage {
    pub limit: u32,
    pub cursor: Option<String>,
}

/// A token's status and a page of its descendants'.
pub fn token_status(
    conn: &Connection,
    jti: &str,
    page: &DescendantPage,
    now_s: i64,
) -> ApiResult<TokenStatus> {
    token_tree(conn, jti, page, now_s).map_err(narrow(TOKEN_TOO_BROAD))
}

fn token_tree(
    conn: &Connection,
    jti: &str,
    page: &DescendantPage,
    now_s: i64,
) -> ApiResult<TokenStatus> {
    let token = conn
        .prepare_cached(&format!(
            "SELECT {TOKEN_COLUMNS} FROM tokens WHERE jti = ?1"
        ))?
        .query_row([jti], token_row)
        .optional()?
        .ok_or_else(|| ApiError::not_found("token_not_found", "no token has this jti"))?;
    let after = page
        .cursor
        .as_deref()
        .map(|cursor| {
            let text = decode_cursor(cursor, 'd')?;
            let mut parts = text.splitn(3, ':');
            let (Some(depth), Some(issued_at), Some(jti)) =
                (parts.next(), parts.next(), parts.next())
            else {
                return Err(ApiError::bad_request(
                    "invalid_cursor",
                    "the cursor is not one this server handed out",
                ));
            };
            let number = |text: &str| {
                text.parse::<i64>().map_err(|_| {
                    ApiError::bad_request(
                        "invalid_cursor",
                        "the cursor is not one this server handed out",
                    )
                })
            };
            Ok((number(depth)?, number(issued_at)?, jti.to_owned()))
        })
        .transpose()?
        .unwrap_or((-1, 0, String::new()));
    let mut statement = conn.prepare_cached(&format!(
        "WITH RECURSIVE subtree(jti) AS (
             SELECT jti FROM tokens WHERE parent = ?1
             UNION ALL SELECT t.jti FROM tokens t JOIN subtree s ON t.parent = s.jti
         )
         SELECT {TOKEN_COLUMNS} FROM tokens WHERE jti IN (SELECT jti FROM subtree)
             AND (depth, issued_at, jti) > (?2, ?3, ?4)
         ORDER BY depth, issued_at, jti LIMIT ?5"
    ))?;
    let mut descendants = statement
        .query_map(
            params![jti, after.0, after.1, after.2, i64::from(page.limit) + 1],
            token_row,
        )?
        .collect::<Result<Vec<_>, _>>()?;
    let more = descendants.len() > page.limit as usize;
    descendants.truncate(page.limit as usize);
    let next_cursor = more
        .then(|| {
            descendants
                .last()
                .map(|t| encode_cursor(&format!("d:{}:{}:{}", t.depth, t.issued_at, t.jti)))
        })
        .flatten();
    let descendants = descendants
        .into_iter()
        .map(|t| TokenSummary {
            status: token_status_text(t.revoked_at, t.expires_at, now_s).to_owned(),
            jti: t.jti,
            agent_id: t.agent_id,
            parent: t.parent,
            delegation_depth: t.depth,
        })
        .collect();
    Ok(TokenStatus {
        status: token_status_text(token.revoked_at, token.expires_at, now_s).to_owned(),
        jti: token.jti,
        agent_id: token.agent_id,
        parent: token.parent,
        delegation_depth: token.depth,
        provenance_ref: token.provenance_ref,
        issued_at: iso_s(token.issued_at),
        expires_at: iso_s(token.expires_at),
        revoked_at: token.revoked_at.map(iso_s),
        revoke_reason: token.revoke_reason,
        descendants,
        next_cursor,
    })
}

fn empty_node(id: String, kind: &str) -> GraphNode {
    GraphNode {
        id,
        kind: kind.to_owned(),
        agent_id: None,
        human_ref: None,
        assurance_level: None,
        delegation_depth: None,
        status: None,
        parent: None,
        expires_at: None,
        revoked_at: None,
        action: None,
        resource: None,
        result: None,
        deny_reason: None,
        rating: None,
        created_at: None,
    }
}

/// The execution graph of a workflow: the human, every token, and the newest
/// `limit` records.
pub fn workflow_graph(
    conn: &Connection,
    provenance_ref: &str,
    limit: u32,
    now_s: i64,
) -> ApiResult<GraphBody> {
    graph(conn, provenance_ref, limit, now_s).map_err(narrow(GRAPH_TOO_BROAD))
}

fn graph(conn: &Connection, provenance_ref: &str, limit: u32, now_s: i64) -> ApiResult<GraphBody> {
    let human_ref = workflow_exists(conn, provenance_ref)?;
    let assurance: String = conn
        .prepare_cached("SELECT assurance_level FROM workflows WHERE provenance_ref = ?1")?
        .query_row([provenance_ref], |row| row.get(0))?;
    let mut nodes = vec![GraphNode {
        human_ref: Some(human_ref.clone()),
        assurance_level: Some(assurance),
        ..empty_node(human_ref.clone(), "human")
    }];
    let mut edges = Vec::new();
    let mut statement = conn.prepare_cached(&format!(
        "SELECT {TOKEN_COLUMNS} FROM tokens WHERE provenance_ref = ?1
         ORDER BY depth, issued_at, jti LIMIT ?2"
    ))?;
    let tokens = statement
        .query_map(params![provenance_ref, i64::from(limit) + 1], token_row)?
        .collect::<Result<Vec<_>, _>>()?;
    let tokens_truncated = tokens.len() > limit as usize;
    for token in tokens.into_iter().take(limit as usize) {
        let from = token.parent.clone().unwrap_or_else(|| human_ref.clone());
        let kind = if token.parent.is_some() {
            "delegated"
        } else {
            "issued"
        };
        edges.push(GraphEdge {
            from,
            to: token.jti.clone(),
            kind: kind.to_owned(),
        });
        nodes.push(GraphNode {
            agent_id: Some(token.agent_id),
            delegation_depth: Some(token.depth),
            status: Some(token_status_text(token.revoked_at, token.expires_at, now_s).to_owned()),
            parent: token.parent,
            expires_at: Some(iso_s(token.expires_at)),
            revoked_at: token.revoked_at.map(iso_s),
            ..empty_node(token.jti, "token")
        });
    }
    let page = record_page(
        conn,
        &RecordFilter {
            provenance_ref: Some(provenance_ref.to_owned()),
            limit,
            ..RecordFilter::default()
        },
    )?;
    let truncated = page.next_cursor.is_some() || tokens_truncated;
    for record in page.records.into_iter().rev() {
        edges.push(GraphEdge {
            from: record.vat_jti.clone().unwrap_or_default(),
            to: record.aar_id.clone(),
            kind: "action".to_owned(),
        });
        nodes.push(GraphNode {
            agent_id: Some(record.agent_id),
            status: Some(record.status),
            action: Some(record.action),
            resource: Some(record.resource),
            result: record.result,
            deny_reason: record.deny_reason,
            rating: record.rating,
            created_at: Some(record.created_at),
            ..empty_node(record.aar_id, "record")
        });
    }
    Ok(GraphBody {
        provenance_ref: provenance_ref.to_owned(),
        human_ref,
        nodes,
        edges,
        truncated,
    })
}

/// Filters of the workflow list.
#[derive(Debug, Clone, Default)]
pub struct WorkflowFilter {
    /// Workflows in which this agent holds a token.
    pub agent_id: Option<String>,
    pub provenance_ref: Option<String>,
    /// Last activity at or after (unix ms).
    pub since: Option<i64>,
    /// Last activity before (unix ms).
    pub until: Option<i64>,
    pub limit: u32,
    pub cursor: Option<String>,
}

/// Workflows, most recently active first.
pub fn workflows(conn: &Connection, filter: &WorkflowFilter) -> ApiResult<WorkflowPage> {
    workflow_page(conn, filter).map_err(narrow(WORKFLOWS_TOO_BROAD))
}

fn workflow_page(conn: &Connection, filter: &WorkflowFilter) -> ApiResult<WorkflowPage> {
    let mut sql = String::from(
        "SELECT provenance_ref, root_jti, root_agent_id, human_ref, assurance_level, total_records,
                created_at, last_activity FROM workflows",
    );
    let mut clauses: Vec<&str> = Vec::new();
    let mut values: Vec<Value> = Vec::new();
    if let Some(agent) = &filter.agent_id {
        clauses.push("provenance_ref IN (SELECT provenance_ref FROM tokens WHERE agent_id = ?)");
        values.push(Value::Text(agent.clone()));
    }
    if let Some(provenance_ref) = &filter.provenance_ref {
        clauses.push("provenance_ref = ?");
        values.push(Value::Text(provenance_ref.clone()));
    }
    if let Some(since) = filter.since {
        clauses.push("last_activity >= ?");
        values.push(Value::Integer(since));
    }
    if let Some(until) = filter.until {
        clauses.push("last_activity < ?");
        values.push(Value::Integer(until));
    }
    if let Some(cursor) = &filter.cursor {
        let text = decode_cursor(cursor, 'w')?;
        let (at, provenance_ref) = text
            .split_once(':')
            .and_then(|(at, p)| Some((at.parse::<i64>().ok()?, p.to_owned())))
            .ok_or_else(|| {
                ApiError::bad_request(
                    "invalid_cursor",
                    "the cursor is not one this server handed out",
                )
            })?;
        clauses.push("(last_activity < ? OR (last_activity = ? AND provenance_ref < ?))");
        values.extend([
            Value::Integer(at),
            Value::Integer(at),
            Value::Text(provenance_ref),
        ]);
    }
    if !clauses.is_empty() {
        sql.push_str(" WHERE ");
        sql.push_str(&clauses.join(" AND "));
    }
    sql.push_str(" ORDER BY last_activity DESC, provenance_ref DESC LIMIT ?");
    values.push(Value::Integer(i64::from(filter.limit) + 1));
    let mut statement = conn.prepare_cached(&sql)?;
    let rows = statement.query_map(params_from_iter(values), |row| {
        let created_at: i64 = row.get(6)?;
        let last_activity: i64 = row.get(7)?;
        Ok((
            WorkflowBody {
                provenance_ref: row.get(0)?,
                root_jti: row.get(1)?,
                root_agent_id: row.get(2)?,
                human_ref: row.get(3)?,
                assurance_level: row.get(4)?,
                total_records: count(row.get(5)?),
                created_at: iso_ms(created_at),
                last_activity: iso_ms(last_activity),
            },
            last_activity,
        ))
    })?;
    let mut page = rows.collect::<Result<Vec<_>, _>>()?;
    let more = page.len() > filter.limit as usize;
    page.truncate(filter.limit as usize);
    let next_cursor = more
        .then(|| {
            page.last()
                .map(|(w, at)| encode_cursor(&format!("w:{at}:{}", w.provenance_ref)))
        })
        .flatten();
    Ok(WorkflowPage {
        workflows: page.into_iter().map(|(w, _)| w).collect(),
        next_cursor,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// How SQLite would run `sql`, one line a step.
    fn steps(conn: &Connection, sql: &str, values: Vec<Value>) -> String {
        let mut statement = conn.prepare(&format!("EXPLAIN QUERY PLAN {sql}")).unwrap();
        let steps = statement
            .query_map(params_from_iter(values), |row| row.get::<_, String>(3))
            .unwrap()
            .collect::<Result<Vec<_>, _>>()
            .unwrap();
        steps.join("\n")
    }

    /// How SQLite would run the record query of `filter`.
    fn plan(conn: &Connection, filter: RecordFilter) -> String {
        let (sql, values) = record_query(conn, &filter).unwrap();
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
                "SEARCH records USING INDEX records_by_agent (agent_id=?)",
            ),
            (
                RecordFilter {
                    provenance_ref: text("prov_x"),
                    ..others.clone()
                },
                "SEARCH records USING INDEX records_by_provenance (provenance_ref=?)",
            ),
            (
                RecordFilter {
                    vat_jti: text("vat_root_x"),
                    ..others.clone()
                },
                "SEARCH records USING INDEX records_by_token (jti=?)",
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
        // Without one of them the newest records are read until a page is
        // full; the read budget, not an index, bounds how many.
        assert_eq!(plan(&conn, others), "SCAN records");
    }

    #[test]
    fn finding_a_time_never_scans_the_records() {
        let dir = tempfile::tempdir().unwrap();
        let conn = crate::store::open_writer(&dir.path().join("plans.db")).unwrap();
        assert_eq!(
            steps(&conn, SEQ_BOUNDS, Vec::new()),
            "SCAN CONSTANT ROW\nSCALAR SUBQUERY 1\nSEARCH records\nSCALAR SUBQUERY 2\nSEARCH records"
        );
        assert_eq!(
            steps(&conn, CREATED_AT_FROM, vec![Value::Integer(1)]),
            "SEARCH records USING INTEGER PRIMARY KEY (rowid>?)"
        );
    }
}

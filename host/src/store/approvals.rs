//! The `approvals` table: the approval each record awaiting one waits for,
//! when it lapses, and its decision. Only the ledger writes it.

use mandate_core::ApprovalDecision;

use super::orgs::Org;
use crate::store::sql::{self, Connection, OptionalExtension, Row, params};

/// Where an approval stands: `pending` until a decision, or the decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ApprovalStatus {
    Pending,
    Decided(ApprovalDecision),
}

impl ApprovalStatus {
    /// The stored (and wire) name.
    pub fn as_str(self) -> &'static str {
        match self {
            ApprovalStatus::Pending => "pending",
            ApprovalStatus::Decided(decision) => decision.as_str(),
        }
    }

    /// Reads a stored name.
    pub fn parse(text: &str) -> Option<ApprovalStatus> {
        match text {
            "pending" => Some(ApprovalStatus::Pending),
            other => ApprovalDecision::parse(other).map(ApprovalStatus::Decided),
        }
    }
}

/// A stored approval.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Approval {
    pub id: String,
    pub aar_id: String,
    pub org: Org,
    pub status: ApprovalStatus,
    /// Unix milliseconds.
    pub requested_at: i64,
    /// Unix milliseconds: undecided then, it expires.
    pub expires_at: i64,
    /// Unix milliseconds.
    pub decided_at: Option<i64>,
    /// The API key that decided (none for an expiry).
    pub decided_by: Option<String>,
    pub note: Option<String>,
    /// The leaf index of the decision in the record log.
    pub log_decided: Option<u64>,
}

const COLUMNS: &str =
    "id, aar_id, org, status, requested_at, expires_at, decided_at, decided_by, note, log_decided";

fn from_row(row: &Row<'_>) -> sql::Result<Approval> {
    let status: String = row.get(3)?;
    Ok(Approval {
        id: row.get(0)?,
        aar_id: row.get(1)?,
        org: row.get(2)?,
        status: ApprovalStatus::parse(&status)
            .ok_or_else(|| sql::Error::corrupt("approvals column status", status))?,
        requested_at: row.get(4)?,
        expires_at: row.get(5)?,
        decided_at: row.get(6)?,
        decided_by: row.get(7)?,
        note: row.get(8)?,
        log_decided: row.get(9)?,
    })
}

/// Stores a new pending approval.
pub fn insert(
    conn: &Connection,
    id: &str,
    aar_id: &str,
    org: Org,
    requested_at: i64,
    expires_at: i64,
) -> sql::Result<()> {
    conn.prepare_cached(
        "INSERT INTO approvals (id, aar_id, org, status, requested_at, expires_at)
         VALUES (?1, ?2, ?3, 'pending', ?4, ?5)",
    )?
    .execute(params![id, aar_id, org, requested_at, expires_at])?;
    Ok(())
}

/// The approval with this id, if any.
pub fn by_id(conn: &Connection, id: &str) -> sql::Result<Option<Approval>> {
    conn.prepare_cached(&format!("SELECT {COLUMNS} FROM approvals WHERE id = ?1"))?
        .query_row([id], from_row)
        .optional()
}

/// The approval a record waited for, if it waited for one.
pub fn by_record(conn: &Connection, aar_id: &str) -> sql::Result<Option<Approval>> {
    conn.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM approvals WHERE aar_id = ?1"
    ))?
    .query_row([aar_id], from_row)
    .optional()
}

/// A decision as stored.
#[derive(Debug, Clone, Copy)]
pub struct Decided<'a> {
    pub decision: ApprovalDecision,
    /// Unix milliseconds.
    pub at: i64,
    pub by: Option<&'a str>,
    pub note: Option<&'a str>,
    pub log: Option<u64>,
}

/// Stores the decision of a pending approval.
pub fn decide(conn: &Connection, id: &str, decided: &Decided<'_>) -> sql::Result<()> {
    conn.prepare_cached(
        "UPDATE approvals SET status = ?1, decided_at = ?2, decided_by = ?3, note = ?4,
            log_decided = ?5
         WHERE id = ?6 AND status = 'pending'",
    )?
    .execute(params![
        decided.decision.as_str(),
        decided.at,
        decided.by,
        decided.note,
        decided.log,
        id
    ])?;
    Ok(())
}

/// Up to `limit` approvals with ids after `after`, by id (`""` for the
/// first page).
pub fn page_by_id(conn: &Connection, after: &str, limit: u64) -> sql::Result<Vec<Approval>> {
    conn.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM approvals WHERE id > ?1 ORDER BY id LIMIT ?2"
    ))?
    .query_map(params![after, limit], from_row)?
    .collect()
}

/// Up to `limit` pending approvals that lapsed at or before `now_ms`,
/// soonest first.
pub fn due(conn: &Connection, now_ms: i64, limit: u32) -> sql::Result<Vec<Approval>> {
    conn.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM approvals WHERE status = 'pending' AND expires_at <= ?1
         ORDER BY expires_at LIMIT ?2"
    ))?
    .query_map(params![now_ms, limit], from_row)?
    .collect()
}

/// When the next pending approval lapses (unix ms), if any is pending.
pub fn next_expiry(conn: &Connection) -> sql::Result<Option<i64>> {
    conn.prepare_cached("SELECT min(expires_at) FROM approvals WHERE status = 'pending'")?
        .query_row([], |row| row.get(0))
}

/// The pending approvals of records made with the tokens `jtis` (a revoked
/// subtree), to end with them.
pub fn pending_of_tokens(conn: &Connection, jtis: &[String]) -> sql::Result<Vec<Approval>> {
    let mut found = Vec::new();
    let mut statement = conn.prepare_cached(&format!(
        "SELECT {} FROM approvals a JOIN records r ON r.aar_id = a.aar_id
         WHERE r.jti = ?1 AND r.status = 'awaiting_approval' AND a.status = 'pending'",
        COLUMNS
            .split(", ")
            .map(|c| format!("a.{c}"))
            .collect::<Vec<_>>()
            .join(", ")
    ))?;
    for jti in jtis {
        found.extend(
            statement
                .query_map([jti.as_str()], from_row)?
                .collect::<sql::Result<Vec<_>>>()?,
        );
    }
    Ok(found)
}

/// Approvals of `org` in `status` (any status when `None`), newest first,
/// at most `limit`, before the approval `before` (its `requested_at` and
/// id) when given: a page of the list.
pub fn list(
    conn: &Connection,
    org: Org,
    status: Option<ApprovalStatus>,
    before: Option<(i64, &str)>,
    limit: u32,
) -> sql::Result<Vec<Approval>> {
    let (before_at, before_id) = before.unwrap_or((i64::MAX, ""));
    let page = "(requested_at < ?2 OR (requested_at = ?2 AND id < ?3))
         ORDER BY requested_at DESC, id DESC LIMIT ?4";
    match status {
        Some(status) => conn
            .prepare_cached(&format!(
                "SELECT {COLUMNS} FROM approvals WHERE org = ?1 AND status = ?5 AND {page}"
            ))?
            .query_map(
                params![org, before_at, before_id, limit, status.as_str()],
                from_row,
            )?
            .collect(),
        None => conn
            .prepare_cached(&format!(
                "SELECT {COLUMNS} FROM approvals WHERE org = ?1 AND {page}"
            ))?
            .query_map(params![org, before_at, before_id, limit], from_row)?
            .collect(),
    }
}

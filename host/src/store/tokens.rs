//! The `tokens` table: every statement that reads or writes it, once, for
//! the ledger and the read side. The ledger finds tokens by jti hash (how
//! descendants name their ancestors); the read side by jti (how callers name
//! them).

use std::collections::HashMap;

use crate::store::sql::types::Value;
use crate::store::sql::{self, Connection, OptionalExtension, Row, params, params_from_iter};
use mandate_core::{Claims, Jth, Jti, Usage, Usd};

use super::orgs::Org;

/// The claims a token was issued with, as stored (JSON), by jti hash.
pub fn claims_text(conn: &Connection, jth: &Jth) -> sql::Result<Option<String>> {
    conn.prepare_cached("SELECT claims FROM tokens WHERE jth = ?1")?
        .query_row([jth.as_str()], |row| row.get(0))
        .optional()
}

/// A token's organisation and what changes about it after it is issued.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Standing {
    pub org: Org,
    pub revoked: bool,
    /// Tokens delegated from it.
    pub children: u64,
}

/// The statement reading a token's standing by jti hash (`?1`), read by
/// [`standing_row`].
pub const STANDING: &str =
    "SELECT org, revoked_at IS NOT NULL, children FROM tokens WHERE jth = ?1";

/// A token's standing, by jti hash; `None` for a token never issued here.
pub fn standing(conn: &Connection, jth: &Jth) -> sql::Result<Option<Standing>> {
    conn.prepare_cached(STANDING)?
        .query_row([jth.as_str()], standing_row)
        .optional()
}

/// A row of [`STANDING`].
pub fn standing_row(row: &Row<'_>) -> sql::Result<Standing> {
    Ok(Standing {
        org: row.get(0)?,
        revoked: row.get(1)?,
        children: u64::try_from(row.get::<_, i64>(2)?).unwrap_or(0),
    })
}

/// The organisation of the token with this jti hash, if there is one (it
/// never changes).
pub fn org_by_jth(conn: &Connection, jth: &Jth) -> sql::Result<Option<Org>> {
    conn.prepare_cached("SELECT org FROM tokens WHERE jth = ?1")?
        .query_row([jth.as_str()], |row| row.get(0))
        .optional()
}

/// The jti hash of a stored jti (SHA-256 of its ASCII, as
/// [`Jti::hash`]), for answers that name a token.
pub fn jth_of(jti: &str) -> Jth {
    use sha2::Digest as _;
    Jth::from_digest(&sha2::Sha256::digest(jti.as_bytes()).into())
}

/// The jti of the token with this jti hash, if there is one: how a caller
/// shown only the hash names a token to the ledger, which acts by jti.
pub fn jti_by_jth(conn: &Connection, jth: &Jth) -> sql::Result<Option<Jti>> {
    let text: Option<String> = conn
        .prepare_cached("SELECT jti FROM tokens WHERE jth = ?1")?
        .query_row([jth.as_str()], |row| row.get(0))
        .optional()?;
    Ok(text.and_then(|text| Jti::parse(&text).ok()))
}

/// The organisation of the token with this jti, if there is one.
pub fn org_of(conn: &Connection, jti: &str) -> sql::Result<Option<Org>> {
    conn.prepare_cached("SELECT org FROM tokens WHERE jti = ?1")?
        .query_row([jti], |row| row.get(0))
        .optional()
}

/// The organisation of each token of `jtis` this server holds, in one
/// query (a batch's tokens). The list of placeholders is padded to a power
/// of two with the last jti, so a handful of statements serve every size.
pub fn orgs_of(conn: &Connection, jtis: &[String]) -> sql::Result<HashMap<String, Org>> {
    let Some(last) = jtis.last() else {
        return Ok(HashMap::new());
    };
    let size = jtis.len().next_power_of_two();
    let placeholders = (1..=size)
        .map(|n| format!("?{n}"))
        .collect::<Vec<_>>()
        .join(", ");
    let values = jtis
        .iter()
        .chain(std::iter::repeat_n(last, size - jtis.len()))
        .map(|jti| Value::Text(jti.clone()));
    conn.prepare_cached(&format!(
        "SELECT jti, org FROM tokens WHERE jti IN ({placeholders})"
    ))?
    .query_map(params_from_iter(values), |row| {
        Ok((row.get(0)?, row.get(1)?))
    })?
    .collect()
}

/// How many tokens of `org` are neither revoked nor expired at `now_s`,
/// counting no further than `limit`.
pub fn outstanding(conn: &Connection, org: Org, now_s: i64, limit: u64) -> sql::Result<u64> {
    let counted: i64 = conn
        .prepare_cached(
            "SELECT count(*) FROM (SELECT 1 FROM tokens
                 WHERE org = ?1 AND expires_at > ?2 AND revoked_at IS NULL LIMIT ?3) AS counted",
        )?
        .query_row(
            params![org, now_s, i64::try_from(limit).unwrap_or(i64::MAX)],
            |row| row.get(0),
        )?;
    Ok(u64::try_from(counted).unwrap_or(0))
}

/// A live token whose approval requirement could never match under its
/// grant (issued before the server refused such requirements).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnreachableRequirement {
    pub org: Org,
    /// The token's jti hash (a jti is a credential: never logged).
    pub jth: String,
    pub agent_id: String,
    /// Why, as core says it (the code names the member).
    pub reason: mandate_core::ScopeError,
}

/// Every token neither revoked nor expired at `now_s` whose
/// `require_approval` could never match: for a root, any member; for a
/// delegated token, what its parent's requirement lacks (what a child
/// inherits and cannot do needs no approval). Read once at start, over
/// the claims that mention a requirement.
pub fn unreachable_requirements(
    conn: &Connection,
    now_s: i64,
) -> sql::Result<Vec<UnreachableRequirement>> {
    let rows: Vec<(Org, String, String, String, Option<String>)> = conn
        .prepare_cached(
            "SELECT t.org, t.jth, t.agent_id, t.claims, p.claims FROM tokens t
             LEFT JOIN tokens p ON p.jti = t.parent
             WHERE t.revoked_at IS NULL AND t.expires_at > ?1
               AND t.claims LIKE '%\"require_approval\"%'
             ORDER BY t.org, t.jth",
        )?
        .query_map([now_s], |row| {
            Ok((
                row.get(0)?,
                row.get(1)?,
                row.get(2)?,
                row.get(3)?,
                row.get(4)?,
            ))
        })?
        .collect::<sql::Result<_>>()?;
    let mut found = Vec::new();
    for (org, jth, agent_id, claims, parent) in rows {
        let Ok(claims) = serde_json::from_str::<Claims>(&claims) else {
            continue;
        };
        let Some(constraints) = &claims.svc_constraints else {
            continue;
        };
        let Some(requirement) = &constraints.require_approval else {
            continue;
        };
        let inherited = parent
            .and_then(|text| serde_json::from_str::<Claims>(&text).ok())
            .and_then(|parent| parent.svc_constraints)
            .and_then(|parent| parent.require_approval);
        if let Err(reason) = mandate_core::check_reachable(
            requirement,
            inherited.as_ref(),
            &claims.svc_scope,
            constraints.max_spend_usd,
        ) {
            found.push(UnreachableRequirement {
                org,
                jth,
                agent_id,
                reason,
            });
        }
    }
    Ok(found)
}

/// What a token's subtree has spent, for its budget.
pub fn usage(conn: &Connection, jth: &Jth) -> sql::Result<Usage> {
    let (spent, actions): (i64, i64) = conn
        .prepare_cached("SELECT spent_micros, actions FROM tokens WHERE jth = ?1")?
        .query_row([jth.as_str()], |row| Ok((row.get(0)?, row.get(1)?)))?;
    let spent = Usd::from_micros(u64::try_from(spent).unwrap_or(0))
        .map_err(|e| sql::Error::corrupt("tokens.spent_micros", e))?;
    Ok(Usage {
        spent,
        actions: u64::try_from(actions).unwrap_or(0),
    })
}

/// The columns of a token's charge by a group, in the order of
/// [`charged`]'s values.
pub const CHARGED: [sql::Column; 5] = {
    use sql::Column::{Integer as I, Real as R, Text as T};
    [T, I, I, R, T]
};

/// A token's charge by a group for [`charge_all`]: the spend (negative for
/// a released reservation) and actions to add to its usage, and the largest
/// share of a budget its usage then reaches, with that budget's name.
pub fn charged(
    jth: &Jth,
    spend_micros: i64,
    actions: i64,
    share: Option<(&str, f64)>,
) -> Vec<Value> {
    let (limit, percent) = share.map_or((Value::Null, Value::Null), |(limit, percent)| {
        (Value::Text(limit.to_owned()), Value::Real(percent))
    });
    vec![
        Value::Text(jth.as_str().to_owned()),
        Value::Integer(spend_micros),
        Value::Integer(actions),
        percent,
        limit,
    ]
}

/// The part of a group's statement ([`sql::Connection::apply_tables`])
/// adding its charges ([`charged`] rows, one per token) to the tokens'
/// usage and noting each one's largest share of a budget.
pub fn charge_all(rows: &[Vec<Value>]) -> sql::RowsFor<'_> {
    sql::RowsFor {
        sqlite: "UPDATE tokens SET spent_micros = spent_micros + ?2, actions = actions + ?3,
             budget_percent = ?4, budget_limit = ?5
         WHERE jth = ?1",
        postgres: "UPDATE tokens SET spent_micros = tokens.spent_micros + d.spend,
             actions = tokens.actions + d.actions, budget_percent = d.percent,
             budget_limit = d.budget
         FROM unnest($1::text[], $2::bigint[], $3::bigint[], $4::double precision[], $5::text[])
             AS d(jth, spend, actions, percent, budget)
         WHERE tokens.jth = d.jth",
        columns: &CHARGED,
        rows,
    }
}

/// Notes that a token signed by `kid` expires at `exp`, so the key stays
/// published until then; `false` when the key is revoked (nothing changes).
pub fn note_signed(conn: &Connection, kid: &str, exp: i64) -> sql::Result<bool> {
    let changed = conn
        .prepare_cached(
            "UPDATE signing_keys SET max_exp = CASE WHEN max_exp > ?1 THEN max_exp ELSE ?1 END WHERE kid = ?2 AND revoked_at IS NULL",
        )?
        .execute(params![exp, kid])?;
    Ok(changed > 0)
}

/// A token about to be stored.
#[derive(Debug, Clone, Copy)]
pub struct NewToken<'a> {
    pub org: Org,
    pub claims: &'a Claims,
    /// The parent's jti, for a delegated token.
    pub parent: Option<&'a Jti>,
    /// A renewal of its parent (an OAuth access token of a grant root):
    /// in the chain, but not counted among the parent's children.
    pub renewal: bool,
    pub kid: &'a str,
    /// The API key that issued a root token.
    pub issued_by: Option<&'a str>,
    /// Its claims as stored (JSON), which its leaf in the record log hashes.
    pub claims_text: &'a str,
    /// The leaf index of its issue in the record log.
    pub log_issued: Option<u64>,
}

/// A token's claims as the table stores them.
pub fn claims_json(claims: &Claims) -> sql::Result<String> {
    serde_json::to_string(claims).map_err(|e| sql::Error::Conversion(e.to_string()))
}

/// Stores a token, and counts it as a child of its parent unless it is a
/// renewal.
pub fn insert(conn: &Connection, token: &NewToken<'_>) -> sql::Result<()> {
    let claims = token.claims;
    let status_idx = claims.status.as_ref().map(|status| status.idx());
    conn.prepare_cached(
        "INSERT INTO tokens (jti, parent, jth, provenance_ref, agent_id, depth, claims, kid, issued_at,
            expires_at, issued_by, org, status_idx, log_issued)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)",
    )?
    .execute(params![
        claims.jti.as_str(),
        token.parent.map(Jti::as_str),
        claims.jth().as_str(),
        claims.svc_prov.as_str(),
        claims.agent_id().as_str(),
        claims.svc_depth,
        token.claims_text,
        token.kid,
        claims.iat,
        claims.exp,
        token.issued_by,
        token.org,
        status_idx,
        token.log_issued,
    ])?;
    if let Some(parent) = token.parent.filter(|_| !token.renewal) {
        conn.prepare_cached("UPDATE tokens SET children = children + 1 WHERE jti = ?1")?
            .execute([parent.as_str()])?;
    }
    Ok(())
}

/// A token of a subtree being revoked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InSubtree {
    pub jti: String,
    pub jth: String,
    pub org: Org,
    /// Its place in the token status lists (tokens issued before them have
    /// none).
    pub status_idx: Option<u64>,
    /// Revoked before (it keeps its revocation's time and reason).
    pub revoked: bool,
}

/// A token and every descendant, in no order.
pub fn subtree(conn: &Connection, jti: &Jti) -> sql::Result<Vec<InSubtree>> {
    conn.prepare_cached(
        "WITH RECURSIVE subtree(jti) AS (
             SELECT jti FROM tokens WHERE jti = ?1
             UNION ALL SELECT t.jti FROM tokens t JOIN subtree s ON t.parent = s.jti
         )
         SELECT jti, jth, org, status_idx, revoked_at IS NOT NULL FROM tokens
         WHERE jti IN (SELECT jti FROM subtree)",
    )?
    .query_map([jti.as_str()], in_subtree)?
    .collect()
}

fn in_subtree(row: &Row<'_>) -> sql::Result<InSubtree> {
    Ok(InSubtree {
        jti: row.get(0)?,
        jth: row.get(1)?,
        org: row.get(2)?,
        status_idx: row.get(3)?,
        revoked: row.get(4)?,
    })
}

/// Every token signed with `kid`, and every descendant, in no order.
pub fn signed_with(conn: &Connection, kid: &str) -> sql::Result<Vec<InSubtree>> {
    conn.prepare_cached(
        "WITH RECURSIVE subtree(jti) AS (
             SELECT jti FROM tokens WHERE kid = ?1
             UNION SELECT t.jti FROM tokens t JOIN subtree s ON t.parent = s.jti
         )
         SELECT jti, jth, org, status_idx, revoked_at IS NOT NULL FROM tokens
         WHERE jti IN (SELECT jti FROM subtree)",
    )?
    .query_map([kid], in_subtree)?
    .collect()
}

/// A token's revocation.
#[derive(Debug, Clone, Copy)]
pub struct Revocation<'a> {
    /// Unix seconds.
    pub at: i64,
    pub reason: Option<&'a str>,
    /// The jti hash of the token the revocation named (this one, an
    /// ancestor, or this one again when its signing key was revoked).
    pub cause: &'a str,
    /// The leaf index of the revocation in the record log.
    pub log: Option<u64>,
}

/// Revokes one token not revoked before.
pub fn revoke(conn: &Connection, jti: &str, revocation: &Revocation<'_>) -> sql::Result<()> {
    conn.prepare_cached(
        "UPDATE tokens SET revoked_at = ?1, revoke_reason = ?2, revoke_cause = ?3, log_revoked = ?4
         WHERE jti = ?5 AND revoked_at IS NULL",
    )?
    .execute(params![
        revocation.at,
        revocation.reason,
        revocation.cause,
        revocation.log,
        jti
    ])?;
    Ok(())
}

/// A token as the read side shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenRow {
    pub jti: String,
    pub parent: Option<String>,
    pub agent_id: String,
    pub depth: u32,
    pub provenance_ref: String,
    /// Unix seconds.
    pub issued_at: i64,
    /// Unix seconds.
    pub expires_at: i64,
    /// Unix seconds.
    pub revoked_at: Option<i64>,
    pub revoke_reason: Option<String>,
}

const TOKEN_COLUMNS: &str = "jti, parent, agent_id, depth, provenance_ref, issued_at, expires_at, revoked_at, revoke_reason";

/// `SELECT <the columns of a TokenRow> FROM tokens`, for queries to extend
/// with `WHERE` and `ORDER BY`; rows are read with [`token_row`].
pub fn select_sql() -> String {
    format!("SELECT {TOKEN_COLUMNS} FROM tokens")
}

/// Reads a row selected with [`select_sql`].
pub fn token_row(row: &Row<'_>) -> sql::Result<TokenRow> {
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

/// The token of `org` with this jti, if any.
pub fn by_jti(conn: &Connection, org: Org, jti: &str) -> sql::Result<Option<TokenRow>> {
    conn.prepare_cached(&format!(
        "SELECT {TOKEN_COLUMNS} FROM tokens WHERE jti = ?1 AND org = ?2"
    ))?
    .query_row(params![jti, org], token_row)
    .optional()
}

/// Where a page of descendants starts: after this (depth, issue time, jti
/// hash). A page's cursor names its last token by jti hash, as the page
/// does: a cursor is shown to readers, who are never shown a jti.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct After {
    pub depth: i64,
    pub issued_at: i64,
    pub jth: String,
}

impl After {
    /// Before every token.
    pub fn start() -> After {
        After {
            depth: -1,
            issued_at: 0,
            jth: String::new(),
        }
    }
}

/// Up to `limit` descendants of a token after `after`, in the order of
/// depth, issue time and jti hash.
pub fn descendants(
    conn: &Connection,
    jti: &str,
    after: &After,
    limit: i64,
) -> sql::Result<Vec<TokenRow>> {
    let mut statement = conn.prepare_cached(&format!(
        "WITH RECURSIVE subtree(jti) AS (
             SELECT jti FROM tokens WHERE parent = ?1
             UNION ALL SELECT t.jti FROM tokens t JOIN subtree s ON t.parent = s.jti
         )
         SELECT {TOKEN_COLUMNS} FROM tokens WHERE jti IN (SELECT jti FROM subtree)
             AND (depth, issued_at, jth) > (?2, ?3, ?4)
         ORDER BY depth, issued_at, jth LIMIT ?5"
    ))?;
    statement
        .query_map(
            params![jti, after.depth, after.issued_at, after.jth, limit],
            token_row,
        )?
        .collect()
}

/// Up to `limit` tokens of a workflow, in the order of depth, issue time and
/// jti.
pub fn of_workflow(
    conn: &Connection,
    provenance_ref: &str,
    limit: i64,
) -> sql::Result<Vec<TokenRow>> {
    let mut statement = conn.prepare_cached(&format!(
        "SELECT {TOKEN_COLUMNS} FROM tokens WHERE provenance_ref = ?1
         ORDER BY depth, issued_at, jti LIMIT ?2"
    ))?;
    statement
        .query_map(params![provenance_ref, limit], token_row)?
        .collect()
}

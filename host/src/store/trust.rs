//! The `vouches` table, and what the trust rule reads of an organisation
//! (its agents' first tokens, roots, delegators, reputation counts and
//! latest activity, and its active vouches) in three statements. Only the
//! ledger writes vouches.

use std::collections::BTreeMap;

use mandate_core::trust::{AgentInput, TrustGraph, VouchInput, Voucher};
use mandate_core::{AgentId, HumanRef, KeyId, ReputationCounts, reputation};

use super::orgs::Org;
use crate::store::sql::{self, Connection, OptionalExtension, Row, params};

/// A stored vouch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Vouch {
    pub id: String,
    pub org: Org,
    /// The person's API key that vouched, or …
    pub by_key: Option<String>,
    /// … the agent that vouched with its token.
    pub by_agent: Option<String>,
    /// The agent vouched for.
    pub agent_id: String,
    /// Millionths: 1 to 1,000,000.
    pub weight_ppm: u64,
    pub reason: Option<String>,
    /// Unix milliseconds.
    pub created_at: i64,
    /// Unix milliseconds: from then on it no longer counts.
    pub expires_at: Option<i64>,
    /// Unix milliseconds.
    pub withdrawn_at: Option<i64>,
    pub withdrawn_by_key: Option<String>,
    pub withdrawn_by_agent: Option<String>,
    /// The leaf indices of its creation and withdrawal in the record log.
    pub log_created: Option<u64>,
    pub log_withdrawn: Option<u64>,
}

impl Vouch {
    /// Whether it counts at `now_ms`: not withdrawn, not expired.
    pub fn is_active(&self, now_ms: i64) -> bool {
        self.withdrawn_at.is_none() && self.expires_at.is_none_or(|at| at > now_ms)
    }
}

const COLUMNS: &str = "id, org, by_key, by_agent, agent_id, weight_ppm, reason, created_at, \
    expires_at, withdrawn_at, withdrawn_by_key, withdrawn_by_agent, log_created, log_withdrawn";

fn from_row(row: &Row<'_>) -> sql::Result<Vouch> {
    Ok(Vouch {
        id: row.get(0)?,
        org: row.get(1)?,
        by_key: row.get(2)?,
        by_agent: row.get(3)?,
        agent_id: row.get(4)?,
        weight_ppm: row.get(5)?,
        reason: row.get(6)?,
        created_at: row.get(7)?,
        expires_at: row.get(8)?,
        withdrawn_at: row.get(9)?,
        withdrawn_by_key: row.get(10)?,
        withdrawn_by_agent: row.get(11)?,
        log_created: row.get(12)?,
        log_withdrawn: row.get(13)?,
    })
}

/// Stores a new vouch.
pub fn insert(conn: &Connection, vouch: &Vouch) -> sql::Result<()> {
    conn.prepare_cached(&format!(
        "INSERT INTO vouches ({COLUMNS})
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)"
    ))?
    .execute(params![
        vouch.id,
        vouch.org,
        vouch.by_key,
        vouch.by_agent,
        vouch.agent_id,
        vouch.weight_ppm,
        vouch.reason,
        vouch.created_at,
        vouch.expires_at,
        vouch.withdrawn_at,
        vouch.withdrawn_by_key,
        vouch.withdrawn_by_agent,
        vouch.log_created,
        vouch.log_withdrawn,
    ])?;
    Ok(())
}

/// The vouch with this id, if any (of any organisation).
pub fn by_id(conn: &Connection, id: &str) -> sql::Result<Option<Vouch>> {
    conn.prepare_cached(&format!("SELECT {COLUMNS} FROM vouches WHERE id = ?1"))?
        .query_row([id], from_row)
        .optional()
}

/// Who withdrew a vouch, when, and its leaf.
#[derive(Debug, Clone, Copy)]
pub struct Withdrawal<'a> {
    /// Unix milliseconds.
    pub at: i64,
    pub by_key: Option<&'a str>,
    pub by_agent: Option<&'a str>,
    pub log: Option<u64>,
}

/// Marks a vouch withdrawn.
pub fn withdraw(conn: &Connection, id: &str, withdrawal: &Withdrawal<'_>) -> sql::Result<()> {
    conn.prepare_cached(
        "UPDATE vouches SET withdrawn_at = ?2, withdrawn_by_key = ?3, withdrawn_by_agent = ?4,
            log_withdrawn = ?5
         WHERE id = ?1",
    )?
    .execute(params![
        id,
        withdrawal.at,
        withdrawal.by_key,
        withdrawal.by_agent,
        withdrawal.log
    ])?;
    Ok(())
}

/// The voucher's vouch for `agent_id` that counts at `now_ms`, if any.
pub fn active_from(
    conn: &Connection,
    org: Org,
    voucher: &Voucher,
    agent_id: &str,
    now_ms: i64,
) -> sql::Result<Option<Vouch>> {
    let (column, id) = match voucher {
        Voucher::Human { key_id } => ("by_key", key_id.as_str()),
        Voucher::Agent { agent_id } => ("by_agent", agent_id.as_str()),
    };
    conn.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM vouches
         WHERE org = ?1 AND {column} = ?2 AND agent_id = ?3 AND withdrawn_at IS NULL
           AND (expires_at IS NULL OR expires_at > ?4)
         LIMIT 1"
    ))?
    .query_row(params![org, id, agent_id, now_ms], from_row)
    .optional()
}

/// Up to `limit` vouches that count at `now_ms` received by `agent_id`,
/// oldest first.
pub fn received(
    conn: &Connection,
    org: Org,
    agent_id: &str,
    now_ms: i64,
    limit: u32,
) -> sql::Result<Vec<Vouch>> {
    conn.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM vouches
         WHERE org = ?1 AND agent_id = ?2 AND withdrawn_at IS NULL
           AND (expires_at IS NULL OR expires_at > ?3)
         ORDER BY created_at, id LIMIT ?4"
    ))?
    .query_map(params![org, agent_id, now_ms, limit], from_row)?
    .collect()
}

/// Up to `limit` vouches that count at `now_ms` given by the agent
/// `agent_id`, oldest first.
pub fn given_by_agent(
    conn: &Connection,
    org: Org,
    agent_id: &str,
    now_ms: i64,
    limit: u32,
) -> sql::Result<Vec<Vouch>> {
    conn.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM vouches
         WHERE org = ?1 AND by_agent = ?2 AND withdrawn_at IS NULL
           AND (expires_at IS NULL OR expires_at > ?3)
         ORDER BY created_at, id LIMIT ?4"
    ))?
    .query_map(params![org, agent_id, now_ms, limit], from_row)?
    .collect()
}

/// The vouches that count at `now_ms` received by the agents from `first`
/// to `last` (by id, both included): the edges of a page of the graph.
pub fn received_by_range(
    conn: &Connection,
    org: Org,
    first: &str,
    last: &str,
    now_ms: i64,
) -> sql::Result<Vec<Vouch>> {
    conn.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM vouches
         WHERE org = ?1 AND agent_id >= ?2 AND agent_id <= ?3 AND withdrawn_at IS NULL
           AND (expires_at IS NULL OR expires_at > ?4)
         ORDER BY agent_id, created_at, id"
    ))?
    .query_map(params![org, first, last, now_ms], from_row)?
    .collect()
}

/// Every vouch of the organisation, withdrawn or not, by id from after
/// `after`: for the audit, `limit` at a time.
pub fn page(conn: &Connection, after: &str, limit: u64) -> sql::Result<Vec<Vouch>> {
    conn.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM vouches WHERE id > ?1 ORDER BY id LIMIT ?2"
    ))?
    .query_map(params![after, limit], from_row)?
    .collect()
}

/// The organisations holding a token: those the trust rule scores.
pub fn orgs_with_agents(conn: &Connection) -> sql::Result<Vec<Org>> {
    conn.prepare_cached("SELECT DISTINCT org FROM tokens")?
        .query_map([], |row| row.get(0))?
        .collect()
}

/// What the trust rule reads of an organisation at `now_ms`: every agent
/// holding a token (from its tokens: the first one's time and human,
/// whether a human issued one, which agents delegated to it; from its
/// counters: its reputation and latest activity) and every vouch that
/// counts. Three statements, each one pass over the organisation's rows of
/// one table (tokens with their workflow and parent; agents; vouches).
pub fn graph_of(conn: &Connection, org: Org, now_ms: i64) -> sql::Result<TrustGraph> {
    struct Building {
        created_at: i64,
        creator: String,
        has_root: bool,
        delegators: Vec<String>,
    }
    let mut agents: BTreeMap<String, Building> = BTreeMap::new();
    {
        let mut statement = conn.prepare_cached(
            "SELECT t.agent_id, t.issued_at, t.depth, w.human_ref, p.agent_id
             FROM tokens t
             JOIN workflows w ON w.provenance_ref = t.provenance_ref
             LEFT JOIN tokens p ON p.jti = t.parent
             WHERE t.org = ?1",
        )?;
        let mut rows = statement.query(params![org])?;
        while let Some(row) = rows.next()? {
            let agent: String = row.get(0)?;
            let issued_at: i64 = row.get(1)?;
            let depth: i64 = row.get(2)?;
            let human: String = row.get(3)?;
            let parent: Option<String> = row.get(4)?;
            let entry = agents.entry(agent).or_insert_with(|| Building {
                created_at: issued_at,
                creator: human.clone(),
                has_root: false,
                delegators: Vec::new(),
            });
            if issued_at < entry.created_at {
                entry.created_at = issued_at;
                entry.creator = human;
            }
            entry.has_root |= depth == 0;
            if let Some(parent) = parent
                && !entry.delegators.contains(&parent)
            {
                entry.delegators.push(parent);
            }
        }
    }
    let mut counts: BTreeMap<String, (ReputationCounts, Option<i64>)> = BTreeMap::new();
    {
        let mut statement = conn.prepare_cached(
            "SELECT agent_id, successes, failures, pending, denied_requests, approved, flagged,
                rejected, last_activity
             FROM agents WHERE org = ?1",
        )?;
        let mut rows = statement.query(params![org])?;
        while let Some(row) = rows.next()? {
            let count = |i: usize| -> sql::Result<u64> { Ok(row.get::<_, i64>(i)?.max(0) as u64) };
            let agent_counts = ReputationCounts {
                successes: count(1)?,
                failures: count(2)?,
                pending: count(3)?,
                denied_requests: count(4)?,
                approved: count(5)?,
                flagged: count(6)?,
                rejected: count(7)?,
            };
            counts.insert(row.get(0)?, (agent_counts, row.get(8)?));
        }
    }
    let corrupt = |what: &str, text: &str| sql::Error::corrupt(what, text);
    let mut graph = TrustGraph::default();
    for (agent, building) in agents {
        let (agent_counts, last_activity) = counts.remove(&agent).unwrap_or_default();
        let mut delegators = Vec::with_capacity(building.delegators.len());
        for delegator in &building.delegators {
            delegators.push(
                AgentId::parse(delegator)
                    .map_err(|_| corrupt("tokens column agent_id", delegator))?,
            );
        }
        graph.agents.push(AgentInput {
            agent_id: AgentId::parse(&agent)
                .map_err(|_| corrupt("tokens column agent_id", &agent))?,
            reputation: reputation(&agent_counts).combined_reputation,
            created_at: building.created_at,
            creator: HumanRef::parse(&building.creator)
                .map_err(|_| corrupt("workflows column human_ref", &building.creator))?,
            last_active: last_activity.map(|ms: i64| ms.div_euclid(1000)),
            has_root: building.has_root,
            delegators,
        });
    }
    let mut statement = conn.prepare_cached(
        "SELECT by_key, by_agent, agent_id, weight_ppm, expires_at FROM vouches
         WHERE org = ?1 AND withdrawn_at IS NULL AND (expires_at IS NULL OR expires_at > ?2)",
    )?;
    let mut rows = statement.query(params![org, now_ms])?;
    while let Some(row) = rows.next()? {
        let by_key: Option<String> = row.get(0)?;
        let by_agent: Option<String> = row.get(1)?;
        let target: String = row.get(2)?;
        let weight_ppm: i64 = row.get(3)?;
        let expires_at: Option<i64> = row.get(4)?;
        let voucher = match (by_key, by_agent) {
            (Some(key), None) => Voucher::Human {
                key_id: KeyId::parse(&key).map_err(|_| corrupt("vouches column by_key", &key))?,
            },
            (None, Some(agent)) => Voucher::Agent {
                agent_id: AgentId::parse(&agent)
                    .map_err(|_| corrupt("vouches column by_agent", &agent))?,
            },
            _ => {
                return Err(corrupt(
                    "vouches voucher",
                    "not exactly one of by_key, by_agent",
                ));
            }
        };
        graph.vouches.push(VouchInput {
            voucher,
            target: AgentId::parse(&target)
                .map_err(|_| corrupt("vouches column agent_id", &target))?,
            weight: weight_ppm as f64 / 1_000_000.0,
            // Unix seconds, rounded up: a vouch counts until its last
            // millisecond has passed.
            expires_at: expires_at.map(|ms| (ms + 999).div_euclid(1000)),
        });
    }
    Ok(graph)
}

/// Whether some token of organisation `org` names `agent_id`.
pub fn agent_exists(conn: &Connection, org: Org, agent_id: &str) -> sql::Result<bool> {
    conn.prepare_cached("SELECT 1 FROM tokens WHERE org = ?1 AND agent_id = ?2 LIMIT 1")?
        .query_row(params![org, agent_id], |_| Ok(()))
        .optional()
        .map(|found| found.is_some())
}

/// Whether `agent_id` holds a token delegated, directly or further down,
/// from the token `jti`: an agent the token's holder delegated to.
pub fn delegated_to(conn: &Connection, jti: &str, agent_id: &str) -> sql::Result<bool> {
    conn.prepare_cached(
        "WITH RECURSIVE subtree(jti) AS (
             SELECT jti FROM tokens WHERE parent = ?1
             UNION ALL SELECT t.jti FROM tokens t JOIN subtree s ON t.parent = s.jti
         )
         SELECT 1 FROM tokens WHERE jti IN (SELECT jti FROM subtree) AND agent_id = ?2 LIMIT 1",
    )?
    .query_row(params![jti, agent_id], |_| Ok(()))
    .optional()
    .map(|found| found.is_some())
}

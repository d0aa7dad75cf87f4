//! The agent registry (schema 10): each agent of an organisation with its
//! one owner (the `human_ref` of the root token it was first issued for)
//! and, for a sub-agent a delegation registered, the agent it was
//! registered under (`parent`). Rows are the `agents` table's, which also
//! holds the reputation counters; core's `crate::agents` rules read them.

use mandate_core::{AgentId, HumanRef, Permission, Role};

use super::orgs::Org;
use super::sql::{self, Connection, OptionalExtension, params};

/// An agent as registered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Registered {
    /// The human who owns it; `None` only for a row the upgrade could
    /// not give one (no token of it was stored), which no one owns.
    pub owner: Option<HumanRef>,
    /// The agent it was registered under; `None` for a top-level agent.
    pub parent: Option<AgentId>,
}

/// The agent `agent_id` of `org` as registered, if it is.
pub fn registered(conn: &Connection, org: Org, agent_id: &str) -> sql::Result<Option<Registered>> {
    let row: Option<(Option<String>, Option<String>)> = conn
        .prepare_cached("SELECT owner, parent FROM agents WHERE org = ?1 AND agent_id = ?2")?
        .query_row(params![org, agent_id], |row| Ok((row.get(0)?, row.get(1)?)))
        .optional()?;
    let Some((owner, parent)) = row else {
        return Ok(None);
    };
    let owner = owner
        .map(|text| HumanRef::parse(&text).map_err(|e| sql::Error::corrupt("agents.owner", e)))
        .transpose()?;
    let parent = parent
        .map(|text| AgentId::parse(&text).map_err(|e| sql::Error::corrupt("agents.parent", e)))
        .transpose()?;
    Ok(Some(Registered { owner, parent }))
}

/// Registers `agent_id` of `org`, owned by `owner`, under `parent` (none:
/// top-level). An agent registered before keeps its owner and parent.
pub fn register(
    conn: &Connection,
    org: Org,
    agent_id: &str,
    owner: &HumanRef,
    parent: Option<&str>,
) -> sql::Result<()> {
    conn.prepare_cached(
        "INSERT INTO agents (org, agent_id, owner, parent) VALUES (?1, ?2, ?3, ?4)
         ON CONFLICT DO NOTHING",
    )?
    .execute(params![org, agent_id, owner.as_str(), parent])?;
    Ok(())
}

/// Gives every agent stored before the registry its owner and parent
/// (upgrading to schema 10): an agent with a root token is top-level and
/// owned by the human of its earliest root token; one that only ever
/// appeared through delegation is registered under the agent of the token
/// that first delegated to it, with that agent's owner (parents are
/// registered first: tokens are read in the order they were issued, and a
/// parent token is issued no later than its child and is shallower).
pub fn register_existing(conn: &Connection) -> sql::Result<()> {
    let roots: Vec<(i64, String, String)> = conn
        .prepare_cached(
            "SELECT t.org, t.agent_id, w.human_ref FROM tokens t
             JOIN workflows w ON w.provenance_ref = t.provenance_ref
             WHERE t.depth = 0 ORDER BY t.issued_at, t.jti",
        )?
        .query_map([], |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)))?
        .collect::<sql::Result<_>>()?;
    for (org, agent, human) in roots {
        conn.prepare_cached(
            "UPDATE agents SET owner = ?1 WHERE org = ?2 AND agent_id = ?3 AND owner IS NULL",
        )?
        .execute(params![human, org, agent])?;
    }
    let delegated: Vec<(i64, String, String)> = conn
        .prepare_cached(
            "SELECT t.org, t.agent_id, p.agent_id FROM tokens t
             JOIN tokens p ON p.jti = t.parent
             WHERE t.depth > 0 ORDER BY t.issued_at, t.depth, t.jti",
        )?
        .query_map([], |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)))?
        .collect::<sql::Result<_>>()?;
    for (org, agent, parent) in delegated {
        if agent == parent {
            continue;
        }
        conn.prepare_cached(
            "UPDATE agents SET parent = ?1,
                owner = (SELECT p.owner FROM agents p WHERE p.org = ?2 AND p.agent_id = ?1)
             WHERE org = ?2 AND agent_id = ?3 AND owner IS NULL",
        )?
        .execute(params![parent, org, agent])?;
    }
    Ok(())
}

/// Whether the token `jti` of `org` speaks for its agent as registered:
/// each delegation of its chain named the delegating agent itself or an
/// agent registered under it, and its root token was issued to the agent's
/// owner, or on an `owner`'s key (`issue_for_anyone`). Tokens issued since
/// the registry always do; a token minted before it under a name another
/// owns does not, and vouches or fetches a trust statement as no one.
pub fn speaks_for_its_agent(conn: &Connection, org: Org, jti: &str) -> sql::Result<bool> {
    let mut at = jti.to_owned();
    let mut below: Option<String> = None;
    for _ in 0..=mandate_core::limits::MAX_DELEGATION_DEPTH {
        let row: Option<(String, Option<String>, Option<String>, String)> = conn
            .prepare_cached(
                "SELECT t.agent_id, t.parent, t.issued_by, w.human_ref FROM tokens t
                 JOIN workflows w ON w.provenance_ref = t.provenance_ref
                 WHERE t.jti = ?1 AND t.org = ?2",
            )?
            .query_row(params![at, org], |row| {
                Ok((row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?))
            })
            .optional()?;
        let Some((agent, parent, issued_by, human)) = row else {
            return Ok(false);
        };
        if let Some(child) = &below
            && !within(conn, org, child, &agent)?
        {
            return Ok(false);
        }
        match parent {
            Some(parent) => {
                below = Some(agent);
                at = parent;
            }
            None => {
                let owner = registered(conn, org, &agent)?.and_then(|r| r.owner);
                if owner.as_ref().map(HumanRef::as_str) == Some(human.as_str()) {
                    return Ok(true);
                }
                let role: Option<String> = conn
                    .prepare_cached("SELECT role FROM api_keys WHERE id = ?1 AND org = ?2")?
                    .query_row(params![issued_by, org], |row| row.get(0))
                    .optional()?;
                let for_anyone = role
                    .and_then(|role| role.parse::<Role>().ok())
                    .is_some_and(|role| role.allows(Permission::IssueForAnyone));
                return Ok(owner.is_some() && for_anyone);
            }
        }
    }
    Ok(false)
}

/// Whether `agent` of `org` is `ancestor` or registered under it (core's
/// `check_naming` over the registry: an unregistered agent is under no
/// one).
pub fn within(conn: &Connection, org: Org, agent: &str, ancestor: &str) -> sql::Result<bool> {
    let (Ok(agent), Ok(ancestor)) = (AgentId::parse(agent), AgentId::parse(ancestor)) else {
        return Ok(false);
    };
    let naming = mandate_core::check_naming(&ancestor, &agent, |id| {
        registered(conn, org, id.as_str()).map(|r| r.map(|r| r.parent))
    })?;
    Ok(naming == Ok(mandate_core::Naming::Within))
}

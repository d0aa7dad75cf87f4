//! The trust graph: how far an organisation trusts each of its agents, from
//! the agent's reputation and the vouches it receives, weighted by the
//! vouchers' own trust, with the organisation's humans as the seed.
//!
//! # For the host and the SDK (the helpers to call)
//!
//! - [`trust_scores`]`(graph, now, params)` computes every agent's
//!   [`TrustScore`] of one organisation; the host keeps the map in memory
//!   and looks an agent up in O(1).
//! - [`trust_floor`]`(constraints)` is the `constraints.min_trust` a token
//!   carries (`None`: no requirement). Narrowing keeps a child's floor at
//!   or above its parent's, so the acting token's own floor is the chain's.
//! - [`meets_trust_floor`]`(constraints, trust)` says whether an agent of
//!   `trust` (`None`: the agent has no score yet, judged as 0) may act under
//!   them; `false` is a denied record with reason
//!   [`DenyReason::TrustTooLow`](crate::DenyReason::TrustTooLow), checked
//!   after token standing and scope, before budgets and approval.
//!
//! # The rule
//!
//! Inputs, per organisation ([`TrustGraph`]): its agents ([`AgentInput`]:
//! reputation `r` in [0, 1], when it was created and by which human, when it
//! was last active, whether some token of it was issued by a human, and
//! which agents delegated to it) and its vouches ([`VouchInput`]: a human or
//! an agent vouches for an agent with a weight `w` in (0, 1] and an optional
//! expiry). Parameters ([`TrustParams`]): damping `d` = 0.85, reputation
//! weight `β` = 0.5, decay half-life 30 days, sybil window 7 days.
//!
//! - A vouch is active when it has no expiry or its expiry is after `now`.
//!   Self-vouches and vouches for agents outside the graph are ignored; two
//!   active vouches of one voucher for one agent count as its strongest.
//! - A voucher's source strength `s`: a human 1; an agent `v`:
//!   `s_v = g_v · r_v` (its graph trust times its reputation), so an agent
//!   no human path reaches (`g = 0`) gives nothing.
//! - Sybil damping: for a target, the agent vouchers created less than the
//!   sybil window before `now` are grouped by the human who created them;
//!   each group contributes only its strongest term. Other vouchers count
//!   one term each.
//! - Graph trust: `g_A = 1 − Π_terms (1 − d · s_v · w_vA)`.
//! - Decay with inactivity:
//!   `decay_A = 0.5^(max(0, now − (last_active or created_at)) / half_life)`.
//! - Ceiling: `ceiling_A = 1` when the agent has a root token (issued by a
//!   human); otherwise the largest trust of its delegators in the graph (0
//!   when none is). The largest, not the smallest: whoever may delegate can
//!   name an existing agent as a child, and the smallest would let them
//!   lower its trust.
//! - Trust: `T_A = min(ceiling_A, decay_A · (β · r_A + (1 − β) · g_A))`.
//!
//! Solved by iteration from `g = 0` and `T = 0` for every agent: each round
//! recomputes every `g` from the previous round's, then every `T` from the
//! new `g` and the previous round's `T`, until no `g` or `T` moves by
//! `tolerance` or more, or `max_iterations` rounds have run. Every step is
//! monotone, so the values climb to the least fixed point: a ring of agents
//! no human reaches stays at `g = 0` whatever they say of each other.
//!
//! Laws (tested with proptest below): an agent vouched only by agents no
//! human reaches gains nothing; withdrawing a vouch never raises anyone's
//! trust; a non-root agent's trust is at most its delegators' largest; every
//! value lies in [0, 1].
//!
//! Deliberately absent: normalising a voucher's weights by its out-weight
//! (as EigenTrust does). It would make withdrawing one vouch raise the
//! others that voucher gives, breaking the second law; so an agent that
//! vouches for many agents lends each its full strength.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::ids::{AgentId, HumanRef, KeyId};
use crate::scope::Constraints;

/// Seconds in a day, for the parameters given in days.
const SECONDS_PER_DAY: f64 = 86_400.0;

/// Who vouches: a verified person of the organisation by the API key they
/// vouched with, or an agent.
///
/// On the wire `{"kind":"human","key_id":"key_…"}` or
/// `{"kind":"agent","agent_id":"…"}`. Read through a flat struct rather than
/// serde's internally tagged enums, whose buffering costs the wasm module
/// tens of kilobytes.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(
    tag = "kind",
    rename_all = "snake_case",
    deny_unknown_fields,
    try_from = "RawVoucher"
)]
pub enum Voucher {
    /// A human, by the id of the API key (`key_…`) that vouched.
    Human { key_id: KeyId },
    /// An agent of the organisation.
    Agent { agent_id: AgentId },
}

#[derive(Deserialize)]
#[serde(rename_all = "snake_case")]
enum VoucherKind {
    Human,
    Agent,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawVoucher {
    kind: VoucherKind,
    #[serde(default)]
    key_id: Option<KeyId>,
    #[serde(default)]
    agent_id: Option<AgentId>,
}

impl TryFrom<RawVoucher> for Voucher {
    type Error = &'static str;
    fn try_from(raw: RawVoucher) -> Result<Voucher, &'static str> {
        match (raw.kind, raw.key_id, raw.agent_id) {
            (VoucherKind::Human, Some(key_id), None) => Ok(Voucher::Human { key_id }),
            (VoucherKind::Agent, None, Some(agent_id)) => Ok(Voucher::Agent { agent_id }),
            (VoucherKind::Human, _, _) => Err("a human voucher has key_id and nothing else"),
            (VoucherKind::Agent, _, _) => Err("an agent voucher has agent_id and nothing else"),
        }
    }
}

/// One agent of the organisation, as the trust rule sees it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentInput {
    pub agent_id: AgentId,
    /// Its combined reputation, in [0, 1] ([`crate::reputation`]).
    pub reputation: f64,
    /// Unix seconds: when its first token was issued.
    pub created_at: i64,
    /// The human at the root of its first token (`svc_human`).
    pub creator: HumanRef,
    /// Unix seconds of its latest record; `None`: it has none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_active: Option<i64>,
    /// Whether some token of it was issued by a human (depth 0).
    pub has_root: bool,
    /// The agents whose tokens delegated to it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub delegators: Vec<AgentId>,
}

/// One vouch, withdrawn ones left out by the caller.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VouchInput {
    pub voucher: Voucher,
    pub target: AgentId,
    /// In (0, 1].
    pub weight: f64,
    /// Unix seconds after which the vouch no longer counts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<i64>,
}

/// An organisation's agents and vouches.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TrustGraph {
    pub agents: Vec<AgentInput>,
    #[serde(default)]
    pub vouches: Vec<VouchInput>,
}

/// The rule's parameters. Each member left out takes its default.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TrustParams {
    /// `d`, in [0, 1]: how much of a voucher's strength a vouch passes on.
    pub damping: f64,
    /// `β`, in [0, 1]: the share of reputation in trust (the rest is graph).
    pub reputation_weight: f64,
    /// Days of inactivity that halve trust; more than 0.
    pub half_life_days: f64,
    /// Agents created less than this many days ago are grouped by creator
    /// when they vouch; 0 or more.
    pub sybil_window_days: f64,
    /// Most rounds of iteration.
    pub max_iterations: u32,
    /// The iteration stops when no value moves by this much; 0 or more.
    pub tolerance: f64,
}

impl Default for TrustParams {
    fn default() -> TrustParams {
        TrustParams {
            damping: 0.85,
            reputation_weight: 0.5,
            half_life_days: 30.0,
            sybil_window_days: 7.0,
            max_iterations: 100,
            tolerance: 1e-9,
        }
    }
}

/// One agent's trust and its parts, each in [0, 1].
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TrustScore {
    /// `T`: the trust in force.
    pub trust: f64,
    /// `r`: its reputation, as given.
    pub reputation: f64,
    /// `g`: what the vouches it receives give.
    pub graph: f64,
    /// What inactivity leaves of it (1: active now).
    pub decay: f64,
    /// The most its delegators let it have (1 with a root token).
    pub ceiling: f64,
    /// The active vouches it receives, counted after sybil grouping (a
    /// group of fresh agents of one creator counts once), whatever their
    /// strength.
    pub vouchers: u32,
}

/// Why a trust graph could not be scored.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum TrustError {
    #[error("a vouch's weight must be a number in (0, 1]")]
    InvalidWeight,
    #[error("agent `{0}`'s reputation must be a number in [0, 1]")]
    InvalidReputation(AgentId),
    #[error("agent `{0}` appears twice in the graph")]
    DuplicateAgent(AgentId),
    #[error("parameter `{0}` is out of range")]
    InvalidParams(&'static str),
}

impl TrustError {
    /// Stable snake_case code for this error.
    pub fn code(&self) -> &'static str {
        match self {
            TrustError::InvalidWeight => "invalid_weight",
            TrustError::InvalidReputation(_) => "invalid_reputation",
            TrustError::DuplicateAgent(_) => "duplicate_agent",
            TrustError::InvalidParams(_) => "invalid_trust_params",
        }
    }
}

/// The `constraints.min_trust` of a token: the least trust its agent must
/// hold to act with it; `None` when it sets none.
pub fn trust_floor(constraints: Option<&Constraints>) -> Option<f64> {
    constraints
        .and_then(|c| c.min_trust)
        .map(crate::scope::MinTrust::get)
}

/// Whether an agent of `trust` may act under `constraints`. An agent
/// without a score (`None`) is judged as trust 0, so it meets only a floor
/// of 0.
pub fn meets_trust_floor(constraints: Option<&Constraints>, trust: Option<f64>) -> bool {
    match trust_floor(constraints) {
        None => true,
        Some(floor) => trust.unwrap_or(0.0) >= floor,
    }
}

fn unit(value: f64) -> bool {
    (0.0..=1.0).contains(&value)
}

fn check_params(params: &TrustParams) -> Result<(), TrustError> {
    if !unit(params.damping) {
        return Err(TrustError::InvalidParams("damping"));
    }
    if !unit(params.reputation_weight) {
        return Err(TrustError::InvalidParams("reputation_weight"));
    }
    if !(params.half_life_days.is_finite() && params.half_life_days > 0.0) {
        return Err(TrustError::InvalidParams("half_life_days"));
    }
    if !(params.sybil_window_days.is_finite() && params.sybil_window_days >= 0.0) {
        return Err(TrustError::InvalidParams("sybil_window_days"));
    }
    if !(params.tolerance.is_finite() && params.tolerance >= 0.0) {
        return Err(TrustError::InvalidParams("tolerance"));
    }
    Ok(())
}

/// One agent voucher's term for one target: the voucher's index, the
/// weight, and the group it counts in (`None`: on its own).
#[derive(Debug, Clone, Copy)]
struct AgentTerm {
    voucher: usize,
    weight: f64,
    group: Option<usize>,
}

/// The graph indexed for the iteration.
struct Indexed {
    /// Per target: `Π (1 − d · w)` over its human vouchers.
    human_product: Vec<f64>,
    /// Per target: its agent terms, those of one group next to each other.
    agent_terms: Vec<Vec<AgentTerm>>,
    /// Per agent: the indexes of its delegators in the graph.
    delegators: Vec<Vec<usize>>,
    /// Per agent: the terms counted after grouping.
    vouchers: Vec<u32>,
}

fn index(
    graph: &TrustGraph,
    now: i64,
    params: &TrustParams,
    ids: &BTreeMap<&AgentId, usize>,
) -> Result<Indexed, TrustError> {
    let count = graph.agents.len();
    let window = params.sybil_window_days * SECONDS_PER_DAY;
    // Creators of fresh agents, interned: the group of a fresh voucher.
    let mut creators: BTreeMap<&HumanRef, usize> = BTreeMap::new();
    let mut group_of: Vec<Option<usize>> = Vec::with_capacity(count);
    for agent in &graph.agents {
        let age = now.saturating_sub(agent.created_at) as f64;
        group_of.push(if age < window {
            let next = creators.len();
            Some(*creators.entry(&agent.creator).or_insert(next))
        } else {
            None
        });
    }
    // The strongest active vouch per (voucher, target).
    let mut humans: BTreeMap<(usize, &KeyId), f64> = BTreeMap::new();
    let mut agents: BTreeMap<(usize, usize), f64> = BTreeMap::new();
    for vouch in &graph.vouches {
        if !(vouch.weight > 0.0 && vouch.weight <= 1.0) {
            return Err(TrustError::InvalidWeight);
        }
        if vouch.expires_at.is_some_and(|at| at <= now) {
            continue;
        }
        let Some(&target) = ids.get(&vouch.target) else {
            continue;
        };
        match &vouch.voucher {
            Voucher::Human { key_id } => {
                let weight = humans.entry((target, key_id)).or_insert(0.0);
                *weight = weight.max(vouch.weight);
            }
            Voucher::Agent { agent_id } => {
                let Some(&voucher) = ids.get(agent_id) else {
                    continue;
                };
                if voucher == target {
                    continue;
                }
                let weight = agents.entry((target, voucher)).or_insert(0.0);
                *weight = weight.max(vouch.weight);
            }
        }
    }
    let mut human_product = vec![1.0; count];
    let mut vouchers = vec![0u32; count];
    for ((target, _), weight) in humans {
        if let Some(product) = human_product.get_mut(target) {
            *product *= 1.0 - params.damping * weight;
        }
        if let Some(n) = vouchers.get_mut(target) {
            *n = n.saturating_add(1);
        }
    }
    let mut agent_terms: Vec<Vec<AgentTerm>> = vec![Vec::new(); count];
    for ((target, voucher), weight) in agents {
        let group = group_of.get(voucher).copied().flatten();
        if let Some(terms) = agent_terms.get_mut(target) {
            terms.push(AgentTerm {
                voucher,
                weight,
                group,
            });
        }
    }
    for (terms, n) in agent_terms.iter_mut().zip(vouchers.iter_mut()) {
        // Ungrouped terms first, then each group's terms together.
        terms.sort_by_key(|term| (term.group, term.voucher));
        let mut last_group = None;
        for term in terms.iter() {
            if term.group.is_none() || term.group != last_group {
                *n = n.saturating_add(1);
            }
            last_group = term.group;
        }
    }
    let delegators = graph
        .agents
        .iter()
        .map(|agent| {
            let mut list: Vec<usize> = agent
                .delegators
                .iter()
                .filter_map(|id| ids.get(id).copied())
                .collect();
            list.sort_unstable();
            list.dedup();
            list
        })
        .collect();
    Ok(Indexed {
        human_product,
        agent_terms,
        delegators,
        vouchers,
    })
}

/// `g` of one target from the previous round's strengths.
fn graph_trust(human_product: f64, terms: &[AgentTerm], strength: &[f64], damping: f64) -> f64 {
    let mut product = human_product;
    let mut group: Option<usize> = None;
    // The strongest term of the current group, not yet multiplied in.
    let mut pending = 0.0f64;
    for term in terms {
        let value = damping * strength.get(term.voucher).copied().unwrap_or(0.0) * term.weight;
        match term.group {
            None => product *= 1.0 - value,
            Some(_) if term.group == group => pending = pending.max(value),
            Some(_) => {
                product *= 1.0 - pending;
                group = term.group;
                pending = value;
            }
        }
    }
    product *= 1.0 - pending;
    (1.0 - product).clamp(0.0, 1.0)
}

/// Every agent's trust in the organisation `graph` describes, at `now`
/// (unix seconds). See the module's documentation for the rule.
pub fn trust_scores(
    graph: &TrustGraph,
    now: i64,
    params: &TrustParams,
) -> Result<BTreeMap<AgentId, TrustScore>, TrustError> {
    check_params(params)?;
    let mut ids: BTreeMap<&AgentId, usize> = BTreeMap::new();
    for (i, agent) in graph.agents.iter().enumerate() {
        if !unit(agent.reputation) {
            return Err(TrustError::InvalidReputation(agent.agent_id.clone()));
        }
        if ids.insert(&agent.agent_id, i).is_some() {
            return Err(TrustError::DuplicateAgent(agent.agent_id.clone()));
        }
    }
    let indexed = index(graph, now, params, &ids)?;
    let half_life = params.half_life_days * SECONDS_PER_DAY;
    let beta = params.reputation_weight;
    let decay: Vec<f64> = graph
        .agents
        .iter()
        .map(|agent| {
            let since = agent.last_active.unwrap_or(agent.created_at);
            let idle = now.saturating_sub(since).max(0) as f64;
            0.5f64.powf(idle / half_life).clamp(0.0, 1.0)
        })
        .collect();
    let count = graph.agents.len();
    let mut g = vec![0.0f64; count];
    let mut t = vec![0.0f64; count];
    let mut ceiling = vec![0.0f64; count];
    let mut strength = vec![0.0f64; count];
    for _ in 0..params.max_iterations {
        let mut moved = 0.0f64;
        for (i, agent) in graph.agents.iter().enumerate() {
            if let Some(s) = strength.get_mut(i) {
                *s = g.get(i).copied().unwrap_or(0.0) * agent.reputation;
            }
        }
        let next_g: Vec<f64> = indexed
            .agent_terms
            .iter()
            .zip(&indexed.human_product)
            .map(|(terms, human)| graph_trust(*human, terms, &strength, params.damping))
            .collect();
        let mut next_t = vec![0.0f64; count];
        for (i, agent) in graph.agents.iter().enumerate() {
            let cap = if agent.has_root {
                1.0
            } else {
                indexed
                    .delegators
                    .get(i)
                    .into_iter()
                    .flatten()
                    .filter_map(|&d| t.get(d).copied())
                    .fold(0.0f64, f64::max)
            };
            let gi = next_g.get(i).copied().unwrap_or(0.0);
            let di = decay.get(i).copied().unwrap_or(0.0);
            let value = (di * (beta * agent.reputation + (1.0 - beta) * gi))
                .min(cap)
                .clamp(0.0, 1.0);
            if let Some(slot) = next_t.get_mut(i) {
                *slot = value;
            }
            if let Some(slot) = ceiling.get_mut(i) {
                *slot = cap;
            }
        }
        for (old, new) in g.iter().zip(&next_g).chain(t.iter().zip(&next_t)) {
            moved = moved.max((new - old).abs());
        }
        g = next_g;
        t = next_t;
        if moved < params.tolerance {
            break;
        }
    }
    let mut scores = BTreeMap::new();
    for (i, agent) in graph.agents.iter().enumerate() {
        scores.insert(
            agent.agent_id.clone(),
            TrustScore {
                trust: t.get(i).copied().unwrap_or(0.0),
                reputation: agent.reputation,
                graph: g.get(i).copied().unwrap_or(0.0),
                decay: decay.get(i).copied().unwrap_or(0.0),
                ceiling: ceiling.get(i).copied().unwrap_or(0.0),
                vouchers: indexed.vouchers.get(i).copied().unwrap_or(0),
            },
        );
    }
    Ok(scores)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const NOW: i64 = 1_750_000_000;
    const DAY: i64 = 86_400;

    fn id(text: &str) -> AgentId {
        AgentId::parse(text).unwrap()
    }

    fn human(n: u8) -> HumanRef {
        HumanRef::from_digest(&[n; 32])
    }

    fn key(n: u8) -> KeyId {
        KeyId::parse(&format!("key_01j{:0>23}", n)).unwrap()
    }

    /// An old, active, root agent of creator 1.
    fn agent(name: &str, reputation: f64) -> AgentInput {
        AgentInput {
            agent_id: id(name),
            reputation,
            created_at: NOW - 100 * DAY,
            creator: human(1),
            last_active: Some(NOW),
            has_root: true,
            delegators: Vec::new(),
        }
    }

    fn by_human(n: u8, target: &str, weight: f64) -> VouchInput {
        VouchInput {
            voucher: Voucher::Human { key_id: key(n) },
            target: id(target),
            weight,
            expires_at: None,
        }
    }

    fn by_agent(voucher: &str, target: &str, weight: f64) -> VouchInput {
        VouchInput {
            voucher: Voucher::Agent {
                agent_id: id(voucher),
            },
            target: id(target),
            weight,
            expires_at: None,
        }
    }

    fn scores(graph: &TrustGraph) -> BTreeMap<AgentId, TrustScore> {
        trust_scores(graph, NOW, &TrustParams::default()).unwrap()
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9
    }

    #[test]
    fn an_agent_alone_has_half_its_reputation() {
        let graph = TrustGraph {
            agents: vec![agent("a", 0.8)],
            vouches: vec![],
        };
        let a = scores(&graph)[&id("a")];
        assert!(close(a.trust, 0.4), "{a:?}");
        assert_eq!(
            (a.graph, a.decay, a.ceiling, a.vouchers),
            (0.0, 1.0, 1.0, 0)
        );
    }

    #[test]
    fn a_human_vouch_gives_damped_weight() {
        let graph = TrustGraph {
            agents: vec![agent("a", 0.5)],
            vouches: vec![by_human(1, "a", 1.0)],
        };
        let a = scores(&graph)[&id("a")];
        assert!(close(a.graph, 0.85), "{a:?}");
        assert!(close(a.trust, 0.5 * 0.5 + 0.5 * 0.85));
        assert_eq!(a.vouchers, 1);
    }

    #[test]
    fn an_agent_passes_on_its_graph_trust_times_reputation() {
        let graph = TrustGraph {
            agents: vec![agent("a", 0.8), agent("b", 0.5)],
            vouches: vec![by_human(1, "a", 1.0), by_agent("a", "b", 0.5)],
        };
        let s = scores(&graph);
        assert!(close(s[&id("b")].graph, 0.85 * (0.85 * 0.8) * 0.5));
    }

    #[test]
    fn a_ring_no_human_reaches_gains_nothing() {
        let names: Vec<String> = (0..10).map(|i| format!("ring{i}")).collect();
        let mut agents: Vec<AgentInput> = names.iter().map(|n| agent(n, 1.0)).collect();
        agents.push(agent("target", 0.5));
        let mut vouches = Vec::new();
        for a in &names {
            for b in &names {
                vouches.push(by_agent(a, b, 1.0));
            }
            vouches.push(by_agent(a, "target", 1.0));
        }
        let s = scores(&TrustGraph { agents, vouches });
        for score in s.values() {
            assert_eq!(score.graph, 0.0);
        }
        assert!(close(s[&id("target")].trust, 0.25));
    }

    #[test]
    fn fresh_agents_of_one_creator_count_once() {
        let mut agents = vec![agent("target", 0.5)];
        let mut vouches = Vec::new();
        for i in 0..5 {
            let name = format!("fresh{i}");
            let mut fresh = agent(&name, 1.0);
            fresh.created_at = NOW - DAY;
            agents.push(fresh);
            vouches.push(by_human(1, &name, 1.0));
            vouches.push(by_agent(&name, "target", 1.0));
        }
        let s = scores(&TrustGraph {
            agents: agents.clone(),
            vouches: vouches.clone(),
        });
        let t = s[&id("target")];
        assert_eq!(t.vouchers, 1);
        assert!(close(t.graph, 0.85 * 0.85));
        // The same agents, old enough, count one each.
        for a in agents.iter_mut() {
            a.created_at = NOW - 30 * DAY;
        }
        let s = scores(&TrustGraph { agents, vouches });
        assert_eq!(s[&id("target")].vouchers, 5);
        assert!(s[&id("target")].graph > 0.99);
    }

    #[test]
    fn ceilings_follow_a_delegation_chain() {
        let mut b = agent("b", 1.0);
        b.has_root = false;
        b.delegators = vec![id("a")];
        let mut c = agent("c", 1.0);
        c.has_root = false;
        c.delegators = vec![id("b")];
        let graph = TrustGraph {
            agents: vec![agent("a", 0.2), b, c],
            vouches: vec![by_human(1, "c", 1.0)],
        };
        let s = scores(&graph);
        assert!(close(s[&id("a")].trust, 0.1));
        assert!(close(s[&id("b")].ceiling, 0.1));
        assert!(close(s[&id("b")].trust, 0.1));
        assert!(close(s[&id("c")].trust, 0.1));
        // An orphan without root is held at 0.
        let mut orphan = agent("o", 1.0);
        orphan.has_root = false;
        let s = scores(&TrustGraph {
            agents: vec![orphan],
            vouches: vec![],
        });
        assert_eq!(s[&id("o")].trust, 0.0);
    }

    #[test]
    fn inactivity_halves_trust_every_half_life() {
        let mut a = agent("a", 1.0);
        a.last_active = Some(NOW - 30 * DAY);
        let s = scores(&TrustGraph {
            agents: vec![a],
            vouches: vec![],
        });
        assert!(close(s[&id("a")].decay, 0.5));
        assert!(close(s[&id("a")].trust, 0.25));
    }

    #[test]
    fn expired_self_and_outside_vouches_count_nothing() {
        let mut expired = by_human(1, "a", 1.0);
        expired.expires_at = Some(NOW);
        let graph = TrustGraph {
            agents: vec![agent("a", 1.0)],
            vouches: vec![expired, by_agent("a", "a", 1.0), by_human(2, "zz", 1.0)],
        };
        let a = scores(&graph)[&id("a")];
        assert_eq!((a.graph, a.vouchers), (0.0, 0));
    }

    #[test]
    fn bad_inputs_are_refused() {
        for weight in [0.0, -0.1, 1.5, f64::NAN] {
            let graph = TrustGraph {
                agents: vec![agent("a", 1.0)],
                vouches: vec![by_human(1, "a", weight)],
            };
            let error = trust_scores(&graph, NOW, &TrustParams::default()).unwrap_err();
            assert_eq!(error.code(), "invalid_weight");
        }
        let graph = TrustGraph {
            agents: vec![agent("a", 1.5)],
            vouches: vec![],
        };
        assert_eq!(
            trust_scores(&graph, NOW, &TrustParams::default())
                .unwrap_err()
                .code(),
            "invalid_reputation"
        );
        let graph = TrustGraph {
            agents: vec![agent("a", 1.0), agent("a", 0.5)],
            vouches: vec![],
        };
        assert_eq!(
            trust_scores(&graph, NOW, &TrustParams::default())
                .unwrap_err()
                .code(),
            "duplicate_agent"
        );
        let params = TrustParams {
            half_life_days: 0.0,
            ..TrustParams::default()
        };
        assert_eq!(
            trust_scores(&TrustGraph::default(), NOW, &params)
                .unwrap_err()
                .code(),
            "invalid_trust_params"
        );
    }

    #[test]
    fn the_wire_form() {
        let vouch: VouchInput = serde_json::from_value(serde_json::json!({
            "voucher": {"kind": "human", "key_id": key(1).as_str()},
            "target": "a",
            "weight": 0.5
        }))
        .unwrap();
        assert_eq!(vouch, by_human(1, "a", 0.5));
        let agent_voucher = serde_json::json!({"kind": "agent", "agent_id": "b"});
        assert_eq!(
            serde_json::from_value::<Voucher>(agent_voucher.clone()).unwrap(),
            Voucher::Agent { agent_id: id("b") }
        );
        assert_eq!(
            serde_json::to_value(Voucher::Agent { agent_id: id("b") }).unwrap(),
            agent_voucher
        );
        let mut unknown = agent_voucher.clone();
        unknown["extra"] = serde_json::json!(1);
        assert!(serde_json::from_value::<Voucher>(unknown).is_err());
        let mut both = agent_voucher;
        both["key_id"] = serde_json::json!(key(1).as_str());
        assert!(serde_json::from_value::<Voucher>(both).is_err());
        let params: TrustParams =
            serde_json::from_value(serde_json::json!({"damping": 0.5})).unwrap();
        assert_eq!(params.damping, 0.5);
        assert_eq!(params.half_life_days, 30.0);
        assert!(serde_json::from_value::<TrustParams>(serde_json::json!({"d": 1})).is_err());
    }

    #[test]
    fn floors() {
        let none = Constraints::default();
        let strict = Constraints {
            min_trust: Some(crate::scope::MinTrust::new(0.6).unwrap()),
            ..Constraints::default()
        };
        assert_eq!(trust_floor(None), None);
        assert_eq!(trust_floor(Some(&none)), None);
        assert_eq!(trust_floor(Some(&strict)), Some(0.6));
        assert!(meets_trust_floor(Some(&none), None));
        assert!(meets_trust_floor(Some(&strict), Some(0.6)));
        assert!(!meets_trust_floor(Some(&strict), Some(0.59)));
        assert!(!meets_trust_floor(Some(&strict), None));
    }

    // ---- laws ----

    /// A random organisation: `n` agents, some fresh, some without root
    /// (delegated by an earlier agent), vouches by humans and agents.
    fn arb_graph() -> impl Strategy<Value = TrustGraph> {
        (2usize..9).prop_flat_map(|n| {
            let agents = proptest::collection::vec(
                (
                    0.0f64..=1.0,
                    0i64..20,
                    0u8..3,
                    proptest::option::of(0i64..90),
                    any::<bool>(),
                    proptest::collection::vec(0usize..n, 0..3),
                ),
                n,
            );
            let vouches = proptest::collection::vec(
                (
                    proptest::option::of(0u8..3),
                    0usize..n,
                    0usize..n,
                    0.01f64..=1.0,
                    proptest::option::of(-5i64..5),
                ),
                0..20,
            );
            (agents, vouches).prop_map(|(agents, vouches)| {
                let agents = agents
                    .into_iter()
                    .enumerate()
                    .map(
                        |(i, (r, age, creator, idle, root, delegators))| AgentInput {
                            agent_id: id(&format!("a{i}")),
                            reputation: r,
                            created_at: NOW - age * DAY,
                            creator: human(creator),
                            last_active: idle.map(|d| NOW - d * DAY),
                            has_root: root || i == 0,
                            delegators: delegators
                                .into_iter()
                                .filter(|d| *d < i)
                                .map(|d| id(&format!("a{d}")))
                                .collect(),
                        },
                    )
                    .collect();
                let vouches = vouches
                    .into_iter()
                    .map(|(by, from, to, weight, exp)| VouchInput {
                        voucher: match by {
                            Some(k) => Voucher::Human { key_id: key(k) },
                            None => Voucher::Agent {
                                agent_id: id(&format!("a{from}")),
                            },
                        },
                        target: id(&format!("a{to}")),
                        weight,
                        expires_at: exp.map(|d| NOW + d * DAY),
                    })
                    .collect();
                TrustGraph { agents, vouches }
            })
        })
    }

    /// Agents no human vouch reaches, following active agent vouches.
    fn unreached(graph: &TrustGraph) -> Vec<AgentId> {
        let mut reached: std::collections::BTreeSet<AgentId> = graph
            .vouches
            .iter()
            .filter(|v| matches!(v.voucher, Voucher::Human { .. }))
            .filter(|v| v.expires_at.is_none_or(|at| at > NOW))
            .map(|v| v.target.clone())
            .collect();
        loop {
            let before = reached.len();
            for v in &graph.vouches {
                if let Voucher::Agent { agent_id } = &v.voucher
                    && reached.contains(agent_id)
                    && v.expires_at.is_none_or(|at| at > NOW)
                {
                    reached.insert(v.target.clone());
                }
            }
            if reached.len() == before {
                break;
            }
        }
        graph
            .agents
            .iter()
            .map(|a| a.agent_id.clone())
            .filter(|a| !reached.contains(a))
            .collect()
    }

    proptest! {
        #[test]
        fn every_value_is_in_the_unit_interval(graph in arb_graph()) {
            for score in scores(&graph).values() {
                for value in [score.trust, score.reputation, score.graph, score.decay, score.ceiling] {
                    prop_assert!((0.0..=1.0).contains(&value), "{score:?}");
                }
            }
        }

        #[test]
        fn a_non_root_agent_stays_under_its_delegators(graph in arb_graph()) {
            let s = scores(&graph);
            for agent in graph.agents.iter().filter(|a| !a.has_root) {
                let cap = agent
                    .delegators
                    .iter()
                    .filter_map(|d| s.get(d))
                    .map(|d| d.trust)
                    .fold(0.0f64, f64::max);
                prop_assert!(s[&agent.agent_id].trust <= cap + 1e-9);
            }
        }

        #[test]
        fn withdrawing_a_vouch_never_raises_trust(graph in arb_graph(), pick in any::<proptest::sample::Index>()) {
            prop_assume!(!graph.vouches.is_empty());
            let before = scores(&graph);
            let mut less = graph.clone();
            less.vouches.remove(pick.index(graph.vouches.len()));
            let after = scores(&less);
            for (agent, score) in &after {
                prop_assert!(score.trust <= before[agent].trust + 1e-9, "{agent}");
                prop_assert!(score.graph <= before[agent].graph + 1e-9, "{agent}");
            }
        }

        #[test]
        fn vouches_of_agents_no_human_reaches_give_nothing(graph in arb_graph(), weights in proptest::collection::vec(0.01f64..=1.0, 1..6)) {
            let sybils = unreached(&graph);
            prop_assume!(!sybils.is_empty());
            let mut with_new = graph.clone();
            let mut new = agent("newcomer", 0.3);
            new.created_at = NOW;
            new.last_active = None;
            with_new.agents.push(new);
            let without = scores(&with_new);
            for (sybil, weight) in sybils.iter().cycle().zip(weights) {
                with_new.vouches.push(by_agent(sybil.as_str(), "newcomer", weight));
            }
            let with = scores(&with_new);
            prop_assert_eq!(with[&id("newcomer")].trust, without[&id("newcomer")].trust);
            prop_assert_eq!(with[&id("newcomer")].graph, 0.0);
        }
    }
}

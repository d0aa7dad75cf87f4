//! The trust in force: each organisation's trust scores (core's
//! `trust_scores` over what `crate::store::trust::graph_of` reads), kept in
//! memory so a call looks its agent up in O(1) (a hash lookup of the
//! organisation, then of the agent), never walking the graph.
//!
//! A write that changes the rule's inputs — a vouch or its withdrawal, a
//! record (reputation counts, activity), a rating, a token — marks its
//! organisation stale when its group commits (the ledger, which also reads
//! these scores to judge `min_trust`). One background task, [`recompute`],
//! recomputes the stale organisations at most every [`DEBOUNCE`] (many
//! changes in that window cost one recomputation), every organisation at
//! start, and any whose scores are older than [`MAX_AGE`] (decay moves
//! with time alone, and on PostgreSQL another host's writes mark nothing
//! here). Each score carries `computed_at`, the server time it was computed
//! at; until the first computation of an organisation, or for an agent its
//! scores do not hold yet, [`Board::trust_of_new`] gives what the rule gives
//! a new agent.
//!
//! Cost, measured with `cargo test --release -p mandate-host --lib
//! trust::tests::recompute_cost -- --nocapture` (SQLite, 2 cores): at
//! 10,000 agents and 100,000 vouches a recomputation reads its inputs in
//! some 145 ms and scores them in some 60 ms, off the request path; a
//! call's lookup stays two hash lookups.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use mandate_core::trust::{AgentInput, TrustGraph, TrustParams, TrustScore, trust_scores};
use mandate_core::{AgentId, HumanRef, ReputationCounts, reputation};

use crate::AppState;
use crate::clock::Now;
use crate::store::StoreError;
use crate::store::orgs::Org;

/// The shortest time between two recomputations of stale organisations.
pub const DEBOUNCE: Duration = Duration::from_millis(250);

/// Scores older than this are computed again even when nothing marked
/// their organisation stale.
pub const MAX_AGE: Duration = Duration::from_secs(60);

/// One organisation's scores.
#[derive(Debug, Clone)]
pub struct OrgTrust {
    /// Server time (unix ms) of the computation.
    pub computed_at: i64,
    /// By agent id, in order (pages of the graph walk it).
    pub scores: BTreeMap<String, TrustScore>,
    /// The same scores by agent id, for the O(1) lookup.
    index: HashMap<String, TrustScore>,
    /// The agents with a history of their own (a record made by them):
    /// the others count as their delegator's in a chain's trust in force.
    active: HashSet<String>,
}

impl OrgTrust {
    /// Scores computed at `computed_at` of the graph `graph`.
    pub fn new(
        computed_at: i64,
        graph: &TrustGraph,
        scores: BTreeMap<AgentId, TrustScore>,
    ) -> OrgTrust {
        let active = graph
            .agents
            .iter()
            .filter(|agent| agent.last_active.is_some())
            .map(|agent| agent.agent_id.as_str().to_owned())
            .collect();
        let scores: BTreeMap<String, TrustScore> = scores
            .into_iter()
            .map(|(agent, score)| (agent.as_str().to_owned(), score))
            .collect();
        let index = scores
            .iter()
            .map(|(agent, score)| (agent.clone(), *score))
            .collect();
        OrgTrust {
            computed_at,
            scores,
            index,
            active,
        }
    }

    /// Whether the agent has a history of its own: a record it made, as of
    /// the computation.
    pub fn has_history(&self, agent_id: &str) -> bool {
        self.active.contains(agent_id)
    }

    /// The agent's score, if the computation knew it.
    pub fn get(&self, agent_id: &str) -> Option<&TrustScore> {
        self.index.get(agent_id)
    }
}

/// Every organisation's scores and which are stale.
#[derive(Debug, Default)]
pub struct Board {
    orgs: RwLock<HashMap<Org, Arc<OrgTrust>>>,
    stale: Mutex<HashSet<Org>>,
    wake: tokio::sync::Notify,
}

impl Board {
    /// Marks organisations' inputs changed: the recomputation task wakes.
    pub fn mark_stale(&self, orgs: impl IntoIterator<Item = Org>) {
        let mut any = false;
        if let Ok(mut stale) = self.stale.lock() {
            for org in orgs {
                any |= stale.insert(org);
            }
        }
        if any {
            self.wake.notify_one();
        }
    }

    fn take_stale(&self) -> Vec<Org> {
        self.stale
            .lock()
            .map(|mut stale| stale.drain().collect())
            .unwrap_or_default()
    }

    /// The organisation's scores, once computed.
    pub fn org(&self, org: Org) -> Option<Arc<OrgTrust>> {
        self.orgs.read().ok()?.get(&org).cloned()
    }

    fn put(&self, org: Org, scores: OrgTrust) {
        if let Ok(mut orgs) = self.orgs.write() {
            orgs.insert(org, Arc::new(scores));
        }
    }

    fn known(&self) -> Vec<(Org, i64)> {
        self.orgs
            .read()
            .map(|orgs| orgs.iter().map(|(org, t)| (*org, t.computed_at)).collect())
            .unwrap_or_default()
    }

    /// The agent's score in force, if its organisation's scores hold it.
    pub fn score(&self, org: Org, agent_id: &str) -> Option<TrustScore> {
        self.orgs.read().ok()?.get(&org)?.get(agent_id).copied()
    }

    /// The trust the rule gives an agent the scores do not hold yet, at
    /// `now_s`: a new agent with no records and no vouches — with a root
    /// token (`ceiling` 1), or delegated, its ceiling the trust of the
    /// agent that delegated to it (`ceiling`).
    pub fn trust_of_new(ceiling: f64, now_s: i64) -> f64 {
        new_agent_score(now_s).map_or(0.0, |score| score.trust.min(ceiling))
    }
}

/// The score the rule gives a new agent with a root token at `now_s`.
fn new_agent_score(now_s: i64) -> Option<TrustScore> {
    let agent = AgentId::parse("new-agent").ok()?;
    let graph = TrustGraph {
        agents: vec![AgentInput {
            agent_id: agent.clone(),
            reputation: reputation(&ReputationCounts::default()).combined_reputation,
            created_at: now_s,
            creator: HumanRef::from_digest(&[0; 32]),
            last_active: None,
            has_root: true,
            delegators: Vec::new(),
        }],
        vouches: Vec::new(),
    };
    trust_scores(&graph, now_s, &TrustParams::default())
        .ok()?
        .remove(&agent)
}

/// Reads an organisation's inputs and computes its scores at `now`.
pub async fn compute(state: &AppState, org: Org, now: Now) -> anyhow::Result<OrgTrust> {
    let graph = state
        .store
        .read(move |conn| {
            crate::store::trust::graph_of(conn, org, now.ms()).map_err(StoreError::from)
        })
        .await?;
    let (graph, scores) = tokio::task::spawn_blocking(move || {
        trust_scores(&graph, now.s(), &TrustParams::default()).map(|scores| (graph, scores))
    })
    .await??;
    Ok(OrgTrust::new(now.ms(), &graph, scores))
}

/// Computes one organisation's scores now and puts them in force.
pub async fn refresh(state: &AppState, org: Org) -> anyhow::Result<()> {
    let now = state.clock.now();
    let scores = compute(state, org, now).await?;
    state.trust.put(org, scores);
    Ok(())
}

/// The background task: every organisation at start, then stale ones at
/// most every [`DEBOUNCE`], and any older than [`MAX_AGE`].
pub async fn recompute(state: AppState) {
    match state
        .store
        .read(|conn| crate::store::trust::orgs_with_agents(conn).map_err(StoreError::from))
        .await
    {
        Ok(orgs) => state.trust.mark_stale(orgs),
        Err(error) => tracing::warn!(%error, "listing organisations to score failed"),
    }
    let mut ticks = tokio::time::interval(DEBOUNCE);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            () = state.trust.wake.notified() => {}
            _ = tokio::time::sleep(MAX_AGE / 4) => {}
        }
        ticks.tick().await;
        let now = state.clock.now();
        let mut due: HashSet<Org> = state.trust.take_stale().into_iter().collect();
        for (org, computed_at) in state.trust.known() {
            if now.ms().saturating_sub(computed_at) >= MAX_AGE.as_millis() as i64 {
                due.insert(org);
            }
        }
        for org in due {
            let started = std::time::Instant::now();
            match refresh(&state, org).await {
                Ok(()) => tracing::debug!(
                    org = org.number(),
                    micros = started.elapsed().as_micros() as u64,
                    "trust scores recomputed"
                ),
                Err(error) => {
                    tracing::warn!(%error, org = org.number(), "recomputing trust scores failed");
                    state.trust.mark_stale([org]);
                }
            }
        }
    }
}

/// The agent's trust statement: a compact JWT (`typ`
/// `trust-statement+jwt`) signed by the active signing key at `now`,
/// good for `lifetime_s` seconds.
pub fn sign_statement(
    state: &AppState,
    agent: &AgentId,
    org_id: &str,
    score: &TrustScore,
    computed_at_ms: i64,
    now: Now,
    lifetime_s: u64,
) -> Result<String, crate::error::ApiError> {
    let internal = |cause: String| crate::error::ApiError::internal(cause);
    let org = mandate_core::OrgId::parse(org_id).map_err(|e| internal(e.to_string()))?;
    // The score was computed at or before now; in whole seconds, never after
    // the statement's `iat`.
    let computed_at = computed_at_ms.div_euclid(1000).min(now.s());
    let claims = mandate_core::TrustStatementClaims::new(
        &state.config.issuer,
        org,
        agent,
        score,
        computed_at,
        now.s(),
        lifetime_s,
    );
    let key = state.keys.current().active.clone();
    mandate_core::sign_trust_statement(&claims, &key).map_err(|e| internal(e.to_string()))
}

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use mandate_core::{KeyId, Ulid};

    use super::*;
    use crate::store::sql::params;

    /// A small linear congruential generator: the same graph every run.
    struct Lcg(u64);

    impl Lcg {
        fn below(&mut self, n: u64) -> u64 {
            self.0 = self
                .0
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            (self.0 >> 33) % n
        }
    }

    /// Stores an organisation of `agents` agents (a tenth of them
    /// delegated from an earlier one, created by 1,000 humans over 60 days)
    /// and `vouches` vouches in force (a tenth by people), then reads its
    /// inputs and scores it as the background task does, and prints what
    /// each step cost.
    fn recompute(agents: usize, vouches: usize) -> (Duration, Duration, usize) {
        let conn = crate::store::open_in_memory().unwrap();
        let org = Org::DEFAULT;
        let now_s: i64 = 1_800_000_000;
        let mut random = Lcg(7);
        let jti = |i: usize| format!("vat_root_{:026}", i);
        conn.execute_batch("BEGIN").unwrap();
        for i in 0..agents {
            let human = HumanRef::from_digest(&[(i % 1000) as u8; 32]);
            let issued_at = now_s - random.below(60 * 86_400) as i64;
            let delegated = i > 0 && i % 10 == 0;
            let parent = delegated.then(|| jti(random.below(i as u64) as usize));
            let provenance = format!("prov_{:026}", i);
            conn.execute(
                "INSERT INTO workflows (provenance_ref, root_jti, root_agent_id, human_ref,
                    assurance_level, created_at, last_activity, org)
                 VALUES (?1, ?2, ?3, ?4, 'L1', ?5, ?5, ?6)",
                params![
                    provenance,
                    jti(i),
                    format!("agent-{i}"),
                    human.as_str(),
                    issued_at * 1000,
                    org
                ],
            )
            .unwrap();
            conn.execute(
                "INSERT INTO tokens (jti, parent, jth, provenance_ref, agent_id, depth, claims, kid,
                    issued_at, expires_at, org)
                 VALUES (?1, ?2, ?1, ?3, ?4, ?5, '{}', 'k', ?6, ?7, ?8)",
                params![
                    jti(i),
                    parent,
                    provenance,
                    format!("agent-{i}"),
                    i64::from(delegated),
                    issued_at,
                    issued_at + 86_400,
                    org
                ],
            )
            .unwrap();
            conn.execute(
                "INSERT INTO agents (org, agent_id, successes, failures, approved, flagged,
                    last_activity)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                params![
                    org,
                    format!("agent-{i}"),
                    random.below(50) as i64,
                    random.below(10) as i64,
                    random.below(5) as i64,
                    random.below(3) as i64,
                    (now_s - random.below(30 * 86_400) as i64) * 1000
                ],
            )
            .unwrap();
        }
        for v in 0..vouches {
            let target = format!("agent-{}", random.below(agents as u64));
            let (by_key, by_agent) = if v % 10 == 0 {
                let key = KeyId::new(Ulid::new(1, [(v % 50) as u8; 10]).unwrap());
                (Some(key.as_str().to_owned()), None)
            } else {
                (None, Some(format!("agent-{}", random.below(agents as u64))))
            };
            conn.execute(
                "INSERT INTO vouches (id, org, by_key, by_agent, agent_id, weight_ppm, created_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                params![
                    format!("vch_{:026}", v),
                    org,
                    by_key,
                    by_agent,
                    target,
                    1 + random.below(1_000_000) as i64,
                    now_s * 1000
                ],
            )
            .unwrap();
        }
        conn.execute_batch("COMMIT").unwrap();
        let started = Instant::now();
        let graph = crate::store::trust::graph_of(&conn, org, now_s * 1000).unwrap();
        let read = started.elapsed();
        let started = Instant::now();
        let scores = trust_scores(&graph, now_s, &TrustParams::default()).unwrap();
        let computed = started.elapsed();
        (read, computed, scores.len())
    }

    #[test]
    #[allow(clippy::print_stdout, reason = "the measurement is read by a person")]
    fn recompute_cost() {
        let (read, computed, scored) = recompute(10_000, 100_000);
        assert_eq!(scored, 10_000);
        println!(
            "recompute at 10,000 agents and 100,000 vouches: read {} ms, scored {} ms",
            read.as_millis(),
            computed.as_millis()
        );
    }

    #[test]
    fn a_new_agent_has_what_the_rule_gives_it() {
        let trust = Board::trust_of_new(1.0, 1_800_000_000);
        assert!((trust - 0.25).abs() < 1e-9, "{trust}");
        assert_eq!(Board::trust_of_new(0.1, 1_800_000_000), 0.1);
    }
}

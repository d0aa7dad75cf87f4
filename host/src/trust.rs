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
//! Cost (measured with `cargo test --release -p mandate-host --lib
//! trust::tests::recompute_cost -- --nocapture`): see docs/api.md, "Trust".

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
}

impl OrgTrust {
    /// Scores computed at `computed_at`.
    pub fn new(computed_at: i64, scores: BTreeMap<AgentId, TrustScore>) -> OrgTrust {
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
        }
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
    let scores =
        tokio::task::spawn_blocking(move || trust_scores(&graph, now.s(), &TrustParams::default()))
            .await??;
    Ok(OrgTrust::new(now.ms(), scores))
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

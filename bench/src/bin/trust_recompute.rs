//! The cost of recomputing one organisation's trust scores
//! (`mandate_core::trust_scores`) at 10 000 agents and 100 000 vouches,
//! the size the server's background recomputation is held to: a graph
//! drawn from a fixed seed (500 vouches by people, the rest by agents;
//! a third of the agents fresh, of 50 creators; a fifth delegated), scored
//! `RUNS` times. Prints JSON for `cargo xtask bench --only trust`.
//! `trust_recompute [--quick]` (`--quick`: 1 000 agents, 10 000 vouches).

use std::time::Instant;

use mandate_core::trust::{AgentInput, TrustGraph, TrustParams, VouchInput, Voucher, trust_scores};
use mandate_core::{AgentId, HumanRef, KeyId, Ulid};
use serde_json::json;

const NOW: i64 = 1_800_000_000;
const DAY: i64 = 86_400;
const RUNS: usize = 5;

/// SplitMix64: the same graph every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

fn graph(agents: u64, vouches: u64) -> anyhow::Result<TrustGraph> {
    let mut rng = Rng(22);
    let id = |i: u64| AgentId::parse(&format!("agent-{i}"));
    let creators: Vec<HumanRef> = (0u8..50).map(|c| HumanRef::from_digest(&[c; 32])).collect();
    let keys: Vec<KeyId> = (0u8..5)
        .map(|k| Ok(KeyId::new(Ulid::new(1_790_000_000_000, [k; 10])?)))
        .collect::<anyhow::Result<_>>()?;
    let mut nodes = Vec::new();
    for i in 0..agents {
        let fresh = rng.below(3) == 0;
        let delegated = i > 0 && rng.below(5) == 0;
        nodes.push(AgentInput {
            agent_id: id(i)?,
            reputation: rng.unit(),
            created_at: NOW
                - if fresh {
                    rng.below(6) as i64
                } else {
                    8 + rng.below(300) as i64
                } * DAY,
            creator: creators
                .get(rng.below(50) as usize)
                .cloned()
                .ok_or_else(|| anyhow::anyhow!("creator"))?,
            last_active: Some(NOW - rng.below(60) as i64 * DAY),
            has_root: !delegated,
            delegators: if delegated {
                vec![id(rng.below(i))?]
            } else {
                Vec::new()
            },
        });
    }
    let mut edges = Vec::new();
    for v in 0..vouches {
        let voucher = if v < 500 {
            Voucher::Human {
                key_id: keys
                    .get(rng.below(5) as usize)
                    .cloned()
                    .ok_or_else(|| anyhow::anyhow!("key"))?,
            }
        } else {
            Voucher::Agent {
                agent_id: id(rng.below(agents))?,
            }
        };
        edges.push(VouchInput {
            voucher,
            target: id(rng.below(agents))?,
            weight: 0.05 + 0.95 * rng.unit(),
            expires_at: (rng.below(10) == 0).then(|| NOW + rng.below(30) as i64 * DAY - 10 * DAY),
        });
    }
    Ok(TrustGraph {
        agents: nodes,
        vouches: edges,
    })
}

#[allow(clippy::print_stdout, reason = "the bench harness reads the JSON")]
fn main() -> anyhow::Result<()> {
    let quick = std::env::args().any(|a| a == "--quick");
    let (agents, vouches) = if quick {
        (1_000, 10_000)
    } else {
        (10_000, 100_000)
    };
    let graph = graph(agents, vouches)?;
    let params = TrustParams::default();
    let mut ms = Vec::new();
    let mut reached = 0;
    for _ in 0..RUNS {
        let start = Instant::now();
        let scores = trust_scores(&graph, NOW, &params)?;
        ms.push(start.elapsed().as_secs_f64() * 1000.0);
        reached = scores.values().filter(|s| s.graph > 0.0).count();
    }
    let mut sorted = ms.clone();
    sorted.sort_by(f64::total_cmp);
    let median = sorted.get(RUNS / 2).copied().unwrap_or(f64::NAN);
    println!(
        "{}",
        json!({"agents": agents, "vouches": vouches, "runs_ms": ms, "median_ms": median, "agents_reached": reached})
    );
    Ok(())
}

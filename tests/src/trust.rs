//! `trust.json`: organisations' trust graphs with every agent's expected
//! score (core's `trust_scores`), graphs refused with core's code, and
//! signed trust statements verified or refused.

use mandate_core::trust::{TrustGraph, TrustParams, trust_scores};
use mandate_core::{
    AgentId, HumanRef, KeyId, OrgId, TrustStatementClaims, Ulid, sign_trust_statement,
    verify_trust_statement,
};
use serde_json::{Value, json};
use sha2::{Digest as _, Sha256};

use crate::{ISSUER, Keys, Rng};

/// The `now` of every case (2027-01-15).
const NOW: i64 = crate::NOW;
const DAY: i64 = 86_400;
/// Values are compared within this: `powf` and sums may differ in the last
/// bit between builds.
const TOLERANCE: f64 = 1e-9;

fn creator(label: &str) -> String {
    HumanRef::from_digest(&Sha256::digest(label.as_bytes()).into())
        .as_str()
        .to_owned()
}

fn key_id(n: u8) -> String {
    KeyId::new(Ulid::new(1_790_000_000_000, [n; 10]).expect("a ulid"))
        .as_str()
        .to_owned()
}

/// An agent created `age_days` ago by `by`, active `idle_days` ago (none:
/// never), with a root token unless `delegators` are given.
fn agent(id: &str, reputation: f64, age_days: i64, by: &str, idle_days: Option<i64>) -> Value {
    let mut agent = json!({
        "agent_id": id,
        "reputation": reputation,
        "created_at": NOW - age_days * DAY,
        "creator": creator(by),
        "has_root": true,
    });
    if let Some(idle) = idle_days {
        agent["last_active"] = json!(NOW - idle * DAY);
    }
    agent
}

fn delegated(mut agent: Value, delegators: &[&str]) -> Value {
    agent["has_root"] = json!(false);
    agent["delegators"] = json!(delegators);
    agent
}

fn by_human(n: u8, target: &str, weight: f64) -> Value {
    json!({"voucher": {"kind": "human", "key_id": key_id(n)}, "target": target, "weight": weight})
}

fn by_agent(voucher: &str, target: &str, weight: f64) -> Value {
    json!({"voucher": {"kind": "agent", "agent_id": voucher}, "target": target, "weight": weight})
}

fn graph_case(name: &str, description: &str, agents: Vec<Value>, vouches: Vec<Value>) -> Value {
    let graph = json!({"agents": agents, "vouches": vouches});
    let parsed: TrustGraph = serde_json::from_value(graph.clone()).expect("a graph");
    let expect = match trust_scores(&parsed, NOW, &TrustParams::default()) {
        Ok(scores) => json!({"scores": scores}),
        Err(error) => json!({"error": error.code()}),
    };
    json!({"name": name, "description": description, "now": NOW, "graph": graph, "expect": expect})
}

fn graphs() -> Vec<Value> {
    let ring: Vec<String> = (0..10).map(|i| format!("sybil-{i}")).collect();
    let ring_agents = |with_target: bool| {
        let mut agents: Vec<Value> = ring
            .iter()
            .map(|id| agent(id, 1.0, 1, "mallory", Some(0)))
            .collect();
        if with_target {
            agents.push(agent("target", 0.5, 1, "mallory", Some(0)));
        }
        agents
    };
    let ring_vouches = || {
        let mut vouches = Vec::new();
        for a in &ring {
            for b in &ring {
                if a != b {
                    vouches.push(by_agent(a, b, 1.0));
                }
            }
            vouches.push(by_agent(a, "target", 1.0));
        }
        vouches
    };
    let mut reached_ring = ring_vouches();
    reached_ring.push(by_human(1, "sybil-0", 1.0));
    let mut expired = by_human(1, "lapsed", 1.0);
    expired["expires_at"] = json!(NOW);
    let mut later = by_human(2, "lapsed", 0.5);
    later["expires_at"] = json!(NOW + 1);
    vec![
        graph_case(
            "human_vouched",
            "A person's vouch of weight 1 gives g = d = 0.85; T = 0.5·r + 0.5·g. An agent nobody vouches for has T = 0.5·r.",
            vec![
                agent("vouched", 0.6, 100, "alice", Some(0)),
                agent("alone", 0.6, 100, "alice", Some(0)),
            ],
            vec![by_human(1, "vouched", 1.0)],
        ),
        graph_case(
            "agent_vouch_passes_on_g_times_r",
            "An agent vouches with strength g·r: `b` gets 1 − (1 − 0.85 · 0.85·0.8 · 0.5); a person's and an agent's vouch combine as 1 − Π(1 − term).",
            vec![
                agent("a", 0.8, 100, "alice", Some(0)),
                agent("b", 0.5, 100, "alice", Some(0)),
                agent("c", 0.5, 100, "alice", Some(0)),
            ],
            vec![
                by_human(1, "a", 1.0),
                by_agent("a", "b", 0.5),
                by_agent("a", "c", 1.0),
                by_human(2, "c", 0.5),
            ],
        ),
        graph_case(
            "sybil_ring",
            "Ten fresh agents of one creator vouch for each other and for a target: no human reaches them, so every g stays 0 and the target gains nothing.",
            ring_agents(true),
            ring_vouches(),
        ),
        graph_case(
            "sybil_ring_reached_once",
            "The same ring with one member vouched by a person: the target's ten fresh vouchers of one creator count as one term (vouchers = 1), the strongest.",
            ring_agents(true),
            reached_ring,
        ),
        graph_case(
            "sybil_grouping_by_creator",
            "Fresh agents of two creators and an old agent of the first vouch for a target: one term per fresh creator, one for the old agent (vouchers = 3).",
            vec![
                agent("fresh-a1", 1.0, 2, "alice", Some(0)),
                agent("fresh-a2", 1.0, 3, "alice", Some(0)),
                agent("fresh-b1", 1.0, 6, "bob", Some(0)),
                agent("old-a", 1.0, 8, "alice", Some(0)),
                agent("target", 0.5, 30, "carol", Some(0)),
            ],
            vec![
                by_human(1, "fresh-a1", 1.0),
                by_human(1, "fresh-a2", 0.5),
                by_human(1, "fresh-b1", 1.0),
                by_human(1, "old-a", 1.0),
                by_agent("fresh-a1", "target", 1.0),
                by_agent("fresh-a2", "target", 1.0),
                by_agent("fresh-b1", "target", 0.5),
                by_agent("old-a", "target", 0.5),
            ],
        ),
        graph_case(
            "delegation_chain_ceilings",
            "A root agent of low reputation delegates three deep; the deepest is vouched for by a person but never exceeds its delegator's trust, and neither does anyone in the chain. A sub-agent with two delegators takes the larger ceiling; one whose delegators are all outside the graph has ceiling 0.",
            vec![
                agent("root", 0.2, 100, "alice", Some(0)),
                delegated(agent("child", 1.0, 50, "alice", Some(0)), &["root"]),
                delegated(agent("grandchild", 1.0, 50, "alice", Some(0)), &["child"]),
                delegated(
                    agent("great-grandchild", 1.0, 50, "alice", Some(0)),
                    &["grandchild"],
                ),
                agent("strong", 1.0, 100, "alice", Some(0)),
                delegated(
                    agent("two-parents", 1.0, 50, "alice", Some(0)),
                    &["root", "strong"],
                ),
                delegated(agent("orphan", 1.0, 50, "alice", Some(0)), &["gone"]),
            ],
            vec![
                by_human(1, "great-grandchild", 1.0),
                by_human(1, "strong", 1.0),
            ],
        ),
        graph_case(
            "decay",
            "Trust halves every 30 days without a record: 30 days idle gives decay 0.5, 60 days 0.25; an agent with no record decays from its creation.",
            vec![
                agent("active", 0.8, 100, "alice", Some(0)),
                agent("month", 0.8, 100, "alice", Some(30)),
                agent("two-months", 0.8, 100, "alice", Some(60)),
                agent("never", 0.8, 45, "alice", None),
            ],
            vec![by_human(1, "month", 1.0)],
        ),
        graph_case(
            "expired_self_and_unknown_vouches",
            "A vouch whose expires_at is now no longer counts; one a second later does. A self-vouch and a vouch for an agent outside the graph are ignored.",
            vec![agent("lapsed", 0.5, 100, "alice", Some(0))],
            vec![
                expired,
                later,
                by_agent("lapsed", "lapsed", 1.0),
                by_human(1, "nobody", 1.0),
            ],
        ),
        graph_case(
            "weight_out_of_range",
            "A weight outside (0, 1] is refused.",
            vec![agent("a", 0.5, 100, "alice", Some(0))],
            vec![by_human(1, "a", 1.5)],
        ),
        graph_case(
            "weight_zero",
            "A weight of 0 is refused.",
            vec![agent("a", 0.5, 100, "alice", Some(0))],
            vec![by_human(1, "a", 0.0)],
        ),
        graph_case(
            "reputation_out_of_range",
            "A reputation outside [0, 1] is refused.",
            vec![agent("a", 1.5, 100, "alice", Some(0))],
            vec![],
        ),
        graph_case(
            "duplicate_agent",
            "An agent listed twice is refused.",
            vec![
                agent("a", 0.5, 100, "alice", Some(0)),
                agent("a", 0.6, 100, "alice", Some(0)),
            ],
            vec![],
        ),
    ]
}

fn statement_case(
    name: &str,
    description: &str,
    jwt: &str,
    now: i64,
    jwks: &mandate_core::Jwks,
) -> Value {
    let expect = match verify_trust_statement(
        jwt,
        jwks,
        now,
        mandate_core::limits::DEFAULT_LEEWAY_SECONDS,
    ) {
        Ok(statement) => json!({"valid": true, "claims": statement.claims}),
        Err(error) => json!({"valid": false, "error": error.code()}),
    };
    json!({"name": name, "description": description, "jwt": jwt, "now": now, "expect": expect})
}

fn statements(rng: &mut Rng) -> (Value, Vec<Value>) {
    let key = Keys::new(rng, "trust statement key");
    let stranger = Keys::new(rng, "trust statement stranger key");
    let jwks = mandate_core::Jwks::from_signing_keys([&key.core]);
    let jwks_json = serde_json::to_value(jwks.to_jwk_set()).expect("a JWKS serialises");
    let org = OrgId::new(Ulid::new(1_790_000_000_000, rng.bytes("trust org")).expect("a ulid"));
    let score = mandate_core::trust::TrustScore {
        trust: 0.7125,
        reputation: 0.6,
        graph: 0.825,
        decay: 1.0,
        ceiling: 1.0,
        vouchers: 2,
    };
    let agent = AgentId::parse("research-bot").expect("an agent id");
    let claims = TrustStatementClaims::new(ISSUER, org, &agent, &score, NOW - 30, NOW, 300);
    let jwt = sign_trust_statement(&claims, &key.core).expect("signs");
    let header = |typ: &str, keys: &Keys| {
        format!(
            r#"{{"alg":"EdDSA","typ":"{typ}","kid":"{}"}}"#,
            keys.core.kid()
        )
    };
    let payload = |edit: &dyn Fn(&mut Value)| {
        let mut value = serde_json::to_value(&claims).expect("claims serialise");
        edit(&mut value);
        value.to_string()
    };
    let parts: Vec<&str> = jwt.split('.').collect();
    let raised = crate::b64(payload(&|c| c["trust"] = json!(1.0)));
    let tampered = format!(
        "{}.{raised}.{}",
        parts.first().expect("header"),
        parts.get(2).expect("signature")
    );
    let typ = "trust-statement+jwt";
    let cases = vec![
        statement_case(
            "valid",
            "A statement signed by a key of the JWKS, within its lifetime.",
            &jwt,
            NOW + 10,
            &jwks,
        ),
        statement_case(
            "valid_within_leeway",
            "Past exp by less than the 60 s leeway.",
            &jwt,
            NOW + 300 + 59,
            &jwks,
        ),
        statement_case(
            "expired",
            "Past exp and the leeway.",
            &jwt,
            NOW + 300 + 60,
            &jwks,
        ),
        statement_case(
            "not_yet_valid",
            "Issued more than the leeway after now.",
            &jwt,
            NOW - 61,
            &jwks,
        ),
        statement_case(
            "tampered",
            "The trust raised under the original signature.",
            &tampered,
            NOW,
            &jwks,
        ),
        statement_case(
            "wrong_typ",
            "A validly signed JWS of typ vat+jwt with the statement's claims.",
            &key.sign_raw(&header("vat+jwt", &key), &payload(&|_| {})),
            NOW,
            &jwks,
        ),
        statement_case(
            "unknown_kid",
            "Signed by a key the JWKS does not hold.",
            &sign_trust_statement(&claims, &stranger.core).expect("signs"),
            NOW,
            &jwks,
        ),
        statement_case(
            "lifetime_too_long",
            "exp more than an hour after iat.",
            &key.sign_raw(
                &header(typ, &key),
                &payload(&|c| c["exp"] = json!(NOW + 3601)),
            ),
            NOW,
            &jwks,
        ),
        statement_case(
            "unknown_claim",
            "A claim Mandate does not write.",
            &key.sign_raw(&header(typ, &key), &payload(&|c| c["scope"] = json!("all"))),
            NOW,
            &jwks,
        ),
        statement_case(
            "trust_out_of_range",
            "A trust above 1.",
            &key.sign_raw(&header(typ, &key), &payload(&|c| c["trust"] = json!(1.5))),
            NOW,
            &jwks,
        ),
        statement_case(
            "not_an_agent",
            "A sub that is not agent:<agent_id>.",
            &key.sign_raw(
                &header(typ, &key),
                &payload(&|c| c["sub"] = json!("human:someone")),
            ),
            NOW,
            &jwks,
        ),
        statement_case(
            "computed_after_iat",
            "computed_at after iat.",
            &key.sign_raw(
                &header(typ, &key),
                &payload(&|c| c["computed_at"] = json!(NOW + 1)),
            ),
            NOW,
            &jwks,
        ),
        statement_case(
            "fractional_iat",
            "iat must be an integer.",
            &key.sign_raw(
                &header(typ, &key),
                &payload(&|c| c["iat"] = json!(1_800_000_000.5)),
            ),
            NOW,
            &jwks,
        ),
    ];
    (jwks_json, cases)
}

pub(crate) fn trust_vectors(rng: &mut Rng) -> Value {
    let (jwks, statements) = statements(rng);
    json!({
        "description": "Trust graph vectors. `graphs`: score `graph` at `now` with the default parameters (damping 0.85, reputation_weight 0.5, half_life_days 30, sybil_window_days 7, max_iterations 100, tolerance 1e-9) and expect every agent's score (`scores`, each number within `tolerance`) or the error code. `statements`: verify `jwt` against `jwks` at `now` with a leeway of 60 s and expect `{valid: true, claims}` or `{valid: false, error}`.",
        "generator": "cargo xtask vectors",
        "tolerance": TOLERANCE,
        "graphs": graphs(),
        "jwks": jwks,
        "statements": statements,
    })
}

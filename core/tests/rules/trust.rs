//! The judge of `trust.json`: organisations' trust graphs scored by
//! `trust_scores`, and signed trust statements verified by
//! `verify_trust_statement`. Compiled natively and for wasm32.

use std::collections::BTreeMap;

use mandate_core::trust::{TrustGraph, TrustParams, TrustScore, trust_scores};
use mandate_core::{AgentId, Jwks, verify_trust_statement};
use serde::Deserialize;
use serde_json::Value;

const TRUST: &str = include_str!("../../../tests/vectors/trust.json");

#[derive(Deserialize)]
struct TrustFile {
    tolerance: f64,
    graphs: Vec<GraphCase>,
    jwks: Value,
    statements: Vec<StatementCase>,
}

#[derive(Deserialize)]
struct GraphCase {
    name: String,
    now: i64,
    graph: TrustGraph,
    expect: GraphExpect,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct GraphExpect {
    #[serde(default)]
    scores: Option<BTreeMap<AgentId, TrustScore>>,
    #[serde(default)]
    error: Option<String>,
}

#[derive(Deserialize)]
struct StatementCase {
    name: String,
    jwt: String,
    now: i64,
    expect: Value,
}

fn file() -> TrustFile {
    serde_json::from_str(TRUST).unwrap()
}

/// Every graph's scores, each number within the file's tolerance, or its
/// error code.
pub fn trust_graphs() {
    let file = file();
    assert!(file.graphs.len() >= 8);
    for case in &file.graphs {
        match trust_scores(&case.graph, case.now, &TrustParams::default()) {
            Ok(got) => {
                let want = case.expect.scores.as_ref().unwrap_or_else(|| {
                    panic!("{}: scored, expected {:?}", case.name, case.expect.error)
                });
                assert_eq!(
                    got.keys().collect::<Vec<_>>(),
                    want.keys().collect::<Vec<_>>(),
                    "{}",
                    case.name
                );
                for (agent, score) in &got {
                    let expected = &want[agent];
                    let close = |a: f64, b: f64| (a - b).abs() <= file.tolerance;
                    assert!(
                        close(score.trust, expected.trust)
                            && close(score.reputation, expected.reputation)
                            && close(score.graph, expected.graph)
                            && close(score.decay, expected.decay)
                            && close(score.ceiling, expected.ceiling)
                            && score.vouchers == expected.vouchers,
                        "{} {agent}: {score:?} != {expected:?}",
                        case.name
                    );
                }
            }
            Err(error) => {
                assert_eq!(
                    Some(error.code()),
                    case.expect.error.as_deref(),
                    "{}",
                    case.name
                );
            }
        }
    }
}

/// Every statement verified (its claims as the file writes them) or
/// refused with the file's code.
pub fn trust_statements() {
    let file = file();
    let jwks = Jwks::parse(file.jwks.to_string().as_bytes()).unwrap();
    assert!(file.statements.len() >= 8);
    for case in &file.statements {
        let got = match verify_trust_statement(&case.jwt, &jwks, case.now, 60) {
            Ok(statement) => serde_json::json!({"valid": true, "claims": statement.claims}),
            Err(error) => serde_json::json!({"valid": false, "error": error.code()}),
        };
        assert_eq!(got, case.expect, "{}", case.name);
    }
}

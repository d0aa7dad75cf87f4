//! Numbers computed offline by the server's rules: reputation, a workflow
//! summary, trust scores; and a signed trust statement verified.

use std::str::FromStr as _;

use mandate_core::trust::{TrustGraph, TrustParams};
use mandate_core::{Outcome, RecordError, RecordRow, ReputationCounts, Status};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyTuple};
use serde::Deserialize;

use crate::convert::{
    Answer, now_arg, object_arg, optional_string, seconds_arg, string_arg, to_py,
};
use crate::error::{Failure, Stage};
use crate::token::parse_jwks;

/// An agent's reputation from its record counts (whole numbers, not
/// negative; each left out is 0), the numbers the server reports at
/// `GET /v1/vat/reputation/{agent_id}`.
#[pyfunction]
pub(crate) fn reputation(py: Python<'_>, counts: &Bound<'_, PyAny>) -> Answer {
    let counts: ReputationCounts = object_arg(counts, "counts", "invalid_counts")?;
    to_py(py, &mandate_core::reputation(&counts))
}

/// The members of a record a workflow summary reads; the others are
/// ignored, so records from the server's `GET /v1/vat/aar` pass as they are.
#[derive(Debug, Deserialize)]
struct RecordInput {
    agent_id: String,
    action: String,
    status: String,
    #[serde(default)]
    result: Option<String>,
    #[serde(default)]
    provenance_ref: Option<String>,
}

/// The summary of one workflow from its records, the numbers the server
/// reports at `GET /v1/vat/aar/provenance/{provenance_ref}`.
#[pyfunction]
#[pyo3(signature = (records, provenance_ref = None))]
pub(crate) fn summarize_workflow(
    py: Python<'_>,
    records: &Bound<'_, PyAny>,
    provenance_ref: Option<&Bound<'_, PyAny>>,
) -> Answer {
    if !(records.is_instance_of::<PyList>() || records.is_instance_of::<PyTuple>()) {
        return Err(Failure::input("invalid_records", "records must be a list").into());
    }
    let provenance = optional_string(provenance_ref, "provenance_ref")?;
    let mut inputs = Vec::new();
    for (index, record) in records.try_iter()?.enumerate() {
        let record = record?;
        if !record.is_instance_of::<PyDict>() {
            return Err(Failure::input(
                "invalid_records",
                format!("records[{index}] is not a dict"),
            )
            .into());
        }
        inputs.push(object_arg::<RecordInput>(
            &record,
            &format!("records[{index}]"),
            "invalid_records",
        )?);
    }
    let record_failure = |e: RecordError| Failure::input(e.code(), e);
    let mut rows = Vec::with_capacity(inputs.len());
    for input in &inputs {
        rows.push(RecordRow {
            agent_id: &input.agent_id,
            action: &input.action,
            status: Status::from_str(&input.status).map_err(record_failure)?,
            result: input
                .result
                .as_deref()
                .map(Outcome::from_str)
                .transpose()
                .map_err(record_failure)?,
            provenance_ref: input.provenance_ref.as_deref(),
        });
    }
    let summary = mandate_core::summarize_records(&rows, provenance.as_deref())
        .map_err(|e| Failure::input(e.code(), e))?;
    to_py(py, &summary)
}

/// Every agent's trust in an organisation's graph (`{agents, vouches}`) at
/// `now`, with the default parameters or those given: `{agent_id: score}`.
#[pyfunction]
#[pyo3(signature = (graph, *, now = None, params = None))]
pub(crate) fn trust_scores(
    py: Python<'_>,
    graph: &Bound<'_, PyAny>,
    now: Option<&Bound<'_, PyAny>>,
    params: Option<&Bound<'_, PyAny>>,
) -> Answer {
    let graph: TrustGraph = object_arg(graph, "graph", "invalid_graph")?;
    let params: TrustParams = match params.filter(|p| !p.is_none()) {
        Some(params) => object_arg(params, "params", "invalid_trust_params")?,
        None => TrustParams::default(),
    };
    let scores = mandate_core::trust_scores(&graph, now_arg(now)?, &params)
        .map_err(|error| Failure::input(error.code(), &error))?;
    to_py(py, &scores)
}

/// Verifies a signed trust statement (`trust-statement+jwt`) against the
/// server's key set, with the strictness of token verification; answers
/// its claims.
#[pyfunction]
#[pyo3(signature = (jwt, jwks, *, now = None, leeway_seconds = None))]
pub(crate) fn verify_trust_statement(
    py: Python<'_>,
    jwt: &Bound<'_, PyAny>,
    jwks: &Bound<'_, PyAny>,
    now: Option<&Bound<'_, PyAny>>,
    leeway_seconds: Option<&Bound<'_, PyAny>>,
) -> Answer {
    let jwt = string_arg(jwt, "jwt")?;
    let leeway = seconds_arg(leeway_seconds, "leeway_seconds", "invalid_options")?
        .unwrap_or(mandate_core::limits::DEFAULT_LEEWAY_SECONDS);
    let keys = parse_jwks(jwks)?;
    let statement = mandate_core::verify_trust_statement(&jwt, &keys, now_arg(now)?, leeway)
        .map_err(|error| Failure::new(Stage::Trust, error.code(), &error))?;
    to_py(py, &statement.claims)
}

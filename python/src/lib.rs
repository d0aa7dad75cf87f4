//! `mandate._native`: mandate-core's verifier for Python. Every function
//! answers with core's own JSON (as Python values) or raises
//! `mandate.MandateError` carrying core's stable code and the stage that
//! refused — never a falsy value a caller could mistake for success, and
//! never a `TypeError` for an argument of the wrong type.
//!
//! Arguments cross as JSON text (`json.dumps` into core's serde types) and
//! results as core's own serialisation (`json.loads`), so Python sees
//! exactly the JSON the server writes. The module owns no rule: every
//! verdict, code and number is a core function's.

#![cfg_attr(
    not(test),
    deny(
        clippy::unwrap_used,
        clippy::expect_used,
        clippy::panic,
        clippy::indexing_slicing,
        clippy::unreachable,
        clippy::todo
    )
)]

use pyo3::prelude::*;

mod convert;
mod error;
mod log;
mod numbers;
mod scope;
mod token;
mod verifier;
mod webhook;

#[pymodule]
#[pyo3(name = "_native")]
fn native(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_function(wrap_pyfunction!(token::verify_token, module)?)?;
    module.add_function(wrap_pyfunction!(token::decode_token_unverified, module)?)?;
    module.add_function(wrap_pyfunction!(token::verify_chain, module)?)?;
    module.add_function(wrap_pyfunction!(token::verify_status_list, module)?)?;
    module.add_function(wrap_pyfunction!(token::verify_proof, module)?)?;
    module.add_function(wrap_pyfunction!(scope::permits, module)?)?;
    module.add_function(wrap_pyfunction!(scope::check_narrowing, module)?)?;
    module.add_function(wrap_pyfunction!(scope::delegated_grant, module)?)?;
    module.add_function(wrap_pyfunction!(scope::evaluate_policy, module)?)?;
    module.add_function(wrap_pyfunction!(scope::sha256_ref, module)?)?;
    module.add_function(wrap_pyfunction!(scope::audience_matches, module)?)?;
    module.add_function(wrap_pyfunction!(numbers::reputation, module)?)?;
    module.add_function(wrap_pyfunction!(numbers::summarize_workflow, module)?)?;
    module.add_function(wrap_pyfunction!(numbers::trust_scores, module)?)?;
    module.add_function(wrap_pyfunction!(numbers::verify_trust_statement, module)?)?;
    module.add_function(wrap_pyfunction!(webhook::verify_webhook, module)?)?;
    module.add_function(wrap_pyfunction!(log::verify_checkpoint, module)?)?;
    module.add_function(wrap_pyfunction!(log::verify_witnessed, module)?)?;
    module.add_function(wrap_pyfunction!(log::verify_cosignature, module)?)?;
    module.add_function(wrap_pyfunction!(log::verify_log_proof, module)?)?;
    module.add_function(wrap_pyfunction!(log::verify_witnessed_log_proof, module)?)?;
    module.add_function(wrap_pyfunction!(log::verify_consistency, module)?)?;
    module.add_function(wrap_pyfunction!(log::parse_log_leaf, module)?)?;
    module.add_class::<verifier::Verifier>()?;
    module.add_class::<verifier::AgentKey>()?;
    Ok(())
}

//! `mandate._native`: mandate-core's verifier for Python. Every function
//! answers with core's own JSON (as Python values) or raises
//! `mandate.MandateError` carrying core's stable code — never a falsy value a
//! caller could mistake for success.

use pyo3::prelude::*;

mod error;
mod token;

#[pymodule]
#[pyo3(name = "_native")]
fn native(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_function(wrap_pyfunction!(token::verify_token, module)?)?;
    Ok(())
}

//! Refusals as `mandate.MandateError`, the one exception class of the
//! package (the client raises it too), with core's code and the stage that
//! refused.

use std::fmt::Display;

use pyo3::prelude::*;
use pyo3::types::PyDict;

/// Where a call failed, so codes that two stages share (`missing_kid`) stay
/// distinct; the same stages as the npm package's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stage {
    Input,
    Jwks,
    Verify,
}

impl Stage {
    fn name(self) -> &'static str {
        match self {
            Stage::Input => "input",
            Stage::Jwks => "jwks",
            Stage::Verify => "verify",
        }
    }
}

/// A refusal on its way to Python.
#[derive(Debug)]
pub(crate) struct Failure {
    code: &'static str,
    message: String,
    stage: Stage,
}

impl Failure {
    pub(crate) fn new(stage: Stage, code: &'static str, message: impl Display) -> Failure {
        Failure {
            code,
            message: message.to_string(),
            stage,
        }
    }
}

impl From<Failure> for PyErr {
    fn from(failure: Failure) -> PyErr {
        Python::attach(|py| match raise(py, &failure) {
            Ok(error) | Err(error) => error,
        })
    }
}

/// `MandateError(message, code=…, stage=…)`; an import failure of the
/// package's own module surfaces as itself.
fn raise(py: Python<'_>, failure: &Failure) -> PyResult<PyErr> {
    let class = py.import("mandate.errors")?.getattr("MandateError")?;
    let kwargs = PyDict::new(py);
    kwargs.set_item("code", failure.code)?;
    kwargs.set_item("stage", failure.stage.name())?;
    let error = class.call((failure.message.as_str(),), Some(&kwargs))?;
    Ok(PyErr::from_value(error))
}

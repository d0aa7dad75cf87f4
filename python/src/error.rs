//! Refusals as `mandate.MandateError`, the one exception class of the
//! package (the client raises it too), with core's code, the stage that
//! refused and, in a chain, the index of the token refused.

use std::fmt::Display;

use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use pyo3::types::PyDict;

/// Where a call failed, so codes that two stages share (`missing_kid`) stay
/// distinct; the same stages as the npm package's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stage {
    /// An argument of the wrong type or shape.
    Input,
    /// The key set was refused.
    Jwks,
    /// The token was refused.
    Verify,
    /// The chain was refused for something other than one token's verification.
    Chain,
    /// A bound token's proof of possession was missing or refused.
    Dpop,
    /// A record log checkpoint, proof, key or leaf was refused.
    Log,
    /// A status list token was refused.
    StatusList,
    /// A verified token's status refuses it, or could not be established.
    Status,
    /// A webhook's secret, headers, signature, timestamp or payload was refused.
    Webhook,
    /// A signed trust statement was refused.
    Trust,
}

impl Stage {
    fn name(self) -> &'static str {
        match self {
            Stage::Input => "input",
            Stage::Jwks => "jwks",
            Stage::Verify => "verify",
            Stage::Chain => "chain",
            Stage::Dpop => "dpop",
            Stage::Log => "log",
            Stage::StatusList => "status_list",
            Stage::Status => "status",
            Stage::Webhook => "webhook",
            Stage::Trust => "trust",
        }
    }
}

/// A refusal on its way to Python.
#[derive(Debug, Clone)]
pub(crate) struct Failure {
    pub(crate) code: &'static str,
    pub(crate) message: String,
    pub(crate) stage: Stage,
    /// The position of the offending token in a chain.
    pub(crate) index: Option<usize>,
}

impl Failure {
    pub(crate) fn new(stage: Stage, code: &'static str, message: impl Display) -> Failure {
        Failure {
            code,
            message: message.to_string(),
            stage,
            index: None,
        }
    }

    /// An argument that is not what the function takes.
    pub(crate) fn input(code: &'static str, message: impl Display) -> Failure {
        Failure::new(Stage::Input, code, message)
    }

    /// An argument of the wrong type or shape, without a code of its own.
    pub(crate) fn argument(message: impl Display) -> Failure {
        Failure::input("invalid_argument", message)
    }
}

impl From<Failure> for PyErr {
    fn from(failure: Failure) -> PyErr {
        Python::attach(|py| match raise(py, &failure) {
            Ok(error) | Err(error) => error,
        })
    }
}

/// `MandateError(message, code=…, stage=…, index=…)`; an import failure of
/// the package's own module surfaces as itself.
fn raise(py: Python<'_>, failure: &Failure) -> PyResult<PyErr> {
    let class = py.import("mandate.errors")?.getattr("MandateError")?;
    let kwargs = PyDict::new(py);
    kwargs.set_item("code", failure.code)?;
    kwargs.set_item("stage", failure.stage.name())?;
    kwargs.set_item("index", failure.index)?;
    let error = class.call((failure.message.as_str(),), Some(&kwargs))?;
    Ok(PyErr::from_value(error))
}

/// Whether a Python error is an ordinary exception (a wrong value), not an
/// interrupt or an exit, which must travel on as themselves.
pub(crate) fn is_ordinary(py: Python<'_>, error: &PyErr) -> bool {
    error.is_instance_of::<PyException>(py)
}

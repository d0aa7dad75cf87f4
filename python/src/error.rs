//! Refusals as `mandate.MandateError`, the one exception class of the
//! package (the client raises it too), with core's code, the stage that
//! refused and, in a chain, the index of the token refused.

use std::fmt::Display;

use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use pyo3::types::PyDict;

pub(crate) use mandate_facade::Stage;

/// A refusal on its way to Python: mandate-facade's, which the npm package
/// reports too, raised as `MandateError`.
#[derive(Debug, Clone)]
pub(crate) struct Failure(mandate_facade::Failure);

impl Failure {
    pub(crate) fn new(stage: Stage, code: &'static str, message: impl Display) -> Failure {
        Failure(mandate_facade::Failure::new(stage, code, message))
    }

    /// An argument that is not what the function takes.
    pub(crate) fn input(code: &'static str, message: impl Display) -> Failure {
        Failure(mandate_facade::Failure::input(code, message))
    }

    /// An argument of the wrong type or shape, without a code of its own.
    pub(crate) fn argument(message: impl Display) -> Failure {
        Failure(mandate_facade::Failure::argument(message))
    }
}

impl From<mandate_facade::Failure> for Failure {
    fn from(failure: mandate_facade::Failure) -> Failure {
        Failure(failure)
    }
}

/// A refusal of mandate-facade's as the Python error it raises.
pub(crate) fn raised(failure: mandate_facade::Failure) -> PyErr {
    Failure(failure).into()
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
fn raise(py: Python<'_>, Failure(failure): &Failure) -> PyResult<PyErr> {
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

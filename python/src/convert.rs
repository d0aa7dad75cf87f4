//! Values across the boundary. Everything crosses as JSON text: arguments
//! through `json.dumps` into core's serde types, results from core's own
//! serialisation through `json.loads`, so Python sees exactly the JSON the
//! server writes. An argument of the wrong type is a `MandateError` with
//! stage `input`, never a `TypeError`.

use std::time::{SystemTime, UNIX_EPOCH};

use pyo3::prelude::*;
use pyo3::types::{PyBool, PyByteArray, PyBytes, PyDict, PyString};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::error::{Failure, is_ordinary};

/// What the functions of the module answer.
pub(crate) type Answer = PyResult<Py<PyAny>>;

/// The clock, in whole seconds since the epoch.
pub(crate) fn clock() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |elapsed| {
            i64::try_from(elapsed.as_secs()).unwrap_or(i64::MAX)
        })
}

/// A string argument.
pub(crate) fn string_arg(value: &Bound<'_, PyAny>, name: &str) -> PyResult<String> {
    match value.cast::<PyString>() {
        Ok(text) => text
            .to_str()
            .map(str::to_owned)
            .map_err(|_| Failure::argument(format!("{name} must be valid Unicode")).into()),
        Err(_) => Err(Failure::argument(format!("{name} must be a str")).into()),
    }
}

/// An optional string argument: `None` for none.
pub(crate) fn optional_string(
    value: Option<&Bound<'_, PyAny>>,
    name: &str,
) -> PyResult<Option<String>> {
    value
        .filter(|v| !v.is_none())
        .map(|v| string_arg(v, name))
        .transpose()
}

/// A list of strings (a tuple too; a lone `str` is refused).
pub(crate) fn strings_arg(value: &Bound<'_, PyAny>, name: &str) -> PyResult<Vec<String>> {
    if value.is_instance_of::<PyString>() {
        return Err(Failure::argument(format!("{name} must be a list of str, not a str")).into());
    }
    value
        .extract::<Vec<String>>()
        .map_err(|_| Failure::argument(format!("{name} must be a list of str")).into())
}

/// A `bool` option; `None` is false.
pub(crate) fn flag_arg(value: Option<&Bound<'_, PyAny>>, name: &str) -> PyResult<bool> {
    match value.filter(|v| !v.is_none()) {
        None => Ok(false),
        Some(v) => v.cast::<PyBool>().map(|flag| flag.is_true()).map_err(|_| {
            Failure::input("invalid_options", format!("{name} must be a bool")).into()
        }),
    }
}

/// A whole number of seconds since the epoch; `None` reads the clock.
pub(crate) fn now_arg(value: Option<&Bound<'_, PyAny>>) -> PyResult<i64> {
    match value.filter(|v| !v.is_none()) {
        None => Ok(clock()),
        Some(v) if v.is_instance_of::<PyBool>() => {
            Err(Failure::argument("now must be an int (seconds since the epoch)").into())
        }
        Some(v) => v
            .extract::<i64>()
            .map_err(|_| Failure::argument("now must be an int (seconds since the epoch)").into()),
    }
}

/// An optional count of seconds (not negative), refused with `code`.
pub(crate) fn seconds_arg(
    value: Option<&Bound<'_, PyAny>>,
    name: &str,
    code: &'static str,
) -> PyResult<Option<u64>> {
    match value.filter(|v| !v.is_none()) {
        None => Ok(None),
        Some(v) if v.is_instance_of::<PyBool>() => {
            Err(Failure::input(code, format!("{name} must be an int, not negative")).into())
        }
        Some(v) => v.extract::<u64>().map(Some).map_err(|_| {
            Failure::input(code, format!("{name} must be an int, not negative")).into()
        }),
    }
}

/// `bytes`, `bytearray` or `str` (as UTF-8); `None` for anything else.
pub(crate) fn bytes_arg(value: &Bound<'_, PyAny>) -> Option<Vec<u8>> {
    if let Ok(bytes) = value.cast::<PyBytes>() {
        Some(bytes.as_bytes().to_vec())
    } else if let Ok(array) = value.cast::<PyByteArray>() {
        Some(array.to_vec())
    } else {
        value
            .cast::<PyString>()
            .ok()
            .and_then(|text| text.to_str().ok().map(|t| t.as_bytes().to_vec()))
    }
}

/// A JSON value as JSON text through `json.dumps` (no NaN, no infinity).
fn dumps(value: &Bound<'_, PyAny>, name: &str) -> PyResult<String> {
    let py = value.py();
    let kwargs = PyDict::new(py);
    kwargs.set_item("allow_nan", false)?;
    match py
        .import("json")?
        .getattr("dumps")?
        .call((value,), Some(&kwargs))
    {
        Ok(text) => text.extract::<String>(),
        Err(error) if is_ordinary(py, &error) => {
            Err(Failure::argument(format!("{name} is not a JSON value: {error}")).into())
        }
        Err(error) => Err(error),
    }
}

/// JSON text: a `str` is taken as JSON text as given (so a member named
/// twice is seen and refused), anything else goes through `json.dumps`.
pub(crate) fn json_or_text(value: &Bound<'_, PyAny>, name: &str) -> PyResult<String> {
    if value.is_instance_of::<PyString>() {
        return string_arg(value, name);
    }
    dumps(value, name)
}

/// Reads a mapping (a `dict` or any `Mapping` `json.dumps` takes) into a
/// serde type through its JSON form; refused with `code`.
pub(crate) fn object_arg<T: DeserializeOwned>(
    value: &Bound<'_, PyAny>,
    name: &str,
    code: &'static str,
) -> PyResult<T> {
    if !value.is_instance_of::<PyDict>() {
        return Err(Failure::input(code, format!("{name} must be a dict")).into());
    }
    let text = dumps(value, name)
        .map_err(|_| Failure::input(code, format!("{name} is not a JSON object")))?;
    serde_json::from_str(&text).map_err(|e| Failure::input(code, format!("{name}: {e}")).into())
}

/// JSON text that serde_json wrote, as Python values.
pub(crate) fn loads(py: Python<'_>, json: &str) -> Answer {
    Ok(py
        .import("json")?
        .getattr("loads")?
        .call1((json,))?
        .unbind())
}

/// A serialisable value as fresh Python values.
pub(crate) fn to_py<T: Serialize>(py: Python<'_>, value: &T) -> Answer {
    // Core's types and this crate's results have string keys and
    // infallible serialisers.
    let json = serde_json::to_string(value)
        .map_err(|e| Failure::argument(format!("the result could not be written: {e}")))?;
    loads(py, &json)
}

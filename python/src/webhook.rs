//! Webhooks, received: a message's Standard Webhooks signature, timestamp
//! and payload checked by core's rules with the receiver's secrets.

use mandate_facade::webhook::{WEBHOOK_TOLERANCE_SECONDS, verify_webhook as verify};
use pyo3::prelude::*;
use pyo3::types::PyString;

use crate::convert::{Answer, bytes_arg, loads, now_arg, seconds_arg, strings_arg};
use crate::error::{Failure, raised};

/// Header `(name, value)` pairs of a mapping (a `dict`, an HTTP library's
/// headers) or of a list of pairs.
fn header_pairs(headers: &Bound<'_, PyAny>) -> PyResult<Vec<(String, String)>> {
    let wrong =
        || Failure::argument("headers must be a mapping of str to str, or (name, value) pairs");
    if headers.is_instance_of::<PyString>() {
        return Err(wrong().into());
    }
    let items = if headers.hasattr("items").unwrap_or(false) {
        headers.call_method0("items").map_err(|_| wrong())?
    } else {
        headers.clone()
    };
    let mut pairs = Vec::new();
    for item in items.try_iter().map_err(|_| wrong())? {
        let item = item.map_err(|_| wrong())?;
        let pair = match item.extract::<(String, String)>() {
            Ok(pair) => pair,
            Err(_) => match item
                .extract::<Vec<String>>()
                .map_err(|_| wrong())?
                .as_slice()
            {
                [name, value] => (name.clone(), value.clone()),
                _ => return Err(wrong().into()),
            },
        };
        pairs.push(pair);
    }
    Ok(pairs)
}

/// Checks a received webhook: the signature under any of `secrets`
/// (`whsec_…`; several during a rotation), the timestamp within
/// `tolerance_seconds` (default 300) of `now`, and the payload, which must
/// be a Mandate event. `body` is the bytes received (or their text), never
/// JSON parsed and serialised again. Answers `{"id": …, "event": …}`.
#[pyfunction]
#[pyo3(signature = (body, headers, *, secrets, now = None, tolerance_seconds = None))]
pub(crate) fn verify_webhook(
    py: Python<'_>,
    body: &Bound<'_, PyAny>,
    headers: &Bound<'_, PyAny>,
    secrets: &Bound<'_, PyAny>,
    now: Option<&Bound<'_, PyAny>>,
    tolerance_seconds: Option<&Bound<'_, PyAny>>,
) -> Answer {
    let body =
        bytes_arg(body).ok_or_else(|| Failure::argument("body must be bytes, bytearray or str"))?;
    let pairs = header_pairs(headers)?;
    let secrets = strings_arg(secrets, "secrets")?;
    let now = now_arg(now)?;
    let tolerance = seconds_arg(tolerance_seconds, "tolerance_seconds", "invalid_options")?
        .unwrap_or(WEBHOOK_TOLERANCE_SECONDS);
    let verified = verify(&secrets, &pairs, &body, now, tolerance).map_err(raised)?;
    let result = pyo3::types::PyDict::new(py);
    result.set_item("id", verified.id.to_string())?;
    result.set_item("event", loads(py, verified.event)?)?;
    Ok(result.into_any().unbind())
}

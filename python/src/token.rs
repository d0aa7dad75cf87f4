//! Token verification.

use std::time::{SystemTime, UNIX_EPOCH};

use mandate_core::{Jwks, VerifyOptions};
use pyo3::prelude::*;

use crate::error::{Failure, Stage};

/// The clock, in whole seconds since the epoch.
pub(crate) fn now_seconds() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |elapsed| {
            i64::try_from(elapsed.as_secs()).unwrap_or(i64::MAX)
        })
}

/// Verifies a compact token against a key set given as JSON text.
#[pyfunction]
#[pyo3(signature = (token, jwks, *, now = None, leeway_seconds = None, issuer = None))]
pub(crate) fn verify_token(
    token: &str,
    jwks: &str,
    now: Option<i64>,
    leeway_seconds: Option<u64>,
    issuer: Option<String>,
) -> PyResult<String> {
    let keys = Jwks::parse(jwks.as_bytes()).map_err(|e| Failure::new(Stage::Jwks, e.code(), &e))?;
    let defaults = VerifyOptions::default();
    let options = VerifyOptions {
        leeway_seconds: leeway_seconds.unwrap_or(defaults.leeway_seconds),
        issuer,
    };
    let verified = mandate_core::verify(token, &keys, now.unwrap_or_else(now_seconds), &options)
        .map_err(|e| Failure::new(Stage::Verify, e.code(), &e))?;
    serde_json::to_string(&verified.claims)
        .map_err(|e| Failure::new(Stage::Input, "invalid_argument", e).into())
}

//! Query strings: an extractor whose every failure is a problem body, and
//! the checks the read endpoints share (page sizes, times, id forms).

use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use mandate_core::{AarId, AgentId, ProvenanceRef};
use serde::de::DeserializeOwned;

use crate::clock::parse_iso_ms;
use crate::error::{ApiError, ApiResult};
use crate::queries::QueryError;

/// Query parameters, with a problem body (400) for any that do not parse.
#[derive(Debug, Clone)]
pub(crate) struct Query<T>(pub(crate) T);

impl<T: DeserializeOwned, S: Send + Sync> FromRequestParts<S> for Query<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Query<T>, ApiError> {
        axum::extract::Query::<T>::try_from_uri(&parts.uri)
            .map(|q| Query(q.0))
            .map_err(|e| ApiError::bad_request("invalid_query", e.body_text()))
    }
}

/// A page size: `default` when absent, else within 1..=`max`.
pub(crate) fn limit(requested: Option<u32>, default: u32, max: u32) -> ApiResult<u32> {
    match requested {
        None => Ok(default),
        Some(n) if (1..=max).contains(&n) => Ok(n),
        Some(_) => Err(ApiError::bad_request(
            "invalid_query",
            format!("limit must be between 1 and {max}"),
        )),
    }
}

/// An RFC 3339 time, as unix milliseconds.
pub(crate) fn time(field: &str, value: Option<&str>) -> ApiResult<Option<i64>> {
    value
        .map(|text| {
            parse_iso_ms(text).ok_or_else(|| {
                ApiError::bad_request(
                    "invalid_query",
                    format!("{field} must be an ISO 8601 timestamp such as 2026-11-22T10:00:00Z"),
                )
            })
        })
        .transpose()
}

/// A query value that must have the form `parse` accepts.
pub(crate) fn checked<T, E: std::fmt::Display>(
    value: Option<String>,
    parse: impl FnOnce(&str) -> Result<T, E>,
) -> ApiResult<Option<String>> {
    match value {
        Some(text) => match parse(&text) {
            Ok(_) => Ok(Some(text)),
            Err(error) => Err(ApiError::bad_request("invalid_query", error.to_string())),
        },
        None => Ok(None),
    }
}

/// An agent filter, bare or as `agent:<id>`; the bare id.
pub(crate) fn agent_filter(value: Option<&str>) -> ApiResult<Option<String>> {
    value
        .map(|text| {
            AgentId::parse_lenient(text)
                .map(|id| id.as_str().to_owned())
                .map_err(|e| ApiError::bad_request("invalid_query", e.to_string()))
        })
        .transpose()
}

/// A workflow named in a path: one that cannot exist is not found.
pub(crate) fn provenance(text: &str) -> ApiResult<ProvenanceRef> {
    ProvenanceRef::parse(text).map_err(|_| QueryError::UnknownWorkflow.into())
}

/// A record named in a path: one that cannot exist is not found.
pub(crate) fn record_id(text: &str) -> ApiResult<AarId> {
    AarId::parse(text).map_err(|_| QueryError::UnknownRecord.into())
}

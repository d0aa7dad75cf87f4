//! Token status lists (IETF Token Status List), public: the list a token's
//! `status.status_list.uri` names, signed by a key of the JWKS, for
//! verifiers that check tokens offline (edge workers, pages, mandate-sdk's
//! `Verifier`).

use axum::extract::{Path, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use mandate_core::limits::STATUS_LIST_SIZE;
use mandate_core::status_list::{STATUS_LIST_MEDIA_TYPE, StatusUri};

use super::docs::Errors;
use crate::AppState;
use crate::error::{ApiError, ApiResult};
use crate::queries::QueryError;
use crate::store::{log as log_rows, status_lists};

/// The base URL every URL the server signs is under (token status lists):
/// `public_url`, else `http://` and the address the server listens on (see
/// [`crate::Shared::listening`]). Never anything of the request: a `Host`
/// header is the client's to choose, and a signed URL is the deployment's.
pub(crate) fn public_base(state: &AppState) -> String {
    if let Some(base) = &state.config.public_url {
        return base.trim_end_matches('/').to_owned();
    }
    let listen = state
        .listening
        .get()
        .copied()
        .unwrap_or(state.config.listen);
    format!("http://{listen}")
}

/// A token status list: one bit per token (`1` revoked), as a signed
/// `statuslist+jwt` whose `sub` is this URL. Lists hold 65,536 tokens each;
/// a token's `status.status_list` names its list and index. The `ETag`
/// names the copy (its bits' revision and signing time): a copy is signed
/// again once half its `ttl` has passed, so a verifier asking with
/// `If-None-Match` gets a younger one by then.
#[utoipa::path(
    get,
    path = "/v1/vat/status/{list}",
    tag = "tokens",
    params(("list" = u64, Path, description = "The list's number, as tokens' `status.status_list.uri` names it")),
    responses(
        (status = 200, description = "The signed status list", body = String, content_type = "application/statuslist+jwt"),
        (status = 304, description = "Unchanged since the `ETag` sent in `If-None-Match`"),
        Errors
    )
)]
pub(crate) async fn status_list(
    State(state): State<AppState>,
    Path(list): Path<String>,
    headers: HeaderMap,
) -> ApiResult<Response> {
    let list: u64 = list
        .parse()
        .map_err(|_| ApiError::from(QueryError::UnknownStatusList))?;
    // Range first: a list past the tokens issued (any number up to
    // u64::MAX) is 404 before it reaches a query.
    let stored = state
        .store
        .lookup(move |conn| {
            let next_idx = log_rows::next_status_idx(conn)?;
            if list.saturating_mul(STATUS_LIST_SIZE) >= next_idx {
                return Err(QueryError::UnknownStatusList);
            }
            Ok(status_lists::get(conn, list)?)
        })
        .await?;
    let uri = StatusUri::for_list(&public_base(&state), list).map_err(ApiError::internal)?;
    let ttl = state.config.status.ttl_seconds.get();
    let cache =
        HeaderValue::from_str(&format!("public, max-age={ttl}")).map_err(ApiError::internal)?;
    let key = state.keys.current().active.clone();
    let now = state.clock.now().s();
    let signed = state
        .status_lists
        .get(list, stored, &uri, &key, ttl, now)
        .map_err(ApiError::internal)?;
    let etag = format!("W/\"{list}.{}.{}\"", signed.revision, signed.iat);
    let matches = headers
        .get_all(header::IF_NONE_MATCH)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(','))
        .any(|tag| {
            let tag = tag.trim();
            tag == "*" || tag.trim_start_matches("W/") == etag.trim_start_matches("W/")
        });
    let mut response = if matches {
        StatusCode::NOT_MODIFIED.into_response()
    } else {
        let mut response = signed.jwt.to_string().into_response();
        response.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static(STATUS_LIST_MEDIA_TYPE),
        );
        response
    };
    let out = response.headers_mut();
    out.insert(header::CACHE_CONTROL, cache);
    out.insert(
        header::ETAG,
        HeaderValue::from_str(&etag).map_err(ApiError::internal)?,
    );
    // Public: any page or edge worker may fetch it to check tokens offline.
    out.insert(
        header::ACCESS_CONTROL_ALLOW_ORIGIN,
        HeaderValue::from_static("*"),
    );
    out.insert(
        header::ACCESS_CONTROL_EXPOSE_HEADERS,
        HeaderValue::from_static("etag"),
    );
    Ok(response)
}

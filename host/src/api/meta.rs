//! Public and operational endpoints: JWKS, health, readiness, metrics and
//! the OpenAPI document.

use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, header};
use axum::response::{IntoResponse, Response};
use mandate_core::JwkSet;

use super::docs::Errors;
use super::extract::{Operation, Peer};
use crate::AppState;
use crate::error::ApiResult;
use crate::model::Health;

/// The public keys tokens are signed with.
#[utoipa::path(
    get,
    path = "/.well-known/jwks.json",
    tag = "keys",
    responses((status = 200, description = "The JWKS", body = Object))
)]
pub(crate) async fn jwks(State(state): State<AppState>) -> Response {
    let document: JwkSet = state.keys.current().document.clone();
    let mut response = axum::Json(document).into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("public, max-age=300"),
    );
    // Public keys: any page or edge worker may fetch them to verify offline.
    headers.insert(
        header::ACCESS_CONTROL_ALLOW_ORIGIN,
        HeaderValue::from_static("*"),
    );
    response
}

/// Liveness.
#[utoipa::path(get, path = "/healthz", tag = "operations", responses((status = 200, description = "The process is up", body = Health)))]
pub(crate) async fn healthz() -> axum::Json<Health> {
    axum::Json(Health {
        status: "ok".to_owned(),
    })
}

/// Readiness: the database takes writes.
#[utoipa::path(
    get,
    path = "/readyz",
    tag = "operations",
    responses((status = 200, description = "The database takes writes", body = Health), Errors)
)]
pub(crate) async fn readyz(State(state): State<AppState>) -> ApiResult<axum::Json<Health>> {
    state.write(|_| Ok(())).await?;
    Ok(axum::Json(Health {
        status: "ready".to_owned(),
    }))
}

/// Whether a peer is this machine, including an IPv4 client of a dual-stack
/// socket (`::ffff:127.0.0.1`), which `Ipv6Addr::is_loopback` says is not.
fn is_loopback(ip: std::net::IpAddr) -> bool {
    ip.to_canonical().is_loopback()
}

/// Prometheus metrics: open to loopback clients (when configured, no proxy
/// is trusted and the request carries no forwarding header), else the
/// admin key is needed (they count requests of
/// every organisation).
#[utoipa::path(
    get,
    path = "/metrics",
    tag = "operations",
    responses((status = 200, description = "OpenMetrics text", body = String, content_type = "application/openmetrics-text"), Errors)
)]
pub(crate) async fn metrics(
    State(state): State<AppState>,
    Peer(peer): Peer,
    operation: Operation,
    headers: HeaderMap,
) -> ApiResult<Response> {
    // Behind a reverse proxy every client's connection comes from the proxy,
    // often on loopback: the peer's address then says nothing about the
    // client. A request carrying a forwarding header came through one, even
    // when `trusted_proxies` was never set.
    let open = state.config.metrics_open_on_loopback
        && state.config.trusted_proxies.is_empty()
        && !forwarded(&headers)
        && peer.is_some_and(|addr| is_loopback(addr.ip()));
    if !open {
        operation.api_key(&state, &headers).await?;
    }
    let mut response = state.metrics.render().into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/openmetrics-text; version=1.0.0; charset=utf-8"),
    );
    Ok(response)
}

/// Whether a request says it was forwarded by a proxy.
fn forwarded(headers: &HeaderMap) -> bool {
    [
        "forwarded",
        "x-forwarded-for",
        "x-forwarded-host",
        "x-forwarded-proto",
        "x-real-ip",
        "via",
    ]
    .iter()
    .any(|name| headers.contains_key(*name))
}

#[cfg(test)]
mod tests {
    use super::is_loopback;

    #[test]
    fn loopback_includes_ipv4_mapped_addresses() {
        for (ip, expected) in [
            ("127.0.0.1", true),
            ("::1", true),
            ("::ffff:127.0.0.1", true),
            ("::ffff:192.0.2.7", false),
            ("192.0.2.7", false),
            ("2001:db8::1", false),
        ] {
            assert_eq!(is_loopback(ip.parse().unwrap()), expected, "{ip}");
        }
    }
}

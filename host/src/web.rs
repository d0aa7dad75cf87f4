//! The pages served at `/`: the dashboard and the token widget once their
//! assets are built (`cargo xtask web`); until then a short page that says
//! how to build them, so the API works either way.

use axum::Router;
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;

use crate::AppState;

/// The policy of every page: scripts and styles from this origin only.
pub const PAGE_CSP: &str = "default-src 'self'; script-src 'self' 'wasm-unsafe-eval'; \
    style-src 'self'; img-src 'self' data:; connect-src 'self'; object-src 'none'; \
    base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

const NOT_BUILT: &str = "<!doctype html>
<html lang=\"en\"><head><meta charset=\"utf-8\"><title>Mandate</title>
<link rel=\"icon\" href=\"data:,\"></head>
<body><h1>Mandate</h1>
<p>The API is running. The dashboard's assets are not built into this binary.</p>
<p>Build them and restart with <code>cargo xtask serve</code>.</p>
<p>The API is described at <a href=\"/v1/openapi.json\">/v1/openapi.json</a>.</p>
</body></html>
";

async fn index() -> Response {
    let mut response = NOT_BUILT.into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(PAGE_CSP),
    );
    response
}

/// The page routes.
pub fn routes() -> Router<AppState> {
    Router::new().route("/", get(index))
}

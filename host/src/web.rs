//! The pages served at `/`: the dashboard, the token widget and the OAuth
//! consent page (`/oauth/consent`), built from
//! `web/` (`cargo xtask web`) into `web/dist` and embedded in the binary, so
//! `mandate serve` alone serves them. A binary built before the assets were
//! serves a short page that says how to build them; the API works either way.
//!
//! This module owns the page routes, their content types, caching and
//! security headers. It knows nothing of what the pages do.

use axum::Router;
use axum::body::Body;
use axum::extract::Path;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use rust_embed::RustEmbed;

use crate::AppState;
use crate::error::ApiError;

/// The policy of every page: scripts, styles, connections and images from
/// this origin only, WebAssembly allowed to compile, no inline script, no
/// framing. The one inline style allowed by hash is the fixed stylesheet
/// Cytoscape.js (the graph library) adds: [`CYTOSCAPE_STYLESHEET`].
pub const PAGE_CSP: &str = "default-src 'self'; script-src 'self' 'wasm-unsafe-eval'; \
    style-src 'self' 'sha256-pgvDUBa4IjFA2yuSJ2cqcyxmNYJMborsd0ORcRv9vw8='; \
    img-src 'self' data:; connect-src 'self'; object-src 'none'; base-uri 'none'; \
    form-action 'self'; frame-ancestors 'none'";

/// The text of the `<style>` element Cytoscape.js inserts once per page;
/// [`PAGE_CSP`] carries its SHA-256.
pub const CYTOSCAPE_STYLESHEET: &str = ".__________cytoscape_container { position: relative; }";

/// Content-hashed files (`/assets/…`) never change under their name.
const IMMUTABLE: &str = "public, max-age=31536000, immutable";

/// Pages and the widget's fixed-name module are checked on every use.
const REVALIDATE: &str = "no-cache";

/// The consent page is never stored: it is reached with a sealed
/// authorization request in its URL (plan §2.5).
const NO_STORE: &str = "no-store";

const NOT_BUILT: &str = "<!doctype html>
<html lang=\"en\"><head><meta charset=\"utf-8\"><title>Mandate</title>
<link rel=\"icon\" href=\"data:,\"></head>
<body><h1>Mandate</h1>
<p>The API is running. The dashboard's assets are not built into this binary.</p>
<p>Build them and restart with <code>cargo xtask serve</code>.</p>
<p>The API is described at <a href=\"/v1/openapi.json\">/v1/openapi.json</a>.</p>
</body></html>
";

/// `web/dist` as built by Vite; empty when it was not built.
#[derive(RustEmbed)]
#[folder = "../web/dist"]
#[allow_missing = true]
struct Assets;

/// Whether this binary carries the built pages.
pub fn assets_built() -> bool {
    Assets::get("index.html").is_some()
}

fn content_type(path: &str) -> &'static str {
    let extension = path.rsplit_once('.').map_or("", |(_, extension)| extension);
    match extension {
        "html" => "text/html; charset=utf-8",
        "js" | "mjs" => "text/javascript; charset=utf-8",
        "css" => "text/css; charset=utf-8",
        "wasm" => "application/wasm",
        "json" | "map" => "application/json",
        "svg" => "image/svg+xml",
        "png" => "image/png",
        "ico" => "image/x-icon",
        "txt" => "text/plain; charset=utf-8",
        _ => "application/octet-stream",
    }
}

fn with_headers(
    mut response: Response,
    content_type: &'static str,
    cache: &'static str,
) -> Response {
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static(cache));
    if content_type.starts_with("text/html") {
        headers.insert(
            header::CONTENT_SECURITY_POLICY,
            HeaderValue::from_static(PAGE_CSP),
        );
    } else {
        // Scripts, styles and the wasm module may be loaded by other sites'
        // pages (the widget); they are public and sent without credentials.
        headers.insert(
            header::ACCESS_CONTROL_ALLOW_ORIGIN,
            HeaderValue::from_static("*"),
        );
    }
    response
}

/// An embedded file with its type, caching and an ETag (its SHA-256), or 304
/// when the client already holds this version.
fn embedded(path: &str, cache: &'static str, request: &HeaderMap) -> Option<Response> {
    let file = Assets::get(path)?;
    let etag = format!(
        "\"{}\"",
        file.metadata
            .sha256_hash()
            .iter()
            .map(|byte| format!("{byte:02x}"))
            .collect::<String>()
    );
    let fresh = request
        .get(header::IF_NONE_MATCH)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|tags| tags.split(',').any(|tag| tag.trim() == etag));
    let response = if fresh {
        StatusCode::NOT_MODIFIED.into_response()
    } else {
        Body::from(file.data).into_response()
    };
    let mut response = with_headers(response, content_type(path), cache);
    if let Ok(value) = HeaderValue::from_str(&etag) {
        response.headers_mut().insert(header::ETAG, value);
    }
    Some(response)
}

fn not_built() -> Response {
    with_headers(
        NOT_BUILT.into_response(),
        "text/html; charset=utf-8",
        REVALIDATE,
    )
}

fn missing() -> Response {
    ApiError::not_found("not_found", "there is nothing at this path").into_response()
}

/// A page: the built one, or the page saying how to build them.
fn page(path: &str, request: &HeaderMap) -> Response {
    if !assets_built() {
        return not_built();
    }
    embedded(path, REVALIDATE, request).unwrap_or_else(missing)
}

async fn index(request: HeaderMap) -> Response {
    page("index.html", &request)
}

async fn widget_page(request: HeaderMap) -> Response {
    page("widget.html", &request)
}

async fn consent_page(request: HeaderMap) -> Response {
    if !assets_built() {
        return not_built();
    }
    embedded("consent.html", NO_STORE, &request).unwrap_or_else(missing)
}

async fn widget_module(request: HeaderMap) -> Response {
    embedded("mandate-verify.js", REVALIDATE, &request).unwrap_or_else(missing)
}

async fn asset(Path(path): Path<String>, request: HeaderMap) -> Response {
    embedded(&format!("assets/{path}"), IMMUTABLE, &request).unwrap_or_else(missing)
}

/// The page routes.
pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/", get(index))
        .route("/widget.html", get(widget_page))
        .route("/mandate-verify.js", get(widget_module))
        .route("/assets/{*path}", get(asset))
        .route("/oauth/consent", get(consent_page))
        // The pages' asset URLs are relative (Vite's `base: "./"`), so the
        // consent page, one folder down, asks for them under `/oauth/`.
        .route("/oauth/assets/{*path}", get(asset))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_not_built_page_says_how_to_build_and_keeps_the_policy() {
        let response = not_built();
        assert_eq!(response.status(), StatusCode::OK);
        let headers = response.headers();
        assert_eq!(headers[header::CONTENT_TYPE], "text/html; charset=utf-8");
        assert_eq!(headers[header::CONTENT_SECURITY_POLICY], PAGE_CSP);
        assert!(NOT_BUILT.contains("not built"));
        assert!(NOT_BUILT.contains("cargo xtask serve"));
        assert!(!NOT_BUILT.contains("<script"));
    }

    #[test]
    fn content_types_follow_the_extension() {
        assert_eq!(
            content_type("assets/mandate_wasm_bg-1.wasm"),
            "application/wasm"
        );
        assert_eq!(
            content_type("mandate-verify.js"),
            "text/javascript; charset=utf-8"
        );
        assert_eq!(content_type("index.html"), "text/html; charset=utf-8");
        assert_eq!(
            content_type("assets/index-1.css"),
            "text/css; charset=utf-8"
        );
        assert_eq!(content_type("LICENSE"), "application/octet-stream");
    }
}

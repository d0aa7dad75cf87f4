//! The HTTP surface: routes, the OpenAPI document generated from the
//! handlers, and what every request passes (the edge: per-address rate
//! limits, security headers, metrics and logs; the body cap; panics as 500
//! problems; problem bodies for unknown routes and methods).

mod access;
mod agent;
mod approvals;
mod assurance;
mod authzen;
mod bodies;
mod dashboard;
mod docs;
mod events;
mod extract;
mod input;
mod issue;
mod log;
mod meta;
mod oauth;
mod oauth_admin;
mod oauth_consent;
mod oauth_signin;
mod orgs;
mod problems;
mod query;
mod records;
mod status;
mod tokens;
mod trust;
mod webhooks;
mod workflows;
mod write;

use std::any::Any;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Instant;

use axum::extract::{ConnectInfo, DefaultBodyLimit, MatchedPath, Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::{Extension, Router};
use tower_http::catch_panic::CatchPanicLayer;
use utoipa::OpenApi as _;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::AppState;
use crate::error::ApiError;

pub use events::OpenStreams;

/// Largest request body accepted.
pub const MAX_BODY_BYTES: usize = 64 * 1024;

/// The serialised OpenAPI document.
#[derive(Debug, Clone)]
struct Document(Arc<String>);

/// This API as OpenAPI 3.1.
#[utoipa::path(
    get,
    path = "/v1/openapi.json",
    tag = "operations",
    responses((status = 200, description = "The OpenAPI document", body = Object))
)]
async fn openapi(Extension(Document(document)): Extension<Document>) -> Response {
    let mut response = document.as_str().to_owned().into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

/// Lists whose entries must be distinct; the generator has no word for it.
const UNIQUE_ITEMS: [&str; 3] = [
    "#/components/schemas/ResourcePattern",
    "#/components/schemas/Action",
    "#/components/schemas/Framework",
];

/// Marks every array of the [`UNIQUE_ITEMS`] schemas `uniqueItems`, as core
/// refuses duplicates there.
fn mark_unique_lists(value: &mut serde_json::Value) {
    match value {
        serde_json::Value::Object(members) => {
            let unique = members.get("type").and_then(|t| t.as_str()) == Some("array")
                && members
                    .get("items")
                    .and_then(|items| items.get("$ref"))
                    .and_then(|r| r.as_str())
                    .is_some_and(|r| UNIQUE_ITEMS.contains(&r));
            if unique {
                members.insert("uniqueItems".to_owned(), serde_json::Value::Bool(true));
            }
            members.values_mut().for_each(mark_unique_lists);
        }
        serde_json::Value::Array(items) => items.iter_mut().for_each(mark_unique_lists),
        _ => {}
    }
}

async fn not_found(uri: axum::http::Uri) -> ApiError {
    ApiError::no_route(uri.path())
}

async fn method_not_allowed() -> ApiError {
    ApiError::new(
        StatusCode::METHOD_NOT_ALLOWED,
        "method_not_allowed",
        "this path does not take this method",
    )
}

fn panic_response(_: Box<dyn Any + Send + 'static>) -> Response {
    ApiError::internal("a request handler panicked").into_response()
}

/// A route template as a `'static` label. Templates come from the router's
/// fixed set, so the interned set stays as small as the route table.
fn intern(route: &str) -> &'static str {
    static ROUTES: std::sync::RwLock<Vec<&'static str>> = std::sync::RwLock::new(Vec::new());
    let known = ROUTES
        .read()
        .ok()
        .and_then(|routes| routes.iter().copied().find(|r| *r == route));
    if let Some(route) = known {
        return route;
    }
    let mut routes = match ROUTES.write() {
        Ok(routes) => routes,
        Err(poisoned) => poisoned.into_inner(),
    };
    if let Some(route) = routes.iter().copied().find(|r| *r == route) {
        return route;
    }
    let leaked: &'static str = Box::leak(route.to_owned().into_boxed_str());
    routes.push(leaked);
    leaked
}

/// The method as a label; methods outside the standard set count as `OTHER`.
fn method_label(method: &axum::http::Method) -> &'static str {
    use axum::http::Method;
    match *method {
        Method::GET => "GET",
        Method::POST => "POST",
        Method::PUT => "PUT",
        Method::DELETE => "DELETE",
        Method::PATCH => "PATCH",
        Method::HEAD => "HEAD",
        Method::OPTIONS => "OPTIONS",
        _ => "OTHER",
    }
}

/// The header naming a request: `x-request-id`, on every response.
const REQUEST_ID: header::HeaderName = header::HeaderName::from_static("x-request-id");

/// The edge of every request: the per-address rate limit (the peer, or the
/// client behind a trusted proxy); the headers every response carries (pages
/// set their own CSP and caching), among them the request's own id
/// (`req_<ulid>`, drawn here: a caller's `x-request-id` is not taken, so a
/// log line's id is always ours — except that an AuthZEN call's answer
/// carries the caller's back, as that API requires); and metrics and one `info` log line under
/// the route template with that id — never the raw path, which may hold ids.
async fn edge(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let started = Instant::now();
    let request_id = format!("req_{}", crate::random::ulid(state.clock.now()));
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map_or("unmatched", |p| intern(p.as_str()));
    let method = method_label(request.method());
    let peer = request
        .extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map(|c| c.0);
    // AuthZEN (§10.1.3): the PEP's request id is echoed on the answer.
    let echoed = route
        .starts_with("/v1/access/")
        .then(|| request.headers().get(REQUEST_ID).cloned())
        .flatten();
    let limited = peer.map(|peer| state.limiters.address(peer, request.headers()));
    let mut response = match limited {
        Some(Err(error)) => error.into_response(),
        _ => next.run(request).await,
    };
    let headers = response.headers_mut();
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    headers
        .entry(header::CONTENT_SECURITY_POLICY)
        .or_insert(HeaderValue::from_static(
            "default-src 'none'; frame-ancestors 'none'",
        ));
    headers
        .entry(header::CACHE_CONTROL)
        .or_insert(HeaderValue::from_static("no-store"));
    match echoed {
        Some(value) => {
            headers.insert(REQUEST_ID, value);
        }
        None => {
            if let Ok(value) = HeaderValue::from_str(&request_id) {
                headers.insert(REQUEST_ID, value);
            }
        }
    }
    let status = response.status().as_u16();
    let elapsed = started.elapsed();
    state
        .metrics
        .observe_request(route, method, status, elapsed);
    tracing::info!(%method, %route, status, micros = elapsed.as_micros() as u64, %request_id, "request");
    response
}

/// The whole application.
pub fn app(state: AppState) -> Router {
    let (router, document) = OpenApiRouter::with_openapi(docs::ApiDoc::openapi())
        .routes(routes!(issue::issue_l1))
        .routes(routes!(assurance::issue_l2))
        .routes(routes!(assurance::auth_capture))
        .routes(routes!(agent::record_action))
        .routes(routes!(agent::record_actions))
        .routes(routes!(agent::authorize))
        .routes(routes!(agent::complete))
        .routes(routes!(records::feedback))
        .routes(routes!(records::bulk_feedback))
        .routes(routes!(workflows::reputation))
        .routes(routes!(workflows::provenance_summary))
        .routes(routes!(workflows::graph))
        .routes(routes!(agent::delegate))
        .routes(routes!(approvals::approvals))
        .routes(routes!(approvals::approval))
        .routes(routes!(approvals::decide))
        .routes(routes!(events::events))
        .routes(routes!(tokens::revoke))
        .routes(routes!(tokens::token))
        .routes(routes!(records::record))
        .routes(routes!(records::records))
        .routes(routes!(workflows::workflows))
        .routes(routes!(dashboard::agents))
        .routes(routes!(dashboard::agent_history))
        .routes(routes!(dashboard::overview))
        .routes(routes!(dashboard::inbox_counts))
        .routes(routes!(tokens::tokens))
        .routes(routes!(orgs::me))
        .routes(routes!(orgs::create_org, orgs::list_orgs))
        .routes(routes!(orgs::update_org))
        .routes(routes!(orgs::create_key, orgs::list_keys))
        .routes(routes!(orgs::revoke_key))
        .routes(routes!(webhooks::create_webhook, webhooks::list_webhooks))
        .routes(routes!(
            webhooks::webhook,
            webhooks::update_webhook,
            webhooks::delete_webhook
        ))
        .routes(routes!(webhooks::rotate_secret))
        .routes(routes!(webhooks::deliveries))
        .routes(routes!(trust::create_vouch))
        .routes(routes!(trust::withdraw_vouch))
        .routes(routes!(trust::agent_trust))
        .routes(routes!(trust::trust_graph))
        .routes(routes!(trust::statement))
        .routes(routes!(status::status_list))
        .routes(routes!(log::checkpoint))
        .routes(routes!(log::key))
        .routes(routes!(log::consistency))
        .routes(routes!(log::record_proof))
        .routes(routes!(authzen::evaluation))
        .routes(routes!(authzen::evaluations))
        .routes(routes!(authzen::configuration))
        .routes(routes!(oauth::metadata))
        .routes(routes!(oauth_consent::authorize))
        .routes(routes!(oauth_consent::open_request))
        .routes(routes!(oauth_consent::decide_request))
        .routes(routes!(oauth_signin::providers))
        .routes(routes!(oauth_signin::start))
        .routes(routes!(oauth_signin::callback))
        .routes(routes!(oauth::token))
        .routes(routes!(oauth::revoke))
        .routes(routes!(oauth_admin::list_grants))
        .routes(routes!(oauth_admin::revoke_grant))
        .routes(routes!(
            oauth_admin::create_client,
            oauth_admin::list_clients
        ))
        .routes(routes!(oauth_admin::delete_client))
        .routes(routes!(
            oauth_admin::create_resource,
            oauth_admin::list_resources
        ))
        .routes(routes!(oauth_admin::delete_resource))
        .routes(routes!(meta::jwks))
        .routes(routes!(meta::healthz))
        .routes(routes!(meta::readyz))
        .routes(routes!(meta::metrics))
        .routes(routes!(openapi))
        .split_for_parts();
    let document = Document(Arc::new(docs::served(document, &state.config)));
    let router = match oauth::issuer_path(&state) {
        Some(path) => router.route(
            &format!("{}{path}", oauth::METADATA_PATH),
            axum::routing::get(oauth::metadata_at_issuer_path),
        ),
        None => router,
    };
    router
        .route("/v1/log/tile/{*path}", axum::routing::get(log::tile))
        .merge(crate::web::routes())
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(Extension(document))
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
        .layer(CatchPanicLayer::custom(panic_response))
        .layer(middleware::from_fn_with_state(state.clone(), edge))
        .with_state(state)
}

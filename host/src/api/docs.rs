//! OpenAPI: the document's frame (title, server, security schemes), the one
//! table of which credentials each operation takes, and the error responses
//! every operation may give. Operations describe themselves with
//! `#[utoipa::path]` on their handlers; [`served`] finishes the document the
//! router collected from them, with each operation's `security` from the
//! access table (`access.rs`), which the extractors enforce.

use serde_json::{Value, json};
use utoipa::openapi::path::{Operation, PathItem};
use utoipa::openapi::security::SecurityRequirement;
use utoipa::openapi::{OpenApi as Document, Server};
use utoipa::{IntoResponses, Modify, OpenApi};

use super::access::{Access, ROUTES};
use crate::config::{AgentAuth, Config};
use crate::error::Problem;
use crate::events::{ApprovalData, BudgetThresholdData, RecordData, TokenRevokedData};
use crate::model::forms::{ProvenanceRef, ResultFilter};

/// Problem responses (RFC 9457) shared by the operations.
#[derive(Debug, IntoResponses)]
#[allow(
    dead_code,
    reason = "only describes responses for the OpenAPI document"
)]
pub(crate) enum Errors {
    /// Malformed JSON or query.
    #[response(status = 400, content_type = "application/problem+json")]
    BadRequest(Problem),
    /// Missing or invalid API key, or a token that fails verification.
    #[response(status = 401, content_type = "application/problem+json")]
    Unauthorized(Problem),
    /// Token inactive, out of scope, over budget, widening, or not allowed.
    #[response(status = 403, content_type = "application/problem+json")]
    Forbidden(Problem),
    /// Unknown record, workflow, agent or token.
    #[response(status = 404, content_type = "application/problem+json")]
    NotFound(Problem),
    /// Already completed, already rated, or not in a state for this.
    #[response(status = 409, content_type = "application/problem+json")]
    Conflict(Problem),
    /// The body is larger than 64 KiB.
    #[response(status = 413, content_type = "application/problem+json")]
    PayloadTooLarge(Problem),
    /// The body is not `application/json`.
    #[response(status = 415, content_type = "application/problem+json")]
    UnsupportedMediaType(Problem),
    /// Well-formed JSON that breaks a rule, or a read that ran past the
    /// query time budget (`query_too_broad`).
    #[response(status = 422, content_type = "application/problem+json")]
    Unprocessable(Problem),
    /// Rate limited; see `Retry-After`.
    #[response(status = 429, content_type = "application/problem+json")]
    TooManyRequests(Problem),
    /// Storage cannot take writes right now.
    #[response(status = 503, content_type = "application/problem+json")]
    Unavailable(Problem),
}

/// `Authorization: Bearer mk_…`.
const API_KEY: &str = "api_key";
/// `Authorization: Bearer <compact_jwt>`: an unbound token.
const AGENT_TOKEN: &str = "agent_token";
/// `Authorization: DPoP <compact_jwt>`: a bound token, with [`DPOP_PROOF`].
const DPOP_TOKEN: &str = "dpop_token";
/// The `DPoP` header: the holder's proof for this request.
const DPOP_PROOF: &str = "dpop_proof";
/// The consent page's session cookie, of a person an identity provider
/// signed in.
const CONSENT_SESSION: &str = "consent_session";
/// The consent session's CSRF value, sent with it.
const CONSENT_CSRF: &str = "consent_csrf";

/// The alternatives of an operation's `security` in this deployment.
fn requirements(access: Access, config: &Config) -> Vec<SecurityRequirement> {
    let api_key = || SecurityRequirement::new(API_KEY, Vec::<String>::new());
    let token = || {
        [
            SecurityRequirement::new(AGENT_TOKEN, Vec::<String>::new()),
            SecurityRequirement::new(DPOP_TOKEN, Vec::<String>::new())
                .add(DPOP_PROOF, Vec::<String>::new()),
        ]
    };
    // An empty requirement: the call may be made without any scheme.
    let none = SecurityRequirement::default;
    let metrics_open = config.metrics_open_on_loopback && config.trusted_proxies.is_empty();
    match access {
        Access::Public => Vec::new(),
        Access::ApiKey(_) => vec![api_key()],
        Access::AdminOrLoopback if metrics_open => vec![api_key(), none()],
        Access::AdminOrLoopback => vec![api_key()],
        Access::Token => token().into(),
        Access::TokenOrNamed if config.agent_auth == AgentAuth::Jti => {
            token().into_iter().chain([none()]).collect()
        }
        Access::TokenOrNamed => token().into(),
        Access::ApiKeyOrToken(_) => [api_key()].into_iter().chain(token()).collect(),
        Access::ApiKeyOrSession(_) => vec![
            api_key(),
            SecurityRequirement::new(CONSENT_SESSION, Vec::<String>::new())
                .add(CONSENT_CSRF, Vec::<String>::new()),
        ],
    }
}

/// The security schemes the access table's operations refer to. Written as JSON because
/// utoipa's HTTP schemes lack `DPoP`, which RFC 9449 §12.4 registers as an
/// HTTP authentication scheme (§7.1).
fn security_schemes() -> Value {
    json!({
        API_KEY: {
            "type": "http",
            "scheme": "bearer",
            "bearerFormat": "mk_…",
            "description": "An API key (`mk_` and 43 base64url characters), for humans and operators: issuing, rating, reading, revoking."
        },
        AGENT_TOKEN: {
            "type": "http",
            "scheme": "bearer",
            "bearerFormat": "JWT",
            "description": "The agent's own token (a VAT: a compact JWT, `typ` `vat+jwt`), as a Bearer token. A token bound to a key (`cnf.jkt`, `token_type` `DPoP`) is refused this way: it is sent as `dpop_token` with `dpop_proof`."
        },
        DPOP_TOKEN: {
            "type": "http",
            "scheme": "DPoP",
            "description": "A token bound to the agent's key, as `Authorization: DPoP <compact_jwt>` (RFC 9449 §7.1); always together with `dpop_proof`."
        },
        DPOP_PROOF: {
            "type": "apiKey",
            "in": "header",
            "name": "DPoP",
            "description": "The holder's proof of possession for this one request (RFC 9449 §4): a JWT signed by the token's key, header `typ` `dpop+jwt`, `alg` `EdDSA` and the public `jwk`; claims `jti` (fresh), `htm`, `htu`, `iat` and `ath` (the token's SHA-256)."
        },
        CONSENT_SESSION: {
            "type": "apiKey",
            "in": "cookie",
            "name": "__Host-mandate-consent",
            "description": "The consent page's session of a person an identity provider signed in (`/v1/oauth/oidc/{name}/callback` sets it; `HttpOnly`, `SameSite=Strict`), for the one authorization request it names; always together with `consent_csrf`, from this server's own origin."
        },
        CONSENT_CSRF: {
            "type": "apiKey",
            "in": "header",
            "name": "Mandate-CSRF",
            "description": "The consent session's CSRF value, which the callback gives the consent page in its redirect's fragment (`#signed-in=…`)."
        }
    })
}

/// The operations of a path, by method as the document names them.
fn operations(item: &mut PathItem) -> impl Iterator<Item = (&'static str, &mut Operation)> {
    [
        ("get", &mut item.get),
        ("put", &mut item.put),
        ("post", &mut item.post),
        ("delete", &mut item.delete),
        ("options", &mut item.options),
        ("head", &mut item.head),
        ("patch", &mut item.patch),
        ("trace", &mut item.trace),
        ("query", &mut item.query),
    ]
    .into_iter()
    .filter_map(|(method, operation)| operation.as_mut().map(|o| (method, o)))
}

/// Gives every operation its `security` from [`ROUTES`], replacing what
/// a handler declares. An operation the table misses gets none, so the gap
/// shows: validators refuse the document.
struct OperationSecurity<'a>(&'a Config);

impl Modify for OperationSecurity<'_> {
    fn modify(&self, openapi: &mut Document) {
        for (path, item) in &mut openapi.paths.paths {
            for (method, operation) in operations(item) {
                operation.security = ROUTES
                    .iter()
                    .find(|(m, p, _)| *m == method && p == path)
                    .map(|(_, _, access)| requirements(*access, self.0));
            }
        }
    }
}

/// Adds the edge's answer to every operation that does not list it: any
/// request may be refused 429 by the per-address limit before it reaches
/// its handler.
struct EdgeLimit;

impl Modify for EdgeLimit {
    fn modify(&self, openapi: &mut Document) {
        let Some(limited) = Errors::responses().remove("429") else {
            return;
        };
        for item in openapi.paths.paths.values_mut() {
            for (_, operation) in operations(item) {
                operation
                    .responses
                    .responses
                    .entry("429".to_owned())
                    .or_insert_with(|| limited.clone());
            }
        }
    }
}

/// The document as served: the operations the router collected, each with
/// its credentials from [`ROUTES`] and the edge's 429; the server (the
/// deployment's `public_url`, else `/`: the host the document was fetched
/// from); the security schemes; and `uniqueItems` where core refuses
/// duplicates.
pub(super) fn served(mut document: Document, config: &Config) -> String {
    let server = config
        .public_url
        .as_deref()
        .map_or("/", |url| url.trim_end_matches('/'));
    document.servers = Some(vec![Server::new(server)]);
    OperationSecurity(config).modify(&mut document);
    EdgeLimit.modify(&mut document);
    let mut value = serde_json::to_value(&document).unwrap_or_default();
    super::mark_unique_lists(&mut value);
    if let Some(components) = value.get_mut("components").and_then(Value::as_object_mut) {
        components.insert("securitySchemes".to_owned(), security_schemes());
    }
    value.to_string()
}

/// The document's frame; paths are added by the router.
#[derive(OpenApi)]
#[openapi(
    info(
        title = "Mandate",
        description = "Delegated, accountable authority for AI agents: tokens, action records, ratings and reputation."
    ),
    // Query parameters name the first three by reference; utoipa does not
    // collect them. The events' `data` (webhooks and `GET /v1/events`) is
    // no operation's body, so its schemas are listed here for clients.
    components(schemas(
        Problem,
        ProvenanceRef,
        ResultFilter,
        RecordData,
        TokenRevokedData,
        ApprovalData,
        BudgetThresholdData
    ))
)]
pub(crate) struct ApiDoc;

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use serde_json::{Value, json};

    use mandate_core::Permission;

    use super::requirements as of;
    use crate::api::access::{Access, KeyNeeds, ROUTES};
    use crate::config::{AgentAuth, Config};

    /// `(method, path)` of every operation the router serves.
    async fn served_operations() -> BTreeSet<(String, String)> {
        crate::install_tls_provider();
        let dir = tempfile::tempdir().unwrap();
        let (state, _) = crate::AppState::open(Config::for_test(dir.path())).unwrap();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/v1/openapi.json", listener.local_addr().unwrap());
        let server = tokio::spawn(axum::serve(listener, crate::app(state)).into_future());
        let document: Value = reqwest::get(url).await.unwrap().json().await.unwrap();
        server.abort();
        let mut operations = BTreeSet::new();
        for (path, item) in document["paths"].as_object().unwrap() {
            for method in item.as_object().unwrap().keys() {
                operations.insert((method.clone(), path.clone()));
            }
        }
        operations
    }

    #[tokio::test]
    async fn the_access_table_names_every_operation_once() {
        let rows: BTreeSet<(String, String)> = ROUTES
            .iter()
            .map(|(method, path, _)| ((*method).to_owned(), (*path).to_owned()))
            .collect();
        assert_eq!(rows.len(), ROUTES.len(), "a row is repeated");
        assert_eq!(rows, served_operations().await);
    }

    fn requirements(access: Access, config: &Config) -> Value {
        serde_json::to_value(of(access, config)).unwrap()
    }

    #[test]
    fn requirements_follow_the_deployment() {
        let token = json!([{"agent_token": []}, {"dpop_proof": [], "dpop_token": []}]);
        let mut config = Config::default();
        assert_eq!(requirements(Access::Public, &config), json!([]));
        assert_eq!(
            requirements(Access::ApiKey(KeyNeeds::Admin), &config),
            json!([{"api_key": []}])
        );
        assert_eq!(
            requirements(Access::AdminOrLoopback, &config),
            json!([{"api_key": []}, {}])
        );
        assert_eq!(requirements(Access::Token, &config), token);
        assert_eq!(
            requirements(Access::TokenOrNamed, &config),
            json!([{"agent_token": []}, {"dpop_proof": [], "dpop_token": []}, {}])
        );
        assert_eq!(
            requirements(Access::ApiKeyOrToken(Permission::Revoke), &config),
            json!([{"api_key": []}, {"agent_token": []}, {"dpop_proof": [], "dpop_token": []}])
        );
        config.agent_auth = AgentAuth::Bearer;
        config.trusted_proxies = vec!["192.0.2.1".parse().unwrap()];
        assert_eq!(requirements(Access::TokenOrNamed, &config), token);
        assert_eq!(
            requirements(Access::AdminOrLoopback, &config),
            json!([{"api_key": []}])
        );
    }
}

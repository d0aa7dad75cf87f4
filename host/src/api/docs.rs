//! OpenAPI: the document's frame (title, security scheme) and the error
//! responses every operation may give. Operations describe themselves with
//! `#[utoipa::path]` on their handlers.

use utoipa::openapi::security::{Http, HttpAuthScheme, SecurityScheme};
use utoipa::{IntoResponses, Modify, OpenApi};

use crate::error::Problem;
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

struct ApiKeyScheme;

impl Modify for ApiKeyScheme {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        let mut scheme = Http::new(HttpAuthScheme::Bearer);
        scheme.description = Some("An API key, `mk_…`".to_owned());
        components.add_security_scheme("api_key", SecurityScheme::Http(scheme));
    }
}

/// The document's frame; paths are added by the router.
#[derive(OpenApi)]
#[openapi(
    info(
        title = "Mandate",
        description = "Delegated, accountable authority for AI agents: tokens, action records, ratings and reputation."
    ),
    modifiers(&ApiKeyScheme),
    // Query parameters name these by reference; utoipa does not collect them.
    components(schemas(Problem, ProvenanceRef, ResultFilter))
)]
pub(crate) struct ApiDoc;

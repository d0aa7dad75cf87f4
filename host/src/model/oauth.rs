//! The bodies of the OAuth authorization server (docs/oauth.md): its
//! metadata (RFC 8414), the token endpoint's form (RFC 6749 §3.2) and the
//! owner's API for pre-registered public clients. OAuth's own bodies use
//! OAuth's names; the clients API is a Mandate API like any other (JSON,
//! unknown members refused).

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// Authorization server metadata (RFC 8414 §2), every URL under the
/// deployment's `issuer` (= `public_url`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
pub struct AuthorizationServerMetadata {
    /// The issuer: `public_url` exactly (RFC 8414 §3.3).
    pub issuer: String,
    pub authorization_endpoint: String,
    pub token_endpoint: String,
    /// RFC 7009 token revocation.
    pub revocation_endpoint: String,
    /// The keys access tokens (VATs) are signed with.
    pub jwks_uri: String,
    /// `["code"]`.
    pub response_types_supported: Vec<String>,
    /// `["query"]`.
    pub response_modes_supported: Vec<String>,
    pub grant_types_supported: Vec<String>,
    /// `["S256"]` (PKCE, RFC 7636; `plain` is never accepted).
    pub code_challenge_methods_supported: Vec<String>,
    /// `["none"]`: public clients only.
    pub token_endpoint_auth_methods_supported: Vec<String>,
    /// `["none"]`.
    pub revocation_endpoint_auth_methods_supported: Vec<String>,
    /// A `client_id` may be the https URL of a client ID metadata document.
    pub client_id_metadata_document_supported: bool,
    /// Every authorization response carries `iss` (RFC 9207).
    pub authorization_response_iss_parameter_supported: bool,
    /// `["EdDSA"]` (RFC 9449 §5.1).
    pub dpop_signing_alg_values_supported: Vec<String>,
}

/// A token request (RFC 6749 §4.1.3, §6; RFC 8693 §2.1), as a form.
/// Parameters not listed are ignored (RFC 6749 §3.1).
#[derive(Debug, Clone, Deserialize, ToSchema)]
pub struct TokenRequest {
    /// The grant asked for.
    pub grant_type: String,
}

/// A public client registered in advance by an owner (MCP
/// "Client Registration": pre-registration).
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateClientRequest {
    /// What the consent page shows: 1–100 characters, no control
    /// characters.
    pub name: String,
    /// Where the authorization server may send the browser back: 1–10
    /// absolute URIs without fragment, `https`, or `http` on a loopback
    /// host (`127.0.0.1`, `[::1]`, `localhost`; RFC 8252 §7.3, §8.3).
    pub redirect_uris: Vec<String>,
    /// `authorization_code`, and `refresh_token` when the client may keep
    /// access by refreshing; by default both.
    #[serde(default)]
    pub grant_types: Option<Vec<String>>,
}

/// A pre-registered client as the API shows it.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ClientBody {
    /// `mcl_<ulid>`: what the client sends as `client_id`.
    pub client_id: String,
    pub name: String,
    pub redirect_uris: Vec<String>,
    pub grant_types: Vec<String>,
    /// Always `none`: a public client, without a secret.
    pub token_endpoint_auth_method: String,
    /// RFC 3339.
    pub created_at: String,
    /// The API key that registered it.
    pub created_by: String,
}

/// The organisation's pre-registered clients, newest first.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ClientList {
    pub clients: Vec<ClientBody>,
}

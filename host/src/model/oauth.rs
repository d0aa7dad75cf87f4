//! The bodies of the OAuth authorization server (docs/oauth.md): its
//! metadata (RFC 8414), the token and revocation endpoints' forms (RFC
//! 6749 §3.2, RFC 7009 §2.1), the owner's API for pre-registered public
//! clients and the grants API. OAuth's own bodies use
//! OAuth's names; the clients API is a Mandate API like any other (JSON,
//! unknown members refused).

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::{ConstraintsBody, PolicyBody, forms, object, whole_number};

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
    /// `["EdDSA", "Ed25519"]` (RFC 9449 §5.1; RFC 9864 names `Ed25519`).
    pub dpop_signing_alg_values_supported: Vec<String>,
}

/// A token request (RFC 6749 §4.1.3, §6; RFC 8693 §2.1), as a form.
/// Parameters not listed are ignored (RFC 6749 §3.1).
#[derive(Debug, Clone, Deserialize, ToSchema)]
pub struct TokenRequest {
    /// The grant asked for: `authorization_code`, `refresh_token` or
    /// `urn:ietf:params:oauth:grant-type:token-exchange`.
    pub grant_type: String,
    /// The authorization code (`authorization_code`).
    #[serde(default)]
    pub code: Option<String>,
    /// The `redirect_uri` of the authorization request, exactly.
    #[serde(default)]
    pub redirect_uri: Option<String>,
    /// The client the code or refresh token was issued to (required).
    #[serde(default)]
    pub client_id: Option<String>,
    /// The PKCE verifier (RFC 7636 §4.5).
    #[serde(default)]
    pub code_verifier: Option<String>,
    /// The resource the token is for: when sent, the authorization
    /// request's exactly (RFC 8707 §2.2).
    #[serde(default)]
    pub resource: Option<String>,
    /// The refresh token (`refresh_token`).
    #[serde(default)]
    pub refresh_token: Option<String>,
    /// `refresh_token`: the scope of the new access token, no wider than
    /// the grant's; the actions or resource patterns it leaves out are the
    /// grant's (RFC 6749 §6). Token exchange: the child's actions and
    /// resource patterns, each the subject's when left out.
    #[serde(default)]
    pub scope: Option<String>,
    /// Token exchange: the parent VAT itself, compact (never a jti).
    #[serde(default)]
    pub subject_token: Option<String>,
    /// Token exchange: `urn:ietf:params:oauth:token-type:access_token` or
    /// `…:jwt`.
    #[serde(default)]
    pub subject_token_type: Option<String>,
    /// Token exchange: absent or `urn:ietf:params:oauth:token-type:access_token`.
    #[serde(default)]
    pub requested_token_type: Option<String>,
    /// Token exchange: refused when sent (the chain names every actor).
    #[serde(default)]
    pub actor_token: Option<String>,
    /// Token exchange: refused when sent.
    #[serde(default)]
    pub actor_token_type: Option<String>,
    /// Token exchange: accepted only when equal to the child's `aud`.
    #[serde(default)]
    pub audience: Option<String>,
    /// Token exchange: a JSON object with the rest of `POST
    /// /v1/vat/delegate`'s body (`agent_id`, `constraints`, `policy`,
    /// `ttl_seconds`).
    #[serde(default)]
    pub mandate_grant: Option<String>,
    /// Token exchange: a public Ed25519 JWK (JSON) the child is bound to.
    #[serde(default)]
    pub holder_key: Option<String>,
}

impl TokenRequest {
    /// The parameters sent, by name, as core's token-exchange reader
    /// takes them.
    pub fn parameters(&self) -> std::collections::BTreeMap<String, String> {
        [
            ("grant_type", Some(&self.grant_type)),
            ("resource", self.resource.as_ref()),
            ("scope", self.scope.as_ref()),
            ("subject_token", self.subject_token.as_ref()),
            ("subject_token_type", self.subject_token_type.as_ref()),
            ("requested_token_type", self.requested_token_type.as_ref()),
            ("actor_token", self.actor_token.as_ref()),
            ("actor_token_type", self.actor_token_type.as_ref()),
            ("audience", self.audience.as_ref()),
            ("mandate_grant", self.mandate_grant.as_ref()),
            ("holder_key", self.holder_key.as_ref()),
        ]
        .into_iter()
        .filter_map(|(name, value)| Some((name.to_owned(), value?.clone())))
        .collect()
    }
}

/// A revocation request (RFC 7009 §2.1), as a form.
#[derive(Debug, Clone, Deserialize, ToSchema)]
pub struct RevocationRequest {
    /// The refresh token (`mrt_…`) or access token to revoke.
    pub token: String,
    /// `refresh_token` or `access_token`; read by nobody (the tokens'
    /// forms tell them apart), accepted as RFC 7009 §2.1 allows.
    #[serde(default)]
    pub token_type_hint: Option<String>,
    /// When given, the token must have been issued to this client, else
    /// nothing is revoked (`unauthorized_client`).
    #[serde(default)]
    pub client_id: Option<String>,
}

/// A successful token response (RFC 6749 §5.1).
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct TokenResponse {
    /// The access token: a VAT, compact.
    pub access_token: String,
    /// `Bearer`, or `DPoP` for a token bound to a key (RFC 9449 §5).
    pub token_type: String,
    /// Seconds until the access token expires.
    pub expires_in: u64,
    /// The granted scope: actions, then resource patterns (absent when a
    /// resource pattern cannot be written as a scope token).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
    /// A refresh token (`mrt_…`), when the client is registered for
    /// `refresh_token`; each refresh answers a new one and uses up the one
    /// presented. Never for a token exchange.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub refresh_token: Option<String>,
    /// Token exchange: `urn:ietf:params:oauth:token-type:access_token`
    /// (RFC 8693 §2.2.1).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub issued_token_type: Option<String>,
}

/// `POST /v1/oauth/requests/open`.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct OpenRequest {
    /// The sealed authorization request, from the consent page's URL.
    #[schema(max_length = 16384)]
    pub request: String,
}

/// A pending authorization request, as the consent page shows it.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct OpenedRequest {
    pub client_id: String,
    /// The client's registered name, or for a metadata document's client
    /// the `client_name` it says (its own claim: show it as text, beside
    /// `client_host`).
    pub client_name: String,
    /// `registered`: a client the organisation registered in advance;
    /// `document`: a client named by the URL of its metadata document.
    pub client_kind: String,
    /// For a `document` client, the host of its `client_id` URL: who the
    /// client is, whatever its name says (show it prominently).
    pub client_host: Option<String>,
    /// Where the browser goes back to.
    pub redirect_uri: String,
    /// The host of `redirect_uri`, which the page must show.
    pub redirect_host: String,
    /// Whether `redirect_uri` is on this machine (loopback): the page
    /// warns about it.
    pub redirect_loopback: bool,
    /// The resource server the token will be for (its `aud`).
    pub resource: String,
    /// The `scope` parameter as sent, if any.
    pub scope: Option<String>,
    /// The actions `scope` asks for.
    pub actions: Vec<String>,
    /// The resource patterns `scope` asks for (none: the human names them).
    pub resources: Vec<String>,
    /// The agent the grant is for unless the human names another.
    pub agent_id: String,
    /// RFC 3339: when the request can no longer be decided.
    pub expires_at: String,
    /// Who consents, as the organisation knows them: the API key's e-mail,
    /// or the name the identity provider gave (else its subject).
    pub signed_in_as: String,
    /// How they signed in: `L1` (an API key) or `L2` (an identity
    /// provider); the grant's tokens carry it as `svc_assurance`.
    pub assurance: String,
}

/// Approve or deny.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ConsentDecision {
    Approve,
    Deny,
}

/// What the human grants: never wider than asked (the actions and
/// resource patterns of `scope`), for an agent of their own.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ConsentGrant {
    /// The agent; by default `oauth-` and a hash of the client and the human.
    #[schema(value_type = Option<forms::AgentId>)]
    #[serde(default)]
    pub agent_id: Option<String>,
    #[schema(value_type = Vec<forms::ResourcePattern>, min_items = 1, max_items = 64)]
    pub resources: Vec<String>,
    #[schema(value_type = Vec<forms::Action>, min_items = 1, max_items = 64)]
    pub actions: Vec<String>,
    #[serde(default, deserialize_with = "object")]
    pub constraints: Option<ConstraintsBody>,
    #[serde(default, deserialize_with = "object")]
    pub policy: Option<PolicyBody>,
    /// The grant's lifetime in seconds (default 3600, at most 2592000).
    #[schema(minimum = 1, maximum = 2_592_000)]
    #[serde(default, deserialize_with = "whole_number")]
    pub ttl_seconds: Option<u64>,
}

/// `POST /v1/oauth/requests/decision`.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ConsentDecisionRequest {
    /// The sealed authorization request.
    #[schema(max_length = 16384)]
    pub request: String,
    pub decision: ConsentDecision,
    /// What is granted; required to approve.
    #[serde(default, deserialize_with = "object")]
    pub grant: Option<ConsentGrant>,
}

/// Where the consent page sends the browser: the client's redirect URI
/// with `code` (or `error`), `state` and `iss`.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ConsentDecisionResponse {
    pub redirect: String,
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

/// A resource whose MCP gates relay clients' proofs (docs/oauth.md, "The
/// gate relays the client's proof").
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateResourceRequest {
    /// The resource's URL, as tokens name it in `aud` (its RFC 8707
    /// resource indicator): absolute `https`, or `http` on a loopback
    /// host, without fragment.
    pub resource: String,
    /// RFC 7638 thumbprints (base64url SHA-256, 43 characters) of the
    /// Ed25519 keys its gates sign `Mandate-Relay` proofs with: 1–10.
    pub relay_jkts: Vec<String>,
}

/// A registered resource as the API shows it.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ResourceBody {
    /// `ors_<ulid>`.
    pub resource_id: String,
    pub resource: String,
    pub relay_jkts: Vec<String>,
    /// RFC 3339.
    pub created_at: String,
    /// The API key that registered it.
    pub created_by: String,
}

/// The organisation's registered resources, newest first.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ResourceList {
    pub resources: Vec<ResourceBody>,
}

/// The organisation's pre-registered clients, newest first.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ClientList {
    pub clients: Vec<ClientBody>,
}

/// A consent's grant: what a client holds for a human, and whether it
/// still does.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct GrantBody {
    /// `ogr_<ulid>`.
    pub grant_id: String,
    pub human_ref: String,
    pub client_id: String,
    /// The client's name as the consent page showed it.
    pub client_name: String,
    /// The host of a client ID metadata document URL, if the client is one.
    pub client_host: Option<String>,
    /// The resource server the grant's tokens are for (`aud`).
    pub resource: Option<String>,
    pub agent_id: String,
    /// The grant root: revoking it ends the grant.
    pub root_jti: String,
    /// What was granted, as a `scope` parameter.
    pub scope: String,
    /// RFC 3339.
    pub created_at: String,
    /// RFC 3339: the grant root's `exp`.
    pub expires_at: String,
    /// RFC 3339: the redemption or the last refresh.
    pub last_used_at: String,
    /// RFC 3339, when revoked.
    pub revoked_at: Option<String>,
    /// `refresh_token_reused`, `code_replayed`, `client_revoked`,
    /// `revoked` (by a person) or `root_revoked`.
    pub revoke_reason: Option<String>,
}

/// Grants, newest first.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct GrantList {
    pub grants: Vec<GrantBody>,
    /// Pass back as `cursor` for the next page; absent on the last page.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

/// An identity provider people may sign in with on the consent page.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct SignInProviderInfo {
    /// Its name in `/v1/oauth/oidc/{name}/start`.
    pub name: String,
    /// Its issuer identifier.
    pub issuer: String,
    /// The issuer's host, to show on the sign-in button.
    pub host: String,
}

/// The identity providers people may sign in with on the consent page.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct SignInProviders {
    pub providers: Vec<SignInProviderInfo>,
}

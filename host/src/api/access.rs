//! Who may call what: the one table of the credentials each operation takes
//! and, for an API key, what its role must allow (core's permission table,
//! `Role::permissions`) or whether only the deployment's admin key will
//! do. The API-key extractors enforce it for the route a request matched;
//! the OpenAPI document's `security` is written from it; tests walk it.

use std::collections::HashMap;
use std::sync::LazyLock;

use axum::http::Method;
use mandate_core::Permission;

/// What an API key must be allowed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum KeyNeeds {
    /// Its role holds the permission.
    Role(Permission),
    /// It is the deployment's admin key.
    Admin,
}

/// The credentials an operation takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Access {
    /// None: the public key set, health, the OpenAPI document.
    Public,
    /// An API key allowed this.
    ApiKey(KeyNeeds),
    /// The admin key, or nothing from a loopback client when the deployment
    /// opens `/metrics` there (and trusts no proxy).
    AdminOrLoopback,
    /// The agent's token itself: Bearer, or DPoP with its proof when bound.
    Token,
    /// The token itself, or (unless the deployment sets `agent_auth =
    /// "bearer"`) no credential but what the request names: a bare
    /// `vat_jti` for `record/action` (and each record of
    /// `record/actions`) and `authorize`, the record's `aar_id` for
    /// `complete`.
    TokenOrNamed,
    /// An API key whose role holds the permission, or the acting agent's
    /// token itself.
    ApiKeyOrToken(Permission),
    /// An API key whose role holds the permission, or the consent page's
    /// session of a person an identity provider signed in (its cookie and
    /// CSRF header; `oauth_signin`).
    ApiKeyOrSession(Permission),
}

impl Access {
    /// What an API key presented to the operation must be allowed; `None`
    /// when the operation takes no API key.
    pub(crate) fn key_needs(self) -> Option<KeyNeeds> {
        match self {
            Access::ApiKey(needs) => Some(needs),
            Access::ApiKeyOrToken(permission) | Access::ApiKeyOrSession(permission) => {
                Some(KeyNeeds::Role(permission))
            }
            Access::AdminOrLoopback => Some(KeyNeeds::Admin),
            Access::Public | Access::Token | Access::TokenOrNamed => None,
        }
    }
}

const READ: Access = Access::ApiKey(KeyNeeds::Role(Permission::Read));
const ISSUE: Access = Access::ApiKey(KeyNeeds::Role(Permission::Issue));
const KEYS: Access = Access::ApiKey(KeyNeeds::Role(Permission::ManageKeys));
const HOOKS: Access = Access::ApiKey(KeyNeeds::Role(Permission::ManageWebhooks));
const ADMIN: Access = Access::ApiKey(KeyNeeds::Admin);
const CLIENTS: Access = Access::ApiKey(KeyNeeds::Role(Permission::ManageClients));
const EVALUATE: Access = Access::ApiKey(KeyNeeds::Role(Permission::Evaluate));
const CONSENT: Access = Access::ApiKeyOrSession(Permission::Issue);

/// Every operation by method and path, with the credentials it takes. A
/// test checks that it names every operation the router serves, and only
/// those.
#[rustfmt::skip]
pub(crate) const ROUTES: [(&str, &str, Access); 76] = [
    ("post",   "/v1/vat/issue/l1",                              ISSUE),
    ("post",   "/v1/vat/issue/l2",                              ISSUE),
    ("post",   "/v1/vat/auth/capture",                          ISSUE),
    ("post",   "/v1/vat/record/action",                         Access::TokenOrNamed),
    ("post",   "/v1/vat/record/actions",                        Access::TokenOrNamed),
    ("post",   "/v1/vat/authorize",                             Access::TokenOrNamed),
    ("post",   "/v1/vat/aar/{aar_id}/complete",                 Access::TokenOrNamed),
    ("post",   "/v1/vat/aar/{aar_id}/feedback",                 Access::ApiKey(KeyNeeds::Role(Permission::Rate))),
    ("post",   "/v1/vat/aar/feedback",                          Access::ApiKey(KeyNeeds::Role(Permission::Rate))),
    ("get",    "/v1/vat/reputation/{agent_id}",                 READ),
    ("get",    "/v1/vat/aar/provenance/{provenance_ref}",       READ),
    ("get",    "/v1/vat/aar/provenance/{provenance_ref}/graph", READ),
    ("post",   "/v1/vat/delegate",                              Access::Token),
    ("get",    "/v1/vat/approvals",                             READ),
    ("get",    "/v1/vat/approvals/{approval_id}",               Access::ApiKeyOrToken(Permission::Read)),
    ("post",   "/v1/vat/approvals/{approval_id}/decision",      Access::ApiKey(KeyNeeds::Role(Permission::Decide))),
    ("get",    "/v1/events",                                    READ),
    ("post",   "/v1/vat/revoke",                                Access::ApiKeyOrToken(Permission::Revoke)),
    ("get",    "/v1/vat/tokens/{jth}",                          READ),
    ("get",    "/v1/vat/aar/{aar_id}",                          READ),
    ("get",    "/v1/vat/aar",                                   READ),
    ("get",    "/v1/vat/workflows",                             READ),
    ("get",    "/v1/vat/agents",                                READ),
    ("get",    "/v1/vat/agents/{agent_id}/history",             READ),
    ("get",    "/v1/vat/overview",                              READ),
    ("get",    "/v1/vat/inbox/counts",                          READ),
    ("get",    "/v1/vat/tokens",                                READ),
    ("get",    "/v1/me",                                        READ),
    ("post",   "/v1/orgs",                                      ADMIN),
    ("get",    "/v1/orgs",                                      ADMIN),
    ("patch",  "/v1/orgs/{org_id}",                             ADMIN),
    ("post",   "/v1/keys",                                      KEYS),
    ("get",    "/v1/keys",                                      KEYS),
    ("delete", "/v1/keys/{key_id}",                             KEYS),
    ("post",   "/v1/webhooks",                                  HOOKS),
    ("get",    "/v1/webhooks",                                  HOOKS),
    ("get",    "/v1/webhooks/{webhook_id}",                     HOOKS),
    ("patch",  "/v1/webhooks/{webhook_id}",                     HOOKS),
    ("delete", "/v1/webhooks/{webhook_id}",                     HOOKS),
    ("post",   "/v1/webhooks/{webhook_id}/rotate-secret",       HOOKS),
    ("get",    "/v1/webhooks/{webhook_id}/deliveries",          HOOKS),
    ("post",   "/v1/trust/vouches",                             Access::ApiKeyOrToken(Permission::Vouch)),
    ("delete", "/v1/trust/vouches/{vouch_id}",                  Access::ApiKeyOrToken(Permission::Vouch)),
    ("get",    "/v1/trust/agents/{agent_id}",                   READ),
    ("get",    "/v1/trust/graph",                               READ),
    ("get",    "/v1/trust/agents/{agent_id}/statement",         Access::ApiKeyOrToken(Permission::Read)),
    ("get",    "/v1/vat/status/{list}",                         Access::Public),
    ("get",    "/v1/log/checkpoint",                            Access::Public),
    ("get",    "/v1/log/key",                                   Access::Public),
    ("get",    "/v1/log/consistency",                           Access::Public),
    ("get",    "/v1/vat/aar/{aar_id}/proof",                    READ),
    ("post",   "/v1/access/evaluation",                         EVALUATE),
    ("post",   "/v1/access/evaluations",                        EVALUATE),
    ("get",    "/.well-known/authzen-configuration",            Access::Public),
    ("get",    "/.well-known/oauth-authorization-server",       Access::Public),
    ("get",    "/v1/oauth/authorize",                           Access::Public),
    ("post",   "/v1/oauth/requests/open",                       CONSENT),
    ("post",   "/v1/oauth/requests/decision",                   CONSENT),
    ("get",    "/v1/oauth/oidc/providers",                      Access::Public),
    ("get",    "/v1/oauth/oidc/{name}/start",                   Access::Public),
    ("get",    "/v1/oauth/oidc/{name}/callback",                Access::Public),
    ("post",   "/v1/oauth/token",                               Access::Public),
    ("post",   "/v1/oauth/revoke",                              Access::Public),
    ("get",    "/v1/oauth/grants",                              READ),
    ("delete", "/v1/oauth/grants/{grant_id}",                   Access::ApiKey(KeyNeeds::Role(Permission::Revoke))),
    ("post",   "/v1/oauth/clients",                             CLIENTS),
    ("get",    "/v1/oauth/clients",                             CLIENTS),
    ("delete", "/v1/oauth/clients/{client_id}",                 CLIENTS),
    ("post",   "/v1/oauth/resources",                           CLIENTS),
    ("get",    "/v1/oauth/resources",                           CLIENTS),
    ("delete", "/v1/oauth/resources/{resource_id}",             CLIENTS),
    ("get",    "/.well-known/jwks.json",                        Access::Public),
    ("get",    "/healthz",                                      Access::Public),
    ("get",    "/readyz",                                       Access::Public),
    ("get",    "/metrics",                                      Access::AdminOrLoopback),
    ("get",    "/v1/openapi.json",                              Access::Public),
];

/// [`ROUTES`] by route template: each route's methods and their
/// credentials, in the table's order (looked up on every API-key request,
/// so a hash look-up rather than a walk of the table).
static BY_ROUTE: LazyLock<HashMap<&'static str, Vec<(&'static str, Access)>>> =
    LazyLock::new(|| {
        let mut by_route: HashMap<&'static str, Vec<(&'static str, Access)>> = HashMap::new();
        for (method, route, access) in ROUTES {
            by_route.entry(route).or_default().push((method, access));
        }
        by_route
    });

/// The credentials of the operation at `route` (a route template, as the
/// router matched it) with `method`.
pub(crate) fn of(method: &Method, route: &str) -> Option<Access> {
    BY_ROUTE
        .get(route)?
        .iter()
        .find(|(m, _)| m.eq_ignore_ascii_case(method.as_str()))
        .map(|(_, access)| *access)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_lookup_answers_each_row_of_the_table_and_nothing_else() {
        for (method, route, access) in ROUTES {
            let method = Method::from_bytes(method.to_ascii_uppercase().as_bytes())
                .unwrap_or_else(|_| panic!("{method} is a method"));
            assert_eq!(of(&method, route), Some(access), "{method} {route}");
        }
        assert_eq!(of(&Method::DELETE, "/v1/access/evaluation"), None);
        assert_eq!(of(&Method::POST, "/v1/access/evaluation/"), None);
        assert_eq!(of(&Method::GET, "/v1/no-such-route"), None);
    }
}

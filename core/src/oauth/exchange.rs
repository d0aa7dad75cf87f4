//! RFC 8693 token exchange: an agent trades its token for a narrower one
//! for a sub-agent, by the rules of `delegate` (DESIGN §17, plan §3.4).
//! This module reads the request's parameters (already form-decoded, each
//! at most once) into a checked [`ExchangeRequest`]; the host verifies the
//! subject token, its DPoP proof and the delegation itself.
//!
//! | parameter | rule |
//! |---|---|
//! | `grant_type` | `urn:ietf:params:oauth:grant-type:token-exchange` (§2.1), else `unsupported_grant_type` |
//! | `subject_token` | required: the parent VAT itself, never a jti (§2.1) |
//! | `subject_token_type` | required: `…:token-type:access_token` or `…:token-type:jwt` (§3), else `invalid_request` |
//! | `requested_token_type` | absent or `…:token-type:access_token`, else `invalid_request` |
//! | `actor_token`, `actor_token_type` | refused (`invalid_request`): the chain gives `act` already (§4.1) |
//! | `resource` | an RFC 8707 resource indicator → the child's `aud`: equal to the parent's when it has one ([`ExchangeRequest::audience`]), else `invalid_target` (§2.2.2) |
//! | `audience` | accepted only when equal to the resulting `aud` (`invalid_target`) |
//! | `scope` | the grammar of [`super::scope`] (`invalid_scope`); a part it leaves out (no action, or no resource) is the parent's |
//! | `mandate_grant` | strict JSON object with only `agent_id`, `constraints`, `policy`, `ttl_seconds` — the rest of `delegate`'s body, read by the very parser `delegate` uses |
//! | `holder_key` | a public Ed25519 JWK binding the child to another key, as `delegate`'s `holder_key`; never implied |
//!
//! A parameter sent empty counts as absent (RFC 6749 §3.1); unknown
//! parameters are ignored (RFC 6749 §3.1). `delegate`'s body is parsed in
//! the host (`api/input.rs`, `token_request`), so this module does not
//! re-implement it: [`ExchangeRequest::delegate_body`] writes the body
//! `POST /v1/vat/delegate` would have received, and the host reads it with
//! that same parser — one set of rules for both doors.

use std::collections::BTreeMap;

use serde::Deserialize as _;
use serde_json::{Map, Value};

use super::OAuthError;
use super::scope::{RequestedScope, ScopeGrammarError};
use crate::audience::{Audience, ResourceUriError};
use crate::ids::AgentId;
use crate::json::Strict;
use crate::keys::HolderKey;
use crate::scope::Scope;

/// RFC 8693 §2.1 `grant_type`.
pub const GRANT_TYPE: &str = "urn:ietf:params:oauth:grant-type:token-exchange";
/// RFC 8693 §3: an OAuth access token (a VAT is one).
pub const ACCESS_TOKEN_TYPE: &str = "urn:ietf:params:oauth:token-type:access_token";
/// RFC 8693 §3: a JWT (a VAT is one).
pub const JWT_TOKEN_TYPE: &str = "urn:ietf:params:oauth:token-type:jwt";
/// The members `mandate_grant` may hold: `delegate`'s body but for what
/// has a parameter of its own (`scope` → resources and actions,
/// `holder_key`) or is the subject token (`vat_jti`).
pub const MANDATE_GRANT_MEMBERS: [&str; 4] = ["agent_id", "constraints", "policy", "ttl_seconds"];

/// The subject token's declared type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SubjectTokenType {
    AccessToken,
    Jwt,
}

/// Why a token-exchange request is refused before its subject is read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ExchangeError {
    #[error("grant_type must be {GRANT_TYPE}")]
    UnsupportedGrantType,
    #[error("`{0}` is required")]
    Missing(&'static str),
    #[error("subject_token_type must be {ACCESS_TOKEN_TYPE} or {JWT_TOKEN_TYPE}")]
    SubjectTokenType,
    #[error("requested_token_type must be absent or {ACCESS_TOKEN_TYPE}")]
    RequestedTokenType,
    #[error("actor_token is not accepted: the delegation chain names every actor (`act`)")]
    ActorToken,
    #[error(transparent)]
    Resource(ResourceUriError),
    #[error(
        "`{0}` does not name the token's audience (the parent's `aud`, or the resource asked for)"
    )]
    Audience(&'static str),
    #[error(transparent)]
    Scope(ScopeGrammarError),
    #[error("mandate_grant: {0}")]
    MandateGrant(String),
    #[error("holder_key: {0}")]
    HolderKey(String),
}

impl ExchangeError {
    /// Stable snake_case code.
    pub fn code(&self) -> &'static str {
        match self {
            ExchangeError::UnsupportedGrantType => "unsupported_grant_type",
            ExchangeError::Missing(_) => "parameter_missing",
            ExchangeError::SubjectTokenType => "subject_token_type_unsupported",
            ExchangeError::RequestedTokenType => "requested_token_type_unsupported",
            ExchangeError::ActorToken => "actor_token_refused",
            ExchangeError::Resource(e) => e.code(),
            ExchangeError::Audience(_) => "audience_mismatch",
            ExchangeError::Scope(e) => e.code(),
            ExchangeError::MandateGrant(_) => "mandate_grant_invalid",
            ExchangeError::HolderKey(_) => "holder_key_invalid",
        }
    }

    /// The OAuth `error` (RFC 8693 §2.2.2).
    pub fn oauth_error(&self) -> OAuthError {
        match self {
            ExchangeError::Scope(e) => e.oauth_error(),
            other => OAuthError::for_code(other.code()),
        }
    }
}

/// A checked token-exchange request.
#[derive(Debug, Clone, PartialEq)]
pub struct ExchangeRequest {
    /// The parent token, compact, as sent; the host verifies it as an
    /// agent call's token.
    pub subject_token: String,
    pub subject_token_type: SubjectTokenType,
    pub resource: Option<Audience>,
    pub audience: Option<String>,
    pub scope: Option<RequestedScope>,
    /// `mandate_grant`'s members (empty when it was not sent).
    pub mandate_grant: Map<String, Value>,
    pub holder_key: Option<HolderKey>,
}

/// A parameter's value; empty counts as absent (RFC 6749 §3.1).
fn get<'a>(params: &'a BTreeMap<String, String>, name: &str) -> Option<&'a str> {
    params
        .get(name)
        .map(String::as_str)
        .filter(|v| !v.is_empty())
}

/// A JSON object read strictly (no member twice at any depth, safe
/// numbers), or why not.
fn strict_object(text: &str) -> Result<Map<String, Value>, String> {
    let mut reader = serde_json::Deserializer::from_str(text);
    let Strict(read) =
        Strict::deserialize(&mut reader).map_err(|_| "must be a JSON object".to_owned())?;
    reader
        .end()
        .map_err(|_| "must be a JSON object".to_owned())?;
    match read {
        Ok(Value::Object(members)) => Ok(members),
        Ok(_) => Err("must be a JSON object".to_owned()),
        Err(crate::json::StrictRefusal::DuplicateMember) => Err("names a member twice".to_owned()),
        Err(crate::json::StrictRefusal::UnsafeNumber) => {
            Err("holds a number beyond ±(2^53 − 1)".to_owned())
        }
    }
}

/// Reads a token-exchange request's parameters.
pub fn parse(params: &BTreeMap<String, String>) -> Result<ExchangeRequest, ExchangeError> {
    use ExchangeError as E;
    if get(params, "grant_type") != Some(GRANT_TYPE) {
        return Err(E::UnsupportedGrantType);
    }
    if get(params, "actor_token").is_some() || get(params, "actor_token_type").is_some() {
        return Err(E::ActorToken);
    }
    let subject_token = get(params, "subject_token").ok_or(E::Missing("subject_token"))?;
    let subject_token_type = match get(params, "subject_token_type") {
        None => return Err(E::Missing("subject_token_type")),
        Some(ACCESS_TOKEN_TYPE) => SubjectTokenType::AccessToken,
        Some(JWT_TOKEN_TYPE) => SubjectTokenType::Jwt,
        Some(_) => return Err(E::SubjectTokenType),
    };
    match get(params, "requested_token_type") {
        None | Some(ACCESS_TOKEN_TYPE) => {}
        Some(_) => return Err(E::RequestedTokenType),
    }
    let resource = get(params, "resource")
        .map(Audience::parse)
        .transpose()
        .map_err(E::Resource)?;
    let scope = get(params, "scope")
        .map(RequestedScope::parse)
        .transpose()
        .map_err(E::Scope)?;
    let mandate_grant = match get(params, "mandate_grant") {
        None => Map::new(),
        Some(text) => {
            let members = strict_object(text).map_err(E::MandateGrant)?;
            if let Some(other) = members
                .keys()
                .find(|k| !MANDATE_GRANT_MEMBERS.contains(&k.as_str()))
            {
                return Err(E::MandateGrant(format!(
                    "`{other}` is not accepted here (only {})",
                    MANDATE_GRANT_MEMBERS.join(", ")
                )));
            }
            members
        }
    };
    let holder_key = get(params, "holder_key")
        .map(|text| {
            strict_object(text).map_err(E::HolderKey)?;
            HolderKey::from_jwk_json(text.as_bytes()).map_err(|e| E::HolderKey(e.to_string()))
        })
        .transpose()?;
    Ok(ExchangeRequest {
        subject_token: subject_token.to_owned(),
        subject_token_type,
        resource,
        audience: get(params, "audience").map(str::to_owned),
        scope,
        mandate_grant,
        holder_key,
    })
}

impl ExchangeRequest {
    /// The child's `aud`, given the parent's: the parent's when it has one
    /// (a `resource` must then equal it), else the `resource` asked for,
    /// if any. An `audience` parameter must equal the result.
    pub fn audience(&self, parent_aud: Option<&str>) -> Result<Option<String>, ExchangeError> {
        let resource = self.resource.as_ref().map(Audience::as_str);
        let aud = match (parent_aud, resource) {
            (Some(parent), Some(asked)) if parent != asked => {
                return Err(ExchangeError::Audience("resource"));
            }
            (Some(parent), _) => Some(parent.to_owned()),
            (None, asked) => asked.map(str::to_owned),
        };
        match &self.audience {
            Some(audience) if aud.as_deref() != Some(audience.as_str()) => {
                Err(ExchangeError::Audience("audience"))
            }
            _ => Ok(aud),
        }
    }

    /// The body `POST /v1/vat/delegate` would have received for this
    /// exchange, for the host to read with `delegate`'s own parser:
    /// `mandate_grant`'s members; `agent_id` the subject's agent unless
    /// `mandate_grant` names one (a delegation may name its delegator,
    /// `agents::check_naming`); `actions` and `resources` from `scope`,
    /// each the parent's when `scope` names none; `holder_key` the public
    /// JWK (`crv`, `kty`, `x`) of the key given.
    pub fn delegate_body(
        &self,
        subject_agent: &AgentId,
        subject_scope: &Scope,
    ) -> Map<String, Value> {
        let mut body = self.mandate_grant.clone();
        body.entry("agent_id")
            .or_insert_with(|| Value::from(subject_agent.as_str()));
        let asked = self.scope.clone().unwrap_or_default();
        let actions: Vec<&str> = if asked.actions().is_empty() {
            subject_scope.actions().iter().map(|a| a.as_str()).collect()
        } else {
            asked.actions().iter().map(|a| a.as_str()).collect()
        };
        let resources: Vec<&str> = if asked.resources().is_empty() {
            subject_scope
                .resources()
                .iter()
                .map(|r| r.as_str())
                .collect()
        } else {
            asked.resources().iter().map(|r| r.as_str()).collect()
        };
        body.insert("actions".to_owned(), Value::from(actions));
        body.insert("resources".to_owned(), Value::from(resources));
        if let Some(key) = &self.holder_key {
            let jwk = key.public_jwk();
            let mut members = Map::new();
            members.insert("crv".to_owned(), Value::from(jwk.crv));
            members.insert("kty".to_owned(), Value::from(jwk.kty));
            members.insert("x".to_owned(), Value::from(jwk.x));
            body.insert("holder_key".to_owned(), Value::Object(members));
        }
        body
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::keys::SigningKey;

    fn params(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        let mut map: BTreeMap<String, String> = [
            ("grant_type", GRANT_TYPE),
            ("subject_token", "eyJhbGciOiJFZERTQSJ9.e30.sig"),
            ("subject_token_type", ACCESS_TOKEN_TYPE),
        ]
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
        for (k, v) in pairs {
            map.insert((*k).to_owned(), (*v).to_owned());
        }
        map
    }

    fn without(name: &str) -> BTreeMap<String, String> {
        let mut map = params(&[]);
        map.remove(name);
        map
    }

    fn holder_jwk() -> String {
        let key = SigningKey::from_secret(&[9; 32]);
        serde_json::to_string(&key.public_jwk()).unwrap()
    }

    #[test]
    fn a_minimal_request() {
        let read = parse(&params(&[("client_id", "ignored"), ("scope", "")])).unwrap();
        assert_eq!(read.subject_token, "eyJhbGciOiJFZERTQSJ9.e30.sig");
        assert_eq!(read.subject_token_type, SubjectTokenType::AccessToken);
        assert_eq!(
            (read.resource, read.audience, read.scope, read.holder_key),
            (None, None, None, None)
        );
        assert!(read.mandate_grant.is_empty());
        let jwt = parse(&params(&[("subject_token_type", JWT_TOKEN_TYPE)])).unwrap();
        assert_eq!(jwt.subject_token_type, SubjectTokenType::Jwt);
    }

    /// The §3.4 table's refusals, each with its OAuth error.
    #[test]
    fn refusals() {
        use ExchangeError as E;
        let cases: Vec<(&str, BTreeMap<String, String>, ExchangeError, OAuthError)> = vec![
            ("other grant type", params(&[("grant_type", "authorization_code")]), E::UnsupportedGrantType, OAuthError::UnsupportedGrantType),
            ("no grant type", without("grant_type"), E::UnsupportedGrantType, OAuthError::UnsupportedGrantType),
            ("no subject token", without("subject_token"), E::Missing("subject_token"), OAuthError::InvalidRequest),
            ("empty subject token", params(&[("subject_token", "")]), E::Missing("subject_token"), OAuthError::InvalidRequest),
            ("no subject token type", without("subject_token_type"), E::Missing("subject_token_type"), OAuthError::InvalidRequest),
            ("id token", params(&[("subject_token_type", "urn:ietf:params:oauth:token-type:id_token")]), E::SubjectTokenType, OAuthError::InvalidRequest),
            ("refresh token", params(&[("subject_token_type", "urn:ietf:params:oauth:token-type:refresh_token")]), E::SubjectTokenType, OAuthError::InvalidRequest),
            ("requested refresh token", params(&[("requested_token_type", "urn:ietf:params:oauth:token-type:refresh_token")]), E::RequestedTokenType, OAuthError::InvalidRequest),
            ("actor token", params(&[("actor_token", "x"), ("actor_token_type", ACCESS_TOKEN_TYPE)]), E::ActorToken, OAuthError::InvalidRequest),
            ("actor token type alone", params(&[("actor_token_type", ACCESS_TOKEN_TYPE)]), E::ActorToken, OAuthError::InvalidRequest),
            ("relative resource", params(&[("resource", "/mcp")]), E::Resource(ResourceUriError::Scheme), OAuthError::InvalidTarget),
            ("resource with fragment", params(&[("resource", "https://mcp.example/#a")]), E::Resource(ResourceUriError::Fragment), OAuthError::InvalidTarget),
            ("bad scope", params(&[("scope", "read  crm:*")]), E::Scope(ScopeGrammarError::Malformed), OAuthError::InvalidScope),
            ("bad scope token", params(&[("scope", "Read")]), E::Scope(ScopeGrammarError::InvalidToken("Read".into())), OAuthError::InvalidScope),
            ("mandate_grant not JSON", params(&[("mandate_grant", "{")]), E::MandateGrant("must be a JSON object".into()), OAuthError::InvalidRequest),
            ("mandate_grant array", params(&[("mandate_grant", "[]")]), E::MandateGrant("must be a JSON object".into()), OAuthError::InvalidRequest),
            ("mandate_grant duplicate", params(&[("mandate_grant", r#"{"agent_id":"a","agent_id":"b"}"#)]), E::MandateGrant("names a member twice".into()), OAuthError::InvalidRequest),
            ("mandate_grant nested duplicate", params(&[("mandate_grant", r#"{"constraints":{"max_actions":1,"max_actions":9}}"#)]), E::MandateGrant("names a member twice".into()), OAuthError::InvalidRequest),
            ("mandate_grant resources", params(&[("mandate_grant", r#"{"resources":["crm:*"]}"#)]), E::MandateGrant("`resources` is not accepted here (only agent_id, constraints, policy, ttl_seconds)".into()), OAuthError::InvalidRequest),
            ("mandate_grant holder_key", params(&[("mandate_grant", r#"{"holder_key":{}}"#)]), E::MandateGrant("`holder_key` is not accepted here (only agent_id, constraints, policy, ttl_seconds)".into()), OAuthError::InvalidRequest),
            ("mandate_grant vat_jti", params(&[("mandate_grant", r#"{"vat_jti":"vat_root_x"}"#)]), E::MandateGrant("`vat_jti` is not accepted here (only agent_id, constraints, policy, ttl_seconds)".into()), OAuthError::InvalidRequest),
            ("holder_key not JSON", params(&[("holder_key", "x")]), E::HolderKey("must be a JSON object".into()), OAuthError::InvalidRequest),
        ];
        for (name, request, error, oauth) in cases {
            let refused = parse(&request).unwrap_err();
            assert_eq!(refused, error, "{name}");
            assert_eq!(refused.oauth_error(), oauth, "{name}");
            assert!(
                super::super::listed(refused.code()) || matches!(refused, E::Scope(_)),
                "{name}: {}",
                refused.code()
            );
        }
        let private = r#"{"kty":"OKP","crv":"Ed25519","x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo","d":"nWGxne_9WmC6hEr0kuwsxERJxWl7MmkZcDusAxyuf2A"}"#;
        let refused = parse(&params(&[("holder_key", private)])).unwrap_err();
        assert_eq!(refused.code(), "holder_key_invalid");
        let rsa = r#"{"kty":"RSA","n":"AQAB","e":"AQAB"}"#;
        assert_eq!(
            parse(&params(&[("holder_key", rsa)])).unwrap_err().code(),
            "holder_key_invalid"
        );
    }

    /// A name, a request, the parent's `aud`, and the child's.
    type AudienceCase = (
        &'static str,
        ExchangeRequest,
        Option<&'static str>,
        Result<Option<String>, ExchangeError>,
    );

    #[test]
    fn audience_rule() {
        let mcp = "https://mcp.example/mcp";
        let other = "https://other.example/mcp";
        let read = |pairs: &[(&str, &str)]| parse(&params(pairs)).unwrap();
        let table: Vec<AudienceCase> = vec![
            ("inherited", read(&[]), Some(mcp), Ok(Some(mcp.into()))),
            (
                "equal resource",
                read(&[("resource", mcp)]),
                Some(mcp),
                Ok(Some(mcp.into())),
            ),
            (
                "other resource",
                read(&[("resource", other)]),
                Some(mcp),
                Err(ExchangeError::Audience("resource")),
            ),
            (
                "parent without aud",
                read(&[("resource", other)]),
                None,
                Ok(Some(other.into())),
            ),
            ("neither", read(&[]), None, Ok(None)),
            (
                "audience equal",
                read(&[("audience", mcp)]),
                Some(mcp),
                Ok(Some(mcp.into())),
            ),
            (
                "audience with resource",
                read(&[("resource", mcp), ("audience", mcp)]),
                None,
                Ok(Some(mcp.into())),
            ),
            (
                "audience other",
                read(&[("audience", other)]),
                Some(mcp),
                Err(ExchangeError::Audience("audience")),
            ),
            (
                "audience without aud",
                read(&[("audience", mcp)]),
                None,
                Err(ExchangeError::Audience("audience")),
            ),
        ];
        for (name, request, parent, expect) in table {
            let got = request.audience(parent);
            assert_eq!(got, expect, "{name}");
            if let Err(e) = got {
                assert_eq!(e.oauth_error(), OAuthError::InvalidTarget, "{name}");
            }
        }
    }

    #[test]
    fn the_delegate_body() {
        let agent = AgentId::parse("parent-bot").unwrap();
        let parent = Scope::parse(&["crm:*", "mail:*"], &["read", "write", "delegate"]).unwrap();
        let jwk = holder_jwk();
        let full = parse(&params(&[
            ("scope", "read crm:contacts"),
            (
                "mandate_grant",
                r#"{"agent_id":"child-bot","constraints":{"max_actions":3},"ttl_seconds":60}"#,
            ),
            ("holder_key", &jwk),
        ]))
        .unwrap();
        let key: Value = serde_json::from_str(&jwk).unwrap();
        assert_eq!(
            Value::Object(full.delegate_body(&agent, &parent)),
            json!({
                "agent_id": "child-bot",
                "actions": ["read"],
                "resources": ["crm:contacts"],
                "constraints": {"max_actions": 3},
                "ttl_seconds": 60,
                "holder_key": {"crv": "Ed25519", "kty": "OKP", "x": key["x"]},
            })
        );
        let bare = parse(&params(&[])).unwrap();
        assert_eq!(
            Value::Object(bare.delegate_body(&agent, &parent)),
            json!({
                "agent_id": "parent-bot",
                "actions": ["read", "write", "delegate"],
                "resources": ["crm:*", "mail:*"],
            })
        );
        let actions_only = parse(&params(&[("scope", "read")])).unwrap();
        assert_eq!(
            Value::Object(actions_only.delegate_body(&agent, &parent)),
            json!({"agent_id": "parent-bot", "actions": ["read"], "resources": ["crm:*", "mail:*"]})
        );
        let resources_only = parse(&params(&[("scope", "mail:inbox")])).unwrap();
        assert_eq!(
            Value::Object(resources_only.delegate_body(&agent, &parent)),
            json!({"agent_id": "parent-bot", "actions": ["read", "write", "delegate"], "resources": ["mail:inbox"]})
        );
    }

    #[test]
    fn every_code_is_in_the_table() {
        for e in [
            ExchangeError::UnsupportedGrantType,
            ExchangeError::Missing("subject_token"),
            ExchangeError::SubjectTokenType,
            ExchangeError::RequestedTokenType,
            ExchangeError::ActorToken,
            ExchangeError::Resource(ResourceUriError::TooLong),
            ExchangeError::Resource(ResourceUriError::Fragment),
            ExchangeError::Resource(ResourceUriError::Scheme),
            ExchangeError::Resource(ResourceUriError::Malformed),
            ExchangeError::Audience("resource"),
            ExchangeError::MandateGrant(String::new()),
            ExchangeError::HolderKey(String::new()),
        ] {
            assert!(super::super::listed(e.code()), "{}", e.code());
        }
    }
}

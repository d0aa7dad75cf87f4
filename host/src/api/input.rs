//! Request bodies turned into core's types, with a 422 naming the field for
//! anything core refuses.

use mandate_core::{
    Action, AgentId, ApprovalRequirement, Args, Constraints, Framework, HolderKey, Identity, Jkt,
    Outcome, Policy, PolicyError, ProvenanceRef, Rating, Resource, ResourcePattern, ResultHash,
    Role, Scope, ScopeError, StrictJson, TokenRequest, Usd,
};

use crate::error::{ApiError, ApiResult};
use crate::model::oauth::ConsentGrant;
use crate::model::{
    CaptureRequest, ConstraintsBody, DelegateRequest, IssueL1Request, IssueL2Request, PolicyBody,
    QuotasBody,
};
use crate::store::orgs::Quotas;

/// Longest note accepted with a rating, in characters.
pub(crate) const MAX_NOTE_CHARS: usize = 2048;
/// Longest revocation reason, in characters.
pub(crate) const MAX_REASON_CHARS: usize = 512;

fn invalid(field: &str, code: &'static str, message: impl ToString) -> ApiError {
    ApiError::invalid(field, code, message.to_string())
}

pub(crate) fn agent_id(text: &str) -> ApiResult<AgentId> {
    AgentId::parse(text).map_err(|e| invalid("agent_id", e.code(), e))
}

pub(crate) fn email(text: &str) -> ApiResult<Identity> {
    email_in("developer_email", text)
}

/// An e-mail address given as `field`.
pub(crate) fn email_in(field: &str, text: &str) -> ApiResult<Identity> {
    Identity::email(text).map_err(|e| invalid(field, e.code(), e))
}

/// Longest organisation name, in characters.
pub(crate) const MAX_ORG_NAME_CHARS: usize = 64;

/// An organisation's name: 1–64 of `a-z 0-9 . _ -`, starting with a
/// letter or digit, so it reads the same in a URL, a log and a shell.
pub(crate) fn org_name(text: &str) -> ApiResult<String> {
    let valid = text.len() <= MAX_ORG_NAME_CHARS
        && text
            .bytes()
            .next()
            .is_some_and(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
        && text.bytes().all(|b| {
            b.is_ascii_lowercase() || b.is_ascii_digit() || matches!(b, b'.' | b'_' | b'-')
        });
    if !valid {
        return Err(invalid(
            "name",
            "invalid_org_name",
            "name must be 1 to 64 of a-z 0-9 . _ -, starting with a letter or digit",
        ));
    }
    Ok(text.to_owned())
}

/// A key's role.
pub(crate) fn role(text: &str) -> ApiResult<Role> {
    text.parse::<Role>()
        .map_err(|e| invalid("role", "invalid_role", e))
}

/// Largest quota accepted.
pub(crate) const MAX_QUOTA: u64 = 1_000_000_000_000;

/// Quotas as stored.
pub(crate) fn quotas(body: &QuotasBody) -> ApiResult<Quotas> {
    for (field, value) in [
        ("quotas.records_per_day", body.records_per_day),
        ("quotas.tokens_outstanding", body.tokens_outstanding),
    ] {
        if value.is_some_and(|n| n > MAX_QUOTA) {
            return Err(invalid(
                field,
                "quota_too_large",
                format!("{field} may be at most {MAX_QUOTA}"),
            ));
        }
    }
    Ok(Quotas {
        records_per_day: body.records_per_day,
        tokens_outstanding: body.tokens_outstanding,
    })
}

pub(crate) fn action(text: &str) -> ApiResult<Action> {
    Action::parse(text).map_err(|e| invalid("action", e.code(), e))
}

pub(crate) fn resource(text: &str) -> ApiResult<Resource> {
    Resource::parse(text).map_err(|e| invalid("resource", e.code(), e))
}

pub(crate) fn outcome(text: &str) -> ApiResult<Outcome> {
    text.parse::<Outcome>()
        .map_err(|e| invalid("result", e.code(), e))
}

pub(crate) fn provenance_ref(text: &str) -> ApiResult<ProvenanceRef> {
    ProvenanceRef::parse(text).map_err(|e| invalid("provenance_ref", e.code(), e))
}

pub(crate) fn rating(text: &str) -> ApiResult<Rating> {
    text.parse::<Rating>()
        .map_err(|e| invalid("rating", e.code(), e))
}

pub(crate) fn result_hash(text: Option<&str>) -> ApiResult<Option<ResultHash>> {
    text.map(|t| ResultHash::parse(t).map_err(|e| invalid("result_hash", e.code(), e)))
        .transpose()
}

/// The length of a list a request sends: 1 to `max` entries.
pub(crate) fn list_length(field: &str, length: usize, max: usize) -> ApiResult<()> {
    if length == 0 {
        return Err(invalid(
            field,
            "empty_list",
            format!("{field} must hold at least one entry"),
        ));
    }
    if length > max {
        return Err(invalid(
            field,
            "list_too_long",
            format!("{field} may hold at most {max} entries; it holds {length}"),
        ));
    }
    Ok(())
}

pub(crate) fn amount(field: &str, value: Option<f64>) -> ApiResult<Option<Usd>> {
    value
        .map(|v| Usd::from_f64(v).map_err(|e| invalid(field, e.code(), e)))
        .transpose()
}

/// Free text: bounded, no control characters other than tab and newline.
pub(crate) fn text(
    field: &str,
    value: Option<&str>,
    max_chars: usize,
) -> ApiResult<Option<String>> {
    let Some(value) = value else { return Ok(None) };
    if value.chars().count() > max_chars {
        return Err(invalid(
            field,
            "too_long",
            format!("{field} may hold at most {max_chars} characters"),
        ));
    }
    if value
        .chars()
        .any(|c| c.is_control() && c != '\n' && c != '\t')
    {
        return Err(invalid(
            field,
            "control_character",
            format!("{field} must not contain control characters"),
        ));
    }
    Ok(Some(value.to_owned()))
}

/// The request field a scope error names.
pub(crate) fn scope_field(error: &ScopeError) -> &'static str {
    match error {
        ScopeError::InvalidAction => "actions",
        ScopeError::InvalidResource | ScopeError::InvalidPattern => "resources",
        ScopeError::InvalidFramework => "policy.frameworks",
        ScopeError::Empty(field)
        | ScopeError::TooMany(field)
        | ScopeError::Duplicate { field, .. } => match *field {
            "frameworks" => "policy.frameworks",
            "require_approval.actions" => "constraints.require_approval.actions",
            "require_approval.resources" => "constraints.require_approval.resources",
            other => other,
        },
        ScopeError::MaxActionsTooLarge => "constraints.max_actions",
        ScopeError::ApprovalRequirementEmpty => "constraints.require_approval",
        ScopeError::InvalidMinTrust => "constraints.min_trust",
        ScopeError::ApprovalActionNotHeld(_) => "constraints.require_approval.actions",
        ScopeError::ApprovalResourceOutsideScope(_) => "constraints.require_approval.resources",
        ScopeError::ApprovalThresholdUnreachable { .. } => {
            "constraints.require_approval.spend_over_usd"
        }
        // Rules from requests are refused by `policy_error`, with their
        // own path; this is the grant as a whole being too large.
        ScopeError::Args(_) => "constraints.args",
    }
}

/// A scope error as a 422 naming its field.
pub(crate) fn scope_error(error: ScopeError) -> ApiError {
    invalid(scope_field(&error), error.code(), &error)
}

/// A refused rule or statement as a 422 naming its JSON path
/// (`constraints.args[1].pol[0]`).
fn policy_error(error: PolicyError) -> ApiError {
    invalid(&error.path.clone(), error.code(), &error)
}

/// An attempt's arguments, read strictly, or a 422 naming `args`.
pub(crate) fn args(value: Option<&StrictJson>) -> ApiResult<Option<Args>> {
    value
        .map(|value| value.args().map_err(|e| invalid("args", e.code(), e)))
        .transpose()
}

fn constraints(body: Option<&ConstraintsBody>) -> ApiResult<Constraints> {
    let Some(body) = body else {
        return Ok(Constraints::default());
    };
    let max_actions = body.max_actions;
    if max_actions.is_some_and(|n| n > mandate_core::limits::MAX_ACTIONS_LIMIT) {
        return Err(scope_error(ScopeError::MaxActionsTooLarge));
    }
    let require_approval = body
        .require_approval
        .as_ref()
        .map(|requirement| {
            let spend_over_usd = amount(
                "constraints.require_approval.spend_over_usd",
                requirement.spend_over_usd,
            )?;
            let pol = requirement
                .args
                .as_ref()
                .map(|pol| pol.pol("constraints.require_approval.args"))
                .transpose()
                .map_err(policy_error)?;
            let only_args = requirement.actions.is_none()
                && requirement.resources.is_none()
                && spend_over_usd.is_none();
            match pol {
                Some(pol) if only_args => Ok(ApprovalRequirement::of_args(pol)),
                pol => ApprovalRequirement::parse(
                    requirement.actions.as_deref(),
                    requirement.resources.as_deref(),
                    spend_over_usd,
                )
                .map(|requirement| requirement.with_args(pol))
                .map_err(|error| {
                    let field = match error {
                        ScopeError::InvalidAction => "constraints.require_approval.actions",
                        ScopeError::InvalidResource | ScopeError::InvalidPattern => {
                            "constraints.require_approval.resources"
                        }
                        _ => scope_field(&error),
                    };
                    invalid(field, error.code(), &error)
                }),
            }
        })
        .transpose()?;
    let args = body
        .args
        .as_ref()
        .map(|rules| rules.rules("constraints.args"))
        .transpose()
        .map_err(policy_error)?
        .unwrap_or_default();
    mandate_core::policy::check_grant_size(
        &args,
        require_approval
            .as_ref()
            .and_then(ApprovalRequirement::args),
    )
    .map_err(|error| invalid("constraints.args", error.code(), &error))?;
    let min_trust = body
        .min_trust
        .map(mandate_core::MinTrust::new)
        .transpose()
        .map_err(scope_error)?;
    Ok(Constraints {
        min_trust,
        max_spend_usd: amount("constraints.max_spend_usd", body.max_spend_usd)?,
        max_spend_per_action_usd: amount(
            "constraints.max_spend_per_action_usd",
            body.max_spend_per_action_usd,
        )?,
        max_actions,
        require_approval,
        args,
    })
}

fn policy(body: Option<&PolicyBody>) -> ApiResult<Policy> {
    let Some(body) = body else {
        return Ok(Policy::default());
    };
    if body.frameworks.len() > mandate_core::limits::MAX_LIST_LEN {
        return Err(scope_error(ScopeError::TooMany("frameworks")));
    }
    let frameworks = body
        .frameworks
        .iter()
        .map(|f| Framework::parse(f))
        .collect::<Result<Vec<_>, _>>()
        .map_err(scope_error)?;
    Policy::new(frameworks).map_err(scope_error)
}

/// The parts of an issue or delegate request that describe the grant.
pub(crate) struct GrantParts<'a> {
    agent_id: &'a str,
    resources: &'a [String],
    actions: &'a [String],
    constraints: Option<&'a ConstraintsBody>,
    policy: Option<&'a PolicyBody>,
    ttl_seconds: Option<u64>,
    holder_key: Option<&'a serde_json::Map<String, serde_json::Value>>,
}

/// A request body that asks for a grant: every issue and delegate request.
pub(crate) trait GrantRequest {
    /// The grant fields of the body.
    fn grant_parts(&self) -> GrantParts<'_>;
}

/// Every grant request has the same grant fields.
macro_rules! grant_request {
    ($($body:ty),*) => {$(
        impl GrantRequest for $body {
            fn grant_parts(&self) -> GrantParts<'_> {
                GrantParts {
                    agent_id: &self.agent_id,
                    resources: &self.resources,
                    actions: &self.actions,
                    constraints: self.constraints.as_ref(),
                    policy: self.policy.as_ref(),
                    ttl_seconds: self.ttl_seconds,
                    holder_key: self.holder_key.as_ref(),
                }
            }
        }
    )*};
}

grant_request!(
    IssueL1Request,
    IssueL2Request,
    CaptureRequest,
    DelegateRequest
);

/// The thumbprint of a holder's public key, given as a JWK object.
fn holder_key(jwk: Option<&serde_json::Map<String, serde_json::Value>>) -> ApiResult<Option<Jkt>> {
    let Some(jwk) = jwk else { return Ok(None) };
    let bytes = serde_json::to_vec(jwk).map_err(ApiError::internal)?;
    HolderKey::from_jwk_json(&bytes)
        .map(|key| Some(key.jkt().clone()))
        .map_err(|e| invalid("holder_key", e.code(), e))
}

/// Checks a grant request and builds core's token request.
pub(crate) fn token_request(body: &impl GrantRequest) -> ApiResult<TokenRequest> {
    parts_request(&body.grant_parts())
}

/// Checks what a consent grants (for `agent_id`: the one it names, or the
/// OAuth default) and builds core's token request: the fields and rules of
/// an issue request, without a holder key.
pub(crate) fn consent_request(agent_id: &str, grant: &ConsentGrant) -> ApiResult<TokenRequest> {
    parts_request(&GrantParts {
        agent_id,
        resources: &grant.resources,
        actions: &grant.actions,
        constraints: grant.constraints.as_ref(),
        policy: grant.policy.as_ref(),
        ttl_seconds: grant.ttl_seconds,
        holder_key: None,
    })
}

fn parts_request(parts: &GrantParts<'_>) -> ApiResult<TokenRequest> {
    // A refused pattern is named by its place in the list.
    for (i, text) in parts.resources.iter().enumerate() {
        ResourcePattern::parse(text)
            .map_err(|e| invalid(&format!("resources[{i}]"), e.code(), e))?;
    }
    Ok(TokenRequest {
        agent_id: agent_id(parts.agent_id)?,
        scope: Scope::parse(parts.resources, parts.actions).map_err(scope_error)?,
        constraints: constraints(parts.constraints)?,
        policy: policy(parts.policy)?,
        ttl_seconds: parts.ttl_seconds,
        holder: holder_key(parts.holder_key)?,
    })
}

//! Issuing, delegating and renewing: the claims of a new root token, of a
//! token delegated from a parent, and of a renewal (the parent's grant
//! again, with a new lifetime and key), with every refusal ([`IssueError`]): lifetime,
//! the `delegate` action, depth, fan-out and narrowing (approval
//! requirements included), requirements that could never match, and the
//! [`DenyReason`] a refusal of authority is recorded with.
//!
//! It builds claims and signs nothing (see `jws`); it draws no randomness
//! and reads no clock: the caller passes `now`, the new ids and the new
//! token's status list entry, which the server allocates.

use super::claims::{Actor, AssuranceLevel, Claims, Confirmation};
use crate::approval::{check_constraints_reachable, check_reachable};
use crate::ids::{AgentId, HumanRef, IdError, Jkt, Jti, ProvenanceRef, Ulid};
use crate::limits::{
    DEFAULT_TTL_SECONDS, MAX_CHILDREN_PER_TOKEN, MAX_DELEGATION_DEPTH, MAX_TTL_SECONDS,
    MIN_TTL_SECONDS,
};
use crate::record::DenyReason;
use crate::scope::{
    Constraints, DELEGATE_ACTION, Grant, Policy, Scope, ScopeError, Widening, check_narrowing,
};
use crate::status_list::StatusClaim;

/// What an agent is to be allowed, as asked for at issue or delegation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenRequest {
    pub agent_id: AgentId,
    pub scope: Scope,
    pub constraints: Constraints,
    pub policy: Policy,
    /// Lifetime; `None` takes the default (root) or the parent's end (delegated).
    pub ttl_seconds: Option<u64>,
    /// The key the token is bound to; `None` leaves a root token unbound and
    /// binds a delegated one to its parent's key, if the parent has one.
    pub holder: Option<Jkt>,
}

/// Why a token could not be issued or delegated.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IssueError {
    #[error("ttl_seconds must be between {MIN_TTL_SECONDS} and {MAX_TTL_SECONDS}")]
    TtlOutOfRange,
    #[error("now must be a unix time in seconds after 1970")]
    InvalidNow,
    #[error("the parent token has expired")]
    ParentExpired,
    #[error("the parent token does not hold the `delegate` action")]
    DelegateNotHeld,
    #[error("a chain may be at most {MAX_DELEGATION_DEPTH} delegations deep")]
    DepthExceeded,
    #[error("a token may delegate to at most {MAX_CHILDREN_PER_TOKEN} tokens")]
    TooManyChildren,
    #[error(transparent)]
    Widening(#[from] Widening),
    #[error(transparent)]
    Scope(#[from] ScopeError),
    #[error("the id could not be made: {0}")]
    Id(#[from] IdError),
}

impl IssueError {
    /// Stable snake_case code for this error.
    pub fn code(&self) -> &'static str {
        match self {
            IssueError::TtlOutOfRange => "ttl_out_of_range",
            IssueError::InvalidNow => "invalid_now",
            IssueError::ParentExpired => "parent_expired",
            IssueError::DelegateNotHeld => "delegate_not_held",
            IssueError::DepthExceeded => "delegation_too_deep",
            IssueError::TooManyChildren => "too_many_children",
            IssueError::Widening(w) => w.code(),
            IssueError::Scope(e) => e.code(),
            IssueError::Id(e) => e.code(),
        }
    }

    /// The reason a refused delegation is recorded with, or `None` when the
    /// error is no refusal of authority but bad input (`ttl_seconds`, `now`,
    /// a policy that cannot be formed) or a fault (an id that cannot be
    /// made).
    pub fn deny_reason(&self) -> Option<DenyReason> {
        match self {
            IssueError::DelegateNotHeld => Some(DenyReason::ActionNotPermitted),
            IssueError::Widening(_) => Some(DenyReason::ScopeWidening),
            IssueError::DepthExceeded => Some(DenyReason::DelegationTooDeep),
            IssueError::TooManyChildren => Some(DenyReason::TooManyChildren),
            IssueError::ParentExpired => Some(DenyReason::TokenExpired),
            IssueError::TtlOutOfRange
            | IssueError::InvalidNow
            | IssueError::Scope(_)
            | IssueError::Id(_) => None,
        }
    }
}

fn expiry(now: i64, ttl_seconds: u64) -> Result<i64, IssueError> {
    if !(MIN_TTL_SECONDS..=MAX_TTL_SECONDS).contains(&ttl_seconds) {
        return Err(IssueError::TtlOutOfRange);
    }
    // Bounded above by 30 days, so it fits.
    let ttl = i64::try_from(ttl_seconds).map_err(|_| IssueError::TtlOutOfRange)?;
    now.checked_add(ttl).ok_or(IssueError::InvalidNow)
}

/// Who issues a root token, for whom, and when.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RootIssue {
    /// The `iss` of the deployment.
    pub issuer: String,
    /// The verified human.
    pub human: HumanRef,
    /// How the human was verified.
    pub level: AssuranceLevel,
    /// Unix seconds.
    pub now: i64,
    /// The new token's id, `vat_root_<ulid>`.
    pub jti: Ulid,
    /// The new workflow's id, `prov_<ulid>`.
    pub provenance: Ulid,
    /// The new token's status list entry (`status`), allocated by the
    /// server; `None` issues a token without one, which no status list can
    /// revoke at the edge.
    pub status: Option<StatusClaim>,
}

/// Builds the claims of a root token; refused when its approval
/// requirement could never match under its scope and budget
/// ([`crate::approval::check_reachable`]).
pub fn issue_root(request: TokenRequest, issue: RootIssue) -> Result<Claims, IssueError> {
    if issue.now < 0 {
        return Err(IssueError::InvalidNow);
    }
    check_constraints_reachable(&request.scope, &request.constraints)?;
    let exp = expiry(
        issue.now,
        request.ttl_seconds.unwrap_or(DEFAULT_TTL_SECONDS),
    )?;
    Ok(Claims {
        iss: issue.issuer,
        sub: request.agent_id,
        aud: None,
        iat: issue.now,
        nbf: issue.now,
        exp,
        jti: Jti::root(issue.jti),
        svc_trust_score: issue.level.trust(),
        svc_scope: request.scope,
        svc_constraints: Some(request.constraints).filter(|c| !c.is_empty()),
        svc_policy: Some(request.policy).filter(|p| !p.is_empty()),
        svc_prov: ProvenanceRef::new(issue.provenance),
        svc_human: issue.human,
        svc_assurance: issue.level,
        svc_depth: 0,
        svc_parent: None,
        svc_chain: None,
        cnf: request.holder.map(|jkt| Confirmation { jkt }),
        status: issue.status,
        act: None,
    })
}

/// What a delegation grants: the request, with every limit, framework,
/// approval requirement and trust floor (`min_trust`) it leaves out taken
/// from the parent, refused if it is wider than the parent anyway (a
/// resource, an action, a raised limit, a raised approval threshold, a
/// lowered trust floor or a longer life).
///
/// Frameworks and the lists of an approval requirement (actions, resource
/// patterns) the request sets are added to the parent's, so a request can
/// only add to them; a limit or an approval threshold the request sets
/// replaces the parent's, and is refused when higher
/// ([`crate::approval::ApprovalRequirement::merged`]). Argument rules the
/// request sets are the child's whole list: each rule of the parent must be
/// among them unchanged (`args_rule_dropped` otherwise); a request without
/// rules inherits the parent's.
///
/// An audience (`aud`) the request leaves out is the parent's; one it sets
/// must equal the parent's, when the parent has one.
///
/// A grant no wider than its parent is still refused when what the request
/// adds to the approval requirement could never match under the child's
/// grant ([`crate::approval::check_reachable`]).
pub fn delegated_grant(requested: Grant, parent: &Grant) -> Result<Grant, IssueError> {
    let inherited = parent.constraints.require_approval.as_ref();
    let require_approval = match (inherited, requested.constraints.require_approval) {
        (Some(inherited), Some(asked)) => Some(inherited.merged(&asked)?),
        (inherited, asked) => asked.or_else(|| inherited.cloned()),
    };
    let constraints = Constraints {
        max_spend_usd: requested
            .constraints
            .max_spend_usd
            .or(parent.constraints.max_spend_usd),
        max_spend_per_action_usd: requested
            .constraints
            .max_spend_per_action_usd
            .or(parent.constraints.max_spend_per_action_usd),
        max_actions: requested
            .constraints
            .max_actions
            .or(parent.constraints.max_actions),
        require_approval,
        min_trust: requested
            .constraints
            .min_trust
            .or(parent.constraints.min_trust),
        args: if requested.constraints.args.is_empty() {
            parent.constraints.args.clone()
        } else {
            requested.constraints.args
        },
    };
    let mut frameworks = parent.policy.frameworks().to_vec();
    for framework in requested.policy.frameworks() {
        if !frameworks.contains(framework) {
            frameworks.push(framework.clone());
        }
    }
    let grant = Grant {
        scope: requested.scope,
        constraints,
        policy: Policy::new(frameworks)?,
        expires_at: requested.expires_at,
        audience: requested.audience.or_else(|| parent.audience.clone()),
    };
    check_narrowing(&grant, parent)?;
    if let Some(requirement) = &grant.constraints.require_approval {
        check_reachable(
            requirement,
            parent.constraints.require_approval.as_ref(),
            &grant.scope,
            grant.constraints.spend_cap(),
        )?;
    }
    Ok(grant)
}

/// Refuses a delegation from a token that already has `children` children
/// (a server-side rule: only the issuer counts them).
pub fn check_fan_out(children: u64) -> Result<(), IssueError> {
    if children >= MAX_CHILDREN_PER_TOKEN {
        return Err(IssueError::TooManyChildren);
    }
    Ok(())
}

/// Builds the claims of a token delegated from `parent`: same issuer, human,
/// assurance, trust and workflow; depth + 1; the parent's jti hash appended
/// to the chain; the parent's agent as the nearest actor; the grant of
/// [`delegated_grant`]; bound to the requested holder key, else to the
/// parent's; carrying `status`, its own status list entry (allocated by the
/// server: a child never shares its parent's entry, and revoking the parent
/// sets the bits of both). Refused unless the parent is unexpired, holds
/// `delegate`, and the request is no wider than the parent.
pub fn delegate(
    parent: &Claims,
    request: TokenRequest,
    now: i64,
    jti: Ulid,
    status: Option<StatusClaim>,
) -> Result<Claims, IssueError> {
    if now >= parent.exp {
        return Err(IssueError::ParentExpired);
    }
    if !parent.svc_scope.holds(DELEGATE_ACTION) {
        return Err(IssueError::DelegateNotHeld);
    }
    if parent.svc_depth >= MAX_DELEGATION_DEPTH {
        return Err(IssueError::DepthExceeded);
    }
    let exp = match request.ttl_seconds {
        None => parent.exp,
        Some(ttl) => expiry(now, ttl)?,
    };
    let child_grant = delegated_grant(
        Grant {
            scope: request.scope,
            constraints: request.constraints,
            policy: request.policy,
            expires_at: exp,
            audience: None,
        },
        &parent.grant(),
    )?;
    Ok(child_claims(
        parent,
        request.agent_id,
        child_grant,
        Child {
            now,
            jti,
            holder: request.holder,
            status,
        },
    ))
}

/// What a child token has of its own, beyond its grant and agent.
struct Child {
    now: i64,
    jti: Ulid,
    holder: Option<Jkt>,
    status: Option<StatusClaim>,
}

/// The claims of a child of `parent` for `agent` with `grant`: same issuer,
/// human, assurance, trust and workflow; depth + 1; the parent's jti hash
/// appended to the chain; the parent's agent as the nearest actor; bound to
/// the child's holder key, else to the parent's.
fn child_claims(parent: &Claims, agent: AgentId, grant: Grant, child: Child) -> Claims {
    let parent_jth = parent.jth();
    let mut chain = parent.ancestors().to_vec();
    chain.push(parent_jth.clone());
    Claims {
        iss: parent.iss.clone(),
        sub: agent,
        aud: grant.audience,
        iat: child.now,
        nbf: child.now,
        exp: grant.expires_at,
        jti: Jti::delegated(child.jti),
        svc_trust_score: parent.svc_trust_score,
        svc_scope: grant.scope,
        svc_constraints: Some(grant.constraints).filter(|c| !c.is_empty()),
        svc_policy: Some(grant.policy).filter(|p| !p.is_empty()),
        svc_prov: parent.svc_prov.clone(),
        svc_human: parent.svc_human.clone(),
        svc_assurance: parent.svc_assurance,
        svc_depth: parent.svc_depth + 1,
        svc_parent: Some(parent_jth),
        svc_chain: Some(chain),
        cnf: child
            .holder
            .map(|jkt| Confirmation { jkt })
            .or_else(|| parent.cnf.clone()),
        status: child.status,
        act: Some(Actor {
            sub: parent.sub.subject(),
            act: parent.act.clone().map(Box::new),
        }),
    }
}

/// What a renewal has of its own: the moment, its lifetime, its key, its
/// id and its status list entry (the caller's clock, randomness and
/// allocation).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Renewal {
    /// Unix seconds.
    pub now: i64,
    /// Lifetime, ended early at the parent's `exp`.
    pub ttl_seconds: u64,
    /// The key the renewed token is bound to; `None` binds it to the
    /// parent's key, if the parent has one (a bound parent's child stays
    /// bound, as [`crate::chain::verify_chain`] requires).
    pub holder: Option<Jkt>,
    /// The new token's id, `vat_del_<ulid>`.
    pub jti: Ulid,
    /// The new token's status list entry, allocated by the server.
    pub status: Option<StatusClaim>,
}

/// Builds the claims of a renewal of `parent`: a child token for the same
/// agent that grants exactly what the parent grants — scope, constraints,
/// policy and audience (`aud`), nothing widened and nothing dropped — with
/// its own `exp` (`now + ttl_seconds`, ended early at the parent's), its
/// own key and its own status entry; otherwise a child like any delegated
/// token (DESIGN §2: depth + 1, the parent in `svc_parent` and `svc_chain`,
/// the parent's agent as the nearest `act`).
///
/// A renewal adds no authority, so unlike [`delegate`] it does not need the
/// parent to hold `delegate`, and the server neither records it as a
/// delegation nor counts it among the parent's children: it is how a
/// short-lived access token is cut from a long-lived grant (an OAuth
/// refresh). Refused when the parent has expired, when the chain would be
/// too deep, or for a `ttl_seconds` out of range.
pub fn renew(parent: &Claims, renewal: Renewal) -> Result<Claims, IssueError> {
    let exp = renewal_expiry(parent, &renewal)?;
    let grant = Grant {
        expires_at: exp,
        ..parent.grant()
    };
    Ok(renewed(parent, grant, renewal))
}

/// A renewal of `parent` that grants only `scope` of it (an OAuth refresh
/// asking for less, RFC 6749 §6): everything else — constraints, policy,
/// `aud` — inherited as a delegation inherits what its request leaves out
/// ([`delegated_grant`] with an empty request beside the scope), and the
/// result held to the parent by [`check_narrowing`], so a scope naming a
/// resource or an action the parent does not hold is refused
/// ([`IssueError::Widening`], `scope_widening`). Otherwise exactly
/// [`renew`]: no `delegate` action needed, the same refusals.
pub fn renew_within(parent: &Claims, renewal: Renewal, scope: Scope) -> Result<Claims, IssueError> {
    let exp = renewal_expiry(parent, &renewal)?;
    let requested = Grant {
        scope,
        constraints: Constraints::default(),
        policy: Policy::default(),
        expires_at: exp,
        audience: None,
    };
    let grant = delegated_grant(requested, &parent.grant())?;
    Ok(renewed(parent, grant, renewal))
}

/// A renewal's `exp`, or why `parent` cannot be renewed at `renewal.now`.
fn renewal_expiry(parent: &Claims, renewal: &Renewal) -> Result<i64, IssueError> {
    if renewal.now < 0 {
        return Err(IssueError::InvalidNow);
    }
    if renewal.now >= parent.exp {
        return Err(IssueError::ParentExpired);
    }
    if parent.svc_depth >= MAX_DELEGATION_DEPTH {
        return Err(IssueError::DepthExceeded);
    }
    Ok(expiry(renewal.now, renewal.ttl_seconds)?.min(parent.exp))
}

/// The claims of a renewal granting `grant`.
fn renewed(parent: &Claims, grant: Grant, renewal: Renewal) -> Claims {
    child_claims(
        parent,
        parent.sub.clone(),
        grant,
        Child {
            now: renewal.now,
            jti: renewal.jti,
            holder: renewal.holder,
            status: renewal.status,
        },
    )
}

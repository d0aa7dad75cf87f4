//! Scopes, grants and argument rules as the SDKs answer them: why
//! `permits` refuses, how a child is wider than its parent, and the grant a
//! delegation request gets.

use mandate_core::policy::{ArgsDenial, Truth};
use mandate_core::{
    Action, Audience, Constraints, Grant, IssueError, Policy, ResourcePattern, Scope,
};
use serde::{Deserialize, Serialize};

use crate::failure::{Failure, scope_failure};

/// A grant as the SDKs take it: a scope with optional limits, policy and
/// audience (`aud`, one resource URI), and its `exp`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GrantInput {
    pub resources: Vec<String>,
    pub actions: Vec<String>,
    #[serde(default)]
    pub constraints: Constraints,
    #[serde(default)]
    pub policy: Policy,
    pub exp: i64,
    #[serde(default)]
    pub aud: Option<Audience>,
}

impl GrantInput {
    /// Core's grant, its scope parsed.
    pub fn grant(self) -> Result<Grant, Failure> {
        Ok(Grant {
            scope: Scope::parse(&self.resources, &self.actions).map_err(|e| scope_failure(&e))?,
            constraints: self.constraints,
            policy: self.policy,
            expires_at: self.exp,
            audience: self.aud,
        })
    }
}

/// Why `permits` refuses: the scope, or the arguments (with the rule and
/// statement, and the statement's truth).
#[derive(Debug, Serialize)]
pub struct Reason {
    code: &'static str,
    message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    rule: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    statement: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    truth: Option<Truth>,
}

impl Reason {
    pub fn scope(denial: mandate_core::ScopeDenial) -> Reason {
        Reason {
            code: denial.code(),
            message: denial.to_string(),
            rule: None,
            statement: None,
            truth: None,
        }
    }

    pub fn args(denial: ArgsDenial) -> Reason {
        let (rule, statement, truth) = match denial {
            ArgsDenial::Required { rule } => (rule, None, None),
            ArgsDenial::NotPermitted {
                rule,
                statement,
                truth,
            } => (rule, Some(statement), Some(truth)),
        };
        Reason {
            code: denial.code(),
            message: denial.to_string(),
            rule: Some(rule),
            statement,
            truth,
        }
    }
}

/// One way a child is wider than its parent.
#[derive(Debug, Serialize)]
pub struct ViolationOut {
    field: String,
    code: &'static str,
    message: String,
}

impl ViolationOut {
    fn of(violation: &mandate_core::Violation) -> ViolationOut {
        ViolationOut {
            field: violation.field(),
            code: violation.code(),
            message: violation.to_string(),
        }
    }
}

/// Every way `child` grants more than `parent`; none when it is no wider.
pub fn violations(child: &Grant, parent: &Grant) -> Vec<ViolationOut> {
    match mandate_core::check_narrowing(child, parent) {
        Ok(()) => Vec::new(),
        Err(widening) => widening.violations.iter().map(ViolationOut::of).collect(),
    }
}

/// A grant as the SDKs answer it: `{ resources, actions, constraints,
/// policy, exp, aud? }`.
#[derive(Debug)]
pub struct GrantOut(Box<Grant>);

impl Serialize for GrantOut {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Out<'a> {
            resources: &'a [ResourcePattern],
            actions: &'a [Action],
            constraints: &'a Constraints,
            policy: &'a Policy,
            exp: i64,
            #[serde(skip_serializing_if = "Option::is_none")]
            aud: Option<&'a Audience>,
        }
        let grant = &self.0;
        Out {
            resources: grant.scope.resources(),
            actions: grant.scope.actions(),
            constraints: &grant.constraints,
            policy: &grant.policy,
            exp: grant.expires_at,
            aud: grant.audience.as_ref(),
        }
        .serialize(serializer)
    }
}

/// The answer of `delegatedGrant` / `delegated_grant`: `{ ok: true, grant }`
/// or `{ ok: false, code, violations }`.
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub enum Delegated {
    Granted {
        ok: bool,
        grant: GrantOut,
    },
    Refused {
        ok: bool,
        code: &'static str,
        violations: Vec<ViolationOut>,
    },
}

/// The grant a delegation request gets under `parent`: the limits and
/// frameworks it leaves out are inherited, and anything wider is refused
/// with every violation, as the server decides it.
pub fn delegated_grant(request: Grant, parent: &Grant) -> Delegated {
    match mandate_core::delegated_grant(request, parent) {
        Ok(grant) => Delegated::Granted {
            ok: true,
            grant: GrantOut(Box::new(grant)),
        },
        Err(error) => {
            let violations = match &error {
                IssueError::Widening(widening) => {
                    widening.violations.iter().map(ViolationOut::of).collect()
                }
                _ => Vec::new(),
            };
            Delegated::Refused {
                ok: false,
                code: error.code(),
                violations,
            }
        }
    }
}

//! Scopes, grants and argument rules: `permits`, `check_narrowing`,
//! `delegated_grant`, `evaluate_policy`, and `sha256_ref`.

use mandate_core::policy::{ArgsDenial, Truth, evaluate_json};
use mandate_core::{
    Action, Args, ArgsRules, Constraints, Grant, IssueError, Policy, Resource, Scope, ScopeError,
    check_args,
};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use serde::{Deserialize, Serialize};

use crate::convert::{Answer, bytes_arg, json_or_text, object_arg, string_arg, to_py};
use crate::error::Failure;

fn scope_failure(error: &ScopeError) -> Failure {
    Failure::input(error.code(), error)
}

/// A scope before core parses its entries.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ScopeInput {
    resources: Vec<String>,
    actions: Vec<String>,
}

/// The members of token claims a scope and its rules are read from; the
/// other claims are left out.
#[derive(Debug, Deserialize)]
struct ClaimsInput {
    svc_scope: ScopeInput,
    #[serde(default)]
    svc_constraints: Option<Constraints>,
    #[serde(default)]
    svc_policy: Option<Policy>,
    #[serde(default)]
    exp: Option<i64>,
}

/// A grant: a scope with optional limits and policy, and its `exp`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct GrantInput {
    resources: Vec<String>,
    actions: Vec<String>,
    #[serde(default)]
    constraints: Constraints,
    #[serde(default)]
    policy: Policy,
    exp: i64,
}

/// Whether a dict is token claims (it has `svc_scope`).
fn is_claims(value: &Bound<'_, PyAny>) -> bool {
    value
        .cast::<PyDict>()
        .is_ok_and(|dict| dict.contains("svc_scope").unwrap_or(false))
}

/// The scope and argument rules of a `{resources, actions}` dict (no
/// rules) or of token claims.
fn scope_and_rules(value: &Bound<'_, PyAny>) -> PyResult<(Scope, ArgsRules)> {
    let (input, rules) = if is_claims(value) {
        let claims: ClaimsInput = object_arg(value, "claims", "invalid_claims")?;
        let rules = claims.svc_constraints.map(|c| c.args).unwrap_or_default();
        (claims.svc_scope, rules)
    } else {
        let scope: ScopeInput = object_arg(value, "scope", "invalid_scope")?;
        (scope, ArgsRules::default())
    };
    let scope = Scope::parse(&input.resources, &input.actions).map_err(|e| scope_failure(&e))?;
    Ok((scope, rules))
}

/// The grant of a grant dict or of token claims.
fn grant_of(value: &Bound<'_, PyAny>, name: &str) -> PyResult<Grant> {
    let input = if is_claims(value) {
        let claims: ClaimsInput = object_arg(value, name, "invalid_claims")?;
        let exp = claims
            .exp
            .ok_or_else(|| Failure::input("invalid_claims", format!("{name} has no exp")))?;
        GrantInput {
            resources: claims.svc_scope.resources,
            actions: claims.svc_scope.actions,
            constraints: claims.svc_constraints.unwrap_or_default(),
            policy: claims.svc_policy.unwrap_or_default(),
            exp,
        }
    } else {
        object_arg(value, name, "invalid_grant")?
    };
    Ok(Grant {
        scope: Scope::parse(&input.resources, &input.actions).map_err(|e| scope_failure(&e))?,
        constraints: input.constraints,
        policy: input.policy,
        expires_at: input.exp,
    })
}

/// Why `permits` refuses: the scope, or the arguments (with the rule and
/// statement, and the statement's truth).
#[derive(Serialize)]
struct Reason {
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
    fn scope(denial: mandate_core::ScopeDenial) -> Reason {
        Reason {
            code: denial.code(),
            message: denial.to_string(),
            rule: None,
            statement: None,
            truth: None,
        }
    }

    fn args(denial: ArgsDenial) -> Reason {
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

/// Whether a scope (or token claims: their scope and argument rules)
/// allows `action` on `resource` with `args`: `{"ok": True}` or
/// `{"ok": False, "reason": {...}}`. Malformed input raises.
#[pyfunction]
#[pyo3(signature = (scope_or_claims, action, resource, args = None))]
pub(crate) fn permits(
    py: Python<'_>,
    scope_or_claims: &Bound<'_, PyAny>,
    action: &Bound<'_, PyAny>,
    resource: &Bound<'_, PyAny>,
    args: Option<&Bound<'_, PyAny>>,
) -> Answer {
    #[derive(Serialize)]
    struct Permit {
        ok: bool,
        #[serde(skip_serializing_if = "Option::is_none")]
        reason: Option<Reason>,
    }
    let (scope, rules) = scope_and_rules(scope_or_claims)?;
    let action = Action::parse(&string_arg(action, "action")?).map_err(|e| scope_failure(&e))?;
    let resource =
        Resource::parse(&string_arg(resource, "resource")?).map_err(|e| scope_failure(&e))?;
    let reason = match scope.check(&action, &resource) {
        Err(denial) => Some(Reason::scope(denial)),
        Ok(()) => {
            let args = match args.filter(|a| !a.is_none()) {
                None => None,
                Some(args) => {
                    let text = json_or_text(args, "args")?;
                    Some(Args::parse(text.as_bytes()).map_err(|e| Failure::input(e.code(), e))?)
                }
            };
            check_args(&rules, &action, &resource, args.as_ref())
                .err()
                .map(Reason::args)
        }
    };
    to_py(
        py,
        &Permit {
            ok: reason.is_none(),
            reason,
        },
    )
}

/// One way a child is wider than its parent.
#[derive(Serialize)]
struct ViolationOut {
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

/// Checks that `child` grants nothing `parent` does not, listing every way
/// it is wider: `{"ok": bool, "violations": [...]}`. Each side is a grant
/// dict or token claims.
#[pyfunction]
pub(crate) fn check_narrowing(
    py: Python<'_>,
    child: &Bound<'_, PyAny>,
    parent: &Bound<'_, PyAny>,
) -> Answer {
    #[derive(Serialize)]
    struct Narrowing {
        ok: bool,
        violations: Vec<ViolationOut>,
    }
    let child = grant_of(child, "child")?;
    let parent = grant_of(parent, "parent")?;
    let violations = match mandate_core::check_narrowing(&child, &parent) {
        Ok(()) => Vec::new(),
        Err(widening) => widening.violations,
    };
    to_py(
        py,
        &Narrowing {
            ok: violations.is_empty(),
            violations: violations.iter().map(ViolationOut::of).collect(),
        },
    )
}

/// The grant a delegation request gets under `parent`, as the server
/// decides it: `{"ok": True, "grant": {...}}`, or `{"ok": False, "code",
/// "violations"}` when the request is refused.
#[pyfunction]
pub(crate) fn delegated_grant(
    py: Python<'_>,
    request: &Bound<'_, PyAny>,
    parent: &Bound<'_, PyAny>,
) -> Answer {
    #[derive(Serialize)]
    struct GrantOut<'a> {
        resources: &'a [mandate_core::ResourcePattern],
        actions: &'a [Action],
        constraints: &'a Constraints,
        policy: &'a Policy,
        exp: i64,
    }
    #[derive(Serialize)]
    struct Granted<'a> {
        ok: bool,
        grant: GrantOut<'a>,
    }
    #[derive(Serialize)]
    struct Refused {
        ok: bool,
        code: &'static str,
        violations: Vec<ViolationOut>,
    }
    let request = grant_of(request, "request")?;
    let parent = grant_of(parent, "parent")?;
    match mandate_core::delegated_grant(request, &parent) {
        Ok(grant) => to_py(
            py,
            &Granted {
                ok: true,
                grant: GrantOut {
                    resources: grant.scope.resources(),
                    actions: grant.scope.actions(),
                    constraints: &grant.constraints,
                    policy: &grant.policy,
                    exp: grant.expires_at,
                },
            },
        ),
        Err(error) => {
            let violations = match &error {
                IssueError::Widening(widening) => {
                    widening.violations.iter().map(ViolationOut::of).collect()
                }
                _ => Vec::new(),
            };
            to_py(
                py,
                &Refused {
                    ok: false,
                    code: error.code(),
                    violations,
                },
            )
        }
    }
}

/// The truth of a UCAN policy (a list of statements) over arguments (a
/// dict), in three-valued logic: `{"truth": "true" | "false" | "undefined",
/// "permits": bool}`; only `"true"` permits. Either may be JSON text.
#[pyfunction]
pub(crate) fn evaluate_policy(
    py: Python<'_>,
    pol: &Bound<'_, PyAny>,
    args: &Bound<'_, PyAny>,
) -> Answer {
    #[derive(Serialize)]
    struct Judged {
        truth: Truth,
        permits: bool,
    }
    let pol = json_or_text(pol, "pol")?;
    let args = json_or_text(args, "args")?;
    let truth =
        evaluate_json(pol.as_bytes(), args.as_bytes()).map_err(|e| Failure::input(e.code(), &e))?;
    to_py(
        py,
        &Judged {
            truth,
            permits: truth == Truth::True,
        },
    )
}

/// SHA-256 of a `str` (as UTF-8) or of bytes, as `sha256:<hex>`: the form
/// of `result_hash`.
#[pyfunction]
pub(crate) fn sha256_ref(data: &Bound<'_, PyAny>) -> PyResult<String> {
    let bytes =
        bytes_arg(data).ok_or_else(|| Failure::argument("data must be bytes, bytearray or str"))?;
    Ok(mandate_core::sha256_ref(&bytes).as_str().to_owned())
}

//! Scopes, grants and argument rules: `permits`, `check_narrowing`,
//! `delegated_grant`, `evaluate_policy`, `sha256_ref`, and
//! `audience_matches`.

use mandate_core::policy::{Truth, evaluate_json};
use mandate_core::{
    Action, Args, ArgsRules, Audience, Constraints, Grant, Policy, Resource, Scope, check_args,
};
use mandate_facade::scope::{self, GrantInput, Reason};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use serde::{Deserialize, Serialize};

use crate::convert::{Answer, bytes_arg, json_or_text, object_arg, string_arg, to_py};
use crate::error::{Failure, raised};

fn scope_failure(error: &mandate_core::ScopeError) -> PyErr {
    raised(mandate_facade::scope_failure(error))
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
    #[serde(default)]
    aud: Option<Audience>,
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
            aud: claims.aud,
        }
    } else {
        object_arg(value, name, "invalid_grant")?
    };
    input.grant().map_err(raised)
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
        violations: Vec<scope::ViolationOut>,
    }
    let child = grant_of(child, "child")?;
    let parent = grant_of(parent, "parent")?;
    let violations = scope::violations(&child, &parent);
    to_py(
        py,
        &Narrowing {
            ok: violations.is_empty(),
            violations,
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
    let request = grant_of(request, "request")?;
    let parent = grant_of(parent, "parent")?;
    to_py(py, &scope::delegated_grant(request, &parent))
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

/// Whether a token's `aud` names the resource server whose own identifier
/// (its protected-resource metadata `resource`) is `resource`: equal after
/// RFC 3986 normalisation, the query exact. False when `aud` is not a
/// resource URI Mandate takes.
#[pyfunction]
pub(crate) fn audience_matches(aud: &str, resource: &str) -> bool {
    Audience::parse(aud).is_ok_and(|audience| audience.matches(resource))
}

//! Argument constraints in the SDK: a policy judged over arguments
//! ([`evaluate_policy`]), and the reading of a token's argument rules and
//! an attempt's arguments for [`crate::permits`].

use mandate_core::policy::{EvaluateError, Truth, evaluate_json};
use mandate_core::{Args, ArgsRules, Constraints};
use serde::Serialize;
use wasm_bindgen::prelude::*;

use crate::js::{Failure, from_js, has_member, json_text, member, not_ok, to_js};

/// JSON text of a policy or of arguments: a string is taken as JSON text as
/// given (so a member named twice is seen and refused), anything else goes
/// through `JSON.stringify`.
fn json_arg(value: &JsValue, name: &str) -> Result<String, Failure> {
    value
        .as_string()
        .or_else(|| json_text(value))
        .ok_or_else(|| {
            Failure::input(
                "invalid_argument",
                format!("{name} must be JSON text or a JSON value"),
            )
        })
}

fn evaluate_failure(error: &EvaluateError) -> Failure {
    Failure::input(error.code(), error)
}

/// The truth of a UCAN policy (a list of statements) over arguments (an
/// object), in three-valued logic: `true`, `false` or `undefined`; only
/// `true` permits. Both may be JSON text or JSON values.
#[wasm_bindgen(js_name = evaluatePolicy, unchecked_return_type = "PolicyResult")]
pub fn evaluate_policy(
    #[wasm_bindgen(unchecked_param_type = "unknown[] | string")] pol: JsValue,
    #[wasm_bindgen(unchecked_param_type = "Record<string, unknown> | string")] args: JsValue,
) -> JsValue {
    #[derive(Serialize)]
    struct Judged {
        ok: bool,
        truth: Truth,
        permits: bool,
    }
    let judged = json_arg(&pol, "pol").and_then(|pol| {
        let args = json_arg(&args, "args")?;
        evaluate_json(pol.as_bytes(), args.as_bytes()).map_err(|e| evaluate_failure(&e))
    });
    match judged {
        Ok(truth) => to_js(&Judged {
            ok: true,
            truth,
            permits: truth == Truth::True,
        }),
        Err(failure) => not_ok(failure),
    }
}

/// The argument rules of token claims (`svc_constraints.args`); none for a
/// bare scope.
pub(crate) fn rules_of(scope_or_claims: &JsValue) -> Result<ArgsRules, Failure> {
    if !has_member(scope_or_claims, "svc_scope") {
        return Ok(ArgsRules::default());
    }
    let constraints = member(scope_or_claims, "svc_constraints");
    if constraints.is_undefined() || constraints.is_null() {
        return Ok(ArgsRules::default());
    }
    let constraints: Constraints = from_js(&constraints, "svc_constraints")
        .map_err(|message| Failure::input("invalid_claims", message))?;
    Ok(constraints.args)
}

/// An attempt's arguments: `undefined` and `null` are none.
pub(crate) fn args_of(args: Option<&JsValue>) -> Result<Option<Args>, Failure> {
    let Some(args) = args.filter(|a| !a.is_undefined() && !a.is_null()) else {
        return Ok(None);
    };
    let text = json_arg(args, "args")?;
    Args::parse(text.as_bytes())
        .map(Some)
        .map_err(|e| Failure::input(e.code(), e))
}

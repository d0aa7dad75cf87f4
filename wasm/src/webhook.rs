//! Webhooks, received: a message's Standard Webhooks signature, timestamp
//! and payload checked by core's rules with the receiver's secrets. The
//! TypeScript `verifyWebhook` (`ts/webhooks.ts`) turns a `Headers` object
//! or a record into the pairs this export reads.
//!
//! Results are `{ valid: true, id, event }` or `{ valid: false, error }`
//! with core's code (stage `webhook`). Nothing here signs.

use js_sys::Array;
use mandate_facade::webhook::{WEBHOOK_TOLERANCE_SECONDS, verify_webhook};
use wasm_bindgen::prelude::*;

use crate::js::{Failure, bytes_arg, from_js, from_json_text, invalid, now_or_clock};

/// `[name, value]` pairs of strings, read through `Array` (cheaper in the
/// module than a serde type of its own).
fn pairs_arg(value: &JsValue) -> Option<Vec<(String, String)>> {
    let pairs = value.dyn_ref::<Array>()?;
    let mut out = Vec::with_capacity(pairs.length() as usize);
    for pair in pairs.iter() {
        let pair = pair.dyn_into::<Array>().ok().filter(|p| p.length() == 2)?;
        out.push((pair.get(0).as_string()?, pair.get(1).as_string()?));
    }
    Some(out)
}

/// An optional number argument: `undefined` and `null` for none; anything
/// but a finite number is refused with `message`.
fn number_arg(value: Option<&JsValue>, message: &'static str) -> Result<Option<f64>, Failure> {
    let Some(value) = value.filter(|v| !v.is_undefined() && !v.is_null()) else {
        return Ok(None);
    };
    match value.as_f64() {
        Some(number) if number.is_finite() => Ok(Some(number)),
        _ => Err(Failure::input("invalid_options", message)),
    }
}

fn try_verify(
    secrets: &JsValue,
    headers: &JsValue,
    body: &JsValue,
    now: Option<&JsValue>,
    tolerance_seconds: Option<&JsValue>,
) -> Result<String, Failure> {
    let secrets: Vec<String> = from_js(secrets, "secrets")
        .map_err(|_| Failure::input("invalid_argument", "secrets must be strings"))?;
    let pairs = pairs_arg(headers).ok_or_else(|| {
        Failure::input(
            "invalid_argument",
            "headers must be [name, value] pairs of strings",
        )
    })?;
    let body = bytes_arg(body).ok_or_else(|| {
        Failure::input("invalid_argument", "body must be a string or a Uint8Array")
    })?;
    let now = now_or_clock(number_arg(now, "now must be a number")?);
    let tolerance = match number_arg(tolerance_seconds, "toleranceSeconds must be a number")? {
        None => WEBHOOK_TOLERANCE_SECONDS,
        Some(seconds) if seconds >= 0.0 => seconds as u64,
        Some(_) => {
            return Err(Failure::input(
                "invalid_options",
                "toleranceSeconds must not be negative",
            ));
        }
    };
    let verified = verify_webhook(&secrets, &pairs, &body, now, tolerance)?;
    // The id is letters, digits, `_` and `-`; the event is JSON text.
    Ok(format!(
        r#"{{"valid":true,"id":"{}","event":{}}}"#,
        verified.id, verified.event
    ))
}

/// Checks a received webhook, its headers given as `[name, value]` pairs
/// (names in any case): the signature under any of `secrets` (`whsec_…`;
/// several during a rotation), the timestamp within `toleranceSeconds`
/// (default 300) of `now` (unix seconds; default the JavaScript clock),
/// and the payload, which must be a Mandate event. `body` is the bytes
/// received, or their text: never JSON parsed and serialised again.
/// `verifyWebhook` takes a `Headers` object or a record instead of pairs.
#[wasm_bindgen(js_name = verifyWebhookPairs, unchecked_return_type = "WebhookResult")]
pub fn verify_webhook_pairs(
    #[wasm_bindgen(unchecked_param_type = "string[]")] secrets: JsValue,
    #[wasm_bindgen(unchecked_param_type = "[string, string][]")] headers: JsValue,
    #[wasm_bindgen(unchecked_param_type = "string | Uint8Array")] body: JsValue,
    #[wasm_bindgen(unchecked_optional_param_type = "number")] now: Option<JsValue>,
    #[wasm_bindgen(js_name = toleranceSeconds, unchecked_optional_param_type = "number")]
    tolerance_seconds: Option<JsValue>,
) -> JsValue {
    match try_verify(
        &secrets,
        &headers,
        &body,
        now.as_ref(),
        tolerance_seconds.as_ref(),
    ) {
        Ok(json) => from_json_text(&json),
        Err(failure) => invalid(failure),
    }
}

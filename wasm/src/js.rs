//! Values across the boundary. Everything crosses as JSON text: arguments
//! through `JSON.stringify` into core's serde types, results from core's own
//! serialisation through `JSON.parse`, so JavaScript sees exactly the JSON the
//! server writes. Failures become [`Failure`] values (mandate-facade's, the Python
//! package's too), never exceptions.

use js_sys::JSON;
use serde::Serialize;
use serde::de::DeserializeOwned;
use wasm_bindgen::{JsCast as _, JsValue};

pub(crate) use mandate_facade::{Failure, Stage};

/// `{ valid: false, error }`, the refusal of the verifying functions.
pub(crate) fn invalid(error: Failure) -> JsValue {
    #[derive(Serialize)]
    struct Invalid {
        valid: bool,
        error: Failure,
    }
    to_js(&Invalid {
        valid: false,
        error,
    })
}

/// `{ ok: false, error }`, the refusal of the other functions.
pub(crate) fn not_ok(error: Failure) -> JsValue {
    #[derive(Serialize)]
    struct NotOk {
        ok: bool,
        error: Failure,
    }
    to_js(&NotOk { ok: false, error })
}

/// A serialisable value as a fresh JavaScript value.
pub(crate) fn to_js<T: Serialize>(value: &T) -> JsValue {
    match serde_json::to_string(value) {
        Ok(json) => from_json_text(&json),
        // Core's types and this crate's results have string keys and
        // infallible serialisers, so this branch is never taken.
        Err(_) => JsValue::NULL,
    }
}

/// Parses JSON text that serde_json wrote (and `JSON.parse` therefore accepts).
pub(crate) fn from_json_text(json: &str) -> JsValue {
    JSON::parse(json).unwrap_or(JsValue::NULL)
}

/// A JavaScript value as JSON text, or `None` for what JSON cannot hold
/// (`undefined`, functions, symbols, cycles, BigInt).
pub(crate) fn json_text(value: &JsValue) -> Option<String> {
    JSON::stringify(value)
        .ok()
        .and_then(|text| text.as_string())
}

/// Reads a JavaScript value into a serde type through its JSON form.
pub(crate) fn from_js<T: DeserializeOwned>(value: &JsValue, what: &str) -> Result<T, String> {
    let text = json_text(value).ok_or_else(|| format!("{what} is not a JSON value"))?;
    // `from_slice`, as core reads, so the parsers for core's types are shared.
    serde_json::from_slice(text.as_bytes()).map_err(|e| format!("{what}: {e}"))
}

/// Reads a plain object into a serde struct. Arrays are refused, though
/// serde would read one as the struct's members in order.
pub(crate) fn object_from_js<T: DeserializeOwned>(
    value: &JsValue,
    what: &str,
) -> Result<T, String> {
    if !value.is_object() || js_sys::Array::is_array(value) {
        return Err(format!("{what} must be an object"));
    }
    from_js(value, what)
}

/// Reads optional arguments: `undefined` and `null` give the defaults.
pub(crate) fn options_from_js<T: DeserializeOwned + Default>(
    value: Option<JsValue>,
    what: &str,
) -> Result<T, Failure> {
    match value {
        None => Ok(T::default()),
        Some(value) => object_from_js(&value, what)
            .map_err(|message| Failure::input("invalid_options", message)),
    }
}

/// The member `name` of an object, or `undefined`.
pub(crate) fn member(object: &JsValue, name: &str) -> JsValue {
    js_sys::Reflect::get(object, &JsValue::from_str(name)).unwrap_or(JsValue::UNDEFINED)
}

/// Whether an object has the member `name`, own or inherited.
pub(crate) fn has_member(object: &JsValue, name: &str) -> bool {
    js_sys::Reflect::has(object, &JsValue::from_str(name)).unwrap_or(false)
}

/// A string argument, or an `invalid_argument` failure naming it.
pub(crate) fn string_arg(value: &JsValue, name: &str) -> Result<String, Failure> {
    value
        .as_string()
        .ok_or_else(|| Failure::input("invalid_argument", format!("{name} must be a string")))
}

/// The current time in unix seconds from the JavaScript clock, or `now` when
/// the caller gives one.
pub(crate) fn now_or_clock(now: Option<f64>) -> i64 {
    // `as` saturates and maps NaN to 0, so a nonsense `now` fails closed
    // (expired or not yet valid).
    now.unwrap_or_else(|| js_sys::Date::now() / 1000.0).floor() as i64
}

/// The bytes of a string (as UTF-8), a `Uint8Array` (a Node `Buffer` too)
/// or an `ArrayBuffer`; `None` for anything else.
pub(crate) fn bytes_arg(data: &JsValue) -> Option<Vec<u8>> {
    if let Some(text) = data.as_string() {
        Some(text.into_bytes())
    } else if let Some(array) = data.dyn_ref::<js_sys::Uint8Array>() {
        Some(array.to_vec())
    } else {
        data.dyn_ref::<js_sys::ArrayBuffer>()
            .map(|buffer| js_sys::Uint8Array::new(buffer).to_vec())
    }
}

//! The record log, offline: checkpoints, inclusion proofs (tlog-proof@v1
//! texts) and consistency proofs, judged by core's rules with the log keys
//! the caller trusts. Nothing here signs.
//!
//! Results are `{ valid: true, … }` or `{ valid: false, error }` with
//! core's code (stage `log`); `parseLogLeaf` answers `{ ok, … }`.

use mandate_core::tlog::NoteVerifier;
use mandate_facade::log::{
    self as facade_log, CheckpointOut, ConsistencyInput, CosignedInput, PolicyInput, WitnessedOut,
};
use serde::{Deserialize, Serialize};
use wasm_bindgen::prelude::*;

use crate::js::{
    Failure, from_js, from_json_text, invalid, not_ok, now_or_clock, object_from_js,
    options_from_js, string_arg, to_js,
};

/// The trusted log keys: one vkey, several in one text (one a line, as
/// `GET /v1/log/key` serves them), or an array of vkeys.
fn parse_vkeys(vkeys: &JsValue) -> Result<Vec<NoteVerifier>, Failure> {
    let list: Vec<String> = match vkeys.as_string() {
        Some(text) => facade_log::vkey_lines(&text),
        None => from_js(vkeys, "vkeys").map_err(|_| {
            Failure::input(
                "invalid_argument",
                "vkeys must be a string or an array of strings",
            )
        })?,
    };
    facade_log::verifiers(&list)
}

/// An optional origin: `undefined` or `null` for none.
fn parse_origin(origin: Option<JsValue>) -> Result<Option<String>, Failure> {
    match origin {
        Some(value) if !value.is_undefined() && !value.is_null() => {
            string_arg(&value, "origin").map(Some)
        }
        _ => Ok(None),
    }
}

/// Standard base64 (with padding), as the log's texts and answers carry.
fn base64_arg(value: &JsValue, name: &str) -> Result<Vec<u8>, Failure> {
    facade_log::base64_bytes(&string_arg(value, name)?, name)
}

/// `verifyCheckpoint`'s options: the log's origin and, to require
/// cosignatures, the caller's witness policy and `now` (unix seconds;
/// default the JavaScript clock).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct CheckpointOptions {
    origin: Option<String>,
    policy: Option<PolicyInput>,
    now: Option<f64>,
}

fn try_verify_checkpoint(
    note: &JsValue,
    vkeys: &JsValue,
    options: Option<JsValue>,
) -> Result<JsValue, Failure> {
    let note = string_arg(note, "note")?;
    let verifiers = parse_vkeys(vkeys)?;
    // The third argument is the origin, or the options.
    let options = match options {
        Some(value) if value.is_string() => CheckpointOptions {
            origin: parse_origin(Some(value))?,
            ..CheckpointOptions::default()
        },
        Some(value) if value.is_null() || value.is_undefined() => CheckpointOptions::default(),
        other => options_from_js(other, "options")?,
    };
    #[derive(Serialize)]
    struct Valid<'a> {
        valid: bool,
        checkpoint: CheckpointOut<'a>,
    }
    #[derive(Serialize)]
    struct ValidWitnessed<'a> {
        valid: bool,
        #[serde(flatten)]
        witnessed: WitnessedOut<'a>,
    }
    match &options.policy {
        None => {
            let checkpoint =
                facade_log::verify_checkpoint(&note, &verifiers, options.origin.as_deref())?;
            Ok(to_js(&Valid {
                valid: true,
                checkpoint: CheckpointOut::of(&checkpoint),
            }))
        }
        Some(policy) => {
            let policy = facade_log::witness_policy(policy)?;
            let witnessed = facade_log::verify_witnessed(
                &note,
                &verifiers,
                options.origin.as_deref(),
                &policy,
                now_or_clock(options.now),
            )?;
            Ok(to_js(&ValidWitnessed {
                valid: true,
                witnessed: WitnessedOut::of(&witnessed),
            }))
        }
    }
}

/// Verifies a signed checkpoint (C2SP tlog-checkpoint) with the trusted
/// log keys and, when given, that it is of the log `origin` (the third
/// argument, or `options.origin`). With `options.policy` — the caller's
/// witness policy, never one the log sent — the checkpoint is accepted
/// only with the policy's threshold of fresh cosignatures at
/// `options.now`, as `verifyWitnessed` judges, and the answer lists them
/// (`cosigned_by`).
#[wasm_bindgen(js_name = verifyCheckpoint, unchecked_return_type = "CheckpointResult")]
pub fn verify_checkpoint(
    #[wasm_bindgen(unchecked_param_type = "string")] note: JsValue,
    #[wasm_bindgen(unchecked_param_type = "string | string[]")] vkeys: JsValue,
    #[wasm_bindgen(unchecked_optional_param_type = "string | CheckpointOptions")] options: Option<
        JsValue,
    >,
) -> JsValue {
    match try_verify_checkpoint(&note, &vkeys, options) {
        Ok(result) => result,
        Err(failure) => invalid(failure),
    }
}

/// `verifyWitnessed`'s options: the log's origin, and `now` in unix
/// seconds (default the JavaScript clock).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct WitnessedOptions {
    origin: Option<String>,
    now: Option<f64>,
}

fn try_verify_witnessed(
    note: &JsValue,
    vkeys: &JsValue,
    policy: &JsValue,
    options: Option<JsValue>,
) -> Result<JsValue, Failure> {
    let note = string_arg(note, "note")?;
    let verifiers = parse_vkeys(vkeys)?;
    let policy: PolicyInput = object_from_js(policy, "policy")
        .map_err(|message| Failure::input("invalid_argument", message))?;
    let policy = facade_log::witness_policy(&policy)?;
    let options: WitnessedOptions = options_from_js(options, "options")?;
    let witnessed = facade_log::verify_witnessed(
        &note,
        &verifiers,
        options.origin.as_deref(),
        &policy,
        now_or_clock(options.now),
    )?;
    #[derive(Serialize)]
    struct Valid<'a> {
        valid: bool,
        #[serde(flatten)]
        witnessed: WitnessedOut<'a>,
    }
    Ok(to_js(&Valid {
        valid: true,
        witnessed: WitnessedOut::of(&witnessed),
    }))
}

/// Verifies a witnessed checkpoint: signed by a trusted log key (of
/// `options.origin`, when given) and cosigned (C2SP tlog-cosignature,
/// cosignature/v1) by at least `policy.threshold` of the policy's
/// witnesses, each cosignature at most `policy.max_age_seconds` old at
/// `options.now` (unix seconds; default the JavaScript clock) and at most
/// 60 s ahead of it. The policy is the caller's, never the log's.
#[wasm_bindgen(js_name = verifyWitnessed, unchecked_return_type = "WitnessedResult")]
pub fn verify_witnessed(
    #[wasm_bindgen(unchecked_param_type = "string")] note: JsValue,
    #[wasm_bindgen(unchecked_param_type = "string | string[]")] vkeys: JsValue,
    #[wasm_bindgen(unchecked_param_type = "WitnessPolicy")] policy: JsValue,
    #[wasm_bindgen(unchecked_optional_param_type = "WitnessedOptions")] options: Option<JsValue>,
) -> JsValue {
    match try_verify_witnessed(&note, &vkeys, &policy, options) {
        Ok(result) => result,
        Err(failure) => invalid(failure),
    }
}

fn try_verify_cosignature(
    checkpoint: &JsValue,
    line: &JsValue,
    vkey: &JsValue,
) -> Result<u64, Failure> {
    facade_log::verify_cosignature(
        &string_arg(checkpoint, "checkpoint")?,
        &string_arg(line, "line")?,
        &string_arg(vkey, "vkey")?,
    )
}

/// Verifies one cosignature line (without its newline) by the witness of
/// `vkey` on a checkpoint's text (the note without its signatures) and
/// answers its timestamp. It judges neither freshness nor the log's
/// signature: `verifyWitnessed` does.
#[wasm_bindgen(js_name = verifyCosignature, unchecked_return_type = "CosignatureResult")]
pub fn verify_cosignature(
    #[wasm_bindgen(unchecked_param_type = "string")] checkpoint: JsValue,
    #[wasm_bindgen(unchecked_param_type = "string")] line: JsValue,
    #[wasm_bindgen(unchecked_param_type = "string")] vkey: JsValue,
) -> JsValue {
    #[derive(Serialize)]
    struct Valid {
        valid: bool,
        timestamp: u64,
    }
    match try_verify_cosignature(&checkpoint, &line, &vkey) {
        Ok(timestamp) => to_js(&Valid {
            valid: true,
            timestamp,
        }),
        Err(failure) => invalid(failure),
    }
}

fn try_verify_log_proof(
    proof: &JsValue,
    leaf: &JsValue,
    vkeys: &JsValue,
    origin: Option<JsValue>,
) -> Result<JsValue, Failure> {
    let proof = string_arg(proof, "proof")?;
    let leaf = base64_arg(leaf, "leaf")?;
    let verifiers = parse_vkeys(vkeys)?;
    let origin = parse_origin(origin)?;
    let proved = facade_log::verify_log_proof(&proof, &leaf, &verifiers, origin.as_deref())?;
    #[derive(Serialize)]
    struct Valid<'a> {
        valid: bool,
        index: u64,
        checkpoint: CheckpointOut<'a>,
    }
    let result = to_js(&Valid {
        valid: true,
        index: proved.index,
        checkpoint: CheckpointOut::of(&proved.checkpoint),
    });
    // The entry is the leaf's own JSON text, parsed by JavaScript.
    js_sys::Reflect::set(
        &result,
        &JsValue::from_str("entry"),
        &from_json_text(proved.entry),
    )
    .map_err(|_| Failure::input("invalid_argument", "the result could not be built"))?;
    Ok(result)
}

/// Verifies a record log proof (C2SP tlog-proof@v1) for a leaf given as
/// standard base64: the checkpoint it carries is signed by a trusted key
/// (of `origin`, when given), the leaf is included at the proof's index,
/// and the leaf is a log entry in its canonical form, returned as `entry`.
#[wasm_bindgen(js_name = verifyLogProof, unchecked_return_type = "LogProofResult")]
pub fn verify_log_proof(
    #[wasm_bindgen(unchecked_param_type = "string")] proof: JsValue,
    #[wasm_bindgen(unchecked_param_type = "string")] leaf: JsValue,
    #[wasm_bindgen(unchecked_param_type = "string | string[]")] vkeys: JsValue,
    #[wasm_bindgen(unchecked_optional_param_type = "string")] origin: Option<JsValue>,
) -> JsValue {
    match try_verify_log_proof(&proof, &leaf, &vkeys, origin) {
        Ok(result) => result,
        Err(failure) => invalid(failure),
    }
}

/// `verifyWitnessedLogProof`'s options: the log's origin, `now` in unix
/// seconds (default the JavaScript clock) and the older cosigned
/// checkpoint a record proof carries (`cosigned`).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct WitnessedProofOptions {
    origin: Option<String>,
    now: Option<f64>,
    cosigned: Option<CosignedInput>,
}

fn try_verify_witnessed_log_proof(
    proof: &JsValue,
    leaf: &JsValue,
    vkeys: &JsValue,
    policy: &JsValue,
    options: Option<JsValue>,
) -> Result<JsValue, Failure> {
    let proof = string_arg(proof, "proof")?;
    let leaf = base64_arg(leaf, "leaf")?;
    let verifiers = parse_vkeys(vkeys)?;
    let policy: PolicyInput = object_from_js(policy, "policy")
        .map_err(|message| Failure::input("invalid_argument", message))?;
    let policy = facade_log::witness_policy(&policy)?;
    let options: WitnessedProofOptions = options_from_js(options, "options")?;
    let proved = facade_log::verify_witnessed_log_proof(
        &proof,
        &leaf,
        &verifiers,
        options.origin.as_deref(),
        options.cosigned.as_ref(),
        &policy,
        now_or_clock(options.now),
    )?;
    #[derive(Serialize)]
    struct Valid<'a> {
        valid: bool,
        index: u64,
        checkpoint: CheckpointOut<'a>,
        linked: bool,
        witnessed: WitnessedOut<'a>,
    }
    let result = to_js(&Valid {
        valid: true,
        index: proved.index,
        checkpoint: CheckpointOut::of(&proved.checkpoint),
        linked: proved.linked,
        witnessed: WitnessedOut::of(&proved.witnessed),
    });
    js_sys::Reflect::set(
        &result,
        &JsValue::from_str("entry"),
        &from_json_text(proved.entry),
    )
    .map_err(|_| Failure::input("invalid_argument", "the result could not be built"))?;
    Ok(result)
}

/// Verifies a record log proof as `verifyLogProof` does, and holds it to a
/// witness policy the caller is configured with (never one the log sent):
/// the proof's checkpoint carries `policy.threshold` fresh cosignatures of
/// the policy's witnesses at `options.now`, or `options.cosigned` (the
/// `cosigned` member of a record proof answer) carries an older checkpoint
/// of the same log that does, with a consistency proof that the proof's
/// checkpoint extends it (`linked: true`). `witnessed` is the checkpoint
/// that met the policy and the cosignatures that counted.
#[wasm_bindgen(js_name = verifyWitnessedLogProof, unchecked_return_type = "WitnessedLogProofResult")]
pub fn verify_witnessed_log_proof(
    #[wasm_bindgen(unchecked_param_type = "string")] proof: JsValue,
    #[wasm_bindgen(unchecked_param_type = "string")] leaf: JsValue,
    #[wasm_bindgen(unchecked_param_type = "string | string[]")] vkeys: JsValue,
    #[wasm_bindgen(unchecked_param_type = "WitnessPolicy")] policy: JsValue,
    #[wasm_bindgen(unchecked_optional_param_type = "WitnessedProofOptions")] options: Option<
        JsValue,
    >,
) -> JsValue {
    match try_verify_witnessed_log_proof(&proof, &leaf, &vkeys, &policy, options) {
        Ok(result) => result,
        Err(failure) => invalid(failure),
    }
}

fn try_verify_consistency(input: &JsValue) -> Result<(), Failure> {
    let input: ConsistencyInput = object_from_js(input, "consistency")
        .map_err(|message| Failure::input("invalid_argument", message))?;
    facade_log::verify_consistency(&input)
}

/// Verifies that the tree of `new_size` leaves with root `new_root`
/// extends the tree of `old_size` with root `old_root` (RFC 9162), with
/// the proof's hashes in standard base64.
#[wasm_bindgen(js_name = verifyConsistency, unchecked_return_type = "ConsistencyResult")]
pub fn verify_consistency(
    #[wasm_bindgen(unchecked_param_type = "ConsistencyCheck")] input: JsValue,
) -> JsValue {
    #[derive(Serialize)]
    struct Valid {
        valid: bool,
    }
    match try_verify_consistency(&input) {
        Ok(()) => to_js(&Valid { valid: true }),
        Err(failure) => invalid(failure),
    }
}

/// Reads a leaf (standard base64) as a log entry, refusing anything but
/// the canonical JSON of a valid entry. It proves nothing about the leaf
/// being in the log: that is `verifyLogProof`.
#[wasm_bindgen(js_name = parseLogLeaf, unchecked_return_type = "LogLeafResult")]
pub fn parse_log_leaf(#[wasm_bindgen(unchecked_param_type = "string")] leaf: JsValue) -> JsValue {
    let entry =
        base64_arg(&leaf, "leaf").and_then(|leaf| facade_log::entry_text(&leaf).map(str::to_owned));
    match entry {
        Ok(entry) => {
            let result = js_sys::Object::new();
            let _ = js_sys::Reflect::set(&result, &JsValue::from_str("ok"), &JsValue::TRUE);
            let _ = js_sys::Reflect::set(
                &result,
                &JsValue::from_str("entry"),
                &from_json_text(&entry),
            );
            result.into()
        }
        Err(failure) => not_ok(failure),
    }
}

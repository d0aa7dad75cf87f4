//! The record log, offline: checkpoints, inclusion proofs (tlog-proof@v1
//! texts) and consistency proofs, judged by core's rules with the log keys
//! the caller trusts. Nothing here signs.
//!
//! Results are `{ valid: true, … }` or `{ valid: false, error }` with
//! core's code (stage `log`); `parseLogLeaf` answers `{ ok, … }`.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use mandate_core::tlog::{Hash, LogError, NoteVerifier};
use mandate_core::{Checkpoint, LogEntry};
use serde::{Deserialize, Serialize};
use wasm_bindgen::prelude::*;

use crate::js::{
    Failure, Stage, from_js, from_json_text, invalid, not_ok, object_from_js, string_arg, to_js,
};

fn log_failure(error: &LogError) -> Failure {
    Failure::new(Stage::Log, error.code(), error)
}

/// The trusted log keys: one vkey, several in one text (one a line, as
/// `GET /v1/log/key` serves them), or an array of vkeys.
fn parse_vkeys(vkeys: &JsValue) -> Result<Vec<NoteVerifier>, Failure> {
    let list: Vec<String> = match vkeys.as_string() {
        Some(text) => text
            .lines()
            .map(str::trim)
            .filter(|line| !line.is_empty())
            .map(str::to_owned)
            .collect(),
        None => from_js(vkeys, "vkeys").map_err(|_| {
            Failure::input(
                "invalid_argument",
                "vkeys must be a string or an array of strings",
            )
        })?,
    };
    if list.is_empty() {
        return Err(Failure::input("invalid_argument", "vkeys names no key"));
    }
    list.iter()
        .map(|vkey| NoteVerifier::parse(vkey).map_err(|e| log_failure(&e)))
        .collect()
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
    let text = string_arg(value, name)?;
    STANDARD.decode(text).map_err(|_| {
        Failure::input(
            "invalid_argument",
            format!("{name} must be standard base64"),
        )
    })
}

fn hash_from(text: &str, name: &str) -> Result<Hash, Failure> {
    STANDARD
        .decode(text)
        .ok()
        .and_then(|bytes| Hash::try_from(bytes).ok())
        .ok_or_else(|| {
            Failure::input(
                "invalid_argument",
                format!("{name} must be a SHA-256 hash in standard base64"),
            )
        })
}

/// A checkpoint as JavaScript sees it.
#[derive(Serialize)]
struct CheckpointOut<'a> {
    origin: &'a str,
    size: u64,
    root: String,
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    extensions: &'a [String],
}

impl<'a> CheckpointOut<'a> {
    fn of(checkpoint: &'a Checkpoint) -> CheckpointOut<'a> {
        CheckpointOut {
            origin: &checkpoint.origin,
            size: checkpoint.size,
            root: STANDARD.encode(checkpoint.root),
            extensions: &checkpoint.extensions,
        }
    }
}

fn try_verify_checkpoint(
    note: &JsValue,
    vkeys: &JsValue,
    origin: Option<JsValue>,
) -> Result<Checkpoint, Failure> {
    let note = string_arg(note, "note")?;
    let verifiers = parse_vkeys(vkeys)?;
    let origin = parse_origin(origin)?;
    mandate_core::open_checkpoint(&note, origin.as_deref(), &verifiers).map_err(|e| log_failure(&e))
}

/// Verifies a signed checkpoint (C2SP tlog-checkpoint) with the trusted
/// log keys and, when given, that it is of the log `origin`.
#[wasm_bindgen(js_name = verifyCheckpoint, unchecked_return_type = "CheckpointResult")]
pub fn verify_checkpoint(
    #[wasm_bindgen(unchecked_param_type = "string")] note: JsValue,
    #[wasm_bindgen(unchecked_param_type = "string | string[]")] vkeys: JsValue,
    #[wasm_bindgen(unchecked_optional_param_type = "string")] origin: Option<JsValue>,
) -> JsValue {
    #[derive(Serialize)]
    struct Valid<'a> {
        valid: bool,
        checkpoint: CheckpointOut<'a>,
    }
    match try_verify_checkpoint(&note, &vkeys, origin) {
        Ok(checkpoint) => to_js(&Valid {
            valid: true,
            checkpoint: CheckpointOut::of(&checkpoint),
        }),
        Err(failure) => invalid(failure),
    }
}

/// A leaf's bytes checked as a log entry: the canonical JSON text.
fn entry_text(leaf: &[u8]) -> Result<&str, Failure> {
    LogEntry::from_leaf(leaf).map_err(|e| log_failure(&e))?;
    // A valid entry is JSON, so UTF-8.
    std::str::from_utf8(leaf).map_err(|_| log_failure(&LogError::LeafMalformed))
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
    let checkpoint = mandate_core::verify_tlog_proof(&proof, &leaf, origin.as_deref(), &verifiers)
        .map_err(|e| log_failure(&e))?;
    let index = mandate_core::TlogProof::parse(&proof)
        .map_err(|e| log_failure(&e))?
        .index;
    let entry = entry_text(&leaf)?;
    #[derive(Serialize)]
    struct Valid<'a> {
        valid: bool,
        index: u64,
        checkpoint: CheckpointOut<'a>,
    }
    let result = to_js(&Valid {
        valid: true,
        index,
        checkpoint: CheckpointOut::of(&checkpoint),
    });
    // The entry is the leaf's own JSON text, parsed by JavaScript.
    js_sys::Reflect::set(&result, &JsValue::from_str("entry"), &from_json_text(entry))
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

/// A consistency proof as the server answers `GET /v1/log/consistency`,
/// with the two roots the caller holds.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ConsistencyInput {
    old_size: u64,
    old_root: String,
    new_size: u64,
    new_root: String,
    proof: Vec<String>,
}

fn try_verify_consistency(input: &JsValue) -> Result<(), Failure> {
    let input: ConsistencyInput = object_from_js(input, "consistency")
        .map_err(|message| Failure::input("invalid_argument", message))?;
    let old_root = hash_from(&input.old_root, "old_root")?;
    let new_root = hash_from(&input.new_root, "new_root")?;
    let proof = input
        .proof
        .iter()
        .enumerate()
        .map(|(i, hash)| hash_from(hash, &format!("proof[{i}]")))
        .collect::<Result<Vec<Hash>, Failure>>()?;
    mandate_core::verify_consistency(input.old_size, input.new_size, &old_root, &new_root, &proof)
        .map_err(|e| log_failure(&e))
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
    let entry = base64_arg(&leaf, "leaf").and_then(|leaf| entry_text(&leaf).map(str::to_owned));
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

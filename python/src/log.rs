//! The record log, offline: checkpoints, inclusion proofs (tlog-proof@v1
//! texts) and consistency proofs, judged by core's rules with the log keys
//! the caller trusts. Nothing here signs.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use mandate_core::tlog::{Hash, LogError, NoteVerifier};
use mandate_core::{Checkpoint, LogEntry};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString};
use serde::{Deserialize, Serialize};

use crate::convert::{Answer, loads, object_arg, optional_string, string_arg, strings_arg, to_py};
use crate::error::{Failure, Stage};

fn log_failure(error: &LogError) -> Failure {
    Failure::new(Stage::Log, error.code(), error)
}

/// The trusted log keys: one vkey, several in one text (one a line, as
/// `GET /v1/log/key` serves them), or a list of vkeys.
fn parse_vkeys(vkeys: &Bound<'_, PyAny>) -> PyResult<Vec<NoteVerifier>> {
    let list: Vec<String> = if vkeys.is_instance_of::<PyString>() {
        string_arg(vkeys, "vkeys")?
            .lines()
            .map(str::trim)
            .filter(|line| !line.is_empty())
            .map(str::to_owned)
            .collect()
    } else {
        strings_arg(vkeys, "vkeys")?
    };
    if list.is_empty() {
        return Err(Failure::argument("vkeys names no key").into());
    }
    list.iter()
        .map(|vkey| NoteVerifier::parse(vkey).map_err(|e| log_failure(&e).into()))
        .collect()
}

/// Standard base64 (with padding), as the log's texts and answers carry.
fn base64_arg(value: &Bound<'_, PyAny>, name: &str) -> PyResult<Vec<u8>> {
    let text = string_arg(value, name)?;
    STANDARD
        .decode(text)
        .map_err(|_| Failure::argument(format!("{name} must be standard base64")).into())
}

fn hash_from(text: &str, name: &str) -> Result<Hash, Failure> {
    STANDARD
        .decode(text)
        .ok()
        .and_then(|bytes| Hash::try_from(bytes).ok())
        .ok_or_else(|| {
            Failure::argument(format!("{name} must be a SHA-256 hash in standard base64"))
        })
}

/// A checkpoint as Python sees it.
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

/// Verifies a signed checkpoint (C2SP tlog-checkpoint) with the trusted log
/// keys and, when given, that it is of the log `origin`.
#[pyfunction]
#[pyo3(signature = (note, vkeys, *, origin = None))]
pub(crate) fn verify_checkpoint(
    py: Python<'_>,
    note: &Bound<'_, PyAny>,
    vkeys: &Bound<'_, PyAny>,
    origin: Option<&Bound<'_, PyAny>>,
) -> Answer {
    let note = string_arg(note, "note")?;
    let verifiers = parse_vkeys(vkeys)?;
    let origin = optional_string(origin, "origin")?;
    let checkpoint = mandate_core::open_checkpoint(&note, origin.as_deref(), &verifiers)
        .map_err(|e| log_failure(&e))?;
    to_py(py, &CheckpointOut::of(&checkpoint))
}

/// A leaf's bytes checked as a log entry: the canonical JSON text.
fn entry_text(leaf: &[u8]) -> Result<&str, Failure> {
    LogEntry::from_leaf(leaf).map_err(|e| log_failure(&e))?;
    // A valid entry is JSON, so UTF-8.
    std::str::from_utf8(leaf).map_err(|_| log_failure(&LogError::LeafMalformed))
}

/// Verifies a record log proof (C2SP tlog-proof@v1) for a leaf given as
/// standard base64: `{"index", "checkpoint", "entry"}`.
#[pyfunction]
#[pyo3(signature = (proof, leaf, vkeys, *, origin = None))]
pub(crate) fn verify_log_proof(
    py: Python<'_>,
    proof: &Bound<'_, PyAny>,
    leaf: &Bound<'_, PyAny>,
    vkeys: &Bound<'_, PyAny>,
    origin: Option<&Bound<'_, PyAny>>,
) -> Answer {
    let proof = string_arg(proof, "proof")?;
    let leaf = base64_arg(leaf, "leaf")?;
    let verifiers = parse_vkeys(vkeys)?;
    let origin = optional_string(origin, "origin")?;
    let checkpoint = mandate_core::verify_tlog_proof(&proof, &leaf, origin.as_deref(), &verifiers)
        .map_err(|e| log_failure(&e))?;
    let index = mandate_core::TlogProof::parse(&proof)
        .map_err(|e| log_failure(&e))?
        .index;
    let entry = entry_text(&leaf)?;
    let result = PyDict::new(py);
    result.set_item("index", index)?;
    result.set_item("checkpoint", to_py(py, &CheckpointOut::of(&checkpoint))?)?;
    result.set_item("entry", loads(py, entry)?)?;
    Ok(result.into_any().unbind())
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

/// Verifies that the tree of `new_size` leaves with root `new_root` extends
/// the tree of `old_size` with root `old_root` (RFC 9162), the proof's
/// hashes in standard base64. Returns `None`; a refusal raises.
#[pyfunction]
pub(crate) fn verify_consistency(consistency: &Bound<'_, PyAny>) -> PyResult<()> {
    let input: ConsistencyInput = object_arg(consistency, "consistency", "invalid_argument")?;
    let old_root = hash_from(&input.old_root, "old_root")?;
    let new_root = hash_from(&input.new_root, "new_root")?;
    let proof = input
        .proof
        .iter()
        .enumerate()
        .map(|(i, hash)| hash_from(hash, &format!("proof[{i}]")))
        .collect::<Result<Vec<Hash>, Failure>>()?;
    mandate_core::verify_consistency(input.old_size, input.new_size, &old_root, &new_root, &proof)
        .map_err(|e| log_failure(&e).into())
}

/// Reads a leaf (standard base64) as a log entry, refusing anything but the
/// canonical JSON of a valid entry. It proves nothing about the leaf being
/// in the log: that is `verify_log_proof`.
#[pyfunction]
pub(crate) fn parse_log_leaf(py: Python<'_>, leaf: &Bound<'_, PyAny>) -> Answer {
    let leaf = base64_arg(leaf, "leaf")?;
    loads(py, entry_text(&leaf)?)
}

//! The record log, offline: checkpoints, inclusion proofs (tlog-proof@v1
//! texts) and consistency proofs, judged by core's rules with the log keys
//! the caller trusts. Nothing here signs.

use mandate_core::tlog::NoteVerifier;
use mandate_facade::log::{
    self as facade_log, CheckpointOut, ConsistencyInput, CosignedInput, PolicyInput, WitnessedOut,
};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString};

use crate::convert::{
    Answer, loads, now_arg, object_arg, optional_string, string_arg, strings_arg, to_py,
};
use crate::error::raised;

/// The trusted log keys: one vkey, several in one text (one a line, as
/// `GET /v1/log/key` serves them), or a list of vkeys.
fn parse_vkeys(vkeys: &Bound<'_, PyAny>) -> PyResult<Vec<NoteVerifier>> {
    let list: Vec<String> = if vkeys.is_instance_of::<PyString>() {
        facade_log::vkey_lines(&string_arg(vkeys, "vkeys")?)
    } else {
        strings_arg(vkeys, "vkeys")?
    };
    facade_log::verifiers(&list).map_err(raised)
}

/// Standard base64 (with padding), as the log's texts and answers carry.
fn base64_arg(value: &Bound<'_, PyAny>, name: &str) -> PyResult<Vec<u8>> {
    facade_log::base64_bytes(&string_arg(value, name)?, name).map_err(raised)
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
    let checkpoint =
        facade_log::verify_checkpoint(&note, &verifiers, origin.as_deref()).map_err(raised)?;
    to_py(py, &CheckpointOut::of(&checkpoint))
}

/// Verifies a witnessed checkpoint: signed by a trusted log key (of
/// `origin`, when given) and cosigned (C2SP tlog-cosignature,
/// cosignature/v1) by at least `policy["threshold"]` of the policy's
/// witnesses, each cosignature at most `policy["max_age_seconds"]` old at
/// `now` (unix seconds; default the clock) and at most 60 s ahead of it:
/// `{"checkpoint", "cosigned_by": [{"name", "timestamp"}]}`.
#[pyfunction]
#[pyo3(signature = (note, vkeys, policy, *, origin = None, now = None))]
pub(crate) fn verify_witnessed(
    py: Python<'_>,
    note: &Bound<'_, PyAny>,
    vkeys: &Bound<'_, PyAny>,
    policy: &Bound<'_, PyAny>,
    origin: Option<&Bound<'_, PyAny>>,
    now: Option<&Bound<'_, PyAny>>,
) -> Answer {
    let note = string_arg(note, "note")?;
    let verifiers = parse_vkeys(vkeys)?;
    let policy: PolicyInput = object_arg(policy, "policy", "invalid_argument")?;
    let policy = facade_log::witness_policy(&policy).map_err(raised)?;
    let origin = optional_string(origin, "origin")?;
    let now = now_arg(now)?;
    let witnessed =
        facade_log::verify_witnessed(&note, &verifiers, origin.as_deref(), &policy, now)
            .map_err(raised)?;
    to_py(py, &WitnessedOut::of(&witnessed))
}

/// Verifies one cosignature line (without its newline) by the witness of
/// `vkey` on a checkpoint's text (the note without its signatures); returns
/// its timestamp. Freshness and the log's signature are
/// `verify_witnessed`'s.
#[pyfunction]
pub(crate) fn verify_cosignature(
    checkpoint: &Bound<'_, PyAny>,
    line: &Bound<'_, PyAny>,
    vkey: &Bound<'_, PyAny>,
) -> PyResult<u64> {
    facade_log::verify_cosignature(
        &string_arg(checkpoint, "checkpoint")?,
        &string_arg(line, "line")?,
        &string_arg(vkey, "vkey")?,
    )
    .map_err(raised)
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
    let proved = facade_log::verify_log_proof(&proof, &leaf, &verifiers, origin.as_deref())
        .map_err(raised)?;
    let result = PyDict::new(py);
    result.set_item("index", proved.index)?;
    result.set_item(
        "checkpoint",
        to_py(py, &CheckpointOut::of(&proved.checkpoint))?,
    )?;
    result.set_item("entry", loads(py, proved.entry)?)?;
    Ok(result.into_any().unbind())
}

/// Verifies a record log proof as `verify_log_proof` does, and holds it to
/// a witness policy the caller is configured with (never one the log
/// sent): the proof's checkpoint carries `policy["threshold"]` fresh
/// cosignatures at `now`, or `cosigned` (a record proof answer's
/// `cosigned`: an older cosigned checkpoint and the consistency proof to
/// the proof's) does and links to it: `{"index", "checkpoint", "entry",
/// "linked", "witnessed": {"checkpoint", "cosigned_by"}}`.
#[pyfunction]
#[pyo3(signature = (proof, leaf, vkeys, policy, *, origin = None, cosigned = None, now = None))]
#[allow(
    clippy::too_many_arguments,
    reason = "the Python signature, keywords included"
)]
pub(crate) fn verify_witnessed_log_proof(
    py: Python<'_>,
    proof: &Bound<'_, PyAny>,
    leaf: &Bound<'_, PyAny>,
    vkeys: &Bound<'_, PyAny>,
    policy: &Bound<'_, PyAny>,
    origin: Option<&Bound<'_, PyAny>>,
    cosigned: Option<&Bound<'_, PyAny>>,
    now: Option<&Bound<'_, PyAny>>,
) -> Answer {
    let proof = string_arg(proof, "proof")?;
    let leaf = base64_arg(leaf, "leaf")?;
    let verifiers = parse_vkeys(vkeys)?;
    let policy: PolicyInput = object_arg(policy, "policy", "invalid_argument")?;
    let policy = facade_log::witness_policy(&policy).map_err(raised)?;
    let origin = optional_string(origin, "origin")?;
    let cosigned: Option<CosignedInput> = match cosigned {
        Some(value) if !value.is_none() => Some(object_arg(value, "cosigned", "invalid_argument")?),
        _ => None,
    };
    let now = now_arg(now)?;
    let proved = facade_log::verify_witnessed_log_proof(
        &proof,
        &leaf,
        &verifiers,
        origin.as_deref(),
        cosigned.as_ref(),
        &policy,
        now,
    )
    .map_err(raised)?;
    let result = PyDict::new(py);
    result.set_item("index", proved.index)?;
    result.set_item(
        "checkpoint",
        to_py(py, &CheckpointOut::of(&proved.checkpoint))?,
    )?;
    result.set_item("entry", loads(py, proved.entry)?)?;
    result.set_item("linked", proved.linked)?;
    result.set_item(
        "witnessed",
        to_py(py, &WitnessedOut::of(&proved.witnessed))?,
    )?;
    Ok(result.into_any().unbind())
}

/// Verifies that the tree of `new_size` leaves with root `new_root` extends
/// the tree of `old_size` with root `old_root` (RFC 9162), the proof's
/// hashes in standard base64. Returns `None`; a refusal raises.
#[pyfunction]
pub(crate) fn verify_consistency(consistency: &Bound<'_, PyAny>) -> PyResult<()> {
    let input: ConsistencyInput = object_arg(consistency, "consistency", "invalid_argument")?;
    facade_log::verify_consistency(&input).map_err(raised)
}

/// Reads a leaf (standard base64) as a log entry, refusing anything but the
/// canonical JSON of a valid entry. It proves nothing about the leaf being
/// in the log: that is `verify_log_proof`.
#[pyfunction]
pub(crate) fn parse_log_leaf(py: Python<'_>, leaf: &Bound<'_, PyAny>) -> Answer {
    let leaf = base64_arg(leaf, "leaf")?;
    loads(py, facade_log::entry_text(&leaf).map_err(raised)?)
}

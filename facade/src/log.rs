//! The record log, offline: checkpoints, inclusion proofs (tlog-proof@v1
//! texts) and consistency proofs, judged by core's rules with the log keys
//! the caller trusts, from the texts and base64 the façades read. Nothing
//! here signs.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use mandate_core::tlog::{
    CosignedLink, Hash, LogError, NoteVerifier, WitnessPolicy, WitnessVerifier, Witnessed,
    verify_witnessed_inclusion,
};
use mandate_core::{Checkpoint, LogEntry};
use serde::{Deserialize, Serialize};

use crate::failure::{Failure, Stage};

pub fn log_failure(error: &LogError) -> Failure {
    Failure::new(Stage::Log, error.code(), error)
}

/// The vkeys of one text: one a line, as `GET /v1/log/key` serves them.
pub fn vkey_lines(text: &str) -> Vec<String> {
    text.lines()
        .map(str::trim)
        .filter(|line| !line.is_empty())
        .map(str::to_owned)
        .collect()
}

/// The trusted log keys, at least one.
pub fn verifiers(vkeys: &[String]) -> Result<Vec<NoteVerifier>, Failure> {
    if vkeys.is_empty() {
        return Err(Failure::argument("vkeys names no key"));
    }
    vkeys
        .iter()
        .map(|vkey| NoteVerifier::parse(vkey).map_err(|e| log_failure(&e)))
        .collect()
}

/// Standard base64 (with padding), as the log's texts and answers carry.
pub fn base64_bytes(text: &str, name: &str) -> Result<Vec<u8>, Failure> {
    STANDARD
        .decode(text)
        .map_err(|_| Failure::argument(format!("{name} must be standard base64")))
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

/// A checkpoint as the SDKs answer it.
#[derive(Debug, Serialize)]
pub struct CheckpointOut<'a> {
    origin: &'a str,
    size: u64,
    root: String,
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    extensions: &'a [String],
}

impl<'a> CheckpointOut<'a> {
    pub fn of(checkpoint: &'a Checkpoint) -> CheckpointOut<'a> {
        CheckpointOut {
            origin: &checkpoint.origin,
            size: checkpoint.size,
            root: STANDARD.encode(checkpoint.root),
            extensions: &checkpoint.extensions,
        }
    }
}

/// Opens a signed checkpoint (C2SP tlog-checkpoint) with the trusted log
/// keys and, when given, checks that it is of the log `origin`.
pub fn verify_checkpoint(
    note: &str,
    vkeys: &[NoteVerifier],
    origin: Option<&str>,
) -> Result<Checkpoint, Failure> {
    mandate_core::open_checkpoint(note, origin, vkeys).map_err(|e| log_failure(&e))
}

/// A leaf's bytes checked as a log entry: the canonical JSON text.
pub fn entry_text(leaf: &[u8]) -> Result<&str, Failure> {
    LogEntry::from_leaf(leaf).map_err(|e| log_failure(&e))?;
    // A valid entry is JSON, so UTF-8.
    std::str::from_utf8(leaf).map_err(|_| log_failure(&LogError::LeafMalformed))
}

/// A leaf proved in the log.
#[derive(Debug)]
pub struct ProvedLeaf<'a> {
    pub index: u64,
    pub checkpoint: Checkpoint,
    /// The leaf's canonical JSON text.
    pub entry: &'a str,
}

/// Verifies a record log proof (C2SP tlog-proof@v1) for `leaf`: the
/// checkpoint it carries is signed by a trusted key (of `origin`, when
/// given), the leaf is included at the proof's index, and the leaf is a log
/// entry in its canonical form.
pub fn verify_log_proof<'a>(
    proof: &str,
    leaf: &'a [u8],
    vkeys: &[NoteVerifier],
    origin: Option<&str>,
) -> Result<ProvedLeaf<'a>, Failure> {
    let checkpoint =
        mandate_core::verify_tlog_proof(proof, leaf, origin, vkeys).map_err(|e| log_failure(&e))?;
    let index = mandate_core::TlogProof::parse(proof)
        .map_err(|e| log_failure(&e))?
        .index;
    Ok(ProvedLeaf {
        index,
        checkpoint,
        entry: entry_text(leaf)?,
    })
}

/// A consistency proof as the server answers `GET /v1/log/consistency`,
/// with the two roots the caller holds.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConsistencyInput {
    old_size: u64,
    old_root: String,
    new_size: u64,
    new_root: String,
    proof: Vec<String>,
}

/// Verifies that the tree of `new_size` leaves with root `new_root`
/// extends the tree of `old_size` with root `old_root` (RFC 9162), the
/// proof's hashes in standard base64.
pub fn verify_consistency(input: &ConsistencyInput) -> Result<(), Failure> {
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

/// A witness policy as the SDKs take it (the shape of
/// `tests/vectors/witness.json`): the witnesses' vkeys (each carries its
/// name), how many fresh cosignatures a checkpoint needs and the oldest a
/// cosignature may be, in seconds.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PolicyInput {
    witnesses: Vec<String>,
    threshold: usize,
    max_age_seconds: u64,
}

/// The policy, refused (stage `log`) for a witness vkey core does not
/// accept or a policy core does not build (`witness_policy_*`).
pub fn witness_policy(input: &PolicyInput) -> Result<WitnessPolicy, Failure> {
    let witnesses = input
        .witnesses
        .iter()
        .map(|vkey| WitnessVerifier::parse(vkey).map_err(|e| log_failure(&e)))
        .collect::<Result<Vec<_>, Failure>>()?;
    WitnessPolicy::new(witnesses, input.threshold, input.max_age_seconds)
        .map_err(|e| Failure::new(Stage::Log, e.code(), &e))
}

/// One cosignature that counted, as the SDKs answer it.
#[derive(Debug, Serialize)]
pub struct CosignedOut<'a> {
    name: &'a str,
    timestamp: u64,
}

/// A witnessed checkpoint as the SDKs answer it: the checkpoint and the
/// fresh cosignatures that counted, in the note's order.
#[derive(Debug, Serialize)]
pub struct WitnessedOut<'a> {
    checkpoint: CheckpointOut<'a>,
    cosigned_by: Vec<CosignedOut<'a>>,
}

impl<'a> WitnessedOut<'a> {
    pub fn of(witnessed: &'a Witnessed) -> WitnessedOut<'a> {
        WitnessedOut {
            checkpoint: CheckpointOut::of(&witnessed.checkpoint),
            cosigned_by: witnessed
                .cosigned_by
                .iter()
                .map(|c| CosignedOut {
                    name: &c.name,
                    timestamp: c.timestamp,
                })
                .collect(),
        }
    }
}

/// Opens a checkpoint with the trusted log keys (of `origin`, when given)
/// and accepts it only with `policy`'s threshold of fresh cosignatures
/// (C2SP tlog-cosignature, cosignature/v1) at `now`, POSIX seconds.
pub fn verify_witnessed(
    note: &str,
    vkeys: &[NoteVerifier],
    origin: Option<&str>,
    policy: &WitnessPolicy,
    now: i64,
) -> Result<Witnessed, Failure> {
    mandate_core::verify_witnessed(note, origin, vkeys, policy, now).map_err(|e| log_failure(&e))
}

/// Verifies one cosignature line (without its newline) by the witness of
/// `vkey` on a checkpoint's text (the note's body, without signatures);
/// returns the cosignature's timestamp. It says nothing of freshness or of
/// the log's signature: that is [`verify_witnessed`]'s.
pub fn verify_cosignature(checkpoint: &str, line: &str, vkey: &str) -> Result<u64, Failure> {
    let witness = WitnessVerifier::parse(vkey).map_err(|e| log_failure(&e))?;
    let checkpoint = Checkpoint::parse(checkpoint).map_err(|e| log_failure(&e))?;
    witness
        .verify_line(&checkpoint, line)
        .map_err(|e| log_failure(&e))
}

/// An older cosigned checkpoint and the consistency proof from it to the
/// checkpoint a record's proofs lead to, as `GET /v1/vat/aar/{id}/proof`
/// answers it (`cosigned`) and the vectors write it.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CosignedInput {
    checkpoint: String,
    consistency: Vec<String>,
}

/// A leaf proved in a checkpoint that meets a witness policy, directly or
/// through a cosigned link.
#[derive(Debug)]
pub struct WitnessedLeaf<'a> {
    pub index: u64,
    pub checkpoint: Checkpoint,
    /// The leaf's canonical JSON text.
    pub entry: &'a str,
    /// Whether the policy was met by the link's checkpoint.
    pub linked: bool,
    /// The checkpoint that met the policy, and its counted cosignatures.
    pub witnessed: Witnessed,
}

/// [`verify_log_proof`] under a witness policy at `now` (POSIX seconds):
/// the proof's checkpoint meets `policy`, or `cosigned` carries one of the
/// same log that does and a consistency proof that the proof's checkpoint
/// extends it (core's `verify_witnessed_inclusion`).
pub fn verify_witnessed_log_proof<'a>(
    proof: &str,
    leaf: &'a [u8],
    vkeys: &[NoteVerifier],
    origin: Option<&str>,
    cosigned: Option<&CosignedInput>,
    policy: &WitnessPolicy,
    now: i64,
) -> Result<WitnessedLeaf<'a>, Failure> {
    let link = cosigned
        .map(|input| {
            let consistency = input
                .consistency
                .iter()
                .enumerate()
                .map(|(i, hash)| hash_from(hash, &format!("cosigned.consistency[{i}]")))
                .collect::<Result<Vec<Hash>, Failure>>()?;
            Ok::<_, Failure>(CosignedLink {
                checkpoint: input.checkpoint.clone(),
                consistency,
            })
        })
        .transpose()?;
    let proved = verify_witnessed_inclusion(proof, leaf, origin, vkeys, link.as_ref(), policy, now)
        .map_err(|e| log_failure(&e))?;
    let index = mandate_core::TlogProof::parse(proof)
        .map_err(|e| log_failure(&e))?
        .index;
    Ok(WitnessedLeaf {
        index,
        checkpoint: proved.checkpoint,
        entry: entry_text(leaf)?,
        linked: proved.linked,
        witnessed: proved.witnessed,
    })
}

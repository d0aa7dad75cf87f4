//! A record's inclusion proof held to a witness policy. A proof leads to
//! the log's newest checkpoint, which the log signs as soon as a write is
//! acknowledged — before its witnesses have had the time to cosign it. So
//! the proof may also carry a [`CosignedLink`]: an older checkpoint that is
//! cosigned, and the RFC 6962 consistency proof from it to the newest. A
//! verifier with a policy then accepts the proof when the newest
//! checkpoint is itself witnessed, or when it extends one that is.
//!
//! What the link proves: the newest tree extends a tree that enough
//! witnesses saw recently (within the policy's maximum age). What it does
//! not: that the witnesses saw the leaves after the cosigned size — a log
//! that forked after its last cosigned checkpoint can serve such proofs
//! until that checkpoint's cosignatures grow older than the policy's
//! maximum age, because no witness will cosign the fork (docs/log.md).

use super::checkpoint::Checkpoint;
use super::cosignature::{WitnessPolicy, Witnessed, verify_witnessed};
use super::error::LogError;
use super::hash::Hash;
use super::note::NoteVerifier;
use super::proof::{TlogProof, verify_tlog_proof};
use super::verify::verify_consistency;

/// An older, cosigned checkpoint and the consistency proof from it to the
/// checkpoint a proof leads to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CosignedLink {
    /// The cosigned checkpoint note: the log's signatures and the
    /// witnesses' cosignature lines.
    pub checkpoint: String,
    /// The RFC 6962 consistency proof from the cosigned checkpoint's size
    /// to the newest checkpoint's.
    pub consistency: Vec<Hash>,
}

/// A leaf proven in a checkpoint that is witnessed, or that extends one
/// that is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WitnessedInclusion {
    /// The checkpoint the inclusion proof leads to.
    pub checkpoint: Checkpoint,
    /// The checkpoint that met the policy: the same one, or the link's.
    pub witnessed: Witnessed,
    /// Whether the policy was met through the link.
    pub linked: bool,
}

/// Verifies a tlog-proof@v1 text for a leaf under a witness policy: the
/// leaf is included in the proof's checkpoint (signed by a trusted log key,
/// of `origin` when given), and either that checkpoint carries
/// `policy.threshold()` fresh cosignatures, or `link` carries a checkpoint
/// of the same log that does and a consistency proof showing the proof's
/// checkpoint extends it.
///
/// The proof's own checkpoint is judged first: when it meets the policy,
/// the link is not looked at. When it does not — too few fresh
/// cosignatures and no link — the error is its
/// `cosignatures_insufficient`. A cosignature line of a policy witness that
/// does not verify rejects the proof wherever it is. A link to a larger
/// tree is `log_sizes_out_of_order`; of another log,
/// `checkpoint_origin_mismatch`; a consistency proof that fails, its error.
pub fn verify_witnessed_inclusion(
    proof_text: &str,
    leaf_bytes: &[u8],
    origin: Option<&str>,
    log_keys: &[NoteVerifier],
    link: Option<&CosignedLink>,
    policy: &WitnessPolicy,
    now: i64,
) -> Result<WitnessedInclusion, LogError> {
    let checkpoint = verify_tlog_proof(proof_text, leaf_bytes, origin, log_keys)?;
    let note = TlogProof::parse(proof_text)?.checkpoint;
    let own = verify_witnessed(&note, origin, log_keys, policy, now);
    let link = match (own, link) {
        (Ok(witnessed), _) => {
            return Ok(WitnessedInclusion {
                checkpoint,
                witnessed,
                linked: false,
            });
        }
        (Err(error @ LogError::CosignaturesInsufficient { .. }), None) => return Err(error),
        (Err(LogError::CosignaturesInsufficient { .. }), Some(link)) => link,
        (Err(error), _) => return Err(error),
    };
    let witnessed = verify_witnessed(
        &link.checkpoint,
        Some(&checkpoint.origin),
        log_keys,
        policy,
        now,
    )?;
    let old = &witnessed.checkpoint;
    if old.size > checkpoint.size {
        return Err(LogError::SizesOutOfOrder);
    }
    verify_consistency(
        old.size,
        checkpoint.size,
        &old.root,
        &checkpoint.root,
        &link.consistency,
    )?;
    Ok(WitnessedInclusion {
        checkpoint,
        witnessed,
        linked: true,
    })
}

//! Witness cosignatures (C2SP tlog-cosignature, the Ed25519 `cosignature/v1`
//! type) and witness policies: which witnesses a verifier trusts, how many
//! of them must have cosigned a checkpoint, and how recently.
//!
//! A cosignature is a signed-note signature line on a checkpoint
//! (tlog-cosignature §Format):
//!
//! ```text
//! — <witness name> base64(key id ‖ timestamp ‖ Ed25519 signature)
//! ```
//!
//! - the key id is SHA-256(name ‖ 0x0A ‖ 0x04 ‖ public key)[:4]: type
//!   0x04, "timestamped Ed25519 witness cosignatures" (signed-note §Signature
//!   types), never the log's own 0x01 — a witness key cannot be read as a
//!   log key or the other way round;
//! - the timestamp is 8 bytes, big-endian, POSIX seconds, at most 2^63 − 1
//!   (tlog-cosignature §Format, `timestamped_signature`);
//! - the signature is over the message of §Ed25519 signed message:
//!   `cosignature/v1\n`, `time <timestamp>\n`, then the checkpoint's whole
//!   note text with its final newline (extension lines included);
//! - the vkey is `<name>+<id>+base64(0x04 ‖ public key)` (§Format: "MAY be
//!   encoded as vkeys with signature type 0x04").
//!
//! [`verify_witnessed`] opens a checkpoint with the log's keys and counts
//! the fresh cosignatures of a [`WitnessPolicy`]'s witnesses. As signed-note
//! says (§Signatures), lines by keys the policy does not name (by name and
//! id together) are ignored, and a policy witness's line that fails to
//! verify rejects the whole note. A valid cosignature that is too old or
//! too far in the future is not an error: it just does not count.
//!
//! Not here: where witness keys are kept, how a log asks for cosignatures
//! (the witness's rule is `witness`), and the clock (`now` is the caller's).

use std::collections::BTreeSet;

use base64::Engine as _;
use ed25519_dalek::{Signature, Signer as _, SigningKey, VerifyingKey};

use super::checkpoint::{Checkpoint, open_checkpoint};
use super::error::LogError;
use super::note::{
    NoteVerifier, SIGNATURE_PREFIX, parse_signature_line, parse_vkey, split_note, typed_key_id,
    valid_key_name, vkey_text,
};
use crate::b64::STANDARD;
use crate::limits::COSIGNATURE_FUTURE_SKEW_SECONDS;

/// The signature type byte of Ed25519 cosignature/v1 in key ids and vkeys
/// (signed-note §Signature types: 0x04).
pub const COSIGNATURE_V1_TYPE: u8 = 0x04;

/// The header line of the signed message, its domain separation.
const COSIGNATURE_V1_HEADER: &str = "cosignature/v1";

/// The message a witness signs for a checkpoint's note text at `timestamp`
/// (tlog-cosignature §Ed25519 signed message).
pub fn cosignature_message(text: &str, timestamp: u64) -> String {
    format!("{COSIGNATURE_V1_HEADER}\ntime {timestamp}\n{text}")
}

/// A timestamp as the cosignature carries it: POSIX seconds, not negative
/// and (as an `i64`) at most 2^63 − 1.
fn timestamp_of(now: i64) -> Result<u64, LogError> {
    u64::try_from(now).map_err(|_| LogError::CosignatureMalformed)
}

/// A witness's signing key: cosigns checkpoints under one name.
pub struct WitnessSigner {
    name: String,
    key: SigningKey,
    id: u32,
}

impl std::fmt::Debug for WitnessSigner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the key.
        f.debug_struct("WitnessSigner")
            .field("name", &self.name)
            .field("id", &format_args!("{:08x}", self.id))
            .finish_non_exhaustive()
    }
}

impl WitnessSigner {
    /// A witness signer from a 32-byte Ed25519 seed and the witness's name
    /// (conventionally a schema-less URL).
    pub fn new(seed: &[u8; 32], name: &str) -> Result<WitnessSigner, LogError> {
        if !valid_key_name(name) {
            return Err(LogError::KeyNameInvalid);
        }
        let key = SigningKey::from_bytes(seed);
        let id = typed_key_id(name, COSIGNATURE_V1_TYPE, &key.verifying_key().to_bytes());
        Ok(WitnessSigner {
            name: name.to_owned(),
            key,
            id,
        })
    }

    /// The witness's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The key id (type 0x04).
    pub fn key_id(&self) -> u32 {
        self.id
    }

    /// The witness's vkey, `<name>+<id>+<base64(0x04 ‖ public key)>`.
    pub fn vkey(&self) -> String {
        vkey_text(
            &self.name,
            self.id,
            COSIGNATURE_V1_TYPE,
            &self.key.verifying_key(),
        )
    }

    /// The cosignature line (with its newline) of `checkpoint` at `now`
    /// (POSIX seconds). Refuses a negative `now` and a checkpoint whose
    /// note text would not parse back to it.
    pub fn cosign(&self, checkpoint: &Checkpoint, now: i64) -> Result<String, LogError> {
        let text = checkpoint.body();
        if Checkpoint::parse(&text).as_ref() != Ok(checkpoint) {
            return Err(LogError::CheckpointMalformed);
        }
        let timestamp = timestamp_of(now)?;
        let signature = self
            .key
            .sign(cosignature_message(&text, timestamp).as_bytes());
        let mut bytes = self.id.to_be_bytes().to_vec();
        bytes.extend_from_slice(&timestamp.to_be_bytes());
        bytes.extend_from_slice(&signature.to_bytes());
        Ok(format!(
            "{SIGNATURE_PREFIX}{} {}\n",
            self.name,
            STANDARD.encode(bytes)
        ))
    }
}

/// A witness's key as a verifier holds it, parsed from its vkey.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WitnessVerifier {
    name: String,
    id: u32,
    key: VerifyingKey,
}

impl WitnessVerifier {
    /// Parses a witness vkey: as [`NoteVerifier::parse`], but of signature
    /// type 0x04 (another type is `witness_vkey_unsupported_type`).
    pub fn parse(vkey: &str) -> Result<WitnessVerifier, LogError> {
        let (name, id, key) = parse_vkey(
            vkey,
            COSIGNATURE_V1_TYPE,
            LogError::WitnessVkeyUnsupportedType,
        )?;
        Ok(WitnessVerifier { name, id, key })
    }

    /// The witness's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The key id.
    pub fn key_id(&self) -> u32 {
        self.id
    }

    /// The vkey this verifier was parsed from.
    pub fn vkey(&self) -> String {
        vkey_text(&self.name, self.id, COSIGNATURE_V1_TYPE, &self.key)
    }

    /// Checks the signature bytes of a line already matched to this
    /// witness (by name and id) against the note text; returns the
    /// timestamp.
    fn check(&self, text: &str, signature: &[u8]) -> Result<u64, LogError> {
        let (timestamp, signature) = signature
            .split_first_chunk::<8>()
            .ok_or(LogError::CosignatureMalformed)?;
        let timestamp = u64::from_be_bytes(*timestamp);
        if i64::try_from(timestamp).is_err() {
            return Err(LogError::CosignatureMalformed);
        }
        let signature: [u8; 64] = signature
            .try_into()
            .map_err(|_| LogError::CosignatureMalformed)?;
        self.key
            .verify_strict(
                cosignature_message(text, timestamp).as_bytes(),
                &Signature::from_bytes(&signature),
            )
            .map_err(|_| LogError::CosignatureInvalid)?;
        Ok(timestamp)
    }

    /// Verifies one cosignature line (without its newline) on `checkpoint`
    /// and returns its timestamp. A line by another key (name or id) is
    /// `note_unknown_key`.
    pub fn verify_line(&self, checkpoint: &Checkpoint, line: &str) -> Result<u64, LogError> {
        let parsed = parse_signature_line(line)?;
        if parsed.name != self.name || parsed.id != self.id {
            return Err(LogError::NoteUnknownKey);
        }
        self.check(&checkpoint.body(), &parsed.signature)
    }
}

/// Why a witness policy could not be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WitnessPolicyError {
    #[error("a witness policy needs at least one cosignature (a threshold of 0 trusts no one)")]
    ThresholdZero,
    #[error("a threshold of {threshold} can never be met by {witnesses} witnesses")]
    ThresholdAboveWitnesses { threshold: usize, witnesses: usize },
    #[error("the witness {0} is named twice")]
    DuplicateName(String),
    #[error(
        "the witness {0} has the key of another witness of the policy (cosignature/v1 does not sign the name)"
    )]
    DuplicateKey(String),
    #[error("a cosignature's maximum age is at least one second")]
    MaxAgeZero,
}

impl WitnessPolicyError {
    /// Stable snake_case code for this error.
    pub fn code(&self) -> &'static str {
        match self {
            WitnessPolicyError::ThresholdZero => "witness_policy_threshold_zero",
            WitnessPolicyError::ThresholdAboveWitnesses { .. } => {
                "witness_policy_threshold_above_witnesses"
            }
            WitnessPolicyError::DuplicateName(_) => "witness_policy_duplicate_name",
            WitnessPolicyError::DuplicateKey(_) => "witness_policy_duplicate_key",
            WitnessPolicyError::MaxAgeZero => "witness_policy_max_age_zero",
        }
    }
}

/// Which witnesses a verifier trusts, how many of them must have cosigned
/// a checkpoint (`threshold`, the `k` of "k of n"), and how old a
/// cosignature may be and still count, so that a log cannot serve an old
/// cosigned checkpoint forever.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WitnessPolicy {
    witnesses: Vec<WitnessVerifier>,
    threshold: usize,
    max_age_seconds: u64,
}

impl WitnessPolicy {
    /// A policy, refused when it could never be met (a threshold above the
    /// number of witnesses), when it trusts no one (a threshold of 0), when
    /// one witness could count twice (two witnesses of one name, or of one
    /// key: the Ed25519 message does not commit to the name), or when no
    /// cosignature could be fresh (a maximum age of 0).
    pub fn new(
        witnesses: Vec<WitnessVerifier>,
        threshold: usize,
        max_age_seconds: u64,
    ) -> Result<WitnessPolicy, WitnessPolicyError> {
        if threshold == 0 {
            return Err(WitnessPolicyError::ThresholdZero);
        }
        if threshold > witnesses.len() {
            return Err(WitnessPolicyError::ThresholdAboveWitnesses {
                threshold,
                witnesses: witnesses.len(),
            });
        }
        if max_age_seconds == 0 {
            return Err(WitnessPolicyError::MaxAgeZero);
        }
        let mut names = BTreeSet::new();
        let mut keys = BTreeSet::new();
        for witness in &witnesses {
            if !names.insert(witness.name.as_str()) {
                return Err(WitnessPolicyError::DuplicateName(witness.name.clone()));
            }
            if !keys.insert(witness.key.to_bytes()) {
                return Err(WitnessPolicyError::DuplicateKey(witness.name.clone()));
            }
        }
        Ok(WitnessPolicy {
            witnesses,
            threshold,
            max_age_seconds,
        })
    }

    /// The witnesses, in the order given.
    pub fn witnesses(&self) -> &[WitnessVerifier] {
        &self.witnesses
    }

    /// How many fresh cosignatures a checkpoint needs.
    pub fn threshold(&self) -> usize {
        self.threshold
    }

    /// The oldest a cosignature may be, in seconds, and still count.
    pub fn max_age_seconds(&self) -> u64 {
        self.max_age_seconds
    }
}

/// One counted cosignature: the witness's name and when it cosigned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cosigned {
    /// The witness's name.
    pub name: String,
    /// The cosignature's timestamp, POSIX seconds.
    pub timestamp: u64,
}

/// A checkpoint signed by its log and cosigned by enough of a policy's
/// witnesses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Witnessed {
    /// The checkpoint.
    pub checkpoint: Checkpoint,
    /// The fresh cosignatures counted, in the order they are in the note.
    pub cosigned_by: Vec<Cosigned>,
}

/// Opens a checkpoint note with the log's keys (as [`open_checkpoint`],
/// for `origin` when given), then accepts it only with at least
/// `policy.threshold()` fresh cosignatures by distinct witnesses of the
/// policy. A cosignature is fresh when `now − max_age ≤ timestamp ≤ now +`
/// [`COSIGNATURE_FUTURE_SKEW_SECONDS`] (`now` in POSIX seconds).
///
/// Lines by keys neither the log's nor the policy's are ignored. A policy
/// witness's line that is malformed (`cosignature_malformed`), fails to
/// verify (`cosignature_invalid`) or comes twice
/// (`note_duplicate_signature`) rejects the note; too few fresh
/// cosignatures is `cosignatures_insufficient`.
pub fn verify_witnessed(
    note: &str,
    origin: Option<&str>,
    log_keys: &[NoteVerifier],
    policy: &WitnessPolicy,
    now: i64,
) -> Result<Witnessed, LogError> {
    let checkpoint = open_checkpoint(note, origin, log_keys)?;
    let (text, lines) = split_note(note)?;
    let oldest = now.saturating_sub(i64::try_from(policy.max_age_seconds).unwrap_or(i64::MAX));
    let newest = now.saturating_add(COSIGNATURE_FUTURE_SKEW_SECONDS);
    let mut seen = BTreeSet::new();
    let mut cosigned_by = Vec::new();
    for line in lines {
        let line = parse_signature_line(line)?;
        let Some(witness) = policy
            .witnesses
            .iter()
            .find(|w| w.name == line.name && w.id == line.id)
        else {
            continue;
        };
        if !seen.insert(witness.name.as_str()) {
            return Err(LogError::NoteDuplicateSignature);
        }
        let timestamp = witness.check(text, &line.signature)?;
        // `check` refuses timestamps above i64::MAX.
        let at = i64::try_from(timestamp).unwrap_or(i64::MAX);
        if (oldest..=newest).contains(&at) {
            cosigned_by.push(Cosigned {
                name: witness.name.clone(),
                timestamp,
            });
        }
    }
    if cosigned_by.len() < policy.threshold {
        return Err(LogError::CosignaturesInsufficient {
            fresh: cosigned_by.len(),
            threshold: policy.threshold,
        });
    }
    Ok(Witnessed {
        checkpoint,
        cosigned_by,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tlog::note::NoteSigner;

    const ORIGIN: &str = "log.example/a";
    const NOW: i64 = 1_800_000_000;

    fn log() -> (NoteSigner, NoteVerifier) {
        let signer = NoteSigner::new(&[1; 32], ORIGIN).unwrap();
        let verifier = NoteVerifier::parse(&signer.vkey()).unwrap();
        (signer, verifier)
    }

    fn witness(seed: u8) -> WitnessSigner {
        WitnessSigner::new(&[seed; 32], &format!("witness.example/w{seed}")).unwrap()
    }

    fn policy(witnesses: &[&WitnessSigner], threshold: usize) -> WitnessPolicy {
        let keys = witnesses
            .iter()
            .map(|w| WitnessVerifier::parse(&w.vkey()).unwrap())
            .collect();
        WitnessPolicy::new(keys, threshold, 3600).unwrap()
    }

    fn checkpoint() -> Checkpoint {
        Checkpoint::new(ORIGIN, 20, [9; 32])
    }

    fn note(cosignatures: &[(&WitnessSigner, i64)]) -> String {
        let (signer, _) = log();
        let mut note = checkpoint().sign(&signer).unwrap();
        for (witness, at) in cosignatures {
            note.push_str(&witness.cosign(&checkpoint(), *at).unwrap());
        }
        note
    }

    #[test]
    fn the_signed_message_is_the_specifications() {
        assert_eq!(
            cosignature_message("example.com/behind-the-sofa\n20852163\nCsUY=\n", 1679315147),
            "cosignature/v1\ntime 1679315147\nexample.com/behind-the-sofa\n20852163\nCsUY=\n"
        );
    }

    #[test]
    fn the_specification_example_frames_a_cosignature() {
        // tlog-cosignature §Format's example; the specification publishes
        // neither key, so what can be checked is the framing: the key id,
        // then the timestamp of its signed-message example, then 64 bytes.
        let line = "\u{2014} witness.example.com/w1 jWbPPwAAAABkGFDLEZMHwSRaJNiIDoe9DYn/zXcrtPHeolMI5OWXEhZCB9dlrDJsX3b2oyin1nPZqhf5nNo0xUe+mbIUBkBIfZ+qnA==";
        let parsed = parse_signature_line(line).unwrap();
        assert_eq!(parsed.name, "witness.example.com/w1");
        assert_eq!(parsed.id, 0x8d66_cf3f);
        assert_eq!(parsed.signature.len(), 8 + 64);
        assert_eq!(parsed.signature[..8], 1_679_315_147u64.to_be_bytes());
        // A key of that name but not that id does not claim the line.
        let ours = WitnessSigner::new(&[2; 32], "witness.example.com/w1").unwrap();
        let verifier = WitnessVerifier::parse(&ours.vkey()).unwrap();
        let checkpoint = Checkpoint::parse(
            "example.com/behind-the-sofa\n20852163\nCsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=\n",
        )
        .unwrap();
        assert_eq!(
            verifier.verify_line(&checkpoint, line),
            Err(LogError::NoteUnknownKey)
        );
    }

    #[test]
    fn a_cosignature_line_is_id_timestamp_and_signature() {
        let w = witness(2);
        let line = w.cosign(&checkpoint(), NOW).unwrap();
        let line = line.strip_suffix('\n').unwrap();
        let parsed = parse_signature_line(line).unwrap();
        assert_eq!(parsed.name, "witness.example/w2");
        assert_eq!(parsed.id, w.key_id());
        assert_eq!(parsed.signature.len(), 8 + 64);
        assert_eq!(parsed.signature[..8], (NOW as u64).to_be_bytes());
        let verifier = WitnessVerifier::parse(&w.vkey()).unwrap();
        assert_eq!(verifier.vkey(), w.vkey());
        assert_eq!(verifier.verify_line(&checkpoint(), line), Ok(NOW as u64));
        // Another checkpoint, another witness.
        let other = Checkpoint::new(ORIGIN, 21, [9; 32]);
        assert_eq!(
            verifier.verify_line(&other, line),
            Err(LogError::CosignatureInvalid)
        );
        let stranger = WitnessVerifier::parse(&witness(3).vkey()).unwrap();
        assert_eq!(
            stranger.verify_line(&checkpoint(), line),
            Err(LogError::NoteUnknownKey)
        );
        assert_eq!(
            w.cosign(&checkpoint(), -1),
            Err(LogError::CosignatureMalformed)
        );
    }

    #[test]
    fn witness_keys_and_log_keys_do_not_mix() {
        let w = witness(2);
        let (signer, _) = log();
        // The same seed and name as a log key and as a witness key: other ids.
        let as_log = NoteSigner::new(&[2; 32], "witness.example/w2").unwrap();
        assert_ne!(as_log.key_id(), w.key_id());
        assert_eq!(
            NoteVerifier::parse(&w.vkey()),
            Err(LogError::VkeyUnsupportedType)
        );
        assert_eq!(
            WitnessVerifier::parse(&signer.vkey()),
            Err(LogError::WitnessVkeyUnsupportedType)
        );
        let (name, rest) = w
            .vkey()
            .split_once('+')
            .map(|(a, b)| (a.to_owned(), b.to_owned()))
            .unwrap();
        let (_, material) = rest.split_once('+').unwrap();
        assert_eq!(
            WitnessVerifier::parse(&format!("{name}+00000000+{material}")),
            Err(LogError::VkeyIdMismatch)
        );
    }

    #[test]
    fn policies_that_cannot_work_are_refused() {
        let (a, b) = (witness(2), witness(3));
        let keys = |ws: &[&WitnessSigner]| -> Vec<WitnessVerifier> {
            ws.iter()
                .map(|w| WitnessVerifier::parse(&w.vkey()).unwrap())
                .collect()
        };
        assert_eq!(
            WitnessPolicy::new(keys(&[&a, &b]), 0, 60),
            Err(WitnessPolicyError::ThresholdZero)
        );
        assert_eq!(
            WitnessPolicy::new(keys(&[&a, &b]), 3, 60),
            Err(WitnessPolicyError::ThresholdAboveWitnesses {
                threshold: 3,
                witnesses: 2
            })
        );
        assert_eq!(
            WitnessPolicy::new(Vec::new(), 1, 60),
            Err(WitnessPolicyError::ThresholdAboveWitnesses {
                threshold: 1,
                witnesses: 0
            })
        );
        assert_eq!(
            WitnessPolicy::new(keys(&[&a, &b]), 1, 0),
            Err(WitnessPolicyError::MaxAgeZero)
        );
        assert_eq!(
            WitnessPolicy::new(keys(&[&a, &a]), 1, 60),
            Err(WitnessPolicyError::DuplicateName(
                "witness.example/w2".into()
            ))
        );
        let same_key = WitnessSigner::new(&[2; 32], "witness.example/other").unwrap();
        assert_eq!(
            WitnessPolicy::new(keys(&[&a, &same_key]), 1, 60),
            Err(WitnessPolicyError::DuplicateKey(
                "witness.example/other".into()
            ))
        );
        let ok = WitnessPolicy::new(keys(&[&a, &b]), 2, 60).unwrap();
        assert_eq!((ok.threshold(), ok.max_age_seconds()), (2, 60));
        assert_eq!(ok.witnesses().len(), 2);
    }

    #[test]
    fn a_policy_counts_fresh_cosignatures_of_distinct_witnesses() {
        let (a, b, c) = (witness(2), witness(3), witness(4));
        let (_, log_key) = log();
        let keys = [log_key];
        let two_of_three = policy(&[&a, &b, &c], 2);
        let check = |note: &str| verify_witnessed(note, Some(ORIGIN), &keys, &two_of_three, NOW);

        let met = check(&note(&[(&a, NOW - 10), (&c, NOW)])).unwrap();
        assert_eq!(met.checkpoint, checkpoint());
        assert_eq!(
            met.cosigned_by,
            vec![
                Cosigned {
                    name: "witness.example/w2".into(),
                    timestamp: (NOW - 10) as u64
                },
                Cosigned {
                    name: "witness.example/w4".into(),
                    timestamp: NOW as u64
                },
            ]
        );
        let short = |fresh| {
            Err(LogError::CosignaturesInsufficient {
                fresh,
                threshold: 2,
            })
        };
        assert_eq!(check(&note(&[(&a, NOW)])).map(|_| ()), short(1));
        assert_eq!(check(&note(&[])).map(|_| ()), short(0));
        // Exactly at the edges counts; one second beyond does not.
        assert!(check(&note(&[(&a, NOW - 3600), (&b, NOW + 60)])).is_ok());
        assert_eq!(
            check(&note(&[(&a, NOW - 3601), (&b, NOW)])).map(|_| ()),
            short(1)
        );
        assert_eq!(
            check(&note(&[(&a, NOW + 61), (&b, NOW)])).map(|_| ()),
            short(1)
        );
        // A witness outside the policy is ignored.
        let d = witness(5);
        assert_eq!(check(&note(&[(&a, NOW), (&d, NOW)])).map(|_| ()), short(1));
        // The same witness twice.
        assert_eq!(
            check(&note(&[(&a, NOW), (&a, NOW - 1)])).map(|_| ()),
            Err(LogError::NoteDuplicateSignature)
        );
        // A policy witness's cosignature of another checkpoint.
        let mut forged = note(&[(&b, NOW)]);
        forged.push_str(
            &a.cosign(&Checkpoint::new(ORIGIN, 21, [9; 32]), NOW)
                .unwrap(),
        );
        assert_eq!(
            check(&forged).map(|_| ()),
            Err(LogError::CosignatureInvalid)
        );
        // Cosignatures without the log's signature prove nothing.
        let unsigned = note(&[(&a, NOW), (&b, NOW)]);
        let (_, log_key) = log();
        let other_log =
            NoteVerifier::parse(&NoteSigner::new(&[8; 32], ORIGIN).unwrap().vkey()).unwrap();
        assert_eq!(
            verify_witnessed(&unsigned, Some(ORIGIN), &[other_log], &two_of_three, NOW).map(|_| ()),
            Err(LogError::NoteUnknownKey)
        );
        assert!(verify_witnessed(&unsigned, None, &[log_key], &two_of_three, NOW).is_ok());
    }

    #[test]
    fn malformed_cosignatures_of_policy_witnesses_reject_the_note() {
        let a = witness(2);
        let (_, log_key) = log();
        let one = policy(&[&a], 1);
        let line = |bytes: Vec<u8>| {
            format!(
                "{SIGNATURE_PREFIX}{} {}\n",
                a.name(),
                STANDARD.encode([a.key_id().to_be_bytes().to_vec(), bytes].concat())
            )
        };
        let good = a.cosign(&checkpoint(), NOW).unwrap();
        let good = parse_signature_line(good.trim_end()).unwrap().signature;
        let mut huge_time = good.clone();
        huge_time[0] = 0x80;
        for bytes in [
            good[..71].to_vec(),
            [good.clone(), vec![0]].concat(),
            huge_time,
        ] {
            let note = format!("{}{}", note(&[]), line(bytes));
            assert_eq!(
                verify_witnessed(
                    &note,
                    Some(ORIGIN),
                    std::slice::from_ref(&log_key),
                    &one,
                    NOW
                )
                .map(|_| ()),
                Err(LogError::CosignatureMalformed)
            );
        }
    }
}

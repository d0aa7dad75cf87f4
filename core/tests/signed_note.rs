//! Cosigned checkpoints and code we did not write: the `signed_note` crate
//! (Cloudflare's azul, a port of Go's `golang.org/x/mod/sumdb/note`).
//!
//! Its only release on crates.io, 0.2.0, knows one signature type, plain
//! Ed25519 (0x01): `StandardVerifier::new` refuses any other vkey
//! (`VerifierError::Alg`) and it has no cosignature/v1 verifier or signer.
//! So it checks what it can: that a checkpoint our witnesses cosigned is a
//! signed note it parses, whose log signature it verifies while it passes
//! the cosignature lines over as unknown keys with the ids it computes
//! itself (type 0x04); that each cosignature's last 64 bytes are an Ed25519
//! signature, by the witness's key, of the message the tlog-cosignature
//! specification writes out (written here from the specification's text,
//! not by core); and that a cosignature its signer makes over that message,
//! framed by its signature encoder, verifies with ours.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use ed25519_dalek::SigningKey;
use mandate_core::tlog::{
    Checkpoint, NoteSigner, NoteVerifier, WitnessPolicy, WitnessSigner, WitnessVerifier,
    verify_witnessed,
};
use signed_note::{
    Note, Signature, Signer as _, StandardSigner, StandardVerifier, Verifier as _, VerifierError,
    VerifierList, key_id, new_ed25519_verifier_key,
};

const ORIGIN: &str = "mandate.example/log";
const NOW: i64 = 1_800_000_000;

/// The message tlog-cosignature §Ed25519 signed message gives, written out.
fn spec_message(timestamp: u64, text: &[u8]) -> Vec<u8> {
    let mut message = format!("cosignature/v1\ntime {timestamp}\n").into_bytes();
    message.extend_from_slice(text);
    message
}

fn witness_public(seed: &[u8; 32]) -> ed25519_dalek::VerifyingKey {
    SigningKey::from_bytes(seed).verifying_key()
}

fn cosigned() -> (
    Checkpoint,
    NoteSigner,
    Vec<([u8; 32], WitnessSigner)>,
    String,
) {
    let log = NoteSigner::new(&[7; 32], ORIGIN).unwrap();
    let checkpoint = Checkpoint::new(ORIGIN, 1100, [5; 32]);
    let witnesses: Vec<([u8; 32], WitnessSigner)> = [11u8, 12]
        .iter()
        .map(|i| {
            let seed = [*i; 32];
            (
                seed,
                WitnessSigner::new(&seed, &format!("witness{i}.example/w")).unwrap(),
            )
        })
        .collect();
    let mut note = checkpoint.sign(&log).unwrap();
    for (n, (_, witness)) in witnesses.iter().enumerate() {
        note.push_str(&witness.cosign(&checkpoint, NOW - n as i64).unwrap());
    }
    (checkpoint, log, witnesses, note)
}

#[test]
fn signed_note_reads_a_cosigned_checkpoint() {
    let (checkpoint, log, witnesses, note) = cosigned();
    let parsed = Note::from_bytes(note.as_bytes()).unwrap();
    assert_eq!(parsed.text(), checkpoint.body().as_bytes());
    let log_key = StandardVerifier::new(&log.vkey()).unwrap();
    let (verified, unverified) = parsed
        .verify(&VerifierList::new(vec![Box::new(log_key)]))
        .unwrap();
    assert_eq!(verified.len(), 1);
    assert_eq!(
        (verified[0].name(), verified[0].id()),
        (ORIGIN, log.key_id())
    );
    assert_eq!(unverified.len(), 2);
    for (signature, (seed, witness)) in unverified.iter().zip(&witnesses) {
        assert_eq!(signature.name(), witness.name());
        // Its key id for type 0x04 and the witness's public key is ours.
        let material = [[0x04u8].as_slice(), &witness_public(seed).to_bytes()].concat();
        assert_eq!(signature.id(), key_id(witness.name(), &material));
        assert_eq!(signature.id(), witness.key_id());
        assert_eq!(signature.signature().len(), 8 + 64);
        // A witness vkey is not a key signed-note 0.2 verifies notes with.
        assert!(matches!(
            StandardVerifier::new(&witness.vkey()),
            Err(VerifierError::Alg)
        ));
    }
}

#[test]
fn each_cosignature_is_ed25519_over_the_specifications_message() {
    let (_, _, witnesses, note) = cosigned();
    let parsed = Note::from_bytes(note.as_bytes()).unwrap();
    let log_key =
        StandardVerifier::new(&NoteSigner::new(&[7; 32], ORIGIN).unwrap().vkey()).unwrap();
    let (_, unverified) = parsed
        .verify(&VerifierList::new(vec![Box::new(log_key)]))
        .unwrap();
    for (n, (signature, (seed, witness))) in unverified.iter().zip(&witnesses).enumerate() {
        let bytes = signature.signature();
        let timestamp = u64::from_be_bytes(bytes[..8].try_into().unwrap());
        assert_eq!(timestamp, (NOW - n as i64) as u64);
        // The same public key as a plain signed-note Ed25519 verifier.
        let plain = new_ed25519_verifier_key(witness.name(), &witness_public(seed));
        let plain = StandardVerifier::new(&plain).unwrap();
        assert!(plain.verify(&spec_message(timestamp, parsed.text()), &bytes[8..]));
        // Domain separation: not a signature of the note text itself, nor
        // of the message at another time.
        assert!(!plain.verify(parsed.text(), &bytes[8..]));
        assert!(!plain.verify(&spec_message(timestamp + 1, parsed.text()), &bytes[8..]));
    }
}

#[test]
fn a_cosignature_signed_note_makes_verifies_with_ours() {
    let log = NoteSigner::new(&[7; 32], ORIGIN).unwrap();
    let log_key = NoteVerifier::parse(&log.vkey()).unwrap();
    let checkpoint = Checkpoint::new(ORIGIN, 1100, [5; 32]);
    let name = "witness.azul.example/w";
    let seed = [21u8; 32];
    let public = witness_public(&seed).to_bytes();
    // Its signer key text (type 0x01, as it knows no other) over the seed.
    let plain_id = key_id(name, &[[0x01u8].as_slice(), &public].concat());
    let skey = format!(
        "PRIVATE+KEY+{name}+{plain_id:08x}+{}",
        STANDARD.encode([[0x01u8].as_slice(), &seed].concat())
    );
    let signer = StandardSigner::new(&skey).unwrap();
    let timestamp = (NOW - 30) as u64;
    let message = spec_message(timestamp, checkpoint.body().as_bytes());
    let ed25519 = signer.sign(&message).unwrap();
    // Framed as tlog-cosignature says, encoded by its signature encoder.
    let cosignature_id = key_id(name, &[[0x04u8].as_slice(), &public].concat());
    let line = Signature::new(
        name.to_owned(),
        cosignature_id,
        [timestamp.to_be_bytes().as_slice(), &ed25519].concat(),
    )
    .unwrap()
    .to_bytes();
    let note = format!(
        "{}{}",
        checkpoint.sign(&log).unwrap(),
        String::from_utf8(line).unwrap()
    );
    let vkey = format!(
        "{name}+{cosignature_id:08x}+{}",
        STANDARD.encode([[0x04u8].as_slice(), &public].concat())
    );
    let policy = WitnessPolicy::new(vec![WitnessVerifier::parse(&vkey).unwrap()], 1, 3600).unwrap();
    let witnessed = verify_witnessed(&note, Some(ORIGIN), &[log_key], &policy, NOW).unwrap();
    assert_eq!(witnessed.checkpoint, checkpoint);
    assert_eq!(witnessed.cosigned_by.len(), 1);
    assert_eq!(witnessed.cosigned_by[0].name, name);
    assert_eq!(witnessed.cosigned_by[0].timestamp, timestamp);
}

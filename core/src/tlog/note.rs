//! Signed notes (C2SP signed-note), with Ed25519 signatures (type 0x01)
//! only.
//!
//! A note is UTF-8 text ending in a newline, a blank line, and one line per
//! signature: `— <key name> <base64(key id ‖ signature)>`. The key id is the
//! first four bytes of SHA-256(name ‖ 0x0A ‖ 0x01 ‖ public key), big-endian.
//! A verifier key (vkey) is `<name>+<8 hex digits of the id>+<base64(0x01 ‖
//! public key)>`.
//!
//! [`open_note`] follows the specification: the text contains no control
//! character but newline and is separated from the signatures by the last
//! blank line; signatures by keys the caller does not trust (by name and id
//! together) are ignored; a trusted key's signature that fails rejects the
//! note, and so does a note no trusted key signed. Beyond the text: a note
//! signed twice by one trusted key is refused, and notes are capped at
//! [`MAX_NOTE_SIGNATURES`] signatures and [`MAX_NOTE_BYTES`] bytes (the
//! specification asks verifiers to accept at least 16).

use base64::Engine as _;
use ed25519_dalek::{Signature, Signer as _, SigningKey, VerifyingKey};
use sha2::{Digest as _, Sha256};

use super::error::LogError;
use crate::b64::STANDARD;
use crate::limits::{MAX_NOTE_BYTES, MAX_NOTE_SIGNATURES};

/// The signature type byte of Ed25519 in signed notes.
pub const ED25519_TYPE: u8 = 0x01;

/// The prefix of a signature line: an em dash and a space.
pub(crate) const SIGNATURE_PREFIX: &str = "\u{2014} ";

/// Whether a key name is allowed: non-empty, without spaces (any Unicode
/// white space), `+`, or control characters.
pub(crate) fn valid_key_name(name: &str) -> bool {
    !name.is_empty()
        && !name
            .chars()
            .any(|c| c.is_whitespace() || c == '+' || c.is_control())
}

/// The key id of an Ed25519 key under `name`.
pub fn key_id(name: &str, public: &[u8; 32]) -> u32 {
    typed_key_id(name, ED25519_TYPE, public)
}

/// The key id signed-note recommends for a key of signature type `kind`:
/// the first four bytes of SHA-256(name ‖ 0x0A ‖ type ‖ public key),
/// big-endian.
pub(crate) fn typed_key_id(name: &str, kind: u8, public: &[u8; 32]) -> u32 {
    let digest: [u8; 32] = Sha256::new()
        .chain_update(name.as_bytes())
        .chain_update([b'\n', kind])
        .chain_update(public)
        .finalize()
        .into();
    let [a, b, c, d, ..] = digest;
    u32::from_be_bytes([a, b, c, d])
}

/// The vkey text of an Ed25519 key of signature type `kind`:
/// `<name>+<8 hex digits of the id>+<base64(type ‖ public key)>`.
pub(crate) fn vkey_text(name: &str, id: u32, kind: u8, key: &VerifyingKey) -> String {
    let mut material = vec![kind];
    material.extend_from_slice(&key.to_bytes());
    format!("{name}+{id:08x}+{}", STANDARD.encode(material))
}

/// Parses the vkey of an Ed25519 key of signature type `kind`, refusing a
/// malformed one, another type (`wrong_type`), a key name with spaces or
/// `+`, a weak key, and an id that is not the one the name and key give.
pub(crate) fn parse_vkey(
    vkey: &str,
    kind: u8,
    wrong_type: LogError,
) -> Result<(String, u32, VerifyingKey), LogError> {
    // The name holds no `+` and the id is hex; the base64 key may.
    let mut parts = vkey.splitn(3, '+');
    let (Some(name), Some(id), Some(material)) = (parts.next(), parts.next(), parts.next()) else {
        return Err(LogError::VkeyMalformed);
    };
    if !valid_key_name(name) {
        return Err(LogError::KeyNameInvalid);
    }
    let hex_ok = id.len() == 8 && id.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
    let id = u32::from_str_radix(id, 16)
        .ok()
        .filter(|_| hex_ok)
        .ok_or(LogError::VkeyMalformed)?;
    let material = STANDARD
        .decode(material)
        .map_err(|_| LogError::VkeyMalformed)?;
    let (found, public) = material.split_first().ok_or(LogError::VkeyMalformed)?;
    if *found != kind {
        return Err(wrong_type);
    }
    let public: [u8; 32] = public.try_into().map_err(|_| LogError::VkeyMalformed)?;
    let key = VerifyingKey::from_bytes(&public).map_err(|_| LogError::VkeyMalformed)?;
    if key.is_weak() {
        return Err(LogError::VkeyMalformed);
    }
    if typed_key_id(name, kind, &public) != id {
        return Err(LogError::VkeyIdMismatch);
    }
    Ok((name.to_owned(), id, key))
}

/// Whether a note text is allowed: non-empty, ending in a newline, with no
/// control character other than newline.
fn valid_text(text: &str) -> bool {
    text.ends_with('\n') && !text.chars().any(|c| c < ' ' && c != '\n')
}

/// Signs notes with one Ed25519 key under one name.
pub struct NoteSigner {
    name: String,
    key: SigningKey,
    id: u32,
}

impl std::fmt::Debug for NoteSigner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the key.
        f.debug_struct("NoteSigner")
            .field("name", &self.name)
            .field("id", &format_args!("{:08x}", self.id))
            .finish_non_exhaustive()
    }
}

impl NoteSigner {
    /// A signer from a 32-byte Ed25519 seed and a key name.
    pub fn new(seed: &[u8; 32], name: &str) -> Result<NoteSigner, LogError> {
        if !valid_key_name(name) {
            return Err(LogError::KeyNameInvalid);
        }
        let key = SigningKey::from_bytes(seed);
        let id = key_id(name, &key.verifying_key().to_bytes());
        Ok(NoteSigner {
            name: name.to_owned(),
            key,
            id,
        })
    }

    /// The key name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The key id.
    pub fn key_id(&self) -> u32 {
        self.id
    }

    /// The verifier key, `<name>+<id>+<base64(0x01 ‖ public key)>`.
    pub fn vkey(&self) -> String {
        vkey_text(&self.name, self.id, ED25519_TYPE, &self.key.verifying_key())
    }

    /// The signature line this key adds to `text`, with its newline.
    pub fn signature_line(&self, text: &str) -> Result<String, LogError> {
        if !valid_text(text) {
            return Err(LogError::NoteMalformed);
        }
        let mut signature = self.id.to_be_bytes().to_vec();
        signature.extend_from_slice(&self.key.sign(text.as_bytes()).to_bytes());
        Ok(format!(
            "{SIGNATURE_PREFIX}{} {}\n",
            self.name,
            STANDARD.encode(signature)
        ))
    }

    /// The signed note: `text` (ending in a newline), a blank line and this
    /// key's signature.
    pub fn sign(&self, text: &str) -> Result<String, LogError> {
        let line = self.signature_line(text)?;
        Ok(format!("{text}\n{line}"))
    }
}

/// A key notes may be verified with, parsed from its vkey.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NoteVerifier {
    name: String,
    id: u32,
    key: VerifyingKey,
}

impl NoteVerifier {
    /// Parses a vkey, refusing a malformed one, a type other than Ed25519,
    /// a key name with spaces or `+`, a weak key, and an id that is not the
    /// one the name and key give.
    pub fn parse(vkey: &str) -> Result<NoteVerifier, LogError> {
        let (name, id, key) = parse_vkey(vkey, ED25519_TYPE, LogError::VkeyUnsupportedType)?;
        Ok(NoteVerifier { name, id, key })
    }

    /// The key name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The key id.
    pub fn key_id(&self) -> u32 {
        self.id
    }

    /// The vkey this verifier was parsed from.
    pub fn vkey(&self) -> String {
        vkey_text(&self.name, self.id, ED25519_TYPE, &self.key)
    }
}

/// A note whose signature by at least one trusted key verified.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpenedNote {
    /// The signed text, with its final newline.
    pub text: String,
    /// The names of the trusted keys whose signatures verified, in the
    /// order they are in the note.
    pub verified_by: Vec<String>,
}

/// One signature line: the key name, the key id and the signature bytes.
pub(crate) struct SignatureLine<'a> {
    pub(crate) name: &'a str,
    pub(crate) id: u32,
    pub(crate) signature: Vec<u8>,
}

pub(crate) fn parse_signature_line(line: &str) -> Result<SignatureLine<'_>, LogError> {
    let rest = line
        .strip_prefix(SIGNATURE_PREFIX)
        .ok_or(LogError::NoteMalformed)?;
    let (name, encoded) = rest.split_once(' ').ok_or(LogError::NoteMalformed)?;
    if !valid_key_name(name) {
        return Err(LogError::NoteMalformed);
    }
    let bytes = STANDARD
        .decode(encoded)
        .map_err(|_| LogError::NoteMalformed)?;
    let (id, signature) = bytes.split_at_checked(4).ok_or(LogError::NoteMalformed)?;
    if signature.is_empty() {
        return Err(LogError::NoteMalformed);
    }
    let id = u32::from_be_bytes(id.try_into().map_err(|_| LogError::NoteMalformed)?);
    Ok(SignatureLine {
        name,
        id,
        signature: signature.to_vec(),
    })
}

/// Splits a note into its text and its signature lines (without their
/// newlines), checking the form and the caps.
pub(crate) fn split_note(note: &str) -> Result<(&str, Vec<&str>), LogError> {
    if note.len() > MAX_NOTE_BYTES {
        return Err(LogError::NoteTooLarge);
    }
    if note.chars().any(|c| c < ' ' && c != '\n') {
        return Err(LogError::NoteMalformed);
    }
    let blank = note.rfind("\n\n").ok_or(LogError::NoteMalformed)?;
    let text = note.get(..=blank).ok_or(LogError::NoteMalformed)?;
    let signatures = note
        .get(blank + 2..)
        .and_then(|block| block.strip_suffix('\n'))
        .ok_or(LogError::NoteMalformed)?;
    let lines: Vec<&str> = signatures.split('\n').collect();
    if lines.len() > MAX_NOTE_SIGNATURES {
        return Err(LogError::NoteTooManySignatures);
    }
    Ok((text, lines))
}

/// Opens a signed note with the keys the caller trusts (see the module
/// documentation for the rules).
pub fn open_note(note: &str, verifiers: &[NoteVerifier]) -> Result<OpenedNote, LogError> {
    let (text, lines) = split_note(note)?;
    let signatures = lines
        .into_iter()
        .map(parse_signature_line)
        .collect::<Result<Vec<_>, _>>()?;
    let mut seen: Vec<(&str, u32)> = Vec::new();
    let mut verified_by = Vec::new();
    for line in &signatures {
        let Some(verifier) = verifiers
            .iter()
            .find(|v| v.name == line.name && v.id == line.id)
        else {
            continue;
        };
        if seen.contains(&(line.name, line.id)) {
            return Err(LogError::NoteDuplicateSignature);
        }
        seen.push((line.name, line.id));
        let signature: [u8; 64] = line
            .signature
            .as_slice()
            .try_into()
            .map_err(|_| LogError::NoteSignatureInvalid)?;
        verifier
            .key
            .verify_strict(text.as_bytes(), &Signature::from_bytes(&signature))
            .map_err(|_| LogError::NoteSignatureInvalid)?;
        verified_by.push(line.name.to_owned());
    }
    if verified_by.is_empty() {
        return Err(LogError::NoteUnknownKey);
    }
    Ok(OpenedNote {
        text: text.to_owned(),
        verified_by,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    // The example of the signed-note specification.
    const SPEC_VKEY: &str = "example.com/foo+530d903a+AekyeRrm56hApGFkyQR4ZCbV54Id2LKaANYcrnKv3U2k";
    const SPEC_NOTE: &str = "This is an example message.\n\n\u{2014} example.com/foo Uw2QOkn8srV1yJGh2VYRlL1Tnagv1YEq6TfXppzi2ONncAlTgK7Ztg1ERYNZXsYjOBH3mFXmRKuwHjG1Yu72IneyaQM=\n";

    fn signer(seed: u8, name: &str) -> NoteSigner {
        NoteSigner::new(&[seed; 32], name).unwrap()
    }

    #[test]
    fn the_specification_example_verifies() {
        let verifier = NoteVerifier::parse(SPEC_VKEY).unwrap();
        assert_eq!(verifier.key_id(), 0x530d903a);
        assert_eq!(verifier.vkey(), SPEC_VKEY);
        let opened = open_note(SPEC_NOTE, &[verifier]).unwrap();
        assert_eq!(opened.text, "This is an example message.\n");
        assert_eq!(opened.verified_by, vec!["example.com/foo".to_owned()]);
    }

    #[test]
    fn signed_notes_verify_with_their_vkey_only() {
        let a = signer(1, "log.example/a");
        let b = signer(2, "log.example/b");
        let va = NoteVerifier::parse(&a.vkey()).unwrap();
        let vb = NoteVerifier::parse(&b.vkey()).unwrap();
        assert_eq!(va.vkey(), a.vkey());
        let note = a.sign("hello\n\nworld\n").unwrap();
        let opened = open_note(&note, &[vb.clone(), va.clone()]).unwrap();
        assert_eq!(opened.text, "hello\n\nworld\n");
        assert_eq!(
            open_note(&note, std::slice::from_ref(&vb)),
            Err(LogError::NoteUnknownKey)
        );
        assert_eq!(open_note(&note, &[]), Err(LogError::NoteUnknownKey));
        // Cosigned: both verify, in order.
        let both = format!("{note}{}", b.signature_line("hello\n\nworld\n").unwrap());
        let opened = open_note(&both, &[va.clone(), vb.clone()]).unwrap();
        assert_eq!(opened.verified_by, vec!["log.example/a", "log.example/b"]);
        // Another text under a's signature.
        let forged = note.replacen("world", "words", 1);
        assert_eq!(
            open_note(&forged, std::slice::from_ref(&va)),
            Err(LogError::NoteSignatureInvalid)
        );
        // The same signature twice.
        let line = a.signature_line("hello\n\nworld\n").unwrap();
        let twice = format!("{note}{line}");
        assert_eq!(
            open_note(&twice, std::slice::from_ref(&va)),
            Err(LogError::NoteDuplicateSignature)
        );
        // A signature by an unknown key sharing the name (not the id) is ignored.
        let impostor = signer(3, "log.example/a")
            .signature_line("hello\n\nworld\n")
            .unwrap();
        let with_impostor = format!("{note}{impostor}");
        assert!(open_note(&with_impostor, std::slice::from_ref(&va)).is_ok());
    }

    #[test]
    fn malformed_notes() {
        let a = signer(1, "log.example/a");
        let va = NoteVerifier::parse(&a.vkey()).unwrap();
        let note = a.sign("text\n").unwrap();
        let line = note.trim_start_matches("text\n\n").to_owned();
        for bad in [
            "text\n".to_owned(),
            "text\n\n".to_owned(),
            note.trim_end().to_owned(),
            note.replace('\u{2014}', "-"),
            note.replace("text", "te\txt"),
            note.replace("text", "te\rxt"),
            format!("{note}\n"),
            format!("text\n\n{}", line.replacen(' ', "  ", 1)),
            format!(
                "text\n\n{}",
                line.replace("log.example/a", "log.example/a b")
            ),
            format!("text\n\n{}", line.replace('=', "")),
            "text\n\n\u{2014} log.example/a AAAA\n".to_owned(),
        ] {
            assert_eq!(
                open_note(&bad, std::slice::from_ref(&va)),
                Err(LogError::NoteMalformed),
                "{bad:?}"
            );
        }
        assert_eq!(a.sign("no newline"), Err(LogError::NoteMalformed));
        assert_eq!(a.sign("a\u{0}\n"), Err(LogError::NoteMalformed));
    }

    #[test]
    fn caps() {
        let a = signer(1, "log.example/a");
        let va = NoteVerifier::parse(&a.vkey()).unwrap();
        let mut note = a.sign("text\n").unwrap();
        // 16 signatures are accepted: 15 by other keys besides a's.
        for seed in 2..17 {
            note.push_str(
                &signer(seed, "other.example")
                    .signature_line("text\n")
                    .unwrap(),
            );
        }
        assert!(open_note(&note, std::slice::from_ref(&va)).is_ok());
        let line = signer(99, "other.example")
            .signature_line("text\n")
            .unwrap();
        let mut many = a.sign("text\n").unwrap();
        for _ in 0..MAX_NOTE_SIGNATURES {
            many.push_str(&line);
        }
        assert_eq!(
            open_note(&many, std::slice::from_ref(&va)),
            Err(LogError::NoteTooManySignatures)
        );
        let long = a
            .sign(&format!("{}\n", "x".repeat(MAX_NOTE_BYTES)))
            .unwrap();
        assert_eq!(open_note(&long, &[va]), Err(LogError::NoteTooLarge));
    }

    #[test]
    fn vkeys() {
        let a = signer(1, "log.example/a");
        let vkey = a.vkey();
        let (name, rest) = vkey.split_once('+').unwrap();
        let (id, material) = rest.split_once('+').unwrap();
        let mut bytes = STANDARD.decode(material).unwrap();
        bytes[0] = 0x02;
        let other_type = format!("{name}+{id}+{}", STANDARD.encode(&bytes));
        let other_id = format!("{name}+{:08x}+{material}", a.key_id() ^ 1);
        let weak = format!(
            "{name}+{:08x}+{}",
            key_id(name, &[0; 32]),
            STANDARD.encode([[1u8].as_slice(), &[0; 32]].concat())
        );
        assert_eq!(
            NoteVerifier::parse(&other_type),
            Err(LogError::VkeyUnsupportedType)
        );
        assert_eq!(
            NoteVerifier::parse(&other_id),
            Err(LogError::VkeyIdMismatch)
        );
        for bad in [
            "".to_owned(),
            format!("{name}+{id}"),
            format!("{vkey}+x"),
            format!("{name}+{}+{material}", id.to_uppercase()),
            format!("{name}+0{id}+{material}"),
            format!("{name}+{id}+{material}="),
            format!("{name}+{id}+{}", &material[..43]),
            format!(
                "{name}+{id}+{}",
                STANDARD.encode(&STANDARD.decode(material).unwrap()[..32])
            ),
            weak,
        ] {
            assert_eq!(
                NoteVerifier::parse(&bad),
                Err(LogError::VkeyMalformed),
                "{bad}"
            );
        }
        for name in ["", "a b", "a\u{a0}b", "a\tb"] {
            assert_eq!(
                NoteVerifier::parse(&format!("{name}+{id}+{material}")),
                Err(LogError::KeyNameInvalid),
                "{name:?}"
            );
            assert_eq!(
                NoteSigner::new(&[1; 32], name).err(),
                Some(LogError::KeyNameInvalid)
            );
        }
        assert_eq!(
            NoteSigner::new(&[1; 32], "a+b").err(),
            Some(LogError::KeyNameInvalid)
        );
    }
}

//! Checkpoints (C2SP tlog-checkpoint): the note text naming a log's origin,
//! its size and its root, optionally followed by extension lines, signed as
//! a note by the log.

use base64::Engine as _;

use super::error::LogError;
use super::hash::Hash;
use super::note::{NoteSigner, NoteVerifier, open_note};
use crate::b64::STANDARD;

/// A tree head: the log's origin, its size and its root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Checkpoint {
    /// The log's identity, conventionally a schema-less URL.
    pub origin: String,
    /// How many leaves the tree has.
    pub size: u64,
    /// The RFC 6962 root of the tree.
    pub root: Hash,
    /// Opaque extension lines, none by default (the specification
    /// discourages them).
    pub extensions: Vec<String>,
}

impl Checkpoint {
    /// A checkpoint without extension lines.
    pub fn new(origin: impl Into<String>, size: u64, root: Hash) -> Checkpoint {
        Checkpoint {
            origin: origin.into(),
            size,
            root,
            extensions: Vec::new(),
        }
    }

    /// The note text: origin, size and base64 root, each on its line, then
    /// the extension lines.
    pub fn body(&self) -> String {
        let mut body = format!(
            "{}\n{}\n{}\n",
            self.origin,
            self.size,
            STANDARD.encode(self.root)
        );
        for extension in &self.extensions {
            body.push_str(extension);
            body.push('\n');
        }
        body
    }

    /// Parses a note text strictly: at least three lines, each ending in a
    /// newline; a non-empty origin; the size in ASCII decimal without
    /// leading zeroes; the root as standard base64 of 32 bytes; non-empty
    /// extension lines; no control character but newline.
    pub fn parse(text: &str) -> Result<Checkpoint, LogError> {
        let malformed = || LogError::CheckpointMalformed;
        if text.chars().any(|c| c < ' ' && c != '\n') {
            return Err(malformed());
        }
        let body = text.strip_suffix('\n').ok_or_else(malformed)?;
        let mut lines = body.split('\n');
        let (Some(origin), Some(size), Some(root)) = (lines.next(), lines.next(), lines.next())
        else {
            return Err(malformed());
        };
        if origin.is_empty() {
            return Err(malformed());
        }
        let size = parse_decimal(size).ok_or_else(malformed)?;
        let root: Hash = STANDARD
            .decode(root)
            .ok()
            .and_then(|bytes| bytes.try_into().ok())
            .ok_or_else(malformed)?;
        let extensions: Vec<String> = lines.map(str::to_owned).collect();
        if extensions.iter().any(String::is_empty) {
            return Err(malformed());
        }
        Ok(Checkpoint {
            origin: origin.to_owned(),
            size,
            root,
            extensions,
        })
    }

    /// The signed checkpoint note. Refuses a checkpoint whose body would
    /// not parse back to it (an empty origin, a line with a newline).
    pub fn sign(&self, signer: &NoteSigner) -> Result<String, LogError> {
        let body = self.body();
        if Checkpoint::parse(&body).as_ref() != Ok(self) {
            return Err(LogError::CheckpointMalformed);
        }
        signer.sign(&body)
    }
}

/// A tree size as the C2SP texts write it: ASCII decimal digits without
/// leading zeroes (`0` alone for zero), within 64 bits.
pub(crate) fn parse_decimal(text: &str) -> Option<u64> {
    let canonical = !text.is_empty()
        && text.bytes().all(|b| b.is_ascii_digit())
        && (text == "0" || !text.starts_with('0'));
    canonical.then(|| text.parse().ok()).flatten()
}

/// Opens a checkpoint note: [`open_note`] with the trusted keys, then
/// [`Checkpoint::parse`] of its text, then, when `origin` is given, that the
/// checkpoint is of that log (else `checkpoint_origin_mismatch`). Without
/// `origin`, any log the trusted keys sign for is accepted.
pub fn open_checkpoint(
    note: &str,
    origin: Option<&str>,
    verifiers: &[NoteVerifier],
) -> Result<Checkpoint, LogError> {
    let opened = open_note(note, verifiers)?;
    let checkpoint = Checkpoint::parse(&opened.text)?;
    match origin {
        Some(origin) if origin != checkpoint.origin => Err(LogError::CheckpointOriginMismatch),
        _ => Ok(checkpoint),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bodies_round_trip() {
        let mut checkpoint = Checkpoint::new("log.example/a", 20_852_163, [7; 32]);
        assert_eq!(
            checkpoint.body(),
            "log.example/a\n20852163\nBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwc=\n"
        );
        assert_eq!(
            Checkpoint::parse(&checkpoint.body()),
            Ok(checkpoint.clone())
        );
        checkpoint.extensions = vec!["ext one".into(), "two".into()];
        assert_eq!(
            Checkpoint::parse(&checkpoint.body()),
            Ok(checkpoint.clone())
        );
        let zero = Checkpoint::new("o", 0, [0; 32]);
        assert_eq!(Checkpoint::parse(&zero.body()), Ok(zero));
    }

    #[test]
    fn strict_parsing() {
        let root = "BwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwc=";
        for bad in [
            format!("o\n5\n{root}"),
            format!("\n5\n{root}\n"),
            format!("o\n05\n{root}\n"),
            format!("o\n+5\n{root}\n"),
            format!("o\n\n{root}\n"),
            format!("o\n18446744073709551616\n{root}\n"),
            format!("o\n5\n{}\n", root.trim_end_matches('=')),
            format!("o\n5\n{}\n", root.replace('B', "-")),
            "o\n5\nBwcH\n".to_owned(),
            format!("o\n5\n{root}\n\n"),
            format!("o\n5\n{root}\next\n\n"),
            format!("o\r\n5\n{root}\n"),
            "o\n5\n".to_owned(),
        ] {
            assert_eq!(
                Checkpoint::parse(&bad),
                Err(LogError::CheckpointMalformed),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn opening() {
        let signer = NoteSigner::new(&[4; 32], "log.example/a").unwrap();
        let verifier = NoteVerifier::parse(&signer.vkey()).unwrap();
        let checkpoint = Checkpoint::new("log.example/a", 3, [1; 32]);
        let note = checkpoint.sign(&signer).unwrap();
        let trusted = [verifier];
        assert_eq!(
            open_checkpoint(&note, Some("log.example/a"), &trusted),
            Ok(checkpoint.clone())
        );
        assert_eq!(open_checkpoint(&note, None, &trusted), Ok(checkpoint));
        assert_eq!(
            open_checkpoint(&note, Some("log.example/b"), &trusted),
            Err(LogError::CheckpointOriginMismatch)
        );
        let not_a_checkpoint = signer.sign("just text\n").unwrap();
        assert_eq!(
            open_checkpoint(&not_a_checkpoint, None, &trusted),
            Err(LogError::CheckpointMalformed)
        );
        let bad = Checkpoint::new("two\nlines", 1, [0; 32]);
        assert_eq!(bad.sign(&signer), Err(LogError::CheckpointMalformed));
    }
}

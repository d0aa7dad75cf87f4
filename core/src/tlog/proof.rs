//! Offline proofs of inclusion (C2SP tlog-proof@v1): a leaf's index, its
//! RFC 6962 inclusion proof and the signed checkpoint it leads to, as text.
//!
//! ```text
//! c2sp.org/tlog-proof@v1
//! extra <base64>            (optional, never trusted)
//! index <decimal>
//! <base64 hash>             (zero or more, the leaf's sibling first)
//!
//! <the checkpoint note, verbatim>
//! ```

use base64::Engine as _;

use super::checkpoint::{Checkpoint, open_checkpoint};
use super::error::LogError;
use super::hash::{Hash, leaf_hash};
use super::note::NoteVerifier;
use super::verify::verify_inclusion;
use crate::b64::STANDARD;
use crate::limits::{MAX_PROOF_HASHES, MAX_TLOG_PROOF_BYTES};

/// The first line of a proof.
pub const TLOG_PROOF_HEADER: &str = "c2sp.org/tlog-proof@v1";

/// A tlog-proof@v1 proof, parsed but not verified.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlogProof {
    /// Opaque extra data; not authenticated, never to be trusted.
    pub extra: Option<Vec<u8>>,
    /// The leaf's index in the log.
    pub index: u64,
    /// The inclusion proof, the leaf's sibling first.
    pub path: Vec<Hash>,
    /// The signed checkpoint note, verbatim.
    pub checkpoint: String,
}

impl TlogProof {
    /// The proof's text.
    pub fn to_text(&self) -> String {
        let mut text = format!("{TLOG_PROOF_HEADER}\n");
        if let Some(extra) = &self.extra {
            text.push_str("extra ");
            text.push_str(&STANDARD.encode(extra));
            text.push('\n');
        }
        text.push_str(&format!("index {}\n", self.index));
        for hash in &self.path {
            text.push_str(&STANDARD.encode(hash));
            text.push('\n');
        }
        text.push('\n');
        text.push_str(&self.checkpoint);
        text
    }

    /// Parses a proof exactly as the specification writes it: the header
    /// line, an optional `extra` line, the `index` line (decimal, no
    /// leading zeroes), at most [`MAX_PROOF_HASHES`] lines of one base64
    /// hash each, an empty line, and a non-empty checkpoint note.
    pub fn parse(text: &str) -> Result<TlogProof, LogError> {
        let malformed = || LogError::TlogProofMalformed;
        if text.len() > MAX_TLOG_PROOF_BYTES {
            return Err(LogError::TlogProofTooLarge);
        }
        let (head, checkpoint) = text.split_once("\n\n").ok_or_else(malformed)?;
        if checkpoint.is_empty() {
            return Err(malformed());
        }
        let mut lines = head.split('\n').peekable();
        if lines.next() != Some(TLOG_PROOF_HEADER) {
            return Err(malformed());
        }
        let extra = match lines.peek().and_then(|line| line.strip_prefix("extra ")) {
            Some(encoded) => {
                let bytes = STANDARD.decode(encoded).map_err(|_| malformed())?;
                lines.next();
                Some(bytes)
            }
            None => None,
        };
        let index = lines
            .next()
            .and_then(|line| line.strip_prefix("index "))
            .filter(|n| {
                !n.is_empty()
                    && n.bytes().all(|b| b.is_ascii_digit())
                    && (*n == "0" || !n.starts_with('0'))
            })
            .and_then(|n| n.parse::<u64>().ok())
            .ok_or_else(malformed)?;
        let mut path = Vec::new();
        for line in lines {
            if path.len() == MAX_PROOF_HASHES {
                return Err(LogError::ProofTooLong);
            }
            let hash: Hash = STANDARD
                .decode(line)
                .ok()
                .and_then(|bytes| bytes.try_into().ok())
                .ok_or_else(malformed)?;
            path.push(hash);
        }
        Ok(TlogProof {
            extra,
            index,
            path,
            checkpoint: checkpoint.to_owned(),
        })
    }
}

/// Verifies a tlog-proof@v1 text for a leaf: hashes the leaf, opens the
/// checkpoint with the trusted keys (of `origin`, when given) and checks
/// the leaf's inclusion at the proof's index in the checkpoint's tree.
/// Returns the checkpoint.
pub fn verify_tlog_proof(
    proof_text: &str,
    leaf_bytes: &[u8],
    origin: Option<&str>,
    verifiers: &[NoteVerifier],
) -> Result<Checkpoint, LogError> {
    let proof = TlogProof::parse(proof_text)?;
    let leaf = leaf_hash(leaf_bytes);
    let checkpoint = open_checkpoint(&proof.checkpoint, origin, verifiers)?;
    verify_inclusion(
        &leaf,
        proof.index,
        checkpoint.size,
        &proof.path,
        &checkpoint.root,
    )?;
    Ok(checkpoint)
}

#[cfg(test)]
mod tests {
    use super::*;

    const CHECKPOINT: &str = "log.example/a\n1\nAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n\n\u{2014} log.example/a AAAAAQ==\n";

    #[test]
    fn texts_round_trip() {
        for proof in [
            TlogProof {
                extra: None,
                index: 0,
                path: Vec::new(),
                checkpoint: CHECKPOINT.to_owned(),
            },
            TlogProof {
                extra: Some(b"context".to_vec()),
                index: 73_894,
                path: vec![[1; 32], [2; 32]],
                checkpoint: CHECKPOINT.to_owned(),
            },
            TlogProof {
                extra: Some(Vec::new()),
                index: u64::MAX,
                path: vec![[3; 32]],
                checkpoint: CHECKPOINT.to_owned(),
            },
        ] {
            assert_eq!(TlogProof::parse(&proof.to_text()), Ok(proof));
        }
        let text = TlogProof {
            extra: Some(b"x".to_vec()),
            index: 5,
            path: vec![[1; 32]],
            checkpoint: CHECKPOINT.to_owned(),
        }
        .to_text();
        assert_eq!(
            text,
            format!(
                "c2sp.org/tlog-proof@v1\nextra eA==\nindex 5\nAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQE=\n\n{CHECKPOINT}"
            )
        );
    }

    #[test]
    fn strict_parsing() {
        let hash = "AQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQE=";
        for bad in [
            format!("c2sp.org/tlog-proof@v2\nindex 5\n\n{CHECKPOINT}"),
            format!("c2sp.org/tlog-proof@v1\nindex 05\n\n{CHECKPOINT}"),
            format!("c2sp.org/tlog-proof@v1\nindex -5\n\n{CHECKPOINT}"),
            format!("c2sp.org/tlog-proof@v1\nindex  5\n\n{CHECKPOINT}"),
            format!("c2sp.org/tlog-proof@v1\nindex 5\n{hash}\n"),
            format!("c2sp.org/tlog-proof@v1\nindex 5\n{hash}\n\n"),
            format!(
                "c2sp.org/tlog-proof@v1\nindex 5\n{}\n\n{CHECKPOINT}",
                &hash[..40]
            ),
            format!("c2sp.org/tlog-proof@v1\nindex 5\nextra eA==\n\n{CHECKPOINT}"),
            format!("c2sp.org/tlog-proof@v1\nextra eA=\nindex 5\n\n{CHECKPOINT}"),
            format!("c2sp.org/tlog-proof@v1\nextra eA==\n\n{CHECKPOINT}"),
            format!("c2sp.org/tlog-proof@v1\r\nindex 5\n\n{CHECKPOINT}"),
            format!("\nc2sp.org/tlog-proof@v1\nindex 5\n\n{CHECKPOINT}"),
        ] {
            assert_eq!(
                TlogProof::parse(&bad),
                Err(LogError::TlogProofMalformed),
                "{bad:?}"
            );
        }
        let long = format!(
            "c2sp.org/tlog-proof@v1\nindex 5\n{}\n{CHECKPOINT}",
            format!("{hash}\n").repeat(MAX_PROOF_HASHES + 1)
        );
        assert_eq!(TlogProof::parse(&long), Err(LogError::ProofTooLong));
    }
}

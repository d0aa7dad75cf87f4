//! The witness's rule (C2SP tlog-witness, `add-checkpoint`): cosign a log's
//! checkpoint only when a consistency proof links it to the last checkpoint
//! the witness cosigned for that log.
//!
//! A witness keeps, per origin, the size and root of the last checkpoint it
//! cosigned ([`WitnessState`]; none before the first). A request
//! ([`AddCheckpoint`]) carries the old size the log believes the witness
//! holds, a consistency proof from it, and the new signed checkpoint. The
//! checks run in the order tlog-witness §add-checkpoint states them, each
//! with its HTTP answer ([`Refusal::status`]):
//!
//! ```text
//!  body ──parse──▶ AddCheckpoint ──route(logs)──▶ Submission ──apply(state)──▶ Accepted
//!    │                 │                              │                          │
//!    400 malformed     404 unknown origin             400 old size > size        persist state,
//!                      403 no trusted signature       409 old size ≠ witness's   then cosign
//!                          verifies, or one fails         (text/x.tlog.size)      (200)
//!                                                     422 size 0, root not empty
//!                                                     422 same size, other root
//!                                                     422 proof fails
//! ```
//!
//! A checkpoint smaller than the witness's is never cosigned: an honest
//! old size (the witness's) above it is 400, any other old size is 409. The
//! same size with another root is a split view: tlog-witness v1.0.0
//! answered it with 409, the editor's draft (C2SP #280, July 2026) with 422
//! so that every 409 carries a size; we follow the draft, and report it as
//! [`Refusal::SplitView`] with both roots so the witness can keep it as
//! evidence ("MAY log the request … as it might be proof of log
//! misbehavior").
//!
//! [`Submission::apply`] returns the new state and the checkpoint to sign;
//! the caller persists the state atomically with the check (the spec's
//! race: a smaller checkpoint must not overwrite a larger one) and only
//! then cosigns ([`super::WitnessSigner::cosign`]). Not here: storage, HTTP
//! and the clock.

use std::collections::BTreeMap;

use base64::Engine as _;

use super::checkpoint::{Checkpoint, open_checkpoint, parse_decimal};
use super::error::LogError;
use super::hash::{Hash, empty_root};
use super::note::{NoteVerifier, split_note};
use super::verify::verify_consistency;
use crate::b64::STANDARD;
use crate::limits::{MAX_ADD_CHECKPOINT_BYTES, MAX_ADD_CHECKPOINT_PROOF_LINES};

/// The content type of a 409 answer's body, the witness's size.
pub const TLOG_SIZE_CONTENT_TYPE: &str = "text/x.tlog.size";

/// What a witness remembers of a log: the last checkpoint it cosigned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WitnessState {
    /// Its tree size.
    pub size: u64,
    /// Its root.
    pub root: Hash,
}

/// An add-checkpoint request body, parsed but not verified.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AddCheckpoint {
    /// The size of the checkpoint the log believes the witness cosigned
    /// last (0 when none).
    pub old_size: u64,
    /// The RFC 6962 consistency proof from `old_size` to the checkpoint.
    pub proof: Vec<Hash>,
    /// The signed checkpoint note, verbatim.
    pub checkpoint: String,
}

impl AddCheckpoint {
    /// The request body: `old <size>`, one base64 hash a line, an empty
    /// line, the note.
    pub fn to_text(&self) -> String {
        let mut text = format!("old {}\n", self.old_size);
        for hash in &self.proof {
            text.push_str(&STANDARD.encode(hash));
            text.push('\n');
        }
        text.push('\n');
        text.push_str(&self.checkpoint);
        text
    }

    /// Parses a body exactly as tlog-witness §add-checkpoint writes it: the
    /// old size line (decimal, no leading zeroes), at most
    /// [`MAX_ADD_CHECKPOINT_PROOF_LINES`] lines of one standard base64
    /// 32-byte hash each, an empty line and a non-empty note; at most
    /// [`MAX_ADD_CHECKPOINT_BYTES`] in all.
    pub fn parse(body: &str) -> Result<AddCheckpoint, LogError> {
        let malformed = || LogError::AddCheckpointMalformed;
        if body.len() > MAX_ADD_CHECKPOINT_BYTES {
            return Err(LogError::AddCheckpointTooLarge);
        }
        let (head, checkpoint) = body.split_once("\n\n").ok_or_else(malformed)?;
        if checkpoint.is_empty() {
            return Err(malformed());
        }
        let mut lines = head.split('\n');
        let old_size = lines
            .next()
            .and_then(|line| line.strip_prefix("old "))
            .and_then(parse_decimal)
            .ok_or_else(malformed)?;
        let mut proof = Vec::new();
        for line in lines {
            if proof.len() == MAX_ADD_CHECKPOINT_PROOF_LINES {
                return Err(malformed());
            }
            let hash: Hash = STANDARD
                .decode(line)
                .ok()
                .and_then(|bytes| bytes.try_into().ok())
                .ok_or_else(malformed)?;
            proof.push(hash);
        }
        Ok(AddCheckpoint {
            old_size,
            proof,
            checkpoint: checkpoint.to_owned(),
        })
    }
}

/// Why a witness refused to cosign, as tlog-witness answers it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    /// 400: the body, the note or the checkpoint is malformed, or the old
    /// size is above the checkpoint's.
    #[error("bad request: {0}")]
    BadRequest(LogError),
    /// 404: the witness does not witness this origin.
    #[error("this witness does not witness the log {origin}")]
    UnknownOrigin { origin: String },
    /// 403: no signature by the log's keys verifies, or one fails.
    #[error("the checkpoint's signature: {0}")]
    BadSignature(LogError),
    /// 409: the old size is not the size the witness cosigned last; the
    /// body is `size` in decimal and a newline, [`TLOG_SIZE_CONTENT_TYPE`].
    #[error("the witness last cosigned a checkpoint of size {size}")]
    Conflict { size: u64 },
    /// 422: a checkpoint of the size the witness cosigned, with another
    /// root — the log showed two trees of one size.
    #[error("split view: the witness cosigned size {size} with another root")]
    SplitView {
        size: u64,
        known: Hash,
        submitted: Hash,
    },
    /// 422: the consistency proof does not lead from the witness's
    /// checkpoint to this one, or a size-0 checkpoint has another root than
    /// the empty tree's.
    #[error("the consistency proof: {0}")]
    BadProof(LogError),
}

impl Refusal {
    /// The HTTP status tlog-witness answers with.
    pub fn status(&self) -> u16 {
        match self {
            Refusal::BadRequest(_) => 400,
            Refusal::BadSignature(_) => 403,
            Refusal::UnknownOrigin { .. } => 404,
            Refusal::Conflict { .. } => 409,
            Refusal::SplitView { .. } | Refusal::BadProof(_) => 422,
        }
    }

    /// Stable snake_case code for this refusal.
    pub fn code(&self) -> &'static str {
        match self {
            Refusal::BadRequest(_) => "witness_bad_request",
            Refusal::UnknownOrigin { .. } => "witness_unknown_origin",
            Refusal::BadSignature(_) => "witness_bad_signature",
            Refusal::Conflict { .. } => "witness_conflict",
            Refusal::SplitView { .. } => "witness_split_view",
            Refusal::BadProof(_) => "witness_bad_proof",
        }
    }

    /// The log rule that refused, when there is one.
    pub fn cause(&self) -> Option<&LogError> {
        match self {
            Refusal::BadRequest(error)
            | Refusal::BadSignature(error)
            | Refusal::BadProof(error) => Some(error),
            _ => None,
        }
    }
}

/// The logs a witness witnesses: each origin with the keys it trusts for
/// that log's checkpoints.
pub type WitnessedLogs = BTreeMap<String, Vec<NoteVerifier>>;

/// A request for a log the witness knows, whose checkpoint its log signed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Submission {
    checkpoint: Checkpoint,
    old_size: u64,
    proof: Vec<Hash>,
}

/// What the witness does after accepting: persist `state`, then cosign
/// `checkpoint`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Accepted {
    /// The witness's new state for the checkpoint's origin.
    pub state: WitnessState,
    /// The checkpoint to cosign.
    pub checkpoint: Checkpoint,
}

impl Submission {
    /// The first checks: the checkpoint's origin among `logs` (404) and its
    /// signature by that log's keys (403); a malformed note is 400.
    pub fn route(logs: &WitnessedLogs, request: &AddCheckpoint) -> Result<Submission, Refusal> {
        let (text, _) = split_note(&request.checkpoint).map_err(Refusal::BadRequest)?;
        let claimed = Checkpoint::parse(text).map_err(Refusal::BadRequest)?;
        let keys = logs
            .get(&claimed.origin)
            .ok_or_else(|| Refusal::UnknownOrigin {
                origin: claimed.origin.clone(),
            })?;
        let checkpoint = open_checkpoint(&request.checkpoint, Some(&claimed.origin), keys)
            .map_err(|error| match error {
                LogError::NoteUnknownKey
                | LogError::NoteSignatureInvalid
                | LogError::NoteDuplicateSignature => Refusal::BadSignature(error),
                other => Refusal::BadRequest(other),
            })?;
        Ok(Submission {
            checkpoint,
            old_size: request.old_size,
            proof: request.proof.clone(),
        })
    }

    /// The checkpoint's origin: the witness loads its state for it.
    pub fn origin(&self) -> &str {
        &self.checkpoint.origin
    }

    /// The rest of the rule, against the witness's state for the origin
    /// (`None` when it never cosigned for it).
    pub fn apply(&self, state: Option<&WitnessState>) -> Result<Accepted, Refusal> {
        let known = state.copied().unwrap_or(WitnessState {
            size: 0,
            root: empty_root(),
        });
        let (size, root) = (self.checkpoint.size, self.checkpoint.root);
        if self.old_size > size {
            return Err(Refusal::BadRequest(LogError::SizesOutOfOrder));
        }
        if self.old_size != known.size {
            return Err(Refusal::Conflict { size: known.size });
        }
        if size == 0 && root != empty_root() {
            return Err(Refusal::BadProof(LogError::RootMismatch));
        }
        if size == known.size && root != known.root {
            return Err(Refusal::SplitView {
                size,
                known: known.root,
                submitted: root,
            });
        }
        verify_consistency(known.size, size, &known.root, &root, &self.proof)
            .map_err(Refusal::BadProof)?;
        Ok(Accepted {
            state: WitnessState { size, root },
            checkpoint: self.checkpoint.clone(),
        })
    }
}

#[cfg(test)]
mod tests {
    use std::convert::Infallible;

    use super::*;
    use crate::tlog::frontier::Frontier;
    use crate::tlog::hash::leaf_hash;
    use crate::tlog::note::NoteSigner;
    use crate::tlog::tiles::{TileReader, consistency_proof, tree_root};

    const ORIGIN: &str = "log.example/a";

    /// A log in memory, as level-0 and higher tiles.
    struct Tree {
        tiles: BTreeMap<u8, Vec<Hash>>,
        frontier: Frontier,
    }

    impl Tree {
        fn new(leaves: &[&[u8]]) -> Tree {
            let mut tree = Tree {
                tiles: BTreeMap::new(),
                frontier: Frontier::new(),
            };
            for leaf in leaves {
                let hash = leaf_hash(leaf);
                tree.tiles.entry(0).or_default().push(hash);
                for entry in tree.frontier.push(hash).unwrap() {
                    tree.tiles.entry(entry.level).or_default().push(entry.hash);
                }
            }
            tree
        }

        fn root(&mut self, size: u64) -> Hash {
            tree_root(self, size).unwrap()
        }

        fn proof(&mut self, old: u64, new: u64) -> Vec<Hash> {
            consistency_proof(self, old, new).unwrap()
        }
    }

    impl TileReader for Tree {
        type Error = Infallible;

        fn tile(&mut self, level: u8, index: u64, width: u16) -> Result<Vec<Hash>, Infallible> {
            let start = index as usize * 256;
            Ok(self.tiles[&level][start..start + usize::from(width)].to_vec())
        }
    }

    fn leaves(prefix: &str, count: usize) -> Vec<Vec<u8>> {
        (0..count)
            .map(|i| format!("{prefix}{i}").into_bytes())
            .collect()
    }

    fn tree(prefix: &str, count: usize) -> Tree {
        let leaves = leaves(prefix, count);
        let refs: Vec<&[u8]> = leaves.iter().map(Vec::as_slice).collect();
        Tree::new(&refs)
    }

    fn signer() -> NoteSigner {
        NoteSigner::new(&[1; 32], ORIGIN).unwrap()
    }

    fn logs() -> WitnessedLogs {
        let key = NoteVerifier::parse(&signer().vkey()).unwrap();
        BTreeMap::from([(ORIGIN.to_owned(), vec![key])])
    }

    fn request(tree: &mut Tree, old: u64, new: u64) -> AddCheckpoint {
        AddCheckpoint {
            old_size: old,
            proof: if old == 0 {
                Vec::new()
            } else {
                tree.proof(old, new)
            },
            checkpoint: Checkpoint::new(ORIGIN, new, tree.root(new))
                .sign(&signer())
                .unwrap(),
        }
    }

    fn add(request: &AddCheckpoint, state: Option<WitnessState>) -> Result<Accepted, Refusal> {
        let parsed = AddCheckpoint::parse(&request.to_text()).map_err(Refusal::BadRequest)?;
        assert_eq!(&parsed, request);
        Submission::route(&logs(), &parsed)?.apply(state.as_ref())
    }

    #[test]
    fn the_first_checkpoint_and_the_next_are_cosigned() {
        let mut log = tree("a", 20);
        let first = add(&request(&mut log, 0, 7), None).unwrap();
        assert_eq!(
            first.state,
            WitnessState {
                size: 7,
                root: log.root(7)
            }
        );
        assert_eq!(first.checkpoint.size, 7);
        let next = add(&request(&mut log, 7, 20), Some(first.state)).unwrap();
        assert_eq!(
            next.state,
            WitnessState {
                size: 20,
                root: log.root(20)
            }
        );
        // The same checkpoint again is cosigned again.
        let again = add(&request(&mut log, 20, 20), Some(next.state)).unwrap();
        assert_eq!(again.state, next.state);
        // An empty log, with the empty tree's root.
        let empty = Checkpoint::new(ORIGIN, 0, empty_root())
            .sign(&signer())
            .unwrap();
        let accepted = add(
            &AddCheckpoint {
                old_size: 0,
                proof: Vec::new(),
                checkpoint: empty,
            },
            None,
        )
        .unwrap();
        assert_eq!(accepted.state.size, 0);
    }

    #[test]
    fn a_stale_old_size_is_a_conflict_with_the_witness_size() {
        let mut log = tree("a", 20);
        let state = WitnessState {
            size: 7,
            root: log.root(7),
        };
        assert_eq!(
            add(&request(&mut log, 0, 20), Some(state)),
            Err(Refusal::Conflict { size: 7 })
        );
        let refusal = add(&request(&mut log, 5, 20), Some(state)).unwrap_err();
        assert_eq!(refusal, Refusal::Conflict { size: 7 });
        assert_eq!(
            (refusal.status(), refusal.code()),
            (409, "witness_conflict")
        );
        // A witness that never cosigned has size 0.
        assert_eq!(
            add(&request(&mut log, 7, 20), None),
            Err(Refusal::Conflict { size: 0 })
        );
    }

    #[test]
    fn a_smaller_checkpoint_is_refused() {
        let mut log = tree("a", 20);
        let state = WitnessState {
            size: 20,
            root: log.root(20),
        };
        // The honest old size, above the checkpoint's: 400.
        let mut backwards = request(&mut log, 0, 7);
        backwards.old_size = 20;
        let refusal = add(&backwards, Some(state)).unwrap_err();
        assert_eq!(refusal, Refusal::BadRequest(LogError::SizesOutOfOrder));
        assert_eq!(refusal.status(), 400);
        // Any other old size: 409 with the witness's size.
        assert_eq!(
            add(&request(&mut log, 5, 7), Some(state)),
            Err(Refusal::Conflict { size: 20 })
        );
    }

    #[test]
    fn the_same_size_with_another_root_is_a_split_view() {
        let mut log = tree("a", 20);
        let mut fork = tree("b", 20);
        let state = WitnessState {
            size: 20,
            root: log.root(20),
        };
        let refusal = add(&request(&mut fork, 20, 20), Some(state)).unwrap_err();
        assert_eq!(
            refusal,
            Refusal::SplitView {
                size: 20,
                known: log.root(20),
                submitted: fork.root(20)
            }
        );
        assert_eq!(
            (refusal.status(), refusal.code()),
            (422, "witness_split_view")
        );
    }

    #[test]
    fn a_proof_that_fails_is_refused() {
        let mut log = tree("a", 20);
        let state = WitnessState {
            size: 7,
            root: log.root(7),
        };
        // A fork that parted before the witness's size: its proof does not
        // lead from the witness's root.
        let mut shared = leaves("a", 5);
        shared.extend(leaves("b", 15));
        let refs: Vec<&[u8]> = shared.iter().map(Vec::as_slice).collect();
        let mut fork = Tree::new(&refs);
        let refusal = add(&request(&mut fork, 7, 20), Some(state)).unwrap_err();
        assert_eq!(refusal, Refusal::BadProof(LogError::RootMismatch));
        assert_eq!(refusal.status(), 422);
        let mut short = request(&mut log, 7, 20);
        short.proof.pop();
        assert_eq!(
            add(&short, Some(state)),
            Err(Refusal::BadProof(LogError::ProofInvalid))
        );
        // A proof from the empty tree must be empty.
        let mut padded = request(&mut log, 0, 7);
        padded.proof.push([0; 32]);
        assert_eq!(
            add(&padded, None),
            Err(Refusal::BadProof(LogError::ProofInvalid))
        );
        // A size-0 checkpoint with another root than the empty tree's.
        let zero = Checkpoint::new(ORIGIN, 0, [1; 32]).sign(&signer()).unwrap();
        assert_eq!(
            add(
                &AddCheckpoint {
                    old_size: 0,
                    proof: Vec::new(),
                    checkpoint: zero
                },
                None
            ),
            Err(Refusal::BadProof(LogError::RootMismatch))
        );
    }

    #[test]
    fn origin_and_signature_are_checked_first() {
        let mut log = tree("a", 20);
        let other = Checkpoint::new("log.example/b", 7, log.root(7))
            .sign(&signer())
            .unwrap();
        let refusal = add(
            &AddCheckpoint {
                old_size: 0,
                proof: Vec::new(),
                checkpoint: other,
            },
            None,
        )
        .unwrap_err();
        assert_eq!(
            refusal,
            Refusal::UnknownOrigin {
                origin: "log.example/b".into()
            }
        );
        assert_eq!(refusal.status(), 404);
        let impostor = NoteSigner::new(&[2; 32], ORIGIN).unwrap();
        let forged = Checkpoint::new(ORIGIN, 7, log.root(7))
            .sign(&impostor)
            .unwrap();
        let refusal = add(
            &AddCheckpoint {
                old_size: 0,
                proof: Vec::new(),
                checkpoint: forged,
            },
            None,
        )
        .unwrap_err();
        assert_eq!(refusal, Refusal::BadSignature(LogError::NoteUnknownKey));
        assert_eq!(refusal.status(), 403);
        let good = request(&mut log, 0, 7).checkpoint;
        let tampered = good.replacen("\n7\n", "\n8\n", 1);
        assert_eq!(
            add(
                &AddCheckpoint {
                    old_size: 0,
                    proof: Vec::new(),
                    checkpoint: tampered
                },
                None
            ),
            Err(Refusal::BadSignature(LogError::NoteSignatureInvalid))
        );
        // Signature checks come before the state: a bad signature is 403
        // even with a stale old size.
        let impostor_note = Checkpoint::new(ORIGIN, 7, log.root(7))
            .sign(&impostor)
            .unwrap();
        assert_eq!(
            Submission::route(
                &logs(),
                &AddCheckpoint {
                    old_size: 3,
                    proof: Vec::new(),
                    checkpoint: impostor_note
                }
            )
            .map(|_| ()),
            Err(Refusal::BadSignature(LogError::NoteUnknownKey))
        );
        assert_eq!(
            Submission::route(&logs(), &request(&mut log, 0, 7)).map(|s| s.origin().to_owned()),
            Ok(ORIGIN.to_owned())
        );
    }

    #[test]
    fn bodies_are_parsed_strictly() {
        let mut log = tree("a", 20);
        let good = request(&mut log, 7, 20).to_text();
        assert!(AddCheckpoint::parse(&good).is_ok());
        let note = request(&mut log, 0, 7).checkpoint;
        let hash = STANDARD.encode([7u8; 32]);
        let many = format!("old 1\n{}\n{note}", format!("{hash}\n").repeat(64));
        let fine = format!("old 1\n{}\n{note}", format!("{hash}\n").repeat(63));
        assert!(AddCheckpoint::parse(&fine).is_ok());
        for bad in [
            format!("old 07\n\n{note}"),
            format!("old -1\n\n{note}"),
            format!("old\n\n{note}"),
            format!("Old 7\n\n{note}"),
            format!("old 7\n{}\n\n{note}", &hash[..40]),
            format!("old 7\n{hash} \n\n{note}"),
            "old 7\n\n".to_owned(),
            format!("old 7\n{note}"),
            many,
        ] {
            assert_eq!(
                AddCheckpoint::parse(&bad),
                Err(LogError::AddCheckpointMalformed),
                "{bad:?}"
            );
        }
        let huge = format!("old 0\n\n{}", "x".repeat(MAX_ADD_CHECKPOINT_BYTES));
        assert_eq!(
            AddCheckpoint::parse(&huge),
            Err(LogError::AddCheckpointTooLarge)
        );
        // A body whose note is not a checkpoint is 400.
        let text_note = signer().sign("not a checkpoint\n").unwrap();
        let request = AddCheckpoint::parse(&format!("old 0\n\n{text_note}")).unwrap();
        assert_eq!(
            Submission::route(&logs(), &request).map(|_| ()),
            Err(Refusal::BadRequest(LogError::CheckpointMalformed))
        );
        assert_eq!(
            Refusal::BadRequest(LogError::CheckpointMalformed).cause(),
            Some(&LogError::CheckpointMalformed)
        );
    }
}

//! The record log's rules: one append-only Merkle tree of every state
//! change, its signed checkpoints, and the proofs that bind a leaf or an
//! older tree to a checkpoint.
//!
//! - `hash`: RFC 6962 §2.1 leaf and node hashes, [`Hash`];
//! - `tiles`: the tree as C2SP tlog-tiles stores it — tile paths, which
//!   tiles a size has, and [`tree_root`], [`inclusion_proof`] and
//!   [`consistency_proof`] over the caller's [`TileReader`];
//! - `frontier`: [`Frontier`], the right edge a writer appends to, and the
//!   tile entries each leaf completes;
//! - `verify`: [`verify_inclusion`] and [`verify_consistency`], RFC 9162's
//!   algorithms;
//! - `note`: C2SP signed notes with Ed25519 ([`NoteSigner`],
//!   [`NoteVerifier`], [`open_note`]);
//! - `checkpoint`: C2SP tlog-checkpoint ([`Checkpoint`],
//!   [`open_checkpoint`]);
//! - `proof`: C2SP tlog-proof@v1 ([`TlogProof`], [`verify_tlog_proof`]);
//! - `cosignature`: C2SP tlog-cosignature, Ed25519 cosignature/v1
//!   ([`WitnessSigner`], [`WitnessVerifier`]), and witness policies
//!   ([`WitnessPolicy`], [`verify_witnessed`]);
//! - `witness`: the witness's rule of C2SP tlog-witness `add-checkpoint`
//!   ([`AddCheckpoint`], [`Submission`], [`Refusal`]);
//! - `witnessed_proof`: an inclusion proof held to a witness policy,
//!   through a [`CosignedLink`] to an older cosigned checkpoint when the
//!   newest is not cosigned yet ([`verify_witnessed_inclusion`]);
//! - `entry`: the leaves, [`LogEntry`] as RFC 8785 canonical JSON.
//!
//! Not here: where tiles, leaves and checkpoints are stored, when a
//! checkpoint is signed, and the signing key's custody (the server's); the
//! clock (`at` is the caller's). Every number is in [`crate::limits`].

mod checkpoint;
mod cosignature;
mod entry;
mod error;
mod frontier;
mod hash;
mod note;
mod proof;
mod tiles;
mod verify;
mod witness;
mod witnessed_proof;

pub use checkpoint::{Checkpoint, open_checkpoint};
pub use cosignature::{
    COSIGNATURE_V1_TYPE, Cosigned, WitnessPolicy, WitnessPolicyError, WitnessSigner,
    WitnessVerifier, Witnessed, cosignature_message, verify_witnessed,
};
pub use entry::{
    ApprovalDecided, Credential, LOG_ENTRY_VERSION, LogEntry, LogEvent, MAX_VOUCH_WEIGHT_PPM,
    RecordCompleted, RecordCreated, RecordRated, TokenIssued, TokenRevoked, VouchCreated,
    VouchPrincipal, VouchWithdrawn,
};
pub use error::{LogError, ReadError};
pub use frontier::{Frontier, TileEntry};
pub use hash::{Hash, empty_root, leaf_hash, node_hash};
pub use note::{ED25519_TYPE, NoteSigner, NoteVerifier, OpenedNote, key_id, open_note};
pub use proof::{TLOG_PROOF_HEADER, TlogProof, verify_tlog_proof};
pub use tiles::{
    TileId, TileReader, consistency_proof, inclusion_proof, parse_tile_path, partial_tiles,
    tile_path, tile_width, tiles, tree_root,
};
pub use verify::{verify_consistency, verify_inclusion};
pub use witness::{
    Accepted, AddCheckpoint, Refusal, Submission, TLOG_SIZE_CONTENT_TYPE, WitnessState,
    WitnessedLogs,
};
pub use witnessed_proof::{CosignedLink, WitnessedInclusion, verify_witnessed_inclusion};

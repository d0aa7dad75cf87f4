//! Why the log's rules refused something: one enum for trees, proofs,
//! notes, checkpoints, proof texts and leaves, each variant with a stable
//! snake_case code. Reading tiles adds the reader's own error
//! ([`ReadError`]).

use crate::limits::{
    MAX_ADD_CHECKPOINT_BYTES, MAX_LEAF_BYTES, MAX_NOTE_BYTES, MAX_NOTE_SIGNATURES,
    MAX_PROOF_HASHES, MAX_TLOG_PROOF_BYTES,
};

/// Why the log's rules refused an input.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LogError {
    #[error("the leaf index is not below the tree size")]
    IndexOutOfRange,
    #[error("the old tree size is larger than the new one")]
    SizesOutOfOrder,
    #[error("a proof holds at most {MAX_PROOF_HASHES} hashes")]
    ProofTooLong,
    #[error("the proof does not have the shape the index and sizes call for")]
    ProofInvalid,
    #[error("the proof leads to another root than the one given")]
    RootMismatch,
    #[error("a tile is 1 to 256 hashes at a level below 64, and the reader must return that many")]
    TileInvalid,
    #[error("a tile path is tile/<level>/<index>[.p/<width>], each number in its one spelling")]
    TilePathMalformed,
    #[error("the bytes are not a stored frontier")]
    FrontierMalformed,
    #[error("the log holds as many leaves as it can count")]
    LogFull,
    #[error(
        "a signed note is UTF-8 text ending in a newline, a blank line, and lines `— <name> <base64 signature>`"
    )]
    NoteMalformed,
    #[error("a signed note is at most {MAX_NOTE_BYTES} bytes")]
    NoteTooLarge,
    #[error("a signed note carries at most {MAX_NOTE_SIGNATURES} signatures")]
    NoteTooManySignatures,
    #[error("no signature of the note is by a trusted key")]
    NoteUnknownKey,
    #[error("a signature by a trusted key does not verify")]
    NoteSignatureInvalid,
    #[error("the note carries two signatures by the same trusted key")]
    NoteDuplicateSignature,
    #[error("a key name is non-empty, without spaces or `+`")]
    KeyNameInvalid,
    #[error("a verifier key is `<name>+<8 hex digits>+<base64 of the type byte and the key>`")]
    VkeyMalformed,
    #[error("only Ed25519 verifier keys (type 0x01) are supported")]
    VkeyUnsupportedType,
    #[error("the verifier key's id is not the one its name and key give")]
    VkeyIdMismatch,
    #[error(
        "a checkpoint is the origin, the tree size in decimal and the base64 root, each on its line, then non-empty extension lines"
    )]
    CheckpointMalformed,
    #[error("the checkpoint is of another log than the one expected")]
    CheckpointOriginMismatch,
    #[error("the text is not a c2sp.org/tlog-proof@v1 proof")]
    TlogProofMalformed,
    #[error("a tlog proof is at most {MAX_TLOG_PROOF_BYTES} bytes")]
    TlogProofTooLarge,
    #[error("a witness key is a cosignature/v1 verifier key (signature type 0x04)")]
    WitnessVkeyUnsupportedType,
    #[error(
        "a cosignature/v1 signature is the key id, an 8-byte timestamp below 2^63 and 64 signature bytes"
    )]
    CosignatureMalformed,
    #[error("a cosignature by a witness of the policy does not verify")]
    CosignatureInvalid,
    #[error("{fresh} fresh cosignatures by the policy's witnesses, {threshold} needed")]
    CosignaturesInsufficient { fresh: usize, threshold: usize },
    #[error(
        "an add-checkpoint body is `old <size>`, at most 63 base64 hashes, an empty line and a signed checkpoint"
    )]
    AddCheckpointMalformed,
    #[error("an add-checkpoint body is at most {MAX_ADD_CHECKPOINT_BYTES} bytes")]
    AddCheckpointTooLarge,
    #[error("the leaf is not a log entry: JSON of a known kind with every member valid")]
    LeafMalformed,
    #[error("the leaf is a log entry but not in its canonical form (RFC 8785)")]
    LeafNotCanonical,
    #[error("a leaf is at most {MAX_LEAF_BYTES} bytes")]
    LeafTooLarge,
}

impl LogError {
    /// Stable snake_case code for this error.
    pub fn code(&self) -> &'static str {
        match self {
            LogError::IndexOutOfRange => "log_index_out_of_range",
            LogError::SizesOutOfOrder => "log_sizes_out_of_order",
            LogError::ProofTooLong => "log_proof_too_long",
            LogError::ProofInvalid => "log_proof_invalid",
            LogError::RootMismatch => "log_root_mismatch",
            LogError::TileInvalid => "log_tile_invalid",
            LogError::TilePathMalformed => "log_tile_path_malformed",
            LogError::FrontierMalformed => "log_frontier_malformed",
            LogError::LogFull => "log_full",
            LogError::NoteMalformed => "note_malformed",
            LogError::NoteTooLarge => "note_too_large",
            LogError::NoteTooManySignatures => "note_too_many_signatures",
            LogError::NoteUnknownKey => "note_unknown_key",
            LogError::NoteSignatureInvalid => "note_signature_invalid",
            LogError::NoteDuplicateSignature => "note_duplicate_signature",
            LogError::KeyNameInvalid => "note_key_name_invalid",
            LogError::VkeyMalformed => "vkey_malformed",
            LogError::VkeyUnsupportedType => "vkey_unsupported_type",
            LogError::VkeyIdMismatch => "vkey_id_mismatch",
            LogError::CheckpointMalformed => "checkpoint_malformed",
            LogError::CheckpointOriginMismatch => "checkpoint_origin_mismatch",
            LogError::TlogProofMalformed => "tlog_proof_malformed",
            LogError::TlogProofTooLarge => "tlog_proof_too_large",
            LogError::WitnessVkeyUnsupportedType => "witness_vkey_unsupported_type",
            LogError::CosignatureMalformed => "cosignature_malformed",
            LogError::CosignatureInvalid => "cosignature_invalid",
            LogError::CosignaturesInsufficient { .. } => "cosignatures_insufficient",
            LogError::AddCheckpointMalformed => "add_checkpoint_malformed",
            LogError::AddCheckpointTooLarge => "add_checkpoint_too_large",
            LogError::LeafMalformed => "leaf_malformed",
            LogError::LeafNotCanonical => "leaf_not_canonical",
            LogError::LeafTooLarge => "leaf_too_large",
        }
    }
}

/// Why a tree hash or proof could not be computed from tiles: the reader
/// failed, or what it returned (or was asked) breaks a rule of the log.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReadError<E> {
    /// The tile reader's own error, passed through.
    #[error("reading a tile failed: {0}")]
    Reader(E),
    #[error(transparent)]
    Log(#[from] LogError),
}

impl<E> ReadError<E> {
    /// `log_tile_unreadable` for the reader's errors, else the log's code.
    pub fn code(&self) -> &'static str {
        match self {
            ReadError::Reader(_) => "log_tile_unreadable",
            ReadError::Log(error) => error.code(),
        }
    }
}

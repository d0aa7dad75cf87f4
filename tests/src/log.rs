//! `log.json`: the record log's vectors. A log of real entries (token
//! issues, records, completions, ratings, revocations) large enough for
//! full and partial tiles of levels 0 and 1, a fork of it that parts from
//! it at `FORK_AT`, checkpoints of both signed by the vector log key, and
//! the cases: inclusion proofs as tlog-proof texts, consistency proofs,
//! checkpoints, verifier keys and leaves, each passing or failing with the
//! code core gives.

use std::collections::BTreeMap;
use std::convert::Infallible;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use mandate_core::tlog::{
    Checkpoint, Credential, Frontier, Hash, LogEntry, LogEvent, NoteSigner, RecordCompleted,
    RecordCreated, RecordRated, TileReader, TlogProof, TokenIssued, TokenRevoked,
    consistency_proof, inclusion_proof, leaf_hash, tree_root,
};
use mandate_core::{
    AarId, Action, AgentId, Args, AssuranceLevel, ClaimsDigest, DenyReason, HumanRef, Jkt, Jti,
    KeyId, OrgId, Outcome, ProvenanceRef, Rating, Resource, ResultHash, Status,
};
use serde_json::{Value, json};

use crate::Rng;

/// The log's origin, and the name of its key.
pub(crate) const ORIGIN: &str = "mandate.example/log";
/// Leaves of the vector log: four full level-0 tiles and a partial one,
/// and a level-1 tile of width 4.
const LOG_SIZE: u64 = 1100;
/// The fork keeps the first `FORK_AT` leaves and writes others after.
const FORK_AT: u64 = 900;
/// Sizes the log signed checkpoints at.
const CHECKPOINT_SIZES: [u64; 11] = [1, 2, 3, 7, 8, 255, 256, 257, 1000, 1024, 1100];
/// Unix milliseconds of the first entry.
const START_MS: i64 = 1_800_000_000_000;

/// A log in memory: its leaves, its tiles (from the frontier's pushes) and
/// its frontier.
pub(crate) struct MemoryLog {
    leaves: Vec<Vec<u8>>,
    tiles: BTreeMap<u8, Vec<Hash>>,
    frontier: Frontier,
}

impl MemoryLog {
    pub(crate) fn new() -> MemoryLog {
        MemoryLog {
            leaves: Vec::new(),
            tiles: BTreeMap::new(),
            frontier: Frontier::new(),
        }
    }

    pub(crate) fn push(&mut self, leaf: Vec<u8>) {
        let hash = leaf_hash(&leaf);
        self.tiles.entry(0).or_default().push(hash);
        for entry in self.frontier.push(hash).expect("the log has room") {
            self.tiles.entry(entry.level).or_default().push(entry.hash);
        }
        self.leaves.push(leaf);
    }

    pub(crate) fn root(&mut self, size: u64) -> Hash {
        tree_root(self, size).expect("memory tiles are complete")
    }

    pub(crate) fn inclusion(&mut self, index: u64, size: u64) -> Vec<Hash> {
        inclusion_proof(self, index, size).expect("memory tiles are complete")
    }

    pub(crate) fn consistency(&mut self, old: u64, new: u64) -> Vec<Hash> {
        consistency_proof(self, old, new).expect("memory tiles are complete")
    }

    pub(crate) fn leaf(&self, index: u64) -> &[u8] {
        &self.leaves[index as usize]
    }
}

impl TileReader for MemoryLog {
    type Error = Infallible;

    fn tile(&mut self, level: u8, index: u64, width: u16) -> Result<Vec<Hash>, Infallible> {
        let start = index as usize * 256;
        Ok(self.tiles[&level][start..start + usize::from(width)].to_vec())
    }
}

/// The arguments of the record at `index` (the records of every fourth
/// cycle from the third, and of every twelfth from the tenth).
fn record_args(index: u64) -> Option<Args> {
    let cycle = index / 5;
    (matches!(index % 5, 1 | 2) && (cycle % 4 == 2 || cycle % 12 == 9)).then(|| {
        Args::from_value(json!({
            "to": format!("user-{cycle}@example.com"),
            "count": cycle % 7,
            "step": index % 5,
        }))
        .expect("vector arguments are strict")
    })
}

/// The entries of a log: one workflow step after another, five entries a
/// cycle (a token issued or delegated, a record made with it directly, a
/// pending record, its completion and its rating; every fifth cycle a
/// revocation instead of the rating). The records of every fourth cycle
/// (from the third) carry their arguments' `args_hash`, and so do those of
/// every twelfth (from the tenth), whose direct record was denied
/// `args_not_permitted`.
pub(crate) fn entries(rng: &mut Rng, label: &str, count: u64, first: u64) -> Vec<LogEntry> {
    let org = OrgId::new(rng.ulid_ms(START_MS as u64, label));
    let reviewer = KeyId::new(rng.ulid_ms(START_MS as u64, label));
    let human = HumanRef::from_digest(&rng.bytes(label));
    let mut token: Option<(Jti, ProvenanceRef, u32)> = None;
    let mut pending: Option<AarId> = None;
    let mut out = Vec::new();
    for i in first..first + count {
        let at = START_MS + i as i64 * 1000;
        let ms = at as u64;
        let cycle = i / 5;
        let event = match i % 5 {
            0 => {
                let jti = Jti::root(rng.ulid_ms(ms, label));
                let (parent, provenance, depth) = match (&token, cycle % 3) {
                    (Some((parent, provenance, depth)), 1) if *depth < 3 => {
                        (Some(parent.hash()), provenance.clone(), depth + 1)
                    }
                    _ => (None, ProvenanceRef::new(rng.ulid_ms(ms, label)), 0),
                };
                let bound = cycle % 4 == 2;
                let event = LogEvent::TokenIssued(TokenIssued {
                    jth: jti.hash(),
                    parent,
                    agent_id: AgentId::parse(&format!("agent-{}", cycle % 7))
                        .expect("a valid agent id"),
                    provenance_ref: provenance.clone(),
                    depth,
                    human_ref: human.clone(),
                    assurance: [AssuranceLevel::L1, AssuranceLevel::L2, AssuranceLevel::L3]
                        [(cycle % 3) as usize],
                    exp: at / 1000 + 3600,
                    kid: "ZHZ2q1KrdE7aYiumx7cJ5XAnUQbPHn0x2JVvbZ0wRgQ".to_owned(),
                    claims_sha256: ClaimsDigest::from_digest(&rng.bytes(label)),
                    jkt: bound.then(|| Jkt::from_digest(&rng.bytes(label))),
                    status_idx: (cycle % 2 == 0).then_some(cycle),
                });
                token = Some((jti, provenance, depth));
                event
            }
            1 | 2 => {
                let (jti, provenance, _) = token.clone().expect("a token was issued first");
                let aar = AarId::new(rng.ulid_ms(ms, label));
                let denied = i % 5 == 1 && cycle % 6 == 3;
                let args = record_args(i);
                let deny_reason = if args.is_some() {
                    DenyReason::ArgsNotPermitted
                } else {
                    DenyReason::ResourceNotPermitted
                };
                let (status, result, deny_reason) = match (i % 5, denied) {
                    (1, true) => (Status::Denied, None, Some(deny_reason)),
                    (1, false) => (Status::Completed, Some(Outcome::Success), None),
                    _ => (Status::Pending, None, None),
                };
                if status == Status::Pending {
                    pending = Some(aar.clone());
                }
                LogEvent::RecordCreated(RecordCreated {
                    aar_id: aar,
                    jth: jti.hash(),
                    agent_id: AgentId::parse(&format!("agent-{}", cycle % 7))
                        .expect("a valid agent id"),
                    provenance_ref: provenance,
                    action: Action::parse(["read", "write", "summarise"][(i % 3) as usize])
                        .expect("a valid action"),
                    resource: Resource::parse(&format!("crm:contact-{}", cycle % 11))
                        .expect("a valid resource"),
                    status,
                    result,
                    deny_reason,
                    result_hash: (result.is_some() && cycle % 2 == 1)
                        .then(|| ResultHash::from_digest(&rng.bytes(label))),
                    spend_micros: if denied { 0 } else { (cycle % 13) * 250_000 },
                    credential: if cycle % 5 == 4 {
                        Credential::Jti
                    } else {
                        Credential::Token
                    },
                    delegated_jth: None,
                    args_hash: args.as_ref().map(Args::hash),
                })
            }
            3 => LogEvent::RecordCompleted(RecordCompleted {
                aar_id: pending.clone().expect("a pending record"),
                result: [Outcome::Success, Outcome::Error, Outcome::Timeout][(cycle % 3) as usize],
                result_hash: (cycle % 2 == 0).then(|| ResultHash::from_digest(&rng.bytes(label))),
                spend_micros: 1_000 * cycle,
            }),
            _ if cycle % 5 == 4 => {
                let (jti, _, _) = token.clone().expect("a token was issued first");
                LogEvent::TokenRevoked(TokenRevoked {
                    jth: jti.hash(),
                    cause: jti.hash(),
                    reason: (cycle % 2 == 0).then(|| format!("rotation {cycle}: \"planned\"")),
                })
            }
            _ => LogEvent::RecordRated(RecordRated {
                aar_id: pending.clone().expect("a pending record"),
                rating: [Rating::Approved, Rating::Flagged, Rating::Rejected][(cycle % 3) as usize],
                note: (cycle % 3 == 1).then(|| "checked by hand\nlooks fine".to_owned()),
                by: Some(reviewer.clone()),
            }),
        };
        out.push(LogEntry::new(org.clone(), at, event));
    }
    out
}

fn b64(bytes: impl AsRef<[u8]>) -> String {
    STANDARD.encode(bytes)
}

fn hashes(proof: &[Hash]) -> Vec<String> {
    proof.iter().map(b64).collect()
}

fn proof_text(index: u64, path: &[Hash], checkpoint: &str) -> String {
    TlogProof {
        extra: None,
        index,
        path: path.to_vec(),
        checkpoint: checkpoint.to_owned(),
    }
    .to_text()
}

/// A signed checkpoint of a log at `size`.
fn signed(log: &mut MemoryLog, size: u64, signer: &NoteSigner) -> String {
    Checkpoint::new(ORIGIN, size, log.root(size))
        .sign(signer)
        .expect("the vector checkpoint is valid")
}

fn flip(hash: &Hash) -> Hash {
    let mut hash = *hash;
    hash[7] ^= 0x20;
    hash
}

pub(crate) fn log_vectors(rng: &mut Rng) -> Value {
    let seed: [u8; 32] = rng.bytes("log key");
    let signer = NoteSigner::new(&seed, ORIGIN).expect("a valid key name");
    let other = NoteSigner::new(&rng.bytes("other log key"), "other.example/log")
        .expect("a valid key name");
    let impostor =
        NoteSigner::new(&rng.bytes("impostor log key"), ORIGIN).expect("a valid key name");

    let mut log = MemoryLog::new();
    let mut fork = MemoryLog::new();
    let shared = entries(rng, "log entries", LOG_SIZE, 0);
    let forked = entries(rng, "fork entries", LOG_SIZE - FORK_AT, FORK_AT);
    for (i, entry) in shared.iter().enumerate() {
        let leaf = entry.to_leaf().expect("vector entries follow the rules");
        if (i as u64) < FORK_AT {
            fork.push(leaf.clone());
        }
        log.push(leaf);
    }
    for entry in &forked {
        fork.push(entry.to_leaf().expect("vector entries follow the rules"));
    }
    let checkpoints: BTreeMap<u64, String> = CHECKPOINT_SIZES
        .iter()
        .map(|size| (*size, signed(&mut log, *size, &signer)))
        .collect();
    let note = |size: u64| checkpoints[&size].clone();
    let fork_notes: BTreeMap<u64, String> = [1000, 1100]
        .iter()
        .map(|size| (*size, signed(&mut fork, *size, &signer)))
        .collect();

    // Inclusion proofs that pass: leaves of every kind, at tile edges, in
    // trees of several sizes.
    let mut inclusion = Vec::new();
    let mut passing = |name: &str, index: u64, size: u64, log: &mut MemoryLog| {
        let path = log.inclusion(index, size);
        inclusion.push(json!({
            "name": name,
            "leaf": b64(log.leaf(index)),
            "proof": proof_text(index, &path, &note(size)),
            "expect": { "valid": true, "index": index, "size": size, "root": b64(log.root(size)) },
        }));
    };
    for (name, index, size) in [
        ("only_leaf", 0, 1),
        ("first_of_two", 0, 2),
        ("last_of_three", 2, 3),
        ("in_a_partial_tile", 5, 7),
        ("last_of_a_full_tile", 255, 256),
        ("first_of_the_second_tile", 256, 257),
        ("record_created", 1, 1100),
        ("record_created_pending", 2, 1100),
        ("record_created_with_args", 11, 1100),
        ("record_created_denied_args", 46, 1024),
        ("record_completed", 3, 1100),
        ("record_rated", 4, 1100),
        ("token_revoked", 24, 1100),
        ("delegated_token_issued", 5, 1000),
        ("denied_record", 16, 1024),
        ("end_of_the_level_1_tiles", 1023, 1024),
        ("in_the_partial_level_0_tile", 1050, 1100),
        ("last_leaf", 1099, 1100),
    ] {
        passing(name, index, size, &mut log);
    }
    let mut failing = |name: &str, description: &str, leaf: &[u8], proof: String, code: &str| {
        inclusion.push(json!({
            "name": name,
            "description": description,
            "leaf": b64(leaf),
            "proof": proof,
            "expect": { "valid": false, "error": code },
        }));
    };
    let (index, size) = (300, 1100);
    let path = log.inclusion(index, size);
    let leaf = log.leaf(index).to_vec();
    let text = |index: u64, path: &[Hash], note: &str| proof_text(index, path, note);
    failing(
        "wrong_index",
        "the proof of leaf 300 under `index 301`",
        &leaf,
        text(301, &path, &note(size)),
        "log_root_mismatch",
    );
    failing(
        "wrong_index_other_shape",
        "the proof of leaf 300 under `index 1099`, whose path is shorter",
        &leaf,
        text(1099, &path, &note(size)),
        "log_proof_invalid",
    );
    failing(
        "index_out_of_range",
        "an index past the checkpoint's size",
        &leaf,
        text(1100, &path, &note(size)),
        "log_index_out_of_range",
    );
    failing(
        "wrong_size",
        "the proof for the tree of 1100 leaves with the checkpoint of 1024",
        &leaf,
        text(index, &path, &note(1024)),
        "log_proof_invalid",
    );
    {
        let mut flipped = path.clone();
        flipped[3] = flip(&flipped[3]);
        failing(
            "flipped_hash",
            "one bit of the fourth hash of the path flipped",
            &leaf,
            text(index, &flipped, &note(size)),
            "log_root_mismatch",
        );
        failing(
            "one_hash_short",
            "the path without its last hash",
            &leaf,
            text(index, &path[..path.len() - 1], &note(size)),
            "log_proof_invalid",
        );
        let mut long = path.clone();
        long.push(path[0]);
        failing(
            "one_hash_long",
            "the path with one hash too many",
            &leaf,
            text(index, &long, &note(size)),
            "log_proof_invalid",
        );
    }
    failing(
        "another_leaf",
        "the proof of leaf 300 with the bytes of leaf 301",
        log.leaf(301),
        text(index, &path, &note(size)),
        "log_root_mismatch",
    );
    failing(
        "tampered_leaf",
        "leaf 300 with one byte changed",
        &{
            let mut bytes = leaf.clone();
            let last = bytes.len() - 2;
            bytes[last] ^= 1;
            bytes
        },
        text(index, &path, &note(size)),
        "log_root_mismatch",
    );
    failing(
        "other_key_only",
        "the checkpoint signed only by a key the verifier does not trust",
        &leaf,
        text(
            index,
            &path,
            &Checkpoint::new(ORIGIN, size, log.root(size))
                .sign(&other)
                .expect("signs"),
        ),
        "note_unknown_key",
    );
    failing(
        "same_name_other_key",
        "the checkpoint signed by another key under the log's key name",
        &leaf,
        text(
            index,
            &path,
            &Checkpoint::new(ORIGIN, size, log.root(size))
                .sign(&impostor)
                .expect("signs"),
        ),
        "note_unknown_key",
    );
    {
        let checkpoint = note(size);
        let (body, signature) = checkpoint.split_once("\n\n").expect("a note");
        let root = b64(log.root(size));
        let forged = body.replace(&root, &b64(flip(&log.root(size))));
        failing(
            "checkpoint_signature_invalid",
            "the checkpoint's root changed under the log's signature",
            &leaf,
            text(index, &path, &format!("{forged}\n\n{signature}")),
            "note_signature_invalid",
        );
        let line = signature.to_owned();
        failing(
            "duplicate_signature",
            "the checkpoint carrying the log's signature twice",
            &leaf,
            text(index, &path, &format!("{checkpoint}{line}")),
            "note_duplicate_signature",
        );
    }
    failing(
        "origin_differs",
        "a checkpoint of another origin, signed by the log's key",
        &leaf,
        text(
            index,
            &path,
            &Checkpoint::new("mandate.example/other-log", size, log.root(size))
                .sign(&signer)
                .expect("signs"),
        ),
        "checkpoint_origin_mismatch",
    );
    failing(
        "index_with_leading_zero",
        "`index 0300`",
        &leaf,
        text(index, &path, &note(size)).replace("index 300", "index 0300"),
        "tlog_proof_malformed",
    );
    failing(
        "not_a_tlog_proof",
        "another header line",
        &leaf,
        text(index, &path, &note(size)).replace("tlog-proof@v1", "tlog-proof@v2"),
        "tlog_proof_malformed",
    );
    failing(
        "checkpoint_size_leading_zero",
        "a checkpoint whose size has a leading zero, signed by the log's key",
        &leaf,
        text(
            index,
            &path,
            &signer
                .sign(&format!("{ORIGIN}\n01100\n{}\n", b64(log.root(size))))
                .expect("signs"),
        ),
        "checkpoint_malformed",
    );

    // Consistency proofs.
    let mut consistency = Vec::new();
    let mut pair = |name: &str, old: u64, new: u64, log: &mut MemoryLog| {
        consistency.push(json!({
            "name": name,
            "old_size": old,
            "old_root": b64(log.root(old)),
            "new_size": new,
            "new_root": b64(log.root(new)),
            "proof": hashes(&log.consistency(old, new)),
            "expect": { "valid": true },
        }));
    };
    for (name, old, new) in [
        ("one_to_two", 1, 2),
        ("one_to_all", 1, 1100),
        ("three_to_seven", 3, 7),
        ("seven_to_eight", 7, 8),
        ("a_tile_and_one", 255, 256),
        ("full_tile_to_next", 256, 257),
        ("across_tiles", 257, 1000),
        ("thousand_to_all", 1000, 1100),
        ("level_1_tile_to_all", 1024, 1100),
        ("three_to_all", 3, 1100),
        ("same_size", 1000, 1000),
        ("from_empty", 0, 1100),
    ] {
        pair(name, old, new, &mut log);
    }
    let (old, new) = (257, 1000);
    let proof = log.consistency(old, new);
    let (old_root, new_root) = (log.root(old), log.root(new));
    let mut bad = |name: &str,
                   description: &str,
                   sizes: (u64, u64),
                   roots: (Hash, Hash),
                   proof: &[Hash],
                   code: &str| {
        consistency.push(json!({
            "name": name,
            "description": description,
            "old_size": sizes.0,
            "old_root": b64(roots.0),
            "new_size": sizes.1,
            "new_root": b64(roots.1),
            "proof": hashes(proof),
            "expect": { "valid": false, "error": code },
        }));
    };
    bad(
        "swapped_sizes",
        "the proof from 257 to 1000 given from 1000 to 257",
        (new, old),
        (new_root, old_root),
        &proof,
        "log_sizes_out_of_order",
    );
    {
        let mut flipped = proof.clone();
        flipped[1] = flip(&flipped[1]);
        bad(
            "flipped_hash",
            "one bit of the second hash flipped",
            (old, new),
            (old_root, new_root),
            &flipped,
            "log_root_mismatch",
        );
    }
    bad(
        "one_hash_short",
        "the proof without its last hash",
        (old, new),
        (old_root, new_root),
        &proof[..proof.len() - 1],
        "log_proof_invalid",
    );
    {
        let mut long = proof.clone();
        long.push(proof[0]);
        bad(
            "one_hash_long",
            "the proof with one hash too many",
            (old, new),
            (old_root, new_root),
            &long,
            "log_proof_invalid",
        );
    }
    bad(
        "wrong_old_root",
        "the root of the tree of 256 leaves as the old root",
        (old, new),
        (log.root(256), new_root),
        &proof,
        "log_root_mismatch",
    );
    bad(
        "wrong_old_size",
        "the proof from 257 presented from 256",
        (256, new),
        (log.root(256), new_root),
        &proof,
        "log_proof_invalid",
    );
    bad(
        "empty_proof",
        "no hashes between different sizes",
        (old, new),
        (old_root, new_root),
        &[],
        "log_proof_invalid",
    );
    bad(
        "same_size_other_root",
        "two roots for one size: a fork",
        (1000, 1000),
        (log.root(1000), fork.root(1000)),
        &[],
        "log_root_mismatch",
    );
    bad(
        "to_the_fork",
        "the fork's proof from 1000 to 1100 against the log's tree of 1000 (the fork parted at 900)",
        (1000, 1100),
        (log.root(1000), fork.root(1100)),
        &fork.consistency(1000, 1100),
        "log_root_mismatch",
    );

    // Checkpoints alone.
    let vkey = signer.vkey();
    let mut checkpoint_cases = vec![
        json!({ "name": "valid", "note": note(1100), "origin": ORIGIN,
                "expect": { "valid": true, "origin": ORIGIN, "size": 1100, "root": b64(log.root(1100)) } }),
        json!({ "name": "valid_without_origin", "note": note(7),
                "expect": { "valid": true, "origin": ORIGIN, "size": 7, "root": b64(log.root(7)) } }),
        json!({ "name": "cosigned_by_an_unknown_key", "note": format!("{}{}", note(8), other.signature_line(&Checkpoint::new(ORIGIN, 8, log.root(8)).body()).expect("signs")),
                "origin": ORIGIN,
                "expect": { "valid": true, "origin": ORIGIN, "size": 8, "root": b64(log.root(8)) } }),
        json!({ "name": "other_origin", "note": note(1100), "origin": "mandate.example/other-log",
                "expect": { "valid": false, "error": "checkpoint_origin_mismatch" } }),
        json!({ "name": "only_an_unknown_key", "note": Checkpoint::new(ORIGIN, 3, log.root(3)).sign(&other).expect("signs"),
                "expect": { "valid": false, "error": "note_unknown_key" } }),
        json!({ "name": "signed_twice_by_the_log", "note": format!("{}{}", note(3), signer.signature_line(&Checkpoint::new(ORIGIN, 3, log.root(3)).body()).expect("signs")),
                "expect": { "valid": false, "error": "note_duplicate_signature" } }),
        json!({ "name": "no_blank_line", "note": note(3).replace("\n\n", "\n"),
                "expect": { "valid": false, "error": "note_malformed" } }),
        json!({ "name": "carriage_return", "note": note(3).replace(ORIGIN, &format!("{ORIGIN}\r")),
                "expect": { "valid": false, "error": "note_malformed" } }),
        json!({ "name": "two_line_body", "note": signer.sign(&format!("{ORIGIN}\n3\n")).expect("signs"),
                "expect": { "valid": false, "error": "checkpoint_malformed" } }),
        json!({ "name": "empty_extension_line", "note": signer.sign(&format!("{ORIGIN}\n3\n{}\n\nx\n", b64(log.root(3)))).expect("signs"),
                "expect": { "valid": false, "error": "checkpoint_malformed" } }),
        json!({ "name": "short_root", "note": signer.sign(&format!("{ORIGIN}\n3\n{}\n", b64(&log.root(3)[..31]))).expect("signs"),
                "expect": { "valid": false, "error": "checkpoint_malformed" } }),
    ];
    for case in &mut checkpoint_cases {
        case["vkeys"] = json!([vkey]);
    }
    checkpoint_cases.push(json!({
        "name": "trusting_two_keys", "note": Checkpoint::new(ORIGIN, 3, log.root(3)).sign(&other).expect("signs"),
        "vkeys": [vkey, other.vkey()],
        "expect": { "valid": true, "origin": ORIGIN, "size": 3, "root": b64(log.root(3)) },
    }));

    // Verifier keys.
    let (name, rest) = vkey.split_once('+').expect("a vkey");
    let (id, material) = rest.split_once('+').expect("a vkey");
    let mut key_bytes = STANDARD.decode(material).expect("own vkey decodes");
    let public = key_bytes.split_off(1);
    let mut vkeys = json!([
        { "name": "valid", "vkey": vkey, "expect": { "valid": true, "name": name, "key_id": id } },
        { "name": "two_parts", "vkey": format!("{name}+{id}"), "expect": { "valid": false, "error": "vkey_malformed" } },
        { "name": "four_parts", "vkey": format!("{vkey}+x"), "expect": { "valid": false, "error": "vkey_malformed" } },
        { "name": "short_key", "vkey": format!("{name}+{id}+{}", b64([[1u8].as_slice(), &public[..31]].concat())), "expect": { "valid": false, "error": "vkey_malformed" } },
        { "name": "ecdsa_type", "vkey": format!("{name}+{id}+{}", b64([[2u8].as_slice(), &public].concat())), "expect": { "valid": false, "error": "vkey_unsupported_type" } },
        { "name": "wrong_id", "vkey": format!("{name}+{:08x}+{material}", signer.key_id() ^ 0x10), "expect": { "valid": false, "error": "vkey_id_mismatch" } },
        { "name": "other_name", "vkey": format!("mandate.example/other+{id}+{material}"), "expect": { "valid": false, "error": "vkey_id_mismatch" } },
        { "name": "name_with_space", "vkey": format!("mandate example+{id}+{material}"), "expect": { "valid": false, "error": "note_key_name_invalid" } },
    ]);
    if id.bytes().any(|b| b.is_ascii_alphabetic()) {
        vkeys.as_array_mut().expect("an array").push(json!({
            "name": "upper_case_id",
            "vkey": format!("{name}+{}+{material}", id.to_uppercase()),
            "expect": { "valid": false, "error": "vkey_malformed" },
        }));
    }

    // Leaves.
    let leaf_at = |i: u64| log.leaf(i).to_vec();
    let mut leaves = Vec::new();
    for (name, index) in [
        ("token_issued", 0u64),
        ("token_issued_delegated", 5),
        ("record_created", 1),
        ("record_created_pending", 2),
        ("record_created_denied", 16),
        ("record_created_with_args", 11),
        ("record_created_pending_with_args", 12),
        ("record_created_denied_args", 46),
        ("record_completed", 3),
        ("record_rated", 4),
        ("token_revoked", 24),
    ] {
        let leaf = leaf_at(index);
        let entry: Value = serde_json::from_slice(&leaf).expect("a leaf is JSON");
        let mut case =
            json!({ "name": name, "leaf": b64(&leaf), "expect": { "ok": true, "entry": entry } });
        if let Some(args) = record_args(index) {
            case["args"] = args.value().clone();
        }
        leaves.push(case);
    }
    let text = String::from_utf8(leaf_at(3)).expect("a leaf is UTF-8");
    let mut not_ok = |name: &str, description: &str, leaf: String, code: &str| {
        leaves.push(json!({
            "name": name,
            "description": description,
            "leaf": b64(leaf.as_bytes()),
            "expect": { "ok": false, "error": code },
        }));
    };
    let reordered = {
        let value: serde_json::Map<String, Value> =
            serde_json::from_str(&text).expect("a leaf is JSON");
        let mut members: Vec<String> = value
            .iter()
            .map(|(k, v)| format!("{}:{}", Value::from(k.clone()), v))
            .collect();
        members.reverse();
        format!("{{{}}}", members.join(","))
    };
    not_ok(
        "reordered_members",
        "the members in reverse order",
        reordered,
        "leaf_not_canonical",
    );
    not_ok(
        "whitespace",
        "a space after each comma",
        text.replace(',', ", "),
        "leaf_not_canonical",
    );
    not_ok(
        "trailing_newline",
        "a newline after the object",
        format!("{text}\n"),
        "leaf_not_canonical",
    );
    not_ok(
        "null_member",
        "an optional member given as null",
        String::from_utf8(leaf_at(8)).expect("UTF-8").replacen(
            "\"result\":",
            "\"result_hash\":null,\"result\":",
            1,
        ),
        "leaf_not_canonical",
    );
    not_ok(
        "escaped_letter",
        "a letter written as a \\u escape",
        text.replace("\"record.completed\"", "\"record.\\u0063ompleted\""),
        "leaf_not_canonical",
    );
    not_ok(
        "unknown_kind",
        "a kind this version does not know",
        text.replace("record.completed", "approval.decided"),
        "leaf_malformed",
    );
    not_ok(
        "unknown_member",
        "a member no kind has",
        text.replacen('{', "{\"actor\":\"x\",", 1),
        "leaf_malformed",
    );
    not_ok(
        "member_of_another_kind",
        "a member of record.rated in record.completed",
        text.replacen('{', "{\"by\":\"key_00000000000000000000000000\",", 1),
        "leaf_malformed",
    );
    not_ok(
        "member_twice",
        "the kind given twice",
        text.replacen('{', "{\"kind\":\"record.completed\",", 1),
        "leaf_malformed",
    );
    not_ok(
        "jti_not_jth",
        "a token named by jti",
        String::from_utf8(leaf_at(24)).expect("UTF-8").replacen(
            "\"cause\":\"",
            "\"cause\":\"vat_root_",
            1,
        ),
        "leaf_malformed",
    );
    let with_args = String::from_utf8(leaf_at(11)).expect("UTF-8");
    let (_, hash) = with_args
        .split_once("\"args_hash\":\"sha256:")
        .expect("leaf 11 carries args_hash");
    let digits = &hash[..64];
    not_ok(
        "args_hash_upper_case",
        "args_hash in upper-case hex",
        with_args.replacen(digits, &digits.to_uppercase(), 1),
        "leaf_malformed",
    );
    not_ok(
        "args_hash_short",
        "args_hash one hex digit short",
        with_args.replacen(digits, &digits[1..], 1),
        "leaf_malformed",
    );
    not_ok(
        "args_hash_without_prefix",
        "args_hash without sha256:",
        with_args.replacen("\"args_hash\":\"sha256:", "\"args_hash\":\"", 1),
        "leaf_malformed",
    );
    not_ok(
        "not_json",
        "text",
        "record.completed".to_owned(),
        "leaf_malformed",
    );
    not_ok(
        "fraction",
        "spend_micros as a fraction",
        text.replace("\"spend_micros\":", "\"spend_micros\":0.5,\"x\":"),
        "leaf_malformed",
    );

    // One record's proof as GET /v1/vat/aar/{aar_id}/proof answers it:
    // the pending record created at 752, completed at 753, rated at 754.
    let record_note = note(1100);
    let event = |log: &mut MemoryLog, index: u64| {
        let leaf = log.leaf(index).to_vec();
        let entry = LogEntry::from_leaf(&leaf).expect("a vector leaf");
        json!({
            "kind": entry.event.kind(),
            "index": index,
            "leaf": b64(&leaf),
            "proof": proof_text(index, &log.inclusion(index, 1100), &record_note),
        })
    };
    let record_events: Vec<Value> = (752..=754).map(|i| event(&mut log, i)).collect();
    let aar_id = LogEntry::from_leaf(log.leaf(752))
        .expect("a vector leaf")
        .event
        .aar_id()
        .expect("a record event")
        .to_string();
    let response = |events: Vec<Value>| json!({ "aar_id": aar_id, "checkpoint": record_note, "events": events });
    let mut other_record = record_events.clone();
    other_record[1] = event(&mut log, 758);
    let mut tampered = record_events.clone();
    tampered[2]["leaf"] = json!(b64(log.leaf(759)));
    let mut wrong_kind = record_events.clone();
    wrong_kind[1]["kind"] = json!("record.rated");
    let mut wrong_index = record_events.clone();
    wrong_index[0]["index"] = json!(751);
    let mut another_checkpoint = record_events.clone();
    another_checkpoint[0]["proof"] = json!(proof_text(752, &log.inclusion(752, 1000), &note(1000)));
    let record_proofs = json!([
        { "name": "valid", "response": response(record_events.clone()), "expect": { "valid": true, "kinds": ["record.created", "record.completed", "record.rated"] } },
        { "name": "a_leaf_of_another_record", "response": response(other_record), "expect": { "valid": false, "error": "record_mismatch", "index": 1 } },
        { "name": "a_leaf_the_proof_does_not_cover", "response": response(tampered), "expect": { "valid": false, "error": "log_root_mismatch", "index": 2 } },
        { "name": "kind_differs_from_the_leaf", "response": response(wrong_kind), "expect": { "valid": false, "error": "record_kind_mismatch", "index": 1 } },
        { "name": "index_differs_from_the_proof", "response": response(wrong_index), "expect": { "valid": false, "error": "record_index_mismatch", "index": 0 } },
        { "name": "a_proof_against_another_checkpoint", "response": response(another_checkpoint), "expect": { "valid": false, "error": "record_checkpoint_mismatch", "index": 0 } },
        { "name": "no_events", "response": response(Vec::new()), "expect": { "valid": false, "error": "record_no_events" } },
    ]);

    // What a monitor sees: the log's checkpoints and consistency proofs,
    // and a fork's, all signed by the log's key.
    let monitor = json!({
        "log": {
            "checkpoints": { "257": note(257), "1000": note(1000), "1100": note(1100) },
            "consistency": {
                "257-1000": hashes(&log.consistency(257, 1000)),
                "257-1100": hashes(&log.consistency(257, 1100)),
                "1000-1100": hashes(&log.consistency(1000, 1100)),
            },
        },
        "fork": {
            "description": format!("the same log's first {FORK_AT} leaves, then others"),
            "checkpoints": { "1000": fork_notes[&1000], "1100": fork_notes[&1100] },
            "consistency": {
                "257-1000": hashes(&fork.consistency(257, 1000)),
                "257-1100": hashes(&fork.consistency(257, 1100)),
                "1000-1100": hashes(&fork.consistency(1000, 1100)),
            },
        },
    });

    json!({
        "description": "The record log (docs/log.md): RFC 6962 hashing, C2SP signed notes (Ed25519), tlog-checkpoint and tlog-proof@v1. `inclusion`: verify `proof` (a tlog-proof text) for `leaf` (standard base64) with the log's `vkey`, for `origin`; expect the checkpoint's size and root, or the error code. `consistency`: verify the proof between the two trees. `checkpoints`: open `note` with `vkeys`, for `origin` when given. `vkeys`: parse the verifier key. `leaves`: read the leaf as a log entry (RFC 8785 canonical JSON only); where a case gives `args`, the entry's `args_hash` is `sha256:` of their RFC 8785 canonical JSON. `record_proofs`: a record's proof as GET /v1/vat/aar/{aar_id}/proof answers it (checked by the SDK: every event verifies against the response's checkpoint and its leaf is of that record, of the kind and at the index given). `monitor`: the log's and a fork's checkpoints and consistency proofs, for a monitor's tests.",
        "generator": "cargo xtask vectors",
        "origin": ORIGIN,
        "key": { "seed": hex(&seed), "name": ORIGIN, "vkey": vkey },
        "other_vkey": other.vkey(),
        "size": LOG_SIZE,
        "root": b64(log.root(LOG_SIZE)),
        "fork_at": FORK_AT,
        "checkpoints_at": CHECKPOINT_SIZES,
        "inclusion": inclusion,
        "consistency": consistency,
        "checkpoints": checkpoint_cases,
        "vkeys": vkeys,
        "leaves": leaves,
        "record_proofs": record_proofs,
        "monitor": monitor,
    })
}

pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

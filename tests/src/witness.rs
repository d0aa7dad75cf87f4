//! `witness.json`: witnessed checkpoints. Witness keys and the cosignature
//! lines they make (C2SP tlog-cosignature, Ed25519 cosignature/v1), single
//! cosignatures that verify or not, witness policies that can be built or
//! not, checkpoints that meet a policy at a given time or not, and the
//! witness's add-checkpoint rule (C2SP tlog-witness) from a given state.

use std::collections::BTreeMap;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use mandate_core::tlog::{
    AddCheckpoint, Checkpoint, CosignedLink, Hash, NoteSigner, NoteVerifier, Refusal, Submission,
    TlogProof, WitnessPolicy, WitnessSigner, WitnessState, WitnessVerifier, WitnessedLogs,
    empty_root, verify_witnessed, verify_witnessed_inclusion,
};
use serde_json::{Value, json};

use crate::Rng;
use crate::log::{MemoryLog, ORIGIN, entries, hex};

/// The vectors' clock (2027-01-15), POSIX seconds.
const NOW: i64 = 1_800_000_000;
/// The maximum age of the policies' cosignatures.
const MAX_AGE: u64 = 3600;
/// Leaves of the vector log and of its fork.
const SIZE: u64 = 20;
/// The fork keeps the log's first `FORK_AT` leaves.
const FORK_AT: u64 = 5;

fn b64(bytes: impl AsRef<[u8]>) -> String {
    STANDARD.encode(bytes)
}

fn tree(prefix: &str, shared: u64) -> MemoryLog {
    let mut log = MemoryLog::new();
    for i in 0..SIZE {
        let label = if i < shared { "log" } else { prefix };
        log.push(format!("{label} leaf {i}").into_bytes());
    }
    log
}

fn state(value: Option<(u64, Hash)>) -> Value {
    match value {
        Some((size, root)) => json!({ "size": size, "root": b64(root) }),
        None => Value::Null,
    }
}

/// What the witness's rule answers for a body, as the vectors write it.
fn outcome(
    logs: &WitnessedLogs,
    body: &str,
    known: Option<WitnessState>,
    witness: &WitnessSigner,
) -> Value {
    let accepted = AddCheckpoint::parse(body)
        .map_err(Refusal::BadRequest)
        .and_then(|request| Submission::route(logs, &request))
        .and_then(|submission| submission.apply(known.as_ref()));
    match accepted {
        Ok(accepted) => json!({
            "accepted": true,
            "state": state(Some((accepted.state.size, accepted.state.root))),
            "cosignature": witness.cosign(&accepted.checkpoint, NOW).expect("a valid checkpoint"),
        }),
        Err(refusal) => {
            let mut expect = json!({
                "accepted": false,
                "status": refusal.status(),
                "refusal": refusal.code(),
            });
            if let Some(cause) = refusal.cause() {
                expect["error"] = json!(cause.code());
            }
            match &refusal {
                Refusal::Conflict { size } => expect["size"] = json!(size),
                Refusal::SplitView {
                    size,
                    known,
                    submitted,
                } => {
                    expect["size"] = json!(size);
                    expect["known"] = json!(b64(known));
                    expect["submitted"] = json!(b64(submitted));
                }
                Refusal::UnknownOrigin { origin } => expect["origin"] = json!(origin),
                _ => {}
            }
            expect
        }
    }
}

pub(crate) fn witness_vectors(rng: &mut Rng) -> Value {
    let log_seed: [u8; 32] = rng.bytes("witness vectors: log key");
    let log_key = NoteSigner::new(&log_seed, ORIGIN).expect("a valid key name");
    let impostor = NoteSigner::new(&rng.bytes("witness vectors: impostor log key"), ORIGIN)
        .expect("a valid key name");
    let log_verifier = NoteVerifier::parse(&log_key.vkey()).expect("own vkey");
    let seeds: Vec<[u8; 32]> = (1..=4)
        .map(|i| rng.bytes(&format!("witness vectors: witness {i}")))
        .collect();
    let witnesses: Vec<WitnessSigner> = seeds
        .iter()
        .enumerate()
        .map(|(i, seed)| {
            WitnessSigner::new(seed, &format!("witness{}.example/w", i + 1))
                .expect("a valid key name")
        })
        .collect();
    let (w1, w2, w3, outsider) = (&witnesses[0], &witnesses[1], &witnesses[2], &witnesses[3]);
    let vkey = |w: &WitnessSigner| w.vkey();

    let mut log = tree("log", SIZE);
    let mut fork = tree("fork", FORK_AT);
    let checkpoint = |log: &mut MemoryLog, size: u64| Checkpoint::new(ORIGIN, size, log.root(size));
    let signed = |log: &mut MemoryLog, size: u64| {
        checkpoint(log, size)
            .sign(&log_key)
            .expect("a valid checkpoint")
    };
    let head = checkpoint(&mut log, SIZE);
    let cosign = |w: &WitnessSigner, at: i64| w.cosign(&head, at).expect("a valid checkpoint");

    // Witness keys and the lines they make.
    let signing: Vec<Value> = [(0usize, NOW), (1, NOW - 1), (2, 0), (3, i64::MAX)]
        .iter()
        .map(|(i, at)| {
            json!({
                "witness": witnesses[*i].name(),
                "checkpoint": head.body(),
                "now": at,
                "expect": { "line": witnesses[*i].cosign(&head, *at).expect("a valid checkpoint") },
            })
        })
        .collect();

    // Single cosignature lines against one witness key.
    let line_of = |text: String| text.trim_end_matches('\n').to_owned();
    let good = line_of(cosign(w1, NOW));
    let raw = STANDARD
        .decode(good.rsplit_once(' ').expect("a signature line").1)
        .expect("base64");
    let with_bytes = |bytes: &[u8]| format!("\u{2014} {} {}", w1.name(), b64(bytes));
    let mut far_future = raw.clone();
    far_future[4] = 0x80;
    let mut flipped = raw.clone();
    flipped[40] ^= 1;
    let mut cosignature_cases = Vec::new();
    let mut line_case = |name: &str, description: &str, line: String, checkpoint: &Checkpoint| {
        let verifier = WitnessVerifier::parse(&w1.vkey()).expect("own vkey");
        let expect = match verifier.verify_line(checkpoint, &line) {
            Ok(timestamp) => json!({ "valid": true, "timestamp": timestamp }),
            Err(error) => json!({ "valid": false, "error": error.code() }),
        };
        cosignature_cases.push(json!({
            "name": name,
            "description": description,
            "checkpoint": checkpoint.body(),
            "vkey": w1.vkey(),
            "line": line,
            "expect": expect,
        }));
    };
    line_case(
        "valid",
        "a cosignature of the checkpoint",
        good.clone(),
        &head,
    );
    line_case(
        "valid_at_time_zero",
        "a cosignature with timestamp 0",
        line_of(cosign(w1, 0)),
        &head,
    );
    line_case(
        "other_checkpoint",
        "the cosignature of the tree of 20 leaves against the checkpoint of 7",
        good.clone(),
        &checkpoint(&mut log, 7),
    );
    line_case(
        "other_witness",
        "a line by another witness",
        line_of(cosign(w2, NOW)),
        &head,
    );
    line_case(
        "flipped_bit",
        "one bit of the signature flipped",
        with_bytes(&flipped),
        &head,
    );
    line_case(
        "no_timestamp",
        "the key id and the 64 signature bytes only",
        with_bytes(&[&raw[..4], &raw[12..]].concat()),
        &head,
    );
    line_case(
        "one_byte_long",
        "a byte after the signature",
        with_bytes(&[raw.as_slice(), &[0]].concat()),
        &head,
    );
    line_case(
        "timestamp_above_2_63",
        "the timestamp's top bit set (above 2^63 − 1)",
        with_bytes(&far_future),
        &head,
    );
    line_case(
        "log_signature_type",
        "a line under the witness's name signed as a plain signed-note Ed25519 signature",
        line_of(
            NoteSigner::new(&seeds[0], w1.name())
                .expect("a valid key name")
                .signature_line(&head.body())
                .expect("a valid text"),
        ),
        &head,
    );

    // Witness vkeys.
    let w1_vkey = w1.vkey();
    let (name, rest) = w1_vkey.split_once('+').expect("a vkey");
    let (id, material) = rest.split_once('+').expect("a vkey");
    let mut public = STANDARD.decode(material).expect("own vkey decodes");
    public[0] = 0x01;
    let as_note_type = format!("{name}+{id}+{}", b64(&public));
    let witness_vkeys: Vec<Value> = [
        ("valid", w1_vkey.clone()),
        ("log_key", log_key.vkey()),
        ("type_0x01", as_note_type),
        ("wrong_id", format!("{name}+00000000+{material}")),
        ("other_name", format!("witness9.example/w+{id}+{material}")),
        ("two_parts", format!("{name}+{id}")),
    ]
    .into_iter()
    .map(|(case, vkey)| {
        let expect = match WitnessVerifier::parse(&vkey) {
            Ok(key) => json!({ "valid": true, "name": key.name(), "key_id": format!("{:08x}", key.key_id()) }),
            Err(error) => json!({ "valid": false, "error": error.code() }),
        };
        json!({ "name": case, "vkey": vkey, "expect": expect })
    })
    .collect();

    // Policies, built or refused.
    let same_key = WitnessSigner::new(&seeds[0], "witness9.example/w").expect("a valid key name");
    let policy_cases: Vec<Value> = [
        (
            "two_of_three",
            vec![vkey(w1), vkey(w2), vkey(w3)],
            2,
            MAX_AGE,
        ),
        (
            "three_of_three",
            vec![vkey(w1), vkey(w2), vkey(w3)],
            3,
            MAX_AGE,
        ),
        ("threshold_zero", vec![vkey(w1), vkey(w2)], 0, MAX_AGE),
        (
            "threshold_above_witnesses",
            vec![vkey(w1), vkey(w2)],
            3,
            MAX_AGE,
        ),
        ("no_witnesses", vec![], 1, MAX_AGE),
        ("a_witness_twice", vec![vkey(w1), vkey(w1)], 1, MAX_AGE),
        (
            "one_key_two_names",
            vec![vkey(w1), vkey(&same_key)],
            1,
            MAX_AGE,
        ),
        ("max_age_zero", vec![vkey(w1)], 1, 0),
    ]
    .into_iter()
    .map(|(case, keys, threshold, max_age)| {
        let parsed = keys
            .iter()
            .map(|k| WitnessVerifier::parse(k).expect("vector vkeys parse"))
            .collect();
        let expect = match WitnessPolicy::new(parsed, threshold, max_age) {
            Ok(_) => json!({ "valid": true }),
            Err(error) => json!({ "valid": false, "error": error.code() }),
        };
        json!({
            "name": case,
            "policy": { "witnesses": keys, "threshold": threshold, "max_age_seconds": max_age },
            "expect": expect,
        })
    })
    .collect();

    // Checkpoints against a policy, at NOW.
    let policy_json = |keys: Vec<String>, threshold: usize| json!({ "witnesses": keys, "threshold": threshold, "max_age_seconds": MAX_AGE });
    let two_of_three = policy_json(vec![vkey(w1), vkey(w2), vkey(w3)], 2);
    let base = signed(&mut log, SIZE);
    let with = |lines: &[String]| format!("{base}{}", lines.concat());
    let future = i64::try_from(MAX_AGE).expect("small");
    let mut witnessed = Vec::new();
    let mut witnessed_case =
        |name: &str, description: &str, note: String, origin: &str, policy: &Value| {
            let keys = policy["witnesses"]
                .as_array()
                .expect("keys")
                .iter()
                .map(|k| WitnessVerifier::parse(k.as_str().expect("a vkey")).expect("parses"))
                .collect();
            let built = WitnessPolicy::new(
                keys,
                policy["threshold"].as_u64().expect("a threshold") as usize,
                MAX_AGE,
            )
            .expect("vector policies are valid");
            let expect = match verify_witnessed(
                &note,
                Some(origin),
                std::slice::from_ref(&log_verifier),
                &built,
                NOW,
            ) {
                Ok(w) => json!({
                    "valid": true,
                    "size": w.checkpoint.size,
                    "root": b64(w.checkpoint.root),
                    "cosigned_by": w.cosigned_by.iter()
                        .map(|c| json!({ "name": c.name, "timestamp": c.timestamp }))
                        .collect::<Vec<_>>(),
                }),
                Err(error) => {
                    let mut e = json!({ "valid": false, "error": error.code() });
                    if let mandate_core::LogError::CosignaturesInsufficient { fresh, threshold } =
                        error
                    {
                        e["fresh"] = json!(fresh);
                        e["threshold"] = json!(threshold);
                    }
                    e
                }
            };
            witnessed.push(json!({
                "name": name,
                "description": description,
                "note": note,
                "origin": origin,
                "policy": policy,
                "expect": expect,
            }));
        };
    witnessed_case(
        "two_of_three",
        "cosigned by the first and third witnesses, now and 10 s ago",
        with(&[cosign(w1, NOW), cosign(w3, NOW - 10)]),
        ORIGIN,
        &two_of_three,
    );
    witnessed_case(
        "three_of_three",
        "cosigned by every witness",
        with(&[cosign(w2, NOW), cosign(w1, NOW), cosign(w3, NOW)]),
        ORIGIN,
        &two_of_three,
    );
    witnessed_case(
        "one_of_two_needed",
        "cosigned by one witness only",
        with(&[cosign(w1, NOW)]),
        ORIGIN,
        &two_of_three,
    );
    witnessed_case(
        "not_cosigned",
        "the log's signature alone",
        base.clone(),
        ORIGIN,
        &two_of_three,
    );
    witnessed_case(
        "at_the_maximum_age",
        "one cosignature exactly max_age_seconds old",
        with(&[cosign(w1, NOW - future), cosign(w2, NOW)]),
        ORIGIN,
        &two_of_three,
    );
    witnessed_case(
        "one_too_old",
        "one cosignature a second older than max_age_seconds",
        with(&[cosign(w1, NOW - future - 1), cosign(w2, NOW)]),
        ORIGIN,
        &two_of_three,
    );
    witnessed_case(
        "future_within_skew",
        "one cosignature 60 s in the future",
        with(&[cosign(w1, NOW + 60), cosign(w2, NOW)]),
        ORIGIN,
        &two_of_three,
    );
    witnessed_case(
        "future_beyond_skew",
        "one cosignature 61 s in the future",
        with(&[cosign(w1, NOW + 61), cosign(w2, NOW)]),
        ORIGIN,
        &two_of_three,
    );
    witnessed_case(
        "outsider_ignored",
        "a fresh cosignature by a witness outside the policy does not count",
        with(&[cosign(w1, NOW), cosign(outsider, NOW)]),
        ORIGIN,
        &two_of_three,
    );
    witnessed_case(
        "witness_twice",
        "the same witness's cosignature twice",
        with(&[cosign(w1, NOW), cosign(w1, NOW - 5)]),
        ORIGIN,
        &two_of_three,
    );
    witnessed_case(
        "invalid_cosignature",
        "two fresh cosignatures and a policy witness's cosignature of another checkpoint",
        with(&[
            cosign(w1, NOW),
            cosign(w2, NOW),
            w3.cosign(&checkpoint(&mut log, 7), NOW)
                .expect("a valid checkpoint"),
        ]),
        ORIGIN,
        &two_of_three,
    );
    witnessed_case(
        "malformed_cosignature",
        "a policy witness's line without its timestamp",
        with(&[
            cosign(w1, NOW),
            cosign(w2, NOW),
            format!("{}\n", {
                let line = line_of(cosign(w3, NOW));
                let bytes = STANDARD
                    .decode(line.rsplit_once(' ').expect("a line").1)
                    .expect("base64");
                format!(
                    "\u{2014} {} {}",
                    w3.name(),
                    b64([&bytes[..4], &bytes[12..]].concat())
                )
            }),
        ]),
        ORIGIN,
        &two_of_three,
    );
    witnessed_case(
        "cosigned_but_not_by_the_log",
        "two fresh cosignatures on a checkpoint the impostor key signed",
        format!(
            "{}{}{}",
            head.sign(&impostor).expect("a valid checkpoint"),
            cosign(w1, NOW),
            cosign(w2, NOW)
        ),
        ORIGIN,
        &two_of_three,
    );
    witnessed_case(
        "other_origin",
        "a policy met, for another origin than the one expected",
        with(&[cosign(w1, NOW), cosign(w2, NOW)]),
        "mandate.example/other-log",
        &two_of_three,
    );
    witnessed_case(
        "one_of_one",
        "a policy of one witness",
        with(&[cosign(w2, NOW), cosign(outsider, NOW)]),
        ORIGIN,
        &policy_json(vec![vkey(w2)], 1),
    );

    // The witness's rule, witness 1 witnessing the vector log.
    let logs: WitnessedLogs = BTreeMap::from([(ORIGIN.to_owned(), vec![log_verifier.clone()])]);
    let at = |log: &mut MemoryLog, size: u64| {
        Some(WitnessState {
            size,
            root: log.root(size),
        })
    };
    let body = |log: &mut MemoryLog, old: u64, new: u64| {
        AddCheckpoint {
            old_size: old,
            proof: if old == 0 {
                Vec::new()
            } else {
                log.consistency(old, new)
            },
            checkpoint: signed(log, new),
        }
        .to_text()
    };
    let note_body = |old: u64, note: String| {
        AddCheckpoint {
            old_size: old,
            proof: Vec::new(),
            checkpoint: note,
        }
        .to_text()
    };
    let mut rule = Vec::new();
    let mut rule_case =
        |name: &str, description: &str, known: Option<WitnessState>, body: String| {
            rule.push(json!({
                "name": name,
                "description": description,
                "state": state(known.map(|s| (s.size, s.root))),
                "body": body,
                "expect": outcome(&logs, &body, known, w1),
            }));
        };
    rule_case(
        "first_checkpoint",
        "a witness that never cosigned, old size 0",
        None,
        body(&mut log, 0, 7),
    );
    rule_case(
        "extends",
        "from the witness's 7 to 20 with the consistency proof",
        at(&mut log, 7),
        body(&mut log, 7, 20),
    );
    rule_case(
        "same_checkpoint_again",
        "the checkpoint the witness cosigned last, with an empty proof",
        at(&mut log, 20),
        body(&mut log, 20, 20),
    );
    rule_case(
        "empty_log",
        "size 0 with the empty tree's root",
        None,
        note_body(
            0,
            Checkpoint::new(ORIGIN, 0, empty_root())
                .sign(&log_key)
                .expect("a valid checkpoint"),
        ),
    );
    rule_case(
        "stale_old_size",
        "old size 0 to a witness at 7",
        at(&mut log, 7),
        body(&mut log, 0, 20),
    );
    rule_case(
        "old_size_the_witness_never_had",
        "old size 7 to a witness that never cosigned",
        None,
        body(&mut log, 7, 20),
    );
    rule_case(
        "smaller_with_the_witness_size",
        "a checkpoint of 7 with old size 20, the witness's",
        at(&mut log, 20),
        note_body(20, signed(&mut log, 7)),
    );
    rule_case(
        "smaller_with_another_old_size",
        "a checkpoint of 7 with old size 5 to a witness at 20",
        at(&mut log, 20),
        body(&mut log, 5, 7),
    );
    rule_case(
        "split_view",
        "the fork's checkpoint of 20 to a witness that cosigned the log's 20",
        at(&mut log, 20),
        body(&mut fork, 20, 20),
    );
    rule_case(
        "fork_after_the_witness_size",
        "the fork (parted at 5) from 7 to 20, to a witness at the log's 7",
        at(&mut log, 7),
        body(&mut fork, 7, 20),
    );
    {
        let mut request = AddCheckpoint::parse(&body(&mut log, 7, 20)).expect("parses");
        request.proof.pop();
        rule_case(
            "proof_one_hash_short",
            "the proof from 7 to 20 without its last hash",
            at(&mut log, 7),
            request.to_text(),
        );
        let mut request = AddCheckpoint::parse(&body(&mut log, 0, 7)).expect("parses");
        request.proof.push(log.root(3));
        rule_case(
            "proof_from_empty",
            "a hash given with old size 0",
            None,
            request.to_text(),
        );
    }
    rule_case(
        "size_zero_other_root",
        "size 0 with a root other than the empty tree's",
        None,
        note_body(
            0,
            Checkpoint::new(ORIGIN, 0, log.root(1))
                .sign(&log_key)
                .expect("a valid checkpoint"),
        ),
    );
    rule_case(
        "unknown_origin",
        "a checkpoint of a log the witness does not witness",
        None,
        note_body(
            0,
            Checkpoint::new("mandate.example/other-log", 7, log.root(7))
                .sign(&log_key)
                .expect("a valid checkpoint"),
        ),
    );
    rule_case(
        "impostor_key",
        "the checkpoint signed by another key under the log's key name",
        None,
        note_body(
            0,
            checkpoint(&mut log, 7)
                .sign(&impostor)
                .expect("a valid checkpoint"),
        ),
    );
    rule_case(
        "signature_invalid",
        "the size changed under the log's signature",
        None,
        note_body(0, signed(&mut log, 7).replacen("\n7\n", "\n8\n", 1)),
    );
    rule_case(
        "old_size_leading_zero",
        "`old 07`",
        at(&mut log, 7),
        body(&mut log, 7, 20).replacen("old 7", "old 07", 1),
    );
    rule_case(
        "sixty_four_proof_lines",
        "64 consistency proof lines",
        None,
        format!(
            "old 1\n{}\n{}",
            format!("{}\n", b64(log.root(1))).repeat(64),
            signed(&mut log, 7)
        ),
    );
    rule_case(
        "not_a_checkpoint",
        "a note the log signed that is not a checkpoint",
        None,
        note_body(0, log_key.sign("not a checkpoint\n").expect("a valid text")),
    );

    let proofs = witnessed_proof_vectors(
        rng,
        &log_key,
        &impostor,
        std::slice::from_ref(&log_verifier),
        [w1, w2, w3],
        two_of_three.clone(),
    );

    json!({
        "description": "Witnessed checkpoints (docs/log.md, Cosignatures): C2SP tlog-cosignature (Ed25519 cosignature/v1, key type 0x04) and tlog-witness add-checkpoint. `signing`: the cosignature line `witness` (its seed in `witnesses`) makes for `checkpoint` (a note text) at `now`, byte for byte. `cosignatures`: verify `line` against the witness `vkey` for `checkpoint`; expect its timestamp or the error code. `witness_vkeys`: parse a witness vkey. `policies`: build a policy; expect valid or the error code. `witnessed`: verify `note` with the log's `log.vkey` for `origin` under `policy` at `now`; expect the counted cosignatures (witness name and timestamp, in note order) or the error code (with the fresh count and the threshold for cosignatures_insufficient). `witness`: the witness's rule for witness 1 of `witnesses`, witnessing `witness.logs`: from `state` (the size and root it cosigned last, null when none), the add-checkpoint `body` is accepted (the new state and the cosignature line at `now`) or refused (the HTTP status, the refusal code, the log error under it, and for 409 the witness's size). `witnessed_proofs`: a record's inclusion proof (`proof`, a tlog-proof@v1 text, for the leaf `leaf` in base64) held to `witnessed_proofs.policy` at `now`, with `cosigned` (null, or an older cosigned checkpoint and the consistency proof from it to the proof's checkpoint): expect the proof's checkpoint, whether the policy was met through the link, and the checkpoint that met it, or the error code.",
        "generator": "cargo xtask vectors",
        "now": NOW,
        "log": { "origin": ORIGIN, "seed": hex(&log_seed), "vkey": log_key.vkey() },
        "witnesses": witnesses.iter().zip(&seeds).map(|(w, seed)| json!({
            "name": w.name(),
            "seed": hex(seed),
            "vkey": w.vkey(),
        })).collect::<Vec<_>>(),
        "max_age_seconds": MAX_AGE,
        "future_skew_seconds": mandate_core::limits::COSIGNATURE_FUTURE_SKEW_SECONDS,
        "signing": signing,
        "cosignatures": cosignature_cases,
        "witness_vkeys": witness_vkeys,
        "policies": policy_cases,
        "witnessed": witnessed,
        "witness": {
            "logs": { ORIGIN: [log_key.vkey()] },
            "cases": rule,
        },
        "witnessed_proofs": proofs,
    })
}

/// Leaves of the witnessed-proof log and of its fork, which keeps the
/// first [`PROOF_FORK_AT`].
const PROOF_SIZE: u64 = 14;
const PROOF_FORK_AT: u64 = 10;
/// The size of the log's last cosigned checkpoint before the fork.
const COSIGNED_AT: u64 = 8;

/// `witnessed_proofs`: inclusion proofs under a witness policy, directly
/// or through a link to an older cosigned checkpoint.
fn witnessed_proof_vectors(
    rng: &mut Rng,
    log_key: &NoteSigner,
    impostor: &NoteSigner,
    log_keys: &[NoteVerifier],
    [w1, w2, w3]: [&WitnessSigner; 3],
    policy: Value,
) -> Value {
    let mut log = MemoryLog::new();
    let mut fork = MemoryLog::new();
    let shared = entries(rng, "witnessed proof entries", PROOF_SIZE, 0);
    let forked = entries(
        rng,
        "witnessed proof fork",
        PROOF_SIZE - PROOF_FORK_AT,
        PROOF_FORK_AT,
    );
    for (i, entry) in shared.iter().enumerate() {
        let leaf = entry.to_leaf().expect("vector entries follow the rules");
        if (i as u64) < PROOF_FORK_AT {
            fork.push(leaf.clone());
        }
        log.push(leaf);
    }
    for entry in &forked {
        fork.push(entry.to_leaf().expect("vector entries follow the rules"));
    }
    let built = WitnessPolicy::new(
        policy["witnesses"]
            .as_array()
            .expect("keys")
            .iter()
            .map(|k| WitnessVerifier::parse(k.as_str().expect("a vkey")).expect("parses"))
            .collect(),
        2,
        MAX_AGE,
    )
    .expect("a valid policy");
    let head = |log: &mut MemoryLog, size: u64| Checkpoint::new(ORIGIN, size, log.root(size));
    let signed = |log: &mut MemoryLog, size: u64, key: &NoteSigner| {
        head(log, size).sign(key).expect("a valid checkpoint")
    };
    // The note of the log's checkpoint of `size`, cosigned by `by` at `at`.
    let cosigned = |log: &mut MemoryLog, size: u64, by: &[&WitnessSigner], at: i64| {
        let checkpoint = head(log, size);
        let mut note = signed(log, size, log_key);
        for w in by {
            note.push_str(&w.cosign(&checkpoint, at).expect("a valid checkpoint"));
        }
        note
    };
    let proof = |log: &mut MemoryLog, index: u64, note: String| {
        TlogProof {
            extra: None,
            index,
            path: log.inclusion(index, note_size(&note)),
            checkpoint: note,
        }
        .to_text()
    };
    let link = |note: String, consistency: Vec<Hash>| Some((note, consistency));
    let index = 11;
    let leaf = log.leaf(index).to_vec();
    let fork_leaf = fork.leaf(index).to_vec();
    let stale = NOW - i64::try_from(MAX_AGE).expect("small") - 1;
    let latest = signed(&mut log, PROOF_SIZE, log_key);
    let fork_latest = signed(&mut fork, PROOF_SIZE, log_key);
    let c8 = cosigned(&mut log, COSIGNED_AT, &[w1, w2], NOW - 30);
    let c12 = cosigned(&mut log, 12, &[w1, w3], NOW);
    let c14 = cosigned(&mut log, PROOF_SIZE, &[w2, w3], NOW);
    let latest_12 = signed(&mut log, 12, log_key);
    let wrong_cosignature = {
        let other = head(&mut log, 12);
        format!(
            "{latest}{}",
            w3.cosign(&other, NOW).expect("a valid checkpoint")
        )
    };
    let to_14 = |log: &mut MemoryLog, old: u64| log.consistency(old, PROOF_SIZE);

    let mut cases = Vec::new();
    let mut case = |name: &str,
                    description: &str,
                    proof: String,
                    leaf: &[u8],
                    cosigned: Option<(String, Vec<Hash>)>,
                    now: i64| {
        let link = cosigned
            .as_ref()
            .map(|(checkpoint, consistency)| CosignedLink {
                checkpoint: checkpoint.clone(),
                consistency: consistency.clone(),
            });
        let expect = match verify_witnessed_inclusion(
            &proof,
            leaf,
            Some(ORIGIN),
            log_keys,
            link.as_ref(),
            &built,
            now,
        ) {
            Ok(w) => json!({
                "valid": true,
                "size": w.checkpoint.size,
                "root": b64(w.checkpoint.root),
                "linked": w.linked,
                "witnessed": {
                    "size": w.witnessed.checkpoint.size,
                    "root": b64(w.witnessed.checkpoint.root),
                    "cosigned_by": w.witnessed.cosigned_by.iter()
                        .map(|c| json!({ "name": c.name, "timestamp": c.timestamp }))
                        .collect::<Vec<_>>(),
                },
            }),
            Err(error) => {
                let mut e = json!({ "valid": false, "error": error.code() });
                if let mandate_core::LogError::CosignaturesInsufficient { fresh, threshold } = error
                {
                    e["fresh"] = json!(fresh);
                    e["threshold"] = json!(threshold);
                }
                e
            }
        };
        cases.push(json!({
            "name": name,
            "description": description,
            "proof": proof,
            "leaf": b64(leaf),
            "cosigned": cosigned.map(|(checkpoint, consistency)| json!({
                "checkpoint": checkpoint,
                "consistency": consistency.iter().map(b64).collect::<Vec<_>>(),
            })),
            "now": now,
            "expect": expect,
        }));
    };
    case(
        "cosigned_itself",
        "the proof's checkpoint of 14 carries two fresh cosignatures",
        proof(&mut log, index, c14.clone()),
        &leaf,
        None,
        NOW,
    );
    case(
        "cosigned_itself_link_ignored",
        "the proof's checkpoint meets the policy: a broken link is not looked at",
        proof(&mut log, index, c14.clone()),
        &leaf,
        link(c8.clone(), Vec::new()),
        NOW,
    );
    case(
        "linked",
        "the newest checkpoint (14) is not cosigned; the cosigned 8 and the proof from 8 to 14 are carried",
        proof(&mut log, index, latest.clone()),
        &leaf,
        link(c8.clone(), to_14(&mut log, COSIGNED_AT)),
        NOW,
    );
    case(
        "linked_same_size",
        "the link is the proof's own tree of 14, cosigned, with an empty consistency proof",
        proof(&mut log, index, latest.clone()),
        &leaf,
        link(c14.clone(), Vec::new()),
        NOW,
    );
    case(
        "not_cosigned_no_link",
        "the newest checkpoint, signed by the log only, and no link",
        proof(&mut log, index, latest.clone()),
        &leaf,
        None,
        NOW,
    );
    case(
        "link_stale",
        "the linked checkpoint's cosignatures are older than the policy's maximum age",
        proof(&mut log, index, latest.clone()),
        &leaf,
        link(
            cosigned(&mut log, COSIGNED_AT, &[w1, w2], stale),
            to_14(&mut log, COSIGNED_AT),
        ),
        NOW,
    );
    case(
        "link_one_cosignature",
        "the linked checkpoint is cosigned by one witness of the two needed",
        proof(&mut log, index, latest.clone()),
        &leaf,
        link(
            cosigned(&mut log, COSIGNED_AT, &[w3], NOW),
            to_14(&mut log, COSIGNED_AT),
        ),
        NOW,
    );
    case(
        "link_not_signed_by_the_log",
        "the linked checkpoint of 8 is cosigned but signed by another key under the log's name",
        proof(&mut log, index, latest.clone()),
        &leaf,
        link(
            {
                let checkpoint = head(&mut log, COSIGNED_AT);
                format!(
                    "{}{}{}",
                    checkpoint.sign(impostor).expect("a valid checkpoint"),
                    w1.cosign(&checkpoint, NOW).expect("a valid checkpoint"),
                    w2.cosign(&checkpoint, NOW).expect("a valid checkpoint"),
                )
            },
            to_14(&mut log, COSIGNED_AT),
        ),
        NOW,
    );
    case(
        "link_larger",
        "the proof leads to the checkpoint of 12; the link is the cosigned 14",
        proof(&mut log, index, latest_12),
        &leaf,
        link(c14.clone(), Vec::new()),
        NOW,
    );
    case(
        "link_consistency_tampered",
        "the consistency proof from 8 to 14 with one hash changed",
        proof(&mut log, index, latest.clone()),
        &leaf,
        link(c8.clone(), {
            let mut hashes = to_14(&mut log, COSIGNED_AT);
            hashes[0][0] ^= 1;
            hashes
        }),
        NOW,
    );
    case(
        "link_consistency_missing",
        "the cosigned 8 without the consistency proof to 14",
        proof(&mut log, index, latest.clone()),
        &leaf,
        link(c8.clone(), Vec::new()),
        NOW,
    );
    case(
        "split_view",
        "a proof in the fork's checkpoint of 14, linked to the log's cosigned 14: same size, other root",
        proof(&mut fork, index, fork_latest.clone()),
        &fork_leaf,
        link(c14.clone(), Vec::new()),
        NOW,
    );
    case(
        "fork_after_the_cosigned_size",
        "a proof in the fork (parted at 10), linked to the log's cosigned 12 with the log's proof from 12 to 14",
        proof(&mut fork, index, fork_latest.clone()),
        &fork_leaf,
        link(c12.clone(), to_14(&mut log, 12)),
        NOW,
    );
    case(
        "fork_extending_the_last_cosigned",
        "a proof in the fork (parted at 10), linked to the cosigned 8 it extends: accepted while the 8's cosignatures are fresh (docs/log.md)",
        proof(&mut fork, index, fork_latest.clone()),
        &fork_leaf,
        link(c8.clone(), to_14(&mut fork, COSIGNED_AT)),
        NOW,
    );
    case(
        "fork_extending_the_last_cosigned_later",
        "the same, once the 8's cosignatures are older than the maximum age: no witness cosigns the fork, so it is refused",
        proof(&mut fork, index, fork_latest.clone()),
        &fork_leaf,
        link(c8.clone(), to_14(&mut fork, COSIGNED_AT)),
        NOW + i64::try_from(MAX_AGE).expect("small"),
    );
    case(
        "invalid_cosignature_on_the_proof",
        "the proof's checkpoint carries a policy witness's cosignature of another checkpoint; the link is good",
        proof(&mut log, index, wrong_cosignature),
        &leaf,
        link(c8.clone(), to_14(&mut log, COSIGNED_AT)),
        NOW,
    );
    case(
        "other_leaf",
        "the leaf of index 11 with the path of index 12",
        TlogProof {
            extra: None,
            index: 12,
            path: log.inclusion(12, PROOF_SIZE),
            checkpoint: c14.clone(),
        }
        .to_text(),
        &leaf,
        None,
        NOW,
    );
    json!({ "policy": policy, "cases": cases })
}

/// The size line of a checkpoint note.
fn note_size(note: &str) -> u64 {
    note.lines()
        .nth(1)
        .and_then(|size| size.parse().ok())
        .expect("a checkpoint note")
}

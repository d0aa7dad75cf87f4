//! `mandate witness serve`, the real binary: every answer of C2SP
//! tlog-witness `add-checkpoint`, requests for one log checked one at a
//! time, the state kept across restarts and across `kill -9` (after an
//! answer and in the middle of requests), and cosignatures checked by
//! core's verifier and by the `signed_note` crate (Cloudflare's, not ours).

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use mandate_core::limits::MAX_ADD_CHECKPOINT_BYTES;
use mandate_core::tlog::{
    AddCheckpoint, Checkpoint, Frontier, Hash, NoteSigner, NoteVerifier, TileReader, WitnessPolicy,
    WitnessVerifier, consistency_proof, empty_root, leaf_hash, tree_root, verify_witnessed,
};
use reqwest::StatusCode;

use crate::process::Server;

const ORIGIN: &str = "log.example/v1/log";
const WITNESS: &str = "witness.example/w1";

/// A log in memory, as its tiles.
struct Tree {
    tiles: BTreeMap<u8, Vec<Hash>>,
    frontier: Frontier,
}

impl Tree {
    fn new(prefix: &str, count: usize) -> Tree {
        let mut tree = Tree {
            tiles: BTreeMap::new(),
            frontier: Frontier::new(),
        };
        for i in 0..count {
            let hash = leaf_hash(format!("{prefix}{i}").as_bytes());
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

    /// The add-checkpoint body from `old` to `new`, the checkpoint signed
    /// by `signer` for `origin`.
    fn body_for(&mut self, origin: &str, signer: &NoteSigner, old: u64, new: u64) -> String {
        let proof = if old == 0 {
            Vec::new()
        } else {
            consistency_proof(self, old, new).unwrap()
        };
        let root = if new == 0 {
            empty_root()
        } else {
            self.root(new)
        };
        AddCheckpoint {
            old_size: old,
            proof,
            checkpoint: Checkpoint::new(origin, new, root).sign(signer).unwrap(),
        }
        .to_text()
    }

    fn body(&mut self, old: u64, new: u64) -> String {
        self.body_for(ORIGIN, &log_signer(), old, new)
    }
}

impl TileReader for Tree {
    type Error = Infallible;

    fn tile(&mut self, level: u8, index: u64, width: u16) -> Result<Vec<Hash>, Infallible> {
        let start = usize::try_from(index).unwrap() * 256;
        Ok(self.tiles[&level][start..start + usize::from(width)].to_vec())
    }
}

fn log_signer() -> NoteSigner {
    NoteSigner::new(&[3; 32], ORIGIN).unwrap()
}

/// A witness's folder and configuration, witnessing [`ORIGIN`].
fn witness_folder(dir: &Path) -> (PathBuf, PathBuf) {
    let data = dir.join("witness");
    let config = dir.join("witness.toml");
    std::fs::write(
        &config,
        format!(
            "[witness]\nname = \"{WITNESS}\"\n\n[[witness.log]]\norigin = \"{ORIGIN}\"\n\
             vkeys = [\"{}\"]\n",
            log_signer().vkey()
        ),
    )
    .unwrap();
    (data, config)
}

struct Answer {
    status: StatusCode,
    content_type: String,
    body: String,
}

async fn post(server: &Server, body: impl Into<reqwest::Body>) -> Answer {
    let response = server
        .client
        .post(server.url("/add-checkpoint"))
        .body(body)
        .send()
        .await
        .unwrap();
    let status = response.status();
    let content_type = response
        .headers()
        .get("content-type")
        .map(|v| v.to_str().unwrap().to_owned())
        .unwrap_or_default();
    Answer {
        status,
        content_type,
        body: response.text().await.unwrap(),
    }
}

async fn get(server: &Server, path: &str) -> (StatusCode, String) {
    let response = server.client.get(server.url(path)).send().await.unwrap();
    (response.status(), response.text().await.unwrap())
}

/// Asserts a 200 and returns the cosignature line.
fn cosigned(answer: Answer) -> String {
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.body);
    assert!(
        answer.body.starts_with(&format!("\u{2014} {WITNESS} ")) && answer.body.ends_with('\n'),
        "{}",
        answer.body
    );
    assert_eq!(answer.body.lines().count(), 1);
    answer.body
}

fn refused(answer: &Answer, status: StatusCode, code: &str) {
    assert_eq!(answer.status, status, "{}", answer.body);
    assert!(
        answer.body.starts_with(&format!("{code}: ")),
        "{}",
        answer.body
    );
    assert!(answer.content_type.starts_with("text/plain"));
}

fn conflict(answer: &Answer, size: u64) {
    assert_eq!(answer.status, StatusCode::CONFLICT, "{}", answer.body);
    assert_eq!(answer.content_type, "text/x.tlog.size");
    assert_eq!(answer.body, format!("{size}\n"));
}

/// Checks `note` (a checkpoint with the witness's cosignature) with core's
/// verifier under a 1-of-1 policy of the witness; returns its checkpoint.
fn witnessed(note: &str, vkey: &str) -> Checkpoint {
    let policy = WitnessPolicy::new(vec![WitnessVerifier::parse(vkey).unwrap()], 1, 600).unwrap();
    let log_key = NoteVerifier::parse(&log_signer().vkey()).unwrap();
    verify_witnessed(
        note,
        Some(ORIGIN),
        &[log_key],
        &policy,
        mandate_host::clock::now_s(),
    )
    .unwrap()
    .checkpoint
}

/// The checkpoint note of a request body.
fn note_of(body: &str) -> &str {
    body.split_once("\n\n").unwrap().1
}

/// Checks a cosigned checkpoint with the `signed_note` crate: it verifies
/// the log's signature and passes the cosignature over as an unknown key,
/// with the id it computes itself for type 0x04 and the witness's public
/// key; that line's last 64 bytes verify, with its Ed25519 verifier, over
/// the message tlog-cosignature writes out.
fn signed_note_agrees(note: &str, vkey: &str) {
    use signed_note::{Note, StandardVerifier, Verifier as _, VerifierList, key_id};
    let public: [u8; 32] = STANDARD
        .decode(vkey.splitn(3, '+').nth(2).unwrap())
        .unwrap()[1..]
        .try_into()
        .unwrap();
    let parsed = Note::from_bytes(note.as_bytes()).unwrap();
    let log_key = StandardVerifier::new(&log_signer().vkey()).unwrap();
    let (verified, unverified) = parsed
        .verify(&VerifierList::new(vec![Box::new(log_key)]))
        .unwrap();
    assert_eq!(verified.len(), 1);
    assert_eq!(unverified.len(), 1);
    let cosignature = &unverified[0];
    assert_eq!(cosignature.name(), WITNESS);
    assert_eq!(
        cosignature.id(),
        key_id(WITNESS, &[[0x04u8].as_slice(), &public].concat())
    );
    let bytes = cosignature.signature();
    let timestamp = u64::from_be_bytes(bytes[..8].try_into().unwrap());
    let mut message = format!("cosignature/v1\ntime {timestamp}\n").into_bytes();
    message.extend_from_slice(parsed.text());
    let key = ed25519_dalek::VerifyingKey::from_bytes(&public).unwrap();
    let plain = signed_note::new_ed25519_verifier_key(WITNESS, &key);
    assert!(
        StandardVerifier::new(&plain)
            .unwrap()
            .verify(&message, &bytes[8..])
    );
}

fn vkey_of(server: &Server) -> String {
    let line = server
        .banner
        .iter()
        .find_map(|line| line.strip_prefix("witness "))
        .unwrap();
    line.split(' ').next().unwrap().to_owned()
}

#[tokio::test]
async fn add_checkpoint_answers_as_tlog_witness_says() {
    let dir = tempfile::tempdir().unwrap();
    let (data, config) = witness_folder(dir.path());
    let server = Server::witness(&data, &config);
    let vkey = vkey_of(&server);
    assert_eq!(
        get(&server, "/vkey").await,
        (StatusCode::OK, format!("{vkey}\n"))
    );
    assert!(vkey.starts_with(&format!("{WITNESS}+")));
    let mode = std::os::unix::fs::PermissionsExt::mode(
        &std::fs::metadata(data.join("witness.key"))
            .unwrap()
            .permissions(),
    );
    assert_eq!(mode & 0o777, 0o600);
    let mut log = Tree::new("leaf", 40);
    // Nothing cosigned yet.
    let (status, _) = get(&server, &format!("/checkpoint/{ORIGIN}")).await;
    assert_eq!(status, StatusCode::NOT_FOUND);

    // The first checkpoint, from size 0; its cosignature verifies with
    // core and with signed_note.
    let first = log.body(0, 5);
    let line = cosigned(post(&server, first.clone()).await);
    let note = format!("{}{line}", note_of(&first));
    assert_eq!(witnessed(&note, &vkey).size, 5);
    signed_note_agrees(&note, &vkey);
    // An extension, with its consistency proof.
    let line = cosigned(post(&server, log.body(5, 12)).await);
    let read = get(&server, &format!("/checkpoint/{ORIGIN}")).await;
    assert_eq!(read.0, StatusCode::OK);
    assert!(read.1.ends_with(&line));
    let latest = witnessed(&read.1, &vkey);
    assert_eq!((latest.size, latest.root), (12, log.root(12)));
    signed_note_agrees(&read.1, &vkey);
    // The same checkpoint again is cosigned again.
    cosigned(post(&server, log.body(12, 12)).await);

    // 409: the log thinks the witness is elsewhere; the body is its size.
    conflict(&post(&server, log.body(0, 20)).await, 12);
    conflict(&post(&server, log.body(7, 20)).await, 12);
    // 404: an origin it does not witness.
    let stranger = NoteSigner::new(&[4; 32], "other.example/log").unwrap();
    let answer = post(&server, log.body_for("other.example/log", &stranger, 0, 3)).await;
    refused(&answer, StatusCode::NOT_FOUND, "witness_unknown_origin");
    // 403: signed by a key the witness does not trust for the origin.
    let impostor = NoteSigner::new(&[5; 32], ORIGIN).unwrap();
    let answer = post(&server, log.body_for(ORIGIN, &impostor, 12, 20)).await;
    refused(&answer, StatusCode::FORBIDDEN, "witness_bad_signature");
    // 400: not the format, not UTF-8, or an old size above the new.
    for body in [
        b"hello".to_vec(),
        b"old 012\n\nx".to_vec(),
        vec![0xff, 0xfe, b'\n', b'\n'],
        log.body(0, 5).replace("old 0", "old x").into_bytes(),
    ] {
        refused(
            &post(&server, body).await,
            StatusCode::BAD_REQUEST,
            "witness_bad_request",
        );
    }
    let answer = post(&server, log.body(12, 12).replace("old 12", "old 13")).await;
    refused(&answer, StatusCode::BAD_REQUEST, "witness_bad_request");
    // 422: a proof that does not lead from the witness's tree.
    let mut fork = Tree::new("fork", 40);
    let forged = format!(
        "old 12\n{}\n\n{}",
        consistency_proof(&mut fork, 12, 20)
            .unwrap()
            .iter()
            .map(|hash| STANDARD.encode(hash))
            .collect::<Vec<_>>()
            .join("\n"),
        note_of(&log.body(0, 20))
    );
    let answer = post(&server, forged).await;
    refused(
        &answer,
        StatusCode::UNPROCESSABLE_ENTITY,
        "witness_bad_proof",
    );
    // 422: a split view, the size it cosigned with another root.
    let answer = post(&server, fork.body(12, 12)).await;
    refused(
        &answer,
        StatusCode::UNPROCESSABLE_ENTITY,
        "witness_split_view",
    );
    // Nothing refused moved the witness.
    conflict(&post(&server, log.body(0, 20)).await, 12);
    // A body above the cap, a path or a method it does not serve.
    let answer = post(&server, vec![b'a'; MAX_ADD_CHECKPOINT_BYTES + 1]).await;
    assert_eq!(answer.status, StatusCode::PAYLOAD_TOO_LARGE);
    assert_eq!(get(&server, "/nothing").await.0, StatusCode::NOT_FOUND);
    assert_eq!(
        get(&server, "/add-checkpoint").await.0,
        StatusCode::METHOD_NOT_ALLOWED
    );

    // Requests for one log, at once, all from size 12: one is cosigned,
    // and every other sees its state (409 with its size).
    let bodies: Vec<(u64, String)> = (13..21).map(|size| (size, log.body(12, size))).collect();
    let server = Arc::new(server);
    let answers = futures_util::future::join_all(bodies.into_iter().map(|(size, body)| {
        let server = server.clone();
        async move { (size, post(&server, body).await) }
    }))
    .await;
    let winners: Vec<u64> = answers
        .iter()
        .filter(|(_, answer)| answer.status == StatusCode::OK)
        .map(|(size, _)| *size)
        .collect();
    assert_eq!(winners.len(), 1, "{winners:?}");
    for (size, answer) in &answers {
        if *size != winners[0] {
            conflict(answer, winners[0]);
        }
    }
}

#[tokio::test]
async fn a_witness_killed_loses_nothing_it_cosigned() {
    let dir = tempfile::tempdir().unwrap();
    let (data, config) = witness_folder(dir.path());
    let mut log = Tree::new("leaf", 300);
    let server = Server::witness(&data, &config);
    let vkey = vkey_of(&server);
    cosigned(post(&server, log.body(0, 5)).await);
    // SIGKILL right after the answer: the size it cosigned is kept, and
    // so is its key.
    server.kill();
    let server = Server::witness(&data, &config);
    assert_eq!(vkey_of(&server), vkey);
    conflict(&post(&server, log.body(0, 7)).await, 5);
    cosigned(post(&server, log.body(5, 7)).await);

    // SIGKILL while a client extends the log one leaf a request: after
    // the restart the witness holds the last size it answered or the one
    // in flight, with that size's root and its cosignature — never less,
    // never a mix.
    let answered = Arc::new(Mutex::new(7u64));
    let bodies: Vec<String> = (7..299).map(|size| log.body(size, size + 1)).collect();
    let writer = {
        let (base, answered) = (server.base.clone(), answered.clone());
        tokio::spawn(async move {
            let client = reqwest::Client::builder()
                .timeout(Duration::from_secs(5))
                .build()
                .unwrap();
            for (n, body) in bodies.into_iter().enumerate() {
                let Ok(response) = client
                    .post(format!("{base}/add-checkpoint"))
                    .body(body)
                    .send()
                    .await
                else {
                    return;
                };
                if response.status() != StatusCode::OK || response.text().await.is_err() {
                    return;
                }
                *answered.lock().unwrap() = 8 + n as u64;
            }
        })
    };
    while *answered.lock().unwrap() < 30 {
        tokio::task::yield_now().await;
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    server.kill();
    writer.await.unwrap();
    let last = *answered.lock().unwrap();
    let server = Server::witness(&data, &config);
    let (status, note) = get(&server, &format!("/checkpoint/{ORIGIN}")).await;
    assert_eq!(status, StatusCode::OK);
    let kept = witnessed(&note, &vkey);
    assert!(
        kept.size == last || kept.size == last + 1,
        "answered {last}, kept {}",
        kept.size
    );
    assert_eq!(kept.root, log.root(kept.size));
    conflict(&post(&server, log.body(0, 299)).await, kept.size);
    cosigned(post(&server, log.body(kept.size, 299)).await);
}

//! The log submits its checkpoints to witnesses (issue 37): three
//! `mandate witness serve` processes and one log on 127.0.0.1.

use std::path::Path;
use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use mandate_core::LogError;
use mandate_core::tlog::{
    AddCheckpoint, CosignedLink, Hash, NoteVerifier, TLOG_SIZE_CONTENT_TYPE, WitnessPolicy,
    WitnessVerifier, WitnessedInclusion, verify_witnessed, verify_witnessed_inclusion,
};
use mandate_host::config::LogWitnessConfig;
use mandate_host::recordlog::watch::{Seen, Trusted, judge};
use serde_json::Value;

use crate::helpers::TestApp;
use crate::process::Server;

pub const ORIGIN: &str = "log.test/submitter";

fn text(value: &Value) -> &str {
    value.as_str().unwrap()
}

/// A witness of [`ORIGIN`] named `name`, for the log key `log_vkey`.
pub fn witness(dir: &Path, name: &str, log_vkey: &str) -> Server {
    let data = dir.join(name);
    let config = dir.join(format!("{name}.toml"));
    std::fs::write(
        &config,
        format!(
            "[witness]\nname = \"witness.test/{name}\"\n\n[[witness.log]]\norigin = \"{ORIGIN}\"\n\
             vkeys = [\"{log_vkey}\"]\n"
        ),
    )
    .unwrap();
    Server::witness(&data, &config)
}

pub async fn vkey(server: &Server) -> String {
    let body = server
        .client
        .get(server.url("/vkey"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    body.trim().to_owned()
}

/// The log's checkpoint once `accept` takes it, polled (no fixed wait).
async fn checkpoint_when(app: &TestApp, accept: impl Fn(&str) -> bool) -> String {
    for _ in 0..600 {
        let note = app
            .client
            .get(format!("{}/v1/log/checkpoint", app.base))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        if accept(&note) {
            return note;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("the checkpoint never got there");
}

/// The log's verifier key, fixed at its first start.
async fn log_vkey(app: &TestApp) -> String {
    app.client
        .get(format!("{}/v1/log/key", app.base))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap()
        .lines()
        .next()
        .unwrap()
        .to_owned()
}

fn policy(vkeys: &[String], k: usize) -> WitnessPolicy {
    WitnessPolicy::new(
        vkeys
            .iter()
            .map(|v| WitnessVerifier::parse(v).unwrap())
            .collect(),
        k,
        3600,
    )
    .unwrap()
}

fn now() -> i64 {
    i64::try_from(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs(),
    )
    .unwrap()
}

/// Three witnesses cosign the log's checkpoints, which core's policy
/// verifier accepts at k = 3; with one down the other two still cosign
/// (k = 2, not 3); that one, back with its state while the log forgot its
/// size, answers 409 and is brought up to date from its size.
#[tokio::test]
async fn witnesses_cosign_one_down_holds_none_up_and_a_lagging_one_catches_up_by_409() {
    let app = TestApp::spawn_with(|c| c.log.origin = Some(ORIGIN.to_owned())).await;
    let log_vkey = log_vkey(&app).await;
    let dir = app.stop().await;
    let folder = tempfile::tempdir().unwrap();
    let first = witness(folder.path(), "w1", &log_vkey);
    let second = witness(folder.path(), "w2", &log_vkey);
    let third = witness(folder.path(), "w3", &log_vkey);
    let vkeys = vec![vkey(&first).await, vkey(&second).await, vkey(&third).await];
    let configured: Vec<LogWitnessConfig> = [&first.base, &second.base, &third.base]
        .iter()
        .zip(&vkeys)
        .map(|(url, vkey)| LogWitnessConfig {
            url: (*url).clone(),
            vkey: vkey.clone(),
        })
        .collect();
    let witnesses = configured.clone();
    let app = TestApp::spawn_in(dir, move |c| {
        c.log.origin = Some(ORIGIN.to_owned());
        c.log.witnesses = witnesses;
        c.log.witness_threshold = Some(2);
        c.log.checkpoint_interval_ms = std::num::NonZeroU64::new(100).unwrap();
    })
    .await;
    let log_key = NoteVerifier::parse(&log_vkey).unwrap();
    let token = app.root("mailer", &["crm:*"], &["read"]).await;
    let jti = text(&token["jti"]).to_owned();
    for n in 0..3 {
        let response = app
            .act(&jti, "read", &format!("crm:lead/{n}"), "success")
            .await;
        assert_eq!(response.status(), reqwest::StatusCode::CREATED);
    }
    let (two, three) = (policy(&vkeys, 2), policy(&vkeys, 3));
    let witnessed_by = |note: &str, policy: &WitnessPolicy, size: u64| {
        verify_witnessed(
            note,
            Some(ORIGIN),
            std::slice::from_ref(&log_key),
            policy,
            now(),
        )
        .is_ok_and(|w| w.checkpoint.size >= size)
    };
    checkpoint_when(&app, |note| witnessed_by(note, &three, 4)).await;
    // The third goes down; the log grows; two cosign.
    third.kill();
    let response = app.act(&jti, "read", "crm:lead/7", "success").await;
    assert_eq!(response.status(), reqwest::StatusCode::CREATED);
    let note = checkpoint_when(&app, |note| witnessed_by(note, &two, 5)).await;
    assert!(
        !witnessed_by(&note, &three, 5),
        "the third witness was down: {note}"
    );
    let dir = app.stop().await;
    // The log forgets the third's size (as a database restored from before
    // it cosigned would); the third comes back with its state elsewhere.
    crate::helpers::with_database(dir.path(), |conn| {
        conn.execute_batch("DELETE FROM log_witnesses WHERE name = 'witness.test/w3'")
            .unwrap();
    });
    let third = witness(folder.path(), "w3", &log_vkey);
    let mut witnesses = configured;
    witnesses[2].url = third.base.clone();
    let app = TestApp::spawn_in(dir, move |c| {
        c.log.origin = Some(ORIGIN.to_owned());
        c.log.witnesses = witnesses;
        c.log.witness_threshold = Some(2);
        c.log.checkpoint_interval_ms = std::num::NonZeroU64::new(100).unwrap();
    })
    .await;
    let response = app.act(&jti, "read", "crm:lead/9", "success").await;
    assert_eq!(response.status(), reqwest::StatusCode::CREATED);
    let note = checkpoint_when(&app, |note| witnessed_by(note, &three, 6)).await;
    let witnessed = verify_witnessed(
        &note,
        Some(ORIGIN),
        std::slice::from_ref(&log_key),
        &three,
        now(),
    )
    .unwrap();
    assert_eq!(witnessed.cosigned_by.len(), 3);
    let dir = app.stop().await;
    crate::helpers::with_database(dir.path(), |conn| {
        let size: i64 = conn
            .query_row(
                "SELECT size FROM log_witnesses WHERE name = 'witness.test/w3'",
                [],
                |row| row.get(0),
            )
            .unwrap();
        assert_eq!(size, i64::try_from(witnessed.checkpoint.size).unwrap());
    });
    drop((first, second, third));
}

/// The cosignatures `(name, timestamp, line)` stored for the checkpoint
/// of `size`.
fn cosignatures_at(app: &TestApp, size: i64) -> Vec<(String, i64, String)> {
    app.with_database(|conn| {
        conn.prepare_cached(
            "SELECT name, timestamp, line FROM log_cosignatures WHERE size = ?1 ORDER BY name",
        )
        .unwrap()
        .query_map([size], |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap()
    })
}

/// A log that stops growing keeps its cosignatures fresh: a witness whose
/// cosignature of the current checkpoint is older than `[log]
/// cosignature_refresh_seconds` is sent the same checkpoint again and
/// cosigns it anew, so a verifier's maximum age keeps passing; the
/// checkpoint served carries the new lines.
#[tokio::test]
async fn an_idle_logs_cosignatures_are_refreshed() {
    let app = TestApp::spawn_with(|c| c.log.origin = Some(ORIGIN.to_owned())).await;
    let log_vkey = log_vkey(&app).await;
    let dir = app.stop().await;
    let folder = tempfile::tempdir().unwrap();
    let witnesses = [
        witness(folder.path(), "w1", &log_vkey),
        witness(folder.path(), "w2", &log_vkey),
    ];
    let mut configured = Vec::new();
    for server in &witnesses {
        configured.push(LogWitnessConfig {
            url: server.base.clone(),
            vkey: vkey(server).await,
        });
    }
    let app = TestApp::spawn_in(dir, move |c| {
        c.log.origin = Some(ORIGIN.to_owned());
        c.log.witnesses = configured;
        c.log.witness_threshold = Some(2);
        c.log.checkpoint_interval_ms = std::num::NonZeroU64::new(100).unwrap();
    })
    .await;
    let token = app.root("mailer", &["crm:*"], &["read"]).await;
    let response = app
        .act(text(&token["jti"]), "read", "crm:lead/1", "success")
        .await;
    assert_eq!(response.status(), reqwest::StatusCode::CREATED);
    // The log's size once the record is in it: nothing is written after.
    let record: Value = response.json().await.unwrap();
    let proof = crate::helpers::expect_json(
        app.get_auth(
            &format!("/v1/vat/aar/{}/proof", text(&record["aar_id"])),
            &app.admin_key,
        )
        .await,
        reqwest::StatusCode::OK,
    )
    .await;
    let last = proof["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|event| event["index"].as_i64().unwrap())
        .max()
        .unwrap();
    let size = last + 1;
    let cosigned = |note: &str| {
        note.lines().nth(1) == Some(size.to_string().as_str())
            && note.matches("\u{2014} witness.test/").count() == 2
    };
    checkpoint_when(&app, cosigned).await;
    let first = cosignatures_at(&app, size);
    assert_eq!(first.len(), 2, "{first:?}");
    // The witnesses' clocks pass a second (timestamps are in seconds);
    // the log's passes the refresh age. Nothing is written meanwhile.
    let latest = first.iter().map(|(_, at, _)| *at).max().unwrap();
    while now() <= latest {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    app.clock.advance(Duration::from_secs(601));
    let mut refreshed = Vec::new();
    for _ in 0..300 {
        refreshed = cosignatures_at(&app, size);
        if refreshed
            .iter()
            .zip(&first)
            .all(|((_, at, _), (_, before, _))| at > before)
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    for ((name, at, line), (_, before, _)) in refreshed.iter().zip(&first) {
        assert!(at > before, "{name} was not asked again: {refreshed:?}");
        let note = checkpoint_when(&app, |note| note.contains(line.as_str())).await;
        assert_eq!(
            note.lines().nth(1),
            Some(size.to_string().as_str()),
            "{note}"
        );
    }
    drop(witnesses);
}

/// A copy of a deployment's database, as an operator's backup: the SQLite
/// files of the data folder, or (on the PostgreSQL pass) a database made
/// from it as a template.
enum Backup {
    Files(tempfile::TempDir),
    Postgres(String),
}

/// Backs up the database of the stopped deployment in `dir`.
fn back_up(dir: &Path) -> Backup {
    match crate::helpers::test_database(dir) {
        None => {
            let copy = tempfile::tempdir().unwrap();
            for file in std::fs::read_dir(dir).unwrap() {
                let file = file.unwrap();
                if file.file_type().unwrap().is_file() {
                    std::fs::copy(file.path(), copy.path().join(file.file_name())).unwrap();
                }
            }
            Backup::Files(copy)
        }
        Some(url) => {
            let source = std::fs::read_to_string(dir.join("test-database")).unwrap();
            let name = format!("{source}_backup");
            let url = url.replace("sslmode=require", "sslmode=disable");
            let create = format!("CREATE DATABASE {name} TEMPLATE {source}");
            std::thread::spawn(move || {
                let mut client = postgres::Client::connect(&url, postgres::NoTls).unwrap();
                client.batch_execute(&create).unwrap();
            })
            .join()
            .unwrap();
            Backup::Postgres(name)
        }
    }
}

/// Restores `backup` into the stopped deployment's folder `dir`.
fn restore(dir: &Path, backup: &Backup) {
    match backup {
        Backup::Files(copy) => {
            for file in std::fs::read_dir(dir).unwrap() {
                let file = file.unwrap();
                if file.file_type().unwrap().is_file() {
                    std::fs::remove_file(file.path()).unwrap();
                }
            }
            for file in std::fs::read_dir(copy.path()).unwrap() {
                let file = file.unwrap();
                std::fs::copy(file.path(), dir.join(file.file_name())).unwrap();
            }
        }
        Backup::Postgres(name) => std::fs::write(dir.join("test-database"), name).unwrap(),
    }
}

/// `mandate audit watch URL --once --state STATE --witness-policy POLICY`:
/// its exit status and what it printed (off the test's runtime, which
/// serves the server it watches).
async fn watch(app: &TestApp, vkey: &str, state: &Path, policy: &Path) -> (bool, String) {
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_mandate"));
    command
        .args([
            "audit", "watch", &app.base, "--vkey", vkey, "--once", "--state",
        ])
        .arg(state)
        .arg("--witness-policy")
        .arg(policy);
    let output = tokio::task::spawn_blocking(move || command.output().unwrap())
        .await
        .unwrap();
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    (output.status.success(), said)
}

/// A record's proof answer.
async fn record_proof(app: &TestApp, aar_id: &str) -> Value {
    let response = app
        .get_auth(&format!("/v1/vat/aar/{aar_id}/proof"), &app.admin_key)
        .await;
    assert_eq!(response.status(), reqwest::StatusCode::OK);
    response.json().await.unwrap()
}

/// The record's first event checked under `policy` at `at`, with the
/// link the answer carries.
fn held(
    proof: &Value,
    log_key: &NoteVerifier,
    policy: &WitnessPolicy,
    at: i64,
) -> Result<WitnessedInclusion, LogError> {
    let event = &proof["events"][0];
    let link = proof.get("cosigned").map(|link| CosignedLink {
        checkpoint: text(&link["checkpoint"]).to_owned(),
        consistency: link["consistency"]
            .as_array()
            .unwrap()
            .iter()
            .map(|h| STANDARD.decode(text(h)).unwrap().try_into().unwrap())
            .collect(),
    });
    verify_witnessed_inclusion(
        text(&event["proof"]),
        &STANDARD.decode(text(&event["leaf"])).unwrap(),
        Some(ORIGIN),
        std::slice::from_ref(log_key),
        link.as_ref(),
        policy,
        at,
    )
}

/// The log forks: its database is restored from a backup taken while
/// three witnesses had cosigned its first records, and it is written
/// differently after the witnesses cosigned more. Every witness refuses
/// the fork — 409 with its size for the stale old size, 422 for the same
/// size with another root — and keeps its state; the fork never gathers a
/// cosignature; a verifier holding the honest witnessed checkpoint sees
/// the split view, and a record proof of the fork passes a policy only
/// through its link to the last checkpoint cosigned before the backup,
/// until that checkpoint's cosignatures are older than the policy allows.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_log_restored_from_an_old_backup_is_refused_by_every_witness_and_verifiers_see_the_split_view()
 {
    let app = TestApp::spawn_with(|c| c.log.origin = Some(ORIGIN.to_owned())).await;
    let log_vkey = log_vkey(&app).await;
    let dir = app.stop().await;
    let folder = tempfile::tempdir().unwrap();
    let servers = [
        witness(folder.path(), "w1", &log_vkey),
        witness(folder.path(), "w2", &log_vkey),
        witness(folder.path(), "w3", &log_vkey),
    ];
    let mut vkeys = Vec::new();
    for server in &servers {
        vkeys.push(vkey(server).await);
    }
    let configured: Vec<LogWitnessConfig> = servers
        .iter()
        .zip(&vkeys)
        .map(|(server, vkey)| LogWitnessConfig {
            url: server.base.clone(),
            vkey: vkey.clone(),
        })
        .collect();
    let configure = |witnesses: Vec<LogWitnessConfig>| {
        move |c: &mut mandate_host::config::Config| {
            c.log.origin = Some(ORIGIN.to_owned());
            c.log.witnesses = witnesses;
            c.log.witness_threshold = Some(2);
            c.log.checkpoint_interval_ms = std::num::NonZeroU64::new(100).unwrap();
        }
    };
    let log_key = NoteVerifier::parse(&log_vkey).unwrap();
    let (two, three) = (policy(&vkeys, 2), policy(&vkeys, 3));
    let witnessed_at = |note: &str, size: u64| {
        verify_witnessed(
            note,
            Some(ORIGIN),
            std::slice::from_ref(&log_key),
            &three,
            now(),
        )
        .is_ok_and(|w| w.checkpoint.size == size)
    };
    let record = async |app: &TestApp, jti: &str, resource: &str| -> String {
        let response = app.act(jti, "read", resource, "success").await;
        assert_eq!(response.status(), reqwest::StatusCode::CREATED);
        let body: Value = response.json().await.unwrap();
        text(&body["aar_id"]).to_owned()
    };
    let size_of = |proof: &Value| {
        mandate_core::tlog::open_checkpoint(
            text(&proof["checkpoint"]),
            Some(ORIGIN),
            std::slice::from_ref(&log_key),
        )
        .unwrap()
        .size
    };

    // The first records, cosigned by all three; then the backup.
    let app = TestApp::spawn_in(dir, configure(configured.clone())).await;
    let token = app.root("mailer", &["crm:*"], &["read"]).await;
    let jti = text(&token["jti"]).to_owned();
    record(&app, &jti, "crm:lead/1").await;
    let first = record(&app, &jti, "crm:lead/2").await;
    let backed_up = size_of(&record_proof(&app, &first).await);
    checkpoint_when(&app, |note| witnessed_at(note, backed_up)).await;
    let dir = app.stop().await;
    let backup = back_up(dir.path());

    // The honest log grows, and the witnesses cosign it.
    let app = TestApp::spawn_in(dir, configure(configured.clone())).await;
    for n in 3..6 {
        record(&app, &jti, &format!("crm:lead/{n}")).await;
    }
    let last = record(&app, &jti, "crm:lead/6").await;
    let honest_size = size_of(&record_proof(&app, &last).await);
    let honest = checkpoint_when(&app, |note| witnessed_at(note, honest_size)).await;
    // `mandate audit watch --witness-policy` trusts the witnessed log.
    let watched = tempfile::tempdir().unwrap();
    let (policy_file, state) = (
        watched.path().join("policy.toml"),
        watched.path().join("trusted"),
    );
    std::fs::write(
        &policy_file,
        format!(
            "witnesses = [{}]\nthreshold = 2\nmax_age_seconds = 3600\n",
            vkeys
                .iter()
                .map(|v| format!("\"{v}\""))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    )
    .unwrap();
    let (ok, said) = watch(&app, &log_vkey, &state, &policy_file).await;
    assert!(ok && said.contains("trusting"), "{said}");
    let dir = app.stop().await;

    // Restored from the backup and written differently: the same number of
    // records, other resources.
    restore(dir.path(), &backup);
    let app = TestApp::spawn_in(dir, configure(configured.clone())).await;
    for n in 3..6 {
        record(&app, &jti, &format!("crm:other/{n}")).await;
    }
    let forked_record = record(&app, &jti, "crm:other/6").await;
    let forked_proof = record_proof(&app, &forked_record).await;
    let fork_note = text(&forked_proof["checkpoint"]).to_owned();
    let fork = mandate_core::tlog::open_checkpoint(
        &fork_note,
        Some(ORIGIN),
        std::slice::from_ref(&log_key),
    )
    .unwrap();
    let honest_checkpoint = verify_witnessed(
        &honest,
        Some(ORIGIN),
        std::slice::from_ref(&log_key),
        &three,
        now(),
    )
    .unwrap()
    .checkpoint;
    assert_eq!(
        fork.size, honest_checkpoint.size,
        "the fork has the honest log's size"
    );
    assert_ne!(fork.root, honest_checkpoint.root);

    // Every witness refuses it: the log's stale size is a 409 naming the
    // witness's; the witness's own size with another root, a 422.
    let proof_from = |old: u64| {
        let app = &app;
        async move {
            let answer: Value = app
                .client
                .get(format!(
                    "{}/v1/log/consistency?old={old}&new={}",
                    app.base, fork.size
                ))
                .send()
                .await
                .unwrap()
                .json()
                .await
                .unwrap();
            answer["proof"]
                .as_array()
                .unwrap()
                .iter()
                .map(|h| STANDARD.decode(text(h)).unwrap().try_into().unwrap())
                .collect::<Vec<Hash>>()
        }
    };
    let bare_note = {
        let (text, _) = fork_note.split_once("\n\n").unwrap();
        let signatures = fork_note[text.len() + 2..]
            .lines()
            .filter(|line| line.starts_with(&format!("\u{2014} {ORIGIN} ")))
            .map(|line| format!("{line}\n"))
            .collect::<String>();
        format!("{text}\n\n{signatures}")
    };
    let stale = AddCheckpoint {
        old_size: backed_up,
        proof: proof_from(backed_up).await,
        checkpoint: bare_note.clone(),
    }
    .to_text();
    let same_size = AddCheckpoint {
        old_size: honest_size,
        proof: Vec::new(),
        checkpoint: bare_note,
    }
    .to_text();
    for server in &servers {
        let response = server
            .client
            .post(server.url("/add-checkpoint"))
            .body(stale.clone())
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), reqwest::StatusCode::CONFLICT);
        assert_eq!(
            response.headers()[reqwest::header::CONTENT_TYPE],
            TLOG_SIZE_CONTENT_TYPE
        );
        assert_eq!(
            response.text().await.unwrap().trim(),
            honest_size.to_string()
        );
        let response = server
            .client
            .post(server.url("/add-checkpoint"))
            .body(same_size.clone())
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), reqwest::StatusCode::UNPROCESSABLE_ENTITY);
        // The witness still serves the honest checkpoint, cosigned.
        let latest = server
            .client
            .get(server.url(&format!("/checkpoint/{ORIGIN}")))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        let opened = mandate_core::tlog::open_checkpoint(
            &latest,
            Some(ORIGIN),
            std::slice::from_ref(&log_key),
        )
        .unwrap();
        assert_eq!(
            (opened.size, opened.root),
            (honest_checkpoint.size, honest_checkpoint.root)
        );
    }

    // The submitter tried too (several cadences); no witness cosigned the
    // fork, so a verifier with a policy refuses its checkpoint.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let forked_proof = record_proof(&app, &forked_record).await;
    let fork_note = text(&forked_proof["checkpoint"]).to_owned();
    assert!(matches!(
        verify_witnessed(
            &fork_note,
            Some(ORIGIN),
            std::slice::from_ref(&log_key),
            &two,
            now()
        ),
        Err(LogError::CosignaturesInsufficient {
            fresh: 0,
            threshold: 2
        })
    ));
    let served = app
        .client
        .get(format!("{}/v1/log/checkpoint", app.base))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert_eq!(
        verify_witnessed(
            &served,
            Some(ORIGIN),
            std::slice::from_ref(&log_key),
            &two,
            now()
        )
        .unwrap()
        .checkpoint
        .size,
        backed_up,
        "the fork serves nothing witnessed newer than the backup: {served}"
    );
    // A monitor that trusted the honest checkpoint reports the split view
    // with both signed checkpoints.
    let trusted = Trusted {
        checkpoint: honest_checkpoint.clone(),
        note: honest.clone(),
    };
    let seen = judge(
        Some(&trusted),
        &fork_note,
        ORIGIN,
        std::slice::from_ref(&log_key),
        None,
        |_, _| anyhow::bail!("same size: no proof is asked"),
    )
    .unwrap();
    assert!(
        matches!(&seen, Seen::Fork { new, .. } if new.note == fork_note),
        "{seen:?}"
    );
    // So does `mandate audit watch` with the policy, from what it trusted:
    // the fork serves the older witnessed checkpoint, a rollback.
    let (ok, said) = watch(&app, &log_vkey, &state, &policy_file).await;
    assert!(!ok && said.contains("FORK"), "{said}");
    // The fork's record proof passes a policy only through the link to the
    // checkpoint cosigned before the backup, and only while those
    // cosignatures are fresh: the window a policy's maximum age bounds.
    let passed = held(&forked_proof, &log_key, &two, now()).unwrap();
    assert!(passed.linked);
    assert_eq!(passed.witnessed.checkpoint.size, backed_up);
    let later = now() + 3600 + 60;
    assert!(matches!(
        held(&forked_proof, &log_key, &two, later),
        Err(LogError::CosignaturesInsufficient { fresh: 0, .. })
    ));
    drop(servers);
    drop(app.stop().await);
}

/// The upgrade to schema 13, on either engine: a database of version 12
/// gains the witnessed log's tables, empty, and keeps what it held.
#[tokio::test]
async fn the_upgrade_to_schema_13_adds_the_witnessed_log_tables() {
    let app = TestApp::spawn().await;
    let token = app.root("mailer", &["crm:*"], &["read"]).await;
    let dir = app.stop().await;
    crate::helpers::with_database(dir.path(), |conn| {
        conn.execute_batch(crate::helpers::DROP_WITNESSED_TABLES)
            .unwrap();
        crate::helpers::set_schema_version(conn, 12);
    });
    let app = TestApp::spawn_in(dir, |_| {}).await;
    let response = app
        .act(text(&token["jti"]), "read", "crm:lead/1", "success")
        .await;
    assert_eq!(response.status(), reqwest::StatusCode::CREATED);
    let dir = app.stop().await;
    crate::helpers::with_database(dir.path(), |conn| {
        for table in ["log_witnesses", "log_cosignatures", "log_submitter"] {
            let rows: i64 = conn
                .query_row(&format!("SELECT count(*) FROM {table}"), [], |row| {
                    row.get(0)
                })
                .unwrap();
            assert_eq!(rows, 0, "{table}");
        }
        assert_eq!(mandate_host::store::SCHEMA_VERSION, 17);
    });
}

//! The log submits its checkpoints to witnesses (issue 37): three
//! `mandate witness serve` processes and one log on 127.0.0.1.

use std::path::Path;
use std::time::Duration;

use mandate_core::tlog::{NoteVerifier, WitnessPolicy, WitnessVerifier, verify_witnessed};
use mandate_host::config::LogWitnessConfig;
use serde_json::Value;

use crate::helpers::TestApp;
use crate::process::Server;

const ORIGIN: &str = "log.test/submitter";

fn text(value: &Value) -> &str {
    value.as_str().unwrap()
}

/// A witness of [`ORIGIN`] named `name`, for the log key `log_vkey`.
fn witness(dir: &Path, name: &str, log_vkey: &str) -> Server {
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

async fn vkey(server: &Server) -> String {
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

/// The upgrade to schema 13, on either engine: a database of version 12
/// gains the witnessed log's tables, empty, and keeps what it held.
#[tokio::test]
async fn the_upgrade_to_schema_13_adds_the_witnessed_log_tables() {
    use mandate_host::store::sql::Dialect;
    let app = TestApp::spawn().await;
    let token = app.root("mailer", &["crm:*"], &["read"]).await;
    let dir = app.stop().await;
    crate::helpers::with_database(dir.path(), |conn| {
        conn.execute_batch(crate::helpers::DROP_WITNESSED_TABLES)
            .unwrap();
        match conn.dialect() {
            Dialect::Sqlite => conn.execute_batch("PRAGMA user_version = 12").unwrap(),
            Dialect::Postgres => conn
                .execute_batch("UPDATE mandate_schema SET version = 12")
                .unwrap(),
        }
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
        assert_eq!(mandate_host::store::SCHEMA_VERSION, 13);
    });
}

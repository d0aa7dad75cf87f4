//! The record log and token status lists, as an auditor and an edge
//! verifier meet them: proofs checked offline with core's verifier against
//! the keys `GET /v1/log/key` publishes, the tree rebuilt from the public
//! tiles, status lists checked against the JWKS, and `mandate audit`
//! catching tampering on a copy of the database and a fork of the log.

use std::collections::HashMap;
use std::path::Path;
use std::process::Command;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use mandate_core::tlog::{
    self, Hash, LogEntry, LogEvent, NoteVerifier, TileReader, open_checkpoint, verify_consistency,
    verify_tlog_proof,
};
use mandate_core::{Claims, Jti, Jwks, StatusCheckError, check_status, verify_status_list};
use mandate_host::recordlog::{self, audit};
use mandate_host::secrets::{KEY_FILE, Kek};
use mandate_host::store::{self, Connection, DB_FILE};
use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::helpers::{TestApp, expect_json, expect_problem, text};

/// The log's verifier keys, as published.
pub async fn verifiers(app: &TestApp) -> Vec<NoteVerifier> {
    let keys = app
        .client
        .get(app.url("/v1/log/key"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    keys.lines()
        .map(|vkey| NoteVerifier::parse(vkey).unwrap())
        .collect()
}

/// The newest checkpoint, as published.
async fn checkpoint(app: &TestApp) -> String {
    let response = app
        .client
        .get(app.url("/v1/log/checkpoint"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(
        response.headers()["content-type"],
        "text/plain; charset=utf-8"
    );
    response.text().await.unwrap()
}

/// The log's origin: its checkpoints' first line.
fn origin_of(note: &str) -> String {
    note.lines().next().unwrap().to_owned()
}

/// A record's proof, every event checked offline; the entries.
async fn proven(app: &TestApp, key: &str, aar_id: &str) -> (Value, Vec<LogEntry>) {
    let proof = expect_json(
        app.get_auth(&format!("/v1/vat/aar/{aar_id}/proof"), key)
            .await,
        StatusCode::OK,
    )
    .await;
    let verifiers = verifiers(app).await;
    let origin = text(&proof["origin"]).to_owned();
    assert_eq!(origin, origin_of(text(&proof["checkpoint"])));
    let mut entries = Vec::new();
    for event in proof["events"].as_array().unwrap() {
        let leaf = STANDARD.decode(text(&event["leaf"])).unwrap();
        let proof_text = text(&event["proof"]);
        assert!(proof_text.ends_with(text(&proof["checkpoint"])));
        let checkpoint = verify_tlog_proof(proof_text, &leaf, Some(&origin), &verifiers).unwrap();
        assert!(event["index"].as_u64().unwrap() < checkpoint.size);
        // A changed leaf, another log's name or an unknown key: refused.
        let mut changed = leaf.clone();
        changed[10] ^= 1;
        assert!(verify_tlog_proof(proof_text, &changed, Some(&origin), &verifiers).is_err());
        assert!(
            verify_tlog_proof(proof_text, &leaf, Some("other.example/log"), &verifiers).is_err()
        );
        let stranger = mandate_core::NoteSigner::new(&[1; 32], &origin).unwrap();
        let strangers = [NoteVerifier::parse(&stranger.vkey()).unwrap()];
        assert!(verify_tlog_proof(proof_text, &leaf, Some(&origin), &strangers).is_err());
        let entry = LogEntry::from_leaf(&leaf).unwrap();
        assert_eq!(entry.event.kind(), text(&event["kind"]));
        assert_eq!(entry.event.aar_id().unwrap().as_str(), aar_id);
        assert!(
            !String::from_utf8(leaf).unwrap().contains("vat_"),
            "a leaf never names a jti"
        );
        entries.push(entry);
    }
    (proof, entries)
}

#[tokio::test]
async fn a_record_is_proven_in_the_log_the_moment_its_write_is_acknowledged() {
    let app = TestApp::spawn().await;
    let root = app.root("bot", &["crm:*"], &["read", "write"]).await;
    let jti = text(&root["jti"]);
    let first = checkpoint(&app).await;
    let authorized = expect_json(
        app.post(
            "/v1/vat/authorize",
            &json!({"vat_jti": jti, "action": "write", "resource": "crm:lead/1", "spend_usd": 2.5}),
        )
        .await,
        StatusCode::OK,
    )
    .await;
    let aar_id = text(&authorized["aar_id"]).to_owned();
    let (_, entries) = proven(&app, &app.admin_key, &aar_id).await;
    let [created] = entries.as_slice() else {
        panic!("{entries:?}")
    };
    let LogEvent::RecordCreated(created) = &created.event else {
        panic!("{created:?}")
    };
    assert_eq!(created.status.as_str(), "pending");
    assert_eq!(created.spend_micros, 2_500_000);
    assert_eq!(created.jth, Jti::parse(jti).unwrap().hash());
    assert_eq!(created.agent_id.as_str(), "bot");

    expect_json(
        app.post(
            &format!("/v1/vat/aar/{aar_id}/complete"),
            &json!({"result": "success", "spend_usd": 1.25}),
        )
        .await,
        StatusCode::OK,
    )
    .await;
    expect_json(
        app.post_auth(
            &format!("/v1/vat/aar/{aar_id}/feedback"),
            &app.admin_key,
            &json!({"rating": "approved", "note": "as asked"}),
        )
        .await,
        StatusCode::OK,
    )
    .await;
    let (proof, entries) = proven(&app, &app.admin_key, &aar_id).await;
    let kinds: Vec<&str> = entries.iter().map(|e| e.event.kind()).collect();
    assert_eq!(
        kinds,
        ["record.created", "record.completed", "record.rated"]
    );
    let LogEvent::RecordCompleted(completed) = &entries[1].event else {
        panic!()
    };
    assert_eq!(completed.spend_micros, 1_250_000);
    assert_eq!(completed.result.as_str(), "success");
    let LogEvent::RecordRated(rated) = &entries[2].event else {
        panic!()
    };
    assert_eq!(rated.rating.as_str(), "approved");
    assert_eq!(rated.note.as_deref(), Some("as asked"));
    let me = expect_json(app.get_auth("/v1/me", &app.admin_key).await, StatusCode::OK).await;
    assert_eq!(rated.by.as_ref().unwrap().as_str(), text(&me["key_id"]));

    // The later checkpoint extends the first: the consistency proof the
    // server gives verifies between them.
    let verifiers = verifiers(&app).await;
    let origin = origin_of(&first);
    let old = open_checkpoint(&first, Some(&origin), &verifiers).unwrap();
    let new = open_checkpoint(text(&proof["checkpoint"]), Some(&origin), &verifiers).unwrap();
    assert!(new.size > old.size);
    let consistency = expect_json(
        app.client
            .get(app.url(&format!(
                "/v1/log/consistency?old={}&new={}",
                old.size, new.size
            )))
            .send()
            .await
            .unwrap(),
        StatusCode::OK,
    )
    .await;
    let hashes: Vec<Hash> = consistency["proof"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| STANDARD.decode(text(h)).unwrap().try_into().unwrap())
        .collect();
    verify_consistency(old.size, new.size, &old.root, &new.root, &hashes).unwrap();
    assert!(verify_consistency(old.size, new.size, &new.root, &new.root, &hashes).is_err());
    for bad in [
        "old=5&new=2",
        &format!("old=0&new={}", new.size + 1),
        "old=x&new=1",
    ] {
        expect_problem(
            app.client
                .get(app.url(&format!("/v1/log/consistency?{bad}")))
                .send()
                .await
                .unwrap(),
            StatusCode::BAD_REQUEST,
            "invalid_query",
        )
        .await;
    }

    // Another organisation's key: the record is not there.
    let (_, other) = app.org("other").await;
    expect_problem(
        app.get_auth(&format!("/v1/vat/aar/{aar_id}/proof"), &other)
            .await,
        StatusCode::NOT_FOUND,
        "record_not_found",
    )
    .await;
}

/// Tiles fetched over HTTP.
struct Fetched(HashMap<(u8, u64), Vec<Hash>>);

impl TileReader for Fetched {
    type Error = String;

    fn tile(&mut self, level: u8, index: u64, width: u16) -> Result<Vec<Hash>, String> {
        let tile = self.0.get(&(level, index)).ok_or("tile not fetched")?;
        Ok(tile[..usize::from(width)].to_vec())
    }
}

#[tokio::test]
async fn the_public_tiles_hold_the_tree_of_the_checkpoint() {
    let app = TestApp::spawn().await;
    let root = app.root("bot", &["crm:*"], &["read"]).await;
    for n in 0..300 {
        let response = app
            .act(text(&root["jti"]), "read", &format!("crm:{n}"), "success")
            .await;
        assert_eq!(response.status(), StatusCode::CREATED);
    }
    let note = checkpoint(&app).await;
    let verifiers = verifiers(&app).await;
    let checkpoint = open_checkpoint(&note, None, &verifiers).unwrap();
    assert!(checkpoint.size > 256, "a full tile and a partial one");
    let mut fetched = HashMap::new();
    for id in tlog::tiles(checkpoint.size) {
        let response = app
            .client
            .get(app.url(&format!("/v1/log/{}", id.path())))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), StatusCode::OK, "{}", id.path());
        assert_eq!(
            response.headers()["content-type"],
            "application/octet-stream"
        );
        let bytes = response.bytes().await.unwrap();
        assert_eq!(bytes.len(), 32 * usize::from(id.width));
        let hashes = bytes
            .chunks(32)
            .map(|c| Hash::try_from(c).unwrap())
            .collect();
        fetched.insert((id.level, id.index), hashes);
    }
    let mut reader = Fetched(fetched);
    assert_eq!(
        tlog::tree_root(&mut reader, checkpoint.size).unwrap(),
        checkpoint.root
    );
    // A tile beyond the tree, wider than the tree's, or not a tile path.
    let partial = checkpoint.size % 256;
    for path in [
        "tile/0/005".to_owned(),
        format!("tile/0/001.p/{}", partial + 1),
        "tile/0/1".to_owned(),
        "tile/x/000".to_owned(),
    ] {
        expect_problem(
            app.client
                .get(app.url(&format!("/v1/log/{path}")))
                .send()
                .await
                .unwrap(),
            StatusCode::NOT_FOUND,
            "tile_not_found",
        )
        .await;
    }
}

/// The status list a token names, fetched and checked against the JWKS.
async fn status_list(app: &TestApp, claims: &Claims) -> mandate_core::VerifiedStatusList {
    let uri = claims.status.as_ref().unwrap().uri().as_str().to_owned();
    assert!(uri.starts_with(&app.base), "{uri}");
    let response = app
        .client
        .get(&uri)
        .header("accept", "application/statuslist+jwt")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(
        response.headers()["content-type"],
        "application/statuslist+jwt"
    );
    assert_eq!(response.headers()["cache-control"], "public, max-age=60");
    assert_eq!(response.headers()["access-control-allow-origin"], "*");
    let jwt = response.text().await.unwrap();
    let jwks = app
        .client
        .get(app.url("/.well-known/jwks.json"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let jwks = Jwks::parse(jwks.as_bytes()).unwrap();
    let now = app.clock.now().s();
    verify_status_list(&jwt, &jwks, now, Some(&uri)).unwrap()
}

fn claims_of(token: &Value) -> Claims {
    mandate_core::decode_unverified(text(&token["compact_jwt"]))
        .unwrap()
        .claims
}

#[tokio::test]
async fn revoking_a_root_sets_the_bit_of_every_descendant_in_the_signed_list() {
    let app = TestApp::spawn().await;
    let root = app.root("bot", &["crm:*"], &["read", "delegate"]).await;
    let child = expect_json(
        app.delegate(
            &root,
            json!({"agent_id": "helper", "resources": ["crm:*"], "actions": ["read", "delegate"]}),
        )
        .await,
        StatusCode::CREATED,
    )
    .await;
    let grandchild = expect_json(
        app.delegate(
            &child,
            json!({"agent_id": "helper-2", "resources": ["crm:a"], "actions": ["read"]}),
        )
        .await,
        StatusCode::CREATED,
    )
    .await;
    let bystander = app.root("other-bot", &["crm:*"], &["read"]).await;
    let chain: Vec<Claims> = [&root, &child, &grandchild]
        .into_iter()
        .map(claims_of)
        .collect();
    let bystander = claims_of(&bystander);
    let mut indices: Vec<u64> = chain
        .iter()
        .chain([&bystander])
        .map(|c| c.status.as_ref().unwrap().idx())
        .collect();
    indices.sort_unstable();
    indices.dedup();
    assert_eq!(indices.len(), 4, "every token its own index");
    let now = app.clock.now().s();
    let list = status_list(&app, &chain[0]).await;
    for claims in chain.iter().chain([&bystander]) {
        assert_eq!(check_status(claims, &list, now, Some(300)), Ok(()));
    }

    expect_json(
        app.post_auth(
            "/v1/vat/revoke",
            &app.admin_key,
            &json!({"jti": text(&root["jti"]), "reason": "done"}),
        )
        .await,
        StatusCode::OK,
    )
    .await;
    let list = status_list(&app, &chain[2]).await;
    for claims in &chain {
        assert_eq!(
            check_status(claims, &list, now, Some(300)),
            Err(StatusCheckError::Revoked)
        );
    }
    assert_eq!(check_status(&bystander, &list, now, Some(300)), Ok(()));
    // A list too old for the caller fails closed (counted from when it was
    // signed, which may be a second after `now` was read).
    assert_eq!(
        check_status(&bystander, &list, list.iat + 301, Some(300)),
        Err(StatusCheckError::Stale)
    );

    // Unchanged since the ETag: 304; a list past the tokens issued: 404.
    let uri = chain[0].status.as_ref().unwrap().uri().as_str().to_owned();
    let etag = app.client.get(&uri).send().await.unwrap().headers()["etag"].clone();
    let again = app
        .client
        .get(&uri)
        .header("if-none-match", etag.clone())
        .send()
        .await
        .unwrap();
    assert_eq!(again.status(), StatusCode::NOT_MODIFIED);
    assert_eq!(again.headers()["etag"], etag);
    for list in ["99", "x", "-1"] {
        expect_problem(
            app.client
                .get(app.url(&format!("/v1/vat/status/{list}")))
                .send()
                .await
                .unwrap(),
            StatusCode::NOT_FOUND,
            "status_list_not_found",
        )
        .await;
    }
}

/// A deployment's activity: tokens issued, delegated and revoked; records
/// made in one step, authorized and completed, denied, rated.
async fn activity(app: &TestApp) -> Vec<String> {
    let root = app
        .root("bot", &["crm:*"], &["read", "write", "delegate"])
        .await;
    let jti = text(&root["jti"]);
    let child = expect_json(
        app.delegate(
            &root,
            json!({"agent_id": "helper", "resources": ["crm:a"], "actions": ["read"]}),
        )
        .await,
        StatusCode::CREATED,
    )
    .await;
    let mut ids = Vec::new();
    for (resource, result) in [
        ("crm:1", "success"),
        ("crm:2", "error"),
        ("hr:3", "success"),
    ] {
        let made = app.act(jti, "read", resource, result).await;
        let made: Value = made.json().await.unwrap();
        ids.push(text(&made["aar_id"]).to_owned());
    }
    let authorized = expect_json(
        app.post(
            "/v1/vat/authorize",
            &json!({"vat_jti": jti, "action": "write", "resource": "crm:9", "spend_usd": 3}),
        )
        .await,
        StatusCode::OK,
    )
    .await;
    let pending = text(&authorized["aar_id"]).to_owned();
    expect_json(
        app.post(
            &format!("/v1/vat/aar/{pending}/complete"),
            &json!({"result": "success", "spend_usd": 2}),
        )
        .await,
        StatusCode::OK,
    )
    .await;
    expect_json(
        app.post_auth(
            &format!("/v1/vat/aar/{}/feedback", ids[0]),
            &app.admin_key,
            &json!({"rating": "flagged", "note": "look again"}),
        )
        .await,
        StatusCode::OK,
    )
    .await;
    expect_json(
        app.post_auth(
            "/v1/vat/revoke",
            &app.admin_key,
            &json!({"jti": text(&child["jti"])}),
        )
        .await,
        StatusCode::OK,
    )
    .await;
    ids.push(pending);
    ids
}

fn copy_folder(from: &Path) -> tempfile::TempDir {
    let to = tempfile::tempdir().unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), to.path().join(entry.file_name())).unwrap();
    }
    to
}

fn open(dir: &Path) -> Connection {
    store::open_writer(&dir.join(DB_FILE)).unwrap()
}

fn origin(conn: &Connection) -> String {
    recordlog::stored_origin(conn).unwrap().unwrap()
}

/// `mandate audit verify` on a data folder: its exit status and what it
/// printed.
fn audit_cli(dir: &Path) -> (bool, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_mandate"))
        .args(["audit", "verify", "--data-dir"])
        .arg(dir)
        .output()
        .unwrap();
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    (output.status.success(), said)
}

/// Tampers with a copy of the folder and runs the audit on it.
fn tampered(dir: &Path, edit: &str) -> (audit::Report, (bool, String)) {
    let copy = copy_folder(dir);
    let conn = open(copy.path());
    conn.execute_batch(edit).unwrap();
    let report = audit::verify(&conn, &origin(&conn)).unwrap();
    conn.close().unwrap();
    (report, audit_cli(copy.path()))
}

/// Every tampering of a copy of the database is caught and named; the
/// untouched log passes. SQLite only (it copies the data folder's files):
/// `cargo xtask test` leaves it out of the PostgreSQL pass.
#[tokio::test]
async fn audit_verify_names_every_tampering_of_a_copy_of_the_database() {
    let app = TestApp::spawn().await;
    let ids = activity(&app).await;
    let dir = app.stop().await;
    let conn = open(dir.path());
    let report = audit::verify(&conn, &origin(&conn)).unwrap();
    assert_eq!(report.findings, [], "{}", report.summary());
    assert_eq!(report.records, 5, "{}", report.summary());
    assert_eq!(report.tokens, 2);
    // issue ×2, delegate record, 3 records, authorize + complete, rating,
    // revocation.
    assert_eq!(report.leaves, 10);
    conn.close().unwrap();
    let (ok, said) = audit_cli(dir.path());
    assert!(ok, "{said}");
    assert!(said.contains("the log matches the database"), "{said}");

    // An edited result.
    let (report, (ok, said)) = tampered(
        dir.path(),
        &format!(
            "UPDATE records SET result = 'success' WHERE aar_id = '{}'",
            ids[1]
        ),
    );
    let first = &report.findings[0];
    assert!(
        first.what.contains(&ids[1]) && first.what.contains("result"),
        "{first}"
    );
    assert!(!ok && said.contains(&ids[1]), "{said}");

    // A deleted record (a refusal nobody should see).
    let (report, (ok, said)) = tampered(
        dir.path(),
        &format!("DELETE FROM records WHERE aar_id = '{}'", ids[2]),
    );
    assert!(
        report
            .findings
            .iter()
            .any(|f| f.what.contains(&ids[2]) && f.what.contains("not in the database")),
        "{:?}",
        report.findings
    );
    assert!(!ok && said.contains(&ids[2]), "{said}");

    // An inserted record, with no leaf.
    let (report, (ok, _)) = tampered(
        dir.path(),
        &format!(
            "INSERT INTO records (seq, aar_id, provenance_ref, jti, agent_id, action, resource,
                 status, result, spend_micros, trust_score, delegation_depth, human_ref,
                 assurance_level, created_at, completed_at, credential)
             SELECT seq + 100, 'aar_01kaqv3f0000000000000000zz', provenance_ref, jti, agent_id,
                 action, resource, status, result, spend_micros, trust_score, delegation_depth,
                 human_ref, assurance_level, created_at, completed_at, credential
             FROM records WHERE aar_id = '{}'",
            ids[0]
        ),
    );
    assert!(
        report.findings.iter().any(|f| f.what.contains(
            "record aar_01kaqv3f0000000000000000zz is in the database but not in the log"
        )),
        "{:?}",
        report.findings
    );
    assert!(!ok);

    // Two leaves swapped (their bytes and hashes): the records they describe
    // differ from them, and the signed roots are no longer the tree's.
    let swap = "UPDATE log_leaves SET idx = -1 WHERE idx = 3;
                UPDATE log_leaves SET idx = 3 WHERE idx = 4;
                UPDATE log_leaves SET idx = 4 WHERE idx = -1;";
    let (report, (ok, _)) = tampered(dir.path(), swap);
    assert_eq!(report.findings[0].index, Some(3), "{:?}", report.findings);
    assert!(
        report
            .findings
            .iter()
            .any(|f| f.what.contains("signed another root")),
        "{:?}",
        report.findings
    );
    assert!(!ok);

    // A record and its leaf edited together: the checkpoints give it away.
    let conn = open(dir.path());
    let index: u64 = conn
        .query_row(
            "SELECT log_created FROM records WHERE aar_id = ?1",
            [&ids[1]],
            |row| row.get(0),
        )
        .unwrap();
    let leaf = mandate_host::store::log::leaf(&conn, index)
        .unwrap()
        .unwrap();
    conn.close().unwrap();
    let forged = String::from_utf8(leaf)
        .unwrap()
        .replace("\"result\":\"error\"", "\"result\":\"success\"");
    let forged_hash = tlog::leaf_hash(forged.as_bytes());
    let hex = |bytes: &[u8]| bytes.iter().map(|b| format!("{b:02x}")).collect::<String>();
    let (report, (ok, _)) = tampered(
        dir.path(),
        &format!(
            "UPDATE records SET result = 'success' WHERE aar_id = '{}';
             UPDATE log_leaves SET leaf = x'{}', hash = x'{}' WHERE idx = {index};",
            ids[1],
            hex(forged.as_bytes()),
            hex(&forged_hash)
        ),
    );
    assert!(
        report
            .findings
            .iter()
            .filter_map(|f| f.index)
            .all(|i| i >= index),
        "{:?}",
        report.findings
    );
    assert!(
        report
            .findings
            .iter()
            .any(|f| f.what.contains("signed another root")),
        "{:?}",
        report.findings
    );
    assert!(!ok);
}

/// `mandate audit watch URL --once`: its exit status and what it printed.
/// (It runs off the test's runtime, which serves the server it watches.)
async fn watch(app: &TestApp, vkey: &str, state: &Path) -> (bool, String) {
    let mut command = Command::new(env!("CARGO_BIN_EXE_mandate"));
    command
        .args([
            "audit", "watch", &app.base, "--vkey", vkey, "--once", "--state",
        ])
        .arg(state);
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_watcher_follows_a_growing_log_and_catches_a_fork() {
    let app = TestApp::spawn().await;
    let root = app.root("bot", &["crm:*"], &["read"]).await;
    let vkey = verifiers(&app).await[0].vkey();
    let state_dir = tempfile::tempdir().unwrap();
    let state = state_dir.path().join("trusted");
    let (ok, said) = watch(&app, &vkey, &state).await;
    assert!(ok, "{said}");
    let first = std::fs::read_to_string(&state).unwrap();
    for n in 0..5 {
        app.act(text(&root["jti"]), "read", &format!("crm:{n}"), "success")
            .await;
    }
    let (ok, said) = watch(&app, &vkey, &state).await;
    assert!(ok && said.contains("trusting"), "{said}");
    let grown = std::fs::read_to_string(&state).unwrap();
    assert_ne!(first, grown);

    // The operator (who holds the log key) signs another tree of the size
    // the watcher trusts: a fork. The watcher refuses the log's real one.
    let verifiers = verifiers(&app).await;
    let trusted = open_checkpoint(&grown, None, &verifiers).unwrap();
    let dir = app.dir.as_ref().unwrap().path().to_owned();
    let origin = trusted.origin.clone();
    let forged = app.with_database(move |conn| {
        let kek = Kek::read_file(&dir.join(KEY_FILE)).unwrap().unwrap();
        let signers = recordlog::keys::load(conn, &kek, &origin).unwrap();
        recordlog::sign_checkpoint(&signers, &origin, trusted.size, [7; 32], 0)
            .unwrap()
            .note
    });
    std::fs::write(&state, &forged).unwrap();
    let (ok, said) = watch(&app, &vkey, &state).await;
    assert!(!ok && said.contains("FORK"), "{said}");
    assert!(said.contains("different roots"), "{said}");

    // A key the log does not sign with: nothing verifies.
    std::fs::remove_file(&state).unwrap();
    let stranger = mandate_core::NoteSigner::new(&[3; 32], &trusted.origin).unwrap();
    let (ok, said) = watch(&app, &stranger.vkey(), &state).await;
    assert!(!ok && said.contains("does not verify"), "{said}");
}

/// A record's leaf carries the hash of the arguments its act was
/// attempted with: a hash edited, or dropped, in the database is caught
/// and named. SQLite only, as above (xtask keeps it off the PostgreSQL
/// pass).
#[tokio::test]
async fn audit_verify_checks_the_hash_of_a_records_arguments() {
    let app = TestApp::spawn().await;
    let token = app.root("mailer", &["mail:*"], &["send"]).await;
    let recorded = expect_json(
        app.post_auth(
            "/v1/vat/record/action",
            text(&token["compact_jwt"]),
            &json!({"action": "send", "resource": "mail:outbox", "result": "success",
                    "args": {"to": "a@example.com"}}),
        )
        .await,
        StatusCode::CREATED,
    )
    .await;
    let aar_id = text(&recorded["aar_id"]).to_owned();
    let dir = app.stop().await;
    let conn = open(dir.path());
    let report = audit::verify(&conn, &origin(&conn)).unwrap();
    assert_eq!(report.findings, [], "{}", report.summary());
    let leaf: Vec<u8> = conn
        .query_row(
            "SELECT leaf FROM log_leaves ORDER BY idx DESC LIMIT 1",
            [],
            |row| row.get(0),
        )
        .unwrap();
    let hash = mandate_core::Args::parse(br#"{"to": "a@example.com"}"#)
        .unwrap()
        .hash()
        .to_string();
    assert!(
        String::from_utf8(leaf)
            .unwrap()
            .contains(&format!("\"args_hash\":\"{hash}\"")),
        "the leaf names the hash"
    );
    conn.close().unwrap();
    for edit in [
        format!(
            "UPDATE records SET args_hash = 'sha256:{}' WHERE aar_id = '{aar_id}'",
            "0".repeat(64)
        ),
        format!("UPDATE records SET args_hash = NULL WHERE aar_id = '{aar_id}'"),
    ] {
        let (report, (ok, said)) = tampered(dir.path(), &edit);
        assert!(
            report
                .findings
                .iter()
                .any(|f| f.what.contains(&aar_id) && f.what.contains("args_hash")),
            "{edit}: {:?}",
            report.findings
        );
        assert!(!ok && said.contains(&aar_id), "{said}");
    }
}

/// The upgrade to schema 15, on either engine: a database of the release
/// before, whose state row keeps no log size, goes on appending where its
/// log ended (the size read from its leaves), and keeps the size from the
/// first group that stores leaves; the log audits clean.
#[tokio::test]
async fn the_upgrade_to_schema_15_keeps_the_logs_size() {
    use mandate_host::store::sql::Dialect;
    let app = TestApp::spawn().await;
    let token = app.root("keeper", &["crm:*"], &["read"]).await;
    for n in 0..2 {
        expect_json(
            app.act(
                text(&token["jti"]),
                "read",
                &format!("crm:lead/{n}"),
                "success",
            )
            .await,
            StatusCode::CREATED,
        )
        .await;
    }
    let dir = app.stop().await;
    crate::helpers::with_database(dir.path(), |conn| {
        conn.execute_batch(crate::helpers::DROP_LOG_SIZE).unwrap();
        crate::helpers::set_schema_version(conn, 14);
    });
    let app = TestApp::spawn_in(dir, |_| {}).await;
    expect_json(
        app.act(text(&token["jti"]), "read", "crm:lead/2", "success")
            .await,
        StatusCode::CREATED,
    )
    .await;
    let dir = app.stop().await;
    crate::helpers::with_database(dir.path(), |conn| {
        let count = |sql: &str| -> i64 { conn.query_row(sql, [], |row| row.get(0)).unwrap() };
        // The issue and three records: four leaves, numbered without a gap.
        assert_eq!(count("SELECT count(*) FROM log_leaves"), 4);
        assert_eq!(count("SELECT max(idx) + 1 FROM log_leaves"), 4);
        assert_eq!(count("SELECT next_log_idx FROM ledger_state"), 4);
        let version: i64 = match conn.dialect() {
            Dialect::Sqlite => count("PRAGMA user_version"),
            Dialect::Postgres => count("SELECT version FROM mandate_schema"),
        };
        assert_eq!(version, mandate_host::store::SCHEMA_VERSION);
        let report = audit::verify(conn, &origin(conn)).unwrap();
        assert_eq!(report.findings, [], "{}", report.summary());
    });
}

/// The upgrade to schema 16, on either engine: a database of the release
/// before, whose log kept its tile entries with every group, has its
/// integrated size filled in and goes on appending; a checkpoint then
/// covers every committed leaf, a token issued after the upgrade takes a
/// status index no earlier token has (PostgreSQL: from the new sequence,
/// started past the state row's), and the log audits clean.
#[tokio::test]
async fn the_upgrade_to_schema_16_integrates_the_log_after_its_groups() {
    use mandate_host::store::sql::Dialect;
    let app = TestApp::spawn().await;
    let token = app.root("keeper", &["crm:*"], &["read"]).await;
    for n in 0..2 {
        expect_json(
            app.act(
                text(&token["jti"]),
                "read",
                &format!("crm:lead/{n}"),
                "success",
            )
            .await,
            StatusCode::CREATED,
        )
        .await;
    }
    let dir = app.stop().await;
    crate::helpers::with_database(dir.path(), |conn| {
        crate::helpers::set_schema_version(conn, 15);
    });
    let app = TestApp::spawn_in(dir, |_| {}).await;
    expect_json(
        app.act(text(&token["jti"]), "read", "crm:lead/2", "success")
            .await,
        StatusCode::CREATED,
    )
    .await;
    app.root("second", &["crm:*"], &["read"]).await;
    checkpoint(&app).await;
    let dir = app.stop().await;
    crate::helpers::with_database(dir.path(), |conn| {
        let count = |sql: &str| -> i64 { conn.query_row(sql, [], |row| row.get(0)).unwrap() };
        // Two issues and three records: five leaves, all integrated.
        assert_eq!(count("SELECT count(*) FROM log_leaves"), 5);
        assert_eq!(count("SELECT size FROM log_integration"), 5);
        assert_eq!(count("SELECT next_log_idx FROM ledger_state"), 5);
        assert_eq!(count("SELECT max(size) FROM log_checkpoints"), 5);
        assert_eq!(
            count("SELECT count(DISTINCT status_idx) FROM tokens"),
            count("SELECT count(*) FROM tokens")
        );
        let version: i64 = match conn.dialect() {
            Dialect::Sqlite => count("PRAGMA user_version"),
            Dialect::Postgres => count("SELECT version FROM mandate_schema"),
        };
        assert_eq!(version, mandate_host::store::SCHEMA_VERSION);
        assert_eq!(version, 17);
        let report = audit::verify(conn, &origin(conn)).unwrap();
        assert_eq!(report.findings, [], "{}", report.summary());
    });
}

//! What survives a restart, and signing-key rotation.

use mandate_core::{Jwks, VerifyOptions, verify};
use mandate_host::secrets::{self, Kek};
use mandate_host::{keyring, store};
use reqwest::StatusCode;
use serde_json::json;

use crate::helpers::{TestApp, expect_json, text};

#[tokio::test]
async fn records_keys_and_api_keys_survive_a_restart() {
    let app = TestApp::spawn().await;
    let admin_key = app.admin_key.clone();
    let root = app.root("bot", &["crm:*"], &["read", "delegate"]).await;
    let jti = text(&root["jti"]).to_owned();
    let recorded = expect_json(
        app.act(&jti, "read", "crm:a", "success").await,
        StatusCode::CREATED,
    )
    .await;
    let aar = text(&recorded["aar_id"]).to_owned();
    expect_json(
        app.post_auth(
            &format!("/v1/vat/aar/{aar}/feedback"),
            &admin_key,
            &json!({"rating": "flagged"}),
        )
        .await,
        StatusCode::OK,
    )
    .await;
    let before = expect_json(
        app.get_auth(&format!("/v1/vat/aar/{aar}"), &admin_key)
            .await,
        StatusCode::OK,
    )
    .await;
    let jwks_before = app
        .client
        .get(app.url("/.well-known/jwks.json"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();

    let dir = app.stop().await;
    let app = TestApp::spawn_in(dir, |_| {}).await;
    assert_eq!(
        app.admin_key, admin_key,
        "the admin key is reused, not recreated"
    );
    let after = expect_json(
        app.get_auth(&format!("/v1/vat/aar/{aar}"), &admin_key)
            .await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(after, before);
    let jwks_after = app
        .client
        .get(app.url("/.well-known/jwks.json"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert_eq!(jwks_after, jwks_before, "the signing key survives");
    let keys = Jwks::parse(jwks_after.as_bytes()).unwrap();
    verify(
        text(&root["compact_jwt"]),
        &keys,
        mandate_host::clock::now_s(),
        &VerifyOptions::default(),
    )
    .unwrap();
    expect_json(
        app.act(&jti, "read", "crm:b", "success").await,
        StatusCode::CREATED,
    )
    .await;
    let reputation = expect_json(
        app.get_auth("/v1/vat/reputation/bot", &admin_key).await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(reputation["total_actions"], 2);
    assert_eq!(reputation["counts"]["flagged"], 1);
}

#[tokio::test]
async fn rotated_keys_stay_published_while_their_tokens_live() {
    let app = TestApp::spawn().await;
    let old = app.root("bot", &["crm:*"], &["read"]).await;
    let kek = Kek::read_file(&app.dir.as_ref().unwrap().path().join(secrets::KEY_FILE))
        .unwrap()
        .unwrap();
    let new_kid = app.with_database(|conn| {
        let tx = conn.unchecked_transaction().unwrap();
        let new_kid = keyring::rotate(&tx, &kek, app.clock.now()).unwrap();
        tx.commit().unwrap();
        new_kid
    });
    // A token naming the new kid makes the server re-read its keys at once;
    // until then the periodic refresh picks the rotation up.
    let dir = app.stop().await;
    let app = TestApp::spawn_in(dir, |_| {}).await;
    let new = app.root("bot", &["crm:*"], &["read"]).await;
    let jwks: serde_json::Value = app
        .client
        .get(app.url("/.well-known/jwks.json"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let kids: Vec<&str> = jwks["keys"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| text(&k["kid"]))
        .collect();
    assert_eq!(kids.len(), 2);
    assert!(kids.contains(&new_kid.as_str()));
    let keys = Jwks::parse(jwks.to_string().as_bytes()).unwrap();
    let now = mandate_host::clock::now_s();
    for token in [&old, &new] {
        verify(
            text(&token["compact_jwt"]),
            &keys,
            now,
            &VerifyOptions::default(),
        )
        .unwrap();
    }
    let header = text(&new["compact_jwt"])
        .split('.')
        .next()
        .unwrap()
        .to_owned();
    assert!(
        String::from_utf8(base64_decode(&header))
            .unwrap()
            .contains(&new_kid)
    );
}

fn base64_decode(text: &str) -> Vec<u8> {
    use base64::Engine as _;
    base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(text)
        .unwrap()
}

/// Turns a data folder of this release back into the shape the first
/// release wrote (schema version 1): no workflow counts, tokens by jti only,
/// delegated tokens' stored claims naming their ancestors by jti, signing
/// keys that cannot be revoked.
fn downgrade_to_version_1(db: &std::path::Path, root_jti: &str, child_jti: &str) {
    let conn = rusqlite::Connection::open(db).unwrap();
    let claims: String = conn
        .query_row(
            "SELECT claims FROM tokens WHERE jti = ?1",
            [child_jti],
            |row| row.get(0),
        )
        .unwrap();
    let mut claims: serde_json::Value = serde_json::from_str(&claims).unwrap();
    claims["svc_parent"] = json!(root_jti);
    claims["svc_chain"] = json!([root_jti]);
    conn.execute(
        "UPDATE tokens SET claims = ?1 WHERE jti = ?2",
        rusqlite::params![claims.to_string(), child_jti],
    )
    .unwrap();
    conn.execute_batch(
        "ALTER TABLE records DROP COLUMN args_hash;
         ALTER TABLE records DROP COLUMN args;
         ALTER TABLE records DROP COLUMN origin;
         ALTER TABLE records DROP COLUMN trust_ppm;
         ALTER TABLE agents DROP COLUMN owner;
         ALTER TABLE agents DROP COLUMN parent;
         DROP TABLE vouches;
         DROP TABLE agent_days;
         DROP TABLE org_hours;
         DROP TABLE org_counts;
         DROP TABLE human_labels;
         DROP INDEX records_unrated;
         DROP INDEX records_unrated_by_agent;
         DROP INDEX tokens_by_issue;
         DROP INDEX tokens_by_budget;
         DROP INDEX workflows_by_human;
         ALTER TABLE tokens DROP COLUMN budget_percent;
         ALTER TABLE tokens DROP COLUMN budget_limit;
         ALTER TABLE agents DROP COLUMN last_activity;
         DROP TABLE oauth_clients;
         DROP TABLE oauth_codes;
         DROP TABLE oauth_grants;
         DROP TABLE oauth_refresh_tokens;
         DROP TABLE log_witnesses;
         DROP TABLE log_cosignatures;
         DROP TABLE log_submitter;
         DROP TABLE oauth_resources;
         ALTER TABLE records DROP COLUMN relay_jkt;
         DROP TABLE approvals;
         DROP TABLE events;
         DROP TABLE webhooks;
         DROP TABLE deliveries;
         ALTER TABLE records DROP COLUMN traceparent;
         DROP TABLE log_leaves;
         DROP TABLE log_nodes;
         DROP TABLE log_integration;
         DROP TABLE log_checkpoints;
         DROP TABLE log_keys;
         DROP TABLE ledger_state;
         DROP TABLE status_lists;
         DELETE FROM meta WHERE key = 'log_origin';
         ALTER TABLE tokens DROP COLUMN status_idx;
         ALTER TABLE tokens DROP COLUMN log_issued;
         ALTER TABLE tokens DROP COLUMN log_revoked;
         ALTER TABLE tokens DROP COLUMN revoke_cause;
         ALTER TABLE records DROP COLUMN reserved_micros;
         ALTER TABLE records DROP COLUMN rated_by;
         ALTER TABLE records DROP COLUMN log_created;
         ALTER TABLE records DROP COLUMN log_completed;
         ALTER TABLE records DROP COLUMN log_rated;
         DROP TABLE orgs;
         DROP INDEX api_keys_by_org;
         ALTER TABLE api_keys DROP COLUMN org;
         ALTER TABLE api_keys DROP COLUMN role;
         DROP INDEX tokens_by_agent;
         DROP INDEX tokens_by_expiry;
         ALTER TABLE tokens DROP COLUMN org;
         CREATE INDEX tokens_by_agent ON tokens(agent_id);
         ALTER TABLE records DROP COLUMN org;
         CREATE TABLE agents_v3 (
             agent_id TEXT PRIMARY KEY, successes INTEGER NOT NULL DEFAULT 0,
             failures INTEGER NOT NULL DEFAULT 0, pending INTEGER NOT NULL DEFAULT 0,
             approved INTEGER NOT NULL DEFAULT 0, flagged INTEGER NOT NULL DEFAULT 0,
             rejected INTEGER NOT NULL DEFAULT 0) STRICT;
         INSERT INTO agents_v3 SELECT agent_id, successes, failures, pending, approved, flagged,
             rejected FROM agents;
         DROP TABLE agents;
         ALTER TABLE agents_v3 RENAME TO agents;
         DROP INDEX workflows_by_activity;
         ALTER TABLE workflows DROP COLUMN org;
         CREATE INDEX workflows_by_activity ON workflows(last_activity);
         CREATE TABLE idempotency_v3 (
             scope TEXT NOT NULL, key TEXT NOT NULL, request_hash BLOB NOT NULL,
             status INTEGER NOT NULL, body BLOB NOT NULL, created_at INTEGER NOT NULL,
             PRIMARY KEY (scope, key)) STRICT;
         INSERT INTO idempotency_v3 SELECT scope, key, request_hash, status, body, created_at
             FROM idempotency;
         DROP TABLE idempotency;
         ALTER TABLE idempotency_v3 RENAME TO idempotency;
         CREATE INDEX idempotency_by_age ON idempotency(created_at);
         DROP INDEX tokens_by_jth;
         ALTER TABLE tokens DROP COLUMN children;
         ALTER TABLE tokens RENAME COLUMN jth TO root;
         CREATE INDEX tokens_by_root ON tokens(root);
         ALTER TABLE records DROP COLUMN credential;
         ALTER TABLE signing_keys DROP COLUMN revoked_at;
         DROP TABLE workflow_counts;
         PRAGMA user_version = 1;",
    )
    .unwrap();
    conn.execute("UPDATE tokens SET root = ?1", [root_jti])
        .unwrap();
}

#[tokio::test]
async fn an_upgrade_from_schema_1_keeps_every_workflow_and_token() {
    let app = TestApp::spawn().await;
    let root = app
        .root("bot", &["crm:*"], &["read", "write", "delegate"])
        .await;
    let jti = text(&root["jti"]).to_owned();
    let child = expect_json(
        app.delegate(
            &root,
            json!({"agent_id": "helper", "resources": ["crm:a"], "actions": ["read"]}),
        )
        .await,
        StatusCode::CREATED,
    )
    .await;
    let child_jti = text(&child["jti"]).to_owned();
    for (action, result) in [("read", "success"), ("read", "error"), ("write", "success")] {
        app.act(&jti, action, "crm:a", result).await;
    }
    app.act(&jti, "delete", "crm:a", "success").await;
    let pending = json!({"vat_jti": jti, "action": "write", "resource": "crm:b"});
    expect_json(
        app.post("/v1/vat/authorize", &pending).await,
        StatusCode::OK,
    )
    .await;
    let path = format!("/v1/vat/aar/provenance/{}", text(&root["provenance_ref"]));
    let before = expect_json(app.get_auth(&path, &app.admin_key).await, StatusCode::OK).await;
    assert_eq!(before["total_records"], 6);
    assert_eq!(
        before["results_by_type"],
        json!({"success": 3, "error": 1, "denied": 1, "pending": 1})
    );

    let dir = app.stop().await;
    downgrade_to_version_1(&dir.path().join(store::DB_FILE), &jti, &child_jti);
    let app = TestApp::spawn_in(dir, |_| {}).await;
    let after = expect_json(app.get_auth(&path, &app.admin_key).await, StatusCode::OK).await;
    assert_eq!(after, before);
    // The child's stored ancestors are now jti hashes, and it works as before.
    expect_json(
        app.act(&child_jti, "read", "crm:a", "success").await,
        StatusCode::CREATED,
    )
    .await;
    let conn =
        rusqlite::Connection::open(app.dir.as_ref().unwrap().path().join(store::DB_FILE)).unwrap();
    let (stored, children): (String, i64) = conn
        .query_row(
            "SELECT c.claims, r.children FROM tokens c JOIN tokens r ON r.jti = c.parent
             WHERE c.jti = ?1",
            [&child_jti],
            |row| Ok((row.get(0)?, row.get(1)?)),
        )
        .unwrap();
    assert!(!stored.contains(jti.as_str()), "{stored}");
    assert_eq!(children, 1);
    // The root's budget walk finds its ancestors by hash: a grandchild works.
    expect_json(
        app.delegate(
            &root,
            json!({"agent_id": "helper2", "resources": ["crm:a"], "actions": ["read"]}),
        )
        .await,
        StatusCode::CREATED,
    )
    .await;
}

/// SQLite serves one process: a second server on a served data folder is
/// refused with a message naming the way to several hosts; once the first
/// stops, the folder serves again.
#[tokio::test]
async fn a_second_server_on_a_served_sqlite_folder_is_refused() {
    let app = TestApp::spawn().await;
    let config = mandate_host::config::Config::for_test(app.dir.as_ref().unwrap().path());
    let refused = mandate_host::AppState::open(config)
        .unwrap_err()
        .to_string();
    assert!(
        refused.contains("another `mandate serve` serves") && refused.contains("PostgreSQL"),
        "{refused}"
    );
    let dir = app.stop().await;
    TestApp::spawn_in(dir, |_| {}).await.stop().await;
}

//! Moving a deployment between engines: `mandate export` of a SQLite data
//! folder and `mandate import` into a new database (SQLite on the first
//! pass, PostgreSQL on the second), which then answers exactly as the
//! source did; an import into a database that holds a deployment, or of a
//! cut file, is refused and leaves nothing.

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::helpers::{TestApp, expect_json, text};
use crate::process::{operator, operator_on};

/// What the deployment answers about its workflow, agent, token, records
/// and organisations.
async fn answers(app: &TestApp, root: &Value) -> Vec<Value> {
    let key = &app.admin_key;
    let mut answers = Vec::new();
    for path in [
        "/v1/vat/aar?agent_id=bot&limit=100".to_owned(),
        "/v1/vat/reputation/bot".to_owned(),
        format!("/v1/vat/aar/provenance/{}", text(&root["provenance_ref"])),
        format!(
            "/v1/vat/aar/provenance/{}/graph",
            text(&root["provenance_ref"])
        ),
        format!("/v1/vat/tokens/{}", text(&root["jti"])),
        "/v1/orgs".to_owned(),
        "/v1/keys".to_owned(),
    ] {
        answers.push(expect_json(app.get_auth(&path, key).await, StatusCode::OK).await);
    }
    answers
}

#[tokio::test]
async fn a_sqlite_deployment_moves_into_a_new_database_and_answers_the_same() {
    let source = TestApp::spawn_with(|config| config.database.url = None).await;
    let root = source.root("bot", &["crm:*"], &["read", "delegate"]).await;
    let child = expect_json(
        source
            .delegate(
                &root,
                json!({"agent_id": "helper", "resources": ["crm:a"], "actions": ["read"]}),
            )
            .await,
        StatusCode::CREATED,
    )
    .await;
    let record = expect_json(
        source
            .act(text(&root["jti"]), "read", "crm:a", "success")
            .await,
        StatusCode::CREATED,
    )
    .await;
    source
        .act(text(&child["jti"]), "read", "crm:b", "error")
        .await;
    // Arguments move with their record (listed below, hash and all).
    expect_json(
        source
            .post(
                "/v1/vat/record/action",
                &json!({"vat_jti": root["jti"], "action": "read", "resource": "crm:c",
                        "result": "success", "args": {"q": "moved"}}),
            )
            .await,
        StatusCode::CREATED,
    )
    .await;
    expect_json(
        source
            .post_auth(
                &format!("/v1/vat/aar/{}/feedback", text(&record["aar_id"])),
                &source.admin_key,
                &json!({"rating": "approved", "note": "moved with it"}),
            )
            .await,
        StatusCode::OK,
    )
    .await;
    source.org("acme").await;
    let before = answers(&source, &root).await;
    let dir = source.stop().await;

    let file = dir.path().join("export.jsonl");
    let file_arg = file.to_str().unwrap();
    let (status, stdout, stderr) = operator_on(dir.path(), None, &["export", file_arg]);
    assert!(status.success(), "{stderr}");
    assert!(stdout.starts_with("exported "), "{stdout}");
    let (again, _, stderr) = operator_on(dir.path(), None, &["export", file_arg]);
    assert!(
        !again.success() && stderr.contains("must not exist"),
        "{stderr}"
    );

    let target = tempfile::tempdir().unwrap();
    share_files(dir.path(), target.path());
    let (status, stdout, stderr) = operator(target.path(), &["import", file_arg]);
    assert!(status.success(), "{stderr}");
    assert!(stdout.contains("the key file of the source"), "{stdout}");
    // Into a database that holds a deployment: refused.
    let (status, _, stderr) = operator(target.path(), &["import", file_arg]);
    assert!(
        !status.success() && stderr.contains("already holds a deployment"),
        "{stderr}"
    );

    let moved = TestApp::spawn_in(target, |_| {}).await;
    assert_eq!(answers(&moved, &root).await, before);
    // The tokens act there, and the records go on after the source's.
    expect_json(
        moved
            .act(text(&child["jti"]), "read", "crm:a", "success")
            .await,
        StatusCode::CREATED,
    )
    .await;
    let records = expect_json(
        moved
            .get_auth("/v1/vat/aar?limit=100", &moved.admin_key)
            .await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(records["records"].as_array().unwrap().len(), 5);
    moved.stop().await;

    // A cut file is refused and leaves nothing: the whole file imports
    // into the same database afterwards.
    let text_of_file = std::fs::read_to_string(&file).unwrap();
    let cut = dir.path().join("cut.jsonl");
    let lines: Vec<&str> = text_of_file.lines().collect();
    std::fs::write(&cut, lines[..lines.len() - 3].join("\n")).unwrap();
    let third = tempfile::tempdir().unwrap();
    share_files(dir.path(), third.path());
    let (status, _, stderr) = operator(third.path(), &["import", cut.to_str().unwrap()]);
    assert!(!status.success() && stderr.contains("cut"), "{stderr}");
    let (status, _, stderr) = operator(third.path(), &["import", file_arg]);
    assert!(status.success(), "{stderr}");
}

/// The key file and the admin key of the source, in a new data folder (the
/// database is the pass's own for that folder).
fn share_files(from: &std::path::Path, to: &std::path::Path) {
    for file in [
        mandate_host::secrets::KEY_FILE,
        mandate_host::setup::ADMIN_KEY_FILE,
    ] {
        std::fs::copy(from.join(file), to.join(file)).unwrap();
    }
}

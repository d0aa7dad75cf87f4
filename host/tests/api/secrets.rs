//! Signing keys and the human-reference secret are sealed under the key
//! file, which never enters the database.

use std::path::Path;

use mandate_host::AppState;
use mandate_host::config::Config;
use mandate_host::secrets::{self, Kek, Purpose};
use mandate_host::store::DB_FILE;
use reqwest::StatusCode;
use rusqlite::{Connection, OpenFlags};

use crate::helpers::{TestApp, expect_json, test_database, text};
use crate::process::operator;

/// Every stored file of the database, concatenated.
fn database_bytes(data: &Path) -> Vec<u8> {
    let mut bytes = Vec::new();
    for suffix in ["", "-wal", "-shm"] {
        let path = data.join(format!("{DB_FILE}{suffix}"));
        assert!(path.exists(), "{} is missing", path.display());
        bytes.extend(std::fs::read(path).unwrap());
    }
    bytes
}

fn holds(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

/// The plain secrets, read from the database and opened with the key file.
fn opened_secrets(data: &Path) -> Vec<(String, [u8; 32])> {
    let kek = Kek::read_file(&data.join(secrets::KEY_FILE))
        .unwrap()
        .unwrap();
    let conn =
        Connection::open_with_flags(data.join(DB_FILE), OpenFlags::SQLITE_OPEN_READ_ONLY).unwrap();
    let mut opened = Vec::new();
    let mut statement = conn
        .prepare("SELECT kid, secret FROM signing_keys")
        .unwrap();
    let rows = statement
        .query_map([], |row| {
            Ok((row.get::<_, String>(0)?, row.get::<_, Vec<u8>>(1)?))
        })
        .unwrap();
    for row in rows {
        let (kid, sealed) = row.unwrap();
        assert_eq!(sealed.len(), secrets::SEALED_LEN);
        let secret = kek.open(Purpose::SigningKey, &kid, &sealed).unwrap();
        opened.push((format!("signing key {kid}"), secret));
    }
    let sealed: Vec<u8> = conn
        .query_row(
            "SELECT value FROM meta WHERE key = 'human_ref_secret'",
            [],
            |row| row.get(0),
        )
        .unwrap();
    let secret = kek
        .open(Purpose::HumanRefSecret, "human_ref_secret", &sealed)
        .unwrap();
    opened.push(("the human-reference secret".to_owned(), secret));
    opened
}

#[tokio::test]
async fn no_secret_reaches_the_database_files() {
    let app = TestApp::spawn().await;
    app.root("bot", &["crm:*"], &["read"]).await;
    let dir = app.stop().await;
    let (status, stdout, stderr) = operator(dir.path(), &["signing-key", "rotate"]);
    assert!(status.success(), "{stderr}");
    assert!(stdout.starts_with("new signing key "), "{stdout}");
    let app = TestApp::spawn_in(dir, |_| {}).await;
    let root = app.root("bot", &["crm:*"], &["read"]).await;
    expect_json(
        app.act(text(&root["jti"]), "read", "crm:a", "success")
            .await,
        StatusCode::CREATED,
    )
    .await;

    // Read while the server runs, so the -wal and -shm files exist.
    let data = app.dir.as_ref().unwrap().path().to_owned();
    let opened = opened_secrets(&data);
    assert_eq!(opened.len(), 3, "two signing keys and the human secret");
    let files = database_bytes(&data);
    for (name, secret) in &opened {
        assert!(!holds(&files, secret), "{name} is in the database files");
    }
    let kek = std::fs::read(data.join(secrets::KEY_FILE)).unwrap();
    assert!(
        !holds(&files, &kek),
        "the key-encryption key is in the database files"
    );
    app.stop().await;
}

/// The message a start on `data` with this key file fails with.
fn refusal(data: &Path, key_file: &Path) -> String {
    let mut config = Config::for_test(data);
    config.database.url = test_database(data);
    config.key_file = Some(key_file.to_owned());
    AppState::open(config).unwrap_err().to_string()
}

#[tokio::test]
async fn a_wrong_key_file_is_refused() {
    let dir = TestApp::spawn().await.stop().await;
    let other = tempfile::tempdir().unwrap();
    let wrong = other.path().join("wrong.key");
    std::fs::write(&wrong, [9u8; 32]).unwrap();
    let message = refusal(dir.path(), &wrong);
    assert_eq!(
        message,
        format!(
            "the key file {} does not open this database's secrets; name the key file this \
             data folder was made with (--key-file, MANDATE_KEY_FILE, config key_file)",
            wrong.display()
        )
    );
    // The operator commands open the secrets the same way.
    let (status, _, stderr) = operator(
        dir.path(),
        &["keys", "list", "--key-file", wrong.to_str().unwrap()],
    );
    assert!(!status.success());
    assert!(
        stderr.contains("does not open this database's secrets"),
        "{stderr}"
    );
    // The right key still opens it.
    TestApp::spawn_in(dir, |_| {}).await.stop().await;
}

#[tokio::test]
async fn a_missing_key_file_is_refused_and_never_made_anew() {
    let dir = TestApp::spawn().await.stop().await;
    let key_file = dir.path().join(secrets::KEY_FILE);
    let kept = tempfile::tempdir().unwrap();
    let moved = kept.path().join("kept.key");
    std::fs::rename(&key_file, &moved).unwrap();
    let message = refusal(dir.path(), &key_file);
    assert_eq!(
        message,
        format!(
            "the key file {} is missing, and this database's secrets are encrypted under it; \
             restore it, or name it with --key-file (MANDATE_KEY_FILE, config key_file)",
            key_file.display()
        )
    );
    assert!(
        !key_file.exists(),
        "no new key file is made for the database"
    );
    let (status, _, stderr) = operator(dir.path(), &["signing-key", "rotate"]);
    assert!(!status.success());
    assert!(stderr.contains("is missing"), "{stderr}");
    assert!(!key_file.exists());
    // Named where it now is, the key opens the database.
    let moved_to = moved.clone();
    let app = TestApp::spawn_in(dir, move |config| config.key_file = Some(moved_to)).await;
    app.root("bot", &["crm:*"], &["read"]).await;
    app.stop().await;
}

#[tokio::test]
async fn a_key_file_outside_the_data_folder_is_created_there_0600() {
    use std::os::unix::fs::PermissionsExt as _;
    let outside = tempfile::tempdir().unwrap();
    let key_file = outside.path().join("mandate.key");
    let path = key_file.clone();
    let app = TestApp::spawn_with(move |config| config.key_file = Some(path)).await;
    let data = app.dir.as_ref().unwrap().path().to_owned();
    assert!(!data.join(secrets::KEY_FILE).exists());
    let metadata = std::fs::metadata(&key_file).unwrap();
    assert_eq!(metadata.len(), 32);
    assert_eq!(metadata.permissions().mode() & 0o777, 0o600);
    app.stop().await;
}

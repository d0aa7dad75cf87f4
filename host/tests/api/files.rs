//! The data folder and the files in it belong to the server's user alone.

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;

use reqwest::StatusCode;
use serde_json::json;

use crate::helpers::{expect_json, text};
use crate::process::{Server, admin_key, config_without_limits, operator};

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o7777
}

fn set_mode(path: &Path, mode: u32) {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// The mode of every entry of a folder, by name.
fn modes(dir: &Path) -> BTreeMap<String, u32> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| {
            let entry = entry.unwrap();
            (
                entry.file_name().into_string().unwrap(),
                mode(&entry.path()),
            )
        })
        .collect()
}

/// Issues a token and records an action with it.
async fn write_something(server: &Server, key: &str) {
    let root = expect_json(
        server
            .client
            .post(server.url("/v1/vat/issue/l1"))
            .bearer_auth(key)
            .json(
                &json!({"developer_email": "dev@example.com", "agent_id": "bot",
                          "resources": ["crm:*"], "actions": ["read"]}),
            )
            .send()
            .await
            .unwrap(),
        StatusCode::CREATED,
    )
    .await;
    expect_json(
        server
            .client
            .post(server.url("/v1/vat/record/action"))
            .json(&json!({"vat_jti": text(&root["jti"]), "action": "read",
                          "resource": "crm:a", "result": "success"}))
            .send()
            .await
            .unwrap(),
        StatusCode::CREATED,
    )
    .await;
}

#[tokio::test]
async fn a_fresh_data_folder_is_private() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let server = Server::start(&data, &config_without_limits(dir.path()));
    write_something(&server, &admin_key(&data)).await;
    // Read while the server runs, so the -wal and -shm files exist.
    let found = modes(&data);
    for name in [
        "mandate.db",
        "mandate.db-wal",
        "mandate.db-shm",
        "admin.key",
    ] {
        assert!(found.contains_key(name), "{name} missing: {found:?}");
    }
    for (name, mode) in &found {
        assert_eq!(*mode, 0o600, "{name} has mode {mode:04o}");
    }
    assert_eq!(mode(&data), 0o700);
    server.kill();
}

#[tokio::test]
async fn a_data_folder_open_to_others_is_tightened_at_start() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let config = config_without_limits(dir.path());
    let server = Server::start(&data, &config);
    write_something(&server, &admin_key(&data)).await;
    // Killed, the server leaves its -wal and -shm files behind.
    server.kill();
    set_mode(&data, 0o755);
    for (name, _) in modes(&data) {
        set_mode(&data.join(name), 0o644);
    }
    assert_eq!(mode(&data.join("mandate.db")), 0o644);

    let log = dir.path().join("server.log");
    let server = Server::start_logging(&data, &config, &log);
    write_something(&server, &admin_key(&data)).await;
    assert_eq!(mode(&data), 0o700);
    for (name, mode) in modes(&data) {
        assert_eq!(mode, 0o600, "{name} has mode {mode:04o}");
    }
    server.kill();
    let log = std::fs::read_to_string(&log).unwrap();
    let warnings: Vec<&str> = log
        .lines()
        .filter(|line| line.contains("tightened the permissions"))
        .collect();
    for (path, from, to) in [
        (data.clone(), "0755", "0700"),
        (data.join("mandate.db"), "0644", "0600"),
        (data.join("admin.key"), "0644", "0600"),
    ] {
        let path = path.display().to_string();
        assert!(
            warnings
                .iter()
                .any(|line| line.contains(&format!("path={path} "))
                    && line.contains(&format!("from=\"{from}\""))
                    && line.contains(&format!("to=\"{to}\""))),
            "no warning for {path}: {warnings:#?}"
        );
    }
}

#[tokio::test]
async fn the_admin_key_stays_off_a_piped_stdout() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let server = Server::start(&data, &config_without_limits(dir.path()));
    let key = admin_key(&data);
    assert!(key.starts_with("mk_"), "{key}");
    let path = data.join("admin.key");
    assert_eq!(
        server.banner,
        [format!(
            "admin API key written to {} (mode 0600)",
            path.display()
        )]
    );
    assert!(!server.banner.concat().contains(&key));
    write_something(&server, &key).await;
    server.kill();
}

#[test]
fn the_operator_commands_keep_the_admin_key_off_a_piped_stdout() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let (status, stdout, stderr) = operator(&data, &["keys", "list"]);
    assert!(status.success(), "{stderr}");
    let key = admin_key(&data);
    assert!(key.starts_with("mk_"), "{key}");
    assert!(!stdout.contains(&key), "{stdout}");
    assert!(!stderr.contains(&key), "{stderr}");
    let path = data.join("admin.key");
    assert!(
        stdout.starts_with(&format!(
            "created the data folder; admin API key written to {} (mode 0600)\n",
            path.display()
        )),
        "{stdout}"
    );
}

//! `mandate config check`, `mandate config reference` and `mandate
//! healthcheck`, as an operator (or a container runtime) runs them.

use std::io::{Read as _, Write as _};

use crate::process::{Server, config_without_limits, operator_on};

/// Runs `mandate config check` on a file of `text`.
fn check(text: &str) -> (std::process::ExitStatus, String, String) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("mandate.toml");
    std::fs::write(&file, text).unwrap();
    operator_on(
        &dir.path().join("data"),
        None,
        &["config", "check", file.to_str().unwrap()],
    )
}

#[test]
fn a_valid_file_prints_its_resolved_configuration_and_never_a_secret() {
    let (status, stdout, stderr) = check(
        r#"
listen = "0.0.0.0:9000"
public_url = "https://mandate.example"

[database]
url = "postgres://mandate:hunter2-db@db.example/mandate"

[otel]
endpoint = "http://collector:4318"
headers = { authorization = "Bearer hunter2-otel" }

[rate_limits]
per_token = 7
"#,
    );
    assert!(status.success(), "{stderr}");
    assert!(stdout.contains("listen = \"0.0.0.0:9000\""), "{stdout}");
    assert!(stdout.contains("per_token = 7"), "{stdout}");
    // Defaults are shown too: the configuration the server would run with.
    assert!(stdout.contains("per_api_key = 1000"), "{stdout}");
    assert!(stdout.contains("url = \"[redacted]\""), "{stdout}");
    assert!(
        stdout.contains("authorization = \"[redacted]\""),
        "{stdout}"
    );
    for secret in ["hunter2", "mandate:", "Bearer"] {
        assert!(!stdout.contains(secret), "{secret} in {stdout}");
        assert!(!stderr.contains(secret), "{secret} in {stderr}");
    }
    // What it prints is a configuration file that reads back (a secret
    // aside): the same options.
    let printed: toml::Value = toml::from_str(&stdout).unwrap();
    assert_eq!(printed["rate_limits"]["per_token"].as_integer(), Some(7));
}

#[test]
fn every_interface_without_a_public_url_is_refused_by_check_and_by_serve() {
    for listen in ["0.0.0.0:9000", "[::]:9000"] {
        let (status, stdout, stderr) = check(&format!("listen = \"{listen}\"\n"));
        assert!(!status.success(), "{listen} accepted: {stdout}");
        assert!(
            stderr.contains("public_url") && stderr.contains("MANDATE_PUBLIC_URL"),
            "{stderr}"
        );
    }
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let (status, _, stderr) = operator_on(&data, None, &["serve", "--listen", "0.0.0.0:0"]);
    assert!(!status.success());
    assert!(stderr.contains("public_url"), "{stderr}");
    assert!(!data.exists(), "a refused start created the data folder");
    // Told where clients reach it, by the flag its variable also sets.
    let file = dir.path().join("mandate.toml");
    std::fs::write(&file, "listen = \"0.0.0.0:9000\"\n").unwrap();
    let (status, stdout, stderr) = operator_on(
        &data,
        None,
        &[
            "config",
            "check",
            file.to_str().unwrap(),
            "--public-url",
            "https://mandate.example",
        ],
    );
    assert!(status.success(), "{stderr}");
    assert!(
        stdout.contains("public_url = \"https://mandate.example\""),
        "{stdout}"
    );
    let (status, _, stderr) = operator_on(
        &data,
        None,
        &[
            "config",
            "check",
            file.to_str().unwrap(),
            "--public-url",
            "ftp://x",
        ],
    );
    assert!(!status.success());
    assert!(stderr.contains("public_url"), "{stderr}");
}

#[test]
fn an_unknown_key_is_named_with_its_line() {
    let (status, _, stderr) = check("issuer = \"mandate\"\nlisen = \"0.0.0.0:1\"\n");
    assert!(!status.success());
    assert!(stderr.contains("lisen"), "{stderr}");
    assert!(stderr.contains("line 2"), "{stderr}");
}

#[test]
fn a_value_a_start_refuses_is_refused() {
    for (text, named) in [
        ("[approvals]\nttl_seconds = 9999999\n", "ttl_seconds"),
        ("public_url = \"ftp://x\"\n", "public_url"),
        ("[database]\nurl = \"mysql://x\"\n", "postgres://"),
        ("[records]\nredact_args = [\"password\"]\n", "redact_args"),
        (
            "[otel]\nheaders = { \"bad name\" = \"x\" }\n",
            "header name",
        ),
        ("query_budget_ms = 0\n", "query_budget_ms"),
        ("[events]\nheartbeat_seconds = 16\n", "heartbeat_seconds"),
        ("[events]\nheartbeat_seconds = 0\n", "heartbeat_seconds"),
    ] {
        let (status, stdout, stderr) = check(text);
        assert!(!status.success(), "{text} accepted: {stdout}");
        assert!(stderr.contains(named), "{text}: {stderr}");
    }
}

#[test]
fn a_missing_file_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (status, _, stderr) = operator_on(
        &dir.path().join("data"),
        None,
        &["config", "check", "no-such.toml"],
    );
    assert!(!status.success());
    assert!(stderr.contains("cannot read config"), "{stderr}");
    assert!(
        !dir.path().join("data").exists(),
        "a check created the data folder"
    );
}

#[test]
fn the_reference_names_every_environment_variable_with_the_option_it_sets() {
    let dir = tempfile::tempdir().unwrap();
    let (status, stdout, stderr) = operator_on(dir.path(), None, &["config", "reference"]);
    assert!(status.success(), "{stderr}");
    for row in [
        "| `MANDATE_LISTEN` | `--listen` | `listen` |",
        "| `MANDATE_DATA_DIR` | `--data-dir` | `data_dir` |",
        "| `MANDATE_DATABASE_URL` | `--database` | `database.url` |",
        "| `MANDATE_DATABASE_CA_FILE` | `--database-ca-file` | `database.ca_file` |",
        "| `MANDATE_KEY_FILE` | `--key-file` | `key_file` |",
        "| `MANDATE_CONFIG` | `--config` | — |",
        "| `RUST_LOG` | — | — |",
    ] {
        assert!(stdout.contains(row), "{row} missing");
    }
    assert!(stdout.contains("### `webhooks.ports`\n"), "{stdout}");
    assert!(stdout.contains("- default: `[443,80,8443]`"), "{stdout}");
}

#[test]
fn a_first_start_off_a_terminal_prints_no_guide() {
    use std::io::{BufRead as _, BufReader};
    let dir = tempfile::tempdir().unwrap();
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_mandate"))
        .args(["serve", "--listen", "127.0.0.1:0", "--data-dir"])
        .arg(dir.path().join("data"))
        .env_remove("MANDATE_DATABASE_URL")
        .env_remove("MANDATE_CONFIG")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    // The guide would come before the address line.
    let lines: Vec<String> = BufReader::new(stdout)
        .lines()
        .map_while(Result::ok)
        .take_while(|line| !line.starts_with("listening on "))
        .collect();
    let _ = child.kill();
    let _ = child.wait();
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(
        lines[0].starts_with("admin API key written to"),
        "{lines:?}"
    );
    assert!(dir.path().join("data/admin.key").exists());
}

#[test]
fn healthcheck_passes_only_on_a_server_that_takes_writes() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let server = Server::start(&data, &config_without_limits(dir.path()));
    let port = server.base.rsplit(':').next().unwrap().to_owned();
    // Every interface is asked on loopback, as inside a container.
    let (status, stdout, stderr) = operator_on(
        &data,
        None,
        &["healthcheck", "--listen", &format!("0.0.0.0:{port}")],
    );
    assert!(status.success(), "{stderr}");
    assert!(stdout.contains("ready"), "{stdout}");
    server.stop();

    // A server that answers, but not 200.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap().to_string();
    let answering = std::thread::spawn(move || {
        let (mut stream, _) = listener.accept().unwrap();
        let mut request = [0_u8; 1024];
        let _ = stream.read(&mut request).unwrap();
        stream
            .write_all(b"HTTP/1.1 503 Service Unavailable\r\ncontent-length: 0\r\nconnection: close\r\n\r\n")
            .unwrap();
    });
    let (status, _, stderr) = operator_on(&data, None, &["healthcheck", "--listen", &address]);
    answering.join().unwrap();
    assert!(!status.success());
    assert!(stderr.contains("503"), "{stderr}");

    // Nobody there.
    let (status, _, stderr) = operator_on(&data, None, &["healthcheck", "--listen", "127.0.0.1:1"]);
    assert!(!status.success());
    assert!(stderr.contains("/readyz"), "{stderr}");
}

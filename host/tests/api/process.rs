//! The real `mandate` binary as a child process, for the tests that kill it
//! or read what it logs.

use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use crate::helpers::test_database;

/// A `mandate serve` process.
pub struct Server {
    child: Child,
    pub base: String,
    pub client: reqwest::Client,
    /// What it printed on stdout before its `listening on` line.
    pub banner: Vec<String>,
}

impl Server {
    /// Starts the binary on port 0 and waits for its `listening on` line.
    pub fn start(data_dir: &Path, config: &Path) -> Server {
        Server::spawn(data_dir, config, Stdio::null(), Some("info"))
    }

    /// Like [`Server::start`], with every log line down to `debug` written
    /// to `log`.
    pub fn start_logging(data_dir: &Path, config: &Path, log: &Path) -> Server {
        let file = File::create(log).unwrap();
        Server::spawn(data_dir, config, Stdio::from(file), Some("debug"))
    }

    /// Like [`Server::start`], with what it logs when `RUST_LOG` is not set
    /// written to `log`.
    pub fn start_logging_by_default(data_dir: &Path, config: &Path, log: &Path) -> Server {
        let file = File::create(log).unwrap();
        Server::spawn(data_dir, config, Stdio::from(file), None)
    }

    /// `mandate witness serve` on port 0, waiting for its `listening on`
    /// line (its banner holds the `witness <vkey> …` line).
    pub fn witness(data_dir: &Path, config: &Path) -> Server {
        Server::run(
            &["witness", "serve"],
            data_dir,
            config,
            None,
            Stdio::null(),
            Some("info"),
        )
    }

    fn spawn(data_dir: &Path, config: &Path, stderr: Stdio, level: Option<&str>) -> Server {
        let database = test_database(data_dir);
        Server::run(&["serve"], data_dir, config, database, stderr, level)
    }

    fn run(
        command_path: &[&str],
        data_dir: &Path,
        config: &Path,
        database: Option<String>,
        stderr: Stdio,
        level: Option<&str>,
    ) -> Server {
        mandate_host::install_tls_provider();
        let mut command = Command::new(env!("CARGO_BIN_EXE_mandate"));
        command
            .args(command_path)
            .args(["--listen", "127.0.0.1:0", "--data-dir"])
            .arg(data_dir)
            .arg("--config")
            .arg(config);
        if let Some(url) = database {
            command.env("MANDATE_DATABASE_URL", url);
        }
        match level {
            Some(level) => command.env("RUST_LOG", level),
            None => command.env_remove("RUST_LOG"),
        };
        let mut child = command
            .stdout(Stdio::piped())
            .stderr(stderr)
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let mut lines = BufReader::new(stdout).lines();
        let mut banner = Vec::new();
        let base = loop {
            let line = lines
                .next()
                .expect("the server exited before listening")
                .unwrap();
            if let Some(address) = line.strip_prefix("listening on ") {
                break address.to_owned();
            }
            banner.push(line);
        };
        Server {
            child,
            base,
            banner,
            client: reqwest::Client::builder()
                .timeout(Duration::from_secs(10))
                .build()
                .unwrap(),
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// SIGKILL, no goodbye.
    pub fn kill(self) {
        drop(self);
    }

    /// SIGTERM, and waits for the server to finish its requests, close the
    /// database and write out its log.
    pub fn stop(mut self) {
        let pid = rustix::process::Pid::from_child(&self.child);
        rustix::process::kill_process(pid, rustix::process::Signal::TERM).unwrap();
        let status = self.child.wait().unwrap();
        assert!(status.success(), "the server stopped with {status}");
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Runs an operator command of the binary on a data folder, stdout and
/// stderr piped; returns its exit status, stdout and stderr.
pub fn operator(data_dir: &Path, args: &[&str]) -> (std::process::ExitStatus, String, String) {
    operator_on(data_dir, test_database(data_dir), args)
}

/// [`operator`] on the database at `url` (`None`: SQLite in the folder).
pub fn operator_on(
    data_dir: &Path,
    url: Option<String>,
    args: &[&str],
) -> (std::process::ExitStatus, String, String) {
    let mut command = Command::new(env!("CARGO_BIN_EXE_mandate"));
    command
        .args(args)
        .arg("--data-dir")
        .arg(data_dir)
        .env_remove("MANDATE_DATABASE_URL")
        .env_remove("MANDATE_PUBLIC_URL")
        .stdin(Stdio::null());
    if let Some(url) = url {
        command.env("MANDATE_DATABASE_URL", url);
    }
    let output = command.output().unwrap();
    (
        output.status,
        String::from_utf8(output.stdout).unwrap(),
        String::from_utf8(output.stderr).unwrap(),
    )
}

/// A configuration without rate limits.
pub fn config_without_limits(dir: &Path) -> PathBuf {
    let path = dir.join("mandate.toml");
    std::fs::write(
        &path,
        "[rate_limits]\nper_api_key = 0\nper_token = 0\nper_org = 0\nper_ip = 0\n",
    )
    .unwrap();
    path
}

/// The admin key the first start wrote.
pub fn admin_key(data_dir: &Path) -> String {
    std::fs::read_to_string(data_dir.join("admin.key"))
        .unwrap()
        .trim()
        .to_owned()
}

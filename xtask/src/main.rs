//! `cargo xtask <task>`: Mandate's build orchestration, in Rust, running
//! exactly what CI runs.
//!
//! - `test`: set up what a fresh machine lacks, then run every suite.
//! - `fresh [--keep]`: the fresh-machine check: `test` on a clone of the
//!   committed head with empty caches and a fresh `CARGO_HOME`.
//! - `dist`: write what a release publishes into `dist/` (the static server,
//!   the npm tarball, the wheel, the examples, the container image,
//!   `SHA256SUMS`), each tried from an empty folder.
//! - `vectors [--check]`: write (or check) the conformance vectors.
//! - `serve`: build and run the server with the defaults.
//! - `wasm`: build the npm package mandate-sdk into `wasm/pkg` (writing its
//!   types generated from the OpenAPI document).
//! - `python`: generate the Python client's types from the served OpenAPI
//!   document (`python/mandate/client/_models.py`), then build the Python
//!   package mandate-sdk's wheel into `python/dist` (maturin, in a virtual
//!   environment the command creates). `python --test`: the test command's
//!   Python step alone (types current, mypy, pyright, pytest against the
//!   debug server).
//! - `runtimes`: test mandate-sdk in Node 22 and 24, Deno, Bun and workerd
//!   (part of `test`), building the package first when `wasm/pkg` is missing.
//! - `openapi`: check the served OpenAPI document with openapi-spec-validator
//!   and Redocly's recommended rules.
//! - `fuzz [--seconds N] [TARGET…]`: run the cargo-fuzz targets in `fuzz/`.
//! - `schemathesis [--examples N]`: API conformance under generated input.
//! - `bench [--quick] [--only http|budget|events|reviewer|trust|args|python|postgres|witnessed|oauth|authzen] [--against BIN]`:
//!   measure against peers and ceilings; write BENCHMARKS.md (not with
//!   `--only`, which measures some rows, nor `--against`, which measures
//!   the write rows against another build's `mandate`).
//! - `web`: build the dashboard and the widget into `web/dist`.
//! - `postgres`: a throwaway PostgreSQL cluster (and its URL) to try
//!   `mandate serve --database` by hand, until standard input closes.

#![allow(
    clippy::print_stderr,
    reason = "xtask is a command-line tool that reports progress on stderr"
)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

mod bench;
mod configref;
mod dist;
mod fresh;
mod fuzz;
mod openapi;
mod postgres;
mod python;
mod runtimes;
mod schemathesis;
mod vectors;
mod wasm;
mod web;

type Result<T> = std::result::Result<T, Box<dyn std::error::Error>>;

fn fail<T>(message: impl Into<String>) -> Result<T> {
    Err(message.into().into())
}

/// The workspace root (the parent of xtask/).
fn root() -> PathBuf {
    // `cargo run` names the package's folder at run time: the checkout the
    // command was typed in, even when another checkout built this binary
    // into a shared target folder (whose fingerprints are relative paths).
    let manifest = std::env::var_os("CARGO_MANIFEST_DIR")
        .map_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")), PathBuf::from);
    manifest
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("."))
}

/// Announces and runs a command in the workspace root; fails on a non-zero exit.
pub(crate) fn run(program: &str, args: &[&str]) -> Result<()> {
    run_with(program, args, &[])
}

/// [`run`] with these environment variables set.
fn run_with(program: &str, args: &[&str], envs: &[(&str, &str)]) -> Result<()> {
    let shown: Vec<String> = envs.iter().map(|(k, v)| format!("{k}={v} ")).collect();
    eprintln!("\n$ {}{program} {}", shown.concat(), args.join(" "));
    let mut command = Command::new(program);
    without_cargo_run_env(&mut command);
    let status = command
        .args(args)
        .envs(envs.iter().copied())
        .current_dir(root())
        .status()?;
    if !status.success() {
        return fail(format!("`{program} {}` failed: {status}", args.join(" ")));
    }
    Ok(())
}

/// Keeps the variables `cargo run` set for this process (the package's name,
/// version and folder) from the commands it starts: build scripts such as
/// ring's rerun when they change, so a cargo started from here would
/// otherwise recompile a dozen crates that a cargo typed in a shell built,
/// and the other way round.
fn without_cargo_run_env(command: &mut Command) {
    for (name, _) in std::env::vars_os() {
        let Some(name) = name.to_str() else { continue };
        if name.starts_with("CARGO_PKG_")
            || name.starts_with("CARGO_MANIFEST_")
            || matches!(
                name,
                "CARGO_CRATE_NAME" | "CARGO_BIN_NAME" | "CARGO_PRIMARY_PACKAGE"
            )
        {
            command.env_remove(name);
        }
    }
}

/// Runs the steps of a task in order, stopping at the first failure, and
/// prints how long each took (the figures the closing notes quote).
struct Steps {
    started: Instant,
    done: Vec<(&'static str, Duration)>,
}

impl Steps {
    fn new() -> Self {
        Steps {
            started: Instant::now(),
            done: Vec::new(),
        }
    }

    fn step(&mut self, name: &'static str, work: impl FnOnce() -> Result<()>) -> Result<()> {
        let started = Instant::now();
        let outcome = work();
        self.done.push((name, started.elapsed()));
        if outcome.is_err() {
            self.report();
        }
        outcome
    }

    fn report(&self) {
        eprintln!("\ntime by step:");
        for (name, took) in &self.done {
            eprintln!("  {:>7.1} s  {name}", took.as_secs_f64());
        }
        eprintln!("  {:>7.1} s  in all", self.started.elapsed().as_secs_f64());
    }
}

fn test() -> Result<()> {
    if std::env::var_os(LINTING).is_none() {
        return test_linting();
    }
    let root = root();
    let mut steps = Steps::new();
    steps.step("wasm32 target", wasm::ensure_target)?;
    steps.step("fmt", || run("cargo", &["fmt", "--all", "--", "--check"]))?;
    steps.step("vectors", || vectors::run(&root, true))?;
    // The pages before any build of the host, which embeds them.
    steps.step("npm package and pages", || {
        wasm::build_for_tests(&root)?;
        web::build_for_tests(&root)
    })?;
    let downloads = {
        let root = root.clone();
        std::thread::spawn(move || download(&root).map_err(|error| error.to_string()))
    };
    // Linted as it is built (see `test_linting`): every program, then every
    // test target as `cargo test` builds it.
    steps.step("native build with clippy", || {
        debug_programs(&root).map(drop)
    })?;
    // The multi-host suite needs PostgreSQL: it runs in the second pass.
    steps.step("native tests (SQLite)", || {
        run(
            "cargo",
            &[
                "test",
                "--workspace",
                "--features",
                POSTGRES_SUITE,
                "--",
                "--skip",
                "hosts::",
            ],
        )
    })?;
    steps.step("API suite on PostgreSQL", postgres_pass)?;
    steps.step("configuration reference current", || {
        configref::reference(&root, true)
    })?;
    steps.step("downloads of the steps below", || match downloads.join() {
        Ok(Ok(())) => Ok(()),
        Ok(Err(error)) => fail(error),
        Err(_) => fail("the downloads' thread panicked"),
    })?;
    steps.step("wasm and the npm package", || wasm::test(&root))?;
    steps.step("Python package", || python::test(&root))?;
    steps.step("OpenAPI validators", || openapi::check(&root))?;
    steps.step("fuzz smoke", || fuzz::smoke(&root))?;
    steps.step("quick bench", || bench::bench(&root, &["--quick"]))?;
    steps.step("core alone for wasm32", || {
        run(
            "cargo",
            &[
                "build",
                "-p",
                "mandate-core",
                "--target",
                "wasm32-unknown-unknown",
            ],
        )
    })?;
    steps.step("browser", || web::test(&root))?;
    steps.report();
    eprintln!("\nall suites passed");
    Ok(())
}

/// What the steps after the PostgreSQL pass download — the Python tools,
/// the OpenAPI validator, the JavaScript runtimes — fetched while the
/// native build keeps the cores busy: on a fresh machine they waited on the
/// network for minutes of an otherwise idle machine, one after another.
/// Each is kept by its stamp, so a warm run checks and goes on.
fn download(root: &Path) -> Result<()> {
    python::download(root)?;
    openapi::ensure_validator(root)?;
    runtimes::install(root).map(drop)
}

/// Set in the test command's own process once it lints as it builds.
const LINTING: &str = "MANDATE_XTASK_LINTING";

/// `cargo xtask test` again, with every cargo run it makes linting the
/// workspace's crates while it compiles them: clippy-driver as cargo's
/// `RUSTC_WORKSPACE_WRAPPER` and `-D warnings` in `CLIPPY_ARGS`, as `cargo
/// clippy` sets them, for builds that produce code. A separate `cargo
/// clippy --workspace --all-targets` compiled every dependency a second
/// time (for metadata only; 188 s of a cold run, 32 s warm). Dependencies
/// are not linted (cargo caps their lints); the workspace's libraries,
/// programs and test targets are, as `--all-targets` did (no crate has
/// benches), and so are the wasm32 and Python builds. Cargo keeps the
/// wrapped crates apart from a plain build's, so `cargo build` and
/// `cargo xtask test` do not undo each other. Builds of other projects
/// (`cargo install`, the fuzz crate on nightly) run without it: see
/// [`unlinted`].
fn test_linting() -> Result<()> {
    let driver = match clippy_driver() {
        Ok(driver) => driver,
        Err(_) => {
            run("rustup", &["component", "add", "clippy"])?;
            clippy_driver()?
        }
    };
    let mut test = Command::new(std::env::current_exe()?);
    let status = test
        .arg("test")
        .env("RUSTC_WORKSPACE_WRAPPER", driver)
        .env(
            "CLIPPY_ARGS",
            "-D__CLIPPY_HACKERY__warnings__CLIPPY_HACKERY__",
        )
        .env(LINTING, "1")
        .status()?;
    if !status.success() {
        std::process::exit(status.code().unwrap_or(1));
    }
    Ok(())
}

/// The clippy-driver of the toolchain that builds the workspace.
fn clippy_driver() -> Result<String> {
    let output = Command::new("rustup")
        .args(["which", "clippy-driver"])
        .current_dir(root())
        .output()?;
    if !output.status.success() {
        return fail("rustup has no clippy-driver for this toolchain");
    }
    Ok(String::from_utf8(output.stdout)?.trim().to_owned())
}

/// A cargo run of another project (an install, the fuzz crate on nightly)
/// without the test command's lint wrapper, which is for the workspace's
/// crates and the stable toolchain only.
fn unlinted(command: &mut Command) -> &mut Command {
    command
        .env_remove("RUSTC_WORKSPACE_WRAPPER")
        .env_remove("CLIPPY_ARGS")
}

/// Builds every program of the workspace (debug) together with its tests,
/// as the native test step does, and returns the folder of the executables.
///
/// With the tests selected, cargo resolves the same dependency features as
/// `cargo test --workspace` and reuses that build; a plain `cargo build -p
/// mandate-host` resolves others and compiles the host and a dozen crates a
/// second time (about two minutes of a cold run). Alone, on an empty target
/// folder, this builds the test suites too.
fn debug_programs(root: &Path) -> Result<PathBuf> {
    run(
        "cargo",
        &[
            "build",
            "--workspace",
            "--bins",
            "--tests",
            "--features",
            POSTGRES_SUITE,
        ],
    )?;
    Ok(wasm::target_dir(root)?.join("debug"))
}

/// The debug `mandate` of [`debug_programs`].
fn debug_server(root: &Path) -> Result<PathBuf> {
    Ok(debug_programs(root)?.join(format!("mandate{}", std::env::consts::EXE_SUFFIX)))
}

/// The feature that compiles the API suite's multi-host tests, which need
/// PostgreSQL; every cargo step of the test command that builds the
/// workspace's tests enables it, so none builds them twice.
const POSTGRES_SUITE: &str = "mandate-host/postgres-suite";

/// Tests that look at SQLite's own files or data folders (migrations from
/// earlier releases, the serve lock, the database files' bytes, a full disk):
/// they stay on the first pass.
const SQLITE_ONLY: [&str; 8] = [
    "migration::",
    "log::audit_verify_names_every_tampering_of_a_copy_of_the_database",
    "log::audit_verify_checks_the_hash_of_a_records_arguments",
    "files::",
    "crash::a_full_disk_gives_503_loses_nothing_and_recovers",
    "persistence::an_upgrade_from_schema_1_keeps_every_workflow_and_token",
    "persistence::a_second_server_on_a_served_sqlite_folder_is_refused",
    "secrets::no_secret_reaches_the_database_files",
];

/// Tests whose subject is not the database: `config check` and `healthcheck`
/// runs of the binary on their own SQLite folders, the witness (SQLite
/// whatever the deployment's engine), and the L3 plugin sandbox (fuel,
/// time, memory; 14 s of CPU). The PostgreSQL pass would repeat them as
/// they are.
const ENGINE_FREE: [&str; 4] = [
    "config_cli::",
    "witness::add_checkpoint_answers_as_tlog_witness_says",
    "witness::a_witness_killed_loses_nothing_it_cosigned",
    "assurance::l3_plugins_verify_and_hostile_plugins_are_stopped",
];

/// The host's API suite again on a throwaway PostgreSQL cluster (installed
/// from Debian when missing), with the multi-host suite, then the restart
/// of PostgreSQL under load alone; the cluster is removed either way.
fn postgres_pass() -> Result<()> {
    let cluster = postgres::Cluster::start(&postgres::ensure_installed()?)?;
    let server = cluster.url("postgres");
    let ca = cluster.ca_file();
    let ca = ca
        .to_str()
        .ok_or("the temporary folder's path is not UTF-8")?;
    let envs = [
        ("MANDATE_TEST_POSTGRES", server.as_str()),
        ("MANDATE_TEST_POSTGRES_CA", ca),
    ];
    // `--workspace`, as the first pass: the same features, so nothing is
    // built again.
    let mut args = vec![
        "test",
        "--workspace",
        "--features",
        POSTGRES_SUITE,
        "--test",
        "api",
        "--",
    ];
    for test in SQLITE_ONLY.iter().chain(&ENGINE_FREE) {
        args.extend(["--skip", test]);
    }
    run_with("cargo", &args, &envs)?;
    let restart = cluster.restart_command();
    run_with(
        "cargo",
        &[
            "test",
            "--workspace",
            "--features",
            POSTGRES_SUITE,
            "--test",
            "api",
            "--",
            "--ignored",
            "--exact",
            "hosts::a_postgresql_restart_under_load_loses_nothing_acknowledged",
        ],
        &[
            envs[0],
            envs[1],
            ("MANDATE_TEST_POSTGRES_RESTART", &restart),
        ],
    )
}

/// Builds the pages and the server and runs `mandate serve` with the
/// defaults (SQLite in `./.mandate`, http://127.0.0.1:8080), passing any
/// further arguments on.
fn serve(extra: &[&str]) -> Result<()> {
    web::build(&root())?;
    let mut args = vec![
        "run",
        "--release",
        "--package",
        "mandate-host",
        "--bin",
        "mandate",
        "--",
        "serve",
    ];
    args.extend_from_slice(extra);
    run("cargo", &args)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let task = args.first().map(String::as_str).unwrap_or("help");
    let rest: Vec<&str> = args.iter().skip(1).map(String::as_str).collect();
    let outcome = match task {
        "test" => test(),
        "fresh" => fresh::fresh(&root(), &rest),
        "vectors" => vectors::run(&root(), rest.contains(&"--check")),
        "fuzz" => fuzz::fuzz(&root(), &rest),
        "dist" => dist::dist(&root()),
        "bench" => bench::bench(&root(), &rest),
        "schemathesis" => schemathesis::schemathesis_run(&root(), &rest),
        "serve" => serve(&rest),
        "wasm" => wasm::build(&root()),
        "python" if rest.contains(&"--test") => {
            debug_programs(&root()).and_then(|_| python::test(&root()))
        }
        "python" => python::generate_and_build(&root()),
        "runtimes" => runtimes::run(&root()),
        "openapi" => openapi::check(&root()),
        "config-reference" => configref::reference(&root(), false),
        "postgres" => postgres::serve(),
        "web" => web::build(&root()),
        _ => {
            eprintln!(
                "usage: cargo xtask <test | fresh [--keep] | dist | vectors [--check] | serve | postgres | wasm | python [--test] | runtimes | openapi | config-reference | web | fuzz | schemathesis | bench [--quick] [--only http|budget|events|reviewer|trust|args|python|postgres|witnessed|oauth|authzen] [--against BIN]>"
            );
            std::process::exit(2);
        }
    };
    if let Err(error) = outcome {
        eprintln!("xtask {task}: {error}");
        std::process::exit(1);
    }
}

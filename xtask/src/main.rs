//! `cargo xtask <task>`: Mandate's build orchestration, in Rust, running
//! exactly what CI runs.
//!
//! - `test`: set up what a fresh machine lacks, then run every suite.
//! - `vectors [--check]`: write (or check) the conformance vectors.
//! - `serve`: build and run the server with the defaults.
//! - `wasm`: build the npm package mandate-sdk into `wasm/pkg` (writing its
//!   types generated from the OpenAPI document).
//! - `openapi`: check the served OpenAPI document with openapi-spec-validator
//!   and Redocly's recommended rules.
//! - `fuzz [--seconds N] [TARGET…]`: run the cargo-fuzz targets in `fuzz/`.
//! - `schemathesis [--examples N]`: API conformance under generated input.
//! - `bench [--quick] [--only budget]`: measure against peers and ceilings;
//!   write BENCHMARKS.md (not with `--only`, which measures some rows).
//! - `web`: build the dashboard and the widget into `web/dist`.

#![allow(
    clippy::print_stderr,
    reason = "xtask is a command-line tool that reports progress on stderr"
)]

use std::path::{Path, PathBuf};
use std::process::Command;

mod bench;
mod fuzz;
mod openapi;
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
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("."))
}

/// Announces and runs a command in the workspace root; fails on a non-zero exit.
fn run(program: &str, args: &[&str]) -> Result<()> {
    eprintln!("\n$ {program} {}", args.join(" "));
    let status = Command::new(program)
        .args(args)
        .current_dir(root())
        .status()?;
    if !status.success() {
        return fail(format!("`{program} {}` failed: {status}", args.join(" ")));
    }
    Ok(())
}

fn test() -> Result<()> {
    let root = root();
    run("rustup", &["target", "add", "wasm32-unknown-unknown"])?;
    run("cargo", &["fmt", "--all", "--", "--check"])?;
    vectors::run(&root, true)?;
    run(
        "cargo",
        &[
            "clippy",
            "--workspace",
            "--all-targets",
            "--",
            "-D",
            "warnings",
        ],
    )?;
    run("cargo", &["test", "--workspace"])?;
    wasm::test(&root)?;
    openapi::check(&root)?;
    fuzz::smoke(&root)?;
    bench::bench(&root, &["--quick"])?;
    run(
        "cargo",
        &[
            "build",
            "-p",
            "mandate-core",
            "--target",
            "wasm32-unknown-unknown",
        ],
    )?;
    web::test(&root)?;
    eprintln!("\nall suites passed");
    Ok(())
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
        "vectors" => vectors::run(&root(), rest.contains(&"--check")),
        "fuzz" => fuzz::fuzz(&root(), &rest),
        "bench" => bench::bench(&root(), &rest),
        "schemathesis" => schemathesis::schemathesis_run(&root(), &rest),
        "serve" => serve(&rest),
        "wasm" => wasm::build(&root()),
        "openapi" => openapi::check(&root()),
        "web" => web::build(&root()),
        _ => {
            eprintln!(
                "usage: cargo xtask <test | vectors [--check] | serve | wasm | openapi | web | fuzz | schemathesis | bench [--quick] [--only budget]>"
            );
            std::process::exit(2);
        }
    };
    if let Err(error) = outcome {
        eprintln!("xtask {task}: {error}");
        std::process::exit(1);
    }
}

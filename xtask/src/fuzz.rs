//! `cargo xtask fuzz [--seconds N] [TARGET…]`: runs the cargo-fuzz targets in
//! `fuzz/` on the nightly toolchain, each for N seconds (default 60), and
//! prints libFuzzer's figures. The committed corpora in `fuzz/corpus/` seed
//! each run; new inputs go to a scratch folder, so a run leaves the tree
//! clean. A crash leaves its input in `fuzz/artifacts/<target>/` and fails.
//!
//! `cargo xtask test` runs [`smoke`]: the core targets for a few seconds
//! each, so the harness never rots.

use std::path::Path;
use std::process::Command;

use crate::{Result, fail};

/// Every target, with the cargo features it needs.
const TARGETS: [(&str, &[&str]); 6] = [
    ("verify_bytes", &[]),
    ("verify_signed", &[]),
    ("jwks", &[]),
    ("scope", &[]),
    ("args", &[]),
    ("http_bodies", &["http"]),
];

/// Installs cargo-fuzz when missing.
fn ensure_cargo_fuzz() -> Result<()> {
    let installed = Command::new("cargo")
        .args(["+nightly", "fuzz", "--version"])
        .output()
        .is_ok_and(|o| o.status.success());
    if installed {
        return Ok(());
    }
    let mut install = Command::new("cargo");
    crate::unlinted(&mut install).args(["install", "cargo-fuzz"]);
    crate::wasm::exec(install)
}

/// Runs one target for `seconds`; returns libFuzzer's last status line.
fn fuzz_one(root: &Path, target: &str, features: &[&str], seconds: u64) -> Result<String> {
    let scratch =
        std::env::temp_dir().join(format!("mandate-fuzz-{target}-{}", std::process::id()));
    std::fs::create_dir_all(&scratch)?;
    let seeds = root.join("fuzz").join("corpus").join(target);
    std::fs::create_dir_all(&seeds)?;
    let mut command = Command::new("cargo");
    crate::without_cargo_run_env(&mut command);
    crate::unlinted(&mut command)
        .current_dir(root.join("fuzz"))
        .args(["+nightly", "fuzz", "run", target]);
    if !features.is_empty() {
        command.args(["--features", &features.join(",")]);
    }
    command
        .arg(&scratch)
        .arg(&seeds)
        .arg("--")
        .arg(format!("-max_total_time={seconds}"))
        .args([
            "-timeout=10",
            "-rss_limit_mb=2048",
            "-malloc_limit_mb=512",
            "-print_final_stats=1",
        ]);
    eprintln!("\n$ cargo +nightly fuzz run {target} -- -max_total_time={seconds}");
    let output = command.output()?;
    let log = String::from_utf8_lossy(&output.stderr);
    let _ = std::fs::remove_dir_all(&scratch);
    if !output.status.success() {
        eprintln!("{log}");
        return fail(format!(
            "fuzz target {target} failed; its input is in fuzz/artifacts/{target}/"
        ));
    }
    let done = log
        .lines()
        .rev()
        .find(|l| l.starts_with('#') && (l.contains("DONE") || l.contains("pulse")))
        .unwrap_or_default()
        .to_owned();
    let runs = log
        .lines()
        .find_map(|l| l.strip_prefix("stat::number_of_executed_units:"))
        .map(str::trim)
        .unwrap_or("?");
    Ok(format!(
        "{target}: {runs} executions in {seconds} s; {done}"
    ))
}

/// `cargo xtask fuzz`.
pub(crate) fn fuzz(root: &Path, args: &[&str]) -> Result<()> {
    let mut seconds = 60;
    let mut chosen = Vec::new();
    let mut rest = args.iter();
    while let Some(arg) = rest.next() {
        if *arg == "--seconds" {
            seconds = rest
                .next()
                .and_then(|s| s.parse().ok())
                .ok_or("--seconds takes a number")?;
        } else {
            chosen.push(*arg);
        }
    }
    ensure_cargo_fuzz()?;
    let mut report = Vec::new();
    for (target, features) in TARGETS {
        if chosen.is_empty() || chosen.contains(&target) {
            report.push(fuzz_one(root, target, features, seconds)?);
        }
    }
    for line in report {
        eprintln!("{line}");
    }
    Ok(())
}

/// A short run of the core targets, for `cargo xtask test`.
pub(crate) fn smoke(root: &Path) -> Result<()> {
    ensure_cargo_fuzz()?;
    for (target, features) in TARGETS.iter().filter(|(_, features)| features.is_empty()) {
        let line = fuzz_one(root, target, features, 5)?;
        eprintln!("{line}");
    }
    Ok(())
}

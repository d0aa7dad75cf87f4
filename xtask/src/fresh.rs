//! `cargo xtask fresh`: the fresh-machine check. Runs `cargo xtask test` on
//! a clone of the committed head as a new user's machine would: a fresh
//! `CARGO_HOME` holding only a copy of the crate registry (so tools such as
//! wasm-bindgen-cli and cargo-fuzz install cold), and empty
//! `CARGO_TARGET_DIR`, `npm_config_cache` and `XDG_CACHE_HOME`; the real
//! `RUSTUP_HOME` is kept, as no toolchain can be downloaded on these
//! machines. Run it before submitting any change to the build.
//!
//! It checks what is committed (uncommitted changes are not in the clone),
//! prints the time of each step and in all, fails if the run leaves the
//! clone's `git status` unclean, and removes its folder unless `--keep`.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use crate::{Result, fail};

/// The real toolchain folder: `RUSTUP_HOME`, else `~/.rustup`.
fn rustup_home() -> Result<PathBuf> {
    if let Some(home) = std::env::var_os("RUSTUP_HOME") {
        return Ok(PathBuf::from(home));
    }
    match std::env::var_os("HOME") {
        Some(home) => Ok(Path::new(&home).join(".rustup")),
        None => fail("neither RUSTUP_HOME nor HOME is set"),
    }
}

/// The crate registry of the current `CARGO_HOME`, if it has one.
fn registry() -> Option<PathBuf> {
    let cargo_home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| Path::new(&home).join(".cargo")))?;
    let registry = cargo_home.join("registry");
    registry.is_dir().then_some(registry)
}

fn status(command: &mut Command) -> Result<()> {
    let status = command.status()?;
    if !status.success() {
        return fail(format!("{command:?} failed: {status}"));
    }
    Ok(())
}

/// `cargo xtask fresh [--keep]`.
pub(crate) fn fresh(root: &Path, args: &[&str]) -> Result<()> {
    let keep = args.contains(&"--keep");
    let base = std::env::temp_dir().join(format!("mandate-fresh-{}", std::process::id()));
    let clone = base.join("mandate");
    let cargo_home = base.join("cargo-home");
    let target = base.join("target");
    let npm_cache = base.join("npm-cache");
    let xdg_cache = base.join("cache");
    for dir in [&cargo_home, &target, &npm_cache, &xdg_cache] {
        fs::create_dir_all(dir)?;
    }
    if let Some(registry) = registry() {
        eprintln!("copying {} into the fresh CARGO_HOME", registry.display());
        status(
            Command::new("cp")
                .arg("-a")
                .arg(&registry)
                .arg(cargo_home.join("registry")),
        )?;
    }
    status(
        Command::new("git")
            .args(["clone", "--quiet", "--no-local"])
            .arg(root)
            .arg(&clone),
    )?;
    let path = std::env::var_os("PATH").unwrap_or_default();
    let mut paths = vec![cargo_home.join("bin")];
    paths.extend(std::env::split_paths(&path));
    let started = Instant::now();
    eprintln!("\n$ cargo xtask test   (in {})", clone.display());
    let mut test = Command::new("cargo");
    crate::without_cargo_run_env(&mut test);
    let outcome = status(
        test.args(["xtask", "test"])
            .current_dir(&clone)
            .env("CARGO_HOME", &cargo_home)
            .env("RUSTUP_HOME", rustup_home()?)
            .env("CARGO_TARGET_DIR", &target)
            .env("npm_config_cache", &npm_cache)
            .env("XDG_CACHE_HOME", &xdg_cache)
            .env("PATH", std::env::join_paths(paths)?),
    );
    let took = started.elapsed().as_secs_f64();
    let leftover = if outcome.is_ok() {
        let output = Command::new("git")
            .args(["status", "--porcelain", "--untracked-files=all"])
            .current_dir(&clone)
            .output()?;
        String::from_utf8_lossy(&output.stdout).into_owned()
    } else {
        String::new()
    };
    if keep {
        eprintln!("kept {}", base.display());
    } else {
        fs::remove_dir_all(&base)?;
    }
    outcome?;
    if !leftover.is_empty() {
        return fail(format!(
            "the test command left the clone unclean:\n{leftover}"
        ));
    }
    eprintln!(
        "\nfresh-machine check passed in {:.0} s ({:.1} min)",
        took,
        took / 60.0
    );
    Ok(())
}

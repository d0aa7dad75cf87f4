//! The pages in `web/` — the dashboard and the `<mandate-verify>` widget —
//! built with npm and Vite into `web/dist` (`cargo xtask web`), and their
//! browser tests (part of `cargo xtask test`): playwright-core driving
//! Debian's Chromium against a real `mandate serve`.
//!
//! The host embeds `web/dist` when it is compiled, so a build of the pages
//! is followed by a rebuild of the host (see [`build`]).

use std::ffi::OsStr;
use std::fs::File;
use std::path::Path;
use std::process::Command;
use std::time::SystemTime;

use crate::{Result, fail};

/// The browser the tests drive; installed from Debian's packages if missing.
pub(crate) const CHROMIUM: &str = "/usr/bin/chromium";
/// apt's first attempt can fail (exit 100) when the image's clean-up hook
/// deletes downloaded packages mid-install; later attempts succeed.
const APT_ATTEMPTS: u32 = 3;

/// Announces and runs `program` in `dir` with extra environment; fails on a
/// non-zero exit.
fn run_in(dir: &Path, program: &str, args: &[&str], env: &[(&str, &OsStr)]) -> Result<()> {
    eprintln!("\n$ {program} {}", args.join(" "));
    let status = Command::new(program)
        .args(args)
        .envs(env.iter().copied())
        .current_dir(dir)
        .status()?;
    if !status.success() {
        return fail(format!("`{program} {}` failed: {status}", args.join(" ")));
    }
    Ok(())
}

/// Installs Chromium and a font family from Debian when the browser is missing.
pub(crate) fn ensure_chromium(root: &Path) -> Result<()> {
    if Path::new(CHROMIUM).exists() {
        return Ok(());
    }
    run_in(root, "apt-get", &["update"], &[])?;
    let install = [
        "install",
        "-y",
        "--no-install-recommends",
        "chromium",
        "fonts-liberation",
    ];
    for attempt in 1..=APT_ATTEMPTS {
        let outcome = run_in(root, "apt-get", &install, &[]);
        if outcome.is_ok() && Path::new(CHROMIUM).exists() {
            return Ok(());
        }
        eprintln!("chromium install attempt {attempt} of {APT_ATTEMPTS} failed");
    }
    fail(format!(
        "{CHROMIUM} is missing and apt-get could not install it"
    ))
}

/// `cargo xtask web`: builds the pages into `web/dist` (type-checked, then
/// bundled by Vite), first building the mandate-sdk package they use if it
/// is missing.
///
/// The host embeds `web/dist` with rust-embed when it is compiled, and cargo
/// cannot notice the folder appear after a build without it; marking the
/// embedding module as changed makes the next host build take the assets in.
pub(crate) fn build(root: &Path) -> Result<()> {
    if !root.join("wasm/pkg/web/web.js").exists() {
        crate::wasm::build(root)?;
    }
    let web = root.join("web");
    crate::wasm::npm_ci_if_stale(&web)?;
    run_in(&web, "npm", &["run", "build"], &[])?;
    File::options()
        .write(true)
        .open(root.join("host/src/web.rs"))?
        .set_modified(SystemTime::now())?;
    Ok(())
}

/// The test command's pages: a fresh install of the pinned packages, then
/// the pages built, before the host is compiled (it embeds them: built
/// after, they made the host and every test target of it compile again).
pub(crate) fn build_for_tests(root: &Path) -> Result<()> {
    run_in(
        &root.join("web"),
        "npm",
        &["ci", "--no-audit", "--no-fund"],
        &[],
    )?;
    build(root)
}

/// The browser tests: the server built with the pages [`build_for_tests`]
/// made, then every `web/e2e/*.test.mjs`. Screenshots land in
/// `web/test-artifacts/screenshots`.
pub(crate) fn test(root: &Path) -> Result<()> {
    ensure_chromium(root)?;
    let web = root.join("web");
    let server = crate::debug_server(root)?;
    // The MCP conformance suite needs Node 22 or later: the pinned Node 24
    // the package's runtimes step installs (wasm/runtimes).
    let node24 = crate::runtimes::node24(root)?;
    let mut suites: Vec<String> = std::fs::read_dir(web.join("e2e"))?
        .filter_map(|entry| entry.ok())
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(".test.mjs"))
        .map(|name| format!("e2e/{name}"))
        .collect();
    suites.sort();
    let mut args = vec!["--test"];
    args.extend(suites.iter().map(String::as_str));
    run_in(
        &web,
        "node",
        &args,
        &[
            ("MANDATE_BIN", server.as_os_str()),
            ("CHROMIUM", OsStr::new(CHROMIUM)),
            ("MANDATE_NODE24", node24.as_os_str()),
        ],
    )
}

//! The OpenAPI document a real `mandate serve` serves at `/v1/openapi.json`,
//! checked by implementations we did not write and turned into
//! mandate-sdk's TypeScript types.
//!
//! - `cargo xtask openapi` (part of `cargo xtask test`): openapi-spec-validator
//!   (PyPI, every package pinned in `xtask/openapi-requirements.txt`, in a
//!   virtualenv under `target/`) and `redocly lint --extends=recommended`
//!   (npm `@redocly/cli`, pinned in `wasm/package.json`) must report no
//!   error. Once installed, both run offline: Redocly is told to send no
//!   usage data and to look for no new version.
//! - `client_types`: openapi-typescript (pinned in `wasm/package.json`)
//!   generates `wasm/ts/client/openapi.ts`, which `cargo xtask wasm` writes and the
//!   package's tests check is current.

use std::fs;
use std::io::{BufRead as _, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use crate::wasm::target_dir;
use crate::{Result, fail};

/// The pinned Python packages of the validator, with every dependency.
const REQUIREMENTS: &str = "xtask/openapi-requirements.txt";
/// The generated types, committed beside the client that imports them.
const TYPES: &str = "wasm/ts/client/openapi.ts";

/// A scratch folder removed when dropped.
pub(crate) struct Scratch(pub(crate) PathBuf);

impl Scratch {
    pub(crate) fn new(purpose: &str) -> Result<Scratch> {
        let dir = std::env::temp_dir().join(format!("mandate-{purpose}-{}", std::process::id()));
        if dir.exists() {
            fs::remove_dir_all(&dir)?;
        }
        fs::create_dir_all(&dir)?;
        Ok(Scratch(dir))
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

/// The document as a fresh `mandate serve` (debug build, default
/// configuration, its own data folder) serves it.
fn served(root: &Path, scratch: &Path) -> Result<String> {
    let binary = crate::debug_server(root)?;
    let mut server = Command::new(binary)
        .args(["serve", "--listen", "127.0.0.1:0", "--data-dir"])
        .arg(scratch.join("data"))
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()?;
    let document = fetch(&mut server);
    let _ = server.kill();
    let _ = server.wait();
    document
}

fn fetch(server: &mut Child) -> Result<String> {
    let stdout = server.stdout.take().ok_or("no stdout")?;
    let base = BufReader::new(stdout)
        .lines()
        .map_while(std::result::Result::ok)
        .find_map(|line| line.strip_prefix("listening on ").map(str::to_owned))
        .ok_or("the server did not start")?;
    Ok(ureq::get(format!("{base}/v1/openapi.json"))
        .call()?
        .body_mut()
        .read_to_string()?)
}

/// Writes the served document into `scratch` and returns its path.
pub(crate) fn served_file(root: &Path, scratch: &Path) -> Result<PathBuf> {
    let path = scratch.join("openapi.json");
    fs::write(&path, served(root, scratch)?)?;
    Ok(path)
}

/// The npm tool `name` of `wasm/`, installing the package's pinned tools
/// when it is missing.
fn npm_tool(root: &Path, name: &str) -> Result<PathBuf> {
    let wasm = root.join("wasm");
    let tool = wasm.join("node_modules/.bin").join(name);
    if !tool.exists() {
        crate::wasm::npm_ci(&wasm)?;
    }
    Ok(tool)
}

/// A virtualenv with openapi-spec-validator, made (again) when the pinned
/// requirements differ from those it was made with.
pub(crate) fn ensure_validator(root: &Path) -> Result<PathBuf> {
    let venv = target_dir(root)?.join("openapi-venv");
    let bin = venv.join("bin");
    let wanted = fs::read_to_string(root.join(REQUIREMENTS))?;
    let stamp = venv.join("requirements.txt");
    if fs::read_to_string(&stamp).ok().as_deref() != Some(wanted.as_str()) {
        if venv.exists() {
            fs::remove_dir_all(&venv)?;
        }
        crate::run("python3", &["-m", "venv", &venv.to_string_lossy()])?;
        let pip = bin.join("pip");
        let requirements = root.join(REQUIREMENTS);
        crate::run(
            &pip.to_string_lossy(),
            &[
                "install",
                "--quiet",
                "--no-deps",
                "--requirement",
                &requirements.to_string_lossy(),
            ],
        )?;
        fs::write(&stamp, wanted)?;
    }
    Ok(bin.join("openapi-spec-validator"))
}

/// Announces and runs `program` in `dir`; fails on a non-zero exit.
fn run_in(dir: &Path, program: &Path, args: &[&str], env: &[(&str, &str)]) -> Result<()> {
    eprintln!("\n$ {} {}", program.display(), args.join(" "));
    let status = Command::new(program)
        .args(args)
        .envs(env.iter().copied())
        .current_dir(dir)
        .status()?;
    if !status.success() {
        return fail(format!(
            "`{} {}` failed: {status}",
            program.display(),
            args.join(" ")
        ));
    }
    Ok(())
}

/// `cargo xtask openapi`: the served document through openapi-spec-validator
/// and Redocly's recommended rules; any error fails.
pub(crate) fn check(root: &Path) -> Result<()> {
    let validator = ensure_validator(root)?;
    let redocly = npm_tool(root, "redocly")?;
    let scratch = Scratch::new("openapi")?;
    let document = served_file(root, &scratch.0)?;
    let file = document.to_string_lossy();
    run_in(&scratch.0, &validator, &[&file], &[])?;
    // Run in the scratch folder, so no redocly.yaml of another project
    // applies; no usage data, no look for a newer version.
    run_in(
        &scratch.0,
        &redocly,
        &["lint", "--extends=recommended", "--format=stylish", &file],
        &[
            ("REDOCLY_TELEMETRY", "off"),
            ("REDOCLY_SUPPRESS_NOTIFICATIONS", "true"),
        ],
    )
}

/// Generates mandate-sdk's request and response types from the served
/// document; writes `wasm/ts/client/openapi.ts`, or with `check` fails when it
/// differs from what is committed.
pub(crate) fn client_types(root: &Path, check: bool) -> Result<()> {
    let generator = npm_tool(root, "openapi-typescript")?;
    let scratch = Scratch::new("openapi-types")?;
    let document = served_file(root, &scratch.0)?;
    let generated = scratch.0.join("openapi.ts");
    run_in(
        &scratch.0,
        &generator,
        &[
            &document.to_string_lossy(),
            "--empty-objects-unknown",
            "--output",
            &generated.to_string_lossy(),
        ],
        &[],
    )?;
    let generated = fs::read_to_string(&generated)?;
    let committed = fs::read_to_string(root.join(TYPES)).unwrap_or_default();
    if generated == committed {
        return Ok(());
    }
    if check {
        return fail(format!(
            "{TYPES} differs from what `cargo xtask wasm` generates from the served document; regenerate and commit it"
        ));
    }
    fs::write(root.join(TYPES), generated)?;
    eprintln!("wrote {TYPES}");
    Ok(())
}

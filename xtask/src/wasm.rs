//! The npm package `mandate-sdk` in `wasm/`: its build (`cargo xtask wasm`)
//! and its test suites (part of `cargo xtask test`).
//!
//! The build generates the client's request and response types from the
//! server's OpenAPI document (see [`crate::openapi`]), compiles mandate-wasm
//! for wasm32 with the `wasm-release` profile, generates its bindings for
//! Node (CommonJS, `wasm/pkg/node`) and for the web (ESM, `wasm/pkg/web`),
//! shrinks the module (the same for both) once with `wasm-opt -Oz` from the
//! npm package binaryen (a system binaryen may be too old and emit a broken
//! module), compiles the TypeScript client for each, and checks the module
//! against its size budget. Afterwards `require('<repo>/wasm')` loads
//! the built package.

use std::ffi::OsStr;
use std::fs;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use flate2::Compression;
use flate2::write::GzEncoder;

use crate::{Result, fail};

const TARGET: &str = "wasm32-unknown-unknown";
const PROFILE: &str = "wasm-release";
/// The most bytes the optimised module may take: 300 000 for the first
/// release's verifier, raised to 420 000 with the second release's measured
/// additions (docs/decisions.md, "Size"): the checks of bound tokens' proofs
/// (+53 KB) and the agent's own key, whose Ed25519 signing brings the
/// 30 KB basepoint table (+60 KB); then to 520 000 for offline trust:
/// the record log's verification (+57.6 KB: signed notes, checkpoints,
/// tlog proofs, consistency proofs and canonical leaves) and token status
/// lists (+39.9 KB: miniz_oxide's inflater, the parsers of the status claim
/// and the list token, the checks and the exports); then to 540 000 for
/// humans in the loop: grants' `require_approval` and the approval leaf
/// (+9.6 KB) and Standard Webhooks verification (+12.3 KB); then to
/// 610 000 for the trust graph (607 524 measured): `trustScores`, core's
/// rule with the serde readers of a graph and its parameters (+57.3 KB),
/// and `verifyTrustStatement` (+11.3 KB); then to 690 000 for the third
/// release's checks (682 228 measured): a status URI held to the issuer's
/// origins (+4.2 KB) and argument constraints (+70.3 KB: the policy
/// language's parser and three-valued judge, the strict JSON reader and
/// RFC 8785 writer over `serde_json::Value`, `evaluatePolicy` and `permits`
/// with `args`); docs/decisions.md, "Size"; then to 700 000 for the `aud`
/// claim (694 438 measured, 688 913 before): the resource URI rule, the
/// claim's reading and writing, its narrowing, the grant's `aud` and
/// `audienceMatches` (+5.5 KB); docs/decisions.md, "The `aud` claim and
/// renewals"; then to 720 000 for witnessed checkpoints (714 850 measured):
/// cosignature/v1, witness policies and `verifyWitnessed` /
/// `verifyCosignature` with their serde readers (+20.4 KB; the largest
/// single addition since argument constraints — a candidate for shrinking);
/// then to 735 000 for record proofs under a witness policy (730 485
/// measured): `verifyWitnessedLogProof` and `verifyCheckpoint`'s options
/// (core's `verify_witnessed_inclusion`, the link's serde reader); then
/// to 740 000 for the MCP gate's relay (738 205 measured):
/// `AgentKey.relayProof` and its `RelayFor` reader, core's `sign_relay`
/// sharing the DPoP signer; docs/decisions.md, "OAuth chunk C10".
const BUDGET_BYTES: u64 = 740_000;
/// The Node suites that need no server.
pub(crate) const NODE_TESTS: [&str; 11] = [
    "test/vectors.test.mjs",
    "test/webhooks.test.mjs",
    "test/events.test.mjs",
    "test/log.test.mjs",
    "test/tlog-independent.test.mjs",
    "test/sdk.test.mjs",
    "test/status.test.mjs",
    "test/client.test.mjs",
    "test/trust.test.mjs",
    "test/package.test.mjs",
    "test/args.test.mjs",
];
/// The Node suite run against a live `mandate serve`.
const LIVE_TEST: &str = "test/live.test.mjs";
/// The suites against a live `mandate serve` run with Node 24: the client's
/// own (the trust graph's and the AuthZEN PEP's too), the framework adapters with the real
/// frameworks (the `ai` package needs Node 22 or later), and the example MCP
/// server and agent end to end.
const LIVE_NODE24_TESTS: [&str; 8] = [
    "test/client-live.test.mjs",
    "test/authzen.test.mjs",
    "test/trust-live.test.mjs",
    "test/mcp.test.mjs",
    "test/mcp-relay.test.mjs",
    "test/ai.test.mjs",
    "test/openai-agents.test.mjs",
    "test/example.test.mjs",
];

fn command(dir: &Path, program: impl AsRef<OsStr>, args: &[&OsStr]) -> Command {
    let mut command = Command::new(program);
    crate::without_cargo_run_env(&mut command);
    command.args(args).current_dir(dir);
    command
}

/// Announces and runs a command; fails on a non-zero exit.
pub(crate) fn exec(mut command: Command) -> Result<()> {
    let shown = std::iter::once(command.get_program())
        .chain(command.get_args())
        .map(|part| part.to_string_lossy())
        .collect::<Vec<_>>()
        .join(" ");
    eprintln!("\n$ {shown}");
    let status = command.status()?;
    if !status.success() {
        return fail(format!("`{shown}` failed: {status}"));
    }
    Ok(())
}

fn run_in(dir: &Path, program: impl AsRef<OsStr>, args: &[&str]) -> Result<()> {
    let args: Vec<&OsStr> = args.iter().map(OsStr::new).collect();
    exec(command(dir, program, &args))
}

/// The version of `package` in Cargo.lock.
fn locked_version(root: &Path, package: &str) -> Result<String> {
    let lock = fs::read_to_string(root.join("Cargo.lock"))?;
    let name = format!("name = \"{package}\"");
    let mut lines = lock.lines();
    while let Some(line) = lines.next() {
        if line == name {
            let version = lines
                .next()
                .and_then(|line| line.strip_prefix("version = \""))
                .and_then(|version| version.strip_suffix('"'));
            if let Some(version) = version {
                return Ok(version.to_owned());
            }
        }
    }
    fail(format!("Cargo.lock has no version of {package}"))
}

/// Installs wasm-bindgen-cli at the version of the wasm-bindgen crate in
/// Cargo.lock, unless that version is installed: the two must match exactly.
fn ensure_wasm_bindgen(root: &Path) -> Result<()> {
    let version = locked_version(root, "wasm-bindgen")?;
    let installed = Command::new("wasm-bindgen")
        .arg("--version")
        .output()
        .ok()
        .filter(|output| output.status.success())
        .map(|output| String::from_utf8_lossy(&output.stdout).trim().to_owned());
    if installed.as_deref() == Some(format!("wasm-bindgen {version}").as_str()) {
        return Ok(());
    }
    // Not --locked: the CLI's own lock file pins a crate the registry lacks.
    let install = [
        OsStr::new("install"),
        OsStr::new("wasm-bindgen-cli"),
        OsStr::new("--version"),
        OsStr::new(&version),
    ];
    let mut command = command(root, "cargo", &install);
    crate::unlinted(&mut command);
    exec(command)
}

/// Cargo's target directory, wherever CARGO_TARGET_DIR or a config puts it.
pub(crate) fn target_dir(root: &Path) -> Result<PathBuf> {
    let output = Command::new("cargo")
        .args(["metadata", "--format-version", "1", "--no-deps"])
        .current_dir(root)
        .output()?;
    if !output.status.success() {
        return fail("`cargo metadata` failed");
    }
    let metadata: serde_json::Value = serde_json::from_slice(&output.stdout)?;
    match metadata["target_directory"].as_str() {
        Some(dir) => Ok(PathBuf::from(dir)),
        None => fail("`cargo metadata` names no target_directory"),
    }
}

fn gzip_len(bytes: &[u8]) -> Result<usize> {
    let mut encoder = GzEncoder::new(Vec::new(), Compression::best());
    encoder.write_all(bytes)?;
    Ok(encoder.finish()?.len())
}

/// Reports the size of each optimised module and holds it to the budget.
fn report(pkg: &Path) -> Result<()> {
    for dir in ["node", "web"] {
        let path = pkg.join(dir).join("mandate_wasm_bg.wasm");
        let bytes = fs::read(&path)?;
        let size = bytes.len() as u64;
        eprintln!(
            "\nwasm/pkg/{dir}/mandate_wasm_bg.wasm: {size} bytes ({:.1} KB), {} bytes gzip",
            size as f64 / 1000.0,
            gzip_len(&bytes)?
        );
        if size > BUDGET_BYTES {
            return fail(format!(
                "{} is {size} bytes, over the budget of {BUDGET_BYTES}",
                path.display()
            ));
        }
    }
    Ok(())
}

/// A fresh install of the pinned npm packages of `dir`.
pub(crate) fn npm_ci(dir: &Path) -> Result<()> {
    run_in(dir, "npm", &["ci", "--no-audit", "--no-fund"])
}

/// Installs the pinned npm packages of `dir` unless they are installed
/// already from its current lockfile (npm writes `node_modules/.package-
/// lock.json` at each install, so one older than `package-lock.json` means
/// the lockfile changed since, as after a pull that adds a package).
pub(crate) fn npm_ci_if_stale(dir: &Path) -> Result<()> {
    let modified = |path: &Path| fs::metadata(path).and_then(|meta| meta.modified()).ok();
    let installed = modified(&dir.join("node_modules/.package-lock.json"));
    let wanted = modified(&dir.join("package-lock.json"));
    match (installed, wanted) {
        (Some(installed), Some(wanted)) if installed >= wanted => Ok(()),
        _ => npm_ci(dir),
    }
}

/// `cargo xtask wasm`: builds the package into `wasm/pkg`, writing the
/// client's generated types first.
pub(crate) fn build(root: &Path) -> Result<()> {
    package(root, true)
}

/// The test command's package: a fresh install of the pinned npm packages,
/// then the package built from the committed generated types ([`test`]
/// checks them against the served document once the server is built; the
/// pages are built from this package before the host is compiled, which
/// embeds them).
pub(crate) fn build_for_tests(root: &Path) -> Result<()> {
    npm_ci(&root.join("wasm"))?;
    package(root, false)
}

/// Adds the `wasm32-unknown-unknown` target to the toolchain when it is
/// missing (a fresh machine; `rustup` answers at once when it is there).
pub(crate) fn ensure_target() -> Result<()> {
    crate::run("rustup", &["target", "add", TARGET])
}

/// Builds the package; with `write_types`, first writes the client's types
/// generated from the served document (which builds the server).
fn package(root: &Path, write_types: bool) -> Result<()> {
    let wasm = root.join("wasm");
    ensure_target()?;
    ensure_wasm_bindgen(root)?;
    npm_ci_if_stale(&wasm)?;
    if write_types {
        crate::openapi::client_types(root, false)?;
    }
    run_in(
        root,
        "cargo",
        &[
            "build",
            "--package",
            "mandate-wasm",
            "--target",
            TARGET,
            "--profile",
            PROFILE,
        ],
    )?;
    let module = target_dir(root)?
        .join(TARGET)
        .join(PROFILE)
        .join("mandate_wasm.wasm");
    let pkg = wasm.join("pkg");
    if pkg.exists() {
        fs::remove_dir_all(&pkg)?;
    }
    let outs = [("nodejs", pkg.join("node")), ("web", pkg.join("web"))];
    for (target, out) in &outs {
        let bindgen = [
            OsStr::new("--target"),
            OsStr::new(target),
            OsStr::new("--out-dir"),
            out.as_os_str(),
            module.as_os_str(),
        ];
        exec(command(root, "wasm-bindgen", &bindgen))?;
    }
    // wasm-bindgen writes the same module for both targets (only the glue
    // differs): it is optimised once and copied, which saves a wasm-opt run
    // (15–25 s here). Should a wasm-bindgen release make them differ, each is
    // optimised on its own.
    let wasm_opt = wasm.join("node_modules/.bin/wasm-opt");
    let optimise = |module: &Path| {
        let opt = [
            OsStr::new("-Oz"),
            module.as_os_str(),
            OsStr::new("-o"),
            module.as_os_str(),
        ];
        exec(command(root, &wasm_opt, &opt))
    };
    let [node, web] = outs.map(|(_, out)| out.join("mandate_wasm_bg.wasm"));
    let same = fs::read(&node)? == fs::read(&web)?;
    optimise(&node)?;
    if same {
        fs::copy(&node, &web)?;
    } else {
        optimise(&web)?;
    }
    // The web build is ES modules; Node must read it as such, in tests and in
    // a consumer's tooling.
    fs::write(pkg.join("web/package.json"), "{ \"type\": \"module\" }\n")?;
    let tsc = wasm.join("node_modules/.bin/tsc");
    for config in ["tsconfig.node.json", "tsconfig.web.json"] {
        run_in(&wasm, &tsc, &["-p", config])?;
    }
    report(&pkg)
}

/// The package's suites, on the package [`build_for_tests`] made: the
/// generated types it was built from are current, the façade under
/// Node with wasm-bindgen-test, the conformance vectors, the JavaScript
/// surface, the client, the packed package in a fresh project, the other
/// runtimes, the live server through the client, and the framework adapters
/// and the example against a live server.
pub(crate) fn test(root: &Path) -> Result<()> {
    let wasm = root.join("wasm");
    crate::openapi::client_types(root, true)?;
    // Linted as built, with the rest of the test command's cargo runs.
    run_in(
        root,
        "cargo",
        &["test", "--package", "mandate-wasm", "--target", TARGET],
    )?;
    let mut node = vec!["--test"];
    node.extend(NODE_TESTS);
    run_in(&wasm, "node", &node)?;
    crate::runtimes::test(root)?;
    let server = crate::debug_server(root)?;
    let mut live = command(
        &wasm,
        "node",
        &[OsStr::new("--test"), OsStr::new(LIVE_TEST)],
    );
    live.env("MANDATE_BIN", &server);
    exec(live)?;
    let mut args = vec![OsStr::new("--test")];
    args.extend(LIVE_NODE24_TESTS.iter().map(OsStr::new));
    let mut adapters = command(&wasm, crate::runtimes::node24(root)?, &args);
    adapters.env("MANDATE_BIN", &server);
    exec(adapters)
}

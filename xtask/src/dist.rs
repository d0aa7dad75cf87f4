//! `cargo xtask dist`: writes `dist/` — what a release publishes, each
//! artefact tried from an empty folder:
//!
//! - `mandate-<version>-x86_64-unknown-linux-musl.tar.gz`: the server,
//!   statically linked with musl (the target and Debian's musl-tools are
//!   installed when missing); where they cannot be, the glibc build,
//!   `…-linux-gnu.tar.gz`, and the newest glibc symbol version it needs is
//!   printed. Started from an empty folder, it serves and issues a token.
//! - `mandate-sdk-<version>.tgz`: the npm package, installed into an empty
//!   project and imported from CommonJS and ESM.
//! - the Python wheel (release, manylinux2014), installed into a new virtual
//!   environment and imported there.
//! - `example-<name>.tar.gz`: each folder of `examples/` as committed.
//! - `mandate-image-<version>.tar`: the container image built from
//!   `Containerfile` on an empty base (a docker archive for `podman load`
//!   or `docker load`), when the binary is the static one; podman (a Debian
//!   package) is installed when missing, and the image is run: it refuses
//!   to start without `MANDATE_PUBLIC_URL`, and with it serves, reports
//!   healthy and issues a token.
//! - `SHA256SUMS` of all of them (`sha256sum -c SHA256SUMS`).
//!
//! Release builds and the image take long on two cores; the test command
//! does not run this (the npm tarball and a wheel are installed from empty
//! folders by its own steps).

use std::fs;
use std::io::{BufRead as _, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::{Result, fail};

/// The static target.
const MUSL: &str = "x86_64-unknown-linux-musl";
/// The glibc target, when musl cannot be had.
const GNU: &str = "x86_64-unknown-linux-gnu";
/// The C compiler the musl target's C dependencies (ring, SQLite,
/// mimalloc) are built with: Debian's musl-tools.
const MUSL_CC: &str = "x86_64-linux-musl-gcc";
/// The image's name.
const IMAGE: &str = "localhost/mandate";
/// The CA roots copied into the image (Debian's ca-certificates).
const CA_ROOTS: &str = "/etc/ssl/certs/ca-certificates.crt";
/// How long a started server or container may take to answer.
const START_LIMIT: Duration = Duration::from_secs(60);

/// The workspace's version (every crate shares it).
fn version(root: &Path) -> Result<String> {
    let manifest = fs::read_to_string(root.join("Cargo.toml"))?;
    manifest
        .lines()
        .skip_while(|line| line.trim() != "[workspace.package]")
        .find_map(|line| {
            let value = line
                .strip_prefix("version")?
                .trim_start()
                .strip_prefix('=')?;
            Some(value.trim().trim_matches('"').to_owned())
        })
        .map_or_else(|| fail("Cargo.toml has no [workspace.package] version"), Ok)
}

/// [`crate::wasm::exec`] on a command built in place, without the
/// variables `cargo run` gave xtask.
fn exec(command: &mut Command) -> Result<()> {
    crate::without_cargo_run_env(command);
    crate::wasm::exec(std::mem::replace(command, Command::new("true")))
}

/// Runs a command and answers its stdout; fails on a non-zero exit.
fn output(command: &mut Command) -> Result<String> {
    crate::without_cargo_run_env(command);
    let out = command.stderr(Stdio::inherit()).output()?;
    if !out.status.success() {
        return fail(format!("{command:?} failed: {}", out.status));
    }
    Ok(String::from_utf8(out.stdout)?)
}

/// Whether `program` runs (is on the path).
fn present(program: &str, args: &[&str]) -> bool {
    Command::new(program)
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|status| status.success())
}

/// Installs Debian packages (as `cargo xtask postgres` does PostgreSQL).
fn apt_install(packages: &[&str]) -> Result<()> {
    let _ = Command::new("apt-get")
        .args(["update", "-qq"])
        .stdout(Stdio::null())
        .status();
    exec(
        Command::new("apt-get")
            .args(["install", "-y", "-qq", "--no-install-recommends"])
            .args(packages),
    )
}

/// The server's release build: static with musl when the target and its C
/// compiler can be installed, else for glibc. Answers the executable and
/// its target.
fn build_server(root: &Path) -> Result<(PathBuf, &'static str)> {
    let musl = exec(Command::new("rustup").args(["target", "add", MUSL]))
        .and_then(|()| {
            if present(MUSL_CC, &["--version"]) {
                Ok(())
            } else {
                apt_install(&["musl-tools"])
            }
        })
        .and_then(|()| {
            exec(
                Command::new("cargo")
                    .current_dir(root)
                    .args(["build", "--release", "--locked", "--target", MUSL])
                    .args(["--package", "mandate-host", "--bin", "mandate"]),
            )
        });
    let target = match musl {
        Ok(()) => MUSL,
        Err(error) => {
            eprintln!("dist: no static build ({error}); building for glibc");
            exec(
                Command::new("cargo")
                    .current_dir(root)
                    .args(["build", "--release", "--locked", "--target", GNU])
                    .args(["--package", "mandate-host", "--bin", "mandate"]),
            )?;
            GNU
        }
    };
    let binary = crate::wasm::target_dir(root)?
        .join(target)
        .join("release")
        .join("mandate");
    Ok((binary, target))
}

/// Whether an ELF executable asks for a program interpreter (a dynamic
/// loader): a static executable has no `PT_INTERP` program header.
fn has_interpreter(elf: &[u8]) -> Result<bool> {
    const PT_INTERP: u32 = 3;
    let field = |at: usize, len: usize| -> Result<u64> {
        let bytes = elf.get(at..at + len).ok_or("not an ELF file")?;
        Ok(bytes
            .iter()
            .rev()
            .fold(0_u64, |acc, byte| (acc << 8) | u64::from(*byte)))
    };
    if elf.get(..5) != Some(b"\x7fELF\x02") {
        return fail("not a 64-bit ELF file");
    }
    let offset = usize::try_from(field(0x20, 8)?)?;
    let size = usize::try_from(field(0x36, 2)?)?;
    let count = usize::try_from(field(0x38, 2)?)?;
    for index in 0..count {
        if field(offset + index * size, 4)? == u64::from(PT_INTERP) {
            return Ok(true);
        }
    }
    Ok(false)
}

/// The newest `GLIBC_x.y` symbol version a dynamic executable needs.
fn newest_glibc(binary: &Path) -> Result<String> {
    let symbols = output(Command::new("objdump").arg("-T").arg(binary))?;
    let newest = symbols
        .split(|c: char| c.is_whitespace() || c == '(' || c == ')')
        .filter_map(|word| word.strip_prefix("GLIBC_"))
        .filter_map(|version| {
            let parts: Vec<u32> = version
                .split('.')
                .map(str::parse)
                .collect::<std::result::Result<_, _>>()
                .ok()?;
            Some((parts, version.to_owned()))
        })
        .max_by(|a, b| a.0.cmp(&b.0))
        .map(|(_, version)| version);
    newest.map_or_else(|| fail("objdump lists no GLIBC_ symbol version"), Ok)
}

/// A server started from `binary`, killed when dropped.
struct Started {
    child: Child,
    base: String,
}

impl Drop for Started {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `mandate serve` on port 0 of loopback in `dir` (an empty folder)
/// and waits for its `listening on` line.
fn serve(binary: &Path, dir: &Path) -> Result<Started> {
    let mut child = Command::new(binary)
        .current_dir(dir)
        .args(["serve", "--listen", "127.0.0.1:0", "--data-dir", "data"])
        .env_remove("MANDATE_PUBLIC_URL")
        .env_remove("MANDATE_CONFIG")
        .env_remove("MANDATE_DATABASE_URL")
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()?;
    let stdout = child.stdout.take().ok_or("no stdout")?;
    let mut started = Started {
        child,
        base: String::new(),
    };
    for line in BufReader::new(stdout).lines() {
        if let Some(address) = line?.strip_prefix("listening on ") {
            address.clone_into(&mut started.base);
            return Ok(started);
        }
    }
    fail(format!("{} exited before listening", binary.display()))
}

/// Issues an L1 token over HTTP with the admin key, as the README's first
/// `curl` does; answers its jti.
fn issue_token(base: &str, admin_key: &str) -> Result<String> {
    let body = serde_json::json!({
        "developer_email": "dev@example.com",
        "agent_id": "dist-check",
        "resources": ["crm:*"],
        "actions": ["read"],
    });
    let mut answer = ureq::post(format!("{base}/v1/vat/issue/l1"))
        .header("authorization", format!("Bearer {}", admin_key.trim()))
        .send_json(&body)?;
    let issued: serde_json::Value = answer.body_mut().read_json()?;
    match issued["jti"].as_str() {
        Some(jti)
            if issued["compact_jwt"]
                .as_str()
                .is_some_and(|jwt| jwt.split('.').count() == 3) =>
        {
            Ok(jti.to_owned())
        }
        _ => fail(format!("the issue answered no token: {issued}")),
    }
}

/// Waits for a file to exist and answers its text.
fn wait_for_file(path: &Path) -> Result<String> {
    let started = Instant::now();
    loop {
        if let Ok(text) = fs::read_to_string(path)
            && !text.trim().is_empty()
        {
            return Ok(text);
        }
        if started.elapsed() > START_LIMIT {
            return fail(format!("{} did not appear", path.display()));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The binary from an empty folder: it starts, serves and issues a token.
fn try_server(binary: &Path, scratch: &Path) -> Result<()> {
    let dir = scratch.join("server");
    fs::create_dir_all(&dir)?;
    let copy = dir.join("mandate");
    fs::copy(binary, &copy)?;
    let server = serve(&copy, &dir)?;
    let key = wait_for_file(&dir.join("data/admin.key"))?;
    let jti = issue_token(&server.base, &key)?;
    eprintln!("dist: the binary served from an empty folder and issued {jti}");
    Ok(())
}

/// Packs `files` (paths relative to `from`) into `archive` (gzip), under
/// `prefix/`.
fn tarball(archive: &Path, from: &Path, prefix: &str, files: &[&str]) -> Result<()> {
    exec(
        Command::new("tar")
            .arg("--create")
            .arg("--gzip")
            .arg("--owner=0")
            .arg("--group=0")
            .arg("--numeric-owner")
            .arg(format!("--transform=s,^,{prefix}/,"))
            .arg("--file")
            .arg(archive)
            .arg("--directory")
            .arg(from)
            .args(files),
    )
}

/// The npm package packed, installed into an empty project and imported.
fn npm_package(root: &Path, dist: &Path, scratch: &Path) -> Result<PathBuf> {
    crate::wasm::build(root)?;
    let packed = output(
        Command::new("npm")
            .current_dir(root.join("wasm"))
            .args(["pack", "--json", "--pack-destination"])
            .arg(dist),
    )?;
    let packed: serde_json::Value = serde_json::from_str(&packed)?;
    let name = packed[0]["filename"]
        .as_str()
        .ok_or("npm pack named no file")?;
    let tarball = dist.join(name);
    let project = scratch.join("npm");
    fs::create_dir_all(&project)?;
    fs::write(
        project.join("package.json"),
        "{ \"name\": \"dist-check\", \"private\": true }\n",
    )?;
    exec(
        Command::new("npm")
            .current_dir(&project)
            .args(["install", "--prefer-offline", "--no-audit", "--no-fund"])
            .arg(&tarball),
    )?;
    let check = "typeof sdk.verifyToken === 'function' && typeof sdk.MandateClient === 'function' || process.exit(1)";
    exec(Command::new("node").current_dir(&project).args([
        "-e",
        &format!("const sdk = require('mandate-sdk'); {check}"),
    ]))?;
    exec(Command::new("node").current_dir(&project).args([
        "--input-type=module",
        "-e",
        &format!("import * as sdk from 'mandate-sdk'; {check}"),
    ]))?;
    Ok(tarball)
}

/// The release wheel, installed into a new virtual environment (its
/// dependencies from PyPI) and imported from an empty folder.
fn wheel(root: &Path, dist: &Path) -> Result<PathBuf> {
    let built = crate::python::build(root, crate::python::Wheel::Release)?;
    let name = built.file_name().ok_or("the wheel has no name")?;
    let wheel = dist.join(name);
    fs::copy(&built, &wheel)?;
    crate::python::try_clean(&wheel)?;
    Ok(wheel)
}

/// Each example folder, as committed, as `example-<name>.tar.gz`.
fn examples(root: &Path, dist: &Path) -> Result<Vec<PathBuf>> {
    let mut archives = Vec::new();
    for entry in fs::read_dir(root.join("examples"))? {
        let entry = entry?;
        if !entry.file_type()?.is_dir() {
            continue;
        }
        let name = entry
            .file_name()
            .into_string()
            .map_err(|_| "a non-UTF-8 name")?;
        let archive = dist.join(format!("example-{name}.tar.gz"));
        exec(
            Command::new("git")
                .current_dir(root)
                .args(["archive", "--format=tar.gz"])
                .arg(format!("--prefix={name}/"))
                .arg("--output")
                .arg(&archive)
                .arg(format!("HEAD:examples/{name}")),
        )?;
        archives.push(archive);
    }
    archives.sort();
    Ok(archives)
}

/// podman's flags for running a container on these machines: their kernel
/// lets crun set neither cgroup v2 controllers ("cgroups in hybrid mode")
/// nor rlimits above the runtime's own, so runc with cgroupfs and modest
/// limits. Elsewhere they are harmless.
const PODMAN_GLOBAL: [&str; 4] = ["--runtime", "runc", "--cgroup-manager", "cgroupfs"];
const PODMAN_RUN: [&str; 4] = [
    "--ulimit",
    "nofile=1024:1024",
    "--ulimit",
    "nproc=1024:1024",
];

fn podman() -> Command {
    let mut command = Command::new("podman");
    command.args(PODMAN_GLOBAL);
    command
}

/// The image's build context: the static binary, a user without a shell,
/// the CA roots, /data and /tmp.
fn image_context(root: &Path, binary: &Path) -> Result<PathBuf> {
    use std::os::unix::fs::PermissionsExt as _;
    let context = crate::wasm::target_dir(root)?.join("dist-image");
    if context.exists() {
        fs::remove_dir_all(&context)?;
    }
    fs::create_dir_all(&context)?;
    fs::copy(root.join("Containerfile"), context.join("Containerfile"))?;
    fs::copy(binary, context.join("mandate"))?;
    fs::write(
        context.join("passwd"),
        "mandate:x:10001:10001:mandate:/data:/sbin/nologin\n",
    )?;
    fs::write(context.join("group"), "mandate:x:10001:\n")?;
    if !Path::new(CA_ROOTS).is_file() {
        apt_install(&["ca-certificates"])?;
    }
    fs::copy(CA_ROOTS, context.join("ca-certificates.crt"))?;
    for (dir, mode) in [("data", 0o700), ("tmp", 0o1777)] {
        fs::create_dir_all(context.join(dir))?;
        fs::set_permissions(context.join(dir), fs::Permissions::from_mode(mode))?;
    }
    Ok(context)
}

/// A free port on loopback.
fn free_port() -> Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
}

/// The image built, saved into `dist`, and run: refused without a public
/// URL; with one, healthy and issuing a token.
fn image(
    root: &Path,
    binary: &Path,
    dist: &Path,
    version: &str,
    scratch: &Path,
) -> Result<PathBuf> {
    if !present("podman", &["--version"]) || !present("runc", &["--version"]) {
        apt_install(&["podman", "runc"])?;
    }
    let context = image_context(root, binary)?;
    let tag = format!("{IMAGE}:{version}");
    exec(
        podman()
            .args(["build", "--format", "docker", "--tag", &tag, "--file"])
            .arg(context.join("Containerfile"))
            .arg(&context),
    )?;
    let archive = dist.join(format!("mandate-image-{version}.tar"));
    exec(
        podman()
            .args(["save", "--format", "docker-archive", "--output"])
            .arg(&archive)
            .arg(&tag),
    )?;

    // Without MANDATE_PUBLIC_URL it must not start.
    let refused = podman()
        .args(["run", "--rm"])
        .args(PODMAN_RUN)
        .arg(&tag)
        .output()?;
    let said = String::from_utf8_lossy(&refused.stderr);
    if refused.status.success() || !said.contains("MANDATE_PUBLIC_URL") {
        return fail(format!(
            "the image started without MANDATE_PUBLIC_URL ({}): {said}",
            refused.status
        ));
    }
    eprintln!("dist: the image refuses to start without MANDATE_PUBLIC_URL");

    let port = free_port()?;
    let base = format!("http://127.0.0.1:{port}");
    let id = output(
        podman()
            .args(["run", "--detach", "--rm"])
            .args(PODMAN_RUN)
            .arg("--publish")
            .arg(format!("127.0.0.1:{port}:8080"))
            .arg("--env")
            .arg(format!("MANDATE_PUBLIC_URL={base}"))
            .arg(&tag),
    )?;
    let id = id.trim().to_owned();
    let outcome = check_container(&id, &base, scratch);
    let _ = podman()
        .args(["stop", "--time", "10", &id])
        .stdout(Stdio::null())
        .status();
    outcome?;
    Ok(archive)
}

/// The running container: healthy by its own check, and issuing a token
/// with the admin key it wrote into /data.
fn check_container(id: &str, base: &str, scratch: &Path) -> Result<()> {
    let started = Instant::now();
    while !podman()
        .args(["healthcheck", "run", id])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()?
        .success()
    {
        if started.elapsed() > START_LIMIT {
            let _ = podman().args(["logs", id]).status();
            return fail("the container never reported healthy");
        }
        std::thread::sleep(Duration::from_millis(500));
    }
    let key = scratch.join("admin.key");
    exec(
        podman()
            .arg("cp")
            .arg(format!("{id}:/data/admin.key"))
            .arg(&key),
    )?;
    let jti = issue_token(base, &fs::read_to_string(&key)?)?;
    eprintln!("dist: the container is healthy and issued {jti}");
    Ok(())
}

/// `cargo xtask dist`.
pub(crate) fn dist(root: &Path) -> Result<()> {
    let version = version(root)?;
    let dist = root.join("dist");
    if dist.exists() {
        fs::remove_dir_all(&dist)?;
    }
    fs::create_dir_all(&dist)?;
    let scratch = std::env::temp_dir().join(format!("mandate-dist-{}", std::process::id()));
    let _ = fs::remove_dir_all(&scratch);
    fs::create_dir_all(&scratch)?;

    let (binary, target) = build_server(root)?;
    if has_interpreter(&fs::read(&binary)?)? {
        if target == MUSL {
            return fail("the musl build is not static");
        }
        eprintln!(
            "dist: the glibc build needs glibc {} or newer",
            newest_glibc(&binary)?
        );
    }
    try_server(&binary, &scratch)?;
    let staged = scratch.join("binary");
    fs::create_dir_all(&staged)?;
    fs::copy(&binary, staged.join("mandate"))?;
    fs::copy(root.join("README.md"), staged.join("README.md"))?;
    let name = format!("mandate-{version}-{target}");
    let mut artefacts = vec![dist.join(format!("{name}.tar.gz"))];
    tarball(&artefacts[0], &staged, &name, &["mandate", "README.md"])?;
    artefacts.push(npm_package(root, &dist, &scratch)?);
    artefacts.push(wheel(root, &dist)?);
    artefacts.extend(examples(root, &dist)?);
    if target == MUSL {
        artefacts.push(image(root, &binary, &dist, &version, &scratch)?);
    } else {
        eprintln!("dist: no image: it is built around the static binary");
    }

    let names: Vec<String> = artefacts
        .iter()
        .map(|path| {
            path.file_name()
                .and_then(|name| name.to_str())
                .map(str::to_owned)
                .ok_or("an artefact without a UTF-8 name")
        })
        .collect::<std::result::Result<_, _>>()?;
    let sums = output(Command::new("sha256sum").current_dir(&dist).args(&names))?;
    fs::write(dist.join("SHA256SUMS"), &sums)?;
    let _ = fs::remove_dir_all(&scratch);

    eprintln!("\ndist/:");
    for (path, name) in artefacts.iter().zip(&names) {
        eprintln!("  {:>12} bytes  {name}", fs::metadata(path)?.len());
    }
    eprintln!("  SHA256SUMS");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A minimal ELF64 header with one program header of `kind`.
    fn elf_with(kind: u32) -> Vec<u8> {
        let mut elf = vec![0_u8; 0x40 + 0x38];
        elf[..5].copy_from_slice(b"\x7fELF\x02");
        elf[0x20..0x28].copy_from_slice(&0x40_u64.to_le_bytes());
        elf[0x36..0x38].copy_from_slice(&0x38_u16.to_le_bytes());
        elf[0x38..0x3a].copy_from_slice(&1_u16.to_le_bytes());
        elf[0x40..0x44].copy_from_slice(&kind.to_le_bytes());
        elf
    }

    #[test]
    fn a_program_interpreter_is_found_and_a_static_file_has_none() {
        assert!(has_interpreter(&elf_with(3)).unwrap());
        assert!(!has_interpreter(&elf_with(1)).unwrap());
        assert!(has_interpreter(b"#!/bin/sh\n").is_err());
        assert!(has_interpreter(&elf_with(3)[..0x42]).is_err());
    }

    #[test]
    fn this_build_of_xtask_is_dynamic() {
        let me = std::env::current_exe().unwrap();
        assert!(has_interpreter(&fs::read(me).unwrap()).unwrap());
    }
}

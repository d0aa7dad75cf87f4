//! The Python package `mandate-sdk` in `python/`: its wheel (`cargo xtask
//! python`) and its suites (part of `cargo xtask test`).
//!
//! Both work in a virtual environment the command creates in the target
//! folder (`<target>/python-venv`) with the machine's `python3`, installing
//! pinned tools from PyPI: maturin builds the PyO3 extension and the wheel
//! from source (no wheel of ours is ever downloaded) into `python/dist`,
//! linked by zig for manylinux2014 (glibc 2.17); the
//! test step installs that wheel with the suites' pinned packages
//! (`python/requirements-test.txt`), runs pytest (the conformance vectors,
//! then the client and adapters against a live `mandate serve`), and checks
//! the package's types with mypy --strict and pyright.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::{Result, fail};

/// The build backend, pinned: the same in `python/pyproject.toml`'s range.
const MATURIN: &str = "maturin==1.16.0";
/// Zig as the linker (`maturin --zig`), from PyPI: it links against glibc
/// 2.17's symbols whatever this machine's glibc is, so the wheel is
/// manylinux2014 (CentOS 7 onwards) rather than the glibc 2.34 a plain build
/// here would need.
const ZIG: &str = "ziglang==0.17.1";

/// The virtual environment's folder and its interpreter, created when missing.
fn venv(root: &Path) -> Result<PathBuf> {
    let dir = crate::wasm::target_dir(root)?.join("python-venv");
    let python = dir.join("bin").join("python");
    if !python.exists() {
        let dir = dir
            .to_str()
            .ok_or("the target folder's path is not UTF-8")?;
        crate::run("python3", &["-m", "venv", dir])?;
    }
    Ok(python)
}

fn exec(mut command: Command) -> Result<()> {
    crate::without_cargo_run_env(&mut command);
    eprintln!("\n$ {command:?}");
    let status = command.status()?;
    if !status.success() {
        return fail(format!("{command:?} failed: {status}"));
    }
    Ok(())
}

fn python(venv: &Path, dir: &Path, args: &[&str]) -> Command {
    let mut command = Command::new(venv);
    command.args(args).current_dir(dir);
    command
}

/// Builds the wheel (release) into `python/dist` and returns its path.
pub(crate) fn build(root: &Path) -> Result<PathBuf> {
    let venv = venv(root)?;
    let dir = root.join("python");
    exec(python(
        &venv,
        &dir,
        &[
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            MATURIN,
            ZIG,
        ],
    ))?;
    let dist = dir.join("dist");
    if dist.exists() {
        std::fs::remove_dir_all(&dist)?;
    }
    let mut maturin = python(
        &venv,
        &dir,
        &[
            "-m",
            "maturin",
            "build",
            "--release",
            "--zig",
            "--compatibility",
            "manylinux2014",
            "--out",
            "dist",
            "--interpreter",
        ],
    );
    maturin.arg(&venv);
    // maturin finds zig as `python-zig` beside the interpreter.
    let bin = venv.parent().ok_or("the interpreter has no folder")?;
    let path = std::env::var_os("PATH").unwrap_or_default();
    let mut paths = vec![bin.to_path_buf()];
    paths.extend(std::env::split_paths(&path));
    maturin.env("PATH", std::env::join_paths(paths)?);
    exec(maturin)?;
    let wheels: Vec<PathBuf> = std::fs::read_dir(&dist)?
        .filter_map(|entry| entry.ok().map(|entry| entry.path()))
        .filter(|path| path.extension() == Some(OsStr::new("whl")))
        .collect();
    match wheels.as_slice() {
        [wheel] => {
            eprintln!(
                "built {} ({} bytes)",
                wheel.display(),
                std::fs::metadata(wheel)?.len()
            );
            Ok(wheel.clone())
        }
        _ => fail(format!(
            "maturin left {} wheels in python/dist",
            wheels.len()
        )),
    }
}

/// Builds the wheel and installs it with the suites' pinned packages in the
/// virtual environment; returns its interpreter.
pub(crate) fn installed(root: &Path) -> Result<PathBuf> {
    let wheel = build(root)?;
    let venv = venv(root)?;
    let dir = root.join("python");
    exec(python(
        &venv,
        &dir,
        &[
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            "--requirement",
            "requirements-test.txt",
        ],
    ))?;
    let mut install = python(
        &venv,
        &dir,
        &[
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            "--force-reinstall",
            "--no-deps",
        ],
    );
    install.arg(&wheel);
    exec(install)?;
    Ok(venv)
}

/// Builds and installs the wheel, then runs the type checkers and the
/// Python suites.
pub(crate) fn test(root: &Path) -> Result<()> {
    let venv = installed(root)?;
    let dir = root.join("python");
    exec(python(
        &venv,
        &dir,
        &["-m", "mypy", "--strict", "mandate", "tests"],
    ))?;
    // pyright judges the virtual environment's packages, not the
    // interpreter it finds first on the path.
    let mut pyright = python(&venv, &dir, &["-m", "pyright", "--pythonpath"]);
    pyright.arg(&venv);
    exec(pyright)?;
    let server = crate::debug_server(root)?;
    // From the tests' folder, so `import mandate` finds the installed wheel,
    // not the sources beside it (which lack the native module).
    let mut pytest = python(&venv, &dir.join("tests"), &["-m", "pytest", "-q", "."]);
    pytest.env("MANDATE_BIN", &server);
    exec(pytest)
}

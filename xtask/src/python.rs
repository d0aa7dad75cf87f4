//! The Python package `mandate-sdk` in `python/`: its wheel (`cargo xtask
//! python`) and its suites (part of `cargo xtask test`).
//!
//! Both work in a virtual environment the command creates in the target
//! folder (`<target>/python-venv`) with the machine's `python3`, installing
//! pinned tools from PyPI: maturin builds the PyO3 extension and the wheel
//! from source (no wheel of ours is ever downloaded) into `python/dist`:
//! `cargo xtask python` the release wheel, linked by zig for manylinux2014
//! (glibc 2.17); the test step a wheel of the same code in the dev profile
//! for this machine's glibc ([`Wheel::Test`]), which it installs with the
//! suites' pinned packages
//! (`python/requirements-test.txt`), runs pytest (the conformance vectors,
//! then the client and adapters against a live `mandate serve`), and checks
//! the package's types with mypy --strict and pyright.
//!
//! The client's request and response types (`python/mandate/client/_models.py`,
//! TypedDicts) are generated from the document a real `mandate serve` serves
//! at `/v1/openapi.json` by datamodel-code-generator, pinned with every
//! dependency in `python/codegen-requirements.txt` and installed in a
//! virtual environment of its own: `cargo xtask python` writes them, the
//! test step fails when the committed file differs.

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

/// The pinned generator of the client's types, with every dependency.
const CODEGEN_REQUIREMENTS: &str = "python/codegen-requirements.txt";
/// The generated types, committed beside the client that imports them.
const MODELS: &str = "python/mandate/client/_models.py";
/// The first lines of the generated types.
const MODELS_HEADER: &str = "# Generated from the OpenAPI document a `mandate serve` serves at /v1/openapi.json\n\
# by datamodel-code-generator (`cargo xtask python` writes it; its test step\n\
# checks it is current). Do not edit.";

/// The generator's virtual environment, made (again) when the pinned
/// requirements differ from those it was made with; answers its
/// `datamodel-codegen`.
fn codegen(root: &Path) -> Result<PathBuf> {
    let dir = crate::wasm::target_dir(root)?.join("python-codegen-venv");
    let wanted = std::fs::read_to_string(root.join(CODEGEN_REQUIREMENTS))?;
    let stamp = dir.join("requirements.txt");
    if std::fs::read_to_string(&stamp).ok().as_deref() != Some(wanted.as_str()) {
        if dir.exists() {
            std::fs::remove_dir_all(&dir)?;
        }
        let path = dir
            .to_str()
            .ok_or("the target folder's path is not UTF-8")?;
        crate::run("python3", &["-m", "venv", path])?;
        let mut install = Command::new(dir.join("bin").join("pip"));
        install
            .args([
                "install",
                "--quiet",
                "--disable-pip-version-check",
                "--no-deps",
                "--requirement",
            ])
            .arg(root.join(CODEGEN_REQUIREMENTS));
        exec(install)?;
        std::fs::write(&stamp, wanted)?;
    }
    Ok(dir.join("bin").join("datamodel-codegen"))
}

/// Generates the client's types from the served document; writes
/// `python/mandate/client/_models.py`, or with `check` fails when it differs
/// from what is committed.
pub(crate) fn models(root: &Path, check: bool) -> Result<()> {
    let generator = codegen(root)?;
    let scratch = crate::openapi::Scratch::new("python-models")?;
    let document = crate::openapi::served_file(root, &scratch.0)?;
    let generated = scratch.0.join("models.py");
    let mut command = Command::new(generator);
    command
        .args(["--input-file-type", "openapi", "--input"])
        .arg(&document)
        .arg("--output")
        .arg(&generated)
        .args([
            "--output-model-type",
            "typing.TypedDict",
            "--target-python-version",
            "3.11",
            "--use-standard-collections",
            "--use-union-operator",
            "--disable-timestamp",
            "--formatters",
            "builtin",
            "--no-use-closed-typed-dict",
            "--use-schema-description",
            "--use-field-description",
            "--custom-file-header",
            MODELS_HEADER,
        ])
        .current_dir(&scratch.0);
    exec(command)?;
    let generated = std::fs::read_to_string(&generated)?;
    let committed = std::fs::read_to_string(root.join(MODELS)).unwrap_or_default();
    if generated == committed {
        return Ok(());
    }
    if check {
        return fail(format!(
            "{MODELS} differs from what `cargo xtask python` generates from the served document; regenerate and commit it"
        ));
    }
    std::fs::write(root.join(MODELS), generated)?;
    eprintln!("wrote {MODELS}");
    Ok(())
}

/// `cargo xtask python`: the client's types, then the wheel.
pub(crate) fn generate_and_build(root: &Path) -> Result<()> {
    models(root, false)?;
    build(root, Wheel::Release).map(|_| ())
}

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

/// Which wheel to build.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Wheel {
    /// Optimised and linked by zig for manylinux2014: what a release
    /// publishes, and what the full benchmark measures.
    Release,
    /// The same code in the dev profile, for this machine's glibc: what the
    /// test command and the quick benchmark install. It reuses most of the
    /// debug build the native tests made, where the release wheel compiled
    /// every dependency again (68 s of a cold run's 239 s Python step), and
    /// needs no zig.
    Test,
}

/// Builds the wheel into `python/dist` and returns its path.
pub(crate) fn build(root: &Path, wheel: Wheel) -> Result<PathBuf> {
    let venv = venv(root)?;
    let dir = root.join("python");
    let tools: &[&str] = match wheel {
        Wheel::Release => &[MATURIN, ZIG],
        Wheel::Test => &[MATURIN],
    };
    exec(python(
        &venv,
        &dir,
        &[
            &[
                "-m",
                "pip",
                "install",
                "--quiet",
                "--disable-pip-version-check",
            ][..],
            tools,
        ]
        .concat(),
    ))?;
    let dist = dir.join("dist");
    if dist.exists() {
        std::fs::remove_dir_all(&dist)?;
    }
    let profile: &[&str] = match wheel {
        Wheel::Release => &["--release", "--zig", "--compatibility", "manylinux2014"],
        Wheel::Test => &["--profile", "dev"],
    };
    let mut maturin = python(
        &venv,
        &dir,
        &[
            &["-m", "maturin", "build"][..],
            profile,
            &["--out", "dist", "--interpreter"],
        ]
        .concat(),
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

/// The suites' pinned packages, installed in the virtual environment.
fn install_requirements(venv: &Path, dir: &Path) -> Result<()> {
    exec(python(
        venv,
        dir,
        &[
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            "--requirement",
            "requirements-test.txt",
        ],
    ))
}

/// What the test step downloads, fetched ahead of it (the test command
/// runs this beside the native build: it waits on the network, not the
/// cores): the virtual environment with maturin and the suites' pinned
/// packages, the generator's environment, and the npm package pyright
/// wraps, which its first run fetches.
pub(crate) fn download(root: &Path) -> Result<()> {
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
        ],
    ))?;
    install_requirements(&venv, &dir)?;
    codegen(root)?;
    exec(python(&venv, &dir, &["-m", "pyright", "--version"]))
}

/// Builds the wheel and installs it with the suites' pinned packages in the
/// virtual environment; returns its interpreter and the wheel.
pub(crate) fn installed(root: &Path, wheel: Wheel) -> Result<(PathBuf, PathBuf)> {
    let wheel = build(root, wheel)?;
    let venv = venv(root)?;
    let dir = root.join("python");
    install_requirements(&venv, &dir)?;
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
    Ok((venv, wheel))
}

/// The wheel as a user installs it: into a new virtual environment, its
/// dependencies resolved by pip from PyPI, then imported from an empty
/// folder (no source tree beside it) and its verifier called.
pub(crate) fn try_clean(wheel: &Path) -> Result<()> {
    let scratch = std::env::temp_dir().join(format!("mandate-wheel-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&scratch);
    let empty = scratch.join("empty");
    std::fs::create_dir_all(&empty)?;
    let venv = scratch.join("venv");
    exec({
        let mut command = Command::new("python3");
        command.args(["-m", "venv"]).arg(&venv);
        command
    })?;
    let python = venv.join("bin").join("python");
    let mut install = self::python(
        &python,
        &empty,
        &[
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
        ],
    );
    install.arg(wheel);
    exec(install)?;
    let outcome = exec(self::python(
        &python,
        &empty,
        &[
            "-c",
            "import mandate\n\
             try:\n    mandate.verify_token('a.b.c', {'keys': []})\n\
             except mandate.MandateError as error:\n    print('mandate', mandate.__file__, error.code)\n\
             else:\n    raise SystemExit('a malformed token verified')",
        ],
    ));
    let _ = std::fs::remove_dir_all(&scratch);
    outcome
}

/// Builds and installs the wheel, then runs the type checkers and the
/// Python suites.
pub(crate) fn test(root: &Path) -> Result<()> {
    models(root, true)?;
    let (venv, wheel) = installed(root, Wheel::Test)?;
    try_clean(&wheel)?;
    let dir = root.join("python");
    // The package, its tests, the benchmarks and the Python example:
    // formatted, and clean of the rules pyproject.toml selects.
    let sources = [".", "../examples/python-langgraph"];
    exec(python(
        &venv,
        &dir,
        &[&["-m", "ruff", "format", "--check"][..], &sources].concat(),
    ))?;
    exec(python(
        &venv,
        &dir,
        &[&["-m", "ruff", "check"][..], &sources].concat(),
    ))?;
    exec(python(
        &venv,
        &dir,
        &["-m", "mypy", "--strict", "mandate", "tests", "bench"],
    ))?;
    // pyright judges the virtual environment's packages, not the
    // interpreter it finds first on the path.
    let mut pyright = python(&venv, &dir, &["-m", "pyright", "--pythonpath"]);
    pyright.arg(&venv);
    exec(pyright)?;
    let server = crate::debug_server(root)?;
    // The MCP Python SDK's OAuth client meets the consent page in Chromium
    // (test_oauth_sdk.py, driving it with web/'s playwright-core).
    crate::web::ensure_chromium(root)?;
    // From the tests' folder, so `import mandate` finds the installed wheel,
    // not the sources beside it (which lack the native module).
    let mut pytest = python(&venv, &dir.join("tests"), &["-m", "pytest", "-q", "."]);
    pytest.env("MANDATE_BIN", &server);
    pytest.env("CHROMIUM", crate::web::CHROMIUM);
    exec(pytest)
}

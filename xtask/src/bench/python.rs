//! The Python section of BENCHMARKS.md (DESIGN §16): mandate-sdk for
//! Python's verification against PyJWT (with `cryptography`'s Ed25519) on
//! the same token, side by side in one process (`python/bench/verify.py`),
//! and each adapter's own cost per tool call besides its two requests to
//! Mandate, against a live release server (`python/bench/adapters.py`).

use std::fmt::Write as _;
use std::path::Path;
use std::process::Command;

use serde_json::Value;

use super::parsing::Spread;
use super::report::{ARGS_HEADING, REPRODUCE, Row, Target, Unit};
use super::running::json_of;
use crate::{Result, fail};

/// Where the section starts; it ends where the argument-constraints section
/// (or the paragraph that says how to reproduce the tables) begins.
pub(super) const PYTHON_HEADING: &str = "## Python";

/// The adapters measured, as `python/bench/adapters.py` names them, and as
/// the table shows them.
const ADAPTERS: [(&str, &str); 4] = [
    ("langchain", "`mandate.langchain`"),
    ("mcp", "`mandate.mcp`"),
    ("openai_agents", "`mandate.openai_agents`"),
    ("pydantic_ai", "`mandate.pydantic_ai`"),
];

/// The most an adapter may add to a tool call besides its two requests to
/// Mandate (issue 34): 1 ms.
const ADAPTER_CEILING_MS: f64 = 1.0;

/// The rows of the Python section.
pub(super) struct PythonRows {
    /// `python/bench/verify.py --json`'s report.
    verify: Value,
    /// `python/bench/adapters.py`'s report.
    adapters: Value,
}

/// Builds and installs the wheel (release, as users get it; the test
/// command's with `quick`, which checks only that the rows run) and
/// measures, the adapters against `server` (the `mandate` binary).
pub(super) fn python_rows(root: &Path, quick: bool, server: &Path) -> Result<PythonRows> {
    let wheel = if quick {
        crate::python::Wheel::Test
    } else {
        crate::python::Wheel::Release
    };
    let (python, _) = crate::python::installed(root, wheel)?;
    let mut args = vec!["bench/verify.py", "--json"];
    if quick {
        args.push("--quick");
    }
    let verify = json_of(&python, &args, &root.join("python"))?;
    let rounds = if quick { "20" } else { "200" };
    let output = Command::new(&python)
        .args(["bench/adapters.py", "--rounds", rounds])
        .env("MANDATE_BIN", std::path::absolute(server)?)
        .current_dir(root.join("python"))
        .output()?;
    if !output.status.success() {
        return fail(format!(
            "python/bench/adapters.py failed: {}",
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    let adapters = serde_json::from_slice(&output.stdout)?;
    Ok(PythonRows { verify, adapters })
}

impl PythonRows {
    #[cfg(test)]
    pub(super) fn of(verify: Value, adapters: Value) -> PythonRows {
        PythonRows { verify, adapters }
    }

    /// The rows of the section's targets table.
    pub(super) fn targets(&self) -> Vec<Row> {
        let mut rows = vec![
            Row::new(
                "10. PyJWT (`cryptography`'s Ed25519) / mandate `verify_token`, the same token, in Python",
                Target::AtLeast(1.5, Unit::Times),
                Spread::from_json(&self.verify["pyjwt_over_verify_token"]),
                2,
            ),
            Row::new(
                "10. PyJWT / a cached mandate `Verifier.verify`, the same token",
                Target::AtLeast(20.0, Unit::Times),
                Spread::from_json(&self.verify["pyjwt_over_cached"]),
                1,
            ),
        ];
        for (name, shown) in ADAPTERS {
            rows.push(Row::new(
                format!(
                    "10. {shown}: a tool call's time minus its two requests to Mandate made bare"
                ),
                Target::AtMost(ADAPTER_CEILING_MS, Unit::Ms),
                Spread::from_json(&self.adapters["adapters"][name]["overhead"]),
                3,
            ));
        }
        rows
    }

    /// Each adapter's own work per tool call, Mandate's two answers given
    /// in process: (adapter, median ms), for the quick run's sanity check.
    pub(super) fn adapters_alone(&self) -> Vec<(&'static str, f64)> {
        ADAPTERS
            .iter()
            .map(|(name, _)| {
                let own = Spread::from_json(&self.adapters["adapters"][name]["own"]);
                (*name, own.median)
            })
            .collect()
    }

    /// The rows of the section's absolute figures: (what, figure).
    pub(super) fn figures(&self) -> Vec<(String, String)> {
        let ns = &self.verify["ns"];
        [
            ("mandate `verify_token` (ns)", "verify_token"),
            ("mandate `Verifier.verify`, uncached (ns)", "verifier"),
            ("mandate `Verifier.verify`, cache hit (ns)", "cached"),
            (
                "PyJWT `decode_complete` with the header's `typ` (ns)",
                "pyjwt",
            ),
        ]
        .into_iter()
        .map(|(what, name)| (what.to_owned(), Spread::from_json(&ns[name]).show(0)))
        .chain(ADAPTERS.iter().map(|(name, shown)| {
            (
                format!("{shown} alone, Mandate's two answers given in process (ms)"),
                Spread::from_json(&self.adapters["adapters"][name]["own"]).show(3),
            )
        }))
        .collect()
    }

    /// The section of BENCHMARKS.md; `measured` says how and when.
    pub(super) fn section(&self, measured: &str) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "{PYTHON_HEADING}\n\n{measured} `python/bench/verify.py`: the wheel `cargo xtask python` builds, \
             Python {}, PyJWT {}; {} interleaved rounds of {} calls per contender, each figure the median \
             of the per-round figures. `python/bench/adapters.py`: each adapter's tool call (authorize → a \
             tool that returns at once → complete) against a release server on 127.0.0.1, interleaved with the \
             same two requests made bare through the same client; {} rounds, each figure the median of the \
             per-round differences (a difference can be negative: the two requests' noise is larger than the \
             adapter's work, which the last rows measure alone).\n",
            self.verify["python"].as_str().unwrap_or("?"),
            self.verify["pyjwt"].as_str().unwrap_or("?"),
            self.verify["rounds"],
            self.verify["calls"],
            self.adapters["rounds"],
        );
        let _ = writeln!(out, "| row | target | measured | |\n|---|---|---|---|");
        for row in self.targets() {
            let _ = writeln!(out, "{}", row.line());
        }
        let _ = writeln!(out, "\n| what | figure |\n|---|---|");
        for (what, figure) in self.figures() {
            let _ = writeln!(out, "| {what} | {figure} |");
        }
        out.push('\n');
        out
    }

    /// `benchmarks` (BENCHMARKS.md's text) with this section in place of the
    /// one it has, or before the argument-constraints section (or the
    /// paragraph that says how to reproduce the tables); `None` if it has
    /// neither.
    pub(super) fn spliced(&self, benchmarks: &str, measured: &str) -> Option<String> {
        let end = benchmarks
            .find(ARGS_HEADING)
            .or_else(|| benchmarks.find(REPRODUCE))?;
        let start = benchmarks[..end].find(PYTHON_HEADING).unwrap_or(end);
        Some(format!(
            "{}{}{}",
            &benchmarks[..start],
            self.section(measured),
            &benchmarks[end..]
        ))
    }

    /// Whether every target is met.
    pub(super) fn met(&self) -> bool {
        self.targets().iter().all(Row::met)
    }
}

//! The Python section of BENCHMARKS.md (DESIGN §16): mandate-sdk for
//! Python's verification against PyJWT (with `cryptography`'s Ed25519) on
//! the same token, side by side in one process (`python/bench/verify.py`).

use std::fmt::Write as _;
use std::path::Path;

use serde_json::Value;

use super::parsing::Spread;
use super::report::{ARGS_HEADING, REPRODUCE, Row, Target, Unit};
use super::running::json_of;
use crate::Result;

/// Where the section starts; it ends where the argument-constraints section
/// (or the paragraph that says how to reproduce the tables) begins.
pub(super) const PYTHON_HEADING: &str = "## Python";

/// The rows of the Python section.
pub(super) struct PythonRows {
    /// `python/bench/verify.py --json`'s report.
    verify: Value,
}

/// Builds and installs the wheel (release, as users get it) and measures.
pub(super) fn python_rows(root: &Path, quick: bool) -> Result<PythonRows> {
    let python = crate::python::installed(root)?;
    let mut args = vec!["bench/verify.py", "--json"];
    if quick {
        args.push("--quick");
    }
    let verify = json_of(&python, &args, &root.join("python"))?;
    Ok(PythonRows { verify })
}

impl PythonRows {
    #[cfg(test)]
    pub(super) fn of(verify: Value) -> PythonRows {
        PythonRows { verify }
    }

    /// The rows of the section's targets table.
    pub(super) fn targets(&self) -> [Row; 2] {
        [
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
        ]
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
        .collect()
    }

    /// The section of BENCHMARKS.md; `measured` says how and when.
    pub(super) fn section(&self, measured: &str) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "{PYTHON_HEADING}\n\n{measured} `python/bench/verify.py`: the wheel `cargo xtask python` builds, \
             Python {}, PyJWT {}; {} interleaved rounds of {} calls per contender, each figure the median \
             of the per-round figures.\n",
            self.verify["python"].as_str().unwrap_or("?"),
            self.verify["pyjwt"].as_str().unwrap_or("?"),
            self.verify["rounds"],
            self.verify["calls"],
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

//! `docs/configuration.md`, the configuration reference: `mandate config
//! reference` prints it from the configuration's own types; the test command
//! fails when the committed file differs (as it does for the client's
//! generated `openapi.ts`), and `cargo xtask config-reference` rewrites it.

use std::fs;
use std::path::Path;
use std::process::Command;

use crate::{Result, fail};

/// The committed reference.
const REFERENCE: &str = "docs/configuration.md";

/// Writes the reference the debug `mandate` prints, or with `check` fails
/// when it differs from what is committed.
pub(crate) fn reference(root: &Path, check: bool) -> Result<()> {
    let output = Command::new(crate::debug_server(root)?)
        .args(["config", "reference"])
        // The reference is the types' own: no variable of this shell in it.
        .env_remove("MANDATE_CONFIG")
        .output()?;
    if !output.status.success() {
        return fail(format!(
            "`mandate config reference` failed: {}",
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    let generated = String::from_utf8(output.stdout)?;
    let committed = fs::read_to_string(root.join(REFERENCE)).unwrap_or_default();
    if generated == committed {
        return Ok(());
    }
    if check {
        return fail(format!(
            "{REFERENCE} differs from what `mandate config reference` prints; run `cargo xtask config-reference` and commit it"
        ));
    }
    fs::write(root.join(REFERENCE), generated)?;
    eprintln!("wrote {REFERENCE}");
    Ok(())
}

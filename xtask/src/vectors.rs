//! `cargo xtask vectors`: writes the conformance vectors in `tests/vectors/`
//! from `mandate-conformance`. `--check` regenerates in memory and fails when
//! a byte differs from what is committed.

use std::path::Path;

use crate::{Result, fail};

/// Writes the vectors, or with `check` fails if the committed ones differ.
pub(crate) fn run(root: &Path, check: bool) -> Result<()> {
    let dir = root.join("tests").join("vectors");
    std::fs::create_dir_all(&dir)?;
    let mut stale = Vec::new();
    for (name, text) in mandate_conformance::files() {
        let path = dir.join(name);
        let current = std::fs::read_to_string(&path).unwrap_or_default();
        if current == text {
            continue;
        }
        if check {
            stale.push(name);
        } else {
            std::fs::write(&path, text)?;
            eprintln!("wrote tests/vectors/{name}");
        }
    }
    if !stale.is_empty() {
        return fail(format!(
            "tests/vectors/{} differ from what `cargo xtask vectors` generates; regenerate and commit them",
            stale.join(", tests/vectors/")
        ));
    }
    Ok(())
}

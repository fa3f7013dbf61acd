//! The Python interpreter that privrl starts for Gymnasium: the bridge's workers (feature
//! `gymnasium`) and anything measured beside them, e.g. `cargo xtask bench
//! --compare-gymnasium`'s native reference, so that both run under the same Python.

use std::path::{Path, PathBuf};

/// The Python interpreter the Gymnasium bridge starts: `PRIVRL_PYTHON` if set and non-empty,
/// else `.venv/bin/python` at the privrl workspace root if it exists (what `scripts/test.sh`
/// sets up), else `python3`.
pub fn default_python() -> PathBuf {
    if let Some(python) = std::env::var_os("PRIVRL_PYTHON").filter(|p| !p.is_empty()) {
        return PathBuf::from(python);
    }
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap_or(Path::new("."));
    let venv = if cfg!(windows) {
        workspace.join(".venv").join("Scripts").join("python.exe")
    } else {
        workspace.join(".venv").join("bin").join("python")
    };
    if venv.exists() {
        venv
    } else {
        PathBuf::from("python3")
    }
}

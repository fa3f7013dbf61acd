//! What every suite returns ([`SuiteOutcome`], with its [`Headline`]) and how one suite reads
//! another's `<run>/summary.json` files ([`read_summaries`]). Each summary type is defined once,
//! by the suite that writes it (the DP-SGD suite's `RunSummary`, the PGC suite's
//! `TrialSummary`), so that a reader cannot drift from its writer; the leakage suite reads both
//! to put utility beside leakage. This module sits below the suites and imports none of them.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::report::Report;

/// The effect a suite's quick mode is sized to show, judged by a criterion written in the
/// suite's code before any run, with what this run measured. The quickstart collects one per
/// suite, so a reader sees at a glance whether each paper's headline came out.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Headline {
    /// The effect and its criterion, in words.
    pub effect: String,
    /// What this run measured, in the criterion's terms.
    pub measured: String,
    /// Whether the measurement meets the criterion.
    pub visible: bool,
}

impl Headline {
    /// `visible` or `not visible`.
    pub fn verdict(&self) -> &'static str {
        if self.visible {
            "visible"
        } else {
            "not visible"
        }
    }

    /// Adds a "Headline" section to a suite's report.
    pub fn add_to(&self, report: &mut Report) {
        report.heading("Headline").paragraph(&format!(
            "**{}**: {} Measured: {}.",
            self.verdict(),
            self.effect,
            self.measured
        ));
    }
}

/// What a suite run returns: its report and its headline.
#[derive(Debug, Clone)]
pub struct SuiteOutcome {
    /// `runs/<suite>/report.md`.
    pub report: PathBuf,
    /// The suite's headline effect in this run.
    pub headline: Headline,
}

/// Every `<run>/summary.json` directly under `suite_dir`, parsed as `T`, in path order. A run
/// directory without a summary (unfinished, or killed) is skipped; a summary that does not
/// parse is an error that names the file, never a silent gap in a table. A missing
/// `suite_dir` is no runs.
pub fn read_summaries<T: DeserializeOwned>(suite_dir: &Path) -> Result<Vec<(PathBuf, T)>> {
    let entries = match std::fs::read_dir(suite_dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e).with_context(|| format!("reading {}", suite_dir.display())),
    };
    let mut paths = Vec::new();
    for entry in entries {
        let path = entry
            .with_context(|| format!("reading {}", suite_dir.display()))?
            .path()
            .join("summary.json");
        if path.is_file() {
            paths.push(path);
        }
    }
    paths.sort();
    paths
        .into_iter()
        .map(|path| {
            let text = std::fs::read_to_string(&path)
                .with_context(|| format!("reading {}", path.display()))?;
            let summary = serde_json::from_str(&text)
                .with_context(|| format!("{} is not a summary this suite reads", path.display()))?;
            Ok((path, summary))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(serde::Deserialize, Debug, PartialEq)]
    struct Tiny {
        x: u32,
    }

    #[test]
    fn unparsable_summaries_are_errors_that_name_the_file_and_unfinished_runs_are_skipped() {
        let dir = std::env::temp_dir().join(format!("privrl-summary-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        for (run, text) in [
            ("a", Some(r#"{"x": 1}"#)),
            ("b", None),
            ("c", Some(r#"{"x": 3}"#)),
        ] {
            std::fs::create_dir_all(dir.join(run)).unwrap();
            if let Some(text) = text {
                std::fs::write(dir.join(run).join("summary.json"), text).unwrap();
            }
        }
        let read: Vec<Tiny> = read_summaries(&dir)
            .unwrap()
            .into_iter()
            .map(|(_, s)| s)
            .collect();
        assert_eq!(read, vec![Tiny { x: 1 }, Tiny { x: 3 }]);
        std::fs::write(dir.join("b").join("summary.json"), r#"{"y": 2}"#).unwrap();
        let error = read_summaries::<Tiny>(&dir).unwrap_err();
        assert!(format!("{error:#}").contains("b/summary.json"), "{error:#}");
        assert!(read_summaries::<Tiny>(&dir.join("missing"))
            .unwrap()
            .is_empty());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

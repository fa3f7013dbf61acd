//! Shard manifests (`shard-<i>-of-<n>.json`) and merging them into `merged.json`.

use super::jobs::Outcomes;
use super::shard::Shard;
use crate::run::{
    read_json, read_metrics, write_json, Table, CONFIG_FILE, METRICS_FILE, SUMMARY_FILE,
};
use anyhow::{bail, ensure, Context, Result};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::fs;
use std::path::{Path, PathBuf};

/// A run that a shard was assigned but did not complete.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FailedRun {
    /// Run name.
    pub name: String,
    /// The error, as one line.
    pub error: String,
}

/// `runs/<suite>/shard-<i>-of-<n>.json`: what one shard was assigned and what it completed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShardManifest {
    /// Suite name.
    pub suite: String,
    /// Which shard wrote this manifest.
    pub shard: Shard,
    /// Run names assigned to this shard, in sweep order.
    pub planned: Vec<String>,
    /// Run names that finished and wrote their `summary.json`.
    pub completed: Vec<String>,
    /// Runs that failed, with their errors.
    pub failed: Vec<FailedRun>,
}

impl ShardManifest {
    /// The manifest for a finished [`run_parallel`](super::run_parallel) whose job names are
    /// run names.
    pub fn from_outcomes<R>(suite: &str, shard: Shard, outcomes: &Outcomes<R>) -> Self {
        let mut manifest = Self {
            suite: suite.to_owned(),
            shard,
            planned: Vec::new(),
            completed: Vec::new(),
            failed: Vec::new(),
        };
        for outcome in &outcomes.0 {
            manifest.planned.push(outcome.name.clone());
            match &outcome.result {
                Ok(_) => manifest.completed.push(outcome.name.clone()),
                Err(e) => manifest.failed.push(FailedRun {
                    name: outcome.name.clone(),
                    error: format!("{e:#}").replace('\n', " "),
                }),
            }
        }
        manifest
    }

    /// Writes `<suite_dir>/shard-<i>-of-<n>.json` and returns its path.
    pub fn write(&self, suite_dir: &Path) -> Result<PathBuf> {
        fs::create_dir_all(suite_dir)
            .with_context(|| format!("creating {}", suite_dir.display()))?;
        let path = suite_dir.join(self.shard.manifest_file_name());
        write_json(&path, self)?;
        Ok(path)
    }
}

/// File name of the merged index in a suite directory.
pub const MERGED_FILE: &str = "merged.json";

/// Whether [`merge_shards_with`] may write `merged.json` when shards or runs are missing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MergeMode {
    /// Fail, listing everything that is missing.
    Strict,
    /// Warn, and record what is missing in `merged.json`.
    AllowPartial,
}

/// One completed run in `merged.json`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MergedRun {
    /// Run name (directory under the suite).
    pub name: String,
    /// Index of the shard that ran it.
    pub shard: usize,
    /// The run's `config.json` (`null` if it has none).
    pub config: serde_json::Value,
    /// The run's `summary.json`.
    pub summary: serde_json::Value,
}

impl MergedRun {
    /// Reads this run's `metrics.csv` from `<suite_dir>/<name>/`, e.g. to redraw curves.
    pub fn read_metrics(&self, suite_dir: &Path) -> Result<Table> {
        read_metrics(&suite_dir.join(&self.name).join(METRICS_FILE))
    }
}

/// A planned run that has no usable result.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MissingRun {
    /// Run name.
    pub name: String,
    /// Index of the shard it was assigned to.
    pub shard: usize,
    /// Why it is missing.
    pub reason: String,
}

/// `runs/<suite>/merged.json`: every run of a sweep with its config and summary.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Merged {
    /// Suite name.
    pub suite: String,
    /// Number of shards `n`.
    pub shard_count: usize,
    /// Completed runs, in sweep order.
    pub runs: Vec<MergedRun>,
    /// Shards whose manifest is missing (empty unless merged with [`MergeMode::AllowPartial`]).
    pub missing_shards: Vec<usize>,
    /// Planned runs without a result (empty unless merged with [`MergeMode::AllowPartial`]).
    pub missing_runs: Vec<MissingRun>,
}

impl Merged {
    /// Reads `<suite_dir>/merged.json`.
    pub fn read(suite_dir: &Path) -> Result<Self> {
        read_json(&suite_dir.join(MERGED_FILE))
    }

    /// Whether no shard and no run is missing.
    pub fn is_complete(&self) -> bool {
        self.missing_shards.is_empty() && self.missing_runs.is_empty()
    }
}

/// Joins the shard outputs in `suite_dir` into `merged.json` and returns its path; fails,
/// listing what is missing, unless every shard and run is there. See [`merge_shards_with`].
pub fn merge_shards(suite_dir: &Path) -> Result<PathBuf> {
    merge_shards_with(suite_dir, MergeMode::Strict)?;
    Ok(suite_dir.join(MERGED_FILE))
}

/// Joins the shard outputs in `suite_dir` into `merged.json` (see the module docs) and
/// returns what it wrote.
///
/// Checks that manifests `shard-0-of-n.json … shard-(n-1)-of-n.json` all exist and agree on
/// `n` and the suite, and that every planned run completed and has a `summary.json`.
pub fn merge_shards_with(suite_dir: &Path, mode: MergeMode) -> Result<Merged> {
    let manifests = read_manifests(suite_dir)?;
    let (shard_count, suite) = agreed_count_and_suite(suite_dir, &manifests)?;
    let by_index: BTreeMap<usize, &ShardManifest> = manifests
        .iter()
        .map(|(shard, m)| (shard.index(), m))
        .collect();
    let missing_shards: Vec<usize> = (0..shard_count)
        .filter(|i| !by_index.contains_key(i))
        .collect();
    let (runs, missing_runs) = collect_runs(suite_dir, &by_index)?;
    let merged = Merged {
        suite,
        shard_count,
        runs,
        missing_shards,
        missing_runs,
    };
    if !merged.is_complete() {
        let problems = describe_missing(&merged);
        match mode {
            MergeMode::Strict => bail!(
                "{}: cannot merge, the sweep is incomplete ({} runs present):\n{problems}\n\
                 rerun the missing shards, or merge with partial results allowed",
                suite_dir.display(),
                merged.runs.len()
            ),
            MergeMode::AllowPartial => tracing::warn!(
                "{}: merging a partial sweep ({} runs present):\n{problems}",
                suite_dir.display(),
                merged.runs.len()
            ),
        }
    }
    write_json(&suite_dir.join(MERGED_FILE), &merged)?;
    tracing::info!(
        "merged {} runs from {} shards into {}",
        merged.runs.len(),
        shard_count,
        suite_dir.join(MERGED_FILE).display()
    );
    Ok(merged)
}

/// The shard count n and the suite that every manifest names; fails when they disagree.
fn agreed_count_and_suite(
    suite_dir: &Path,
    manifests: &BTreeMap<Shard, ShardManifest>,
) -> Result<(usize, String)> {
    let counts: BTreeSet<usize> = manifests.keys().map(Shard::count).collect();
    if counts.len() > 1 {
        let files: Vec<String> = manifests.keys().map(Shard::manifest_file_name).collect();
        bail!(
            "{}: shard manifests disagree on the shard count n ({}); remove the stale ones: {}",
            suite_dir.display(),
            counts
                .iter()
                .map(usize::to_string)
                .collect::<Vec<_>>()
                .join(" vs "),
            files.join(", ")
        );
    }
    let shard_count = *counts.first().expect("read_manifests returns at least one");
    let suites: BTreeSet<&str> = manifests.values().map(|m| m.suite.as_str()).collect();
    ensure!(
        suites.len() == 1,
        "{}: shard manifests name different suites: {}",
        suite_dir.display(),
        suites.into_iter().collect::<Vec<_>>().join(", ")
    );
    let suite = manifests.values().next().expect("non-empty").suite.clone();
    Ok((shard_count, suite))
}

/// Every planned run in sweep order, read back where it completed, else listed as missing
/// with the reason.
fn collect_runs(
    suite_dir: &Path,
    by_index: &BTreeMap<usize, &ShardManifest>,
) -> Result<(Vec<MergedRun>, Vec<MissingRun>)> {
    // Round-robin dealing puts sweep item k at position k / n of shard k % n, so interleaving
    // the planned lists restores the sweep order.
    let longest = by_index
        .values()
        .map(|m| m.planned.len())
        .max()
        .unwrap_or(0);
    let mut seen = HashSet::new();
    let mut runs = Vec::new();
    let mut missing_runs = Vec::new();
    for position in 0..longest {
        for (&index, manifest) in by_index {
            let Some(name) = manifest.planned.get(position) else {
                continue;
            };
            ensure!(
                seen.insert(name.clone()),
                "{}: run {name:?} is planned by more than one shard",
                suite_dir.display()
            );
            let missing = |reason: String| MissingRun {
                name: name.clone(),
                shard: index,
                reason,
            };
            if let Some(failure) = manifest.failed.iter().find(|f| &f.name == name) {
                missing_runs.push(missing(format!("failed: {}", failure.error)));
                continue;
            }
            if !manifest.completed.contains(name) {
                missing_runs.push(missing("not completed".to_owned()));
                continue;
            }
            let run_dir = suite_dir.join(name);
            let summary_path = run_dir.join(SUMMARY_FILE);
            if !summary_path.is_file() {
                missing_runs.push(missing(format!("no {}", summary_path.display())));
                continue;
            }
            let config_path = run_dir.join(CONFIG_FILE);
            let config = if config_path.is_file() {
                read_json(&config_path)?
            } else {
                serde_json::Value::Null
            };
            runs.push(MergedRun {
                name: name.clone(),
                shard: index,
                config,
                summary: read_json(&summary_path)?,
            });
        }
    }
    Ok((runs, missing_runs))
}

fn read_manifests(suite_dir: &Path) -> Result<BTreeMap<Shard, ShardManifest>> {
    let entries =
        fs::read_dir(suite_dir).with_context(|| format!("reading {}", suite_dir.display()))?;
    let mut manifests = BTreeMap::new();
    for entry in entries {
        let entry = entry.with_context(|| format!("reading {}", suite_dir.display()))?;
        let file_name = entry.file_name();
        let Some(shard) = file_name.to_str().and_then(Shard::from_manifest_file_name) else {
            continue;
        };
        let path = entry.path();
        let shard = shard.with_context(|| format!("bad manifest name {}", path.display()))?;
        let manifest: ShardManifest = read_json(&path)?;
        ensure!(
            manifest.shard == shard,
            "{} says it is shard {}, but its name says {shard}",
            path.display(),
            manifest.shard
        );
        manifests.insert(shard, manifest);
    }
    ensure!(
        !manifests.is_empty(),
        "{}: no shard manifests (shard-<i>-of-<n>.json); run the suite (with --shard i/n) first",
        suite_dir.display()
    );
    Ok(manifests)
}

fn describe_missing(merged: &Merged) -> String {
    let mut lines = Vec::new();
    if !merged.missing_shards.is_empty() {
        let shards: Vec<String> = merged
            .missing_shards
            .iter()
            .map(|i| format!("{i}/{}", merged.shard_count))
            .collect();
        lines.push(format!(
            "  missing shards (no manifest): {} — e.g. expected shard-{}-of-{}.json",
            shards.join(", "),
            merged.missing_shards[0],
            merged.shard_count
        ));
    }
    for run in &merged.missing_runs {
        lines.push(format!(
            "  missing run {} (shard {}/{}): {}",
            run.name, run.shard, merged.shard_count, run.reason
        ));
    }
    lines.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run::tests::temp_dir;
    use crate::run::RunDir;
    use crate::sweep::{run_parallel, Job};

    /// Runs a fake 2-shard sweep of 5 seeds into `root`; `skip` names a seed whose run fails.
    fn fake_sweep(root: &Path, shards: &[usize], fail_seed: Option<u64>) -> PathBuf {
        let suite_dir = root.join("demo");
        let names: Vec<String> = (0..5).map(|s| format!("ppo-seed{s}")).collect();
        for &index in shards {
            let shard = Shard::new(index, 2).unwrap();
            let jobs: Vec<Job<u64>> = shard
                .select(names.iter().enumerate())
                .into_iter()
                .map(|(seed, name)| Job::new(name.clone(), seed as u64))
                .collect();
            let outcomes = run_parallel(jobs, 2, |seed, progress| {
                let run = RunDir::create_in(root, "demo", progress.name())?;
                run.write_config(&serde_json::json!({ "seed": seed }))?;
                let mut metrics = run.metrics()?;
                for step in 0..3 {
                    metrics
                        .write_row(&[("step", step as f64), ("return", (seed * step) as f64)])?;
                }
                ensure!(Some(seed) != fail_seed, "seed {seed} diverged");
                run.write_summary(&serde_json::json!({ "final_return": seed as f64 * 2.0 }))
            })
            .unwrap();
            ShardManifest::from_outcomes("demo", shard, &outcomes)
                .write(&suite_dir)
                .unwrap();
        }
        suite_dir
    }

    #[test]
    fn merge_joins_complete_shards_in_sweep_order() {
        let root = temp_dir("merge-ok");
        let suite_dir = fake_sweep(&root, &[1, 0], None);
        let path = merge_shards(&suite_dir).unwrap();
        assert_eq!(path, suite_dir.join(MERGED_FILE));
        let merged = Merged::read(&suite_dir).unwrap();
        assert!(merged.is_complete());
        assert_eq!(merged.shard_count, 2);
        let names: Vec<&str> = merged.runs.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "ppo-seed0",
                "ppo-seed1",
                "ppo-seed2",
                "ppo-seed3",
                "ppo-seed4"
            ]
        );
        assert_eq!(merged.runs[3].summary["final_return"], 6.0);
        assert_eq!(merged.runs[3].config["seed"], 3);
        assert_eq!(merged.runs[3].shard, 1);
        let curve = merged.runs[3].read_metrics(&suite_dir).unwrap();
        assert_eq!(
            curve.xy("step", "return").unwrap(),
            [(0.0, 0.0), (1.0, 3.0), (2.0, 6.0)]
        );
    }

    #[test]
    fn merge_reports_missing_shards_and_runs() {
        let root = temp_dir("merge-missing");
        let suite_dir = fake_sweep(&root, &[0], Some(2));
        let err = format!(
            "{:#}",
            merge_shards_with(&suite_dir, MergeMode::Strict).unwrap_err()
        );
        assert!(err.contains("missing shards (no manifest): 1/2"), "{err}");
        assert!(err.contains("shard-1-of-2.json"), "{err}");
        assert!(
            err.contains("missing run ppo-seed2 (shard 0/2): failed: seed 2 diverged"),
            "{err}"
        );
        assert!(!suite_dir.join(MERGED_FILE).exists());

        let partial = merge_shards_with(&suite_dir, MergeMode::AllowPartial).unwrap();
        assert_eq!(partial.missing_shards, [1]);
        assert_eq!(partial.runs.len(), 2);
        assert_eq!(partial.missing_runs.len(), 1);
        assert!(!Merged::read(&suite_dir).unwrap().is_complete());

        // A completed run whose summary vanished is reported too.
        let root = temp_dir("merge-nosummary");
        let suite_dir = fake_sweep(&root, &[0, 1], None);
        fs::remove_file(suite_dir.join("ppo-seed4").join(SUMMARY_FILE)).unwrap();
        let err = format!(
            "{:#}",
            merge_shards_with(&suite_dir, MergeMode::Strict).unwrap_err()
        );
        assert!(
            err.contains("missing run ppo-seed4") && err.contains("summary.json"),
            "{err}"
        );
    }

    #[test]
    fn merge_rejects_mixed_shard_counts_and_empty_dirs() {
        let root = temp_dir("merge-mixed");
        let suite_dir = fake_sweep(&root, &[0, 1], None);
        let stale = ShardManifest {
            suite: "demo".into(),
            shard: Shard::new(0, 3).unwrap(),
            planned: vec![],
            completed: vec![],
            failed: vec![],
        };
        stale.write(&suite_dir).unwrap();
        let err = merge_shards_with(&suite_dir, MergeMode::AllowPartial)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("disagree on the shard count n (2 vs 3)"),
            "{err}"
        );

        let empty = temp_dir("merge-empty");
        let err = merge_shards_with(&empty, MergeMode::Strict)
            .unwrap_err()
            .to_string();
        assert!(err.contains("no shard manifests"), "{err}");
    }
}

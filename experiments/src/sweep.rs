//! Sweeps: seed lists, shards, parallel jobs with progress bars, and merging shard outputs.
//!
//! Sharding layout: every shard writes its runs into the same `runs/<suite>/` tree (run names
//! are distinct) and, when it is done, a manifest `shard-<i>-of-<n>.json` listing the runs it
//! was assigned and which of them completed. [`merge_shards`] checks that all `n` manifests
//! are there and every run has a `summary.json`, then writes `runs/<suite>/merged.json`, from
//! which the suite redraws its tables and plots. An unsharded sweep is shard `0/1` and goes
//! through the same path.

// Used by suites added in later issues; until then only the tests call some items.
#![allow(dead_code)]

use crate::run::{
    read_json, read_metrics, write_json, Table, CONFIG_FILE, METRICS_FILE, SUMMARY_FILE,
};
use anyhow::{anyhow, bail, ensure, Context, Result};
use indicatif::{MultiProgress, ProgressBar, ProgressStyle};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::fmt::{self, Display};
use std::fs;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Largest number of seeds one `--seeds` value may expand to.
const MAX_SEEDS: u64 = 1_000_000;

/// The progress-bar style every long loop uses: prefix, bar, position, rate-free ETA, message.
pub fn progress_style() -> ProgressStyle {
    ProgressStyle::with_template(
        "{prefix:>20.bold} [{bar:32.cyan/blue}] {pos:>7}/{len:<7} {percent:>3}% \
         {elapsed_precise} eta {eta:<4} {msg}",
    )
    .expect("the progress template is a valid constant")
    .progress_chars("=> ")
}

/// A progress bar of `len` steps in [`progress_style`], labelled `prefix`.
pub fn progress_bar(len: u64, prefix: impl Into<String>) -> ProgressBar {
    ProgressBar::new(len)
        .with_style(progress_style())
        .with_prefix(prefix.into())
}

/// Parses `--seeds`: `3`, `0..5` (half-open), `0..=4`, `0,2,7`, or a mix such as `0..3,10`.
///
/// Order is kept; an empty range or a repeated seed is an error.
pub fn parse_seeds(spec: &str) -> Result<Vec<u64>> {
    let expected = "expected N, A..B (half-open), A..=B, or a comma-separated list of those";
    let number = |text: &str| -> Result<u64> {
        text.trim()
            .parse::<u64>()
            .map_err(|_| anyhow!("invalid seed {text:?} in --seeds {spec:?}: {expected}"))
    };
    let mut seeds = Vec::new();
    let mut seen = HashSet::new();
    for token in spec.split(',') {
        let token = token.trim();
        ensure!(
            !token.is_empty(),
            "empty item in --seeds {spec:?}: {expected}"
        );
        let (start, end) = if let Some((a, b)) = token.split_once("..=") {
            let end = number(b)?
                .checked_add(1)
                .with_context(|| format!("seed range {token:?} overflows u64"))?;
            (number(a)?, end)
        } else if let Some((a, b)) = token.split_once("..") {
            (number(a)?, number(b)?)
        } else {
            let seed = number(token)?;
            (seed, seed + 1)
        };
        ensure!(
            start < end,
            "seed range {token:?} in --seeds {spec:?} is empty (ranges are half-open: 0..5 is 0,1,2,3,4)"
        );
        ensure!(
            (seeds.len() as u64).saturating_add(end - start) <= MAX_SEEDS,
            "--seeds {spec:?} expands to more than {MAX_SEEDS} seeds"
        );
        for seed in start..end {
            ensure!(
                seen.insert(seed),
                "seed {seed} appears twice in --seeds {spec:?}"
            );
            seeds.push(seed);
        }
    }
    Ok(seeds)
}

/// A parsed `--seeds` value, usable directly as a clap argument type.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Seeds(pub Vec<u64>);

impl FromStr for Seeds {
    type Err = anyhow::Error;
    fn from_str(spec: &str) -> Result<Self> {
        parse_seeds(spec).map(Seeds)
    }
}

impl std::ops::Deref for Seeds {
    type Target = [u64];
    fn deref(&self) -> &[u64] {
        &self.0
    }
}

/// One of `count` slices of a sweep, parsed from `--shard i/n` with `0 ≤ i < n`.
///
/// Items are dealt round-robin: shard `i` takes items `i, i+n, i+2n, …`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "ShardFields")]
pub struct Shard {
    index: usize,
    count: usize,
}

#[derive(Deserialize)]
struct ShardFields {
    index: usize,
    count: usize,
}

impl TryFrom<ShardFields> for Shard {
    type Error = anyhow::Error;
    fn try_from(fields: ShardFields) -> Result<Self> {
        Shard::new(fields.index, fields.count)
    }
}

impl Shard {
    /// The whole sweep as a single shard, `0/1`.
    pub const ALL: Shard = Shard { index: 0, count: 1 };

    /// Shard `index` of `count`; requires `count ≥ 1` and `0 ≤ index < count`.
    pub fn new(index: usize, count: usize) -> Result<Self> {
        ensure!(
            count >= 1,
            "shard count n = {count} is out of range: expected n ≥ 1"
        );
        ensure!(
            index < count,
            "shard index i = {index} is out of range for n = {count}: expected 0 ≤ i < {count} \
             (shards are numbered from 0)"
        );
        Ok(Self { index, count })
    }

    /// This shard's index `i`.
    pub fn index(&self) -> usize {
        self.index
    }

    /// The number of shards `n`.
    pub fn count(&self) -> usize {
        self.count
    }

    /// Whether the item at position `position` of the sweep belongs to this shard.
    pub fn contains(&self, position: usize) -> bool {
        position % self.count == self.index
    }

    /// This shard's items, dealt round-robin; pass `&items` to select references.
    pub fn select<T>(&self, items: impl IntoIterator<Item = T>) -> Vec<T> {
        items
            .into_iter()
            .enumerate()
            .filter(|(position, _)| self.contains(*position))
            .map(|(_, item)| item)
            .collect()
    }

    /// File name of this shard's manifest: `shard-<i>-of-<n>.json`.
    pub fn manifest_file_name(&self) -> String {
        format!("shard-{}-of-{}.json", self.index, self.count)
    }

    /// Parses a manifest file name back into its shard.
    fn from_manifest_file_name(name: &str) -> Option<Result<Self>> {
        let rest = name.strip_prefix("shard-")?.strip_suffix(".json")?;
        let (i, n) = rest.split_once("-of-")?;
        Some(Shard::new(i.parse().ok()?, n.parse().ok()?))
    }
}

// Order shards by (count, index) so manifests group by n.
impl PartialOrd for Shard {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Shard {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        (self.count, self.index).cmp(&(other.count, other.index))
    }
}

impl Default for Shard {
    fn default() -> Self {
        Self::ALL
    }
}

impl Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

impl FromStr for Shard {
    type Err = anyhow::Error;
    fn from_str(text: &str) -> Result<Self> {
        let (i, n) = text
            .split_once('/')
            .with_context(|| format!("invalid --shard {text:?}: expected i/n, e.g. 0/4"))?;
        let parse = |part: &str, what: &str| {
            part.trim().parse::<usize>().with_context(|| {
                format!("invalid --shard {text:?}: {what} {part:?} is not a non-negative integer")
            })
        };
        // One flat message: clap shows only the outermost layer of an error.
        Shard::new(parse(i, "i")?, parse(n, "n")?)
            .map_err(|e| anyhow!("invalid --shard {text:?}: {e}"))
    }
}

/// One unit of a sweep: a unique name (usually the run name) and its input.
#[derive(Clone, Debug)]
pub struct Job<T> {
    /// Unique job name, used in progress bars and failure reports.
    pub name: String,
    /// What the job function receives.
    pub input: T,
}

impl<T> Job<T> {
    /// A job called `name` with `input`.
    pub fn new(name: impl Into<String>, input: T) -> Self {
        Self {
            name: name.into(),
            input,
        }
    }
}

/// Handle passed to each job: its name and a way to add its own progress bars.
pub struct JobProgress {
    name: String,
    multi: MultiProgress,
    overall: ProgressBar,
    bars: Mutex<Vec<ProgressBar>>,
}

impl JobProgress {
    /// The job's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// A bar of `len` steps for this job, shown above the overall bar and removed when the
    /// job returns.
    pub fn bar(&self, len: u64) -> ProgressBar {
        let bar = self
            .multi
            .insert_before(&self.overall, progress_bar(len, self.name.clone()));
        self.bars
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .push(bar.clone());
        bar
    }

    /// Runs `f` (e.g. a `tracing` call) with the bars hidden, so output does not tear them.
    pub fn suspend<R>(&self, f: impl FnOnce() -> R) -> R {
        self.multi.suspend(f)
    }

    fn finish(&self) {
        let bars = std::mem::take(&mut *self.bars.lock().unwrap_or_else(|p| p.into_inner()));
        for bar in bars {
            bar.finish_and_clear();
            self.multi.remove(&bar);
        }
    }
}

/// The result of one job.
#[derive(Debug)]
pub struct JobOutcome<R> {
    /// The job's name.
    pub name: String,
    /// What the job returned; a panic becomes an error.
    pub result: Result<R>,
    /// Wall-clock time the job took.
    pub elapsed: Duration,
}

/// The results of [`run_parallel`], in job order.
#[derive(Debug)]
pub struct Outcomes<R>(pub Vec<JobOutcome<R>>);

impl<R> Outcomes<R> {
    /// The jobs that failed.
    pub fn failures(&self) -> impl Iterator<Item = &JobOutcome<R>> {
        self.0.iter().filter(|o| o.result.is_err())
    }

    /// Names of the jobs that succeeded.
    pub fn succeeded_names(&self) -> Vec<String> {
        self.0
            .iter()
            .filter(|o| o.result.is_ok())
            .map(|o| o.name.clone())
            .collect()
    }

    /// All `(name, value)` pairs, or one error listing every failed job with its cause.
    pub fn into_ok(self) -> Result<Vec<(String, R)>> {
        let total = self.0.len();
        let mut ok = Vec::with_capacity(total);
        let mut failed = Vec::new();
        for outcome in self.0 {
            match outcome.result {
                Ok(value) => ok.push((outcome.name, value)),
                Err(e) => failed.push(format!("  {}: {e:#}", outcome.name)),
            }
        }
        if failed.is_empty() {
            Ok(ok)
        } else {
            bail!(
                "{} of {total} jobs failed:\n{}",
                failed.len(),
                failed.join("\n")
            )
        }
    }
}

/// Runs `jobs` on a pool of `threads` workers (0: one per core), with one overall progress
/// bar; each job gets a [`JobProgress`] for its own bars. A failing or panicking job does not
/// stop the others; failures are logged by name as they happen and returned in order.
pub fn run_parallel<T, R, F>(jobs: Vec<Job<T>>, threads: usize, f: F) -> Result<Outcomes<R>>
where
    T: Send,
    R: Send,
    F: Fn(T, &JobProgress) -> Result<R> + Sync,
{
    let mut names = HashSet::new();
    for job in &jobs {
        ensure!(
            names.insert(job.name.as_str()),
            "two jobs are named {:?}",
            job.name
        );
    }
    let multi = MultiProgress::new();
    let overall = multi.add(progress_bar(jobs.len() as u64, "jobs"));
    let failed = Mutex::new(0usize);
    let started = Instant::now();

    // Plain threads, not a rayon pool: a job's autodiff sections must be opened from a thread
    // that only waits (privrl_agents::autodiff), and each job's numbers depend on its seed
    // alone, whichever thread runs it and whatever runs beside it.
    let threads = if threads == 0 {
        std::thread::available_parallelism().map_or(1, usize::from)
    } else {
        threads
    };
    let count = jobs.len();
    let queue = Mutex::new(jobs.into_iter().enumerate());
    let results = Mutex::new((0..count).map(|_| None).collect::<Vec<_>>());
    let run_job = |job: Job<T>| {
        let progress = JobProgress {
            name: job.name,
            multi: multi.clone(),
            overall: overall.clone(),
            bars: Mutex::new(Vec::new()),
        };
        let start = Instant::now();
        let result = catch_unwind(AssertUnwindSafe(|| f(job.input, &progress)))
            .unwrap_or_else(|payload| Err(anyhow!("panicked: {}", panic_message(&*payload))));
        progress.finish();
        if let Err(e) = &result {
            let mut failed = failed.lock().unwrap_or_else(|p| p.into_inner());
            *failed += 1;
            overall.set_message(format!("{failed} failed"));
            multi.suspend(|| tracing::error!(job = %progress.name, "job failed: {e:#}"));
        }
        let elapsed = start.elapsed();
        if result.is_ok() {
            multi.suspend(|| tracing::debug!(job = %progress.name, "finished in {elapsed:.1?}"));
        }
        overall.inc(1);
        JobOutcome {
            name: progress.name,
            result,
            elapsed,
        }
    };
    std::thread::scope(|scope| {
        for i in 0..threads.min(count) {
            let (queue, results, run_job) = (&queue, &results, &run_job);
            std::thread::Builder::new()
                .name(format!("sweep-{i}"))
                .spawn_scoped(scope, move || loop {
                    let next = queue.lock().unwrap_or_else(|p| p.into_inner()).next();
                    let Some((index, job)) = next else { break };
                    let outcome = run_job(job);
                    results.lock().unwrap_or_else(|p| p.into_inner())[index] = Some(outcome);
                })
                .context("starting a sweep thread")?;
        }
        anyhow::Ok(())
    })?;
    let outcomes: Vec<JobOutcome<R>> = results
        .into_inner()
        .unwrap_or_else(|p| p.into_inner())
        .into_iter()
        .map(|o| o.expect("every job ran"))
        .collect();
    overall.finish_and_clear();
    let failed = failed.into_inner().unwrap_or_else(|p| p.into_inner());
    tracing::info!(
        "{} of {} jobs succeeded in {:.1?}",
        outcomes.len() - failed,
        outcomes.len(),
        started.elapsed()
    );
    Ok(Outcomes(outcomes))
}

fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(text) = payload.downcast_ref::<&str>() {
        (*text).to_owned()
    } else if let Some(text) = payload.downcast_ref::<String>() {
        text.clone()
    } else {
        "(non-string panic payload)".to_owned()
    }
}

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
    /// The manifest for a finished [`run_parallel`] whose job names are run names.
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

    let by_index: BTreeMap<usize, &ShardManifest> = manifests
        .iter()
        .map(|(shard, m)| (shard.index(), m))
        .collect();
    let missing_shards: Vec<usize> = (0..shard_count)
        .filter(|i| !by_index.contains_key(i))
        .collect();

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
        for (&index, manifest) in &by_index {
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
    use clap::Parser;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn parses_seed_specs() {
        assert_eq!(parse_seeds("0..5").unwrap(), [0, 1, 2, 3, 4]);
        assert_eq!(parse_seeds("3").unwrap(), [3]);
        assert_eq!(parse_seeds("0,2,7").unwrap(), [0, 2, 7]);
        assert_eq!(parse_seeds("1..=3, 10").unwrap(), [1, 2, 3, 10]);
        for bad in [
            "", "5..5", "5..2", "a", "0..x", "1,,2", "1,1", "0..3,2", "-1",
        ] {
            assert!(parse_seeds(bad).is_err(), "{bad:?} should be rejected");
        }
        let err = parse_seeds("5..5").unwrap_err().to_string();
        assert!(err.contains("empty"), "{err}");
        assert!(parse_seeds("0..2000000").is_err());
    }

    #[test]
    fn seeds_and_shard_work_as_clap_arguments() {
        #[derive(Parser)]
        struct Args {
            #[arg(long, default_value = "0..3")]
            seeds: Seeds,
            #[arg(long, default_value = "0/1")]
            shard: Shard,
        }
        let args = Args::try_parse_from(["x", "--seeds", "0,4", "--shard", "1/2"]).unwrap();
        assert_eq!(*args.seeds, [0, 4]);
        assert_eq!(args.shard, Shard::new(1, 2).unwrap());
        let args = Args::try_parse_from(["x"]).unwrap();
        assert_eq!(args.seeds.0, [0, 1, 2]);
        assert_eq!(args.shard, Shard::ALL);
        let err = Args::try_parse_from(["x", "--shard", "4/4"])
            .err()
            .unwrap()
            .to_string();
        assert!(err.contains("0 ≤ i < 4"), "{err}");
    }

    #[test]
    fn parses_and_validates_shards() {
        assert_eq!("2/4".parse::<Shard>().unwrap(), Shard::new(2, 4).unwrap());
        assert_eq!("2/4".parse::<Shard>().unwrap().to_string(), "2/4");
        for bad in ["4/4", "0/0", "-1/3", "1", "a/2", "1/b", "5/3"] {
            let err = bad.parse::<Shard>().unwrap_err();
            assert!(format!("{err:#}").contains(bad), "{bad}: {err:#}");
        }
        // Manifest names round-trip.
        let shard = Shard::new(3, 8).unwrap();
        let name = shard.manifest_file_name();
        assert_eq!(name, "shard-3-of-8.json");
        assert_eq!(
            Shard::from_manifest_file_name(&name).unwrap().unwrap(),
            shard
        );
        assert!(Shard::from_manifest_file_name("merged.json").is_none());
        // Deserialisation validates too.
        assert!(serde_json::from_str::<Shard>(r#"{"index":2,"count":2}"#).is_err());
    }

    #[test]
    fn shards_partition_items_round_robin() {
        let items: Vec<u32> = (0..10).collect();
        let parts: Vec<Vec<u32>> = (0..3)
            .map(|i| Shard::new(i, 3).unwrap().select(items.iter().copied()))
            .collect();
        assert_eq!(parts, [vec![0, 3, 6, 9], vec![1, 4, 7], vec![2, 5, 8]]);
        assert_eq!(Shard::ALL.select(&items).len(), 10);
    }

    #[test]
    fn run_parallel_collects_results_and_names_failures() {
        let jobs: Vec<Job<u64>> = (0..8).map(|i| Job::new(format!("job{i}"), i)).collect();
        let calls = AtomicUsize::new(0);
        let outcomes = run_parallel(jobs, 3, |i, progress| {
            calls.fetch_add(1, Ordering::Relaxed);
            let bar = progress.bar(4);
            bar.inc(4);
            match i {
                3 => bail!("diverged at step {i}"),
                5 => panic!("boom {i}"),
                _ => Ok(i * 10),
            }
        })
        .unwrap();
        assert_eq!(calls.load(Ordering::Relaxed), 8);
        let names: Vec<&str> = outcomes.0.iter().map(|o| o.name.as_str()).collect();
        assert_eq!(
            names,
            ["job0", "job1", "job2", "job3", "job4", "job5", "job6", "job7"]
        );
        let failed: Vec<&str> = outcomes.failures().map(|o| o.name.as_str()).collect();
        assert_eq!(failed, ["job3", "job5"]);
        assert_eq!(outcomes.succeeded_names().len(), 6);
        let err = outcomes.into_ok().unwrap_err().to_string();
        assert!(err.contains("2 of 8 jobs failed"), "{err}");
        assert!(err.contains("job3: diverged at step 3"), "{err}");
        assert!(err.contains("job5: panicked: boom 5"), "{err}");

        let ok = run_parallel(
            vec![Job::new("a", 1), Job::new("b", 2)],
            0,
            |x, _| Ok(x + 1),
        )
        .unwrap()
        .into_ok()
        .unwrap();
        assert_eq!(ok, [("a".to_owned(), 2), ("b".to_owned(), 3)]);
        assert!(run_parallel(vec![Job::new("a", 1), Job::new("a", 2)], 1, |x, _| Ok(x)).is_err());
    }

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

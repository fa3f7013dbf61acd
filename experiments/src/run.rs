//! Run directories: `runs/<suite>/<run-name>/` with `config.json`, `metrics.csv` and
//! `summary.json` (`docs/architecture.md`, "Runs, results and reports").
//!
//! A run writes `config.json` first, streams `metrics.csv` one flushed row at a time (so a
//! killed run keeps the rows it logged), and writes `summary.json` last: a run with a summary
//! is complete.

use anyhow::{bail, ensure, Context, Result};
use serde::de::{DeserializeOwned, MapAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize};
use std::fmt::{self, Display};
use std::fs::{self, File};
use std::path::{Path, PathBuf};

/// Environment variable that overrides the root of all run directories (default `runs`).
pub const RUNS_DIR_ENV: &str = "PRIVRL_RUNS_DIR";

/// Run parameters, one JSON object with every default filled in.
pub const CONFIG_FILE: &str = "config.json";
/// One row per epoch or step.
pub const METRICS_FILE: &str = "metrics.csv";
/// Final results; its presence marks a run as complete.
pub const SUMMARY_FILE: &str = "summary.json";
/// The checkpoint of a run in progress (agent files and `progress.json`), removed when the run
/// completes; never committed (`results/.gitignore`).
pub const PARTIAL_DIR: &str = "partial";
/// Where a run's progress is recorded inside its partial checkpoint.
const PROGRESS_FILE: &str = "progress.json";

/// Root of all run directories: `$PRIVRL_RUNS_DIR` if set and non-empty, else `runs`.
pub fn runs_root() -> PathBuf {
    root_from(std::env::var_os(RUNS_DIR_ENV))
}

fn root_from(var: Option<std::ffi::OsString>) -> PathBuf {
    match var {
        Some(dir) if !dir.is_empty() => PathBuf::from(dir),
        _ => PathBuf::from("runs"),
    }
}

/// Directory of one suite under [`runs_root`], `<root>/<suite>`, created if missing.
pub fn suite_dir(suite: &str) -> Result<PathBuf> {
    check_component("suite", suite)?;
    let dir = runs_root().join(suite);
    fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    Ok(dir)
}

/// A deterministic run name built from its parameters, e.g. `ppo-cartpole-v1-eps0.5-seed3`.
///
/// Parts are joined with `-`, lower-cased, and every character outside `[a-z0-9._]` becomes `-`,
/// so the name is a safe directory name on every platform.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RunName(String);

impl RunName {
    /// Starts a name, usually with the algorithm: `RunName::new("ppo")`.
    pub fn new(base: impl Display) -> Self {
        Self(sanitize(&base.to_string()))
    }

    /// Appends a free-form part, e.g. the environment id.
    pub fn part(mut self, part: impl Display) -> Self {
        self.push(&part.to_string());
        self
    }

    /// Appends `<key><value>`, e.g. `.param("eps", 0.5)` gives `eps0.5`.
    pub fn param(mut self, key: &str, value: impl Display) -> Self {
        self.push(&format!("{key}{value}"));
        self
    }

    /// Appends `seed<seed>`.
    pub fn seed(self, seed: u64) -> Self {
        self.param("seed", seed)
    }

    /// The name as a string slice.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    fn push(&mut self, part: &str) {
        let part = sanitize(part);
        if part.is_empty() {
            return;
        }
        if !self.0.is_empty() {
            self.0.push('-');
        }
        self.0.push_str(&part);
    }
}

impl Display for RunName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<RunName> for String {
    fn from(name: RunName) -> Self {
        name.0
    }
}

impl AsRef<str> for RunName {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

fn sanitize(text: &str) -> String {
    let mapped: String = text
        .chars()
        .map(|c| {
            let c = c.to_ascii_lowercase();
            if c.is_ascii_alphanumeric() || c == '.' || c == '_' {
                c
            } else {
                '-'
            }
        })
        .collect();
    // Collapse runs of '-' and trim them at the ends.
    let mut out = String::with_capacity(mapped.len());
    for c in mapped.chars() {
        if c == '-' && (out.is_empty() || out.ends_with('-')) {
            continue;
        }
        out.push(c);
    }
    while out.ends_with('-') {
        out.pop();
    }
    out
}

/// Rejects names that would escape or alias a directory (`..`, `a/b`, empty).
fn check_component(what: &str, name: &str) -> Result<()> {
    ensure!(
        !name.is_empty()
            && name != "."
            && name != ".."
            && !name.contains(['/', '\\'])
            && !name.chars().any(char::is_control),
        "invalid {what} name {name:?}: expected a non-empty single path component"
    );
    Ok(())
}

/// One run's directory, `<root>/<suite>/<run-name>/`, created on construction.
#[derive(Clone, Debug)]
pub struct RunDir {
    suite: String,
    name: String,
    path: PathBuf,
}

impl RunDir {
    /// Creates (or reuses) `<runs_root()>/<suite>/<name>/`.
    pub fn create(suite: &str, name: impl AsRef<str>) -> Result<Self> {
        Self::create_in(&runs_root(), suite, name)
    }

    /// Creates (or reuses) `<root>/<suite>/<name>/`.
    pub fn create_in(root: &Path, suite: &str, name: impl AsRef<str>) -> Result<Self> {
        let name = name.as_ref();
        check_component("suite", suite)?;
        check_component("run", name)?;
        let path = root.join(suite).join(name);
        fs::create_dir_all(&path)
            .with_context(|| format!("creating run directory {}", path.display()))?;
        Ok(Self {
            suite: suite.to_owned(),
            name: name.to_owned(),
            path,
        })
    }

    /// The suite this run belongs to.
    pub fn suite(&self) -> &str {
        &self.suite
    }

    /// The run name (last path component).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The run directory.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Path of a file inside the run directory, e.g. a plot stem.
    pub fn file(&self, name: &str) -> PathBuf {
        self.path.join(name)
    }

    /// Writes `config.json` (pretty JSON).
    pub fn write_config(&self, config: &impl Serialize) -> Result<()> {
        write_json(&self.file(CONFIG_FILE), config)
    }

    /// Starts a fresh `metrics.csv`, truncating any earlier one.
    pub fn metrics(&self) -> Result<MetricsWriter> {
        MetricsWriter::create(self.file(METRICS_FILE))
    }

    /// Writes `summary.json` (pretty JSON), which marks the run complete.
    pub fn write_summary(&self, summary: &impl Serialize) -> Result<()> {
        write_json(&self.file(SUMMARY_FILE), summary)
    }

    /// Whether `summary.json` exists, i.e. the run finished and can be skipped on a rerun.
    pub fn is_complete(&self) -> bool {
        self.file(SUMMARY_FILE).is_file()
    }

    /// Whether the run is complete and ran `config`: its [`CONFIG_FILE`] equals `config` as
    /// serialised now. Such a run is read back instead of run again, so an interrupted suite
    /// resumes; a run of another configuration (or whose configuration cannot be read) is run
    /// again. Both sides are compared as JSON parsed from text, so float parsing cannot make
    /// the same configuration differ from itself.
    pub fn completed_with(&self, config: &impl Serialize) -> Result<bool> {
        self.completed_with_recorded(config, |recorded| recorded)
    }

    /// [`Self::completed_with`], comparing `config` with `recorded(` the configuration on disk
    /// `)`: to drop a key that older runs recorded but that does not change how a run trains.
    pub fn completed_with_recorded(
        &self,
        config: &impl Serialize,
        recorded: impl FnOnce(serde_json::Value) -> serde_json::Value,
    ) -> Result<bool> {
        if !self.is_complete() {
            return Ok(false);
        }
        let now: serde_json::Value = serde_json::from_str(&serde_json::to_string(config)?)?;
        Ok(read_json::<serde_json::Value>(&self.file(CONFIG_FILE))
            .ok()
            .map(recorded)
            == Some(now))
    }

    /// Reads back `metrics.csv`.
    pub fn read_metrics(&self) -> Result<Table> {
        read_metrics(&self.file(METRICS_FILE))
    }

    /// Checkpoints a run in progress: `save` writes the agent into a fresh directory, then
    /// `progress` (what the run needs to continue, e.g. its epoch and curve) is written beside
    /// it, and the directory replaces `partial/` by a rename. A run killed at any instant
    /// leaves either the previous checkpoint or this one, never a mixture.
    pub fn save_partial(
        &self,
        progress: &impl Serialize,
        save: impl FnOnce(&Path) -> Result<()>,
    ) -> Result<()> {
        let next = self.file(&format!("{PARTIAL_DIR}.next"));
        if next.exists() {
            fs::remove_dir_all(&next).with_context(|| format!("removing {}", next.display()))?;
        }
        fs::create_dir_all(&next).with_context(|| format!("creating {}", next.display()))?;
        save(&next)?;
        write_json(&next.join(PROGRESS_FILE), progress)?;
        let partial = self.file(PARTIAL_DIR);
        if partial.exists() {
            fs::remove_dir_all(&partial)
                .with_context(|| format!("removing {}", partial.display()))?;
        }
        fs::rename(&next, &partial).with_context(|| format!("writing {}", partial.display()))
    }

    /// The last checkpoint of a run in progress: its directory and progress, or `None` if the
    /// run has none (including a `partial.next/` that was being written when the run died,
    /// unless it holds its progress file, which is written last).
    pub fn load_partial<P: DeserializeOwned>(&self) -> Result<Option<(PathBuf, P)>> {
        for name in [PARTIAL_DIR.to_string(), format!("{PARTIAL_DIR}.next")] {
            let dir = self.file(&name);
            let progress = dir.join(PROGRESS_FILE);
            if progress.is_file() {
                return Ok(Some((dir, read_json(&progress)?)));
            }
        }
        Ok(None)
    }

    /// Removes the checkpoint of a finished run (results keep no checkpoints).
    pub fn clear_partial(&self) -> Result<()> {
        for name in [PARTIAL_DIR.to_string(), format!("{PARTIAL_DIR}.next")] {
            let dir = self.file(&name);
            if dir.exists() {
                fs::remove_dir_all(&dir).with_context(|| format!("removing {}", dir.display()))?;
            }
        }
        Ok(())
    }

    /// Continues `metrics.csv` after its first `rows` data rows, dropping any later ones (rows
    /// a killed run logged after its last checkpoint).
    pub fn resume_metrics(&self, rows: usize) -> Result<MetricsWriter> {
        MetricsWriter::resume(self.file(METRICS_FILE), rows)
    }
}

/// Writes `value` as pretty JSON ([`json_text`]), through [`write_atomic`].
pub fn write_json(path: &Path, value: &impl Serialize) -> Result<()> {
    let text = json_text(value).with_context(|| format!("serialising {}", path.display()))?;
    write_atomic(path, &text)
}

/// `value` as pretty JSON ending in a newline: the text of every JSON file a run writes.
pub fn json_text(value: &impl Serialize) -> Result<String> {
    let mut text = serde_json::to_string_pretty(value)?;
    text.push('\n');
    Ok(text)
}

/// The commit of the checkout a run starts in (`git rev-parse HEAD` in the current directory),
/// with `+dirty` when tracked files outside `results/` differ from it; `None` outside a git
/// checkout or without git. Units record it, so that a reader can check that a criterion was
/// committed before the runs it judges.
pub fn source_commit() -> Option<String> {
    static COMMIT: std::sync::OnceLock<Option<String>> = std::sync::OnceLock::new();
    COMMIT
        .get_or_init(|| {
            let git = |args: &[&str]| {
                std::process::Command::new("git")
                    .args(args)
                    .output()
                    .ok()
                    .filter(|o| o.status.success())
                    .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
            };
            let head = git(&["rev-parse", "HEAD"])?;
            let dirty = git(&[
                "status",
                "--porcelain",
                "--untracked-files=no",
                "--",
                ".",
                ":!results",
            ])
            .is_some_and(|changes| !changes.is_empty());
            Some(if dirty { format!("{head}+dirty") } else { head })
        })
        .clone()
}

/// Writes `text` to `path` through a temporary file beside it (`<path>.tmp`) and a rename, so
/// that readers never see a half-written file: `path` is either absent, the old file or whole.
pub fn write_atomic(path: &Path, text: &str) -> Result<()> {
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    let tmp = PathBuf::from(tmp);
    fs::write(&tmp, text).with_context(|| format!("writing {}", tmp.display()))?;
    fs::rename(&tmp, path).with_context(|| format!("writing {}", path.display()))?;
    Ok(())
}

/// Reads a JSON file into `T`.
pub fn read_json<T: DeserializeOwned>(path: &Path) -> Result<T> {
    let text = fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    serde_json::from_str(&text).with_context(|| format!("parsing {}", path.display()))
}

/// Column names are checked and numbers never need quotes, so `Never` writes exactly the
/// fields joined by `,`, one `\n`-terminated line per row.
fn csv_writer(file: File) -> csv::Writer<File> {
    csv::WriterBuilder::new()
        .quote_style(csv::QuoteStyle::Never)
        .terminator(csv::Terminator::Any(b'\n'))
        .from_writer(file)
}

/// Streams `metrics.csv`: the header is fixed by the first row, every later row must have the
/// same columns in the same order, and each row is flushed to the file as soon as it is written.
///
/// Column names may not contain `,`, `"` or line breaks; nothing is quoted.
#[derive(Debug)]
pub struct MetricsWriter {
    path: PathBuf,
    csv: csv::Writer<File>,
    header: Option<Vec<String>>,
    rows: usize,
}

impl MetricsWriter {
    /// Creates (truncates) the CSV file at `path`.
    pub fn create(path: impl Into<PathBuf>) -> Result<Self> {
        let path = path.into();
        let file = File::create(&path).with_context(|| format!("creating {}", path.display()))?;
        Ok(Self {
            path,
            csv: csv_writer(file),
            header: None,
            rows: 0,
        })
    }

    /// Reopens the CSV file at `path` after its header and first `rows` data rows, which are
    /// kept byte for byte; later rows are dropped. Fails if the file has fewer rows.
    pub fn resume(path: impl Into<PathBuf>, rows: usize) -> Result<Self> {
        let path = path.into();
        let text =
            fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
        let mut lines = text.split_inclusive('\n');
        let mut kept = String::new();
        let mut header = None;
        if rows > 0 {
            let line = lines.next().unwrap_or_default();
            ensure!(
                line.ends_with('\n'),
                "{}: no header row to resume after",
                path.display()
            );
            header = Some(line.trim_end().split(',').map(str::to_owned).collect());
            kept.push_str(line);
        }
        for i in 0..rows {
            match lines.next() {
                Some(line) if line.ends_with('\n') => kept.push_str(line),
                _ => bail!(
                    "{}: has {i} complete rows, the checkpoint needs {rows}",
                    path.display()
                ),
            }
        }
        fs::write(&path, &kept).with_context(|| format!("writing {}", path.display()))?;
        let file = fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .with_context(|| format!("opening {}", path.display()))?;
        Ok(Self {
            path,
            csv: csv_writer(file),
            header,
            rows,
        })
    }

    /// Path of the CSV file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Number of data rows written so far.
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Appends a row of `(column, value)` pairs; the first row fixes the header.
    pub fn write_row(&mut self, row: &[(&str, f64)]) -> Result<()> {
        match &self.header {
            None => {
                ensure!(
                    !row.is_empty(),
                    "{}: the first row has no columns",
                    self.path.display()
                );
                for (i, (name, _)) in row.iter().enumerate() {
                    check_column_name(name)
                        .with_context(|| format!("{}: bad column name", self.path.display()))?;
                    if row[..i].iter().any(|(other, _)| other == name) {
                        bail!("{}: duplicate column {name:?}", self.path.display());
                    }
                }
                let header: Vec<String> = row.iter().map(|(name, _)| (*name).to_owned()).collect();
                // Buffered with the first row: both reach the file in the flush below.
                self.csv
                    .write_record(&header)
                    .with_context(|| format!("writing {}", self.path.display()))?;
                self.header = Some(header);
            }
            Some(header) => {
                let same = header.len() == row.len()
                    && header.iter().zip(row).all(|(h, (name, _))| h == name);
                if !same {
                    let got: Vec<&str> = row.iter().map(|(name, _)| *name).collect();
                    bail!(
                        "{}: row {} has columns [{}], expected the header [{}]",
                        self.path.display(),
                        self.rows + 1,
                        got.join(","),
                        header.join(",")
                    );
                }
            }
        }
        self.csv
            .write_record(row.iter().map(|(_, value)| format_number(*value)))
            .with_context(|| format!("writing {}", self.path.display()))?;
        self.csv
            .flush()
            .with_context(|| format!("writing {}", self.path.display()))?;
        self.rows += 1;
        Ok(())
    }

    /// Appends a row from a flat serde struct or map; fields become columns in declaration
    /// order. Numbers are written as `f64`, booleans as 0/1 and `null` as `NaN`.
    pub fn write_record(&mut self, record: &impl Serialize) -> Result<()> {
        let json = serde_json::to_string(record).context("serialising a metrics row")?;
        let OrderedRow(fields) = serde_json::from_str(&json).with_context(|| {
            format!(
                "{}: a metrics row must be a flat struct of numbers",
                self.path.display()
            )
        })?;
        let row: Vec<(&str, f64)> = fields.iter().map(|(k, v)| (k.as_str(), *v)).collect();
        self.write_row(&row)
    }
}

fn check_column_name(name: &str) -> Result<()> {
    ensure!(
        !name.is_empty() && !name.contains([',', '"', '\n', '\r']),
        "column name {name:?} must be non-empty and contain no comma, quote or line break"
    );
    Ok(())
}

/// Shortest text that reads back to the same `f64`; plain notation for ordinary magnitudes,
/// exponent notation for very large or small ones.
fn format_number(value: f64) -> String {
    let magnitude = value.abs();
    let plain = value == 0.0 || (1e-5..1e16).contains(&magnitude);
    if !value.is_finite() || !plain {
        format!("{value:?}")
    } else {
        format!("{value}")
    }
}

/// A flat JSON object read with its key order kept (serde_json's `Value` would sort keys).
struct OrderedRow(Vec<(String, f64)>);

impl<'de> Deserialize<'de> for OrderedRow {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct RowVisitor;
        impl<'de> Visitor<'de> for RowVisitor {
            type Value = OrderedRow;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a flat object of numbers")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<OrderedRow, A::Error> {
                let mut fields = Vec::new();
                while let Some((key, value)) = map.next_entry::<String, serde_json::Value>()? {
                    let number = match &value {
                        serde_json::Value::Number(n) => n.as_f64().unwrap_or(f64::NAN),
                        serde_json::Value::Bool(b) => f64::from(u8::from(*b)),
                        serde_json::Value::Null => f64::NAN,
                        other => {
                            return Err(serde::de::Error::custom(format!(
                                "field {key:?} is {other}, expected a number"
                            )))
                        }
                    };
                    fields.push((key, number));
                }
                Ok(OrderedRow(fields))
            }
        }
        deserializer.deserialize_map(RowVisitor)
    }
}

/// A numeric table read from a `metrics.csv`: named columns, rows of `f64`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Table {
    /// Column names, in file order.
    pub columns: Vec<String>,
    /// Rows, each with one value per column.
    pub rows: Vec<Vec<f64>>,
}

impl Table {
    /// Number of rows.
    pub fn len(&self) -> usize {
        self.rows.len()
    }

    /// Whether the table has no rows.
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// Index of a column by name.
    pub fn column_index(&self, name: &str) -> Option<usize> {
        self.columns.iter().position(|c| c == name)
    }

    /// All values of one column, or an error naming the columns that exist.
    pub fn column(&self, name: &str) -> Result<Vec<f64>> {
        let i = self.index_or_err(name)?;
        Ok(self.rows.iter().map(|row| row[i]).collect())
    }

    /// `(x, y)` pairs from two columns, e.g. `table.xy("step", "return")` for a curve.
    pub fn xy(&self, x: &str, y: &str) -> Result<Vec<(f64, f64)>> {
        let (ix, iy) = (self.index_or_err(x)?, self.index_or_err(y)?);
        Ok(self.rows.iter().map(|row| (row[ix], row[iy])).collect())
    }

    /// The last row's value in one column, if there is a row.
    pub fn last(&self, name: &str) -> Result<Option<f64>> {
        let i = self.index_or_err(name)?;
        Ok(self.rows.last().map(|row| row[i]))
    }

    fn index_or_err(&self, name: &str) -> Result<usize> {
        self.column_index(name).with_context(|| {
            format!(
                "no column {name:?} in metrics (columns: {})",
                self.columns.join(", ")
            )
        })
    }
}

/// Reads a `metrics.csv` written by [`MetricsWriter`].
///
/// A last line without its line break that does not parse (a run killed mid-write) is
/// dropped with a warning; any other malformed line is an error naming the line.
pub fn read_metrics(path: &Path) -> Result<Table> {
    let text = fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let complete = text.ends_with('\n');
    let mut reader = csv::ReaderBuilder::new()
        // A row with the wrong number of fields is reported below, with the expected columns.
        .flexible(true)
        // Only `\n` ends a row, so that the reader's line numbers count `\n`s; a `\r` before
        // it is trimmed off with the last field.
        .terminator(csv::Terminator::Any(b'\n'))
        .from_reader(text.as_bytes());
    let columns: Vec<String> = reader
        .headers()
        .with_context(|| format!("reading {}", path.display()))?
        .iter()
        .map(|c| c.trim().to_owned())
        .collect();
    let records = reader
        .into_records()
        .collect::<Result<Vec<_>, _>>()
        .with_context(|| format!("reading {}", path.display()))?;
    let mut rows = Vec::with_capacity(records.len());
    for (i, record) in records.iter().enumerate() {
        if record.len() <= 1 && record.iter().all(|field| field.trim().is_empty()) {
            continue;
        }
        let is_last = i + 1 == records.len();
        let parsed: Result<Vec<f64>> = record
            .iter()
            .map(|field| {
                field
                    .trim()
                    .parse::<f64>()
                    .with_context(|| format!("{field:?} is not a number"))
            })
            .collect();
        let row = match parsed {
            Ok(row) if row.len() == columns.len() => Ok(row),
            Ok(row) => Err(anyhow::anyhow!(
                "{} fields, expected {} ({})",
                row.len(),
                columns.len(),
                columns.join(",")
            )),
            Err(e) => Err(e),
        };
        let line = record_line(&text, record);
        match row {
            Ok(row) => rows.push(row),
            Err(e) if is_last && !complete => {
                tracing::warn!(
                    "{}: dropping truncated last line {line}: {e:#}",
                    path.display()
                );
            }
            Err(e) => return Err(e.context(format!("{} line {line}", path.display()))),
        }
    }
    Ok(Table { columns, rows })
}

/// The 1-based line on which `record` starts. The reader's position is where it started
/// looking for the record, before the empty lines that it skips.
fn record_line(text: &str, record: &csv::StringRecord) -> u64 {
    let Some(position) = record.position() else {
        return 0;
    };
    let start = usize::try_from(position.byte()).map_or(text.len(), |b| b.min(text.len()));
    let empty_lines = text.as_bytes()[start..]
        .iter()
        .take_while(|&&b| b == b'\n')
        .count();
    position.line() + empty_lines as u64
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use serde::Serialize;

    /// A fresh, empty directory under the system temp dir for one test; removed when the
    /// test passes, kept when it fails or when `PRIVRL_KEEP_TEST_OUTPUT` is set.
    pub(crate) struct TestDir(PathBuf);

    impl std::ops::Deref for TestDir {
        type Target = Path;
        fn deref(&self) -> &Path {
            &self.0
        }
    }

    impl Drop for TestDir {
        fn drop(&mut self) {
            if !std::thread::panicking() && std::env::var_os("PRIVRL_KEEP_TEST_OUTPUT").is_none() {
                let _ = fs::remove_dir_all(&self.0);
            }
        }
    }

    /// Asserts that `run` has the files every run directory must have (`docs/architecture.md`) and a
    /// learning-curve plot.
    pub(crate) fn assert_complete_run(run: &Path) {
        assert_run_files(run, &["curve.png", "curve.svg"]);
    }

    /// Asserts that `run` has the files every run directory must have and `extra`.
    pub(crate) fn assert_run_files(run: &Path, extra: &[&str]) {
        for file in [CONFIG_FILE, METRICS_FILE, SUMMARY_FILE]
            .iter()
            .chain(extra)
        {
            assert!(
                run.join(file).is_file(),
                "{file} missing in {}",
                run.display()
            );
        }
    }

    pub(crate) fn temp_dir(test: &str) -> TestDir {
        let dir = std::env::temp_dir().join(format!("privrl-xtask-{}-{test}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        TestDir(dir)
    }

    #[test]
    fn run_names_are_deterministic_and_safe() {
        let name = RunName::new("PPO")
            .part("CartPole-v1")
            .param("eps", 0.5)
            .seed(3);
        assert_eq!(name.as_str(), "ppo-cartpole-v1-eps0.5-seed3");
        assert_eq!(
            RunName::new("a b/c").part("").part("--x--").to_string(),
            "a-b-c-x"
        );
    }

    #[test]
    fn runs_root_honours_the_env_override() {
        assert_eq!(root_from(None), PathBuf::from("runs"));
        assert_eq!(root_from(Some("".into())), PathBuf::from("runs"));
        assert_eq!(
            root_from(Some("/scratch/r".into())),
            PathBuf::from("/scratch/r")
        );
    }

    #[test]
    fn run_dir_writes_config_metrics_and_summary() {
        let root = temp_dir("run-dir");
        let run = RunDir::create_in(&root, "suite", RunName::new("ppo").seed(1)).unwrap();
        assert_eq!(run.path(), root.join("suite").join("ppo-seed1"));

        #[derive(Serialize)]
        struct Config {
            epsilon: f64,
            env: &'static str,
        }
        run.write_config(&Config {
            epsilon: 0.5,
            env: "cartpole",
        })
        .unwrap();
        let config: serde_json::Value = read_json(&run.file(CONFIG_FILE)).unwrap();
        assert_eq!(config["epsilon"], 0.5);
        assert!(fs::read_to_string(run.file(CONFIG_FILE))
            .unwrap()
            .contains("\n  \"env\""));

        assert!(!run.is_complete());
        run.write_summary(&serde_json::json!({ "final_return": 200.0 }))
            .unwrap();
        assert!(run.is_complete());
        assert!(!run.file("summary.json.tmp").exists());
    }

    /// A resumed `metrics.csv` keeps its first rows byte for byte, drops the rows logged after
    /// the checkpoint, and continues with the same header check; a checkpoint that needs more
    /// rows than the file has is refused.
    #[test]
    fn metrics_resume_after_a_checkpoint_and_drop_later_rows() {
        let root = temp_dir("metrics-resume");
        let run = RunDir::create_in(&root, "s", "r").unwrap();
        let mut metrics = run.metrics().unwrap();
        for epoch in 1..=4 {
            metrics
                .write_row(&[("epoch", epoch as f64), ("return", 0.5 * epoch as f64)])
                .unwrap();
        }
        drop(metrics);
        let mut resumed = run.resume_metrics(2).unwrap();
        assert_eq!(resumed.rows(), 2);
        resumed
            .write_row(&[("epoch", 3.0), ("return", 9.0)])
            .unwrap();
        assert!(resumed
            .write_row(&[("step", 4.0), ("return", 9.0)])
            .is_err());
        assert_eq!(
            fs::read_to_string(run.file(METRICS_FILE)).unwrap(),
            "epoch,return\n1,0.5\n2,1\n3,9\n"
        );
        assert!(run.resume_metrics(9).is_err());
        assert_eq!(run.resume_metrics(0).unwrap().rows(), 0);
    }

    /// The partial checkpoint: saving replaces it whole, a half-written `partial.next/` without
    /// its progress file is ignored, one with it is used, and clearing removes both.
    #[test]
    fn partial_checkpoints_replace_each_other_and_survive_a_kill_between_renames() {
        let root = temp_dir("partial");
        let run = RunDir::create_in(&root, "s", "r").unwrap();
        assert!(run.load_partial::<u32>().unwrap().is_none());
        let save = |epoch: u32| {
            run.save_partial(&epoch, |dir| {
                fs::write(dir.join("agent.bin"), epoch.to_le_bytes())?;
                Ok(())
            })
            .unwrap()
        };
        save(1);
        save(2);
        let (dir, epoch) = run.load_partial::<u32>().unwrap().unwrap();
        assert_eq!((dir.clone(), epoch), (run.file(PARTIAL_DIR), 2));
        assert_eq!(fs::read(dir.join("agent.bin")).unwrap(), 2u32.to_le_bytes());
        // Killed while writing the next one: the last complete checkpoint stands.
        fs::create_dir_all(run.file("partial.next")).unwrap();
        assert_eq!(run.load_partial::<u32>().unwrap().unwrap().1, 2);
        // Killed between removing `partial/` and the rename: the finished next one is used.
        write_json(&run.file("partial.next").join(PROGRESS_FILE), &3u32).unwrap();
        fs::remove_dir_all(run.file(PARTIAL_DIR)).unwrap();
        assert_eq!(run.load_partial::<u32>().unwrap().unwrap().1, 3);
        run.clear_partial().unwrap();
        assert!(run.load_partial::<u32>().unwrap().is_none());
        assert!(!run.file("partial.next").exists());
    }

    #[test]
    fn rejects_path_escapes() {
        let root = temp_dir("escape");
        assert!(RunDir::create_in(&root, "..", "x").is_err());
        assert!(RunDir::create_in(&root, "s", "a/b").is_err());
        assert!(RunDir::create_in(&root, "s", "").is_err());
    }

    #[test]
    fn metrics_round_trip_with_rows_and_records() {
        let root = temp_dir("metrics");
        let run = RunDir::create_in(&root, "s", "r").unwrap();
        let mut metrics = run.metrics().unwrap();
        metrics
            .write_row(&[("step", 0.0), ("return", -1.5)])
            .unwrap();

        // Field order is declaration order, not alphabetical.
        #[derive(Serialize)]
        struct Row {
            step: u64,
            r#return: f64,
        }
        metrics
            .write_record(&Row {
                step: 2048,
                r#return: 0.1,
            })
            .unwrap();
        metrics
            .write_row(&[("step", 4096.0), ("return", 1e-9)])
            .unwrap();
        metrics
            .write_row(&[("step", 8192.0), ("return", f64::NAN)])
            .unwrap();
        assert_eq!(metrics.rows(), 4);

        // Every row is on disk before the writer is dropped (a killed run keeps its rows).
        let text = fs::read_to_string(run.file(METRICS_FILE)).unwrap();
        assert_eq!(text, "step,return\n0,-1.5\n2048,0.1\n4096,1e-9\n8192,NaN\n");

        let table = run.read_metrics().unwrap();
        assert_eq!(table.columns, ["step", "return"]);
        assert_eq!(table.len(), 4);
        assert_eq!(table.column("step").unwrap(), [0.0, 2048.0, 4096.0, 8192.0]);
        assert_eq!(table.xy("step", "return").unwrap()[2], (4096.0, 1e-9));
        assert!(table.last("return").unwrap().unwrap().is_nan());
        let err = table.column("loss").unwrap_err().to_string();
        assert!(
            err.contains("loss") && err.contains("step, return"),
            "{err}"
        );
    }

    #[test]
    fn metrics_header_is_fixed_by_first_row() {
        let root = temp_dir("header");
        let mut metrics = MetricsWriter::create(root.join("m.csv")).unwrap();
        metrics.write_row(&[("a", 1.0), ("b", 2.0)]).unwrap();
        let err = metrics
            .write_row(&[("b", 1.0), ("a", 2.0)])
            .unwrap_err()
            .to_string();
        assert!(err.contains("expected the header [a,b]"), "{err}");
        assert!(metrics.write_row(&[("a", 1.0)]).is_err());
        let mut bad = MetricsWriter::create(root.join("bad.csv")).unwrap();
        assert!(bad.write_row(&[("a,b", 1.0)]).is_err());
        assert!(bad.write_row(&[("a", 1.0), ("a", 2.0)]).is_err());
        assert!(bad
            .write_record(&serde_json::json!({ "name": "text" }))
            .is_err());
    }

    #[test]
    fn read_metrics_drops_only_a_truncated_last_line() {
        let root = temp_dir("truncated");
        let path = root.join("m.csv");
        fs::write(&path, "step,return\n0,1\n1,2\n2,").unwrap();
        let table = read_metrics(&path).unwrap();
        assert_eq!(table.rows, [[0.0, 1.0], [1.0, 2.0]]);

        fs::write(&path, "step,return\n0,1\n1,x\n2,3\n").unwrap();
        let err = format!("{:#}", read_metrics(&path).unwrap_err());
        assert!(err.contains("line 3"), "{err}");

        // A bad last line that has its line break was written whole: an error, not dropped.
        fs::write(&path, "step,return\n0,1\n1,2\n2,\n").unwrap();
        let err = format!("{:#}", read_metrics(&path).unwrap_err());
        assert!(
            err.contains("m.csv line 4") && err.contains("\"\" is not a number"),
            "{err}"
        );
    }

    #[test]
    fn read_metrics_numbers_lines_across_blank_lines_and_crlf() {
        let root = temp_dir("lines");
        let path = root.join("m.csv");
        fs::write(
            &path,
            "step, return\r\n0,1\r\n\r\n\n  \n1,2\r\n2,x\r\n3,4\r\n",
        )
        .unwrap();
        let err = format!("{:#}", read_metrics(&path).unwrap_err());
        assert!(
            err.contains("m.csv line 7") && err.contains("is not a number"),
            "{err}"
        );

        fs::write(&path, "step, return\r\n0,1\r\n\n\n1,2\r\n").unwrap();
        let table = read_metrics(&path).unwrap();
        assert_eq!(table.columns, ["step", "return"]);
        assert_eq!(table.rows, [[0.0, 1.0], [1.0, 2.0]]);

        fs::write(&path, "").unwrap();
        assert_eq!(read_metrics(&path).unwrap(), Table::default());
        let err = format!("{:#}", read_metrics(&root.join("none.csv")).unwrap_err());
        assert!(err.contains("none.csv"), "{err}");
    }
}

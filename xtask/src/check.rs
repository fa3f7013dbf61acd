//! `cargo xtask check determinism`: runs seeded work twice, each time in a fresh process, and
//! compares what the runs wrote, so that a user can verify that their build gives the same
//! bytes from the same seed.
//!
//! Wall-clock fields are the one thing allowed to differ. A field is wall-clock when its name
//! is `wall_s` or ends in `_ms`, `_per_s` or `/s` (`attack_ms`, `env_steps_per_s`, a report's
//! `steps/s`); CSV columns, JSON keys and markdown table columns with such names are dropped
//! before comparing, and every other byte must match.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};
use clap::{Args, Subcommand};

/// Checks of a build.
#[derive(Subcommand, Debug)]
pub enum CheckCommand {
    /// Run seeded training, a seed sweep and a gradient inversion attack twice, each in a
    /// fresh process, and compare the files they wrote (wall-clock fields aside).
    Determinism(DeterminismArgs),
}

/// Sizes of the runs that `check determinism` repeats.
#[derive(Args, Debug, Clone)]
pub struct DeterminismArgs {
    /// Environment steps per training run (PPO and DQN epochs are a quarter of this).
    #[arg(long, default_value_t = 4000)]
    pub steps: u64,
    /// Seed of every run.
    #[arg(long, default_value_t = 7)]
    pub seed: u64,
    /// Image size (pixels) of the inversion attack.
    #[arg(long, default_value_t = 32)]
    pub res: usize,
    /// Iterations per stage of the inversion attack.
    #[arg(long, default_value_t = 50)]
    pub iters: usize,
    /// Keep the runs under this directory (default: a temporary directory, removed after).
    #[arg(long)]
    pub keep: Option<PathBuf>,
}

/// One check: a command run twice (or two commands), and the run directories to compare.
struct Check {
    name: String,
    first: Vec<String>,
    second: Vec<String>,
}

impl Check {
    fn twice(name: &str, args: Vec<String>) -> Self {
        Self {
            name: name.to_string(),
            first: args.clone(),
            second: args,
        }
    }
}

/// Runs every check and prints one line per check; fails if any run differs.
pub fn run(command: CheckCommand) -> Result<()> {
    match command {
        CheckCommand::Determinism(args) => determinism(&args),
    }
}

fn strings(args: &[&str]) -> Vec<String> {
    args.iter().map(|s| s.to_string()).collect()
}

fn checks(args: &DeterminismArgs) -> Vec<Check> {
    let steps = args.steps.to_string();
    let epoch = (args.steps / 4).max(1).to_string();
    let seed = args.seed.to_string();
    let mut checks = Vec::new();
    for algo in ["ppo", "dqn", "reinforce"] {
        let mut train = strings(&["train", "--algo", algo, "--seed", &seed, "--steps", &steps]);
        if algo != "reinforce" {
            train.extend(strings(&["--steps-per-epoch", &epoch]));
        }
        train.push("--checkpoint".into());
        checks.push(Check::twice(&format!("train {algo}"), train));
    }
    let seeds = format!("{}..{}", args.seed, args.seed + 2);
    let sweep = |threads: &str| {
        strings(&[
            "train",
            "--algo",
            "ppo",
            "--seeds",
            &seeds,
            "--steps",
            &steps,
            "--steps-per-epoch",
            &epoch,
            "--threads",
            threads,
        ])
    };
    checks.push(Check {
        name: "sweep --threads 1 vs 2".into(),
        first: sweep("1"),
        second: sweep("2"),
    });
    checks.push(Check::twice(
        "inversion attack (QGI)",
        strings(&[
            "attack",
            "--res",
            &args.res.to_string(),
            "--iters",
            &args.iters.to_string(),
            "--seed",
            &seed,
        ]),
    ));
    checks
}

fn determinism(args: &DeterminismArgs) -> Result<()> {
    let exe = std::env::current_exe().context("finding this executable")?;
    let root = match &args.keep {
        Some(dir) => dir.clone(),
        None => std::env::temp_dir().join(format!("privrl-determinism-{}", std::process::id())),
    };
    let mut failures = 0;
    for (i, check) in checks(args).iter().enumerate() {
        let dirs = [root.join(format!("{i}-a")), root.join(format!("{i}-b"))];
        for (dir, command) in dirs.iter().zip([&check.first, &check.second]) {
            run_in(&exe, dir, command)
                .with_context(|| format!("check `{}`: {}", check.name, command.join(" ")))?;
        }
        let differences = compare_trees(&dirs[0].join("runs"), &dirs[1].join("runs"))?;
        if differences.is_empty() {
            println!("same   {}", check.name);
        } else {
            failures += 1;
            println!("DIFFER {}: {}", check.name, differences.join(", "));
        }
    }
    if args.keep.is_none() {
        std::fs::remove_dir_all(&root).ok();
    } else {
        println!("runs kept under {}", root.display());
    }
    if failures > 0 {
        bail!("{failures} determinism check(s) differ");
    }
    println!("every check wrote the same bytes twice (wall-clock fields aside)");
    Ok(())
}

/// Runs this executable with `args` in a fresh `dir`, quietly.
fn run_in(exe: &Path, dir: &Path, args: &[String]) -> Result<()> {
    if dir.exists() {
        std::fs::remove_dir_all(dir).with_context(|| format!("clearing {}", dir.display()))?;
    }
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let output = Command::new(exe)
        .args(args)
        .current_dir(dir)
        // Each run writes under its own directory, whatever the user's PRIVRL_RUNS_DIR says.
        .env(privrl_experiments::run::RUNS_DIR_ENV, dir.join("runs"))
        .env("RUST_LOG", "warn")
        .output()
        .context("starting a child process")?;
    if !output.status.success() {
        bail!(
            "exited with {}: {}",
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        );
    }
    Ok(())
}

/// The relative paths under `a` and `b` whose contents differ (wall-clock fields aside), or
/// that exist on one side only.
pub fn compare_trees(a: &Path, b: &Path) -> Result<Vec<String>> {
    let (files_a, files_b) = (relative_files(a)?, relative_files(b)?);
    let mut differences = Vec::new();
    for file in files_a.iter().filter(|f| !files_b.contains(f)) {
        differences.push(format!("{} (first run only)", file.display()));
    }
    for file in files_b.iter().filter(|f| !files_a.contains(f)) {
        differences.push(format!("{} (second run only)", file.display()));
    }
    for file in files_a.iter().filter(|f| files_b.contains(f)) {
        let read = |root: &Path| {
            std::fs::read(root.join(file)).with_context(|| format!("reading {}", file.display()))
        };
        if !same_contents(file, &read(a)?, &read(b)?) {
            differences.push(file.display().to_string());
        }
    }
    Ok(differences)
}

fn relative_files(root: &Path) -> Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    let mut pending = vec![root.to_path_buf()];
    while let Some(dir) = pending.pop() {
        for entry in
            std::fs::read_dir(&dir).with_context(|| format!("listing {}", dir.display()))?
        {
            let path = entry?.path();
            if path.is_dir() {
                pending.push(path);
            } else {
                files.push(path.strip_prefix(root)?.to_path_buf());
            }
        }
    }
    files.sort();
    Ok(files)
}

/// Whether a field holds a wall-clock measurement (see the module documentation).
pub fn is_wall_clock(name: &str) -> bool {
    name == "wall_s" || name.ends_with("_ms") || name.ends_with("_per_s") || name.ends_with("/s")
}

fn same_contents(file: &Path, a: &[u8], b: &[u8]) -> bool {
    if a == b {
        return true;
    }
    match file.extension().and_then(|e| e.to_str()) {
        Some("csv") => match (std::str::from_utf8(a), std::str::from_utf8(b)) {
            (Ok(a), Ok(b)) => without_wall_clock_columns(a) == without_wall_clock_columns(b),
            _ => false,
        },
        Some("md") => match (std::str::from_utf8(a), std::str::from_utf8(b)) {
            (Ok(a), Ok(b)) => {
                without_wall_clock_table_columns(a) == without_wall_clock_table_columns(b)
            }
            _ => false,
        },
        Some("json") => match (
            serde_json::from_slice::<serde_json::Value>(a),
            serde_json::from_slice::<serde_json::Value>(b),
        ) {
            (Ok(mut a), Ok(mut b)) => {
                drop_wall_clock_keys(&mut a);
                drop_wall_clock_keys(&mut b);
                a == b
            }
            _ => false,
        },
        _ => false,
    }
}

/// For each header cell, whether its column is kept (not wall-clock).
fn kept_columns<'a>(headers: impl IntoIterator<Item = &'a str>) -> Vec<bool> {
    headers
        .into_iter()
        .map(|h| !is_wall_clock(h.trim()))
        .collect()
}

/// `cells` without the columns `keep` drops (cells past its end are kept), joined by `sep`.
fn join_kept<'a>(cells: impl IntoIterator<Item = &'a str>, keep: &[bool], sep: &str) -> String {
    cells
        .into_iter()
        .zip(keep.iter().chain(std::iter::repeat(&true)))
        .filter(|(_, keep)| **keep)
        .map(|(cell, _)| cell)
        .collect::<Vec<_>>()
        .join(sep)
}

/// The CSV's lines with the wall-clock columns (named in the header) removed.
fn without_wall_clock_columns(csv: &str) -> Vec<String> {
    let mut lines = csv.lines();
    let Some(header) = lines.next() else {
        return Vec::new();
    };
    let keep = kept_columns(header.split(','));
    std::iter::once(header)
        .chain(lines)
        .map(|line| join_kept(line.split(','), &keep, ","))
        .collect()
}

/// The markdown's lines with the wall-clock columns of every table (named in its header row)
/// removed.
fn without_wall_clock_table_columns(markdown: &str) -> Vec<String> {
    let mut keep: Option<Vec<bool>> = None;
    markdown
        .lines()
        .map(|line| {
            let Some(row) = line.trim().strip_prefix('|') else {
                keep = None;
                return line.to_string();
            };
            let cells: Vec<&str> = row.trim_end_matches('|').split('|').collect();
            let keep = keep.get_or_insert_with(|| kept_columns(cells.iter().copied()));
            join_kept(cells, keep, "|")
        })
        .collect()
}

fn drop_wall_clock_keys(value: &mut serde_json::Value) {
    match value {
        serde_json::Value::Object(map) => {
            map.retain(|key, _| !is_wall_clock(key));
            map.values_mut().for_each(drop_wall_clock_keys);
        }
        serde_json::Value::Array(items) => items.iter_mut().for_each(drop_wall_clock_keys),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wall_clock_columns_and_keys_are_ignored_and_nothing_else() {
        let a = "epoch,loss,attack_ms\n1,0.5,117.4\n";
        let b = "epoch,loss,attack_ms\n1,0.5,110.8\n";
        let c = "epoch,loss,attack_ms\n1,0.6,117.4\n";
        assert!(same_contents(
            Path::new("m.csv"),
            a.as_bytes(),
            b.as_bytes()
        ));
        assert!(!same_contents(
            Path::new("m.csv"),
            a.as_bytes(),
            c.as_bytes()
        ));
        let a = br#"{"seed": 1, "wall_s": 0.5, "inner": {"env_steps_per_s": 7000.0}}"#;
        let b = br#"{"seed": 1, "wall_s": 0.6, "inner": {"env_steps_per_s": 6000.0}}"#;
        let c = br#"{"seed": 2, "wall_s": 0.5, "inner": {"env_steps_per_s": 7000.0}}"#;
        assert!(same_contents(Path::new("s.json"), a, b));
        assert!(!same_contents(Path::new("s.json"), a, c));
        let a = "# r\n\n| seed | return | steps/s |\n| --- | ---: | ---: |\n| 7 | 29.5 | 7064 |\n";
        let b = "# r\n\n| seed | return | steps/s |\n| --- | ---: | ---: |\n| 7 | 29.5 | 5173 |\n";
        let c = "# r\n\n| seed | return | steps/s |\n| --- | ---: | ---: |\n| 7 | 29.6 | 7064 |\n";
        assert!(same_contents(
            Path::new("report.md"),
            a.as_bytes(),
            b.as_bytes()
        ));
        assert!(!same_contents(
            Path::new("report.md"),
            a.as_bytes(),
            c.as_bytes()
        ));
        // Any other file must match byte for byte.
        assert!(!same_contents(Path::new("x.mpk"), b"ab", b"ac"));
    }
}

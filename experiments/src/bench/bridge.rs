//! `cargo xtask bench --compare-gymnasium`: a Gymnasium environment through privrl's bridge
//! against the same environment stepped natively in Python, in one invocation, and the
//! bridge's `VecEnv` at several worker counts; writes `bench/results/<date>-bridge.md`.
//!
//! The native side (`bench/python/gymnasium_native.py`) is the floor on what any bridge can
//! reach: `gymnasium.make` and `env.step` in a loop, no protocol, no copy, no conversion. The
//! bridge adds a round trip over a pipe and the observation's conversion to f32 per step; the
//! goal is ≥ [`BRIDGE_RATIO_GOAL`] of native single-environment throughput. Its `VecEnv` sends
//! every worker its step before reading any reply, so the workers (one process each) step
//! concurrently and throughput should grow with the workers up to the cores: the goal is a
//! scaling efficiency of ≥ [`SCALING_EFFICIENCY_GOAL`] at every count up to the cores.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use privrl_envs::throughput::{env_steps_per_second, vec_env_steps_per_second};

use super::compare::{load_average, machine_description, number, run_peer, write_dated};
use super::BenchArgs;
use crate::report::plot::median;
use crate::report::{comma_list, Cell, Report};

/// The share of native single-environment throughput the bridge should keep (issue 24).
pub const BRIDGE_RATIO_GOAL: f64 = 0.8;
/// Steps/s of k workers over k × (1 worker) that counts as near-linear scaling (issue 24).
pub const SCALING_EFFICIENCY_GOAL: f64 = 0.8;

/// The native reference script.
fn native_script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../bench/python/gymnasium_native.py")
}

/// What one repeat measured, in environment steps per second.
#[derive(Debug, Clone)]
struct BridgeRepeat {
    load_before: String,
    native: f64,
    bridged: f64,
    /// `(workers, steps/s summed over workers)` of the `VecEnv` rows.
    vec_env: Vec<(usize, f64)>,
    /// `(k, steps/s summed)` of k native processes at once, for each k > 1 of the `VecEnv`
    /// rows: the machine's own scaling, the ceiling for the bridge's.
    native_parallel: Vec<(usize, f64)>,
}

/// Arguments of the native script for `steps` steps.
fn native_args(spec: &str, steps: u64, seed: u64) -> Vec<String> {
    vec![
        "--spec".into(),
        spec.to_string(),
        "--steps".into(),
        steps.to_string(),
        "--seed".into(),
        seed.to_string(),
    ]
}

/// Steps/s summed over `k` native processes started together, each taking `steps / k` steps
/// (seeds 0..k); `k = 1` is the single-environment reference.
fn native_steps_per_s(python: &Path, spec: &str, steps: u64, k: usize) -> Result<f64> {
    let each = (steps / k as u64).max(1);
    let runs: Vec<f64> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..k)
            .map(|i| {
                let args = native_args(spec, each, i as u64);
                scope.spawn(move || {
                    let pairs = run_peer(python, &native_script(), "GYMNASIUM_NATIVE", &args)?;
                    number(&pairs, "steps_per_s")
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("a native run's thread panicked"))
            .collect::<Result<Vec<f64>>>()
    })?;
    Ok(runs.iter().sum())
}

/// The spec after `gymnasium:` (accepted with or without the prefix).
fn spec_of(env: &str) -> &str {
    env.strip_prefix("gymnasium:").unwrap_or(env)
}

/// The `VecEnv` worker counts: `--workers`, else 1 up to the cores. Each must be ≥ 1.
fn worker_counts(args: &BenchArgs) -> Result<Vec<usize>> {
    let workers = if args.workers.is_empty() {
        let cores = std::thread::available_parallelism().map_or(1, usize::from);
        (1..=cores).collect()
    } else {
        args.workers.clone()
    };
    if let Some(&bad) = workers.iter().find(|&&w| w == 0) {
        bail!("--workers must be at least 1 each, got {bad}");
    }
    Ok(workers)
}

/// Runs the comparison and writes `<results_dir>/<date>-bridge.md`.
pub fn run(args: &BenchArgs) -> Result<()> {
    if args.gymnasium_steps == 0 {
        bail!("--gymnasium-steps must be at least 1");
    }
    let spec = spec_of(&args.gymnasium_env);
    let name = format!("gymnasium:{spec}");
    let workers = worker_counts(args)?;
    // Fails early, with the bridge's own error, where the build lacks the feature or the
    // Python lacks Gymnasium.
    privrl_envs::make(&name).with_context(|| {
        format!(
            "cannot make {name} through the bridge (it needs a build with \
             `--features privrl-envs/gymnasium` and a Python with Gymnasium, see \
             docs/bench.md)"
        )
    })?;
    let python = privrl_envs::python::default_python();
    let machine = machine_description();
    let steps = args.gymnasium_steps;
    let mut repeats = Vec::with_capacity(args.repeats as usize);
    for r in 0..args.repeats as usize {
        let load_before = load_average();
        println!("repeat {}/{} (load {load_before})", r + 1, args.repeats);
        // Native first, as the PyTorch peers: the reference is never the one that runs on a
        // machine warmed by the other side.
        let native = native_steps_per_s(&python, spec, steps, 1)?;
        let native_parallel = workers
            .iter()
            .filter(|&&k| k > 1)
            .map(|&k| Ok((k, native_steps_per_s(&python, spec, steps, k)?)))
            .collect::<Result<Vec<_>>>()?;
        let bridged = env_steps_per_second(&name, steps, 0)?;
        let vec_env = workers
            .iter()
            .map(|&k| Ok((k, vec_env_steps_per_second(&name, k, steps, 0)?)))
            .collect::<Result<Vec<_>>>()?;
        let repeat = BridgeRepeat {
            load_before,
            native,
            bridged,
            vec_env,
            native_parallel,
        };
        let rows = |rows: &[(usize, f64)]| {
            rows.iter()
                .map(|(k, v)| format!("×{k} {v:.0}"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        println!(
            "  native {native:.0} steps/s ({}), bridged {bridged:.0} ({:.2}×), VecEnv {}",
            rows(&repeat.native_parallel),
            bridged / native,
            rows(&repeat.vec_env)
        );
        repeats.push(repeat);
    }
    write_dated(
        &args.results_dir(),
        "-bridge",
        &report(args, spec, &python, &machine, &repeats),
    )
}

/// Scaling efficiency of `k` workers: their steps/s over k times one worker's.
fn efficiency(k: usize, steps_per_s: f64, one_worker: f64) -> f64 {
    steps_per_s / (k as f64 * one_worker)
}

/// Median over repeats of each count's steps/s in the rows `rows` picks, in the order measured.
fn median_by_workers(
    repeats: &[BridgeRepeat],
    rows: impl Fn(&BridgeRepeat) -> &[(usize, f64)],
) -> Vec<(usize, f64)> {
    let Some(first) = repeats.first() else {
        return Vec::new();
    };
    rows(first)
        .iter()
        .enumerate()
        .map(|(i, &(k, _))| {
            let values: Vec<f64> = repeats.iter().map(|r| rows(r)[i].1).collect();
            (k, median(&values))
        })
        .collect()
}

/// The verdict lines, by the criteria fixed in [`BRIDGE_RATIO_GOAL`] and
/// [`SCALING_EFFICIENCY_GOAL`].
fn verdicts(repeats: &[BridgeRepeat], cores: usize) -> Vec<String> {
    let ratios: Vec<f64> = repeats.iter().map(|r| r.bridged / r.native).collect();
    let mut lines = Vec::new();
    if ratios.is_empty() {
        return lines;
    }
    let m = median(&ratios);
    lines.push(format!(
        "single environment: median bridged / native {m:.2}× over {} repeats (min {:.2}, max \
         {:.2}); goal ≥ {BRIDGE_RATIO_GOAL}× (issue 24): {}",
        ratios.len(),
        ratios.iter().copied().fold(f64::INFINITY, f64::min),
        ratios.iter().copied().fold(0.0, f64::max),
        if m >= BRIDGE_RATIO_GOAL {
            "met"
        } else {
            "not met"
        }
    ));
    let medians = median_by_workers(repeats, |r| &r.vec_env);
    let native_medians = median_by_workers(repeats, |r| &r.native_parallel);
    let native_one = median(&repeats.iter().map(|r| r.native).collect::<Vec<_>>());
    match medians.iter().find(|(k, _)| *k == 1) {
        Some(&(_, one)) => {
            let judged: Vec<(usize, f64)> = medians
                .iter()
                .filter(|(k, _)| *k > 1 && *k <= cores)
                .map(|&(k, v)| (k, efficiency(k, v, one)))
                .collect();
            if judged.is_empty() {
                lines.push("scaling: no worker count between 2 and the cores to judge".into());
            } else {
                let worst = judged.iter().map(|p| p.1).fold(f64::INFINITY, f64::min);
                let native: Vec<String> = native_medians
                    .iter()
                    .filter(|(k, _)| *k <= cores)
                    .map(|&(k, v)| format!("{:.2} at ×{k}", efficiency(k, v, native_one)))
                    .collect();
                lines.push(format!(
                    "scaling up to the {cores} cores: efficiency {} (steps/s of k workers over \
                     k × one worker, medians; native Gymnasium's k processes on the same \
                     machine: {}); goal ≥ {SCALING_EFFICIENCY_GOAL} at each: {}",
                    judged
                        .iter()
                        .map(|(k, e)| format!("{e:.2} at ×{k}"))
                        .collect::<Vec<_>>()
                        .join(", "),
                    if native.is_empty() {
                        "not measured".to_string()
                    } else {
                        native.join(", ")
                    },
                    if worst >= SCALING_EFFICIENCY_GOAL {
                        "met"
                    } else {
                        "not met"
                    }
                ));
            }
        }
        None => lines.push("scaling: not judged (no 1-worker row in --workers)".into()),
    }
    lines
}

fn report(
    args: &BenchArgs,
    spec: &str,
    python: &Path,
    machine: &[String],
    repeats: &[BridgeRepeat],
) -> Report {
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    let mut report = Report::new(
        args.results_dir(),
        "The Gymnasium bridge against native Gymnasium",
    );
    setup_sections(&mut report, args, spec, python, machine, repeats.len());
    let (headers, rows) = side_by_side(repeats);
    let headers: Vec<&str> = headers.iter().map(String::as_str).collect();
    report
        .heading("Side by side")
        .table(&headers, rows)
        .bullets(verdicts(repeats, cores));
    report.reproduce([format!(
        "cargo run --release -p xtask --features privrl-envs/gymnasium -- bench \
         --compare-gymnasium --gymnasium-env '{spec}' --gymnasium-steps {} --repeats {}{}",
        args.gymnasium_steps,
        args.repeats,
        if args.workers.is_empty() {
            String::new()
        } else {
            format!(" --workers {}", comma_list(&args.workers))
        }
    )]);
    report
}

/// How the comparison ran, the machine (with the Python both sides used) and the workloads.
fn setup_sections(
    report: &mut Report,
    args: &BenchArgs,
    spec: &str,
    python: &Path,
    machine: &[String],
    repeats: usize,
) {
    let mut machine = machine.to_vec();
    machine.push(format!(
        "Python: `{}` for both sides (the bridge's interpreter: PRIVRL_PYTHON, else the \
         workspace's .venv, else python3)",
        super::shown_python(python)
    ));
    report
        .paragraph(&format!(
            "`cargo xtask bench --compare-gymnasium`, {} repeats of {} environment steps per \
             measurement; in each, native Gymnasium ran first, then the bridge. Uniformly \
             random actions from a seeded generator, reset on `terminated or truncated`, \
             environment creation not timed. Wall-clock figures on whatever else the machine \
             was running: compare the ratios, and read them beside the load.",
            repeats, args.gymnasium_steps
        ))
        .heading("Machine")
        .bullets(machine)
        .heading("Workloads")
        .bullets([
            format!(
                "native: `bench/python/gymnasium_native.py --spec '{spec}'`: \
                 `gymnasium.make` and `env.step` in one Python process."
            ),
            format!(
                "bridged: `gymnasium:{spec}` through privrl's bridge, one worker process, \
                 `Env::step_into` from Rust (a request and a reply per step, the observation \
                 converted to f32)."
            ),
            "native ×k processes: k copies of the native script started together, each \
             taking 1/k of the steps (seeds 0..k); steps/s summed. What the machine itself \
             gives k Gymnasium processes: the ceiling for the bridge's scaling."
                .to_string(),
            "VecEnv ×k: k bridged workers, each `step_flat` sending all k steps before \
             reading any reply; steps/s summed over the workers."
                .to_string(),
        ]);
}

/// The side-by-side table's headers and rows: one row per repeat, a column per worker count.
fn side_by_side(repeats: &[BridgeRepeat]) -> (Vec<String>, Vec<Vec<Cell>>) {
    let vec_headers: Vec<String> = repeats
        .first()
        .map(|r| {
            r.native_parallel
                .iter()
                .map(|(k, _)| format!("native ×{k} processes (steps/s)"))
                .chain(
                    r.vec_env
                        .iter()
                        .map(|(k, _)| format!("VecEnv ×{k} (steps/s)")),
                )
                .collect()
        })
        .unwrap_or_default();
    let mut headers: Vec<String> = [
        "repeat",
        "load before",
        "native (steps/s)",
        "bridged (steps/s)",
        "bridged / native",
    ]
    .map(String::from)
    .to_vec();
    headers.extend(vec_headers);
    let rows = repeats
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let mut row = vec![
                Cell::from((i + 1).to_string()),
                Cell::from(r.load_before.as_str()),
                Cell::from(format!("{:.0}", r.native)),
                Cell::from(format!("{:.0}", r.bridged)),
                Cell::from(format!("{:.2}", r.bridged / r.native)),
            ];
            row.extend(
                r.native_parallel
                    .iter()
                    .chain(&r.vec_env)
                    .map(|(_, v)| Cell::from(format!("{v:.0}"))),
            );
            row
        })
        .collect();
    (headers, rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn repeat(native: f64, bridged: f64, vec_env: &[(usize, f64)]) -> BridgeRepeat {
        BridgeRepeat {
            load_before: "0".into(),
            native,
            bridged,
            vec_env: vec_env.to_vec(),
            native_parallel: vec![(2, 1.9 * native)],
        }
    }

    #[test]
    fn the_verdicts_follow_the_fixed_criteria() {
        // Median ratio 0.85 (0.9, 0.85, 0.7): met; ×2 efficiency 1700 / (2 × 1000) = 0.85: met.
        let met = [
            repeat(1000.0, 900.0, &[(1, 1000.0), (2, 1700.0)]),
            repeat(1000.0, 850.0, &[(1, 1000.0), (2, 1800.0)]),
            repeat(1000.0, 700.0, &[(1, 1000.0), (2, 1600.0)]),
        ];
        let lines = verdicts(&met, 2);
        assert!(
            lines[0].contains("0.85×") && lines[0].ends_with(": met"),
            "{lines:?}"
        );
        assert!(
            lines[1].contains("0.85 at ×2") && lines[1].ends_with(": met"),
            "{lines:?}"
        );
        // Bridged at 0.75 of native and ×2 at 1.5× one worker (efficiency 0.75): both missed.
        let missed = [repeat(1000.0, 750.0, &[(1, 1000.0), (2, 1500.0)])];
        let lines = verdicts(&missed, 2);
        assert!(
            lines[0].ends_with("not met") && lines[1].ends_with("not met"),
            "{lines:?}"
        );
        // Worker counts above the cores are shown but not judged.
        let lines = verdicts(&[repeat(1000.0, 900.0, &[(1, 1000.0), (4, 1000.0)])], 2);
        assert!(lines[1].contains("no worker count"), "{lines:?}");
    }

    #[test]
    fn the_spec_is_read_with_or_without_the_prefix() {
        assert_eq!(
            spec_of("gymnasium:ALE/AirRaid-v5?obs_type=ram"),
            "ALE/AirRaid-v5?obs_type=ram"
        );
        assert_eq!(spec_of("CartPole-v1"), "CartPole-v1");
    }
}

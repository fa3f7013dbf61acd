//! `cargo xtask bench --compare-pytorch`: privrl against like-for-like PyTorch peers
//! (`bench/pytorch/ppo_cartpole.py`, `bench/pytorch/qgi_factored.py`) in one invocation, the
//! peers timed first in every repeat, and `bench/results/<date>.md` with both figures, their
//! ratios and the machine they ran on.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Instant, SystemTime};

use anyhow::{bail, Context, Result};
use burn::backend::Autodiff;
use burn::tensor::backend::Backend;
use privrl_agents::{Agent, Ppo, PpoConfig};

use super::{qgi_times, BenchArgs};
use crate::backend::{dispatch, BackendTask};
use crate::report::plot::median;
use crate::report::{comma_list, Cell, Report};

/// The speed PPO should reach against its PyTorch peer (issue 24).
pub const PPO_RATIO_GOAL: f64 = 3.0;
/// The speed the QGI attack should reach against its PyTorch peer (issue 24).
pub const QGI_RATIO_GOAL: f64 = 1.5;

/// The directory of the PyTorch peers.
fn peer_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../bench/pytorch")
}

/// The Python to run the peers with: `--python`, else `PRIVRL_PYTHON`, else `python3`.
pub fn python(args: &BenchArgs) -> PathBuf {
    args.python
        .clone()
        .or_else(|| std::env::var_os("PRIVRL_PYTHON").map(PathBuf::from))
        .unwrap_or_else(|| PathBuf::from("python3"))
}

/// PyTorch's version and default thread count under `python`, or why it cannot be used.
fn torch_version(python: &Path) -> std::result::Result<(String, usize), String> {
    let output = Command::new(python)
        .args([
            "-c",
            "import torch; print(torch.__version__, torch.get_num_threads())",
        ])
        .output()
        .map_err(|e| format!("cannot run {}: {e}", python.display()))?;
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        let last = stderr.lines().last().unwrap_or("").trim().to_string();
        return Err(format!("{} cannot import torch ({last})", python.display()));
    }
    let stdout = String::from_utf8_lossy(&output.stdout);
    let mut words = stdout.split_whitespace();
    match (words.next(), words.next().and_then(|t| t.parse().ok())) {
        (Some(version), Some(threads)) => Ok((version.to_string(), threads)),
        _ => Err(format!("unexpected answer from torch: {stdout}")),
    }
}

/// Runs a peer script and returns the `key=value` pairs of its line starting with `tag`.
pub(super) fn run_peer(
    python: &Path,
    path: &Path,
    tag: &str,
    args: &[String],
) -> Result<Vec<(String, String)>> {
    let output = Command::new(python)
        .arg(path)
        .args(args)
        .output()
        .with_context(|| format!("running {} {}", python.display(), path.display()))?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    if !output.status.success() {
        bail!(
            "{} failed: {}{}",
            path.display(),
            stdout,
            String::from_utf8_lossy(&output.stderr)
        );
    }
    parse_peer_line(&stdout, tag)
}

/// The `key=value` pairs of the first line of `stdout` that starts with `tag`.
fn parse_peer_line(stdout: &str, tag: &str) -> Result<Vec<(String, String)>> {
    let line = stdout
        .lines()
        .find(|l| l.starts_with(tag))
        .with_context(|| format!("no {tag} line in the peer's output: {stdout}"))?;
    Ok(line
        .split_whitespace()
        .skip(1)
        .filter_map(|pair| pair.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect())
}

/// The number under `key` in a peer's line.
pub(super) fn number(pairs: &[(String, String)], key: &str) -> Result<f64> {
    pairs
        .iter()
        .find(|(k, _)| k == key)
        .with_context(|| format!("the peer printed no {key}"))?
        .1
        .parse()
        .with_context(|| format!("the peer's {key} is not a number"))
}

/// One peer measurement: its figure at the best of the thread counts tried.
#[derive(Debug, Clone)]
struct PeerFigure {
    value: f64,
    threads: usize,
    /// Mean policy iterations per epoch (PPO only).
    policy_iters: Option<f64>,
}

/// PyTorch PPO at each thread count; the fastest is the reference.
fn peer_ppo(python: &Path, args: &BenchArgs, hidden: usize) -> Result<PeerFigure> {
    let mut best: Option<PeerFigure> = None;
    for &threads in &args.torch_threads {
        let pairs = run_peer(
            python,
            &peer_dir().join("ppo_cartpole.py"),
            "PPO_PYTORCH",
            &[
                "--epochs".into(),
                args.ppo_epochs.to_string(),
                "--threads".into(),
                threads.to_string(),
                "--hidden".into(),
                hidden.to_string(),
            ],
        )?;
        let figure = PeerFigure {
            value: number(&pairs, "steps_per_s")?,
            threads: number(&pairs, "threads")? as usize,
            policy_iters: Some(number(&pairs, "policy_iters")?),
        };
        if best.as_ref().is_none_or(|b| figure.value > b.value) {
            best = Some(figure);
        }
    }
    best.context("--torch-threads is empty")
}

/// PyTorch QGI at each thread count; the fastest is the reference.
fn peer_qgi(python: &Path, args: &BenchArgs, res: usize) -> Result<PeerFigure> {
    let mut best: Option<PeerFigure> = None;
    for &threads in &args.torch_threads {
        let pairs = run_peer(
            python,
            &peer_dir().join("qgi_factored.py"),
            "QGI_PYTORCH",
            &[
                "--res".into(),
                res.to_string(),
                "--iterations".into(),
                args.qgi_iterations.to_string(),
                "--threads".into(),
                threads.to_string(),
            ],
        )?;
        let figure = PeerFigure {
            value: number(&pairs, "iterations_per_s")?,
            threads: number(&pairs, "threads")? as usize,
            policy_iters: None,
        };
        if best.as_ref().is_none_or(|b| figure.value > b.value) {
            best = Some(figure);
        }
    }
    best.context("--torch-threads is empty")
}

/// privrl's PPO as the peer runs it: `PpoConfig::new()` with (`hidden`, `hidden`) layers on
/// CartPole-v1, one warm-up epoch, then `epochs` epochs end to end. Returns environment
/// steps per second and the mean policy iterations per timed epoch.
struct PpoRun {
    epochs: usize,
    hidden: usize,
}

impl BackendTask for PpoRun {
    type Output = (f64, f64);

    fn run<B: Backend>(self, device: B::Device) -> Result<(f64, f64)> {
        let config = PpoConfig::new().with_hidden(vec![self.hidden, self.hidden]);
        let mut ppo =
            Ppo::<Autodiff<B>>::new(config, privrl_envs::make("CartPole-v1")?, &device, 0)?;
        ppo.train_epoch()?;
        let steps_before = ppo.episode_log().env_steps;
        let mut iterations = Vec::with_capacity(self.epochs);
        let start = Instant::now();
        for _ in 0..self.epochs {
            let stats = ppo.train_epoch()?;
            if let Some((_, stop)) = stats.extra.iter().find(|(k, _)| *k == "stop_iter") {
                iterations.push(*stop);
            }
        }
        let steps = (ppo.episode_log().env_steps - steps_before) as f64;
        let mean_iterations = iterations.iter().sum::<f64>() / iterations.len().max(1) as f64;
        Ok((steps / start.elapsed().as_secs_f64(), mean_iterations))
    }
}

/// What one repeat measured.
#[derive(Debug, Clone)]
struct Repeat {
    load_before: String,
    ppo_torch: Option<PeerFigure>,
    ppo_privrl: (f64, f64),
    qgi_torch: Option<PeerFigure>,
    qgi_privrl: Option<f64>,
}

/// The machine: CPU model, cores, load average, and the thread settings of both sides.
pub(super) fn machine_description() -> Vec<String> {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|info| {
            info.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, v)| v.trim().to_string())
        })
        .unwrap_or_else(|| "unknown (no /proc/cpuinfo)".into());
    let cores = std::thread::available_parallelism().map_or(0, usize::from);
    let var = |name: &str| std::env::var(name).unwrap_or_else(|_| "unset".into());
    vec![
        format!("CPU: {cpu}, {cores} logical cores available to this process"),
        format!("load average at start (1, 5, 15 min): {}", load_average()),
        format!(
            "privrl: release build, burn-ndarray; MATMUL_NUM_THREADS={} (xtask sets 1 unless \
             given), RAYON_NUM_THREADS={}; PPO trains actor and critic on two threads",
            var("MATMUL_NUM_THREADS"),
            var("RAYON_NUM_THREADS")
        ),
    ]
}

pub(super) fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(", "))
        .unwrap_or_else(|_| "unknown".into())
}

/// Today's UTC date, `YYYY-MM-DD` (civil date from days since 1970-01-01, H. Hinnant's
/// algorithm).
pub(super) fn utc_date() -> String {
    let secs = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    civil_date((secs / 86_400) as i64)
}

/// The calendar date `days` days after 1970-01-01.
fn civil_date(days: i64) -> String {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02}")
}

/// Runs the comparison and writes `<results_dir>/<date>.md`.
pub fn run(args: &BenchArgs) -> Result<()> {
    let python = python(args);
    let machine = machine_description();
    let torch = torch_version(&python);
    match &torch {
        Ok((version, threads)) => println!(
            "PyTorch {version} ({threads} threads by default) under {}",
            python.display()
        ),
        Err(why) => println!(
            "PyTorch peers skipped: {why}. Give a Python with torch through --python or \
             PRIVRL_PYTHON; privrl's figures follow alone."
        ),
    }
    let peers = torch.is_ok();
    let mut repeats = Vec::with_capacity(args.repeats as usize);
    for r in 0..args.repeats as usize {
        let load_before = load_average();
        println!("repeat {}/{} (load {load_before})", r + 1, args.repeats);
        // The peers first: timed after privrl's benches in the same process tree they ran
        // slower (issue 24).
        let ppo_torch = peers
            .then(|| peer_ppo(&python, args, args.ppo_hidden))
            .transpose()?;
        let qgi_torch = (peers && args.qgi_iterations > 0)
            .then(|| peer_qgi(&python, args, args.qgi_res))
            .transpose()?;
        let ppo_privrl = dispatch(
            args.backend,
            PpoRun {
                epochs: args.ppo_epochs,
                hidden: args.ppo_hidden,
            },
        )?;
        let qgi_privrl = (args.qgi_iterations > 0)
            .then(|| qgi_times(args, args.qgi_res).map(|t| t.iterations_per_s))
            .transpose()?;
        let repeat = Repeat {
            load_before,
            ppo_torch,
            ppo_privrl,
            qgi_torch,
            qgi_privrl,
        };
        print_repeat(&repeat);
        repeats.push(repeat);
    }
    let complexity = if args.complexity {
        Some(complexity_table(args, &python, peers)?)
    } else {
        None
    };
    let report = report(args, &machine, &torch, &repeats, complexity);
    write_dated(&args.results_dir(), "", &report)
}

/// Writes `report` to `<dir>/<UTC date><suffix>.md` and prints it.
pub(super) fn write_dated(dir: &Path, suffix: &str, report: &Report) -> Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let path = dir.join(format!("{}{suffix}.md", utc_date()));
    std::fs::write(&path, report.markdown())
        .with_context(|| format!("writing {}", path.display()))?;
    println!("{}", report.markdown());
    println!("wrote {}", path.display());
    Ok(())
}

fn print_repeat(r: &Repeat) {
    let ratio = |privrl: f64, torch: &Option<PeerFigure>| {
        torch
            .as_ref()
            .map_or("-".to_string(), |t| format!("{:.2}×", privrl / t.value))
    };
    println!(
        "  PPO: privrl {:.0} env steps/s, PyTorch {}: {}",
        r.ppo_privrl.0,
        r.ppo_torch
            .as_ref()
            .map_or("-".into(), |t| format!("{:.0}", t.value)),
        ratio(r.ppo_privrl.0, &r.ppo_torch)
    );
    if let Some(q) = r.qgi_privrl {
        println!(
            "  QGI: privrl {q:.3} iterations/s, PyTorch {}: {}",
            r.qgi_torch
                .as_ref()
                .map_or("-".into(), |t| format!("{:.3}", t.value)),
            ratio(q, &r.qgi_torch)
        );
    }
}

/// One row of the complexity table: the workload's size and the two times.
struct ComplexityRow {
    what: String,
    privrl_ms: f64,
    torch_ms: Option<f64>,
}

/// PPO time per environment step (end to end) at three network widths and QGI time per
/// iteration at three image sizes, one run each, peers first.
fn complexity_table(args: &BenchArgs, python: &Path, peers: bool) -> Result<Vec<ComplexityRow>> {
    let mut rows = Vec::new();
    for hidden in [32, 64, 128] {
        let torch = peers
            .then(|| peer_ppo(python, args, hidden))
            .transpose()?
            .map(|t| 1e3 / t.value);
        let (steps_per_s, _) = dispatch(
            args.backend,
            PpoRun {
                epochs: args.ppo_epochs,
                hidden,
            },
        )?;
        rows.push(ComplexityRow {
            what: format!("PPO step, ({hidden}, {hidden}) tanh (ms per env step)"),
            privrl_ms: 1e3 / steps_per_s,
            torch_ms: torch,
        });
    }
    if args.qgi_iterations > 0 {
        for res in [64, 100, 150] {
            let torch = peers
                .then(|| peer_qgi(python, args, res))
                .transpose()?
                .map(|t| 1e3 / t.value);
            let privrl = qgi_times(args, res)?;
            rows.push(ComplexityRow {
                what: format!("QGI iteration, {res} × {res} px (ms)"),
                privrl_ms: 1e3 / privrl.iterations_per_s,
                torch_ms: torch,
            });
        }
    }
    Ok(rows)
}

fn report(
    args: &BenchArgs,
    machine: &[String],
    torch: &std::result::Result<(String, usize), String>,
    repeats: &[Repeat],
    complexity: Option<Vec<ComplexityRow>>,
) -> Report {
    let mut report = Report::new(args.results_dir(), "privrl against like-for-like PyTorch");
    setup_sections(&mut report, args, machine, torch, repeats.len());
    side_by_side_table(&mut report, repeats);
    report.bullets(ratio_verdicts(repeats));
    if let Some(rows) = complexity {
        complexity_section(&mut report, rows);
    }
    report.reproduce([format!(
        "cargo xtask bench --compare-pytorch --repeats {} --ppo-epochs {} --ppo-hidden {} \
         --qgi-res {} --qgi-iterations {} --torch-threads {}{} --python {}",
        args.repeats,
        args.ppo_epochs,
        args.ppo_hidden,
        args.qgi_res,
        args.qgi_iterations,
        comma_list(&args.torch_threads),
        if args.complexity { " --complexity" } else { "" },
        super::shown_python(&python(args))
    )]);
    report
}

/// How the comparison ran, the machine (with the peers' PyTorch) and the two workloads.
fn setup_sections(
    report: &mut Report,
    args: &BenchArgs,
    machine: &[String],
    torch: &std::result::Result<(String, usize), String>,
    repeats: usize,
) {
    let mut machine = machine.to_vec();
    machine.push(match torch {
        Ok((version, threads)) => format!(
            "PyTorch {version} under `{}` ({threads} threads by default); each peer ran at \
             --torch-threads {} and the faster run is the reference",
            super::shown_python(&python(args)),
            comma_list(&args.torch_threads)
        ),
        Err(why) => format!("PyTorch peers skipped: {why}"),
    });
    report
        .paragraph(&format!(
            "`cargo xtask bench --compare-pytorch`, {} repeats; in each, the PyTorch peers ran \
             first, then privrl's same workloads. Wall-clock figures on whatever else the \
             machine was running: compare the ratios, and read them beside the load.",
            repeats
        ))
        .heading("Machine")
        .bullets(machine)
        .heading("Workloads")
        .bullets([
            format!(
                "PPO: `bench/pytorch/ppo_cartpole.py` against `Ppo::new(PpoConfig::new())`: \
                 Spinning Up's PPO on privrl's in-process CartPole-v1 (ported line by line to \
                 Python for the peer), ({h}, {h}) tanh actor and critic, 4000 steps per epoch, \
                 up to 80 policy steps (KL early stop at 1.5 × 0.01) and 80 value steps, \
                 full-batch Adam; one warm-up epoch, then {e} epochs timed end to end. Figure: \
                 environment steps per second.",
                h = args.ppo_hidden,
                e = args.ppo_epochs
            ),
            format!(
                "QGI: `bench/pytorch/qgi_factored.py` against `attack` (setting S1, the DQN \
                 victim of `victim_config` at {r} × {r} px, a single-sample gradient), both \
                 with the head's weight gradients factored: eq. 6's surrogate, cosine matching \
                 plus the magnitude term, TV prior, Adam, {i} iterations per stage. Figure: \
                 iterations per second over both stages.",
                r = args.qgi_res,
                i = args.qgi_iterations
            ),
        ]);
}

/// One row per repeat: each workload's peer and privrl figures and their ratio.
fn side_by_side_table(report: &mut Report, repeats: &[Repeat]) {
    let fmt_peer = |p: &Option<PeerFigure>, digits: usize| {
        p.as_ref().map_or(Cell::from("-"), |p| {
            Cell::from(format!("{:.*} ({} thr)", digits, p.value, p.threads))
        })
    };
    let ratio = |privrl: f64, p: &Option<PeerFigure>| {
        p.as_ref().map_or(Cell::from("-"), |p| {
            Cell::from(format!("{:.2}", privrl / p.value))
        })
    };
    let rows = repeats
        .iter()
        .enumerate()
        .map(|(i, r)| {
            vec![
                Cell::from((i + 1).to_string()),
                Cell::from(r.load_before.as_str()),
                fmt_peer(&r.ppo_torch, 0),
                Cell::from(format!("{:.0}", r.ppo_privrl.0)),
                ratio(r.ppo_privrl.0, &r.ppo_torch),
                Cell::from(format!(
                    "{} / {:.1}",
                    r.ppo_torch
                        .as_ref()
                        .and_then(|p| p.policy_iters)
                        .map_or("-".into(), |v| format!("{v:.1}")),
                    r.ppo_privrl.1
                )),
                fmt_peer(&r.qgi_torch, 3),
                r.qgi_privrl
                    .map_or(Cell::from("-"), |q| Cell::from(format!("{q:.3}"))),
                r.qgi_privrl
                    .map_or(Cell::from("-"), |q| ratio(q, &r.qgi_torch)),
            ]
        })
        .collect();
    report.heading("Side by side").table(
        &[
            "repeat",
            "load before",
            "PPO PyTorch (steps/s)",
            "PPO privrl (steps/s)",
            "PPO privrl / PyTorch",
            "policy iters/epoch (PyTorch / privrl)",
            "QGI PyTorch (it/s)",
            "QGI privrl (it/s)",
            "QGI privrl / PyTorch",
        ],
        rows,
    );
}

/// Each workload's median ratio over the repeats against its goal (issue 24).
fn ratio_verdicts(repeats: &[Repeat]) -> [String; 2] {
    let ratios =
        |f: &dyn Fn(&Repeat) -> Option<f64>| -> Vec<f64> { repeats.iter().filter_map(f).collect() };
    let ppo = ratios(&|r| r.ppo_torch.as_ref().map(|t| r.ppo_privrl.0 / t.value));
    let qgi = ratios(&|r| Some(r.qgi_privrl? / r.qgi_torch.as_ref()?.value));
    let verdict = |name: &str, ratios: &[f64], goal: f64| {
        if ratios.is_empty() {
            format!("{name}: no ratio (no peer figure)")
        } else {
            let m = median(ratios);
            format!(
                "{name}: median privrl / PyTorch {m:.2}× over {} repeats (min {:.2}, max {:.2}); \
                 goal ≥ {goal}× (issue 24): {}",
                ratios.len(),
                ratios.iter().copied().fold(f64::INFINITY, f64::min),
                ratios.iter().copied().fold(0.0, f64::max),
                if m >= goal { "met" } else { "not met" }
            )
        }
    };
    [
        verdict("PPO", &ppo, PPO_RATIO_GOAL),
        verdict("QGI", &qgi, QGI_RATIO_GOAL),
    ]
}

/// How cost grows: one row per width or image size.
fn complexity_section(report: &mut Report, rows: Vec<ComplexityRow>) {
    report
        .heading("How cost grows")
        .paragraph(
            "One run each, the peer first. PPO: wall time per environment step end to end \
             (rollout and update) at three hidden widths; QGI: wall time per iteration at \
             three image sizes (the head's first layer grows with the pixels, the \
             convolutions with the pixels too).",
        )
        .table(
            &[
                "workload",
                "privrl (ms)",
                "PyTorch (ms)",
                "privrl / PyTorch speed",
            ],
            rows.into_iter()
                .map(|r| {
                    vec![
                        Cell::from(r.what),
                        Cell::from(format!("{:.4}", r.privrl_ms)),
                        r.torch_ms
                            .map_or(Cell::from("-"), |t| Cell::from(format!("{t:.4}"))),
                        r.torch_ms.map_or(Cell::from("-"), |t| {
                            Cell::from(format!("{:.2}", t / r.privrl_ms))
                        }),
                    ]
                })
                .collect(),
        );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_peer_line_is_parsed_and_a_missing_one_named() {
        let out = "warming up\nPPO_PYTORCH steps_per_s=2117.5 epochs=3 steps=12000 \
                   policy_iters=78.3 threads=1 torch=2.15.0\n";
        let pairs = parse_peer_line(out, "PPO_PYTORCH").unwrap();
        assert_eq!(number(&pairs, "steps_per_s").unwrap(), 2117.5);
        assert_eq!(number(&pairs, "threads").unwrap(), 1.0);
        assert!(number(&pairs, "iterations_per_s").is_err());
        assert!(number(&pairs, "torch").is_err());
        let err = parse_peer_line(out, "QGI_PYTORCH").unwrap_err();
        assert!(err.to_string().contains("no QGI_PYTORCH line"), "{err}");
    }

    #[test]
    fn a_python_without_torch_is_reported_not_fatal() {
        let why = torch_version(Path::new("/nonexistent/python")).unwrap_err();
        assert!(why.contains("cannot run /nonexistent/python"), "{why}");
    }

    #[test]
    fn days_since_the_epoch_become_calendar_dates() {
        assert_eq!(civil_date(0), "1970-01-01");
        // Across a leap day and a century rule (2000 is a leap year).
        assert_eq!(civil_date(11_016), "2000-02-29");
        assert_eq!(civil_date(11_017), "2000-03-01");
        assert_eq!(civil_date(20_000), "2024-10-04");
    }
}

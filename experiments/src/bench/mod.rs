//! `cargo xtask bench`: throughput tables in `runs/bench/`; with `--compare-pytorch` privrl
//! against like-for-like PyTorch peers ([`compare`]), with `--compare-gymnasium` the Gymnasium
//! bridge against native Gymnasium ([`bridge`]).

mod batches;
pub mod bridge;
pub mod compare;

use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use burn::backend::Autodiff;
use burn::tensor::backend::Backend;
use clap::Args;
use privrl_agents::{DpSgdDqn, DpSgdTrainingConfig, Dqn};
use privrl_attacks::{attack, Victim};
use privrl_envs::registry;
use privrl_envs::room::RoomSetting;
use privrl_envs::throughput::{
    env_steps_per_second, env_steps_per_second_allocating, vec_env_steps_per_second,
};
use privrl_privacy::{DirichletConfig, NoiseMode};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde::Serialize;

use crate::backend::{dispatch, BackendChoice, BackendTask};
use crate::report::plot::median;
use crate::report::{Cell, Report};
use crate::run::{suite_dir, write_json};
use crate::suites::inversion::{room_samples, victim_config, Method, VictimWidth, ENTROPY_WEIGHT};
use crate::sweep::progress_bar;

/// Arguments of `bench`.
#[derive(Args, Debug)]
pub struct BenchArgs {
    /// Environment steps per measurement (more steps, steadier numbers).
    #[arg(long, default_value_t = 5_000_000)]
    pub env_steps: u64,
    /// Copies of the environment in the VecEnv measurement.
    #[arg(long, default_value_t = 16)]
    pub num_envs: usize,
    /// Training steps per timing of the network benchmarks.
    #[arg(long, default_value_t = 50)]
    pub train_steps: usize,
    /// PPO epochs (4000 env steps each) timed for the agent throughput row.
    #[arg(long, default_value_t = 3)]
    pub ppo_epochs: usize,
    /// DP-PPO and plain PPO steps timed (each) for the DP-PPO cost row, at the dp-ppo suite's
    /// batch (1024 episodes per rollout, expected 256 per step); 0 skips it.
    #[arg(long, default_value_t = 4)]
    pub dp_ppo_steps: usize,
    /// DQN gradient steps timed for the agent throughput row.
    #[arg(long, default_value_t = 1000)]
    pub dqn_updates: usize,
    /// Image size (pixels) of the QGI timing (the paper: 150).
    #[arg(long, default_value_t = 150)]
    pub qgi_res: usize,
    /// Optimisation iterations per stage of the QGI timing; 0 skips it.
    #[arg(long, default_value_t = 10)]
    pub qgi_iterations: usize,
    /// A Python with PyTorch (not with --compare-gymnasium, which uses the bridge's own
    /// interpreter: PRIVRL_PYTHON, else the workspace's .venv). With --compare-pytorch it runs
    /// the peers (default: the PRIVRL_PYTHON environment variable, else `python3`); without
    /// it, given explicitly, it times `bench/pytorch/qgi_attack.py` (the full-gradient QGI)
    /// beside the QGI timing.
    #[arg(long, alias = "torch-python", conflicts_with = "compare_gymnasium")]
    pub python: Option<std::path::PathBuf>,
    /// Backend of the network benchmarks.
    #[arg(long, value_enum, default_value_t = BackendChoice::default())]
    pub backend: BackendChoice,
    /// Run only privrl against its like-for-like PyTorch peers
    /// (`bench/pytorch/ppo_cartpole.py`, `bench/pytorch/qgi_factored.py`): PPO on CartPole-v1 and the QGI
    /// attack, the peers first in every repeat, and write `<results-dir>/<UTC date>.md` with both
    /// figures, the ratios and the machine. Without torch the peers are skipped with a message.
    #[arg(long)]
    pub compare_pytorch: bool,
    /// Run only the Gymnasium bridge against native Gymnasium: `--gymnasium-env` stepped with
    /// random actions by `bench/python/gymnasium_native.py` (plain `gymnasium.make` and
    /// `env.step`), then through privrl's bridge as one environment and as a `VecEnv` of each
    /// `--workers` count, and write `<results-dir>/<UTC date>-bridge.md` with the ratios
    /// against the goals (bridged ≥ 0.8× native; ≥ 0.8 scaling efficiency up to the cores).
    /// Needs a build with `--features privrl-envs/gymnasium` and a Python with Gymnasium.
    #[arg(long, conflicts_with = "compare_pytorch")]
    pub compare_gymnasium: bool,
    /// Run only the batched attack's throughput: QGI at --qgi-res with --qgi-iterations per
    /// stage on as many room samples as the largest batch, each batch size b (comma-separated,
    /// e.g. 1,4,16,64) attacking b samples' own gradients in one optimisation (batch 1 is the
    /// one-sample attack), in turn in each of --repeats repeats; writes
    /// `<results-dir>/<UTC date>-attack-batches.md` with samples × iterations per second, the
    /// ratio to batch 1 and the machine with its load.
    #[arg(long, value_delimiter = ',', conflicts_with_all = ["compare_pytorch", "compare_gymnasium"])]
    pub attack_batches: Vec<usize>,
    /// --compare-gymnasium: the environment, as written after `gymnasium:` in a privrl name
    /// (the Atari games need ale-py).
    #[arg(long, default_value = "ALE/AirRaid-v5?obs_type=ram")]
    pub gymnasium_env: String,
    /// --compare-gymnasium: environment steps per measurement (each side, each worker count).
    #[arg(long, default_value_t = 20_000)]
    pub gymnasium_steps: u64,
    /// --compare-gymnasium: worker counts of the VecEnv rows, comma-separated (default: 1 up
    /// to the number of cores).
    #[arg(long, value_delimiter = ',')]
    pub workers: Vec<usize>,
    /// --compare-pytorch, --compare-gymnasium, --attack-batches: repeats of the whole
    /// comparison (the reference first, then privrl).
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u64).range(1..))]
    pub repeats: u64,
    /// --compare-pytorch: torch thread counts to run each peer at (comma-separated; 0 is
    /// torch's default); the fastest is the reference, so the ratio is conservative.
    #[arg(long, value_delimiter = ',', default_value = "1,2")]
    pub torch_threads: Vec<usize>,
    /// --compare-pytorch: width of both hidden layers of PPO's actor and critic.
    #[arg(long, default_value_t = 64)]
    pub ppo_hidden: usize,
    /// --compare-pytorch: also time PPO at widths 32, 64, 128 and QGI at 64, 100, 150 px on
    /// both sides (the complexity table).
    #[arg(long)]
    pub complexity: bool,
    /// --compare-pytorch, --compare-gymnasium, --attack-batches: where the dated results file
    /// goes [default:
    /// the workspace's bench/results].
    #[arg(long)]
    pub results_dir: Option<std::path::PathBuf>,
}

impl BenchArgs {
    /// `--results-dir`, else the workspace's `bench/results` (found from this crate's
    /// directory at run time, so that `--help` prints no path of the build machine).
    pub fn results_dir(&self) -> std::path::PathBuf {
        self.results_dir.clone().unwrap_or_else(|| {
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../bench/results")
        })
    }
}

/// How a report names a Python interpreter: a bare command (`python3`) or a path under the
/// working directory as given, anything else as `PYTHON`, so that committed reports carry no
/// path of the machine that wrote them.
pub fn shown_python(python: &std::path::Path) -> String {
    let cwd = std::env::current_dir().ok();
    let relative = cwd
        .as_deref()
        .and_then(|cwd| python.strip_prefix(cwd).ok())
        .filter(|_| python.is_absolute());
    match relative {
        Some(inside) => inside.display().to_string(),
        None if python.is_relative() => python.display().to_string(),
        None => "PYTHON".to_string(),
    }
}

/// What `bench/pytorch/qgi_attack.py` printed.
#[derive(Debug, Serialize)]
pub struct TorchQgiTimes {
    /// Its first line: PyTorch's version and threads.
    pub description: String,
    /// Wall time of the attack (both stages), s.
    pub attack_s: f64,
    /// Iterations per second over both stages.
    pub iterations_per_s: f64,
}

/// Runs the PyTorch QGI script with `python` and reads its timing line.
fn torch_qgi(python: &std::path::Path, res: usize, iterations: usize) -> Result<TorchQgiTimes> {
    let script =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../bench/pytorch/qgi_attack.py");
    let output = std::process::Command::new(python)
        .arg(&script)
        .args(["--res", &res.to_string()])
        .args(["--iterations", &iterations.to_string()])
        .output()
        .with_context(|| format!("running {} {}", python.display(), script.display()))?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    anyhow::ensure!(
        output.status.success(),
        "{} failed: {}{}",
        script.display(),
        stdout,
        String::from_utf8_lossy(&output.stderr)
    );
    parse_torch_qgi(&stdout)
}

/// Reads `PyTorch …: attack 2.34 s, 8.56 iterations/s` from the script's output.
fn parse_torch_qgi(stdout: &str) -> Result<TorchQgiTimes> {
    let line = stdout
        .lines()
        .find(|l| l.starts_with("PyTorch"))
        .context("no timing line from the PyTorch script")?;
    let (description, timing) = line
        .rsplit_once(": attack ")
        .context("unexpected timing line")?;
    let numbers: Vec<f64> = timing
        .split([' ', ','])
        .filter_map(|w| w.parse().ok())
        .collect();
    anyhow::ensure!(numbers.len() == 2, "unexpected timing line: {line}");
    Ok(TorchQgiTimes {
        description: description.to_string(),
        attack_s: numbers[0],
        iterations_per_s: numbers[1],
    })
}

/// Steps per second of one environment, three ways.
#[derive(Debug, Serialize)]
pub struct EnvThroughput {
    /// Registered name.
    pub env: String,
    /// `step_into` through `Box<dyn Env>`, no allocation per step.
    pub steps_per_s: f64,
    /// `step`, which allocates the observation.
    pub allocating_steps_per_s: f64,
    /// `VecEnv::step_flat` over `num_envs` copies, summed over copies.
    pub vec_env_steps_per_s: f64,
}

/// Measures every registered environment single-threaded.
pub fn env_throughput(steps: u64, num_envs: usize) -> Result<Vec<EnvThroughput>> {
    let specs = registry();
    let bar = progress_bar(specs.len() as u64, "env throughput");
    let rows = specs
        .iter()
        .map(|spec| {
            bar.set_message(spec.name);
            let row = EnvThroughput {
                env: spec.name.to_string(),
                steps_per_s: env_steps_per_second(spec.name, steps, 0)?,
                allocating_steps_per_s: env_steps_per_second_allocating(spec.name, steps, 0)?,
                vec_env_steps_per_s: vec_env_steps_per_second(spec.name, num_envs, steps, 0)?,
            };
            bar.inc(1);
            Ok(row)
        })
        .collect::<Result<Vec<_>>>();
    bar.finish_and_clear();
    rows
}

/// The markdown table of [`env_throughput`].
pub fn env_throughput_table(report: &mut Report, rows: &[EnvThroughput], num_envs: usize) {
    let vec_header = format!("VecEnv ×{num_envs} (steps/s)");
    report.table(
        &[
            "environment",
            "step_into (steps/s)",
            "step (steps/s)",
            &vec_header,
        ],
        rows.iter()
            .map(|r| {
                vec![
                    Cell::from(r.env.as_str()),
                    Cell::from(r.steps_per_s.round()),
                    Cell::from(r.allocating_steps_per_s.round()),
                    Cell::from(r.vec_env_steps_per_s.round()),
                ]
            })
            .collect(),
    );
}

/// Median wall time of one environment step of the DP-SGD suite's DQN on CartPole-v1 with a
/// gradient step at every environment step: the plain [`Dqn::step`] (|B| = 128 sampled with
/// replacement, the mean TD loss, backward, Adam) against the real [`DpSgdDqn::step`] (its
/// PrivacyEngine's Poisson sample at q = 128/n, the traced per-transition gradients in
/// factored form, flat clipping, Gaussian noise, Adam, and the release schedule), and the same
/// DP-SGD step in secure mode (`--noise-rng secure`: sampling from ChaCha20 keyed by the
/// operating system, the noise on a grid from integer tables, [`privrl_privacy::GridGaussianSum`]).
#[derive(Debug, Serialize)]
pub struct DpSgdTimes {
    /// Backend name.
    pub backend: String,
    /// [`Dqn::step`], ms.
    pub plain_step_ms: f64,
    /// [`DpSgdDqn::step`], ms.
    pub dp_sgd_step_ms: f64,
    /// [`DpSgdDqn::step`] in secure mode (discrete Gaussian noise on a grid), ms.
    pub dp_sgd_secure_step_ms: f64,
    /// Transitions in the replay buffer when the timing started (q = 128/n).
    pub replay_size: usize,
    /// [`Dqn::step`] with the replay buffer full, ms.
    pub plain_step_full_ms: f64,
    /// [`DpSgdDqn::step`] with the replay buffer full (the Poisson sampler draws one uniform
    /// per stored transition, so its cost grows with n), ms.
    pub dp_sgd_step_full_ms: f64,
    /// The secure-mode step with the replay buffer full, ms.
    pub dp_sgd_secure_step_full_ms: f64,
    /// The buffer's capacity, the n of the second timing.
    pub full_replay_size: usize,
    /// Total wall time of the plain steps between the two timings (the buffer filling from
    /// `replay_size` to `full_replay_size`, q = 128/n falling with it), ms.
    pub plain_fill_ms: f64,
    /// The same for the DP-SGD steps, ms: with [`DpSgdTimes::plain_fill_ms`], what privacy
    /// costs over that stretch of a run rather than at one n.
    pub dp_sgd_fill_ms: f64,
    /// Steps of each kind in that stretch.
    pub fill_steps: usize,
}

/// The wall time a DP-SGD DQN step may take against a plain one: at most 1.5× (issue 22), so
/// that privacy costs a DQN run less than half its time again.
pub const DP_SGD_RATIO_GOAL: f64 = 1.5;

/// The wall time a secure-mode DP-SGD DQN step (exact noise on a grid) may take against the
/// seeded one: at most 5 % more (issue 47).
pub const SECURE_RATIO_GOAL: f64 = 1.05;

/// Times [`DpSgdTimes`] on the chosen backend.
pub struct DpSgdBench {
    /// Steps of each kind to take the median over (after the warm-up).
    pub steps: usize,
}

impl BackendTask for DpSgdBench {
    type Output = DpSgdTimes;

    fn run<B: Backend>(self, device: B::Device) -> Result<DpSgdTimes> {
        type AB<B> = Autodiff<B>;
        // The DP-SGD suite's DQN, training at every step so that every timed step trains.
        let config = crate::suites::dpsgd::dqn_config().with_train_frequency(1);
        let cartpole = || privrl_envs::make("CartPole-v1");
        let mut plain = Dqn::<AB<B>>::new(config.clone(), cartpole()?, &device, 0)?;
        let mut private = DpSgdDqn::new(
            Dqn::<AB<B>>::new(config.clone(), cartpole()?, &device, 0)?,
            &DpSgdTrainingConfig::new(),
            1,
        )?;
        let mut secure = DpSgdDqn::new(
            Dqn::<AB<B>>::new(config.clone(), cartpole()?, &device, 0)?,
            &DpSgdTrainingConfig::new().with_noise_rng(NoiseMode::Secure),
            1,
        )?;
        // Fill the buffers to the first gradient step, then warm up 3 steps of each.
        for _ in 0..config.learning_starts + 2 {
            plain.step()?;
            private.step()?;
            secure.step()?;
        }
        let replay_size = private.agent().replay().len();
        // The kinds of step alternate and each reports its median, so that a load that comes
        // and goes on a shared machine hits them alike.
        let time = |plain: &mut Dqn<AB<B>>,
                    private: &mut DpSgdDqn<AB<B>>,
                    secure: &mut DpSgdDqn<AB<B>>|
         -> Result<_> {
            let (mut plain_ms, mut private_ms, mut secure_ms) =
                (Vec::new(), Vec::new(), Vec::new());
            for _ in 0..self.steps {
                let start = Instant::now();
                plain.step()?;
                let middle = Instant::now();
                private.step()?;
                let last = Instant::now();
                secure.step()?;
                plain_ms.push((middle - start).as_secs_f64() * 1e3);
                private_ms.push((last - middle).as_secs_f64() * 1e3);
                secure_ms.push(last.elapsed().as_secs_f64() * 1e3);
            }
            Ok((median(&plain_ms), median(&private_ms), median(&secure_ms)))
        };
        let (plain_step_ms, dp_sgd_step_ms, dp_sgd_secure_step_ms) =
            time(&mut plain, &mut private, &mut secure)?;
        // Again with the replay buffer full, where most of a DQN run's steps are taken.
        let (mut plain_fill, mut dp_sgd_fill) = (Duration::ZERO, Duration::ZERO);
        let mut fill_steps = 0;
        while private.agent().replay().len() < config.buffer_capacity {
            fill_steps += 1;
            let start = Instant::now();
            plain.step()?;
            let middle = Instant::now();
            private.step()?;
            plain_fill += middle - start;
            dp_sgd_fill += middle.elapsed();
            secure.step()?;
        }
        let (plain_step_full_ms, dp_sgd_step_full_ms, dp_sgd_secure_step_full_ms) =
            time(&mut plain, &mut private, &mut secure)?;
        Ok(DpSgdTimes {
            backend: B::name(&device),
            plain_step_ms,
            dp_sgd_step_ms,
            dp_sgd_secure_step_ms,
            replay_size,
            plain_step_full_ms,
            dp_sgd_step_full_ms,
            dp_sgd_secure_step_full_ms,
            full_replay_size: config.buffer_capacity,
            plain_fill_ms: plain_fill.as_secs_f64() * 1e3,
            dp_sgd_fill_ms: dp_sgd_fill.as_secs_f64() * 1e3,
            fill_steps,
        })
    }
}

/// One QGI attack (setting S1, DQN victim, single-sample gradient) with `iterations` per stage.
pub struct QgiBench {
    /// Image size in pixels.
    pub image_size: usize,
    /// Iterations per stage.
    pub iterations: usize,
}

/// What [`QgiBench`] measured.
#[derive(Debug, Serialize)]
pub struct QgiTimes {
    /// Backend name.
    pub backend: String,
    /// Wall time of the attack (both stages), s.
    pub attack_s: f64,
    /// Optimisation iterations per second over both stages (stage 2, through the
    /// convolutions, dominates).
    pub iterations_per_s: f64,
}

/// [`QgiBench`] of `args.qgi_iterations` iterations at `image_size` on `args.backend`.
fn qgi_times(args: &BenchArgs, image_size: usize) -> Result<QgiTimes> {
    dispatch(
        args.backend,
        QgiBench {
            image_size,
            iterations: args.qgi_iterations,
        },
    )
}

impl BackendTask for QgiBench {
    type Output = QgiTimes;

    fn run<B: Backend>(self, device: B::Device) -> Result<QgiTimes> {
        let (samples, _) = room_samples(
            RoomSetting::S1,
            self.image_size,
            1,
            0,
            crate::suites::inversion::RoomSelection::First,
        )?;
        let victim = Victim::<B>::from_seed(
            &victim_config(RoomSetting::S1, self.image_size, VictimWidth::Wide),
            Method::Qgi.victim_kind(ENTROPY_WEIGHT),
            0,
            &device,
        )?;
        let record = victim.shared_gradient(&samples)?;
        // privrl's library QGI (eq. 5 + magnitude term), the configuration the PyTorch peer
        // `bench/pytorch/qgi_factored.py` mirrors.
        let config = Method::QgiMagnitude.attack_config(self.iterations, 0, 0.1);
        let start = Instant::now();
        attack(&victim, &record, &config)?;
        let attack_s = start.elapsed().as_secs_f64();
        Ok(QgiTimes {
            backend: B::name(&device),
            attack_s,
            iterations_per_s: (2 * self.iterations) as f64 / attack_s,
        })
    }
}

/// Runs the benchmarks and writes `runs/bench/report.md` and `runs/bench/bench.json`; with
/// `--compare-pytorch`, only the comparison with the PyTorch peers ([`compare::run`]).
pub fn run(args: BenchArgs) -> Result<()> {
    if args.compare_pytorch {
        return compare::run(&args);
    }
    if args.compare_gymnasium {
        return bridge::run(&args);
    }
    if !args.attack_batches.is_empty() {
        return batches::run(&args);
    }
    let dir = suite_dir("bench")?;
    // PyTorch first: run after privrl's benches from this process, it measured 5.3-5.5
    // iterations/s against 7.4 standalone on the same idle machine.
    let torch = match (&args.python, args.qgi_iterations > 0) {
        (Some(python), true) => Some(torch_qgi(python, args.qgi_res, args.qgi_iterations)?),
        _ => None,
    };
    let envs = env_throughput(args.env_steps, args.num_envs)?;
    let dp_sgd = dispatch(
        args.backend,
        DpSgdBench {
            steps: args.train_steps,
        },
    )?;
    let qgi = (args.qgi_iterations > 0)
        .then(|| qgi_times(&args, args.qgi_res))
        .transpose()?;
    let ppo_steps_per_s = crate::train::bench_ppo_steps_per_s(args.backend, args.ppo_epochs)?;
    let dqn_updates_per_s = crate::train::bench_dqn_updates_per_s(args.backend, args.dqn_updates)?;
    let dp_ppo = (args.dp_ppo_steps > 0)
        .then(|| crate::train::bench_dp_ppo_step_cost(args.backend, args.dp_ppo_steps))
        .transpose()?;
    let delta = dirichlet_delta_time()?;
    write_json(
        &dir.join("bench.json"),
        &serde_json::json!({
            "envs": envs,
            "dp_sgd": dp_sgd,
            "dirichlet_delta_mc_1e6_m6_ms": delta.ms,
            "ppo_cartpole_env_steps_per_s": ppo_steps_per_s,
            "dqn_batch128_updates_per_s": dqn_updates_per_s,
            "dp_ppo_step_cost": dp_ppo,
            "qgi": qgi,
            "qgi_pytorch": torch,
        }),
    )?;
    let mut report = Report::new(&dir, "privrl benchmarks");
    report
        .paragraph(&format!(
            "Single-threaded, {}, {} steps per measurement, random actions. \
             Criterion benches of the same: `cargo bench -p privrl-bench`.",
            if cfg!(debug_assertions) {
                "a build with debug assertions (the dev profile: not a speed figure)"
            } else {
                "release build"
            },
            args.env_steps
        ))
        .heading("Environment steps per second");
    env_throughput_table(&mut report, &envs, args.num_envs);
    agents_section(
        &mut report,
        &args,
        &dp_sgd.backend,
        ppo_steps_per_s,
        dqn_updates_per_s,
        dp_ppo.as_ref(),
    );
    privacy_section(&mut report, &args, &dp_sgd, &delta);
    if let Some(qgi) = &qgi {
        inversion_section(&mut report, &args, qgi, torch.as_ref());
    }
    report.reproduce(&[reproduce_command(&args)]);
    let path = report.write()?;
    println!("{}", report.markdown());
    println!("wrote {}", path.display());
    Ok(())
}

/// The Dirichlet mechanism's δ by Monte Carlo (10⁶ draws, m = 6) and how long it took.
struct DeltaTime {
    delta: f64,
    margin: f64,
    ms: f64,
}

/// Times the Dirichlet mechanism's δ by Monte Carlo, 10⁶ draws at m = 6.
fn dirichlet_delta_time() -> Result<DeltaTime> {
    let mut delta_timer = ChaCha8Rng::seed_from_u64(0);
    let start = Instant::now();
    let delta = DirichletConfig {
        actions: 6,
        concentration: 50.0,
        eta: 0.05,
        tau: 0.01,
        lipschitz: 1.0,
        adjacency: 0.1,
    }
    .build()?
    .delta_monte_carlo(
        1_000_000,
        privrl_privacy::DELTA_CONFIDENCE,
        &mut delta_timer,
    )?;
    let ms = start.elapsed().as_secs_f64() * 1e3;
    Ok(DeltaTime {
        delta: delta.delta,
        margin: delta.margin,
        ms,
    })
}

/// PPO's and DQN's training throughput.
fn agents_section(
    report: &mut Report,
    args: &BenchArgs,
    backend: &impl std::fmt::Display,
    ppo_steps_per_s: f64,
    dqn_updates_per_s: f64,
    dp_ppo: Option<&crate::train::DpPpoStepCost>,
) {
    let mut rows = vec![
        vec![
            Cell::from("PPO env steps/s (end to end)"),
            Cell::from(ppo_steps_per_s),
        ],
        vec![
            Cell::from("DQN updates/s (batch 128)"),
            Cell::from(dqn_updates_per_s),
        ],
    ];
    if let Some(cost) = dp_ppo {
        rows.push(vec![
            Cell::from(format!(
                "DP-PPO step / plain PPO step, same rollout of {} episodes, expected {} per step (goal ≤ 1.15)",
                cost.episodes_per_rollout, cost.minibatch_episodes
            )),
            Cell::from(cost.ratio),
        ]);
        rows.push(vec![
            Cell::from("DP-PPO step, ms"),
            Cell::from(cost.private_s * 1e3),
        ]);
        rows.push(vec![
            Cell::from("plain PPO step on the same batch, ms"),
            Cell::from(cost.plain_s * 1e3),
        ]);
        let mib = |peak: Option<f64>| peak.map_or(Cell::from("n/a"), Cell::from);
        rows.push(vec![
            Cell::from("DP-PPO steps, peak resident memory of the process (MiB, rollout included)"),
            mib(cost.private_peak_mib),
        ]);
        rows.push(vec![
            Cell::from("plain PPO steps, the same (MiB)"),
            mib(cost.plain_peak_mib),
        ]);
    }
    report
        .heading("Agents")
        .paragraph(&format!(
            "Backend `{}`, CartPole-v1, one core's worth of environment. PPO: Spinning Up's \
             (64,64) tanh actor and critic, 4000 steps per epoch, up to 80 policy (early stop \
             at 1.5 × target KL) and 80 value iterations, timed end to end over {} epochs after \
             one warm-up epoch. DQN: (128,128) ReLU Q-network, batches of 128 sampled from the \
             replay buffer, target computation, forward, backward and Adam, {} updates.",
            backend, args.ppo_epochs, args.dqn_updates
        ))
        .table(&["measurement", "value"], rows);
}

/// DP-SGD DQN's step against plain DQN's, and the Dirichlet δ's Monte Carlo time.
fn privacy_section(report: &mut Report, args: &BenchArgs, dp_sgd: &DpSgdTimes, delta: &DeltaTime) {
    report
        .heading("Privacy")
        .paragraph(&format!(
            "Backend `{}`, CartPole-v1. One environment step of the DP-SGD suite's DQN \
             ((128,128) ReLU Q-network, |B| = 128, a gradient step at every environment step, \
             timed with n = {} transitions in the replay buffer, then again with it full, \
             n = {}): plain `Dqn::step` (128 transitions sampled with replacement, mean TD \
             loss, backward, Adam) against `DpSgdDqn::step` (a Poisson sample at q = 128/n, \
             per-transition gradients computed analytically in one batched pass, flat clipping \
             to C = 1, Gaussian noise σ = 1, Adam, the privacy tally). They alternate, {} of \
             each; the table gives each one's median. Wall time on whatever else the machine \
             runs: compare the ratio, not the milliseconds. The plain step slows as training \
             goes on on subnormal arithmetic that DP-SGD's noise avoids, so a full-buffer \
             ratio below 1 measures that slowness, not a free DP-SGD (docs/dp-sgd.md). The \
             secure rows are the same DP-SGD step with `--noise-rng secure`: sampling from \
             ChaCha20 keyed by the operating system, the clipped sum rounded to a grid and exact \
             discrete Gaussian noise added on the integers (drawn ahead on threads of their \
             own, every core but the learner's), timed in turn with the other two.",
            dp_sgd.backend, dp_sgd.replay_size, dp_sgd.full_replay_size, args.train_steps
        ))
        .table(&["measurement", "value"], privacy_rows(dp_sgd, delta));
}

/// The rows of the privacy table.
fn privacy_rows(dp_sgd: &DpSgdTimes, delta: &DeltaTime) -> Vec<Vec<Cell>> {
    vec![
        vec![
            Cell::from("plain DQN step (ms)"),
            Cell::from(dp_sgd.plain_step_ms),
        ],
        vec![
            Cell::from("DP-SGD DQN step (ms)"),
            Cell::from(dp_sgd.dp_sgd_step_ms),
        ],
        vec![
            Cell::from("DP-SGD / plain"),
            Cell::from(dp_sgd.dp_sgd_step_ms / dp_sgd.plain_step_ms),
        ],
        vec![
            Cell::from("DP-SGD DQN step, secure noise (ms)"),
            Cell::from(dp_sgd.dp_sgd_secure_step_ms),
        ],
        vec![
            Cell::from("secure / DP-SGD"),
            Cell::from(dp_sgd.dp_sgd_secure_step_ms / dp_sgd.dp_sgd_step_ms),
        ],
        vec![
            Cell::from("plain DQN step, replay full (ms)"),
            Cell::from(dp_sgd.plain_step_full_ms),
        ],
        vec![
            Cell::from("DP-SGD DQN step, replay full (ms)"),
            Cell::from(dp_sgd.dp_sgd_step_full_ms),
        ],
        vec![
            Cell::from("DP-SGD / plain, replay full"),
            Cell::from(dp_sgd.dp_sgd_step_full_ms / dp_sgd.plain_step_full_ms),
        ],
        vec![
            Cell::from("DP-SGD DQN step, secure noise, replay full (ms)"),
            Cell::from(dp_sgd.dp_sgd_secure_step_full_ms),
        ],
        vec![
            Cell::from("secure / DP-SGD, replay full"),
            Cell::from(dp_sgd.dp_sgd_secure_step_full_ms / dp_sgd.dp_sgd_step_full_ms),
        ],
        vec![
            Cell::from(format!(
                "DP-SGD / plain, total over the {} steps that fill the buffer to n = {}",
                dp_sgd.fill_steps, dp_sgd.full_replay_size
            )),
            Cell::from(dp_sgd.dp_sgd_fill_ms / dp_sgd.plain_fill_ms),
        ],
        vec![
            Cell::from(format!(
                "goal DP-SGD / plain ≤ {DP_SGD_RATIO_GOAL} at both fills (issue 22)"
            )),
            Cell::from(
                if dp_sgd.dp_sgd_step_ms <= DP_SGD_RATIO_GOAL * dp_sgd.plain_step_ms
                    && dp_sgd.dp_sgd_step_full_ms <= DP_SGD_RATIO_GOAL * dp_sgd.plain_step_full_ms
                {
                    "met"
                } else {
                    "not met"
                },
            ),
        ],
        vec![
            Cell::from(format!(
                "goal secure / DP-SGD ≤ {SECURE_RATIO_GOAL} at both fills (issue 47)"
            )),
            Cell::from(
                if dp_sgd.dp_sgd_secure_step_ms <= SECURE_RATIO_GOAL * dp_sgd.dp_sgd_step_ms
                    && dp_sgd.dp_sgd_secure_step_full_ms
                        <= SECURE_RATIO_GOAL * dp_sgd.dp_sgd_step_full_ms
                {
                    "met"
                } else {
                    "not met"
                },
            ),
        ],
        vec![
            Cell::from(format!(
                "Dirichlet δ by Monte Carlo, 10⁶ draws, m = 6 (ms; δ = {:.3e} + {:.1e}, one-sided at 1 − 1e-9)",
                delta.delta, delta.margin
            )),
            Cell::from(delta.ms),
        ],
    ]
}

/// One QGI attack's time, beside PyTorch's where it ran.
fn inversion_section(
    report: &mut Report,
    args: &BenchArgs,
    qgi: &QgiTimes,
    torch: Option<&TorchQgiTimes>,
) {
    report
        .heading("Gradient inversion")
        .paragraph(&format!(
            "Backend `{}`. One QGI attack on a single-sample gradient of the freshly \
             initialised multimodal DQN victim in S1 (RGB + depth + bounding box) at {} × {} \
             px, {} iterations per stage (stage 1: the linear part; stage 2: the images \
             through the convolutions, with second-order autodiff).",
            qgi.backend, args.qgi_res, args.qgi_res, args.qgi_iterations
        ))
        .table(
            &["measurement", "value"],
            vec![
                vec![Cell::from("attack wall time (s)"), Cell::from(qgi.attack_s)],
                vec![
                    Cell::from("iterations/s (both stages)"),
                    Cell::from(qgi.iterations_per_s),
                ],
            ],
        );
    if let Some(torch) = torch {
        report
            .paragraph(&format!(
                "The same attack in PyTorch (`bench/pytorch/qgi_attack.py`, {}): the same \
                 victim, gradient, loss, prior, optimiser and iterations.",
                torch.description
            ))
            .table(
                &["measurement", "privrl", "PyTorch", "privrl / PyTorch speed"],
                vec![
                    vec![
                        Cell::from("attack wall time (s)"),
                        Cell::from(qgi.attack_s),
                        Cell::from(torch.attack_s),
                        Cell::from(""),
                    ],
                    vec![
                        Cell::from("iterations/s (both stages)"),
                        Cell::from(qgi.iterations_per_s),
                        Cell::from(torch.iterations_per_s),
                        Cell::from(qgi.iterations_per_s / torch.iterations_per_s),
                    ],
                ],
            );
    }
}

/// The command that reproduces the report.
fn reproduce_command(args: &BenchArgs) -> String {
    format!(
        "cargo xtask bench --env-steps {} --num-envs {} --train-steps {} --ppo-epochs {} \
         --dqn-updates {} --dp-ppo-steps {} --qgi-res {} --qgi-iterations {} --backend {}{}",
        args.env_steps,
        args.num_envs,
        args.train_steps,
        args.ppo_epochs,
        args.dqn_updates,
        args.dp_ppo_steps,
        args.qgi_res,
        args.qgi_iterations,
        args.backend,
        args.python
            .as_ref()
            .map_or(String::new(), |p| format!(" --python {}", shown_python(p))),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pytorch_timing_line_is_parsed() {
        let out = "warming up\nPyTorch 2.15.0, 2 threads, QGI S1 150x150, 10 iterations per \
                   stage: attack 2.34 s, 8.56 iterations/s\n";
        let times = parse_torch_qgi(out).unwrap();
        assert_eq!(times.attack_s, 2.34);
        assert_eq!(times.iterations_per_s, 8.56);
        assert!(times.description.starts_with("PyTorch 2.15.0, 2 threads"));
        assert!(parse_torch_qgi("no torch here").is_err());
    }
}

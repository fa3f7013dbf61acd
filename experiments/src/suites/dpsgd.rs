//! `cargo xtask suite dpsgd`: the DP-RL slides' experiments (paper 004, Doulazmi & Odonnat)
//! on CartPole-v1. For each of DP-SGD REINFORCE, DP-SGD DQN, LDP REINFORCE and LDP DQN it
//! sweeps the noise level σ and plots, as the slides' Figures 8, 9, 12, 13 and 14 do, the
//! average and median training reward and the convergence time (episodes until the mean
//! return of 25 consecutive episodes reaches 475) against σ, each point annotated with the ε
//! it spent (δ = 1e-5 unless set; the unit of privacy is documented in
//! `privrl_agents::private_training`).

use std::path::Path;
use std::time::Instant;

use anyhow::{Context, Result};
use burn::backend::Autodiff;
use burn::tensor::backend::Backend;
use clap::{Args, ValueEnum};
use plotters::prelude::SeriesLabelPosition;
use privrl_agents::{
    Agent, DpSgdDqn, DpSgdReinforce, DpSgdTrainingConfig, Dqn, DqnConfig, EpisodeLog,
    NoisyObservationEnv, Reinforce, ReinforceConfig,
};
use privrl_envs::Env;
use privrl_privacy::ObservationNoiseConfig;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use crate::backend::{dispatch, BackendChoice, BackendTask};
use crate::noise_rng::NoiseRng;
use crate::report::plot::{median, LearningCurves, Line, LineChart, PlotFiles};
use crate::report::{format_mean_std, format_number, Cell, Report};
use crate::run::{runs_root, suite_dir, RunDir, RunName};
use crate::summary::{Headline, SuiteOutcome};
use crate::sweep::{run_parallel, Job, JobProgress, Seeds};

/// The environment of the slides.
const ENV: &str = "CartPole-v1";
/// CartPole-v1 is solved when the mean return of 25 consecutive episodes reaches 475.
const SOLVED_WINDOW: usize = 25;
/// The return that the window must reach.
const SOLVED_RETURN: f64 = 475.0;
/// Environment steps of the random warm-up rollout whose states give the IQR of the LDP noise.
const WARMUP_STEPS: usize = 5_000;

/// Arguments of `suite dpsgd`.
#[derive(Args, Debug, Clone, Serialize)]
pub struct DpsgdArgs {
    /// Quick mode: one seed, two noise levels per method, 150 episodes and at most 8000
    /// environment steps per run (about a minute on 2 cores).
    #[arg(long)]
    pub quick: bool,
    /// Seeds per point, e.g. `0..5` or `0,3,7`. Default 0..5, quick 0.
    #[arg(long)]
    #[serde(skip)]
    pub seeds: Option<Seeds>,
    /// Noise multipliers σ of DP-SGD (noise std σ·C on the clipped sum), comma-separated.
    /// Default 0,0.1,0.3,1 (quick 0,0.3); σ = 0 clips without noise.
    #[arg(long, value_delimiter = ',')]
    pub dp_sgd_noise: Option<Vec<f64>>,
    /// Noise scales σ of the observation noise N(0, (σ·IQR)²), comma-separated. Default
    /// 0,0.1,0.3,1 (quick 0,0.3).
    #[arg(long, value_delimiter = ',')]
    pub ldp_noise: Option<Vec<f64>>,
    /// Episodes per run (every run trains this many, so rewards average over equal spans).
    /// Default 2000, quick 150.
    #[arg(long)]
    pub episodes: Option<usize>,
    /// Also stop a DQN run after this many environment steps (DQN takes a gradient step per
    /// environment step, so its cost grows with the return). Default 20000, quick 8000.
    #[arg(long)]
    pub dqn_steps: Option<u64>,
    /// DP-SGD clipping bound C on each record's gradient (an episode's for REINFORCE, a
    /// transition's for DQN).
    #[arg(long, default_value_t = 1.0)]
    pub clip: f64,
    /// δ of the reported (ε, δ).
    #[arg(long, default_value_t = 1e-5)]
    pub delta: f64,
    /// Which methods to run, comma-separated (default: all four).
    #[arg(long, value_enum, value_delimiter = ',')]
    pub methods: Option<Vec<Method>>,
    /// Backend.
    #[arg(long, value_enum, default_value_t = BackendChoice::default())]
    pub backend: BackendChoice,
    /// Worker threads (0: one per core); each runs one (method, σ, seed).
    #[arg(long, default_value_t = 0)]
    #[serde(skip)]
    pub threads: usize,
    /// Where the DP-SGD noise, the Poisson sampling and the observation noise come from:
    /// `seeded` (from each run's seed, reproducible) or `secure` (the OS CSPRNG).
    #[arg(long, value_enum, default_value_t = NoiseRng::Seeded)]
    pub noise_rng: NoiseRng,
}

/// One of the slides' four private variants.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Method {
    /// REINFORCE with a clipped, noised one-episode gradient.
    DpSgdReinforce,
    /// DQN with per-transition clipping and noise on Poisson-sampled replay batches.
    DpSgdDqn,
    /// REINFORCE on observations with N(0, (σ·IQR)²) noise.
    LdpReinforce,
    /// DQN on observations with N(0, (σ·IQR)²) noise.
    LdpDqn,
}

impl Method {
    const ALL: [Method; 4] = [
        Method::DpSgdReinforce,
        Method::DpSgdDqn,
        Method::LdpReinforce,
        Method::LdpDqn,
    ];

    fn name(self) -> &'static str {
        match self {
            Method::DpSgdReinforce => "DP-SGD REINFORCE",
            Method::DpSgdDqn => "DP-SGD DQN",
            Method::LdpReinforce => "LDP REINFORCE",
            Method::LdpDqn => "LDP DQN",
        }
    }

    fn slug(self) -> &'static str {
        match self {
            Method::DpSgdReinforce => "dp-sgd-reinforce",
            Method::DpSgdDqn => "dp-sgd-dqn",
            Method::LdpReinforce => "ldp-reinforce",
            Method::LdpDqn => "ldp-dqn",
        }
    }

    fn is_dp_sgd(self) -> bool {
        matches!(self, Method::DpSgdReinforce | Method::DpSgdDqn)
    }

    fn is_dqn(self) -> bool {
        matches!(self, Method::DpSgdDqn | Method::LdpDqn)
    }
}

/// Resolved parameters of the suite (what every run's `config.json` records).
#[derive(Debug, Clone, Serialize)]
struct DpsgdPlan {
    env: &'static str,
    seeds: Vec<u64>,
    dp_sgd_noise: Vec<f64>,
    ldp_noise: Vec<f64>,
    episodes: usize,
    dqn_steps: u64,
    clip: f64,
    delta: f64,
    methods: Vec<Method>,
    backend: BackendChoice,
    solved_window: usize,
    solved_return: f64,
    warmup_steps: usize,
    reinforce: ReinforceConfig,
    dqn: DqnConfig,
    noise_rng: NoiseRng,
}

impl DpsgdArgs {
    /// Quick mode with one seed (what `quickstart` runs).
    pub fn quick(seed: u64, backend: BackendChoice, threads: usize) -> Self {
        Self {
            quick: true,
            seeds: Some(Seeds(vec![seed])),
            dp_sgd_noise: None,
            ldp_noise: None,
            episodes: None,
            dqn_steps: None,
            clip: 1.0,
            delta: 1e-5,
            methods: None,
            backend,
            threads,
            noise_rng: NoiseRng::Seeded,
        }
    }

    fn plan(&self) -> DpsgdPlan {
        let quick = self.quick;
        DpsgdPlan {
            env: ENV,
            seeds: self.seeds.as_ref().map_or_else(
                || if quick { vec![0] } else { (0..5).collect() },
                |s| s.0.clone(),
            ),
            dp_sgd_noise: self.dp_sgd_noise.clone().unwrap_or_else(|| {
                if quick {
                    vec![0.0, 0.3]
                } else {
                    vec![0.0, 0.1, 0.3, 1.0]
                }
            }),
            ldp_noise: self.ldp_noise.clone().unwrap_or_else(|| {
                if quick {
                    vec![0.0, 0.3]
                } else {
                    vec![0.0, 0.1, 0.3, 1.0]
                }
            }),
            episodes: self.episodes.unwrap_or(if quick { 150 } else { 2000 }),
            dqn_steps: self.dqn_steps.unwrap_or(if quick { 8_000 } else { 20_000 }),
            clip: self.clip,
            delta: self.delta,
            methods: self.methods.clone().unwrap_or_else(|| Method::ALL.to_vec()),
            backend: self.backend,
            noise_rng: self.noise_rng,
            solved_window: SOLVED_WINDOW,
            solved_return: SOLVED_RETURN,
            warmup_steps: WARMUP_STEPS,
            // The slides: a 2-layer perceptron, h = 128, dropout 0.5, one episode per gradient.
            reinforce: ReinforceConfig::new(),
            // The slides: a 3-layer perceptron, h = 128, |B| = 128. A 10k buffer keeps the
            // Poisson rate |B|/n ≥ 1.28%; ε decays over 10k steps and a gradient step every
            // second environment step, to fit the step budget on 2 cores.
            dqn: DqnConfig::new()
                .with_train_frequency(2)
                .with_buffer_capacity(10_000)
                .with_epsilon_decay_steps(10_000)
                .with_lr(1e-3),
        }
    }
}

/// What one run's `config.json` holds.
#[derive(Debug, Serialize)]
struct RunConfig<'a> {
    method: Method,
    noise: f64,
    seed: u64,
    plan: &'a DpsgdPlan,
}

/// What one run's `summary.json` holds (read back by the leakage suite:
/// [`crate::summary::DpsgdRunSummary`]).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunSummary {
    /// The private training method.
    pub method: Method,
    /// Its noise level: σ of DP-SGD, or of the observation noise (×IQR).
    pub noise: f64,
    /// The run's seed.
    pub seed: u64,
    /// Training episodes played.
    pub episodes: usize,
    /// Environment steps taken.
    pub env_steps: u64,
    /// Mean training return over all episodes (the slides' "average reward").
    pub mean_return: f64,
    /// Median training return over all episodes.
    pub median_return: f64,
    /// Episodes until the mean of 25 consecutive returns first reached 475.
    pub solved_at_episode: Option<usize>,
    /// ε spent at δ; `None` (null) where there is no guarantee (LDP, σ = 0).
    pub epsilon: Option<f64>,
    /// REINFORCE only: ε if one user contributed every episode.
    pub epsilon_if_every_episode_one_user: Option<f64>,
    /// DP-SGD DQN: gradient steps released.
    pub gradient_steps: u64,
    /// LDP: the noise standard deviation σ·IQR per observation dimension.
    pub observation_noise_std: Vec<f64>,
    /// Wall-clock seconds.
    pub wall_s: f64,
}

struct RunTask<'a> {
    root: &'a Path,
    plan: &'a DpsgdPlan,
    method: Method,
    noise: f64,
    seed: u64,
    progress: &'a JobProgress,
}

/// The private agent of one run, whatever its method (one per run: the size of the variants
/// does not matter).
#[allow(clippy::large_enum_variant)]
enum PrivateAgent<B: burn::tensor::backend::AutodiffBackend> {
    DpSgdReinforce(DpSgdReinforce<B>),
    DpSgdDqn(DpSgdDqn<B>),
    Reinforce(Reinforce<B>),
    Dqn(Dqn<B>),
}

impl<B: burn::tensor::backend::AutodiffBackend> PrivateAgent<B> {
    fn train_episode(&mut self) -> Result<()> {
        match self {
            PrivateAgent::DpSgdReinforce(a) => a.train_episode().map(|_| ())?,
            PrivateAgent::DpSgdDqn(a) => a.train_episode().map(|_| ())?,
            PrivateAgent::Reinforce(a) => a.train_epoch().map(|_| ())?,
            PrivateAgent::Dqn(a) => {
                let episodes = a.episode_log().episodes();
                while a.episode_log().episodes() == episodes {
                    a.step()?;
                }
            }
        }
        Ok(())
    }

    fn log(&self) -> &EpisodeLog {
        match self {
            PrivateAgent::DpSgdReinforce(a) => a.agent().episode_log(),
            PrivateAgent::DpSgdDqn(a) => a.agent().episode_log(),
            PrivateAgent::Reinforce(a) => a.episode_log(),
            PrivateAgent::Dqn(a) => a.episode_log(),
        }
    }
}

/// States of a uniformly random policy on CartPole-v1, the warm-up rollout of the LDP noise.
fn warmup_states(seed: u64) -> Result<Vec<Vec<f32>>> {
    let mut env = privrl_envs::make(ENV)?;
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0x1d9);
    let mut states = vec![env.reset(Some(rng.random())).to_flat()];
    while states.len() < WARMUP_STEPS {
        let step = env.step(rng.random_range(0..2))?;
        states.push(step.obs.to_flat());
        if step.done() {
            states.push(env.reset(None).to_flat());
        }
    }
    Ok(states)
}

/// A finished run: its summary and its curve (episode, mean return of the last 25 episodes).
struct RunOutcome {
    summary: RunSummary,
    curve: Vec<(f64, f64)>,
}

impl BackendTask for RunTask<'_> {
    type Output = RunOutcome;

    fn run<IB: Backend>(self, device: IB::Device) -> Result<RunOutcome> {
        type B<IB> = Autodiff<IB>;
        let plan = self.plan;
        let (method, noise, seed) = (self.method, self.noise, self.seed);
        let name = RunName::new(method.slug()).param("sigma", noise).seed(seed);
        let run = RunDir::create_in(self.root, "dpsgd", &name)?;
        let config = RunConfig {
            method,
            noise,
            seed,
            plan,
        };
        // A complete run with the same config is reused, so an interrupted sweep resumes.
        if run.is_complete() {
            // Compared as parsed JSON on both sides, so float parsing cannot differ.
            let now: serde_json::Value = serde_json::from_str(&serde_json::to_string(&config)?)?;
            let same = now == crate::run::read_json::<serde_json::Value>(&run.file("config.json"))?;
            if same {
                let summary = crate::run::read_json(&run.file("summary.json"))?;
                let curve = run.read_metrics()?.xy("episode", "mean_return_25")?;
                return Ok(RunOutcome { summary, curve });
            }
        }
        run.write_config(&config)?;
        let dp_config = DpSgdTrainingConfig::new()
            .with_noise_multiplier(noise)
            .with_clip(Some(plan.clip))
            .with_delta(plan.delta)
            .with_noise_rng(plan.noise_rng.mode());
        // Under `--noise-rng secure` this seed is not used, and it is never written.
        let noise_seed = seed ^ 0xd9_5e0d;
        let mut observation_noise_std = Vec::new();
        let env: Box<dyn Env> = if method.is_dp_sgd() {
            privrl_envs::make(ENV)?
        } else {
            let noise = ObservationNoiseConfig { noise_scale: noise }.fit(&warmup_states(seed)?)?;
            observation_noise_std = noise.std().to_vec();
            Box::new(NoisyObservationEnv::new(
                privrl_envs::make(ENV)?,
                noise,
                plan.noise_rng.mode().source(noise_seed),
            )?)
        };
        let mut agent: PrivateAgent<B<IB>> = match method {
            Method::DpSgdReinforce => PrivateAgent::DpSgdReinforce(DpSgdReinforce::new(
                Reinforce::new(plan.reinforce.clone(), env, &device, seed)?,
                &dp_config,
                noise_seed,
            )?),
            Method::DpSgdDqn => PrivateAgent::DpSgdDqn(DpSgdDqn::new(
                Dqn::new(plan.dqn.clone(), env, &device, seed)?,
                &dp_config,
                noise_seed,
            )?),
            Method::LdpReinforce => {
                PrivateAgent::Reinforce(Reinforce::new(plan.reinforce.clone(), env, &device, seed)?)
            }
            Method::LdpDqn => PrivateAgent::Dqn(Dqn::new(plan.dqn.clone(), env, &device, seed)?),
        };

        let bar = self.progress.bar(plan.episodes as u64);
        let mut metrics = run.metrics()?;
        let mut curve = Vec::new();
        let start = Instant::now();
        while agent.log().episodes() < plan.episodes
            && !(method.is_dqn() && agent.log().env_steps >= plan.dqn_steps)
        {
            agent
                .train_episode()
                .with_context(|| format!("{name}, episode {}", agent.log().episodes() + 1))?;
            let log = agent.log();
            let recent = log.mean_recent_return(SOLVED_WINDOW).unwrap_or(f64::NAN);
            metrics.write_row(&[
                ("episode", log.episodes() as f64),
                ("env_steps", log.env_steps as f64),
                ("return", log.returns.last().copied().unwrap_or(f64::NAN)),
                ("mean_return_25", recent),
            ])?;
            curve.push((log.episodes() as f64, recent));
            bar.set_position(log.episodes() as u64);
            bar.set_message(format!("return {}", format_number(recent)));
        }
        let wall_s = start.elapsed().as_secs_f64();
        let (epsilon, every, gradient_steps) = match &agent {
            PrivateAgent::DpSgdReinforce(a) => (
                a.epsilon()?,
                Some(a.epsilon_if_every_step()?),
                a.agent().episode_log().episodes() as u64,
            ),
            PrivateAgent::DpSgdDqn(a) => (a.epsilon()?, None, a.tally().steps()),
            PrivateAgent::Reinforce(a) => (f64::INFINITY, None, a.episode_log().episodes() as u64),
            PrivateAgent::Dqn(a) => (f64::INFINITY, None, a.updates()),
        };
        let log = agent.log();
        let summary = RunSummary {
            method,
            noise,
            seed,
            episodes: log.episodes(),
            env_steps: log.env_steps,
            mean_return: mean(&log.returns),
            median_return: median(&log.returns),
            solved_at_episode: log.first_solved(SOLVED_WINDOW, SOLVED_RETURN).map(|s| s.0),
            epsilon: epsilon.is_finite().then_some(epsilon),
            epsilon_if_every_episode_one_user: every.filter(|e| e.is_finite()),
            gradient_steps,
            observation_noise_std,
            wall_s,
        };
        LearningCurves::new(format!("{} σ = {noise}, seed {seed}", method.name()))
            .x_label("episode")
            .y_label("mean return of the last 25 episodes")
            .series(format!("seed {seed}"), vec![curve.clone()])
            .save(&run.file("curve"))?;
        run.write_summary(&summary)?;
        Ok(RunOutcome { summary, curve })
    }
}

fn mean(values: &[f64]) -> f64 {
    if values.is_empty() {
        return f64::NAN;
    }
    values.iter().sum::<f64>() / values.len() as f64
}

/// One point of the sweep: a method at a noise level, over seeds.
struct Point {
    method: Method,
    noise: f64,
    runs: Vec<RunSummary>,
    curves: Vec<Vec<(f64, f64)>>,
}

impl Point {
    fn mean_returns(&self) -> Vec<f64> {
        self.runs.iter().map(|r| r.mean_return).collect()
    }

    fn median_returns(&self) -> Vec<f64> {
        self.runs.iter().map(|r| r.median_return).collect()
    }

    /// Episodes to solved per seed, an unsolved seed counting as the episodes it ran
    /// (censored: for the plots).
    fn convergence(&self) -> Vec<f64> {
        self.runs
            .iter()
            .map(|r| r.solved_at_episode.unwrap_or(r.episodes) as f64)
            .collect()
    }

    /// Median episodes to solved over seeds, an unsolved seed counting as ∞ (for the table).
    fn median_convergence(&self) -> f64 {
        median(
            &self
                .runs
                .iter()
                .map(|r| r.solved_at_episode.map_or(f64::INFINITY, |e| e as f64))
                .collect::<Vec<_>>(),
        )
    }

    fn solved(&self) -> usize {
        self.runs
            .iter()
            .filter(|r| r.solved_at_episode.is_some())
            .count()
    }

    /// The largest ε over seeds (DQN's varies with the number of gradient steps).
    fn epsilon(&self) -> f64 {
        self.runs
            .iter()
            .map(|r| r.epsilon.unwrap_or(f64::INFINITY))
            .fold(0.0, f64::max)
    }
}

/// The three charts of one family (DP-SGD or LDP): average reward, median reward and
/// convergence time against σ, one line per algorithm, each point annotated with ε.
fn family_charts(
    dir: &std::path::Path,
    family: &str,
    x_label: &str,
    points: &[&Point],
) -> Result<Vec<(String, PlotFiles)>> {
    type Statistic = fn(&Point) -> f64;
    let charts: [(&str, &str, &str, Statistic); 3] = [
        (
            "average",
            "average reward",
            "mean training return (mean over seeds)",
            |p| mean(&p.mean_returns()),
        ),
        (
            "median",
            "median reward",
            "median training return (median over seeds)",
            |p| median(&p.median_returns()),
        ),
        (
            "convergence",
            "convergence time",
            "episodes to solved (median over seeds; unsolved = episodes run)",
            |p| median(&p.convergence()),
        ),
    ];
    let mut out = Vec::new();
    for (stem, what, y_label, statistic) in charts {
        let mut chart =
            LineChart::new(format!("{family}: impact of the noise level on the {what}"))
                .x_label(x_label)
                .y_label(y_label)
                .legend(SeriesLabelPosition::UpperRight);
        for method in Method::ALL {
            let mut of_method: Vec<&&Point> =
                points.iter().filter(|p| p.method == method).collect();
            if of_method.is_empty() {
                continue;
            }
            of_method.sort_by(|a, b| a.noise.total_cmp(&b.noise));
            let line = Line::new(
                method.name(),
                of_method.iter().map(|p| (p.noise, statistic(p))).collect(),
            )
            .annotations(
                of_method
                    .iter()
                    .map(|p| format!("ε={}", format_number(p.epsilon()))),
            );
            chart = chart.line(line);
        }
        let slug = family.to_lowercase().replace(' ', "-");
        let files = chart.save(&dir.join(format!("{slug}-{stem}")))?;
        out.push((
            format!("{family}: {what} against σ (points annotated with ε at δ)"),
            files,
        ));
    }
    Ok(out)
}

/// Runs the suite and writes `runs/dpsgd/report.md`; returns the report's path.
pub fn run(args: DpsgdArgs) -> Result<SuiteOutcome> {
    suite_dir("dpsgd")?;
    run_in(&runs_root(), args)
}

/// [`run`] under the runs root `root`.
fn run_in(root: &Path, args: DpsgdArgs) -> Result<SuiteOutcome> {
    let plan = args.plan();
    anyhow::ensure!(!plan.seeds.is_empty(), "--seeds is empty");
    anyhow::ensure!(plan.episodes > 0, "--episodes must be at least 1");
    for &sigma in plan.dp_sgd_noise.iter().chain(&plan.ldp_noise) {
        anyhow::ensure!(
            sigma.is_finite() && sigma >= 0.0,
            "noise levels must be finite and >= 0, got {sigma}"
        );
    }
    let dir = root.join("dpsgd");
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let mut jobs = Vec::new();
    for &method in &plan.methods {
        let levels = if method.is_dp_sgd() {
            &plan.dp_sgd_noise
        } else {
            &plan.ldp_noise
        };
        for &noise in levels {
            for &seed in &plan.seeds {
                jobs.push(Job::new(
                    format!("{} σ={noise} seed {seed}", method.slug()),
                    (method, noise, seed),
                ));
            }
        }
    }
    // DQN runs are the long ones: start them first so the pool stays busy to the end.
    jobs.sort_by_key(|job| !job.input.0.is_dqn());
    let outcomes = run_parallel(jobs, args.threads, |(method, noise, seed), progress| {
        dispatch(
            plan.backend,
            RunTask {
                root,
                plan: &plan,
                method,
                noise,
                seed,
                progress,
            },
        )
    })?
    .into_ok()?;

    let mut points: Vec<Point> = Vec::new();
    for (_, RunOutcome { summary, curve }) in outcomes {
        match points
            .iter_mut()
            .find(|p| p.method == summary.method && p.noise == summary.noise)
        {
            Some(point) => {
                point.runs.push(summary);
                point.curves.push(curve);
            }
            None => points.push(Point {
                method: summary.method,
                noise: summary.noise,
                runs: vec![summary],
                curves: vec![curve],
            }),
        }
    }
    points.sort_by(|a, b| {
        (a.method as u8)
            .cmp(&(b.method as u8))
            .then(a.noise.total_cmp(&b.noise))
    });

    let mut report = Report::new(
        &dir,
        "DP-SGD and local DP for REINFORCE and DQN on CartPole-v1",
    );
    report.paragraph(&format!(
        "Doulazmi & Odonnat, *Differential Privacy in Reinforcement Learning* (MVA slides, 2023). \
         REINFORCE: a 2-layer perceptron (h = 128, dropout 0.5), one episode per gradient, Adam \
         lr {}. DQN: a 3-layer perceptron (h = 128), |B| = {}, Adam lr {}, buffer {}, ε-greedy \
         over {} steps, target copy every {} steps. DP-SGD clips each record's gradient to \
         C = {} (flat L2) and adds N(0, σ²C²I) to the sum (slides, Figure 7). LDP adds \
         N(0, (σ·IQR_j)²) to every observed state dimension j, the IQR from {} states of a \
         random policy. Every run trains {} episodes (DQN also stops at {} environment steps); \
         seeds {:?}; backend `{}`.",
        plan.reinforce.lr,
        plan.dqn.batch_size,
        plan.dqn.lr,
        plan.dqn.buffer_capacity,
        plan.dqn.epsilon_decay_steps,
        plan.dqn.target_update_interval,
        plan.clip,
        plan.warmup_steps,
        plan.episodes,
        plan.dqn_steps,
        plan.seeds,
        plan.backend,
    ));
    report.paragraph(&plan.noise_rng.report_line());
    report.heading("The privacy each run spends").bullets([
        format!(
            "DP-SGD REINFORCE: an episode is one record. Each episode is collected once, used for \
             one gradient step and discarded, so each record enters one Gaussian release \
             (q = 1, one step): ε below at δ = {}. A user contributing every episode would \
             compose over all of them: that ε is in each run's summary.json \
             (`epsilon_if_every_episode_one_user`).",
            plan.delta
        ),
        "DP-SGD DQN: a transition is one record. Each gradient step Poisson-samples the replay \
         buffer at q_t = |B|/n_t (expected batch |B|, not the slides' uniform sampling with \
         replacement, which the accountant does not cover); the RDP accountant composes every \
         step of the run at its q_t (rounded up to a 1% grid), which bounds every transition. \
         ε is the largest over seeds."
            .to_string(),
        "σ = 0 (DP-SGD) clips without noise and LDP has no sensitivity bound: ε = ∞ (the \
         slides' 'need for theoretical guarantees')."
            .to_string(),
    ]);

    let mut rows = Vec::new();
    for point in &points {
        rows.push(vec![
            Cell::from(point.method.name()),
            Cell::from(format_number(point.noise)),
            Cell::from(format_number(point.epsilon())),
            Cell::from(format_mean_std(&point.mean_returns())),
            Cell::from(format_number(median(&point.median_returns()))),
            Cell::from(format!(
                "{} ({}/{} solved)",
                match point.median_convergence() {
                    e if e.is_finite() => format_number(e),
                    _ => "∞".to_string(),
                },
                point.solved(),
                point.runs.len()
            )),
            Cell::from(format_number(mean(
                &point
                    .runs
                    .iter()
                    .map(|r| r.env_steps as f64)
                    .collect::<Vec<_>>(),
            ))),
            Cell::from(format_number(mean(
                &point.runs.iter().map(|r| r.wall_s).collect::<Vec<_>>(),
            ))),
        ]);
    }
    report.heading("Sweep").table(
        &[
            "method",
            "σ",
            &format!("ε (δ = {})", plan.delta),
            "average reward (mean ± std over seeds)",
            "median reward",
            "episodes to solved (median; unsolved = ∞)",
            "env steps",
            "wall s",
        ],
        rows,
    );

    let dp_sgd: Vec<&Point> = points.iter().filter(|p| p.method.is_dp_sgd()).collect();
    let ldp: Vec<&Point> = points.iter().filter(|p| !p.method.is_dp_sgd()).collect();
    let mut plots = Vec::new();
    if !dp_sgd.is_empty() {
        plots.extend(family_charts(
            &dir,
            "DP-SGD",
            "noise multiplier σ",
            &dp_sgd,
        )?);
    }
    if !ldp.is_empty() {
        plots.extend(family_charts(
            &dir,
            "LDP",
            "observation noise σ (× IQR)",
            &ldp,
        )?);
    }
    report.heading("Figures");
    for (caption, files) in &plots {
        report.plot(caption, files);
    }
    for method in &plan.methods {
        let mut curves = LearningCurves::new(format!("{}: training return", method.name()))
            .x_label("episode")
            .y_label("episode return (median over seeds, 25–75% band)");
        for point in points.iter().filter(|p| p.method == *method) {
            curves = curves.series(format!("σ = {}", point.noise), point.curves.clone());
        }
        let files = curves.save(&dir.join(format!("curves-{}", method.slug())))?;
        report.plot(
            &format!("{}: mean return of the last 25 episodes", method.name()),
            &files,
        );
    }

    let command = if args.quick {
        "cargo xtask suite dpsgd --quick".to_string()
    } else {
        format!(
            "cargo xtask suite dpsgd --seeds {} --dp-sgd-noise {} --ldp-noise {} --episodes {} --dqn-steps {} --clip {} --delta {}",
            plan.seeds
                .iter()
                .map(u64::to_string)
                .collect::<Vec<_>>()
                .join(","),
            join(&plan.dp_sgd_noise),
            join(&plan.ldp_noise),
            plan.episodes,
            plan.dqn_steps,
            plan.clip,
            plan.delta
        )
    };
    let command = command + plan.noise_rng.reproduce_flag();
    let headline = headline(&points);
    headline.add_to(&mut report);
    report.reproduce([command]);
    let path = report.write()?;
    println!("wrote {}", path.display());
    Ok(SuiteOutcome {
        report: path,
        headline,
    })
}

/// The average reward of a uniformly random policy on CartPole-v1 (about 22): a run learns
/// when its average reward is at least twice this.
const RANDOM_POLICY_RETURN: f64 = 22.0;

/// The slides' headline: DP-SGD buys a finite ε at a cost in reward. Judged on DP-SGD
/// REINFORCE, the method that learns within the quick budget: at its smallest σ it learns
/// (average reward at least twice a random policy's), and at its largest σ it spends a finite
/// ε and earns a lower average reward (means over seeds). DP-SGD DQN is reported beside it
/// but not judged: at these step budgets it does not learn even without noise, so a drop in
/// its reward would be noise.
fn headline(points: &[Point]) -> Headline {
    let extremes = |method: Method| {
        let of_method: Vec<&Point> = points.iter().filter(|p| p.method == method).collect();
        let lowest = of_method
            .iter()
            .min_by(|a, b| a.noise.total_cmp(&b.noise))?;
        let highest = of_method
            .iter()
            .max_by(|a, b| a.noise.total_cmp(&b.noise))?;
        (lowest.noise < highest.noise).then_some((*lowest, *highest))
    };
    let describe = |method: Method, (lowest, highest): (&Point, &Point)| {
        format!(
            "{}: average reward {} at σ = {} (ε = {}) against {} at σ = {}",
            method.name(),
            format_number(mean(&highest.mean_returns())),
            format_number(highest.noise),
            format_number(highest.epsilon()),
            format_number(mean(&lowest.mean_returns())),
            format_number(lowest.noise)
        )
    };
    let judged = extremes(Method::DpSgdReinforce);
    let visible = judged.is_some_and(|(lowest, highest)| {
        let (low, high) = (mean(&lowest.mean_returns()), mean(&highest.mean_returns()));
        low >= 2.0 * RANDOM_POLICY_RETURN && high < low && highest.epsilon().is_finite()
    });
    let mut measured = vec![judged.map_or_else(
        || "DP-SGD REINFORCE did not run at two noise levels".to_string(),
        |p| describe(Method::DpSgdReinforce, p),
    )];
    if let Some(p) = extremes(Method::DpSgdDqn) {
        measured.push(format!("not judged: {}", describe(Method::DpSgdDqn, p)));
    }
    Headline {
        effect: format!(
            "DP-SGD buys a finite ε at a cost in reward: DP-SGD REINFORCE learns at the smallest \
             σ (average reward ≥ {}, twice a random policy's) and earns less at the largest σ, \
             which spends a finite ε.",
            2.0 * RANDOM_POLICY_RETURN
        ),
        measured: measured.join("; "),
        visible,
    }
}

fn join(values: &[f64]) -> String {
    values
        .iter()
        .map(f64::to_string)
        .collect::<Vec<_>>()
        .join(",")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tiny_sweep_writes_runs_and_a_report_with_epsilon() {
        let root = crate::run::tests::temp_dir("dpsgd-suite");
        let mut args = DpsgdArgs::quick(7, BackendChoice::default(), 2);
        args.dp_sgd_noise = Some(vec![0.0, 1.0]);
        args.ldp_noise = Some(vec![0.5]);
        args.episodes = Some(60);
        args.dqn_steps = Some(1_100);
        let outcome = run_in(&root, args).unwrap();
        let markdown = std::fs::read_to_string(&outcome.report).unwrap();
        // The headline judges REINFORCE at σ = 1 against σ = 0 and shows DQN beside it.
        assert_eq!(outcome.headline.measured.matches("σ = 1 (ε = ").count(), 2);
        assert!(outcome.headline.measured.contains("not judged: DP-SGD DQN"));
        assert!(markdown.contains("## Headline"), "{markdown}");
        // 2 DP-SGD methods × 2 σ + 2 LDP methods × 1 σ rows.
        let rows = markdown
            .lines()
            .filter(|l| l.starts_with("| DP-SGD") || l.starts_with("| LDP"))
            .count();
        assert_eq!(rows, 6, "{markdown}");
        for stem in ["dp-sgd-average", "dp-sgd-convergence", "ldp-median"] {
            assert!(root.join("dpsgd").join(format!("{stem}.png")).is_file());
        }
        let run = root.join("dpsgd").join("dp-sgd-reinforce-sigma1-seed7");
        crate::run::tests::assert_complete_run(&run);
        let summary: RunSummary = crate::run::read_json(&run.join("summary.json")).unwrap();
        assert_eq!(summary.episodes, 60);
        // One Gaussian release per episode-record at q = 1 (σ = 1, δ = 1e-5).
        let expected = privrl_privacy::dp_sgd_epsilon(1.0, 1.0, 1, 1e-5).unwrap();
        assert!((summary.epsilon.unwrap() - expected).abs() < 1e-9);
        // DQN stops at the end of the episode that crosses 1100 steps; it trains from step
        // 1000 on, one Poisson-sampled step per environment step at q_t = 128/t.
        let dqn: RunSummary = crate::run::read_json(
            &root
                .join("dpsgd")
                .join("dp-sgd-dqn-sigma1-seed7")
                .join("summary.json"),
        )
        .unwrap();
        assert!(dqn.env_steps >= 1_100);
        // Every second step from step 1000 on.
        assert_eq!(dqn.gradient_steps, (dqn.env_steps - 1000) / 2 + 1);
        let epsilon = dqn.epsilon.unwrap();
        let steps = dqn.gradient_steps;
        let high = privrl_privacy::dp_sgd_epsilon(0.128 * 1.01, 1.0, steps, 1e-5).unwrap();
        let low =
            privrl_privacy::dp_sgd_epsilon(128.0 / dqn.env_steps as f64, 1.0, steps, 1e-5).unwrap();
        assert!(
            low < epsilon && epsilon < high,
            "{low} < {epsilon} < {high}"
        );
        let ldp: RunSummary = crate::run::read_json(
            &root
                .join("dpsgd")
                .join("ldp-reinforce-sigma0.5-seed7")
                .join("summary.json"),
        )
        .unwrap();
        assert_eq!(ldp.epsilon, None);
        assert!(ldp.observation_noise_std.iter().all(|&s| s > 0.0));
    }
}

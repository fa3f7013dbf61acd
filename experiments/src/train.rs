//! `cargo xtask train`: trains PPO, DQN, REINFORCE or A3C on an environment and writes the
//! standard run directory per seed (`config.json`, `metrics.csv` with one row per epoch,
//! `summary.json`, a learning-curve plot), plus, for a sweep (`--seeds 0..5`), the median and
//! percentile band over seeds and a `report.md`.
//!
//! ```text
//! cargo xtask train --algo ppo --env CartPole-v1 --seed 0 --steps 300000
//! cargo xtask train --algo dqn --seeds 0..5 --steps 500000 --stop-when-solved
//! cargo xtask train --algo reinforce --seeds 0..5 --episodes 2000 --shard 0/2
//! ```
//!
//! Also the throughput measurements of `cargo xtask bench` ([`bench_ppo_steps_per_s`],
//! [`bench_dqn_updates_per_s`]) and the quickstart's short PPO run ([`quick_ppo`]).

// Some items are used only by `bench` and `quickstart`.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{bail, Context, Result};
use burn::backend::Autodiff;
use burn::config::Config;
use burn::tensor::backend::{AutodiffBackend, Backend};
use clap::{Args, ValueEnum};
use privrl_agents::{
    A3c, A3cConfig, Agent, Dqn, DqnConfig, EpochStats, Ppo, PpoConfig, Reinforce, ReinforceConfig,
};
use privrl_envs::registry;
use rand::SeedableRng;
use serde::{Deserialize, Serialize};

use crate::backend::{dispatch, BackendChoice, BackendTask};
use crate::report::plot::{median, LearningCurves, PlotFiles};
use crate::report::{format_number, Cell, Report};
use crate::run::{runs_root, suite_dir, write_json, RunDir, RunName};
use crate::sweep::{merge_shards, run_parallel, Job, JobProgress, Seeds, Shard, ShardManifest};

/// The algorithms `train` runs.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Algorithm {
    /// PPO-Clip, Spinning Up's defaults.
    Ppo,
    /// DQN with replay, target network and ε-greedy.
    Dqn,
    /// REINFORCE with an entropy bonus, one episode per update.
    Reinforce,
    /// A3C with worker threads (the PGC paper's setting).
    A3c,
}

impl std::fmt::Display for Algorithm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Algorithm::Ppo => "ppo",
            Algorithm::Dqn => "dqn",
            Algorithm::Reinforce => "reinforce",
            Algorithm::A3c => "a3c",
        })
    }
}

/// Arguments of `train`.
#[derive(Args, Debug, Clone, Serialize)]
pub struct TrainArgs {
    /// Algorithm.
    #[arg(long, value_enum)]
    pub algo: Algorithm,
    /// Environment name (`cargo xtask env list`).
    #[arg(long, default_value = "CartPole-v1")]
    pub env: String,
    /// One seed (ignored when --seeds is given).
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Several seeds, run in parallel: `0..5`, `0..=4`, `0,3,7`.
    #[arg(long)]
    #[serde(skip)]
    pub seeds: Option<Seeds>,
    /// Environment steps per seed (summed over workers for A3C).
    #[arg(long, default_value_t = 300_000)]
    pub steps: u64,
    /// Also stop a seed after this many finished episodes.
    #[arg(long)]
    pub episodes: Option<usize>,
    /// Stop a seed once the mean return of its last 100 episodes reaches the environment's
    /// reward threshold (CartPole-v1: 475).
    #[arg(long)]
    pub stop_when_solved: bool,
    /// PPO: environment steps per epoch (Spinning Up: 4000; the kickstarting paper: 1000).
    #[arg(long)]
    pub steps_per_epoch: Option<usize>,
    /// The algorithm's config as JSON (a `PpoConfig`, `DqnConfig`, ... as written in a run's
    /// `config.json` under `agent`); defaults otherwise.
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Save a checkpoint of the final agent in `<run>/checkpoint/`.
    #[arg(long)]
    pub checkpoint: bool,
    /// Backend.
    #[arg(long, value_enum, default_value_t = BackendChoice::default())]
    pub backend: BackendChoice,
    /// Suite directory under runs/.
    #[arg(long, default_value = "train")]
    pub suite: String,
    /// Run only this slice of the seeds: `--shard i/n`; join with `cargo xtask merge`.
    #[arg(long)]
    #[serde(skip)]
    pub shard: Option<Shard>,
    /// Worker threads for seed sweeps (0: one per core).
    #[arg(long, default_value_t = 0)]
    #[serde(skip)]
    pub threads: usize,
}

/// The algorithm's full configuration, defaults filled in.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "algo", rename_all = "lowercase")]
pub enum AgentConfig {
    /// PPO.
    Ppo(PpoConfig),
    /// DQN.
    Dqn(DqnConfig),
    /// REINFORCE.
    Reinforce(ReinforceConfig),
    /// A3C.
    A3c(A3cConfig),
}

impl AgentConfig {
    /// Defaults for `algo`, or the JSON file `path`, with the command-line overrides.
    pub fn resolve(args: &TrainArgs) -> Result<Self> {
        let load_error =
            |path: &Path| format!("reading the {} config {}", args.algo, path.display());
        let mut config = match (args.algo, &args.config) {
            (Algorithm::Ppo, None) => AgentConfig::Ppo(PpoConfig::new()),
            (Algorithm::Dqn, None) => AgentConfig::Dqn(DqnConfig::new()),
            (Algorithm::Reinforce, None) => AgentConfig::Reinforce(ReinforceConfig::new()),
            (Algorithm::A3c, None) => AgentConfig::A3c(A3cConfig::new()),
            (Algorithm::Ppo, Some(p)) => {
                AgentConfig::Ppo(PpoConfig::load(p).with_context(|| load_error(p))?)
            }
            (Algorithm::Dqn, Some(p)) => {
                AgentConfig::Dqn(DqnConfig::load(p).with_context(|| load_error(p))?)
            }
            (Algorithm::Reinforce, Some(p)) => {
                AgentConfig::Reinforce(ReinforceConfig::load(p).with_context(|| load_error(p))?)
            }
            (Algorithm::A3c, Some(p)) => {
                AgentConfig::A3c(A3cConfig::load(p).with_context(|| load_error(p))?)
            }
        };
        if let Some(steps) = args.steps_per_epoch {
            match &mut config {
                AgentConfig::Ppo(c) => c.steps_per_epoch = steps,
                AgentConfig::Dqn(c) => c.steps_per_epoch = steps,
                _ => bail!(
                    "--steps-per-epoch applies to ppo and dqn; {} counts epochs in episodes",
                    args.algo
                ),
            }
        }
        Ok(config)
    }

    /// Builds the agent on `Autodiff<B>`.
    pub fn build<B: AutodiffBackend>(
        &self,
        env: &str,
        device: &B::Device,
        seed: u64,
    ) -> Result<Box<dyn Agent>> {
        let make = || privrl_envs::make(env).with_context(|| format!("--env {env}"));
        Ok(match self {
            AgentConfig::Ppo(c) => Box::new(Ppo::<B>::new(c.clone(), make()?, device, seed)?),
            AgentConfig::Dqn(c) => Box::new(Dqn::<B>::new(c.clone(), make()?, device, seed)?),
            AgentConfig::Reinforce(c) => {
                Box::new(Reinforce::<B>::new(c.clone(), make()?, device, seed)?)
            }
            AgentConfig::A3c(c) => Box::new(A3c::<B>::for_env(c.clone(), env, device, seed)?),
        })
    }
}

/// `config.json` of one run.
#[derive(Debug, Serialize)]
struct RunConfig<'a> {
    algo: Algorithm,
    env: &'a str,
    seed: u64,
    steps: u64,
    episodes: Option<usize>,
    stop_when_solved: bool,
    reward_threshold: Option<f64>,
    backend: BackendChoice,
    agent: &'a AgentConfig,
}

/// `summary.json` of one run.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TrainSummary {
    /// Algorithm.
    pub algo: Algorithm,
    /// Environment.
    pub env: String,
    /// Seed.
    pub seed: u64,
    /// Environment steps taken.
    pub env_steps: u64,
    /// Episodes finished.
    pub episodes: u64,
    /// Gradient updates applied.
    pub updates: u64,
    /// Mean return of the last 100 episodes at the end.
    pub final_mean_return_100: f64,
    /// The environment's reward threshold (the "solved" level).
    pub reward_threshold: Option<f64>,
    /// Environment steps when the mean of the last 100 episodes first reached the threshold.
    pub solved_at_steps: Option<u64>,
    /// Episodes when the mean of the last 100 episodes first reached the threshold.
    pub solved_at_episodes: Option<usize>,
    /// Wall-clock seconds of training.
    pub wall_s: f64,
    /// Environment steps per second, end to end (acting and updating).
    pub env_steps_per_s: f64,
}

fn reward_threshold(env: &str) -> Option<f64> {
    let wanted = env.trim().to_ascii_lowercase();
    registry()
        .into_iter()
        .find(|s| s.name == wanted || s.gymnasium_id.eq_ignore_ascii_case(&wanted))
        .and_then(|s| s.reward_threshold)
}

/// What one seed produced: its summary and its curve (x, 100-episode mean return).
#[derive(Debug, Clone)]
pub struct SeedResult {
    /// The run's summary.
    pub summary: TrainSummary,
    /// `(environment steps, mean return of the last 100 episodes)` per epoch.
    pub curve_by_steps: Vec<(f64, f64)>,
    /// `(episodes, mean return of the last 100 episodes)` per epoch.
    pub curve_by_episodes: Vec<(f64, f64)>,
    /// The run's plot.
    pub plot: PlotFiles,
}

/// Trains one seed into `runs/<suite>/<algo>-<env>-seed<S>/`.
fn train_seed<B: AutodiffBackend>(
    args: &TrainArgs,
    config: &AgentConfig,
    seed: u64,
    device: &B::Device,
    progress: Option<&JobProgress>,
    root: &Path,
) -> Result<SeedResult> {
    let threshold = reward_threshold(&args.env);
    let run = RunDir::create_in(root, &args.suite, run_name(args.algo, &args.env, seed))?;
    run.write_config(&RunConfig {
        algo: args.algo,
        env: &args.env,
        seed,
        steps: args.steps,
        episodes: args.episodes,
        stop_when_solved: args.stop_when_solved,
        reward_threshold: threshold,
        backend: args.backend,
        agent: config,
    })?;
    let mut agent = config.build::<B>(&args.env, device, seed)?;
    let mut metrics = run.metrics()?;
    let bar = progress.map(|p| p.bar(args.steps));
    let episode_limit = args.episodes.unwrap_or(usize::MAX);
    let start = Instant::now();
    let (mut by_steps, mut by_episodes) = (Vec::new(), Vec::new());
    let mut last: Option<EpochStats> = None;
    while agent.episode_log().env_steps < args.steps
        && agent.episode_log().episodes() < episode_limit
    {
        let stats = agent.train_epoch().with_context(|| {
            format!(
                "{} seed {seed}, epoch {}",
                args.algo,
                last.as_ref().map_or(1, |s| s.epoch + 1)
            )
        })?;
        metrics.write_row(&stats.row())?;
        if stats.mean_return_100.is_finite() {
            by_steps.push((stats.env_steps as f64, stats.mean_return_100));
            by_episodes.push((stats.episodes as f64, stats.mean_return_100));
        }
        if let Some(bar) = &bar {
            bar.set_position(stats.env_steps.min(args.steps));
            bar.set_message(format!("return {}", format_number(stats.mean_return_100)));
        }
        last = Some(stats);
        let solved = threshold.and_then(|t| agent.episode_log().first_solved(100, t));
        if args.stop_when_solved && solved.is_some() {
            break;
        }
    }
    let wall_s = start.elapsed().as_secs_f64();
    if args.checkpoint {
        agent.save_checkpoint(&run.file("checkpoint"))?;
    }
    let log = agent.episode_log();
    let solved = threshold.and_then(|t| log.first_solved(100, t));
    let summary = TrainSummary {
        algo: args.algo,
        env: args.env.clone(),
        seed,
        env_steps: log.env_steps,
        episodes: log.episodes() as u64,
        updates: last.as_ref().map_or(0, |s| s.updates),
        final_mean_return_100: log.mean_recent_return(100).unwrap_or(f64::NAN),
        reward_threshold: threshold,
        solved_at_steps: solved.map(|s| s.1),
        solved_at_episodes: solved.map(|s| s.0),
        wall_s,
        env_steps_per_s: log.env_steps as f64 / wall_s.max(1e-9),
    };
    let (x_label, curve) = curve_axis(args.algo, &by_steps, &by_episodes);
    let plot = LearningCurves::new(format!("{} on {}, seed {seed}", args.algo, args.env))
        .x_label(x_label)
        .y_label("mean return of the last 100 episodes")
        .series(format!("seed {seed}"), vec![curve.to_vec()])
        .save(&run.file("curve"))?;
    run.write_summary(&summary)?;
    Ok(SeedResult {
        summary,
        curve_by_steps: by_steps,
        curve_by_episodes: by_episodes,
        plot,
    })
}

/// REINFORCE is measured in episodes, the others in environment steps.
fn curve_axis<'a>(
    algo: Algorithm,
    by_steps: &'a [(f64, f64)],
    by_episodes: &'a [(f64, f64)],
) -> (&'static str, &'a [(f64, f64)]) {
    match algo {
        Algorithm::Reinforce => ("episodes", by_episodes),
        _ => ("environment steps", by_steps),
    }
}

fn run_name(algo: Algorithm, env: &str, seed: u64) -> RunName {
    RunName::new(algo).part(env).seed(seed)
}

struct TrainTask {
    args: TrainArgs,
    config: AgentConfig,
    seeds: Vec<u64>,
    /// Root of the run directories (`runs_root()` outside tests).
    root: PathBuf,
}

impl BackendTask for TrainTask {
    type Output = Vec<(String, Result<SeedResult>)>;

    fn run<B: Backend>(self, device: B::Device) -> Result<Self::Output> {
        let TrainTask {
            args,
            config,
            seeds,
            root,
        } = self;
        if seeds.len() == 1 {
            let seed = seeds[0];
            let name = run_name(args.algo, &args.env, seed).to_string();
            return Ok(vec![(
                name,
                train_seed::<Autodiff<B>>(&args, &config, seed, &device, None, &root),
            )]);
        }
        let jobs = seeds
            .iter()
            .map(|&seed| Job::new(run_name(args.algo, &args.env, seed).to_string(), seed))
            .collect();
        let outcomes = run_parallel(jobs, args.threads, |seed, progress| {
            train_seed::<Autodiff<B>>(&args, &config, seed, &device, Some(progress), &root)
        })?;
        Ok(outcomes.0.into_iter().map(|o| (o.name, o.result)).collect())
    }
}

/// Runs `train` and prints where the results went.
pub fn run(args: TrainArgs) -> Result<()> {
    let config = AgentConfig::resolve(&args)?;
    let all_seeds: Vec<u64> = match &args.seeds {
        Some(seeds) => seeds.0.clone(),
        None => vec![args.seed],
    };
    let shard = args.shard.unwrap_or_default();
    let seeds = shard.select(all_seeds.iter().copied());
    if seeds.is_empty() {
        bail!(
            "--shard {shard} selects none of the {} seeds",
            all_seeds.len()
        );
    }
    let sweep = args.seeds.is_some();
    let results = dispatch(
        args.backend,
        TrainTask {
            args: args.clone(),
            config: config.clone(),
            seeds: seeds.clone(),
            root: runs_root(),
        },
    )?;
    let dir = suite_dir(&args.suite)?;
    if sweep {
        let outcomes = crate::sweep::Outcomes(
            results
                .iter()
                .map(|(name, r)| crate::sweep::JobOutcome {
                    name: name.clone(),
                    result: r.as_ref().map(|_| ()).map_err(|e| anyhow::anyhow!("{e:#}")),
                    elapsed: Default::default(),
                })
                .collect(),
        );
        ShardManifest::from_outcomes(&args.suite, shard, &outcomes).write(&dir)?;
    }
    let mut ok = Vec::new();
    let mut failed = Vec::new();
    for (name, result) in results {
        match result {
            Ok(r) => ok.push(r),
            Err(e) => failed.push(format!("  {name}: {e:#}")),
        }
    }
    for r in &ok {
        let s = &r.summary;
        println!(
            "{} {} seed {}: {} steps, {} episodes, final mean return (100) {}, solved at {} steps / {} episodes, {:.0} steps/s",
            s.algo,
            s.env,
            s.seed,
            s.env_steps,
            s.episodes,
            format_number(s.final_mean_return_100),
            s.solved_at_steps.map_or("-".into(), |v| v.to_string()),
            s.solved_at_episodes.map_or("-".into(), |v| v.to_string()),
            s.env_steps_per_s,
        );
    }
    if sweep && shard.count() > 1 {
        // The last shard to finish draws the report over every shard's runs.
        match merge_shards(&dir) {
            Ok(_) => {
                let all = load_suite_results(&dir, &args, &all_seeds)?;
                let path = write_sweep_report(&args, &dir, &all)?;
                println!(
                    "all {} shards done; wrote {}",
                    shard.count(),
                    path.display()
                );
            }
            Err(_) => println!(
                "shard {shard} done; the last shard to finish writes {}/report.md",
                dir.display()
            ),
        }
    } else if sweep && ok.len() > 1 {
        let path = write_sweep_report(&args, &dir, &ok)?;
        println!("wrote {}", path.display());
        if failed.is_empty() {
            merge_shards(&dir)?;
        }
    } else if let Some(r) = ok.first() {
        println!("plot: {}", r.plot.png.display());
    }
    if !failed.is_empty() {
        bail!(
            "{} of {} seeds failed:\n{}",
            failed.len(),
            seeds.len(),
            failed.join("\n")
        );
    }
    Ok(())
}

/// Reads back the runs of `seeds` from the suite directory (for a report over all shards).
fn load_suite_results(dir: &Path, args: &TrainArgs, seeds: &[u64]) -> Result<Vec<SeedResult>> {
    seeds
        .iter()
        .map(|&seed| {
            let run = dir.join(run_name(args.algo, &args.env, seed).as_str());
            let summary: TrainSummary = crate::run::read_json(&run.join(crate::run::SUMMARY_FILE))?;
            let metrics = crate::run::read_metrics(&run.join(crate::run::METRICS_FILE))?;
            let finite =
                |points: Vec<(f64, f64)>| points.into_iter().filter(|p| p.1.is_finite()).collect();
            Ok(SeedResult {
                summary,
                curve_by_steps: finite(metrics.xy("env_steps", "mean_return_100")?),
                curve_by_episodes: finite(metrics.xy("episodes", "mean_return_100")?),
                plot: PlotFiles {
                    svg: run.join("curve.svg"),
                    png: run.join("curve.png"),
                },
            })
        })
        .collect()
}

/// Sweep summary written next to the runs.
#[derive(Debug, Serialize)]
struct SweepSummary {
    algo: Algorithm,
    env: String,
    seeds: Vec<u64>,
    solved_seeds: usize,
    /// Median over seeds of the steps to solve (unsolved seeds count as not solved: the
    /// median is over all seeds, with unsolved ones treated as +∞).
    median_solved_at_steps: Option<f64>,
    median_solved_at_episodes: Option<f64>,
    median_final_mean_return_100: f64,
    median_env_steps_per_s: f64,
}

/// Median with unsolved seeds as +∞; `None` if that median is itself unsolved.
fn median_with_unsolved(values: &[Option<f64>]) -> Option<f64> {
    let mut v: Vec<f64> = values.iter().map(|x| x.unwrap_or(f64::INFINITY)).collect();
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let m = crate::report::plot::percentile(&v, 50.0);
    m.is_finite().then_some(m)
}

fn write_sweep_report(args: &TrainArgs, dir: &Path, results: &[SeedResult]) -> Result<PathBuf> {
    let stem = format!("{}-{}", args.algo, args.env.to_ascii_lowercase());
    let (x_label, _) = curve_axis(args.algo, &[], &[]);
    let curves = results
        .iter()
        .map(|r| {
            curve_axis(args.algo, &r.curve_by_steps, &r.curve_by_episodes)
                .1
                .to_vec()
        })
        .collect();
    let plot = LearningCurves::new(format!(
        "{} on {}: median and 10th–90th percentile over {} seeds",
        args.algo,
        args.env,
        results.len()
    ))
    .x_label(x_label)
    .y_label("mean return of the last 100 episodes")
    .series(args.algo.to_string(), curves)
    .save(&dir.join(format!("{stem}-curve")))?;
    let summary = SweepSummary {
        algo: args.algo,
        env: args.env.clone(),
        seeds: results.iter().map(|r| r.summary.seed).collect(),
        solved_seeds: results
            .iter()
            .filter(|r| r.summary.solved_at_steps.is_some())
            .count(),
        median_solved_at_steps: median_with_unsolved(
            &results
                .iter()
                .map(|r| r.summary.solved_at_steps.map(|s| s as f64))
                .collect::<Vec<_>>(),
        ),
        median_solved_at_episodes: median_with_unsolved(
            &results
                .iter()
                .map(|r| r.summary.solved_at_episodes.map(|s| s as f64))
                .collect::<Vec<_>>(),
        ),
        median_final_mean_return_100: median(
            &results
                .iter()
                .map(|r| r.summary.final_mean_return_100)
                .collect::<Vec<_>>(),
        ),
        median_env_steps_per_s: median(
            &results
                .iter()
                .map(|r| r.summary.env_steps_per_s)
                .collect::<Vec<_>>(),
        ),
    };
    write_json(&dir.join(format!("{stem}-summary.json")), &summary)?;

    let mut report = Report::new(dir, &format!("{} on {}", args.algo, args.env));
    let threshold = results[0].summary.reward_threshold;
    report.paragraph(&format!(
        "{} seeds, up to {} environment steps each{}. \"Solved\" is the first point where the mean \
         return of the last 100 episodes reaches {}.",
        results.len(),
        args.steps,
        args.episodes.map_or(String::new(), |e| format!(" or {e} episodes")),
        threshold.map_or("the reward threshold".into(), format_number),
    ));
    let cell = |v: Option<f64>| v.map_or(Cell::from("not solved"), Cell::from);
    let mut rows: Vec<Vec<Cell>> = results
        .iter()
        .map(|r| {
            let s = &r.summary;
            vec![
                Cell::from(s.seed),
                cell(s.solved_at_steps.map(|v| v as f64)),
                cell(s.solved_at_episodes.map(|v| v as f64)),
                Cell::from(s.final_mean_return_100),
                Cell::from(s.env_steps_per_s.round()),
            ]
        })
        .collect();
    rows.push(vec![
        Cell::from("median"),
        cell(summary.median_solved_at_steps),
        cell(summary.median_solved_at_episodes),
        Cell::from(summary.median_final_mean_return_100),
        Cell::from(summary.median_env_steps_per_s.round()),
    ]);
    report.table(
        &[
            "seed",
            "solved at (steps)",
            "solved at (episodes)",
            "final mean return (100)",
            "steps/s",
        ],
        rows,
    );
    report.plot(
        "Mean return of the last 100 episodes: median over seeds, 10th–90th percentile band",
        &plot,
    );
    let seeds = args.seeds.as_ref().map_or(args.seed.to_string(), |s| {
        s.0.iter().map(u64::to_string).collect::<Vec<_>>().join(",")
    });
    report.reproduce([format!(
        "cargo xtask train --algo {} --env {} --seeds {seeds} --steps {}{}{}",
        args.algo,
        args.env,
        args.steps,
        args.episodes
            .map_or(String::new(), |e| format!(" --episodes {e}")),
        if args.stop_when_solved {
            " --stop-when-solved"
        } else {
            ""
        },
    )]);
    report.write()
}

// ---------------------------------------------------------------------------------------------
// For `cargo xtask bench` and `cargo xtask quickstart`
// ---------------------------------------------------------------------------------------------

/// PPO end-to-end throughput: environment steps per second of Spinning Up's PPO ((64, 64)
/// tanh, 4000 steps per epoch, 80 + 80 update iterations) on CartPole-v1, over `epochs`
/// epochs after one warm-up epoch.
pub struct PpoThroughput {
    /// Epochs to time.
    pub epochs: usize,
}

impl BackendTask for PpoThroughput {
    type Output = f64;

    fn run<B: Backend>(self, device: B::Device) -> Result<f64> {
        let mut ppo = Ppo::<Autodiff<B>>::new(
            PpoConfig::new(),
            privrl_envs::make("CartPole-v1")?,
            &device,
            0,
        )?;
        ppo.train_epoch()?;
        let steps_before = ppo.episode_log().env_steps;
        let start = Instant::now();
        for _ in 0..self.epochs {
            ppo.train_epoch()?;
        }
        Ok((ppo.episode_log().env_steps - steps_before) as f64 / start.elapsed().as_secs_f64())
    }
}

/// [`PpoThroughput`] on the chosen backend.
pub fn bench_ppo_steps_per_s(backend: BackendChoice, epochs: usize) -> Result<f64> {
    dispatch(backend, PpoThroughput { epochs })
}

/// DQN update throughput: gradient steps per second on batches of 128 transitions sampled from
/// a replay buffer, with the default (128, 128) Q-network on CartPole-v1 (sampling, target
/// computation, forward, backward and Adam step).
pub struct DqnThroughput {
    /// Updates to time (after 20 warm-up updates).
    pub updates: usize,
}

impl BackendTask for DqnThroughput {
    type Output = f64;

    fn run<B: Backend>(self, device: B::Device) -> Result<f64> {
        let config = DqnConfig::new()
            .with_batch_size(128)
            .with_learning_starts(usize::MAX);
        let mut dqn =
            Dqn::<Autodiff<B>>::new(config, privrl_envs::make("CartPole-v1")?, &device, 0)?;
        for _ in 0..2_000 {
            dqn.step()?;
        }
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(0);
        let mut time = |n: usize| -> Result<f64> {
            let start = Instant::now();
            for _ in 0..n {
                let batch = dqn.replay().sample(128, &mut rng);
                dqn.update(&batch)?;
            }
            Ok(start.elapsed().as_secs_f64())
        };
        time(20)?;
        Ok(self.updates as f64 / time(self.updates)?)
    }
}

/// [`DqnThroughput`] on the chosen backend.
pub fn bench_dqn_updates_per_s(backend: BackendChoice, updates: usize) -> Result<f64> {
    dispatch(backend, DqnThroughput { updates })
}

/// The quickstart's short PPO run: `steps` environment steps of PPO on CartPole-v1 with the
/// kickstarting paper's 1000 steps per epoch, seeds `seeds`, in `runs/<suite>/`. Returns the
/// per-seed summaries and the plot of the median curve.
pub fn quick_ppo(
    suite: &str,
    seeds: &[u64],
    steps: u64,
    threads: usize,
) -> Result<(Vec<TrainSummary>, PlotFiles)> {
    quick_ppo_in(&runs_root(), suite, seeds, steps, threads)
}

/// [`quick_ppo`] under the run root `root`.
fn quick_ppo_in(
    root: &Path,
    suite: &str,
    seeds: &[u64],
    steps: u64,
    threads: usize,
) -> Result<(Vec<TrainSummary>, PlotFiles)> {
    let args = TrainArgs {
        algo: Algorithm::Ppo,
        env: "CartPole-v1".into(),
        seed: seeds.first().copied().unwrap_or(0),
        seeds: Some(Seeds(seeds.to_vec())),
        steps,
        episodes: None,
        stop_when_solved: false,
        steps_per_epoch: Some(1000),
        config: None,
        checkpoint: false,
        backend: BackendChoice::default(),
        suite: suite.into(),
        shard: None,
        threads,
    };
    let config = AgentConfig::resolve(&args)?;
    let results = dispatch(
        args.backend,
        TrainTask {
            args: args.clone(),
            config,
            seeds: seeds.to_vec(),
            root: root.to_path_buf(),
        },
    )?;
    let results: Vec<SeedResult> = results.into_iter().map(|(_, r)| r).collect::<Result<_>>()?;
    let plot = LearningCurves::new(format!(
        "PPO on CartPole-v1, {} seeds (median, 10th–90th percentile)",
        results.len()
    ))
    .y_label("mean return of the last 100 episodes")
    .series(
        "ppo",
        results.iter().map(|r| r.curve_by_steps.clone()).collect(),
    )
    .save(&root.join(suite).join("ppo-cartpole-v1-curve"))?;
    Ok((results.into_iter().map(|r| r.summary).collect(), plot))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(algo: Algorithm) -> TrainArgs {
        TrainArgs {
            algo,
            env: "CartPole-v1".into(),
            seed: 0,
            seeds: None,
            steps: 1000,
            episodes: None,
            stop_when_solved: false,
            steps_per_epoch: None,
            config: None,
            checkpoint: false,
            backend: BackendChoice::default(),
            suite: "test".into(),
            shard: None,
            threads: 1,
        }
    }

    #[test]
    fn unsolved_seeds_count_as_infinite_in_the_median() {
        assert_eq!(
            median_with_unsolved(&[Some(3.0), None, Some(1.0)]),
            Some(3.0)
        );
        assert_eq!(median_with_unsolved(&[Some(3.0), None, None]), None);
        assert_eq!(median_with_unsolved(&[]), None);
        assert_eq!(median(&[f64::NAN, 2.0, 4.0]), 3.0);
    }

    #[test]
    fn reward_threshold_accepts_both_spellings() {
        assert_eq!(reward_threshold("CartPole-v1"), Some(475.0));
        assert_eq!(reward_threshold("cartpole-v0"), Some(195.0));
        assert_eq!(reward_threshold("nope"), None);
    }

    #[test]
    fn configs_resolve_with_overrides_and_round_trip_through_json() {
        let mut a = args(Algorithm::Ppo);
        a.steps_per_epoch = Some(1000);
        let AgentConfig::Ppo(ppo) = AgentConfig::resolve(&a).unwrap() else {
            panic!("expected a PPO config")
        };
        assert_eq!(ppo.steps_per_epoch, 1000);
        // A run's `agent` section loads back as a --config file.
        let dir = crate::run::tests::temp_dir("train-config");
        let path = dir.join("ppo.json");
        std::fs::write(
            &path,
            serde_json::to_string(&AgentConfig::Ppo(ppo)).unwrap(),
        )
        .unwrap();
        a.config = Some(path);
        a.steps_per_epoch = None;
        let AgentConfig::Ppo(loaded) = AgentConfig::resolve(&a).unwrap() else {
            panic!("expected a PPO config")
        };
        assert_eq!(loaded.steps_per_epoch, 1000);
        let mut r = args(Algorithm::Reinforce);
        r.steps_per_epoch = Some(10);
        assert!(AgentConfig::resolve(&r).is_err());
    }

    #[test]
    fn quick_ppo_and_dqn_bench_run() {
        let root = crate::run::tests::temp_dir("train-quick");
        let (summaries, plot) = quick_ppo_in(&root, "quick", &[0, 1], 2000, 1).unwrap();
        assert_eq!(summaries.len(), 2);
        assert!(plot.png.is_file());
        assert!(bench_dqn_updates_per_s(BackendChoice::default(), 5).unwrap() > 0.0);
    }

    #[test]
    fn train_seed_writes_a_complete_run() {
        let root = crate::run::tests::temp_dir("train-seed");
        let mut a = args(Algorithm::Reinforce);
        a.suite = "test".into();
        a.episodes = Some(3);
        let config = AgentConfig::resolve(&a).unwrap();
        let result = train_seed::<Autodiff<burn::backend::NdArray>>(
            &a,
            &config,
            4,
            &Default::default(),
            None,
            &root,
        )
        .unwrap();
        assert_eq!(result.summary.episodes, 3);
        let run = root.join("test").join("reinforce-cartpole-v1-seed4");
        crate::run::tests::assert_complete_run(&run);
        let metrics = crate::run::read_metrics(&run.join("metrics.csv")).unwrap();
        assert_eq!(metrics.len(), 3);
        assert_eq!(
            metrics.columns[..5],
            [
                "epoch",
                "env_steps",
                "episodes",
                "updates",
                "mean_return_100"
            ]
        );
    }
}

//! One seed's training run: its run directory (`config.json`, `metrics.csv`, `summary.json`,
//! the learning curve), and the task that trains every seed of a sweep in parallel.

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result};
use burn::backend::Autodiff;
use burn::tensor::backend::{AutodiffBackend, Backend};
use privrl_agents::EpochStats;
use privrl_envs::registry;
use serde::{Deserialize, Serialize};

use super::{AgentConfig, Algorithm, TrainArgs};
use crate::backend::{BackendChoice, BackendTask};
use crate::report::format_number;
use crate::report::plot::{LearningCurves, PlotFiles};
use crate::run::{RunDir, RunName};
use crate::sweep::{run_parallel, Job, JobProgress};

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
    /// dp-ppo: ε per episode at the end (one rollout's steps; `null` for the non-private
    /// algorithms, and for σ = 0, whose ε is ∞).
    #[serde(default)]
    pub epsilon_per_episode: Option<f64>,
    /// dp-ppo: ε composing every step of the run (conservative; `null` as above).
    #[serde(default)]
    pub epsilon_whole_run: Option<f64>,
}

/// The value of the extra column `name` of an epoch's stats, if the algorithm has it.
fn extra(stats: &EpochStats, name: &str) -> Option<f64> {
    stats
        .extra
        .iter()
        .find(|(n, _)| *n == name)
        .map(|&(_, v)| v)
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
        let epsilon = extra(&stats, "epsilon_per_episode");
        if let Some(bar) = &bar {
            bar.set_position(stats.env_steps.min(args.steps));
            bar.set_message(match epsilon {
                Some(e) => format!(
                    "return {}, ε {} per episode",
                    format_number(stats.mean_return_100),
                    format_number(e)
                ),
                None => format!("return {}", format_number(stats.mean_return_100)),
            });
        } else if let Some(e) = epsilon {
            // One seed runs without a bar: the privacy spent, rollout by rollout.
            let (adjacency, delta) = match config {
                AgentConfig::DpPpo(c) => (c.adjacency.name(), c.delta),
                _ => ("-", f64::NAN),
            };
            tracing::info!(
                "{} seed {seed}, rollout {}: {} env steps, mean return (100) {}, ε = {} per episode ({adjacency}, δ = {delta:e}; every step of the run composed: {})",
                args.algo,
                stats.epoch,
                stats.env_steps,
                format_number(stats.mean_return_100),
                format_number(e),
                format_number(extra(&stats, "epsilon_whole_run").unwrap_or(f64::NAN)),
            );
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
        epsilon_per_episode: last
            .as_ref()
            .and_then(|s| extra(s, "epsilon_per_episode"))
            .filter(|e| e.is_finite()),
        epsilon_whole_run: last
            .as_ref()
            .and_then(|s| extra(s, "epsilon_whole_run"))
            .filter(|e| e.is_finite()),
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
pub(super) fn curve_axis<'a>(
    algo: Algorithm,
    by_steps: &'a [(f64, f64)],
    by_episodes: &'a [(f64, f64)],
) -> (&'static str, &'a [(f64, f64)]) {
    match algo {
        Algorithm::Reinforce => ("episodes", by_episodes),
        _ => ("environment steps", by_steps),
    }
}

pub(super) fn run_name(algo: Algorithm, env: &str, seed: u64) -> RunName {
    RunName::new(algo).part(env).seed(seed)
}

pub(super) struct TrainTask {
    pub(super) args: TrainArgs,
    pub(super) config: AgentConfig,
    pub(super) seeds: Vec<u64>,
    /// Root of the run directories (`runs_root()` outside tests).
    pub(super) root: PathBuf,
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::train::tests::args;

    #[test]
    fn reward_threshold_accepts_both_spellings() {
        assert_eq!(reward_threshold("CartPole-v1"), Some(475.0));
        assert_eq!(reward_threshold("cartpole-v0"), Some(195.0));
        assert_eq!(reward_threshold("nope"), None);
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

    #[test]
    fn a_dp_ppo_run_records_its_epsilon_per_episode() {
        let root = crate::run::tests::temp_dir("train-dp-ppo");
        let mut a = args(Algorithm::DpPpo);
        a.steps = 500;
        a.dp_ppo.target_epsilon = Some(2.0);
        a.dp_ppo.episodes_per_rollout = Some(16);
        a.dp_ppo.minibatch_episodes = Some(8);
        a.dp_ppo.num_envs = Some(4);
        let config = AgentConfig::resolve(&a).unwrap();
        let result = train_seed::<Autodiff<burn::backend::NdArray>>(
            &a,
            &config,
            1,
            &Default::default(),
            None,
            &root,
        )
        .unwrap();
        let epsilon = result.summary.epsilon_per_episode.unwrap();
        assert!(epsilon <= 2.0 && epsilon > 1.9, "{epsilon}");
        assert!(result.summary.epsilon_whole_run.unwrap() > epsilon);
        assert_eq!(
            result.summary.episodes % 16,
            0,
            "whole rollouts of 16 episodes"
        );
        let run = root.join("test").join("dp-ppo-cartpole-v1-seed1");
        crate::run::tests::assert_complete_run(&run);
        let metrics = crate::run::read_metrics(&run.join("metrics.csv")).unwrap();
        assert!(metrics.columns.iter().any(|c| c == "epsilon_per_episode"));
    }
}

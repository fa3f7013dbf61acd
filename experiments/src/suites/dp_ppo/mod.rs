//! `cargo xtask suite dp-ppo [--quick]`: DP-PPO on CartPole-v1 with an episode as the unit of
//! privacy, the privacy–utility frontier over ε per episode (docs/dp-ppo.md).
//!
//! Resumable units on the template of [`crate::unit`]: one file per ε × seed,
//! `<dir>/units/<eps>-seed<k>/summary.json`, written atomically as it finishes, planned
//! seed-major; a rerun runs only the missing ones and the report is regenerated from every unit
//! on disk, saying how many.
//!
//! The criterion is fixed here, before any run ([`FRONTIER_EPSILONS`], [`MIN_SEEDS`],
//! [`SOLVED_RETURN`], [`point_solved`]): a point ε is **solved** when at least 5 seeds have
//! finished and the mean over seeds of each seed's final mean return of its last 100 training
//! episodes is ≥ 475. The headline: the smallest solved ε, visible if it is ≤ 1 per episode at
//! δ = 1e-5.
//!
//! `--leakage` runs the closed loop instead (module `leakage`, its criterion fixed there too): RGI
//! against plain PPO's gradient and against DP-PPO's release at every point of the frontier,
//! on the same room samples as `suite leakage`; the report then has both tables.

mod leakage;

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{ensure, Context, Result};
use burn::backend::Autodiff;
use burn::config::Config;
use burn::tensor::backend::Backend;
use clap::Args;
use privrl_agents::{Agent, DpPpo, DpPpoConfig, DpPpoNoise};
use serde::{Deserialize, Serialize};

use crate::backend::{dispatch, BackendChoice, BackendTask};
use crate::report::plot::{aggregate_seeds, median, LearningCurves, Line, LineChart, SeedCurves};
use crate::report::{format_mean_std, format_number, Cell, Report};
use crate::summary::{Headline, SuiteOutcome};
use crate::sweep::{run_parallel, Job, Seeds};
use crate::unit::{seed_major, Unit, UnitStore};

use self::leakage::{LeakageSizes, LeakageTask, LeakageUnit};

/// The frontier's ε per episode (δ = 1e-5); `None` is ε = ∞ (σ = 0, clipping kept).
pub const FRONTIER_EPSILONS: [Option<f64>; 6] =
    [Some(0.5), Some(1.0), Some(2.0), Some(4.0), Some(8.0), None];
/// Seeds a point needs before it can count as solved.
pub const MIN_SEEDS: usize = 5;
/// CartPole-v1's reward threshold: the mean return of the last 100 episodes that solves it.
pub const SOLVED_RETURN: f64 = 475.0;
/// The uniform random policy's mean return on CartPole-v1 (about 22), the trivial baseline.
pub const RANDOM_RETURN: f64 = 22.0;
/// The ε per episode the issue asks CartPole to be solved at.
pub const TARGET_EPSILON: f64 = 1.0;
/// δ of every ε of the suite.
pub const DELTA: f64 = 1e-5;
const ENV: &str = "CartPole-v1";

/// Arguments of `suite dp-ppo`.
#[derive(Args, Debug, Clone)]
pub struct DpPpoSuiteArgs {
    /// Seconds on one core: ε ∈ {1, ∞}, one seed, 200,000 steps of a small configuration,
    /// written under runs/dp-ppo/ (not results/). It shows whether the private policy learns,
    /// not the frontier.
    #[arg(long)]
    pub quick: bool,
    /// Seeds: `0..5`, `0..=4`, `0,3,7` (default 0..5; --quick: 0).
    #[arg(long)]
    pub seeds: Option<Seeds>,
    /// Only these points of the frontier, target ε per episode, `inf` for σ = 0 with clipping
    /// kept: `1,inf` (default: every frontier point, 0.5,1,2,4,8,inf; --quick: 1,inf). The
    /// report still lists every point, with the units that exist.
    #[arg(long, value_delimiter = ',', value_parser = parse_point)]
    pub epsilons: Option<Vec<Point>>,
    /// Environment steps per unit (default 8,000,000; --quick: 200,000): a unit stops after
    /// the first rollout that reaches them. They are a sum of the private episodes' lengths,
    /// so that decision reads the data, and ε per episode does not cover it (docs/dp-ppo.md).
    #[arg(long)]
    pub steps: Option<u64>,
    /// Rollouts per unit, a number fixed in advance, instead of --steps: the stop then reads
    /// nothing of the data, and ε per episode covers everything the run releases.
    #[arg(long, conflicts_with = "steps")]
    pub rollouts: Option<u64>,
    /// A DpPpoConfig as JSON (its noise is replaced by each point's target ε); otherwise the
    /// suite's large-batch defaults: 1024 episodes per rollout, an expected 256 per step, one
    /// epoch, C tracking the median episode norm, Adam at 3e-2.
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Where units and report go (default results/dp-ppo; --quick: runs/dp-ppo).
    #[arg(long)]
    pub dir: Option<PathBuf>,
    /// Units run at once (0: one per core).
    #[arg(long, default_value_t = 0)]
    pub threads: usize,
    /// Backend.
    #[arg(long, value_enum, default_value_t = BackendChoice::default())]
    pub backend: BackendChoice,
    /// Run the closed loop instead of the training units: RGI on one step's released update
    /// (plain PPO's gradient, then DP-PPO's at every frontier ε, σ calibrated by the engine at
    /// the suite's q and K), on the leakage suite's room samples (full: 40 samples, 32 px,
    /// 1000 iterations per stage; --quick: 20, 16 px, 300). One unit per release, under
    /// DIR/leakage/units; the report shows both tables from whatever units exist.
    #[arg(long)]
    pub leakage: bool,
    /// Seed of the closed loop's samples, networks, attack and noise (0: the leakage suite's
    /// samples).
    #[arg(long, default_value_t = 0)]
    pub leakage_seed: u64,
    /// Room samples the closed loop attacks (default: 40; --quick: 20).
    #[arg(long)]
    pub leakage_samples: Option<usize>,
}

impl DpPpoSuiteArgs {
    /// `--quick` at `seed` (the quickstart's DP-PPO part): ε ∈ {1, ∞}, 200,000 steps.
    pub fn quick(seed: u64, backend: BackendChoice, threads: usize) -> Self {
        Self {
            quick: true,
            seeds: Some(Seeds(vec![seed])),
            epsilons: None,
            steps: None,
            rollouts: None,
            config: None,
            dir: None,
            threads,
            backend,
            leakage: false,
            leakage_seed: 0,
            leakage_samples: None,
        }
    }
}

/// One finished unit: one ε × seed.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct DpPpoUnit {
    /// Target ε per episode; `None`: ∞ (σ = 0).
    pub target_epsilon: Option<f64>,
    /// Seed.
    pub seed: u64,
    /// The agent's full configuration.
    pub config: DpPpoConfig,
    /// The commit the unit ran at.
    pub commit: Option<String>,
    /// σ, calibrated.
    pub noise_multiplier: f64,
    /// ε per episode at [`DELTA`] (`None` for σ = 0, ε = ∞).
    pub epsilon_per_episode: Option<f64>,
    /// ε composing every step of the run (conservative; `None` for σ = 0).
    pub epsilon_whole_run: Option<f64>,
    /// Environment steps of the collected episodes.
    pub env_steps: u64,
    /// Episodes.
    pub episodes: u64,
    /// Mean return of the last 100 episodes at the end (outside the guarantee).
    pub final_mean_return_100: f64,
    /// Environment steps when the last-100 mean first reached [`SOLVED_RETURN`].
    pub solved_at_env_steps: Option<u64>,
    /// The number of rollouts fixed in advance that the unit stopped at (`--rollouts`);
    /// `None`: it stopped at the first rollout that reached its environment-step budget, a
    /// decision that reads the episodes' lengths (units before `--rollouts` existed).
    pub rollouts_budget: Option<u64>,
    /// Per rollout: (environment steps, mean return of the last 100 episodes, whole-run ε;
    /// `None` for ε = ∞).
    pub curve: Vec<(u64, f64, Option<f64>)>,
    /// Wall-clock seconds.
    pub wall_s: f64,
}

/// One point of the frontier.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Point(pub Option<f64>);

/// A point of `--epsilons`: `inf` (or `∞`) is σ = 0, anything else a target ε > 0 per episode.
fn parse_point(spec: &str) -> Result<Point> {
    let spec = spec.trim();
    if matches!(spec, "inf" | "∞") {
        return Ok(Point(None));
    }
    let epsilon: f64 = spec
        .parse()
        .with_context(|| format!("--epsilons: {spec:?} is neither a number nor `inf`"))?;
    ensure!(
        epsilon.is_finite() && epsilon > 0.0,
        "--epsilons: a target ε must be positive and finite (got {spec}; `inf` is σ = 0)"
    );
    Ok(Point(Some(epsilon)))
}

impl Point {
    fn slug(self) -> String {
        match self.0 {
            Some(e) => format!("eps{e}"),
            None => "eps-inf".into(),
        }
    }

    fn label(self) -> String {
        self.0.map_or("∞".into(), format_number)
    }

    /// The units that ran at this point.
    fn units_in(self, units: &[DpPpoUnit]) -> impl Iterator<Item = &DpPpoUnit> {
        units.iter().filter(move |u| u.target_epsilon == self.0)
    }

    /// The final mean returns (last 100 episodes) of this point's units: what the criterion
    /// judges.
    fn final_means(self, units: &[DpPpoUnit]) -> Vec<f64> {
        self.units_in(units)
            .map(|u| u.final_mean_return_100)
            .collect()
    }
}

impl Unit for DpPpoUnit {
    type Setting = Point;
    fn path(root: &Path, setting: &Point, seed: u64) -> PathBuf {
        root.join(format!("{}-seed{seed}", setting.slug()))
            .join("summary.json")
    }
}

/// The suite's defaults, after the DP literature's large-batch advice (docs/dp-ppo.md): 1024
/// episodes per rollout, an expected 256 per step (q = 1/4), one epoch (K = 4 steps per
/// rollout), C tracking the median episode norm, Adam at 3·10⁻². Fixed before the frontier's
/// units ran, from tuning runs at ε = 1 on seeds 100 and 101 only (the frontier judges seeds
/// 0–4; the runs are listed in docs/dp-ppo.md, "How the setting was chosen").
pub fn suite_config() -> DpPpoConfig {
    DpPpoConfig::new()
        .with_episodes_per_rollout(1024)
        .with_minibatch_episodes(256)
        .with_epochs(1)
        .with_num_envs(256)
        .with_lr(3e-2)
        .with_adaptive_clip_quantile(Some(0.5))
}

/// Environment steps per frontier unit: the tuning runs of [`suite_config`] at ε = 1 (seeds 100
/// and 101) first reached a last-100 mean of 475 at 4.7 and 4.2 million steps, and both dipped
/// below it again later (to 470.8 and 470.4), so the budget leaves room for both.
pub const FRONTIER_STEPS: u64 = 8_000_000;

/// Whether a point is solved by the criterion, from its units' final last-100 means: at least
/// [`MIN_SEEDS`] of them and their mean ≥ [`SOLVED_RETURN`].
pub fn point_solved(final_means: &[f64]) -> bool {
    final_means.len() >= MIN_SEEDS
        && final_means.iter().sum::<f64>() / final_means.len() as f64 >= SOLVED_RETURN
}

/// The quick mode's criterion (fixed before any quick run): at ε = [`TARGET_EPSILON`] per
/// episode, the final mean return of the last 100 training episodes is at least this, about
/// twice the uniform random policy's on CartPole-v1 (≈ 22). One seed and 200,000 steps cannot
/// show CartPole solved (475) or the frontier; they can show the private policy learning.
pub const QUICK_LEARNED_RETURN: f64 = 45.0;

/// The quick mode's headline ([`QUICK_LEARNED_RETURN`]), from the ε = 1 unit(s) on disk.
fn quick_headline(units: &[DpPpoUnit]) -> Headline {
    let finals = Point(Some(TARGET_EPSILON)).final_means(units);
    let mean = (!finals.is_empty()).then(|| finals.iter().sum::<f64>() / finals.len() as f64);
    Headline {
        effect: format!(
            "DP-PPO learns CartPole-v1 at ε = {TARGET_EPSILON} per episode (δ = {DELTA}) in the \
             quick budget: final mean return of the last 100 episodes ≥ {QUICK_LEARNED_RETURN} \
             (random policy ≈ 22; quick: one seed, 200,000 steps, so not the frontier)"
        ),
        measured: match mean {
            Some(m) => format!(
                "final mean return (100) at ε = {TARGET_EPSILON}: {}",
                format_number(m)
            ),
            None => "no ε = 1 unit".into(),
        },
        visible: mean.is_some_and(|m| m >= QUICK_LEARNED_RETURN),
    }
}

/// When a unit stops.
#[derive(Debug, Clone, Copy)]
enum Budget {
    /// After the first rollout whose environment steps reach this (reads the episodes'
    /// lengths).
    EnvSteps(u64),
    /// After this many rollouts (public).
    Rollouts(u64),
}

impl Budget {
    fn reached<B: burn::tensor::backend::AutodiffBackend>(self, agent: &DpPpo<B>) -> bool {
        match self {
            Budget::EnvSteps(steps) => agent.episode_log().env_steps >= steps,
            Budget::Rollouts(rollouts) => agent.rollouts() >= rollouts,
        }
    }

    fn rollouts(self) -> Option<u64> {
        match self {
            Budget::EnvSteps(_) => None,
            Budget::Rollouts(rollouts) => Some(rollouts),
        }
    }
}

struct Plan {
    dir: PathBuf,
    points: Vec<Point>,
    seeds: Vec<u64>,
    budget: Budget,
    config: DpPpoConfig,
    /// The closed loop's sizes.
    leakage: LeakageSizes,
    /// The configuration whose σ the closed loop's releases use: the frontier's default (or
    /// `--config`), without the quick mode's changes.
    leakage_config: DpPpoConfig,
}

fn plan(args: &DpPpoSuiteArgs) -> Result<Plan> {
    let mut config = match &args.config {
        Some(path) => DpPpoConfig::load(path)
            .with_context(|| format!("reading the DP-PPO config {}", path.display()))?,
        None => suite_config(),
    };
    config.delta = DELTA;
    // The closed loop attacks the frontier's default configuration, also under --quick.
    let leakage_config = config.clone();
    let (points, seeds, steps, dir) = if args.quick {
        config = config
            .with_episodes_per_rollout(64)
            .with_minibatch_episodes(16)
            .with_epochs(2)
            .with_num_envs(16)
            .with_hidden(vec![32])
            // The quick mode's own rate, as before the frontier's setting moved to 3e-2
            // (qN = 16 is far noisier than the frontier's 256).
            .with_lr(1e-3)
            // qN = 16 leaves adaptive clipping's count noise (qN/20) below σ/2 at ε = 1.
            .with_adaptive_clip_quantile(None);
        (
            vec![Point(Some(TARGET_EPSILON)), Point(None)],
            vec![0],
            200_000,
            crate::run::runs_root().join("dp-ppo"),
        )
    } else {
        (
            FRONTIER_EPSILONS.iter().map(|&e| Point(e)).collect(),
            (0..MIN_SEEDS as u64).collect(),
            FRONTIER_STEPS,
            PathBuf::from("results/dp-ppo"),
        )
    };
    let seeds = args.seeds.as_ref().map_or(seeds, |s| s.0.clone());
    ensure!(!seeds.is_empty(), "--seeds is empty");
    let points = args.epsilons.clone().unwrap_or(points);
    ensure!(!points.is_empty(), "--epsilons is empty");
    let budget = match args.rollouts {
        Some(rollouts) => {
            ensure!(rollouts >= 1, "--rollouts must be at least 1");
            Budget::Rollouts(rollouts)
        }
        None => {
            let steps = args.steps.unwrap_or(steps);
            ensure!(steps >= 1, "--steps must be at least 1");
            Budget::EnvSteps(steps)
        }
    };
    config.validate()?;
    // Every point's σ and clipping checked (named errors) before any unit runs.
    for &point in &points {
        point_config(&config, point)
            .engine_config()
            .check()
            .with_context(|| format!("the point ε = {}", point.label()))?;
    }
    let mut leakage = LeakageSizes::of(args.quick, &leakage_config);
    if let Some(samples) = args.leakage_samples {
        ensure!(samples >= 1, "--leakage-samples must be at least 1");
        leakage.samples = samples;
    }
    Ok(Plan {
        dir: args.dir.clone().unwrap_or(dir),
        points,
        seeds,
        budget,
        config,
        leakage,
        leakage_config,
    })
}

/// The configuration of one point.
fn point_config(base: &DpPpoConfig, point: Point) -> DpPpoConfig {
    let mut config = base.clone();
    config.noise = match point.0 {
        Some(epsilon) => DpPpoNoise::TargetEpsilon(epsilon),
        None => DpPpoNoise::NoiseMultiplier(0.0),
    };
    config
}

struct UnitTask {
    config: DpPpoConfig,
    point: Point,
    seed: u64,
    budget: Budget,
}

impl BackendTask for UnitTask {
    type Output = DpPpoUnit;

    fn run<B: Backend>(self, device: B::Device) -> Result<DpPpoUnit> {
        let start = Instant::now();
        let mut agent =
            DpPpo::<Autodiff<B>>::for_env(self.config.clone(), ENV, &device, self.seed)?;
        let finite = |e: f64| e.is_finite().then_some(e);
        let mut curve = Vec::new();
        while !self.budget.reached(&agent) {
            let stats = agent.train_epoch()?;
            let whole = finite(agent.epsilon_whole_run()?);
            curve.push((stats.env_steps, stats.mean_return_100, whole));
        }
        let log = agent.episode_log();
        Ok(DpPpoUnit {
            target_epsilon: self.point.0,
            seed: self.seed,
            config: self.config,
            commit: crate::run::source_commit(),
            noise_multiplier: agent.noise_multiplier(),
            epsilon_per_episode: finite(agent.epsilon_per_episode()?),
            epsilon_whole_run: finite(agent.epsilon_whole_run()?),
            env_steps: log.env_steps,
            episodes: log.episodes() as u64,
            final_mean_return_100: log.mean_recent_return(100).unwrap_or(f64::NAN),
            solved_at_env_steps: log.first_solved(100, SOLVED_RETURN).map(|s| s.1),
            rollouts_budget: self.budget.rollouts(),
            curve,
            wall_s: start.elapsed().as_secs_f64(),
        })
    }
}

/// What the report says about when its units stopped: at a public number of rollouts, or at
/// an environment-step budget, which reads the episodes' lengths.
fn stopping_rule(units: &[DpPpoUnit]) -> String {
    let public = units.iter().filter(|u| u.rollouts_budget.is_some()).count();
    let by_steps = units.len() - public;
    match (public, by_steps) {
        (0, 0) => String::new(),
        (_, 0) => "Every unit stopped at a number of rollouts fixed in advance: ε per episode \
                   covers all it released."
            .into(),
        (0, n) => format!(
            "{} stopped after the first rollout that reached the environment-step budget: \
             that decision reads the private episodes' lengths, and ε per episode does not \
             cover it (docs/dp-ppo.md, \"Not covered: when the run stops\"; `--rollouts` \
             avoids it).",
            if n == 1 {
                "The unit".to_string()
            } else {
                format!("All {n} units")
            }
        ),
        (p, n) => format!(
            "{p} units stopped at a number of rollouts fixed in advance; {n} after the first \
             rollout that reached the environment-step budget, a decision that reads the \
             private episodes' lengths and that ε per episode does not cover (docs/dp-ppo.md, \
             \"Not covered: when the run stops\")."
        ),
    }
}

/// One row of the frontier's table (also an extra row's), from the units of one point: label,
/// seeds, σ, ε per episode, the whole-run ε, the final means, how many seeds end ≥ 475 and how
/// many reached it, and the criterion's verdict ([`point_solved`]).
fn frontier_row(label: String, of_point: &[&DpPpoUnit]) -> Vec<Cell> {
    let finals: Vec<f64> = of_point.iter().map(|u| u.final_mean_return_100).collect();
    let Some(first) = of_point.first() else {
        let mut row = vec![Cell::from(label), Cell::from("0")];
        row.extend((0..7).map(|_| Cell::from("–")));
        return row;
    };
    let per_episode = first.epsilon_per_episode.unwrap_or(f64::INFINITY);
    let whole: Vec<f64> = of_point
        .iter()
        .map(|u| u.epsilon_whole_run.unwrap_or(f64::INFINITY))
        .collect();
    let reached: Vec<f64> = of_point
        .iter()
        .filter_map(|u| u.solved_at_env_steps.map(|s| s as f64))
        .collect();
    vec![
        Cell::from(label),
        Cell::from(format!("{}", of_point.len())),
        Cell::from(format_number(first.noise_multiplier)),
        Cell::from(format_number(per_episode)),
        Cell::from(if whole.iter().all(|e| e.is_infinite()) {
            "∞".to_string()
        } else {
            format_mean_std(&whole)
        }),
        Cell::from(format_mean_std(&finals)),
        Cell::from(format!(
            "{}",
            finals.iter().filter(|&&f| f >= SOLVED_RETURN).count()
        )),
        Cell::from(if reached.is_empty() {
            "0".to_string()
        } else {
            format!(
                "{} (median at {} steps)",
                reached.len(),
                format_number(median(&reached).round())
            )
        }),
        Cell::from(if point_solved(&finals) { "yes" } else { "no" }),
    ]
}

/// The frontier table's columns.
const FRONTIER_COLUMNS: [&str; 9] = [
    "target ε",
    "seeds",
    "σ",
    "ε per episode",
    "ε whole run (all steps)",
    "final mean return (100)",
    "seeds ≥ 475 at the end",
    "seeds that reached 475 during the run",
    "solved",
];

/// Labelled extra rows: privrl's changes to the frontier's setting, each with its units in a
/// directory beside the frontier's (`suite dp-ppo --config … --dir …`), reported under the
/// frontier and never in its headline: (directory name, what changed, how to run it).
const EXTRA_ROWS: [(&str, &str, &str); 1] = [(
    "dp-ppo-annealed",
    "ε = 1, Adam annealed linearly to 0 over 40 rollouts (R tuned on seeds 100–101), fresh seeds 5–9",
    "cargo xtask suite dp-ppo --config experiments/assets/dp-ppo-annealed.json --dir \
     results/dp-ppo-annealed --epsilons 1 --seeds 5..10",
)];

/// The extra rows' section, from whatever units their directories hold.
fn extra_rows(report: &mut Report, dir: &Path) -> Result<()> {
    let Some(parent) = dir.parent() else {
        return Ok(());
    };
    let mut rows = Vec::new();
    let mut commands = Vec::new();
    for (name, label, command) in EXTRA_ROWS {
        let units: Vec<DpPpoUnit> = UnitStore::<DpPpoUnit>::new(parent.join(name).join("units"))
            .read_all()?
            .into_iter()
            .map(|(_, u)| u)
            .collect();
        let of_point: Vec<&DpPpoUnit> = Point(Some(TARGET_EPSILON)).units_in(&units).collect();
        rows.push(frontier_row(label.to_string(), &of_point));
        commands.push(format!("`{command}` (units in {name}/units)"));
    }
    report
        .heading("Labelled extra rows: privrl's changes, not the frontier's setting")
        .paragraph(
            "Each row changes one thing in the frontier's setting (docs/dp-ppo.md says why and \
             how it was chosen) and is judged by the same criterion on its own seeds; none is \
             the frontier or enters the headline.",
        )
        .table(&FRONTIER_COLUMNS, rows)
        .paragraph(&format!("Run by {}.", commands.join("; ")));
    Ok(())
}

/// Runs every missing unit (seed-major), then writes the report from every unit on disk.
pub fn run(args: DpPpoSuiteArgs) -> Result<SuiteOutcome> {
    let plan = plan(&args)?;
    // Fix the commit every unit of this invocation records before the first one runs.
    let _ = crate::run::source_commit();
    if args.leakage {
        return run_leakage(&args, &plan);
    }
    let store = UnitStore::<DpPpoUnit>::new(plan.dir.join("units"));
    let missing = store.missing(&seed_major(&plan.points, plan.seeds.iter().copied()));
    let jobs = missing
        .into_iter()
        .map(|(point, seed)| Job::new(format!("{}-seed{seed}", point.slug()), (point, seed)))
        .collect();
    let outcomes = run_parallel(jobs, args.threads, |(point, seed), _| {
        let unit = dispatch(
            args.backend,
            UnitTask {
                config: point_config(&plan.config, point),
                point,
                seed,
                budget: plan.budget,
            },
        )?;
        store.write(&point, seed, &unit)?;
        Ok(())
    })?;
    let outcome = write_report(&plan, &store, args.quick)?;
    outcomes.ensure_all_succeeded("units")?;
    Ok(outcome)
}

/// The closed loop: every missing release at `--leakage-seed`, one at a time per thread, then
/// the report.
fn run_leakage(args: &DpPpoSuiteArgs, plan: &Plan) -> Result<SuiteOutcome> {
    let store = UnitStore::<LeakageUnit>::new(plan.dir.join("leakage").join("units"));
    leakage::check_sizes(
        &store
            .read_all()?
            .into_iter()
            .map(|(_, u)| u)
            .collect::<Vec<_>>(),
        plan.leakage,
    )?;
    // Every frontier point, also under --quick (whose training runs only ε ∈ {1, ∞}).
    let frontier: Vec<Point> = FRONTIER_EPSILONS.iter().map(|&e| Point(e)).collect();
    let releases = leakage::releases(&frontier);
    let missing = store.missing(&seed_major(&releases, [args.leakage_seed]));
    let jobs = missing
        .into_iter()
        .map(|(release, seed)| Job::new(format!("{release:?}-seed{seed}"), (release, seed)))
        .collect();
    let outcomes = run_parallel(jobs, args.threads, |(release, seed), _| {
        let unit = dispatch(
            args.backend,
            LeakageTask {
                release,
                config: plan.leakage_config.clone(),
                sizes: plan.leakage,
                seed,
            },
        )?;
        store.write(&release, seed, &unit)?;
        Ok(())
    })?;
    let frontier = UnitStore::<DpPpoUnit>::new(plan.dir.join("units"));
    let outcome = write_report(plan, &frontier, args.quick)?;
    outcomes.ensure_all_succeeded("closed-loop units")?;
    Ok(outcome)
}

/// The rows of the frontier table: the mode's points (the frontier, or --quick's ε ∈ {1, ∞}),
/// every point run by this invocation (`--epsilons`) and every point with a unit on disk, in
/// increasing ε with ∞ last.
fn report_points(plan: &Plan, units: &[DpPpoUnit], quick: bool) -> Vec<Point> {
    let mode: Vec<Point> = if quick {
        vec![Point(Some(TARGET_EPSILON)), Point(None)]
    } else {
        FRONTIER_EPSILONS.iter().map(|&e| Point(e)).collect()
    };
    let mut points: Vec<Point> = Vec::new();
    for point in mode
        .into_iter()
        .chain(plan.points.iter().copied())
        .chain(units.iter().map(|u| Point(u.target_epsilon)))
    {
        if !points.contains(&point) {
            points.push(point);
        }
    }
    points.sort_by(|a, b| {
        let key = |p: &Point| p.0.unwrap_or(f64::INFINITY);
        key(a).total_cmp(&key(b))
    });
    points
}

/// The learning curves (mean return of the last 100 episodes against environment steps, the
/// median over seeds with a 10th–90th percentile band, one series per point) and the ε curve
/// (the whole-run ε, every step composed, against environment steps; ε per episode is flat at
/// its target by construction), from every unit on disk.
fn figures(report: &mut Report, dir: &Path, units: &[DpPpoUnit], points: &[Point]) -> Result<()> {
    let of = |point: Point| point.units_in(units);
    let mut returns = LearningCurves::new(format!(
        "DP-PPO on {ENV}: mean return of the last 100 episodes"
    ))
    .y_label("mean return of the last 100 episodes (median over seeds)")
    .reference(format!("solved ({SOLVED_RETURN})"), SOLVED_RETURN)
    .reference(
        format!("uniform random policy (≈ {RANDOM_RETURN})"),
        RANDOM_RETURN,
    );
    let mut epsilon = LineChart::new(format!(
        "DP-PPO on {ENV}: ε if one episode were in every step"
    ))
    .x_label("environment steps")
    .y_label("whole-run ε (δ = 1e-5, RDP), median over seeds")
    .log_y();
    let (mut any_return, mut any_epsilon) = (false, false);
    for &point in points {
        let curves: SeedCurves = of(point)
            .map(|u| u.curve.iter().map(|&(x, y, _)| (x as f64, y)).collect())
            .collect();
        if curves.is_empty() {
            continue;
        }
        any_return = true;
        returns = returns.series(format!("ε = {}", point.label()), curves);
        let whole: SeedCurves = of(point)
            .map(|u| {
                u.curve
                    .iter()
                    .filter_map(|&(x, _, e)| e.map(|e| (x as f64, e)))
                    .collect()
            })
            .collect();
        if let Ok(median) = aggregate_seeds(&whole, 100, (10.0, 90.0)) {
            any_epsilon = true;
            epsilon = epsilon.line(Line::new(
                format!("target ε = {} per episode", point.label()),
                median.iter().map(|b| (b.x, b.median)).collect(),
            ));
        }
    }
    if any_return {
        let files = returns.save(&dir.join("learning-curves"))?;
        report.plot(
            "Mean return of the last 100 training episodes against environment steps, the \
             median over seeds with a 10th–90th percentile band (the number of seeds in the \
             legend); returns of the private episodes, outside the guarantee.",
            &files,
        );
    }
    if any_epsilon {
        let files = epsilon.save(&dir.join("epsilon"))?;
        report.plot(
            "The conservative whole-run ε (every step of every rollout composed, as if one \
             episode had been in all of them) against environment steps, median over seeds. The \
             guarantee per episode is the target ε at every point of the run (docs/dp-ppo.md).",
            &files,
        );
    }
    Ok(())
}

fn write_report(plan: &Plan, store: &UnitStore<DpPpoUnit>, quick: bool) -> Result<SuiteOutcome> {
    let units: Vec<DpPpoUnit> = store.read_all()?.into_iter().map(|(_, u)| u).collect();
    let leakage_units: Vec<LeakageUnit> =
        UnitStore::<LeakageUnit>::new(plan.dir.join("leakage").join("units"))
            .read_all()?
            .into_iter()
            .map(|(_, u)| u)
            .collect();
    leakage::check_sizes(&leakage_units, plan.leakage)?;
    let mut report = Report::new(
        &plan.dir,
        "DP-PPO on CartPole-v1: one episode as the unit of privacy",
    );
    report.paragraph(&format!(
        "{} units on disk. ε per episode, add/remove one episode, δ = {DELTA}, RDP accountant \
         (docs/dp-ppo.md). A point is solved when ≥ {MIN_SEEDS} seeds have finished and the mean \
         over seeds of each seed's final mean return of its last 100 episodes is ≥ {SOLVED_RETURN} \
         (criterion fixed in experiments/src/suites/dp_ppo/mod.rs before any run). Returns are \
         computed from the private episodes without noise: outside the guarantee. {}",
        units.len(),
        stopping_rule(&units)
    ));
    let mut rows = Vec::new();
    let mut smallest_solved: Option<f64> = None;
    let points = report_points(plan, &units, quick);
    for &point in &points {
        if point_solved(&point.final_means(&units)) {
            let e = point.0.unwrap_or(f64::INFINITY);
            smallest_solved = Some(smallest_solved.map_or(e, |s: f64| s.min(e)));
        }
        let of_point: Vec<&DpPpoUnit> = point.units_in(&units).collect();
        rows.push(frontier_row(point.label(), &of_point));
    }
    report
        .heading("Privacy–utility frontier")
        .table(&FRONTIER_COLUMNS, rows);
    if !quick {
        extra_rows(&mut report, &plan.dir)?;
    }
    figures(&mut report, &plan.dir, &units, &points)?;
    let headline = if quick {
        quick_headline(&units)
    } else {
        Headline {
            effect: format!(
                "CartPole-v1 solved at ε ≤ {TARGET_EPSILON} per episode (δ = {DELTA}), ≥ {MIN_SEEDS} seeds"
            ),
            measured: {
                let at_target = Point(Some(TARGET_EPSILON)).final_means(&units);
                format!(
                    "{}; at ε = {TARGET_EPSILON}: final mean return (100) {} over {} seeds",
                    match smallest_solved {
                        Some(e) => format!("smallest solved ε per episode: {}", format_number(e)),
                        None => "no point solved".into(),
                    },
                    if at_target.is_empty() {
                        "n/a".to_string()
                    } else {
                        format_mean_std(&at_target)
                    },
                    at_target.len()
                )
            },
            visible: smallest_solved.is_some_and(|e| e <= TARGET_EPSILON),
        }
    };
    headline.add_to(&mut report);
    let returns = |point: Point| {
        let finals = point.final_means(&units);
        if finals.is_empty() {
            "no units".to_string()
        } else {
            format_mean_std(&finals)
        }
    };
    leakage::add_section(&mut report, &leakage_units, &returns, quick);
    let quick_flag = if quick { " --quick" } else { "" };
    report.reproduce([
        format!("cargo xtask suite dp-ppo{quick_flag}"),
        format!("cargo xtask suite dp-ppo --leakage{quick_flag}"),
    ]);
    let path = report.write()?;
    Ok(SuiteOutcome {
        report: path,
        headline,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_criterion_needs_five_seeds_and_a_mean_of_475() {
        assert!(!point_solved(&[500.0; 4]), "four seeds are too few");
        assert!(point_solved(&[500.0, 500.0, 500.0, 450.0, 480.0]));
        assert!(!point_solved(&[500.0, 500.0, 400.0, 450.0, 480.0]));
    }

    #[test]
    fn epsilons_parse_by_name_and_refuse_nonsense() {
        assert_eq!(parse_point("inf").unwrap(), Point(None));
        assert_eq!(parse_point(" 0.5").unwrap(), Point(Some(0.5)));
        for bad in ["0", "-1", "NaN", "x", ""] {
            assert!(parse_point(bad).is_err(), "{bad:?} should be refused");
        }
    }

    #[test]
    fn the_frontier_is_the_issues() {
        assert_eq!(
            FRONTIER_EPSILONS,
            [Some(0.5), Some(1.0), Some(2.0), Some(4.0), Some(8.0), None]
        );
        let c = suite_config();
        assert_eq!(c.steps_per_rollout(), 4);
        assert!(c.validate().is_ok() && c.engine_config().check().is_ok());
    }

    /// `--rollouts 2`: every unit stops after exactly two rollouts, records it, and the report
    /// says that the stop read nothing of the data.
    #[test]
    fn a_rollout_budget_stops_every_unit_after_that_many_rollouts() {
        let dir = crate::run::tests::temp_dir("dp-ppo-rollouts");
        let args = DpPpoSuiteArgs {
            epsilons: Some(vec![Point(None)]),
            rollouts: Some(2),
            dir: Some(dir.to_path_buf()),
            ..DpPpoSuiteArgs::quick(0, BackendChoice::default(), 1)
        };
        run(args).unwrap();
        let units = UnitStore::<DpPpoUnit>::new(dir.join("units"))
            .read_all()
            .unwrap();
        assert_eq!(units.len(), 1);
        let unit = &units[0].1;
        assert_eq!(unit.curve.len(), 2);
        assert_eq!(unit.rollouts_budget, Some(2));
        let report = std::fs::read_to_string(dir.join("report.md")).unwrap();
        assert!(report.contains("Every unit stopped at a number of rollouts fixed in advance"));
    }

    #[test]
    fn the_quick_suite_writes_units_resumes_and_reports() {
        let dir = crate::run::tests::temp_dir("dp-ppo-suite");
        let args = DpPpoSuiteArgs {
            seeds: None,
            steps: Some(300),
            dir: Some(dir.to_path_buf()),
            ..DpPpoSuiteArgs::quick(0, BackendChoice::default(), 1)
        };
        let outcome = run(args.clone()).unwrap();
        let store = UnitStore::<DpPpoUnit>::new(dir.join("units"));
        let units = store.read_all().unwrap();
        assert_eq!(units.len(), 2, "ε = 1 and ∞ at seed 0");
        let private = units
            .iter()
            .map(|(_, u)| u)
            .find(|u| u.target_epsilon == Some(1.0))
            .unwrap();
        let epsilon = private.epsilon_per_episode.unwrap();
        assert!(epsilon <= 1.0 && epsilon > 0.99, "{epsilon}");
        // The quick criterion reads the ε = 1 unit; 300 steps do not learn.
        assert!(
            outcome
                .headline
                .measured
                .starts_with("final mean return (100) at ε = 1: "),
            "{}",
            outcome.headline.measured
        );
        assert_eq!(
            outcome.headline.visible,
            private.final_mean_return_100 >= QUICK_LEARNED_RETURN
        );
        let report = std::fs::read_to_string(&outcome.report).unwrap();
        assert!(report.contains("2 units on disk"), "{report}");
        // A rerun finds both units and runs nothing: the files are untouched.
        let before = std::fs::metadata(store.path(&Point(Some(1.0)), 0))
            .unwrap()
            .modified()
            .unwrap();
        run(args).unwrap();
        let after = std::fs::metadata(store.path(&Point(Some(1.0)), 0))
            .unwrap()
            .modified()
            .unwrap();
        assert_eq!(before, after);
    }
}

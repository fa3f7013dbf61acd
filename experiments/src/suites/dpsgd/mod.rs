//! `cargo xtask suite dpsgd`: the DP-RL slides' experiments (paper 004, Doulazmi & Odonnat)
//! on CartPole-v1. For each of DP-SGD REINFORCE, DP-SGD DQN, LDP REINFORCE and LDP DQN it
//! sweeps the noise level σ and plots, as the slides' Figures 8, 9, 12, 13 and 14 do, the
//! average and median training reward and the convergence time (episodes until the mean
//! return of 25 consecutive episodes reaches 475) against σ, each point annotated with the ε
//! it spent (δ = 1e-5 unless set; the unit of privacy is documented in
//! `privrl_agents::dp`).

mod controls;
mod headline;
mod ldp_controls;
mod plan;
mod point;
mod protocol;
mod reinforce_controls;
mod report;
mod runs;

use std::path::Path;

use anyhow::{Context, Result};

use self::point::Point;
use self::report::write_report;
use self::runs::{RunOutcome, RunTask};
use crate::backend::dispatch;
use crate::report::plot::mean;
use crate::run::{runs_root, suite_dir};
use crate::summary::SuiteOutcome;
use crate::sweep::{run_parallel, Job};

pub(crate) use self::plan::{dqn_config, DQN_STEPS};
pub use self::plan::{DpsgdArgs, Method};
pub use self::runs::RunSummary;

/// The environment of the slides.
const ENV: &str = "CartPole-v1";
/// CartPole-v1 is solved when the mean return of 25 consecutive episodes reaches 475.
const SOLVED_WINDOW: usize = 25;
/// The return that the window must reach.
const SOLVED_RETURN: f64 = 475.0;
/// Environment steps of the random warm-up rollout whose states give the IQR of the LDP noise.
const WARMUP_STEPS: usize = 5_000;

/// Runs the suite and writes `runs/dpsgd/report.md` (with `--dqn-controls`, the DQN controls
/// protocol into `results/dpsgd/`; with `--reinforce-controls`, the REINFORCE one into
/// `results/dpsgd/reinforce/`; with `--ldp-controls`, the local-DP one into
/// `results/dpsgd/ldp/`); returns the report's path.
pub fn run(args: DpsgdArgs) -> Result<SuiteOutcome> {
    if args.dqn_controls {
        return controls::run(&args);
    }
    if args.reinforce_controls {
        return reinforce_controls::run(&args);
    }
    if args.ldp_controls {
        return ldp_controls::run(&args);
    }
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
                epsilon_bound: epsilon_bound(&plan, summary.method, summary.noise)?,
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
    write_report(dir, &args, &plan, points)
}

/// The ε of a DP-SGD DQN run with a step budget that does not depend on the data: a run stops
/// at the first episode end at or after `budget` environment steps, so how many gradient steps
/// it releases depends on its episodes (110,129 against 110,000 steps: ε 36.504 against
/// 36.487); the most steps any run can take is the budget plus the longest episode less one,
/// and the schedule of those steps is public ([`PrivacyTally::dqn_schedule`]), so its ε bounds
/// every run's.
pub(super) fn dqn_budget_epsilon(
    dqn: &privrl_agents::DqnConfig,
    budget: u64,
    noise_multiplier: f64,
    delta: f64,
    adjacency: privrl_privacy::Adjacency,
    accountant: privrl_privacy::AccountantKind,
) -> Result<f64> {
    let longest = privrl_envs::make(ENV)?
        .max_episode_steps()
        .context("the environment has no episode limit: no bound on a run's gradient steps")?
        as u64;
    let tally = privrl_agents::PrivacyTally::dqn_schedule(
        dqn,
        budget + longest - 1,
        noise_multiplier,
        delta,
    )
    .with_adjacency(adjacency)
    .with_accountant(accountant);
    Ok(tally.epsilon()?)
}

/// [`dqn_budget_epsilon`] of a sweep point; `None` for the other methods (their releases do
/// not depend on the data's length).
fn epsilon_bound(plan: &plan::DpsgdPlan, method: plan::Method, noise: f64) -> Result<Option<f64>> {
    if method != plan::Method::DpSgdDqn || noise <= 0.0 {
        return Ok(None);
    }
    dqn_budget_epsilon(
        &plan.dqn,
        plan.dqn_steps,
        noise,
        plan.delta,
        plan.adjacency,
        plan.accountant,
    )
    .map(Some)
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::backend::BackendChoice;

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
        // Every ε carries its unit and relation: never one bare ε axis for both agents.
        assert!(markdown.contains("ε (δ = 0.00001, add/remove, RDP accountant) | unit of privacy"));
        assert!(outcome.headline.measured.contains("/episode)"));
        assert!(outcome.headline.measured.contains("/transition)"));
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
        assert_eq!(summary.unit, Some(privrl_agents::PrivacyUnit::Episode));
        assert_eq!(summary.adjacency, privrl_privacy::Adjacency::AddRemove);
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
        // The report prints the data-independent bound instead of the run's own ε: the
        // accountant over the public q_t schedule at the budget plus the longest episode (500)
        // less one, which no run's episodes can exceed.
        let bound = dqn_budget_epsilon(
            &plan::dqn_config(),
            1_100,
            1.0,
            1e-5,
            privrl_privacy::Adjacency::AddRemove,
            privrl_privacy::AccountantKind::Rdp,
        )
        .unwrap();
        let longest =
            privrl_agents::PrivacyTally::dqn_schedule(&plan::dqn_config(), 1_599, 1.0, 1e-5)
                .epsilon()
                .unwrap();
        assert_eq!(bound, longest);
        assert!(bound > epsilon, "{bound} vs the run's own {epsilon}");
        let row = markdown
            .lines()
            .find(|l| l.starts_with("| DP-SGD DQN") && l.contains("| 1 |"))
            .unwrap_or_else(|| panic!("{markdown}"));
        assert!(row.contains(&crate::report::format_number(bound)), "{row}");
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

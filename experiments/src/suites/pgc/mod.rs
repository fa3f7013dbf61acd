//! `cargo xtask suite pgc`: PGC-A3C on CartPole-v0 with private gravities (Ono & Takahashi,
//! Section 4): Table 1 (median first success time), Table 2 (success ratio), Table 3
//! (relative area under the success-ratio curve), Fig. 2 (μ_n with |B| ∈ {1, 100}) and Fig. 3
//! (success ratio against submissions), beside the paper's values.

mod ablation;
mod clip_study;
mod headline;
mod learner;
mod plan;
mod report;
mod setting;
mod tables;
mod trial;
mod units;

use anyhow::Result;
use privrl_privacy::{Epsilon, MechanismKind};

use self::report::write_report;
use self::setting::{buffer_size, runs_at};
use self::trial::Trial;
use crate::backend::dispatch;
use crate::run::{suite_dir, RunName};
use crate::summary::SuiteOutcome;
use crate::sweep::{run_parallel, Job};

pub use self::learner::{
    for_mechanism, ActionsArg, ClockArg, LearnerArgs, LossArg, OptimizerChoice, PerMechanism,
    RewardArg,
};
pub use self::plan::{OrderArg, PgcSuiteArgs, TransportChoice};
pub use self::setting::{Factor, MechanismFactors};
pub use self::trial::TrialSummary;

const SUITE: &str = "pgc";

/// Runs the suite and writes `runs/pgc/report.md`; returns the report's path.
pub fn run(mut args: PgcSuiteArgs) -> Result<SuiteOutcome> {
    if args.redis.is_none() {
        args.redis = std::env::var("PRIVRL_REDIS_URL")
            .ok()
            .filter(|u| !u.is_empty());
    }
    args.check_factors()?;
    if args.ablation {
        return ablation::run(&args);
    }
    if args.clip_study {
        anyhow::ensure!(args.settings.is_empty(), "--settings goes with --ablation");
        return clip_study::run(&args);
    }
    anyhow::ensure!(args.settings.is_empty(), "--settings goes with --ablation");
    if args.tables {
        return tables::run(&args);
    }
    anyhow::ensure!(
        !args.report_only,
        "--report-only goes with --ablation or --tables"
    );
    let plan = args.plan();
    anyhow::ensure!(plan.trials >= 1, "--trials must be >= 1");
    anyhow::ensure!(plan.workers >= 1, "--workers must be >= 1");
    if plan.transport == TransportChoice::Redis {
        anyhow::ensure!(
            args.redis.is_some(),
            "--transport redis needs --redis URL (or PRIVRL_REDIS_URL)"
        );
    }
    let dir = suite_dir(SUITE)?;
    let start = std::time::Instant::now();
    let mut jobs = Vec::new();
    // A table trial runs to its first success or the cutoff in updates; a Fig. 2 run applies
    // a fixed number of submissions.
    let trial =
        |mech: MechanismKind, epsilon, buffer_size, fig2: Option<u64>, seed, name: String| Trial {
            plan: plan.clone(),
            mech,
            epsilon,
            buffer_size,
            max_updates: if fig2.is_some() {
                u64::MAX
            } else {
                plan.max_updates
            },
            max_submissions: fig2.unwrap_or(u64::MAX),
            stop_at_success: fig2.is_none(),
            seed,
            run_name: name,
            redis: args.redis.clone(),
        };
    for &mech in &plan.mechanisms {
        let buffer = buffer_size(mech);
        for &epsilon in plan.epsilons.iter().filter(|&&e| runs_at(mech, e)) {
            for k in 0..plan.trials {
                let seed = plan.seed + k as u64;
                let name = RunName::new(mech.name())
                    .param("eps", epsilon.slug())
                    .param("buf", buffer)
                    .seed(seed);
                jobs.push(Job::new(
                    name.as_str(),
                    trial(mech, epsilon, buffer, None, seed, name.as_str().to_string()),
                ));
            }
        }
    }
    if plan.fig2_submissions > 0 {
        for &mech in plan
            .mechanisms
            .iter()
            .filter(|&&m| m != MechanismKind::None)
        {
            for buffer in [1usize, 100] {
                let name = RunName::new("fig2")
                    .part(mech.name())
                    .param("eps", 1)
                    .param("buf", buffer)
                    .seed(plan.seed);
                jobs.push(Job::new(
                    name.as_str(),
                    trial(
                        mech,
                        Epsilon::finite(1.0)?,
                        buffer,
                        Some(plan.fig2_submissions),
                        plan.seed,
                        name.as_str().to_string(),
                    ),
                ));
            }
        }
    }
    let backend = plan.backend;
    let outcomes = run_parallel(jobs, args.threads, |job, _| dispatch(backend, job))?.into_ok()?;
    let results: Vec<(TrialSummary, Vec<(f64, f64)>)> =
        outcomes.into_iter().map(|(_, r)| r).collect();
    write_report(dir, &args, plan, results, start)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(clap::Parser)]
    pub(super) struct Cli {
        #[command(flatten)]
        args: PgcSuiteArgs,
    }

    pub(super) fn parse(flags: &[&str]) -> PgcSuiteArgs {
        <Cli as clap::Parser>::parse_from(std::iter::once("pgc").chain(flags.iter().copied())).args
    }
}

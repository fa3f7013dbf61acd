//! The units of `suite pgc --ablation` and `--tables`: one trial of a setting at a seed,
//! `<results>/<kind>/<setting>/seed<k>.json`, written atomically once it finishes and skipped
//! on a rerun unless it failed within a shorter cutoff than the one asked for now; both reports
//! are regenerated from whatever units exist.

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::Result;
use burn::backend::Autodiff;
use burn::tensor::backend::Backend;
use privrl_agents::InProcess;
use privrl_agents::{
    run_pgc, AgentError, AppliedSubmission, PgcError, PgcOutcome, SubmissionOrder,
};
use serde::{Deserialize, Serialize};

use super::plan::PgcSuiteArgs;
use super::setting::{Factor, Setting};
use super::trial::TrialSummary;
use crate::backend::{dispatch, BackendTask};
use crate::unit::{seed_major, UnitStore};
#[cfg(test)]
use {
    super::setting::buffer_size,
    privrl_privacy::{Epsilon, MechanismKind},
};

/// One finished trial of a setting.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(super) struct Unit {
    pub(super) setting: String,
    pub(super) factors: Vec<Factor>,
    pub(super) workers: usize,
    pub(super) max_updates: u64,
    /// The order the aggregator applied submissions in (units written before the round-robin
    /// order existed ran in order of arrival).
    #[serde(default = "arrival")]
    pub(super) order: SubmissionOrder,
    /// The highest mean of a full window of m scores (eq. 25) the trial reached.
    pub(super) best_mean_score: Option<f64>,
    pub(super) summary: TrialSummary,
    /// The commit the trial ran at ([`crate::run::source_commit`]; absent in units written
    /// before it was recorded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) commit: Option<String>,
    /// Why the trial stopped early when a loss became NaN or infinite (the learner diverged):
    /// a failure that no longer cutoff could turn into a success.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) diverged: Option<String>,
}

impl Unit {
    /// Whether running the trial again with a cutoff of `max_updates` could not change it: it
    /// succeeded, or it already failed at that cutoff or a longer one. A failure at a shorter
    /// cutoff is run again from the start (a seeded round-robin trial repeats its first
    /// updates exactly), so that raising `--max-updates` extends the undecided trials only.
    pub(super) fn settled_within(&self, max_updates: u64) -> bool {
        self.summary.first_success.is_some()
            || self.max_updates >= max_updates
            || self.diverged.is_some()
    }
}

impl crate::unit::Unit for Unit {
    type Setting = Setting;

    /// `<setting>/seed<k>.json`.
    fn path(root: &Path, setting: &Setting, seed: u64) -> PathBuf {
        root.join(setting.name()).join(format!("seed{seed}.json"))
    }
}

#[cfg(test)]
impl Unit {
    /// A hand-made unit for tests: `seed`'s trial of `mechanism` with `factors` at `epsilon`
    /// (9 agents, round robin, its mechanism's |B|), first succeeding after `first_success`
    /// submissions (`None`: failed) within a cutoff of `max_updates`.
    pub(super) fn hand_made(
        mechanism: MechanismKind,
        factors: Vec<Factor>,
        epsilon: Epsilon,
        seed: u64,
        first_success: Option<u64>,
        max_updates: u64,
    ) -> Self {
        Unit {
            setting: Setting::new(mechanism, &factors).at(epsilon).name(),
            factors,
            workers: 9,
            max_updates,
            order: SubmissionOrder::RoundRobin,
            best_mean_score: None,
            commit: None,
            diverged: None,
            summary: TrialSummary {
                mechanism,
                epsilon,
                buffer_size: buffer_size(mechanism),
                seed,
                fig2: false,
                first_success,
                applied: 0,
                sent: 0,
                updates: 0,
                wall_s: 1.0,
            },
        }
    }
}

fn arrival() -> SubmissionOrder {
    SubmissionOrder::Arrival
}

/// Where the units of `kind` (`ablation`, `tables`) run in `order` live: one directory per
/// order, since a run in order of arrival depends on the machine's load and one in round-robin
/// order does not. (The first ablation ran in order of arrival, in `ablation/`.)
pub(super) fn units_dir(args: &PgcSuiteArgs, kind: &str, order: SubmissionOrder) -> PathBuf {
    let name = match (kind, order) {
        ("ablation", SubmissionOrder::Arrival) => "ablation".to_string(),
        ("tables", SubmissionOrder::RoundRobin) => "tables".to_string(),
        (kind, SubmissionOrder::Arrival) => format!("{kind}-arrival"),
        (kind, SubmissionOrder::RoundRobin) => format!("{kind}-round-robin"),
    };
    args.results_dir.join(name)
}

/// One unit to run.
struct UnitJob {
    setting: Setting,
    seed: u64,
    workers: usize,
    max_updates: u64,
    order: SubmissionOrder,
}

impl BackendTask for UnitJob {
    type Output = Unit;

    fn run<B: Backend>(self, device: B::Device) -> Result<Unit> {
        let config = self
            .setting
            .config(self.workers, self.max_updates, self.order);
        let window = config.score_window as u64;
        let mut best: Option<f64> = None;
        // (applied, θ's version) so far: what a diverged trial reached.
        let mut reached = (0u64, 0u64);
        let start = Instant::now();
        let result = run_pgc::<Autodiff<B>>(
            &config,
            &InProcess::new(),
            self.seed,
            &device,
            |a: &AppliedSubmission| {
                reached = (a.n, a.version);
                if a.n >= window {
                    best = Some(best.map_or(a.mean_score, |b| b.max(a.mean_score)));
                }
            },
        );
        // A learner whose loss became NaN or ∞ has failed for good: a unit, not an error.
        let (outcome, diverged) = match result {
            Ok(outcome) => (outcome, None),
            Err(PgcError::Agent(error @ AgentError::NonFinite { .. })) => (
                PgcOutcome {
                    first_success: None,
                    applied: reached.0,
                    sent: reached.0,
                    updates: reached.1,
                    wall_s: start.elapsed().as_secs_f64(),
                    theta: Vec::new(),
                },
                Some(error.to_string()),
            ),
            Err(error) => return Err(error.into()),
        };
        Ok(Unit {
            setting: self.setting.name(),
            factors: self.setting.factors.clone(),
            workers: self.workers,
            max_updates: self.max_updates,
            order: self.order,
            best_mean_score: best,
            commit: crate::run::source_commit(),
            diverged,
            summary: TrialSummary {
                mechanism: self.setting.mechanism,
                epsilon: self.setting.epsilon,
                buffer_size: config.a3c.buffer_size,
                seed: self.seed,
                fig2: false,
                first_success: outcome.first_success,
                applied: outcome.applied,
                sent: outcome.sent,
                updates: outcome.updates,
                wall_s: outcome.wall_s,
            },
        })
    }
}

/// Runs the missing units of `settings` in `dir` one at a time (each runs its agent threads),
/// trial k of every setting before trial k + 1 of any (so that every cell has a few trials
/// before any has many), calling `report` after each; the ablation's and the tables' runner.
pub(super) fn run_units(
    args: &PgcSuiteArgs,
    dir: &Path,
    settings: &[Setting],
    mut report: impl FnMut() -> Result<()>,
) -> Result<()> {
    let plan = args.plan();
    anyhow::ensure!(plan.trials >= 1, "--trials must be >= 1");
    anyhow::ensure!(plan.workers >= 1, "--workers must be >= 1");
    if args.report_only {
        return Ok(());
    }
    let store = UnitStore::<Unit>::new(dir);
    let seeds = (0..plan.trials).map(|k| plan.seed + k as u64);
    for (setting, seed) in store.unsettled(&seed_major(settings, seeds), |unit| {
        unit.settled_within(plan.max_updates)
    })? {
        let start = Instant::now();
        let unit = dispatch(
            plan.backend,
            UnitJob {
                setting: setting.clone(),
                seed,
                workers: plan.workers,
                max_updates: plan.max_updates,
                order: plan.order,
            },
        )?;
        store.write(&setting, seed, &unit)?;
        println!(
            "{} seed {seed}: FST {} after {} updates ({:.1} s)",
            setting.name(),
            unit.summary
                .first_success
                .map_or("∞".to_string(), |f| f.to_string()),
            unit.summary.updates,
            start.elapsed().as_secs_f64()
        );
        report()?;
    }
    Ok(())
}

/// What the trials of one setting give: each first success time (`None`: a failure), the
/// successes, and the trials decided at `cutoff` (a success, or a failure there or later).
pub(super) struct Outcomes {
    pub(super) fsts: Vec<Option<u64>>,
    pub(super) successes: usize,
    pub(super) decided: usize,
}

pub(super) fn outcomes(trials: &[&Unit], cutoff: u64) -> Outcomes {
    let fsts: Vec<Option<u64>> = trials.iter().map(|u| u.summary.first_success).collect();
    Outcomes {
        successes: fsts.iter().flatten().count(),
        decided: trials.iter().filter(|u| u.settled_within(cutoff)).count(),
        fsts,
    }
}

/// Every unit on disk under `dir`, by setting name.
pub(super) fn read_units(dir: &Path) -> Result<Vec<Unit>> {
    let units = UnitStore::<Unit>::new(dir).read_all()?;
    Ok(units.into_iter().map(|(_, unit)| unit).collect())
}

//! The students and baselines: one PPO run per (setting, seed), kickstarted from the teacher
//! where the setting says so, run in parallel after the teacher.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use anyhow::{Context, Result};
use burn::backend::Autodiff;
use burn::tensor::backend::Backend;
use privrl_agents::{
    Agent, DirichletRelease, Ppo, PpoConfig, PrivacyAwareConfig, PrivacyAwareKickstarting,
    PrivateTeacher, Teacher, TeacherPrivacySummary,
};
use privrl_privacy::PrivacyCost;

use super::smoothed::SmoothedRun;
use serde::{Deserialize, Serialize};

use super::plan::{suite_dir_name, KickstartError, KickstartPlan};
use super::settings::{settings, Setting};
use super::sitting::{checkpoint_interval, without_threshold, Sitting, UnitProgress};
use super::teacher::{recorded_teacher, teacher, TeacherSummary};
use crate::backend::BackendTask;
use crate::report::format_number;
use crate::report::plot::LearningCurves;
use crate::run::{read_json, RunDir, SUMMARY_FILE};
use crate::sweep::{run_parallel, Job, JobProgress};
use crate::unit::{seed_major, Unit, UnitStore};

/// `summary.json` of one (setting, seed) run.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(super) struct StudentSummary {
    pub(super) setting: String,
    pub(super) seed: u64,
    /// Mean epoch return over the last 3 epochs.
    pub(super) final_return: f64,
    /// First epoch whose epoch return reaches the threshold (90% of the teacher's, the paper's
    /// speed).
    pub(super) epochs_to_threshold: Option<usize>,
    /// First epoch whose epoch return reaches 90% of the way from a random policy's return to
    /// this run's own final return: the speed of a student that plateaus below the teacher.
    /// `None` when the final return is not above the random one.
    #[serde(default)]
    pub(super) epochs_to_plateau: Option<usize>,
    threshold: f64,
    /// The teacher's privacy accounting (kickstarted students with the mechanism).
    pub(super) privacy: Option<TeacherPrivacySummary>,
    /// Epoch at which the teacher was exhausted, if it was.
    pub(super) exhausted_at_epoch: Option<usize>,
    /// (epoch, epoch return), NaN epochs carried forward.
    pub(super) curve: Vec<(f64, f64)>,
}

pub(super) struct StudentJob {
    pub(super) setting: Setting,
    pub(super) seed: u64,
}

impl StudentSummary {
    /// This run's speed against `threshold`: the threshold is the teacher's, measured after
    /// the run, so a summary written against another one is measured again from its curve.
    fn measured_against(mut self, threshold: f64) -> Self {
        self.epochs_to_threshold = first_at_least(&self.curve, threshold);
        self.threshold = threshold;
        self
    }
}

/// The run directory of `setting` (by name) at `seed`: `<setting>-seed<k>`.
pub(super) fn unit_name(setting: &str, seed: u64) -> String {
    format!("{setting}-seed{seed}")
}

/// A student's (or baseline's) unit is its run directory; its `summary.json` marks it
/// finished, and is what the report reads.
impl Unit for StudentSummary {
    type Setting = Setting;

    fn path(root: &Path, setting: &Setting, seed: u64) -> PathBuf {
        root.join(unit_name(&setting.name, seed)).join(SUMMARY_FILE)
    }
}

fn first_at_least(curve: &[(f64, f64)], threshold: f64) -> Option<usize> {
    curve
        .iter()
        .find(|p| p.1 >= threshold)
        .map(|p| p.0 as usize)
}

/// Epochs to a run's own plateau: the first epoch reaching 90% of the way from
/// `random_return` to `final_return`; `None` if the run ends no better than random.
pub(super) fn epochs_to_plateau(
    curve: &[(f64, f64)],
    random_return: f64,
    final_return: f64,
) -> Option<usize> {
    (final_return > random_return)
        .then(|| first_at_least(curve, random_return + 0.9 * (final_return - random_return)))
        .flatten()
}

/// One k of a private teacher's schedule k₀, c·k₀, c²·k₀, … (computed by repeated
/// multiplication, as [`PrivateTeacher::start_trajectory`] does) and what one release at it
/// costs by Theorem 1.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub(super) struct ScheduledRelease {
    /// 1-based position in the schedule: the rollout (epoch) with `--vanishing-per rollout`.
    pub(super) step: usize,
    /// k.
    pub(super) concentration: f64,
    /// (ε, δ) of one release at k; `None` where δ's bound is 1 (no guarantee).
    pub(super) cost: Option<PrivacyCost>,
    /// Whether the teacher releases through Dir_k at this k; the first `false` is where it
    /// is exhausted (k below its floor, or no guarantee) and shares uniform policies or nothing.
    pub(super) released: bool,
}

/// Longest schedule listed: with c < 1 k falls below any floor long before.
const MAX_SCHEDULE: usize = 10_000;

/// A release with δ at or above this is refused: the teacher stops sharing before it unless
/// `--allow-weak-privacy` (at k₀ the setting is refused).
pub(super) const WEAK_DELTA: f64 = 0.5;

/// The schedule a finished unit ran, from its `metrics.csv` as its ledger recorded it: per
/// epoch k (`concentration`), and the (ε, δ) of one release = the epoch's increase of the
/// basic totals over its releases (one k per epoch with `--vanishing-per rollout`); the first
/// epoch that adds no cost is where the teacher was exhausted (cost `None`). Exact for the
/// units whose δ bound the current code no longer computes (a two-sided Hoeffding
/// half-width at 0.95 before 2026-11-28).
pub(super) fn recorded_schedule(metrics: &crate::run::Table) -> Result<Vec<ScheduledRelease>> {
    let k = metrics.column("concentration")?;
    let eps = metrics.column("epsilon_basic")?;
    let delta = metrics.column("delta_basic")?;
    let releases = metrics.column("releases")?;
    let mut out = Vec::new();
    let (mut e0, mut d0, mut r0) = (0.0, 0.0, 0.0);
    for i in 0..k.len() {
        let n = releases[i] - r0;
        let released = eps[i] > e0 && n > 0.0;
        out.push(ScheduledRelease {
            step: i + 1,
            concentration: k[i],
            cost: released.then(|| PrivacyCost {
                epsilon: (eps[i] - e0) / n,
                delta: (delta[i] - d0) / n,
            }),
            released,
        });
        if !released {
            break;
        }
        (e0, d0, r0) = (eps[i], delta[i], releases[i]);
    }
    Ok(out)
}

/// Which teacher a schedule is for: its number of actions m and the certified Lipschitz bound
/// of its softmax ∘ MLP (as [`TeacherSummary`] records it).
#[derive(Debug, Clone, Copy)]
pub(super) struct TeacherShape {
    pub(super) actions: usize,
    pub(super) lipschitz: f64,
}

impl TeacherShape {
    pub(super) fn of(teacher: &Teacher) -> Self {
        Self {
            actions: teacher.actions(),
            lipschitz: teacher.lipschitz().upper_bound,
        }
    }
}

/// The schedule of a teacher with `config` (mechanism on): every k it releases at, then the
/// first k at which it is exhausted (k < floor, or δ's bound reaches 1). An ε or δ budget is
/// not modelled here (the suite sets none unless `--budget-epsilon`).
pub(super) fn schedule(
    shape: TeacherShape,
    config: &privrl_agents::PrivateTeacherConfig,
) -> Result<Vec<ScheduledRelease>> {
    let mut out = Vec::new();
    let mut k = config.initial_concentration;
    for step in 1..=MAX_SCHEDULE {
        let cost = if k > 0.0 {
            config.release_cost(shape.actions, shape.lipschitz, k)?
        } else {
            None
        };
        let released = k >= config.concentration_floor && cost.is_some();
        out.push(ScheduledRelease {
            step,
            concentration: k,
            cost,
            released,
        });
        let next = k * config.vanishing_coefficient;
        if !released || next == k {
            break;
        }
        k = next;
    }
    Ok(out)
}

/// The teacher configuration a student of `setting` runs with, and its schedule (empty
/// without the mechanism). A δ ≥ [`WEAK_DELTA`] at k₀ is refused with
/// [`KickstartError::WeakPrivacy`]; a later k with δ ≥ [`WEAK_DELTA`] (or no guarantee) is
/// never released: the floor is raised to the last k before it, so the teacher is exhausted
/// there. `--allow-weak-privacy` lifts both.
pub(super) fn private_teacher_config(
    plan: &KickstartPlan,
    kick: &super::plan::Kick,
    shape: TeacherShape,
    setting: &str,
) -> Result<(privrl_agents::PrivateTeacherConfig, Vec<ScheduledRelease>)> {
    let config = plan.teacher_config(shape.actions, kick)?;
    if !kick.mechanism {
        return Ok((config, Vec::new()));
    }
    let planned = schedule(shape, &config)?;
    if plan.allow_weak_privacy {
        return Ok((config, planned));
    }
    let weak = |r: &ScheduledRelease| r.cost.is_none_or(|c| c.delta >= WEAK_DELTA);
    match planned.iter().position(weak) {
        Some(0) => Err(KickstartError::WeakPrivacy {
            setting: setting.to_string(),
            delta: planned[0].cost.map_or(1.0, |c| c.delta),
            k0: kick.k0,
            actions: shape.actions,
            eta: config.eta,
            tau: config.tau,
        }
        .into()),
        Some(i) if planned[i].released => {
            let config = config.with_concentration_floor(planned[i - 1].concentration);
            let raised = schedule(shape, &config)?;
            Ok((config, raised))
        }
        _ => Ok((config, planned)),
    }
}

/// The schedule of `setting`'s teacher (`None` without the mechanism), refused with
/// [`KickstartError::WeakPrivacy`] at δ ≥ 0.5 at k₀ unless the plan allows weak privacy.
pub(super) fn check_privacy(
    plan: &KickstartPlan,
    setting: &Setting,
    shape: TeacherShape,
) -> Result<Option<Vec<ScheduledRelease>>> {
    let Some(kick) = setting.kick.filter(|k| k.mechanism) else {
        return Ok(None);
    };
    Ok(Some(
        private_teacher_config(plan, &kick, shape, &setting.name)?.1,
    ))
}

#[allow(clippy::too_many_arguments)]
fn train_student<B: Backend>(
    plan: &KickstartPlan,
    job: &StudentJob,
    teacher: &Teacher,
    (threshold, random_return): (f64, f64),
    root: &Path,
    device: &B::Device,
    progress: Option<&JobProgress>,
    deadline: Option<Instant>,
) -> Result<Option<StudentSummary>> {
    let Setting {
        name,
        hidden,
        kick,
        epoch_reset,
        ..
    } = &job.setting;
    let run = RunDir::create_in(root, &suite_dir_name(plan), unit_name(name, job.seed))?;
    let ppo_config = plan.ppo_with_reset(hidden, *epoch_reset);
    let mut ppo = Ppo::<Autodiff<B>>::new(
        ppo_config.clone(),
        privrl_envs::make(&plan.env)?,
        device,
        job.seed,
    )?;
    let (shared, teacher_config, student_config) = match kick {
        Some(kick) => {
            let (private, tc, sc) = kickstarting::<B>(plan, job, teacher, kick, &mut ppo)?;
            (Some(private), Some(tc), Some(sc))
        }
        None => (None, None, None),
    };
    let config = run_config(plan, job, &ppo_config, teacher_config, student_config)?;
    // A finished run with the same configuration is read back instead of retrained, and
    // measured against the current threshold.
    if run.completed_with_recorded(&config, without_threshold)? {
        return read_json::<StudentSummary>(&run.file("summary.json"))
            .map(|summary| Some(summary.measured_against(threshold)));
    }
    let bar = progress.map(|p| p.bar(plan.epochs as u64));
    // Seeded epoch resets make every epoch boundary restorable (`--checkpoint-every`).
    let sitting = Sitting {
        run: &run,
        config: config.clone(),
        epochs: plan.epochs,
        every: checkpoint_interval(plan, &ppo_config),
        deadline,
    };
    let (mut metrics, mut progress) = sitting.start(&mut ppo, || run.write_config(&config))?;
    if let Some(bar) = &bar {
        bar.inc(progress.epoch as u64);
    }
    for epoch in progress.epoch + 1..=plan.epochs {
        let stats = ppo.train_epoch()?;
        let mut row = stats.row();
        if let Some(private) = &shared {
            teacher_columns(private, epoch, &mut row, &mut progress.exhausted_at_epoch);
        }
        metrics.write_row(&row)?;
        let previous = progress.curve.last().map_or(f64::NAN, |p| p.1);
        let y = if stats.epoch_return.is_finite() {
            stats.epoch_return
        } else {
            previous
        };
        progress.curve.push((epoch as f64, y));
        progress.epoch = epoch;
        if let Some(bar) = &bar {
            bar.inc(1);
            bar.set_message(format!("return {}", format_number(y)));
        }
        if sitting.end_epoch(&progress, &ppo)? {
            return Ok(None);
        }
    }
    let summary = student_summary(job, progress, shared.as_ref(), (threshold, random_return))?;
    // The ablation's units are committed: CSV and JSON only, no per-run figure.
    if !plan.ablation {
        LearningCurves::new(format!(
            "{} on {}, seed {}",
            job.setting.label, plan.env, job.seed
        ))
        .x_label("epoch")
        .y_label("epoch return")
        .series(name.clone(), vec![summary.curve.clone()])
        .save(&run.file("curve"))?;
    }
    run.write_summary(&summary)?;
    run.clear_partial()?;
    Ok(Some(summary))
}

/// A student run's `config.json`, through text and back, as the file on disk is, so that the
/// comparison with a finished run's is exact.
fn run_config(
    plan: &KickstartPlan,
    job: &StudentJob,
    ppo_config: &PpoConfig,
    teacher_config: Option<privrl_agents::PrivateTeacherConfig>,
    student_config: Option<PrivacyAwareConfig>,
) -> Result<serde_json::Value> {
    let config = serde_json::json!({
        "setting": job.setting,
        "seed": job.seed,
        "env": plan.env,
        "epochs": plan.epochs,
        "ppo": ppo_config,
        "teacher": teacher_config.map(|c| teacher_json(&c)).transpose()?,
        "student": student_config,
        "backend": plan.backend,
    });
    Ok(serde_json::from_str(&config.to_string())?)
}

/// The teacher's configuration as a unit's `config.json` records it: without `release` when it
/// is the paper's real-valued Dirichlet, so that units written before the grid release existed
/// keep their bytes (a finished unit is recognised, a checkpointed one resumes).
fn teacher_json(config: &privrl_agents::PrivateTeacherConfig) -> Result<serde_json::Value> {
    let mut json = serde_json::to_value(config)?;
    if config.release == DirichletRelease::Real {
        if let Some(map) = json.as_object_mut() {
            map.remove("release");
        }
    }
    Ok(json)
}

/// A unit's recorded teacher configuration; one recorded without `release` released through
/// the real-valued Dirichlet ([`teacher_json`]).
fn recorded_teacher_config(
    mut json: serde_json::Value,
) -> Result<privrl_agents::PrivateTeacherConfig> {
    if let Some(map) = json.as_object_mut() {
        map.entry("release")
            .or_insert(serde_json::to_value(DirichletRelease::Real)?);
    }
    Ok(serde_json::from_value(json)?)
}

/// Kickstarting for `kick`: the Dirichlet teacher, shared with the student's auxiliary loss,
/// and both their configurations.
fn kickstarting<B: Backend>(
    plan: &KickstartPlan,
    job: &StudentJob,
    teacher: &Teacher,
    kick: &super::plan::Kick,
    ppo: &mut Ppo<Autodiff<B>>,
) -> Result<(
    Arc<Mutex<PrivateTeacher>>,
    privrl_agents::PrivateTeacherConfig,
    PrivacyAwareConfig,
)> {
    let (tc, _) = private_teacher_config(plan, kick, TeacherShape::of(teacher), &job.setting.name)?;
    let private = Arc::new(Mutex::new(PrivateTeacher::new(
        teacher.clone(),
        tc.clone(),
        job.seed + 1_000_000,
    )?));
    let sc = PrivacyAwareConfig::new()
        .with_lambda(kick.lambda)
        .with_beta(plan.beta)
        .with_balance(plan.balance)
        .with_ignore_uninformative(kick.ignore_uninformative);
    ppo.set_auxiliary_loss(Box::new(PrivacyAwareKickstarting::new(
        private.clone(),
        sc.clone(),
    )?));
    Ok((private, tc, sc))
}

/// The teacher's columns of an epoch's metrics row (its k, what it spent, its releases), and
/// the epoch it was first exhausted at.
fn teacher_columns(
    private: &Arc<Mutex<PrivateTeacher>>,
    epoch: usize,
    row: &mut Vec<(&'static str, f64)>,
    exhausted_at_epoch: &mut Option<usize>,
) {
    let teacher = PrivateTeacher::lock(private);
    let spent = teacher.spent_basic();
    row.extend([
        ("concentration", teacher.concentration()),
        ("epsilon_basic", spent.epsilon),
        ("delta_basic", spent.delta),
        ("releases", teacher.ledger().len() as f64),
    ]);
    if teacher.is_exhausted() && exhausted_at_epoch.is_none() {
        *exhausted_at_epoch = Some(epoch);
    }
}

/// A finished student's summary: its final return, the epochs to the threshold and to its own
/// plateau, and what the teacher spent.
fn student_summary(
    job: &StudentJob,
    progress: UnitProgress,
    shared: Option<&Arc<Mutex<PrivateTeacher>>>,
    (threshold, random_return): (f64, f64),
) -> Result<StudentSummary> {
    let UnitProgress {
        curve,
        exhausted_at_epoch,
        ..
    } = progress;
    let tail: Vec<f64> = curve
        .iter()
        .rev()
        .take(3)
        .map(|p| p.1)
        .filter(|v| v.is_finite())
        .collect();
    let privacy = match shared {
        Some(private) if PrivateTeacher::lock(private).config().mechanism => {
            Some(PrivateTeacher::lock(private).summary()?)
        }
        _ => None,
    };
    let final_return = tail.iter().sum::<f64>() / tail.len().max(1) as f64;
    Ok(StudentSummary {
        setting: job.setting.name.clone(),
        seed: job.seed,
        final_return,
        epochs_to_threshold: first_at_least(&curve, threshold),
        epochs_to_plateau: epochs_to_plateau(&curve, random_return, final_return),
        threshold,
        privacy,
        exhausted_at_epoch,
        curve,
    })
}

pub(super) struct SuiteTask {
    pub(super) plan: KickstartPlan,
    pub(super) root: PathBuf,
    pub(super) threads: usize,
    /// Read finished units only; train nothing (missing units are left out of the report).
    pub(super) report_only: bool,
    /// When runs in progress checkpoint and stop (`--time-limit`).
    pub(super) deadline: Option<Instant>,
}

/// Everything the report needs.
pub(super) struct SuiteResults {
    pub(super) teacher: TeacherSummary,
    pub(super) threshold: f64,
    pub(super) settings: Vec<Setting>,
    pub(super) runs: Vec<StudentSummary>,
    /// Runs of the plan (settings × seeds), finished or not.
    pub(super) planned: usize,
    /// Runs stopped at the time limit (checkpointed, to be continued).
    pub(super) stopped: usize,
    /// Per setting name with the mechanism, the teacher schedule its finished units ran
    /// (from the first unit's recorded teacher configuration; the current plan's where none
    /// finished), and whether that is the current plan's.
    pub(super) schedules: Vec<(String, Vec<ScheduledRelease>, bool)>,
    /// Per finished run (same order as `runs`), its smoothed metrics from `metrics.csv`.
    pub(super) smoothed: Vec<SmoothedRun>,
}

impl BackendTask for SuiteTask {
    type Output = SuiteResults;

    fn run<B: Backend>(self, device: B::Device) -> Result<SuiteResults> {
        let SuiteTask {
            plan,
            root,
            threads,
            report_only,
            deadline,
        } = self;
        // A report from the finished units needs the teacher's summary only (a committed
        // results tree has no checkpoint); training needs its network.
        let (teacher, teacher_summary, shape) = if report_only {
            let (summary, actions) = recorded_teacher(&plan, &root)?;
            let shape = TeacherShape {
                actions,
                lipschitz: summary.lipschitz,
            };
            (None, summary, shape)
        } else {
            let (teacher, summary) = teacher::<B>(&plan, &root, &device, deadline)?;
            let shape = TeacherShape::of(&teacher);
            (Some(teacher), summary, shape)
        };
        // 90% of the way from a random policy's return to the teacher's.
        let threshold = teacher_summary.random_return
            + 0.9 * (teacher_summary.final_return - teacher_summary.random_return);
        let settings = settings(&plan)?;
        // Refuse weak privacy before any training.
        let mut planned_schedules = Vec::new();
        for setting in &settings {
            if let Some(schedule) = check_privacy(&plan, setting, shape)? {
                planned_schedules.push((setting.name.clone(), schedule));
            }
        }
        // Seed-major, so that an interrupted run has every setting at its first seeds.
        let units = seed_major(&settings, 0..plan.seeds as u64);
        let planned = units.len();
        let runs: Vec<Option<StudentSummary>> = if report_only {
            let store = UnitStore::<StudentSummary>::new(root.join(suite_dir_name(&plan)));
            let mut runs = Vec::new();
            for (setting, seed) in &units {
                if let Some(summary) = store.read(setting, *seed)? {
                    runs.push(Some(summary.measured_against(threshold)));
                }
            }
            runs
        } else {
            let teacher = teacher.context("the teacher is trained unless --report-only")?;
            let jobs = units
                .into_iter()
                .map(|(setting, seed)| {
                    Job::new(unit_name(&setting.name, seed), StudentJob { setting, seed })
                })
                .collect();
            let random_return = teacher_summary.random_return;
            run_parallel(jobs, threads, |job, progress| {
                train_student::<B>(
                    &plan,
                    &job,
                    &teacher,
                    (threshold, random_return),
                    &root,
                    &device,
                    Some(progress),
                    deadline,
                )
            })?
            .into_ok()?
            .into_iter()
            .map(|(_, r)| r)
            .collect()
        };
        let stopped = runs.iter().filter(|r| r.is_none()).count();
        let runs: Vec<StudentSummary> = runs.into_iter().flatten().collect();
        let dir = root.join(suite_dir_name(&plan));
        let mut smoothed = Vec::with_capacity(runs.len());
        for run in &runs {
            let unit = dir.join(unit_name(&run.setting, run.seed));
            let metrics = crate::run::read_metrics(&unit.join("metrics.csv"))?;
            smoothed.push(SmoothedRun::from_metrics(&metrics, threshold)?);
        }
        let mut schedules = Vec::new();
        for (name, planned) in planned_schedules {
            let setting = settings.iter().find(|s| s.name == name);
            let current = setting
                .and_then(|s| s.kick)
                .map(|kick| private_teacher_config(&plan, &kick, shape, &name))
                .transpose()?
                .map(|(config, _)| config);
            let recorded = runs
                .iter()
                .find(|r| r.setting == name)
                .map(|r| -> Result<_> {
                    let unit = dir.join(unit_name(&r.setting, r.seed));
                    let config: serde_json::Value = read_json(&unit.join("config.json"))?;
                    let config = recorded_teacher_config(config["teacher"].clone())?;
                    let metrics = crate::run::read_metrics(&unit.join("metrics.csv"))?;
                    Ok((config, recorded_schedule(&metrics)?))
                })
                .transpose()?;
            match (recorded, current) {
                (Some((recorded, ran)), Some(current)) => {
                    let same = serde_json::to_value(&recorded)? == serde_json::to_value(&current)?;
                    schedules.push((name, ran, same));
                }
                _ => schedules.push((name, planned, true)),
            }
        }
        Ok(SuiteResults {
            teacher: teacher_summary,
            threshold,
            settings,
            runs,
            planned,
            stopped,
            schedules,
            smoothed,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn summary(threshold: f64) -> StudentSummary {
        let curve = vec![(1.0, 10.0), (2.0, 40.0), (3.0, 80.0), (4.0, 75.0)];
        StudentSummary {
            setting: "ppo-32".into(),
            seed: 0,
            final_return: 80.0,
            epochs_to_threshold: first_at_least(&curve, threshold),
            epochs_to_plateau: None,
            threshold,
            privacy: None,
            exhausted_at_epoch: None,
            curve,
        }
    }

    /// The schedule a unit ran, read back from its ledger columns: 2 releases per epoch at
    /// k = 5 costing (10, 0.05) each, then k = 1.5 at (3, 0.7), then exhausted (no cost).
    #[test]
    fn a_units_schedule_is_read_back_from_its_ledger_columns() {
        let metrics = crate::run::Table {
            columns: ["concentration", "epsilon_basic", "delta_basic", "releases"]
                .map(String::from)
                .to_vec(),
            rows: vec![
                vec![5.0, 20.0, 0.1, 2.0],
                vec![1.5, 26.0, 1.5, 4.0],
                vec![0.45, 26.0, 1.5, 6.0],
                vec![0.135, 26.0, 1.5, 8.0],
            ],
        };
        let s = recorded_schedule(&metrics).unwrap();
        assert_eq!(s.len(), 3);
        let cost = |i: usize| s[i].cost.map(|c| (c.epsilon, c.delta));
        assert_eq!(cost(0), Some((10.0, 0.05)));
        let (e, d) = cost(1).unwrap();
        assert!((e - 3.0).abs() < 1e-12 && (d - 0.7).abs() < 1e-12);
        assert!(s[0].released && s[1].released && !s[2].released);
        assert_eq!((s[2].step, s[2].concentration, s[2].cost), (3, 0.45, None));
    }

    #[test]
    fn a_finished_unit_is_measured_again_against_the_current_threshold() {
        // Written against an unreachable threshold (an uncut teacher evaluation): never.
        let old = summary(4_000.0);
        assert_eq!(old.epochs_to_threshold, None);
        let now = old.measured_against(30.0);
        assert_eq!((now.epochs_to_threshold, now.threshold), (Some(2), 30.0));
        assert_eq!(now.measured_against(81.0).epochs_to_threshold, None);
    }

    /// A unit's teacher configuration records `release` only when it is the grid: a unit
    /// written before the option existed (the committed AirRaid unit) reads back as the
    /// real-valued release, and a default configuration writes exactly its keys.
    #[test]
    fn the_teacher_release_is_recorded_only_when_it_is_the_grid() {
        let real = privrl_agents::PrivateTeacherConfig::new();
        let json = teacher_json(&real).unwrap();
        assert!(json.get("release").is_none(), "{json}");
        assert_eq!(json.as_object().unwrap().len() + 1, {
            serde_json::to_value(&real)
                .unwrap()
                .as_object()
                .unwrap()
                .len()
        });
        let back = recorded_teacher_config(json).unwrap();
        assert_eq!(back.release, DirichletRelease::Real);
        let grid = real.with_release(DirichletRelease::Grid { points: 1000 });
        let json = teacher_json(&grid).unwrap();
        assert_eq!(
            json["release"],
            serde_json::json!({"Grid": {"points": 1000}})
        );
        assert_eq!(
            recorded_teacher_config(json).unwrap().release,
            DirichletRelease::Grid { points: 1000 }
        );
        let unit = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../results/kickstart-airraid/aware-c0.3-l0.5-ignore-seed0/config.json");
        let committed: serde_json::Value = read_json(&unit).unwrap();
        assert!(committed["teacher"].get("release").is_none());
        let config = recorded_teacher_config(committed["teacher"].clone()).unwrap();
        assert_eq!(config.release, DirichletRelease::Real);
        assert_eq!(teacher_json(&config).unwrap(), committed["teacher"]);
    }

    /// `--grid-release N` reaches the teacher's configuration; a teacher with m = 6 is then
    /// refused by name before any training (its schedule is computed first).
    #[test]
    fn the_grid_release_flag_reaches_the_teacher_and_refuses_six_actions() {
        let mut args = super::super::plan::KickstartArgs::quick(
            0,
            crate::backend::BackendChoice::default(),
            1,
        );
        args.grid_release = Some(1000);
        args.tau = Some(0.0127);
        let plan = args.plan();
        let kick = super::super::plan::Kick {
            mechanism: true,
            vanishing: 0.3,
            lambda: 0.5,
            k0: 5.0,
            map_onto: super::super::plan::MapOnto::Mix,
            ignore_uninformative: false,
        };
        let two = plan.teacher_config(2, &kick).unwrap();
        assert_eq!(two.release, DirichletRelease::Grid { points: 1000 });
        let planned = schedule(
            TeacherShape {
                actions: 2,
                lipschitz: 4.0,
            },
            &two,
        )
        .unwrap();
        assert!(planned
            .iter()
            .all(|r| r.cost.is_none_or(|c| c.delta == 0.0)));
        assert!(planned[0].released);
        let six = plan.teacher_config(6, &kick).unwrap();
        let refused = schedule(
            TeacherShape {
                actions: 6,
                lipschitz: 4.0,
            },
            &six,
        )
        .unwrap_err();
        assert!(
            matches!(
                refused.downcast_ref::<privrl_agents::AgentError>(),
                Some(privrl_agents::AgentError::InvalidParameter {
                    name: "release",
                    ..
                })
            ),
            "{refused}"
        );
        args.grid_release = None;
        assert_eq!(
            args.plan().teacher_config(2, &kick).unwrap().release,
            DirichletRelease::Real
        );
    }

    #[test]
    fn a_unit_configuration_matches_with_or_without_the_old_threshold_key() {
        let current = serde_json::json!({"setting": "ppo-32", "seed": 3, "epochs": 10});
        let mut written = current.clone();
        written["threshold"] = serde_json::json!(4164.75);
        assert_ne!(written, current);
        assert_eq!(without_threshold(written), current);
        // Any other difference still makes it another run.
        let mut other = current.clone();
        other["seed"] = serde_json::json!(4);
        assert_ne!(without_threshold(other), current);
    }
}

//! The students and baselines: one PPO run per (setting, seed), kickstarted from the teacher
//! where the setting says so, run in parallel after the teacher.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use anyhow::Result;
use burn::backend::Autodiff;
use burn::tensor::backend::Backend;
use privrl_agents::kickstart::lock;
use privrl_agents::{
    Agent, Ppo, PrivacyAwareConfig, PrivacyAwareKickstarting, PrivateTeacher, Teacher,
    TeacherPrivacySummary,
};
use serde::{Deserialize, Serialize};

use super::plan::KickstartPlan;
use super::settings::{settings, Setting};
use super::teacher::{teacher, TeacherSummary};
use super::SUITE;
use crate::backend::BackendTask;
use crate::report::format_number;
use crate::report::plot::LearningCurves;
use crate::run::{read_json, RunDir};
use crate::sweep::{run_parallel, Job, JobProgress};

/// `summary.json` of one (setting, seed) run.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(super) struct StudentSummary {
    pub(super) setting: String,
    seed: u64,
    /// Mean epoch return over the last 3 epochs.
    pub(super) final_return: f64,
    /// First epoch whose epoch return reaches the threshold.
    pub(super) epochs_to_threshold: Option<usize>,
    threshold: f64,
    /// The teacher's privacy accounting (kickstarted students with the mechanism).
    pub(super) privacy: Option<TeacherPrivacySummary>,
    /// Epoch at which the teacher was exhausted, if it was.
    pub(super) exhausted_at_epoch: Option<usize>,
    /// (epoch, epoch return), NaN epochs carried forward.
    pub(super) curve: Vec<(f64, f64)>,
}

struct StudentJob {
    setting: Setting,
    seed: u64,
}

fn first_at_least(curve: &[(f64, f64)], threshold: f64) -> Option<usize> {
    curve
        .iter()
        .find(|p| p.1 >= threshold)
        .map(|p| p.0 as usize)
}

#[allow(clippy::too_many_arguments)]
fn train_student<B: Backend>(
    plan: &KickstartPlan,
    job: &StudentJob,
    teacher: &Teacher,
    threshold: f64,
    root: &Path,
    device: &B::Device,
    progress: Option<&JobProgress>,
) -> Result<StudentSummary> {
    let Setting {
        name, hidden, kick, ..
    } = &job.setting;
    let run = RunDir::create_in(root, SUITE, format!("{name}-seed{}", job.seed))?;
    let ppo_config = plan.ppo(hidden);
    let mut ppo = Ppo::<Autodiff<B>>::new(
        ppo_config.clone(),
        privrl_envs::make(&plan.env)?,
        device,
        job.seed,
    )?;
    let mut shared = None;
    let mut teacher_config = None;
    let mut student_config = None;
    if let Some(kick) = kick {
        let tc = plan.teacher_config(teacher.actions(), kick.mechanism, kick.vanishing);
        let private = Arc::new(Mutex::new(PrivateTeacher::new(
            teacher.clone(),
            tc.clone(),
            job.seed + 1_000_000,
        )?));
        let sc = PrivacyAwareConfig::new()
            .with_lambda(kick.lambda)
            .with_beta(plan.beta)
            .with_balance(plan.balance);
        ppo.set_auxiliary_loss(Box::new(PrivacyAwareKickstarting::new(
            private.clone(),
            sc.clone(),
        )?));
        shared = Some(private);
        teacher_config = Some(tc);
        student_config = Some(sc);
    }
    let config = serde_json::json!({
        "setting": job.setting,
        "seed": job.seed,
        "env": plan.env,
        "epochs": plan.epochs,
        "threshold": threshold,
        "ppo": ppo_config,
        "teacher": teacher_config,
        "student": student_config,
        "backend": plan.backend,
    });
    // Through text and back, as the file on disk is, so that the comparison is exact.
    let config: serde_json::Value = serde_json::from_str(&config.to_string())?;
    // A finished run with the same configuration is read back instead of retrained.
    if run.is_complete()
        && read_json::<serde_json::Value>(&run.file("config.json")).ok() == Some(config.clone())
    {
        return read_json(&run.file("summary.json"));
    }
    run.write_config(&config)?;
    let mut metrics = run.metrics()?;
    let bar = progress.map(|p| p.bar(plan.epochs as u64));
    let mut curve: Vec<(f64, f64)> = Vec::new();
    let mut exhausted_at_epoch = None;
    for epoch in 1..=plan.epochs {
        let stats = ppo.train_epoch()?;
        let mut row = stats.row();
        if let Some(private) = &shared {
            let teacher = lock(private);
            let spent = teacher.spent_basic();
            row.extend([
                ("concentration", teacher.concentration()),
                ("epsilon_basic", spent.epsilon),
                ("delta_basic", spent.delta),
                ("releases", teacher.ledger().len() as f64),
            ]);
            if teacher.is_exhausted() && exhausted_at_epoch.is_none() {
                exhausted_at_epoch = Some(epoch);
            }
        }
        metrics.write_row(&row)?;
        let previous = curve.last().map_or(f64::NAN, |p| p.1);
        let y = if stats.epoch_return.is_finite() {
            stats.epoch_return
        } else {
            previous
        };
        curve.push((epoch as f64, y));
        if let Some(bar) = &bar {
            bar.inc(1);
            bar.set_message(format!("return {}", format_number(y)));
        }
    }
    let tail: Vec<f64> = curve
        .iter()
        .rev()
        .take(3)
        .map(|p| p.1)
        .filter(|v| v.is_finite())
        .collect();
    let privacy = match &shared {
        Some(private) if lock(private).config().mechanism => Some(lock(private).summary()?),
        _ => None,
    };
    let summary = StudentSummary {
        setting: name.clone(),
        seed: job.seed,
        final_return: tail.iter().sum::<f64>() / tail.len().max(1) as f64,
        epochs_to_threshold: first_at_least(&curve, threshold),
        threshold,
        privacy,
        exhausted_at_epoch,
        curve,
    };
    LearningCurves::new(format!(
        "{} on {}, seed {}",
        job.setting.label, plan.env, job.seed
    ))
    .x_label("epoch")
    .y_label("epoch return")
    .series(name.clone(), vec![summary.curve.clone()])
    .save(&run.file("curve"))?;
    run.write_summary(&summary)?;
    Ok(summary)
}

pub(super) struct SuiteTask {
    pub(super) plan: KickstartPlan,
    pub(super) root: PathBuf,
    pub(super) threads: usize,
}

/// Everything the report needs.
pub(super) struct SuiteResults {
    pub(super) teacher: TeacherSummary,
    pub(super) threshold: f64,
    pub(super) settings: Vec<Setting>,
    pub(super) runs: Vec<StudentSummary>,
}

impl BackendTask for SuiteTask {
    type Output = SuiteResults;

    fn run<B: Backend>(self, device: B::Device) -> Result<SuiteResults> {
        let SuiteTask {
            plan,
            root,
            threads,
        } = self;
        let (teacher, teacher_summary) = teacher::<B>(&plan, &root, &device)?;
        // 90% of the way from a random policy's return to the teacher's.
        let threshold = teacher_summary.random_return
            + 0.9 * (teacher_summary.final_return - teacher_summary.random_return);
        let settings = settings(&plan);
        let mut jobs = Vec::new();
        for setting in &settings {
            for seed in 0..plan.seeds as u64 {
                jobs.push(Job::new(
                    format!("{}-seed{seed}", setting.name),
                    StudentJob {
                        setting: setting.clone(),
                        seed,
                    },
                ));
            }
        }
        let runs = run_parallel(jobs, threads, |job, progress| {
            train_student::<B>(
                &plan,
                &job,
                &teacher,
                threshold,
                &root,
                &device,
                Some(progress),
            )
        })?
        .into_ok()?
        .into_iter()
        .map(|(_, r)| r)
        .collect();
        Ok(SuiteResults {
            teacher: teacher_summary,
            threshold,
            settings,
            runs,
        })
    }
}

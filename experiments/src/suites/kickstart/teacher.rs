//! The teacher: a teacher-size PPO agent trained once (or reloaded), evaluated against a
//! random policy, with its Lipschitz bound.

use std::path::Path;
use std::time::Instant;

use anyhow::{Context, Result};
use burn::backend::Autodiff;
use burn::tensor::backend::Backend;
use privrl_agents::{ActMode, Agent, Ppo, Teacher};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use super::plan::{suite_dir_name, KickstartError, KickstartPlan};
use super::sitting::{checkpoint_interval, Sitting};
use crate::report::format_number;
use crate::report::plot::LearningCurves;
use crate::run::{read_json, RunDir};

/// `summary.json` of the teacher run.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(super) struct TeacherSummary {
    /// Mean return of `evaluation_episodes` episodes of its stochastic policy, each cut after
    /// `episode_cap` steps.
    pub(super) final_return: f64,
    pub(super) evaluation_episodes: usize,
    /// Steps after which an evaluation episode (teacher's and random policy's) is cut: the
    /// students' `max_ep_len`, so that the threshold is on the scale of the curves it is
    /// compared with. `None` in summaries written before the cap (uncut episodes: on
    /// AirRaid-ram 4,572 against training returns near 2,000), which are re-evaluated.
    #[serde(default)]
    pub(super) episode_cap: Option<usize>,
    /// Mean return of a uniformly random policy (the 0% level of the threshold).
    pub(super) random_return: f64,
    /// Certified Lipschitz bound of softmax ∘ MLP.
    pub(super) lipschitz: f64,
    /// Epoch returns of its training.
    curve: Vec<(f64, f64)>,
}

impl TeacherSummary {
    /// The teacher's and a random policy's returns (the 100% and 0% levels of the threshold),
    /// on 20 and 100 episodes cut after `cap` steps.
    fn score(&mut self, ppo: &mut dyn Agent, plan: &KickstartPlan, cap: usize) -> Result<()> {
        let episodes = 20;
        self.final_return = evaluate(ppo, &plan.env, episodes, cap, plan.seed + 20_000)?;
        self.evaluation_episodes = episodes;
        self.random_return = random_return(&plan.env, 100, cap, plan.seed + 30_000)?;
        self.episode_cap = Some(cap);
        Ok(())
    }
}

/// Mean return of `episodes` episodes of a uniformly random policy, each cut after `cap` steps
/// as a training episode is.
fn random_return(env: &str, episodes: usize, cap: usize, seed: u64) -> Result<f64> {
    let mut env = privrl_envs::make(env)?;
    let n = env
        .action_space()
        .discrete_n()
        .context("discrete actions")?;
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut total = 0.0;
    env.reset(Some(seed));
    for _ in 0..episodes {
        for _ in 0..cap {
            let step = env.step(rng.random_range(0..n))?;
            total += step.reward;
            if step.done() {
                break;
            }
        }
        env.reset(None);
    }
    Ok(total / episodes as f64)
}

fn flat(obs: &privrl_envs::Obs) -> Result<Vec<f32>> {
    let mut out = vec![0.0; obs.flat_len()];
    obs.write_flat(&mut out)?;
    Ok(out)
}

/// Mean return of `episodes` episodes of `agent`'s stochastic policy on a fresh environment,
/// each cut after `cap` steps as a training episode is.
fn evaluate(
    agent: &mut dyn Agent,
    env: &str,
    episodes: usize,
    cap: usize,
    seed: u64,
) -> Result<f64> {
    let mut env = privrl_envs::make(env)?;
    let mut total = 0.0;
    let mut obs = flat(&env.reset(Some(seed)))?;
    for _ in 0..episodes {
        for _ in 0..cap {
            let step = env.step(agent.act(&obs, ActMode::Stochastic))?;
            total += step.reward;
            if step.done() {
                break;
            }
            obs = flat(&step.obs)?;
        }
        obs = flat(&env.reset(None))?;
    }
    Ok(total / episodes as f64)
}

/// The teacher's configuration as its unit records it.
fn teacher_config(plan: &KickstartPlan) -> (&String, usize, privrl_agents::PpoConfig, u64) {
    (
        &plan.env,
        plan.teacher_epochs,
        plan.ppo(&plan.teacher_hidden),
        plan.seed,
    )
}

/// The finished teacher's summary and its number of actions, for a report from finished
/// units (`--report-only`): no network needed, so a committed results tree (which keeps no
/// checkpoint) suffices. Refused if the unit is not a finished teacher of this plan or was
/// scored before the episode cap.
pub(super) fn recorded_teacher(
    plan: &KickstartPlan,
    root: &Path,
) -> Result<(TeacherSummary, usize)> {
    let run = RunDir::create_in(root, &suite_dir_name(plan), "teacher")?;
    anyhow::ensure!(
        run.completed_with(&teacher_config(plan))?,
        "--report-only: {} holds no finished teacher of this configuration",
        run.path().display()
    );
    let summary: TeacherSummary = read_json(&run.file("summary.json"))?;
    let cap = plan.ppo(&plan.student_hidden).max_ep_len;
    anyhow::ensure!(
        summary.episode_cap == Some(cap),
        "--report-only: the teacher in {} was scored without the episode cap {cap}; run \
         without --report-only to score it again",
        run.path().display()
    );
    let actions = match privrl_envs::make(&plan.env)?.action_space() {
        privrl_envs::Space::Discrete { n } => n,
        other => anyhow::bail!(
            "kickstarting needs discrete actions, {} has {other}",
            plan.env
        ),
    };
    Ok((summary, actions))
}

/// Trains (or reloads) the teacher; returns its policy and summary.
pub(super) fn teacher<B: Backend>(
    plan: &KickstartPlan,
    root: &Path,
    device: &B::Device,
    deadline: Option<Instant>,
) -> Result<(Teacher, TeacherSummary)> {
    let run = RunDir::create_in(root, &suite_dir_name(plan), "teacher")?;
    let config = teacher_config(plan);
    let config_json = serde_json::to_value(&config)?;
    let checkpoint = run.file("checkpoint");
    let mut ppo = Ppo::<Autodiff<B>>::new(
        plan.ppo(&plan.teacher_hidden),
        privrl_envs::make(&plan.env)?,
        device,
        plan.seed + 10_000,
    )?;
    // A committed results tree keeps the teacher's summary but not its checkpoint (results/
    // holds no checkpoints), so a missing checkpoint retrains the teacher: same seed, same bytes.
    let reuse = run.completed_with(&config)? && checkpoint.exists();
    let cap = plan.ppo(&plan.student_hidden).max_ep_len;
    if reuse {
        ppo.load_checkpoint(&checkpoint)?;
        let mut summary: TeacherSummary = read_json(&run.file("summary.json"))?;
        tracing::info!("reusing the teacher in {}", run.path().display());
        if summary.episode_cap != Some(cap) {
            // Scored before the episode cap: score the checkpoint again, as a new teacher is.
            tracing::info!("re-evaluating the teacher with episodes cut after {cap} steps");
            summary.score(&mut ppo, plan, cap)?;
            run.write_summary(&summary)?;
        }
        return Ok((Teacher::from_actor(ppo.actor())?, summary));
    }
    let bar = crate::sweep::progress_bar(plan.teacher_epochs as u64, "teacher");
    let sitting = Sitting {
        run: &run,
        config: config_json,
        epochs: plan.teacher_epochs,
        every: checkpoint_interval(plan, ppo.config()),
        deadline,
    };
    let (mut metrics, mut progress) = sitting.start(&mut ppo, || run.write_config(&config))?;
    bar.inc(progress.epoch as u64);
    for epoch in progress.epoch + 1..=plan.teacher_epochs {
        let stats = ppo.train_epoch()?;
        metrics.write_row(&stats.row())?;
        progress
            .curve
            .push((stats.epoch as f64, stats.epoch_return));
        progress.epoch = epoch;
        bar.inc(1);
        bar.set_message(format!("return {}", format_number(stats.epoch_return)));
        if sitting.end_epoch(&progress, &ppo)? {
            bar.finish_and_clear();
            return Err(KickstartError::TimeLimit {
                run: "the teacher".into(),
                epoch,
                epochs: plan.teacher_epochs,
            }
            .into());
        }
    }
    let curve = progress.curve;
    bar.finish_and_clear();
    ppo.save_checkpoint(&checkpoint)?;
    run.clear_partial()?;
    let teacher = Teacher::from_actor(ppo.actor())?;
    let mut summary = TeacherSummary {
        final_return: f64::NAN,
        evaluation_episodes: 0,
        episode_cap: None,
        random_return: f64::NAN,
        lipschitz: teacher.lipschitz().upper_bound,
        curve,
    };
    summary.score(&mut ppo, plan, cap)?;
    LearningCurves::new(format!("teacher (64, 64) PPO on {}", plan.env))
        .x_label("epoch")
        .y_label("epoch return")
        .series("teacher", vec![summary.curve.clone()])
        .save(&run.file("curve"))?;
    run.write_summary(&summary)?;
    Ok((teacher, summary))
}

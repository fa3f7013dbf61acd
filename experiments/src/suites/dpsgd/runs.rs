//! One run of the sweep: a private agent (DP-SGD or LDP, REINFORCE or DQN) trained at one
//! noise level and seed into its run directory (reused when complete with the same config),
//! with the ε it spent.

use std::path::Path;
use std::time::Instant;

use anyhow::{Context, Result};
use burn::backend::Autodiff;
use burn::tensor::backend::Backend;
use privrl_agents::{
    Agent, DpSgdDqn, DpSgdReinforce, DpSgdTrainingConfig, Dqn, EpisodeLog, NoisyObservationEnv,
    PrivacyUnit, Reinforce,
};
use privrl_envs::Env;
use privrl_privacy::{AccountantKind, Adjacency, ObservationNoiseConfig};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use super::controls::CurveColumn;
use super::plan::{DpsgdPlan, Method};
use super::{mean, ENV, SOLVED_RETURN, SOLVED_WINDOW, WARMUP_STEPS};
use crate::backend::BackendTask;
use crate::report::format_number;
use crate::report::plot::{median, LearningCurves};
use crate::run::{RunDir, RunName};
use crate::sweep::JobProgress;

/// What one run's `config.json` holds.
#[derive(Debug, Serialize)]
struct RunConfig<'a> {
    method: Method,
    noise: f64,
    seed: u64,
    plan: &'a DpsgdPlan,
}

/// What one run's `summary.json` holds (read back by the leakage suite through
/// [`crate::summary::read_summaries`]).
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
    /// ε spent at δ, per [`RunSummary::unit`] under [`RunSummary::adjacency`]; `None`
    /// (null) where there is no guarantee (LDP, σ = 0).
    pub epsilon: Option<f64>,
    /// The record ε protects: an episode (REINFORCE) or a transition (DQN); `None` for LDP.
    /// Summaries written before it was recorded read as `None`.
    #[serde(default)]
    pub unit: Option<PrivacyUnit>,
    /// The neighbouring relation ε holds under (add/remove where not recorded, the only
    /// relation then).
    #[serde(default)]
    pub adjacency: Adjacency,
    /// The accountant that gave ε (RDP where not recorded, the only one then).
    #[serde(default)]
    pub accountant: AccountantKind,
    /// REINFORCE only: ε if one user contributed every episode.
    pub epsilon_if_every_episode_one_user: Option<f64>,
    /// DP-SGD DQN: gradient steps released.
    pub gradient_steps: u64,
    /// LDP: the noise standard deviation σ·IQR per observation dimension.
    pub observation_noise_std: Vec<f64>,
    /// Wall-clock seconds.
    pub wall_s: f64,
}

pub(super) struct RunTask<'a> {
    pub(super) root: &'a Path,
    pub(super) plan: &'a DpsgdPlan,
    pub(super) method: Method,
    pub(super) noise: f64,
    pub(super) seed: u64,
    pub(super) progress: &'a JobProgress,
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
pub(super) fn warmup_states(seed: u64) -> Result<Vec<Vec<f32>>> {
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
pub(super) struct RunOutcome {
    pub(super) summary: RunSummary,
    pub(super) curve: Vec<(f64, f64)>,
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
        if run.completed_with(&config)? {
            let summary = crate::run::read_json(&run.file("summary.json"))?;
            let curve = run.read_metrics()?.xy(
                CurveColumn::Episode.column(),
                CurveColumn::MeanReturn25.column(),
            )?;
            return Ok(RunOutcome { summary, curve });
        }
        run.write_config(&config)?;
        let (mut agent, observation_noise_std) =
            private_agent::<B<IB>>(method, noise, seed, plan, &device)?;

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
                (CurveColumn::Episode.column(), log.episodes() as f64),
                (CurveColumn::EnvSteps.column(), log.env_steps as f64),
                (
                    CurveColumn::Return.column(),
                    log.returns.last().copied().unwrap_or(f64::NAN),
                ),
                (CurveColumn::MeanReturn25.column(), recent),
            ])?;
            curve.push((log.episodes() as f64, recent));
            bar.set_position(log.episodes() as u64);
            bar.set_message(format!("return {}", format_number(recent)));
        }
        let wall_s = start.elapsed().as_secs_f64();
        let summary = run_summary(
            &agent,
            (method, noise, seed),
            plan,
            observation_noise_std,
            wall_s,
        )?;
        LearningCurves::new(format!("{} σ = {noise}, seed {seed}", method.name()))
            .x_label("episode")
            .y_label("mean return of the last 25 episodes")
            .series(format!("seed {seed}"), vec![curve.clone()])
            .save(&run.file("curve"))?;
        run.write_summary(&summary)?;
        Ok(RunOutcome { summary, curve })
    }
}

/// The run's agent on its environment (for LDP, CartPole-v1 behind observation noise fitted
/// on a random policy's states), and that noise's standard deviations (empty for DP-SGD).
fn private_agent<B: burn::tensor::backend::AutodiffBackend>(
    method: Method,
    noise: f64,
    seed: u64,
    plan: &DpsgdPlan,
    device: &B::Device,
) -> Result<(PrivateAgent<B>, Vec<f64>)> {
    let dp_config = DpSgdTrainingConfig::new()
        .with_noise_multiplier(noise)
        .with_clip(Some(plan.clip))
        .with_delta(plan.delta)
        .with_adjacency(plan.adjacency)
        .with_accountant(plan.accountant)
        .with_episodes_per_step(plan.reinforce_batch)
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
    let agent: PrivateAgent<B> = match method {
        Method::DpSgdReinforce => PrivateAgent::DpSgdReinforce(DpSgdReinforce::new(
            Reinforce::new(plan.reinforce.clone(), env, device, seed)?,
            &dp_config,
            noise_seed,
        )?),
        Method::DpSgdDqn => PrivateAgent::DpSgdDqn(DpSgdDqn::new(
            Dqn::new(plan.dqn.clone(), env, device, seed)?,
            &dp_config,
            noise_seed,
        )?),
        Method::LdpReinforce => {
            PrivateAgent::Reinforce(Reinforce::new(plan.reinforce.clone(), env, device, seed)?)
        }
        Method::LdpDqn => PrivateAgent::Dqn(Dqn::new(plan.dqn.clone(), env, device, seed)?),
    };
    Ok((agent, observation_noise_std))
}

/// The summary of a finished run: its returns, its ε and how long it took.
fn run_summary<B: burn::tensor::backend::AutodiffBackend>(
    agent: &PrivateAgent<B>,
    (method, noise, seed): (Method, f64, u64),
    plan: &DpsgdPlan,
    observation_noise_std: Vec<f64>,
    wall_s: f64,
) -> Result<RunSummary> {
    let (epsilon, every, gradient_steps) = match agent {
        PrivateAgent::DpSgdReinforce(a) => (
            a.epsilon()?,
            Some(a.epsilon_if_every_step()?),
            a.steps().steps(),
        ),
        PrivateAgent::DpSgdDqn(a) => (a.epsilon()?, None, a.tally().steps()),
        PrivateAgent::Reinforce(a) => (f64::INFINITY, None, a.episode_log().episodes() as u64),
        PrivateAgent::Dqn(a) => (f64::INFINITY, None, a.updates()),
    };
    let log = agent.log();
    Ok(RunSummary {
        method,
        noise,
        seed,
        episodes: log.episodes(),
        env_steps: log.env_steps,
        mean_return: mean(&log.returns),
        median_return: median(&log.returns),
        solved_at_episode: log.first_solved(SOLVED_WINDOW, SOLVED_RETURN).map(|s| s.0),
        epsilon: epsilon.is_finite().then_some(epsilon),
        unit: method.unit(),
        adjacency: plan.adjacency,
        accountant: plan.accountant,
        epsilon_if_every_episode_one_user: every.filter(|e| e.is_finite()),
        gradient_steps,
        observation_noise_std,
        wall_s,
    })
}

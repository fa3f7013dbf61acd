//! The transition unit of DP-SGD DQN, audited from its released gradients (issue 44, item 2).
//!
//! Threat model: white-box, as the DP-SGD audit: the adversary sees every noisy gradient the
//! agent releases and the parameters it is computed at (public: the initial parameters and the
//! releases determine them), and knows every other transition of the replay buffer (DP's
//! adversary may know the rest of the data). Unit and adjacency: one transition, add/remove,
//! as `privrl_agents`' DP-SGD docs state it (docs/dp-sgd.md); the canary is one transition
//! pushed once. DQN's one observation lives in two transitions (as s of one and s′ of the
//! one before): that observation is a group of 2, which this audit does not test.
//!
//! Each run is a real [`DpSgdDqn`] on CartPole: acting, replay, Poisson sampling at
//! q_t = min(1, |B|/n_t), the engine's traced per-transition TD gradients, clipping, noise and
//! accounting are the agent's own; the audit only adds, with probability ½ drawn before the
//! run, one canary transition through [`DpSgdDqn::push_transition`] before the first step, and
//! reads each release through [`DpSgdDqn::step_observed`]. The canary is out of distribution
//! (observation 10·𝟏, reward 10⁴, terminal), so its TD gradient is far above C and its clipped
//! gradient has norm exactly C. The batch size |B| exceeds every n_t of the run, so each step
//! samples the whole buffer (q_t = 1): the adversary then knows the sample and subtracts the
//! other transitions' clipped gradients (the engine's own per-transition path through
//! [`private_td_gradient`], without noise), and projects the rest on the canary's clipped
//! gradient at the step's parameters. With yₜ that projection over σC, yₜ = bₜ·‖ĝₜ‖/(σC) + zₜ
//! with zₜ ~ N(0, 1), bₜ = 1 when the canary is in; the score is Σₜ yₜ, the Neyman–Pearson
//! test of T Gaussian releases. One canary per run: the runs are independent trials.

use anyhow::{ensure, Result};
use burn::backend::Autodiff;
use burn::tensor::backend::{AutodiffBackend, Backend};
use privrl_agents::dp::private_td_gradient;
use privrl_agents::{
    DpSgdDqn, DpSgdTrainingConfig, Dqn, DqnConfig, GradientRecord, TransitionBatch,
};
use privrl_privacy::{AccountantKind, GradientMechanismConfig};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::dpsgd::CLIP;
use super::CanaryRuns;
use crate::backend::BackendTask;

/// The environment of the audited agent.
const ENV: &str = "CartPole-v1";
/// |B|: above every buffer size of a run, so that q_t = 1.
const BATCH: usize = 64;
/// Real transitions in the buffer before the first gradient step.
const LEARNING_STARTS: usize = 16;
/// The canary's observation (every coordinate), far outside CartPole's states.
const CANARY_OBS: f32 = 10.0;
/// The canary's reward: its TD error, hence its gradient, is far above C.
const CANARY_REWARD: f32 = 1.0e4;

/// The most steps a run may take with q_t = 1 (the buffer holds the learning-start
/// transitions, the canary and one transition per step, at most |B|).
pub(super) const MAX_STEPS: u64 = (BATCH - LEARNING_STARTS - 1) as u64;

/// One transition-unit audit: `runs` DQN runs of `steps` DP-SGD steps, one canary each.
#[derive(Debug, Clone, Copy)]
pub(super) struct DqnTransitionAudit {
    pub(super) noise_multiplier: f64,
    pub(super) steps: u64,
    pub(super) runs: usize,
    pub(super) delta: f64,
    pub(super) seed: u64,
    /// Times the canary is pushed when in: 1 is the audit; 2 is a deliberately broken feed (a
    /// record counted twice) that the tests use to show the audit can fail.
    pub(super) copies: usize,
}

impl BackendTask for DqnTransitionAudit {
    type Output = CanaryRuns;

    fn run<B: Backend>(self, device: B::Device) -> Result<CanaryRuns> {
        self.scores::<Autodiff<B>>(&device)
    }
}

/// The canary transition (observation, action 0, terminal).
fn canary(obs_len: usize) -> TransitionBatch {
    TransitionBatch {
        obs_len,
        obs: vec![CANARY_OBS; obs_len],
        actions: vec![0],
        rewards: vec![CANARY_REWARD],
        next_obs: vec![CANARY_OBS; obs_len],
        terminated: vec![true],
    }
}

/// A record's values in parameter order, checked against `layout`'s names.
pub(super) fn values(record: &GradientRecord, layout: &GradientRecord) -> Result<Vec<f64>> {
    ensure!(
        record.params.len() == layout.params.len(),
        "gradient records of different layouts"
    );
    let mut out = Vec::new();
    for (p, l) in record.params.iter().zip(&layout.params) {
        ensure!(
            p.name == l.name && p.values.len() == l.values.len(),
            "gradient records of different layouts"
        );
        out.extend(p.values.iter().map(|&v| f64::from(v)));
    }
    Ok(out)
}

impl DqnTransitionAudit {
    fn scores<B: AutodiffBackend>(&self, device: &B::Device) -> Result<CanaryRuns> {
        ensure!(
            (1..=MAX_STEPS).contains(&self.steps),
            "the DQN audit takes 1 to {MAX_STEPS} steps (q_t = 1), got {}",
            self.steps
        );
        let sigma = self.noise_multiplier;
        let mut out = CanaryRuns {
            held_in: Vec::new(),
            held_out: Vec::new(),
            rdp_epsilon: f64::NAN,
            pld_epsilon: f64::NAN,
        };
        let dqn_config = DqnConfig::new()
            .with_hidden(vec![16, 16])
            .with_batch_size(BATCH)
            .with_buffer_capacity(BATCH)
            .with_learning_starts(LEARNING_STARTS)
            .with_train_frequency(1)
            .with_gradient_steps(1);
        let dp_config = DpSgdTrainingConfig::new()
            .with_noise_multiplier(sigma)
            .with_clip(Some(CLIP))
            .with_delta(self.delta);
        // The adversary's clipped per-transition gradients: the engine's path, no noise.
        let clip_only = GradientMechanismConfig::clipped_gaussian(CLIP, 0.0);
        let mut unused = ChaCha8Rng::seed_from_u64(0);
        for run in 0..self.runs as u64 {
            let run_seed = self.seed.wrapping_mul(1_000_003).wrapping_add(run);
            let is_in = ChaCha8Rng::seed_from_u64(run_seed ^ 0x00ca_9a7e).random_bool(0.5);
            let dqn = Dqn::<B>::new(
                dqn_config.clone(),
                privrl_envs::make(ENV)?,
                device,
                run_seed,
            )?;
            let obs_len = dqn.q_network().d_input();
            let mut agent = DpSgdDqn::new(dqn, &dp_config, run_seed ^ 0xd9_5e0d)?;
            let canary = canary(obs_len);
            let copies = if is_in { self.copies } else { 0 };
            for _ in 0..copies {
                agent.push_transition(
                    &canary.obs,
                    canary.actions[0],
                    canary.rewards[0],
                    &canary.next_obs,
                    true,
                )?;
            }
            let mut score = 0.0;
            let mut releases = 0u64;
            let mut failure = None;
            while releases < self.steps {
                let mut observe = |dqn: &Dqn<B>, released: &GradientRecord| {
                    let mut step = || -> Result<f64> {
                        let n = dqn.replay().len();
                        ensure!(n <= BATCH, "q_t < 1: {n} transitions for |B| = {BATCH}");
                        let dimension = released.params.iter().map(|p| p.values.len()).sum();
                        let mechanism = clip_only.build(dimension, 1)?;
                        // Records 0..copies are the canary's when it is in.
                        let others: Vec<usize> = (copies..n).collect();
                        let (others, _) = private_td_gradient(
                            dqn,
                            &dqn.replay().gather(&others),
                            mechanism.as_ref(),
                            1.0,
                            &mut unused,
                        )?;
                        let (canary_gradient, _) = private_td_gradient(
                            dqn,
                            &canary,
                            mechanism.as_ref(),
                            1.0,
                            &mut unused,
                        )?;
                        let direction = values(&canary_gradient, released)?;
                        let norm = direction.iter().map(|v| v * v).sum::<f64>().sqrt();
                        ensure!(norm > 0.0, "the canary's gradient is zero");
                        // The release times qN = n, less the others' clipped sum.
                        let projection: f64 = values(released, released)?
                            .iter()
                            .zip(values(&others, released)?)
                            .zip(&direction)
                            .map(|((r, o), d)| (r * n as f64 - o) * d)
                            .sum();
                        Ok(projection / (norm * sigma * CLIP))
                    };
                    match step() {
                        Ok(y) => score += y,
                        Err(e) => failure = Some(e),
                    }
                    Ok(())
                };
                agent.step_observed(&mut observe)?;
                if let Some(e) = failure.take() {
                    return Err(e);
                }
                releases = agent.engine().steps();
            }
            if run == 0 {
                out.rdp_epsilon = agent.engine().schedule().epsilon_by(AccountantKind::Rdp)?;
                out.pld_epsilon = agent.engine().schedule().epsilon_by(AccountantKind::Pld)?;
            }
            if is_in {
                out.held_in.push(score);
            } else {
                out.held_out.push(score);
            }
        }
        Ok(out)
    }
}

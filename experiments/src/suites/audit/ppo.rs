//! The episode unit of DP-PPO, audited through its real training path (issue 44, item 2).
//!
//! Threat model: white-box, as the other RL rows: the adversary sees every one of a rollout's K
//! noisy updates and the networks each is computed at (public: the initial networks and the
//! releases determine them), and knows every other episode of the rollout, hence their clipped
//! gradients at each step, and which of them each step's Poisson batch holds (those bits are
//! independent of the canary's, so revealing them leaves its privacy loss as accounted: the
//! release is then the subsampled Gaussian of the canary alone, shifted by a known sum). It
//! does not see whether the canary was sampled. Unit and adjacency: one episode, add/remove,
//! as docs/dp-ppo.md states it; the accountants' ε is the agent's own ε per episode (K steps
//! at (q, σ), [`DpPpo::tally_per_episode`]).
//!
//! Each run is a real [`DpPpo`] on CartPole (one rollout of N episodes; MLP actor and critic):
//! its collection, GAE, Poisson sampling at q, traced per-episode gradients of the joint
//! actor–critic loss, clipping, noise, divisor qN, Adam and accountant are the agent's own. The
//! audit hands it, through [`DpPpo::train_rollout_with`], one canary episode as record 0 of the
//! rollout: one step from observation 10·𝟏, action 0, reward 10⁴ (its gradient is far above C
//! and is clipped to norm C), with loss weight 1 when the canary is in (probability ½, drawn
//! before the run) and 0 when it is out. Weight 0 makes its gradient exactly zero, so every
//! release is the one of the rollout without it: add/remove with N kept public (zero-out).
//!
//! Score: at each of the K steps ([`privrl_agents::DpPpoStep`]) the adversary multiplies the
//! release by qN, subtracts the other sampled episodes' clipped gradients, and projects the rest
//! on the canary's clipped gradient ĝ at that step's networks:
//! yₜ = bₜ·c/σ + zₜ, zₜ ~ N(0, 1), c = ‖ĝ‖/C, where bₜ = 1 only if the canary is in **and**
//! sampled into step t (probability q). The K steps' noises are independent given the past, so
//! the likelihood ratio of the K releases factorises, and the score is its logarithm,
//! Σₜ ln(1 − q + q·exp(c·yₜ/σ − c²/(2σ²))): the Neyman–Pearson test of "in" against "out". A
//! sum of projections would be that test only at q = 1; at q < 1 a step the canary was not
//! sampled into adds noise to the sum, which the mixture's likelihood ratio discounts. One
//! canary per run: the runs are independent trials, and the counting audit bounds ε (the
//! Gaussian reading only at q = 1, where one episode's trade-off curve is Gaussian with
//! μ = √K/σ).

use anyhow::{ensure, Result};
use burn::backend::Autodiff;
use burn::tensor::backend::{AutodiffBackend, Backend};
use privrl_agents::{DpPpo, DpPpoConfig, DpPpoNoise, DpPpoStep, GivenEpisode};
use privrl_privacy::AccountantKind;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::dpsgd::{ln_mixture, CLIP};
use super::dqn::values;
use super::CanaryRuns;
use crate::backend::BackendTask;

/// The environment of the audited agent.
const ENV: &str = "CartPole-v1";
/// Hidden widths of the actor and of the critic.
const HIDDEN: usize = 8;
/// The canary's observation (every coordinate), far outside CartPole's states.
const CANARY_OBS: f32 = 10.0;
/// The canary's reward: its advantage and value error, hence its gradient, are far above C.
const CANARY_REWARD: f64 = 1.0e4;

/// One episode-unit audit: `runs` DP-PPO runs of one rollout of N episodes and K steps, one
/// canary each.
#[derive(Debug, Clone, Copy)]
pub(super) struct PpoEpisodeAudit {
    pub(super) noise_multiplier: f64,
    /// N: episodes per rollout (the canary is one of them).
    pub(super) episodes_per_rollout: usize,
    /// qN: expected episodes per step.
    pub(super) minibatch_episodes: usize,
    /// E: passes over the rollout (K = E·⌈N/qN⌉).
    pub(super) epochs: usize,
    pub(super) runs: usize,
    pub(super) delta: f64,
    pub(super) seed: u64,
}

impl BackendTask for PpoEpisodeAudit {
    type Output = CanaryRuns;

    fn run<B: Backend>(self, device: B::Device) -> Result<CanaryRuns> {
        self.scores::<Autodiff<B>>(&device)
    }
}

/// The canary episode with loss weight `loss_weight`.
fn canary(obs_len: usize, loss_weight: f64) -> GivenEpisode {
    GivenEpisode {
        obs: vec![CANARY_OBS; obs_len],
        actions: vec![0],
        rewards: vec![CANARY_REWARD],
        loss_weight,
    }
}

impl PpoEpisodeAudit {
    /// The agent's configuration: tiny networks, C = 1, the audit's σ, N, qN and E.
    pub(super) fn config(&self) -> DpPpoConfig {
        DpPpoConfig::new()
            .with_episodes_per_rollout(self.episodes_per_rollout)
            .with_num_envs(self.episodes_per_rollout)
            .with_minibatch_episodes(self.minibatch_episodes)
            .with_epochs(self.epochs)
            .with_hidden(vec![HIDDEN])
            .with_clip(Some(CLIP))
            .with_noise(DpPpoNoise::NoiseMultiplier(self.noise_multiplier))
            .with_delta(self.delta)
    }

    fn scores<B: AutodiffBackend>(&self, device: &B::Device) -> Result<CanaryRuns> {
        let sigma = self.noise_multiplier;
        let config = self.config();
        let q = config.sample_rate();
        let mut out = CanaryRuns {
            held_in: Vec::new(),
            held_out: Vec::new(),
            rdp_epsilon: f64::NAN,
            pld_epsilon: f64::NAN,
        };
        for run in 0..self.runs as u64 {
            let run_seed = self.seed.wrapping_mul(1_000_003).wrapping_add(run);
            let is_in = ChaCha8Rng::seed_from_u64(run_seed ^ 0x00ca_9a7e).random_bool(0.5);
            let mut agent = DpPpo::<B>::for_env(config.clone(), ENV, device, run_seed)?;
            let obs_len = agent.actor().d_input();
            let probe = canary(obs_len, 1.0);
            let given = canary(obs_len, if is_in { 1.0 } else { 0.0 });
            let mut score = 0.0;
            let mut steps = 0u64;
            let mut failure = None;
            let observe = |step: &DpPpoStep<'_, B>| {
                let read = || -> Result<f64> {
                    let released = step.released();
                    let (canary_gradient, unclipped) = step.clipped_gradient(&probe)?;
                    ensure!(
                        unclipped > CLIP,
                        "the canary's gradient {unclipped} is not above C"
                    );
                    let direction = values(&canary_gradient, released)?;
                    let norm = direction.iter().map(|v| v * v).sum::<f64>().sqrt();
                    // Every other record the step sampled; the canary's own bit is not read.
                    let others: Vec<usize> =
                        step.batch().iter().copied().filter(|&i| i != 0).collect();
                    let others = values(&step.clipped_sum(&others)?, released)?;
                    let scale = step.expected_batch_size();
                    let projection: f64 = values(released, released)?
                        .iter()
                        .zip(&others)
                        .zip(&direction)
                        .map(|((r, o), d)| (r * scale - o) * d)
                        .sum();
                    let y = projection / (norm * sigma * CLIP);
                    let c = norm / CLIP;
                    Ok(ln_mixture(q, c * y / sigma - c * c / (2.0 * sigma * sigma)))
                };
                match read() {
                    Ok(llr) => score += llr,
                    Err(e) => failure = Some(e),
                }
                steps += 1;
                Ok(())
            };
            agent.train_rollout_with(std::slice::from_ref(&given), observe)?;
            if let Some(e) = failure {
                return Err(e);
            }
            ensure!(
                steps == config.steps_per_rollout(),
                "{steps} steps observed, K = {}",
                config.steps_per_rollout()
            );
            if run == 0 {
                out.rdp_epsilon = agent
                    .tally_per_episode()
                    .with_accountant(AccountantKind::Rdp)
                    .epsilon()?;
                out.pld_epsilon = agent
                    .tally_per_episode()
                    .with_accountant(AccountantKind::Pld)
                    .epsilon()?;
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

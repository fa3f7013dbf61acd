//! The episode unit of DP-SGD REINFORCE, audited from its released gradients (issue 44,
//! item 2).
//!
//! Threat model: white-box, as the DP-SGD audit: the adversary sees the noisy gradient the
//! agent releases and the parameters it is computed at. Unit and adjacency: one episode,
//! zero-out (its gradient replaced by zero, L unchanged), as docs/dp-sgd.md states it; privrl
//! accounts each episode as one Gaussian release at q = 1 (its episodes are used once and
//! discarded), where zero-out gives the add/remove ε that is printed.
//!
//! Each run is a real [`DpSgdReinforce`] on CartPole with L episodes per step (L = 1: the
//! slides' setting): its per-episode gradient, the engine's sampling (q = 1, N = L), clipping,
//! noise, divisor L and accountant are the agent's own. The audit hands the agent, through
//! [`DpSgdReinforce::train_step_with`], all L episodes of its step: a canary episode first, and
//! for L > 1 the L − 1 others, real CartPole episodes played by another policy (a second
//! [`Reinforce`] of its own seed), which the adversary knows and whose clipped gradients at the
//! release's parameters it subtracts (clip_C by hand, as the engine clips). The canary:
//! with probability ½ (drawn before the run) the canary (one step from the zero observation,
//! action 0, weight R = 10⁴, so its gradient is far above C and clipped to norm C), otherwise
//! the same episode with weight 0, whose gradient is exactly zero: in/out is zero-out of the
//! canary with L and every public quantity unchanged. The score
//! is the release times L (the divisor), less the other episodes' clipped gradients, projected
//! on the canary's gradient direction at the release's parameters, over σC:
//! y = b/σ + z with z ~ N(0, 1) and b = 1 when the canary is in, the Neyman–Pearson test of one
//! Gaussian release, whatever L (batching L episodes keeps one episode's ε and divides the
//! noise on the mean by L, which the audit checks). Later steps use other
//! episodes only, so one step is the whole of a canary's exposure. One canary per run: the
//! runs are independent trials.

use anyhow::{ensure, Result};
use burn::backend::Autodiff;
use burn::tensor::backend::{AutodiffBackend, Backend};
use privrl_agents::{
    DpSgdReinforce, DpSgdTrainingConfig, EpisodeBatch, GradientRecord, Reinforce, ReinforceConfig,
};
use privrl_privacy::AccountantKind;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::dpsgd::CLIP;
use super::dqn::values;
use super::CanaryRuns;
use crate::backend::BackendTask;

/// The environment of the audited agent.
const ENV: &str = "CartPole-v1";
/// The canary's weight R of log π(a|s): its gradient is far above C.
const CANARY_RETURN: f32 = 1.0e4;
/// What the seed of the agent that plays the step's other episodes is XORed with.
const OTHERS_STREAM: u64 = 0x07e4_5000;

/// One episode-unit audit: `runs` REINFORCE runs of one DP-SGD step of L episodes, one canary
/// each.
#[derive(Debug, Clone, Copy)]
pub(super) struct ReinforceEpisodeAudit {
    pub(super) noise_multiplier: f64,
    /// Episodes L per step (the canary is one of them).
    pub(super) episodes_per_step: usize,
    pub(super) runs: usize,
    pub(super) delta: f64,
    pub(super) seed: u64,
}

impl BackendTask for ReinforceEpisodeAudit {
    type Output = CanaryRuns;

    fn run<B: Backend>(self, device: B::Device) -> Result<CanaryRuns> {
        self.scores::<Autodiff<B>>(&device)
    }
}

/// The canary episode (weight `weight`): one step from the zero observation, action 0.
fn canary(obs_len: usize, weight: f32) -> EpisodeBatch {
    EpisodeBatch {
        obs_len,
        obs: vec![0.0; obs_len],
        actions: vec![0],
        rewards: vec![weight],
        returns: vec![weight],
        dropout_masks: Vec::new(),
    }
}

impl ReinforceEpisodeAudit {
    fn scores<B: AutodiffBackend>(&self, device: &B::Device) -> Result<CanaryRuns> {
        let sigma = self.noise_multiplier;
        let mut out = CanaryRuns {
            held_in: Vec::new(),
            held_out: Vec::new(),
            rdp_epsilon: f64::NAN,
            pld_epsilon: f64::NAN,
        };
        let config = ReinforceConfig::new()
            .with_hidden(vec![16])
            .with_dropout(0.0);
        let dp_config = DpSgdTrainingConfig::new()
            .with_noise_multiplier(sigma)
            .with_clip(Some(CLIP))
            .with_delta(self.delta)
            .with_episodes_per_step(self.episodes_per_step);
        let divisor = self.episodes_per_step as f64;
        for run in 0..self.runs as u64 {
            let run_seed = self.seed.wrapping_mul(1_000_003).wrapping_add(run);
            let is_in = ChaCha8Rng::seed_from_u64(run_seed ^ 0x00ca_9a7e).random_bool(0.5);
            let reinforce =
                Reinforce::<B>::new(config.clone(), privrl_envs::make(ENV)?, device, run_seed)?;
            let obs_len = reinforce.policy().d_input();
            let mut agent = DpSgdReinforce::new(reinforce, &dp_config, run_seed ^ 0xd9_5e0d)?;
            let probe = canary(obs_len, CANARY_RETURN);
            // The step's other L − 1 episodes: real CartPole episodes of another policy, which
            // the adversary knows (DP's adversary may know every other record).
            let others: Vec<EpisodeBatch> = if self.episodes_per_step > 1 {
                let mut source = Reinforce::<B>::new(
                    config.clone(),
                    privrl_envs::make(ENV)?,
                    device,
                    run_seed ^ OTHERS_STREAM,
                )?;
                (1..self.episodes_per_step)
                    .map(|_| source.collect_episode())
                    .collect::<Result<_, _>>()?
            } else {
                Vec::new()
            };
            let mut given = vec![canary(obs_len, if is_in { CANARY_RETURN } else { 0.0 })];
            given.extend(others.iter().cloned());
            let mut score = None;
            let mut failure = None;
            let mut observe = |policy: &Reinforce<B>, released: &GradientRecord| {
                let project = || -> Result<f64> {
                    let direction = values(&policy.gradient(&probe)?, released)?;
                    let norm = direction.iter().map(|v| v * v).sum::<f64>().sqrt();
                    ensure!(norm > CLIP, "the canary's gradient {norm} is not above C");
                    // Σ clip_C(g_o) over the other episodes, at the release's parameters.
                    let mut others_sum = vec![0.0f64; direction.len()];
                    for other in &others {
                        let g = values(&policy.gradient(other)?, released)?;
                        let g_norm = g.iter().map(|v| v * v).sum::<f64>().sqrt();
                        let factor = if g_norm > CLIP { CLIP / g_norm } else { 1.0 };
                        for (s, v) in others_sum.iter_mut().zip(&g) {
                            *s += v * factor;
                        }
                    }
                    let projection: f64 = values(released, released)?
                        .iter()
                        .zip(&others_sum)
                        .zip(&direction)
                        .map(|((r, o), d)| (r * divisor - o) * d)
                        .sum();
                    Ok(projection / (norm * sigma * CLIP))
                };
                match project() {
                    Ok(y) => score = Some(y),
                    Err(e) => failure = Some(e),
                }
                Ok(())
            };
            agent.train_step_with(&given, &mut observe)?;
            if let Some(e) = failure {
                return Err(e);
            }
            let score = score.ok_or_else(|| anyhow::anyhow!("no release observed"))?;
            if run == 0 {
                out.rdp_epsilon = agent
                    .tally()
                    .with_accountant(AccountantKind::Rdp)
                    .epsilon()?;
                out.pld_epsilon = agent
                    .tally()
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

//! DP-PPO: PPO whose records are whole episodes, trained by the [`PrivacyEngine`].

use std::path::Path;

use burn::config::Config;
use burn::module::{AutodiffModule, Module};
use burn::tensor::backend::{AutodiffBackend, Backend};
use burn::tensor::Tensor;
use privrl_envs::VecEnv;
use privrl_privacy::{AccountantKind, Adjacency, NoiseMode};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use super::tally::PrivateState;
use crate::agent::{load_module, save_module, ActMode, Agent, AgentState, EpisodeLog, EpochStats};
use crate::autodiff;
use crate::buffer::discount_cumsum;
use crate::dp::{traced_forward, ParamLayout, PerSampleGradients, Tape, Traced};
use crate::error::{
    check_count, check_hidden, check_non_negative, check_positive, check_unit_interval, AgentError,
};
use crate::heads::{argmax, host_log_prob, host_softmax, sample_categorical, Categorical};
use crate::network::HostMlp;
use crate::nn::{Activation, Mlp, MlpConfig};
use crate::optim::{AgentOptimizer, OptimizerKind};
use crate::record::GradientRecord;
use crate::tensor::{matrix, one_hot, vector};
use crate::{
    AdaptiveClipping, NoiseCalibration, PoissonSampling, PrivacyEngine, PrivacyEngineConfig,
    PrivacyTally, PrivacyUnit,
};

/// What [`DpPpo::for_env`] XORs into the seed for the engine's generator, so that sampling
/// and noise draw from another stream than the networks and the rollouts.
const NOISE_STREAM: u64 = 0xd999_0045;

/// Where DP-PPO's noise multiplier σ comes from.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub enum DpPpoNoise {
    /// A given σ ≥ 0 (σ = 0: no noise, ε = ∞).
    NoiseMultiplier(f64),
    /// The smallest σ whose ε **per episode** (one rollout's K steps at rate q, [`DpPpo`]) is
    /// at most this, at the configured δ and adjacency, calibrated by the RDP accountant as
    /// Opacus' `make_private_with_epsilon` ([`NoiseCalibration::TargetEpsilon`]).
    TargetEpsilon(f64),
}

/// Hyper-parameters of [`DpPpo`]. The defaults follow the DP literature's large-batch advice
/// (docs/dp-ppo.md): many episodes per rollout, a large expected minibatch, one epoch.
#[derive(Config, Debug)]
pub struct DpPpoConfig {
    /// N: whole episodes collected per rollout, the records of the engine's dataset.
    #[config(default = 1024)]
    pub episodes_per_rollout: usize,
    /// M: environment copies that [`DpPpo::for_env`] steps together (at most N are used).
    #[config(default = 64)]
    pub num_envs: usize,
    /// Expected episodes per minibatch step, qN (q = this / N, Poisson sampling).
    #[config(default = 256)]
    pub minibatch_episodes: usize,
    /// E: passes over the rollout; each has ⌈N / (qN)⌉ steps, so a rollout has
    /// K = E·⌈1/q⌉ steps (for N divisible by qN).
    #[config(default = 1)]
    pub epochs: usize,
    /// Adam's learning rate, one optimiser for actor and critic (their gradient is released
    /// jointly).
    #[config(default = 1e-3)]
    pub lr: f64,
    /// Linear decay of Adam's rate over rollouts (CleanRL's `anneal_lr`): rollout r (from 0)
    /// trains at lr·max(0, 1 − r/R), R this, so rollout R and later ones leave the networks
    /// where they are. Counted in rollouts, a public number, not in environment steps, which
    /// are sums of the private episodes' lengths: the rate reads nothing of the data. `None`:
    /// the rate stays `lr`.
    #[config(default = "None")]
    pub lr_anneal_rollouts: Option<u64>,
    /// ε of PPO's clipped surrogate (Schulman et al. 2017, eq. 7).
    #[config(default = 0.2)]
    pub clip_ratio: f64,
    /// Discount γ.
    #[config(default = 0.99)]
    pub gamma: f64,
    /// GAE-λ.
    #[config(default = 0.95)]
    pub lam: f64,
    /// Weight c₁ of the value loss (Schulman et al. 2017, eq. 9).
    #[config(default = 0.5)]
    pub value_coef: f64,
    /// Weight c₂ of the entropy bonus (eq. 9).
    #[config(default = 0.0)]
    pub entropy_coef: f64,
    /// Normalise each episode's advantages by that episode's own mean and standard
    /// deviation. Off: no normalisation. Never over the batch: a batch mean couples the
    /// episodes (one episode would move every other's loss).
    #[config(default = false)]
    pub normalize_advantages_per_episode: bool,
    /// An episode longer than this is an error, not a cut: DP-PPO uses whole episodes only
    /// (wrap an environment without a time limit in one). CartPole-v1 stops at 500.
    #[config(default = 1000)]
    pub max_episode_len: usize,
    /// Hidden widths of the actor and of the critic (separate networks).
    #[config(default = "vec![64, 64]")]
    pub hidden: Vec<usize>,
    /// Hidden non-linearity.
    #[config(default = "Activation::Tanh")]
    pub activation: Activation,
    /// L2 bound C on each episode's joint (actor and critic) gradient; `None`: no clipping,
    /// allowed only with σ = 0.
    #[config(default = "Some(1.0)")]
    pub clip: Option<f64>,
    /// Adaptive clipping (Andrew et al. 2021, "Differentially Private Learning with Adaptive
    /// Clipping"): C tracks this quantile of the per-episode gradient norms (0.5: the median,
    /// the DP literature's advice), starting from `clip`, at geometric rate 0.2 with noise
    /// qN/20 on the count; the engine splits σ between gradient and count so the ε is that of
    /// σ. An episode's gradient sums its steps, so its norm grows as episodes lengthen: a
    /// fixed C that suits the first rollouts clips nearly everything later. `None`: C fixed.
    #[config(default = "None")]
    pub adaptive_clip_quantile: Option<f64>,
    /// σ, given or calibrated to a target ε per episode.
    #[config(default = "DpPpoNoise::NoiseMultiplier(1.0)")]
    pub noise: DpPpoNoise,
    /// δ of the reported (ε, δ), in (0, 1).
    #[config(default = 1e-5)]
    pub delta: f64,
    /// Neighbouring relation: add/remove one episode (default, as Opacus) or substitution.
    #[config(default = "Adjacency::AddRemove")]
    pub adjacency: Adjacency,
    /// Which accountant reports ε: RDP (default) or the tighter PLD. The calibration of a
    /// target ε is by RDP either way, so it holds under both.
    #[config(default = "AccountantKind::Rdp")]
    pub accountant: AccountantKind,
    /// Sampling and noise from a generator seeded by the run, or the operating system's.
    #[config(default = "NoiseMode::Seeded")]
    pub noise_rng: NoiseMode,
}

impl DpPpoConfig {
    /// Checks every parameter but the privacy ones (the engine checks those); the error names
    /// the first one out of range.
    pub fn validate(&self) -> Result<(), AgentError> {
        check_count("episodes_per_rollout", self.episodes_per_rollout)?;
        check_count("minibatch_episodes", self.minibatch_episodes)?;
        check_count("num_envs", self.num_envs)?;
        if self.minibatch_episodes > self.episodes_per_rollout {
            return Err(AgentError::InvalidParameter {
                name: "minibatch_episodes",
                value: self.minibatch_episodes as f64,
                expected:
                    "<= episodes_per_rollout (the sampling rate q = minibatch / N is at most 1)",
            });
        }
        check_count("epochs", self.epochs)?;
        check_positive("lr", self.lr)?;
        if let Some(rollouts) = self.lr_anneal_rollouts {
            check_count("lr_anneal_rollouts", rollouts as usize)?;
        }
        check_positive("clip_ratio", self.clip_ratio)?;
        check_unit_interval("gamma", self.gamma)?;
        check_unit_interval("lam", self.lam)?;
        check_non_negative("value_coef", self.value_coef)?;
        check_non_negative("entropy_coef", self.entropy_coef)?;
        check_count("max_episode_len", self.max_episode_len)?;
        check_hidden("hidden", &self.hidden)?;
        Ok(())
    }

    /// Adam's rate for the rollout that follows `rollouts_done` rollouts
    /// ([`DpPpoConfig::lr_anneal_rollouts`]).
    pub fn learning_rate(&self, rollouts_done: u64) -> f64 {
        match self.lr_anneal_rollouts {
            Some(total) => self.lr * (1.0 - rollouts_done as f64 / total as f64).max(0.0),
            None => self.lr,
        }
    }

    /// q = qN / N, the Poisson rate of every minibatch step.
    pub fn sample_rate(&self) -> f64 {
        self.minibatch_episodes as f64 / self.episodes_per_rollout as f64
    }

    /// ⌈N / qN⌉ steps per epoch.
    pub fn steps_per_epoch(&self) -> usize {
        self.episodes_per_rollout
            .div_ceil(self.minibatch_episodes.max(1))
    }

    /// K = E·⌈N / qN⌉: the steps of one rollout, every one of which an episode of that rollout
    /// may enter.
    pub fn steps_per_rollout(&self) -> u64 {
        (self.epochs * self.steps_per_epoch()) as u64
    }

    /// The engine's configuration: N episodes at rate q, C, σ (calibrated over K steps for a
    /// target ε), δ, adjacency and accountant.
    pub fn engine_config(&self) -> PrivacyEngineConfig {
        let noise = match self.noise {
            DpPpoNoise::NoiseMultiplier(sigma) => NoiseCalibration::NoiseMultiplier(sigma),
            DpPpoNoise::TargetEpsilon(epsilon) => NoiseCalibration::TargetEpsilon {
                epsilon,
                steps: self.steps_per_rollout(),
            },
        };
        let sampling = PoissonSampling {
            dataset_size: self.episodes_per_rollout,
            sample_rate: self.sample_rate(),
        };
        let config = PrivacyEngineConfig::new(sampling, self.clip.unwrap_or(f64::INFINITY), noise)
            .with_delta(self.delta)
            .with_adjacency(self.adjacency)
            .with_accountant(self.accountant);
        match self.adaptive_clip_quantile {
            Some(quantile) => config.with_adaptive_clipping(AdaptiveClipping::new(
                quantile,
                0.2,
                self.minibatch_episodes as f64 / 20.0,
            )),
            None => config,
        }
    }
}

/// Actor and critic as one module: the engine clips their **joint** per-episode gradient, so
/// one release per step covers both (the critic's update is a release too).
#[derive(Module, Debug)]
struct PpoNetworks<B: Backend> {
    actor: Mlp<B>,
    critic: Mlp<B>,
}

/// One whole episode, with what its PPO loss needs: everything here is a function of this
/// episode and of the parameters it was collected with, nothing of other episodes.
#[derive(Debug, Clone)]
struct Episode {
    obs: Vec<f32>,
    actions: Vec<usize>,
    log_probs: Vec<f32>,
    values: Vec<f32>,
    rewards: Vec<f64>,
    advantages: Vec<f32>,
    returns: Vec<f32>,
    /// What the episode's loss is multiplied by: 1 for every collected episode
    /// ([`GivenEpisode::loss_weight`] for a given one).
    loss_weight: f32,
}

impl Default for Episode {
    fn default() -> Self {
        Self {
            obs: Vec::new(),
            actions: Vec::new(),
            log_probs: Vec::new(),
            values: Vec::new(),
            rewards: Vec::new(),
            advantages: Vec::new(),
            returns: Vec::new(),
            loss_weight: 1.0,
        }
    }
}

impl Episode {
    fn len(&self) -> usize {
        self.actions.len()
    }

    /// GAE-λ advantages and λ-returns (Schulman et al. 2016, eq. 16) from this episode alone:
    /// `last_value` is 0 at a terminal state and V(s_T) of this episode's own final state
    /// after a time limit, never a value from another episode.
    fn finish(&mut self, last_value: f32, gamma: f64, lam: f64, normalize: bool) {
        let n = self.len();
        let value = |t: usize| -> f64 {
            if t < n {
                f64::from(self.values[t])
            } else {
                f64::from(last_value)
            }
        };
        let deltas: Vec<f64> = (0..n)
            .map(|t| self.rewards[t] + gamma * value(t + 1) - value(t))
            .collect();
        let mut advantages = discount_cumsum(&deltas, gamma * lam);
        self.returns = advantages
            .iter()
            .zip(&self.values)
            .map(|(a, &v)| (a + f64::from(v)) as f32)
            .collect();
        if normalize && n > 1 {
            let mean = advantages.iter().sum::<f64>() / n as f64;
            let var = advantages.iter().map(|a| (a - mean).powi(2)).sum::<f64>() / n as f64;
            let std = var.sqrt() + 1e-8;
            for a in &mut advantages {
                *a = (*a - mean) / std;
            }
        }
        self.advantages = advantages.into_iter().map(|a| a as f32).collect();
    }

    fn episode_return(&self) -> f64 {
        self.rewards.iter().sum()
    }
}

/// The per-episode PPO losses of a rollout (the engine's records), for the [`Traced`] fast
/// path: episode e's loss is Σ_t [−min(r_t A_t, clip(r_t, 1 ± ε) A_t) + c₁ (V(s_t) − R̂_t)²
/// − c₂ H(π(·|s_t))] over its own steps, so its gradient is the sum of its steps' gradients.
struct EpisodeLosses<'a, B: Backend> {
    episodes: &'a [Episode],
    obs_len: usize,
    num_actions: usize,
    clip_ratio: f64,
    value_coef: f64,
    entropy_coef: f64,
    device: B::Device,
}

impl<B: AutodiffBackend> EpisodeLosses<'_, B> {
    /// Losses `[records.len()]` of the episodes `records`, padded to the longest one with
    /// masked steps (a masked step adds 0 to the loss, so nothing to any gradient).
    fn losses(&self, nets: &PpoNetworks<B>, records: &[usize], tape: &mut Tape<B>) -> Tensor<B, 1> {
        let e = records.len();
        let t_max = records
            .iter()
            .map(|&r| self.episodes[r].len())
            .max()
            .unwrap_or(0)
            .max(1);
        let rows = e * t_max;
        let mut obs = vec![0.0f32; rows * self.obs_len];
        let mut actions = vec![0usize; rows];
        let mut log_probs = vec![0.0f32; rows];
        let mut advantages = vec![0.0f32; rows];
        let mut returns = vec![0.0f32; rows];
        let mut mask = vec![0.0f32; rows];
        for (i, &r) in records.iter().enumerate() {
            let episode = &self.episodes[r];
            let start = i * t_max;
            let n = episode.len();
            obs[start * self.obs_len..(start + n) * self.obs_len].copy_from_slice(&episode.obs);
            actions[start..start + n].copy_from_slice(&episode.actions);
            log_probs[start..start + n].copy_from_slice(&episode.log_probs);
            advantages[start..start + n].copy_from_slice(&episode.advantages);
            returns[start..start + n].copy_from_slice(&episode.returns);
            // Padding is masked with 0; an episode's own steps carry its loss weight.
            mask[start..start + n].fill(episode.loss_weight);
        }
        let device = &self.device;
        let obs = matrix::<B>(&obs, self.obs_len, device).reshape([e, t_max, self.obs_len]);
        let logits =
            traced_forward(&nets.actor, obs.clone(), tape).reshape([rows, self.num_actions]);
        let values = traced_forward(&nets.critic, obs, tape).reshape([rows]);
        let pi = Categorical::from_logits(logits);
        let log_prob = pi.log_prob(one_hot::<B>(&actions, self.num_actions, device));
        let advantages = vector::<B>(&advantages, device);
        // r_t(θ) = π_θ(a_t|s_t) / π_old(a_t|s_t); eq. 7: min(r A, clip(r, 1 − ε, 1 + ε) A).
        let ratio = (log_prob - vector::<B>(&log_probs, device)).exp();
        let clipped = ratio
            .clone()
            .clamp(1.0 - self.clip_ratio, 1.0 + self.clip_ratio)
            * advantages.clone();
        let surrogate = (ratio * advantages).min_pair(clipped);
        // eq. 9, negated to a loss: −L^CLIP + c₁ L^VF − c₂ H.
        let value_loss = (values - vector::<B>(&returns, device)).powi_scalar(2);
        let step_loss =
            surrogate.neg() + value_loss * self.value_coef - pi.entropy() * self.entropy_coef;
        (step_loss * vector::<B>(&mask, device))
            .reshape([e, t_max])
            .sum_dim(1)
            .reshape([e])
    }
}

/// Where [`DpPpo::time_private_and_plain_steps_with`] is: about to time the plain steps, about
/// to time the private steps, or done.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DpPpoBenchPhase {
    /// Before the plain PPO steps (the rollout is collected).
    Plain,
    /// After the plain steps, before the private ones.
    Private,
    /// After the private steps.
    Done,
}

/// An episode handed to [`DpPpo::train_rollout_with`] in place of a collected one: an
/// auditor's canary (issue 44, `cargo xtask audit`). It is finished as a collected episode
/// is (log-probabilities and values from the policy the rollout is collected with, GAE-λ
/// from its own rewards, value 0 after its last step: it ends terminated), and is then one
/// record of the rollout like the others: Poisson-sampled, clipped, noised and accounted
/// with them.
#[derive(Debug, Clone, PartialEq)]
pub struct GivenEpisode {
    /// Observations, one row of the environment's width per step.
    pub obs: Vec<f32>,
    /// The action taken at each step.
    pub actions: Vec<usize>,
    /// The reward after each step.
    pub rewards: Vec<f64>,
    /// What the episode's PPO loss is multiplied by, finite and ≥ 0: 1 for an episode like
    /// the collected ones; 0 makes its gradient exactly zero, so that every release is the one
    /// of the rollout without it (add/remove adjacency with N kept public: zero-out).
    pub loss_weight: f64,
}

/// What [`DpPpo::train_rollout_with`] hands its observer at each of a rollout's K steps, before
/// the update is applied: the white-box adversary's view (the released update and the networks
/// it was computed at), and, for an auditor that plays DP's adversary (who may know every
/// other episode), the clipped gradients of chosen episodes at those networks, computed by the
/// engine's own per-episode path without noise.
pub struct DpPpoStep<'a, B: AutodiffBackend> {
    networks: &'a PpoNetworks<B>,
    losses: &'a EpisodeLosses<'a, B>,
    finisher: &'a EpisodeFinisher,
    batch: &'a [usize],
    released: &'a GradientRecord,
    clip: f64,
    expected_batch_size: f64,
}

impl<B: AutodiffBackend> DpPpoStep<'_, B> {
    /// The released update: (Σ_{i ∈ batch} clip_C(g_i) + N(0, σ²C²I)) / qN, in the joint
    /// (actor, critic) parameter layout.
    pub fn released(&self) -> &GradientRecord {
        self.released
    }

    /// qN, what the step's clipped noisy sum was divided by.
    pub fn expected_batch_size(&self) -> f64 {
        self.expected_batch_size
    }

    /// C of this step.
    pub fn clip(&self) -> f64 {
        self.clip
    }

    /// The step's Poisson batch: the rollout's record indices (the given episodes first, then
    /// the collected ones). Which records were sampled is **not** released and not covered by
    /// the guarantee: an auditor may read the other records' entries (independent of the
    /// audited one's, they leave its privacy loss as accounted) but not the audited record's.
    pub fn batch(&self) -> &[usize] {
        self.batch
    }

    /// Σ_{i ∈ records} clip_C(g_i) at this step's networks, no noise, in the released layout
    /// (zero for no records).
    pub fn clipped_sum(&self, records: &[usize]) -> Result<GradientRecord, AgentError> {
        Ok(clipped_sum(self.networks, self.losses, records, self.clip)?.0)
    }

    /// `episode`'s clipped gradient clip_C(g) at this step's networks (finished with the
    /// policy the rollout was collected with, as if it were a record of this rollout), no
    /// noise, and its norm ‖g‖₂ before clipping.
    pub fn clipped_gradient(
        &self,
        episode: &GivenEpisode,
    ) -> Result<(GradientRecord, f64), AgentError> {
        let episodes = [self.finisher.finish(episode)?];
        let losses = EpisodeLosses::<B> {
            episodes: &episodes,
            obs_len: self.losses.obs_len,
            num_actions: self.losses.num_actions,
            clip_ratio: self.losses.clip_ratio,
            value_coef: self.losses.value_coef,
            entropy_coef: self.losses.entropy_coef,
            device: self.losses.device.clone(),
        };
        let (record, norms) = clipped_sum(self.networks, &losses, &[0], self.clip)?;
        Ok((record, norms.first().map_or(0.0, |&n| f64::from(n))))
    }
}

/// Σ clip_C(g_i) over `records` of `losses` at `networks` (the engine's traced per-episode
/// path, no noise) and the records' norms before clipping.
fn clipped_sum<B: AutodiffBackend>(
    networks: &PpoNetworks<B>,
    losses: &EpisodeLosses<'_, B>,
    records: &[usize],
    clip: f64,
) -> Result<(GradientRecord, Vec<f32>), AgentError> {
    let per_episode = Traced(
        |nets: &PpoNetworks<B>, records: &[usize], tape: &mut Tape<B>| {
            losses.losses(nets, records, tape)
        },
    );
    let (layout, clipped) = autodiff::exclusive(|| -> Result<_, AgentError> {
        let layout = ParamLayout::of(networks);
        if records.is_empty() {
            let zeros = vec![0.0; layout.num_values()];
            return Ok((layout, (zeros, Vec::new())));
        }
        let clipped = per_episode.clipped_sum(networks, records, &layout, clip)?;
        Ok((layout, (clipped.sum, clipped.norms)))
    })?;
    Ok((layout.record(&clipped.0)?, clipped.1))
}

/// Turns a [`GivenEpisode`] into a record of a rollout, with the policy the rollout is
/// collected with (host copies taken before it is collected).
struct EpisodeFinisher {
    actor: HostMlp,
    critic: HostMlp,
    obs_len: usize,
    num_actions: usize,
    gamma: f64,
    lam: f64,
    normalize: bool,
    max_episode_len: usize,
}

impl EpisodeFinisher {
    fn finish(&self, given: &GivenEpisode) -> Result<Episode, AgentError> {
        let n = given.actions.len();
        if n == 0 || n > self.max_episode_len {
            return Err(AgentError::InvalidParameter {
                name: "given episode length",
                value: n as f64,
                expected: "in [1, max_episode_len]",
            });
        }
        if given.obs.len() != n * self.obs_len {
            return Err(AgentError::ShapeMismatch {
                what: "given episode observations",
                expected: n * self.obs_len,
                got: given.obs.len(),
            });
        }
        if given.rewards.len() != n {
            return Err(AgentError::ShapeMismatch {
                what: "given episode rewards",
                expected: n,
                got: given.rewards.len(),
            });
        }
        if let Some(&action) = given.actions.iter().find(|&&a| a >= self.num_actions) {
            return Err(AgentError::InvalidParameter {
                name: "given episode action",
                value: action as f64,
                expected: "below the number of actions",
            });
        }
        check_non_negative("loss_weight", given.loss_weight)?;
        let mut episode = Episode {
            obs: given.obs.clone(),
            actions: given.actions.clone(),
            rewards: given.rewards.clone(),
            loss_weight: given.loss_weight as f32,
            ..Episode::default()
        };
        for (o, &action) in given.obs.chunks(self.obs_len).zip(&given.actions) {
            let logits = self.actor.forward(o);
            episode.log_probs.push(host_log_prob(&logits, action));
            episode.values.push(self.critic.forward(o)[0]);
        }
        episode.finish(0.0, self.gamma, self.lam, self.normalize);
        Ok(episode)
    }
}

/// What one [`DpPpo::train_rollout`] did.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct DpPpoStats {
    /// Rollouts so far, this one included.
    pub rollout: u64,
    /// Environment steps of this rollout's episodes.
    pub env_steps: usize,
    /// Mean return of this rollout's episodes. A statistic of the private episodes, **outside**
    /// the (ε, δ) guarantee (as every DP-RL paper's learning curve): log it for research, not
    /// as a release.
    pub mean_return: f64,
    /// ε per episode (type docs of [`DpPpo`]).
    pub epsilon_per_episode: f64,
    /// ε if one record had taken part in every step of every rollout so far (conservative).
    pub epsilon_whole_run: f64,
}

/// PPO with **one episode as the unit of privacy**, every gradient step a DP-SGD release of the
/// [`PrivacyEngine`] (Abadi et al. 2016, Algorithm 1).
///
/// # What it does
///
/// Each rollout collects N whole episodes with the current policy from a [`VecEnv`] (N fixed
/// in advance: every slot plays a fixed number of episodes to their end; none is cut, none
/// spans two rollouts). These N episodes are the engine's dataset. Then K = E·⌈1/q⌉ steps
/// (E epochs, expected minibatch qN episodes): each step Poisson-samples episodes at rate q,
/// computes each sampled episode's gradient of the **sum** of its steps' PPO losses (clipped
/// surrogate, c₁·value loss, −c₂·entropy; Schulman et al. 2017, eq. 9) with respect to actor
/// and critic jointly, clips that joint gradient to C, sums, adds N(0, σ²C²I), divides by qN
/// and takes one Adam step. Actor and critic have separate parameters but one release: the
/// critic's update is a release too, and clipping their concatenated gradient to C bounds one
/// episode's influence on both at once, so each step is **one** subsampled Gaussian release
/// (not two).
///
/// What would couple episodes, and is therefore absent: advantage normalisation by the batch
/// mean and standard deviation (none here, or per episode:
/// [`DpPpoConfig::normalize_advantages_per_episode`]); running observation or reward
/// normalisation fitted on the private data (none); episodes truncated at a rollout boundary
/// (whole episodes only; an episode over [`DpPpoConfig::max_episode_len`] is an error);
/// value bootstrapping across episodes (a terminal state has value 0, a time-limited one
/// bootstraps from its own final state). PPO's KL early stopping reads the data, so it is not
/// used: every rollout runs exactly K steps (K public).
///
/// # Privacy
///
/// **Unit: one episode. Adjacency: add/remove one episode** (default; substitution
/// selectable, [`DpPpoConfig::adjacency`]). An episode's data enter only the K steps of its own
/// rollout, each a Poisson-subsampled Gaussian at (q, σ) with sensitivity C (the loss of a
/// sampled episode is a function of that episode and the current parameters only). Later
/// rollouts are collected and trained with parameters that are outputs of earlier releases:
/// by adaptive composition (Dwork, Rothblum & Vadhan 2010; for RDP, Mironov 2017,
/// Proposition 1) and post-processing, they add nothing to this episode's privacy loss. So
///
/// **ε per episode = the composition of K subsampled-Gaussian steps at (q, σ)**
/// ([`DpPpo::epsilon_per_episode`]), by RDP (Mironov, Talwar & Zhang 2019) or PLD, the same
/// for every rollout; a target ε calibrates σ over these K steps. The conservative figure that
/// ignores the one-rollout argument composes every step of every rollout
/// ([`DpPpo::epsilon_whole_run`], the engine's own ε). One episode is one user's trajectory:
/// a user who contributes several episodes composes over them.
///
/// The training returns that [`DpPpoStats::mean_return`] reports are computed from the
/// private episodes without noise: outside the guarantee.
pub struct DpPpo<B: AutodiffBackend> {
    config: DpPpoConfig,
    networks: PpoNetworks<B>,
    optimizer: AgentOptimizer<PpoNetworks<B>, B>,
    engine: PrivacyEngine,
    envs: VecEnv,
    obs_len: usize,
    num_actions: usize,
    rng: ChaCha8Rng,
    device: B::Device,
    rollouts: u64,
    log: EpisodeLog,
}

impl<B: AutodiffBackend> DpPpo<B> {
    /// DP-PPO on `envs` (discrete actions, flat observations), networks initialised and
    /// rollouts seeded from `seed`, sampling and noise from `noise_seed` (or the operating
    /// system's, [`DpPpoConfig::noise_rng`]). Every parameter is checked here, by name.
    pub fn new(
        config: DpPpoConfig,
        envs: VecEnv,
        device: &B::Device,
        seed: u64,
        noise_seed: u64,
    ) -> Result<Self, AgentError> {
        config.validate()?;
        let obs_len = envs.obs_len();
        let num_actions =
            envs.action_space()
                .discrete_n()
                .ok_or_else(|| AgentError::UnsupportedEnv {
                    env: "VecEnv".into(),
                    reason: "DP-PPO needs a discrete action space".into(),
                })?;
        let engine =
            PrivacyEngine::new(config.engine_config(), config.noise_rng.source(noise_seed))?;
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let networks = PpoNetworks {
            actor: MlpConfig::new(obs_len, config.hidden.clone(), num_actions)
                .with_activation(config.activation)
                .init(device, &mut rng),
            critic: MlpConfig::new(obs_len, config.hidden.clone(), 1)
                .with_activation(config.activation)
                .init(device, &mut rng),
        };
        Ok(Self {
            config,
            networks,
            optimizer: AgentOptimizer::new(OptimizerKind::Adam),
            engine,
            envs,
            obs_len,
            num_actions,
            rng,
            device: device.clone(),
            rollouts: 0,
            log: EpisodeLog::default(),
        })
    }

    /// DP-PPO on min(M, N) copies of the registered environment `env`
    /// ([`privrl_envs::make`]), with the noise seeded by `seed` too (a stream of its own).
    pub fn for_env(
        config: DpPpoConfig,
        env: &str,
        device: &B::Device,
        seed: u64,
    ) -> Result<Self, AgentError> {
        config.validate()?;
        let envs = VecEnv::make(env, config.num_envs.min(config.episodes_per_rollout))?;
        Self::new(config, envs, device, seed, seed ^ NOISE_STREAM)
    }

    /// The configuration.
    pub fn config(&self) -> &DpPpoConfig {
        &self.config
    }

    /// The policy network (logits).
    pub fn actor(&self) -> &Mlp<B> {
        &self.networks.actor
    }

    /// The value network.
    pub fn critic(&self) -> &Mlp<B> {
        &self.networks.critic
    }

    /// The engine that samples, clips, noises and accounts every step.
    pub fn engine(&self) -> &PrivacyEngine {
        &self.engine
    }

    /// σ, given or calibrated.
    pub fn noise_multiplier(&self) -> f64 {
        self.engine.noise_multiplier()
    }

    /// Rollouts trained so far.
    pub fn rollouts(&self) -> u64 {
        self.rollouts
    }

    /// One rollout of N whole episodes, then its K private steps (type docs).
    pub fn train_rollout(&mut self) -> Result<DpPpoStats, AgentError> {
        self.train_rollout_with(&[], |_| Ok(()))
    }

    /// [`DpPpo::train_rollout`] with the episodes `given` (at most N) in place of the first
    /// `given.len()` collected ones (records 0..`given.len()` of the rollout), and `observe`
    /// handed every one of the K steps' release with the networks it was computed at, before
    /// the update is applied ([`DpPpoStep`]): an auditor's canary episodes and the white-box
    /// adversary's view of a rollout (issue 44, `cargo xtask audit`). The given episodes are
    /// records like the collected ones, accounted with them; they are not environment steps
    /// and are not in the episode log, but their returns are in the mean return.
    pub fn train_rollout_with<F>(
        &mut self,
        given: &[GivenEpisode],
        mut observe: F,
    ) -> Result<DpPpoStats, AgentError>
    where
        F: FnMut(&DpPpoStep<'_, B>) -> Result<(), AgentError>,
    {
        let n = self.config.episodes_per_rollout;
        if given.len() > n {
            return Err(AgentError::InvalidParameter {
                name: "given episodes",
                value: given.len() as f64,
                expected: "at most episodes_per_rollout",
            });
        }
        let finisher = EpisodeFinisher {
            actor: HostMlp::from_mlp(&self.networks.actor.valid()),
            critic: HostMlp::from_mlp(&self.networks.critic.valid()),
            obs_len: self.obs_len,
            num_actions: self.num_actions,
            gamma: self.config.gamma,
            lam: self.config.lam,
            normalize: self.config.normalize_advantages_per_episode,
            max_episode_len: self.config.max_episode_len,
        };
        let mut episodes = given
            .iter()
            .map(|g| finisher.finish(g))
            .collect::<Result<Vec<_>, _>>()?;
        let collected = self.collect_rollout(n - given.len())?;
        let env_steps = collected.iter().map(Episode::len).sum();
        episodes.extend(collected);
        let mean_return =
            episodes.iter().map(Episode::episode_return).sum::<f64>() / episodes.len() as f64;
        let losses = EpisodeLosses::<B> {
            episodes: &episodes,
            obs_len: self.obs_len,
            num_actions: self.num_actions,
            clip_ratio: self.config.clip_ratio,
            value_coef: self.config.value_coef,
            entropy_coef: self.config.entropy_coef,
            device: self.device.clone(),
        };
        let per_episode = Traced(
            |nets: &PpoNetworks<B>, records: &[usize], tape: &mut Tape<B>| {
                losses.losses(nets, records, tape)
            },
        );
        let expected_batch_size = self.engine.expected_batch_size();
        let lr = self.config.learning_rate(self.rollouts);
        for _ in 0..self.config.steps_per_rollout() {
            self.private_step(lr, &per_episode, |networks, batch, released, clip| {
                observe(&DpPpoStep {
                    networks,
                    losses: &losses,
                    finisher: &finisher,
                    batch,
                    released,
                    clip,
                    expected_batch_size,
                })
            })?;
        }
        self.rollouts += 1;
        Ok(DpPpoStats {
            rollout: self.rollouts,
            env_steps,
            mean_return,
            epsilon_per_episode: self.epsilon_per_episode()?,
            epsilon_whole_run: self.epsilon_whole_run()?,
        })
    }

    /// For `cargo xtask bench`: one rollout, then `steps` private steps on it and `steps` plain
    /// PPO steps on the same rollout at the same expected minibatch (Poisson draws at the same
    /// q from a generator of their own; the plain step sums the drawn episodes' losses and
    /// takes one ordinary backward: no per-episode gradients, clipping or noise). Returns the
    /// wall-clock seconds per private step and per plain step. The plain steps' parameters are
    /// discarded and they are not releases; the private ones count as every step does.
    pub fn time_private_and_plain_steps(&mut self, steps: usize) -> Result<(f64, f64), AgentError> {
        self.time_private_and_plain_steps_with(steps, |_| {})
    }

    /// [`DpPpo::time_private_and_plain_steps`], calling `mark` just before the plain steps
    /// ([`DpPpoBenchPhase::Plain`]), between them and the private steps ([`DpPpoBenchPhase::Private`])
    /// and after ([`DpPpoBenchPhase::Done`]): where a caller resets and reads a memory high-water mark
    /// to measure each kind's peak on the same rollout.
    pub fn time_private_and_plain_steps_with(
        &mut self,
        steps: usize,
        mut mark: impl FnMut(DpPpoBenchPhase),
    ) -> Result<(f64, f64), AgentError> {
        let episodes = self.collect_rollout(self.config.episodes_per_rollout)?;
        let losses = EpisodeLosses::<B> {
            episodes: &episodes,
            obs_len: self.obs_len,
            num_actions: self.num_actions,
            clip_ratio: self.config.clip_ratio,
            value_coef: self.config.value_coef,
            entropy_coef: self.config.entropy_coef,
            device: self.device.clone(),
        };
        let (networks, optimizer) = (self.networks.clone(), self.optimizer.clone());
        let mut draws = ChaCha8Rng::seed_from_u64(0);
        let q = self.config.sample_rate();
        mark(DpPpoBenchPhase::Plain);
        let plain_start = std::time::Instant::now();
        for _ in 0..steps {
            let batch: Vec<usize> = (0..episodes.len())
                .filter(|_| draws.random::<f64>() < q)
                .collect();
            if batch.is_empty() {
                continue;
            }
            let nets = self.networks.clone();
            let grads = autodiff::exclusive(|| {
                let loss = losses.losses(&nets, &batch, &mut Tape::off()).sum();
                burn::optim::GradientsParams::from_grads(autodiff::backward(&loss), &nets)
            });
            self.networks = self.optimizer.step(self.config.lr, nets, grads);
        }
        let plain = plain_start.elapsed().as_secs_f64() / steps.max(1) as f64;
        (self.networks, self.optimizer) = (networks, optimizer);
        let per_episode = Traced(
            |nets: &PpoNetworks<B>, records: &[usize], tape: &mut Tape<B>| {
                losses.losses(nets, records, tape)
            },
        );
        mark(DpPpoBenchPhase::Private);
        let private_start = std::time::Instant::now();
        for _ in 0..steps {
            self.private_step(self.config.lr, &per_episode, |_, _, _, _| Ok(()))?;
        }
        let private = private_start.elapsed().as_secs_f64() / steps.max(1) as f64;
        mark(DpPpoBenchPhase::Done);
        Ok((private, plain))
    }

    /// One DP-SGD step of the engine on the rollout's episodes and its Adam update at rate
    /// `lr`; `observe` gets the networks, the batch, the release and the step's C before the
    /// update.
    fn private_step<F, O>(
        &mut self,
        lr: f64,
        per_episode: &Traced<F>,
        observe: O,
    ) -> Result<(), AgentError>
    where
        F: Fn(&PpoNetworks<B>, &[usize], &mut Tape<B>) -> Tensor<B, 1> + Sync,
        O: FnOnce(&PpoNetworks<B>, &[usize], &GradientRecord, f64) -> Result<(), AgentError>,
    {
        let clip = self.engine.clip();
        let batch = self.engine.sample()?;
        let released = self
            .engine
            .private_gradient(&self.networks, &batch, per_episode)?;
        observe(&self.networks, &batch, &released, clip)?;
        let networks = self.networks.clone();
        let grads = autodiff::exclusive(|| released.to_gradients_params(&networks))?;
        self.networks = self.optimizer.step(lr, networks, grads);
        Ok(())
    }

    /// `n` whole episodes from the current policy (N, but for given ones): slot i of the
    /// [`VecEnv`] plays ⌊n/M⌋ (+1 for the first n mod M slots) episodes to their end, then
    /// idles (its steps are discarded). Which episodes are collected is fixed in advance, not
    /// by their lengths.
    fn collect_rollout(&mut self, n: usize) -> Result<Vec<Episode>, AgentError> {
        let m = self.envs.num_envs();
        let d = self.obs_len;
        let quota: Vec<usize> = (0..m).map(|i| n / m + usize::from(i < n % m)).collect();
        let actor = HostMlp::from_mlp(&self.networks.actor.valid());
        let critic = HostMlp::from_mlp(&self.networks.critic.valid());
        let mut obs = vec![0.0f32; m * d];
        self.envs.reset_flat(self.rng.random(), &mut obs)?;
        let mut step = self.envs.flat_step_buffer();
        let mut current = vec![Episode::default(); m];
        let mut finished = vec![0usize; m];
        let mut actions = vec![0usize; m];
        let mut episodes = Vec::with_capacity(n);
        while finished.iter().zip(&quota).any(|(f, q)| f < q) {
            for i in 0..m {
                actions[i] = 0;
                if finished[i] == quota[i] {
                    continue;
                }
                let o = &obs[i * d..(i + 1) * d];
                let logits = actor.forward(o);
                let action = sample_categorical(&host_softmax(&logits), &mut self.rng);
                let episode = &mut current[i];
                episode.obs.extend_from_slice(o);
                episode.actions.push(action);
                episode.log_probs.push(host_log_prob(&logits, action));
                episode.values.push(critic.forward(o)[0]);
                actions[i] = action;
            }
            self.envs.step_flat(&actions, &mut step)?;
            for i in 0..m {
                if finished[i] == quota[i] {
                    continue;
                }
                current[i].rewards.push(step.rewards()[i]);
                if step.done(i) {
                    let last_value = match step.final_obs_row(i) {
                        Some(last) if !step.terminated()[i] => critic.forward(last)[0],
                        _ => 0.0,
                    };
                    let mut episode = std::mem::take(&mut current[i]);
                    episode.finish(
                        last_value,
                        self.config.gamma,
                        self.config.lam,
                        self.config.normalize_advantages_per_episode,
                    );
                    self.log.env_steps += episode.len() as u64;
                    self.log.record(episode.episode_return(), episode.len());
                    episodes.push(episode);
                    finished[i] += 1;
                } else if current[i].len() >= self.config.max_episode_len {
                    return Err(AgentError::InvalidParameter {
                        name: "max_episode_len",
                        value: self.config.max_episode_len as f64,
                        expected: "at least every episode's length: DP-PPO trains on whole \
                                   episodes only (give the environment a time limit)",
                    });
                }
            }
            obs.copy_from_slice(step.obs());
        }
        Ok(episodes)
    }

    /// The releases one episode takes part in: the K steps of its rollout at (q, σ), as a
    /// tally (empty before the first rollout).
    pub fn tally_per_episode(&self) -> PrivacyTally {
        let engine = self.engine.config();
        let mut tally =
            PrivacyTally::new(PrivacyUnit::Episode, self.noise_multiplier(), engine.delta)
                .with_adjacency(engine.adjacency)
                .with_accountant(engine.accountant);
        if self.rollouts > 0 {
            tally.record(self.config.sample_rate(), self.config.steps_per_rollout());
        }
        tally
    }

    /// ε per episode at δ (type docs): K steps at (q, σ), by the configured accountant;
    /// 0 before training, ∞ for σ = 0.
    pub fn epsilon_per_episode(&self) -> Result<f64, AgentError> {
        self.tally_per_episode().epsilon()
    }

    /// ε composing every step of every rollout so far, as if one episode had been in all of
    /// them: the engine's own, conservative figure (type docs).
    pub fn epsilon_whole_run(&self) -> Result<f64, AgentError> {
        PrivacyTally::from_schedule(
            PrivacyUnit::Episode,
            self.noise_multiplier(),
            self.engine.schedule().clone(),
        )
        .epsilon()
    }

    /// What an ε of this agent means: `per episode, add/remove, δ = 1e-5, RDP accountant`.
    pub fn label(&self) -> String {
        self.tally_per_episode().label()
    }

    /// The policy's logits for one observation.
    pub fn logits(&self, obs: &[f32]) -> Vec<f32> {
        HostMlp::from_mlp(&self.networks.actor.valid()).forward(obs)
    }
}

impl<B: AutodiffBackend> Agent for DpPpo<B> {
    fn algorithm(&self) -> &'static str {
        "dp-ppo"
    }

    fn act(&mut self, obs: &[f32], mode: ActMode) -> usize {
        let logits = self.logits(obs);
        match mode {
            ActMode::Greedy => argmax(&logits),
            ActMode::Stochastic => sample_categorical(&host_softmax(&logits), &mut self.rng),
        }
    }

    /// One epoch: one rollout of N whole episodes and its K private steps
    /// ([`DpPpo::train_rollout`]). The environment steps counted are those of the N episodes
    /// (an idle slot's discarded steps are not). Extra columns: `epsilon_per_episode`,
    /// `epsilon_whole_run`, `noise_multiplier`.
    fn train_epoch(&mut self) -> Result<EpochStats, AgentError> {
        let first_episode = self.log.episodes();
        let stats = self.train_rollout()?;
        let mut out =
            EpochStats::from_log(&self.log, self.rollouts, self.engine.steps(), first_episode);
        out.extra = vec![
            ("epsilon_per_episode", stats.epsilon_per_episode),
            ("epsilon_whole_run", stats.epsilon_whole_run),
            ("noise_multiplier", self.noise_multiplier()),
        ];
        Ok(out)
    }

    fn episode_log(&self) -> &EpisodeLog {
        &self.log
    }

    /// The networks, Adam's state, the generator, the counters and the engine's state
    /// (releases, C, its generator). Rollouts start from an environment reset seeded by the
    /// agent's generator, so a run resumed at a rollout boundary continues bit for bit.
    fn save_checkpoint(&self, dir: &Path) -> Result<(), AgentError> {
        save_module::<B, _>(&self.networks, dir, "networks")?;
        self.optimizer.save(dir, "optimizer")?;
        AgentState::capture(&self.rng, self.rollouts, self.engine.steps(), &self.log).save(dir)?;
        PrivateState::save(&self.engine, dir)
    }

    /// Restores what [`DpPpo::save_checkpoint`] wrote; refused for another σ, δ, adjacency
    /// or accountant.
    fn load_checkpoint(&mut self, dir: &Path) -> Result<(), AgentError> {
        PrivateState::load(&mut self.engine, dir)?;
        self.networks = load_module::<B, _>(self.networks.clone(), dir, "networks", &self.device)?;
        self.optimizer = self
            .optimizer
            .clone()
            .load(dir, "optimizer", &self.device)?;
        let state = AgentState::load(dir)?;
        self.rng = state.rng();
        self.rollouts = state.epoch;
        self.log = state.log;
        Ok(())
    }
}

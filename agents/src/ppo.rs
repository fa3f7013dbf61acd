//! PPO-Clip, faithful to Spinning Up's PyTorch implementation
//! (`spinup/algos/pytorch/ppo/ppo.py`, Achiam 2018):
//!
//! - separate actor and critic, `(64, 64)` tanh MLPs, PyTorch's default initialisation;
//! - one environment, `steps_per_epoch` steps per epoch, episodes capped at `max_ep_len`;
//! - GAE-λ advantages normalised over the epoch, rewards-to-go as value targets;
//! - full-batch Adam steps: up to 80 on the clipped surrogate, stopping early once the
//!   approximate KL exceeds 1.5 × `target_kl`, then 80 on the value loss.
//!
//! Two deliberate differences: an episode cut by the environment's time limit (Gymnasium's
//! `truncated`) is bootstrapped with V(s_T) like one cut by `max_ep_len` (old Gym reported it
//! as `done` and Spinning Up then used 0), and a terminal state reached exactly at the end of
//! an epoch gets value 0 (Spinning Up bootstraps it).
//!
//! [`AuxiliaryPolicyLoss`] adds a term to the policy loss, e.g. the privacy-aware student's
//! penalty E\[φ_λ\] of the kickstarting paper (eq. 17: J̃ = J − E\[φ_λ\]).

use std::path::Path;

use burn::config::Config;
use burn::optim::GradientsParams;
use burn::tensor::activation::softmax;
use burn::tensor::backend::{AutodiffBackend, Backend};
use burn::tensor::Tensor;
use privrl_envs::Env;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::Serialize;

use crate::agent::{load_module, save_module, ActMode, Agent, AgentState, EpisodeLog, EpochStats};
use crate::autodiff;
use crate::buffer::{RolloutBatch, RolloutBuffer};
use crate::env::{discrete_env_dims, RolloutEnv};
use crate::error::{check_count, check_positive, check_unit_interval, AgentError};
use crate::heads::{
    argmax, host_log_prob, host_softmax, matrix, one_hot, sample_categorical, state_value, to_host,
    vector, Categorical,
};
use crate::network::{forward_one, trainable_from_inner, HostMlp, Network, TrainableNetwork};
use crate::nn::{Activation, Mlp, MlpConfig};
use crate::optim::{AgentOptimizer, OptimizerKind};
use crate::record::GradientRecord;

// ---------------------------------------------------------------------------------------------
// Config
// ---------------------------------------------------------------------------------------------

/// Hyper-parameters of PPO, with Spinning Up's defaults.
#[derive(Config, Debug)]
pub struct PpoConfig {
    /// Environment steps per epoch (Spinning Up: 4000; the kickstarting paper: 1000).
    #[config(default = 4000)]
    pub steps_per_epoch: usize,
    /// Discount factor γ.
    #[config(default = 0.99)]
    pub gamma: f64,
    /// Clipping parameter ε of the surrogate: ratios outside [1 − ε, 1 + ε] get no gradient.
    #[config(default = 0.2)]
    pub clip_ratio: f64,
    /// Policy learning rate (Adam).
    #[config(default = 3e-4)]
    pub pi_lr: f64,
    /// Value-function learning rate (Adam).
    #[config(default = 1e-3)]
    pub vf_lr: f64,
    /// Maximum policy gradient steps per epoch.
    #[config(default = 80)]
    pub train_pi_iters: usize,
    /// Value-function gradient steps per epoch.
    #[config(default = 80)]
    pub train_v_iters: usize,
    /// GAE-λ.
    #[config(default = 0.97)]
    pub lam: f64,
    /// Maximum episode length; longer episodes are cut and bootstrapped.
    #[config(default = 1000)]
    pub max_ep_len: usize,
    /// Policy updates stop once the approximate KL exceeds 1.5 × this.
    #[config(default = 0.01)]
    pub target_kl: f64,
    /// Hidden widths of the actor and the critic.
    #[config(default = "vec![64, 64]")]
    pub hidden: Vec<usize>,
    /// Hidden non-linearity.
    #[config(default = "Activation::Tanh")]
    pub activation: Activation,
}

impl PpoConfig {
    /// Checks every parameter; the error names the first one out of range.
    pub fn validate(&self) -> Result<(), AgentError> {
        check_count("steps_per_epoch", self.steps_per_epoch)?;
        check_unit_interval("gamma", self.gamma)?;
        check_positive("clip_ratio", self.clip_ratio)?;
        check_positive("pi_lr", self.pi_lr)?;
        check_positive("vf_lr", self.vf_lr)?;
        check_unit_interval("lam", self.lam)?;
        check_count("max_ep_len", self.max_ep_len)?;
        check_count("train_pi_iters", self.train_pi_iters)?;
        check_positive("target_kl", self.target_kl)?;
        Ok(())
    }
}

/// An extra term in the policy loss, computed from the batch observations and the current
/// action probabilities, minimised together with the clipped surrogate.
///
/// [`AuxiliaryPolicyLoss::prepare`] runs once per update, before the policy iterations (query
/// a teacher there: once per state, not once per iteration); [`AuxiliaryPolicyLoss::loss`]
/// runs at every policy iteration on the current policy.
pub trait AuxiliaryPolicyLoss<B: AutodiffBackend>: Send {
    /// Name of the term in the stats (`aux_loss` by default).
    fn name(&self) -> &'static str {
        "aux_loss"
    }

    /// Sees every state the agent visits during a rollout, in order, with whether it starts
    /// a trajectory (the first step after a reset); e.g. a kickstarting teacher answers each
    /// visited state here and decays its k per trajectory.
    fn observe(&mut self, obs: &[f32], trajectory_start: bool) -> Result<(), AgentError> {
        let _ = (obs, trajectory_start);
        Ok(())
    }

    /// Sees the batch observations (row-major, `obs_len` values each) before the update.
    fn prepare(&mut self, observations: &[f32], obs_len: usize) -> Result<(), AgentError> {
        let _ = (observations, obs_len);
        Ok(())
    }

    /// The term to add to the policy loss (a scalar, `[1]`). `probabilities` is π_θ(·|s),
    /// `[batch, num_actions]`, and carries the gradient to the policy.
    fn loss(&mut self, observations: &Tensor<B, 2>, probabilities: Tensor<B, 2>) -> Tensor<B, 1>;
}

/// What one PPO update did (Spinning Up's logged values).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct PpoStats {
    /// Policy loss before the update.
    pub loss_pi: f64,
    /// Value loss before the update.
    pub loss_v: f64,
    /// Approximate KL(π_old ‖ π) at the last policy iteration.
    pub kl: f64,
    /// Mean entropy of the policy before the update.
    pub entropy: f64,
    /// Fraction of clipped ratios at the last policy iteration.
    pub clip_frac: f64,
    /// Change of the policy loss over the update.
    pub delta_loss_pi: f64,
    /// Change of the value loss over the update.
    pub delta_loss_v: f64,
    /// Policy iterations applied (less than `train_pi_iters` after an early stop).
    pub stop_iter: usize,
    /// Auxiliary term before the update (0 without one).
    pub aux_loss: f64,
}

// ---------------------------------------------------------------------------------------------
// Loss
// ---------------------------------------------------------------------------------------------

/// The clipped surrogate loss and its diagnostics (each a `[1]` tensor; only `loss` carries
/// a gradient).
#[derive(Debug, Clone)]
pub struct SurrogateTerms<B: Backend> {
    /// L^CLIP(θ) = −E_t[min(r_t(θ) A_t, clip(r_t(θ), 1 − ε, 1 + ε) A_t)].
    pub loss: Tensor<B, 1>,
    /// Approximate KL divergence E_t[log π_old(a_t|s_t) − log π_θ(a_t|s_t)].
    pub approx_kl: Tensor<B, 1>,
    /// Mean entropy of π_θ.
    pub entropy: Tensor<B, 1>,
    /// Fraction of samples with |r_t − 1| > ε.
    pub clip_frac: Tensor<B, 1>,
}

/// PPO's clipped surrogate (Schulman et al. 2017, eq. 7, negated to a loss) from the current
/// policy's logits, the actions as one-hot rows, the advantages and log π_old(a_t|s_t).
pub fn clipped_surrogate<B: Backend>(
    logits: Tensor<B, 2>,
    actions_one_hot: Tensor<B, 2>,
    advantages: Tensor<B, 1>,
    log_probs_old: Tensor<B, 1>,
    clip_ratio: f64,
) -> SurrogateTerms<B> {
    let pi = Categorical::from_logits(logits);
    let logp = pi.log_prob(actions_one_hot);
    // r_t(θ) = π_θ(a_t|s_t) / π_old(a_t|s_t)
    let ratio = (logp.clone() - log_probs_old.clone()).exp();
    // L^CLIP = −E[min(r_t A_t, clip(r_t, 1 − ε, 1 + ε) A_t)]
    let clipped = ratio.clone().clamp(1.0 - clip_ratio, 1.0 + clip_ratio) * advantages.clone();
    let surrogate = (ratio.clone() * advantages).min_pair(clipped);
    SurrogateTerms {
        loss: surrogate.mean().neg(),
        approx_kl: (log_probs_old - logp).detach().mean(),
        entropy: pi.entropy().detach().mean(),
        clip_frac: (ratio.detach() - 1.0)
            .abs()
            .greater_elem(clip_ratio)
            .float()
            .mean(),
    }
}

/// The critic's loss E_t[(V(s_t) − R̂_t)²].
pub fn value_loss<B: Backend>(values: Tensor<B, 1>, returns: Tensor<B, 1>) -> Tensor<B, 1> {
    (values - returns).powi_scalar(2).mean()
}

// ---------------------------------------------------------------------------------------------
// Agent
// ---------------------------------------------------------------------------------------------

/// A PPO agent: actor, critic, their optimizers, its environment and its generator.
pub struct Ppo<B: AutodiffBackend, N: TrainableNetwork<B> = Mlp<B>> {
    config: PpoConfig,
    actor: N,
    critic: N,
    actor_optim: AgentOptimizer<N, B>,
    critic_optim: AgentOptimizer<N, B>,
    auxiliary: Option<Box<dyn AuxiliaryPolicyLoss<B>>>,
    env: RolloutEnv,
    num_actions: usize,
    rng: ChaCha8Rng,
    device: B::Device,
    log: EpisodeLog,
    epoch: u64,
    updates: u64,
    host_actor: Option<HostMlp>,
}

impl<B: AutodiffBackend> Ppo<B, Mlp<B>> {
    /// PPO with MLP actor and critic of `config.hidden`, initialised from `seed`.
    pub fn new(
        config: PpoConfig,
        env: Box<dyn Env>,
        device: &B::Device,
        seed: u64,
    ) -> Result<Self, AgentError> {
        let (obs_len, num_actions) = discrete_env_dims(&*env)?;
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let actor = MlpConfig::new(obs_len, config.hidden.clone(), num_actions)
            .with_activation(config.activation)
            .init(device, &mut rng);
        let critic = MlpConfig::new(obs_len, config.hidden.clone(), 1)
            .with_activation(config.activation)
            .init(device, &mut rng);
        Self::with_networks(config, actor, critic, env, device, rng)
    }
}

impl<B: AutodiffBackend, N: TrainableNetwork<B>> Ppo<B, N> {
    /// PPO with given networks: `actor` outputs one logit per action, `critic` one value.
    /// The environment's first reset is seeded from `rng`.
    pub fn with_networks(
        config: PpoConfig,
        actor: N,
        critic: N,
        env: Box<dyn Env>,
        device: &B::Device,
        mut rng: ChaCha8Rng,
    ) -> Result<Self, AgentError> {
        config.validate()?;
        let (obs_len, num_actions) = discrete_env_dims(&*env)?;
        check_widths(obs_len, num_actions, &actor, 1, &critic)?;
        let env = RolloutEnv::new(env, rng.random())?;
        Ok(Self {
            config,
            actor,
            critic,
            actor_optim: AgentOptimizer::new(OptimizerKind::Adam),
            critic_optim: AgentOptimizer::new(OptimizerKind::Adam),
            auxiliary: None,
            env,
            num_actions,
            rng,
            device: device.clone(),
            log: EpisodeLog::default(),
            epoch: 0,
            updates: 0,
            host_actor: None,
        })
    }

    /// Adds a term to the policy loss (replacing any earlier one).
    pub fn set_auxiliary_loss(&mut self, auxiliary: Box<dyn AuxiliaryPolicyLoss<B>>) {
        self.auxiliary = Some(auxiliary);
    }

    /// The configuration.
    pub fn config(&self) -> &PpoConfig {
        &self.config
    }

    /// The policy network (logits).
    pub fn actor(&self) -> &N {
        &self.actor
    }

    /// The value network.
    pub fn critic(&self) -> &N {
        &self.critic
    }

    /// Number of discrete actions.
    pub fn num_actions(&self) -> usize {
        self.num_actions
    }

    /// Policy logits for one observation.
    pub fn logits(&mut self, obs: &[f32]) -> Vec<f32> {
        if self.host_actor.is_none() {
            self.host_actor = self.actor.host_copy();
        }
        match &self.host_actor {
            Some(host) => host.forward(obs),
            None => {
                forward_one::<B::InnerBackend, _>(&self.actor.valid(), None, obs, &[], &self.device)
            }
        }
    }

    // -----------------------------------------------------------------------------------------
    // Rollout
    // -----------------------------------------------------------------------------------------

    /// Runs the current policy for `steps_per_epoch` steps and returns the epoch's batch.
    /// Episodes continue across epochs, as in Spinning Up.
    pub fn collect_rollout(&mut self) -> Result<RolloutBatch, AgentError> {
        let steps = self.config.steps_per_epoch;
        let actor = self.actor.valid();
        let critic = self.critic.valid();
        let host_actor = actor.host_copy();
        let host_critic = critic.host_copy();
        let value_of = |obs: &[f32]| {
            f64::from(
                forward_one::<B::InnerBackend, _>(
                    &critic,
                    host_critic.as_ref(),
                    obs,
                    &[],
                    &self.device,
                )[0],
            )
        };
        let mut buffer = RolloutBuffer::new(
            self.env.obs_len(),
            steps,
            self.config.gamma,
            self.config.lam,
        );
        for t in 0..steps {
            let obs = self.env.obs().to_vec();
            if let Some(auxiliary) = &mut self.auxiliary {
                auxiliary.observe(&obs, self.env.episode_len() == 0)?;
            }
            let logits = forward_one::<B::InnerBackend, _>(
                &actor,
                host_actor.as_ref(),
                &obs,
                &[],
                &self.device,
            );
            let action = sample_categorical(&host_softmax(&logits), &mut self.rng);
            let log_prob = host_log_prob(&logits, action);
            let value = value_of(&obs);
            let step = self.env.step(action, &mut self.log)?;
            buffer.store(&obs, action, step.reward, value, log_prob);

            let timeout = step.truncated || self.env.episode_len() >= self.config.max_ep_len;
            let terminal = step.terminated || timeout;
            let epoch_ended = t + 1 == steps;
            if terminal || epoch_ended {
                // V(s_T) for a cut-off trajectory, 0 for a terminal state.
                let last_value = if step.terminated {
                    0.0
                } else {
                    value_of(self.env.obs())
                };
                buffer.finish_path(last_value);
                if terminal {
                    self.env.end_episode(&mut self.log)?;
                }
            }
        }
        Ok(buffer.take())
    }

    // -----------------------------------------------------------------------------------------
    // Loss
    // -----------------------------------------------------------------------------------------

    /// The clipped surrogate (plus the auxiliary term) and its diagnostics, at the current
    /// policy.
    fn policy_loss(&mut self, batch: &BatchTensors<B>) -> PolicyLoss<B> {
        policy_loss(
            &self.actor,
            self.auxiliary.as_deref_mut(),
            batch,
            self.config.clip_ratio,
        )
    }

    /// Value loss of the critic on the batch.
    fn value_loss(&self, batch: &BatchTensors<B>) -> Tensor<B, 1> {
        value_loss(
            state_value(self.critic.forward_flat(batch.obs.clone())),
            batch.returns.clone(),
        )
    }

    fn tensors(&self, batch: &RolloutBatch) -> Result<BatchTensors<B>, AgentError> {
        if batch.is_empty() {
            return Err(AgentError::EmptyBatch("Ppo::update"));
        }
        if batch.obs_len != self.actor.obs_len() {
            return Err(AgentError::ShapeMismatch {
                what: "observation width",
                expected: self.actor.obs_len(),
                got: batch.obs_len,
            });
        }
        Ok(BatchTensors {
            obs: matrix(&batch.obs, batch.obs_len, &self.device),
            actions: one_hot(&batch.actions, self.num_actions, &self.device),
            advantages: vector(&batch.advantages, &self.device),
            returns: vector(&batch.returns, &self.device),
            log_probs: vector(&batch.log_probs, &self.device),
        })
    }

    // -----------------------------------------------------------------------------------------
    // Update
    // -----------------------------------------------------------------------------------------

    /// Spinning Up's update: policy steps with KL early stopping, and value steps.
    ///
    /// The two loops touch disjoint networks and optimizers, so they run at once: the policy
    /// loop in an autodiff section, the value loop on another thread on the untracked critic
    /// with its hand-written gradient ([`Network::squared_error_gradient`]) and the same Adam
    /// and state ([`AgentOptimizer::step_untracked`]). A critic without a hand-written
    /// gradient trains through autodiff after the policy loop instead. Either way the result
    /// does not depend on thread timing.
    pub fn update(&mut self, batch: &RolloutBatch) -> Result<PpoStats, AgentError> {
        let tensors = autodiff::exclusive(|| -> Result<_, AgentError> {
            let tensors = self.tensors(batch)?;
            if let Some(auxiliary) = &mut self.auxiliary {
                auxiliary.prepare(&batch.obs, batch.obs_len)?;
            }
            Ok(tensors)
        })?;
        let untracked = UntrackedCritic {
            critic: self.critic.valid(),
            obs: tensors.obs.clone().inner(),
            returns: tensors.returns.clone().inner(),
        };
        let Self {
            actor,
            actor_optim,
            critic_optim,
            auxiliary,
            config,
            updates,
            ..
        } = self;
        let (policy, value) = std::thread::scope(|scope| {
            let value = scope.spawn(|| untracked_value_iterations(untracked, critic_optim, config));
            let policy = autodiff::exclusive(|| {
                policy_iterations(
                    actor,
                    actor_optim,
                    auxiliary.as_deref_mut(),
                    &tensors,
                    config,
                    *updates,
                )
            });
            (policy, value.join().expect("the critic's thread panicked"))
        });
        let policy = policy?;
        let (loss_v_old, loss_v) = match value {
            Some((critic, first, last)) => {
                self.critic = autodiff::exclusive(|| trainable_from_inner::<B, N>(critic));
                (first, last)
            }
            None => autodiff::exclusive(|| {
                value_iterations(
                    &mut self.critic,
                    &mut self.critic_optim,
                    &tensors,
                    &self.config,
                )
            }),
        };
        self.host_actor = None;
        self.updates += 1;
        Ok(PpoStats {
            loss_v: loss_v_old,
            delta_loss_v: loss_v - loss_v_old,
            ..policy
        })
    }

    /// The gradient of the policy loss (with the auxiliary term) with respect to the actor,
    /// under `actor.`, and of the value loss with respect to the critic, under `critic.`, at
    /// the current parameters: what a federated PPO learner would share for this batch.
    pub fn gradient(&mut self, batch: &RolloutBatch) -> Result<GradientRecord, AgentError> {
        autodiff::exclusive(|| {
            let tensors = self.tensors(batch)?;
            if let Some(auxiliary) = &mut self.auxiliary {
                auxiliary.prepare(&batch.obs, batch.obs_len)?;
            }
            let policy = self.policy_loss(&tensors);
            let mut record =
                GradientRecord::from_grads(&self.actor, &autodiff::backward(&policy.loss))
                    .prefixed("actor");
            let value = self.value_loss(&tensors);
            record.extend(
                GradientRecord::from_grads(&self.critic, &autodiff::backward(&value))
                    .prefixed("critic"),
            );
            Ok(record)
        })
    }

    /// Applies a record shaped like [`Ppo::gradient`]'s output: `actor.*` with the policy
    /// optimizer at `pi_lr`, `critic.*` with the value optimizer at `vf_lr`.
    pub fn apply_gradient(&mut self, record: &GradientRecord) -> Result<(), AgentError> {
        let actor = record.strip_prefix("actor");
        let critic = record.strip_prefix("critic");
        if actor.len() + critic.len() != record.len() {
            let stray = record
                .names()
                .into_iter()
                .find(|n| !n.starts_with("actor.") && !n.starts_with("critic."))
                .unwrap_or_default()
                .to_string();
            return Err(crate::error::RecordError::UnknownParameter {
                name: stray,
                known: "actor.*, critic.*".into(),
            }
            .into());
        }
        if !actor.is_empty() {
            let grads = actor.to_gradients_params(&self.actor)?;
            self.actor = self
                .actor_optim
                .step(self.config.pi_lr, self.actor.clone(), grads);
            self.host_actor = None;
        }
        if !critic.is_empty() {
            let grads = critic.to_gradients_params(&self.critic)?;
            self.critic = self
                .critic_optim
                .step(self.config.vf_lr, self.critic.clone(), grads);
        }
        Ok(())
    }
}

struct BatchTensors<B: AutodiffBackend> {
    obs: Tensor<B, 2>,
    actions: Tensor<B, 2>,
    advantages: Tensor<B, 1>,
    returns: Tensor<B, 1>,
    log_probs: Tensor<B, 1>,
}

struct PolicyLoss<B: AutodiffBackend> {
    loss: Tensor<B, 1>,
    value: f64,
    kl: f64,
    entropy: f64,
    clip_frac: f64,
    aux: f64,
}

/// The clipped surrogate (plus the auxiliary term) of `actor` on the batch, with its
/// diagnostics read back in one transfer.
fn policy_loss<B: AutodiffBackend, N: Network<B>>(
    actor: &N,
    auxiliary: Option<&mut (dyn AuxiliaryPolicyLoss<B> + 'static)>,
    batch: &BatchTensors<B>,
    clip_ratio: f64,
) -> PolicyLoss<B> {
    let logits = actor.forward_flat(batch.obs.clone());
    let terms = clipped_surrogate(
        logits.clone(),
        batch.actions.clone(),
        batch.advantages.clone(),
        batch.log_probs.clone(),
        clip_ratio,
    );
    let mut loss = terms.loss;
    let mut aux = Tensor::<B, 1>::zeros([1], &batch.obs.device());
    if let Some(auxiliary) = auxiliary {
        aux = auxiliary.loss(&batch.obs, softmax(logits, 1));
        loss = loss + aux.clone();
    }
    let diagnostics = to_host(Tensor::cat(
        vec![
            loss.clone().detach(),
            terms.approx_kl,
            terms.entropy,
            terms.clip_frac,
            aux.detach(),
        ],
        0,
    ));
    PolicyLoss {
        loss,
        value: f64::from(diagnostics[0]),
        kl: f64::from(diagnostics[1]),
        entropy: f64::from(diagnostics[2]),
        clip_frac: f64::from(diagnostics[3]),
        aux: f64::from(diagnostics[4]),
    }
}

/// Spinning Up's policy loop: up to `train_pi_iters` Adam steps on the surrogate, stopping
/// before the step at which the approximate KL exceeds 1.5 × `target_kl`. Returns the policy
/// half of the stats.
fn policy_iterations<B: AutodiffBackend, N: TrainableNetwork<B>>(
    actor: &mut N,
    optim: &mut AgentOptimizer<N, B>,
    mut auxiliary: Option<&mut (dyn AuxiliaryPolicyLoss<B> + 'static)>,
    batch: &BatchTensors<B>,
    config: &PpoConfig,
    update: u64,
) -> Result<PpoStats, AgentError> {
    let mut first: Option<(f64, f64, f64)> = None;
    let (mut last_loss, mut kl, mut clip_frac) = (0.0, 0.0, 0.0);
    let mut stop_iter = config.train_pi_iters;
    for i in 0..config.train_pi_iters {
        let terms = policy_loss(actor, auxiliary.as_deref_mut(), batch, config.clip_ratio);
        if !terms.value.is_finite() {
            return Err(AgentError::NonFinite {
                what: "policy loss",
                value: terms.value,
                update,
            });
        }
        (last_loss, kl, clip_frac) = (terms.value, terms.kl, terms.clip_frac);
        first.get_or_insert((terms.value, terms.entropy, terms.aux));
        if terms.kl > 1.5 * config.target_kl {
            stop_iter = i;
            break;
        }
        let grads = GradientsParams::from_grads(autodiff::backward(&terms.loss), actor);
        *actor = optim.step(config.pi_lr, actor.clone(), grads);
    }
    let (loss_pi, entropy, aux_loss) = first.expect("validate() guarantees train_pi_iters >= 1");
    Ok(PpoStats {
        loss_pi,
        loss_v: f64::NAN,
        kl,
        entropy,
        clip_frac,
        delta_loss_pi: last_loss - loss_pi,
        delta_loss_v: f64::NAN,
        stop_iter,
        aux_loss,
    })
}

/// Spinning Up's value loop: `train_v_iters` Adam steps on the value loss. Returns the loss
/// before the first and before the last step.
fn value_iterations<B: AutodiffBackend, N: TrainableNetwork<B>>(
    critic: &mut N,
    optim: &mut AgentOptimizer<N, B>,
    batch: &BatchTensors<B>,
    config: &PpoConfig,
) -> (f64, f64) {
    let (mut first, mut last) = (f64::NAN, f64::NAN);
    for i in 0..config.train_v_iters {
        let loss = value_loss(
            state_value(critic.forward_flat(batch.obs.clone())),
            batch.returns.clone(),
        );
        last = f64::from(to_host(loss.clone().detach())[0]);
        if i == 0 {
            first = last;
        }
        let grads = GradientsParams::from_grads(autodiff::backward(&loss), critic);
        *critic = optim.step(config.vf_lr, critic.clone(), grads);
    }
    (first, last)
}

/// The critic without autodiff, and the batch's observations and returns on its backend.
struct UntrackedCritic<B: AutodiffBackend, N: TrainableNetwork<B>> {
    critic: N::InnerModule,
    obs: Tensor<B::InnerBackend, 2>,
    returns: Tensor<B::InnerBackend, 1>,
}

/// [`value_iterations`] on the untracked critic, with its hand-written gradient; `None`
/// (before any step) if the critic has none. Returns the trained critic and the loss before
/// the first and before the last step.
fn untracked_value_iterations<B: AutodiffBackend, N: TrainableNetwork<B>>(
    untracked: UntrackedCritic<B, N>,
    optim: &mut AgentOptimizer<N, B>,
    config: &PpoConfig,
) -> Option<(N::InnerModule, f64, f64)> {
    let UntrackedCritic {
        mut critic,
        obs,
        returns,
    } = untracked;
    let (mut first, mut last) = (f64::NAN, f64::NAN);
    for i in 0..config.train_v_iters {
        let (loss, mut grads) = critic.squared_error_gradient(obs.clone(), returns.clone())?;
        last = loss;
        if i == 0 {
            first = loss;
        }
        critic = optim.step_untracked(config.vf_lr, critic, &mut grads);
    }
    Some((critic, first, last))
}

fn check_widths<B: Backend, N: Network<B>>(
    obs_len: usize,
    num_actions: usize,
    actor: &N,
    critic_outputs: usize,
    critic: &N,
) -> Result<(), AgentError> {
    for (what, expected, got) in [
        ("actor input width", obs_len, actor.obs_len()),
        ("actor output width", num_actions, actor.d_output()),
        ("critic input width", obs_len, critic.obs_len()),
        ("critic output width", critic_outputs, critic.d_output()),
    ] {
        if expected != got {
            return Err(AgentError::ShapeMismatch {
                what,
                expected,
                got,
            });
        }
    }
    Ok(())
}

impl<B: AutodiffBackend, N: TrainableNetwork<B>> Agent for Ppo<B, N> {
    fn algorithm(&self) -> &'static str {
        "ppo"
    }

    fn act(&mut self, obs: &[f32], mode: ActMode) -> usize {
        let logits = self.logits(obs);
        match mode {
            ActMode::Greedy => argmax(&logits),
            ActMode::Stochastic => sample_categorical(&host_softmax(&logits), &mut self.rng),
        }
    }

    /// One epoch: `steps_per_epoch` environment steps, then one update.
    fn train_epoch(&mut self) -> Result<EpochStats, AgentError> {
        // The rollout acts on host copies, outside any autodiff section.
        let first_episode = self.log.episodes();
        let batch = self.collect_rollout()?;
        let stats = self.update(&batch)?;
        self.epoch += 1;
        let mut out = EpochStats::from_log(&self.log, self.epoch, self.updates, first_episode);
        out.extra = vec![
            ("loss_pi", stats.loss_pi),
            ("loss_v", stats.loss_v),
            ("kl", stats.kl),
            ("entropy", stats.entropy),
            ("clip_frac", stats.clip_frac),
            ("delta_loss_pi", stats.delta_loss_pi),
            ("delta_loss_v", stats.delta_loss_v),
            ("stop_iter", stats.stop_iter as f64),
        ];
        if let Some(auxiliary) = &self.auxiliary {
            out.extra.push((auxiliary.name(), stats.aux_loss));
        }
        Ok(out)
    }

    fn episode_log(&self) -> &EpisodeLog {
        &self.log
    }

    fn save_checkpoint(&self, dir: &Path) -> Result<(), AgentError> {
        save_module::<B, _>(&self.actor, dir, "actor")?;
        save_module::<B, _>(&self.critic, dir, "critic")?;
        self.actor_optim.save(dir, "actor_optim")?;
        self.critic_optim.save(dir, "critic_optim")?;
        AgentState::capture(&self.rng, self.epoch, self.updates, &self.log).save(dir)
    }

    fn load_checkpoint(&mut self, dir: &Path) -> Result<(), AgentError> {
        self.actor = load_module::<B, _>(self.actor.clone(), dir, "actor", &self.device)?;
        self.critic = load_module::<B, _>(self.critic.clone(), dir, "critic", &self.device)?;
        self.actor_optim = self
            .actor_optim
            .clone()
            .load(dir, "actor_optim", &self.device)?;
        self.critic_optim = self
            .critic_optim
            .clone()
            .load(dir, "critic_optim", &self.device)?;
        let state = AgentState::load(dir)?;
        self.rng = state.rng();
        self.epoch = state.epoch;
        self.updates = state.updates;
        self.log = state.log;
        self.host_actor = None;
        Ok(())
    }
}

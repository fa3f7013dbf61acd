//! The PPO agent [`Ppo`]: rollouts, updates, gradients and checkpoints.

use std::path::Path;

use burn::tensor::backend::{AutodiffBackend, Backend};
use burn::tensor::Tensor;
use privrl_envs::Env;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::loss::{policy_loss, BatchTensors, PolicyLoss};
use super::update::{
    policy_iterations, untracked_value_iterations, value_iterations, UntrackedCritic,
};
use super::{value_loss, AuxiliaryPolicyLoss, PpoConfig, PpoStats};
use crate::agent::{load_module, save_module, ActMode, Agent, AgentState, EpisodeLog, EpochStats};
use crate::autodiff;
use crate::buffer::{RolloutBatch, RolloutBuffer};
use crate::env::{discrete_env_dims, RolloutEnv};
use crate::error::AgentError;
use crate::heads::{argmax, host_log_prob, host_softmax, sample_categorical, state_value};
use crate::network::{forward_one, trainable_from_inner, HostMlp, Network, TrainableNetwork};
use crate::nn::{Mlp, MlpConfig};
use crate::optim::{AgentOptimizer, OptimizerKind};
use crate::record::GradientRecord;
use crate::tensor::{matrix, one_hot, vector};

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
    /// Seed of the environment reset that starts the next epoch, with `reseed_at_epoch_end`.
    epoch_seed: Option<u64>,
}

impl<B: AutodiffBackend> Ppo<B, Mlp<B>> {
    /// PPO with MLP actor and critic of `config.hidden`, initialised from `seed`.
    pub fn new(
        config: PpoConfig,
        env: Box<dyn Env>,
        device: &B::Device,
        seed: u64,
    ) -> Result<Self, AgentError> {
        // Before the networks are built from `hidden`.
        config.validate()?;
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
        // An epoch's buffer that cannot be allocated is refused here, by name, not at the
        // first epoch.
        RolloutBuffer::new(obs_len, config.steps_per_epoch, config.gamma, config.lam)?;
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
            epoch_seed: None,
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
    /// With `reset_at_epoch_end` (the default, as in Spinning Up) the last trajectory is cut at
    /// the epoch's end and the environment reset; otherwise the episode continues into the
    /// next epoch.
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
        )?;
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
                } else if self.config.reset_at_epoch_end {
                    self.env.abandon_episode()?;
                }
                if epoch_ended && self.config.reseed_at_epoch_end {
                    let seed = self.rng.random();
                    self.env.restart_from(seed)?;
                    self.epoch_seed = Some(seed);
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
        if let Some(auxiliary) = &self.auxiliary {
            auxiliary.save_state(dir)?;
        }
        AgentState::capture(&self.rng, self.epoch, self.updates, &self.log)
            .with_env_seed(self.epoch_seed)
            .save(dir)
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
        // With `reseed_at_epoch_end` the environment at an epoch boundary is its reset from
        // the saved seed; without it, the environment's own state is not restored (it carries
        // on from wherever this agent's environment is).
        self.epoch_seed = state.env_seed;
        if let (true, Some(seed)) = (self.config.reseed_at_epoch_end, state.env_seed) {
            self.env.restart_from(seed)?;
        }
        if let Some(auxiliary) = &mut self.auxiliary {
            auxiliary.load_state(dir)?;
        }
        Ok(())
    }
}

//! REINFORCE (Williams 1992) with an entropy bonus, one episode per gradient, as the RGI
//! paper attacks it (eq. 4: ∇J = E[∇ log π_θ(a|s) R_t] − α ∇ Σ_a π_θ(a|s) log π_θ(a|s)) and
//! as the DP-RL slides train it on CartPole (a two-layer perceptron with 128 hidden units and
//! dropout 0.5, the gradient estimated from one episode).
//!
//! Dropout masks are drawn from the agent's generator while acting and kept with the episode,
//! so the loss sees exactly the units that were dropped when each action was chosen.

use std::path::Path;

use burn::config::Config;
use burn::optim::GradientsParams;
use burn::tensor::backend::{AutodiffBackend, Backend};
use burn::tensor::Tensor;
use privrl_envs::Env;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::Serialize;

use crate::agent::{load_module, save_module, ActMode, Agent, AgentState, EpisodeLog, EpochStats};
use crate::autodiff;
use crate::buffer::discount_cumsum;
use crate::env::{discrete_env_dims, RolloutEnv};
use crate::error::{
    check_hidden, check_non_negative, check_positive, check_probability_below_one,
    check_unit_interval, AgentError,
};
use crate::heads::{argmax, host_softmax, sample_categorical, Categorical};
use crate::network::{draw_dropout_mask, forward_one, HostMlp, TrainableNetwork};
use crate::nn::{Activation, Mlp, MlpConfig};
use crate::optim::{AgentOptimizer, OptimizerKind};
use crate::record::GradientRecord;
use crate::tensor::{matrix, one_hot, to_host, vector};

// ---------------------------------------------------------------------------------------------
// Config
// ---------------------------------------------------------------------------------------------

/// Hyper-parameters of REINFORCE, after the DP-RL slides' CartPole setup.
#[derive(Config, Debug)]
pub struct ReinforceConfig {
    /// Hidden widths of the policy.
    #[config(default = "vec![128]")]
    pub hidden: Vec<usize>,
    /// Hidden non-linearity.
    #[config(default = "Activation::Relu")]
    pub activation: Activation,
    /// Dropout probability after the hidden layers (0 disables it).
    #[config(default = 0.5)]
    pub dropout: f64,
    /// Discount factor γ of the returns G_t.
    #[config(default = 0.99)]
    pub gamma: f64,
    /// Adam learning rate.
    #[config(default = 1e-2)]
    pub lr: f64,
    /// Weight α of the entropy bonus (eq. 4).
    #[config(default = 0.0)]
    pub entropy_coef: f64,
    /// Standardise the returns of each episode to mean 0 and standard deviation 1 (a common
    /// baseline; off gives the plain estimator of eq. 4).
    #[config(default = true)]
    pub normalize_returns: bool,
}

impl ReinforceConfig {
    /// Checks every parameter; the error names the first one out of range.
    pub fn validate(&self) -> Result<(), AgentError> {
        check_hidden("hidden", &self.hidden)?;
        check_probability_below_one("dropout", self.dropout)?;
        check_unit_interval("gamma", self.gamma)?;
        check_positive("lr", self.lr)?;
        check_non_negative("entropy_coef", self.entropy_coef)?;
        Ok(())
    }
}

/// One episode, ready for the REINFORCE loss.
#[derive(Debug, Clone, PartialEq)]
pub struct EpisodeBatch {
    /// Values per observation.
    pub obs_len: usize,
    /// Observations, row-major `[len, obs_len]`.
    pub obs: Vec<f32>,
    /// Actions taken.
    pub actions: Vec<usize>,
    /// Rewards received.
    pub rewards: Vec<f32>,
    /// The weights R_t of log π(a_t|s_t) in the loss: discounted returns-to-go, standardised
    /// if the config says so.
    pub returns: Vec<f32>,
    /// Dropout masks, one `[len, width]` row-major matrix per hidden layer (empty without
    /// dropout).
    pub dropout_masks: Vec<Vec<f32>>,
}

impl EpisodeBatch {
    /// Number of steps.
    pub fn len(&self) -> usize {
        self.actions.len()
    }

    /// Whether the episode has no step.
    pub fn is_empty(&self) -> bool {
        self.actions.is_empty()
    }
}

/// What one REINFORCE update did.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct ReinforceStats {
    /// The loss −Σ_t [log π(a_t|s_t) R_t + α H(π(·|s_t))].
    pub loss: f64,
    /// Mean entropy of the policy over the episode.
    pub entropy: f64,
    /// Undiscounted return of the episode.
    pub episode_return: f64,
}

// ---------------------------------------------------------------------------------------------
// Loss
// ---------------------------------------------------------------------------------------------

/// Eq. 4 as a loss: L(θ) = −Σ_t [log π_θ(a_t|s_t) R_t + α H(π_θ(·|s_t))], from the logits
/// `[T, num_actions]`, the actions as one-hot rows and the weights R_t (held constant).
pub fn reinforce_loss<B: Backend>(
    logits: Tensor<B, 2>,
    actions_one_hot: Tensor<B, 2>,
    returns: Tensor<B, 1>,
    entropy_coef: f64,
) -> Tensor<B, 1> {
    let pi = Categorical::from_logits(logits);
    // Policy-gradient term Σ_t log π(a_t|s_t) R_t ...
    let policy_gradient = (pi.log_prob(actions_one_hot) * returns.detach()).sum();
    // ... plus α Σ_t H(π(·|s_t)), whose gradient is −α ∇ Σ_a π log π.
    let entropy = pi.entropy().sum() * entropy_coef;
    (policy_gradient + entropy).neg()
}

// ---------------------------------------------------------------------------------------------
// Agent
// ---------------------------------------------------------------------------------------------

/// A REINFORCE agent.
pub struct Reinforce<B: AutodiffBackend, N: TrainableNetwork<B> = Mlp<B>> {
    config: ReinforceConfig,
    policy: N,
    optim: AgentOptimizer<N, B>,
    env: RolloutEnv,
    num_actions: usize,
    rng: ChaCha8Rng,
    device: B::Device,
    log: EpisodeLog,
    epoch: u64,
    updates: u64,
    host_policy: Option<HostMlp>,
}

impl<B: AutodiffBackend> Reinforce<B, Mlp<B>> {
    /// REINFORCE with an MLP policy of `config.hidden`, initialised from `seed`.
    pub fn new(
        config: ReinforceConfig,
        env: Box<dyn Env>,
        device: &B::Device,
        seed: u64,
    ) -> Result<Self, AgentError> {
        config.validate()?;
        let (obs_len, num_actions) = discrete_env_dims(&*env)?;
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let policy = MlpConfig::new(obs_len, config.hidden.clone(), num_actions)
            .with_activation(config.activation)
            .with_dropout(config.dropout)
            .init(device, &mut rng);
        Self::with_network(config, policy, env, device, rng)
    }
}

impl<B: AutodiffBackend, N: TrainableNetwork<B>> Reinforce<B, N> {
    /// REINFORCE with a given policy network (one logit per action), e.g. a
    /// [`crate::MultimodalNet`]. Dropout follows the network's own setting.
    pub fn with_network(
        config: ReinforceConfig,
        policy: N,
        env: Box<dyn Env>,
        device: &B::Device,
        mut rng: ChaCha8Rng,
    ) -> Result<Self, AgentError> {
        config.validate()?;
        let (obs_len, num_actions) = discrete_env_dims(&*env)?;
        for (what, expected, got) in [
            ("policy input width", obs_len, policy.obs_len()),
            ("policy output width", num_actions, policy.d_output()),
        ] {
            if expected != got {
                return Err(AgentError::ShapeMismatch {
                    what,
                    expected,
                    got,
                });
            }
        }
        let env = RolloutEnv::new(env, rng.random())?;
        Ok(Self {
            optim: AgentOptimizer::new(OptimizerKind::Adam),
            policy,
            env,
            num_actions,
            config,
            rng,
            device: device.clone(),
            log: EpisodeLog::default(),
            epoch: 0,
            updates: 0,
            host_policy: None,
        })
    }

    /// The configuration.
    pub fn config(&self) -> &ReinforceConfig {
        &self.config
    }

    /// The policy network (logits).
    pub fn policy(&self) -> &N {
        &self.policy
    }

    /// Policy logits for one observation, with the given dropout masks (empty: none).
    fn logits(&mut self, obs: &[f32], masks: &[Vec<f32>]) -> Vec<f32> {
        if self.host_policy.is_none() {
            self.host_policy = self.policy.host_copy();
        }
        match &self.host_policy {
            Some(host) => {
                let mut out = Vec::new();
                host.forward_into(obs, masks, &mut out);
                out
            }
            None => forward_one::<B::InnerBackend, _>(
                &self.policy.valid(),
                None,
                obs,
                masks,
                &self.device,
            ),
        }
    }

    // -----------------------------------------------------------------------------------------
    // Rollout
    // -----------------------------------------------------------------------------------------

    /// Plays one episode with the current policy (dropout active, as in training) and returns
    /// it with its returns.
    pub fn collect_episode(&mut self) -> Result<EpisodeBatch, AgentError> {
        let obs_len = self.env.obs_len();
        let dropout = self.policy.dropout();
        let mut batch = EpisodeBatch {
            obs_len,
            obs: Vec::new(),
            actions: Vec::new(),
            rewards: Vec::new(),
            returns: Vec::new(),
            dropout_masks: dropout
                .as_ref()
                .map_or_else(Vec::new, |(_, w)| vec![Vec::new(); w.len()]),
        };
        loop {
            let masks: Vec<Vec<f32>> = match &dropout {
                Some((p, widths)) => widths
                    .iter()
                    .map(|&w| draw_dropout_mask(&mut self.rng, w, *p))
                    .collect(),
                None => Vec::new(),
            };
            let obs = self.env.obs().to_vec();
            let logits = self.logits(&obs, &masks);
            let action = sample_categorical(&host_softmax(&logits), &mut self.rng);
            let step = self.env.step(action, &mut self.log)?;
            batch.obs.extend_from_slice(&obs);
            batch.actions.push(action);
            batch.rewards.push(step.reward as f32);
            for (all, mask) in batch.dropout_masks.iter_mut().zip(masks) {
                all.extend(mask);
            }
            if step.done() {
                self.env.end_episode(&mut self.log)?;
                break;
            }
        }
        batch.returns = self.returns(&batch.rewards);
        Ok(batch)
    }

    /// The loss weights R_t: G_t = Σ_{k≥t} γ^{k−t} r_k, standardised if configured.
    pub(crate) fn returns(&self, rewards: &[f32]) -> Vec<f32> {
        let rewards: Vec<f64> = rewards.iter().map(|&r| f64::from(r)).collect();
        let mut returns = discount_cumsum(&rewards, self.config.gamma);
        if self.config.normalize_returns && returns.len() > 1 {
            let n = returns.len() as f64;
            let mean = returns.iter().sum::<f64>() / n;
            let std = (returns.iter().map(|g| (g - mean).powi(2)).sum::<f64>() / n).sqrt();
            returns
                .iter_mut()
                .for_each(|g| *g = (*g - mean) / (std + 1e-8));
        }
        returns.into_iter().map(|g| g as f32).collect()
    }

    // -----------------------------------------------------------------------------------------
    // Loss
    // -----------------------------------------------------------------------------------------

    /// Eq. 4 as a loss: L(θ) = −Σ_t [log π_θ(a_t|s_t) R_t + α H(π_θ(·|s_t))], and the mean
    /// entropy.
    fn loss(&self, batch: &EpisodeBatch) -> Result<(Tensor<B, 1>, Tensor<B, 1>), AgentError> {
        if batch.is_empty() {
            return Err(AgentError::EmptyBatch("Reinforce::update"));
        }
        if batch.obs_len != self.policy.obs_len() {
            return Err(AgentError::ShapeMismatch {
                what: "observation width",
                expected: self.policy.obs_len(),
                got: batch.obs_len,
            });
        }
        let n = batch.len();
        let obs = matrix::<B>(&batch.obs, batch.obs_len, &self.device);
        let masks: Vec<Tensor<B, 2>> = batch
            .dropout_masks
            .iter()
            .map(|m| matrix::<B>(m, m.len() / n, &self.device))
            .collect();
        let logits = self.policy.forward_flat_masked(obs, &masks);
        let entropy = Categorical::from_logits(logits.clone())
            .entropy()
            .detach()
            .mean();
        let loss = reinforce_loss(
            logits,
            one_hot(&batch.actions, self.num_actions, &self.device),
            vector::<B>(&batch.returns, &self.device),
            self.config.entropy_coef,
        );
        Ok((loss, entropy))
    }

    // -----------------------------------------------------------------------------------------
    // Update
    // -----------------------------------------------------------------------------------------

    /// One Adam step on the episode's loss.
    pub fn update(&mut self, batch: &EpisodeBatch) -> Result<ReinforceStats, AgentError> {
        autodiff::exclusive(|| {
            let (loss, entropy) = self.loss(batch)?;
            let values = to_host(Tensor::cat(vec![loss.clone().detach(), entropy], 0));
            let loss_value = f64::from(values[0]);
            if !loss_value.is_finite() {
                return Err(AgentError::NonFinite {
                    what: "REINFORCE loss",
                    value: loss_value,
                    update: self.updates,
                });
            }
            let grads = GradientsParams::from_grads(autodiff::backward(&loss), &self.policy);
            self.policy = self.optim.step(self.config.lr, self.policy.clone(), grads);
            self.host_policy = None;
            self.updates += 1;
            Ok(ReinforceStats {
                loss: loss_value,
                entropy: f64::from(values[1]),
                episode_return: batch.rewards.iter().map(|&r| f64::from(r)).sum(),
            })
        })
    }

    /// The gradient of the loss on `batch` at the current parameters (what RGI inverts; a
    /// one-step batch gives a single-sample gradient).
    pub fn gradient(&self, batch: &EpisodeBatch) -> Result<GradientRecord, AgentError> {
        autodiff::exclusive(|| {
            let (loss, _) = self.loss(batch)?;
            Ok(GradientRecord::from_grads(
                &self.policy,
                &autodiff::backward(&loss),
            ))
        })
    }

    /// Applies a gradient with the agent's optimizer and learning rate.
    pub fn apply_gradient(&mut self, record: &GradientRecord) -> Result<(), AgentError> {
        let grads = record.to_gradients_params(&self.policy)?;
        self.policy = self.optim.step(self.config.lr, self.policy.clone(), grads);
        self.host_policy = None;
        self.updates += 1;
        Ok(())
    }
}

impl<B: AutodiffBackend, N: TrainableNetwork<B>> Agent for Reinforce<B, N> {
    fn algorithm(&self) -> &'static str {
        "reinforce"
    }

    /// Acting outside training uses no dropout.
    fn act(&mut self, obs: &[f32], mode: ActMode) -> usize {
        let logits = self.logits(obs, &[]);
        match mode {
            ActMode::Greedy => argmax(&logits),
            ActMode::Stochastic => sample_categorical(&host_softmax(&logits), &mut self.rng),
        }
    }

    /// One epoch: one episode, one gradient step.
    fn train_epoch(&mut self) -> Result<EpochStats, AgentError> {
        // The episode is played on host copies; the update opens its own autodiff section.
        let first_episode = self.log.episodes();
        let batch = self.collect_episode()?;
        let stats = self.update(&batch)?;
        self.epoch += 1;
        let mut out = EpochStats::from_log(&self.log, self.epoch, self.updates, first_episode);
        out.extra = vec![("loss", stats.loss), ("entropy", stats.entropy)];
        Ok(out)
    }

    fn episode_log(&self) -> &EpisodeLog {
        &self.log
    }

    fn save_checkpoint(&self, dir: &Path) -> Result<(), AgentError> {
        save_module::<B, _>(&self.policy, dir, "policy")?;
        self.optim.save(dir, "optim")?;
        AgentState::capture(&self.rng, self.epoch, self.updates, &self.log).save(dir)
    }

    fn load_checkpoint(&mut self, dir: &Path) -> Result<(), AgentError> {
        self.policy = load_module::<B, _>(self.policy.clone(), dir, "policy", &self.device)?;
        self.optim = self.optim.clone().load(dir, "optim", &self.device)?;
        let state = AgentState::load(dir)?;
        self.rng = state.rng();
        self.epoch = state.epoch;
        self.updates = state.updates;
        self.log = state.log;
        self.host_policy = None;
        Ok(())
    }
}

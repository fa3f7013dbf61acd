//! DQN (Mnih et al. 2015) with experience replay, a periodically copied target network,
//! a linear ε-greedy schedule and the mean-squared TD error, the loss that the QGI paper
//! attacks (its gradient is g = 2(Q̂ − Q) ∂Q̂/∂w). Optional Double DQN (van Hasselt et al.
//! 2016) picks the bootstrap action with the online network.
//!
//! Time-limit truncation is not terminal: the target bootstraps from the final observation.

use std::path::Path;

use burn::config::Config;
use burn::optim::GradientsParams;
use burn::tensor::backend::{AutodiffBackend, Backend};
use burn::tensor::Tensor;
use privrl_envs::Env;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::Serialize;

use crate::agent::{
    checkpoint_error, load_json, load_module, save_json, save_module, ActMode, Agent, AgentState,
    EpisodeLog, EpochStats,
};
use crate::autodiff;
use crate::buffer::{ReplayBuffer, TransitionBatch};
use crate::env::{discrete_env_dims, RolloutEnv};
use crate::error::{check_count, check_hidden, check_positive, check_unit_interval, AgentError};
use crate::heads::{argmax, max_q, q_of_actions};
use crate::network::{forward_one, HostMlp, Network, TrainableNetwork};
use crate::nn::{Activation, Mlp, MlpConfig};
use crate::optim::{AgentOptimizer, OptimizerKind};
use crate::record::GradientRecord;
use crate::tensor::{matrix, one_hot, to_host, vector};

// ---------------------------------------------------------------------------------------------
// Config
// ---------------------------------------------------------------------------------------------

/// Hyper-parameters of DQN. The network follows the DP-RL slides (a three-layer perceptron
/// with 128 hidden units, batches of 128 transitions); the schedule follows CleanRL's CartPole
/// settings, tuned to solve CartPole-v1.
#[derive(Config, Debug)]
pub struct DqnConfig {
    /// Hidden widths of the Q-network.
    #[config(default = "vec![128, 128]")]
    pub hidden: Vec<usize>,
    /// Hidden non-linearity.
    #[config(default = "Activation::Relu")]
    pub activation: Activation,
    /// Discount factor γ.
    #[config(default = 0.99)]
    pub gamma: f64,
    /// Adam learning rate.
    #[config(default = 5e-4)]
    pub lr: f64,
    /// Transitions per gradient step.
    #[config(default = 128)]
    pub batch_size: usize,
    /// Replay buffer capacity.
    #[config(default = 50_000)]
    pub buffer_capacity: usize,
    /// Environment steps before the first update (acting uniformly at random until then is
    /// not required: ε starts at `epsilon_start`).
    #[config(default = 1_000)]
    pub learning_starts: usize,
    /// Environment steps between updates.
    #[config(default = 1)]
    pub train_frequency: usize,
    /// Gradient steps per update.
    #[config(default = 1)]
    pub gradient_steps: usize,
    /// Environment steps between copies of the online network into the target network.
    #[config(default = 500)]
    pub target_update_interval: usize,
    /// ε at the first step.
    #[config(default = 1.0)]
    pub epsilon_start: f64,
    /// ε after the decay.
    #[config(default = 0.01)]
    pub epsilon_end: f64,
    /// Environment steps over which ε decays linearly.
    #[config(default = 20_000)]
    pub epsilon_decay_steps: usize,
    /// Double DQN: bootstrap with Q_target(s′, argmax_a Q_online(s′, a)).
    #[config(default = false)]
    pub double_dqn: bool,
    /// Environment steps per epoch (one `metrics.csv` row).
    #[config(default = 1_000)]
    pub steps_per_epoch: usize,
    /// The loss on the TD error: MSE (Mnih et al. 2015, what the QGI paper attacks) or Huber
    /// (smooth L1, as Stable-Baselines3's DQN), whose gradient is the TD error clamped to
    /// [−1, 1].
    #[config(default = "TdLoss::Mse")]
    pub td_loss: TdLoss,
}

/// The loss of one TD error d = Q(s, a) − y.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TdLoss {
    /// d²: gradient 2d ∂Q/∂w.
    #[default]
    Mse,
    /// Huber with threshold 1 (PyTorch's `smooth_l1_loss`): d²/2 for |d| < 1, |d| − 1/2
    /// beyond; gradient clamp(d, −1, 1) ∂Q/∂w, so one outlying target cannot dominate a step.
    Huber,
}

impl TdLoss {
    /// `mse` or `huber`.
    pub fn name(self) -> &'static str {
        match self {
            TdLoss::Mse => "mse",
            TdLoss::Huber => "huber",
        }
    }

    /// The loss of every TD error `[batch]`, element-wise.
    pub fn per_sample<B: Backend>(self, errors: Tensor<B, 1>) -> Tensor<B, 1> {
        match self {
            TdLoss::Mse => errors.powi_scalar(2),
            TdLoss::Huber => {
                let size = errors.abs();
                let inner = size.clone().clamp_max(1.0);
                inner.clone() * inner.clone() * 0.5 + (size - inner)
            }
        }
    }
}

impl DqnConfig {
    /// Checks every parameter; the error names the first one out of range.
    pub fn validate(&self) -> Result<(), AgentError> {
        check_hidden("hidden", &self.hidden)?;
        check_unit_interval("gamma", self.gamma)?;
        check_positive("lr", self.lr)?;
        check_count("batch_size", self.batch_size)?;
        check_count("buffer_capacity", self.buffer_capacity)?;
        check_count("train_frequency", self.train_frequency)?;
        check_count("gradient_steps", self.gradient_steps)?;
        check_count("target_update_interval", self.target_update_interval)?;
        check_unit_interval("epsilon_start", self.epsilon_start)?;
        check_unit_interval("epsilon_end", self.epsilon_end)?;
        check_count("steps_per_epoch", self.steps_per_epoch)?;
        Ok(())
    }

    /// ε at environment step `step`: linear from `epsilon_start` to `epsilon_end` over
    /// `epsilon_decay_steps`, then constant.
    pub fn epsilon(&self, step: u64) -> f64 {
        if self.epsilon_decay_steps == 0 {
            return self.epsilon_end;
        }
        let fraction = (step as f64 / self.epsilon_decay_steps as f64).min(1.0);
        self.epsilon_start + fraction * (self.epsilon_end - self.epsilon_start)
    }
}

/// What the updates of one epoch did.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct DqnStats {
    /// Mean TD loss (MSE) of the gradient steps.
    pub loss: f64,
    /// Mean Q(s, a) of the sampled transitions.
    pub q_mean: f64,
    /// ε at the end of the epoch.
    pub epsilon: f64,
    /// Gradient steps taken.
    pub gradient_steps: u64,
}

// ---------------------------------------------------------------------------------------------
// Loss
// ---------------------------------------------------------------------------------------------

/// The mean-squared TD error (1/|B|) Σ_i (Q(s_i, a_i) − y_i)² from the Q-values `[batch,
/// num_actions]`, the actions as one-hot rows and the targets y (held constant).
pub fn td_loss<B: Backend>(
    q_values: Tensor<B, 2>,
    actions_one_hot: Tensor<B, 2>,
    targets: Tensor<B, 1>,
) -> Tensor<B, 1> {
    (q_of_actions(q_values, actions_one_hot) - targets.detach())
        .powi_scalar(2)
        .mean()
}

// ---------------------------------------------------------------------------------------------
// Agent
// ---------------------------------------------------------------------------------------------

/// The replay buffer's file in a checkpoint directory ([`Dqn::save_replay`]).
const REPLAY_FILE: &str = "replay.json";

/// A DQN agent.
pub struct Dqn<B: AutodiffBackend, N: TrainableNetwork<B> = Mlp<B>> {
    config: DqnConfig,
    online: N,
    target: N::InnerModule,
    optim: AgentOptimizer<N, B>,
    replay: ReplayBuffer,
    env: RolloutEnv,
    num_actions: usize,
    rng: ChaCha8Rng,
    device: B::Device,
    log: EpisodeLog,
    epoch: u64,
    updates: u64,
    host_online: Option<HostMlp>,
}

impl<B: AutodiffBackend> Dqn<B, Mlp<B>> {
    /// DQN with an MLP Q-network of `config.hidden`, initialised from `seed`.
    pub fn new(
        config: DqnConfig,
        env: Box<dyn Env>,
        device: &B::Device,
        seed: u64,
    ) -> Result<Self, AgentError> {
        // Before the network is built from `hidden`.
        config.validate()?;
        let (obs_len, num_actions) = discrete_env_dims(&*env)?;
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let q = MlpConfig::new(obs_len, config.hidden.clone(), num_actions)
            .with_activation(config.activation)
            .init(device, &mut rng);
        Self::with_network(config, q, env, device, rng)
    }
}

impl<B: AutodiffBackend, N: TrainableNetwork<B>> Dqn<B, N> {
    /// DQN with a given Q-network (one output per action), e.g. a
    /// [`crate::MultimodalNet`]. The environment's first reset is seeded from `rng`.
    pub fn with_network(
        config: DqnConfig,
        q_network: N,
        env: Box<dyn Env>,
        device: &B::Device,
        mut rng: ChaCha8Rng,
    ) -> Result<Self, AgentError> {
        config.validate()?;
        let (obs_len, num_actions) = discrete_env_dims(&*env)?;
        for (what, expected, got) in [
            ("Q-network input width", obs_len, q_network.obs_len()),
            ("Q-network output width", num_actions, q_network.d_output()),
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
            target: q_network.valid(),
            replay: ReplayBuffer::new(obs_len, config.buffer_capacity)?,
            online: q_network,
            optim: AgentOptimizer::new(OptimizerKind::Adam),
            env,
            num_actions,
            config,
            rng,
            device: device.clone(),
            log: EpisodeLog::default(),
            epoch: 0,
            updates: 0,
            host_online: None,
        })
    }

    /// The configuration.
    pub fn config(&self) -> &DqnConfig {
        &self.config
    }

    /// The online Q-network.
    pub fn q_network(&self) -> &N {
        &self.online
    }

    /// The replay buffer.
    pub fn replay(&self) -> &ReplayBuffer {
        &self.replay
    }

    /// The device the networks live on.
    pub fn device(&self) -> &B::Device {
        &self.device
    }

    /// Gradient steps taken so far.
    pub fn updates(&self) -> u64 {
        self.updates
    }

    /// Q(s, ·) for one observation.
    pub fn q_values(&mut self, obs: &[f32]) -> Vec<f32> {
        if self.host_online.is_none() {
            self.host_online = self.online.host_copy();
        }
        match &self.host_online {
            Some(host) => host.forward(obs),
            None => forward_one::<B::InnerBackend, _>(
                &self.online.valid(),
                None,
                obs,
                &[],
                &self.device,
            ),
        }
    }

    // -----------------------------------------------------------------------------------------
    // Rollout
    // -----------------------------------------------------------------------------------------

    /// Takes one ε-greedy step, stores the transition, and trains and syncs the target network
    /// when their intervals come round. Returns the loss and mean Q of any gradient steps.
    pub fn step(&mut self) -> Result<Option<(f64, f64)>, AgentError> {
        self.step_with(|agent| {
            let batch = agent.replay.sample(agent.config.batch_size, &mut agent.rng);
            agent.update(&batch)
        })
    }

    /// [`Dqn::step`] with each gradient step done by `gradient_step`, which returns its loss
    /// and mean Q (e.g. a DP-SGD step on its own sample of the replay buffer, see
    /// [`crate::dp`]).
    pub(crate) fn step_with(
        &mut self,
        mut gradient_step: impl FnMut(&mut Self) -> Result<(f64, f64), AgentError>,
    ) -> Result<Option<(f64, f64)>, AgentError> {
        let epsilon = self.config.epsilon(self.log.env_steps);
        let obs = self.env.obs().to_vec();
        let action = if self.rng.random::<f64>() < epsilon {
            self.rng.random_range(0..self.num_actions)
        } else {
            argmax(&self.q_values(&obs))
        };
        let step = self.env.step(action, &mut self.log)?;
        self.replay.push(
            &obs,
            action,
            step.reward as f32,
            self.env.obs(),
            step.terminated,
        );
        if step.done() {
            self.env.end_episode(&mut self.log)?;
        }

        let t = self.log.env_steps as usize;
        let mut trained = None;
        if t >= self.config.learning_starts && t.is_multiple_of(self.config.train_frequency) {
            let (mut loss, mut q) = (0.0, 0.0);
            for _ in 0..self.config.gradient_steps {
                let (l, m) = gradient_step(self)?;
                loss += l;
                q += m;
            }
            let n = self.config.gradient_steps as f64;
            trained = Some((loss / n, q / n));
        }
        if t.is_multiple_of(self.config.target_update_interval) {
            self.sync_target();
        }
        Ok(trained)
    }

    /// Stores a given transition in the replay buffer, as if the agent had taken it (an
    /// auditor's canary, `cargo xtask audit`); checked against the observation width and the
    /// action count.
    pub(crate) fn push_transition(
        &mut self,
        obs: &[f32],
        action: usize,
        reward: f32,
        next_obs: &[f32],
        terminated: bool,
    ) -> Result<(), AgentError> {
        let width = self.online.obs_len();
        for (what, got) in [
            ("observation width", obs.len()),
            ("next observation width", next_obs.len()),
        ] {
            if got != width {
                return Err(AgentError::ShapeMismatch {
                    what,
                    expected: width,
                    got,
                });
            }
        }
        if action >= self.num_actions {
            return Err(AgentError::InvalidParameter {
                name: "action",
                value: action as f64,
                expected: "below the number of actions",
            });
        }
        self.replay.push(obs, action, reward, next_obs, terminated);
        Ok(())
    }

    /// Copies the online network into the target network.
    pub fn sync_target(&mut self) {
        self.target = self.online.valid();
    }

    // -----------------------------------------------------------------------------------------
    // Loss
    // -----------------------------------------------------------------------------------------

    /// TD targets y = r + γ (1 − terminated) Q_target(s′, a′), with a′ = argmax Q_target(s′, ·)
    /// or, for Double DQN, argmax Q_online(s′, ·). Computed without autodiff.
    pub fn td_targets(&self, batch: &TransitionBatch) -> Tensor<B::InnerBackend, 1> {
        let device = &self.device;
        let next_obs = matrix::<B::InnerBackend>(&batch.next_obs, batch.obs_len, device);
        let next_q = self.target.forward_flat(next_obs.clone());
        let bootstrap = if self.config.double_dqn {
            let online_q = to_host(self.online.valid().forward_flat(next_obs));
            let best: Vec<usize> = online_q.chunks(self.num_actions).map(argmax).collect();
            q_of_actions(next_q, one_hot(&best, self.num_actions, device))
        } else {
            max_q(next_q)
        };
        let not_done: Vec<f32> = batch
            .terminated
            .iter()
            .map(|&t| if t { 0.0 } else { 1.0 })
            .collect();
        vector::<B::InnerBackend>(&batch.rewards, device)
            + bootstrap * vector::<B::InnerBackend>(&not_done, device) * self.config.gamma
    }

    /// The TD loss (1/|B|) Σ ℓ(Q(s, a) − y) (MSE unless [`DqnConfig::td_loss`]) and the mean
    /// Q(s, a).
    fn loss(&self, batch: &TransitionBatch) -> Result<(Tensor<B, 1>, Tensor<B, 1>), AgentError> {
        if batch.is_empty() {
            return Err(AgentError::EmptyBatch("Dqn::update"));
        }
        if batch.obs_len != self.online.obs_len() {
            return Err(AgentError::ShapeMismatch {
                what: "observation width",
                expected: self.online.obs_len(),
                got: batch.obs_len,
            });
        }
        let targets = Tensor::<B, 1>::from_inner(self.td_targets(batch));
        let obs = matrix::<B>(&batch.obs, batch.obs_len, &self.device);
        let actions = one_hot::<B>(&batch.actions, self.num_actions, &self.device);
        let q_values = self.online.forward_flat(obs);
        let q_mean = q_of_actions(q_values.clone().detach(), actions.clone()).mean();
        let loss = match self.config.td_loss {
            TdLoss::Mse => td_loss(q_values, actions, targets),
            huber => huber
                .per_sample(q_of_actions(q_values, actions) - targets.detach())
                .mean(),
        };
        Ok((loss, q_mean))
    }

    // -----------------------------------------------------------------------------------------
    // Update
    // -----------------------------------------------------------------------------------------

    /// One gradient step on `batch`; returns the loss and the mean Q(s, a) before it.
    pub fn update(&mut self, batch: &TransitionBatch) -> Result<(f64, f64), AgentError> {
        autodiff::exclusive(|| {
            let (loss, q_mean) = self.loss(batch)?;
            let values = to_host(Tensor::cat(vec![loss.clone().detach(), q_mean], 0));
            let (loss_value, q_value) = (f64::from(values[0]), f64::from(values[1]));
            if !loss_value.is_finite() {
                return Err(AgentError::NonFinite {
                    what: "TD loss",
                    value: loss_value,
                    update: self.updates,
                });
            }
            let grads = GradientsParams::from_grads(autodiff::backward(&loss), &self.online);
            self.online = self.optim.step(self.config.lr, self.online.clone(), grads);
            self.host_online = None;
            self.updates += 1;
            Ok((loss_value, q_value))
        })
    }

    /// The gradient of the MSE loss on `batch` at the current parameters.
    pub fn gradient(&self, batch: &TransitionBatch) -> Result<GradientRecord, AgentError> {
        autodiff::exclusive(|| {
            let (loss, _) = self.loss(batch)?;
            Ok(GradientRecord::from_grads(
                &self.online,
                &autodiff::backward(&loss),
            ))
        })
    }

    /// Writes the replay buffer to `dir/replay.json` (the agent's checkpoint leaves it out:
    /// it is large, and plain DQN refills it).
    pub fn save_replay(&self, dir: &Path) -> Result<(), AgentError> {
        save_json(dir, REPLAY_FILE, &self.replay)
    }

    /// Restores the replay buffer that [`Dqn::save_replay`] wrote; it must have this agent's
    /// observation width and capacity.
    pub fn load_replay(&mut self, dir: &Path) -> Result<(), AgentError> {
        let path = dir.join(REPLAY_FILE);
        let replay: ReplayBuffer = load_json(dir, REPLAY_FILE)?;
        if !replay.same_shape(&self.replay) {
            return Err(checkpoint_error(
                &path,
                "a replay buffer of another observation width or capacity",
            ));
        }
        self.replay = replay;
        Ok(())
    }

    /// Applies a gradient (for example an aggregated or privatised one) with the agent's
    /// optimizer and learning rate.
    pub fn apply_gradient(&mut self, record: &GradientRecord) -> Result<(), AgentError> {
        let grads = record.to_gradients_params(&self.online)?;
        self.online = self.optim.step(self.config.lr, self.online.clone(), grads);
        self.host_online = None;
        self.updates += 1;
        Ok(())
    }
}

impl<B: AutodiffBackend, N: TrainableNetwork<B>> Agent for Dqn<B, N> {
    fn algorithm(&self) -> &'static str {
        "dqn"
    }

    /// Greedy: argmax Q. Stochastic: ε-greedy with the current ε.
    fn act(&mut self, obs: &[f32], mode: ActMode) -> usize {
        if mode == ActMode::Stochastic
            && self.rng.random::<f64>() < self.config.epsilon(self.log.env_steps)
        {
            return self.rng.random_range(0..self.num_actions);
        }
        argmax(&self.q_values(obs))
    }

    /// One epoch: `steps_per_epoch` environment steps with their updates.
    fn train_epoch(&mut self) -> Result<EpochStats, AgentError> {
        // Acting and stepping stay outside autodiff sections; each update opens its own.
        let first_episode = self.log.episodes();
        let updates_before = self.updates;
        let (mut loss, mut q, mut n) = (0.0, 0.0, 0u64);
        for _ in 0..self.config.steps_per_epoch {
            if let Some((l, m)) = self.step()? {
                loss += l;
                q += m;
                n += 1;
            }
        }
        self.epoch += 1;
        let stats = DqnStats {
            loss: if n > 0 { loss / n as f64 } else { f64::NAN },
            q_mean: if n > 0 { q / n as f64 } else { f64::NAN },
            epsilon: self.config.epsilon(self.log.env_steps),
            gradient_steps: self.updates - updates_before,
        };
        let mut out = EpochStats::from_log(&self.log, self.epoch, self.updates, first_episode);
        out.extra = vec![
            ("loss", stats.loss),
            ("q_mean", stats.q_mean),
            ("epsilon", stats.epsilon),
        ];
        Ok(out)
    }

    fn episode_log(&self) -> &EpisodeLog {
        &self.log
    }

    fn save_checkpoint(&self, dir: &Path) -> Result<(), AgentError> {
        save_module::<B, _>(&self.online, dir, "q_network")?;
        save_module::<B::InnerBackend, _>(&self.target, dir, "target_network")?;
        self.optim.save(dir, "optim")?;
        AgentState::capture(&self.rng, self.epoch, self.updates, &self.log).save(dir)
    }

    /// Restores the networks, optimizer and generator; the replay buffer starts empty
    /// ([`Dqn::load_replay`] restores it where it was saved).
    fn load_checkpoint(&mut self, dir: &Path) -> Result<(), AgentError> {
        self.online = load_module::<B, _>(self.online.clone(), dir, "q_network", &self.device)?;
        self.target = load_module::<B::InnerBackend, _>(
            self.target.clone(),
            dir,
            "target_network",
            &self.device,
        )?;
        self.optim = self.optim.clone().load(dir, "optim", &self.device)?;
        let state = AgentState::load(dir)?;
        self.rng = state.rng();
        self.epoch = state.epoch;
        self.updates = state.updates;
        self.log = state.log;
        self.host_online = None;
        Ok(())
    }
}

//! A3C (Mnih et al. 2016) as the PGC paper runs it (Ono & Takahashi, section 3 and
//! Algorithm 1): `workers` threads share global parameters θ; each worker copies θ, plays one
//! episode, computes the gradient of the episode loss (eq. 15–18) and submits it; the
//! aggregator averages `buffer_size` submissions and steps θ (eq. 22 with SGD).
//!
//! A [`GradientHook`] transforms each submission before it leaves the worker: that is where a
//! locally private mechanism (PGC's Laplace or projected random sign) plugs in.
//!
//! **What is deterministic.** With one worker a run is reproducible from its seed, bit for
//! bit. With several, A3C is asynchronous by definition: which θ a worker copies, and the order
//! in which submissions reach the aggregator, depend on thread scheduling, so θ and the
//! learning curve vary from run to run. What does not vary is each submission given its θ′ and
//! its episode: every worker's gradient equals the same gradient computed alone (autodiff
//! sections keep the workers' graphs apart; [`A3c::keep_submissions`] lets a test check it), and
//! each worker's episodes follow its own seeded generator.

use std::path::Path;
use std::sync::Mutex;

use burn::config::Config;
use burn::module::AutodiffModule;
use burn::tensor::backend::{AutodiffBackend, Backend};
use burn::tensor::Tensor;
use privrl_envs::{Env, EnvError};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::Serialize;

use crate::agent::{load_module, save_module, ActMode, Agent, AgentState, EpisodeLog, EpochStats};
use crate::autodiff;
use crate::buffer::discount_cumsum;
use crate::env::{discrete_env_dims, RolloutEnv};
use crate::error::{
    check_count, check_hidden, check_non_negative, check_positive, check_unit_interval, AgentError,
};
use crate::heads::{
    argmax, host_softmax, sample_categorical, ActorCritic, ActorCriticConfig, Categorical,
};
use crate::network::{trainable_from_inner, HostMlp, Network};
use crate::nn::Activation;
use crate::optim::{AgentOptimizer, OptimizerKind};
use crate::record::GradientRecord;
use crate::tensor::{matrix, one_hot, to_host, vector};

// ---------------------------------------------------------------------------------------------
// Config
// ---------------------------------------------------------------------------------------------

/// How workers pick actions while collecting episodes.
#[derive(Config, Debug, Copy, PartialEq)]
pub enum Exploration {
    /// The PGC paper's rule: the `greedy` action with probability 1 − α, a uniform action with
    /// probability α = max(0, `start` − n / `decay`), n read on `clock` (Section 4,
    /// "Implementation": α = max{0, 0.5 − n/1800}).
    EpsilonGreedy {
        /// α at n = 0.
        start: f64,
        /// Clock ticks per unit decrease of α.
        decay: f64,
        /// What n counts.
        clock: ExplorationClock,
        /// The action taken with probability 1 − α.
        greedy: GreedyAction,
    },
    /// Sample from π at every step, no α (the original A3C).
    Sample,
}

impl Exploration {
    /// The exploration rate α at clock value `n` (0 for [`Exploration::Sample`]).
    pub fn epsilon(&self, n: u64) -> f64 {
        match *self {
            Exploration::EpsilonGreedy { start, decay, .. } => (start - n as f64 / decay).max(0.0),
            Exploration::Sample => 0.0,
        }
    }

    /// α at step `t` of an episode that starts at `time`: the schedule's n is the submission
    /// count, or the environment steps before the episode plus `t`.
    pub fn epsilon_at(&self, time: ExplorationTime, t: u64) -> f64 {
        match *self {
            Exploration::EpsilonGreedy {
                clock: ExplorationClock::Submissions,
                ..
            } => self.epsilon(time.submissions),
            Exploration::EpsilonGreedy {
                clock: ExplorationClock::EnvSteps,
                ..
            } => self.epsilon(time.env_steps + t),
            Exploration::Sample => 0.0,
        }
    }
}

/// What the n of the exploration schedule α = max(0, 0.5 − n/1800) counts; the paper does not
/// say.
#[derive(Config, Debug, Copy, PartialEq, Eq)]
pub enum ExplorationClock {
    /// Submissions (episodes) so far: α reaches 0 after 900 episodes.
    Submissions,
    /// Environment steps so far, across agents, advancing within an episode: the global frame
    /// counter of the TensorFlow A3C CartPole code that such papers start from (there ε decays
    /// over 200 × threads frames, and 1800 = 200 × the paper's 9 threads); α reaches 0 after
    /// 900 steps, a few dozen early episodes.
    EnvSteps,
}

/// The action an ε-greedy worker takes with probability 1 − α.
#[derive(Config, Debug, Copy, PartialEq, Eq)]
pub enum GreedyAction {
    /// argmax_a π(a|s) (Algorithm 1).
    Argmax,
    /// a ∼ π(·|s), as the TensorFlow A3C CartPole code does.
    Sample,
}

/// Where the exploration clock stands when an episode starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ExplorationTime {
    /// Submissions handed out (or received by the aggregator) before this episode.
    pub submissions: u64,
    /// Environment steps before this episode.
    pub env_steps: u64,
}

/// The reward r_t the loss sees (eq. 12, 18); the score ζ (steps survived) is the same under
/// every scheme.
#[derive(Config, Debug, Copy, PartialEq, Eq)]
pub enum RewardScheme {
    /// The environment's reward: +1 per step on CartPole, the failing step included; an
    /// episode cut at the time limit bootstraps from V(s_T).
    Gymnasium,
    /// 0 per step, −1 on the step that fails, +1 on the step that reaches the time limit, and
    /// the limit ends the episode like a terminal state (no bootstrap): the scheme of the
    /// Keras/TensorFlow A3C CartPole example that such papers start from.
    Sparse,
}

impl RewardScheme {
    /// (r_t, whether the episode bootstraps from V(s_{t+1})) for a step with the environment's
    /// `reward` that `terminated` or was `truncated` at the time limit (the limit wins when both).
    pub fn reward(self, reward: f64, terminated: bool, truncated: bool) -> (f32, bool) {
        match self {
            RewardScheme::Gymnasium => (reward as f32, truncated && !terminated),
            RewardScheme::Sparse if truncated => (1.0, false),
            RewardScheme::Sparse if terminated => (-1.0, false),
            RewardScheme::Sparse => (0.0, false),
        }
    }
}

/// How the loss of an update reduces over the T steps of its episode.
#[derive(Config, Debug, Copy, PartialEq, Eq)]
pub enum LossReduction {
    /// Σ_t, as eq. 16–17 write it: the gradient grows with the episode's length.
    Sum,
    /// (1/T) Σ_t (`tf.reduce_mean` in the TensorFlow A3C code): the same direction, 1/T the size.
    Mean,
}

/// The most worker threads an [`A3cConfig`] accepts.
pub const MAX_WORKERS: usize = 4096;

/// Hyper-parameters of A3C. The loss and the aggregation are the PGC paper's (eq. 15–18, 22);
/// the defaults are tuned to solve CartPole-v1 (a 64-unit trunk with biases, Adam at 1e-3,
/// actions sampled from π). [`A3cConfig::pgc_paper`] gives the paper's own values.
#[derive(Config, Debug)]
pub struct A3cConfig {
    /// Worker threads (the paper uses 9).
    #[config(default = 9)]
    pub workers: usize,
    /// Widths of the shared trunk θ^(c).
    #[config(default = "vec![64]")]
    pub hidden: Vec<usize>,
    /// Trunk non-linearity.
    #[config(default = "Activation::Relu")]
    pub activation: Activation,
    /// Whether the layers have biases.
    #[config(default = true)]
    pub bias: bool,
    /// Discount factor γ.
    #[config(default = 0.99)]
    pub gamma: f64,
    /// Learning rate η of the aggregator.
    #[config(default = 1e-3)]
    pub lr: f64,
    /// The aggregator's update rule (eq. 22 is SGD).
    #[config(default = "OptimizerKind::Adam")]
    pub optimizer: OptimizerKind,
    /// Weight λ of the value loss (eq. 15).
    #[config(default = 0.5)]
    pub value_coef: f64,
    /// Weight β of the entropy bonus (eq. 16).
    #[config(default = 0.01)]
    pub entropy_coef: f64,
    /// Submissions averaged per update, |B| in eq. 22.
    #[config(default = 1)]
    pub buffer_size: usize,
    /// How workers act.
    #[config(default = "Exploration::Sample")]
    pub exploration: Exploration,
    /// The reward the loss sees.
    #[config(default = "RewardScheme::Gymnasium")]
    pub reward: RewardScheme,
    /// Sum (eq. 16–17) or mean of the loss over the episode's steps.
    #[config(default = "LossReduction::Sum")]
    pub loss_reduction: LossReduction,
    /// Submissions (episodes) per epoch (one `metrics.csv` row).
    #[config(default = 100)]
    pub submissions_per_epoch: usize,
}

impl A3cConfig {
    /// The PGC paper's CartPole setting (section 4, "Implementation" and "Hyper Parameters"):
    /// 9 workers, a 16-unit ReLU trunk without biases (d = 112), SGD with η = 0.5, λ = 0.5,
    /// β = 0.01, ε-greedy on argmax π with α = max(0, 0.5 − n/1800).
    ///
    /// The paper clips and perturbs every gradient before the aggregator applies it (its
    /// mechanisms use C = 0.01 or 1); without a mechanism, η = 0.5 on the unclipped episode
    /// loss diverges on CartPole, so pair this with a [`GradientHook`].
    pub fn pgc_paper() -> Self {
        Self::new()
            .with_hidden(vec![16])
            .with_bias(false)
            .with_lr(0.5)
            .with_optimizer(OptimizerKind::Sgd)
            .with_exploration(Exploration::EpsilonGreedy {
                start: 0.5,
                decay: 1800.0,
                clock: ExplorationClock::Submissions,
                greedy: GreedyAction::Argmax,
            })
    }

    /// Checks every parameter; the error names the first one out of range.
    pub fn validate(&self) -> Result<(), AgentError> {
        check_count("workers", self.workers)?;
        // One thread and one environment each: more than a machine runs is a mistake, refused
        // by name before the environments are made.
        if self.workers > MAX_WORKERS {
            return Err(AgentError::InvalidParameter {
                name: "workers",
                value: self.workers as f64,
                expected: "from 1 to 4,096 (MAX_WORKERS)",
            });
        }
        check_hidden("hidden", &self.hidden)?;
        check_unit_interval("gamma", self.gamma)?;
        check_positive("lr", self.lr)?;
        check_non_negative("value_coef", self.value_coef)?;
        check_non_negative("entropy_coef", self.entropy_coef)?;
        check_count("buffer_size", self.buffer_size)?;
        check_count("submissions_per_epoch", self.submissions_per_epoch)?;
        if let Exploration::EpsilonGreedy { start, decay, .. } = self.exploration {
            check_unit_interval("exploration.start", start)?;
            check_positive("exploration.decay", decay)?;
        }
        Ok(())
    }
}

/// Transforms a worker's gradient before submission: `(worker, submission index, gradient,
/// worker's generator) -> submitted gradient`. A locally private mechanism goes here.
pub type GradientHook =
    Box<dyn Fn(usize, u64, GradientRecord, &mut ChaCha8Rng) -> GradientRecord + Send + Sync>;

/// Builds the environment of worker `i` (the PGC experiments give workers different gravity).
pub type EnvFactory = Box<dyn Fn(usize) -> Result<Box<dyn Env>, EnvError> + Send + Sync>;

/// One worker's episode H_n.
#[derive(Debug, Clone, PartialEq)]
pub struct A3cEpisode {
    /// Values per observation.
    pub obs_len: usize,
    /// Observations s_0 … s_{T−1}, row-major.
    pub obs: Vec<f32>,
    /// Actions.
    pub actions: Vec<usize>,
    /// Rewards r_0 … r_{T−1}.
    pub rewards: Vec<f32>,
    /// V(s_T; θ′) if the episode was truncated, 0 if s_T is terminal.
    pub bootstrap_value: f32,
}

/// One submission as its worker made it, before the [`GradientHook`]: kept by
/// [`A3c::keep_submissions`] so that a test or an audit can recompute the gradient alone.
#[derive(Debug, Clone)]
pub struct SubmissionRecord<B: AutodiffBackend> {
    /// The worker's index.
    pub worker: usize,
    /// The submission's number n (the exploration schedule's clock).
    pub n: u64,
    /// θ′, the worker's copy of the global parameters.
    pub parameters: ActorCritic<B::InnerBackend>,
    /// The episode H_n that the worker played with θ′.
    pub episode: A3cEpisode,
    /// g_n = ∂L̂_n(θ′)/∂θ′ as the worker computed it.
    pub gradient: GradientRecord,
}

/// What the submissions of one epoch did.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize)]
pub struct A3cStats {
    /// Mean policy loss L^(p) (eq. 16) of the submitted episodes.
    pub policy_loss: f64,
    /// Mean value loss L^(v) (eq. 17).
    pub value_loss: f64,
    /// Mean per-step entropy.
    pub entropy: f64,
    /// Mean L1 norm of the submitted gradients (before the hook).
    pub gradient_l1: f64,
}

// ---------------------------------------------------------------------------------------------
// Loss
// ---------------------------------------------------------------------------------------------

/// V̂(s_t) = Σ_{j=t}^{T−1} γ^{j−t} r_j + γ^{T−t} V(s_T) (eq. 18; eq. 12 gives the discount on
/// the bootstrap term, which eq. 18 leaves out; V(s_T) = 0 at a terminal state).
pub fn value_targets(rewards: &[f32], bootstrap_value: f32, gamma: f64) -> Vec<f32> {
    let mut extended: Vec<f64> = rewards.iter().map(|&r| f64::from(r)).collect();
    extended.push(f64::from(bootstrap_value));
    let mut targets = discount_cumsum(&extended, gamma);
    targets.pop();
    targets.into_iter().map(|v| v as f32).collect()
}

/// The terms of the A3C loss (each `[1]`).
#[derive(Debug, Clone)]
pub struct ActorCriticTerms<B: Backend> {
    /// L̂ = L̂^(p) + λ L̂^(v) (eq. 15).
    pub loss: Tensor<B, 1>,
    /// L̂^(p) = −Σ_t log π(a_t|s_t) A_t − β Σ_t H(π(·|s_t)) (eq. 16).
    pub policy_loss: Tensor<B, 1>,
    /// L̂^(v) = Σ_t (V̂(s_t) − V(s_t))² (eq. 17).
    pub value_loss: Tensor<B, 1>,
    /// Mean entropy (no gradient).
    pub entropy: Tensor<B, 1>,
}

/// Eq. 15–17 from the logits `[T, num_actions]`, the values V(s_t) `[T]`, the actions as
/// one-hot rows and the targets V̂(s_t) of eq. 18. The advantage A_t = V̂(s_t) − V(s_t) in the
/// policy term is held constant (as in A3C); the value term carries the critic's gradient.
pub fn actor_critic_loss<B: Backend>(
    logits: Tensor<B, 2>,
    values: Tensor<B, 1>,
    actions_one_hot: Tensor<B, 2>,
    value_targets: Tensor<B, 1>,
    value_coef: f64,
    entropy_coef: f64,
) -> ActorCriticTerms<B> {
    let pi = Categorical::from_logits(logits);
    let targets = value_targets.detach();
    let advantages = targets.clone() - values.clone().detach();
    let entropy = pi.entropy();
    // eq. 16
    let policy_loss = (pi.log_prob(actions_one_hot) * advantages).sum().neg()
        - entropy.clone().sum() * entropy_coef;
    // eq. 17
    let value_loss = (targets - values).powi_scalar(2).sum();
    ActorCriticTerms {
        // eq. 15
        loss: policy_loss.clone() + value_loss.clone() * value_coef,
        policy_loss: policy_loss.detach(),
        value_loss: value_loss.detach(),
        entropy: entropy.detach().mean(),
    }
}

/// The loss of one episode for `model` (eq. 15–18, or its mean over the steps with
/// `config.loss_reduction`), with `[L^(p), L^(v), mean H]` (the sums of eq. 16–17) on the host.
pub fn episode_loss<B: AutodiffBackend>(
    model: &ActorCritic<B>,
    episode: &A3cEpisode,
    config: &A3cConfig,
    device: &B::Device,
) -> Result<(Tensor<B, 1>, [f64; 3]), AgentError> {
    if episode.actions.is_empty() {
        return Err(AgentError::EmptyBatch("A3C episode loss"));
    }
    if episode.obs_len != model.obs_len() {
        return Err(AgentError::ShapeMismatch {
            what: "observation width",
            expected: model.obs_len(),
            got: episode.obs_len,
        });
    }
    let num_actions = model.policy.dims().1;
    let (logits, values) = model.forward(matrix::<B>(&episode.obs, episode.obs_len, device));
    let terms = actor_critic_loss(
        logits,
        values,
        one_hot(&episode.actions, num_actions, device),
        vector::<B>(
            &value_targets(&episode.rewards, episode.bootstrap_value, config.gamma),
            device,
        ),
        config.value_coef,
        config.entropy_coef,
    );
    let host = to_host(Tensor::cat(
        vec![terms.policy_loss, terms.value_loss, terms.entropy],
        0,
    ));
    let loss = match config.loss_reduction {
        LossReduction::Sum => terms.loss,
        LossReduction::Mean => terms.loss / episode.actions.len() as f32,
    };
    Ok((
        loss,
        [f64::from(host[0]), f64::from(host[1]), f64::from(host[2])],
    ))
}

// ---------------------------------------------------------------------------------------------
// Agent
// ---------------------------------------------------------------------------------------------

/// The aggregator's state, behind one lock.
struct Shared<B: AutodiffBackend> {
    model: ActorCritic<B>,
    optim: AgentOptimizer<ActorCritic<B>, B>,
    buffer: Vec<GradientRecord>,
    log: EpisodeLog,
    /// Submissions handed out to workers (the n of the exploration schedule).
    started: u64,
    updates: u64,
    sums: A3cStats,
    summed: u64,
    /// Set when a worker failed, so that the others stop.
    failed: bool,
    /// Every submission since [`A3c::keep_submissions`], if it was called.
    kept: Option<Vec<SubmissionRecord<B>>>,
}

impl<B: AutodiffBackend> Shared<B> {
    fn exploration_time(&self) -> ExplorationTime {
        ExplorationTime {
            submissions: self.started,
            env_steps: self.log.env_steps,
        }
    }
}

/// One worker's environment and generator, kept across epochs.
struct Worker {
    env: RolloutEnv,
    rng: ChaCha8Rng,
}

/// An A3C agent: global parameters, the aggregator, and the workers' environments.
pub struct A3c<B: AutodiffBackend> {
    config: A3cConfig,
    shared: Mutex<Shared<B>>,
    workers: Vec<Worker>,
    hook: Option<GradientHook>,
    num_actions: usize,
    rng: ChaCha8Rng,
    device: B::Device,
    epoch: u64,
    /// Copy of the aggregator's episode log as of the last epoch.
    log: EpisodeLog,
}

impl<B: AutodiffBackend> A3c<B> {
    /// A3C whose worker `i` plays in `make_env(i)`, with parameters and worker generators
    /// drawn from `seed`.
    pub fn new(
        config: A3cConfig,
        make_env: EnvFactory,
        device: &B::Device,
        seed: u64,
    ) -> Result<Self, AgentError> {
        config.validate()?;
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let first = make_env(0)?;
        let (obs_len, num_actions) = discrete_env_dims(&*first)?;
        let model = ActorCriticConfig::new(obs_len, num_actions)
            .with_hidden(config.hidden.clone())
            .with_activation(config.activation)
            .with_bias(config.bias)
            .init(device, &mut rng);
        let mut workers = Vec::with_capacity(config.workers);
        let mut first = Some(first);
        for i in 0..config.workers {
            let env = match first.take() {
                Some(env) => env,
                None => make_env(i)?,
            };
            let (o, a) = discrete_env_dims(&*env)?;
            if (o, a) != (obs_len, num_actions) {
                return Err(AgentError::UnsupportedEnv {
                    env: env.id().to_string(),
                    reason: format!(
                        "worker {i} has {o} observation values and {a} actions, worker 0 has {obs_len} and {num_actions}"
                    ),
                });
            }
            let env_seed = rng.random();
            let worker_rng = ChaCha8Rng::seed_from_u64(rng.random());
            workers.push(Worker {
                env: RolloutEnv::new(env, env_seed)?,
                rng: worker_rng,
            });
        }
        Ok(Self {
            shared: Mutex::new(Shared {
                model,
                optim: AgentOptimizer::new(config.optimizer),
                buffer: Vec::new(),
                log: EpisodeLog::default(),
                started: 0,
                updates: 0,
                sums: A3cStats::default(),
                summed: 0,
                failed: false,
                kept: None,
            }),
            config,
            workers,
            hook: None,
            num_actions,
            rng,
            device: device.clone(),
            epoch: 0,
            log: EpisodeLog::default(),
        })
    }

    /// A3C with every worker in a copy of the registered environment `name`.
    pub fn for_env(
        config: A3cConfig,
        name: &str,
        device: &B::Device,
        seed: u64,
    ) -> Result<Self, AgentError> {
        let name = name.to_string();
        Self::new(
            config,
            Box::new(move |_| privrl_envs::make(&name)),
            device,
            seed,
        )
    }

    /// Installs a transformation of every submitted gradient (e.g. a PGC mechanism).
    pub fn set_gradient_hook(&mut self, hook: GradientHook) {
        self.hook = Some(hook);
    }

    /// The configuration.
    pub fn config(&self) -> &A3cConfig {
        &self.config
    }

    /// A copy of the global network.
    pub fn model(&self) -> ActorCritic<B> {
        self.lock().model.clone()
    }

    /// Keeps every later submission (θ′, episode, gradient) until
    /// [`A3c::take_kept_submissions`]; for tests and audits, since it holds a copy of θ′ each.
    pub fn keep_submissions(&mut self) {
        self.lock().kept.get_or_insert_with(Vec::new);
    }

    /// The submissions kept since the last call, in the order they reached the aggregator.
    pub fn take_kept_submissions(&mut self) -> Vec<SubmissionRecord<B>> {
        self.lock()
            .kept
            .as_mut()
            .map(std::mem::take)
            .unwrap_or_default()
    }

    /// Submissions received so far.
    pub fn submissions(&self) -> u64 {
        self.lock().started
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Shared<B>> {
        self.shared
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    // -----------------------------------------------------------------------------------------
    // Rollout
    // -----------------------------------------------------------------------------------------

    /// eq. 22: θ ← θ − η (1/|B|) Σ_{g̃ ∈ B} g̃, then empties the buffer.
    fn apply_buffer(shared: &mut Shared<B>, lr: f64) -> Result<(), AgentError> {
        let mean = GradientRecord::mean(&shared.buffer)?;
        shared.buffer.clear();
        let grads = mean.to_gradients_params(&shared.model)?;
        shared.model = shared.optim.step(lr, shared.model.clone(), grads);
        shared.updates += 1;
        Ok(())
    }

    /// Runs the workers until `count` more submissions have been handed out.
    pub fn run_submissions(&mut self, count: u64) -> Result<A3cStats, AgentError> {
        let target = self.lock().started + count;
        let context = WorkerContext {
            config: &self.config,
            shared: &self.shared,
            hook: self.hook.as_ref(),
            device: &self.device,
        };
        let this = &context;
        let results: Vec<Result<(), AgentError>> = std::thread::scope(|scope| {
            let handles: Vec<_> = self
                .workers
                .iter_mut()
                .enumerate()
                .map(|(i, worker)| {
                    scope.spawn(move || {
                        let result = this.run_worker(i, worker, target);
                        if result.is_err() {
                            this.lock().failed = true;
                        }
                        result
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().expect("an A3C worker panicked"))
                .collect()
        });
        let mut shared = self
            .shared
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        shared.failed = false;
        self.log.clone_from(&shared.log);
        for result in results {
            result?;
        }
        let n = shared.summed.max(1) as f64;
        let stats = A3cStats {
            policy_loss: shared.sums.policy_loss / n,
            value_loss: shared.sums.value_loss / n,
            entropy: shared.sums.entropy / n,
            gradient_l1: shared.sums.gradient_l1 / n,
        };
        shared.sums = A3cStats::default();
        shared.summed = 0;
        Ok(stats)
    }

    // -----------------------------------------------------------------------------------------
    // Update
    // -----------------------------------------------------------------------------------------

    /// The gradient of the episode loss (eq. 15) at the current global parameters.
    pub fn gradient(&self, episode: &A3cEpisode) -> Result<GradientRecord, AgentError> {
        autodiff::exclusive(|| {
            let model = self.model();
            let (loss, _) = episode_loss(&model, episode, &self.config, &self.device)?;
            Ok(GradientRecord::from_grads(
                &model,
                &autodiff::backward(&loss),
            ))
        })
    }

    /// Submits a gradient to the aggregator as a worker would: buffered, and applied once the
    /// buffer holds `buffer_size` gradients. Returns whether an update was applied.
    pub fn submit(&mut self, gradient: GradientRecord) -> Result<bool, AgentError> {
        let lr = self.config.lr;
        let buffer_size = self.config.buffer_size;
        let mut shared = self.lock();
        shared.buffer.push(gradient);
        if shared.buffer.len() >= buffer_size {
            Self::apply_buffer(&mut shared, lr)?;
            return Ok(true);
        }
        Ok(false)
    }
}

/// Plays one episode in `env` with host copies of the policy and the value function, the
/// exploration clock standing at `time` when it starts, as an A3C worker or a PGC agent does
/// (Algorithm 1's inner loop). The episode ends at a terminal state or at the time limit; a cut
/// episode bootstraps from V(s_T) unless `reward` treats the limit as terminal.
pub(crate) fn play_episode(
    env: &mut RolloutEnv,
    policy: &HostMlp,
    value: &HostMlp,
    config: &A3cConfig,
    time: ExplorationTime,
    rng: &mut ChaCha8Rng,
) -> Result<(A3cEpisode, EpisodeLog), AgentError> {
    let exploration = config.exploration;
    let num_actions = policy.d_output();
    let mut local = EpisodeLog::default();
    let mut episode = A3cEpisode {
        obs_len: env.obs_len(),
        obs: Vec::new(),
        actions: Vec::new(),
        rewards: Vec::new(),
        bootstrap_value: 0.0,
    };
    loop {
        let obs = env.obs().to_vec();
        let logits = policy.forward(&obs);
        let action = match exploration {
            Exploration::Sample => sample_categorical(&host_softmax(&logits), rng),
            Exploration::EpsilonGreedy { greedy, .. } => {
                let epsilon = exploration.epsilon_at(time, episode.actions.len() as u64);
                if rng.random::<f64>() < epsilon {
                    rng.random_range(0..num_actions)
                } else {
                    match greedy {
                        GreedyAction::Argmax => argmax(&logits),
                        GreedyAction::Sample => sample_categorical(&host_softmax(&logits), rng),
                    }
                }
            }
        };
        let step = env.step(action, &mut local)?;
        let (reward, bootstrap) =
            config
                .reward
                .reward(step.reward, step.terminated, step.truncated);
        episode.obs.extend_from_slice(&obs);
        episode.actions.push(action);
        episode.rewards.push(reward);
        if step.done() {
            if bootstrap {
                episode.bootstrap_value = value.forward(env.obs())[0];
            }
            env.end_episode(&mut local)?;
            return Ok((episode, local));
        }
    }
}

/// What a worker thread sees of the agent.
struct WorkerContext<'a, B: AutodiffBackend> {
    config: &'a A3cConfig,
    shared: &'a Mutex<Shared<B>>,
    hook: Option<&'a GradientHook>,
    device: &'a B::Device,
}

impl<B: AutodiffBackend> WorkerContext<'_, B> {
    fn lock(&self) -> std::sync::MutexGuard<'_, Shared<B>> {
        self.shared
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Worker loop: take a submission slot, copy θ, play, compute and submit the gradient,
    /// until `target` submissions have been handed out.
    fn run_worker(&self, index: usize, worker: &mut Worker, target: u64) -> Result<(), AgentError> {
        loop {
            let (time, local, keep) = {
                let mut shared = self.lock();
                if shared.started >= target || shared.failed {
                    return Ok(());
                }
                let time = shared.exploration_time();
                shared.started += 1;
                (time, shared.model.valid(), shared.kept.is_some())
            };
            let n = time.submissions;
            let (policy, value) = local.host_copies();
            let kept_parameters = keep.then(|| local.clone());
            let (episode, local_log) = play_episode(
                &mut worker.env,
                &policy,
                &value,
                self.config,
                time,
                &mut worker.rng,
            )?;
            // θ′ ← θ, then g_n = ∂L̂_n(θ′)/∂θ′.
            let (mut gradient, terms) = autodiff::exclusive(|| {
                let local = trainable_from_inner::<B, ActorCritic<B>>(local);
                let (loss, terms) = episode_loss(&local, &episode, self.config, self.device)?;
                if let Some(&value) = terms.iter().find(|v| !v.is_finite()) {
                    return Err(AgentError::NonFinite {
                        what: "A3C episode loss",
                        value,
                        update: n,
                    });
                }
                let gradient = GradientRecord::from_grads(&local, &autodiff::backward(&loss));
                Ok((gradient, terms))
            })?;
            let l1 = gradient.l1_norm();
            let kept = kept_parameters.map(|parameters| SubmissionRecord {
                worker: index,
                n,
                parameters,
                episode: episode.clone(),
                gradient: gradient.clone(),
            });
            if let Some(hook) = self.hook {
                gradient = hook(index, n, gradient, &mut worker.rng);
            }
            let mut shared = self.lock();
            shared.log.env_steps += local_log.env_steps;
            for (&r, &l) in local_log.returns.iter().zip(&local_log.lengths) {
                shared.log.record(r, l);
            }
            shared.sums.policy_loss += terms[0];
            shared.sums.value_loss += terms[1];
            shared.sums.entropy += terms[2];
            shared.sums.gradient_l1 += l1;
            shared.summed += 1;
            shared.buffer.push(gradient);
            if let (Some(kept), Some(record)) = (shared.kept.as_mut(), kept) {
                kept.push(record);
            }
            if shared.buffer.len() >= self.config.buffer_size {
                A3c::<B>::apply_buffer(&mut shared, self.config.lr)?;
            }
        }
    }
}

impl<B: AutodiffBackend> Agent for A3c<B> {
    fn algorithm(&self) -> &'static str {
        "a3c"
    }

    /// Greedy: argmax π. Stochastic: the workers' exploration rule at the current submission.
    fn act(&mut self, obs: &[f32], mode: ActMode) -> usize {
        let (model, time) = {
            let shared = self.lock();
            (shared.model.valid(), shared.exploration_time())
        };
        let logits = model.host_copies().0.forward(obs);
        match (mode, self.config.exploration) {
            (ActMode::Greedy, _) => argmax(&logits),
            (ActMode::Stochastic, Exploration::Sample) => {
                sample_categorical(&host_softmax(&logits), &mut self.rng)
            }
            (ActMode::Stochastic, exploration @ Exploration::EpsilonGreedy { greedy, .. }) => {
                if self.rng.random::<f64>() < exploration.epsilon_at(time, 0) {
                    self.rng.random_range(0..self.num_actions)
                } else if greedy == GreedyAction::Sample {
                    sample_categorical(&host_softmax(&logits), &mut self.rng)
                } else {
                    argmax(&logits)
                }
            }
        }
    }

    /// One epoch: `submissions_per_epoch` episodes across the workers.
    fn train_epoch(&mut self) -> Result<EpochStats, AgentError> {
        let first_episode = self.lock().log.episodes();
        let stats = self.run_submissions(self.config.submissions_per_epoch as u64)?;
        self.epoch += 1;
        let shared = self.lock();
        let mut out = EpochStats::from_log(&shared.log, self.epoch, shared.updates, first_episode);
        out.extra = vec![
            ("policy_loss", stats.policy_loss),
            ("value_loss", stats.value_loss),
            ("entropy", stats.entropy),
            ("gradient_l1", stats.gradient_l1),
            (
                "exploration",
                self.config
                    .exploration
                    .epsilon_at(shared.exploration_time(), 0),
            ),
        ];
        Ok(out)
    }

    /// A copy of the aggregator's log, refreshed after every batch of submissions.
    fn episode_log(&self) -> &EpisodeLog {
        &self.log
    }

    fn save_checkpoint(&self, dir: &Path) -> Result<(), AgentError> {
        let shared = self.lock();
        save_module::<B, _>(&shared.model, dir, "model")?;
        shared.optim.save(dir, "optim")?;
        AgentState::capture(&self.rng, self.epoch, shared.updates, &shared.log).save(dir)
    }

    fn load_checkpoint(&mut self, dir: &Path) -> Result<(), AgentError> {
        let device = self.device.clone();
        let state = AgentState::load(dir)?;
        {
            let mut shared = self.lock();
            shared.model = load_module::<B, _>(shared.model.clone(), dir, "model", &device)?;
            shared.optim = shared.optim.clone().load(dir, "optim", &device)?;
            shared.updates = state.updates;
            shared.started = state.log.episodes() as u64;
            shared.log = state.log.clone();
            shared.buffer.clear();
        }
        self.log = state.log.clone();
        self.rng = state.rng();
        self.epoch = state.epoch;
        Ok(())
    }
}

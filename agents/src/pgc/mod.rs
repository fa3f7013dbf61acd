//! PGC-A3C: locally private distributed RL (Ono & Takahashi, *Locally Private Distributed
//! Reinforcement Learning*, Section 3 and Algorithm 1).
//!
//! **Private Gradient Collection** (Section 3.1.1): an [`Aggregator`] holds θ and a buffer B.
//! A [`PgcAgent`] copies θ, plays one episode in its private environment (CartPole-v0 with its
//! own gravity ψ), computes the gradient of the episode loss (eq. 15–18, the same code as
//! [`crate::A3c`]), passes it through a mechanism Q ([`GradientMechanism`]: Laplace, Algorithm
//! 2, or projected random sign, Algorithm 3, from `privrl-privacy`) and submits it. The
//! aggregator applies eq. 22 once |B| ≥ MAX_BUF and publishes the new θ. It sees only noisy
//! gradients, so θ is post-processing of ε-LDP releases (Lemmas 1–4, Theorem 3).
//!
//! With `rounds = T > 1`, an agent submits T times with ε/T each (Section 3.2.1).
//!
//! Submissions travel over a [`Transport`]: [`InProcess`] (threads, the default; the paper
//! uses 9 agent threads) or [`RedisTransport`] (Redis Streams across processes). Delivery is at
//! least once and the aggregator applies idempotently: each submission carries its agent's
//! `(source, seq)`, the aggregator remembers the highest applied `seq` per source in its
//! checkpoint, and acknowledges a submission only after its update is saved. An aggregator
//! killed and restarted from its checkpoint therefore loses no submission and applies none
//! twice.
//!
//! The metrics of Section 4 are here too: μ_n (eq. 25), the first success time (eq. 26), the
//! success ratio (eq. 27) and the relative area under its curve (Table 3).

mod redis;
mod transport;

pub use self::redis::RedisTransport;
pub use self::transport::{InProcess, Transport};

use std::collections::{BTreeMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use burn::config::Config;
use burn::module::{Module, ModuleMapper, ModuleVisitor, Param};
use burn::tensor::backend::{AutodiffBackend, Backend};
use burn::tensor::{Tensor, TensorData};
use privrl_envs::{CartPoleConfig, Env};
use privrl_privacy::{
    GradientMechanism, GradientMechanismConfig, MechanismRng, NoiseMode, PrivacyError,
};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::a3c::{episode_loss, play_episode, A3cConfig, A3cEpisode};
use crate::autodiff;
use crate::env::{discrete_env_dims, RolloutEnv};
use crate::error::{AgentError, RecordError};
use crate::heads::{ActorCritic, ActorCriticConfig};
use crate::optim::{FlatAdam, OptimizerKind};
use crate::record::GradientRecord;

// ---------------------------------------------------------------------------------------------
// Errors
// ---------------------------------------------------------------------------------------------

/// What can go wrong in a PGC run.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum PgcError {
    /// A configuration value outside its range.
    #[error("invalid parameter `{name}` = {value}; expected {expected}")]
    InvalidParameter {
        /// Parameter name.
        name: &'static str,
        /// The value given, as text.
        value: String,
        /// The accepted range.
        expected: &'static str,
    },
    /// The agent side failed (environment, loss, gradient).
    #[error(transparent)]
    Agent(#[from] AgentError),
    /// The mechanism refused the gradient.
    #[error(transparent)]
    Privacy(#[from] PrivacyError),
    /// θ does not fit the network.
    #[error(transparent)]
    Record(#[from] RecordError),
    /// The transport failed (a Redis error, a malformed message).
    #[error("{transport} transport: {message}")]
    Transport {
        /// `in-process` or `redis`.
        transport: &'static str,
        /// What happened.
        message: String,
    },
    /// Reading or writing the aggregator's checkpoint failed.
    #[error("checkpoint {path}: {message}")]
    Checkpoint {
        /// The checkpoint file.
        path: PathBuf,
        /// What went wrong.
        message: String,
    },
    /// No θ was published within the wait.
    #[error("no parameters published after {0:?}; is the aggregator running?")]
    NoParameters(Duration),
}

// ---------------------------------------------------------------------------------------------
// Config
// ---------------------------------------------------------------------------------------------

/// Hyper-parameters of a PGC-A3C run. [`PgcConfig::paper`] is Section 4's setting.
#[derive(Config, Debug)]
pub struct PgcConfig {
    /// The A3C part: agent threads (`workers`, the paper's 9), the network (a 16-unit ReLU
    /// trunk without biases, d = 112 on CartPole), γ, η, λ, β, MAX_BUF (`buffer_size`) and the
    /// exploration schedule α = max(0, 0.5 − n/1800).
    #[config(default = "A3cConfig::pgc_paper()")]
    pub a3c: A3cConfig,
    /// The mechanism Q (none, Laplace or PRS; at ε = ∞ Laplace keeps the L1 clipping of
    /// eq. 19 and adds no noise, PRS projects to d̂ = d and flips by the unbiased stochastic
    /// sign, the limits of the two mechanisms that the paper's ε = ∞ column stands for).
    #[config(default = "GradientMechanismConfig::None")]
    pub mechanism: GradientMechanismConfig,
    /// Submissions per agent T, each with ε/T (Section 3.2.1; the paper's runs use 1).
    #[config(default = 1)]
    pub rounds: usize,
    /// Gravity ψ of the agents' CartPole-v0, drawn uniformly per agent (Section 4).
    #[config(default = "vec![9.7, 9.8, 9.9]")]
    pub gravities: Vec<f64>,
    /// Stop after this many applied submissions (the paper: FST = ∞ past 90,000).
    #[config(default = 90_000)]
    pub max_submissions: u64,
    /// Target score Θ (eq. 26).
    #[config(default = 195.0)]
    pub target_score: f64,
    /// Window m of the average score μ_n (eq. 25).
    #[config(default = 10)]
    pub score_window: usize,
    /// Stop at the first success (FST is all that Tables 1–3 need).
    #[config(default = true)]
    pub stop_at_success: bool,
    /// Where each agent's mechanism noise comes from: a generator seeded from the agent's
    /// seed, or the operating system's CSPRNG ([`NoiseMode`]).
    #[config(default = "NoiseMode::Seeded")]
    pub noise_rng: NoiseMode,
}

impl PgcConfig {
    /// Section 4: Laplace with C = 0.01 and |B| = 1, PRS with C = 1 and |B| = 100 (the
    /// buffer sizes chosen in Section 4.1); the non-private path uses |B| = 1.
    pub fn paper(mechanism: GradientMechanismConfig) -> Self {
        let buffer = match mechanism {
            GradientMechanismConfig::Prs { .. } => 100,
            _ => 1,
        };
        Self::new()
            .with_a3c(A3cConfig::pgc_paper().with_buffer_size(buffer))
            .with_mechanism(mechanism)
    }

    /// Checks every parameter; the error names the first one out of range.
    pub fn validate(&self) -> Result<(), PgcError> {
        self.a3c.validate()?;
        let invalid = |name, value: String, expected| {
            Err(PgcError::InvalidParameter {
                name,
                value,
                expected,
            })
        };
        if self.rounds == 0 {
            return invalid("rounds", "0".into(), ">= 1");
        }
        if self.gravities.is_empty() || self.gravities.iter().any(|g| !(g.is_finite() && *g > 0.0))
        {
            return invalid(
                "gravities",
                format!("{:?}", self.gravities),
                "a non-empty list of finite values > 0",
            );
        }
        if self.max_submissions == 0 {
            return invalid("max_submissions", "0".into(), ">= 1");
        }
        if self.score_window == 0 {
            return invalid("score_window", "0".into(), ">= 1");
        }
        if !self.target_score.is_finite() {
            return invalid(
                "target_score",
                self.target_score.to_string(),
                "a finite score",
            );
        }
        // The mechanism's own checks (C > 0, σ > 0); ε is valid by construction.
        self.mechanism.build(1, self.rounds)?;
        Ok(())
    }

    /// Agent `ψ`'s private environment: CartPole-v0 (200 steps) with gravity ψ.
    pub fn environment(gravity: f64) -> Result<Box<dyn Env>, PgcError> {
        Ok(Box::new(
            CartPoleConfig::v0()
                .with_gravity(gravity)
                .build()
                .map_err(AgentError::from)?,
        ))
    }

    /// The network configuration for observations of width `obs_len` and `num_actions`.
    pub fn network(&self, obs_len: usize, num_actions: usize) -> ActorCriticConfig {
        ActorCriticConfig::new(obs_len, num_actions)
            .with_hidden(self.a3c.hidden.clone())
            .with_activation(self.a3c.activation)
            .with_bias(self.a3c.bias)
    }

    fn dims(&self) -> Result<(usize, usize), PgcError> {
        let env = Self::environment(self.gravities[0])?;
        Ok(discrete_env_dims(&*env)?)
    }
}

// ---------------------------------------------------------------------------------------------
// Messages
// ---------------------------------------------------------------------------------------------

/// θ as the aggregator publishes it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Parameters {
    /// Number of updates (eq. 22) applied so far.
    pub version: u64,
    /// Submissions received so far (applied or buffered): the n of the exploration schedule.
    pub submissions: u64,
    /// θ, flattened in the network's parameter order (that of [`GradientRecord::flatten`]).
    pub values: Vec<f32>,
}

/// One noisy gradient g̃_n with what the aggregator may know about it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Submission {
    /// The submitting process or thread (unique within a run).
    pub source: String,
    /// 1, 2, … per source: with `source`, the id that makes applying idempotent.
    pub seq: u64,
    /// Version of the θ′ the gradient was computed at.
    pub version: u64,
    /// The episode's score ζ (steps the pole stayed up); the paper treats scores as public.
    pub score: f64,
    /// g̃ = Q(g), length d.
    pub gradient: Vec<f32>,
}

/// A submission as received, with the transport's tag for acknowledging it.
#[derive(Debug, Clone, PartialEq)]
pub struct Delivery {
    /// Transport-specific id (a Redis stream id).
    pub tag: String,
    /// The submission.
    pub submission: Submission,
}

// ---------------------------------------------------------------------------------------------
// Parameters ↔ flat vector
// ---------------------------------------------------------------------------------------------

/// θ of `module` flattened in visiting order (the order of [`GradientRecord::flatten`]).
pub fn flatten_parameters<B: Backend, M: Module<B>>(module: &M) -> Vec<f32> {
    struct Collector(Vec<f32>);
    impl<B: Backend> ModuleVisitor<B> for Collector {
        fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<B, D>>) {
            self.0.extend(
                param
                    .val()
                    .into_data()
                    .convert::<f32>()
                    .into_vec::<f32>()
                    .expect("float parameter data"),
            );
        }
    }
    let mut collector = Collector(Vec::new());
    module.visit(&mut collector);
    collector.0
}

/// `module` with its parameters replaced by `values` (the inverse of [`flatten_parameters`]).
pub fn load_flat_parameters<B: Backend, M: Module<B>>(
    module: M,
    values: &[f32],
) -> Result<M, RecordError> {
    let expected = module.num_params();
    if values.len() != expected {
        return Err(RecordError::LengthMismatch {
            expected,
            got: values.len(),
        });
    }
    struct Loader<'a> {
        values: &'a [f32],
        offset: usize,
    }
    impl<B: Backend> ModuleMapper<B> for Loader<'_> {
        fn map_float<const D: usize>(&mut self, param: Param<Tensor<B, D>>) -> Param<Tensor<B, D>> {
            let values = self.values;
            let start = self.offset;
            let shape = param.shape();
            self.offset += shape.num_elements();
            param.map(|tensor| {
                let device = tensor.device();
                let data = TensorData::new(
                    values[start..start + shape.num_elements()].to_vec(),
                    shape.clone(),
                );
                // A no-op on a backend without autodiff.
                Tensor::from_data(data.convert::<B::FloatElem>(), &device).require_grad()
            })
        }
    }
    Ok(module.map(&mut Loader { values, offset: 0 }))
}

/// θ₀ of a run: the network initialised from `seed`, flattened.
pub fn initial_parameters<B: Backend>(
    config: &PgcConfig,
    seed: u64,
    device: &B::Device,
) -> Result<Vec<f32>, PgcError> {
    let (obs_len, num_actions) = config.dims()?;
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let model: ActorCritic<B> = config.network(obs_len, num_actions).init(device, &mut rng);
    Ok(flatten_parameters(&model))
}

// ---------------------------------------------------------------------------------------------
// Agent
// ---------------------------------------------------------------------------------------------

/// One agent identity: its private environment and the submissions it has left.
struct Identity {
    env: RolloutEnv,
    rounds_left: usize,
}

/// The local side of Algorithm 1: copy θ, play an episode in a private environment, compute
/// g_n (eq. 15–18), release g̃_n = Q(g_n).
///
/// A `PgcAgent` stands for a stream of agents: every `rounds` submissions it becomes a new
/// agent with a fresh CartPole whose gravity ψ is drawn uniformly from the config's list.
pub struct PgcAgent<B: AutodiffBackend> {
    config: PgcConfig,
    mechanism: Box<dyn GradientMechanism>,
    template: ActorCritic<B>,
    device: B::Device,
    rng: ChaCha8Rng,
    /// The mechanism's randomness, apart from the episodes' so that a secure source leaves
    /// play reproducible.
    noise_rng: MechanismRng,
    source: String,
    seq: u64,
    identity: Option<Identity>,
}

impl<B: AutodiffBackend> PgcAgent<B> {
    /// An agent named `source` (unique within the run) drawing its randomness from `seed`
    /// (the mechanism's from the operating system instead under `NoiseMode::Secure`).
    pub fn new(
        config: &PgcConfig,
        source: impl Into<String>,
        seed: u64,
        device: &B::Device,
    ) -> Result<Self, PgcError> {
        config.validate()?;
        let (obs_len, num_actions) = config.dims()?;
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let template = config.network(obs_len, num_actions).init(device, &mut rng);
        let mechanism = config
            .mechanism
            .build(template.num_params(), config.rounds)?;
        let noise_rng = config.noise_rng.rng(rng.random())?;
        Ok(Self {
            config: config.clone(),
            mechanism,
            template,
            device: device.clone(),
            rng,
            noise_rng,
            source: source.into(),
            seq: 0,
            identity: None,
        })
    }

    /// The mechanism this agent applies.
    pub fn mechanism(&self) -> &dyn GradientMechanism {
        self.mechanism.as_ref()
    }

    /// Submissions made so far.
    pub fn submitted(&self) -> u64 {
        self.seq
    }

    /// θ′ ← θ, as a network.
    pub fn local_model(&self, parameters: &Parameters) -> Result<ActorCritic<B>, PgcError> {
        Ok(load_flat_parameters(
            self.template.clone(),
            &parameters.values,
        )?)
    }

    /// θ′ ← θ and one episode of the current agent identity at θ′ (Algorithm 1's inner
    /// loop); a new identity, with gravity ψ drawn uniformly, every `rounds` episodes.
    pub fn play(
        &mut self,
        parameters: &Parameters,
    ) -> Result<(ActorCritic<B>, A3cEpisode), PgcError> {
        let model = self.local_model(parameters)?;
        let mut identity = match self.identity.take() {
            Some(identity) if identity.rounds_left > 0 => identity,
            _ => {
                let gravity =
                    self.config.gravities[self.rng.random_range(0..self.config.gravities.len())];
                Identity {
                    env: RolloutEnv::new(PgcConfig::environment(gravity)?, self.rng.random())?,
                    rounds_left: self.config.rounds,
                }
            }
        };
        let (policy, value) = model.host_copies();
        let (episode, _) = play_episode(
            &mut identity.env,
            &policy,
            &value,
            self.config.a3c.exploration,
            parameters.submissions,
            &mut self.rng,
        )?;
        identity.rounds_left -= 1;
        self.identity = Some(identity);
        Ok((model, episode))
    }

    /// g_n = ∂L̂_n(θ′; H_n, λ)/∂θ′ (eq. 15–18, the loss of [`crate::A3c`]).
    pub fn gradient_of(
        &self,
        model: &ActorCritic<B>,
        episode: &A3cEpisode,
    ) -> Result<GradientRecord, PgcError> {
        autodiff::exclusive(|| {
            let (loss, terms) = episode_loss(model, episode, &self.config.a3c, &self.device)?;
            if let Some(&value) = terms.iter().find(|v| !v.is_finite()) {
                return Err(AgentError::NonFinite {
                    what: "PGC episode loss",
                    value,
                    update: self.seq,
                }
                .into());
            }
            Ok(GradientRecord::from_grads(
                model,
                &autodiff::backward(&loss),
            ))
        })
    }

    /// g̃_n = Q(g_n), packed as the next submission of this agent.
    pub fn release(
        &mut self,
        gradient: &GradientRecord,
        parameters: &Parameters,
        score: f64,
    ) -> Result<Submission, PgcError> {
        let noisy = self
            .mechanism
            .release(&gradient.flatten(), &mut self.noise_rng)?;
        self.seq += 1;
        Ok(Submission {
            source: self.source.clone(),
            seq: self.seq,
            version: parameters.version,
            score,
            gradient: noisy,
        })
    }

    /// One submission: an episode at θ′ = `parameters`, its gradient, Q applied.
    pub fn submission(&mut self, parameters: &Parameters) -> Result<Submission, PgcError> {
        let (model, episode) = self.play(parameters)?;
        let gradient = self.gradient_of(&model, &episode)?;
        self.release(&gradient, parameters, episode.rewards.len() as f64)
    }
}

/// Waits until the transport has θ (polling every 5 ms), or it is closed (`None`).
pub(crate) fn wait_for_parameters(
    transport: &dyn Transport,
    timeout: Duration,
) -> Result<Option<Parameters>, PgcError> {
    let start = Instant::now();
    loop {
        if transport.is_closed()? {
            return Ok(None);
        }
        if let Some(parameters) = transport.parameters()? {
            return Ok(Some(parameters));
        }
        if start.elapsed() > timeout {
            return Err(PgcError::NoParameters(timeout));
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// An agent's loop: fetch θ, submit, until `count` submissions (if given), until the
/// aggregator closes the run, or until `stop` is set. Returns the number submitted.
pub fn run_agent<B: AutodiffBackend>(
    agent: &mut PgcAgent<B>,
    transport: &dyn Transport,
    count: Option<u64>,
    stop: &AtomicBool,
) -> Result<u64, PgcError> {
    let mut sent = 0;
    while count.is_none_or(|c| sent < c) && !stop.load(Ordering::Relaxed) {
        let Some(parameters) = wait_for_parameters(transport, Duration::from_secs(60))? else {
            break;
        };
        let submission = agent.submission(&parameters)?;
        transport.submit(&submission)?;
        sent += 1;
    }
    Ok(sent)
}

// ---------------------------------------------------------------------------------------------
// Aggregator
// ---------------------------------------------------------------------------------------------

/// What the aggregator checkpoints: θ and enough to apply idempotently.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AggregatorState {
    /// θ.
    pub theta: Vec<f32>,
    /// Updates applied (eq. 22).
    pub version: u64,
    /// Submissions applied.
    pub applied: u64,
    /// Deliveries skipped because their submission was already applied.
    pub duplicates: u64,
    /// Deliveries refused (wrong length, non-finite values).
    pub rejected: u64,
    /// Highest applied `seq` per source.
    pub high_water: BTreeMap<String, u64>,
    /// The last m scores, for μ_n.
    pub recent_scores: VecDeque<f64>,
    /// First success time (eq. 26), once reached.
    pub first_success: Option<u64>,
    /// Adam's moments when the aggregator steps θ with Adam instead of eq. 22's SGD.
    #[serde(default)]
    pub adam: FlatAdam,
}

/// One applied submission, for the per-submission metrics.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct AppliedSubmission {
    /// n: its 1-based position among applied submissions.
    pub n: u64,
    /// Score ζ_n.
    pub score: f64,
    /// μ_n over the last m scores (fewer before m have arrived).
    pub mean_score: f64,
    /// θ's version after the update that applied it.
    pub version: u64,
    /// Version of the θ′ it was computed at (staleness = version − this − 1).
    pub computed_at: u64,
}

/// The central side of Algorithm 1: buffer B, eq. 22, publication of θ.
pub struct Aggregator {
    lr: f64,
    optimizer: OptimizerKind,
    buffer_size: usize,
    score_window: usize,
    target_score: f64,
    state: AggregatorState,
    buffer: Vec<Delivery>,
    checkpoint: Option<PathBuf>,
}

impl Aggregator {
    /// A fresh aggregator with θ = `theta`.
    pub fn new(config: &PgcConfig, theta: Vec<f32>) -> Result<Self, PgcError> {
        config.validate()?;
        Ok(Self {
            lr: config.a3c.lr,
            optimizer: config.a3c.optimizer,
            buffer_size: config.a3c.buffer_size,
            score_window: config.score_window,
            target_score: config.target_score,
            state: AggregatorState {
                theta,
                version: 0,
                applied: 0,
                duplicates: 0,
                rejected: 0,
                high_water: BTreeMap::new(),
                recent_scores: VecDeque::new(),
                first_success: None,
                adam: FlatAdam::default(),
            },
            buffer: Vec::new(),
            checkpoint: None,
        })
    }

    /// Saves the state to `path` after every update (before acknowledging), and resumes from
    /// it if it exists.
    pub fn with_checkpoint(mut self, path: impl Into<PathBuf>) -> Result<Self, PgcError> {
        let path = path.into();
        if path.exists() {
            let state = read_state(&path)?;
            if state.theta.len() != self.state.theta.len() {
                return Err(PgcError::Checkpoint {
                    path,
                    message: format!(
                        "θ has {} values, the network {}",
                        state.theta.len(),
                        self.state.theta.len()
                    ),
                });
            }
            self.state = state;
        }
        self.checkpoint = Some(path);
        Ok(self)
    }

    /// The state (θ, counters).
    pub fn state(&self) -> &AggregatorState {
        &self.state
    }

    /// θ as published.
    pub fn parameters(&self) -> Parameters {
        Parameters {
            version: self.state.version,
            submissions: self.state.applied + self.buffer.len() as u64,
            values: self.state.theta.clone(),
        }
    }

    /// Receives up to `max` submissions (waiting at most `wait`), buffers them, applies eq. 22
    /// whenever |B| ≥ MAX_BUF, and publishes θ. Returns the submissions applied.
    pub fn poll(
        &mut self,
        transport: &dyn Transport,
        max: usize,
        wait: Duration,
    ) -> Result<Vec<AppliedSubmission>, PgcError> {
        let deliveries = transport.receive(max, wait)?;
        let mut applied = Vec::new();
        let mut skipped = Vec::new();
        let received = !deliveries.is_empty();
        for delivery in deliveries {
            if self.accept(&delivery) {
                self.buffer.push(delivery);
                if self.buffer.len() >= self.buffer_size {
                    applied.extend(self.apply(transport)?);
                }
            } else {
                skipped.push(delivery.tag);
            }
        }
        if !skipped.is_empty() {
            self.save()?;
            transport.acknowledge(&skipped)?;
        }
        if received {
            transport.publish(&self.parameters())?;
        }
        Ok(applied)
    }

    /// Whether a delivery goes into the buffer; counts duplicates and refusals.
    fn accept(&mut self, delivery: &Delivery) -> bool {
        let s = &delivery.submission;
        let applied_through = self.state.high_water.get(&s.source).copied().unwrap_or(0);
        let buffered = self
            .buffer
            .iter()
            .any(|d| d.submission.source == s.source && d.submission.seq == s.seq);
        if s.seq <= applied_through || buffered {
            self.state.duplicates += 1;
            return false;
        }
        if s.gradient.len() != self.state.theta.len()
            || s.gradient.iter().any(|v| !v.is_finite())
            || !s.score.is_finite()
        {
            self.state.rejected += 1;
            return false;
        }
        true
    }

    /// eq. 22: θ ← θ − η (1/|B|) Σ_{g̃ ∈ B} g̃ (or an Adam step on that mean, with
    /// `a3c.optimizer = Adam`); then saves and acknowledges the buffer.
    fn apply(&mut self, transport: &dyn Transport) -> Result<Vec<AppliedSubmission>, PgcError> {
        let buffer = std::mem::take(&mut self.buffer);
        let mut mean = vec![0.0f32; self.state.theta.len()];
        for d in &buffer {
            mean.iter_mut()
                .zip(&d.submission.gradient)
                .for_each(|(m, g)| *m += *g);
        }
        let scale = 1.0 / buffer.len() as f32;
        mean.iter_mut().for_each(|m| *m *= scale);
        match self.optimizer {
            OptimizerKind::Sgd => {
                let lr = self.lr as f32;
                for (theta, m) in self.state.theta.iter_mut().zip(&mean) {
                    *theta -= m * lr;
                }
            }
            // Post-processing of the noisy mean like eq. 22 (Section 3.1.1 lets the
            // aggregator use any gradient method), so no privacy is spent.
            OptimizerKind::Adam => self.state.adam.step(&mut self.state.theta, &mean, self.lr),
        }
        self.state.version += 1;
        let mut applied = Vec::with_capacity(buffer.len());
        for d in &buffer {
            let s = &d.submission;
            self.state.applied += 1;
            self.state.high_water.insert(s.source.clone(), s.seq);
            self.state.recent_scores.push_back(s.score);
            while self.state.recent_scores.len() > self.score_window {
                self.state.recent_scores.pop_front();
            }
            let mean_score = self.state.recent_scores.iter().sum::<f64>()
                / self.state.recent_scores.len() as f64;
            // eq. 26 over full windows.
            if self.state.first_success.is_none()
                && self.state.recent_scores.len() == self.score_window
                && mean_score >= self.target_score
            {
                self.state.first_success = Some(self.state.applied);
            }
            applied.push(AppliedSubmission {
                n: self.state.applied,
                score: s.score,
                mean_score,
                version: self.state.version,
                computed_at: s.version,
            });
        }
        self.save()?;
        let tags: Vec<String> = buffer.into_iter().map(|d| d.tag).collect();
        transport.acknowledge(&tags)?;
        Ok(applied)
    }

    fn save(&self) -> Result<(), PgcError> {
        let Some(path) = &self.checkpoint else {
            return Ok(());
        };
        let error = |message: String| PgcError::Checkpoint {
            path: path.clone(),
            message,
        };
        let tmp = path.with_extension("tmp");
        let json = serde_json::to_vec(&self.state).map_err(|e| error(e.to_string()))?;
        std::fs::write(&tmp, json).map_err(|e| error(e.to_string()))?;
        std::fs::rename(&tmp, path).map_err(|e| error(e.to_string()))
    }
}

/// Reads an aggregator checkpoint.
pub(crate) fn read_state(path: &Path) -> Result<AggregatorState, PgcError> {
    let error = |message: String| PgcError::Checkpoint {
        path: path.to_path_buf(),
        message,
    };
    let bytes = std::fs::read(path).map_err(|e| error(e.to_string()))?;
    serde_json::from_slice(&bytes).map_err(|e| error(e.to_string()))
}

// ---------------------------------------------------------------------------------------------
// One run
// ---------------------------------------------------------------------------------------------

/// The result of [`run_pgc`].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PgcOutcome {
    /// First success time (eq. 26), `None` for ∞.
    pub first_success: Option<u64>,
    /// Submissions applied.
    pub applied: u64,
    /// Submissions sent by the agents (some may be left unapplied at the stop).
    pub sent: u64,
    /// Updates of θ.
    pub updates: u64,
    /// Wall-clock seconds.
    pub wall_s: f64,
}

/// A whole PGC-A3C run in one process: `config.a3c.workers` agent threads submit through
/// `transport`, the calling thread aggregates until `max_submissions` are applied (or the first
/// success, with `stop_at_success`). `on_applied` sees every applied submission in order.
pub fn run_pgc<B: AutodiffBackend>(
    config: &PgcConfig,
    transport: &dyn Transport,
    seed: u64,
    device: &B::Device,
    mut on_applied: impl FnMut(&AppliedSubmission),
) -> Result<PgcOutcome, PgcError> {
    config.validate()?;
    let start = Instant::now();
    let mut seeds = ChaCha8Rng::seed_from_u64(seed);
    let theta = initial_parameters::<B>(config, seeds.random(), device)?;
    let mut aggregator = Aggregator::new(config, theta)?;
    transport.publish(&aggregator.parameters())?;
    let mut agents = (0..config.a3c.workers)
        .map(|i| PgcAgent::<B>::new(config, format!("agent-{i}"), seeds.random(), device))
        .collect::<Result<Vec<_>, _>>()?;
    let stop = AtomicBool::new(false);
    let (result, sent) = std::thread::scope(|scope| {
        let handles: Vec<_> = agents
            .iter_mut()
            .map(|agent| {
                let stop = &stop;
                scope.spawn(move || run_agent(agent, transport, None, stop))
            })
            .collect();
        let result = (|| -> Result<(), PgcError> {
            loop {
                let state = aggregator.state();
                if state.applied >= config.max_submissions
                    || (config.stop_at_success && state.first_success.is_some())
                {
                    return Ok(());
                }
                if handles.iter().all(|h| h.is_finished()) {
                    return Ok(());
                }
                let room = ((config.max_submissions - state.applied) as usize).min(256);
                for applied in aggregator.poll(transport, room, Duration::from_millis(20))? {
                    on_applied(&applied);
                }
            }
        })();
        stop.store(true, Ordering::Relaxed);
        let _ = transport.close();
        let mut sent = 0;
        let mut agent_error = None;
        for handle in handles {
            match handle.join().expect("a PGC agent thread panicked") {
                Ok(n) => sent += n,
                Err(e) => {
                    agent_error.get_or_insert(e);
                }
            }
        }
        (result.and(agent_error.map_or(Ok(()), Err)), sent)
    });
    result?;
    let state = aggregator.state();
    Ok(PgcOutcome {
        first_success: state.first_success,
        applied: state.applied,
        sent,
        updates: state.version,
        wall_s: start.elapsed().as_secs_f64(),
    })
}

// ---------------------------------------------------------------------------------------------
// Metrics (Section 4)
// ---------------------------------------------------------------------------------------------

/// success_ratio(n) = |{k : FST_k ≤ n}| / K (eq. 27); `None` entries are FST = ∞.
pub fn success_ratio(first_success_times: &[Option<u64>], n: u64) -> f64 {
    if first_success_times.is_empty() {
        return 0.0;
    }
    let successes = first_success_times
        .iter()
        .filter(|f| f.is_some_and(|f| f <= n))
        .count();
    successes as f64 / first_success_times.len() as f64
}

/// Area under the success-ratio curve over n ∈ [0, `horizon`] (Fig. 3): the curve is a step
/// function, so the area is (1/K) Σ_k max(0, horizon − FST_k).
pub fn success_ratio_area(first_success_times: &[Option<u64>], horizon: u64) -> f64 {
    if first_success_times.is_empty() {
        return 0.0;
    }
    let total: u64 = first_success_times
        .iter()
        .flatten()
        .map(|&f| horizon.saturating_sub(f))
        .sum();
    total as f64 / first_success_times.len() as f64
}

/// Table 3: the area of `trials` over that of the non-private `baseline`; `None` when the
/// baseline never succeeded (area 0), where the ratio is undefined.
pub fn relative_area(
    trials: &[Option<u64>],
    baseline: &[Option<u64>],
    horizon: u64,
) -> Option<f64> {
    let base = success_ratio_area(baseline, horizon);
    (base > 0.0).then(|| success_ratio_area(trials, horizon) / base)
}

/// Table 1: the median FST, with FST = ∞ for failures (`f64::INFINITY` when the middle
/// element is a failure; the mean of the two middle elements for an even count).
pub fn median_first_success(first_success_times: &[Option<u64>]) -> Option<f64> {
    if first_success_times.is_empty() {
        return None;
    }
    let mut values: Vec<f64> = first_success_times
        .iter()
        .map(|f| f.map_or(f64::INFINITY, |f| f as f64))
        .collect();
    values.sort_by(f64::total_cmp);
    let k = values.len();
    Some(if k % 2 == 1 {
        values[k / 2]
    } else {
        0.5 * (values[k / 2 - 1] + values[k / 2])
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn success_metrics_by_hand() {
        let fst = [Some(10), None, Some(30), Some(20)];
        assert_eq!(success_ratio(&fst, 9), 0.0);
        assert_eq!(success_ratio(&fst, 20), 0.5);
        assert_eq!(success_ratio(&fst, 1000), 0.75);
        // (100 − 10) + (100 − 30) + (100 − 20) = 240, over K = 4.
        assert_eq!(success_ratio_area(&fst, 100), 60.0);
        let baseline = [Some(0), Some(0)];
        assert!((relative_area(&fst, &baseline, 100).unwrap() - 0.6).abs() < 1e-12);
        assert_eq!(relative_area(&fst, &[None], 100), None);
        // sorted: 10, 20, 30, ∞ → (20 + 30) / 2
        assert_eq!(median_first_success(&fst), Some(25.0));
        assert_eq!(
            median_first_success(&[None, None, Some(3)]),
            Some(f64::INFINITY)
        );
        assert_eq!(median_first_success(&[]), None);
    }
}

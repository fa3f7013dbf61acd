//! Private training of REINFORCE and DQN as in the DP-RL slides (paper 004, Doulazmi &
//! Odonnat): DP-SGD on the gradients (central DP, "CDP – add noise on gradients") and Gaussian
//! noise on the observed states (local DP, "LDP – noise calibration"), with the privacy each
//! DP-SGD run actually spends, from the RDP accountant, which the slides leave as further work.
//!
//! Both DP agents run on the [`PrivacyEngine`]: its Poisson sampling, clipping, noise,
//! adaptive clipping ([`AdaptiveClipping`]) and exact accounting ([`ReleaseSchedule`]) are the
//! ones every other DP-SGD user of privrl gets.
//!
//! - [`DpSgdReinforce`]: the gradients of L episodes (L = 1: the slides' "estimate gradient
//!   with one episode"), each clipped to C in L2, summed, noised once with N(0, σ²C²I) and
//!   divided by L (Figure 7).
//! - [`DpSgdDqn`]: per-transition gradients of the TD loss (MSE or Huber,
//!   [`DqnConfig::td_loss`]) from the engine's traced fast path (the factored per-sample
//!   gradients of [`crate::per_sample`]), each clipped to C, summed, noised with
//!   N(0, σ²C²I) and divided by the expected batch size (Figure 7; the slides' "custom
//!   backpropagation").
//! - [`NoisyObservationEnv`]: an [`Env`] wrapper that adds N(0, (σ·IQR_j)²) to every
//!   observation dimension j before the agent sees it, so either agent trains under it
//!   unchanged.
//!
//! # The unit of privacy
//!
//! **REINFORCE: an episode is one record.** Neighbouring data differ in one whole episode.
//! Every episode is collected once, used in exactly one DP-SGD step (with the other L − 1
//! episodes of its batch) and then discarded, so each record enters exactly one release of the
//! Gaussian mechanism with sensitivity C and noise σC; later releases are computed from other
//! records and from earlier (already private) outputs, so by adaptive composition over
//! disjoint records the whole run is as private, per episode, as one release: ε of the
//! subsampled Gaussian with q = 1 and one step, from
//! [`RdpAccountant`](privrl_privacy::RdpAccountant). This protects one episode (e.g. one
//! user's trajectory), not a user who contributes many episodes: such a user
//! composes over their episodes. [`DpSgdReinforce::epsilon_if_every_step`] gives that worst
//! case (every step at q = 1, the sum of a step's L episodes moving by up to L·C).
//!
//! **DQN: a transition is one record.** The slides sample |B| = 128 transitions uniformly with
//! replacement; that sampling is not Poisson and a transition drawn twice doubles the
//! sensitivity, so the accountant's guarantee would not hold. [`DpSgdDqn`] therefore draws
//! each gradient step's batch by **Poisson sampling** over the replay buffer: each stored
//! transition enters independently with probability q_t = min(1, |B| / n_t), where n_t is the
//! buffer's size at step t (public: it is a function of the step count), so the expected batch
//! is |B| and the gradient is divided by |B|. A transition is exposed only while it is in the
//! buffer; composing the subsampled Gaussian over **every** gradient step of the run, at the
//! q_t of that step, bounds every transition's privacy loss (the accountant of Mironov, Talwar
//! & Zhang 2019, as in Opacus, for add/remove neighbours), each step at exactly its own q_t
//! ([`ReleaseSchedule`]).
//!
//! **Adjacency.** Every ε here is stated under an [`Adjacency`], add/remove by default (as in
//! Opacus), or substitution ([`DpSgdTrainingConfig::adjacency`]), whose per-step RDP is a
//! conservative bound, exact at q = 1 ([`privrl_privacy::adjacency`]). An ε is printed with its
//! unit and relation ([`PrivacyTally::label`]).
//!
//! **Resuming.** `save_checkpoint` writes the engine's state ([`EngineState`]: every release,
//! σ, δ, the adjacency, the current C and the generator's position) beside the agent's
//! checkpoint (and, for DQN, the replay buffer, whose size sets the q_t to come);
//! `load_checkpoint` continues them, so a resumed run's ε composes over every step since the
//! start, never only those since the resume, and the run goes on bit for bit as if never
//! interrupted.
//!
//! **LDP on observations has no ε.** The observation noise has no sensitivity bound (states
//! are unbounded), so it is a heuristic, as the slides' own "need for theoretical guarantees"
//! says; [`NoisyObservationEnv`] reports ε = ∞.
//!
//! Clipping is flat (the whole gradient vector to C), as in Abadi et al. The slides' REINFORCE
//! code clips each parameter tensor to C and adds σC noise to each, which has sensitivity
//! √P·C for P tensors: its σ corresponds to σ/√P here.

use std::path::Path;

use burn::config::Config;
use burn::module::Module;
use burn::tensor::backend::AutodiffBackend;
use burn::tensor::Tensor;
use privrl_envs::{Env, EnvError, Obs, Space, Step, StepInfo};
use privrl_privacy::{
    AccountantKind, Adjacency, GradientMechanism, GradientMechanismConfig, MechanismRng, NoiseMode,
    ObservationNoise, RandomnessSource,
};
use rand::Rng;
use serde::{Deserialize, Serialize};

use crate::agent::{checkpoint_error, load_json, save_json, Agent};
use crate::autodiff;
use crate::buffer::TransitionBatch;
use crate::dp_engine::{
    select_records, AdaptiveClipping, ClippedSum, EngineError, EngineState, GivenGradients,
    NoiseCalibration, ParamLayout, PerSampleGradients, PrivacyEngine, PrivacyEngineConfig,
    ReleaseSchedule, Tape, Traced,
};
use crate::dqn::{Dqn, DqnConfig, TdLoss};
use crate::error::{check_count, check_non_negative, check_positive, AgentError};
use crate::heads::{matrix, one_hot, q_of_actions};
use crate::nn::Mlp;
use crate::per_sample::traced_forward;
use crate::record::GradientRecord;
use crate::reinforce::Reinforce;

// ---------------------------------------------------------------------------------------------
// Config
// ---------------------------------------------------------------------------------------------

/// DP-SGD parameters of a private training run (paper 004, Figure 7).
#[derive(Config, Debug)]
pub struct DpSgdTrainingConfig {
    /// Noise multiplier σ ≥ 0: the noise on the clipped sum has standard deviation σ·C.
    /// σ = 0 clips without noise and has no (ε, δ) guarantee (ε = ∞).
    #[config(default = 1.0)]
    pub noise_multiplier: f64,
    /// L2 bound C > 0 on each record's gradient; `None` disables clipping, which is allowed
    /// only with σ = 0 (the noise is calibrated to C).
    #[config(default = "Some(1.0)")]
    pub clip: Option<f64>,
    /// δ of the reported (ε, δ), in (0, 1).
    #[config(default = 1e-5)]
    pub delta: f64,
    /// Which datasets are neighbours in the reported ε ([`Adjacency`]): add/remove, as in
    /// Opacus, or substitution, whose ε is larger.
    #[config(default = "Adjacency::AddRemove")]
    pub adjacency: Adjacency,
    /// DP-SGD REINFORCE: episodes L per DP-SGD step, each clipped to C on its own, the noise
    /// added once to their sum and the sum divided by L (ignored by DQN, whose batch is
    /// [`DqnConfig::batch_size`]). L = 1 is the slides' one episode per gradient.
    #[config(default = 1)]
    pub episodes_per_step: usize,
    /// Where the noise (and DQN's Poisson sampling) comes from: a generator seeded by the
    /// run, or the operating system's CSPRNG ([`NoiseMode`]).
    #[config(default = "NoiseMode::Seeded")]
    pub noise_rng: NoiseMode,
    /// Adaptive clipping ([`AdaptiveClipping`], Andrew et al. 2021): the target quantile γ of
    /// the per-record gradient norms that C tracks, starting from `clip`; `None`: C fixed.
    #[config(default = "None")]
    pub adaptive_clip_quantile: Option<f64>,
    /// Adaptive clipping: the geometric learning rate η_C of C.
    #[config(default = 0.2)]
    pub adaptive_clip_learning_rate: f64,
    /// Adaptive clipping: σ_b, the noise on the clipped count; `None`: the expected batch size
    /// / 20, as Andrew et al. suggest.
    #[config(default = "None")]
    pub adaptive_clip_count_noise: Option<f64>,
    /// Which accountant gives the reported ε ([`AccountantKind`]): RDP (default, as Opacus)
    /// or the tighter PLD. Training does not depend on it.
    #[config(default = "AccountantKind::Rdp")]
    pub accountant: AccountantKind,
}

impl DpSgdTrainingConfig {
    /// The gradient mechanism these parameters describe: DP-SGD for σ > 0 (which needs a
    /// clip C), clipping alone for σ = 0 with a C, and the raw gradient otherwise.
    pub fn mechanism(&self) -> Result<GradientMechanismConfig, AgentError> {
        check_non_negative("noise_multiplier", self.noise_multiplier)?;
        if let Some(clip) = self.clip {
            check_positive("clip", clip)?;
        }
        match (self.clip, self.noise_multiplier > 0.0) {
            (Some(clip), true) => Ok(GradientMechanismConfig::DpSgd {
                clip,
                noise_multiplier: self.noise_multiplier,
            }),
            (None, true) => Err(AgentError::InvalidParameter {
                name: "clip",
                value: f64::INFINITY,
                expected: "a bound C > 0 when noise_multiplier > 0",
            }),
            (Some(clip), false) => Ok(GradientMechanismConfig::Clip { clip }),
            (None, false) => Ok(GradientMechanismConfig::None),
        }
    }

    /// Validates the parameters (δ included) and builds the mechanism for gradients of
    /// `dimension` values: clip each record's gradient to C, sum, add N(0, σ²C²I), divide by
    /// the expected batch size L (Figure 7). Without noise and without clipping it returns
    /// the plain mean gradient, bit for bit.
    pub fn build(&self, dimension: usize) -> Result<Box<dyn GradientMechanism>, AgentError> {
        check_count("episodes_per_step", self.episodes_per_step)?;
        if !(self.delta > 0.0 && self.delta < 1.0) {
            return Err(AgentError::InvalidParameter {
                name: "delta",
                value: self.delta,
                expected: "in (0, 1)",
            });
        }
        Ok(self.mechanism()?.build(dimension, 1)?)
    }
}

impl DpSgdTrainingConfig {
    /// The adaptive clipping these parameters ask for, for batches of `expected_batch_size`
    /// records on average.
    pub fn adaptive_clipping(&self, expected_batch_size: f64) -> Option<AdaptiveClipping> {
        self.adaptive_clip_quantile.map(|quantile| {
            AdaptiveClipping::new(
                quantile,
                self.adaptive_clip_learning_rate,
                self.adaptive_clip_count_noise
                    .unwrap_or(expected_batch_size / 20.0),
            )
        })
    }

    /// The [`PrivacyEngine`] of a DP agent over `dimension` parameters: validates every
    /// parameter (named errors), then samples N records at rate q with these C, σ, δ,
    /// adjacency and adaptive clipping, from a generator seeded by `seed` (or the operating
    /// system's).
    fn engine(
        &self,
        dimension: usize,
        dataset_size: usize,
        sample_rate: f64,
        expected_batch_size: f64,
        seed: u64,
    ) -> Result<PrivacyEngine, AgentError> {
        self.build(dimension)?;
        let mut config = PrivacyEngineConfig::new(
            dataset_size,
            sample_rate,
            self.clip.unwrap_or(f64::INFINITY),
            NoiseCalibration::NoiseMultiplier(self.noise_multiplier),
        )
        .with_delta(self.delta)
        .with_adjacency(self.adjacency)
        .with_accountant(self.accountant);
        if let Some(adaptive) = self.adaptive_clipping(expected_batch_size) {
            config = config.with_adaptive_clipping(adaptive);
        }
        Ok(PrivacyEngine::new(config, self.noise_rng.source(seed))?)
    }
}

// ---------------------------------------------------------------------------------------------
// Accounting
// ---------------------------------------------------------------------------------------------

/// What one record of a private training run is: the unit that its ε protects (module docs).
/// An ε per transition and an ε per episode are not comparable numbers: an episode holds
/// hundreds of transitions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PrivacyUnit {
    /// One transition (s, a, r, s′) of the replay buffer: DP-SGD DQN.
    Transition,
    /// One whole episode: DP-SGD REINFORCE.
    Episode,
}

impl PrivacyUnit {
    /// `transition` or `episode`.
    pub fn name(self) -> &'static str {
        match self {
            PrivacyUnit::Transition => "transition",
            PrivacyUnit::Episode => "episode",
        }
    }
}

/// The subsampled-Gaussian releases of a run, each at the sampling rate it used
/// ([`ReleaseSchedule`], the [`PrivacyEngine`]'s exact accounting), and the (ε, δ) they add up
/// to under the RDP accountant, per [`PrivacyUnit`] and under an [`Adjacency`]. Plain data, so
/// a checkpoint holds it exactly and a resumed run continues it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PrivacyTally {
    unit: PrivacyUnit,
    noise_multiplier: f64,
    schedule: ReleaseSchedule,
}

impl PrivacyTally {
    /// An empty tally of records of `unit` for noise multiplier σ and δ, add/remove.
    pub fn new(unit: PrivacyUnit, noise_multiplier: f64, delta: f64) -> Self {
        Self {
            unit,
            noise_multiplier,
            schedule: ReleaseSchedule::new(Adjacency::AddRemove, delta),
        }
    }

    /// The releases of `schedule` (all at σ), as records of `unit`.
    pub fn from_schedule(
        unit: PrivacyUnit,
        noise_multiplier: f64,
        schedule: ReleaseSchedule,
    ) -> Self {
        Self {
            unit,
            noise_multiplier,
            schedule,
        }
    }

    /// The same tally with ε stated under `adjacency` (the releases do not depend on it).
    pub fn with_adjacency(mut self, adjacency: Adjacency) -> Self {
        self.schedule = self.schedule.with_adjacency(adjacency);
        self
    }

    /// The same tally with ε by `accountant` (the releases do not depend on it).
    pub fn with_accountant(mut self, accountant: AccountantKind) -> Self {
        self.schedule = self.schedule.with_accountant(accountant);
        self
    }

    /// Which accountant gives ε.
    pub fn accountant(&self) -> AccountantKind {
        self.schedule.accountant_kind()
    }

    /// Counts `count` releases at sampling rate `q` ∈ (0, 1], exactly.
    pub fn record(&mut self, q: f64, count: u64) {
        self.schedule.record(q, self.noise_multiplier, count);
    }

    /// The tally that [`DpSgdDqn`] reaches after `env_steps` environment steps with `config`,
    /// predicted from the schedule alone: the replay buffer holds n_t = min(t, capacity)
    /// transitions after step t (one per step, episodes or not), a gradient step runs at every
    /// t ≥ `learning_starts` that `train_frequency` divides (`gradient_steps` of them), and
    /// each samples at q_t = min(1, |B| / n_t). The sampling rates are public (functions of t),
    /// so this is the accounting of the run without running it: what a report that quotes the
    /// ε of a DP-SGD DQN run should use, rather than one constant q. Per transition,
    /// add/remove ([`PrivacyTally::with_adjacency`] for substitution).
    pub fn dqn_schedule(
        config: &DqnConfig,
        env_steps: u64,
        noise_multiplier: f64,
        delta: f64,
    ) -> Self {
        let mut tally = Self::new(PrivacyUnit::Transition, noise_multiplier, delta);
        let (start, every) = (
            config.learning_starts as u64,
            config.train_frequency.max(1) as u64,
        );
        for t in start.max(1)..=env_steps {
            if t % every == 0 {
                tally.record(dqn_sample_rate(config, t), config.gradient_steps as u64);
            }
        }
        tally
    }

    /// Gradient steps counted so far.
    pub fn steps(&self) -> u64 {
        self.schedule.steps()
    }

    /// The releases, exactly.
    pub fn schedule(&self) -> &ReleaseSchedule {
        &self.schedule
    }

    /// The record that ε protects.
    pub fn unit(&self) -> PrivacyUnit {
        self.unit
    }

    /// The neighbouring relation ε holds under.
    pub fn adjacency(&self) -> Adjacency {
        self.schedule.adjacency()
    }

    /// σ.
    pub fn noise_multiplier(&self) -> f64 {
        self.noise_multiplier
    }

    /// δ of the (ε, δ).
    pub fn delta(&self) -> f64 {
        self.schedule.delta()
    }

    /// What an ε of this tally means, to print beside it: `per episode, add/remove,
    /// δ = 1e-5, RDP accountant`.
    pub fn label(&self) -> String {
        format!(
            "per {}, {}, δ = {}, {}",
            self.unit.name(),
            self.adjacency().name(),
            self.delta(),
            self.accountant().name()
        )
    }

    /// ε at the tally's δ: every counted release, composed under the tally's adjacency by its
    /// accountant (∞ without noise; 0 before any release).
    pub fn epsilon(&self) -> Result<f64, AgentError> {
        if self.steps() == 0 {
            return Ok(0.0);
        }
        if self.noise_multiplier <= 0.0 {
            return Ok(f64::INFINITY);
        }
        Ok(self.schedule.epsilon()?)
    }

    /// ε if one record took part in every counted step at q = 1.
    pub fn epsilon_if_every_step(&self) -> Result<f64, AgentError> {
        let mut all = Self::new(self.unit, self.noise_multiplier, self.delta())
            .with_adjacency(self.adjacency())
            .with_accountant(self.accountant());
        all.record(1.0, self.steps());
        all.epsilon()
    }
}

/// q_t = min(1, |B| / n_t) of DQN's gradient step at environment step t, with
/// n_t = min(t, capacity) transitions in the replay buffer.
fn dqn_sample_rate(config: &DqnConfig, t: u64) -> f64 {
    let n = t.min(config.buffer_capacity as u64).max(1);
    (config.batch_size as f64 / n as f64).min(1.0)
}

/// What a DP-SGD agent saves beside its inner agent's checkpoint: its engine's state, so that
/// a resumed run continues the releases, C and the generator.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct PrivateState {
    engine: EngineState,
}

/// The file it lives in.
const PRIVATE_STATE: &str = "dp_sgd.json";

impl PrivateState {
    fn save(engine: &PrivacyEngine, dir: &Path) -> Result<(), AgentError> {
        let state = Self {
            engine: engine.state(),
        };
        save_json(dir, PRIVATE_STATE, &state)
    }

    /// Reads the state into `engine`, which refuses one of another σ, δ, adjacency or
    /// accountant: a
    /// tally composed at another σ or stated under another relation would be continued under
    /// the wrong parameters.
    fn load(engine: &mut PrivacyEngine, dir: &Path) -> Result<(), AgentError> {
        let path = dir.join(PRIVATE_STATE);
        let state: Self = load_json(dir, PRIVATE_STATE)?;
        engine.restore(&state.engine).map_err(|e| {
            checkpoint_error(
                &path,
                format!(
                    "{e}: saved with σ = {} ({}, δ = {}, {}), the agent has σ = {} ({})",
                    state.engine.noise_multiplier,
                    state.engine.schedule.adjacency().name(),
                    state.engine.schedule.delta(),
                    state.engine.schedule.accountant_kind().name(),
                    engine.noise_multiplier(),
                    engine.label()
                ),
            )
        })
    }
}

// ---------------------------------------------------------------------------------------------
// DP-SGD REINFORCE
// ---------------------------------------------------------------------------------------------

/// REINFORCE whose gradient over L episodes is a DP-SGD release before every Adam step (the
/// slides' "REINFORCE – add noise on gradients", with flat clipping; L = 1 in the slides).
///
/// Each step plays L fresh episodes with the current policy, clips each episode's gradient to
/// C, sums them, adds N(0, σ²C²I) once and divides by L (a public constant, not a count that
/// depends on the data). No sampling takes place: the episodes are partitioned into disjoint
/// batches, each used by exactly one release and then discarded, so one episode's privacy is
/// that of one Gaussian release with sensitivity C (add/remove; 2C for substitution), the
/// subsampled Gaussian at q = 1 and one step, whatever L and however many steps. Batching L
/// episodes keeps that ε and divides the noise on the mean gradient by L. (Amplification by
/// subsampling would need a fixed set of episodes sampled at random, which on-policy
/// REINFORCE, whose episodes must come from the current policy, does not have.)
pub struct DpSgdReinforce<B: AutodiffBackend> {
    agent: Reinforce<B>,
    /// Every DP-SGD step: all L episodes of the step (q = 1, N = L).
    engine: PrivacyEngine,
    episodes_per_step: usize,
}

impl<B: AutodiffBackend> DpSgdReinforce<B> {
    /// Wraps `agent`; the noise is drawn from its own generator, seeded by `noise_seed` or the
    /// operating system's (`config.noise_rng`).
    pub fn new(
        agent: Reinforce<B>,
        config: &DpSgdTrainingConfig,
        noise_seed: u64,
    ) -> Result<Self, AgentError> {
        check_count("episodes_per_step", config.episodes_per_step)?;
        let episodes = config.episodes_per_step;
        let engine = config.engine(
            agent.policy().num_params(),
            episodes,
            1.0,
            episodes as f64,
            noise_seed,
        )?;
        Ok(Self {
            agent,
            engine,
            episodes_per_step: episodes,
        })
    }

    /// The wrapped agent.
    pub fn agent(&self) -> &Reinforce<B> {
        &self.agent
    }

    /// The engine that clips, noises and accounts every step.
    pub fn engine(&self) -> &PrivacyEngine {
        &self.engine
    }

    /// Episodes L per DP-SGD step.
    pub fn episodes_per_step(&self) -> usize {
        self.episodes_per_step
    }

    /// Plays L episodes and takes one Adam step on their DP-SGD gradient (type docs); returns
    /// the mean of their returns.
    pub fn train_step(&mut self) -> Result<f64, AgentError> {
        // The episodes are played on host copies; gradients and step open their own sections.
        let mut per_episode = Vec::with_capacity(self.episodes_per_step);
        let mut total_return = 0.0;
        let layout = autodiff::exclusive(|| ParamLayout::of(self.agent.policy()));
        for _ in 0..self.episodes_per_step {
            let batch = self.agent.collect_episode()?;
            let gradient = self.agent.gradient(&batch)?;
            per_episode.push(layout_order(&layout, &gradient)?);
            total_return += batch.rewards.iter().map(|&r| f64::from(r)).sum::<f64>();
        }
        // Every episode of the step (q = 1): the batch is the partition's next block.
        let episodes = self.engine.sample()?;
        let released = self.engine.private_step(
            self.agent.policy(),
            &episodes,
            &GivenGradients(per_episode),
        )?;
        self.agent.apply_gradient(&released.gradient)?;
        Ok(total_return / self.episodes_per_step as f64)
    }

    /// [`DpSgdReinforce::train_step`] with L = 1, the slides' one episode per gradient;
    /// returns the episode's return. With L > 1, one step of L episodes.
    pub fn train_episode(&mut self) -> Result<f64, AgentError> {
        self.train_step()
    }

    /// The releases, as the accountant sees them: each episode is a record released once, so
    /// a record's privacy is one release at q = 1 (type docs).
    pub fn tally(&self) -> PrivacyTally {
        let mut tally = PrivacyTally::new(
            PrivacyUnit::Episode,
            self.engine.noise_multiplier(),
            self.engine.config().delta,
        )
        .with_adjacency(self.engine.config().adjacency)
        .with_accountant(self.engine.config().accountant);
        if self.engine.steps() > 0 {
            tally.record(1.0, 1);
        }
        tally
    }

    /// ε per episode: one Gaussian release at q = 1 (∞ without noise, 0 before training).
    pub fn epsilon(&self) -> Result<f64, AgentError> {
        self.tally().epsilon()
    }

    /// ε per user if one user contributed every episode: every step at q = 1, where a step's
    /// L episodes all come from that user, so its sum moves by up to L·C: noise multiplier
    /// σ/L per step (exact for the Gaussian mechanism; L = 1 gives σ).
    pub fn epsilon_if_every_step(&self) -> Result<f64, AgentError> {
        let mut user = PrivacyTally::new(
            PrivacyUnit::Episode,
            self.engine.noise_multiplier() / self.episodes_per_step as f64,
            self.engine.config().delta,
        )
        .with_adjacency(self.engine.config().adjacency)
        .with_accountant(self.engine.config().accountant);
        user.record(1.0, self.engine.steps());
        user.epsilon()
    }

    /// Every DP-SGD step so far (each at q = 1), as checkpointed.
    pub fn steps(&self) -> PrivacyTally {
        PrivacyTally::from_schedule(
            PrivacyUnit::Episode,
            self.engine.noise_multiplier(),
            self.engine.schedule().clone(),
        )
    }

    /// Writes the agent's checkpoint and, beside it, the engine's state (`dp_sgd.json`).
    pub fn save_checkpoint(&self, dir: &Path) -> Result<(), AgentError> {
        self.agent.save_checkpoint(dir)?;
        PrivateState::save(&self.engine, dir)
    }

    /// Restores what [`DpSgdReinforce::save_checkpoint`] wrote: the releases continue from the
    /// checkpoint's, never from zero. Fails if the checkpoint was written with another σ, δ,
    /// adjacency or accountant.
    pub fn load_checkpoint(&mut self, dir: &Path) -> Result<(), AgentError> {
        PrivateState::load(&mut self.engine, dir)?;
        self.agent.load_checkpoint(dir)
    }
}

/// A gradient record's values in `layout`'s parameter order (what the engine's rows are).
fn layout_order(layout: &ParamLayout, record: &GradientRecord) -> Result<Vec<f32>, AgentError> {
    let mut flat = Vec::with_capacity(layout.num_values());
    for entry in layout.entries() {
        let param = record.params.iter().find(|p| p.name == entry.name).ok_or(
            AgentError::ShapeMismatch {
                what: "gradient record parameters",
                expected: layout.entries().len(),
                got: record.params.len(),
            },
        )?;
        if param.values.len() != entry.len() {
            return Err(AgentError::ShapeMismatch {
                what: "gradient record parameter",
                expected: entry.len(),
                got: param.values.len(),
            });
        }
        flat.extend_from_slice(&param.values);
    }
    Ok(flat)
}

// ---------------------------------------------------------------------------------------------
// DP-SGD DQN
// ---------------------------------------------------------------------------------------------

/// DQN whose gradient steps are DP-SGD steps of a [`PrivacyEngine`] on Poisson-sampled replay
/// transitions (module docs); acting, replay and target updates are [`Dqn`]'s own.
pub struct DpSgdDqn<B: AutodiffBackend> {
    agent: Dqn<B>,
    engine: PrivacyEngine,
}

impl<B: AutodiffBackend> DpSgdDqn<B> {
    /// Wraps `agent`; sampling and noise are drawn from a generator seeded by `noise_seed`, or
    /// from the operating system's (`config.noise_rng`).
    pub fn new(
        agent: Dqn<B>,
        config: &DpSgdTrainingConfig,
        noise_seed: u64,
    ) -> Result<Self, AgentError> {
        let batch = agent.config().batch_size;
        // N and q are set before every step, from the buffer's size.
        let engine = config.engine(
            agent.q_network().num_params(),
            1,
            1.0,
            batch as f64,
            noise_seed,
        )?;
        Ok(Self { agent, engine })
    }

    /// The wrapped agent.
    pub fn agent(&self) -> &Dqn<B> {
        &self.agent
    }

    /// The engine that samples, clips, noises and accounts every gradient step.
    pub fn engine(&self) -> &PrivacyEngine {
        &self.engine
    }

    /// The releases so far, per transition.
    pub fn tally(&self) -> PrivacyTally {
        PrivacyTally::from_schedule(
            PrivacyUnit::Transition,
            self.engine.noise_multiplier(),
            self.engine.schedule().clone(),
        )
    }

    /// ε spent so far, per transition (module docs).
    pub fn epsilon(&self) -> Result<f64, AgentError> {
        if self.engine.noise_multiplier() <= 0.0 && self.engine.steps() > 0 {
            return Ok(f64::INFINITY);
        }
        Ok(self.engine.epsilon()?)
    }

    /// One environment step of the DQN, whose gradient steps are DP-SGD steps on a
    /// Poisson sample with q_t = min(1, |B| / n_t), divided by the expected batch q_t·n_t.
    /// Returns the mean TD loss of the gradient steps, if any ran (NaN for an empty sample).
    pub fn step(&mut self) -> Result<Option<f64>, AgentError> {
        let batch_size = self.agent.config().batch_size as f64;
        let engine = &mut self.engine;
        let trained = self.agent.step_with(|dqn| {
            let n = dqn.replay().len().max(1);
            engine.set_sampling(n, (batch_size / n as f64).min(1.0))?;
            let batch = engine.sample()?;
            let transitions = dqn.replay().gather(&batch);
            // One section for the targets and the private gradient (the nested ones run
            // inline): each section entered costs a hand-off to its thread.
            let released = autodiff::exclusive(|| -> Result<_, AgentError> {
                let loss = TdPerSample::new(dqn, &transitions, batch)?;
                Ok(engine.private_step(dqn.q_network(), &loss.indices, &loss)?)
            })?;
            if !released.mean_loss.is_finite() && released.batch_size > 0 {
                return Err(AgentError::NonFinite {
                    what: "TD loss",
                    value: released.mean_loss,
                    update: dqn.updates(),
                });
            }
            dqn.apply_gradient(&released.gradient)?;
            Ok((released.mean_loss, f64::NAN))
        })?;
        Ok(trained.map(|(loss, _)| loss))
    }

    /// Steps until the current episode ends; returns its return.
    pub fn train_episode(&mut self) -> Result<f64, AgentError> {
        // Acting stays outside autodiff sections; each DP-SGD step opens its own.
        let episodes = self.agent.episode_log().episodes();
        while self.agent.episode_log().episodes() == episodes {
            self.step()?;
        }
        Ok(self
            .agent
            .episode_log()
            .returns
            .last()
            .copied()
            .unwrap_or(0.0))
    }

    /// Writes the agent's checkpoint and, beside it, the replay buffer (whose size sets the
    /// sampling rate q_t of the steps to come) and the engine's state (releases, C, generator).
    pub fn save_checkpoint(&self, dir: &Path) -> Result<(), AgentError> {
        self.agent.save_checkpoint(dir)?;
        self.agent.save_replay(dir)?;
        PrivateState::save(&self.engine, dir)
    }

    /// Restores what [`DpSgdDqn::save_checkpoint`] wrote: the releases continue from the
    /// checkpoint's, never from zero, and the replay buffer's size, hence every later q_t, is
    /// the uninterrupted run's. Fails if the checkpoint was written with another σ, δ,
    /// adjacency or accountant.
    pub fn load_checkpoint(&mut self, dir: &Path) -> Result<(), AgentError> {
        PrivateState::load(&mut self.engine, dir)?;
        self.agent.load_checkpoint(dir)?;
        self.agent.load_replay(dir)
    }
}

/// The per-transition TD losses ℓ(Q(s_i, a_i) − y_i) of a gathered batch (ℓ the agent's
/// [`TdLoss`]), as the engine's [`Traced`] fast path over the Q-network's layers. The records
/// are the batch's replay indices; the targets y are computed once, without autodiff.
struct TdPerSample<B: AutodiffBackend> {
    indices: Vec<usize>,
    /// Observations, one-hot actions and targets; `None` for an empty batch.
    data: Option<(Tensor<B, 2>, Tensor<B, 2>, Tensor<B, 1>)>,
    loss: TdLoss,
}

impl<B: AutodiffBackend> TdPerSample<B> {
    fn new(dqn: &Dqn<B>, batch: &TransitionBatch, indices: Vec<usize>) -> Result<Self, AgentError> {
        let q_network = dqn.q_network();
        if batch.obs_len != q_network.d_input() {
            return Err(AgentError::ShapeMismatch {
                what: "observation width",
                expected: q_network.d_input(),
                got: batch.obs_len,
            });
        }
        let device = dqn.device();
        let data = (!batch.is_empty()).then(|| {
            (
                matrix::<B>(&batch.obs, batch.obs_len, device),
                one_hot::<B>(&batch.actions, q_network.d_output(), device),
                autodiff::exclusive(|| Tensor::<B, 1>::from_inner(dqn.td_targets(batch))),
            )
        });
        Ok(Self {
            indices,
            data,
            loss: dqn.config().td_loss,
        })
    }

    /// The losses of the records `records` (a subset of the batch's indices).
    fn losses(&self, mlp: &Mlp<B>, records: &[usize], tape: &mut Tape<B>) -> Tensor<B, 1> {
        let (obs, actions, targets) = self
            .data
            .clone()
            .expect("the engine asks for no loss of an empty batch");
        let (obs, actions, targets) = if records == self.indices {
            (obs, actions, targets)
        } else {
            let positions: Vec<usize> = records
                .iter()
                .map(|r| {
                    self.indices
                        .binary_search(r)
                        .expect("the engine asks for records of the batch it was given")
                })
                .collect();
            (
                select_records(&obs, &positions),
                select_records(&actions, &positions),
                select_records(&targets, &positions),
            )
        };
        let q = traced_forward(mlp, obs, tape);
        self.loss
            .per_sample(q_of_actions(q, actions) - targets.detach())
    }
}

impl<B: AutodiffBackend> PerSampleGradients<B, Mlp<B>> for TdPerSample<B> {
    fn per_sample_gradients(
        &self,
        module: &Mlp<B>,
        batch: &[usize],
        layout: &ParamLayout,
    ) -> Result<Tensor<B::InnerBackend, 2>, EngineError> {
        Traced(|m: &Mlp<B>, r: &[usize], t: &mut Tape<B>| self.losses(m, r, t))
            .per_sample_gradients(module, batch, layout)
    }

    fn clipped_sum(
        &self,
        module: &Mlp<B>,
        batch: &[usize],
        layout: &ParamLayout,
        clip: f64,
    ) -> Result<ClippedSum, EngineError> {
        Traced(|m: &Mlp<B>, r: &[usize], t: &mut Tape<B>| self.losses(m, r, t))
            .clipped_sum(module, batch, layout, clip)
    }
}

/// The DP-SGD gradient of the TD loss (1/|B|) Σ_i ℓ(Q(s_i, a_i) − y_i) of `dqn` on `batch`
/// (Figure 7) under `mechanism`: per-transition gradients from the engine's traced fast path
/// (the path [`DpSgdDqn`] takes), each clipped to the mechanism's C, summed, released by the
/// mechanism (noise N(0, σ²C²I) for DP-SGD) and divided by `expected_batch_size`. An empty
/// batch releases pure noise. Returns the gradient and the batch's mean TD loss (NaN if
/// empty). No accounting: [`DpSgdDqn`] and the [`PrivacyEngine`] do that.
pub fn private_td_gradient<B: AutodiffBackend>(
    dqn: &Dqn<B>,
    batch: &TransitionBatch,
    mechanism: &dyn GradientMechanism,
    expected_batch_size: f64,
    rng: &mut impl Rng,
) -> Result<(GradientRecord, f64), AgentError> {
    let indices: Vec<usize> = (0..batch.len()).collect();
    let losses = TdPerSample::new(dqn, batch, indices.clone())?;
    let layout = autodiff::exclusive(|| ParamLayout::of(dqn.q_network()));
    let (sum, loss) = if batch.is_empty() {
        (vec![0.0; layout.num_values()], f64::NAN)
    } else {
        let clip = mechanism.record_clip().unwrap_or(f64::INFINITY);
        let clipped = losses.clipped_sum(dqn.q_network(), &indices, &layout, clip)?;
        (clipped.sum, clipped.loss / batch.len() as f64)
    };
    if !batch.is_empty() && !loss.is_finite() {
        return Err(AgentError::NonFinite {
            what: "TD loss",
            value: loss,
            update: dqn.updates(),
        });
    }
    let noisy = mechanism.release_clipped_sum(sum, expected_batch_size, rng)?;
    Ok((layout.record(&noisy)?, loss))
}

// ---------------------------------------------------------------------------------------------
// Local DP on observations
// ---------------------------------------------------------------------------------------------

/// An environment whose observations carry N(0, (σ·IQR_j)²) noise on every dimension j
/// (paper 004, "LDP – noise calibration"): the agent, its replay buffer and its gradients only
/// ever see the noisy states. Rewards, termination and the physical state are untouched.
pub struct NoisyObservationEnv {
    inner: Box<dyn Env>,
    noise: ObservationNoise,
    rng: MechanismRng,
}

impl NoisyObservationEnv {
    /// Wraps `inner` (flat observations) with `noise` fitted on its warm-up states; the noise
    /// is drawn from `source` (a seed, or the operating system's CSPRNG).
    pub fn new(
        inner: Box<dyn Env>,
        noise: ObservationNoise,
        source: RandomnessSource,
    ) -> Result<Self, AgentError> {
        let width = inner.observation_space().flat_dim();
        if noise.std().len() != width {
            return Err(AgentError::ShapeMismatch {
                what: "observation noise width",
                expected: width,
                got: noise.std().len(),
            });
        }
        Ok(Self {
            inner,
            noise,
            rng: MechanismRng::new(source)?,
        })
    }

    /// The fitted noise (IQR and standard deviation per dimension).
    pub fn noise(&self) -> &ObservationNoise {
        &self.noise
    }

    fn perturb(&mut self, obs: &mut [f32]) -> Result<(), EnvError> {
        self.noise
            .perturb_in_place(obs, &mut self.rng)
            .map_err(|e| EnvError::InvalidState {
                env: self.inner.id().to_string(),
                state: obs.iter().map(|&x| f64::from(x)).collect(),
                expected: format!("a finite observation to perturb ({e})"),
            })
    }

    fn perturb_obs(&mut self, obs: Obs) -> Result<Obs, EnvError> {
        match obs {
            Obs::Vector(mut v) => {
                self.perturb(&mut v)?;
                Ok(Obs::Vector(v))
            }
            other => Ok(other),
        }
    }
}

impl Env for NoisyObservationEnv {
    fn id(&self) -> &str {
        self.inner.id()
    }

    fn observation_space(&self) -> Space {
        self.inner.observation_space()
    }

    fn action_space(&self) -> Space {
        self.inner.action_space()
    }

    /// A non-finite first observation (which no classic-control environment produces) is
    /// returned unperturbed, since `reset` cannot fail; the agent's loss then reports it.
    fn reset(&mut self, seed: Option<u64>) -> Obs {
        let obs = self.inner.reset(seed);
        self.perturb_obs(obs.clone()).unwrap_or(obs)
    }

    fn step(&mut self, action: usize) -> Result<Step, EnvError> {
        let mut step = self.inner.step(action)?;
        step.obs = self.perturb_obs(step.obs)?;
        Ok(step)
    }

    fn set_state(&mut self, state: &[f64]) -> Result<Obs, EnvError> {
        let obs = self.inner.set_state(state)?;
        self.perturb_obs(obs)
    }

    fn max_episode_steps(&self) -> Option<usize> {
        self.inner.max_episode_steps()
    }

    fn step_into(&mut self, action: usize, obs: &mut [f32]) -> Result<StepInfo, EnvError> {
        let info = self.inner.step_into(action, obs)?;
        self.perturb(obs)?;
        Ok(info)
    }

    fn reset_into(&mut self, seed: Option<u64>, obs: &mut [f32]) -> Result<(), EnvError> {
        self.inner.reset_into(seed, obs)?;
        self.perturb(obs)
    }
}

//! Private training of REINFORCE and DQN as in the DP-RL slides (paper 004, Doulazmi &
//! Odonnat): DP-SGD on the gradients (central DP, "CDP – add noise on gradients") and Gaussian
//! noise on the observed states (local DP, "LDP – noise calibration"), with the privacy each
//! DP-SGD run actually spends, from the RDP accountant, which the slides leave as further work.
//!
//! - [`DpSgdReinforce`]: the gradients of L episodes (L = 1: the slides' "estimate gradient
//!   with one episode"), each clipped to C in L2, summed, noised once with N(0, σ²C²I) and
//!   divided by L (Figure 7).
//! - [`DpSgdDqn`]: per-transition gradients of the TD loss from the analytic per-sample
//!   gradients of [`crate::per_sample`], each clipped to C, summed, noised with N(0, σ²C²I)
//!   and divided by the expected batch size (Figure 7; the slides' "custom backpropagation").
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
//! subsampled Gaussian with q = 1 and one step, from [`RdpAccountant`]. This protects one
//! episode (e.g. one user's trajectory), not a user who contributes many episodes: such a user
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
//! & Zhang 2019, as in Opacus, for add/remove neighbours). To keep the accounting cheap, each
//! q_t is rounded **up** to a geometric grid of ratio 1.01 (RDP grows with q, so this only
//! over-states ε).
//!
//! **Adjacency.** Every ε here is stated under an [`Adjacency`], add/remove by default (as in
//! Opacus), or substitution ([`DpSgdTrainingConfig::adjacency`]), whose per-step RDP is a
//! conservative bound, exact at q = 1 ([`privrl_privacy::adjacency`]). An ε is printed with its
//! unit and relation ([`PrivacyTally::label`]).
//!
//! **Resuming.** `save_checkpoint` writes the tally and the noise generator's position beside
//! the agent's checkpoint (and, for DQN, the replay buffer, whose size sets the q_t to come);
//! `load_checkpoint` continues them, so a resumed run's ε composes over every step since the
//! start, never only those since the resume.
//!
//! **LDP on observations has no ε.** The observation noise has no sensitivity bound (states
//! are unbounded), so it is a heuristic, as the slides' own "need for theoretical guarantees"
//! says; [`NoisyObservationEnv`] reports ε = ∞.
//!
//! Clipping is flat (the whole gradient vector to C), as in Abadi et al. The slides' REINFORCE
//! code clips each parameter tensor to C and adds σC noise to each, which has sensitivity
//! √P·C for P tensors: its σ corresponds to σ/√P here.

use std::collections::BTreeMap;
use std::path::Path;

use burn::config::Config;
use burn::module::Module;
use burn::tensor::backend::AutodiffBackend;
use burn::tensor::Tensor;
use privrl_envs::{Env, EnvError, Obs, Space, Step, StepInfo};
use privrl_privacy::{
    poisson_sample, Adjacency, Clipping, GradientMechanism, GradientMechanismConfig,
    GradientPrivacy, MechanismRng, MechanismRngState, NoiseMode, ObservationNoise,
    RandomnessSource, RdpAccountant,
};
use rand::Rng;
use serde::{Deserialize, Serialize};

use crate::agent::{checkpoint_error, Agent};
use crate::autodiff;
use crate::buffer::TransitionBatch;
use crate::dqn::{Dqn, DqnConfig};
use crate::error::{check_count, check_non_negative, check_positive, AgentError};
use crate::heads::{matrix, one_hot, q_of_actions, to_host};
use crate::nn::Mlp;
use crate::per_sample::{probed_forward, PerSampleFactors};
use crate::record::{GradientRecord, NamedGradient};
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

/// σ of a DP-SGD mechanism, 0 for one without noise (whose ε is ∞).
fn noise_multiplier(mechanism: &dyn GradientMechanism) -> f64 {
    match mechanism.privacy() {
        GradientPrivacy::SubsampledGaussian { noise_multiplier } => noise_multiplier,
        _ => 0.0,
    }
}

// ---------------------------------------------------------------------------------------------
// Accounting
// ---------------------------------------------------------------------------------------------

/// Ratio of the geometric grid that sampling rates are rounded up to.
const SAMPLE_RATE_GRID: f64 = 1.01;

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

/// The subsampled-Gaussian releases of a run, counted per sampling rate (rounded up to a
/// geometric grid of ratio 1.01), and the (ε, δ) they add up to under the RDP accountant, per
/// [`PrivacyUnit`] and under an [`Adjacency`]. Plain counts, so a checkpoint holds it exactly
/// and a resumed run continues it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PrivacyTally {
    unit: PrivacyUnit,
    adjacency: Adjacency,
    noise_multiplier: f64,
    delta: f64,
    /// Grid exponent k (q = 1.01^−k) → number of releases.
    releases: BTreeMap<u32, u64>,
    steps: u64,
}

impl PrivacyTally {
    /// An empty tally of records of `unit` for noise multiplier σ and δ, add/remove.
    pub fn new(unit: PrivacyUnit, noise_multiplier: f64, delta: f64) -> Self {
        Self {
            unit,
            adjacency: Adjacency::AddRemove,
            noise_multiplier,
            delta,
            releases: BTreeMap::new(),
            steps: 0,
        }
    }

    /// The same tally with ε stated under `adjacency` (the counts do not depend on it).
    pub fn with_adjacency(mut self, adjacency: Adjacency) -> Self {
        self.adjacency = adjacency;
        self
    }

    /// Counts `count` releases at sampling rate `q` ∈ (0, 1], rounded up to the grid.
    pub fn record(&mut self, q: f64, count: u64) {
        let q = q.clamp(f64::MIN_POSITIVE, 1.0);
        let exponent = (-q.ln() / SAMPLE_RATE_GRID.ln()).floor().max(0.0) as u32;
        *self.releases.entry(exponent).or_insert(0) += count;
        self.steps += count;
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
                let n = t.min(config.buffer_capacity as u64).max(1);
                let q = (config.batch_size as f64 / n as f64).min(1.0);
                tally.record(q, config.gradient_steps as u64);
            }
        }
        tally
    }

    /// Gradient steps counted so far.
    pub fn steps(&self) -> u64 {
        self.steps
    }

    /// The record that ε protects.
    pub fn unit(&self) -> PrivacyUnit {
        self.unit
    }

    /// The neighbouring relation ε holds under.
    pub fn adjacency(&self) -> Adjacency {
        self.adjacency
    }

    /// σ.
    pub fn noise_multiplier(&self) -> f64 {
        self.noise_multiplier
    }

    /// δ of the (ε, δ).
    pub fn delta(&self) -> f64 {
        self.delta
    }

    /// What an ε of this tally means, to print beside it: `per episode, add/remove,
    /// δ = 1e-5`.
    pub fn label(&self) -> String {
        format!(
            "per {}, {}, δ = {}",
            self.unit.name(),
            self.adjacency.name(),
            self.delta
        )
    }

    /// ε at the tally's δ: RDP of every counted release, composed under the tally's
    /// adjacency (∞ without noise; 0 before any release).
    pub fn epsilon(&self) -> Result<f64, AgentError> {
        if self.steps == 0 {
            return Ok(0.0);
        }
        if self.noise_multiplier <= 0.0 {
            return Ok(f64::INFINITY);
        }
        let mut accountant = RdpAccountant::new(self.delta)?.with_adjacency(self.adjacency)?;
        for (&exponent, &count) in &self.releases {
            let q = SAMPLE_RATE_GRID.powi(-(exponent as i32)).min(1.0);
            accountant.step(q, self.noise_multiplier, count)?;
        }
        Ok(accountant.epsilon(self.delta)?.0)
    }

    /// ε if one record took part in every counted step at q = 1.
    pub fn epsilon_if_every_step(&self) -> Result<f64, AgentError> {
        let mut all = self.clone();
        all.releases.clear();
        all.steps = 0;
        all.record(1.0, self.steps);
        all.epsilon()
    }
}

/// What a DP-SGD agent saves beside its inner agent's checkpoint: the releases so far and the
/// noise generator's position, so that a resumed run continues both.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct PrivateState {
    tally: PrivacyTally,
    noise_rng: Option<MechanismRngState>,
}

/// The file it lives in.
const PRIVATE_STATE: &str = "dp_sgd.json";

impl PrivateState {
    fn save(&self, dir: &Path) -> Result<(), AgentError> {
        let path = dir.join(PRIVATE_STATE);
        let text = serde_json::to_string(self).map_err(|e| checkpoint_error(&path, e))?;
        std::fs::write(&path, text).map_err(|e| checkpoint_error(&path, e))
    }

    /// Reads the state and checks it belongs to a run with `expected`'s unit, σ, δ and
    /// adjacency: a tally composed at another σ or stated under another relation would be
    /// continued under the wrong parameters.
    fn load(dir: &Path, expected: &PrivacyTally) -> Result<Self, AgentError> {
        let path = dir.join(PRIVATE_STATE);
        let text = std::fs::read_to_string(&path).map_err(|e| checkpoint_error(&path, e))?;
        let state: Self = serde_json::from_str(&text).map_err(|e| checkpoint_error(&path, e))?;
        let (got, want) = (&state.tally, expected);
        if (got.unit, got.adjacency, got.noise_multiplier, got.delta)
            != (want.unit, want.adjacency, want.noise_multiplier, want.delta)
        {
            return Err(checkpoint_error(
                &path,
                format!(
                    "saved by a run with σ = {} ({}), the agent has σ = {} ({})",
                    got.noise_multiplier,
                    got.label(),
                    want.noise_multiplier,
                    want.label()
                ),
            ));
        }
        Ok(state)
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
    mechanism: Box<dyn GradientMechanism>,
    noise_rng: MechanismRng,
    episodes_per_step: usize,
    /// Every DP-SGD step, at q = 1.
    steps: PrivacyTally,
}

impl<B: AutodiffBackend> DpSgdReinforce<B> {
    /// Wraps `agent`; the noise is drawn from its own generator, seeded by `noise_seed` or the
    /// operating system's (`config.noise_rng`).
    pub fn new(
        agent: Reinforce<B>,
        config: &DpSgdTrainingConfig,
        noise_seed: u64,
    ) -> Result<Self, AgentError> {
        let mechanism = config.build(agent.policy().num_params())?;
        let steps = PrivacyTally::new(
            PrivacyUnit::Episode,
            noise_multiplier(mechanism.as_ref()),
            config.delta,
        )
        .with_adjacency(config.adjacency);
        Ok(Self {
            agent,
            mechanism,
            noise_rng: config.noise_rng.rng(noise_seed)?,
            episodes_per_step: config.episodes_per_step,
            steps,
        })
    }

    /// The wrapped agent.
    pub fn agent(&self) -> &Reinforce<B> {
        &self.agent
    }

    /// The gradient mechanism (DP-SGD, clipping alone, or none).
    pub fn mechanism(&self) -> &dyn GradientMechanism {
        self.mechanism.as_ref()
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
        let mut layout = None;
        let mut total_return = 0.0;
        for _ in 0..self.episodes_per_step {
            let batch = self.agent.collect_episode()?;
            let gradient = self.agent.gradient(&batch)?;
            per_episode.push(gradient.flatten());
            total_return += batch.rewards.iter().map(|&r| f64::from(r)).sum::<f64>();
            layout = Some(gradient);
        }
        let layout = layout.expect("episodes_per_step >= 1 is checked when building");
        let released = self.mechanism.release_batch(
            &per_episode,
            self.episodes_per_step as f64,
            &mut self.noise_rng,
        )?;
        self.agent.apply_gradient(&layout.with_flat(&released)?)?;
        self.steps.record(1.0, 1);
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
        let mut tally = self.steps.clone();
        tally.releases.clear();
        tally.steps = 0;
        if self.steps.steps() > 0 {
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
        let mut user = self.steps.clone();
        user.noise_multiplier /= self.episodes_per_step as f64;
        user.epsilon_if_every_step()
    }

    /// Every DP-SGD step so far (each at q = 1), as checkpointed.
    pub fn steps(&self) -> &PrivacyTally {
        &self.steps
    }

    /// Writes the agent's checkpoint and, beside it, the tally and the noise generator's
    /// position (`dp_sgd.json`).
    pub fn save_checkpoint(&self, dir: &Path) -> Result<(), AgentError> {
        self.agent.save_checkpoint(dir)?;
        PrivateState {
            tally: self.steps.clone(),
            noise_rng: self.noise_rng.state(),
        }
        .save(dir)
    }

    /// Restores what [`DpSgdReinforce::save_checkpoint`] wrote: the tally continues from the
    /// checkpoint's, never from zero. Fails if the checkpoint was written with another σ, δ
    /// or adjacency.
    pub fn load_checkpoint(&mut self, dir: &Path) -> Result<(), AgentError> {
        let state = PrivateState::load(dir, &self.steps)?;
        self.agent.load_checkpoint(dir)?;
        self.noise_rng
            .restore(state.noise_rng.as_ref())
            .map_err(|e| checkpoint_error(&dir.join(PRIVATE_STATE), e))?;
        self.steps = state.tally;
        Ok(())
    }
}

// ---------------------------------------------------------------------------------------------
// DP-SGD DQN
// ---------------------------------------------------------------------------------------------

/// DQN whose gradient steps are DP-SGD steps on Poisson-sampled replay transitions
/// (module docs); acting, replay and target updates are [`Dqn`]'s own.
pub struct DpSgdDqn<B: AutodiffBackend> {
    agent: Dqn<B>,
    mechanism: Box<dyn GradientMechanism>,
    noise_rng: MechanismRng,
    tally: PrivacyTally,
}

impl<B: AutodiffBackend> DpSgdDqn<B> {
    /// Wraps `agent`; sampling and noise are drawn from a generator seeded by `noise_seed`, or
    /// from the operating system's (`config.noise_rng`).
    pub fn new(
        agent: Dqn<B>,
        config: &DpSgdTrainingConfig,
        noise_seed: u64,
    ) -> Result<Self, AgentError> {
        let mechanism = config.build(agent.q_network().num_params())?;
        let tally = PrivacyTally::new(
            PrivacyUnit::Transition,
            noise_multiplier(mechanism.as_ref()),
            config.delta,
        )
        .with_adjacency(config.adjacency);
        Ok(Self {
            agent,
            mechanism,
            noise_rng: config.noise_rng.rng(noise_seed)?,
            tally,
        })
    }

    /// The wrapped agent.
    pub fn agent(&self) -> &Dqn<B> {
        &self.agent
    }

    /// The gradient mechanism (DP-SGD, clipping alone, or none).
    pub fn mechanism(&self) -> &dyn GradientMechanism {
        self.mechanism.as_ref()
    }

    /// The releases so far.
    pub fn tally(&self) -> &PrivacyTally {
        &self.tally
    }

    /// ε spent so far (module docs).
    pub fn epsilon(&self) -> Result<f64, AgentError> {
        self.tally.epsilon()
    }

    /// One environment step of the DQN, whose gradient steps are DP-SGD steps on a
    /// Poisson sample with q_t = min(1, |B| / n_t), divided by the expected batch q_t·n_t.
    /// Returns the mean TD loss of the gradient steps, if any ran (NaN for an empty sample).
    pub fn step(&mut self) -> Result<Option<f64>, AgentError> {
        let batch_size = self.agent.config().batch_size as f64;
        let (mechanism, rng, tally) = (
            self.mechanism.as_ref(),
            &mut self.noise_rng,
            &mut self.tally,
        );
        let trained = self.agent.step_with(|dqn| {
            let n = dqn.replay().len();
            let q = (batch_size / n.max(1) as f64).min(1.0);
            let batch = dqn.replay().gather(&poisson_sample(n, q, rng)?);
            let (gradient, loss) = private_td_gradient(dqn, &batch, mechanism, q * n as f64, rng)?;
            dqn.apply_gradient(&gradient)?;
            tally.record(q, 1);
            Ok((loss, f64::NAN))
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
    /// sampling rate q_t of the steps to come), the tally and the noise generator's position.
    pub fn save_checkpoint(&self, dir: &Path) -> Result<(), AgentError> {
        self.agent.save_checkpoint(dir)?;
        self.agent.save_replay(dir)?;
        PrivateState {
            tally: self.tally.clone(),
            noise_rng: self.noise_rng.state(),
        }
        .save(dir)
    }

    /// Restores what [`DpSgdDqn::save_checkpoint`] wrote: the tally continues from the
    /// checkpoint's, never from zero, and the replay buffer's size, hence every later q_t, is
    /// the uninterrupted run's. Fails if the checkpoint was written with another σ, δ or
    /// adjacency.
    pub fn load_checkpoint(&mut self, dir: &Path) -> Result<(), AgentError> {
        let state = PrivateState::load(dir, &self.tally)?;
        self.agent.load_checkpoint(dir)?;
        self.agent.load_replay(dir)?;
        self.noise_rng
            .restore(state.noise_rng.as_ref())
            .map_err(|e| checkpoint_error(&dir.join(PRIVATE_STATE), e))?;
        self.tally = state.tally;
        Ok(())
    }
}

/// The DP-SGD gradient of the mean TD loss (1/|B|) Σ_i (Q(s_i, a_i) − y_i)² of `dqn` on
/// `batch` (Figure 7): per-transition gradients from the analytic per-sample factors, each
/// clipped to C, summed, noised with N(0, σ²C²I) and divided by `expected_batch_size`. An
/// empty batch releases pure noise (skipping it would break the accounting). Returns the
/// gradient and the batch's mean TD loss (NaN if empty).
pub fn private_td_gradient<B: AutodiffBackend>(
    dqn: &Dqn<B>,
    batch: &TransitionBatch,
    mechanism: &dyn GradientMechanism,
    expected_batch_size: f64,
    rng: &mut impl Rng,
) -> Result<(GradientRecord, f64), AgentError> {
    let (sum, loss) = if batch.is_empty() {
        (zero_record(dqn.q_network()), f64::NAN)
    } else {
        let clipping = Clipping::Flat {
            clip: mechanism.record_clip().unwrap_or(f64::INFINITY),
        };
        clipped_td_gradient_sum(dqn, batch, &clipping)?
    };
    let noisy = mechanism.release_clipped_sum(sum.flatten(), expected_batch_size, rng)?;
    Ok((sum.with_flat(&noisy)?, loss))
}

/// Σ_i clip(∇ (Q(s_i, a_i) − y_i)²) over the transitions of `batch`, from the analytic
/// per-sample gradients, and the batch's mean TD loss.
fn clipped_td_gradient_sum<B: AutodiffBackend>(
    dqn: &Dqn<B>,
    batch: &TransitionBatch,
    clipping: &Clipping,
) -> Result<(GradientRecord, f64), AgentError> {
    autodiff::exclusive(|| {
        let device = dqn.device();
        let q_network = dqn.q_network();
        if batch.obs_len != q_network.d_input() {
            return Err(AgentError::ShapeMismatch {
                what: "observation width",
                expected: q_network.d_input(),
                got: batch.obs_len,
            });
        }
        let targets = Tensor::<B, 1>::from_inner(dqn.td_targets(batch));
        let obs = matrix::<B>(&batch.obs, batch.obs_len, device);
        let actions = one_hot::<B>(&batch.actions, q_network.d_output(), device);
        let forward = probed_forward(q_network, obs);
        // Per-sample losses ℓ_i = (Q(s_i, a_i) − y_i)²; the backward of their sum gives the δ
        // factors of every sample's gradient.
        let loss = (q_of_actions(forward.output.clone(), actions) - targets.detach())
            .powi_scalar(2)
            .sum();
        let loss_value = f64::from(to_host(loss.clone().detach())[0]) / batch.len() as f64;
        if !loss_value.is_finite() {
            return Err(AgentError::NonFinite {
                what: "TD loss",
                value: loss_value,
                update: dqn.updates(),
            });
        }
        let grads = autodiff::backward(&loss);
        let factors = PerSampleFactors::from_backward(q_network, &forward, &grads);
        Ok((factors.clipped_sum(clipping)?, loss_value))
    })
}

/// A zero gradient laid out as [`PerSampleFactors::clipped_sum`] lays out `mlp`'s.
fn zero_record<B: AutodiffBackend>(mlp: &Mlp<B>) -> GradientRecord {
    let mut params = Vec::new();
    for (l, layer) in mlp.layers.iter().enumerate() {
        let (d_input, d_output) = layer.dims();
        params.push(NamedGradient {
            name: format!("layers.{l}.weight"),
            shape: vec![d_input, d_output],
            values: vec![0.0; d_input * d_output],
        });
        if layer.bias.is_some() {
            params.push(NamedGradient {
                name: format!("layers.{l}.bias"),
                shape: vec![d_output],
                values: vec![0.0; d_output],
            });
        }
    }
    GradientRecord { params }
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

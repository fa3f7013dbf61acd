//! What a DP agent has spent: the tally of its releases, per unit of privacy.

use std::path::Path;

use privrl_privacy::{AccountantKind, Adjacency, ReleaseSchedule};
use serde::{Deserialize, Serialize};

use crate::agent::{checkpoint_error, load_json, save_json};
use crate::dqn::DqnConfig;
use crate::error::AgentError;
use crate::{EngineState, PrivacyEngine};

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

    /// The tally that [`DpSgdDqn`](crate::DpSgdDqn) reaches after `env_steps` environment steps with `config`,
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
pub(super) struct PrivateState {
    engine: EngineState,
}

/// The file it lives in.
const PRIVATE_STATE: &str = "dp_sgd.json";

impl PrivateState {
    pub(super) fn save(engine: &PrivacyEngine, dir: &Path) -> Result<(), AgentError> {
        let state = Self {
            engine: engine.state(),
        };
        save_json(dir, PRIVATE_STATE, &state)
    }

    /// Reads the state into `engine`, which refuses one of another σ, δ, adjacency or
    /// accountant: a
    /// tally composed at another σ or stated under another relation would be continued under
    /// the wrong parameters.
    pub(super) fn load(engine: &mut PrivacyEngine, dir: &Path) -> Result<(), AgentError> {
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

//! DP-SGD REINFORCE: one release per L episodes.

use crate::agent::Agent;
use std::path::Path;

use burn::tensor::backend::AutodiffBackend;

use crate::autodiff;
use crate::dp::{GivenGradients, ParamLayout};
use crate::error::AgentError;
use crate::record::GradientRecord;
use crate::reinforce::{EpisodeBatch, Reinforce};
use crate::{DpSgdTrainingConfig, PrivacyEngine, PrivacyTally, PrivacyUnit};

use super::tally::PrivateState;

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
        let engine = config.engine(
            config.episodes_per_step,
            1.0,
            config.episodes_per_step as f64,
            noise_seed,
        )?;
        Ok(Self {
            agent,
            engine,
            episodes_per_step: config.episodes_per_step,
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
        self.train_step_with(&[], |_, _| Ok(()))
    }

    /// [`DpSgdReinforce::train_step`] with the episodes `given` in place of the first
    /// `given.len()` (at most L) fresh ones, and `observe` handed the released gradient with
    /// the agent as it was when the release was computed (before the gradient is applied): an
    /// auditor's canary episodes and the white-box adversary's view of a step (issue 44,
    /// `cargo xtask audit`). Given episodes are records like the fresh ones: clipped, summed,
    /// noised and accounted with them. Returns the mean return of the step's episodes.
    pub fn train_step_with<F>(
        &mut self,
        given: &[EpisodeBatch],
        mut observe: F,
    ) -> Result<f64, AgentError>
    where
        F: FnMut(&Reinforce<B>, &GradientRecord) -> Result<(), AgentError>,
    {
        if given.len() > self.episodes_per_step {
            return Err(AgentError::InvalidParameter {
                name: "given episodes",
                value: given.len() as f64,
                expected: "at most episodes_per_step",
            });
        }
        // The episodes are played on host copies; gradients and step open their own sections.
        let mut per_episode = Vec::with_capacity(self.episodes_per_step);
        let mut total_return = 0.0;
        let layout = autodiff::exclusive(|| ParamLayout::of(self.agent.policy()));
        for i in 0..self.episodes_per_step {
            let fresh;
            let batch = match given.get(i) {
                Some(batch) => batch,
                None => {
                    fresh = self.agent.collect_episode()?;
                    &fresh
                }
            };
            let gradient = self.agent.gradient(batch)?;
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
        observe(&self.agent, &released.gradient)?;
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

//! DP-SGD DQN: Poisson-sampled transitions, per-transition clipping.

use crate::agent::Agent;
use std::path::Path;

use burn::tensor::backend::AutodiffBackend;
use burn::tensor::Tensor;
use privrl_privacy::{GradientMechanism, GradientMechanismConfig};
use rand::{RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::autodiff;
use crate::buffer::TransitionBatch;
use crate::dp::{
    release_batch, select_records, traced_forward, ClippedSum, ParamLayout, PerSampleGradients,
    Tape, Traced,
};
use crate::dqn::{Dqn, TdLoss};
use crate::error::{AgentError, EngineError};
use crate::heads::q_of_actions;
use crate::nn::Mlp;
use crate::record::GradientRecord;
use crate::tensor::{matrix, one_hot};
use crate::{DpSgdTrainingConfig, NonPrivateDiagnostics, PrivacyEngine, PrivacyTally, PrivacyUnit};

use super::tally::PrivateState;

/// DQN whose gradient steps are DP-SGD steps of a [`PrivacyEngine`] on Poisson-sampled replay
/// transitions (module docs); acting, replay and target updates are [`Dqn`]'s own.
pub struct DpSgdDqn<B: AutodiffBackend> {
    agent: Dqn<B>,
    engine: PrivacyEngine,
    last_step: Option<NonPrivateDiagnostics>,
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
        let engine = config.engine(1, 1.0, batch as f64, noise_seed)?;
        Ok(Self {
            agent,
            engine,
            last_step: None,
        })
    }

    /// The wrapped agent.
    pub fn agent(&self) -> &Dqn<B> {
        &self.agent
    }

    /// The engine that samples, clips, noises and accounts every gradient step.
    pub fn engine(&self) -> &PrivacyEngine {
        &self.engine
    }

    /// The unnoised statistics of the last gradient step's batch (`None` before the first):
    /// outside the (ε, δ) guarantee ([`NonPrivateDiagnostics`]), for diagnosis such as
    /// per-transition gradient norms against C.
    pub fn last_step_diagnostics(&self) -> Option<NonPrivateDiagnostics> {
        self.last_step
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
    /// Returns the mean TD loss of the gradient steps, if any ran (NaN for an empty sample):
    /// an unnoised statistic of the sampled transitions, outside the (ε, δ) guarantee
    /// ([`NonPrivateDiagnostics`](crate::NonPrivateDiagnostics)).
    pub fn step(&mut self) -> Result<Option<f64>, AgentError> {
        self.step_observed(|_| Ok(()))
    }

    /// [`DpSgdDqn::step`], handing `observe` every gradient step's release with the agent as it
    /// was when the release was computed (its parameters and replay buffer, before the gradient
    /// is applied) and the step's Poisson batch ([`DpSgdDqnStep`]): the white-box adversary's
    /// view of a step (every noisy update and the public parameters), for the transition- and
    /// observation-unit audits of `cargo xtask audit` (issue 44).
    pub fn step_observed<F>(&mut self, mut observe: F) -> Result<Option<f64>, AgentError>
    where
        F: FnMut(&DpSgdDqnStep<'_, B>) -> Result<(), AgentError>,
    {
        let batch_size = self.agent.config().batch_size as f64;
        let engine = &mut self.engine;
        let last_step = &mut self.last_step;
        let trained = self.agent.step_with(|dqn| {
            let n = dqn.replay().len().max(1);
            engine.set_sampling(n, (batch_size / n as f64).min(1.0))?;
            let batch = engine.sample()?;
            let transitions = dqn.replay().gather(&batch);
            // The C and qN this step releases at, before adaptive clipping moves C.
            let (clip, expected_batch_size) = (engine.clip(), engine.expected_batch_size());
            // One section for the targets and the private gradient (the nested ones run
            // inline): each section entered costs a hand-off to its thread.
            let (released, batch) = autodiff::exclusive(|| -> Result<_, AgentError> {
                let loss = TdPerSample::new(dqn, &transitions, batch)?;
                let released = engine.private_step(dqn.q_network(), &loss.indices, &loss)?;
                Ok((released, loss.indices))
            })?;
            let diagnostics = released.non_private_diagnostics();
            if !diagnostics.mean_loss.is_finite() && diagnostics.batch_size > 0 {
                return Err(AgentError::NonFinite {
                    what: "TD loss",
                    value: diagnostics.mean_loss,
                    update: dqn.updates(),
                });
            }
            observe(&DpSgdDqnStep {
                agent: dqn,
                batch: &batch,
                released: &released.gradient,
                clip,
                expected_batch_size,
            })?;
            dqn.apply_gradient(&released.gradient)?;
            *last_step = Some(diagnostics);
            Ok((diagnostics.mean_loss, f64::NAN))
        })?;
        Ok(trained.map(|(loss, _)| loss))
    }

    /// Stores a given transition in the replay buffer, as if the agent had taken it: an
    /// auditor's canary (issue 44, `cargo xtask audit`). It is then one record like every
    /// other, Poisson-sampled, clipped, noised and accounted with them, and it counts in the
    /// buffer size n_t that sets q_t. Fails on a wrong observation width or action.
    pub fn push_transition(
        &mut self,
        obs: &[f32],
        action: usize,
        reward: f32,
        next_obs: &[f32],
        terminated: bool,
    ) -> Result<(), AgentError> {
        self.agent
            .push_transition(obs, action, reward, next_obs, terminated)
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

/// What [`DpSgdDqn::step_observed`] hands its observer at each gradient step, before the update
/// is applied: the white-box adversary's view (the released gradient and the agent it was
/// computed at, whose parameters the initial ones and the earlier releases determine), and, for
/// an auditor that plays DP's adversary (who may know every other transition), the step's
/// Poisson batch and the clipped gradients of chosen transitions at the step's parameters, by
/// the engine's own per-transition path without noise. The same shape as
/// [`DpPpoStep`](crate::DpPpoStep).
pub struct DpSgdDqnStep<'a, B: AutodiffBackend> {
    agent: &'a Dqn<B>,
    batch: &'a [usize],
    released: &'a GradientRecord,
    clip: f64,
    expected_batch_size: f64,
}

impl<B: AutodiffBackend> DpSgdDqnStep<'_, B> {
    /// The agent before the update: its parameters (Q- and target network) and its replay
    /// buffer, whose size n_t set this step's q_t = min(1, |B|/n_t).
    pub fn agent(&self) -> &Dqn<B> {
        self.agent
    }

    /// The released gradient: (Σ_{i ∈ batch} clip_C(g_i) + N(0, σ²C²I)) / (q_t·n_t), in the
    /// Q-network's parameter layout.
    pub fn released(&self) -> &GradientRecord {
        self.released
    }

    /// q_t·n_t, what the step's clipped noisy sum was divided by (|B| once n_t ≥ |B|).
    pub fn expected_batch_size(&self) -> f64 {
        self.expected_batch_size
    }

    /// C of this step.
    pub fn clip(&self) -> f64 {
        self.clip
    }

    /// The step's Poisson batch: replay-buffer indices (of [`Dqn::replay`]), ascending. Which
    /// transitions were sampled is **not** released and not covered by the guarantee: an
    /// auditor may read the other transitions' entries (independent of the audited one's, they
    /// leave its privacy loss as accounted) but not the audited transition's.
    pub fn batch(&self) -> &[usize] {
        self.batch
    }

    /// Σ_{i ∈ records} clip_C(g_i) over replay-buffer indices `records` at this step's
    /// parameters and C, no noise, in the released layout (zero for no records).
    pub fn clipped_sum(&self, records: &[usize]) -> Result<GradientRecord, AgentError> {
        self.clipped_gradient(&self.agent.replay().gather(records))
    }

    /// Σ clip_C(g_i) over `transitions` (any transitions, e.g. an auditor's canary, as if they
    /// were in the replay buffer) at this step's parameters and C, no noise, in the released
    /// layout: [`private_td_gradient`] with the noise taken out.
    pub fn clipped_gradient(
        &self,
        transitions: &TransitionBatch,
    ) -> Result<GradientRecord, AgentError> {
        let dimension = self.released.params.iter().map(|p| p.values.len()).sum();
        let clip_only =
            GradientMechanismConfig::clipped_gaussian(self.clip, 0.0).build(dimension, 1)?;
        // No noise, so the generator is never drawn from.
        let mut unused = ChaCha8Rng::seed_from_u64(0);
        Ok(private_td_gradient(
            self.agent,
            transitions,
            clip_only.as_ref(),
            1.0,
            &mut unused,
        )?
        .0)
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
    rng: &mut (impl RngCore + Send),
) -> Result<(GradientRecord, f64), AgentError> {
    let indices: Vec<usize> = (0..batch.len()).collect();
    let losses = TdPerSample::new(dqn, batch, indices.clone())?;
    let released = release_batch(
        dqn.q_network(),
        &indices,
        &losses,
        mechanism,
        expected_batch_size,
        rng,
    )?;
    let loss = released.loss_sum / batch.len() as f64;
    if !batch.is_empty() && !loss.is_finite() {
        return Err(AgentError::NonFinite {
            what: "TD loss",
            value: loss,
            update: dqn.updates(),
        });
    }
    Ok((released.layout.record(&released.values)?, loss))
}

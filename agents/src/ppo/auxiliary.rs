//! The hook for an extra term in PPO's policy loss.

use std::path::Path;

use burn::tensor::backend::AutodiffBackend;
use burn::tensor::Tensor;

use crate::error::AgentError;

/// An extra term in the policy loss, computed from the batch observations and the current
/// action probabilities, minimised together with the clipped surrogate.
///
/// [`AuxiliaryPolicyLoss::prepare`] runs once per update, before the policy iterations (query
/// a teacher there: once per state, not once per iteration); [`AuxiliaryPolicyLoss::loss`]
/// runs at every policy iteration on the current policy.
pub trait AuxiliaryPolicyLoss<B: AutodiffBackend>: Send {
    /// Name of the term in the stats (`aux_loss` by default).
    fn name(&self) -> &'static str {
        "aux_loss"
    }

    /// Sees every state the agent visits during a rollout, in order, with whether it starts
    /// a trajectory (the first step after a reset); e.g. a kickstarting teacher answers each
    /// visited state here and decays its k per trajectory.
    fn observe(&mut self, obs: &[f32], trajectory_start: bool) -> Result<(), AgentError> {
        let _ = (obs, trajectory_start);
        Ok(())
    }

    /// Sees the batch observations (row-major, `obs_len` values each) before the update.
    fn prepare(&mut self, observations: &[f32], obs_len: usize) -> Result<(), AgentError> {
        let _ = (observations, obs_len);
        Ok(())
    }

    /// Writes whatever state the term carries from epoch to epoch into the agent's checkpoint
    /// directory `dir` (e.g. a kickstarting teacher's concentration, ledger and noise stream),
    /// so that a resumed run continues it. Called at epoch boundaries only. A stateless term
    /// keeps the default, which writes nothing.
    fn save_state(&self, dir: &Path) -> Result<(), AgentError> {
        let _ = dir;
        Ok(())
    }

    /// Reads back what [`AuxiliaryPolicyLoss::save_state`] wrote.
    fn load_state(&mut self, dir: &Path) -> Result<(), AgentError> {
        let _ = dir;
        Ok(())
    }

    /// The term to add to the policy loss (a scalar, `[1]`). `probabilities` is π_θ(·|s),
    /// `[batch, num_actions]`, and carries the gradient to the policy.
    fn loss(&mut self, observations: &Tensor<B, 2>, probabilities: Tensor<B, 2>) -> Tensor<B, 1>;
}

//! Spinning Up's update loops: policy steps with KL early stopping, value steps (through
//! autodiff or the critic's hand-written gradient), and the stats of an update.

use burn::optim::GradientsParams;
use burn::tensor::backend::AutodiffBackend;
use burn::tensor::Tensor;
use serde::Serialize;

use super::loss::{policy_loss, BatchTensors};
use super::{value_loss, AuxiliaryPolicyLoss, PpoConfig};
use crate::autodiff;
use crate::error::AgentError;
use crate::heads::state_value;
use crate::network::{Network, TrainableNetwork};
use crate::optim::AgentOptimizer;
use crate::tensor::to_host;

/// What one PPO update did (Spinning Up's logged values).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct PpoStats {
    /// Policy loss before the update.
    pub loss_pi: f64,
    /// Value loss before the update.
    pub loss_v: f64,
    /// Approximate KL(π_old ‖ π) at the last policy iteration.
    pub kl: f64,
    /// Mean entropy of the policy before the update.
    pub entropy: f64,
    /// Fraction of clipped ratios at the last policy iteration.
    pub clip_frac: f64,
    /// Change of the policy loss over the update.
    pub delta_loss_pi: f64,
    /// Change of the value loss over the update.
    pub delta_loss_v: f64,
    /// Policy iterations applied (less than `train_pi_iters` after an early stop).
    pub stop_iter: usize,
    /// Auxiliary term before the update (0 without one).
    pub aux_loss: f64,
}

/// Spinning Up's policy loop: up to `train_pi_iters` Adam steps on the surrogate, stopping
/// before the step at which the approximate KL exceeds 1.5 × `target_kl`. Returns the policy
/// half of the stats.
pub(super) fn policy_iterations<B: AutodiffBackend, N: TrainableNetwork<B>>(
    actor: &mut N,
    optim: &mut AgentOptimizer<N, B>,
    mut auxiliary: Option<&mut (dyn AuxiliaryPolicyLoss<B> + 'static)>,
    batch: &BatchTensors<B>,
    config: &PpoConfig,
    update: u64,
) -> Result<PpoStats, AgentError> {
    let mut first: Option<(f64, f64, f64)> = None;
    let (mut last_loss, mut kl, mut clip_frac) = (0.0, 0.0, 0.0);
    let mut stop_iter = config.train_pi_iters;
    for i in 0..config.train_pi_iters {
        let terms = policy_loss(actor, auxiliary.as_deref_mut(), batch, config.clip_ratio);
        if !terms.value.is_finite() {
            return Err(AgentError::NonFinite {
                what: "policy loss",
                value: terms.value,
                update,
            });
        }
        (last_loss, kl, clip_frac) = (terms.value, terms.kl, terms.clip_frac);
        first.get_or_insert((terms.value, terms.entropy, terms.aux));
        if terms.kl > 1.5 * config.target_kl {
            stop_iter = i;
            break;
        }
        let grads = GradientsParams::from_grads(autodiff::backward(&terms.loss), actor);
        *actor = optim.step(config.pi_lr, actor.clone(), grads);
    }
    let (loss_pi, entropy, aux_loss) = first.expect("validate() guarantees train_pi_iters >= 1");
    Ok(PpoStats {
        loss_pi,
        loss_v: f64::NAN,
        kl,
        entropy,
        clip_frac,
        delta_loss_pi: last_loss - loss_pi,
        delta_loss_v: f64::NAN,
        stop_iter,
        aux_loss,
    })
}

/// Spinning Up's value loop: `train_v_iters` Adam steps on the value loss. Returns the loss
/// before the first and before the last step.
pub(super) fn value_iterations<B: AutodiffBackend, N: TrainableNetwork<B>>(
    critic: &mut N,
    optim: &mut AgentOptimizer<N, B>,
    batch: &BatchTensors<B>,
    config: &PpoConfig,
) -> (f64, f64) {
    let (mut first, mut last) = (f64::NAN, f64::NAN);
    for i in 0..config.train_v_iters {
        let loss = value_loss(
            state_value(critic.forward_flat(batch.obs.clone())),
            batch.returns.clone(),
        );
        last = f64::from(to_host(loss.clone().detach())[0]);
        if i == 0 {
            first = last;
        }
        let grads = GradientsParams::from_grads(autodiff::backward(&loss), critic);
        *critic = optim.step(config.vf_lr, critic.clone(), grads);
    }
    (first, last)
}

/// The critic without autodiff, and the batch's observations and returns on its backend.
pub(super) struct UntrackedCritic<B: AutodiffBackend, N: TrainableNetwork<B>> {
    pub(super) critic: N::InnerModule,
    pub(super) obs: Tensor<B::InnerBackend, 2>,
    pub(super) returns: Tensor<B::InnerBackend, 1>,
}

/// [`value_iterations`] on the untracked critic, with its hand-written gradient; `None`
/// (before any step) if the critic has none. Returns the trained critic and the loss before
/// the first and before the last step.
pub(super) fn untracked_value_iterations<B: AutodiffBackend, N: TrainableNetwork<B>>(
    untracked: UntrackedCritic<B, N>,
    optim: &mut AgentOptimizer<N, B>,
    config: &PpoConfig,
) -> Option<(N::InnerModule, f64, f64)> {
    let UntrackedCritic {
        mut critic,
        obs,
        returns,
    } = untracked;
    let (mut first, mut last) = (f64::NAN, f64::NAN);
    for i in 0..config.train_v_iters {
        let (loss, mut grads) = critic.squared_error_gradient(obs.clone(), returns.clone())?;
        last = loss;
        if i == 0 {
            first = loss;
        }
        critic = optim.step_untracked(config.vf_lr, critic, &mut grads);
    }
    Some((critic, first, last))
}

//! PPO's losses: the clipped surrogate, the critic's loss, and the policy loss of a batch with
//! its diagnostics.

use burn::tensor::activation::softmax;
use burn::tensor::backend::{AutodiffBackend, Backend};
use burn::tensor::Tensor;

use super::AuxiliaryPolicyLoss;
use crate::heads::Categorical;
use crate::network::Network;
use crate::tensor::to_host;
use crate::tensor::{float_of_mask, float_options};

/// The clipped surrogate loss and its diagnostics (each a `[1]` tensor; only `loss` carries
/// a gradient).
#[derive(Debug, Clone)]
pub struct SurrogateTerms<B: Backend> {
    /// L^CLIP(θ) = −E_t[min(r_t(θ) A_t, clip(r_t(θ), 1 − ε, 1 + ε) A_t)].
    pub loss: Tensor<B, 1>,
    /// Approximate KL divergence E_t[log π_old(a_t|s_t) − log π_θ(a_t|s_t)].
    pub approx_kl: Tensor<B, 1>,
    /// Mean entropy of π_θ.
    pub entropy: Tensor<B, 1>,
    /// Fraction of samples with |r_t − 1| > ε.
    pub clip_frac: Tensor<B, 1>,
}

/// PPO's clipped surrogate (Schulman et al. 2017, eq. 7, negated to a loss) from the current
/// policy's logits, the actions as one-hot rows, the advantages and log π_old(a_t|s_t).
pub fn clipped_surrogate<B: Backend>(
    logits: Tensor<B, 2>,
    actions_one_hot: Tensor<B, 2>,
    advantages: Tensor<B, 1>,
    log_probs_old: Tensor<B, 1>,
    clip_ratio: f64,
) -> SurrogateTerms<B> {
    let pi = Categorical::from_logits(logits);
    let logp = pi.log_prob(actions_one_hot);
    // r_t(θ) = π_θ(a_t|s_t) / π_old(a_t|s_t)
    let ratio = (logp.clone() - log_probs_old.clone()).exp();
    // L^CLIP = −E[min(r_t A_t, clip(r_t, 1 − ε, 1 + ε) A_t)]
    let clipped = ratio.clone().clamp(1.0 - clip_ratio, 1.0 + clip_ratio) * advantages.clone();
    let surrogate = (ratio.clone() * advantages).min_pair(clipped);
    SurrogateTerms {
        loss: surrogate.mean().neg(),
        approx_kl: (log_probs_old - logp).detach().mean(),
        entropy: pi.entropy().detach().mean(),
        clip_frac: float_of_mask((ratio.detach() - 1.0).abs().greater_elem(clip_ratio)).mean(),
    }
}

/// The critic's loss E_t[(V(s_t) − R̂_t)²].
pub fn value_loss<B: Backend>(values: Tensor<B, 1>, returns: Tensor<B, 1>) -> Tensor<B, 1> {
    (values - returns).powi_scalar(2).mean()
}

pub(super) struct BatchTensors<B: AutodiffBackend> {
    pub(super) obs: Tensor<B, 2>,
    pub(super) actions: Tensor<B, 2>,
    pub(super) advantages: Tensor<B, 1>,
    pub(super) returns: Tensor<B, 1>,
    pub(super) log_probs: Tensor<B, 1>,
}

pub(super) struct PolicyLoss<B: AutodiffBackend> {
    pub(super) loss: Tensor<B, 1>,
    pub(super) value: f64,
    pub(super) kl: f64,
    pub(super) entropy: f64,
    pub(super) clip_frac: f64,
    pub(super) aux: f64,
}

/// The clipped surrogate (plus the auxiliary term) of `actor` on the batch, with its
/// diagnostics read back in one transfer.
pub(super) fn policy_loss<B: AutodiffBackend, N: Network<B>>(
    actor: &N,
    auxiliary: Option<&mut (dyn AuxiliaryPolicyLoss<B> + 'static)>,
    batch: &BatchTensors<B>,
    clip_ratio: f64,
) -> PolicyLoss<B> {
    let logits = actor.forward_flat(batch.obs.clone());
    let terms = clipped_surrogate(
        logits.clone(),
        batch.actions.clone(),
        batch.advantages.clone(),
        batch.log_probs.clone(),
        clip_ratio,
    );
    let mut loss = terms.loss;
    let mut aux = Tensor::<B, 1>::zeros([1], float_options::<B>(&batch.obs.device()));
    if let Some(auxiliary) = auxiliary {
        aux = auxiliary.loss(&batch.obs, softmax(logits, 1));
        loss = loss + aux.clone();
    }
    let diagnostics = to_host(Tensor::cat(
        vec![
            loss.clone().detach(),
            terms.approx_kl,
            terms.entropy,
            terms.clip_frac,
            aux.detach(),
        ],
        0,
    ));
    PolicyLoss {
        loss,
        value: f64::from(diagnostics[0]),
        kl: f64::from(diagnostics[1]),
        entropy: f64::from(diagnostics[2]),
        clip_frac: f64::from(diagnostics[3]),
        aux: f64::from(diagnostics[4]),
    }
}

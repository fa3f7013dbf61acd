//! Defences between the learner and the attacker: the shared gradient passes through a
//! [`GradientMechanismConfig`] (privrl-privacy's one home for gradient mechanisms) before
//! [`crate::attack()`] sees it, so that the leakage of a privatised gradient can be measured
//! beside the ε it buys (the leakage suite). [`Defence`] adds the attacker's side to it.
//!
//! - DP-SGD (paper 004, Figure 7; Abadi et al.): every per-sample gradient is clipped to L2
//!   norm C, Gaussian noise N(0, σ²C²I) is added to the sum, and the sum is divided by the
//!   batch size, so a batch of one releases clip(g) + N(0, σ²C²I).
//! - PGC's local mechanisms (paper 003): Laplace (Algorithm 2, eq. 19–21) and projected random
//!   sign (Algorithm 3, eq. 23–24) applied to the gradient of the whole submission, as a PGC
//!   agent applies them to its episode's gradient.
//!
//! The attacker is white box and knows the defence and its parameters. Cosine matching (eq. 5)
//! is invariant to the scale that clipping and the mechanisms' output scale introduce, and
//! every noise here is zero-mean, so the released gradient is used as the attack's target
//! directly: the best use of a single release short of a prior over the noise. The magnitude
//! term that QGI and RGI add to eq. 5 assumes ‖g_rec‖ = ‖g‖ at the truth; clipping keeps that
//! (it scales ∇_{b_last}, and so eq. 6's surrogate, by the same factor), noise does not
//! (‖g + n‖² ≈ ‖g‖² + ‖n‖²), so under a noisy defence the attacker matches by eq. 5 alone
//! ([`Defence::adapt_attack`]). What the
//! attacker cannot undo is the norm that clipping removes: when ‖g‖ > C, QGI's error magnitude
//! ‖g‖/‖g_rec‖ (eq. 8) is read off the clipped norm, so Q_rec is biased towards Q̂_rec; the
//! state and the action are unaffected by a scale.

use privrl_agents::GradientRecord;
use privrl_privacy::GradientMechanismConfig;
use rand::RngCore;

use crate::attack::AttackConfig;
use crate::error::AttackError;
use crate::model::InvertibleModel;
use crate::victim::{Outer, Sample, Victim};
use burn::tensor::backend::Backend;

/// The attacker's side of a gradient mechanism: what the learner shares under it, and the
/// attack configured against it.
pub trait Defence {
    /// The gradient the learner shares for `samples` under this defence: the one the
    /// attacker sees. A mechanism with a per-record clip (clip, DP-SGD) clips every sample's
    /// gradient, sums, noises once and divides by the batch size (Figure 7); the others
    /// release the batch's gradient as one submission, as a PGC agent does with its
    /// episode's. Under [`GradientMechanismConfig::None`] this is exactly
    /// [`Victim::shared_gradient`].
    fn shared_gradient<B: Backend, M: InvertibleModel<Outer<B>>>(
        &self,
        victim: &Victim<B, M>,
        samples: &[Sample],
        rng: &mut dyn RngCore,
    ) -> Result<GradientRecord, AttackError>;

    /// The attack's configuration against this defence: `config` itself where the release
    /// has no noise (so eq. 6's surrogate reproduces its magnitude), and with the magnitude
    /// term dropped (eq. 5 alone) otherwise.
    fn adapt_attack(&self, config: AttackConfig) -> AttackConfig;
}

impl Defence for GradientMechanismConfig {
    fn shared_gradient<B: Backend, M: InvertibleModel<Outer<B>>>(
        &self,
        victim: &Victim<B, M>,
        samples: &[Sample],
        rng: &mut dyn RngCore,
    ) -> Result<GradientRecord, AttackError> {
        let (template, released) = if self.record_clip().is_some() {
            let records = samples
                .iter()
                .map(|sample| victim.shared_gradient(std::slice::from_ref(sample)))
                .collect::<Result<Vec<_>, _>>()?;
            let per_sample: Vec<Vec<f32>> = records.iter().map(GradientRecord::flatten).collect();
            let template = records.into_iter().next().ok_or(AttackError::EmptyBatch)?;
            let mechanism = self
                .build(template.num_values(), 1)
                .map_err(defence_error)?;
            let released = mechanism.release_batch(&per_sample, samples.len() as f64, rng);
            (template, released)
        } else {
            let gradient = victim.shared_gradient(samples)?;
            let mechanism = self
                .build(gradient.num_values(), 1)
                .map_err(defence_error)?;
            let released = mechanism.release(&gradient.flatten(), rng);
            (gradient, released)
        };
        template
            .with_flat(&released.map_err(defence_error)?)
            .map_err(|e| AttackError::Defence(e.to_string()))
    }

    fn adapt_attack(&self, config: AttackConfig) -> AttackConfig {
        if self.adds_noise() {
            let matching = config.matching.with_magnitude_weight(0.0);
            config.with_matching(matching)
        } else {
            config
        }
    }
}

fn defence_error(e: privrl_privacy::PrivacyError) -> AttackError {
    AttackError::Defence(e.to_string())
}

//! Quantile-based adaptive clipping (Andrew et al. 2021).

use serde::{Deserialize, Serialize};

use crate::error::EngineError;

/// Quantile-based adaptive clipping (Andrew, Thakkar, McMahan & Ramaswamy 2021,
/// "Differentially Private Learning with Adaptive Clipping", Algorithm 1): after every step
/// C ← C·exp(−η (b̃ − γ)), where b̃ is the noised fraction of the batch whose gradient norm was
/// at most C, so that C tracks the γ-quantile of the per-sample norms.
///
/// The count is private too: Σ_i (b_i − ½), whose sensitivity is ½, is released with
/// N(0, σ_b²), and b̃ = that / (qN) + ½ (qN the expected batch). The gradient's noise multiplier
/// becomes σ_Δ = (σ⁻² − (2σ_b)⁻²)^(−1/2) ([`adaptive_gradient_noise`]): the two Gaussian
/// releases together are one Gaussian mechanism of noise multiplier σ (Andrew et al.,
/// Theorem 1), so each step is accounted exactly as a non-adaptive step at σ, under either
/// adjacency (both sensitivities double under substitution).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct AdaptiveClipping {
    /// Target quantile γ ∈ (0, 1) of the per-sample norms (0.5 in Andrew et al.).
    pub target_quantile: f64,
    /// Geometric learning rate η_C > 0 (0.2 in Andrew et al.).
    pub learning_rate: f64,
    /// σ_b, the standard deviation of the noise on the clipped count; it must exceed σ/2.
    /// Andrew et al. suggest the expected batch size / 20.
    pub count_noise: f64,
}

impl AdaptiveClipping {
    /// γ, η_C and σ_b.
    pub fn new(target_quantile: f64, learning_rate: f64, count_noise: f64) -> Self {
        Self {
            target_quantile,
            learning_rate,
            count_noise,
        }
    }

    /// Checks γ and η_C, then σ_Δ for a σ that the caller has already validated (finite,
    /// ≥ 0): σ is checked once, by [`PrivacyEngineConfig::check`](crate::PrivacyEngineConfig::check).
    pub(super) fn checked_gradient_noise(&self, noise_multiplier: f64) -> Result<f64, EngineError> {
        let quantile = self.target_quantile;
        if !(quantile > 0.0 && quantile < 1.0) {
            return Err(EngineError::out_of_range(
                "target_quantile",
                quantile,
                "in (0, 1)",
            ));
        }
        let rate = self.learning_rate;
        if !(rate.is_finite() && rate > 0.0) {
            return Err(EngineError::out_of_range(
                "clip_learning_rate",
                rate,
                "> 0 and finite",
            ));
        }
        gradient_noise(noise_multiplier, self.count_noise)
    }
}

/// σ_Δ = (σ⁻² − (2σ_b)⁻²)^(−1/2): the gradient's noise multiplier that, with N(0, σ_b²) on the
/// clipped count, spends what one Gaussian release at σ spends (Andrew et al. 2021,
/// Theorem 1). σ = 0 (no privacy) gives 0. Refused unless σ_b > σ/2 (else no σ_Δ exists).
pub fn adaptive_gradient_noise(
    noise_multiplier: f64,
    count_noise: f64,
) -> Result<f64, EngineError> {
    if !(noise_multiplier.is_finite() && noise_multiplier >= 0.0) {
        return Err(EngineError::out_of_range(
            "noise_multiplier",
            noise_multiplier,
            ">= 0 and finite",
        ));
    }
    gradient_noise(noise_multiplier, count_noise)
}

/// [`adaptive_gradient_noise`] for a validated σ.
fn gradient_noise(noise_multiplier: f64, count_noise: f64) -> Result<f64, EngineError> {
    let (sigma, sigma_b) = (noise_multiplier, count_noise);
    if sigma == 0.0 {
        return Ok(0.0);
    }
    if !(sigma_b.is_finite() && 2.0 * sigma_b > sigma) {
        return Err(EngineError::out_of_range(
            "count_noise",
            sigma_b,
            "> noise_multiplier / 2 (the count's noise must leave budget for the gradient)",
        ));
    }
    Ok((sigma.powi(-2) - (2.0 * sigma_b).powi(-2)).powf(-0.5))
}

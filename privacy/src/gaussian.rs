//! The Gaussian mechanism: noise N(0, σ²I) on a value of L2 sensitivity Δ₂, with σ calibrated
//! to (ε, δ) by the classic bound or by the exact (analytic) condition.

use rand::Rng;

use crate::error::{all_finite, at_least_one, open_unit, positive, saturating_f32};
use crate::mechanism::{Mechanism, PrivacyCost};
use crate::randomness::standard_normal;
use crate::special::{log_normal_cdf, normal_cdf};
use crate::PrivacyError;

/// How σ is derived from (ε, δ, Δ₂).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum GaussianCalibration {
    /// σ = Δ₂·√(2 ln(1.25/δ))/ε (Dwork & Roth 2014, Theorem A.1). Proven only for ε < 1, so
    /// larger ε are refused.
    Classic,
    /// The smallest σ with Φ(Δ/(2σ) − εσ/Δ) − e^ε Φ(−Δ/(2σ) − εσ/Δ) ≤ δ, which is necessary and
    /// sufficient for (ε, δ)-DP (Balle & Wang 2018, Theorem 8). Any ε > 0, and a smaller σ.
    Analytic,
}

/// σ of the classic Gaussian mechanism: Δ₂·√(2 ln(1.25/δ))/ε, for ε ∈ (0, 1), δ ∈ (0, 1).
pub fn classic_gaussian_sigma(
    epsilon: f64,
    delta: f64,
    l2_sensitivity: f64,
) -> Result<f64, PrivacyError> {
    if !(epsilon > 0.0 && epsilon < 1.0) {
        return Err(PrivacyError::OutOfRange {
            name: "epsilon",
            value: epsilon,
            expected: "in (0, 1) for the classic Gaussian bound (use the analytic calibration)",
        });
    }
    open_unit("delta", delta)?;
    positive("l2_sensitivity", l2_sensitivity)?;
    positive(
        "sigma",
        l2_sensitivity * (2.0 * (1.25 / delta).ln()).sqrt() / epsilon,
    )
}

/// δ(σ) of the Gaussian mechanism at ε (Balle & Wang 2018, Theorem 8): the smallest δ for which
/// N(0, σ²) noise on a Δ₂-sensitive value is (ε, δ)-DP.
pub fn analytic_gaussian_delta(epsilon: f64, sigma: f64, l2_sensitivity: f64) -> f64 {
    let a = l2_sensitivity / (2.0 * sigma);
    let b = epsilon * sigma / l2_sensitivity;
    let delta = normal_cdf(a - b) - (epsilon + log_normal_cdf(-a - b)).exp();
    delta.clamp(0.0, 1.0)
}

/// The smallest σ (to a relative 1e-12, rounded up) with δ(σ) ≤ δ at ε, by bisection:
/// δ(σ) decreases from 1 (σ → 0) to 0 (σ → ∞).
pub fn analytic_gaussian_sigma(
    epsilon: f64,
    delta: f64,
    l2_sensitivity: f64,
) -> Result<f64, PrivacyError> {
    positive("epsilon", epsilon)?;
    open_unit("delta", delta)?;
    positive("l2_sensitivity", l2_sensitivity)?;
    let mut lo = 0.0;
    let mut hi = l2_sensitivity;
    while analytic_gaussian_delta(epsilon, hi, l2_sensitivity) > delta {
        lo = hi;
        hi *= 2.0;
        if hi > 1e300 {
            return Err(PrivacyError::Numerical("analytic Gaussian calibration"));
        }
    }
    for _ in 0..200 {
        if hi - lo <= 1e-12 * hi {
            break;
        }
        let mid = 0.5 * (lo + hi);
        if analytic_gaussian_delta(epsilon, mid, l2_sensitivity) > delta {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    Ok(hi)
}

/// Parameters of a Gaussian mechanism.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct GaussianConfig {
    /// ε > 0 (< 1 for [`GaussianCalibration::Classic`]).
    pub epsilon: f64,
    /// δ ∈ (0, 1).
    pub delta: f64,
    /// L2 sensitivity Δ₂ > 0 of the released value.
    pub l2_sensitivity: f64,
    /// Calibration rule.
    pub calibration: GaussianCalibration,
    /// Length of the released vector.
    pub dimension: usize,
}

impl GaussianConfig {
    /// Validates and calibrates σ.
    pub fn build(self) -> Result<GaussianMechanism, PrivacyError> {
        at_least_one("dimension", self.dimension)?;
        let sigma = match self.calibration {
            GaussianCalibration::Classic => {
                classic_gaussian_sigma(self.epsilon, self.delta, self.l2_sensitivity)?
            }
            GaussianCalibration::Analytic => {
                analytic_gaussian_sigma(self.epsilon, self.delta, self.l2_sensitivity)?
            }
        };
        Ok(GaussianMechanism {
            config: self,
            sigma,
        })
    }
}

/// A calibrated Gaussian mechanism.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GaussianMechanism {
    config: GaussianConfig,
    sigma: f64,
}

impl GaussianMechanism {
    /// The noise standard deviation σ.
    pub fn sigma(&self) -> f64 {
        self.sigma
    }
}

/// Adds N(0, std²) to every entry of `values` in place.
pub(crate) fn add_gaussian_noise(values: &mut [f32], std: f64, rng: &mut impl Rng) {
    for v in values.iter_mut() {
        *v = saturating_f32(f64::from(*v) + std * standard_normal(rng));
    }
}

impl Mechanism for GaussianMechanism {
    type Input = [f32];
    type Output = Vec<f32>;

    fn name(&self) -> &'static str {
        "gaussian"
    }

    fn parameters(&self) -> Vec<(String, f64)> {
        vec![
            ("sigma".into(), self.sigma),
            ("l2_sensitivity".into(), self.config.l2_sensitivity),
            ("dimension".into(), self.config.dimension as f64),
        ]
    }

    fn cost(&self) -> PrivacyCost {
        PrivacyCost {
            epsilon: self.config.epsilon,
            delta: self.config.delta,
        }
    }

    /// value + N(0, σ²I). The caller guarantees the sensitivity (e.g. by clipping).
    fn release(&self, value: &[f32], rng: &mut impl Rng) -> Result<Vec<f32>, PrivacyError> {
        if value.len() != self.config.dimension {
            return Err(PrivacyError::DimensionMismatch {
                name: "value",
                expected: self.config.dimension,
                found: value.len(),
            });
        }
        all_finite("value", value)?;
        let mut out = value.to_vec();
        add_gaussian_noise(&mut out, self.sigma, rng);
        Ok(out)
    }
}

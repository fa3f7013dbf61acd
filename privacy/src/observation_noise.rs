//! Local noise on observations (paper 004, "LDP – noise calibration"): each observation
//! dimension j gets N(0, (σ·IQR_j)²), with IQR_j the inter-quartile range of dimension j over
//! warm-up observations, so that dimensions with different ranges (CartPole's position against
//! its angular velocity) are perturbed in proportion.
//!
//! The slides write N(0₄, σ × IQR); this module reads σ × IQR as the *standard deviation*.
//! Observations have no sensitivity bound, so this is a heuristic without an (ε, δ) guarantee
//! (the slides' own "need for theoretical guarantees"); it therefore does not implement
//! [`crate::Mechanism`] and costs nothing in the ledger. A dimension whose warm-up IQR is 0
//! gets no noise.

use rand::Rng;

use crate::error::{all_finite, non_negative, saturating_f32};
use crate::randomness::standard_normal;
use crate::PrivacyError;

/// Inter-quartile range Q3 − Q1 of each dimension of `samples`, with the linearly interpolated
/// quantiles of numpy's default (Hyndman & Fan type 7).
pub fn interquartile_range(samples: &[Vec<f32>]) -> Result<Vec<f64>, PrivacyError> {
    let first = samples.first().ok_or(PrivacyError::Empty {
        name: "warm-up observations",
    })?;
    let dim = first.len();
    if dim == 0 {
        return Err(PrivacyError::Empty {
            name: "observation",
        });
    }
    for s in samples {
        if s.len() != dim {
            return Err(PrivacyError::DimensionMismatch {
                name: "warm-up observation",
                expected: dim,
                found: s.len(),
            });
        }
        all_finite("warm-up observation", s)?;
    }
    let mut column = vec![0.0f64; samples.len()];
    Ok((0..dim)
        .map(|j| {
            for (c, s) in column.iter_mut().zip(samples) {
                *c = f64::from(s[j]);
            }
            column.sort_by(f64::total_cmp);
            quantile_sorted(&column, 0.75) - quantile_sorted(&column, 0.25)
        })
        .collect())
}

fn quantile_sorted(sorted: &[f64], p: f64) -> f64 {
    let h = (sorted.len() - 1) as f64 * p;
    let lo = h.floor() as usize;
    let hi = h.ceil() as usize;
    sorted[lo] + (h - lo as f64) * (sorted[hi] - sorted[lo])
}

/// The noise scale σ of the observation noise.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ObservationNoiseConfig {
    /// σ ≥ 0: the noise standard deviation in units of each dimension's IQR.
    pub noise_scale: f64,
}

impl ObservationNoiseConfig {
    /// Validates σ and estimates the IQRs from warm-up observations.
    pub fn fit(self, warmup: &[Vec<f32>]) -> Result<ObservationNoise, PrivacyError> {
        non_negative("noise_scale", self.noise_scale)?;
        let iqr = interquartile_range(warmup)?;
        let std: Vec<f64> = iqr.iter().map(|&q| self.noise_scale * q).collect();
        if let Some(&s) = std.iter().find(|s| !s.is_finite()) {
            return Err(PrivacyError::OutOfRange {
                name: "noise_scale * iqr",
                value: s,
                expected: "finite",
            });
        }
        Ok(ObservationNoise { iqr, std })
    }
}

/// Fitted observation noise.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ObservationNoise {
    iqr: Vec<f64>,
    std: Vec<f64>,
}

impl ObservationNoise {
    /// The warm-up IQR per dimension.
    pub fn iqr(&self) -> &[f64] {
        &self.iqr
    }

    /// The noise standard deviation σ·IQR_j per dimension.
    pub fn std(&self) -> &[f64] {
        &self.std
    }

    /// Adds the noise to `observation` in place.
    pub fn perturb_in_place(
        &self,
        observation: &mut [f32],
        rng: &mut impl Rng,
    ) -> Result<(), PrivacyError> {
        if observation.len() != self.std.len() {
            return Err(PrivacyError::DimensionMismatch {
                name: "observation",
                expected: self.std.len(),
                found: observation.len(),
            });
        }
        all_finite("observation", observation)?;
        for (o, &s) in observation.iter_mut().zip(&self.std) {
            *o = saturating_f32(f64::from(*o) + s * standard_normal(rng));
        }
        Ok(())
    }

    /// A noisy copy of `observation`.
    pub fn perturb(
        &self,
        observation: &[f32],
        rng: &mut impl Rng,
    ) -> Result<Vec<f32>, PrivacyError> {
        let mut out = observation.to_vec();
        self.perturb_in_place(&mut out, rng)?;
        Ok(out)
    }
}

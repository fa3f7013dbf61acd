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
//!
//! [`BoundedObservationNoiseConfig`] is the version that has a guarantee: each dimension is
//! clipped to a public range [−b_j, b_j] first, so any two observations differ by at most
//! 2√d in the box-normalised coordinates o_j / b_j, and Gaussian noise calibrated to that
//! sensitivity makes every released observation an (ε, δ)-LDP Gaussian mechanism (Dwork &
//! Roth 2014, §3.5.3; exact ε by the accountant's q = 1 Gaussian), and an episode of at most T
//! observations their T-fold composition.

use rand::Rng;

use crate::error::{all_finite, non_negative, positive, saturating_f32};
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
        Ok(ObservationNoise {
            iqr,
            std,
            bounds: None,
        })
    }
}

/// Gaussian observation noise with a real (ε, δ) per observation: each dimension j is clipped
/// to the public range [−b_j, b_j] (`bounds`), then gets N(0, (z·Δ·b_j)²) with Δ = 2√d the
/// L2 diameter of the box in the normalised coordinates o_j / b_j and z the noise multiplier.
/// In those coordinates the release is the Gaussian mechanism with noise std z·Δ on a
/// Δ-sensitive value, for any two observations whatsoever (the local model's adjacency), so
/// its ε is the accountant's one Gaussian release at q = 1 and noise multiplier z. The bounds
/// must not come from the data: clipping to a public range is what makes Δ finite.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct BoundedObservationNoiseConfig {
    /// The public half-widths b_j > 0 of each dimension's range.
    pub bounds: Vec<f64>,
    /// z > 0: the noise standard deviation in units of the box's L2 diameter.
    pub noise_multiplier: f64,
}

impl BoundedObservationNoiseConfig {
    /// The L2 diameter 2√d of the clipped box in normalised coordinates: the sensitivity of
    /// one observation.
    pub fn sensitivity(&self) -> f64 {
        2.0 * (self.bounds.len() as f64).sqrt()
    }

    /// Validates the bounds and z, and builds the noise (std z·Δ·b_j per dimension).
    pub fn build(&self) -> Result<ObservationNoise, PrivacyError> {
        self.check()?;
        let scale = self.noise_multiplier * self.sensitivity();
        let std: Vec<f64> = self.bounds.iter().map(|&b| scale * b).collect();
        if let Some(&s) = std.iter().find(|s| !s.is_finite()) {
            return Err(PrivacyError::OutOfRange {
                name: "noise_multiplier * sensitivity * bound",
                value: s,
                expected: "finite",
            });
        }
        Ok(ObservationNoise {
            iqr: Vec::new(),
            std,
            bounds: Some(self.bounds.clone()),
        })
    }

    /// ε at δ of `observations` ≥ 1 such releases about one user (one observation: per
    /// observation; an episode's at most T observations: per episode), by `accountant`: the
    /// q = 1 Gaussian at noise multiplier z composed `observations` times (adaptively: each
    /// observation may depend on the earlier noisy ones through the policy). The PLD
    /// accountant's value is a pessimistic discretisation of the exact ε, RDP's an upper
    /// bound; neither is below it.
    pub fn epsilon(
        &self,
        observations: u64,
        delta: f64,
        accountant: crate::AccountantKind,
    ) -> Result<f64, PrivacyError> {
        self.check()?;
        if observations == 0 {
            return Err(PrivacyError::Empty {
                name: "observations",
            });
        }
        let z = self.noise_multiplier;
        match accountant {
            crate::AccountantKind::Rdp => crate::dp_sgd_epsilon(1.0, z, observations, delta),
            crate::AccountantKind::Pld => {
                crate::dp_sgd_epsilon_pld(crate::Adjacency::AddRemove, 1.0, z, observations, delta)
            }
        }
    }

    fn check(&self) -> Result<(), PrivacyError> {
        if self.bounds.is_empty() {
            return Err(PrivacyError::Empty { name: "bounds" });
        }
        for &b in &self.bounds {
            positive("bounds", b)?;
        }
        positive("noise_multiplier", self.noise_multiplier)?;
        Ok(())
    }
}

/// Fitted observation noise.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ObservationNoise {
    iqr: Vec<f64>,
    std: Vec<f64>,
    /// The public half-widths each dimension is clipped to before the noise
    /// ([`BoundedObservationNoiseConfig`]); `None` for the IQR noise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    bounds: Option<Vec<f64>>,
}

impl ObservationNoise {
    /// The warm-up IQR per dimension (empty for the bounded noise, which uses none).
    pub fn iqr(&self) -> &[f64] {
        &self.iqr
    }

    /// The public range [−b_j, b_j] each dimension is clipped to before the noise, if any.
    pub fn bounds(&self) -> Option<&[f64]> {
        self.bounds.as_deref()
    }

    /// The noise standard deviation σ·IQR_j per dimension.
    pub fn std(&self) -> &[f64] {
        &self.std
    }

    /// Clips `observation` to the bounds (if any) and adds the noise, in place.
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
        for (j, (o, &s)) in observation.iter_mut().zip(&self.std).enumerate() {
            let x = match &self.bounds {
                Some(b) => f64::from(*o).clamp(-b[j], b[j]),
                None => f64::from(*o),
            };
            *o = saturating_f32(x + s * standard_normal(rng));
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::AccountantKind;
    use rand::SeedableRng;

    fn cartpole_box(z: f64) -> BoundedObservationNoiseConfig {
        BoundedObservationNoiseConfig {
            bounds: vec![2.4, 3.0, 0.2095, 3.5],
            noise_multiplier: z,
        }
    }

    /// The exact ε of T Gaussian releases at noise multiplier z is that of one at z/√T (they
    /// compose to μ = √T/z Gaussian DP); solving Balle & Wang's δ(ε) = Φ(μ/2 − ε/μ) −
    /// e^ε Φ(−μ/2 − ε/μ) = 1e-5 by bisection (in Python, `math.erfc`) gives the values below.
    #[test]
    fn bounded_epsilon_matches_the_closed_form_gaussian() {
        for (z, t, exact) in [
            (1.0, 1, 4.377_178_095_681_224_5),
            (0.5, 1, 9.997_256_146_434_305),
            (2.0, 501, 109.509_456_930_822_1),
            (1.0, 501, 345.046_263_186_426_36),
        ] {
            let config = cartpole_box(z);
            let pld = config.epsilon(t, 1e-5, AccountantKind::Pld).unwrap();
            let rdp = config.epsilon(t, 1e-5, AccountantKind::Rdp).unwrap();
            // Never optimistic; the PLD within 1% of exact, RDP above it.
            assert!(
                pld >= exact && pld <= exact * 1.01,
                "z {z} T {t}: {pld} vs {exact}"
            );
            assert!(rdp >= exact, "z {z} T {t}: {rdp} vs {exact}");
            // The same through the crate's closed form: δ at the PLD's ε is at most 1e-5.
            let sigma = z / (t as f64).sqrt();
            assert!(crate::analytic_gaussian_delta(pld, sigma, 1.0) <= 1e-5 * 1.000_001);
        }
    }

    #[test]
    fn bounded_noise_clips_to_the_public_box_and_scales_by_its_diameter() {
        let config = cartpole_box(0.5);
        assert_eq!(config.sensitivity(), 4.0);
        let noise = config.build().unwrap();
        // std_j = z · 2√d · b_j.
        let expected = [4.8, 6.0, 0.419, 7.0];
        for (s, e) in noise.std().iter().zip(expected) {
            assert!((s - e).abs() < 1e-12, "{s} vs {e}");
        }
        assert_eq!(noise.bounds(), Some(&[2.4, 3.0, 0.2095, 3.5][..]));
        // With (almost) no noise the release is the clipped observation.
        let tiny = cartpole_box(1e-12).build().unwrap();
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(3);
        let out = tiny.perturb(&[100.0, -0.5, -7.0, 1.0], &mut rng).unwrap();
        let clipped = [2.4f32, -0.5, -0.2095, 1.0];
        for (o, c) in out.iter().zip(clipped) {
            assert!((o - c).abs() < 1e-6, "{out:?}");
        }
        for bad in [
            BoundedObservationNoiseConfig {
                bounds: vec![],
                noise_multiplier: 1.0,
            },
            BoundedObservationNoiseConfig {
                bounds: vec![1.0, 0.0],
                noise_multiplier: 1.0,
            },
            cartpole_box(0.0),
            BoundedObservationNoiseConfig {
                bounds: vec![1e300],
                noise_multiplier: 1e300,
            },
        ] {
            assert!(bad.build().is_err());
        }
        assert!(config.epsilon(0, 1e-5, AccountantKind::Rdp).is_err());
        assert!(cartpole_box(0.0)
            .epsilon(1, 1e-5, AccountantKind::Rdp)
            .is_err());
    }
}

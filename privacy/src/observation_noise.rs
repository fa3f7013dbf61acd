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
//!
//! # Floating point
//!
//! x + s·N(0, 1) in floating point is not the Gaussian mechanism bit for bit: the doubles that
//! turn into noise make outputs reachable from one observation unreachable from another
//! (Mironov 2012), so the bounded release's ε holds for the real-valued mechanism only.
//! [`ObservationNoise::perturb_exact_in_place`] (what [`RandomnessSource::Secure`] uses) releases
//! it on a grid instead: each normalised coordinate u_j = clamp(o_j / b_j, −1, 1) is rounded to
//! k_j = round(M·u_j) ∈ [−M, M], an integer, and released as b_j (k_j + Z_j) / M with
//! Z ~ N_ℤ(0, s²)^d drawn exactly ([`DiscreteGaussian`]). The box's corners ±1 are grid points,
//! so any two rounded observations differ by at most 2M per coordinate and Δ_ℤ = 2M√d in L2:
//! rounding adds nothing to the sensitivity. With s² = ⌈(z·Δ_ℤ)²⌉ the noise multiplier
//! s/Δ_ℤ is at least z, and for an integer shift the discrete Gaussian's Rényi divergence is at
//! most the continuous one's at every order (Canonne, Kamath & Steinke 2020, Theorem 4), so the
//! RDP accountant's ε at z holds for what is released. The PLD accountant's value is the
//! continuous Gaussian's privacy-loss distribution, taken for the discrete one without a proof
//! here. M is chosen so that s ≈ 1000: the grid is a thousandth of the noise's standard
//! deviation, and the released noise's scale is the continuous one's to within 10⁻⁶.
//!
//! [`RandomnessSource::Secure`]: crate::RandomnessSource::Secure

use rand::Rng;

use crate::error::{all_finite, non_negative, positive, saturating_f32};
use crate::randomness::standard_normal;
use crate::{DiscreteGaussian, PrivacyError};

/// The exact release's noise standard deviation in grid units (module docs): the grid step
/// is this fraction of the noise.
const GRID_NOISE_STEPS: f64 = 1000.0;

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
            grid: None,
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
        // The grid (module docs): M steps per bound, s² = ⌈(z·2M√d)²⌉ ≈ GRID_NOISE_STEPS².
        let steps = (GRID_NOISE_STEPS / scale).ceil().max(1.0);
        let grid_sensitivity = steps * self.sensitivity();
        let variance = (self.noise_multiplier * grid_sensitivity).powi(2).ceil();
        let grid = (steps <= MAX_GRID_STEPS).then(|| {
            DiscreteGaussian::new(variance as u64).map(|noise| ObservationGrid {
                steps: steps as u64,
                variance: noise.variance(),
            })
        });
        Ok(ObservationNoise {
            iqr: Vec::new(),
            std,
            bounds: Some(self.bounds.clone()),
            grid: grid.transpose()?,
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

/// The most grid steps per bound: beyond, z·2√d < 10⁻⁹ and the noise is below any useful
/// resolution (the exact release is then unavailable and says so).
const MAX_GRID_STEPS: f64 = 1e12;

/// The grid of the exact bounded release (module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
struct ObservationGrid {
    /// M: grid points per bound.
    steps: u64,
    /// s²: the discrete Gaussian's variance parameter in grid units.
    variance: u64,
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
    /// The exact release's grid, for the bounded noise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    grid: Option<ObservationGrid>,
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
        self.check_observation(observation)?;
        for (j, (o, &s)) in observation.iter_mut().zip(&self.std).enumerate() {
            let x = match &self.bounds {
                Some(b) => f64::from(*o).clamp(-b[j], b[j]),
                None => f64::from(*o),
            };
            *o = saturating_f32(x + s * standard_normal(rng));
        }
        Ok(())
    }

    /// The bounded release on a grid with exact discrete Gaussian noise (module docs,
    /// "Floating point"), in place: the floating-point-safe form of
    /// [`ObservationNoise::perturb_in_place`], accounted at the same noise multiplier. Only
    /// the bounded noise has it (the IQR noise has no guarantee to keep).
    pub fn perturb_exact_in_place<R: Rng + ?Sized>(
        &self,
        observation: &mut [f32],
        rng: &mut R,
    ) -> Result<(), PrivacyError> {
        let (Some(bounds), Some(grid)) = (&self.bounds, self.grid) else {
            return Err(PrivacyError::Inconsistent(
                "the exact (grid) release needs the bounded observation noise \
                 (BoundedObservationNoiseConfig) with z·2√d ≥ 1e-9",
            ));
        };
        self.check_observation(observation)?;
        let noise = DiscreteGaussian::new(grid.variance)?;
        let steps = grid.steps as f64;
        let draws = noise.sample_n(rng, observation.len());
        for ((o, &b), z) in observation.iter_mut().zip(bounds).zip(draws) {
            let k = (steps * (f64::from(*o) / b).clamp(-1.0, 1.0)).round();
            *o = saturating_f32(b * (k + z as f64) / steps);
        }
        Ok(())
    }

    /// An observation to perturb: one entry per dimension (the bounds have as many as the
    /// standard deviations), all finite.
    fn check_observation(&self, observation: &[f32]) -> Result<(), PrivacyError> {
        if observation.len() != self.std.len() {
            return Err(PrivacyError::DimensionMismatch {
                name: "observation",
                expected: self.std.len(),
                found: observation.len(),
            });
        }
        all_finite("observation", observation)
    }

    /// Whether [`ObservationNoise::perturb_exact_in_place`] is available (the bounded noise).
    pub fn has_exact_release(&self) -> bool {
        self.grid.is_some() && self.bounds.is_some()
    }

    /// M, the exact release's grid points per bound (its outputs are b_j·n/M for integers n),
    /// where it is available.
    pub fn grid_steps(&self) -> Option<u64> {
        self.grid.map(|g| g.steps)
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

    #[test]
    fn the_exact_release_lies_on_the_grid_with_the_accounted_noise() {
        use rand::SeedableRng;
        for (z, d) in [(0.01, 4usize), (0.3, 4), (1.0, 1), (4.0, 7), (1e-6, 2)] {
            let config = BoundedObservationNoiseConfig {
                bounds: (1..=d).map(|j| 0.5 * j as f64).collect(),
                noise_multiplier: z,
            };
            let noise = config.build().unwrap();
            let grid = noise.grid.unwrap();
            // The noise multiplier in grid units is at least z (so ε at z is conservative)
            // and within 10⁻⁶ of it; the noise is a thousand grid steps wide, plus at most one
            // step of M's rounding up (z·2√d in grid units).
            let effective =
                (grid.variance as f64).sqrt() / (2.0 * grid.steps as f64 * (d as f64).sqrt());
            assert!(
                effective >= z && effective <= z * (1.0 + 1e-6),
                "z = {z}: {effective}"
            );
            let scale = z * 2.0 * (d as f64).sqrt();
            let sigma = (grid.variance as f64).sqrt();
            assert!((1000.0..=1000.0 + scale + 1.0).contains(&sigma), "{grid:?}");
        }
        let config = cartpole_box(0.5);
        let noise = config.build().unwrap();
        let steps = noise.grid.unwrap().steps as f64;
        let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(3);
        let n = 20_000;
        let mut sums = [0.0f64; 4];
        let mut squares = [0.0f64; 4];
        for _ in 0..n {
            // Beyond the box on every side: clipped to ±b, the box's corner.
            let mut o = [9.0f32, -9.0, 9.0, -9.0];
            noise.perturb_exact_in_place(&mut o, &mut rng).unwrap();
            for (j, (&x, &b)) in o.iter().zip(&config.bounds).enumerate() {
                // Every output is b·n/M for an integer n (up to f32 rounding): the lattice
                // is the same from every input, so no output is reachable from one
                // observation and not from another.
                let units = f64::from(x) / b * steps;
                assert!((units - units.round()).abs() < 1e-3 * units.abs().max(1.0));
                let noise_units = units.round() - if j % 2 == 0 { steps } else { -steps };
                sums[j] += noise_units;
                squares[j] += noise_units * noise_units;
            }
        }
        // The noise in real units: mean 0, std z·2√d·b_j (here the continuous release's std).
        for j in 0..4 {
            let mean = sums[j] / n as f64;
            let std = (squares[j] / n as f64 - mean * mean).sqrt() / steps * config.bounds[j];
            let expected = noise.std()[j];
            assert!(mean.abs() < 4.0 * 1000.0 / (n as f64).sqrt(), "{mean}");
            assert!((std / expected - 1.0).abs() < 0.02, "{std} vs {expected}");
        }
        // The IQR noise has no exact release, and says so.
        let iqr = ObservationNoiseConfig { noise_scale: 0.1 }
            .fit(&[vec![0.0, 1.0], vec![1.0, 3.0]])
            .unwrap();
        assert!(!iqr.has_exact_release());
        assert!(matches!(
            iqr.perturb_exact_in_place(&mut [0.0, 0.0], &mut rng),
            Err(PrivacyError::Inconsistent(_))
        ));
        assert!(noise.has_exact_release());
    }
}

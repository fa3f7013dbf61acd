//! Projected random sign (PRS) mechanism for gradient submissions (paper 003, Algorithm 3):
//! project the gradient to d̂ dimensions with an Achlioptas matrix M (eq. 5), clip each
//! coordinate to [−C, C] (eq. 23), randomize each to ±C by the bit flip (eq. 24, the
//! extension of eq. 4) with ε/d̂ per coordinate, and report Mᵀũ. ε-LDP per submission
//! (Lemma 3: d̂ coordinates, each e^{ε/d̂}).

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::error::{all_finite, at_least_one, positive, saturating_f32};
use crate::mechanism::{Mechanism, PrivacyCost};
use crate::randomness::open01;
use crate::PrivacyError;

/// The denominator of the rational ε̃ ≤ ε of [`BitFlip::flip_exact`].
const EXACT_DENOMINATOR: u128 = 1 << 32;

/// The bit flip of eq. 4 (Ding et al. 2017/2018): x ∈ [−1, 1] ↦ +1 with probability
/// 1/(e^ε + 1) + (x + 1)/2 · (e^ε − 1)/(e^ε + 1), else −1. ε-LDP: the probability of either
/// output lies in [1/(e^ε + 1), e^ε/(e^ε + 1)], whose ratio is e^ε.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BitFlip {
    epsilon: f64,
    /// 1/(e^ε + 1).
    floor: f64,
    /// (e^ε − 1)/(e^ε + 1) = tanh(ε/2).
    slope: f64,
}

impl BitFlip {
    /// ε > 0.
    pub fn new(epsilon: f64) -> Result<Self, PrivacyError> {
        positive("epsilon", epsilon)?;
        Ok(Self {
            epsilon,
            floor: 1.0 / (epsilon.exp() + 1.0),
            slope: (0.5 * epsilon).tanh(),
        })
    }

    /// ε of one flip.
    pub fn epsilon(&self) -> f64 {
        self.epsilon
    }

    /// P(+1 | x) of eq. 4, with x clamped to [−1, 1].
    pub fn probability_plus(&self, x: f64) -> f64 {
        self.floor + 0.5 * (x.clamp(-1.0, 1.0) + 1.0) * self.slope
    }

    /// One flip: +1 or −1. `x` must be finite (the callers validate); it is clamped to [−1, 1].
    pub fn flip(&self, x: f64, rng: &mut impl Rng) -> f64 {
        if open01(rng) < self.probability_plus(x) {
            1.0
        } else {
            -1.0
        }
    }

    /// The same flip drawn exactly, with no floating-point caveat (module docs of `discrete`):
    /// a bit b = +1 with probability (x + 1)/2 (exact for any double,
    /// [`crate::bernoulli_double`]), then randomised response keeping b with probability
    /// e^{ε̃}/(1 + e^{ε̃}) ([`crate::flip_with_odds_exp_minus`]), where ε̃ = ⌊ε·2³²⌋/2³² ≤ ε is
    /// ε rounded down to a rational. P(+1 | x) = 1/(e^{ε̃} + 1) + (x + 1)/2 · tanh(ε̃/2), eq. 4
    /// at ε̃: the output is randomised response of *some* bit, so its likelihood ratio is at
    /// most e^{ε̃} ≤ e^ε for every pair of inputs, whatever the rounding of (x + 1)/2 — where
    /// [`BitFlip::flip`]'s comparison of a uniform double with a rounded probability makes
    /// every ε ≥ 37.4 an ε of ∞ (its smallest uniform is 2⁻⁵⁴). The noise is that of ε̃, within
    /// 2⁻³² of ε.
    pub fn flip_exact(&self, x: f64, rng: &mut impl Rng) -> f64 {
        let bit = crate::bernoulli_double(rng, 0.5 * (x.clamp(-1.0, 1.0) + 1.0));
        let numerator = (self.epsilon * EXACT_DENOMINATOR as f64).floor() as u128;
        let flipped = crate::flip_with_odds_exp_minus(rng, numerator, EXACT_DENOMINATOR);
        if bit != flipped {
            1.0
        } else {
            -1.0
        }
    }

    /// E(flip(x)) = x · tanh(ε/2) for x ∈ [−1, 1]; dividing by this factor unbiases the flip.
    pub fn expectation_factor(&self) -> f64 {
        self.slope
    }
}

/// The Achlioptas random projection of eq. 5: m_ij = ±√3 with probability 1/6 each, 0 with
/// probability 2/3, so E(m_ij) = 0, E(m_ij²) = 1 and E(MᵀM) = d̂·I.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProjectionMatrix {
    rows: usize,
    cols: usize,
    /// Entries as −1, 0, +1 (times √3).
    signs: Vec<i8>,
}

impl ProjectionMatrix {
    /// A d̂ × d matrix drawn from ChaCha8 seeded with `seed` (the same seed gives the same
    /// matrix, so it can be regenerated instead of stored or sent).
    pub fn achlioptas(rows: usize, cols: usize, seed: u64) -> Result<Self, PrivacyError> {
        at_least_one("rows", rows)?;
        at_least_one("cols", cols)?;
        if rows
            .checked_mul(cols)
            .is_none_or(|n| n > isize::MAX as usize)
        {
            return Err(PrivacyError::OutOfRange {
                name: "projection rows * cols",
                value: rows as f64 * cols as f64,
                expected: "<= isize::MAX",
            });
        }
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let signs = (0..rows * cols)
            .map(|_| match rng.random_range(0u8..6) {
                0 => -1,
                5 => 1,
                _ => 0,
            })
            .collect();
        Ok(Self { rows, cols, signs })
    }

    /// d̂.
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// d.
    pub fn cols(&self) -> usize {
        self.cols
    }

    /// The entry m_ij (0 or ±√3).
    pub fn entry(&self, i: usize, j: usize) -> f64 {
        f64::from(self.signs[i * self.cols + j]) * 3f64.sqrt()
    }

    /// u = M g.
    pub fn project(&self, g: &[f32]) -> Vec<f64> {
        let sqrt3 = 3f64.sqrt();
        self.signs
            .chunks_exact(self.cols)
            .map(|row| {
                sqrt3
                    * row
                        .iter()
                        .zip(g)
                        .map(|(&s, &x)| f64::from(s) * f64::from(x))
                        .sum::<f64>()
            })
            .collect()
    }

    /// Mᵀ u.
    pub fn back_project(&self, u: &[f64]) -> Vec<f64> {
        let sqrt3 = 3f64.sqrt();
        let mut out = vec![0.0; self.cols];
        for (row, &ui) in self.signs.chunks_exact(self.cols).zip(u) {
            for (o, &s) in out.iter_mut().zip(row) {
                *o += f64::from(s) * ui;
            }
        }
        for o in out.iter_mut() {
            *o *= sqrt3;
        }
        out
    }
}

/// The reduced dimension used by paper 003 (Section 4, after Wang et al. 2019):
/// d̂ = max(1, min(d, ⌊ε/2.5⌋)), with ε the budget of one submission.
pub fn default_reduced_dimension(epsilon: f64, dimension: usize) -> usize {
    // `as usize` saturates (NaN → 0), and the clamp keeps d̂ in [1, max(d, 1)].
    ((epsilon / 2.5).floor() as usize).clamp(1, dimension.max(1))
}

/// Parameters of the PRS mechanism.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct PrsConfig {
    /// The agent's total budget ε > 0 over all its submissions.
    pub epsilon: f64,
    /// Element-wise clipping bound C > 0 (eq. 23). The paper uses 1.
    pub clip: f64,
    /// Number of submissions T ≥ 1; each spends ε/T (Section 3.2.1).
    pub rounds: usize,
    /// Gradient length d ≥ 1.
    pub dimension: usize,
    /// d̂ ∈ [1, d]; `None` for [`default_reduced_dimension`] of the per-submission ε.
    pub reduced_dimension: Option<usize>,
    /// Report (e^{ε'} + 1)/((e^{ε'} − 1)·d̂) · Mᵀũ, ε' = ε/(T d̂), instead of Mᵀũ.
    ///
    /// E(ũ_i | ū_i) = ū_i·tanh(ε'/2) and E(MᵀM) = d̂·I, so this rescaling makes the report an
    /// unbiased estimate of g whenever no coordinate of Mg is clipped. Post-processing: the
    /// privacy is unchanged. Paper 003 reports Mᵀũ itself (`false`).
    pub unbiased: bool,
}

impl PrsConfig {
    /// Validates the parameters and fixes d̂.
    pub fn build(self) -> Result<ProjectedRandomSign, PrivacyError> {
        positive("epsilon", self.epsilon)?;
        positive("clip", self.clip)?;
        at_least_one("rounds", self.rounds)?;
        at_least_one("dimension", self.dimension)?;
        let epsilon_per_round = self.epsilon / self.rounds as f64;
        let reduced = match self.reduced_dimension {
            None => default_reduced_dimension(epsilon_per_round, self.dimension),
            Some(r) if (1..=self.dimension).contains(&r) => r,
            Some(r) => {
                return Err(PrivacyError::OutOfRange {
                    name: "reduced_dimension",
                    value: r as f64,
                    expected: "in [1, dimension]",
                })
            }
        };
        // eq. 24 with ε/d̂ per coordinate. Its first term reads 1/(e^{ε/k} + 1): a typo for ε/d̂,
        // since only then are P(+C | ū = ±C) = e^{±ε/d̂}/(e^{ε/d̂} + 1)-like with ratio e^{ε/d̂},
        // the per-coordinate bound that Lemma 3's proof multiplies d̂ times.
        let flip = BitFlip::new(epsilon_per_round / reduced as f64)?;
        let output_scale = if self.unbiased {
            1.0 / (flip.expectation_factor() * reduced as f64)
        } else {
            1.0
        };
        // Largest |output| entry: √3·d̂·C·scale; it must be finite for the outputs to be.
        positive(
            "clip * reduced_dimension * output scale",
            3f64.sqrt() * reduced as f64 * self.clip * output_scale,
        )?;
        Ok(ProjectedRandomSign {
            config: self,
            epsilon_per_round,
            reduced,
            flip,
            output_scale,
            exact: false,
        })
    }
}

/// The validated PRS mechanism.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ProjectedRandomSign {
    config: PrsConfig,
    epsilon_per_round: f64,
    reduced: usize,
    flip: BitFlip,
    output_scale: f64,
    /// Flip by [`BitFlip::flip_exact`] (floating-point safe) instead of [`BitFlip::flip`].
    exact: bool,
}

impl ProjectedRandomSign {
    /// The same mechanism drawing every flip exactly ([`BitFlip::flip_exact`]): no output is
    /// reachable from one gradient and not from another, whatever the floating point. Its
    /// seeded outputs differ from the default's (other draws), so it is opt-in.
    pub fn exact(mut self) -> Self {
        self.exact = true;
        self
    }

    /// Whether flips are drawn exactly.
    pub fn is_exact(&self) -> bool {
        self.exact
    }

    /// Gradient length d.
    pub fn dimension(&self) -> usize {
        self.config.dimension
    }

    /// d̂.
    pub fn reduced_dimension(&self) -> usize {
        self.reduced
    }

    /// The per-coordinate bit flip (ε/(T d̂)).
    pub fn bit_flip(&self) -> BitFlip {
        self.flip
    }

    /// Clip (eq. 23) and flip (eq. 24) a projected vector u ∈ ℝ^{d̂}: ũ ∈ {−C, +C}^{d̂}.
    pub fn randomize_projection(&self, u: &[f64], rng: &mut impl Rng) -> Vec<f64> {
        let c = self.config.clip;
        let flip = |x: f64, rng: &mut _| {
            if self.exact {
                self.flip.flip_exact(x, rng)
            } else {
                self.flip.flip(x, rng)
            }
        };
        u.iter()
            .map(|&ui| c * flip(ui.clamp(-c, c) / c, &mut *rng))
            .collect()
    }

    /// One release with a given projection (whose shape must be d̂ × d).
    pub fn release_with_projection(
        &self,
        gradient: &[f32],
        projection: &ProjectionMatrix,
        rng: &mut impl Rng,
    ) -> Result<Vec<f32>, PrivacyError> {
        if gradient.len() != self.config.dimension {
            return Err(PrivacyError::DimensionMismatch {
                name: "gradient",
                expected: self.config.dimension,
                found: gradient.len(),
            });
        }
        if projection.rows != self.reduced || projection.cols != self.config.dimension {
            return Err(PrivacyError::DimensionMismatch {
                name: "projection",
                expected: self.reduced * self.config.dimension,
                found: projection.rows * projection.cols,
            });
        }
        all_finite("gradient", gradient)?;
        let u = projection.project(gradient);
        let noisy = self.randomize_projection(&u, rng);
        Ok(projection
            .back_project(&noisy)
            .iter()
            .map(|&x| saturating_f32(x * self.output_scale))
            .collect())
    }
}

impl Mechanism for ProjectedRandomSign {
    type Input = [f32];
    type Output = Vec<f32>;

    fn name(&self) -> &'static str {
        "prs"
    }

    fn parameters(&self) -> Vec<(String, f64)> {
        vec![
            ("epsilon_total".into(), self.config.epsilon),
            ("rounds".into(), self.config.rounds as f64),
            ("clip".into(), self.config.clip),
            ("dimension".into(), self.config.dimension as f64),
            ("reduced_dimension".into(), self.reduced as f64),
            ("unbiased".into(), f64::from(u8::from(self.config.unbiased))),
        ]
    }

    fn cost(&self) -> PrivacyCost {
        PrivacyCost {
            epsilon: self.epsilon_per_round,
            delta: 0.0,
        }
    }

    /// Algorithm 3 with a fresh projection M drawn from a seed taken from `rng`.
    fn release(&self, gradient: &[f32], rng: &mut impl Rng) -> Result<Vec<f32>, PrivacyError> {
        let projection =
            ProjectionMatrix::achlioptas(self.reduced, self.config.dimension, rng.next_u64())?;
        self.release_with_projection(gradient, &projection, rng)
    }
}

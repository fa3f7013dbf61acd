//! Laplace mechanism for gradient submissions (paper 003, Algorithm 2, eq. 19–21): clip the
//! gradient to L1 norm C/2, so any two clipped gradients are within C in L1 (eq. 20), and add
//! i.i.d. Laplace noise of scale C/ε (density ε/(2C) · exp(−ε|z|/C), eq. 21). ε-LDP per
//! submission (Lemma 2).

use rand::Rng;

use crate::error::{all_finite, at_least_one, positive, saturating_f32};
use crate::mechanism::{Mechanism, PrivacyCost};
use crate::randomness::laplace;
use crate::{DiscreteLaplace, PrivacyError};

/// Parameters of the Laplace gradient mechanism.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct LaplaceConfig {
    /// The agent's total budget ε > 0 over all its submissions.
    pub epsilon: f64,
    /// Clipping size C > 0: gradients are clipped to ‖g‖₁ ≤ C/2 (eq. 19). The paper uses 0.01.
    pub clip: f64,
    /// Number of submissions T ≥ 1; each spends ε/T (Section 3.2.1, sequential composition).
    pub rounds: usize,
    /// Gradient length d ≥ 1.
    pub dimension: usize,
}

impl LaplaceConfig {
    /// Validates the parameters.
    pub fn build(self) -> Result<LaplaceGradient, PrivacyError> {
        positive("epsilon", self.epsilon)?;
        positive("clip", self.clip)?;
        at_least_one("rounds", self.rounds)?;
        at_least_one("dimension", self.dimension)?;
        let epsilon_per_round = self.epsilon / self.rounds as f64;
        let scale = positive(
            "laplace scale clip * rounds / epsilon",
            self.clip / epsilon_per_round,
        )?;
        Ok(LaplaceGradient {
            config: self,
            epsilon_per_round,
            scale,
        })
    }
}

/// The validated Laplace gradient mechanism.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LaplaceGradient {
    config: LaplaceConfig,
    epsilon_per_round: f64,
    scale: f64,
}

/// ḡ = g / max(1, ‖g‖₁ / bound) (eq. 19 with bound = C/2), into `out`.
pub fn clip_l1(g: &[f32], bound: f64, out: &mut [f64]) {
    let norm: f64 = g.iter().map(|&x| f64::from(x).abs()).sum();
    let factor = 1.0 / (norm / bound).max(1.0);
    for (o, &x) in out.iter_mut().zip(g) {
        *o = f64::from(x) * factor;
    }
}

impl LaplaceGradient {
    /// Laplace scale C/(ε/T).
    pub fn scale(&self) -> f64 {
        self.scale
    }

    /// ε spent by one submission, ε/T.
    pub fn epsilon_per_round(&self) -> f64 {
        self.epsilon_per_round
    }

    /// Gradient length d.
    pub fn dimension(&self) -> usize {
        self.config.dimension
    }

    /// The exact, floating-point-safe version of this mechanism: the clipped gradient rounded
    /// to a grid, integer discrete Laplace noise in grid units ([`DiscreteLaplace`]), at an ε per
    /// submission of at most [`Self::epsilon_per_round`] (module docs of `discrete`).
    ///
    /// The grid step is γ = C/(`grid_per_clip`·d): rounding each coordinate moves it by at
    /// most γ/2, so two clipped gradients within C in L1 (eq. 20) are within
    /// Δ = ⌈C/γ⌉ + d grid units after rounding (a relative 1e-9 margin covers the floating
    /// point of the division), and noise of integer scale t = ⌈Δ/(ε/T)⌉ makes each submission
    /// exactly (Δ/t)-LDP ≤ ε/T. The noise is (1 + 1/`grid_per_clip`) times the continuous
    /// one's at most, plus the rounding of t: `grid_per_clip` = 1000 costs 0.1 %.
    pub fn on_grid(&self, grid_per_clip: u32) -> Result<GridLaplaceGradient, PrivacyError> {
        if grid_per_clip == 0 {
            return Err(PrivacyError::OutOfRange {
                name: "grid_per_clip",
                value: 0.0,
                expected: ">= 1",
            });
        }
        let d = self.config.dimension as f64;
        let step = self.config.clip / (f64::from(grid_per_clip) * d);
        let sensitivity = (self.config.clip / step * (1.0 + 1e-9)).ceil() + d;
        let scale = (sensitivity / self.epsilon_per_round).ceil();
        if !(step > 0.0 && step.is_finite() && scale >= 1.0 && scale < 2f64.powi(62)) {
            return Err(PrivacyError::OutOfRange {
                name: "grid Laplace scale (clip, dimension, epsilon per round)",
                value: scale,
                expected: "a grid step > 0 and an integer noise scale in [1, 2^62)",
            });
        }
        Ok(GridLaplaceGradient {
            mechanism: *self,
            step,
            sensitivity: sensitivity as u64,
            noise: DiscreteLaplace::new(scale as u64)?,
        })
    }
}

/// The Laplace gradient mechanism on a grid with exact discrete noise
/// ([`LaplaceGradient::on_grid`]): no output is reachable from one gradient and not from
/// another, whatever the floating point.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GridLaplaceGradient {
    mechanism: LaplaceGradient,
    step: f64,
    sensitivity: u64,
    noise: DiscreteLaplace,
}

impl GridLaplaceGradient {
    /// The grid step γ.
    pub fn step(&self) -> f64 {
        self.step
    }

    /// The L1 sensitivity Δ of the rounded, clipped gradient, in grid units.
    pub fn sensitivity(&self) -> u64 {
        self.sensitivity
    }

    /// The integer noise scale t, in grid units.
    pub fn noise_scale(&self) -> u64 {
        self.noise.scale()
    }

    /// The grid point of each coordinate: the clipped gradient divided by γ and rounded to the
    /// nearest integer (the query whose sensitivity is Δ).
    pub fn quantise(&self, gradient: &[f32]) -> Result<Vec<i64>, PrivacyError> {
        let config = self.mechanism.config;
        if gradient.len() != config.dimension {
            return Err(PrivacyError::DimensionMismatch {
                name: "gradient",
                expected: config.dimension,
                found: gradient.len(),
            });
        }
        all_finite("gradient", gradient)?;
        let mut clipped = vec![0.0; gradient.len()];
        clip_l1(gradient, 0.5 * config.clip, &mut clipped);
        Ok(clipped
            .iter()
            .map(|&x| (x / self.step).round() as i64)
            .collect())
    }
}

impl Mechanism for GridLaplaceGradient {
    type Input = [f32];
    type Output = Vec<f32>;

    fn name(&self) -> &'static str {
        "laplace-grid"
    }

    fn parameters(&self) -> Vec<(String, f64)> {
        let mut parameters = self.mechanism.parameters();
        parameters.extend([
            ("grid_step".into(), self.step),
            ("grid_sensitivity".into(), self.sensitivity as f64),
            ("grid_noise_scale".into(), self.noise.scale() as f64),
        ]);
        parameters
    }

    /// Δ/t per submission, exactly (≤ ε/T).
    fn cost(&self) -> PrivacyCost {
        PrivacyCost {
            epsilon: self.sensitivity as f64 / self.noise.scale() as f64,
            delta: 0.0,
        }
    }

    /// γ·(⌊ḡ/γ⌉ + z), z_i ~ discrete Laplace(t) i.i.d.: the integer is the release, its
    /// scaling to f32 post-processing.
    fn release(&self, gradient: &[f32], rng: &mut impl Rng) -> Result<Vec<f32>, PrivacyError> {
        Ok(self
            .quantise(gradient)?
            .into_iter()
            .map(|k| saturating_f32((k.saturating_add(self.noise.sample(rng))) as f64 * self.step))
            .collect())
    }
}

impl Mechanism for LaplaceGradient {
    type Input = [f32];
    type Output = Vec<f32>;

    fn name(&self) -> &'static str {
        "laplace"
    }

    fn parameters(&self) -> Vec<(String, f64)> {
        vec![
            ("epsilon_total".into(), self.config.epsilon),
            ("rounds".into(), self.config.rounds as f64),
            ("clip".into(), self.config.clip),
            ("dimension".into(), self.config.dimension as f64),
        ]
    }

    fn cost(&self) -> PrivacyCost {
        PrivacyCost {
            epsilon: self.epsilon_per_round,
            delta: 0.0,
        }
    }

    /// ḡ + z, z_i ~ Laplace(C/ε) i.i.d. (Algorithm 2).
    fn release(&self, gradient: &[f32], rng: &mut impl Rng) -> Result<Vec<f32>, PrivacyError> {
        if gradient.len() != self.config.dimension {
            return Err(PrivacyError::DimensionMismatch {
                name: "gradient",
                expected: self.config.dimension,
                found: gradient.len(),
            });
        }
        all_finite("gradient", gradient)?;
        let mut clipped = vec![0.0; gradient.len()];
        clip_l1(gradient, 0.5 * self.config.clip, &mut clipped);
        Ok(clipped
            .iter()
            .map(|&x| saturating_f32(x + laplace(rng, self.scale)))
            .collect())
    }
}

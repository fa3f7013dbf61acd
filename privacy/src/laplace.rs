//! Laplace mechanism for gradient submissions (paper 003, Algorithm 2, eq. 19–21): clip the
//! gradient to L1 norm C/2, so any two clipped gradients are within C in L1 (eq. 20), and add
//! i.i.d. Laplace noise of scale C/ε (density ε/(2C) · exp(−ε|z|/C), eq. 21). ε-LDP per
//! submission (Lemma 2).

use rand::Rng;

use crate::error::{all_finite, at_least_one, positive, saturating_f32};
use crate::mechanism::{Mechanism, PrivacyCost};
use crate::randomness::laplace;
use crate::PrivacyError;

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

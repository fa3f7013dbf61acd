//! White-box DP-SGD audit with Dirac gradient canaries (Nasr et al. 2023, "Tight Auditing of
//! Differentially Private Machine Learning", Section 4: the adversary inserts gradients and
//! sees every noisy update).
//!
//! Threat model: the adversary sees every noisy update of a run, as a federated-learning server
//! or any party reading the released gradients does (the setting of privrl's leakage suite).
//! Each run has m records, one canary per parameter: record i's gradient is 2C·eᵢ if canary i
//! is in the data (each independently with probability ½, drawn before the run) and 0
//! otherwise. A zero gradient changes nothing in the release, so in/out is exactly add/remove
//! adjacency of one record, the engine's default. The gradient's norm 2C makes the clip do
//! work: a missing or wrong clip would show as a lower bound above the accountant's ε.
//!
//! The records go through privrl's one clip → sum → noise path, `PrivacyEngine::
//! private_gradient` with [`GivenGradients`], at the engine's Poisson rate q: nothing here adds
//! noise. Canaries lie along different coordinates, and the noise is isotropic, so the m
//! canaries of a run are m independent trials.
//!
//! Score of canary i: the log-likelihood ratio of its coordinate over the T updates. With
//! yₜ = (update)ᵢ·qN/(σC) = bₜ/σ + zₜ (bₜ = 1 when the canary was sampled), the in-world
//! density over the out-world one is 1 − q + q·exp(yₜ/σ − 1/(2σ²)) per step; the score sums
//! their logarithms (for q = 1, a multiple of Σₜ yₜ: the Neyman–Pearson test).

use anyhow::Result;
use burn::backend::Autodiff;
use burn::nn::{Linear, LinearConfig};
use burn::tensor::backend::{AutodiffBackend, Backend};
use privrl_agents::autodiff;
use privrl_agents::dp::GivenGradients;
use privrl_agents::{NoiseCalibration, PoissonSampling, PrivacyEngine, PrivacyEngineConfig};
use privrl_privacy::{one_run_guesses, AccountantKind, OneRunGuesses, RandomnessSource};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::CanaryRuns;
use crate::backend::BackendTask;

/// Clip C of the engine (the canaries' gradients have norm 2C).
pub(super) const CLIP: f64 = 1.0;

/// Share of a run's canaries the one-run auditor guesses "in" (highest scores) and, again,
/// "out" (lowest), fixed before any run; it abstains on the rest.
pub(super) const ONE_RUN_GUESS_SHARE: f64 = 0.05;

/// One DP-SGD audit: `runs` runs of `steps` steps with `canaries` canaries each.
#[derive(Debug, Clone, Copy)]
pub(super) struct DpSgdAudit {
    pub(super) noise_multiplier: f64,
    pub(super) sample_rate: f64,
    pub(super) steps: u64,
    pub(super) canaries: usize,
    pub(super) runs: usize,
    pub(super) delta: f64,
    pub(super) seed: u64,
    /// Noise from the operating system's generator, drawn on a grid (within total variation
    /// 10⁻⁷⁰ a coordinate of the exact discrete Gaussian)
    /// ([`RandomnessSource::Secure`]); the canaries' inclusion stays seeded.
    pub(super) secure: bool,
}

/// What the runs produced.
#[derive(Debug, Clone)]
pub(super) struct DpSgdScores {
    /// Every canary's score, and the accountants' ε of one run ([`CanaryRuns`]), read off the
    /// engine's own release schedule.
    pub(super) runs: CanaryRuns,
    /// The one-run auditor's guesses, pooled over the runs (each canary belongs to one run, so
    /// the pooled canaries are still one record each: parallel composition).
    pub(super) one_run: OneRunGuesses,
}

impl BackendTask for DpSgdAudit {
    type Output = DpSgdScores;

    fn run<B: Backend>(self, device: B::Device) -> Result<DpSgdScores> {
        self.scores::<Autodiff<B>>(&device)
    }
}

/// ln(1 − q + q·eᵃ), the per-step log-likelihood ratio.
pub(super) fn ln_mixture(q: f64, a: f64) -> f64 {
    if q >= 1.0 {
        return a;
    }
    // max(ln(1 − q), ln q + a) + ln(1 + e^{−|difference|}).
    let (x, y) = ((-q).ln_1p(), q.ln() + a);
    let (hi, lo) = if x > y { (x, y) } else { (y, x) };
    hi + (lo - hi).exp().ln_1p()
}

impl DpSgdAudit {
    fn scores<B: AutodiffBackend>(&self, device: &B::Device) -> Result<DpSgdScores> {
        let m = self.canaries;
        let (sigma, q) = (self.noise_multiplier, self.sample_rate);
        // One parameter per canary; its values are never read, only its layout.
        let module: Linear<B> =
            autodiff::exclusive(|| LinearConfig::new(m, 1).with_bias(false).init::<B>(device));
        let guess = ((ONE_RUN_GUESS_SHARE * m as f64).round() as usize).min(m / 2);
        let mut out = DpSgdScores {
            runs: CanaryRuns {
                held_in: Vec::new(),
                held_out: Vec::new(),
                rdp_epsilon: f64::NAN,
                pld_epsilon: f64::NAN,
            },
            one_run: OneRunGuesses {
                canaries: 0,
                guesses: 0,
                correct: 0,
            },
        };
        for run in 0..self.runs as u64 {
            let run_seed = self.seed.wrapping_mul(1_000_003).wrapping_add(run);
            let mut inclusion = ChaCha8Rng::seed_from_u64(run_seed ^ 0x00ca_9a7e);
            let included: Vec<bool> = (0..m).map(|_| inclusion.random_bool(0.5)).collect();
            let records = GivenGradients(
                included
                    .iter()
                    .enumerate()
                    .map(|(i, &is_in)| {
                        let mut row = vec![0.0f32; m];
                        if is_in {
                            row[i] = (2.0 * CLIP) as f32;
                        }
                        row
                    })
                    .collect(),
            );
            let config = PrivacyEngineConfig::new(
                PoissonSampling {
                    dataset_size: m,
                    sample_rate: q,
                },
                CLIP,
                NoiseCalibration::NoiseMultiplier(sigma),
            )
            .with_delta(self.delta);
            let source = if self.secure {
                RandomnessSource::Secure
            } else {
                RandomnessSource::Seeded(run_seed)
            };
            let mut engine = PrivacyEngine::new(config, source)?;
            // yₜ = update·qN/(σC).
            let scale = engine.expected_batch_size() / (sigma * CLIP);
            let mut scores = vec![0.0f64; m];
            for _ in 0..self.steps {
                let batch = engine.sample()?;
                let update = engine
                    .private_gradient(&module, &batch, &records)?
                    .flatten();
                for (score, &u) in scores.iter_mut().zip(&update) {
                    let y = f64::from(u) * scale;
                    *score += ln_mixture(q, y / sigma - 0.5 / (sigma * sigma));
                }
            }
            if run == 0 {
                out.runs.rdp_epsilon = engine.schedule().epsilon_by(AccountantKind::Rdp)?;
                out.runs.pld_epsilon = engine.schedule().epsilon_by(AccountantKind::Pld)?;
            }
            let guesses = one_run_guesses(&scores, &included, guess, guess)?;
            out.one_run.canaries += guesses.canaries;
            out.one_run.guesses += guesses.guesses;
            out.one_run.correct += guesses.correct;
            for (score, is_in) in scores.into_iter().zip(included) {
                if is_in {
                    out.runs.held_in.push(score);
                } else {
                    out.runs.held_out.push(score);
                }
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ln_mixture_is_the_log_of_the_mixture() {
        for &(q, a) in &[(0.1, 0.3), (0.5, -2.0), (0.01, 40.0), (0.9, -40.0)] {
            let want = (1.0 - q + q * f64::exp(a)).ln();
            assert!((ln_mixture(q, a) - want).abs() < 1e-12 * want.abs().max(1.0));
        }
        assert_eq!(ln_mixture(1.0, 0.7), 0.7);
    }
}

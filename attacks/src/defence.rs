//! Defences between the learner and the attacker: the shared gradient passes through one of
//! them before [`crate::attack()`] sees it, so that the leakage of a privatised gradient can be
//! measured beside the ε it buys (the leakage suite).
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
//! ([`GradientDefence::preserves_magnitude`]). What the
//! attacker cannot undo is the norm that clipping removes: when ‖g‖ > C, QGI's error magnitude
//! ‖g‖/‖g_rec‖ (eq. 8) is read off the clipped norm, so Q_rec is biased towards Q̂_rec; the
//! state and the action are unaffected by a scale.

use std::fmt;

use privrl_agents::pgc::{GradientMechanism, PgcMechanism};
use privrl_agents::GradientRecord;
use privrl_privacy::{clip_l2, Clipping, DpSgdConfig};
use rand::Rng;
use serde::{Deserialize, Serialize};

use crate::attack::AttackConfig;
use crate::error::{check_positive, AttackError};
use crate::victim::{Sample, Victim};
use burn::tensor::backend::Backend;

/// A defence applied to the shared gradient before the attacker sees it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(tag = "defence", rename_all = "snake_case")]
pub enum GradientDefence {
    /// The raw gradient (the inversion suite's setting).
    None,
    /// DP-SGD's per-sample L2 clipping to `clip`, without noise (not private on its own).
    Clip {
        /// C.
        clip: f64,
    },
    /// DP-SGD: per-sample clipping to `clip`, then N(0, σ²C²I) on the sum, divided by the
    /// batch size.
    DpSgd {
        /// C.
        clip: f64,
        /// σ > 0; the noise standard deviation is σC.
        noise_multiplier: f64,
    },
    /// PGC's Laplace mechanism with L1 clipping to C/2 (paper 003, Algorithm 2).
    Laplace {
        /// ε of the release.
        epsilon: f64,
        /// C.
        clip: f64,
    },
    /// PGC's projected random sign with d̂ = max(1, min(d, ⌊ε/2.5⌋)) (Algorithm 3).
    ProjectedRandomSign {
        /// ε of the release.
        epsilon: f64,
        /// C.
        clip: f64,
    },
}

impl GradientDefence {
    /// Short name for tables and file names (`"none"`, `"clip"`, `"dp-sgd"`, ...).
    pub fn family(&self) -> &'static str {
        match self {
            Self::None => "none",
            Self::Clip { .. } => "clip",
            Self::DpSgd { .. } => "dp-sgd",
            Self::Laplace { .. } => "laplace",
            Self::ProjectedRandomSign { .. } => "prs",
        }
    }

    /// Whether the release is each sample's raw gradient times a positive factor (no
    /// defence, clipping): then eq. 6's surrogate reproduces its magnitude, and the magnitude
    /// term of [`crate::GradientMatchingLoss::CosineAndMagnitude`] stays valid.
    pub fn preserves_magnitude(&self) -> bool {
        matches!(self, Self::None | Self::Clip { .. })
    }

    /// The attack's configuration against this defence: `config` itself where the release
    /// preserves the magnitude, and with the magnitude term dropped (eq. 5 alone) otherwise.
    pub fn adapt_attack(&self, config: AttackConfig) -> AttackConfig {
        if self.preserves_magnitude() {
            config
        } else {
            let matching = config.matching.with_magnitude_weight(0.0);
            config.with_matching(matching)
        }
    }

    /// ε of one release where the mechanism has a per-release guarantee (Laplace, PRS);
    /// `None` for no guarantee (none, clipping) or for DP-SGD, whose ε depends on the
    /// training run and comes from the RDP accountant.
    pub fn epsilon_per_release(&self) -> Option<f64> {
        match *self {
            Self::Laplace { epsilon, .. } | Self::ProjectedRandomSign { epsilon, .. } => {
                Some(epsilon)
            }
            _ => None,
        }
    }

    /// Checks the parameters: C > 0, σ > 0, ε > 0, all finite.
    pub fn validate(&self) -> Result<(), AttackError> {
        match *self {
            Self::None => Ok(()),
            Self::Clip { clip } => check_positive("clip", clip),
            Self::DpSgd {
                clip,
                noise_multiplier,
            } => {
                check_positive("clip", clip)?;
                check_positive("noise_multiplier", noise_multiplier)
            }
            Self::Laplace { epsilon, clip } | Self::ProjectedRandomSign { epsilon, clip } => {
                check_positive("epsilon", epsilon)?;
                check_positive("clip", clip)
            }
        }
    }

    /// The gradient the learner releases for `samples` under this defence: the one the
    /// attacker sees. For a batch of one with [`GradientDefence::None`] this is exactly
    /// [`Victim::shared_gradient`].
    pub fn release<B: Backend>(
        &self,
        victim: &Victim<B>,
        samples: &[Sample],
        rng: &mut impl Rng,
    ) -> Result<GradientRecord, AttackError> {
        self.validate()?;
        match *self {
            Self::None => victim.shared_gradient(samples),
            Self::Clip { clip } => {
                let (template, mut per_sample) = per_sample_gradients(victim, samples)?;
                let mut mean = vec![0.0f64; template.num_values()];
                for g in &mut per_sample {
                    clip_l2(g, clip);
                    for (m, v) in mean.iter_mut().zip(g.iter()) {
                        *m += f64::from(*v) / samples.len() as f64;
                    }
                }
                let mean: Vec<f32> = mean.into_iter().map(|m| m as f32).collect();
                with_flat(&template, &mean)
            }
            Self::DpSgd {
                clip,
                noise_multiplier,
            } => {
                let (template, per_sample) = per_sample_gradients(victim, samples)?;
                let dp_sgd = DpSgdConfig {
                    noise_multiplier,
                    clipping: Clipping::Flat { clip },
                    dimension: template.num_values(),
                }
                .build()
                .map_err(defence_error)?;
                let released = dp_sgd
                    .noisy_mean(&per_sample, samples.len() as f64, rng)
                    .map_err(defence_error)?;
                with_flat(&template, &released)
            }
            Self::Laplace { epsilon, clip } => self.release_local(
                victim,
                samples,
                PgcMechanism::Laplace {
                    epsilon: Some(epsilon),
                    clip,
                },
                rng,
            ),
            Self::ProjectedRandomSign { epsilon, clip } => self.release_local(
                victim,
                samples,
                PgcMechanism::Prs {
                    epsilon: Some(epsilon),
                    clip,
                },
                rng,
            ),
        }
    }

    fn release_local<B: Backend>(
        &self,
        victim: &Victim<B>,
        samples: &[Sample],
        mechanism: PgcMechanism,
        rng: &mut impl Rng,
    ) -> Result<GradientRecord, AttackError> {
        let gradient = victim.shared_gradient(samples)?;
        let flat = gradient.flatten();
        let mechanism: GradientMechanism = mechanism
            .build(flat.len(), 1)
            .map_err(|e| AttackError::Defence(e.to_string()))?;
        let released = mechanism
            .release(&flat, rng)
            .map_err(|e| AttackError::Defence(e.to_string()))?;
        with_flat(&gradient, &released)
    }
}

impl fmt::Display for GradientDefence {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Self::None => write!(f, "none"),
            Self::Clip { clip } => write!(f, "clip C={clip}"),
            Self::DpSgd {
                clip,
                noise_multiplier,
            } => write!(f, "DP-SGD C={clip} σ={noise_multiplier}"),
            Self::Laplace { epsilon, clip } => write!(f, "Laplace ε={epsilon} C={clip}"),
            Self::ProjectedRandomSign { epsilon, clip } => {
                write!(f, "PRS ε={epsilon} C={clip}")
            }
        }
    }
}

/// The gradient of every sample on its own, flattened, with the first one's names and shapes.
fn per_sample_gradients<B: Backend>(
    victim: &Victim<B>,
    samples: &[Sample],
) -> Result<(GradientRecord, Vec<Vec<f32>>), AttackError> {
    let records = samples
        .iter()
        .map(|sample| victim.shared_gradient(std::slice::from_ref(sample)))
        .collect::<Result<Vec<_>, _>>()?;
    let flat = records.iter().map(GradientRecord::flatten).collect();
    let template = records.into_iter().next().ok_or(AttackError::EmptyBatch)?;
    Ok((template, flat))
}

fn with_flat(template: &GradientRecord, flat: &[f32]) -> Result<GradientRecord, AttackError> {
    template
        .with_flat(flat)
        .map_err(|e| AttackError::Defence(e.to_string()))
}

fn defence_error(e: privrl_privacy::PrivacyError) -> AttackError {
    AttackError::Defence(e.to_string())
}

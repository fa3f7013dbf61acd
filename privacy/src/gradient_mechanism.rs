//! One home for every mechanism that privatises a gradient before it leaves the learner: the
//! raw gradient, clipping alone, DP-SGD (paper 004, Figure 7; Abadi et al. 2016), and the local
//! mechanisms of PGC (paper 003): Laplace (Algorithm 2) and projected random sign (Algorithm 3).
//!
//! A [`GradientMechanismConfig`] names a mechanism and its parameters; it is what a user writes
//! (in a configuration, on a command line through [`MechanismKind`]'s names) and what run
//! directories record. [`GradientMechanismConfig::build`] validates it once for a gradient
//! length d and returns a `Box<dyn GradientMechanism>`, the object every consumer holds: PGC
//! agents release their episode's gradient through it, the DP-SGD agents their batch, the
//! leakage suite the gradient an attacker then inverts.
//!
//! Two entries, because the mechanisms differ in what a record is:
//! - [`GradientMechanism::release`]: one gradient is one record (a PGC submission, a
//!   REINFORCE episode), released as a whole.
//! - [`GradientMechanism::release_batch`] and [`GradientMechanism::release_clipped_sum`]: a
//!   batch of records, each clipped to [`GradientMechanism::record_clip`] in L2, summed, noised
//!   once and divided by the expected batch size (DP-SGD). A local mechanism, which has no
//!   per-record clip, releases the batch's mean as one submission.
//!
//! ```
//! use privrl_privacy::{Epsilon, GradientMechanismConfig, GradientPrivacy, NoiseMode};
//!
//! let config: GradientMechanismConfig = "laplace".parse::<privrl_privacy::MechanismKind>()?
//!     .paper_default(Epsilon::finite(2.0)?);
//! let mechanism = config.build(3, 1)?; // gradients of length 3, one submission per agent
//! let mut rng = NoiseMode::Seeded.rng(7)?;
//! let released = mechanism.release(&[0.5, -0.25, 0.1], &mut rng)?;
//! assert_eq!(released.len(), 3);
//! assert_eq!(mechanism.name(), "laplace");
//! assert!(matches!(mechanism.privacy(), GradientPrivacy::PerRelease(cost) if cost.epsilon == 2.0));
//! # Ok::<(), privrl_privacy::PrivacyError>(())
//! ```

use std::fmt;
use std::str::FromStr;
use std::sync::Mutex;
use std::thread::JoinHandle;

use rand::{Rng, RngCore, SeedableRng};
use rand_chacha::ChaCha12Rng;
use serde::{Deserialize, Serialize};

use crate::dpsgd::{clip_l2, host_clipped_sum, Clipping, DpSgd, DpSgdConfig};
use crate::error::{all_finite, at_least_one, positive, saturating_f32};
use crate::laplace::{clip_l1, LaplaceConfig};
use crate::mechanism::{Mechanism, PrivacyCost};
use crate::projected_random_sign::{ProjectionMatrix, PrsConfig};
use crate::{Epsilon, GridGaussianSum, NoiseMode, PrivacyError};

/// The privacy a gradient mechanism gives, in the form in which it can be stated.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum GradientPrivacy {
    /// No formal guarantee: the raw gradient, clipping alone, or a local mechanism at ε = ∞.
    None,
    /// (ε, 0)-LDP for every release (Laplace, Lemma 2; PRS, Lemma 3). With T submissions per
    /// agent each spends ε/T, and this is the per-release cost.
    PerRelease(PrivacyCost),
    /// The Gaussian mechanism with noise σ·C on a sum of records each clipped to C: ε depends
    /// on how records are sampled and how many steps a run takes, so it comes from
    /// [`crate::RdpAccountant`] over the steps actually taken.
    SubsampledGaussian {
        /// σ.
        noise_multiplier: f64,
    },
}

/// A validated mechanism that privatises gradients of one length d. Object safe, so that
/// agents, attacks and suites hold any of them as `Box<dyn GradientMechanism>`.
pub trait GradientMechanism: fmt::Debug + fmt::Display + Send + Sync {
    /// Which mechanism this is.
    fn kind(&self) -> MechanismKind;

    /// Its canonical name (`none`, `clip`, `dp-sgd`, `laplace`, `prs`).
    fn name(&self) -> &'static str {
        self.kind().name()
    }

    /// Gradient length d.
    fn dimension(&self) -> usize;

    /// What the release guarantees.
    fn privacy(&self) -> GradientPrivacy;

    /// Whether the release carries noise. Without noise (none, clip) it is the gradient times
    /// a positive factor per record, which a gradient-matching attacker may rely on.
    fn adds_noise(&self) -> bool;

    /// One record's gradient (a PGC submission, a REINFORCE episode), released as a whole.
    /// Fails on a gradient of the wrong length or with non-finite entries.
    fn release(&self, gradient: &[f32], rng: &mut dyn RngCore) -> Result<Vec<f32>, PrivacyError>;

    /// The L2 bound C that each record of a batch is clipped to before the sum, or `None` for
    /// a mechanism that releases a batch as one submission.
    fn record_clip(&self) -> Option<f64> {
        None
    }

    /// (1/L)(s + noise) for the sum `s` of a batch's records that the caller has already
    /// clipped to [`GradientMechanism::record_clip`] (e.g. analytically, without materialising
    /// the per-record gradients), with L the expected batch size: under Poisson sampling the
    /// expected, not the drawn, size, which would itself depend on the data (Figure 7).
    ///
    /// A mechanism without a per-record clip releases the mean s/L as one submission.
    fn release_clipped_sum(
        &self,
        clipped_sum: Vec<f32>,
        expected_batch_size: f64,
        rng: &mut dyn RngCore,
    ) -> Result<Vec<f32>, PrivacyError> {
        let mean = mean_as_one_submission(clipped_sum, expected_batch_size)?;
        self.release(&mean, rng)
    }

    /// The random draws [`GradientMechanism::release_clipped_sum`] would make, drawn ahead, so
    /// that a caller can draw them on one thread while it computes the clipped sum on another
    /// (`None`: this mechanism draws nothing, or nothing that can be drawn before the sum is
    /// known). Passing them to [`GradientMechanism::release_clipped_sum_with`] gives the same
    /// release, bit for bit, as [`GradientMechanism::release_clipped_sum`] on the same
    /// generator.
    fn draw_sum_noise(&self, _rng: &mut dyn RngCore) -> Option<Vec<f64>> {
        None
    }

    /// [`GradientMechanism::release_clipped_sum`] with the draws of
    /// [`GradientMechanism::draw_sum_noise`] (`None`: draw them from `rng` now).
    fn release_clipped_sum_with(
        &self,
        clipped_sum: Vec<f32>,
        expected_batch_size: f64,
        noise: Option<Vec<f64>>,
        rng: &mut dyn RngCore,
    ) -> Result<Vec<f32>, PrivacyError> {
        match noise {
            None => self.release_clipped_sum(clipped_sum, expected_batch_size, rng),
            Some(_) => Err(PrivacyError::Inconsistent(
                "pre-drawn noise for a mechanism that draws none ahead",
            )),
        }
    }

    /// A batch of per-record gradients: each clipped to [`GradientMechanism::record_clip`]
    /// (if any), summed in f64, then [`GradientMechanism::release_clipped_sum`].
    fn release_batch(
        &self,
        per_record: &[Vec<f32>],
        expected_batch_size: f64,
        rng: &mut dyn RngCore,
    ) -> Result<Vec<f32>, PrivacyError> {
        let clip = self.record_clip();
        let sum = host_clipped_sum(per_record, self.dimension(), |g| {
            check_gradient("per-record gradient", g, g.len())?;
            if let Some(clip) = clip {
                clip_l2(g, clip);
            }
            Ok(())
        })?;
        self.release_clipped_sum(sum, expected_batch_size, rng)
    }
}

/// The mechanisms by name: the one list of names (and aliases) that every command line,
/// configuration and report uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum MechanismKind {
    /// The raw gradient.
    None,
    /// L2 clipping of each record to C, no noise (not private on its own).
    Clip,
    /// DP-SGD: per-record L2 clipping to C, N(0, σ²C²I) on the sum.
    DpSgd,
    /// Laplace with L1 clipping to C/2 (paper 003, Algorithm 2).
    Laplace,
    /// Projected random sign (paper 003, Algorithm 3).
    Prs,
}

impl MechanismKind {
    /// Every mechanism, in the order tables list them.
    pub const ALL: [Self; 5] = [
        Self::None,
        Self::Clip,
        Self::DpSgd,
        Self::Laplace,
        Self::Prs,
    ];

    /// The canonical name.
    pub fn name(self) -> &'static str {
        match self {
            Self::None => "none",
            Self::Clip => "clip",
            Self::DpSgd => "dp-sgd",
            Self::Laplace => "laplace",
            Self::Prs => "prs",
        }
    }

    /// Other names accepted for it.
    pub fn aliases(self) -> &'static [&'static str] {
        match self {
            Self::None => &["non-private"],
            Self::Clip => &[],
            Self::DpSgd => &["dpsgd", "gaussian"],
            Self::Laplace => &["lap"],
            Self::Prs => &["projected-random-sign"],
        }
    }

    /// How tables and plot legends write it.
    pub fn label(self) -> &'static str {
        match self {
            Self::None => "none",
            Self::Clip => "clip",
            Self::DpSgd => "DP-SGD",
            Self::Laplace => "Laplace",
            Self::Prs => "PRS",
        }
    }

    /// One line for `--help`.
    pub fn about(self) -> &'static str {
        match self {
            Self::None => "the raw gradient (not private)",
            Self::Clip => "per-record L2 clipping to C, no noise (not private on its own)",
            Self::DpSgd => "DP-SGD: per-record L2 clipping to C, Gaussian noise σC on the sum",
            Self::Laplace => "Laplace with L1 clipping to C/2 (PGC, Algorithm 2)",
            Self::Prs => "projected random sign (PGC, Algorithm 3)",
        }
    }

    /// The mechanism at a budget ε with PGC's clipping sizes (Laplace C = 0.01, PRS C = 1).
    /// `none` ignores ε. Clip and DP-SGD are parameterised by C and σ, not ε: they get
    /// [`GradientMechanismConfig::DEFAULT_CLIP`] (and σ = 1 for DP-SGD).
    pub fn paper_default(self, epsilon: Epsilon) -> GradientMechanismConfig {
        match self {
            Self::None => GradientMechanismConfig::None,
            Self::Clip => GradientMechanismConfig::Clip {
                clip: GradientMechanismConfig::DEFAULT_CLIP,
            },
            Self::DpSgd => GradientMechanismConfig::DpSgd {
                clip: GradientMechanismConfig::DEFAULT_CLIP,
                noise_multiplier: 1.0,
            },
            Self::Laplace => GradientMechanismConfig::laplace(epsilon),
            Self::Prs => GradientMechanismConfig::prs(epsilon),
        }
    }
}

impl fmt::Display for MechanismKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for MechanismKind {
    type Err = PrivacyError;
    fn from_str(text: &str) -> Result<Self, PrivacyError> {
        let text = text.trim().to_ascii_lowercase();
        Self::ALL
            .into_iter()
            .find(|kind| kind.name() == text || kind.aliases().contains(&text.as_str()))
            .ok_or(PrivacyError::Parse {
                what: "gradient mechanism",
                text,
                expected: "none, clip, dp-sgd (dpsgd, gaussian), laplace (lap), \
                           prs (projected-random-sign)",
            })
    }
}

/// A gradient mechanism and its parameters, as a user states it and a run directory records
/// it. Build it for a gradient length with [`GradientMechanismConfig::build`].
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(tag = "mechanism", rename_all = "kebab-case")]
pub enum GradientMechanismConfig {
    /// The raw gradient.
    None,
    /// Each record clipped to L2 norm C; no noise.
    Clip {
        /// C > 0.
        clip: f64,
    },
    /// DP-SGD (Figure 7): each record clipped to L2 norm C, N(0, σ²C²I) on the sum.
    DpSgd {
        /// C > 0.
        clip: f64,
        /// σ > 0; the noise standard deviation is σC.
        noise_multiplier: f64,
    },
    /// Laplace (Algorithm 2, eq. 19–21): L1 clipping to C/2, Laplace noise of scale C/(ε/T).
    /// At ε = ∞ the clipping remains and no noise is added.
    Laplace {
        /// Budget of one agent over its T submissions.
        epsilon: Epsilon,
        /// C > 0 (the paper: 0.01).
        clip: f64,
    },
    /// Projected random sign (Algorithm 3, eq. 5, 23, 24), d̂ = max(1, min(d, ⌊ε/2.5⌋)). At
    /// ε = ∞, d̂ = d and the flip becomes the unbiased stochastic sign P(+C) = (ū + C)/(2C).
    Prs {
        /// Budget of one agent over its T submissions.
        epsilon: Epsilon,
        /// Element-wise clip C > 0 (the paper: 1).
        clip: f64,
    },
}

impl GradientMechanismConfig {
    /// The clipping bound that clip and DP-SGD default to.
    pub const DEFAULT_CLIP: f64 = 1.0;

    /// PGC's Laplace setting: C = 0.01.
    pub fn laplace(epsilon: Epsilon) -> Self {
        Self::Laplace {
            epsilon,
            clip: 0.01,
        }
    }

    /// PGC's PRS setting: C = 1.
    pub fn prs(epsilon: Epsilon) -> Self {
        Self::Prs { epsilon, clip: 1.0 }
    }

    /// DP-SGD's release at clip C and noise multiplier σ ≥ 0 (the one place privrl decides what
    /// σ = 0 means): DP-SGD for σ > 0, clipping alone for σ = 0 with a finite C, and the raw
    /// gradient for σ = 0 with C = ∞. Validated by [`GradientMechanismConfig::build`].
    pub fn clipped_gaussian(clip: f64, noise_multiplier: f64) -> Self {
        if noise_multiplier > 0.0 {
            Self::DpSgd {
                clip,
                noise_multiplier,
            }
        } else if clip.is_finite() {
            Self::Clip { clip }
        } else {
            Self::None
        }
    }

    /// Which mechanism this is.
    pub fn kind(&self) -> MechanismKind {
        match self {
            Self::None => MechanismKind::None,
            Self::Clip { .. } => MechanismKind::Clip,
            Self::DpSgd { .. } => MechanismKind::DpSgd,
            Self::Laplace { .. } => MechanismKind::Laplace,
            Self::Prs { .. } => MechanismKind::Prs,
        }
    }

    /// The budget ε of a local mechanism (`None` for the others, whose ε is not a parameter).
    pub fn epsilon(&self) -> Option<Epsilon> {
        match *self {
            Self::Laplace { epsilon, .. } | Self::Prs { epsilon, .. } => Some(epsilon),
            _ => None,
        }
    }

    /// The L2 bound each record of a batch is clipped to (clip, DP-SGD), as
    /// [`GradientMechanism::record_clip`] of the built mechanism.
    pub fn record_clip(&self) -> Option<f64> {
        match *self {
            Self::Clip { clip } | Self::DpSgd { clip, .. } => Some(clip),
            _ => None,
        }
    }

    /// Whether the release carries noise, as [`GradientMechanism::adds_noise`] of the built
    /// mechanism: every mechanism but none, clip and Laplace at ε = ∞ (whose release is the
    /// gradient times a positive factor).
    pub fn adds_noise(&self) -> bool {
        match *self {
            Self::None | Self::Clip { .. } => false,
            Self::Laplace { epsilon, .. } => epsilon.get().is_some(),
            Self::DpSgd { .. } | Self::Prs { .. } => true,
        }
    }

    /// [`Self::build`] for a run whose noise comes from `noise`. Under [`NoiseMode::Secure`]
    /// the local mechanisms draw exactly, with no floating-point caveat (`discrete` module):
    /// Laplace on a grid of C/(1000d) ([`crate::LaplaceGradient::on_grid`]: at most ε/T per release,
    /// noise within 0.2 % of the continuous one) and PRS with exact flips
    /// ([`crate::ProjectedRandomSign::exact`]), and DP-SGD's Gaussian on a grid
    /// ([`GridGaussianSum`]: the clipped sum rounded to γ = 10⁻³C/√d, discrete Gaussian noise
    /// from integer tables within total variation 10⁻⁷⁰ a coordinate of the exact one, whose
    /// scale meets σ at the rounded sensitivity C/γ + √d, accounted at σ). Seeded
    /// runs keep the textbook samplers, so that their bytes do not change. Secure mode is not
    /// reproducible by construction: its noise comes from the operating system.
    pub fn build_for(
        &self,
        dimension: usize,
        rounds: usize,
        noise: NoiseMode,
    ) -> Result<Box<dyn GradientMechanism>, PrivacyError> {
        self.build_with(dimension, rounds, noise == NoiseMode::Secure)
    }

    /// Validates the parameters for gradients of length `dimension` and `rounds` submissions
    /// per agent (T; only the local mechanisms split their ε over rounds).
    pub fn build(
        &self,
        dimension: usize,
        rounds: usize,
    ) -> Result<Box<dyn GradientMechanism>, PrivacyError> {
        self.build_with(dimension, rounds, false)
    }

    /// [`Self::build`], the local mechanisms drawn exactly when `exact`.
    fn build_with(
        &self,
        dimension: usize,
        rounds: usize,
        exact: bool,
    ) -> Result<Box<dyn GradientMechanism>, PrivacyError> {
        at_least_one("dimension", dimension)?;
        at_least_one("rounds", rounds)?;
        Ok(match *self {
            Self::None => Box::new(NoiseFree {
                rescaling: Rescaling::Identity,
                dimension,
            }),
            Self::Clip { clip } => Box::new(NoiseFree {
                rescaling: Rescaling::L2(positive("clip", clip)?),
                dimension,
            }),
            Self::DpSgd {
                clip,
                noise_multiplier,
            } if exact => Box::new(GridGaussian::new(GridGaussianSum::new(
                clip,
                noise_multiplier,
                dimension,
            )?)),
            Self::DpSgd {
                clip,
                noise_multiplier,
            } => Box::new(GaussianSum(
                DpSgdConfig {
                    noise_multiplier,
                    clipping: Clipping::Flat { clip },
                    dimension,
                }
                .build()?,
            )),
            Self::Laplace { epsilon, clip } => match epsilon.get() {
                Some(epsilon) => {
                    let inner = LaplaceConfig {
                        epsilon,
                        clip,
                        rounds,
                        dimension,
                    }
                    .build()?;
                    if exact {
                        let inner = inner.on_grid(GRID_PER_CLIP)?;
                        Box::new(Local {
                            kind: MechanismKind::Laplace,
                            description: format!(
                                "Laplace on a grid (exact) ε={} per release",
                                inner.cost().epsilon
                            ),
                            inner,
                            dimension,
                        })
                    } else {
                        Box::new(Local {
                            kind: MechanismKind::Laplace,
                            description: format!(
                                "Laplace ε={} per release",
                                inner.epsilon_per_round()
                            ),
                            inner,
                            dimension,
                        })
                    }
                }
                None => Box::new(NoiseFree {
                    rescaling: Rescaling::HalfL1(positive("clip", clip)?),
                    dimension,
                }),
            },
            Self::Prs { epsilon, clip } => match epsilon.get() {
                Some(epsilon) => {
                    let inner = PrsConfig {
                        epsilon,
                        clip,
                        rounds,
                        dimension,
                        reduced_dimension: None,
                        unbiased: false,
                    }
                    .build()?;
                    let (inner, how) = if exact {
                        (inner.exact(), " (exact flips)")
                    } else {
                        (inner, "")
                    };
                    Box::new(Local {
                        kind: MechanismKind::Prs,
                        description: format!(
                            "PRS{how} ε={} per release, d̂={}",
                            inner.cost().epsilon,
                            inner.reduced_dimension()
                        ),
                        inner,
                        dimension,
                    })
                }
                None => Box::new(StochasticSign {
                    clip: positive("clip", clip)?,
                    dimension,
                }),
            },
        })
    }
}

impl fmt::Display for GradientMechanismConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let label = self.kind().label();
        match *self {
            Self::None => f.write_str(label),
            Self::Clip { clip } => write!(f, "{label} C={clip}"),
            Self::DpSgd {
                clip,
                noise_multiplier,
            } => write!(f, "{label} C={clip} σ={noise_multiplier}"),
            Self::Laplace { epsilon, clip } | Self::Prs { epsilon, clip } => {
                write!(f, "{label} ε={epsilon} C={clip}")
            }
        }
    }
}

/// Grid points per clipping bound and coordinate of the exact Laplace mechanism
/// ([`GradientMechanismConfig::build_for`]).
const GRID_PER_CLIP: u32 = 1000;

fn check_gradient(
    name: &'static str,
    gradient: &[f32],
    dimension: usize,
) -> Result<(), PrivacyError> {
    if gradient.len() != dimension {
        return Err(PrivacyError::DimensionMismatch {
            name,
            expected: dimension,
            found: gradient.len(),
        });
    }
    all_finite(name, gradient)
}

/// s/L, computed in f64: an expected batch size below f32's range (Poisson sampling on a tiny
/// buffer) must not become 0 and turn the mean into NaN; for L = 1 it is s, bit for bit.
fn mean_as_one_submission(
    sum: Vec<f32>,
    expected_batch_size: f64,
) -> Result<Vec<f32>, PrivacyError> {
    positive("expected_batch_size", expected_batch_size)?;
    Ok(sum
        .into_iter()
        .map(|x| saturating_f32(f64::from(x) / expected_batch_size))
        .collect())
}

/// The mean of an already clipped sum of `dimension` values (a noise-free mechanism's batch
/// release).
fn mean_of_sum(
    sum: Vec<f32>,
    expected_batch_size: f64,
    dimension: usize,
) -> Result<Vec<f32>, PrivacyError> {
    positive("expected_batch_size", expected_batch_size)?;
    check_gradient("clipped gradient sum", &sum, dimension)?;
    mean_as_one_submission(sum, expected_batch_size)
}

/// How a noise-free mechanism rescales each record.
#[derive(Debug, Clone, Copy)]
enum Rescaling {
    /// g̃ = g.
    Identity,
    /// g / max(1, ‖g‖₂/C), per record (DP-SGD's clipping without its noise).
    L2(f64),
    /// ḡ of eq. 19, g / max(1, ‖g‖₁/(C/2)): Algorithm 2 at ε = ∞.
    HalfL1(f64),
}

/// The mechanisms without noise: the raw gradient, clipping alone, Laplace at ε = ∞. Each
/// release is its record times a positive factor.
#[derive(Debug, Clone, Copy)]
struct NoiseFree {
    rescaling: Rescaling,
    dimension: usize,
}

impl fmt::Display for NoiseFree {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.rescaling {
            Rescaling::Identity => f.write_str("none"),
            Rescaling::L2(clip) => write!(f, "clip C={clip}"),
            Rescaling::HalfL1(clip) => write!(f, "Laplace ε=∞ C={clip}"),
        }
    }
}

impl GradientMechanism for NoiseFree {
    fn kind(&self) -> MechanismKind {
        match self.rescaling {
            Rescaling::Identity => MechanismKind::None,
            Rescaling::L2(_) => MechanismKind::Clip,
            Rescaling::HalfL1(_) => MechanismKind::Laplace,
        }
    }
    fn dimension(&self) -> usize {
        self.dimension
    }
    fn privacy(&self) -> GradientPrivacy {
        GradientPrivacy::None
    }
    fn adds_noise(&self) -> bool {
        false
    }
    fn release(&self, gradient: &[f32], _: &mut dyn RngCore) -> Result<Vec<f32>, PrivacyError> {
        check_gradient("gradient", gradient, self.dimension)?;
        Ok(match self.rescaling {
            Rescaling::Identity => gradient.to_vec(),
            Rescaling::L2(clip) => {
                let mut out = gradient.to_vec();
                clip_l2(&mut out, clip);
                out
            }
            Rescaling::HalfL1(clip) => {
                let mut out = vec![0.0; gradient.len()];
                clip_l1(gradient, 0.5 * clip, &mut out);
                out.into_iter().map(saturating_f32).collect()
            }
        })
    }
    fn record_clip(&self) -> Option<f64> {
        match self.rescaling {
            Rescaling::L2(clip) => Some(clip),
            _ => None,
        }
    }
    fn release_clipped_sum(
        &self,
        sum: Vec<f32>,
        expected_batch_size: f64,
        rng: &mut dyn RngCore,
    ) -> Result<Vec<f32>, PrivacyError> {
        match self.rescaling {
            // The records are (already) clipped: the release is their mean.
            Rescaling::Identity | Rescaling::L2(_) => {
                mean_of_sum(sum, expected_batch_size, self.dimension)
            }
            // A local mechanism: the batch's mean is one submission.
            Rescaling::HalfL1(_) => {
                self.release(&mean_as_one_submission(sum, expected_batch_size)?, rng)
            }
        }
    }
}

/// DP-SGD's clipped, noised sum.
#[derive(Debug, Clone)]
struct GaussianSum(DpSgd);

impl fmt::Display for GaussianSum {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "DP-SGD C={} σ={}",
            self.0.sensitivity(),
            self.0.noise_multiplier()
        )
    }
}

impl GradientMechanism for GaussianSum {
    fn kind(&self) -> MechanismKind {
        MechanismKind::DpSgd
    }
    fn dimension(&self) -> usize {
        self.0.dimension()
    }
    fn privacy(&self) -> GradientPrivacy {
        GradientPrivacy::SubsampledGaussian {
            noise_multiplier: self.0.noise_multiplier(),
        }
    }
    fn adds_noise(&self) -> bool {
        true
    }
    fn release(&self, gradient: &[f32], rng: &mut dyn RngCore) -> Result<Vec<f32>, PrivacyError> {
        let mut clipped = gradient.to_vec();
        self.0.clip(&mut clipped)?;
        self.0
            .noisy_mean_of_clipped_sum(clipped, 1.0, &mut RngRef(rng))
    }
    fn record_clip(&self) -> Option<f64> {
        Some(self.0.sensitivity())
    }
    fn release_clipped_sum(
        &self,
        sum: Vec<f32>,
        expected_batch_size: f64,
        rng: &mut dyn RngCore,
    ) -> Result<Vec<f32>, PrivacyError> {
        self.0
            .noisy_mean_of_clipped_sum(sum, expected_batch_size, &mut RngRef(rng))
    }
    fn draw_sum_noise(&self, rng: &mut dyn RngCore) -> Option<Vec<f64>> {
        Some(self.0.draw_noise(&mut RngRef(rng)))
    }
    fn release_clipped_sum_with(
        &self,
        sum: Vec<f32>,
        expected_batch_size: f64,
        noise: Option<Vec<f64>>,
        rng: &mut dyn RngCore,
    ) -> Result<Vec<f32>, PrivacyError> {
        match noise {
            Some(normals) => {
                self.0
                    .noisy_mean_of_clipped_sum_with(sum, expected_batch_size, &normals)
            }
            None => self.release_clipped_sum(sum, expected_batch_size, rng),
        }
    }
}

/// Gradients at least this long get their grid noise drawn ahead on a thread (from about 50 µs
/// of draws, against tens of µs to start a thread).
const DRAW_AHEAD_FROM: usize = 4096;

/// DP-SGD's clipped sum released on a grid with discrete Gaussian noise (secure mode), drawn
/// from [`crate::DiscreteGaussianTable`] (within total variation 10⁻⁷⁰ a coordinate of the
/// exact distribution).
///
/// The noise is data-independent, and its draws cost about 0.013 µs a coordinate (1.6 times the
/// ziggurat's), so each release's noise (for [`DRAW_AHEAD_FROM`] values or more) is
/// drawn ahead, on a thread of its own,
/// while the learner does everything else between two releases: handing out one release's
/// noise keys the next one's stream (32 bytes of the caller's generator) and starts its
/// thread. Every release still gets noise of its own, from a key drawn after the previous
/// release's; only its timing moves. The draws are split over every core but one
/// ([`GridGaussianSum::draw_noise_in_parts`]).
#[derive(Debug)]
struct GridGaussian {
    grid: GridGaussianSum,
    next: Mutex<Option<JoinHandle<Vec<i64>>>>,
}

impl GridGaussian {
    fn new(grid: GridGaussianSum) -> Self {
        Self {
            grid,
            next: Mutex::new(None),
        }
    }

    /// This release's noise (drawn ahead where a thread was started, else now), and the
    /// next release's thread started.
    fn noise(&self, rng: &mut dyn RngCore) -> Vec<i64> {
        let mut next = self
            .next
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let noise = match next.take().and_then(|ahead| ahead.join().ok()) {
            Some(noise) => noise,
            None => self.grid.draw_noise(rng),
        };
        if self.grid.dimension() < DRAW_AHEAD_FROM {
            return noise; // cheaper than a thread
        }
        let mut key = [0u8; 32];
        rng.fill_bytes(&mut key);
        let grid = self.grid.clone();
        // On every core but the learner's (one thread on a 2-core machine).
        let parts = std::thread::available_parallelism()
            .map_or(1, |cores| cores.get().saturating_sub(1))
            .max(1);
        // Where no thread can be started the next release draws its own noise.
        *next = std::thread::Builder::new()
            .name("dp-sgd grid noise".into())
            .spawn(move || grid.draw_noise_in_parts(&mut ChaCha12Rng::from_seed(key), parts))
            .ok();
        noise
    }
}

impl fmt::Display for GridGaussian {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "DP-SGD on a grid (discrete Gaussian tables) C={} σ={} γ={:.3e}",
            self.grid.clip(),
            self.grid.noise_multiplier(),
            self.grid.step()
        )
    }
}

impl GradientMechanism for GridGaussian {
    fn kind(&self) -> MechanismKind {
        MechanismKind::DpSgd
    }
    fn dimension(&self) -> usize {
        self.grid.dimension()
    }
    fn privacy(&self) -> GradientPrivacy {
        // Accounted at σ, which the grid's noise meets at the rounded sensitivity.
        GradientPrivacy::SubsampledGaussian {
            noise_multiplier: self.grid.noise_multiplier(),
        }
    }
    fn adds_noise(&self) -> bool {
        true
    }
    fn release(&self, gradient: &[f32], rng: &mut dyn RngCore) -> Result<Vec<f32>, PrivacyError> {
        check_gradient("gradient", gradient, self.grid.dimension())?;
        let mut clipped = gradient.to_vec();
        clip_l2(&mut clipped, self.grid.clip());
        let noise = self.noise(rng);
        self.grid.noisy_mean_with(&clipped, 1.0, &noise)
    }
    fn record_clip(&self) -> Option<f64> {
        Some(self.grid.clip())
    }
    fn release_clipped_sum(
        &self,
        sum: Vec<f32>,
        expected_batch_size: f64,
        rng: &mut dyn RngCore,
    ) -> Result<Vec<f32>, PrivacyError> {
        let noise = self.noise(rng);
        self.grid.noisy_mean_with(&sum, expected_batch_size, &noise)
    }
    fn draw_sum_noise(&self, rng: &mut dyn RngCore) -> Option<Vec<f64>> {
        // Integers far below 2⁵³ in magnitude, exact in f64.
        Some(self.noise(rng).into_iter().map(|z| z as f64).collect())
    }
    fn release_clipped_sum_with(
        &self,
        sum: Vec<f32>,
        expected_batch_size: f64,
        noise: Option<Vec<f64>>,
        rng: &mut dyn RngCore,
    ) -> Result<Vec<f32>, PrivacyError> {
        match noise {
            Some(draws) => {
                let draws: Vec<i64> = draws.into_iter().map(|z| z as i64).collect();
                self.grid.noisy_mean_with(&sum, expected_batch_size, &draws)
            }
            None => self.release_clipped_sum(sum, expected_batch_size, rng),
        }
    }
}

/// The local mechanisms at finite ε (Laplace, Algorithm 2; PRS, Algorithm 3): ε-LDP per
/// release through privrl-privacy's [`Mechanism`] on a flat gradient.
#[derive(Debug, Clone)]
struct Local<M> {
    kind: MechanismKind,
    inner: M,
    dimension: usize,
    /// For `Display`: the parameters that say which release this is.
    description: String,
}

impl<M> fmt::Display for Local<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.description)
    }
}

impl<M> GradientMechanism for Local<M>
where
    M: Mechanism<Input = [f32], Output = Vec<f32>> + fmt::Debug + Send + Sync,
{
    fn kind(&self) -> MechanismKind {
        self.kind
    }
    fn dimension(&self) -> usize {
        self.dimension
    }
    fn privacy(&self) -> GradientPrivacy {
        GradientPrivacy::PerRelease(self.inner.cost())
    }
    fn adds_noise(&self) -> bool {
        true
    }
    fn release(&self, gradient: &[f32], rng: &mut dyn RngCore) -> Result<Vec<f32>, PrivacyError> {
        self.inner.release(gradient, &mut RngRef(rng))
    }
}

/// Algorithm 3 at ε = ∞: d̂ = d, ũ_i = ±C with P(+C) = (ū_i + C)/(2C), report Mᵀũ.
#[derive(Debug, Clone, Copy)]
struct StochasticSign {
    clip: f64,
    dimension: usize,
}

impl fmt::Display for StochasticSign {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "PRS ε=∞ C={}", self.clip)
    }
}

impl GradientMechanism for StochasticSign {
    fn kind(&self) -> MechanismKind {
        MechanismKind::Prs
    }
    fn dimension(&self) -> usize {
        self.dimension
    }
    fn privacy(&self) -> GradientPrivacy {
        GradientPrivacy::None
    }
    fn adds_noise(&self) -> bool {
        true
    }
    fn release(&self, gradient: &[f32], rng: &mut dyn RngCore) -> Result<Vec<f32>, PrivacyError> {
        check_gradient("gradient", gradient, self.dimension)?;
        let clip = self.clip;
        let projection =
            ProjectionMatrix::achlioptas(self.dimension, self.dimension, rng.next_u64())?;
        let signs: Vec<f64> = projection
            .project(gradient)
            .into_iter()
            .map(|u| {
                // eq. 23, then eq. 24 with ε/d̂ → ∞.
                let clipped = u.clamp(-clip, clip);
                if rng.random::<f64>() < (clipped + clip) / (2.0 * clip) {
                    clip
                } else {
                    -clip
                }
            })
            .collect();
        Ok(projection
            .back_project(&signs)
            .into_iter()
            .map(saturating_f32)
            .collect())
    }
}

/// `&mut dyn RngCore` as a sized generator, for the mechanisms' `impl Rng` entry points; it
/// forwards every call, so the stream is the caller's.
struct RngRef<'a>(&'a mut dyn RngCore);

impl RngCore for RngRef<'_> {
    fn next_u32(&mut self) -> u32 {
        self.0.next_u32()
    }
    fn next_u64(&mut self) -> u64 {
        self.0.next_u64()
    }
    fn fill_bytes(&mut self, dest: &mut [u8]) {
        self.0.fill_bytes(dest)
    }
}

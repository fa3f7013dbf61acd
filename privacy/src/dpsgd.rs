//! The clipping and noising of DP-SGD (Abadi et al. 2016; paper 004, Figure 7) on plain
//! per-sample gradient vectors: clip each sample's gradient in L2, sum, add N(0, σ²S²I) with S
//! the L2 sensitivity of the sum, and divide by the (expected) batch size.
//!
//! The per-sample gradients themselves come from the agents crate; the privacy of a run of
//! Poisson-subsampled steps is accounted for by [`crate::RdpAccountant`].

use rand::Rng;

use crate::error::{all_finite, at_least_one, positive, saturating_f32};
use crate::gaussian::add_gaussian_noise;
use crate::randomness::{open01, standard_normal};
use crate::PrivacyError;

/// How per-sample gradients are clipped.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub enum Clipping {
    /// ḡ = g / max(1, ‖g‖₂/C) on the whole flat vector. Sensitivity S = C.
    Flat {
        /// C > 0.
        clip: f64,
    },
    /// Each layer's segment clipped to its own C_l, as Opacus' per-layer clipping.
    /// Sensitivity S = √(Σ_l C_l²).
    PerLayer {
        /// Lengths of the consecutive segments; they sum to the dimension.
        layer_sizes: Vec<usize>,
        /// C_l > 0, one per layer.
        clips: Vec<f64>,
    },
}

/// Parameters of a DP-SGD gradient privatizer.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct DpSgdConfig {
    /// Noise multiplier σ > 0: the noise standard deviation is σ·S.
    pub noise_multiplier: f64,
    /// Clipping rule.
    pub clipping: Clipping,
    /// Number of parameters d (length of every per-sample gradient).
    pub dimension: usize,
}

impl DpSgdConfig {
    /// Validates the parameters.
    pub fn build(self) -> Result<DpSgd, PrivacyError> {
        positive("noise_multiplier", self.noise_multiplier)?;
        at_least_one("dimension", self.dimension)?;
        let sensitivity = match &self.clipping {
            Clipping::Flat { clip } => positive("clip", *clip)?,
            Clipping::PerLayer { layer_sizes, clips } => {
                if layer_sizes.is_empty() {
                    return Err(PrivacyError::Empty {
                        name: "layer_sizes",
                    });
                }
                if clips.len() != layer_sizes.len() {
                    return Err(PrivacyError::DimensionMismatch {
                        name: "clips (one per layer)",
                        expected: layer_sizes.len(),
                        found: clips.len(),
                    });
                }
                let total = layer_sizes
                    .iter()
                    .try_fold(0usize, |acc, &s| acc.checked_add(s))
                    .unwrap_or(usize::MAX);
                if total != self.dimension || layer_sizes.contains(&0) {
                    return Err(PrivacyError::DimensionMismatch {
                        name: "sum of non-empty layer_sizes",
                        expected: self.dimension,
                        found: total,
                    });
                }
                let mut s2 = 0.0;
                for &c in clips {
                    s2 += positive("clip", c)?.powi(2);
                }
                s2.sqrt()
            }
        };
        positive(
            "noise_multiplier * sensitivity",
            self.noise_multiplier * sensitivity,
        )?;
        Ok(DpSgd {
            config: self,
            sensitivity,
        })
    }
}

/// A validated DP-SGD privatizer.
#[derive(Debug, Clone, PartialEq)]
pub struct DpSgd {
    config: DpSgdConfig,
    sensitivity: f64,
}

/// One coordinate of the release: (s + σS·z) / L in f64, saturated to f32.
#[inline]
fn noisy_mean_entry(sum: f32, std: f64, z: f64, batch_size: f64) -> f32 {
    saturating_f32((f64::from(sum) + std * z) / batch_size)
}

/// Scales `g` in place to ‖g‖₂ ≤ `clip`: g / max(1, ‖g‖₂/clip).
pub fn clip_l2(g: &mut [f32], clip: f64) {
    let norm = g.iter().map(|&x| f64::from(x).powi(2)).sum::<f64>().sqrt();
    if norm > clip {
        let factor = clip / norm;
        for x in g.iter_mut() {
            *x = (f64::from(*x) * factor) as f32;
        }
    }
}

impl DpSgd {
    /// L2 sensitivity S of the clipped sum (C, or √Σ C_l²).
    pub fn sensitivity(&self) -> f64 {
        self.sensitivity
    }

    /// Number of parameters d.
    pub fn dimension(&self) -> usize {
        self.config.dimension
    }

    /// Noise standard deviation σ·S.
    pub fn noise_std(&self) -> f64 {
        self.config.noise_multiplier * self.sensitivity
    }

    /// Noise multiplier σ.
    pub fn noise_multiplier(&self) -> f64 {
        self.config.noise_multiplier
    }

    /// The clipping rule.
    pub fn clipping(&self) -> &Clipping {
        &self.config.clipping
    }

    /// (1/L)(s + N(0, σ²S²I)) for a sum `s` of per-sample gradients that the caller has
    /// already clipped by [`DpSgd::clipping`] (e.g. analytically, without materialising them).
    pub fn noisy_mean_of_clipped_sum(
        &self,
        mut clipped_sum: Vec<f32>,
        batch_size: f64,
        rng: &mut impl Rng,
    ) -> Result<Vec<f32>, PrivacyError> {
        self.check_clipped_sum(&clipped_sum, batch_size)?;
        // One pass, noise and division fused: this is on every DP-SGD step's hot path.
        let std = self.noise_std();
        for x in clipped_sum.iter_mut() {
            *x = noisy_mean_entry(*x, std, standard_normal(rng), batch_size);
        }
        Ok(clipped_sum)
    }

    /// The d standard normal draws [`DpSgd::noisy_mean_of_clipped_sum`] makes, in its order.
    pub fn draw_noise(&self, rng: &mut impl Rng) -> Vec<f64> {
        (0..self.config.dimension)
            .map(|_| standard_normal(rng))
            .collect()
    }

    /// [`DpSgd::noisy_mean_of_clipped_sum`] with its draws made beforehand by
    /// [`DpSgd::draw_noise`], so that a caller can draw them while it computes the sum: the
    /// same draws from the same generator give the same release, bit for bit.
    pub fn noisy_mean_of_clipped_sum_with(
        &self,
        mut clipped_sum: Vec<f32>,
        batch_size: f64,
        normals: &[f64],
    ) -> Result<Vec<f32>, PrivacyError> {
        self.check_clipped_sum(&clipped_sum, batch_size)?;
        if normals.len() != clipped_sum.len() {
            return Err(PrivacyError::DimensionMismatch {
                name: "pre-drawn noise",
                expected: clipped_sum.len(),
                found: normals.len(),
            });
        }
        let std = self.noise_std();
        for (x, &z) in clipped_sum.iter_mut().zip(normals) {
            *x = noisy_mean_entry(*x, std, z, batch_size);
        }
        Ok(clipped_sum)
    }

    fn check_clipped_sum(&self, clipped_sum: &[f32], batch_size: f64) -> Result<(), PrivacyError> {
        positive("batch_size", batch_size)?;
        if clipped_sum.len() != self.config.dimension {
            return Err(PrivacyError::DimensionMismatch {
                name: "clipped gradient sum",
                expected: self.config.dimension,
                found: clipped_sum.len(),
            });
        }
        all_finite("clipped gradient sum", clipped_sum)
    }

    /// Clips one per-sample gradient in place by the configured rule.
    ///
    /// f32 rounding can leave the clipped norm a few ulps above C; the noise is calibrated to C.
    /// This is the usual practice (Opacus does the same).
    pub fn clip(&self, g: &mut [f32]) -> Result<(), PrivacyError> {
        if g.len() != self.config.dimension {
            return Err(PrivacyError::DimensionMismatch {
                name: "per-sample gradient",
                expected: self.config.dimension,
                found: g.len(),
            });
        }
        all_finite("per-sample gradient", g)?;
        match &self.config.clipping {
            Clipping::Flat { clip } => clip_l2(g, *clip),
            Clipping::PerLayer { layer_sizes, clips } => {
                let mut start = 0;
                for (&size, &c) in layer_sizes.iter().zip(clips) {
                    clip_l2(&mut g[start..start + size], c);
                    start += size;
                }
            }
        }
        Ok(())
    }

    /// Σ_i clip(g_i), accumulated in f64.
    pub fn clipped_sum(&self, per_sample: &[Vec<f32>]) -> Result<Vec<f32>, PrivacyError> {
        host_clipped_sum(per_sample, self.config.dimension, |g| self.clip(g))
    }

    /// Σ_i clip(g_i) + N(0, σ²S²I).
    ///
    /// An empty batch is allowed and returns pure noise: under Poisson subsampling a step may
    /// draw no sample, and skipping the noise then would break the accounting.
    pub fn noisy_sum(
        &self,
        per_sample: &[Vec<f32>],
        rng: &mut impl Rng,
    ) -> Result<Vec<f32>, PrivacyError> {
        let mut out = self.clipped_sum(per_sample)?;
        add_gaussian_noise(&mut out, self.noise_std(), rng);
        Ok(out)
    }

    /// (1/L)(Σ_i clip(g_i) + N(0, σ²S²I)) (paper 004, Figure 7), with L = `batch_size`.
    ///
    /// With Poisson sampling pass the *expected* batch size qN, not the drawn one, which would
    /// itself depend on the private data (Opacus does the same).
    pub fn noisy_mean(
        &self,
        per_sample: &[Vec<f32>],
        batch_size: f64,
        rng: &mut impl Rng,
    ) -> Result<Vec<f32>, PrivacyError> {
        positive("batch_size", batch_size)?;
        self.noisy_mean_of_clipped_sum(self.clipped_sum(per_sample)?, batch_size, rng)
    }
}

/// Σ_i clip(g_i) of per-record gradients held on the host, accumulated in f64 and saturated
/// to f32: the host side of privrl's one clip → sum → noise path (the device side is
/// `privrl_agents::dp::release_batch`; both release the sum through the same
/// [`DpSgd::noisy_mean_of_clipped_sum`]). `clip` checks and clips one gradient in place; a
/// row of the wrong length is refused before it.
pub(crate) fn host_clipped_sum(
    per_record: &[Vec<f32>],
    dimension: usize,
    mut clip: impl FnMut(&mut [f32]) -> Result<(), PrivacyError>,
) -> Result<Vec<f32>, PrivacyError> {
    let mut sum = vec![0.0f64; dimension];
    let mut scratch = vec![0.0f32; dimension];
    for g in per_record {
        if g.len() != dimension {
            return Err(PrivacyError::DimensionMismatch {
                name: "per-sample gradient",
                expected: dimension,
                found: g.len(),
            });
        }
        scratch.copy_from_slice(g);
        clip(&mut scratch)?;
        for (s, &x) in sum.iter_mut().zip(&scratch) {
            *s += f64::from(x);
        }
    }
    Ok(sum.into_iter().map(saturating_f32).collect())
}

/// Poisson subsampling: each of `n` indices enters the batch independently with probability
/// `q` ∈ (0, 1], which is the sampling that the RDP accountant assumes.
pub fn poisson_sample(n: usize, q: f64, rng: &mut impl Rng) -> Result<Vec<usize>, PrivacyError> {
    if !(q > 0.0 && q <= 1.0) {
        return Err(PrivacyError::OutOfRange {
            name: "sample_rate",
            value: q,
            expected: "in (0, 1]",
        });
    }
    Ok((0..n).filter(|_| open01(rng) < q).collect())
}

//! The configuration of the DP agents.

use burn::config::Config;
use privrl_privacy::{
    AccountantKind, Adjacency, GradientMechanism, GradientMechanismConfig, NoiseMode,
};

use crate::error::{check_count, check_non_negative, check_positive, AgentError};
use crate::{
    AdaptiveClipping, NoiseCalibration, PoissonSampling, PrivacyEngine, PrivacyEngineConfig,
};

/// DP-SGD parameters of a private training run (paper 004, Figure 7).
#[derive(Config, Debug)]
pub struct DpSgdTrainingConfig {
    /// Noise multiplier σ ≥ 0: the noise on the clipped sum has standard deviation σ·C.
    /// σ = 0 clips without noise and has no (ε, δ) guarantee (ε = ∞).
    #[config(default = 1.0)]
    pub noise_multiplier: f64,
    /// L2 bound C > 0 on each record's gradient; `None` disables clipping, which is allowed
    /// only with σ = 0 (the noise is calibrated to C).
    #[config(default = "Some(1.0)")]
    pub clip: Option<f64>,
    /// δ of the reported (ε, δ), in (0, 1).
    #[config(default = 1e-5)]
    pub delta: f64,
    /// Which datasets are neighbours in the reported ε ([`Adjacency`]): add/remove, as in
    /// Opacus, or substitution, whose ε is larger.
    #[config(default = "Adjacency::AddRemove")]
    pub adjacency: Adjacency,
    /// DP-SGD REINFORCE: episodes L per DP-SGD step, each clipped to C on its own, the noise
    /// added once to their sum and the sum divided by L (ignored by DQN, whose batch is
    /// [`DqnConfig::batch_size`](crate::DqnConfig::batch_size)). L = 1 is the slides' one episode per gradient.
    #[config(default = 1)]
    pub episodes_per_step: usize,
    /// Where the noise (and DQN's Poisson sampling) comes from: a generator seeded by the
    /// run, or the operating system's CSPRNG ([`NoiseMode`]).
    #[config(default = "NoiseMode::Seeded")]
    pub noise_rng: NoiseMode,
    /// Adaptive clipping ([`AdaptiveClipping`], Andrew et al. 2021): the target quantile γ of
    /// the per-record gradient norms that C tracks, starting from `clip`; `None`: C fixed.
    #[config(default = "None")]
    pub adaptive_clip_quantile: Option<f64>,
    /// Adaptive clipping: the geometric learning rate η_C of C.
    #[config(default = 0.2)]
    pub adaptive_clip_learning_rate: f64,
    /// Adaptive clipping: σ_b, the noise on the clipped count; `None`: the expected batch size
    /// / 20, as Andrew et al. suggest.
    #[config(default = "None")]
    pub adaptive_clip_count_noise: Option<f64>,
    /// Which accountant gives the reported ε ([`AccountantKind`]): RDP (default, as Opacus)
    /// or the tighter PLD. Training does not depend on it.
    #[config(default = "AccountantKind::Rdp")]
    pub accountant: AccountantKind,
}

impl DpSgdTrainingConfig {
    /// The gradient mechanism these parameters describe
    /// ([`GradientMechanismConfig::clipped_gaussian`]): DP-SGD for σ > 0 (which needs a clip
    /// C), clipping alone for σ = 0 with a C, and the raw gradient otherwise.
    pub fn mechanism(&self) -> Result<GradientMechanismConfig, AgentError> {
        check_non_negative("noise_multiplier", self.noise_multiplier)?;
        if let Some(clip) = self.clip {
            check_positive("clip", clip)?;
        } else if self.noise_multiplier > 0.0 {
            return Err(AgentError::InvalidParameter {
                name: "clip",
                value: f64::INFINITY,
                expected: "a bound C > 0 when noise_multiplier > 0",
            });
        }
        Ok(GradientMechanismConfig::clipped_gaussian(
            self.clip.unwrap_or(f64::INFINITY),
            self.noise_multiplier,
        ))
    }

    /// Validates the parameters (δ included) and builds the mechanism for gradients of
    /// `dimension` values: clip each record's gradient to C, sum, add N(0, σ²C²I), divide by
    /// the expected batch size L (Figure 7). Without noise and without clipping it returns
    /// the plain mean gradient, bit for bit.
    pub fn build(&self, dimension: usize) -> Result<Box<dyn GradientMechanism>, AgentError> {
        check_count("episodes_per_step", self.episodes_per_step)?;
        if !(self.delta > 0.0 && self.delta < 1.0) {
            return Err(AgentError::InvalidParameter {
                name: "delta",
                value: self.delta,
                expected: "in (0, 1)",
            });
        }
        Ok(self.mechanism()?.build(dimension, 1)?)
    }
}

impl DpSgdTrainingConfig {
    /// The adaptive clipping these parameters ask for, for batches of `expected_batch_size`
    /// records on average.
    pub fn adaptive_clipping(&self, expected_batch_size: f64) -> Option<AdaptiveClipping> {
        self.adaptive_clip_quantile.map(|quantile| {
            AdaptiveClipping::new(
                quantile,
                self.adaptive_clip_learning_rate,
                self.adaptive_clip_count_noise
                    .unwrap_or(expected_batch_size / 20.0),
            )
        })
    }

    /// The [`PrivacyEngine`] of a DP agent: samples N records at rate q with these C, σ, δ,
    /// adjacency and adaptive clipping, from a generator seeded by `seed` (or the operating
    /// system's). Every parameter is validated once, by [`PrivacyEngineConfig::check`] (named
    /// errors); C = ∞ with σ > 0 is refused there.
    pub(super) fn engine(
        &self,
        dataset_size: usize,
        sample_rate: f64,
        expected_batch_size: f64,
        seed: u64,
    ) -> Result<PrivacyEngine, AgentError> {
        check_count("episodes_per_step", self.episodes_per_step)?;
        let sampling = PoissonSampling {
            dataset_size,
            sample_rate,
        };
        let mut config = PrivacyEngineConfig::new(
            sampling,
            self.clip.unwrap_or(f64::INFINITY),
            NoiseCalibration::NoiseMultiplier(self.noise_multiplier),
        )
        .with_delta(self.delta)
        .with_adjacency(self.adjacency)
        .with_accountant(self.accountant);
        if let Some(adaptive) = self.adaptive_clipping(expected_batch_size) {
            config = config.with_adaptive_clipping(adaptive);
        }
        Ok(PrivacyEngine::from_valid(
            config.check()?,
            self.noise_rng.source(seed),
        )?)
    }
}

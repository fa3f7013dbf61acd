//! [`PrivacyEngine`]: DP-SGD for any Burn module, as Opacus' `PrivacyEngine`.

use std::fmt;

use burn::module::AutodiffModule;
use burn::optim::Optimizer;
use burn::tensor::backend::AutodiffBackend;
use privrl_privacy::{
    noise_multiplier_for_under, poisson_sample, AccountantKind, Adjacency, GradientMechanism,
    GradientMechanismConfig, MechanismRng, MechanismRngState, NoiseMode, PrivacyError,
    RandomnessSource, RdpAccountant, ReleaseSchedule,
};
use serde::{Deserialize, Serialize};

use crate::autodiff;
use crate::determinism::check_exact_division;
use crate::dp::release::release_batch;
use crate::dp::{ParamLayout, PerSampleGradients};
use crate::error::EngineError;
use crate::record::GradientRecord;
use crate::AdaptiveClipping;

/// Where σ comes from.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum NoiseCalibration {
    /// A given noise multiplier σ ≥ 0 (σ = 0: clipping without noise, ε = ∞).
    NoiseMultiplier(f64),
    /// The smallest σ whose ε after `steps` steps at the engine's q, δ and adjacency is at
    /// most `epsilon` (Opacus' `make_private_with_epsilon`), **by the RDP accountant** whatever
    /// the engine's [`AccountantKind`]: RDP's ε is an upper bound, so the run meets the target
    /// by either account (under PLD its reported ε is typically below the target, the
    /// calibration conservative by the gap between the two). Calibrating under PLD would cost
    /// a PLD composition per bisection step (tens of them, each up to seconds).
    TargetEpsilon {
        /// Target ε > 0.
        epsilon: f64,
        /// Number of steps the budget must last (≥ 1).
        steps: u64,
    },
}

/// Who may be in a step's batch, and how often: N records, each drawn independently with
/// probability q (Poisson sampling, the rate the accountant composes at).
///
/// Its fields are named at every call site because q and the clip C are both `f64`: a
/// positional `new(N, q, C, …)` let the two be swapped into a config that every check accepts
/// (q = 1, C = 0.05 is as valid as q = 0.05, C = 1) and whose ε is then wrong by orders of
/// magnitude.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PoissonSampling {
    /// Number of records N of the private dataset.
    pub dataset_size: usize,
    /// Poisson sampling rate q ∈ (0, 1]; the expected batch size is qN.
    pub sample_rate: f64,
}

/// Parameters of a [`PrivacyEngine`].
#[derive(Debug, Clone, PartialEq)]
pub struct PrivacyEngineConfig {
    /// Number of records N of the private dataset.
    pub dataset_size: usize,
    /// Poisson sampling rate q ∈ (0, 1]; the expected batch size is qN.
    pub sample_rate: f64,
    /// L2 bound C > 0 on each record's gradient.
    pub clip: f64,
    /// σ, given or calibrated.
    pub noise: NoiseCalibration,
    /// δ ∈ (0, 1) of the reported (ε, δ); default 1e-5.
    pub delta: f64,
    /// Neighbouring relation of the reported ε; default add/remove, as Opacus.
    pub adjacency: Adjacency,
    /// Quantile-based adaptive clipping starting from `clip`; `None` (default): C fixed.
    pub adaptive_clipping: Option<AdaptiveClipping>,
    /// Which accountant gives the spent ε; default RDP, as Opacus.
    pub accountant: AccountantKind,
}

impl PrivacyEngineConfig {
    /// The records of `sampling`, each gradient clipped to L2 norm `clip` (C), with σ from
    /// `noise`; δ = 1e-5, add/remove.
    pub fn new(sampling: PoissonSampling, clip: f64, noise: NoiseCalibration) -> Self {
        let PoissonSampling {
            dataset_size,
            sample_rate,
        } = sampling;
        Self {
            dataset_size,
            sample_rate,
            clip,
            noise,
            delta: 1e-5,
            adjacency: Adjacency::AddRemove,
            adaptive_clipping: None,
            accountant: AccountantKind::Rdp,
        }
    }

    /// The same with δ.
    pub fn with_delta(mut self, delta: f64) -> Self {
        self.delta = delta;
        self
    }

    /// The same under `adjacency`.
    pub fn with_adjacency(mut self, adjacency: Adjacency) -> Self {
        self.adjacency = adjacency;
        self
    }

    /// The same with ε by `accountant`.
    pub fn with_accountant(mut self, accountant: AccountantKind) -> Self {
        self.accountant = accountant;
        self
    }

    /// The same with quantile-based adaptive clipping.
    pub fn with_adaptive_clipping(mut self, adaptive: AdaptiveClipping) -> Self {
        self.adaptive_clipping = Some(adaptive);
        self
    }

    /// Validates every parameter, once (linfa's `check`), and resolves σ: the given one, or
    /// the calibrated one for a target ε. C may be ∞ (no clipping) only without noise and
    /// without adaptive clipping. Nothing downstream validates these values again; the
    /// [`PrivacyEngine`] built from the result only builds its mechanism from them.
    pub fn check(self) -> Result<ValidPrivacyEngineConfig, EngineError> {
        check_sampling(self.dataset_size, self.sample_rate)?;
        if !(self.delta > 0.0 && self.delta < 1.0) {
            return Err(EngineError::out_of_range("delta", self.delta, "in (0, 1)"));
        }
        let noise_multiplier = match self.noise {
            NoiseCalibration::NoiseMultiplier(sigma) => {
                if !(sigma.is_finite() && sigma >= 0.0) {
                    return Err(EngineError::out_of_range(
                        "noise_multiplier",
                        sigma,
                        ">= 0 and finite",
                    ));
                }
                sigma
            }
            NoiseCalibration::TargetEpsilon { epsilon, steps } => noise_multiplier_for_under(
                self.adjacency,
                epsilon,
                self.delta,
                self.sample_rate,
                steps,
            )?,
        };
        let unclipped_ok = noise_multiplier == 0.0 && self.adaptive_clipping.is_none();
        if !(self.clip > 0.0 && (self.clip.is_finite() || unclipped_ok)) {
            return Err(EngineError::out_of_range(
                "clip",
                self.clip,
                "> 0 and finite (∞ only without noise or adaptive clipping)",
            ));
        }
        let gradient_noise = match &self.adaptive_clipping {
            Some(adaptive) => adaptive.checked_gradient_noise(noise_multiplier)?,
            None => noise_multiplier,
        };
        Ok(ValidPrivacyEngineConfig {
            config: self,
            noise_multiplier,
            gradient_noise,
        })
    }
}

/// A [`PrivacyEngineConfig`] that [`PrivacyEngineConfig::check`] accepted, with σ resolved:
/// what a [`PrivacyEngine`] is built from.
#[derive(Debug, Clone, PartialEq)]
pub struct ValidPrivacyEngineConfig {
    config: PrivacyEngineConfig,
    noise_multiplier: f64,
    gradient_noise: f64,
}

impl ValidPrivacyEngineConfig {
    /// The configuration as given.
    pub fn config(&self) -> &PrivacyEngineConfig {
        &self.config
    }

    /// σ, given or calibrated: what every step is accounted at.
    pub fn noise_multiplier(&self) -> f64 {
        self.noise_multiplier
    }
}

/// DP-SGD for any Burn module (module docs): Poisson sampling, per-sample clipping to C,
/// Gaussian noise σC, division by the expected batch size, an optimiser step, and the ε spent.
///
/// Making a small MLP of one's own private, with the [`Traced`](crate::dp::Traced) fast path:
///
/// ```
/// use burn::backend::{Autodiff, NdArray};
/// use burn::module::Module;
/// use burn::nn::{Linear, LinearConfig};
/// use burn::optim::SgdConfig;
/// use burn::tensor::{activation::relu, Tensor};
/// use privrl_agents::dp::{select_records, Tape, Traced};
/// use privrl_agents::{NoiseCalibration, PoissonSampling, PrivacyEngine, PrivacyEngineConfig};
/// use privrl_privacy::RandomnessSource;
///
/// type B = Autodiff<NdArray>;
///
/// #[derive(Module, Debug)]
/// struct Net<B: burn::tensor::backend::Backend> {
///     hidden: Linear<B>,
///     out: Linear<B>,
/// }
///
/// impl<B: burn::tensor::backend::AutodiffBackend> Net<B> {
///     // Layers with parameters go through the tape; the rest is ordinary Burn.
///     fn forward(&self, x: Tensor<B, 2>, tape: &mut Tape<B>) -> Tensor<B, 2> {
///         let h = relu(tape.trace(&self.hidden, x));
///         tape.trace(&self.out, h)
///     }
/// }
///
/// let device = Default::default();
/// let net = Net::<B> {
///     hidden: LinearConfig::new(2, 8).init(&device),
///     out: LinearConfig::new(8, 1).init(&device),
/// };
/// // 64 records (x, y = x₀ − x₁), drawn from Burn's global generator: seeded here, since Burn
/// // seeds it from the operating system otherwise and the run would not repeat.
/// <B as burn::tensor::backend::Backend>::seed(&device, 7);
/// let x = Tensor::<B, 2>::random([64, 2], burn::tensor::Distribution::Default, &device);
/// let y = x.clone().narrow(1, 0, 1) - x.clone().narrow(1, 1, 1);
/// // Per-sample squared errors of the records `batch`.
/// let loss = Traced(|net: &Net<B>, batch: &[usize], tape: &mut Tape<B>| {
///     let error = net.forward(select_records(&x, batch), tape) - select_records(&y, batch);
///     error.powi_scalar(2).sum_dim(1).squeeze_dim::<1>(1)
/// });
///
/// // σ for ε = 3 at δ = 1e-5 over 20 steps of expected batch 16 (q = 0.25), C = 1.
/// let sampling = PoissonSampling { dataset_size: 64, sample_rate: 0.25 };
/// let config = PrivacyEngineConfig::new(
///     sampling,
///     1.0,
///     NoiseCalibration::TargetEpsilon { epsilon: 3.0, steps: 20 },
/// );
/// let mut engine = PrivacyEngine::new(config, RandomnessSource::Seeded(7)).unwrap();
/// let mut optimizer = SgdConfig::new().init();
/// let mut net = net;
/// for _ in 0..20 {
///     net = engine.step(net, &mut optimizer, 0.1, &loss).unwrap();
/// }
/// let epsilon = engine.epsilon().unwrap();
/// assert!(epsilon <= 3.0 && epsilon > 2.9, "{epsilon}");
/// println!("σ = {:.3}: ε = {epsilon:.3} ({})", engine.noise_multiplier(), engine.label());
/// ```
pub struct PrivacyEngine {
    config: PrivacyEngineConfig,
    noise_multiplier: f64,
    /// σ_Δ of the gradient: σ, or less with adaptive clipping (its count takes the rest).
    gradient_noise: f64,
    rng: MechanismRng,
    schedule: ReleaseSchedule,
    /// The gradient's release, built for the current C (its `record_clip`, ∞ for none) and the
    /// module's parameter count (its `dimension`), and rebuilt only when C moves (adaptive
    /// clipping).
    release: Option<Box<dyn GradientMechanism>>,
    /// The release of adaptive clipping's centred count (sensitivity ½, noise 2σ_b), if any.
    count_release: Option<Box<dyn GradientMechanism>>,
}

impl fmt::Debug for PrivacyEngine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PrivacyEngine")
            .field("config", &self.config)
            .field("noise_multiplier", &self.noise_multiplier)
            .field("steps", &self.steps())
            .finish()
    }
}

/// What a [`PrivacyEngine`] must carry over a checkpoint so that a resumed run continues
/// where it stopped: every release so far (ε continues, never restarts), the current N, q
/// and C (C moves under adaptive clipping), σ, δ, the adjacency, the accountant, and the position of the
/// sampling-and-noise generator (`None` for the operating system's, which has none).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EngineState {
    /// N of the next step.
    pub dataset_size: usize,
    /// q of the next step.
    pub sample_rate: f64,
    /// C of the next step.
    pub clip: f64,
    /// σ (the accounted one; with adaptive clipping the gradient's is σ_Δ).
    pub noise_multiplier: f64,
    /// Every release so far, with δ, the adjacency and the accountant.
    pub schedule: ReleaseSchedule,
    /// The generator's position.
    pub rng: Option<MechanismRngState>,
}

/// What [`PrivacyEngine::private_step`] returns: the release, which the engine's (ε, δ)
/// covers, and beside it statistics that it does not cover, behind
/// [`PrivateGradient::non_private_diagnostics`].
#[derive(Debug, Clone)]
pub struct PrivateGradient {
    /// The released gradient, in the module's parameter layout.
    pub gradient: GradientRecord,
    diagnostics: NonPrivateDiagnostics,
}

/// Statistics of the drawn batch computed **without noise**: the engine's (ε, δ) does not
/// cover them. The realised batch size tells whether a record was sampled (membership, under
/// add/remove adjacency), and the mean loss is a function of the batch's records. Use them for
/// debugging or on data that is not private; a run that logs them (e.g. the TD loss that
/// `DpSgdDqn::step` returns) publishes them outside the guarantee.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct NonPrivateDiagnostics {
    /// Σ_i ℓ_i / (drawn batch size) where the strategy sees the losses (NaN otherwise, and for
    /// an empty batch).
    pub mean_loss: f64,
    /// Records in the drawn batch.
    pub batch_size: usize,
    /// The 10th, 50th and 90th percentiles of the batch's per-record gradient norms ‖g_i‖₂
    /// before clipping (linear interpolation between order statistics, numpy's default; NaN
    /// for an empty batch): set beside C, they say how much of each gradient the clip keeps.
    pub norm_percentiles: [f64; 3],
    /// Records whose gradient norm exceeded the step's C (the clip scaled them down).
    pub clipped: usize,
}

impl PrivateGradient {
    /// The batch's unnoised statistics, outside the (ε, δ) guarantee ([`NonPrivateDiagnostics`]).
    pub fn non_private_diagnostics(&self) -> NonPrivateDiagnostics {
        self.diagnostics
    }
}

/// The 10th, 50th and 90th percentiles of `norms` (linear interpolation between order
/// statistics; NaN if empty) and how many exceed `clip`.
fn norm_statistics(norms: &[f32], clip: f64) -> ([f64; 3], usize) {
    let mut sorted: Vec<f64> = norms.iter().map(|&n| f64::from(n)).collect();
    sorted.sort_by(f64::total_cmp);
    let percentile = |p: f64| {
        if sorted.is_empty() {
            return f64::NAN;
        }
        let h = p * (sorted.len() - 1) as f64;
        let (low, high) = (h.floor() as usize, h.ceil() as usize);
        sorted[low] + (h - low as f64) * (sorted[high] - sorted[low])
    };
    (
        [percentile(0.1), percentile(0.5), percentile(0.9)],
        sorted.iter().filter(|&&x| x > clip).count(),
    )
}

/// How the mechanisms of an engine drawing from `source` sample: a seeded source keeps the
/// textbook Gaussian (and its bytes); the operating system's draws DP-SGD's noise on a grid,
/// from integer tables within total variation 10⁻⁷⁰ a coordinate of the exact discrete
/// Gaussian ([`privrl_privacy::GridGaussianSum`]).
fn noise_mode(source: RandomnessSource) -> NoiseMode {
    match source {
        RandomnessSource::Seeded(_) => NoiseMode::Seeded,
        RandomnessSource::Secure => NoiseMode::Secure,
    }
}

fn check_sampling(dataset_size: usize, sample_rate: f64) -> Result<(), EngineError> {
    if dataset_size == 0 {
        return Err(PrivacyError::Empty {
            name: "dataset_size",
        }
        .into());
    }
    if !(sample_rate > 0.0 && sample_rate <= 1.0) {
        return Err(EngineError::out_of_range(
            "sample_rate",
            sample_rate,
            "in (0, 1]",
        ));
    }
    Ok(())
}

impl PrivacyEngine {
    /// Validates `config` ([`PrivacyEngineConfig::check`]) and draws sampling and noise from
    /// `source` (a seed, or the operating system's CSPRNG; with the latter the noise is
    /// discrete Gaussian noise on a grid, drawn from tables within total variation 10⁻⁷⁰ a
    /// coordinate of the exact distribution, [`privrl_privacy::GridGaussianSum`], accounted at
    /// the same σ).
    ///
    /// A seed asks for a repeatable run: on burn-ndarray the first step refuses a build whose
    /// `simd` feature is on ([`EngineError::InexactDivision`], [`check_exact_division`]). The
    /// seed covers the engine's draws only: data drawn with `Tensor::random` repeats only after
    /// `B::seed`, since Burn seeds its global generator from the operating system.
    pub fn new(config: PrivacyEngineConfig, source: RandomnessSource) -> Result<Self, EngineError> {
        Self::from_valid(config.check()?, source)
    }

    /// The engine of a checked configuration, drawing sampling and noise from `source`.
    pub fn from_valid(
        valid: ValidPrivacyEngineConfig,
        source: RandomnessSource,
    ) -> Result<Self, EngineError> {
        let ValidPrivacyEngineConfig {
            config,
            noise_multiplier,
            gradient_noise,
        } = valid;
        // Σ_i (b_i − ½) has sensitivity ½: the Gaussian with noise multiplier 2σ_b on it adds
        // N(0, σ_b²) (σ = 0: no noise on the count either).
        let count_release =
            match &config.adaptive_clipping {
                Some(adaptive) => {
                    let count_noise = if noise_multiplier > 0.0 {
                        adaptive.count_noise
                    } else {
                        0.0
                    };
                    Some(
                        GradientMechanismConfig::clipped_gaussian(0.5, 2.0 * count_noise)
                            .build_for(1, 1, noise_mode(source))?,
                    )
                }
                None => None,
            };
        Ok(Self {
            schedule: ReleaseSchedule::new(config.adjacency, config.delta)
                .with_accountant(config.accountant),
            config,
            noise_multiplier,
            gradient_noise,
            rng: MechanismRng::new(source)?,
            release: None,
            count_release,
        })
    }

    /// The configuration, with the current N, q and C.
    pub fn config(&self) -> &PrivacyEngineConfig {
        &self.config
    }

    /// σ (calibrated, for a target ε): what every step is accounted at.
    pub fn noise_multiplier(&self) -> f64 {
        self.noise_multiplier
    }

    /// σ_Δ, the noise multiplier on the gradient: σ, or with adaptive clipping
    /// [`adaptive_gradient_noise`](crate::dp::adaptive_gradient_noise).
    pub fn gradient_noise_multiplier(&self) -> f64 {
        self.gradient_noise
    }

    /// C of the next step.
    pub fn clip(&self) -> f64 {
        self.config.clip
    }

    /// qN, what a step's clipped noisy sum is divided by.
    pub fn expected_batch_size(&self) -> f64 {
        self.config.sample_rate * self.config.dataset_size as f64
    }

    /// Sets N and q of the following steps, for a dataset that changes between steps (a
    /// replay buffer that fills): each step is accounted at the q it used. N and q must be
    /// public (functions of the step count, not of the data) for the accounting to hold.
    pub fn set_sampling(
        &mut self,
        dataset_size: usize,
        sample_rate: f64,
    ) -> Result<(), EngineError> {
        check_sampling(dataset_size, sample_rate)?;
        self.config.dataset_size = dataset_size;
        self.config.sample_rate = sample_rate;
        Ok(())
    }

    /// One Poisson batch: each record index in 0..N independently with probability q.
    pub fn sample(&mut self) -> Result<Vec<usize>, EngineError> {
        Ok(poisson_sample(
            self.config.dataset_size,
            self.config.sample_rate,
            &mut self.rng,
        )?)
    }

    /// The private gradient of `module` on `batch` (which must be a Poisson batch drawn by
    /// [`PrivacyEngine::sample`] for the accounting to hold): Σ_i clip_C(g_i) + N(0, σ²C²I),
    /// divided by qN, as a record in `module`'s parameter layout. Counts one release. An
    /// empty batch releases pure noise: skipping it would break the accounting.
    pub fn private_gradient<B, M>(
        &mut self,
        module: &M,
        batch: &[usize],
        per_sample: &(impl PerSampleGradients<B, M> + Sync),
    ) -> Result<GradientRecord, EngineError>
    where
        B: AutodiffBackend,
        M: AutodiffModule<B> + Sync,
    {
        Ok(self.private_step(module, batch, per_sample)?.gradient)
    }

    /// [`PrivacyEngine::private_gradient`] with the batch's unnoised statistics beside it
    /// ([`PrivateGradient::non_private_diagnostics`], outside the guarantee); with adaptive
    /// clipping it then moves C (module docs of [`AdaptiveClipping`]).
    pub fn private_step<B, M>(
        &mut self,
        module: &M,
        batch: &[usize],
        per_sample: &(impl PerSampleGradients<B, M> + Sync),
    ) -> Result<PrivateGradient, EngineError>
    where
        B: AutodiffBackend,
        M: AutodiffModule<B> + Sync,
    {
        if let Some(&index) = batch.iter().find(|&&i| i >= self.config.dataset_size) {
            return Err(EngineError::Index {
                index,
                size: self.config.dataset_size,
            });
        }
        self.build_release(module)?;
        let mechanism = self.release.as_ref().expect("built by build_release");
        let expected = self.expected_batch_size();
        let released = release_batch(
            module,
            batch,
            per_sample,
            mechanism.as_ref(),
            expected,
            &mut self.rng,
        )?;
        // Counted at the C this step clipped to, before adaptive clipping moves it.
        let (norm_percentiles, clipped) = norm_statistics(&released.norms, self.config.clip);
        if let Some(adaptive) = self.config.adaptive_clipping {
            self.adapt_clip(&adaptive, &released.norms, expected)?;
        }
        self.schedule
            .record(self.config.sample_rate, self.noise_multiplier, 1);
        Ok(PrivateGradient {
            gradient: released.layout.record(&released.values)?,
            diagnostics: NonPrivateDiagnostics {
                mean_loss: released.loss_sum / batch.len() as f64,
                batch_size: batch.len(),
                norm_percentiles,
                clipped,
            },
        })
    }

    /// Builds the gradient's mechanism for the current C and `module`'s parameter count,
    /// unless it is built already: once per run, or per step where C moves.
    fn build_release<B, M>(&mut self, module: &M) -> Result<(), EngineError>
    where
        B: AutodiffBackend,
        M: AutodiffModule<B> + Sync,
    {
        let clip = self.config.clip;
        let dimension = match &self.release {
            Some(built) if built.record_clip().unwrap_or(f64::INFINITY) == clip => return Ok(()),
            Some(built) => built.dimension(),
            None => {
                // Before the first release: a seeded run must be repeatable on this build.
                if matches!(self.rng, MechanismRng::Seeded(_)) {
                    check_exact_division::<B>()?;
                }
                // Reading the parameters initialises lazy ones: in a section, as every tracked op.
                autodiff::exclusive(|| ParamLayout::of(module).num_values())
            }
        };
        let mode = match self.rng {
            MechanismRng::Seeded(_) => NoiseMode::Seeded,
            MechanismRng::Secure(_) => NoiseMode::Secure,
        };
        self.release = Some(
            GradientMechanismConfig::clipped_gaussian(clip, self.gradient_noise)
                .build_for(dimension, 1, mode)?,
        );
        Ok(())
    }

    /// C ← C·exp(−η (b̃ − γ)) from the noised count of norms ≤ C ([`AdaptiveClipping`]).
    fn adapt_clip(
        &mut self,
        adaptive: &AdaptiveClipping,
        norms: &[f32],
        expected_batch_size: f64,
    ) -> Result<(), EngineError> {
        let clip = self.config.clip;
        let under = norms.iter().filter(|&&n| f64::from(n) <= clip).count() as f64;
        let centred = under - 0.5 * norms.len() as f64;
        let count_release = self
            .count_release
            .as_ref()
            .expect("built with adaptive clipping");
        let noisy = count_release.release_clipped_sum(vec![centred as f32], 1.0, &mut self.rng)?[0];
        let fraction = f64::from(noisy) / expected_batch_size + 0.5;
        let next = clip * (-adaptive.learning_rate * (fraction - adaptive.target_quantile)).exp();
        if !(next.is_finite() && next > 0.0) {
            return Err(EngineError::out_of_range(
                "clip",
                next,
                "> 0 and finite after adaptation",
            ));
        }
        self.config.clip = next;
        Ok(())
    }

    /// One DP-SGD step: a Poisson batch, its private gradient, and `optimizer`'s update of
    /// `module` with learning rate `lr` (in an autodiff section). Returns the updated module.
    pub fn step<B, M, O>(
        &mut self,
        module: M,
        optimizer: &mut O,
        lr: f64,
        per_sample: &(impl PerSampleGradients<B, M> + Sync),
    ) -> Result<M, EngineError>
    where
        B: AutodiffBackend,
        M: AutodiffModule<B> + Sync,
        O: Optimizer<M, B>,
    {
        let batch = self.sample()?;
        let gradient = self.private_gradient(&module, &batch, per_sample)?;
        autodiff::exclusive(move || {
            let grads = gradient.to_gradients_params(&module)?;
            Ok(optimizer.step(lr, module, grads))
        })
    }

    /// Releases so far.
    pub fn steps(&self) -> u64 {
        self.schedule.steps()
    }

    /// The releases so far, exactly ([`ReleaseSchedule`]).
    pub fn schedule(&self) -> &ReleaseSchedule {
        &self.schedule
    }

    /// The RDP accountant holding every release so far, under the engine's adjacency.
    pub fn accountant(&self) -> Result<RdpAccountant, EngineError> {
        Ok(RdpAccountant::of_schedule(&self.schedule)?)
    }

    /// ε spent so far at the configured δ, per record, under the configured adjacency, by the
    /// configured accountant: 0 before any step, ∞ for σ = 0. Under PLD a new value costs a
    /// composition of the whole schedule (up to seconds); asking again before the next step
    /// is free.
    pub fn epsilon(&self) -> Result<f64, EngineError> {
        Ok(self.schedule.epsilon()?)
    }

    /// What an ε of this engine means, to print beside it: `per record, add/remove,
    /// δ = 1e-5, RDP accountant`.
    pub fn label(&self) -> String {
        format!(
            "per record, {}, δ = {}, {}",
            self.config.adjacency.name(),
            self.config.delta,
            self.config.accountant.name()
        )
    }

    /// What a checkpoint must hold for [`PrivacyEngine::restore`] ([`EngineState`]).
    pub fn state(&self) -> EngineState {
        EngineState {
            dataset_size: self.config.dataset_size,
            sample_rate: self.config.sample_rate,
            clip: self.config.clip,
            noise_multiplier: self.noise_multiplier,
            schedule: self.schedule.clone(),
            rng: self.rng.state(),
        }
    }

    /// Continues from `state`: the releases (so ε continues), N, q, C and the generator's
    /// position. Refused if `state` was written by an engine with another σ, δ, adjacency or
    /// accountant: its ε would be continued under the wrong parameters (or, for the
    /// accountant, printed as another accountant's).
    pub fn restore(&mut self, state: &EngineState) -> Result<(), EngineError> {
        let (got, want) = (&state.schedule, &self.schedule);
        if state.noise_multiplier != self.noise_multiplier
            || got.adjacency() != want.adjacency()
            || got.delta() != want.delta()
            || got.accountant_kind() != want.accountant_kind()
        {
            return Err(EngineError::Privacy(PrivacyError::Inconsistent(
                "an engine state saved with another noise multiplier, δ, adjacency or accountant",
            )));
        }
        check_sampling(state.dataset_size, state.sample_rate)?;
        if state.clip.partial_cmp(&0.0) != Some(std::cmp::Ordering::Greater) {
            return Err(EngineError::out_of_range("clip", state.clip, "> 0"));
        }
        self.rng.restore(state.rng.as_ref())?;
        self.config.dataset_size = state.dataset_size;
        self.config.sample_rate = state.sample_rate;
        self.config.clip = state.clip;
        self.schedule = state.schedule.clone();
        Ok(())
    }
}

//! DP-SGD in one home (Abadi et al. 2016, Algorithm 1; paper 004, Figure 7), laid out as
//! Opacus is: [`PrivacyEngine`](crate::PrivacyEngine) (`engine`), the one clip → sum → noise path
//! ([`release_batch`], `release`), per-sample gradients one rule per layer
//! (`grad_sample`: linear, conv, the traced fast path, micro-batches), the releases and their
//! ε ([`ReleaseSchedule`](privrl_privacy::ReleaseSchedule)), adaptive clipping, and the DP-SGD agents built on the engine
//! (`training`: [`DpSgdReinforce`](crate::DpSgdReinforce), [`DpSgdDqn`](crate::DpSgdDqn), and [`NoisyObservationEnv`](crate::NoisyObservationEnv) for local DP on
//! observations).
//!
//! The [`PrivacyEngine`](crate::PrivacyEngine), in the manner of Opacus' `PrivacyEngine`:
//!
//! Every step
//! 1. draws a batch by **Poisson sampling** (each of the N records independently with
//!    probability q), the sampling that the RDP accountant assumes;
//! 2. computes every sampled record's gradient g_i (per-sample gradients, below);
//! 3. clips each to ‖g_i‖₂ ≤ C, sums, adds N(0, σ²C²I) and divides by the **expected** batch
//!    size qN (the drawn size depends on the data; Opacus divides by qN too);
//! 4. hands the result to any Burn [`Optimizer`](burn::optim::Optimizer);
//! 5. records the release (q, σ) so that [`PrivacyEngine::epsilon`](crate::PrivacyEngine::epsilon) composes every step with
//!    the chosen accountant of [`privrl_privacy`] ([`AccountantKind`](privrl_privacy::AccountantKind)): RDP (Mironov, Talwar &
//!    Zhang 2019; the default, as Opacus) or the tighter PLD ([`PrivacyLossDistribution`](privrl_privacy::PrivacyLossDistribution)), under
//!    the chosen [`Adjacency`](privrl_privacy::Adjacency) (add/remove by default, as Opacus).
//!
//! σ is given, or calibrated from a target (ε, δ) and a number of steps
//! ([`NoiseCalibration::TargetEpsilon`](crate::NoiseCalibration::TargetEpsilon)), as Opacus' `make_private_with_epsilon`, always under
//! RDP (see there).
//!
//! # Per-sample gradients
//!
//! [`PerSampleGradients`] computes the `[batch, P]` matrix of per-sample gradients, one row per
//! record, in the module's parameter order ([`ParamLayout`]). Two strategies:
//! - [`Traced`], the fast path, as Opacus' grad samplers: the model's forward passes its
//!   [`GradSampleLayer`]s (Burn's `Linear` and `Conv2d`, privrl's [`Dense`](crate::Dense)) through a
//!   [`Tape`], which records each layer's input activations a and adds a zero probe to its
//!   output, whose gradient is the backprop δ = ∂(Σ_i ℓ_i)/∂z. One backward then gives every
//!   sample's gradient: ∇W_i = a_iᵀ δ_i for a linear layer; for a convolution,
//!   ∇W_i = δ_i · unfold(a_i)ᵀ with unfold the im2col of the (padded) input. The loss must be a
//!   sum of per-sample losses and the model must not mix samples (no batch norm).
//! - [`MicroBatches`], the fallback for **any** `AutodiffModule`: one forward and backward per
//!   record. Slow (one backward per sample), but it needs nothing from the model.
//!
//! Every graph is built and differentiated inside an [`autodiff`](crate::autodiff) section.
//!
//! # Reproducibility
//!
//! Sampling and noise come from one [`MechanismRng`](privrl_privacy::MechanismRng): ChaCha20
//! from a seed (same seed, same bytes), or ChaCha20 keyed by the operating system
//! ([`RandomnessSource::Secure`](privrl_privacy::RandomnessSource::Secure)), under which the
//! release is drawn on a grid, its noise within total variation 10⁻⁷⁰ a coordinate of the
//! exact discrete Gaussian ([`GridGaussianSum`](privrl_privacy::GridGaussianSum), accounted at
//! the same σ) and the run
//! does not repeat, by construction.

pub(crate) mod adaptive;
pub(crate) mod engine;
mod grad_sample;
mod layout;
mod release;
pub(crate) mod training;

// The user-facing types (PrivacyEngine, the DP agents) are at the crate root only, one path
// each. Here: the machinery a researcher extends: per-sample gradients one rule per layer, the one
// clip -> sum -> noise path, the parameter layout, adaptive clipping's noise.
pub use adaptive::adaptive_gradient_noise;
pub use grad_sample::{
    clip_per_sample, dp_sgd_gradient, per_sample_gradients_by_loop, per_sample_norms,
    probed_forward, select_records, traced_forward, ClippedSum, GivenGradients, GradSampleLayer,
    MicroBatches, PerSampleFactors, PerSampleGradients, ProbedForward, Tape, Traced,
};
pub use layout::{ParamEntry, ParamLayout};
pub use release::{release_batch, BatchRelease};
pub use training::private_td_gradient;

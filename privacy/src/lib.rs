//! Differential privacy for deep RL: mechanisms, accountants, a budget ledger and Lipschitz
//! bounds. Pure Rust, no burn dependency; gradients and observations are plain slices.
//!
//! | module: main item | what | source |
//! |---|---|---|
//! | `dirichlet`: [`DirichletMechanism`] | Dirichlet mechanism Dir(kπ), maps onto Δ_{m,η}, Lemma 1 radius; [`GridDirichletMechanism`], its floating-point-safe two-action variant on a grid of Δ_{2,τ} (pure ε-DP, own accounting) | paper 000, eq. 1, 5, 14, 15 |
//! | `dirichlet_accounting`: [`DirichletConfig`] | Theorem 1: ε (eq. 12), δ (eq. 6, 13; exact for m = 2), k for a target ε | paper 000 |
//! | `lipschitz`: [`mlp_lipschitz_bound`] | certified Lipschitz upper bound of an MLP policy | paper 000, Section 3 |
//! | `laplace`: [`LaplaceGradient`] | Laplace gradient mechanism with L1 clipping | paper 003, eq. 19–21 |
//! | `projected_random_sign`: [`ProjectedRandomSign`] | projected random sign, bit flip | paper 003, Algorithm 3, eq. 4, 5, 23, 24 |
//! | `gaussian`: [`GaussianMechanism`] | Gaussian mechanism, classic and analytic calibration | Dwork & Roth; Balle & Wang 2018 |
//! | `gradient_mechanism`: [`GradientMechanism`] | one object-safe trait for every gradient mechanism (none, clip, DP-SGD, Laplace, PRS), their names and configs | papers 003, 004 |
//! | `grid_gaussian`: [`GridGaussianSum`] | DP-SGD's Gaussian on a grid (secure mode): the clipped sum rounded, discrete Gaussian noise from tables (total variation < 10⁻⁷⁰ a coordinate from the exact one), the rounded sensitivity C/γ + √d, accounted at σ ≤ s/Δ_γ | Canonne, Kamath & Steinke 2020; Kairouz, Liu & Steinke 2021 |
//! | `dpsgd`: [`DpSgd`] | DP-SGD clipping (flat, per layer), noise, averaging, Poisson sampling | paper 004, Figure 7 |
//! | `rdp`: [`dp_sgd_epsilon`] | RDP accountant of the subsampled Gaussian, (ε, δ) conversion, σ for a target ε (the per-step RDP in the private `rdp_step`) | Mironov et al. 2019; Balle et al. 2020; Opacus |
//! | `pld`: [`PrivacyLossDistribution`] | PLD accountant of the subsampled Gaussian (tighter ε, an upper bound), heterogeneous schedules, both adjacencies; [`AccountantKind`], the choice between RDP and PLD | Koskela et al. 2020; Doroshenko et al. 2022; dp-accounting |
//! | `composition`: [`Accountant`] | basic and advanced composition, the `Accountant` trait | DRV 2010; Kairouz et al. 2015 |
//! | `accountants`: [`RdpAccountant`] | [`ReleaseSchedule`]: a DP-SGD run's releases (each at the q it used) and their ε by RDP or PLD, the one DP-SGD accounting | Opacus' accountant history |
//! | `ledger`: [`Ledger`] | record of every release; spent so far; budget checks | |
//! | `observation_noise`: [`ObservationNoise`] | σ·IQR Gaussian noise on observations | paper 004, local DP |
//! | `discrete`: [`DiscreteGaussian`] | exact discrete Laplace and Gaussian samplers and Bernoulli(e^{−γ}), integer arithmetic only (no floating-point caveat) | Canonne, Kamath & Steinke 2020, Algorithms 1–3 |
//! | `discrete_table`: [`DiscreteGaussianTable`] | the discrete Gaussian from 256-bit cumulative tables (and a convolution of two above V = 2¹⁸): a table look-up a draw, within a computed total variation β ≈ 10⁻⁷⁰ of N_ℤ(0, V), the δ it adds stated | Peikert 2010, Theorem 3.1 (convolution) |
//! | `randomness`: [`NoiseMode`] | seeded or OS randomness, samplers; the floating-point caveat | Mironov 2012 |
//! | `audit`: [`counting_audit`], [`one_run_epsilon_lower_bound`], [`gaussian_dp_audit`] | empirical ε lower bounds from canary scores: Clopper–Pearson counting, one-run, Gaussian trade-off | Kairouz et al. 2015; Nasr et al. 2023; Steinke et al. 2023 |
//! | `adjacency`: [`Adjacency`] | add/remove and substitution neighbours of the subsampled Gaussian's RDP | Balle et al. 2018; Mironov et al. 2019 |
//!
//! Every public item has one path, at the crate root; the modules are private.
//!
//! Configs are validated once, by `XConfig::build(self) -> Result<X, PrivacyError>`; the built
//! value's hot path does not check its parameters again. Every mechanism takes `&mut impl Rng`.
//!
//! A teacher's two-action policy, released through the Dirichlet mechanism of the
//! kickstarting paper with its (ε, δ) from Theorem 1:
//!
//! ```
//! use privrl_privacy::{DirichletConfig, Mechanism, NoiseMode};
//!
//! let privacy = DirichletConfig {
//!     actions: 2,
//!     concentration: 5.0, // k: higher shares more, at a higher ε
//!     eta: 0.1,           // the released policy stays in Δ_{m,η}
//!     tau: 0.02,          // outputs outside Δ_{m,τ} are the δ event
//!     lipschitz: 1.0,     // of the teacher's observation → policy map
//!     adjacency: 0.01,    // neighbouring observations are this close
//! }
//! .build()?;
//! // Seeded for a reproducible example; `NoiseMode::Secure` reads the OS instead.
//! let mut rng = NoiseMode::Seeded.rng(7)?;
//! let delta = privacy.delta(10_000, 0.95, &mut rng)?; // exact for two actions
//! let mechanism = privacy.mechanism(&delta)?;
//! let released = mechanism.release(&[0.6, 0.4], &mut rng)?;
//! let cost = mechanism.cost();
//! println!("shared {released:?} at ε = {:.2}, δ = {:.1e}", cost.epsilon, cost.delta);
//! assert!((released.iter().sum::<f64>() - 1.0).abs() < 1e-12);
//! assert!(cost.epsilon > 0.0 && cost.delta < 1.0);
//! # Ok::<(), privrl_privacy::PrivacyError>(())
//! ```

#![warn(missing_docs)]
#![warn(unreachable_pub)]

mod accountants;
mod adjacency;
mod audit;
mod composition;
mod dirichlet;
mod dirichlet_accounting;
mod discrete;
mod discrete_table;
mod dpsgd;
mod epsilon;
mod error;
mod gaussian;
mod gradient_mechanism;
mod grid_gaussian;
mod laplace;
mod ledger;
mod lipschitz;
mod mechanism;
mod observation_noise;
mod pld;
mod projected_random_sign;
mod randomness;
mod rdp;
mod rdp_step;
mod special;

pub use accountants::{RdpAccountant, ReleaseSchedule};
pub use adjacency::{rdp_subsampled_gaussian_under, Adjacency};
pub use audit::{
    clopper_pearson_lower, clopper_pearson_upper, counting_audit, counting_epsilon_lower_bound,
    gaussian_dp_audit, gaussian_dp_mu_lower_bound, gdp_epsilon, one_run_epsilon_lower_bound,
    one_run_guesses, one_run_p_value, AuditCounts, CanaryScores, OneRunGuesses, ThresholdAudit,
    ThresholdChoice,
};
pub use composition::{
    advanced_composition, basic_composition, drv_advanced_composition, Accountant,
    AdvancedAccountant, BasicAccountant, Composition,
};
pub use dirichlet::{
    certified_l2_radius, check_restricted_simplex, concentration_radius, penalty_radius,
    restrict_to_simplex, sample_dirichlet, DirichletMechanism, DirichletSampler,
    GridDirichletMechanism, SimplexMap,
};
pub use dirichlet_accounting::{
    DeltaEstimate, DeltaMethod, DirichletConfig, DirichletPrivacy, DELTA_CONFIDENCE, MAX_ACTIONS,
};
pub use discrete::{
    bernoulli_double, bernoulli_exp_minus, flip_with_odds_exp_minus, DiscreteGaussian,
    DiscreteLaplace,
};
pub use discrete_table::DiscreteGaussianTable;
pub use dpsgd::{clip_l2, poisson_sample, Clipping, DpSgd, DpSgdConfig};
pub use epsilon::Epsilon;
pub use error::PrivacyError;
pub use gaussian::{
    analytic_gaussian_delta, analytic_gaussian_sigma, classic_gaussian_sigma, GaussianCalibration,
    GaussianConfig, GaussianMechanism,
};
pub use gradient_mechanism::{
    GradientMechanism, GradientMechanismConfig, GradientPrivacy, MechanismKind,
};
pub use grid_gaussian::GridGaussianSum;
pub use laplace::{clip_l1, GridLaplaceGradient, LaplaceConfig, LaplaceGradient};
pub use ledger::{Budget, Ledger, LedgerEntry, LedgerRun};
pub use lipschitz::{
    mlp_lipschitz_bound, spectral_norm, Activation, LipschitzBound, Matrix, OutputMap, SpectralNorm,
};
pub use mechanism::{Mechanism, PrivacyCost};
pub use observation_noise::{
    interquartile_range, BoundedObservationNoiseConfig, ObservationNoise, ObservationNoiseConfig,
};
pub use pld::{
    dp_sgd_epsilon_pld, schedule_delta, schedule_epsilon, AccountantKind, PldConfig,
    PrivacyLossDistribution,
};
pub use projected_random_sign::{
    default_reduced_dimension, BitFlip, ProjectedRandomSign, ProjectionMatrix, PrsConfig,
};
pub use randomness::{MechanismRng, MechanismRngState, NoiseMode, RandomnessSource, SecureRng};
pub use rdp::{
    compute_rdp, compute_rdp_under, default_orders, dp_sgd_epsilon, dp_sgd_epsilon_under,
    noise_multiplier_for, noise_multiplier_for_under, opacus_orders, rdp_subsampled_gaussian,
    rdp_to_dp, SubsampledGaussianSteps,
};

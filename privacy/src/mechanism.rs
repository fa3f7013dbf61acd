//! What every mechanism shares: its (ε, δ) cost and one release of a private value.

use rand::Rng;
use serde::{Deserialize, Serialize};

use crate::error::{delta_half_open, non_negative};
use crate::PrivacyError;

/// An (ε, δ) differential-privacy guarantee (Definition 2 of paper 000; ε-LDP is δ = 0).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct PrivacyCost {
    /// ε ≥ 0.
    pub epsilon: f64,
    /// δ ∈ [0, 1).
    pub delta: f64,
}

impl PrivacyCost {
    /// Checks ε ≥ 0 (finite) and δ ∈ [0, 1).
    pub fn new(epsilon: f64, delta: f64) -> Result<Self, PrivacyError> {
        Ok(Self {
            epsilon: non_negative("epsilon", epsilon)?,
            delta: delta_half_open("delta", delta)?,
        })
    }

    /// (ε, 0): pure differential privacy.
    pub fn pure(epsilon: f64) -> Result<Self, PrivacyError> {
        Self::new(epsilon, 0.0)
    }

    /// (0, 0): a release independent of the private data.
    pub const FREE: Self = Self {
        epsilon: 0.0,
        delta: 0.0,
    };
}

/// One release of a private value, with the (ε, δ) it costs.
///
/// Implemented by the mechanisms whose cost is an (ε, δ) pair per release: Dirichlet, Laplace,
/// projected random sign, Gaussian. DP-SGD steps are accounted for by [`crate::RdpAccountant`]
/// instead, and the observation-noise heuristic has no (ε, δ) at all.
pub trait Mechanism {
    /// What is released (`[f64]` for a policy or a gradient).
    type Input: ?Sized;
    /// The private output.
    type Output;

    /// Short name for the ledger (`"dirichlet"`, `"laplace"`, ...).
    fn name(&self) -> &'static str;

    /// The parameters that determine the cost, as (key, value) pairs for the ledger.
    fn parameters(&self) -> Vec<(String, f64)>;

    /// The (ε, δ) of one release.
    fn cost(&self) -> PrivacyCost;

    /// One private release of `input`. Fails only on an input that does not fit the mechanism
    /// (wrong length, non-finite entries, a policy off the simplex).
    fn release(
        &self,
        input: &Self::Input,
        rng: &mut impl Rng,
    ) -> Result<Self::Output, PrivacyError>;
}

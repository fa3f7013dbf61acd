//! Composition of (ε, δ) releases: basic (sequential) and advanced.
//!
//! * Basic: (Σε_i, Σδ_i) (Dwork & Roth 2014, Theorem 3.16; paper 003, Theorem 1).
//! * Advanced, homogeneous, as first stated: k releases of (ε, δ) are
//!   (√(2k ln(1/δ'))·ε + k·ε(e^ε − 1), kδ + δ') for any slack δ' > 0 (Dwork, Rothblum & Vadhan
//!   2010; Dwork & Roth 2014, Theorem 3.20): [`drv_advanced_composition`].
//! * Advanced, heterogeneous: Kairouz, Oh & Viswanath (2015, Theorem 3.5): releases
//!   (ε_i, δ_i) compose to (ε̃, 1 − (1 − δ')Π(1 − δ_i)) with
//!   ε̃ = min{ Σε_i, D + √(2 Σε_i² · ln(e + √(Σε_i²)/δ')), D + √(2 Σε_i² · ln(1/δ')) },
//!   D = Σ ε_i tanh(ε_i/2), where ε tanh(ε/2) = (e^ε − 1)ε/(e^ε + 1). For equal ε_i it is never worse than DRV
//!   (tanh(ε/2) ≤ e^ε − 1), so it is what [`Composition::Advanced`] uses.

use serde::{Deserialize, Serialize};

use crate::error::open_unit;
use crate::mechanism::PrivacyCost;
use crate::PrivacyError;

/// Composition of releases into one (ε, δ). Implemented by the basic and advanced accountants
/// and by the RDP accountant of DP-SGD, whose compositions differ in kind.
pub trait Accountant {
    /// Short name for reports.
    fn name(&self) -> &'static str;
    /// The (ε, δ) of everything recorded so far. δ may reach 1 (a vacuous guarantee) under
    /// basic composition; it is reported as is.
    fn spent(&self) -> Result<PrivacyCost, PrivacyError>;
}

/// Which composition theorem to apply.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub enum Composition {
    /// Sum of ε and of δ.
    Basic,
    /// Kairouz et al. 2015, Theorem 3.5, with slack δ' ∈ (0, 1).
    Advanced {
        /// δ'.
        slack: f64,
    },
}

impl Composition {
    /// Composes `releases`.
    pub fn compose(self, releases: &[PrivacyCost]) -> Result<PrivacyCost, PrivacyError> {
        match self {
            Self::Basic => Ok(basic_composition(releases)),
            Self::Advanced { slack } => advanced_composition(releases, slack),
        }
    }
}

/// (Σε_i, Σδ_i); (0, 0) for no release.
pub fn basic_composition(releases: &[PrivacyCost]) -> PrivacyCost {
    PrivacyCost {
        epsilon: releases.iter().map(|r| r.epsilon).sum(),
        delta: releases.iter().map(|r| r.delta).sum(),
    }
}

/// Kairouz et al. 2015, Theorem 3.5 (see the module docs), slack δ' ∈ (0, 1).
pub fn advanced_composition(
    releases: &[PrivacyCost],
    slack: f64,
) -> Result<PrivacyCost, PrivacyError> {
    open_unit("slack", slack)?;
    if releases.is_empty() {
        return Ok(PrivacyCost::FREE);
    }
    let sum_eps: f64 = releases.iter().map(|r| r.epsilon).sum();
    let sum_sq: f64 = releases.iter().map(|r| r.epsilon * r.epsilon).sum();
    let drift: f64 = releases
        .iter()
        .map(|r| r.epsilon * (0.5 * r.epsilon).tanh())
        .sum();
    let second = drift + (2.0 * sum_sq * (std::f64::consts::E + sum_sq.sqrt() / slack).ln()).sqrt();
    let third = drift + (2.0 * sum_sq * -slack.ln()).sqrt();
    let epsilon = sum_eps.min(second).min(third);
    // 1 − (1 − δ')Π(1 − δ_i), in log space for many small δ_i.
    let log_keep: f64 = releases.iter().map(|r| (-r.delta).ln_1p()).sum::<f64>() + (-slack).ln_1p();
    let delta = -log_keep.exp_m1();
    Ok(PrivacyCost { epsilon, delta })
}

/// Dwork–Rothblum–Vadhan: `count` releases of (ε, δ) are
/// (√(2k ln(1/δ'))·ε + k·ε(e^ε − 1), kδ + δ'), slack δ' ∈ (0, 1).
pub fn drv_advanced_composition(
    release: PrivacyCost,
    count: u64,
    slack: f64,
) -> Result<PrivacyCost, PrivacyError> {
    open_unit("slack", slack)?;
    let release = PrivacyCost::new(release.epsilon, release.delta)?;
    if count == 0 {
        return Ok(PrivacyCost::FREE);
    }
    let k = count as f64;
    let e = release.epsilon;
    Ok(PrivacyCost {
        epsilon: (2.0 * k * -slack.ln()).sqrt() * e + k * e * e.exp_m1(),
        delta: k * release.delta + slack,
    })
}

/// Basic composition of recorded releases.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct BasicAccountant {
    releases: Vec<PrivacyCost>,
}

impl BasicAccountant {
    /// No release yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Records one release.
    pub fn record(&mut self, cost: PrivacyCost) {
        self.releases.push(cost);
    }
}

impl Accountant for BasicAccountant {
    fn name(&self) -> &'static str {
        "basic"
    }
    fn spent(&self) -> Result<PrivacyCost, PrivacyError> {
        Ok(basic_composition(&self.releases))
    }
}

/// Advanced (Kairouz et al.) composition of recorded releases with a fixed slack δ'.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AdvancedAccountant {
    releases: Vec<PrivacyCost>,
    slack: f64,
}

impl AdvancedAccountant {
    /// No release yet; slack δ' ∈ (0, 1).
    pub fn new(slack: f64) -> Result<Self, PrivacyError> {
        Ok(Self {
            releases: Vec::new(),
            slack: open_unit("slack", slack)?,
        })
    }

    /// Records one release.
    pub fn record(&mut self, cost: PrivacyCost) {
        self.releases.push(cost);
    }
}

impl Accountant for AdvancedAccountant {
    fn name(&self) -> &'static str {
        "advanced"
    }
    fn spent(&self) -> Result<PrivacyCost, PrivacyError> {
        advanced_composition(&self.releases, self.slack)
    }
}

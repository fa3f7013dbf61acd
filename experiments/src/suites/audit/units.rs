//! The unit of `cargo xtask audit`: one mechanism's audit at one setting and seed,
//! `<out>/units/<setting>/seed<k>.json`, written atomically when it finishes.

use std::path::{Path, PathBuf};

use privrl_privacy::{OneRunGuesses, ThresholdAudit};
use serde::{Deserialize, Serialize};

use super::setting::Setting;

/// The one-run audit's guesses and its ε lower bound (Steinke, Nasr & Jagielski 2023).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct OneRunRow {
    /// Canaries, guesses and correct guesses over every run, pooled.
    pub guesses: OneRunGuesses,
    /// The ε lower bound at the unit's δ and confidence.
    pub epsilon: f64,
}

/// The Gaussian trade-off reading: μ lower bound and its ε at δ, valid as a bound on ε only
/// where the mechanism's trade-off curve is Gaussian (DP-SGD with q = 1).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct GdpRow {
    /// The test behind μ.
    pub test: ThresholdAudit,
    /// ε at δ of μ-GDP with μ the bound.
    pub epsilon: f64,
    /// The μ of the mechanism itself, √T/σ.
    pub mu_exact: f64,
}

/// One finished audit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AuditUnit {
    /// What was audited.
    pub setting: Setting,
    /// The seed every draw derives from.
    pub seed: u64,
    /// The ε the mechanism claims for the audited unit of privacy (local mechanisms: per
    /// release, δ = 0); `None` where only an accountant states it.
    pub stated_epsilon: Option<f64>,
    /// The RDP accountant's ε at `delta` over the run's releases (DP-SGD).
    pub rdp_epsilon: Option<f64>,
    /// The PLD accountant's ε at `delta` over the run's releases (DP-SGD).
    pub pld_epsilon: Option<f64>,
    /// δ of every bound.
    pub delta: f64,
    /// Confidence of every lower bound.
    pub confidence: f64,
    /// The counting audit (Clopper–Pearson) with its threshold test; its `bound` is ε.
    pub counting: ThresholdAudit,
    /// The one-run audit, where canaries are many per run.
    pub one_run: Option<OneRunRow>,
    /// The Gaussian trade-off reading, where the mechanism is Gaussian.
    pub gdp: Option<GdpRow>,
    /// Held-in (= held-out) trials: releases per input, or canaries over all runs.
    pub trials: u64,
    /// Independent runs (1 for the local mechanisms).
    pub runs: u64,
    /// Wall time of the audit, seconds.
    pub wall_s: f64,
    /// The commit the audit ran at ([`crate::run::source_commit`]).
    pub commit: Option<String>,
    /// The Dirichlet audit's τ (eq. 6, solved for δ) and the audited pair's ε at δ estimated
    /// from its draws (a point estimate, not a bound).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dirichlet: Option<DirichletRow>,
}

/// What the Dirichlet audit adds to its unit.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct DirichletRow {
    /// τ of Δ_{m,τ}, solved so that eq. 6's δ (Monte Carlo upper bound) meets the unit's δ.
    pub tau: f64,
    /// The audited pair's ε at δ estimated from the draws (hockey-stick divergence).
    pub pair_epsilon: f64,
}

impl AuditUnit {
    /// The upper bound the audit is judged against: the stated ε, else the tightest
    /// accountant's (PLD's, and RDP's if it is lower).
    pub fn upper_bound(&self) -> Option<f64> {
        self.stated_epsilon
            .or(match (self.rdp_epsilon, self.pld_epsilon) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            })
    }

    /// Every lower bound the unit holds, with its name: counting, one run, and the Gaussian
    /// reading.
    pub fn lower_bounds(&self) -> Vec<(&'static str, f64)> {
        let mut bounds = vec![("counting", self.counting.bound)];
        if let Some(one_run) = &self.one_run {
            bounds.push(("one run", one_run.epsilon));
        }
        if let Some(gdp) = &self.gdp {
            bounds.push(("Gaussian trade-off", gdp.epsilon));
        }
        bounds
    }

    /// The best lower bound.
    pub fn best_lower_bound(&self) -> f64 {
        self.lower_bounds()
            .into_iter()
            .map(|(_, b)| b)
            .fold(0.0, f64::max)
    }
}

impl crate::unit::Unit for AuditUnit {
    type Setting = Setting;

    /// `<setting>/seed<k>.json`.
    fn path(root: &Path, setting: &Setting, seed: u64) -> PathBuf {
        root.join(setting.name()).join(format!("seed{seed}.json"))
    }
}

//! Rényi-DP accountant for the Poisson-subsampled Gaussian mechanism (Mironov, Talwar & Zhang
//! 2019, Section 3.3), with the conversion to (ε, δ) of Balle et al. 2020 (Theorem 21 of
//! arXiv:1905.09982).
//!
//! The arithmetic follows `opacus.accountants.analysis.rdp` (Opacus 1.6.0), and agrees with it
//! to 1e-6 relatively (tests pin Opacus' own outputs), except where Opacus rounds below the
//! exact RDP: privrl bounds the fractional-order series' tail, subtracts in log space without
//! cancellation and adds a bound on its f64 rounding, so each step's RDP is never below the
//! exact value ([`rdp_subsampled_gaussian`]; tested against 60-digit references).

use serde::{Deserialize, Serialize};

use crate::adjacency::{rdp_subsampled_gaussian_under, Adjacency};
use crate::error::{open_unit, positive};
use crate::PrivacyError;

pub use crate::rdp_step::rdp_subsampled_gaussian;
pub(crate) use crate::rdp_step::{check_order, check_sgm};

/// Opacus' default orders: `[1 + x / 10.0 for x in range(1, 100)] + list(range(12, 64))`.
pub fn opacus_orders() -> Vec<f64> {
    (1..100)
        .map(|x| 1.0 + f64::from(x) / 10.0)
        .chain((12..64).map(f64::from))
        .collect()
}

/// The orders privrl's accountant minimises over: Opacus' ([`opacus_orders`]) and 13 more
/// from 64 to 4096.
///
/// Why: the conversion to (ε, δ) costs at least ln(1/δ)/(α − 1), so orders that stop at 63
/// cannot print an ε below ≈ 0.10 at δ = 1e-5 whatever the noise (a target ε of 0.05 was
/// unreachable for every q and T). With orders to 4096 the floor is ≈ 0.003. Every order's
/// RDP is an upper bound, so more orders only ever lower ε towards the truth, never below it;
/// where Opacus' optimum lies below 63 the ε is the same.
pub fn default_orders() -> Vec<f64> {
    let mut orders = opacus_orders();
    orders.extend(LARGE_ORDERS);
    orders
}

/// The orders beyond Opacus' 63 (integers, so that their RDP is the exact finite sum).
const LARGE_ORDERS: [f64; 13] = [
    64.0, 80.0, 96.0, 128.0, 160.0, 192.0, 256.0, 384.0, 512.0, 768.0, 1024.0, 2048.0, 4096.0,
];

/// RDP of `steps` compositions at each order (Opacus' `compute_rdp`), for add/remove
/// neighbours.
pub fn compute_rdp(
    q: f64,
    sigma: f64,
    steps: u64,
    orders: &[f64],
) -> Result<Vec<f64>, PrivacyError> {
    compute_rdp_under(Adjacency::AddRemove, q, sigma, steps, orders)
}

/// RDP of `steps` compositions at each order under `adjacency` (RDP adds up over adaptive
/// steps under any neighbouring relation).
pub fn compute_rdp_under(
    adjacency: Adjacency,
    q: f64,
    sigma: f64,
    steps: u64,
    orders: &[f64],
) -> Result<Vec<f64>, PrivacyError> {
    if orders.is_empty() {
        return Err(PrivacyError::Empty { name: "orders" });
    }
    orders
        .iter()
        .map(|&a| Ok(rdp_subsampled_gaussian_under(adjacency, q, sigma, a)? * steps as f64))
        .collect()
}

/// (ε, optimal order) from RDP values at `orders` and δ ∈ (0, 1), by Balle et al. 2020:
/// ε = min_α [ rdp_α − (ln δ + ln α)/(α − 1) + ln((α − 1)/α) ] (Opacus' `get_privacy_spent`).
///
/// ε is clamped at 0 (a negative value is a valid but meaningless bound).
pub fn rdp_to_dp(orders: &[f64], rdp: &[f64], delta: f64) -> Result<(f64, f64), PrivacyError> {
    if orders.is_empty() {
        return Err(PrivacyError::Empty { name: "orders" });
    }
    if orders.len() != rdp.len() {
        return Err(PrivacyError::DimensionMismatch {
            name: "rdp",
            expected: orders.len(),
            found: rdp.len(),
        });
    }
    open_unit("delta", delta)?;
    let ln_delta = delta.ln();
    let mut best: Option<(f64, f64)> = None;
    for (&a, &r) in orders.iter().zip(rdp) {
        check_order(a)?;
        let eps = r - (ln_delta + a.ln()) / (a - 1.0) + ((a - 1.0) / a).ln();
        if eps.is_nan() {
            continue;
        }
        if best.is_none_or(|(e, _)| eps < e) {
            best = Some((eps, a));
        }
    }
    match best {
        Some((e, a)) if e.is_finite() => Ok((e.max(0.0), a)),
        _ => Err(PrivacyError::Numerical(
            "RDP to (epsilon, delta): no finite order",
        )),
    }
}

/// One block of identical subsampled-Gaussian steps.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct SubsampledGaussianSteps {
    /// Sampling rate q.
    pub sample_rate: f64,
    /// Noise multiplier σ.
    pub noise_multiplier: f64,
    /// Number of steps.
    pub steps: u64,
}

/// ε after `steps` ≥ 1 steps at (q, σ) and δ, over the default orders, for add/remove
/// neighbours (Opacus' `get_epsilon`). q must lie in (0, 1]: a run that samples nothing
/// releases nothing, and a zero step count is a mistake to name rather than an ε to print.
/// (The accountant itself, [`compute_rdp`], accepts q = 0 and no steps, as Opacus does, so
/// that a schedule may hold empty blocks.)
pub fn dp_sgd_epsilon(
    sample_rate: f64,
    noise_multiplier: f64,
    steps: u64,
    delta: f64,
) -> Result<f64, PrivacyError> {
    dp_sgd_epsilon_under(
        Adjacency::AddRemove,
        sample_rate,
        noise_multiplier,
        steps,
        delta,
    )
}

/// [`dp_sgd_epsilon`] under `adjacency`.
pub fn dp_sgd_epsilon_under(
    adjacency: Adjacency,
    sample_rate: f64,
    noise_multiplier: f64,
    steps: u64,
    delta: f64,
) -> Result<f64, PrivacyError> {
    check_run(sample_rate, steps)?;
    let orders = default_orders();
    let rdp = compute_rdp_under(adjacency, sample_rate, noise_multiplier, steps, &orders)?;
    Ok(rdp_to_dp(&orders, &rdp, delta)?.0)
}

/// The smallest noise multiplier σ (to a relative 1e-6, rounded up) whose ε after `steps`
/// steps at sampling rate q and δ is at most `target_epsilon`, by bisection: ε decreases in σ.
/// The search covers σ ∈ [1e-3, 1e6]; if σ = 1e-3 already meets the target, 1e-3 is returned.
///
/// Opacus' `get_noise_multiplier` does the same search with an absolute ε tolerance of 0.01.
/// For add/remove neighbours; [`noise_multiplier_for_under`] takes the relation.
pub fn noise_multiplier_for(
    target_epsilon: f64,
    delta: f64,
    sample_rate: f64,
    steps: u64,
) -> Result<f64, PrivacyError> {
    noise_multiplier_for_under(
        Adjacency::AddRemove,
        target_epsilon,
        delta,
        sample_rate,
        steps,
    )
}

/// [`noise_multiplier_for`] under `adjacency`.
pub fn noise_multiplier_for_under(
    adjacency: Adjacency,
    target_epsilon: f64,
    delta: f64,
    sample_rate: f64,
    steps: u64,
) -> Result<f64, PrivacyError> {
    positive("target_epsilon", target_epsilon)?;
    open_unit("delta", delta)?;
    check_run(sample_rate, steps)?;
    let eps = |s: f64| dp_sgd_epsilon_under(adjacency, sample_rate, s, steps, delta);
    const SIGMA_MIN: f64 = 1e-3;
    if eps(SIGMA_MIN)? <= target_epsilon {
        return Ok(SIGMA_MIN);
    }
    let mut lo = SIGMA_MIN;
    let mut hi = 1.0;
    while eps(hi)? > target_epsilon {
        lo = hi;
        hi *= 2.0;
        if hi > 1e6 {
            return Err(PrivacyError::Unreachable {
                name: "target_epsilon",
                target: target_epsilon,
                reason: "needs a noise multiplier above 1e6".into(),
            });
        }
    }
    while hi - lo > 1e-6 * hi {
        let mid = 0.5 * (lo + hi);
        if eps(mid)? > target_epsilon {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    Ok(hi)
}

/// A DP-SGD run to report an ε for: q ∈ (0, 1] (a run that samples nothing releases nothing)
/// and at least one step (zero steps is a mistake to name rather than an ε to print).
pub(crate) fn check_run(sample_rate: f64, steps: u64) -> Result<(), PrivacyError> {
    if !(sample_rate > 0.0 && sample_rate <= 1.0) {
        return Err(PrivacyError::OutOfRange {
            name: "sample_rate",
            value: sample_rate,
            expected: "in (0, 1]",
        });
    }
    if steps == 0 {
        Err(PrivacyError::Empty { name: "steps" })
    } else {
        Ok(())
    }
}

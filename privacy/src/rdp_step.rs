//! The RDP of one step of the Poisson-subsampled Gaussian mechanism under add/remove
//! neighbours (Mironov, Talwar & Zhang 2019): the per-step quantity that the RDP accountant
//! (`rdp`) composes and that `adjacency` bounds for substitution. Its own
//! file so that `rdp` and `adjacency` both build on it without importing each other.

use crate::special::{log_add, log_erfc, log_sub};
use crate::PrivacyError;

pub(crate) fn check_sgm(q: f64, sigma: f64) -> Result<(), PrivacyError> {
    if !(0.0..=1.0).contains(&q) {
        return Err(PrivacyError::OutOfRange {
            name: "sample_rate",
            value: q,
            expected: "in [0, 1]",
        });
    }
    if !(1e-100..=1e100).contains(&sigma) {
        return Err(PrivacyError::OutOfRange {
            name: "noise_multiplier",
            value: sigma,
            expected: "in [1e-100, 1e100]",
        });
    }
    Ok(())
}

pub(crate) fn check_order(order: f64) -> Result<f64, PrivacyError> {
    if order.is_finite() && order > 1.0 {
        Ok(order)
    } else {
        Err(PrivacyError::OutOfRange {
            name: "order",
            value: order,
            expected: "> 1 and finite",
        })
    }
}

/// RDP ε_α of one step of the subsampled Gaussian mechanism with sampling rate q ∈ [0, 1] and
/// noise multiplier σ > 0, at order α > 1: ln(A_α)/(α − 1).
pub fn rdp_subsampled_gaussian(q: f64, sigma: f64, order: f64) -> Result<f64, PrivacyError> {
    check_sgm(q, sigma)?;
    check_order(order)?;
    if q == 0.0 {
        return Ok(0.0);
    }
    if q == 1.0 {
        return Ok(order / (2.0 * sigma * sigma));
    }
    let log_a = if order.fract() == 0.0 && order < 1e6 {
        log_a_integer(q, sigma, order as u64)
    } else {
        log_a_fractional(q, sigma, order)?
    };
    Ok(log_a / (order - 1.0))
}

/// ln A_α for integer α: ln Σ_{i=0}^{α} C(α,i) q^i (1−q)^{α−i} e^{(i²−i)/(2σ²)}.
fn log_a_integer(q: f64, sigma: f64, alpha: u64) -> f64 {
    let (ln_q, ln_1mq) = (q.ln(), (-q).ln_1p());
    let mut log_a = f64::NEG_INFINITY;
    // ln C(α, i) for α beyond what the exact product holds in f64 (C(1000, 500) ≈ 2.7e299):
    // carried from term to term, ln C(α, i + 1) = ln C(α, i) + ln(α − i) − ln(i + 1).
    let mut log_binomial = 0.0f64;
    for i in 0..=alpha {
        let fi = i as f64;
        let ln_c = if alpha <= 1000 {
            ln_binomial_integer(alpha, i)
        } else {
            log_binomial
        };
        let log_coef = ln_c + fi * ln_q + (alpha - i) as f64 * ln_1mq;
        log_a = log_add(log_a, log_coef + (fi * fi - fi) / (2.0 * sigma * sigma));
        if i < alpha {
            log_binomial += ((alpha - i) as f64).ln() - (fi + 1.0).ln();
        }
    }
    log_a
}

/// ln C(n, k) for integers, as ln of the exact binomial when it fits in f64.
fn ln_binomial_integer(n: u64, k: u64) -> f64 {
    let k = k.min(n - k);
    let mut c = 1.0f64;
    for j in 0..k {
        c = c * (n - j) as f64 / (j + 1) as f64;
    }
    c.ln()
}

/// ln A_α for fractional α: the two-sided series of Mironov et al. (2019), Section 3.3, summed
/// until both new terms fall below e^{−30} (Opacus' cut-off).
fn log_a_fractional(q: f64, sigma: f64, alpha: f64) -> Result<f64, PrivacyError> {
    let (ln_q, ln_1mq) = (q.ln(), (-q).ln_1p());
    let (mut log_a0, mut log_a1) = (f64::NEG_INFINITY, f64::NEG_INFINITY);
    let z0 = sigma * sigma * (1.0 / q - 1.0).ln() + 0.5;
    let sqrt2_sigma = std::f64::consts::SQRT_2 * sigma;
    let ln_half = 0.5f64.ln();
    // Generalised binomial coefficient C(α, i), built up by C(α, i+1) = C(α, i)(α − i)/(i + 1).
    let mut coef = 1.0f64;
    let mut i = 0u64;
    loop {
        let fi = i as f64;
        let log_coef = coef.abs().ln();
        let j = alpha - fi;
        let log_t0 = log_coef + fi * ln_q + j * ln_1mq;
        let log_t1 = log_coef + j * ln_q + fi * ln_1mq;
        let log_e0 = ln_half + log_erfc((fi - z0) / sqrt2_sigma);
        let log_e1 = ln_half + log_erfc((z0 - j) / sqrt2_sigma);
        let log_s0 = log_t0 + (fi * fi - fi) / (2.0 * sigma * sigma) + log_e0;
        let log_s1 = log_t1 + (j * j - j) / (2.0 * sigma * sigma) + log_e1;
        if coef > 0.0 {
            log_a0 = log_add(log_a0, log_s0);
            log_a1 = log_add(log_a1, log_s1);
        } else {
            log_a0 = log_sub(log_a0, log_s0)
                .ok_or(PrivacyError::Numerical("RDP series (negative term)"))?;
            log_a1 = log_sub(log_a1, log_s1)
                .ok_or(PrivacyError::Numerical("RDP series (negative term)"))?;
        }
        i += 1;
        if log_s0.max(log_s1) < -30.0 {
            break;
        }
        if i > 1_000_000 {
            return Err(PrivacyError::Numerical("RDP series did not converge"));
        }
        coef = coef * (alpha - fi) / (fi + 1.0);
    }
    Ok(log_add(log_a0, log_a1))
}

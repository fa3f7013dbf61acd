//! Exact binomial confidence bounds (Clopper & Pearson 1934) and the binomial tails the audits
//! test against, on the crate's regularized incomplete Beta function.

use crate::error::open_unit;
use crate::special::{beta_reg, ln_gamma, normal_cdf};
use crate::PrivacyError;

/// Bisection steps on [0, 1]: 2⁻²⁰⁰ is far below any probability a count can resolve.
const BISECTION_STEPS: usize = 200;

fn check_count(successes: u64, trials: u64) -> Result<(), PrivacyError> {
    if trials == 0 {
        return Err(PrivacyError::Empty { name: "trials" });
    }
    if successes > trials {
        return Err(PrivacyError::OutOfRange {
            name: "successes",
            value: successes as f64,
            expected: "<= trials",
        });
    }
    Ok(())
}

/// P(X ≤ k) for X ~ Binomial(n, p): I_{1−p}(n − k, k + 1) (k < n), 1 for k ≥ n.
fn binomial_cdf(k: u64, n: u64, p: f64) -> Result<f64, PrivacyError> {
    if k >= n {
        return Ok(1.0);
    }
    beta_reg((n - k) as f64, (k + 1) as f64, 1.0 - p)
        .ok_or(PrivacyError::Numerical("binomial tail (incomplete Beta)"))
}

/// P(X ≥ v) for X ~ Binomial(n, p): I_p(v, n − v + 1) (1 ≤ v ≤ n), 1 for v = 0, 0 for v > n.
pub(crate) fn binomial_survival(v: u64, n: u64, p: f64) -> Result<f64, PrivacyError> {
    if v == 0 {
        return Ok(1.0);
    }
    if v > n {
        return Ok(0.0);
    }
    beta_reg(v as f64, (n - v + 1) as f64, p)
        .ok_or(PrivacyError::Numerical("binomial tail (incomplete Beta)"))
}

/// ln P(X = k) for X ~ Binomial(n, p), p ∈ (0, 1), k ≤ n.
pub(crate) fn ln_binomial_pmf(k: u64, n: u64, p: f64) -> f64 {
    let (k, n) = (k as f64, n as f64);
    ln_gamma(n + 1.0) - ln_gamma(k + 1.0) - ln_gamma(n - k + 1.0)
        + k * p.ln()
        + (n - k) * (-p).ln_1p()
}

/// One-sided Clopper–Pearson upper bound: the largest p with P(Binomial(n, p) ≤ k) ≥ β, so
/// that P(p_true > bound) ≤ β = 1 − `confidence` whatever p_true (exact, not asymptotic).
/// 1 when k = n. Rounded up: the bisection returns the upper end of its last bracket.
///
/// `k` = 0 has the closed form 1 − β^{1/n}.
pub fn clopper_pearson_upper(
    successes: u64,
    trials: u64,
    confidence: f64,
) -> Result<f64, PrivacyError> {
    check_count(successes, trials)?;
    let beta = 1.0 - open_unit("confidence", confidence)?;
    if successes == trials {
        return Ok(1.0);
    }
    // P(X ≤ k) falls from 1 (p = 0) to 0 (p = 1).
    let (mut lo, mut hi) = (0.0f64, 1.0f64);
    for _ in 0..BISECTION_STEPS {
        let mid = 0.5 * (lo + hi);
        if mid <= lo || mid >= hi {
            break;
        }
        if binomial_cdf(successes, trials, mid)? > beta {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    Ok(hi)
}

/// One-sided Clopper–Pearson lower bound: the smallest p with P(Binomial(n, p) ≥ k) ≥ β, so
/// that P(p_true < bound) ≤ β = 1 − `confidence`. 0 when k = 0. Rounded down.
///
/// `k` = n has the closed form β^{1/n}.
pub fn clopper_pearson_lower(
    successes: u64,
    trials: u64,
    confidence: f64,
) -> Result<f64, PrivacyError> {
    check_count(successes, trials)?;
    let beta = 1.0 - open_unit("confidence", confidence)?;
    if successes == 0 {
        return Ok(0.0);
    }
    // P(X ≥ k) rises from 0 (p = 0) to 1 (p = 1).
    let (mut lo, mut hi) = (0.0f64, 1.0f64);
    for _ in 0..BISECTION_STEPS {
        let mid = 0.5 * (lo + hi);
        if mid <= lo || mid >= hi {
            break;
        }
        if binomial_survival(successes, trials, mid)? < beta {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    Ok(lo)
}

/// Φ⁻¹(p) for p ∈ (0, 1), by bisection on ln Φ below ½ and on Φ by symmetry above (to about
/// 1e-13 absolute). `round_up` picks the upper end of the last bracket, else the lower.
pub(crate) fn normal_quantile(p: f64, round_up: bool) -> f64 {
    if p > 0.5 {
        return -normal_quantile(1.0 - p, !round_up);
    }
    let (lo, hi) = crate::special::normal_quantile_bracket(p.ln());
    debug_assert!(normal_cdf(lo) <= p * (1.0 + 1e-9));
    if round_up {
        hi
    } else {
        lo
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// P(X ≤ k) summed term by term: an independent check of the incomplete-Beta route.
    fn brute_cdf(k: u64, n: u64, p: f64) -> f64 {
        (0..=k).map(|j| ln_binomial_pmf(j, n, p).exp()).sum()
    }

    #[test]
    fn closed_forms_at_the_ends() {
        // k = 0: upper = 1 − β^{1/n}; k = n: lower = β^{1/n}. β = 0.05, n = 20.
        let want = 1.0 - 0.05f64.powf(1.0 / 20.0);
        let got = clopper_pearson_upper(0, 20, 0.95).unwrap();
        assert!((got - want).abs() < 1e-12, "{got} vs {want}");
        let got = clopper_pearson_lower(20, 20, 0.95).unwrap();
        assert!((got - 0.05f64.powf(1.0 / 20.0)).abs() < 1e-12);
        assert_eq!(clopper_pearson_upper(20, 20, 0.95).unwrap(), 1.0);
        assert_eq!(clopper_pearson_lower(0, 20, 0.95).unwrap(), 0.0);
        // By hand: n = 1, k = 0 at 95%: the upper bound is 1 − 0.05 = 0.95.
        assert!((clopper_pearson_upper(0, 1, 0.95).unwrap() - 0.95).abs() < 1e-12);
    }

    #[test]
    fn bounds_have_exact_tail_probability_beta() {
        for &(k, n) in &[(3u64, 20u64), (7, 10), (1, 50), (49, 50)] {
            for &confidence in &[0.9, 0.95, 0.999] {
                let beta = 1.0 - confidence;
                let upper = clopper_pearson_upper(k, n, confidence).unwrap();
                assert!(
                    (brute_cdf(k, n, upper) - beta).abs() < 1e-9,
                    "upper {k}/{n}"
                );
                let lower = clopper_pearson_lower(k, n, confidence).unwrap();
                let survival = 1.0 - brute_cdf(k - 1, n, lower);
                assert!((survival - beta).abs() < 1e-9, "lower {k}/{n}");
                assert!(lower < k as f64 / n as f64 && (k as f64 / n as f64) < upper);
            }
        }
    }

    #[test]
    fn large_counts_stay_accurate() {
        // n = 10⁶, k = 10⁵: the normal approximation 0.1 ± 1.645·√(0.09/10⁶) = 0.1 ± 4.935e-4
        // is within 1e-5 of the exact bound at these counts.
        let upper = clopper_pearson_upper(100_000, 1_000_000, 0.95).unwrap();
        let lower = clopper_pearson_lower(100_000, 1_000_000, 0.95).unwrap();
        assert!((upper - 0.100_493_5).abs() < 1e-5, "{upper}");
        assert!((lower - 0.099_506_5).abs() < 1e-5, "{lower}");
    }

    #[test]
    fn bad_counts_are_refused() {
        assert_eq!(
            clopper_pearson_upper(0, 0, 0.95),
            Err(PrivacyError::Empty { name: "trials" })
        );
        assert!(clopper_pearson_lower(5, 4, 0.95).is_err());
        assert!(clopper_pearson_lower(1, 4, 1.0).is_err());
        assert!(clopper_pearson_upper(1, 4, f64::NAN).is_err());
    }

    #[test]
    fn normal_quantile_inverts_the_cdf() {
        for &p in &[1e-12, 1e-5, 0.025, 0.3, 0.5, 0.8, 0.975, 1.0 - 1e-9] {
            let z = normal_quantile(p, false);
            assert!((normal_cdf(z) - p).abs() <= 1e-10 * p.max(1e-3), "p = {p}");
            assert!(normal_quantile(p, true) >= z);
        }
        // Φ⁻¹(0.975) = 1.959963984540054.
        assert!((normal_quantile(0.975, false) - 1.959_963_984_540_054).abs() < 1e-11);
    }
}

//! The one-run audit of Steinke, Nasr & Jagielski 2023 ("Privacy Auditing with One (1)
//! Training Run", Theorem 3.1 and Proposition 5.7 with Algorithm 2's p-value): m canaries,
//! each included independently with probability ½, an auditor who guesses "in" or "out" for r
//! of them and abstains on the rest. Under (ε, δ)-DP the number of correct guesses W satisfies
//! P(W ≥ v) ≤ P(Binomial(r, e^ε/(1 + e^ε)) ≥ v) + 2mδ·max_{1≤i≤v} P(v − i ≤ Binomial < v)/i,
//! so observing v correct guesses rejects every (ε, δ) whose right-hand side is below β.

use super::binomial::{binomial_survival, ln_binomial_pmf};
use crate::error::{all_finite, delta_half_open, open_unit};
use crate::PrivacyError;

fn check_guesses(canaries: u64, guesses: u64, correct: u64) -> Result<(), PrivacyError> {
    if canaries == 0 {
        return Err(PrivacyError::Empty { name: "canaries" });
    }
    if guesses > canaries {
        return Err(PrivacyError::OutOfRange {
            name: "guesses",
            value: guesses as f64,
            expected: "<= canaries",
        });
    }
    if correct > guesses {
        return Err(PrivacyError::OutOfRange {
            name: "correct",
            value: correct as f64,
            expected: "<= guesses",
        });
    }
    Ok(())
}

/// The p-value of v = `correct` right guesses out of r = `guesses` on m = `canaries` canaries
/// under the hypothesis that the mechanism is (ε, δ)-DP: the bound above, capped at 1.
pub fn one_run_p_value(
    canaries: u64,
    guesses: u64,
    correct: u64,
    epsilon: f64,
    delta: f64,
) -> Result<f64, PrivacyError> {
    check_guesses(canaries, guesses, correct)?;
    if !(epsilon.is_finite() && epsilon >= 0.0) {
        return Err(PrivacyError::OutOfRange {
            name: "epsilon",
            value: epsilon,
            expected: ">= 0 and finite",
        });
    }
    delta_half_open("delta", delta)?;
    p_value(canaries, guesses, correct, epsilon, delta)
}

fn p_value(m: u64, r: u64, v: u64, epsilon: f64, delta: f64) -> Result<f64, PrivacyError> {
    // The accuracy of ε-randomised response, 1/(1 + e^{−ε}).
    let q = 1.0 / (1.0 + (-epsilon).exp());
    let beta = binomial_survival(v, r, q)?;
    if delta == 0.0 || v == 0 {
        return Ok(beta.min(1.0));
    }
    // α = max_i P(v − i ≤ W' < v)/i, W' ~ Binomial(r, q): the pmf walked down from v − 1 by
    // its ratio pmf(k − 1)/pmf(k) = k(1 − q)/((r − k + 1)q), in logs.
    let below = (1.0 - beta).max(0.0);
    let ln_ratio = (1.0 - q).ln() - q.ln();
    let mut ln_pmf = ln_binomial_pmf(v - 1, r, q);
    let (mut sum, mut alpha) = (0.0f64, 0.0f64);
    for i in 1..=v {
        let k = v - i;
        sum += ln_pmf.exp();
        alpha = alpha.max(sum / i as f64);
        // Every later ratio is at most P(W' < v)/(i + 1): nothing more to gain.
        if below / (i + 1) as f64 <= alpha || k == 0 {
            break;
        }
        ln_pmf += (k as f64).ln() - ((r - k + 1) as f64).ln() + ln_ratio;
    }
    Ok((beta + alpha * delta * 2.0 * m as f64).min(1.0))
}

/// The one-run audit's ε lower bound at δ: the largest ε whose (ε, δ) the guesses reject at
/// `confidence` = 1 − β ([`one_run_p_value`] < β), rounded down; 0 if none is rejected.
///
/// The canaries must have been included independently with probability ½ each, and the
/// numbers of guesses fixed before the scores were seen (or a union bound paid over the
/// choices), as the theorem requires.
pub fn one_run_epsilon_lower_bound(
    canaries: u64,
    guesses: u64,
    correct: u64,
    delta: f64,
    confidence: f64,
) -> Result<f64, PrivacyError> {
    check_guesses(canaries, guesses, correct)?;
    delta_half_open("delta", delta)?;
    let beta = 1.0 - open_unit("confidence", confidence)?;
    let rejected = |epsilon: f64| -> Result<bool, PrivacyError> {
        Ok(p_value(canaries, guesses, correct, epsilon, delta)? < beta)
    };
    if !rejected(0.0)? {
        return Ok(0.0);
    }
    let (mut lo, mut hi) = (0.0f64, 1.0f64);
    while rejected(hi)? {
        lo = hi;
        hi *= 2.0;
        if hi > 1e4 {
            return Err(PrivacyError::Numerical("one-run audit: ε search"));
        }
    }
    for _ in 0..100 {
        let mid = 0.5 * (lo + hi);
        if hi - lo <= 1e-9 * hi {
            break;
        }
        if rejected(mid)? {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    Ok(lo)
}

/// The auditor's guesses of the one-run audit and how many were right.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct OneRunGuesses {
    /// m: the canaries.
    pub canaries: u64,
    /// r: guesses made (the rest abstained).
    pub guesses: u64,
    /// v: correct guesses.
    pub correct: u64,
}

/// The auditor of Steinke et al. (Algorithm 1): guess "in" for the `guess_in` highest scores,
/// "out" for the `guess_out` lowest, abstain on the rest (ties broken by index); `included[i]`
/// says whether canary i was in. `guess_in + guess_out` ≤ m.
pub fn one_run_guesses(
    scores: &[f64],
    included: &[bool],
    guess_in: usize,
    guess_out: usize,
) -> Result<OneRunGuesses, PrivacyError> {
    if scores.is_empty() {
        return Err(PrivacyError::Empty { name: "scores" });
    }
    if included.len() != scores.len() {
        return Err(PrivacyError::DimensionMismatch {
            name: "included",
            expected: scores.len(),
            found: included.len(),
        });
    }
    all_finite("scores", scores)?;
    let m = scores.len();
    if guess_in.saturating_add(guess_out) > m {
        return Err(PrivacyError::OutOfRange {
            name: "guess_in + guess_out",
            value: guess_in as f64 + guess_out as f64,
            expected: "<= the number of canaries",
        });
    }
    let mut order: Vec<usize> = (0..m).collect();
    order.sort_by(|&a, &b| scores[a].total_cmp(&scores[b]).then(a.cmp(&b)));
    let right_out = order[..guess_out].iter().filter(|&&i| !included[i]).count();
    let right_in = order[m - guess_in..]
        .iter()
        .filter(|&&i| included[i])
        .count();
    Ok(OneRunGuesses {
        canaries: m as u64,
        guesses: (guess_in + guess_out) as u64,
        correct: (right_in + right_out) as u64,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    #[test]
    fn all_correct_has_a_closed_form() {
        // r = v = 10, δ = 0: p = q^10 with q = 1/(1 + e^{−ε}); p = 0.05 at q = 0.05^{0.1},
        // ε = ln(q/(1 − q)) = ln(0.7411344/0.2588656) = 1.0518732.
        let epsilon = one_run_epsilon_lower_bound(100, 10, 10, 0.0, 0.95).unwrap();
        let q = 0.05f64.powf(0.1);
        assert!((epsilon - (q / (1.0 - q)).ln()).abs() < 1e-7, "{epsilon}");
        assert!((epsilon - 1.051_873_2).abs() < 1e-6);
    }

    #[test]
    fn p_value_is_the_binomial_tail_plus_the_delta_term() {
        // m = 20, r = 8, v = 6, ε = 0.5, δ = 1e-3, by brute force from the pmf.
        let (m, r, v, epsilon, delta) = (20u64, 8u64, 6u64, 0.5f64, 1e-3);
        let q = 1.0 / (1.0 + (-epsilon).exp());
        let pmf = |k: u64| ln_binomial_pmf(k, r, q).exp();
        let tail: f64 = (v..=r).map(pmf).sum();
        let alpha = (1..=v)
            .map(|i| (v - i..v).map(pmf).sum::<f64>() / i as f64)
            .fold(0.0, f64::max);
        let want = tail + alpha * delta * 2.0 * m as f64;
        let got = one_run_p_value(m, r, v, epsilon, delta).unwrap();
        assert!((got - want).abs() < 1e-12, "{got} vs {want}");
        assert!((one_run_p_value(m, r, v, epsilon, 0.0).unwrap() - tail).abs() < 1e-12);
    }

    #[test]
    fn randomized_response_is_audited_close_to_and_below_epsilon() {
        // 10⁴ canaries through ε = 2 randomised response, every one guessed from its bit.
        let epsilon = 2.0f64;
        let keep = epsilon.exp() / (1.0 + epsilon.exp());
        let mut rng = ChaCha8Rng::seed_from_u64(11);
        let m = 10_000usize;
        let included: Vec<bool> = (0..m).map(|_| rng.random_bool(0.5)).collect();
        let scores: Vec<f64> = included
            .iter()
            .map(|&b| if rng.random_bool(keep) == b { 1.0 } else { 0.0 })
            .collect();
        // Ties by index do not matter here: every canary with score 1 is guessed in.
        let ones = scores.iter().filter(|&&s| s == 1.0).count();
        let guesses = one_run_guesses(&scores, &included, ones, m - ones).unwrap();
        let bound = one_run_epsilon_lower_bound(
            guesses.canaries,
            guesses.guesses,
            guesses.correct,
            0.0,
            0.95,
        )
        .unwrap();
        assert!(bound <= epsilon && bound > 1.85, "{bound}");
        // δ > 0 lowers it.
        let with_delta = one_run_epsilon_lower_bound(
            guesses.canaries,
            guesses.guesses,
            guesses.correct,
            1e-5,
            0.95,
        )
        .unwrap();
        assert!(with_delta < bound && with_delta > 1.5, "{with_delta}");
    }

    #[test]
    fn chance_level_guesses_reject_nothing() {
        assert_eq!(
            one_run_epsilon_lower_bound(1000, 1000, 500, 1e-5, 0.95).unwrap(),
            0.0
        );
        assert_eq!(
            one_run_epsilon_lower_bound(10, 0, 0, 0.0, 0.95).unwrap(),
            0.0
        );
    }

    #[test]
    fn bad_inputs_are_named_errors() {
        assert_eq!(
            one_run_epsilon_lower_bound(0, 0, 0, 0.0, 0.95),
            Err(PrivacyError::Empty { name: "canaries" })
        );
        assert!(matches!(
            one_run_epsilon_lower_bound(10, 11, 0, 0.0, 0.95),
            Err(PrivacyError::OutOfRange {
                name: "guesses",
                ..
            })
        ));
        assert!(matches!(
            one_run_epsilon_lower_bound(10, 5, 6, 0.0, 0.95),
            Err(PrivacyError::OutOfRange {
                name: "correct",
                ..
            })
        ));
        assert!(matches!(
            one_run_p_value(10, 5, 3, f64::NAN, 0.0),
            Err(PrivacyError::OutOfRange {
                name: "epsilon",
                ..
            })
        ));
        assert!(one_run_p_value(10, 5, 3, 1.0, 1.0).is_err());
        assert!(one_run_guesses(&[], &[], 0, 0).is_err());
        assert!(one_run_guesses(&[1.0, f64::NAN], &[true, false], 1, 0).is_err());
        assert!(one_run_guesses(&[1.0, 2.0], &[true], 1, 0).is_err());
        assert!(one_run_guesses(&[1.0, 2.0], &[true, false], 2, 1).is_err());
    }
}

//! The counting audit: a membership test thresholds canary scores, and exact binomial
//! confidence bounds on its true- and false-positive rates bound ε from below (Kairouz, Oh &
//! Viswanath 2015, Theorem 2.1, as used by Jagielski et al. 2020 and Nasr et al. 2021/2023);
//! and its Gaussian-trade-off reading, a lower bound on μ of μ-GDP (Dong, Roth & Su 2022) and
//! the ε at δ of that μ.

use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use super::binomial::{clopper_pearson_lower, clopper_pearson_upper, normal_quantile};
use crate::error::{all_finite, delta_half_open, open_unit};
use crate::gaussian::analytic_gaussian_delta;
use crate::PrivacyError;

/// The scores a membership test gave to canaries that were in the data (held in) and that were
/// not (held out); a higher score means "more likely in". Checked once: both sides non-empty
/// and every score finite.
#[derive(Debug, Clone, PartialEq)]
pub struct CanaryScores {
    held_in: Vec<f64>,
    held_out: Vec<f64>,
}

impl CanaryScores {
    /// Refuses an empty side ([`PrivacyError::Empty`]) and NaN or ±∞
    /// ([`PrivacyError::NonFinite`]).
    pub fn new(held_in: Vec<f64>, held_out: Vec<f64>) -> Result<Self, PrivacyError> {
        if held_in.is_empty() {
            return Err(PrivacyError::Empty { name: "held_in" });
        }
        if held_out.is_empty() {
            return Err(PrivacyError::Empty { name: "held_out" });
        }
        all_finite("held_in", &held_in)?;
        all_finite("held_out", &held_out)?;
        Ok(Self { held_in, held_out })
    }

    /// The held-in canaries' scores.
    pub fn held_in(&self) -> &[f64] {
        &self.held_in
    }

    /// The held-out canaries' scores.
    pub fn held_out(&self) -> &[f64] {
        &self.held_out
    }
}

/// The outcome of one threshold test on n_in held-in and n_out held-out canaries: it guessed
/// "in" for `true_positives` of the held-in and `false_positives` of the held-out ones.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct AuditCounts {
    /// Held-in canaries guessed "in".
    pub true_positives: u64,
    /// Held-in canaries tested (n_in ≥ 1).
    pub held_in: u64,
    /// Held-out canaries guessed "in".
    pub false_positives: u64,
    /// Held-out canaries tested (n_out ≥ 1).
    pub held_out: u64,
}

impl AuditCounts {
    /// One-sided Clopper–Pearson bounds (TPR_lb, FPR_ub), each at confidence 1 − β/2, so that
    /// both hold together with probability at least `confidence` = 1 − β (union bound).
    pub fn rate_bounds(&self, confidence: f64) -> Result<(f64, f64), PrivacyError> {
        let half = 1.0 - 0.5 * (1.0 - open_unit("confidence", confidence)?);
        Ok((
            clopper_pearson_lower(self.true_positives, self.held_in, half)?,
            clopper_pearson_upper(self.false_positives, self.held_out, half)?,
        ))
    }
}

/// A confidence lower bound on ε at δ from one threshold test's counts.
///
/// An (ε, δ)-DP mechanism forces every test to TPR ≤ e^ε·FPR + δ and, for the complementary
/// test, TNR ≤ e^ε·FNR + δ (Kairouz et al. 2015, Theorem 2.1). With TPR ≥ TPR_lb and
/// FPR ≤ FPR_ub (both Clopper–Pearson, together at `confidence`),
/// ε ≥ max(ln((TPR_lb − δ)/FPR_ub), ln((1 − FPR_ub − δ)/(1 − TPR_lb)), 0): both directions
/// use the same two bounds, so no further correction is needed.
pub fn counting_epsilon_lower_bound(
    counts: AuditCounts,
    delta: f64,
    confidence: f64,
) -> Result<f64, PrivacyError> {
    delta_half_open("delta", delta)?;
    let (tpr, fpr) = counts.rate_bounds(confidence)?;
    Ok(epsilon_from_rates(tpr, fpr, delta))
}

/// max(ln((TPR − δ)/FPR), ln((1 − FPR − δ)/(1 − TPR)), 0), each term only where its numerator
/// is positive; FPR > 0 and TPR < 1 for Clopper–Pearson bounds on finite counts.
fn epsilon_from_rates(tpr: f64, fpr: f64, delta: f64) -> f64 {
    let mut epsilon = 0.0f64;
    if tpr - delta > 0.0 && fpr > 0.0 {
        epsilon = epsilon.max(((tpr - delta) / fpr).ln());
    }
    if 1.0 - fpr - delta > 0.0 && tpr < 1.0 {
        epsilon = epsilon.max(((1.0 - fpr - delta) / (1.0 - tpr)).ln());
    }
    epsilon
}

/// A confidence lower bound on μ of μ-GDP from one threshold test's counts.
///
/// A μ-GDP mechanism forces every test to FNR ≥ Φ(Φ⁻¹(1 − FPR) − μ) (Dong, Roth & Su 2022,
/// Definition 2.7), so μ ≥ Φ⁻¹(TPR) − Φ⁻¹(FPR) ≥ Φ⁻¹(TPR_lb) − Φ⁻¹(FPR_ub) (the complementary
/// test gives the same expression). Unlike [`counting_epsilon_lower_bound`], this bound is
/// about μ; turning it into an ε at δ ([`gdp_epsilon`]) assumes that the mechanism's trade-off
/// curve is a Gaussian one (true of the Gaussian mechanism and, asymptotically, of DP-SGD).
pub fn gaussian_dp_mu_lower_bound(
    counts: AuditCounts,
    confidence: f64,
) -> Result<f64, PrivacyError> {
    let (tpr, fpr) = counts.rate_bounds(confidence)?;
    Ok(mu_from_rates(tpr, fpr))
}

fn mu_from_rates(tpr: f64, fpr: f64) -> f64 {
    if tpr <= 0.0 || fpr >= 1.0 {
        return 0.0;
    }
    // Rounded so that the result can only shrink.
    (normal_quantile(tpr, false) - normal_quantile(fpr, true)).max(0.0)
}

/// The ε at δ of μ-GDP: the ε with Φ(−ε/μ + μ/2) − e^ε Φ(−ε/μ − μ/2) = δ (Dong, Roth & Su
/// 2022, Corollary 2.13; Balle & Wang 2018, Theorem 8 with Δ/σ = μ), rounded down, 0 where
/// δ(0) ≤ δ. μ ≥ 0, δ ∈ (0, 1).
pub fn gdp_epsilon(mu: f64, delta: f64) -> Result<f64, PrivacyError> {
    if !(mu.is_finite() && mu >= 0.0) {
        return Err(PrivacyError::OutOfRange {
            name: "mu",
            value: mu,
            expected: ">= 0 and finite",
        });
    }
    open_unit("delta", delta)?;
    let delta_at = |epsilon: f64| analytic_gaussian_delta(epsilon, 1.0, mu);
    if mu == 0.0 || delta_at(0.0) <= delta {
        return Ok(0.0);
    }
    let (mut lo, mut hi) = (0.0f64, 1.0f64);
    while delta_at(hi) > delta {
        lo = hi;
        hi *= 2.0;
        if hi > 1e6 {
            return Err(PrivacyError::Numerical("GDP to (ε, δ) conversion"));
        }
    }
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if mid <= lo || mid >= hi {
            break;
        }
        if delta_at(mid) > delta {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    Ok(lo)
}

/// How the threshold of a score test is chosen. A threshold picked as the best one on the very
/// scores that are then counted would overstate ε; each choice here keeps the confidence exact.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub enum ThresholdChoice {
    /// Thresholds fixed before the scores were seen (from the mechanism's parameters, say).
    /// Every one is tested on all the scores; the bound is the best over them, each computed
    /// at confidence 1 − β/k (union bound over the k thresholds).
    Fixed(Vec<f64>),
    /// Split the scores at random (ChaCha8 from `seed`): the best of a few hundred quantile
    /// thresholds (evenly spaced, and denser in both tails) is chosen on a fraction `selection_fraction` ∈ (0, 1) of each side, and the
    /// bound is computed at full confidence on the rest only.
    Split {
        /// Share of each side's scores used to choose the threshold.
        selection_fraction: f64,
        /// Seed of the random split.
        seed: u64,
    },
}

/// What a threshold audit found: the bound, the threshold it came from, and the counts on the
/// scores it was computed on.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ThresholdAudit {
    /// The confidence lower bound (ε for [`counting_audit`], μ for [`gaussian_dp_audit`]).
    pub bound: f64,
    /// The test guesses "in" for a score ≥ this.
    pub threshold: f64,
    /// The test's counts on the scores the bound was computed on.
    pub counts: AuditCounts,
    /// The confidence of the bound.
    pub confidence: f64,
}

/// The counting audit: the ε lower bound at δ of the best threshold test on `scores`
/// ([`counting_epsilon_lower_bound`]), chosen by `choice`, at `confidence` overall.
pub fn counting_audit(
    scores: &CanaryScores,
    delta: f64,
    confidence: f64,
    choice: &ThresholdChoice,
) -> Result<ThresholdAudit, PrivacyError> {
    delta_half_open("delta", delta)?;
    best_threshold(scores, confidence, choice, |counts, confidence| {
        counting_epsilon_lower_bound(counts, delta, confidence)
    })
}

/// The Gaussian-trade-off audit: the μ lower bound of the best threshold test on `scores`
/// ([`gaussian_dp_mu_lower_bound`]), chosen by `choice`, at `confidence` overall. Its ε at a
/// δ is [`gdp_epsilon`] of the bound, under that function's assumption.
pub fn gaussian_dp_audit(
    scores: &CanaryScores,
    confidence: f64,
    choice: &ThresholdChoice,
) -> Result<ThresholdAudit, PrivacyError> {
    best_threshold(scores, confidence, choice, gaussian_dp_mu_lower_bound)
}

/// The test "score ≥ `threshold`" counted on sorted scores.
fn counts_at(held_in: &[f64], held_out: &[f64], threshold: f64) -> AuditCounts {
    let at_least = |sorted: &[f64]| sorted.len() - sorted.partition_point(|&s| s < threshold);
    AuditCounts {
        true_positives: at_least(held_in) as u64,
        held_in: held_in.len() as u64,
        false_positives: at_least(held_out) as u64,
        held_out: held_out.len() as u64,
    }
}

fn sorted(mut values: Vec<f64>) -> Vec<f64> {
    values.sort_by(f64::total_cmp);
    values
}

/// Candidate thresholds of a split, from the sorted pooled selection scores: 128 evenly
/// spaced quantiles, and the scores at ranks ⌈1.1^j⌉ from either end, since at small δ the
/// best test sits in a tail (a false-positive rate of a few in n).
fn split_candidates(pooled: &[f64]) -> Vec<f64> {
    const EVEN: usize = 128;
    let n = pooled.len();
    let mut ranks: Vec<usize> = (0..EVEN).map(|i| i * (n - 1) / (EVEN - 1)).collect();
    let mut rank = 1.0f64;
    while (rank as usize) < n {
        let r = rank.ceil() as usize;
        ranks.push(n - r);
        ranks.push(r - 1);
        rank *= 1.1;
    }
    let mut candidates: Vec<f64> = ranks.into_iter().map(|r| pooled[r]).collect();
    candidates.sort_by(f64::total_cmp);
    candidates.dedup();
    candidates
}

fn best_threshold(
    scores: &CanaryScores,
    confidence: f64,
    choice: &ThresholdChoice,
    bound: impl Fn(AuditCounts, f64) -> Result<f64, PrivacyError>,
) -> Result<ThresholdAudit, PrivacyError> {
    let beta = 1.0 - open_unit("confidence", confidence)?;
    // The best of `thresholds` on (held_in, held_out), each bound at `each` confidence.
    let best = |held_in: &[f64], held_out: &[f64], thresholds: &[f64], each: f64| {
        let mut best: Option<ThresholdAudit> = None;
        for &threshold in thresholds {
            let counts = counts_at(held_in, held_out, threshold);
            let value = bound(counts, each)?;
            if best.is_none_or(|b| value > b.bound) {
                best = Some(ThresholdAudit {
                    bound: value,
                    threshold,
                    counts,
                    confidence: each,
                });
            }
        }
        best.ok_or(PrivacyError::Empty { name: "thresholds" })
    };
    match choice {
        ThresholdChoice::Fixed(thresholds) => {
            all_finite("thresholds", thresholds)?;
            let each = 1.0 - beta / thresholds.len().max(1) as f64;
            let held_in = sorted(scores.held_in.clone());
            let held_out = sorted(scores.held_out.clone());
            let found = best(&held_in, &held_out, thresholds, each)?;
            Ok(ThresholdAudit {
                confidence,
                ..found
            })
        }
        ThresholdChoice::Split {
            selection_fraction,
            seed,
        } => {
            let fraction = open_unit("selection_fraction", *selection_fraction)?;
            let mut rng = ChaCha8Rng::seed_from_u64(*seed);
            let mut split = |scores: &[f64], name: &'static str| {
                let mut shuffled = scores.to_vec();
                shuffled.shuffle(&mut rng);
                let chosen = ((fraction * scores.len() as f64).round() as usize).max(1);
                if chosen >= scores.len() {
                    return Err(PrivacyError::Empty { name });
                }
                let rest = shuffled.split_off(chosen);
                Ok((sorted(shuffled), sorted(rest)))
            };
            let (select_in, eval_in) = split(&scores.held_in, "held_in left after the split")?;
            let (select_out, eval_out) = split(&scores.held_out, "held_out left after the split")?;
            let pooled = sorted([select_in.as_slice(), select_out.as_slice()].concat());
            let candidates = split_candidates(&pooled);
            let chosen = best(&select_in, &select_out, &candidates, confidence)?;
            let counts = counts_at(&eval_in, &eval_out, chosen.threshold);
            Ok(ThresholdAudit {
                bound: bound(counts, confidence)?,
                threshold: chosen.threshold,
                counts,
                confidence,
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::randomness::standard_normal;

    /// The exact ε at δ of the Gaussian mechanism with sensitivity 1 and noise σ.
    fn gaussian_epsilon(sigma: f64, delta: f64) -> f64 {
        gdp_epsilon(1.0 / sigma, delta).unwrap()
    }

    /// n draws of N(mean, σ²).
    fn normals(n: usize, mean: f64, sigma: f64, seed: u64) -> Vec<f64> {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        (0..n)
            .map(|_| mean + sigma * standard_normal(&mut rng))
            .collect()
    }

    #[test]
    fn gdp_epsilon_matches_the_analytic_gaussian() {
        // The analytic calibration's σ at (ε, δ) = (1, 1e-5) is μ = 1/σ-GDP, so gdp_epsilon
        // must give ε = 1 back; and μ = 1 at δ = 0.05 by hand: δ(1.5) = Φ(−1) − e^{1.5}Φ(−2)
        // = 0.15866 − 4.4817·0.02275 = 0.0567 > 0.05 and δ(1.6) = 0.1357 − 4.953·0.01786
        // = 0.0472 < 0.05, so ε ∈ (1.5, 1.6).
        let sigma = crate::analytic_gaussian_sigma(1.0, 1e-5, 1.0).unwrap();
        assert!((gdp_epsilon(1.0 / sigma, 1e-5).unwrap() - 1.0).abs() < 1e-6);
        let epsilon = gdp_epsilon(1.0, 0.05).unwrap();
        assert!(epsilon > 1.5 && epsilon < 1.6, "{epsilon}");
        assert_eq!(gdp_epsilon(0.0, 1e-5).unwrap(), 0.0);
        assert!(gdp_epsilon(-1.0, 1e-5).is_err());
        assert!(gdp_epsilon(1.0, 0.0).is_err());
    }

    #[test]
    fn randomized_response_counts_recover_epsilon() {
        // ε-randomised response: TPR = e^ε/(1 + e^ε), FPR = 1/(1 + e^ε), at the exact expected
        // counts of 10⁶ trials per side: the bound is just below ε = 1 (the Clopper–Pearson
        // widths at 95% cost about 0.01).
        let n = 1_000_000u64;
        let p = 1.0f64.exp() / (1.0 + 1.0f64.exp());
        let counts = AuditCounts {
            true_positives: (p * n as f64).round() as u64,
            held_in: n,
            false_positives: ((1.0 - p) * n as f64).round() as u64,
            held_out: n,
        };
        let bound = counting_epsilon_lower_bound(counts, 0.0, 0.95).unwrap();
        assert!(bound < 1.0 && bound > 0.985, "{bound}");
        // A larger δ only lowers the bound; more confidence only lowers it.
        assert!(counting_epsilon_lower_bound(counts, 0.01, 0.95).unwrap() < bound);
        assert!(counting_epsilon_lower_bound(counts, 0.0, 0.999).unwrap() < bound);
    }

    #[test]
    fn a_high_score_means_in() {
        // The convention: a test guesses "in" for high scores. Scores that run the other way
        // (TPR = 1/(1+e), FPR = e/(1+e)) give no bound from either inequality used, so an
        // auditor whose score is reversed sees 0 and must negate its scores.
        let n = 1_000_000u64;
        let p = 1.0f64.exp() / (1.0 + 1.0f64.exp());
        let reversed = AuditCounts {
            true_positives: ((1.0 - p) * n as f64).round() as u64,
            held_in: n,
            false_positives: (p * n as f64).round() as u64,
            held_out: n,
        };
        assert_eq!(
            counting_epsilon_lower_bound(reversed, 0.0, 0.95).unwrap(),
            0.0
        );
        // The complementary inequality alone (TNR ≤ e^ε·FNR + δ): a test that is never wrong
        // on held-out canaries and right on half the held-in ones gives TPR_lb ≈ ½,
        // FPR_ub = 1 − (β/2)^{1/n} ≈ 3.7e-6: ln((1 − FPR_ub)/(1 − TPR_lb)) ≈ ln 2, while the
        // first inequality gives ln(½/3.7e-6) ≈ 11.8 — the larger one is returned.
        let sure = AuditCounts {
            true_positives: n / 2,
            held_in: n,
            false_positives: 0,
            held_out: n,
        };
        let bound = counting_epsilon_lower_bound(sure, 0.0, 0.95).unwrap();
        let fpr_ub = 1.0 - 0.025f64.powf(1.0 / n as f64);
        assert!((bound - (0.5 / fpr_ub).ln()).abs() < 0.01, "{bound}");
        // With the roles of the rates swapped, the complementary inequality carries it.
        let complementary = AuditCounts {
            true_positives: n,
            held_in: n,
            false_positives: n / 2,
            held_out: n,
        };
        let bound = counting_epsilon_lower_bound(complementary, 0.0, 0.95).unwrap();
        assert!((bound - (0.5 / fpr_ub).ln()).abs() < 0.01, "{bound}");
    }

    #[test]
    fn gaussian_mechanism_audit_is_close_to_and_below_its_exact_epsilon() {
        // The Gaussian mechanism, sensitivity 1, σ = 1: held out N(0, 1), held in N(1, 1). The
        // score is the release itself, a monotone function of the likelihood ratio, so the
        // threshold tests are the optimal tests. Exact ε at δ = 0.05 from Balle & Wang.
        let (sigma, delta) = (1.0, 0.05);
        let truth = gaussian_epsilon(sigma, delta);
        let scores = CanaryScores::new(
            normals(200_000, 1.0, sigma, 1),
            normals(200_000, 0.0, sigma, 2),
        )
        .unwrap();
        let split = ThresholdChoice::Split {
            selection_fraction: 0.25,
            seed: 3,
        };
        let audit = counting_audit(&scores, delta, 0.95, &split).unwrap();
        assert!(
            audit.bound <= truth && audit.bound >= 0.9 * truth,
            "counting: {} vs exact {truth}",
            audit.bound
        );
        // The same with thresholds fixed in advance (a grid over [0, 3]).
        let grid = ThresholdChoice::Fixed((0..=30).map(|i| f64::from(i) * 0.1).collect());
        let fixed = counting_audit(&scores, delta, 0.95, &grid).unwrap();
        assert!(
            fixed.bound <= truth && fixed.bound >= 0.9 * truth,
            "{fixed:?}"
        );
        // The Gaussian trade-off reading: μ just below 1, and ε at δ = 1e-5, far beyond what
        // counting can reach with 2·10⁵ scores, close to the exact one.
        let gdp = gaussian_dp_audit(&scores, 0.95, &split).unwrap();
        assert!(gdp.bound <= 1.0 && gdp.bound > 0.95, "μ = {}", gdp.bound);
        let truth = gaussian_epsilon(sigma, 1e-5);
        let epsilon = gdp_epsilon(gdp.bound, 1e-5).unwrap();
        assert!(
            epsilon <= truth && epsilon >= 0.93 * truth,
            "{epsilon} vs {truth}"
        );
    }

    #[test]
    fn indistinguishable_scores_give_no_privacy_loss() {
        // Both sides from the same distribution: ε = 0 is the truth, and the bound is 0 (it is
        // clamped at 0 and must not come out positive at 95% on this seed).
        let scores =
            CanaryScores::new(normals(5_000, 0.0, 1.0, 4), normals(5_000, 0.0, 1.0, 5)).unwrap();
        let split = ThresholdChoice::Split {
            selection_fraction: 0.5,
            seed: 6,
        };
        assert_eq!(
            counting_audit(&scores, 1e-5, 0.95, &split).unwrap().bound,
            0.0
        );
        assert_eq!(gaussian_dp_audit(&scores, 0.95, &split).unwrap().bound, 0.0);
    }

    #[test]
    fn bad_inputs_are_named_errors() {
        assert_eq!(
            CanaryScores::new(vec![], vec![1.0]),
            Err(PrivacyError::Empty { name: "held_in" })
        );
        assert_eq!(
            CanaryScores::new(vec![1.0], vec![0.0, f64::NAN]),
            Err(PrivacyError::NonFinite {
                name: "held_out",
                index: 1
            })
        );
        let scores = CanaryScores::new(vec![1.0, 2.0], vec![0.0, 0.5]).unwrap();
        let grid = ThresholdChoice::Fixed(vec![0.7]);
        assert!(matches!(
            counting_audit(&scores, 1.0, 0.95, &grid),
            Err(PrivacyError::OutOfRange { name: "delta", .. })
        ));
        assert!(matches!(
            counting_audit(&scores, -0.1, 0.95, &grid),
            Err(PrivacyError::OutOfRange { name: "delta", .. })
        ));
        assert!(matches!(
            counting_audit(&scores, 1e-5, 1.5, &grid),
            Err(PrivacyError::OutOfRange {
                name: "confidence",
                ..
            })
        ));
        assert!(counting_audit(&scores, 1e-5, 0.95, &ThresholdChoice::Fixed(vec![])).is_err());
        assert!(
            counting_audit(&scores, 1e-5, 0.95, &ThresholdChoice::Fixed(vec![f64::NAN])).is_err()
        );
        // A split that leaves nothing to count on.
        let split = ThresholdChoice::Split {
            selection_fraction: 0.9,
            seed: 0,
        };
        assert!(matches!(
            counting_audit(&scores, 1e-5, 0.95, &split),
            Err(PrivacyError::Empty { .. })
        ));
    }
}

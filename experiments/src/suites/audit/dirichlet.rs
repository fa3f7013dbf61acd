//! Audit of the kickstarting teacher's Dirichlet mechanism (paper 000, Theorem 1), per release:
//! the student sees every shared policy x ~ Dir(k·π(s)), so each release must be (ε, δ)-DP
//! for b-adjacent observations on its own.
//!
//! Adjacent inputs: two observations whose policies are opposite vertices of Δ_{m,η},
//! p = [η, …, η, 1 − (m−1)η] and its mirror p′ = [1 − (m−1)η, η, …, η], at L2 distance
//! √2(1 − mη). They are neighbours whenever L·b is at least that distance: for the AirRaid
//! teacher (L·b = 445.6 · 0.01 = 4.456) any two policies are. The test statistic is the
//! log-likelihood ratio ln Dir(x; kp)/Dir(x; kp′) = k(1 − mη)(ln x_m − ln x_1) (the Gamma
//! normalisers cancel, p′ permuting p), the most powerful test between the two (Neyman–Pearson),
//! thresholded on a random share of the releases and counted on the rest.
//!
//! Beside the confidence lower bound, the report gives the pair's ε at δ estimated from the
//! same draws (the hockey-stick divergence δ(ε) = E_p[(1 − e^{ε − ℓ})₊] of the privacy loss ℓ
//! solved for ε): a point estimate of what this pair leaks, not a bound.

use anyhow::Result;
use privrl_privacy::{
    counting_audit, CanaryScores, DirichletConfig, DirichletSampler, ThresholdAudit,
    ThresholdChoice, DELTA_CONFIDENCE,
};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use super::SELECTION_FRACTION;

/// Monte Carlo draws of δ when τ is solved, as the teacher solves it (its default).
const DELTA_SAMPLES: usize = 20_000;

/// A finished Dirichlet audit: the counting audit, the stated ε of eq. 12 at the τ that meets
/// δ, that τ, and the pair's estimated ε.
pub(super) struct DirichletAudit {
    pub(super) counting: ThresholdAudit,
    pub(super) stated_epsilon: f64,
    pub(super) tau: f64,
    pub(super) pair_epsilon: f64,
}

/// The parameters of one audited release.
pub(super) struct DirichletRelease {
    pub(super) actions: usize,
    pub(super) concentration: f64,
    pub(super) eta: f64,
    pub(super) lipschitz_adjacency: f64,
    pub(super) delta: f64,
}

/// Audits `releases` draws from each of the two vertex policies at δ.
pub(super) fn dirichlet(
    release: &DirichletRelease,
    releases: u64,
    seed: u64,
    confidence: f64,
) -> Result<DirichletAudit> {
    let DirichletRelease {
        actions,
        concentration,
        eta,
        lipschitz_adjacency,
        delta,
    } = *release;
    // τ as the teacher calibrates it (the δ of eq. 6 at its Monte Carlo upper bound ≤ δ),
    // then eq. 12's ε with the teacher's L·b.
    let calibration = DirichletConfig {
        actions,
        concentration,
        eta,
        tau: 0.5 / actions as f64,
        lipschitz: 1.0,
        adjacency: 1.0,
    }
    .build()?;
    let tau = calibration.solve_tau(delta, DELTA_SAMPLES, DELTA_CONFIDENCE, || {
        ChaCha8Rng::seed_from_u64(seed)
    })?;
    let stated_epsilon = DirichletConfig {
        tau,
        lipschitz: lipschitz_adjacency,
        ..calibration.config()
    }
    .build()?
    .epsilon();

    let m = actions;
    let mut held_in_policy = vec![eta; m];
    held_in_policy[m - 1] = 1.0 - (m as f64 - 1.0) * eta;
    let mut held_out_policy = held_in_policy.clone();
    held_out_policy.swap(0, m - 1);
    let sampler = DirichletSampler::new(m, concentration, eta)?;
    let weight = concentration * (1.0 - m as f64 * eta);
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut draw = |policy: &[f64]| -> Result<Vec<f64>> {
        let mut x = vec![0.0; m];
        (0..releases)
            .map(|_| {
                sampler.sample_into(policy, &mut rng, &mut x)?;
                Ok(log_likelihood_ratio(weight, x[m - 1], x[0]))
            })
            .collect()
    };
    let held_in = draw(&held_in_policy)?;
    let held_out = draw(&held_out_policy)?;
    let pair_epsilon = epsilon_of_losses(&held_in, delta);
    let scores = CanaryScores::new(held_in, held_out)?;
    let counting = counting_audit(
        &scores,
        delta,
        confidence,
        &ThresholdChoice::Split {
            selection_fraction: SELECTION_FRACTION,
            seed,
        },
    )?;
    Ok(DirichletAudit {
        counting,
        stated_epsilon,
        tau,
        pair_epsilon,
    })
}

/// ℓ = w(ln x_m − ln x_1), w = k(1 − mη), finite: a coordinate that underflowed to 0 (never at
/// the audited shapes) counts as the smallest positive double.
fn log_likelihood_ratio(weight: f64, last: f64, first: f64) -> f64 {
    let ln = |x: f64| x.max(f64::MIN_POSITIVE).ln();
    weight * (ln(last) - ln(first))
}

/// The ε at which the hockey-stick divergence E[(1 − e^{ε − ℓ})₊] over the privacy losses
/// `losses` (drawn under the held-in input) falls to δ: by bisection, as it falls with ε.
fn epsilon_of_losses(losses: &[f64], delta: f64) -> f64 {
    let divergence = |epsilon: f64| {
        losses
            .iter()
            .map(|&l| (1.0 - (epsilon - l).exp()).max(0.0))
            .sum::<f64>()
            / losses.len() as f64
    };
    if divergence(0.0) <= delta {
        return 0.0;
    }
    let (mut low, mut high) = (0.0, 1.0);
    while divergence(high) > delta && high < 1e6 {
        high *= 2.0;
    }
    for _ in 0..100 {
        let mid = 0.5 * (low + high);
        if divergence(mid) > delta {
            low = mid;
        } else {
            high = mid;
        }
    }
    high
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hockey_stick_epsilon_on_hand_worked_losses() {
        // Losses ℓ = 2 on half the draws and −∞-like on the rest: δ(ε) = ½(1 − e^{ε − 2}) for
        // ε ≤ 2, so δ = 0.25 at ε = 2 − ln 2.
        let losses: Vec<f64> = (0..1000)
            .map(|i| if i % 2 == 0 { 2.0 } else { -50.0 })
            .collect();
        let epsilon = epsilon_of_losses(&losses, 0.25);
        assert!((epsilon - (2.0 - 2f64.ln())).abs() < 1e-9, "{epsilon}");
        // δ above the divergence at ε = 0 needs no ε at all.
        assert_eq!(epsilon_of_losses(&losses, 0.6), 0.0);
        assert_eq!(
            log_likelihood_ratio(3.0, 0.5, 0.0),
            3.0 * (0.5f64.ln() - f64::MIN_POSITIVE.ln())
        );
    }

    #[test]
    fn the_audit_of_a_small_release_is_sound_and_finds_a_positive_epsilon() {
        let release = DirichletRelease {
            actions: 2,
            concentration: 5.0,
            eta: 0.2,
            lipschitz_adjacency: 4.456,
            delta: 0.05,
        };
        let audit = dirichlet(&release, 20_000, 0, 0.95).unwrap();
        // m = 2: the vertices (0.2, 0.8) and (0.8, 0.2); ℓ = 3 ln(x₂/x₁).
        assert!(audit.counting.bound > 0.5, "{}", audit.counting.bound);
        assert!(audit.counting.bound <= audit.pair_epsilon + 0.5);
        assert!(audit.pair_epsilon <= audit.stated_epsilon);
        assert!(audit.tau > 0.0 && audit.tau < 0.5);
    }
}

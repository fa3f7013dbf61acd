//! σ calibration for a target (ε, δ) (Opacus' `get_noise_multiplier`, used by
//! `make_private_with_epsilon`): [`noise_multiplier_for_under`] against a brute-force scan of σ
//! with the same accountant, under both adjacency relations, and its named errors.

use privrl_privacy::{dp_sgd_epsilon_under, noise_multiplier_for_under, Adjacency, PrivacyError};

/// The grid cell (σ_k, σ_{k+1}] of σ_k = 0.98·σ·1.0002^k in which ε first meets the target,
/// scanned step by step: brute force.
fn brute_force_cell(
    adjacency: Adjacency,
    target: f64,
    delta: f64,
    q: f64,
    steps: u64,
    near: f64,
) -> (f64, f64) {
    let eps = |s: f64| dp_sgd_epsilon_under(adjacency, q, s, steps, delta).unwrap();
    let mut previous = 0.98 * near;
    assert!(
        eps(previous) > target,
        "the scan must start below the answer"
    );
    loop {
        let sigma = previous * 1.0002;
        if eps(sigma) <= target {
            return (previous, sigma);
        }
        previous = sigma;
    }
}

#[test]
fn the_calibrated_sigma_is_the_smallest_that_meets_the_target() {
    for adjacency in Adjacency::ALL {
        for (target, delta, q, steps) in [(2.0, 1e-5, 0.01, 2000), (6.0, 1e-6, 0.1, 300)] {
            let sigma = noise_multiplier_for_under(adjacency, target, delta, q, steps).unwrap();
            let eps = |s: f64| dp_sgd_epsilon_under(adjacency, q, s, steps, delta).unwrap();
            // Conservative: the returned σ meets the target ...
            assert!(
                eps(sigma) <= target,
                "{adjacency}: ε(σ = {sigma}) > {target}"
            );
            // ... and is tight: 1e-5 less noise does not.
            assert!(
                eps(sigma * (1.0 - 1e-5)) > target,
                "{adjacency}: σ = {sigma} not minimal"
            );
            // Brute force: σ lies in the grid cell where ε crosses the target.
            let (below, above) = brute_force_cell(adjacency, target, delta, q, steps, sigma);
            assert!(
                below < sigma && sigma <= above * (1.0 + 1e-6),
                "{adjacency}: σ = {sigma} outside the brute-force cell ({below}, {above}]"
            );
        }
    }
    // Substitution neighbours need more noise for the same target.
    let sigma = |a| noise_multiplier_for_under(a, 2.0, 1e-5, 0.01, 2000).unwrap();
    assert!(sigma(Adjacency::Substitution) > sigma(Adjacency::AddRemove));
}

#[test]
fn unreachable_and_invalid_targets_are_named_errors() {
    // One release per step at q = 1 for a million steps: even σ = 1e6 leaves ε ≈ 5e-3.
    assert!(matches!(
        noise_multiplier_for_under(Adjacency::AddRemove, 1e-4, 1e-5, 1.0, 1_000_000),
        Err(PrivacyError::Unreachable {
            name: "target_epsilon",
            ..
        })
    ));
    for (target, delta, q, steps, name) in [
        (0.0, 1e-5, 0.01, 10, "target_epsilon"),
        (f64::NAN, 1e-5, 0.01, 10, "target_epsilon"),
        (f64::INFINITY, 1e-5, 0.01, 10, "target_epsilon"),
        (1.0, 0.0, 0.01, 10, "delta"),
        (1.0, 1.0, 0.01, 10, "delta"),
        (1.0, f64::NAN, 0.01, 10, "delta"),
        (1.0, 1e-5, 0.0, 10, "sample_rate"),
        (1.0, 1e-5, 1.5, 10, "sample_rate"),
        (1.0, 1e-5, f64::NAN, 10, "sample_rate"),
    ] {
        match noise_multiplier_for_under(Adjacency::AddRemove, target, delta, q, steps) {
            Err(PrivacyError::OutOfRange { name: found, .. }) => assert_eq!(found, name),
            other => panic!("({target}, {delta}, {q}, {steps}): expected {name}, got {other:?}"),
        }
    }
    assert!(matches!(
        noise_multiplier_for_under(Adjacency::AddRemove, 1.0, 1e-5, 0.01, 0),
        Err(PrivacyError::Empty { name: "steps" })
    ));
}

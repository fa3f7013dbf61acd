//! The defences between learner and attacker: what they release, checked against the raw
//! gradient exactly (none, clipping) and by Monte Carlo (the noise), and their effect on the
//! rule-based action recovery.

mod common;

use burn::backend::NdArray;
use privrl_attacks::{
    action_from_bias_gradient, AttackConfig, Defence, GradientMatchingLoss, Victim, VictimKind,
};
use privrl_privacy::{Epsilon, GradientMechanismConfig};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

type B = NdArray;
const SIZE: usize = 8;

fn victim(seed: u64) -> Victim<B> {
    Victim::<B>::from_seed(
        &common::depth_config(SIZE),
        VictimKind::Dqn,
        seed,
        &Default::default(),
    )
    .unwrap()
}

fn eps(epsilon: f64) -> Epsilon {
    Epsilon::finite(epsilon).unwrap()
}

fn norm(v: &[f32]) -> f64 {
    v.iter().map(|x| f64::from(*x).powi(2)).sum::<f64>().sqrt()
}

#[test]
fn no_defence_releases_the_shared_gradient_and_clipping_only_rescales_it() {
    let victim = victim(1);
    let mut rng = ChaCha8Rng::seed_from_u64(2);
    let sample = common::synthetic_sample(None, Some(SIZE), 7, 2.0..5.0, &mut rng);
    let raw = victim
        .shared_gradient(std::slice::from_ref(&sample))
        .unwrap();
    let none = GradientMechanismConfig::None
        .shared_gradient(&victim, std::slice::from_ref(&sample), &mut rng)
        .unwrap();
    assert_eq!(none, raw);

    let g = raw.flatten();
    let clip = 0.25 * norm(&g);
    let clipped = GradientMechanismConfig::Clip { clip }
        .shared_gradient(&victim, std::slice::from_ref(&sample), &mut rng)
        .unwrap()
        .flatten();
    assert!((norm(&clipped) - clip).abs() < 1e-5 * clip);
    for (c, r) in clipped.iter().zip(&g) {
        assert!((f64::from(*c) - 0.25 * f64::from(*r)).abs() < 1e-6);
    }
    // A bound above the norm leaves the gradient as it is.
    let unclipped = GradientMechanismConfig::Clip {
        clip: 2.0 * norm(&g),
    }
    .shared_gradient(&victim, std::slice::from_ref(&sample), &mut rng)
    .unwrap()
    .flatten();
    assert_eq!(unclipped, g);
}

#[test]
fn dp_sgd_adds_noise_of_standard_deviation_sigma_c_over_the_batch() {
    let victim = victim(3);
    let mut rng = ChaCha8Rng::seed_from_u64(4);
    let samples: Vec<_> = (0..2)
        .map(|_| common::synthetic_sample(None, Some(SIZE), 7, 2.0..5.0, &mut rng))
        .collect();
    let (clip, sigma) = (0.5, 3.0);
    // The noise-free part: the mean of the clipped per-sample gradients.
    let mut mean = vec![0.0f64; victim.shared_gradient(&samples[..1]).unwrap().num_values()];
    for s in &samples {
        let g = victim
            .shared_gradient(std::slice::from_ref(s))
            .unwrap()
            .flatten();
        let scale = (clip / norm(&g)).min(1.0);
        for (m, v) in mean.iter_mut().zip(&g) {
            *m += scale * f64::from(*v) / samples.len() as f64;
        }
    }
    let released = GradientMechanismConfig::DpSgd {
        clip,
        noise_multiplier: sigma,
    }
    .shared_gradient(&victim, &samples, &mut rng)
    .unwrap()
    .flatten();
    // Residuals ~ N(0, (σC/B)²) in every coordinate.
    let residuals: Vec<f64> = released
        .iter()
        .zip(&mean)
        .map(|(r, m)| f64::from(*r) - m)
        .collect();
    let n = residuals.len() as f64;
    let mu = residuals.iter().sum::<f64>() / n;
    let std = (residuals.iter().map(|r| (r - mu).powi(2)).sum::<f64>() / n).sqrt();
    let expected = sigma * clip / samples.len() as f64;
    assert!(n > 1000.0, "{n} coordinates");
    assert!(mu.abs() < 5.0 * expected / n.sqrt(), "mean {mu}");
    assert!(
        (std / expected - 1.0).abs() < 5.0 / (2.0 * n).sqrt(),
        "std {std} vs {expected}"
    );
}

#[test]
fn the_action_survives_weak_noise_and_falls_to_chance_under_strong_noise() {
    let victim = victim(5);
    let mut rng = ChaCha8Rng::seed_from_u64(6);
    let bias = victim.last_bias_name().expect("the head has a bias");
    let trials = 210;
    let accuracy = |defence: GradientMechanismConfig, rng: &mut ChaCha8Rng| {
        let mut correct = 0;
        for _ in 0..trials {
            let sample = common::synthetic_sample(None, Some(SIZE), 7, 2.0..5.0, rng);
            let record = defence
                .shared_gradient(&victim, std::slice::from_ref(&sample), rng)
                .unwrap();
            let g = &record.get(&bias).unwrap().values;
            correct += usize::from(action_from_bias_gradient(g) == sample.action);
        }
        correct as f64 / trials as f64
    };
    let none = accuracy(GradientMechanismConfig::None, &mut rng);
    let weak = accuracy(
        GradientMechanismConfig::Laplace {
            epsilon: eps(1e9),
            clip: 0.01,
        },
        &mut rng,
    );
    let strong = accuracy(
        GradientMechanismConfig::DpSgd {
            clip: 1.0,
            noise_multiplier: 1e6,
        },
        &mut rng,
    );
    assert_eq!(none, 1.0);
    assert!(weak > 0.95, "weak Laplace: {weak}");
    // Binomial(210, 1/7): standard deviation 0.024.
    assert!((strong - 1.0 / 7.0).abs() < 0.08, "strong DP-SGD: {strong}");
}

#[test]
fn the_attacker_drops_the_magnitude_term_under_noise_only() {
    let qgi = AttackConfig::qgi();
    let with_term = GradientMatchingLoss::error_direction_default();
    assert_eq!(qgi.matching, with_term);
    for keeps in [
        GradientMechanismConfig::None,
        GradientMechanismConfig::Clip { clip: 1.0 },
    ] {
        assert!(!keeps.adds_noise());
        assert_eq!(keeps.adapt_attack(qgi.clone()).matching, with_term);
    }
    for noisy in [
        GradientMechanismConfig::DpSgd {
            clip: 1.0,
            noise_multiplier: 0.1,
        },
        GradientMechanismConfig::Laplace {
            epsilon: eps(1.0),
            clip: 1.0,
        },
        GradientMechanismConfig::Prs {
            epsilon: eps(1.0),
            clip: 1.0,
        },
    ] {
        assert!(noisy.adds_noise());
        assert_eq!(
            noisy.adapt_attack(qgi.clone()).matching,
            GradientMatchingLoss::Cosine
        );
        // DLG's squared L2 matching is left as it is.
        let dlg = AttackConfig::dlg();
        assert_eq!(noisy.adapt_attack(dlg.clone()).matching, dlg.matching);
    }
}

#[test]
fn bad_defence_parameters_are_refused() {
    let victim = victim(7);
    let mut rng = ChaCha8Rng::seed_from_u64(8);
    let sample = common::synthetic_sample(None, Some(SIZE), 7, 2.0..5.0, &mut rng);
    for defence in [
        GradientMechanismConfig::Clip { clip: 0.0 },
        GradientMechanismConfig::DpSgd {
            clip: 1.0,
            noise_multiplier: -1.0,
        },
        GradientMechanismConfig::Laplace {
            epsilon: eps(1.0),
            clip: -0.01,
        },
        GradientMechanismConfig::Prs {
            epsilon: Epsilon::INFINITE,
            clip: 0.0,
        },
    ] {
        let error = defence
            .shared_gradient(&victim, std::slice::from_ref(&sample), &mut rng)
            .unwrap_err();
        assert!(
            error.to_string().contains("out of range"),
            "{defence}: {error}"
        );
    }
}

/// `Victim::train` fits the victim to its own objective: the TD loss on the training set falls
/// well below its value at initialisation, and the shared gradient of a trained victim differs
/// from the untrained one's.
#[test]
fn training_lowers_the_victims_objective() {
    let mut rng = ChaCha8Rng::seed_from_u64(11);
    let samples: Vec<_> = (0..16)
        .map(|_| common::synthetic_sample(None, Some(SIZE), 7, 2.0..5.0, &mut rng))
        .collect();
    let untrained = victim(3);
    let mut trained = untrained.clone();
    let losses = trained.train(&samples, 300, 16, 1e-2, 5).unwrap();
    assert_eq!(losses.len(), 300);
    // Signals in [2, 5] against Q-values near 0 at initialisation: J starts near 12 and a
    // network that fits the 16 samples brings it below a tenth of that.
    assert!(losses[0] > 4.0, "initial J {}", losses[0]);
    let last = losses[losses.len() - 10..].iter().sum::<f64>() / 10.0;
    assert!(last < 0.1 * losses[0], "J {} -> {last}", losses[0]);
    let before = untrained.shared_gradient(&samples).unwrap().flatten();
    let after = trained.shared_gradient(&samples).unwrap().flatten();
    assert!(
        norm(&after) < norm(&before),
        "{} vs {}",
        norm(&after),
        norm(&before)
    );
    assert!(trained.train(&[], 1, 1, 1e-2, 0).is_err());
}

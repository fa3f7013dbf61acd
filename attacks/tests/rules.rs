//! The rule-based parts of QGI and RGI and the error-direction surrogate, checked exactly on
//! random samples (batch of one, freshly initialised victims).

mod common;

use burn::backend::NdArray;
use privrl_attacks::{
    action_from_bias_gradient, odd_sign_action, policy_gradient_recovery,
    q_value_from_error_magnitude, Victim, VictimKind,
};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

type B = NdArray;
const SIZE: usize = 16;

fn bias_gradient(record: &privrl_agents::GradientRecord, victim: &Victim<B>) -> Vec<f32> {
    record
        .get(&victim.last_bias_name().expect("the head has a bias"))
        .expect("last bias gradient")
        .values
        .clone()
}

#[test]
fn eq7_recovers_the_dqn_action_exactly() {
    let device = Default::default();
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    for seed in 0..4 {
        let victim =
            Victim::<B>::from_seed(&common::rgbd_config(SIZE), VictimKind::Dqn, seed, &device)
                .unwrap();
        for _ in 0..8 {
            let sample = common::synthetic_sample(Some(SIZE), Some(SIZE), 7, -5.0..5.0, &mut rng);
            let record = victim
                .shared_gradient(std::slice::from_ref(&sample))
                .unwrap();
            let g = bias_gradient(&record, &victim);
            // eq. 7: exactly one non-zero entry, at the action.
            assert_eq!(g.iter().filter(|v| **v != 0.0).count(), 1, "{g:?}");
            assert_eq!(action_from_bias_gradient(&g), sample.action);
        }
    }
}

#[test]
fn odd_sign_rule_recovers_the_reinforce_action_without_entropy() {
    let device = Default::default();
    let mut rng = ChaCha8Rng::seed_from_u64(2);
    let victim = Victim::<B>::from_seed(
        &common::depth_config(SIZE),
        VictimKind::Reinforce {
            entropy_weight: 0.0,
        },
        5,
        &device,
    )
    .unwrap();
    for _ in 0..10 {
        let sample = common::synthetic_sample(None, Some(SIZE), 7, -3.0..3.0, &mut rng);
        let record = victim
            .shared_gradient(std::slice::from_ref(&sample))
            .unwrap();
        assert_eq!(
            odd_sign_action(&bias_gradient(&record, &victim)),
            sample.action
        );
    }
}

/// Eq. 6: with x_rec = x, the surrogate J̃ = (∇_{b_last} J)ᵀ F(x_rec) has the same weight
/// gradient as the objective J, for both victims.
#[test]
fn error_direction_surrogate_reproduces_the_true_gradient() {
    let device = Default::default();
    let mut rng = ChaCha8Rng::seed_from_u64(3);
    for kind in [
        VictimKind::Dqn,
        VictimKind::Reinforce {
            entropy_weight: 0.1,
        },
    ] {
        let victim = Victim::<B>::from_seed(&common::rgbd_config(SIZE), kind, 7, &device).unwrap();
        for _ in 0..3 {
            let sample = common::synthetic_sample(Some(SIZE), Some(SIZE), 7, -4.0..4.0, &mut rng);
            let shared = victim
                .shared_gradient(std::slice::from_ref(&sample))
                .unwrap();
            let surrogate = victim
                .error_direction_gradient(
                    std::slice::from_ref(&sample),
                    &bias_gradient(&shared, &victim),
                )
                .unwrap();
            assert_eq!(shared.names(), surrogate.names());
            let scale = shared.flatten().iter().fold(0.0f32, |m, v| m.max(v.abs()));
            assert!(scale > 1e-4, "{kind:?}: vanishing gradient");
            let worst = shared
                .flatten()
                .iter()
                .zip(surrogate.flatten())
                .map(|(a, b)| (a - b).abs())
                .fold(0.0f32, f32::max);
            println!("{kind:?}: max |g - g_surrogate| = {worst:.2e}, max |g| = {scale:.2e}");
            assert!(
                worst <= 1e-5 * scale,
                "{kind:?}: max difference {worst} (scale {scale})"
            );
        }
    }
}

/// Section IV-C2 given the true linear-part input: Q̂_rec = Q̂ and Q_rec = Q to 1e-3 relative.
#[test]
fn q_value_rule_is_exact_given_the_true_state() {
    let device = Default::default();
    let mut rng = ChaCha8Rng::seed_from_u64(4);
    let victim =
        Victim::<B>::from_seed(&common::rgbd_config(SIZE), VictimKind::Dqn, 11, &device).unwrap();
    for _ in 0..10 {
        let sample = common::synthetic_sample(Some(SIZE), Some(SIZE), 7, -6.0..6.0, &mut rng);
        let record = victim
            .shared_gradient(std::slice::from_ref(&sample))
            .unwrap();
        let input = victim.linear_part_input(&sample).unwrap();
        let rec = q_value_from_error_magnitude(&victim, &record, &input, sample.action).unwrap();
        let predicted = f64::from(victim.output(&sample).unwrap()[sample.action]);
        assert!((rec.predicted_q - predicted).abs() <= 1e-5 * predicted.abs().max(1.0));
        assert_eq!(rec.error_sign, (predicted - sample.signal).signum());
        let relative = (rec.target_q - sample.signal).abs() / sample.signal.abs();
        assert!(
            relative <= 1e-3,
            "Q = {}, Q_rec = {} ({relative:.2e})",
            sample.signal,
            rec.target_q
        );
    }
}

/// Eq. 8–9 given the true last-layer input: the action exactly, the reward to 1e-4, for
/// positive and negative returns and with the entropy term.
#[test]
fn rgi_rules_are_exact_given_the_true_last_layer_input() {
    let device = Default::default();
    let mut rng = ChaCha8Rng::seed_from_u64(5);
    for entropy_weight in [0.0, 0.01, 0.5] {
        let kind = VictimKind::Reinforce { entropy_weight };
        let victim = Victim::<B>::from_seed(&common::rgbd_config(SIZE), kind, 13, &device).unwrap();
        for _ in 0..8 {
            let sample = common::synthetic_sample(Some(SIZE), Some(SIZE), 7, -3.0..3.0, &mut rng);
            let record = victim
                .shared_gradient(std::slice::from_ref(&sample))
                .unwrap();
            let input = victim.linear_part_input(&sample).unwrap();
            let logits = victim.linear_part_output(&input).unwrap().output;
            let rec = policy_gradient_recovery::<B>(
                &logits,
                &bias_gradient(&record, &victim),
                entropy_weight,
                None,
                &device,
            )
            .unwrap();
            assert_eq!(
                rec.action, sample.action,
                "α = {entropy_weight}, R = {}",
                sample.signal
            );
            assert!(
                (rec.reward - sample.signal).abs() < 1e-4,
                "α = {entropy_weight}: r = {}, r_rec = {}",
                sample.signal,
                rec.reward
            );
            assert!(rec.alignment > 0.9999, "alignment {}", rec.alignment);
        }
    }
}

/// The victim built from another module carries that module's parameters.
#[test]
fn victim_from_module_shares_the_gradient_of_the_original() {
    let device = Default::default();
    let config = common::depth_config(SIZE);
    let original = Victim::<B>::from_seed(&config, VictimKind::Dqn, 21, &device).unwrap();
    let mut rng = ChaCha8Rng::seed_from_u64(21);
    let module = config.init::<B>(&device, &mut rng);
    let copy = Victim::<B>::from_module(&config, &module, VictimKind::Dqn, &device).unwrap();
    let sample = common::synthetic_sample(
        None,
        Some(SIZE),
        7,
        0.0..1.0,
        &mut ChaCha8Rng::seed_from_u64(0),
    );
    let a = original
        .shared_gradient(std::slice::from_ref(&sample))
        .unwrap();
    let b = copy.shared_gradient(std::slice::from_ref(&sample)).unwrap();
    assert_eq!(a, b);
}

/// A batch's shared gradient follows the agents' reductions: DQN's MSE is a mean over the
/// batch, REINFORCE's loss a sum.
#[test]
fn batch_gradients_reduce_as_the_agents_losses_do() {
    let device = Default::default();
    let mut rng = ChaCha8Rng::seed_from_u64(6);
    for (kind, scale) in [
        (VictimKind::Dqn, 0.5f32),
        (
            VictimKind::Reinforce {
                entropy_weight: 0.1,
            },
            1.0,
        ),
    ] {
        let victim =
            Victim::<B>::from_seed(&common::depth_config(SIZE), kind, 17, &device).unwrap();
        let samples: Vec<_> = (0..2)
            .map(|_| common::synthetic_sample(None, Some(SIZE), 7, -2.0..2.0, &mut rng))
            .collect();
        let batch = victim.shared_gradient(&samples).unwrap().flatten();
        let first = victim.shared_gradient(&samples[..1]).unwrap().flatten();
        let second = victim.shared_gradient(&samples[1..]).unwrap().flatten();
        let peak = batch.iter().fold(0.0f32, |m, v| m.max(v.abs()));
        for ((b, x), y) in batch.iter().zip(&first).zip(&second) {
            assert!((b - scale * (x + y)).abs() <= 1e-5 * peak, "{kind:?}");
        }
    }
}

#[test]
fn batch_actions_are_enumerated_from_the_non_zero_bias_gradient() {
    // |B| = 3 and two non-zero entries, action 1 (0.5) before action 3 (|−0.2|): the
    // multiplicities are the compositions of 3 into two positive parts, (1, 2) and (2, 1).
    let g = [0.0, 0.5, 0.0, -0.2, 0.0, 0.0, 0.0];
    assert_eq!(
        privrl_attacks::batch_action_assignments(&g, 3),
        vec![vec![1, 3, 3], vec![1, 1, 3]]
    );
    // Noise makes every entry non-zero: the |B| largest are kept, one sample each.
    let noisy = [0.01, 0.5, -0.02, -0.2, 0.03, 0.0, 0.0];
    assert_eq!(
        privrl_attacks::batch_action_assignments(&noisy, 2),
        vec![vec![1, 3]]
    );
    // C(7, 3) = 35 ways for |B| = 8 over four actions.
    let four = [1.0, -2.0, 3.0, -4.0, 0.0, 0.0, 0.0];
    let all = privrl_attacks::batch_action_assignments(&four, 8);
    assert_eq!(all.len(), 35);
    assert!(all
        .iter()
        .all(|a| a.len() == 8 && [0, 1, 2, 3].iter().all(|x| a.contains(x))));
}

#[test]
fn the_best_matching_is_the_permutation_with_the_largest_total() {
    // Greedy row by row would take (0 → 0) for 0.9 and then be left with 0.0 + 0.1; the
    // best total is 0.8 + 0.85 + 0.7 = 2.35 with (0 → 1, 1 → 0, 2 → 2).
    let similarity = vec![
        vec![0.9, 0.8, 0.0],
        vec![0.85, 0.0, 0.1],
        vec![0.0, 0.1, 0.7],
    ];
    assert_eq!(privrl_attacks::best_matching(&similarity), vec![1, 0, 2]);
}

//! The attacks' public entry points on arbitrary input (proptest, with shrinking): victims of
//! any widths (0 and huge included) and kind, samples of any length with NaN, ±∞ and
//! out-of-range actions, attack configs with NaN, ±∞, 0, negative and huge values, batches of
//! any size. Never a panic: a named `AttackError`, or a reconstruction (issue 48: a scan of
//! the public entry points for panics).

use burn::backend::NdArray;
use privrl_agents::{Activation, MultimodalNetConfig};
use privrl_attacks::{
    attack_batch, ActionRecovery, AttackConfig, GradientMatchingLoss, ImagePrior, LrSchedule,
    Sample, StateOptimisation, TensorAdamConfig, Victim, VictimKind,
};
use proptest::collection::vec;
use proptest::prelude::*;
use proptest::test_runner::RngSeed;

type B = NdArray;

/// A real parameter: mostly from `valid` (so that most cases get past the checks and run),
/// otherwise boundaries and garbage.
fn parameter(valid: std::ops::Range<f64>) -> impl Strategy<Value = f64> {
    prop_oneof![
        60 => valid,
        1 => Just(f64::NAN),
        1 => Just(f64::INFINITY),
        1 => Just(f64::NEG_INFINITY),
        1 => Just(0.0),
        1 => Just(-1.0),
        1 => Just(1e300),
        1 => Just(5e-324),
    ]
}

/// A count: mostly small, otherwise 0 and huge.
fn count(valid: std::ops::Range<usize>) -> impl Strategy<Value = usize> {
    prop_oneof![
        60 => valid,
        1 => Just(0usize),
        1 => Just(usize::MAX),
        1 => Just(1usize << 40),
    ]
}

/// Layer widths: small ones, an empty list, and zero and huge widths.
fn widths() -> impl Strategy<Value = Vec<usize>> {
    vec(
        prop_oneof![30 => 1usize..6, 1 => Just(0usize), 1 => Just(1usize << 40), 1 => Just(usize::MAX)],
        0..3,
    )
}

/// An observation entry or a signal: ordinary values and (rarely) garbage.
fn value() -> impl Strategy<Value = f32> {
    prop_oneof![
        40 => -2.0..2.0f32,
        1 => Just(f32::NAN),
        1 => Just(f32::INFINITY),
        1 => Just(f32::MAX),
    ]
}

fn sample(d_vector: usize) -> impl Strategy<Value = Sample> {
    (
        prop_oneof![12 => Just(d_vector), 1 => 0usize..6],
        vec(value(), 6),
        prop_oneof![20 => 0usize..2, 1 => Just(2usize), 1 => Just(usize::MAX)],
        value(),
    )
        .prop_map(|(len, values, action, signal)| Sample {
            rgb: None,
            depth: None,
            vector: values.into_iter().cycle().take(len).collect(),
            action,
            signal: f64::from(signal),
        })
}

fn attack_config() -> impl Strategy<Value = AttackConfig> {
    (
        (
            prop_oneof![
                Just(GradientMatchingLoss::Cosine),
                parameter(0.0..1.0)
                    .prop_map(|weight| GradientMatchingLoss::CosineAndMagnitude { weight }),
                Just(GradientMatchingLoss::SquaredL2),
            ],
            prop::option::of(
                parameter(0.0..1.0).prop_map(|weight| ImagePrior::TotalVariation { weight }),
            ),
            prop_oneof![
                Just(StateOptimisation::TwoStage),
                Just(StateOptimisation::Joint)
            ],
            prop_oneof![
                Just(ActionRecovery::LargestBiasGradient),
                Just(ActionRecovery::OddSignBiasGradient),
                Just(ActionRecovery::PolicyGradientDirection),
            ],
        ),
        (
            // Iterations and restarts 0 or few: a huge count is a long attack, not an error.
            prop_oneof![10 => 1usize..4, 1 => Just(0usize)],
            parameter(1e-3..0.5),
            parameter(0.5..0.99),
            parameter(0.5..0.999),
            parameter(1e-12..1e-6),
            prop_oneof![Just(LrSchedule::Constant), Just(LrSchedule::StepDecay)],
            prop_oneof![10 => 1usize..3, 1 => Just(0usize)],
            parameter(0.1..2.0),
            count(1..10),
            any::<u64>(),
        ),
    )
        .prop_map(
            |(
                (matching, prior, state, action_recovery),
                (
                    iterations,
                    lr,
                    beta1,
                    beta2,
                    epsilon,
                    schedule,
                    restarts,
                    init_std,
                    log_every,
                    seed,
                ),
            )| {
                AttackConfig::qgi()
                    .with_matching(matching)
                    .with_prior(prior)
                    .with_state(state)
                    .with_action_recovery(action_recovery)
                    .with_iterations_per_stage(iterations)
                    .with_optimizer(TensorAdamConfig {
                        lr,
                        beta1,
                        beta2,
                        epsilon,
                    })
                    .with_schedule(schedule)
                    .with_restarts(restarts)
                    .with_init_std(init_std)
                    .with_log_every(log_every)
                    .with_seed(seed)
            },
        )
}

proptest! {
    // Fixed seed: the same cases on every run. Tiny victims and at most 3 iterations per stage,
    // so that 256 cases (about 40 of them complete attacks) take a fraction of a second.
    #![proptest_config(ProptestConfig {
        cases: 256,
        rng_seed: RngSeed::Fixed(48),
        ..ProptestConfig::default()
    })]

    #[test]
    fn victims_and_attacks_name_what_is_wrong(
        (d_vector, samples) in count(1..5).prop_flat_map(|d| (Just(d), vec(sample(d.min(8)), 1..4))),
        d_output in count(2..4),
        vector_hidden in widths(),
        head_hidden in widths(),
        reinforce in prop::option::of(parameter(0.0..0.1)),
        config in attack_config(),
        batch_size in prop_oneof![6 => 1usize..3, 1 => Just(0usize), 1 => Just(9usize), 1 => Just(usize::MAX)],
        seed in any::<u64>(),
    ) {
        let net = MultimodalNetConfig {
            rgb: None,
            depth: None,
            d_vector,
            d_output,
            vector_hidden,
            head_hidden,
            activation: Activation::Relu,
        };
        let kind = match reinforce {
            Some(entropy_weight) => VictimKind::Reinforce { entropy_weight },
            None => VictimKind::Dqn,
        };
        let victim = match Victim::<B>::from_seed(&net, kind, seed, &Default::default()) {
            Ok(victim) => victim,
            Err(error) => {
                prop_assert!(!error.to_string().is_empty());
                return Ok(());
            }
        };
        let record = match victim.shared_gradient(&samples) {
            Ok(record) => record,
            Err(error) => {
                prop_assert!(!error.to_string().is_empty());
                return Ok(());
            }
        };
        if let Err(error) = config.validate() {
            prop_assert!(!error.to_string().is_empty());
        }
        match attack_batch(&victim, &record, &config, batch_size) {
            Ok(reconstructions) => prop_assert_eq!(reconstructions.len(), batch_size),
            Err(error) => prop_assert!(!error.to_string().is_empty()),
        }
    }
}

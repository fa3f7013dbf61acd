//! Every public config of the agents on arbitrary values (proptest, with shrinking): NaN, ±∞,
//! 0, negative and huge reals, counts of 0 and `usize::MAX`, hidden widths of 0 and of 2⁴⁰.
//! Each goes through its public entry point (`validate`/`check`, then the constructor on
//! CartPole, then, where the counts are small, one training epoch). Never a panic: a named
//! error, or an agent that trains (issue 48: a scan of the public entry points for panics).

use std::sync::{Arc, Mutex};

use burn::backend::{Autodiff, NdArray};
use privrl_agents::{
    A3c, A3cConfig, Activation, Agent, DpSgdTrainingConfig, Dqn, DqnConfig, MlpConfig,
    NoiseCalibration, PgcConfig, PoissonSampling, Ppo, PpoConfig, PrivacyAwareConfig,
    PrivacyAwareKickstarting, PrivacyEngine, PrivacyEngineConfig, PrivateTeacher,
    PrivateTeacherConfig, Reinforce, ReinforceConfig, Teacher,
};
use privrl_envs::{make, Env};
use privrl_privacy::RandomnessSource;
use proptest::collection::vec;
use proptest::prelude::*;
use proptest::test_runner::RngSeed;
use rand::SeedableRng;

type B = Autodiff<NdArray>;

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
        1 => Just(1.0),
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

/// Hidden widths: small ones, an empty list, and zero and huge widths.
fn hidden() -> impl Strategy<Value = Vec<usize>> {
    vec(
        prop_oneof![30 => 1usize..9, 1 => Just(0usize), 1 => Just(1usize << 40), 1 => Just(usize::MAX)],
        0..3,
    )
}

fn activation() -> impl Strategy<Value = Activation> {
    prop_oneof![Just(Activation::Tanh), Just(Activation::Relu)]
}

fn cartpole() -> Box<dyn Env> {
    make("CartPole-v1").unwrap()
}

/// Whether every count is small enough to train on in a test.
fn small(counts: &[usize]) -> bool {
    counts.iter().all(|&c| c <= 64)
}

/// The constructor's error, or one training epoch's when `train`: named, never a panic.
fn build_and_train<A: Agent>(
    built: Result<A, privrl_agents::AgentError>,
    train: bool,
) -> Result<(), TestCaseError> {
    match built {
        Ok(mut agent) => {
            if train {
                if let Err(error) = agent.train_epoch() {
                    prop_assert!(!error.to_string().is_empty());
                }
            }
        }
        Err(error) => prop_assert!(!error.to_string().is_empty()),
    }
    Ok(())
}

proptest! {
    // Fixed seed: the same cases on every run. Few cases: each builds networks and some train.
    #![proptest_config(ProptestConfig {
        cases: 64,
        rng_seed: RngSeed::Fixed(48),
        ..ProptestConfig::default()
    })]

    #[test]
    fn ppo_builds_and_trains_or_names_the_parameter(
        steps_per_epoch in count(8..64),
        gamma in parameter(0.5..1.0),
        clip_ratio in parameter(0.05..0.5),
        pi_lr in parameter(1e-4..1e-2),
        vf_lr in parameter(1e-4..1e-2),
        train_pi_iters in count(1..4),
        train_v_iters in count(1..4),
        lam in parameter(0.5..1.0),
        max_ep_len in count(1..64),
        target_kl in parameter(1e-3..0.1),
        hidden in hidden(),
        activation in activation(),
        reset_at_epoch_end in any::<bool>(),
        reseed_at_epoch_end in any::<bool>(),
        seed in any::<u64>(),
    ) {
        let config = PpoConfig {
            steps_per_epoch, gamma, clip_ratio, pi_lr, vf_lr, train_pi_iters, train_v_iters,
            lam, max_ep_len, target_kl, hidden: hidden.clone(), activation, reset_at_epoch_end,
            reseed_at_epoch_end,
        };
        let train = small(&[steps_per_epoch, train_pi_iters, train_v_iters]);
        build_and_train(Ppo::<B, _>::new(config, cartpole(), &Default::default(), seed), train)?;
    }

    #[test]
    fn dqn_builds_and_trains_or_names_the_parameter(
        hidden in hidden(),
        activation in activation(),
        gamma in parameter(0.5..1.0),
        lr in parameter(1e-4..1e-2),
        batch_size in count(1..16),
        buffer_capacity in count(1..64),
        learning_starts in count(0..16),
        train_frequency in count(1..4),
        gradient_steps in count(1..3),
        target_update_interval in count(1..16),
        epsilon_start in parameter(0.0..1.0),
        epsilon_end in parameter(0.0..1.0),
        epsilon_decay_steps in count(0..64),
        double_dqn in any::<bool>(),
        steps_per_epoch in count(1..48),
        huber in any::<bool>(),
        seed in any::<u64>(),
    ) {
        let config = DqnConfig {
            hidden, activation, gamma, lr, batch_size, buffer_capacity, learning_starts,
            train_frequency, gradient_steps, target_update_interval, epsilon_start, epsilon_end,
            epsilon_decay_steps, double_dqn, steps_per_epoch,
            td_loss: if huber { privrl_agents::TdLoss::Huber } else { privrl_agents::TdLoss::Mse },
        };
        let train = small(&[batch_size, gradient_steps, steps_per_epoch]);
        build_and_train(Dqn::<B, _>::new(config, cartpole(), &Default::default(), seed), train)?;
    }

    #[test]
    fn reinforce_builds_and_trains_or_names_the_parameter(
        hidden in hidden(),
        activation in activation(),
        dropout in parameter(0.0..0.9),
        gamma in parameter(0.5..1.0),
        lr in parameter(1e-4..1e-1),
        entropy_coef in parameter(0.0..0.1),
        normalize_returns in any::<bool>(),
        seed in any::<u64>(),
    ) {
        let config = ReinforceConfig {
            hidden, activation, dropout, gamma, lr, entropy_coef, normalize_returns,
        };
        build_and_train(Reinforce::<B, _>::new(config, cartpole(), &Default::default(), seed), true)?;
    }

    #[test]
    fn a3c_and_pgc_configs_build_or_name_the_parameter(
        workers in count(1..3),
        hidden in hidden(),
        gamma in parameter(0.5..1.0),
        lr in parameter(1e-4..1e-2),
        value_coef in parameter(0.0..1.0),
        entropy_coef in parameter(0.0..0.1),
        buffer_size in count(1..4),
        submissions_per_epoch in count(1..4),
        rounds in count(1..4),
        gravities in vec(parameter(1.0..20.0), 0..3),
        seed in any::<u64>(),
    ) {
        let a3c = A3cConfig::new()
            .with_workers(workers)
            .with_hidden(hidden)
            .with_gamma(gamma)
            .with_lr(lr)
            .with_value_coef(value_coef)
            .with_entropy_coef(entropy_coef)
            .with_buffer_size(buffer_size)
            .with_submissions_per_epoch(submissions_per_epoch);
        let pgc = PgcConfig::new().with_a3c(a3c.clone()).with_rounds(rounds).with_gravities(gravities);
        if let Err(error) = pgc.validate() {
            prop_assert!(!error.to_string().is_empty());
        }
        let factory: privrl_agents::EnvFactory = Box::new(|_| make("CartPole-v1"));
        match A3c::<B>::new(a3c, factory, &Default::default(), seed) {
            Ok(_) => prop_assert!(workers <= 3),
            Err(error) => prop_assert!(!error.to_string().is_empty()),
        }
    }

    #[test]
    fn privacy_engine_checks_or_names_the_parameter(
        dataset_size in count(1..2000),
        sample_rate in parameter(1e-3..1.0),
        clip in parameter(0.1..10.0),
        sigma in parameter(0.0..5.0),
        target in any::<bool>(),
        epsilon in parameter(0.1..10.0),
        steps in prop_oneof![8 => 1u64..1000, 1 => Just(0u64), 1 => Just(u64::MAX)],
        delta in parameter(1e-8..0.1),
        secure in any::<bool>(),
        seed in any::<u64>(),
    ) {
        let noise = if target {
            NoiseCalibration::TargetEpsilon { epsilon, steps }
        } else {
            NoiseCalibration::NoiseMultiplier(sigma)
        };
        let config = PrivacyEngineConfig::new(PoissonSampling { dataset_size, sample_rate }, clip, noise).with_delta(delta);
        if let Err(error) = config.clone().check() {
            prop_assert!(!error.to_string().is_empty());
        }
        let source = if secure { RandomnessSource::Secure } else { RandomnessSource::Seeded(seed) };
        match PrivacyEngine::new(config, source) {
            Ok(engine) => {
                prop_assert!(engine.noise_multiplier().is_finite());
                if let Ok(epsilon) = engine.epsilon() {
                    prop_assert!(epsilon >= 0.0);
                }
            }
            Err(error) => prop_assert!(!error.to_string().is_empty()),
        }
    }

    #[test]
    fn dp_sgd_training_config_builds_or_names_the_parameter(
        noise_multiplier in parameter(0.0..5.0),
        clip in prop::option::of(parameter(0.1..10.0)),
        delta in parameter(1e-8..0.1),
        episodes_per_step in count(1..4),
        adaptive in prop::option::of(parameter(0.1..0.9)),
        adaptive_lr in parameter(0.01..1.0),
        count_noise in prop::option::of(parameter(0.1..10.0)),
        dimension in count(0..64),
    ) {
        let config = DpSgdTrainingConfig::new()
            .with_noise_multiplier(noise_multiplier)
            .with_clip(clip)
            .with_delta(delta)
            .with_episodes_per_step(episodes_per_step)
            .with_adaptive_clip_quantile(adaptive)
            .with_adaptive_clip_learning_rate(adaptive_lr)
            .with_adaptive_clip_count_noise(count_noise);
        if let Err(error) = config.mechanism() {
            prop_assert!(!error.to_string().is_empty());
        }
        if let Err(error) = config.build(dimension) {
            prop_assert!(!error.to_string().is_empty());
        }
    }

    #[test]
    fn kickstart_configs_build_or_name_the_parameter(
        initial_concentration in parameter(0.5..10.0),
        vanishing_coefficient in parameter(0.5..1.0),
        concentration_floor in parameter(0.0..0.1),
        eta in parameter(0.01..0.4),
        tau in parameter(0.01..0.4),
        adjacency in parameter(0.001..0.1),
        budget_epsilon in prop::option::of(parameter(0.1..100.0)),
        budget_delta in prop::option::of(parameter(1e-6..0.5)),
        delta_samples in count(1..200),
        delta_confidence in parameter(0.5..0.999),
        advanced_slack in parameter(1e-8..1e-3),
        lambda in parameter(0.0..2.0),
        beta in parameter(0.01..0.5),
        balance in parameter(0.0..2.0),
        concentration in parameter(0.0..10.0),
        seed in any::<u64>(),
    ) {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        let actor = MlpConfig::new(4, vec![4], 2).init::<NdArray>(&Default::default(), &mut rng);
        let teacher_config = PrivateTeacherConfig {
            initial_concentration, vanishing_coefficient, concentration_floor, eta, tau,
            adjacency, budget_epsilon, budget_delta, delta_samples, delta_confidence,
            advanced_slack, ..PrivateTeacherConfig::new()
        };
        let teacher = Teacher::from_actor(&actor).unwrap();
        let student = PrivacyAwareConfig::new()
            .with_lambda(lambda)
            .with_beta(beta)
            .with_balance(balance);
        if let Err(error) = student.ball_radius(concentration) {
            prop_assert!(!error.to_string().is_empty());
        }
        match PrivateTeacher::new(teacher, teacher_config, seed) {
            Ok(teacher) => {
                let teacher = Arc::new(Mutex::new(teacher));
                if let Err(error) = PrivacyAwareKickstarting::new(teacher, student) {
                    prop_assert!(!error.to_string().is_empty());
                }
            }
            Err(error) => prop_assert!(!error.to_string().is_empty()),
        }
    }
}

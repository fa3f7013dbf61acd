//! Every public entry point of the environments on arbitrary input (proptest, with shrinking):
//! configs with NaN, ±∞, 0, negative and huge values, out-of-range actions, states of any
//! length, unknown names. Never a panic: either a named error (`EnvError`) or an environment
//! that resets and steps (issue 48: a scan of the public entry points for panics).

use privrl_envs::room::{RoomConfig, RoomSetting, RoomType};
use privrl_envs::{make, Acrobot, CartPoleConfig, CartPoleIntegrator, Env, MountainCar, VecEnv};
use proptest::collection::vec;
use proptest::prelude::*;
use proptest::test_runner::RngSeed;

/// A real parameter: mostly from `valid`, otherwise boundaries and garbage.
fn parameter(valid: std::ops::Range<f64>) -> impl Strategy<Value = f64> {
    weighted(valid, 6)
}

/// As [`parameter`], with `weight` for the valid range against 7 for the others.
fn weighted(valid: std::ops::Range<f64>, weight: u32) -> impl Strategy<Value = f64> {
    prop_oneof![
        weight => valid,
        1 => Just(f64::NAN),
        1 => Just(f64::INFINITY),
        1 => Just(f64::NEG_INFINITY),
        1 => Just(0.0),
        1 => Just(-1.0),
        1 => Just(1e300),
        1 => Just(5e-324),
    ]
}

/// A count or index: small ones, 0, and huge ones.
fn count(valid: std::ops::Range<usize>) -> impl Strategy<Value = usize> {
    prop_oneof![
        6 => valid,
        1 => Just(0usize),
        1 => Just(usize::MAX),
        1 => Just(1usize << 40),
    ]
}

/// A state entry for `set_state`.
fn state_entry() -> impl Strategy<Value = f64> {
    prop_oneof![
        6 => -3.0..3.0f64,
        1 => Just(f64::NAN),
        1 => Just(f64::INFINITY),
        1 => Just(-1e300),
    ]
}

/// Resets `env`, then steps it with `actions` (any usize) until an error or the end of the
/// list; stepping past the end of an episode must be refused by name, not panic.
fn exercise(env: &mut dyn Env, seed: u64, actions: &[usize], state: &[f64]) {
    let obs = env.reset(Some(seed));
    assert_eq!(obs.flat_len(), env.observation_space().flat_dim());
    for &action in actions {
        if env.step(action).is_err() {
            break;
        }
    }
    if env.set_state(state).is_ok() {
        for &action in actions {
            if env.step(action).is_err() {
                break;
            }
        }
    }
}

/// An action: valid ones mostly, then out-of-range and huge ones.
fn action() -> impl Strategy<Value = usize> {
    prop_oneof![6 => 0usize..3, 1 => 3usize..10, 1 => Just(usize::MAX)]
}

proptest! {
    // Fixed seed: the same cases on every run.
    #![proptest_config(ProptestConfig {
        cases: 300,
        rng_seed: RngSeed::Fixed(48),
        ..ProptestConfig::default()
    })]

    #[test]
    fn cartpole_builds_or_names_the_parameter(
        gravity in parameter(1.0..20.0),
        masscart in parameter(0.1..5.0),
        masspole in parameter(0.01..1.0),
        length in parameter(0.1..2.0),
        force_mag in parameter(1.0..20.0),
        tau in parameter(1e-3..0.1),
        semi_implicit in any::<bool>(),
        theta in parameter(0.05..1.0),
        x_threshold in parameter(0.5..5.0),
        max_steps in prop::option::of(count(1..50)),
        sutton_barto in any::<bool>(),
        seed in any::<u64>(),
        actions in vec(action(), 0..60),
        state in vec(state_entry(), 0..6),
    ) {
        let config = CartPoleConfig::v1()
            .with_gravity(gravity)
            .with_masscart(masscart)
            .with_masspole(masspole)
            .with_length(length)
            .with_force_mag(force_mag)
            .with_tau(tau)
            .with_integrator(if semi_implicit {
                CartPoleIntegrator::SemiImplicitEuler
            } else {
                CartPoleIntegrator::Euler
            })
            .with_theta_threshold_radians(theta)
            .with_x_threshold(x_threshold)
            .with_max_episode_steps(max_steps)
            .with_sutton_barto_reward(sutton_barto);
        let finite_positive = [gravity, masscart, masspole, length, force_mag, tau, theta, x_threshold]
            .iter()
            .all(|v| v.is_finite() && *v > 0.0);
        match config.build() {
            Ok(mut env) => {
                prop_assert!(finite_positive && max_steps != Some(0));
                exercise(&mut env, seed, &actions, &state);
            }
            Err(error) => prop_assert!(!error.to_string().is_empty()),
        }
    }

    #[test]
    fn classic_control_refuses_bad_actions_and_states(
        which in 0usize..2,
        seed in any::<u64>(),
        actions in vec(action(), 0..60),
        state in vec(state_entry(), 0..7),
    ) {
        let mut env: Box<dyn Env> = if which == 0 {
            Box::new(Acrobot::new())
        } else {
            Box::new(MountainCar::new())
        };
        exercise(&mut *env, seed, &actions, &state);
    }

    #[test]
    fn registry_and_vec_env_name_unknown_environments_and_counts(
        name in prop_oneof![
            Just("CartPole-v1".to_string()),
            Just("Acrobot-v1".to_string()),
            Just("MountainCar-v0".to_string()),
            "[a-zA-Z0-9-]{0,12}",
        ],
        num_envs in prop_oneof![0usize..4, Just(0usize)],
        seed in any::<u64>(),
        actions in vec(vec(action(), 0..5), 0..20),
    ) {
        if let Ok(mut env) = make(&name) {
            exercise(&mut *env, seed, &[0, 1, usize::MAX], &[]);
        }
        match VecEnv::make(&name, num_envs) {
            Ok(mut envs) => {
                prop_assert!(num_envs >= 1);
                envs.reset(seed);
                for step in &actions {
                    if envs.step(step).is_err() {
                        break;
                    }
                }
            }
            Err(error) => prop_assert!(!error.to_string().is_empty()),
        }
    }
}

proptest! {
    // Rendering costs milliseconds per step: fewer cases, small images, and mostly valid
    // parameters (so that about half the cases build and step an environment).
    #![proptest_config(ProptestConfig {
        cases: 40,
        rng_seed: RngSeed::Fixed(48),
        ..ProptestConfig::default()
    })]

    #[test]
    fn room_builds_or_names_the_parameter(
        s2 in any::<bool>(),
        image_size in prop_oneof![20 => 8usize..24, 1 => Just(0usize), 1 => Just(7usize), 1 => Just(1025usize), 1 => Just(usize::MAX)],
        room_type in prop::option::of(0usize..4),
        layout_index in prop::option::of(count(0..30)),
        max_steps in prop::option::of(count(1..10)),
        move_step in weighted(0.05..1.0, 60),
        rotate in weighted(1.0..180.0, 60),
        fov in weighted(10.0..170.0, 60),
        camera in weighted(0.1..2.3, 60),
        max_depth in weighted(1.0..100.0, 60),
        reference_area in weighted(1e-3..1.0, 60),
        seed in any::<u64>(),
        actions in vec(action(), 0..6),
        state in vec(state_entry(), 0..6),
    ) {
        let config = RoomConfig::s1()
            .with_setting(if s2 { RoomSetting::S2 } else { RoomSetting::S1 })
            .with_image_size(image_size)
            .with_room_type(room_type.map(|i| RoomType::ALL[i]))
            .with_layout_index(layout_index)
            .with_max_episode_steps(max_steps)
            .with_move_step_m(move_step)
            .with_rotate_step_degrees(rotate)
            .with_field_of_view_degrees(fov)
            .with_camera_height_m(camera)
            .with_max_depth_m(max_depth)
            .with_reference_area(reference_area);
        match config.build() {
            Ok(mut env) => {
                prop_assert!((8..=1024).contains(&image_size));
                exercise(&mut env, seed, &actions, &state);
            }
            Err(error) => prop_assert!(!error.to_string().is_empty()),
        }
    }
}

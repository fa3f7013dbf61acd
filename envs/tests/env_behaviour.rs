//! Behaviour every environment shares: typed errors, seeding, reset distributions,
//! termination versus truncation, and `VecEnv`'s auto-reset.

use privrl_envs::{
    make, registry, Acrobot, CartPole, CartPoleConfig, Env, EnvError, EpisodeEnd, MountainCar, Obs,
    Space, VecEnv,
};

fn all_envs() -> Vec<Box<dyn Env>> {
    registry()
        .iter()
        .map(|spec| make(spec.name).expect("registered"))
        .collect()
}

fn vector(obs: &Obs) -> Vec<f32> {
    obs.as_vector().expect("vector observation").to_vec()
}

/// Plays action 0 until the episode ends; returns the number of steps.
fn run_until_done(env: &mut dyn Env, action: usize) -> usize {
    for t in 1..=100_000 {
        if env.step(action).expect("episode running").done() {
            return t;
        }
    }
    panic!("{} never finished", env.id());
}

#[test]
fn step_before_reset_is_an_error() {
    for mut env in all_envs() {
        let err = env.step(0).unwrap_err();
        assert!(matches!(err, EnvError::ResetRequired { .. }), "{err}");
        assert!(err.to_string().contains("reset()"), "{err}");
    }
}

#[test]
fn invalid_action_names_the_valid_range() {
    for mut env in all_envs() {
        env.reset(Some(0));
        let n = env.action_space().discrete_n().unwrap();
        let err = env.step(n).unwrap_err();
        assert_eq!(
            err,
            EnvError::InvalidAction {
                env: env.id().to_string(),
                action: n,
                n
            }
        );
        assert!(
            err.to_string()
                .contains(&format!("valid actions are the integers 0 to {}", n - 1)),
            "{err}"
        );
        // The bad action did not move the environment: a valid one still works.
        assert!(env.step(0).is_ok());
    }
}

#[test]
fn stepping_a_finished_episode_is_an_error_until_reset() {
    let mut env = CartPole::v1();
    env.reset(Some(3));
    let steps = run_until_done(&mut env, 1);
    let err = env.step(1).unwrap_err();
    assert_eq!(
        err,
        EnvError::EpisodeFinished {
            env: "cartpole-v1".into(),
            reason: EpisodeEnd::Terminated,
            steps,
        }
    );
    assert!(err.to_string().contains("call reset()"), "{err}");
    env.reset(None);
    assert!(env.step(1).is_ok());
}

#[test]
fn cartpole_terminates_with_reward_one_on_the_last_step() {
    let mut env = CartPole::v1();
    env.reset(Some(0));
    loop {
        let step = env.step(1).unwrap();
        assert_eq!(step.reward, 1.0);
        if step.done() {
            assert!(step.terminated && !step.truncated);
            break;
        }
    }
    let mut sutton_barto = CartPoleConfig::v1()
        .with_sutton_barto_reward(true)
        .build()
        .unwrap();
    sutton_barto.reset(Some(0));
    let rewards: Vec<f64> = std::iter::from_fn(|| {
        let step = sutton_barto.step(1).ok()?;
        Some(step.reward)
    })
    .collect();
    assert_eq!(rewards.last(), Some(&-1.0));
    assert!(rewards[..rewards.len() - 1].iter().all(|&r| r == 0.0));
}

#[test]
fn time_limit_truncates_without_terminating() {
    // MountainCar never reaches the goal while the car does nothing from the valley floor.
    let mut env = MountainCar::new();
    env.set_state(&[-0.5, 0.0]).unwrap();
    let mut last = None;
    for t in 1..=200 {
        let step = env.step(1).unwrap();
        assert_eq!(step.truncated, t == 200, "step {t}");
        assert!(!step.terminated);
        last = Some(step);
    }
    assert!(last.unwrap().done());
    assert!(matches!(
        env.step(1),
        Err(EnvError::EpisodeFinished {
            reason: EpisodeEnd::Truncated,
            steps: 200,
            ..
        })
    ));

    // CartPole-v0 with a custom time limit: truncation is counted from set_state/reset.
    let mut cartpole = CartPoleConfig::v0()
        .with_max_episode_steps(Some(3))
        .build()
        .unwrap();
    assert_eq!(cartpole.id(), "cartpole-custom");
    cartpole.set_state(&[0.0; 4]).unwrap();
    let flags: Vec<_> = (0..3)
        .map(|t| cartpole.step(t % 2).unwrap().truncated)
        .collect();
    assert_eq!(flags, [false, false, true]);
}

#[test]
fn terminal_and_time_limit_on_the_same_step_sets_both_flags() {
    // As Gymnasium's TimeLimit: `truncated` depends only on the step count.
    let mut env = CartPoleConfig::v1()
        .with_max_episode_steps(Some(1))
        .build()
        .unwrap();
    env.set_state(&[2.39, 1.0, 0.0, 0.0]).unwrap();
    let step = env.step(1).unwrap();
    assert!(step.terminated && step.truncated);
    assert!(matches!(
        env.step(1),
        Err(EnvError::EpisodeFinished {
            reason: EpisodeEnd::Terminated,
            ..
        })
    ));
}

#[test]
fn unknown_env_lists_valid_names() {
    let err = make("cartpole-v2").err().unwrap();
    let message = err.to_string();
    for spec in registry() {
        assert!(message.contains(spec.name), "{message}");
    }
}

#[test]
fn reset_distributions_match_gymnasium_bounds() {
    let mut cartpole = CartPole::v1();
    let mut acrobot = Acrobot::new();
    let mut mountain_car = MountainCar::new();
    cartpole.reset(Some(7));
    acrobot.reset(Some(7));
    mountain_car.reset(Some(7));
    let (mut cart_min, mut cart_max) = (f64::INFINITY, f64::NEG_INFINITY);
    for _ in 0..2000 {
        cartpole.reset(None);
        for s in cartpole.state() {
            assert!((-0.05..0.05).contains(&s), "{s}");
            cart_min = cart_min.min(s);
            cart_max = cart_max.max(s);
        }
        acrobot.reset(None);
        for s in acrobot.state() {
            assert!((-0.1..=0.1).contains(&s), "{s}");
            // Gymnasium stores Acrobot's reset state as float32.
            assert_eq!(s, f64::from(s as f32));
        }
        mountain_car.reset(None);
        let [position, velocity] = mountain_car.state();
        assert!((-0.6..-0.4).contains(&position), "{position}");
        assert_eq!(velocity, 0.0);
    }
    // The draws fill the interval, not a corner of it.
    assert!(
        cart_min < -0.049 && cart_max > 0.049,
        "{cart_min} {cart_max}"
    );
}

#[test]
fn seeds_reproduce_and_none_continues_the_stream() {
    for mut env in all_envs() {
        let first = env.reset(Some(42));
        let second = env.reset(None);
        assert_ne!(first, second, "{}", env.id());
        assert_eq!(env.reset(Some(42)), first, "{}", env.id());
        assert_eq!(env.reset(None), second, "{}", env.id());
        assert_ne!(env.reset(Some(43)), first, "{}", env.id());
    }
}

#[test]
fn step_into_agrees_with_step() {
    for (mut a, mut b) in all_envs().into_iter().zip(all_envs()) {
        let n = a.action_space().discrete_n().unwrap();
        let mut obs = vec![0.0; a.observation_space().flat_dim()];
        b.reset_into(Some(5), &mut obs).unwrap();
        assert_eq!(vector(&a.reset(Some(5))), obs);
        for t in 0..300 {
            let action = (t * 7 + t / 3) % n;
            let step = a.step(action).unwrap();
            let info = b.step_into(action, &mut obs).unwrap();
            assert_eq!(step.info(), info);
            assert_eq!(vector(&step.obs), obs);
            if step.done() {
                a.reset(None);
                b.reset_into(None, &mut obs).unwrap();
            }
        }
        let err = b.step_into(0, &mut [0.0; 1]).unwrap_err();
        assert!(
            matches!(err, EnvError::ObsBufferLength { got: 1, .. }),
            "{err}"
        );
    }
}

#[test]
fn observations_stay_in_the_observation_space() {
    for mut env in all_envs() {
        let space = env.observation_space();
        let n = env.action_space().discrete_n().unwrap();
        let mut obs = env.reset(Some(1));
        for t in 0..2000 {
            let values = vector(&obs);
            assert!(space.contains(&values), "{}: {values:?}", env.id());
            let step = env.step((t * 31 + t / 5) % n).unwrap();
            obs = if step.done() {
                env.reset(None)
            } else {
                step.obs
            };
        }
    }
}

#[test]
fn set_state_validates_and_returns_the_observation() {
    let mut cartpole = CartPole::v1();
    assert_eq!(
        vector(&cartpole.set_state(&[0.1, -0.2, 0.03, 0.4]).unwrap()),
        [0.1, -0.2, 0.03, 0.4]
    );
    let err = cartpole.set_state(&[0.0; 3]).unwrap_err();
    assert!(matches!(err, EnvError::InvalidState { .. }), "{err}");
    assert!(err.to_string().contains("4 finite values"), "{err}");
    assert!(cartpole.set_state(&[f64::NAN, 0.0, 0.0, 0.0]).is_err());

    let mut acrobot = Acrobot::new();
    let obs = vector(&acrobot.set_state(&[0.0, 0.0, 1.0, -2.0]).unwrap());
    assert_eq!(obs, [1.0, 0.0, 1.0, 0.0, 1.0, -2.0]);
    assert!(acrobot.set_state(&[4.0, 0.0, 0.0, 0.0]).is_err());
    assert!(acrobot.set_state(&[0.0, 0.0, 13.0, 0.0]).is_err());

    let mut mountain_car = MountainCar::new();
    assert!(mountain_car.set_state(&[-1.3, 0.0]).is_err());
    assert!(mountain_car.set_state(&[0.0, 0.08]).is_err());
}

#[test]
fn mountain_car_wall_stops_the_car() {
    let mut env = MountainCar::new();
    env.set_state(&[-1.19, -0.05]).unwrap();
    let step = env.step(0).unwrap();
    assert_eq!(vector(&step.obs), [-1.2, 0.0]);
    assert_eq!(env.state(), [-1.2, 0.0]);
}

#[test]
fn cartpole_config_rejects_non_positive_values() {
    type Setter = fn(CartPoleConfig, f64) -> CartPoleConfig;
    let setters: [(&str, Setter); 8] = [
        ("gravity", CartPoleConfig::with_gravity),
        ("masscart", CartPoleConfig::with_masscart),
        ("masspole", CartPoleConfig::with_masspole),
        ("length", CartPoleConfig::with_length),
        ("force_mag", CartPoleConfig::with_force_mag),
        ("tau", CartPoleConfig::with_tau),
        (
            "theta_threshold_radians",
            CartPoleConfig::with_theta_threshold_radians,
        ),
        ("x_threshold", CartPoleConfig::with_x_threshold),
    ];
    for (name, set) in setters {
        for bad in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            let err = set(CartPoleConfig::v1(), bad).build().unwrap_err();
            match &err {
                EnvError::InvalidParameter {
                    name: got,
                    expected,
                    ..
                } => {
                    assert_eq!(got, name);
                    assert_eq!(expected, "> 0 and finite");
                }
                other => panic!("{other}"),
            }
            assert!(err.to_string().contains(name), "{err}");
        }
    }
    let err = CartPoleConfig::v1()
        .with_max_episode_steps(Some(0))
        .build()
        .unwrap_err();
    assert!(err.to_string().contains("max_episode_steps"), "{err}");
}

#[test]
fn cartpole_gravity_changes_the_dynamics_but_not_the_interface() {
    let mut earth = CartPole::v1();
    let mut lighter = CartPoleConfig::v1().with_gravity(9.7).build().unwrap();
    assert_eq!(earth.config().gravity, 9.8);
    assert_eq!(lighter.id(), "cartpole-custom");
    assert_eq!(lighter.observation_space(), earth.observation_space());
    let start = [0.0, 0.0, 0.1, 0.0];
    earth.set_state(&start).unwrap();
    lighter.set_state(&start).unwrap();
    earth.step(0).unwrap();
    lighter.step(0).unwrap();
    // θ̇ after one step is tau · θ̈, and θ̈ grows with gravity.
    assert!(earth.state()[3] > lighter.state()[3]);
}

#[test]
fn spaces_match_gymnasium() {
    let cartpole = CartPole::v1();
    let theta = (12.0 * 2.0 * std::f64::consts::PI / 360.0 * 2.0) as f32;
    assert_eq!(
        cartpole.observation_space(),
        Space::Box {
            low: vec![-4.8, f32::NEG_INFINITY, -theta, f32::NEG_INFINITY],
            high: vec![4.8, f32::INFINITY, theta, f32::INFINITY],
        }
    );
    let pi = std::f32::consts::PI;
    assert_eq!(
        Acrobot::new().observation_space(),
        Space::Box {
            low: vec![-1.0, -1.0, -1.0, -1.0, -4.0 * pi, -9.0 * pi],
            high: vec![1.0, 1.0, 1.0, 1.0, 4.0 * pi, 9.0 * pi],
        }
    );
    assert_eq!(
        MountainCar::new().observation_space(),
        Space::Box {
            low: vec![-1.2, -0.07],
            high: vec![0.6, 0.07],
        }
    );
}

#[test]
fn vec_env_auto_resets_and_returns_the_final_observation() {
    let mut venv = VecEnv::make("CartPole-v1", 3).unwrap();
    venv.reset(10);
    let mut reference: Vec<Box<dyn Env>> = (0..3).map(|_| make("cartpole-v1").unwrap()).collect();
    for (i, env) in reference.iter_mut().enumerate() {
        env.reset(Some(10 + i as u64));
    }
    let mut finished = 0;
    let mut returns = Vec::new();
    for t in 0..300 {
        let actions: Vec<usize> = (0..3).map(|i| (t + i) % 2).collect();
        let step = venv.step(&actions).unwrap();
        for (i, env) in reference.iter_mut().enumerate() {
            let expected = env.step(actions[i]).unwrap();
            assert_eq!(step.rewards[i], expected.reward);
            assert_eq!(step.terminated[i], expected.terminated);
            assert_eq!(step.truncated[i], expected.truncated);
            if expected.done() {
                // The final observation is the terminal one; `obs` already starts a new episode
                // drawn from the same environment's continuing random stream.
                assert_eq!(step.final_obs[i].as_ref(), Some(&expected.obs));
                assert_eq!(step.obs[i], env.reset(None));
                let stats = step.episodes[i].unwrap();
                assert!(stats.terminated);
                assert_eq!(stats.episode_return, stats.length as f64);
                returns.push(stats.episode_return);
                finished += 1;
            } else {
                assert_eq!(step.final_obs[i], None);
                assert_eq!(step.episodes[i], None);
                assert_eq!(step.obs[i], expected.obs);
            }
        }
        assert_eq!(
            step.completed_episodes().count(),
            step.final_obs.iter().flatten().count()
        );
    }
    assert!(finished > 10, "only {finished} episodes finished");
    assert!(returns.iter().all(|&r| r >= 1.0));
}

#[test]
fn vec_env_seeds_reproduce() {
    let rollout = |seed| {
        let mut venv = VecEnv::make("acrobot-v1", 4).unwrap();
        let first = venv.reset(seed);
        let steps: Vec<_> = (0..50)
            .map(|t| venv.step(&[t % 3, 0, 1, 2]).unwrap().obs)
            .collect();
        (first, steps)
    };
    assert_eq!(rollout(9), rollout(9));
    assert_ne!(rollout(9).0, rollout(10).0);
    // Environment i is seeded with seed + i.
    let (first, _) = rollout(9);
    assert_eq!(first[1], make("acrobot-v1").unwrap().reset(Some(10)));
}

#[test]
fn vec_env_flat_step_matches_vec_step() {
    let mut venv = VecEnv::make("mountaincar-v0", 5).unwrap();
    let mut flat = VecEnv::make("mountaincar-v0", 5).unwrap();
    let mut buffer = flat.flat_step_buffer();
    venv.reset(1);
    flat.reset_flat(1, buffer.obs_mut()).unwrap();
    let mut episodes = 0;
    for t in 0..450 {
        let actions: Vec<usize> = (0..5).map(|i| (t / 20 + i) % 3).collect();
        let step = venv.step(&actions).unwrap();
        flat.step_flat(&actions, &mut buffer).unwrap();
        for i in 0..5 {
            assert_eq!(step.obs[i].as_vector().unwrap(), buffer.obs_row(i));
            assert_eq!(
                step.final_obs[i].as_ref().map(|o| o.as_vector().unwrap()),
                buffer.final_obs_row(i)
            );
            assert_eq!(step.rewards[i], buffer.rewards()[i]);
            assert_eq!(step.episodes[i], buffer.episodes()[i]);
        }
        episodes += buffer.completed_episodes().count();
    }
    // Every MountainCar episode here is truncated at 200 steps.
    assert_eq!(episodes, 10);
    assert_eq!(flat.running_lengths(), &[50; 5]);
}

#[test]
fn vec_env_checks_actions_before_stepping_anything() {
    let mut venv = VecEnv::make("cartpole-v1", 2).unwrap();
    assert!(matches!(
        venv.step(&[0, 0]),
        Err(EnvError::ResetRequired { .. })
    ));
    venv.reset(0);
    assert_eq!(
        venv.step(&[0]).unwrap_err(),
        EnvError::ActionCount {
            expected: 2,
            got: 1
        }
    );
    let err = venv.step(&[0, 2]).unwrap_err();
    assert!(
        matches!(
            err,
            EnvError::InvalidAction {
                action: 2,
                n: 2,
                ..
            }
        ),
        "{err}"
    );
    assert!(err.to_string().contains("environment 1"), "{err}");
    // Nothing moved: both environments are still at their first step.
    assert_eq!(venv.running_lengths(), &[0, 0]);
    let mut wrong = VecEnv::make("cartpole-v1", 3).unwrap().flat_step_buffer();
    assert!(matches!(
        venv.step_flat(&[0, 1], &mut wrong),
        Err(EnvError::ObsBufferLength { .. })
    ));
}

#[test]
fn vec_env_rejects_empty_or_mismatched_envs() {
    let err = VecEnv::<Box<dyn Env>>::new(Vec::new()).unwrap_err();
    assert!(err.to_string().contains("num_envs"), "{err}");
    let err = VecEnv::new(vec![
        make("cartpole-v1").unwrap(),
        make("acrobot-v1").unwrap(),
    ])
    .unwrap_err();
    assert!(
        matches!(err, EnvError::MismatchedEnvs { index: 1, .. }),
        "{err}"
    );
    // Same spaces, different dynamics: allowed (e.g. PGC agents with different gravity).
    let envs = vec![
        CartPole::v1(),
        CartPoleConfig::v1().with_gravity(9.9).build().unwrap(),
    ];
    assert_eq!(VecEnv::new(envs).unwrap().num_envs(), 2);
}

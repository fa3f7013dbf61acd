//! The Gymnasium bridge (cargo feature `gymnasium`) against real Gymnasium in a Python worker.
//!
//! Needs a Python with `gymnasium` (and `ale-py` for the Atari test): `.venv/bin/python` at
//! the workspace root, which `scripts/test.sh` creates, or `PRIVRL_PYTHON`. Without one, the
//! tests that need it print why and pass; with `PRIVRL_REQUIRE_GYMNASIUM=1` (set by
//! `scripts/test.sh` once it has installed both) they fail instead, so CI cannot skip them
//! silently.
//!
//! The central check: bridged `CartPole-v1` and the native [`CartPole`] started from the same
//! physical state and given the same actions produce bit-identical observations and the same
//! rewards and flags, through termination and truncation.
#![cfg(feature = "gymnasium")]

use std::path::PathBuf;
use std::time::{Duration, Instant};

use privrl_envs::gymnasium::{GymnasiumConfig, GymnasiumEnv};
use privrl_envs::{make, CartPole, CartPoleConfig, Env, EnvError, EpisodeEnd, Obs, Space, VecEnv};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// Set to 1 to turn "skipped: no Python/Gymnasium/ale-py" into a failure.
const REQUIRE_VAR: &str = "PRIVRL_REQUIRE_GYMNASIUM";

fn required() -> bool {
    std::env::var(REQUIRE_VAR).is_ok_and(|v| v == "1")
}

/// Whether `error` means the Python side is not set up (as opposed to a bridge bug).
fn missing_python(error: &EnvError, allow_missing_ale: bool) -> bool {
    match error {
        EnvError::PythonUnavailable { .. } => true,
        EnvError::PythonPackageMissing { module, .. } => {
            module == "gymnasium" || module == "numpy" || (allow_missing_ale && module == "ale_py")
        }
        _ => false,
    }
}

/// Builds `config`, or returns `None` after printing why the test is skipped.
fn build_or_skip(test: &str, config: GymnasiumConfig) -> Option<GymnasiumEnv> {
    build_or_skip_with(test, config, false)
}

fn build_or_skip_with(
    test: &str,
    config: GymnasiumConfig,
    allow_missing_ale: bool,
) -> Option<GymnasiumEnv> {
    match config.build() {
        Ok(env) => Some(env),
        Err(error) if missing_python(&error, allow_missing_ale) && !required() => {
            eprintln!(
                "skipping {test}: {error}\n(scripts/test.sh sets up .venv with gymnasium and \
                 ale-py; set {REQUIRE_VAR}=1 to make this a failure)"
            );
            None
        }
        Err(error) => panic!("{test}: {error}"),
    }
}

fn vector(obs: &Obs) -> &[f32] {
    obs.as_vector().expect("flat observation")
}

fn bits(values: &[f32]) -> Vec<u32> {
    values.iter().map(|v| v.to_bits()).collect()
}

/// A scratch directory for Python modules that the worker imports.
fn scratch_dir(name: &str, files: &[(&str, &str)]) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("privrl-gym-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for (file, text) in files {
        std::fs::write(dir.join(file), text).unwrap();
    }
    dir
}

/// Gymnasium's noisy balancing controller from `tests/fixtures/generate.py`: long enough
/// episodes to reach CartPole's 500-step truncation.
fn balance(obs: &[f32], rng: &mut ChaCha8Rng) -> usize {
    if rng.random::<f64>() < 0.1 {
        return rng.random_range(0..2);
    }
    let [x, x_dot, theta, theta_dot] = [obs[0], obs[1], obs[2], obs[3]];
    usize::from(theta + 0.5 * theta_dot + 0.05 * x + 0.2 * x_dot > 0.0)
}

/// Plays one episode on both environments from `state` and checks every step; returns the
/// number of steps and how the episode ended.
fn compare_episode(
    bridged: &mut GymnasiumEnv,
    native: &mut CartPole,
    state: [f64; 4],
    rng: &mut ChaCha8Rng,
    balanced: bool,
) -> (usize, EpisodeEnd) {
    let start_bridged = bridged.set_state(&state).unwrap();
    let start_native = native.set_state(&state).unwrap();
    assert_eq!(bits(vector(&start_bridged)), bits(vector(&start_native)));
    let mut obs = vector(&start_native).to_vec();
    for t in 1.. {
        let action = if balanced {
            balance(&obs, rng)
        } else {
            rng.random_range(0..2)
        };
        let ours = native.step(action).unwrap();
        let theirs = bridged.step(action).unwrap();
        assert_eq!(
            bits(vector(&theirs.obs)),
            bits(vector(&ours.obs)),
            "start {state:?}, step {t}: bridged {:?} vs native {:?}",
            theirs.obs,
            ours.obs
        );
        assert_eq!(theirs.reward, ours.reward, "step {t}");
        assert_eq!(theirs.terminated, ours.terminated, "step {t}");
        assert_eq!(theirs.truncated, ours.truncated, "step {t}");
        if ours.done() {
            // Both refuse another step, with the same error.
            let (a, b) = (bridged.step(0).unwrap_err(), native.step(0).unwrap_err());
            assert!(matches!(a, EnvError::EpisodeFinished { steps, .. } if steps == t));
            assert!(matches!(b, EnvError::EpisodeFinished { steps, .. } if steps == t));
            let end = if ours.terminated {
                EpisodeEnd::Terminated
            } else {
                EpisodeEnd::Truncated
            };
            return (t, end);
        }
        obs = vector(&ours.obs).to_vec();
    }
    unreachable!()
}

#[test]
fn bridged_cartpole_matches_native_cartpole_step_for_step() {
    let test = "bridged_cartpole_matches_native_cartpole_step_for_step";
    let Some(mut bridged) = build_or_skip(test, GymnasiumConfig::new("CartPole-v1")) else {
        return;
    };
    let mut native = CartPole::v1();
    assert_eq!(bridged.observation_space(), native.observation_space());
    assert_eq!(bridged.action_space(), native.action_space());
    assert_eq!(bridged.max_episode_steps(), Some(500));

    let mut rng = ChaCha8Rng::seed_from_u64(10);
    let (mut steps, mut terminated) = (0, 0);
    // Random actions from Gymnasium's reset distribution and from states near the edges.
    let mut starts: Vec<[f64; 4]> = (0..12)
        .map(|_| std::array::from_fn(|_| rng.random_range(-0.05..0.05)))
        .collect();
    starts.extend([
        [2.3, 0.6, 0.0, 0.0],
        [-0.1, -0.5, 0.19, 0.8],
        [0.0, 0.0, -0.2, -1.0],
    ]);
    for state in starts {
        let (len, end) = compare_episode(&mut bridged, &mut native, state, &mut rng, false);
        steps += len;
        terminated += usize::from(end == EpisodeEnd::Terminated);
    }
    assert!(steps >= 150, "only {steps} random steps");
    assert_eq!(terminated, 15);

    // A balanced episode runs into the 500-step time limit.
    let (len, end) = compare_episode(
        &mut bridged,
        &mut native,
        [0.02, 0.01, -0.03, 0.02],
        &mut rng,
        true,
    );
    assert_eq!((len, end), (500, EpisodeEnd::Truncated));
    eprintln!(
        "{} random steps over 15 terminated episodes and one 500-step truncated episode agree \
         bit for bit ({})",
        steps,
        bridged.versions()
    );
}

#[test]
fn make_names_a_gymnasium_environment() {
    let test = "make_names_a_gymnasium_environment";
    if build_or_skip(test, GymnasiumConfig::new("CartPole-v1")).is_none() {
        return;
    }
    let mut env = make("  GYMNASIUM:CartPole-v1 ").unwrap();
    assert_eq!(env.id(), "gymnasium:CartPole-v1");
    assert_eq!(make(env.id()).unwrap().id(), env.id());
    // Gymnasium's seeding: the same seed gives the same start.
    let first = env.reset(Some(3));
    assert_eq!(env.reset(Some(3)), first);
    assert_ne!(env.reset(Some(4)), first);
    assert!(env.observation_space().contains(vector(&first)));
    assert!(vector(&first).iter().all(|v| v.abs() <= 0.05));
    // The native rules: actions 0..n, a buffer of the observation's length.
    assert!(matches!(
        env.step(2),
        Err(EnvError::InvalidAction {
            action: 2,
            n: 2,
            ..
        })
    ));
    assert!(matches!(
        env.step_into(0, &mut [0.0; 3]),
        Err(EnvError::ObsBufferLength {
            expected: 4,
            got: 3
        })
    ));
    let mut obs = [0.0; 4];
    let info = env.step_into(1, &mut obs).unwrap();
    assert_eq!(info.reward, 1.0);
    // A failed set_state leaves no episode running; the next step says why.
    let err = env.set_state(&[0.0; 3]).unwrap_err();
    assert!(
        matches!(&err, EnvError::GymnasiumException { exception, .. } if exception == "ValueError"),
        "{err:?}"
    );
    assert!(err.to_string().contains("got 3 values"), "{err}");
    assert_eq!(env.step(0).unwrap_err(), err);
    assert_eq!(vector(&env.set_state(&[0.0; 4]).unwrap()), [0.0; 4]);

    let mut fresh = make("gymnasium:CartPole-v1").unwrap();
    assert!(matches!(fresh.step(0), Err(EnvError::ResetRequired { .. })));
}

#[test]
fn keyword_arguments_reach_gymnasium() {
    let test = "keyword_arguments_reach_gymnasium";
    let config = GymnasiumConfig::parse(
        "gymnasium:CartPole-v1?max_episode_steps=10&sutton_barto_reward=true",
    )
    .unwrap();
    let Some(mut bridged) = build_or_skip(test, config) else {
        return;
    };
    assert_eq!(bridged.max_episode_steps(), Some(10));
    let mut native = CartPoleConfig::v1()
        .with_max_episode_steps(Some(10))
        .with_sutton_barto_reward(true)
        .build()
        .unwrap();
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    let (len, end) = compare_episode(&mut bridged, &mut native, [0.0; 4], &mut rng, true);
    assert_eq!((len, end), (10, EpisodeEnd::Truncated));
    let (len, end) = compare_episode(
        &mut bridged,
        &mut native,
        [0.0, 0.0, 0.2, 1.0],
        &mut rng,
        false,
    );
    assert_eq!(end, EpisodeEnd::Terminated, "after {len} steps");

    let err = GymnasiumConfig::parse("CartPole-v1?no_such_argument=1")
        .unwrap()
        .build()
        .unwrap_err();
    let message = err.to_string();
    assert!(
        matches!(&err, EnvError::GymnasiumException { exception, .. } if exception == "TypeError"),
        "{err:?}"
    );
    assert!(message.contains("no_such_argument"), "{message}");
}

#[test]
fn discrete_observations_are_one_hot_and_other_spaces_are_refused() {
    let test = "discrete_observations_are_one_hot_and_other_spaces_are_refused";
    let config = GymnasiumConfig::parse("gymnasium:FrozenLake-v1?is_slippery=false").unwrap();
    let Some(mut env) = build_or_skip(test, config) else {
        return;
    };
    assert_eq!(env.observation_space(), Space::Discrete { n: 16 });
    assert_eq!(env.action_space(), Space::Discrete { n: 4 });
    let one_hot = |i: usize| -> Vec<f32> { (0..16).map(|j| f32::from(u8::from(i == j))).collect() };
    assert_eq!(vector(&env.reset(Some(0))), one_hot(0));
    // Action 2 moves right on the deterministic lake: state 0 -> 1 -> 2.
    assert_eq!(vector(&env.step(2).unwrap().obs), one_hot(1));
    assert_eq!(vector(&env.step(2).unwrap().obs), one_hot(2));

    for (id, which) in [("Pendulum-v1", "action"), ("Blackjack-v1", "observation")] {
        let err = GymnasiumConfig::new(id).build().unwrap_err();
        let message = err.to_string();
        assert!(
            matches!(&err, EnvError::UnsupportedSpace { which: w, .. } if w == which),
            "{id}: {err:?}"
        );
        assert!(message.contains("supported: "), "{message}");
        assert!(message.contains("Discrete"), "{message}");
    }

    let err = GymnasiumConfig::new("NoSuchEnv-v0").build().unwrap_err();
    assert!(
        matches!(&err, EnvError::GymnasiumException { exception, during, .. }
            if exception == "NameNotFound" && during == "make"),
        "{err:?}"
    );
    assert!(err.to_string().contains("NoSuchEnv"), "{err}");
}

/// Test environments that misbehave, imported by the worker as `privrl_test_envs:<id>`.
const MISBEHAVING_ENVS: &str = r#"
import os, sys, time
import gymnasium as gym
import numpy as np


class Misbehaving(gym.Env):
    def __init__(self, how):
        self.how = how
        self.observation_space = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)
        self.action_space = gym.spaces.Discrete(3, start=-1)

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        print("a stray print must not break the protocol")
        return np.zeros(2, np.float32), {}

    def step(self, action):
        if self.how == "crash":
            sys.stderr.write("privrl test: crashing on purpose\n")
            sys.stderr.flush()
            os._exit(3)
        if self.how == "hang":
            sys.stderr.write("privrl test: sleeping\n")
            sys.stderr.flush()
            time.sleep(60)
        if self.how == "raise":
            raise RuntimeError(f"privrl test: refusing action {action}")
        # "echo": the observation is the action Gymnasium received.
        return np.array([action, 0.5], np.float32), 0.0, False, False, {}


for how in ("crash", "hang", "raise", "echo"):
    gym.register(id=f"Misbehaving-{how}-v0", entry_point=Misbehaving, kwargs={"how": how})
"#;

fn misbehaving(how: &str, step_timeout: Duration) -> GymnasiumConfig {
    let dir = scratch_dir(
        &format!("envs-{how}"),
        &[("privrl_test_envs.py", MISBEHAVING_ENVS)],
    );
    GymnasiumConfig::new(format!("privrl_test_envs:Misbehaving-{how}-v0"))
        .with_python_path(dir)
        .with_step_timeout(step_timeout)
}

#[test]
fn actions_are_offset_by_start_and_exceptions_leave_the_worker_alive() {
    let test = "actions_are_offset_by_start_and_exceptions_leave_the_worker_alive";
    let Some(mut env) = build_or_skip(test, misbehaving("echo", Duration::from_secs(10))) else {
        return;
    };
    assert_eq!(env.action_space(), Space::Discrete { n: 3 });
    assert_eq!(env.action_start(), -1);
    env.reset(None);
    for action in 0..3 {
        let step = env.step(action).unwrap();
        assert_eq!(vector(&step.obs), [action as f32 - 1.0, 0.5]);
    }

    let Some(mut env) = build_or_skip(test, misbehaving("raise", Duration::from_secs(10))) else {
        return;
    };
    env.reset(None);
    let err = env.step(0).unwrap_err();
    assert!(
        matches!(&err, EnvError::GymnasiumException { exception, during, .. }
            if exception == "RuntimeError" && during == "step"),
        "{err:?}"
    );
    assert!(err.to_string().contains("refusing action -1"), "{err}");
    // The worker is still there.
    assert_eq!(env.try_reset(None).unwrap(), Obs::Vector(vec![0.0, 0.0]));
}

#[test]
fn a_dying_worker_is_reported_with_its_stderr() {
    let test = "a_dying_worker_is_reported_with_its_stderr";
    let Some(mut env) = build_or_skip(test, misbehaving("crash", Duration::from_secs(10))) else {
        return;
    };
    env.reset(Some(0));
    let err = env.step(1).unwrap_err();
    let message = err.to_string();
    assert!(
        matches!(&err, EnvError::WorkerDied { during, .. } if during == "step"),
        "{err:?}"
    );
    assert!(
        message.contains("privrl test: crashing on purpose"),
        "{message}"
    );
    assert!(message.contains("exit status: 3"), "{message}");
    // Stray prints went to stderr, not into the protocol.
    assert!(message.contains("a stray print"), "{message}");
    // The environment stays failed: every call returns the same error at once.
    assert_eq!(env.try_reset(None).unwrap_err(), err);
    assert_eq!(env.reset(None), Obs::Vector(vec![0.0, 0.0]));
    assert_eq!(env.step(0).unwrap_err(), err);
}

#[test]
fn a_silent_worker_times_out_and_is_killed() {
    let test = "a_silent_worker_times_out_and_is_killed";
    let timeout = Duration::from_millis(500);
    let Some(mut env) = build_or_skip(test, misbehaving("hang", timeout)) else {
        return;
    };
    env.reset(Some(0));
    let start = Instant::now();
    let err = env.step(0).unwrap_err();
    let waited = start.elapsed();
    assert!(
        waited >= timeout && waited < Duration::from_secs(5),
        "waited {waited:?}"
    );
    assert!(
        matches!(&err, EnvError::WorkerTimeout { during, timeout_s, .. }
            if during == "step" && *timeout_s == 0.5),
        "{err:?}"
    );
    assert!(err.to_string().contains("privrl test: sleeping"), "{err}");
    #[cfg(target_os = "linux")]
    assert!(!PathBuf::from(format!("/proc/{}", env.worker_pid())).exists());
}

#[test]
fn missing_packages_name_the_pip_install_that_fixes_them() {
    let test = "missing_packages_name_the_pip_install_that_fixes_them";
    // Modules that shadow the installed ones and fail to import as a missing package does.
    let missing = |module: &str| {
        format!("raise ModuleNotFoundError(\"No module named '{module}'\", name='{module}')\n")
    };
    let no_gymnasium = scratch_dir("no-gymnasium", &[("gymnasium.py", &missing("gymnasium"))]);
    let err = GymnasiumConfig::new("CartPole-v1")
        .with_python_path(&no_gymnasium)
        .build()
        .unwrap_err();
    if matches!(err, EnvError::PythonUnavailable { .. }) && !required() {
        eprintln!("skipping {test}: {err}");
        return;
    }
    let message = err.to_string();
    assert!(
        matches!(&err, EnvError::PythonPackageMissing { module, .. } if module == "gymnasium"),
        "{err:?}"
    );
    assert!(
        message.contains("-m pip install gymnasium==1.4.0"),
        "{message}"
    );

    let no_ale = scratch_dir("no-ale", &[("ale_py.py", &missing("ale_py"))]);
    let config = GymnasiumConfig::parse("gymnasium:ALE/AirRaid-v5?obs_type=ram")
        .unwrap()
        .with_python_path(&no_ale);
    match config.build() {
        Err(EnvError::PythonPackageMissing { module, detail, .. })
            if module == "gymnasium" && !required() =>
        {
            eprintln!("skipping the ale-py half of {test}: no gymnasium ({detail})");
        }
        Err(err) => {
            let message = err.to_string();
            assert!(
                matches!(&err, EnvError::PythonPackageMissing { module, .. } if module == "ale_py"),
                "{err:?}"
            );
            assert!(
                message.contains("-m pip install ale-py==0.12.1"),
                "{message}"
            );
            assert!(message.contains("Atari"), "{message}");
        }
        Ok(env) => panic!("{env:?} was made without ale_py"),
    }
}

#[test]
fn a_vec_env_runs_one_worker_per_environment() {
    let test = "a_vec_env_runs_one_worker_per_environment";
    let config = GymnasiumConfig::new("CartPole-v1");
    if build_or_skip(test, config.clone()).is_none() {
        return;
    }
    let mut envs = config.build_vec(3).unwrap();
    let pids: std::collections::BTreeSet<_> =
        envs.envs().iter().map(GymnasiumEnv::worker_pid).collect();
    assert_eq!(pids.len(), 3);
    let mut buffer = envs.flat_step_buffer();
    envs.reset_flat(0, buffer.obs_mut()).unwrap();
    // Seeds 0, 1, 2: three different starts.
    assert_ne!(buffer.obs_row(0), buffer.obs_row(1));
    let mut rng = ChaCha8Rng::seed_from_u64(0);
    let mut episodes = 0;
    for _ in 0..200 {
        let actions: Vec<usize> = (0..3).map(|_| rng.random_range(0..2)).collect();
        envs.step_flat(&actions, &mut buffer).unwrap();
        episodes += buffer.completed_episodes().count();
        assert!(buffer.obs().iter().all(|v| v.is_finite()));
    }
    assert!(episodes >= 3, "{episodes} episodes in 600 random steps");

    let mut boxed = VecEnv::make("gymnasium:CartPole-v1", 2).unwrap();
    boxed.reset(0);
    assert_eq!(boxed.step(&[0, 1]).unwrap().rewards, [1.0, 1.0]);
}

#[test]
fn dropping_the_environment_kills_its_worker() {
    let test = "dropping_the_environment_kills_its_worker";
    let Some(env) = build_or_skip(test, GymnasiumConfig::new("CartPole-v1")) else {
        return;
    };
    let pid = env.worker_pid();
    #[cfg(target_os = "linux")]
    assert!(PathBuf::from(format!("/proc/{pid}")).exists());
    drop(env);
    #[cfg(target_os = "linux")]
    assert!(!PathBuf::from(format!("/proc/{pid}")).exists());
    let _ = pid;
}

#[test]
fn airraid_ram_runs_through_the_bridge() {
    let test = "airraid_ram_runs_through_the_bridge";
    let config = GymnasiumConfig::parse("gymnasium:ALE/AirRaid-v5?obs_type=ram").unwrap();
    let Some(mut env) = build_or_skip_with(test, config, true) else {
        return;
    };
    assert_eq!(env.action_space(), Space::Discrete { n: 6 });
    assert_eq!(env.observation_shape(), [128]);
    assert_eq!(env.observation_dtype(), "uint8");
    assert_eq!(
        env.observation_space(),
        Space::Box {
            low: vec![0.0; 128],
            high: vec![255.0; 128]
        }
    );
    let mut rng = ChaCha8Rng::seed_from_u64(0);
    let mut obs = vec![0.0; 128];
    env.reset_into(Some(0), &mut obs).unwrap();
    let (mut total_reward, mut changed) = (0.0, 0);
    for _ in 0..300 {
        let before = obs.clone();
        let info = env.step_into(rng.random_range(0..6), &mut obs).unwrap();
        total_reward += info.reward;
        changed += usize::from(before != obs);
        assert!(obs
            .iter()
            .all(|v| v.fract() == 0.0 && (0.0..=255.0).contains(v)));
        if info.done() {
            env.reset_into(None, &mut obs).unwrap();
        }
    }
    assert!(changed > 250, "RAM changed on only {changed} of 300 steps");
    eprintln!("AirRaid-ram: 300 random steps, reward {total_reward}");

    // The kickstarting paper's old Gym id maps to ale-py's AirRaid-v0 with RAM observations.
    let legacy = make("gymnasium:AirRaid-ram-v0").unwrap();
    assert_eq!(legacy.observation_space().flat_dim(), 128);
    let legacy = GymnasiumConfig::parse("gymnasium:AirRaid-ram-v0")
        .unwrap()
        .build()
        .unwrap();
    assert_eq!(legacy.resolved(), "AirRaid-v0 with obs_type='ram'");
}

/// A `VecEnv` of bridged environments sends all its workers their steps before reading any
/// reply; the result must be what stepping each environment on its own gives, auto-resets
/// included.
#[test]
fn a_concurrent_vec_env_matches_its_environments_stepped_one_by_one() {
    let test = "a_concurrent_vec_env_matches_its_environments_stepped_one_by_one";
    let config = GymnasiumConfig::new("CartPole-v1");
    if build_or_skip(test, config.clone()).is_none() {
        return;
    }
    let n = 3;
    let mut together = config.build_vec(n).unwrap();
    let mut alone = config.build_many(n).unwrap();
    let mut buffer = together.flat_step_buffer();
    together.reset_flat(7, buffer.obs_mut()).unwrap();
    let mut obs: Vec<Vec<f32>> = alone
        .iter_mut()
        .enumerate()
        .map(|(i, env)| {
            let mut row = vec![0.0; 4];
            env.reset_into(Some(7 + i as u64), &mut row).unwrap();
            row
        })
        .collect();
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    let mut resets = 0;
    for step in 0..150 {
        let actions: Vec<usize> = (0..n).map(|_| rng.random_range(0..2)).collect();
        together.step_flat(&actions, &mut buffer).unwrap();
        for (i, env) in alone.iter_mut().enumerate() {
            let info = env.step_into(actions[i], &mut obs[i]).unwrap();
            assert_eq!(buffer.rewards()[i], info.reward, "step {step}, env {i}");
            assert_eq!(buffer.done(i), info.done(), "step {step}, env {i}");
            if info.done() {
                assert_eq!(bits(buffer.final_obs_row(i).unwrap()), bits(&obs[i]));
                env.reset_into(None, &mut obs[i]).unwrap();
                resets += 1;
            }
            assert_eq!(
                bits(buffer.obs_row(i)),
                bits(&obs[i]),
                "step {step}, env {i}"
            );
        }
    }
    assert!(resets >= 3, "only {resets} auto-resets in 450 random steps");

    // A sent step must be received before anything else is asked of the worker; a wrong
    // buffer leaves the reply for a later call with the right one.
    let env = &mut alone[0];
    assert!(env.send_step(0).unwrap());
    assert!(matches!(
        env.reset_into(None, &mut obs[0]),
        Err(EnvError::WorkerProtocol { .. })
    ));
    assert!(matches!(
        env.receive_step_into(&mut [0.0; 3]),
        Err(EnvError::ObsBufferLength { .. })
    ));
    let info = env.receive_step_into(&mut obs[0]).unwrap();
    assert!(matches!(
        env.receive_step_into(&mut obs[0]),
        Err(EnvError::WorkerProtocol { .. })
    ));
    if info.done() {
        env.reset_into(None, &mut obs[0]).unwrap();
    }
    env.step_into(1, &mut obs[0]).unwrap();

    // The allocating `step` takes the same path.
    let mut boxed = VecEnv::make("gymnasium:CartPole-v1", 2).unwrap();
    let first = boxed.reset(3);
    let mut single = make("gymnasium:CartPole-v1").unwrap();
    assert_eq!(vector(&single.reset(Some(4))), vector(&first[1]));
    let step = boxed.step(&[1, 0]).unwrap();
    assert_eq!(vector(&single.step(0).unwrap().obs), vector(&step.obs[1]));
}

/// `#obs_scale=1/255` turns AirRaid's RAM bytes into [0, 1], bounds included, and changes
/// nothing else.
#[test]
fn airraid_ram_observations_can_be_scaled_to_the_unit_interval() {
    let test = "airraid_ram_observations_can_be_scaled_to_the_unit_interval";
    let raw = GymnasiumConfig::parse("gymnasium:ALE/AirRaid-v5?obs_type=ram").unwrap();
    let Some(mut raw) = build_or_skip_with(test, raw, true) else {
        return;
    };
    let name = "gymnasium:ALE/AirRaid-v5?obs_type=ram#obs_scale=1/255";
    let mut scaled = make(name).unwrap();
    let scale = (1.0f64 / 255.0) as f32;
    assert_eq!(
        scaled.observation_space(),
        Space::Box {
            low: vec![0.0; 128],
            high: vec![255.0 * scale; 128]
        }
    );
    // The canonical name keeps the scale, so it makes the same environment again.
    assert!(
        scaled.id().ends_with("#obs_scale=0.003921569"),
        "{}",
        scaled.id()
    );
    let (mut a, mut b) = (vec![0.0; 128], vec![0.0; 128]);
    raw.reset_into(Some(5), &mut a).unwrap();
    scaled.reset_into(Some(5), &mut b).unwrap();
    let mut rng = ChaCha8Rng::seed_from_u64(2);
    for _ in 0..50 {
        let expected: Vec<f32> = a.iter().map(|x| x * scale).collect();
        assert_eq!(bits(&b), bits(&expected));
        assert!(b.iter().all(|v| (0.0..=1.0).contains(v)));
        let action = rng.random_range(0..6);
        let (x, y) = (
            raw.step_into(action, &mut a).unwrap(),
            scaled.step_into(action, &mut b).unwrap(),
        );
        assert_eq!((x.reward, x.done()), (y.reward, y.done()));
        if x.done() {
            break;
        }
    }
}

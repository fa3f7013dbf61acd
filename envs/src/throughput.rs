//! Throughput of the environments, for `cargo xtask bench` and the criterion benches in
//! `bench/benches/`, and the uniformly random policy that the suites' baselines use.
//!
//! Every measurement steps environments single-threaded with uniformly random actions from a
//! cheap generator (Xoshiro256++), resets on `done`, and counts steps per wall-clock second.
//! Environments are driven through the `Env` trait object that `privrl_envs::make` returns, on
//! the allocation-free `step_into` path that agents and `VecEnv::step_flat` use.

use std::hint::black_box;
use std::time::Instant;

use crate::room::RoomConfig;
use crate::{make, registry, Env, EnvError, Obs, VecEnv};
use rand::rngs::SmallRng;
use rand::{RngCore, SeedableRng};

/// Draws uniformly random discrete actions with one 32-bit draw and a multiply-shift (no
/// division), so that sampling costs a few nanoseconds next to the environment step.
#[derive(Debug, Clone)]
pub struct RandomActions {
    rng: SmallRng,
    num_actions: u64,
}

impl RandomActions {
    /// Actions in `0..num_actions`, seeded with `seed`.
    pub fn new(num_actions: usize, seed: u64) -> Self {
        Self {
            rng: SmallRng::seed_from_u64(seed),
            num_actions: num_actions as u64,
        }
    }

    /// The next action.
    #[inline]
    pub fn sample(&mut self) -> usize {
        ((u64::from(self.rng.next_u32()) * self.num_actions) >> 32) as usize
    }
}

/// What a run of random steps saw; returned so that the work cannot be optimised away.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RandomRun {
    /// Steps taken.
    pub steps: u64,
    /// Episodes that ended.
    pub episodes: u64,
    /// Sum of rewards.
    pub total_reward: f64,
}

fn num_actions(env: &dyn Env) -> Result<usize, EnvError> {
    let space = env.action_space();
    space.discrete_n().ok_or_else(|| EnvError::MismatchedEnvs {
        index: 0,
        detail: format!("action space {space:?} is not Discrete"),
    })
}

fn check_steps(steps: u64) -> Result<(), EnvError> {
    if steps == 0 {
        return Err(EnvError::InvalidParameter {
            name: "steps".into(),
            value: 0.0,
            expected: ">= 1".into(),
        });
    }
    Ok(())
}

/// Steps `env` `steps` times with random actions through `step_into`, resetting (without
/// reseeding) whenever an episode ends. `obs` must have the observation length. The env
/// must have been reset.
pub fn run_random_steps(
    env: &mut dyn Env,
    actions: &mut RandomActions,
    obs: &mut [f32],
    steps: u64,
) -> Result<RandomRun, EnvError> {
    let mut run = RandomRun {
        steps,
        episodes: 0,
        total_reward: 0.0,
    };
    for _ in 0..steps {
        let info = env.step_into(actions.sample(), obs)?;
        run.total_reward += info.reward;
        if info.done() {
            run.episodes += 1;
            env.reset_into(None, obs)?;
        }
    }
    black_box(obs);
    Ok(run)
}

/// Like [`run_random_steps`] but through the allocating `step`, which returns a fresh
/// `Obs` each time; measures what `step_into` saves.
pub fn run_random_steps_allocating(
    env: &mut dyn Env,
    actions: &mut RandomActions,
    steps: u64,
) -> Result<RandomRun, EnvError> {
    let mut run = RandomRun {
        steps,
        episodes: 0,
        total_reward: 0.0,
    };
    for _ in 0..steps {
        let step = env.step(actions.sample())?;
        run.total_reward += step.reward;
        let done = step.done();
        black_box::<Obs>(step.obs);
        if done {
            run.episodes += 1;
            black_box(env.reset(None));
        }
    }
    Ok(run)
}

/// Single-threaded steps per second of the registered environment `name` (see
/// [`crate::make`]), through `step_into`, with random actions seeded by `seed`.
pub fn env_steps_per_second(name: &str, steps: u64, seed: u64) -> Result<f64, EnvError> {
    check_steps(steps)?;
    let mut env = make(name)?;
    let mut actions = RandomActions::new(num_actions(env.as_ref())?, seed);
    let mut obs = vec![0.0; env.observation_space().flat_dim()];
    env.reset_into(Some(seed), &mut obs)?;
    let start = Instant::now();
    let run = run_random_steps(env.as_mut(), &mut actions, &mut obs, steps)?;
    let seconds = start.elapsed().as_secs_f64();
    black_box(run);
    Ok(steps as f64 / seconds)
}

/// Like [`env_steps_per_second`] but through the allocating `step`.
pub fn env_steps_per_second_allocating(name: &str, steps: u64, seed: u64) -> Result<f64, EnvError> {
    check_steps(steps)?;
    let mut env = make(name)?;
    let mut actions = RandomActions::new(num_actions(env.as_ref())?, seed);
    env.reset(Some(seed));
    let start = Instant::now();
    let run = run_random_steps_allocating(env.as_mut(), &mut actions, steps)?;
    let seconds = start.elapsed().as_secs_f64();
    black_box(run);
    Ok(steps as f64 / seconds)
}

/// Environment steps per second (summed over environments) of a `VecEnv` of `num_envs`
/// copies of `name`, stepped single-threaded with `step_flat`; `steps` counts environment
/// steps, so there are `steps / num_envs` calls (at least one).
pub fn vec_env_steps_per_second(
    name: &str,
    num_envs: usize,
    steps: u64,
    seed: u64,
) -> Result<f64, EnvError> {
    check_steps(steps)?;
    let mut envs = VecEnv::make(name, num_envs)?;
    let n = envs.action_space().discrete_n().unwrap_or(1);
    let mut sampler = RandomActions::new(n, seed);
    let mut buffer = envs.flat_step_buffer();
    envs.reset_flat(seed, buffer.obs_mut())?;
    let mut actions = vec![0; num_envs];
    let calls = (steps / num_envs as u64).max(1);
    let start = Instant::now();
    for _ in 0..calls {
        actions.iter_mut().for_each(|a| *a = sampler.sample());
        envs.step_flat(&actions, &mut buffer)?;
    }
    let seconds = start.elapsed().as_secs_f64();
    black_box(&buffer);
    Ok((calls * num_envs as u64) as f64 / seconds)
}

/// Single-threaded frames per second of the room task in setting S1 (RGB + depth) with
/// `size × size` images: `frames` random-action steps through `step_into`, each of which
/// renders one frame (resets at the 100-step time limit render one more, not counted). Errors
/// for `frames == 0` or a size outside `8..=1024`.
pub fn room_frames_per_second(size: usize, frames: u64, seed: u64) -> Result<f64, EnvError> {
    check_steps(frames)?;
    let mut env = RoomConfig::s1().with_image_size(size).build()?;
    let mut actions = RandomActions::new(num_actions(&env)?, seed);
    let mut obs = vec![0.0; env.obs_len()];
    env.reset_into(Some(seed), &mut obs)?;
    let start = Instant::now();
    let run = run_random_steps(&mut env, &mut actions, &mut obs, frames)?;
    let seconds = start.elapsed().as_secs_f64();
    black_box(run);
    Ok(frames as f64 / seconds)
}

/// `(name, steps per second)` for every registered environment, as
/// [`env_steps_per_second`] measures it with seed 0.
pub fn env_throughput_table(steps: u64) -> Vec<(String, f64)> {
    registry()
        .iter()
        // Registered names always build, so the only possible error is `steps == 0`, for
        // which there is nothing to report.
        .filter_map(|spec| {
            env_steps_per_second(spec.name, steps, 0)
                .ok()
                .map(|rate| (spec.name.to_string(), rate))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn random_actions_cover_the_space_uniformly() {
        let mut actions = RandomActions::new(3, 0);
        let mut counts = [0usize; 3];
        for _ in 0..30_000 {
            counts[actions.sample()] += 1;
        }
        assert!(
            counts.iter().all(|&c| (9_000..11_000).contains(&c)),
            "{counts:?}"
        );
    }

    #[test]
    fn throughput_table_has_every_env() {
        let table = env_throughput_table(1_000);
        let names: Vec<_> = table.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(
            names,
            ["cartpole-v1", "cartpole-v0", "acrobot-v1", "mountaincar-v0"]
        );
        assert!(table
            .iter()
            .all(|(_, rate)| rate.is_finite() && *rate > 0.0));
    }

    #[test]
    fn errors_are_typed() {
        assert!(matches!(
            env_steps_per_second("nope", 10, 0),
            Err(EnvError::UnknownEnv { .. })
        ));
        assert!(matches!(
            env_steps_per_second("cartpole-v1", 0, 0),
            Err(EnvError::InvalidParameter { .. })
        ));
        assert!(vec_env_steps_per_second("cartpole-v1", 4, 100, 0).unwrap() > 0.0);
        assert!(env_steps_per_second_allocating("acrobot-v1", 100, 0).unwrap() > 0.0);
    }

    #[test]
    fn room_frames_are_measured() {
        assert!(room_frames_per_second(16, 150, 0).unwrap() > 0.0);
        assert!(matches!(
            room_frames_per_second(4, 10, 0),
            Err(EnvError::InvalidParameter { .. })
        ));
        assert!(matches!(
            room_frames_per_second(16, 0, 0),
            Err(EnvError::InvalidParameter { .. })
        ));
    }

    #[test]
    fn random_runs_reset_on_done() {
        let mut env = make("cartpole-v1").unwrap();
        let mut obs = [0.0; 4];
        env.reset_into(Some(0), &mut obs).unwrap();
        let mut actions = RandomActions::new(2, 0);
        let run = run_random_steps(env.as_mut(), &mut actions, &mut obs, 10_000).unwrap();
        // Random CartPole episodes last about 22 steps.
        assert!(run.episodes > 200, "{run:?}");
        assert_eq!(run.total_reward, 10_000.0);
    }
}

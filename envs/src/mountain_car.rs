//! MountainCar-v0, a line-by-line port of Gymnasium's
//! `gymnasium/envs/classic_control/mountain_car.py` (Moore 1990; Sutton & Barto).
//!
//! The state `[position, velocity]` is `f64`, updated with Gymnasium's order of operations,
//! clipping, and velocity reset at the left wall; observations are the state cast to `f32`.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::env::{check_obs_len, check_state, step_vector, EpisodeClock};
use crate::{Env, EnvError, Obs, Space, Step, StepInfo};

/// Left end of the track (and the wall), in position units.
const MIN_POSITION: f64 = -1.2;
/// Right end of the track.
const MAX_POSITION: f64 = 0.6;
/// Bound on |velocity|.
const MAX_SPEED: f64 = 0.07;
/// The episode terminates once position ≥ this (with velocity ≥ `GOAL_VELOCITY`).
const GOAL_POSITION: f64 = 0.5;
/// Gymnasium's default `goal_velocity`.
const GOAL_VELOCITY: f64 = 0.0;
/// Acceleration per unit of push.
const FORCE: f64 = 0.001;
/// Gravity term, multiplied by `cos(3 · position)`.
const GRAVITY: f64 = 0.0025;
/// Number of actions: 0 push left, 1 no push, 2 push right.
const NUM_ACTIONS: usize = 3;
/// Length of the state and of the observation.
const STATE_LEN: usize = 2;
/// The reset position is drawn from U(-0.6, -0.4); the velocity starts at 0.
const RESET_POSITION_LOW: f64 = -0.6;
/// Upper end of the reset position range.
const RESET_POSITION_HIGH: f64 = -0.4;
/// Gymnasium's time limit for MountainCar-v0.
const MAX_EPISODE_STEPS: usize = 200;

/// The under-powered car in a valley, identical to Gymnasium's `MountainCarEnv` wrapped in
/// `TimeLimit(200)`.
///
/// Actions: 0 accelerate left, 1 do nothing, 2 accelerate right. Observation:
/// `[position, velocity]` as `f32`. Reward -1 every step; terminates when the car reaches
/// position 0.5 with non-negative velocity.
#[derive(Debug, Clone)]
pub struct MountainCar {
    state: [f64; STATE_LEN],
    clock: EpisodeClock,
    rng: ChaCha8Rng,
}

impl Default for MountainCar {
    fn default() -> Self {
        Self::new()
    }
}

impl MountainCar {
    /// Gymnasium's `MountainCar-v0` (200-step time limit, `goal_velocity = 0`).
    pub fn new() -> Self {
        Self {
            state: [0.0; STATE_LEN],
            clock: EpisodeClock::new(Some(MAX_EPISODE_STEPS)),
            rng: ChaCha8Rng::seed_from_u64(0),
        }
    }

    /// The physical state `[position, velocity]` in `f64`.
    pub fn state(&self) -> [f64; STATE_LEN] {
        self.state
    }

    #[inline]
    fn observation(&self) -> [f32; STATE_LEN] {
        [self.state[0] as f32, self.state[1] as f32]
    }

    /// Gymnasium's reset: reseed if asked, position from U(-0.6, -0.4), velocity 0.
    fn sample_initial_state(&mut self, seed: Option<u64>) {
        if let Some(seed) = seed {
            self.rng = ChaCha8Rng::seed_from_u64(seed);
        }
        let position = self
            .rng
            .random_range(RESET_POSITION_LOW..RESET_POSITION_HIGH);
        self.state = [position, 0.0];
        self.clock.restart();
    }
}

impl Env for MountainCar {
    fn id(&self) -> &str {
        "mountaincar-v0"
    }

    /// `Box([-1.2, -0.07], [0.6, 0.07])`, as in Gymnasium.
    fn observation_space(&self) -> Space {
        Space::Box {
            low: vec![MIN_POSITION as f32, -MAX_SPEED as f32],
            high: vec![MAX_POSITION as f32, MAX_SPEED as f32],
        }
    }

    fn action_space(&self) -> Space {
        Space::Discrete { n: NUM_ACTIONS }
    }

    fn reset(&mut self, seed: Option<u64>) -> Obs {
        self.sample_initial_state(seed);
        Obs::Vector(self.observation().to_vec())
    }

    fn step(&mut self, action: usize) -> Result<Step, EnvError> {
        step_vector::<STATE_LEN>(self, action)
    }

    /// `state` is `[position, velocity]` within the observation bounds
    /// (position in [-1.2, 0.6], |velocity| ≤ 0.07), the set Gymnasium can reach.
    fn set_state(&mut self, state: &[f64]) -> Result<Obs, EnvError> {
        check_state(
            self.id(),
            state,
            &[(MIN_POSITION, MAX_POSITION), (-MAX_SPEED, MAX_SPEED)],
            "[position, velocity] with position in [-1.2, 0.6] and |velocity| <= 0.07",
        )?;
        self.state.copy_from_slice(state);
        self.clock.restart();
        Ok(Obs::Vector(self.observation().to_vec()))
    }

    fn max_episode_steps(&self) -> Option<usize> {
        self.clock.max_episode_steps()
    }

    fn step_into(&mut self, action: usize, obs: &mut [f32]) -> Result<StepInfo, EnvError> {
        check_obs_len(obs, STATE_LEN)?;
        self.clock
            .check_step("mountaincar-v0", action, NUM_ACTIONS)?;
        let [mut position, mut velocity] = self.state;
        // Gymnasium: `velocity += (action - 1) * force + math.cos(3 * position) * (-gravity)`.
        velocity += (action as f64 - 1.0) * FORCE + (3.0 * position).cos() * (-GRAVITY);
        velocity = velocity.clamp(-MAX_SPEED, MAX_SPEED);
        position += velocity;
        position = position.clamp(MIN_POSITION, MAX_POSITION);
        // The left end is a wall: hitting it stops the car.
        if position == MIN_POSITION && velocity < 0.0 {
            velocity = 0.0;
        }
        let terminated = position >= GOAL_POSITION && velocity >= GOAL_VELOCITY;
        self.state = [position, velocity];
        let truncated = self.clock.advance(terminated);
        obs.copy_from_slice(&self.observation());
        Ok(StepInfo {
            reward: -1.0,
            terminated,
            truncated,
        })
    }

    fn reset_into(&mut self, seed: Option<u64>, obs: &mut [f32]) -> Result<(), EnvError> {
        check_obs_len(obs, STATE_LEN)?;
        self.sample_initial_state(seed);
        obs.copy_from_slice(&self.observation());
        Ok(())
    }
}

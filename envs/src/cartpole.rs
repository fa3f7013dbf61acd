//! CartPole-v1 and CartPole-v0, a line-by-line port of Gymnasium's
//! `gymnasium/envs/classic_control/cartpole.py` (Barto, Sutton & Anderson 1983).
//!
//! The state is four `f64` values, integrated in double precision with the same order of
//! floating-point operations as Gymnasium; observations are that state cast to `f32`. Every
//! physical constant is configurable, because the PGC experiments vary gravity (9.7/9.8/9.9).

use std::f64::consts::PI;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use crate::env::{check_obs_len, check_positive, check_state, step_vector, EpisodeClock};
use crate::{Env, EnvError, Obs, Space, Step, StepInfo};

/// Number of actions: 0 pushes the cart left, 1 pushes it right.
const NUM_ACTIONS: usize = 2;
/// Length of the state and of the observation: x, ẋ, θ, θ̇.
const STATE_LEN: usize = 4;
/// Bound of the uniform reset distribution, U(-0.05, 0.05) for every state variable.
const RESET_BOUND: f64 = 0.05;

/// How CartPole integrates its equations of motion (Gymnasium's `kinematics_integrator`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CartPoleIntegrator {
    /// Explicit Euler: positions move with the old velocities. Gymnasium's default.
    Euler,
    /// Semi-implicit Euler: velocities first, then positions with the new velocities.
    SemiImplicitEuler,
}

/// Physical constants, thresholds and time limit of CartPole. Defaults are Gymnasium's.
///
/// Build a validated environment with [`CartPoleConfig::build`]:
/// `CartPoleConfig::v1().with_gravity(9.7).build()?`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CartPoleConfig {
    /// Gravitational acceleration in m/s² (9.8).
    pub gravity: f64,
    /// Mass of the cart in kg (1.0).
    pub masscart: f64,
    /// Mass of the pole in kg (0.1).
    pub masspole: f64,
    /// Half the pole's length in m (0.5); Gymnasium's `length` is the half-length.
    pub length: f64,
    /// Magnitude of the force that pushes the cart, in N (10.0).
    pub force_mag: f64,
    /// Seconds between state updates (0.02).
    pub tau: f64,
    /// Integration scheme (explicit Euler).
    pub integrator: CartPoleIntegrator,
    /// The episode terminates when |θ| exceeds this, in radians (12° = `12 * 2 * π / 360`).
    pub theta_threshold_radians: f64,
    /// The episode terminates when |x| exceeds this, in m (2.4).
    pub x_threshold: f64,
    /// Truncation time limit (500 for v1, 200 for v0); `None` for no limit.
    pub max_episode_steps: Option<usize>,
    /// Gymnasium's `sutton_barto_reward`: reward 0 per step and -1 on termination instead of
    /// +1 per step including the terminating one (false).
    pub sutton_barto_reward: bool,
}

impl Default for CartPoleConfig {
    fn default() -> Self {
        Self::v1()
    }
}

impl CartPoleConfig {
    /// Gymnasium's `CartPole-v1`: 500-step time limit, reward threshold 475.
    pub fn v1() -> Self {
        Self {
            gravity: 9.8,
            masscart: 1.0,
            masspole: 0.1,
            length: 0.5,
            force_mag: 10.0,
            tau: 0.02,
            integrator: CartPoleIntegrator::Euler,
            theta_threshold_radians: 12.0 * 2.0 * PI / 360.0,
            x_threshold: 2.4,
            max_episode_steps: Some(500),
            sutton_barto_reward: false,
        }
    }

    /// Gymnasium's `CartPole-v0`: identical dynamics, 200-step time limit, threshold 195.
    pub fn v0() -> Self {
        Self {
            max_episode_steps: Some(200),
            ..Self::v1()
        }
    }

    /// Sets the gravitational acceleration (m/s²).
    pub fn with_gravity(mut self, gravity: f64) -> Self {
        self.gravity = gravity;
        self
    }

    /// Sets the cart mass (kg).
    pub fn with_masscart(mut self, masscart: f64) -> Self {
        self.masscart = masscart;
        self
    }

    /// Sets the pole mass (kg).
    pub fn with_masspole(mut self, masspole: f64) -> Self {
        self.masspole = masspole;
        self
    }

    /// Sets the pole half-length (m).
    pub fn with_length(mut self, length: f64) -> Self {
        self.length = length;
        self
    }

    /// Sets the push force (N).
    pub fn with_force_mag(mut self, force_mag: f64) -> Self {
        self.force_mag = force_mag;
        self
    }

    /// Sets the time step (s).
    pub fn with_tau(mut self, tau: f64) -> Self {
        self.tau = tau;
        self
    }

    /// Sets the integration scheme.
    pub fn with_integrator(mut self, integrator: CartPoleIntegrator) -> Self {
        self.integrator = integrator;
        self
    }

    /// Sets the pole-angle termination threshold (rad).
    pub fn with_theta_threshold_radians(mut self, theta_threshold_radians: f64) -> Self {
        self.theta_threshold_radians = theta_threshold_radians;
        self
    }

    /// Sets the cart-position termination threshold (m).
    pub fn with_x_threshold(mut self, x_threshold: f64) -> Self {
        self.x_threshold = x_threshold;
        self
    }

    /// Sets the truncation time limit; `None` removes it.
    pub fn with_max_episode_steps(mut self, max_episode_steps: Option<usize>) -> Self {
        self.max_episode_steps = max_episode_steps;
        self
    }

    /// Switches to the Sutton–Barto reward (0 per step, -1 on termination).
    pub fn with_sutton_barto_reward(mut self, sutton_barto_reward: bool) -> Self {
        self.sutton_barto_reward = sutton_barto_reward;
        self
    }

    /// Checks every value and builds the environment. Physical constants and thresholds must
    /// be finite and > 0; `max_episode_steps` must be ≥ 1 when set.
    pub fn build(self) -> Result<CartPole, EnvError> {
        CartPole::new(self)
    }

    fn validate(&self) -> Result<(), EnvError> {
        check_positive("gravity", self.gravity)?;
        check_positive("masscart", self.masscart)?;
        check_positive("masspole", self.masspole)?;
        check_positive("length", self.length)?;
        check_positive("force_mag", self.force_mag)?;
        check_positive("tau", self.tau)?;
        check_positive("theta_threshold_radians", self.theta_threshold_radians)?;
        check_positive("x_threshold", self.x_threshold)?;
        if self.max_episode_steps == Some(0) {
            return Err(EnvError::invalid_parameter(
                "max_episode_steps",
                0.0,
                ">= 1, or None for no time limit",
            ));
        }
        Ok(())
    }
}

/// The cart-pole balancing task, identical to Gymnasium's `CartPoleEnv` wrapped in `TimeLimit`.
///
/// Actions: 0 pushes left, 1 pushes right. Observation: `[x, ẋ, θ, θ̇]` as `f32`. Reward +1 per
/// step, including the terminating one. Terminates when |x| > 2.4 or |θ| > 12°.
#[derive(Debug, Clone)]
pub struct CartPole {
    config: CartPoleConfig,
    /// `masspole + masscart`, in Gymnasium's order.
    total_mass: f64,
    /// `masspole * length`.
    polemass_length: f64,
    id: &'static str,
    state: [f64; STATE_LEN],
    clock: EpisodeClock,
    rng: ChaCha8Rng,
}

impl CartPole {
    /// Builds CartPole from a config, checking every value (see [`CartPoleConfig::build`]).
    /// The id is `cartpole-v1` or `cartpole-v0` when the config is exactly that version's and
    /// `cartpole-custom` otherwise, so that a modified CartPole (say gravity 9.7) is never
    /// recorded, and later rebuilt with `make`, as the registered one.
    pub fn new(config: CartPoleConfig) -> Result<Self, EnvError> {
        config.validate()?;
        Ok(Self::from_validated(config))
    }

    /// Gymnasium's `CartPole-v1`.
    pub fn v1() -> Self {
        Self::from_validated(CartPoleConfig::v1())
    }

    /// Gymnasium's `CartPole-v0`.
    pub fn v0() -> Self {
        Self::from_validated(CartPoleConfig::v0())
    }

    fn from_validated(config: CartPoleConfig) -> Self {
        let id = if config == CartPoleConfig::v1() {
            "cartpole-v1"
        } else if config == CartPoleConfig::v0() {
            "cartpole-v0"
        } else {
            // A modified CartPole must not pass for the registered one when a run is replayed.
            "cartpole-custom"
        };
        Self {
            total_mass: config.masspole + config.masscart,
            polemass_length: config.masspole * config.length,
            clock: EpisodeClock::new(config.max_episode_steps),
            config,
            id,
            state: [0.0; STATE_LEN],
            rng: ChaCha8Rng::seed_from_u64(0),
        }
    }

    /// Gymnasium's reset: reseed if asked, then each state variable from U(-0.05, 0.05).
    fn sample_initial_state(&mut self, seed: Option<u64>) {
        if let Some(seed) = seed {
            self.rng = ChaCha8Rng::seed_from_u64(seed);
        }
        for s in &mut self.state {
            *s = self.rng.random_range(-RESET_BOUND..RESET_BOUND);
        }
        self.clock.restart();
    }

    /// The configuration this environment was built from.
    pub fn config(&self) -> &CartPoleConfig {
        &self.config
    }

    /// The physical state `[x, ẋ, θ, θ̇]` in `f64`.
    pub fn state(&self) -> [f64; STATE_LEN] {
        self.state
    }

    #[inline]
    fn write_obs(&self, obs: &mut [f32]) {
        for (o, s) in obs.iter_mut().zip(self.state) {
            *o = s as f32;
        }
    }

    /// Gymnasium's `CartPoleEnv.step` physics; the order of operations is Gymnasium's so that
    /// results agree to the last bit.
    #[inline]
    fn integrate(&mut self, action: usize) -> bool {
        let c = &self.config;
        let [mut x, mut x_dot, mut theta, mut theta_dot] = self.state;
        let force = if action == 1 {
            c.force_mag
        } else {
            -c.force_mag
        };
        let costheta = theta.cos();
        let sintheta = theta.sin();
        let temp =
            (force + self.polemass_length * (theta_dot * theta_dot) * sintheta) / self.total_mass;
        let thetaacc = (c.gravity * sintheta - costheta * temp)
            / (c.length * (4.0 / 3.0 - c.masspole * (costheta * costheta) / self.total_mass));
        let xacc = temp - self.polemass_length * thetaacc * costheta / self.total_mass;
        match c.integrator {
            CartPoleIntegrator::Euler => {
                x += c.tau * x_dot;
                x_dot += c.tau * xacc;
                theta += c.tau * theta_dot;
                theta_dot += c.tau * thetaacc;
            }
            CartPoleIntegrator::SemiImplicitEuler => {
                x_dot += c.tau * xacc;
                x += c.tau * x_dot;
                theta_dot += c.tau * thetaacc;
                theta += c.tau * theta_dot;
            }
        }
        self.state = [x, x_dot, theta, theta_dot];
        x < -c.x_threshold
            || x > c.x_threshold
            || theta < -c.theta_threshold_radians
            || theta > c.theta_threshold_radians
    }
}

impl Env for CartPole {
    fn id(&self) -> &str {
        self.id
    }

    /// `Box([-2x_thr, -inf, -2θ_thr, -inf], [2x_thr, inf, 2θ_thr, inf])`, as in Gymnasium.
    fn observation_space(&self) -> Space {
        let high = [
            (self.config.x_threshold * 2.0) as f32,
            f32::INFINITY,
            (self.config.theta_threshold_radians * 2.0) as f32,
            f32::INFINITY,
        ];
        Space::Box {
            low: high.iter().map(|h| -h).collect(),
            high: high.to_vec(),
        }
    }

    fn action_space(&self) -> Space {
        Space::Discrete { n: NUM_ACTIONS }
    }

    /// Each state variable from U(-0.05, 0.05), as Gymnasium.
    fn reset(&mut self, seed: Option<u64>) -> Obs {
        self.sample_initial_state(seed);
        Obs::Vector(self.state.iter().map(|&s| s as f32).collect())
    }

    fn step(&mut self, action: usize) -> Result<Step, EnvError> {
        step_vector::<STATE_LEN>(self, action)
    }

    /// `state` is `[x, ẋ, θ, θ̇]`, any finite values.
    fn set_state(&mut self, state: &[f64]) -> Result<Obs, EnvError> {
        let any = (f64::NEG_INFINITY, f64::INFINITY);
        check_state(
            self.id,
            state,
            &[any; STATE_LEN],
            "[x, x_dot, theta, theta_dot]",
        )?;
        self.state.copy_from_slice(state);
        self.clock.restart();
        Ok(Obs::Vector(self.state.iter().map(|&s| s as f32).collect()))
    }

    fn max_episode_steps(&self) -> Option<usize> {
        self.clock.max_episode_steps()
    }

    #[inline]
    fn step_into(&mut self, action: usize, obs: &mut [f32]) -> Result<StepInfo, EnvError> {
        check_obs_len(obs, STATE_LEN)?;
        self.clock.check_step(self.id, action, NUM_ACTIONS)?;
        let terminated = self.integrate(action);
        // Gymnasium: +1 for every step including the terminating one; Sutton–Barto: 0 / -1.
        let reward = match (self.config.sutton_barto_reward, terminated) {
            (false, _) => 1.0,
            (true, false) => 0.0,
            (true, true) => -1.0,
        };
        let truncated = self.clock.advance(terminated);
        self.write_obs(obs);
        Ok(StepInfo {
            reward,
            terminated,
            truncated,
        })
    }

    fn reset_into(&mut self, seed: Option<u64>, obs: &mut [f32]) -> Result<(), EnvError> {
        check_obs_len(obs, STATE_LEN)?;
        self.sample_initial_state(seed);
        self.write_obs(obs);
        Ok(())
    }
}

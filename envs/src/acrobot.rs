//! Acrobot-v1, a line-by-line port of Gymnasium's `gymnasium/envs/classic_control/acrobot.py`
//! (Sutton 1996; dynamics from Sutton & Barto's book, integrated with RK4).
//!
//! The state `[θ1, θ2, θ̇1, θ̇2]` is `f64` and every expression keeps Gymnasium's order of
//! operations, because Acrobot is chaotic: a one-ulp difference grows to a visible one within a
//! few hundred steps. For the same reason `x**2` is computed with the C library's `pow`, as
//! NumPy does, and not as `x * x`: the two differ in the last bit for about 0.1% of inputs.
//! Gymnasium's defaults are kept fixed: `book_or_nips = "book"` and `torque_noise_max = 0`.

use std::f64::consts::PI;
use std::hint::black_box;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::env::{check_obs_len, check_state, step_vector, EpisodeClock};
use crate::{Env, EnvError, Obs, Space, Step, StepInfo};

/// Integration time step in seconds (`dt`).
const DT: f64 = 0.2;
/// Length of link 1 in m.
const LINK_LENGTH_1: f64 = 1.0;
/// Mass of link 1 in kg.
const LINK_MASS_1: f64 = 1.0;
/// Mass of link 2 in kg.
const LINK_MASS_2: f64 = 1.0;
/// Position of the centre of mass of link 1, in m.
const LINK_COM_POS_1: f64 = 0.5;
/// Position of the centre of mass of link 2, in m.
const LINK_COM_POS_2: f64 = 0.5;
/// Moment of inertia of both links.
const LINK_MOI: f64 = 1.0;
/// Gravity used in `_dsdt` (m/s²).
const GRAVITY: f64 = 9.8;
/// Bound on |θ̇1| (4π rad/s).
const MAX_VEL_1: f64 = 4.0 * PI;
/// Bound on |θ̇2| (9π rad/s).
const MAX_VEL_2: f64 = 9.0 * PI;
/// Torque applied by each action: -1, 0, +1.
const AVAIL_TORQUE: [f64; 3] = [-1.0, 0.0, 1.0];
/// Length of the physical state.
const STATE_LEN: usize = 4;
/// Length of the observation `[cos θ1, sin θ1, cos θ2, sin θ2, θ̇1, θ̇2]`.
const OBS_LEN: usize = 6;
/// Bound of the uniform reset distribution, U(-0.1, 0.1) for every state variable.
const RESET_BOUND: f64 = 0.1;
/// Gymnasium's time limit for Acrobot-v1.
const MAX_EPISODE_STEPS: usize = 500;

/// `x**2` as NumPy computes it for a float64 scalar: the C library's `pow(x, 2.0)`.
/// `black_box` stops LLVM from rewriting `pow(x, 2.0)` into `x * x`.
#[inline]
fn numpy_square(x: f64) -> f64 {
    x.powf(black_box(2.0))
}

/// Gymnasium's `wrap`: shifts `x` by whole periods into `[m, M]`.
#[inline]
fn wrap(mut x: f64, m: f64, big_m: f64) -> f64 {
    let diff = big_m - m;
    while x > big_m {
        x -= diff;
    }
    while x < m {
        x += diff;
    }
    x
}

/// Gymnasium's `bound`: `min(max(x, m), M)`.
#[inline]
fn bound(x: f64, m: f64, big_m: f64) -> f64 {
    x.max(m).min(big_m)
}

/// Gymnasium's `AcrobotEnv._dsdt` with `book_or_nips = "book"`: the time derivative of
/// `[θ1, θ2, θ̇1, θ̇2]` under torque `a` (the augmented fifth component, whose derivative is 0,
/// is dropped).
#[inline]
fn dsdt(s: [f64; STATE_LEN], a: f64) -> [f64; STATE_LEN] {
    let m1 = LINK_MASS_1;
    let m2 = LINK_MASS_2;
    let l1 = LINK_LENGTH_1;
    let lc1 = LINK_COM_POS_1;
    let lc2 = LINK_COM_POS_2;
    let i1 = LINK_MOI;
    let i2 = LINK_MOI;
    let g = GRAVITY;
    let [theta1, theta2, dtheta1, dtheta2] = s;
    // `lc1**2` etc. are squares of exactly representable constants, so `pow` and `*` agree.
    let d1 =
        m1 * (lc1 * lc1) + m2 * (l1 * l1 + lc2 * lc2 + 2.0 * l1 * lc2 * theta2.cos()) + i1 + i2;
    let d2 = m2 * (lc2 * lc2 + l1 * lc2 * theta2.cos()) + i2;
    let phi2 = m2 * lc2 * g * (theta1 + theta2 - PI / 2.0).cos();
    let phi1 = -m2 * l1 * lc2 * numpy_square(dtheta2) * theta2.sin()
        - 2.0 * m2 * l1 * lc2 * dtheta2 * dtheta1 * theta2.sin()
        + (m1 * lc1 + m2 * l1) * g * (theta1 - PI / 2.0).cos()
        + phi2;
    // "book" dynamics (consistent with the Java implementation and Sutton & Barto).
    let ddtheta2 =
        (a + d2 / d1 * phi1 - m2 * l1 * lc2 * numpy_square(dtheta1) * theta2.sin() - phi2)
            / (m2 * (lc2 * lc2) + i2 - numpy_square(d2) / d1);
    let ddtheta1 = -(d2 * ddtheta2 + phi1) / d1;
    [dtheta1, dtheta2, ddtheta1, ddtheta2]
}

/// Gymnasium's `rk4` over `t = [0, dt]`: one classic Runge–Kutta step.
#[inline]
fn rk4(y0: [f64; STATE_LEN], a: f64, dt: f64) -> [f64; STATE_LEN] {
    let dt2 = dt / 2.0;
    let shifted = |k: [f64; STATE_LEN], h: f64| std::array::from_fn(|i| y0[i] + h * k[i]);
    let k1 = dsdt(y0, a);
    let k2 = dsdt(shifted(k1, dt2), a);
    let k3 = dsdt(shifted(k2, dt2), a);
    let k4 = dsdt(shifted(k3, dt), a);
    let dt6 = dt / 6.0;
    std::array::from_fn(|i| y0[i] + dt6 * (k1[i] + 2.0 * k2[i] + 2.0 * k3[i] + k4[i]))
}

/// The two-link underactuated swing-up task, identical to Gymnasium's `AcrobotEnv` wrapped in
/// `TimeLimit(500)`.
///
/// Actions: torque -1, 0, +1 on the joint between the links. Observation:
/// `[cos θ1, sin θ1, cos θ2, sin θ2, θ̇1, θ̇2]` as `f32`. Reward -1 per step and 0 on the
/// terminating step; terminates when the tip rises above the bar, `-cos θ1 - cos(θ1 + θ2) > 1`.
#[derive(Debug, Clone)]
pub struct Acrobot {
    state: [f64; STATE_LEN],
    clock: EpisodeClock,
    rng: ChaCha8Rng,
}

impl Default for Acrobot {
    fn default() -> Self {
        Self::new()
    }
}

impl Acrobot {
    /// Gymnasium's `Acrobot-v1` (500-step time limit).
    pub fn new() -> Self {
        Self {
            state: [0.0; STATE_LEN],
            clock: EpisodeClock::new(Some(MAX_EPISODE_STEPS)),
            rng: ChaCha8Rng::seed_from_u64(0),
        }
    }

    /// The physical state `[θ1, θ2, θ̇1, θ̇2]` in `f64`.
    pub fn state(&self) -> [f64; STATE_LEN] {
        self.state
    }

    /// Gymnasium's `_get_ob`: trigonometric features computed in `f64`, then cast to `f32`.
    #[inline]
    fn observation(&self) -> [f32; OBS_LEN] {
        let [theta1, theta2, dtheta1, dtheta2] = self.state;
        [
            theta1.cos() as f32,
            theta1.sin() as f32,
            theta2.cos() as f32,
            theta2.sin() as f32,
            dtheta1 as f32,
            dtheta2 as f32,
        ]
    }

    /// Gymnasium's `_terminal`.
    #[inline]
    fn is_terminal(&self) -> bool {
        let [theta1, theta2, ..] = self.state;
        -theta1.cos() - (theta2 + theta1).cos() > 1.0
    }

    /// Gymnasium's reset: reseed if asked, then U(-0.1, 0.1) for each variable, rounded to
    /// `f32` because Gymnasium stores the reset state with `.astype(np.float32)`.
    fn sample_initial_state(&mut self, seed: Option<u64>) {
        if let Some(seed) = seed {
            self.rng = ChaCha8Rng::seed_from_u64(seed);
        }
        for s in &mut self.state {
            *s = f64::from(self.rng.random_range(-RESET_BOUND..RESET_BOUND) as f32);
        }
        self.clock.restart();
    }
}

impl Env for Acrobot {
    fn id(&self) -> &str {
        "acrobot-v1"
    }

    /// `Box([-1, -1, -1, -1, -4π, -9π], [1, 1, 1, 1, 4π, 9π])`, as in Gymnasium.
    fn observation_space(&self) -> Space {
        let high = [1.0, 1.0, 1.0, 1.0, MAX_VEL_1 as f32, MAX_VEL_2 as f32];
        Space::Box {
            low: high.iter().map(|h| -h).collect(),
            high: high.to_vec(),
        }
    }

    fn action_space(&self) -> Space {
        Space::Discrete {
            n: AVAIL_TORQUE.len(),
        }
    }

    fn reset(&mut self, seed: Option<u64>) -> Obs {
        self.sample_initial_state(seed);
        Obs::Vector(self.observation().to_vec())
    }

    fn step(&mut self, action: usize) -> Result<Step, EnvError> {
        step_vector::<OBS_LEN>(self, action)
    }

    /// `state` is `[θ1, θ2, θ̇1, θ̇2]` within the set Gymnasium can reach: angles in [-π, π],
    /// |θ̇1| ≤ 4π, |θ̇2| ≤ 9π. Outside it Gymnasium's `wrap` can loop for ever and its `bound`
    /// propagates NaN, so such states are refused rather than imitated.
    fn set_state(&mut self, state: &[f64]) -> Result<Obs, EnvError> {
        check_state(
            self.id(),
            state,
            &[
                (-PI, PI),
                (-PI, PI),
                (-MAX_VEL_1, MAX_VEL_1),
                (-MAX_VEL_2, MAX_VEL_2),
            ],
            "[theta1, theta2, dtheta1, dtheta2] with angles in [-pi, pi], \
             |dtheta1| <= 4*pi and |dtheta2| <= 9*pi",
        )?;
        self.state.copy_from_slice(state);
        self.clock.restart();
        Ok(Obs::Vector(self.observation().to_vec()))
    }

    fn max_episode_steps(&self) -> Option<usize> {
        self.clock.max_episode_steps()
    }

    fn step_into(&mut self, action: usize, obs: &mut [f32]) -> Result<StepInfo, EnvError> {
        check_obs_len(obs, OBS_LEN)?;
        self.clock
            .check_step("acrobot-v1", action, AVAIL_TORQUE.len())?;
        let torque = AVAIL_TORQUE[action];
        let [theta1, theta2, dtheta1, dtheta2] = rk4(self.state, torque, DT);
        self.state = [
            wrap(theta1, -PI, PI),
            wrap(theta2, -PI, PI),
            bound(dtheta1, -MAX_VEL_1, MAX_VEL_1),
            bound(dtheta2, -MAX_VEL_2, MAX_VEL_2),
        ];
        let terminated = self.is_terminal();
        let reward = if terminated { 0.0 } else { -1.0 };
        let truncated = self.clock.advance(terminated);
        obs.copy_from_slice(&self.observation());
        Ok(StepInfo {
            reward,
            terminated,
            truncated,
        })
    }

    fn reset_into(&mut self, seed: Option<u64>, obs: &mut [f32]) -> Result<(), EnvError> {
        check_obs_len(obs, OBS_LEN)?;
        self.sample_initial_state(seed);
        obs.copy_from_slice(&self.observation());
        Ok(())
    }
}

//! Reinforcement-learning environments in pure Rust, with Gymnasium's dynamics.
//!
//! - [`Env`]: `reset(seed) -> Obs`, `step(action) -> Step { obs, reward, terminated, truncated }`,
//!   spaces, `set_state` for replay, and an allocation-free `step_into` for hot loops.
//! - [`CartPole`] (v1 and v0, every constant configurable), [`Acrobot`] (v1) and
//!   [`MountainCar`] (v0): ports of Gymnasium 1.x's classic-control environments with the
//!   same order of `f64` operations, so trajectories agree with Gymnasium to `f32` precision
//!   (checked against recorded Gymnasium trajectories in `tests/gymnasium_parity.rs`).
//! - [`make`] and [`registry`]: environments by name.
//! - [`VecEnv`]: N environments in lockstep with auto-reset, `final_obs` and episode returns.
//! - [`room`]: the active-perception room task ([`room::RoomEnv`], registered as `room-s1` and
//!   `room-s2`): 120 procedural rooms rendered by a ray caster into RGB, depth and the
//!   target's bounding box, a pure-Rust stand-in for the paper's AI2THOR task.
//! - `gymnasium` (cargo feature `gymnasium`): any Gymnasium environment, e.g.
//!   `make("gymnasium:ALE/AirRaid-v5?obs_type=ram")`, run in a Python worker process
//!   (`GymnasiumEnv`; the module's docs give the naming syntax and the protocol).
//! - [`python`]: which Python interpreter the Gymnasium bridge (and its benchmark) starts.
//! - [`throughput`]: environment steps per second under a uniformly random policy
//!   ([`throughput::RandomActions`]), for `cargo xtask bench`, the criterion benches and the
//!   suites' random baselines.
//!
//! Every public item has one path: the environments, [`Env`] and [`VecEnv`] at the root; the
//! room task, the Gymnasium bridge, the interpreter choice and the throughput helpers in their
//! public modules ([`room`], `gymnasium`, [`python`], [`throughput`]), not also at the root.
//!
//! Nothing here panics on bad input: stepping a finished episode, an out-of-range action or an
//! unknown name returns an [`EnvError`] that lists what is valid. Reset distributions are
//! Gymnasium's, but random numbers come from ChaCha8 rather than NumPy's PCG64, so the same
//! seed gives different (equally distributed) start states than Gymnasium.
//!
//! ```
//! use privrl_envs::{make, CartPoleConfig, Env, EnvError, VecEnv};
//!
//! # fn main() -> Result<(), EnvError> {
//! let mut env = make("CartPole-v1")?;
//! let obs = env.reset(Some(0));
//! assert_eq!(obs.flat_len(), 4);
//! let step = env.step(1)?;
//! assert_eq!(step.reward, 1.0);
//! assert!(env.step(2).is_err()); // CartPole has actions 0 and 1 only
//!
//! // The PGC experiments change gravity.
//! let mut light = CartPoleConfig::v1().with_gravity(9.7).build()?;
//! light.reset(Some(0));
//!
//! // Eight copies, auto-reset, episode returns reported as episodes end.
//! let mut envs = VecEnv::make("acrobot-v1", 8)?;
//! envs.reset(0);
//! let step = envs.step(&[0; 8])?;
//! assert_eq!(step.obs.len(), 8);
//! # Ok(())
//! # }
//! ```

#![warn(missing_docs)]
#![warn(unreachable_pub)]

mod acrobot;
mod cartpole;
mod env;
mod error;
#[cfg(feature = "gymnasium")]
pub mod gymnasium;
mod mountain_car;
mod obs;
pub mod python;
mod registry;
pub mod room;
mod space;
pub mod throughput;
mod vec_env;

pub use acrobot::Acrobot;
pub use cartpole::{CartPole, CartPoleConfig, CartPoleIntegrator};
pub use env::{Env, Step, StepInfo};
pub use error::{EnvError, EpisodeEnd};
pub use mountain_car::MountainCar;
pub use obs::{Image, MultimodalObs, Obs};
pub use registry::{env_names, make, registry, rendered_env_names, EnvSpec};
pub use space::Space;
pub use vec_env::{EpisodeStats, FlatVecStep, VecEnv, VecStep};

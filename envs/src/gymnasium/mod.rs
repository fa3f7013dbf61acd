//! Every Gymnasium environment from Rust: [`GymnasiumEnv`] runs one in a Python worker process
//! (cargo feature `gymnasium`).
//!
//! # Naming an environment
//!
//! [`crate::make`] takes `gymnasium:<Gymnasium id>`, optionally followed by keyword arguments
//! for `gymnasium.make` in query-string form:
//!
//! ```text
//! gymnasium:CartPole-v1
//! gymnasium:ALE/AirRaid-v5?obs_type=ram
//! gymnasium:AirRaid-ram-v0                      (old Gym id: AirRaid-v0 with obs_type="ram")
//! gymnasium:FrozenLake-v1?is_slippery=false&map_name="4x4"
//! gymnasium:CartPole-v1?max_episode_steps=200&sutton_barto_reward=true
//! gymnasium:my_package.envs:MyEnv-v0             (Gymnasium imports `my_package.envs` first)
//! ```
//!
//! Values are typed as Python reads them: `true`/`false` (or `True`/`False`) are bools,
//! `none`/`None` is `None`, integers are `int`, other numbers (`0.25`, `1e-3`, `inf`) are
//! `float`, and anything else is a `str`. Quote a value (`"4x4"`, `'1'`) to force a string;
//! inside quotes `&` and `=` are plain characters. After the keyword arguments, `#` starts
//! privrl's own options, applied on the Rust side: `#obs_scale=1/255` multiplies every
//! observation value and the Box bounds by a factor (a number or a fraction), as Atari RAM
//! bytes are usually scaled before a network sees them
//! (`gymnasium:ALE/AirRaid-v5?obs_type=ram#obs_scale=1/255`). The id itself is case-sensitive, as in
//! Gymnasium; the `gymnasium:` prefix is not. [`GymnasiumConfig`] builds the same from Rust,
//! and [`GymnasiumEnv::id`] gives back the canonical name, which `make` takes again.
//!
//! Atari ids (`ALE/...`) need ale-py: the worker registers its environments on demand. Old
//! Gym's RAM ids (`<Game>-ram-v0`, `<Game>-ram-v4`, `<Game>-ramNoFrameskip-v4`), such as the
//! kickstarting paper's `AirRaid-ram-v0`, are no longer registered by ale-py ≥ 0.9; the worker
//! maps them to the same environment, `<Game>-v0` (etc.) with `obs_type="ram"`, which keeps
//! v0's sticky actions (0.25) and random frame skip (2 to 4). `ALE/AirRaid-v5?obs_type=ram` is
//! the modern form (frame skip 4, sticky actions 0.25).
//!
//! # Spaces
//!
//! - Observations: a `Box` of any shape and dtype is flattened in C order and cast to `f32`
//!   (Atari RAM: 128 values in 0..=255); a `Discrete(n, start)` observation becomes a one-hot
//!   vector of length `n` at index `obs - start`, which is what `observation_space().flat_dim()`
//!   promises and what `gymnasium.spaces.flatten` does. Other spaces are refused with
//!   [`EnvError::UnsupportedSpace`].
//! - Actions: `Discrete(n, start)` only. Rust's actions are always `0..n`; the bridge adds
//!   `start`, so action `a` is Gymnasium's `start + a`.
//!
//! # Python
//!
//! The interpreter is `PRIVRL_PYTHON` if set, else `.venv/bin/python` at the workspace root
//! if it exists (`scripts/test.sh` creates it), else `python3` from `PATH`
//! ([`default_python`](crate::python::default_python)). It needs `gymnasium` ([`GYMNASIUM_REQUIREMENT`], the version tested)
//! and, for Atari, `ale-py` ([`ALE_PY_REQUIREMENT`]; the ROMs ship in its wheel). A missing
//! interpreter or package is an error that gives the exact `pip install` to run. The worker
//! script is compiled into the library, so it works from any working directory.
//!
//! # Protocol and failures
//!
//! Requests and replies are little-endian binary frames on the worker's stdin and stdout
//! (`u8 tag | u32 length | payload`; see `protocol.rs` and the worker's docstring): `make`,
//! `reset(seed)`, `step(action)` → `f64 reward | u8 flags | f32 observation`, and
//! `set_state`. Every read has a timeout ([`GymnasiumConfig::make_timeout`], 30 s, covers
//! start-up and `make`; [`GymnasiumConfig::step_timeout`], 10 s, each reset, step or
//! set_state). A worker that dies or misses a deadline gives [`EnvError::WorkerDied`] or
//! [`EnvError::WorkerTimeout`] with the tail of its stderr, never a hang; it is killed and
//! the environment stays failed (every later call returns the same error). An exception in
//! Gymnasium is [`EnvError::GymnasiumException`], and the worker lives on. Dropping the
//! environment kills its worker.
//!
//! [`Env::reset`] cannot return an error; when a reset fails, it returns an all-zero
//! observation and the next `step` returns the failure. [`GymnasiumEnv::try_reset`] and
//! [`Env::reset_into`] return it at once.
//!
//! # Vectorised
//!
//! `VecEnv::make("gymnasium:...", n)` works and runs one worker per environment;
//! [`GymnasiumConfig::build_vec`] does the same but starts the `n` workers concurrently, so
//! Python's start-up (about 0.3 s) is paid once rather than `n` times. A `VecEnv` of bridged
//! environments sends every worker its step before it reads any reply
//! ([`Env::send_step`]), so the workers step at once, with no thread of
//! ours per worker, and a step of `n` workers costs about one round trip rather than `n`; the
//! results are the same as stepping them one by one.
//!
//! ```no_run
//! use privrl_envs::{make, Env};
//!
//! # fn main() -> Result<(), privrl_envs::EnvError> {
//! let mut env = make("gymnasium:ALE/AirRaid-v5?obs_type=ram")?;
//! let obs = env.reset(Some(0));
//! assert_eq!(obs.flat_len(), 128);
//! let step = env.step(1)?;
//! # Ok(())
//! # }
//! ```

mod config;
mod env;
mod protocol;
mod worker;

use std::time::Duration;

pub use config::{GymnasiumConfig, KwargValue};
pub use env::GymnasiumEnv;
pub use worker::SPIN_VARIABLE;

// The module docs link to these.
#[cfg(doc)]
use crate::{Env, EnvError};

/// The Gymnasium the bridge is tested with (and `scripts/test.sh` installs).
pub const GYMNASIUM_REQUIREMENT: &str = "gymnasium==1.4.0";
/// The ale-py the bridge is tested with, for the Atari environments; its wheel has the ROMs.
pub const ALE_PY_REQUIREMENT: &str = "ale-py==0.12.1";

/// The prefix that names a bridged environment in [`crate::make`].
const GYMNASIUM_PREFIX: &str = "gymnasium:";

/// Default limit on starting the worker and answering `make`.
const DEFAULT_MAKE_TIMEOUT: Duration = Duration::from_secs(30);
/// Default limit on answering one reset, step or set_state.
const DEFAULT_STEP_TIMEOUT: Duration = Duration::from_secs(10);

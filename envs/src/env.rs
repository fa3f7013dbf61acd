//! The [`Env`] trait and the episode bookkeeping that every environment shares.

use serde::{Deserialize, Serialize};

use crate::{EnvError, EpisodeEnd, Obs, Space};

/// The result of one step, as Gymnasium's `step` returns it (minus `info`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Step {
    /// Observation after the step.
    pub obs: Obs,
    /// Reward for the transition.
    pub reward: f64,
    /// The MDP reached a terminal state: do not bootstrap from `obs`.
    pub terminated: bool,
    /// The time limit cut the episode short: `obs` is not terminal, bootstrap from it.
    pub truncated: bool,
}

impl Step {
    /// A step whose observation is the flat vector `obs`, with `info`'s reward and flags.
    pub fn from_flat(obs: Vec<f32>, info: StepInfo) -> Self {
        Self {
            obs: Obs::Vector(obs),
            reward: info.reward,
            terminated: info.terminated,
            truncated: info.truncated,
        }
    }

    /// The episode is over (terminated or truncated); the next call must be `reset`.
    pub fn done(&self) -> bool {
        self.terminated || self.truncated
    }

    /// The scalar part of the step, without the observation.
    pub fn info(&self) -> StepInfo {
        StepInfo {
            reward: self.reward,
            terminated: self.terminated,
            truncated: self.truncated,
        }
    }
}

/// A [`Step`] without its observation: what [`Env::step_into`] returns after writing the
/// observation into the caller's buffer.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct StepInfo {
    /// Reward for the transition.
    pub reward: f64,
    /// The MDP reached a terminal state.
    pub terminated: bool,
    /// The time limit cut the episode short.
    pub truncated: bool,
}

impl StepInfo {
    /// The episode is over (terminated or truncated).
    pub fn done(&self) -> bool {
        self.terminated || self.truncated
    }
}

/// A reinforcement-learning environment with discrete actions, after Gymnasium's `Env` plus
/// its `TimeLimit` wrapper: truncation at `max_episode_steps` is part of the environment here.
///
/// Implementors must provide the required methods. [`Env::step_into`] and [`Env::reset_into`]
/// have default implementations built on `step` and `reset`; environments on a hot path
/// override them to write into the caller's buffer without allocating, and then build `step`
/// on `step_into`.
pub trait Env: Send + Sync {
    /// Identifier, e.g. `cartpole-v1` (the name [`crate::make`] takes).
    fn id(&self) -> &str;

    /// The space observations live in.
    fn observation_space(&self) -> Space;

    /// The action space; always [`Space::Discrete`], because actions are indices.
    fn action_space(&self) -> Space;

    /// Starts a new episode from the environment's reset distribution and returns the first
    /// observation. `Some(seed)` reseeds the environment's generator (ChaCha8 from `seed`);
    /// `None` continues its current stream, as Gymnasium's `reset(seed=None)` does. An
    /// environment never seeded starts from seed 0, so runs are reproducible.
    fn reset(&mut self, seed: Option<u64>) -> Obs;

    /// Applies `action` for one time step.
    ///
    /// Errors: [`EnvError::InvalidAction`] for an action outside the action space,
    /// [`EnvError::EpisodeFinished`] once the episode has terminated or been truncated, and
    /// [`EnvError::ResetRequired`] before the first reset.
    fn step(&mut self, action: usize) -> Result<Step, EnvError>;

    /// Puts the environment in a given physical state (Gymnasium's `env.unwrapped.state`),
    /// starts a new episode there (the step counter restarts at 0) and returns its observation.
    /// Used to replay recorded trajectories and to check parity with Gymnasium.
    fn set_state(&mut self, state: &[f64]) -> Result<Obs, EnvError>;

    /// The time limit after which episodes are truncated, if any.
    fn max_episode_steps(&self) -> Option<usize>;

    /// Like [`Env::step`], but writes the observation into `obs` (flattened as
    /// [`Obs::write_flat`] does) instead of allocating one. `obs` must have
    /// `observation_space().flat_dim()` values, else [`EnvError::ObsBufferLength`] and the
    /// environment is not stepped.
    fn step_into(&mut self, action: usize, obs: &mut [f32]) -> Result<StepInfo, EnvError> {
        check_obs_len(obs, self.observation_space().flat_dim())?;
        let step = self.step(action)?;
        step.obs.write_flat(obs)?;
        Ok(step.info())
    }

    /// Like [`Env::reset`], but writes the first observation into `obs`; same length rule as
    /// [`Env::step_into`].
    fn reset_into(&mut self, seed: Option<u64>, obs: &mut [f32]) -> Result<(), EnvError> {
        check_obs_len(obs, self.observation_space().flat_dim())?;
        self.reset(seed).write_flat(obs)
    }

    /// Starts a step without waiting for its outcome, for an environment that runs in another
    /// process (the Gymnasium bridge's worker), so that a [`crate::VecEnv`] can send all its
    /// workers their steps before it waits for any: they then step at once, with no thread of
    /// ours per worker. Returns `false` for an environment that steps in process (the
    /// default, which does nothing): the caller steps it with [`Env::step_into`] instead. After
    /// `true`, the outcome must be collected with [`Env::receive_step_into`] before anything
    /// else is asked of the environment. Same errors as [`Env::step`].
    fn send_step(&mut self, action: usize) -> Result<bool, EnvError> {
        let _ = action;
        Ok(false)
    }

    /// The outcome of the step that [`Env::send_step`] started, written into `obs` as
    /// [`Env::step_into`] writes it (environments that send steps have flat observations).
    /// Without a step sent: [`EnvError::WorkerProtocol`].
    fn receive_step_into(&mut self, obs: &mut [f32]) -> Result<StepInfo, EnvError> {
        let _ = obs;
        Err(EnvError::WorkerProtocol {
            env: self.id().to_string(),
            during: "step".into(),
            detail: "a step's outcome was asked for, but no step was sent".into(),
        })
    }
}

/// Lets `Box<dyn Env>` (what [`crate::make`] returns) be used wherever an `E: Env` is expected,
/// for example in `VecEnv<Box<dyn Env>>`.
impl<E: Env + ?Sized> Env for Box<E> {
    fn id(&self) -> &str {
        (**self).id()
    }
    fn observation_space(&self) -> Space {
        (**self).observation_space()
    }
    fn action_space(&self) -> Space {
        (**self).action_space()
    }
    fn reset(&mut self, seed: Option<u64>) -> Obs {
        (**self).reset(seed)
    }
    fn step(&mut self, action: usize) -> Result<Step, EnvError> {
        (**self).step(action)
    }
    fn set_state(&mut self, state: &[f64]) -> Result<Obs, EnvError> {
        (**self).set_state(state)
    }
    fn max_episode_steps(&self) -> Option<usize> {
        (**self).max_episode_steps()
    }
    fn step_into(&mut self, action: usize, obs: &mut [f32]) -> Result<StepInfo, EnvError> {
        (**self).step_into(action, obs)
    }
    fn reset_into(&mut self, seed: Option<u64>, obs: &mut [f32]) -> Result<(), EnvError> {
        (**self).reset_into(seed, obs)
    }
    fn send_step(&mut self, action: usize) -> Result<bool, EnvError> {
        (**self).send_step(action)
    }
    fn receive_step_into(&mut self, obs: &mut [f32]) -> Result<StepInfo, EnvError> {
        (**self).receive_step_into(obs)
    }
}

/// Shows the id, so that `Box<dyn Env>` (and `Result`s and `VecEnv`s holding one) can be
/// printed and unwrapped in tests.
impl std::fmt::Debug for dyn Env {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Env")
            .field("id", &self.id())
            .finish_non_exhaustive()
    }
}

/// Returns [`EnvError::ObsBufferLength`] unless `obs` has exactly `expected` values.
/// `Env::step` for an environment with an `N`-value vector observation, built on its
/// allocation-free `step_into`.
pub(crate) fn step_vector<const N: usize>(
    env: &mut impl Env,
    action: usize,
) -> Result<Step, EnvError> {
    let mut obs = [0.0; N];
    let info = env.step_into(action, &mut obs)?;
    Ok(Step::from_flat(obs.to_vec(), info))
}

pub(crate) fn check_obs_len(obs: &[f32], expected: usize) -> Result<(), EnvError> {
    if obs.len() == expected {
        Ok(())
    } else {
        Err(EnvError::ObsBufferLength {
            expected,
            got: obs.len(),
        })
    }
}

/// Where an episode stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Never reset: stepping is an error.
    NotStarted,
    /// Stepping is allowed.
    Running,
    /// Terminated or truncated: stepping is an error until the next reset.
    Finished(EpisodeEnd),
}

/// The part of Gymnasium's `TimeLimit` and `OrderEnforcing` wrappers that every environment
/// shares: counts steps, truncates at `max_episode_steps`, and refuses steps before a reset or
/// after the episode ended.
#[derive(Debug, Clone)]
pub(crate) struct EpisodeClock {
    max_episode_steps: Option<usize>,
    elapsed_steps: usize,
    phase: Phase,
}

impl EpisodeClock {
    pub(crate) fn new(max_episode_steps: Option<usize>) -> Self {
        Self {
            max_episode_steps,
            elapsed_steps: 0,
            phase: Phase::NotStarted,
        }
    }

    pub(crate) fn max_episode_steps(&self) -> Option<usize> {
        self.max_episode_steps
    }

    /// Starts a new episode (after `reset` or `set_state`).
    pub(crate) fn restart(&mut self) {
        self.elapsed_steps = 0;
        self.phase = Phase::Running;
    }

    /// Errors unless a step is allowed now, and checks the action against `num_actions`.
    #[inline]
    pub(crate) fn check_step(
        &self,
        env: &str,
        action: usize,
        num_actions: usize,
    ) -> Result<(), EnvError> {
        match self.phase {
            Phase::Running => {}
            Phase::NotStarted => {
                return Err(EnvError::ResetRequired {
                    env: env.to_string(),
                })
            }
            Phase::Finished(reason) => {
                return Err(EnvError::EpisodeFinished {
                    env: env.to_string(),
                    reason,
                    steps: self.elapsed_steps,
                })
            }
        }
        if action >= num_actions {
            return Err(EnvError::InvalidAction {
                env: env.to_string(),
                action,
                n: num_actions,
            });
        }
        Ok(())
    }

    /// Records one step and returns `truncated`, as `TimeLimit` computes it
    /// (`elapsed_steps >= max_episode_steps`, independent of `terminated`).
    #[inline]
    pub(crate) fn advance(&mut self, terminated: bool) -> bool {
        self.elapsed_steps += 1;
        let truncated = self
            .max_episode_steps
            .is_some_and(|max| self.elapsed_steps >= max);
        if terminated {
            self.phase = Phase::Finished(EpisodeEnd::Terminated);
        } else if truncated {
            self.phase = Phase::Finished(EpisodeEnd::Truncated);
        }
        truncated
    }
}

/// Checks a state given to `set_state`: one finite value per `(low, high)` pair in `bounds`,
/// each within its pair. `layout` names the variables and their ranges for the error message.
pub(crate) fn check_state(
    env: &str,
    state: &[f64],
    bounds: &[(f64, f64)],
    layout: &str,
) -> Result<(), EnvError> {
    let valid = state.len() == bounds.len()
        && state
            .iter()
            .zip(bounds)
            .all(|(v, (low, high))| v.is_finite() && low <= v && v <= high);
    if valid {
        Ok(())
    } else {
        Err(EnvError::InvalidState {
            env: env.to_string(),
            state: state.to_vec(),
            expected: format!("{} finite values {layout}", bounds.len()),
        })
    }
}

/// Checks that a configuration value is finite and strictly positive.
pub(crate) fn check_positive(name: &str, value: f64) -> Result<(), EnvError> {
    if value.is_finite() && value > 0.0 {
        Ok(())
    } else {
        Err(EnvError::invalid_parameter(name, value, "> 0 and finite"))
    }
}

//! [`VecEnv`]: N copies of an environment stepped together, with auto-reset and episode
//! statistics, after Gymnasium's `SyncVectorEnv` in `SAME_STEP` autoreset mode.

use serde::Serialize;

use crate::{Env, EnvError, Obs, Space, Step};

/// Return and length of one finished episode, reported by the step that ended it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct EpisodeStats {
    /// Undiscounted sum of rewards.
    pub episode_return: f64,
    /// Number of steps.
    pub length: usize,
    /// The episode ended in a terminal state.
    pub terminated: bool,
    /// The time limit cut the episode short.
    pub truncated: bool,
}

/// The result of [`VecEnv::step`]: one entry per environment.
#[derive(Debug, Clone, PartialEq)]
pub struct VecStep {
    /// Observation to act on next. Where an episode ended this is already the first
    /// observation of the next episode; the last one of the old episode is in `final_obs`.
    pub obs: Vec<Obs>,
    /// Rewards of this step.
    pub rewards: Vec<f64>,
    /// Episode reached a terminal state (do not bootstrap).
    pub terminated: Vec<bool>,
    /// Episode hit the time limit (bootstrap from `final_obs`).
    pub truncated: Vec<bool>,
    /// `Some(last observation of the finished episode)` where an episode ended, else `None`.
    pub final_obs: Vec<Option<Obs>>,
    /// `Some(stats)` where an episode ended, else `None`.
    pub episodes: Vec<Option<EpisodeStats>>,
}

impl VecStep {
    /// Whether environment `i` finished an episode this step.
    pub fn done(&self, i: usize) -> bool {
        self.terminated[i] || self.truncated[i]
    }

    /// The episodes that finished this step.
    pub fn completed_episodes(&self) -> impl Iterator<Item = &EpisodeStats> {
        self.episodes.iter().flatten()
    }
}

/// A reusable, allocation-free form of [`VecStep`] for environments whose observations are
/// flat vectors: row `i` of [`FlatVecStep::obs`] is environment `i`'s observation, so the
/// buffer is ready to become a `[num_envs, obs_len]` tensor. Make one with
/// [`VecEnv::flat_step_buffer`]; the buffers keep their sizes, so they are read through methods.
#[derive(Debug, Clone, PartialEq)]
pub struct FlatVecStep {
    obs_len: usize,
    obs: Vec<f32>,
    rewards: Vec<f64>,
    terminated: Vec<bool>,
    truncated: Vec<bool>,
    final_obs: Vec<f32>,
    episodes: Vec<Option<EpisodeStats>>,
}

impl FlatVecStep {
    /// Buffers for `num_envs` environments with observations of `obs_len` values.
    fn new(num_envs: usize, obs_len: usize) -> Self {
        Self {
            obs_len,
            obs: vec![0.0; num_envs * obs_len],
            rewards: vec![0.0; num_envs],
            terminated: vec![false; num_envs],
            truncated: vec![false; num_envs],
            final_obs: vec![0.0; num_envs * obs_len],
            episodes: vec![None; num_envs],
        }
    }

    /// Number of environments the buffers hold.
    pub fn num_envs(&self) -> usize {
        self.rewards.len()
    }

    /// Values per observation.
    pub fn obs_len(&self) -> usize {
        self.obs_len
    }

    /// Observations to act on next, row-major, `num_envs * obs_len` values. Where an episode
    /// ended, the row already holds the first observation of the next episode.
    pub fn obs(&self) -> &[f32] {
        &self.obs
    }

    /// Mutable access to the observation rows, e.g. to write the output of
    /// [`VecEnv::reset_flat`] into the same buffer.
    pub fn obs_mut(&mut self) -> &mut [f32] {
        &mut self.obs
    }

    /// Rewards of this step.
    pub fn rewards(&self) -> &[f64] {
        &self.rewards
    }

    /// Which episodes reached a terminal state this step.
    pub fn terminated(&self) -> &[bool] {
        &self.terminated
    }

    /// Which episodes hit the time limit this step.
    pub fn truncated(&self) -> &[bool] {
        &self.truncated
    }

    /// Per-environment statistics of episodes that ended this step.
    pub fn episodes(&self) -> &[Option<EpisodeStats>] {
        &self.episodes
    }

    /// Whether environment `i` finished an episode this step.
    pub fn done(&self, i: usize) -> bool {
        self.terminated[i] || self.truncated[i]
    }

    /// Next observation of environment `i`.
    pub fn obs_row(&self, i: usize) -> &[f32] {
        &self.obs[i * self.obs_len..(i + 1) * self.obs_len]
    }

    /// Final observation of environment `i`, if its episode ended this step.
    pub fn final_obs_row(&self, i: usize) -> Option<&[f32]> {
        self.done(i)
            .then(|| &self.final_obs[i * self.obs_len..(i + 1) * self.obs_len])
    }

    /// The episodes that finished this step.
    pub fn completed_episodes(&self) -> impl Iterator<Item = &EpisodeStats> {
        self.episodes.iter().flatten()
    }
}

/// Steps `N` environments in lockstep. An environment whose episode ends is reset at once
/// (continuing its own random stream), its last observation is returned as `final_obs`, and
/// the finished episode's return and length are reported, so a rollout never stops.
#[derive(Debug)]
pub struct VecEnv<E: Env = Box<dyn Env>> {
    envs: Vec<E>,
    observation_space: Space,
    action_space: Space,
    num_actions: usize,
    obs_len: usize,
    running_returns: Vec<f64>,
    running_lengths: Vec<usize>,
    started: bool,
    /// Which environments [`Env::send_step`] started in the current step.
    sent: Vec<bool>,
}

impl VecEnv<Box<dyn Env>> {
    /// `num_envs` copies of the registered environment `name` (see [`crate::make`]).
    pub fn make(name: &str, num_envs: usize) -> Result<Self, EnvError> {
        let envs = (0..num_envs)
            .map(|_| crate::make(name))
            .collect::<Result<Vec<_>, _>>()?;
        Self::new(envs)
    }
}

impl<E: Env> VecEnv<E> {
    /// Wraps `envs`, which must be non-empty and share observation and action spaces
    /// (else [`EnvError::InvalidParameter`] or [`EnvError::MismatchedEnvs`]). Call
    /// [`VecEnv::reset`] before the first step.
    pub fn new(envs: Vec<E>) -> Result<Self, EnvError> {
        let Some(first) = envs.first() else {
            return Err(EnvError::invalid_parameter("num_envs", 0.0, ">= 1"));
        };
        let observation_space = first.observation_space();
        let action_space = first.action_space();
        let Some(num_actions) = action_space.discrete_n() else {
            return Err(EnvError::MismatchedEnvs {
                index: 0,
                detail: format!("action space {action_space:?} is not Discrete"),
            });
        };
        for (index, env) in envs.iter().enumerate().skip(1) {
            let (obs_space, act_space) = (env.observation_space(), env.action_space());
            if obs_space != observation_space || act_space != action_space {
                return Err(EnvError::MismatchedEnvs {
                    index,
                    detail: format!(
                        "{} has spaces {obs_space:?} / {act_space:?}, {} has {observation_space:?} / {action_space:?}",
                        env.id(),
                        first.id()
                    ),
                });
            }
        }
        let num_envs = envs.len();
        Ok(Self {
            obs_len: observation_space.flat_dim(),
            envs,
            observation_space,
            action_space,
            num_actions,
            running_returns: vec![0.0; num_envs],
            running_lengths: vec![0; num_envs],
            started: false,
            sent: vec![false; num_envs],
        })
    }

    /// Number of environments.
    pub fn num_envs(&self) -> usize {
        self.envs.len()
    }

    /// Observation space of each environment.
    pub fn observation_space(&self) -> &Space {
        &self.observation_space
    }

    /// Action space of each environment.
    pub fn action_space(&self) -> &Space {
        &self.action_space
    }

    /// Values per flattened observation.
    pub fn obs_len(&self) -> usize {
        self.obs_len
    }

    /// The wrapped environments (read-only, so episode statistics stay consistent).
    pub fn envs(&self) -> &[E] {
        &self.envs
    }

    /// Return so far of each environment's current episode.
    pub fn running_returns(&self) -> &[f64] {
        &self.running_returns
    }

    /// Length so far of each environment's current episode.
    pub fn running_lengths(&self) -> &[usize] {
        &self.running_lengths
    }

    /// Buffers sized for [`VecEnv::step_flat`] and [`VecEnv::reset_flat`].
    pub fn flat_step_buffer(&self) -> FlatVecStep {
        FlatVecStep::new(self.num_envs(), self.obs_len)
    }

    /// Resets every environment, seeding environment `i` with `seed + i` (wrapping), and
    /// returns the first observations.
    pub fn reset(&mut self, seed: u64) -> Vec<Obs> {
        self.restart_statistics();
        self.envs
            .iter_mut()
            .enumerate()
            .map(|(i, env)| env.reset(Some(seed.wrapping_add(i as u64))))
            .collect()
    }

    /// Like [`VecEnv::reset`], but writes the observations row-major into `obs`, which must
    /// have `num_envs * obs_len` values.
    pub fn reset_flat(&mut self, seed: u64, obs: &mut [f32]) -> Result<(), EnvError> {
        let expected = self.num_envs() * self.obs_len;
        if obs.len() != expected {
            return Err(EnvError::ObsBufferLength {
                expected,
                got: obs.len(),
            });
        }
        self.restart_statistics();
        for (i, (env, row)) in self
            .envs
            .iter_mut()
            .zip(obs.chunks_exact_mut(self.obs_len.max(1)))
            .enumerate()
        {
            env.reset_into(Some(seed.wrapping_add(i as u64)), row)?;
        }
        Ok(())
    }

    /// Steps every environment with its action, resetting those whose episode ends.
    ///
    /// Every action is checked before any environment moves, so a bad action
    /// ([`EnvError::InvalidAction`], [`EnvError::ActionCount`]) leaves all of them untouched.
    /// Environments that run elsewhere (the Gymnasium bridge's workers) are all sent their
    /// step before any reply is awaited ([`Env::send_step`]), so they step at once; the
    /// results are those of stepping them one by one. After an error the others may have
    /// stepped, and the first error is returned.
    pub fn step(&mut self, actions: &[usize]) -> Result<VecStep, EnvError> {
        self.check_actions(actions)?;
        let n = self.num_envs();
        let mut out = VecStep {
            obs: Vec::with_capacity(n),
            rewards: Vec::with_capacity(n),
            terminated: Vec::with_capacity(n),
            truncated: Vec::with_capacity(n),
            final_obs: Vec::with_capacity(n),
            episodes: Vec::with_capacity(n),
        };
        let mut failure = self.send_steps(actions);
        for (i, (env, &action)) in self.envs.iter_mut().zip(actions).enumerate() {
            let step = if self.sent[i] {
                let mut obs = vec![0.0; self.obs_len];
                env.receive_step_into(&mut obs)
                    .map(|info| Step::from_flat(obs, info))
            } else if failure.is_none() {
                env.step(action)
            } else {
                continue;
            };
            let step = match step {
                Ok(step) => step,
                Err(error) => {
                    failure.get_or_insert(error);
                    continue;
                }
            };
            let episode = record(
                &mut self.running_returns[i],
                &mut self.running_lengths[i],
                step.reward,
                step.terminated,
                step.truncated,
            );
            let (obs, final_obs) = if step.done() {
                (env.reset(None), Some(step.obs))
            } else {
                (step.obs, None)
            };
            out.obs.push(obs);
            out.rewards.push(step.reward);
            out.terminated.push(step.terminated);
            out.truncated.push(step.truncated);
            out.final_obs.push(final_obs);
            out.episodes.push(episode);
        }
        failure.map_or(Ok(out), Err)
    }

    /// Like [`VecEnv::step`], but writes into reusable buffers and allocates nothing, for
    /// environments with flat observations. `out` must have this `VecEnv`'s sizes, as
    /// [`VecEnv::flat_step_buffer`] makes it (else [`EnvError::ObsBufferLength`]).
    pub fn step_flat(&mut self, actions: &[usize], out: &mut FlatVecStep) -> Result<(), EnvError> {
        self.check_actions(actions)?;
        if out.num_envs() != self.num_envs() || out.obs_len != self.obs_len {
            return Err(EnvError::ObsBufferLength {
                expected: self.num_envs() * self.obs_len,
                got: out.obs.len(),
            });
        }
        let mut failure = self.send_steps(actions);
        for (i, (env, &action)) in self.envs.iter_mut().zip(actions).enumerate() {
            let rows = i * self.obs_len..(i + 1) * self.obs_len;
            let obs = &mut out.obs[rows.clone()];
            let info = if self.sent[i] {
                env.receive_step_into(obs)
            } else if failure.is_none() {
                env.step_into(action, obs)
            } else {
                continue;
            };
            let info = match info {
                Ok(info) => info,
                Err(error) => {
                    failure.get_or_insert(error);
                    continue;
                }
            };
            out.rewards[i] = info.reward;
            out.terminated[i] = info.terminated;
            out.truncated[i] = info.truncated;
            out.episodes[i] = record(
                &mut self.running_returns[i],
                &mut self.running_lengths[i],
                info.reward,
                info.terminated,
                info.truncated,
            );
            if info.done() {
                out.final_obs[rows].copy_from_slice(obs);
                if let Err(error) = env.reset_into(None, obs) {
                    failure.get_or_insert(error);
                }
            }
        }
        failure.map_or(Ok(()), Err)
    }

    /// Sends every environment that runs elsewhere its step ([`Env::send_step`]), marking
    /// them in `self.sent`; the in-process ones step when their replies are collected. On an
    /// error, the environments after it are not sent anything and the error is returned, to
    /// be reported once the replies already on their way are read (so that no worker is left
    /// with an unread reply).
    fn send_steps(&mut self, actions: &[usize]) -> Option<EnvError> {
        self.sent.fill(false);
        for (i, (env, &action)) in self.envs.iter_mut().zip(actions).enumerate() {
            match env.send_step(action) {
                Ok(sent) => self.sent[i] = sent,
                Err(error) => return Some(error),
            }
        }
        None
    }

    fn restart_statistics(&mut self) {
        self.running_returns.fill(0.0);
        self.running_lengths.fill(0);
        self.started = true;
    }

    fn check_actions(&self, actions: &[usize]) -> Result<(), EnvError> {
        if !self.started {
            return Err(EnvError::ResetRequired {
                env: format!("VecEnv of {}", self.envs[0].id()),
            });
        }
        if actions.len() != self.num_envs() {
            return Err(EnvError::ActionCount {
                expected: self.num_envs(),
                got: actions.len(),
            });
        }
        match actions.iter().position(|&a| a >= self.num_actions) {
            Some(i) => Err(EnvError::InvalidAction {
                env: format!("{} (environment {i} of the VecEnv)", self.envs[i].id()),
                action: actions[i],
                n: self.num_actions,
            }),
            None => Ok(()),
        }
    }
}

/// Adds one step to an episode's running totals; returns its statistics if it just ended.
#[inline]
fn record(
    running_return: &mut f64,
    running_length: &mut usize,
    reward: f64,
    terminated: bool,
    truncated: bool,
) -> Option<EpisodeStats> {
    *running_return += reward;
    *running_length += 1;
    if terminated || truncated {
        let stats = EpisodeStats {
            episode_return: *running_return,
            length: *running_length,
            terminated,
            truncated,
        };
        *running_return = 0.0;
        *running_length = 0;
        Some(stats)
    } else {
        None
    }
}

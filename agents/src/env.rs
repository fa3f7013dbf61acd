//! The environment side of a rollout: one environment, its current observation and the
//! running episode, stepped without allocating.

use privrl_envs::{Env, StepInfo};

use crate::agent::EpisodeLog;
use crate::error::AgentError;

/// Observation width and number of actions of an environment with flat observations and a
/// discrete action space, or an error saying which of the two is missing.
pub(crate) fn discrete_env_dims(env: &dyn Env) -> Result<(usize, usize), AgentError> {
    let num_actions =
        env.action_space()
            .discrete_n()
            .ok_or_else(|| AgentError::UnsupportedEnv {
                env: env.id().to_string(),
                reason: "the action space is not discrete; these agents need Discrete(n)".into(),
            })?;
    if num_actions == 0 {
        return Err(AgentError::UnsupportedEnv {
            env: env.id().to_string(),
            reason: "the action space is empty".into(),
        });
    }
    Ok((env.observation_space().flat_dim(), num_actions))
}

/// One environment with its current observation (flat, as `Obs::write_flat` lays it out) and
/// the return and length of the episode in progress.
#[derive(Debug)]
pub(crate) struct RolloutEnv {
    env: Box<dyn Env>,
    obs: Vec<f32>,
    next_obs: Vec<f32>,
    episode_return: f64,
    episode_len: usize,
}

impl RolloutEnv {
    /// Wraps `env` and starts its first episode from `seed`.
    pub(crate) fn new(mut env: Box<dyn Env>, seed: u64) -> Result<Self, AgentError> {
        let obs_len = env.observation_space().flat_dim();
        let mut obs = vec![0.0; obs_len];
        env.reset_into(Some(seed), &mut obs)?;
        Ok(Self {
            env,
            obs,
            next_obs: vec![0.0; obs_len],
            episode_return: 0.0,
            episode_len: 0,
        })
    }

    /// The current observation: after a step that ended an episode, its final observation
    /// until [`RolloutEnv::end_episode`] starts the next one.
    pub(crate) fn obs(&self) -> &[f32] {
        &self.obs
    }

    /// Values per observation.
    pub(crate) fn obs_len(&self) -> usize {
        self.obs.len()
    }

    /// Steps taken in the current episode.
    pub(crate) fn episode_len(&self) -> usize {
        self.episode_len
    }

    /// Applies `action`, counts the step in `log`, and makes the next observation current.
    pub(crate) fn step(
        &mut self,
        action: usize,
        log: &mut EpisodeLog,
    ) -> Result<StepInfo, AgentError> {
        let info = self.env.step_into(action, &mut self.next_obs)?;
        std::mem::swap(&mut self.obs, &mut self.next_obs);
        self.episode_return += info.reward;
        self.episode_len += 1;
        log.env_steps += 1;
        Ok(info)
    }

    /// Drops the episode in progress without logging it (it did not finish) and starts the
    /// next one: Spinning Up's reset at an epoch boundary.
    pub(crate) fn abandon_episode(&mut self) -> Result<(), AgentError> {
        self.episode_return = 0.0;
        self.episode_len = 0;
        self.env.reset_into(None, &mut self.obs)?;
        Ok(())
    }

    /// Drops the episode in progress without logging it and starts the next one from `seed`,
    /// so that the environment's state afterwards depends on `seed` alone: a checkpoint taken
    /// here can be resumed by a fresh environment reset from the same seed.
    pub(crate) fn restart_from(&mut self, seed: u64) -> Result<(), AgentError> {
        self.episode_return = 0.0;
        self.episode_len = 0;
        self.env.reset_into(Some(seed), &mut self.obs)?;
        Ok(())
    }

    /// Records the finished (or cut) episode in `log` and starts the next one.
    pub(crate) fn end_episode(&mut self, log: &mut EpisodeLog) -> Result<(), AgentError> {
        log.record(self.episode_return, self.episode_len);
        self.episode_return = 0.0;
        self.episode_len = 0;
        self.env.reset_into(None, &mut self.obs)?;
        Ok(())
    }
}

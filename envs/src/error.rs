//! Typed errors for environments. Every message says what would have been valid.

use std::fmt;

use serde::Serialize;
use thiserror::Error;

/// Why an episode is over. Mirrors Gymnasium's two flags: `terminated` means the MDP reached a
/// terminal state; `truncated` means a time limit cut it short.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum EpisodeEnd {
    /// The MDP reached a terminal state (for example the pole fell).
    Terminated,
    /// The time limit (`max_episode_steps`) cut the episode short.
    Truncated,
}

impl fmt::Display for EpisodeEnd {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EpisodeEnd::Terminated => f.write_str("terminated"),
            EpisodeEnd::Truncated => f.write_str("truncated"),
        }
    }
}

/// Everything that can go wrong when building, resetting or stepping an environment.
///
/// Environments never panic on bad input: they return one of these, and its message names the
/// valid values.
#[derive(Debug, Clone, PartialEq, Error)]
#[non_exhaustive]
pub enum EnvError {
    /// `step` after the episode ended. Gymnasium only warns here and then returns undefined
    /// values (CartPole's reward becomes 0); we refuse instead.
    #[error(
        "{env}: the episode already ended ({reason}) after {steps} steps; \
         call reset() or set_state() before step()"
    )]
    EpisodeFinished {
        /// Environment id, e.g. `cartpole-v1`.
        env: String,
        /// Whether it terminated or was truncated (terminated wins when both hold).
        reason: EpisodeEnd,
        /// Steps taken in the finished episode.
        steps: usize,
    },
    /// `step` before the first `reset` (Gymnasium asserts "Call reset before using step").
    #[error("{env}: step() called before the first reset(); call reset() or set_state() first")]
    ResetRequired {
        /// Environment id.
        env: String,
    },
    /// An action index outside the discrete action space.
    #[error(
        "{env}: invalid action {action}; valid actions are the integers 0 to {}",
        .n.saturating_sub(1)
    )]
    InvalidAction {
        /// Environment id.
        env: String,
        /// The action that was given.
        action: usize,
        /// Number of actions; valid ones are `0..n`.
        n: usize,
    },
    /// A name that [`crate::make`] does not know.
    #[error("unknown environment `{name}`; valid names: {}", .valid.join(", "))]
    UnknownEnv {
        /// The name that was asked for.
        name: String,
        /// Every name `make` accepts (matched case-insensitively).
        valid: Vec<String>,
    },
    /// A physical state given to `set_state` that the environment cannot take.
    #[error("{env}: invalid state {state:?}; expected {expected}")]
    InvalidState {
        /// Environment id.
        env: String,
        /// The state that was given.
        state: Vec<f64>,
        /// What a valid state looks like.
        expected: String,
    },
    /// A configuration value out of its range, caught when the config is built.
    #[error("invalid parameter `{name}` = {value}; expected {expected}")]
    InvalidParameter {
        /// Parameter name, as spelled in the config struct.
        name: String,
        /// The value that was given.
        value: f64,
        /// The accepted range.
        expected: String,
    },
    /// An observation buffer passed to `step_into`/`reset_into` of the wrong length.
    #[error(
        "observation buffer has length {got}; this environment writes exactly {expected} values"
    )]
    ObsBufferLength {
        /// Length the environment writes.
        expected: usize,
        /// Length that was given.
        got: usize,
    },
    /// A `VecEnv` step with the wrong number of actions.
    #[error(
        "got {got} actions for {expected} environments; pass exactly one action per environment"
    )]
    ActionCount {
        /// Number of environments.
        expected: usize,
        /// Number of actions given.
        got: usize,
    },
    /// Environments in one `VecEnv` whose spaces differ.
    #[error("environment {index} does not match environment 0: {detail}; all environments in a VecEnv must share observation and action spaces")]
    MismatchedEnvs {
        /// Index of the first environment that differs.
        index: usize,
        /// What differs.
        detail: String,
    },
}

impl EnvError {
    /// Shorthand for [`EnvError::InvalidParameter`].
    pub(crate) fn invalid_parameter(name: &str, value: f64, expected: &str) -> Self {
        EnvError::InvalidParameter {
            name: name.to_string(),
            value,
            expected: expected.to_string(),
        }
    }
}

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
    #[error(
        "unknown environment `{name}`; valid names: {}, or `gymnasium:<Gymnasium id>` for any \
         Gymnasium environment (cargo feature `gymnasium`)",
        .valid.join(", ")
    )]
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
    /// A name that needs a cargo feature this build of privrl-envs was compiled without,
    /// e.g. `gymnasium:CartPole-v1` without the `gymnasium` feature.
    #[error(
        "`{name}` needs privrl-envs' `{feature}` cargo feature, which this build does not have; \
         rebuild with `--features privrl-envs/{feature}`"
    )]
    FeatureDisabled {
        /// The name that was asked for.
        name: String,
        /// The cargo feature that provides it.
        feature: String,
    },
    /// A `gymnasium:` name that does not parse.
    #[error(
        "invalid Gymnasium environment name `{name}`: {reason}; expected \
         `gymnasium:<Gymnasium id>[?key=value&key=value...]`, \
         e.g. `gymnasium:ALE/AirRaid-v5?obs_type=ram`"
    )]
    InvalidGymnasiumName {
        /// The name that was given.
        name: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The Python interpreter for the Gymnasium bridge could not be started.
    #[error(
        "could not start Python `{python}` for the Gymnasium bridge: {reason}; install Python 3 \
         with Gymnasium (at the workspace root: `python3 -m venv .venv && \
         .venv/bin/python -m pip install {requirement}`) or set PRIVRL_PYTHON to an \
         interpreter that has it"
    )]
    PythonUnavailable {
        /// The interpreter that was tried.
        python: String,
        /// Why it could not be started.
        reason: String,
        /// The pip requirement for Gymnasium, e.g. `gymnasium==1.4.0`.
        requirement: String,
    },
    /// The Gymnasium worker's Python lacks a package (Gymnasium itself, ale-py for Atari...).
    #[error(
        "Python `{python}` cannot import `{module}` ({detail}); install it with \
         `{python} -m pip install {requirement}`"
    )]
    PythonPackageMissing {
        /// The interpreter the worker runs on.
        python: String,
        /// The module that failed to import, e.g. `ale_py`.
        module: String,
        /// The pip requirement that provides it, e.g. `ale-py==0.12.1`.
        requirement: String,
        /// What needed it, or Python's message.
        detail: String,
    },
    /// Gymnasium raised an exception (unknown id, bad keyword argument, a failing step...).
    #[error("{env}: Gymnasium raised {exception} during {during}: {message}")]
    GymnasiumException {
        /// Environment name, e.g. `gymnasium:CartPole-v1`.
        env: String,
        /// The request: `make`, `reset`, `step` or `set_state`.
        during: String,
        /// The Python exception's type, e.g. `NameNotFound`.
        exception: String,
        /// The exception's message.
        message: String,
    },
    /// A Gymnasium space the bridge cannot represent.
    #[error(
        "{env}: the {which} space {space} is not supported by the Gymnasium bridge; \
         supported: {supported}"
    )]
    UnsupportedSpace {
        /// Environment name.
        env: String,
        /// `observation` or `action`.
        which: String,
        /// Gymnasium's repr of the space, e.g. `Box(-2.0, 2.0, (1,), float32)`.
        space: String,
        /// The spaces that are supported there.
        supported: String,
    },
    /// The Gymnasium worker process exited (or closed its output) before answering.
    #[error(
        "{env}: the Gymnasium worker exited during {during} ({status}); its stderr ends \
         with:\n{stderr}"
    )]
    WorkerDied {
        /// Environment name.
        env: String,
        /// The request it was answering.
        during: String,
        /// Its exit status, as far as known.
        status: String,
        /// The last lines it wrote to stderr.
        stderr: String,
    },
    /// The Gymnasium worker did not answer in time; it has been killed.
    #[error(
        "{env}: the Gymnasium worker did not answer {during} within {timeout_s} s and was \
         killed; its stderr ends with:\n{stderr}"
    )]
    WorkerTimeout {
        /// Environment name.
        env: String,
        /// The request it did not answer.
        during: String,
        /// The timeout, in seconds.
        timeout_s: f64,
        /// The last lines it wrote to stderr.
        stderr: String,
    },
    /// The Gymnasium worker sent something that breaks the protocol (a version mismatch or a
    /// bug); the worker is killed.
    #[error("{env}: the Gymnasium worker broke the protocol during {during}: {detail}")]
    WorkerProtocol {
        /// Environment name.
        env: String,
        /// The request it was answering.
        during: String,
        /// What was wrong.
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

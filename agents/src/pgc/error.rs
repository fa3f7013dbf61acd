//! The errors of a PGC run.

use std::path::PathBuf;
use std::time::Duration;

use privrl_privacy::PrivacyError;
use thiserror::Error;

use crate::error::{AgentError, RecordError};

/// What can go wrong in a PGC run.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum PgcError {
    /// A configuration value outside its range.
    #[error("invalid parameter `{name}` = {value}; expected {expected}")]
    InvalidParameter {
        /// Parameter name.
        name: &'static str,
        /// The value given, as text.
        value: String,
        /// The accepted range.
        expected: &'static str,
    },
    /// The agent side failed (environment, loss, gradient).
    #[error(transparent)]
    Agent(#[from] AgentError),
    /// The mechanism refused the gradient.
    #[error(transparent)]
    Privacy(#[from] PrivacyError),
    /// θ does not fit the network.
    #[error(transparent)]
    Record(#[from] RecordError),
    /// The transport failed (a Redis error, a malformed message).
    #[error("{transport} transport: {message}")]
    Transport {
        /// `in-process` or `redis`.
        transport: &'static str,
        /// What happened.
        message: String,
    },
    /// Reading or writing the aggregator's checkpoint failed.
    #[error("checkpoint {path}: {message}")]
    Checkpoint {
        /// The checkpoint file.
        path: PathBuf,
        /// What went wrong.
        message: String,
    },
    /// No θ was published within the wait.
    #[error("no parameters published after {0:?}; is the aggregator running?")]
    NoParameters(Duration),
}

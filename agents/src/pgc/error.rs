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
    /// A newer aggregator has taken this run over (its epoch is higher): this one must stop
    /// writing. Raised by every write of a superseded aggregator.
    #[error(
        "aggregator of run `{run_id}` fenced off: its epoch {epoch} was superseded by {} (a \
         newer aggregator took the run over); this one stops",
        current.map_or("another".to_string(), |c| c.to_string())
    )]
    Fenced {
        /// The run.
        run_id: String,
        /// This aggregator's epoch.
        epoch: u64,
        /// The run's current epoch, if known.
        current: Option<u64>,
    },
    /// A fresh aggregator (no checkpoint) was started on a run id that already has state.
    #[error(
        "run `{run_id}` already exists on this Redis server; resume it with its aggregator's \
         --checkpoint, pick another --run-id, or delete it with `cargo xtask pgc cleanup \
         --run-id {run_id}`"
    )]
    RunExists {
        /// The run.
        run_id: String,
    },
    /// The server no longer has the run's state that the aggregator relies on.
    #[error("run `{run_id}` lost on the Redis server: {message}")]
    RunLost {
        /// The run.
        run_id: String,
        /// What is missing.
        message: String,
    },
    /// No θ was published within the wait.
    #[error("no parameters published after {0:?}; is the aggregator running?")]
    NoParameters(Duration),
}

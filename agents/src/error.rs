//! Typed errors of the agents. Every message says what would have been valid.

use std::path::PathBuf;

use privrl_envs::EnvError;
use privrl_privacy::PrivacyError;
use thiserror::Error;

/// Everything that can go wrong when building, running or checkpointing an agent.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum AgentError {
    /// A configuration value outside its range, caught when the agent is built.
    #[error("invalid parameter `{name}` = {value}; expected {expected}")]
    InvalidParameter {
        /// Parameter name, as spelled in the config struct.
        name: &'static str,
        /// The value that was given.
        value: f64,
        /// The accepted range.
        expected: &'static str,
    },
    /// The environment does not fit the agent (for example a non-discrete action space).
    #[error("environment `{env}` cannot be used: {reason}")]
    UnsupportedEnv {
        /// Environment id.
        env: String,
        /// What is wrong and what would work.
        reason: String,
    },
    /// A network whose input or output width does not match the environment or the batch.
    #[error("shape mismatch in {what}: expected {expected}, got {got}")]
    ShapeMismatch {
        /// What was being matched, e.g. `observation width`.
        what: &'static str,
        /// The width the agent needs.
        expected: usize,
        /// The width it was given.
        got: usize,
    },
    /// A batch with no samples.
    #[error("empty batch passed to {0}; it needs at least one sample")]
    EmptyBatch(&'static str),
    /// A per-layer DP-SGD clipping rule whose segments are not the network's parameters.
    #[error(
        "clipping layer_sizes {given:?} must equal the network's parameter sizes {expected:?}"
    )]
    ClippingLayout {
        /// The segment sizes of the clipping rule.
        given: Vec<usize>,
        /// The network's parameter sizes, weight then bias, layer by layer.
        expected: Vec<usize>,
    },
    /// A privacy mechanism refused its input.
    #[error(transparent)]
    Privacy(#[from] PrivacyError),
    /// The environment refused a step or a reset.
    #[error(transparent)]
    Env(#[from] EnvError),
    /// A gradient record that does not fit the module it is applied to.
    #[error(transparent)]
    Record(#[from] RecordError),
    /// Saving or loading a checkpoint failed.
    #[error("checkpoint {path}: {message}")]
    Checkpoint {
        /// File or directory involved.
        path: PathBuf,
        /// What went wrong.
        message: String,
    },
    /// The DP-SGD engine refused a step (a per-sample gradient path or a layer it does not
    /// cover).
    #[error(transparent)]
    Engine(Box<EngineError>),
    /// A loss became NaN or infinite (reported instead of training on it).
    #[error("non-finite {what} ({value}) at update {update}; lower the learning rate or check the rewards")]
    NonFinite {
        /// Which quantity.
        what: &'static str,
        /// Its value.
        value: f64,
        /// Update counter at which it happened.
        update: u64,
    },
}

/// Errors of [`crate::GradientRecord`] conversions.
#[derive(Debug, Clone, PartialEq, Error)]
#[non_exhaustive]
pub enum RecordError {
    /// The record names a parameter that the module does not have.
    #[error("gradient for `{name}` has no matching parameter in the module (module parameters: {known})")]
    UnknownParameter {
        /// The parameter path in the record.
        name: String,
        /// The module's parameter paths, comma-separated.
        known: String,
    },
    /// A parameter whose gradient has the wrong shape.
    #[error("gradient for `{name}` has shape {got:?}; the parameter has shape {expected:?}")]
    ShapeMismatch {
        /// Parameter path.
        name: String,
        /// Shape of the parameter.
        expected: Vec<usize>,
        /// Shape in the record.
        got: Vec<usize>,
    },
    /// A flat vector or a second record whose length does not match.
    #[error("expected {expected} gradient values, got {got}")]
    LengthMismatch {
        /// Values the record holds.
        expected: usize,
        /// Values given.
        got: usize,
    },
    /// Two records whose parameter names or order differ.
    #[error("records differ at parameter {index}: `{left}` vs `{right}`")]
    LayoutMismatch {
        /// Index of the first differing parameter.
        index: usize,
        /// Name in the first record.
        left: String,
        /// Name in the second record.
        right: String,
    },
    /// Averaging an empty list of records.
    #[error("cannot average zero gradient records")]
    Empty,
}

/// Checks that `value` is finite and strictly positive.
pub(crate) fn check_positive(name: &'static str, value: f64) -> Result<(), AgentError> {
    if value.is_finite() && value > 0.0 {
        Ok(())
    } else {
        Err(AgentError::InvalidParameter {
            name,
            value,
            expected: "> 0 and finite",
        })
    }
}

/// Checks that `value` lies in `[0, 1]`.
pub(crate) fn check_unit_interval(name: &'static str, value: f64) -> Result<(), AgentError> {
    if (0.0..=1.0).contains(&value) {
        Ok(())
    } else {
        Err(AgentError::InvalidParameter {
            name,
            value,
            expected: "in [0, 1]",
        })
    }
}

/// Checks that `value` lies in `[0, 1)`.
pub(crate) fn check_probability_below_one(
    name: &'static str,
    value: f64,
) -> Result<(), AgentError> {
    if (0.0..1.0).contains(&value) {
        Ok(())
    } else {
        Err(AgentError::InvalidParameter {
            name,
            value,
            expected: "in [0, 1)",
        })
    }
}

/// Checks that `value` is finite and not negative.
pub(crate) fn check_non_negative(name: &'static str, value: f64) -> Result<(), AgentError> {
    if value.is_finite() && value >= 0.0 {
        Ok(())
    } else {
        Err(AgentError::InvalidParameter {
            name,
            value,
            expected: ">= 0 and finite",
        })
    }
}

/// The widest hidden layer an agent's config accepts: 64 times the widest privrl uses (1,024),
/// and small enough that two such layers (2³² weights) are still an allocation, not an
/// overflow. A wider request is refused by name instead of aborting in the allocator.
pub const MAX_HIDDEN_WIDTH: usize = 1 << 16;

/// Checks every hidden width of an MLP: from 1 to [`MAX_HIDDEN_WIDTH`].
pub(crate) fn check_hidden(name: &'static str, widths: &[usize]) -> Result<(), AgentError> {
    match widths
        .iter()
        .find(|&&w| !(1..=MAX_HIDDEN_WIDTH).contains(&w))
    {
        None => Ok(()),
        Some(&width) => Err(AgentError::InvalidParameter {
            name,
            value: width as f64,
            expected: "widths from 1 to 65,536 (MAX_HIDDEN_WIDTH)",
        }),
    }
}

/// A buffer of `len` copies of `fill` (`None`: a length that overflows `usize`), allocated
/// fallibly: a buffer too large for this machine is a named error about `name` (whose value
/// was `value`), not an abort in the allocator or a capacity-overflow panic.
pub(crate) fn allocate<T: Clone>(
    len: Option<usize>,
    fill: T,
    name: &'static str,
    value: usize,
) -> Result<Vec<T>, AgentError> {
    let mut buffer = Vec::new();
    match len.map(|len| (len, buffer.try_reserve_exact(len))) {
        Some((len, Ok(()))) => {
            buffer.resize(len, fill);
            Ok(buffer)
        }
        _ => Err(too_large(name, value)),
    }
}

/// The error of a buffer that does not fit in memory, naming the parameter that sized it.
pub(crate) fn too_large(name: &'static str, value: usize) -> AgentError {
    AgentError::InvalidParameter {
        name,
        value: value as f64,
        expected: "a buffer that fits in this machine's memory",
    }
}

/// Checks that a count is at least one.
pub(crate) fn check_count(name: &'static str, value: usize) -> Result<(), AgentError> {
    if value >= 1 {
        Ok(())
    } else {
        Err(AgentError::InvalidParameter {
            name,
            value: value as f64,
            expected: ">= 1",
        })
    }
}

/// Why the [`PrivacyEngine`](crate::PrivacyEngine) refused a step or a configuration.
#[derive(Debug, Error)]
pub enum EngineError {
    /// A privacy parameter is out of range, or a target ε cannot be met.
    #[error(transparent)]
    Privacy(#[from] PrivacyError),
    /// A gradient does not fit the module.
    #[error(transparent)]
    Record(#[from] RecordError),
    /// An agent-level failure.
    #[error(transparent)]
    Agent(#[from] AgentError),
    /// The [`Traced`](crate::dp::Traced) fast path gave no per-sample gradient for a
    /// parameter: the layer that owns it was not passed through
    /// [`Tape::trace`](crate::dp::Tape::trace) (or is not a
    /// [`GradSampleLayer`](crate::dp::GradSampleLayer)).
    #[error(
        "parameter `{name}` has no per-sample gradient: trace its layer with Tape::trace, or \
         use MicroBatches for this model"
    )]
    Untraced {
        /// Dotted path of the parameter.
        name: String,
    },
    /// A layer configuration the fast path does not cover.
    #[error("{layer}: {reason}; use MicroBatches for this model")]
    UnsupportedLayer {
        /// The layer type.
        layer: &'static str,
        /// What is not covered.
        reason: String,
    },
    /// The per-sample losses or gradients have the wrong shape.
    #[error("shape mismatch in {what}: expected {expected:?}, got {got:?}")]
    Shape {
        /// What has the wrong shape.
        what: &'static str,
        /// The shape that fits.
        expected: Vec<usize>,
        /// The shape that was given.
        got: Vec<usize>,
    },
    /// A seeded engine (`RandomnessSource::Seeded`, which asks for a repeatable run) on a
    /// build whose burn-ndarray has its `simd` feature on: its approximate reciprocal makes
    /// gradients depend on heap addresses ([`check_exact_division`](crate::check_exact_division)).
    #[error(
        "RandomnessSource::Seeded asks for a repeatable run, but this build's burn-ndarray has \
         its `simd` feature on: 1/{x} gave {got:e}, not {exact:e}, and such gradients change \
         with heap addresses. Declare burn with `default-features = false, features = [\"std\", \
         \"ndarray\", \"autodiff\"]` and burn-ndarray with `default-features = false` (README, \
         \"As a library\"), or draw the noise from RandomnessSource::Secure"
    )]
    InexactDivision {
        /// The probed value.
        x: f32,
        /// burn-ndarray's 1/x.
        got: f32,
        /// Rust's 1.0 / x.
        exact: f32,
    },
    /// A record index outside the dataset.
    #[error("record index {index} is outside the dataset of {size} records")]
    Index {
        /// The index.
        index: usize,
        /// The dataset size N.
        size: usize,
    },
}

impl EngineError {
    /// A privacy parameter outside its range.
    pub(crate) fn out_of_range(name: &'static str, value: f64, expected: &'static str) -> Self {
        EngineError::Privacy(PrivacyError::OutOfRange {
            name,
            value,
            expected,
        })
    }
}

impl From<EngineError> for AgentError {
    /// The agent's own error where the engine only passed one on.
    fn from(error: EngineError) -> Self {
        match error {
            EngineError::Agent(e) => e,
            EngineError::Privacy(e) => AgentError::Privacy(e),
            EngineError::Record(e) => AgentError::Record(e),
            other => AgentError::Engine(Box::new(other)),
        }
    }
}

//! The one error type of the crate.

/// Why a privacy computation or release was refused.
///
/// Every constructor validates its parameters once and names the offending parameter, the value
/// it was given and the range it accepts; no function of this crate panics or returns NaN on bad
/// input.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PrivacyError {
    /// A scalar parameter lies outside its allowed range (or is NaN / infinite).
    #[error("{name} = {value} is out of range: expected {expected}")]
    OutOfRange {
        /// Parameter name, in the paper's vocabulary (`epsilon`, `delta`, `concentration`, ...).
        name: &'static str,
        /// The value that was given.
        value: f64,
        /// The accepted range, in words.
        expected: &'static str,
    },
    /// A count or a vector that must not be empty was empty (or a count was zero).
    #[error("{name} must not be empty")]
    Empty {
        /// What was empty.
        name: &'static str,
    },
    /// A vector or matrix has the wrong length or shape.
    #[error("{name} has size {found}, expected {expected}")]
    DimensionMismatch {
        /// What has the wrong size.
        name: &'static str,
        /// The size that fits.
        expected: usize,
        /// The size that was given.
        found: usize,
    },
    /// A vector holds NaN or an infinity.
    #[error("{name}[{index}] is not finite")]
    NonFinite {
        /// Which vector.
        name: &'static str,
        /// First offending index.
        index: usize,
    },
    /// A vector that must lie in the restricted simplex Δ_{m,η} does not.
    #[error(
        "{name} is not in the restricted simplex: sum = {sum} (expected 1 within {tolerance}), \
         min entry = {min} (expected >= eta = {eta})"
    )]
    NotOnSimplex {
        /// Which vector.
        name: &'static str,
        /// Its sum.
        sum: f64,
        /// Its smallest entry.
        min: f64,
        /// The lower bound η of Δ_{m,η} (0 for the plain simplex).
        eta: f64,
        /// Accepted deviation of the sum from 1.
        tolerance: f64,
    },
    /// A solver was asked for a target that no parameter value reaches.
    #[error("{name} = {target} cannot be reached: {reason}")]
    Unreachable {
        /// The target quantity (`target_epsilon`, ...).
        name: &'static str,
        /// The requested value.
        target: f64,
        /// Why, with the limit that can be reached.
        reason: String,
    },
    /// The operating system's random number generator failed.
    #[error("operating-system randomness unavailable: {0}")]
    Randomness(String),
    /// Two inputs that must belong together do not (e.g. a δ estimate for other parameters).
    #[error("inconsistent inputs: {0}")]
    Inconsistent(&'static str),
    /// A numerical routine did not converge or left its domain; the result would be meaningless.
    #[error("numerical failure in {0}")]
    Numerical(&'static str),
    /// A value given as text does not parse.
    #[error("{what}: {text:?} does not parse: expected {expected}")]
    Parse {
        /// What was being read.
        what: &'static str,
        /// The text that was given.
        text: String,
        /// What is accepted, in words.
        expected: &'static str,
    },
}

/// `value` must be finite and strictly positive.
pub(crate) fn positive(name: &'static str, value: f64) -> Result<f64, PrivacyError> {
    if value.is_finite() && value > 0.0 {
        Ok(value)
    } else {
        Err(PrivacyError::OutOfRange {
            name,
            value,
            expected: "> 0 and finite",
        })
    }
}

/// `value` must be finite and non-negative.
pub(crate) fn non_negative(name: &'static str, value: f64) -> Result<f64, PrivacyError> {
    if value.is_finite() && value >= 0.0 {
        Ok(value)
    } else {
        Err(PrivacyError::OutOfRange {
            name,
            value,
            expected: ">= 0 and finite",
        })
    }
}

/// `value` must lie in the open interval (0, 1).
pub(crate) fn open_unit(name: &'static str, value: f64) -> Result<f64, PrivacyError> {
    if value > 0.0 && value < 1.0 {
        Ok(value)
    } else {
        Err(PrivacyError::OutOfRange {
            name,
            value,
            expected: "in (0, 1)",
        })
    }
}

/// A δ of an (ε, δ) guarantee: in [0, 1).
pub(crate) fn delta_half_open(name: &'static str, value: f64) -> Result<f64, PrivacyError> {
    if (0.0..1.0).contains(&value) {
        Ok(value)
    } else {
        Err(PrivacyError::OutOfRange {
            name,
            value,
            expected: "in [0, 1)",
        })
    }
}

/// Every entry of `values` must be finite.
pub(crate) fn all_finite<T: Copy + Into<f64>>(
    name: &'static str,
    values: &[T],
) -> Result<(), PrivacyError> {
    match values.iter().position(|&v| !v.into().is_finite()) {
        Some(index) => Err(PrivacyError::NonFinite { name, index }),
        None => Ok(()),
    }
}

/// `x` as f32, saturating at ±f32::MAX instead of overflowing to ±∞ (a post-processing of the
/// private f64 value, so it costs no privacy). NaN cannot reach it: inputs are checked finite.
#[inline]
pub(crate) fn saturating_f32(x: f64) -> f32 {
    x.clamp(-f64::from(f32::MAX), f64::from(f32::MAX)) as f32
}

/// A count that must be at least one.
pub(crate) fn at_least_one(name: &'static str, value: usize) -> Result<usize, PrivacyError> {
    if value == 0 {
        Err(PrivacyError::Empty { name })
    } else {
        Ok(value)
    }
}

//! [`Epsilon`]: a privacy budget as a user gives it, on a command line or in a configuration.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::PrivacyError;

/// A privacy budget ε > 0, or ∞ (no noise, no guarantee). The one parser and formatter of ε
/// budgets: `2`, `0.5` or `1e-3`, and `inf`, `infinity` or `∞` for ∞. In JSON, ∞ is `null`
/// (JSON has no infinity).
///
/// ```
/// use privrl_privacy::Epsilon;
///
/// let e: Epsilon = "2".parse()?;
/// assert_eq!(e.get(), Some(2.0));
/// let inf: Epsilon = "inf".parse()?;
/// assert_eq!((inf.to_string(), inf.slug()), ("∞".to_string(), "inf".to_string()));
/// assert!("0".parse::<Epsilon>().is_err());
/// # Ok::<(), privrl_privacy::PrivacyError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "Option<f64>", into = "Option<f64>")]
pub struct Epsilon(Option<f64>);

impl Epsilon {
    /// ε = ∞.
    pub const INFINITE: Self = Self(None);

    /// A finite budget; ε must be finite and > 0.
    pub fn finite(epsilon: f64) -> Result<Self, PrivacyError> {
        if epsilon.is_finite() && epsilon > 0.0 {
            Ok(Self(Some(epsilon)))
        } else {
            Err(PrivacyError::OutOfRange {
                name: "epsilon",
                value: epsilon,
                expected: "a number > 0, or inf",
            })
        }
    }

    /// The budget, `None` for ∞.
    pub fn get(self) -> Option<f64> {
        self.0
    }

    /// The budget as a number, `f64::INFINITY` for ∞ (for plot axes and comparisons).
    pub fn value(self) -> f64 {
        self.0.unwrap_or(f64::INFINITY)
    }

    /// ASCII for file and run names: the number, or `inf`.
    pub fn slug(self) -> String {
        self.0.map_or_else(|| "inf".to_string(), |e| e.to_string())
    }
}

impl TryFrom<Option<f64>> for Epsilon {
    type Error = PrivacyError;
    fn try_from(epsilon: Option<f64>) -> Result<Self, PrivacyError> {
        epsilon.map_or(Ok(Self::INFINITE), Self::finite)
    }
}

impl From<Epsilon> for Option<f64> {
    fn from(epsilon: Epsilon) -> Self {
        epsilon.0
    }
}

impl FromStr for Epsilon {
    type Err = PrivacyError;
    fn from_str(text: &str) -> Result<Self, PrivacyError> {
        match text.trim().to_ascii_lowercase().as_str() {
            "inf" | "infinity" | "∞" => Ok(Self::INFINITE),
            other => other
                .parse::<f64>()
                .map_err(|_| PrivacyError::Parse {
                    what: "epsilon",
                    text: text.to_string(),
                    expected: "a number > 0, or inf",
                })
                .and_then(Self::finite),
        }
    }
}

impl fmt::Display for Epsilon {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Some(e) => write!(f, "{e}"),
            None => f.write_str("∞"),
        }
    }
}

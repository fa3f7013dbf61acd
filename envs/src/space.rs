//! Observation and action spaces, after Gymnasium's `spaces.Discrete` and `spaces.Box`.

use serde::Serialize;

/// The set of valid actions or observations of an environment.
///
/// Serialises as `{"discrete": {"n": 2}}` or `{"box": {"low": [..], "high": [..]}}`; infinite
/// bounds become `null` in JSON, because JSON has no infinity.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Space {
    /// The integers `0..n` (Gymnasium `Discrete(n)` with `start = 0`).
    Discrete {
        /// Number of elements.
        n: usize,
    },
    /// A flat vector with element-wise bounds (Gymnasium `Box(low, high, dtype=float32)`).
    Box {
        /// Lower bound of each element.
        low: Vec<f32>,
        /// Upper bound of each element.
        high: Vec<f32>,
    },
}

/// Gymnasium's notation: `Discrete(2)`, `Box(4,)`.
impl std::fmt::Display for Space {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Space::Discrete { n } => write!(f, "Discrete({n})"),
            Space::Box { low, .. } => write!(f, "Box({},)", low.len()),
        }
    }
}

impl Space {
    /// Shape of one element, as Gymnasium reports it: `[]` for `Discrete` (a scalar), `[d]` for
    /// a `Box` of `d` values.
    pub fn shape(&self) -> Vec<usize> {
        match self {
            Space::Discrete { .. } => Vec::new(),
            Space::Box { low, .. } => vec![low.len()],
        }
    }

    /// Length of one element once flattened, as `gymnasium.spaces.flatdim` counts it: `n` for
    /// `Discrete` (a one-hot vector), the number of values for `Box`. This is the input width of
    /// a network that reads the space.
    pub fn flat_dim(&self) -> usize {
        match self {
            Space::Discrete { n } => *n,
            Space::Box { low, .. } => low.len(),
        }
    }

    /// The number of actions of a `Discrete` space; `None` for a `Box`.
    pub fn discrete_n(&self) -> Option<usize> {
        match self {
            Space::Discrete { n } => Some(*n),
            Space::Box { .. } => None,
        }
    }

    /// Whether `action` is an element of a `Discrete` space (always false for a `Box`).
    pub fn contains_action(&self, action: usize) -> bool {
        matches!(self, Space::Discrete { n } if action < *n)
    }

    /// Whether `values` is an element of a `Box` space: right length and every value within its
    /// bounds (always false for a `Discrete` space).
    pub fn contains(&self, values: &[f32]) -> bool {
        match self {
            Space::Discrete { .. } => false,
            Space::Box { low, high } => {
                values.len() == low.len()
                    && values
                        .iter()
                        .zip(low.iter().zip(high))
                        .all(|(v, (lo, hi))| lo <= v && v <= hi)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn discrete_space_helpers() {
        let space = Space::Discrete { n: 3 };
        assert_eq!(space.shape(), Vec::<usize>::new());
        assert_eq!(space.flat_dim(), 3);
        assert_eq!(space.discrete_n(), Some(3));
        assert!(space.contains_action(2));
        assert!(!space.contains_action(3));
    }

    #[test]
    fn box_space_helpers() {
        let space = Space::Box {
            low: vec![-1.0, f32::NEG_INFINITY],
            high: vec![1.0, f32::INFINITY],
        };
        assert_eq!(space.shape(), vec![2]);
        assert_eq!(space.flat_dim(), 2);
        assert_eq!(space.discrete_n(), None);
        assert!(space.contains(&[0.5, 1e30]));
        assert!(!space.contains(&[1.5, 0.0]));
        assert!(!space.contains(&[0.0]));
    }
}

//! One point of the σ sweep: a method at a noise level with its runs over seeds, and the
//! statistics the report and the headline read off it.

use super::plan::Method;
use super::runs::RunSummary;
use crate::report::format_number;
use crate::report::plot::median;

/// One point of the sweep: a method at a noise level, over seeds.
pub(super) struct Point {
    pub(super) method: Method,
    pub(super) noise: f64,
    pub(super) runs: Vec<RunSummary>,
    pub(super) curves: Vec<Vec<(f64, f64)>>,
    /// An ε that bounds every run's whatever its data (DP-SGD DQN: `epsilon_bound` in the
    /// suite's module), which the point reports when it is larger than its runs'.
    pub(super) epsilon_bound: Option<f64>,
}

impl Point {
    pub(super) fn mean_returns(&self) -> Vec<f64> {
        self.runs.iter().map(|r| r.mean_return).collect()
    }

    pub(super) fn median_returns(&self) -> Vec<f64> {
        self.runs.iter().map(|r| r.median_return).collect()
    }

    /// Episodes to solved per seed, an unsolved seed counting as the episodes it ran
    /// (censored: for the plots).
    pub(super) fn convergence(&self) -> Vec<f64> {
        self.runs
            .iter()
            .map(|r| r.solved_at_episode.unwrap_or(r.episodes) as f64)
            .collect()
    }

    /// Median episodes to solved over seeds, an unsolved seed counting as ∞ (for the table).
    pub(super) fn median_convergence(&self) -> f64 {
        median(
            &self
                .runs
                .iter()
                .map(|r| r.solved_at_episode.map_or(f64::INFINITY, |e| e as f64))
                .collect::<Vec<_>>(),
        )
    }

    pub(super) fn solved(&self) -> usize {
        self.runs
            .iter()
            .filter(|r| r.solved_at_episode.is_some())
            .count()
    }

    /// The largest ε over seeds and the data-independent bound (DQN's runs vary with the
    /// number of gradient steps their episodes led to).
    pub(super) fn epsilon(&self) -> f64 {
        self.runs
            .iter()
            .map(|r| r.epsilon.unwrap_or(f64::INFINITY))
            .fold(self.epsilon_bound.unwrap_or(0.0), f64::max)
    }

    /// The ε with its unit, never a bare number: `4.73/episode`, `24.2/transition`, `∞`.
    pub(super) fn epsilon_with_unit(&self) -> String {
        let epsilon = self.epsilon();
        match self.method.unit() {
            Some(unit) if epsilon.is_finite() => {
                format!("{}/{}", format_number(epsilon), unit.name())
            }
            _ => "∞".to_string(),
        }
    }
}

//! The suite's primary metrics, fixed before the runs they judge (issue 40): returns per
//! episode, smoothed over the last [`WINDOW`] episodes as Gymnasium's leaderboards do.
//!
//! The paper's own metric (the first epoch whose epoch return reaches the threshold; the mean
//! of the last 3 epochs) rests on about one episode on AirRaid, whose episodes last about one
//! 1000-step epoch: the epoch that first crosses the threshold typically holds a single
//! finished episode. It stays in the report as the second column.

use anyhow::{Context, Result};
use privrl_agents::EpochStats;
use serde::Serialize;

use crate::run::Table;

/// Episodes in the smoothing window, and in the final return (N of "the mean of the last N
/// episodes").
pub(super) const WINDOW: usize = 100;

/// One finished run's smoothed metrics, read from its `metrics.csv`, whose `mean_return_100`
/// column is the mean return of the last 100 episodes finished by each epoch's end and whose
/// `episodes` column counts the episodes finished so far.
#[derive(Debug, Clone, Serialize)]
pub(super) struct SmoothedRun {
    /// (environment steps, mean return of the last min(100, finished) episodes) per epoch.
    pub(super) curve: Vec<(f64, f64)>,
    /// Environment steps until the smoothed curve, over a full window of 100 episodes, first
    /// reaches the threshold (`None`: never).
    pub(super) steps_to_threshold: Option<f64>,
    /// Mean return of the run's last 100 episodes (NaN if it finished fewer).
    pub(super) final_return: f64,
    /// Episodes the run finished.
    pub(super) episodes: f64,
}

impl SmoothedRun {
    /// The metrics of one run's `metrics.csv` against `threshold`.
    pub(super) fn from_metrics(metrics: &Table, threshold: f64) -> Result<Self> {
        let steps = metrics.column("env_steps")?;
        let episodes = metrics.column(EpochStats::EPISODES)?;
        let smoothed = metrics.column(EpochStats::MEAN_RETURN_100)?;
        let full = |i: usize| episodes[i] >= WINDOW as f64;
        let steps_to_threshold = (0..steps.len())
            .find(|&i| full(i) && smoothed[i] >= threshold)
            .map(|i| steps[i]);
        let last = steps
            .len()
            .checked_sub(1)
            .context("metrics.csv has no epochs")?;
        Ok(Self {
            curve: steps
                .iter()
                .zip(&smoothed)
                .filter(|(_, y)| y.is_finite())
                .map(|(&x, &y)| (x, y))
                .collect(),
            steps_to_threshold,
            final_return: if full(last) { smoothed[last] } else { f64::NAN },
            episodes: episodes[last],
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(rows: &[[f64; 3]]) -> Table {
        Table {
            columns: vec![
                "env_steps".into(),
                "episodes".into(),
                "mean_return_100".into(),
            ],
            rows: rows.iter().map(|r| r.to_vec()).collect(),
        }
    }

    #[test]
    fn speed_needs_a_full_window_and_final_is_the_last_window() {
        // Epoch 2 crosses 50 over 60 episodes only (not a full window); epoch 3 has 120
        // episodes but is below; epoch 4 reaches it over a full window.
        let t = table(&[
            [1000.0, 30.0, 10.0],
            [2000.0, 60.0, 70.0],
            [3000.0, 120.0, 45.0],
            [4000.0, 150.0, 55.0],
            [5000.0, 190.0, 52.0],
        ]);
        let run = SmoothedRun::from_metrics(&t, 50.0).unwrap();
        assert_eq!(run.steps_to_threshold, Some(4000.0));
        assert_eq!(run.final_return, 52.0);
        assert_eq!(run.episodes, 190.0);
        assert_eq!(run.curve.len(), 5);
        assert_eq!(
            SmoothedRun::from_metrics(&t, 60.0)
                .unwrap()
                .steps_to_threshold,
            None
        );
        // Fewer than 100 episodes in all: no final return over 100 episodes.
        let short = table(&[[1000.0, 3.0, 10.0], [2000.0, 99.0, 90.0]]);
        let run = SmoothedRun::from_metrics(&short, 50.0).unwrap();
        assert!(run.final_return.is_nan());
        assert_eq!(run.steps_to_threshold, None);
        assert!(SmoothedRun::from_metrics(&table(&[]), 1.0).is_err());
    }
}

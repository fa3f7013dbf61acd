//! One training run (teacher, student or baseline) of `epochs` PPO epochs done in sittings:
//! what it resumes from (its partial checkpoint, if of the same configuration), when it
//! checkpoints and when it stops. The teacher and the students both run this way.

use std::time::Instant;

use anyhow::Result;
use privrl_agents::{Agent, PpoConfig};
use serde::{Deserialize, Serialize};

use super::plan::KickstartPlan;
use crate::run::{MetricsWriter, RunDir};

/// What an interrupted run (student, baseline or teacher) needs to continue from its partial
/// checkpoint, besides the agent: the configuration it belongs to (a checkpoint of another
/// configuration is discarded), the epochs done and what the summary is built from.
#[derive(Debug, Serialize, Deserialize)]
pub(super) struct UnitProgress {
    pub(super) config: serde_json::Value,
    pub(super) epoch: usize,
    pub(super) curve: Vec<(f64, f64)>,
    pub(super) exhausted_at_epoch: Option<usize>,
}

/// One run of `epochs` PPO epochs done in sittings (`--checkpoint-every`, `--time-limit`): it
/// resumes from a partial checkpoint of the same configuration, checkpoints every `every`
/// epochs and when `deadline` has passed, and then stops. `every` = 0: no checkpoints (a run
/// without seeded epoch resets cannot be restored).
pub(super) struct Sitting<'a> {
    pub(super) run: &'a RunDir,
    pub(super) config: serde_json::Value,
    pub(super) epochs: usize,
    pub(super) every: usize,
    pub(super) deadline: Option<Instant>,
}

/// Epochs between checkpoints of a run with `ppo`: `--checkpoint-every`, or 0 (none) without
/// seeded epoch resets, since only those make an epoch boundary restorable.
pub(super) fn checkpoint_interval(plan: &KickstartPlan, ppo: &PpoConfig) -> usize {
    plan.checkpoint_every * usize::from(ppo.reseed_at_epoch_end)
}

impl Sitting<'_> {
    /// The metrics file and the progress to continue from: the last checkpoint's, with the
    /// agent loaded from it, or a fresh start (no epochs done) after `write_config`.
    pub(super) fn start(
        &self,
        agent: &mut dyn Agent,
        write_config: impl FnOnce() -> Result<()>,
    ) -> Result<(MetricsWriter, UnitProgress)> {
        let resumed = match self.every {
            0 => None,
            _ => self.run.load_partial::<UnitProgress>()?.filter(|(_, p)| {
                without_threshold(p.config.clone()) == self.config && p.epoch < self.epochs
            }),
        };
        match resumed {
            Some((dir, progress)) => {
                agent.load_checkpoint(&dir)?;
                tracing::info!(
                    "resuming {} after epoch {}",
                    self.run.path().display(),
                    progress.epoch
                );
                Ok((self.run.resume_metrics(progress.epoch)?, progress))
            }
            None => {
                self.run.clear_partial()?;
                write_config()?;
                let progress = UnitProgress {
                    config: self.config.clone(),
                    epoch: 0,
                    curve: Vec::new(),
                    exhausted_at_epoch: None,
                };
                Ok((self.run.metrics()?, progress))
            }
        }
    }

    /// After epoch `progress.epoch`: checkpoints if one is due or the deadline has passed, and
    /// says whether the run must stop now (checkpointed, before its last epoch).
    pub(super) fn end_epoch(&self, progress: &UnitProgress, agent: &dyn Agent) -> Result<bool> {
        if self.every == 0 || progress.epoch >= self.epochs {
            return Ok(false);
        }
        let stop = self.deadline.is_some_and(|d| Instant::now() >= d);
        if stop || progress.epoch.is_multiple_of(self.every) {
            self.run
                .save_partial(progress, |dir| Ok(agent.save_checkpoint(dir)?))?;
        }
        Ok(stop)
    }
}

/// A unit's configuration without the `threshold` that configurations written before the
/// teacher's episode cap held: the threshold does not change how a run trains.
pub(super) fn without_threshold(mut config: serde_json::Value) -> serde_json::Value {
    if let Some(map) = config.as_object_mut() {
        map.remove("threshold");
    }
    config
}

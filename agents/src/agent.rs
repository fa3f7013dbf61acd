//! What every agent shares: how it acts ([`ActMode`]), its episode log, its per-epoch stats,
//! checkpoint files, and the small [`Agent`] trait that `cargo xtask train` drives.

use std::path::Path;

use burn::module::Module;
use burn::record::{
    DoublePrecisionSettings, FullPrecisionSettings, NamedMpkBytesRecorder, NamedMpkFileRecorder,
    Record, Recorder,
};
use burn::tensor::backend::Backend;
use burn::tensor::{DType, Element};
use rand_chacha::ChaCha8Rng;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::error::AgentError;

/// How an agent picks an action.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum ActMode {
    /// Sample from the policy (or ε-greedy for DQN): what training does.
    Stochastic,
    /// The most likely action (arg max of the logits or Q-values): what evaluation does.
    Greedy,
}

/// Returns and lengths of finished episodes, with the environment step at which each ended.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct EpisodeLog {
    /// Undiscounted return of each finished episode, in order.
    pub returns: Vec<f64>,
    /// Length of each finished episode.
    pub lengths: Vec<usize>,
    /// Total environment steps (over all workers) when each episode ended.
    pub end_steps: Vec<u64>,
    /// Environment steps taken so far.
    pub env_steps: u64,
}

impl EpisodeLog {
    /// Records one finished episode ending at the current step count.
    pub(crate) fn record(&mut self, episode_return: f64, length: usize) {
        self.returns.push(episode_return);
        self.lengths.push(length);
        self.end_steps.push(self.env_steps);
    }

    /// Number of finished episodes.
    pub fn episodes(&self) -> usize {
        self.returns.len()
    }

    /// Mean return of the last `window` episodes (fewer if fewer have finished); `None` before
    /// the first episode ends.
    pub fn mean_recent_return(&self, window: usize) -> Option<f64> {
        let n = self.returns.len().min(window);
        (n > 0).then(|| self.returns[self.returns.len() - n..].iter().sum::<f64>() / n as f64)
    }

    /// The first episode count `k ≥ window` at which the mean return of episodes `k−window..k`
    /// reaches `threshold`, with the environment steps taken by then: the "solved at" point.
    pub fn first_solved(&self, window: usize, threshold: f64) -> Option<(usize, u64)> {
        if window == 0 || self.returns.len() < window {
            return None;
        }
        let mut sum: f64 = self.returns[..window].iter().sum();
        for k in window..=self.returns.len() {
            if k > window {
                sum += self.returns[k - 1] - self.returns[k - 1 - window];
            }
            if sum / window as f64 >= threshold {
                return Some((k, self.end_steps[k - 1]));
            }
        }
        None
    }
}

/// What an agent reports after one epoch: progress counters, recent returns, and the
/// algorithm's own statistics (losses, KL, ε, ...).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EpochStats {
    /// Epochs finished, starting at 1.
    pub epoch: u64,
    /// Environment steps so far.
    pub env_steps: u64,
    /// Finished episodes so far.
    pub episodes: u64,
    /// Gradient updates applied so far.
    pub updates: u64,
    /// Mean return of the last 100 episodes (NaN before the first one ends).
    pub mean_return_100: f64,
    /// Mean return of the episodes that ended in this epoch (NaN if none).
    pub epoch_return: f64,
    /// Algorithm-specific values, in a fixed order per algorithm.
    pub extra: Vec<(&'static str, f64)>,
}

impl EpochStats {
    /// Column of [`EpochStats::env_steps`] in [`EpochStats::row`] (and `metrics.csv`).
    pub const ENV_STEPS: &'static str = "env_steps";
    /// Column of [`EpochStats::episodes`].
    pub const EPISODES: &'static str = "episodes";
    /// Column of [`EpochStats::mean_return_100`].
    pub const MEAN_RETURN_100: &'static str = "mean_return_100";

    /// Builds the common part from an episode log; `first_episode` is the number of episodes
    /// that had finished when the epoch began.
    pub(crate) fn from_log(
        log: &EpisodeLog,
        epoch: u64,
        updates: u64,
        first_episode: usize,
    ) -> Self {
        let recent = &log.returns[first_episode.min(log.returns.len())..];
        Self {
            epoch,
            env_steps: log.env_steps,
            episodes: log.episodes() as u64,
            updates,
            mean_return_100: log.mean_recent_return(100).unwrap_or(f64::NAN),
            epoch_return: if recent.is_empty() {
                f64::NAN
            } else {
                recent.iter().sum::<f64>() / recent.len() as f64
            },
            extra: Vec::new(),
        }
    }

    /// The stats as `(column, value)` pairs, common columns first: one `metrics.csv` row.
    pub fn row(&self) -> Vec<(&'static str, f64)> {
        let mut row = vec![
            ("epoch", self.epoch as f64),
            (Self::ENV_STEPS, self.env_steps as f64),
            (Self::EPISODES, self.episodes as f64),
            ("updates", self.updates as f64),
            (Self::MEAN_RETURN_100, self.mean_return_100),
            ("epoch_return", self.epoch_return),
        ];
        row.extend(self.extra.iter().copied());
        row
    }
}

/// The loop-level interface of an agent: enough for `cargo xtask train` to run any algorithm.
///
/// Each algorithm also has its own `update(batch)` and `gradient(batch)` with its own batch
/// type; they are inherent methods, because the batches differ.
pub trait Agent {
    /// Short algorithm name (`ppo`, `dqn`, `reinforce`, `a3c`).
    fn algorithm(&self) -> &'static str;

    /// Picks an action for one flat observation.
    fn act(&mut self, obs: &[f32], mode: ActMode) -> usize;

    /// Interacts with the environment for one epoch and updates; see each algorithm for what
    /// an epoch is.
    fn train_epoch(&mut self) -> Result<EpochStats, AgentError>;

    /// Every finished training episode.
    fn episode_log(&self) -> &EpisodeLog;

    /// Writes the networks, optimizer states and generator state under `dir`.
    fn save_checkpoint(&self, dir: &Path) -> Result<(), AgentError>;

    /// Restores what [`Agent::save_checkpoint`] wrote; the agent must have been built with the
    /// same configuration.
    fn load_checkpoint(&mut self, dir: &Path) -> Result<(), AgentError>;
}

/// The recorder for checkpoint files of f32 (and lower-precision) backends: named MessagePack
/// at full precision. An f64 backend's checkpoints use [`DoublePrecisionSettings`] instead
/// ([`save_record`], [`load_record`], [`load_module`] choose by `B::FloatElem`): stored as f32,
/// an f64 run resumed from its checkpoint would not continue bit for bit.
pub(crate) type CheckpointRecorder = NamedMpkFileRecorder<FullPrecisionSettings>;

/// Whether `B` computes in f64, so that its checkpoints must keep f64.
fn stores_f64<B: Backend>() -> bool {
    <B::FloatElem as Element>::dtype() == DType::F64
}

pub(crate) fn checkpoint_error(path: &Path, error: impl std::fmt::Display) -> AgentError {
    AgentError::Checkpoint {
        path: path.to_path_buf(),
        message: error.to_string(),
    }
}

/// Saves `module` to `dir/name.mpk` (see [`save_record`] for the byte layout).
pub(crate) fn save_module<B: Backend, M: Module<B>>(
    module: &M,
    dir: &Path,
    name: &str,
) -> Result<(), AgentError> {
    save_record::<B, _>(module.clone().into_record(), dir, name)
}

/// Loads `dir/name.mpk` into `module`.
pub(crate) fn load_module<B: Backend, M: Module<B>>(
    module: M,
    dir: &Path,
    name: &str,
    device: &B::Device,
) -> Result<M, AgentError> {
    let path = dir.join(name);
    if stores_f64::<B>() {
        module.load_file(
            path.clone(),
            &NamedMpkFileRecorder::<DoublePrecisionSettings>::new(),
            device,
        )
    } else {
        module.load_file(path.clone(), &CheckpointRecorder::new(), device)
    }
    .map_err(|e| checkpoint_error(&path, e))
}

/// Saves any Burn record (a module or an optimizer state) to `dir/name.mpk`, as the
/// [`CheckpointRecorder`] would but with every map's entries sorted by key, so that equal
/// records give equal files. Burn keeps an optimizer's state in a hash map whose iteration
/// order follows a per-process random seed; written as is, two runs from one seed wrote
/// different bytes for the same state. The loader reads map entries in any order.
pub(crate) fn save_record<B: Backend, R: Record<B>>(
    record: R,
    dir: &Path,
    name: &str,
) -> Result<(), AgentError> {
    std::fs::create_dir_all(dir).map_err(|e| checkpoint_error(dir, e))?;
    let path = dir.join(format!("{name}.mpk"));
    let bytes = if stores_f64::<B>() {
        Recorder::<B>::record(
            &NamedMpkBytesRecorder::<DoublePrecisionSettings>::new(),
            record,
            (),
        )
    } else {
        Recorder::<B>::record(
            &NamedMpkBytesRecorder::<FullPrecisionSettings>::new(),
            record,
            (),
        )
    }
    .map_err(|e| checkpoint_error(&path, e))?;
    let mut value =
        rmpv::decode::read_value(&mut bytes.as_slice()).map_err(|e| checkpoint_error(&path, e))?;
    sort_maps(&mut value);
    let mut canonical = Vec::with_capacity(bytes.len());
    rmpv::encode::write_value(&mut canonical, &value).map_err(|e| checkpoint_error(&path, e))?;
    std::fs::write(&path, canonical).map_err(|e| checkpoint_error(&path, e))
}

/// Sorts every map in `value` by the MessagePack encoding of its keys, recursively.
fn sort_maps(value: &mut rmpv::Value) {
    match value {
        rmpv::Value::Map(entries) => {
            for (key, entry) in entries.iter_mut() {
                sort_maps(key);
                sort_maps(entry);
            }
            entries.sort_by_cached_key(|(key, _)| {
                let mut encoded = Vec::new();
                rmpv::encode::write_value(&mut encoded, key).expect("writing to a Vec cannot fail");
                encoded
            });
        }
        rmpv::Value::Array(items) => items.iter_mut().for_each(sort_maps),
        _ => {}
    }
}

/// Loads a record written by [`save_record`].
pub(crate) fn load_record<B: Backend, R: Record<B>>(
    dir: &Path,
    name: &str,
    device: &B::Device,
) -> Result<R, AgentError> {
    let path = dir.join(name);
    if stores_f64::<B>() {
        Recorder::<B>::load(
            &NamedMpkFileRecorder::<DoublePrecisionSettings>::new(),
            path.clone(),
            device,
        )
    } else {
        Recorder::<B>::load(&CheckpointRecorder::new(), path.clone(), device)
    }
    .map_err(|e| checkpoint_error(&path, e))
}

/// The state of an agent besides its networks: generator position, counters, episode log.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct AgentState {
    /// Seed of the agent's ChaCha8 generator.
    pub(crate) rng_seed: [u8; 32],
    /// Stream of the generator.
    pub(crate) rng_stream: u64,
    /// Word position of the generator (where the next number comes from).
    pub(crate) rng_word_pos: u128,
    /// Epochs finished.
    pub(crate) epoch: u64,
    /// Updates applied.
    pub(crate) updates: u64,
    /// Finished episodes.
    pub(crate) log: EpisodeLog,
    /// The seed of the environment's last reset, for agents that reset from a seed at every
    /// epoch boundary (`PpoConfig::reseed_at_epoch_end`): resuming resets a fresh environment
    /// from it. Absent in older checkpoints.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) env_seed: Option<u64>,
}

impl AgentState {
    /// Captures the generator and the counters.
    pub(crate) fn capture(rng: &ChaCha8Rng, epoch: u64, updates: u64, log: &EpisodeLog) -> Self {
        Self {
            rng_seed: rng.get_seed(),
            rng_stream: rng.get_stream(),
            rng_word_pos: rng.get_word_pos(),
            epoch,
            updates,
            log: log.clone(),
            env_seed: None,
        }
    }

    /// Records the seed of the environment's last reset (see [`AgentState::env_seed`]).
    pub(crate) fn with_env_seed(mut self, seed: Option<u64>) -> Self {
        self.env_seed = seed;
        self
    }

    /// The generator, positioned where it was captured.
    pub(crate) fn rng(&self) -> ChaCha8Rng {
        use rand::SeedableRng;
        let mut rng = ChaCha8Rng::from_seed(self.rng_seed);
        rng.set_stream(self.rng_stream);
        rng.set_word_pos(self.rng_word_pos);
        rng
    }

    /// Writes `dir/state.json`.
    pub(crate) fn save(&self, dir: &Path) -> Result<(), AgentError> {
        save_json(dir, "state.json", self)
    }

    /// Reads `dir/state.json`.
    pub(crate) fn load(dir: &Path) -> Result<Self, AgentError> {
        load_json(dir, "state.json")
    }
}

/// Writes `value` as JSON to `dir/file`, creating `dir`: the small state files of a checkpoint
/// (generator and counters, a DP engine's releases, a private teacher, a replay buffer).
pub(crate) fn save_json(dir: &Path, file: &str, value: &impl Serialize) -> Result<(), AgentError> {
    std::fs::create_dir_all(dir).map_err(|e| checkpoint_error(dir, e))?;
    let path = dir.join(file);
    let text = serde_json::to_string(value).map_err(|e| checkpoint_error(&path, e))?;
    std::fs::write(&path, text).map_err(|e| checkpoint_error(&path, e))
}

/// Reads `dir/file` as [`save_json`] wrote it.
pub(crate) fn load_json<T: DeserializeOwned>(dir: &Path, file: &str) -> Result<T, AgentError> {
    let path = dir.join(file);
    let text = std::fs::read_to_string(&path).map_err(|e| checkpoint_error(&path, e))?;
    serde_json::from_str(&text).map_err(|e| checkpoint_error(&path, e))
}

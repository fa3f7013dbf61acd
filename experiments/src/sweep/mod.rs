//! Sweeps: seed lists, shards, parallel jobs with progress bars, and merging shard outputs.
//!
//! Sharding layout: every shard writes its runs into the same `runs/<suite>/` tree (run names
//! are distinct) and, when it is done, a manifest `shard-<i>-of-<n>.json` listing the runs it
//! was assigned and which of them completed. [`merge_shards`] checks that all `n` manifests
//! are there and every run has a `summary.json`, then writes `runs/<suite>/merged.json`, from
//! which the suite redraws its tables and plots. An unsharded sweep is shard `0/1` and goes
//! through the same path.

mod jobs;
mod merge;
mod seeds;
mod shard;

pub use self::jobs::{
    progress_bar, progress_style, run_parallel, Job, JobOutcome, JobProgress, Outcomes,
};
pub use self::merge::{
    merge_shards, merge_shards_with, FailedRun, MergeMode, Merged, MergedRun, MissingRun,
    ShardManifest, MERGED_FILE,
};
pub use self::seeds::{parse_seeds, Seeds};
pub use self::shard::Shard;

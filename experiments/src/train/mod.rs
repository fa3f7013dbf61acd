//! `cargo xtask train`: trains PPO, DQN, REINFORCE or A3C on an environment and writes the
//! standard run directory per seed (`config.json`, `metrics.csv` with one row per epoch,
//! `summary.json`, a learning-curve plot), plus, for a sweep (`--seeds 0..5`), the median and
//! percentile band over seeds and a `report.md`.
//!
//! ```text
//! cargo xtask train --algo ppo --env CartPole-v1 --seed 0 --steps 300000
//! cargo xtask train --algo dqn --seeds 0..5 --steps 500000 --stop-when-solved
//! cargo xtask train --algo reinforce --seeds 0..5 --episodes 2000 --shard 0/2
//! ```
//!
//! Also the throughput measurements of `cargo xtask bench` ([`bench_ppo_steps_per_s`],
//! [`bench_dqn_updates_per_s`]) and the quickstart's short PPO run ([`quick_ppo`]).

mod args;
mod quick;
mod report;
mod seed;
mod throughput;

use anyhow::{bail, Result};

use self::report::{load_suite_results, write_sweep_report};
use self::seed::TrainTask;
use crate::backend::dispatch;
use crate::report::format_number;
use crate::run::{runs_root, suite_dir};
use crate::sweep::{merge_shards, ShardManifest};

pub use self::args::{AgentConfig, Algorithm, TrainArgs};
pub use self::quick::quick_ppo;
pub use self::seed::{SeedResult, TrainSummary};
pub use self::throughput::{
    bench_dp_ppo_step_cost, bench_dqn_updates_per_s, bench_ppo_steps_per_s, DpPpoStepCost,
    DpPpoStepTimes, DqnThroughput, PpoThroughput,
};

/// Runs `train` and prints where the results went.
pub fn run(args: TrainArgs) -> Result<()> {
    let config = AgentConfig::resolve(&args)?;
    let all_seeds: Vec<u64> = match &args.seeds {
        Some(seeds) => seeds.0.clone(),
        None => vec![args.seed],
    };
    let shard = args.shard.unwrap_or_default();
    let seeds = shard.select(all_seeds.iter().copied());
    if seeds.is_empty() {
        bail!(
            "--shard {shard} selects none of the {} seeds",
            all_seeds.len()
        );
    }
    let sweep = args.seeds.is_some();
    let results = dispatch(
        args.backend,
        TrainTask {
            args: args.clone(),
            config: config.clone(),
            seeds: seeds.clone(),
            root: runs_root(),
        },
    )?;
    let dir = suite_dir(&args.suite)?;
    if sweep {
        let outcomes = crate::sweep::Outcomes(
            results
                .iter()
                .map(|(name, r)| crate::sweep::JobOutcome {
                    name: name.clone(),
                    result: r.as_ref().map(|_| ()).map_err(|e| anyhow::anyhow!("{e:#}")),
                    elapsed: Default::default(),
                })
                .collect(),
        );
        ShardManifest::from_outcomes(&args.suite, shard, &outcomes).write(&dir)?;
    }
    let mut ok = Vec::new();
    let mut failed = Vec::new();
    for (name, result) in results {
        match result {
            Ok(r) => ok.push(r),
            Err(e) => failed.push(format!("  {name}: {e:#}")),
        }
    }
    for r in &ok {
        let s = &r.summary;
        println!(
            "{} {} seed {}: {} steps, {} episodes, final mean return (100) {}, solved at {} steps / {} episodes, {:.0} steps/s",
            s.algo,
            s.env,
            s.seed,
            s.env_steps,
            s.episodes,
            format_number(s.final_mean_return_100),
            s.solved_at_steps.map_or("-".into(), |v| v.to_string()),
            s.solved_at_episodes.map_or("-".into(), |v| v.to_string()),
            s.env_steps_per_s,
        );
    }
    if sweep && shard.count() > 1 {
        // The last shard to finish draws the report over every shard's runs.
        match merge_shards(&dir) {
            Ok(_) => {
                let all = load_suite_results(&dir, &args, &all_seeds)?;
                let path = write_sweep_report(&args, &dir, &all)?;
                println!(
                    "all {} shards done; wrote {}",
                    shard.count(),
                    path.display()
                );
            }
            Err(_) => println!(
                "shard {shard} done; the last shard to finish writes {}/report.md",
                dir.display()
            ),
        }
    } else if sweep && ok.len() > 1 {
        let path = write_sweep_report(&args, &dir, &ok)?;
        println!("wrote {}", path.display());
        if failed.is_empty() {
            merge_shards(&dir)?;
        }
    } else if let Some(r) = ok.first() {
        println!("plot: {}", r.plot.png.display());
    }
    if !failed.is_empty() {
        bail!(
            "{} of {} seeds failed:\n{}",
            failed.len(),
            seeds.len(),
            failed.join("\n")
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::BackendChoice;

    pub(super) fn args(algo: Algorithm) -> TrainArgs {
        TrainArgs {
            algo,
            env: "CartPole-v1".into(),
            seed: 0,
            seeds: None,
            steps: 1000,
            episodes: None,
            stop_when_solved: false,
            steps_per_epoch: None,
            config: None,
            checkpoint: false,
            backend: BackendChoice::default(),
            suite: "test".into(),
            shard: None,
            threads: 1,
            dp_ppo: Default::default(),
        }
    }
}

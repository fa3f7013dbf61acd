//! The quickstart's short PPO run (`cargo xtask quickstart`).

use std::path::Path;

use anyhow::Result;

use super::seed::TrainTask;
use super::{AgentConfig, Algorithm, SeedResult, TrainArgs, TrainSummary};
use crate::backend::{dispatch, BackendChoice};
use crate::report::plot::{LearningCurves, PlotFiles};
use crate::run::runs_root;
use crate::sweep::Seeds;

/// The quickstart's short PPO run: `steps` environment steps of PPO on CartPole-v1 with the
/// kickstarting paper's 1000 steps per epoch, seeds `seeds`, in `runs/<suite>/`. Returns the
/// per-seed summaries and the plot of the median curve.
pub fn quick_ppo(
    suite: &str,
    seeds: &[u64],
    steps: u64,
    threads: usize,
) -> Result<(Vec<TrainSummary>, PlotFiles)> {
    quick_ppo_in(&runs_root(), suite, seeds, steps, threads)
}

/// [`quick_ppo`] under the run root `root`.
fn quick_ppo_in(
    root: &Path,
    suite: &str,
    seeds: &[u64],
    steps: u64,
    threads: usize,
) -> Result<(Vec<TrainSummary>, PlotFiles)> {
    let args = TrainArgs {
        algo: Algorithm::Ppo,
        env: "CartPole-v1".into(),
        seed: seeds.first().copied().unwrap_or(0),
        seeds: Some(Seeds(seeds.to_vec())),
        steps,
        episodes: None,
        stop_when_solved: false,
        steps_per_epoch: Some(1000),
        config: None,
        checkpoint: false,
        backend: BackendChoice::default(),
        suite: suite.into(),
        shard: None,
        threads,
        dp_ppo: Default::default(),
    };
    let config = AgentConfig::resolve(&args)?;
    let results = dispatch(
        args.backend,
        TrainTask {
            args: args.clone(),
            config,
            seeds: seeds.to_vec(),
            root: root.to_path_buf(),
        },
    )?;
    let results: Vec<SeedResult> = results.into_iter().map(|(_, r)| r).collect::<Result<_>>()?;
    let plot = LearningCurves::new(format!(
        "PPO on CartPole-v1, {} seeds (median, 10th–90th percentile)",
        results.len()
    ))
    .y_label("mean return of the last 100 episodes")
    .series(
        "ppo",
        results.iter().map(|r| r.curve_by_steps.clone()).collect(),
    )
    .save(&root.join(suite).join("ppo-cartpole-v1-curve"))?;
    Ok((results.into_iter().map(|r| r.summary).collect(), plot))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::train::bench_dqn_updates_per_s;

    #[test]
    fn quick_ppo_and_dqn_bench_run() {
        let root = crate::run::tests::temp_dir("train-quick");
        let (summaries, plot) = quick_ppo_in(&root, "quick", &[0, 1], 2000, 1).unwrap();
        assert_eq!(summaries.len(), 2);
        assert!(plot.png.is_file());
        assert!(bench_dqn_updates_per_s(BackendChoice::default(), 5).unwrap() > 0.0);
    }
}

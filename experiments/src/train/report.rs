//! A seed sweep's report: every seed's runs read back (for a report over all shards), the
//! sweep's summary, the median curve with its percentile band and `report.md`.

use std::path::{Path, PathBuf};

use anyhow::Result;
use privrl_agents::EpochStats;
use serde::Serialize;

use super::seed::{curve_axis, run_name, SeedResult, TrainSummary};
use super::{Algorithm, TrainArgs};
use crate::report::plot::{median, LearningCurves, PlotFiles};
use crate::report::{format_number, Cell, Report};
use crate::run::write_json;

/// Reads back the runs of `seeds` from the suite directory (for a report over all shards).
pub(super) fn load_suite_results(
    dir: &Path,
    args: &TrainArgs,
    seeds: &[u64],
) -> Result<Vec<SeedResult>> {
    seeds
        .iter()
        .map(|&seed| {
            let run = dir.join(run_name(args.algo, &args.env, seed).as_str());
            let summary: TrainSummary = crate::run::read_json(&run.join(crate::run::SUMMARY_FILE))?;
            let metrics = crate::run::read_metrics(&run.join(crate::run::METRICS_FILE))?;
            let finite =
                |points: Vec<(f64, f64)>| points.into_iter().filter(|p| p.1.is_finite()).collect();
            Ok(SeedResult {
                summary,
                curve_by_steps: finite(
                    metrics.xy(EpochStats::ENV_STEPS, EpochStats::MEAN_RETURN_100)?,
                ),
                curve_by_episodes: finite(
                    metrics.xy(EpochStats::EPISODES, EpochStats::MEAN_RETURN_100)?,
                ),
                plot: PlotFiles {
                    svg: run.join("curve.svg"),
                    png: run.join("curve.png"),
                },
            })
        })
        .collect()
}

/// Sweep summary written next to the runs.
#[derive(Debug, Serialize)]
struct SweepSummary {
    algo: Algorithm,
    env: String,
    seeds: Vec<u64>,
    solved_seeds: usize,
    /// Median over seeds of the steps to solve (unsolved seeds count as not solved: the
    /// median is over all seeds, with unsolved ones treated as +∞).
    median_solved_at_steps: Option<f64>,
    median_solved_at_episodes: Option<f64>,
    median_final_mean_return_100: f64,
    median_env_steps_per_s: f64,
}

/// Median with unsolved seeds as +∞; `None` if that median is itself unsolved.
fn median_with_unsolved(values: &[Option<f64>]) -> Option<f64> {
    let mut v: Vec<f64> = values.iter().map(|x| x.unwrap_or(f64::INFINITY)).collect();
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let m = crate::report::plot::percentile(&v, 50.0);
    m.is_finite().then_some(m)
}

pub(super) fn write_sweep_report(
    args: &TrainArgs,
    dir: &Path,
    results: &[SeedResult],
) -> Result<PathBuf> {
    let stem = format!("{}-{}", args.algo, args.env.to_ascii_lowercase());
    let plot = sweep_plot(args, dir, &stem, results)?;
    let summary = sweep_summary(args, results);
    write_json(&dir.join(format!("{stem}-summary.json")), &summary)?;

    let mut report = Report::new(dir, &format!("{} on {}", args.algo, args.env));
    let threshold = results[0].summary.reward_threshold;
    report.paragraph(&format!(
        "{} seeds, up to {} environment steps each{}. \"Solved\" is the first point where the mean \
         return of the last 100 episodes reaches {}.",
        results.len(),
        args.steps,
        args.episodes.map_or(String::new(), |e| format!(" or {e} episodes")),
        threshold.map_or("the reward threshold".into(), format_number),
    ));
    seed_table(&mut report, results, &summary);
    report.plot(
        "Mean return of the last 100 episodes: median over seeds, 10th–90th percentile band",
        &plot,
    );
    report.reproduce([reproduce_command(args)]);
    report.write()
}

/// The median learning curve over seeds with its 10th–90th percentile band, saved in `dir`.
fn sweep_plot(
    args: &TrainArgs,
    dir: &Path,
    stem: &str,
    results: &[SeedResult],
) -> Result<PlotFiles> {
    let (x_label, _) = curve_axis(args.algo, &[], &[]);
    let curves = results
        .iter()
        .map(|r| {
            curve_axis(args.algo, &r.curve_by_steps, &r.curve_by_episodes)
                .1
                .to_vec()
        })
        .collect();
    LearningCurves::new(format!(
        "{} on {}: median and 10th–90th percentile over {} seeds",
        args.algo,
        args.env,
        results.len()
    ))
    .x_label(x_label)
    .y_label("mean return of the last 100 episodes")
    .series(args.algo.to_string(), curves)
    .save(&dir.join(format!("{stem}-curve")))
}

/// The sweep's medians over seeds.
fn sweep_summary(args: &TrainArgs, results: &[SeedResult]) -> SweepSummary {
    SweepSummary {
        algo: args.algo,
        env: args.env.clone(),
        seeds: results.iter().map(|r| r.summary.seed).collect(),
        solved_seeds: results
            .iter()
            .filter(|r| r.summary.solved_at_steps.is_some())
            .count(),
        median_solved_at_steps: median_with_unsolved(
            &results
                .iter()
                .map(|r| r.summary.solved_at_steps.map(|s| s as f64))
                .collect::<Vec<_>>(),
        ),
        median_solved_at_episodes: median_with_unsolved(
            &results
                .iter()
                .map(|r| r.summary.solved_at_episodes.map(|s| s as f64))
                .collect::<Vec<_>>(),
        ),
        median_final_mean_return_100: median(
            &results
                .iter()
                .map(|r| r.summary.final_mean_return_100)
                .collect::<Vec<_>>(),
        ),
        median_env_steps_per_s: median(
            &results
                .iter()
                .map(|r| r.summary.env_steps_per_s)
                .collect::<Vec<_>>(),
        ),
    }
}

/// One row per seed, then the medians.
fn seed_table(report: &mut Report, results: &[SeedResult], summary: &SweepSummary) {
    let cell = |v: Option<f64>| v.map_or(Cell::from("not solved"), Cell::from);
    let mut rows: Vec<Vec<Cell>> = results
        .iter()
        .map(|r| {
            let s = &r.summary;
            vec![
                Cell::from(s.seed),
                cell(s.solved_at_steps.map(|v| v as f64)),
                cell(s.solved_at_episodes.map(|v| v as f64)),
                Cell::from(s.final_mean_return_100),
                Cell::from(s.env_steps_per_s.round()),
            ]
        })
        .collect();
    rows.push(vec![
        Cell::from("median"),
        cell(summary.median_solved_at_steps),
        cell(summary.median_solved_at_episodes),
        Cell::from(summary.median_final_mean_return_100),
        Cell::from(summary.median_env_steps_per_s.round()),
    ]);
    report.table(
        &[
            "seed",
            "solved at (steps)",
            "solved at (episodes)",
            "final mean return (100)",
            "steps/s",
        ],
        rows,
    );
}

/// The command that reproduces the sweep.
fn reproduce_command(args: &TrainArgs) -> String {
    let seeds = args.seeds.as_ref().map_or(args.seed.to_string(), |s| {
        s.0.iter().map(u64::to_string).collect::<Vec<_>>().join(",")
    });
    format!(
        "cargo xtask train --algo {} --env {} --seeds {seeds} --steps {}{}{}",
        args.algo,
        args.env,
        args.steps,
        args.episodes
            .map_or(String::new(), |e| format!(" --episodes {e}")),
        if args.stop_when_solved {
            " --stop-when-solved"
        } else {
            ""
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unsolved_seeds_count_as_infinite_in_the_median() {
        assert_eq!(
            median_with_unsolved(&[Some(3.0), None, Some(1.0)]),
            Some(3.0)
        );
        assert_eq!(median_with_unsolved(&[Some(3.0), None, None]), None);
        assert_eq!(median_with_unsolved(&[]), None);
        assert_eq!(median(&[f64::NAN, 2.0, 4.0]), 3.0);
    }
}

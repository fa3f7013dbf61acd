//! `cargo xtask bench`: throughput tables in `runs/bench/`.

use anyhow::Result;
use clap::Args;
use privrl_bench::{
    env_steps_per_second, env_steps_per_second_allocating, vec_env_steps_per_second,
};
use privrl_envs::registry;
use serde::Serialize;

use crate::report::{Cell, Report};
use crate::run::{suite_dir, write_json};
use crate::sweep::progress_bar;

/// Arguments of `bench`.
#[derive(Args, Debug)]
pub struct BenchArgs {
    /// Environment steps per measurement (more steps, steadier numbers).
    #[arg(long, default_value_t = 5_000_000)]
    pub env_steps: u64,
    /// Copies of the environment in the VecEnv measurement.
    #[arg(long, default_value_t = 16)]
    pub num_envs: usize,
}

/// Steps per second of one environment, three ways.
#[derive(Debug, Serialize)]
pub struct EnvThroughput {
    /// Registered name.
    pub env: String,
    /// `step_into` through `Box<dyn Env>`, no allocation per step.
    pub steps_per_s: f64,
    /// `step`, which allocates the observation.
    pub allocating_steps_per_s: f64,
    /// `VecEnv::step_flat` over `num_envs` copies, summed over copies.
    pub vec_env_steps_per_s: f64,
}

/// Measures every registered environment single-threaded.
pub fn env_throughput(steps: u64, num_envs: usize) -> Result<Vec<EnvThroughput>> {
    let specs = registry();
    let bar = progress_bar(specs.len() as u64, "env throughput");
    let rows = specs
        .iter()
        .map(|spec| {
            bar.set_message(spec.name);
            let row = EnvThroughput {
                env: spec.name.to_string(),
                steps_per_s: env_steps_per_second(spec.name, steps, 0)?,
                allocating_steps_per_s: env_steps_per_second_allocating(spec.name, steps, 0)?,
                vec_env_steps_per_s: vec_env_steps_per_second(spec.name, num_envs, steps, 0)?,
            };
            bar.inc(1);
            Ok(row)
        })
        .collect::<Result<Vec<_>>>();
    bar.finish_and_clear();
    rows
}

/// The markdown table of [`env_throughput`].
pub fn env_throughput_table(report: &mut Report, rows: &[EnvThroughput], num_envs: usize) {
    let vec_header = format!("VecEnv ×{num_envs} (steps/s)");
    report.table(
        &[
            "environment",
            "step_into (steps/s)",
            "step (steps/s)",
            &vec_header,
        ],
        rows.iter()
            .map(|r| {
                vec![
                    Cell::from(r.env.as_str()),
                    Cell::from(r.steps_per_s.round()),
                    Cell::from(r.allocating_steps_per_s.round()),
                    Cell::from(r.vec_env_steps_per_s.round()),
                ]
            })
            .collect(),
    );
}

/// Runs the benchmarks and writes `runs/bench/report.md` and `runs/bench/bench.json`.
pub fn run(args: BenchArgs) -> Result<()> {
    let dir = suite_dir("bench")?;
    let envs = env_throughput(args.env_steps, args.num_envs)?;
    write_json(&dir.join("bench.json"), &envs)?;
    let mut report = Report::new(&dir, "privrl benchmarks");
    report
        .paragraph(&format!(
            "Single-threaded, release build, {} steps per measurement, random actions. \
             Criterion benches of the same: `cargo bench -p privrl-bench`.",
            args.env_steps
        ))
        .heading("Environment steps per second");
    env_throughput_table(&mut report, &envs, args.num_envs);
    report.reproduce(&[format!(
        "cargo xtask bench --env-steps {} --num-envs {}",
        args.env_steps, args.num_envs
    )]);
    let path = report.write()?;
    println!("{}", report.markdown());
    println!("wrote {}", path.display());
    Ok(())
}

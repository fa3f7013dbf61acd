//! `cargo xtask suite kickstart`: privacy-preserving kickstarting, Fig. 2 of Gohari et al.
//! (paper 000), with the teacher's privacy ledger.
//!
//! 1. A teacher-size PPO agent ((64, 64)) is trained for `teacher_epochs` and checkpointed in
//!    `runs/kickstart/teacher/` (reused on a rerun with the same configuration); its Lipschitz
//!    bound is computed once ([`privrl_agents::Teacher::from_actor`]).
//! 2. Students ((32, 32) PPO) and baselines train for `epochs` epochs per seed:
//!    (a) teacher-size and student-size PPO from scratch; (b) conventional kickstarting (exact
//!    teacher, λ = 0); (c) privacy-aware students (Dirichlet teacher, vanishing coefficients
//!    0.1 and 0.3, λ = 0.5; `--sweep` adds 0.1…0.9 and λ ∈ {0.1, 0.5, 1, 2}); (d)
//!    privacy-unaware students (λ = 0) with coefficients 0.3 and 0.9.
//! 3. The report: epochs until the student's epoch return reaches 90% of the way from a
//!    random policy's return to the teacher's final return, the speed-up against teacher-size
//!    PPO, final return, and the (ε, δ) spent by basic and advanced composition.
//!
//! Curves are the median over seeds with a central 85% band (7.5th–92.5th percentile): the
//! paper's "85th percentile" clouds, read as the band holding 85% of the seeds.

mod plan;
mod report;
mod settings;
mod students;
mod teacher;

use std::path::Path;

use anyhow::{ensure, Result};

use self::report::write_report;
use self::students::SuiteTask;
use crate::backend::dispatch;
use crate::run::{runs_root, write_json};
use crate::summary::SuiteOutcome;

pub use self::plan::{Exhausted, KickstartArgs, VanishingPer};

const SUITE: &str = "kickstart";

/// Runs the suite under the run root `root` and writes its report; returns the report's path.
fn run_in(root: &Path, args: &KickstartArgs) -> Result<SuiteOutcome> {
    let plan = args.plan();
    ensure!(plan.seeds >= 1, "--seeds must be at least 1");
    ensure!(plan.epochs >= 1, "--epochs must be at least 1");
    ensure!(
        plan.teacher_epochs >= 1,
        "--teacher-epochs must be at least 1"
    );
    let dir = root.join(SUITE);
    std::fs::create_dir_all(&dir)?;
    write_json(&dir.join("config.json"), &plan)?;
    let results = dispatch(
        plan.backend,
        SuiteTask {
            plan: plan.clone(),
            root: root.to_path_buf(),
            threads: args.threads,
        },
    )?;
    write_report(&plan, &results, &dir)
}

/// Runs `suite kickstart` and prints where the report went.
pub fn run(args: KickstartArgs) -> Result<SuiteOutcome> {
    let outcome = run_in(&runs_root(), &args)?;
    println!("wrote {}", outcome.report.display());
    Ok(outcome)
}

#[cfg(test)]
mod tests {
    use super::students::StudentSummary;
    use super::*;
    use crate::run::read_json;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        args: KickstartArgs,
    }

    #[test]
    fn a_tiny_suite_writes_runs_and_a_report() {
        let root = crate::run::tests::temp_dir("kickstart-suite");
        let mut args = Cli::parse_from([
            "kickstart",
            "--quick",
            "--seeds",
            "1",
            "--epochs",
            "2",
            "--teacher-epochs",
            "2",
            "--steps-per-epoch",
            "200",
            "--threads",
            "1",
        ])
        .args;
        let outcome = run_in(&root, &args).unwrap();
        let text = std::fs::read_to_string(&outcome.report).unwrap();
        assert!(
            outcome.headline.measured.contains("kickstarted against"),
            "{text}"
        );
        assert!(text.contains("privacy-aware, c = 0.3"), "{text}");
        assert!(text.contains("fig2c.png"));
        let run = root.join(SUITE).join("aware-c0.3-l0.5-seed0");
        for file in ["config.json", "metrics.csv", "summary.json", "curve.png"] {
            assert!(run.join(file).is_file(), "{file} missing");
        }
        let summary: StudentSummary = read_json(&run.join("summary.json")).unwrap();
        let privacy = summary.privacy.unwrap();
        assert_eq!(
            privacy.dirichlet_releases + privacy.uniform_releases,
            2 * 200
        );
        assert!(privacy.basic.epsilon > 0.0);
        // The teacher is reused on a rerun with the same configuration.
        args.epochs = Some(1);
        run_in(&root, &args).unwrap();
        assert!(root.join(SUITE).join("teacher/checkpoint").exists());
    }
}

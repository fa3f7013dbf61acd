//! `cargo xtask suite leakage`: how much QGI and RGI reconstruct when the shared gradient is
//! privatised, set beside the ε the defence buys and the utility the DP-SGD and PGC suites
//! measured at that strength.
//!
//! Every cell attacks the same room samples as `suite inversion`, on the same freshly
//! initialised victims (the DQN Q-network for QGI, the REINFORCE policy for RGI, setting S1),
//! with each single-sample gradient passed through a [`GradientMechanismConfig`] first.

mod cell;
mod headline;
mod plan;
mod plots;
mod report;
mod utility;

use std::path::Path;

use anyhow::{Context, Result};
use privrl_attacks::{InversionRow, Sample};
use privrl_envs::room::RoomSetting;
use privrl_privacy::GradientMechanismConfig;

use self::cell::{cell_name, CellResult, CellScores, VICTIM_TRAINING_SAMPLES};
use self::headline::headline;
use self::plan::LeakagePlan;
use self::report::write_report;
use self::utility::UtilityTable;
use crate::backend::dispatch;
use crate::run::{runs_root, suite_dir, RunDir};
use crate::suites::inversion::{reconstruction_sheet, room_samples, write_rows, Method};
use crate::summary::SuiteOutcome;
use crate::sweep::{run_parallel, Job};

pub(crate) use self::cell::LeakageJob;
pub use self::plan::LeakageArgs;

/// "Recognisable" means mean SSIM ≥ this on some image or mean bbox IoU ≥ [`IOU_THRESHOLD`].
pub const SSIM_THRESHOLD: f64 = 0.3;
/// See [`SSIM_THRESHOLD`].
pub const IOU_THRESHOLD: f64 = 0.5;

const METHODS: [Method; 2] = [Method::Qgi, Method::Rgi];

/// Runs the suite and writes `runs/leakage/report.md`; returns the report's path.
pub fn run(args: LeakageArgs) -> Result<SuiteOutcome> {
    suite_dir("leakage")?;
    run_in(&runs_root(), args)
}

/// [`run`] under the runs root `root`.
fn run_in(root: &Path, args: LeakageArgs) -> Result<SuiteOutcome> {
    let plan = args.plan()?;
    let dir = root.join("leakage");
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let (samples, _) = room_samples(
        RoomSetting::S1,
        plan.image_size,
        plan.samples,
        plan.seed,
        crate::suites::inversion::RoomSelection::First,
    )?;
    let jobs = jobs(&plan, &samples, victim_training(&plan)?);
    let outcomes = run_parallel(jobs, args.threads, |mut job, progress| {
        job.progress = Some(progress.bar(job.samples.len() as u64));
        let (method, defence, batch_size) = (job.method, job.defence, job.batch_size);
        Ok((method, defence, batch_size, dispatch(plan.backend, job)?))
    })?
    .into_ok()?;
    let (cells, batch_cells) = write_cells(root, &plan, &samples, outcomes)?;
    let utility = UtilityTable::read(
        &args
            .dpsgd_runs
            .clone()
            .unwrap_or_else(|| root.join("dpsgd")),
        &args.pgc_runs.clone().unwrap_or_else(|| root.join("pgc")),
    )?;
    let headline = headline(&cells);
    let report = write_report(
        &dir,
        &args,
        &plan,
        &cells,
        &batch_cells,
        &utility,
        &headline,
    )?;
    println!("wrote {}", report.display());
    Ok(SuiteOutcome { report, headline })
}

/// The victims' own training samples and steps, where `--victim-train-steps` asks for any.
fn victim_training(plan: &LeakagePlan) -> Result<Option<(Vec<Sample>, usize)>> {
    if plan.victim_train_steps == 0 {
        return Ok(None);
    }
    // Another seed: rooms apart from the attacked samples.
    let seed = plan.seed.wrapping_add(1);
    let (training, _) = room_samples(
        RoomSetting::S1,
        plan.image_size,
        VICTIM_TRAINING_SAMPLES,
        seed,
        crate::suites::inversion::RoomSelection::First,
    )?;
    Ok(Some((training, plan.victim_train_steps)))
}

/// One job per attack and defence, then QGI without a defence at every batch size above 1.
fn jobs(
    plan: &LeakagePlan,
    samples: &[Sample],
    victim_training: Option<(Vec<Sample>, usize)>,
) -> Vec<Job<LeakageJob>> {
    let mut jobs = Vec::new();
    for method in METHODS {
        for (index, defence) in plan.defences.iter().enumerate() {
            jobs.push(Job::new(
                cell_name(method, defence),
                LeakageJob {
                    method,
                    defence: *defence,
                    samples: samples.to_vec(),
                    image_size: plan.image_size,
                    iterations: plan.iterations,
                    tv_weight: plan.tv_weight,
                    seed: plan.seed,
                    noise: plan
                        .noise_rng
                        .mode()
                        .source(plan.seed ^ (0x1eaf << 16) ^ index as u64),
                    victim_training: victim_training.clone(),
                    batch_size: 1,
                    progress: None,
                },
            ));
        }
    }
    for &batch_size in plan.batch_sizes.iter().filter(|&&b| b > 1) {
        jobs.push(Job::new(
            format!("qgi-none-batch{batch_size}"),
            LeakageJob {
                method: Method::Qgi,
                defence: GradientMechanismConfig::None,
                samples: samples.to_vec(),
                image_size: plan.image_size,
                iterations: plan.iterations,
                tv_weight: plan.tv_weight,
                seed: plan.seed,
                noise: plan.noise_rng.mode().source(plan.seed),
                victim_training: victim_training.clone(),
                batch_size,
                progress: None,
            },
        ));
    }
    jobs
}

/// One attack's outcome: the method, the defence, the batch size and a row per sample.
type LeakageOutcome = (Method, GradientMechanismConfig, usize, Vec<InversionRow>);

/// The single-sample cells, and the batch cells with their batch size.
type Cells = (Vec<CellResult>, Vec<(usize, CellResult)>);

/// Writes every cell's run directory and returns the single-sample cells and the batch cells.
fn write_cells(
    root: &Path,
    plan: &LeakagePlan,
    samples: &[Sample],
    outcomes: Vec<(String, LeakageOutcome)>,
) -> Result<Cells> {
    let (mut cells, mut batch_cells) = (Vec::new(), Vec::new());
    for (name, (method, defence, batch_size, rows)) in outcomes {
        let run = RunDir::create_in(root, "leakage", &name)?;
        run.write_config(&(plan, &defence))?;
        write_rows(&run, &rows)?;
        reconstruction_sheet(
            &run.path().join("reconstructions.png"),
            method,
            RoomSetting::S1,
            samples,
            &rows,
            plan.image_size,
        )?;
        let cell = CellResult {
            method,
            epsilon: plan.epsilon(method, &defence),
            scores: CellScores::of(&rows),
            defence,
            rows,
        };
        if batch_size > 1 {
            batch_cells.push((batch_size, cell));
        } else {
            cells.push(cell);
        }
    }
    Ok((cells, batch_cells))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::BackendChoice;
    use privrl_privacy::Epsilon;

    pub(super) fn tiny_args() -> LeakageArgs {
        // Two cells at a time: autodiff sections make concurrent cells safe, and each cell's
        // numbers must not depend on what runs beside it.
        let mut args = LeakageArgs::quick(3, BackendChoice::default(), 2);
        args.samples = Some(2);
        args.image_size = Some(8);
        args.iterations = Some(4);
        args.dp_sgd_noise = vec![0.1];
        args.ldp_epsilon = vec![Epsilon::finite(10.0).unwrap()];
        args
    }

    #[test]
    fn a_tiny_suite_writes_every_cell_a_table_and_plots() {
        let root = crate::run::tests::temp_dir("leakage-suite");
        let mut args = tiny_args();
        args.batch_sizes = vec![1, 2];
        let outcome = run_in(&root, args).unwrap();
        let markdown = std::fs::read_to_string(&outcome.report).unwrap();
        assert!(markdown.contains("## Headline"), "{markdown}");
        assert!(
            outcome
                .headline
                .measured
                .contains("DP-SGD at the largest σ (DP-SGD C=1 σ=0.1)"),
            "{}",
            outcome.headline.measured
        );
        // 2 attacks × (none, clip, 1 σ, Laplace and PRS at 1 ε).
        let rows = markdown
            .lines()
            .filter(|l| l.starts_with("| QGI") || l.starts_with("| RGI"))
            .count();
        assert_eq!(rows, 10, "{markdown}");
        for name in [
            "qgi-none",
            "rgi-dp-sgd-sigma0.1",
            "qgi-laplace-eps10",
            "rgi-prs-eps10",
            "qgi-none-batch2",
        ] {
            crate::run::tests::assert_run_files(
                &root.join("leakage").join(name),
                &["reconstructions.png"],
            );
        }
        // DP-SGD: one plot per attack (ε per transition for QGI, per episode for RGI).
        for plot in ["dp-sgd-qgi", "dp-sgd-rgi", "laplace", "prs"] {
            assert!(
                root.join("leakage")
                    .join(format!("leakage-{plot}.png"))
                    .is_file(),
                "{plot}"
            );
        }
        assert!(!root.join("leakage/leakage-dp-sgd.png").exists());
        assert!(markdown.contains(" per episode |"), "{markdown}");
        assert!(markdown.contains(" per transition |"), "{markdown}");
        assert!(markdown.contains("unrecognisable"), "{markdown}");
        // The batch table: batch sizes 1 and 2, each with the score columns.
        assert!(
            markdown.contains("## Batch size (QGI, no defence)"),
            "{markdown}"
        );
        assert!(markdown.contains("--batch-sizes 1,2"), "{markdown}");
    }
}

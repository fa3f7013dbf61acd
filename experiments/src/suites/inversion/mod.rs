//! `cargo xtask suite inversion`: gradient inversion on the active-perception rooms (QGI and
//! RGI, settings S1 and S2), Table I of Li, Ding, Zhao with the vector, action and
//! supervision-signal results of Section V-A.

mod attack;
mod baseline;
mod convergence;
mod gradients_file;
mod headline;
mod job;
mod method;
mod model_job;
mod plan;
mod report;
mod run_files;
mod samples_dir;
mod verdict;

use anyhow::{Context, Result};
use privrl_envs::room::RoomSetting;

use self::report::write_report;
use crate::backend::dispatch;
use crate::run::suite_dir;
use crate::summary::SuiteOutcome;
use crate::sweep::{run_parallel, Job};

pub use self::attack::{run_attack, AttackArgs, SettingArg};
pub(crate) use self::baseline::{flat_scores, recovered, BaselineScores};
pub use self::gradients_file::{model_metadata, CONFIG_KEY, MODEL_KEY};
pub(crate) use self::job::{room_samples, victim_config, InversionJob};
pub use self::method::Method;
pub use self::model_job::ModelArg;
pub(crate) use self::plan::InversionPlan;
pub(crate) use self::plan::ENTROPY_WEIGHT;
pub use self::plan::{
    InversionArgs, NormalisationArg, RoomSelection, VictimWidth, DEFAULT_ATTACK_BATCH,
};
pub(crate) use self::report::{failure_rate, summary, FAILURE_NOTE};
use self::run_files::AttackCell;
pub(crate) use self::run_files::{reconstruction_sheet, write_rows};
pub use self::samples_dir::{
    read_plain_images, read_samples_dir, DrawnLabel, SampleFile, SamplesDirError, UserSamples,
    DRAWN_SIGNAL,
};
pub(crate) use self::verdict::RECOVERY_MARGIN_DB;

/// Runs the suite and writes `report.md` beside the attack cells' run directories (in
/// `--results-dir`, default `runs/inversion`); returns the report's path. Each cell is written
/// as soon as its attack finishes, and cells already finished with the same plan are read
/// back, so the report always covers every planned cell.
pub fn run(args: InversionArgs) -> Result<SuiteOutcome> {
    if let Some(budgets) = args.convergence.clone() {
        return convergence::run(&args, &budgets);
    }
    let attacked = attack_cells(&args)?;
    write_report(
        attacked.dir,
        &args,
        attacked.plan,
        attacked.outcomes,
        attacked.truths,
        attacked.room_types,
    )
}

/// What [`attack_cells`] gives the reports: the plan, every cell's rows in plan order, the
/// samples of each setting and their room types.
pub(crate) struct AttackedCells {
    dir: std::path::PathBuf,
    plan: InversionPlan,
    outcomes: Vec<(AttackCell, Vec<privrl_attacks::InversionRow>)>,
    truths: Vec<(RoomSetting, Vec<privrl_attacks::Sample>)>,
    room_types: Vec<String>,
}

/// Attacks every planned cell not finished yet in `--results-dir` (default
/// `runs/inversion`), writing each as it finishes, and reads back the others.
fn attack_cells(args: &InversionArgs) -> Result<AttackedCells> {
    let plan = args.plan();
    let dir = match &args.results_dir {
        Some(dir) => {
            std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
            dir.clone()
        }
        None => suite_dir("inversion")?,
    };
    let mut cells = Vec::new();
    let mut room_types = Vec::new();
    let mut truths = Vec::new();
    let widths = args.victim_widths()?;
    for setting in args.room_settings()? {
        let (samples, types) = plan.room_samples(setting)?;
        room_types = types;
        truths.push((setting, samples));
        for (w, &width) in widths.iter().enumerate() {
            let mut methods = vec![Method::Qgi, Method::Rgi];
            // Table II's ablation on the first (main) victim only.
            if setting == RoomSetting::S1 && !args.skip_ablations && w == 0 {
                methods.extend(Method::ABLATIONS);
            }
            cells.extend(methods.into_iter().map(|method| AttackCell {
                method,
                setting,
                width,
            }));
        }
    }
    let truth_of = |setting| {
        truths
            .iter()
            .find(|(s, _)| *s == setting)
            .map(|(_, samples)| samples.as_slice())
            .unwrap_or(&[])
    };
    let mut finished = Vec::new();
    let mut jobs = Vec::new();
    for cell in &cells {
        let run = cell.run_dir(&dir, plan.seed)?;
        if let Some(rows) = cell.finished_rows(&run, &plan, args.normalisation)? {
            finished.push((*cell, rows));
            continue;
        }
        let name = format!(
            "{} {:?} {}",
            cell.method.name(),
            cell.setting,
            cell.width.label()
        );
        let job = InversionJob {
            plan: plan.clone(),
            method: cell.method,
            setting: cell.setting,
            samples: truth_of(cell.setting).to_vec(),
            batch_size: 1,
            attack_batch: args.attack_batch,
            width: cell.width,
            normalisation: args.normalisation.of(cell.setting),
        };
        jobs.push(Job::new(name, (*cell, run, job)));
    }
    if !finished.is_empty() {
        println!(
            "{} of {} attack cells already finished in {}; attacking the other {}",
            finished.len(),
            cells.len(),
            dir.display(),
            jobs.len()
        );
    }
    let attacked = run_parallel(jobs, args.threads, |(cell, run, job), _| {
        let rows = dispatch(plan.backend, job)?;
        cell.write(
            &run,
            &plan,
            args.normalisation,
            truth_of(cell.setting),
            &rows,
            args.attack_batch,
        )?;
        Ok((cell, rows))
    })?
    .into_ok()?;
    finished.extend(attacked.into_iter().map(|(_, outcome)| outcome));
    // The report lists the cells in plan order, however they finished.
    finished.sort_by_key(|(cell, _)| cells.iter().position(|c| c == cell));
    Ok(AttackedCells {
        dir,
        plan,
        outcomes: finished,
        truths,
        room_types,
    })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub(crate) use super::report::tests::row;

    use crate::backend::BackendChoice;

    /// `samples` samples at 8 px, 3 iterations per stage.
    pub(super) fn tiny_plan(samples: usize) -> InversionPlan {
        InversionPlan {
            samples,
            image_size: 8,
            iterations: 3,
            tv_weight: 0.1,
            seed: 0,
            backend: BackendChoice::default(),
            entropy_weight: ENTROPY_WEIGHT,
            rooms: super::plan::RoomSelection::First,
        }
    }

    #[test]
    fn an_interrupted_suite_resumes_from_its_finished_cells() {
        let dir = crate::run::tests::temp_dir("inversion-resume");
        let results = dir.join("inversion");
        let args = InversionArgs {
            quick: true,
            samples: Some(2),
            image_size: Some(8),
            iterations: Some(3),
            tv_weight: None,
            seed: 0,
            backend: BackendChoice::default(),
            skip_ablations: false,
            victims: None,
            normalisation: NormalisationArg::Paper,
            threads: 2,
            settings: None,
            convergence: None,
            results_dir: Some(results.clone()),
            rooms: super::plan::RoomSelection::Balanced,
            attack_batch: 2,
        };
        let report = run(args.clone()).unwrap().report;
        let text = std::fs::read_to_string(&report).unwrap();
        // Table I's baselines and the magnitude term's paired comparison are in the report.
        assert!(
            text.contains("baseline: flat at the true mean (oracle)"),
            "{text}"
        );
        assert!(text.contains("The magnitude term"), "{text}");
        assert!(text.contains("--results-dir"), "{text}");
        // Table II's and Fig. 4's claims are judged (2 samples: too few for a verdict), and
        // the ablation table counts recovered images against the flat oracle's row.
        assert!(
            text.contains("Table II, \"our method shows the best results\""),
            "{text}"
        );
        assert!(
            text.contains("Fig. 4, \"the mean IoU is below 0.1"),
            "{text}"
        );
        assert!(text.contains("| QGI vs DLG | bbox IoU |"), "{text}");
        assert!(text.contains("depth recovered"), "{text}");
        // Balanced rooms: one bathroom and one bedroom, and the headers say so.
        assert!(text.contains("bathroom (n = 1)"), "{text}");
        assert!(text.contains("kitchen (n = 0)"), "{text}");
        assert!(!text.contains("--rooms first"), "{text}");
        let config: serde_json::Value =
            crate::run::read_json(&results.join("qgi-s1-seed0/config.json")).unwrap();
        assert_eq!(config["plan"]["rooms"], "balanced");
        assert_eq!(config["attack_batch"], 2);
        // Seven S1 cells on the paper's victim (QGI, RGI, five ablations) and two in S2.
        let cells: Vec<_> = std::fs::read_dir(&results)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.join("summary.json").is_file())
            .collect();
        assert_eq!(cells.len(), 9, "{cells:?}");
        let qgi = results.join("qgi-s1-seed0");
        let config: serde_json::Value = crate::run::read_json(&qgi.join("config.json")).unwrap();
        assert_eq!(config["method"], "Qgi");
        let kept = std::fs::read(qgi.join("summary.json")).unwrap();
        // Cut one cell short: the rerun attacks it alone and reads the others back.
        let rgi = results.join("rgi-s2-seed0");
        let before: Vec<privrl_attacks::InversionRow> =
            crate::run::read_json(&rgi.join("summary.json")).unwrap();
        std::fs::remove_file(rgi.join("summary.json")).unwrap();
        let modified = std::fs::metadata(qgi.join("summary.json"))
            .unwrap()
            .modified()
            .unwrap();
        run(args.clone()).unwrap();
        assert_eq!(std::fs::read(qgi.join("summary.json")).unwrap(), kept);
        assert_eq!(
            std::fs::metadata(qgi.join("summary.json"))
                .unwrap()
                .modified()
                .unwrap(),
            modified,
            "a finished cell was rewritten"
        );
        let after: Vec<privrl_attacks::InversionRow> =
            crate::run::read_json(&rgi.join("summary.json")).unwrap();
        let scores = |rows: &[privrl_attacks::InversionRow]| {
            rows.iter()
                .map(|r| (r.depth.map(|s| s.psnr.to_bits()), r.reward_abs_error))
                .collect::<Vec<_>>()
        };
        assert_eq!(scores(&after), scores(&before), "same seed, same scores");
        // Another attack batch is read back (cells attacked one at a time before the flag
        // stay valid): nothing is attacked again.
        run(InversionArgs {
            attack_batch: 1,
            ..args.clone()
        })
        .unwrap();
        assert_eq!(
            std::fs::metadata(qgi.join("summary.json"))
                .unwrap()
                .modified()
                .unwrap(),
            modified,
            "a cell finished at another attack batch was attacked again"
        );
        // Another plan is not read back: every cell runs again.
        let other = InversionArgs {
            iterations: Some(4),
            ..args
        };
        run(other).unwrap();
        let config: serde_json::Value = crate::run::read_json(&qgi.join("config.json")).unwrap();
        assert_eq!(config["plan"]["iterations"], 4);
    }
}

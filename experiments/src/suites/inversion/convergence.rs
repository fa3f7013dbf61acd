//! `suite inversion --convergence N1,N2,...`: the scores against the iteration budget, to
//! choose the budget of a table from other samples than the ones it judges (issue: the
//! paper runs 2×10⁴ iterations per stage; privrl's 32 px tables run 10³).
//!
//! Each budget is a full run of the plan with `--iterations N` in
//! `<results-dir>/iterations-<N>/` (resumable cells, its own report; the comparison is
//! `<results-dir>/report.md`), so a budget is the
//! attack's whole schedule at that length, not a snapshot of a longer run: the learning-rate
//! decay depends on the budget.

use std::path::Path;

use anyhow::{Context, Result};
use privrl_attacks::InversionRow;
use privrl_envs::room::RoomSetting;

use super::baseline::{flat_scores, recovered, BaselineScores};
use super::plan::InversionArgs;
use super::report::{reproduce_command, summary};
use super::run_files::AttackCell;
use super::{attack_cells, write_report};
use crate::report::plot::{mean, median, Line, LineChart};
use crate::report::{format_number, Cell, Report};
use crate::summary::{Headline, SuiteOutcome};

/// A budget is where the curve has **flattened** when the next budget adds less than this
/// to the mean depth PSNR (dB) of every attack: the rule the report applies to name the
/// smallest such budget.
pub(crate) const FLAT_GAIN_DB: f64 = 0.5;

/// One budget's cells.
struct Budget {
    iterations: usize,
    outcomes: Vec<(AttackCell, Vec<InversionRow>)>,
    /// The flat oracle's scores per setting and sample.
    flat: Vec<(RoomSetting, Vec<BaselineScores>)>,
    image_size: usize,
}

fn flat_depth_psnr(scores: &[BaselineScores]) -> Vec<f64> {
    scores
        .iter()
        .filter_map(|(_, depth)| depth.map(|d| d.psnr))
        .collect()
}

fn depth_psnr(rows: &[InversionRow]) -> Vec<f64> {
    rows.iter()
        .filter(|r| !r.failed)
        .filter_map(|r| r.depth.map(|s| s.psnr))
        .collect()
}

/// Runs the plan at every budget of `budgets` and writes `convergence.md`.
pub(super) fn run(args: &InversionArgs, budgets: &[usize]) -> Result<SuiteOutcome> {
    anyhow::ensure!(
        !budgets.is_empty() && budgets.iter().all(|&n| n > 0),
        "--convergence needs iteration budgets >= 1, got {budgets:?}"
    );
    let mut sorted = budgets.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    anyhow::ensure!(
        sorted.len() == budgets.len(),
        "--convergence names a budget twice: {budgets:?}"
    );
    let root = match &args.results_dir {
        Some(dir) => dir.clone(),
        None => crate::run::suite_dir("inversion")?.join("convergence"),
    };
    std::fs::create_dir_all(&root).with_context(|| format!("creating {}", root.display()))?;
    let mut done = Vec::new();
    for &iterations in &sorted {
        let budget_args = InversionArgs {
            iterations: Some(iterations),
            convergence: None,
            results_dir: Some(root.join(format!("iterations-{iterations}"))),
            ..args.clone()
        };
        let attacked = attack_cells(&budget_args)?;
        let flat = attacked
            .truths
            .iter()
            .map(|(setting, samples)| {
                let scores = samples
                    .iter()
                    .map(|s| flat_scores(s, attacked.plan.image_size))
                    .collect::<Result<Vec<_>>>()?;
                Ok((*setting, scores))
            })
            .collect::<Result<Vec<_>>>()?;
        let image_size = attacked.plan.image_size;
        let outcomes = attacked.outcomes.clone();
        write_report(
            attacked.dir,
            &budget_args,
            attacked.plan,
            attacked.outcomes,
            attacked.truths,
            attacked.room_types,
        )?;
        done.push(Budget {
            iterations,
            outcomes,
            flat,
            image_size,
        });
    }
    write_convergence_report(&root, args, &done)
}

/// The smallest budget after which no attack's mean depth PSNR gains [`FLAT_GAIN_DB`] more
/// at the next budget; `None` if the largest budget still gains (or there is one budget).
fn flattened_at(curves: &[Vec<(f64, f64)>]) -> Option<usize> {
    let budgets = curves.first()?.len();
    (0..budgets.saturating_sub(1))
        .find(|&i| {
            curves
                .iter()
                .all(|curve| (i..budgets - 1).all(|j| curve[j + 1].1 - curve[j].1 < FLAT_GAIN_DB))
        })
        .map(|i| curves[0][i].0 as usize)
}

fn write_convergence_report(
    root: &Path,
    args: &InversionArgs,
    budgets: &[Budget],
) -> Result<SuiteOutcome> {
    let mut report = Report::new(
        root,
        "Gradient inversion: scores against the iteration budget",
    );
    let first = &budgets[0];
    report.paragraph(&format!(
        "Each budget N is a full run of the attack with N iterations per stage (its learning-rate \
         schedule spans N), on the same samples and victims: `iterations-N/report.md`. {} \
         samples per cell, {} px, seed {}. A budget is where the curve has **flattened** when \
         no later budget adds {FLAT_GAIN_DB} dB or more to any attack's mean depth PSNR; the \
         tables it chooses run on other samples (another seed) than these.",
        first.outcomes.first().map_or(0, |(_, rows)| rows.len()),
        first.image_size,
        args.seed
    ));
    let mut table = Vec::new();
    let mut lines = Vec::new();
    let mut curves = Vec::new();
    for (cell, _) in &first.outcomes {
        let mut curve = Vec::new();
        for budget in budgets {
            let Some((_, rows)) = budget.outcomes.iter().find(|(c, _)| c == cell) else {
                continue;
            };
            let flat = budget
                .flat
                .iter()
                .find(|(s, _)| *s == cell.setting)
                .map_or(&[][..], |(_, scores)| scores.as_slice());
            let losses: Vec<f64> = rows
                .iter()
                .filter_map(|r| r.final_loss)
                .filter(|l| l.is_finite())
                .collect();
            curve.push((budget.iterations as f64, mean(&depth_psnr(rows))));
            table.push(vec![
                Cell::from(format!(
                    "{} {:?}, {}",
                    cell.method.name(),
                    cell.setting,
                    cell.width.label()
                )),
                Cell::from(budget.iterations.to_string()),
                Cell::from(summary(rows, |r| r.depth.map(|s| s.psnr))),
                Cell::from(summary(rows, |r| r.depth.map(|s| s.ssim))),
                Cell::from(format_number(mean(&flat_depth_psnr(flat)))),
                Cell::from(format!("{}/{}", recovered(rows, flat, true), rows.len())),
                Cell::from(summary(rows, |r| r.vector_iou)),
                Cell::from(if losses.is_empty() {
                    "-".into()
                } else {
                    format_number(median(&losses))
                }),
                Cell::from(summary(rows, |r| Some(r.attack_ms / 1e3))),
            ]);
        }
        lines.push(Line::new(
            format!("{} {:?}", cell.method.name(), cell.setting),
            curve.clone(),
        ));
        curves.push(curve);
    }
    for (setting, scores) in &first.flat {
        let level = mean(&flat_depth_psnr(scores));
        let xs = budgets.iter().map(|b| b.iterations as f64);
        lines.push(Line::new(
            format!("flat at the true mean, {setting:?}"),
            xs.map(|x| (x, level)).collect(),
        ));
    }
    let flattened = flattened_at(&curves);
    report
        .paragraph(&match flattened {
            Some(n) => format!(
                "Flattened at **{n} iterations per stage**: no later budget adds \
                 {FLAT_GAIN_DB} dB to any attack's mean depth PSNR."
            ),
            None => format!(
                "Not flattened: the largest budget still adds {FLAT_GAIN_DB} dB or more to an \
                 attack's mean depth PSNR (or only one budget ran)."
            ),
        })
        .table(
            &[
                "attack",
                "iterations per stage",
                "depth PSNR",
                "depth SSIM",
                "flat oracle PSNR",
                "recovered (≥ flat + 3 dB)",
                "bbox IoU",
                "final matching loss (median)",
                "seconds / sample",
            ],
            table,
        );
    let files = lines
        .into_iter()
        .fold(
            LineChart::new(format!(
                "Depth PSNR against the budget, {} px",
                first.image_size
            ))
            .x_label("iterations per stage")
            .y_label("mean depth PSNR (dB)")
            .log_x(),
            LineChart::line,
        )
        .save(&root.join("convergence"))?;
    report.plot("Mean depth PSNR against iterations per stage", &files);
    let budgets: Vec<String> = budgets.iter().map(|b| b.iterations.to_string()).collect();
    report.reproduce([format!(
        "{} --convergence {}",
        reproduce_command(args, &args.plan()),
        budgets.join(",")
    )]);
    let path = report.write()?;
    println!("wrote {}", path.display());
    Ok(SuiteOutcome {
        report: path,
        headline: Headline {
            effect: "the attack's scores flatten within the budgets run".into(),
            measured: match flattened {
                Some(n) => format!("flattened at {n} iterations per stage"),
                None => "not flattened within the budgets run".into(),
            },
            visible: flattened.is_some(),
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_budget_where_every_curve_stops_gaining() {
        let a = vec![(1e3, 20.0), (4e3, 23.0), (2e4, 23.4)];
        let b = vec![(1e3, 18.0), (4e3, 18.2), (2e4, 18.3)];
        // a gains 3 dB from 1000 to 4000, then 0.4: flattened at 4000 for both.
        assert_eq!(flattened_at(&[a.clone(), b.clone()]), Some(4000));
        // A curve that still gains 0.5 dB at the end: not flattened.
        let c = vec![(1e3, 18.0), (4e3, 18.2), (2e4, 18.7)];
        assert_eq!(flattened_at(&[a, c]), None);
        // Flat from the start.
        assert_eq!(flattened_at(&[b]), Some(1000));
        assert_eq!(flattened_at(&[vec![(1e3, 1.0)]]), None);
    }

    #[test]
    fn a_convergence_run_writes_one_run_per_budget_and_compares_them() {
        let dir = crate::run::tests::temp_dir("inversion-convergence");
        let args = InversionArgs {
            quick: true,
            samples: Some(1),
            image_size: Some(8),
            iterations: None,
            tv_weight: None,
            seed: 0,
            backend: crate::backend::BackendChoice::default(),
            skip_ablations: true,
            victims: None,
            normalisation: super::super::NormalisationArg::Paper,
            threads: 2,
            settings: Some(vec![super::super::SettingArg::S2]),
            convergence: Some(vec![3, 2]),
            results_dir: Some(dir.join("convergence")),
            rooms: super::super::RoomSelection::Balanced,
            attack_batch: super::super::DEFAULT_ATTACK_BATCH,
        };
        let outcome = run(&args, &[3, 2]).unwrap();
        let text = std::fs::read_to_string(&outcome.report).unwrap();
        for n in [2, 3] {
            let cell = dir.join(format!("convergence/iterations-{n}/qgi-s2-seed0"));
            let config: serde_json::Value =
                crate::run::read_json(&cell.join("config.json")).unwrap();
            assert_eq!(config["plan"]["iterations"], n);
            assert!(dir
                .join(format!("convergence/iterations-{n}/report.md"))
                .is_file());
        }
        // Budgets in increasing order, both attacks of S2, the flat oracle beside them.
        let first = text.find("| QGI S2, paper width | 2 |").expect(&text);
        let second = text.find("| QGI S2, paper width | 3 |").expect(&text);
        assert!(first < second);
        assert!(text.contains("| RGI S2, paper width | 2 |"), "{text}");
        assert!(dir.join("convergence/convergence.png").is_file());
        assert!(text.contains("--convergence 2,3"), "{text}");
        // A budget named twice or a zero budget is refused by name.
        assert!(run(&args, &[2, 2]).is_err());
        assert!(run(&args, &[0]).is_err());
    }
}

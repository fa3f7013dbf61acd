//! The suite's report: the privacy, utility and leakage table, the batch-size table, where
//! reconstruction stops being recognisable, the plots and the command that reproduces it.

use std::path::{Path, PathBuf};

use anyhow::Result;
use privrl_envs::room::NUM_ACTIONS;
use privrl_privacy::GradientMechanismConfig;

use super::cell::{cells_of, CellResult, VICTIM_BATCH, VICTIM_LR, VICTIM_TRAINING_SAMPLES};
use super::plan::{LeakageArgs, LeakagePlan};
use super::plots::family_plot;
use super::utility::UtilityTable;
use super::{IOU_THRESHOLD, METHODS, SSIM_THRESHOLD};
use crate::report::{format_number, Cell, Report};
use crate::suites::inversion::{failure_rate, summary, Method, FAILURE_NOTE};
use crate::summary::Headline;

/// Writes `report.md` and its plots in `dir`; returns the report's path.
pub(super) fn write_report(
    dir: &Path,
    args: &LeakageArgs,
    plan: &LeakagePlan,
    cells: &[CellResult],
    batch_cells: &[(usize, CellResult)],
    utility: &UtilityTable,
    headline: &Headline,
) -> Result<PathBuf> {
    let mut report = Report::new(
        dir,
        "Leakage: gradient inversion against privatised gradients",
    );
    report.paragraph(&plan.noise_rng.report_line());
    report.paragraph(&method_paragraph(args, plan));
    report.paragraph(&crate::report::PrivacyScope::DpSgd.sentence());
    report.paragraph(&format!(
        "A reconstruction counts as **unrecognisable** when the mean SSIM of both images is \
         below {SSIM_THRESHOLD} and the mean bounding-box IoU is below {IOU_THRESHOLD}."
    ));
    utility_sources(&mut report, utility);
    leakage_table(&mut report, cells, utility);
    batch_size_table(&mut report, cells, batch_cells);
    thresholds_section(&mut report, cells);
    plots_section(&mut report, dir, plan, cells, utility)?;
    headline.add_to(&mut report);
    report.reproduce([reproduce_command(args, plan)]);
    report.write()
}

/// The method paragraph: the attacks, the defences and their ε, the samples and the victims.
fn method_paragraph(args: &LeakageArgs, plan: &LeakagePlan) -> String {
    format!(
        "QGI (DQN victim) and RGI (REINFORCE victim) in setting S1 (RGB + depth + bounding box) \
         attack one single-sample gradient per sample after it passes through a defence: DP-SGD \
         clipping alone (C = {clip}), DP-SGD clipping + Gaussian noise σC (ε: the RDP \
         accountant per transition over the DP-SGD suite's DQN run of {steps} environment steps, \
         composing every gradient step at the Poisson rate q_t = min(1, |B|/n_t) it uses, \
         δ = {delta}, {adjacency} adjacency; RGI's DP-SGD rows are printed at the same σ's \
         per-transition ε, while a DP-SGD REINFORCE run's own ε is per episode, one Gaussian \
         release at q = 1: not comparable numbers), \
         and the PGC mechanisms Laplace (C = {lap}) and projected random sign (C = {prs}) at \
         their per-release ε. The attacker knows the defence; cosine matching ignores the \
         scale that clipping and the mechanisms introduce, and all noise is zero-mean, so it \
         matches the released gradient directly; under noise it drops the magnitude term, \
         since the released norm includes the noise's. {n} samples per cell from the rooms at \
         {size}×{size} px, {iters} iterations per stage, λ = {tv}, backend `{backend}`, the \
         same samples (and, untrained, the same victims) as `suite inversion` with the same \
         settings. Victims: \
         {victims}. Chance action accuracy is 1/{actions} = {chance:.2}.",
        clip = args.dp_sgd_clip,
        steps = plan.train_env_steps,
        delta = plan.delta,
        adjacency = plan.adjacency.name(),
        lap = args.laplace_clip,
        prs = args.prs_clip,
        n = plan.samples,
        size = plan.image_size,
        iters = plan.iterations,
        tv = plan.tv_weight,
        backend = plan.backend,
        victims = if plan.victim_train_steps == 0 {
            "freshly initialised (the paper)".to_string()
        } else {
            format!(
                "trained on their own objective first ({} Adam steps, lr {VICTIM_LR}, \
                 minibatches of {VICTIM_BATCH} from {VICTIM_TRAINING_SAMPLES} other room samples)",
                plan.victim_train_steps
            )
        },
        actions = NUM_ACTIONS,
        chance = 1.0 / NUM_ACTIONS as f64,
    )
}

/// Where the utility column comes from, or why it is empty.
fn utility_sources(report: &mut Report, utility: &UtilityTable) {
    if utility.sources.is_empty() {
        report.paragraph(
            "No DP-SGD or PGC suite runs were found, so the utility column is empty: run \
             `cargo xtask suite dpsgd` and `cargo xtask suite pgc` first (or pass \
             `--dpsgd-runs` / `--pgc-runs`).",
        );
    } else {
        report.bullets(utility.sources.iter().map(|s| format!("Utility: {s}")));
    }
}

/// The privacy, utility and leakage table: one row per attack and defence.
fn leakage_table(report: &mut Report, cells: &[CellResult], utility: &UtilityTable) {
    let mut rows = Vec::new();
    for cell in cells {
        let util = utility.get(cell.method, &cell.defence);
        rows.push(vec![
            Cell::from(cell.method.name()),
            Cell::from(cell.defence.to_string()),
            Cell::from(
                format!(
                    "{} {}",
                    format_number(cell.epsilon),
                    LeakagePlan::epsilon_unit(cell.method, &cell.defence)
                )
                .trim_end()
                .to_string(),
            ),
            Cell::from(util.map_or("-".into(), |u| {
                let eps = u
                    .epsilon
                    .map_or(String::new(), |e| format!(" (ε {})", format_number(e)));
                format!("{}{eps}", format_number(u.value))
            })),
        ]);
        rows.last_mut().expect("pushed").extend(score_columns(cell));
    }
    report
        .heading("Privacy, utility and leakage")
        .paragraph(FAILURE_NOTE)
        .paragraph(
            "Mean ± std over samples. Utility: DP-SGD rows, the DP-SGD suite's mean training \
             return at the same σ (its own ε in brackets: its run length differs from the one \
             assumed here); Laplace and PRS rows, the PGC suite's success ratio at the same ε.",
        )
        .table(
            &[
                "attack",
                "defence",
                "ε (unit)",
                "utility",
                "RGB PSNR / SSIM",
                "depth PSNR / SSIM",
                "bbox IoU",
                "action accuracy",
                "ε(Q) % or |r − r_rec|",
                "recognisable",
                "failed",
            ],
            rows,
        );
}

/// QGI without a defence against the batch size (batch size 1: the main table's cell), where
/// batches ran.
fn batch_size_table(
    report: &mut Report,
    cells: &[CellResult],
    batch_cells: &[(usize, CellResult)],
) {
    if batch_cells.is_empty() {
        return;
    }
    let mut rows: Vec<Vec<Cell>> = Vec::new();
    let single = cells
        .iter()
        .find(|c| c.method == Method::Qgi && c.defence == GradientMechanismConfig::None);
    for (batch_size, cell) in single
        .map(|c| (1, c))
        .into_iter()
        .chain(batch_cells.iter().map(|(b, c)| (*b, c)))
    {
        let mut row = vec![Cell::from(batch_size as f64)];
        row.extend(score_columns(cell));
        rows.push(row);
    }
    report
        .heading("Batch size (QGI, no defence)")
        .paragraph(
            "The shared gradient is the DQN victim's over a batch of consecutive samples \
             (J is the batch mean). The batch attack reads the batch's actions off \
             ∇b_last, tries every assignment of them to the samples in stage 1 and keeps \
             the best, then reconstructs all images at once. Each sample is scored \
             against the reconstruction it matches best (the permutation maximising RGB \
             SSIM + depth SSIM + IoU), as Yin et al. (2021) score batch recovery.",
        )
        .table(
            &[
                "batch size",
                "RGB PSNR / SSIM",
                "depth PSNR / SSIM",
                "bbox IoU",
                "action accuracy",
                "ε(Q) %",
                "recognisable",
                "failed",
            ],
            rows,
        );
}

/// Where reconstruction stops being recognisable, per attack and defence family.
fn thresholds_section(report: &mut Report, cells: &[CellResult]) {
    report.heading("Where reconstruction stops being recognisable");
    let mut thresholds = Vec::new();
    for method in METHODS {
        for family in ["dp-sgd", "laplace", "prs"] {
            let of_family = cells_of(cells, method, family);
            if of_family.is_empty() {
                continue;
            }
            let undefended = cells
                .iter()
                .find(|c| c.method == method && c.defence == GradientMechanismConfig::None);
            if undefended.is_some_and(|c| c.scores.unrecognisable()) {
                thresholds.push(format!(
                    "{} against {family}: no threshold, the attack does not reconstruct a \
                     recognisable state even without a defence at this scale",
                    method.name()
                ));
                continue;
            }
            // The largest ε below which every tested strength is unrecognisable.
            let safe = of_family
                .iter()
                .take_while(|c| c.scores.unrecognisable())
                .last();
            thresholds.push(match safe {
                Some(c) => format!(
                    "{} against {family}: unrecognisable at every tested ε ≤ {} ({})",
                    method.name(),
                    format_number(c.epsilon),
                    c.defence
                ),
                None => format!(
                    "{} against {family}: recognisable already at the smallest tested ε {}",
                    method.name(),
                    format_number(of_family[0].epsilon)
                ),
            });
        }
    }
    report.bullets(thresholds);
}

/// One dual-axis plot per defence family (DP-SGD: one per attack).
fn plots_section(
    report: &mut Report,
    dir: &Path,
    plan: &LeakagePlan,
    cells: &[CellResult],
    utility: &UtilityTable,
) -> Result<()> {
    report.heading("Plots");
    // DP-SGD's ε protects a transition for QGI's DQN and an episode for RGI's REINFORCE: one
    // plot per attack, never one ε axis for both. A local mechanism's ε is per release for both.
    let mut plots: Vec<(&str, Vec<Method>, String)> = METHODS
        .iter()
        .map(|&m| ("dp-sgd", vec![m], plan.dp_sgd_epsilon_label(m)))
        .collect();
    for family in ["laplace", "prs"] {
        plots.push((
            family,
            METHODS.to_vec(),
            "ε per release (local DP, one gradient)".to_owned(),
        ));
    }
    for (family, methods, x_label) in plots {
        if let Some(files) = family_plot(dir, family, &methods, cells, utility, &x_label)? {
            let who = if methods.len() == 1 {
                format!(" ({})", methods[0].name())
            } else {
                String::new()
            };
            report.image(
                &format!("{family}{who}: utility and reconstruction quality against {x_label}"),
                &files.png,
                Some(&files.svg),
            );
        }
    }
    Ok(())
}

/// The command that reproduces the report: every setting that changes a number in it.
fn reproduce_command(args: &LeakageArgs, plan: &LeakagePlan) -> String {
    let list = |values: &[f64]| {
        values
            .iter()
            .map(f64::to_string)
            .collect::<Vec<_>>()
            .join(",")
    };
    format!(
        "cargo xtask suite leakage --samples {} --image-size {} --iterations {} --tv-weight {} \\\n    \
         --dp-sgd-noise {} --dp-sgd-clip {} --ldp-epsilon {} --laplace-clip {} --prs-clip {} \\\n    \
         --train-env-steps {} --delta {} --adjacency {} --victim-train-steps {} --seed {} \\\n    \
         --batch-sizes {} --backend {}",
        plan.samples,
        plan.image_size,
        plan.iterations,
        plan.tv_weight,
        list(&args.dp_sgd_noise),
        args.dp_sgd_clip,
        args.ldp_epsilon
            .iter()
            .map(|e| e.slug())
            .collect::<Vec<_>>()
            .join(","),
        args.laplace_clip,
        args.prs_clip,
        plan.train_env_steps,
        plan.delta,
        plan.adjacency,
        plan.victim_train_steps,
        plan.seed,
        plan
            .batch_sizes
            .iter()
            .map(usize::to_string)
            .collect::<Vec<_>>()
            .join(","),
        plan.backend,
    ) + plan.noise_rng.reproduce_flag()
}

/// The score columns of a cell: both images' PSNR / SSIM, IoU, action accuracy, the signal's
/// error and whether it is recognisable.
fn score_columns(cell: &CellResult) -> Vec<Cell> {
    vec![
        Cell::from(format!(
            "{} / {}",
            summary(&cell.rows, |r| r.rgb.map(|s| s.psnr)),
            summary(&cell.rows, |r| r.rgb.map(|s| s.ssim))
        )),
        Cell::from(format!(
            "{} / {}",
            summary(&cell.rows, |r| r.depth.map(|s| s.psnr)),
            summary(&cell.rows, |r| r.depth.map(|s| s.ssim))
        )),
        Cell::from(summary(&cell.rows, |r| r.vector_iou)),
        Cell::from(format!("{:.0}%", 100.0 * cell.scores.action_accuracy)),
        Cell::from(match cell.method {
            Method::Rgi => summary(&cell.rows, |r| r.reward_abs_error),
            _ => summary(&cell.rows, |r| r.target_q_error_pct),
        }),
        Cell::from(if cell.scores.unrecognisable() {
            "no"
        } else {
            "yes"
        }),
        Cell::from(failure_rate(&cell.rows)),
    ]
}

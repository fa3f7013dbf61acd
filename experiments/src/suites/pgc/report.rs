//! The suite's report: Tables 1–3 beside the paper's values, Fig. 3 (success ratio against
//! submissions), Fig. 2 (μ_n with and without buffering) and the command that reproduces it.

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result};
use privrl_agents::{median_first_success, relative_area, success_ratio};
use privrl_privacy::{Epsilon, MechanismKind};

use super::headline::headline;
use super::learner::{flag_value, OptimizerChoice};
use super::plan::{PgcSuiteArgs, Plan, TransportChoice};
use super::setting::{buffer_size, runs_at};
use super::trial::TrialSummary;
use crate::report::plot::{Line, LineChart, PlotFiles};
use crate::report::{Cell, Report};
use crate::summary::SuiteOutcome;

pub(super) fn paper_values(
    mech: MechanismKind,
    epsilon: Epsilon,
) -> (&'static str, &'static str, &'static str) {
    let column = match epsilon.get() {
        None => 4,
        Some(e) => match [1.0, 2.0, 5.0, 10.0].iter().position(|&p| p == e) {
            Some(column) => column,
            None => return ("-", "-", "-"),
        },
    };
    let (fst, ratio, auc): ([&str; 5], [&str; 5], [&str; 5]) = match mech {
        MechanismKind::Laplace => (
            ["?", "20238.5", "?", "?", "1769.0"],
            ["0.80", "0.90", "1.00", "1.00", "1.0"],
            ["?", "0.711", "?", "0.965", "1.0"],
        ),
        MechanismKind::Prs => (
            ["25226.5", "7549.0", "2656.5", "11217.5", "1709.0"],
            ["0.85", "0.95", "0.90", "0.90", "1.0"],
            ["?", "0.862", "?", "0.771", "1.0"],
        ),
        // The non-private row (the only other mechanism the PGC commands accept).
        _ => (
            ["-", "-", "-", "-", "1769.0 / 1709.0"],
            ["-", "-", "-", "-", "1.0"],
            ["-", "-", "-", "-", "1.0"],
        ),
    };
    (fst[column], ratio[column], auc[column])
}

/// Writes `report.md` and its figures in `dir` over every trial's `results`; `start` is when
/// the suite started (for its throughput line).
pub(super) fn write_report(
    dir: PathBuf,
    args: &PgcSuiteArgs,
    plan: Plan,
    results: Vec<(TrialSummary, Vec<(f64, f64)>)>,
    start: Instant,
) -> Result<SuiteOutcome> {
    // Fig. 3 and Table 3 integrate over submissions; the cutoff is in updates, so the horizon
    // is the most submissions any row's cutoff allows (a row cut earlier keeps its ratio).
    let largest_buffer = plan
        .mechanisms
        .iter()
        .map(|&m| buffer_size(m))
        .max()
        .unwrap_or(1) as u64;
    let horizon = plan.max_updates.saturating_mul(largest_buffer);
    let mut report = Report::new(&dir, "PGC-A3C: locally private distributed RL");
    report.paragraph(&plan.noise_rng.report_line());
    report.paragraph(&method_paragraph(&plan));
    report.paragraph(&crate::report::PrivacyScope::Pgc.sentence());
    let tables = tables_and_fig3(&dir, &plan, &results, horizon)?;
    tables.add_to(&mut report, &plan, horizon);
    fig2_section(&mut report, &dir, &plan, &results)?;
    let total_submissions: u64 = results.iter().map(|(s, _)| s.applied).sum();
    let wall: f64 = start.elapsed().as_secs_f64();
    report.paragraph(&format!(
        "{} runs, {} submissions applied in {:.0} s ({:.0} submissions/s over all runs).",
        results.len(),
        total_submissions,
        wall,
        total_submissions as f64 / wall.max(1e-9)
    ));
    let command = reproduce_command(args, &plan);
    let headline = headline(&plan, &results);
    headline.add_to(&mut report);
    report.reproduce([command]);
    let path = report.write().context("writing the PGC report")?;
    println!("wrote {}", path.display());
    Ok(SuiteOutcome {
        report: path,
        headline,
    })
}

/// The paper's setting and this run's: learner, aggregator, threads, trials and cutoff.
fn method_paragraph(plan: &Plan) -> String {
    let optimizers: Vec<String> = plan
        .optimizers
        .iter()
        .map(|o| match o.optimizer {
            OptimizerChoice::Sgd => format!("{} SGD η = {} (eq. 22)", o.mechanism.label(), o.lr),
            OptimizerChoice::Adam => format!(
                "{} Adam lr = {} on the buffer's mean",
                o.mechanism.label(),
                o.lr
            ),
        })
        .collect();
    format!(
        "Ono & Takahashi, *Locally Private Distributed Reinforcement Learning*, Section 4. \
         CartPole-v0 (200 steps) with gravity ψ ∈ {{9.7, 9.8, 9.9}} drawn per agent; a 16-unit \
         ReLU network (the paper: d = 112, no biases), γ 0.99, λ 0.5, β 0.01, exploration \
         α = max(0, 0.5 − n/1800). Laplace: C = 0.01, |B| = 1; PRS: C = 1, |B| = 100, \
         d̂ = max(1, min(d, ⌊ε/2.5⌋)). This run: {}; aggregator {}. {} agent threads, \
         transport `{:?}`, backend `{}`. {} trials per cell (the paper: 20); a trial stops at \
         its first success (FST, eq. 26: the first n with μ_n ≥ 195, μ_n the mean score of \
         submissions n … n + 9, eq. 25) or fails after {} model updates (FST = ∞; the paper: \
         90,000 updates). ε = ∞ is each mechanism's noiseless limit (Laplace: clipping only; \
         PRS: d̂ = d with an unbiased stochastic sign); the row `none` is the raw gradient, the \
         paper's non-private A3C.",
        plan.learner.describe(),
        optimizers.join(", "),
        plan.workers,
        plan.transport,
        plan.backend,
        plan.trials,
        plan.max_updates
    )
}

/// Tables 1–3 (one row per mechanism) and Fig. 3's plots (one per mechanism).
struct Tables {
    table1: Vec<Vec<Cell>>,
    table2: Vec<Vec<Cell>>,
    table3: Vec<Vec<Cell>>,
    fig3: Vec<(MechanismKind, PlotFiles)>,
    /// Table 3 is relative to the non-private row when it ran, as in the paper.
    has_non_private: bool,
}

/// Builds Tables 1–3 and saves Fig. 3's plots in `dir`.
fn tables_and_fig3(
    dir: &Path,
    plan: &Plan,
    results: &[(TrialSummary, Vec<(f64, f64)>)],
    horizon: u64,
) -> Result<Tables> {
    let fsts = |mech: MechanismKind, epsilon: Epsilon| -> Vec<Option<u64>> {
        results
            .iter()
            .filter(|(s, _)| s.mechanism == mech && s.epsilon == epsilon && !s.fig2)
            .map(|(s, _)| s.first_success)
            .collect()
    };
    let mut tables = Tables {
        table1: Vec::new(),
        table2: Vec::new(),
        table3: Vec::new(),
        fig3: Vec::new(),
        // With the non-private row present, Table 3 is relative to it, as in the paper.
        has_non_private: plan.mechanisms.contains(&MechanismKind::None),
    };
    for &mech in &plan.mechanisms {
        let baseline = if tables.has_non_private {
            fsts(MechanismKind::None, Epsilon::INFINITE)
        } else {
            fsts(mech, Epsilon::INFINITE)
        };
        let mut row1 = vec![Cell::from(mech.label())];
        let mut row2 = vec![Cell::from(mech.label())];
        let mut row3 = vec![Cell::from(mech.label())];
        let mut chart = LineChart::new(format!("{}: success ratio (Fig. 3)", mech.label()))
            .x_label("submissions")
            .y_label("success ratio")
            .legend(plotters::chart::SeriesLabelPosition::LowerRight);
        for &epsilon in &plan.epsilons {
            if !runs_at(mech, epsilon) {
                for row in [&mut row1, &mut row2, &mut row3] {
                    row.push(Cell::from("-"));
                }
                continue;
            }
            let cell = fsts(mech, epsilon);
            let [c1, c2, c3] = table_cells(mech, epsilon, &cell, &baseline, horizon);
            row1.push(c1);
            row2.push(c2);
            row3.push(c3);
            chart = chart.line(fig3_line(epsilon, &cell, horizon));
        }
        tables.table1.push(row1);
        tables.table2.push(row2);
        tables.table3.push(row3);
        tables.fig3.push((
            mech,
            chart.save(&dir.join(format!("fig3-{}", mech.name())))?,
        ));
    }
    Ok(tables)
}

/// One cell (mechanism × ε) of Tables 1, 2 and 3, each beside the paper's value.
fn table_cells(
    mech: MechanismKind,
    epsilon: Epsilon,
    cell: &[Option<u64>],
    baseline: &[Option<u64>],
    horizon: u64,
) -> [Cell; 3] {
    let (paper_fst, paper_ratio, paper_auc) = paper_values(mech, epsilon);
    let median = median_first_success(cell).map_or("-".into(), |m| {
        if m.is_finite() {
            format!("{m:.1}")
        } else {
            "∞".into()
        }
    });
    let relative =
        relative_area(cell, baseline, horizon).map_or("n/a".to_string(), |r| format!("{r:.3}"));
    [
        Cell::from(format!("{median} ({paper_fst})")),
        Cell::from(format!(
            "{:.2} ({paper_ratio})",
            success_ratio(cell, horizon)
        )),
        Cell::from(format!("{relative} ({paper_auc})")),
    ]
}

/// One ε's success-ratio step curve of Fig. 3, up to `horizon` submissions.
fn fig3_line(epsilon: Epsilon, cell: &[Option<u64>], horizon: u64) -> Line {
    let mut points = vec![(0.0, 0.0)];
    let mut sorted: Vec<u64> = cell.iter().flatten().copied().collect();
    sorted.sort_unstable();
    for &f in &sorted {
        points.push((f as f64, success_ratio(cell, f.saturating_sub(1))));
        points.push((f as f64, success_ratio(cell, f)));
    }
    points.push((horizon as f64, success_ratio(cell, horizon)));
    Line::new(format!("ε = {epsilon}"), points)
}

impl Tables {
    /// Tables 1–3 and Fig. 3, in that order.
    fn add_to(self, report: &mut Report, plan: &Plan, horizon: u64) {
        let headers: Vec<String> = std::iter::once("Q".to_string())
            .chain(plan.epsilons.iter().map(|&e| format!("ε = {e} (paper)")))
            .collect();
        let header_refs: Vec<&str> = headers.iter().map(String::as_str).collect();
        report
            .heading("Table 1: median first success time (submissions)")
            .paragraph("Ours (the paper's in brackets; `?`: cell lost in our text of the paper).")
            .table(&header_refs, self.table1)
            .heading("Table 2: success ratio")
            .paragraph(&format!(
                "Fraction of trials that succeed within {} updates (eq. 27).",
                plan.max_updates
            ))
            .table(&header_refs, self.table2)
            .heading("Table 3: relative area under the success-ratio curve")
            .paragraph(&format!(
                "∫₀^N success_ratio(n) dn over the same for {}, N = {} (n/a where those trials \
                 never succeeded).",
                if self.has_non_private {
                    "the non-private row (as in the paper)"
                } else {
                    "the row's own ε = ∞"
                },
                horizon
            ))
            .table(&header_refs, self.table3)
            .heading("Fig. 3: success ratio against submissions");
        for (mech, files) in &self.fig3 {
            report.plot(&format!("{} success ratio", mech.label()), files);
        }
    }
}

/// Fig. 2 (μ_n with and without buffering), where its runs exist.
fn fig2_section(
    report: &mut Report,
    dir: &Path,
    plan: &Plan,
    results: &[(TrialSummary, Vec<(f64, f64)>)],
) -> Result<()> {
    let fig2: Vec<&(TrialSummary, Vec<(f64, f64)>)> =
        results.iter().filter(|(s, _)| s.fig2).collect();
    if plan.fig2_submissions == 0 {
        return Ok(());
    }
    let mut chart = LineChart::new("Fig. 2: μ_n at ε = 1, |B| ∈ {1, 100}")
        .x_label("submissions")
        .y_label("average score μ_n")
        .legend(plotters::chart::SeriesLabelPosition::UpperLeft);
    let mut any = false;
    for (summary, curve) in fig2 {
        if curve.is_empty() || summary.applied != plan.fig2_submissions {
            continue;
        }
        any = true;
        chart = chart.line(Line::new(
            format!(
                "{} |B| = {}",
                summary.mechanism.label(),
                summary.buffer_size
            ),
            curve.clone(),
        ));
    }
    if any {
        let files = chart.save(&dir.join("fig2"))?;
        report
            .heading("Fig. 2: average score with and without buffering (ε = 1)")
            .paragraph(
                "The paper: buffering (|B| = 100) helps PRS and stalls Laplace, so the \
                 tables use |B| = 1 for Laplace and |B| = 100 for PRS.",
            )
            .plot("μ_n against submissions", &files);
    }
    Ok(())
}

/// The command that reproduces the report: every setting that changes a number in it.
fn reproduce_command(args: &PgcSuiteArgs, plan: &Plan) -> String {
    let epsilons: Vec<String> = plan.epsilons.iter().map(|e| e.slug()).collect();
    let mechanisms: Vec<String> = plan
        .mechanisms
        .iter()
        .map(|m| m.name().to_string())
        .collect();
    let optimizers: Vec<String> = plan
        .optimizers
        .iter()
        .map(|o| format!("{}={}", o.mechanism.name(), flag_value(&o.optimizer)))
        .collect();
    let lrs: Vec<String> = plan
        .optimizers
        .iter()
        .map(|o| format!("{}={}", o.mechanism.name(), o.lr))
        .collect();
    format!(
        "cargo xtask suite pgc --trials {} --max-updates {} --fig2-submissions {} \\\n    \
         --epsilons {} --mechanisms {} --optimizer {} --lr {} --workers {} --seed {}{}",
        plan.trials,
        plan.max_updates,
        plan.fig2_submissions,
        epsilons.join(","),
        mechanisms.join(","),
        optimizers.join(","),
        lrs.join(","),
        plan.workers,
        plan.seed,
        plan.learner.flags(),
    ) + &match (&plan.transport, &args.redis) {
        (TransportChoice::Redis, Some(url)) => format!(" --transport redis --redis {url}"),
        (TransportChoice::Redis, None) => " --transport redis".to_string(),
        (TransportChoice::Inprocess, _) => String::new(),
    } + plan.noise_rng.reproduce_flag()
}

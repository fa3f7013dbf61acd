//! The suite's report: the sweep's points (a method at a noise level, over seeds), the table,
//! the slides' figures against σ, the learning curves and the command that reproduces it.

use std::path::{Path, PathBuf};

use anyhow::Result;
use plotters::prelude::SeriesLabelPosition;

use super::headline::headline;
use super::mean;
use super::plan::{DpsgdArgs, DpsgdPlan, Method};
use super::point::Point;
use crate::report::plot::{median, LearningCurves, Line, LineChart, PlotFiles};
use crate::report::{comma_list, format_mean_std, format_number, Cell, Report};
use crate::summary::SuiteOutcome;

/// The three charts of one family (DP-SGD or LDP): average reward, median reward and
/// convergence time against σ, one line per algorithm, each point annotated with ε.
fn family_charts(
    dir: &std::path::Path,
    family: &str,
    x_label: &str,
    points: &[&Point],
    epsilon_note: &str,
) -> Result<Vec<(String, PlotFiles)>> {
    type Statistic = fn(&Point) -> f64;
    let charts: [(&str, &str, &str, Statistic); 3] = [
        (
            "average",
            "average reward",
            "mean training return (mean over seeds)",
            |p| mean(&p.mean_returns()),
        ),
        (
            "median",
            "median reward",
            "median training return (median over seeds)",
            |p| median(&p.median_returns()),
        ),
        (
            "convergence",
            "convergence time",
            "episodes to solved (median over seeds; unsolved = episodes run)",
            |p| median(&p.convergence()),
        ),
    ];
    let mut out = Vec::new();
    for (stem, what, y_label, statistic) in charts {
        let mut chart =
            LineChart::new(format!("{family}: impact of the noise level on the {what}"))
                .x_label(x_label)
                .y_label(y_label)
                .legend(SeriesLabelPosition::UpperRight);
        for method in Method::ALL {
            let mut of_method: Vec<&&Point> =
                points.iter().filter(|p| p.method == method).collect();
            if of_method.is_empty() {
                continue;
            }
            of_method.sort_by(|a, b| a.noise.total_cmp(&b.noise));
            let line = Line::new(
                method.name(),
                of_method.iter().map(|p| (p.noise, statistic(p))).collect(),
            )
            .annotations(
                of_method
                    .iter()
                    .map(|p| format!("ε={}", p.epsilon_with_unit())),
            );
            chart = chart.line(line);
        }
        let slug = family.to_lowercase().replace(' ', "-");
        let files = chart.save(&dir.join(format!("{slug}-{stem}")))?;
        out.push((
            format!("{family}: {what} against σ (points annotated with ε at δ, {epsilon_note})"),
            files,
        ));
    }
    Ok(out)
}

/// Writes `report.md` (and its figures) in `dir` over the sweep's `points`.
pub(super) fn write_report(
    dir: PathBuf,
    args: &DpsgdArgs,
    plan: &DpsgdPlan,
    points: Vec<Point>,
) -> Result<SuiteOutcome> {
    let mut report = Report::new(
        &dir,
        "DP-SGD and local DP for REINFORCE and DQN on CartPole-v1",
    );
    report.paragraph(&method_paragraph(plan));
    report.paragraph(&plan.noise_rng.report_line());
    let epsilon_note = format!(
        "{}; REINFORCE's ε is per episode and DQN's per transition: one x axis of σ, not \
         of ε, because the two are not comparable",
        plan.adjacency.name()
    );
    privacy_section(&mut report, plan);
    report.paragraph(&crate::report::PrivacyScope::DpSgd.sentence());
    sweep_table(&mut report, plan, &points);
    figures_section(&mut report, &dir, plan, &points, &epsilon_note)?;
    let command = reproduce_command(args, plan);
    let headline = headline(&points);
    headline.add_to(&mut report);
    report.reproduce([command]);
    let path = report.write()?;
    println!("wrote {}", path.display());
    Ok(SuiteOutcome {
        report: path,
        headline,
    })
}

/// The slides' agents and this sweep's settings.
fn method_paragraph(plan: &DpsgdPlan) -> String {
    format!(
        "Doulazmi & Odonnat, *Differential Privacy in Reinforcement Learning* (MVA slides, 2023). \
         REINFORCE: a 2-layer perceptron (h = 128, dropout 0.5), one episode per gradient, Adam \
         lr {}. DQN: a 3-layer perceptron (h = 128), |B| = {}, Adam lr {}, buffer {}, ε-greedy \
         over {} steps, target copy every {} steps. DP-SGD clips each record's gradient to \
         C = {} (flat L2) and adds N(0, σ²C²I) to the sum (slides, Figure 7). LDP adds \
         N(0, (σ·IQR_j)²) to every observed state dimension j, the IQR from {} states of a \
         random policy. Every run trains {} episodes (DQN also stops at {} environment steps); \
         seeds {:?}; backend `{}`.",
        plan.reinforce.lr,
        plan.dqn.batch_size,
        plan.dqn.lr,
        plan.dqn.buffer_capacity,
        plan.dqn.epsilon_decay_steps,
        plan.dqn.target_update_interval,
        plan.clip,
        plan.warmup_steps,
        plan.episodes,
        plan.dqn_steps,
        plan.seeds,
        plan.backend,
    )
}

/// The privacy each run spends: adjacency, accountant and unit of privacy per agent.
fn privacy_section(report: &mut Report, plan: &DpsgdPlan) {
    report.heading("The privacy each run spends").bullets([
        format!(
            "Every ε is stated under **{}** adjacency (`--adjacency`; add/remove is Opacus' \
             default, substitution's ε is larger), by the **{}** (`--accountant`), and names \
             its unit of privacy.",
            plan.adjacency.name(),
            plan.accountant.name()
        ),
        format!(
            "DP-SGD REINFORCE: an episode is one record. Each DP-SGD step plays L = {} fresh \
             episodes, clips each one's gradient to C, noises their sum once and divides by L; \
             every episode is used in one step and discarded (disjoint batches, no sampling), so \
             each record enters one Gaussian release (q = 1, one step): ε below at δ = {}. A \
             user contributing every episode would compose over all steps, each moving by up \
             to L·C: that ε is in each run's summary.json (`epsilon_if_every_episode_one_user`).",
            plan.reinforce_batch, plan.delta
        ),
        "DP-SGD DQN: a transition is one record. Each gradient step Poisson-samples the replay \
         buffer at q_t = |B|/n_t (expected batch |B|, not the slides' uniform sampling with \
         replacement, which the accountant does not cover); the accountant composes every \
         step of the run at its own q_t, which bounds every transition. A run stops at the first \
         episode end at or after the step budget, so its own step count depends on its \
         episodes; the ε printed is the accountant's at the most steps any run can take (the \
         budget plus the longest episode, 500 steps, less one), which does not, and bounds \
         every run's own (in its summary.json)."
            .to_string(),
        "σ = 0 (DP-SGD) clips without noise and LDP has no sensitivity bound: ε = ∞ (the \
         slides' 'need for theoretical guarantees')."
            .to_string(),
    ]);
}

/// The sweep table: one row per method and noise level.
fn sweep_table(report: &mut Report, plan: &DpsgdPlan, points: &[Point]) {
    let mut rows = Vec::new();
    for point in points {
        rows.push(vec![
            Cell::from(point.method.name()),
            Cell::from(format_number(point.noise)),
            Cell::from(format_number(point.epsilon())),
            Cell::from(point.method.unit().map_or("—", |u| u.name())),
            Cell::from(format_mean_std(&point.mean_returns())),
            Cell::from(format_number(median(&point.median_returns()))),
            Cell::from(format!(
                "{} ({}/{} solved)",
                match point.median_convergence() {
                    e if e.is_finite() => format_number(e),
                    _ => "∞".to_string(),
                },
                point.solved(),
                point.runs.len()
            )),
            Cell::from(format_number(mean(
                &point
                    .runs
                    .iter()
                    .map(|r| r.env_steps as f64)
                    .collect::<Vec<_>>(),
            ))),
            Cell::from(format_number(mean(
                &point.runs.iter().map(|r| r.wall_s).collect::<Vec<_>>(),
            ))),
        ]);
    }
    report.heading("Sweep").table(
        &[
            "method",
            "σ",
            &format!(
                "ε (δ = {}, {}, {})",
                plan.delta,
                plan.adjacency.name(),
                plan.accountant.name()
            ),
            "unit of privacy",
            "average reward (mean ± std over seeds)",
            "median reward",
            "episodes to solved (median; unsolved = ∞)",
            "env steps",
            "wall s",
        ],
        rows,
    );
}

/// The noise-level charts per family (DP-SGD, LDP) and each method's learning curves.
fn figures_section(
    report: &mut Report,
    dir: &Path,
    plan: &DpsgdPlan,
    points: &[Point],
    epsilon_note: &str,
) -> Result<()> {
    let dp_sgd: Vec<&Point> = points.iter().filter(|p| p.method.is_dp_sgd()).collect();
    let ldp: Vec<&Point> = points.iter().filter(|p| !p.method.is_dp_sgd()).collect();
    let mut plots = Vec::new();
    if !dp_sgd.is_empty() {
        plots.extend(family_charts(
            dir,
            "DP-SGD",
            "noise multiplier σ",
            &dp_sgd,
            epsilon_note,
        )?);
    }
    if !ldp.is_empty() {
        plots.extend(family_charts(
            dir,
            "LDP",
            "observation noise σ (× IQR)",
            &ldp,
            "LDP has no ε",
        )?);
    }
    report.heading("Figures");
    for (caption, files) in &plots {
        report.plot(caption, files);
    }
    for method in &plan.methods {
        let mut curves = LearningCurves::new(format!("{}: training return", method.name()))
            .x_label("episode")
            .y_label("episode return (median over seeds, 25–75% band)");
        for point in points.iter().filter(|p| p.method == *method) {
            curves = curves.series(format!("σ = {}", point.noise), point.curves.clone());
        }
        let files = curves.save(&dir.join(format!("curves-{}", method.slug())))?;
        report.plot(
            &format!("{}: mean return of the last 25 episodes", method.name()),
            &files,
        );
    }
    Ok(())
}

/// The command that reproduces the report.
fn reproduce_command(args: &DpsgdArgs, plan: &DpsgdPlan) -> String {
    let command = if args.quick {
        match plan.adjacency {
            privrl_privacy::Adjacency::AddRemove => "cargo xtask suite dpsgd --quick".to_string(),
            other => format!("cargo xtask suite dpsgd --quick --adjacency {other}"),
        }
    } else {
        format!(
            "cargo xtask suite dpsgd --seeds {} --dp-sgd-noise {} --ldp-noise {} --episodes {} --dqn-steps {} --clip {} --delta {} --adjacency {} --accountant {} --reinforce-batch {}",
            comma_list(&plan.seeds),
            comma_list(&plan.dp_sgd_noise),
            comma_list(&plan.ldp_noise),
            plan.episodes,
            plan.dqn_steps,
            plan.clip,
            plan.delta,
            plan.adjacency,
            plan.accountant,
            plan.reinforce_batch
        )
    };
    let command = if args.quick && plan.accountant != privrl_privacy::AccountantKind::Rdp {
        format!("{command} --accountant {}", plan.accountant)
    } else {
        command
    };
    command + plan.noise_rng.reproduce_flag()
}

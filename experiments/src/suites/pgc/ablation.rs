//! `suite pgc --ablation`: what the paper's setting needs to learn at ε = ∞. One factor at a
//! time away from Section 4's setting (reward, loss reduction, exploration clock, action
//! choice, biases, optimiser), then a fixed list of combinations, K trials each. Every trial is
//! a resumable unit, `<results>/ablation/<setting>/seed<k>.json`, skipped once written (unless
//! it failed within a shorter cutoff than the one asked for now: then it runs again to the new
//! one); the report and CSVs are regenerated from whatever units exist.
//!
//! The verdict criterion is fixed here, before any run: a setting **learns** when at least
//! 80% of its K trials reach the first success (eq. 26) within the paper's cutoff of 90,000
//! updates (the paper's ε = ∞ column succeeds in 20 of 20 trials; 8 of 10 leaves room for two
//! unlucky seeds), **fails** when at most 20% do, and is **partial** in between. A trial that
//! failed within a shorter cutoff (`--max-updates` below 90,000, to save time) is undecided,
//! like a missing one; while trials are undecided the setting is **pending** unless every
//! outcome of those gives the same verdict. The smallest combination that learns is the
//! setting that learns with the fewest factors changed (ties: lower median FST).

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{Context, Result};
use privrl_agents::{median_first_success, SubmissionOrder};
use privrl_privacy::MechanismKind;
use serde::Serialize;

use super::plan::PgcSuiteArgs;
use super::setting::{settings, Setting};
use super::units::{outcomes, read_units, run_units, units_dir, Outcomes, Unit};
use crate::report::plot::median;
use crate::report::{Cell, Report};
use crate::summary::{Headline, SuiteOutcome};

/// The cutoff of the criterion, the paper's 90,000 updates: a trial that fails within a
/// shorter cutoff is undecided (it might still succeed), one that succeeds within it counts.
pub(super) const PAPER_CUTOFF: u64 = 90_000;
/// Share of trials at or above which a setting learns.
pub(super) const LEARNS_AT: f64 = 0.8;
/// Share of trials at or below which a setting fails.
pub(super) const FAILS_AT: f64 = 0.2;

/// The verdict on a setting's trials, by the criterion of the module's documentation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Verdict {
    Learns,
    Partial,
    Fails,
    Pending,
}

impl Verdict {
    pub(super) fn label(self) -> &'static str {
        match self {
            Verdict::Learns => "learns",
            Verdict::Partial => "partial",
            Verdict::Fails => "fails",
            Verdict::Pending => "pending",
        }
    }
}

/// `successes` of `finished` decided trials (successes, and failures at the paper's cutoff),
/// `planned` in all.
pub(super) fn verdict(successes: usize, finished: usize, planned: usize) -> Verdict {
    let planned = planned.max(finished);
    if planned == 0 {
        return Verdict::Pending;
    }
    let of = |s: usize| {
        let ratio = s as f64 / planned as f64;
        if ratio >= LEARNS_AT {
            Verdict::Learns
        } else if ratio <= FAILS_AT {
            Verdict::Fails
        } else {
            Verdict::Partial
        }
    };
    let (low, high) = (of(successes), of(successes + planned - finished));
    if low == high {
        low
    } else {
        Verdict::Pending
    }
}

/// The settings `args` selects (all, or those named by `--settings`).
fn selected(args: &PgcSuiteArgs) -> Result<Vec<Setting>> {
    let all = settings();
    if args.settings.is_empty() {
        return Ok(all);
    }
    args.settings
        .iter()
        .map(|name| {
            all.iter()
                .find(|s| &s.name() == name)
                .cloned()
                .with_context(|| {
                    let names: Vec<String> = all.iter().map(Setting::name).collect();
                    format!(
                        "unknown ablation setting {name:?}; the settings are {}",
                        names.join(", ")
                    )
                })
        })
        .collect()
}

/// Runs the missing units of the selected settings, regenerating the report after each;
/// returns the report.
pub(super) fn run(args: &PgcSuiteArgs) -> Result<SuiteOutcome> {
    let dir = units_dir(args, "ablation", args.plan().order);
    let chosen = selected(args)?;
    run_units(args, &dir, &chosen, || write_report(&dir, args).map(|_| ()))?;
    write_report(&dir, args)
}

/// One row of the ablation table.
#[derive(Debug, Clone, Serialize)]
struct Row {
    setting: String,
    mechanism: String,
    factors_changed: usize,
    trials: usize,
    planned: usize,
    successes: usize,
    success_ratio: f64,
    median_fst: Option<f64>,
    median_best_mean_score: Option<f64>,
    submissions: u64,
    /// The cutoffs (updates) of the trials, e.g. `90000` or `2000, 90000`.
    cutoffs: String,
    verdict: &'static str,
}

fn rows(units: &[Unit], planned: usize) -> Vec<Row> {
    let mut order: Vec<Setting> = settings();
    // Settings on disk that the current list no longer has still count.
    for unit in units {
        if !order.iter().any(|s| s.name() == unit.setting) {
            order.push(Setting::new(unit.summary.mechanism, &unit.factors));
        }
    }
    order
        .iter()
        .filter_map(|setting| {
            let mine: Vec<&Unit> = units
                .iter()
                .filter(|u| u.setting == setting.name())
                .collect();
            if mine.is_empty() {
                return None;
            }
            let Outcomes {
                fsts,
                successes,
                decided,
            } = outcomes(&mine, PAPER_CUTOFF);
            let mut cutoffs: Vec<u64> = mine.iter().map(|u| u.max_updates).collect();
            cutoffs.sort_unstable();
            cutoffs.dedup();
            let cutoffs: Vec<String> = cutoffs.iter().map(u64::to_string).collect();
            let best: Vec<f64> = mine.iter().filter_map(|u| u.best_mean_score).collect();
            // Every unit on disk was planned, undecided or not, whatever --trials this
            // invocation was given (a run over a few seeds must not shrink the setting).
            let planned = planned.max(mine.len());
            Some(Row {
                setting: setting.name(),
                mechanism: setting.mechanism.name().to_string(),
                factors_changed: setting.factors.len(),
                trials: mine.len(),
                planned,
                successes,
                success_ratio: successes as f64 / mine.len() as f64,
                median_fst: median_first_success(&fsts),
                // To 0.1, the precision of a mean of ten integer scores.
                median_best_mean_score: (!best.is_empty())
                    .then(|| (median(&best) * 10.0).round() / 10.0),
                submissions: mine.iter().map(|u| u.summary.applied).sum(),
                cutoffs: cutoffs.join(", "),
                verdict: verdict(successes, decided, planned).label(),
            })
        })
        .collect()
}

/// The verdict's sentence for `mechanism`: its learning setting with the fewest factors
/// changed (ties: lower median FST), if any.
fn smallest_learner(rows: &[Row], mechanism: MechanismKind) -> String {
    let smallest = rows
        .iter()
        .filter(|r| r.mechanism == mechanism.name() && r.verdict == Verdict::Learns.label())
        .min_by(|a, b| {
            a.factors_changed.cmp(&b.factors_changed).then(
                a.median_fst
                    .unwrap_or(f64::INFINITY)
                    .total_cmp(&b.median_fst.unwrap_or(f64::INFINITY)),
            )
        });
    match smallest {
        Some(row) => format!(
            "{}: the smallest combination that learns is `{}` ({} factor{} changed, {}/{} \
             trials, median FST {}).",
            mechanism.label(),
            row.setting,
            row.factors_changed,
            if row.factors_changed == 1 { "" } else { "s" },
            row.successes,
            row.trials,
            fst_text(row.median_fst)
        ),
        None => format!(
            "{}: no setting learns by the criterion (yet).",
            mechanism.label()
        ),
    }
}

/// What the order of a set of units means for reading them.
pub(super) fn order_sentence(order: SubmissionOrder) -> &'static str {
    match order {
        SubmissionOrder::Arrival => {
            "Submissions were applied in order of arrival (asynchronous): a seed fixes the \
             agents' episodes and noise but not the order in which their submissions arrive \
             nor how stale they are, so a trial depends on the machine's load."
        }
        SubmissionOrder::RoundRobin => {
            "Submissions were applied in round-robin order over the agents, each gradient W − 1 \
             submissions stale (W agents; `--order round-robin`, docs/pgc.md): a seed fixes \
             the whole trial, whatever the machine's load."
        }
    }
}

pub(super) fn fst_text(value: Option<f64>) -> String {
    match value {
        None => "-".into(),
        Some(v) if v.is_finite() => format!("{v:.1}"),
        Some(_) => "∞".into(),
    }
}

/// `units.csv` in `dir`: one row per unit (trial).
pub(super) fn write_units_csv(dir: &Path, units: &[Unit]) -> Result<()> {
    let mut csv = csv::Writer::from_path(dir.join("units.csv"))?;
    csv.write_record([
        "setting",
        "mechanism",
        "seed",
        "first_success",
        "updates",
        "applied",
        "best_mean_score",
        "wall_s",
    ])?;
    for u in units {
        csv.write_record([
            u.setting.clone(),
            u.summary.mechanism.name().to_string(),
            u.summary.seed.to_string(),
            u.summary
                .first_success
                .map_or(String::new(), |f| f.to_string()),
            u.summary.updates.to_string(),
            u.summary.applied.to_string(),
            u.best_mean_score
                .map_or(String::new(), |b| format!("{b:.1}")),
            format!("{:.1}", u.summary.wall_s),
        ])?;
    }
    csv.flush()?;
    Ok(())
}

/// Writes `report.md`, `ablation.csv` (one row per setting) and `units.csv` (one per trial)
/// in `dir` from the units there.
fn write_report(dir: &Path, args: &PgcSuiteArgs) -> Result<SuiteOutcome> {
    let plan = args.plan();
    let units = read_units(dir)?;
    let rows = rows(&units, plan.trials);
    // The trials planned per setting as the rows count them (units on disk included), not the
    // --trials of the invocation that happens to write the report.
    let planned = rows.iter().map(|r| r.planned).fold(plan.trials, usize::max);
    std::fs::create_dir_all(dir)?;
    let mut csv = csv::Writer::from_path(dir.join("ablation.csv"))?;
    for row in &rows {
        csv.serialize(row)?;
    }
    csv.flush()?;
    write_units_csv(dir, &units)?;

    let mut report = Report::new(
        dir,
        "PGC-A3C at ε = ∞: what the paper's setting needs to learn",
    );
    ablation_paragraphs(&mut report, planned, plan.order);
    report.paragraph(&crate::report::PrivacyScope::Pgc.sentence());
    ablation_table(&mut report, &rows);
    let conclusion = [MechanismKind::Laplace, MechanismKind::Prs]
        .iter()
        .filter(|m| rows.iter().any(|r| r.mechanism == m.name()))
        .map(|m| smallest_learner(&rows, *m))
        .collect::<Vec<String>>()
        .join(" ");
    report.heading("Verdict").paragraph(&conclusion);
    let headline = ablation_headline(&rows, &conclusion);
    headline.add_to(&mut report);
    report.reproduce(ablation_commands(&units, args));
    let path = report.write().context("writing the PGC ablation report")?;
    println!("wrote {}", path.display());
    Ok(SuiteOutcome {
        report: path,
        headline,
    })
}

/// The paper's setting at ε = ∞, the trials and their order, and the verdict's criterion.
fn ablation_paragraphs(report: &mut Report, planned: usize, order: SubmissionOrder) {
    report.paragraph(
        "Ono & Takahashi, Section 4, at ε = ∞: CartPole-v0 with gravity ψ ∈ {9.7, 9.8, 9.9} per \
         agent, a 16-unit ReLU network without biases (d = 112), γ 0.99, λ 0.5, β 0.01, SGD \
         with η = 0.5 (eq. 22), argmax actions with α = max(0, 0.5 − n/1800) uniform \
         exploration, n counting submissions, reward +1 per step, loss summed over the \
         episode's steps (eq. 16–17). Laplace at ε = ∞ keeps the L1 clipping to C/2 = 0.005 \
         (eq. 19) with |B| = 1; PRS at ε = ∞ projects to d̂ = d with the unbiased stochastic \
         sign, C = 1, |B| = 100. Each row changes the listed factors only.",
    );
    report.paragraph(&format!(
        "{} trials per setting planned; a trial stops at its first success (FST, eq. 26: the \
         first n with μ_n ≥ 195, μ_n the mean score of submissions n … n + 9, eq. 25) or at \
         its cutoff in model updates (FST = ∞; the paper's cutoff is 90,000 updates, which \
         for PRS's |B| = 100 is 9,000,000 submissions). {}",
        planned,
        order_sentence(order),
    ));
    report.paragraph(&format!(
        "**Criterion (fixed in `experiments/src/suites/pgc/ablation.rs` before the runs):** a \
         setting *learns* when at least {:.0}% of its {} trials succeed within the paper's \
         cutoff of {} updates (the paper: 20/20 at ε = ∞), *fails* when at most {:.0}% do, \
         and is *partial* in between. A trial that failed within a shorter cutoff is \
         undecided, like a missing one (a success within it counts); the setting is *pending* \
         while undecided trials could still change its verdict. Per mechanism, the smallest \
         combination that learns is the learning setting with the fewest factors changed \
         (ties: lower median FST).",
        LEARNS_AT * 100.0,
        planned,
        PAPER_CUTOFF,
        FAILS_AT * 100.0
    ));
}

/// The ablation table: one row per setting, and how to read it.
fn ablation_table(report: &mut Report, rows: &[Row]) {
    let table: Vec<Vec<Cell>> = rows
        .iter()
        .map(|r| {
            let setting = settings()
                .into_iter()
                .find(|s| s.name() == r.setting)
                .map_or_else(
                    || r.setting.clone(),
                    |s| {
                        if s.factors.is_empty() {
                            "the paper's setting".to_string()
                        } else {
                            let labels: Vec<&str> = s.factors.iter().map(|f| f.label()).collect();
                            labels.join(" + ")
                        }
                    },
                );
            vec![
                Cell::from(format!("`{}`", r.setting)),
                Cell::from(r.mechanism.clone()),
                Cell::from(setting),
                Cell::from(format!("{}/{}", r.successes, r.trials)),
                Cell::from(r.cutoffs.clone()),
                Cell::from(format!("{:.2}", r.success_ratio)),
                Cell::from(fst_text(r.median_fst)),
                Cell::from(
                    r.median_best_mean_score
                        .map_or("-".to_string(), |b| format!("{b:.1}")),
                ),
                Cell::from(r.verdict),
            ]
        })
        .collect();
    report.heading("Ablation at ε = ∞").table(
        &[
            "setting",
            "Q",
            "changed from the paper",
            "successes",
            "cutoff (updates)",
            "success ratio",
            "median FST (submissions)",
            "median best μ",
            "verdict",
        ],
        table,
    );
    report.paragraph(
        "Median FST counts failures as ∞ (Table 1's convention). Best μ: the highest mean of \
         ten consecutive scores a trial reached (195 is success). `ablation.csv` has these \
         rows, `units.csv` one row per trial.",
    );
}

/// The headline: the paper's ε = ∞ column, each mechanism's paper setting learns.
fn ablation_headline(rows: &[Row], conclusion: &str) -> Headline {
    let papers: Vec<&Row> = rows.iter().filter(|r| r.factors_changed == 0).collect();
    Headline {
        effect: "the paper's setting learns at ε = ∞ (the paper: 20/20 trials): for each \
                 mechanism that ran it, at least 80% of the trials of its paper setting \
                 (`laplace-paper`, `prs-paper`) succeed within 90,000 updates."
            .into(),
        measured: if papers.is_empty() {
            "no paper setting has a finished trial".into()
        } else {
            let lines: Vec<String> = papers
                .iter()
                .map(|r| {
                    format!(
                        "{}: {}/{} trials succeed ({})",
                        r.setting, r.successes, r.trials, r.verdict
                    )
                })
                .collect();
            // The headline adds its own full stop.
            format!("{}. {}", lines.join("; "), conclusion.trim_end_matches('.'))
        },
        visible: !papers.is_empty() && papers.iter().all(|r| r.verdict == "learns"),
    }
}

/// One command per group of units run alike (cutoff, threads, order), from the units
/// themselves, then each setting's flags for a cell by hand.
fn ablation_commands(units: &[Unit], args: &PgcSuiteArgs) -> Vec<String> {
    type Groups<'a> = BTreeMap<(u64, usize, &'a str), (Vec<String>, Vec<u64>)>;
    let mut groups: Groups = BTreeMap::new();
    for u in units {
        let order = match u.order {
            SubmissionOrder::Arrival => " --order arrival",
            SubmissionOrder::RoundRobin => "",
        };
        let (names, seeds) = groups.entry((u.max_updates, u.workers, order)).or_default();
        if !names.contains(&u.setting) {
            names.push(u.setting.clone());
        }
        seeds.push(u.summary.seed);
    }
    let mut commands: Vec<String> = groups
        .iter()
        .map(|((max_updates, workers, order), (names, seeds))| {
            let (low, high) = (
                seeds.iter().min().copied().unwrap_or(0),
                seeds.iter().max().copied().unwrap_or(0),
            );
            format!(
                "cargo xtask suite pgc --ablation --results-dir {} --max-updates {max_updates} \\\n    \
                 --workers {workers} --seed {low} --trials {} --settings {}{order}",
                args.results_dir.display(),
                high - low + 1,
                names.join(",")
            )
        })
        .collect();
    commands.push("# a setting's cell by hand, with the suite's table flags:".to_string());
    commands.extend(
        settings()
            .iter()
            .map(|s| format!("#   {}: {}", s.name(), s.flags())),
    );
    commands
}

#[cfg(test)]
mod tests {
    use super::super::setting::Factor;
    use super::*;
    use privrl_agents::{
        A3cConfig, Exploration, GreedyAction, LossReduction, OptimizerKind, RewardScheme,
    };
    use privrl_privacy::Epsilon;

    #[test]
    fn the_verdict_criterion_by_hand() {
        // 8 of 10 learn, 2 of 10 fail, 3 … 7 are partial.
        assert_eq!(verdict(8, 10, 10), Verdict::Learns);
        assert_eq!(verdict(7, 10, 10), Verdict::Partial);
        assert_eq!(verdict(3, 10, 10), Verdict::Partial);
        assert_eq!(verdict(2, 10, 10), Verdict::Fails);
        // Missing or undecided trials: decided only when no outcome of them changes the
        // verdict.
        assert_eq!(verdict(8, 8, 10), Verdict::Learns);
        assert_eq!(verdict(0, 8, 10), Verdict::Fails);
        assert_eq!(verdict(0, 7, 10), Verdict::Pending);
        assert_eq!(verdict(5, 6, 10), Verdict::Pending);
        assert_eq!(verdict(4, 10, 10), Verdict::Partial);
        assert_eq!(verdict(0, 0, 0), Verdict::Pending);
    }

    /// A report written by an invocation over a few seeds still judges the setting over every
    /// unit on disk: 7 successes, 1 failure at the cutoff and 2 undecided of 10 is pending
    /// (7/10 is partial, 9/10 learns), not 7 of 8 decided.
    #[test]
    fn undecided_units_on_disk_count_as_planned() {
        let infinite = Epsilon::INFINITE;
        let mut units: Vec<Unit> = (0..7)
            .map(|k| Unit::hand_made(MechanismKind::Prs, vec![], infinite, k, Some(1000), 1000))
            .collect();
        units.push(Unit::hand_made(
            MechanismKind::Prs,
            vec![],
            infinite,
            7,
            None,
            PAPER_CUTOFF,
        ));
        units.extend(
            (8..10).map(|k| Unit::hand_made(MechanismKind::Prs, vec![], infinite, k, None, 1000)),
        );
        for planned in [2, 10] {
            let rows = rows(&units, planned);
            let row = rows.iter().find(|r| r.setting == "prs-paper").unwrap();
            assert_eq!((row.successes, row.trials, row.planned), (7, 10, 10));
            assert_eq!(row.verdict, Verdict::Pending.label(), "--trials {planned}");
        }
    }

    #[test]
    fn only_failures_at_a_shorter_cutoff_run_again() {
        let unit = |first_success: Option<u64>, max_updates: u64| {
            let factors = vec![Factor::SparseReward];
            let infinite = Epsilon::INFINITE;
            Unit::hand_made(
                MechanismKind::Prs,
                factors,
                infinite,
                0,
                first_success,
                max_updates,
            )
        };
        // A success stands whatever the cutoff asked for now.
        assert!(unit(Some(500), 1000).settled_within(90_000));
        // A failure is settled at its own cutoff and any shorter one ...
        assert!(unit(None, 1000).settled_within(1000));
        assert!(unit(None, 90_000).settled_within(1000));
        // ... and runs again when a longer one is asked for.
        assert!(!unit(None, 1000).settled_within(1001));
        assert!(!unit(None, 1000).settled_within(90_000));
        // A diverged trial (its loss became NaN or ∞) failed for good, at any cutoff.
        let mut diverged = unit(None, 1000);
        diverged.diverged = Some("non-finite PGC episode loss".into());
        assert!(diverged.settled_within(90_000));
    }

    #[test]
    fn settings_change_exactly_their_factors() {
        let all = settings();
        let paper = &all[0];
        assert_eq!(paper.name(), "laplace-paper");
        let base = paper.config(9, 90_000, SubmissionOrder::RoundRobin);
        assert_eq!(base.a3c.optimizer, OptimizerKind::Sgd);
        assert_eq!(base.a3c.lr, 0.5);
        assert_eq!(base.a3c.buffer_size, 1);
        assert_eq!(base.max_updates, 90_000);
        assert_eq!(
            format!("{:?}", base.a3c),
            format!("{:?}", A3cConfig::pgc_paper().with_workers(9))
        );
        // Stage 1: each factor alone changes its own field only.
        for (setting, &factor) in all[1..7].iter().zip(&Factor::ALL) {
            assert_eq!(setting.factors, vec![factor]);
            let a3c = setting.config(9, 90_000, SubmissionOrder::RoundRobin).a3c;
            let mut expected = A3cConfig::pgc_paper().with_workers(9);
            match factor {
                Factor::SparseReward => expected.reward = RewardScheme::Sparse,
                Factor::MeanLoss => expected.loss_reduction = LossReduction::Mean,
                Factor::EnvStepClock | Factor::SampledActions => {
                    if let Exploration::EpsilonGreedy {
                        ref mut clock,
                        ref mut greedy,
                        ..
                    } = expected.exploration
                    {
                        if factor == Factor::EnvStepClock {
                            *clock = privrl_agents::ExplorationClock::EnvSteps;
                        } else {
                            *greedy = GreedyAction::Sample;
                        }
                    }
                }
                Factor::Bias => expected.bias = true,
                Factor::Adam => {
                    expected.optimizer = OptimizerKind::Adam;
                    expected.lr = 0.005;
                }
                Factor::ClipX10 | Factor::ClipX100 | Factor::Buffer100 => {
                    unreachable!("not a learner factor")
                }
            }
            assert_eq!(format!("{a3c:?}"), format!("{expected:?}"), "{factor:?}");
        }
        // PRS runs with the paper's SGD as well as with Adam, at its own |B| = 100.
        let prs: Vec<&Setting> = all
            .iter()
            .filter(|s| s.mechanism == MechanismKind::Prs)
            .collect();
        assert_eq!(prs.len(), 7);
        assert_eq!(
            prs[0]
                .config(9, 10, SubmissionOrder::RoundRobin)
                .a3c
                .optimizer,
            OptimizerKind::Sgd
        );
        assert_eq!(
            prs[0]
                .config(9, 10, SubmissionOrder::RoundRobin)
                .a3c
                .buffer_size,
            100
        );
        assert_eq!(prs[6].name(), "prs+adam");
        assert_eq!(
            prs[6]
                .config(9, 10, SubmissionOrder::RoundRobin)
                .a3c
                .optimizer,
            OptimizerKind::Adam
        );
        // Names are unique (they are directories).
        let mut names: Vec<String> = all.iter().map(Setting::name).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), all.len());
        assert_eq!(all[14].name(), "laplace+sampled-actions+adam");
    }
}

//! The suite's report: per-setting aggregates, the results table, every release's (ε, δ), the
//! paper's claims checked against the numbers, and the panels of Fig. 2.

use std::path::Path;

use anyhow::Result;
use privrl_agents::TeacherPrivacySummary;
use privrl_privacy::PrivacyCost;
use serde::Serialize;

use super::plan::{Exhausted, KickstartPlan, MapOnto, VanishingPer};
use super::settings::IGNORE_SUFFIX;
use super::smoothed::{SmoothedRun, WINDOW};
use super::students::{StudentSummary, SuiteResults, WEAK_DELTA};
use crate::report::plot::{median, LearningCurves, PlotFiles};
use crate::report::{format_number, Cell, Report};
use crate::run::write_json;
use crate::summary::{Headline, SuiteOutcome};

/// Quartiles (nearest rank) and median of a per-seed metric; ∞ (never reached) allowed.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub(super) struct Spread {
    pub(super) q25: f64,
    pub(super) median: f64,
    pub(super) q75: f64,
}

impl Spread {
    /// NaN quartiles for no values.
    pub(super) fn of(values: &[f64]) -> Self {
        let mut sorted: Vec<f64> = values.iter().copied().filter(|v| !v.is_nan()).collect();
        sorted.sort_by(f64::total_cmp);
        let rank = |p: f64| {
            let n = sorted.len();
            if n == 0 {
                f64::NAN
            } else {
                sorted[((p * n as f64).ceil() as usize).clamp(1, n) - 1]
            }
        };
        Self {
            q25: rank(0.25),
            median: median(&sorted),
            q75: rank(0.75),
        }
    }
}

/// Agrees / Disagrees / Inconclusive, by a criterion fixed in this file before any run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub(super) enum Verdict {
    Agrees,
    Disagrees,
    Inconclusive,
}

/// Fewer seeds than this in any setting a claim compares: Inconclusive.
pub(super) const MIN_SEEDS: usize = 10;

/// Which metric a verdict is computed on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub(super) enum Metric {
    /// The primary one: [`CRITERION_METRICS`].
    Smoothed,
    /// The paper's: first epoch whose epoch return reaches the threshold; mean of the last 3
    /// epochs.
    Paper,
}

/// How every claim is measured and decided (issue 40), fixed before the runs it judges.
pub(super) const CRITERION_METRICS: &str = "Metrics (fixed before the runs they judge): the \
    smoothed curve at each epoch is the mean return of the last 100 episodes finished so far \
    (Gymnasium's leaderboard convention); speed = environment steps until the smoothed curve, \
    over a full window of 100 episodes, first reaches the threshold (never: ∞); final return = \
    the mean of the run's last N = 100 episodes. The paper's metric (the first epoch whose \
    epoch return reaches the threshold; the mean of the last 3 epochs) is the second column. \
    Each claim is decided on both by the same rule; where the two verdicts differ the claim is \
    Inconclusive and both are printed. Claims are judged on the settings carrying the paper's \
    names only (its objective, eq. 15–17, as written: uniformly random releases penalised), \
    never on privrl's `-ignore` settings; with fewer than 10 seeds in any compared setting \
    the verdict is Inconclusive.";

/// Claim (i)'s criterion.
pub(super) const CRITERION_SPEED: &str = "Agrees if, for every Fig. 2(c) privacy-aware \
    setting, PPO (64, 64)'s median speed divided by the setting's is at least 2 and the \
    setting's 75th percentile is below PPO (64, 64)'s 25th (interquartile ranges apart; never \
    reaching counts as ∞); Disagrees if for every one that ratio is below 1.25 (a median that \
    never reaches counts as below); Inconclusive otherwise, when PPO (64, 64)'s median never \
    reaches the threshold, or with fewer than 10 seeds.";

/// Claim (ii)'s criterion.
pub(super) const CRITERION_LEVEL: &str = "Agrees if every Fig. 2(c) privacy-aware setting's \
    median final return is above PPO (32, 32)'s and its 25th percentile above PPO (32, 32)'s \
    75th; Disagrees if every such median is at or below PPO (32, 32)'s median; Inconclusive \
    otherwise or with fewer than 10 seeds.";

/// Claim (iii)'s criterion.
pub(super) const CRITERION_UNAWARE: &str = "Agrees if every Fig. 2(d) privacy-unaware \
    setting's median final return is below PPO (32, 32)'s and its 75th percentile below PPO \
    (32, 32)'s 25th; Disagrees if every such median is at or above PPO (32, 32)'s median; \
    Inconclusive otherwise or with fewer than 10 seeds.";

/// Whether a claim can be judged: some settings to judge, and every setting compared
/// (`judged` and the reference) with at least [`MIN_SEEDS`] seeds.
fn enough(reference: &SettingRow, judged: &[&SettingRow]) -> bool {
    !judged.is_empty()
        && reference.seeds >= MIN_SEEDS
        && judged.iter().all(|r| r.seeds >= MIN_SEEDS)
}

impl SettingRow {
    fn speed(&self, metric: Metric) -> Spread {
        match metric {
            Metric::Smoothed => self.steps,
            Metric::Paper => self.epochs,
        }
    }

    fn final_return(&self, metric: Metric) -> Spread {
        match metric {
            Metric::Smoothed => self.finals100,
            Metric::Paper => self.finals,
        }
    }
}

/// Claim (i) by [`CRITERION_SPEED`] on `metric`.
pub(super) fn verdict_speed(
    ppo64: &SettingRow,
    students: &[&SettingRow],
    metric: Metric,
) -> Verdict {
    let reference = ppo64.speed(metric);
    if !enough(ppo64, students) || !reference.median.is_finite() {
        return Verdict::Inconclusive;
    }
    let ratio = |r: &SettingRow| reference.median / r.speed(metric).median;
    if students
        .iter()
        .all(|r| ratio(r) >= 2.0 && r.speed(metric).q75 < reference.q25)
    {
        Verdict::Agrees
    } else if students.iter().all(|r| ratio(r) < 1.25) {
        Verdict::Disagrees
    } else {
        Verdict::Inconclusive
    }
}

/// Claim (ii) by [`CRITERION_LEVEL`] on `metric`.
pub(super) fn verdict_level(
    ppo32: &SettingRow,
    students: &[&SettingRow],
    metric: Metric,
) -> Verdict {
    if !enough(ppo32, students) {
        return Verdict::Inconclusive;
    }
    let base = ppo32.final_return(metric);
    let of = |r: &SettingRow| r.final_return(metric);
    if students
        .iter()
        .all(|r| of(r).median > base.median && of(r).q25 > base.q75)
    {
        Verdict::Agrees
    } else if students.iter().all(|r| of(r).median <= base.median) {
        Verdict::Disagrees
    } else {
        Verdict::Inconclusive
    }
}

/// Claim (iii) by [`CRITERION_UNAWARE`] on `metric`.
pub(super) fn verdict_unaware(
    ppo32: &SettingRow,
    unaware: &[&SettingRow],
    metric: Metric,
) -> Verdict {
    if !enough(ppo32, unaware) {
        return Verdict::Inconclusive;
    }
    let base = ppo32.final_return(metric);
    let of = |r: &SettingRow| r.final_return(metric);
    if unaware
        .iter()
        .all(|r| of(r).median < base.median && of(r).q75 < base.q25)
    {
        Verdict::Agrees
    } else if unaware.iter().all(|r| of(r).median >= base.median) {
        Verdict::Disagrees
    } else {
        Verdict::Inconclusive
    }
}

/// The verdict printed for a claim: the smoothed metric's, unless the paper's metric gives
/// another, in which case the claim is Inconclusive ([`CRITERION_METRICS`]).
pub(super) fn combined(smoothed: Verdict, paper: Verdict) -> Verdict {
    if smoothed == paper {
        smoothed
    } else {
        Verdict::Inconclusive
    }
}

/// Per-setting aggregates.
#[derive(Debug, Clone, Serialize)]
pub(super) struct SettingRow {
    setting: String,
    label: String,
    panels: Vec<String>,
    seeds: usize,
    /// Seeds whose smoothed curve reached the threshold.
    reached_smoothed: usize,
    /// Seeds whose epoch return reached the threshold (the paper's metric).
    reached: usize,
    /// Environment steps to the threshold on the smoothed curve (∞ where never reached).
    pub(super) steps: Spread,
    /// Mean return of the last 100 episodes.
    pub(super) finals100: Spread,
    /// The paper's metric: epochs to 90% of the teacher (∞ where never reached).
    pub(super) epochs: Spread,
    /// Epochs to 90% of the run's own final return (∞ where it ends no better than random).
    pub(super) plateau: Spread,
    /// The paper's metric: mean epoch return of the last 3 epochs.
    pub(super) finals: Spread,
    /// (ε, δ) of one release at k₀ (settings with the mechanism).
    release_at_k0: Option<PrivacyCost>,
    median_epsilon_basic: Option<f64>,
    median_delta_basic: Option<f64>,
    median_epsilon_advanced: Option<f64>,
    median_delta_advanced: Option<f64>,
    median_dirichlet_releases: Option<f64>,
    median_exhausted_at_epoch: Option<f64>,
}

fn aggregate(results: &SuiteResults) -> Vec<SettingRow> {
    let mut rows: Vec<SettingRow> = Vec::new();
    for setting in &results.settings {
        let runs: Vec<(&StudentSummary, &SmoothedRun)> = results
            .runs
            .iter()
            .zip(&results.smoothed)
            .filter(|(r, _)| r.setting == setting.name)
            .collect();
        let epochs: Vec<f64> = runs
            .iter()
            .map(|(r, _)| r.epochs_to_threshold.map_or(f64::INFINITY, |e| e as f64))
            .collect();
        let steps: Vec<f64> = runs
            .iter()
            .map(|(_, s)| s.steps_to_threshold.unwrap_or(f64::INFINITY))
            .collect();
        let finals: Vec<f64> = runs.iter().map(|(r, _)| r.final_return).collect();
        let finals100: Vec<f64> = runs.iter().map(|(_, s)| s.final_return).collect();
        let privacy: Vec<&TeacherPrivacySummary> = runs
            .iter()
            .filter_map(|(r, _)| r.privacy.as_ref())
            .collect();
        let of = |f: &dyn Fn(&TeacherPrivacySummary) -> f64| {
            (!privacy.is_empty()).then(|| median(&privacy.iter().map(|p| f(p)).collect::<Vec<_>>()))
        };
        let exhausted: Vec<f64> = runs
            .iter()
            .filter_map(|(r, _)| r.exhausted_at_epoch.map(|e| e as f64))
            .collect();
        let plateau: Vec<f64> = runs
            .iter()
            .map(|(r, _)| r.epochs_to_plateau.map_or(f64::INFINITY, |e| e as f64))
            .collect();
        rows.push(SettingRow {
            steps: Spread::of(&steps),
            finals100: Spread::of(&finals100),
            epochs: Spread::of(&epochs),
            plateau: Spread::of(&plateau),
            finals: Spread::of(&finals),
            release_at_k0: results
                .schedules
                .iter()
                .find(|(n, _, _)| *n == setting.name)
                .and_then(|(_, s, _)| s.first().and_then(|r| r.cost)),
            setting: setting.name.clone(),
            label: setting.label.clone(),
            panels: setting.panels.clone(),
            seeds: runs.len(),
            reached_smoothed: runs
                .iter()
                .filter(|(_, s)| s.steps_to_threshold.is_some())
                .count(),
            reached: runs
                .iter()
                .filter(|(r, _)| r.epochs_to_threshold.is_some())
                .count(),
            median_epsilon_basic: of(&|p| p.basic.epsilon),
            median_delta_basic: of(&|p| p.basic.delta),
            median_epsilon_advanced: of(&|p| p.advanced.epsilon),
            median_delta_advanced: of(&|p| p.advanced.delta),
            median_dirichlet_releases: of(&|p| p.dirichlet_releases as f64),
            median_exhausted_at_epoch: (!exhausted.is_empty()).then(|| median(&exhausted)),
        });
    }
    rows
}

fn opt(v: Option<f64>) -> Cell {
    v.map_or(Cell::from("–"), Cell::from)
}

fn format_epochs(v: f64) -> String {
    if v.is_finite() {
        format_number(v)
    } else if v.is_nan() {
        "–".into()
    } else {
        "never".into()
    }
}

/// A spread as "median (q25 – q75)", never/– spelled out.
fn format_spread(s: &Spread) -> String {
    format!(
        "{} ({} – {})",
        format_epochs(s.median),
        format_epochs(s.q25),
        format_epochs(s.q75)
    )
}

/// The reference's median divided by the setting's (– where either never reaches).
fn speedup(reference: Option<&Spread>, s: &Spread) -> Cell {
    opt(reference
        .map(|r| r.median / s.median)
        .filter(|v| v.is_finite() && *v > 0.0))
}

/// A δ total, with δ ≥ 1 named for what it is: a guarantee that promises nothing (basic
/// composition sums the δ of every release, so a long run passes 1 quickly). The number is
/// still printed, never clipped, so that the reader sees how far past 1 it is.
fn format_delta(delta: Option<f64>) -> String {
    match delta {
        None => "–".into(),
        Some(d) if d >= 1.0 => format!("{} (vacuous: ≥ 1)", format_number(d)),
        Some(d) => format_number(d),
    }
}

fn format_cost(cost: Option<PrivacyCost>) -> String {
    cost.map_or("–".into(), |c| {
        format!("({}, {})", format_number(c.epsilon), format_number(c.delta))
    })
}

/// A figure's title: short enough to fit (the env, seeds and band go in the footnote and
/// caption).
fn panel_plot(
    plan: &KickstartPlan,
    results: &SuiteResults,
    dir: &Path,
    panel: &str,
    title: &str,
) -> Result<Option<PlotFiles>> {
    let mut chart = LearningCurves::new(title)
        .x_label("environment steps")
        .y_label(format!("mean return of the last {WINDOW} episodes"))
        .band(plan.band_percentiles.0, plan.band_percentiles.1)
        .reference(
            format!("threshold {}", format_number(results.threshold)),
            results.threshold,
        );
    let mut any = false;
    // privrl's modification is shown against the baseline it is meant to beat.
    let reference = (panel == "ignore").then_some("ppo-32");
    for setting in results
        .settings
        .iter()
        .filter(|s| s.panels.iter().any(|p| p == panel) || Some(s.name.as_str()) == reference)
    {
        let curves: Vec<Vec<(f64, f64)>> = results
            .runs
            .iter()
            .zip(&results.smoothed)
            .filter(|(r, _)| r.setting == setting.name)
            .map(|(_, s)| s.curve.clone())
            .collect();
        if !curves.is_empty() {
            // The baselines (panel a) are in every panel; a panel is drawn for its own settings.
            any |= Some(setting.name.as_str()) != reference
                && (panel == "a" || !setting.panels.iter().any(|p| p == "a"));
            chart = chart.series(setting.label.clone(), curves);
        }
    }
    if !any {
        return Ok(None);
    }
    Ok(Some(chart.save(&dir.join(format!("fig2{panel}")))?))
}

/// The headline the quick mode can show (Fig. 2(b)): a kickstarted student learns from the
/// teacher. Judged on conventional kickstarting (the exact teacher, λ = 0) against PPO
/// (32, 32) from scratch: its median final return (last 100 episodes) is higher. The
/// privacy-aware students' speed-up (claim (i)) is the suite's open question and is judged in
/// the claims section, not here.
fn headline(rows: &[SettingRow]) -> Headline {
    let row = |name: &str| rows.iter().find(|r| r.setting == name);
    let (kick, scratch) = (row("kickstart"), row("ppo-32"));
    Headline {
        effect: format!(
            "a kickstarted student learns from its teacher (Fig. 2(b)): with the exact teacher \
             (λ = 0), the (32, 32) student's median final return (last {WINDOW} episodes) is \
             above PPO (32, 32) from scratch."
        ),
        measured: match (kick, scratch) {
            (Some(k), Some(p)) => format!(
                "median final return {} kickstarted against {} from scratch",
                format_epochs(k.finals100.median),
                format_epochs(p.finals100.median)
            ),
            _ => "conventional kickstarting or PPO (32, 32) did not run".to_string(),
        },
        visible: matches!((kick, scratch), (Some(k), Some(p))
            if k.finals100.median > p.finals100.median),
    }
}

pub(super) fn write_report(
    plan: &KickstartPlan,
    results: &SuiteResults,
    dir: &Path,
) -> Result<SuiteOutcome> {
    let rows = aggregate(results);
    let headline = headline(&rows);
    write_json(&dir.join("summary.json"), &rows)?;
    let mut report = Report::new(dir, "Privacy-preserving kickstarting (Fig. 2)");
    report.paragraph(&plan.noise_rng.report_line());
    report.paragraph(&protocol_paragraph(plan, results));
    report.paragraph(&dirichlet_paragraph(plan));
    if let Some(points) = plan.grid_release {
        report.paragraph(&grid_release_paragraph(points));
    }
    report.paragraph(&crate::report::PrivacyScope::Kickstart.sentence());
    results_table(&mut report, &rows);
    releases_table(&mut report, plan, results);
    // The paper's three claims, each judged by a criterion fixed in this file before any run.
    report.heading("The paper's claims against these numbers");
    report.paragraph(CRITERION_METRICS);
    let (claims, verdicts) = claims(&rows);
    report.bullets(claims);
    write_json(&dir.join("verdicts.json"), &verdicts)?;
    figures_section(&mut report, plan, results, dir)?;
    headline.add_to(&mut report);
    report.reproduce([reproduce_command(plan, dir)]);
    Ok(SuiteOutcome {
        report: report.write()?,
        headline,
    })
}

/// The protocol: the paper, the environment, the teacher and the students, the threshold.
fn protocol_paragraph(plan: &KickstartPlan, results: &SuiteResults) -> String {
    let t = &results.teacher;
    format!(
        "Gohari et al., *Privacy-Preserving Kickstarting Deep Reinforcement Learning with \
         Privacy-Aware Learners*. Environment `{}`, {} environment steps per epoch, {} epochs per \
         student, {} seeds per setting. Teacher: (64, 64) PPO trained {} epochs; its stochastic \
         policy returns {} over {} episodes cut after {} steps, as training episodes are (a random \
         policy: {}); certified Lipschitz bound of softmax ∘ MLP L = {}. Students: (32, 32) PPO. \
         The threshold is 90% of the way from the random return to the teacher's: {} (computed \
         from the teacher's summary here; the units' own `summary.json` may hold an older one, \
         which the report does not use). Primary metrics on the mean return of the last {WINDOW} \
         episodes (see the claims' criterion); the paper's (an epoch's return is the mean return \
         of the episodes that ended in it, carried forward when none did; final = mean of the \
         last 3 epochs) beside them. Runs finished: {} of {}{}.",
        plan.env,
        plan.steps_per_epoch,
        plan.epochs,
        plan.seeds,
        plan.teacher_epochs,
        format_number(t.final_return),
        t.evaluation_episodes,
        t.episode_cap.map_or("–".into(), |c| c.to_string()),
        format_number(t.random_return),
        format_number(t.lipschitz),
        format_number(results.threshold),
        results.runs.len(),
        results.planned,
        match results.planned - results.runs.len() {
            0 => String::new(),
            _ => " (the medians and bands are over the finished seeds; a rerun of the same \
                  command continues the rest from their checkpoints)"
                .into(),
        },
    )
}

/// The Dirichlet teacher, its privacy accounting and the student's weighting.
/// What `--grid-release N` changes in the Dirichlet paragraph.
fn grid_release_paragraph(points: u32) -> String {
    format!(
        "Grid release (`--grid-release {points}`): each Dir_k release is the floating-point-safe \
         two-action variant instead, one point (j/{points}, 1 − j/{points}) of Δ_{{2,τ}} drawn by \
         exact integer arithmetic with the Beta(kπ₁, k − kπ₁) density's weights, and each \
         release's cost is that mechanism's own pure ε = 2kΔG + 4μ with δ = 0 (Δ = min(L·b/√2, \
         1 − 2η), G the largest |logit| on the grid), not Theorem 1's; the ledger composes it \
         the same way. An exhausted teacher's uniformly random releases are still f64 draws, \
         independent of the teacher."
    )
}

fn dirichlet_paragraph(plan: &KickstartPlan) -> String {
    format!(
        "Dirichlet teacher: k₀ = {}, multiplied by the vanishing coefficient c at the start of \
         every {} after the first; the policy is {} onto Δ_{{m,η}} (η = {}); Theorem 1 with τ = {}, \
         b = {}, L times the map's Lipschitz factor; δ is exact for m = 2 and otherwise an upper \
         confidence bound on its Monte Carlo estimate at the confidence in each unit's config.json \
         (`delta_confidence`: units run before 2026-11-28 used a two-sided Hoeffding half-width at \
         0.95, later ones a one-sided Clopper–Pearson bound at 1 − 1e-9), computed once per \
         distinct k (memoised). Exhaustion rule, as implemented: the teacher releases through \
         Dir_k while k ≥ its concentration floor and δ's bound is below 1{}; {}. Once exhausted it \
         shares {}. Student: α_λ = λ·√(log(1/β)/(2(k+1))) with β = {}, balance {}; the settings \
         with the paper's names apply φ_λ to every release, uniformly random ones included (eq. \
         16 at k = 0, the paper's objective as written); the settings ending in `{IGNORE_SUFFIX}` \
         give those releases no weight (φ ≡ 0: privrl's modification, reported beside, never \
         judged as the paper's). PPO {}. Every release is in the teacher's ledger; totals are per \
         student run (basic composition: Σε, Σδ; advanced: Kairouz et al., δ' = 1e-6).",
        plan.k0,
        match plan.vanishing_per {
            VanishingPer::Rollout => "rollout (epoch; `--vanishing-per trajectory` for episodes)",
            VanishingPer::Trajectory => "trajectory (episode)",
        },
        match plan.map_onto {
            MapOnto::Mix => "mixed with the uniform one (`--map-onto project` projects)",
            MapOnto::Project => "projected (Euclidean)",
        },
        plan.eta.map_or("0.4/m".into(), format_number),
        plan.tau.map_or(
            format!(
                "solved for δ = {} per release at k₀ (`--target-delta`)",
                plan.target_delta
            ),
            format_number
        ),
        plan.adjacency,
        plan.budget_epsilon
            .map_or(String::new(), |b| format!(" and the ε budget {b} is not spent")),
        if plan.allow_weak_privacy {
            format!(
                "the floor is {} (`--allow-weak-privacy`: releases with δ ≥ {WEAK_DELTA} are made)",
                plan.concentration_floor
            )
        } else {
            format!(
                "the floor is {} raised to the last k of the schedule whose δ is below \
                 {WEAK_DELTA}, so no release with δ ≥ {WEAK_DELTA} is made (a setting with δ ≥ \
                 {WEAK_DELTA} at k₀ is refused)",
                plan.concentration_floor
            )
        },
        match plan.exhausted {
            Exhausted::Uniform => "uniformly random policies ((0, 0)-DP)",
            Exhausted::Stop => "nothing",
        },
        plan.beta,
        plan.balance,
        if plan.epoch_reset {
            "resets the environment at every epoch's end (Spinning Up)"
        } else {
            "carries episodes over epoch boundaries (`--no-epoch-reset`)"
        },
    )
}

/// The results table: one row per setting, both metrics, and how to read it.
fn results_table(report: &mut Report, rows: &[SettingRow]) {
    let headers = [
        "fig.",
        "setting",
        "seeds",
        "steps to threshold, smoothed (median, 25–75%)",
        "reached",
        "speed-up vs PPO (64, 64)",
        "final return, last 100 episodes (median, 25–75%)",
        "paper: epochs to threshold (median, 25–75%)",
        "paper: reached",
        "paper: speed-up",
        "paper: final return, last 3 epochs (median, 25–75%)",
        "Dirichlet releases",
        "exhausted at epoch",
        "ε basic",
        "δ basic",
        "ε advanced",
        "δ advanced",
    ];
    let p64 = rows.iter().find(|r| r.setting == "ppo-64");
    let table: Vec<Vec<Cell>> = rows
        .iter()
        .filter(|r| r.seeds > 0)
        .map(|r| {
            vec![
                Cell::from(r.panels.join(",")),
                Cell::from(&r.label),
                Cell::from(format!("{}", r.seeds)),
                Cell::from(format_spread(&r.steps)),
                Cell::from(format!("{}/{}", r.reached_smoothed, r.seeds)),
                speedup(p64.map(|p| &p.steps), &r.steps),
                Cell::from(format_spread(&r.finals100)),
                Cell::from(format_spread(&r.epochs)),
                Cell::from(format!("{}/{}", r.reached, r.seeds)),
                speedup(p64.map(|p| &p.epochs), &r.epochs),
                Cell::from(format_spread(&r.finals)),
                opt(r.median_dirichlet_releases),
                opt(r.median_exhausted_at_epoch),
                opt(r.median_epsilon_basic),
                Cell::from(format_delta(r.median_delta_basic)),
                opt(r.median_epsilon_advanced),
                Cell::from(format_delta(r.median_delta_advanced)),
            ]
        })
        .collect();
    report.heading("Results");
    report.table(&headers, table);
    let missing: Vec<&str> = rows
        .iter()
        .filter(|r| r.seeds == 0)
        .map(|r| r.setting.as_str())
        .collect();
    report.paragraph(&format!(
        "Medians and quartiles (nearest rank) over seeds; a seed that never reaches the \
         threshold counts as never (∞). Speed-up: PPO (64, 64)'s median divided by the \
         setting's. Privacy columns: medians over seeds of the run's totals. A δ total above 1 \
         is a vacuous guarantee; it is reported, not clipped. Settings of this plan without a \
         finished unit: {}.",
        if missing.is_empty() {
            "none".into()
        } else {
            missing.join(", ")
        }
    ));
}

/// Every release's (ε, δ): one row per (setting, k of its schedule).
fn releases_table(report: &mut Report, plan: &KickstartPlan, results: &SuiteResults) {
    let headers = [
        "setting",
        "step (epoch)",
        "k",
        "(ε, δ) of one release",
        "released",
    ];
    let mut table = Vec::new();
    let mut notes = Vec::new();
    for (name, schedule, same) in &results.schedules {
        if !same {
            notes.push(name.as_str());
        }
        for r in schedule {
            let status = match (r.released, r.cost) {
                (true, Some(c)) if c.delta >= WEAK_DELTA => {
                    format!("yes, δ ≥ {WEAK_DELTA} (weak)")
                }
                (true, _) => "yes".into(),
                (false, None) => "no: exhausted (δ's bound is 1, or as the unit recorded)".into(),
                (false, Some(_)) => "no: exhausted (k below the floor)".into(),
            };
            table.push(vec![
                Cell::from(name.as_str()),
                Cell::from(format!("{}", r.step)),
                Cell::from(r.concentration),
                Cell::from(
                    r.cost
                        .map_or("(–, 1): no guarantee".into(), |c| format_cost(Some(c))),
                ),
                Cell::from(status),
            ]);
        }
    }
    if table.is_empty() {
        return;
    }
    report.heading("The (ε, δ) of every release");
    report.table(&headers, table);
    report.paragraph(&format!(
        "Each k of the teacher's schedule k₀, c·k₀, c²·k₀, … (one per {}), the (ε, δ) of one \
         release there by Theorem 1 (unit of privacy: one teacher observation, adjacency \
         ‖x − x'‖₂ ≤ b = {}), and whether the teacher releases at it; the last row of a setting \
         is where it is exhausted. For a setting with finished units: what the first unit's \
         ledger recorded (its `metrics.csv`: per epoch, the increase of the basic totals over \
         its releases), with the δ bound it ran with; otherwise the current plan's schedule \
         by Theorem 1.{}",
        match plan.vanishing_per {
            VanishingPer::Rollout => format!("epoch of {} releases", plan.steps_per_epoch),
            VanishingPer::Trajectory => "episode".into(),
        },
        plan.adjacency,
        if notes.is_empty() {
            String::new()
        } else {
            format!(
                " The units of {} ran with another teacher configuration than this plan's (they \
                 predate the refusal of releases with δ ≥ {WEAK_DELTA} after k₀); their rows \
                 show what they ran.",
                notes.join(", ")
            )
        }
    ));
}

/// The paper's three claims as bullets, each with its criterion, the numbers on both metrics
/// and the verdict, and the verdicts by name (`verdicts.json`).
fn claims(rows: &[SettingRow]) -> (Vec<String>, Vec<(&'static str, Verdict)>) {
    let row = |name: &str| rows.iter().find(|r| r.setting == name);
    let in_panel = |panel: &str, prefix: &str| -> Vec<&SettingRow> {
        rows.iter()
            .filter(|r| {
                r.setting.starts_with(prefix)
                    && !r.setting.ends_with(IGNORE_SUFFIX)
                    && r.panels.iter().any(|p| p == panel)
            })
            .collect()
    };
    let aware = in_panel("c", "aware-");
    let unaware = in_panel("d", "unaware-");
    // "; a; b" after the reference, nothing when no setting is judged.
    let list = |rows: &[&SettingRow], f: &dyn Fn(&SettingRow) -> String| {
        rows.iter()
            .map(|r| format!("; {}", f(r)))
            .collect::<String>()
    };
    let speed_of = |r: &SettingRow| {
        format!(
            "{} {} steps, paper's {} epochs (seeds: {})",
            r.label,
            format_spread(&r.steps),
            format_spread(&r.epochs),
            r.seeds
        )
    };
    let finals_of = |r: &SettingRow| {
        format!(
            "{} {} over the last {WINDOW} episodes, paper's {} over the last 3 epochs (seeds: {})",
            r.label,
            format_spread(&r.finals100),
            format_spread(&r.finals),
            r.seeds
        )
    };
    let judged = |v: fn(&SettingRow, &[&SettingRow], Metric) -> Verdict,
                  reference: &SettingRow,
                  students: &[&SettingRow]| {
        let (smoothed, paper) = (
            v(reference, students, Metric::Smoothed),
            v(reference, students, Metric::Paper),
        );
        let verdict = combined(smoothed, paper);
        let why = if students.is_empty() {
            " (no finished unit of the paper's setting)".to_string()
        } else if smoothed != paper {
            format!(" (smoothed metric: {smoothed:?}; paper's metric: {paper:?}: they disagree)")
        } else {
            format!(" (both metrics: {smoothed:?})")
        };
        (verdict, why)
    };
    let mut claims = Vec::new();
    let mut verdicts = Vec::new();
    if let Some(p64) = row("ppo-64") {
        let (v, why) = judged(verdict_speed, p64, &aware);
        verdicts.push(("speed", v));
        claims.push(format!(
            "(i) \"privacy-aware students converge roughly 4 times faster than the teacher\" \
             (Fig. 2(c)). Criterion: {CRITERION_SPEED} Steps to the threshold: {}{}. \
             **{v:?}**{why}.",
            speed_of(p64),
            list(&aware, &speed_of),
        ));
    }
    if let Some(p32) = row("ppo-32") {
        let (v, why) = judged(verdict_level, p32, &aware);
        verdicts.push(("level", v));
        claims.push(format!(
            "(ii) \"the student converges to a performance level that was not possible without \
             the demonstrations\" (Fig. 2(b, c)). Criterion: {CRITERION_LEVEL} Final returns: \
             {}{}. **{v:?}**{why}.",
            finals_of(p32),
            list(&aware, &finals_of),
        ));
        let (v, why) = judged(verdict_unaware, p32, &unaware);
        verdicts.push(("unaware", v));
        claims.push(format!(
            "(iii) \"the privacy-unaware students perform worse than the baseline PPO agents \
             that do not use kickstarting at all\" once the teacher shares random policies \
             (Fig. 2(d)). Criterion: {CRITERION_UNAWARE} Final returns: {}{}. **{v:?}**{why}.",
            finals_of(p32),
            list(&unaware, &finals_of),
        ));
    }
    let extra: Vec<&SettingRow> = rows
        .iter()
        .filter(|r| r.setting.ends_with(IGNORE_SUFFIX) && r.seeds > 0)
        .collect();
    if !extra.is_empty() {
        claims.push(format!(
            "Not judged (privrl's modification, φ ≡ 0 on uniform releases). Steps to the \
             threshold{}. Final returns{}.",
            list(&extra, &speed_of).replacen(';', ":", 1),
            list(&extra, &finals_of).replacen(';', ":", 1)
        ));
    }
    (claims, verdicts)
}

/// Fig. 2's panels, the sweeps and privrl's modification, each where any of its settings ran.
fn figures_section(
    report: &mut Report,
    plan: &KickstartPlan,
    results: &SuiteResults,
    dir: &Path,
) -> Result<()> {
    report.heading("Figures");
    report.paragraph(&format!(
        "Smoothed curves: the mean return of the last {WINDOW} episodes (of fewer before 100 have \
         finished) against environment steps; lines: median over seeds, bands: {}–{}th \
         percentile over seeds; dashed: the threshold. `{}`, seeds per setting as in the legend.",
        plan.band_percentiles.0, plan.band_percentiles.1, plan.env
    ));
    for (panel, title) in [
        ("a", "Fig. 2(a): PPO (64, 64) and (32, 32)"),
        ("b", "Fig. 2(b): kickstarting, no privacy"),
        ("c", "Fig. 2(c): privacy-aware students"),
        ("d", "Fig. 2(d): privacy-unaware students"),
        ("sweep-c", "Sweep of c (privacy-aware)"),
        ("sweep-l", "Sweep of λ (privacy-aware, c = 0.3)"),
        ("ignore", "privrl's φ ≡ 0 on uniform releases"),
    ] {
        if let Some(files) = panel_plot(plan, results, dir, panel, title)? {
            report.plot(title, &files);
        }
    }
    Ok(())
}

/// The command that regenerates exactly the units of this report: every flag that enters the
/// plan ([`KickstartPlan`]) at a value other than its default, and `--env`, `--out`, `--seeds`,
/// the epochs and the backend always (a test parses it back to the same plan).
pub(super) fn reproduce_command(plan: &KickstartPlan, dir: &Path) -> String {
    let defaults = super::plan::KickstartArgs::quick(0, plan.backend, 0);
    let mut flags = vec![
        format!("--env '{}'", plan.env),
        format!("--seeds {}", plan.seeds),
        format!("--epochs {}", plan.epochs),
        format!("--teacher-epochs {}", plan.teacher_epochs),
        format!("--steps-per-epoch {}", plan.steps_per_epoch),
        format!("--backend {}", plan.backend),
    ];
    if plan.ablation {
        flags.push("--ablation".into());
    }
    if plan.dir_per_env {
        flags.push(format!(
            "--out {}",
            dir.parent().map_or(".".into(), |p| p.display().to_string())
        ));
    }
    if plan.sweep {
        flags.push("--sweep".into());
    }
    if !plan.only.is_empty() {
        flags.push(format!("--settings {}", plan.only.join(",")));
    }
    let mut value = |name: &str, v: String, default: String| {
        if v != default {
            flags.push(format!("--{name} {v}"));
        }
    };
    value(
        "checkpoint-every",
        plan.checkpoint_every.to_string(),
        "0".into(),
    );
    value("k0", plan.k0.to_string(), defaults.k0.to_string());
    value(
        "lambda",
        plan.lambda.to_string(),
        defaults.lambda.to_string(),
    );
    value("beta", plan.beta.to_string(), defaults.beta.to_string());
    value(
        "balance",
        plan.balance.to_string(),
        defaults.balance.to_string(),
    );
    value(
        "target-delta",
        plan.target_delta.to_string(),
        defaults.target_delta.to_string(),
    );
    value(
        "delta-confidence",
        plan.delta_confidence.to_string(),
        defaults.delta_confidence.to_string(),
    );
    value(
        "adjacency",
        plan.adjacency.to_string(),
        defaults.adjacency.to_string(),
    );
    value(
        "concentration-floor",
        plan.concentration_floor.to_string(),
        defaults.concentration_floor.to_string(),
    );
    value("seed", plan.seed.to_string(), "0".into());
    if let Some(eta) = plan.eta {
        flags.push(format!("--eta {eta}"));
    }
    if let Some(tau) = plan.tau.filter(|_| !plan.ablation) {
        flags.push(format!("--tau {tau}"));
    }
    if let Some(b) = plan.budget_epsilon {
        flags.push(format!("--budget-epsilon {b}"));
    }
    if plan.allow_weak_privacy {
        flags.push("--allow-weak-privacy".into());
    }
    if plan.map_onto == MapOnto::Project {
        flags.push("--map-onto project".into());
    }
    if let Some(points) = plan.grid_release {
        flags.push(format!("--grid-release {points}"));
    }
    if plan.exhausted == Exhausted::Stop {
        flags.push("--exhausted stop".into());
    }
    if plan.vanishing_per == VanishingPer::Trajectory {
        flags.push("--vanishing-per trajectory".into());
    }
    if !plan.epoch_reset && !plan.ablation {
        flags.push("--no-epoch-reset".into());
    }
    let noise = plan.noise_rng.reproduce_flag();
    format!("cargo xtask suite kickstart {}{}", flags.join(" "), noise)
}

/// The CartPole diagnosis (`--ablation`): one row per setting from whatever units exist, the
/// speed-up against PPO (64, 64) with the same epoch-end rule.
pub(super) fn write_ablation_report(
    plan: &KickstartPlan,
    results: &SuiteResults,
    dir: &Path,
) -> Result<SuiteOutcome> {
    let rows = aggregate(results);
    write_json(&dir.join("summary.json"), &rows)?;
    let mut report = Report::new(dir, &format!("Kickstarting diagnosis on {}", plan.env));
    report.paragraph(&ablation_paragraph(plan, results));
    report.paragraph(&crate::report::PrivacyScope::Kickstart.sentence());
    ablation_table(&mut report, &rows, results);
    let headline = ablation_headline(&rows);
    headline.add_to(&mut report);
    report.reproduce([reproduce_command(plan, dir)]);
    Ok(SuiteOutcome {
        report: report.write()?,
        headline,
    })
}

/// The diagnosis' protocol: the pre-fix setting, the units finished, the teacher and how
/// success and speed-up are measured.
fn ablation_paragraph(plan: &KickstartPlan, results: &SuiteResults) -> String {
    let t = &results.teacher;
    let expected = results.settings.len() * plan.seeds;
    format!(
        "One-factor ablation from the pre-fix setting of `suite kickstart` (issue 20): privacy-\
         aware (32, 32) student, Dirichlet teacher with k₀ = 5, vanishing coefficient c = 0.3 \
         per rollout, λ = 0.5, β = {}, mixing onto Δ_{{m,η}} (η = 0.4/m), τ = {}, uniformly \
         random releases once k < {} and φ_λ applied to them, episodes carried over PPO \
         epochs. Each row changes one factor. {} units of {} finished ({} settings × {} seeds). \
         {} epochs of {} steps per unit. Teacher: (64, 64) PPO, {} epochs, stochastic return {} \
         (random policy {}); \"success\" = the epoch return reaches 90% of the way from random \
         to the teacher ({}) within the run. Speed-up = median epochs to that threshold of PPO \
         (64, 64) with the same epoch-end rule divided by the setting's (seeds that never reach \
         count as ∞; – where a median is ∞). \"Own plateau\" = epochs to 90% of the way from \
         random to the run's own final return (mean of its last 3 epochs).",
        plan.beta,
        plan.tau.map_or("calibrated".into(), format_number),
        plan.concentration_floor,
        results.runs.len(),
        expected,
        results.settings.len(),
        plan.seeds,
        plan.epochs,
        plan.steps_per_epoch,
        plan.teacher_epochs,
        format_number(t.final_return),
        format_number(t.random_return),
        format_number(results.threshold),
    )
}

/// Success rate and speed-up per factor: one row per setting.
fn ablation_table(report: &mut Report, rows: &[SettingRow], results: &SuiteResults) {
    let row = |name: &str| rows.iter().find(|r| r.setting == name);
    let headers = [
        "factor",
        "value",
        "setting",
        "seeds",
        "success",
        "epochs to 90% (median, 25–75%)",
        "speed-up vs PPO (64, 64)",
        "epochs to own plateau (median)",
        "final return (median, 25–75%)",
        "(ε, δ) per release at k₀",
    ];
    let table: Vec<Vec<Cell>> = rows
        .iter()
        .map(|r| {
            let setting = results.settings.iter().find(|s| s.name == r.setting);
            let (factor, value) = setting
                .and_then(|s| s.factor.clone())
                .unwrap_or(("reference".into(), "-".into()));
            let reference = match setting.map(|s| s.epoch_reset) {
                Some(true) => row("ppo-64-reset"),
                _ => row("ppo-64"),
            };
            // A setting whose median never reaches the threshold has no speed-up ("–"), not 0.
            let speedup = reference
                .filter(|_| r.epochs.median.is_finite())
                .map(|p| p.epochs.median / r.epochs.median)
                .filter(|v| v.is_finite());
            vec![
                Cell::from(factor),
                Cell::from(value),
                Cell::from(&r.label),
                Cell::from(format!("{}", r.seeds)),
                Cell::from(format!("{}/{}", r.reached, r.seeds)),
                Cell::from(format!(
                    "{} ({} – {})",
                    format_epochs(r.epochs.median),
                    format_epochs(r.epochs.q25),
                    format_epochs(r.epochs.q75)
                )),
                opt(speedup),
                Cell::from(format_epochs(r.plateau.median)),
                Cell::from(format!(
                    "{} ({} – {})",
                    format_number(r.finals.median),
                    format_number(r.finals.q25),
                    format_number(r.finals.q75)
                )),
                Cell::from(format_cost(r.release_at_k0)),
            ]
        })
        .collect();
    report.heading("Success rate and speed-up per factor");
    report.table(&headers, table);
}

/// The diagnosis' headline: exact-teacher kickstarting against PPO (64, 64) from scratch.
fn ablation_headline(rows: &[SettingRow]) -> Headline {
    let row = |name: &str| rows.iter().find(|r| r.setting == name);
    let kick = row("kickstart");
    let scratch = row("ppo-32");
    Headline {
        effect: "on this env a kickstarted (32, 32) student reaches 90% of the teacher faster \
                 than PPO (64, 64) from scratch (the premise of Fig. 2)."
            .into(),
        measured: match (kick, row("ppo-64"), scratch) {
            (Some(k), Some(p64), Some(p32)) => format!(
                "median epochs to 90%: exact-teacher kickstarting {}, PPO (64, 64) {}, PPO (32, \
                 32) {}",
                format_epochs(k.epochs.median),
                format_epochs(p64.epochs.median),
                format_epochs(p32.epochs.median)
            ),
            _ => "the reference settings have no finished units yet".into(),
        },
        visible: matches!((kick, row("ppo-64")), (Some(k), Some(p))
            if k.epochs.median < p.epochs.median),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_delta_total_of_one_or_more_is_called_vacuous_and_still_printed() {
        assert_eq!(format_delta(None), "–");
        let small = format_delta(Some(0.0123));
        assert!(!small.contains("vacuous"), "{small}");
        assert!(format_delta(Some(1.0)).contains("vacuous"));
        let large = format_delta(Some(782.4));
        assert!(
            large.contains("vacuous") && large.contains("782"),
            "{large}"
        );
    }

    /// A row whose two metrics agree (the smoothed speed in the same units as the epochs).
    fn row(seeds: usize, epochs: [f64; 3], finals: [f64; 3]) -> SettingRow {
        let spread = |v: [f64; 3]| Spread {
            q25: v[0],
            median: v[1],
            q75: v[2],
        };
        SettingRow {
            setting: "s".into(),
            label: "s".into(),
            panels: vec![],
            seeds,
            reached_smoothed: seeds,
            reached: seeds,
            steps: spread(epochs),
            finals100: spread(finals),
            epochs: spread(epochs),
            plateau: spread(epochs),
            finals: spread(finals),
            release_at_k0: None,
            median_epsilon_basic: None,
            median_delta_basic: None,
            median_epsilon_advanced: None,
            median_delta_advanced: None,
            median_dirichlet_releases: None,
            median_exhausted_at_epoch: None,
        }
    }

    #[test]
    fn nearest_rank_quartiles_keep_never_as_infinity() {
        // 1..=8: q25 = 2nd value, median 4.5, q75 = 6th value.
        let s = Spread::of(&[8.0, 1.0, 7.0, 2.0, 6.0, 3.0, 5.0, 4.0]);
        assert_eq!((s.q25, s.median, s.q75), (2.0, 4.5, 6.0));
        let s = Spread::of(&[3.0, f64::INFINITY, f64::INFINITY, 5.0]);
        assert_eq!(
            (s.q25, s.median, s.q75),
            (3.0, f64::INFINITY, f64::INFINITY)
        );
    }

    #[test]
    fn speed_verdict_follows_its_criterion() {
        let p64 = row(10, [16.0, 20.0, 24.0], [0.0; 3]);
        // 4× faster with separated quartiles: Agrees.
        let fast = row(10, [4.0, 5.0, 6.0], [0.0; 3]);
        assert_eq!(
            verdict_speed(&p64, &[&fast], Metric::Smoothed),
            Verdict::Agrees
        );
        // 2.5× faster but the quartiles touch (20 ≥ 16): Inconclusive.
        let wide = row(10, [5.0, 8.0, 20.0], [0.0; 3]);
        assert_eq!(
            verdict_speed(&p64, &[&fast, &wide], Metric::Smoothed),
            Verdict::Inconclusive
        );
        // Never reaching, or 1.1×: Disagrees.
        let never = row(10, [30.0, f64::INFINITY, f64::INFINITY], [0.0; 3]);
        let slow = row(10, [15.0, 18.0, 22.0], [0.0; 3]);
        assert_eq!(
            verdict_speed(&p64, &[&never, &slow], Metric::Smoothed),
            Verdict::Disagrees
        );
        // Too few seeds, or a reference that never reaches: Inconclusive.
        assert_eq!(
            verdict_speed(
                &p64,
                &[&row(9, [4.0, 5.0, 6.0], [0.0; 3])],
                Metric::Smoothed
            ),
            Verdict::Inconclusive
        );
        let p64_never = row(10, [30.0, f64::INFINITY, f64::INFINITY], [0.0; 3]);
        assert_eq!(
            verdict_speed(&p64_never, &[&fast], Metric::Smoothed),
            Verdict::Inconclusive
        );
    }

    #[test]
    fn level_and_unaware_verdicts_follow_their_criteria() {
        let p32 = row(10, [0.0; 3], [100.0, 150.0, 200.0]);
        let high = row(10, [0.0; 3], [250.0, 300.0, 350.0]);
        let overlapping = row(10, [0.0; 3], [120.0, 180.0, 260.0]);
        let low = row(10, [0.0; 3], [20.0, 50.0, 90.0]);
        assert_eq!(
            verdict_level(&p32, &[&high], Metric::Smoothed),
            Verdict::Agrees
        );
        assert_eq!(
            verdict_level(&p32, &[&overlapping], Metric::Smoothed),
            Verdict::Inconclusive
        );
        assert_eq!(
            verdict_level(&p32, &[&low], Metric::Smoothed),
            Verdict::Disagrees
        );
        assert_eq!(
            verdict_level(&p32, &[], Metric::Smoothed),
            Verdict::Inconclusive
        );
        assert_eq!(
            verdict_unaware(&p32, &[&low], Metric::Smoothed),
            Verdict::Agrees
        );
        assert_eq!(
            verdict_unaware(&p32, &[&overlapping], Metric::Smoothed),
            Verdict::Disagrees
        );
        assert_eq!(
            verdict_unaware(&p32, &[&low, &high], Metric::Smoothed),
            Verdict::Inconclusive
        );
        assert_eq!(
            verdict_unaware(&p32, &[], Metric::Smoothed),
            Verdict::Inconclusive
        );
        let slightly_low = row(10, [0.0; 3], [90.0, 140.0, 190.0]);
        assert_eq!(
            verdict_unaware(&p32, &[&slightly_low], Metric::Smoothed),
            Verdict::Inconclusive
        );
    }

    #[test]
    fn a_verdict_that_flips_between_the_metrics_is_inconclusive() {
        use Verdict::*;
        assert_eq!(combined(Agrees, Agrees), Agrees);
        assert_eq!(combined(Disagrees, Disagrees), Disagrees);
        assert_eq!(combined(Agrees, Disagrees), Inconclusive);
        assert_eq!(combined(Disagrees, Inconclusive), Inconclusive);
        // A row whose smoothed finals are high but whose paper finals are low.
        let p32 = row(10, [0.0; 3], [100.0, 150.0, 200.0]);
        let mut flip = row(10, [0.0; 3], [250.0, 300.0, 350.0]);
        flip.finals = Spread {
            q25: 20.0,
            median: 50.0,
            q75: 90.0,
        };
        assert_eq!(verdict_level(&p32, &[&flip], Metric::Smoothed), Agrees);
        assert_eq!(verdict_level(&p32, &[&flip], Metric::Paper), Disagrees);
    }
}

//! The suite's report: per-setting aggregates, the results table, the paper's claims checked
//! against the numbers, and the panels of Fig. 2.

use std::path::Path;

use anyhow::Result;
use privrl_agents::TeacherPrivacySummary;
use privrl_privacy::PrivacyCost;
use serde::Serialize;

use super::plan::{Exhausted, KickstartPlan, MapOnto, VanishingPer};
use super::students::{StudentSummary, SuiteResults};
use crate::report::plot::{median, percentile, LearningCurves, PlotFiles};
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
pub(super) const MIN_SEEDS: usize = 5;

/// Claim (i)'s criterion.
pub(super) const CRITERION_SPEED: &str = "Agrees if, for every Fig. 2(c) privacy-aware \
    setting, PPO (64, 64)'s median epochs to 90% of the teacher divided by the setting's is at \
    least 2 and the setting's 75th percentile of epochs is below PPO (64, 64)'s 25th \
    (interquartile ranges apart; never reaching counts as ∞); Disagrees if for every one that \
    ratio is below 1.25 (a median that never reaches counts as below); Inconclusive otherwise, \
    when PPO (64, 64)'s median never reaches 90%, or with fewer than 5 seeds.";

/// Claim (ii)'s criterion.
pub(super) const CRITERION_LEVEL: &str = "Agrees if every Fig. 2(c) privacy-aware setting's \
    median final return is above PPO (32, 32)'s and its 25th percentile above PPO (32, 32)'s \
    75th; Disagrees if every such median is at or below PPO (32, 32)'s median; Inconclusive \
    otherwise or with fewer than 5 seeds.";

/// Claim (iii)'s criterion.
pub(super) const CRITERION_UNAWARE: &str = "Agrees if every Fig. 2(d) privacy-unaware \
    setting's median final return is below PPO (32, 32)'s and its 75th percentile below PPO \
    (32, 32)'s 25th; Disagrees if every such median is at or above PPO (32, 32)'s median; \
    Inconclusive otherwise or with fewer than 5 seeds.";

/// Whether a claim can be judged: some settings to judge, and every setting compared
/// (`judged` and the reference) with at least [`MIN_SEEDS`] seeds.
fn enough(reference: &SettingRow, judged: &[&SettingRow]) -> bool {
    !judged.is_empty()
        && reference.seeds >= MIN_SEEDS
        && judged.iter().all(|r| r.seeds >= MIN_SEEDS)
}

/// Claim (i) by [`CRITERION_SPEED`].
pub(super) fn verdict_speed(ppo64: &SettingRow, students: &[&SettingRow]) -> Verdict {
    if !enough(ppo64, students) || !ppo64.epochs.median.is_finite() {
        return Verdict::Inconclusive;
    }
    let ratio = |r: &SettingRow| ppo64.epochs.median / r.epochs.median;
    if students
        .iter()
        .all(|r| ratio(r) >= 2.0 && r.epochs.q75 < ppo64.epochs.q25)
    {
        Verdict::Agrees
    } else if students.iter().all(|r| ratio(r) < 1.25) {
        Verdict::Disagrees
    } else {
        Verdict::Inconclusive
    }
}

/// Claim (ii) by [`CRITERION_LEVEL`].
pub(super) fn verdict_level(ppo32: &SettingRow, students: &[&SettingRow]) -> Verdict {
    if !enough(ppo32, students) {
        return Verdict::Inconclusive;
    }
    let base = &ppo32.finals;
    if students
        .iter()
        .all(|r| r.finals.median > base.median && r.finals.q25 > base.q75)
    {
        Verdict::Agrees
    } else if students.iter().all(|r| r.finals.median <= base.median) {
        Verdict::Disagrees
    } else {
        Verdict::Inconclusive
    }
}

/// Claim (iii) by [`CRITERION_UNAWARE`].
pub(super) fn verdict_unaware(ppo32: &SettingRow, unaware: &[&SettingRow]) -> Verdict {
    if !enough(ppo32, unaware) {
        return Verdict::Inconclusive;
    }
    let base = &ppo32.finals;
    if unaware
        .iter()
        .all(|r| r.finals.median < base.median && r.finals.q75 < base.q25)
    {
        Verdict::Agrees
    } else if unaware.iter().all(|r| r.finals.median >= base.median) {
        Verdict::Disagrees
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
    /// Seeds that reached the threshold.
    reached: usize,
    /// Median epochs to the threshold, unreached seeds counted as +∞ (`None`: median unreached).
    median_epochs_to_threshold: Option<f64>,
    /// Median epochs of teacher-size PPO divided by this setting's.
    speedup_vs_teacher_size_ppo: Option<f64>,
    /// Epochs to 90% of the teacher (∞ where never reached).
    pub(super) epochs: Spread,
    /// Epochs to 90% of the run's own final return (∞ where it ends no better than random).
    pub(super) plateau: Spread,
    /// Final returns.
    pub(super) finals: Spread,
    /// (ε, δ) of one release at k₀ (settings with the mechanism).
    release_at_k0: Option<PrivacyCost>,
    median_final_return: f64,
    final_return_band: (f64, f64),
    median_epsilon_basic: Option<f64>,
    median_delta_basic: Option<f64>,
    median_epsilon_advanced: Option<f64>,
    median_delta_advanced: Option<f64>,
    median_dirichlet_releases: Option<f64>,
    median_exhausted_at_epoch: Option<f64>,
}

fn aggregate(plan: &KickstartPlan, results: &SuiteResults) -> Vec<SettingRow> {
    let mut rows: Vec<SettingRow> = Vec::new();
    for setting in &results.settings {
        let runs: Vec<&StudentSummary> = results
            .runs
            .iter()
            .filter(|r| r.setting == setting.name)
            .collect();
        let epochs: Vec<f64> = runs
            .iter()
            .map(|r| r.epochs_to_threshold.map_or(f64::INFINITY, |e| e as f64))
            .collect();
        let m = median(&epochs);
        let finals: Vec<f64> = runs.iter().map(|r| r.final_return).collect();
        let mut sorted = finals.clone();
        sorted.sort_by(f64::total_cmp);
        let band = if sorted.is_empty() {
            (f64::NAN, f64::NAN)
        } else {
            (
                percentile(&sorted, plan.band_percentiles.0),
                percentile(&sorted, plan.band_percentiles.1),
            )
        };
        let privacy: Vec<&TeacherPrivacySummary> =
            runs.iter().filter_map(|r| r.privacy.as_ref()).collect();
        let of = |f: &dyn Fn(&TeacherPrivacySummary) -> f64| {
            (!privacy.is_empty()).then(|| median(&privacy.iter().map(|p| f(p)).collect::<Vec<_>>()))
        };
        let exhausted: Vec<f64> = runs
            .iter()
            .filter_map(|r| r.exhausted_at_epoch.map(|e| e as f64))
            .collect();
        let plateau: Vec<f64> = runs
            .iter()
            .map(|r| r.epochs_to_plateau.map_or(f64::INFINITY, |e| e as f64))
            .collect();
        rows.push(SettingRow {
            epochs: Spread::of(&epochs),
            plateau: Spread::of(&plateau),
            finals: Spread::of(&finals),
            release_at_k0: results
                .release_at_k0
                .iter()
                .find(|(n, _)| *n == setting.name)
                .map(|p| p.1),
            setting: setting.name.clone(),
            label: setting.label.clone(),
            panels: setting.panels.clone(),
            seeds: runs.len(),
            reached: runs
                .iter()
                .filter(|r| r.epochs_to_threshold.is_some())
                .count(),
            median_epochs_to_threshold: m.is_finite().then_some(m),
            speedup_vs_teacher_size_ppo: None,
            median_final_return: median(&finals),
            final_return_band: band,
            median_epsilon_basic: of(&|p| p.basic.epsilon),
            median_delta_basic: of(&|p| p.basic.delta),
            median_epsilon_advanced: of(&|p| p.advanced.epsilon),
            median_delta_advanced: of(&|p| p.advanced.delta),
            median_dirichlet_releases: of(&|p| p.dirichlet_releases as f64),
            median_exhausted_at_epoch: (!exhausted.is_empty()).then(|| median(&exhausted)),
        });
    }
    let reference = rows
        .iter()
        .find(|r| r.setting == "ppo-64")
        .and_then(|r| r.median_epochs_to_threshold);
    for row in &mut rows {
        row.speedup_vs_teacher_size_ppo = match (reference, row.median_epochs_to_threshold) {
            (Some(t), Some(s)) => Some(t / s),
            _ => None,
        };
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

fn panel_plot(
    plan: &KickstartPlan,
    results: &SuiteResults,
    dir: &Path,
    panel: &str,
    title: &str,
) -> Result<Option<PlotFiles>> {
    let mut chart = LearningCurves::new(format!(
        "{title} ({}; median, {}–{}th percentile over {} seeds)",
        plan.env, plan.band_percentiles.0, plan.band_percentiles.1, plan.seeds
    ))
    .x_label(format!(
        "epoch ({} environment steps)",
        plan.steps_per_epoch
    ))
    .y_label("epoch return")
    .band(plan.band_percentiles.0, plan.band_percentiles.1);
    let mut any = false;
    for setting in results
        .settings
        .iter()
        .filter(|s| s.panels.iter().any(|p| p == panel))
    {
        let curves: Vec<Vec<(f64, f64)>> = results
            .runs
            .iter()
            .filter(|r| r.setting == setting.name)
            .map(|r| r.curve.clone())
            .collect();
        if !curves.is_empty() {
            chart = chart.series(setting.label.clone(), curves);
            any = true;
        }
    }
    if !any {
        return Ok(None);
    }
    Ok(Some(chart.save(&dir.join(format!("fig2{panel}")))?))
}

/// The headline the quick mode can show (Fig. 2(b)): a kickstarted student learns from the
/// teacher. Judged on conventional kickstarting (the exact teacher, λ = 0) against PPO
/// (32, 32) from scratch: its median final return is higher. The privacy-aware students'
/// speed-up (claim (i)) is the suite's open question and is judged in the claims section,
/// not here; their (ε, δ) is reported beside.
fn headline(rows: &[SettingRow]) -> Headline {
    let row = |name: &str| rows.iter().find(|r| r.setting == name);
    let (kick, scratch) = (row("kickstart"), row("ppo-32"));
    let aware = rows.iter().find(|r| r.setting.starts_with("aware-"));
    let mut measured = match (kick, scratch) {
        (Some(k), Some(p)) => format!(
            "median final return {} kickstarted against {} from scratch",
            format_number(k.median_final_return),
            format_number(p.median_final_return)
        ),
        _ => "conventional kickstarting or PPO (32, 32) did not run".to_string(),
    };
    if let Some(a) = aware {
        measured.push_str(&format!(
            "; {}: {} (ε basic = {}, δ basic = {})",
            a.label,
            format_number(a.median_final_return),
            a.median_epsilon_basic.map_or("-".into(), format_number),
            format_delta(a.median_delta_basic)
        ));
    }
    Headline {
        effect: "a kickstarted student learns from its teacher (Fig. 2(b)): with the exact \
                 teacher (λ = 0), the (32, 32) student's median final return is above PPO \
                 (32, 32) from scratch."
            .into(),
        measured,
        visible: matches!((kick, scratch), (Some(k), Some(p))
            if k.median_final_return > p.median_final_return),
    }
}

pub(super) fn write_report(
    plan: &KickstartPlan,
    results: &SuiteResults,
    dir: &Path,
) -> Result<SuiteOutcome> {
    let rows = aggregate(plan, results);
    let headline = headline(&rows);
    write_json(&dir.join("summary.json"), &rows)?;
    let mut report = Report::new(dir, "Privacy-preserving kickstarting (Fig. 2)");
    report.paragraph(&plan.noise_rng.report_line());
    report.paragraph(&protocol_paragraph(plan, results));
    report.paragraph(&dirichlet_paragraph(plan));
    report.paragraph(&crate::report::PrivacyScope::Kickstart.sentence());
    results_table(&mut report, &rows);
    // The paper's three claims, each judged by a criterion fixed in this file before any run.
    report.heading("The paper's claims against these numbers");
    let (claims, verdicts) = claims(&rows);
    report.bullets(claims);
    write_json(&dir.join("verdicts.json"), &verdicts)?;
    figures_section(&mut report, plan, results, dir)?;
    headline.add_to(&mut report);
    report.reproduce([reproduce_command(plan)]);
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
         policy: {}); certified Lipschitz bound of \
         softmax ∘ MLP L = {}. Students: (32, 32) PPO. The threshold is 90% of the way from the \
         random return to the teacher's: {}. An epoch's return is the mean return of the \
         episodes that ended in it (carried forward when none did); \"final return\" is the mean \
         over the last 3 epochs. Runs finished: {} of {}{}.",
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
fn dirichlet_paragraph(plan: &KickstartPlan) -> String {
    format!(
        "Dirichlet teacher: k₀ = {}, multiplied by the vanishing coefficient c at the start of \
         every {} after the first; the policy is {} onto Δ_{{m,η}} (η = {}); Theorem 1 with τ = {}, \
         b = {}, L times the map's Lipschitz factor; δ is exact for m = 2 and otherwise an upper \
         confidence bound on its Monte Carlo estimate at the confidence in each unit's config.json \
         (`delta_confidence`: units run before 2026-11-28 used a two-sided Hoeffding half-width at \
         0.95, later ones a one-sided Clopper–Pearson bound at 1 − 1e-9), computed once per \
         distinct k (memoised). The teacher is exhausted when \
         k < {}{}, and then shares {}. Student: α_λ = λ·√(log(1/β)/(2(k+1))) with β = {}, \
         balance {}; {}. PPO {}. Every release is in the teacher's ledger; totals are per student run \
         (basic composition: Σε, Σδ; advanced: Kairouz et al., δ' = 1e-6).",
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
                "solved for δ = {} per release at k₀ (`--target-delta`; per-setting (ε, δ) in \
                 the table)",
                plan.target_delta
            ),
            format_number
        ),
        plan.adjacency,
        plan.concentration_floor,
        plan.budget_epsilon
            .map_or(String::new(), |b| format!(" or the ε budget {b} is spent")),
        match plan.exhausted {
            Exhausted::Uniform => "uniformly random policies ((0, 0)-DP)",
            Exhausted::Stop => "nothing",
        },
        plan.beta,
        plan.balance,
        if plan.penalise_uniform {
            "φ_λ also applies to uniformly random releases (`--penalise-uniform`)"
        } else {
            "uniformly random releases get no weight (φ ≡ 0, Section 4)"
        },
        if plan.epoch_reset {
            "resets the environment at every epoch's end (Spinning Up)"
        } else {
            "carries episodes over epoch boundaries (`--no-epoch-reset`)"
        },
    )
}

/// The results table: one row per setting, and how to read it.
fn results_table(report: &mut Report, rows: &[SettingRow]) {
    let headers = [
        "fig.",
        "setting",
        "epochs to 90%",
        "reached",
        "speed-up vs PPO (64, 64)",
        "final return (median)",
        "final return (7.5–92.5%)",
        "epochs to own plateau",
        "(ε, δ) per release at k₀",
        "ε basic",
        "δ basic",
        "ε advanced",
        "δ advanced",
        "Dirichlet releases",
        "exhausted at epoch",
    ];
    let table: Vec<Vec<Cell>> = rows
        .iter()
        .map(|r| {
            vec![
                Cell::from(r.panels.join(",")),
                Cell::from(&r.label),
                opt(r.median_epochs_to_threshold),
                Cell::from(format!("{}/{}", r.reached, r.seeds)),
                opt(r.speedup_vs_teacher_size_ppo),
                Cell::from(r.median_final_return),
                Cell::from(format!(
                    "{} – {}",
                    format_number(r.final_return_band.0),
                    format_number(r.final_return_band.1)
                )),
                Cell::from(format_epochs(r.plateau.median)),
                Cell::from(format_cost(r.release_at_k0)),
                opt(r.median_epsilon_basic),
                Cell::from(format_delta(r.median_delta_basic)),
                opt(r.median_epsilon_advanced),
                Cell::from(format_delta(r.median_delta_advanced)),
                opt(r.median_dirichlet_releases),
                opt(r.median_exhausted_at_epoch),
            ]
        })
        .collect();
    report.heading("Results");
    report.table(&headers, table);
    report.paragraph(
        "Medians over seeds. \"Epochs to 90%\": median with seeds that never reached the \
         threshold counted as never (– when the median itself never reached it). A δ total \
         above 1 is a vacuous guarantee; it is reported, not clipped.",
    );
}

/// The paper's three claims as bullets, each with its criterion, the numbers and the verdict,
/// and the verdicts by name (`verdicts.json`).
fn claims(rows: &[SettingRow]) -> (Vec<String>, Vec<(&'static str, Verdict)>) {
    let row = |name: &str| rows.iter().find(|r| r.setting == name);
    let in_panel = |panel: &str, prefix: &str| -> Vec<&SettingRow> {
        rows.iter()
            .filter(|r| r.setting.starts_with(prefix) && r.panels.iter().any(|p| p == panel))
            .collect()
    };
    let aware = in_panel("c", "aware-");
    let unaware = in_panel("d", "unaware-");
    let epochs_of = |r: &SettingRow| {
        format!(
            "{} {} (25–75%: {} – {})",
            r.label,
            format_epochs(r.epochs.median),
            format_epochs(r.epochs.q25),
            format_epochs(r.epochs.q75)
        )
    };
    let finals_of = |r: &SettingRow| {
        format!(
            "{} {} (25–75%: {} – {})",
            r.label,
            format_number(r.finals.median),
            format_number(r.finals.q25),
            format_number(r.finals.q75)
        )
    };
    let list = |rows: &[&SettingRow], f: &dyn Fn(&SettingRow) -> String| {
        rows.iter().map(|r| f(r)).collect::<Vec<_>>().join("; ")
    };
    let mut claims = Vec::new();
    let mut verdicts = Vec::new();
    if let Some(p64) = row("ppo-64") {
        let v = verdict_speed(p64, &aware);
        verdicts.push(("speed", v));
        claims.push(format!(
            "(i) \"privacy-aware students converge roughly 4 times faster than the teacher\" \
             (Fig. 2(c)). Criterion: {CRITERION_SPEED} Epochs to 90% of the teacher: {}; {}. \
             **{v:?}**.",
            epochs_of(p64),
            list(&aware, &epochs_of),
        ));
    }
    if let Some(p32) = row("ppo-32") {
        let v = verdict_level(p32, &aware);
        verdicts.push(("level", v));
        claims.push(format!(
            "(ii) \"the student converges to a performance level that was not possible without \
             the demonstrations\" (Fig. 2(b, c)). Criterion: {CRITERION_LEVEL} Final returns: \
             {}; {}. **{v:?}**.",
            finals_of(p32),
            list(&aware, &finals_of),
        ));
        let v = verdict_unaware(p32, &unaware);
        verdicts.push(("unaware", v));
        claims.push(format!(
            "(iii) \"the privacy-unaware students perform worse than the baseline PPO agents \
             that do not use kickstarting at all\" once the teacher shares random policies \
             (Fig. 2(d)). Criterion: {CRITERION_UNAWARE} Final returns: {}; {}. Teachers \
             exhausted at epoch (median): {}. **{v:?}**.",
            finals_of(p32),
            list(&unaware, &finals_of),
            list(
                &[aware.as_slice(), unaware.as_slice()].concat(),
                &|r| format!(
                    "{} {}",
                    r.setting,
                    r.median_exhausted_at_epoch
                        .map_or("never".into(), format_number)
                )
            ),
        ));
    }
    (claims, verdicts)
}

/// Fig. 2's panels and the sweeps, each where any of its settings ran.
fn figures_section(
    report: &mut Report,
    plan: &KickstartPlan,
    results: &SuiteResults,
    dir: &Path,
) -> Result<()> {
    report.heading("Figures");
    for (panel, title) in [
        ("a", "Fig. 2(a): teacher-size vs student-size PPO"),
        ("b", "Fig. 2(b): kickstarting without privacy"),
        ("c", "Fig. 2(c): privacy-aware students"),
        ("d", "Fig. 2(d): privacy-unaware students"),
        ("sweep-c", "Vanishing-coefficient sweep (privacy-aware)"),
        ("sweep-l", "λ sweep (privacy-aware, c = 0.3)"),
    ] {
        if let Some(files) = panel_plot(plan, results, dir, panel, title)? {
            report.plot(title, &files);
        }
    }
    Ok(())
}

/// The command that reproduces the report.
fn reproduce_command(plan: &KickstartPlan) -> String {
    format!(
        "cargo xtask suite kickstart --env {} --seeds {} --epochs {} --teacher-epochs {} \
         --steps-per-epoch {}{}{}{}",
        plan.env,
        plan.seeds,
        plan.epochs,
        plan.teacher_epochs,
        plan.steps_per_epoch,
        if plan.sweep { " --sweep" } else { "" },
        plan.noise_rng.reproduce_flag(),
        [
            plan.tau.map(|t| format!(" --tau {t}")),
            (plan.target_delta != 0.05).then(|| format!(" --target-delta {}", plan.target_delta)),
            (plan.delta_confidence != privrl_privacy::DELTA_CONFIDENCE)
                .then(|| format!(" --delta-confidence {}", plan.delta_confidence)),
            plan.allow_weak_privacy
                .then(|| " --allow-weak-privacy".into()),
            (plan.map_onto == MapOnto::Project).then(|| " --map-onto project".into()),
            plan.penalise_uniform.then(|| " --penalise-uniform".into()),
            (!plan.epoch_reset).then(|| " --no-epoch-reset".into()),
        ]
        .into_iter()
        .flatten()
        .collect::<String>()
    )
}

/// The CartPole diagnosis (`--ablation`): one row per setting from whatever units exist, the
/// speed-up against PPO (64, 64) with the same epoch-end rule.
pub(super) fn write_ablation_report(
    plan: &KickstartPlan,
    results: &SuiteResults,
    dir: &Path,
) -> Result<SuiteOutcome> {
    let rows = aggregate(plan, results);
    write_json(&dir.join("summary.json"), &rows)?;
    let mut report = Report::new(dir, &format!("Kickstarting diagnosis on {}", plan.env));
    report.paragraph(&ablation_paragraph(plan, results));
    report.paragraph(&crate::report::PrivacyScope::Kickstart.sentence());
    ablation_table(&mut report, &rows, results);
    let headline = ablation_headline(&rows);
    headline.add_to(&mut report);
    report.reproduce([format!(
        "cargo xtask suite kickstart --ablation --env {} --seeds {} --epochs {} \
         --teacher-epochs {} --steps-per-epoch {} --threads 1 --out {}{}",
        plan.env,
        plan.seeds,
        plan.epochs,
        plan.teacher_epochs,
        plan.steps_per_epoch,
        dir.parent().map_or(".".into(), |p| p.display().to_string()),
        if plan.delta_confidence == privrl_privacy::DELTA_CONFIDENCE {
            String::new()
        } else {
            format!(" --delta-confidence {}", plan.delta_confidence)
        }
    )]);
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
            reached: seeds,
            median_epochs_to_threshold: None,
            speedup_vs_teacher_size_ppo: None,
            epochs: spread(epochs),
            plateau: spread(epochs),
            finals: spread(finals),
            release_at_k0: None,
            median_final_return: finals[1],
            final_return_band: (finals[0], finals[2]),
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
        assert_eq!(verdict_speed(&p64, &[&fast]), Verdict::Agrees);
        // 2.5× faster but the quartiles touch (20 ≥ 16): Inconclusive.
        let wide = row(10, [5.0, 8.0, 20.0], [0.0; 3]);
        assert_eq!(verdict_speed(&p64, &[&fast, &wide]), Verdict::Inconclusive);
        // Never reaching, or 1.1×: Disagrees.
        let never = row(10, [30.0, f64::INFINITY, f64::INFINITY], [0.0; 3]);
        let slow = row(10, [15.0, 18.0, 22.0], [0.0; 3]);
        assert_eq!(verdict_speed(&p64, &[&never, &slow]), Verdict::Disagrees);
        // Too few seeds, or a reference that never reaches: Inconclusive.
        assert_eq!(
            verdict_speed(&p64, &[&row(4, [4.0, 5.0, 6.0], [0.0; 3])]),
            Verdict::Inconclusive
        );
        let p64_never = row(10, [30.0, f64::INFINITY, f64::INFINITY], [0.0; 3]);
        assert_eq!(verdict_speed(&p64_never, &[&fast]), Verdict::Inconclusive);
    }

    #[test]
    fn level_and_unaware_verdicts_follow_their_criteria() {
        let p32 = row(10, [0.0; 3], [100.0, 150.0, 200.0]);
        let high = row(10, [0.0; 3], [250.0, 300.0, 350.0]);
        let overlapping = row(10, [0.0; 3], [120.0, 180.0, 260.0]);
        let low = row(10, [0.0; 3], [20.0, 50.0, 90.0]);
        assert_eq!(verdict_level(&p32, &[&high]), Verdict::Agrees);
        assert_eq!(verdict_level(&p32, &[&overlapping]), Verdict::Inconclusive);
        assert_eq!(verdict_level(&p32, &[&low]), Verdict::Disagrees);
        assert_eq!(verdict_level(&p32, &[]), Verdict::Inconclusive);
        assert_eq!(verdict_unaware(&p32, &[&low]), Verdict::Agrees);
        assert_eq!(verdict_unaware(&p32, &[&overlapping]), Verdict::Disagrees);
        assert_eq!(verdict_unaware(&p32, &[&low, &high]), Verdict::Inconclusive);
        assert_eq!(verdict_unaware(&p32, &[]), Verdict::Inconclusive);
        let slightly_low = row(10, [0.0; 3], [90.0, 140.0, 190.0]);
        assert_eq!(
            verdict_unaware(&p32, &[&slightly_low]),
            Verdict::Inconclusive
        );
    }
}

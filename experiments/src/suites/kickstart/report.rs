//! The suite's report: per-setting aggregates, the results table, the paper's claims checked
//! against the numbers, and the panels of Fig. 2.

use std::path::Path;

use anyhow::Result;
use privrl_agents::TeacherPrivacySummary;
use serde::Serialize;

use super::plan::{Exhausted, KickstartPlan, VanishingPer};
use super::students::{StudentSummary, SuiteResults};
use crate::report::plot::{median, percentile, LearningCurves, PlotFiles};
use crate::report::{format_number, Cell, Report};
use crate::run::write_json;
use crate::summary::{Headline, SuiteOutcome};

/// Per-setting aggregates.
#[derive(Debug, Clone, Serialize)]
struct SettingRow {
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
    median_final_return: f64,
    final_return_band: (f64, f64),
    median_epsilon_basic: Option<f64>,
    median_delta_basic: Option<f64>,
    median_epsilon_advanced: Option<f64>,
    median_delta_advanced: Option<f64>,
    median_epsilon_per_release_k0: Option<f64>,
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
        rows.push(SettingRow {
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
            median_epsilon_per_release_k0: of(&|p| {
                p.initial_release.map_or(f64::NAN, |c| c.epsilon)
            }),
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
            a.median_delta_basic.map_or("-".into(), format_number)
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
    let row = |name: &str| rows.iter().find(|r| r.setting == name);
    let mut report = Report::new(dir, "Privacy-preserving kickstarting (Fig. 2)");
    report.paragraph(&plan.noise_rng.report_line());
    let t = &results.teacher;
    report.paragraph(&format!(
        "Gohari et al., *Privacy-Preserving Kickstarting Deep Reinforcement Learning with \
         Privacy-Aware Learners*. Environment `{}`, {} environment steps per epoch, {} epochs per \
         student, {} seeds per setting. Teacher: (64, 64) PPO trained {} epochs; its stochastic \
         policy returns {} over {} episodes (a random policy: {}); certified Lipschitz bound of \
         softmax ∘ MLP L = {}. Students: (32, 32) PPO. The threshold is 90% of the way from the \
         random return to the teacher's: {}. An epoch's return is the mean return of the \
         episodes that ended in it (carried forward when none did); \"final return\" is the mean \
         over the last 3 epochs.",
        plan.env,
        plan.steps_per_epoch,
        plan.epochs,
        plan.seeds,
        plan.teacher_epochs,
        format_number(t.final_return),
        t.evaluation_episodes,
        format_number(t.random_return),
        format_number(t.lipschitz),
        format_number(results.threshold),
    ));
    report.paragraph(&format!(
        "Dirichlet teacher: k₀ = {}, multiplied by the vanishing coefficient c at the start of \
         every {} after the first; the policy is mixed with the uniform one onto Δ_{{m,η}} \
         (η = {}); Theorem 1 with τ = {}, b = {}, L·(1 − mη); δ is the 95% upper confidence bound \
         (exact for m = 2), computed once per distinct k (memoised). The teacher is exhausted when \
         k < {}{}, and then shares {}. Student: α_λ = λ·√(log(1/β)/(2(k+1))) with β = {}, \
         balance {}. Every release is in the teacher's ledger; totals are per student run \
         (basic composition: Σε, Σδ; advanced: Kairouz et al., δ' = 1e-6).",
        plan.k0,
        match plan.vanishing_per {
            VanishingPer::Rollout => "rollout (epoch; `--vanishing-per trajectory` for episodes)",
            VanishingPer::Trajectory => "trajectory (episode)",
        },
        plan.eta.map_or("0.4/m".into(), format_number),
        plan.tau,
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
    ));
    let headers = [
        "fig.",
        "setting",
        "epochs to 90%",
        "reached",
        "speed-up vs PPO (64, 64)",
        "final return (median)",
        "final return (7.5–92.5%)",
        "ε per release at k₀",
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
                opt(r.median_epsilon_per_release_k0),
                opt(r.median_epsilon_basic),
                opt(r.median_delta_basic),
                opt(r.median_epsilon_advanced),
                opt(r.median_delta_advanced),
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

    // The paper's three claims, checked against our numbers.
    report.heading("The paper's claims against these numbers");
    let mut claims = Vec::new();
    let aware: Vec<&SettingRow> = rows
        .iter()
        .filter(|r| r.setting.starts_with("aware-"))
        .collect();
    let ppo64 = row("ppo-64");
    let ppo32 = row("ppo-32");
    if let Some(p64) = ppo64 {
        let speedups: Vec<String> = aware
            .iter()
            .map(|r| {
                format!(
                    "{} {}",
                    r.label,
                    r.speedup_vs_teacher_size_ppo
                        .map_or("never reaches 90%".into(), |s| format!(
                            "{}×",
                            format_number(s)
                        ))
                )
            })
            .collect();
        let fast = aware
            .iter()
            .filter(|r| r.speedup_vs_teacher_size_ppo.is_some_and(|s| s >= 3.0))
            .count();
        claims.push(format!(
            "(i) \"privacy-aware students converge roughly 4 times faster than their teachers\": \
             teacher-size PPO needs {} epochs (median); speed-ups: {}. {}",
            p64.median_epochs_to_threshold
                .map_or("more than the run's".into(), format_number),
            speedups.join("; "),
            if aware.is_empty() {
                "No privacy-aware setting ran.".into()
            } else if fast == aware.len() {
                "Agrees: every privacy-aware setting is at least 3× faster.".to_string()
            } else if fast > 0 {
                format!(
                    "Partly agrees: {fast} of {} settings are at least 3× faster.",
                    aware.len()
                )
            } else {
                "Disagrees: no privacy-aware setting is 3× faster.".to_string()
            }
        ));
    }
    if let Some(p32) = ppo32 {
        let better = aware
            .iter()
            .filter(|r| r.median_final_return > p32.median_final_return)
            .count();
        claims.push(format!(
            "(ii) \"the student converges to a performance level that was not possible without \
             the demonstrations\": PPO (32, 32) ends at {} (median); privacy-aware students at {}. \
             {}",
            format_number(p32.median_final_return),
            aware
                .iter()
                .map(|r| format!("{} {}", r.label, format_number(r.median_final_return)))
                .collect::<Vec<_>>()
                .join("; "),
            if !aware.is_empty() && better == aware.len() {
                "Agrees at this budget of epochs.".to_string()
            } else {
                format!(
                    "{better} of {} privacy-aware settings end above it.",
                    aware.len()
                )
            }
        ));
        let unaware: Vec<&SettingRow> = rows
            .iter()
            .filter(|r| r.setting.starts_with("unaware-"))
            .collect();
        let kept = aware
            .iter()
            .filter(|r| r.median_exhausted_at_epoch.is_some())
            .filter(|r| r.median_final_return >= p32.median_final_return)
            .count();
        claims.push(format!(
            "(iii) \"the student maintains its enhanced performance after the teacher stops \
             sharing useful demonstrations\": the Dirichlet teachers were exhausted at epochs {}; \
             {kept} of {} privacy-aware settings still end at or above PPO (32, 32). Fig. 2(d): \
             privacy-unaware students end at {} against {} for PPO (32, 32) without kickstarting \
             ({}).",
            aware
                .iter()
                .map(|r| format!(
                    "{} ({})",
                    r.median_exhausted_at_epoch
                        .map_or("never".into(), format_number),
                    r.setting
                ))
                .collect::<Vec<_>>()
                .join(", "),
            aware.len(),
            unaware
                .iter()
                .map(|r| format!("{} ({})", format_number(r.median_final_return), r.setting))
                .collect::<Vec<_>>()
                .join(", "),
            format_number(p32.median_final_return),
            if unaware
                .iter()
                .all(|r| r.median_final_return < p32.median_final_return)
            {
                "agrees with the paper: worse than no kickstarting"
            } else {
                "disagrees with the paper, which finds them worse than no kickstarting"
            }
        ));
    }
    report.bullets(claims);

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
    headline.add_to(&mut report);
    report.reproduce([format!(
        "cargo xtask suite kickstart --env {} --seeds {} --epochs {} --teacher-epochs {} \
         --steps-per-epoch {}{}{}",
        plan.env,
        plan.seeds,
        plan.epochs,
        plan.teacher_epochs,
        plan.steps_per_epoch,
        if plan.sweep { " --sweep" } else { "" },
        plan.noise_rng.reproduce_flag()
    )]);
    Ok(SuiteOutcome {
        report: report.write()?,
        headline,
    })
}

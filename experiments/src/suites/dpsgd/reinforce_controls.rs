//! `suite dpsgd --reinforce-controls`: DP-SGD REINFORCE against plain REINFORCE on CartPole-v1
//! for a fixed number of episodes, in resumable units (one setting × seed each) under
//! `<--controls-dir>/reinforce/units/`, and a report regenerated from whatever units exist
//! (`<--controls-dir>/reinforce/report.md`), judged against the slides' REINFORCE claims by
//! criteria fixed in [`CLAIMS`] before any run.
//!
//! Every setting is a [`DpSgdReinforce`] (one DP-SGD step per L episodes, each episode's
//! gradient clipped to C on its own, N(0, σ²C²I) on their sum, divided by L, then Adam), so
//! only σ, C and L vary, one at a time against the slides' setting (L = 1):
//! - **plain**: no clipping and no noise, the plain mean gradient (the slides' Fig. 5);
//! - **clip only**: σ = 0 with clipping to C: the bias of clipping alone (ε = ∞);
//! - **σ sweep** (`--sigma-sweep`) at C = `--clip`, L = 1 (the slides' Figs. 8–9);
//! - **batch sweep** (`--reinforce-batch-sweep`): L episodes per step at `--control-sigma`,
//!   with plain REINFORCE at the same L beside it. The ε per episode does not depend on L.
//!
//! ε is per episode (an episode is the record; add/remove unless `--adjacency`, at δ), one
//! Gaussian release at q = 1 per episode, by the `--accountant` (each unit records which).

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result};
use burn::backend::Autodiff;
use burn::tensor::backend::Backend;
use privrl_agents::{Agent, DpSgdReinforce, DpSgdTrainingConfig, Reinforce, ReinforceConfig};
use privrl_privacy::{AccountantKind, Adjacency};
use serde::{Deserialize, Serialize};

use super::controls::CurveColumn;
use super::plan::DpsgdArgs;
use super::protocol::{
    claims_section, epsilon_by_accountant, finish, judge_claims, read_units, run_missing_units,
    seeds, settings_tables, unit_path, unit_text, write_unit, Claim, UnitOutcome, UnitSetting,
    UnitTask, FINAL_WINDOW,
};
use super::{mean, ENV, SOLVED_RETURN, SOLVED_WINDOW};
use crate::backend::BackendTask;
use crate::report::plot::{median, Line, LineChart};
use crate::report::{format_number, Cell, Report};
use crate::summary::SuiteOutcome;
use crate::unit::Unit;

/// Episodes per unit unless `--episodes` is given: where the suite's plain REINFORCE has
/// solved CartPole-v1 (it did at episode 370 on seed 0 of `suite dpsgd --methods
/// ldp-reinforce --ldp-noise 0`), with room to spare for slower seeds.
pub const REINFORCE_EPISODES: usize = 2000;

/// One setting of the protocol.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReinforceSetting {
    /// Unit-directory prefix, unique per setting.
    pub slug: String,
    /// Which control it belongs to.
    pub group: ReinforceGroup,
    /// σ of DP-SGD; `None` for plain REINFORCE.
    pub noise_multiplier: Option<f64>,
    /// Clipping bound C of each episode's gradient; `None`: no clipping.
    pub clip: Option<f64>,
    /// Episodes L per step.
    pub episodes_per_step: usize,
}

/// The control a setting belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ReinforceGroup {
    /// Non-private REINFORCE.
    Plain,
    /// σ = 0 with clipping.
    ClipOnly,
    /// The σ sweep at C, L = 1.
    SigmaSweep,
    /// L episodes per step, private at the control σ or plain.
    BatchSweep,
}

impl ReinforceSetting {
    /// How the report names it.
    pub fn label(&self) -> String {
        let l = self.episodes_per_step;
        match (self.noise_multiplier, self.clip) {
            (None, _) => format!("plain REINFORCE, L = {l}"),
            (Some(s), Some(c)) => format!("σ = {s}, C = {c}, L = {l}"),
            (Some(s), None) => format!("σ = {s}, no clipping, L = {l}"),
        }
    }
}

/// The settings `args` asks for, in run order, without duplicates.
pub fn settings(args: &DpsgdArgs) -> Vec<ReinforceSetting> {
    let c = args.clip;
    let plain = |group, l: usize| ReinforceSetting {
        slug: format!("plain-l{l}"),
        group,
        noise_multiplier: None,
        clip: None,
        episodes_per_step: l,
    };
    let dp = |group, s: f64, l: usize| ReinforceSetting {
        slug: if s == 0.0 {
            format!("clip-only-c{c}-l{l}")
        } else {
            format!("dp-sigma{s}-c{c}-l{l}")
        },
        group,
        noise_multiplier: Some(s),
        clip: Some(c),
        episodes_per_step: l,
    };
    let mut out = vec![
        plain(ReinforceGroup::Plain, 1),
        dp(ReinforceGroup::ClipOnly, 0.0, 1),
    ];
    for &s in &args.sigma_sweep {
        out.push(dp(ReinforceGroup::SigmaSweep, s, 1));
    }
    for &l in &args.reinforce_batch_sweep {
        out.push(dp(ReinforceGroup::BatchSweep, args.control_sigma, l));
        out.push(plain(ReinforceGroup::BatchSweep, l));
    }
    let mut seen = std::collections::HashSet::new();
    out.retain(|s| seen.insert(s.slug.clone()));
    out
}

/// What one unit's `summary.json` holds.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ReinforceUnit {
    /// The setting.
    pub setting: ReinforceSetting,
    /// The seed.
    pub seed: u64,
    /// The episode budget.
    pub budget: usize,
    /// Episodes played (the budget rounded up to whole steps of L, or fewer if it failed).
    pub episodes: usize,
    /// Environment steps taken.
    pub env_steps: u64,
    /// First episode at which the mean of 25 consecutive returns reached 475.
    pub solved_at_episode: Option<usize>,
    /// Mean training return over all episodes (the slides' "average reward").
    pub mean_return: f64,
    /// Median training return over all episodes.
    pub median_return: f64,
    /// Mean of the last 25 returns at the end.
    pub final_mean_return_25: f64,
    /// The primary metric: the mean of the last [`FINAL_WINDOW`] returns at the end (`None`
    /// in units written before it was recorded; read from their curve).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub final_mean_return: Option<f64>,
    /// The commit the unit ran at ([`crate::run::source_commit`]; `None` in units written
    /// before it was recorded, which no claim judges).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
    /// ε per episode at δ under `adjacency`, by `accountant`; `None` for ε = ∞ (σ = 0,
    /// plain).
    pub epsilon: Option<f64>,
    /// The accountant of `epsilon`.
    pub accountant: AccountantKind,
    /// The neighbouring relation of `epsilon`.
    pub adjacency: Adjacency,
    /// δ of ε.
    pub delta: f64,
    /// Why the run stopped early (e.g. a non-finite gradient); counted, never dropped.
    pub failed: Option<String>,
    /// Wall-clock seconds.
    pub wall_s: f64,
}

/// Where the protocol's units and report live.
fn protocol_dir(args: &DpsgdArgs) -> PathBuf {
    args.controls_dir.join("reinforce")
}

fn budget(args: &DpsgdArgs) -> usize {
    args.episodes.unwrap_or(REINFORCE_EPISODES)
}

/// Runs every missing unit of the protocol, then writes the report.
pub fn run(args: &DpsgdArgs) -> Result<SuiteOutcome> {
    anyhow::ensure!(budget(args) > 0, "--episodes must be at least 1");
    anyhow::ensure!(
        args.clip.is_finite() && args.clip > 0.0,
        "--clip must be > 0, got {}",
        args.clip
    );
    for &v in args.sigma_sweep.iter().chain([&args.control_sigma]) {
        anyhow::ensure!(v.is_finite() && v >= 0.0, "σ values must be >= 0, got {v}");
    }
    for &l in &args.reinforce_batch_sweep {
        anyhow::ensure!(
            l >= 1,
            "--reinforce-batch-sweep values must be >= 1, got {l}"
        );
    }
    // Fix the commit every unit of this invocation records before the first one runs.
    let _ = crate::run::source_commit();
    run_missing_units(&protocol_dir(args), args, &settings(args), &seeds(args)?)?;
    write_report(args)
}

impl UnitOutcome for ReinforceUnit {
    fn solved(&self) -> bool {
        self.solved_at_episode.is_some()
    }
    fn failed(&self) -> bool {
        self.failed.is_some()
    }
    fn mean_return(&self) -> f64 {
        self.mean_return
    }
    fn final_return(&self) -> f64 {
        self.final_mean_return.unwrap_or(f64::NAN)
    }
    fn seed(&self) -> u64 {
        self.seed
    }
    fn commit(&self) -> Option<&str> {
        self.commit.as_deref()
    }
}

impl Unit for ReinforceUnit {
    type Setting = ReinforceSetting;
    fn path(root: &Path, setting: &ReinforceSetting, seed: u64) -> PathBuf {
        unit_path(root, &setting.slug, seed)
    }
    fn text(&self) -> Result<String> {
        unit_text(self)
    }
}

impl UnitSetting for ReinforceSetting {
    type Unit = ReinforceUnit;
    fn slug(&self) -> &str {
        &self.slug
    }
}

impl BackendTask for UnitTask<'_, ReinforceSetting> {
    type Output = ();

    fn run<IB: Backend>(self, device: IB::Device) -> Result<()> {
        type B<IB> = Autodiff<IB>;
        let (setting, seed, args) = (&self.setting, self.seed, self.args);
        let budget = budget(args);
        // The slides: a 2-layer perceptron, h = 128, dropout 0.5, Adam.
        let reinforce = Reinforce::<B<IB>>::new(
            ReinforceConfig::new(),
            privrl_envs::make(ENV)?,
            &device,
            seed,
        )?;
        let config = DpSgdTrainingConfig::new()
            .with_noise_multiplier(setting.noise_multiplier.unwrap_or(0.0))
            .with_clip(setting.clip)
            .with_delta(args.delta)
            .with_adjacency(args.adjacency)
            .with_accountant(args.accountant)
            .with_episodes_per_step(setting.episodes_per_step)
            .with_noise_rng(args.noise_rng.mode());
        // Under `--noise-rng secure` this seed is not used.
        let mut agent = DpSgdReinforce::new(reinforce, &config, seed ^ 0xd9_5e0d)?;
        let bar = self.progress.bar(budget as u64);
        let mut rows = CurveColumn::header(&CurveColumn::ALL[..4], AccountantKind::Rdp);
        let mut failed = None;
        let start = Instant::now();
        while agent.agent().episode_log().episodes() < budget {
            let before = agent.agent().episode_log().episodes();
            if let Err(e) = agent.train_step() {
                failed = Some(e.to_string());
                break;
            }
            let log = agent.agent().episode_log();
            // One row per episode: the mean of 25 as it stood after each.
            for k in before..log.episodes() {
                let window = &log.returns[(k + 1).saturating_sub(SOLVED_WINDOW)..=k];
                let recent = if window.len() == SOLVED_WINDOW {
                    mean(window)
                } else {
                    f64::NAN
                };
                rows.push_str(&format!(
                    "{},{},{},{recent}\n",
                    k + 1,
                    log.env_steps,
                    log.returns[k]
                ));
            }
            bar.set_position(log.episodes().min(budget) as u64);
        }
        let log = agent.agent().episode_log().clone();
        let epsilon = agent.epsilon()?;
        let summary = ReinforceUnit {
            setting: setting.clone(),
            seed,
            budget,
            episodes: log.episodes(),
            env_steps: log.env_steps,
            solved_at_episode: log.first_solved(SOLVED_WINDOW, SOLVED_RETURN).map(|s| s.0),
            mean_return: mean(&log.returns),
            median_return: median(&log.returns),
            final_mean_return_25: log.mean_recent_return(SOLVED_WINDOW).unwrap_or(f64::NAN),
            final_mean_return: Some(log.mean_recent_return(FINAL_WINDOW).unwrap_or(f64::NAN)),
            commit: crate::run::source_commit(),
            epsilon: epsilon.is_finite().then_some(epsilon),
            accountant: args.accountant,
            adjacency: args.adjacency,
            delta: args.delta,
            failed,
            wall_s: start.elapsed().as_secs_f64(),
        };
        write_unit(self.dir, setting, seed, &rows, &summary)
    }
}

/// The slides' REINFORCE claims (paper 004) and the criteria that judge them, written before
/// the runs, on the L = 1 settings (the slides' one episode per gradient). A failed run counts
/// as not solved and its returns as they stood.
const CLAIMS: [Claim; 3] = [
    Claim {
        figure: "Fig. 5 (REINFORCE convergence on CartPole)",
        claim: "non-private REINFORCE (2-layer MLP, h = 128, dropout 0.5, one episode per \
                gradient) converges on CartPole",
        criterion:
            "plain REINFORCE (L = 1) solves (mean of 25 returns ≥ 475) within the budget in \
                    ≥ 2/3 of ≥ 5 judged seeds (seeds 10 and up, each unit recording the commit it \
                    ran at; the budget was fixed from plain REINFORCE on seed 0): Agrees; in none: \
                    Disagrees; else Inconclusive",
    },
    Claim {
        figure: "Figs. 8–9, conclusion",
        claim: "DP-SGD REINFORCE \"is able to converge with reasonable noise levels\"",
        criterion: "DP-SGD REINFORCE (L = 1, C = --clip) at the smallest σ > 0 of the σ sweep \
                    solves within the budget in ≥ 2/3 of ≥ 5 judged seeds (seeds 10 and up, each \
                    unit recording the commit it ran at; the budget was fixed from plain REINFORCE \
                    on seed 0): Agrees; in none: Disagrees; else Inconclusive",
    },
    Claim {
        figure: "Figs. 8–9, conclusion",
        claim: "privacy vs sample-efficiency trade-off: more noise, less reward",
        criterion:
            "on the judged seeds (≥ 5 per point) along σ = 0 (clip only), then the σ sweep; \
                    primary: final reward (mean of the last 50 episodes): Agrees if the largest \
                    σ's mean is below σ = 0's by more than twice the standard error of the \
                    difference and no step up in σ raises it by more than twice its standard \
                    error; Disagrees if the largest σ's ≥ σ = 0's; else Inconclusive. The same \
                    rule on the secondary metric (mean training return); if the two verdicts \
                    differ: Inconclusive, with both",
    },
];

/// (episode, mean of 25 returns) of a unit's curve.
fn read_curve(unit: &Path) -> Result<Vec<(f64, f64)>> {
    let text = std::fs::read_to_string(unit.join("curve.csv"))
        .with_context(|| format!("reading {}", unit.join("curve.csv").display()))?;
    Ok(text
        .lines()
        .skip(1)
        .filter_map(|line| {
            let c: Vec<&str> = line.split(',').collect();
            Some((
                c.get(CurveColumn::Episode.index())?.parse().ok()?,
                c.get(CurveColumn::MeanReturn25.index())?.parse().ok()?,
            ))
        })
        .collect())
}

/// Writes `report.md` and the learning-curve plot from every unit present.
pub fn write_report(args: &DpsgdArgs) -> Result<SuiteOutcome> {
    let dir = protocol_dir(args);
    let units = read_units(&dir, |u: &mut ReinforceUnit| &mut u.final_mean_return)?;
    let budget = budget(args);
    let settings = settings(args);
    let of = |slug: &str| units_of(&units, slug, budget);
    let mut report = Report::new(&dir, "DP-SGD REINFORCE against plain REINFORCE");
    report.paragraph(&protocol_paragraph(args, budget));
    report.paragraph(&crate::report::PrivacyScope::DpSgdReinforce.sentence());
    settings_tables(
        &mut report,
        &units,
        "Seeds 0–9 ran before the criterion below (which judges fresh seeds only, ≥ 5 per \
         point, on the final reward); shown for the record.",
        |report, units| settings_table(report, &settings, units, budget),
    );

    // The slides' claims, judged by the criteria fixed in CLAIMS, on the L = 1 settings.
    let verdicts = judge_claims(
        args,
        "plain-l1",
        &format!("clip-only-c{}-l1", args.clip),
        |s| format!("dp-sigma{s}-c{}-l1", args.clip),
        of,
    );
    claims_section(
        &mut report,
        "Against the slides",
        "The slides' REINFORCE figures are images without numbers; their claims are judged by \
         the criteria below, fixed in the code before any run. The clip-only and batch (L) \
         controls have no counterpart in the slides: they are reported above, not judged. The \
         slides' code clips each parameter tensor to C and adds σC noise to each; here the \
         whole gradient is clipped to C (Abadi et al.), so the slides' σ is σ/√P here for P \
         tensors (P = 4).",
        &CLAIMS,
        &verdicts,
    );
    return_plot(&mut report, &dir, &units, &settings, budget)?;
    report.reproduce([reproduce_command(args, budget)?]);
    finish(report, &CLAIMS, &verdicts)
}

/// The units of setting `slug` run to `budget` episodes.
fn units_of<'u>(
    units: &'u [(PathBuf, ReinforceUnit)],
    slug: &str,
    budget: usize,
) -> Vec<&'u ReinforceUnit> {
    units
        .iter()
        .map(|(_, u)| u)
        .filter(|u| u.setting.slug == slug && u.budget == budget)
        .collect()
}

/// The protocol: the REINFORCE agent, the DP-SGD step, what solved means and what ε protects.
fn protocol_paragraph(args: &DpsgdArgs, budget: usize) -> String {
    format!(
        "{ENV}; the slides' REINFORCE (2-layer MLP, h = 128, dropout 0.5, Adam 0.01, normalised \
         returns), {budget} episodes per run. Every setting is one DP-SGD step per L episodes: \
         each episode's gradient clipped to C (flat L2), N(0, σ²C²I) added once to their sum, \
         divided by L; plain is the same with neither clipping nor noise. Solved: the mean of \
         {SOLVED_WINDOW} consecutive returns reaches {SOLVED_RETURN}. ε per episode (an episode \
         is the record, used in one release and discarded: one Gaussian release at q = 1, \
         whatever L and however many steps), {}, δ = {}, by the accountant named beside it. \
         Units: `units/<setting>-seed<k>/`; this report is regenerated from whichever exist.",
        args.adjacency.name(),
        args.delta
    )
}

/// The table of every setting: seeds, failures, solves, returns, ε and wall time.
fn settings_table(
    report: &mut Report,
    settings: &[ReinforceSetting],
    units: &[(PathBuf, ReinforceUnit)],
    budget: usize,
) {
    let mut rows = Vec::new();
    for setting in settings {
        let us = units_of(units, &setting.slug, budget);
        if us.is_empty() {
            continue;
        }
        let solved: Vec<f64> = us
            .iter()
            .filter_map(|u| u.solved_at_episode.map(|s| s as f64))
            .collect();
        let eps = epsilon_by_accountant(us.iter().map(|u| (u.epsilon, u.accountant)));
        let column = |f: fn(&ReinforceUnit) -> f64| {
            Cell::Text(format_number(mean(
                &us.iter().map(|&u| f(u)).collect::<Vec<_>>(),
            )))
        };
        rows.push(vec![
            Cell::Text(setting.label()),
            Cell::Text(format!("{:?}", setting.group)),
            Cell::Number(us.len() as f64),
            Cell::Number(us.iter().filter(|u| u.failed.is_some()).count() as f64),
            Cell::Text(format!("{}/{}", solved.len(), us.len())),
            Cell::Text(if solved.is_empty() {
                "–".into()
            } else {
                format_number(mean(&solved))
            }),
            column(|u| u.mean_return),
            column(|u| u.median_return),
            column(|u| u.final_return()),
            Cell::Text(if eps.is_empty() { "∞".into() } else { eps }),
            column(|u| u.wall_s),
        ]);
    }
    report.table(
        &[
            "setting",
            "control",
            "seeds",
            "failed",
            "solved",
            "mean solve episode",
            "mean return",
            "median return",
            "final reward (last 50)",
            "ε per episode",
            "wall s",
        ],
        rows,
    );
}

/// Mean of 25 returns against episodes, mean over seeds, on a 40-point grid.
fn return_plot(
    report: &mut Report,
    dir: &Path,
    units: &[(PathBuf, ReinforceUnit)],
    settings: &[ReinforceSetting],
    budget: usize,
) -> Result<()> {
    let grid: Vec<f64> = (1..=40).map(|i| budget as f64 * i as f64 / 40.0).collect();
    let mut chart = LineChart::new(format!("DP-SGD REINFORCE on {ENV}"))
        .x_label("episode")
        .y_label("mean return of the last 25 episodes (mean over seeds)");
    let mut any = false;
    for setting in settings {
        let curves: Vec<Vec<(f64, f64)>> = units
            .iter()
            .filter(|(_, u)| u.setting.slug == setting.slug && u.budget == budget)
            .map(|(path, _)| read_curve(path.parent().unwrap_or(dir)))
            .collect::<Result<_>>()?;
        let points: Vec<(f64, f64)> = grid
            .iter()
            .filter_map(|&x| {
                let values: Vec<f64> = curves
                    .iter()
                    .filter_map(|c| c.iter().take_while(|p| p.0 <= x).last().map(|p| p.1))
                    .filter(|v| v.is_finite())
                    .collect();
                (!values.is_empty()).then(|| (x, mean(&values)))
            })
            .collect();
        if !points.is_empty() {
            chart = chart.line(Line::new(setting.label(), points));
            any = true;
        }
    }
    if any {
        let files = chart.save(&dir.join("return"))?;
        report.plot(
            "Mean return of the last 25 episodes against episodes, mean over seeds.",
            &files,
        );
    }
    Ok(())
}

/// The command that reproduces the report.
fn reproduce_command(args: &DpsgdArgs, budget: usize) -> Result<String> {
    let join = |v: &[f64]| {
        v.iter()
            .map(|x| x.to_string())
            .collect::<Vec<_>>()
            .join(",")
    };
    let seeds = seeds(args)?;
    Ok(format!(
        "cargo xtask suite dpsgd --reinforce-controls --episodes {budget} --seeds {} \
         --sigma-sweep {} --control-sigma {} --clip {} --reinforce-batch-sweep {} \
         --accountant {} --threads 1",
        seeds
            .iter()
            .map(u64::to_string)
            .collect::<Vec<_>>()
            .join(","),
        join(&args.sigma_sweep),
        args.control_sigma,
        args.clip,
        args.reinforce_batch_sweep
            .iter()
            .map(usize::to_string)
            .collect::<Vec<_>>()
            .join(","),
        args.accountant
    ))
}

#[cfg(test)]
mod tests {
    use super::super::protocol::unit_dir;
    use super::*;

    use crate::backend::BackendChoice;

    /// A tiny protocol: every setting's unit is written once and skipped when present, ε per
    /// episode is the accountant's one release at q = 1, and the report judges every claim.
    #[test]
    fn units_are_written_once_and_the_report_is_regenerated() {
        let root = crate::run::tests::temp_dir("dpsgd-reinforce-controls");
        let mut args = DpsgdArgs::quick(0, BackendChoice::default(), 2);
        args.controls_dir = root.to_path_buf();
        args.episodes = Some(30);
        args.seeds = Some(crate::sweep::Seeds(vec![0]));
        args.sigma_sweep = vec![1.0];
        args.reinforce_batch_sweep = vec![3];
        args.accountant = AccountantKind::Pld;
        let outcome = run(&args).unwrap();
        let names = settings(&args);
        // plain L=1, clip only, σ = 1 L = 1, σ = 1 L = 3, plain L = 3.
        assert_eq!(names.len(), 5);
        let dir = protocol_dir(&args);
        let pld =
            privrl_privacy::dp_sgd_epsilon_pld(Adjacency::AddRemove, 1.0, 1.0, 1, 1e-5).unwrap();
        for setting in &names {
            let unit = unit_dir(&dir, &setting.slug, 0);
            let summary: ReinforceUnit = crate::run::read_json(&unit.join("summary.json")).unwrap();
            assert!(summary.episodes >= 30 && summary.failed.is_none());
            assert_eq!(summary.accountant, AccountantKind::Pld);
            match setting.noise_multiplier {
                Some(s) if s > 0.0 => assert_eq!(summary.epsilon, Some(pld)),
                _ => assert_eq!(summary.epsilon, None),
            }
            let curve = read_curve(&unit).unwrap();
            assert_eq!(curve.len(), summary.episodes);
        }
        let markdown = std::fs::read_to_string(&outcome.report).unwrap();
        assert!(markdown.contains("| plain REINFORCE, L = 1"), "{markdown}");
        assert!(markdown.contains("(PLD)"), "{markdown}");
        assert!(markdown.contains("Inconclusive"), "one seed: {markdown}");
        let before = std::fs::metadata(unit_dir(&dir, &names[0].slug, 0).join("curve.csv"))
            .unwrap()
            .modified()
            .unwrap();
        run(&args).unwrap();
        let after = std::fs::metadata(unit_dir(&dir, &names[0].slug, 0).join("curve.csv"))
            .unwrap()
            .modified()
            .unwrap();
        assert_eq!(before, after);
    }
}

//! `suite dpsgd --dqn-controls`: DP-SGD DQN on CartPole-v1 run to the environment-step budget
//! at which the suite's non-private DQN solves it, with the controls a reviewer asks for, in
//! resumable units (one setting × seed each) under `results/dpsgd/units/`, and a report
//! regenerated from whatever units exist (`results/dpsgd/report.md`).
//!
//! Settings, one factor at a time against DP-SGD at (σ, C) = (`--control-sigma`, `--clip`):
//! - **plain**: non-private DQN (the baseline, and the budget's reference);
//! - **clip only**: σ = 0 with clipping to C: the bias of clipping alone, no privacy (ε = ∞);
//! - **C sweep** (`--clip-sweep`) at the control σ;
//! - **σ sweep** (`--sigma-sweep`) at C;
//! - **adaptive clipping** (Andrew et al. 2021) from C at the control σ, accounted at σ;
//! - **Huber**: the TD error under smooth L1 instead of MSE, at the control σ and C.
//!
//! ε is per transition (add/remove, δ), composed over every gradient step at its own q_t by
//! the [`privrl_agents::PrivacyEngine`] with the `--accountant` (RDP by default;
//! each unit records which).

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result};
use burn::backend::Autodiff;
use burn::tensor::backend::Backend;
use clap::ValueEnum;
use privrl_agents::{
    Agent, DpSgdDqn, DpSgdTrainingConfig, Dqn, DqnConfig, NonPrivateDiagnostics, TdLoss,
};
use privrl_privacy::{AccountantKind, Adjacency};
use serde::{Deserialize, Serialize};

use super::plan::{dqn_config, DpsgdArgs, CONTROL_BUDGET};
use super::protocol::{
    claims_section, epsilon_by_accountant, finish, judge_claims, mean_se, read_units,
    run_missing_units, seeds, settings_tables, store, two_standard_errors, unit_path, unit_text,
    write_unit, Claim, UnitOutcome, UnitSetting, UnitTask, Verdict, FINAL_WINDOW, MIN_SEEDS,
};
use super::{dqn_budget_epsilon, mean, ENV, SOLVED_RETURN, SOLVED_WINDOW};
use crate::backend::BackendTask;
use crate::report::plot::{DualAxisChart, Line};
use crate::report::{format_number, Cell, Report};
use crate::summary::SuiteOutcome;
use crate::unit::Unit;

/// One setting of the protocol.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Setting {
    /// Unit-directory prefix, unique per setting.
    pub slug: String,
    /// Which control it belongs to.
    pub group: Group,
    /// σ of DP-SGD; `None` for non-private DQN.
    pub noise_multiplier: Option<f64>,
    /// Initial (adaptive) or fixed clipping bound C.
    pub clip: Option<f64>,
    /// Target quantile γ of adaptive clipping.
    pub adaptive_quantile: Option<f64>,
    /// The TD loss.
    pub td_loss: TdLoss,
    /// Adam's learning rate where it is not the suite's (`None`: [`dqn_config`]'s 1e-3).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub learning_rate: Option<f64>,
}

/// The control a setting belongs to (`--control-groups` picks which run).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum Group {
    /// Non-private DQN.
    Plain,
    /// σ = 0 with clipping.
    ClipOnly,
    /// The C sweep at the control σ.
    ClipSweep,
    /// The σ sweep at C.
    SigmaSweep,
    /// Adaptive clipping.
    Adaptive,
    /// Huber TD loss.
    Huber,
    /// The two smallest σ of the σ sweep with their effective learning rates swapped: the
    /// diagnosis of σ = 0.3 ending below σ = 1 ([`lr_swap`]).
    LrSwap,
}

impl Group {
    /// Every control, in run order.
    pub const ALL: [Group; 7] = [
        Group::Plain,
        Group::ClipOnly,
        Group::ClipSweep,
        Group::SigmaSweep,
        Group::Adaptive,
        Group::Huber,
        Group::LrSwap,
    ];
}

impl Setting {
    /// How the report names it.
    pub fn label(&self) -> String {
        let loss = match self.td_loss {
            TdLoss::Mse => "",
            TdLoss::Huber => ", Huber",
        };
        let lr = self
            .learning_rate
            .map(|lr| format!(", Adam lr {lr}"))
            .unwrap_or_default();
        match (self.noise_multiplier, self.clip, self.adaptive_quantile) {
            (None, _, _) => "plain DQN".to_owned(),
            (Some(s), Some(c), Some(q)) => {
                format!("σ = {s}, adaptive C from {c}, γ = {q}{loss}{lr}")
            }
            (Some(s), Some(c), None) => format!("σ = {s}, C = {c}{loss}{lr}"),
            (Some(s), None, _) => format!("σ = {s}, no clipping{loss}{lr}"),
        }
    }
}

/// The settings `args` asks for, in run order, without duplicates (the σ sweep's σ = control σ
/// is the C sweep's C = `--clip` point).
pub fn settings(args: &DpsgdArgs) -> Vec<Setting> {
    let c = args.clip;
    let sigma = args.control_sigma;
    let dp = |group, s: f64, clip: f64, slug: String| Setting {
        slug,
        group,
        noise_multiplier: Some(s),
        clip: Some(clip),
        adaptive_quantile: None,
        td_loss: TdLoss::Mse,
        learning_rate: None,
    };
    let mut out = vec![
        Setting {
            slug: "plain".into(),
            group: Group::Plain,
            noise_multiplier: None,
            clip: None,
            adaptive_quantile: None,
            td_loss: TdLoss::Mse,
            learning_rate: None,
        },
        dp(Group::ClipOnly, 0.0, c, format!("clip-only-c{c}")),
    ];
    for &clip in &args.clip_sweep {
        out.push(dp(
            Group::ClipSweep,
            sigma,
            clip,
            format!("dp-sigma{sigma}-c{clip}"),
        ));
    }
    for &s in &args.sigma_sweep {
        out.push(dp(Group::SigmaSweep, s, c, format!("dp-sigma{s}-c{c}")));
    }
    out.push(Setting {
        adaptive_quantile: Some(args.adaptive_quantile),
        ..dp(
            Group::Adaptive,
            sigma,
            c,
            format!("adaptive-sigma{sigma}-c{c}-q{}", args.adaptive_quantile),
        )
    });
    out.push(Setting {
        td_loss: TdLoss::Huber,
        ..dp(Group::Huber, sigma, c, format!("huber-sigma{sigma}-c{c}"))
    });
    for (s, lr) in lr_swap(&args.sigma_sweep) {
        out.push(Setting {
            learning_rate: Some(lr),
            ..dp(Group::LrSwap, s, c, format!("dp-sigma{s}-c{c}-lr{lr}"))
        });
    }
    // Groups first, then duplicates: σ = --control-sigma at C = --clip is in both sweeps, and
    // the σ sweep must keep it when the C sweep is not asked for.
    out.retain(|s| args.control_groups.contains(&s.group));
    let mut seen = std::collections::HashSet::new();
    out.retain(|s| seen.insert(s.slug.clone()));
    out
}

/// The diagnosis of σ = 0.3 ending below σ = 1 (issue 43), as settings (σ, Adam's learning
/// rate): the two smallest σ > 0 of the sweep, σ₁ < σ₂, each at the learning rate that gives it
/// the other's **effective** learning rate.
///
/// Why that rate: DP-SGD adds N(0, (σC)²) to the sum of a batch's clipped gradients, so the
/// averaged gradient carries noise of standard deviation σC/B per coordinate (B = 128, the
/// expected batch), which for most coordinates is far larger than the signal; Adam's second
/// moment then estimates that noise's variance, √v̂ ≈ σC/B, and the update lr·m̂/√v̂ is SGD
/// with learning rate lr·B/(σC) on the signal (the observation of "DP-AdamBC: Your DP-Adam
/// Is Actually DP-SGD (Unless You Apply Bias Correction)", Tang et al., AAAI 2024). At one lr,
/// a smaller σ is a *larger* effective step: 1e-3·128/0.3 ≈ 0.43 at σ = 0.3 against 0.128 at
/// σ = 1. So σ₁ runs at lr·σ₁/σ₂ and σ₂ at lr·σ₂/σ₁ (rounded to 4 significant digits, the
/// rounded value being the one used).
pub fn lr_swap(sigma_sweep: &[f64]) -> Vec<(f64, f64)> {
    let mut sweep: Vec<f64> = sigma_sweep.iter().copied().filter(|&s| s > 0.0).collect();
    sweep.sort_by(f64::total_cmp);
    sweep.dedup();
    let (s1, s2) = match sweep.as_slice() {
        [s1, s2, ..] => (*s1, *s2),
        _ => return Vec::new(),
    };
    let lr = dqn_config().lr;
    let round = |x: f64| {
        let scale = 10f64.powi(3 - x.log10().floor() as i32);
        (x * scale).round() / scale
    };
    vec![(s1, round(lr * s1 / s2)), (s2, round(lr * s2 / s1))]
}

/// What one unit's `summary.json` holds.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct UnitSummary {
    /// The setting.
    pub setting: Setting,
    /// The seed.
    pub seed: u64,
    /// The step budget.
    pub budget: u64,
    /// Environment steps taken (the end of the episode that crossed the budget).
    pub env_steps: u64,
    /// Episodes played.
    pub episodes: usize,
    /// First environment step at which the mean of 25 consecutive returns reached 475.
    pub solved_at_env_step: Option<u64>,
    /// Mean training return over all episodes.
    pub mean_return: f64,
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
    /// ε per transition at δ (add/remove) at the end, by `accountant`; `None` for ε = ∞
    /// (σ = 0, plain).
    pub epsilon: Option<f64>,
    /// The accountant of `epsilon` (RDP where not recorded, the only one then).
    #[serde(default)]
    pub accountant: AccountantKind,
    /// δ of ε.
    pub delta: f64,
    /// Final C (differs from the initial one under adaptive clipping).
    pub final_clip: Option<f64>,
    /// Why the run stopped early (e.g. a non-finite TD loss); counted, never dropped.
    pub failed: Option<String>,
    /// Wall-clock seconds.
    pub wall_s: f64,
}

/// Runs every missing unit of the protocol into `args.controls_dir`, then writes the report.
pub fn run(args: &DpsgdArgs) -> Result<SuiteOutcome> {
    anyhow::ensure!(
        args.budget > 0,
        "--budget must be at least 1 environment step"
    );
    anyhow::ensure!(
        args.clip.is_finite() && args.clip > 0.0,
        "--clip must be > 0, got {}",
        args.clip
    );
    for &v in args.clip_sweep.iter() {
        anyhow::ensure!(
            v.is_finite() && v > 0.0,
            "--clip-sweep values must be > 0, got {v}"
        );
    }
    for &v in args.sigma_sweep.iter().chain([&args.control_sigma]) {
        anyhow::ensure!(v.is_finite() && v >= 0.0, "σ values must be >= 0, got {v}");
    }
    let dir = args.controls_dir.clone();
    // Fix the commit every unit of this invocation records before the first one runs.
    let _ = crate::run::source_commit();
    run_missing_units(&dir, args, &settings(args), &seeds(args)?)?;
    write_report(&dir, args)
}

impl UnitOutcome for UnitSummary {
    fn solved(&self) -> bool {
        self.solved_at_env_step.is_some()
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

impl Unit for UnitSummary {
    type Setting = Setting;
    fn path(root: &Path, setting: &Setting, seed: u64) -> PathBuf {
        unit_path(root, &setting.slug, seed)
    }
    fn text(&self) -> Result<String> {
        unit_text(self)
    }
}

impl UnitSetting for Setting {
    type Unit = UnitSummary;
    fn slug(&self) -> &str {
        &self.slug
    }
}

/// The DQN of a setting: the suite's, with its TD loss and learning rate.
fn setting_dqn(setting: &Setting) -> DqnConfig {
    let dqn = dqn_config().with_td_loss(setting.td_loss);
    match setting.learning_rate {
        Some(lr) => dqn.with_lr(lr),
        None => dqn,
    }
}

impl BackendTask for UnitTask<'_, Setting> {
    type Output = ();

    fn run<IB: Backend>(self, device: IB::Device) -> Result<()> {
        type B<IB> = Autodiff<IB>;
        let (setting, seed, args) = (&self.setting, self.seed, self.args);
        let dqn = Dqn::<B<IB>>::new(setting_dqn(setting), privrl_envs::make(ENV)?, &device, seed)?;
        let mut agent = match setting.noise_multiplier {
            None => UnitAgent::Plain(dqn),
            Some(sigma) => {
                let config = DpSgdTrainingConfig::new()
                    .with_noise_multiplier(sigma)
                    .with_clip(setting.clip)
                    .with_delta(args.delta)
                    .with_adjacency(args.adjacency)
                    .with_accountant(args.accountant)
                    .with_noise_rng(args.noise_rng.mode())
                    .with_adaptive_clip_quantile(setting.adaptive_quantile)
                    .with_adaptive_clip_learning_rate(args.adaptive_lr)
                    .with_adaptive_clip_count_noise(args.adaptive_count_noise);
                // Under `--noise-rng secure` this seed is not used.
                UnitAgent::Private(DpSgdDqn::new(dqn, &config, seed ^ 0xd9_5e0d)?)
            }
        };
        let mut norms = NormLog::default();
        let bar = self.progress.bar(args.budget);
        // The curve's ε after every episode is RDP's: a PLD ε composes the whole schedule
        // (thousands of distinct q_t), minutes each; the header says which.
        let mut rows = CurveColumn::header(&CurveColumn::ALL, args.accountant);
        let mut failed = None;
        let start = Instant::now();
        while agent.log().env_steps < args.budget {
            if let Err(e) = agent.train_episode(&mut norms) {
                failed = Some(e.to_string());
                break;
            }
            let log = agent.log();
            let recent = log.mean_recent_return(SOLVED_WINDOW).unwrap_or(f64::NAN);
            let epsilon = agent.epsilon_by(AccountantKind::Rdp)?;
            rows.push_str(&format!(
                "{},{},{},{recent},{}\n",
                log.episodes(),
                log.env_steps,
                log.returns.last().copied().unwrap_or(f64::NAN),
                if epsilon.is_finite() {
                    epsilon.to_string()
                } else {
                    String::new()
                }
            ));
            bar.set_position(log.env_steps.min(args.budget));
            bar.set_message(format!("return {}", format_number(recent)));
        }
        let log = agent.log().clone();
        let solved_at_env_step = solved_at(&rows);
        let epsilon = Some(agent.epsilon_by(args.accountant)?).filter(|e| e.is_finite());
        let summary = UnitSummary {
            setting: setting.clone(),
            seed,
            budget: args.budget,
            env_steps: log.env_steps,
            episodes: log.episodes(),
            solved_at_env_step,
            mean_return: mean(&log.returns),
            final_mean_return_25: log.mean_recent_return(SOLVED_WINDOW).unwrap_or(f64::NAN),
            final_mean_return: Some(log.mean_recent_return(FINAL_WINDOW).unwrap_or(f64::NAN)),
            commit: crate::run::source_commit(),
            epsilon,
            accountant: args.accountant,
            delta: args.delta,
            final_clip: match &agent {
                UnitAgent::Private(p) => Some(p.engine().clip()).filter(|c| c.is_finite()),
                UnitAgent::Plain(_) => None,
            },
            failed,
            wall_s: start.elapsed().as_secs_f64(),
        };
        if let UnitAgent::Private(_) = agent {
            let unit = store::<UnitSummary>(self.dir).dir(setting, seed)?;
            let path = unit.join(NormLog::FILE);
            std::fs::write(&path, norms.finish(log.env_steps))
                .with_context(|| format!("writing {}", path.display()))?;
        }
        write_unit(self.dir, setting, seed, &rows, &summary)
    }
}

/// The per-transition TD-gradient norms of a DP-SGD DQN unit's gradient steps, in windows of
/// [`NormLog::WINDOW`] environment steps, written to `norms.csv` beside the curve: unnoised
/// statistics of the sampled transitions (outside the unit's ε, like the TD loss), read to set
/// the norms beside C. Each column but the counts is the mean over the window's gradient
/// steps of that step's batch statistic.
#[derive(Default)]
struct NormLog {
    rows: String,
    steps: usize,
    records: usize,
    clipped: usize,
    percentiles: [f64; 3],
    next: u64,
}

impl NormLog {
    const FILE: &'static str = "norms.csv";
    const WINDOW: u64 = 5000;
    const HEADER: &'static str =
        "env_steps,gradient_steps,records,norm_p10,norm_p50,norm_p90,clipped_fraction\n";

    /// One gradient step's batch (an empty batch has no norms and is skipped).
    fn add(&mut self, step: NonPrivateDiagnostics) {
        if step.batch_size == 0 {
            return;
        }
        self.steps += 1;
        self.records += step.batch_size;
        self.clipped += step.clipped;
        for (sum, p) in self.percentiles.iter_mut().zip(step.norm_percentiles) {
            *sum += p;
        }
    }

    /// Closes the window if `env_steps` has reached its end.
    fn window_end(&mut self, env_steps: u64) {
        if self.next == 0 {
            self.next = Self::WINDOW;
        }
        if env_steps >= self.next {
            self.flush(env_steps);
            self.next = (env_steps / Self::WINDOW + 1) * Self::WINDOW;
        }
    }

    fn flush(&mut self, env_steps: u64) {
        if self.steps == 0 {
            return;
        }
        let n = self.steps as f64;
        let [p10, p50, p90] = self.percentiles.map(|sum| sum / n);
        self.rows.push_str(&format!(
            "{env_steps},{},{},{p10},{p50},{p90},{}\n",
            self.steps,
            self.records,
            self.clipped as f64 / self.records as f64
        ));
        (self.steps, self.records, self.clipped) = (0, 0, 0);
        self.percentiles = [0.0; 3];
    }

    /// The file's text, the last partial window included.
    fn finish(mut self, env_steps: u64) -> String {
        self.flush(env_steps);
        format!("{}{}", Self::HEADER, self.rows)
    }
}

/// The agent of one unit.
#[allow(clippy::large_enum_variant)]
enum UnitAgent<B: burn::tensor::backend::AutodiffBackend> {
    Plain(Dqn<B>),
    Private(DpSgdDqn<B>),
}

impl<B: burn::tensor::backend::AutodiffBackend> UnitAgent<B> {
    fn log(&self) -> &privrl_agents::EpisodeLog {
        match self {
            UnitAgent::Plain(d) => d.episode_log(),
            UnitAgent::Private(p) => p.agent().episode_log(),
        }
    }

    fn train_episode(&mut self, norms: &mut NormLog) -> Result<(), privrl_agents::AgentError> {
        match self {
            UnitAgent::Plain(d) => {
                let episodes = d.episode_log().episodes();
                while d.episode_log().episodes() == episodes {
                    d.step()?;
                }
                Ok(())
            }
            UnitAgent::Private(p) => {
                // `DpSgdDqn::train_episode`'s loop, reading each gradient step's norms.
                let episodes = p.agent().episode_log().episodes();
                while p.agent().episode_log().episodes() == episodes {
                    if p.step()?.is_some() {
                        if let Some(step) = p.last_step_diagnostics() {
                            norms.add(step);
                        }
                    }
                    norms.window_end(p.agent().episode_log().env_steps);
                }
                Ok(())
            }
        }
    }

    /// ε per transition so far by `accountant` (∞ for plain DQN and σ = 0).
    fn epsilon_by(&self, accountant: AccountantKind) -> Result<f64> {
        Ok(match self {
            UnitAgent::Plain(_) => f64::INFINITY,
            // The engine's own schedule, so that the RDP ε after every episode of a PLD run
            // reuses its cached prefix (as the engine's own ε does under RDP).
            UnitAgent::Private(p) => p.engine().schedule().epsilon_by(accountant)?,
        })
    }
}

/// The columns of a unit's `curve.csv`, in file order: the header is written from them and
/// the report reads each back by its position. REINFORCE units have no ε column.
#[derive(Clone, Copy)]
pub(super) enum CurveColumn {
    Episode,
    EnvSteps,
    Return,
    MeanReturn25,
    Epsilon,
}

impl CurveColumn {
    /// Every column, in file order.
    pub(super) const ALL: [CurveColumn; 5] = [
        CurveColumn::Episode,
        CurveColumn::EnvSteps,
        CurveColumn::Return,
        CurveColumn::MeanReturn25,
        CurveColumn::Epsilon,
    ];

    /// The column's name, but for ε under PLD (the protocol runs' `metrics.csv`
    /// writes and reads its first four columns by these names).
    pub(super) const fn column(self) -> &'static str {
        match self {
            CurveColumn::Episode => "episode",
            CurveColumn::EnvSteps => "env_steps",
            CurveColumn::Return => "return",
            CurveColumn::MeanReturn25 => "mean_return_25",
            CurveColumn::Epsilon => "epsilon",
        }
    }

    /// The column's name in the header. The curve's ε after every episode is RDP's, so under
    /// the PLD accountant it is named `epsilon_rdp`.
    pub(super) fn name(self, accountant: AccountantKind) -> &'static str {
        match (self, accountant) {
            (CurveColumn::Epsilon, AccountantKind::Pld) => "epsilon_rdp",
            _ => self.column(),
        }
    }

    /// The column's position in a row.
    pub(super) fn index(self) -> usize {
        self as usize
    }

    /// The header line of `columns` (in file order), newline-terminated.
    pub(super) fn header(columns: &[CurveColumn], accountant: AccountantKind) -> String {
        let names: Vec<&str> = columns.iter().map(|c| c.name(accountant)).collect();
        format!("{}\n", names.join(","))
    }
}

/// The first env step of `curve.csv` text whose mean of 25 returns reaches 475.
fn solved_at(rows: &str) -> Option<u64> {
    rows.lines().skip(1).find_map(|line| {
        let cells: Vec<&str> = line.split(',').collect();
        let recent: f64 = cells.get(CurveColumn::MeanReturn25.index())?.parse().ok()?;
        (recent >= SOLVED_RETURN).then(|| cells[CurveColumn::EnvSteps.index()].parse().ok())?
    })
}

/// (env steps, mean of 25 returns, ε) of a unit's curve.
fn read_curve(unit: &Path) -> Result<Vec<(f64, f64, f64)>> {
    let text = std::fs::read_to_string(unit.join("curve.csv"))
        .with_context(|| format!("reading {}", unit.join("curve.csv").display()))?;
    Ok(text
        .lines()
        .skip(1)
        .filter_map(|line| {
            let c: Vec<&str> = line.split(',').collect();
            let x = c.get(CurveColumn::EnvSteps.index())?.parse().ok()?;
            let y = c.get(CurveColumn::MeanReturn25.index())?.parse().ok()?;
            let e = c
                .get(CurveColumn::Epsilon.index())
                .and_then(|e| e.parse().ok())
                .unwrap_or(f64::NAN);
            Some((x, y, e))
        })
        .collect())
}

/// The slides' DQN claims (paper 004) and the criteria that judge them, written before the
/// runs. A failed run (non-finite loss) counts as not solved and its returns as they stood.
const CLAIMS: [Claim; 3] = [
    Claim {
        figure: "Fig. 6 (DQN convergence on CartPole)",
        claim: "non-private DQN (3-layer MLP, h = 128, |B| = 128) converges on CartPole",
        criterion: "plain DQN solves (mean of 25 returns ≥ 475) within the budget in ≥ 2/3 of ≥ 5 \
                    judged seeds (seeds 10 and up, each unit recording the commit it ran at; the \
                    budget was fixed from plain DQN on seeds 0–2): Agrees; in none: Disagrees; \
                    else Inconclusive",
    },
    Claim {
        figure: "Figs. 8–9, conclusion",
        claim: "DP-SGD DQN \"is able to converge with reasonable noise levels\"",
        criterion: "DP-SGD DQN at the smallest σ > 0 of the σ sweep solves within the budget in ≥ \
                    2/3 of ≥ 5 judged seeds (seeds 10 and up, each unit recording the commit it \
                    ran at; the budget was fixed from plain DQN on seeds 0–2): Agrees; in none: \
                    Disagrees; else Inconclusive",
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

/// Writes `dir/report.md` and the return/ε plot from every unit present.
pub fn write_report(dir: &Path, args: &DpsgdArgs) -> Result<SuiteOutcome> {
    let units = read_units(dir, |u: &mut UnitSummary| &mut u.final_mean_return)?;
    // The settings asked for, then any other setting a unit ran (e.g. an earlier invocation's
    // `--control-groups` or sweeps), so that every unit present is in the tables.
    let mut settings = settings(args);
    for (_, unit) in &units {
        if !settings.iter().any(|s| s.slug == unit.setting.slug) {
            settings.push(unit.setting.clone());
        }
    }
    let of = |slug: &str| units_of(&units, slug, args.budget);
    let mut report = Report::new(dir, "DP-SGD DQN to a solving budget, with controls");
    report.paragraph(&protocol_paragraph(args));
    report.paragraph(&crate::report::PrivacyScope::DpSgdDqn.sentence());
    settings_tables(
        &mut report,
        &units,
        "Seeds 0–2 ran before the criterion below (the budget was fixed from plain DQN's \
         solves on them, and the earlier criterion judged the mean training return on the \
         same seeds, a check that could not fail); shown for the record.",
        |report, units| settings_table(report, &settings, units, args.budget, args.adjacency),
    );
    let judged: Vec<(PathBuf, UnitSummary)> =
        units.iter().filter(|(_, u)| u.judged()).cloned().collect();
    norms_section(&mut report, &units, args.budget)?;
    baselines_section(&mut report)?;

    // The slides' claims, judged by the criteria fixed in CLAIMS.
    let verdicts = judge_claims(
        args,
        "plain",
        &format!("clip-only-c{}", args.clip),
        |s| format!("dp-sigma{s}-c{}", args.clip),
        of,
    );
    // A directory without plain DQN units (e.g. the long budget's, which runs only the
    // private settings) leaves its claim to the report that has them, rather than printing
    // an Inconclusive that no run could have decided.
    let plain_here = !of("plain").is_empty();
    let (claims, shown): (Vec<Claim>, Vec<(Verdict, String)>) = CLAIMS
        .iter()
        .zip(&verdicts)
        .enumerate()
        .filter(|&(i, _)| i != 0 || plain_here)
        .map(|(_, (c, v))| (*c, v.clone()))
        .unzip();
    claims_section(
        &mut report,
        "Against the slides",
        &format!(
            "The slides' DQN figures are images without numbers; their claims are judged by the \
             criteria below, fixed in the code before any run. The controls (clip only, C sweep, \
             adaptive clipping, Huber) have no counterpart in the slides: they are reported \
             above, not judged.{}",
            if plain_here {
                ""
            } else {
                " No plain DQN unit ran at this budget here, so its claim (Fig. 6) is judged in \
                 the report of the default budget, not in this one."
            }
        ),
        &claims,
        &shown,
    );
    lr_swap_section(&mut report, args, of);
    return_and_epsilon_plot(&mut report, dir, args, &judged, &settings)?;
    report.reproduce(reproduce_commands(args, &units));
    finish(report, &CLAIMS, &verdicts)
}

/// The commands that made the report's units. At the default budget and directory, the three
/// invocations behind `results/dpsgd` (seeds 0–2, then the judged seeds and the C sweep);
/// elsewhere (e.g. five times the budget in `results/dpsgd/long`) one command built from the
/// units present at `args.budget`: their seeds, groups and sweep values, so the line names
/// what was run rather than the default protocol.
fn reproduce_commands(args: &DpsgdArgs, units: &[(PathBuf, UnitSummary)]) -> Vec<String> {
    let default_dir = std::path::Path::new("results/dpsgd");
    if args.budget == CONTROL_BUDGET && args.controls_dir == default_dir {
        let b = args.budget;
        return vec![
            format!(
                "cargo xtask suite dpsgd --dqn-controls --budget {b} --seeds 0,1,2 --threads 2"
            ),
            format!(
                "cargo xtask suite dpsgd --dqn-controls --budget {b} --seeds 10..15 --threads 2 \
                 --control-groups plain,clip-only,sigma-sweep,lr-swap"
            ),
            format!(
                "cargo xtask suite dpsgd --dqn-controls --budget {b} --seeds 10..15 --threads 2 \
                 --control-groups clip-sweep --control-sigma 0 --clip-sweep 10,100"
            ),
        ];
    }
    let here: Vec<&UnitSummary> = units
        .iter()
        .map(|(_, u)| u)
        .filter(|u| u.budget == args.budget)
        .collect();
    let list = |mut v: Vec<String>| {
        v.dedup();
        v.join(",")
    };
    let mut seeds: Vec<u64> = here.iter().map(|u| u.seed).collect();
    seeds.sort_unstable();
    let groups: Vec<Group> = Group::ALL
        .into_iter()
        .filter(|g| here.iter().any(|u| u.setting.group == *g))
        .collect();
    let values = |group: Group, of: fn(&Setting) -> Option<f64>| {
        let mut v: Vec<f64> = here
            .iter()
            .filter(|u| u.setting.group == group)
            .filter_map(|u| of(&u.setting))
            .collect();
        v.sort_by(f64::total_cmp);
        list(v.iter().map(f64::to_string).collect())
    };
    let mut command = format!(
        "cargo xtask suite dpsgd --dqn-controls --budget {} --seeds {} --threads 2 \
         --controls-dir {} --control-groups {}",
        args.budget,
        list(seeds.iter().map(u64::to_string).collect()),
        args.controls_dir.display(),
        list(
            groups
                .iter()
                .filter_map(|g| g.to_possible_value())
                .map(|v| v.get_name().to_string())
                .collect()
        ),
    );
    if args.clip != 1.0 {
        command += &format!(" --clip {}", args.clip);
    }
    if groups.contains(&Group::SigmaSweep) {
        command += &format!(
            " --sigma-sweep {}",
            values(Group::SigmaSweep, |s| s.noise_multiplier)
        );
    }
    if groups.contains(&Group::ClipSweep) {
        command += &format!(
            " --clip-sweep {} --control-sigma {}",
            values(Group::ClipSweep, |s| s.clip),
            args.control_sigma
        );
    }
    vec![command]
}

/// The units of setting `slug` run to `budget`.
fn units_of<'u>(
    units: &'u [(PathBuf, UnitSummary)],
    slug: &str,
    budget: u64,
) -> Vec<&'u UnitSummary> {
    units
        .iter()
        .map(|(_, u)| u)
        .filter(|u| u.setting.slug == slug && u.budget == budget)
        .collect()
}

/// The protocol: the DQN, the budget, what solved means and what ε protects.
fn protocol_paragraph(args: &DpsgdArgs) -> String {
    format!(
        "{ENV}; the suite's DQN (3-layer MLP, h = 128, |B| = 128, Adam 1e-3, a gradient step \
         every 2nd environment step, buffer 10k); budget {} environment steps per run{}. Solved: the mean of {SOLVED_WINDOW} \
         consecutive returns reaches {SOLVED_RETURN}. ε per transition (one replay-buffer \
         transition is the record), composed over every gradient step at its own Poisson \
         rate q_t = min(1, 128/n_t) by the accountant named beside it, {}, δ = {}, at the \
         most steps any run can take: a run stops at the first episode end at or after the \
         budget, so its own step count depends on its episodes, and the budget plus the \
         longest episode (500 steps) less one does not (each unit's own ε is in its \
         summary.json). Units: `units/<setting>-seed<k>/`; this report is regenerated from \
         whichever exist.",
        args.budget,
        budget_origin(args.budget),
        args.adjacency.name(),
        args.delta
    )
}

/// Where a budget comes from: the default is where non-private DQN solved on seeds 0–2; any
/// other is stated as a multiple of it, so a long run's report does not claim the default's
/// origin.
fn budget_origin(budget: u64) -> String {
    if budget == CONTROL_BUDGET {
        " (where non-private DQN solved on seeds 0, 1, 2)".to_string()
    } else {
        format!(
            " ({}× the default {CONTROL_BUDGET}, where non-private DQN solved on seeds 0, 1, 2; \
             settings not run at this budget, e.g. plain DQN, are judged at the default budget \
             in the default directory's report, not here)",
            format_number(budget as f64 / CONTROL_BUDGET as f64)
        )
    }
}

/// The table of every setting: seeds, failures, solves, returns, ε and the final clip.
fn settings_table(
    report: &mut Report,
    settings: &[Setting],
    units: &[(PathBuf, UnitSummary)],
    budget: u64,
    adjacency: Adjacency,
) {
    let mut rows = Vec::new();
    for setting in settings {
        let us = units_of(units, &setting.slug, budget);
        if us.is_empty() {
            continue;
        }
        let solved: Vec<f64> = us
            .iter()
            .filter_map(|u| u.solved_at_env_step.map(|s| s as f64))
            .collect();
        // The units' accountants, each at the data-independent bound (`dqn_budget_epsilon`),
        // computed once per (δ, accountant): it composes ~5000 distinct sampling rates.
        let eps = match setting.noise_multiplier.filter(|&s| s > 0.0) {
            Some(sigma) => {
                let mut bounds: Vec<((u64, AccountantKind), Option<f64>)> = Vec::new();
                for u in &us {
                    let key = (u.delta.to_bits(), u.accountant);
                    if !bounds.iter().any(|(k, _)| *k == key) {
                        let bound = dqn_budget_epsilon(
                            &setting_dqn(setting),
                            budget,
                            sigma,
                            u.delta,
                            adjacency,
                            u.accountant,
                        )
                        .ok();
                        bounds.push((key, bound));
                    }
                }
                epsilon_by_accountant(us.iter().map(|u| {
                    let key = (u.delta.to_bits(), u.accountant);
                    let bound = bounds.iter().find(|(k, _)| *k == key).and_then(|(_, b)| *b);
                    let own = u.epsilon.unwrap_or(0.0);
                    (bound.map(|b| b.max(own)).or(u.epsilon), u.accountant)
                }))
            }
            None => String::new(),
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
            Cell::Text(format_number(mean(
                &us.iter().map(|u| u.mean_return).collect::<Vec<_>>(),
            ))),
            Cell::Text(format_number(mean(
                &us.iter().map(|u| u.final_return()).collect::<Vec<_>>(),
            ))),
            Cell::Text(
                if setting.noise_multiplier.unwrap_or(0.0) > 0.0 && !eps.is_empty() {
                    eps
                } else {
                    "∞".into()
                },
            ),
            Cell::Text(
                us.iter()
                    .filter_map(|u| u.final_clip)
                    .map(format_number)
                    .collect::<Vec<_>>()
                    .join(", "),
            ),
        ]);
    }
    report.table(
        &[
            "setting",
            "control",
            "seeds",
            "failed",
            "solved",
            "mean solve step",
            "mean return",
            "final reward (last 50)",
            "ε per transition",
            "final C",
        ],
        rows,
    );
}

/// Return against env steps, ε on the second axis: written when both have a line.
fn return_and_epsilon_plot(
    report: &mut Report,
    dir: &Path,
    args: &DpsgdArgs,
    units: &[(PathBuf, UnitSummary)],
    settings: &[Setting],
) -> Result<()> {
    let grid: Vec<f64> = (1..=40)
        .map(|i| args.budget as f64 * i as f64 / 40.0)
        .collect();
    let mut chart = DualAxisChart::new(format!("DP-SGD DQN on {ENV}"))
        .x_label("environment steps (log)")
        .y_label("mean return of the last 25 episodes (mean over seeds)")
        .y2_label(format!(
            "ε per transition ({}, δ = {}), dashed",
            args.adjacency.name(),
            args.delta
        ));
    let mut has_epsilon = false;
    let mut has_return = false;
    for setting in settings {
        let curves: Vec<Vec<(f64, f64, f64)>> = units
            .iter()
            .filter(|(_, u)| u.setting.slug == setting.slug && u.budget == args.budget)
            .map(|(path, _)| read_curve(path.parent().unwrap_or(dir)))
            .collect::<Result<_>>()?;
        if curves.is_empty() {
            continue;
        }
        let at = |x: f64, pick: fn(&(f64, f64, f64)) -> f64| -> Option<f64> {
            let values: Vec<f64> = curves
                .iter()
                .filter_map(|c| c.iter().take_while(|p| p.0 <= x).last().map(pick))
                .filter(|v| v.is_finite())
                .collect();
            (!values.is_empty()).then(|| mean(&values))
        };
        let returns: Vec<(f64, f64)> = grid
            .iter()
            .filter_map(|&x| at(x, |p| p.1).map(|y| (x, y)))
            .collect();
        if !returns.is_empty() {
            chart = chart.line(Line::new(setting.label(), returns));
            has_return = true;
        }
        // ε depends on σ only (the schedule is public): one dashed line per σ of the sweep.
        if setting.group == Group::SigmaSweep {
            let eps: Vec<(f64, f64)> = grid
                .iter()
                .filter_map(|&x| at(x, |p| p.2).map(|y| (x, y)))
                .collect();
            if !eps.is_empty() {
                chart = chart.secondary_line(Line::new(format!("ε, {}", setting.label()), eps));
                has_epsilon = true;
            }
        }
    }
    if has_return && has_epsilon {
        let files = chart.save(&dir.join("return-and-epsilon"))?;
        report.plot(
            "Mean return of the last 25 episodes against environment steps (solid), ε per \
             transition of the σ sweep (dashed, right axis).",
            &files,
        );
    }
    Ok(())
}

/// Episodes of each baseline policy in [`baselines_section`].
const BASELINE_EPISODES: usize = 1000;

/// The trivial policies a DQN return is read against: uniformly random, and always the same
/// action. A greedy policy on a Q-network that has learned nothing is close to the latter (one
/// action's Q-value is above the other's in most states), which is how a failed DQN ends below
/// One unit's `norms.csv`, summarised: the first window's median, and the whole run's
/// percentiles (means over gradient steps) and share of transitions clipped (over records).
struct SeedNorms {
    first_median: f64,
    percentiles: [f64; 3],
    clipped: f64,
}

/// The per-transition TD-gradient norms of every unit at `budget` that logged them
/// (`norms.csv`; units written before the log existed have none), per setting and set beside
/// its C: the measured side of the clip sweep's reading.
fn norms_section(report: &mut Report, units: &[(PathBuf, UnitSummary)], budget: u64) -> Result<()> {
    // Per setting: its C and one entry per seed.
    let mut settings: Vec<(String, f64, Vec<SeedNorms>)> = Vec::new();
    for (path, unit) in units.iter().filter(|(_, u)| u.budget == budget) {
        let file = path.with_file_name(NormLog::FILE);
        let Ok(text) = std::fs::read_to_string(&file) else {
            continue;
        };
        let rows: Vec<Vec<f64>> = text
            .lines()
            .skip(1)
            .map(|l| {
                l.split(',')
                    .map(|c| c.parse().unwrap_or(f64::NAN))
                    .collect()
            })
            .filter(|r: &Vec<f64>| r.len() == 7)
            .collect();
        let Some(first) = rows.first() else { continue };
        let steps: f64 = rows.iter().map(|r| r[1]).sum();
        let records: f64 = rows.iter().map(|r| r[2]).sum();
        let percentiles = [3, 4, 5].map(|c| rows.iter().map(|r| r[c] * r[1]).sum::<f64>() / steps);
        let clipped = rows.iter().map(|r| r[6] * r[2]).sum::<f64>() / records;
        let entry = SeedNorms {
            first_median: first[4],
            percentiles,
            clipped,
        };
        let clip = unit.setting.clip.unwrap_or(f64::INFINITY);
        match settings
            .iter_mut()
            .find(|(slug, ..)| *slug == unit.setting.slug)
        {
            Some((_, _, seeds)) => seeds.push(entry),
            None => settings.push((unit.setting.slug.clone(), clip, vec![entry])),
        }
    }
    if settings.is_empty() {
        return Ok(());
    }
    report.heading("Per-transition gradient norms against C");
    report.paragraph(&format!(
        "Each DP-SGD unit run since the log existed records, for every gradient step, the 10th, \
         50th and 90th percentiles of its sampled transitions' TD-gradient norms ‖g_i‖₂ before \
         clipping and how many exceeded C (`units/<setting>-seed<k>/{}`, windows of {} \
         environment steps). These are unnoised statistics of the private transitions, outside \
         the units' ε, like the TD loss. Below: per setting, the mean over seeds of the first \
         window's median and of the whole run's percentiles (means over gradient steps), and \
         the share of all sampled transitions the clip scaled down.",
        NormLog::FILE,
        NormLog::WINDOW
    ));
    let rows = settings
        .into_iter()
        .map(|(slug, clip, seeds)| {
            let over = |f: fn(&SeedNorms) -> f64| {
                format_number(mean(&seeds.iter().map(f).collect::<Vec<_>>()))
            };
            vec![
                Cell::Text(slug),
                Cell::Text(format_number(clip)),
                Cell::Number(seeds.len() as f64),
                Cell::Text(over(|s| s.first_median)),
                Cell::Text(over(|s| s.percentiles[1])),
                Cell::Text(format!(
                    "{} – {}",
                    over(|s| s.percentiles[0]),
                    over(|s| s.percentiles[2])
                )),
                Cell::Text(over(|s| s.clipped)),
            ]
        })
        .collect();
    report.table(
        &[
            "setting",
            "C",
            "seeds",
            "median ‖g_i‖, first window",
            "median ‖g_i‖, whole run",
            "10th – 90th percentile, whole run",
            "share clipped",
        ],
        rows,
    );
    Ok(())
}

/// a random policy.
fn baselines_section(report: &mut Report) -> Result<()> {
    let mut rows = Vec::new();
    for (name, policy) in [
        ("uniformly random", None),
        ("always action 0 (push left)", Some(0)),
        ("always action 1 (push right)", Some(1)),
    ] {
        let returns = baseline_returns(policy, BASELINE_EPISODES, 0)?;
        rows.push(vec![
            Cell::Text(name.into()),
            Cell::Number(BASELINE_EPISODES as f64),
            Cell::Text(format_number(mean(&returns))),
            Cell::Text(format_number(
                returns.iter().copied().fold(f64::NEG_INFINITY, f64::max),
            )),
        ]);
    }
    report.heading("Trivial policies");
    report.paragraph(&format!(
        "{ENV}, {BASELINE_EPISODES} episodes each from seed 0. A run whose returns sit near the \
         constant policies' has a greedy policy that (nearly) always picks one action: its \
         Q-network did not learn to tell the two apart."
    ));
    report.table(&["policy", "episodes", "mean return", "max return"], rows);
    Ok(())
}

/// `episodes` returns of `policy` (`None`: uniformly random from `seed`; `Some(a)`: always a).
fn baseline_returns(policy: Option<usize>, episodes: usize, seed: u64) -> Result<Vec<f64>> {
    let mut env = privrl_envs::make(ENV)?;
    let mut random = privrl_envs::throughput::RandomActions::new(2, seed);
    env.reset(Some(seed));
    let mut returns = Vec::with_capacity(episodes);
    for _ in 0..episodes {
        let mut total = 0.0;
        loop {
            let step = env.step(policy.unwrap_or_else(|| random.sample()))?;
            total += step.reward;
            if step.done() {
                break;
            }
        }
        env.reset(None);
        returns.push(total);
    }
    Ok(returns)
}

/// The diagnosis of σ = 0.3 ending below σ = 1 ([`lr_swap`]), judged by
/// [`LR_SWAP_CRITERION`], written before its runs, on the judged seeds.
fn lr_swap_section<'u>(
    report: &mut Report,
    args: &DpsgdArgs,
    of: impl Fn(&str) -> Vec<&'u UnitSummary>,
) {
    let swap = lr_swap(&args.sigma_sweep);
    let [(s1, lr1), (s2, lr2)] = match swap.as_slice() {
        [a, b] => [*a, *b],
        _ => return,
    };
    let c = args.clip;
    let finals = |slug: String| -> Vec<f64> {
        of(&slug)
            .into_iter()
            .filter(|u| u.judged())
            .map(|u| u.final_return())
            .collect()
    };
    // No swapped unit at this budget here (e.g. the long budget's directory): nothing to test.
    if of(&format!("dp-sigma{s1}-c{c}-lr{lr1}")).is_empty()
        && of(&format!("dp-sigma{s2}-c{c}-lr{lr2}")).is_empty()
    {
        return;
    }
    let base1 = finals(format!("dp-sigma{s1}-c{c}"));
    let base2 = finals(format!("dp-sigma{s2}-c{c}"));
    let swap1 = finals(format!("dp-sigma{s1}-c{c}-lr{lr1}"));
    let swap2 = finals(format!("dp-sigma{s2}-c{c}-lr{lr2}"));
    let (verdict, measured) = lr_swap_verdict(&base1, &swap1, &base2, &swap2);
    let earlier = |slug: String| -> String {
        let v: Vec<f64> = of(&slug)
            .into_iter()
            .filter(|u| !u.judged())
            .map(|u| u.final_return())
            .collect();
        mean_se(&v)
    };
    let lr = dqn_config().lr;
    let replicates = if base1.len() >= MIN_SEEDS && base2.len() >= MIN_SEEDS {
        let gap = two_standard_errors(&base1, &base2);
        if mean(&base2) - mean(&base1) > gap {
            "yes"
        } else {
            "no"
        }
    } else {
        "too few seeds"
    };
    report.heading(&format!(
        "σ = {s1} against σ = {s2}, and Adam's effective learning rate"
    ));
    report.paragraph(&format!(
        "On the earlier, unjudged units DP-SGD DQN at σ = {s1} ended at a final reward of {} \
         and σ = {s2} at {}: less noise, less reward. Hypothesis, fixed before these runs: with DP noise of standard \
         deviation σC/B per coordinate of the averaged gradient (B = 128), Adam's second moment \
         estimates the noise's variance and its update is SGD at the effective learning rate \
         lr·B/(σC) (\"DP-AdamBC: Your DP-Adam Is Actually DP-SGD (Unless You Apply Bias \
         Correction)\", Tang et al., AAAI 2024): at lr = {lr}, {} at σ = {s1} against {} at σ = \
         {s2}. The test swaps them: σ = {s1} at lr = {lr1} and σ = {s2} at lr = {lr2}. Does the \
         anomaly replicate on the judged seeds (σ = {s1} below σ = {s2} by more than twice the \
         standard error)? {replicates}.",
        earlier(format!("dp-sigma{s1}-c{c}")),
        earlier(format!("dp-sigma{s2}-c{c}")),
        format_number(lr * 128.0 / (s1 * c)),
        format_number(lr * 128.0 / (s2 * c)),
    ));
    report.table(
        &["diagnosis", "criterion", "measured", "verdict"],
        vec![vec![
            Cell::Text("the ordering follows Adam's effective learning rate, not σ".into()),
            Cell::Text(LR_SWAP_CRITERION.into()),
            Cell::Text(measured),
            Cell::Text(
                match verdict {
                    Verdict::Agrees => "Explained",
                    Verdict::Disagrees => "Not explained",
                    Verdict::Inconclusive => "Inconclusive",
                }
                .into(),
            ),
        ]],
    );
}

/// The lr-swap diagnosis' criterion.
const LR_SWAP_CRITERION: &str = "final reward (mean of the last 50 episodes), ≥ 5 judged seeds \
     per setting: Explained if σ₁ at its swapped learning rate ends above σ₁ at the suite's \
     and σ₂ at its swapped rate ends below σ₂ at the suite's, each by more than twice the \
     standard error of the difference; Not explained if either moves the other way by more \
     than twice that standard error; else Inconclusive";

/// [`LR_SWAP_CRITERION`] on the final rewards of σ₁ at the suite's lr (`base1`) and at its
/// swapped one (`swap1`), and the same for σ₂.
fn lr_swap_verdict(
    base1: &[f64],
    swap1: &[f64],
    base2: &[f64],
    swap2: &[f64],
) -> (Verdict, String) {
    let measured = format!(
        "σ₁: {} → {} swapped; σ₂: {} → {} swapped",
        mean_se(base1),
        mean_se(swap1),
        mean_se(base2),
        mean_se(swap2)
    );
    if [base1, swap1, base2, swap2]
        .iter()
        .any(|v| v.len() < MIN_SEEDS)
    {
        return (
            Verdict::Inconclusive,
            format!("{measured}; fewer than {MIN_SEEDS} seeds"),
        );
    }
    let up1 = mean(swap1) - mean(base1);
    let down2 = mean(base2) - mean(swap2);
    let (gap1, gap2) = (
        two_standard_errors(base1, swap1),
        two_standard_errors(base2, swap2),
    );
    let verdict = if up1 > gap1 && down2 > gap2 {
        Verdict::Agrees
    } else if up1 < -gap1 || down2 < -gap2 {
        Verdict::Disagrees
    } else {
        Verdict::Inconclusive
    };
    (verdict, measured)
}

#[cfg(test)]
mod tests {
    use super::super::protocol::unit_dir;
    use super::*;

    use crate::backend::BackendChoice;

    /// The swap gives each of the two smallest σ the other's lr·B/(σC) at the suite's 1e-3.
    #[test]
    fn the_lr_swap_exchanges_effective_learning_rates() {
        let swap = lr_swap(&[3.0, 1.0, 0.3, 0.0]);
        assert_eq!(swap, vec![(0.3, 0.0003), (1.0, 0.003333)]);
        // σ₁ at its swapped rate has σ₂'s effective rate at 1e-3, and back (to the rounding).
        assert!((swap[0].1 / 0.3 - 1e-3 / 1.0).abs() < 1e-9);
        assert!((swap[1].1 / 1.0 - 1e-3 / 0.3).abs() < 1e-6);
        assert!(lr_swap(&[1.0]).is_empty());
        let mut args = DpsgdArgs::quick(0, BackendChoice::default(), 1);
        args.control_groups = vec![Group::LrSwap];
        let slugs: Vec<String> = settings(&args).into_iter().map(|s| s.slug).collect();
        assert_eq!(
            slugs,
            ["dp-sigma0.3-c1-lr0.0003", "dp-sigma1-c1-lr0.003333"]
        );
        // σ = 1 at C = 1 is in both sweeps: the σ sweep keeps it without the C sweep.
        args.control_groups = vec![Group::SigmaSweep];
        let slugs: Vec<String> = settings(&args).into_iter().map(|s| s.slug).collect();
        assert_eq!(slugs, ["dp-sigma0.3-c1", "dp-sigma1-c1", "dp-sigma3-c1"]);
    }

    /// The diagnosis on hand-worked numbers: both moves beyond twice the standard error
    /// explain; one the wrong way beyond it does not; within the noise, or four seeds, is
    /// Inconclusive.
    #[test]
    fn the_lr_swap_criterion_follows_its_written_rule() {
        let at = |m: f64| vec![m - 2.0, m - 1.0, m, m + 1.0, m + 2.0];
        // Standard error of each: √(2.5/5) ≈ 0.707; twice that of a difference ≈ 2.
        assert_eq!(
            lr_swap_verdict(&at(10.0), &at(50.0), &at(90.0), &at(20.0)).0,
            Verdict::Agrees
        );
        assert_eq!(
            lr_swap_verdict(&at(10.0), &at(50.0), &at(90.0), &at(120.0)).0,
            Verdict::Disagrees
        );
        assert_eq!(
            lr_swap_verdict(&at(10.0), &at(11.0), &at(90.0), &at(20.0)).0,
            Verdict::Inconclusive
        );
        let four = vec![10.0; 4];
        assert_eq!(
            lr_swap_verdict(&four, &at(50.0), &at(90.0), &at(20.0)).0,
            Verdict::Inconclusive
        );
    }

    /// A constant policy on CartPole falls within about ten steps; a random one lasts about
    /// twice as long: the baselines a failed DQN is read against.
    #[test]
    fn trivial_policies_have_cartpoles_known_returns() {
        let left = mean(&baseline_returns(Some(0), 200, 0).unwrap());
        let random = mean(&baseline_returns(None, 200, 0).unwrap());
        assert!((8.0..=11.0).contains(&left), "{left}");
        assert!((18.0..=26.0).contains(&random), "{random}");
    }

    #[test]
    fn a_unit_is_solved_at_the_first_step_whose_mean_of_25_reaches_475() {
        assert_eq!(
            solved_at("h\n1,100,500,470,\n2,300,500,480,\n3,500,500,490,\n"),
            Some(300)
        );
        assert_eq!(solved_at("h\n1,100,500,470,\n"), None);
    }

    /// Windows close at the first gradient step at or past each multiple of the window; each
    /// row averages its steps' percentiles and pools their counts; an empty batch is skipped.
    #[test]
    fn the_norm_log_averages_each_window() {
        let step = |p50: f64, batch: usize, clipped: usize| NonPrivateDiagnostics {
            mean_loss: 0.0,
            batch_size: batch,
            norm_percentiles: [p50 / 2.0, p50, p50 * 2.0],
            clipped,
        };
        let mut log = NormLog::default();
        log.add(step(1.0, 100, 10));
        log.window_end(4_999);
        log.add(step(3.0, 300, 0));
        log.add(step(f64::NAN, 0, 0));
        log.window_end(5_002);
        log.add(step(8.0, 50, 50));
        log.window_end(7_000);
        let text = log.finish(7_000);
        assert_eq!(
            text,
            format!(
                "{}5002,2,400,1,2,4,0.025\n7000,1,50,4,8,16,1\n",
                NormLog::HEADER
            )
        );
    }

    /// A tiny protocol: every setting's unit is written once and skipped when present, and
    /// the report lists every setting with its verdict rows.
    #[test]
    fn units_are_written_once_and_the_report_is_regenerated() {
        let root = crate::run::tests::temp_dir("dpsgd-controls");
        let mut args = DpsgdArgs::quick(0, BackendChoice::default(), 2);
        args.controls_dir = root.to_path_buf();
        args.budget = 1_150;
        args.seeds = Some(crate::sweep::Seeds(vec![0]));
        args.clip_sweep = vec![1.0];
        args.sigma_sweep = vec![1.0];
        let outcome = run(&args).unwrap();
        let names = settings(&args);
        // plain, clip only, σ = 1 C = 1 (shared by both sweeps), adaptive, Huber.
        assert_eq!(names.len(), 5);
        for setting in &names {
            let unit = unit_dir(&root, &setting.slug, 0);
            let summary: UnitSummary = crate::run::read_json(&unit.join("summary.json")).unwrap();
            assert!(summary.env_steps >= 1_150 && summary.failed.is_none());
            match setting.group {
                Group::Plain | Group::ClipOnly => assert_eq!(summary.epsilon, None),
                _ => assert!(summary.epsilon.unwrap() > 0.0),
            }
        }
        let adaptive = names.iter().find(|s| s.group == Group::Adaptive).unwrap();
        let summary: UnitSummary =
            crate::run::read_json(&unit_dir(&root, &adaptive.slug, 0).join("summary.json"))
                .unwrap();
        assert_ne!(summary.final_clip, Some(1.0), "adaptive clipping moved C");
        // Every DP-SGD unit logged its norms; plain DQN has no engine and no log.
        for setting in &names {
            let norms = unit_dir(&root, &setting.slug, 0).join(NormLog::FILE);
            if setting.group == Group::Plain {
                assert!(!norms.exists());
                continue;
            }
            let text = std::fs::read_to_string(norms).unwrap();
            assert!(text.starts_with(NormLog::HEADER), "{text}");
            for row in text.lines().skip(1) {
                let cells: Vec<f64> = row.split(',').map(|c| c.parse().unwrap()).collect();
                let [p10, p50, p90, share] = [cells[3], cells[4], cells[5], cells[6]];
                assert!(0.0 < p10 && p10 <= p50 && p50 <= p90, "{row}");
                assert!((0.0..=1.0).contains(&share), "{row}");
            }
        }
        let markdown = std::fs::read_to_string(&outcome.report).unwrap();
        assert!(markdown.contains("| plain DQN"), "{markdown}");
        assert!(
            markdown.contains("Per-transition gradient norms against C"),
            "{markdown}"
        );
        // Off the default budget, the reproduce line is the units' own command (σ = 1 at C = 1
        // ran once, as the C sweep's point, so the σ sweep is not named).
        assert!(
            markdown.contains(&format!(
                "--budget 1150 --seeds 0 --threads 2 --controls-dir {} --control-groups \
                 plain,clip-only,clip-sweep,adaptive,huber --clip-sweep 1 --control-sigma 1",
                root.display()
            )),
            "{markdown}"
        );
        assert!(markdown.contains("Inconclusive"), "one seed: {markdown}");
        // A second run finds every unit and only rewrites the report.
        let before = std::fs::metadata(unit_dir(&root, &names[0].slug, 0).join("curve.csv"))
            .unwrap()
            .modified()
            .unwrap();
        run(&args).unwrap();
        let after = std::fs::metadata(unit_dir(&root, &names[0].slug, 0).join("curve.csv"))
            .unwrap()
            .modified()
            .unwrap();
        assert_eq!(before, after);
        // A directory without plain DQN (as the long budget's) leaves Fig. 6's claim out.
        let long = crate::run::tests::temp_dir("dpsgd-controls-long");
        args.controls_dir = long.to_path_buf();
        args.control_groups = vec![Group::ClipOnly];
        let markdown = std::fs::read_to_string(run(&args).unwrap().report).unwrap();
        assert!(!markdown.contains("| Fig. 6"), "{markdown}");
        assert!(markdown.contains("No plain DQN unit ran"), "{markdown}");
        assert!(markdown.contains("| Figs. 8–9, conclusion"), "{markdown}");
    }
}

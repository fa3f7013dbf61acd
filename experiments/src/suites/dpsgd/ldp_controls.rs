//! `suite dpsgd --ldp-controls`: the local-DP half of the DP-RL slides (paper 004, Figs. 10–14)
//! in resumable units (one setting × seed each) under `<--controls-dir>/ldp/units/`, and a
//! report regenerated from whatever units exist (`<--controls-dir>/ldp/report.md`), judged
//! against the slides' LDP claims by criteria fixed in [`CLAIMS`] before any run.
//!
//! Every setting is plain REINFORCE or plain DQN (the suite's, [`ReinforceConfig::new`] and
//! [`dqn_config`]) on CartPole-v1 behind noisy observations: the agent, its replay buffer and
//! its gradients only ever see the noisy states ([`NoisyObservationEnv`]).
//! - **IQR noise** (`--ldp-noise`, the slides' setting): N(0, (σ·IQR_j)²) on dimension j, the
//!   IQR fitted on a random policy's states. No (ε, δ): observations are unbounded.
//! - **Bounded noise** (`--ldp-bounded-noise`): each dimension clipped to the public range
//!   [`OBSERVATION_BOUNDS`], then Gaussian noise at noise multiplier z of the box's diameter
//!   ([`BoundedObservationNoiseConfig`]): a real (ε, δ) per observation, and per episode by
//!   composition over its at most 501 observations (CartPole-v1's 500-step cap).
//!
//! The budgets are fixed from other seeds, and the default seeds (10..15) are fresh: REINFORCE
//! runs [`REINFORCE_EPISODES`] episodes (plain REINFORCE solved within 1153 on seeds 0–9 of
//! the REINFORCE controls), DQN [`LDP_DQN_BUDGET`] environment steps (plain DQN solved within
//! 108,869 on seeds 0–2 of the DQN controls).

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result};
use burn::backend::Autodiff;
use burn::tensor::backend::Backend;
use privrl_agents::{Agent, Dqn, EpisodeLog, NoisyObservationEnv, Reinforce, ReinforceConfig};
use privrl_envs::CartPoleConfig;
use privrl_privacy::{AccountantKind, BoundedObservationNoiseConfig, ObservationNoiseConfig};
use serde::{Deserialize, Serialize};

use super::controls::CurveColumn;
use super::plan::{dqn_config, DpsgdArgs, Method};
use super::protocol::{
    self, claims_section, finish, run_missing_units, too_few_seeds, trade_off_verdict, unit_path,
    unit_text, write_unit, Claim, UnitSetting, UnitTask, Verdict, FINAL_WINDOW,
};
use super::reinforce_controls::REINFORCE_EPISODES;
use super::runs::warmup_states;
use super::{mean, ENV, SOLVED_RETURN, SOLVED_WINDOW};
use crate::backend::BackendTask;
use crate::report::plot::{median, LearningCurves};
use crate::report::{format_number, Cell, Report};
use crate::summary::SuiteOutcome;
use crate::unit::Unit;

/// Environment steps per LDP DQN unit unless `--dqn-steps` is given: plain DQN first solved
/// CartPole-v1 at 77,632, 65,566 and 108,869 steps on seeds 0, 1, 2 of the DQN controls (with
/// no observation noise), and 110k left seed 2 barely 1% to spare; 150k is that slowest solve
/// with 38% to spare, fixed before any LDP run and never from the judged seeds.
pub const LDP_DQN_BUDGET: u64 = 150_000;

/// The default seeds: fresh, none of those the budgets were fixed from.
const DEFAULT_SEEDS: std::ops::Range<u64> = 10..15;

/// The public half-widths of CartPole-v1's observation (x, ẋ, θ, θ̇) that the bounded noise
/// clips to. x and θ: the environment's termination bounds (2.4 m, 12° = 0.2095 rad), part of
/// its published specification, so no state before the last of an episode lies outside them.
/// ẋ and θ̇: Gymnasium declares them unbounded, so any bound is a choice; these are fixed
/// constants of the protocol (3 m/s and 3.5 rad/s), stated before any run and not read from
/// any trajectory. Clipping makes them hold by construction, whatever the state.
pub const VELOCITY_BOUNDS: [f64; 2] = [3.0, 3.5];

/// [`VELOCITY_BOUNDS`] with CartPole-v1's termination bounds, in observation order.
pub fn observation_bounds() -> Vec<f64> {
    let v1 = CartPoleConfig::v1();
    vec![
        v1.x_threshold,
        VELOCITY_BOUNDS[0],
        v1.theta_threshold_radians,
        VELOCITY_BOUNDS[1],
    ]
}

/// Which agent a setting trains.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum LdpAgent {
    /// The slides' REINFORCE, one episode per gradient step.
    Reinforce,
    /// The suite's DQN.
    Dqn,
}

impl LdpAgent {
    fn name(self) -> &'static str {
        match self {
            LdpAgent::Reinforce => "LDP REINFORCE",
            LdpAgent::Dqn => "LDP DQN",
        }
    }

    fn slug(self) -> &'static str {
        match self {
            LdpAgent::Reinforce => "reinforce",
            LdpAgent::Dqn => "dqn",
        }
    }

    /// The unit of its budget and of its time to solve.
    fn time_unit(self) -> &'static str {
        match self {
            LdpAgent::Reinforce => "episodes",
            LdpAgent::Dqn => "environment steps",
        }
    }
}

/// The observation noise of a setting.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum LdpNoise {
    /// The slides' N(0, (σ·IQR_j)²), no (ε, δ).
    Iqr {
        /// σ in units of each dimension's IQR.
        sigma: f64,
    },
    /// Clipped to [`observation_bounds`], N(0, (z·2√d·b_j)²): (ε, δ)-LDP per observation.
    Bounded {
        /// The noise multiplier z (std over the L2 sensitivity).
        z: f64,
    },
}

/// One setting of the protocol.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LdpSetting {
    /// Unit-directory prefix, unique per setting.
    pub slug: String,
    /// The agent.
    pub agent: LdpAgent,
    /// The observation noise.
    pub noise: LdpNoise,
}

impl LdpSetting {
    fn new(agent: LdpAgent, noise: LdpNoise) -> Self {
        let slug = match noise {
            LdpNoise::Iqr { sigma } => format!("{}-iqr-sigma{sigma}", agent.slug()),
            LdpNoise::Bounded { z } => format!("{}-bounded-z{z}", agent.slug()),
        };
        Self { slug, agent, noise }
    }

    fn noise_label(&self) -> String {
        match self.noise {
            LdpNoise::Iqr { sigma } => format!("σ = {sigma} × IQR"),
            LdpNoise::Bounded { z } => format!("bounded, z = {z}"),
        }
    }

    /// Sort key: agent, IQR before bounded, level.
    fn key(&self) -> (LdpAgent, u8, f64) {
        match self.noise {
            LdpNoise::Iqr { sigma } => (self.agent, 0, sigma),
            LdpNoise::Bounded { z } => (self.agent, 1, z),
        }
    }
}

/// What one unit's `summary.json` holds.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LdpUnit {
    /// The setting.
    pub setting: LdpSetting,
    /// The seed.
    pub seed: u64,
    /// The commit the unit ran at ([`crate::run::source_commit`]; `+dirty` if the tree was).
    pub commit: Option<String>,
    /// The budget: episodes (REINFORCE) or environment steps (DQN; the run stops at the first
    /// episode end at or after it).
    pub budget: u64,
    /// Episodes played.
    pub episodes: usize,
    /// Environment steps taken.
    pub env_steps: u64,
    /// First episode at which the mean of 25 consecutive returns reached 475.
    pub solved_at_episode: Option<usize>,
    /// The environment steps taken by then.
    pub solved_at_env_step: Option<u64>,
    /// N of the primary metric.
    pub final_window: usize,
    /// Primary: mean return of the last N episodes.
    pub final_mean_return: f64,
    /// Secondary: mean training return over all episodes (the slides' "average reward").
    pub mean_return: f64,
    /// Median training return over all episodes (the slides' Fig. 14).
    pub median_return: f64,
    /// The noise standard deviation per observation dimension.
    pub observation_noise_std: Vec<f64>,
    /// The public range each dimension was clipped to (bounded noise only).
    pub observation_bounds: Option<Vec<f64>>,
    /// Bounded noise: ε at δ of one observation (any two observations in the box), by
    /// `accountant`; `None`: no guarantee (IQR noise, ε = ∞).
    pub epsilon_per_observation: Option<f64>,
    /// Bounded noise: ε at δ of one episode's states, its at most `observations_per_episode`
    /// observations composed.
    pub epsilon_per_episode: Option<f64>,
    /// The most observations an episode releases: the reset's and one per step, up to the
    /// environment's step cap.
    pub observations_per_episode: u64,
    /// The accountant of the ε.
    pub accountant: AccountantKind,
    /// δ of the ε.
    pub delta: f64,
    /// Why the run stopped early (e.g. a non-finite loss); counted, never dropped.
    pub failed: Option<String>,
    /// Wall-clock seconds.
    pub wall_s: f64,
}

impl LdpUnit {
    fn solve_time(&self) -> Option<f64> {
        match self.setting.agent {
            LdpAgent::Reinforce => self.solved_at_episode.map(|e| e as f64),
            LdpAgent::Dqn => self.solved_at_env_step.map(|s| s as f64),
        }
    }
}

impl Unit for LdpUnit {
    type Setting = LdpSetting;
    fn path(root: &Path, setting: &LdpSetting, seed: u64) -> PathBuf {
        unit_path(root, &setting.slug, seed)
    }
    fn text(&self) -> Result<String> {
        unit_text(self)
    }
}

impl UnitSetting for LdpSetting {
    type Unit = LdpUnit;
    fn slug(&self) -> &str {
        &self.slug
    }
}

/// Where the protocol's units and report live.
fn protocol_dir(args: &DpsgdArgs) -> PathBuf {
    args.controls_dir.join("ldp")
}

/// The agents `--methods` asks for (default both).
fn agents(args: &DpsgdArgs) -> Result<Vec<LdpAgent>> {
    let methods = args
        .methods
        .clone()
        .unwrap_or_else(|| vec![Method::LdpReinforce, Method::LdpDqn]);
    let mut out = Vec::new();
    for m in methods {
        let agent = match m {
            Method::LdpReinforce => LdpAgent::Reinforce,
            Method::LdpDqn => LdpAgent::Dqn,
            other => anyhow::bail!(
                "--ldp-controls runs ldp-reinforce and ldp-dqn only, not {}",
                other.slug()
            ),
        };
        if !out.contains(&agent) {
            out.push(agent);
        }
    }
    Ok(out)
}

/// The IQR levels σ (default 0, 0.1, 0.3, 1), ascending.
fn iqr_levels(args: &DpsgdArgs) -> Vec<f64> {
    let mut levels = args
        .ldp_noise
        .clone()
        .unwrap_or_else(|| vec![0.0, 0.1, 0.3, 1.0]);
    levels.sort_by(f64::total_cmp);
    levels.dedup();
    levels
}

fn seeds(args: &DpsgdArgs) -> Result<Vec<u64>> {
    let seeds = args
        .seeds
        .as_ref()
        .map_or_else(|| DEFAULT_SEEDS.collect(), |s| s.0.clone());
    anyhow::ensure!(!seeds.is_empty(), "--seeds is empty");
    Ok(seeds)
}

/// The budget of `agent`'s units.
fn budget(args: &DpsgdArgs, agent: LdpAgent) -> u64 {
    match agent {
        LdpAgent::Reinforce => args.episodes.unwrap_or(REINFORCE_EPISODES) as u64,
        LdpAgent::Dqn => args.dqn_steps.unwrap_or(LDP_DQN_BUDGET),
    }
}

/// The IQR settings of `agent` (the slides'), then its bounded ones.
fn settings(args: &DpsgdArgs, agent: LdpAgent) -> (Vec<LdpSetting>, Vec<LdpSetting>) {
    let iqr = iqr_levels(args)
        .into_iter()
        .map(|sigma| LdpSetting::new(agent, LdpNoise::Iqr { sigma }))
        .collect();
    let bounded = args
        .ldp_bounded_noise
        .iter()
        .map(|&z| LdpSetting::new(agent, LdpNoise::Bounded { z }))
        .collect();
    (iqr, bounded)
}

/// Runs every missing unit: per agent, the IQR settings seed-major, then the bounded ones
/// seed-major (the slides' settings first, so a run cut short has them for the most seeds);
/// then writes the report.
pub fn run(args: &DpsgdArgs) -> Result<SuiteOutcome> {
    let levels = iqr_levels(args);
    anyhow::ensure!(
        levels.first() == Some(&0.0) && levels.len() >= 2,
        "--ldp-noise must include 0 and at least one σ > 0, got {levels:?}"
    );
    for &v in &levels {
        anyhow::ensure!(
            v.is_finite() && v >= 0.0,
            "--ldp-noise must be >= 0, got {v}"
        );
    }
    for &z in &args.ldp_bounded_noise {
        anyhow::ensure!(
            z.is_finite() && z > 0.0,
            "--ldp-bounded-noise must be > 0, got {z}"
        );
    }
    let agents = agents(args)?;
    for &agent in &agents {
        anyhow::ensure!(
            budget(args, agent) > 0,
            "the {} budget must be at least 1",
            agent.name()
        );
    }
    let seeds = seeds(args)?;
    // Fix the commit every unit of this invocation records before the first one runs.
    let _ = crate::run::source_commit();
    let dir = protocol_dir(args);
    for agent in agents {
        let (iqr, bounded) = settings(args, agent);
        run_missing_units(&dir, args, &iqr, &seeds)?;
        run_missing_units(&dir, args, &bounded, &seeds)?;
    }
    write_report(args)
}

/// The agent of one unit.
#[allow(clippy::large_enum_variant)]
enum LdpRun<B: burn::tensor::backend::AutodiffBackend> {
    Reinforce(Reinforce<B>),
    Dqn(Dqn<B>),
}

impl<B: burn::tensor::backend::AutodiffBackend> LdpRun<B> {
    fn log(&self) -> &EpisodeLog {
        match self {
            LdpRun::Reinforce(a) => a.episode_log(),
            LdpRun::Dqn(a) => a.episode_log(),
        }
    }

    fn train_episode(&mut self) -> Result<(), privrl_agents::AgentError> {
        match self {
            LdpRun::Reinforce(a) => a.train_epoch().map(|_| ()),
            LdpRun::Dqn(a) => {
                let episodes = a.episode_log().episodes();
                while a.episode_log().episodes() == episodes {
                    a.step()?;
                }
                Ok(())
            }
        }
    }
}

impl BackendTask for UnitTask<'_, LdpSetting> {
    type Output = ();

    fn run<IB: Backend>(self, device: IB::Device) -> Result<()> {
        type B<IB> = Autodiff<IB>;
        let (setting, seed, args) = (&self.setting, self.seed, self.args);
        let budget = budget(args, setting.agent);
        let inner = privrl_envs::make(ENV)?;
        let cap = inner
            .max_episode_steps()
            .context("the environment has no step cap: no bound on an episode's observations")?;
        let observations_per_episode = cap as u64 + 1;
        let (noise, bounded) = match setting.noise {
            LdpNoise::Iqr { sigma } => (
                ObservationNoiseConfig { noise_scale: sigma }.fit(&warmup_states(seed)?)?,
                None,
            ),
            LdpNoise::Bounded { z } => {
                let config = BoundedObservationNoiseConfig {
                    bounds: observation_bounds(),
                    noise_multiplier: z,
                };
                (config.build()?, Some(config))
            }
        };
        let (epsilon_per_observation, epsilon_per_episode) = match &bounded {
            Some(c) => (
                Some(c.epsilon(1, args.delta, args.accountant)?),
                Some(c.epsilon(observations_per_episode, args.delta, args.accountant)?),
            ),
            None => (None, None),
        };
        let observation_noise_std = noise.std().to_vec();
        let observation_bounds = noise.bounds().map(<[f64]>::to_vec);
        // Under `--noise-rng secure` this seed is not used.
        let env = Box::new(NoisyObservationEnv::new(
            inner,
            noise,
            args.noise_rng.mode().source(seed ^ 0xd9_5e0d),
        )?);
        let mut agent: LdpRun<B<IB>> = match setting.agent {
            LdpAgent::Reinforce => {
                LdpRun::Reinforce(Reinforce::new(ReinforceConfig::new(), env, &device, seed)?)
            }
            LdpAgent::Dqn => LdpRun::Dqn(Dqn::new(dqn_config(), env, &device, seed)?),
        };
        let bar = self.progress.bar(budget);
        let mut rows = CurveColumn::header(&CurveColumn::ALL[..4], AccountantKind::Rdp);
        let mut failed = None;
        let start = Instant::now();
        let done = |log: &EpisodeLog| match setting.agent {
            LdpAgent::Reinforce => log.episodes() as u64 >= budget,
            LdpAgent::Dqn => log.env_steps >= budget,
        };
        while !done(agent.log()) {
            if let Err(e) = agent.train_episode() {
                failed = Some(e.to_string());
                break;
            }
            let log = agent.log();
            let recent = log.mean_recent_return(SOLVED_WINDOW).filter(|_| {
                // The solving window is defined on 25 whole episodes only.
                log.episodes() >= SOLVED_WINDOW
            });
            rows.push_str(&format!(
                "{},{},{},{}\n",
                log.episodes(),
                log.env_steps,
                log.returns.last().copied().unwrap_or(f64::NAN),
                recent.unwrap_or(f64::NAN)
            ));
            bar.set_position(match setting.agent {
                LdpAgent::Reinforce => log.episodes() as u64,
                LdpAgent::Dqn => log.env_steps,
            });
        }
        let log = agent.log().clone();
        let solved = log.first_solved(SOLVED_WINDOW, SOLVED_RETURN);
        let summary = LdpUnit {
            setting: setting.clone(),
            seed,
            commit: crate::run::source_commit(),
            budget,
            episodes: log.episodes(),
            env_steps: log.env_steps,
            solved_at_episode: solved.map(|s| s.0),
            solved_at_env_step: solved.map(|s| s.1),
            final_window: FINAL_WINDOW,
            final_mean_return: log.mean_recent_return(FINAL_WINDOW).unwrap_or(f64::NAN),
            mean_return: mean(&log.returns),
            median_return: median(&log.returns),
            observation_noise_std,
            observation_bounds,
            epsilon_per_observation,
            epsilon_per_episode,
            observations_per_episode,
            accountant: args.accountant,
            delta: args.delta,
            failed,
            wall_s: start.elapsed().as_secs_f64(),
        };
        write_unit(self.dir, setting, seed, &rows, &summary)
    }
}

/// The slides' LDP claims (paper 004, Figs. 12–14 and the conclusion) and the criteria that
/// judge them, each applied to LDP REINFORCE and to LDP DQN on the IQR settings, written before
/// any LDP run. A failed run counts as not solved and its returns as they stood. Every point
/// needs at least [`MIN_SEEDS`] seeds, else the verdict is Inconclusive.
pub const CLAIMS: [Claim; 4] = [
    Claim {
        figure: "Figs. 12–13 at σ = 0 (Figs. 5–6)",
        claim: "without observation noise the agent converges on CartPole within the budget",
        criterion: "σ = 0 solves (mean of 25 returns ≥ 475) within the budget (fixed from \
                    other seeds) in ≥ 2/3 of ≥ 5 fresh seeds: Agrees; in none: Disagrees; \
                    else Inconclusive",
    },
    Claim {
        figure: "Figs. 12–13, conclusion",
        claim: "LDP agents \"are able to converge with reasonable noise levels\"",
        criterion: "the smallest σ > 0 of --ldp-noise solves within the budget in ≥ 2/3 of \
                    ≥ 5 seeds: Agrees; in none: Disagrees; else Inconclusive",
    },
    Claim {
        figure: "Figs. 12 and 14, conclusion",
        claim: "privacy vs reward trade-off: more noise, less reward",
        criterion: "primary: final reward (mean of the last 50 episodes), mean over ≥ 5 seeds \
                    per σ: Agrees if the largest σ's is below σ = 0's by more than twice the \
                    standard error of the difference and no step up in σ raises it by more \
                    than twice its standard error; Disagrees if the largest σ's ≥ σ = 0's; \
                    else Inconclusive. The same rule on the secondary metric (mean training \
                    return); if the two verdicts differ: Inconclusive, with both",
    },
    Claim {
        figure: "Fig. 13, conclusion",
        claim: "privacy vs sample-efficiency trade-off: more noise, slower convergence",
        criterion: "median time to solve over ≥ 5 seeds (episodes for REINFORCE, environment \
                    steps for DQN; a seed that never solves counts as ∞) at the largest σ \
                    above σ = 0's: Agrees; below: Disagrees; equal (e.g. neither solves): \
                    Inconclusive",
    },
];

/// Claims 1–2 on the LDP units: solved in ≥ 2/3 of ≥ [`MIN_SEEDS`] seeds.
fn converges_verdict(units: &[&LdpUnit]) -> (Verdict, String) {
    protocol::converges_verdict(
        units
            .iter()
            .map(|u| (u.solved_at_episode.is_some(), u.failed.is_some())),
    )
}

/// Claim 4: `points` are (σ, each seed's time to solve or `None`), σ ascending from 0.
pub(super) fn slower_verdict(points: &[(f64, Vec<Option<f64>>)]) -> (Verdict, String) {
    let med = |v: &[Option<f64>]| {
        median(
            &v.iter()
                .map(|t| t.unwrap_or(f64::INFINITY))
                .collect::<Vec<_>>(),
        )
    };
    let measured = points
        .iter()
        .map(|(s, v)| {
            let m = med(v);
            format!(
                "σ = {s}: {} ({}/{} solved)",
                if m.is_finite() {
                    format_number(m)
                } else {
                    "∞".into()
                },
                v.iter().filter(|t| t.is_some()).count(),
                v.len()
            )
        })
        .collect::<Vec<_>>()
        .join("; ");
    if let Some(inconclusive) = too_few_seeds(points, &measured) {
        return inconclusive;
    }
    let (first, last) = (med(&points[0].1), med(&points[points.len() - 1].1));
    let verdict = if last > first {
        Verdict::Agrees
    } else if last < first {
        Verdict::Disagrees
    } else {
        Verdict::Inconclusive
    };
    (verdict, measured)
}

/// The four claims judged on `agent`'s IQR units at `levels` (ascending, 0 first).
fn judge(units: &[&LdpUnit], agent: LdpAgent, levels: &[f64]) -> [(Verdict, String); 4] {
    let at = |sigma: f64| -> Vec<&LdpUnit> {
        units
            .iter()
            .copied()
            .filter(|u| u.setting.agent == agent && u.setting.noise == LdpNoise::Iqr { sigma })
            .collect()
    };
    let smallest = levels.iter().copied().find(|&s| s > 0.0);
    let second = match smallest {
        Some(s) => {
            let (v, m) = converges_verdict(&at(s));
            (v, format!("σ = {s}: {m}"))
        }
        None => (Verdict::Inconclusive, "no σ > 0".into()),
    };
    let metric = |f: fn(&LdpUnit) -> f64| -> Vec<(f64, Vec<f64>)> {
        levels
            .iter()
            .map(|&s| (s, at(s).iter().map(|&u| f(u)).collect()))
            .collect()
    };
    let times: Vec<(f64, Vec<Option<f64>>)> = levels
        .iter()
        .map(|&s| (s, at(s).iter().map(|u| u.solve_time()).collect()))
        .collect();
    [
        converges_verdict(&at(0.0)),
        second,
        trade_off_verdict(&metric(|u| u.final_mean_return), &metric(|u| u.mean_return)),
        slower_verdict(&times),
    ]
}

/// Writes `report.md` and the figures from every unit present.
pub fn write_report(args: &DpsgdArgs) -> Result<SuiteOutcome> {
    let dir = protocol_dir(args);
    let all: Vec<(PathBuf, LdpUnit)> = crate::summary::read_summaries(&dir.join("units"))?;
    // Only units at the budget asked for now.
    let units: Vec<&LdpUnit> = all
        .iter()
        .map(|(_, u)| u)
        .filter(|u| u.budget == budget(args, u.setting.agent))
        .collect();
    let levels = iqr_levels(args);
    let mut report = Report::new(&dir, "Local DP on observations: the slides' Figs. 12–14");
    report.paragraph(&protocol_paragraph(args));
    report.paragraph(&privacy_paragraph(args));
    settings_table(&mut report, args, &units);
    let intro = "The slides' LDP figures are images without numbers; their claims are judged by \
                 the criteria below, fixed in the code (and committed) before any LDP run, on \
                 the IQR settings. The bounded rows have no counterpart in the slides: they are \
                 reported above, not judged.";
    let mut claims = Vec::new();
    let mut verdicts = Vec::new();
    for agent in [LdpAgent::Reinforce, LdpAgent::Dqn] {
        let v = judge(&units, agent, &levels);
        claims_section(
            &mut report,
            &format!("Against the slides: {}", agent.name()),
            intro,
            &CLAIMS,
            &v,
        );
        claims.extend(CLAIMS);
        verdicts.extend(v);
    }
    figures(&mut report, &dir, args, &units, &levels)?;
    report.reproduce(reproduce_commands(args, &units)?);
    finish(report, &claims, &verdicts)
}

/// The protocol: agents, noise, budgets, metrics, seeds.
fn protocol_paragraph(args: &DpsgdArgs) -> String {
    format!(
        "{ENV}; the slides' REINFORCE (2-layer MLP, h = 128, dropout 0.5, Adam 0.01, one \
         episode per gradient step), {} episodes per run, and the suite's DQN (3-layer MLP, \
         h = 128, |B| = 128, Adam 1e-3, a gradient step every 2nd environment step, buffer \
         10k), {} environment steps per run (stopping at the first episode end after it); \
         neither budget was read from the seeds judged here (REINFORCE: plain REINFORCE solved \
         within 1153 episodes on seeds 0–9 of the REINFORCE controls; DQN: plain DQN solved \
         within 108,869 steps on seeds 0–2 of the DQN controls). The agent sees only noisy \
         states (rewards and termination are not perturbed). IQR noise: N(0, (σ·IQR_j)²) on \
         dimension j, the IQR of a 5000-step random-policy rollout. Primary metric: final \
         reward, the mean return of the last {FINAL_WINDOW} episodes; time to solve: the first \
         episode (REINFORCE) or environment step (DQN) at which the mean of {SOLVED_WINDOW} \
         consecutive returns reaches {SOLVED_RETURN}; secondary: the mean training return over \
         all episodes (the slides' \"average reward\", which short early episodes dominate). \
         Units: `units/<agent>-<noise>-seed<k>/` (each `summary.json` records the commit it \
         ran at); this report is regenerated from whichever exist.",
        budget(args, LdpAgent::Reinforce),
        budget(args, LdpAgent::Dqn),
    )
}

/// What the noise protects, and what it does not.
fn privacy_paragraph(args: &DpsgdArgs) -> String {
    let b = observation_bounds();
    format!(
        "**The slides' IQR noise has no (ε, δ).** CartPole's observations are unbounded \
         (Gymnasium declares the velocities' range infinite), so two observations can be \
         arbitrarily far apart relative to any fixed noise, and the privacy loss of Gaussian \
         noise on an unbounded value is unbounded: ε = ∞ at every δ < 1. **The bounded rows \
         have one.** Each dimension is clipped to a public range [−b_j, b_j] with b = (x: {}, \
         ẋ: {}, θ: {}, θ̇: {}): x and θ at CartPole-v1's termination bounds (2.4 m and \
         12°, published constants of the environment), ẋ and θ̇ at bounds fixed by this \
         protocol before any run (Gymnasium gives none; clipping makes them hold). In the \
         normalised coordinates o_j/b_j any two observations differ by at most Δ = 2√4 = 4 in \
         L2, and the noise is N(0, (z·Δ)²) there (std z·4·b_j in the original units), so one \
         observation is the Gaussian mechanism at noise multiplier z: (ε, δ)-LDP with the ε of \
         one q = 1 Gaussian release, for any two observations (the local model's adjacency; \
         the unit of privacy is one observation). An episode releases at most 501 observations \
         (the reset's and one per step, CartPole-v1's 500-step cap being what makes the count \
         finite); their ε per episode is the composition of 501 such releases (adaptive: later \
         states depend on earlier noisy ones through the policy), for any two state sequences \
         of the same length. Not covered: the reward and termination signal, released \
         unperturbed, which in CartPole reveals each episode's length. ε by the {} at δ = {}.",
        b[0],
        b[1],
        format_number(b[2]),
        b[3],
        args.accountant.name(),
        args.delta
    )
}

/// Mean and standard deviation over seeds.
fn mean_sd(values: &[f64]) -> String {
    if values.is_empty() {
        return "–".into();
    }
    let sd = protocol::standard_error(values) * (values.len() as f64).sqrt();
    format!("{} ± {}", format_number(mean(values)), format_number(sd))
}

/// The settings of every unit present and every setting asked for now, sorted.
fn present_settings(args: &DpsgdArgs, units: &[&LdpUnit]) -> Vec<LdpSetting> {
    let mut out: Vec<LdpSetting> = Vec::new();
    let asked = [LdpAgent::Reinforce, LdpAgent::Dqn]
        .into_iter()
        .flat_map(|a| {
            let (iqr, bounded) = settings(args, a);
            iqr.into_iter().chain(bounded)
        });
    for s in units.iter().map(|u| u.setting.clone()).chain(asked) {
        if !out.iter().any(|o| o.slug == s.slug) {
            out.push(s);
        }
    }
    out.sort_by(|a, b| {
        let (ka, kb) = (a.key(), b.key());
        (ka.0, ka.1).cmp(&(kb.0, kb.1)).then(ka.2.total_cmp(&kb.2))
    });
    out
}

/// The table of every setting.
fn settings_table(report: &mut Report, args: &DpsgdArgs, units: &[&LdpUnit]) {
    let mut rows = Vec::new();
    for setting in present_settings(args, units) {
        let us: Vec<&LdpUnit> = units
            .iter()
            .copied()
            .filter(|u| u.setting.slug == setting.slug)
            .collect();
        let times: Vec<f64> = us
            .iter()
            .map(|u| u.solve_time().unwrap_or(f64::INFINITY))
            .collect();
        let med = median(&times);
        let column = |f: fn(&LdpUnit) -> f64| us.iter().map(|&u| f(u)).collect::<Vec<f64>>();
        let std = us
            .first()
            .map(|u| {
                u.observation_noise_std
                    .iter()
                    .map(|&s| format_number(s))
                    .collect::<Vec<_>>()
                    .join(", ")
            })
            .unwrap_or_default();
        let eps = |f: fn(&LdpUnit) -> Option<f64>| match us.first().and_then(|&u| f(u)) {
            Some(e) => format_number(e),
            None if us.is_empty() => "–".into(),
            None => "∞".into(),
        };
        rows.push(vec![
            Cell::Text(setting.agent.name().into()),
            Cell::Text(setting.noise_label()),
            Cell::Text(std),
            Cell::Number(us.len() as f64),
            Cell::Number(us.iter().filter(|u| u.failed.is_some()).count() as f64),
            Cell::Text(format!(
                "{}/{}",
                us.iter().filter(|u| u.solve_time().is_some()).count(),
                us.len()
            )),
            Cell::Text(if us.is_empty() {
                "–".into()
            } else if med.is_finite() {
                format!("{} {}", format_number(med), setting.agent.time_unit())
            } else {
                "∞".into()
            }),
            Cell::Text(mean_sd(&column(|u| u.final_mean_return))),
            Cell::Text(mean_sd(&column(|u| u.mean_return))),
            Cell::Text(mean_sd(&column(|u| u.median_return))),
            Cell::Text(eps(|u| u.epsilon_per_observation)),
            Cell::Text(eps(|u| u.epsilon_per_episode)),
            Cell::Text(if us.is_empty() {
                "–".into()
            } else {
                format_number(mean(&column(|u| u.wall_s)))
            }),
        ]);
    }
    report.heading("Every setting");
    report.paragraph(&format!(
        "Mean ± standard deviation over seeds; the median time to solve counts a seed that \
         never solved as ∞. ε per observation and per episode (≤ 501 observations) at δ = {}, \
         by the accountant each unit names ({}); ∞: no guarantee.",
        args.delta,
        args.accountant.name()
    ));
    report.table(
        &[
            "agent",
            "observation noise",
            "noise std (x, ẋ, θ, θ̇)",
            "seeds",
            "failed",
            "solved",
            "median time to solve",
            &format!("final reward (last {FINAL_WINDOW})"),
            "mean training return",
            "median training return",
            "ε per observation",
            "ε per episode",
            "wall s",
        ],
        rows,
    );
}

/// Figs. 12–14: reward, time to solve and median reward against σ (IQR), the median over
/// seeds with a 10th–90th percentile band.
fn figures(
    report: &mut Report,
    dir: &Path,
    args: &DpsgdArgs,
    units: &[&LdpUnit],
    levels: &[f64],
) -> Result<()> {
    // One curve per seed: (σ, value) over the IQR levels that seed has.
    let curves = |agent: LdpAgent, f: &dyn Fn(&LdpUnit) -> f64| -> Vec<Vec<(f64, f64)>> {
        seeds_of(units, agent)
            .into_iter()
            .map(|seed| {
                levels
                    .iter()
                    .filter_map(|&sigma| {
                        units
                            .iter()
                            .find(|u| {
                                u.seed == seed
                                    && u.setting.agent == agent
                                    && u.setting.noise == LdpNoise::Iqr { sigma }
                            })
                            .map(|&u| (sigma, f(u)))
                    })
                    .collect::<Vec<_>>()
            })
            .filter(|c| !c.is_empty())
            .collect()
    };
    let x_label = "observation noise σ (× IQR)";
    let grid = 41;
    let mut reward = LearningCurves::new(format!("LDP on {ENV}: reward against noise (Fig. 12)"))
        .x_label(x_label)
        .y_label("return (median over seeds, 10th–90th percentile band)")
        .grid_points(grid);
    let mut median_reward = LearningCurves::new(format!(
        "LDP on {ENV}: median reward against noise (Fig. 14)"
    ))
    .x_label(x_label)
    .y_label("median training return of a run (median over seeds)")
    .grid_points(grid);
    let mut any = false;
    for agent in [LdpAgent::Reinforce, LdpAgent::Dqn] {
        let last = curves(agent, &|u| u.final_mean_return);
        if last.is_empty() {
            continue;
        }
        any = true;
        reward = reward
            .series(
                format!("{}, final reward (last {FINAL_WINDOW})", agent.name()),
                last,
            )
            .series(
                format!("{}, mean training return", agent.name()),
                curves(agent, &|u| u.mean_return),
            );
        median_reward = median_reward.series(agent.name(), curves(agent, &|u| u.median_return));
        let cap = budget(args, agent) as f64;
        let files = LearningCurves::new(format!(
            "{}: time to solve against noise (Fig. 13)",
            agent.name()
        ))
        .x_label(x_label)
        .y_label(format!(
            "{} to solve (unsolved at the budget, {})",
            agent.time_unit(),
            format_number(cap)
        ))
        .grid_points(grid)
        .series(
            agent.name(),
            curves(agent, &|u| u.solve_time().unwrap_or(cap)),
        )
        .save(&dir.join(format!("convergence-{}", agent.slug())))?;
        report.plot(
            &format!(
                "{}: {} to solve against σ, median over seeds with a 10th–90th percentile \
                 band; a seed that never solved is drawn at the budget (it is ∞ in the table).",
                agent.name(),
                agent.time_unit()
            ),
            &files,
        );
    }
    if any {
        let files = reward.save(&dir.join("reward"))?;
        report.plot(
            &format!(
                "Final reward (mean of the last {FINAL_WINDOW} episodes) and mean training \
                 return against σ, median over seeds with a 10th–90th percentile band."
            ),
            &files,
        );
        let files = median_reward.save(&dir.join("median-reward"))?;
        report.plot(
            "Each run's median training return against σ, median over seeds with a \
             10th–90th percentile band (the slides' Fig. 14).",
            &files,
        );
    }
    Ok(())
}

/// The seeds that `agent`'s units have, in increasing order.
fn seeds_of(units: &[&LdpUnit], agent: LdpAgent) -> Vec<u64> {
    let mut seeds: Vec<u64> = units
        .iter()
        .filter(|u| u.setting.agent == agent)
        .map(|u| u.seed)
        .collect();
    seeds.sort_unstable();
    seeds.dedup();
    seeds
}

/// The commands that reproduce the report: REINFORCE, then DQN, each with the seeds its units
/// present have (those asked for now where it has none).
fn reproduce_commands(args: &DpsgdArgs, units: &[&LdpUnit]) -> Result<Vec<String>> {
    let join = |v: &[f64]| v.iter().map(f64::to_string).collect::<Vec<_>>().join(",");
    let asked = seeds(args)?;
    let seeds_of = |agent: LdpAgent| {
        let mut seeds = seeds_of(units, agent);
        if seeds.is_empty() {
            seeds = asked.clone();
        }
        seeds
            .iter()
            .map(u64::to_string)
            .collect::<Vec<_>>()
            .join(",")
    };
    let common = format!(
        "--ldp-noise {} --ldp-bounded-noise {} --accountant {} --threads 1",
        join(&iqr_levels(args)),
        join(&args.ldp_bounded_noise),
        args.accountant
    );
    Ok(vec![
        format!(
            "cargo xtask suite dpsgd --ldp-controls --methods ldp-reinforce --episodes {} \
             --seeds {} {common}",
            budget(args, LdpAgent::Reinforce),
            seeds_of(LdpAgent::Reinforce)
        ),
        format!(
            "cargo xtask suite dpsgd --ldp-controls --methods ldp-dqn --dqn-steps {} --seeds {} \
             {common}",
            budget(args, LdpAgent::Dqn),
            seeds_of(LdpAgent::Dqn)
        ),
    ])
}

#[cfg(test)]
mod tests {
    use super::super::protocol::unit_dir;
    use super::*;

    use crate::backend::BackendChoice;

    /// A hand-made REINFORCE unit at IQR σ: solved at `solved` (or never), with its final
    /// reward and mean training return.
    fn unit(sigma: f64, seed: u64, solved: Option<usize>, last: f64, mean: f64) -> LdpUnit {
        LdpUnit {
            setting: LdpSetting::new(LdpAgent::Reinforce, LdpNoise::Iqr { sigma }),
            seed,
            commit: None,
            budget: 2000,
            episodes: 2000,
            env_steps: 1,
            solved_at_episode: solved,
            solved_at_env_step: solved.map(|e| e as u64 * 100),
            final_window: FINAL_WINDOW,
            final_mean_return: last,
            mean_return: mean,
            median_return: mean,
            observation_noise_std: vec![],
            observation_bounds: None,
            epsilon_per_observation: None,
            epsilon_per_episode: None,
            observations_per_episode: 501,
            accountant: AccountantKind::Rdp,
            delta: 1e-5,
            failed: None,
            wall_s: 0.0,
        }
    }

    /// The four claims on hand-made units: one setting where every claim agrees, one where the
    /// noisy agent never solves and earns more (Disagrees), one where the metrics flip.
    #[test]
    fn claims_are_judged_on_hand_worked_units() {
        let levels = [0.0, 0.1, 1.0];
        let mut units = Vec::new();
        for seed in 0..5 {
            let s = seed as f64;
            units.push(unit(
                0.0,
                seed,
                Some(300 + seed as usize),
                480.0 + s,
                300.0 + s,
            ));
            units.push(unit(
                0.1,
                seed,
                Some(600 + seed as usize),
                400.0 + s,
                200.0 + s,
            ));
            units.push(unit(1.0, seed, None, 30.0 + s, 25.0 + s));
        }
        let refs: Vec<&LdpUnit> = units.iter().collect();
        let verdicts = judge(&refs, LdpAgent::Reinforce, &levels);
        let names: Vec<Verdict> = verdicts.iter().map(|v| v.0).collect();
        assert_eq!(names, [Verdict::Agrees; 4], "{verdicts:?}");
        assert!(
            verdicts[3].1.contains("σ = 1: ∞ (0/5 solved)"),
            "{}",
            verdicts[3].1
        );
        // DQN has no units: every claim Inconclusive.
        let dqn = judge(&refs, LdpAgent::Dqn, &levels);
        assert!(dqn.iter().all(|v| v.0 == Verdict::Inconclusive));

        // σ = 0.1 never solves and the noisiest runs end with more reward, and solve sooner.
        let mut units = Vec::new();
        for seed in 0..5 {
            let s = seed as f64;
            units.push(unit(0.0, seed, Some(900), 300.0 + s, 200.0 + s));
            units.push(unit(0.1, seed, None, 100.0 + s, 100.0 + s));
            units.push(unit(1.0, seed, Some(400), 490.0 + s, 300.0 + s));
        }
        let refs: Vec<&LdpUnit> = units.iter().collect();
        let names: Vec<Verdict> = judge(&refs, LdpAgent::Reinforce, &levels)
            .iter()
            .map(|v| v.0)
            .collect();
        assert_eq!(
            names,
            [
                Verdict::Agrees,
                Verdict::Disagrees,
                Verdict::Disagrees,
                Verdict::Disagrees
            ]
        );

        // The final reward falls but the mean training return rises: Inconclusive.
        let mut units = Vec::new();
        for seed in 0..5 {
            let s = seed as f64;
            units.push(unit(0.0, seed, Some(300), 480.0 + s, 100.0 + s));
            units.push(unit(0.1, seed, Some(300), 300.0 + s, 150.0 + s));
            units.push(unit(1.0, seed, Some(300), 100.0 + s, 200.0 + s));
        }
        let refs: Vec<&LdpUnit> = units.iter().collect();
        let verdicts = judge(&refs, LdpAgent::Reinforce, &levels);
        assert_eq!(verdicts[2].0, Verdict::Inconclusive, "{verdicts:?}");
        // Equal median times to solve: Inconclusive.
        assert_eq!(verdicts[3].0, Verdict::Inconclusive, "{verdicts:?}");
        // Solved in 1 of 5 seeds at σ = 0: neither 2/3 nor none.
        let mut some = units.clone();
        for u in some.iter_mut().filter(|u| u.seed > 0) {
            u.solved_at_episode = None;
        }
        let refs: Vec<&LdpUnit> = some.iter().collect();
        assert_eq!(
            judge(&refs, LdpAgent::Reinforce, &levels)[0].0,
            Verdict::Inconclusive
        );
    }

    #[test]
    fn the_bounds_are_cartpoles_termination_bounds_and_the_stated_velocities() {
        let b = observation_bounds();
        assert_eq!(b[0], 2.4);
        assert!((b[2] - 12f64.to_radians()).abs() < 1e-12);
        assert_eq!([b[1], b[3]], VELOCITY_BOUNDS);
    }

    /// A tiny protocol: each unit lands at `units/<agent>-<noise>-seed<k>/summary.json` with
    /// its curve, records its commit and ε, is skipped when present, and the report is
    /// regenerated from the units on disk.
    #[test]
    fn units_are_written_once_where_the_report_reads_them() {
        let root = crate::run::tests::temp_dir("dpsgd-ldp-controls");
        let mut args = DpsgdArgs::quick(0, BackendChoice::default(), 2);
        args.ldp_controls = true;
        args.controls_dir = root.to_path_buf();
        args.episodes = Some(30);
        args.dqn_steps = Some(1_100);
        args.seeds = Some(crate::sweep::Seeds(vec![3]));
        args.ldp_noise = Some(vec![0.5, 0.0]);
        args.ldp_bounded_noise = vec![1.0];
        let outcome = run(&args).unwrap();
        let dir = root.join("ldp");
        let slugs = [
            "reinforce-iqr-sigma0",
            "reinforce-iqr-sigma0.5",
            "reinforce-bounded-z1",
            "dqn-iqr-sigma0",
            "dqn-iqr-sigma0.5",
            "dqn-bounded-z1",
        ];
        for slug in slugs {
            let unit = unit_dir(&dir, slug, 3);
            let summary: LdpUnit = crate::run::read_json(&unit.join("summary.json")).unwrap();
            assert_eq!(summary.setting.slug, slug);
            assert_eq!(summary.commit, crate::run::source_commit());
            assert!(summary.failed.is_none());
            assert_eq!(summary.observations_per_episode, 501);
            match summary.setting.agent {
                LdpAgent::Reinforce => assert_eq!(summary.episodes, 30),
                LdpAgent::Dqn => assert!(summary.env_steps >= 1_100),
            }
            let curve = std::fs::read_to_string(unit.join("curve.csv")).unwrap();
            assert_eq!(curve.lines().count(), summary.episodes + 1);
            match summary.setting.noise {
                LdpNoise::Iqr { sigma } => {
                    assert_eq!(summary.epsilon_per_observation, None);
                    assert_eq!(summary.observation_bounds, None);
                    assert_eq!(
                        summary.observation_noise_std.iter().all(|&s| s > 0.0),
                        sigma > 0.0
                    );
                }
                LdpNoise::Bounded { z } => {
                    let config = BoundedObservationNoiseConfig {
                        bounds: observation_bounds(),
                        noise_multiplier: z,
                    };
                    let rdp = AccountantKind::Rdp;
                    assert_eq!(
                        summary.epsilon_per_observation,
                        Some(config.epsilon(1, 1e-5, rdp).unwrap())
                    );
                    assert_eq!(
                        summary.epsilon_per_episode,
                        Some(config.epsilon(501, 1e-5, rdp).unwrap())
                    );
                    assert_eq!(summary.observation_bounds, Some(observation_bounds()));
                    assert_eq!(summary.observation_noise_std[0], 4.0 * 2.4);
                }
            }
        }
        let markdown = std::fs::read_to_string(&outcome.report).unwrap();
        assert!(markdown.contains("has no (ε, δ)"), "{markdown}");
        assert!(markdown.contains("fewer than 5 seeds"), "{markdown}");
        assert!(
            markdown.contains("| LDP DQN | bounded, z = 1 |"),
            "{markdown}"
        );
        for stem in [
            "reward",
            "median-reward",
            "convergence-reinforce",
            "convergence-dqn",
        ] {
            assert!(dir.join(format!("{stem}.png")).is_file(), "{stem}");
        }
        // A second run finds every unit and only rewrites the report; a unit removed is rerun.
        let file = unit_dir(&dir, slugs[0], 3).join("curve.csv");
        let before = std::fs::metadata(&file).unwrap().modified().unwrap();
        let removed = unit_dir(&dir, slugs[4], 3).join("summary.json");
        std::fs::remove_file(&removed).unwrap();
        args.methods = Some(vec![Method::LdpDqn]);
        run(&args).unwrap();
        assert_eq!(
            std::fs::metadata(&file).unwrap().modified().unwrap(),
            before
        );
        assert!(removed.is_file());
        // The report still has the REINFORCE rows, though only DQN was asked for.
        let markdown = std::fs::read_to_string(dir.join("report.md")).unwrap();
        assert!(
            markdown.contains("| LDP REINFORCE | σ = 0.5 × IQR |"),
            "{markdown}"
        );
        args.methods = Some(vec![Method::DpSgdDqn]);
        assert!(run(&args).is_err());
    }
}

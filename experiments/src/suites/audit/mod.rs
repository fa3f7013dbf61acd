//! `cargo xtask audit`: an empirical ε lower bound beside every accountant's upper bound
//! (issue 44). Each audited mechanism runs on adjacent inputs, a membership test scores the
//! outcome, and `privrl_privacy`'s audit turns the scores into a lower bound on ε at a stated
//! confidence: the counting audit (Clopper–Pearson), the one-run audit (Steinke, Nasr &
//! Jagielski 2023) where a run holds many canaries, and the Gaussian trade-off reading where
//! the mechanism is Gaussian. A lower bound above the accountant's ε is a bug in the mechanism
//! or the accountant; the criteria below are fixed in this file before the committed runs.
//!
//! | module | audit |
//! |---|---|
//! | `local` | PGC's Laplace and projected random sign, per release |
//! | `dpsgd` | white-box DP-SGD through the `PrivacyEngine` with Dirac gradient canaries, seeded or secure (grid) noise |
//! | `dqn` | the transition unit of DP-SGD DQN (q = 1 and q < 1), one canary transition per run, and one observation as a group of two transitions, from the agent's releases |
//! | `reinforce` | the episode unit of DP-SGD REINFORCE, one canary episode per run, from the agent's release |
//! | `ppo` | the episode unit of DP-PPO, one canary episode per run, from every release of its rollout |
//! | `dirichlet` | the kickstarting teacher's Dirichlet mechanism, per release |
//! | `report` | `report.md` from the units on disk, with each criterion's verdict |

mod dirichlet;
mod dpsgd;
mod dqn;
mod local;
mod ppo;
mod reinforce;
mod report;
mod setting;
mod units;

use std::path::PathBuf;
use std::time::Instant;

use anyhow::Result;
use clap::Args;
use privrl_privacy::{
    counting_audit, gaussian_dp_audit, gdp_epsilon, one_run_epsilon_lower_bound, CanaryScores,
    ThresholdChoice,
};

use self::dpsgd::DpSgdAudit;
use self::dqn::{DqnCanary, DqnTransitionAudit};
use self::ppo::PpoEpisodeAudit;
use self::reinforce::ReinforceEpisodeAudit;
use self::units::{AuditUnit, DirichletRow, GdpRow, OneRunRow};
use crate::backend::{dispatch, BackendChoice};
use crate::summary::{Headline, SuiteOutcome};
use crate::unit::UnitStore;

pub use self::setting::{plan, Setting};

const SUITE: &str = "audit";

/// Arguments of `cargo xtask audit`.
#[derive(Args, Debug, Clone)]
pub struct AuditArgs {
    /// CI-sized audits (seconds on 2 cores): 2·10⁴ releases per input for the local
    /// mechanisms instead of 2·10⁶, 5 DP-SGD runs of 200 canaries instead of 100 runs of
    /// 1000, and 2000 runs of each RL unit audit (DQN, REINFORCE, DP-PPO) instead of
    /// 20,000. Written to runs/audit/ unless --out is given.
    #[arg(long)]
    pub quick: bool,
    /// Directory of the units (`units/<setting>/seed<k>.json`) and of report.md. Default
    /// results/audit, or runs/audit with --quick.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Seed of every draw (mechanism noise, canary inclusion, Poisson sampling, the split that
    /// chooses thresholds).
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Confidence 1 − β of every lower bound, in (0, 1).
    #[arg(long, default_value_t = 0.95)]
    pub confidence: f64,
    /// δ of the DP-SGD bounds (the accountants' ε and the audits' lower bounds); the local
    /// mechanisms are ε-LDP and are audited at δ = 0.
    #[arg(long, default_value_t = 1e-5)]
    pub delta: f64,
    /// Only regenerate report.md from the units on disk; run nothing.
    #[arg(long)]
    pub report_only: bool,
    /// Backend of the DP-SGD audits' engine.
    #[arg(long, value_enum, default_value_t = BackendChoice::default())]
    pub backend: BackendChoice,
}

/// Share of each side's scores that chooses the threshold of a split (the rest is counted).
const SELECTION_FRACTION: f64 = 0.25;

/// Runs every planned audit that is not on disk, then writes `<out>/report.md`.
pub fn run(args: AuditArgs) -> Result<SuiteOutcome> {
    anyhow::ensure!(
        args.confidence > 0.0 && args.confidence < 1.0,
        "--confidence must be in (0, 1), got {}",
        args.confidence
    );
    anyhow::ensure!(
        args.delta > 0.0 && args.delta < 1.0,
        "--delta must be in (0, 1), got {}",
        args.delta
    );
    let out = match &args.out {
        Some(out) => out.clone(),
        None if args.quick => crate::run::suite_dir(SUITE)?,
        None => PathBuf::from("results").join(SUITE),
    };
    let store = UnitStore::<AuditUnit>::new(out.join("units"));
    let planned = plan(args.quick);
    if !args.report_only {
        for setting in &planned {
            if store.exists(setting, args.seed) {
                continue;
            }
            tracing::info!("auditing {}", setting.name());
            let unit = audit(setting, &args)?;
            store.write(setting, args.seed, &unit)?;
        }
    }
    let mut units = Vec::new();
    for setting in &planned {
        if let Some(unit) = store.read(setting, args.seed)? {
            units.push(unit);
        }
    }
    report::write(&out, &args, planned.len(), &units)
}

/// One audit, timed, with the commit it ran at.
pub fn audit(setting: &Setting, args: &AuditArgs) -> Result<AuditUnit> {
    let start = Instant::now();
    let (seed, confidence, delta) = (args.seed, args.confidence, args.delta);
    let local = |counting, releases| AuditUnit {
        setting: setting.clone(),
        seed,
        stated_epsilon: None,
        rdp_epsilon: None,
        pld_epsilon: None,
        delta: 0.0,
        confidence,
        counting,
        one_run: None,
        gdp: None,
        trials: releases,
        runs: 1,
        wall_s: 0.0,
        commit: crate::run::source_commit(),
        dirichlet: None,
    };
    let mut unit = match *setting {
        Setting::Laplace { epsilon, releases } => AuditUnit {
            stated_epsilon: Some(epsilon),
            ..local(
                local::laplace(epsilon, releases, seed, confidence)?,
                releases,
            )
        },
        Setting::Prs {
            epsilon,
            releases,
            hidden_projection,
        } => AuditUnit {
            stated_epsilon: Some(epsilon),
            ..local(
                local::prs(epsilon, releases, hidden_projection, seed, confidence)?,
                releases,
            )
        },
        Setting::Dirichlet {
            actions,
            concentration,
            eta,
            lipschitz_adjacency,
            delta,
            releases,
        } => {
            let release = dirichlet::DirichletRelease {
                actions,
                concentration,
                eta,
                lipschitz_adjacency,
                delta,
            };
            let audit = dirichlet::dirichlet(&release, releases, seed, confidence)?;
            AuditUnit {
                stated_epsilon: Some(audit.stated_epsilon),
                delta,
                dirichlet: Some(DirichletRow {
                    tau: audit.tau,
                    pair_epsilon: audit.pair_epsilon,
                }),
                ..local(audit.counting, releases)
            }
        }
        Setting::DpSgd {
            noise_multiplier,
            sample_rate,
            steps,
            canaries,
            runs,
            secure,
        } => {
            let scores = dispatch(
                args.backend,
                DpSgdAudit {
                    noise_multiplier,
                    sample_rate,
                    steps,
                    canaries,
                    runs,
                    delta,
                    seed,
                    secure,
                },
            )?;
            let one_run = OneRunRow {
                guesses: scores.one_run,
                epsilon: one_run_epsilon_lower_bound(
                    scores.one_run.canaries,
                    scores.one_run.guesses,
                    scores.one_run.correct,
                    delta,
                    confidence,
                )?,
            };
            // Only at q = 1 is the run's trade-off curve Gaussian (μ = √T/σ), so that the
            // μ-GDP reading bounds ε.
            let mu_exact = (sample_rate == 1.0).then(|| (steps as f64).sqrt() / noise_multiplier);
            AuditUnit {
                one_run: Some(one_run),
                ..canary_unit(setting, args, scores.runs, mu_exact, runs)?
            }
        }
        Setting::DqnTransition {
            noise_multiplier,
            sample_rate,
            steps,
            runs,
        } => dqn_unit(
            setting,
            args,
            DqnTransitionAudit {
                noise_multiplier,
                sample_rate,
                steps,
                runs,
                delta,
                seed,
                canary: DqnCanary::Transition,
                copies: 1,
            },
        )?,
        Setting::DqnObservation {
            noise_multiplier,
            steps,
            runs,
        } => dqn_unit(
            setting,
            args,
            DqnTransitionAudit {
                noise_multiplier,
                sample_rate: 1.0,
                steps,
                runs,
                delta,
                seed,
                canary: DqnCanary::Observation,
                copies: 1,
            },
        )?,
        Setting::ReinforceEpisode {
            noise_multiplier,
            episodes_per_step,
            runs,
        } => {
            let scores = dispatch(
                args.backend,
                ReinforceEpisodeAudit {
                    noise_multiplier,
                    episodes_per_step,
                    runs,
                    delta,
                    seed,
                },
            )?;
            canary_unit(setting, args, scores, Some(1.0 / noise_multiplier), runs)?
        }
        Setting::PpoEpisode {
            noise_multiplier,
            episodes_per_rollout,
            minibatch_episodes,
            epochs,
            runs,
        } => {
            let (sample_rate, steps) =
                setting::ppo_rate_and_steps(episodes_per_rollout, minibatch_episodes, epochs);
            let scores = dispatch(
                args.backend,
                PpoEpisodeAudit {
                    noise_multiplier,
                    episodes_per_rollout,
                    minibatch_episodes,
                    epochs,
                    runs,
                    delta,
                    seed,
                },
            )?;
            // At q = 1 one episode's K releases are Gaussian (μ = √K/σ); at q < 1 only the
            // counting audit bounds ε.
            let mu_exact = (sample_rate == 1.0).then(|| (steps as f64).sqrt() / noise_multiplier);
            canary_unit(setting, args, scores, mu_exact, runs)?
        }
    };
    unit.wall_s = start.elapsed().as_secs_f64();
    Ok(unit)
}

/// The unit of a DQN audit (`audit.copies` copies of each canary transition per included run;
/// 1 but in the tests of a broken feed): the counting audit and, where every step is at q = 1
/// (a Gaussian trade-off curve of μ = √T/σ per transition, μ = 2√T/σ for an observation's two
/// aligned transitions, which move each release by at most 2C), the Gaussian reading. One
/// canary per run, so no one-run audit.
fn dqn_unit(setting: &Setting, args: &AuditArgs, audit: DqnTransitionAudit) -> Result<AuditUnit> {
    let scores = dispatch(args.backend, audit)?;
    let group = match audit.canary {
        DqnCanary::Transition => 1.0,
        DqnCanary::Observation => 2.0,
    };
    let mu = (audit.sample_rate == 1.0)
        .then(|| group * (audit.steps as f64).sqrt() / audit.noise_multiplier);
    canary_unit(setting, args, scores, mu, audit.runs)
}

/// What the runs of a canary audit produced: the scores of the canaries that were in and of
/// those that were out, and the accountants' ε at δ for one canary's unit (a record, a
/// transition, an episode) over the releases it could enter.
#[derive(Debug, Clone)]
pub(super) struct CanaryRuns {
    pub(super) held_in: Vec<f64>,
    pub(super) held_out: Vec<f64>,
    /// ε at δ per unit by the RDP accountant.
    pub(super) rdp_epsilon: f64,
    /// The same by the PLD accountant.
    pub(super) pld_epsilon: f64,
}

/// The unit of a canary audit, the one set-up every canary row shares (DP-SGD's gradient
/// canaries, the RL agents' canary transitions and episodes): the counting audit with its
/// threshold chosen on a random [`SELECTION_FRACTION`] of the scores and counted on the rest,
/// and, where `mu_exact` is given, the Gaussian trade-off reading on the same split. Give
/// `mu_exact` only where one canary's trade-off curve is Gaussian (μ-GDP with that μ: every
/// release at q = 1), the one case where the μ bound is a bound on ε. No one-run audit: the
/// caller adds it where a run holds many canaries.
fn canary_unit(
    setting: &Setting,
    args: &AuditArgs,
    scores: CanaryRuns,
    mu_exact: Option<f64>,
    runs: usize,
) -> Result<AuditUnit> {
    let (seed, confidence, delta) = (args.seed, args.confidence, args.delta);
    let trials = (scores.held_in.len() + scores.held_out.len()) as u64;
    let canary_scores = CanaryScores::new(scores.held_in, scores.held_out)?;
    let split = ThresholdChoice::Split {
        selection_fraction: SELECTION_FRACTION,
        seed,
    };
    let counting = counting_audit(&canary_scores, delta, confidence, &split)?;
    let gdp = match mu_exact {
        Some(mu_exact) => {
            let test = gaussian_dp_audit(&canary_scores, confidence, &split)?;
            Some(GdpRow {
                epsilon: gdp_epsilon(test.bound, delta)?,
                test,
                mu_exact,
            })
        }
        None => None,
    };
    Ok(AuditUnit {
        setting: setting.clone(),
        seed,
        stated_epsilon: None,
        rdp_epsilon: Some(scores.rdp_epsilon),
        pld_epsilon: Some(scores.pld_epsilon),
        delta,
        confidence,
        counting,
        one_run: None,
        gdp,
        trials,
        runs: runs as u64,
        wall_s: 0.0,
        commit: crate::run::source_commit(),
        dirichlet: None,
    })
}

/// Criterion 1, the one that a failing audit of privrl's code would break: every lower bound
/// of `unit` is at most its upper bound. Returns the offending (name, bound, upper bound).
pub fn lower_bound_above_upper(unit: &AuditUnit) -> Option<(&'static str, f64, f64)> {
    let upper = unit.upper_bound()?;
    unit.lower_bounds()
        .into_iter()
        .find(|&(_, bound)| bound > upper)
        .map(|(name, bound)| (name, bound, upper))
}

/// The headline: criterion 1 over the units on disk.
fn headline(units: &[AuditUnit]) -> Headline {
    let broken: Vec<String> = units
        .iter()
        .filter_map(|u| {
            lower_bound_above_upper(u).map(|(name, bound, upper)| {
                format!("{}: {name} {bound:.3} > {upper:.3}", u.setting.name())
            })
        })
        .collect();
    Headline {
        effect: report::CRITERION_SOUND.to_string(),
        measured: if broken.is_empty() {
            format!(
                "{} audits, every lower bound at or below its upper bound",
                units.len()
            )
        } else {
            format!("lower bound above upper bound in {}", broken.join("; "))
        },
        visible: broken.is_empty() && !units.is_empty(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn quick_args(seed: u64) -> AuditArgs {
        AuditArgs {
            quick: true,
            out: None,
            seed,
            confidence: 0.95,
            delta: 1e-5,
            report_only: false,
            backend: BackendChoice::Ndarray,
        }
    }

    /// The CI check of issue 44: a small audit of every mechanism in the plan, none of whose
    /// lower bounds may exceed the mechanism's stated or accounted ε. The audits are strong
    /// enough to fail: each must also find a clearly positive ε (at seed 0 the weakest, the
    /// subsampled DP-SGD run at q = 0.1, finds 1.14 against the accountants' 5.15).
    #[test]
    fn no_lower_bound_is_above_its_upper_bound() {
        let args = quick_args(0);
        for setting in plan(true) {
            let unit = audit(&setting, &args).unwrap();
            assert_eq!(
                lower_bound_above_upper(&unit),
                None,
                "{}: {unit:?}",
                setting.name()
            );
            let upper = unit.upper_bound().unwrap();
            // Eq. 12 is loose by orders of magnitude (that is what the Dirichlet audit
            // measures), so it must find ε above 1 rather than a share of it.
            let least = match setting {
                Setting::Dirichlet { .. } => 1.0,
                _ => 0.15 * upper,
            };
            assert!(
                unit.best_lower_bound() > least,
                "{}: the audit found little ({} vs {upper})",
                setting.name(),
                unit.best_lower_bound()
            );
        }
    }

    /// A DQN unit written before q < 1 was audited (no `sample_rate` in its setting) reads as
    /// q = 1, keeps its name (hence its file) and is written back unchanged; a q < 1 setting
    /// names its rate.
    #[test]
    fn a_dqn_setting_without_a_rate_is_at_q_one() {
        let old = r#"{"mechanism":"dqn-transition","noise_multiplier":1.0,"steps":1,"runs":20000}"#;
        let setting: Setting = serde_json::from_str(old).unwrap();
        assert_eq!(
            setting,
            Setting::DqnTransition {
                noise_multiplier: 1.0,
                sample_rate: 1.0,
                steps: 1,
                runs: 20_000
            }
        );
        assert_eq!(setting.name(), "dqn-transition-sigma1-t1-r20000");
        assert_eq!(serde_json::to_string(&setting).unwrap(), old);
        let subsampled = Setting::DqnTransition {
            noise_multiplier: 1.0,
            sample_rate: 0.5,
            steps: 4,
            runs: 20_000,
        };
        assert_eq!(subsampled.name(), "dqn-transition-sigma1-q0.5-t4-r20000");
    }

    /// The DQN audit can fail: a canary transition fed twice (a record counted twice, as a
    /// bug in how an agent fills its batch would) moves each release by 2C, and the audit at
    /// the CI size finds ε above the accountant's ε for one transition (at seed 0 with 400
    /// runs already: Gaussian reading 4.56 against the PLD accountant's 4.38).
    #[test]
    fn a_transition_fed_twice_is_caught() {
        let args = quick_args(0);
        let (noise_multiplier, steps, runs) = (1.0, 1, super::setting::QUICK_RL_RUNS);
        let setting = Setting::DqnTransition {
            noise_multiplier,
            sample_rate: 1.0,
            steps,
            runs,
        };
        let broken = DqnTransitionAudit {
            noise_multiplier,
            sample_rate: 1.0,
            steps,
            runs,
            delta: args.delta,
            seed: args.seed,
            canary: DqnCanary::Transition,
            copies: 2,
        };
        let unit = dqn_unit(&setting, &args, broken).unwrap();
        assert!(
            lower_bound_above_upper(&unit).is_some(),
            "a doubled canary went unnoticed: {unit:?}"
        );
    }
}

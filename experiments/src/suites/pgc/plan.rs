//! `suite pgc`'s command-line arguments (transport, optimiser, mechanisms) and the plan they
//! resolve to (what `config.json` records).

use clap::{Args, ValueEnum};
use privrl_agents::SubmissionOrder;
use privrl_privacy::{Epsilon, MechanismKind};
use serde::Serialize;

use super::learner::{for_mechanism, LearnerArgs, OptimizerChoice, PerMechanism};
use super::setting::{MechanismFactors, Setting};
use crate::backend::BackendChoice;
use crate::mechanism_arg::{MechanismParser, PGC_MECHANISMS};
use crate::noise_rng::NoiseRng;

/// Which transport the suite's runs use.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum TransportChoice {
    /// Agent threads and channels in one process (the default).
    Inprocess,
    /// Redis Streams (agents and aggregator still in this process, on separate connections);
    /// needs --redis.
    Redis,
}

/// `--order`: in which order the aggregator applies the submissions of an in-process run.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum OrderArg {
    /// Round robin over the agents, each gradient W − 1 submissions stale: a seed fixes the
    /// whole run whatever the machine's load (the default).
    RoundRobin,
    /// As they arrive (asynchronous A3C): results depend on thread scheduling, hence on load.
    Arrival,
}

impl OrderArg {
    /// The library's order.
    pub fn mode(self) -> SubmissionOrder {
        match self {
            Self::RoundRobin => SubmissionOrder::RoundRobin,
            Self::Arrival => SubmissionOrder::Arrival,
        }
    }
}

/// Arguments of `suite pgc`.
#[derive(Args, Debug, Clone, Serialize)]
pub struct PgcSuiteArgs {
    /// Quick mode: ε ∈ {2, ∞}, 3 trials, at most 2500 model updates per trial.
    #[arg(long)]
    pub quick: bool,
    /// Trials K per cell (the paper: 20). Default 3 quick, 10 otherwise.
    #[arg(long)]
    pub trials: Option<usize>,
    /// Model updates (eq. 22) after which a trial without success counts as FST = ∞ (the
    /// paper: 90,000 updates; with PRS's |B| = 100 that is 100 times as many submissions).
    /// Default 2500 quick, a smoke-test size, not the paper's: a failing PRS trial costs
    /// |B| = 100 submissions per update, and in the ablation (results/pgc/ablation) every PRS
    /// trial of the paper's setting that succeeded did so within 175 updates (Laplace's
    /// learning settings needed up to 63,938, which only the full cutoff covers).
    #[arg(long)]
    pub max_updates: Option<u64>,
    /// Submissions per Fig. 2 run (|B| ∈ {1, 100} at ε = 1). Default 500 quick, 10,000
    /// otherwise; 0 skips Fig. 2.
    #[arg(long)]
    pub fig2_submissions: Option<u64>,
    /// Transport of the runs.
    #[arg(long, value_enum, default_value_t = TransportChoice::Inprocess)]
    pub transport: TransportChoice,
    /// Redis URL for --transport redis (default: $PRIVRL_REDIS_URL).
    #[arg(long)]
    pub redis: Option<String>,
    /// Agent threads per trial (the paper: 9).
    #[arg(long, default_value_t = 9)]
    pub workers: usize,
    /// The ε of the cells (comma-separated, `inf` for ∞). Default 2,inf quick, 1,2,5,10,inf
    /// otherwise (Tables 1–3).
    #[arg(long, value_delimiter = ',')]
    pub epsilons: Option<Vec<Epsilon>>,
    /// The learner's factors (the paper's setting by default), for every mechanism.
    #[command(flatten)]
    pub learner: LearnerArgs,
    /// A mechanism's own learner, as factors changed from the paper's setting (the
    /// ablation's names): `MECHANISM=FACTOR+FACTOR…` or `MECHANISM=paper`, comma-separated,
    /// e.g. `laplace=sampled-actions+adam,prs=sparse-reward` (the smallest combinations that
    /// learn at ε = ∞, results/pgc/ablation-round-robin). Factors: sparse-reward, mean-loss,
    /// env-step-clock, sampled-actions, bias, adam (lr 0.005). A mechanism named here takes
    /// its reward, loss, clock, actions, biases and optimiser from this flag only, so it
    /// cannot be combined with --reward/--loss/--exploration-clock/--actions/--bias/
    /// --optimizer/--lr.
    #[arg(long, value_delimiter = ',')]
    pub factors: Vec<MechanismFactors>,
    /// In which order the aggregator applies submissions: `round-robin` (deterministic given
    /// the seed) or `arrival` (asynchronous, so results depend on machine load; the order of
    /// the first ablation, results/pgc/ablation).
    #[arg(long, value_enum, default_value_t = OrderArg::RoundRobin)]
    pub order: OrderArg,
    /// How the aggregator steps θ with the mean of its buffer, for all mechanisms (`sgd`,
    /// `adam`) or per mechanism (`laplace=adam,prs=sgd`; later entries win). `sgd` is eq. 22;
    /// `adam` takes an Adam step on the same noisy mean (post-processing, so it spends no
    /// privacy; Section 3.1.1 allows any gradient method). Under eq. 22 with Laplace's
    /// C = 0.01 a submission moves θ by at most η·C/2 in L1; Adam rescales that step.
    /// Default sgd.
    #[arg(long, value_delimiter = ',')]
    pub optimizer: Vec<PerMechanism<OptimizerChoice>>,
    /// Learning rate η, for all mechanisms or per mechanism (`prs=0.01`). Default per
    /// mechanism: 0.5 with sgd (the paper), 0.005 with adam.
    #[arg(long, value_delimiter = ',')]
    pub lr: Vec<PerMechanism<f64>>,
    /// Mechanisms to run (comma-separated): laplace (Algorithm 2, C = 0.01, |B| = 1), prs
    /// (Algorithm 3, C = 1, |B| = 100), none (the raw gradient, |B| = 1, ε = ∞ only).
    #[arg(
        long,
        value_parser = MechanismParser(&PGC_MECHANISMS),
        value_delimiter = ',',
        default_values_t = [MechanismKind::Laplace, MechanismKind::Prs]
    )]
    pub mechanisms: Vec<MechanismKind>,
    /// Base seed; trial k of every cell uses seed + k.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Trials run at once (0: one per core).
    #[arg(long, default_value_t = 0)]
    pub threads: usize,
    /// Backend.
    #[arg(long, value_enum, default_value_t = BackendChoice::default())]
    pub backend: BackendChoice,
    /// Where the agents' mechanism noise comes from: `seeded` (from each agent's seed,
    /// reproducible up to the asynchrony of the agents) or `secure` (the OS CSPRNG).
    #[arg(long, value_enum, default_value_t = NoiseRng::Seeded)]
    pub noise_rng: NoiseRng,
    /// Run the ablation at ε = ∞ instead of the tables: the paper's setting, each factor
    /// alone (reward, loss, exploration clock, actions, biases, Adam) and fixed combinations,
    /// --trials each (default 10), one trial at a time, as resumable units under
    /// `<results-dir>/ablation/` (finished ones are skipped); the mechanism, optimiser and
    /// learner flags are then the settings' own.
    #[arg(long)]
    pub ablation: bool,
    /// Where --ablation keeps its units and writes report.md, ablation.csv and units.csv.
    #[arg(long, default_value = "results/pgc")]
    pub results_dir: std::path::PathBuf,
    /// Run Tables 1–3 as resumable units instead of one-off runs: each cell (mechanism × ε)
    /// × seed is `<results-dir>/tables/<setting>/seed<k>.json` (`tables-arrival/` with
    /// --order arrival), skipped once written (a failure within a shorter --max-updates than
    /// the one given now runs again to the new cutoff), trial k of every cell before trial k + 1 of
    /// any; `report.md`, `tables.csv` and `units.csv` there are regenerated from whatever
    /// units exist, with each cell beside the paper's value and a verdict per table.
    #[arg(long, conflicts_with = "ablation")]
    pub tables: bool,
    /// Run the clip study (docs/pgc.md): the non-private A3C (20 trials per learner), Laplace
    /// at ε = ∞ with C × 10 or C × 100 in the paper's and the learning learner (10 trials
    /// each), each learner's best of those and today's setting at ε ∈ {1, 10}, then |B| = 100
    /// at ε = ∞ (10 trials each), as resumable units under
    /// `<results-dir>/clip-study-round-robin/` (`clip-study-arrival/` with --order arrival);
    /// the trials are fixed, so no --trials.
    #[arg(long, conflicts_with_all = ["ablation", "tables"])]
    pub clip_study: bool,
    /// With --ablation: run only these settings (comma-separated names, e.g.
    /// laplace-paper,laplace+adam; the report lists them all).
    #[arg(long, value_delimiter = ',')]
    pub settings: Vec<String>,
    /// With --ablation, --tables or --clip-study: regenerate the report from the units on
    /// disk, run nothing.
    #[arg(long)]
    pub report_only: bool,
}

impl PgcSuiteArgs {
    /// `--quick` with everything else at its default (quickstart's PGC part).
    pub fn quick(seed: u64, backend: BackendChoice, threads: usize) -> Self {
        Self {
            quick: true,
            trials: None,
            max_updates: None,
            fig2_submissions: None,
            transport: TransportChoice::Inprocess,
            redis: None,
            workers: 9,
            epsilons: None,
            learner: LearnerArgs::default(),
            factors: Vec::new(),
            order: OrderArg::RoundRobin,
            optimizer: Vec::new(),
            lr: Vec::new(),
            mechanisms: vec![MechanismKind::Laplace, MechanismKind::Prs],
            seed,
            backend,
            threads,
            noise_rng: NoiseRng::Seeded,
            ablation: false,
            tables: false,
            clip_study: false,
            results_dir: "results/pgc".into(),
            settings: Vec::new(),
            report_only: false,
        }
    }
}

/// The finite budgets, then ∞: the tables' columns.
fn finite_then_infinite(finite: &[f64]) -> Vec<Epsilon> {
    finite
        .iter()
        .map(|&e| Epsilon::finite(e).expect("the default budgets are positive"))
        .chain([Epsilon::INFINITE])
        .collect()
}

/// Resolved parameters (what config.json records).
#[derive(Debug, Clone, Serialize)]
pub(super) struct Plan {
    pub(super) trials: usize,
    pub(super) max_updates: u64,
    pub(super) fig2_submissions: u64,
    pub(super) epsilons: Vec<Epsilon>,
    pub(super) transport: TransportChoice,
    pub(super) workers: usize,
    pub(super) learner: LearnerArgs,
    pub(super) mechanisms: Vec<MechanismKind>,
    /// The aggregator's rule and η of each mechanism, in `mechanisms`' order.
    pub(super) optimizers: Vec<MechanismOptimizer>,
    pub(super) seed: u64,
    pub(super) backend: BackendChoice,
    pub(super) noise_rng: NoiseRng,
    pub(super) order: SubmissionOrder,
    /// Mechanisms with their own learner (`--factors`).
    pub(super) factors: Vec<MechanismFactors>,
}

impl PgcSuiteArgs {
    pub(super) fn plan(&self) -> Plan {
        Plan {
            trials: self.trials.unwrap_or(if self.quick { 3 } else { 10 }),
            max_updates: self
                .max_updates
                .unwrap_or(if self.quick { 2500 } else { 90_000 }),
            fig2_submissions: self.fig2_submissions.unwrap_or(if self.quick {
                500
            } else {
                10_000
            }),
            epsilons: match &self.epsilons {
                Some(list) => list.clone(),
                None if self.quick => finite_then_infinite(&[2.0]),
                None => finite_then_infinite(&[1.0, 2.0, 5.0, 10.0]),
            },
            transport: self.transport,
            workers: self.workers,
            learner: self.learner.clone(),
            mechanisms: self.mechanisms.clone(),
            optimizers: self
                .mechanisms
                .iter()
                .map(|&mechanism| {
                    let optimizer =
                        for_mechanism(&self.optimizer, mechanism).unwrap_or(OptimizerChoice::Sgd);
                    MechanismOptimizer {
                        mechanism,
                        optimizer,
                        lr: for_mechanism(&self.lr, mechanism)
                            .unwrap_or_else(|| optimizer.default_lr()),
                    }
                })
                .collect(),
            seed: self.seed,
            backend: self.backend,
            noise_rng: self.noise_rng,
            order: self.order.mode(),
            factors: self.factors.clone(),
        }
    }

    /// Refuses `--factors` together with the shared learner flags (which would leave it
    /// unclear which wins).
    pub(super) fn check_factors(&self) -> anyhow::Result<()> {
        if !self.factors.is_empty()
            && (self.learner != LearnerArgs::default()
                || !self.optimizer.is_empty()
                || !self.lr.is_empty())
        {
            anyhow::bail!(
                "--factors sets each named mechanism's learner; drop --reward/--loss/\
                 --exploration-clock/--actions/--bias/--optimizer/--lr, or spell them as factors"
            );
        }
        Ok(())
    }
}

/// The aggregator's rule and learning rate for one mechanism.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub(super) struct MechanismOptimizer {
    pub(super) mechanism: MechanismKind,
    pub(super) optimizer: OptimizerChoice,
    pub(super) lr: f64,
}

impl Plan {
    /// `mechanism`'s learner as an ablation setting at ε = ∞: from `--factors` if it names
    /// the mechanism (the last entry wins), else `None`.
    pub(super) fn setting(&self, mechanism: MechanismKind) -> Option<Setting> {
        self.factors
            .iter()
            .rev()
            .find(|f| f.mechanism == mechanism)
            .map(|f| Setting::new(mechanism, &f.factors))
    }

    /// The rule and η of `mechanism` (SGD at the paper's η if it is not in the plan).
    pub(super) fn optimizer(&self, mechanism: MechanismKind) -> MechanismOptimizer {
        if let Some(setting) = self.setting(mechanism) {
            let optimizer = setting.optimizer();
            return MechanismOptimizer {
                mechanism,
                optimizer,
                lr: optimizer.default_lr(),
            };
        }
        self.optimizers
            .iter()
            .find(|o| o.mechanism == mechanism)
            .copied()
            .unwrap_or(MechanismOptimizer {
                mechanism,
                optimizer: OptimizerChoice::Sgd,
                lr: OptimizerChoice::Sgd.default_lr(),
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::suites::pgc::tests::parse;

    #[test]
    fn quick_matches_what_clap_parses() {
        let parsed = parse(&["--quick", "--seed", "3"]);
        let built = PgcSuiteArgs::quick(3, BackendChoice::default(), 0);
        assert_eq!(format!("{parsed:?}"), format!("{built:?}"));
    }
}

//! `suite pgc`'s command-line arguments (transport, optimiser, mechanisms) and the plan they
//! resolve to (what `config.json` records).

use clap::{Args, ValueEnum};
use privrl_agents::OptimizerKind;
use privrl_privacy::{Epsilon, MechanismKind};
use serde::Serialize;

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

/// Arguments of `suite pgc`.
#[derive(Args, Debug, Clone, Serialize)]
pub struct PgcSuiteArgs {
    /// Quick mode: ε ∈ {2, ∞}, 3 trials, at most 5000 submissions per trial.
    #[arg(long)]
    pub quick: bool,
    /// Trials K per cell (the paper: 20). Default 3 quick, 10 otherwise.
    #[arg(long)]
    pub trials: Option<usize>,
    /// Submissions after which a trial counts as a failure (the paper: 90,000). Default
    /// 5000 quick.
    #[arg(long)]
    pub max_submissions: Option<u64>,
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
    /// Give the network biases (d = 131). The paper's d = 112 counts none, but its
    /// TensorFlow layers may well have had them (Keras' default).
    #[arg(long)]
    pub bias: bool,
    /// The ε of the cells (comma-separated, `inf` for ∞). Default 2,inf quick, 1,2,5,10,inf
    /// otherwise (Tables 1–3).
    #[arg(long, value_delimiter = ',')]
    pub epsilons: Option<Vec<Epsilon>>,
    /// Sample actions from π (the original A3C) instead of the paper's argmax with
    /// α-greedy exploration, α = max(0, 0.5 − n/1800): an ablation for the policy collapse.
    #[arg(long)]
    pub sample_actions: bool,
    /// How the aggregator steps θ with the mean of its buffer: `sgd` is eq. 22; `adam` takes an
    /// Adam step on the same noisy mean instead (post-processing, so it spends no privacy;
    /// Section 3.1.1 allows any gradient method). Under eq. 22 with Laplace's C = 0.01 a
    /// submission moves θ by at most η·C/2 in L1; Adam rescales that step.
    #[arg(long, value_enum, default_value_t = OptimizerChoice::Sgd)]
    pub optimizer: OptimizerChoice,
    /// Learning rate η. Default 0.5 with sgd (the paper), 0.005 with adam.
    #[arg(long)]
    pub lr: Option<f64>,
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
}

impl PgcSuiteArgs {
    /// `--quick` with everything else at its default (quickstart's PGC part).
    pub fn quick(seed: u64, backend: BackendChoice, threads: usize) -> Self {
        Self {
            quick: true,
            trials: None,
            max_submissions: None,
            fig2_submissions: None,
            transport: TransportChoice::Inprocess,
            redis: None,
            workers: 9,
            bias: false,
            epsilons: None,
            sample_actions: false,
            optimizer: OptimizerChoice::Sgd,
            lr: None,
            mechanisms: vec![MechanismKind::Laplace, MechanismKind::Prs],
            seed,
            backend,
            threads,
            noise_rng: NoiseRng::Seeded,
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
    pub(super) max_submissions: u64,
    pub(super) fig2_submissions: u64,
    pub(super) epsilons: Vec<Epsilon>,
    pub(super) transport: TransportChoice,
    pub(super) workers: usize,
    pub(super) bias: bool,
    pub(super) sample_actions: bool,
    pub(super) optimizer: OptimizerChoice,
    pub(super) lr: f64,
    pub(super) mechanisms: Vec<MechanismKind>,
    pub(super) seed: u64,
    pub(super) backend: BackendChoice,
    pub(super) noise_rng: NoiseRng,
}

impl PgcSuiteArgs {
    pub(super) fn plan(&self) -> Plan {
        Plan {
            trials: self.trials.unwrap_or(if self.quick { 3 } else { 10 }),
            max_submissions: self
                .max_submissions
                .unwrap_or(if self.quick { 5000 } else { 90_000 }),
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
            bias: self.bias,
            sample_actions: self.sample_actions,
            optimizer: self.optimizer,
            lr: self.lr.unwrap_or(match self.optimizer {
                OptimizerChoice::Sgd => 0.5,
                OptimizerChoice::Adam => 0.005,
            }),
            mechanisms: self.mechanisms.clone(),
            seed: self.seed,
            backend: self.backend,
            noise_rng: self.noise_rng,
        }
    }
}

/// The aggregator's update rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ValueEnum)]
pub enum OptimizerChoice {
    /// θ ← θ − η·mean(B) (eq. 22).
    Sgd,
    /// Adam (β = (0.9, 0.999), ε = 1e-8) on mean(B).
    Adam,
}

impl OptimizerChoice {
    pub(super) fn kind(self) -> OptimizerKind {
        match self {
            Self::Sgd => OptimizerKind::Sgd,
            Self::Adam => OptimizerKind::Adam,
        }
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

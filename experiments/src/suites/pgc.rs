//! `cargo xtask suite pgc`: PGC-A3C on CartPole-v0 with private gravities (Ono & Takahashi,
//! Section 4): Table 1 (median first success time), Table 2 (success ratio), Table 3
//! (relative area under the success-ratio curve), Fig. 2 (μ_n with |B| ∈ {1, 100}) and Fig. 3
//! (success ratio against submissions), beside the paper's values.

use anyhow::{Context, Result};
use burn::backend::Autodiff;
use burn::tensor::backend::Backend;
use clap::{Args, ValueEnum};
use privrl_agents::pgc::{
    median_first_success, relative_area, run_pgc, success_ratio, AppliedSubmission,
};
use privrl_agents::{
    A3cConfig, Exploration, InProcess, OptimizerKind, PgcConfig, RedisTransport, Transport,
};
use serde::{Deserialize, Serialize};

use crate::backend::{dispatch, BackendChoice, BackendTask};
use crate::noise_rng::NoiseRng;
use crate::report::plot::{Line, LineChart};
use crate::report::{Cell, Report};
use crate::run::{suite_dir, RunDir, RunName};
use crate::summary::{Headline, SuiteOutcome};
use crate::sweep::{run_parallel, Job};
use privrl_privacy::{Epsilon, MechanismKind};

use crate::mechanism_arg::{MechanismParser, PGC_MECHANISMS};

const SUITE: &str = "pgc";

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
struct Plan {
    trials: usize,
    max_submissions: u64,
    fig2_submissions: u64,
    epsilons: Vec<Epsilon>,
    transport: TransportChoice,
    workers: usize,
    bias: bool,
    sample_actions: bool,
    optimizer: OptimizerChoice,
    lr: f64,
    mechanisms: Vec<MechanismKind>,
    seed: u64,
    backend: BackendChoice,
    noise_rng: NoiseRng,
}

impl PgcSuiteArgs {
    fn plan(&self) -> Plan {
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
    fn kind(self) -> OptimizerKind {
        match self {
            Self::Sgd => OptimizerKind::Sgd,
            Self::Adam => OptimizerKind::Adam,
        }
    }
}

/// MAX_BUF of the paper's runs (Section 4.1): 100 for PRS, 1 for Laplace and the raw gradient.
fn buffer_size(mech: MechanismKind) -> usize {
    match mech {
        MechanismKind::Prs => 100,
        _ => 1,
    }
}

/// The cells a row runs: the non-private row (the paper's "non-private A3C", against which
/// Table 3 is relative when it runs) has only ε = ∞.
fn runs_at(mech: MechanismKind, epsilon: Epsilon) -> bool {
    mech != MechanismKind::None || epsilon == Epsilon::INFINITE
}

/// How `value` is spelled on the command line.
fn flag_value(value: &impl ValueEnum) -> String {
    value
        .to_possible_value()
        .map(|v| v.get_name().to_string())
        .unwrap_or_default()
}

fn paper_values(
    mech: MechanismKind,
    epsilon: Epsilon,
) -> (&'static str, &'static str, &'static str) {
    let column = match epsilon.get() {
        None => 4,
        Some(e) => match [1.0, 2.0, 5.0, 10.0].iter().position(|&p| p == e) {
            Some(column) => column,
            None => return ("-", "-", "-"),
        },
    };
    let (fst, ratio, auc): ([&str; 5], [&str; 5], [&str; 5]) = match mech {
        MechanismKind::Laplace => (
            ["?", "20238.5", "?", "?", "1769.0"],
            ["0.80", "0.90", "1.00", "1.00", "1.0"],
            ["?", "0.711", "?", "0.965", "1.0"],
        ),
        MechanismKind::Prs => (
            ["25226.5", "7549.0", "2656.5", "11217.5", "1709.0"],
            ["0.85", "0.95", "0.90", "0.90", "1.0"],
            ["?", "0.862", "?", "0.771", "1.0"],
        ),
        // The non-private row (the only other mechanism the PGC commands accept).
        _ => (
            ["-", "-", "-", "-", "1769.0 / 1709.0"],
            ["-", "-", "-", "-", "1.0"],
            ["-", "-", "-", "-", "1.0"],
        ),
    };
    (fst[column], ratio[column], auc[column])
}

/// One trial (or one Fig. 2 run).
#[derive(Clone)]
struct Trial {
    plan: Plan,
    mech: MechanismKind,
    epsilon: Epsilon,
    buffer_size: usize,
    max_submissions: u64,
    stop_at_success: bool,
    seed: u64,
    run_name: String,
    redis: Option<String>,
}

/// What one trial's `summary.json` holds (read back by the leakage suite:
/// [`crate::summary::PgcTrialSummary`]).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TrialSummary {
    /// The mechanism Q.
    pub mechanism: MechanismKind,
    /// ε per agent.
    pub epsilon: Epsilon,
    /// MAX_BUF = |B|.
    pub buffer_size: usize,
    /// The trial's seed.
    pub seed: u64,
    /// A Fig. 2 run (a fixed number of submissions) rather than a table trial.
    pub fig2: bool,
    /// First success time (eq. 26), `None` if the run never succeeded.
    pub first_success: Option<u64>,
    /// Submissions applied.
    pub applied: u64,
    /// Submissions sent.
    pub sent: u64,
    /// Model updates.
    pub updates: u64,
    /// Wall-clock seconds.
    pub wall_s: f64,
}

impl Trial {
    fn config(&self) -> PgcConfig {
        let mut config = PgcConfig::paper(self.mech.paper_default(self.epsilon))
            .with_max_submissions(self.max_submissions)
            .with_stop_at_success(self.stop_at_success);
        config.a3c = A3cConfig::pgc_paper()
            .with_workers(self.plan.workers)
            .with_bias(self.plan.bias)
            .with_optimizer(self.plan.optimizer.kind())
            .with_lr(self.plan.lr)
            .with_buffer_size(self.buffer_size);
        if self.plan.sample_actions {
            config.a3c.exploration = Exploration::Sample;
        }
        config.with_noise_rng(self.plan.noise_rng.mode())
    }
}

impl BackendTask for Trial {
    type Output = (TrialSummary, Vec<(f64, f64)>);

    fn run<B: Backend>(self, device: B::Device) -> Result<Self::Output> {
        let config = self.config();
        let run = RunDir::create(SUITE, &self.run_name)?;
        run.write_config(&config)?;
        let mut metrics = run.metrics()?;
        let mut curve = Vec::new();
        let mut write_error = None;
        let mut on_applied = |a: &AppliedSubmission| {
            curve.push((a.n as f64, a.mean_score));
            if let Err(e) = metrics.write_row(&[
                ("submission", a.n as f64),
                ("score", a.score),
                ("mean_score", a.mean_score),
                ("version", a.version as f64),
                (
                    "staleness",
                    a.version.saturating_sub(a.computed_at + 1) as f64,
                ),
            ]) {
                write_error.get_or_insert(e);
            }
        };
        let outcome = match (&self.plan.transport, &self.redis) {
            (TransportChoice::Inprocess, _) => run_pgc::<Autodiff<B>>(
                &config,
                &InProcess::new(),
                self.seed,
                &device,
                &mut on_applied,
            )?,
            (TransportChoice::Redis, Some(url)) => {
                let prefix = format!("privrl-suite-pgc-{}-{}", std::process::id(), self.run_name);
                let transport = RedisTransport::aggregator(url, &prefix)?;
                let outcome = run_pgc::<Autodiff<B>>(
                    &config,
                    &transport as &dyn Transport,
                    self.seed,
                    &device,
                    &mut on_applied,
                );
                transport.delete_run()?;
                outcome?
            }
            (TransportChoice::Redis, None) => anyhow::bail!("--transport redis needs --redis URL"),
        };
        if let Some(e) = write_error {
            return Err(e);
        }
        let summary = TrialSummary {
            mechanism: self.mech,
            epsilon: self.epsilon,
            buffer_size: self.buffer_size,
            seed: self.seed,
            fig2: !self.stop_at_success,
            first_success: outcome.first_success,
            applied: outcome.applied,
            sent: outcome.sent,
            updates: outcome.updates,
            wall_s: outcome.wall_s,
        };
        if !curve.is_empty() {
            LineChart::new(format!(
                "{} ε = {}, |B| = {}: μ_n",
                self.mech.label(),
                self.epsilon,
                self.buffer_size
            ))
            .x_label("submissions")
            .y_label("average score μ_n (last 10)")
            .line(Line::new("μ_n", downsample(&curve, 1500)))
            .save(&run.file("mean_score"))?;
        }
        run.write_summary(&summary)?;
        Ok((summary, downsample(&curve, 1500)))
    }
}

fn downsample(curve: &[(f64, f64)], points: usize) -> Vec<(f64, f64)> {
    let step = curve.len().div_ceil(points.max(1)).max(1);
    let mut out: Vec<(f64, f64)> = curve.iter().step_by(step).copied().collect();
    if let (Some(last), Some(kept)) = (curve.last(), out.last()) {
        if last != kept {
            out.push(*last);
        }
    }
    out
}

/// Runs the suite and writes `runs/pgc/report.md`; returns the report's path.
pub fn run(mut args: PgcSuiteArgs) -> Result<SuiteOutcome> {
    if args.redis.is_none() {
        args.redis = std::env::var("PRIVRL_REDIS_URL")
            .ok()
            .filter(|u| !u.is_empty());
    }
    let plan = args.plan();
    anyhow::ensure!(plan.trials >= 1, "--trials must be >= 1");
    anyhow::ensure!(plan.workers >= 1, "--workers must be >= 1");
    if plan.transport == TransportChoice::Redis {
        anyhow::ensure!(
            args.redis.is_some(),
            "--transport redis needs --redis URL (or PRIVRL_REDIS_URL)"
        );
    }
    let dir = suite_dir(SUITE)?;
    let start = std::time::Instant::now();
    let mut jobs = Vec::new();
    let trial = |mech: MechanismKind, epsilon, buffer_size, max, stop, seed, name: String| Trial {
        plan: plan.clone(),
        mech,
        epsilon,
        buffer_size,
        max_submissions: max,
        stop_at_success: stop,
        seed,
        run_name: name,
        redis: args.redis.clone(),
    };
    for &mech in &plan.mechanisms {
        let buffer = buffer_size(mech);
        for &epsilon in plan.epsilons.iter().filter(|&&e| runs_at(mech, e)) {
            for k in 0..plan.trials {
                let seed = plan.seed + k as u64;
                let name = RunName::new(mech.name())
                    .param("eps", epsilon.slug())
                    .param("buf", buffer)
                    .seed(seed);
                jobs.push(Job::new(
                    name.as_str(),
                    trial(
                        mech,
                        epsilon,
                        buffer,
                        plan.max_submissions,
                        true,
                        seed,
                        name.as_str().to_string(),
                    ),
                ));
            }
        }
    }
    if plan.fig2_submissions > 0 {
        for &mech in plan
            .mechanisms
            .iter()
            .filter(|&&m| m != MechanismKind::None)
        {
            for buffer in [1usize, 100] {
                let name = RunName::new("fig2")
                    .part(mech.name())
                    .param("eps", 1)
                    .param("buf", buffer)
                    .seed(plan.seed);
                jobs.push(Job::new(
                    name.as_str(),
                    trial(
                        mech,
                        Epsilon::finite(1.0)?,
                        buffer,
                        plan.fig2_submissions,
                        false,
                        plan.seed,
                        name.as_str().to_string(),
                    ),
                ));
            }
        }
    }
    let backend = plan.backend;
    let outcomes = run_parallel(jobs, args.threads, |job, _| dispatch(backend, job))?.into_ok()?;
    let results: Vec<(TrialSummary, Vec<(f64, f64)>)> =
        outcomes.into_iter().map(|(_, r)| r).collect();
    let fsts = |mech: MechanismKind, epsilon: Epsilon| -> Vec<Option<u64>> {
        results
            .iter()
            .filter(|(s, _)| s.mechanism == mech && s.epsilon == epsilon && !s.fig2)
            .map(|(s, _)| s.first_success)
            .collect()
    };

    let mut report = Report::new(&dir, "PGC-A3C: locally private distributed RL");
    report.paragraph(&plan.noise_rng.report_line());
    report.paragraph(&format!(
        "Ono & Takahashi, *Locally Private Distributed Reinforcement Learning*, Section 4. \
         CartPole-v0 (200 steps) with gravity ψ ∈ {{9.7, 9.8, 9.9}} drawn per agent; a 16-unit \
         ReLU network (the paper: d = 112, no biases), γ 0.99, λ 0.5, β 0.01. Laplace: \
         C = 0.01, |B| = 1; PRS: C = 1, |B| = 100, d̂ = max(1, min(d, ⌊ε/2.5⌋)). This run: \
         network biases {}; actions {}; aggregator {}. {} agent threads, transport `{:?}`, \
         backend `{}`. {} trials per cell (the paper: 20); a trial stops at its first success \
         (FST, eq. 26: the first n with μ_n ≥ 195 over the last 10 submissions) or fails after \
         {} submissions (FST = ∞; the paper: 90,000). ε = ∞ is each mechanism's noiseless limit \
         (Laplace: clipping only; PRS: d̂ = d with an unbiased stochastic sign); the row `none` \
         is the raw gradient, the paper's non-private A3C.",
        if plan.bias {
            "yes (d = 131)"
        } else {
            "none (d = 112)"
        },
        if plan.sample_actions {
            "sampled from π"
        } else {
            "argmax π with α = max(0, 0.5 − n/1800) uniform exploration (the paper)"
        },
        match plan.optimizer {
            OptimizerChoice::Sgd => format!("SGD η = {} (eq. 22)", plan.lr),
            OptimizerChoice::Adam => format!("Adam lr = {} on the buffer's mean", plan.lr),
        },
        plan.workers,
        plan.transport,
        plan.backend,
        plan.trials,
        plan.max_submissions
    ));

    let headers: Vec<String> = std::iter::once("Q".to_string())
        .chain(plan.epsilons.iter().map(|&e| format!("ε = {e} (paper)")))
        .collect();
    let header_refs: Vec<&str> = headers.iter().map(String::as_str).collect();
    let mut table1 = Vec::new();
    let mut table2 = Vec::new();
    let mut table3 = Vec::new();
    let mut fig3 = Vec::new();
    // With the non-private row present, Table 3 is relative to it, as in the paper.
    let has_non_private = plan.mechanisms.contains(&MechanismKind::None);
    for &mech in &plan.mechanisms {
        let baseline = if has_non_private {
            fsts(MechanismKind::None, Epsilon::INFINITE)
        } else {
            fsts(mech, Epsilon::INFINITE)
        };
        let mut row1 = vec![Cell::from(mech.label())];
        let mut row2 = vec![Cell::from(mech.label())];
        let mut row3 = vec![Cell::from(mech.label())];
        let mut chart = LineChart::new(format!("{}: success ratio (Fig. 3)", mech.label()))
            .x_label("submissions")
            .y_label("success ratio")
            .legend(plotters::chart::SeriesLabelPosition::LowerRight);
        for &epsilon in &plan.epsilons {
            if !runs_at(mech, epsilon) {
                for row in [&mut row1, &mut row2, &mut row3] {
                    row.push(Cell::from("-"));
                }
                continue;
            }
            let cell = fsts(mech, epsilon);
            let (paper_fst, paper_ratio, paper_auc) = paper_values(mech, epsilon);
            let median = median_first_success(&cell).map_or("-".into(), |m| {
                if m.is_finite() {
                    format!("{m:.1}")
                } else {
                    "∞".into()
                }
            });
            row1.push(Cell::from(format!("{median} ({paper_fst})")));
            row2.push(Cell::from(format!(
                "{:.2} ({paper_ratio})",
                success_ratio(&cell, plan.max_submissions)
            )));
            let relative = relative_area(&cell, &baseline, plan.max_submissions)
                .map_or("n/a".to_string(), |r| format!("{r:.3}"));
            row3.push(Cell::from(format!("{relative} ({paper_auc})")));
            let mut points = vec![(0.0, 0.0)];
            let mut sorted: Vec<u64> = cell.iter().flatten().copied().collect();
            sorted.sort_unstable();
            for &f in &sorted {
                points.push((f as f64, success_ratio(&cell, f.saturating_sub(1))));
                points.push((f as f64, success_ratio(&cell, f)));
            }
            points.push((
                plan.max_submissions as f64,
                success_ratio(&cell, plan.max_submissions),
            ));
            chart = chart.line(Line::new(format!("ε = {epsilon}"), points));
        }
        table1.push(row1);
        table2.push(row2);
        table3.push(row3);
        fig3.push((
            mech,
            chart.save(&dir.join(format!("fig3-{}", mech.name())))?,
        ));
    }
    report
        .heading("Table 1: median first success time (submissions)")
        .paragraph("Ours (the paper's in brackets; `?`: cell lost in our text of the paper).")
        .table(&header_refs, table1)
        .heading("Table 2: success ratio")
        .paragraph(&format!(
            "Fraction of trials with FST ≤ {} (eq. 27).",
            plan.max_submissions
        ))
        .table(&header_refs, table2)
        .heading("Table 3: relative area under the success-ratio curve")
        .paragraph(&format!(
            "∫₀^N success_ratio(n) dn over the same for {}, N = {} (n/a where those trials \
             never succeeded).",
            if has_non_private {
                "the non-private row (as in the paper)"
            } else {
                "the row's own ε = ∞"
            },
            plan.max_submissions
        ))
        .table(&header_refs, table3)
        .heading("Fig. 3: success ratio against submissions");
    for (mech, files) in &fig3 {
        report.plot(&format!("{} success ratio", mech.label()), files);
    }

    let fig2: Vec<&(TrialSummary, Vec<(f64, f64)>)> =
        results.iter().filter(|(s, _)| s.fig2).collect();
    if plan.fig2_submissions > 0 {
        let mut chart = LineChart::new("Fig. 2: μ_n at ε = 1, |B| ∈ {1, 100}")
            .x_label("submissions")
            .y_label("average score μ_n")
            .legend(plotters::chart::SeriesLabelPosition::UpperLeft);
        let mut any = false;
        for (summary, curve) in fig2 {
            if curve.is_empty() || summary.applied != plan.fig2_submissions {
                continue;
            }
            any = true;
            chart = chart.line(Line::new(
                format!(
                    "{} |B| = {}",
                    summary.mechanism.label(),
                    summary.buffer_size
                ),
                curve.clone(),
            ));
        }
        if any {
            let files = chart.save(&dir.join("fig2"))?;
            report
                .heading("Fig. 2: average score with and without buffering (ε = 1)")
                .paragraph(
                    "The paper: buffering (|B| = 100) helps PRS and stalls Laplace, so the \
                     tables use |B| = 1 for Laplace and |B| = 100 for PRS.",
                )
                .plot("μ_n against submissions", &files);
        }
    }

    let total_submissions: u64 = results.iter().map(|(s, _)| s.applied).sum();
    let wall: f64 = start.elapsed().as_secs_f64();
    report.paragraph(&format!(
        "{} runs, {} submissions applied in {:.0} s ({:.0} submissions/s over all runs).",
        results.len(),
        total_submissions,
        wall,
        total_submissions as f64 / wall.max(1e-9)
    ));
    // Every setting that changes a number here, so that the command reproduces it.
    let epsilons: Vec<String> = plan.epsilons.iter().map(|e| e.slug()).collect();
    let mechanisms: Vec<String> = plan
        .mechanisms
        .iter()
        .map(|m| m.name().to_string())
        .collect();
    let optimizer = flag_value(&plan.optimizer);
    let command = format!(
        "cargo xtask suite pgc --trials {} --max-submissions {} --fig2-submissions {} \\\n    \
         --epsilons {} --mechanisms {} --optimizer {} --lr {} --workers {} --seed {}{}{}",
        plan.trials,
        plan.max_submissions,
        plan.fig2_submissions,
        epsilons.join(","),
        mechanisms.join(","),
        optimizer,
        plan.lr,
        plan.workers,
        plan.seed,
        if plan.bias { " --bias" } else { "" },
        if plan.sample_actions {
            " --sample-actions"
        } else {
            ""
        }
    ) + &match (&plan.transport, &args.redis) {
        (TransportChoice::Redis, Some(url)) => format!(" --transport redis --redis {url}"),
        (TransportChoice::Redis, None) => " --transport redis".to_string(),
        (TransportChoice::Inprocess, _) => String::new(),
    } + plan.noise_rng.reproduce_flag();
    let headline = headline(&plan, &results);
    headline.add_to(&mut report);
    report.reproduce([command]);
    let path = report.write().context("writing the PGC report")?;
    println!("wrote {}", path.display());
    Ok(SuiteOutcome {
        report: path,
        headline,
    })
}

/// The paper's headline (Tables 1–2): the learner succeeds without noise, and privacy costs
/// success. A mechanism *learns* when at least half its trials at ε = ∞ reach the success
/// criterion (eq. 26). Judged on the private mechanisms that ran at ε = ∞ and at a finite ε:
/// at least one learns, and every one that learns succeeds in a smaller share of its trials
/// at the smallest ε. One that does not learn cannot show the effect and is reported as such
/// (at the paper's setting none learns: docs/pgc.md). A failed trial counts as unsuccessful.
fn headline(plan: &Plan, results: &[(TrialSummary, Vec<(f64, f64)>)]) -> Headline {
    let ratio = |mech: MechanismKind, epsilon: Epsilon| {
        let trials: Vec<&TrialSummary> = results
            .iter()
            .map(|(s, _)| s)
            .filter(|s| s.mechanism == mech && s.epsilon == epsilon && !s.fig2)
            .collect();
        let successes = trials.iter().filter(|s| s.first_success.is_some()).count();
        (successes, trials.len())
    };
    let smallest = plan
        .epsilons
        .iter()
        .filter_map(|e| e.get())
        .min_by(f64::total_cmp)
        .and_then(|e| Epsilon::finite(e).ok());
    let mut measured = Vec::new();
    let (mut learners, mut visible) = (0, true);
    for &mech in plan
        .mechanisms
        .iter()
        .filter(|&&m| m != MechanismKind::None)
    {
        let Some(smallest) = smallest else { break };
        let (free, free_n) = ratio(mech, Epsilon::INFINITE);
        let (noisy, noisy_n) = ratio(mech, smallest);
        if free_n == 0 || noisy_n == 0 {
            continue;
        }
        let learns = 2 * free >= free_n;
        let line = format!(
            "{}: {free}/{free_n} trials succeed at ε = ∞, {noisy}/{noisy_n} at ε = {smallest}",
            mech.label()
        );
        if learns {
            learners += 1;
            // noisy/noisy_n < free/free_n, in integers.
            visible &= noisy * free_n < free * noisy_n;
            measured.push(line);
        } else {
            measured.push(format!("{line} (does not learn at ε = ∞: not judged)"));
        }
    }
    Headline {
        effect: "without noise the learner succeeds, and privacy costs success: at least one \
                 mechanism learns at ε = ∞ (half its trials succeed), and each that does \
                 succeeds in a smaller share of its trials at the smallest ε."
            .into(),
        measured: if measured.is_empty() {
            "no mechanism ran at both ε = ∞ and a finite ε".into()
        } else {
            measured.join("; ")
        },
        visible: visible && learners > 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use privrl_privacy::GradientMechanismConfig;

    #[derive(clap::Parser)]
    struct Cli {
        #[command(flatten)]
        args: PgcSuiteArgs,
    }

    fn parse(flags: &[&str]) -> PgcSuiteArgs {
        <Cli as clap::Parser>::parse_from(std::iter::once("pgc").chain(flags.iter().copied())).args
    }

    #[test]
    fn quick_matches_what_clap_parses() {
        let parsed = parse(&["--quick", "--seed", "3"]);
        let built = PgcSuiteArgs::quick(3, BackendChoice::default(), 0);
        assert_eq!(format!("{parsed:?}"), format!("{built:?}"));
    }

    #[test]
    fn optimizer_flags_reach_the_aggregator_config() {
        let paper = parse(&[]).plan();
        assert_eq!(paper.optimizer, OptimizerChoice::Sgd);
        assert_eq!(paper.lr, 0.5);
        assert_eq!(
            paper.mechanisms,
            vec![MechanismKind::Laplace, MechanismKind::Prs]
        );

        let plan = parse(&["--optimizer", "adam", "--mechanisms", "lap", "--bias"]).plan();
        assert_eq!(plan.lr, 0.005);
        assert_eq!(plan.mechanisms, vec![MechanismKind::Laplace]);
        let trial = Trial {
            plan,
            mech: MechanismKind::Laplace,
            epsilon: Epsilon::finite(2.0).unwrap(),
            buffer_size: 1,
            max_submissions: 10,
            stop_at_success: true,
            seed: 0,
            run_name: "t".into(),
            redis: None,
        };
        let config = trial.config();
        assert_eq!(config.a3c.optimizer, OptimizerKind::Adam);
        assert_eq!(config.a3c.lr, 0.005);
        assert!(config.a3c.bias);
        assert_eq!(
            config.mechanism,
            GradientMechanismConfig::laplace(Epsilon::finite(2.0).unwrap())
        );

        let lr = parse(&["--optimizer", "adam", "--lr", "0.01"]).plan().lr;
        assert_eq!(lr, 0.01);
        assert!(<Cli as clap::Parser>::try_parse_from(["pgc", "--mechanisms", "gauss"]).is_err());

        let plan = parse(&["--mechanisms", "none,prs"]).plan();
        assert_eq!(
            plan.mechanisms,
            vec![MechanismKind::None, MechanismKind::Prs]
        );
        let one = Epsilon::finite(1.0).unwrap();
        assert_eq!(
            MechanismKind::None.paper_default(Epsilon::INFINITE),
            GradientMechanismConfig::None
        );
        assert!(
            runs_at(MechanismKind::None, Epsilon::INFINITE) && !runs_at(MechanismKind::None, one)
        );
        // One parser for ε everywhere: numbers > 0 and the spellings of ∞.
        let plan = parse(&["--epsilons", "0.5,inf,∞"]).plan();
        assert_eq!(
            plan.epsilons,
            vec![
                Epsilon::finite(0.5).unwrap(),
                Epsilon::INFINITE,
                Epsilon::INFINITE
            ]
        );
        assert!(<Cli as clap::Parser>::try_parse_from(["pgc", "--epsilons", "0"]).is_err());
        assert_eq!(
            parse(&["--mechanisms", "lap"]).plan().mechanisms,
            vec![MechanismKind::Laplace]
        );
        assert_eq!(buffer_size(MechanismKind::Prs), 100);
    }
}

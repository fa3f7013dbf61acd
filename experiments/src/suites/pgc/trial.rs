//! One trial of a cell (or one Fig. 2 run): PGC-A3C with one mechanism at one ε, written to its
//! run directory with its μ_n curve and summary; and which cells the suite runs.

use anyhow::Result;
use burn::backend::Autodiff;
use burn::tensor::backend::Backend;
use privrl_agents::{run_pgc, AppliedSubmission};
use privrl_agents::{A3cConfig, InProcess, PgcConfig, RedisTransport, Transport};
use privrl_privacy::{Epsilon, MechanismKind};
use serde::{Deserialize, Serialize};

use super::plan::{Plan, TransportChoice};
use super::SUITE;
use crate::backend::BackendTask;
use crate::report::plot::{Line, LineChart};
use crate::run::RunDir;

/// One trial (or one Fig. 2 run).
#[derive(Clone)]
pub(super) struct Trial {
    pub(super) plan: Plan,
    pub(super) mech: MechanismKind,
    pub(super) epsilon: Epsilon,
    pub(super) buffer_size: usize,
    pub(super) max_updates: u64,
    pub(super) max_submissions: u64,
    pub(super) stop_at_success: bool,
    pub(super) seed: u64,
    pub(super) run_name: String,
    pub(super) redis: Option<String>,
}

/// What one trial's `summary.json` holds (read back by the leakage suite through
/// [`crate::summary::read_summaries`]).
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
            .with_max_updates(self.max_updates)
            .with_max_submissions(self.max_submissions)
            .with_stop_at_success(self.stop_at_success)
            .with_order(self.plan.order);
        let optimizer = self.plan.optimizer(self.mech);
        let learner = self
            .plan
            .setting(self.mech)
            .map_or_else(|| self.plan.learner.clone(), |s| s.learner());
        config.a3c = learner
            .apply(A3cConfig::pgc_paper())
            .with_workers(self.plan.workers)
            .with_optimizer(optimizer.optimizer.kind())
            .with_lr(optimizer.lr)
            .with_buffer_size(self.buffer_size);
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

#[cfg(test)]
mod tests {
    use super::super::setting::{buffer_size, runs_at};
    use super::*;
    use crate::suites::pgc::tests::{parse, Cli};
    use crate::suites::pgc::OptimizerChoice;
    use privrl_agents::OptimizerKind;
    use privrl_privacy::GradientMechanismConfig;

    /// A table trial of `mech` at `epsilon` with the paper's |B|.
    fn table_trial(plan: Plan, mech: MechanismKind, epsilon: Epsilon) -> Trial {
        Trial {
            plan,
            mech,
            epsilon,
            buffer_size: buffer_size(mech),
            max_updates: 10,
            max_submissions: u64::MAX,
            stop_at_success: true,
            seed: 0,
            run_name: "t".into(),
            redis: None,
        }
    }

    #[test]
    fn optimizer_flags_reach_the_aggregator_config() {
        let paper = parse(&[]).plan();
        for mech in [MechanismKind::Laplace, MechanismKind::Prs] {
            let o = paper.optimizer(mech);
            assert_eq!((o.optimizer, o.lr), (OptimizerChoice::Sgd, 0.5));
        }
        assert_eq!(
            paper.mechanisms,
            vec![MechanismKind::Laplace, MechanismKind::Prs]
        );

        // Per mechanism: PRS keeps the paper's SGD while Laplace runs Adam, and the reverse.
        let mixed = parse(&["--optimizer", "laplace=adam,prs=sgd", "--lr", "prs=0.1"]).plan();
        let (lap, prs) = (
            mixed.optimizer(MechanismKind::Laplace),
            mixed.optimizer(MechanismKind::Prs),
        );
        assert_eq!((lap.optimizer, lap.lr), (OptimizerChoice::Adam, 0.005));
        assert_eq!((prs.optimizer, prs.lr), (OptimizerChoice::Sgd, 0.1));
        let prs_trial = table_trial(
            parse(&["--optimizer", "sgd,laplace=adam"]).plan(),
            MechanismKind::Prs,
            Epsilon::INFINITE,
        );
        assert_eq!(prs_trial.config().a3c.optimizer, OptimizerKind::Sgd);
        assert_eq!(prs_trial.config().a3c.lr, 0.5);
        assert!(
            <Cli as clap::Parser>::try_parse_from(["pgc", "--optimizer", "gauss=adam"]).is_err()
        );

        let plan = parse(&["--optimizer", "adam", "--mechanisms", "lap", "--bias"]).plan();
        assert_eq!(plan.optimizer(MechanismKind::Laplace).lr, 0.005);
        assert_eq!(plan.mechanisms, vec![MechanismKind::Laplace]);
        let trial = table_trial(plan, MechanismKind::Laplace, Epsilon::finite(2.0).unwrap());
        let config = trial.config();
        assert_eq!(config.a3c.optimizer, OptimizerKind::Adam);
        assert_eq!(config.a3c.lr, 0.005);
        assert!(config.a3c.bias);
        assert_eq!(
            config.mechanism,
            GradientMechanismConfig::laplace(Epsilon::finite(2.0).unwrap())
        );

        let lr = parse(&["--optimizer", "adam", "--lr", "0.01"])
            .plan()
            .optimizer(MechanismKind::Prs)
            .lr;
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

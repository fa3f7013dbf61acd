//! `cargo xtask pgc ...`: PGC-A3C as separate processes over Redis Streams (an aggregator and
//! any number of agent processes), the clean-up of a run's keys, and the throughput benchmark.

use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use burn::backend::Autodiff;
use burn::tensor::backend::Backend;
use clap::{Args, Subcommand};
use privrl_agents::{initial_parameters, run_agent, run_pgc, SubmissionOrder};
use privrl_agents::{
    A3cConfig, Aggregator, InProcess, PgcAgent, PgcConfig, PgcError, RedisTransport, Submission,
    Transport,
};
use serde::Serialize;

use privrl_experiments::backend::{dispatch, BackendChoice, BackendTask};
use privrl_experiments::mechanism_arg::{MechanismParser, PGC_MECHANISMS};
use privrl_experiments::noise_rng::NoiseRng;
use privrl_experiments::report::{Cell, Report};
use privrl_experiments::run::{suite_dir, write_json};
use privrl_experiments::suites::pgc::{for_mechanism, LearnerArgs, OptimizerChoice, PerMechanism};
use privrl_experiments::sweep::progress_bar;
use privrl_privacy::{Epsilon, GradientMechanismConfig, MechanismKind};

/// `pgc agents`: abort after this many accepted sends per worker (fault injection for the
/// audit-trail test; unset in any real run).
pub const CRASH_AFTER_SENDS: &str = "PRIVRL_FAULT_CRASH_AFTER_SENDS";

/// The PGC-A3C parameters shared by the aggregator, the agents and the benchmark.
#[derive(Args, Clone, Debug, Serialize)]
pub struct PgcParams {
    /// Mechanism Q: none (plain A3C), laplace (Algorithm 2) or prs (Algorithm 3).
    #[arg(
        long,
        value_parser = MechanismParser(&PGC_MECHANISMS),
        default_value_t = MechanismKind::Laplace
    )]
    pub mechanism: MechanismKind,
    /// Privacy budget ε of one agent (a number > 0, or `inf`).
    #[arg(long, default_value = "1")]
    pub epsilon: Epsilon,
    /// Clipping size C (default: the paper's 0.01 for Laplace, 1 for PRS).
    #[arg(long)]
    pub clip: Option<f64>,
    /// Aggregator buffer MAX_BUF = |B| (default: the paper's 1 for Laplace and none, 100
    /// for PRS).
    #[arg(long)]
    pub buffer_size: Option<usize>,
    /// Submissions per agent T, each spending ε/T (Section 3.2.1).
    #[arg(long, default_value_t = 1)]
    pub rounds: usize,
    /// How the aggregator steps θ with the mean of its buffer, for all mechanisms (`sgd`,
    /// `adam`) or per mechanism (`laplace=adam,prs=sgd`; later entries win), as in `suite
    /// pgc`. `sgd` is eq. 22; `adam` takes an Adam step on the same noisy mean
    /// (post-processing, no privacy spent). Default sgd.
    #[arg(long, value_delimiter = ',')]
    pub optimizer: Vec<PerMechanism<OptimizerChoice>>,
    /// Learning rate η, for all mechanisms or per mechanism (`prs=0.01`), as in `suite pgc`.
    /// Default: 0.5 with sgd (the paper), 0.005 with adam.
    #[arg(long, value_delimiter = ',')]
    pub lr: Vec<PerMechanism<f64>>,
    /// The learner's factors (the paper's setting by default).
    #[command(flatten)]
    pub learner: LearnerArgs,
    /// Where the agents' mechanism noise comes from: `seeded` (from each agent's seed) or
    /// `secure` (the OS CSPRNG; what a deployment should use).
    #[arg(long, value_enum, default_value_t = NoiseRng::Seeded)]
    pub noise_rng: NoiseRng,
}

impl PgcParams {
    /// The run configuration (the paper's Section 4 setting with these overrides).
    pub fn config(&self) -> PgcConfig {
        let mechanism = match (self.mechanism.paper_default(self.epsilon), self.clip) {
            (GradientMechanismConfig::Laplace { epsilon, .. }, Some(clip)) => {
                GradientMechanismConfig::Laplace { epsilon, clip }
            }
            (GradientMechanismConfig::Prs { epsilon, .. }, Some(clip)) => {
                GradientMechanismConfig::Prs { epsilon, clip }
            }
            (paper, _) => paper,
        };
        let mut config = PgcConfig::paper(mechanism).with_rounds(self.rounds);
        let buffer = self.buffer_size.unwrap_or(config.a3c.buffer_size);
        let optimizer =
            for_mechanism(&self.optimizer, self.mechanism).unwrap_or(OptimizerChoice::Sgd);
        let lr = for_mechanism(&self.lr, self.mechanism).unwrap_or(optimizer.default_lr());
        config.a3c = self
            .learner
            .apply(config.a3c)
            .with_buffer_size(buffer)
            .with_lr(lr)
            .with_optimizer(optimizer.kind());
        config.with_noise_rng(self.noise_rng.mode())
    }
}

/// Connection to a PGC run on Redis.
#[derive(Args, Clone, Debug, Serialize)]
pub struct RedisArgs {
    /// Redis URL: `redis://[user[:password]@]host[:port][/db]` (the user goes to AUTH for
    /// Redis ACLs), or `rediss://…` for TLS when built with the `redis-tls` feature.
    #[arg(long)]
    pub redis: String,
    /// The run's id: all its keys live under privrl:pgc:{ID}:, so runs with different ids
    /// share a server without seeing each other. Aggregator and agents must agree; remove a
    /// finished run's keys with `pgc cleanup --run-id ID`.
    #[arg(long)]
    pub run_id: String,
    /// Seconds a lost connection keeps trying to reconnect (with exponential backoff) before
    /// the command fails.
    #[arg(long, default_value_t = 30.0)]
    pub redis_timeout: f64,
}

impl RedisArgs {
    /// Connects to the run.
    pub fn connect(&self) -> Result<RedisTransport> {
        anyhow::ensure!(
            self.redis_timeout.is_finite() && self.redis_timeout > 0.0,
            "--redis-timeout must be a number of seconds > 0, got {}",
            self.redis_timeout
        );
        Ok(RedisTransport::connect_with_timeout(
            &self.redis,
            &self.run_id,
            Duration::from_secs_f64(self.redis_timeout),
        )?)
    }
}

/// `cargo xtask pgc ...`.
#[derive(Subcommand, Debug)]
pub enum PgcCommand {
    /// The aggregator: reads noisy gradients from Redis, applies eq. 22, publishes θ;
    /// checkpoints after every update and resumes from the checkpoint when restarted.
    Aggregator(AggregatorArgs),
    /// Agent processes: copy θ from Redis, play CartPole-v0 with a private gravity, submit
    /// Q(gradient).
    Agents(AgentsArgs),
    /// Submissions per second, in-process and over Redis on loopback; writes
    /// runs/bench/pgc/report.md.
    Bench(PgcBenchArgs),
    /// Deletes all keys of a run (stream, dead letters, θ, epoch, agents' sequences, closed
    /// flag), so that its id can be used again.
    Cleanup(CleanupArgs),
}

/// Arguments of `pgc cleanup`.
#[derive(Args, Debug, Clone, Serialize)]
pub struct CleanupArgs {
    #[command(flatten)]
    pub redis: RedisArgs,
}

/// Arguments of `pgc aggregator`.
#[derive(Args, Debug, Clone, Serialize)]
pub struct AggregatorArgs {
    #[command(flatten)]
    pub redis: RedisArgs,
    #[command(flatten)]
    pub params: PgcParams,
    /// Checkpoint file (JSON), written durably after every update; resumed from if it exists.
    /// Without it, the run id must be new on the server.
    #[arg(long)]
    pub checkpoint: PathBuf,
    /// Stop (and close the run) once this many submissions are applied; a multiple of the
    /// buffer size |B|, since only whole buffers are applied.
    #[arg(long, default_value_t = 90_000)]
    pub submissions: u64,
    /// Also stop after this many model updates (eq. 22), the paper's cutoff (Section 4.2: 90,000
    /// updates) that `suite pgc --max-updates` applies.
    #[arg(long)]
    pub max_updates: Option<u64>,
    /// Fail if no submission arrives for this many seconds (agents gone), rather than wait
    /// forever.
    #[arg(long, default_value_t = 600.0)]
    pub idle_timeout: f64,
    /// Also stop at the first success (μ_n ≥ 195, eq. 26).
    #[arg(long)]
    pub stop_at_success: bool,
    /// Seed of θ₀.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Write the final state's counters here as JSON.
    #[arg(long)]
    pub summary: Option<PathBuf>,
    /// Backend (only θ₀'s initialisation uses it).
    #[arg(long, value_enum, default_value_t = BackendChoice::default())]
    pub backend: BackendChoice,
}

/// Arguments of `pgc agents`.
#[derive(Args, Debug, Clone, Serialize)]
pub struct AgentsArgs {
    #[command(flatten)]
    pub redis: RedisArgs,
    #[command(flatten)]
    pub params: PgcParams,
    /// Number of agents this process runs (each submits `--rounds` times); without it, run
    /// until the aggregator closes the run.
    #[arg(long)]
    pub count: Option<u64>,
    /// Agent threads (the paper: 9).
    #[arg(long, default_value_t = 9)]
    pub workers: usize,
    /// Seed of the agents' environments, exploration and mechanism noise.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Name of this process in submission ids (default: pid and start time); must differ
    /// between agent processes of one run. A process restarted under the same name (and
    /// --workers) resumes each worker's sequence, and with --count only makes up the rest.
    #[arg(long)]
    pub name: Option<String>,
    /// Write `{"sent": n}` here as JSON (n: submissions sent by this process).
    #[arg(long)]
    pub summary: Option<PathBuf>,
    /// Append every submission to this file as JSON lines, an audit trail of what this
    /// process released: a `release` line written and fsynced before the send, a `sent` line
    /// with the stream id after it (a `release` without one may have been sent: count it).
    #[arg(long)]
    pub sent_log: Option<PathBuf>,
    /// Backend of the agents' gradients.
    #[arg(long, value_enum, default_value_t = BackendChoice::default())]
    pub backend: BackendChoice,
}

/// Arguments of `pgc bench`.
#[derive(Args, Debug, Clone, Serialize)]
pub struct PgcBenchArgs {
    /// Redis URL for the Redis rows (default: $PRIVRL_REDIS_URL; skipped without either).
    #[arg(long)]
    pub redis: Option<String>,
    /// Submissions per measurement.
    #[arg(long, default_value_t = 2000)]
    pub submissions: u64,
    /// Agent threads.
    #[arg(long, default_value_t = 9)]
    pub workers: usize,
    /// Seed.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Backend.
    #[arg(long, value_enum, default_value_t = BackendChoice::default())]
    pub backend: BackendChoice,
}

/// Runs a `pgc` subcommand.
pub fn run(command: PgcCommand) -> Result<()> {
    match command {
        PgcCommand::Aggregator(args) => dispatch(args.backend, args),
        PgcCommand::Agents(args) => dispatch(args.backend, args),
        PgcCommand::Cleanup(args) => {
            let transport = args.redis.connect()?;
            let deleted = transport.delete_run()?;
            println!("run `{}`: deleted {deleted} keys", args.redis.run_id);
            Ok(())
        }
        PgcCommand::Bench(mut args) => {
            if args.redis.is_none() {
                args.redis = std::env::var("PRIVRL_REDIS_URL")
                    .ok()
                    .filter(|u| !u.is_empty());
            }
            dispatch(args.backend, args)
        }
    }
}

/// What `pgc aggregator --summary` writes.
#[derive(Debug, Serialize)]
struct AggregatorSummary {
    applied: u64,
    updates: u64,
    duplicates: u64,
    rejected: u64,
    /// Entries in the run's dead-letter stream (malformed ones and refused submissions).
    dead_letters: u64,
    /// Entries left in the submissions stream after trimming.
    stream_len: u64,
    epoch: u64,
    first_success: Option<u64>,
}

impl BackendTask for AggregatorArgs {
    type Output = ();

    fn run<B: Backend>(self, device: B::Device) -> Result<()> {
        let config = self.checked_config()?;
        let run_id = self.redis.run_id.as_str();
        let transport = self.redis.connect()?;
        let resuming = self.checkpoint.exists();
        let theta = initial_parameters::<B>(&config, self.seed, &device)?;
        let mut aggregator = Aggregator::new(&config, theta)?.with_checkpoint(&self.checkpoint)?;
        aggregator.bind_run(run_id)?;
        self.check_resume(&transport, &aggregator, resuming)?;
        if !resuming {
            // Before claiming: a crash from here on restarts as a resume.
            aggregator.save(&transport)?;
        }
        let epoch = transport.claim()?;
        let resumed = aggregator.state().applied;
        transport.publish(&aggregator.parameters())?;
        self.apply_submissions(&config, &transport, &mut aggregator, resumed)?;
        transport.close()?;
        self.finish(&transport, &aggregator, epoch, resumed)
    }
}

impl AggregatorArgs {
    /// The run's configuration, checked: `--submissions` a whole number of buffers, a
    /// positive `--idle-timeout`.
    fn checked_config(&self) -> Result<PgcConfig> {
        let mut config = self.params.config().with_max_submissions(self.submissions);
        if let Some(max_updates) = self.max_updates {
            config = config.with_max_updates(max_updates);
        }
        config.validate()?;
        let buffer = config.a3c.buffer_size as u64;
        if !self.submissions.is_multiple_of(buffer) {
            return Err(PgcError::InvalidParameter {
                name: "submissions",
                value: format!("{} with |B| = {buffer}", self.submissions),
                expected: "a multiple of the buffer size (only whole buffers are applied)",
            }
            .into());
        }
        anyhow::ensure!(
            self.idle_timeout.is_finite() && self.idle_timeout > 0.0,
            "--idle-timeout must be a number of seconds > 0, got {}",
            self.idle_timeout
        );
        Ok(config)
    }

    /// Refuses a new run whose id the server already has, and a resume whose run the server
    /// lost.
    fn check_resume(
        &self,
        transport: &RedisTransport,
        aggregator: &Aggregator,
        resuming: bool,
    ) -> Result<()> {
        let run_id = self.redis.run_id.as_str();
        let run_exists = transport.run_exists()?;
        let state = aggregator.state();
        if !resuming && run_exists {
            return Err(PgcError::RunExists {
                run_id: run_id.into(),
            }
            .into());
        }
        if resuming && !run_exists && (state.applied > 0 || state.version > 0) {
            return Err(PgcError::RunLost {
                run_id: run_id.into(),
                message: format!(
                    "the checkpoint {} has {} submissions applied, but the server has no \
                     state for the run (cleaned up, or Redis lost its data)",
                    self.checkpoint.display(),
                    state.applied
                ),
            }
            .into());
        }
        Ok(())
    }

    /// Applies submissions until `--submissions`, the update cutoff or (with
    /// `--stop-at-success`) the first success; fails after `--idle-timeout` without any.
    fn apply_submissions(
        &self,
        config: &PgcConfig,
        transport: &RedisTransport,
        aggregator: &mut Aggregator,
        resumed: u64,
    ) -> Result<()> {
        let run_id = self.redis.run_id.as_str();
        let buffer = config.a3c.buffer_size as u64;
        let bar = progress_bar(self.submissions, "applied");
        bar.set_position(resumed.min(self.submissions));
        let idle = Duration::from_secs_f64(self.idle_timeout);
        let mut last_activity = Instant::now();
        let activity = |a: &Aggregator| {
            let s = a.state();
            s.applied + s.duplicates + s.rejected + a.buffered() as u64
        };
        loop {
            let state = aggregator.state();
            if state.applied >= self.submissions
                || state.version >= config.max_updates
                || (self.stop_at_success && state.first_success.is_some())
            {
                break;
            }
            // Only what whole buffers up to --submissions can take.
            let update_room = (config.max_updates - state.version).saturating_mul(buffer);
            let room = (self.submissions - state.applied)
                .min(update_room)
                .saturating_sub(aggregator.buffered() as u64)
                .min(256);
            let before = activity(aggregator);
            let applied = aggregator.poll(transport, room as usize, Duration::from_millis(200))?;
            bar.inc(applied.len() as u64);
            if activity(aggregator) != before {
                last_activity = Instant::now();
            } else if last_activity.elapsed() > idle {
                anyhow::bail!(
                    "run `{run_id}`: no submission for {:?} with {} of {} applied; are the \
                     agents running? (the checkpoint {} resumes the run)",
                    idle,
                    aggregator.state().applied,
                    self.submissions,
                    self.checkpoint.display()
                );
            }
        }
        bar.finish_and_clear();
        Ok(())
    }

    /// Writes `--summary` and prints the run's outcome.
    fn finish(
        &self,
        transport: &RedisTransport,
        aggregator: &Aggregator,
        epoch: u64,
        resumed: u64,
    ) -> Result<()> {
        let run_id = self.redis.run_id.as_str();
        let state = aggregator.state();
        let summary = AggregatorSummary {
            applied: state.applied,
            updates: state.version,
            duplicates: state.duplicates,
            rejected: state.rejected,
            dead_letters: transport.dead_letters()?,
            stream_len: transport.stream_len()?,
            epoch,
            first_success: state.first_success,
        };
        if let Some(path) = &self.summary {
            write_json(path, &summary)?;
        }
        println!(
            "run `{run_id}` (epoch {epoch}): applied {} submissions in {} updates (resumed at \
             {resumed}; {} duplicates skipped, {} dead letters); first success: {}",
            summary.applied,
            summary.updates,
            summary.duplicates,
            summary.dead_letters,
            summary.first_success.map_or("-".into(), |f| f.to_string())
        );
        Ok(())
    }
}

impl BackendTask for AgentsArgs {
    type Output = ();

    fn run<B: Backend>(self, device: B::Device) -> Result<()> {
        anyhow::ensure!(self.workers >= 1, "--workers must be >= 1");
        let config = self.params.config();
        config.validate()?;
        let name = self.name.clone().unwrap_or_else(|| {
            let nanos = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.subsec_nanos());
            format!("p{}-{nanos}", std::process::id())
        });
        let rounds = config.rounds as u64;
        let per_worker: Vec<Option<u64>> = (0..self.workers as u64)
            .map(|i| {
                self.count.map(|c| {
                    let agents = c / self.workers as u64 + u64::from(i < c % self.workers as u64);
                    agents * rounds
                })
            })
            .collect();
        let sent_log = match &self.sent_log {
            Some(path) => Some(Arc::new(Mutex::new(
                std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(path)
                    .with_context(|| format!("opening {}", path.display()))?,
            ))),
            None => None,
        };
        // Fault injection for the audit-trail test (xtask/tests/pgc_redis.rs): each worker's
        // transport aborts the process after that many accepted sends.
        let crash_after_sends = std::env::var(CRASH_AFTER_SENDS)
            .ok()
            .map(|n| n.parse::<u64>())
            .transpose()
            .with_context(|| format!("{CRASH_AFTER_SENDS} must be a count"))?;
        let stop = AtomicBool::new(false);
        let sent: u64 = std::thread::scope(|scope| -> Result<u64> {
            let handles: Vec<_> = per_worker
                .iter()
                .enumerate()
                .map(|(i, &count)| {
                    let (config, name, device, stop) = (&config, &name, &device, &stop);
                    let redis = &self.redis;
                    let sent_log = sent_log.clone();
                    let seed = self.seed.wrapping_mul(1000).wrapping_add(i as u64);
                    scope.spawn(move || -> Result<u64> {
                        let mut transport = redis.connect()?;
                        if let Some(log) = sent_log {
                            transport = transport.with_sent_log(log);
                        }
                        if let Some(sends) = crash_after_sends {
                            transport = transport.with_crash_after_sends(sends);
                        }
                        let mut agent = PgcAgent::<Autodiff<B>>::new(
                            config,
                            format!("{name}-w{i}"),
                            seed,
                            device,
                        )?;
                        Ok(run_agent(&mut agent, &transport, count, stop)?)
                    })
                })
                .collect();
            let mut total = 0;
            for handle in handles {
                total += handle
                    .join()
                    .map_err(|_| anyhow::anyhow!("an agent thread panicked"))??;
            }
            Ok(total)
        })?;
        if let Some(path) = &self.summary {
            write_json(path, &serde_json::json!({ "sent": sent }))?;
        }
        println!("sent {sent} submissions");
        Ok(())
    }
}

/// One row of the benchmark.
#[derive(Debug, Serialize)]
struct BenchRow {
    transport: &'static str,
    what: &'static str,
    submissions: u64,
    seconds: f64,
    per_second: f64,
}

/// Transport alone: `n` prepared submissions sent, then received and acknowledged.
fn transport_only(transport: &dyn Transport, n: u64) -> Result<f64> {
    let submission = Submission {
        source: "bench".into(),
        seq: 1,
        version: 0,
        score: 10.0,
        gradient: vec![0.001; 112],
    };
    let start = Instant::now();
    for seq in 1..=n {
        transport.submit(&Submission {
            seq,
            ..submission.clone()
        })?;
    }
    let mut received = 0;
    while received < n {
        let batch = transport.receive(256, Duration::from_millis(500))?;
        anyhow::ensure!(
            !batch.is_empty(),
            "lost submissions: {received} of {n} came back"
        );
        received += batch.len() as u64;
        let tags: Vec<String> = batch.into_iter().map(|d| d.tag).collect();
        transport.acknowledge(&tags)?;
    }
    Ok(start.elapsed().as_secs_f64())
}

impl BackendTask for PgcBenchArgs {
    type Output = ();

    fn run<B: Backend>(self, device: B::Device) -> Result<()> {
        let config = PgcConfig::paper(GradientMechanismConfig::laplace(
            Epsilon::finite(1.0).unwrap(),
        ))
        .with_a3c(A3cConfig::pgc_paper().with_workers(self.workers))
        .with_max_submissions(self.submissions)
        .with_stop_at_success(false)
        // The asynchronous system is what is measured (round robin publishes θ per submission).
        .with_order(SubmissionOrder::Arrival);
        let mut rows = Vec::new();
        let mut measure = |name: &'static str, transport: &dyn Transport| -> Result<()> {
            let seconds = transport_only(transport, self.submissions)?;
            rows.push(BenchRow {
                transport: name,
                what: "transport only (submit, receive, ack)",
                submissions: self.submissions,
                seconds,
                per_second: self.submissions as f64 / seconds,
            });
            let outcome = run_pgc::<Autodiff<B>>(&config, transport, self.seed, &device, |_| {})?;
            rows.push(BenchRow {
                transport: name,
                what: "PGC-A3C (episode, gradient, Laplace, eq. 22)",
                submissions: outcome.applied,
                seconds: outcome.wall_s,
                per_second: outcome.applied as f64 / outcome.wall_s,
            });
            Ok(())
        };
        measure("in-process", &InProcess::new())?;
        if let Some(url) = &self.redis {
            let nanos = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos());
            let run_id = format!("bench-{}-{nanos}", std::process::id());
            let transport = RedisTransport::aggregator(url, &run_id)
                .with_context(|| format!("connecting to {url}"))?;
            let result = measure("redis (loopback)", &transport);
            transport.delete_run()?;
            result?;
        }
        let dir = suite_dir("bench")?.join("pgc");
        std::fs::create_dir_all(&dir)?;
        write_json(&dir.join("pgc.json"), &rows)?;
        let mut report = Report::new(&dir, "PGC-A3C throughput");
        report.paragraph(&format!(
            "{} submissions per row, {} agent threads, Laplace ε = 1 with |B| = 1, backend \
             `{}`, {} cores.",
            self.submissions,
            self.workers,
            self.backend,
            std::thread::available_parallelism().map_or(1, |n| n.get())
        ));
        report.table(
            &[
                "transport",
                "what",
                "submissions",
                "seconds",
                "submissions/s",
            ],
            rows.iter()
                .map(|r| {
                    vec![
                        Cell::from(r.transport),
                        Cell::from(r.what),
                        Cell::from(r.submissions),
                        Cell::from(r.seconds),
                        Cell::from(r.per_second),
                    ]
                })
                .collect(),
        );
        report.reproduce(["cargo xtask pgc bench --redis redis://127.0.0.1:6390/"]);
        let path = report.write()?;
        for r in &rows {
            println!(
                "{:<18} {:<46} {:>8.0} submissions/s",
                r.transport, r.what, r.per_second
            );
        }
        println!("wrote {}", path.display());
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;
    use privrl_agents::{Exploration, GreedyAction, LossReduction, OptimizerKind, RewardScheme};

    use super::*;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        params: PgcParams,
    }

    fn config(args: &[&str]) -> PgcConfig {
        Cli::try_parse_from(std::iter::once("pgc").chain(args.iter().copied()))
            .unwrap()
            .params
            .config()
    }

    /// The Redis commands take `suite pgc`'s learner and per-mechanism optimiser flags, with the
    /// same resolution (the entry for the run's mechanism, else the one for all; η by optimiser).
    #[test]
    fn redis_mode_flags_reach_the_config_like_the_suites() {
        let paper = config(&[]);
        assert_eq!(paper.a3c.optimizer, OptimizerKind::Sgd);
        assert_eq!((paper.a3c.lr, paper.a3c.buffer_size), (0.5, 1));
        assert!(!paper.a3c.bias);
        let prs = config(&[
            "--mechanism",
            "prs",
            "--optimizer",
            "adam,prs=sgd",
            "--lr",
            "laplace=0.1,prs=0.02",
            "--actions",
            "sampled",
            "--bias",
            "--reward",
            "sparse",
            "--loss",
            "mean",
        ]);
        assert_eq!(prs.a3c.optimizer, OptimizerKind::Sgd);
        assert_eq!((prs.a3c.lr, prs.a3c.buffer_size), (0.02, 100));
        assert!(prs.a3c.bias);
        assert_eq!(prs.a3c.reward, RewardScheme::Sparse);
        assert_eq!(prs.a3c.loss_reduction, LossReduction::Mean);
        assert!(matches!(
            prs.a3c.exploration,
            Exploration::EpsilonGreedy {
                greedy: GreedyAction::Sample,
                ..
            }
        ));
        // Adam for Laplace without an η: Adam's default.
        let laplace = config(&["--optimizer", "laplace=adam"]);
        assert_eq!(
            (laplace.a3c.optimizer, laplace.a3c.lr),
            (OptimizerKind::Adam, 0.005)
        );
        assert!(Cli::try_parse_from(["pgc", "--optimizer", "rmsprop"]).is_err());
    }
}

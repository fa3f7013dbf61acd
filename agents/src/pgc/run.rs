//! A whole PGC-A3C run in one process: agent threads and the aggregating thread.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use burn::tensor::backend::AutodiffBackend;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::Serialize;

use super::ordered::{run_agent_in_order, RoundRobin};
use super::{
    initial_parameters, run_agent, Aggregator, AppliedSubmission, PgcAgent, PgcConfig, PgcError,
    SubmissionOrder, Transport,
};

/// The result of [`run_pgc`].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PgcOutcome {
    /// First success time (eq. 26), `None` for ∞.
    pub first_success: Option<u64>,
    /// Submissions applied.
    pub applied: u64,
    /// Submissions sent by the agents (some may be left unapplied at the stop).
    pub sent: u64,
    /// Updates of θ.
    pub updates: u64,
    /// Wall-clock seconds.
    pub wall_s: f64,
    /// θ at the end, flattened (with [`SubmissionOrder::RoundRobin`] a function of the
    /// config and the seed only).
    #[serde(skip)]
    pub theta: Vec<f32>,
}

/// A whole PGC-A3C run in one process: `config.a3c.workers` agent threads submit through
/// `transport`, the calling thread aggregates until `max_updates` updates (the paper's cutoff)
/// or `max_submissions` submissions are applied, or the first success with `stop_at_success`.
/// The aggregator never receives more than the cutoff can apply, so a success counts only if
/// its window completes within the cutoff. `on_applied` sees every applied submission in order.
///
/// `config.order` says in which order submissions are applied: [`SubmissionOrder::RoundRobin`]
/// (the default: the run, θ included, is a function of the config and the seed) or
/// [`SubmissionOrder::Arrival`] (asynchronous, so it also depends on thread scheduling).
/// Only `sent` (how far the agents got ahead before the stop) varies between repeats in
/// round-robin order.
pub fn run_pgc<B: AutodiffBackend>(
    config: &PgcConfig,
    transport: &dyn Transport,
    seed: u64,
    device: &B::Device,
    mut on_applied: impl FnMut(&AppliedSubmission),
) -> Result<PgcOutcome, PgcError> {
    config.validate()?;
    let start = Instant::now();
    let mut seeds = ChaCha8Rng::seed_from_u64(seed);
    let theta = initial_parameters::<B>(config, seeds.random(), device)?;
    let mut aggregator = Aggregator::new(config, theta)?;
    let mut agents = (0..config.a3c.workers)
        .map(|i| PgcAgent::<B>::new(config, format!("agent-{i}"), seeds.random(), device))
        .collect::<Result<Vec<_>, _>>()?;
    let sources: Vec<String> = agents.iter().map(|a| a.source().to_string()).collect();
    let round_robin = RoundRobin::new(transport, &sources);
    let (transport, ordered): (&dyn Transport, _) = match config.order {
        SubmissionOrder::RoundRobin => (&round_robin, true),
        SubmissionOrder::Arrival => (transport, false),
    };
    transport.publish(&aggregator.parameters())?;
    let stop = AtomicBool::new(false);
    let (result, sent) = std::thread::scope(|scope| {
        let handles: Vec<_> = agents
            .iter_mut()
            .enumerate()
            .map(|(i, agent)| {
                let (stop, round_robin) = (&stop, &round_robin);
                scope.spawn(move || {
                    if ordered {
                        run_agent_in_order(agent, i as u64, round_robin, stop)
                    } else {
                        run_agent(agent, transport, None, stop)
                    }
                })
            })
            .collect();
        let result = (|| -> Result<(), PgcError> {
            loop {
                let state = aggregator.state();
                if state.applied >= config.max_submissions
                    || state.version >= config.max_updates
                    || (config.stop_at_success && state.first_success.is_some())
                {
                    return Ok(());
                }
                // In round-robin order one agent that stopped (on an error) stalls the rest.
                let finished = |h: &std::thread::ScopedJoinHandle<_>| h.is_finished();
                if handles.iter().all(finished) || (ordered && handles.iter().any(finished)) {
                    return Ok(());
                }
                // What the remaining updates can take, less what is already buffered.
                let update_room = (config.max_updates - state.version)
                    .saturating_mul(config.a3c.buffer_size as u64)
                    .saturating_sub(aggregator.buffered() as u64);
                let room = (config.max_submissions - state.applied)
                    .min(update_room)
                    .min(256) as usize;
                for applied in aggregator.poll(transport, room, Duration::from_millis(20))? {
                    on_applied(&applied);
                }
            }
        })();
        stop.store(true, Ordering::Relaxed);
        let _ = transport.close();
        let mut sent = 0;
        let mut agent_error = None;
        for handle in handles {
            match handle.join().expect("a PGC agent thread panicked") {
                Ok(n) => sent += n,
                Err(e) => {
                    agent_error.get_or_insert(e);
                }
            }
        }
        (result.and(agent_error.map_or(Ok(()), Err)), sent)
    });
    result?;
    let state = aggregator.state();
    Ok(PgcOutcome {
        first_success: state.first_success,
        applied: state.applied,
        sent,
        updates: state.version,
        wall_s: start.elapsed().as_secs_f64(),
        theta: state.theta.clone(),
    })
}

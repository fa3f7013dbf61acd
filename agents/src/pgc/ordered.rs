//! Deterministic submission order for in-process runs: [`SubmissionOrder`] and the
//! [`RoundRobin`] wrapper around a transport that [`super::run_pgc`] uses for it.
//!
//! With W asynchronous agent threads a seed fixes every agent's episodes and noise, but not
//! which θ each agent copies nor the order in which the aggregator applies the submissions:
//! both follow the scheduler, so a run depends on machine load (docs/pgc.md measured the
//! paper's setting at 0/3 successes on a loaded machine and 3/3 on a quieter one, same seeds).
//!
//! `RoundRobin` fixes both. Number the submissions s = 0, 1, 2, … in the order
//! agent 0's first, agent 1's first, …, agent W−1's first, agent 0's second, …, i.e.
//! submission k (1-based) of agent i is s = (k − 1)·W + i. The aggregator applies them in
//! that order, and submission s is computed at the θ published after the first
//! max(0, s − W + 1) submissions were received, so each gradient is exactly W − 1
//! submissions stale (fewer in the first round, which copies the initial θ like every
//! agent of an asynchronous run does).
//!
//! This is the steady state of Algorithm 1 with W agents whose episodes take equal time: each
//! agent copies θ right after its previous submission, while the other W − 1 agents each
//! have one submission in flight, so θ′ misses exactly those W − 1. Eq. 22 and the buffer B
//! are unchanged (with |B| > 1 the θ that an agent copies changes only at updates, as in the
//! asynchronous run), and so are the exploration clock (the published submission count) and
//! the privacy analysis: each agent still releases one ε-LDP gradient per episode, and θ is
//! post-processing of the releases whatever their order (Lemma 4). What it removes is the
//! dependence of staleness on thread timing: in an asynchronous run short episodes come back
//! sooner, and how stale a gradient is depends on the machine. A lock-step scheme in which
//! all W agents copy the same θ and the aggregator applies their W gradients one by one would
//! be deterministic too, but its staleness varies from 0 to W − 1 within each round, which no
//! asynchronous schedule with equal-length episodes produces.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

use burn::tensor::backend::AutodiffBackend;
use serde::{Deserialize, Serialize};

use super::{Delivery, Parameters, PgcAgent, PgcError, Submission, Transport};

/// In which order an in-process run's aggregator applies submissions.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SubmissionOrder {
    /// Round robin over the agents, each gradient computed W − 1 submissions stale
    /// ([`RoundRobin`]): a seed fixes the whole run, bytes included, whatever the load.
    #[default]
    RoundRobin,
    /// As they arrive, agents copying whatever θ is current (asynchronous A3C): the order and
    /// the staleness follow thread scheduling, so a run depends on machine load. Runs over
    /// Redis with agents in other processes are always in this order.
    Arrival,
}

/// What the agents wait on: θ as published after each received submission.
struct Snapshots {
    /// By the number of submissions received when it was published.
    by_received: BTreeMap<u64, Parameters>,
    closed: bool,
}

/// What only the aggregator touches: deliveries that arrived ahead of their turn.
struct Reorder {
    ahead: BTreeMap<u64, Delivery>,
    next: u64,
}

/// A transport that hands the aggregator submissions in round-robin order, one per
/// [`Transport::receive`] (so that θ is published after each), and keeps the recent θ so that
/// each agent copies the one its turn prescribes ([`RoundRobin::parameters_at`]).
pub struct RoundRobin<'a> {
    inner: &'a dyn Transport,
    workers: u64,
    index: HashMap<String, u64>,
    snapshots: Mutex<Snapshots>,
    published: Condvar,
    reorder: Mutex<Reorder>,
}

impl<'a> RoundRobin<'a> {
    /// Round robin over `sources` (agent i is `sources[i]`) on top of `inner`.
    pub fn new(inner: &'a dyn Transport, sources: &[String]) -> Self {
        Self {
            inner,
            workers: sources.len().max(1) as u64,
            index: sources
                .iter()
                .enumerate()
                .map(|(i, s)| (s.clone(), i as u64))
                .collect(),
            snapshots: Mutex::new(Snapshots {
                by_received: BTreeMap::new(),
                closed: false,
            }),
            published: Condvar::new(),
            reorder: Mutex::new(Reorder {
                ahead: BTreeMap::new(),
                next: 0,
            }),
        }
    }

    /// s = (seq − 1)·W + i for submission `seq` of agent i; `None` for a source that is not
    /// one of the agents (handed over at once, for the aggregator to reject).
    fn position(&self, submission: &Submission) -> Option<u64> {
        let agent = *self.index.get(&submission.source)?;
        let seq = submission.seq.checked_sub(1)?;
        Some(seq * self.workers + agent)
    }

    /// The θ that submission `s` is computed at: the one published after
    /// max(0, s − W + 1) submissions were received. Waits for it; `None` once the run is
    /// closed.
    pub fn parameters_for(&self, s: u64) -> Result<Option<Parameters>, PgcError> {
        self.parameters_at(s.saturating_sub(self.workers - 1))
    }

    /// θ as published after `received` submissions were received, waiting (up to 60 s
    /// without progress) until it is; `None` once the run is closed.
    pub fn parameters_at(&self, received: u64) -> Result<Option<Parameters>, PgcError> {
        let patience = Duration::from_secs(60);
        let mut last_progress = Instant::now();
        let mut newest = None;
        let mut guard = self.snapshots.lock().map_err(|_| poisoned())?;
        loop {
            if guard.closed || self.inner.is_closed()? {
                return Ok(None);
            }
            if let Some(p) = guard.by_received.get(&received) {
                return Ok(Some(p.clone()));
            }
            if guard
                .by_received
                .keys()
                .next()
                .is_some_and(|&first| first > received)
            {
                return Err(PgcError::Transport {
                    transport: "in-process",
                    message: format!(
                        "round robin: θ after {received} submissions was already dropped"
                    ),
                });
            }
            let latest = guard.by_received.keys().next_back().copied();
            if latest != newest {
                newest = latest;
                last_progress = Instant::now();
            } else if last_progress.elapsed() > patience {
                return Err(PgcError::NoParameters(patience));
            }
            guard = self
                .published
                .wait_timeout(guard, Duration::from_millis(100))
                .map_err(|_| poisoned())?
                .0;
        }
    }
}

fn poisoned() -> PgcError {
    PgcError::Transport {
        transport: "in-process",
        message: "round-robin lock poisoned by a panicked thread".into(),
    }
}

impl Transport for RoundRobin<'_> {
    fn publish(&self, parameters: &Parameters) -> Result<(), PgcError> {
        self.inner.publish(parameters)?;
        let mut guard = self.snapshots.lock().map_err(|_| poisoned())?;
        // Every agent's next submission is at position ≥ the number received, so it needs
        // θ after at least that many minus W − 1.
        let keep_from = parameters.submissions.saturating_sub(self.workers);
        guard.by_received.retain(|&k, _| k >= keep_from);
        guard
            .by_received
            .insert(parameters.submissions, parameters.clone());
        drop(guard);
        self.published.notify_all();
        Ok(())
    }

    fn parameters(&self) -> Result<Option<Parameters>, PgcError> {
        self.inner.parameters()
    }

    fn submit(&self, submission: &Submission) -> Result<(), PgcError> {
        self.inner.submit(submission)
    }

    fn last_seq(&self, source: &str) -> Result<u64, PgcError> {
        self.inner.last_seq(source)
    }

    /// The next submission in round-robin order (one, whatever `max`), waiting at most
    /// `wait` for it; those that arrive ahead of their turn are held back.
    fn receive(&self, max: usize, wait: Duration) -> Result<Vec<Delivery>, PgcError> {
        if max == 0 {
            return Ok(Vec::new());
        }
        let deadline = Instant::now() + wait;
        let mut reorder = self.reorder.lock().map_err(|_| poisoned())?;
        loop {
            let next = reorder.next;
            if let Some(delivery) = reorder.ahead.remove(&next) {
                reorder.next += 1;
                return Ok(vec![delivery]);
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Ok(Vec::new());
            }
            // Not an agent's, or already past: handed over now for the aggregator to reject
            // or skip.
            let mut strays = Vec::new();
            for delivery in self.inner.receive(usize::MAX, left)? {
                match self.position(&delivery.submission) {
                    Some(s) if s >= next => {
                        reorder.ahead.insert(s, delivery);
                    }
                    _ => strays.push(delivery),
                }
            }
            if !strays.is_empty() {
                return Ok(strays);
            }
        }
    }

    fn acknowledge(&self, tags: &[String]) -> Result<(), PgcError> {
        self.inner.acknowledge(tags)
    }

    fn reject(&self, tag: &str, reason: &str) -> Result<(), PgcError> {
        self.inner.reject(tag, reason)
    }

    fn check_fence(&self) -> Result<(), PgcError> {
        self.inner.check_fence()
    }

    fn close(&self) -> Result<(), PgcError> {
        let result = self.inner.close();
        if let Ok(mut guard) = self.snapshots.lock() {
            guard.closed = true;
        }
        self.published.notify_all();
        result
    }

    fn is_closed(&self) -> Result<bool, PgcError> {
        self.inner.is_closed()
    }
}

/// Agent i's loop under [`RoundRobin`]: each submission computed at the θ its position
/// prescribes, until the run is closed or `stop` is set. Returns the number submitted.
pub(crate) fn run_agent_in_order<B: AutodiffBackend>(
    agent: &mut PgcAgent<B>,
    position: u64,
    order: &RoundRobin<'_>,
    stop: &AtomicBool,
) -> Result<u64, PgcError> {
    let mut sent = 0;
    while !stop.load(Ordering::Relaxed) {
        let s = agent.submitted() * order.workers + position;
        let Some(parameters) = order.parameters_for(s)? else {
            break;
        };
        let submission = agent.submission(&parameters)?;
        order.submit(&submission)?;
        sent += 1;
    }
    Ok(sent)
}

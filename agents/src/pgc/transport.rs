//! How submissions travel from agents to the aggregator and θ travels back: the
//! [`Transport`] trait, and [`InProcess`], its channel-and-lock implementation for agents that
//! are threads of the aggregator's process. [`super::RedisTransport`] is the other one.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{channel, Receiver, RecvTimeoutError, Sender};
use std::sync::{Mutex, RwLock};
use std::time::Duration;

use super::{Delivery, Parameters, PgcError, Submission};

/// The link between PGC agents and the aggregator.
///
/// Agents call [`Transport::parameters`] and [`Transport::submit`]; the aggregator calls
/// [`Transport::receive`], [`Transport::acknowledge`] and [`Transport::publish`]. Delivery is
/// at least once: a submission that was received but not acknowledged may be received again
/// (after an aggregator restart), so the aggregator acknowledges a submission only after it has
/// applied it and saved its state, and skips submissions it has already applied.
pub trait Transport: Send + Sync {
    /// Aggregator: makes `parameters` the θ that agents copy next.
    fn publish(&self, parameters: &Parameters) -> Result<(), PgcError>;
    /// Agent: the latest published θ, `None` before the first publication.
    fn parameters(&self) -> Result<Option<Parameters>, PgcError>;
    /// Agent: sends one noisy gradient.
    fn submit(&self, submission: &Submission) -> Result<(), PgcError>;
    /// Agent: the last `seq` that `source` submitted to this run (0 if none), so that an
    /// agent restarted under the same name resumes its sequence instead of repeating numbers
    /// the aggregator has already seen (which it would skip as duplicates).
    fn last_seq(&self, _source: &str) -> Result<u64, PgcError> {
        Ok(0)
    }
    /// Aggregator: up to `max` submissions, waiting at most `wait` for the first one. After a
    /// restart, submissions received before but never acknowledged come first.
    fn receive(&self, max: usize, wait: Duration) -> Result<Vec<Delivery>, PgcError>;
    /// Aggregator: marks submissions as done; they are never delivered again.
    fn acknowledge(&self, tags: &[String]) -> Result<(), PgcError>;
    /// Aggregator: a delivery that is not a valid submission of this run (`reason` says why)
    /// is set aside (Redis: into the dead-letter stream) and acknowledged.
    fn reject(&self, _tag: &str, _reason: &str) -> Result<(), PgcError> {
        Ok(())
    }
    /// Aggregator: fails with [`PgcError::Fenced`] if a newer aggregator has taken the run
    /// over; called before each checkpoint write, which the transport cannot fence itself.
    fn check_fence(&self) -> Result<(), PgcError> {
        Ok(())
    }
    /// Aggregator: tells the agents that training is over.
    fn close(&self) -> Result<(), PgcError>;
    /// Agent: whether the aggregator has closed the run.
    fn is_closed(&self) -> Result<bool, PgcError>;
}

/// Agents as threads of one process: an unbounded channel carries submissions, a lock holds θ.
///
/// Nothing is lost while the process lives, so acknowledgement is a no-op and no submission is
/// delivered twice. This is the default transport and the one the suite uses.
pub struct InProcess {
    sender: Mutex<Sender<Submission>>,
    receiver: Mutex<Receiver<Submission>>,
    parameters: RwLock<Option<Parameters>>,
    closed: AtomicBool,
    delivered: AtomicU64,
}

impl InProcess {
    /// An empty transport: no θ published, no submission queued.
    pub fn new() -> Self {
        let (sender, receiver) = channel();
        Self {
            sender: Mutex::new(sender),
            receiver: Mutex::new(receiver),
            parameters: RwLock::new(None),
            closed: AtomicBool::new(false),
            delivered: AtomicU64::new(0),
        }
    }
}

impl Default for InProcess {
    fn default() -> Self {
        Self::new()
    }
}

fn poisoned(what: &'static str) -> PgcError {
    PgcError::Transport {
        transport: "in-process",
        message: format!("{what} lock poisoned by a panicked thread"),
    }
}

impl Transport for InProcess {
    fn publish(&self, parameters: &Parameters) -> Result<(), PgcError> {
        *self
            .parameters
            .write()
            .map_err(|_| poisoned("parameters"))? = Some(parameters.clone());
        Ok(())
    }

    fn parameters(&self) -> Result<Option<Parameters>, PgcError> {
        Ok(self
            .parameters
            .read()
            .map_err(|_| poisoned("parameters"))?
            .clone())
    }

    fn submit(&self, submission: &Submission) -> Result<(), PgcError> {
        // The receiver lives as long as `self`, so sending cannot fail.
        let _ = self
            .sender
            .lock()
            .map_err(|_| poisoned("sender"))?
            .send(submission.clone());
        Ok(())
    }

    fn receive(&self, max: usize, wait: Duration) -> Result<Vec<Delivery>, PgcError> {
        let receiver = self.receiver.lock().map_err(|_| poisoned("receiver"))?;
        let mut out = Vec::new();
        let first = match receiver.recv_timeout(wait) {
            Ok(s) => s,
            Err(RecvTimeoutError::Timeout | RecvTimeoutError::Disconnected) => return Ok(out),
        };
        let mut next = Some(first);
        while let Some(submission) = next {
            let tag = self.delivered.fetch_add(1, Ordering::Relaxed).to_string();
            out.push(Delivery { tag, submission });
            next = if out.len() < max {
                receiver.try_recv().ok()
            } else {
                None
            };
        }
        Ok(out)
    }

    fn acknowledge(&self, _tags: &[String]) -> Result<(), PgcError> {
        Ok(())
    }

    fn close(&self) -> Result<(), PgcError> {
        self.closed.store(true, Ordering::SeqCst);
        Ok(())
    }

    fn is_closed(&self) -> Result<bool, PgcError> {
        Ok(self.closed.load(Ordering::SeqCst))
    }
}

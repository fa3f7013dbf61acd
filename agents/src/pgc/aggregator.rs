//! The central side of Algorithm 1: the [`Aggregator`], its checkpointed state and the
//! submissions it applies (with μ_n and the first success time).

use std::collections::{BTreeMap, VecDeque};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::{Delivery, Parameters, PgcConfig, PgcError, Transport};
use crate::optim::{FlatAdam, OptimizerKind};

/// What the aggregator checkpoints: θ and enough to apply idempotently.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AggregatorState {
    /// θ.
    pub theta: Vec<f32>,
    /// Updates applied (eq. 22).
    pub version: u64,
    /// Submissions applied.
    pub applied: u64,
    /// Environment steps (scores) of the applied submissions.
    #[serde(default)]
    pub env_steps: u64,
    /// Deliveries skipped because their submission was already applied.
    pub duplicates: u64,
    /// Deliveries refused (wrong length, non-finite values).
    pub rejected: u64,
    /// Highest applied `seq` per source.
    pub high_water: BTreeMap<String, u64>,
    /// The last m scores, for μ_n.
    pub recent_scores: VecDeque<f64>,
    /// First success time (eq. 26): the first submission of the first window whose mean
    /// reaches Θ, once that window is complete.
    pub first_success: Option<u64>,
    /// Adam's moments when the aggregator steps θ with Adam instead of eq. 22's SGD.
    #[serde(default)]
    pub adam: FlatAdam,
    /// The run this state belongs to (Redis runs), so that a checkpoint is never resumed
    /// into another run.
    #[serde(default)]
    pub run_id: Option<String>,
}

/// One applied submission, for the per-submission metrics.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct AppliedSubmission {
    /// n: its 1-based position among applied submissions.
    pub n: u64,
    /// Score ζ_n.
    pub score: f64,
    /// The mean of the last m scores (of fewer before m have arrived): once m have, μ_{n−m+1}
    /// of eq. 25, whose window ends here.
    pub mean_score: f64,
    /// θ's version after the update that applied it.
    pub version: u64,
    /// Version of the θ′ it was computed at (staleness = version − this − 1).
    pub computed_at: u64,
}

/// The central side of Algorithm 1: buffer B, eq. 22, publication of θ.
pub struct Aggregator {
    lr: f64,
    optimizer: OptimizerKind,
    buffer_size: usize,
    score_window: usize,
    target_score: f64,
    state: AggregatorState,
    buffer: Vec<Delivery>,
    checkpoint: Option<PathBuf>,
}

impl Aggregator {
    /// A fresh aggregator with θ = `theta`.
    pub fn new(config: &PgcConfig, theta: Vec<f32>) -> Result<Self, PgcError> {
        config.validate()?;
        Ok(Self {
            lr: config.a3c.lr,
            optimizer: config.a3c.optimizer,
            buffer_size: config.a3c.buffer_size,
            score_window: config.score_window,
            target_score: config.target_score,
            state: AggregatorState {
                theta,
                version: 0,
                applied: 0,
                env_steps: 0,
                duplicates: 0,
                rejected: 0,
                high_water: BTreeMap::new(),
                recent_scores: VecDeque::new(),
                first_success: None,
                adam: FlatAdam::default(),
                run_id: None,
            },
            buffer: Vec::new(),
            checkpoint: None,
        })
    }

    /// Saves the state to `path` after every update (before acknowledging), and resumes from
    /// it if it exists.
    pub fn with_checkpoint(mut self, path: impl Into<PathBuf>) -> Result<Self, PgcError> {
        let path = path.into();
        if path.exists() {
            let state = read_state(&path)?;
            if state.theta.len() != self.state.theta.len() {
                return Err(PgcError::Checkpoint {
                    path,
                    message: format!(
                        "θ has {} values, the network {}",
                        state.theta.len(),
                        self.state.theta.len()
                    ),
                });
            }
            self.state = state;
        }
        self.checkpoint = Some(path);
        Ok(self)
    }

    /// Binds the state to the run `run_id`: fails if it was checkpointed for another run.
    pub fn bind_run(&mut self, run_id: &str) -> Result<(), PgcError> {
        match &self.state.run_id {
            Some(bound) if bound != run_id => Err(PgcError::Checkpoint {
                path: self.checkpoint.clone().unwrap_or_default(),
                message: format!("belongs to run `{bound}`, not `{run_id}`"),
            }),
            _ => {
                self.state.run_id = Some(run_id.to_string());
                Ok(())
            }
        }
    }

    /// The state (θ, counters).
    pub fn state(&self) -> &AggregatorState {
        &self.state
    }

    /// Submissions received and waiting in B for the next update.
    pub fn buffered(&self) -> usize {
        self.buffer.len()
    }

    /// θ as published.
    pub fn parameters(&self) -> Parameters {
        Parameters {
            version: self.state.version,
            submissions: self.state.applied + self.buffer.len() as u64,
            env_steps: self.state.env_steps
                + self
                    .buffer
                    .iter()
                    .map(|d| steps_of(d.submission.score))
                    .sum::<u64>(),
            values: self.state.theta.clone(),
        }
    }

    /// Receives up to `max` submissions (waiting at most `wait`), buffers them, applies eq. 22
    /// whenever |B| ≥ MAX_BUF, and publishes θ. Returns the submissions applied.
    pub fn poll(
        &mut self,
        transport: &dyn Transport,
        max: usize,
        wait: Duration,
    ) -> Result<Vec<AppliedSubmission>, PgcError> {
        let deliveries = transport.receive(max, wait)?;
        let mut applied = Vec::new();
        let mut skipped = Vec::new();
        let mut rejected = Vec::new();
        let received = !deliveries.is_empty();
        for delivery in deliveries {
            match self.accept(&delivery) {
                Verdict::Take => {
                    self.buffer.push(delivery);
                    if self.buffer.len() >= self.buffer_size {
                        applied.extend(self.apply(transport)?);
                    }
                }
                Verdict::Duplicate => skipped.push(delivery.tag),
                Verdict::Buffered => {}
                Verdict::Reject(reason) => rejected.push((delivery.tag, reason)),
            }
        }
        if !skipped.is_empty() || !rejected.is_empty() {
            self.save(transport)?;
            transport.acknowledge(&skipped)?;
            for (tag, reason) in &rejected {
                transport.reject(tag, reason)?;
            }
        }
        if received {
            transport.publish(&self.parameters())?;
        }
        Ok(applied)
    }

    /// Whether a delivery goes into the buffer; counts duplicates and refusals.
    fn accept(&mut self, delivery: &Delivery) -> Verdict {
        let s = &delivery.submission;
        // The same entry delivered again (re-read after a reconnect) while it waits in B: it
        // is acknowledged with B, not now.
        if self.buffer.iter().any(|d| d.tag == delivery.tag) {
            return Verdict::Buffered;
        }
        let applied_through = self.state.high_water.get(&s.source).copied().unwrap_or(0);
        let buffered = self
            .buffer
            .iter()
            .any(|d| d.submission.source == s.source && d.submission.seq == s.seq);
        if s.seq <= applied_through || buffered {
            self.state.duplicates += 1;
            return Verdict::Duplicate;
        }
        let reason = if s.gradient.len() != self.state.theta.len() {
            Some(format!(
                "gradient of length {}, θ has {}",
                s.gradient.len(),
                self.state.theta.len()
            ))
        } else if s.gradient.iter().any(|v| !v.is_finite()) {
            Some("non-finite gradient".to_string())
        } else if !(s.score.is_finite() && s.score >= 0.0) {
            Some(format!("score {} (expected a finite value >= 0)", s.score))
        } else {
            None
        };
        match reason {
            Some(reason) => {
                self.state.rejected += 1;
                Verdict::Reject(reason)
            }
            None => Verdict::Take,
        }
    }

    /// eq. 22: θ ← θ − η (1/|B|) Σ_{g̃ ∈ B} g̃ (or an Adam step on that mean, with
    /// `a3c.optimizer = Adam`); then saves and acknowledges the buffer.
    fn apply(&mut self, transport: &dyn Transport) -> Result<Vec<AppliedSubmission>, PgcError> {
        let buffer = std::mem::take(&mut self.buffer);
        let mut mean = vec![0.0f32; self.state.theta.len()];
        for d in &buffer {
            mean.iter_mut()
                .zip(&d.submission.gradient)
                .for_each(|(m, g)| *m += *g);
        }
        let scale = 1.0 / buffer.len() as f32;
        mean.iter_mut().for_each(|m| *m *= scale);
        match self.optimizer {
            OptimizerKind::Sgd => {
                let lr = self.lr as f32;
                for (theta, m) in self.state.theta.iter_mut().zip(&mean) {
                    *theta -= m * lr;
                }
            }
            // Post-processing of the noisy mean like eq. 22 (Section 3.1.1 lets the
            // aggregator use any gradient method), so no privacy is spent.
            OptimizerKind::Adam => self.state.adam.step(&mut self.state.theta, &mean, self.lr),
        }
        self.state.version += 1;
        let mut applied = Vec::with_capacity(buffer.len());
        for d in &buffer {
            let s = &d.submission;
            self.state.applied += 1;
            self.state.env_steps += steps_of(s.score);
            // Maxed, not overwritten: a source's entries arrive in order, but a stale
            // duplicate must never move its mark back.
            let mark = self.state.high_water.entry(s.source.clone()).or_insert(0);
            *mark = (*mark).max(s.seq);
            self.state.recent_scores.push_back(s.score);
            while self.state.recent_scores.len() > self.score_window {
                self.state.recent_scores.pop_front();
            }
            let mean_score = self.state.recent_scores.iter().sum::<f64>()
                / self.state.recent_scores.len() as f64;
            // The full window ζ_{k−m+1} … ζ_k is μ_{k−m+1} of eq. 25 (it looks forward), so
            // eq. 26's FST is the window's first submission, not the k that completes it.
            if self.state.first_success.is_none()
                && self.state.recent_scores.len() == self.score_window
                && mean_score >= self.target_score
            {
                self.state.first_success = Some(self.state.applied + 1 - self.score_window as u64);
            }
            applied.push(AppliedSubmission {
                n: self.state.applied,
                score: s.score,
                mean_score,
                version: self.state.version,
                computed_at: s.version,
            });
        }
        self.save(transport)?;
        let tags: Vec<String> = buffer.into_iter().map(|d| d.tag).collect();
        transport.acknowledge(&tags)?;
        Ok(applied)
    }

    /// Writes the checkpoint durably: a temporary file beside it, fsynced, renamed over it,
    /// and the directory fsynced, so that a crash leaves the old state or the new one, never
    /// a torn file, and an acknowledgement never precedes the state it relies on. Refuses
    /// (with [`PgcError::Fenced`]) once a newer aggregator has taken the run over.
    pub fn save(&self, transport: &dyn Transport) -> Result<(), PgcError> {
        let Some(path) = &self.checkpoint else {
            return Ok(());
        };
        transport.check_fence()?;
        let error = |message: String| PgcError::Checkpoint {
            path: path.clone(),
            message,
        };
        let mut tmp_name = path.file_name().unwrap_or_default().to_os_string();
        tmp_name.push(".tmp");
        let tmp = path.with_file_name(tmp_name);
        let json = serde_json::to_vec(&self.state).map_err(|e| error(e.to_string()))?;
        let write = || -> std::io::Result<()> {
            let mut file = std::fs::File::create(&tmp)?;
            file.write_all(&json)?;
            file.sync_all()?;
            drop(file);
            std::fs::rename(&tmp, path)?;
            let dir = match path.parent() {
                Some(dir) if !dir.as_os_str().is_empty() => dir,
                _ => Path::new("."),
            };
            // Directories cannot be opened for syncing on every platform.
            if let Ok(dir) = std::fs::File::open(dir) {
                let _ = dir.sync_all();
            }
            Ok(())
        };
        write().map_err(|e| error(e.to_string()))
    }
}

/// What [`Aggregator::accept`] makes of a delivery.
enum Verdict {
    /// Into B.
    Take,
    /// Its (source, seq) was applied or is in B under another tag: acknowledged, skipped.
    Duplicate,
    /// This very entry is already in B.
    Buffered,
    /// Not a valid submission of this run: dead-lettered with the reason.
    Reject(String),
}

/// The environment steps of a submission: its score ζ is the number of steps the episode
/// lasted (finite and ≥ 0 once accepted).
fn steps_of(score: f64) -> u64 {
    score.max(0.0) as u64
}

/// Reads an aggregator checkpoint.
pub(crate) fn read_state(path: &Path) -> Result<AggregatorState, PgcError> {
    let error = |message: String| PgcError::Checkpoint {
        path: path.to_path_buf(),
        message,
    };
    let bytes = std::fs::read(path).map_err(|e| error(e.to_string()))?;
    serde_json::from_slice(&bytes).map_err(|e| error(e.to_string()))
}

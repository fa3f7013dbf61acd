//! The messages between agents and aggregator: θ as published, a noisy gradient submitted,
//! and a submission as delivered.

use serde::{Deserialize, Serialize};

/// θ as the aggregator publishes it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Parameters {
    /// Number of updates (eq. 22) applied so far.
    pub version: u64,
    /// Submissions received so far (applied or buffered): the n of the exploration schedule
    /// on the submissions clock.
    pub submissions: u64,
    /// Environment steps of those submissions (their scores): where an episode starts on the
    /// env-steps clock of the exploration schedule.
    #[serde(default)]
    pub env_steps: u64,
    /// θ, flattened in the network's parameter order (that of [`GradientRecord::flatten`]).
    ///
    /// [`GradientRecord::flatten`]: crate::GradientRecord::flatten
    pub values: Vec<f32>,
}

/// One noisy gradient g̃_n with what the aggregator may know about it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Submission {
    /// The submitting process or thread (unique within a run).
    pub source: String,
    /// 1, 2, … per source: with `source`, the id that makes applying idempotent.
    pub seq: u64,
    /// Version of the θ′ the gradient was computed at.
    pub version: u64,
    /// The episode's score ζ (steps the pole stayed up); the paper treats scores as public.
    pub score: f64,
    /// g̃ = Q(g), length d.
    pub gradient: Vec<f32>,
}

/// A submission as received, with the transport's tag for acknowledging it.
#[derive(Debug, Clone, PartialEq)]
pub struct Delivery {
    /// Transport-specific id (a Redis stream id).
    pub tag: String,
    /// The submission.
    pub submission: Submission,
}

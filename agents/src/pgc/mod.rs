//! PGC-A3C: locally private distributed RL (Ono & Takahashi, *Locally Private Distributed
//! Reinforcement Learning*, Section 3 and Algorithm 1).
//!
//! **Private Gradient Collection** (Section 3.1.1): an [`Aggregator`] holds θ and a buffer B.
//! A [`PgcAgent`] copies θ, plays one episode in its private environment (CartPole-v0 with its
//! own gravity ψ), computes the gradient of the episode loss (eq. 15–18, the same code as
//! [`crate::A3c`]), passes it through a mechanism Q ([`GradientMechanism`]: Laplace, Algorithm
//! 2, or projected random sign, Algorithm 3, from `privrl-privacy`) and submits it. The
//! aggregator applies eq. 22 once |B| ≥ MAX_BUF and publishes the new θ, which is
//! post-processing of the ε-LDP gradient releases (Lemmas 1–4, Theorem 3). Each submission
//! also carries its episode's score ζ (the episode's length) **in the clear**, and the
//! aggregator's success test (eq. 25–26) reads them: the paper treats scores as public, and
//! the ε covers the gradients only. The score is a function of the agent's private gravity ψ.
//!
//! With `rounds = T > 1`, an agent submits T times with ε/T each (Section 3.2.1).
//!
//! Submissions travel over a [`Transport`]: [`InProcess`] (threads, the default; the paper
//! uses 9 agent threads) or `RedisTransport` (the `redis` feature: Redis Streams across
//! processes, one key prefix per run id). Delivery is at least once and the aggregator applies exactly once: each
//! submission carries its agent's `(source, seq)` (a restarted agent resumes its sequence),
//! the aggregator remembers the highest applied `seq` per source in its checkpoint (written
//! durably), and acknowledges a submission only after its update is saved. An aggregator
//! killed and restarted from its checkpoint therefore loses no submission and applies none
//! twice; the restarted one fences the old one off (an epoch checked on every write), and
//! entries that are not submissions of the run go to a dead-letter stream.
//!
//! In one process, [`run_pgc`] applies the submissions in a fixed round-robin order by default
//! ([`SubmissionOrder`]), so that a seed fixes the whole run whatever the machine's load; the
//! asynchronous order of arrival is an option.
//!
//! The metrics of Section 4 are here too: μ_n (eq. 25), the first success time (eq. 26), the
//! success ratio (eq. 27) and the relative area under its curve (Table 3).
//!
//! [`GradientMechanism`]: privrl_privacy::GradientMechanism

mod agent;
mod aggregator;
mod config;
mod error;
mod messages;
mod metrics;
mod ordered;
mod params;
#[cfg(feature = "redis")]
mod redis;
mod run;
mod transport;

pub use self::agent::{run_agent, PgcAgent};
pub use self::aggregator::{Aggregator, AggregatorState, AppliedSubmission};
pub use self::config::PgcConfig;
pub use self::error::PgcError;
pub use self::messages::{Delivery, Parameters, Submission};
pub use self::metrics::{
    average_scores, first_success_time, median_first_success, relative_area, success_ratio,
    success_ratio_area,
};
pub use self::ordered::{RoundRobin, SubmissionOrder};
pub use self::params::{flatten_parameters, initial_parameters, load_flat_parameters};
#[cfg(feature = "redis")]
pub use self::redis::{RedisTransport, DEFAULT_RECONNECT_TIMEOUT};
pub use self::run::{run_pgc, PgcOutcome};
pub use self::transport::{InProcess, Transport};

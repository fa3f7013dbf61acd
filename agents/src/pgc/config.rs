//! The hyper-parameters of a PGC-A3C run, the agents' private environment and network.

use burn::config::Config;
use privrl_envs::{CartPoleConfig, Env};
use privrl_privacy::{GradientMechanismConfig, NoiseMode};

use super::{PgcError, SubmissionOrder};
use crate::a3c::A3cConfig;
use crate::env::discrete_env_dims;
use crate::error::AgentError;
use crate::heads::ActorCriticConfig;

/// Hyper-parameters of a PGC-A3C run. [`PgcConfig::paper`] is Section 4's setting.
#[derive(Config, Debug)]
pub struct PgcConfig {
    /// The A3C part: agent threads (`workers`, the paper's 9), the network (a 16-unit ReLU
    /// trunk without biases, d = 112 on CartPole), γ, η, λ, β, MAX_BUF (`buffer_size`) and the
    /// exploration schedule α = max(0, 0.5 − n/1800).
    #[config(default = "A3cConfig::pgc_paper()")]
    pub a3c: A3cConfig,
    /// The mechanism Q (none, Laplace or PRS; at ε = ∞ Laplace keeps the L1 clipping of
    /// eq. 19 and adds no noise, PRS projects to d̂ = d and flips by the unbiased stochastic
    /// sign, the limits of the two mechanisms that the paper's ε = ∞ column stands for).
    #[config(default = "GradientMechanismConfig::None")]
    pub mechanism: GradientMechanismConfig,
    /// Submissions per agent T, each with ε/T (Section 3.2.1; the paper's runs use 1).
    #[config(default = 1)]
    pub rounds: usize,
    /// Gravity ψ of the agents' CartPole-v0, drawn uniformly per agent (Section 4).
    #[config(default = "vec![9.7, 9.8, 9.9]")]
    pub gravities: Vec<f64>,
    /// Stop after this many model updates (eq. 22) without success: the paper's cutoff, "FST
    /// = ∞ if a learning process cannot meet the success in 90,000 updates" (Section 4.2).
    /// It counts updates, not submissions: with |B| = 100 (PRS) that is 9,000,000 submissions.
    #[config(default = 90_000)]
    pub max_updates: u64,
    /// Stop after this many applied submissions as well (a fixed-length run such as Fig. 2's;
    /// no limit by default, the cutoff being `max_updates`).
    #[config(default = "u64::MAX")]
    pub max_submissions: u64,
    /// Target score Θ (eq. 26).
    #[config(default = 195.0)]
    pub target_score: f64,
    /// Window m of the average score μ_n (eq. 25).
    #[config(default = 10)]
    pub score_window: usize,
    /// Stop at the first success (FST is all that Tables 1–3 need).
    #[config(default = true)]
    pub stop_at_success: bool,
    /// Where each agent's mechanism noise comes from: a generator seeded from the agent's
    /// seed, or the operating system's CSPRNG ([`NoiseMode`]).
    #[config(default = "NoiseMode::Seeded")]
    pub noise_rng: NoiseMode,
    /// The order in which [`super::run_pgc`] applies submissions: round robin over the
    /// agents (deterministic given the seed) or as they arrive (asynchronous, load-dependent).
    #[config(default = "SubmissionOrder::RoundRobin")]
    pub order: SubmissionOrder,
}

impl PgcConfig {
    /// Section 4: Laplace with C = 0.01 and |B| = 1, PRS with C = 1 and |B| = 100 (the
    /// buffer sizes chosen in Section 4.1); the non-private path uses |B| = 1.
    pub fn paper(mechanism: GradientMechanismConfig) -> Self {
        let buffer = match mechanism {
            GradientMechanismConfig::Prs { .. } => 100,
            _ => 1,
        };
        Self::new()
            .with_a3c(A3cConfig::pgc_paper().with_buffer_size(buffer))
            .with_mechanism(mechanism)
    }

    /// Checks every parameter; the error names the first one out of range.
    pub fn validate(&self) -> Result<(), PgcError> {
        self.a3c.validate()?;
        let invalid = |name, value: String, expected| {
            Err(PgcError::InvalidParameter {
                name,
                value,
                expected,
            })
        };
        if self.rounds == 0 {
            return invalid("rounds", "0".into(), ">= 1");
        }
        if self.gravities.is_empty() || self.gravities.iter().any(|g| !(g.is_finite() && *g > 0.0))
        {
            return invalid(
                "gravities",
                format!("{:?}", self.gravities),
                "a non-empty list of finite values > 0",
            );
        }
        if self.max_updates == 0 {
            return invalid("max_updates", "0".into(), ">= 1");
        }
        if self.max_submissions == 0 {
            return invalid("max_submissions", "0".into(), ">= 1");
        }
        if self.score_window == 0 {
            return invalid("score_window", "0".into(), ">= 1");
        }
        if !self.target_score.is_finite() {
            return invalid(
                "target_score",
                self.target_score.to_string(),
                "a finite score",
            );
        }
        // The mechanism's own checks (C > 0, σ > 0); ε is valid by construction.
        self.mechanism.build(1, self.rounds)?;
        Ok(())
    }

    /// Agent `ψ`'s private environment: CartPole-v0 (200 steps) with gravity ψ.
    pub fn environment(gravity: f64) -> Result<Box<dyn Env>, PgcError> {
        Ok(Box::new(
            CartPoleConfig::v0()
                .with_gravity(gravity)
                .build()
                .map_err(AgentError::from)?,
        ))
    }

    /// The network configuration for observations of width `obs_len` and `num_actions`.
    pub fn network(&self, obs_len: usize, num_actions: usize) -> ActorCriticConfig {
        ActorCriticConfig::new(obs_len, num_actions)
            .with_hidden(self.a3c.hidden.clone())
            .with_activation(self.a3c.activation)
            .with_bias(self.a3c.bias)
    }

    pub(super) fn dims(&self) -> Result<(usize, usize), PgcError> {
        let env = Self::environment(self.gravities[0])?;
        Ok(discrete_env_dims(&*env)?)
    }
}

//! The hyper-parameters of PPO, with Spinning Up's defaults.

use burn::config::Config;

use crate::error::{check_count, check_hidden, check_positive, check_unit_interval, AgentError};
use crate::nn::Activation;

/// Hyper-parameters of PPO, with Spinning Up's defaults.
#[derive(Config, Debug)]
pub struct PpoConfig {
    /// Environment steps per epoch (Spinning Up: 4000; the kickstarting paper: 1000).
    #[config(default = 4000)]
    pub steps_per_epoch: usize,
    /// Discount factor γ.
    #[config(default = 0.99)]
    pub gamma: f64,
    /// Clipping parameter ε of the surrogate: ratios outside [1 − ε, 1 + ε] get no gradient.
    #[config(default = 0.2)]
    pub clip_ratio: f64,
    /// Policy learning rate (Adam).
    #[config(default = 3e-4)]
    pub pi_lr: f64,
    /// Value-function learning rate (Adam).
    #[config(default = 1e-3)]
    pub vf_lr: f64,
    /// Maximum policy gradient steps per epoch.
    #[config(default = 80)]
    pub train_pi_iters: usize,
    /// Value-function gradient steps per epoch.
    #[config(default = 80)]
    pub train_v_iters: usize,
    /// GAE-λ.
    #[config(default = 0.97)]
    pub lam: f64,
    /// Maximum episode length; longer episodes are cut and bootstrapped.
    #[config(default = 1000)]
    pub max_ep_len: usize,
    /// Policy updates stop once the approximate KL exceeds 1.5 × this.
    #[config(default = 0.01)]
    pub target_kl: f64,
    /// Hidden widths of the actor and the critic.
    #[config(default = "vec![64, 64]")]
    pub hidden: Vec<usize>,
    /// Hidden non-linearity.
    #[config(default = "Activation::Tanh")]
    pub activation: Activation,
    /// End the trajectory at every epoch boundary and reset the environment, as Spinning Up
    /// does (`o, ep_ret, ep_len = env.reset(), 0, 0` runs on `terminal or epoch_ended`): an
    /// episode cut by the epoch is bootstrapped with V(s_T) and not logged as an episode.
    /// `false` carries the episode over into the next epoch. It matters to kickstarting, whose
    /// teacher multiplies k at each trajectory start (paper 000, Section 5).
    #[config(default = true)]
    pub reset_at_epoch_end: bool,
    /// Start every epoch from an environment reset seeded by the agent's own generator (needs
    /// `reset_at_epoch_end`). The environment's state at an epoch boundary then depends on the
    /// checkpointed seed alone, so a run checkpointed there and resumed in a fresh process
    /// continues bit for bit, even for an environment whose state cannot be saved (a
    /// Gymnasium process behind the bridge). Off by default: it draws one number per epoch
    /// from the generator, so it changes a seeded run's outputs.
    #[config(default = false)]
    pub reseed_at_epoch_end: bool,
}

impl PpoConfig {
    /// Checks every parameter; the error names the first one out of range.
    pub fn validate(&self) -> Result<(), AgentError> {
        check_hidden("hidden", &self.hidden)?;
        check_count("steps_per_epoch", self.steps_per_epoch)?;
        check_unit_interval("gamma", self.gamma)?;
        check_positive("clip_ratio", self.clip_ratio)?;
        check_positive("pi_lr", self.pi_lr)?;
        check_positive("vf_lr", self.vf_lr)?;
        check_unit_interval("lam", self.lam)?;
        check_count("max_ep_len", self.max_ep_len)?;
        check_count("train_pi_iters", self.train_pi_iters)?;
        check_positive("target_kl", self.target_kl)?;
        if self.reseed_at_epoch_end && !self.reset_at_epoch_end {
            return Err(AgentError::InvalidParameter {
                name: "reseed_at_epoch_end",
                value: 1.0,
                expected: "false unless reset_at_epoch_end is true (an episode carried over an \
                           epoch boundary cannot be restored from a seed)",
            });
        }
        Ok(())
    }
}

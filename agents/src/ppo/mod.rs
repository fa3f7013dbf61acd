//! PPO-Clip, faithful to Spinning Up's PyTorch implementation
//! (`spinup/algos/pytorch/ppo/ppo.py`, Achiam 2018):
//!
//! - separate actor and critic, `(64, 64)` tanh MLPs, PyTorch's default initialisation;
//! - one environment, `steps_per_epoch` steps per epoch, episodes capped at `max_ep_len`; the
//!   trajectory in progress is cut and the environment reset at every epoch's end
//!   (`reset_at_epoch_end`);
//! - GAE-λ advantages normalised over the epoch, rewards-to-go as value targets;
//! - full-batch Adam steps: up to 80 on the clipped surrogate, stopping early once the
//!   approximate KL exceeds 1.5 × `target_kl`, then 80 on the value loss.
//!
//! Two deliberate differences: an episode cut by the environment's time limit (Gymnasium's
//! `truncated`) is bootstrapped with V(s_T) like one cut by `max_ep_len` (old Gym reported it
//! as `done` and Spinning Up then used 0), and a terminal state reached exactly at the end of
//! an epoch gets value 0 (Spinning Up bootstraps it).
//!
//! [`AuxiliaryPolicyLoss`] adds a term to the policy loss, e.g. the privacy-aware student's
//! penalty E\[φ_λ\] of the kickstarting paper (eq. 17: J̃ = J − E\[φ_λ\]).

mod agent;
mod auxiliary;
mod config;
mod loss;
mod update;

pub use self::agent::Ppo;
pub use self::auxiliary::AuxiliaryPolicyLoss;
pub use self::config::PpoConfig;
pub use self::loss::{clipped_surrogate, value_loss, SurrogateTerms};
pub use self::update::PpoStats;

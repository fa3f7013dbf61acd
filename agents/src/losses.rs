//! The papers' loss functions, one path each, for attacks and tests that need the exact loss an
//! agent differentiates (an attack inverts the gradient of exactly this loss).
//!
//! | loss | equation |
//! |---|---|
//! | [`td_loss`] | DQN's TD loss (Mnih et al. 2015), MSE or Huber ([`crate::TdLoss`]) |
//! | [`reinforce_loss`] | REINFORCE, −Σ log π(a_t∣s_t) G_t with an entropy bonus |
//! | [`clipped_surrogate`], [`value_loss`] | PPO-Clip's surrogate and value loss (Spinning Up) |
//! | [`actor_critic_loss`], [`episode_loss`], [`value_targets`] | A3C's loss over one episode (Mnih et al. 2016; paper 003, eq. 15–18) |
//! | [`privacy_aware_penalty`] | the privacy-aware student's penalty E\[φ_λ\] (paper 000, eq. 16–17) |
//! | [`state_value`] | the value head's output as a vector |

pub use crate::a3c::{actor_critic_loss, episode_loss, value_targets, ActorCriticTerms};
pub use crate::dqn::td_loss;
pub use crate::heads::state_value;
pub use crate::kickstart::privacy_aware_penalty;
pub use crate::ppo::{clipped_surrogate, value_loss, SurrogateTerms};
pub use crate::reinforce::reinforce_loss;

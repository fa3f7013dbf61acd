//! Private training of REINFORCE and DQN as in the DP-RL slides (paper 004, Doulazmi &
//! Odonnat): DP-SGD on the gradients (central DP, "CDP – add noise on gradients") and Gaussian
//! noise on the observed states (local DP, "LDP – noise calibration"), with the privacy each
//! DP-SGD run actually spends, from the RDP accountant, which the slides leave as further work.
//!
//! Both DP agents run on the [`PrivacyEngine`]: its Poisson sampling, clipping, noise,
//! adaptive clipping ([`AdaptiveClipping`]) and exact accounting ([`ReleaseSchedule`](privrl_privacy::ReleaseSchedule)) are the
//! ones every other DP-SGD user of privrl gets.
//!
//! - [`DpSgdReinforce`]: the gradients of L episodes (L = 1: the slides' "estimate gradient
//!   with one episode"), each clipped to C in L2, summed, noised once with N(0, σ²C²I) and
//!   divided by L (Figure 7).
//! - [`DpSgdDqn`]: per-transition gradients of the TD loss (MSE or Huber,
//!   [`DqnConfig::td_loss`]) from the engine's traced fast path (the factored per-sample
//!   gradients of [`crate::dp::PerSampleFactors`]), each clipped to C, summed, noised with
//!   N(0, σ²C²I) and divided by the expected batch size (Figure 7; the slides' "custom
//!   backpropagation").
//! - [`NoisyObservationEnv`]: an [`Env`] wrapper that adds N(0, (σ·IQR_j)²) to every
//!   observation dimension j before the agent sees it, so either agent trains under it
//!   unchanged.
//!
//! # The unit of privacy
//!
//! **REINFORCE: an episode is one record.** Neighbouring data differ in one whole episode.
//! Every episode is collected once, used in exactly one DP-SGD step (with the other L − 1
//! episodes of its batch) and then discarded, so each record enters exactly one release of the
//! Gaussian mechanism with sensitivity C and noise σC; later releases are computed from other
//! records and from earlier (already private) outputs, so by adaptive composition over
//! disjoint records the whole run is as private, per episode, as one release: ε of the
//! subsampled Gaussian with q = 1 and one step, from
//! [`RdpAccountant`](privrl_privacy::RdpAccountant). This protects one episode (e.g. one
//! user's trajectory), not a user who contributes many episodes: such a user
//! composes over their episodes. [`DpSgdReinforce::epsilon_if_every_step`] gives that worst
//! case (every step at q = 1, the sum of a step's L episodes moving by up to L·C).
//!
//! **DQN: a transition is one record.** The slides sample |B| = 128 transitions uniformly with
//! replacement; that sampling is not Poisson and a transition drawn twice doubles the
//! sensitivity, so the accountant's guarantee would not hold. [`DpSgdDqn`] therefore draws
//! each gradient step's batch by **Poisson sampling** over the replay buffer: each stored
//! transition enters independently with probability q_t = min(1, |B| / n_t), where n_t is the
//! buffer's size at step t (public: it is a function of the step count), so the expected batch
//! is |B| and the gradient is divided by |B|. A transition is exposed only while it is in the
//! buffer; composing the subsampled Gaussian over **every** gradient step of the run, at the
//! q_t of that step, bounds every transition's privacy loss (the accountant of Mironov, Talwar
//! & Zhang 2019, as in Opacus, for add/remove neighbours), each step at exactly its own q_t
//! ([`ReleaseSchedule`](privrl_privacy::ReleaseSchedule)).
//!
//! **Adjacency.** Every ε here is stated under an [`Adjacency`], add/remove by default (as in
//! Opacus), or substitution ([`DpSgdTrainingConfig::adjacency`]), whose per-step RDP is a
//! conservative bound, exact at q = 1 ([`privrl_privacy::rdp_subsampled_gaussian_under`]). An ε is printed with its
//! unit and relation ([`PrivacyTally::label`]).
//!
//! **Resuming.** `save_checkpoint` writes the engine's state ([`EngineState`]: every release,
//! σ, δ, the adjacency, the current C and the generator's position) beside the agent's
//! checkpoint (and, for DQN, the replay buffer, whose size sets the q_t to come);
//! `load_checkpoint` continues them, so a resumed run's ε composes over every step since the
//! start, never only those since the resume, and the run goes on bit for bit as if never
//! interrupted.
//!
//! **LDP on observations has no ε.** The observation noise has no sensitivity bound (states
//! are unbounded), so it is a heuristic, as the slides' own "need for theoretical guarantees"
//! says; [`NoisyObservationEnv`] reports ε = ∞.
//!
//! Clipping is flat (the whole gradient vector to C), as in Abadi et al. The slides' REINFORCE
//! code clips each parameter tensor to C and adds σC noise to each, which has sensitivity
//! √P·C for P tensors: its σ corresponds to σ/√P here.

mod config;
mod dqn;
mod observation;
mod ppo;
mod reinforce;
mod tally;

pub use config::DpSgdTrainingConfig;
pub use dqn::{private_td_gradient, DpSgdDqn, DpSgdDqnStep};
pub use observation::NoisyObservationEnv;
pub use ppo::{
    DpPpo, DpPpoBenchPhase, DpPpoConfig, DpPpoNoise, DpPpoStats, DpPpoStep, GivenEpisode,
};
pub use reinforce::DpSgdReinforce;
pub use tally::{PrivacyTally, PrivacyUnit};

//! Gradient inversion attacks on reinforcement-learning agents: QGI and RGI (Li, Ding & Zhao,
//! "Your Room is not Private: Gradient Inversion Attack on Reinforcement Learning") and the
//! DLG and Inverting-Gradients baselines of its Table II.
//!
//! An attacker who sees the gradient g = ∇_w J(F(x; w), u) (eq. 1) that a learner shares, and
//! knows the network F and the objective J (white box, honest but curious), reconstructs the
//! state x, the action and the supervision signal u by minimising a gradient matching loss
//! L(g_rec, g) (eq. 2).
//!
//! Every public item has one path, at the crate root; the modules are private:
//!
//! - `model`: what the attacks need from a network ([`InvertibleModel`]): privrl's
//!   [`privrl_agents::MultimodalNet`], [`privrl_agents::ConvNet`] and [`privrl_agents::Mlp`],
//!   or your own Burn module.
//! - `victim`: the attacked network ([`Victim`]) and its shared gradient for a batch of
//!   [`Sample`]s, under DQN's or REINFORCE's loss.
//! - `parts`: the named, swappable parts (gradient source, matching loss, prior, stages,
//!   action rules, schedule); the image prior is a trait, [`ImageRegulariser`], so a prior
//!   of one's own plugs in by name ([`register_image_prior`], module `prior`), and so does a
//!   rule for the supervision signal ([`SignalSource`], [`register_signal_rule`], module
//!   `signal`);
//!   `adam`: Adam over raw tensors ([`TensorAdam`]).
//! - `attack`: the one optimisation loop and the attack pipeline ([`attack()`]);
//!   [`AttackConfig::qgi`], [`AttackConfig::rgi`], [`AttackConfig::dlg`] and
//!   [`AttackConfig::inverting_gradients`] are configurations of it.
//! - `recovery`: the rule-based action and signal reconstruction (eq. 7–9, Section IV-C2).
//! - `metrics`: PSNR, SSIM, IoU, action accuracy, percentage and absolute errors ([`psnr`]).
//! - `suite`: per-sample evaluation rows for Tables I and II.
//! - `defence`: DP-SGD, Laplace and projected-random-sign defences between the learner and
//!   the attacker ([`Defence`]), for measuring leakage against ε.
//!
//! Second-order gradients use `Autodiff<Autodiff<B>>` (see `docs/architecture.md`); every layer of
//! the victim is twice differentiable.

//!
//! QGI on a DQN learner that shares the gradient of one private transition:
//!
//! ```
//! use burn::backend::NdArray;
//! use privrl_agents::MultimodalNetConfig;
//! use privrl_attacks::{attack, AttackConfig, Sample, Victim, VictimKind};
//!
//! // A Q-network on a 4-value state (a target's bounding box), 7 actions, no cameras.
//! let network = MultimodalNetConfig::new(4, 7)
//!     .with_vector_hidden(vec![16])
//!     .with_head_hidden(vec![32]);
//! let victim = Victim::<NdArray>::from_seed(&network, VictimKind::Dqn, 3, &Default::default())?;
//! let secret = Sample {
//!     rgb: None,
//!     depth: None,
//!     vector: vec![-0.5, -0.2, 0.3, 0.6],
//!     action: 2,
//!     signal: 1.5, // the target Q-value of the TD loss
//! };
//! // What the learner shares: the gradient of its TD loss on the transition.
//! let shared = victim.shared_gradient(std::slice::from_ref(&secret))?;
//! let stolen = attack(&victim, &shared, &AttackConfig::qgi())?;
//! assert_eq!(stolen.action, secret.action);
//! for (got, truth) in stolen.vector.iter().zip(&secret.vector) {
//!     assert!((got - truth).abs() < 1e-2, "{:?}", stolen.vector);
//! }
//! assert!((stolen.signal - secret.signal).abs() < 1e-2 * secret.signal, "{}", stolen.signal);
//! # Ok::<(), privrl_attacks::AttackError>(())
//! ```
#![warn(missing_docs)]
#![warn(unreachable_pub)]

mod adam;
mod attack;
mod defence;
mod error;
mod io;
mod metrics;
mod model;
mod parts;
mod prior;
mod recovery;
mod signal;
mod suite;
mod victim;

pub use adam::{TensorAdam, TensorAdamConfig};
pub use attack::{
    attack, attack_batch, attack_each, attack_each_batches, batch_action_assignments, AttackConfig,
    LossRecord, Reconstruction, Stage, MAX_BATCH,
};
pub use defence::Defence;
pub use error::AttackError;
pub use io::read_metadata;
pub use metrics::{
    absolute_error, action_accuracy, bbox_iou, gaussian_window, luma_bt601, percentage_error, psnr,
    score_rgb, score_single_channel, ssim, ImageNormalisation, ImageScores, SSIM_SIGMA,
    SSIM_WINDOW,
};
pub use model::{InvertibleModel, LinearSplit, ObservationParts, SplitLayers};
pub use parts::{
    gaussian_noise, register_image_prior, total_variation, ActionRecovery, ActionRule,
    GradientMatchingLoss, GradientSource, ImagePrior, ImageRegulariser, LrSchedule,
    MatchedGradient, ReconstructedGradient, SignalRule, StateOptimisation, TotalVariation,
};
pub use recovery::{
    action_from_bias_gradient, odd_sign_action, policy_gradient_recovery,
    q_value_from_error_magnitude, PolicyGradientRecovery, QValueRecovery,
};
pub use signal::{register_signal_rule, SignalSource};
pub use suite::{
    best_matching, evaluate_defended_batch_inversion, evaluate_defended_inversion,
    evaluate_defended_inversion_batched, evaluate_inversion, score_reconstruction, InversionRow,
    ReconstructedState,
};
pub use victim::{Inner, LinearPartInput, LinearPartOutput, Outer, Sample, Victim, VictimKind};

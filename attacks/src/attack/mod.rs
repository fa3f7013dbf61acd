//! The gradient inversion loop shared by QGI, RGI, DLG and IG (eq. 2), and the attack that
//! strings its stages together with the rule-based parts (Fig. 2).
//!
//! One iteration, on `Autodiff<Autodiff<B>>`:
//! 1. lift the free variables θ (a flat tensor on `B`) to the inner autodiff and split them
//!    into the state parts (and, for DLG/IG, the action logits and the signal);
//! 2. forward the victim, build J̃ (eq. 6) or J (eq. 1), outer `backward()`: the weight
//!    gradients g_rec come back as inner-tracked tensors;
//! 3. L = L(g_rec, g) (eq. 5 or L2) + λ TV (stage 2), inner `backward()`: ∂L/∂θ;
//! 4. one Adam step on θ, on device.
//!
//! The victim module is built once and reused; the shared gradient is uploaded once.
//!
//! The attack's stages, one module each:
//! - `config`: [`AttackConfig`], the parts an attack combines and the optimiser's settings;
//! - `problem`: what stays fixed during the optimisation (the victim, the shared gradient);
//! - `variables`: the layout of the flat free variables θ and their split into state parts;
//! - `matching`: the loss of one iteration, L(g_rec, g) plus the prior;
//! - `optimisation`: the optimisation loop (Adam on θ) and its restarts;
//! - `linear_part`: stage 1, the input of the linear part;
//! - `images`: stage 2, the images with the vector fixed;
//! - `state`: the state, by the two stages or the joint ablation;
//! - `supervision`: the action and the signal, by the rules or jointly optimised;
//! - `batch`: the batch attack's action enumeration;
//! - `each`: the batched attack of many samples' own gradients in one optimisation
//!   ([`attack_each`]), and `per_sample`: its loss, each sample against its own gradient;
//! - `reconstruction`: what an attack returns ([`Reconstruction`], [`LossRecord`]).

mod batch;
mod config;
mod each;
mod images;
mod linear_part;
mod matching;
mod optimisation;
mod per_sample;
mod problem;
mod reconstruction;
mod state;
mod supervision;
mod variables;

use burn::tensor::backend::Backend;
use privrl_agents::autodiff;
use privrl_agents::GradientRecord;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use crate::error::AttackError;
use crate::model::InvertibleModel;
use crate::parts::{GradientSource, StateOptimisation};
use crate::victim::{Inner, Outer, Victim};

pub use batch::batch_action_assignments;
pub use config::AttackConfig;
pub use each::{attack_each, attack_each_batches};
pub use reconstruction::{LossRecord, Reconstruction, Stage};

use problem::Problem;
use supervision::{FreeSupervision, Supervision};

/// Reconstructs the sample behind `record` (a gradient of one sample, as in the paper) by the
/// attack that `config` describes. Deterministic given `config.seed` and the backend.
///
/// 1. The state: two stages (linear part, then images) or the joint ablation, each an
///    optimisation of eq. 2 by the shared loop. A model without a linear split
///    ([`InvertibleModel::linear_split`]) always takes the joint optimisation.
/// 2. The action and the signal: by the rules (eq. 7, Section IV-C2, eq. 8–9) on the
///    reconstruction of the linear part, or, for DLG/IG, the jointly optimised values.
pub fn attack<B: Backend, M: InvertibleModel<Outer<B>>>(
    victim: &Victim<B, M>,
    record: &GradientRecord,
    config: &AttackConfig,
) -> Result<Reconstruction, AttackError> {
    Ok(attack_batch(victim, record, config, 1)?.remove(0))
}

/// The largest batch [`attack_batch`] takes: the paper's limitation (Section VI) and the
/// batches of the leakage suite; the action enumeration grows as C(|B| − 1, |A| − 1).
pub const MAX_BATCH: usize = 8;

/// Reconstructs the `batch_size` samples behind `record`, the gradient of J over one batch
/// (eq. 1), in an unknown order. `batch_size` 1 is [`attack`].
///
/// Batches of more than one sample take QGI's two stages on a DQN victim, extended as
/// Section IV-C1 suggests ("the action reconstruction may require enumeration"):
/// - the actions are the |B| entries of ∇_{b_last} J largest in magnitude (its non-zero
///   entries without noise; eq. 7 per sample);
/// - every way of giving those actions to the |B| samples, each used at least once, is
///   tried in stage 1, and the one with the lowest matching loss is kept;
/// - sample k's error direction (eq. 6, per sample) is the one-hot of its action scaled by
///   ∇_{b_last} J at that action, divided equally among the samples that share the action.
///   The true split is unknown; with distinct actions this is exact;
/// - its target Q is Q̂_rec(s_k, a_k) − |B|·d_k/2, since J is the batch mean of (Q̂ − Q)².
pub fn attack_batch<B: Backend, M: InvertibleModel<Outer<B>>>(
    victim: &Victim<B, M>,
    record: &GradientRecord,
    config: &AttackConfig,
    batch_size: usize,
) -> Result<Vec<Reconstruction>, AttackError> {
    autodiff::exclusive(|| {
        config.validate()?;
        config.check_compatible(victim.kind())?;
        if let Some(prior) = &config.prior {
            prior.check_available::<Inner<B>>()?;
        }
        if let GradientSource::Objective { signal, .. } = &config.source {
            signal.check_available()?;
        }
        if !(1..=MAX_BATCH).contains(&batch_size) {
            return Err(AttackError::OutOfRange {
                name: "batch_size",
                value: batch_size as f64,
                expected: "1..=8",
            });
        }
        let problem = Problem::new(victim, record, config, batch_size)?;
        let mut rng = ChaCha8Rng::seed_from_u64(config.seed);
        if batch_size > 1 {
            return problem.batch_attack(&mut rng);
        }
        let mut history = Vec::new();

        // Free supervision (DLG/IG): action logits and signal, carried from stage to stage.
        let mut supervision = FreeSupervision::new(
            config,
            problem.known_signal(),
            victim.num_actions(),
            &mut rng,
        )?;
        // A model without a linear split has no stage 1: its state is optimised jointly.
        let two_stages = victim.net().linear_split().is_some();
        let state = match config.state {
            StateOptimisation::TwoStage if two_stages => {
                problem.two_stages(&mut supervision, &mut rng, &mut history)?
            }
            StateOptimisation::TwoStage | StateOptimisation::Joint => {
                problem.joint_state(&mut supervision, &mut rng, &mut history)?
            }
        };
        let Supervision {
            action,
            signal,
            predicted_q,
            probabilities,
        } = problem.recover_supervision(
            record,
            (state.rgb.as_deref(), state.depth.as_deref()),
            &state.linear_part,
            &supervision,
        )?;
        Ok(vec![Reconstruction {
            rgb: state.rgb,
            depth: state.depth,
            vector: state.linear_part.vector.clone(),
            action,
            signal,
            predicted_q,
            probabilities,
            linear_part: state.linear_part,
            loss_history: history,
        }])
    })
}

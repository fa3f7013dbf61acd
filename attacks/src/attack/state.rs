//! The state reconstruction: stage 1 then stage 2, or the joint ablation of both.

use burn::tensor::backend::Backend;
use rand_chacha::ChaCha8Rng;

use super::problem::Problem;
use super::reconstruction::{LossRecord, Stage};
use super::supervision::FreeSupervision;
use super::variables::Block;
use crate::error::AttackError;
use crate::model::InvertibleModel;
use crate::victim::{LinearPartInput, Outer};

/// The reconstructed state.
pub(super) struct StateReconstruction {
    pub(super) rgb: Option<Vec<f32>>,
    pub(super) depth: Option<Vec<f32>>,
    pub(super) linear_part: LinearPartInput,
}

impl<B: Backend, M: InvertibleModel<Outer<B>>> Problem<'_, B, M> {
    /// Stage 1 (the linear part's input from the Dense layers' gradients), then stage 2 (the
    /// images from all gradients, s_c fixed at stage 1's result).
    pub(super) fn two_stages(
        &self,
        supervision: &mut FreeSupervision,
        rng: &mut ChaCha8Rng,
        history: &mut Vec<LossRecord>,
    ) -> Result<StateReconstruction, AttackError> {
        let (_, linear) = self.linear_stage(supervision, rng, history);
        let linear_part = self.linear_part_inputs(&linear).remove(0);
        let (rgb, depth) = self.image_stage(&linear, supervision, rng, history);
        Ok(StateReconstruction {
            rgb,
            depth,
            linear_part,
        })
    }

    /// The ablation of Fig. 4: images and vector together, against all gradients; the attack
    /// of a model without a linear split.
    pub(super) fn joint_state(
        &self,
        supervision: &mut FreeSupervision,
        rng: &mut ChaCha8Rng,
        history: &mut Vec<LossRecord>,
    ) -> Result<StateReconstruction, AttackError> {
        let layout = self.image_layout(true);
        let (_, theta) = self.run_restarts(Stage::Joint, layout, supervision, None, rng, history);
        let (rgb, depth) = (theta.read(Block::Rgb), theta.read(Block::Depth));
        let vector = theta.read(Block::Vector).unwrap_or_default();
        let linear_part =
            self.victim
                .linear_part_input_of(rgb.as_deref(), depth.as_deref(), &vector)?;
        Ok(StateReconstruction {
            rgb,
            depth,
            linear_part,
        })
    }
}

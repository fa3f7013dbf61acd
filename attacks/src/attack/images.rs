//! Stage 2: the images from all gradients, with s_c fixed at stage 1's result.

use burn::tensor::backend::Backend;
use rand_chacha::ChaCha8Rng;

use super::problem::Problem;
use super::reconstruction::{LossRecord, Stage};
use super::supervision::FreeSupervision;
use super::variables::{Block, Layout, Values};
use crate::victim::Inner;

impl<B: Backend> Problem<'_, B> {
    /// Stage 2: the images of every sample, s_c fixed at stage 1's result.
    pub(super) fn image_stage(
        &self,
        linear: &Values,
        supervision: &mut FreeSupervision,
        rng: &mut ChaCha8Rng,
        history: &mut Vec<LossRecord>,
    ) -> (Option<Vec<f32>>, Option<Vec<f32>>) {
        let net = self.victim.net();
        if net.rgb_shape.is_none() && net.depth_shape.is_none() {
            return (None, None);
        }
        let vector = crate::victim::tensor2::<Inner<B>>(
            &linear.read(Block::Vector).unwrap_or_default(),
            net.d_vector,
            self.victim.device(),
        );
        let layout = self.image_layout(false);
        let (_, theta) = self.run_restarts(
            Stage::Images,
            layout,
            supervision,
            Some(vector),
            rng,
            history,
        );
        (theta.read(Block::Rgb), theta.read(Block::Depth))
    }

    /// The images (and, for the joint ablation, the vector) as free variables.
    pub(super) fn image_layout(&self, with_vector: bool) -> Layout {
        let net = self.victim.net();
        let mut layout = Layout::default();
        if let Some(shape) = net.rgb_shape {
            layout.push(Block::Rgb, shape.len() * self.batch);
        }
        if let Some(shape) = net.depth_shape {
            layout.push(Block::Depth, shape.len() * self.batch);
        }
        if with_vector {
            layout.push(Block::Vector, net.d_vector);
        }
        layout
    }
}

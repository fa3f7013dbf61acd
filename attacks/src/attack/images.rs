//! Stage 2: the images from all gradients, with s_c fixed at stage 1's result.

use burn::tensor::backend::Backend;
use privrl_agents::tensor::matrix;
use rand_chacha::ChaCha8Rng;

use super::problem::Problem;
use super::reconstruction::{LossRecord, Stage};
use super::supervision::FreeSupervision;
use super::variables::{Block, Layout, Values};
use crate::model::InvertibleModel;
use crate::victim::{Inner, Outer};

impl<B: Backend, M: InvertibleModel<Outer<B>>> Problem<'_, B, M> {
    /// Stage 2: the images of every sample, s_c fixed at stage 1's result.
    pub(super) fn image_stage(
        &self,
        linear: &Values,
        supervision: &mut FreeSupervision,
        rng: &mut ChaCha8Rng,
        history: &mut Vec<LossRecord>,
    ) -> (Option<Vec<f32>>, Option<Vec<f32>>) {
        let parts = self.victim.observation_parts();
        if parts.rgb.is_none() && parts.depth.is_none() {
            return (None, None);
        }
        let vector = linear
            .read(Block::Vector)
            .map(|vector| matrix::<Inner<B>>(&vector, parts.vector, self.victim.device()));
        let layout = self.image_layout(false);
        let (_, theta) =
            self.run_restarts(Stage::Images, layout, supervision, vector, rng, history);
        (theta.read(Block::Rgb), theta.read(Block::Depth))
    }

    /// The images (and, for the joint ablation, the vector) as free variables.
    pub(super) fn image_layout(&self, with_vector: bool) -> Layout {
        let parts = self.victim.observation_parts();
        let mut layout = Layout::default();
        if let Some(shape) = parts.rgb {
            layout.push(Block::Rgb, shape.len() * self.batch);
        }
        if let Some(shape) = parts.depth {
            layout.push(Block::Depth, shape.len() * self.batch);
        }
        if with_vector {
            layout.push(Block::Vector, parts.vector * self.batch);
        }
        layout
    }
}

//! Stage 1: the input of the linear part (conv features and the vector state s_c) from the
//! gradients of the Dense layers.

use burn::tensor::backend::Backend;
use rand_chacha::ChaCha8Rng;

use super::problem::Problem;
use super::reconstruction::{LossRecord, Stage};
use super::supervision::FreeSupervision;
use super::variables::{split_rows, Block, Layout, Values};
use crate::victim::LinearPartInput;

impl<B: Backend> Problem<'_, B> {
    /// Stage 1: the inputs of the linear part (conv features and s_c) of every sample, with
    /// the final loss of the best restart.
    pub(super) fn linear_stage(
        &self,
        supervision: &mut FreeSupervision,
        rng: &mut ChaCha8Rng,
        history: &mut Vec<LossRecord>,
    ) -> (f64, Values) {
        let net = self.victim.net();
        let mut layout = Layout::default();
        if let Some(e) = &net.rgb {
            layout.push(Block::RgbFeatures, e.d_output * self.batch);
        }
        if let Some(e) = &net.depth {
            layout.push(Block::DepthFeatures, e.d_output * self.batch);
        }
        layout.push(Block::Vector, net.d_vector * self.batch);
        self.run_restarts(Stage::LinearPart, layout, supervision, None, rng, history)
    }

    /// Stage 1's result split into one [`LinearPartInput`] per sample.
    pub(super) fn linear_part_inputs(&self, linear: &Values) -> Vec<LinearPartInput> {
        let rows = |block| linear.read(block).map(|v| split_rows(&v, self.batch));
        let (rgb, depth) = (rows(Block::RgbFeatures), rows(Block::DepthFeatures));
        let vector = rows(Block::Vector).unwrap_or_else(|| vec![Vec::new(); self.batch]);
        (0..self.batch)
            .map(|k| LinearPartInput {
                rgb_features: rgb.as_ref().map(|r| r[k].clone()),
                depth_features: depth.as_ref().map(|d| d[k].clone()),
                vector: vector[k].clone(),
            })
            .collect()
    }
}

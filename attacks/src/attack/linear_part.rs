//! Stage 1: the input of the linear part (conv features and the vector state s_c) from the
//! gradients of the Dense layers.

use burn::tensor::backend::Backend;
use rand_chacha::ChaCha8Rng;

use super::problem::Problem;
use super::reconstruction::{LossRecord, Stage};
use super::supervision::FreeSupervision;
use super::variables::{split_rows, Block, Layout, Values};
use crate::model::InvertibleModel;
use crate::victim::{LinearPartInput, Outer};

impl<B: Backend, M: InvertibleModel<Outer<B>>> Problem<'_, B, M> {
    /// Stage 1: the inputs of the linear part (conv features and s_c) of every sample, with
    /// the final loss of the best restart. Needs the model's linear split (checked before).
    pub(super) fn linear_stage(
        &self,
        supervision: &mut FreeSupervision,
        rng: &mut ChaCha8Rng,
        history: &mut Vec<LossRecord>,
    ) -> (f64, Values) {
        let layout = self.linear_layout();
        self.run_restarts(Stage::LinearPart, layout, supervision, None, rng, history)
    }

    /// Stage 1's free variables: the conv features and s_c of every sample.
    pub(super) fn linear_layout(&self) -> Layout {
        let (rgb, depth) = self
            .victim
            .net()
            .linear_split()
            .map_or((None, None), |split| split.feature_widths());
        let mut layout = Layout::default();
        layout.push(Block::RgbFeatures, rgb.unwrap_or(0) * self.batch);
        layout.push(Block::DepthFeatures, depth.unwrap_or(0) * self.batch);
        layout.push(
            Block::Vector,
            self.victim.observation_parts().vector * self.batch,
        );
        layout
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

//! The free variables θ: the named blocks of the flat vector, their layout, and their split
//! into the state parts (and the supervision of DLG/IG) on the inner autodiff.

use burn::tensor::backend::Backend;
use burn::tensor::Tensor;

use super::problem::Problem;
use crate::model::InvertibleModel;
use crate::victim::{Inner, Outer};

/// `values` cut into `rows` equal consecutive rows (one per sample).
pub(super) fn split_rows(values: &[f32], rows: usize) -> Vec<Vec<f32>> {
    let len = values.len() / rows.max(1);
    values.chunks(len.max(1)).map(<[f32]>::to_vec).collect()
}

/// A named block of the flat variable vector θ.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Block {
    Rgb,
    Depth,
    Vector,
    RgbFeatures,
    DepthFeatures,
    ActionLogits,
    Signal,
}

/// Where each block lies in θ.
#[derive(Debug, Clone, Default)]
pub(super) struct Layout {
    blocks: Vec<(Block, usize, usize)>,
    pub(super) len: usize,
}

impl Layout {
    /// Appends a block; an empty one is left out (a part the model does not read).
    pub(super) fn push(&mut self, block: Block, len: usize) {
        if len == 0 {
            return;
        }
        self.blocks.push((block, self.len, len));
        self.len += len;
    }

    pub(super) fn append(&mut self, other: &Layout) {
        for &(block, _, len) in &other.blocks {
            self.push(block, len);
        }
    }

    fn range(&self, block: Block) -> Option<(usize, usize)> {
        self.blocks
            .iter()
            .find(|(b, _, _)| *b == block)
            .map(|&(_, offset, len)| (offset, len))
    }

    pub(super) fn read(&self, block: Block, theta: &[f32]) -> Option<Vec<f32>> {
        self.range(block)
            .map(|(offset, len)| theta[offset..offset + len].to_vec())
    }

    /// The values of `other`'s blocks, in `other`'s order.
    pub(super) fn read_all(&self, other: &Layout, theta: &[f32]) -> Vec<f32> {
        other
            .blocks
            .iter()
            .flat_map(|&(block, _, _)| self.read(block, theta).unwrap_or_default())
            .collect()
    }

    /// The layout of one sample's values, where this layout holds `samples` samples' blocks
    /// side by side (each block `samples` equal rows, as [`Problem::split`] reads them).
    pub(super) fn per_sample(&self, samples: usize) -> Layout {
        let mut layout = Layout::default();
        for &(block, _, len) in &self.blocks {
            layout.push(block, len / samples);
        }
        layout
    }

    /// This layout's values from each sample's values in [`Layout::per_sample`]'s layout.
    pub(super) fn interleave(&self, each: &[Vec<f32>]) -> Vec<f32> {
        let one = self.per_sample(each.len());
        let mut theta = Vec::with_capacity(self.len);
        for &(block, _, _) in &self.blocks {
            for values in each {
                theta.extend(one.read(block, values).unwrap_or_default());
            }
        }
        theta
    }

    /// Each of `samples` samples' values, in [`Layout::per_sample`]'s layout.
    pub(super) fn deinterleave(&self, samples: usize, theta: &[f32]) -> Vec<Vec<f32>> {
        let mut each = vec![Vec::new(); samples];
        for &(_, offset, len) in &self.blocks {
            for (k, row) in split_rows(&theta[offset..offset + len], samples)
                .into_iter()
                .enumerate()
            {
                each[k].extend(row);
            }
        }
        each
    }

    fn slice<BB: Backend>(&self, block: Block, theta: &Tensor<BB, 1>) -> Option<Tensor<BB, 1>> {
        self.range(block)
            .map(|(offset, len)| theta.clone().narrow(0, offset, len))
    }
}

/// The final values of a stage with their layout.
pub(super) struct Values {
    pub(super) layout: Layout,
    pub(super) theta: Vec<f32>,
}

impl Values {
    pub(super) fn read(&self, block: Block) -> Option<Vec<f32>> {
        self.layout.read(block, &self.theta)
    }
}

/// The free variables of one iteration, on the inner autodiff.
pub(super) struct Vars<BB: Backend> {
    pub(super) rgb: Option<Tensor<BB, 4>>,
    pub(super) depth: Option<Tensor<BB, 4>>,
    pub(super) vector: Option<Tensor<BB, 2>>,
    pub(super) rgb_features: Option<Tensor<BB, 2>>,
    pub(super) depth_features: Option<Tensor<BB, 2>>,
    pub(super) action_logits: Option<Tensor<BB, 2>>,
    pub(super) signal: Option<Tensor<BB, 1>>,
}

impl<B: Backend, M: InvertibleModel<Outer<B>>> Problem<'_, B, M> {
    pub(super) fn split(&self, layout: &Layout, theta: &Tensor<Inner<B>, 1>) -> Vars<Inner<B>> {
        let parts = self.victim.observation_parts();
        let image = |block, shape: Option<privrl_agents::ImageShape>| {
            layout
                .slice(block, theta)
                .zip(shape)
                .map(|(t, s)| t.reshape([self.batch, s.channels, s.size, s.size]))
        };
        let batch = self.batch as i32;
        let row = |block| layout.slice(block, theta).map(|t| t.reshape([batch, -1]));
        Vars {
            rgb: image(Block::Rgb, parts.rgb),
            depth: image(Block::Depth, parts.depth),
            vector: row(Block::Vector),
            rgb_features: row(Block::RgbFeatures),
            depth_features: row(Block::DepthFeatures),
            action_logits: row(Block::ActionLogits),
            signal: layout.slice(Block::Signal, theta),
        }
    }
}

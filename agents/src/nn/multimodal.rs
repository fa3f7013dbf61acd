//! The multimodal victim network [`MultimodalNet`]: image branches, a vector branch and a head.

use burn::config::Config;
use burn::module::Module;
use burn::tensor::backend::Backend;
use burn::tensor::Tensor;
use rand::Rng;

use super::params::with_unique_param_ids;
use super::{Activation, ConvEncoder, ConvEncoderConfig, Dense, DenseConfig, Mlp, MlpConfig};
use crate::error::{check_hidden, AgentError};

/// Geometry of one image input: channels and square size in pixels.
#[derive(Config, Debug, Copy, PartialEq, Eq)]
pub struct ImageShape {
    /// Channels (3 for RGB, 1 for depth).
    pub channels: usize,
    /// Height and width in pixels.
    pub size: usize,
}

impl ImageShape {
    /// Values per image once flattened.
    pub fn len(&self) -> usize {
        self.channels * self.size * self.size
    }

    /// Whether the image has no values.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Configuration of a [`MultimodalNet`].
#[derive(Config, Debug)]
pub struct MultimodalNetConfig {
    /// Colour branch (`channels_in` 3); `None` when the observation has no RGB image.
    pub rgb: Option<ConvEncoderConfig>,
    /// Depth branch (`channels_in` 1); `None` when the observation has no depth image.
    pub depth: Option<ConvEncoderConfig>,
    /// Length of the vector observation (the QGI paper's target coordinates s_c).
    pub d_vector: usize,
    /// Output features (actions for a Q-network or a policy).
    pub d_output: usize,
    /// Widths of the Dense layers over the vector, each followed by the activation.
    #[config(default = "vec![32]")]
    pub vector_hidden: Vec<usize>,
    /// Widths of the hidden Dense layers after the concatenation.
    #[config(default = "vec![64]")]
    pub head_hidden: Vec<usize>,
    /// Non-linearity of the Dense layers.
    #[config(default = "Activation::Relu")]
    pub activation: Activation,
}

/// The victim network of the gradient inversion attacks (QGI and RGI): strided convolutions
/// over an RGB and a depth image, Dense layers over a vector, concatenation, Dense layers, and
/// a linear output (Q-values or policy logits).
///
/// Its linear part is inspectable: [`MultimodalNet::linear_layers`] lists every Dense layer,
/// [`MultimodalNet::last_layer`] is the head, and
/// [`MultimodalNet::forward_with_linear_inputs`] returns the input of every Dense layer (the
/// attack's stage-1 targets, which include the vector s_c itself).
#[derive(Module, Debug)]
pub struct MultimodalNet<B: Backend> {
    /// Colour branch.
    pub rgb: Option<ConvEncoder<B>>,
    /// Depth branch.
    pub depth: Option<ConvEncoder<B>>,
    /// Dense layers over the vector, each followed by the activation.
    pub vector_layers: Vec<Dense<B>>,
    /// Dense layers after the concatenation `[rgb features, depth features, vector features]`;
    /// its last layer is the output layer.
    pub head: Mlp<B>,
    /// Non-linearity of the vector branch.
    #[module(skip)]
    pub activation: Activation,
    /// Geometry of the RGB input.
    #[module(skip)]
    pub rgb_shape: Option<ImageShape>,
    /// Geometry of the depth input.
    #[module(skip)]
    pub depth_shape: Option<ImageShape>,
    /// Length of the vector input.
    pub d_vector: usize,
}

/// The input of every Dense layer of a [`MultimodalNet`], from one forward pass.
#[derive(Debug, Clone)]
pub struct LinearInputs<B: Backend> {
    /// Inputs of the vector branch's layers; the first is the vector observation itself.
    pub vector_branch: Vec<Tensor<B, 2>>,
    /// Inputs of the head's layers; the first is the concatenated feature vector.
    pub head: Vec<Tensor<B, 2>>,
}

impl MultimodalNetConfig {
    /// Checks the sizes before [`MultimodalNetConfig::init`], which cannot fail: `d_output`
    /// and every hidden width from 1 to [`MAX_HIDDEN_WIDTH`](crate::MAX_HIDDEN_WIDTH),
    /// `d_vector` at most that (0: no vector part), and each image branch
    /// ([`ConvEncoderConfig::validate`]).
    pub fn validate(&self) -> Result<(), AgentError> {
        check_hidden("vector_hidden", &self.vector_hidden)?;
        check_hidden("head_hidden", &self.head_hidden)?;
        check_hidden("d_output", &[self.d_output])?;
        if self.d_vector > crate::MAX_HIDDEN_WIDTH {
            return Err(AgentError::InvalidParameter {
                name: "d_vector",
                value: self.d_vector as f64,
                expected: "from 0 to 65,536 (MAX_HIDDEN_WIDTH)",
            });
        }
        for encoder in [&self.rgb, &self.depth].into_iter().flatten() {
            encoder.validate()?;
        }
        Ok(())
    }

    /// Initialises every layer from `rng`: RGB convolutions, depth convolutions, the vector
    /// branch, then the head.
    pub fn init<B: Backend>(&self, device: &B::Device, rng: &mut impl Rng) -> MultimodalNet<B> {
        let rgb = self.rgb.as_ref().map(|c| c.init(device, rng));
        let depth = self.depth.as_ref().map(|c| c.init(device, rng));
        let mut width = self.d_vector;
        let mut vector_layers = Vec::with_capacity(self.vector_hidden.len());
        for &hidden in &self.vector_hidden {
            vector_layers.push(DenseConfig::new(width, hidden).init(device, rng));
            width = hidden;
        }
        let features = rgb.as_ref().map_or(0, |e: &ConvEncoder<B>| e.d_output)
            + depth.as_ref().map_or(0, |e: &ConvEncoder<B>| e.d_output)
            + width;
        let head = MlpConfig::new(features, self.head_hidden.clone(), self.d_output)
            .with_activation(self.activation)
            .init(device, rng);
        let shape = |c: &ConvEncoderConfig| ImageShape {
            channels: c.channels_in,
            size: c.image_size,
        };
        with_unique_param_ids(MultimodalNet {
            rgb,
            depth,
            vector_layers,
            head,
            activation: self.activation,
            rgb_shape: self.rgb.as_ref().map(shape),
            depth_shape: self.depth.as_ref().map(shape),
            d_vector: self.d_vector,
        })
    }
}

impl<B: Backend> MultimodalNet<B> {
    /// `rgb: [batch, 3, s, s]`, `depth: [batch, 1, s, s]`, `vector: [batch, d_vector]` →
    /// `[batch, d_output]`. Pass `None` for a branch the network does not have.
    pub fn forward(
        &self,
        rgb: Option<Tensor<B, 4>>,
        depth: Option<Tensor<B, 4>>,
        vector: Tensor<B, 2>,
    ) -> Tensor<B, 2> {
        self.head.forward(self.features(rgb, depth, vector))
    }

    /// The concatenated features `[rgb, depth, vector branch]`: the input of the head's first
    /// Dense layer.
    pub fn features(
        &self,
        rgb: Option<Tensor<B, 4>>,
        depth: Option<Tensor<B, 4>>,
        vector: Tensor<B, 2>,
    ) -> Tensor<B, 2> {
        self.features_with_vector_inputs(rgb, depth, vector).0
    }

    fn features_with_vector_inputs(
        &self,
        rgb: Option<Tensor<B, 4>>,
        depth: Option<Tensor<B, 4>>,
        vector: Tensor<B, 2>,
    ) -> (Tensor<B, 2>, Vec<Tensor<B, 2>>) {
        let mut parts = Vec::with_capacity(3);
        if let (Some(encoder), Some(images)) = (&self.rgb, rgb) {
            parts.push(encoder.forward(images));
        }
        if let (Some(encoder), Some(images)) = (&self.depth, depth) {
            parts.push(encoder.forward(images));
        }
        let mut inputs = Vec::with_capacity(self.vector_layers.len());
        let mut h = vector;
        for layer in &self.vector_layers {
            inputs.push(h.clone());
            h = self.activation.forward(layer.forward(h));
        }
        parts.push(h);
        (Tensor::cat(parts, 1), inputs)
    }

    /// The output together with the input of every Dense layer.
    pub fn forward_with_linear_inputs(
        &self,
        rgb: Option<Tensor<B, 4>>,
        depth: Option<Tensor<B, 4>>,
        vector: Tensor<B, 2>,
    ) -> (Tensor<B, 2>, LinearInputs<B>) {
        let (features, vector_branch) = self.features_with_vector_inputs(rgb, depth, vector);
        let (out, head) = self.head.forward_with_layer_inputs(features);
        (
            out,
            LinearInputs {
                vector_branch,
                head,
            },
        )
    }

    /// Every Dense layer: the vector branch, then the head, input to output.
    pub fn linear_layers(&self) -> Vec<&Dense<B>> {
        self.vector_layers
            .iter()
            .chain(self.head.layers.iter())
            .collect()
    }

    /// The output layer (Q-values or policy logits).
    pub fn last_layer(&self) -> &Dense<B> {
        self.head.last_layer()
    }

    /// Values per flattened observation: RGB, then depth, then the vector, as
    /// `privrl_envs::Obs::write_flat` lays them out.
    pub fn flat_obs_len(&self) -> usize {
        self.rgb_shape.map_or(0, |s| s.len())
            + self.depth_shape.map_or(0, |s| s.len())
            + self.d_vector
    }

    /// Splits flat observations `[batch, flat_obs_len()]` into the images and the vector.
    #[allow(clippy::type_complexity)]
    pub(crate) fn split_flat(
        &self,
        obs: Tensor<B, 2>,
    ) -> (Option<Tensor<B, 4>>, Option<Tensor<B, 4>>, Tensor<B, 2>) {
        let [batch, _] = obs.dims();
        let mut offset = 0;
        let mut image = |shape: Option<ImageShape>| {
            shape.map(|s| {
                let part = obs.clone().narrow(1, offset, s.len());
                offset += s.len();
                part.reshape([batch, s.channels, s.size, s.size])
            })
        };
        let rgb = image(self.rgb_shape);
        let depth = image(self.depth_shape);
        let vector = obs.narrow(1, offset, self.d_vector);
        (rgb, depth, vector)
    }

    /// Output features.
    pub fn d_output(&self) -> usize {
        self.head.d_output()
    }
}

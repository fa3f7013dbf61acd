//! The image-only network [`ConvNet`]: a [`ConvEncoder`] followed by an [`Mlp`] head, the
//! plain CNN of Atari-style agents (Mnih et al.) built from twice-differentiable layers.

use burn::config::Config;
use burn::module::Module;
use burn::tensor::backend::Backend;
use burn::tensor::Tensor;
use rand::Rng;

use super::params::with_unique_param_ids;
use super::{Activation, ConvEncoder, ConvEncoderConfig, ImageShape, Mlp, MlpConfig};
use crate::network::Network;

/// Configuration of a [`ConvNet`].
#[derive(Config, Debug)]
pub struct ConvNetConfig {
    /// The image branch: channels, square size and the strided convolutions.
    pub encoder: ConvEncoderConfig,
    /// Output features (actions for a Q-network or a policy).
    pub d_output: usize,
    /// Widths of the hidden Dense layers after the flattened features.
    #[config(default = "vec![64]")]
    pub hidden: Vec<usize>,
    /// Non-linearity of the hidden Dense layers.
    #[config(default = "Activation::Relu")]
    pub activation: Activation,
}

/// Strided convolutions over one image, flattened, then Dense layers: an agent's network on
/// pixels alone. Its Dense layers ([`ConvNet::head`]) are the linear part that QGI's stage 1
/// inverts; the encoder's output is that part's input.
#[derive(Module, Debug)]
pub struct ConvNet<B: Backend> {
    /// The image branch.
    pub encoder: ConvEncoder<B>,
    /// Dense layers over the flattened features; the last is the output layer.
    pub head: Mlp<B>,
    /// Geometry of the input image.
    #[module(skip)]
    pub image: ImageShape,
}

impl ConvNetConfig {
    /// Initialises the convolutions, then the head, from `rng`.
    pub fn init<B: Backend>(&self, device: &B::Device, rng: &mut impl Rng) -> ConvNet<B> {
        let encoder = self.encoder.init(device, rng);
        let head = MlpConfig::new(encoder.d_output, self.hidden.clone(), self.d_output)
            .with_activation(self.activation)
            .init(device, rng);
        with_unique_param_ids(ConvNet {
            encoder,
            head,
            image: ImageShape {
                channels: self.encoder.channels_in,
                size: self.encoder.image_size,
            },
        })
    }
}

impl<B: Backend> ConvNet<B> {
    /// `[batch, channels, size, size] -> [batch, d_output]`.
    pub fn forward(&self, images: Tensor<B, 4>) -> Tensor<B, 2> {
        self.head.forward(self.encoder.forward(images))
    }

    /// Output features.
    pub fn d_output(&self) -> usize {
        self.head.d_output()
    }
}

impl<B: Backend> Network<B> for ConvNet<B> {
    fn obs_len(&self) -> usize {
        self.image.len()
    }

    fn d_output(&self) -> usize {
        ConvNet::d_output(self)
    }

    fn forward_flat(&self, obs: Tensor<B, 2>) -> Tensor<B, 2> {
        let [batch, _] = obs.dims();
        let ImageShape { channels, size } = self.image;
        self.forward(obs.reshape([batch, channels, size, size]))
    }
}

#[cfg(test)]
mod tests {
    use burn::backend::NdArray;
    use burn::tensor::TensorData;
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    use super::*;

    #[test]
    fn the_flat_forward_is_the_encoder_then_the_head() {
        let device = Default::default();
        let config = ConvNetConfig::new(ConvEncoderConfig::new(1, 6).with_channels(vec![2]), 3);
        let net: ConvNet<NdArray> = config.init(&device, &mut ChaCha8Rng::seed_from_u64(1));
        let values: Vec<f32> = (0..72).map(|i| (i as f32 * 0.37).sin()).collect();
        let flat =
            Tensor::<NdArray, 2>::from_data(TensorData::new(values.clone(), [2, 36]), &device);
        let images =
            Tensor::<NdArray, 4>::from_data(TensorData::new(values, [2, 1, 6, 6]), &device);
        let by_hand = net.head.forward(net.encoder.forward(images));
        assert_eq!(net.obs_len(), 36);
        assert_eq!(Network::d_output(&net), 3);
        // The same operations on the same values: equal to the bit.
        assert_eq!(net.forward_flat(flat).into_data(), by_hand.into_data());
    }
}

//! Convolutions: the im2col [`Conv2dLayer`] and the strided [`ConvEncoder`] image branch.

use burn::config::Config;
use burn::module::{Module, Param};
use burn::tensor::backend::Backend;
use burn::tensor::{Slice, Tensor};
use rand::Rng;

use super::params::{param_from_values, uniform_values, with_unique_param_ids};
use super::Activation;
use crate::error::{check_hidden, AgentError};
use crate::tensor::zero_pad;

/// Configuration of a [`Conv2dLayer`].
#[derive(Config, Debug)]
pub struct Conv2dLayerConfig {
    /// Input channels.
    pub channels_in: usize,
    /// Output channels.
    pub channels_out: usize,
    /// Square kernel size.
    #[config(default = 3)]
    pub kernel: usize,
    /// Stride; victims downsample with strides because pooling is not twice differentiable.
    #[config(default = 2)]
    pub stride: usize,
    /// Zero padding on every side.
    #[config(default = 1)]
    pub padding: usize,
}

/// 2-D convolution with weights drawn from a caller-supplied RNG.
#[derive(Module, Debug)]
pub struct Conv2dLayer<B: Backend> {
    /// Kernel of shape `[channels_out, channels_in, kernel, kernel]`.
    pub weight: Param<Tensor<B, 4>>,
    /// Bias of shape `[channels_out]`.
    pub bias: Param<Tensor<B, 1>>,
    /// Stride.
    pub stride: usize,
    /// Padding.
    pub padding: usize,
}

impl Conv2dLayerConfig {
    /// Initialises the layer as PyTorch's `nn.Conv2d` does, from `rng`.
    pub fn init<B: Backend>(&self, device: &B::Device, rng: &mut impl Rng) -> Conv2dLayer<B> {
        let fan_in = self.channels_in * self.kernel * self.kernel;
        let bound = 1.0 / (fan_in.max(1) as f32).sqrt();
        let shape = [
            self.channels_out,
            self.channels_in,
            self.kernel,
            self.kernel,
        ];
        Conv2dLayer {
            weight: param_from_values(
                uniform_values(rng, shape.iter().product(), bound),
                shape,
                device,
            ),
            bias: param_from_values(
                uniform_values(rng, self.channels_out, bound),
                [self.channels_out],
                device,
            ),
            stride: self.stride,
            padding: self.padding,
        }
    }
}

impl<B: Backend> Conv2dLayer<B> {
    /// `[batch, channels_in, h, w] -> [batch, channels_out, h', w']`.
    pub fn forward(&self, x: Tensor<B, 4>) -> Tensor<B, 4> {
        conv2d_im2col(
            x,
            self.weight.val(),
            self.bias.val(),
            self.stride,
            self.padding,
        )
    }

    /// Output spatial size for an input of `size`.
    pub fn output_size(&self, size: usize) -> usize {
        let [_, _, kernel, _] = self.weight.shape().dims();
        conv_output_size(size, kernel, self.stride, self.padding)
    }
}

/// Output length of a convolution along one axis of length `size`.
fn conv_output_size(size: usize, kernel: usize, stride: usize, padding: usize) -> usize {
    (size + 2 * padding - kernel) / stride + 1
}

/// 2-D convolution (square kernel, zero padding, no dilation) as im2col and one matrix product.
///
/// The columns are `kernel²` strided slices of the padded input, so every op here (pad, slice,
/// stack, matmul) is twice differentiable and the weight gradient is a matrix product. Burn
/// 0.21's fused `conv2d` computes the weight gradient on NdArray as a direct convolution whose
/// kernel is the output map, which made it the attacks' bottleneck at 150 × 150 px
/// (`cargo run --release -p privrl-agents --example profile_conv` compares the two).
pub fn conv2d_im2col<B: Backend>(
    x: Tensor<B, 4>,
    weight: Tensor<B, 4>,
    bias: Tensor<B, 1>,
    stride: usize,
    padding: usize,
) -> Tensor<B, 4> {
    let [batch, _, h, w] = x.dims();
    let [channels_out, channels_in, kernel, _] = weight.dims();
    let h_out = conv_output_size(h, kernel, stride, padding);
    let w_out = conv_output_size(w, kernel, stride, padding);
    let columns = im2col(x, kernel, stride, padding);
    let out = weight
        .reshape([channels_out, channels_in * kernel * kernel])
        .matmul(columns)
        + bias.reshape([channels_out, 1]);
    out.reshape([channels_out, batch, h_out, w_out])
        .swap_dims(0, 1)
}

/// The columns of [`conv2d_im2col`]: `[batch, c_in, h, w]` → `[c_in·k², batch·h'·w']`, rows
/// ordered as a `[c_out, c_in, k, k]` weight's (c, ki, kj), columns sample by sample. A
/// sample's weight gradient is its output error `[c_out, h'·w']` times its block of columns
/// transposed, which is how the batched attack forms per-sample convolution gradients.
pub fn im2col<B: Backend>(
    x: Tensor<B, 4>,
    kernel: usize,
    stride: usize,
    padding: usize,
) -> Tensor<B, 2> {
    let [batch, channels_in, h, w] = x.dims();
    let h_out = conv_output_size(h, kernel, stride, padding);
    let w_out = conv_output_size(w, kernel, stride, padding);
    let x = if padding > 0 {
        zero_pad(x, [(padding, padding), (padding, padding)])
    } else {
        x
    };
    let strided = |offset: usize, len: usize| {
        Slice::new(
            offset as isize,
            Some((offset + stride * (len - 1) + 1) as isize),
            stride as isize,
        )
    };
    let mut patches = Vec::with_capacity(kernel * kernel);
    for ki in 0..kernel {
        for kj in 0..kernel {
            patches.push(x.clone().slice([
                Slice::full(),
                Slice::full(),
                strided(ki, h_out),
                strided(kj, w_out),
            ]));
        }
    }
    let patch_len = channels_in * kernel * kernel;
    // [batch, c_in, k², h', w'] -> [c_in·k², batch·h'·w'], rows ordered as the weight's (c, ki, kj).
    Tensor::stack::<5>(patches, 2)
        .reshape([batch, patch_len, h_out * w_out])
        .swap_dims(0, 1)
        .reshape([patch_len, batch * h_out * w_out])
}

/// Configuration of a [`ConvEncoder`].
#[derive(Config, Debug)]
pub struct ConvEncoderConfig {
    /// Image channels (3 for RGB, 1 for depth).
    pub channels_in: usize,
    /// Square image size in pixels.
    pub image_size: usize,
    /// Output channels of each strided convolution.
    #[config(default = "vec![8, 16]")]
    pub channels: Vec<usize>,
    /// Kernel size of every convolution.
    #[config(default = 3)]
    pub kernel: usize,
    /// Stride of every convolution.
    #[config(default = 2)]
    pub stride: usize,
    /// Non-linearity after every convolution.
    #[config(default = "Activation::Relu")]
    pub activation: Activation,
}

/// Strided convolutions followed by a flatten: the image branch of the multimodal victims.
#[derive(Module, Debug)]
pub struct ConvEncoder<B: Backend> {
    /// Convolutions, input to output.
    pub convs: Vec<Conv2dLayer<B>>,
    /// Non-linearity after every convolution.
    #[module(skip)]
    pub activation: Activation,
    /// Flattened output features.
    pub d_output: usize,
}

impl ConvEncoderConfig {
    /// Checks the sizes before [`ConvEncoderConfig::init`], which cannot fail: `channels_in`
    /// and every entry of `channels` from 1 to [`MAX_HIDDEN_WIDTH`](crate::MAX_HIDDEN_WIDTH),
    /// `image_size` from 1 to 4,096, `kernel` from 1 to `image_size`, `stride` at least 1.
    pub fn validate(&self) -> Result<(), AgentError> {
        check_hidden("channels_in", &[self.channels_in])?;
        check_hidden("channels", &self.channels)?;
        let invalid = |name, value: usize, expected| {
            Err(AgentError::InvalidParameter {
                name,
                value: value as f64,
                expected,
            })
        };
        if !(1..=4096).contains(&self.image_size) {
            return invalid("image_size", self.image_size, "from 1 to 4,096");
        }
        if !(1..=self.image_size).contains(&self.kernel) {
            return invalid("kernel", self.kernel, "from 1 to image_size");
        }
        if self.stride == 0 {
            return invalid("stride", 0, ">= 1");
        }
        Ok(())
    }

    /// Initialises every convolution from `rng`.
    pub fn init<B: Backend>(&self, device: &B::Device, rng: &mut impl Rng) -> ConvEncoder<B> {
        let mut channels_in = self.channels_in;
        let mut size = self.image_size;
        let mut convs = Vec::with_capacity(self.channels.len());
        for &channels_out in &self.channels {
            let conv = Conv2dLayerConfig::new(channels_in, channels_out)
                .with_kernel(self.kernel)
                .with_stride(self.stride)
                .with_padding(self.kernel / 2)
                .init(device, rng);
            size = conv.output_size(size);
            channels_in = channels_out;
            convs.push(conv);
        }
        with_unique_param_ids(ConvEncoder {
            convs,
            activation: self.activation,
            d_output: channels_in * size * size,
        })
    }
}

impl<B: Backend> ConvEncoder<B> {
    /// `[batch, channels, size, size] -> [batch, d_output]`.
    pub fn forward(&self, images: Tensor<B, 4>) -> Tensor<B, 2> {
        let h = self
            .convs
            .iter()
            .fold(images, |h, conv| self.activation.forward(conv.forward(h)));
        h.flatten(1, 3)
    }
}

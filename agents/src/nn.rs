//! Network building blocks shared by agents and attacks.
//!
//! Every layer here is twice differentiable under `Autodiff<Autodiff<B>>`, so the gradient
//! inversion attacks can differentiate a weight gradient with respect to the input. That rules
//! out `burn::nn::Linear` (its fused `linear` op has a backward that cannot be differentiated
//! again) and pooling; see `docs/architecture.md`, "Burn 0.21, pinned".
//!
//! Parameters are drawn from a caller-supplied RNG rather than the backend's global one, so the
//! same seed gives the same weights on every backend and in every thread.

use burn::config::Config;
use burn::module::{Module, ModuleMapper, Param, ParamId};
use burn::optim::GradientsParams;
use burn::tensor::activation;
use burn::tensor::backend::Backend;
use burn::tensor::ops::PadMode;
use burn::tensor::{Slice, Tensor, TensorData};
use rand::Rng;
use std::hash::{Hash, Hasher};

/// Element-wise non-linearity between layers.
#[derive(Config, Debug, Copy, PartialEq, Eq)]
pub enum Activation {
    /// Hyperbolic tangent (Spinning Up's default for PPO).
    Tanh,
    /// Rectified linear unit.
    Relu,
}

impl Activation {
    /// Applies the non-linearity.
    pub fn forward<B: Backend, const D: usize>(&self, x: Tensor<B, D>) -> Tensor<B, D> {
        match self {
            Activation::Tanh => fast_tanh(x),
            Activation::Relu => activation::relu(x),
        }
    }

    /// The non-linearity on a tensor that no graph tracks: tanh as t = 1 − 2 / (e^{2x} + 1)
    /// alone, without [`fast_tanh`]'s graph terms.
    pub(crate) fn forward_untracked<B: Backend, const D: usize>(
        &self,
        x: Tensor<B, D>,
    ) -> Tensor<B, D> {
        match self {
            Activation::Tanh => ((x * 2.0).exp() + 1.0).recip() * -2.0 + 1.0,
            Activation::Relu => activation::relu(x),
        }
    }

    /// σ′(z) from the activation a = σ(z): 1 − a² for tanh, 1{a > 0} for ReLU.
    pub(crate) fn derivative_from_output<B: Backend, const D: usize>(
        &self,
        output: Tensor<B, D>,
    ) -> Tensor<B, D> {
        match self {
            Activation::Tanh => output.clone() * output * -1.0 + 1.0,
            Activation::Relu => output.greater_elem(0.0).float(),
        }
    }

    /// Lipschitz constant of the non-linearity (both are 1-Lipschitz).
    pub fn lipschitz_constant(&self) -> f64 {
        1.0
    }
}

/// tanh with a cheap backward, twice differentiable.
///
/// The value t = 1 − r with r = 2 / (e^{2x} + 1) (no overflow: e^{2x} = ∞ gives t = 1) and
/// the slope s = 1 − t² = r (2 − r) are computed off the graph, and the result is
/// `t + (x − x̄) s` with x̄ = x off the graph: its value is exactly t and its derivative is s.
/// The backward is then one multiplication, where burn-ndarray's `tanh` is an element-wise
/// `f64` call and its autodiff backward computes it a second time (together half of a PPO
/// update on CartPole).
///
/// Under `Autodiff<Autodiff<B>>` "off the graph" means off the outer graph only: t and s stay
/// tracked by the inner one, so a weight gradient (a function of s) is still differentiable
/// with respect to the input, with ∂s/∂x = −2t(1 − t²).
pub fn fast_tanh<B: Backend, const D: usize>(x: Tensor<B, D>) -> Tensor<B, D> {
    let x_const = x.clone().set_require_grad(false);
    let r = ((x_const.clone() * 2.0).exp() + 1.0).recip() * 2.0;
    let t = r.clone().neg() + 1.0;
    let slope = r.clone() * (r.neg() + 2.0);
    t + (x - x_const) * slope
}

/// Draws `len` values from U(−bound, bound), PyTorch's default for `nn.Linear` and `nn.Conv2d`
/// (Kaiming-uniform with a = √5 gives bound = 1/√fan_in for weights and biases alike).
fn uniform_values(rng: &mut impl Rng, len: usize, bound: f32) -> Vec<f32> {
    (0..len).map(|_| rng.random_range(-bound..=bound)).collect()
}

fn param_from_values<B: Backend, const D: usize>(
    values: Vec<f32>,
    shape: [usize; D],
    device: &B::Device,
) -> Param<Tensor<B, D>> {
    let id = ParamId::from(digest(&values, &shape));
    let tensor = Tensor::from_data(
        TensorData::new(values, shape).convert::<B::FloatElem>(),
        device,
    );
    Param::initialized(id, tensor.require_grad())
}

/// A hash of a parameter's initial values and shape: its id before [`with_unique_param_ids`].
/// Burn draws ids at random, and ids are written into checkpoints and key the optimizer state,
/// so two runs from one seed wrote different files.
fn digest(values: &[f32], shape: &[usize]) -> u64 {
    // SipHash with fixed keys: the same on every run and machine of one build.
    let mut hasher = std::hash::DefaultHasher::new();
    shape.hash(&mut hasher);
    for value in values {
        value.to_bits().hash(&mut hasher);
    }
    hasher.finish()
}

/// Mixes each parameter's id with its position in `module`, so that ids stay unique within a
/// module even where two parameters start from equal values. Every network's `init` ends here.
pub(crate) fn with_unique_param_ids<B: Backend, M: Module<B>>(module: M) -> M {
    struct Rekey {
        position: u64,
    }
    impl<B: Backend> ModuleMapper<B> for Rekey {
        fn map_float<const D: usize>(&mut self, param: Param<Tensor<B, D>>) -> Param<Tensor<B, D>> {
            let (id, tensor, mapper) = param.consume();
            let mut hasher = std::hash::DefaultHasher::new();
            (id.val(), self.position).hash(&mut hasher);
            self.position += 1;
            Param::from_mapped_value(ParamId::from(hasher.finish()), tensor, mapper)
        }
    }
    module.map(&mut Rekey { position: 0 })
}

/// Configuration of a [`Dense`] layer.
#[derive(Config, Debug)]
pub struct DenseConfig {
    /// Input features.
    pub d_input: usize,
    /// Output features.
    pub d_output: usize,
    /// Whether the layer adds a bias (the PGC paper's networks have none).
    #[config(default = true)]
    pub bias: bool,
}

/// Rows of the right operand per block in [`matmul_by_row_blocks`] (1 MiB of f32 at 64 columns).
const MATMUL_ROW_BLOCK: usize = 4096;

/// `x · w` as a sum over blocks of `w`'s rows: the same product, for a `w` that autodiff does
/// not track. The backward multiplies by the transposed blocks, and Burn 0.21's NdArray copies
/// a transposed operand element by element before a matmul; for the 92k × 64 first head layer
/// at 150 px that copy misses the cache on almost every read and took about a third of the
/// attacks' time, while a 4096-row block stays in cache.
pub fn matmul_by_row_blocks<B: Backend>(x: Tensor<B, 2>, w: Tensor<B, 2>) -> Tensor<B, 2> {
    let [rows, _] = w.dims();
    if rows <= MATMUL_ROW_BLOCK {
        return x.matmul(w);
    }
    (0..rows)
        .step_by(MATMUL_ROW_BLOCK)
        .map(|start| {
            let len = MATMUL_ROW_BLOCK.min(rows - start);
            x.clone()
                .narrow(1, start, len)
                .matmul(w.clone().narrow(0, start, len))
        })
        .reduce(|a, b| a + b)
        .expect("at least one block")
}

/// Fully connected layer `y = x W + 1 bᵀ`, built from matmuls and an add so that its backward
/// is itself differentiable. The bias enters as the outer product of a column of ones with b,
/// so its gradient is the matmul 1ᵀ G: the broadcast add's backward, a sum over the batch
/// axis, walked the batch row by row and took 14% of a PPO update on CartPole.
#[derive(Module, Debug)]
pub struct Dense<B: Backend> {
    /// Weight of shape `[d_input, d_output]`.
    pub weight: Param<Tensor<B, 2>>,
    /// Bias of shape `[d_output]`.
    pub bias: Option<Param<Tensor<B, 1>>>,
}

impl DenseConfig {
    /// Initialises the layer as PyTorch's `nn.Linear` does, from `rng`.
    pub fn init<B: Backend>(&self, device: &B::Device, rng: &mut impl Rng) -> Dense<B> {
        let bound = 1.0 / (self.d_input.max(1) as f32).sqrt();
        let weight = param_from_values(
            uniform_values(rng, self.d_input * self.d_output, bound),
            [self.d_input, self.d_output],
            device,
        );
        let bias = self.bias.then(|| {
            param_from_values(
                uniform_values(rng, self.d_output, bound),
                [self.d_output],
                device,
            )
        });
        Dense { weight, bias }
    }
}

impl<B: Backend> Dense<B> {
    /// `[batch, d_input] -> [batch, d_output]`.
    pub fn forward(&self, x: Tensor<B, 2>) -> Tensor<B, 2> {
        let weight = self.weight.val();
        // A tracked weight would collect one full-size gradient per block.
        let y = if weight.is_require_grad() {
            x.matmul(weight)
        } else {
            matmul_by_row_blocks(x, weight)
        };
        match &self.bias {
            Some(bias) => {
                let [rows, _] = y.dims();
                let ones = Tensor::<B, 2>::ones([rows, 1], &y.device());
                y + ones.matmul(bias.val().unsqueeze_dim(0))
            }
            None => y,
        }
    }

    /// Input and output sizes.
    pub fn dims(&self) -> (usize, usize) {
        let [d_input, d_output] = self.weight.shape().dims();
        (d_input, d_output)
    }
}

/// Configuration of a [`Mlp`].
#[derive(Config, Debug)]
pub struct MlpConfig {
    /// Input features.
    pub d_input: usize,
    /// Hidden layer widths, e.g. `[64, 64]`.
    pub hidden: Vec<usize>,
    /// Output features.
    pub d_output: usize,
    /// Non-linearity after every hidden layer (none after the output layer).
    #[config(default = "Activation::Tanh")]
    pub activation: Activation,
    /// Dropout probability after every hidden activation (0 disables it).
    #[config(default = 0.0)]
    pub dropout: f64,
    /// Whether the layers have biases.
    #[config(default = true)]
    pub bias: bool,
}

/// Multi-layer perceptron whose layer list is public, so attacks can address "the last linear
/// layer" and "the inputs of the linear layers".
#[derive(Module, Debug)]
pub struct Mlp<B: Backend> {
    /// Linear layers, input to output.
    pub layers: Vec<Dense<B>>,
    /// Hidden non-linearity.
    #[module(skip)]
    pub activation: Activation,
    /// Dropout after hidden activations; a no-op when not training.
    pub dropout: burn::nn::Dropout,
}

impl MlpConfig {
    /// Initialises every layer from `rng`, input to output.
    pub fn init<B: Backend>(&self, device: &B::Device, rng: &mut impl Rng) -> Mlp<B> {
        let widths: Vec<usize> = std::iter::once(self.d_input)
            .chain(self.hidden.iter().copied())
            .chain(std::iter::once(self.d_output))
            .collect();
        let layers = widths
            .windows(2)
            .map(|w| {
                DenseConfig::new(w[0], w[1])
                    .with_bias(self.bias)
                    .init(device, rng)
            })
            .collect();
        with_unique_param_ids(Mlp {
            layers,
            activation: self.activation,
            dropout: burn::nn::DropoutConfig::new(self.dropout).init(),
        })
    }
}

impl<B: Backend> Mlp<B> {
    /// `[batch, d_input] -> [batch, d_output]` (no activation on the output).
    pub fn forward(&self, x: Tensor<B, 2>) -> Tensor<B, 2> {
        self.forward_with_layer_inputs(x).0
    }

    /// The output together with the input of every linear layer, in order. The inputs are what
    /// the analytic per-sample gradients and the gradient inversion attacks need.
    pub fn forward_with_layer_inputs(&self, x: Tensor<B, 2>) -> (Tensor<B, 2>, Vec<Tensor<B, 2>>) {
        let mut inputs = Vec::with_capacity(self.layers.len());
        let mut h = x;
        let last = self.layers.len().saturating_sub(1);
        for (i, layer) in self.layers.iter().enumerate() {
            inputs.push(h.clone());
            h = layer.forward(h);
            if i < last {
                h = self.dropout.forward(self.activation.forward(h));
            }
        }
        (h, inputs)
    }

    /// The last linear layer (the Q or policy head).
    pub fn last_layer(&self) -> &Dense<B> {
        self.layers.last().expect("an Mlp has at least one layer")
    }

    /// Input features.
    pub fn d_input(&self) -> usize {
        self.layers[0].dims().0
    }

    /// Output features.
    pub fn d_output(&self) -> usize {
        self.last_layer().dims().1
    }
}

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
    let [batch, channels_in, h, w] = x.dims();
    let [channels_out, _, kernel, _] = weight.dims();
    let h_out = conv_output_size(h, kernel, stride, padding);
    let w_out = conv_output_size(w, kernel, stride, padding);
    let x = if padding > 0 {
        x.pad(
            [(padding, padding), (padding, padding)],
            PadMode::Constant(0.0),
        )
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
    let columns = Tensor::stack::<5>(patches, 2)
        .reshape([batch, patch_len, h_out * w_out])
        .swap_dims(0, 1)
        .reshape([patch_len, batch * h_out * w_out]);
    let out =
        weight.reshape([channels_out, patch_len]).matmul(columns) + bias.reshape([channels_out, 1]);
    out.reshape([channels_out, batch, h_out, w_out])
        .swap_dims(0, 1)
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

impl<B: Backend> Mlp<B> {
    /// The mean squared error (1/N) Σ_n (f(x_n)₀ − y_n)² of the first output against
    /// `targets`, and its gradient for every parameter, keyed by parameter id, by
    /// backpropagation written out: δ_L = (2/N)(f(x) − y), ∂W_l = h_lᵀ δ_l, ∂b_l = 1ᵀ δ_l and
    /// δ_{l−1} = (δ_l W_lᵀ) ⊙ σ′(z_{l−1}), with σ′ = 1 − tanh² or 1{z > 0} read off the
    /// activations. No dropout (PPO's critic has none).
    ///
    /// It needs no autodiff, so it runs on an untracked network outside autodiff sections: PPO
    /// trains its critic this way beside the actor's graph, two cores for the two losses
    /// (`crate::autodiff` allows one graph at a time per process).
    pub fn squared_error_gradient(
        &self,
        x: Tensor<B, 2>,
        targets: Tensor<B, 1>,
    ) -> (f64, GradientsParams) {
        let [rows, _] = x.dims();
        let device = x.device();
        let last = self.layers.len() - 1;
        // h_0 = x, h_{l+1} = σ(z_l); the last layer's output is f(x).
        let mut inputs = Vec::with_capacity(self.layers.len());
        let mut h = x;
        for (i, layer) in self.layers.iter().enumerate() {
            inputs.push(h.clone());
            h = layer.forward(h);
            if i < last {
                h = self.activation.forward_untracked(h);
            }
        }
        let [_, outputs] = h.dims();
        let error = h.narrow(1, 0, 1) - targets.unsqueeze_dim(1);
        let loss = f64::from(
            error
                .clone()
                .powi_scalar(2)
                .mean()
                .into_data()
                .convert::<f32>()
                .into_vec::<f32>()
                .expect("a float loss")[0],
        );
        // δ_L over all outputs: only the first one is in the loss.
        let mut delta = error * (2.0 / rows as f64);
        if outputs > 1 {
            delta = delta.pad((0, outputs - 1, 0, 0), PadMode::Constant(0.0));
        }
        let ones = Tensor::<B, 2>::ones([1, rows], &device);
        let mut grads = GradientsParams::new();
        for (l, layer) in self.layers.iter().enumerate().rev() {
            let input = &inputs[l];
            grads.register(
                layer.weight.id,
                input.clone().transpose().matmul(delta.clone()),
            );
            if let Some(bias) = &layer.bias {
                let sum = ones.clone().matmul(delta.clone()).squeeze_dim::<1>(0);
                grads.register(bias.id, sum);
            }
            if l > 0 {
                let back = delta.matmul(layer.weight.val().transpose());
                delta = back * self.activation.derivative_from_output(input.clone());
            }
        }
        (loss, grads)
    }

    /// Widths of the hidden layers, input to output (the outputs of every layer but the last).
    pub fn hidden_widths(&self) -> Vec<usize> {
        let n = self.layers.len().saturating_sub(1);
        self.layers[..n].iter().map(|l| l.dims().1).collect()
    }

    /// Dropout probability after every hidden activation.
    pub fn dropout_probability(&self) -> f64 {
        self.dropout.prob
    }

    /// Forward pass with explicit dropout masks instead of Burn's global random generator:
    /// `masks[i]` (`[batch, hidden_widths()[i]]`, entries 0 or 1/(1−p)) multiplies the
    /// activation of hidden layer `i`. With no masks this is [`Mlp::forward`] without dropout.
    ///
    /// Agents draw the masks from their own seeded generator, so a run is reproducible, and
    /// they keep the masks drawn while acting, so the loss sees the same dropped units as the
    /// action did.
    pub fn forward_with_masks(&self, x: Tensor<B, 2>, masks: &[Tensor<B, 2>]) -> Tensor<B, 2> {
        let mut h = x;
        let last = self.layers.len().saturating_sub(1);
        for (i, layer) in self.layers.iter().enumerate() {
            h = layer.forward(h);
            if i < last {
                h = self.activation.forward(h);
                if let Some(mask) = masks.get(i) {
                    h = h * mask.clone();
                }
            }
        }
        h
    }
}

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

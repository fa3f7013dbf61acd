//! The multi-layer perceptron [`Mlp`], with its layer inputs, explicit dropout masks and a
//! hand-written squared-error gradient.

use burn::config::Config;
use burn::module::Module;
use burn::optim::GradientsParams;
use burn::tensor::backend::Backend;
use burn::tensor::Tensor;
use rand::Rng;

use super::params::with_unique_param_ids;
use super::{Activation, Dense, DenseConfig};
use crate::tensor::float_options;

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

    /// Each layer's (weight, bias) parameter paths within this module, from its module tree
    /// ([`crate::params::param_paths`]; `layers.0.weight`, …), input to output.
    pub fn layer_param_paths(&self) -> Vec<(String, Option<String>)> {
        let mut paths = crate::params::param_paths(self).into_iter();
        self.layers
            .iter()
            .map(|layer| {
                let weight = paths.next().expect("a Dense layer has a weight");
                let bias = layer
                    .bias
                    .as_ref()
                    .map(|_| paths.next().expect("a bias parameter"));
                (weight, bias)
            })
            .collect()
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
            // Zeros in B's own dtype: Burn 0.21's `pad` creates its fill in the device's default
            // dtype (see [`crate::dtype`]).
            let zeros = Tensor::zeros([rows, outputs - 1], float_options::<B>(&device));
            delta = Tensor::cat(vec![delta, zeros], 1);
        }
        let ones = Tensor::<B, 2>::ones([1, rows], float_options::<B>(&device));
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
                delta = self.activation.backward_from_output(back, input.clone());
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

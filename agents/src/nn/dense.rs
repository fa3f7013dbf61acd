//! The fully connected layer [`Dense`], with a twice differentiable backward.

use burn::config::Config;
use burn::module::{Module, Param};
use burn::tensor::backend::Backend;
use burn::tensor::Tensor;
use rand::Rng;

use super::params::{param_from_values, uniform_values};
use crate::tensor::float_options;

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
                let ones = Tensor::<B, 2>::ones([rows, 1], float_options::<B>(&y.device()));
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

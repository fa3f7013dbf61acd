//! The user's own network: a small MLP written in this crate, not one of privrl's.
//!
//! Its layers are privrl's [`Dense`] rather than `burn::nn::Linear` for one reason: the
//! gradient inversion attack differentiates the weight gradient a second time, and Burn 0.21's
//! fused `linear` op cannot be differentiated twice (the attack refuses a `Linear` with
//! `AttackError::NotTwiceDifferentiable`). For DP-SGD alone `Linear` works as well: the
//! `PrivacyEngine` has per-sample rules for `Linear`, `Conv2d` and `Dense`.

use burn::module::Module;
use burn::tensor::activation::relu;
use burn::tensor::backend::{AutodiffBackend, Backend};
use burn::tensor::Tensor;
use privrl_agents::dp::Tape;
use privrl_agents::{Dense, DenseConfig};
use rand::Rng;

// docs: begin network (docs/first-hour.md)
/// `d_in → hidden → d_out` with a ReLU between.
#[derive(Module, Debug)]
pub struct MyMlp<B: Backend> {
    pub hidden: Dense<B>,
    pub out: Dense<B>,
}

impl<B: Backend> MyMlp<B> {
    /// Initialised from `rng` (privrl's layers never draw from Burn's global generator).
    pub fn new(
        d_in: usize,
        hidden: usize,
        d_out: usize,
        device: &B::Device,
        rng: &mut impl Rng,
    ) -> Self {
        Self {
            hidden: DenseConfig::new(d_in, hidden).init(device, rng),
            out: DenseConfig::new(hidden, d_out).init(device, rng),
        }
    }

    /// `[batch, d_in] → [batch, d_out]`.
    pub fn forward(&self, x: Tensor<B, 2>) -> Tensor<B, 2> {
        self.out.forward(relu(self.hidden.forward(x)))
    }

    /// Every weight and bias as little-endian bytes, in a fixed order: what "same seed, same
    /// bytes" compares.
    pub fn weight_bytes(&self) -> Vec<u8> {
        let mut bytes = Vec::new();
        for dense in [&self.hidden, &self.out] {
            let mut values = dense.weight.val().into_data().to_vec::<f32>().unwrap();
            if let Some(bias) = &dense.bias {
                values.extend(bias.val().into_data().to_vec::<f32>().unwrap());
            }
            bytes.extend(values.iter().flat_map(|v| v.to_le_bytes()));
        }
        bytes
    }
}

impl<B: AutodiffBackend> MyMlp<B> {
    /// The same forward with each layer that has parameters passed through the DP-SGD tape,
    /// which records what the per-sample gradients need (one backward for the whole batch).
    pub fn forward_traced(&self, x: Tensor<B, 2>, tape: &mut Tape<B>) -> Tensor<B, 2> {
        let h = relu(tape.trace(&self.hidden, x));
        tape.trace(&self.out, h)
    }
}
// docs: end network

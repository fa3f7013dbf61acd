//! Adam (Kingma & Ba 2015) over one raw flat tensor: the reconstruction's optimiser.
//!
//! Burn's optimisers update module parameters; the attack's free variables are a plain tensor
//! on the base backend, so the update runs there, on device, with no autodiff graph.

use burn::config::Config;
use burn::tensor::backend::Backend;
use burn::tensor::Tensor;
use privrl_agents::tensor::float_options;

use crate::error::{check_positive, check_unit_interval_open, AttackError};

/// Hyper-parameters of [`TensorAdam`].
#[derive(Config, Debug)]
pub struct TensorAdamConfig {
    /// Learning rate (the base rate of the schedule).
    #[config(default = 0.1)]
    pub lr: f64,
    /// Decay of the first moment.
    #[config(default = 0.9)]
    pub beta1: f64,
    /// Decay of the second moment.
    #[config(default = 0.999)]
    pub beta2: f64,
    /// ε added to √v̂.
    #[config(default = 1e-8)]
    pub epsilon: f64,
}

impl TensorAdamConfig {
    /// Checks every parameter; the error names the first one out of range.
    pub fn validate(&self) -> Result<(), AttackError> {
        check_positive("lr", self.lr)?;
        check_unit_interval_open("beta1", self.beta1)?;
        check_unit_interval_open("beta2", self.beta2)?;
        check_positive("epsilon", self.epsilon)
    }

    /// A fresh optimiser state for `len` variables.
    pub fn init<B: Backend>(&self, len: usize, device: &B::Device) -> TensorAdam<B> {
        TensorAdam {
            beta1: self.beta1,
            beta2: self.beta2,
            epsilon: self.epsilon,
            first_moment: Tensor::zeros([len], float_options::<B>(device)),
            second_moment: Tensor::zeros([len], float_options::<B>(device)),
            steps: 0,
        }
    }
}

/// Adam state for one flat tensor of variables.
#[derive(Debug, Clone)]
pub struct TensorAdam<B: Backend> {
    beta1: f64,
    beta2: f64,
    epsilon: f64,
    first_moment: Tensor<B, 1>,
    second_moment: Tensor<B, 1>,
    steps: i32,
}

impl<B: Backend> TensorAdam<B> {
    /// One step: m ← β₁m + (1−β₁)g, v ← β₂v + (1−β₂)g², θ ← θ − lr·m̂/(√v̂ + ε) with the
    /// bias-corrected m̂ = m/(1−β₁ᵗ), v̂ = v/(1−β₂ᵗ).
    pub fn step(&mut self, theta: Tensor<B, 1>, gradient: Tensor<B, 1>, lr: f64) -> Tensor<B, 1> {
        self.steps += 1;
        self.first_moment =
            self.first_moment.clone() * self.beta1 + gradient.clone() * (1.0 - self.beta1);
        self.second_moment =
            self.second_moment.clone() * self.beta2 + gradient.powi_scalar(2) * (1.0 - self.beta2);
        let m_hat = self.first_moment.clone() / (1.0 - self.beta1.powi(self.steps));
        let v_hat = self.second_moment.clone() / (1.0 - self.beta2.powi(self.steps));
        theta - m_hat / (v_hat.sqrt() + self.epsilon) * lr
    }

    /// Steps taken.
    pub fn steps(&self) -> usize {
        self.steps as usize
    }
}

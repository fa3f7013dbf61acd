//! `cargo xtask doctor`: checks that the chosen backend runs and differentiates twice.

use std::time::Instant;

use anyhow::{ensure, Result};
use burn::backend::Autodiff;
use burn::tensor::backend::Backend;
use burn::tensor::{Distribution, ElementConversion, Tensor};
use privrl_agents::tensor::float_options;
use privrl_agents::{autodiff, param_gradients, MlpConfig};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use crate::backend::BackendTask;

/// Runs a first- and a second-order gradient of a (64,64) MLP on the chosen backend.
pub struct Doctor;

/// What [`Doctor`] measured.
#[derive(Debug, Clone, serde::Serialize)]
pub struct DoctorReport {
    /// Burn's name for the backend.
    pub backend: String,
    /// The device, as Burn prints it.
    pub device: String,
    /// Forward and backward of a (64,64) MLP on a batch of 32, in ms (includes warm-up).
    pub first_order_ms: f64,
    /// Backward of ‖g‖² through the weight gradient g to the input, in ms.
    pub second_order_ms: f64,
    /// ‖∂‖g‖²/∂x‖, finite and non-zero when second-order autodiff works.
    pub input_gradient_norm: f32,
}

impl std::fmt::Display for DoctorReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(f, "backend: {}", self.backend)?;
        writeln!(f, "device:  {}", self.device)?;
        writeln!(
            f,
            "first-order gradient of a (64,64) MLP, batch 32: {:.1} ms",
            self.first_order_ms
        )?;
        writeln!(
            f,
            "second-order gradient w.r.t. the input:          {:.1} ms (‖∂‖g‖²/∂x‖ = {:.4})",
            self.second_order_ms, self.input_gradient_norm
        )?;
        write!(f, "ok")
    }
}

impl BackendTask for Doctor {
    type Output = DoctorReport;

    fn run<B: Backend>(self, device: B::Device) -> Result<DoctorReport> {
        let mut rng = ChaCha8Rng::seed_from_u64(0);
        let mlp =
            MlpConfig::new(16, vec![64, 64], 4).init::<Autodiff<Autodiff<B>>>(&device, &mut rng);
        let x = Tensor::<Autodiff<B>, 2>::random(
            [32, 16],
            Distribution::Normal(0.0, 1.0),
            float_options::<Autodiff<B>>(&device),
        )
        .require_grad();

        // One section for both orders: the second backward differentiates the first's graph.
        let (first_order_ms, second_order_ms, dx) = autodiff::exclusive(|| {
            let start = Instant::now();
            let out = mlp.forward(Tensor::from_inner(x.clone()));
            let grads = autodiff::backward(&out.powi_scalar(2).mean());
            let gradient = Tensor::cat(
                param_gradients(&mlp, &grads)
                    .into_iter()
                    .map(|g| g.gradient)
                    .collect(),
                0,
            );
            let first_order_ms = start.elapsed().as_secs_f64() * 1e3;

            let start = Instant::now();
            let gradient_norm = gradient.powi_scalar(2).sum();
            let second = autodiff::backward(&gradient_norm);
            let dx = x.grad(&second);
            let second_order_ms = start.elapsed().as_secs_f64() * 1e3;
            (first_order_ms, second_order_ms, dx)
        });
        ensure!(dx.is_some(), "the input received no second-order gradient");
        let dx_norm: f32 = dx.unwrap().powi_scalar(2).sum().sqrt().into_scalar().elem();
        ensure!(
            dx_norm.is_finite() && dx_norm > 0.0,
            "the second-order gradient is {dx_norm}, expected finite and non-zero"
        );
        Ok(DoctorReport {
            backend: B::name(&device),
            device: format!("{device:?}"),
            first_order_ms,
            second_order_ms,
            input_gradient_norm: dx_norm,
        })
    }
}

//! Per-sample gradients of an [`Mlp`] for DP-SGD, in one batched pass.
//!
//! For a Dense layer `z = a W + b`, sample i's gradients are the outer product
//! `∇W_i = a_iᵀ δ_i` and `∇b_i = δ_i`, where `δ_i = ∂ℓ_i/∂z_i` is the error back-propagated to
//! the layer's output (Abadi et al. 2016; Opacus computes the same with hooks). We read `δ`
//! from autodiff by adding a zero "probe" tensor to every layer's output: `∂L/∂probe = δ`.
//! From `a` and `δ` the per-sample norms follow without materialising any per-sample gradient
//! (`‖a_iᵀ δ_i‖_F = ‖a_i‖ ‖δ_i‖`), and the clipped sum is one matmul per layer:
//! `Σ_i c_i a_iᵀ δ_i = aᵀ diag(c) δ`. The cost is close to one ordinary backward pass.
//!
//! The loss must be a *sum* of per-sample losses and the network must not couple samples
//! (true of [`Mlp`], dropout included: masks are per sample).
//! [`per_sample_gradients_by_loop`] is the slow reference that works for any layer.

use burn::module::Module;
use burn::tensor::backend::{AutodiffBackend, Backend};
use burn::tensor::Tensor;
use privrl_privacy::{Clipping, DpSgd};
use rand::Rng;

use crate::autodiff;
use crate::dp::{GradSampleLayer, Tape};
use crate::error::AgentError;
use crate::nn::{Dense, Mlp};
use crate::record::{GradientRecord, NamedGradient};
use crate::tensor::{float_options, to_host};

use super::clip_factors;
use super::linear::{linear_squared_norms, linear_weighted_sums};

/// Output of [`probed_forward`]: the network output, every Dense layer's input `a_l`, and the
/// zero probes added to every layer's output.
#[derive(Debug)]
pub struct ProbedForward<B: AutodiffBackend> {
    /// Network output `[batch, d_output]`.
    pub output: Tensor<B, 2>,
    layer_inputs: Vec<Tensor<B, 2>>,
    probes: Vec<Tensor<B, 2>>,
}

/// Forward pass of `mlp` that records what the per-sample gradients need.
///
/// The parameters are not tracked: their gradients are computed analytically from the
/// factors, so autodiff only propagates errors to the probes.
pub fn probed_forward<B: AutodiffBackend>(mlp: &Mlp<B>, x: Tensor<B, 2>) -> ProbedForward<B> {
    let mlp = mlp.clone().no_grad();
    let [batch, _] = x.dims();
    let device = x.device();
    let last = mlp.layers.len().saturating_sub(1);
    let mut layer_inputs = Vec::with_capacity(mlp.layers.len());
    let mut probes = Vec::with_capacity(mlp.layers.len());
    let mut h = x;
    for (i, layer) in mlp.layers.iter().enumerate() {
        let (_, d_output) = layer.dims();
        let probe =
            Tensor::<B, 2>::zeros([batch, d_output], float_options::<B>(&device)).require_grad();
        layer_inputs.push(h.clone());
        h = layer.forward(h) + probe.clone();
        probes.push(probe);
        if i < last {
            h = mlp.dropout.forward(mlp.activation.forward(h));
        }
    }
    ProbedForward {
        output: h,
        layer_inputs,
        probes,
    }
}

/// `mlp.forward(x)` with every Dense layer passed through `tape`, so that an [`Mlp`] takes the
/// [`crate::PrivacyEngine`]'s fast path ([`crate::dp::Traced`]); the same
/// layers, activation and dropout as [`probed_forward`]. On `[records, positions, d]` (D = 3)
/// a record's gradient sums over its positions (DP-PPO's episodes of steps).
pub fn traced_forward<B: AutodiffBackend, const D: usize>(
    mlp: &Mlp<B>,
    x: Tensor<B, D>,
    tape: &mut Tape<B>,
) -> Tensor<B, D>
where
    Dense<B>: GradSampleLayer<B, D>,
{
    let last = mlp.layers.len().saturating_sub(1);
    let mut h = x;
    for (i, layer) in mlp.layers.iter().enumerate() {
        h = tape.trace(layer, h);
        if i < last {
            h = mlp.dropout.forward(mlp.activation.forward(h));
        }
    }
    h
}

/// The factors `a_l` (layer inputs) and `δ_l` (output errors) of every Dense layer's
/// per-sample gradients, on the inner (non-autodiff) backend.
#[derive(Debug, Clone)]
pub struct PerSampleFactors<B: Backend> {
    layers: Vec<LayerFactors<B>>,
}

#[derive(Debug, Clone)]
struct LayerFactors<B: Backend> {
    inputs: Tensor<B, 2>,
    errors: Tensor<B, 2>,
    /// The layer's parameter paths in the `Mlp` ([`Mlp::layer_param_paths`]); a layer has a
    /// bias exactly when it has a bias path.
    weight_path: String,
    bias_path: Option<String>,
}

impl<B: Backend> LayerFactors<B> {
    fn has_bias(&self) -> bool {
        self.bias_path.is_some()
    }
}

impl<B: Backend> PerSampleFactors<B> {
    /// Reads the factors after `loss.backward()`, where `loss` is the **sum** of per-sample
    /// losses computed from `forward.output`.
    pub fn from_backward<AB: AutodiffBackend<InnerBackend = B>>(
        mlp: &Mlp<AB>,
        forward: &ProbedForward<AB>,
        grads: &AB::Gradients,
    ) -> Self {
        let layers = mlp
            .layer_param_paths()
            .into_iter()
            .zip(&forward.layer_inputs)
            .zip(&forward.probes)
            .map(|(((weight_path, bias_path), input), probe)| {
                let errors = probe.grad(grads).unwrap_or_else(|| {
                    // No path from this layer to the loss: its gradients are zero.
                    Tensor::<B, 2>::zeros(
                        probe.dims(),
                        float_options::<B>(&input.clone().inner().device()),
                    )
                });
                LayerFactors {
                    inputs: input.clone().inner(),
                    errors,
                    weight_path,
                    bias_path,
                }
            })
            .collect();
        Self { layers }
    }

    /// Every layer's input `a_l` `[batch, d_input]` and output error `δ_l` `[batch, d_output]`,
    /// input to output: the factors of its batch weight gradient `aᵀ δ`.
    pub fn layers(&self) -> impl Iterator<Item = (&Tensor<B, 2>, &Tensor<B, 2>)> {
        self.layers.iter().map(|l| (&l.inputs, &l.errors))
    }

    /// Every layer's (weight, bias) parameter paths in the `Mlp`, as
    /// [`PerSampleFactors::layers`] orders them ([`Mlp::layer_param_paths`]).
    pub fn layer_paths(&self) -> impl Iterator<Item = (&str, Option<&str>)> {
        self.layers
            .iter()
            .map(|l| (l.weight_path.as_str(), l.bias_path.as_deref()))
    }

    /// Batch size.
    pub fn batch_size(&self) -> usize {
        self.layers.first().map_or(0, |l| l.inputs.dims()[0])
    }

    /// Squared per-sample L2 norms of every parameter, `[batch]` each, in the order of
    /// [`GradientRecord::from_grads`] on the same `Mlp` (weight, then bias, layer by layer).
    pub fn squared_param_norms(&self) -> Vec<Tensor<B, 1>> {
        let mut norms = Vec::with_capacity(2 * self.layers.len());
        for layer in &self.layers {
            let (weight_sq, bias_sq) = linear_squared_norms(&layer.inputs, &layer.errors);
            norms.push(weight_sq);
            if layer.has_bias() {
                norms.push(bias_sq);
            }
        }
        norms
    }

    /// Per-sample L2 norms of the whole gradient, `[batch]`.
    pub fn norms(&self) -> Tensor<B, 1> {
        total_norm(self.squared_param_norms())
    }

    /// Parameter sizes, in record order (what [`Clipping::PerLayer`]'s `layer_sizes` must be).
    pub fn param_sizes(&self) -> Vec<usize> {
        let mut sizes = Vec::with_capacity(2 * self.layers.len());
        for layer in &self.layers {
            let [_, d_input] = layer.inputs.dims();
            let [_, d_output] = layer.errors.dims();
            sizes.push(d_input * d_output);
            if layer.has_bias() {
                sizes.push(d_output);
            }
        }
        sizes
    }

    /// `Σ_i clip(g_i)` by `clipping`, as a record named like [`GradientRecord::from_grads`] on
    /// the `Mlp` (`layers.<l>.weight`, `layers.<l>.bias`). Clip factors are
    /// `min(1, C/‖g_i‖)` as in Abadi et al.; per-layer clipping applies one factor per
    /// parameter tensor.
    pub fn clipped_sum(&self, clipping: &Clipping) -> Result<GradientRecord, AgentError> {
        let squared = self.squared_param_norms();
        // One factor per parameter tensor; flat clipping shares one factor across all of them.
        let factors: Vec<Tensor<B, 1>> = match clipping {
            Clipping::Flat { clip } => vec![clip_factors(total_norm(squared), *clip)],
            Clipping::PerLayer { layer_sizes, clips } => {
                let sizes = self.param_sizes();
                if *layer_sizes != sizes {
                    return Err(AgentError::ClippingLayout {
                        given: layer_sizes.clone(),
                        expected: sizes,
                    });
                }
                squared
                    .into_iter()
                    .zip(clips)
                    .map(|(s, &c)| clip_factors(s.sqrt(), c))
                    .collect()
            }
        };
        let shared = factors.len() == 1;
        let mut factor = factors.into_iter().cycle();
        let mut params = Vec::with_capacity(2 * self.layers.len());
        for layer in &self.layers {
            let [_, d_input] = layer.inputs.dims();
            let [_, d_output] = layer.errors.dims();
            let weight_factor = factor.next().expect("one factor per parameter");
            let (weight, bias) =
                linear_weighted_sums(&layer.inputs, &layer.errors, weight_factor.clone());
            params.push(NamedGradient {
                name: layer.weight_path.clone(),
                shape: vec![d_input, d_output],
                values: to_host(weight),
            });
            if let Some(bias_path) = &layer.bias_path {
                let bias = if shared {
                    bias
                } else {
                    let c = factor.next().expect("one factor per parameter");
                    linear_weighted_sums(&layer.inputs, &layer.errors, c).1
                };
                params.push(NamedGradient {
                    name: bias_path.clone(),
                    shape: vec![d_output],
                    values: to_host(bias),
                });
            }
        }
        Ok(GradientRecord { params })
    }

    /// Every sample's flat gradient (record order), materialised: for tests and for the
    /// per-sample path of [`DpSgd`].
    pub fn materialize(&self) -> Vec<Vec<f32>> {
        let batch = self.batch_size();
        let mut out = vec![Vec::new(); batch];
        for layer in &self.layers {
            let inputs = to_host(layer.inputs.clone());
            let errors = to_host(layer.errors.clone());
            let [_, d_input] = layer.inputs.dims();
            let [_, d_output] = layer.errors.dims();
            for (i, flat) in out.iter_mut().enumerate() {
                let a = &inputs[i * d_input..(i + 1) * d_input];
                let delta = &errors[i * d_output..(i + 1) * d_output];
                for &aj in a {
                    flat.extend(delta.iter().map(|&dk| aj * dk));
                }
                if layer.has_bias() {
                    flat.extend_from_slice(delta);
                }
            }
        }
        out
    }
}

/// One DP-SGD gradient (Abadi et al. 2016, Algorithm 1; paper 004): per-sample gradients of
/// `Σ_i ℓ_i` computed analytically, clipped by `dp_sgd`'s rule, summed, noised with
/// N(0, σ²S²I) and divided by `batch_size` (with Poisson sampling, the *expected* batch size).
///
/// `per_sample_loss` maps the network output `[batch, d_output]` to the per-sample losses
/// `[batch]`.
pub fn dp_sgd_gradient<B: AutodiffBackend>(
    mlp: &Mlp<B>,
    inputs: Tensor<B, 2>,
    per_sample_loss: impl FnOnce(Tensor<B, 2>) -> Tensor<B, 1> + Send,
    dp_sgd: &DpSgd,
    batch_size: f64,
    rng: &mut impl Rng,
) -> Result<GradientRecord, AgentError> {
    let mut sum = autodiff::exclusive(|| {
        let forward = probed_forward(mlp, inputs);
        let loss = per_sample_loss(forward.output.clone()).sum();
        let grads = autodiff::backward(&loss);
        let factors = PerSampleFactors::from_backward(mlp, &forward, &grads);
        factors.clipped_sum(dp_sgd.clipping())
    })?;
    let noisy = dp_sgd.noisy_mean_of_clipped_sum(sum.flatten(), batch_size, rng)?;
    sum.set_flat(&noisy)?;
    Ok(sum)
}

/// Reference per-sample gradients: one forward and backward per sample, any network.
/// `loss_of` maps a one-sample input `[1, d]` to that sample's scalar loss; `module` is the
/// module whose parameters the record covers.
pub fn per_sample_gradients_by_loop<B, M>(
    module: &M,
    inputs: Tensor<B, 2>,
    loss_of: impl Fn(&M, Tensor<B, 2>, usize) -> Tensor<B, 1> + Sync,
) -> Vec<Vec<f32>>
where
    B: AutodiffBackend,
    M: burn::module::Module<B> + Sync,
{
    let [batch, d] = inputs.dims();
    autodiff::exclusive(|| {
        (0..batch)
            .map(|i| {
                let sample = inputs.clone().narrow(0, i, 1).reshape([1, d]);
                let grads = autodiff::backward(&loss_of(module, sample, i));
                GradientRecord::from_grads(module, &grads).flatten()
            })
            .collect()
    })
}

/// `√Σ_p s_p` of per-parameter squared norms.
fn total_norm<B: Backend>(squared: Vec<Tensor<B, 1>>) -> Tensor<B, 1> {
    squared
        .into_iter()
        .reduce(|a, b| a + b)
        .expect("an Mlp has at least one layer")
        .sqrt()
}

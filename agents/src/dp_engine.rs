//! [`PrivacyEngine`]: DP-SGD for any Burn module (Abadi et al. 2016, Algorithm 1; paper 004,
//! Figure 7), in the manner of Opacus' `PrivacyEngine`.
//!
//! Every step
//! 1. draws a batch by **Poisson sampling** (each of the N records independently with
//!    probability q), the sampling that the RDP accountant assumes;
//! 2. computes every sampled record's gradient g_i (per-sample gradients, below);
//! 3. clips each to ‖g_i‖₂ ≤ C, sums, adds N(0, σ²C²I) and divides by the **expected** batch
//!    size qN (the drawn size depends on the data; Opacus divides by qN too);
//! 4. hands the result to any Burn [`Optimizer`];
//! 5. records the release (q, σ) so that [`PrivacyEngine::epsilon`] composes every step with
//!    the RDP accountant of [`privrl_privacy`] (Mironov, Talwar & Zhang 2019) under the chosen
//!    [`Adjacency`] (add/remove by default, as Opacus).
//!
//! σ is given, or calibrated from a target (ε, δ) and a number of steps
//! ([`NoiseCalibration::TargetEpsilon`]), as Opacus' `make_private_with_epsilon`.
//!
//! # Per-sample gradients
//!
//! [`PerSampleGradients`] computes the `[batch, P]` matrix of per-sample gradients, one row per
//! record, in the module's parameter order ([`ParamLayout`]). Two strategies:
//! - [`Traced`], the fast path, as Opacus' grad samplers: the model's forward passes its
//!   [`GradSampleLayer`]s (Burn's `Linear` and `Conv2d`, privrl's [`Dense`]) through a
//!   [`Tape`], which records each layer's input activations a and adds a zero probe to its
//!   output, whose gradient is the backprop δ = ∂(Σ_i ℓ_i)/∂z. One backward then gives every
//!   sample's gradient: ∇W_i = a_iᵀ δ_i for a linear layer; for a convolution,
//!   ∇W_i = δ_i · unfold(a_i)ᵀ with unfold the im2col of the (padded) input. The loss must be a
//!   sum of per-sample losses and the model must not mix samples (no batch norm).
//! - [`MicroBatches`], the fallback for **any** `AutodiffModule`: one forward and backward per
//!   record. Slow (one backward per sample), but it needs nothing from the model.
//!
//! Every graph is built and differentiated inside an [`autodiff`] section.
//!
//! # Reproducibility
//!
//! Sampling and noise come from one [`MechanismRng`]: ChaCha20 from a seed (same seed, same
//! bytes) or the operating system's CSPRNG for a deployment.

use std::collections::HashMap;
use std::fmt;

use burn::module::{AutodiffModule, Module, ModuleVisitor, Param, ParamId};
use burn::nn::conv::Conv2d;
use burn::nn::{Linear, PaddingConfig2d};
use burn::optim::Optimizer;
use burn::tensor::backend::{AutodiffBackend, Backend};
use burn::tensor::module::unfold4d;
use burn::tensor::ops::{PadMode, UnfoldOptions};
use burn::tensor::{Int, Tensor, TensorData};
use privrl_privacy::{
    noise_multiplier_for_under, poisson_sample, Adjacency, GradientMechanismConfig, MechanismRng,
    PrivacyError, RandomnessSource, RdpAccountant, SubsampledGaussianSteps,
};

use crate::autodiff;
use crate::error::{AgentError, RecordError};
use crate::nn::Dense;
use crate::per_sample::{clip_factors, host};
use crate::record::{GradientRecord, NamedGradient};

/// Why the engine refused a step or a configuration.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// A privacy parameter is out of range, or a target ε cannot be met.
    #[error(transparent)]
    Privacy(#[from] PrivacyError),
    /// A gradient does not fit the module.
    #[error(transparent)]
    Record(#[from] RecordError),
    /// An agent-level failure.
    #[error(transparent)]
    Agent(#[from] AgentError),
    /// The [`Traced`] fast path gave no per-sample gradient for a parameter: the layer that
    /// owns it was not passed through [`Tape::trace`] (or is not a [`GradSampleLayer`]).
    #[error(
        "parameter `{name}` has no per-sample gradient: trace its layer with Tape::trace, or \
         use MicroBatches for this model"
    )]
    Untraced {
        /// Dotted path of the parameter.
        name: String,
    },
    /// A layer configuration the fast path does not cover.
    #[error("{layer}: {reason}; use MicroBatches for this model")]
    UnsupportedLayer {
        /// The layer type.
        layer: &'static str,
        /// What is not covered.
        reason: String,
    },
    /// The per-sample losses or gradients have the wrong shape.
    #[error("shape mismatch in {what}: expected {expected:?}, got {got:?}")]
    Shape {
        /// What has the wrong shape.
        what: &'static str,
        /// The shape that fits.
        expected: Vec<usize>,
        /// The shape that was given.
        got: Vec<usize>,
    },
    /// A record index outside the dataset.
    #[error("record index {index} is outside the dataset of {size} records")]
    Index {
        /// The index.
        index: usize,
        /// The dataset size N.
        size: usize,
    },
}

// ---------------------------------------------------------------------------------------------
// Parameter layout
// ---------------------------------------------------------------------------------------------

/// One float parameter of a module.
#[derive(Debug, Clone, PartialEq)]
pub struct ParamEntry {
    /// Dotted path, as in [`GradientRecord`] (`fc1.weight`).
    pub name: String,
    /// Shape.
    pub shape: Vec<usize>,
    /// Burn's id of the parameter.
    pub id: ParamId,
}

impl ParamEntry {
    /// Number of values.
    pub fn len(&self) -> usize {
        self.shape.iter().product()
    }

    /// Whether the parameter holds no value.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Every float parameter of a module, in its visiting order: the column order of a per-sample
/// gradient row and of the flat gradient that is clipped and noised.
#[derive(Debug, Clone, PartialEq)]
pub struct ParamLayout {
    entries: Vec<ParamEntry>,
}

impl ParamLayout {
    /// The layout of `module`.
    pub fn of<B: Backend, M: Module<B>>(module: &M) -> Self {
        struct Collector {
            path: Vec<String>,
            entries: Vec<ParamEntry>,
        }
        impl<B: Backend> ModuleVisitor<B> for Collector {
            fn enter_module(&mut self, name: &str, _container_type: &str) {
                self.path.push(name.to_string());
            }
            fn exit_module(&mut self, _name: &str, _container_type: &str) {
                self.path.pop();
            }
            fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<B, D>>) {
                self.entries.push(ParamEntry {
                    name: self.path.join("."),
                    shape: param.val().dims().to_vec(),
                    id: param.id,
                });
            }
        }
        let mut collector = Collector {
            path: Vec::new(),
            entries: Vec::new(),
        };
        module.visit(&mut collector);
        Self {
            entries: collector.entries,
        }
    }

    /// The parameters, in order.
    pub fn entries(&self) -> &[ParamEntry] {
        &self.entries
    }

    /// Total number of parameter values P.
    pub fn num_values(&self) -> usize {
        self.entries.iter().map(ParamEntry::len).sum()
    }

    /// A flat gradient of P values as a named record, which
    /// [`GradientRecord::to_gradients_params`] turns into an optimiser's input.
    pub fn record(&self, flat: &[f32]) -> Result<GradientRecord, RecordError> {
        if flat.len() != self.num_values() {
            return Err(RecordError::LengthMismatch {
                expected: self.num_values(),
                got: flat.len(),
            });
        }
        let mut start = 0;
        let params = self
            .entries
            .iter()
            .map(|e| {
                let values = flat[start..start + e.len()].to_vec();
                start += e.len();
                NamedGradient {
                    name: e.name.clone(),
                    shape: e.shape.clone(),
                    values,
                }
            })
            .collect();
        Ok(GradientRecord { params })
    }
}

// ---------------------------------------------------------------------------------------------
// Per-sample gradients
// ---------------------------------------------------------------------------------------------

/// A way to compute per-sample gradients of a module of type `M`.
pub trait PerSampleGradients<B: AutodiffBackend, M: AutodiffModule<B>> {
    /// The `[batch.len(), P]` per-sample gradients of the records `batch` (indices into the
    /// dataset), row i the gradient of record `batch[i]`'s loss, columns in `layout` order.
    /// Runs its graphs in an [`autodiff`] section.
    fn per_sample_gradients(
        &self,
        module: &M,
        batch: &[usize],
        layout: &ParamLayout,
    ) -> Result<Tensor<B::InnerBackend, 2>, EngineError>;
}

/// The general fallback: one forward and backward per record, for any `AutodiffModule`.
///
/// The closure maps the module and a list of record indices to their per-sample losses
/// `[indices.len()]`; it is called with one index at a time. A parameter without a gradient
/// (unused by the loss) gets a zero gradient.
pub struct MicroBatches<F>(pub F);

impl<B, M, F> PerSampleGradients<B, M> for MicroBatches<F>
where
    B: AutodiffBackend,
    M: AutodiffModule<B> + Sync,
    F: Fn(&M, &[usize]) -> Tensor<B, 1> + Sync,
{
    fn per_sample_gradients(
        &self,
        module: &M,
        batch: &[usize],
        layout: &ParamLayout,
    ) -> Result<Tensor<B::InnerBackend, 2>, EngineError> {
        autodiff::exclusive(|| {
            let mut rows = Vec::with_capacity(batch.len());
            for &record in batch {
                let losses = (self.0)(module, &[record]);
                check_losses(&losses, 1)?;
                let grads = autodiff::backward(&losses.sum());
                rows.push(flat_gradient::<B, M>(module, &grads, layout));
            }
            Ok(Tensor::stack(rows, 0))
        })
    }
}

/// Every parameter's gradient in `grads`, flat in layout order; zeros where there is none.
fn flat_gradient<B: AutodiffBackend, M: Module<B>>(
    module: &M,
    grads: &B::Gradients,
    layout: &ParamLayout,
) -> Tensor<B::InnerBackend, 1> {
    struct Flat<'a, B: AutodiffBackend> {
        grads: &'a B::Gradients,
        parts: Vec<Tensor<B::InnerBackend, 1>>,
    }
    impl<B: AutodiffBackend> ModuleVisitor<B> for Flat<'_, B> {
        fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<B, D>>) {
            let value = param.val();
            let part = match value.grad(self.grads) {
                Some(g) => g.flatten(0, D - 1),
                None => {
                    let len: usize = value.dims().iter().product();
                    Tensor::zeros([len], &value.device())
                }
            };
            self.parts.push(part);
        }
    }
    let mut flat = Flat::<B> {
        grads,
        parts: Vec::with_capacity(layout.entries.len()),
    };
    module.visit(&mut flat);
    Tensor::cat(flat.parts, 0)
}

fn check_losses<B: Backend>(losses: &Tensor<B, 1>, batch: usize) -> Result<(), EngineError> {
    let [n] = losses.dims();
    if n != batch {
        return Err(EngineError::Shape {
            what: "per-sample losses",
            expected: vec![batch],
            got: vec![n],
        });
    }
    Ok(())
}

/// The fast path: the closure maps the module, the batch's record indices and a [`Tape`] to
/// the per-sample losses `[indices.len()]`, computed by a forward that passes every layer with
/// parameters through [`Tape::trace`]. One backward gives every per-sample gradient.
///
/// The same closure with [`Tape::off`] is the plain forward, so
/// `MicroBatches(|m, b| f(m, b, &mut Tape::off()))` is its reference.
pub struct Traced<F>(pub F);

impl<B, M, F> PerSampleGradients<B, M> for Traced<F>
where
    B: AutodiffBackend,
    M: AutodiffModule<B> + Sync,
    F: Fn(&M, &[usize], &mut Tape<B>) -> Tensor<B, 1> + Sync,
{
    fn per_sample_gradients(
        &self,
        module: &M,
        batch: &[usize],
        layout: &ParamLayout,
    ) -> Result<Tensor<B::InnerBackend, 2>, EngineError> {
        autodiff::exclusive(|| {
            let mut tape = Tape::recording();
            let losses = (self.0)(module, batch, &mut tape);
            check_losses(&losses, batch.len())?;
            let grads = autodiff::backward(&losses.sum());
            let mut by_id: HashMap<ParamId, Tensor<B::InnerBackend, 2>> = HashMap::new();
            for entry in &tape.entries {
                for (id, g) in entry.grad_samples(&grads)? {
                    // A layer applied twice (shared weights) adds its two contributions.
                    let g = match by_id.remove(&id) {
                        Some(previous) => previous + g,
                        None => g,
                    };
                    by_id.insert(id, g);
                }
            }
            let mut columns = Vec::with_capacity(layout.entries.len());
            for entry in &layout.entries {
                let g = by_id
                    .remove(&entry.id)
                    .ok_or_else(|| EngineError::Untraced {
                        name: entry.name.clone(),
                    })?;
                let dims = g.dims();
                if dims != [batch.len(), entry.len()] {
                    return Err(EngineError::Shape {
                        what: "per-sample gradient of a traced layer",
                        expected: vec![batch.len(), entry.len()],
                        got: dims.to_vec(),
                    });
                }
                columns.push(g);
            }
            Ok(Tensor::cat(columns, 1))
        })
    }
}

/// A layer whose per-sample gradients follow from its input activations a and the backprops δ
/// at its output (Opacus' grad samplers). Implemented for Burn's [`Linear`] and [`Conv2d`]
/// and privrl's [`Dense`].
pub trait GradSampleLayer<B: AutodiffBackend, const D: usize>: Module<B> + 'static {
    /// The layer's ordinary forward.
    fn forward_layer(&self, x: Tensor<B, D>) -> Tensor<B, D>;

    /// Every parameter's per-sample gradients `[batch, numel]` (row-major in the parameter's
    /// shape) from the activations `[batch, ...]` and the backprops `[batch, ...]`.
    #[allow(clippy::type_complexity)]
    fn grad_samples(
        &self,
        activations: Tensor<B::InnerBackend, D>,
        backprops: Tensor<B::InnerBackend, D>,
    ) -> Result<Vec<(ParamId, Tensor<B::InnerBackend, 2>)>, EngineError>;
}

/// Records what [`Traced`] needs during a forward: each traced layer's input and a probe on its
/// output. [`Tape::off`] records nothing: the forward is the ordinary one.
pub struct Tape<B: AutodiffBackend> {
    recording: bool,
    entries: Vec<Box<dyn TapeEntry<B>>>,
}

impl<B: AutodiffBackend> fmt::Debug for Tape<B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tape")
            .field("recording", &self.recording)
            .field("layers", &self.entries.len())
            .finish()
    }
}

impl<B: AutodiffBackend> Tape<B> {
    /// A tape that records nothing: [`Tape::trace`] is the layer's plain forward.
    pub fn off() -> Self {
        Self {
            recording: false,
            entries: Vec::new(),
        }
    }

    fn recording() -> Self {
        Self {
            recording: true,
            entries: Vec::new(),
        }
    }

    /// `layer.forward(x)`, recording (when the tape is on) the input and a zero probe added to
    /// the output. The layer's own parameters are not tracked on a recording tape: their
    /// per-sample gradients come from the activations and the probe's gradient.
    pub fn trace<L, const D: usize>(&mut self, layer: &L, x: Tensor<B, D>) -> Tensor<B, D>
    where
        L: GradSampleLayer<B, D>,
    {
        if !self.recording {
            return layer.forward_layer(x);
        }
        let activations = x.clone().inner();
        let output = layer.clone().no_grad().forward_layer(x);
        let probe = Tensor::<B, D>::zeros(output.dims(), &output.device()).require_grad();
        self.entries.push(Box::new(Probe {
            layer: layer.clone(),
            activations,
            probe: probe.clone(),
        }));
        output + probe
    }
}

trait TapeEntry<B: AutodiffBackend>: Send {
    #[allow(clippy::type_complexity)]
    fn grad_samples(
        &self,
        grads: &B::Gradients,
    ) -> Result<Vec<(ParamId, Tensor<B::InnerBackend, 2>)>, EngineError>;
}

struct Probe<B: AutodiffBackend, L, const D: usize> {
    layer: L,
    activations: Tensor<B::InnerBackend, D>,
    probe: Tensor<B, D>,
}

impl<B: AutodiffBackend, L: GradSampleLayer<B, D>, const D: usize> TapeEntry<B> for Probe<B, L, D> {
    fn grad_samples(
        &self,
        grads: &B::Gradients,
    ) -> Result<Vec<(ParamId, Tensor<B::InnerBackend, 2>)>, EngineError> {
        // No path from this layer to the loss: its backprops are zero.
        let backprops = self
            .probe
            .grad(grads)
            .unwrap_or_else(|| Tensor::zeros(self.probe.dims(), &self.activations.device()));
        self.layer.grad_samples(self.activations.clone(), backprops)
    }
}

/// Per-sample gradients of `z = a W + b` with W `[d_in, d_out]`, for activations
/// `[batch, ..., d_in]` and backprops `[batch, ..., d_out]`: ∇W_i = Σ_t a_itᵀ δ_it (one term
/// per position t of the middle axes, one for a plain `[batch, d]` input), ∇b_i = Σ_t δ_it.
fn linear_grad_samples<B: Backend, const D: usize>(
    weight: ParamId,
    bias: Option<ParamId>,
    activations: Tensor<B, D>,
    backprops: Tensor<B, D>,
) -> Vec<(ParamId, Tensor<B, 2>)> {
    let dims_a = activations.dims();
    let dims_d = backprops.dims();
    let (batch, d_in, d_out) = (dims_a[0], dims_a[D - 1], dims_d[D - 1]);
    let a: Tensor<B, 3> = activations.reshape([batch as i32, -1, d_in as i32]);
    let delta: Tensor<B, 3> = backprops.reshape([batch as i32, -1, d_out as i32]);
    let w = a
        .swap_dims(1, 2)
        .matmul(delta.clone())
        .reshape([batch, d_in * d_out]);
    let mut out = vec![(weight, w)];
    if let Some(bias) = bias {
        out.push((bias, delta.sum_dim(1).reshape([batch, d_out])));
    }
    out
}

impl<B: AutodiffBackend, const D: usize> GradSampleLayer<B, D> for Linear<B> {
    fn forward_layer(&self, x: Tensor<B, D>) -> Tensor<B, D> {
        self.forward(x)
    }

    fn grad_samples(
        &self,
        activations: Tensor<B::InnerBackend, D>,
        backprops: Tensor<B::InnerBackend, D>,
    ) -> Result<Vec<(ParamId, Tensor<B::InnerBackend, 2>)>, EngineError> {
        let [d_in, d_out] = self.weight.val().dims();
        if activations.dims()[D - 1] != d_in || backprops.dims()[D - 1] != d_out {
            return Err(EngineError::UnsupportedLayer {
                layer: "Linear",
                reason: format!(
                    "activations or backprops do not match the weight [{d_in}, {d_out}]"
                ),
            });
        }
        Ok(linear_grad_samples(
            self.weight.id,
            self.bias.as_ref().map(|b| b.id),
            activations,
            backprops,
        ))
    }
}

impl<B: AutodiffBackend> GradSampleLayer<B, 2> for Dense<B> {
    fn forward_layer(&self, x: Tensor<B, 2>) -> Tensor<B, 2> {
        self.forward(x)
    }

    fn grad_samples(
        &self,
        activations: Tensor<B::InnerBackend, 2>,
        backprops: Tensor<B::InnerBackend, 2>,
    ) -> Result<Vec<(ParamId, Tensor<B::InnerBackend, 2>)>, EngineError> {
        Ok(linear_grad_samples(
            self.weight.id,
            self.bias.as_ref().map(|b| b.id),
            activations,
            backprops,
        ))
    }
}

/// (before, after) zero padding of one spatial axis, as Burn's `Conv2d` computes it.
fn conv_padding(
    padding: &PaddingConfig2d,
    size: [usize; 2],
    kernel: [usize; 2],
    stride: [usize; 2],
) -> [(usize, usize); 2] {
    // "Same": output ⌈n/s⌉, the odd pixel of padding at the end (Burn's and ONNX's rule).
    let same = |n: usize, k: usize, s: usize| {
        let out = n.div_ceil(s);
        let total = if out > 0 {
            ((out - 1) * s + k).saturating_sub(n)
        } else {
            0
        };
        (total / 2, total - total / 2)
    };
    match *padding {
        PaddingConfig2d::Valid => [(0, 0), (0, 0)],
        PaddingConfig2d::Same => [
            same(size[0], kernel[0], stride[0]),
            same(size[1], kernel[1], stride[1]),
        ],
        PaddingConfig2d::Explicit(top, left, bottom, right) => [(top, bottom), (left, right)],
    }
}

impl<B: AutodiffBackend> GradSampleLayer<B, 4> for Conv2d<B> {
    fn forward_layer(&self, x: Tensor<B, 4>) -> Tensor<B, 4> {
        self.forward(x)
    }

    /// ∇W_i = δ_i · U_iᵀ with δ_i `[c_out, L]` (L output positions) and U_i `[c_in·k_h·k_w, L]`
    /// the unfolded (im2col) padded input, whose row order (channel, kernel row, kernel column)
    /// is the weight's `[c_out, c_in, k_h, k_w]`; ∇b_i = Σ_L δ_i.
    fn grad_samples(
        &self,
        activations: Tensor<B::InnerBackend, 4>,
        backprops: Tensor<B::InnerBackend, 4>,
    ) -> Result<Vec<(ParamId, Tensor<B::InnerBackend, 2>)>, EngineError> {
        if self.groups != 1 {
            return Err(EngineError::UnsupportedLayer {
                layer: "Conv2d",
                reason: format!("groups = {} (only 1 is covered)", self.groups),
            });
        }
        let [batch, _, height, width] = activations.dims();
        let [_, c_out, h_out, w_out] = backprops.dims();
        let pads = conv_padding(
            &self.padding,
            [height, width],
            self.kernel_size,
            self.stride,
        );
        let padded = if pads == [(0, 0), (0, 0)] {
            activations
        } else {
            activations.pad(pads, PadMode::Constant(0.0))
        };
        let unfolded = unfold4d(
            padded,
            self.kernel_size,
            UnfoldOptions::new(self.stride, [0, 0], self.dilation),
        );
        let [_, k, positions] = unfolded.dims();
        if positions != h_out * w_out {
            return Err(EngineError::Shape {
                what: "Conv2d unfolded positions",
                expected: vec![h_out * w_out],
                got: vec![positions],
            });
        }
        let delta: Tensor<B::InnerBackend, 3> = backprops.reshape([batch, c_out, positions]);
        let w = delta
            .clone()
            .matmul(unfolded.swap_dims(1, 2))
            .reshape([batch, c_out * k]);
        let mut out = vec![(self.weight.id, w)];
        if let Some(bias) = &self.bias {
            out.push((bias.id, delta.sum_dim(2).reshape([batch, c_out])));
        }
        Ok(out)
    }
}

/// Each row g_i of `per_sample` `[batch, P]` scaled to g_i / max(1, ‖g_i‖₂/C) (Abadi et al.,
/// Algorithm 1).
pub fn clip_per_sample<B: Backend>(per_sample: Tensor<B, 2>, clip: f64) -> Tensor<B, 2> {
    let norms = per_sample_norms(per_sample.clone());
    per_sample * clip_factors(norms, clip).unsqueeze_dim::<2>(1)
}

/// ‖g_i‖₂ of every row of `per_sample` `[batch, P]`.
pub fn per_sample_norms<B: Backend>(per_sample: Tensor<B, 2>) -> Tensor<B, 1> {
    (per_sample.clone() * per_sample)
        .sum_dim(1)
        .squeeze_dim::<1>(1)
        .sqrt()
}

/// Rows `batch` of `data` (`[N, ...]`), for a loss closure that indexes its dataset.
pub fn select_records<B: Backend, const D: usize>(
    data: &Tensor<B, D>,
    batch: &[usize],
) -> Tensor<B, D> {
    let indices: Vec<i64> = batch.iter().map(|&i| i as i64).collect();
    let indices =
        Tensor::<B, 1, Int>::from_data(TensorData::new(indices, [batch.len()]), &data.device());
    data.clone().select(0, indices)
}

// ---------------------------------------------------------------------------------------------
// The engine
// ---------------------------------------------------------------------------------------------

/// Where σ comes from.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum NoiseCalibration {
    /// A given noise multiplier σ ≥ 0 (σ = 0: clipping without noise, ε = ∞).
    NoiseMultiplier(f64),
    /// The smallest σ whose ε after `steps` steps at the engine's q, δ and adjacency is at
    /// most `epsilon` (Opacus' `make_private_with_epsilon`).
    TargetEpsilon {
        /// Target ε > 0.
        epsilon: f64,
        /// Number of steps the budget must last (≥ 1).
        steps: u64,
    },
}

/// Parameters of a [`PrivacyEngine`].
#[derive(Debug, Clone, PartialEq)]
pub struct PrivacyEngineConfig {
    /// Number of records N of the private dataset.
    pub dataset_size: usize,
    /// Poisson sampling rate q ∈ (0, 1]; the expected batch size is qN.
    pub sample_rate: f64,
    /// L2 bound C > 0 on each record's gradient.
    pub clip: f64,
    /// σ, given or calibrated.
    pub noise: NoiseCalibration,
    /// δ ∈ (0, 1) of the reported (ε, δ); default 1e-5.
    pub delta: f64,
    /// Neighbouring relation of the reported ε; default add/remove, as Opacus.
    pub adjacency: Adjacency,
}

impl PrivacyEngineConfig {
    /// N records sampled at rate q, each gradient clipped to C, with σ from `noise`; δ = 1e-5,
    /// add/remove.
    pub fn new(dataset_size: usize, sample_rate: f64, clip: f64, noise: NoiseCalibration) -> Self {
        Self {
            dataset_size,
            sample_rate,
            clip,
            noise,
            delta: 1e-5,
            adjacency: Adjacency::AddRemove,
        }
    }

    /// The same with δ.
    pub fn with_delta(mut self, delta: f64) -> Self {
        self.delta = delta;
        self
    }

    /// The same under `adjacency`.
    pub fn with_adjacency(mut self, adjacency: Adjacency) -> Self {
        self.adjacency = adjacency;
        self
    }
}

/// DP-SGD for any Burn module (module docs): Poisson sampling, per-sample clipping to C,
/// Gaussian noise σC, division by the expected batch size, an optimiser step, and the ε spent.
///
/// Making a small MLP of one's own private, with the [`Traced`] fast path:
///
/// ```
/// use burn::backend::{Autodiff, NdArray};
/// use burn::module::Module;
/// use burn::nn::{Linear, LinearConfig};
/// use burn::optim::SgdConfig;
/// use burn::tensor::{activation::relu, Tensor};
/// use privrl_agents::dp_engine::{
///     select_records, NoiseCalibration, PrivacyEngine, PrivacyEngineConfig, Tape, Traced,
/// };
/// use privrl_privacy::RandomnessSource;
///
/// type B = Autodiff<NdArray>;
///
/// #[derive(Module, Debug)]
/// struct Net<B: burn::tensor::backend::Backend> {
///     hidden: Linear<B>,
///     out: Linear<B>,
/// }
///
/// impl<B: burn::tensor::backend::AutodiffBackend> Net<B> {
///     // Layers with parameters go through the tape; the rest is ordinary Burn.
///     fn forward(&self, x: Tensor<B, 2>, tape: &mut Tape<B>) -> Tensor<B, 2> {
///         let h = relu(tape.trace(&self.hidden, x));
///         tape.trace(&self.out, h)
///     }
/// }
///
/// let device = Default::default();
/// let net = Net::<B> {
///     hidden: LinearConfig::new(2, 8).init(&device),
///     out: LinearConfig::new(8, 1).init(&device),
/// };
/// // 64 records (x, y = x₀ − x₁).
/// let x = Tensor::<B, 2>::random([64, 2], burn::tensor::Distribution::Default, &device);
/// let y = x.clone().narrow(1, 0, 1) - x.clone().narrow(1, 1, 1);
/// // Per-sample squared errors of the records `batch`.
/// let loss = Traced(|net: &Net<B>, batch: &[usize], tape: &mut Tape<B>| {
///     let error = net.forward(select_records(&x, batch), tape) - select_records(&y, batch);
///     error.powi_scalar(2).sum_dim(1).squeeze_dim::<1>(1)
/// });
///
/// // σ for ε = 3 at δ = 1e-5 over 20 steps of expected batch 16 (q = 0.25), C = 1.
/// let config = PrivacyEngineConfig::new(
///     64,
///     0.25,
///     1.0,
///     NoiseCalibration::TargetEpsilon { epsilon: 3.0, steps: 20 },
/// );
/// let mut engine = PrivacyEngine::new(config, RandomnessSource::Seeded(7)).unwrap();
/// let mut optimizer = SgdConfig::new().init();
/// let mut net = net;
/// for _ in 0..20 {
///     net = engine.step(net, &mut optimizer, 0.1, &loss).unwrap();
/// }
/// let epsilon = engine.epsilon().unwrap();
/// assert!(epsilon <= 3.0 && epsilon > 2.9, "{epsilon}");
/// println!("σ = {:.3}: ε = {epsilon:.3} ({})", engine.noise_multiplier(), engine.label());
/// ```
pub struct PrivacyEngine {
    config: PrivacyEngineConfig,
    noise_multiplier: f64,
    rng: MechanismRng,
    /// Run-length blocks of releases (q, σ, count), in order.
    schedule: Vec<SubsampledGaussianSteps>,
}

impl fmt::Debug for PrivacyEngine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PrivacyEngine")
            .field("config", &self.config)
            .field("noise_multiplier", &self.noise_multiplier)
            .field("steps", &self.steps())
            .finish()
    }
}

fn out_of_range(name: &'static str, value: f64, expected: &'static str) -> EngineError {
    EngineError::Privacy(PrivacyError::OutOfRange {
        name,
        value,
        expected,
    })
}

impl PrivacyEngine {
    /// Validates `config`, calibrates σ if a target ε is given, and draws sampling and noise
    /// from `source` (a seed, or the operating system's CSPRNG).
    pub fn new(config: PrivacyEngineConfig, source: RandomnessSource) -> Result<Self, EngineError> {
        if config.dataset_size == 0 {
            return Err(PrivacyError::Empty {
                name: "dataset_size",
            }
            .into());
        }
        let q = config.sample_rate;
        if !(q > 0.0 && q <= 1.0) {
            return Err(out_of_range("sample_rate", q, "in (0, 1]"));
        }
        if !(config.clip.is_finite() && config.clip > 0.0) {
            return Err(out_of_range("clip", config.clip, "> 0 and finite"));
        }
        if !(config.delta > 0.0 && config.delta < 1.0) {
            return Err(out_of_range("delta", config.delta, "in (0, 1)"));
        }
        let noise_multiplier = match config.noise {
            NoiseCalibration::NoiseMultiplier(sigma) => {
                if !(sigma.is_finite() && sigma >= 0.0) {
                    return Err(out_of_range("noise_multiplier", sigma, ">= 0 and finite"));
                }
                sigma
            }
            NoiseCalibration::TargetEpsilon { epsilon, steps } => {
                noise_multiplier_for_under(config.adjacency, epsilon, config.delta, q, steps)?
            }
        };
        Ok(Self {
            config,
            noise_multiplier,
            rng: MechanismRng::new(source)?,
            schedule: Vec::new(),
        })
    }

    /// The configuration.
    pub fn config(&self) -> &PrivacyEngineConfig {
        &self.config
    }

    /// σ (calibrated, for a target ε).
    pub fn noise_multiplier(&self) -> f64 {
        self.noise_multiplier
    }

    /// qN, what a step's clipped noisy sum is divided by.
    pub fn expected_batch_size(&self) -> f64 {
        self.config.sample_rate * self.config.dataset_size as f64
    }

    /// One Poisson batch: each record index in 0..N independently with probability q.
    pub fn sample(&mut self) -> Result<Vec<usize>, EngineError> {
        Ok(poisson_sample(
            self.config.dataset_size,
            self.config.sample_rate,
            &mut self.rng,
        )?)
    }

    /// The private gradient of `module` on `batch` (which must be a Poisson batch drawn by
    /// [`PrivacyEngine::sample`] for the accounting to hold): Σ_i clip_C(g_i) + N(0, σ²C²I),
    /// divided by qN, as a record in `module`'s parameter layout. Counts one release. An
    /// empty batch releases pure noise: skipping it would break the accounting.
    pub fn private_gradient<B, M>(
        &mut self,
        module: &M,
        batch: &[usize],
        per_sample: &impl PerSampleGradients<B, M>,
    ) -> Result<GradientRecord, EngineError>
    where
        B: AutodiffBackend,
        M: AutodiffModule<B> + Sync,
    {
        if let Some(&index) = batch.iter().find(|&&i| i >= self.config.dataset_size) {
            return Err(EngineError::Index {
                index,
                size: self.config.dataset_size,
            });
        }
        // Reading the parameters initialises Burn's lazy ones, which makes tracked leaves: in a
        // section, like every other tracked op, and on `module` itself (a clone of an
        // uninitialised module initialises its own, different, values).
        let layout = autodiff::exclusive(|| ParamLayout::of(module));
        let dimension = layout.num_values();
        let clipped_sum = if batch.is_empty() {
            vec![0.0; dimension]
        } else {
            let rows = per_sample.per_sample_gradients(module, batch, &layout)?;
            let dims = rows.dims();
            if dims != [batch.len(), dimension] {
                return Err(EngineError::Shape {
                    what: "per-sample gradients",
                    expected: vec![batch.len(), dimension],
                    got: dims.to_vec(),
                });
            }
            host(clip_per_sample(rows, self.config.clip).sum_dim(0))
        };
        let mechanism = if self.noise_multiplier > 0.0 {
            GradientMechanismConfig::DpSgd {
                clip: self.config.clip,
                noise_multiplier: self.noise_multiplier,
            }
        } else {
            GradientMechanismConfig::Clip {
                clip: self.config.clip,
            }
        }
        .build(dimension, 1)?;
        let released = mechanism.release_clipped_sum(
            clipped_sum,
            self.expected_batch_size(),
            &mut self.rng,
        )?;
        self.record_release();
        Ok(layout.record(&released)?)
    }

    /// One DP-SGD step: a Poisson batch, its private gradient, and `optimizer`'s update of
    /// `module` with learning rate `lr` (in an autodiff section). Returns the updated module.
    pub fn step<B, M, O>(
        &mut self,
        module: M,
        optimizer: &mut O,
        lr: f64,
        per_sample: &impl PerSampleGradients<B, M>,
    ) -> Result<M, EngineError>
    where
        B: AutodiffBackend,
        M: AutodiffModule<B> + Sync,
        O: Optimizer<M, B>,
    {
        let batch = self.sample()?;
        let gradient = self.private_gradient(&module, &batch, per_sample)?;
        autodiff::exclusive(move || {
            let grads = gradient.to_gradients_params(&module)?;
            Ok(optimizer.step(lr, module, grads))
        })
    }

    fn record_release(&mut self) {
        let (q, sigma) = (self.config.sample_rate, self.noise_multiplier);
        match self.schedule.last_mut() {
            Some(last) if last.sample_rate == q && last.noise_multiplier == sigma => {
                last.steps += 1
            }
            _ => self.schedule.push(SubsampledGaussianSteps {
                sample_rate: q,
                noise_multiplier: sigma,
                steps: 1,
            }),
        }
    }

    /// Releases so far.
    pub fn steps(&self) -> u64 {
        self.schedule.iter().map(|b| b.steps).sum()
    }

    /// The releases so far, as blocks of identical steps (q, σ, count).
    pub fn schedule(&self) -> &[SubsampledGaussianSteps] {
        &self.schedule
    }

    /// The RDP accountant holding every release so far, under the engine's adjacency.
    pub fn accountant(&self) -> Result<RdpAccountant, EngineError> {
        let mut accountant =
            RdpAccountant::new(self.config.delta)?.with_adjacency(self.config.adjacency)?;
        for block in &self.schedule {
            accountant.step(block.sample_rate, block.noise_multiplier, block.steps)?;
        }
        Ok(accountant)
    }

    /// ε spent so far at the configured δ, per record, under the configured adjacency: 0
    /// before any step, ∞ for σ = 0.
    pub fn epsilon(&self) -> Result<f64, EngineError> {
        if self.schedule.is_empty() {
            return Ok(0.0);
        }
        if self.noise_multiplier <= 0.0 {
            return Ok(f64::INFINITY);
        }
        Ok(self.accountant()?.epsilon(self.config.delta)?.0)
    }

    /// What an ε of this engine means, to print beside it: `per record, add/remove,
    /// δ = 1e-5`.
    pub fn label(&self) -> String {
        format!(
            "per record, {}, δ = {}",
            self.config.adjacency.name(),
            self.config.delta
        )
    }
}

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
//!    the chosen accountant of [`privrl_privacy`] ([`AccountantKind`]): RDP (Mironov, Talwar &
//!    Zhang 2019; the default, as Opacus) or the tighter PLD ([`privrl_privacy::pld`]), under
//!    the chosen [`Adjacency`] (add/remove by default, as Opacus).
//!
//! σ is given, or calibrated from a target (ε, δ) and a number of steps
//! ([`NoiseCalibration::TargetEpsilon`]), as Opacus' `make_private_with_epsilon`, always under
//! RDP (see there).
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
use burn::tensor::ops::UnfoldOptions;
use burn::tensor::{Int, Tensor, TensorData};
use privrl_privacy::{
    compute_rdp_under, default_orders, noise_multiplier_for_under, pld, poisson_sample, rdp_to_dp,
    AccountantKind, Adjacency, Clipping, DpSgdConfig, GradientMechanism, GradientMechanismConfig,
    MechanismRng, MechanismRngState, PldConfig, PrivacyError, RandomnessSource, RdpAccountant,
    SubsampledGaussianSteps,
};
use serde::{Deserialize, Serialize};

use crate::autodiff;
use crate::dtype::{float_options, zero_pad};
use crate::error::{AgentError, RecordError};
use crate::nn::Dense;
use crate::per_sample::{
    clip_factors, host, linear_grad_samples, linear_squared_norms, linear_weighted_sums,
};
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

impl From<EngineError> for AgentError {
    /// The agent's own error where the engine only passed one on.
    fn from(error: EngineError) -> Self {
        match error {
            EngineError::Agent(e) => e,
            EngineError::Privacy(e) => AgentError::Privacy(e),
            EngineError::Record(e) => AgentError::Record(e),
            other => AgentError::Engine(Box::new(other)),
        }
    }
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

    /// Σ_i clip_C(g_i) over the records `batch` (Abadi et al., Algorithm 1), with every
    /// record's unclipped norm ‖g_i‖₂. By default from the materialised per-sample gradients;
    /// [`Traced`] computes it without materialising those of 2-D linear layers.
    fn clipped_sum(
        &self,
        module: &M,
        batch: &[usize],
        layout: &ParamLayout,
        clip: f64,
    ) -> Result<ClippedSum, EngineError> {
        let rows = self.per_sample_gradients(module, batch, layout)?;
        check_rows(&rows, batch.len(), layout)?;
        Ok(clip_rows(rows, clip, f64::NAN))
    }
}

/// What [`PerSampleGradients::clipped_sum`] returns.
#[derive(Debug, Clone, PartialEq)]
pub struct ClippedSum {
    /// Σ_i clip_C(g_i), P values in layout order.
    pub sum: Vec<f32>,
    /// ‖g_i‖₂ of every record, before clipping (what adaptive clipping counts).
    pub norms: Vec<f32>,
    /// Σ_i ℓ_i, the records' summed loss where the strategy sees it (NaN where it does not).
    pub loss: f64,
}

fn check_rows<B: Backend>(
    rows: &Tensor<B, 2>,
    batch: usize,
    layout: &ParamLayout,
) -> Result<(), EngineError> {
    let dims = rows.dims();
    if dims != [batch, layout.num_values()] {
        return Err(EngineError::Shape {
            what: "per-sample gradients",
            expected: vec![batch, layout.num_values()],
            got: dims.to_vec(),
        });
    }
    Ok(())
}

/// Clips the rows of `[batch, P]` per-sample gradients to C and sums them.
fn clip_rows<B: Backend>(rows: Tensor<B, 2>, clip: f64, loss: f64) -> ClippedSum {
    let norms = per_sample_norms(rows.clone());
    let factors = clip_factors(norms.clone(), clip);
    let sum = (rows * factors.unsqueeze_dim::<2>(1)).sum_dim(0);
    ClippedSum {
        sum: host(sum),
        norms: host(norms),
        loss,
    }
}

/// Given per-sample gradients, one row per record of the dataset, computed elsewhere (e.g.
/// DP-SGD REINFORCE's per-episode gradients, one backward per episode like [`MicroBatches`]):
/// the engine clips, noises and accounts for them.
#[derive(Debug, Clone)]
pub struct GivenGradients(pub Vec<Vec<f32>>);

impl<B, M> PerSampleGradients<B, M> for GivenGradients
where
    B: AutodiffBackend,
    M: AutodiffModule<B>,
{
    fn per_sample_gradients(
        &self,
        module: &M,
        batch: &[usize],
        layout: &ParamLayout,
    ) -> Result<Tensor<B::InnerBackend, 2>, EngineError> {
        let width = layout.num_values();
        let mut values = Vec::with_capacity(batch.len() * width);
        for &record in batch {
            let row = self.0.get(record).ok_or(EngineError::Index {
                index: record,
                size: self.0.len(),
            })?;
            if row.len() != width {
                return Err(EngineError::Shape {
                    what: "given per-sample gradient",
                    expected: vec![width],
                    got: vec![row.len()],
                });
            }
            values.extend_from_slice(row);
        }
        let device = module.devices().into_iter().next().unwrap_or_default();
        Ok(Tensor::<B, 2>::from_data(
            TensorData::new(values, [batch.len(), width]),
            float_options::<B>(&device),
        )
        .inner())
    }
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
                    Tensor::zeros([len], float_options::<B::InnerBackend>(&value.device()))
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
            let (parts, _) = self.parts(module, batch)?;
            materialized_rows(parts, batch.len(), layout)
        })
    }

    /// The clipped sum without materialising the per-sample gradients of linear layers on
    /// `[batch, d]` inputs: their norms are ‖a_i‖‖δ_i‖ and their clipped sum is aᵀ diag(c) δ
    /// (`crate::per_sample`, the factored trick), so the cost is close to one ordinary
    /// backward. Convolutions, sequence inputs and shared weights are materialised.
    fn clipped_sum(
        &self,
        module: &M,
        batch: &[usize],
        layout: &ParamLayout,
        clip: f64,
    ) -> Result<ClippedSum, EngineError> {
        autodiff::exclusive(|| {
            let (parts, loss) = self.parts(module, batch)?;
            let mut seen = std::collections::HashSet::new();
            let shared = parts.iter().flat_map(Part::ids).any(|id| !seen.insert(id));
            if shared {
                // A parameter used twice: its per-sample gradient is the sum of both uses,
                // whose norm the factors do not give.
                let rows = materialized_rows(parts, batch.len(), layout)?;
                return Ok(clip_rows(rows, clip, loss));
            }
            factored_clipped_sum(parts, batch.len(), layout, clip, loss)
        })
    }
}

impl<F> Traced<F> {
    /// Runs the traced forward and one backward: every traced layer's per-sample gradient
    /// factors, and Σ_i ℓ_i. Call inside an autodiff section.
    fn parts<B, M>(&self, module: &M, batch: &[usize]) -> Result<(Vec<Part<B>>, f64), EngineError>
    where
        B: AutodiffBackend,
        F: Fn(&M, &[usize], &mut Tape<B>) -> Tensor<B, 1>,
    {
        let mut tape = Tape::recording();
        let losses = (self.0)(module, batch, &mut tape);
        check_losses(&losses, batch.len())?;
        let total = losses.sum();
        let grads = autodiff::backward(&total);
        let loss = f64::from(host(total.inner())[0]);
        let parts = tape
            .entries
            .iter()
            .map(|entry| entry.part(&grads))
            .collect::<Result<Vec<_>, _>>()?;
        Ok((parts, loss))
    }
}

/// One traced layer's per-sample gradients: the factors of a linear layer on `[batch, d]`
/// inputs, or materialised rows `[batch, numel]` per parameter.
enum Part<B: AutodiffBackend> {
    Linear {
        weight: ParamId,
        bias: Option<ParamId>,
        activations: Tensor<B::InnerBackend, 2>,
        backprops: Tensor<B::InnerBackend, 2>,
    },
    Rows(Vec<(ParamId, Tensor<B::InnerBackend, 2>)>),
}

impl<B: AutodiffBackend> Part<B> {
    fn ids(&self) -> Vec<ParamId> {
        match self {
            Part::Linear { weight, bias, .. } => std::iter::once(*weight).chain(*bias).collect(),
            Part::Rows(rows) => rows.iter().map(|(id, _)| *id).collect(),
        }
    }

    fn into_rows(self) -> Vec<(ParamId, Tensor<B::InnerBackend, 2>)> {
        match self {
            Part::Linear {
                weight,
                bias,
                activations,
                backprops,
            } => linear_param_samples(weight, bias, activations, backprops),
            Part::Rows(rows) => rows,
        }
    }
}

/// `[batch, P]` per-sample gradients in layout order from the traced parts (a layer applied
/// twice adds its two contributions).
fn materialized_rows<B: AutodiffBackend>(
    parts: Vec<Part<B>>,
    batch: usize,
    layout: &ParamLayout,
) -> Result<Tensor<B::InnerBackend, 2>, EngineError> {
    let mut by_id: HashMap<ParamId, Tensor<B::InnerBackend, 2>> = HashMap::new();
    for (id, g) in parts.into_iter().flat_map(Part::into_rows) {
        let g = match by_id.remove(&id) {
            Some(previous) => previous + g,
            None => g,
        };
        by_id.insert(id, g);
    }
    let mut columns = Vec::with_capacity(layout.entries.len());
    for entry in &layout.entries {
        let g = by_id
            .remove(&entry.id)
            .ok_or_else(|| EngineError::Untraced {
                name: entry.name.clone(),
            })?;
        check_part_shape(g.dims(), batch, entry)?;
        columns.push(g);
    }
    Ok(Tensor::cat(columns, 1))
}

fn check_part_shape(dims: [usize; 2], batch: usize, entry: &ParamEntry) -> Result<(), EngineError> {
    if dims != [batch, entry.len()] {
        return Err(EngineError::Shape {
            what: "per-sample gradient of a traced layer",
            expected: vec![batch, entry.len()],
            got: dims.to_vec(),
        });
    }
    Ok(())
}

/// [`Traced`]'s clipped sum from the parts, each parameter used once: per-sample squared
/// norms added over the parts, clip factors c_i = min(1, C/‖g_i‖), then every part's
/// Σ_i c_i g_i.
fn factored_clipped_sum<B: AutodiffBackend>(
    parts: Vec<Part<B>>,
    batch: usize,
    layout: &ParamLayout,
    clip: f64,
    loss: f64,
) -> Result<ClippedSum, EngineError> {
    let mut squared: Option<Tensor<B::InnerBackend, 1>> = None;
    let mut add = |s: Tensor<B::InnerBackend, 1>| {
        squared = Some(match squared.take() {
            Some(total) => total + s,
            None => s,
        });
    };
    for part in &parts {
        match part {
            Part::Linear {
                bias,
                activations,
                backprops,
                ..
            } => {
                let (weight_sq, bias_sq) = linear_squared_norms(activations, backprops);
                add(weight_sq);
                if bias.is_some() {
                    add(bias_sq);
                }
            }
            Part::Rows(rows) => {
                for (_, g) in rows {
                    add((g.clone() * g.clone()).sum_dim(1).squeeze_dim::<1>(1));
                }
            }
        }
    }
    let Some(squared) = squared else {
        return Err(match layout.entries.first() {
            Some(entry) => EngineError::Untraced {
                name: entry.name.clone(),
            },
            None => EngineError::Shape {
                what: "module parameters",
                expected: vec![1],
                got: vec![0],
            },
        });
    };
    let norms = squared.sqrt();
    let factors = clip_factors(norms.clone(), clip);
    let mut by_id: HashMap<ParamId, Tensor<B::InnerBackend, 1>> = HashMap::new();
    for part in parts {
        match part {
            Part::Linear {
                weight,
                bias,
                activations,
                backprops,
            } => {
                let (w, b) = linear_weighted_sums(&activations, &backprops, factors.clone());
                let [d_in, d_out] = w.dims();
                by_id.insert(weight, w.reshape([d_in * d_out]));
                if let Some(bias) = bias {
                    by_id.insert(bias, b);
                }
            }
            Part::Rows(rows) => {
                for (id, g) in rows {
                    let weighted = g * factors.clone().unsqueeze_dim::<2>(1);
                    by_id.insert(id, weighted.sum_dim(0).squeeze_dim::<1>(0));
                }
            }
        }
    }
    let mut columns = Vec::with_capacity(layout.entries.len());
    for entry in &layout.entries {
        let g = by_id
            .remove(&entry.id)
            .ok_or_else(|| EngineError::Untraced {
                name: entry.name.clone(),
            })?;
        check_part_shape([batch, g.dims()[0]], batch, entry)?;
        columns.push(g);
    }
    Ok(ClippedSum {
        sum: host(Tensor::cat(columns, 0)),
        norms: host(norms),
        loss,
    })
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

    /// For a layer z = a W + b (W `[d_in, d_out]`): the ids of W and b, so that on `[batch, d]`
    /// inputs the engine clips from the factors a and δ without materialising ∇W_i = a_iᵀ δ_i.
    /// `None` (the default): always materialised through [`GradSampleLayer::grad_samples`].
    fn linear_ids(&self) -> Option<(ParamId, Option<ParamId>)> {
        None
    }
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
        let probe = Tensor::<B, D>::zeros(output.dims(), float_options::<B>(&output.device()))
            .require_grad();
        self.entries.push(Box::new(Probe {
            layer: layer.clone(),
            activations,
            probe: probe.clone(),
        }));
        output + probe
    }
}

trait TapeEntry<B: AutodiffBackend>: Send {
    fn part(&self, grads: &B::Gradients) -> Result<Part<B>, EngineError>;
}

struct Probe<B: AutodiffBackend, L, const D: usize> {
    layer: L,
    activations: Tensor<B::InnerBackend, D>,
    probe: Tensor<B, D>,
}

impl<B: AutodiffBackend, L: GradSampleLayer<B, D>, const D: usize> TapeEntry<B> for Probe<B, L, D> {
    fn part(&self, grads: &B::Gradients) -> Result<Part<B>, EngineError> {
        // No path from this layer to the loss: its backprops are zero.
        let backprops = self.probe.grad(grads).unwrap_or_else(|| {
            Tensor::zeros(
                self.probe.dims(),
                float_options::<B::InnerBackend>(&self.activations.device()),
            )
        });
        match self.layer.linear_ids() {
            Some((weight, bias)) if D == 2 => {
                let [batch, d_in] = [self.activations.dims()[0], self.activations.dims()[1]];
                let d_out = backprops.dims()[1];
                Ok(Part::Linear {
                    weight,
                    bias,
                    activations: self.activations.clone().reshape([batch, d_in]),
                    backprops: backprops.reshape([batch, d_out]),
                })
            }
            _ => Ok(Part::Rows(
                self.layer
                    .grad_samples(self.activations.clone(), backprops)?,
            )),
        }
    }
}

/// [`linear_grad_samples`] keyed by the parameters' ids.
fn linear_param_samples<B: Backend, const D: usize>(
    weight: ParamId,
    bias: Option<ParamId>,
    activations: Tensor<B, D>,
    backprops: Tensor<B, D>,
) -> Vec<(ParamId, Tensor<B, 2>)> {
    let (w, b) = linear_grad_samples(activations, backprops);
    std::iter::once((weight, w))
        .chain(bias.map(|id| (id, b)))
        .collect()
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
        Ok(linear_param_samples(
            self.weight.id,
            self.bias.as_ref().map(|b| b.id),
            activations,
            backprops,
        ))
    }

    fn linear_ids(&self) -> Option<(ParamId, Option<ParamId>)> {
        Some((self.weight.id, self.bias.as_ref().map(|b| b.id)))
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
        Ok(linear_param_samples(
            self.weight.id,
            self.bias.as_ref().map(|b| b.id),
            activations,
            backprops,
        ))
    }

    fn linear_ids(&self) -> Option<(ParamId, Option<ParamId>)> {
        Some((self.weight.id, self.bias.as_ref().map(|b| b.id)))
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
            zero_pad(activations, pads)
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
// Accounting
// ---------------------------------------------------------------------------------------------

/// The releases of a DP-SGD run, in order, as run-length blocks of identical steps (q, σ,
/// count), each q exactly as used (a replay buffer that grows gives every step its own q),
/// and the ε they add up to at δ, under an [`Adjacency`], by an [`AccountantKind`]: the RDP
/// accountant (Mironov, Talwar & Zhang 2019; the default) or the PLD accountant
/// ([`privrl_privacy::pld`], tighter). The one accounting of the [`PrivacyEngine`] and of the
/// DP agents built on it; plain data, so a checkpoint holds it exactly (a schedule saved
/// before the accountant was recorded reads as RDP, the only one then).
///
/// [`ReleaseSchedule::epsilon`] keeps, under RDP, the RDP of the blocks before the last one,
/// so that asking for ε after every episode costs one block's RDP, not the whole run's; under
/// PLD, the last ε and the schedule it was computed for, so that asking again without new
/// releases costs nothing (each new ε composes the whole schedule: up to seconds).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ReleaseSchedule {
    adjacency: Adjacency,
    delta: f64,
    blocks: Vec<SubsampledGaussianSteps>,
    #[serde(default)]
    accountant: AccountantKind,
    #[serde(skip)]
    cache: RdpCache,
    #[serde(skip)]
    pld_cache: PldCache,
}

impl PartialEq for ReleaseSchedule {
    fn eq(&self, other: &Self) -> bool {
        (self.adjacency, self.delta, &self.blocks, self.accountant)
            == (
                other.adjacency,
                other.delta,
                &other.blocks,
                other.accountant,
            )
    }
}

/// The PLD ε last computed and what it was computed for (adjacency, δ, blocks).
#[derive(Debug, Default)]
struct PldCache(std::sync::Mutex<Option<PldKey>>);

/// (adjacency, δ, blocks, ε).
type PldKey = (Adjacency, f64, Vec<SubsampledGaussianSteps>, f64);

impl Clone for PldCache {
    fn clone(&self) -> Self {
        Self(std::sync::Mutex::new(
            self.0.lock().unwrap_or_else(|e| e.into_inner()).clone(),
        ))
    }
}

/// RDP, at [`default_orders`], of the first `blocks` blocks of a schedule.
#[derive(Debug, Default)]
struct RdpCache(std::sync::Mutex<Option<(usize, Vec<f64>)>>);

impl Clone for RdpCache {
    fn clone(&self) -> Self {
        Self(std::sync::Mutex::new(self.lock().clone()))
    }
}

impl RdpCache {
    fn lock(&self) -> std::sync::MutexGuard<'_, Option<(usize, Vec<f64>)>> {
        // A panic while holding it leaves a consistent (older) prefix: keep using it.
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl ReleaseSchedule {
    /// No release yet; ε at `delta`, under `adjacency`, by the RDP accountant
    /// ([`ReleaseSchedule::with_accountant`] for PLD).
    pub fn new(adjacency: Adjacency, delta: f64) -> Self {
        Self {
            adjacency,
            delta,
            blocks: Vec::new(),
            accountant: AccountantKind::Rdp,
            cache: RdpCache::default(),
            pld_cache: PldCache::default(),
        }
    }

    /// The same schedule with ε by `accountant` (the releases do not depend on it).
    pub fn with_accountant(mut self, accountant: AccountantKind) -> Self {
        self.accountant = accountant;
        self
    }

    /// Which accountant gives ε.
    pub fn accountant_kind(&self) -> AccountantKind {
        self.accountant
    }

    /// Counts `count` releases at sampling rate q and noise multiplier σ (σ = 0: no noise,
    /// ε = ∞), merged into the last block when both are the same.
    pub fn record(&mut self, sample_rate: f64, noise_multiplier: f64, count: u64) {
        if count == 0 {
            return;
        }
        match self.blocks.last_mut() {
            Some(last)
                if last.sample_rate == sample_rate && last.noise_multiplier == noise_multiplier =>
            {
                last.steps += count
            }
            _ => self.blocks.push(SubsampledGaussianSteps {
                sample_rate,
                noise_multiplier,
                steps: count,
            }),
        }
    }

    /// The blocks, in order.
    pub fn blocks(&self) -> &[SubsampledGaussianSteps] {
        &self.blocks
    }

    /// Releases counted.
    pub fn steps(&self) -> u64 {
        self.blocks.iter().map(|b| b.steps).sum()
    }

    /// The neighbouring relation of ε.
    pub fn adjacency(&self) -> Adjacency {
        self.adjacency
    }

    /// δ of the (ε, δ).
    pub fn delta(&self) -> f64 {
        self.delta
    }

    /// The same schedule under `adjacency` (the releases do not depend on it).
    pub fn with_adjacency(mut self, adjacency: Adjacency) -> Self {
        if adjacency != self.adjacency {
            self.cache = RdpCache::default();
        }
        self.adjacency = adjacency;
        self
    }

    fn block_rdp(&self, block: &SubsampledGaussianSteps) -> Result<Vec<f64>, PrivacyError> {
        compute_rdp_under(
            self.adjacency,
            block.sample_rate,
            block.noise_multiplier,
            block.steps,
            &default_orders(),
        )
    }

    /// ε at δ of every release, composed exactly (each block at its own q) by the schedule's
    /// accountant: 0 before any release, ∞ if one had no noise.
    pub fn epsilon(&self) -> Result<f64, PrivacyError> {
        self.epsilon_by(self.accountant)
    }

    /// [`ReleaseSchedule::epsilon`] by `accountant`, whichever the schedule's own is, with the
    /// same caches: e.g. the cheap RDP ε after every episode of a run that reports PLD at the
    /// end.
    pub fn epsilon_by(&self, accountant: AccountantKind) -> Result<f64, PrivacyError> {
        let Some(last) = self.blocks.last() else {
            return Ok(0.0);
        };
        if self.blocks.iter().any(|b| b.noise_multiplier <= 0.0) {
            return Ok(f64::INFINITY);
        }
        match accountant {
            AccountantKind::Rdp => self.rdp_epsilon(last),
            AccountantKind::Pld => self.pld_epsilon(),
        }
    }

    /// ε by the PLD accountant at its default discretisation, recomputed only when the
    /// schedule (or its adjacency or δ) changed since the last call.
    fn pld_epsilon(&self) -> Result<f64, PrivacyError> {
        let mut cache = self.pld_cache.0.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((adjacency, delta, blocks, epsilon)) = cache.as_ref() {
            if (*adjacency, *delta, blocks.as_slice())
                == (self.adjacency, self.delta, self.blocks.as_slice())
            {
                return Ok(*epsilon);
            }
        }
        let epsilon = pld::schedule_epsilon(
            &self.blocks,
            self.adjacency,
            self.delta,
            &PldConfig::default(),
        )?;
        *cache = Some((self.adjacency, self.delta, self.blocks.clone(), epsilon));
        Ok(epsilon)
    }

    /// ε by the RDP accountant, the closed blocks' RDP cached.
    fn rdp_epsilon(&self, last: &SubsampledGaussianSteps) -> Result<f64, PrivacyError> {
        let closed = self.blocks.len() - 1;
        let mut cache = self.cache.lock();
        let (mut done, mut rdp) = match cache.take() {
            Some((done, rdp)) if done <= closed => (done, rdp),
            _ => (0, vec![0.0; default_orders().len()]),
        };
        while done < closed {
            for (r, a) in rdp.iter_mut().zip(self.block_rdp(&self.blocks[done])?) {
                *r += a;
            }
            done += 1;
        }
        let mut total = rdp.clone();
        *cache = Some((done, rdp));
        drop(cache);
        for (r, a) in total.iter_mut().zip(self.block_rdp(last)?) {
            *r += a;
        }
        Ok(rdp_to_dp(&default_orders(), &total, self.delta)?.0)
    }

    /// The RDP accountant holding every release, under the schedule's adjacency (whatever
    /// [`ReleaseSchedule::accountant_kind`] is).
    pub fn accountant(&self) -> Result<RdpAccountant, PrivacyError> {
        let mut accountant = RdpAccountant::new(self.delta)?.with_adjacency(self.adjacency)?;
        for block in &self.blocks {
            accountant.step(block.sample_rate, block.noise_multiplier, block.steps)?;
        }
        Ok(accountant)
    }
}

// ---------------------------------------------------------------------------------------------
// Adaptive clipping
// ---------------------------------------------------------------------------------------------

/// Quantile-based adaptive clipping (Andrew, Thakkar, McMahan & Ramaswamy 2021,
/// "Differentially Private Learning with Adaptive Clipping", Algorithm 1): after every step
/// C ← C·exp(−η (b̃ − γ)), where b̃ is the noised fraction of the batch whose gradient norm was
/// at most C, so that C tracks the γ-quantile of the per-sample norms.
///
/// The count is private too: Σ_i (b_i − ½), whose sensitivity is ½, is released with
/// N(0, σ_b²), and b̃ = that / (qN) + ½ (qN the expected batch). The gradient's noise multiplier
/// becomes σ_Δ = (σ⁻² − (2σ_b)⁻²)^(−1/2) ([`adaptive_gradient_noise`]): the two Gaussian
/// releases together are one Gaussian mechanism of noise multiplier σ (Andrew et al.,
/// Theorem 1), so each step is accounted exactly as a non-adaptive step at σ, under either
/// adjacency (both sensitivities double under substitution).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct AdaptiveClipping {
    /// Target quantile γ ∈ (0, 1) of the per-sample norms (0.5 in Andrew et al.).
    pub target_quantile: f64,
    /// Geometric learning rate η_C > 0 (0.2 in Andrew et al.).
    pub learning_rate: f64,
    /// σ_b, the standard deviation of the noise on the clipped count; it must exceed σ/2.
    /// Andrew et al. suggest the expected batch size / 20.
    pub count_noise: f64,
}

impl AdaptiveClipping {
    /// γ, η_C and σ_b.
    pub fn new(target_quantile: f64, learning_rate: f64, count_noise: f64) -> Self {
        Self {
            target_quantile,
            learning_rate,
            count_noise,
        }
    }

    fn validate(&self, noise_multiplier: f64) -> Result<(), EngineError> {
        let quantile = self.target_quantile;
        if !(quantile > 0.0 && quantile < 1.0) {
            return Err(out_of_range("target_quantile", quantile, "in (0, 1)"));
        }
        let rate = self.learning_rate;
        if !(rate.is_finite() && rate > 0.0) {
            return Err(out_of_range("clip_learning_rate", rate, "> 0 and finite"));
        }
        adaptive_gradient_noise(noise_multiplier, self.count_noise).map(|_| ())
    }
}

/// σ_Δ = (σ⁻² − (2σ_b)⁻²)^(−1/2): the gradient's noise multiplier that, with N(0, σ_b²) on the
/// clipped count, spends what one Gaussian release at σ spends (Andrew et al. 2021,
/// Theorem 1). σ = 0 (no privacy) gives 0. Refused unless σ_b > σ/2 (else no σ_Δ exists).
pub fn adaptive_gradient_noise(
    noise_multiplier: f64,
    count_noise: f64,
) -> Result<f64, EngineError> {
    let (sigma, sigma_b) = (noise_multiplier, count_noise);
    if !(sigma.is_finite() && sigma >= 0.0) {
        return Err(out_of_range("noise_multiplier", sigma, ">= 0 and finite"));
    }
    if sigma == 0.0 {
        return Ok(0.0);
    }
    if !(sigma_b.is_finite() && 2.0 * sigma_b > sigma) {
        return Err(out_of_range(
            "count_noise",
            sigma_b,
            "> noise_multiplier / 2 (the count's noise must leave budget for the gradient)",
        ));
    }
    Ok((sigma.powi(-2) - (2.0 * sigma_b).powi(-2)).powf(-0.5))
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
    /// most `epsilon` (Opacus' `make_private_with_epsilon`), **by the RDP accountant** whatever
    /// the engine's [`AccountantKind`]: RDP's ε is an upper bound, so the run meets the target
    /// by either account (under PLD its reported ε is typically below the target, the
    /// calibration conservative by the gap between the two). Calibrating under PLD would cost
    /// a PLD composition per bisection step (tens of them, each up to seconds).
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
    /// Quantile-based adaptive clipping starting from `clip`; `None` (default): C fixed.
    pub adaptive_clipping: Option<AdaptiveClipping>,
    /// Which accountant gives the spent ε; default RDP, as Opacus.
    pub accountant: AccountantKind,
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
            adaptive_clipping: None,
            accountant: AccountantKind::Rdp,
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

    /// The same with ε by `accountant`.
    pub fn with_accountant(mut self, accountant: AccountantKind) -> Self {
        self.accountant = accountant;
        self
    }

    /// The same with quantile-based adaptive clipping.
    pub fn with_adaptive_clipping(mut self, adaptive: AdaptiveClipping) -> Self {
        self.adaptive_clipping = Some(adaptive);
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
    /// σ_Δ of the gradient: σ, or less with adaptive clipping (its count takes the rest).
    gradient_noise: f64,
    rng: MechanismRng,
    schedule: ReleaseSchedule,
    /// The module's parameter count at the last step: the number of noise draws the next step
    /// makes, which it draws while the clipped sum is computed (none known yet: in turn).
    dimension: Option<usize>,
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

/// What a [`PrivacyEngine`] must carry over a checkpoint so that a resumed run continues
/// where it stopped: every release so far (ε continues, never restarts), the current N, q
/// and C (C moves under adaptive clipping), σ, δ, the adjacency, the accountant, and the position of the
/// sampling-and-noise generator (`None` for the operating system's, which has none).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EngineState {
    /// N of the next step.
    pub dataset_size: usize,
    /// q of the next step.
    pub sample_rate: f64,
    /// C of the next step.
    pub clip: f64,
    /// σ (the accounted one; with adaptive clipping the gradient's is σ_Δ).
    pub noise_multiplier: f64,
    /// Every release so far, with δ, the adjacency and the accountant.
    pub schedule: ReleaseSchedule,
    /// The generator's position.
    pub rng: Option<MechanismRngState>,
}

/// What [`PrivacyEngine::private_step`] returns.
#[derive(Debug, Clone)]
pub struct PrivateGradient {
    /// The released gradient, in the module's parameter layout.
    pub gradient: GradientRecord,
    /// Σ_i ℓ_i / (drawn batch size) where the strategy sees the losses (NaN otherwise, and for
    /// an empty batch).
    pub mean_loss: f64,
    /// Records in the drawn batch.
    pub batch_size: usize,
}

fn check_sampling(dataset_size: usize, sample_rate: f64) -> Result<(), EngineError> {
    if dataset_size == 0 {
        return Err(PrivacyError::Empty {
            name: "dataset_size",
        }
        .into());
    }
    if !(sample_rate > 0.0 && sample_rate <= 1.0) {
        return Err(out_of_range("sample_rate", sample_rate, "in (0, 1]"));
    }
    Ok(())
}

impl PrivacyEngine {
    /// Validates `config`, calibrates σ if a target ε is given, and draws sampling and noise
    /// from `source` (a seed, or the operating system's CSPRNG). C may be ∞ (no clipping)
    /// only without noise and without adaptive clipping.
    pub fn new(config: PrivacyEngineConfig, source: RandomnessSource) -> Result<Self, EngineError> {
        check_sampling(config.dataset_size, config.sample_rate)?;
        let q = config.sample_rate;
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
        let unclipped_ok = noise_multiplier == 0.0 && config.adaptive_clipping.is_none();
        if !(config.clip > 0.0 && (config.clip.is_finite() || unclipped_ok)) {
            return Err(out_of_range(
                "clip",
                config.clip,
                "> 0 and finite (∞ only without noise or adaptive clipping)",
            ));
        }
        let gradient_noise = match &config.adaptive_clipping {
            Some(adaptive) => {
                adaptive.validate(noise_multiplier)?;
                adaptive_gradient_noise(noise_multiplier, adaptive.count_noise)?
            }
            None => noise_multiplier,
        };
        Ok(Self {
            schedule: ReleaseSchedule::new(config.adjacency, config.delta)
                .with_accountant(config.accountant),
            config,
            noise_multiplier,
            gradient_noise,
            rng: MechanismRng::new(source)?,
            dimension: None,
        })
    }

    /// The configuration, with the current N, q and C.
    pub fn config(&self) -> &PrivacyEngineConfig {
        &self.config
    }

    /// σ (calibrated, for a target ε): what every step is accounted at.
    pub fn noise_multiplier(&self) -> f64 {
        self.noise_multiplier
    }

    /// σ_Δ, the noise multiplier on the gradient: σ, or with adaptive clipping
    /// [`adaptive_gradient_noise`].
    pub fn gradient_noise_multiplier(&self) -> f64 {
        self.gradient_noise
    }

    /// C of the next step.
    pub fn clip(&self) -> f64 {
        self.config.clip
    }

    /// qN, what a step's clipped noisy sum is divided by.
    pub fn expected_batch_size(&self) -> f64 {
        self.config.sample_rate * self.config.dataset_size as f64
    }

    /// Sets N and q of the following steps, for a dataset that changes between steps (a
    /// replay buffer that fills): each step is accounted at the q it used. N and q must be
    /// public (functions of the step count, not of the data) for the accounting to hold.
    pub fn set_sampling(
        &mut self,
        dataset_size: usize,
        sample_rate: f64,
    ) -> Result<(), EngineError> {
        check_sampling(dataset_size, sample_rate)?;
        self.config.dataset_size = dataset_size;
        self.config.sample_rate = sample_rate;
        Ok(())
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
        per_sample: &(impl PerSampleGradients<B, M> + Sync),
    ) -> Result<GradientRecord, EngineError>
    where
        B: AutodiffBackend,
        M: AutodiffModule<B> + Sync,
    {
        Ok(self.private_step(module, batch, per_sample)?.gradient)
    }

    /// [`PrivacyEngine::private_gradient`] with the batch's mean loss; with adaptive clipping
    /// it then moves C (module docs of [`AdaptiveClipping`]).
    pub fn private_step<B, M>(
        &mut self,
        module: &M,
        batch: &[usize],
        per_sample: &(impl PerSampleGradients<B, M> + Sync),
    ) -> Result<PrivateGradient, EngineError>
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
        let clip = self.config.clip;
        // The Gaussian noise is the generator's next draws whatever the sum turns out to be
        // (the batch was drawn before), so with the parameter count known from the last step
        // they are drawn on the section's other thread while this one computes the clipped
        // sum: the same draws in the same order (`rayon::join` inside the section; noise needs
        // no graph).
        let predraw = match self.dimension {
            Some(dimension) if self.gradient_noise > 0.0 => Some(
                DpSgdConfig {
                    noise_multiplier: self.gradient_noise,
                    clipping: Clipping::Flat { clip },
                    dimension,
                }
                .build()?,
            ),
            _ => None,
        };
        let rng = &mut self.rng;
        // Reading the parameters initialises Burn's lazy ones, which makes tracked leaves: in a
        // section, like every other tracked op, and on `module` itself (a clone of an
        // uninitialised module initialises its own, different, values). One section for the
        // layout and the gradients: entering one hands the work to the section's thread, which
        // costs a context switch on a loaded machine.
        let (section, normals) = autodiff::exclusive(|| {
            rayon::join(
                || Self::clipped_sum_in_section(module, batch, per_sample, clip),
                || predraw.as_ref().map(|mechanism| mechanism.draw_noise(rng)),
            )
        });
        let (layout, clipped) = section?;
        let dimension = layout.num_values();
        self.dimension = Some(dimension);
        let expected = self.expected_batch_size();
        let released =
            match (predraw, normals) {
                (Some(mechanism), Some(normals)) => {
                    mechanism.noisy_mean_of_clipped_sum_with(clipped.sum, expected, &normals)?
                }
                _ => gaussian_mechanism(clip, self.gradient_noise, dimension)?
                    .release_clipped_sum(clipped.sum, expected, &mut self.rng)?,
            };
        if let Some(adaptive) = self.config.adaptive_clipping {
            self.adapt_clip(&adaptive, &clipped.norms, expected)?;
        }
        self.schedule
            .record(self.config.sample_rate, self.noise_multiplier, 1);
        Ok(PrivateGradient {
            gradient: layout.record(&released)?,
            mean_loss: clipped.loss / batch.len() as f64,
            batch_size: batch.len(),
        })
    }

    /// The layout and the clipped sum of [`PrivacyEngine::private_step`], in a section.
    fn clipped_sum_in_section<B, M>(
        module: &M,
        batch: &[usize],
        per_sample: &(impl PerSampleGradients<B, M> + Sync),
        clip: f64,
    ) -> Result<(ParamLayout, ClippedSum), EngineError>
    where
        B: AutodiffBackend,
        M: AutodiffModule<B> + Sync,
    {
        let layout = ParamLayout::of(module);
        let dimension = layout.num_values();
        let clipped = if batch.is_empty() {
            ClippedSum {
                sum: vec![0.0; dimension],
                norms: Vec::new(),
                loss: f64::NAN,
            }
        } else {
            let clipped = per_sample.clipped_sum(module, batch, &layout, clip)?;
            if clipped.sum.len() != dimension || clipped.norms.len() != batch.len() {
                return Err(EngineError::Shape {
                    what: "clipped per-sample gradients",
                    expected: vec![batch.len(), dimension],
                    got: vec![clipped.norms.len(), clipped.sum.len()],
                });
            }
            clipped
        };
        Ok((layout, clipped))
    }

    /// C ← C·exp(−η (b̃ − γ)) from the noised count of norms ≤ C ([`AdaptiveClipping`]).
    fn adapt_clip(
        &mut self,
        adaptive: &AdaptiveClipping,
        norms: &[f32],
        expected_batch_size: f64,
    ) -> Result<(), EngineError> {
        let clip = self.config.clip;
        let under = norms.iter().filter(|&&n| f64::from(n) <= clip).count() as f64;
        let centred = under - 0.5 * norms.len() as f64;
        // Σ_i (b_i − ½) has sensitivity ½: the Gaussian with noise multiplier 2σ_b on it adds
        // N(0, σ_b²).
        let count_noise = if self.noise_multiplier > 0.0 {
            adaptive.count_noise
        } else {
            0.0
        };
        let noisy = gaussian_mechanism(0.5, 2.0 * count_noise, 1)?.release_clipped_sum(
            vec![centred as f32],
            1.0,
            &mut self.rng,
        )?[0];
        let fraction = f64::from(noisy) / expected_batch_size + 0.5;
        let next = clip * (-adaptive.learning_rate * (fraction - adaptive.target_quantile)).exp();
        if !(next.is_finite() && next > 0.0) {
            return Err(out_of_range(
                "clip",
                next,
                "> 0 and finite after adaptation",
            ));
        }
        self.config.clip = next;
        Ok(())
    }

    /// One DP-SGD step: a Poisson batch, its private gradient, and `optimizer`'s update of
    /// `module` with learning rate `lr` (in an autodiff section). Returns the updated module.
    pub fn step<B, M, O>(
        &mut self,
        module: M,
        optimizer: &mut O,
        lr: f64,
        per_sample: &(impl PerSampleGradients<B, M> + Sync),
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

    /// Releases so far.
    pub fn steps(&self) -> u64 {
        self.schedule.steps()
    }

    /// The releases so far, exactly ([`ReleaseSchedule`]).
    pub fn schedule(&self) -> &ReleaseSchedule {
        &self.schedule
    }

    /// The RDP accountant holding every release so far, under the engine's adjacency.
    pub fn accountant(&self) -> Result<RdpAccountant, EngineError> {
        Ok(self.schedule.accountant()?)
    }

    /// ε spent so far at the configured δ, per record, under the configured adjacency, by the
    /// configured accountant: 0 before any step, ∞ for σ = 0. Under PLD a new value costs a
    /// composition of the whole schedule (up to seconds); asking again before the next step
    /// is free.
    pub fn epsilon(&self) -> Result<f64, EngineError> {
        Ok(self.schedule.epsilon()?)
    }

    /// What an ε of this engine means, to print beside it: `per record, add/remove,
    /// δ = 1e-5, RDP accountant`.
    pub fn label(&self) -> String {
        format!(
            "per record, {}, δ = {}, {}",
            self.config.adjacency.name(),
            self.config.delta,
            self.config.accountant.name()
        )
    }

    /// What a checkpoint must hold for [`PrivacyEngine::restore`] ([`EngineState`]).
    pub fn state(&self) -> EngineState {
        EngineState {
            dataset_size: self.config.dataset_size,
            sample_rate: self.config.sample_rate,
            clip: self.config.clip,
            noise_multiplier: self.noise_multiplier,
            schedule: self.schedule.clone(),
            rng: self.rng.state(),
        }
    }

    /// Continues from `state`: the releases (so ε continues), N, q, C and the generator's
    /// position. Refused if `state` was written by an engine with another σ, δ, adjacency or
    /// accountant: its ε would be continued under the wrong parameters (or, for the
    /// accountant, printed as another accountant's).
    pub fn restore(&mut self, state: &EngineState) -> Result<(), EngineError> {
        let (got, want) = (&state.schedule, &self.schedule);
        if state.noise_multiplier != self.noise_multiplier
            || got.adjacency() != want.adjacency()
            || got.delta() != want.delta()
            || got.accountant_kind() != want.accountant_kind()
        {
            return Err(EngineError::Privacy(PrivacyError::Inconsistent(
                "an engine state saved with another noise multiplier, δ, adjacency or accountant",
            )));
        }
        check_sampling(state.dataset_size, state.sample_rate)?;
        if state.clip.partial_cmp(&0.0) != Some(std::cmp::Ordering::Greater) {
            return Err(out_of_range("clip", state.clip, "> 0"));
        }
        self.rng.restore(state.rng.as_ref())?;
        self.config.dataset_size = state.dataset_size;
        self.config.sample_rate = state.sample_rate;
        self.config.clip = state.clip;
        self.schedule = state.schedule.clone();
        Ok(())
    }
}

/// The Gaussian mechanism on a clipped sum: N(0, σ²C²) per value (σ > 0), or none (σ = 0).
fn gaussian_mechanism(
    clip: f64,
    noise_multiplier: f64,
    dimension: usize,
) -> Result<Box<dyn GradientMechanism>, EngineError> {
    Ok(if noise_multiplier > 0.0 {
        GradientMechanismConfig::DpSgd {
            clip,
            noise_multiplier,
        }
    } else if clip.is_finite() {
        GradientMechanismConfig::Clip { clip }
    } else {
        GradientMechanismConfig::None
    }
    .build(dimension, 1)?)
}

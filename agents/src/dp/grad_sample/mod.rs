//! Per-sample gradients, one rule per layer in the manner of Opacus' `grad_sample/`: the
//! [`PerSampleGradients`] strategies ([`Traced`], the fast path through a [`Tape`];
//! [`MicroBatches`], the fallback for any module; [`GivenGradients`], computed elsewhere),
//! the layer rules ([`GradSampleLayer`]: `linear`, `conv`), and the factored path for
//! privrl's own [`crate::Mlp`] ([`PerSampleFactors`]).

use burn::module::AutodiffModule;
use burn::tensor::backend::{AutodiffBackend, Backend};
use burn::tensor::{Int, Tensor, TensorData};

use crate::dp::ParamLayout;
use crate::error::EngineError;
use crate::tensor::{float_options, to_host};

mod conv;
mod linear;
mod micro_batches;
mod mlp;
mod tape;
mod traced;

pub use micro_batches::MicroBatches;
pub use mlp::{
    dp_sgd_gradient, per_sample_gradients_by_loop, probed_forward, traced_forward,
    PerSampleFactors, ProbedForward,
};
pub use tape::{GradSampleLayer, Tape};
pub use traced::Traced;

/// A way to compute per-sample gradients of a module of type `M`.
pub trait PerSampleGradients<B: AutodiffBackend, M: AutodiffModule<B>> {
    /// The `[batch.len(), P]` per-sample gradients of the records `batch` (indices into the
    /// dataset), row i the gradient of record `batch[i]`'s loss, columns in `layout` order.
    /// Runs its graphs in an [`autodiff`](crate::autodiff) section.
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

pub(super) fn check_rows<B: Backend>(
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
pub(super) fn clip_rows<B: Backend>(rows: Tensor<B, 2>, clip: f64, loss: f64) -> ClippedSum {
    let norms = per_sample_norms(rows.clone());
    let factors = clip_factors(norms.clone(), clip);
    let sum = (rows * factors.unsqueeze_dim::<2>(1)).sum_dim(0);
    ClippedSum {
        sum: to_host(sum),
        norms: to_host(norms),
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

pub(super) fn check_losses<B: Backend>(
    losses: &Tensor<B, 1>,
    batch: usize,
) -> Result<(), EngineError> {
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

/// `min(1, C / ‖g_i‖)`; a zero gradient keeps factor 1.
pub(super) fn clip_factors<B: Backend>(norms: Tensor<B, 1>, clip: f64) -> Tensor<B, 1> {
    (norms.clamp_min(1e-12).recip() * clip).clamp_max(1.0)
}

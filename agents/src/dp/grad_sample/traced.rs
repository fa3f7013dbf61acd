//! The fast path: one traced forward and one backward give every per-sample gradient.

use std::collections::HashMap;

use burn::module::{AutodiffModule, ParamId};
use burn::tensor::backend::AutodiffBackend;
use burn::tensor::Tensor;

use crate::autodiff;
use crate::dp::{ClippedSum, ParamEntry, ParamLayout, PerSampleGradients, Tape};
use crate::error::EngineError;
use crate::tensor::to_host;

use super::linear::{linear_param_samples, linear_squared_norms, linear_weighted_sums};
use super::{check_losses, clip_factors, clip_rows};

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
    /// (the factored trick of `PerSampleFactors`), so the cost is close to one ordinary
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
        let loss = f64::from(to_host(total.inner())[0]);
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
pub(super) enum Part<B: AutodiffBackend> {
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
    let columns = in_layout_order(by_id, layout, |g, entry| {
        check_part_shape(g.dims(), batch, entry)
    })?;
    Ok(Tensor::cat(columns, 1))
}

/// The parts of `by_id` in `layout`'s order, each checked by `check`; a parameter without a
/// part was not traced.
fn in_layout_order<T>(
    mut by_id: HashMap<ParamId, T>,
    layout: &ParamLayout,
    check: impl Fn(&T, &ParamEntry) -> Result<(), EngineError>,
) -> Result<Vec<T>, EngineError> {
    layout
        .entries()
        .iter()
        .map(|entry| {
            let g = by_id
                .remove(&entry.id)
                .ok_or_else(|| EngineError::Untraced {
                    name: entry.name.clone(),
                })?;
            check(&g, entry)?;
            Ok(g)
        })
        .collect()
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
        return Err(match layout.entries().first() {
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
    let columns = in_layout_order(by_id, layout, |g, entry| {
        check_part_shape([batch, g.dims()[0]], batch, entry)
    })?;
    Ok(ClippedSum {
        sum: to_host(Tensor::cat(columns, 0)),
        norms: to_host(norms),
        loss,
    })
}

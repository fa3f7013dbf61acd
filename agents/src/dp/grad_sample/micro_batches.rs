//! The general fallback: one forward and backward per record.

use burn::module::{AutodiffModule, Module, ModuleVisitor, Param};
use burn::tensor::backend::AutodiffBackend;
use burn::tensor::Tensor;

use crate::autodiff;
use crate::dp::{ParamLayout, PerSampleGradients};
use crate::error::EngineError;
use crate::tensor::float_options;

use super::check_losses;

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
        parts: Vec::with_capacity(layout.entries().len()),
    };
    module.visit(&mut flat);
    Tensor::cat(flat.parts, 0)
}

//! Named per-parameter gradients of a module, the unit that a federated or distributed learner
//! shares and that the gradient inversion attacks consume.

use burn::module::{Module, Param};
use burn::tensor::backend::AutodiffBackend;
use burn::tensor::Tensor;

use crate::params::{visit_params, ParamVisitor};

/// The gradient of one parameter, flattened, on the inner backend.
///
/// Under `Autodiff<Autodiff<B>>` the inner backend is itself an autodiff backend, so the
/// gradient stays differentiable with respect to anything the inner graph tracks (the
/// attacker's reconstructed input).
#[derive(Debug, Clone)]
pub struct ParamGradient<B: AutodiffBackend> {
    /// Dotted path of the parameter in the module, e.g. `layers.1.weight`.
    pub name: String,
    /// Shape of the parameter.
    pub shape: Vec<usize>,
    /// The gradient, flattened in row-major order.
    pub gradient: Tensor<B::InnerBackend, 1>,
}

/// Collects the gradient of every float parameter of `module` that `grads` holds, in the
/// module's visiting order. Parameters that received no gradient are skipped.
pub fn param_gradients<B: AutodiffBackend, M: Module<B>>(
    module: &M,
    grads: &B::Gradients,
) -> Vec<ParamGradient<B>> {
    let mut collector = GradientCollector {
        grads,
        out: Vec::new(),
    };
    visit_params(module, &mut collector);
    collector.out
}

struct GradientCollector<'a, B: AutodiffBackend> {
    grads: &'a B::Gradients,
    out: Vec<ParamGradient<B>>,
}

impl<B: AutodiffBackend> ParamVisitor<B> for GradientCollector<'_, B> {
    fn visit<const D: usize>(&mut self, path: &str, param: &Param<Tensor<B, D>>) {
        let tensor = param.val();
        if let Some(gradient) = tensor.grad(self.grads) {
            self.out.push(ParamGradient {
                name: path.to_string(),
                shape: gradient.dims().to_vec(),
                gradient: gradient.flatten(0, D - 1),
            });
        }
    }
}

//! Parameter initialisation from a caller-supplied RNG, and deterministic parameter ids.

use burn::module::{Module, ModuleMapper, Param, ParamId};
use burn::tensor::backend::Backend;
use burn::tensor::{Tensor, TensorData};
use rand::Rng;
use std::hash::{Hash, Hasher};

use crate::tensor::float_options;

/// Draws `len` values from U(−bound, bound), PyTorch's default for `nn.Linear` and `nn.Conv2d`
/// (Kaiming-uniform with a = √5 gives bound = 1/√fan_in for weights and biases alike).
pub(super) fn uniform_values(rng: &mut impl Rng, len: usize, bound: f32) -> Vec<f32> {
    (0..len).map(|_| rng.random_range(-bound..=bound)).collect()
}

pub(super) fn param_from_values<B: Backend, const D: usize>(
    values: Vec<f32>,
    shape: [usize; D],
    device: &B::Device,
) -> Param<Tensor<B, D>> {
    let id = ParamId::from(digest(&values, &shape));
    let tensor = Tensor::from_data(
        TensorData::new(values, shape).convert::<B::FloatElem>(),
        float_options::<B>(device),
    );
    Param::initialized(id, tensor.require_grad())
}

/// A hash of a parameter's initial values and shape: its id before [`with_unique_param_ids`].
/// Burn draws ids at random, and ids are written into checkpoints and key the optimizer state,
/// so two runs from one seed wrote different files.
fn digest(values: &[f32], shape: &[usize]) -> u64 {
    // SipHash with fixed keys: the same on every run and machine of one build.
    let mut hasher = std::hash::DefaultHasher::new();
    shape.hash(&mut hasher);
    for value in values {
        value.to_bits().hash(&mut hasher);
    }
    hasher.finish()
}

/// Mixes each parameter's id with its position in `module`, so that ids stay unique within a
/// module even where two parameters start from equal values. Every network's `init` ends here.
pub(crate) fn with_unique_param_ids<B: Backend, M: Module<B>>(module: M) -> M {
    struct Rekey {
        position: u64,
    }
    impl<B: Backend> ModuleMapper<B> for Rekey {
        fn map_float<const D: usize>(&mut self, param: Param<Tensor<B, D>>) -> Param<Tensor<B, D>> {
            let (id, tensor, mapper) = param.consume();
            let mut hasher = std::hash::DefaultHasher::new();
            (id.val(), self.position).hash(&mut hasher);
            self.position += 1;
            Param::from_mapped_value(ParamId::from(hasher.finish()), tensor, mapper)
        }
    }
    module.map(&mut Rekey { position: 0 })
}

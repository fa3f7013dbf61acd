//! θ as a flat vector: flattening a network's parameters, loading them back, and θ₀ of a run.

use burn::module::{Module, ModuleMapper, ModuleVisitor, Param};
use burn::tensor::backend::Backend;
use burn::tensor::{Tensor, TensorData};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use super::{PgcConfig, PgcError};
use crate::error::RecordError;
use crate::heads::ActorCritic;
use crate::tensor::float_options;

/// θ of `module` flattened in visiting order (the order of [`GradientRecord::flatten`]).
///
/// [`GradientRecord::flatten`]: crate::GradientRecord::flatten
pub fn flatten_parameters<B: Backend, M: Module<B>>(module: &M) -> Vec<f32> {
    struct Collector(Vec<f32>);
    impl<B: Backend> ModuleVisitor<B> for Collector {
        fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<B, D>>) {
            self.0.extend(
                param
                    .val()
                    .into_data()
                    .convert::<f32>()
                    .into_vec::<f32>()
                    .expect("float parameter data"),
            );
        }
    }
    let mut collector = Collector(Vec::new());
    module.visit(&mut collector);
    collector.0
}

/// `module` with its parameters replaced by `values` (the inverse of [`flatten_parameters`]).
pub fn load_flat_parameters<B: Backend, M: Module<B>>(
    module: M,
    values: &[f32],
) -> Result<M, RecordError> {
    let expected = module.num_params();
    if values.len() != expected {
        return Err(RecordError::LengthMismatch {
            expected,
            got: values.len(),
        });
    }
    struct Loader<'a> {
        values: &'a [f32],
        offset: usize,
    }
    impl<B: Backend> ModuleMapper<B> for Loader<'_> {
        fn map_float<const D: usize>(&mut self, param: Param<Tensor<B, D>>) -> Param<Tensor<B, D>> {
            let values = self.values;
            let start = self.offset;
            let shape = param.shape();
            self.offset += shape.num_elements();
            param.map(|tensor| {
                let device = tensor.device();
                let data = TensorData::new(
                    values[start..start + shape.num_elements()].to_vec(),
                    shape.clone(),
                );
                // A no-op on a backend without autodiff.
                Tensor::from_data(data.convert::<B::FloatElem>(), float_options::<B>(&device))
                    .require_grad()
            })
        }
    }
    Ok(module.map(&mut Loader { values, offset: 0 }))
}

/// θ₀ of a run: the network initialised from `seed`, flattened.
pub fn initial_parameters<B: Backend>(
    config: &PgcConfig,
    seed: u64,
    device: &B::Device,
) -> Result<Vec<f32>, PgcError> {
    let (obs_len, num_actions) = config.dims()?;
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let model: ActorCritic<B> = config.network(obs_len, num_actions).init(device, &mut rng);
    Ok(flatten_parameters(&model))
}

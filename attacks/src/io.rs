//! A victim's weights and a shared gradient in safetensors files, so that a gradient captured
//! elsewhere (a PyTorch training loop, another federated client) can be attacked.
//!
//! Both files are written and read through Burn's own store machinery
//! (`burn_store::SafetensorsStore` with `ModuleSnapshot::{save_into, load_from}`): a tensor is
//! named by its parameter's path in the Burn module (`head.layers.0.weight`) and has the
//! parameter's shape and layout, and loading checks every name and shape against the module.
//! A gradient file is a weights file of the same module whose tensors are ∂J/∂w; reading it
//! into a copy of the victim gives the [`GradientRecord`] the attacks take.
//!
//! Layouts follow Burn's: a Dense weight is `[d_in, d_out]` (PyTorch's `nn.Linear` stores the
//! transpose), a convolution's `[c_out, c_in, k, k]` as in PyTorch. Tensors are float32.

use std::collections::HashMap;
use std::path::Path;

use burn::module::{Module, Param};
use burn::tensor::backend::Backend;
use burn::tensor::{DType, Tensor, TensorData};
use burn_store::{ModuleSnapshot, ModuleStore, SafetensorsStore};
use privrl_agents::params::{map_params, visit_params, ParamMapper, ParamVisitor};
use privrl_agents::tensor::float_options;
use privrl_agents::{GradientRecord, NamedGradient};

use crate::error::AttackError;
use crate::model::InvertibleModel;
use crate::victim::{Outer, Victim};

fn store_error(path: &Path, error: impl std::fmt::Display) -> AttackError {
    AttackError::Store {
        path: path.display().to_string(),
        message: error.to_string(),
    }
}

/// Reads every tensor of `path` into a copy of `module`, checking that each parameter is
/// there as float32 with its shape and that nothing else is.
fn load_into<BB: Backend, M: Module<BB>>(module: &M, path: &Path) -> Result<M, AttackError> {
    if !path.is_file() {
        return Err(store_error(path, "no such file"));
    }
    let mut store = SafetensorsStore::from_file(path)
        .validate(true)
        .allow_partial(false);
    let snapshots = store
        .get_all_snapshots()
        .map_err(|e| store_error(path, e))?;
    if let Some((name, snapshot)) = snapshots.iter().find(|(_, s)| s.dtype != DType::F32) {
        return Err(store_error(
            path,
            format!(
                "tensor `{name}` is {:?}; privrl reads float32",
                snapshot.dtype
            ),
        ));
    }
    let mut loaded = module.clone();
    let result = loaded
        .load_from(&mut store)
        .map_err(|e| store_error(path, e))?;
    if !result.unused.is_empty() {
        return Err(store_error(
            path,
            format!("tensors {:?} name no parameter of the model", result.unused),
        ));
    }
    Ok(loaded)
}

/// Writes `module`'s parameters to `path` (overwriting it) with `metadata`.
fn save_from<BB: Backend, M: Module<BB>>(
    module: &M,
    path: &Path,
    metadata: &HashMap<String, String>,
) -> Result<(), AttackError> {
    let mut store = metadata.iter().fold(
        SafetensorsStore::from_file(path).overwrite(true),
        |store, (key, value)| store.metadata(key.clone(), value.clone()),
    );
    module
        .save_into(&mut store)
        .map_err(|e| store_error(path, e))
}

/// The string metadata of a safetensors file (its header's `__metadata__`).
pub fn read_metadata(path: &Path) -> Result<HashMap<String, String>, AttackError> {
    let bytes = std::fs::read(path).map_err(|e| store_error(path, e))?;
    let (_, header) =
        safetensors::SafeTensors::read_metadata(&bytes).map_err(|e| store_error(path, e))?;
    Ok(header.metadata().clone().unwrap_or_default())
}

impl<B: Backend, M: InvertibleModel<Outer<B>>> Victim<B, M> {
    /// This victim with the weights of the safetensors file `path` (every parameter, by its
    /// Burn path, float32).
    pub fn with_weights_file(mut self, path: &Path) -> Result<Self, AttackError> {
        self.net = load_into(&self.net, path)?;
        Ok(self)
    }

    /// Writes the victim's weights to `path`, with `metadata` in the file's header.
    pub fn save_weights(
        &self,
        path: &Path,
        metadata: &HashMap<String, String>,
    ) -> Result<(), AttackError> {
        save_from(&self.net, path, metadata)
    }

    /// Writes `gradient` (one entry per parameter, as [`Victim::shared_gradient`] returns it)
    /// to `path` as a safetensors file of the victim's module.
    pub fn save_gradient(&self, gradient: &GradientRecord, path: &Path) -> Result<(), AttackError> {
        let mut setter = GradientSetter {
            gradient,
            error: None,
        };
        let module = map_params(self.net.clone(), &mut setter);
        if let Some(error) = setter.error {
            return Err(error);
        }
        save_from(&module, path, &HashMap::new())
    }

    /// Reads a gradient written by [`Victim::save_gradient`] or by another framework in the
    /// same layout: one float32 tensor per parameter, named by its Burn path.
    pub fn load_gradient(&self, path: &Path) -> Result<GradientRecord, AttackError> {
        let module = load_into(&self.net, path)?;
        let mut collector = NamedValues::default();
        visit_params(&module, &mut collector);
        Ok(GradientRecord {
            params: collector.params,
        })
    }
}

/// Replaces every parameter with its gradient's values.
struct GradientSetter<'a> {
    gradient: &'a GradientRecord,
    error: Option<AttackError>,
}

impl<BB: Backend> ParamMapper<BB> for GradientSetter<'_> {
    fn map<const D: usize>(
        &mut self,
        path: &str,
        param: Param<Tensor<BB, D>>,
    ) -> Param<Tensor<BB, D>> {
        let name = path.to_string();
        let shape = param.shape();
        let Some(entry) = self.gradient.get(&name) else {
            self.error
                .get_or_insert(AttackError::MissingGradient { name });
            return param;
        };
        if entry.values.len() != shape.num_elements() {
            self.error.get_or_insert(AttackError::GradientShape {
                name,
                expected: shape.num_elements(),
                got: entry.values.len(),
            });
            return param;
        }
        let data = TensorData::new(entry.values.clone(), shape).convert::<BB::FloatElem>();
        param.map(|t| Tensor::from_data(data, float_options::<BB>(&t.device())))
    }
}

/// Every float parameter's path, shape and values.
#[derive(Default)]
struct NamedValues {
    params: Vec<NamedGradient>,
}

impl<BB: Backend> ParamVisitor<BB> for NamedValues {
    fn visit<const D: usize>(&mut self, path: &str, param: &Param<Tensor<BB, D>>) {
        let tensor = param.val();
        self.params.push(NamedGradient {
            name: path.to_string(),
            shape: tensor.dims().to_vec(),
            values: tensor
                .into_data()
                .convert::<f32>()
                .into_vec::<f32>()
                .expect("float tensor data"),
        });
    }
}

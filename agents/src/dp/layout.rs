//! The parameter layout of a module: the column order of a per-sample gradient row and of
//! the flat gradient that DP-SGD clips and noises.

use burn::module::{Module, Param, ParamId};

use crate::params::{visit_params, ParamVisitor};
use burn::tensor::backend::Backend;
use burn::tensor::Tensor;

use crate::error::RecordError;
use crate::record::{GradientRecord, NamedGradient};

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
        struct Collector(Vec<ParamEntry>);
        impl<B: Backend> ParamVisitor<B> for Collector {
            fn visit<const D: usize>(&mut self, path: &str, param: &Param<Tensor<B, D>>) {
                self.0.push(ParamEntry {
                    name: path.to_string(),
                    shape: param.val().dims().to_vec(),
                    id: param.id,
                });
            }
        }
        let mut collector = Collector(Vec::new());
        visit_params(module, &mut collector);
        Self {
            entries: collector.0,
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

//! [`GradientRecord`]: the per-parameter gradient that a federated or distributed learner
//! shares, on the host, serialisable, flattenable, and appliable back to a module through a
//! Burn optimizer.
//!
//! A record is what leaves a local agent: A3C workers submit one per episode, the PGC
//! aggregator averages them, the privacy mechanisms perturb their flat form, and the gradient
//! inversion attacks read it.
//!
//! ```
//! # use burn::backend::{Autodiff, NdArray};
//! # use burn::optim::{Optimizer, SgdConfig};
//! # use burn::tensor::Tensor;
//! # use privrl_agents::{GradientRecord, MlpConfig};
//! # use rand::SeedableRng;
//! type B = Autodiff<NdArray>;
//! let device = Default::default();
//! let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(0);
//! let mlp = MlpConfig::new(3, vec![4], 2).init::<B>(&device, &mut rng);
//! let loss = mlp.forward(Tensor::ones([5, 3], &device)).powi_scalar(2).mean();
//! let record = GradientRecord::from_grads(&mlp, &loss.backward());
//! assert_eq!(record.names(), ["layers.0.weight", "layers.0.bias", "layers.1.weight", "layers.1.bias"]);
//! let flat = record.flatten(); // what a mechanism perturbs
//! let noisy = record.with_flat(&flat).unwrap();
//! let grads = noisy.to_gradients_params(&mlp).unwrap();
//! let mut optim = SgdConfig::new().init::<B, _>();
//! let _mlp = optim.step(0.1, mlp, grads);
//! ```

use burn::module::{AutodiffModule, Module, Param};
use burn::optim::GradientsParams;
use burn::tensor::backend::AutodiffBackend;
use burn::tensor::{Tensor, TensorData};
use serde::{Deserialize, Serialize};

use crate::error::RecordError;
use crate::gradient::param_gradients;
use crate::params::{visit_params, ParamVisitor};
use crate::tensor::float_options;

/// The gradient of one parameter, on the host.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NamedGradient {
    /// Dotted path of the parameter in its module, e.g. `layers.1.weight`.
    pub name: String,
    /// Shape of the parameter.
    pub shape: Vec<usize>,
    /// The gradient in row-major order (`shape.iter().product()` values).
    pub values: Vec<f32>,
}

/// Named per-parameter gradients of one module, in the module's visiting order.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct GradientRecord {
    /// One entry per parameter that received a gradient.
    pub params: Vec<NamedGradient>,
}

impl GradientRecord {
    /// Copies the gradient of every parameter of `module` that `grads` holds to the host.
    pub fn from_grads<B: AutodiffBackend, M: Module<B>>(module: &M, grads: &B::Gradients) -> Self {
        let params = param_gradients(module, grads)
            .into_iter()
            .map(|g| NamedGradient {
                name: g.name,
                shape: g.shape,
                values: g
                    .gradient
                    .into_data()
                    .convert::<f32>()
                    .into_vec::<f32>()
                    .expect("float gradient data"),
            })
            .collect();
        Self { params }
    }

    /// Puts every parameter name under `prefix` (`layers.0.weight` → `actor.layers.0.weight`),
    /// so that the records of several modules can be concatenated.
    pub fn prefixed(mut self, prefix: &str) -> Self {
        for p in &mut self.params {
            p.name = format!("{prefix}.{}", p.name);
        }
        self
    }

    /// The entries whose names start with `prefix.`, with the prefix removed.
    pub fn strip_prefix(&self, prefix: &str) -> Self {
        let head = format!("{prefix}.");
        let params = self
            .params
            .iter()
            .filter_map(|p| {
                p.name.strip_prefix(&head).map(|name| NamedGradient {
                    name: name.to_string(),
                    shape: p.shape.clone(),
                    values: p.values.clone(),
                })
            })
            .collect();
        Self { params }
    }

    /// Appends the entries of `other`.
    pub fn extend(&mut self, other: GradientRecord) {
        self.params.extend(other.params);
    }

    /// Parameter names, in order.
    pub fn names(&self) -> Vec<&str> {
        self.params.iter().map(|p| p.name.as_str()).collect()
    }

    /// The entry of one parameter.
    pub fn get(&self, name: &str) -> Option<&NamedGradient> {
        self.params.iter().find(|p| p.name == name)
    }

    /// Number of parameters.
    pub fn len(&self) -> usize {
        self.params.len()
    }

    /// Whether no parameter has a gradient.
    pub fn is_empty(&self) -> bool {
        self.params.is_empty()
    }

    /// Total number of gradient values (the dimension d of the flat gradient).
    pub fn num_values(&self) -> usize {
        self.params.iter().map(|p| p.values.len()).sum()
    }

    /// All values concatenated in parameter order: the vector g that mechanisms perturb.
    pub fn flatten(&self) -> Vec<f32> {
        let mut flat = Vec::with_capacity(self.num_values());
        for p in &self.params {
            flat.extend_from_slice(&p.values);
        }
        flat
    }

    /// A record with this record's names and shapes and the values of `flat` (the inverse of
    /// [`GradientRecord::flatten`]).
    pub fn with_flat(&self, flat: &[f32]) -> Result<Self, RecordError> {
        let mut record = self.clone();
        record.set_flat(flat)?;
        Ok(record)
    }

    /// Overwrites the values with those of `flat`, in place (what [`GradientRecord::with_flat`]
    /// does without allocating a new record).
    pub fn set_flat(&mut self, flat: &[f32]) -> Result<(), RecordError> {
        if flat.len() != self.num_values() {
            return Err(RecordError::LengthMismatch {
                expected: self.num_values(),
                got: flat.len(),
            });
        }
        let mut rest = flat;
        for p in &mut self.params {
            let (head, tail) = rest.split_at(p.values.len());
            p.values.copy_from_slice(head);
            rest = tail;
        }
        Ok(())
    }

    /// Euclidean norm ‖g‖₂ of the flat gradient.
    pub fn l2_norm(&self) -> f64 {
        self.params
            .iter()
            .flat_map(|p| p.values.iter())
            .map(|&v| f64::from(v) * f64::from(v))
            .sum::<f64>()
            .sqrt()
    }

    /// ‖g‖₁ of the flat gradient (the norm the PGC paper clips, eq. 19).
    pub fn l1_norm(&self) -> f64 {
        self.params
            .iter()
            .flat_map(|p| p.values.iter())
            .map(|&v| f64::from(v).abs())
            .sum()
    }

    /// Multiplies every value by `factor`.
    pub fn scale(&mut self, factor: f32) {
        for p in &mut self.params {
            p.values.iter_mut().for_each(|v| *v *= factor);
        }
    }

    /// Adds `other` value by value; both must have the same names, shapes and order.
    pub fn add_assign(&mut self, other: &GradientRecord) -> Result<(), RecordError> {
        self.check_same_layout(other)?;
        for (p, q) in self.params.iter_mut().zip(&other.params) {
            p.values
                .iter_mut()
                .zip(&q.values)
                .for_each(|(a, b)| *a += *b);
        }
        Ok(())
    }

    /// The element-wise mean of `records` (the PGC aggregator's buffer average, eq. 22).
    pub fn mean(records: &[GradientRecord]) -> Result<GradientRecord, RecordError> {
        let (first, rest) = records.split_first().ok_or(RecordError::Empty)?;
        let mut sum = first.clone();
        for r in rest {
            sum.add_assign(r)?;
        }
        sum.scale(1.0 / records.len() as f32);
        Ok(sum)
    }

    fn check_same_layout(&self, other: &GradientRecord) -> Result<(), RecordError> {
        if self.params.len() != other.params.len() {
            return Err(RecordError::LengthMismatch {
                expected: self.params.len(),
                got: other.params.len(),
            });
        }
        for (index, (p, q)) in self.params.iter().zip(&other.params).enumerate() {
            if p.name != q.name {
                return Err(RecordError::LayoutMismatch {
                    index,
                    left: p.name.clone(),
                    right: q.name.clone(),
                });
            }
            if p.shape != q.shape {
                return Err(RecordError::ShapeMismatch {
                    name: p.name.clone(),
                    expected: p.shape.clone(),
                    got: q.shape.clone(),
                });
            }
        }
        Ok(())
    }

    /// Converts the record to Burn's [`GradientsParams`] for `module`, matching entries to
    /// parameters by path, so that any Burn optimizer can apply it:
    /// `module = optimizer.step(lr, module, record.to_gradients_params(&module)?)`.
    ///
    /// Parameters of `module` without an entry get no update. An entry that names no
    /// parameter of `module`, or whose shape differs, is an error.
    pub fn to_gradients_params<B: AutodiffBackend, M: AutodiffModule<B>>(
        &self,
        module: &M,
    ) -> Result<GradientsParams, RecordError> {
        let mut converter = ParamsConverter::<B> {
            record: self,
            used: vec![false; self.params.len()],
            known: Vec::new(),
            out: GradientsParams::new(),
            error: None,
            _backend: std::marker::PhantomData,
        };
        visit_params(module, &mut converter);
        if let Some(error) = converter.error {
            return Err(error);
        }
        if let Some(unused) = converter.used.iter().position(|used| !used) {
            return Err(RecordError::UnknownParameter {
                name: self.params[unused].name.clone(),
                known: converter.known.join(", "),
            });
        }
        Ok(converter.out)
    }
}

struct ParamsConverter<'a, B: AutodiffBackend> {
    record: &'a GradientRecord,
    used: Vec<bool>,
    known: Vec<String>,
    out: GradientsParams,
    error: Option<RecordError>,
    _backend: std::marker::PhantomData<B>,
}

impl<B: AutodiffBackend> ParamVisitor<B> for ParamsConverter<'_, B> {
    fn visit<const D: usize>(&mut self, path: &str, param: &Param<Tensor<B, D>>) {
        let name = path.to_string();
        let Some(index) = self.record.params.iter().position(|p| p.name == name) else {
            self.known.push(name);
            return;
        };
        self.known.push(name.clone());
        let entry = &self.record.params[index];
        let tensor = param.val();
        let shape: Vec<usize> = tensor.dims().to_vec();
        if shape != entry.shape || entry.values.len() != shape.iter().product::<usize>() {
            self.error.get_or_insert(RecordError::ShapeMismatch {
                name,
                expected: shape,
                got: entry.shape.clone(),
            });
            return;
        }
        self.used[index] = true;
        let data =
            TensorData::new(entry.values.clone(), entry.shape.clone()).convert::<B::FloatElem>();
        let gradient = Tensor::<B::InnerBackend, D>::from_data(
            data,
            float_options::<B::InnerBackend>(&tensor.device()),
        );
        self.out.register::<B::InnerBackend, D>(param.id, gradient);
    }
}

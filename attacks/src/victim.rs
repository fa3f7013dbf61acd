//! The victim of the attacks: a network ([`InvertibleModel`]; by default the paper's
//! [`MultimodalNet`]) that a DQN or REINFORCE learner trains, and the gradient that the learner
//! shares for a batch of samples (eq. 1).
//!
//! The network lives on `Autodiff<Autodiff<B>>` ([`Outer`]): the outer autodiff tracks its
//! weights, and the inner one ([`Inner`]) tracks whatever the attacker reconstructs, so that a
//! weight gradient can be differentiated again with respect to the reconstruction
//! (`docs/architecture.md`, "Burn 0.21, pinned"). The victim's own gradient is
//! computed on the same module with constant inputs; it is numerically the gradient that
//! `privrl_agents::Dqn::gradient` or `privrl_agents::Reinforce::gradient` shares.
//!
//! The losses are the agents' own: [`td_loss`] for DQN and [`reinforce_loss`] for REINFORCE.

use burn::backend::Autodiff;
use burn::config::Config;
use burn::module::{AutodiffModule, Module, ModuleMapper, ModuleVisitor, Param};
use burn::optim::{AdamConfig, GradientsParams, Optimizer};
use burn::tensor::backend::Backend;
use burn::tensor::ElementConversion;
use burn::tensor::{Tensor, TensorData};
use privrl_agents::autodiff;
use privrl_agents::losses::reinforce_loss;
use privrl_agents::losses::td_loss;
use privrl_agents::tensor::float_options;
use privrl_agents::tensor::{matrix, one_hot};
use privrl_agents::ADAM_EPSILON;
use privrl_agents::{AgentError, GradientRecord, MultimodalNet, MultimodalNetConfig};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use crate::error::{check_non_negative, AttackError};
use crate::model::{InvertibleModel, LinearSplit, ObservationParts};

/// The backend that tracks the reconstruction (the attacker's free variables).
pub type Inner<B> = Autodiff<B>;
/// The backend that tracks the victim's weights; its gradients are [`Inner`] tensors.
pub type Outer<B> = Autodiff<Autodiff<B>>;

/// One private training sample: the state, the action taken and the supervision signal.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Sample {
    /// RGB image s_i, `3 × H × W` row-major, values in `[0, 1]`; `None` without a colour camera.
    pub rgb: Option<Vec<f32>>,
    /// Depth image s_d, `1 × H × W` row-major, values in `[0, 1]`; `None` without a depth camera.
    pub depth: Option<Vec<f32>>,
    /// Vector state s_c (the target's bounding box `(x_min, y_min, x_max, y_max)` in `[−1, 1]`);
    /// empty for a model that reads no vector.
    pub vector: Vec<f32>,
    /// Action a taken in the state.
    pub action: usize,
    /// Supervision signal: the target Q-value Q(s, a) for DQN, the return (reward) R for
    /// REINFORCE.
    pub signal: f64,
}

/// Which learner trains the victim, i.e. which objective J the shared gradient comes from.
#[derive(Config, Debug, Copy, PartialEq)]
pub enum VictimKind {
    /// DQN: J = (1/|B|) Σ (Q̂(s, a) − Q)², the mean squared TD error ([`td_loss`]).
    Dqn,
    /// REINFORCE with an entropy bonus: eq. 4 as a loss to minimise,
    /// J = −Σ [log π(a|s) R + α H(π(·|s))] ([`reinforce_loss`]).
    Reinforce {
        /// Weight α of the entropy term.
        entropy_weight: f64,
    },
}

impl VictimKind {
    /// Checks the entropy weight.
    pub fn validate(&self) -> Result<(), AttackError> {
        match self {
            VictimKind::Dqn => Ok(()),
            VictimKind::Reinforce { entropy_weight } => {
                check_non_negative("entropy_weight", *entropy_weight)
            }
        }
    }

    /// The objective J from the network outputs `[batch, actions]` (Q-values or logits), the
    /// actions as (possibly soft) one-hot rows and the signals `[batch]`. The signals are held
    /// constant by the outer autodiff but stay tracked by the inner one, so an attack can
    /// optimise them jointly (DLG).
    pub fn objective<BB: Backend>(
        &self,
        output: Tensor<BB, 2>,
        actions_one_hot: Tensor<BB, 2>,
        signals: Tensor<BB, 1>,
    ) -> Tensor<BB, 1> {
        match self {
            VictimKind::Dqn => td_loss(output, actions_one_hot, signals),
            VictimKind::Reinforce { entropy_weight } => {
                reinforce_loss(output, actions_one_hot, signals, *entropy_weight)
            }
        }
    }
}

/// The input of the victim's linear part (its Dense layers): the conv features that feed the
/// concatenation and the vector state s_c. This is what stage 1 of QGI and RGI reconstructs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LinearPartInput {
    /// Flattened output of the RGB encoder (`None` without an RGB branch).
    pub rgb_features: Option<Vec<f32>>,
    /// Flattened output of the depth encoder (`None` without a depth branch).
    pub depth_features: Option<Vec<f32>>,
    /// Vector state s_c.
    pub vector: Vec<f32>,
}

/// The output of the victim's linear part for one input.
#[derive(Debug, Clone, PartialEq)]
pub struct LinearPartOutput {
    /// Network output: Q̂(s, ·) for DQN, logits for REINFORCE.
    pub output: Vec<f32>,
    /// Input of the last Dense layer.
    pub last_layer_input: Vec<f32>,
}

/// A victim network together with the objective it is trained on.
///
/// `M` is the network on the nested autodiff backend [`Outer`]: any [`InvertibleModel`],
/// privrl's [`MultimodalNet`] by default.
#[derive(Debug, Clone)]
pub struct Victim<B: Backend, M = MultimodalNet<Outer<B>>> {
    pub(crate) net: M,
    kind: VictimKind,
    device: B::Device,
}

impl<B: Backend> Victim<B> {
    /// A freshly initialised network (the paper attacks gradients "fed into an initialized
    /// network"), drawn from `seed` exactly as an agent would draw it.
    pub fn from_seed(
        config: &MultimodalNetConfig,
        kind: VictimKind,
        seed: u64,
        device: &B::Device,
    ) -> Result<Self, AttackError> {
        // Sizes checked before the network is built (its init cannot fail).
        config.validate().map_err(|error| match error {
            AgentError::InvalidParameter {
                name,
                value,
                expected,
            } => AttackError::OutOfRange {
                name,
                value,
                expected,
            },
            other => AttackError::Incompatible(other.to_string()),
        })?;
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        Self::new(config.init::<Outer<B>>(device, &mut rng), kind, device)
    }

    /// A victim with the parameters of `module` (e.g. a trained agent's network, on any
    /// backend); `config` must describe `module`'s architecture.
    pub fn from_module<B2: Backend>(
        config: &MultimodalNetConfig,
        module: &MultimodalNet<B2>,
        kind: VictimKind,
        device: &B::Device,
    ) -> Result<Self, AttackError> {
        Self::from_seed(config, kind, 0, device)?.with_parameters_of(module)
    }
}

impl<B: Backend, M: InvertibleModel<Outer<B>>> Victim<B, M> {
    /// The victim `model` (built on [`Outer`]`<B>`, e.g. by its config's `init`) trained on
    /// `kind`'s objective.
    pub fn new(model: M, kind: VictimKind, device: &B::Device) -> Result<Self, AttackError> {
        kind.validate()?;
        let parts = model.observation_parts();
        if parts.rgb.is_none() && parts.depth.is_none() && parts.vector == 0 {
            return Err(AttackError::Incompatible(
                "the model reads no observation part (no image, an empty vector)".into(),
            ));
        }
        check_twice_differentiable(&model)?;
        Ok(Self {
            net: model,
            kind,
            device: device.clone(),
        })
    }

    /// This victim with the parameters of `module`, an instance of the same architecture on
    /// any backend (a trained agent's network), copied in Burn's visiting order.
    pub fn with_parameters_of<B2: Backend, M2: Module<B2>>(
        mut self,
        module: &M2,
    ) -> Result<Self, AttackError> {
        let mut collector = ParamCollector { values: Vec::new() };
        module.visit(&mut collector);
        let mut counter = ParamCounter { count: 0 };
        self.net.visit(&mut counter);
        if counter.count != collector.values.len() {
            return Err(AttackError::LengthMismatch {
                what: "parameters of the module vs the victim's architecture",
                left: collector.values.len(),
                right: counter.count,
            });
        }
        let mut copier = ParamCopier {
            values: collector.values.into_iter(),
            device: self.device.clone(),
            error: None,
        };
        self.net = self.net.map(&mut copier);
        match copier.error {
            Some(error) => Err(error),
            None => Ok(self),
        }
    }

    /// The network, on the nested autodiff backend.
    pub fn net(&self) -> &M {
        &self.net
    }

    /// The objective the victim is trained on.
    pub fn kind(&self) -> VictimKind {
        self.kind
    }

    /// The device the network lives on.
    pub fn device(&self) -> &B::Device {
        &self.device
    }

    /// Number of actions (outputs).
    pub fn num_actions(&self) -> usize {
        self.net.num_outputs()
    }

    /// The observation parts the network reads.
    pub fn observation_parts(&self) -> ObservationParts {
        self.net.observation_parts()
    }

    /// Path of the last layer's bias in a [`GradientRecord`] of this network (`None` if the
    /// output layer has no bias).
    pub fn last_bias_name(&self) -> Option<String> {
        self.net.output_bias_name()
    }

    /// The split at the linear part, or the named error for `needed_by` if the model has none.
    pub(crate) fn split(
        &self,
        needed_by: &'static str,
    ) -> Result<&dyn LinearSplit<Outer<B>>, AttackError> {
        self.net
            .linear_split()
            .ok_or(AttackError::NoLinearPart { needed_by })
    }

    /// Whether the reconstruction of the linear part's input determines this parameter's
    /// gradient: the linear part's parameters where the model has a split, every parameter
    /// otherwise (the whole state is reconstructed at once).
    pub(crate) fn is_determined_parameter(&self, name: &str) -> bool {
        self.net
            .linear_split()
            .is_none_or(|split| split.is_linear_parameter(name))
    }

    /// The gradient ∇_w J that the learner shares for `samples` (one batch, eq. 1), named per
    /// parameter. The batch size is `samples.len()`; the paper attacks batches of one.
    pub fn shared_gradient(&self, samples: &[Sample]) -> Result<GradientRecord, AttackError> {
        autodiff::exclusive(|| {
            let loss = self.objective_of(samples)?;
            Ok(GradientRecord::from_grads(
                &self.net,
                &autodiff::backward(&loss),
            ))
        })
    }

    /// J on `samples`, tracked by the outer autodiff (the weights).
    fn objective_of(&self, samples: &[Sample]) -> Result<Tensor<Outer<B>, 1>, AttackError> {
        let (rgb, depth, vector) = self.state_tensors::<Outer<B>>(samples)?;
        let actions: Vec<usize> = samples.iter().map(|s| s.action).collect();
        let signals: Vec<f32> = samples.iter().map(|s| s.signal as f32).collect();
        let output = self.net.forward_parts(rgb, depth, vector);
        Ok(self.kind.objective(
            output,
            one_hot::<Outer<B>>(&actions, self.num_actions(), &self.device),
            privrl_agents::tensor::vector::<Outer<B>>(&signals, &self.device),
        ))
    }

    /// Trains the victim on its own objective J: `steps` Adam steps (PyTorch's defaults, `lr`)
    /// on minibatches of `batch_size` drawn with replacement from `samples` by `seed`. This
    /// makes the "after training" victims of the leakage study; the paper attacks freshly
    /// initialised ones. Returns J before each step.
    pub fn train(
        &mut self,
        samples: &[Sample],
        steps: usize,
        batch_size: usize,
        lr: f64,
        seed: u64,
    ) -> Result<Vec<f64>, AttackError>
    where
        M: AutodiffModule<Outer<B>>,
    {
        autodiff::exclusive(|| {
            if samples.is_empty() || batch_size == 0 {
                return Err(AttackError::EmptyBatch);
            }
            let mut optimizer = AdamConfig::new()
                .with_epsilon(ADAM_EPSILON)
                .init::<Outer<B>, M>();
            let mut rng = ChaCha8Rng::seed_from_u64(seed);
            let mut losses = Vec::with_capacity(steps);
            for _ in 0..steps {
                let batch: Vec<Sample> = (0..batch_size)
                    .map(|_| samples[rng.random_range(0..samples.len())].clone())
                    .collect();
                let loss = self.objective_of(&batch)?;
                losses.push(f64::from(loss.clone().into_scalar().elem::<f32>()));
                let grads = GradientsParams::from_grads(autodiff::backward(&loss), &self.net);
                self.net = optimizer.step(lr, self.net.clone(), grads);
            }
            Ok(losses)
        })
    }

    /// The gradient of eq. 6's surrogate J̃ = Σ_n eᵀ F(x_n) for the given error direction
    /// `e` (∇_{b_last} J of the shared gradient). For a batch of one and the true sample it
    /// equals [`Victim::shared_gradient`]: the claim behind the error-direction attack.
    pub fn error_direction_gradient(
        &self,
        samples: &[Sample],
        direction: &[f32],
    ) -> Result<GradientRecord, AttackError> {
        autodiff::exclusive(|| {
            if direction.len() != self.num_actions() {
                return Err(AttackError::ShapeMismatch {
                    what: "error direction",
                    expected: self.num_actions(),
                    got: direction.len(),
                });
            }
            let (rgb, depth, vector) = self.state_tensors::<Outer<B>>(samples)?;
            let output = self.net.forward_parts(rgb, depth, vector);
            let direction = matrix::<Outer<B>>(direction, direction.len(), &self.device);
            let surrogate = (output * direction).sum();
            Ok(GradientRecord::from_grads(
                &self.net,
                &autodiff::backward(&surrogate),
            ))
        })
    }

    /// The network output for one sample: Q̂(s, ·) for DQN, the logits for REINFORCE.
    pub fn output(&self, sample: &Sample) -> Result<Vec<f32>, AttackError> {
        autodiff::exclusive(|| {
            let (rgb, depth, vector) =
                self.state_tensors::<Outer<B>>(std::slice::from_ref(sample))?;
            Ok(host(self.net.forward_parts(rgb, depth, vector)))
        })
    }

    /// The true input of the linear part for `sample`: its conv features and its vector.
    pub fn linear_part_input(&self, sample: &Sample) -> Result<LinearPartInput, AttackError> {
        autodiff::exclusive(|| {
            let split = self.split("the linear part's input")?;
            let (rgb, depth, vector) =
                self.state_tensors::<Outer<B>>(std::slice::from_ref(sample))?;
            let (rgb_features, depth_features) = split.image_features(rgb, depth);
            Ok(LinearPartInput {
                rgb_features: rgb_features.map(host),
                depth_features: depth_features.map(host),
                vector: vector.map(host).unwrap_or_default(),
            })
        })
    }

    /// The network output and the last layer's input for a linear-part input.
    pub fn linear_part_output(
        &self,
        input: &LinearPartInput,
    ) -> Result<LinearPartOutput, AttackError> {
        autodiff::exclusive(|| {
            let split = self.split("the linear part's output")?;
            let (rgb, depth, vector) = self.linear_part_tensors::<Outer<B>>(input)?;
            let (output, last_layer_input) = linear_part_forward(split, rgb, depth, vector);
            Ok(LinearPartOutput {
                output: host(output),
                last_layer_input: host(last_layer_input),
            })
        })
    }

    /// The linear-part input computed from (reconstructed) images and a vector; for a model
    /// without a linear part, the vector alone.
    pub fn linear_part_input_of(
        &self,
        rgb: Option<&[f32]>,
        depth: Option<&[f32]>,
        vector: &[f32],
    ) -> Result<LinearPartInput, AttackError> {
        let state = Sample {
            rgb: rgb.map(<[f32]>::to_vec),
            depth: depth.map(<[f32]>::to_vec),
            vector: vector.to_vec(),
            action: 0,
            signal: 0.0,
        };
        match self.net.linear_split() {
            Some(_) => self.linear_part_input(&state),
            None => Ok(LinearPartInput {
                rgb_features: None,
                depth_features: None,
                vector: state.vector,
            }),
        }
    }

    /// The network output (tracked by the outer autodiff) for what an attack reconstructed:
    /// the linear part's input where the model has a split, the state `rgb`, `depth` and
    /// `linear.vector` otherwise.
    pub(crate) fn reconstructed_output(
        &self,
        rgb: Option<&[f32]>,
        depth: Option<&[f32]>,
        linear: &LinearPartInput,
    ) -> Result<Tensor<Outer<B>, 2>, AttackError> {
        match self.net.linear_split() {
            Some(split) => {
                let (rgb, depth, vector) = self.linear_part_tensors::<Outer<B>>(linear)?;
                Ok(linear_part_forward(split, rgb, depth, vector).0)
            }
            None => {
                let state = Sample {
                    rgb: rgb.map(<[f32]>::to_vec),
                    depth: depth.map(<[f32]>::to_vec),
                    vector: linear.vector.clone(),
                    action: 0,
                    signal: 0.0,
                };
                let (rgb, depth, vector) =
                    self.state_tensors::<Outer<B>>(std::slice::from_ref(&state))?;
                Ok(self.net.forward_parts(rgb, depth, vector))
            }
        }
    }

    /// The images and vectors of `samples` as `[batch, …]` tensors, checked against the
    /// network; a part the network does not read is `None`.
    #[allow(clippy::type_complexity)]
    pub(crate) fn state_tensors<BB: Backend<Device = B::Device>>(
        &self,
        samples: &[Sample],
    ) -> Result<
        (
            Option<Tensor<BB, 4>>,
            Option<Tensor<BB, 4>>,
            Option<Tensor<BB, 2>>,
        ),
        AttackError,
    > {
        if samples.is_empty() {
            return Err(AttackError::EmptyBatch);
        }
        let batch = samples.len();
        let parts = self.net.observation_parts();
        let image = |name: &'static str,
                     shape: Option<privrl_agents::ImageShape>,
                     pick: &dyn Fn(&Sample) -> Option<&Vec<f32>>|
         -> Result<Option<Tensor<BB, 4>>, AttackError> {
            let mut values = Vec::new();
            for (index, sample) in samples.iter().enumerate() {
                match (shape, pick(sample)) {
                    (Some(s), Some(v)) => {
                        if v.len() != s.len() {
                            return Err(AttackError::ShapeMismatch {
                                what: if name == "rgb" {
                                    "rgb image"
                                } else {
                                    "depth image"
                                },
                                expected: s.len(),
                                got: v.len(),
                            });
                        }
                        values.extend_from_slice(v);
                    }
                    (None, None) => {}
                    (Some(_), None) => {
                        return Err(AttackError::ImagePresence {
                            index,
                            image: name,
                            expectation: "needs",
                        })
                    }
                    (None, Some(_)) => {
                        return Err(AttackError::ImagePresence {
                            index,
                            image: name,
                            expectation: "has no branch for",
                        })
                    }
                }
            }
            Ok(shape.map(|s| {
                Tensor::from_data(
                    TensorData::new(values, [batch, s.channels, s.size, s.size])
                        .convert::<BB::FloatElem>(),
                    float_options::<BB>(&self.device),
                )
            }))
        };
        let rgb = image("rgb", parts.rgb, &|s| s.rgb.as_ref())?;
        let depth = image("depth", parts.depth, &|s| s.depth.as_ref())?;
        let mut vector = Vec::with_capacity(batch * parts.vector);
        for (index, sample) in samples.iter().enumerate() {
            if sample.vector.len() != parts.vector {
                return Err(AttackError::ShapeMismatch {
                    what: "vector state",
                    expected: parts.vector,
                    got: sample.vector.len(),
                });
            }
            if sample.action >= self.num_actions() {
                return Err(AttackError::ActionOutOfRange {
                    index,
                    action: sample.action,
                    num_actions: self.num_actions(),
                });
            }
            vector.extend_from_slice(&sample.vector);
        }
        let vector = (parts.vector > 0).then(|| matrix::<BB>(&vector, parts.vector, &self.device));
        Ok((rgb, depth, vector))
    }

    /// A linear-part input as `[1, …]` tensors, checked against the network's split.
    #[allow(clippy::type_complexity)]
    pub(crate) fn linear_part_tensors<BB: Backend<Device = B::Device>>(
        &self,
        input: &LinearPartInput,
    ) -> Result<
        (
            Option<Tensor<BB, 2>>,
            Option<Tensor<BB, 2>>,
            Option<Tensor<BB, 2>>,
        ),
        AttackError,
    > {
        let (rgb_width, depth_width) = self.split("the linear part's input")?.feature_widths();
        let features = |what: &'static str,
                        width: Option<usize>,
                        values: Option<&Vec<f32>>|
         -> Result<Option<Tensor<BB, 2>>, AttackError> {
            match (width, values) {
                (Some(w), Some(v)) if v.len() == w => Ok(Some(matrix::<BB>(v, w, &self.device))),
                (None, None) => Ok(None),
                (w, v) => Err(AttackError::ShapeMismatch {
                    what,
                    expected: w.unwrap_or(0),
                    got: v.map_or(0, Vec::len),
                }),
            }
        };
        let rgb = features("rgb features", rgb_width, input.rgb_features.as_ref())?;
        let depth = features("depth features", depth_width, input.depth_features.as_ref())?;
        let d_vector = self.net.observation_parts().vector;
        if input.vector.len() != d_vector {
            return Err(AttackError::ShapeMismatch {
                what: "vector state",
                expected: d_vector,
                got: input.vector.len(),
            });
        }
        let vector = (d_vector > 0).then(|| matrix::<BB>(&input.vector, d_vector, &self.device));
        Ok((rgb, depth, vector))
    }
}

/// The forward pass of a linear part from free conv features and the vector state. Returns
/// the output and the last layer's input.
pub(crate) fn linear_part_forward<BB: Backend>(
    split: &dyn LinearSplit<BB>,
    rgb_features: Option<Tensor<BB, 2>>,
    depth_features: Option<Tensor<BB, 2>>,
    vector: Option<Tensor<BB, 2>>,
) -> (Tensor<BB, 2>, Tensor<BB, 2>) {
    let features = split.head_input(rgb_features, depth_features, vector);
    let (output, mut inputs) = split.head().forward_with_layer_inputs(features);
    let last_input = inputs.pop().expect("the head has at least one layer");
    (output, last_input)
}

/// Copies a tensor's values to the host.
pub(crate) fn host<BB: Backend, const D: usize>(tensor: Tensor<BB, D>) -> Vec<f32> {
    tensor
        .into_data()
        .convert::<f32>()
        .into_vec::<f32>()
        .expect("float tensor data")
}

struct ParamCollector {
    values: Vec<TensorData>,
}

impl<B2: Backend> ModuleVisitor<B2> for ParamCollector {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<B2, D>>) {
        self.values.push(param.val().into_data().convert::<f32>());
    }
}

/// Burn layers with parameters whose backward Burn 0.21 cannot differentiate again, by the
/// container type Burn's derive names them with, with privrl's replacement.
const NOT_TWICE_DIFFERENTIABLE: &[(&str, &str, &str)] = &[(
    "Struct:Linear",
    "burn::nn::Linear (its fused `linear` op)",
    "privrl_agents::Dense (the same z = xW + b as two matrix products; DenseConfig)",
)];

/// Refuses a model with a parameter inside a layer of [`NOT_TWICE_DIFFERENTIABLE`], naming
/// the parameter, the layer and the fix.
fn check_twice_differentiable<B: Backend, M: Module<B>>(model: &M) -> Result<(), AttackError> {
    struct Layers {
        path: Vec<(String, String)>,
        found: Option<AttackError>,
    }
    impl<B: Backend> ModuleVisitor<B> for Layers {
        fn enter_module(&mut self, name: &str, container_type: &str) {
            self.path
                .push((name.to_string(), container_type.to_string()));
        }
        fn exit_module(&mut self, _name: &str, _container_type: &str) {
            self.path.pop();
        }
        fn visit_float<const D: usize>(&mut self, _param: &Param<Tensor<B, D>>) {
            let Some((_, container)) = self.path.last() else {
                return;
            };
            if self.found.is_some() {
                return;
            }
            if let Some(&(_, layer, fix)) = NOT_TWICE_DIFFERENTIABLE
                .iter()
                .find(|(kind, _, _)| kind == container)
            {
                let parameter = self
                    .path
                    .iter()
                    .map(|(name, _)| name.as_str())
                    .collect::<Vec<_>>()
                    .join(".");
                self.found = Some(AttackError::NotTwiceDifferentiable {
                    parameter,
                    layer,
                    fix,
                });
            }
        }
    }
    let mut layers = Layers {
        path: Vec::new(),
        found: None,
    };
    model.visit(&mut layers);
    layers.found.map_or(Ok(()), Err)
}

struct ParamCounter {
    count: usize,
}

impl<B2: Backend> ModuleVisitor<B2> for ParamCounter {
    fn visit_float<const D: usize>(&mut self, _param: &Param<Tensor<B2, D>>) {
        self.count += 1;
    }
}

struct ParamCopier<D: Clone> {
    values: std::vec::IntoIter<TensorData>,
    device: D,
    error: Option<AttackError>,
}

impl<B2: Backend> ModuleMapper<B2> for ParamCopier<B2::Device> {
    fn map_float<const D: usize>(&mut self, param: Param<Tensor<B2, D>>) -> Param<Tensor<B2, D>> {
        let Some(data) = self.values.next() else {
            return param;
        };
        let device = self.device.clone();
        let shape = param.shape();
        if shape != data.shape {
            self.error.get_or_insert(AttackError::ShapeMismatch {
                what: "parameter copied from the module",
                expected: shape.num_elements(),
                got: data.num_elements(),
            });
            return param;
        }
        param.map(|_| {
            Tensor::from_data(
                data.convert::<B2::FloatElem>(),
                float_options::<B2>(&device),
            )
            .require_grad()
        })
    }
}

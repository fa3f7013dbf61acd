//! What the attacks need from a network: [`InvertibleModel`], implemented here for privrl's
//! [`MultimodalNet`] (the paper's victim), its image-only [`ConvNet`] and its [`Mlp`] on vector
//! states, and implementable for any Burn module.
//!
//! The attacks see a model through three things:
//! - a forward pass over the observation parts, a colour image, a single-channel (depth)
//!   image and a vector state, each of which a model may lack ([`ObservationParts`]);
//! - its parameters, which Burn's [`Module`] visitor lists by path: the gradient the learner
//!   shares (eq. 1) is named by those paths;
//! - optionally, the split at its linear part ([`LinearSplit`]): the Dense layers after the
//!   image encoders, whose gradients QGI's and RGI's stage 1 (Section IV-A) match to recover
//!   their input. A model that declares none (the default) is attacked by joint optimisation
//!   of the whole state against all gradients (Fig. 4's ablation), the way DLG and Inverting
//!   Gradients attack any network.
//!
//! Every operation a model uses must be twice differentiable under `Autodiff<Autodiff<B>>`:
//! the attack differentiates the weight gradient again with respect to the reconstruction.
//! privrl's `nn` layers are (`docs/architecture.md`, "Burn 0.21, pinned"); `burn::nn::Linear`
//! and pooling are not.
//!
//! Attack your own Burn model's gradient: implement the trait, wrap the model in a
//! [`Victim`](crate::Victim), and hand the gradient it shared to [`attack`](fn@crate::attack).
//! This model declares no linear split, so the attack optimises its state jointly.
//!
//! ```
//! use burn::{backend::NdArray, module::Module, tensor::{backend::Backend, Tensor}};
//! use privrl_agents::{Mlp, MlpConfig};
//! use privrl_attacks::{attack, AttackConfig, InvertibleModel, ObservationParts, Outer};
//! use privrl_attacks::{Sample, Victim, VictimKind};
//! use rand::SeedableRng;
//!
//! #[derive(Module, Debug)]
//! struct MyQNet<B: Backend> { body: Mlp<B> }
//!
//! impl<B: Backend> InvertibleModel<B> for MyQNet<B> {
//!     fn observation_parts(&self) -> ObservationParts {
//!         ObservationParts { rgb: None, depth: None, vector: 4 }
//!     }
//!     fn num_outputs(&self) -> usize { 3 }
//!     fn forward_parts(&self, _: Option<Tensor<B, 4>>, _: Option<Tensor<B, 4>>,
//!                      state: Option<Tensor<B, 2>>) -> Tensor<B, 2> {
//!         self.body.forward(state.expect("a 4-value state"))
//!     }
//!     fn output_bias_name(&self) -> Option<String> { Some("body.layers.1.bias".into()) }
//! }
//!
//! let device = Default::default();
//! let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(0);
//! let body = MlpConfig::new(4, vec![16], 3).init::<Outer<NdArray>>(&device, &mut rng);
//! let victim = Victim::<NdArray, _>::new(MyQNet { body }, VictimKind::Dqn, &device)?;
//! let secret = Sample { rgb: None, depth: None, vector: vec![0.1, -0.4, 0.7, 0.2],
//!                       action: 1, signal: 0.5 };
//! // The gradient of the TD loss the learner shares (or a `GradientRecord` of your own).
//! let shared = victim.shared_gradient(std::slice::from_ref(&secret))?;
//! let stolen = attack(&victim, &shared, &AttackConfig::qgi().with_iterations_per_stage(800))?;
//! assert_eq!(stolen.action, 1);
//! for (got, truth) in stolen.vector.iter().zip(&secret.vector) {
//!     assert!((got - truth).abs() < 1e-2, "{:?}", stolen.vector);
//! }
//! # Ok::<(), privrl_attacks::AttackError>(())
//! ```

use burn::module::Module;
use burn::tensor::backend::Backend;
use burn::tensor::Tensor;
use privrl_agents::{Activation, ConvEncoder, ConvNet, Dense, ImageShape, Mlp, MultimodalNet};
use serde::{Deserialize, Serialize};

/// The observation parts a model reads and their geometry. A [`crate::Sample`] carries one
/// value per part the model reads and `None` (or an empty vector) for the others.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ObservationParts {
    /// The colour image (`3 × size × size` for RGB), if the model reads one.
    pub rgb: Option<ImageShape>,
    /// The single-channel image (depth), if the model reads one.
    pub depth: Option<ImageShape>,
    /// Length of the vector state (0 if the model reads none).
    pub vector: usize,
}

/// A network that the gradient inversion attacks can invert.
///
/// Implement it for your own Burn module on the nested autodiff backend
/// ([`crate::Outer`]): name the parts it reads, give its forward pass over them, and the path
/// of its output layer's bias (which QGI's error direction, eq. 6, and the action rules,
/// eq. 7–8, read). Return a [`LinearSplit`] from [`InvertibleModel::linear_split`] where the
/// network ends in privrl [`Mlp`] layers, to get the two-stage attack; without one, the attack
/// optimises the whole state jointly.
pub trait InvertibleModel<B: Backend>: Module<B> + Sync {
    /// The observation parts the forward pass reads.
    fn observation_parts(&self) -> ObservationParts;

    /// Output features: Q-values or policy logits, one per action.
    fn num_outputs(&self) -> usize;

    /// `[batch, …]` observation parts → `[batch, num_outputs]`. A part the model does not
    /// read is `None`.
    fn forward_parts(
        &self,
        rgb: Option<Tensor<B, 4>>,
        depth: Option<Tensor<B, 4>>,
        vector: Option<Tensor<B, 2>>,
    ) -> Tensor<B, 2>;

    /// The parameter path of the output layer's bias in a gradient record (e.g.
    /// `head.layers.1.bias`); `None` if the output layer has no bias.
    fn output_bias_name(&self) -> Option<String> {
        self.linear_split().and_then(|split| {
            let (_, bias) = split.head().layer_param_paths().pop()?;
            bias.map(|bias| format!("{}{bias}", split.head_prefix()))
        })
    }

    /// The split at the linear part that QGI's stage 1 inverts, or `None` if the model has
    /// none (the attack then optimises the state jointly).
    fn linear_split(&self) -> Option<&dyn LinearSplit<B>> {
        None
    }
}

/// The split of a model into image encoders and a linear part: the Dense layers whose
/// gradients determine their input (Section IV-A), the conv features and the vector state.
///
/// The linear part's input is the encoders' outputs and the vector state; it feeds the head
/// (an [`Mlp`]) through [`LinearSplit::head_input`], which may hold Dense layers of its own
/// (the vector branch of [`MultimodalNet`]). Stage 1 matches the gradients of the parameters
/// [`LinearSplit::is_linear_parameter`] names; the head's weight gradients are matched through
/// their factors (`ReconstructedGradient::Factored`), never formed.
pub trait LinearSplit<B: Backend>: Sync {
    /// Flattened feature widths of the colour and the depth encoder (`None` for a part the
    /// model does not read).
    fn feature_widths(&self) -> (Option<usize>, Option<usize>);

    /// The encoders: images `[batch, c, s, s]` → features `[batch, width]`.
    fn image_features(
        &self,
        rgb: Option<Tensor<B, 4>>,
        depth: Option<Tensor<B, 4>>,
    ) -> (Option<Tensor<B, 2>>, Option<Tensor<B, 2>>);

    /// The head's input from the linear part's input: features and vector state.
    fn head_input(
        &self,
        rgb_features: Option<Tensor<B, 2>>,
        depth_features: Option<Tensor<B, 2>>,
        vector: Option<Tensor<B, 2>>,
    ) -> Tensor<B, 2>;

    /// The Dense layers from the head's input to the output.
    fn head(&self) -> &Mlp<B>;

    /// The head's parameter path prefix in a gradient record, with its trailing dot
    /// (`"head."`), or `""` if the head is the model itself.
    fn head_prefix(&self) -> &'static str;

    /// Whether a parameter path belongs to the linear part (the gradients stage 1 matches).
    fn is_linear_parameter(&self, name: &str) -> bool {
        name.starts_with(self.head_prefix())
    }

    /// The layers before the head, for the per-sample gradients of the batched attack
    /// ([`attack_each`](crate::attack_each)), or `None` (the default), in which case it attacks
    /// the samples one at a time. `Some` promises that [`LinearSplit::image_features`] is
    /// the encoders' forwards and that [`LinearSplit::head_input`] is
    /// `cat([rgb features, depth features, vector branch(s_c)], 1)` over the parts present.
    fn layers(&self) -> Option<SplitLayers<'_, B>> {
        None
    }
}

/// The layers of a split model before its head: what the batched attack probes to get each
/// sample's own gradient of every parameter (a Dense layer's as the factors `a_kᵀ δ_k`, a
/// convolution's as `δ_k` times its im2col columns), where the model's ordinary backward
/// would give only their sum over the batch.
pub struct SplitLayers<'a, B: Backend> {
    /// The colour encoder with its parameter path prefix (`"rgb."`).
    pub rgb: Option<(&'a ConvEncoder<B>, &'static str)>,
    /// The depth encoder with its parameter path prefix (`"depth."`).
    pub depth: Option<(&'a ConvEncoder<B>, &'static str)>,
    /// The vector branch's Dense layers, input to output, each followed by `activation`.
    pub vector: &'a [Dense<B>],
    /// Path prefix of the vector branch's layers (`"vector_layers."`: layer `i`'s weight is
    /// `vector_layers.{i}.weight`).
    pub vector_prefix: &'static str,
    /// The vector branch's non-linearity.
    pub activation: Activation,
}

impl<B: Backend> InvertibleModel<B> for MultimodalNet<B> {
    fn observation_parts(&self) -> ObservationParts {
        ObservationParts {
            rgb: self.rgb_shape,
            depth: self.depth_shape,
            vector: self.d_vector,
        }
    }

    fn num_outputs(&self) -> usize {
        self.d_output()
    }

    fn forward_parts(
        &self,
        rgb: Option<Tensor<B, 4>>,
        depth: Option<Tensor<B, 4>>,
        vector: Option<Tensor<B, 2>>,
    ) -> Tensor<B, 2> {
        let (rgb_features, depth_features) = LinearSplit::image_features(self, rgb, depth);
        self.head
            .forward(self.head_input(rgb_features, depth_features, vector))
    }

    fn linear_split(&self) -> Option<&dyn LinearSplit<B>> {
        Some(self)
    }
}

impl<B: Backend> LinearSplit<B> for MultimodalNet<B> {
    fn feature_widths(&self) -> (Option<usize>, Option<usize>) {
        (
            self.rgb.as_ref().map(|e| e.d_output),
            self.depth.as_ref().map(|e| e.d_output),
        )
    }

    fn image_features(
        &self,
        rgb: Option<Tensor<B, 4>>,
        depth: Option<Tensor<B, 4>>,
    ) -> (Option<Tensor<B, 2>>, Option<Tensor<B, 2>>) {
        let encode =
            |encoder: Option<&privrl_agents::ConvEncoder<B>>, images| match (encoder, images) {
                (Some(e), Some(x)) => Some(e.forward(x)),
                _ => None,
            };
        let rgb = encode(self.rgb.as_ref(), rgb);
        (rgb, encode(self.depth.as_ref(), depth))
    }

    /// The vector branch on s_c, then the concatenation `[rgb features, depth features,
    /// vector features]` (the order of `MultimodalNet::features`).
    fn head_input(
        &self,
        rgb_features: Option<Tensor<B, 2>>,
        depth_features: Option<Tensor<B, 2>>,
        vector: Option<Tensor<B, 2>>,
    ) -> Tensor<B, 2> {
        let vector_features = vector.map(|mut h| {
            for layer in &self.vector_layers {
                h = self.activation.forward(layer.forward(h));
            }
            h
        });
        let parts: Vec<Tensor<B, 2>> = rgb_features
            .into_iter()
            .chain(depth_features)
            .chain(vector_features)
            .collect();
        Tensor::cat(parts, 1)
    }

    fn head(&self) -> &Mlp<B> {
        &self.head
    }

    fn head_prefix(&self) -> &'static str {
        "head."
    }

    fn is_linear_parameter(&self, name: &str) -> bool {
        name.starts_with("vector_layers.") || name.starts_with("head.")
    }

    fn layers(&self) -> Option<SplitLayers<'_, B>> {
        Some(SplitLayers {
            rgb: self.rgb.as_ref().map(|e| (e, "rgb.")),
            depth: self.depth.as_ref().map(|e| (e, "depth.")),
            vector: &self.vector_layers,
            vector_prefix: "vector_layers.",
            activation: self.activation,
        })
    }
}

/// An image-only CNN: a colour image when it has 3 channels, the depth part otherwise.
impl<B: Backend> InvertibleModel<B> for ConvNet<B> {
    fn observation_parts(&self) -> ObservationParts {
        let colour = self.image.channels == 3;
        ObservationParts {
            rgb: colour.then_some(self.image),
            depth: (!colour).then_some(self.image),
            vector: 0,
        }
    }

    fn num_outputs(&self) -> usize {
        self.d_output()
    }

    fn forward_parts(
        &self,
        rgb: Option<Tensor<B, 4>>,
        depth: Option<Tensor<B, 4>>,
        _vector: Option<Tensor<B, 2>>,
    ) -> Tensor<B, 2> {
        let features = self.encoder.forward(
            rgb.or(depth)
                .expect("the victim passes the image its observation parts name"),
        );
        self.head.forward(features)
    }

    fn linear_split(&self) -> Option<&dyn LinearSplit<B>> {
        Some(self)
    }
}

impl<B: Backend> LinearSplit<B> for ConvNet<B> {
    fn feature_widths(&self) -> (Option<usize>, Option<usize>) {
        let width = Some(self.encoder.d_output);
        match self.image.channels == 3 {
            true => (width, None),
            false => (None, width),
        }
    }

    fn image_features(
        &self,
        rgb: Option<Tensor<B, 4>>,
        depth: Option<Tensor<B, 4>>,
    ) -> (Option<Tensor<B, 2>>, Option<Tensor<B, 2>>) {
        (
            rgb.map(|x| self.encoder.forward(x)),
            depth.map(|x| self.encoder.forward(x)),
        )
    }

    fn head_input(
        &self,
        rgb_features: Option<Tensor<B, 2>>,
        depth_features: Option<Tensor<B, 2>>,
        _vector: Option<Tensor<B, 2>>,
    ) -> Tensor<B, 2> {
        rgb_features
            .or(depth_features)
            .expect("the victim passes the features its split names")
    }

    fn head(&self) -> &Mlp<B> {
        &self.head
    }

    fn head_prefix(&self) -> &'static str {
        "head."
    }

    fn layers(&self) -> Option<SplitLayers<'_, B>> {
        let encoder = Some((&self.encoder, "encoder."));
        let colour = self.image.channels == 3;
        Some(SplitLayers {
            rgb: encoder.filter(|_| colour),
            depth: encoder.filter(|_| !colour),
            vector: &[],
            vector_prefix: "",
            activation: self.encoder.activation,
        })
    }
}

/// An MLP on vector states: the whole network is the linear part, its input the state.
impl<B: Backend> InvertibleModel<B> for Mlp<B> {
    fn observation_parts(&self) -> ObservationParts {
        ObservationParts {
            rgb: None,
            depth: None,
            vector: self.d_input(),
        }
    }

    fn num_outputs(&self) -> usize {
        self.d_output()
    }

    fn forward_parts(
        &self,
        _rgb: Option<Tensor<B, 4>>,
        _depth: Option<Tensor<B, 4>>,
        vector: Option<Tensor<B, 2>>,
    ) -> Tensor<B, 2> {
        self.forward(vector.expect("the victim passes the vector its observation parts name"))
    }

    fn linear_split(&self) -> Option<&dyn LinearSplit<B>> {
        Some(self)
    }
}

impl<B: Backend> LinearSplit<B> for Mlp<B> {
    fn feature_widths(&self) -> (Option<usize>, Option<usize>) {
        (None, None)
    }

    fn image_features(
        &self,
        _rgb: Option<Tensor<B, 4>>,
        _depth: Option<Tensor<B, 4>>,
    ) -> (Option<Tensor<B, 2>>, Option<Tensor<B, 2>>) {
        (None, None)
    }

    fn head_input(
        &self,
        _rgb_features: Option<Tensor<B, 2>>,
        _depth_features: Option<Tensor<B, 2>>,
        vector: Option<Tensor<B, 2>>,
    ) -> Tensor<B, 2> {
        vector.expect("the victim passes the vector its observation parts name")
    }

    fn head(&self) -> &Mlp<B> {
        self
    }

    fn head_prefix(&self) -> &'static str {
        ""
    }

    fn layers(&self) -> Option<SplitLayers<'_, B>> {
        Some(SplitLayers {
            rgb: None,
            depth: None,
            vector: &[],
            vector_prefix: "",
            activation: self.activation,
        })
    }
}

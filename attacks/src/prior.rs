//! Image priors: the penalty R(x) that the image stage adds to the matching loss, as a trait
//! ([`ImageRegulariser`]) that a researcher implements for a prior of their own and registers
//! by name ([`register_image_prior`]), as breaching's `regularizer_lookup`, but without editing
//! this crate. [`ImagePrior`] is what an [`AttackConfig`](crate::AttackConfig) records: the
//! built-in total variation, or a registered prior by name, each with its weight λ, so that a
//! run's `config.json` names the prior it used.

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::sync::{Arc, LazyLock, RwLock};

use burn::config::Config;
use burn::tensor::backend::Backend;
use burn::tensor::Tensor;
use privrl_agents::tensor::float_options;

use crate::error::AttackError;

/// A prior on reconstructed images for the backend `BB` the attack's free variables live on
/// ([`Inner<B>`](crate::Inner) = `Autodiff<B>` for a victim on `B`): R(x) of an image batch
/// `[batch, channels, h, w]`, differentiable in x. The attack adds λ·R to the loss of every
/// image it reconstructs (RGB and depth).
pub trait ImageRegulariser<BB: Backend>: Send + Sync + 'static {
    /// R(x), unweighted, as a one-element tensor.
    fn penalty(&self, images: Tensor<BB, 4>) -> Tensor<BB, 1>;

    /// R of each image of the batch on its own, `[batch]`: the batched attack's prior, where
    /// each sample's penalty must depend on its own image only. The default applies
    /// [`ImageRegulariser::penalty`] to one image at a time.
    fn penalty_per_sample(&self, images: Tensor<BB, 4>) -> Tensor<BB, 1> {
        let [batch, _, _, _] = images.dims();
        Tensor::cat(
            (0..batch)
                .map(|k| self.penalty(images.clone().narrow(0, k, 1)))
                .collect(),
            0,
        )
    }
}

/// Anisotropic total variation ([`total_variation`]; Rudin et al., as Geiping et al.
/// implement it), the paper's prior.
#[derive(Debug, Clone, Copy, Default)]
pub struct TotalVariation;

impl<BB: Backend> ImageRegulariser<BB> for TotalVariation {
    fn penalty(&self, images: Tensor<BB, 4>) -> Tensor<BB, 1> {
        total_variation(images)
    }

    fn penalty_per_sample(&self, images: Tensor<BB, 4>) -> Tensor<BB, 1> {
        total_variation_per_sample(images)
    }
}

/// A prior on the reconstructed images, added to the matching loss of the image stage.
#[derive(Config, Debug, PartialEq)]
pub enum ImagePrior {
    /// λ·TV(x) (Rudin et al.), summed over the RGB and the depth image:
    /// L_img = L(g_rec, g) + λ(TV(s_i) + TV(s_d)) (Section IV-A; the paper uses λ = 0.1).
    TotalVariation {
        /// Weight λ.
        weight: f64,
    },
    /// λ·R(x) for the [`ImageRegulariser`] registered under `name` for the attack's backend
    /// ([`register_image_prior`]); an attack whose prior is not registered is refused
    /// ([`AttackError::UnknownPrior`]) before it starts.
    Registered {
        /// The name it was registered under.
        name: String,
        /// Weight λ.
        weight: f64,
    },
}

impl ImagePrior {
    /// The paper's prior: total variation with λ = 0.1.
    pub fn paper() -> Self {
        ImagePrior::TotalVariation { weight: 0.1 }
    }

    /// The weight λ.
    pub fn weight(&self) -> f64 {
        match self {
            ImagePrior::TotalVariation { weight } | ImagePrior::Registered { weight, .. } => {
                *weight
            }
        }
    }

    /// The weighted penalty λ·R of one image batch `[batch, channels, h, w]`. A registered
    /// prior must be registered for `BB` ([`ImagePrior::check_available`], which every
    /// attack calls first).
    pub fn penalty<BB: Backend>(&self, images: Tensor<BB, 4>) -> Tensor<BB, 1> {
        match self {
            ImagePrior::TotalVariation { weight } => {
                ImageRegulariser::<BB>::penalty(&TotalVariation, images) * *weight
            }
            ImagePrior::Registered { name, weight } => {
                let regulariser = registered::<BB>(name)
                    .unwrap_or_else(|| panic!("image prior `{name}` is not registered"));
                regulariser.penalty(images) * *weight
            }
        }
    }

    /// [`ImagePrior::penalty`] of each image of the batch on its own, `[batch]`.
    pub fn penalty_per_sample<BB: Backend>(&self, images: Tensor<BB, 4>) -> Tensor<BB, 1> {
        match self {
            ImagePrior::TotalVariation { weight } => {
                ImageRegulariser::<BB>::penalty_per_sample(&TotalVariation, images) * *weight
            }
            ImagePrior::Registered { name, weight } => {
                let regulariser = registered::<BB>(name)
                    .unwrap_or_else(|| panic!("image prior `{name}` is not registered"));
                regulariser.penalty_per_sample(images) * *weight
            }
        }
    }

    /// Whether [`ImagePrior::penalty`] can run on `BB`: always for the built-in prior; for a
    /// registered one, if it was registered for `BB`.
    pub fn check_available<BB: Backend>(&self) -> Result<(), AttackError> {
        match self {
            ImagePrior::TotalVariation { .. } => Ok(()),
            ImagePrior::Registered { name, .. } => {
                registered::<BB>(name)
                    .map(|_| ())
                    .ok_or_else(|| AttackError::UnknownPrior {
                        name: name.clone(),
                        backend: std::any::type_name::<BB>(),
                        known: registered_names::<BB>().join(", "),
                    })
            }
        }
    }
}

/// The registry: (name, backend) → `Arc<dyn ImageRegulariser<BB>>`, type-erased.
type Registry = HashMap<(String, TypeId), Arc<dyn Any + Send + Sync>>;

static REGISTRY: LazyLock<RwLock<Registry>> = LazyLock::new(Default::default);

/// Registers `regulariser` under `name` for the backend `BB`, so that
/// `ImagePrior::Registered { name, weight }` adds weight·R(x) in every attack on `BB`.
/// Registering a name again replaces the prior. Process-wide, like Burn's graph registry.
///
/// ```
/// use burn::backend::{Autodiff, NdArray};
/// use burn::tensor::backend::Backend;
/// use burn::tensor::Tensor;
/// use privrl_attacks::{register_image_prior, ImagePrior, ImageRegulariser, Inner};
///
/// /// R(x) = mean x²: pulls reconstructions towards black.
/// struct Energy;
/// impl<BB: Backend> ImageRegulariser<BB> for Energy {
///     fn penalty(&self, images: Tensor<BB, 4>) -> Tensor<BB, 1> {
///         images.powi_scalar(2).mean()
///     }
/// }
/// register_image_prior::<Inner<NdArray>>("energy", Energy);
/// let prior = ImagePrior::Registered { name: "energy".into(), weight: 0.01 };
/// assert!(prior.check_available::<Inner<NdArray>>().is_ok());
/// assert!(prior.check_available::<NdArray>().is_err()); // registered for Autodiff<NdArray>
/// ```
pub fn register_image_prior<BB: Backend>(name: &str, regulariser: impl ImageRegulariser<BB>) {
    let erased: Arc<dyn ImageRegulariser<BB>> = Arc::new(regulariser);
    REGISTRY
        .write()
        .unwrap_or_else(|e| e.into_inner())
        .insert((name.to_string(), TypeId::of::<BB>()), Arc::new(erased));
}

fn registered<BB: Backend>(name: &str) -> Option<Arc<dyn ImageRegulariser<BB>>> {
    let registry = REGISTRY.read().unwrap_or_else(|e| e.into_inner());
    registry
        .get(&(name.to_string(), TypeId::of::<BB>()))
        .and_then(|any| any.downcast_ref::<Arc<dyn ImageRegulariser<BB>>>())
        .cloned()
}

fn registered_names<BB: Backend>() -> Vec<String> {
    let registry = REGISTRY.read().unwrap_or_else(|e| e.into_inner());
    let mut names: Vec<String> = registry
        .keys()
        .filter(|(_, backend)| *backend == TypeId::of::<BB>())
        .map(|(name, _)| name.clone())
        .collect();
    names.sort();
    names
}

/// Anisotropic total variation as Geiping et al. implement it:
/// TV(x) = mean |x[…, i+1, j] − x[…, i, j]| + mean |x[…, i, j+1] − x[…, i, j]|.
/// A dimension of size 1 contributes nothing.
pub fn total_variation<BB: Backend>(images: Tensor<BB, 4>) -> Tensor<BB, 1> {
    let [_, _, h, w] = images.dims();
    let device = images.device();
    let mut tv = Tensor::<BB, 1>::zeros([1], float_options::<BB>(&device));
    if h > 1 {
        let dy = images.clone().narrow(2, 1, h - 1) - images.clone().narrow(2, 0, h - 1);
        tv = tv + dy.abs().mean();
    }
    if w > 1 {
        let dx = images.clone().narrow(3, 1, w - 1) - images.narrow(3, 0, w - 1);
        tv = tv + dx.abs().mean();
    }
    tv
}

/// [`total_variation`] of each image of the batch on its own, `[batch]`: the means run over
/// one image's differences.
pub(crate) fn total_variation_per_sample<BB: Backend>(images: Tensor<BB, 4>) -> Tensor<BB, 1> {
    let [batch, _, h, w] = images.dims();
    let device = images.device();
    let mean_of_each =
        |t: Tensor<BB, 4>| t.reshape([batch as i32, -1]).mean_dim(1).reshape([batch]);
    let mut tv = Tensor::<BB, 1>::zeros([batch], float_options::<BB>(&device));
    if h > 1 {
        let dy = images.clone().narrow(2, 1, h - 1) - images.clone().narrow(2, 0, h - 1);
        tv = tv + mean_of_each(dy.abs());
    }
    if w > 1 {
        let dx = images.clone().narrow(3, 1, w - 1) - images.narrow(3, 0, w - 1);
        tv = tv + mean_of_each(dx.abs());
    }
    tv
}

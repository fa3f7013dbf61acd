//! `cargo xtask attack --gradients FILE --weights FILE`: attack a gradient captured elsewhere.
//!
//! The weights file names the architecture in its safetensors header: `privrl.model`
//! (`multimodal`, `cnn` or `mlp`) and `privrl.config` (the network's Burn config as JSON:
//! `MultimodalNetConfig`, `ConvNetConfig` or `MlpConfig`); both files hold one float32 tensor
//! per parameter, named by its Burn path, in Burn's layout (see `privrl_attacks`' `io`).
//! `bench/pytorch/export_gradient.py` writes such a pair from a PyTorch model.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use burn::tensor::backend::Backend;
use privrl_agents::{ConvNetConfig, MlpConfig, MultimodalNetConfig};
use privrl_attacks::{
    attack, read_metadata, InvertibleModel, Outer, Reconstruction, Victim, VictimKind,
};
use serde::de::DeserializeOwned;

use super::method::Method;
use super::model_job::ModelArg;
use super::plan::InversionPlan;
use crate::backend::BackendTask;

/// Header key of the network kind.
pub const MODEL_KEY: &str = "privrl.model";
/// Header key of the network's config (JSON).
pub const CONFIG_KEY: &str = "privrl.config";

/// The architecture a weights file declares.
#[derive(Debug, Clone)]
pub(crate) struct DeclaredModel {
    pub(crate) model: ModelArg,
    pub(crate) config: String,
}

/// Reads [`MODEL_KEY`] and [`CONFIG_KEY`] from the header of `weights`.
pub(crate) fn declared_model(weights: &Path) -> Result<DeclaredModel> {
    let metadata = read_metadata(weights)?;
    let get = |key: &str| {
        metadata.get(key).cloned().with_context(|| {
            format!(
                "{}: the header has no `{key}`; the weights file must name its architecture \
                 (see bench/pytorch/export_gradient.py)",
                weights.display()
            )
        })
    };
    let model = match get(MODEL_KEY)?.as_str() {
        "multimodal" => ModelArg::Multimodal,
        "cnn" => ModelArg::Cnn,
        "mlp" => ModelArg::Mlp,
        other => anyhow::bail!(
            "{}: `{MODEL_KEY}` is `{other}`; expected multimodal, cnn or mlp",
            weights.display()
        ),
    };
    Ok(DeclaredModel {
        model,
        config: get(CONFIG_KEY)?,
    })
}

/// The header of a weights file for `model` with `config`.
pub fn model_metadata(model: ModelArg, config: &impl serde::Serialize) -> HashMap<String, String> {
    HashMap::from([
        (MODEL_KEY.to_string(), model.slug().to_string()),
        (
            CONFIG_KEY.to_string(),
            serde_json::to_string(config).expect("a config serialises"),
        ),
    ])
}

/// One attack on a gradient file.
pub(crate) struct GradientFileJob {
    pub(crate) plan: InversionPlan,
    pub(crate) method: Method,
    pub(crate) declared: DeclaredModel,
    pub(crate) weights: PathBuf,
    pub(crate) gradients: PathBuf,
}

fn parse<C: DeserializeOwned>(declared: &DeclaredModel, weights: &Path) -> Result<C> {
    serde_json::from_str(&declared.config).with_context(|| {
        format!(
            "{}: `{CONFIG_KEY}` is not a {} config",
            weights.display(),
            declared.model.slug()
        )
    })
}

impl GradientFileJob {
    fn attack<B: Backend, M: InvertibleModel<Outer<B>>>(
        &self,
        net: M,
        kind: VictimKind,
        device: &B::Device,
    ) -> Result<Reconstruction> {
        let victim = Victim::<B, M>::new(net, kind, device)?.with_weights_file(&self.weights)?;
        let record = victim.load_gradient(&self.gradients)?;
        let config =
            self.method
                .attack_config(self.plan.iterations, self.plan.seed, self.plan.tv_weight);
        Ok(attack(&victim, &record, &config)?)
    }
}

impl BackendTask for GradientFileJob {
    type Output = Reconstruction;

    fn run<B: Backend>(self, device: B::Device) -> Result<Reconstruction> {
        let kind = self.method.victim_kind(self.plan.entropy_weight);
        // The weights file replaces every parameter; the seed only fills them first.
        let mut rng = <rand_chacha::ChaCha8Rng as rand::SeedableRng>::seed_from_u64(0);
        match self.declared.model {
            ModelArg::Multimodal => {
                let config: MultimodalNetConfig = parse(&self.declared, &self.weights)?;
                self.attack::<B, _>(config.init::<Outer<B>>(&device, &mut rng), kind, &device)
            }
            ModelArg::Cnn => {
                let config: ConvNetConfig = parse(&self.declared, &self.weights)?;
                self.attack::<B, _>(config.init::<Outer<B>>(&device, &mut rng), kind, &device)
            }
            ModelArg::Mlp => {
                let config: MlpConfig = parse(&self.declared, &self.weights)?;
                self.attack::<B, _>(config.init::<Outer<B>>(&device, &mut rng), kind, &device)
            }
        }
    }
}

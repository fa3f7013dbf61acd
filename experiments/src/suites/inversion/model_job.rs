//! An attack on any of privrl's three victim networks (the multimodal network, the image-only
//! CNN, the MLP on vector states) over given samples: the user's own (`--samples-dir`) or the
//! rooms' with the parts the network reads.

use anyhow::Result;
use burn::tensor::backend::Backend;
use clap::ValueEnum;
use privrl_agents::{Activation, ConvEncoderConfig, ConvNetConfig, MlpConfig, MultimodalNetConfig};
use privrl_attacks::{
    evaluate_defended_batch_inversion, ImageNormalisation, InversionRow, InvertibleModel, Outer,
    Sample, Victim,
};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde::Serialize;

use super::method::Method;
use super::plan::{InversionPlan, VictimWidth};
use super::samples_dir::UserSamples;
use crate::backend::BackendTask;

/// The victim network of `cargo xtask attack`.
#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum ModelArg {
    /// privrl's multimodal network (the paper's victim): a strided conv encoder per image,
    /// Dense layers over the vector state, a Dense head. Needs a vector state.
    Multimodal,
    /// An image-only CNN: a strided conv encoder and a Dense head over the colour image, or
    /// over the depth image where the samples have no colour image; the other parts are not
    /// read.
    Cnn,
    /// An MLP (64 ReLU units) on the vector state alone; images are not read.
    Mlp,
}

impl ModelArg {
    /// Which parts (colour, depth, vector) the network reads from samples that have `have`.
    pub(crate) fn parts_read(
        self,
        (rgb, depth, vector): (bool, bool, bool),
    ) -> Result<(bool, bool, bool)> {
        match self {
            ModelArg::Multimodal => {
                anyhow::ensure!(
                    vector,
                    "--model multimodal needs a vector state in every sample; use --model cnn \
                     for images alone"
                );
                Ok((rgb, depth, true))
            }
            ModelArg::Cnn => {
                anyhow::ensure!(
                    rgb || depth,
                    "--model cnn needs an image in every sample; use --model mlp for vectors"
                );
                Ok((rgb, depth && !rgb, false))
            }
            ModelArg::Mlp => {
                anyhow::ensure!(vector, "--model mlp needs a vector state in every sample");
                Ok((false, false, true))
            }
        }
    }

    pub(crate) fn slug(self) -> &'static str {
        match self {
            ModelArg::Multimodal => "multimodal",
            ModelArg::Cnn => "cnn",
            ModelArg::Mlp => "mlp",
        }
    }
}

/// The normalisation of [`super::paper_normalisation`] by the parts present: brightest pixel
/// with a colour image, clamping otherwise.
pub(crate) fn normalisation_for(samples: &UserSamples) -> ImageNormalisation {
    match samples.rgb_size {
        Some(_) => ImageNormalisation::BrightestPixel,
        None => ImageNormalisation::Clamp,
    }
}

/// One attack on `model` over `samples` (already reduced to the parts it reads).
pub(crate) struct ModelJob {
    pub(crate) plan: InversionPlan,
    pub(crate) method: Method,
    pub(crate) model: ModelArg,
    pub(crate) samples: UserSamples,
    pub(crate) actions: usize,
    pub(crate) width: VictimWidth,
    pub(crate) batch_size: usize,
}

impl ModelJob {
    fn evaluate<B: Backend, M: InvertibleModel<Outer<B>>>(
        &self,
        victim: Victim<B, M>,
    ) -> Result<Vec<InversionRow>> {
        let config =
            self.method
                .attack_config(self.plan.iterations, self.plan.seed, self.plan.tv_weight);
        Ok(evaluate_defended_batch_inversion(
            &victim,
            &self.samples.samples,
            &config,
            normalisation_for(&self.samples),
            &privrl_privacy::GradientMechanismConfig::None,
            &mut ChaCha8Rng::seed_from_u64(0),
            self.batch_size,
        )?)
    }
}

impl BackendTask for ModelJob {
    type Output = Vec<InversionRow>;

    fn run<B: Backend>(self, device: B::Device) -> Result<Vec<InversionRow>> {
        let kind = self.method.victim_kind(self.plan.entropy_weight);
        let seed = self.plan.seed;
        let s = &self.samples;
        let encoder = |channels, size| {
            ConvEncoderConfig::new(channels, size).with_channels(self.width.channels())
        };
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        match self.model {
            ModelArg::Multimodal => {
                let config = MultimodalNetConfig::new(s.vector_len, self.actions)
                    .with_rgb(s.rgb_size.map(|size| encoder(3, size)))
                    .with_depth(s.depth_size.map(|size| encoder(1, size)));
                self.evaluate(Victim::<B>::from_seed(&config, kind, seed, &device)?)
            }
            ModelArg::Cnn => {
                let image = s
                    .rgb_size
                    .map(|size| encoder(3, size))
                    .or(s.depth_size.map(|size| encoder(1, size)))
                    .ok_or_else(|| anyhow::anyhow!("--model cnn needs an image"))?;
                let net =
                    ConvNetConfig::new(image, self.actions).init::<Outer<B>>(&device, &mut rng);
                self.evaluate(Victim::new(net, kind, &device)?)
            }
            ModelArg::Mlp => {
                let net = MlpConfig::new(s.vector_len, vec![64], self.actions)
                    .with_activation(Activation::Relu)
                    .init::<Outer<B>>(&device, &mut rng);
                self.evaluate(Victim::new(net, kind, &device)?)
            }
        }
    }
}

/// The room samples as [`UserSamples`], named `room<i>`.
pub(crate) fn room_user_samples(samples: Vec<Sample>, size: usize) -> UserSamples {
    let first = samples.first();
    UserSamples {
        names: (0..samples.len()).map(|i| format!("room{i}")).collect(),
        rgb_size: first.and_then(|s| s.rgb.as_ref()).map(|_| size),
        depth_size: first.and_then(|s| s.depth.as_ref()).map(|_| size),
        vector_len: first.map_or(0, |s| s.vector.len()),
        samples,
        drawn: Vec::new(),
    }
}

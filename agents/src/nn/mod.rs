//! Network building blocks shared by agents and attacks.
//!
//! Every layer here is twice differentiable under `Autodiff<Autodiff<B>>`, so the gradient
//! inversion attacks can differentiate a weight gradient with respect to the input. That rules
//! out `burn::nn::Linear` (its fused `linear` op has a backward that cannot be differentiated
//! again) and pooling; see `docs/architecture.md`, "Burn 0.21, pinned".
//!
//! Parameters are drawn from a caller-supplied RNG rather than the backend's global one, so the
//! same seed gives the same weights on every backend and in every thread.

mod activation;
mod conv;
mod conv_net;
mod dense;
mod mlp;
mod multimodal;
#[cfg(feature = "ndarray")]
mod ndarray_tanh;
mod params;

pub use self::activation::{fast_tanh, Activation};
pub use self::conv::{
    conv2d_im2col, im2col, Conv2dLayer, Conv2dLayerConfig, Conv2dLayerRecord, ConvEncoder,
    ConvEncoderConfig, ConvEncoderRecord,
};
pub use self::conv_net::{ConvNet, ConvNetConfig, ConvNetRecord};
pub use self::dense::{matmul_by_row_blocks, Dense, DenseConfig, DenseRecord};
pub use self::mlp::{Mlp, MlpConfig, MlpRecord};
pub use self::multimodal::{
    ImageShape, LinearInputs, MultimodalNet, MultimodalNetConfig, MultimodalNetRecord,
};

//! The optimizer an agent steps its networks with: Adam (PyTorch's defaults) or plain SGD
//! (the PGC aggregator's θ ← θ − η·ḡ, eq. 22), behind one type so that configs can choose.

use std::path::Path;

use burn::config::Config;
use burn::module::AutodiffModule;
use burn::optim::adaptor::OptimizerAdaptor;
use burn::optim::{Adam, AdamConfig, GradientsParams, Optimizer, Sgd, SgdConfig};
use burn::tensor::backend::AutodiffBackend;

use crate::agent::{load_record, save_record};
use crate::error::AgentError;

/// Which update rule to use.
#[derive(Config, Debug, Copy, PartialEq, Eq)]
pub enum OptimizerKind {
    /// Adam with β = (0.9, 0.999) and ε = 1e-8, as `torch.optim.Adam` (Burn's default ε is
    /// 1e-5; we use PyTorch's so that learning rates carry over).
    Adam,
    /// Plain stochastic gradient descent, θ ← θ − η g.
    Sgd,
}

/// PyTorch's Adam ε.
pub const ADAM_EPSILON: f32 = 1e-8;

/// An optimizer for the module type `M`.
#[derive(Clone)]
pub enum AgentOptimizer<M: AutodiffModule<B>, B: AutodiffBackend> {
    /// Adam.
    Adam(OptimizerAdaptor<Adam, M, B>),
    /// SGD.
    Sgd(OptimizerAdaptor<Sgd<B::InnerBackend>, M, B>),
}

impl<M: AutodiffModule<B>, B: AutodiffBackend> AgentOptimizer<M, B> {
    /// A fresh optimizer with no state.
    pub fn new(kind: OptimizerKind) -> Self {
        match kind {
            OptimizerKind::Adam => Self::Adam(AdamConfig::new().with_epsilon(ADAM_EPSILON).init()),
            OptimizerKind::Sgd => Self::Sgd(SgdConfig::new().init()),
        }
    }

    /// Applies `grads` to `module` with learning rate `lr` and returns the updated module.
    pub fn step(&mut self, lr: f64, module: M, grads: GradientsParams) -> M {
        match self {
            Self::Adam(optim) => optim.step(lr, module, grads),
            Self::Sgd(optim) => optim.step(lr, module, grads),
        }
    }

    /// Saves the optimizer state to `dir/name.mpk`.
    pub fn save(&self, dir: &Path, name: &str) -> Result<(), AgentError> {
        match self {
            Self::Adam(optim) => save_record::<B, _>(optim.to_record(), dir, name),
            Self::Sgd(optim) => save_record::<B, _>(optim.to_record(), dir, name),
        }
    }

    /// Loads the state written by [`AgentOptimizer::save`].
    pub fn load(self, dir: &Path, name: &str, device: &B::Device) -> Result<Self, AgentError> {
        Ok(match self {
            Self::Adam(optim) => {
                Self::Adam(optim.load_record(load_record::<B, _>(dir, name, device)?))
            }
            Self::Sgd(optim) => {
                Self::Sgd(optim.load_record(load_record::<B, _>(dir, name, device)?))
            }
        })
    }
}

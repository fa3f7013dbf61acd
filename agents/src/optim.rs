//! The optimizer an agent steps its networks with: Adam (PyTorch's defaults) or plain SGD
//! (the PGC aggregator's θ ← θ − η·ḡ, eq. 22), behind one type so that configs can choose.

use std::path::Path;

use burn::config::Config;
use burn::module::{AutodiffModule, Module, ModuleMapper, Param};
use burn::optim::adaptor::OptimizerAdaptor;
use burn::optim::record::AdaptorRecord;
use burn::optim::{Adam, AdamConfig, GradientsParams, Optimizer, Sgd, SgdConfig, SimpleOptimizer};
use burn::tensor::backend::AutodiffBackend;
use burn::tensor::Tensor;

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

    /// Applies `grads` to `module` with learning rate `lr` and returns the updated module, in an
    /// autodiff section (it makes the module's fresh leaves; see [`crate::autodiff`]).
    pub fn step(&mut self, lr: f64, module: M, grads: GradientsParams) -> M {
        crate::autodiff::exclusive(|| match self {
            Self::Adam(optim) => optim.step(lr, module, grads),
            Self::Sgd(optim) => optim.step(lr, module, grads),
        })
    }

    /// Applies `grads` (gradients of the inner backend, keyed by parameter id) to `module`, the
    /// untracked copy of an `M` (`M::valid()`), with the rule and the per-parameter state that
    /// [`AgentOptimizer::step`] uses, so the two can alternate on one network. Touches no
    /// autodiff graph, so it needs no section: PPO trains its critic this way beside the
    /// actor's graph.
    pub fn step_untracked(
        &mut self,
        lr: f64,
        module: M::InnerModule,
        grads: &mut GradientsParams,
    ) -> M::InnerModule {
        match self {
            Self::Adam(optim) => step_inner_module::<B, M, _>(optim, lr, module, grads),
            Self::Sgd(optim) => step_inner_module::<B, M, _>(optim, lr, module, grads),
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

/// One step of `adaptor`'s rule on an inner module, with `adaptor`'s state: what Burn's
/// `OptimizerAdaptor::step` does for each parameter of a tracked module, minus the unwrapping.
fn step_inner_module<B, M, O>(
    adaptor: &mut OptimizerAdaptor<O, M, B>,
    lr: f64,
    module: M::InnerModule,
    grads: &mut GradientsParams,
) -> M::InnerModule
where
    B: AutodiffBackend,
    M: AutodiffModule<B>,
    O: SimpleOptimizer<B::InnerBackend>,
{
    /// Burn's record: the state per parameter id.
    type Records<O, M, B> = <OptimizerAdaptor<O, M, B> as Optimizer<M, B>>::Record;
    struct Stepper<'a, B, M, O>
    where
        B: AutodiffBackend,
        M: AutodiffModule<B>,
        O: SimpleOptimizer<B::InnerBackend>,
    {
        optim: &'a O,
        records: &'a mut Records<O, M, B>,
        grads: &'a mut GradientsParams,
        lr: f64,
    }
    impl<B, M, O> ModuleMapper<B::InnerBackend> for Stepper<'_, B, M, O>
    where
        B: AutodiffBackend,
        M: AutodiffModule<B>,
        O: SimpleOptimizer<B::InnerBackend>,
    {
        fn map_float<const D: usize>(
            &mut self,
            param: Param<Tensor<B::InnerBackend, D>>,
        ) -> Param<Tensor<B::InnerBackend, D>> {
            let (id, tensor, mapper) = param.consume();
            let Some(grad) = self.grads.remove::<B::InnerBackend, D>(id) else {
                return Param::from_mapped_value(id, tensor, mapper);
            };
            let state = self.records.remove(&id).map(|record| record.into_state());
            let (tensor, state) = self.optim.step(self.lr, tensor, grad, state);
            if let Some(state) = state {
                self.records
                    .insert(id, AdaptorRecord::<O, B>::from_state(state));
            }
            Param::from_mapped_value(id, tensor, mapper)
        }
    }
    let mut records = adaptor.to_record();
    let optim = adaptor.optim().clone();
    let module = module.map(&mut Stepper::<B, M, O> {
        optim: &optim,
        records: &mut records,
        grads,
        lr,
    });
    *adaptor = adaptor.clone().load_record(records);
    module
}

/// Adam on a flat parameter vector, with the same update as [`OptimizerKind::Adam`] (PyTorch's
/// β = (0.9, 0.999), ε = 1e-8, bias correction). The PGC aggregator holds θ as a flat vector
/// and checkpoints it as JSON after every update, so its optimizer state must be plain data
/// too, which Burn's module-bound Adam record is not. Tested against Burn's Adam.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct FlatAdam {
    /// Steps taken t.
    pub steps: u64,
    /// First-moment estimate m.
    pub first_moment: Vec<f32>,
    /// Second-moment estimate v.
    pub second_moment: Vec<f32>,
}

impl FlatAdam {
    const BETA_1: f64 = 0.9;
    const BETA_2: f64 = 0.999;

    /// θ ← θ − lr · m̂ / (√v̂ + ε) for `gradient` g (moments start at zero on the first step).
    pub fn step(&mut self, theta: &mut [f32], gradient: &[f32], lr: f64) {
        debug_assert_eq!(theta.len(), gradient.len());
        if self.first_moment.len() != theta.len() {
            self.first_moment = vec![0.0; theta.len()];
            self.second_moment = vec![0.0; theta.len()];
        }
        self.steps += 1;
        let t = self.steps as i32;
        let correction_1 = 1.0 - Self::BETA_1.powi(t);
        let correction_2 = 1.0 - Self::BETA_2.powi(t);
        let moments = self.first_moment.iter_mut().zip(&mut self.second_moment);
        for ((x, &g), (m, v)) in theta.iter_mut().zip(gradient).zip(moments) {
            let g = f64::from(g);
            *m = (Self::BETA_1 * f64::from(*m) + (1.0 - Self::BETA_1) * g) as f32;
            *v = (Self::BETA_2 * f64::from(*v) + (1.0 - Self::BETA_2) * g * g) as f32;
            let m_hat = f64::from(*m) / correction_1;
            let v_hat = f64::from(*v) / correction_2;
            *x = (f64::from(*x) - lr * m_hat / (v_hat.sqrt() + f64::from(ADAM_EPSILON))) as f32;
        }
    }
}

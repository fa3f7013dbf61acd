//! What a traced forward records: each layer's input and a zero probe on its output.

use std::fmt;

use burn::module::{Module, ParamId};
use burn::tensor::backend::AutodiffBackend;
use burn::tensor::Tensor;

use crate::error::EngineError;
use crate::tensor::float_options;

use super::traced::Part;

/// A layer whose per-sample gradients follow from its input activations a and the backprops δ
/// at its output (Opacus' grad samplers). Implemented for Burn's [`Linear`](burn::nn::Linear) and [`Conv2d`](burn::nn::conv::Conv2d)
/// and privrl's [`Dense`](crate::Dense).
pub trait GradSampleLayer<B: AutodiffBackend, const D: usize>: Module<B> + 'static {
    /// The layer's ordinary forward.
    fn forward_layer(&self, x: Tensor<B, D>) -> Tensor<B, D>;

    /// Every parameter's per-sample gradients `[batch, numel]` (row-major in the parameter's
    /// shape) from the activations `[batch, ...]` and the backprops `[batch, ...]`.
    #[allow(clippy::type_complexity)]
    fn grad_samples(
        &self,
        activations: Tensor<B::InnerBackend, D>,
        backprops: Tensor<B::InnerBackend, D>,
    ) -> Result<Vec<(ParamId, Tensor<B::InnerBackend, 2>)>, EngineError>;

    /// For a layer z = a W + b (W `[d_in, d_out]`): the ids of W and b, so that on `[batch, d]`
    /// inputs the engine clips from the factors a and δ without materialising ∇W_i = a_iᵀ δ_i.
    /// `None` (the default): always materialised through [`GradSampleLayer::grad_samples`].
    fn linear_ids(&self) -> Option<(ParamId, Option<ParamId>)> {
        None
    }
}

/// Records what [`Traced`](crate::dp::Traced) needs during a forward: each traced layer's input and a probe on its
/// output. [`Tape::off`] records nothing: the forward is the ordinary one.
pub struct Tape<B: AutodiffBackend> {
    recording: bool,
    pub(super) entries: Vec<Box<dyn TapeEntry<B>>>,
}

impl<B: AutodiffBackend> fmt::Debug for Tape<B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tape")
            .field("recording", &self.recording)
            .field("layers", &self.entries.len())
            .finish()
    }
}

impl<B: AutodiffBackend> Tape<B> {
    /// A tape that records nothing: [`Tape::trace`] is the layer's plain forward.
    pub fn off() -> Self {
        Self {
            recording: false,
            entries: Vec::new(),
        }
    }

    pub(super) fn recording() -> Self {
        Self {
            recording: true,
            entries: Vec::new(),
        }
    }

    /// `layer.forward(x)`, recording (when the tape is on) the input and a zero probe added to
    /// the output. The layer's own parameters are not tracked on a recording tape: their
    /// per-sample gradients come from the activations and the probe's gradient.
    pub fn trace<L, const D: usize>(&mut self, layer: &L, x: Tensor<B, D>) -> Tensor<B, D>
    where
        L: GradSampleLayer<B, D>,
    {
        if !self.recording {
            return layer.forward_layer(x);
        }
        let activations = x.clone().inner();
        let output = layer.clone().no_grad().forward_layer(x);
        let probe = Tensor::<B, D>::zeros(output.dims(), float_options::<B>(&output.device()))
            .require_grad();
        self.entries.push(Box::new(Probe {
            layer: layer.clone(),
            activations,
            probe: probe.clone(),
        }));
        output + probe
    }
}

pub(super) trait TapeEntry<B: AutodiffBackend>: Send {
    fn part(&self, grads: &B::Gradients) -> Result<Part<B>, EngineError>;
}

struct Probe<B: AutodiffBackend, L, const D: usize> {
    layer: L,
    activations: Tensor<B::InnerBackend, D>,
    probe: Tensor<B, D>,
}

impl<B: AutodiffBackend, L: GradSampleLayer<B, D>, const D: usize> TapeEntry<B> for Probe<B, L, D> {
    fn part(&self, grads: &B::Gradients) -> Result<Part<B>, EngineError> {
        // No path from this layer to the loss: its backprops are zero.
        let backprops = self.probe.grad(grads).unwrap_or_else(|| {
            Tensor::zeros(
                self.probe.dims(),
                float_options::<B::InnerBackend>(&self.activations.device()),
            )
        });
        match self.layer.linear_ids() {
            Some((weight, bias)) if D == 2 => {
                let [batch, d_in] = [self.activations.dims()[0], self.activations.dims()[1]];
                let d_out = backprops.dims()[1];
                Ok(Part::Linear {
                    weight,
                    bias,
                    activations: self.activations.clone().reshape([batch, d_in]),
                    backprops: backprops.reshape([batch, d_out]),
                })
            }
            _ => Ok(Part::Rows(
                self.layer
                    .grad_samples(self.activations.clone(), backprops)?,
            )),
        }
    }
}

//! The [`Network`] trait: what an agent needs from a network, so that PPO, DQN, REINFORCE and
//! A3C run unchanged on an [`Mlp`] (CartPole) or a [`MultimodalNet`] (the attack victims).
//!
//! Agents feed networks flat observations, `[batch, obs_len]`, laid out as
//! `privrl_envs::Obs::write_flat` writes them (RGB, then depth, then the vector); a multimodal
//! network splits them itself.
//!
//! For acting on one observation at a time an agent asks for a [`HostMlp`], a plain-Rust copy
//! of the weights, once per policy change, instead of building a tensor per step: a
//! `(64, 64)` policy then costs a few microseconds per action.

use burn::module::{AutodiffModule, Module, ModuleMapper, Param};
use burn::optim::GradientsParams;
use burn::tensor::backend::{AutodiffBackend, Backend};
use burn::tensor::{Tensor, TensorData};
use rand::Rng;

use crate::nn::{Activation, Mlp, MultimodalNet};
use crate::tensor::float_options;

/// A network that maps flat observations to one output row per observation (logits,
/// Q-values or a value).
pub trait Network<B: Backend>: Module<B> + Sync {
    /// Values per flattened observation.
    fn obs_len(&self) -> usize;

    /// Output features.
    fn d_output(&self) -> usize;

    /// `[batch, obs_len] -> [batch, d_output]`, without dropout.
    fn forward_flat(&self, obs: Tensor<B, 2>) -> Tensor<B, 2>;

    /// Dropout probability and the widths of the layers it follows; `None` without dropout.
    fn dropout(&self) -> Option<(f64, Vec<usize>)> {
        None
    }

    /// Like [`Network::forward_flat`], with one dropout mask per entry of
    /// [`Network::dropout`]'s widths (`[batch, width]`, entries 0 or 1/(1−p)).
    fn forward_flat_masked(&self, obs: Tensor<B, 2>, masks: &[Tensor<B, 2>]) -> Tensor<B, 2> {
        let _ = masks;
        self.forward_flat(obs)
    }

    /// A host copy for fast single-observation inference, if this network has one.
    fn host_copy(&self) -> Option<HostMlp> {
        None
    }

    /// The mean squared error of the first output against `targets` and its gradient by
    /// parameter id, computed without autodiff ([`Mlp::squared_error_gradient`]), or `None`
    /// where the network has no hand-written backward. PPO trains its critic through this
    /// outside autodiff sections, beside the actor's graph, and through autodiff otherwise.
    fn squared_error_gradient(
        &self,
        obs: Tensor<B, 2>,
        targets: Tensor<B, 1>,
    ) -> Option<(f64, GradientsParams)> {
        let _ = (obs, targets);
        None
    }
}

/// A [`Network`] that an agent can train: an autodiff module whose inner (no-autodiff) module
/// is a network too, so that rollouts run without building a graph.
pub trait TrainableNetwork<B: AutodiffBackend>:
    Network<B> + AutodiffModule<B, InnerModule: Network<B::InnerBackend>>
{
}

impl<B, N> TrainableNetwork<B> for N
where
    B: AutodiffBackend,
    N: Network<B> + AutodiffModule<B>,
    N::InnerModule: Network<B::InnerBackend>,
{
}

impl<B: Backend> Network<B> for Mlp<B> {
    fn obs_len(&self) -> usize {
        self.d_input()
    }

    fn d_output(&self) -> usize {
        Mlp::d_output(self)
    }

    fn forward_flat(&self, obs: Tensor<B, 2>) -> Tensor<B, 2> {
        self.forward_with_masks(obs, &[])
    }

    fn dropout(&self) -> Option<(f64, Vec<usize>)> {
        let p = self.dropout_probability();
        (p > 0.0).then(|| (p, self.hidden_widths()))
    }

    fn forward_flat_masked(&self, obs: Tensor<B, 2>, masks: &[Tensor<B, 2>]) -> Tensor<B, 2> {
        self.forward_with_masks(obs, masks)
    }

    fn host_copy(&self) -> Option<HostMlp> {
        Some(HostMlp::from_mlp(self))
    }

    fn squared_error_gradient(
        &self,
        obs: Tensor<B, 2>,
        targets: Tensor<B, 1>,
    ) -> Option<(f64, GradientsParams)> {
        Some(Mlp::squared_error_gradient(self, obs, targets))
    }
}

impl<B: Backend> Network<B> for MultimodalNet<B> {
    fn obs_len(&self) -> usize {
        self.flat_obs_len()
    }

    fn d_output(&self) -> usize {
        MultimodalNet::d_output(self)
    }

    fn forward_flat(&self, obs: Tensor<B, 2>) -> Tensor<B, 2> {
        let (rgb, depth, vector) = self.split_flat(obs);
        self.forward(rgb, depth, vector)
    }
}

/// `M::from_inner(inner)` with every float parameter tracked. Burn keeps a parameter's
/// "tracked" flag through `valid()` but drops it on `clone()` and on every map of the inner
/// module (it re-reads the flag from the untracked tensor), so a round trip through the inner
/// module, such as PPO's untracked critic steps, would come back frozen. Every network here
/// trains all its parameters. Marks leaves in the graph registry: call it inside an autodiff
/// section.
pub fn trainable_from_inner<B: AutodiffBackend, M: AutodiffModule<B>>(inner: M::InnerModule) -> M {
    struct Track;
    impl<B: AutodiffBackend> ModuleMapper<B> for Track {
        fn map_float<const D: usize>(&mut self, param: Param<Tensor<B, D>>) -> Param<Tensor<B, D>> {
            let (id, tensor, mapper) = param.consume();
            let tensor = if tensor.is_require_grad() {
                tensor
            } else {
                tensor.require_grad()
            };
            Param::from_mapped_value(id, tensor, mapper)
        }
    }
    M::from_inner(inner).map(&mut Track)
}

/// A plain-Rust copy of an [`Mlp`]'s weights for single-observation inference.
#[derive(Debug, Clone, PartialEq)]
pub struct HostMlp {
    /// `(weight [d_in × d_out] row-major, bias or empty, d_in, d_out)` per layer.
    layers: Vec<(Vec<f32>, Vec<f32>, usize, usize)>,
    activation: Activation,
}

fn host_values<B: Backend, const D: usize>(tensor: Tensor<B, D>) -> Vec<f32> {
    tensor
        .into_data()
        .convert::<f32>()
        .into_vec::<f32>()
        .expect("float tensor data")
}

impl HostMlp {
    /// Copies the weights of `mlp` to the host in one transfer: every parameter flattened into
    /// one new tensor, then split here. Reading each parameter on its own costs far more on
    /// burn-ndarray, where a parameter's array is shared with the module and is then copied
    /// element by element through a dynamic-rank iterator (≈ 0.4 ms for DQN's 17k weights,
    /// which an ε-greedy DQN that trains at every step paid at every greedy step); on a GPU
    /// it is one read-back instead of one per parameter.
    pub fn from_mlp<B: Backend>(mlp: &Mlp<B>) -> Self {
        let flat: Vec<Tensor<B, 1>> = mlp
            .layers
            .iter()
            .flat_map(|layer| {
                let weight = layer.weight.val().flatten::<1>(0, 1);
                let bias = layer.bias.as_ref().map(|b| b.val());
                std::iter::once(weight).chain(bias)
            })
            .collect();
        let values = if flat.is_empty() {
            Vec::new()
        } else {
            host_values(Tensor::cat(flat, 0))
        };
        let mut rest = values.as_slice();
        let mut take = |n: usize| {
            let (head, tail) = rest.split_at(n);
            rest = tail;
            head.to_vec()
        };
        let layers = mlp
            .layers
            .iter()
            .map(|layer| {
                let (d_in, d_out) = layer.dims();
                let weight = take(d_in * d_out);
                let bias = if layer.bias.is_some() {
                    take(d_out)
                } else {
                    Vec::new()
                };
                (weight, bias, d_in, d_out)
            })
            .collect();
        Self {
            layers,
            activation: mlp.activation,
        }
    }

    /// Input features.
    pub fn d_input(&self) -> usize {
        self.layers.first().map_or(0, |l| l.2)
    }

    /// Output features.
    pub fn d_output(&self) -> usize {
        self.layers.last().map_or(0, |l| l.3)
    }

    /// Forward pass for one observation into `out` (resized to `d_output`); `masks[i]`, if
    /// given, multiplies hidden activation `i` (the dropout masks of [`Network::dropout`]).
    pub fn forward_into(&self, x: &[f32], masks: &[Vec<f32>], out: &mut Vec<f32>) {
        let mut input: Vec<f32> = x.to_vec();
        let last = self.layers.len().saturating_sub(1);
        for (i, (weight, bias, d_in, d_out)) in self.layers.iter().enumerate() {
            let mut y = if bias.is_empty() {
                vec![0.0f32; *d_out]
            } else {
                bias.clone()
            };
            for (k, &xk) in input.iter().enumerate().take(*d_in) {
                let row = &weight[k * d_out..(k + 1) * d_out];
                for (yj, &w) in y.iter_mut().zip(row) {
                    *yj += xk * w;
                }
            }
            if i < last {
                match self.activation {
                    Activation::Tanh => y.iter_mut().for_each(|v| *v = v.tanh()),
                    Activation::Relu => y.iter_mut().for_each(|v| *v = v.max(0.0)),
                }
                if let Some(mask) = masks.get(i) {
                    y.iter_mut().zip(mask).for_each(|(v, m)| *v *= m);
                }
            }
            input = y;
        }
        *out = input;
    }

    /// Forward pass for one observation.
    pub fn forward(&self, x: &[f32]) -> Vec<f32> {
        let mut out = Vec::new();
        self.forward_into(x, &[], &mut out);
        out
    }
}

/// Draws one inverted-dropout mask: each entry is 0 with probability `p`, else 1/(1−p).
pub(crate) fn draw_dropout_mask(rng: &mut impl Rng, width: usize, p: f64) -> Vec<f32> {
    let keep = 1.0 - p;
    let scale = (1.0 / keep) as f32;
    (0..width)
        .map(|_| {
            if rng.random::<f64>() < keep {
                scale
            } else {
                0.0
            }
        })
        .collect()
}

/// Runs `net` on one flat observation: through a [`HostMlp`] if one is given, else through
/// the network on its own backend.
pub(crate) fn forward_one<B: Backend, N: Network<B>>(
    net: &N,
    host: Option<&HostMlp>,
    obs: &[f32],
    masks: &[Vec<f32>],
    device: &B::Device,
) -> Vec<f32> {
    if let Some(host) = host {
        let mut out = Vec::new();
        host.forward_into(obs, masks, &mut out);
        return out;
    }
    let x = Tensor::<B, 2>::from_data(
        TensorData::new(obs.to_vec(), [1, obs.len()]).convert::<B::FloatElem>(),
        float_options::<B>(device),
    );
    let y = if masks.is_empty() {
        net.forward_flat(x)
    } else {
        let masks: Vec<Tensor<B, 2>> = masks
            .iter()
            .map(|m| {
                Tensor::from_data(
                    TensorData::new(m.clone(), [1, m.len()]).convert::<B::FloatElem>(),
                    float_options::<B>(device),
                )
            })
            .collect();
        net.forward_flat_masked(x, &masks)
    };
    host_values(y)
}

//! Output heads: a categorical policy over discrete actions, a state-value head, a Q head,
//! and the shared-trunk actor-critic of the PGC paper.
//!
//! Every head is built from ops that are twice differentiable (`log_softmax`, products with
//! one-hot masks, sums), so the gradient inversion attacks can differentiate through them.
//! Actions select entries through one-hot masks rather than `gather`.

use burn::config::Config;
use burn::module::Module;
use burn::tensor::activation::log_softmax;
use burn::tensor::backend::Backend;
use burn::tensor::Tensor;
use rand::Rng;

use crate::network::{HostMlp, Network};
use crate::nn::{Activation, Dense, DenseConfig, Mlp};

/// Categorical policy head: a distribution over discrete actions given by logits
/// `[batch, num_actions]` (PyTorch's `Categorical(logits=...)`).
#[derive(Debug, Clone)]
pub struct Categorical<B: Backend> {
    log_probs: Tensor<B, 2>,
}

impl<B: Backend> Categorical<B> {
    /// The distribution with these logits.
    pub fn from_logits(logits: Tensor<B, 2>) -> Self {
        Self {
            log_probs: log_softmax(logits, 1),
        }
    }

    /// log π(·|s), `[batch, num_actions]`.
    pub fn log_probs(&self) -> Tensor<B, 2> {
        self.log_probs.clone()
    }

    /// π(·|s), `[batch, num_actions]`.
    pub fn probs(&self) -> Tensor<B, 2> {
        self.log_probs.clone().exp()
    }

    /// log π(a|s) of the actions given as one-hot rows, `[batch]`.
    pub fn log_prob(&self, actions_one_hot: Tensor<B, 2>) -> Tensor<B, 1> {
        (self.log_probs.clone() * actions_one_hot)
            .sum_dim(1)
            .squeeze_dim(1)
    }

    /// Entropy H(π(·|s)) = −Σ_a π(a|s) log π(a|s), `[batch]` (the PGC paper's eq. 13).
    pub fn entropy(&self) -> Tensor<B, 1> {
        (self.probs() * self.log_probs.clone())
            .sum_dim(1)
            .squeeze_dim(1)
            .neg()
    }
}

/// Value head: the single output column of a critic, `[batch, 1] -> [batch]`.
pub fn state_value<B: Backend>(output: Tensor<B, 2>) -> Tensor<B, 1> {
    output.squeeze_dim(1)
}

/// Q head: Q(s, a) of the actions given as one-hot rows, `[batch]`.
pub(crate) fn q_of_actions<B: Backend>(
    q_values: Tensor<B, 2>,
    actions_one_hot: Tensor<B, 2>,
) -> Tensor<B, 1> {
    (q_values * actions_one_hot).sum_dim(1).squeeze_dim(1)
}

/// Q head: max_a Q(s, a), `[batch]`.
pub(crate) fn max_q<B: Backend>(q_values: Tensor<B, 2>) -> Tensor<B, 1> {
    q_values.max_dim(1).squeeze_dim(1)
}

/// Softmax of one row of logits, on the host (max-subtracted, as `log_softmax` is).
pub(crate) fn host_softmax(logits: &[f32]) -> Vec<f32> {
    let max = logits.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let exps: Vec<f32> = logits.iter().map(|&l| (l - max).exp()).collect();
    let sum: f32 = exps.iter().sum();
    exps.into_iter().map(|e| e / sum).collect()
}

/// log π(a) for one row of logits, on the host.
pub(crate) fn host_log_prob(logits: &[f32], action: usize) -> f32 {
    let max = logits.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let log_sum = logits.iter().map(|&l| (l - max).exp()).sum::<f32>().ln();
    logits[action] - max - log_sum
}

/// Samples an action from probabilities that sum to one (inverse CDF with one uniform draw).
pub(crate) fn sample_categorical(probs: &[f32], rng: &mut impl Rng) -> usize {
    let u: f32 = rng.random();
    let mut cumulative = 0.0f32;
    for (a, &p) in probs.iter().enumerate() {
        cumulative += p;
        if u < cumulative {
            return a;
        }
    }
    // Rounding left the total just under u: take the last action with mass.
    probs.iter().rposition(|&p| p > 0.0).unwrap_or(0)
}

/// Index of the largest value (the first one on ties).
pub(crate) fn argmax(values: &[f32]) -> usize {
    let mut best = 0;
    for (i, &v) in values.iter().enumerate() {
        if v > values[best] {
            best = i;
        }
    }
    best
}

/// Configuration of an [`ActorCritic`].
#[derive(Config, Debug)]
pub struct ActorCriticConfig {
    /// Observation features.
    pub d_input: usize,
    /// Number of discrete actions.
    pub num_actions: usize,
    /// Widths of the shared trunk θ^(c), each followed by the activation.
    #[config(default = "vec![16]")]
    pub hidden: Vec<usize>,
    /// Non-linearity of the trunk (the PGC paper uses ReLU).
    #[config(default = "Activation::Relu")]
    pub activation: Activation,
    /// Whether the layers have biases (the PGC paper's d = 112 counts none).
    #[config(default = false)]
    pub bias: bool,
}

/// Policy and value sharing a trunk: π(·|s; θ^(c), θ^(p)) and V(s; θ^(c), θ^(v)), the
/// network of the PGC paper's A3C (section 4: a 16-unit ReLU trunk, no biases, d = 112 on
/// CartPole).
#[derive(Module, Debug)]
pub struct ActorCritic<B: Backend> {
    /// Shared layers θ^(c), each followed by the activation.
    pub trunk: Vec<Dense<B>>,
    /// Policy head θ^(p) (logits).
    pub policy: Dense<B>,
    /// Value head θ^(v).
    pub value: Dense<B>,
    /// Non-linearity of the trunk.
    #[module(skip)]
    pub activation: Activation,
}

impl ActorCriticConfig {
    /// Initialises the trunk, the policy head and the value head, in that order, from `rng`.
    pub fn init<B: Backend>(&self, device: &B::Device, rng: &mut impl Rng) -> ActorCritic<B> {
        let mut width = self.d_input;
        let mut trunk = Vec::with_capacity(self.hidden.len());
        for &h in &self.hidden {
            trunk.push(
                DenseConfig::new(width, h)
                    .with_bias(self.bias)
                    .init(device, rng),
            );
            width = h;
        }
        ActorCritic {
            trunk,
            policy: DenseConfig::new(width, self.num_actions)
                .with_bias(self.bias)
                .init(device, rng),
            value: DenseConfig::new(width, 1)
                .with_bias(self.bias)
                .init(device, rng),
            activation: self.activation,
        }
    }
}

impl<B: Backend> ActorCritic<B> {
    /// Policy logits `[batch, num_actions]` and state values `[batch]`.
    pub fn forward(&self, obs: Tensor<B, 2>) -> (Tensor<B, 2>, Tensor<B, 1>) {
        let h = self
            .trunk
            .iter()
            .fold(obs, |h, layer| self.activation.forward(layer.forward(h)));
        (
            self.policy.forward(h.clone()),
            state_value(self.value.forward(h)),
        )
    }

    /// Host copies of the policy (trunk + policy head) and the value function (trunk + value
    /// head), for fast acting.
    pub fn host_copies(&self) -> (HostMlp, HostMlp) {
        let policy = Mlp {
            layers: self
                .trunk
                .iter()
                .cloned()
                .chain([self.policy.clone()])
                .collect(),
            activation: self.activation,
            dropout: burn::nn::DropoutConfig::new(0.0).init(),
        };
        let value = Mlp {
            layers: self
                .trunk
                .iter()
                .cloned()
                .chain([self.value.clone()])
                .collect(),
            activation: self.activation,
            dropout: burn::nn::DropoutConfig::new(0.0).init(),
        };
        (HostMlp::from_mlp(&policy), HostMlp::from_mlp(&value))
    }
}

impl<B: Backend> Network<B> for ActorCritic<B> {
    fn obs_len(&self) -> usize {
        self.trunk.first().unwrap_or(&self.policy).dims().0
    }

    /// Logits followed by the value: `num_actions + 1` columns.
    fn d_output(&self) -> usize {
        self.policy.dims().1 + 1
    }

    fn forward_flat(&self, obs: Tensor<B, 2>) -> Tensor<B, 2> {
        let (logits, value) = self.forward(obs);
        Tensor::cat(vec![logits, value.unsqueeze_dim(1)], 1)
    }
}

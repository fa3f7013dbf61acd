//! The named, swappable parts that an [`crate::AttackConfig`] combines (breaching's pattern):
//! how the reconstruction's gradient is computed, how it is compared with the shared one, the
//! image prior, how the state is split into stages, and the rules that read the action off
//! the gradient. QGI, RGI, DLG and IG differ only in which parts they pick.

use burn::config::Config;
use burn::tensor::backend::Backend;
use burn::tensor::Tensor;
use privrl_agents::matmul_by_row_blocks;
use rand::Rng;

pub use crate::prior::{
    register_image_prior, total_variation, ImagePrior, ImageRegulariser, TotalVariation,
};

/// How the reconstruction's weight gradient g_rec is computed.
#[derive(Config, Debug, PartialEq)]
pub enum GradientSource {
    /// The error-direction surrogate of eq. 6, J̃(F(x_rec)) = (∇_{b_last} J(F(x), u))ᵀ F(x_rec):
    /// for a batch of one, ∇_{b_last} J = ∂J/∂y, so g_rec = ∇_w J̃ equals the true gradient when
    /// x_rec = x, and needs neither the action nor the signal (QGI, RGI).
    ErrorDirection,
    /// The objective itself, g_rec = ∇_w J(F(x_rec), u_rec) (eq. 1–2), with the action and the
    /// signal reconstructed as configured (the DLG and IG baselines of Table II).
    Objective {
        /// Where the action in J comes from.
        action: ActionRule,
        /// Where the signal in J comes from.
        signal: SignalRule,
    },
}

/// Where the action in the objective comes from.
#[derive(Config, Debug, Copy, PartialEq, Eq)]
pub enum ActionRule {
    /// Read from ∇_{b_last} before the optimisation by the config's [`ActionRecovery`] rule
    /// (iDLG's label rule, as in Inverting Gradients).
    FromBias,
    /// Optimised jointly with the state as free logits z, entering J as the soft one-hot
    /// softmax(z) (DLG's dummy label); the reconstructed action is argmax z.
    Joint,
}

/// Where the supervision signal (target Q or reward) in the objective comes from.
#[derive(Config, Debug, PartialEq)]
pub enum SignalRule {
    /// Optimised jointly with the state as one free scalar, Gaussian-initialised (DLG's and
    /// IG's dummy label, Table II).
    Joint,
    /// Known to the attacker and held fixed: a stronger threat model than the paper's (e.g.
    /// CartPole's reward is 1 at every step, so RGI's reward recovery is given away).
    Known {
        /// The signal J uses.
        value: f64,
    },
    /// The [`SignalSource`](crate::SignalSource) registered under `name`
    /// ([`register_signal_rule`](crate::register_signal_rule)); an attack whose rule is not
    /// registered is refused before it starts
    /// ([`AttackError::UnknownSignalRule`](crate::AttackError::UnknownSignalRule)).
    Registered {
        /// The name it was registered under.
        name: String,
    },
}

/// The gradient matching loss L(g_rec, g) of eq. 2.
#[derive(Config, Debug, Copy, PartialEq)]
pub enum GradientMatchingLoss {
    /// Eq. 5 (Geiping et al.): L = 1 − ⟨g_rec, g⟩ / (‖g_rec‖₂ ‖g‖₂), blind to the magnitude.
    Cosine,
    /// Eq. 5 plus a magnitude term: L = 1 − cos(g_rec, g) + μ (‖g_rec‖₂ / ‖g‖₂ − 1)².
    ///
    /// Our choice, not the paper's. Through eq. 6's surrogate g_rec equals g at the true
    /// sample in magnitude as well as direction (a batch of one, or distinct actions in a
    /// batch), so the term keeps the truth a global minimum. Eq. 5 alone leaves the scale of
    /// the linear part's input x nearly free: the layers are ReLU, so x → cx scales every
    /// weight gradient by c and leaves the bias gradients, which hold about 1/(1 + ‖x‖²) of
    /// the norm. Measured on a 64 px S1 victim, stage 1 under eq. 5 ends with features in the
    /// right direction (cosine 0.99998) but 11–14× too large, a wrong bounding box and Q off
    /// by hundreds of per cent; with μ = 0.1 the features, the box and Q̂ come back to 1e-4.
    CosineAndMagnitude {
        /// Weight μ of the magnitude term.
        weight: f64,
    },
    /// DLG (Zhu et al.): L = ‖g_rec − g‖₂².
    SquaredL2,
}

impl GradientMatchingLoss {
    /// QGI's and RGI's loss: eq. 5 with the magnitude term at μ = 0.1 (see
    /// [`GradientMatchingLoss::CosineAndMagnitude`]).
    pub fn error_direction_default() -> Self {
        GradientMatchingLoss::CosineAndMagnitude { weight: 0.1 }
    }

    /// The magnitude weight μ (0 for losses without the term).
    pub fn magnitude_weight(&self) -> f64 {
        match self {
            GradientMatchingLoss::CosineAndMagnitude { weight } => *weight,
            _ => 0.0,
        }
    }

    /// With the magnitude term's weight set to `weight`: eq. 5 alone at 0. The squared L2
    /// loss already matches the magnitude and is returned unchanged.
    pub fn with_magnitude_weight(self, weight: f64) -> Self {
        match self {
            GradientMatchingLoss::SquaredL2 => self,
            _ if weight == 0.0 => GradientMatchingLoss::Cosine,
            _ => GradientMatchingLoss::CosineAndMagnitude { weight },
        }
    }

    /// L(g_rec, g) for two flat gradients of the same length.
    pub fn loss<BB: Backend>(
        &self,
        reconstructed: Tensor<BB, 1>,
        target: Tensor<BB, 1>,
    ) -> Tensor<BB, 1> {
        self.loss_of_parts(vec![(reconstructed, target)])
    }

    /// [`Self::loss`] of the concatenations of `parts` (one `(g_rec, g)` pair per parameter),
    /// summed part by part: the attacks' gradients run to millions of entries, and
    /// concatenating them costs a copy forward and another backward.
    pub fn loss_of_parts<BB: Backend>(
        &self,
        parts: Vec<(Tensor<BB, 1>, Tensor<BB, 1>)>,
    ) -> Tensor<BB, 1> {
        self.loss_of_matched(
            parts
                .into_iter()
                .map(|(reconstructed, target)| MatchedGradient {
                    reconstructed: ReconstructedGradient::Flat(reconstructed),
                    target,
                    target_norm_sq: None,
                })
                .collect(),
        )
    }

    /// [`Self::loss_of_parts`] over parameters whose reconstructed gradients may be given by
    /// their factors ([`ReconstructedGradient::Factored`]). The cosine losses need only
    /// ⟨g_rec, g⟩, ‖g_rec‖² and ‖g‖², which the factors give without forming g_rec; the
    /// squared L2 loss forms it, since ‖g_rec‖² − 2⟨g_rec, g⟩ + ‖g‖² loses the small
    /// differences it is made of.
    pub fn loss_of_matched<BB: Backend>(&self, parts: Vec<MatchedGradient<BB>>) -> Tensor<BB, 1> {
        let total = |terms: Vec<Tensor<BB, 1>>| {
            terms
                .into_iter()
                .reduce(|a, b| a + b)
                .expect("at least one gradient")
        };
        if *self == GradientMatchingLoss::SquaredL2 {
            return total(
                parts
                    .into_iter()
                    .map(|part| {
                        let d = part.reconstructed.materialise() - part.target;
                        (d.clone() * d).sum()
                    })
                    .collect(),
            );
        }
        let (mut dot, mut rec) = (Vec::new(), Vec::new());
        let (mut target, mut target_known) = (Vec::new(), 0.0);
        for part in parts {
            match part.target_norm_sq {
                Some(norm_sq) => target_known += norm_sq,
                None => target.push((part.target.clone() * part.target.clone()).sum()),
            }
            let (d, r) = part.reconstructed.dot_and_norm_sq(part.target);
            dot.push(d);
            rec.push(r);
        }
        let dot = total(dot);
        let target = match target.is_empty() {
            true => dot.zeros_like(),
            false => total(target),
        };
        // eq. 5; the ε inside the square roots keeps the derivative finite at g_rec = 0.
        let norm_rec = (total(rec) + 1e-20).sqrt();
        let norm_target = (target + (target_known + 1e-20)).sqrt();
        self.cosine_and_magnitude(dot, norm_rec, norm_target)
    }

    /// Eq. 5 (and the magnitude term) from ⟨g_rec, g⟩, ‖g_rec‖ and ‖g‖, element by element:
    /// one value per sample in the batched attack.
    fn cosine_and_magnitude<BB: Backend>(
        &self,
        dot: Tensor<BB, 1>,
        norm_rec: Tensor<BB, 1>,
        norm_target: Tensor<BB, 1>,
    ) -> Tensor<BB, 1> {
        let cosine_loss = (dot / (norm_rec.clone() * norm_target.clone())).neg() + 1.0;
        match self {
            GradientMatchingLoss::CosineAndMagnitude { weight } => {
                let ratio = norm_rec / norm_target - 1.0;
                cosine_loss + (ratio.clone() * ratio) * *weight
            }
            _ => cosine_loss,
        }
    }

    /// L(g_rec,k, g_k) of every sample k of the batched attack, `[samples]`: each sample's
    /// reconstructed gradients against its own shared gradient, with nothing summed across
    /// samples, so that the gradient of the summed losses with respect to sample k's
    /// variables is the gradient of sample k's loss alone. `target_norm_sq[k]` is ‖g_k‖²
    /// over the matched parameters.
    pub(crate) fn loss_per_sample<BB: Backend>(
        &self,
        parts: Vec<SampleMatched<BB>>,
        target_norm_sq: &[f64],
    ) -> Tensor<BB, 1> {
        let total = |terms: Vec<Tensor<BB, 1>>| {
            terms
                .into_iter()
                .reduce(|a, b| a + b)
                .expect("at least one gradient")
        };
        let samples = target_norm_sq.len();
        if *self == GradientMatchingLoss::SquaredL2 {
            return total(
                parts
                    .into_iter()
                    .map(|part| {
                        let d = part.reconstructed.materialise() - part.target.materialise();
                        (d.clone() * d).sum_dim(1).reshape([samples])
                    })
                    .collect(),
            );
        }
        let (mut dot, mut rec) = (Vec::new(), Vec::new());
        let mut device = None;
        for part in parts {
            device.get_or_insert_with(|| part.target.device());
            let (d, r) = part.reconstructed.dot_and_norm_sq(part.target);
            dot.push(d);
            rec.push(r);
        }
        let device = device.expect("at least one gradient");
        let target: Vec<f32> = target_norm_sq.iter().map(|n| (n + 1e-20) as f32).collect();
        let norm_rec = (total(rec) + 1e-20).sqrt();
        let norm_target = privrl_agents::tensor::vector::<BB>(&target, &device).sqrt();
        self.cosine_and_magnitude(total(dot), norm_rec, norm_target)
    }
}

/// One parameter's reconstructed gradients in the batched attack, one row per sample, beside
/// the samples' own shared gradients.
pub(crate) struct SampleMatched<BB: Backend> {
    /// g_rec,k of every sample.
    pub(crate) reconstructed: SampleGradients<BB>,
    /// g_k of every sample.
    pub(crate) target: SampleTarget<BB>,
}

/// The samples' shared gradients of one parameter, formed or by their rank-one factors.
pub(crate) enum SampleTarget<BB: Backend> {
    /// `[samples, numel]` (row-major in the parameter's shape).
    Rows(Tensor<BB, 2>),
    /// g_k = u_k v_kᵀ for a `[rows, cols]` parameter: u `[samples, rows]`, v `[samples, cols]`.
    RankOne { u: Tensor<BB, 2>, v: Tensor<BB, 2> },
}

impl<BB: Backend> SampleTarget<BB> {
    fn device(&self) -> BB::Device {
        match self {
            SampleTarget::Rows(t) | SampleTarget::RankOne { u: t, .. } => t.device(),
        }
    }

    fn materialise(self) -> Tensor<BB, 2> {
        match self {
            SampleTarget::Rows(t) => t,
            SampleTarget::RankOne { u, v } => SampleGradients::Factored {
                inputs: u,
                errors: v,
            }
            .materialise(),
        }
    }
}

/// Per-sample reconstructed gradients of one parameter, formed or by their factors.
pub(crate) enum SampleGradients<BB: Backend> {
    /// `[samples, numel]`.
    Rows(Tensor<BB, 2>),
    /// A Dense layer's: sample k's gradient is a_kᵀ δ_k, from the inputs `[samples, d_in]` and
    /// the output errors `[samples, d_out]` (rank one per sample, so ‖a_kᵀ δ_k‖² =
    /// ‖a_k‖² ‖δ_k‖² and ⟨a_kᵀ δ_k, g_k⟩ = (a_k g_k) · δ_k).
    Factored {
        inputs: Tensor<BB, 2>,
        errors: Tensor<BB, 2>,
    },
}

impl<BB: Backend> SampleGradients<BB> {
    fn materialise(self) -> Tensor<BB, 2> {
        match self {
            SampleGradients::Rows(g) => g,
            SampleGradients::Factored { inputs, errors } => {
                let [samples, d_in] = inputs.dims();
                let [_, d_out] = errors.dims();
                inputs
                    .reshape([samples, d_in, 1])
                    .matmul(errors.reshape([samples, 1, d_out]))
                    .reshape([samples, d_in * d_out])
            }
        }
    }

    /// ⟨g_rec,k, g_k⟩ and ‖g_rec,k‖², `[samples]` each.
    fn dot_and_norm_sq(self, target: SampleTarget<BB>) -> (Tensor<BB, 1>, Tensor<BB, 1>) {
        let target = match (self, target) {
            // ⟨a_kᵀ δ_k, u_k v_kᵀ⟩ = (a_k · u_k)(δ_k · v_k): g_k is never read.
            (SampleGradients::Factored { inputs, errors }, SampleTarget::RankOne { u, v }) => {
                let [samples, _] = inputs.dims();
                let rows = |t: Tensor<BB, 2>| t.sum_dim(1).reshape([samples]);
                let dot = rows(inputs.clone() * u) * rows(errors.clone() * v);
                let norm_sq = rows(inputs.clone() * inputs) * rows(errors.clone() * errors);
                return (dot, norm_sq);
            }
            (gradients, target) => (gradients, target.materialise()),
        };
        let (gradients, target) = target;
        let [samples, _] = target.dims();
        let rows = |t: Tensor<BB, 2>| t.sum_dim(1).reshape([samples]);
        match gradients {
            SampleGradients::Rows(g) => (rows(g.clone() * target), rows(g.clone() * g)),
            SampleGradients::Factored { inputs, errors } => {
                let [_, d_in] = inputs.dims();
                let [_, d_out] = errors.dims();
                let projected = inputs
                    .clone()
                    .reshape([samples, 1, d_in])
                    .matmul(target.reshape([samples, d_in, d_out]))
                    .reshape([samples, d_out]);
                let dot = rows(projected * errors.clone());
                let norm_sq = rows(inputs.clone() * inputs) * rows(errors.clone() * errors);
                (dot, norm_sq)
            }
        }
    }
}

/// One parameter's reconstructed gradient beside the shared one.
#[derive(Debug, Clone)]
pub struct MatchedGradient<BB: Backend> {
    /// g_rec.
    pub reconstructed: ReconstructedGradient<BB>,
    /// g, flat (row-major in the parameter's shape).
    pub target: Tensor<BB, 1>,
    /// ‖g‖², where known in advance (it is constant over an attack).
    pub target_norm_sq: Option<f64>,
}

/// A reconstructed gradient, formed or by its factors.
#[derive(Debug, Clone)]
pub enum ReconstructedGradient<BB: Backend> {
    /// g_rec, flat.
    Flat(Tensor<BB, 1>),
    /// A Dense layer's weight gradient over a batch, g_rec = Xᵀ Δ, from the layer's inputs X
    /// `[batch, d_in]` and its output errors Δ `[batch, d_out]`. With g shaped `[d_in, d_out]`,
    /// ⟨Xᵀ Δ, g⟩ = Σ (X g) ⊙ Δ and ‖Xᵀ Δ‖² = Σ (X Xᵀ) ⊙ (Δ Δᵀ): matrix products with a
    /// `[batch, d_out]` or `[batch, batch]` result, where forming g_rec (5.9 M entries for the
    /// first head layer at 150 px) and differentiating through it costs a dozen passes over it.
    Factored {
        /// X.
        inputs: Tensor<BB, 2>,
        /// Δ.
        errors: Tensor<BB, 2>,
    },
}

impl<BB: Backend> ReconstructedGradient<BB> {
    /// g_rec, flat.
    pub fn materialise(self) -> Tensor<BB, 1> {
        match self {
            ReconstructedGradient::Flat(g) => g,
            ReconstructedGradient::Factored { inputs, errors } => {
                inputs.transpose().matmul(errors).reshape([-1])
            }
        }
    }

    /// ⟨g_rec, g⟩ and ‖g_rec‖² for a flat g.
    pub fn dot_and_norm_sq(self, target: Tensor<BB, 1>) -> (Tensor<BB, 1>, Tensor<BB, 1>) {
        match self {
            ReconstructedGradient::Flat(g) => ((g.clone() * target).sum(), (g.clone() * g).sum()),
            ReconstructedGradient::Factored { inputs, errors } => {
                let [_, d_in] = inputs.dims();
                let [_, d_out] = errors.dims();
                let target = target.reshape([d_in, d_out]);
                let dot = (matmul_by_row_blocks(inputs.clone(), target) * errors.clone()).sum();
                let gram_inputs = inputs.clone().matmul(inputs.transpose());
                let gram_errors = errors.clone().matmul(errors.transpose());
                (dot, (gram_inputs * gram_errors).sum())
            }
        }
    }
}

/// How the multimodal state is optimised.
#[derive(Config, Debug, Copy, PartialEq, Eq)]
pub enum StateOptimisation {
    /// Section IV-A and Fig. 2: stage 1 reconstructs the input of the linear part (the vector
    /// state s_c and the conv features, as free variables) from the Dense layers' gradients;
    /// stage 2 reconstructs the images from all gradients with s_c fixed at stage 1's result.
    TwoStage,
    /// The ablation of Fig. 4: images and vector optimised together against all gradients.
    Joint,
}

/// Rules that read the action off the shared gradient.
#[derive(Config, Debug, Copy, PartialEq, Eq)]
pub enum ActionRecovery {
    /// Eq. 7 (QGI): with an MSE objective only Q̂(s, a) receives an error, so ∇_{b_last} has
    /// one non-zero entry; the action is argmax_k |∇_{b_last}\[k\]|.
    LargestBiasGradient,
    /// iDLG's rule (Zhao et al.) for cross-entropy-like objectives: ∇_{b_last} = R(p − e_a)
    /// has one entry whose sign differs from all others; the action is that entry (the
    /// largest in magnitude among the minority sign).
    OddSignBiasGradient,
    /// Eq. 8 (RGI): remove the entropy term's bias gradient at p_rec, then pick the action
    /// whose policy-gradient bias gradient (at r = 1) is best aligned, |cos|, with the rest.
    /// Needs the stage-1 reconstruction (p_rec) and a REINFORCE victim.
    PolicyGradientDirection,
}

/// Learning-rate schedule of the reconstruction's optimiser.
#[derive(Config, Debug, Copy, PartialEq, Eq)]
pub enum LrSchedule {
    /// The same rate throughout.
    Constant,
    /// Geiping et al.'s MultiStepLR: ×0.1 after 3/8, 5/8 and 7/8 of the iterations.
    StepDecay,
}

impl LrSchedule {
    /// The rate at `iteration` of `iterations`.
    pub fn lr(&self, base: f64, iteration: usize, iterations: usize) -> f64 {
        match self {
            LrSchedule::Constant => base,
            LrSchedule::StepDecay => {
                let passed = [3, 5, 7]
                    .iter()
                    .filter(|&&eighths| iteration * 8 >= iterations * eighths)
                    .count();
                base * 0.1f64.powi(passed as i32)
            }
        }
    }
}

/// `len` draws from N(0, std²) (Box–Muller), the Gaussian initialisation of every free
/// variable.
pub fn gaussian_noise(len: usize, std: f64, rng: &mut impl Rng) -> Vec<f32> {
    let mut out = Vec::with_capacity(len + 1);
    while out.len() < len {
        let u1: f64 = 1.0 - rng.random::<f64>();
        let u2: f64 = rng.random::<f64>();
        let radius = (-2.0 * u1.ln()).sqrt() * std;
        let angle = 2.0 * std::f64::consts::PI * u2;
        out.push((radius * angle.cos()) as f32);
        out.push((radius * angle.sin()) as f32);
    }
    out.truncate(len);
    out
}

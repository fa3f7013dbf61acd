//! The gradient inversion loop shared by QGI, RGI, DLG and IG (eq. 2), and the attack that
//! strings its stages together with the rule-based parts (Fig. 2).
//!
//! One iteration, on `Autodiff<Autodiff<B>>`:
//! 1. lift the free variables θ (a flat tensor on `B`) to the inner autodiff and split them
//!    into the state parts (and, for DLG/IG, the action logits and the signal);
//! 2. forward the victim, build J̃ (eq. 6) or J (eq. 1), outer `backward()`: the weight
//!    gradients g_rec come back as inner-tracked tensors;
//! 3. L = L(g_rec, g) (eq. 5 or L2) + λ TV (stage 2), inner `backward()`: ∂L/∂θ;
//! 4. one Adam step on θ, on device.
//!
//! The victim module is built once and reused; the shared gradient is uploaded once.

use std::collections::HashMap;

use burn::config::Config;
use burn::module::{Module, ModuleVisitor, Param};
use burn::tensor::activation::softmax;
use burn::tensor::backend::Backend;
use burn::tensor::Tensor;
use privrl_agents::autodiff;
use privrl_agents::heads::one_hot;
use privrl_agents::per_sample::{probed_forward, PerSampleFactors};
use privrl_agents::{param_gradients, GradientRecord};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use crate::adam::TensorAdamConfig;
use crate::error::{check_non_negative, check_positive, AttackError};
use crate::parts::{
    gaussian_noise, ActionRecovery, ActionRule, GradientMatchingLoss, GradientSource, ImagePrior,
    LrSchedule, MatchedGradient, ReconstructedGradient, SignalRule, StateOptimisation,
};
use crate::recovery::{
    action_before_reconstruction, policy_gradient_recovery, q_value_from_error_magnitude,
};
use crate::victim::{head_input, host, tensor1, Inner, LinearPartInput, Outer, Victim, VictimKind};

/// An attack: the parts it combines and the optimiser's settings.
#[derive(Config, Debug)]
pub struct AttackConfig {
    /// How g_rec is computed: eq. 6's error direction (QGI, RGI) or the objective (DLG, IG).
    #[config(default = "GradientSource::ErrorDirection")]
    pub source: GradientSource,
    /// The gradient matching loss L(g_rec, g).
    #[config(default = "GradientMatchingLoss::Cosine")]
    pub matching: GradientMatchingLoss,
    /// Prior on the reconstructed images (stage 2 and the joint ablation only).
    #[config(default = "Some(ImagePrior::TotalVariation { weight: 0.1 })")]
    pub prior: Option<ImagePrior>,
    /// Two stages (linear part, then images) or the joint ablation.
    #[config(default = "StateOptimisation::TwoStage")]
    pub state: StateOptimisation,
    /// The rule that reads the action off the gradient (where a rule is used).
    #[config(default = "ActionRecovery::LargestBiasGradient")]
    pub action_recovery: ActionRecovery,
    /// Optimisation steps per stage (the paper runs 2×10⁴).
    #[config(default = 500)]
    pub iterations_per_stage: usize,
    /// Adam on the free variables.
    #[config(default = "TensorAdamConfig::new()")]
    pub optimizer: TensorAdamConfig,
    /// Learning-rate schedule within each stage.
    #[config(default = "LrSchedule::StepDecay")]
    pub schedule: LrSchedule,
    /// Each stage runs from this many Gaussian initialisations and keeps the one with the
    /// lowest final loss (Geiping et al.'s restarts; 1 is the paper's single run). Stage 1 is
    /// cheap and has local minima where a ReLU pattern of the linear part is wrong, so a few
    /// restarts make it much more reliable.
    #[config(default = 1)]
    pub restarts: usize,
    /// Standard deviation σ of the Gaussian initialisation N(0, σ²) of every free variable.
    #[config(default = 1.0)]
    pub init_std: f64,
    /// Seed of the Gaussian initialisation.
    #[config(default = 0)]
    pub seed: u64,
    /// Record the loss every this many iterations (and at the last one); each record is one
    /// device-to-host read.
    #[config(default = 10)]
    pub log_every: usize,
}

impl AttackConfig {
    /// QGI (Fig. 2 left): error-direction gradients, cosine + TV(λ = 0.1), two stages, action
    /// by eq. 7, target Q by the error-magnitude rule. The matching loss adds a magnitude
    /// term to eq. 5 ([`GradientMatchingLoss::CosineAndMagnitude`], μ = 0.1); set it to
    /// [`GradientMatchingLoss::Cosine`] for the paper's eq. 5 alone.
    pub fn qgi() -> Self {
        Self::new().with_matching(GradientMatchingLoss::error_direction_default())
    }

    /// RGI (Fig. 2 right): as QGI, with action and reward by eq. 8–9.
    pub fn rgi() -> Self {
        Self::qgi().with_action_recovery(ActionRecovery::PolicyGradientDirection)
    }

    /// DLG (Zhu et al.), Table II row 1: objective gradients with the action and the signal
    /// optimised jointly, squared-L2 matching, no prior.
    pub fn dlg() -> Self {
        Self::new()
            .with_source(GradientSource::Objective {
                action: ActionRule::Joint,
                signal: SignalRule::Joint,
            })
            .with_matching(GradientMatchingLoss::SquaredL2)
            .with_prior(None)
    }

    /// Inverting Gradients (Geiping et al.), Table II row 3: objective gradients, the action
    /// by iDLG's rule read off ∇_{b_last} (eq. 7 for an MSE victim), the signal optimised
    /// jointly, cosine + TV.
    pub fn inverting_gradients() -> Self {
        Self::new().with_source(GradientSource::Objective {
            action: ActionRule::FromBias,
            signal: SignalRule::Joint,
        })
    }

    /// Checks every parameter; the error names the first one out of range.
    pub fn validate(&self) -> Result<(), AttackError> {
        if self.iterations_per_stage == 0 {
            return Err(AttackError::OutOfRange {
                name: "iterations_per_stage",
                value: 0.0,
                expected: ">= 1",
            });
        }
        if self.restarts == 0 {
            return Err(AttackError::OutOfRange {
                name: "restarts",
                value: 0.0,
                expected: ">= 1",
            });
        }
        if self.log_every == 0 {
            return Err(AttackError::OutOfRange {
                name: "log_every",
                value: 0.0,
                expected: ">= 1",
            });
        }
        check_positive("init_std", self.init_std)?;
        check_non_negative("magnitude weight", self.matching.magnitude_weight())?;
        if let Some(prior) = &self.prior {
            check_non_negative("prior weight", prior.weight())?;
        }
        self.optimizer.validate()
    }

    /// Checks that the parts fit together and fit the victim.
    pub fn check_compatible(&self, kind: VictimKind) -> Result<(), AttackError> {
        if self.action_recovery == ActionRecovery::PolicyGradientDirection {
            if kind == VictimKind::Dqn {
                return Err(AttackError::Incompatible(
                    "action_recovery PolicyGradientDirection (eq. 8) needs a REINFORCE victim"
                        .into(),
                ));
            }
            if let GradientSource::Objective {
                action: ActionRule::FromBias,
                ..
            } = self.source
            {
                return Err(AttackError::Incompatible(
                    "ActionRule::FromBias needs the action before the optimisation, but PolicyGradientDirection \
                     needs the stage-1 reconstruction; use LargestBiasGradient or OddSignBiasGradient"
                        .into(),
                ));
            }
        }
        Ok(())
    }
}

/// Which optimisation a loss record belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Stage {
    /// Stage 1: the input of the linear part (vector state and conv features).
    LinearPart,
    /// Stage 2: the images, with the vector fixed.
    Images,
    /// The joint ablation: images and vector together.
    Joint,
}

/// One recorded value of the attack's loss.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct LossRecord {
    /// The stage.
    pub stage: Stage,
    /// Which restart of the stage (0-based).
    pub restart: usize,
    /// Iteration within the stage (before its Adam step).
    pub iteration: usize,
    /// Total loss: matching loss plus prior.
    pub loss: f64,
}

/// What an attack reconstructs from one shared gradient.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Reconstruction {
    /// RGB image, `3 × H × W`, unclamped.
    pub rgb: Option<Vec<f32>>,
    /// Depth image, `1 × H × W`, unclamped.
    pub depth: Option<Vec<f32>>,
    /// Vector state s_c.
    pub vector: Vec<f32>,
    /// Action a_rec.
    pub action: usize,
    /// Supervision signal: Q_rec (DQN) or r_rec (REINFORCE).
    pub signal: f64,
    /// Q̂_rec(s, a_rec), DQN victims only.
    pub predicted_q: Option<f64>,
    /// p_rec = π(·|s_rec), REINFORCE victims only.
    pub probabilities: Option<Vec<f32>>,
    /// The reconstructed input of the linear part from which Q̂_rec, p_rec and the signal are
    /// computed (stage 1's result; for the joint ablation, the encoders applied to the images).
    pub linear_part: LinearPartInput,
    /// The loss every `log_every` iterations.
    pub loss_history: Vec<LossRecord>,
}

/// Reconstructs the sample behind `record` (a gradient of one sample, as in the paper) by the
/// attack that `config` describes. Deterministic given `config.seed` and the backend.
///
/// 1. The state: two stages (linear part, then images) or the joint ablation, each an
///    optimisation of eq. 2 by the shared loop.
/// 2. The action and the signal: by the rules (eq. 7, Section IV-C2, eq. 8–9) on the
///    reconstruction of the linear part, or, for DLG/IG, the jointly optimised values.
pub fn attack<B: Backend>(
    victim: &Victim<B>,
    record: &GradientRecord,
    config: &AttackConfig,
) -> Result<Reconstruction, AttackError> {
    Ok(attack_batch(victim, record, config, 1)?.remove(0))
}

/// The largest batch [`attack_batch`] takes: the paper's limitation (Section VI) and the
/// batches of the leakage suite; the action enumeration grows as C(|B| − 1, |A| − 1).
pub const MAX_BATCH: usize = 8;

/// Reconstructs the `batch_size` samples behind `record`, the gradient of J over one batch
/// (eq. 1), in an unknown order. `batch_size` 1 is [`attack`].
///
/// Batches of more than one sample take QGI's two stages on a DQN victim, extended as
/// Section IV-C1 suggests ("the action reconstruction may require enumeration"):
/// - the actions are the |B| entries of ∇_{b_last} J largest in magnitude (its non-zero
///   entries without noise; eq. 7 per sample);
/// - every way of giving those actions to the |B| samples, each used at least once, is
///   tried in stage 1, and the one with the lowest matching loss is kept;
/// - sample k's error direction (eq. 6, per sample) is the one-hot of its action scaled by
///   ∇_{b_last} J at that action, divided equally among the samples that share the action.
///   The true split is unknown; with distinct actions this is exact;
/// - its target Q is Q̂_rec(s_k, a_k) − |B|·d_k/2, since J is the batch mean of (Q̂ − Q)².
pub fn attack_batch<B: Backend>(
    victim: &Victim<B>,
    record: &GradientRecord,
    config: &AttackConfig,
    batch_size: usize,
) -> Result<Vec<Reconstruction>, AttackError> {
    autodiff::exclusive(|| {
        config.validate()?;
        config.check_compatible(victim.kind())?;
        if !(1..=MAX_BATCH).contains(&batch_size) {
            return Err(AttackError::OutOfRange {
                name: "batch_size",
                value: batch_size as f64,
                expected: "1..=8",
            });
        }
        let problem = Problem::new(victim, record, config, batch_size)?;
        let mut rng = ChaCha8Rng::seed_from_u64(config.seed);
        if batch_size > 1 {
            return problem.batch_attack(&mut rng);
        }
        let mut history = Vec::new();

        // Free supervision (DLG/IG): action logits and signal, carried from stage to stage.
        let mut supervision = FreeSupervision::new(config, victim.num_actions(), &mut rng);
        let state = match config.state {
            StateOptimisation::TwoStage => {
                problem.two_stages(&mut supervision, &mut rng, &mut history)?
            }
            StateOptimisation::Joint => {
                problem.joint_state(&mut supervision, &mut rng, &mut history)?
            }
        };
        let Supervision {
            action,
            signal,
            predicted_q,
            probabilities,
        } = problem.recover_supervision(record, &state.linear_part, &supervision)?;
        Ok(vec![Reconstruction {
            rgb: state.rgb,
            depth: state.depth,
            vector: state.linear_part.vector.clone(),
            action,
            signal,
            predicted_q,
            probabilities,
            linear_part: state.linear_part,
            loss_history: history,
        }])
    })
}

/// Every way of giving the |B| entries of `bias_gradient` largest in magnitude (or all of its
/// non-zero entries, if fewer) to `batch` samples, each action used at least once, in a fixed
/// order: one action per sample (see [`attack_batch`]).
pub fn batch_action_assignments(bias_gradient: &[f32], batch: usize) -> Vec<Vec<usize>> {
    let largest = bias_gradient.iter().fold(0.0f32, |m, g| m.max(g.abs()));
    let mut actions: Vec<usize> = (0..bias_gradient.len())
        .filter(|&j| bias_gradient[j].abs() > 1e-6 * largest)
        .collect();
    actions.sort_by(|&a, &b| bias_gradient[b].abs().total_cmp(&bias_gradient[a].abs()));
    actions.truncate(batch);
    if actions.is_empty() {
        return vec![vec![0; batch]];
    }
    // Multiplicities: compositions of `batch` into `actions.len()` positive parts.
    fn compositions(
        total: usize,
        parts: usize,
        prefix: &mut Vec<usize>,
        out: &mut Vec<Vec<usize>>,
    ) {
        if parts == 1 {
            prefix.push(total);
            out.push(prefix.clone());
            prefix.pop();
            return;
        }
        for first in 1..=total - (parts - 1) {
            prefix.push(first);
            compositions(total - first, parts - 1, prefix, out);
            prefix.pop();
        }
    }
    let mut multiplicities = Vec::new();
    compositions(batch, actions.len(), &mut Vec::new(), &mut multiplicities);
    multiplicities
        .into_iter()
        .map(|counts| {
            actions
                .iter()
                .zip(counts)
                .flat_map(|(&a, n)| std::iter::repeat_n(a, n))
                .collect()
        })
        .collect()
}

/// Per-sample error directions `[batch · actions]` (row-major) for an assignment of actions:
/// ∇_{b_last} J at each action, split equally among the samples that share it.
fn batch_error_directions(bias_gradient: &[f32], assignment: &[usize]) -> Vec<f32> {
    let actions = bias_gradient.len();
    let mut directions = vec![0.0; assignment.len() * actions];
    for (k, &a) in assignment.iter().enumerate() {
        let shared = assignment.iter().filter(|&&b| b == a).count() as f32;
        directions[k * actions + a] = bias_gradient[a] / shared;
    }
    directions
}

/// The reconstructed state.
struct StateReconstruction {
    rgb: Option<Vec<f32>>,
    depth: Option<Vec<f32>>,
    linear_part: LinearPartInput,
}

/// The reconstructed action, signal, Q̂_rec and p_rec.
struct Supervision {
    action: usize,
    signal: f64,
    predicted_q: Option<f64>,
    probabilities: Option<Vec<f32>>,
}

/// The jointly optimised action logits and signal of DLG/IG (empty for QGI/RGI).
struct FreeSupervision {
    layout: Layout,
    values: Vec<f32>,
    num_actions: usize,
}

impl FreeSupervision {
    fn new(config: &AttackConfig, num_actions: usize, rng: &mut ChaCha8Rng) -> Self {
        let mut layout = Layout::default();
        let mut values = Vec::new();
        if let GradientSource::Objective { action, signal } = config.source {
            if action == ActionRule::Joint {
                layout.push(Block::ActionLogits, num_actions);
                values.extend(gaussian_noise(num_actions, config.init_std, rng));
            }
            match signal {
                SignalRule::Joint => {
                    layout.push(Block::Signal, 1);
                    values.extend(gaussian_noise(1, config.init_std, rng));
                }
            }
        }
        Self {
            layout,
            values,
            num_actions,
        }
    }

    /// argmax of the action logits, if they are optimised.
    fn action(&self) -> Option<usize> {
        self.layout
            .read(Block::ActionLogits, &self.values)
            .map(|logits| argmax(&logits))
    }

    /// The signal, if it is optimised.
    fn signal(&self) -> Option<f64> {
        self.layout
            .read(Block::Signal, &self.values)
            .map(|s| f64::from(s[0]))
    }
}

impl<B: Backend> Problem<'_, B> {
    /// Stage 1 (the linear part's input from the Dense layers' gradients), then stage 2 (the
    /// images from all gradients, s_c fixed at stage 1's result).
    fn two_stages(
        &self,
        supervision: &mut FreeSupervision,
        rng: &mut ChaCha8Rng,
        history: &mut Vec<LossRecord>,
    ) -> Result<StateReconstruction, AttackError> {
        let (_, linear) = self.linear_stage(supervision, rng, history);
        let linear_part = self.linear_part_inputs(&linear).remove(0);
        let (rgb, depth) = self.image_stage(&linear, supervision, rng, history);
        Ok(StateReconstruction {
            rgb,
            depth,
            linear_part,
        })
    }

    /// Stage 1: the inputs of the linear part (conv features and s_c) of every sample, with
    /// the final loss of the best restart.
    fn linear_stage(
        &self,
        supervision: &mut FreeSupervision,
        rng: &mut ChaCha8Rng,
        history: &mut Vec<LossRecord>,
    ) -> (f64, Values) {
        let net = self.victim.net();
        let mut layout = Layout::default();
        if let Some(e) = &net.rgb {
            layout.push(Block::RgbFeatures, e.d_output * self.batch);
        }
        if let Some(e) = &net.depth {
            layout.push(Block::DepthFeatures, e.d_output * self.batch);
        }
        layout.push(Block::Vector, net.d_vector * self.batch);
        self.run_restarts(Stage::LinearPart, layout, supervision, None, rng, history)
    }

    /// Stage 1's result split into one [`LinearPartInput`] per sample.
    fn linear_part_inputs(&self, linear: &Values) -> Vec<LinearPartInput> {
        let rows = |block| linear.read(block).map(|v| split_rows(&v, self.batch));
        let (rgb, depth) = (rows(Block::RgbFeatures), rows(Block::DepthFeatures));
        let vector = rows(Block::Vector).unwrap_or_else(|| vec![Vec::new(); self.batch]);
        (0..self.batch)
            .map(|k| LinearPartInput {
                rgb_features: rgb.as_ref().map(|r| r[k].clone()),
                depth_features: depth.as_ref().map(|d| d[k].clone()),
                vector: vector[k].clone(),
            })
            .collect()
    }

    /// Stage 2: the images of every sample, s_c fixed at stage 1's result.
    fn image_stage(
        &self,
        linear: &Values,
        supervision: &mut FreeSupervision,
        rng: &mut ChaCha8Rng,
        history: &mut Vec<LossRecord>,
    ) -> (Option<Vec<f32>>, Option<Vec<f32>>) {
        let net = self.victim.net();
        if net.rgb_shape.is_none() && net.depth_shape.is_none() {
            return (None, None);
        }
        let vector = crate::victim::tensor2::<Inner<B>>(
            &linear.read(Block::Vector).unwrap_or_default(),
            net.d_vector,
            self.victim.device(),
        );
        let layout = self.image_layout(false);
        let (_, theta) = self.run_restarts(
            Stage::Images,
            layout,
            supervision,
            Some(vector),
            rng,
            history,
        );
        (theta.read(Block::Rgb), theta.read(Block::Depth))
    }

    /// [`attack_batch`] for more than one sample: stage 1 under every action assignment, the
    /// best one's stage 2, then each sample's action and target Q.
    fn batch_attack(&self, rng: &mut ChaCha8Rng) -> Result<Vec<Reconstruction>, AttackError> {
        let victim = self.victim;
        let bias_gradient = self
            .bias_gradient
            .as_deref()
            .ok_or(AttackError::NoLastBias {
                needed_by: "the batch attack",
            })?;
        let actions = victim.num_actions();
        let mut supervision = FreeSupervision::new(self.config, actions, rng);
        let mut best: Option<AssignmentCandidate<'_, B>> = None;
        for assignment in batch_action_assignments(bias_gradient, self.batch) {
            let directions = batch_error_directions(bias_gradient, &assignment);
            let problem = Problem {
                error_direction: Some(crate::victim::tensor2::<Outer<B>>(
                    &directions,
                    actions,
                    victim.device(),
                )),
                ..self.clone()
            };
            let mut history = Vec::new();
            let (loss, linear) = problem.linear_stage(&mut supervision, rng, &mut history);
            if best
                .as_ref()
                .is_none_or(|b| loss < b.loss || b.loss.is_nan())
            {
                best = Some(AssignmentCandidate {
                    loss,
                    problem,
                    assignment,
                    linear,
                    directions,
                    history,
                });
            }
        }
        let AssignmentCandidate {
            problem,
            assignment,
            directions,
            linear,
            mut history,
            ..
        } = best.expect("at least one assignment");
        let (rgb, depth) = problem.image_stage(&linear, &mut supervision, rng, &mut history);
        let images = |v: &Option<Vec<f32>>| v.as_ref().map(|v| split_rows(v, self.batch));
        let (rgb, depth) = (images(&rgb), images(&depth));
        problem
            .linear_part_inputs(&linear)
            .into_iter()
            .enumerate()
            .map(|(k, linear_part)| {
                let action = assignment[k];
                let predicted = f64::from(victim.linear_part_output(&linear_part)?.output[action]);
                let direction = f64::from(directions[k * actions + action]);
                Ok(Reconstruction {
                    rgb: rgb.as_ref().map(|r| r[k].clone()),
                    depth: depth.as_ref().map(|d| d[k].clone()),
                    vector: linear_part.vector.clone(),
                    action,
                    signal: predicted - self.batch as f64 * direction / 2.0,
                    predicted_q: Some(predicted),
                    probabilities: None,
                    linear_part,
                    loss_history: history.clone(),
                })
            })
            .collect()
    }

    /// The ablation of Fig. 4: images and vector together, against all gradients.
    fn joint_state(
        &self,
        supervision: &mut FreeSupervision,
        rng: &mut ChaCha8Rng,
        history: &mut Vec<LossRecord>,
    ) -> Result<StateReconstruction, AttackError> {
        let layout = self.image_layout(true);
        let (_, theta) = self.run_restarts(Stage::Joint, layout, supervision, None, rng, history);
        let (rgb, depth) = (theta.read(Block::Rgb), theta.read(Block::Depth));
        let vector = theta.read(Block::Vector).unwrap_or_default();
        let linear_part =
            self.victim
                .linear_part_input_of(rgb.as_deref(), depth.as_deref(), &vector)?;
        Ok(StateReconstruction {
            rgb,
            depth,
            linear_part,
        })
    }

    /// The images (and, for the joint ablation, the vector) as free variables.
    fn image_layout(&self, with_vector: bool) -> Layout {
        let net = self.victim.net();
        let mut layout = Layout::default();
        if let Some(shape) = net.rgb_shape {
            layout.push(Block::Rgb, shape.len() * self.batch);
        }
        if let Some(shape) = net.depth_shape {
            layout.push(Block::Depth, shape.len() * self.batch);
        }
        if with_vector {
            layout.push(Block::Vector, net.d_vector);
        }
        layout
    }

    /// The action and the signal: the jointly optimised values where the config optimises
    /// them, the rules otherwise.
    fn recover_supervision(
        &self,
        record: &GradientRecord,
        linear_part: &LinearPartInput,
        supervision: &FreeSupervision,
    ) -> Result<Supervision, AttackError> {
        let victim = self.victim;
        let output = victim.linear_part_output(linear_part)?.output;
        let bias_gradient = self.bias_gradient.as_deref();
        let rule_action = bias_gradient
            .and_then(|g| action_before_reconstruction(self.config.action_recovery, g));
        let action = supervision.action().or(rule_action);
        match victim.kind() {
            VictimKind::Dqn => {
                // eq. 7 (or the joint logits); the check in `Problem::new` guarantees one.
                let action = action.unwrap_or(0);
                let signal = match supervision.signal() {
                    Some(signal) => signal,
                    // Section IV-C2
                    None => {
                        q_value_from_error_magnitude(victim, record, linear_part, action)?.target_q
                    }
                };
                Ok(Supervision {
                    action,
                    signal,
                    predicted_q: Some(f64::from(output[action])),
                    probabilities: None,
                })
            }
            VictimKind::Reinforce { entropy_weight } => match supervision.signal() {
                Some(signal) => {
                    let logits = crate::victim::tensor2::<B>(
                        &output,
                        supervision.num_actions,
                        victim.device(),
                    );
                    Ok(Supervision {
                        action: action.unwrap_or(0),
                        signal,
                        predicted_q: None,
                        probabilities: Some(host(softmax(logits, 1))),
                    })
                }
                // eq. 8–9
                None => {
                    let bias_gradient = bias_gradient.ok_or(AttackError::NoLastBias {
                        needed_by: "the reward rule (eq. 9)",
                    })?;
                    let rec = policy_gradient_recovery::<B>(
                        &output,
                        bias_gradient,
                        entropy_weight,
                        action,
                        victim.device(),
                    )?;
                    Ok(Supervision {
                        action: rec.action,
                        signal: rec.reward,
                        predicted_q: None,
                        probabilities: Some(rec.probabilities),
                    })
                }
            },
        }
    }
}

/// `values` cut into `rows` equal consecutive rows (one per sample).
fn split_rows(values: &[f32], rows: usize) -> Vec<Vec<f32>> {
    let len = values.len() / rows.max(1);
    values.chunks(len.max(1)).map(<[f32]>::to_vec).collect()
}

fn argmax(values: &[f32]) -> usize {
    let mut best = 0;
    for (k, v) in values.iter().enumerate() {
        if *v > values[best] {
            best = k;
        }
    }
    best
}

/// A named block of the flat variable vector θ.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Block {
    Rgb,
    Depth,
    Vector,
    RgbFeatures,
    DepthFeatures,
    ActionLogits,
    Signal,
}

/// Where each block lies in θ.
#[derive(Debug, Clone, Default)]
struct Layout {
    blocks: Vec<(Block, usize, usize)>,
    len: usize,
}

impl Layout {
    fn push(&mut self, block: Block, len: usize) {
        self.blocks.push((block, self.len, len));
        self.len += len;
    }

    fn append(&mut self, other: &Layout) {
        for &(block, _, len) in &other.blocks {
            self.push(block, len);
        }
    }

    fn range(&self, block: Block) -> Option<(usize, usize)> {
        self.blocks
            .iter()
            .find(|(b, _, _)| *b == block)
            .map(|&(_, offset, len)| (offset, len))
    }

    fn read(&self, block: Block, theta: &[f32]) -> Option<Vec<f32>> {
        self.range(block)
            .map(|(offset, len)| theta[offset..offset + len].to_vec())
    }

    /// The values of `other`'s blocks, in `other`'s order.
    fn read_all(&self, other: &Layout, theta: &[f32]) -> Vec<f32> {
        other
            .blocks
            .iter()
            .flat_map(|&(block, _, _)| self.read(block, theta).unwrap_or_default())
            .collect()
    }

    fn slice<BB: Backend>(&self, block: Block, theta: &Tensor<BB, 1>) -> Option<Tensor<BB, 1>> {
        self.range(block)
            .map(|(offset, len)| theta.clone().narrow(0, offset, len))
    }
}

/// The final values of a stage with their layout.
struct Values {
    layout: Layout,
    theta: Vec<f32>,
}

impl Values {
    fn read(&self, block: Block) -> Option<Vec<f32>> {
        self.layout.read(block, &self.theta)
    }
}

/// The free variables of one iteration, on the inner autodiff.
struct Vars<BB: Backend> {
    rgb: Option<Tensor<BB, 4>>,
    depth: Option<Tensor<BB, 4>>,
    vector: Option<Tensor<BB, 2>>,
    rgb_features: Option<Tensor<BB, 2>>,
    depth_features: Option<Tensor<BB, 2>>,
    action_logits: Option<Tensor<BB, 2>>,
    signal: Option<Tensor<BB, 1>>,
}

/// Everything an iteration needs that does not change between iterations.
#[derive(Clone)]
struct Problem<'a, B: Backend> {
    victim: &'a Victim<B>,
    /// Samples behind the shared gradient; every free variable has this leading dimension.
    batch: usize,
    config: &'a AttackConfig,
    /// The shared gradient per parameter, on device, with its ‖g‖².
    targets: HashMap<String, (Tensor<Inner<B>, 1>, f64)>,
    /// ∇_{b_last} on the host (eq. 6–9).
    bias_gradient: Option<Vec<f32>>,
    /// Eq. 6's error direction as a `[1, actions]` outer constant.
    error_direction: Option<Tensor<Outer<B>, 2>>,
    /// The action of the objective when a rule fixes it before the optimisation.
    fixed_action: Option<Tensor<Outer<B>, 2>>,
}

impl<'a, B: Backend> Problem<'a, B> {
    fn new(
        victim: &'a Victim<B>,
        record: &GradientRecord,
        config: &'a AttackConfig,
        batch: usize,
    ) -> Result<Self, AttackError> {
        if batch > 1
            && (victim.kind() != VictimKind::Dqn
                || config.source != GradientSource::ErrorDirection
                || config.state != StateOptimisation::TwoStage)
        {
            return Err(AttackError::Incompatible(
                "batches of more than one sample need QGI (error direction, two stages) on a                  DQN victim"
                    .into(),
            ));
        }
        let device = victim.device();
        let mut sizes = ParamSizes::default();
        victim.net().visit(&mut sizes);
        let mut targets = HashMap::new();
        for entry in &record.params {
            let expected = sizes
                .sizes
                .iter()
                .find(|(name, _)| *name == entry.name)
                .map(|(_, n)| *n)
                .ok_or(AttackError::MissingGradient {
                    name: format!(
                        "{} (named by the record, not a parameter of the victim)",
                        entry.name
                    ),
                })?;
            if expected != entry.values.len() {
                return Err(AttackError::GradientShape {
                    name: entry.name.clone(),
                    expected,
                    got: entry.values.len(),
                });
            }
            let norm_sq = entry.values.iter().map(|v| f64::from(*v).powi(2)).sum();
            targets.insert(
                entry.name.clone(),
                (tensor1::<Inner<B>>(&entry.values, device), norm_sq),
            );
        }
        let bias_name = victim.last_bias_name();
        let bias_gradient = record.get(&bias_name).map(|g| g.values.clone());
        if bias_gradient.is_none() && victim.net().last_layer().bias.is_some() {
            return Err(AttackError::MissingGradient { name: bias_name });
        }
        let needs_bias = |what: &'static str| AttackError::NoLastBias { needed_by: what };
        let error_direction = match config.source {
            GradientSource::ErrorDirection => {
                let g = bias_gradient
                    .as_ref()
                    .ok_or_else(|| needs_bias("the error-direction surrogate (eq. 6)"))?;
                Some(crate::victim::tensor2::<Outer<B>>(g, g.len(), device))
            }
            GradientSource::Objective { .. } => None,
        };
        let fixed_action = match config.source {
            GradientSource::Objective {
                action: ActionRule::FromBias,
                ..
            } => {
                let g = bias_gradient
                    .as_ref()
                    .ok_or_else(|| needs_bias("ActionRule::FromBias"))?;
                let action = action_before_reconstruction(config.action_recovery, g)
                    .expect("checked compatible");
                Some(one_hot::<Outer<B>>(&[action], victim.num_actions(), device))
            }
            _ => None,
        };
        Ok(Self {
            victim,
            batch,
            config,
            targets,
            bias_gradient,
            error_direction,
            fixed_action,
        })
    }

    fn split(&self, layout: &Layout, theta: &Tensor<Inner<B>, 1>) -> Vars<Inner<B>> {
        let net = self.victim.net();
        let image = |block, shape: Option<privrl_agents::ImageShape>| {
            layout
                .slice(block, theta)
                .zip(shape)
                .map(|(t, s)| t.reshape([self.batch, s.channels, s.size, s.size]))
        };
        let batch = self.batch as i32;
        let row = |block| layout.slice(block, theta).map(|t| t.reshape([batch, -1]));
        Vars {
            rgb: image(Block::Rgb, net.rgb_shape),
            depth: image(Block::Depth, net.depth_shape),
            vector: row(Block::Vector),
            rgb_features: row(Block::RgbFeatures),
            depth_features: row(Block::DepthFeatures),
            action_logits: row(Block::ActionLogits),
            signal: layout.slice(Block::Signal, theta),
        }
    }

    /// The loss of one iteration: L(g_rec, g) (+ the prior on images).
    fn loss(
        &self,
        stage: Stage,
        vars: Vars<Inner<B>>,
        fixed_vector: Option<&Tensor<Inner<B>, 2>>,
    ) -> Tensor<Inner<B>, 1> {
        let net = self.victim.net();
        let lift2 = |t: Tensor<Inner<B>, 2>| Tensor::<Outer<B>, 2>::from_inner(t);
        let lift4 = |t: Tensor<Inner<B>, 4>| Tensor::<Outer<B>, 4>::from_inner(t);
        let head_input = match stage {
            Stage::LinearPart => head_input(
                net,
                vars.rgb_features.map(lift2),
                vars.depth_features.map(lift2),
                lift2(vars.vector.expect("stage 1 reconstructs the vector")),
            ),
            Stage::Images => net.features(
                vars.rgb.clone().map(lift4),
                vars.depth.clone().map(lift4),
                lift2(fixed_vector.expect("stage 2 fixes the vector").clone()),
            ),
            Stage::Joint => net.features(
                vars.rgb.clone().map(lift4),
                vars.depth.clone().map(lift4),
                lift2(
                    vars.vector
                        .expect("the joint stage reconstructs the vector"),
                ),
            ),
        };
        // The head's weight gradients come back as their factors (see
        // `ReconstructedGradient::Factored`); the other parameters' gradients are formed.
        let head = probed_forward(&net.head, head_input);
        let output = head.output.clone();
        let objective = match &self.error_direction {
            // eq. 6: J̃ = (∇_{b_last} J)ᵀ F(x_rec)
            Some(direction) => (output * direction.clone()).sum(),
            // eq. 1 with the reconstructed (or rule-based) supervision
            None => {
                let action = match (&self.fixed_action, vars.action_logits) {
                    (Some(a), _) => a.clone(),
                    (None, Some(logits)) => Tensor::from_inner(softmax(logits, 1)),
                    (None, None) => unreachable!("an objective without an action"),
                };
                let signal =
                    Tensor::from_inner(vars.signal.expect("an objective without a signal"));
                self.victim.kind().objective(output, action, signal)
            }
        };
        let grads = autodiff::backward(&objective);
        let matched = |name: &str, reconstructed| {
            let (target, norm_sq) = self.targets.get(name)?;
            Some(MatchedGradient {
                reconstructed,
                target: target.clone(),
                target_norm_sq: Some(*norm_sq),
            })
        };
        let mut parts: Vec<MatchedGradient<Inner<B>>> = param_gradients(net, &grads)
            .into_iter()
            .filter(|g| stage != Stage::LinearPart || Victim::<B>::is_linear_parameter(&g.name))
            .filter_map(|g| matched(&g.name, ReconstructedGradient::Flat(g.gradient)))
            .collect();
        let factors = PerSampleFactors::from_backward(&net.head, &head, &grads);
        for (l, (inputs, errors)) in factors.layers().enumerate() {
            let bias = errors.clone().sum_dim(0).reshape([-1]);
            let weight = ReconstructedGradient::Factored {
                inputs: inputs.clone(),
                errors: errors.clone(),
            };
            parts.extend(matched(&format!("head.layers.{l}.weight"), weight));
            parts.extend(matched(
                &format!("head.layers.{l}.bias"),
                ReconstructedGradient::Flat(bias),
            ));
        }
        let mut loss = self.config.matching.loss_of_matched(parts);
        if let Some(prior) = &self.config.prior {
            for images in [vars.rgb, vars.depth].into_iter().flatten() {
                loss = loss + prior.penalty(images);
            }
        }
        loss
    }

    /// Runs a stage `restarts` times, each from fresh Gaussian values for the blocks of
    /// `layout` followed by the carried free supervision, and keeps the run with the lowest
    /// final loss (whose supervision values it carries on); returns that loss and the values.
    fn run_restarts(
        &self,
        stage: Stage,
        mut layout: Layout,
        supervision: &mut FreeSupervision,
        fixed_vector: Option<Tensor<Inner<B>, 2>>,
        rng: &mut ChaCha8Rng,
        history: &mut Vec<LossRecord>,
    ) -> (f64, Values) {
        let free = layout.len;
        layout.append(&supervision.layout);
        let mut best: Option<(f64, Vec<f32>)> = None;
        for restart in 0..self.config.restarts {
            let mut theta = gaussian_noise(free, self.config.init_std, rng);
            theta.extend_from_slice(&supervision.values);
            let (loss, theta) = self.run_stage(
                stage,
                restart,
                &layout,
                theta,
                fixed_vector.as_ref(),
                history,
            );
            // A NaN loss never wins.
            if best.as_ref().is_none_or(|(b, _)| loss < *b || b.is_nan()) {
                best = Some((loss, theta));
            }
        }
        let (loss, theta) = best.expect("at least one restart");
        let values = Values { layout, theta };
        supervision.values = values.layout.read_all(&supervision.layout, &values.theta);
        (loss, values)
    }

    /// Runs one stage from the initial values `theta` and returns the loss at the final values
    /// together with them.
    fn run_stage(
        &self,
        stage: Stage,
        restart: usize,
        layout: &Layout,
        theta: Vec<f32>,
        fixed_vector: Option<&Tensor<Inner<B>, 2>>,
        history: &mut Vec<LossRecord>,
    ) -> (f64, Vec<f32>) {
        let device = self.victim.device();
        let iterations = self.config.iterations_per_stage;
        let mut theta = tensor1::<B>(&theta, device);
        let mut adam = self.config.optimizer.init::<B>(layout.len, device);
        for iteration in 0..=iterations {
            let tracked = Tensor::<Inner<B>, 1>::from_inner(theta.clone()).require_grad();
            let vars = self.split(layout, &tracked);
            let loss = self.loss(stage, vars, fixed_vector);
            if iteration == iterations {
                // The loss at the final values, without a step: what restarts compare.
                let loss = f64::from(host(loss.inner())[0]);
                history.push(LossRecord {
                    stage,
                    restart,
                    iteration,
                    loss,
                });
                return (loss, host(theta));
            }
            if iteration % self.config.log_every == 0 {
                history.push(LossRecord {
                    stage,
                    restart,
                    iteration,
                    loss: f64::from(host(loss.clone().inner())[0]),
                });
            }
            let gradient = tracked
                .grad(&autodiff::backward(&loss))
                .unwrap_or_else(|| Tensor::zeros([layout.len], device));
            let lr = self
                .config
                .schedule
                .lr(self.config.optimizer.lr, iteration, iterations);
            theta = adam.step(theta, gradient, lr);
        }
        unreachable!("the loop returns at iteration == iterations")
    }
}

/// Stage 1 of the batch attack under one assignment of actions to samples.
struct AssignmentCandidate<'a, B: Backend> {
    loss: f64,
    problem: Problem<'a, B>,
    assignment: Vec<usize>,
    /// The per-sample error directions of [`batch_error_directions`], `[batch · actions]`.
    directions: Vec<f32>,
    linear: Values,
    history: Vec<LossRecord>,
}

/// Name and size of every float parameter, in visiting order.
#[derive(Default)]
struct ParamSizes {
    path: Vec<String>,
    sizes: Vec<(String, usize)>,
}

impl<BB: Backend> ModuleVisitor<BB> for ParamSizes {
    fn enter_module(&mut self, name: &str, _container_type: &str) {
        self.path.push(name.to_string());
    }

    fn exit_module(&mut self, _name: &str, _container_type: &str) {
        self.path.pop();
    }

    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<BB, D>>) {
        self.sizes
            .push((self.path.join("."), param.shape().num_elements()));
    }
}

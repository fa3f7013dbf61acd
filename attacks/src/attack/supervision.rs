//! The action and the supervision signal: the rules on stage 1's reconstruction (eq. 7,
//! Section IV-C2, eq. 8–9) or, for DLG/IG, the jointly optimised action logits and signal.

use burn::tensor::activation::softmax;
use burn::tensor::backend::Backend;
use privrl_agents::tensor::matrix;
use privrl_agents::GradientRecord;
use rand_chacha::ChaCha8Rng;

use super::config::AttackConfig;
use super::problem::Problem;
use super::variables::{Block, Layout};
use crate::error::AttackError;
use crate::model::InvertibleModel;
use crate::parts::{gaussian_noise, ActionRule, GradientSource};
use crate::recovery::{action_before_reconstruction, policy_gradient_recovery, q_value_rule};
use crate::victim::{host, LinearPartInput, Outer, VictimKind};

/// The reconstructed action, signal, Q̂_rec and p_rec.
pub(super) struct Supervision {
    pub(super) action: usize,
    pub(super) signal: f64,
    pub(super) predicted_q: Option<f64>,
    pub(super) probabilities: Option<Vec<f32>>,
}

/// The jointly optimised action logits and signal of DLG/IG (empty for QGI/RGI), and the
/// signal when the attacker knows it.
pub(super) struct FreeSupervision {
    pub(super) layout: Layout,
    pub(super) values: Vec<f32>,
    num_actions: usize,
    known_signal: Option<f64>,
}

impl FreeSupervision {
    /// `known_signal`: the signal the attacker knows ([`Problem`]'s, resolved once); a signal
    /// not known is optimised from its rule's initial value.
    pub(super) fn new(
        config: &AttackConfig,
        known_signal: Option<f64>,
        num_actions: usize,
        rng: &mut ChaCha8Rng,
    ) -> Result<Self, AttackError> {
        let mut layout = Layout::default();
        let mut values = Vec::new();
        if let GradientSource::Objective { action, signal } = &config.source {
            if *action == ActionRule::Joint {
                layout.push(Block::ActionLogits, num_actions);
                values.extend(gaussian_noise(num_actions, config.init_std, rng));
            }
            if known_signal.is_none() {
                layout.push(Block::Signal, 1);
                values.push(signal.initial(config.init_std, rng)?);
            }
        }
        Ok(Self {
            layout,
            values,
            num_actions,
            known_signal,
        })
    }

    /// argmax of the action logits, if they are optimised.
    fn action(&self) -> Option<usize> {
        self.layout
            .read(Block::ActionLogits, &self.values)
            .map(|logits| argmax(&logits))
    }

    /// The signal, if it is optimised or known.
    fn signal(&self) -> Option<f64> {
        self.layout
            .read(Block::Signal, &self.values)
            .map(|s| f64::from(s[0]))
            .or(self.known_signal)
    }
}

impl<B: Backend, M: InvertibleModel<Outer<B>>> Problem<'_, B, M> {
    /// The action and the signal: the jointly optimised values where the config optimises
    /// them, the rules otherwise. The output F(x_rec) comes from stage 1's `linear_part`, or
    /// from the reconstructed images and vector for a model without a linear split.
    pub(super) fn recover_supervision(
        &self,
        record: &GradientRecord,
        (rgb, depth): (Option<&[f32]>, Option<&[f32]>),
        linear_part: &LinearPartInput,
        supervision: &FreeSupervision,
    ) -> Result<Supervision, AttackError> {
        let victim = self.victim;
        let output = host(victim.reconstructed_output(rgb, depth, linear_part)?);
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
                        let output = victim.reconstructed_output(rgb, depth, linear_part)?;
                        q_value_rule(victim, record, output, action)?.target_q
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
                    let logits = matrix::<B>(&output, supervision.num_actions, victim.device());
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

fn argmax(values: &[f32]) -> usize {
    let mut best = 0;
    for (k, v) in values.iter().enumerate() {
        if *v > values[best] {
            best = k;
        }
    }
    best
}

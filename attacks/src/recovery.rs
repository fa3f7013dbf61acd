//! Rule-based reconstruction of the action and the supervision signal (Sections IV-C, IV-D).
//!
//! All rules assume a batch of one, as the paper does: then ∇_{b_last} J = ∂J/∂y.

use burn::tensor::activation::softmax;
use burn::tensor::backend::Backend;
use privrl_agents::autodiff;
use privrl_agents::tensor::{matrix, one_hot, vector};
use privrl_agents::{param_gradients, GradientRecord};
use serde::{Deserialize, Serialize};

use crate::error::AttackError;
use crate::model::InvertibleModel;
use crate::parts::ActionRecovery;
use crate::victim::{host, Inner, LinearPartInput, Outer, Victim, VictimKind};
use burn::tensor::Tensor;

/// Eq. 7: the action is the index of the non-zero entry of ∇_{b_last}; with rounding, the
/// entry of largest magnitude. Ties go to the lowest index.
pub fn action_from_bias_gradient(bias_gradient: &[f32]) -> usize {
    let mut best = 0;
    for (k, v) in bias_gradient.iter().enumerate() {
        if v.abs() > bias_gradient[best].abs() {
            best = k;
        }
    }
    best
}

/// iDLG's rule: the entry of ∇_{b_last} whose sign is in the minority (for ∇_b = R(p − e_a),
/// entry a is the only one with the sign of −R), the largest in magnitude among them. Zero
/// entries have no sign; if all non-zero entries agree, eq. 7's rule decides.
pub fn odd_sign_action(bias_gradient: &[f32]) -> usize {
    let positive = bias_gradient.iter().filter(|v| **v > 0.0).count();
    let negative = bias_gradient.iter().filter(|v| **v < 0.0).count();
    if positive == 0 || negative == 0 {
        return action_from_bias_gradient(bias_gradient);
    }
    let minority_positive = positive < negative;
    let mut best: Option<usize> = None;
    for (k, &v) in bias_gradient.iter().enumerate() {
        if (v > 0.0) == minority_positive
            && v != 0.0
            && best.is_none_or(|b| v.abs() > bias_gradient[b].abs())
        {
            best = Some(k);
        }
    }
    best.unwrap_or(0)
}

/// The outcome of RGI's rules (eq. 8–9).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PolicyGradientRecovery {
    /// Reconstructed action a_rec.
    pub action: usize,
    /// Reconstructed reward (return) r_rec, eq. 9.
    pub reward: f64,
    /// p_rec = softmax(logits_rec).
    pub probabilities: Vec<f32>,
    /// |cos| between (∇_b J_pg)_rec and ∇_b J_pg(p_rec, a_rec, 1): 1 for an exact match.
    pub alignment: f64,
}

/// RGI's action and reward rules from the reconstructed logits (the last layer applied to the
/// stage-1 reconstruction of its input) and the shared ∇_{b_last}.
///
/// - Eq. 8: (∇_b J_pg)_rec = ∇_{b_last} − ∇_b J_entropy(p_rec).
/// - The action: for every a, ∇_b J_pg(p_rec, a, r = 1) through the agents' own
///   [`privrl_agents::losses::reinforce_loss`]; a_rec is the one whose direction is best
///   aligned with (∇_b J_pg)_rec. Alignment is |cos|, not cos, because the return R may be
///   negative (standardised returns), which flips the direction.
/// - Eq. 9: r_rec = (∇_b J_pg)_rec / ∇_b J_pg(p_rec, a_rec, 1), solved in the least-squares
///   sense over all entries: r = ⟨u, v⟩ / ⟨v, v⟩.
///
/// With `action` given, only the reward is reconstructed (for that action).
pub fn policy_gradient_recovery<B: Backend>(
    logits: &[f32],
    bias_gradient: &[f32],
    entropy_weight: f64,
    action: Option<usize>,
    device: &B::Device,
) -> Result<PolicyGradientRecovery, AttackError> {
    autodiff::exclusive(|| {
        let n = logits.len();
        if bias_gradient.len() != n {
            return Err(AttackError::LengthMismatch {
                what: "logits vs ∇b_last",
                left: n,
                right: bias_gradient.len(),
            });
        }
        let kind_entropy = VictimKind::Reinforce { entropy_weight };
        // ∂J/∂y for a batch of one equals ∇_{b_last} J (y = hW + b).
        let logit_gradient =
            |rows: usize, actions: &[usize], returns: &[f32], kind: VictimKind| -> Vec<f32> {
                let mut repeated = Vec::with_capacity(rows * n);
                for _ in 0..rows {
                    repeated.extend_from_slice(logits);
                }
                let z = matrix::<Inner<B>>(&repeated, n, device).require_grad();
                let loss = kind.objective(
                    z.clone(),
                    one_hot::<Inner<B>>(actions, n, device),
                    vector::<Inner<B>>(returns, device),
                );
                let grads = autodiff::backward(&loss);
                host(z.grad(&grads).expect("the logits are tracked"))
            };
        // ∇_b J_entropy(p_rec): the objective with R = 0.
        let entropy_part = logit_gradient(1, &[0], &[0.0], kind_entropy);
        // eq. 8
        let policy_part: Vec<f64> = bias_gradient
            .iter()
            .zip(&entropy_part)
            .map(|(&g, &e)| f64::from(g) - f64::from(e))
            .collect();
        // ∇_b J_pg(p_rec, a, r = 1) for every a at once: the loss sums over the batch, and row a
        // of the logits only sees action a.
        let all_actions: Vec<usize> = (0..n).collect();
        let unit = logit_gradient(
            n,
            &all_actions,
            &vec![1.0; n],
            VictimKind::Reinforce {
                entropy_weight: 0.0,
            },
        );
        let dot =
            |a: &[f64], b: &[f32]| a.iter().zip(b).map(|(x, &y)| x * f64::from(y)).sum::<f64>();
        let norm_u = policy_part.iter().map(|x| x * x).sum::<f64>().sqrt();
        let scored = |a: usize| {
            let v = &unit[a * n..(a + 1) * n];
            let vv = v.iter().map(|&y| f64::from(y).powi(2)).sum::<f64>();
            let uv = dot(&policy_part, v);
            let alignment = if norm_u > 0.0 && vv > 0.0 {
                (uv / (norm_u * vv.sqrt())).abs()
            } else {
                0.0
            };
            let reward = if vv > 0.0 { uv / vv } else { 0.0 };
            (alignment, reward)
        };
        let action = match action {
            Some(a) if a < n => a,
            Some(a) => {
                return Err(AttackError::ActionOutOfRange {
                    index: 0,
                    action: a,
                    num_actions: n,
                })
            }
            None => (0..n)
                .max_by(|&a, &b| scored(a).0.total_cmp(&scored(b).0).then(b.cmp(&a)))
                .unwrap_or(0),
        };
        let (alignment, reward) = scored(action);
        let probabilities = host(softmax(matrix::<B>(logits, n, device), 1));
        Ok(PolicyGradientRecovery {
            action,
            reward,
            probabilities,
            alignment,
        })
    })
}

/// The outcome of QGI's Q-value rule (Section IV-C2).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct QValueRecovery {
    /// Q̂_rec: the victim's prediction for the reconstructed state and the action.
    pub predicted_q: f64,
    /// Q_rec = Q̂_rec − n ‖Q̂ − Q‖_rec.
    pub target_q: f64,
    /// n = sign(Q̂ − Q) = sign(∇_{b_last}\[a\]) (MSE: ∂J/∂Q̂ = 2(Q̂ − Q)/|B|); 0 if the error is 0.
    pub error_sign: f64,
    /// ‖Q̂ − Q‖_rec = |Q̂_rec − Q̃| ‖g‖ / ‖g_rec‖.
    pub error_magnitude: f64,
}

/// QGI's Q-value rule, given the reconstructed input of the linear part and the action.
///
/// 1. Q̂_rec = F(x_rec)\[a\], a forward pass of the reconstruction.
/// 2. n = sign(∇_{b_last}\[a\]).
/// 3. With the constant target Q̃ = Q̂_rec − n (so that Q̂_rec − Q̃ = n has the true error's
///    sign and unit size), g_rec = ∇_w J(F(x_rec), Q̃) and
///    ‖Q̂ − Q‖_rec = |Q̂_rec − Q̃| ‖g‖ / ‖g_rec‖; the MSE gradient is 2(Q̂ − Q) ∂Q̂/∂w, so the
///    ratio is exact when ∂Q̂/∂w at x_rec equals that at x.
/// 4. Q_rec = Q̂_rec − n ‖Q̂ − Q‖_rec.
///
/// The norms run over the Dense layers' gradients: the parameters whose gradient the
/// linear-part reconstruction determines (the paper's g; the conv gradients would add the
/// image reconstruction's error to a ratio that does not need it).
pub fn q_value_from_error_magnitude<B: Backend, M: InvertibleModel<Outer<B>>>(
    victim: &Victim<B, M>,
    record: &GradientRecord,
    input: &LinearPartInput,
    action: usize,
) -> Result<QValueRecovery, AttackError> {
    autodiff::exclusive(|| {
        victim.split("QGI's Q-value rule on a linear-part input")?;
        let output = victim.reconstructed_output(None, None, input)?;
        q_value_rule(victim, record, output, action)
    })
}

/// [`q_value_from_error_magnitude`] from the output F(x_rec) `[1, actions]`, tracked by the
/// outer autodiff: through the linear part, or through the whole network for a model without
/// a linear split (whose norms then run over every parameter's gradient).
pub(crate) fn q_value_rule<B: Backend, M: InvertibleModel<Outer<B>>>(
    victim: &Victim<B, M>,
    record: &GradientRecord,
    output: Tensor<Outer<B>, 2>,
    action: usize,
) -> Result<QValueRecovery, AttackError> {
    autodiff::exclusive(|| {
        let bias_name = victim.last_bias_name().ok_or(AttackError::NoLastBias {
            needed_by: "QGI's Q-value rule (Section IV-C2)",
        })?;
        let bias = record
            .get(&bias_name)
            .ok_or(AttackError::MissingGradient { name: bias_name })?;
        if action >= bias.values.len() {
            return Err(AttackError::ActionOutOfRange {
                index: 0,
                action,
                num_actions: bias.values.len(),
            });
        }
        let device = victim.device();
        let predicted_q = f64::from(host(output.clone())[action]);
        let error_sign =
            f64::from(bias.values[action].signum()) * f64::from(bias.values[action] != 0.0);
        if error_sign == 0.0 {
            return Ok(QValueRecovery {
                predicted_q,
                target_q: predicted_q,
                error_sign,
                error_magnitude: 0.0,
            });
        }
        let surrogate_target = predicted_q - error_sign;
        let loss = VictimKind::Dqn.objective(
            output,
            one_hot::<Outer<B>>(&[action], victim.num_actions(), device),
            vector::<Outer<B>>(&[surrogate_target as f32], device),
        );
        let gradients = param_gradients(victim.net(), &autodiff::backward(&loss));
        let (mut shared_sq, mut rec_sq) = (0.0f64, 0.0f64);
        for g in gradients
            .into_iter()
            .filter(|g| victim.is_determined_parameter(&g.name))
        {
            let shared = record.get(&g.name).ok_or(AttackError::MissingGradient {
                name: g.name.clone(),
            })?;
            shared_sq += shared
                .values
                .iter()
                .map(|&v| f64::from(v).powi(2))
                .sum::<f64>();
            rec_sq += host(g.gradient)
                .iter()
                .map(|&v| f64::from(v).powi(2))
                .sum::<f64>();
        }
        let error_magnitude = (predicted_q - surrogate_target).abs() * (shared_sq / rec_sq).sqrt();
        Ok(QValueRecovery {
            predicted_q,
            target_q: predicted_q - error_sign * error_magnitude,
            error_sign,
            error_magnitude,
        })
    })
}

/// The action by a rule that needs only ∇_{b_last} (`None` for a rule that needs p_rec).
pub(crate) fn action_before_reconstruction(
    rule: ActionRecovery,
    bias_gradient: &[f32],
) -> Option<usize> {
    match rule {
        ActionRecovery::LargestBiasGradient => Some(action_from_bias_gradient(bias_gradient)),
        ActionRecovery::OddSignBiasGradient => Some(odd_sign_action(bias_gradient)),
        ActionRecovery::PolicyGradientDirection => None,
    }
}

//! The batch attack (more than one sample behind the gradient): every assignment of the
//! actions read off ∇_{b_last} J to the samples goes through stage 1, the best one on.

use burn::tensor::backend::Backend;
use privrl_agents::tensor::matrix;
use rand_chacha::ChaCha8Rng;

use super::problem::Problem;
use super::reconstruction::{LossRecord, Reconstruction};
use super::supervision::FreeSupervision;
use super::variables::{split_rows, Values};
use crate::error::AttackError;
use crate::model::InvertibleModel;
use crate::victim::Outer;

/// Every way of giving the |B| entries of `bias_gradient` largest in magnitude (or all of its
/// non-zero entries, if fewer) to `batch` samples, each action used at least once, in a fixed
/// order: one action per sample (see [`attack_batch`](super::attack_batch)).
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

impl<B: Backend, M: InvertibleModel<Outer<B>>> Problem<'_, B, M> {
    /// [`attack_batch`](super::attack_batch) for more than one sample: stage 1 under every action
    /// assignment, the best one's stage 2, then each sample's action and target Q.
    pub(super) fn batch_attack(
        &self,
        rng: &mut ChaCha8Rng,
    ) -> Result<Vec<Reconstruction>, AttackError> {
        let victim = self.victim;
        let bias_gradient = self
            .bias_gradient
            .as_deref()
            .ok_or(AttackError::NoLastBias {
                needed_by: "the batch attack",
            })?;
        let actions = victim.num_actions();
        let mut supervision = FreeSupervision::new(self.config, self.known_signal(), actions, rng)?;
        let mut best: Option<AssignmentCandidate<'_, B, M>> = None;
        for assignment in batch_action_assignments(bias_gradient, self.batch) {
            let directions = batch_error_directions(bias_gradient, &assignment);
            let problem = Problem {
                error_direction: Some(matrix::<Outer<B>>(&directions, actions, victim.device())),
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
}

/// Stage 1 of the batch attack under one assignment of actions to samples.
struct AssignmentCandidate<'a, B: Backend, M> {
    loss: f64,
    problem: Problem<'a, B, M>,
    assignment: Vec<usize>,
    /// The per-sample error directions of [`batch_error_directions`], `[batch · actions]`.
    directions: Vec<f32>,
    linear: Values,
    history: Vec<LossRecord>,
}

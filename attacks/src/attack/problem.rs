//! The attack's problem: everything an iteration needs that does not change between
//! iterations (the victim, the shared gradient on device, the error direction of eq. 6).

use std::collections::HashMap;

use burn::module::Param;
use burn::tensor::backend::Backend;
use burn::tensor::Tensor;
use privrl_agents::params::{visit_params, ParamVisitor};
use privrl_agents::tensor::{matrix, one_hot, vector};
use privrl_agents::GradientRecord;

use super::config::AttackConfig;
use crate::error::AttackError;
use crate::model::InvertibleModel;
use crate::parts::{ActionRule, GradientSource, StateOptimisation};
use crate::recovery::action_before_reconstruction;
use crate::victim::{Inner, Outer, Victim, VictimKind};

/// Everything an iteration needs that does not change between iterations.
#[derive(Clone)]
pub(super) struct Problem<'a, B: Backend, M> {
    pub(super) victim: &'a Victim<B, M>,
    /// Samples behind the shared gradient; every free variable has this leading dimension.
    pub(super) batch: usize,
    pub(super) config: &'a AttackConfig,
    /// The shared gradient per parameter, on device, with its ‖g‖².
    pub(super) targets: HashMap<String, (Tensor<Inner<B>, 1>, f64)>,
    /// ∇_{b_last} on the host (eq. 6–9).
    pub(super) bias_gradient: Option<Vec<f32>>,
    /// Eq. 6's error direction as a `[1, actions]` outer constant.
    pub(super) error_direction: Option<Tensor<Outer<B>, 2>>,
    /// The action of the objective when a rule fixes it before the optimisation.
    pub(super) fixed_action: Option<Tensor<Outer<B>, 2>>,
    /// The signal of the objective when the attacker knows it (`SignalRule::Known`, or a
    /// registered rule that knows it), resolved once: its value and the `[1]` constant J uses.
    pub(super) fixed_signal: Option<(f64, Tensor<Outer<B>, 1>)>,
    /// The batched attack's own shared gradients, one per sample (`None` for the attack of
    /// one gradient, whose targets are `targets`).
    pub(super) each: Option<SampleTargets<B, M>>,
}

/// u `[samples, rows]` and v `[samples, cols]` of rank-one shared gradients g_k = u_k v_kᵀ.
pub(super) type RankOneFactors<B> = (Tensor<Inner<B>, 2>, Tensor<Inner<B>, 2>);

/// What the batched attack ([`attack_each`](super::attack_each)) matches: every sample's own
/// shared gradient, stacked, and the model with untracked parameters for the probed forward.
#[derive(Clone)]
pub(super) struct SampleTargets<B: Backend, M> {
    /// Per parameter: g_k of every sample `[samples, numel]` and each ‖g_k‖².
    pub(super) params: HashMap<String, (Tensor<Inner<B>, 2>, Vec<f64>)>,
    /// The matrices whose g_k are all of rank one, g_k = u_k v_kᵀ: u `[samples, rows]` and v
    /// `[samples, cols]`. A Dense weight's ⟨a_kᵀ δ_k, u_k v_kᵀ⟩ = (a_k · u_k)(δ_k · v_k) then
    /// never reads g_k, the attack's largest cost per sample at 150 px (docs/bench.md).
    pub(super) rank_one: HashMap<String, RankOneFactors<B>>,
    /// The victim's network with its parameters untracked: the batched attack takes every
    /// gradient from probes, never from the parameters.
    pub(super) net: M,
}

impl<'a, B: Backend, M: InvertibleModel<Outer<B>>> Problem<'a, B, M> {
    pub(super) fn new(
        victim: &'a Victim<B, M>,
        record: &GradientRecord,
        config: &'a AttackConfig,
        batch: usize,
    ) -> Result<Self, AttackError> {
        if batch > 1 {
            victim.split("the batch attack")?;
        }
        if batch > 1
            && (victim.kind() != VictimKind::Dqn
                || !matches!(config.source, GradientSource::ErrorDirection)
                || config.state != StateOptimisation::TwoStage)
        {
            return Err(AttackError::Incompatible(
                "batches of more than one sample need QGI (error direction, two stages) on a                  DQN victim"
                    .into(),
            ));
        }
        let device = victim.device();
        let mut sizes = ParamSizes::default();
        visit_params(victim.net(), &mut sizes);
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
                (vector::<Inner<B>>(&entry.values, device), norm_sq),
            );
        }
        let bias_gradient = match victim.last_bias_name() {
            Some(name) => Some(
                record
                    .get(&name)
                    .ok_or(AttackError::MissingGradient { name })?
                    .values
                    .clone(),
            ),
            None => None,
        };
        let needs_bias = |what: &'static str| AttackError::NoLastBias { needed_by: what };
        let error_direction = match &config.source {
            GradientSource::ErrorDirection => {
                let g = bias_gradient
                    .as_ref()
                    .ok_or_else(|| needs_bias("the error-direction surrogate (eq. 6)"))?;
                Some(matrix::<Outer<B>>(g, g.len(), device))
            }
            GradientSource::Objective { .. } => None,
        };
        let fixed_action = match &config.source {
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
        let fixed_signal = match &config.source {
            GradientSource::Objective { signal, .. } => signal
                .known(victim.kind())?
                .map(|value| (value, vector::<Outer<B>>(&[value as f32], device))),
            GradientSource::ErrorDirection => None,
        };
        Ok(Self {
            victim,
            batch,
            config,
            targets,
            bias_gradient,
            error_direction,
            fixed_action,
            fixed_signal,
            each: None,
        })
    }

    /// The batched attack's problem: `records[k]` is sample k's own shared gradient, each
    /// checked against the victim as [`Problem::new`] checks one; eq. 6's error direction is
    /// one row per sample. Only the error-direction source is batched (checked by the caller).
    pub(super) fn new_each(
        victim: &'a Victim<B, M>,
        records: &[GradientRecord],
        config: &'a AttackConfig,
    ) -> Result<Self, AttackError> {
        let device = victim.device();
        let mut sizes = ParamSizes::default();
        visit_params(victim.net(), &mut sizes);
        let samples = records.len();
        let mut params = HashMap::new();
        let mut rank_one_targets = HashMap::new();
        for entry in &records[0].params {
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
            let mut values = Vec::with_capacity(samples * expected);
            let mut norms = Vec::with_capacity(samples);
            let shape = sizes.matrices.get(&entry.name).copied();
            let mut factors = shape.map(|_| (Vec::new(), Vec::new()));
            for record in records {
                let own = record
                    .get(&entry.name)
                    .ok_or_else(|| AttackError::MissingGradient {
                        name: entry.name.clone(),
                    })?;
                if own.values.len() != expected {
                    return Err(AttackError::GradientShape {
                        name: entry.name.clone(),
                        expected,
                        got: own.values.len(),
                    });
                }
                norms.push(own.values.iter().map(|v| f64::from(*v).powi(2)).sum());
                values.extend_from_slice(&own.values);
                factors = factors.zip(shape).and_then(|((mut us, mut vs), shape)| {
                    let (u, v) = rank_one(&own.values, shape)?;
                    us.extend(u);
                    vs.extend(v);
                    Some((us, vs))
                });
            }
            if let (Some((us, vs)), Some([rows, cols])) = (factors, shape) {
                rank_one_targets.insert(
                    entry.name.clone(),
                    (
                        matrix::<Inner<B>>(&us, rows, device),
                        matrix::<Inner<B>>(&vs, cols, device),
                    ),
                );
            }
            params.insert(
                entry.name.clone(),
                (matrix::<Inner<B>>(&values, expected, device), norms),
            );
        }
        if let Some(extra) = records
            .iter()
            .flat_map(|r| &r.params)
            .find(|e| !params.contains_key(&e.name))
        {
            return Err(AttackError::MissingGradient {
                name: format!(
                    "{} (in one sample's record, not in the first's)",
                    extra.name
                ),
            });
        }
        let needed_by = "the error-direction surrogate (eq. 6)";
        let bias = victim
            .last_bias_name()
            .ok_or(AttackError::NoLastBias { needed_by })?;
        let mut directions = Vec::new();
        for record in records {
            let own = record
                .get(&bias)
                .ok_or_else(|| AttackError::MissingGradient { name: bias.clone() })?;
            directions.extend_from_slice(&own.values);
        }
        let actions = directions.len() / samples;
        Ok(Self {
            victim,
            batch: samples,
            config,
            targets: HashMap::new(),
            bias_gradient: None,
            error_direction: Some(matrix::<Outer<B>>(&directions, actions, device)),
            fixed_action: None,
            fixed_signal: None,
            each: Some(SampleTargets {
                params,
                rank_one: rank_one_targets,
                net: victim.net().clone().no_grad(),
            }),
        })
    }

    /// What the rules that recover one sample's action and signal need from its record: the
    /// output layer's bias gradient (and nothing to match).
    pub(super) fn for_recovery(
        victim: &'a Victim<B, M>,
        record: &GradientRecord,
        config: &'a AttackConfig,
    ) -> Result<Self, AttackError> {
        let bias_gradient = match victim.last_bias_name() {
            Some(name) => Some(
                record
                    .get(&name)
                    .ok_or(AttackError::MissingGradient { name })?
                    .values
                    .clone(),
            ),
            None => None,
        };
        Ok(Self {
            victim,
            batch: 1,
            config,
            targets: HashMap::new(),
            bias_gradient,
            error_direction: None,
            fixed_action: None,
            fixed_signal: None,
            each: None,
        })
    }
}

impl<B: Backend, M: InvertibleModel<Outer<B>>> Problem<'_, B, M> {
    /// The signal the attacker knows, if any.
    pub(super) fn known_signal(&self) -> Option<f64> {
        self.fixed_signal.as_ref().map(|(value, _)| *value)
    }
}

/// Name and size of every float parameter, in visiting order.
#[derive(Default)]
struct ParamSizes {
    sizes: Vec<(String, usize)>,
    /// `[rows, cols]` of the two-dimensional parameters (a Dense weight is `[d_in, d_out]`).
    matrices: HashMap<String, [usize; 2]>,
}

impl<BB: Backend> ParamVisitor<BB> for ParamSizes {
    fn visit<const D: usize>(&mut self, path: &str, param: &Param<Tensor<BB, D>>) {
        let dims = param.shape().dims::<D>();
        if let [rows, cols] = dims[..] {
            self.matrices.insert(path.to_string(), [rows, cols]);
        }
        self.sizes
            .push((path.to_string(), param.shape().num_elements()));
    }
}

/// `values`, a `[rows, cols]` matrix, as u vᵀ when it is of rank one to within rounding
/// (‖G − u vᵀ‖² ≤ 10⁻¹⁰ ‖G‖²): v is its largest row, u each row's projection on v. A Dense
/// layer's gradient for one sample is a_ᵀ δ, rank one; a noisy (defended) one is not, and keeps
/// its full matrix.
fn rank_one(values: &[f32], [rows, cols]: [usize; 2]) -> Option<(Vec<f32>, Vec<f32>)> {
    let row = |i: usize| &values[i * cols..(i + 1) * cols];
    let norm_sq = |r: &[f32]| r.iter().map(|x| f64::from(*x).powi(2)).sum::<f64>();
    let norms: Vec<f64> = (0..rows).map(|i| norm_sq(row(i))).collect();
    let total: f64 = norms.iter().sum();
    let (largest, largest_norm) = norms
        .iter()
        .copied()
        .enumerate()
        .max_by(|a, b| a.1.total_cmp(&b.1))?;
    if largest_norm == 0.0 {
        return Some((vec![0.0; rows], vec![0.0; cols]));
    }
    let v: Vec<f64> = row(largest).iter().map(|x| f64::from(*x)).collect();
    let mut u = Vec::with_capacity(rows);
    let mut residual = 0.0;
    for i in 0..rows {
        let r = row(i);
        let c = r
            .iter()
            .zip(&v)
            .map(|(x, y)| f64::from(*x) * y)
            .sum::<f64>()
            / largest_norm;
        residual += r
            .iter()
            .zip(&v)
            .map(|(x, y)| (f64::from(*x) - c * y).powi(2))
            .sum::<f64>();
        u.push(c as f32);
    }
    (residual <= 1e-10 * total).then(|| (u, v.iter().map(|&y| y as f32).collect()))
}

#[cfg(test)]
mod tests {
    use super::rank_one;

    #[test]
    fn a_single_samples_dense_gradient_factors_and_a_noisy_one_does_not() {
        // a_ᵀ δ for a = (0.5, −1, 2), δ = (3, 0.25): a Dense weight's gradient for one sample.
        let (a, d) = ([0.5f32, -1.0, 2.0], [3.0f32, 0.25]);
        let g: Vec<f32> = a
            .iter()
            .flat_map(|x| d.iter().map(move |y| x * y))
            .collect();
        let (u, v) = rank_one(&g, [3, 2]).expect("rank one");
        for i in 0..3 {
            for j in 0..2 {
                assert!((u[i] * v[j] - g[i * 2 + j]).abs() < 1e-6, "({i}, {j})");
            }
        }
        // Noise on one entry, 0.3 % of the matrix's norm, makes it full rank: refused.
        let mut noisy = g.clone();
        noisy[1] += 0.01;
        assert!(rank_one(&noisy, [3, 2]).is_none());
        assert_eq!(
            rank_one(&[0.0; 6], [3, 2]),
            Some((vec![0.0; 3], vec![0.0; 2]))
        );
    }
}

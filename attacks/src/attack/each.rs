//! The batched attack: many samples' gradients attacked in one optimisation, the samples'
//! free variables stacked on the batch axis, each sample matched against its own gradient
//! (`per_sample`), with each sample's restarts, best restart and loss history its own.

use burn::tensor::backend::Backend;
use burn::tensor::Tensor;
use privrl_agents::autodiff;
use privrl_agents::tensor::{matrix, vector};
use privrl_agents::GradientRecord;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use super::problem::Problem;
use super::reconstruction::{LossRecord, Reconstruction, Stage};
use super::supervision::{FreeSupervision, Supervision};
use super::variables::{split_rows, Block, Layout, Values};
use super::{attack, AttackConfig};
use crate::error::AttackError;
use crate::model::InvertibleModel;
use crate::parts::{gaussian_noise, GradientSource, StateOptimisation};
use crate::victim::{host, Inner, LinearPartInput, Outer, Victim};

/// Whether [`attack_each`] attacks `config` on `victim` in one batched optimisation: eq. 6's
/// error direction (QGI, RGI and their ablations) on a model whose split names its layers
/// ([`LinearSplit::layers`](crate::LinearSplit::layers)).
pub fn attack_each_batches<B: Backend, M: InvertibleModel<Outer<B>>>(
    victim: &Victim<B, M>,
    config: &AttackConfig,
) -> bool {
    matches!(config.source, GradientSource::ErrorDirection)
        && victim
            .net()
            .linear_split()
            .is_some_and(|split| split.layers().is_some())
}

/// Reconstructs the sample behind each of `records` (each the gradient of one sample, as
/// [`attack`] takes) in one optimisation: reconstruction k equals `attack(victim,
/// &records[k], config)` to float precision (the sums of the gradients run in another
/// order), and sample k's result depends on `records[k]` alone.
///
/// The samples' free variables are stacked on the batch axis, and one iteration forwards them
/// all, so the fixed cost of an iteration (graph building, small operations, the optimiser)
/// is paid once per batch rather than once per sample. Every part stays per sample:
/// - the matching loss: each sample's reconstructed gradients (per-sample gradients of the
///   victim, from probes on its layers' outputs) against its own shared gradient, with its own
///   ‖g_k‖² in eq. 5; the prior on its own images;
/// - the optimisation: the losses are summed, so sample k's gradient is that of its own loss;
///   Adam is elementwise, the schedule depends on the iteration only, and each sample draws
///   its initialisations from its own generator seeded with `config.seed`, as [`attack`]
///   does, and keeps its own best restart;
/// - the action and the signal: the rules on each sample's own reconstruction and gradient.
///
/// Configurations that [`attack_each_batches`] refuses (the objective source of DLG and IG, a model
/// without [`LinearSplit::layers`](crate::LinearSplit::layers)) are attacked one sample at a
/// time, with the same results.
pub fn attack_each<B: Backend, M: InvertibleModel<Outer<B>>>(
    victim: &Victim<B, M>,
    records: &[GradientRecord],
    config: &AttackConfig,
) -> Result<Vec<Reconstruction>, AttackError> {
    if records.len() <= 1 || !attack_each_batches(victim, config) {
        return records
            .iter()
            .map(|record| attack(victim, record, config))
            .collect();
    }
    autodiff::exclusive(|| {
        config.validate()?;
        config.check_compatible(victim.kind())?;
        if let Some(prior) = &config.prior {
            prior.check_available::<Inner<B>>()?;
        }
        let samples = records.len();
        let problem = Problem::new_each(victim, records, config)?;
        let mut rngs: Vec<ChaCha8Rng> = (0..samples)
            .map(|_| ChaCha8Rng::seed_from_u64(config.seed))
            .collect();
        let mut histories = vec![Vec::new(); samples];
        let parts = victim.observation_parts();
        let device = victim.device();
        let each_image = |values: &Values, block| {
            values
                .read(block)
                .map(|v| split_rows(&v, samples).into_iter().map(Some).collect())
                .unwrap_or_else(|| vec![None; samples])
        };
        let (rgb, depth, linear_parts): (Vec<_>, Vec<_>, Vec<LinearPartInput>) = match config.state
        {
            StateOptimisation::TwoStage => {
                let linear = problem.run_restarts_each(
                    Stage::LinearPart,
                    problem.linear_layout(),
                    None,
                    &mut rngs,
                    &mut histories,
                );
                let linear_parts = problem.linear_part_inputs(&linear);
                if parts.rgb.is_none() && parts.depth.is_none() {
                    (vec![None; samples], vec![None; samples], linear_parts)
                } else {
                    let vector = linear
                        .read(Block::Vector)
                        .map(|v| matrix::<Inner<B>>(&v, parts.vector, device));
                    let images = problem.run_restarts_each(
                        Stage::Images,
                        problem.image_layout(false),
                        vector,
                        &mut rngs,
                        &mut histories,
                    );
                    (
                        each_image(&images, Block::Rgb),
                        each_image(&images, Block::Depth),
                        linear_parts,
                    )
                }
            }
            StateOptimisation::Joint => {
                let joint = problem.run_restarts_each(
                    Stage::Joint,
                    problem.image_layout(true),
                    None,
                    &mut rngs,
                    &mut histories,
                );
                let (rgb, depth) = (
                    each_image(&joint, Block::Rgb),
                    each_image(&joint, Block::Depth),
                );
                let vectors = joint
                    .read(Block::Vector)
                    .map(|v| split_rows(&v, samples))
                    .unwrap_or_else(|| vec![Vec::new(); samples]);
                let linear_parts = (0..samples)
                    .map(|k| {
                        victim.linear_part_input_of(
                            rgb[k].as_deref(),
                            depth[k].as_deref(),
                            &vectors[k],
                        )
                    })
                    .collect::<Result<_, _>>()?;
                (rgb, depth, linear_parts)
            }
        };
        let mut out = Vec::with_capacity(samples);
        for (k, ((record, linear_part), history)) in
            records.iter().zip(linear_parts).zip(histories).enumerate()
        {
            let (rgb, depth) = (rgb[k].clone(), depth[k].clone());
            let supervision =
                FreeSupervision::new(config, None, victim.num_actions(), &mut rngs[k])?;
            let Supervision {
                action,
                signal,
                predicted_q,
                probabilities,
            } = Problem::for_recovery(victim, record, config)?.recover_supervision(
                record,
                (rgb.as_deref(), depth.as_deref()),
                &linear_part,
                &supervision,
            )?;
            out.push(Reconstruction {
                rgb,
                depth,
                vector: linear_part.vector.clone(),
                action,
                signal,
                predicted_q,
                probabilities,
                linear_part,
                loss_history: history,
            });
        }
        Ok(out)
    })
}

impl<B: Backend, M: InvertibleModel<Outer<B>>> Problem<'_, B, M> {
    /// [`Problem::run_restarts`] for every sample at once: each restart draws every sample's
    /// initialisation from its own generator, and each sample keeps its own restart with the
    /// lowest final loss. Returns the kept values in `layout`.
    fn run_restarts_each(
        &self,
        stage: Stage,
        layout: Layout,
        fixed_vector: Option<Tensor<Inner<B>, 2>>,
        rngs: &mut [ChaCha8Rng],
        histories: &mut [Vec<LossRecord>],
    ) -> Values {
        let samples = self.batch;
        let one = layout.per_sample(samples);
        let mut best: Vec<Option<(f64, Vec<f32>)>> = vec![None; samples];
        for restart in 0..self.config.restarts {
            let initial: Vec<Vec<f32>> = rngs
                .iter_mut()
                .map(|rng| gaussian_noise(one.len, self.config.init_std, rng))
                .collect();
            let (losses, theta) = self.run_stage_each(
                stage,
                restart,
                &layout,
                layout.interleave(&initial),
                fixed_vector.as_ref(),
                histories,
            );
            for ((best, loss), theta) in best
                .iter_mut()
                .zip(losses)
                .zip(layout.deinterleave(samples, &theta))
            {
                // A NaN loss never wins.
                if best.as_ref().is_none_or(|(b, _)| loss < *b || b.is_nan()) {
                    *best = Some((loss, theta));
                }
            }
        }
        let kept: Vec<Vec<f32>> = best
            .into_iter()
            .map(|b| b.expect("at least one restart").1)
            .collect();
        Values {
            theta: layout.interleave(&kept),
            layout,
        }
    }

    /// [`Problem::run_stage`] for every sample at once: Adam on the stacked variables against
    /// the summed per-sample losses; returns each sample's loss at the final values, and the
    /// final values.
    fn run_stage_each(
        &self,
        stage: Stage,
        restart: usize,
        layout: &Layout,
        theta: Vec<f32>,
        fixed_vector: Option<&Tensor<Inner<B>, 2>>,
        histories: &mut [Vec<LossRecord>],
    ) -> (Vec<f64>, Vec<f32>) {
        let device = self.victim.device();
        let iterations = self.config.iterations_per_stage;
        let record = |histories: &mut [Vec<LossRecord>], iteration, losses: &[f32]| {
            for (history, loss) in histories.iter_mut().zip(losses) {
                history.push(LossRecord {
                    stage,
                    restart,
                    iteration,
                    loss: f64::from(*loss),
                });
            }
        };
        let mut theta = vector::<B>(&theta, device);
        let mut adam = self.config.optimizer.init::<B>(layout.len, device);
        for iteration in 0..=iterations {
            let tracked = Tensor::<Inner<B>, 1>::from_inner(theta.clone()).require_grad();
            let vars = self.split(layout, &tracked);
            let losses = self.losses_each(stage, vars, fixed_vector);
            if iteration == iterations {
                // The losses at the final values, without a step: what restarts compare.
                let losses = host(losses.inner());
                record(histories, iteration, &losses);
                return (losses.iter().map(|&l| f64::from(l)).collect(), host(theta));
            }
            if iteration % self.config.log_every == 0 {
                record(histories, iteration, &host(losses.clone().inner()));
            }
            let gradient = tracked
                .grad(&autodiff::backward(&losses.sum()))
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

#[cfg(test)]
mod tests {
    use burn::backend::NdArray;
    use privrl_agents::{ConvEncoderConfig, MultimodalNetConfig};

    use super::*;
    use crate::victim::{Sample, VictimKind};

    /// f64 throughout: the batched and the one-at-a-time attack sum the same terms in other
    /// orders, and f64 keeps that difference far below the tolerance, which is the f32
    /// rounding of the results (a reconstruction is returned in f32).
    type B = NdArray<f64>;

    fn victim() -> Victim<B> {
        // S1's parts at 8 px: RGB and depth encoders, a 4-value vector branch, a head.
        let network = MultimodalNetConfig::new(4, 3)
            .with_rgb(Some(ConvEncoderConfig::new(3, 8).with_channels(vec![2, 3])))
            .with_depth(Some(ConvEncoderConfig::new(1, 8).with_channels(vec![2])))
            .with_vector_hidden(vec![5])
            .with_head_hidden(vec![6]);
        Victim::<B>::from_seed(&network, VictimKind::Dqn, 7, &Default::default()).unwrap()
    }

    fn sample(seed: u64, action: usize) -> Sample {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mut image = |len| -> Vec<f32> {
            gaussian_noise(len, 0.3, &mut rng)
                .iter()
                .map(|v| v.abs().min(1.0))
                .collect()
        };
        let (rgb, depth) = (image(3 * 64), image(64));
        Sample {
            rgb: Some(rgb),
            depth: Some(depth),
            vector: gaussian_noise(4, 0.5, &mut rng),
            action,
            signal: 1.0 + seed as f64 / 10.0,
        }
    }

    /// The largest difference, relative to the magnitude where that exceeds 1.
    fn gap(a: &[f32], b: &[f32]) -> f64 {
        assert_eq!(a.len(), b.len());
        a.iter()
            .zip(b)
            .map(|(&x, &y)| relative(f64::from(x), f64::from(y)))
            .fold(0.0, f64::max)
    }

    fn relative(x: f64, y: f64) -> f64 {
        (x - y).abs() / x.abs().max(1.0)
    }

    /// The largest difference between two reconstructions over everything they hold.
    fn difference(a: &Reconstruction, b: &Reconstruction) -> f64 {
        assert_eq!(a.action, b.action);
        assert_eq!(a.loss_history.len(), b.loss_history.len());
        let options = |x: &Option<Vec<f32>>, y: &Option<Vec<f32>>| match (x, y) {
            (Some(x), Some(y)) => gap(x, y),
            (None, None) => 0.0,
            _ => f64::INFINITY,
        };
        let histories = a
            .loss_history
            .iter()
            .zip(&b.loss_history)
            .map(|(x, y)| {
                assert_eq!(
                    (x.stage, x.restart, x.iteration),
                    (y.stage, y.restart, y.iteration)
                );
                relative(x.loss, y.loss)
            })
            .fold(0.0, f64::max);
        [
            options(&a.rgb, &b.rgb),
            options(&a.depth, &b.depth),
            gap(&a.vector, &b.vector),
            options(&a.linear_part.rgb_features, &b.linear_part.rgb_features),
            options(&a.linear_part.depth_features, &b.linear_part.depth_features),
            relative(a.signal, b.signal),
            relative(a.predicted_q.unwrap(), b.predicted_q.unwrap()),
            histories,
        ]
        .into_iter()
        .fold(0.0, f64::max)
    }

    fn check_equal_to_one_at_a_time(config: &AttackConfig) {
        let victim = victim();
        let samples = [sample(1, 0), sample(2, 2), sample(3, 1), sample(4, 2)];
        let records: Vec<GradientRecord> = samples
            .iter()
            .map(|s| victim.shared_gradient(std::slice::from_ref(s)).unwrap())
            .collect();
        assert!(attack_each_batches(&victim, config));
        // The Dense weights are matched through the gradients' rank-one factors, the
        // convolutions and the biases through their full gradients: both are compared below.
        let problem = Problem::new_each(&victim, &records[..3], config).unwrap();
        let each = problem.each.as_ref().unwrap();
        assert!(each.rank_one.contains_key("head.layers.0.weight"));
        assert!(each.rank_one.contains_key("vector_layers.0.weight"));
        let batched = attack_each(&victim, &records[..3], config).unwrap();
        assert_eq!(batched.len(), 3);
        for (k, (record, got)) in records.iter().zip(&batched).enumerate() {
            let alone = attack(&victim, record, config).unwrap();
            let d = difference(got, &alone);
            assert!(d < 1e-6, "sample {k}: batched differs from alone by {d:e}");
        }
        // The samples differ (the check above is not comparing copies) ...
        assert!(
            gap(
                batched[0].rgb.as_ref().unwrap(),
                batched[1].rgb.as_ref().unwrap()
            ) > 1e-3
        );
        // ... and no sample sees another's gradient: replacing sample 1's gradient changes
        // sample 1 alone.
        let swapped = [records[0].clone(), records[3].clone(), records[2].clone()];
        let again = attack_each(&victim, &swapped, config).unwrap();
        for k in [0, 2] {
            let d = difference(&again[k], &batched[k]);
            assert!(
                d < 1e-6,
                "sample {k} moved by {d:e} when sample 1's gradient changed"
            );
        }
        let moved = gap(
            again[1].rgb.as_ref().unwrap(),
            batched[1].rgb.as_ref().unwrap(),
        );
        assert!(
            moved > 1e-3,
            "sample 1 did not follow its gradient: {moved:e}"
        );
    }

    #[test]
    fn batched_two_stage_qgi_equals_the_attack_of_each_sample_alone() {
        // Two restarts, so each sample keeps its own best restart; few iterations, so the
        // differences between the orders of summation do not grow.
        let config = AttackConfig::qgi()
            .with_iterations_per_stage(12)
            .with_restarts(2)
            .with_log_every(5);
        check_equal_to_one_at_a_time(&config);
    }

    #[test]
    fn batched_joint_ablation_equals_the_attack_of_each_sample_alone() {
        let config = AttackConfig::qgi()
            .with_state(StateOptimisation::Joint)
            .with_iterations_per_stage(12);
        check_equal_to_one_at_a_time(&config);
    }

    #[test]
    fn configurations_it_does_not_batch_are_attacked_one_at_a_time() {
        let victim = victim();
        let config = AttackConfig::inverting_gradients().with_iterations_per_stage(3);
        assert!(!attack_each_batches(&victim, &config));
        let records: Vec<GradientRecord> = [sample(1, 0), sample(2, 1)]
            .iter()
            .map(|s| victim.shared_gradient(std::slice::from_ref(s)).unwrap())
            .collect();
        let each = attack_each(&victim, &records, &config).unwrap();
        for (record, got) in records.iter().zip(&each) {
            assert_eq!(got, &attack(&victim, record, &config).unwrap());
        }
    }
}

//! The loss of one iteration: forward the victim, build J̃ (eq. 6) or J (eq. 1), outer
//! `backward()` for g_rec, then the gradient matching loss L(g_rec, g) plus the image prior.

use burn::tensor::activation::softmax;
use burn::tensor::backend::Backend;
use burn::tensor::Tensor;
use privrl_agents::autodiff;
use privrl_agents::dp::{probed_forward, PerSampleFactors};
use privrl_agents::param_gradients;

use super::problem::Problem;
use super::reconstruction::Stage;
use super::variables::Vars;
use crate::model::InvertibleModel;
use crate::parts::{MatchedGradient, ReconstructedGradient};
use crate::victim::{Inner, Outer};

impl<B: Backend, M: InvertibleModel<Outer<B>>> Problem<'_, B, M> {
    /// The loss of one iteration: L(g_rec, g) (+ the prior on images).
    ///
    /// With a linear split, the head's weight gradients come back as their factors (see
    /// `ReconstructedGradient::Factored`) and the other parameters' gradients are formed;
    /// without one (joint optimisation only), every gradient is formed.
    pub(super) fn loss(
        &self,
        stage: Stage,
        vars: Vars<Inner<B>>,
        fixed_vector: Option<&Tensor<Inner<B>, 2>>,
    ) -> Tensor<Inner<B>, 1> {
        let net = self.victim.net();
        let lift2 = |t: Tensor<Inner<B>, 2>| Tensor::<Outer<B>, 2>::from_inner(t);
        let lift4 = |t: Tensor<Inner<B>, 4>| Tensor::<Outer<B>, 4>::from_inner(t);
        let split = net.linear_split();
        let (rgb, depth) = (vars.rgb.clone().map(lift4), vars.depth.clone().map(lift4));
        let vector = match stage {
            Stage::Images => fixed_vector.cloned().map(lift2),
            Stage::LinearPart | Stage::Joint => vars.vector.map(lift2),
        };
        let (output, head) = match split {
            Some(split) => {
                let head_input = match stage {
                    Stage::LinearPart => split.head_input(
                        vars.rgb_features.map(lift2),
                        vars.depth_features.map(lift2),
                        vector,
                    ),
                    Stage::Images | Stage::Joint => {
                        let (rgb, depth) = split.image_features(rgb, depth);
                        split.head_input(rgb, depth, vector)
                    }
                };
                let head = probed_forward(split.head(), head_input);
                (head.output.clone(), Some((split, head)))
            }
            None => (net.forward_parts(rgb, depth, vector), None),
        };
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
                let signal = match (&self.fixed_signal, vars.signal) {
                    (Some((_, known)), _) => known.clone(),
                    (None, Some(free)) => Tensor::from_inner(free),
                    (None, None) => unreachable!("an objective without a signal"),
                };
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
            .filter(|g| stage != Stage::LinearPart || self.victim.is_determined_parameter(&g.name))
            .filter_map(|g| matched(&g.name, ReconstructedGradient::Flat(g.gradient)))
            .collect();
        if let Some((split, head)) = head {
            let prefix = split.head_prefix();
            let factors = PerSampleFactors::from_backward(split.head(), &head, &grads);
            for ((inputs, errors), (weight_path, bias_path)) in
                factors.layers().zip(factors.layer_paths())
            {
                let weight = ReconstructedGradient::Factored {
                    inputs: inputs.clone(),
                    errors: errors.clone(),
                };
                parts.extend(matched(&format!("{prefix}{weight_path}"), weight));
                if let Some(bias_path) = bias_path {
                    let bias = errors.clone().sum_dim(0).reshape([-1]);
                    parts.extend(matched(
                        &format!("{prefix}{bias_path}"),
                        ReconstructedGradient::Flat(bias),
                    ));
                }
            }
        }
        let mut loss = self.config.matching.loss_of_matched(parts);
        if let Some(prior) = &self.config.prior {
            for images in [vars.rgb, vars.depth].into_iter().flatten() {
                loss = loss + prior.penalty(images);
            }
        }
        loss
    }
}

#[cfg(test)]
mod tests {
    use burn::backend::NdArray;
    use burn::tensor::TensorData;
    use privrl_agents::tensor::float_options;
    use privrl_agents::{ConvEncoderConfig, MultimodalNetConfig};
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    use super::*;
    use crate::attack::variables::{Block, Layout};
    use crate::attack::AttackConfig;
    use crate::parts::gaussian_noise;
    use crate::victim::{Sample, Victim, VictimKind};

    /// f64 throughout, so that central differences resolve the gradient to ~1e-8.
    type B = NdArray<f64>;

    /// Stage 1's loss at `theta` and its gradient by the attack's own path: the head's weight
    /// gradients as factors (`ReconstructedGradient::Factored`), matched by eq. 5 plus the
    /// magnitude term, differentiated by the inner autodiff.
    fn loss_and_gradient(
        problem: &Problem<'_, B, privrl_agents::MultimodalNet<Outer<B>>>,
        layout: &Layout,
        theta: &[f64],
    ) -> (f64, Vec<f64>) {
        let device = Default::default();
        autodiff::exclusive(|| {
            let theta = Tensor::<B, 1>::from_data(
                TensorData::new(theta.to_vec(), [theta.len()]),
                float_options::<B>(&device),
            );
            let tracked = Tensor::<Inner<B>, 1>::from_inner(theta).require_grad();
            let loss = problem.loss(Stage::LinearPart, problem.split(layout, &tracked), None);
            let value = loss.clone().inner().into_data().to_vec::<f64>().unwrap()[0];
            let gradient = tracked
                .grad(&autodiff::backward(&loss))
                .expect("θ is tracked");
            (value, gradient.into_data().to_vec::<f64>().unwrap())
        })
    }

    #[test]
    fn the_factored_stage_one_gradient_matches_finite_differences() {
        let device = Default::default();
        // Depth features (2 channels × 4 × 4) and a 4-vector into three head layers, so every
        // head layer's weight gradient is matched through its factors.
        let network = MultimodalNetConfig::new(4, 3)
            .with_depth(Some(ConvEncoderConfig::new(1, 8).with_channels(vec![2])))
            .with_vector_hidden(vec![5])
            .with_head_hidden(vec![6, 5]);
        let victim = Victim::<B>::from_seed(&network, VictimKind::Dqn, 7, &device).unwrap();
        let mut rng = ChaCha8Rng::seed_from_u64(11);
        let sample = Sample {
            rgb: None,
            depth: Some(
                gaussian_noise(64, 0.3, &mut rng)
                    .iter()
                    .map(|v| v.abs())
                    .collect(),
            ),
            vector: vec![-0.5, -0.2, 0.3, 0.6],
            action: 1,
            signal: 1.5,
        };
        let record = victim
            .shared_gradient(std::slice::from_ref(&sample))
            .unwrap();
        let config = AttackConfig::qgi();
        let problem = Problem::new(&victim, &record, &config, 1).unwrap();
        let mut layout = Layout::default();
        let features = victim.net().depth.as_ref().unwrap().d_output;
        layout.push(Block::DepthFeatures, features);
        layout.push(Block::Vector, 4);
        let theta: Vec<f64> = gaussian_noise(layout.len, 1.0, &mut rng)
            .into_iter()
            .map(f64::from)
            .collect();
        let (loss, gradient) = loss_and_gradient(&problem, &layout, &theta);
        assert!(loss.is_finite() && loss > 0.0, "{loss}");
        let h = 1e-6;
        let mut worst: f64 = 0.0;
        for i in 0..theta.len() {
            let at = |delta: f64| {
                let mut moved = theta.clone();
                moved[i] += delta;
                loss_and_gradient(&problem, &layout, &moved).0
            };
            let numeric = (at(h) - at(-h)) / (2.0 * h);
            let error =
                (gradient[i] - numeric).abs() / (1e-6 + numeric.abs().max(gradient[i].abs()));
            worst = worst.max(error);
            assert!(
                error < 1e-4,
                "θ[{i}]: autodiff {} vs central difference {numeric}",
                gradient[i]
            );
        }
        // The check is not vacuous: the gradient has weight on features and vector alike.
        let norm =
            |r: std::ops::Range<usize>| gradient[r].iter().map(|g| g * g).sum::<f64>().sqrt();
        assert!(
            norm(0..features) > 1e-6 && norm(features..features + 4) > 1e-6,
            "{gradient:?}"
        );
        println!(
            "worst relative error {worst:.2e} over {} coordinates",
            theta.len()
        );
    }
}

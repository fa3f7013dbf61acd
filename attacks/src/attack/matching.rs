//! The loss of one iteration: forward the victim, build J̃ (eq. 6) or J (eq. 1), outer
//! `backward()` for g_rec, then the gradient matching loss L(g_rec, g) plus the image prior.

use burn::tensor::activation::softmax;
use burn::tensor::backend::Backend;
use burn::tensor::Tensor;
use privrl_agents::autodiff;
use privrl_agents::param_gradients;
use privrl_agents::per_sample::{probed_forward, PerSampleFactors};

use super::problem::Problem;
use super::reconstruction::Stage;
use super::variables::Vars;
use crate::parts::{MatchedGradient, ReconstructedGradient};
use crate::victim::{head_input, Inner, Outer, Victim};

impl<B: Backend> Problem<'_, B> {
    /// The loss of one iteration: L(g_rec, g) (+ the prior on images).
    pub(super) fn loss(
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
}

//! The batched attack's loss of one iteration: S independent samples stacked on the batch
//! axis, each matched against its own shared gradient.
//!
//! The victim's backward sums parameter gradients over the batch, so the batched attack
//! takes no gradient from the parameters: every layer gets a zero probe on its output (the
//! parameters untracked), and after the outer `backward()` of J̃ = Σ_k d_kᵀ F(x_k) (eq. 6,
//! row k with sample k's own error direction) the probe's gradient row k is sample k's output
//! error δ_k alone, since no layer mixes samples. Each sample's parameter gradients follow as
//! Opacus forms per-sample gradients: a Dense layer's as the factors a_kᵀ δ_k, a
//! convolution's as δ_k times the sample's im2col columns. The errors and inputs are
//! inner-tracked, so the matching loss is differentiated again with respect to the
//! reconstruction exactly as the one-sample attack's is.

use burn::tensor::backend::Backend;
use burn::tensor::Tensor;
use privrl_agents::autodiff;
use privrl_agents::dp::{probed_forward, PerSampleFactors};
use privrl_agents::tensor::float_options;
use privrl_agents::{im2col, Activation, ConvEncoder, Dense};

use super::problem::{Problem, SampleTargets};
use super::reconstruction::Stage;
use super::variables::Vars;
use crate::model::{InvertibleModel, SplitLayers};
use crate::parts::{GradientMatchingLoss, SampleGradients, SampleMatched, SampleTarget};
use crate::victim::{Inner, Outer};

/// A layer's output probe and what its per-sample gradients are formed from.
enum Probed<B: Backend> {
    Dense {
        weight: String,
        bias: Option<String>,
        /// a `[samples, d_in]`.
        inputs: Tensor<Outer<B>, 2>,
        /// On the output `[samples, d_out]`.
        probe: Tensor<Outer<B>, 2>,
    },
    Conv {
        weight: String,
        bias: String,
        /// `[c_in·k², samples·h'·w']`.
        columns: Tensor<Outer<B>, 2>,
        /// On the output before the reshape, `[c_out, samples·h'·w']`.
        probe: Tensor<Outer<B>, 2>,
        samples: usize,
    },
}

fn zero_probe<B: Backend>(like: &Tensor<Outer<B>, 2>) -> Tensor<Outer<B>, 2> {
    Tensor::zeros(like.dims(), float_options::<Outer<B>>(&like.device())).require_grad()
}

/// `encoder.forward(images)` with a probe on every convolution ([`privrl_agents::conv2d_im2col`]'s
/// own operations, so the values are the same).
fn probed_encoder<B: Backend>(
    encoder: &ConvEncoder<Outer<B>>,
    prefix: &str,
    images: Tensor<Outer<B>, 4>,
    probes: &mut Vec<Probed<B>>,
) -> Tensor<Outer<B>, 2> {
    let mut h = images;
    for (i, conv) in encoder.convs.iter().enumerate() {
        let [samples, _, size, _] = h.dims();
        let [channels_out, channels_in, kernel, _] = conv.weight.dims();
        let size_out = conv.output_size(size);
        let columns = im2col(h, kernel, conv.stride, conv.padding);
        let out = conv
            .weight
            .val()
            .reshape([channels_out, channels_in * kernel * kernel])
            .matmul(columns.clone())
            + conv.bias.val().reshape([channels_out, 1]);
        let probe = zero_probe::<B>(&out);
        let out = (out + probe.clone())
            .reshape([channels_out, samples, size_out, size_out])
            .swap_dims(0, 1);
        h = encoder.activation.forward(out);
        probes.push(Probed::Conv {
            weight: format!("{prefix}convs.{i}.weight"),
            bias: format!("{prefix}convs.{i}.bias"),
            columns,
            probe,
            samples,
        });
    }
    h.flatten(1, 3)
}

/// The vector branch with a probe on every Dense layer.
fn probed_vector_branch<B: Backend>(
    layers: &[Dense<Outer<B>>],
    activation: Activation,
    prefix: &str,
    vector: Tensor<Outer<B>, 2>,
    probes: &mut Vec<Probed<B>>,
) -> Tensor<Outer<B>, 2> {
    let mut h = vector;
    for (i, layer) in layers.iter().enumerate() {
        let out = layer.forward(h.clone());
        let probe = zero_probe::<B>(&out);
        probes.push(Probed::Dense {
            weight: format!("{prefix}{i}.weight"),
            bias: layer.bias.as_ref().map(|_| format!("{prefix}{i}.bias")),
            inputs: h,
            probe: probe.clone(),
        });
        h = activation.forward(out + probe);
    }
    h
}

impl<B: Backend> Probed<B> {
    /// Each sample's gradients of the layer's parameters, by path.
    fn gradients(
        self,
        grads: &<Outer<B> as burn::tensor::backend::AutodiffBackend>::Gradients,
    ) -> Vec<(String, SampleGradients<Inner<B>>)> {
        let errors_of = |probe: &Tensor<Outer<B>, 2>| {
            probe.grad(grads).unwrap_or_else(|| {
                // No path from this layer to the loss: its gradients are zero.
                Tensor::zeros(probe.dims(), float_options::<Inner<B>>(&probe.device()))
            })
        };
        match self {
            Probed::Dense {
                weight,
                bias,
                inputs,
                probe,
            } => {
                let errors = errors_of(&probe);
                let mut out = vec![(
                    weight,
                    SampleGradients::Factored {
                        inputs: inputs.inner(),
                        errors: errors.clone(),
                    },
                )];
                out.extend(bias.map(|bias| (bias, SampleGradients::Rows(errors))));
                out
            }
            Probed::Conv {
                weight,
                bias,
                columns,
                probe,
                samples,
            } => {
                let [channels_out, width] = probe.dims();
                let [patch, _] = columns.dims();
                let per_sample = width / samples;
                // δ `[samples, c_out, h'w']` times the columns `[samples, h'w', c_in·k²]`.
                let errors = errors_of(&probe)
                    .reshape([channels_out, samples, per_sample])
                    .swap_dims(0, 1);
                let columns = columns
                    .inner()
                    .reshape([patch, samples, per_sample])
                    .swap_dims(0, 1)
                    .swap_dims(1, 2);
                let weight_gradient = errors
                    .clone()
                    .matmul(columns)
                    .reshape([samples, channels_out * patch]);
                let bias_gradient = errors.sum_dim(2).reshape([samples, channels_out]);
                vec![
                    (weight, SampleGradients::Rows(weight_gradient)),
                    (bias, SampleGradients::Rows(bias_gradient)),
                ]
            }
        }
    }
}

impl<B: Backend, M: InvertibleModel<Outer<B>>> Problem<'_, B, M> {
    /// The loss of every sample, `[samples]`: L(g_rec,k, g_k) (+ the prior on sample k's
    /// images). Their sum's gradient with respect to sample k's variables is the gradient of
    /// sample k's loss alone.
    pub(super) fn losses_each(
        &self,
        stage: Stage,
        vars: Vars<Inner<B>>,
        fixed_vector: Option<&Tensor<Inner<B>, 2>>,
    ) -> Tensor<Inner<B>, 1> {
        let SampleTargets {
            params,
            rank_one,
            net,
        } = self.each.as_ref().expect("the batched attack");
        let split = net.linear_split().expect("checked by attack_each");
        let SplitLayers {
            rgb: rgb_encoder,
            depth: depth_encoder,
            vector: vector_layers,
            vector_prefix,
            activation,
        } = split.layers().expect("checked by attack_each");
        let lift2 = |t: Tensor<Inner<B>, 2>| Tensor::<Outer<B>, 2>::from_inner(t);
        let lift4 = |t: Tensor<Inner<B>, 4>| Tensor::<Outer<B>, 4>::from_inner(t);
        let mut probes = Vec::new();
        let vector = match stage {
            Stage::Images => fixed_vector.cloned().map(lift2),
            Stage::LinearPart | Stage::Joint => vars.vector.map(lift2),
        };
        let (rgb_features, depth_features) = match stage {
            Stage::LinearPart => (vars.rgb_features.map(lift2), vars.depth_features.map(lift2)),
            Stage::Images | Stage::Joint => {
                let mut encode =
                    |encoder: Option<(&ConvEncoder<Outer<B>>, &str)>,
                     images: Option<Tensor<Inner<B>, 4>>| {
                        match (encoder, images) {
                            (Some((encoder, prefix)), Some(images)) => {
                                Some(probed_encoder(encoder, prefix, lift4(images), &mut probes))
                            }
                            _ => None,
                        }
                    };
                let rgb = encode(rgb_encoder, vars.rgb.clone());
                (rgb, encode(depth_encoder, vars.depth.clone()))
            }
        };
        let vector_features = vector.map(|vector| {
            probed_vector_branch(
                vector_layers,
                activation,
                vector_prefix,
                vector,
                &mut probes,
            )
        });
        let head_input = Tensor::cat(
            rgb_features
                .into_iter()
                .chain(depth_features)
                .chain(vector_features)
                .collect(),
            1,
        );
        let head = probed_forward(split.head(), head_input);
        let direction = self
            .error_direction
            .clone()
            .expect("the batched attack uses eq. 6");
        // eq. 6 per sample: J̃ = Σ_k d_kᵀ F(x_k); no layer mixes samples.
        let grads = autodiff::backward(&(head.output.clone() * direction).sum());
        let mut gradients: Vec<(String, SampleGradients<Inner<B>>)> = probes
            .into_iter()
            .flat_map(|probed| probed.gradients(&grads))
            .collect();
        let prefix = split.head_prefix();
        let factors = PerSampleFactors::from_backward(split.head(), &head, &grads);
        for ((inputs, errors), (weight_path, bias_path)) in
            factors.layers().zip(factors.layer_paths())
        {
            gradients.push((
                format!("{prefix}{weight_path}"),
                SampleGradients::Factored {
                    inputs: inputs.clone(),
                    errors: errors.clone(),
                },
            ));
            if let Some(bias_path) = bias_path {
                gradients.push((
                    format!("{prefix}{bias_path}"),
                    SampleGradients::Rows(errors.clone()),
                ));
            }
        }
        let mut norm_sq = vec![0.0; self.batch];
        let mut parts = Vec::with_capacity(gradients.len());
        for (name, reconstructed) in gradients {
            if stage == Stage::LinearPart && !self.victim.is_determined_parameter(&name) {
                continue;
            }
            let Some((target, norms)) = params.get(&name) else {
                continue;
            };
            for (total, norm) in norm_sq.iter_mut().zip(norms) {
                *total += norm;
            }
            let target = match (&reconstructed, rank_one.get(&name)) {
                (SampleGradients::Factored { .. }, Some((u, v)))
                    if self.config.matching != GradientMatchingLoss::SquaredL2 =>
                {
                    SampleTarget::RankOne {
                        u: u.clone(),
                        v: v.clone(),
                    }
                }
                _ => SampleTarget::Rows(target.clone()),
            };
            parts.push(SampleMatched {
                reconstructed,
                target,
            });
        }
        let mut loss = self.config.matching.loss_per_sample(parts, &norm_sq);
        if let Some(prior) = &self.config.prior {
            for images in [vars.rgb, vars.depth].into_iter().flatten() {
                loss = loss + prior.penalty_per_sample(images);
            }
        }
        loss
    }
}

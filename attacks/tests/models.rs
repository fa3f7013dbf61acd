//! The attack on networks other than the paper's multimodal victim: privrl's image-only
//! [`ConvNet`], its [`Mlp`] on vector states, and a model of the test's own that declares no
//! linear part (attacked by joint optimisation). Each recovers the private input to a stated
//! threshold on a tiny problem.

mod common;

use burn::backend::NdArray;
use burn::module::Module;
use burn::tensor::backend::Backend;
use burn::tensor::Tensor;
use privrl_agents::{
    Activation, ConvEncoderConfig, ConvNet, ConvNetConfig, Mlp, MlpConfig, MultimodalNetConfig,
};
use privrl_attacks::{
    attack, score_reconstruction, AttackConfig, AttackError, ImageNormalisation, ImagePrior,
    InvertibleModel, ObservationParts, Outer, Sample, Victim, VictimKind,
};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

type B = NdArray;

fn max_abs_error(got: &[f32], truth: &[f32]) -> f32 {
    got.iter()
        .zip(truth)
        .map(|(g, t)| (g - t).abs())
        .fold(0.0, f32::max)
}

/// QGI on a CNN over one 8 × 8 depth image (8 channels of 4 × 4 ReLU features, two per pixel,
/// so that the features determine the image): stage 1 recovers the features from the head's
/// gradients, stage 2 the image behind them.
#[test]
fn qgi_inverts_an_image_only_cnn() {
    let device = Default::default();
    let config = ConvNetConfig::new(ConvEncoderConfig::new(1, 8).with_channels(vec![8]), 5)
        .with_hidden(vec![16]);
    let net = config.init::<Outer<B>>(&device, &mut ChaCha8Rng::seed_from_u64(2));
    let victim = Victim::<B, ConvNet<Outer<B>>>::new(net, VictimKind::Dqn, &device).unwrap();
    assert_eq!(
        victim.observation_parts(),
        ObservationParts {
            rgb: None,
            depth: Some(privrl_agents::ImageShape {
                channels: 1,
                size: 8
            }),
            vector: 0,
        }
    );
    let mut rng = ChaCha8Rng::seed_from_u64(5);
    let sample = Sample {
        rgb: None,
        depth: Some(common::synthetic_image(1, 8, &mut rng)),
        vector: Vec::new(),
        action: 3,
        signal: 2.5,
    };
    let record = victim
        .shared_gradient(std::slice::from_ref(&sample))
        .unwrap();
    let attack_config = AttackConfig::qgi()
        .with_iterations_per_stage(1500)
        .with_restarts(2)
        .with_prior(Some(ImagePrior::TotalVariation { weight: 0.001 }));
    let rec = attack(&victim, &record, &attack_config).unwrap();
    let row =
        score_reconstruction(&victim, &sample, &rec, ImageNormalisation::Clamp, 0, 0.0).unwrap();
    println!("CNN: {row:?}");
    assert!(!row.failed);
    assert!(row.action_correct, "action {} vs 3", rec.action);
    // 25 dB: an RMS error of 5.6 % of the pixel range (Gaussian noise scores about 5 dB).
    let depth = row.depth.unwrap();
    assert!(depth.psnr > 25.0, "depth PSNR {:.2} dB", depth.psnr);
    assert!(depth.ssim > 0.95, "depth SSIM {:.3}", depth.ssim);
    assert!(row.target_q_error_pct.unwrap() < 1.0, "{row:?}");
}

/// QGI on an MLP over a 6-value state, the whole network its linear part: the state, the
/// action and the target Q come back to 1e-3.
#[test]
fn qgi_inverts_an_mlp_on_vector_states() {
    let device = Default::default();
    let net = MlpConfig::new(6, vec![24], 4)
        .with_activation(Activation::Relu)
        .init::<Outer<B>>(&device, &mut ChaCha8Rng::seed_from_u64(3));
    let victim = Victim::<B, Mlp<Outer<B>>>::new(net, VictimKind::Dqn, &device).unwrap();
    assert_eq!(victim.last_bias_name().as_deref(), Some("layers.1.bias"));
    let sample = Sample {
        rgb: None,
        depth: None,
        vector: vec![0.3, -0.7, 0.1, 0.9, -0.2, 0.5],
        action: 2,
        signal: -1.25,
    };
    let record = victim
        .shared_gradient(std::slice::from_ref(&sample))
        .unwrap();
    let config = AttackConfig::qgi()
        .with_iterations_per_stage(500)
        .with_restarts(3);
    let rec = attack(&victim, &record, &config).unwrap();
    println!("MLP: {:?} {} {}", rec.vector, rec.action, rec.signal);
    assert_eq!(rec.action, sample.action);
    let error = max_abs_error(&rec.vector, &sample.vector);
    assert!(error < 1e-3, "{:?} (max error {error})", rec.vector);
    assert!((rec.signal - sample.signal).abs() < 1e-3, "{}", rec.signal);
}

/// A user's own module that declares no linear part: the attack falls back to optimising the
/// whole state jointly against every gradient.
#[derive(Module, Debug)]
struct OpaquePolicy<B: Backend> {
    body: Mlp<B>,
}

impl<B: Backend> InvertibleModel<B> for OpaquePolicy<B> {
    fn observation_parts(&self) -> ObservationParts {
        ObservationParts {
            rgb: None,
            depth: None,
            vector: self.body.d_input(),
        }
    }

    fn num_outputs(&self) -> usize {
        self.body.d_output()
    }

    fn forward_parts(
        &self,
        _rgb: Option<Tensor<B, 4>>,
        _depth: Option<Tensor<B, 4>>,
        vector: Option<Tensor<B, 2>>,
    ) -> Tensor<B, 2> {
        self.body.forward(vector.expect("a vector state"))
    }

    fn output_bias_name(&self) -> Option<String> {
        Some(format!("body.layers.{}.bias", self.body.layers.len() - 1))
    }
}

#[test]
fn a_model_without_a_linear_part_is_attacked_jointly() {
    let device = Default::default();
    let body = MlpConfig::new(5, vec![16], 3)
        .with_activation(Activation::Tanh)
        .init::<Outer<B>>(&device, &mut ChaCha8Rng::seed_from_u64(4));
    let victim = Victim::<B, _>::new(OpaquePolicy { body }, VictimKind::Dqn, &device).unwrap();
    let sample = Sample {
        rgb: None,
        depth: None,
        vector: vec![-0.4, 0.8, 0.2, -0.6, 0.1],
        action: 1,
        signal: 0.75,
    };
    let record = victim
        .shared_gradient(std::slice::from_ref(&sample))
        .unwrap();
    // Stage 1 needs the split the model does not declare.
    assert!(matches!(
        victim.linear_part_input(&sample),
        Err(AttackError::NoLinearPart { .. })
    ));
    let config = AttackConfig::qgi()
        .with_iterations_per_stage(800)
        .with_restarts(2);
    let rec = attack(&victim, &record, &config).unwrap();
    println!("opaque: {:?} {} {}", rec.vector, rec.action, rec.signal);
    assert!(rec
        .loss_history
        .iter()
        .all(|r| r.stage == privrl_attacks::Stage::Joint));
    assert_eq!(rec.action, sample.action);
    let error = max_abs_error(&rec.vector, &sample.vector);
    assert!(error < 1e-2, "{:?} (max error {error})", rec.vector);
    assert!((rec.signal - sample.signal).abs() < 1e-2, "{}", rec.signal);
    // The batch attack enumerates actions through stage 1, which this model lacks.
    let pair = [sample.clone(), sample];
    let record = victim.shared_gradient(&pair).unwrap();
    assert!(matches!(
        privrl_attacks::attack_batch(&victim, &record, &config, 2),
        Err(AttackError::NoLinearPart { .. })
    ));
}

/// The paper's victim through the same trait, and a model that reads nothing refused by name.
#[test]
fn the_multimodal_victim_is_one_implementation_and_an_empty_model_is_refused() {
    let device = Default::default();
    let config = MultimodalNetConfig::new(4, 3).with_head_hidden(vec![8]);
    let victim = Victim::<B>::from_seed(&config, VictimKind::Dqn, 1, &device).unwrap();
    assert_eq!(
        victim.last_bias_name().as_deref(),
        Some("head.layers.1.bias")
    );
    let empty =
        MultimodalNetConfig::new(0, 3).init::<Outer<B>>(&device, &mut ChaCha8Rng::seed_from_u64(0));
    assert!(matches!(
        Victim::<B>::new(empty, VictimKind::Dqn, &device),
        Err(AttackError::Incompatible(_))
    ));
}

/// A user's network built with `burn::nn::Linear` (whose fused backward cannot be
/// differentiated again) is refused when the victim is built, naming the parameter and the
/// fix, instead of panicking inside the autodiff thread during the attack.
#[test]
fn a_burn_linear_layer_is_a_named_error_up_front() {
    use burn::nn::{Linear, LinearConfig};

    #[derive(Module, Debug)]
    struct WithLinear<B: Backend> {
        body: Mlp<B>,
        head: Linear<B>,
    }
    impl<B: Backend> InvertibleModel<B> for WithLinear<B> {
        fn observation_parts(&self) -> ObservationParts {
            ObservationParts {
                rgb: None,
                depth: None,
                vector: 4,
            }
        }
        fn num_outputs(&self) -> usize {
            3
        }
        fn forward_parts(
            &self,
            _: Option<Tensor<B, 4>>,
            _: Option<Tensor<B, 4>>,
            state: Option<Tensor<B, 2>>,
        ) -> Tensor<B, 2> {
            self.head
                .forward(self.body.forward(state.expect("a state")))
        }
    }

    let device = Default::default();
    let mut rng = ChaCha8Rng::seed_from_u64(0);
    let model = WithLinear {
        body: MlpConfig::new(4, vec![8], 8).init::<Outer<B>>(&device, &mut rng),
        head: LinearConfig::new(8, 3).init(&device),
    };
    let error = Victim::<B, _>::new(model, VictimKind::Dqn, &device)
        .expect_err("a burn::nn::Linear must be refused");
    match &error {
        AttackError::NotTwiceDifferentiable {
            parameter, layer, ..
        } => {
            assert_eq!(parameter, "head.weight");
            assert!(layer.contains("burn::nn::Linear"), "{layer}");
        }
        other => panic!("expected NotTwiceDifferentiable, got {other:?}"),
    }
    let message = error.to_string();
    assert!(message.contains("privrl_agents::Dense"), "{message}");
}

//! Small end-to-end attacks on a tiny victim (16×16 depth image, the paper's setting S2):
//! QGI and RGI reconstruct the bounding box, the action, the signal and an image far better
//! than the Gaussian initialisation; the DLG and IG baselines run through the same loop.

mod common;

use burn::backend::NdArray;
use privrl_attacks::{
    attack, evaluate_defended_batch_inversion, gaussian_noise, psnr, score_reconstruction,
    AttackConfig, AttackError, GradientMatchingLoss, ImageNormalisation, ImagePrior, Stage,
    StateOptimisation, Victim, VictimKind,
};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

type B = NdArray;
const SIZE: usize = 16;

/// The quick settings of these tests: 300 iterations per stage, 3 restarts, and λ = 0.01
/// (the paper's λ = 0.1 is for 150×150 images; TV is a mean of pixel differences, which are
/// about ten times larger at 16×16).
fn quick(config: AttackConfig) -> AttackConfig {
    config
        .with_iterations_per_stage(300)
        .with_restarts(3)
        .with_prior(Some(ImagePrior::TotalVariation { weight: 0.01 }))
}

/// PSNR of the Gaussian initialisation (clamped like the reconstruction) against the truth.
fn gaussian_baseline_psnr(truth: &[f32], seed: u64) -> f64 {
    let noise = gaussian_noise(truth.len(), 1.0, &mut ChaCha8Rng::seed_from_u64(seed));
    let (_, noise) = ImageNormalisation::Clamp.apply(None, Some(&noise));
    psnr(truth, &noise.unwrap(), 1.0).unwrap()
}

#[test]
fn qgi_reconstructs_a_depth_state_action_and_q_values() {
    let device = Default::default();
    let victim =
        Victim::<B>::from_seed(&common::depth_config(SIZE), VictimKind::Dqn, 3, &device).unwrap();
    let mut rng = ChaCha8Rng::seed_from_u64(11);
    let sample = common::synthetic_sample(None, Some(SIZE), 7, 1.0..5.0, &mut rng);
    let record = victim
        .shared_gradient(std::slice::from_ref(&sample))
        .unwrap();
    let reconstruction = attack(&victim, &record, &quick(AttackConfig::qgi())).unwrap();
    let row = score_reconstruction(
        &victim,
        &sample,
        &reconstruction,
        ImageNormalisation::Clamp,
        0,
        0.0,
    )
    .unwrap();
    let depth = row.depth.unwrap();
    let baseline = gaussian_baseline_psnr(sample.depth.as_ref().unwrap(), 0);
    println!("QGI: {row:?}, Gaussian baseline PSNR {baseline:.2} dB");
    assert!(row.vector_iou.unwrap() > 0.95, "IoU {:?}", row.vector_iou);
    assert!(row.action_correct);
    assert!(
        row.predicted_q_error_pct.unwrap() < 1.0,
        "ε(Q̂) {:?}",
        row.predicted_q_error_pct
    );
    assert!(
        row.target_q_error_pct.unwrap() < 1.0,
        "ε(Q) {:?}",
        row.target_q_error_pct
    );
    assert!(
        depth.psnr > baseline + 8.0,
        "PSNR {} vs baseline {baseline}",
        depth.psnr
    );
    assert!(depth.ssim > 0.6, "SSIM {}", depth.ssim);
    // Both stages ran, each with its restarts, and stage 1 converged.
    let stage1_final = reconstruction
        .loss_history
        .iter()
        .filter(|r| r.stage == Stage::LinearPart && r.iteration == 300)
        .map(|r| r.loss)
        .fold(f64::INFINITY, f64::min);
    assert!(stage1_final < 1e-3, "stage-1 loss {stage1_final}");
    assert!(reconstruction
        .loss_history
        .iter()
        .any(|r| r.stage == Stage::Images && r.restart == 2));
}

/// Cosine similarity and norm ratio ‖b‖/‖a‖ of two vectors.
fn cosine_and_norm_ratio(a: &[f32], b: &[f32]) -> (f64, f64) {
    let dot: f64 = a
        .iter()
        .zip(b)
        .map(|(x, y)| f64::from(*x) * f64::from(*y))
        .sum();
    let norm = |v: &[f32]| v.iter().map(|x| f64::from(*x).powi(2)).sum::<f64>().sqrt();
    (dot / (norm(a) * norm(b)), norm(b) / norm(a))
}

/// Stage 1 on an RGB + depth victim (setting S1, conv features of 2 × 2,048 entries): eq. 5
/// alone finds the features' direction but not their scale, which the ReLU layers leave
/// nearly free; the magnitude term fixes the scale, and with it the box and Q.
#[test]
fn the_magnitude_term_recovers_the_scale_that_eq5_leaves_free() {
    let device = Default::default();
    let size = 32;
    let net = common::rgbd_config_with_channels(size, vec![16, 32])
        .with_vector_hidden(vec![32])
        .with_head_hidden(vec![64]);
    let victim = Victim::<B>::from_seed(&net, VictimKind::Dqn, 3, &device).unwrap();
    let mut rng = ChaCha8Rng::seed_from_u64(11);
    let sample = common::synthetic_sample(Some(size), Some(size), 7, 1.0..5.0, &mut rng);
    let truth = victim.linear_part_input(&sample).unwrap();
    let record = victim
        .shared_gradient(std::slice::from_ref(&sample))
        .unwrap();
    let features = |rec: &privrl_attacks::Reconstruction| {
        let joined = |p: &privrl_attacks::LinearPartInput| {
            [
                p.rgb_features.clone().unwrap(),
                p.depth_features.clone().unwrap(),
            ]
            .concat()
        };
        cosine_and_norm_ratio(&joined(&truth), &joined(&rec.linear_part))
    };
    let config = AttackConfig::qgi()
        .with_iterations_per_stage(200)
        .with_prior(Some(ImagePrior::TotalVariation { weight: 0.01 }));
    let score = |rec| {
        score_reconstruction(&victim, &sample, rec, ImageNormalisation::Clamp, 0, 0.0).unwrap()
    };

    let with_term = attack(&victim, &record, &config).unwrap();
    let (cosine, ratio) = features(&with_term);
    let row = score(&with_term);
    println!("cos + magnitude: features cos {cosine:.6}, norm ratio {ratio:.4}; {row:?}");
    assert!(
        cosine > 0.999 && (ratio - 1.0).abs() < 0.01,
        "{cosine} {ratio}"
    );
    assert!(row.vector_iou.unwrap() > 0.95, "IoU {:?}", row.vector_iou);
    assert!(row.target_q_error_pct.unwrap() < 2.0, "{row:?}");

    let eq5 = config.with_matching(GradientMatchingLoss::Cosine);
    let alone = attack(&victim, &record, &eq5).unwrap();
    let (cosine, ratio) = features(&alone);
    println!("eq. 5 alone: features cos {cosine:.6}, norm ratio {ratio:.4}");
    assert!(cosine > 0.99, "the direction is found: {cosine}");
    assert!(ratio > 2.0, "but not the scale: {ratio}");
}

#[test]
fn rgi_reconstructs_a_depth_state_action_and_reward() {
    let device = Default::default();
    let kind = VictimKind::Reinforce {
        entropy_weight: 0.01,
    };
    let victim = Victim::<B>::from_seed(&common::depth_config(SIZE), kind, 3, &device).unwrap();
    let mut rng = ChaCha8Rng::seed_from_u64(11);
    let sample = common::synthetic_sample(None, Some(SIZE), 7, 1.0..5.0, &mut rng);
    let record = victim
        .shared_gradient(std::slice::from_ref(&sample))
        .unwrap();
    let reconstruction = attack(&victim, &record, &quick(AttackConfig::rgi())).unwrap();
    let row = score_reconstruction(
        &victim,
        &sample,
        &reconstruction,
        ImageNormalisation::Clamp,
        0,
        0.0,
    )
    .unwrap();
    let baseline = gaussian_baseline_psnr(sample.depth.as_ref().unwrap(), 0);
    println!("RGI: {row:?}, Gaussian baseline PSNR {baseline:.2} dB");
    assert!(row.vector_iou.unwrap() > 0.95, "IoU {:?}", row.vector_iou);
    assert!(row.action_correct);
    assert!(
        row.reward_abs_error.unwrap() < 1e-2,
        "|Δr| {:?}",
        row.reward_abs_error
    );
    assert!(row.depth.unwrap().psnr > baseline + 8.0);
    let p = reconstruction.probabilities.unwrap();
    assert!((p.iter().sum::<f32>() - 1.0).abs() < 1e-5);
}

/// DLG, IG and the joint-state ablation are configurations of the same loop: they run, keep
/// their loss finite and return a reconstruction of the right shape.
#[test]
fn baselines_and_the_joint_ablation_run_through_the_same_loop() {
    let device = Default::default();
    let victim =
        Victim::<B>::from_seed(&common::rgbd_config(8), VictimKind::Dqn, 4, &device).unwrap();
    let mut rng = ChaCha8Rng::seed_from_u64(12);
    let sample = common::synthetic_sample(Some(8), Some(8), 7, 1.0..5.0, &mut rng);
    let record = victim
        .shared_gradient(std::slice::from_ref(&sample))
        .unwrap();
    for config in [
        AttackConfig::dlg(),
        AttackConfig::inverting_gradients(),
        AttackConfig::qgi().with_state(StateOptimisation::Joint),
    ] {
        let reconstruction = attack(
            &victim,
            &record,
            &config.clone().with_iterations_per_stage(20),
        )
        .unwrap();
        assert_eq!(reconstruction.rgb.as_ref().unwrap().len(), 3 * 64);
        assert_eq!(reconstruction.depth.as_ref().unwrap().len(), 64);
        assert_eq!(reconstruction.vector.len(), 4);
        assert!(
            reconstruction
                .loss_history
                .iter()
                .all(|r| r.loss.is_finite()),
            "{config:?}"
        );
        assert!(reconstruction.signal.is_finite());
    }
    // IG reads the action off ∇b_last (eq. 7 for the MSE victim).
    let ig = attack(
        &victim,
        &record,
        &AttackConfig::inverting_gradients().with_iterations_per_stage(5),
    )
    .unwrap();
    assert_eq!(ig.action, sample.action);
}

/// An 8×8 depth DQN victim and its shared gradient of one synthetic sample.
fn tiny_dqn_case() -> (Victim<B>, privrl_agents::GradientRecord) {
    let device = Default::default();
    let victim =
        Victim::<B>::from_seed(&common::depth_config(8), VictimKind::Dqn, 5, &device).unwrap();
    let sample = common::synthetic_sample(
        None,
        Some(8),
        7,
        1.0..5.0,
        &mut ChaCha8Rng::seed_from_u64(3),
    );
    let record = victim
        .shared_gradient(std::slice::from_ref(&sample))
        .unwrap();
    (victim, record)
}

#[test]
fn attacks_are_deterministic_given_the_seed() {
    let (victim, record) = tiny_dqn_case();
    let config = AttackConfig::qgi()
        .with_iterations_per_stage(15)
        .with_seed(9);
    let a = attack(&victim, &record, &config).unwrap();
    let b = attack(&victim, &record, &config).unwrap();
    assert_eq!(a, b);
    let c = attack(&victim, &record, &config.with_seed(10)).unwrap();
    assert_ne!(a.depth, c.depth);
}

#[test]
fn invalid_configurations_are_named_errors() {
    let device = Default::default();
    let dqn =
        Victim::<B>::from_seed(&common::depth_config(8), VictimKind::Dqn, 5, &device).unwrap();
    let sample = common::synthetic_sample(
        None,
        Some(8),
        7,
        1.0..5.0,
        &mut ChaCha8Rng::seed_from_u64(3),
    );
    let record = dqn.shared_gradient(std::slice::from_ref(&sample)).unwrap();
    let err = attack(
        &dqn,
        &record,
        &AttackConfig::qgi().with_iterations_per_stage(0),
    )
    .unwrap_err();
    assert!(
        matches!(
            err,
            AttackError::OutOfRange {
                name: "iterations_per_stage",
                ..
            }
        ),
        "{err}"
    );
    let err = attack(&dqn, &record, &AttackConfig::qgi().with_init_std(-1.0)).unwrap_err();
    assert!(
        matches!(
            err,
            AttackError::OutOfRange {
                name: "init_std",
                ..
            }
        ),
        "{err}"
    );
    let err = attack(&dqn, &record, &AttackConfig::rgi()).unwrap_err();
    assert!(matches!(err, AttackError::Incompatible(_)), "{err}");
    let err = Victim::<B>::from_seed(
        &common::depth_config(8),
        VictimKind::Reinforce {
            entropy_weight: -0.1,
        },
        0,
        &device,
    )
    .unwrap_err();
    assert!(
        matches!(
            err,
            AttackError::OutOfRange {
                name: "entropy_weight",
                ..
            }
        ),
        "{err}"
    );
    let mut wrong = sample.clone();
    wrong.vector.push(0.0);
    assert!(matches!(
        dqn.shared_gradient(&[wrong]).unwrap_err(),
        AttackError::ShapeMismatch {
            what: "vector state",
            ..
        }
    ));
    let mut truncated = record.clone();
    truncated.params[0].values.pop();
    assert!(matches!(
        attack(&dqn, &truncated, &AttackConfig::qgi()).unwrap_err(),
        AttackError::GradientShape { .. }
    ));
}

#[test]
fn qgi_reconstructs_every_sample_of_a_batch_of_two() {
    let device = Default::default();
    let victim =
        Victim::<B>::from_seed(&common::depth_config(SIZE), VictimKind::Dqn, 3, &device).unwrap();
    let mut rng = ChaCha8Rng::seed_from_u64(5);
    let mut samples: Vec<_> = (0..2)
        .map(|_| common::synthetic_sample(None, Some(SIZE), 7, 1.0..5.0, &mut rng))
        .collect();
    // Distinct actions: the error directions of eq. 6 then separate exactly.
    samples[0].action = 2;
    samples[1].action = 5;
    let rows = evaluate_defended_batch_inversion(
        &victim,
        &samples,
        &quick(AttackConfig::qgi()),
        ImageNormalisation::Clamp,
        &privrl_privacy::GradientMechanismConfig::None,
        &mut rng,
        2,
    )
    .unwrap();
    assert_eq!(rows.len(), 2);
    for (row, sample) in rows.iter().zip(&samples) {
        let baseline = gaussian_baseline_psnr(sample.depth.as_ref().unwrap(), 0);
        println!(
            "batch of 2, sample {}: depth {:?}, IoU {:?}, ε(Q) {:?}, baseline {baseline:.2} dB",
            row.sample, row.depth, row.vector_iou, row.target_q_error_pct
        );
        assert!(row.action_correct);
        assert!(row.vector_iou.unwrap() > 0.95, "IoU {:?}", row.vector_iou);
        assert!(
            row.target_q_error_pct.unwrap() < 2.0,
            "ε(Q) {:?}",
            row.target_q_error_pct
        );
        assert!(row.depth.unwrap().psnr > baseline + 5.0, "{:?}", row.depth);
    }
}

/// R(x) = mean x²: a prior of one's own, registered by name without editing the crate.
struct Energy;
impl<BB: burn::tensor::backend::Backend> privrl_attacks::ImageRegulariser<BB> for Energy {
    fn penalty(&self, images: burn::tensor::Tensor<BB, 4>) -> burn::tensor::Tensor<BB, 1> {
        images.powi_scalar(2).mean()
    }
}

#[test]
fn a_registered_prior_plugs_in_by_name() {
    use privrl_attacks::{register_image_prior, Inner, TotalVariation};
    let (victim, record) = tiny_dqn_case();
    let config = AttackConfig::qgi()
        .with_iterations_per_stage(40)
        .with_seed(9);
    // Total variation registered by name is the built-in prior, bit for bit.
    register_image_prior::<Inner<B>>("tv-by-name", TotalVariation);
    let builtin = attack(
        &victim,
        &record,
        &config
            .clone()
            .with_prior(Some(ImagePrior::TotalVariation { weight: 0.05 })),
    )
    .unwrap();
    let by_name = attack(
        &victim,
        &record,
        &config.clone().with_prior(Some(ImagePrior::Registered {
            name: "tv-by-name".into(),
            weight: 0.05,
        })),
    )
    .unwrap();
    assert_eq!(builtin, by_name);
    // A prior of one's own changes the reconstruction the way it pulls: a heavy energy
    // penalty darkens the depth image.
    register_image_prior::<Inner<B>>("energy", Energy);
    let energy = attack(
        &victim,
        &record,
        &config.clone().with_prior(Some(ImagePrior::Registered {
            name: "energy".into(),
            weight: 50.0,
        })),
    )
    .unwrap();
    let mean_square = |d: &[f32]| d.iter().map(|x| x * x).sum::<f32>() / d.len() as f32;
    let (dark, plain) = (
        mean_square(energy.depth.as_ref().unwrap()),
        mean_square(builtin.depth.as_ref().unwrap()),
    );
    assert!(dark < plain, "energy prior: {dark} vs TV: {plain}");
    // An unregistered name is refused before the attack starts, naming what is registered.
    let err = attack(
        &victim,
        &record,
        &config.with_prior(Some(ImagePrior::Registered {
            name: "no-such-prior".into(),
            weight: 1.0,
        })),
    )
    .unwrap_err();
    match err {
        AttackError::UnknownPrior { name, known, .. } => {
            assert_eq!(name, "no-such-prior");
            assert!(
                known.contains("energy") && known.contains("tv-by-name"),
                "{known}"
            );
        }
        other => panic!("{other}"),
    }
}

/// The signal in J for `AttackConfig::inverting_gradients`: optimised jointly (the paper's
/// baselines), known to the attacker, or a rule registered by name.
#[test]
fn a_known_or_registered_signal_rule_plugs_in() {
    use privrl_attacks::{
        register_signal_rule, GradientSource, SignalRule, SignalSource, VictimKind,
    };
    let (victim, record) = tiny_dqn_case();
    let truth = common::synthetic_sample(
        None,
        Some(8),
        7,
        1.0..5.0,
        &mut ChaCha8Rng::seed_from_u64(3),
    );
    let with_signal = |signal: SignalRule| {
        AttackConfig::inverting_gradients()
            .with_source(GradientSource::Objective {
                action: privrl_attacks::ActionRule::FromBias,
                signal,
            })
            .with_iterations_per_stage(60)
            .with_seed(9)
    };
    let joint = attack(&victim, &record, &with_signal(SignalRule::Joint)).unwrap();
    let known = attack(
        &victim,
        &record,
        &with_signal(SignalRule::Known {
            value: truth.signal,
        }),
    )
    .unwrap();
    // A known signal is the signal reported, exactly; a joint one is estimated.
    assert_eq!(known.signal, truth.signal);
    assert_ne!(joint.signal, truth.signal);
    // Knowing the signal leaves only the state to find: the depth comes closer to the truth.
    let error = |depth: &[f32]| {
        let expected = truth.depth.as_ref().unwrap();
        depth
            .iter()
            .zip(expected)
            .map(|(a, b)| (a - b).powi(2))
            .sum::<f32>()
    };
    let (known_error, joint_error) = (
        error(known.depth.as_ref().unwrap()),
        error(joint.depth.as_ref().unwrap()),
    );
    assert!(
        known_error < joint_error,
        "known {known_error} vs joint {joint_error}"
    );

    // A rule of one's own: known for a DQN victim, so it is `Known` bit for bit.
    struct DqnTarget(f64);
    impl SignalSource for DqnTarget {
        fn known(&self, kind: VictimKind) -> Option<f64> {
            (kind == VictimKind::Dqn).then_some(self.0)
        }
        fn initial(&self, _init_std: f64, _rng: &mut dyn rand::RngCore) -> f64 {
            unreachable!("known for a DQN victim")
        }
    }
    register_signal_rule("dqn-target", DqnTarget(truth.signal));
    let registered = attack(
        &victim,
        &record,
        &with_signal(SignalRule::Registered {
            name: "dqn-target".into(),
        }),
    )
    .unwrap();
    assert_eq!(registered, known);
    // An unregistered name is refused before the attack starts, naming what is registered.
    let err = attack(
        &victim,
        &record,
        &with_signal(SignalRule::Registered {
            name: "no-such-rule".into(),
        }),
    )
    .unwrap_err();
    match err {
        AttackError::UnknownSignalRule { name, known } => {
            assert_eq!(name, "no-such-rule");
            assert!(known.contains("dqn-target"), "{known}");
        }
        other => panic!("{other}"),
    }
}

//! The small named parts: matching losses, total variation, Adam, the schedule, Gaussian
//! noise and the action rules, against hand-computed values.

use burn::backend::NdArray;
use burn::tensor::{Tensor, TensorData};
use privrl_attacks::{
    action_from_bias_gradient, gaussian_noise, odd_sign_action, total_variation,
    GradientMatchingLoss, ImagePrior, LrSchedule, MatchedGradient, ReconstructedGradient,
    TensorAdamConfig,
};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

type B = NdArray;

fn t1(values: &[f32]) -> Tensor<B, 1> {
    Tensor::from_data(
        TensorData::new(values.to_vec(), [values.len()]),
        &Default::default(),
    )
}

fn scalar(t: Tensor<B, 1>) -> f64 {
    f64::from(t.into_data().to_vec::<f32>().unwrap()[0])
}

#[test]
fn cosine_loss_is_eq5() {
    let g = [1.0, 2.0, -2.0];
    let cosine = GradientMatchingLoss::Cosine;
    // Same direction (any positive scale): 0; opposite: 2; orthogonal: 1.
    assert!(scalar(cosine.loss(t1(&[3.0, 6.0, -6.0]), t1(&g))).abs() < 1e-6);
    assert!((scalar(cosine.loss(t1(&[-1.0, -2.0, 2.0]), t1(&g))) - 2.0).abs() < 1e-6);
    assert!((scalar(cosine.loss(t1(&[2.0, -1.0, 0.0]), t1(&g))) - 1.0).abs() < 1e-6);
    // ⟨(1,0,0), g⟩ / (1 · 3) = 1/3.
    assert!((scalar(cosine.loss(t1(&[1.0, 0.0, 0.0]), t1(&g))) - 2.0 / 3.0).abs() < 1e-6);
    // Squared L2: (1−1)² + (0−2)² + (0+2)² = 8.
    let l2 = GradientMatchingLoss::SquaredL2;
    assert!((scalar(l2.loss(t1(&[1.0, 0.0, 0.0]), t1(&g))) - 8.0).abs() < 1e-6);
    // The same gradients split into per-parameter parts give the same values.
    let parts = || {
        vec![
            (t1(&[1.0]), t1(&[1.0])),
            (t1(&[0.0, 0.0]), t1(&[2.0, -2.0])),
        ]
    };
    assert!((scalar(cosine.loss_of_parts(parts())) - 2.0 / 3.0).abs() < 1e-6);
    assert!((scalar(l2.loss_of_parts(parts())) - 8.0).abs() < 1e-6);
    // Eq. 5 + μ(‖g_rec‖/‖g‖ − 1)²: ‖(3, 6, −6)‖ = 9 = 3‖g‖, so 0 + 0.1·(3 − 1)² = 0.4;
    // ‖(1, 0, 0)‖/‖g‖ = 1/3, so 2/3 + 0.5·(2/3)² = 8/9.
    let magnitude = |weight| GradientMatchingLoss::CosineAndMagnitude { weight };
    assert!((scalar(magnitude(0.1).loss(t1(&[3.0, 6.0, -6.0]), t1(&g))) - 0.4).abs() < 1e-6);
    assert!((scalar(magnitude(0.5).loss_of_parts(parts())) - 8.0 / 9.0).abs() < 1e-6);
    assert!(scalar(magnitude(0.1).loss(t1(&g), t1(&g))).abs() < 1e-6);
    assert_eq!(
        magnitude(0.1).with_magnitude_weight(0.0),
        GradientMatchingLoss::Cosine
    );
    assert_eq!(
        GradientMatchingLoss::Cosine.with_magnitude_weight(0.2),
        magnitude(0.2)
    );
    assert_eq!(l2.with_magnitude_weight(0.2), l2);
}

/// A Dense layer's weight gradient given by its factors X, Δ scores as the formed Xᵀ Δ.
#[test]
fn factored_weight_gradients_score_as_the_formed_ones() {
    let device = Default::default();
    let t2 =
        |v: &[f32], rows: usize| Tensor::<B, 1>::from_floats(v, &device).reshape([rows as i32, -1]);
    // X [2, 3], Δ [2, 2]: a batch of two; g_rec = XᵀΔ is [3, 2].
    let inputs = t2(&[1.0, -2.0, 0.5, 3.0, 0.0, -1.0], 2);
    let errors = t2(&[0.5, -1.0, 2.0, 1.5], 2);
    // XᵀΔ by hand: rows (x₁ᵢδ₁ + x₂ᵢδ₂): (0.5 + 6, −1 + 4.5), (−1 + 0, 2 + 0), (0.25 − 2, −0.5 − 1.5).
    let formed = [6.5, 3.5, -1.0, 2.0, -1.75, -2.0];
    let target = [1.0, -1.0, 2.0, 0.5, -3.0, 1.0];
    let factored = ReconstructedGradient::Factored { inputs, errors };
    let (dot, norm_sq) = factored.clone().dot_and_norm_sq(t1(&target));
    let hand_dot: f32 = formed.iter().zip(&target).map(|(a, b)| a * b).sum();
    let hand_norm_sq: f32 = formed.iter().map(|a| a * a).sum();
    assert!((scalar(dot) - f64::from(hand_dot)).abs() < 1e-5);
    assert!((scalar(norm_sq) - f64::from(hand_norm_sq)).abs() < 1e-5);
    assert_eq!(
        factored
            .clone()
            .materialise()
            .into_data()
            .to_vec::<f32>()
            .unwrap(),
        formed.to_vec()
    );
    for loss in [
        GradientMatchingLoss::Cosine,
        GradientMatchingLoss::CosineAndMagnitude { weight: 0.3 },
        GradientMatchingLoss::SquaredL2,
    ] {
        let with_factors = loss.loss_of_matched(vec![
            MatchedGradient {
                reconstructed: factored.clone(),
                target: t1(&target),
                target_norm_sq: Some(target.iter().map(|v| f64::from(v * v)).sum()),
            },
            MatchedGradient {
                reconstructed: ReconstructedGradient::Flat(t1(&[0.5])),
                target: t1(&[-2.0]),
                target_norm_sq: None,
            },
        ]);
        let formed_loss =
            loss.loss_of_parts(vec![(t1(&formed), t1(&target)), (t1(&[0.5]), t1(&[-2.0]))]);
        assert!(
            (scalar(with_factors) - scalar(formed_loss.clone())).abs() < 1e-5,
            "{loss:?}"
        );
    }
}

#[test]
fn total_variation_matches_a_hand_computed_value() {
    // 2×3 image [[0, 1, 3], [2, 2, 0]]: vertical |2−0|, |2−1|, |0−3| → mean 2;
    // horizontal |1−0|, |3−1|, |2−2|, |0−2| → mean 5/4. TV = 3.25.
    let image = Tensor::<B, 4>::from_data(
        TensorData::new(vec![0.0f32, 1.0, 3.0, 2.0, 2.0, 0.0], [1, 1, 2, 3]),
        &Default::default(),
    );
    assert!((scalar(total_variation(image.clone())) - 3.25).abs() < 1e-6);
    assert!((scalar(ImagePrior::paper().penalty(image)) - 0.325).abs() < 1e-6);
    let flat = Tensor::<B, 4>::ones([1, 3, 4, 4], &Default::default());
    assert_eq!(scalar(total_variation(flat)), 0.0);
}

#[test]
fn adam_first_step_is_lr_times_the_gradient_sign_and_it_minimises_a_quadratic() {
    let config = TensorAdamConfig::new().with_lr(0.1);
    let device = Default::default();
    let mut adam = config.init::<B>(3, &device);
    // With bias correction, the first step is lr · g/(|g| + ε/…) ≈ lr · sign(g).
    let theta = adam.step(t1(&[0.0, 0.0, 0.0]), t1(&[2.0, -0.5, 1e-3]), 0.1);
    let values = theta.into_data().to_vec::<f32>().unwrap();
    for (v, expected) in values.iter().zip([-0.1, 0.1, -0.1]) {
        assert!((v - expected).abs() < 1e-4, "{values:?}");
    }
    // Minimise ½‖θ − c‖²: the gradient is θ − c.
    let target = [1.0f32, -2.0, 0.5];
    let mut adam = config.init::<B>(3, &device);
    let mut theta = t1(&[0.0, 0.0, 0.0]);
    for i in 0..500 {
        let gradient = theta.clone() - t1(&target);
        theta = adam.step(theta, gradient, LrSchedule::StepDecay.lr(0.1, i, 500));
    }
    let values = theta.into_data().to_vec::<f32>().unwrap();
    for (v, c) in values.iter().zip(target) {
        assert!((v - c).abs() < 1e-3, "{values:?}");
    }
    assert_eq!(adam.steps(), 500);
    assert!(config.clone().with_lr(0.0).validate().is_err());
    assert!(config.with_beta2(1.0).validate().is_err());
}

#[test]
fn step_decay_is_geiping_et_al_multistep_schedule() {
    let s = LrSchedule::StepDecay;
    assert_eq!(s.lr(1.0, 0, 800), 1.0);
    assert_eq!(s.lr(1.0, 299, 800), 1.0);
    assert!((s.lr(1.0, 300, 800) - 0.1).abs() < 1e-12);
    assert!((s.lr(1.0, 500, 800) - 0.01).abs() < 1e-12);
    assert!((s.lr(1.0, 799, 800) - 0.001).abs() < 1e-12);
    assert_eq!(LrSchedule::Constant.lr(0.3, 799, 800), 0.3);
}

#[test]
fn gaussian_noise_has_the_requested_moments() {
    let x = gaussian_noise(20_001, 2.0, &mut ChaCha8Rng::seed_from_u64(0));
    assert_eq!(x.len(), 20_001);
    let n = x.len() as f64;
    let mean = x.iter().map(|&v| f64::from(v)).sum::<f64>() / n;
    let var = x
        .iter()
        .map(|&v| (f64::from(v) - mean).powi(2))
        .sum::<f64>()
        / n;
    // Standard errors: 2/√n ≈ 0.014 for the mean, 4·√(2/n) ≈ 0.04 for the variance.
    assert!(mean.abs() < 0.06, "mean {mean}");
    assert!((var - 4.0).abs() < 0.16, "variance {var}");
}

#[test]
fn action_rules_on_hand_made_bias_gradients() {
    // eq. 7: one non-zero entry.
    assert_eq!(action_from_bias_gradient(&[0.0, 0.0, -3.5, 0.0]), 2);
    // iDLG: R(p − e_a) with R = 2, p = (0.2, 0.5, 0.3), a = 1 → (0.4, −1.0, 0.6).
    assert_eq!(odd_sign_action(&[0.4, -1.0, 0.6]), 1);
    // R < 0 flips every sign; the odd one is still a.
    assert_eq!(odd_sign_action(&[-0.4, 1.0, -0.6]), 1);
}

//! Analytic per-sample gradients against the per-sample loop, and DP-SGD's clipping and noise.

use burn::backend::{Autodiff, NdArray};
use burn::tensor::activation::log_softmax;
use burn::tensor::{Tensor, TensorData};
use privrl_agents::dp::{
    dp_sgd_gradient, per_sample_gradients_by_loop, probed_forward, PerSampleFactors,
};
use privrl_agents::{Activation, GradientRecord, Mlp, MlpConfig};
use privrl_privacy::{Clipping, DpSgdConfig};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

type B = Autodiff<NdArray>;

const BATCH: usize = 6;
const D_IN: usize = 5;
const CLASSES: usize = 3;

fn setup(seed: u64) -> (Mlp<B>, Tensor<B, 2>, Vec<usize>) {
    let device = Default::default();
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mlp = MlpConfig::new(D_IN, vec![7, 4], CLASSES)
        .with_activation(Activation::Tanh)
        .init::<B>(&device, &mut rng);
    let x: Vec<f32> = (0..BATCH * D_IN)
        .map(|_| rng.random_range(-2.0..2.0))
        .collect();
    let labels = (0..BATCH).map(|_| rng.random_range(0..CLASSES)).collect();
    let x = Tensor::from_data(TensorData::new(x, [BATCH, D_IN]), &device);
    (mlp, x, labels)
}

/// Per-sample cross-entropy `[batch]` of `logits` for `labels` (one label per row).
fn cross_entropy(logits: Tensor<B, 2>, labels: &[usize]) -> Tensor<B, 1> {
    let mut onehot = vec![0.0f32; labels.len() * CLASSES];
    for (i, &c) in labels.iter().enumerate() {
        onehot[i * CLASSES + c] = 1.0;
    }
    let onehot = Tensor::<B, 2>::from_data(
        TensorData::new(onehot, [labels.len(), CLASSES]),
        &logits.device(),
    );
    (log_softmax(logits, 1) * onehot)
        .sum_dim(1)
        .squeeze_dim(1)
        .neg()
}

fn analytic_factors(mlp: &Mlp<B>, x: Tensor<B, 2>, labels: &[usize]) -> PerSampleFactors<NdArray> {
    privrl_agents::autodiff::exclusive(|| {
        let forward = probed_forward(mlp, x);
        let grads = cross_entropy(forward.output.clone(), labels)
            .sum()
            .backward();
        PerSampleFactors::from_backward(mlp, &forward, &grads)
    })
}

fn loop_gradients(mlp: &Mlp<B>, x: Tensor<B, 2>, labels: &[usize]) -> Vec<Vec<f32>> {
    per_sample_gradients_by_loop(mlp, x, |m, sample, i| {
        cross_entropy(m.forward(sample), &labels[i..=i]).sum()
    })
}

fn norm(g: &[f32]) -> f64 {
    g.iter().map(|&v| f64::from(v).powi(2)).sum::<f64>().sqrt()
}

fn assert_close(a: &[f32], b: &[f32], tolerance: f32, what: &str) {
    assert_eq!(a.len(), b.len(), "{what}: lengths");
    let scale = b.iter().fold(1e-6f32, |m, v| m.max(v.abs()));
    for (i, (x, y)) in a.iter().zip(b).enumerate() {
        assert!(
            (x - y).abs() <= tolerance * scale,
            "{what}[{i}]: {x} vs {y} (scale {scale})"
        );
    }
}

#[test]
fn analytic_per_sample_gradients_equal_the_per_sample_loop() {
    let (mlp, x, labels) = setup(1);
    let analytic = analytic_factors(&mlp, x.clone(), &labels).materialize();
    let reference = loop_gradients(&mlp, x, &labels);
    assert_eq!(analytic.len(), BATCH);
    for (i, (a, r)) in analytic.iter().zip(&reference).enumerate() {
        assert_close(a, r, 1e-5, &format!("sample {i}"));
    }
}

#[test]
fn per_sample_norms_match_the_materialised_gradients() {
    let (mlp, x, labels) = setup(2);
    let factors = analytic_factors(&mlp, x, &labels);
    let norms: Vec<f32> = factors.norms().into_data().to_vec().unwrap();
    for (i, g) in factors.materialize().iter().enumerate() {
        let expected = norm(g);
        assert!(
            (f64::from(norms[i]) - expected).abs() <= 1e-5 * expected,
            "sample {i}: {} vs {expected}",
            norms[i]
        );
    }
}

#[test]
fn flat_and_per_layer_clipped_sums_equal_clipping_each_sample() {
    let (mlp, x, labels) = setup(3);
    let factors = analytic_factors(&mlp, x, &labels);
    let per_sample = factors.materialize();
    let dimension = per_sample[0].len();
    let median_norm = {
        let mut n: Vec<f64> = per_sample.iter().map(|g| norm(g)).collect();
        n.sort_by(f64::total_cmp);
        n[BATCH / 2]
    };
    let sizes = factors.param_sizes();
    for clipping in [
        // Half the samples are clipped.
        Clipping::Flat { clip: median_norm },
        Clipping::PerLayer {
            layer_sizes: sizes.clone(),
            clips: vec![median_norm / 4.0; sizes.len()],
        },
    ] {
        let dp = DpSgdConfig {
            noise_multiplier: 1.0,
            clipping: clipping.clone(),
            dimension,
        }
        .build()
        .unwrap();
        let reference = dp.clipped_sum(&per_sample).unwrap();
        let analytic = factors.clipped_sum(&clipping).unwrap().flatten();
        assert_close(&analytic, &reference, 1e-5, &format!("{clipping:?}"));
    }
}

#[test]
fn clipped_per_sample_norms_never_exceed_the_bound() {
    let (mlp, x, labels) = setup(4);
    let factors = analytic_factors(&mlp, x, &labels);
    let clip = 0.05;
    let norms: Vec<f32> = factors.norms().into_data().to_vec().unwrap();
    // Clipping one sample at a time through the batched path: a batch of that sample alone.
    for (i, g) in factors.materialize().iter().enumerate() {
        let factor = (clip / f64::from(norms[i])).min(1.0);
        let clipped = norm(g) * factor;
        assert!(
            clipped <= clip * (1.0 + 1e-6),
            "sample {i}: {clipped} > {clip}"
        );
    }
    // And the clipped sum of the batch is within B·C.
    let sum = factors.clipped_sum(&Clipping::Flat { clip }).unwrap();
    assert!(sum.l2_norm() <= BATCH as f64 * clip * (1.0 + 1e-6));
}

#[test]
fn without_clipping_the_sum_is_the_plain_gradient() {
    privrl_agents::autodiff::exclusive(|| {
        let (mlp, x, labels) = setup(5);
        let factors = analytic_factors(&mlp, x.clone(), &labels);
        let sum = factors.clipped_sum(&Clipping::Flat { clip: 1e12 }).unwrap();
        let grads = cross_entropy(mlp.forward(x), &labels).sum().backward();
        let plain = GradientRecord::from_grads(&mlp, &grads);
        assert_eq!(sum.names(), plain.names());
        assert_close(&sum.flatten(), &plain.flatten(), 1e-5, "no clipping");
    });
}

#[test]
fn per_layer_clipping_rejects_a_wrong_layout() {
    let (mlp, x, labels) = setup(6);
    let factors = analytic_factors(&mlp, x, &labels);
    let error = factors
        .clipped_sum(&Clipping::PerLayer {
            layer_sizes: vec![1, 2],
            clips: vec![1.0, 1.0],
        })
        .unwrap_err();
    assert!(error.to_string().contains("parameter sizes"), "{error}");
}

#[test]
fn dp_sgd_noise_has_std_sigma_c_over_batch() {
    // With a zero loss the gradient is pure noise: N(0, (σC/L)²) in every coordinate.
    let device = Default::default();
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    let mlp = MlpConfig::new(32, vec![64], 16).init::<B>(&device, &mut rng);
    let x = Tensor::<B, 2>::ones([4, 32], &device);
    let dimension: usize = 32 * 64 + 64 + 64 * 16 + 16;
    let (sigma, clip, batch) = (1.3, 0.7, 4.0);
    let dp = DpSgdConfig {
        noise_multiplier: sigma,
        clipping: Clipping::Flat { clip },
        dimension,
    }
    .build()
    .unwrap();
    let record = dp_sgd_gradient(
        &mlp,
        x,
        |out| out.sum_dim(1).squeeze_dim(1) * 0.0,
        &dp,
        batch,
        &mut rng,
    )
    .unwrap();
    let values = record.flatten();
    assert_eq!(values.len(), dimension);
    let n = values.len() as f64;
    let mean = values.iter().map(|&v| f64::from(v)).sum::<f64>() / n;
    let std = (values
        .iter()
        .map(|&v| (f64::from(v) - mean).powi(2))
        .sum::<f64>()
        / n)
        .sqrt();
    let expected = sigma * clip / batch;
    // 3200 draws: the sample std is within ~4% of σ with overwhelming probability.
    assert!(
        (std / expected - 1.0).abs() < 0.05,
        "std {std} vs {expected}"
    );
    assert!(mean.abs() < 4.0 * expected / n.sqrt(), "mean {mean}");
}

//! Gaussian mechanism and DP-SGD clipping/noising (paper 004, Figure 7), observation noise.

use privrl_privacy::{
    analytic_gaussian_delta, analytic_gaussian_sigma, classic_gaussian_sigma, interquartile_range,
    poisson_sample, Clipping, DpSgdConfig, GaussianCalibration, GaussianConfig, Mechanism,
    ObservationNoiseConfig, PrivacyError,
};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

fn l2(v: &[f32]) -> f64 {
    v.iter().map(|&x| f64::from(x).powi(2)).sum::<f64>().sqrt()
}

#[test]
fn classic_sigma_by_hand() {
    // ε = 0.5, δ = 1e-5, Δ₂ = 1: √(2 ln(1.25e5)) / 0.5 = √(2·11.7360690) / 0.5
    // = 4.8448053 / 0.5 = 9.6896105.
    assert!((classic_gaussian_sigma(0.5, 1e-5, 1.0).unwrap() - 9.689_610_525).abs() < 1e-8);
    // ε = 0.9, δ = 1e-6, Δ₂ = 2: 2·√(2 ln(1.25e6)) / 0.9 = 2·√(2·14.0386541)/0.9
    // = 2·5.2988025/0.9 = 11.7751167.
    assert!((classic_gaussian_sigma(0.9, 1e-6, 2.0).unwrap() - 11.775_116_726).abs() < 1e-8);
    assert!(matches!(
        classic_gaussian_sigma(1.0, 1e-5, 1.0),
        Err(PrivacyError::OutOfRange {
            name: "epsilon",
            ..
        })
    ));
    assert!(classic_gaussian_sigma(0.5, 0.0, 1.0).is_err());
    assert!(classic_gaussian_sigma(0.5, 1e-5, 0.0).is_err());
}

#[test]
fn analytic_sigma_matches_balle_wang() {
    // scipy 1.17.1: brentq on Φ(1/(2σ) − εσ) − e^ε Φ(−1/(2σ) − εσ) = δ (Balle & Wang 2018, Thm 8).
    for (eps, delta, want) in [
        (1.0, 1e-5, 3.730_631_634_815_937_4),
        (0.5, 1e-5, 7.031_826_675_582_497),
        (4.0, 1e-6, 1.193_518_587_157_985_2),
    ] {
        let s = analytic_gaussian_sigma(eps, delta, 1.0).unwrap();
        assert!((s / want - 1.0).abs() < 1e-8, "{eps}: {s} vs {want}");
        // Scaling with the sensitivity.
        let s3 = analytic_gaussian_sigma(eps, delta, 3.0).unwrap();
        assert!((s3 / (3.0 * want) - 1.0).abs() < 1e-8);
    }
    // The classic σ is valid, hence at least the exact one, and its exact δ is below target.
    let classic = classic_gaussian_sigma(0.5, 1e-5, 1.0).unwrap();
    assert!(classic > analytic_gaussian_sigma(0.5, 1e-5, 1.0).unwrap());
    assert!(analytic_gaussian_delta(0.5, classic, 1.0) < 1e-5);
}

#[test]
fn gaussian_mechanism_noise() {
    let mech = GaussianConfig {
        epsilon: 1.0,
        delta: 1e-5,
        l2_sensitivity: 1.0,
        calibration: GaussianCalibration::Analytic,
        dimension: 50_000,
    }
    .build()
    .unwrap();
    assert_eq!(mech.cost().epsilon, 1.0);
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    let out = mech.release(&vec![2.0; 50_000], &mut rng).unwrap();
    let mean = out.iter().map(|&x| f64::from(x)).sum::<f64>() / 5e4;
    let var = out
        .iter()
        .map(|&x| (f64::from(x) - mean).powi(2))
        .sum::<f64>()
        / 5e4;
    assert!((mean - 2.0).abs() < 0.1, "{mean}");
    assert!((var.sqrt() / mech.sigma() - 1.0).abs() < 0.02);
    let classic = GaussianConfig {
        calibration: GaussianCalibration::Classic,
        epsilon: 2.0,
        ..GaussianConfig {
            epsilon: 1.0,
            delta: 1e-5,
            l2_sensitivity: 1.0,
            calibration: GaussianCalibration::Analytic,
            dimension: 1,
        }
    };
    assert!(classic.build().is_err());
}

#[test]
fn flat_and_per_layer_clipping() {
    let flat = DpSgdConfig {
        noise_multiplier: 1.0,
        clipping: Clipping::Flat { clip: 1.0 },
        dimension: 4,
    }
    .build()
    .unwrap();
    let mut g = vec![3.0f32, 4.0, 0.0, 0.0];
    flat.clip(&mut g).unwrap();
    assert!((l2(&g) - 1.0).abs() < 1e-6 && (g[0] - 0.6).abs() < 1e-6);
    let mut small = vec![0.1f32, 0.0, 0.0, 0.2];
    flat.clip(&mut small).unwrap();
    assert_eq!(small, vec![0.1, 0.0, 0.0, 0.2]);

    let per_layer = DpSgdConfig {
        noise_multiplier: 2.0,
        clipping: Clipping::PerLayer {
            layer_sizes: vec![2, 2],
            clips: vec![3.0, 4.0],
        },
        dimension: 4,
    }
    .build()
    .unwrap();
    // S = √(3² + 4²) = 5, noise std σS = 10.
    assert_eq!(per_layer.sensitivity(), 5.0);
    assert_eq!(per_layer.noise_std(), 10.0);
    let mut g = vec![30.0f32, 40.0, 0.3, 0.4];
    per_layer.clip(&mut g).unwrap();
    assert!(
        (l2(&g[..2]) - 3.0).abs() < 1e-5 && (g[2] - 0.3).abs() < 1e-7,
        "{g:?}"
    );
    assert!(DpSgdConfig {
        noise_multiplier: 1.0,
        clipping: Clipping::PerLayer {
            layer_sizes: vec![2, 1],
            clips: vec![1.0, 1.0]
        },
        dimension: 4
    }
    .build()
    .is_err());
    assert!(DpSgdConfig {
        noise_multiplier: 1.0,
        clipping: Clipping::PerLayer {
            layer_sizes: vec![2, 2],
            clips: vec![1.0]
        },
        dimension: 4
    }
    .build()
    .is_err());
    assert!(DpSgdConfig {
        noise_multiplier: 0.0,
        clipping: Clipping::Flat { clip: 1.0 },
        dimension: 4
    }
    .build()
    .is_err());
    assert!(DpSgdConfig {
        noise_multiplier: 1.0,
        clipping: Clipping::Flat { clip: -1.0 },
        dimension: 4
    }
    .build()
    .is_err());
}

#[test]
fn noisy_mean_has_the_right_mean_and_noise() {
    // Per-sample gradients: two large ones (clipped to C = 1) and a small one.
    let d = 3;
    let dp = DpSgdConfig {
        noise_multiplier: 0.8,
        clipping: Clipping::Flat { clip: 1.0 },
        dimension: d,
    }
    .build()
    .unwrap();
    let grads = vec![
        vec![10.0f32, 0.0, 0.0],
        vec![0.0, -5.0, 0.0],
        vec![0.1, 0.1, 0.1],
    ];
    // Σ clip = (1.1, −0.9, 0.1); mean over L = 3; noise std σC/L = 0.8/3.
    let want = [1.1 / 3.0, -0.9 / 3.0, 0.1 / 3.0];
    let mut rng = ChaCha8Rng::seed_from_u64(2);
    let n = 20_000;
    let (mut m1, mut m2) = (vec![0.0; d], vec![0.0; d]);
    for _ in 0..n {
        let out = dp.noisy_mean(&grads, 3.0, &mut rng).unwrap();
        for i in 0..d {
            m1[i] += f64::from(out[i]) / n as f64;
            m2[i] += f64::from(out[i]).powi(2) / n as f64;
        }
    }
    for i in 0..d {
        let std = (m2[i] - m1[i] * m1[i]).sqrt();
        assert!((m1[i] - want[i]).abs() < 0.01, "{m1:?}");
        assert!((std - 0.8 / 3.0).abs() < 0.01, "{std}");
    }
    // Empty batch (Poisson sampling drew nobody): pure noise of std σC.
    let out = dp.noisy_sum(&[], &mut rng).unwrap();
    assert_eq!(out.len(), d);
    assert!(matches!(
        dp.noisy_sum(&[vec![0.0; 2]], &mut rng),
        Err(PrivacyError::DimensionMismatch { .. })
    ));
    assert!(dp
        .noisy_sum(&[vec![0.0, f32::INFINITY, 0.0]], &mut rng)
        .is_err());
    assert!(dp.noisy_mean(&grads, 0.0, &mut rng).is_err());
}

#[test]
fn poisson_sampling_rate() {
    let mut rng = ChaCha8Rng::seed_from_u64(3);
    let batch = poisson_sample(100_000, 0.01, &mut rng).unwrap();
    assert!((batch.len() as f64 - 1000.0).abs() < 4.0 * 1000f64.sqrt());
    assert!(batch.windows(2).all(|w| w[0] < w[1]));
    assert!(poisson_sample(10, 0.0, &mut rng).is_err());
    assert_eq!(poisson_sample(10, 1.0, &mut rng).unwrap().len(), 10);
}

#[test]
fn observation_noise_uses_iqr() {
    // numpy.percentile (linear): [1,2,3,4,5] → Q1 = 2, Q3 = 4, IQR 2; [1,2,3,4] → 1.75, 3.25, IQR 1.5.
    let odd: Vec<Vec<f32>> = (1..=5).map(|v| vec![v as f32, 10.0 * v as f32]).collect();
    assert_eq!(interquartile_range(&odd).unwrap(), vec![2.0, 20.0]);
    let even: Vec<Vec<f32>> = (1..=4).map(|v| vec![v as f32]).collect();
    assert_eq!(interquartile_range(&even).unwrap(), vec![1.5]);

    let mut rng = ChaCha8Rng::seed_from_u64(4);
    // Warm-up: dimension 0 ~ U(0, 1) (IQR 0.5), dimension 1 ~ U(0, 8) (IQR 4).
    let warmup: Vec<Vec<f32>> = (0..20_000)
        .map(|_| vec![rng.random::<f32>(), 8.0 * rng.random::<f32>()])
        .collect();
    let noise = ObservationNoiseConfig { noise_scale: 0.2 }
        .fit(&warmup)
        .unwrap();
    assert!(
        (noise.iqr()[0] - 0.5).abs() < 0.02 && (noise.iqr()[1] - 4.0).abs() < 0.15,
        "{:?}",
        noise.iqr()
    );
    let n = 50_000;
    let mut var = [0.0; 2];
    for _ in 0..n {
        let y = noise.perturb(&[1.0, -1.0], &mut rng).unwrap();
        var[0] += (f64::from(y[0]) - 1.0).powi(2) / n as f64;
        var[1] += (f64::from(y[1]) + 1.0).powi(2) / n as f64;
    }
    for (j, (v, want)) in var.iter().zip(noise.std()).enumerate() {
        assert!(
            (v.sqrt() / want - 1.0).abs() < 0.02,
            "dim {j}: {} vs {want}",
            v.sqrt()
        );
    }
    assert!(ObservationNoiseConfig { noise_scale: -1.0 }
        .fit(&warmup)
        .is_err());
    assert!(ObservationNoiseConfig { noise_scale: 1.0 }
        .fit(&[])
        .is_err());
    assert!(ObservationNoiseConfig { noise_scale: 1.0 }
        .fit(&[vec![1.0], vec![1.0, 2.0]])
        .is_err());
    assert!(noise.perturb(&[1.0], &mut rng).is_err());
}

fn bits(values: &[f32]) -> Vec<u32> {
    values.iter().map(|v| v.to_bits()).collect()
}

/// DP-SGD's release with its Gaussian draws made beforehand (`DpSgd::draw_noise`, then
/// `DpSgd::noisy_mean_of_clipped_sum_with`, which the privacy engine uses to draw the noise
/// while the clipped sum is computed) is the release that draws in turn, bit for bit.
#[test]
fn pre_drawn_noise_gives_the_release_that_draws_in_turn() {
    let dimension = 1000;
    let mechanism = DpSgdConfig {
        noise_multiplier: 1.3,
        clipping: Clipping::Flat { clip: 0.7 },
        dimension,
    }
    .build()
    .unwrap();
    let sum: Vec<f32> = (0..dimension)
        .map(|i| (i as f32 * 0.37).sin() * 3.0)
        .collect();
    let (mut in_turn, mut ahead) = (ChaCha8Rng::seed_from_u64(11), ChaCha8Rng::seed_from_u64(11));
    let mut last = Vec::new();
    for _ in 0..3 {
        let drawn = mechanism
            .noisy_mean_of_clipped_sum(sum.clone(), 64.0, &mut in_turn)
            .unwrap();
        let normals = mechanism.draw_noise(&mut ahead);
        assert_eq!(normals.len(), dimension);
        let pre_drawn = mechanism
            .noisy_mean_of_clipped_sum_with(sum.clone(), 64.0, &normals)
            .unwrap();
        assert_eq!(bits(&drawn), bits(&pre_drawn));
        // Noise is there, of about σC/L per coordinate, and new at every release.
        let std = (pre_drawn.iter().zip(&sum))
            .map(|(r, s)| (f64::from(*r) - f64::from(*s) / 64.0).powi(2))
            .sum::<f64>()
            / dimension as f64;
        let expected = 1.3 * 0.7 / 64.0;
        assert!(
            (std.sqrt() / expected - 1.0).abs() < 0.1,
            "{} against {expected}",
            std.sqrt()
        );
        assert_ne!(bits(&pre_drawn), last);
        last = bits(&pre_drawn);
    }
    let normals = mechanism.draw_noise(&mut ahead);
    let short = mechanism.noisy_mean_of_clipped_sum_with(sum, 64.0, &normals[..dimension - 1]);
    assert!(
        matches!(short, Err(PrivacyError::DimensionMismatch { .. })),
        "{short:?}"
    );
}

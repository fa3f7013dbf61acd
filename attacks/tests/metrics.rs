//! The metrics against hand-computed values and against a brute-force SSIM.

use privrl_attacks::{
    absolute_error, action_accuracy, bbox_iou, luma_bt601, percentage_error, psnr, ssim,
    ImageNormalisation,
};
use privrl_attacks::{gaussian_window, score_rgb, SSIM_SIGMA, SSIM_WINDOW};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

fn random_image(len: usize, rng: &mut impl Rng) -> Vec<f32> {
    (0..len).map(|_| rng.random_range(0.0..1.0)).collect()
}

/// SSIM straight from Wang et al.'s definition: at every window position, the Gaussian-weighted
/// means, variances and covariance computed directly from the 2-D weights w(i, j) =
/// exp(−((i−5)² + (j−5)²)/(2σ²)) / Σ, then the SSIM formula, averaged over positions.
fn brute_force_ssim(x: &[f32], y: &[f32], width: usize, height: usize) -> f64 {
    let k = SSIM_WINDOW;
    let centre = (k as f64 - 1.0) / 2.0;
    let mut weights = vec![0.0; k * k];
    for i in 0..k {
        for j in 0..k {
            weights[i * k + j] = (-((i as f64 - centre).powi(2) + (j as f64 - centre).powi(2))
                / (2.0 * SSIM_SIGMA * SSIM_SIGMA))
                .exp();
        }
    }
    let total: f64 = weights.iter().sum();
    weights.iter_mut().for_each(|w| *w /= total);
    let (c1, c2) = (0.01f64.powi(2), 0.03f64.powi(2));
    let mut sum = 0.0;
    let mut count = 0;
    for r in 0..=height - k {
        for c in 0..=width - k {
            let (mut mx, mut my) = (0.0, 0.0);
            for i in 0..k {
                for j in 0..k {
                    let w = weights[i * k + j];
                    mx += w * f64::from(x[(r + i) * width + c + j]);
                    my += w * f64::from(y[(r + i) * width + c + j]);
                }
            }
            let (mut vx, mut vy, mut cov) = (0.0, 0.0, 0.0);
            for i in 0..k {
                for j in 0..k {
                    let w = weights[i * k + j];
                    let dx = f64::from(x[(r + i) * width + c + j]) - mx;
                    let dy = f64::from(y[(r + i) * width + c + j]) - my;
                    vx += w * dx * dx;
                    vy += w * dy * dy;
                    cov += w * dx * dy;
                }
            }
            sum += ((2.0 * mx * my + c1) * (2.0 * cov + c2))
                / ((mx * mx + my * my + c1) * (vx + vy + c2));
            count += 1;
        }
    }
    sum / count as f64
}

#[test]
fn psnr_of_identical_images_is_infinite_and_of_an_offset_is_known() {
    let mut rng = ChaCha8Rng::seed_from_u64(0);
    let x = random_image(256, &mut rng);
    assert_eq!(psnr(&x, &x, 1.0).unwrap(), f64::INFINITY);
    // A constant offset of 0.1: MSE = 0.01, PSNR = 10 log10(1/0.01) = 20 dB.
    let y: Vec<f32> = x.iter().map(|v| v + 0.1).collect();
    assert!((psnr(&x, &y, 1.0).unwrap() - 20.0).abs() < 1e-4);
    // Offset 0.5 on a quarter of the pixels: MSE = 0.0625, PSNR = 10 log10(16) ≈ 12.0412 dB.
    let z: Vec<f32> = x
        .iter()
        .enumerate()
        .map(|(i, v)| if i % 4 == 0 { v + 0.5 } else { *v })
        .collect();
    assert!((psnr(&x, &z, 1.0).unwrap() - 10.0 * 16f64.log10()).abs() < 1e-4);
    assert!(psnr(&x, &z[..10], 1.0).is_err());
}

#[test]
fn ssim_of_identical_images_is_one() {
    let x = random_image(16 * 16, &mut ChaCha8Rng::seed_from_u64(1));
    assert!((ssim(&x, &x, 16, 16, 1.0).unwrap() - 1.0).abs() < 1e-12);
}

#[test]
fn ssim_matches_a_brute_force_implementation() {
    let mut rng = ChaCha8Rng::seed_from_u64(2);
    for (width, height) in [(16, 16), (24, 13), (32, 32)] {
        let x = random_image(width * height, &mut rng);
        // A noisy, contrast-reduced, shifted copy and an unrelated image.
        let y: Vec<f32> = x
            .iter()
            .map(|v| (0.7 * v + 0.1 + rng.random_range(-0.1..0.1f32)).clamp(0.0, 1.0))
            .collect();
        let z = random_image(width * height, &mut rng);
        for other in [&y, &z] {
            let fast = ssim(&x, other, width, height, 1.0).unwrap();
            let slow = brute_force_ssim(&x, other, width, height);
            assert!(
                (fast - slow).abs() < 1e-10,
                "{width}×{height}: {fast} vs {slow}"
            );
        }
        // Symmetric, and an unrelated uniform-noise image scores near 0.
        assert!(
            (ssim(&x, &y, width, height, 1.0).unwrap() - ssim(&y, &x, width, height, 1.0).unwrap())
                .abs()
                < 1e-12
        );
        let unrelated = ssim(&x, &z, width, height, 1.0).unwrap();
        assert!(
            unrelated.abs() < 0.2,
            "{width}×{height}: unrelated images score {unrelated}"
        );
    }
    // A constant offset c on a constant image a: SSIM = (2a(a+c) + C1)/(a² + (a+c)² + C1).
    let (a, c) = (0.4f64, 0.2f64);
    let flat = vec![a as f32; 256];
    let shifted = vec![(a + c) as f32; 256];
    let c1 = 1e-4;
    let expected = (2.0 * a * (a + c) + c1) / (a * a + (a + c) * (a + c) + c1);
    assert!((ssim(&flat, &shifted, 16, 16, 1.0).unwrap() - expected).abs() < 1e-6);
}

#[test]
fn gaussian_window_is_normalised_and_symmetric() {
    let w = gaussian_window(11, 1.5);
    assert!((w.iter().sum::<f64>() - 1.0).abs() < 1e-12);
    assert!((w[0] - w[10]).abs() < 1e-15 && w[5] > w[4]);
    // exp(−25/4.5) relative to the centre.
    assert!((w[0] / w[5] - (-25.0f64 / 4.5).exp()).abs() < 1e-12);
}

#[test]
fn luma_uses_bt601_weights() {
    // 1×2 image: pixel 0 pure red, pixel 1 white.
    let rgb = [1.0, 1.0, 0.0, 1.0, 0.0, 1.0];
    let y = luma_bt601(&rgb);
    assert!((y[0] - 0.299).abs() < 1e-6 && (y[1] - 1.0).abs() < 1e-6);
    let x = random_image(3 * 16 * 16, &mut ChaCha8Rng::seed_from_u64(3));
    let scores = score_rgb(&x, &x, 16).unwrap();
    assert_eq!(scores.psnr, f64::INFINITY);
    assert!((scores.ssim - 1.0).abs() < 1e-12);
}

#[test]
fn normalisation_clamps_or_rescales_by_the_brightest_pixel() {
    let (rgb, depth) = ImageNormalisation::Clamp.apply(Some(&[-0.5, 0.5, 1.5]), Some(&[2.0]));
    assert_eq!(rgb.unwrap(), vec![0.0, 0.5, 1.0]);
    assert_eq!(depth.unwrap(), vec![1.0]);
    let (rgb, depth) =
        ImageNormalisation::BrightestPixel.apply(Some(&[-0.5, 0.5, 2.0]), Some(&[1.0]));
    assert_eq!(rgb.unwrap(), vec![0.0, 0.25, 1.0]);
    assert_eq!(depth.unwrap(), vec![0.5]);
    let (_, depth) = ImageNormalisation::BrightestPixel.apply(None, Some(&[0.2, 0.4]));
    assert_eq!(depth.unwrap(), vec![0.5, 1.0]);
}

#[test]
fn bbox_iou_matches_hand_computed_values() {
    let a = [-1.0, -1.0, 0.0, 0.0];
    assert_eq!(bbox_iou(&a, &a).unwrap(), 1.0);
    // Intersection [−0.5, 0]² = 0.25; union 1 + 1 − 0.25 = 1.75.
    let b = [-0.5, -0.5, 0.5, 0.5];
    assert!((bbox_iou(&a, &b).unwrap() - 0.25 / 1.75).abs() < 1e-12);
    // Disjoint boxes and an inverted (empty) box.
    assert_eq!(bbox_iou(&a, &[0.5, 0.5, 1.0, 1.0]).unwrap(), 0.0);
    assert_eq!(bbox_iou(&a, &[0.0, 0.0, -1.0, -1.0]).unwrap(), 0.0);
    assert!(bbox_iou(&a, &[0.0, 0.0, 1.0]).is_err());
}

#[test]
fn scalar_errors_and_action_accuracy() {
    assert!((percentage_error(1.1, 1.0) - 10.0).abs() < 1e-9);
    assert!((percentage_error(-2.5, -2.0) - 25.0).abs() < 1e-9);
    assert_eq!(percentage_error(0.0, 0.0), 0.0);
    assert_eq!(percentage_error(1.0, 0.0), f64::INFINITY);
    assert_eq!(absolute_error(0.25, -0.5), 0.75);
    assert_eq!(action_accuracy(&[1, 2, 3, 4], &[1, 2, 0, 4]).unwrap(), 0.75);
    assert!(action_accuracy(&[1], &[1, 2]).is_err());
}

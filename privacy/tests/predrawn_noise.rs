//! DP-SGD's release with its Gaussian draws made beforehand (`DpSgd::draw_noise`, then
//! `DpSgd::noisy_mean_of_clipped_sum_with`, which the privacy engine uses to draw the noise
//! while the clipped sum is computed) is the release that draws in turn, bit for bit.

use privrl_privacy::{Clipping, DpSgdConfig, PrivacyError};
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;

fn bits(values: &[f32]) -> Vec<u32> {
    values.iter().map(|v| v.to_bits()).collect()
}

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
    let (mut in_turn, mut ahead) = (
        ChaCha20Rng::seed_from_u64(11),
        ChaCha20Rng::seed_from_u64(11),
    );
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

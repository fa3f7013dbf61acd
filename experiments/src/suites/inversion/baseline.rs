//! The trivial baselines of every image table: what an attacker scores who learnt nothing from
//! the gradient. Without them a PSNR near the paper's cannot be told from a constant image.
//!
//! - **Flat at the true mean** (an oracle): each image replaced by a constant at the sample's
//!   own mean (per colour channel for RGB). It knows the one statistic a gradient need not
//!   reveal, so it bounds from above what "knowing nothing but the mean" scores. It is scored
//!   as it is, without the paper's brightest-pixel rescaling (which would push a flat image to
//!   white): it is already in `[0, 1]`.
//! - **Initialisation**: a draw from the attack's initial distribution N(0, σ²) per pixel
//!   (σ = the attack's `init_std`), normalised as the reconstructions are, i.e. the attack
//!   before its first step (a fresh draw per sample, not the attack's own).

use anyhow::Result;
use privrl_attacks::{
    gaussian_noise, score_rgb, score_single_channel, AttackConfig, ImageNormalisation, ImageScores,
    InversionRow, Sample,
};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use super::verdict::RECOVERY_MARGIN_DB;

/// The scores of one baseline on one sample: (RGB, depth).
pub(crate) type BaselineScores = (Option<ImageScores>, Option<ImageScores>);

/// Each channel of `image` (`channels × plane`) replaced by its mean.
fn flat(image: &[f32], channels: usize) -> Vec<f32> {
    let plane = image.len() / channels.max(1);
    image
        .chunks(plane.max(1))
        .flat_map(|c| {
            let mean = c.iter().map(|&v| f64::from(v)).sum::<f64>() / c.len().max(1) as f64;
            std::iter::repeat_n(mean as f32, c.len())
        })
        .collect()
}

/// The flat-at-the-true-mean oracle's scores on `sample` (images `size × size`).
pub(crate) fn flat_scores(sample: &Sample, size: usize) -> Result<BaselineScores> {
    let rgb = sample
        .rgb
        .as_ref()
        .map(|truth| score_rgb(truth, &flat(truth, 3), size))
        .transpose()?;
    let depth = sample
        .depth
        .as_ref()
        .map(|truth| score_single_channel(truth, &flat(truth, 1), size))
        .transpose()?;
    Ok((rgb, depth))
}

/// The scores of a draw from the attack's initial distribution on `sample` number `index`,
/// normalised by `normalisation` (seeded by `seed` and `index`).
pub(crate) fn initialisation_scores(
    sample: &Sample,
    index: usize,
    size: usize,
    config: &AttackConfig,
    normalisation: ImageNormalisation,
    seed: u64,
) -> Result<BaselineScores> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ (0x1417 + index as u64).rotate_left(32));
    let mut draw = |truth: &Option<Vec<f32>>| {
        truth
            .as_ref()
            .map(|t| gaussian_noise(t.len(), config.init_std, &mut rng))
    };
    let (rgb, depth) = (draw(&sample.rgb), draw(&sample.depth));
    let (rgb, depth) = normalisation.apply(rgb.as_deref(), depth.as_deref());
    let rgb = match (&sample.rgb, rgb) {
        (Some(truth), Some(image)) => Some(score_rgb(truth, &image, size)?),
        _ => None,
    };
    let depth = match (&sample.depth, depth) {
        (Some(truth), Some(image)) => Some(score_single_channel(truth, &image, size)?),
        _ => None,
    };
    Ok((rgb, depth))
}

/// A baseline as the rows of a table: one non-failed [`InversionRow`] per sample carrying
/// only image scores, so that the tables summarise it as they summarise an attack.
pub(crate) fn baseline_rows(scores: &[BaselineScores]) -> Vec<InversionRow> {
    scores
        .iter()
        .enumerate()
        .map(|(sample, &(rgb, depth))| InversionRow {
            sample,
            rgb,
            depth,
            vector_iou: None,
            action_correct: false,
            predicted_q_error_pct: None,
            target_q_error_pct: None,
            reward_abs_error: None,
            final_loss: None,
            failed: false,
            attack_ms: 0.0,
            reconstructed: Default::default(),
        })
        .collect()
}

/// How many of `rows`' images (`depth` or RGB) are recovered: not failed, and their PSNR at
/// least [`RECOVERY_MARGIN_DB`] above the flat oracle's on the same sample.
pub(crate) fn recovered(rows: &[InversionRow], flat: &[BaselineScores], depth: bool) -> usize {
    rows.iter()
        .filter(|r| !r.failed)
        .filter(|r| {
            let pick = |(rgb, d): BaselineScores| if depth { d } else { rgb };
            let ours = if depth { r.depth } else { r.rgb };
            match (ours, flat.get(r.sample).copied().and_then(pick)) {
                (Some(ours), Some(flat)) => ours.psnr >= flat.psnr + RECOVERY_MARGIN_DB,
                _ => false,
            }
        })
        .count()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::suites::inversion::tests::row;

    fn sample(depth: Vec<f32>) -> Sample {
        Sample {
            rgb: None,
            depth: Some(depth),
            vector: vec![0.0; 4],
            action: 0,
            signal: 1.0,
        }
    }

    #[test]
    fn the_flat_oracle_scores_the_variance_of_the_image() {
        // A 4×4 depth image of two values 0.2 and 0.6 in equal parts: mean 0.4, every
        // pixel 0.2 away, MSE 0.04, PSNR = 10 log10(1 / 0.04) = 13.98 dB.
        let depth: Vec<f32> = (0..16)
            .map(|i| if i % 2 == 0 { 0.2 } else { 0.6 })
            .collect();
        let (rgb, scores) = flat_scores(&sample(depth), 4).unwrap();
        assert!(rgb.is_none());
        let expected = 10.0 * (1.0f64 / 0.04).log10();
        assert!((scores.unwrap().psnr - expected).abs() < 1e-4);
        // A constant image is its own mean: a perfect score.
        let (_, scores) = flat_scores(&sample(vec![0.3; 16]), 4).unwrap();
        assert_eq!(scores.unwrap().psnr, f64::INFINITY);
        // RGB: each channel flat at its own mean, scored on luma.
        assert_eq!(flat(&[0.0, 1.0, 0.5, 0.5], 2), [0.5, 0.5, 0.5, 0.5]);
        assert_eq!(flat(&[0.0, 1.0, 0.2, 0.4], 2), [0.5, 0.5, 0.3, 0.3]);
    }

    #[test]
    fn recovery_needs_the_margin_over_the_flat_oracle() {
        let flat: Vec<BaselineScores> = (0..3)
            .map(|_| {
                (
                    None,
                    Some(ImageScores {
                        psnr: 20.0,
                        ssim: 0.1,
                    }),
                )
            })
            .collect();
        // 23 dB beats 20 by the 3 dB margin exactly, 22.9 does not; a failed row never counts.
        let rows = [row(0, 23.0, false), row(1, 22.9, false), row(2, 40.0, true)];
        assert_eq!(recovered(&rows, &flat, true), 1);
        // No RGB in these rows: nothing recovered there.
        assert_eq!(recovered(&rows, &flat, false), 0);
    }

    #[test]
    fn the_initialisation_draw_is_seeded_and_normalised() {
        let s = sample(vec![0.5; 16]);
        let config = AttackConfig::qgi();
        let a = initialisation_scores(&s, 0, 4, &config, ImageNormalisation::Clamp, 7).unwrap();
        let b = initialisation_scores(&s, 0, 4, &config, ImageNormalisation::Clamp, 7).unwrap();
        let c = initialisation_scores(&s, 1, 4, &config, ImageNormalisation::Clamp, 7).unwrap();
        assert_eq!(a, b);
        assert_ne!(a, c);
        // Clamped to [0, 1], every pixel lies within 0.5 of the truth 0.5, so the PSNR is at
        // least 10 log10(1 / 0.25) = 6.02 dB; unclamped N(0, 1) noise would score below it.
        assert!(a.1.unwrap().psnr >= 6.02 - 1e-9);
    }
}

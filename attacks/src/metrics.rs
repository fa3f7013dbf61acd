//! The paper's metrics (Section V): PSNR and SSIM of the images, IoU of the bounding-box
//! vector, action accuracy, percentage error of the Q-values and absolute error of the reward.
//!
//! Images are scored on one channel with data range 1: the luma Y of YCbCr for RGB and the
//! single channel for depth. Y uses the full-range BT.601 weights (JPEG/JFIF),
//! Y = 0.299 R + 0.587 G + 0.114 B on `[0, 1]` values, so Y stays in `[0, 1]`.
//!
//! Normalisation of a reconstruction before scoring ([`ImageNormalisation`]): the ground truth
//! lies in `[0, 1]`; the default clamps the reconstruction to `[0, 1]`. The paper instead
//! rescales the reconstructed RGB image so that its brightest pixel is 255 (1 here) and the
//! depth image by the same factor, which assumes that every true image has a white pixel;
//! [`ImageNormalisation::BrightestPixel`] does that (then clamps), for comparison with
//! Table I.

use burn::config::Config;

use crate::error::AttackError;

/// SSIM's constants (Wang et al. 2004).
const SSIM_K1: f64 = 0.01;
const SSIM_K2: f64 = 0.03;
/// Side of SSIM's Gaussian window.
pub const SSIM_WINDOW: usize = 11;
/// Standard deviation of SSIM's Gaussian window.
pub const SSIM_SIGMA: f64 = 1.5;

/// How a reconstructed image is mapped to the ground truth's range `[0, 1]` before scoring.
#[derive(Config, Debug, Copy, PartialEq, Eq)]
pub enum ImageNormalisation {
    /// Clamp every value to `[0, 1]`.
    Clamp,
    /// The paper's rule: scale the RGB reconstruction (or, without RGB, the depth
    /// reconstruction) so that its largest value is 1, scale depth by the same factor, clamp
    /// to `[0, 1]`. A non-positive maximum leaves the values unscaled.
    BrightestPixel,
}

impl ImageNormalisation {
    /// Normalises a reconstructed RGB and depth image together.
    pub fn apply(
        &self,
        rgb: Option<&[f32]>,
        depth: Option<&[f32]>,
    ) -> (Option<Vec<f32>>, Option<Vec<f32>>) {
        let scale = match self {
            ImageNormalisation::Clamp => 1.0,
            ImageNormalisation::BrightestPixel => {
                let reference = rgb.or(depth).unwrap_or(&[]);
                let max = reference.iter().copied().fold(f32::NEG_INFINITY, f32::max);
                if max > 0.0 && max.is_finite() {
                    1.0 / max
                } else {
                    1.0
                }
            }
        };
        let map = |image: &[f32]| image.iter().map(|&v| (v * scale).clamp(0.0, 1.0)).collect();
        (rgb.map(map), depth.map(map))
    }
}

/// Luma of an RGB image `3 × H × W` (channel-major) in full-range BT.601:
/// Y = 0.299 R + 0.587 G + 0.114 B.
pub fn luma_bt601(rgb: &[f32]) -> Vec<f32> {
    let plane = rgb.len() / 3;
    (0..plane)
        .map(|i| 0.299 * rgb[i] + 0.587 * rgb[plane + i] + 0.114 * rgb[2 * plane + i])
        .collect()
}

/// Peak signal-to-noise ratio 10 log₁₀(L² / MSE) in dB with data range L; +∞ for identical
/// images.
pub fn psnr(reference: &[f32], test: &[f32], data_range: f64) -> Result<f64, AttackError> {
    check_same_len("psnr images", reference, test)?;
    if reference.is_empty() {
        return Err(AttackError::EmptyBatch);
    }
    let mse = reference
        .iter()
        .zip(test)
        .map(|(&a, &b)| (f64::from(a) - f64::from(b)).powi(2))
        .sum::<f64>()
        / reference.len() as f64;
    Ok(if mse == 0.0 {
        f64::INFINITY
    } else {
        10.0 * (data_range * data_range / mse).log10()
    })
}

/// The normalised 1-D Gaussian of SSIM's window with `len` taps.
pub fn gaussian_window(len: usize, sigma: f64) -> Vec<f64> {
    let centre = (len as f64 - 1.0) / 2.0;
    let raw: Vec<f64> = (0..len)
        .map(|i| (-(i as f64 - centre).powi(2) / (2.0 * sigma * sigma)).exp())
        .collect();
    let total: f64 = raw.iter().sum();
    raw.into_iter().map(|w| w / total).collect()
}

/// Mean SSIM (Wang et al. 2004) of two single-channel `height × width` images with data range
/// L: an 11×11 Gaussian window with σ = 1.5 (normalised to sum 1), K1 = 0.01, K2 = 0.03,
/// C1 = (K1 L)², C2 = (K2 L)², the SSIM map over the window positions that fit inside the
/// image ("valid", as in Wang's reference code), averaged. An image smaller than the window
/// uses the largest odd window that fits (σ unchanged).
pub fn ssim(
    reference: &[f32],
    test: &[f32],
    width: usize,
    height: usize,
    data_range: f64,
) -> Result<f64, AttackError> {
    check_same_len("ssim images", reference, test)?;
    if reference.len() != width * height {
        return Err(AttackError::ShapeMismatch {
            what: "ssim image",
            expected: width * height,
            got: reference.len(),
        });
    }
    if width == 0 || height == 0 {
        return Err(AttackError::EmptyBatch);
    }
    let mut window = SSIM_WINDOW.min(width).min(height);
    if window.is_multiple_of(2) {
        window -= 1;
    }
    let taps = gaussian_window(window, SSIM_SIGMA);
    let x: Vec<f64> = reference.iter().map(|&v| f64::from(v)).collect();
    let y: Vec<f64> = test.iter().map(|&v| f64::from(v)).collect();
    let xx: Vec<f64> = x.iter().map(|v| v * v).collect();
    let yy: Vec<f64> = y.iter().map(|v| v * v).collect();
    let xy: Vec<f64> = x.iter().zip(&y).map(|(a, b)| a * b).collect();
    let filter = |image: &[f64]| separable_valid_filter(image, width, height, &taps);
    let (mu_x, mu_y) = (filter(&x), filter(&y));
    let (e_xx, e_yy, e_xy) = (filter(&xx), filter(&yy), filter(&xy));
    let c1 = (SSIM_K1 * data_range).powi(2);
    let c2 = (SSIM_K2 * data_range).powi(2);
    let mut total = 0.0;
    for i in 0..mu_x.len() {
        let (mx, my) = (mu_x[i], mu_y[i]);
        let var_x = e_xx[i] - mx * mx;
        let var_y = e_yy[i] - my * my;
        let cov = e_xy[i] - mx * my;
        total += ((2.0 * mx * my + c1) * (2.0 * cov + c2))
            / ((mx * mx + my * my + c1) * (var_x + var_y + c2));
    }
    Ok(total / mu_x.len() as f64)
}

/// Correlates a `height × width` image with the window `taps ⊗ taps`, keeping only positions
/// where the window fits: `(height − k + 1) × (width − k + 1)` values.
fn separable_valid_filter(image: &[f64], width: usize, height: usize, taps: &[f64]) -> Vec<f64> {
    let k = taps.len();
    let (out_w, out_h) = (width + 1 - k, height + 1 - k);
    let mut rows = vec![0.0; height * out_w];
    for r in 0..height {
        for c in 0..out_w {
            rows[r * out_w + c] = (0..k).map(|t| taps[t] * image[r * width + c + t]).sum();
        }
    }
    let mut out = vec![0.0; out_h * out_w];
    for r in 0..out_h {
        for c in 0..out_w {
            out[r * out_w + c] = (0..k).map(|t| taps[t] * rows[(r + t) * out_w + c]).sum();
        }
    }
    out
}

/// PSNR and SSIM of one image.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ImageScores {
    /// PSNR in dB (data range 1).
    pub psnr: f64,
    /// Mean SSIM.
    pub ssim: f64,
}

/// Scores a reconstructed RGB image (already normalised) against the truth on the luma
/// channel; both `3 × size × size`.
pub fn score_rgb(
    truth: &[f32],
    reconstruction: &[f32],
    size: usize,
) -> Result<ImageScores, AttackError> {
    check_same_len("rgb images", truth, reconstruction)?;
    score_single_channel(&luma_bt601(truth), &luma_bt601(reconstruction), size)
}

/// Scores a reconstructed single-channel image (already normalised) against the truth; both
/// `size × size`.
pub fn score_single_channel(
    truth: &[f32],
    reconstruction: &[f32],
    size: usize,
) -> Result<ImageScores, AttackError> {
    Ok(ImageScores {
        psnr: psnr(truth, reconstruction, 1.0)?,
        ssim: ssim(truth, reconstruction, size, size, 1.0)?,
    })
}

/// Intersection over union of two boxes `(x_min, y_min, x_max, y_max)` (the vector state,
/// coordinates in `[−1, 1]`). A box with x_max < x_min or y_max < y_min is empty. Two
/// empty (or zero-area) boxes score 1 if they are equal and 0 otherwise.
pub fn bbox_iou(truth: &[f32], reconstruction: &[f32]) -> Result<f64, AttackError> {
    for (what, b) in [
        ("bbox (truth)", truth),
        ("bbox (reconstruction)", reconstruction),
    ] {
        if b.len() != 4 {
            return Err(AttackError::ShapeMismatch {
                what,
                expected: 4,
                got: b.len(),
            });
        }
    }
    let b = |v: &[f32]| [0, 1, 2, 3].map(|i| f64::from(v[i]));
    let (p, q) = (b(truth), b(reconstruction));
    let area = |v: [f64; 4]| (v[2] - v[0]).max(0.0) * (v[3] - v[1]).max(0.0);
    let inter = area([
        p[0].max(q[0]),
        p[1].max(q[1]),
        p[2].min(q[2]),
        p[3].min(q[3]),
    ]);
    let union = area(p) + area(q) - inter;
    Ok(if union > 0.0 {
        inter / union
    } else if p == q {
        1.0
    } else {
        0.0
    })
}

/// The fraction of reconstructed actions that equal the true ones.
pub fn action_accuracy(truth: &[usize], reconstruction: &[usize]) -> Result<f64, AttackError> {
    if truth.len() != reconstruction.len() {
        return Err(AttackError::LengthMismatch {
            what: "actions",
            left: truth.len(),
            right: reconstruction.len(),
        });
    }
    if truth.is_empty() {
        return Err(AttackError::EmptyBatch);
    }
    let correct = truth
        .iter()
        .zip(reconstruction)
        .filter(|(a, b)| a == b)
        .count();
    Ok(correct as f64 / truth.len() as f64)
}

/// Percentage error ε(x) = 100 |x_rec − x| / |x| (Section V); +∞ for x = 0 ≠ x_rec, 0 for
/// x = x_rec = 0.
pub fn percentage_error(reconstruction: f64, truth: f64) -> f64 {
    let error = (reconstruction - truth).abs();
    if error == 0.0 {
        0.0
    } else if truth == 0.0 {
        f64::INFINITY
    } else {
        100.0 * error / truth.abs()
    }
}

/// Absolute error |x_rec − x| (the reward's metric).
pub fn absolute_error(reconstruction: f64, truth: f64) -> f64 {
    (reconstruction - truth).abs()
}

fn check_same_len(what: &'static str, a: &[f32], b: &[f32]) -> Result<(), AttackError> {
    if a.len() == b.len() {
        Ok(())
    } else {
        Err(AttackError::LengthMismatch {
            what,
            left: a.len(),
            right: b.len(),
        })
    }
}

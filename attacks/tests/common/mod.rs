//! Synthetic samples for the attack tests: smooth images with a blob and an edge, a bounding
//! box in [−1, 1], a random action and signal.

// Each test binary that includes this module uses a different subset of it.
#![allow(dead_code)]

use privrl_agents::{ConvEncoderConfig, MultimodalNetConfig};
use privrl_attacks::Sample;
use rand::Rng;

/// A `channels × size × size` image in [0, 1]: a linear ramp, a Gaussian blob and a brighter
/// rectangle with sharp edges, with per-channel colours.
pub fn synthetic_image(channels: usize, size: usize, rng: &mut impl Rng) -> Vec<f32> {
    let s = size as f32;
    let (bx, by) = (
        rng.random_range(0.2..0.8) * s,
        rng.random_range(0.2..0.8) * s,
    );
    let radius = rng.random_range(0.1..0.25) * s;
    let (rx0, ry0) = (
        rng.random_range(0.0..0.5) * s,
        rng.random_range(0.0..0.5) * s,
    );
    let (rx1, ry1) = (
        rx0 + rng.random_range(0.2..0.5) * s,
        ry0 + rng.random_range(0.2..0.5) * s,
    );
    let mut image = Vec::with_capacity(channels * size * size);
    for _ in 0..channels {
        let base = rng.random_range(0.1..0.4);
        let (gx, gy) = (rng.random_range(-0.2..0.2), rng.random_range(-0.2..0.2));
        let blob = rng.random_range(0.3..0.6);
        let rect = rng.random_range(0.2..0.4);
        for y in 0..size {
            for x in 0..size {
                let (xf, yf) = (x as f32, y as f32);
                let mut v = base + gx * xf / s + gy * yf / s;
                v += blob
                    * (-((xf - bx).powi(2) + (yf - by).powi(2)) / (2.0 * radius * radius)).exp();
                if xf >= rx0 && xf < rx1 && yf >= ry0 && yf < ry1 {
                    v += rect;
                }
                image.push(v.clamp(0.0, 1.0));
            }
        }
    }
    image
}

/// A bounding box (x_min, y_min, x_max, y_max) in [−1, 1] with positive area.
pub fn synthetic_bbox(rng: &mut impl Rng) -> Vec<f32> {
    let (x0, y0) = (
        rng.random_range(-1.0..0.4f32),
        rng.random_range(-1.0..0.4f32),
    );
    let (x1, y1) = (
        (x0 + rng.random_range(0.2..0.6f32)).min(1.0),
        (y0 + rng.random_range(0.2..0.6f32)).min(1.0),
    );
    vec![x0, y0, x1, y1]
}

/// A sample for a network with the given branches.
pub fn synthetic_sample(
    rgb_size: Option<usize>,
    depth_size: Option<usize>,
    num_actions: usize,
    signal_range: std::ops::Range<f64>,
    rng: &mut impl Rng,
) -> Sample {
    Sample {
        rgb: rgb_size.map(|s| synthetic_image(3, s, rng)),
        depth: depth_size.map(|s| synthetic_image(1, s, rng)),
        vector: synthetic_bbox(rng),
        action: rng.random_range(0..num_actions),
        signal: rng.random_range(signal_range),
    }
}

/// RGB + depth encoders at `size`, a 4-vector, 7 actions (the active-perception layout).
pub fn rgbd_config(size: usize) -> MultimodalNetConfig {
    rgbd_config_with_channels(size, vec![4, 8])
}

/// As [`rgbd_config`] with the given conv channels.
pub fn rgbd_config_with_channels(size: usize, channels: Vec<usize>) -> MultimodalNetConfig {
    MultimodalNetConfig::new(4, 7)
        .with_rgb(Some(
            ConvEncoderConfig::new(3, size).with_channels(channels.clone()),
        ))
        .with_depth(Some(
            ConvEncoderConfig::new(1, size).with_channels(channels),
        ))
        .with_vector_hidden(vec![16])
        .with_head_hidden(vec![32])
}

/// Depth only (the paper's setting S2).
pub fn depth_config(size: usize) -> MultimodalNetConfig {
    depth_config_with_channels(size, vec![4, 8])
}

/// As [`depth_config`] with the given conv channels.
pub fn depth_config_with_channels(size: usize, channels: Vec<usize>) -> MultimodalNetConfig {
    MultimodalNetConfig::new(4, 7)
        .with_depth(Some(
            ConvEncoderConfig::new(1, size).with_channels(channels),
        ))
        .with_vector_hidden(vec![16])
        .with_head_hidden(vec![32])
}

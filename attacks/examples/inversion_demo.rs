//! Runs an attack on synthetic samples (smooth images with a blob and an edge, a random
//! bounding box) and prints the per-sample rows of `evaluate_inversion` with their means.
//!
//! `cargo run -p privrl-attacks --release --example inversion_demo -- [qgi|rgi|dlg|ig]
//!  [samples] [iterations per stage] [restarts] [image size] [depth|rgbd] [tv weight]
//!  [conv channels, e.g. 4,8]`

use burn::backend::NdArray;
use privrl_attacks::{
    evaluate_inversion, AttackConfig, ImageNormalisation, ImagePrior, Victim, VictimKind,
};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

#[path = "../tests/common/mod.rs"]
mod common;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let arg = |i: usize, default: &str| args.get(i).cloned().unwrap_or_else(|| default.to_string());
    let method = arg(1, "qgi");
    let samples: usize = arg(2, "10").parse().expect("samples");
    let iterations: usize = arg(3, "300").parse().expect("iterations");
    let restarts: usize = arg(4, "3").parse().expect("restarts");
    let size: usize = arg(5, "16").parse().expect("image size");
    let rgbd = arg(6, "depth") == "rgbd";
    let tv: f64 = arg(7, "0.01").parse().expect("tv weight");
    let channels: Vec<usize> = arg(8, "4,8")
        .split(',')
        .map(|c| c.parse().expect("channels"))
        .collect();

    let (kind, config) = match method.as_str() {
        "rgi" => (
            VictimKind::Reinforce {
                entropy_weight: 0.01,
            },
            AttackConfig::rgi(),
        ),
        "dlg" => (VictimKind::Dqn, AttackConfig::dlg()),
        "ig" => (VictimKind::Dqn, AttackConfig::inverting_gradients()),
        _ => (VictimKind::Dqn, AttackConfig::qgi()),
    };
    let prior = config
        .prior
        .as_ref()
        .map(|_| ImagePrior::TotalVariation { weight: tv });
    let config = config
        .with_iterations_per_stage(iterations)
        .with_restarts(restarts)
        .with_prior(prior);
    let net = if rgbd {
        common::rgbd_config_with_channels(size, channels)
    } else {
        common::depth_config_with_channels(size, channels)
    };
    let victim = Victim::<NdArray>::from_seed(&net, kind, 3, &Default::default()).expect("victim");
    let mut rng = ChaCha8Rng::seed_from_u64(11);
    let data: Vec<_> = (0..samples)
        .map(|_| common::synthetic_sample(rgbd.then_some(size), Some(size), 7, 1.0..5.0, &mut rng))
        .collect();
    let rows =
        evaluate_inversion(&victim, &data, &config, ImageNormalisation::Clamp).expect("attack");
    println!("sample | rgb PSNR/SSIM | depth PSNR/SSIM | IoU | action | ε(Q̂)% | ε(Q)% | |Δr| | ms");
    for r in &rows {
        let img = |s: Option<privrl_attacks::ImageScores>| {
            s.map_or("-".into(), |s| format!("{:.2}/{:.3}", s.psnr, s.ssim))
        };
        let num = |v: Option<f64>| v.map_or("-".into(), |v| format!("{v:.3e}"));
        println!(
            "{} | {} | {} | {:.4} | {} | {} | {} | {} | {:.0}",
            r.sample,
            img(r.rgb),
            img(r.depth),
            r.vector_iou.unwrap_or(f64::NAN),
            r.action_correct,
            num(r.predicted_q_error_pct),
            num(r.target_q_error_pct),
            num(r.reward_abs_error),
            r.attack_ms
        );
    }
    let mean = |f: &dyn Fn(&privrl_attacks::InversionRow) -> Option<f64>| {
        let v: Vec<f64> = rows.iter().filter_map(f).collect();
        v.iter().sum::<f64>() / v.len().max(1) as f64
    };
    println!(
        "mean: depth PSNR {:.2} SSIM {:.3} | rgb PSNR {:.2} SSIM {:.3} | IoU {:.3} (>0.9: {}/{}) | action {:.2} | ε(Q̂) {:.3}% ε(Q) {:.3}% | |Δr| {:.2e}",
        mean(&|r| r.depth.map(|s| s.psnr)),
        mean(&|r| r.depth.map(|s| s.ssim)),
        mean(&|r| r.rgb.map(|s| s.psnr)),
        mean(&|r| r.rgb.map(|s| s.ssim)),
        mean(&|r| r.vector_iou),
        rows.iter().filter(|r| r.vector_iou.unwrap_or(0.0) > 0.9).count(),
        rows.len(),
        mean(&|r| Some(f64::from(u8::from(r.action_correct)))),
        mean(&|r| r.predicted_q_error_pct),
        mean(&|r| r.target_q_error_pct),
        mean(&|r| r.reward_abs_error),
    );
}

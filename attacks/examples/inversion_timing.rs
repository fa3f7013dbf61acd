//! Milliseconds per attack iteration at 16×16, 32×32 and 64×64 (RGB + depth, setting S1) on
//! burn-ndarray. Run with `cargo run -p privrl-attacks --release --example inversion_timing`.
//!
//! The victim is `MultimodalNetConfig`'s default architecture (conv channels [8, 16], vector
//! branch [32], head [64], 7 actions). One iteration is a forward pass and a first-order
//! backward on `Autodiff<Autodiff<NdArray>>`, the gradient matching loss, a backward on the
//! inner autodiff and an Adam step. "Shared gradient" is the victim's own forward and
//! first-order backward, for scale.

use std::time::Instant;

use burn::backend::NdArray;
use privrl_agents::{ConvEncoderConfig, MultimodalNetConfig};
use privrl_attacks::{
    attack, gaussian_noise, AttackConfig, Sample, StateOptimisation, Victim, VictimKind,
};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

fn main() {
    let device = Default::default();
    let iterations: usize = std::env::args()
        .nth(1)
        .map_or(100, |s| s.parse().expect("iterations"));
    println!("| image | shared gradient (ms) | full-network iteration (ms) | QGI stage 1 + stage 2 iteration (ms) |");
    println!("|---|---|---|---|");
    for size in [16, 32, 64] {
        let config = MultimodalNetConfig::new(4, 7)
            .with_rgb(Some(ConvEncoderConfig::new(3, size)))
            .with_depth(Some(ConvEncoderConfig::new(1, size)));
        let victim = Victim::<NdArray>::from_seed(&config, VictimKind::Dqn, 0, &device).unwrap();
        let mut rng = ChaCha8Rng::seed_from_u64(0);
        let image = |len: usize, rng: &mut ChaCha8Rng| -> Vec<f32> {
            gaussian_noise(len, 0.2, rng)
                .into_iter()
                .map(|v| (v + 0.5).clamp(0.0, 1.0))
                .collect()
        };
        let sample = Sample {
            rgb: Some(image(3 * size * size, &mut rng)),
            depth: Some(image(size * size, &mut rng)),
            vector: vec![-0.5, -0.4, 0.3, 0.2],
            action: 3,
            signal: 2.0,
        };
        let record = victim
            .shared_gradient(std::slice::from_ref(&sample))
            .unwrap();
        let time = |config: &AttackConfig| {
            let start = Instant::now();
            attack(&victim, &record, config).unwrap();
            start.elapsed().as_secs_f64() * 1e3
        };
        let start = Instant::now();
        for _ in 0..20 {
            victim
                .shared_gradient(std::slice::from_ref(&sample))
                .unwrap();
        }
        let shared = start.elapsed().as_secs_f64() * 1e3 / 20.0;
        // Warm-up, then the timed runs (each stage evaluates the loss once more at the end).
        time(&AttackConfig::qgi().with_iterations_per_stage(5));
        let joint = time(
            &AttackConfig::qgi()
                .with_state(StateOptimisation::Joint)
                .with_iterations_per_stage(iterations),
        );
        let two_stage = time(&AttackConfig::qgi().with_iterations_per_stage(iterations));
        println!(
            "| {size}×{size} | {shared:.2} | {:.2} | {:.2} |",
            joint / (iterations + 1) as f64,
            two_stage / (iterations + 1) as f64
        );
    }
}

//! Times the Monte Carlo δ of Theorem 1 (paper 000, eq. 6 and 13): 10⁶ draws, m = 6.
//!
//! `cargo run --release -p privrl-privacy --example delta_bench`

use std::time::Instant;

use privrl_privacy::{DirichletConfig, MechanismRng, RandomnessSource};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

fn main() -> Result<(), privrl_privacy::PrivacyError> {
    let samples = 1_000_000;
    for (k, eta, tau) in [(5.0, 0.01, 0.01), (50.0, 0.05, 0.02), (0.5, 0.1, 0.05)] {
        let privacy = DirichletConfig {
            actions: 6,
            concentration: k,
            eta,
            tau,
            lipschitz: 1.0,
            adjacency: 0.1,
        }
        .build()?;
        let mut fast = ChaCha8Rng::seed_from_u64(1);
        let start = Instant::now();
        let d = privacy.delta_monte_carlo(samples, privrl_privacy::DELTA_CONFIDENCE, &mut fast)?;
        let chacha8 = start.elapsed();
        let mut secure_grade = MechanismRng::new(RandomnessSource::Seeded(1))?;
        let start = Instant::now();
        let d20 = privacy.delta_monte_carlo(
            samples,
            privrl_privacy::DELTA_CONFIDENCE,
            &mut secure_grade,
        )?;
        let chacha20 = start.elapsed();
        println!(
            "m=6 k={k} eta={eta} tau={tau}: delta = {:.5} + {:.5} (ChaCha8 {:.3} s) | {:.5} (ChaCha20 {:.3} s)",
            d.delta,
            d.margin,
            chacha8.as_secs_f64(),
            d20.delta,
            chacha20.as_secs_f64()
        );
    }
    Ok(())
}

//! A uniformly random policy on any registered environment: the library used directly, and
//! the baseline a learner must beat (CartPole-v1: 19.8 per episode over 100 episodes at seed 0).
//!
//! `cargo run --release -p privrl-envs --example random_policy -- CartPole-v1 100 0`
//! (environment, episodes, seed).

use std::process::ExitCode;

use privrl_envs::{make, Env};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let name = args.get(1).map_or("CartPole-v1", String::as_str);
    let episodes: u64 = args.get(2).map_or(Ok(100), |s| s.parse())?;
    let seed: u64 = args.get(3).map_or(Ok(0), |s| s.parse())?;
    if episodes == 0 {
        return Err("episodes must be at least 1".into());
    }
    let mut env = make(name)?;
    let actions = env
        .action_space()
        .discrete_n()
        .ok_or_else(|| format!("{name} has no discrete action space"))?;
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut total = 0.0;
    for episode in 0..episodes {
        // Each episode's reset is seeded, so the same arguments give the same returns.
        env.reset(Some(seed.wrapping_add(episode)));
        loop {
            let step = env.step(rng.random_range(0..actions))?;
            total += step.reward;
            if step.done() {
                break;
            }
        }
    }
    println!(
        "{name}: mean return {:.2} over {episodes} episodes of a uniformly random policy (seed {seed})",
        total / episodes as f64
    );
    Ok(())
}

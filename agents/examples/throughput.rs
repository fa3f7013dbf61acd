//! Throughput on CartPole-v1 with the default backend (ndarray): PPO end to end (Spinning Up's
//! (64, 64) tanh networks, 4000 steps per epoch, 80 + 80 update iterations) and DQN gradient
//! steps on batches of 128 ((128, 128) Q-network). `cargo xtask bench` reports the same.
//!
//! `cargo run --release -p privrl-agents --example throughput -- [ppo_epochs] [dqn_updates]`

use std::time::Instant;

use burn::backend::{Autodiff, NdArray};
use privrl_agents::{Agent, Dqn, DqnConfig, Ppo, PpoConfig};
use rand::SeedableRng;

type B = Autodiff<NdArray>;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let epochs: usize = args.get(1).map_or(Ok(5), |s| s.parse())?;
    let updates: usize = args.get(2).map_or(Ok(2000), |s| s.parse())?;
    let device = Default::default();

    let mut ppo = Ppo::<B>::new(
        PpoConfig::new(),
        privrl_envs::make("CartPole-v1")?,
        &device,
        0,
    )?;
    ppo.train_epoch()?;
    let before = ppo.episode_log().env_steps;
    let start = Instant::now();
    let mut pi_iters = 0.0;
    for _ in 0..epochs {
        let stats = ppo.train_epoch()?;
        pi_iters += stats
            .extra
            .iter()
            .find(|(k, _)| *k == "stop_iter")
            .map_or(0.0, |e| e.1);
    }
    let seconds = start.elapsed().as_secs_f64();
    println!(
        "PPO: {:.0} env steps/s end to end ({epochs} epochs of 4000 steps, {:.1} s/epoch, mean {:.0} policy iterations)",
        (ppo.episode_log().env_steps - before) as f64 / seconds,
        seconds / epochs as f64,
        pi_iters / epochs as f64
    );

    let config = DqnConfig::new().with_learning_starts(usize::MAX);
    let mut dqn = Dqn::<B>::new(config, privrl_envs::make("CartPole-v1")?, &device, 0)?;
    for _ in 0..2_000 {
        dqn.step()?;
    }
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(0);
    for _ in 0..20 {
        let batch = dqn.replay().sample(128, &mut rng);
        dqn.update(&batch)?;
    }
    let start = Instant::now();
    for _ in 0..updates {
        let batch = dqn.replay().sample(128, &mut rng);
        dqn.update(&batch)?;
    }
    println!(
        "DQN: {:.0} updates/s (batch 128, (128, 128) ReLU Q-network, sampling + targets + Adam)",
        updates as f64 / start.elapsed().as_secs_f64()
    );
    Ok(())
}

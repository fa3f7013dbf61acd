//! Trains one agent on CartPole-v1 and prints its progress: the library used directly, without
//! `cargo xtask`.
//!
//! `cargo run --release -p privrl-agents --example learn -- ppo 300000 0`
//! (algorithm `ppo|dqn|reinforce|a3c`, environment steps, seed).

use std::time::Instant;

use burn::backend::{Autodiff, NdArray};
use privrl_agents::{
    A3c, A3cConfig, Agent, Dqn, DqnConfig, Ppo, PpoConfig, Reinforce, ReinforceConfig,
};

type B = Autodiff<NdArray>;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let algorithm = args.get(1).map_or("ppo", String::as_str);
    let steps: u64 = args.get(2).map_or(Ok(300_000), |s| s.parse())?;
    let seed: u64 = args.get(3).map_or(Ok(0), |s| s.parse())?;
    let device = Default::default();
    let env = || privrl_envs::make("CartPole-v1");
    let mut agent: Box<dyn Agent> = match algorithm {
        "ppo" => Box::new(Ppo::<B>::new(PpoConfig::new(), env()?, &device, seed)?),
        "dqn" => Box::new(Dqn::<B>::new(DqnConfig::new(), env()?, &device, seed)?),
        "reinforce" => Box::new(Reinforce::<B>::new(
            ReinforceConfig::new(),
            env()?,
            &device,
            seed,
        )?),
        "a3c" => Box::new(A3c::<B>::for_env(
            A3cConfig::new(),
            "CartPole-v1",
            &device,
            seed,
        )?),
        other => {
            return Err(format!("unknown algorithm {other}; use ppo, dqn, reinforce or a3c").into())
        }
    };
    let start = Instant::now();
    let mut last_print = 0.0;
    while agent.episode_log().env_steps < steps {
        let stats = agent.train_epoch()?;
        let elapsed = start.elapsed().as_secs_f64();
        if elapsed - last_print > 2.0 {
            last_print = elapsed;
            println!(
                "{:>8} steps {:>6} episodes  mean return (100) {:>7.1}  {:.0} steps/s",
                stats.env_steps,
                stats.episodes,
                stats.mean_return_100,
                stats.env_steps as f64 / elapsed
            );
        }
        if let Some((episodes, at)) = agent.episode_log().first_solved(100, 475.0) {
            println!("solved: 100-episode mean ≥ 475 after {episodes} episodes, {at} steps ({elapsed:.1} s)");
            return Ok(());
        }
    }
    println!(
        "not solved within {steps} steps ({:.1} s)",
        start.elapsed().as_secs_f64()
    );
    Ok(())
}

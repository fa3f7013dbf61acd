//! PPO on CartPole, trained until solved (mean return ≥ 475 over the last 100 episodes, as
//! Gymnasium defines it) and evaluated greedily.

use burn::backend::{Autodiff, NdArray};
use privrl_agents::{ActMode, Agent, Ppo, PpoConfig};
use privrl_envs::{Env, Obs};

// docs: begin ppo (docs/first-hour.md)
/// Trains for at most `max_epochs` epochs of 4,000 steps (Spinning Up's), stopping once solved.
/// Returns the epochs run and the last mean return over 100 episodes.
pub fn train_ppo(
    seed: u64,
    max_epochs: usize,
) -> Result<(Ppo<Autodiff<NdArray>>, usize, f64), Box<dyn std::error::Error>> {
    let env = privrl_envs::make("CartPole-v1")?;
    let mut ppo = Ppo::<Autodiff<NdArray>>::new(PpoConfig::new(), env, &Default::default(), seed)?;
    let mut mean_return = 0.0;
    for epoch in 1..=max_epochs {
        let stats = ppo.train_epoch()?;
        mean_return = stats.mean_return_100;
        println!(
            "  epoch {epoch}: {} env steps, mean return (100 episodes) {mean_return:.1}",
            stats.env_steps
        );
        if mean_return >= 475.0 {
            return Ok((ppo, epoch, mean_return));
        }
    }
    Ok((ppo, max_epochs, mean_return))
}

/// Mean return of `episodes` greedy episodes on fresh environments seeded 10_000.., apart
/// from the training seeds.
pub fn evaluate(agent: &mut impl Agent, episodes: u64) -> Result<f64, Box<dyn std::error::Error>> {
    let mut total = 0.0;
    for episode in 0..episodes {
        let mut env = privrl_envs::make("CartPole-v1")?;
        let Obs::Vector(mut obs) = env.reset(Some(10_000 + episode)) else {
            return Err("CartPole observes a vector".into());
        };
        loop {
            let step = env.step(agent.act(&obs, ActMode::Greedy))?;
            total += step.reward;
            if step.terminated || step.truncated {
                break;
            }
            let Obs::Vector(next) = step.obs else {
                return Err("CartPole observes a vector".into());
            };
            obs = next;
        }
    }
    Ok(total / episodes as f64)
}
// docs: end ppo

//! The throughput measurements of `cargo xtask bench`: PPO environment steps per second and
//! DQN updates per second.

use std::time::Instant;

use anyhow::Result;
use burn::backend::Autodiff;
use burn::tensor::backend::Backend;
use privrl_agents::{Agent, DpPpo, Dqn, DqnConfig, Ppo, PpoConfig};
use rand::SeedableRng;
use serde::Serialize;

use crate::backend::{dispatch, BackendChoice, BackendTask};

/// PPO end-to-end throughput: environment steps per second of Spinning Up's PPO ((64, 64)
/// tanh, 4000 steps per epoch, 80 + 80 update iterations) on CartPole-v1, over `epochs`
/// epochs after one warm-up epoch.
pub struct PpoThroughput {
    /// Epochs to time.
    pub epochs: usize,
}

impl BackendTask for PpoThroughput {
    type Output = f64;

    fn run<B: Backend>(self, device: B::Device) -> Result<f64> {
        let mut ppo = Ppo::<Autodiff<B>>::new(
            PpoConfig::new(),
            privrl_envs::make("CartPole-v1")?,
            &device,
            0,
        )?;
        ppo.train_epoch()?;
        let steps_before = ppo.episode_log().env_steps;
        let start = Instant::now();
        for _ in 0..self.epochs {
            ppo.train_epoch()?;
        }
        Ok((ppo.episode_log().env_steps - steps_before) as f64 / start.elapsed().as_secs_f64())
    }
}

/// [`PpoThroughput`] on the chosen backend.
pub fn bench_ppo_steps_per_s(backend: BackendChoice, epochs: usize) -> Result<f64> {
    dispatch(backend, PpoThroughput { epochs })
}

/// DQN update throughput: gradient steps per second on batches of 128 transitions sampled from
/// a replay buffer, with the default (128, 128) Q-network on CartPole-v1 (sampling, target
/// computation, forward, backward and Adam step).
pub struct DqnThroughput {
    /// Updates to time (after 20 warm-up updates).
    pub updates: usize,
}

impl BackendTask for DqnThroughput {
    type Output = f64;

    fn run<B: Backend>(self, device: B::Device) -> Result<f64> {
        let config = DqnConfig::new()
            .with_batch_size(128)
            .with_learning_starts(usize::MAX);
        let mut dqn =
            Dqn::<Autodiff<B>>::new(config, privrl_envs::make("CartPole-v1")?, &device, 0)?;
        for _ in 0..2_000 {
            dqn.step()?;
        }
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(0);
        let mut time = |n: usize| -> Result<f64> {
            let start = Instant::now();
            for _ in 0..n {
                let batch = dqn.replay().sample(128, &mut rng);
                dqn.update(&batch)?;
            }
            Ok(start.elapsed().as_secs_f64())
        };
        time(20)?;
        Ok(self.updates as f64 / time(self.updates)?)
    }
}

/// [`DqnThroughput`] on the chosen backend.
pub fn bench_dqn_updates_per_s(backend: BackendChoice, updates: usize) -> Result<f64> {
    dispatch(backend, DqnThroughput { updates })
}

/// DP-PPO's step against a plain PPO step at the same batch
/// ([`DpPpo::time_private_and_plain_steps`]): the suite's configuration
/// ([`crate::suites::dp_ppo::suite_config`]: 2048 episodes per rollout, expected 512 per step)
/// at a target ε of 1, on CartPole-v1 with a fresh policy, after one warm-up step of each.
pub struct DpPpoStepTimes {
    /// Steps of each kind to time.
    pub steps: usize,
}

/// What [`DpPpoStepTimes`] measured.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct DpPpoStepCost {
    /// Episodes per rollout N.
    pub episodes_per_rollout: usize,
    /// Expected episodes per step qN.
    pub minibatch_episodes: usize,
    /// Seconds per DP-PPO step (sampling, per-episode gradients, clipping, noise, Adam).
    pub private_s: f64,
    /// Seconds per plain step (the drawn episodes' summed loss, one backward, Adam).
    pub plain_s: f64,
    /// private_s / plain_s (the goal: ≤ 1.15).
    pub ratio: f64,
}

impl BackendTask for DpPpoStepTimes {
    type Output = DpPpoStepCost;

    fn run<B: Backend>(self, device: B::Device) -> Result<DpPpoStepCost> {
        let config = crate::suites::dp_ppo::suite_config()
            .with_noise(privrl_agents::DpPpoNoise::TargetEpsilon(1.0));
        let (episodes_per_rollout, minibatch_episodes) =
            (config.episodes_per_rollout, config.minibatch_episodes);
        let mut agent = DpPpo::<Autodiff<B>>::for_env(config, "CartPole-v1", &device, 0)?;
        agent.time_private_and_plain_steps(1)?;
        let (private_s, plain_s) = agent.time_private_and_plain_steps(self.steps.max(1))?;
        Ok(DpPpoStepCost {
            episodes_per_rollout,
            minibatch_episodes,
            private_s,
            plain_s,
            ratio: private_s / plain_s,
        })
    }
}

/// [`DpPpoStepTimes`] on the chosen backend.
pub fn bench_dp_ppo_step_cost(backend: BackendChoice, steps: usize) -> Result<DpPpoStepCost> {
    dispatch(backend, DpPpoStepTimes { steps })
}

//! The throughput measurements of `cargo xtask bench`: PPO environment steps per second and
//! DQN updates per second.

use std::time::Instant;

use anyhow::Result;
use burn::backend::Autodiff;
use burn::tensor::backend::Backend;
use privrl_agents::{Agent, DpPpo, DpPpoBenchPhase, Dqn, DqnConfig, Ppo, PpoConfig};
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
/// ([`crate::suites::dp_ppo::suite_config`]: 1024 episodes per rollout, expected 256 per step)
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
    /// The process's peak resident memory (MiB) while the private steps ran, the collected
    /// rollout included, and whatever the allocator kept from the plain steps before them (so
    /// never below the plain figure's retained part: conservative for DP-PPO); `None` where
    /// Linux's `/proc/self` peak cannot be reset and read.
    pub private_peak_mib: Option<f64>,
    /// The same while the plain steps ran, on the same rollout.
    pub plain_peak_mib: Option<f64>,
}

/// The process's peak resident set (Linux's `VmHWM`), reset by writing 5 to
/// `/proc/self/clear_refs` (Linux ≥ 4.0): what a phase allocated at most, in MiB. `None`
/// elsewhere, or where the reset is refused.
mod peak_memory {
    /// Resets the high-water mark to the current resident set; false where it cannot.
    pub fn reset() -> bool {
        std::fs::write("/proc/self/clear_refs", "5").is_ok()
    }

    /// The high-water mark since the last reset, in MiB.
    pub fn read_mib() -> Option<f64> {
        let status = std::fs::read_to_string("/proc/self/status").ok()?;
        let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
        let kib: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
        Some(kib / 1024.0)
    }
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
        let (mut plain_peak_mib, mut private_peak_mib) = (None, None);
        let mut reset = false;
        let (private_s, plain_s) =
            agent.time_private_and_plain_steps_with(self.steps.max(1), |phase| {
                let peak = if reset { peak_memory::read_mib() } else { None };
                match phase {
                    DpPpoBenchPhase::Plain => {}
                    DpPpoBenchPhase::Private => plain_peak_mib = peak,
                    DpPpoBenchPhase::Done => private_peak_mib = peak,
                }
                reset = peak_memory::reset();
            })?;
        Ok(DpPpoStepCost {
            episodes_per_rollout,
            minibatch_episodes,
            private_s,
            plain_s,
            ratio: private_s / plain_s,
            private_peak_mib,
            plain_peak_mib,
        })
    }
}

/// [`DpPpoStepTimes`] on the chosen backend.
pub fn bench_dp_ppo_step_cost(backend: BackendChoice, steps: usize) -> Result<DpPpoStepCost> {
    dispatch(backend, DpPpoStepTimes { steps })
}

#[cfg(test)]
mod tests {
    use super::peak_memory;

    #[test]
    fn the_peak_memory_sees_a_phase_that_touches_64_mib() {
        if !peak_memory::reset() {
            eprintln!("skipped: /proc/self/clear_refs cannot be written here (not Linux?)");
            return;
        }
        let before = peak_memory::read_mib().expect("VmHWM after a reset");
        let block = vec![1u8; 64 << 20];
        std::hint::black_box(&block);
        let peak = peak_memory::read_mib().unwrap();
        drop(block);
        assert!(
            peak >= before + 60.0,
            "peak {peak} MiB, before {before} MiB"
        );
    }
}

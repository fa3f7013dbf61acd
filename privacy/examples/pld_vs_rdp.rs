//! How much tighter the PLD accountant is than the RDP one, on two runs (δ = 1e-5, add/remove
//! unless said, and substitution for comparison):
//!
//! (a) Opacus' MNIST example: σ = 1.1, q = 256/60000, 60 epochs of 60000/256 = 234 Poisson
//!     steps (Opacus' DPDataLoader length), 14,040 steps;
//! (b) the leakage suite's DP-SGD DQN at σ = 1 over 20k environment steps: the schedule of
//!     `PrivacyTally::dqn_schedule` with the DP-SGD suite's DQN (batch 128, learning starts at
//!     1000, a gradient step every 2nd environment step, a 10k replay buffer): q_t = 128/n_t with
//!     n_t = min(t, 10 000), each q rounded up to the tally's geometric grid of ratio 1.01 as the
//!     tally does (rounding up can only raise ε). Recomputed here because the privacy crate does
//!     not depend on the agents; `agents/tests` check the tally against its own formula.
//!
//! `cargo run --release -p privrl-privacy --example pld_vs_rdp`

use std::collections::BTreeMap;
use std::time::Instant;

use privrl_privacy::{Adjacency, PrivacyError, RdpAccountant, SubsampledGaussianSteps};
use privrl_privacy::{PldConfig, PrivacyLossDistribution};

const DELTA: f64 = 1e-5;

/// The DP-SGD DQN's gradient steps over `env_steps`, as (q on the 1.01 grid, count) blocks.
fn dqn_schedule(env_steps: u64, sigma: f64) -> Vec<SubsampledGaussianSteps> {
    let (batch, learning_starts, every, capacity) = (128.0, 1000u64, 2u64, 10_000u64);
    let mut counts: BTreeMap<u32, u64> = BTreeMap::new();
    for t in learning_starts.max(1)..=env_steps {
        if t % every == 0 {
            let n = t.min(capacity).max(1);
            let q = (batch / n as f64).min(1.0);
            let exponent = (-q.ln() / 1.01f64.ln()).floor().max(0.0) as u32;
            *counts.entry(exponent).or_insert(0) += 1;
        }
    }
    counts
        .into_iter()
        .map(|(k, steps)| SubsampledGaussianSteps {
            sample_rate: 1.01f64.powi(-(k as i32)).min(1.0),
            noise_multiplier: sigma,
            steps,
        })
        .collect()
}

fn compare(name: &str, schedule: &[SubsampledGaussianSteps]) -> Result<(), PrivacyError> {
    for adjacency in Adjacency::ALL {
        let mut rdp = RdpAccountant::new(DELTA)?.with_adjacency(adjacency)?;
        for b in schedule {
            rdp.step(b.sample_rate, b.noise_multiplier, b.steps)?;
        }
        let (rdp_eps, _) = rdp.epsilon(DELTA)?;
        for h in [1e-3, 1e-4] {
            let start = Instant::now();
            let pld = PrivacyLossDistribution::subsampled_gaussian(
                rdp.history(),
                adjacency,
                &PldConfig::default().with_interval(h),
            )?;
            let eps = pld.epsilon(DELTA)?;
            println!(
                "{name}, {}: RDP ε = {rdp_eps:.4}, PLD ε = {eps:.4} (h = {:e}, {:.1} s): \
                 PLD is {:.1}% lower",
                adjacency.name(),
                pld.discretization_interval(),
                start.elapsed().as_secs_f64(),
                100.0 * (1.0 - eps / rdp_eps)
            );
        }
    }
    Ok(())
}

fn main() -> Result<(), PrivacyError> {
    let mnist = [SubsampledGaussianSteps {
        sample_rate: 256.0 / 60_000.0,
        noise_multiplier: 1.1,
        steps: 60 * 234,
    }];
    compare("(a) MNIST, σ = 1.1, q = 256/60000, 14040 steps", &mnist)?;
    let dqn = dqn_schedule(20_000, 1.0);
    let steps: u64 = dqn.iter().map(|b| b.steps).sum();
    compare(
        &format!(
            "(b) DQN, σ = 1, 20k env steps ({steps} gradient steps, {} distinct q)",
            dqn.len()
        ),
        &dqn,
    )?;
    Ok(())
}

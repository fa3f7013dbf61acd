//! The same seeded agent computes the same numbers on every backend: its first updates on
//! wgpu (lavapipe on a CPU-only machine, a GPU where there is one) match burn-ndarray's to f32
//! rounding. Built only with the `wgpu` feature.
#![cfg(feature = "wgpu")]

use burn::backend::{Autodiff, NdArray};
use burn::tensor::backend::AutodiffBackend;
use privrl_agents::{Dqn, DqnConfig, WgpuBackend};

/// The TD losses of a seeded DQN's first `updates` updates, small enough for lavapipe: updates
/// start after 64 steps, and the target network is synced every 10, so that the targets move.
fn dqn_losses<B: AutodiffBackend>(device: &B::Device, updates: usize) -> Vec<f64> {
    let config = DqnConfig::new()
        .with_hidden(vec![32, 32])
        .with_batch_size(32)
        .with_learning_starts(64)
        .with_target_update_interval(10)
        .with_lr(1e-3);
    let env = privrl_envs::make("CartPole-v1").unwrap();
    let mut dqn = Dqn::<B>::new(config, env, device, 7).unwrap();
    let mut losses = Vec::new();
    while losses.len() < updates {
        match dqn.step() {
            Ok(Some((loss, _))) => losses.push(loss),
            Ok(None) => {}
            Err(e) => panic!("{} after {} updates: {e}", B::name(device), losses.len()),
        }
    }
    losses
}

/// Each update's section may run on another thread of the section pool than the last: under
/// Burn's fusion this gave a NaN TD loss within 2 to 14 updates (see `WgpuBackend`).
#[test]
fn dqn_updates_on_wgpu_match_ndarray() {
    let updates = 40;
    let cpu = dqn_losses::<Autodiff<NdArray>>(&Default::default(), updates);
    let gpu = dqn_losses::<Autodiff<WgpuBackend>>(&Default::default(), updates);
    for (k, (c, g)) in cpu.iter().zip(&gpu).enumerate() {
        assert!(
            (c - g).abs() <= 1e-3 * c.abs().max(1.0),
            "update {k}: ndarray loss {c}, wgpu loss {g}\nndarray {cpu:?}\nwgpu {gpu:?}"
        );
    }
}

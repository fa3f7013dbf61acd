//! Times PPO's rollout and update phases separately on CartPole-v1 (ndarray).
use std::time::Instant;

use burn::backend::{Autodiff, NdArray};
use privrl_agents::{Ppo, PpoConfig};

type B = Autodiff<NdArray>;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let device = Default::default();
    let mut ppo = Ppo::<B>::new(PpoConfig::new(), privrl_envs::make("CartPole-v1")?, &device, 0)?;
    for _ in 0..3 {
        let t = Instant::now();
        let batch = ppo.collect_rollout()?;
        let rollout = t.elapsed().as_secs_f64();
        let t = Instant::now();
        let stats = ppo.update(&batch)?;
        let update = t.elapsed().as_secs_f64();
        println!("rollout {:.3} s, update {:.3} s ({} pi iters + 80 v iters)", rollout, update, stats.stop_iter);
    }
    Ok(())
}

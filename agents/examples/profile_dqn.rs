//! Times DQN gradient steps (batch 128, (128, 128) Q-network) on CartPole-v1 (ndarray).
use std::time::Instant;

use burn::backend::{Autodiff, NdArray};
use privrl_agents::{Dqn, DqnConfig};
use rand::SeedableRng;

type B = Autodiff<NdArray>;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let device = Default::default();
    let config = DqnConfig::new().with_learning_starts(usize::MAX);
    let mut dqn = Dqn::<B>::new(config, privrl_envs::make("CartPole-v1")?, &device, 0)?;
    for _ in 0..2000 {
        dqn.step()?;
    }
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(0);
    for _ in 0..3 {
        let t = Instant::now();
        let n = 1000;
        for _ in 0..n {
            let batch = dqn.replay().sample(128, &mut rng);
            dqn.update(&batch)?;
        }
        println!("{:.0} updates/s", n as f64 / t.elapsed().as_secs_f64());
    }
    let t = Instant::now();
    let mut dqn = Dqn::<B>::new(DqnConfig::new(), privrl_envs::make("CartPole-v1")?, &device, 0)?;
    for _ in 0..5000 {
        dqn.step()?;
    }
    println!("end to end (learning from step 1000): {:.0} steps/s", 5000.0 / t.elapsed().as_secs_f64());
    Ok(())
}

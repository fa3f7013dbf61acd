//! Checkpoint round trips: an agent restored from a checkpoint acts exactly as the one that
//! saved it, greedily and stochastically (the generator is restored too).

use std::path::PathBuf;

use burn::backend::{Autodiff, NdArray};
use privrl_agents::{
    A3c, A3cConfig, ActMode, Agent, AgentError, Dqn, DqnConfig, Ppo, PpoConfig, Reinforce,
    ReinforceConfig,
};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

type B = Autodiff<NdArray>;

fn cartpole() -> Box<dyn privrl_envs::Env> {
    privrl_envs::make("CartPole-v1").unwrap()
}

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("privrl-agents-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

/// 200 CartPole-like observations.
fn observations() -> Vec<Vec<f32>> {
    let mut rng = ChaCha8Rng::seed_from_u64(11);
    (0..200)
        .map(|_| (0..4).map(|_| rng.random_range(-0.5f32..0.5)).collect())
        .collect()
}

fn actions(agent: &mut dyn Agent, mode: ActMode) -> Vec<usize> {
    observations()
        .iter()
        .map(|obs| agent.act(obs, mode))
        .collect()
}

/// Trains `original` briefly, saves it, loads the checkpoint into `fresh` (built from another
/// seed) and compares their actions.
fn round_trip(name: &str, original: &mut dyn Agent, fresh: &mut dyn Agent) {
    original.train_epoch().unwrap();
    let dir = temp_dir(name);
    original.save_checkpoint(&dir).unwrap();
    assert_ne!(
        actions(original, ActMode::Greedy),
        actions(fresh, ActMode::Greedy),
        "{name}: the fresh agent should act differently before loading"
    );
    fresh.load_checkpoint(&dir).unwrap();
    assert_eq!(
        actions(original, ActMode::Greedy),
        actions(fresh, ActMode::Greedy),
        "{name}: greedy"
    );
    assert_eq!(
        actions(original, ActMode::Stochastic),
        actions(fresh, ActMode::Stochastic),
        "{name}: stochastic (generator state)"
    );
    assert_eq!(
        original.episode_log(),
        fresh.episode_log(),
        "{name}: episode log"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn ppo_checkpoint_round_trip() {
    let device = Default::default();
    let config = || {
        PpoConfig::new()
            .with_steps_per_epoch(300)
            .with_train_pi_iters(5)
            .with_train_v_iters(5)
    };
    let mut a = Ppo::<B>::new(config(), cartpole(), &device, 1).unwrap();
    let mut b = Ppo::<B>::new(config(), cartpole(), &device, 2).unwrap();
    round_trip("ppo", &mut a, &mut b);
}

#[test]
fn dqn_checkpoint_round_trip() {
    let device = Default::default();
    let config = || {
        DqnConfig::new()
            .with_steps_per_epoch(300)
            .with_learning_starts(100)
            .with_hidden(vec![32])
    };
    let mut a = Dqn::<B>::new(config(), cartpole(), &device, 1).unwrap();
    let mut b = Dqn::<B>::new(config(), cartpole(), &device, 2).unwrap();
    round_trip("dqn", &mut a, &mut b);
}

#[test]
fn reinforce_checkpoint_round_trip() {
    let device = Default::default();
    let mut a = Reinforce::<B>::new(ReinforceConfig::new(), cartpole(), &device, 1).unwrap();
    let mut b = Reinforce::<B>::new(ReinforceConfig::new(), cartpole(), &device, 2).unwrap();
    round_trip("reinforce", &mut a, &mut b);
}

#[test]
fn a3c_checkpoint_round_trip() {
    let device = Default::default();
    let config = || {
        A3cConfig::new()
            .with_workers(1)
            .with_submissions_per_epoch(5)
            .with_exploration(privrl_agents::Exploration::Sample)
    };
    let mut a = A3c::<B>::for_env(config(), "CartPole-v1", &device, 1).unwrap();
    let mut b = A3c::<B>::for_env(config(), "CartPole-v1", &device, 2).unwrap();
    round_trip("a3c", &mut a, &mut b);
}

#[test]
fn loading_a_missing_checkpoint_is_an_error() {
    let device = Default::default();
    let mut agent = Ppo::<B>::new(PpoConfig::new(), cartpole(), &device, 1).unwrap();
    let err = agent.load_checkpoint(&temp_dir("missing")).unwrap_err();
    assert!(matches!(err, AgentError::Checkpoint { .. }), "{err}");
}

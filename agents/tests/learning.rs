//! Seeded short-learning checks: within a small budget, each algorithm's CartPole-v1 return
//! rises clearly above a random policy's (about 22). Learning curves belong in the suites
//! (`cargo xtask train`); these only catch an algorithm that does not learn at all.

use burn::backend::{Autodiff, NdArray};
use privrl_agents::{
    A3c, A3cConfig, ActMode, Agent, Dqn, DqnConfig, Exploration, OptimizerKind, Ppo, PpoConfig,
    Reinforce, ReinforceConfig,
};

type B = Autodiff<NdArray>;

/// Mean return of a random policy on CartPole-v1 is about 22; every test asks for 3× that.
const CLEARLY_ABOVE_RANDOM: f64 = 66.0;

fn cartpole() -> Box<dyn privrl_envs::Env> {
    privrl_envs::make("CartPole-v1").unwrap()
}

/// Mean return of `episodes` greedy evaluation episodes on a fresh environment.
fn greedy_return(agent: &mut dyn Agent, episodes: usize) -> f64 {
    let mut env = cartpole();
    let mut total = 0.0;
    for e in 0..episodes {
        let mut obs = env.reset(Some(1000 + e as u64)).to_flat();
        loop {
            let step = env.step(agent.act(&obs, ActMode::Greedy)).unwrap();
            total += step.reward;
            if step.done() {
                break;
            }
            obs = step.obs.to_flat();
        }
    }
    total / episodes as f64
}

fn recent_mean(agent: &dyn Agent, window: usize) -> f64 {
    agent.episode_log().mean_recent_return(window).unwrap()
}

#[test]
fn ppo_learns_cartpole_quickly() {
    let config = PpoConfig::new()
        .with_steps_per_epoch(1000)
        .with_hidden(vec![32])
        .with_pi_lr(3e-3)
        .with_vf_lr(3e-3)
        .with_train_pi_iters(20)
        .with_train_v_iters(20);
    let mut ppo = Ppo::<B>::new(config, cartpole(), &Default::default(), 0).unwrap();
    for _ in 0..10 {
        ppo.train_epoch().unwrap();
    }
    let greedy = greedy_return(&mut ppo, 5);
    let recent = recent_mean(&ppo, 10);
    eprintln!("PPO: greedy {greedy}, training {recent}");
    assert!(
        greedy > CLEARLY_ABOVE_RANDOM,
        "PPO greedy return {greedy} (training {recent})"
    );
}

#[test]
fn dqn_learns_cartpole_quickly() {
    let config = DqnConfig::new()
        .with_hidden(vec![64])
        .with_batch_size(64)
        .with_lr(1e-3)
        .with_learning_starts(500)
        .with_train_frequency(2)
        .with_target_update_interval(250)
        .with_epsilon_decay_steps(4000);
    let mut dqn = Dqn::<B>::new(config, cartpole(), &Default::default(), 0).unwrap();
    for _ in 0..8 {
        dqn.train_epoch().unwrap();
    }
    let greedy = greedy_return(&mut dqn, 5);
    eprintln!("DQN: greedy {greedy}");
    assert!(greedy > CLEARLY_ABOVE_RANDOM, "DQN greedy return {greedy}");
}

#[test]
fn reinforce_learns_cartpole_quickly() {
    let config = ReinforceConfig::new().with_entropy_coef(0.01);
    let mut agent = Reinforce::<B>::new(config, cartpole(), &Default::default(), 0).unwrap();
    // Burn's autodiff sums gradient contributions in an order that varies from run to run, so
    // the seed does not fix the run bit for bit: 150 episodes ended anywhere between a mean
    // return of 56 and 154; 300 leave a wide margin. The sampled training episodes can dip
    // while the policy itself has learned (one run: training 41.7, greedy 113.4), so either
    // the greedy policy or the recent training episodes must clearly beat random.
    for _ in 0..300 {
        agent.train_epoch().unwrap();
    }
    let recent = recent_mean(&agent, 20);
    let greedy = greedy_return(&mut agent, 5);
    eprintln!("REINFORCE: greedy {greedy}, training {recent}");
    assert!(
        recent.max(greedy) > CLEARLY_ABOVE_RANDOM,
        "REINFORCE training return {recent}, greedy {greedy}"
    );
}

#[test]
fn a3c_learns_cartpole_quickly() {
    // One worker, so the run is reproducible.
    let config = A3cConfig::new()
        .with_workers(1)
        .with_hidden(vec![32])
        .with_bias(true)
        .with_optimizer(OptimizerKind::Adam)
        .with_lr(3e-3)
        .with_exploration(Exploration::Sample)
        .with_submissions_per_epoch(50);
    let mut a3c = A3c::<B>::for_env(config, "CartPole-v1", &Default::default(), 0).unwrap();
    for _ in 0..10 {
        a3c.train_epoch().unwrap();
    }
    let greedy = greedy_return(&mut a3c, 5);
    let recent = recent_mean(&a3c, 20);
    eprintln!("A3C: greedy {greedy}, training {recent}");
    assert!(
        greedy > CLEARLY_ABOVE_RANDOM,
        "A3C greedy return {greedy} (training {recent})"
    );
}

#[test]
fn a3c_workers_share_one_set_of_parameters() {
    // Several threads, the PGC paper's configuration: every submission is counted once and the
    // global parameters move.
    let config = A3cConfig::new()
        .with_workers(3)
        .with_submissions_per_epoch(30);
    let mut a3c = A3c::<B>::for_env(config, "CartPole-v1", &Default::default(), 1).unwrap();
    let before = a3c.model().host_copies().0;
    let stats = a3c.train_epoch().unwrap();
    assert_eq!(stats.episodes, 30);
    assert_eq!(stats.updates, 30);
    assert_eq!(a3c.submissions(), 30);
    assert_ne!(a3c.model().host_copies().0, before);
    let steps: usize = a3c.episode_log().lengths.iter().sum();
    assert_eq!(steps as u64, stats.env_steps);
}

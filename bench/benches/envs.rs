//! Criterion benches of environment step throughput (steps per second), one per registered
//! environment, plus the allocating `step` path and a `VecEnv`.
//!
//! `cargo bench -p privrl-bench --bench envs`

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use privrl_envs::throughput::{run_random_steps, run_random_steps_allocating, RandomActions};
use privrl_envs::{make, registry, VecEnv};

/// Steps per measured iteration: long enough to include many resets.
const STEPS: u64 = 10_000;

fn env_step(c: &mut Criterion) {
    let mut group = c.benchmark_group("env_step_into");
    group.throughput(Throughput::Elements(STEPS));
    for spec in registry() {
        let mut env = make(spec.name).expect("registered");
        let mut obs = vec![0.0; env.observation_space().flat_dim()];
        env.reset_into(Some(0), &mut obs).expect("buffer fits");
        let mut actions = RandomActions::new(spec.action_space.discrete_n().unwrap_or(1), 0);
        group.bench_function(BenchmarkId::from_parameter(spec.name), |b| {
            b.iter(|| run_random_steps(env.as_mut(), &mut actions, &mut obs, STEPS))
        });
    }
    group.finish();

    let mut group = c.benchmark_group("env_step_allocating");
    group.throughput(Throughput::Elements(STEPS));
    for name in ["cartpole-v1", "acrobot-v1"] {
        let mut env = make(name).expect("registered");
        env.reset(Some(0));
        let mut actions = RandomActions::new(env.action_space().discrete_n().unwrap_or(1), 0);
        group.bench_function(BenchmarkId::from_parameter(name), |b| {
            b.iter(|| run_random_steps_allocating(env.as_mut(), &mut actions, STEPS))
        });
    }
    group.finish();
}

fn vec_env_step(c: &mut Criterion) {
    const NUM_ENVS: usize = 16;
    let mut group = c.benchmark_group("vec_env_step_flat");
    let calls = STEPS / NUM_ENVS as u64;
    group.throughput(Throughput::Elements(calls * NUM_ENVS as u64));
    let mut envs = VecEnv::make("cartpole-v1", NUM_ENVS).expect("registered");
    let mut buffer = envs.flat_step_buffer();
    envs.reset_flat(0, buffer.obs_mut()).expect("buffer fits");
    let mut sampler = RandomActions::new(2, 0);
    let mut actions = vec![0; NUM_ENVS];
    group.bench_function(BenchmarkId::new("cartpole-v1", NUM_ENVS), |b| {
        b.iter(|| {
            for _ in 0..calls {
                actions.iter_mut().for_each(|a| *a = sampler.sample());
                envs.step_flat(&actions, &mut buffer)
                    .expect("valid actions");
            }
        })
    });
    group.finish();
}

criterion_group!(benches, env_step, vec_env_step);
criterion_main!(benches);

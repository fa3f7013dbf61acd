//! Steps per second of Gymnasium environments through the Python bridge (privrl-envs' cargo
//! feature `gymnasium`) against the native CartPole, single-threaded, random actions, through
//! the allocation-free `step_into` path:
//!
//! - `native/cartpole-v1`: the pure-Rust port;
//! - `bridged/CartPole-v1`: Gymnasium's CartPole in a Python worker;
//! - `bridged/ALE/AirRaid-v5?obs_type=ram`: Atari AirRaid with RAM observations (ale-py),
//!   the kickstarting paper's environment;
//! - `bridged-vec/AirRaid xN`: a `VecEnv` of N bridged AirRaid workers, which it steps at once
//!   (every step sent before any reply is read): with N up to the number of cores, steps/s should grow about N-fold.
//!
//! `cargo bench -p privrl-bench --features gymnasium --bench gymnasium`
//!
//! Needs a Python with `gymnasium` and `ale-py` (`.venv/bin/python` at the workspace root, as
//! `scripts/test.sh` sets up, or `PRIVRL_PYTHON`); a bridged environment that cannot be made
//! is skipped with the reason.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use privrl_envs::throughput::{run_random_steps, RandomActions};
use privrl_envs::{make, Env, VecEnv};

/// Steps per measured iteration of the native environment.
const NATIVE_STEPS: u64 = 10_000;
/// Steps per measured iteration through the bridge (each is a round trip to Python).
const BRIDGED_STEPS: u64 = 1_000;

fn bench_env(c: &mut Criterion, group_name: &str, name: &str, steps: u64) {
    let mut env = match make(name) {
        Ok(env) => env,
        Err(error) => {
            eprintln!("skipping {name}: {error}");
            return;
        }
    };
    let mut obs = vec![0.0; env.observation_space().flat_dim()];
    env.reset_into(Some(0), &mut obs).expect("reset");
    let num_actions = env.action_space().discrete_n().unwrap_or(1);
    let mut actions = RandomActions::new(num_actions, 0);
    let mut group = c.benchmark_group(group_name);
    group.throughput(Throughput::Elements(steps));
    if steps < NATIVE_STEPS {
        group.sample_size(10);
    }
    let label = name.strip_prefix("gymnasium:").unwrap_or(name);
    group.bench_function(BenchmarkId::from_parameter(label), |b| {
        b.iter(|| run_random_steps(env.as_mut(), &mut actions, &mut obs, steps).expect("step"))
    });
    group.finish();
}

fn gymnasium_bridge(c: &mut Criterion) {
    bench_env(c, "native", "cartpole-v1", NATIVE_STEPS);
    bench_env(c, "bridged", "gymnasium:CartPole-v1", BRIDGED_STEPS);
    bench_env(
        c,
        "bridged",
        "gymnasium:ALE/AirRaid-v5?obs_type=ram",
        BRIDGED_STEPS,
    );
}

/// Steps of a bridged `VecEnv` (summed over its workers) per measured iteration.
const VEC_STEPS: u64 = 1_000;

fn bridged_vec_env(c: &mut Criterion) {
    let name = "gymnasium:ALE/AirRaid-v5?obs_type=ram";
    let mut group = c.benchmark_group("bridged-vec");
    group
        .sample_size(10)
        .throughput(Throughput::Elements(VEC_STEPS));
    for workers in [1usize, 2, 4] {
        let mut envs = match VecEnv::make(name, workers) {
            Ok(envs) => envs,
            Err(error) => {
                eprintln!("skipping {name} x{workers}: {error}");
                return;
            }
        };
        let mut buffer = envs.flat_step_buffer();
        envs.reset_flat(0, buffer.obs_mut()).expect("reset");
        let mut sampler = RandomActions::new(6, 0);
        let mut actions = vec![0; workers];
        let calls = VEC_STEPS / workers as u64;
        group.bench_function(BenchmarkId::new("AirRaid", format!("x{workers}")), |b| {
            b.iter(|| {
                for _ in 0..calls {
                    actions.iter_mut().for_each(|a| *a = sampler.sample());
                    envs.step_flat(&actions, &mut buffer).expect("step");
                }
            })
        });
    }
    group.finish();
}

criterion_group!(benches, gymnasium_bridge, bridged_vec_env);
criterion_main!(benches);

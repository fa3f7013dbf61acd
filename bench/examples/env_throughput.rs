//! Prints single-threaded environment throughput, as `cargo xtask bench` reports it.
//!
//! `cargo run --release -p privrl-bench --example env_throughput [steps]`

use privrl_envs::throughput::{
    env_steps_per_second_allocating, env_throughput_table, vec_env_steps_per_second,
};

fn main() {
    let steps = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(20_000_000);
    println!("{:<34} {:>14}", "environment (step_into)", "steps/s");
    for (name, rate) in env_throughput_table(steps) {
        println!("{name:<34} {rate:>14.0}");
    }
    for name in ["cartpole-v1", "acrobot-v1", "mountaincar-v0"] {
        if let Ok(rate) = env_steps_per_second_allocating(name, steps, 0) {
            println!("{:<34} {rate:>14.0}", format!("{name} (step, allocating)"));
        }
    }
    if let Ok(rate) = vec_env_steps_per_second("cartpole-v1", 16, steps, 0) {
        println!("{:<34} {rate:>14.0}", "cartpole-v1 VecEnv x16 (step_flat)");
    }
}

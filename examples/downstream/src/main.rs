//! privrl as a library, from a crate of one's own: the three things privrl's README offers.
//!
//! 1. DP-SGD on the user's own MLP with `PrivacyEngine`, seeded; run twice, the weights must
//!    be the same bytes (the process exits non-zero otherwise).
//! 2. QGI on a gradient the user's own loop computed for that MLP as a Q-network.
//! 3. PPO on CartPole: one epoch by default; `--full` (or `PRIVRL_EXAMPLE_FULL=1`) trains
//!    until solved and evaluates the greedy policy.
//!
//! `cargo run` from `examples/downstream/` (a dev build: its dependencies are optimised, see
//! `Cargo.toml`), or `cargo run --release`.

// `--features simd` (the check that the determinism guard fires) builds only what it runs.
#![cfg_attr(feature = "simd", allow(dead_code))]

mod dp;
mod my_mlp;
#[cfg(not(feature = "simd"))]
mod ppo;
#[cfg(not(feature = "simd"))]
mod qgi;

use std::process::ExitCode;
use std::time::Instant;

fn main() -> ExitCode {
    // docs: begin threads (README.md docs/first-hour.md)
    // matrixmultiply's own threads cost more than they give at privrl's sizes (PPO 1.5× faster
    // without them on 2 cores); it reads this variable once, before its first product.
    if std::env::var_os("MATMUL_NUM_THREADS").is_none() {
        std::env::set_var("MATMUL_NUM_THREADS", "1");
    }
    // docs: end threads
    #[cfg(feature = "simd")]
    let outcome = simd_is_refused();
    #[cfg(not(feature = "simd"))]
    let outcome = run(std::env::args().any(|a| a == "--full")
        || std::env::var("PRIVRL_EXAMPLE_FULL").is_ok_and(|v| v == "1"));
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(not(feature = "simd"))]
fn run(full: bool) -> Result<(), Box<dyn std::error::Error>> {
    let seed = 7;

    println!("1. DP-SGD on MyMlp with PrivacyEngine (seed {seed}), twice");
    let start = Instant::now();
    let first = dp::train_private(seed, 5)?;
    let second = dp::train_private(seed, 5)?;
    println!(
        "   σ = {:.4}, ε = {:.4} at δ = 1e-5; test MSE {:.4} → {:.4}; {:.1} s for both runs",
        first.noise_multiplier,
        first.epsilon,
        first.test_mse.0,
        first.test_mse.1,
        start.elapsed().as_secs_f64()
    );
    println!(
        "   weights: {} bytes, FNV-1a {:016x} and {:016x}",
        first.weights.len(),
        fnv1a(&first.weights),
        fnv1a(&second.weights)
    );
    if first.weights != second.weights {
        return Err(
            "the seeded DP-SGD run gave different weights twice: same seed, same bytes \
                    does not hold in this build (is burn-ndarray's `simd` feature on?)"
                .into(),
        );
    }
    println!("   same bytes twice");

    println!("2. QGI on MyMlp's shared TD-loss gradient");
    let start = Instant::now();
    let stolen = qgi::steal_a_transition(seed)?;
    let state_error = stolen
        .vector
        .iter()
        .zip(&qgi::STATE)
        .map(|(got, truth)| (got - truth).abs())
        .fold(0.0_f32, f32::max);
    println!(
        "   state {:?} (true {:?}, max error {state_error:.2e}), action {} (true {}), Q {:.4} (true {}); {:.1} s",
        stolen.vector,
        qgi::STATE,
        stolen.action,
        qgi::ACTION,
        stolen.signal,
        qgi::TARGET_Q,
        start.elapsed().as_secs_f64()
    );
    if stolen.action != qgi::ACTION || state_error > 1e-2 {
        return Err("QGI did not recover the transition".into());
    }

    let max_epochs = if full { 100 } else { 1 };
    println!(
        "3. PPO on CartPole-v1 ({})",
        if full {
            "until solved"
        } else {
            "one epoch; --full trains until solved"
        }
    );
    let start = Instant::now();
    let (mut agent, epochs, mean_return) = ppo::train_ppo(seed, max_epochs)?;
    let seconds = start.elapsed().as_secs_f64();
    if full {
        if mean_return < 475.0 {
            return Err(format!(
                "PPO not solved after {epochs} epochs (mean return {mean_return:.1})"
            )
            .into());
        }
        let greedy = ppo::evaluate(&mut agent, 10)?;
        println!("   solved in {epochs} epochs, {seconds:.1} s; greedy policy: mean return {greedy:.1} over 10 episodes");
    } else {
        println!("   {epochs} epoch in {seconds:.1} s");
    }
    Ok(())
}

/// With burn-ndarray's `simd` on (`--features simd`): privrl's probe must see the inexact
/// division, and the seeded DP-SGD run must be refused by name before its first step rather
/// than train weights that change from run to run.
#[cfg(feature = "simd")]
fn simd_is_refused() -> Result<(), Box<dyn std::error::Error>> {
    use privrl_agents::{check_exact_division, EngineError};
    type B = burn::backend::Autodiff<burn::backend::NdArray>;

    println!("burn-ndarray's simd feature on: the seeded DP-SGD run must be refused");
    match check_exact_division::<B>() {
        Err(EngineError::InexactDivision { x, got, exact }) => println!(
            "   probe: 1/{x} = {got:e} on burn-ndarray, {exact:e} exactly (relative error {:.1e})",
            ((got - exact) / exact).abs()
        ),
        other => return Err(format!("the probe passed a simd build: {other:?}").into()),
    }
    let start = Instant::now();
    match dp::train_private(7, 1) {
        Err(error)
            if matches!(
                error.downcast_ref::<EngineError>(),
                Some(EngineError::InexactDivision { .. })
            ) =>
        {
            println!(
                "   refused in {:.2} s: {error}",
                start.elapsed().as_secs_f64()
            );
            Ok(())
        }
        Err(error) => Err(format!("refused, but not by the determinism guard: {error}").into()),
        Ok(_) => Err("a seeded PrivacyEngine trained on a simd build".into()),
    }
}

#[cfg(not(feature = "simd"))]
/// FNV-1a, 64 bits: a short fingerprint of the weights for the log (the check compares the
/// bytes themselves).
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, &b| {
        (hash ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

//! Times the exact (floating-point-safe) local mechanisms against the textbook ones, per
//! release of a PGC-sized gradient, and the discrete Gaussian against the ziggurat normal per
//! coordinate, and DP-SGD's noise on a grid against the textbook Gaussian's at a DQN's size,
//! all from the secure source (ChaCha20 keyed from the operating system's CSPRNG).
//!
//! `cargo run --release -p privrl-privacy --example exact_noise_bench`

use std::hint::black_box;
use std::time::Instant;

use privrl_privacy::{
    Clipping, DiscreteGaussian, DiscreteGaussianTable, DpSgdConfig, GridGaussianSum, LaplaceConfig,
    Mechanism, MechanismRng, PrivacyError, PrsConfig, RandomnessSource,
};
use rand::{RngCore, SeedableRng};
use rand_chacha::ChaCha12Rng;
use rand_distr::{Distribution, StandardNormal};

/// Mean microseconds of `f` over `n` calls.
fn time(n: usize, mut f: impl FnMut()) -> f64 {
    let start = Instant::now();
    for _ in 0..n {
        f();
    }
    start.elapsed().as_secs_f64() * 1e6 / n as f64
}

fn main() -> Result<(), PrivacyError> {
    let mut rng = MechanismRng::new(RandomnessSource::Secure)?;
    // PGC: d = 112 parameters per submission; ε = 1 over T = 1000.
    let d = 112;
    let gradient: Vec<f32> = (0..d).map(|i| ((i % 7) as f32 - 3.0) * 1e-4).collect();
    let laplace = LaplaceConfig {
        epsilon: 1.0,
        clip: 0.01,
        rounds: 1000,
        dimension: d,
    }
    .build()?;
    let grid = laplace.on_grid(1000)?;
    let n = 200;
    let textbook = time(n, || {
        black_box(laplace.release(&gradient, &mut rng).unwrap());
    });
    let exact = time(n, || {
        black_box(grid.release(&gradient, &mut rng).unwrap());
    });
    println!(
        "Laplace, d = {d}: textbook {textbook:.0} µs, grid (exact) {exact:.0} µs per release ({:.2}×)",
        exact / textbook
    );
    let prs = PrsConfig {
        epsilon: 1.0,
        clip: 1.0,
        rounds: 1000,
        dimension: d,
        reduced_dimension: None,
        unbiased: false,
    }
    .build()?;
    let exact_prs = prs.exact();
    let textbook = time(n, || {
        black_box(prs.release(&gradient, &mut rng).unwrap());
    });
    let exact = time(n, || {
        black_box(exact_prs.release(&gradient, &mut rng).unwrap());
    });
    println!(
        "PRS, d = {d}: textbook {textbook:.0} µs, exact flips {exact:.0} µs per release ({:.2}×)",
        exact / textbook
    );
    // DP-SGD's release at the DP-SGD suite's DQN size ((128, 128) Q-network on CartPole,
    // d = 17,410), σ = 1: the textbook Gaussian's draws against the grid's exact ones (one
    // ChaCha12 stream keyed from the source per release), per coordinate.
    let d = 17_410;
    let textbook = DpSgdConfig {
        noise_multiplier: 1.0,
        clipping: Clipping::Flat { clip: 1.0 },
        dimension: d,
    }
    .build()?;
    let grid = GridGaussianSum::new(1.0, 1.0, d)?;
    let start = Instant::now();
    let beta = grid.noise_total_variation(); // builds the tables
    let build_ms = start.elapsed().as_secs_f64() * 1e3;
    // The exact sampler the grid drew from before the tables (the same ChaCha12 stream keyed
    // from the source per release).
    let exact_sampler = DiscreteGaussian::new(grid.grid_variance())?;
    let releases = 20;
    let normal = time(releases, || {
        black_box(textbook.draw_noise(&mut rng));
    }) / d as f64;
    let exact = time(releases, || {
        let mut key = [0u8; 32];
        rng.fill_bytes(&mut key);
        black_box(exact_sampler.sample_n(&mut ChaCha12Rng::from_seed(key), d));
    }) / d as f64;
    let table = time(releases * 10, || {
        black_box(grid.draw_noise(&mut rng));
    }) / d as f64;
    println!(
        "DP-SGD noise, d = {d}, σ = 1, s² = {}: textbook {normal:.4} µs, exact (CKS Alg. 3) \
         {exact:.4} µs ({:.1}×), tables {table:.4} µs ({:.2}×; {:.3} ms per release) per \
         coordinate; tables built in {build_ms:.0} ms, β = {beta:.2e} per coordinate",
        grid.grid_variance(),
        exact / normal,
        table / normal,
        table * d as f64 / 1e3
    );
    let coordinates = 100_000;
    for variance in [1_000_000u64, 100_000_000] {
        let discrete = DiscreteGaussian::new(variance)?;
        let normal = time(coordinates, || {
            let z: f64 = StandardNormal.sample(&mut rng);
            black_box(z);
        });
        let exact = time(coordinates, || {
            black_box(discrete.sample(&mut rng));
        });
        let tables = DiscreteGaussianTable::new(variance)?;
        let mut stream = ChaCha12Rng::from_seed([7; 32]);
        let table = time(coordinates * 10, || {
            black_box(tables.sample(&mut stream));
        });
        let word = time(coordinates * 10, || {
            black_box(stream.next_u64());
        });
        println!(
            "Gaussian per coordinate: ChaCha12 word alone {word:.4} µs, ziggurat {:.4} µs, discrete (σ² = {variance}) exact {:.4} µs \
             ({:.1}×), tables {:.4} µs ({:.2}×; on ChaCha12)",
            normal,
            exact,
            exact / normal,
            table,
            table / normal
        );
    }
    Ok(())
}

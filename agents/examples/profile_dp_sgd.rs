//! Where the time of a DP-SGD step goes, stage by stage, beside a plain step:
//! `cargo run --release -p privrl-agents --example profile_dp_sgd`. The end-to-end ratio with
//! Adam is `cargo xtask bench`'s.
use std::time::Instant;

use burn::backend::{Autodiff, NdArray};
use burn::module::Module;
use burn::tensor::{Distribution, Tensor};
use privrl_agents::dp::probed_forward;
use privrl_agents::dp::PerSampleFactors;
use privrl_agents::MlpConfig;
use privrl_privacy::{Clipping, DpSgdConfig};
use rand::SeedableRng;

type B = Autodiff<NdArray>;

/// Median milliseconds of the stages `f` marks by returning their end times (medians resist
/// the load of a shared machine).
fn profile<const N: usize>(steps: usize, mut f: impl FnMut(Instant) -> [Instant; N]) -> [f64; N] {
    let mut samples = vec![Vec::with_capacity(steps); N];
    for i in 0..steps + 5 {
        let start = Instant::now();
        let marks = f(start);
        if i >= 5 {
            let mut last = start;
            for (s, m) in samples.iter_mut().zip(marks) {
                s.push((m - last).as_secs_f64() * 1e3);
                last = m;
            }
        }
    }
    let mut out = [0.0; N];
    for (o, mut s) in out.iter_mut().zip(samples) {
        s.sort_by(f64::total_cmp);
        *o = s[s.len() / 2];
    }
    out
}

fn main() {
    let device = Default::default();
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(0);
    let mlp = MlpConfig::new(64, vec![128, 128], 8).init::<B>(&device, &mut rng);
    let x = Tensor::<B, 2>::random([128, 64], Distribution::Normal(0.0, 1.0), &device);
    let steps = 300;
    let [fwd, bwd, params] = profile(steps, |_| {
        let out = mlp.forward(x.clone()).powi_scalar(2).sum();
        let a = Instant::now();
        let grads = out.backward();
        let b = Instant::now();
        let _ = burn::optim::GradientsParams::from_grads(grads, &mlp);
        [a, b, Instant::now()]
    });
    println!("plain: forward {fwd:.3} ms, backward {bwd:.3} ms, to params {params:.3} ms");
    let dp = DpSgdConfig {
        noise_multiplier: 1.0,
        clipping: Clipping::Flat { clip: 1.0 },
        dimension: mlp.num_params(),
    }
    .build()
    .unwrap();
    let [fwd, bwd, factors, sum, noise, params] = profile(steps, |_| {
        let forward = probed_forward(&mlp, x.clone());
        let out = forward.output.clone().powi_scalar(2).sum();
        let a = Instant::now();
        let grads = out.backward();
        let b = Instant::now();
        let factors = PerSampleFactors::from_backward(&mlp, &forward, &grads);
        let c = Instant::now();
        let mut record = factors.clipped_sum(dp.clipping()).unwrap();
        let d = Instant::now();
        let noisy = dp
            .noisy_mean_of_clipped_sum(record.flatten(), 128.0, &mut rng)
            .unwrap();
        record.set_flat(&noisy).unwrap();
        let e = Instant::now();
        let _ = record.to_gradients_params(&mlp).unwrap();
        [a, b, c, d, e, Instant::now()]
    });
    println!(
        "dp-sgd: probed forward {fwd:.3} ms, backward {bwd:.3} ms, factors {factors:.3} ms, \
         clipped sum {sum:.3} ms, noise {noise:.3} ms, to params {params:.3} ms"
    );
}

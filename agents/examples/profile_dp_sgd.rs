//! Where the time of a DP-SGD step goes: `cargo run --release -p privrl-agents --example profile_dp_sgd`.
use std::time::Instant;

use burn::backend::{Autodiff, NdArray};
use burn::tensor::{Distribution, Tensor};
use privrl_agents::per_sample::probed_forward;
use privrl_agents::{MlpConfig, PerSampleFactors};
use privrl_privacy::Clipping;
use rand::SeedableRng;

type B = Autodiff<NdArray>;

fn main() {
    let device = Default::default();
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(0);
    let mlp = MlpConfig::new(64, vec![128, 128], 8).init::<B>(&device, &mut rng);
    let x = Tensor::<B, 2>::random([128, 64], Distribution::Normal(0.0, 1.0), &device);
    let n = 200;
    let mut t = [0.0f64; 4];
    for i in 0..n + 5 {
        let s = Instant::now();
        let fwd = probed_forward(&mlp, x.clone());
        let grads = fwd.output.clone().powi_scalar(2).sum().backward();
        let a = s.elapsed().as_secs_f64();
        let factors = PerSampleFactors::from_backward(&mlp, &fwd, &grads);
        let norms = factors.norms();
        let _ = norms.into_data();
        let b = s.elapsed().as_secs_f64();
        let record = factors.clipped_sum(&Clipping::Flat { clip: 1.0 }).unwrap();
        let c = s.elapsed().as_secs_f64();
        let _ = record.to_gradients_params(&mlp).unwrap();
        let d = s.elapsed().as_secs_f64();
        let plain = mlp.forward(x.clone()).powi_scalar(2).sum().backward();
        let _ = burn::optim::GradientsParams::from_grads(plain, &mlp);
        let e = s.elapsed().as_secs_f64();
        if i >= 5 {
            t[0] += a;
            t[1] += b - a;
            t[2] += c - b;
            t[3] += d - c;
            t[3] += 0.0;
            let _ = e - d;
        }
        if i == n + 4 {
            println!("plain fwd+bwd+params: {:.3} ms", (e - d) * 1e3);
        }
    }
    let ms = |v: f64| v * 1e3 / n as f64;
    println!(
        "probed fwd+bwd {:.3} ms, norms {:.3} ms, clipped sum {:.3} ms, to params {:.3} ms",
        ms(t[0]),
        ms(t[1]),
        ms(t[2]),
        ms(t[3])
    );
}

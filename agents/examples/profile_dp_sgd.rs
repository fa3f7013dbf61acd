//! Where the time of a DP-SGD step goes: `cargo run --release -p privrl-agents --example profile_dp_sgd`.
use std::time::Instant;

use burn::backend::{Autodiff, NdArray};
use burn::module::Module;
use burn::tensor::{Distribution, Tensor};
use privrl_agents::per_sample::probed_forward;
use privrl_agents::{MlpConfig, PerSampleFactors};
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
    micro();
    micro_noise();
    full_steps();
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
        let record = factors.clipped_sum(&Clipping::Flat { clip: 1.0 }).unwrap();
        let d = Instant::now();
        let noisy = dp
            .noisy_mean_of_clipped_sum(record.flatten(), 128.0, &mut rng)
            .unwrap();
        let mut record = record;
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

#[allow(dead_code)]
fn micro() {
    type I = NdArray;
    let device = Default::default();
    let a = Tensor::<I, 2>::random([128, 128], Distribution::Normal(0.0, 1.0), &device);
    let d = Tensor::<I, 2>::random([128, 128], Distribution::Normal(0.0, 1.0), &device);
    let c = Tensor::<I, 1>::random([128], Distribution::Normal(0.0, 1.0), &device);
    let steps = 1000;
    let [t_mm, t_tmm, t_scale, t_sq, t_host, t_sum0] = profile(steps, |_| {
        let _ = a.clone().matmul(d.clone());
        let t0 = Instant::now();
        let _ = a.clone().transpose().matmul(d.clone());
        let t1 = Instant::now();
        let w = d.clone() * c.clone().unsqueeze_dim::<2>(1);
        let t2 = Instant::now();
        let _ = (a.clone() * a.clone()).sum_dim(1);
        let t3 = Instant::now();
        let _ = w.clone().into_data().into_vec::<f32>();
        let t4 = Instant::now();
        let _ = a
            .clone()
            .transpose()
            .matmul(d.clone())
            .into_data()
            .into_vec::<f32>();
        [t0, t1, t2, t3, t4, Instant::now()]
    });
    println!("micro 128: matmul {t_mm:.3}, transposed matmul {t_tmm:.3}, scale rows {t_scale:.3}, row sq norms {t_sq:.3}, host of scaled {t_host:.3}, transposed matmul + host {t_sum0:.3} ms");
}

#[allow(dead_code)]
fn micro_noise() {
    use privrl_privacy::randomness::standard_normal;
    use rand::Rng;
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(0);
    let mut v = vec![0.0f32; 25_864];
    let steps = 1000;
    let [t_u64, t_f64, t_f32] = profile(steps, |_| {
        let mut acc = 0u64;
        for _ in 0..v.len() {
            acc = acc.wrapping_add(rng.random::<u64>());
        }
        std::hint::black_box(acc);
        let a = Instant::now();
        for x in v.iter_mut() {
            let n: f64 = standard_normal(&mut rng);
            *x += n as f32;
        }
        let b = Instant::now();
        for x in v.iter_mut() {
            let n = standard_normal(&mut rng) as f32;
            *x += n;
        }
        [a, b, Instant::now()]
    });
    let dp = DpSgdConfig {
        noise_multiplier: 1.0,
        clipping: Clipping::Flat { clip: 1.0 },
        dimension: v.len(),
    }
    .build()
    .unwrap();
    let [t_noisy] = profile(steps, |_| {
        let out = dp
            .noisy_mean_of_clipped_sum(v.clone(), 128.0, &mut rng)
            .unwrap();
        std::hint::black_box(out);
        [Instant::now()]
    });
    println!("noisy_mean_of_clipped_sum {t_noisy:.3} ms");
    println!("noise: u64s {t_u64:.3} ms, f64 normals {t_f64:.3} ms, f32 normals {t_f32:.3} ms");
}

fn full_steps() {
    use burn::optim::{AdamConfig, GradientsParams, Optimizer};
    use privrl_agents::{dp_sgd_gradient, Mlp};
    let device = Default::default();
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(0);
    let mut mlp = MlpConfig::new(64, vec![128, 128], 8).init::<B>(&device, &mut rng);
    let x = Tensor::<B, 2>::random([128, 64], Distribution::Normal(0.0, 1.0), &device);
    let dp = DpSgdConfig {
        noise_multiplier: 1.0,
        clipping: Clipping::Flat { clip: 1.0 },
        dimension: mlp.num_params(),
    }
    .build()
    .unwrap();
    let loss_of = |out: Tensor<B, 2>| out.powi_scalar(2).sum_dim(1).squeeze_dim::<1>(1);
    let mut optimizer = AdamConfig::new().init::<B, Mlp<B>>();
    let steps = 500;
    let [plain_grad, plain_adam] = profile(steps, |_| {
        let grads = loss_of(mlp.forward(x.clone())).sum().backward();
        let grads = GradientsParams::from_grads(grads, &mlp);
        let a = Instant::now();
        mlp = optimizer.step(1e-3, mlp.clone(), grads);
        [a, Instant::now()]
    });
    let [dp_grad, dp_params, dp_adam] = profile(steps, |_| {
        let record = dp_sgd_gradient(&mlp, x.clone(), loss_of, &dp, 128.0, &mut rng).unwrap();
        let a = Instant::now();
        let grads = record.to_gradients_params(&mlp).unwrap();
        let b = Instant::now();
        mlp = optimizer.step(1e-3, mlp.clone(), grads);
        [a, b, Instant::now()]
    });
    let plain = plain_grad + plain_adam;
    let dp = dp_grad + dp_params + dp_adam;
    println!(
        "full: plain grad {plain_grad:.3} + adam {plain_adam:.3} = {plain:.3} ms; dp grad {dp_grad:.3} + params {dp_params:.3} + adam {dp_adam:.3} = {dp:.3} ms; ratio {:.3}",
        dp / plain
    );
}

use std::time::Instant;

use burn::backend::NdArray;
use burn::tensor::{Distribution, Tensor};

type B = NdArray;

fn time<F: Fn() -> Tensor<B, 2>>(name: &str, f: F) {
    let _ = f();
    let t = Instant::now();
    for _ in 0..20 {
        let y = f();
        std::hint::black_box(y);
    }
    println!("{name:>12}: {:.3} ms", t.elapsed().as_secs_f64() / 20.0 * 1e3);
}

fn main() {
    let device = Default::default();
    let x = Tensor::<B, 2>::random([4000, 64], Distribution::Normal(0.0, 2.0), &device);
    let y = Tensor::<B, 2>::random([4000, 64], Distribution::Normal(0.0, 2.0), &device);
    let w = Tensor::<B, 2>::random([64, 64], Distribution::Normal(0.0, 2.0), &device);
    time("add_scalar", || x.clone() + 1.0);
    time("add", || x.clone() + y.clone());
    time("mul", || x.clone() * y.clone());
    time("exp", || x.clone().exp());
    time("tanh", || x.clone().tanh());
    time("matmul", || x.clone().matmul(w.clone()));
    time("powi2", || x.clone().powi_scalar(2));
    time("clone+add_sc", || { let z = x.clone() * 1.0; z + 1.0 });
}

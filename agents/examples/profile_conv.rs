//! Burn's fused `conv2d` against [`conv2d_im2col`] on the victims' first convolution shape, for
//! the ops the attacks run: forward + backward, and the double backward of a gradient-matching
//! loss (`cargo run --release -p privrl-agents --example profile_conv -- [size]`).
use std::time::Instant;

use burn::backend::{Autodiff, NdArray};
use burn::tensor::backend::Backend;
use burn::tensor::module::conv2d;
use burn::tensor::ops::ConvOptions;
use burn::tensor::{Distribution, Tensor};
use privrl_agents::conv2d_im2col;

type Inner = Autodiff<NdArray>;
type Outer = Autodiff<Inner>;

/// Median milliseconds of `f` over `runs` calls after two warm-ups.
fn median_ms(runs: usize, mut f: impl FnMut()) -> f64 {
    let mut times: Vec<f64> = (0..runs + 2)
        .map(|_| {
            let start = Instant::now();
            f();
            start.elapsed().as_secs_f64() * 1e3
        })
        .skip(2)
        .collect();
    times.sort_by(f64::total_cmp);
    times[times.len() / 2]
}

fn fused<B: Backend>(x: Tensor<B, 4>, w: Tensor<B, 4>, b: Tensor<B, 1>) -> Tensor<B, 4> {
    conv2d(x, w, Some(b), ConvOptions::new([2, 2], [1, 1], [1, 1], 1))
}

fn im2col<B: Backend>(x: Tensor<B, 4>, w: Tensor<B, 4>, b: Tensor<B, 1>) -> Tensor<B, 4> {
    conv2d_im2col(x, w, b, 2, 1)
}

type Conv<B> = fn(Tensor<B, 4>, Tensor<B, 4>, Tensor<B, 1>) -> Tensor<B, 4>;

fn main() {
    let size: usize = std::env::args()
        .nth(1)
        .map_or(150, |s| s.parse().expect("size"));
    let device = Default::default();
    let x = Tensor::<NdArray, 4>::random([1, 3, size, size], Distribution::Default, &device);
    let w = Tensor::<NdArray, 4>::random([8, 3, 3, 3], Distribution::Normal(0.0, 0.2), &device);
    let b = Tensor::<NdArray, 1>::random([8], Distribution::Normal(0.0, 0.2), &device);
    let diff = (fused(x.clone(), w.clone(), b.clone()) - im2col(x.clone(), w.clone(), b.clone()))
        .abs()
        .max()
        .into_scalar();
    println!("{size}x{size}, 3 -> 8 channels, kernel 3, stride 2: max |fused - im2col| = {diff:e}");
    let impls: [(&str, Conv<Inner>, Conv<Outer>); 2] =
        [("fused conv2d", fused, fused), ("im2col", im2col, im2col)];
    for (name, first, second) in impls {
        let forward_backward = median_ms(20, || {
            let w = Tensor::<Inner, 4>::from_inner(w.clone()).require_grad();
            let x = Tensor::<Inner, 4>::from_inner(x.clone()).require_grad();
            let out = first(x, w.clone(), Tensor::from_inner(b.clone()));
            let _ = out.powi_scalar(2).sum().backward();
        });
        let double_backward = median_ms(10, || {
            let x_inner = Tensor::<Inner, 4>::from_inner(x.clone()).require_grad();
            let w = Tensor::<Outer, 4>::from_inner(Tensor::from_inner(w.clone())).require_grad();
            let out = second(
                Tensor::from_inner(x_inner.clone()),
                w.clone(),
                Tensor::from_inner(Tensor::from_inner(b.clone())),
            );
            let grads = out.powi_scalar(2).sum().backward();
            let g = w.grad(&grads).expect("weight gradient");
            let _ = g.powi_scalar(2).sum().backward();
        });
        println!(
            "{name:>13}: forward+backward {forward_backward:.2} ms, \
             gradient-matching double backward {double_backward:.2} ms"
        );
    }
}

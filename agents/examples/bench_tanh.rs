use std::time::Instant;

use burn::backend::{Autodiff, NdArray};
use burn::tensor::{Distribution, Tensor};

type B = Autodiff<NdArray>;

fn main() {
    let device = Default::default();
    let x0 = Tensor::<B, 2>::random([4000, 64], Distribution::Normal(0.0, 2.0), &device);
    let variants: Vec<(&str, fn(Tensor<B, 2>) -> Tensor<B, 2>)> = vec![
        ("tanh", |x| x.tanh()),
        ("exp", |x| {
            let e = (x.clamp(-15.0, 15.0) * 2.0).exp();
            (e + 1.0).recip() * (-2.0) + 1.0
        }),
        ("fast_tanh", |x| privrl_agents::nn::fast_tanh(x)),
        ("sigmoid", |x| burn::tensor::activation::sigmoid(x * 2.0) * 2.0 - 1.0),
        ("exp_neg_abs", |x| {
            // tanh(x) = sign(x) (1 − e^{−2|x|}) / (1 + e^{−2|x|})
            let e = (x.clone().abs() * -2.0).exp();
            x.sign() * (-e.clone() + 1.0) / (e + 1.0)
        }),
        ("rational", |x| {
            // Eigen's generic_fast_tanh_float: x·P(x²)/Q(x²) on [−7.905, 7.905].
            let x = x.clamp(-7.905_311, 7.905_311);
            let x2 = x.clone() * x.clone();
            let p = ((((((x2.clone() * -2.760_768_5e-16 + 2.000_187_9e-13) * x2.clone() - 8.604_671_5e-11)
                * x2.clone()
                + 5.122_297e-8)
                * x2.clone()
                + 1.485_722_4e-5)
                * x2.clone()
                + 6.372_619_3e-4)
                * x2.clone()
                + 4.893_524_6e-3)
                * x;
            let q = ((x2.clone() * 1.198_258_4e-6 + 1.185_347_1e-4) * x2.clone() + 2.268_434_6e-3) * x2 + 4.893_525e-3;
            p / q
        }),
    ];
    for (name, f) in variants {
        let mut total = 0.0;
        for i in 0..12 {
            let x = x0.clone().require_grad();
            let t = Instant::now();
            let y = f(x.clone());
            let g = y.sum().backward();
            let _ = x.grad(&g).unwrap().sum().into_scalar();
            if i >= 2 {
                total += t.elapsed().as_secs_f64();
            }
        }
        let x = x0.clone();
        let err = (f(x.clone()) - x.tanh()).abs().max().into_scalar();
        println!("{name:>12}: {:.2} ms per fwd+bwd, max error {err:e}", total / 10.0 * 1e3);
    }
}

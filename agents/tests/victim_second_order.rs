//! The multimodal victim is twice differentiable: the gradient of a weight gradient with
//! respect to every input (RGB, depth, vector) matches central finite differences, through
//! the convolutions, the concatenation and the Dense layers, for the QGI loss (MSE on one
//! Q-value) and the RGI loss (REINFORCE with entropy).

use burn::backend::Autodiff;
use burn::tensor::{Tensor, TensorData};
use privrl_agents::losses::reinforce_loss;
use privrl_agents::losses::td_loss;
use privrl_agents::{ConvEncoderConfig, MultimodalNet, MultimodalNetConfig};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

type Base = burn::backend::NdArray<f64>;
type Inner = Autodiff<Base>;
type Outer = Autodiff<Autodiff<Base>>;

const RGB: usize = 3 * 5 * 5;
const DEPTH: usize = 5 * 5;
const VECTOR: usize = 3;
const LEN: usize = RGB + DEPTH + VECTOR;

#[derive(Clone, Copy, Debug)]
enum Loss {
    /// QGI: (Q(s, a) − y)² for one transition.
    QValueMse,
    /// RGI: −[log π(a|s) R + α H(π(·|s))] for one step.
    ReinforceWithEntropy,
}

fn victim() -> MultimodalNet<Outer> {
    MultimodalNetConfig::new(VECTOR, 3)
        .with_rgb(Some(ConvEncoderConfig::new(3, 5).with_channels(vec![2])))
        .with_depth(Some(ConvEncoderConfig::new(1, 5).with_channels(vec![2])))
        .with_vector_hidden(vec![4])
        .with_head_hidden(vec![5])
        .with_activation(privrl_agents::Activation::Tanh)
        .init(&Default::default(), &mut ChaCha8Rng::seed_from_u64(3))
}

fn tensor<B: burn::tensor::backend::Backend, const D: usize>(
    values: Vec<f64>,
    shape: [usize; D],
) -> Tensor<B, D> {
    Tensor::from_data(TensorData::new(values, shape), &Default::default())
}

/// m(x) = ‖g(x) − g*‖², where g is the flat weight gradient of the loss at input x, and
/// optionally ∂m/∂x.
fn matching_loss(
    loss: Loss,
    x: &[f64],
    target: &[f64],
    with_gradient: bool,
) -> (f64, Option<Vec<f64>>) {
    let mut x_inner = tensor::<Inner, 1>(x.to_vec(), [LEN]);
    if with_gradient {
        x_inner = x_inner.require_grad();
    }
    let x_outer = Tensor::<Outer, 1>::from_inner(x_inner.clone());
    let net = victim();
    let rgb = x_outer.clone().narrow(0, 0, RGB).reshape([1, 3, 5, 5]);
    let depth = x_outer.clone().narrow(0, RGB, DEPTH).reshape([1, 1, 5, 5]);
    let vector = x_outer.narrow(0, RGB + DEPTH, VECTOR).reshape([1, VECTOR]);
    let out = net.forward(Some(rgb), Some(depth), vector);
    let action = tensor::<Outer, 2>(vec![0.0, 1.0, 0.0], [1, 3]);
    let value = match loss {
        Loss::QValueMse => td_loss(out, action, tensor(vec![0.7], [1])),
        Loss::ReinforceWithEntropy => reinforce_loss(out, action, tensor(vec![1.3], [1]), 0.2),
    };
    let grads = value.backward();
    let g: Vec<Tensor<Inner, 1>> = privrl_agents::param_gradients(&net, &grads)
        .into_iter()
        .map(|p| p.gradient)
        .collect();
    let g = Tensor::cat(g, 0);
    assert_eq!(g.dims()[0], target.len());
    let m = (g - tensor::<Inner, 1>(target.to_vec(), [target.len()]))
        .powi_scalar(2)
        .sum();
    let value = m.clone().into_data().to_vec::<f64>().unwrap()[0];
    let gradient = with_gradient.then(|| {
        let grads = m.backward();
        x_inner
            .grad(&grads)
            .expect("no second-order gradient")
            .into_data()
            .to_vec::<f64>()
            .unwrap()
    });
    (value, gradient)
}

#[test]
fn multimodal_victim_second_order_gradients_match_finite_differences() {
    privrl_agents::autodiff::exclusive(|| {
        let params = burn::module::Module::num_params(&victim());
        let mut rng = ChaCha8Rng::seed_from_u64(5);
        let x: Vec<f64> = (0..LEN).map(|_| rng.random_range(-1.0..1.0)).collect();
        let target: Vec<f64> = (0..params).map(|_| rng.random_range(-0.3..0.3)).collect();
        for loss in [Loss::QValueMse, Loss::ReinforceWithEntropy] {
            let (_, analytic) = matching_loss(loss, &x, &target, true);
            let analytic = analytic.unwrap();
            let scale = analytic.iter().fold(0.0f64, |m, v| m.max(v.abs()));
            assert!(scale > 1e-6, "{loss:?}: vanished");
            let h = 1e-5;
            // Every vector entry, and a spread of image pixels.
            for i in (0..LEN).filter(|i| i % 7 == 0 || *i >= RGB + DEPTH) {
                let mut plus = x.clone();
                plus[i] += h;
                let mut minus = x.clone();
                minus[i] -= h;
                let numeric = (matching_loss(loss, &plus, &target, false).0
                    - matching_loss(loss, &minus, &target, false).0)
                    / (2.0 * h);
                let error = (numeric - analytic[i]).abs() / scale;
                assert!(
                    error < 1e-6,
                    "{loss:?}: ∂m/∂x[{i}] {} vs {numeric} ({error:.1e})",
                    analytic[i]
                );
            }
        }
    });
}

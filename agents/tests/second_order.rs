//! Second-order gradients through the shared networks, checked against finite differences.
//!
//! The attacks differentiate a weight gradient with respect to the input. Here, for each layer
//! type the victims use, we compute on `Autodiff<Autodiff<B>>`:
//!   g(x) = ∂L(f_θ(x))/∂θ (outer autodiff, returned as inner-tracked tensors),
//!   m(x) = ‖g(x) − g*‖² (a gradient-matching loss, as in DLG),
//!   ∂m/∂x (inner autodiff),
//! and compare ∂m/∂x with central finite differences of m.

use burn::backend::Autodiff;
use burn::module::Module;
use burn::tensor::activation::{log_softmax, softmax};
use burn::tensor::backend::Backend;
use burn::tensor::{Tensor, TensorData};
use privrl_agents::{
    param_gradients, Activation, ConvEncoder, ConvEncoderConfig, Dense, DenseConfig, Mlp, MlpConfig,
};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

type Inner<B> = Autodiff<B>;
type Outer<B> = Autodiff<Autodiff<B>>;

const BATCH: usize = 2;
const CLASSES: usize = 3;

/// The victims whose double backward is checked.
#[derive(Clone, Copy, Debug)]
enum Victim {
    /// Dense + tanh, trained with cross-entropy through log_softmax.
    MlpTanhCrossEntropy,
    /// Dense + ReLU, trained with a squared error on softmax probabilities.
    MlpReluSoftmaxSquaredError,
    /// Strided conv2d + ReLU encoder, dense head, cross-entropy.
    ConvReluCrossEntropy,
}

#[derive(Module, Debug)]
struct ConvVictim<B: Backend> {
    encoder: ConvEncoder<B>,
    head: Dense<B>,
}

impl Victim {
    fn input_shape(self) -> Vec<usize> {
        match self {
            Victim::MlpTanhCrossEntropy | Victim::MlpReluSoftmaxSquaredError => vec![BATCH, 4],
            Victim::ConvReluCrossEntropy => vec![BATCH, 2, 7, 7],
        }
    }

    /// Flat weight gradient g(x) of the training loss, as one inner-tracked vector.
    fn weight_gradient<B: Backend>(
        self,
        x: Tensor<Inner<B>, 1>,
        device: &B::Device,
    ) -> Tensor<Inner<B>, 1> {
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        let targets = onehot::<Outer<B>>(&[0, 2], device);
        let x = Tensor::<Outer<B>, 1>::from_inner(x);
        let grads = match self {
            Victim::MlpTanhCrossEntropy | Victim::MlpReluSoftmaxSquaredError => {
                let activation = match self {
                    Victim::MlpTanhCrossEntropy => Activation::Tanh,
                    _ => Activation::Relu,
                };
                let mlp: Mlp<Outer<B>> = MlpConfig::new(4, vec![5, 4], CLASSES)
                    .with_activation(activation)
                    .init(device, &mut rng);
                let logits = mlp.forward(x.reshape([BATCH, 4]));
                let loss = match self {
                    Victim::MlpTanhCrossEntropy => cross_entropy(logits, targets),
                    _ => (softmax(logits, 1) - targets).powi_scalar(2).sum(),
                };
                param_gradients(&mlp, &loss.backward())
            }
            Victim::ConvReluCrossEntropy => {
                let encoder = ConvEncoderConfig::new(2, 7)
                    .with_channels(vec![3, 2])
                    .init(device, &mut rng);
                let head = DenseConfig::new(encoder.d_output, CLASSES).init(device, &mut rng);
                let victim = ConvVictim { encoder, head };
                let images = x.reshape([BATCH, 2, 7, 7]);
                let logits = victim.head.forward(victim.encoder.forward(images));
                param_gradients(&victim, &cross_entropy(logits, targets).backward())
            }
        };
        assert!(
            !grads.is_empty(),
            "{self:?}: no parameter received a gradient"
        );
        Tensor::cat(grads.into_iter().map(|g| g.gradient).collect(), 0)
    }

    /// m(x) = ‖g(x) − g*‖² and, if asked, ∂m/∂x.
    fn gradient_matching_loss<B: Backend>(
        self,
        x: &[f64],
        target: &[f64],
        with_input_gradient: bool,
        device: &B::Device,
    ) -> (f64, Option<Vec<f64>>) {
        let mut x_inner = Tensor::<Inner<B>, 1>::from_data(
            TensorData::new(x.to_vec(), [x.len()]).convert::<B::FloatElem>(),
            device,
        );
        if with_input_gradient {
            x_inner = x_inner.require_grad();
        }
        let g = self.weight_gradient::<B>(x_inner.clone(), device);
        assert_eq!(g.dims()[0], target.len(), "{self:?}: gradient length");
        let target = Tensor::<Inner<B>, 1>::from_data(
            TensorData::new(target.to_vec(), [target.len()]).convert::<B::FloatElem>(),
            device,
        );
        let loss = (g - target).powi_scalar(2).sum();
        let value = to_f64(loss.clone().into_data())[0];
        let input_gradient = with_input_gradient.then(|| {
            let grads = loss.backward();
            let dx = x_inner
                .grad(&grads)
                .expect("the reconstructed input received no second-order gradient");
            to_f64(dx.into_data())
        });
        (value, input_gradient)
    }
}

fn cross_entropy<B: Backend>(logits: Tensor<B, 2>, onehot: Tensor<B, 2>) -> Tensor<B, 1> {
    (log_softmax(logits, 1) * onehot).sum().neg() / BATCH as f64
}

fn onehot<B: Backend>(classes: &[usize], device: &B::Device) -> Tensor<B, 2> {
    let mut values = vec![0.0f32; classes.len() * CLASSES];
    for (row, &c) in classes.iter().enumerate() {
        values[row * CLASSES + c] = 1.0;
    }
    Tensor::from_data(
        TensorData::new(values, [classes.len(), CLASSES]).convert::<B::FloatElem>(),
        device,
    )
}

fn to_f64(data: TensorData) -> Vec<f64> {
    data.convert::<f64>().to_vec::<f64>().expect("float data")
}

/// Checks ∂m/∂x against central differences with step `h` at `coordinates` input coordinates
/// drawn at random (all of them if `None`); the error is measured relative to the largest
/// component of the analytic gradient.
fn check_against_finite_differences<B: Backend>(
    victim: Victim,
    device: &B::Device,
    h: f64,
    tolerance: f64,
    coordinates: Option<usize>,
) {
    let mut rng = ChaCha8Rng::seed_from_u64(42);
    let len: usize = victim.input_shape().iter().product();
    let x: Vec<f64> = (0..len).map(|_| rng.random_range(-1.0..1.0)).collect();
    let param_count = victim.weight_gradient::<B>(
        Tensor::<Inner<B>, 1>::from_data(
            TensorData::new(vec![0.0f32; len], [len]).convert::<B::FloatElem>(),
            device,
        ),
        device,
    );
    let target: Vec<f64> = (0..param_count.dims()[0])
        .map(|_| rng.random_range(-0.5..0.5))
        .collect();

    let (_, analytic) = victim.gradient_matching_loss::<B>(&x, &target, true, device);
    let analytic = analytic.unwrap();
    let scale = analytic.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    assert!(
        scale > 1e-6,
        "{victim:?}: the input gradient vanished ({scale})"
    );
    let checked: Vec<usize> = match coordinates {
        None => (0..len).collect(),
        Some(count) => (0..count).map(|_| rng.random_range(0..len)).collect(),
    };
    for i in checked {
        let mut plus = x.clone();
        plus[i] += h;
        let mut minus = x.clone();
        minus[i] -= h;
        let (m_plus, _) = victim.gradient_matching_loss::<B>(&plus, &target, false, device);
        let (m_minus, _) = victim.gradient_matching_loss::<B>(&minus, &target, false, device);
        let numeric = (m_plus - m_minus) / (2.0 * h);
        let error = (numeric - analytic[i]).abs() / scale;
        assert!(
            error < tolerance,
            "{victim:?}: ∂m/∂x[{i}] analytic {} vs finite difference {numeric} (relative error {error:.2e})",
            analytic[i]
        );
    }
}

const VICTIMS: [Victim; 3] = [
    Victim::MlpTanhCrossEntropy,
    Victim::MlpReluSoftmaxSquaredError,
    Victim::ConvReluCrossEntropy,
];

#[test]
fn second_order_gradients_match_finite_differences_on_ndarray() {
    privrl_agents::autodiff::exclusive(|| {
        type B = burn::backend::NdArray<f64>;
        let device = Default::default();
        for victim in VICTIMS {
            check_against_finite_differences::<B>(victim, &device, 1e-5, 1e-6, None);
        }
    });
}

#[cfg(feature = "wgpu")]
#[test]
fn second_order_gradients_match_finite_differences_on_wgpu() {
    privrl_agents::autodiff::exclusive(|| {
        type B = privrl_agents::WgpuBackend;
        let device = burn::backend::wgpu::WgpuDevice::default();
        for victim in VICTIMS {
            // f32: a larger step keeps rounding error (~1e-7 / h) well under the tolerance. Every
            // new shape costs a kernel compilation on lavapipe, so a sample of coordinates is
            // checked here; ndarray checks all of them.
            check_against_finite_differences::<B>(victim, &device, 1e-2, 2e-2, Some(6));
        }
    });
}

//! An f64 model stays f64 in a process that has already used f32 on the same device type.
//!
//! Burn 0.21 fixes the default float dtype of a device type (here `NdArrayDevice`, shared by
//! `NdArray<f32>` and `NdArray<f64>`) at its first use, for the whole process; a tensor created
//! without an explicit dtype then follows that default, not its backend's `FloatElem`. This
//! file is its own test process with this one test, so the order "f32 first" is certain.

use burn::backend::{Autodiff, NdArray};
use burn::tensor::{DType, Tensor};
use privrl_agents::tensor::{matrix, one_hot, vector};
use privrl_agents::{Activation, MlpConfig};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

#[test]
fn an_f64_network_computes_in_f64_after_f32_fixed_the_devices_default() {
    let device = Default::default();
    // Anything on NdArray<f32> first: the device's default float dtype is now F32.
    let first = Tensor::<NdArray<f32>, 1>::from_floats([1.0, 2.0], &device);
    assert_eq!(first.dtype(), DType::F32);

    type B = NdArray<f64>;
    let mut rng = ChaCha8Rng::seed_from_u64(3);
    let mlp = MlpConfig::new(3, vec![5], 2)
        .with_activation(Activation::Relu)
        .init::<B>(&device, &mut rng);
    let x = matrix::<B>(&[0.3, -1.2, 0.7, 1.1, 0.2, -0.4], 3, &device);
    assert_eq!(x.dtype(), DType::F64);
    assert_eq!(one_hot::<B>(&[1, 0], 2, &device).dtype(), DType::F64);
    let output = mlp.forward(x.clone());
    assert_eq!(output.dtype(), DType::F64);
    // The manual backward builds its ones and the ReLU mask from scratch: both must be f64.
    let (loss, grads) = mlp.squared_error_gradient(x, vector::<B>(&[0.5, -0.5], &device));
    assert!(loss.is_finite());
    let weight = grads
        .get::<B, 2>(mlp.layers[0].weight.id)
        .expect("the first layer's weight gradient");
    assert_eq!(weight.dtype(), DType::F64);
    // And autodiff through the network: parameters created in f64 give f64 gradients.
    type A = Autodiff<NdArray<f64>>;
    let (mlp, grads) = privrl_agents::autodiff::exclusive(|| {
        let mlp = MlpConfig::new(3, vec![5], 2)
            .with_activation(Activation::Relu)
            .init::<A>(&device, &mut rng);
        let loss = mlp
            .forward(matrix::<A>(&[0.3, -1.2, 0.7], 3, &device))
            .powi_scalar(2)
            .sum();
        let grads = privrl_agents::autodiff::backward(&loss);
        (mlp, grads)
    });
    let weight = mlp.layers[0].weight.grad(&grads).expect("tracked");
    assert_eq!(weight.dtype(), DType::F64);
    // Values computed in f64 are not all representable in f32.
    let values = weight.into_data().to_vec::<f64>().expect("f64 data");
    assert!(
        values.iter().any(|v| f64::from(*v as f32) != *v),
        "{values:?}"
    );
}

//! DP-SGD on the user's own model with privrl's `PrivacyEngine`, seeded so that a run repeats
//! byte for byte.

use burn::backend::{Autodiff, NdArray};
use burn::module::AutodiffModule;
use burn::optim::SgdConfig;
use burn::tensor::backend::Backend;
use burn::tensor::{Distribution, Tensor};
use privrl_agents::dp::{select_records, Tape, Traced};
use privrl_agents::{NoiseCalibration, PoissonSampling, PrivacyEngine, PrivacyEngineConfig};
use privrl_privacy::RandomnessSource;
use rand::SeedableRng;

use crate::my_mlp::MyMlp;

type B = Autodiff<NdArray>;

/// What one private training run produced.
pub struct DpRun {
    /// The trained weights, as bytes.
    pub weights: Vec<u8>,
    /// ε spent at δ = 1e-5.
    pub epsilon: f64,
    /// σ, calibrated for the target ε.
    pub noise_multiplier: f64,
    /// Mean squared error on held-out records, before and after training.
    pub test_mse: (f32, f32),
}

// docs: begin dp (docs/first-hour.md)
/// Trains `MyMlp` to predict y = x₀ − x₁ from 1,000 private records with DP-SGD at ε = 3,
/// δ = 1e-5 (add/remove adjacency: one record more or less), every random draw from `seed`.
pub fn train_private(seed: u64, epochs: usize) -> Result<DpRun, Box<dyn std::error::Error>> {
    let device = Default::default();
    // Burn's global generator (`Tensor::random`, Burn's own initialisers, dropout) is seeded
    // from the operating system unless seeded here; privrl never draws from it, but this data
    // does. Without this line the run is not repeatable, whatever seed the engine gets.
    B::seed(&device, seed);
    let x = Tensor::<B, 2>::random([1000, 2], Distribution::Uniform(-1.0, 1.0), &device);
    let y = x.clone().narrow(1, 0, 1) - x.clone().narrow(1, 1, 1);
    let x_test = Tensor::<B, 2>::random([200, 2], Distribution::Uniform(-1.0, 1.0), &device);
    let y_test = x_test.clone().narrow(1, 0, 1) - x_test.clone().narrow(1, 1, 1);

    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let mut net = MyMlp::<B>::new(2, 16, 1, &device, &mut rng);
    let before = test_mse(&net, &x_test, &y_test);

    // Per-record squared errors of the records `batch`, through the tape (the fast path).
    let loss = Traced(|net: &MyMlp<B>, batch: &[usize], tape: &mut Tape<B>| {
        let error = net.forward_traced(select_records(&x, batch), tape) - select_records(&y, batch);
        error.powi_scalar(2).sum_dim(1).squeeze_dim::<1>(1)
    });

    // σ is calibrated so that ε ≤ 3 after the whole run; one epoch is 1/q steps.
    let steps_per_epoch = (1.0_f64 / 0.05).round() as u64;
    let steps = steps_per_epoch * epochs as u64;
    // N records in the private dataset, each in a step's batch with probability q (expected
    // batch qN = 50); named fields, so q cannot be swapped with the clip C.
    let sampling = PoissonSampling {
        dataset_size: 1000,
        sample_rate: 0.05,
    };
    let config = PrivacyEngineConfig::new(
        sampling,
        1.0, // C: L2 bound on each record's gradient
        NoiseCalibration::TargetEpsilon {
            epsilon: 3.0,
            steps,
        },
    );
    // Seeded: the Poisson batches and the noise repeat for the same seed. Use
    // `RandomnessSource::Secure` for a real release, whose noise nobody can predict.
    let mut engine = PrivacyEngine::new(config, RandomnessSource::Seeded(seed))?;
    let mut optimizer = SgdConfig::new().init();
    for _ in 0..steps {
        net = engine.step(net, &mut optimizer, 0.5, &loss)?;
    }
    Ok(DpRun {
        weights: net.weight_bytes(),
        epsilon: engine.epsilon()?,
        noise_multiplier: engine.noise_multiplier(),
        test_mse: (before, test_mse(&net, &x_test, &y_test)),
    })
}

/// Evaluation on the plain backend (`valid()`: no autodiff graph, no privacy cost: the test
/// records are not the private ones).
fn test_mse(net: &MyMlp<B>, x: &Tensor<B, 2>, y: &Tensor<B, 2>) -> f32 {
    let net = net.valid();
    let error = net.forward(x.clone().inner()) - y.clone().inner();
    error.powi_scalar(2).mean().into_scalar()
}
// docs: end dp

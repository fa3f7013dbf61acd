//! The DP-SGD [`PrivacyEngine`]: the fast per-sample gradients (Linear, Conv2d, Dense) equal
//! the micro-batch fallback, clipping bounds every record's gradient by C, σ = 0 with a huge C
//! is the plain mean gradient, the noise has standard deviation σC/(qN), ε is the privacy
//! crate's for the recorded schedule, and a seed fixes every byte.

use burn::backend::{Autodiff, NdArray};
use burn::module::Module;
use burn::nn::conv::{Conv2d, Conv2dConfig};
use burn::nn::{Linear, LinearConfig, PaddingConfig2d};
use burn::optim::SgdConfig;
use burn::tensor::activation::{relu, tanh};
use burn::tensor::backend::{AutodiffBackend, Backend};
use burn::tensor::{Tensor, TensorData};
use privrl_agents::autodiff;
use privrl_agents::dp::{
    adaptive_gradient_noise, clip_per_sample, per_sample_norms, select_records, GivenGradients,
    MicroBatches, ParamLayout, PerSampleGradients, Tape, Traced,
};
use privrl_agents::GradientRecord;
use privrl_agents::{
    AdaptiveClipping, EngineError, NoiseCalibration, PoissonSampling, PrivacyEngine,
    PrivacyEngineConfig,
};
use privrl_agents::{Dense, DenseConfig};
use privrl_privacy::{
    dp_sgd_epsilon_under, noise_multiplier_for_under, AccountantKind, Adjacency, GridGaussianSum,
    PldConfig, RandomnessSource, ReleaseSchedule, SubsampledGaussianSteps,
};
use rand::{Rng, SeedableRng};

type B = Autodiff<NdArray>;

#[derive(Module, Debug)]
struct Mlp<B: Backend> {
    hidden: Linear<B>,
    out: Linear<B>,
}

impl<B: AutodiffBackend> Mlp<B> {
    fn new(device: &B::Device) -> Self {
        Self {
            hidden: LinearConfig::new(3, 7).init(device),
            out: LinearConfig::new(7, 2).init(device),
        }
    }
    fn forward(&self, x: Tensor<B, 2>, tape: &mut Tape<B>) -> Tensor<B, 2> {
        let h = tanh(tape.trace(&self.hidden, x));
        tape.trace(&self.out, h)
    }
}

/// Two convolutions (one strided with "same" padding, one dilated with asymmetric explicit
/// padding), privrl's Dense and a Linear head.
#[derive(Module, Debug)]
struct Cnn<B: Backend> {
    conv1: Conv2d<B>,
    conv2: Conv2d<B>,
    dense: Dense<B>,
    head: Linear<B>,
}

impl<B: AutodiffBackend> Cnn<B> {
    fn new(device: &B::Device) -> Self {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(3);
        Self {
            conv1: Conv2dConfig::new([2, 3], [3, 3])
                .with_stride([2, 2])
                .with_padding(PaddingConfig2d::Same)
                .init(device),
            conv2: Conv2dConfig::new([3, 4], [2, 3])
                .with_dilation([1, 2])
                .with_padding(PaddingConfig2d::Explicit(1, 0, 0, 2))
                .init(device),
            // 7×7 → 4×4 (stride 2, same) → 4×2 (kernel 2×3 dilated to 2×5, padding 1 top, 2 right).
            dense: DenseConfig::new(4 * 4 * 2, 5).init(device, &mut rng),
            head: LinearConfig::new(5, 2).init(device),
        }
    }
    fn forward(&self, x: Tensor<B, 4>, tape: &mut Tape<B>) -> Tensor<B, 2> {
        let h = relu(tape.trace(&self.conv1, x));
        let h = relu(tape.trace(&self.conv2, h));
        let [batch, c, height, width] = h.dims();
        let h = h.reshape([batch, c * height * width]);
        let h = relu(tape.trace(&self.dense, h));
        tape.trace(&self.head, h)
    }
}

fn host<B: Backend, const D: usize>(t: Tensor<B, D>) -> Vec<f32> {
    t.into_data().convert::<f32>().into_vec::<f32>().unwrap()
}

fn assert_close(fast: &[f32], reference: &[f32], what: &str) {
    assert_eq!(fast.len(), reference.len(), "{what}");
    let scale = reference.iter().fold(0f32, |m, x| m.max(x.abs()));
    let worst = fast
        .iter()
        .zip(reference)
        .map(|(a, b)| (a - b).abs())
        .fold(0f32, f32::max);
    assert!(scale > 1e-3, "{what}: degenerate gradients");
    assert!(
        worst <= 1e-5 * scale.max(1.0),
        "{what}: max |fast − reference| = {worst} (scale {scale})"
    );
}

/// Inputs and targets drawn from a seeded generator (not the backend's global one, which the
/// tests of this binary share).
fn uniform<const D: usize>(shape: [usize; D], seed: u64) -> Tensor<B, D> {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let values: Vec<f32> = (0..shape.iter().product::<usize>())
        .map(|_| rng.random_range(-1.0f32..1.0))
        .collect();
    Tensor::from_data(TensorData::new(values, shape), &Default::default())
}

fn mlp_data(n: usize) -> (Tensor<B, 2>, Tensor<B, 2>) {
    (uniform([n, 3], 11), uniform([n, 2], 12))
}

fn mlp_loss<'a>(
    x: &'a Tensor<B, 2>,
    y: &'a Tensor<B, 2>,
) -> impl Fn(&Mlp<B>, &[usize], &mut Tape<B>) -> Tensor<B, 1> + Sync + 'a {
    move |net, batch, tape| {
        let error = net.forward(select_records(x, batch), tape) - select_records(y, batch);
        error.powi_scalar(2).sum_dim(1).squeeze_dim::<1>(1)
    }
}

#[test]
fn fast_path_equals_the_fallback_for_an_mlp() {
    let device = Default::default();
    let net = Mlp::<B>::new(&device);
    let (x, y) = mlp_data(9);
    let loss = mlp_loss(&x, &y);
    let layout = ParamLayout::of(&net);
    assert_eq!(layout.num_values(), 3 * 7 + 7 + 7 * 2 + 2);
    let batch = [4, 0, 8, 4, 2];
    let fast = Traced(&loss)
        .per_sample_gradients(&net, &batch, &layout)
        .unwrap();
    let slow = MicroBatches(|m: &Mlp<B>, b: &[usize]| loss(m, b, &mut Tape::off()))
        .per_sample_gradients(&net, &batch, &layout)
        .unwrap();
    assert_eq!(fast.dims(), [5, layout.num_values()]);
    assert_close(&host(fast.clone()), &host(slow), "MLP");
    // Record 4 twice: identical rows.
    let rows = host(fast);
    let p = layout.num_values();
    assert_eq!(rows[..p], rows[3 * p..4 * p]);
}

#[test]
fn fast_path_equals_the_fallback_for_a_cnn() {
    let device = Default::default();
    let net = Cnn::<B>::new(&device);
    let images = uniform([6, 2, 7, 7], 5);
    let targets = uniform([6, 2], 6);
    let loss = |net: &Cnn<B>, batch: &[usize], tape: &mut Tape<B>| {
        let error =
            net.forward(select_records(&images, batch), tape) - select_records(&targets, batch);
        error.powi_scalar(2).sum_dim(1).squeeze_dim::<1>(1)
    };
    let layout = ParamLayout::of(&net);
    let names: Vec<_> = layout.entries().iter().map(|e| e.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "conv1.weight",
            "conv1.bias",
            "conv2.weight",
            "conv2.bias",
            "dense.weight",
            "dense.bias",
            "head.weight",
            "head.bias"
        ]
    );
    let batch = [5, 1, 2, 0];
    let fast = Traced(loss)
        .per_sample_gradients(&net, &batch, &layout)
        .unwrap();
    let slow = MicroBatches(|m: &Cnn<B>, b: &[usize]| loss(m, b, &mut Tape::off()))
        .per_sample_gradients(&net, &batch, &layout)
        .unwrap();
    assert_close(&host(fast), &host(slow), "CNN");
}

#[test]
fn a_layer_left_untraced_is_a_named_error() {
    let device = Default::default();
    let net = Mlp::<B>::new(&device);
    let (x, y) = mlp_data(4);
    // The output layer is applied without the tape.
    let loss = Traced(|net: &Mlp<B>, batch: &[usize], tape: &mut Tape<B>| {
        let h = tanh(tape.trace(&net.hidden, select_records(&x, batch)));
        (net.out.forward(h) - select_records(&y, batch))
            .powi_scalar(2)
            .sum_dim(1)
            .squeeze_dim::<1>(1)
    });
    let error = loss
        .per_sample_gradients(&net, &[0, 1], &ParamLayout::of(&net))
        .unwrap_err();
    assert!(
        matches!(&error, EngineError::Untraced { name } if name == "out.weight"),
        "{error}"
    );
}

#[test]
fn clipped_rows_are_bounded_by_c_and_small_rows_are_untouched() {
    let device = Default::default();
    let net = Mlp::<B>::new(&device);
    let (x, y) = mlp_data(16);
    let loss = mlp_loss(&x, &y);
    let batch: Vec<usize> = (0..16).collect();
    let rows = Traced(&loss)
        .per_sample_gradients(&net, &batch, &ParamLayout::of(&net))
        .unwrap();
    let norms = host(per_sample_norms(rows.clone()));
    let mut sorted = norms.clone();
    sorted.sort_by(f32::total_cmp);
    let clip = f64::from(sorted[8]); // the median: half the rows are clipped
    let clipped = clip_per_sample(rows.clone(), clip);
    let after = host(per_sample_norms(clipped.clone()));
    let (before_rows, after_rows) = (host(rows), host(clipped));
    let p = before_rows.len() / 16;
    for i in 0..16 {
        assert!(
            f64::from(after[i]) <= clip * (1.0 + 1e-6),
            "row {i}: {} > C = {clip}",
            after[i]
        );
        if f64::from(norms[i]) < clip {
            assert_eq!(
                before_rows[i * p..(i + 1) * p],
                after_rows[i * p..(i + 1) * p]
            );
        } else {
            assert!((f64::from(after[i]) - clip).abs() < 1e-5 * clip, "row {i}");
        }
    }
}

fn engine(n: usize, q: f64, clip: f64, noise: NoiseCalibration, seed: u64) -> PrivacyEngine {
    PrivacyEngine::new(
        PrivacyEngineConfig::new(
            PoissonSampling {
                dataset_size: n,
                sample_rate: q,
            },
            clip,
            noise,
        ),
        RandomnessSource::Seeded(seed),
    )
    .unwrap()
}

#[test]
fn without_noise_and_clipping_the_release_is_the_plain_mean_gradient() {
    let device = Default::default();
    let net = Mlp::<B>::new(&device);
    let (x, y) = mlp_data(12);
    let loss = mlp_loss(&x, &y);
    let mut engine = engine(12, 1.0, 1e9, NoiseCalibration::NoiseMultiplier(0.0), 0);
    let batch = engine.sample().unwrap();
    assert_eq!(
        batch,
        (0..12).collect::<Vec<_>>(),
        "q = 1 takes every record"
    );
    let private = engine
        .private_gradient(&net, &batch, &Traced(&loss))
        .unwrap();
    let plain = autodiff::exclusive(|| {
        let mean = loss(&net, &batch, &mut Tape::off()).mean();
        GradientRecord::from_grads(&net, &autodiff::backward(&mean))
    });
    assert_eq!(private.names(), plain.names());
    assert_close(&private.flatten(), &plain.flatten(), "mean gradient");
    assert_eq!(
        engine.epsilon().unwrap(),
        f64::INFINITY,
        "σ = 0 has no guarantee"
    );
    // The batch's unnoised statistics sit behind their own accessor: the drawn size and the
    // plain mean loss, exactly.
    let step = engine.private_step(&net, &batch, &Traced(&loss)).unwrap();
    let diagnostics = step.non_private_diagnostics();
    assert_eq!(diagnostics.batch_size, 12);
    let plain_loss = autodiff::exclusive(|| {
        f64::from(loss(&net, &batch, &mut Tape::off()).mean().into_scalar())
    });
    assert!(
        (diagnostics.mean_loss - plain_loss).abs() <= 1e-5 * plain_loss.abs().max(1.0),
        "{} vs {plain_loss}",
        diagnostics.mean_loss
    );
}

#[test]
fn the_diagnostics_count_the_norms_the_clip_cut_at_the_steps_c() {
    // Records of norms 0.5, 2, 4 and 3 along different coordinates at C = 1. Sorted 0.5, 2,
    // 3, 4: the p-th percentile sits at rank 3p, so 0.5 + 0.3·1.5 = 0.95, (2 + 3)/2 = 2.5 and
    // 3 + 0.7·1 = 3.7; three exceed C. Adaptive clipping then moves C, but the step's counts
    // are at the C it clipped to.
    let device = Default::default();
    let net = Mlp::<B>::new(&device);
    let width = ParamLayout::of(&net).num_values();
    let rows: Vec<Vec<f32>> = [0.5f32, 2.0, 4.0, 3.0]
        .iter()
        .enumerate()
        .map(|(i, &norm)| {
            let mut row = vec![0.0; width];
            row[i] = norm;
            row
        })
        .collect();
    for adaptive in [false, true] {
        let mut config = PrivacyEngineConfig::new(
            PoissonSampling {
                dataset_size: 4,
                sample_rate: 1.0,
            },
            1.0,
            NoiseCalibration::NoiseMultiplier(0.0),
        );
        if adaptive {
            config = config.with_adaptive_clipping(AdaptiveClipping::new(0.5, 0.2, 0.0));
        }
        let mut engine = PrivacyEngine::new(config, RandomnessSource::Seeded(3)).unwrap();
        let step = engine
            .private_step(&net, &[0, 1, 2, 3], &GivenGradients(rows.clone()))
            .unwrap();
        let diagnostics = step.non_private_diagnostics();
        assert_eq!(diagnostics.batch_size, 4);
        for (got, want) in diagnostics.norm_percentiles.iter().zip([0.95, 2.5, 3.7]) {
            assert!((got - want).abs() < 1e-6, "{diagnostics:?}");
        }
        assert_eq!(diagnostics.clipped, 3, "adaptive = {adaptive}");
        assert_eq!(engine.clip() != 1.0, adaptive, "adaptive clipping moved C");
    }
}

#[test]
fn the_noise_has_standard_deviation_sigma_c_over_q_n() {
    let device = Default::default();
    let net = Mlp::<B>::new(&device);
    let (x, y) = mlp_data(40);
    let loss = mlp_loss(&x, &y);
    // No record sampled (an empty batch): the release is pure noise N(0, (σC/qN)²) per value.
    let (sigma, clip, q, n) = (2.0, 0.5, 0.1, 40);
    let mut engine = engine(n, q, clip, NoiseCalibration::NoiseMultiplier(sigma), 1);
    let mut values = Vec::new();
    for _ in 0..20 {
        values.extend(
            engine
                .private_gradient(&net, &[], &Traced(&loss))
                .unwrap()
                .flatten(),
        );
    }
    let m = values.len() as f64;
    let mean = values.iter().map(|&v| f64::from(v)).sum::<f64>() / m;
    let std = (values
        .iter()
        .map(|&v| (f64::from(v) - mean).powi(2))
        .sum::<f64>()
        / m)
        .sqrt();
    let expected = sigma * clip / (q * n as f64);
    // 880 draws: the sample std is within 10% of the truth with probability > 0.999.
    assert!(
        (std / expected - 1.0).abs() < 0.1,
        "std {std}, expected {expected}"
    );
    assert!(mean.abs() < 0.15 * expected, "mean {mean}");
    assert_eq!(engine.steps(), 20, "an empty batch is a release too");
}

/// Under the operating system's source the engine releases on a grid with discrete Gaussian
/// noise (`GridGaussianSum`, drawn from tables within total variation 10⁻⁷⁰ of the exact
/// distribution): every released value is a multiple of γ/(qN), the noise has standard
/// deviation σC(1 + η)(1 + 10⁻⁴)/(qN) (η = 10⁻³), and ε is the seeded engine's: both are
/// accounted at σ.
#[test]
fn secure_noise_is_exact_on_a_grid_and_accounted_at_sigma() {
    let device = Default::default();
    let net = Mlp::<B>::new(&device);
    let (x, y) = mlp_data(40);
    let loss = mlp_loss(&x, &y);
    let (sigma, clip, q, n) = (2.0, 0.5, 0.1, 40);
    let mut secure = PrivacyEngine::new(
        PrivacyEngineConfig::new(
            PoissonSampling {
                dataset_size: n,
                sample_rate: q,
            },
            clip,
            NoiseCalibration::NoiseMultiplier(sigma),
        ),
        RandomnessSource::Secure,
    )
    .unwrap();
    let mut seeded = engine(n, q, clip, NoiseCalibration::NoiseMultiplier(sigma), 1);
    let d = autodiff::exclusive(|| ParamLayout::of(&net).num_values());
    let grid = GridGaussianSum::new(clip, sigma, d).unwrap();
    let unit = grid.step() / (q * n as f64);
    let mut values = Vec::new();
    for step in 0..20 {
        // Half the releases with records, half pure noise.
        let batch: Vec<usize> = if step % 2 == 0 { vec![0, 3, 7] } else { vec![] };
        let released = secure
            .private_gradient(&net, &batch, &Traced(&loss))
            .unwrap()
            .flatten();
        seeded
            .private_gradient(&net, &batch, &Traced(&loss))
            .unwrap();
        for &v in &released {
            let units = f64::from(v) / unit;
            assert!(
                // f32 keeps ~7 digits: within 0.05 of a grid point up to |k| ~ 10⁵.
                (units - units.round()).abs() < 0.05,
                "{v} is not on the grid γ/(qN) = {unit}"
            );
        }
        if batch.is_empty() {
            values.extend(released);
        }
    }
    let m = values.len() as f64;
    let std = (values.iter().map(|&v| f64::from(v).powi(2)).sum::<f64>() / m).sqrt();
    let expected = sigma * clip * (1.0 + grid.slack()) / (q * n as f64);
    assert!(
        (std / expected - 1.0).abs() < 0.1,
        "std {std}, expected {expected}"
    );
    assert_eq!(secure.epsilon().unwrap(), seeded.epsilon().unwrap());
    assert!(secure.state().rng.is_none(), "no key is saved");
}

#[test]
fn epsilon_is_the_accountants_for_the_recorded_schedule() {
    let device = Default::default();
    let (x, y) = mlp_data(32);
    let loss = mlp_loss(&x, &y);
    for adjacency in Adjacency::ALL {
        let config = PrivacyEngineConfig::new(
            PoissonSampling {
                dataset_size: 32,
                sample_rate: 0.25,
            },
            1.0,
            NoiseCalibration::NoiseMultiplier(1.1),
        )
        .with_delta(1e-6)
        .with_adjacency(adjacency);
        let mut engine = PrivacyEngine::new(config, RandomnessSource::Seeded(2)).unwrap();
        assert_eq!(engine.epsilon().unwrap(), 0.0);
        let mut net = Mlp::<B>::new(&device);
        let mut optimizer = SgdConfig::new().init();
        for _ in 0..6 {
            net = engine
                .step(net, &mut optimizer, 0.05, &Traced(&loss))
                .unwrap();
        }
        assert_eq!(engine.steps(), 6);
        assert_eq!(
            engine.schedule().blocks().len(),
            1,
            "one block of identical steps"
        );
        let expected = dp_sgd_epsilon_under(adjacency, 0.25, 1.1, 6, 1e-6).unwrap();
        assert_eq!(engine.epsilon().unwrap(), expected);
        assert!(
            engine.label().contains(adjacency.name()),
            "{}",
            engine.label()
        );
    }
}

#[test]
fn a_target_epsilon_calibrates_sigma_and_is_met_after_the_planned_steps() {
    let device = Default::default();
    let (x, y) = mlp_data(20);
    let loss = mlp_loss(&x, &y);
    let target = NoiseCalibration::TargetEpsilon {
        epsilon: 2.0,
        steps: 8,
    };
    let mut engine = engine(20, 0.2, 1.0, target, 3);
    let sigma = noise_multiplier_for_under(Adjacency::AddRemove, 2.0, 1e-5, 0.2, 8).unwrap();
    assert_eq!(engine.noise_multiplier(), sigma);
    let mut net = Mlp::<B>::new(&device);
    let mut optimizer = SgdConfig::new().init();
    for _ in 0..8 {
        net = engine
            .step(net, &mut optimizer, 0.05, &Traced(&loss))
            .unwrap();
    }
    let epsilon = engine.epsilon().unwrap();
    assert!(epsilon <= 2.0 && epsilon > 1.99, "{epsilon}");
    // Bad inputs are named errors, never panics.
    for (config, name) in [
        (
            PrivacyEngineConfig::new(
                PoissonSampling {
                    dataset_size: 20,
                    sample_rate: 0.0,
                },
                1.0,
                NoiseCalibration::NoiseMultiplier(1.0),
            ),
            "sample_rate",
        ),
        (
            PrivacyEngineConfig::new(
                PoissonSampling {
                    dataset_size: 20,
                    sample_rate: 0.2,
                },
                f64::NAN,
                NoiseCalibration::NoiseMultiplier(1.0),
            ),
            "clip",
        ),
        (
            PrivacyEngineConfig::new(
                PoissonSampling {
                    dataset_size: 20,
                    sample_rate: 0.2,
                },
                1.0,
                NoiseCalibration::NoiseMultiplier(-1.0),
            ),
            "noise_multiplier",
        ),
        (
            PrivacyEngineConfig::new(
                PoissonSampling {
                    dataset_size: 20,
                    sample_rate: 0.2,
                },
                1.0,
                NoiseCalibration::NoiseMultiplier(1.0),
            )
            .with_delta(1.0),
            "delta",
        ),
        (
            PrivacyEngineConfig::new(
                PoissonSampling {
                    dataset_size: 20,
                    sample_rate: 0.2,
                },
                1.0,
                NoiseCalibration::TargetEpsilon {
                    epsilon: 0.0,
                    steps: 8,
                },
            ),
            "target_epsilon",
        ),
        (
            PrivacyEngineConfig::new(
                PoissonSampling {
                    dataset_size: 0,
                    sample_rate: 0.2,
                },
                1.0,
                NoiseCalibration::NoiseMultiplier(1.0),
            ),
            "dataset_size",
        ),
    ] {
        let error = PrivacyEngine::new(config, RandomnessSource::Seeded(0)).unwrap_err();
        assert!(error.to_string().contains(name), "{name}: {error}");
    }
    let unreachable = PrivacyEngineConfig::new(
        PoissonSampling {
            dataset_size: 20,
            sample_rate: 1.0,
        },
        1.0,
        NoiseCalibration::TargetEpsilon {
            epsilon: 1e-4,
            steps: 1_000_000,
        },
    );
    let error = PrivacyEngine::new(unreachable, RandomnessSource::Seeded(0)).unwrap_err();
    assert!(error.to_string().contains("cannot be reached"), "{error}");
    // The check is the engine's one validation: what it accepts, with σ resolved, builds the
    // engine that `new` builds.
    let checked = PrivacyEngineConfig::new(
        PoissonSampling {
            dataset_size: 20,
            sample_rate: 0.2,
        },
        1.0,
        target,
    )
    .check()
    .unwrap();
    assert_eq!(checked.noise_multiplier(), sigma);
    assert_eq!(checked.config().sample_rate, 0.2);
    let from_valid = PrivacyEngine::from_valid(checked, RandomnessSource::Seeded(3)).unwrap();
    assert_eq!(from_valid.noise_multiplier(), sigma);
    assert_eq!(from_valid.label(), engine.label());
}

#[test]
fn the_same_seed_gives_the_same_bytes() {
    let (x, y) = mlp_data(24);
    let loss = mlp_loss(&x, &y);
    let start = Mlp::<B>::new(&Default::default());
    // Burn initialises parameters lazily: initialise them once, before the clones.
    assert_eq!(ParamLayout::of(&start).num_values(), 44);
    let train = |seed: u64| {
        let mut net = start.clone();
        let mut engine = engine(24, 0.3, 0.7, NoiseCalibration::NoiseMultiplier(1.0), seed);
        let mut optimizer = SgdConfig::new().init();
        for _ in 0..4 {
            net = engine
                .step(net, &mut optimizer, 0.1, &Traced(&loss))
                .unwrap();
        }
        host(net.out.weight.val())
            .into_iter()
            .map(f32::to_bits)
            .collect::<Vec<_>>()
    };
    assert_eq!(train(9), train(9));
    assert_ne!(train(9), train(10));
}

/// A model with a layer that has no fast path (LayerNorm): the fallback still trains it
/// privately, and the fast path names the parameter it cannot cover.
#[derive(Module, Debug)]
struct Normed<B: Backend> {
    hidden: Linear<B>,
    norm: burn::nn::LayerNorm<B>,
    out: Linear<B>,
}

impl<B: AutodiffBackend> Normed<B> {
    fn forward(&self, x: Tensor<B, 2>, tape: &mut Tape<B>) -> Tensor<B, 2> {
        let h = tape.trace(&self.hidden, x);
        let h = tanh(self.norm.forward(h));
        tape.trace(&self.out, h)
    }
}

#[test]
fn the_fallback_covers_any_module() {
    let device = Default::default();
    let net = Normed::<B> {
        hidden: LinearConfig::new(3, 6).init(&device),
        norm: burn::nn::LayerNormConfig::new(6).init(&device),
        out: LinearConfig::new(6, 2).init(&device),
    };
    let (x, y) = mlp_data(10);
    let loss = |net: &Normed<B>, batch: &[usize], tape: &mut Tape<B>| {
        let error = net.forward(select_records(&x, batch), tape) - select_records(&y, batch);
        error.powi_scalar(2).sum_dim(1).squeeze_dim::<1>(1)
    };
    let fallback = MicroBatches(|m: &Normed<B>, b: &[usize]| loss(m, b, &mut Tape::off()));
    // σ = 0, C huge, q = 1: the plain mean gradient, LayerNorm's γ and β included.
    let mut engine = engine(10, 1.0, 1e9, NoiseCalibration::NoiseMultiplier(0.0), 4);
    let batch = engine.sample().unwrap();
    let private = engine.private_gradient(&net, &batch, &fallback).unwrap();
    let plain = autodiff::exclusive(|| {
        let mean = loss(&net, &batch, &mut Tape::off()).mean();
        GradientRecord::from_grads(&net, &autodiff::backward(&mean))
    });
    assert_eq!(private.names(), plain.names());
    assert!(private.names().contains(&"norm.gamma"));
    assert_close(
        &private.flatten(),
        &plain.flatten(),
        "fallback mean gradient",
    );
    // A full step through any Burn optimiser.
    let mut optimizer = SgdConfig::new().init();
    let mut engine = engine_with_noise(10);
    let _net = engine
        .step(net.clone(), &mut optimizer, 0.1, &fallback)
        .unwrap();
    assert_eq!(engine.steps(), 1);
    let error = Traced(loss)
        .per_sample_gradients(&net, &[0, 1], &ParamLayout::of(&net))
        .unwrap_err();
    assert!(
        matches!(&error, EngineError::Untraced { name } if name == "norm.gamma"),
        "{error}"
    );
}

fn engine_with_noise(n: usize) -> PrivacyEngine {
    engine(n, 0.5, 1.0, NoiseCalibration::NoiseMultiplier(1.0), 5)
}

/// privrl's own `Mlp` through the engine's fast path equals its analytic per-sample factors
/// (`PerSampleFactors::materialize`, the DQN's path): two fast paths, one answer.
#[test]
fn an_mlp_traced_equals_its_analytic_factors() {
    use privrl_agents::dp::PerSampleFactors;
    use privrl_agents::dp::{probed_forward, traced_forward};
    use privrl_agents::MlpConfig;
    let device = Default::default();
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(8);
    let mlp = MlpConfig::new(3, vec![6, 5], 2).init::<B>(&device, &mut rng);
    let (x, y) = mlp_data(7);
    let loss = |m: &privrl_agents::Mlp<B>, batch: &[usize], tape: &mut Tape<B>| {
        let error = traced_forward(m, select_records(&x, batch), tape) - select_records(&y, batch);
        error.powi_scalar(2).sum_dim(1).squeeze_dim::<1>(1)
    };
    let batch: Vec<usize> = (0..7).collect();
    let traced = Traced(loss)
        .per_sample_gradients(&mlp, &batch, &ParamLayout::of(&mlp))
        .unwrap();
    let analytic = autodiff::exclusive(|| {
        let forward = probed_forward(&mlp, x.clone());
        let loss = (forward.output.clone() - y.clone()).powi_scalar(2).sum();
        PerSampleFactors::from_backward(&mlp, &forward, &autodiff::backward(&loss)).materialize()
    });
    assert_close(&host(traced), &analytic.concat(), "Mlp: traced vs analytic");
}

/// The factored clipped sum of the traced path (norms ‖a_i‖‖δ_i‖, sum aᵀ diag(c) δ) equals
/// clipping the materialised per-sample gradients of the fallback, with a C that clips some
/// records and not others; the norms it reports are the unclipped ones.
#[test]
fn the_factored_clipped_sum_equals_clipping_the_fallbacks_rows() {
    let net = Mlp::<B>::new(&Default::default());
    let (x, y) = mlp_data(16);
    let loss = mlp_loss(&x, &y);
    let layout = autodiff::exclusive(|| ParamLayout::of(&net));
    let batch: Vec<usize> = (0..16).collect();
    let rows = MicroBatches(|m: &Mlp<B>, b: &[usize]| loss(m, b, &mut Tape::off()))
        .per_sample_gradients(&net, &batch, &layout)
        .unwrap();
    let norms = host(per_sample_norms(rows.clone()));
    let mut sorted = norms.clone();
    sorted.sort_by(f32::total_cmp);
    let clip = f64::from(sorted[8]);
    let reference = host(clip_per_sample(rows, clip).sum_dim(0));
    let fast = Traced(&loss)
        .clipped_sum(&net, &batch, &layout, clip)
        .unwrap();
    assert_close(&fast.sum, &reference, "clipped sum");
    assert_close(&fast.norms, &norms, "per-sample norms");
    assert!(fast.loss.is_finite() && fast.loss > 0.0);
}

/// σ_Δ = (σ⁻² − (2σ_b)⁻²)^(−1/2), worked by hand: σ = σ_b = 1 gives 1/√0.75; σ = σ_b = 0.5
/// gives 1/√3; σ = 1, σ_b = 6.4 (a batch of 128 / 20) gives 1/√(1 − 1/163.84). Composed back
/// with the count's 2σ_b it is σ; σ_b ≤ σ/2 leaves nothing for the gradient and is refused.
#[test]
fn adaptive_clipping_noise_split_matches_hand_worked_values() {
    let cases = [
        (1.0, 1.0, 1.0 / 0.75f64.sqrt()),
        (0.5, 0.5, 1.0 / 3.0f64.sqrt()),
        (1.0, 6.4, 1.0 / (1.0 - 1.0 / 163.84f64).sqrt()),
    ];
    for (sigma, sigma_b, expected) in cases {
        let sigma_delta = adaptive_gradient_noise(sigma, sigma_b).unwrap();
        assert!(
            (sigma_delta - expected).abs() < 1e-12,
            "{sigma_delta} vs {expected}"
        );
        let back = (sigma_delta.powi(-2) + (2.0 * sigma_b).powi(-2)).powf(-0.5);
        assert!((back - sigma).abs() < 1e-12, "{back} vs {sigma}");
    }
    assert!((1.1547005383792515 - adaptive_gradient_noise(1.0, 1.0).unwrap()).abs() < 1e-15);
    assert_eq!(adaptive_gradient_noise(0.0, 0.0).unwrap(), 0.0);
    for sigma_b in [0.5, 0.2, f64::NAN] {
        let error = adaptive_gradient_noise(1.0, sigma_b)
            .unwrap_err()
            .to_string();
        assert!(error.contains("count_noise"), "{error}");
    }
}

/// Adaptive clipping moves C geometrically towards the target quantile: without noise and at
/// q = 1, a batch whose norms are all under C gives b̃ = 1 and C ← C·e^(−η(1 − γ)); all over C
/// gives b̃ = 0 and C ← C·e^(ηγ). With noise, ε is that of the non-adaptive engine at the same
/// σ (the count's share is taken from the gradient's noise), and the gradient's noise
/// multiplier is σ_Δ.
#[test]
fn adaptive_clipping_moves_c_to_the_quantile_and_spends_the_same_epsilon() {
    let net = Mlp::<B>::new(&Default::default());
    let (x, y) = mlp_data(10);
    let loss = mlp_loss(&x, &y);
    let adaptive = AdaptiveClipping::new(0.5, 0.2, 1.0);
    let config = |clip: f64, sigma: f64| {
        PrivacyEngineConfig::new(
            PoissonSampling {
                dataset_size: 10,
                sample_rate: 1.0,
            },
            clip,
            NoiseCalibration::NoiseMultiplier(sigma),
        )
        .with_adaptive_clipping(adaptive)
    };
    let mut under = PrivacyEngine::new(config(1e6, 0.0), RandomnessSource::Seeded(0)).unwrap();
    let batch = under.sample().unwrap();
    under
        .private_gradient(&net, &batch, &Traced(&loss))
        .unwrap();
    assert!((under.clip() - 1e6 * (-0.2f64 * 0.5).exp()).abs() < 1e-6);
    let mut over = PrivacyEngine::new(config(1e-6, 0.0), RandomnessSource::Seeded(0)).unwrap();
    over.private_gradient(&net, &batch, &Traced(&loss)).unwrap();
    assert!((over.clip() - 1e-6 * (0.2f64 * 0.5).exp()).abs() < 1e-15);
    // Repeated steps bring C between the smallest and the largest norm.
    let mut moving = PrivacyEngine::new(config(1e3, 0.0), RandomnessSource::Seeded(0)).unwrap();
    for _ in 0..200 {
        moving
            .private_gradient(&net, &batch, &Traced(&loss))
            .unwrap();
    }
    let layout = autodiff::exclusive(|| ParamLayout::of(&net));
    let norms = Traced(&loss)
        .clipped_sum(&net, &batch, &layout, 1.0)
        .unwrap()
        .norms;
    let (low, high) = norms.iter().fold((f64::MAX, 0.0f64), |(l, h), &n| {
        (l.min(n.into()), h.max(n.into()))
    });
    assert!(
        low <= moving.clip() && moving.clip() <= high,
        "{low} ≤ {} ≤ {high}",
        moving.clip()
    );

    let mut noisy = PrivacyEngine::new(
        PrivacyEngineConfig::new(
            PoissonSampling {
                dataset_size: 10,
                sample_rate: 0.5,
            },
            1.0,
            NoiseCalibration::NoiseMultiplier(1.0),
        )
        .with_adaptive_clipping(adaptive),
        RandomnessSource::Seeded(1),
    )
    .unwrap();
    let mut fixed = engine(10, 0.5, 1.0, NoiseCalibration::NoiseMultiplier(1.0), 1);
    for _ in 0..5 {
        for engine in [&mut noisy, &mut fixed] {
            let batch = engine.sample().unwrap();
            engine
                .private_gradient(&net, &batch, &Traced(&loss))
                .unwrap();
        }
    }
    assert_eq!(noisy.epsilon().unwrap(), fixed.epsilon().unwrap());
    assert!((noisy.gradient_noise_multiplier() - 1.0 / 0.75f64.sqrt()).abs() < 1e-12);
    assert_ne!(noisy.clip(), 1.0, "C moved");
    // σ_b ≤ σ/2 is refused when the engine is built.
    let refused = PrivacyEngine::new(
        PrivacyEngineConfig::new(
            PoissonSampling {
                dataset_size: 10,
                sample_rate: 0.5,
            },
            1.0,
            NoiseCalibration::NoiseMultiplier(1.0),
        )
        .with_adaptive_clipping(AdaptiveClipping::new(0.5, 0.2, 0.4)),
        RandomnessSource::Seeded(1),
    );
    assert!(refused.unwrap_err().to_string().contains("count_noise"));
}

/// The engine's state through JSON: a run of 3 + 4 steps resumed from it equals 7
/// uninterrupted steps bit for bit (parameters, C under adaptive clipping, releases, ε); ε
/// continues from the checkpoint's and never restarts; a state of another σ is refused.
#[test]
fn a_resumed_engine_equals_an_uninterrupted_one() {
    let (x, y) = mlp_data(24);
    let loss = mlp_loss(&x, &y);
    let start = Mlp::<B>::new(&Default::default());
    assert_eq!(ParamLayout::of(&start).num_values(), 44);
    let make = || {
        PrivacyEngine::new(
            PrivacyEngineConfig::new(
                PoissonSampling {
                    dataset_size: 24,
                    sample_rate: 0.3,
                },
                0.7,
                NoiseCalibration::NoiseMultiplier(1.0),
            )
            .with_adaptive_clipping(AdaptiveClipping::new(0.5, 0.2, 2.0)),
            RandomnessSource::Seeded(4),
        )
        .unwrap()
    };
    let run = |engine: &mut PrivacyEngine, mut net: Mlp<B>, steps: usize| {
        // Plain SGD keeps no state of its own, so the engine's is the whole run's.
        let mut optimizer = SgdConfig::new().init();
        for _ in 0..steps {
            net = engine
                .step(net, &mut optimizer, 0.1, &Traced(&loss))
                .unwrap();
        }
        net
    };
    let bits = |net: &Mlp<B>| {
        host(net.out.weight.val())
            .into_iter()
            .chain(host(net.hidden.weight.val()))
            .map(f32::to_bits)
            .collect::<Vec<_>>()
    };
    let mut straight = make();
    let straight_net = run(&mut straight, start.clone(), 7);
    let mut first = make();
    let first_net = run(&mut first, start.clone(), 3);
    let saved = serde_json::to_string(&first.state()).unwrap();
    let mut resumed = make();
    resumed
        .restore(&serde_json::from_str(&saved).unwrap())
        .unwrap();
    assert_eq!(resumed.epsilon().unwrap(), first.epsilon().unwrap());
    let resumed_net = run(&mut resumed, first_net, 4);
    assert_eq!(bits(&resumed_net), bits(&straight_net));
    assert_eq!(resumed.state(), straight.state());
    assert_eq!(resumed.clip().to_bits(), straight.clip().to_bits());
    assert_eq!(resumed.steps(), 7);
    assert!(resumed.epsilon().unwrap() > first.epsilon().unwrap());
    let mut other = PrivacyEngine::new(
        PrivacyEngineConfig::new(
            PoissonSampling {
                dataset_size: 24,
                sample_rate: 0.3,
            },
            0.7,
            NoiseCalibration::NoiseMultiplier(2.0),
        ),
        RandomnessSource::Seeded(4),
    )
    .unwrap();
    assert!(other.restore(&first.state()).is_err());
}

/// The schedule's cached RDP (kept between calls to ε) gives the accountant's ε for a
/// schedule of many distinct rates, asked for after every record.
#[test]
fn the_schedules_cached_epsilon_equals_a_fresh_accountant() {
    let mut schedule = ReleaseSchedule::new(Adjacency::AddRemove, 1e-5);
    let mut last = 0.0;
    for t in 1..=30u64 {
        schedule.record(0.5 / t as f64, 1.2, 1 + t % 3);
        let eps = schedule.epsilon().unwrap();
        let fresh = privrl_privacy::RdpAccountant::of_schedule(&schedule)
            .unwrap()
            .epsilon(1e-5)
            .unwrap()
            .0;
        assert!((eps - fresh).abs() < 1e-9 * fresh, "{eps} vs {fresh}");
        assert!(eps > last);
        last = eps;
    }
    assert_eq!(schedule.blocks().len(), 30);
}

/// Under `AccountantKind::Pld` the engine's ε is the PLD accountant's for the schedule it ran
/// (recomputed here from a log of every step's (q, σ), one block per step), at most the RDP ε
/// of the same run; the accountant does not change the run itself; a checkpoint carries the
/// accountant, is refused by an engine of the other one, and an older state without it reads
/// as RDP.
#[test]
fn the_pld_accountant_gives_the_pld_epsilon_of_the_logged_schedule() {
    let (x, y) = mlp_data(40);
    let loss = mlp_loss(&x, &y);
    let make = |accountant| {
        PrivacyEngine::new(
            PrivacyEngineConfig::new(
                PoissonSampling {
                    dataset_size: 40,
                    sample_rate: 0.25,
                },
                1.0,
                NoiseCalibration::NoiseMultiplier(1.3),
            )
            .with_accountant(accountant),
            RandomnessSource::Seeded(11),
        )
        .unwrap()
    };
    let (mut pld_engine, mut rdp_engine) = (make(AccountantKind::Pld), make(AccountantKind::Rdp));
    let start = Mlp::<B>::new(&Default::default());
    // Reading the layout initialises the lazy parameters, so that both runs start equal.
    assert_eq!(ParamLayout::of(&start).num_values(), 44);
    let mut log = Vec::new();
    let mut nets = Vec::new();
    for engine in [&mut pld_engine, &mut rdp_engine] {
        let mut net = start.clone();
        let mut optimizer = SgdConfig::new().init();
        log.clear();
        for step in 0..9usize {
            // Three sampling rates, as a growing dataset gives.
            let (n, q) = [(40, 0.25), (40, 0.5), (20, 0.125)][step % 3];
            engine.set_sampling(n, q).unwrap();
            net = engine
                .step(net, &mut optimizer, 0.05, &Traced(&loss))
                .unwrap();
            log.push(SubsampledGaussianSteps {
                sample_rate: q,
                noise_multiplier: 1.3,
                steps: 1,
            });
        }
        nets.push(host(net.out.weight.val()));
    }
    assert_eq!(nets[0], nets[1], "the accountant does not touch the run");
    let independent =
        privrl_privacy::schedule_epsilon(&log, Adjacency::AddRemove, 1e-5, &PldConfig::default())
            .unwrap();
    let pld_eps = pld_engine.epsilon().unwrap();
    assert!(
        (pld_eps - independent).abs() <= 1e-12 * independent,
        "{pld_eps} vs {independent}"
    );
    assert_eq!(pld_engine.epsilon().unwrap(), pld_eps, "asked again");
    let rdp_eps = rdp_engine.epsilon().unwrap();
    assert!(pld_eps <= rdp_eps, "PLD {pld_eps} above RDP {rdp_eps}");
    assert!(
        pld_eps > 0.5 * rdp_eps,
        "PLD {pld_eps} against RDP {rdp_eps}"
    );
    // The same schedule by the other accountant, on request.
    assert_eq!(
        pld_engine
            .schedule()
            .epsilon_by(AccountantKind::Rdp)
            .unwrap(),
        rdp_eps
    );
    assert!(pld_engine.label().ends_with("PLD accountant"));
    assert!(rdp_engine.label().ends_with("RDP accountant"));

    // Checkpoint round trip.
    let saved = serde_json::to_string(&pld_engine.state()).unwrap();
    assert!(saved.contains("\"accountant\":\"pld\""), "{saved}");
    let mut resumed = make(AccountantKind::Pld);
    resumed
        .restore(&serde_json::from_str(&saved).unwrap())
        .unwrap();
    assert_eq!(resumed.epsilon().unwrap(), pld_eps);
    assert_eq!(resumed.state(), pld_engine.state());
    let refused = make(AccountantKind::Rdp).restore(&serde_json::from_str(&saved).unwrap());
    assert!(refused.is_err(), "a PLD state restored into an RDP engine");
    assert!(make(AccountantKind::Pld)
        .restore(&rdp_engine.state())
        .is_err());
    // A state saved before the accountant was recorded: RDP, the only one then.
    let old = serde_json::to_string(&rdp_engine.state())
        .unwrap()
        .replace(",\"accountant\":\"rdp\"", "");
    assert!(!old.contains("accountant"), "{old}");
    let mut from_old = make(AccountantKind::Rdp);
    from_old
        .restore(&serde_json::from_str(&old).unwrap())
        .unwrap();
    assert_eq!(from_old.epsilon().unwrap(), rdp_eps);
}

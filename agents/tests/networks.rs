//! The shared networks and agent plumbing: the multimodal victim's inspectable linear part,
//! host copies, dropout masks, `fast_tanh`, typed config errors, and agents on the
//! multimodal network.

use burn::backend::{Autodiff, NdArray};
use burn::module::AutodiffModule;
use burn::tensor::{Distribution, Tensor, TensorData};
use privrl_agents::fast_tanh;
use privrl_agents::{
    ActMode, Activation, Agent, AgentError, ConvEncoderConfig, Dqn, DqnConfig, HostMlp, MlpConfig,
    MultimodalNet, MultimodalNetConfig, Network, Ppo, PpoConfig, Reinforce, ReinforceConfig,
};
use privrl_envs::{Env, EnvError, Image, MultimodalObs, Obs, Space, Step};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

type B = Autodiff<NdArray>;

fn values(t: Tensor<B, 2>) -> Vec<f32> {
    t.into_data().to_vec::<f32>().unwrap()
}

fn victim(device: &burn::backend::ndarray::NdArrayDevice) -> MultimodalNet<B> {
    MultimodalNetConfig::new(4, 7)
        .with_rgb(Some(ConvEncoderConfig::new(3, 8)))
        .with_depth(Some(ConvEncoderConfig::new(1, 8).with_channels(vec![4])))
        .with_vector_hidden(vec![6])
        .with_head_hidden(vec![10])
        .init(device, &mut ChaCha8Rng::seed_from_u64(0))
}

#[test]
fn multimodal_net_exposes_its_linear_part() {
    let device = Default::default();
    let net = victim(&device);
    // RGB 8×8 → 8 channels 4×4 → 16 channels 2×2 = 64 features; depth 8×8 → 4 channels 4×4 = 64.
    assert_eq!(net.rgb.as_ref().unwrap().d_output, 64);
    assert_eq!(net.depth.as_ref().unwrap().d_output, 64);
    let dims: Vec<(usize, usize)> = net.linear_layers().iter().map(|l| l.dims()).collect();
    assert_eq!(dims, vec![(4, 6), (64 + 64 + 6, 10), (10, 7)]);
    assert_eq!(net.last_layer().dims(), (10, 7));
    assert_eq!(net.flat_obs_len(), 3 * 64 + 64 + 4);

    let rgb = Tensor::<B, 4>::random([2, 3, 8, 8], Distribution::Default, &device);
    let depth = Tensor::<B, 4>::random([2, 1, 8, 8], Distribution::Default, &device);
    let vector = Tensor::<B, 2>::random([2, 4], Distribution::Default, &device);
    let (out, inputs) =
        net.forward_with_linear_inputs(Some(rgb.clone()), Some(depth.clone()), vector.clone());
    assert_eq!(out.dims(), [2, 7]);
    assert_eq!(
        values(inputs.vector_branch[0].clone()),
        values(vector.clone()),
        "stage-1 input is s_c"
    );
    assert_eq!(inputs.head[0].dims(), [2, 134]);
    assert_eq!(
        values(inputs.head[0].clone()),
        values(net.features(Some(rgb.clone()), Some(depth.clone()), vector.clone()))
    );
    // The last layer's input times its weight plus bias is the output.
    let last = net.last_layer().forward(inputs.head[1].clone());
    assert_eq!(values(last), values(out.clone()));

    // The flat layout of `Obs::write_flat` (RGB, depth, vector) gives the same output.
    let flat = Tensor::cat(
        vec![rgb.reshape([2, 192]), depth.reshape([2, 64]), vector],
        1,
    );
    assert_eq!(values(net.forward_flat(flat)), values(out));
}

#[test]
fn gradient_reaches_every_multimodal_parameter() {
    privrl_agents::autodiff::exclusive(|| {
        let device = Default::default();
        let net = victim(&device);
        let x = Tensor::<B, 2>::random([3, net.flat_obs_len()], Distribution::Default, &device);
        let loss = net.forward_flat(x).powi_scalar(2).sum();
        let record = privrl_agents::GradientRecord::from_grads(&net, &loss.backward());
        let names = record.names();
        for expected in [
            "rgb.convs.0.weight",
            "rgb.convs.1.bias",
            "depth.convs.0.weight",
            "vector_layers.0.weight",
            "head.layers.1.bias",
        ] {
            assert!(
                names.contains(&expected),
                "{expected} missing from {names:?}"
            );
        }
        assert_eq!(record.num_values(), burn::module::Module::num_params(&net));
    });
}

#[test]
fn host_copy_matches_the_tensor_forward() {
    let device = Default::default();
    // The host copy reads every parameter in one transfer and splits it: with and without
    // biases, the split must land each value in its own layer.
    for (activation, bias) in [
        (Activation::Tanh, true),
        (Activation::Relu, true),
        (Activation::Tanh, false),
    ] {
        let mlp = MlpConfig::new(4, vec![16, 8], 3)
            .with_activation(activation)
            .with_bias(bias)
            .init::<B>(&device, &mut ChaCha8Rng::seed_from_u64(1));
        let host = HostMlp::from_mlp(&mlp);
        let x = [0.3f32, -1.2, 2.5, 0.01];
        let tensor = values(mlp.forward_flat(Tensor::from_data(
            TensorData::new(x.to_vec(), [1, 4]),
            &device,
        )));
        for (a, b) in host.forward(&x).iter().zip(&tensor) {
            assert!(
                (a - b).abs() < 1e-5,
                "{activation:?}: host {a} vs tensor {b}"
            );
        }
        // With a dropout mask on the first hidden layer, host and tensor agree too.
        let mask: Vec<f32> = (0..16)
            .map(|i| if i % 3 == 0 { 0.0 } else { 2.0 })
            .collect();
        let mut out = Vec::new();
        host.forward_into(&x, std::slice::from_ref(&mask), &mut out);
        let masked = values(mlp.forward_with_masks(
            Tensor::from_data(TensorData::new(x.to_vec(), [1, 4]), &device),
            &[Tensor::from_data(TensorData::new(mask, [1, 16]), &device)],
        ));
        for (a, b) in out.iter().zip(&masked) {
            assert!((a - b).abs() < 1e-5);
        }
    }
}

#[test]
fn fast_tanh_matches_tanh_and_its_derivative() {
    privrl_agents::autodiff::exclusive(|| {
        let device = Default::default();
        let x = Tensor::<B, 1>::from_data(
            TensorData::new(
                vec![
                    -100.0f32, -30.0, -4.0, -0.5, -1e-4, 0.0, 1e-3, 0.7, 3.0, 12.0, 100.0,
                ],
                [11],
            ),
            &device,
        )
        .require_grad();
        let y = fast_tanh(x.clone());
        let grad = x
            .grad(&y.clone().sum().backward())
            .unwrap()
            .into_data()
            .to_vec::<f32>()
            .unwrap();
        let y = y.into_data().to_vec::<f32>().unwrap();
        let xs = [
            -100.0f32, -30.0, -4.0, -0.5, -1e-4, 0.0, 1e-3, 0.7, 3.0, 12.0, 100.0,
        ];
        for ((x, y), g) in xs.iter().zip(&y).zip(&grad) {
            assert!((y - x.tanh()).abs() < 2e-7, "tanh({x}) = {y}");
            assert!(
                (g - (1.0 - x.tanh().powi(2))).abs() < 1e-6,
                "tanh'({x}) = {g}"
            );
        }
    });
}

/// PPO trains its critic with the hand-written backward: it must give autodiff's gradient,
/// for both activations, with and without biases, and with outputs beyond the first.
#[test]
fn squared_error_gradient_matches_autodiff() {
    let device = Default::default();
    for (activation, bias, outputs) in [
        (Activation::Tanh, true, 1),
        (Activation::Relu, true, 1),
        (Activation::Tanh, false, 3),
    ] {
        let mlp = MlpConfig::new(5, vec![16, 8], outputs)
            .with_activation(activation)
            .with_bias(bias)
            .init::<B>(&device, &mut ChaCha8Rng::seed_from_u64(4));
        let mut rng = ChaCha8Rng::seed_from_u64(5);
        let obs: Vec<f32> = (0..40 * 5).map(|_| rng.random_range(-2.0..2.0)).collect();
        let targets: Vec<f32> = (0..40).map(|_| rng.random_range(-3.0..3.0)).collect();
        let x = Tensor::<B, 2>::from_data(TensorData::new(obs, [40, 5]), &device);
        let y = Tensor::<B, 1>::from_data(TensorData::new(targets, [40]), &device);
        let (loss, mut by_hand) = Network::<NdArray>::squared_error_gradient(
            &mlp.valid(),
            x.clone().inner(),
            y.clone().inner(),
        )
        .expect("an Mlp has a hand-written gradient");
        privrl_agents::autodiff::exclusive(|| {
            let output = mlp.forward(x).narrow(1, 0, 1).squeeze_dim::<1>(1);
            let autodiff_loss = (output - y).powi_scalar(2).mean();
            let expected = autodiff_loss.clone().into_scalar();
            assert!(
                (loss - f64::from(expected)).abs() < 1e-5 * loss,
                "{loss} vs {expected}"
            );
            let grads = autodiff_loss.backward();
            let mut checked = 0;
            for layer in &mlp.layers {
                let want = layer.weight.val().grad(&grads).unwrap();
                let got = by_hand.remove::<NdArray, 2>(layer.weight.id).unwrap();
                assert_close(&values_inner(got), &values_inner(want), activation);
                checked += 1;
                if let Some(b) = &layer.bias {
                    let want = b.val().grad(&grads).unwrap();
                    let got = by_hand.remove::<NdArray, 1>(b.id).unwrap();
                    assert_close(&values_inner(got), &values_inner(want), activation);
                    checked += 1;
                }
            }
            assert_eq!(checked, if bias { 6 } else { 3 });
        });
    }
}

fn values_inner<const D: usize>(t: Tensor<NdArray, D>) -> Vec<f32> {
    t.into_data().to_vec::<f32>().unwrap()
}

fn assert_close(got: &[f32], want: &[f32], activation: Activation) {
    assert_eq!(got.len(), want.len());
    let scale = want.iter().fold(0f32, |m, v| m.max(v.abs())).max(1e-3);
    for (g, w) in got.iter().zip(want) {
        assert!((g - w).abs() <= 1e-5 * scale, "{activation:?}: {g} vs {w}");
    }
}

#[test]
fn invalid_configs_name_the_parameter() {
    let device = Default::default();
    let env = || privrl_envs::make("CartPole-v1").unwrap();
    let err = Ppo::<B>::new(PpoConfig::new().with_clip_ratio(-0.1), env(), &device, 0)
        .err()
        .unwrap();
    assert!(
        matches!(
            err,
            AgentError::InvalidParameter {
                name: "clip_ratio",
                ..
            }
        ),
        "{err}"
    );
    assert!(
        err.to_string().contains("clip_ratio") && err.to_string().contains("> 0"),
        "{err}"
    );
    let err = Dqn::<B>::new(DqnConfig::new().with_gamma(1.5), env(), &device, 0)
        .err()
        .unwrap();
    assert!(
        err.to_string().contains("gamma") && err.to_string().contains("[0, 1]"),
        "{err}"
    );
    let err = Reinforce::<B>::new(ReinforceConfig::new().with_dropout(1.0), env(), &device, 0)
        .err()
        .unwrap();
    assert!(err.to_string().contains("dropout"), "{err}");
    // A network that does not fit the environment.
    let wrong = MlpConfig::new(5, vec![8], 2).init::<B>(&device, &mut ChaCha8Rng::seed_from_u64(0));
    let err = Dqn::<B, _>::with_network(
        DqnConfig::new(),
        wrong,
        env(),
        &device,
        ChaCha8Rng::seed_from_u64(0),
    )
    .err()
    .unwrap();
    assert!(
        matches!(
            err,
            AgentError::ShapeMismatch {
                expected: 4,
                got: 5,
                ..
            }
        ),
        "{err}"
    );
}

#[test]
fn same_seed_same_numbers() {
    // Same seed: the same initial networks, the same rollout, the same losses before the
    // update. (Updated parameters can differ in the last bits between two runs: Burn 0.21's
    // autodiff merges graphs in hash-map order with a random hasher, which can change the
    // order in which gradient contributions are summed.)
    let device = Default::default();
    let run = |seed| {
        let config = PpoConfig::new()
            .with_steps_per_epoch(200)
            .with_train_pi_iters(3)
            .with_train_v_iters(3);
        let mut ppo = Ppo::<B>::new(
            config,
            privrl_envs::make("CartPole-v1").unwrap(),
            &device,
            seed,
        )
        .unwrap();
        let initial = HostMlp::from_mlp(ppo.actor());
        let batch = ppo.collect_rollout().unwrap();
        let stats = ppo.update(&batch).unwrap();
        (initial, batch, stats.loss_pi, stats.loss_v, stats.entropy)
    };
    assert_eq!(run(7), run(7));
    assert_ne!(run(7).1, run(8).1);
}

/// A tiny multimodal environment: the agent sees an 8×8 RGB-D image with a bright spot and a
/// 4-vector, and is rewarded for the action that matches the spot's quadrant.
struct SpotEnv {
    rng: ChaCha8Rng,
    quadrant: usize,
    steps: usize,
}

impl SpotEnv {
    fn obs(&self) -> Obs {
        let mut rgb = vec![0.0f32; 3 * 64];
        let (row, col) = ((self.quadrant / 2) * 4 + 1, (self.quadrant % 2) * 4 + 1);
        for c in 0..3 {
            rgb[c * 64 + row * 8 + col] = 1.0;
        }
        Obs::Multimodal(MultimodalObs {
            rgb: Some(Image {
                channels: 3,
                height: 8,
                width: 8,
                data: rgb,
            }),
            depth: Some(Image {
                channels: 1,
                height: 8,
                width: 8,
                data: vec![0.5; 64],
            }),
            vector: vec![self.quadrant as f32 / 3.0, 0.0, 1.0, 0.0],
        })
    }
}

impl Env for SpotEnv {
    fn id(&self) -> &str {
        "spot"
    }
    fn observation_space(&self) -> Space {
        Space::Box {
            low: vec![0.0; 260],
            high: vec![1.0; 260],
        }
    }
    fn action_space(&self) -> Space {
        Space::Discrete { n: 4 }
    }
    fn reset(&mut self, seed: Option<u64>) -> Obs {
        if let Some(seed) = seed {
            self.rng = ChaCha8Rng::seed_from_u64(seed);
        }
        self.quadrant = self.rng.random_range(0..4);
        self.steps = 0;
        self.obs()
    }
    fn step(&mut self, action: usize) -> Result<Step, EnvError> {
        let reward = if action == self.quadrant { 1.0 } else { 0.0 };
        self.steps += 1;
        self.quadrant = self.rng.random_range(0..4);
        Ok(Step {
            obs: self.obs(),
            reward,
            terminated: false,
            truncated: self.steps >= 8,
        })
    }
    fn set_state(&mut self, _state: &[f64]) -> Result<Obs, EnvError> {
        Ok(self.obs())
    }
    fn max_episode_steps(&self) -> Option<usize> {
        Some(8)
    }
}

fn spot_env() -> Box<dyn Env> {
    Box::new(SpotEnv {
        rng: ChaCha8Rng::seed_from_u64(0),
        quadrant: 0,
        steps: 0,
    })
}

#[test]
fn agents_run_on_the_multimodal_victim() {
    let device = Default::default();
    let q = MultimodalNetConfig::new(4, 4)
        .with_rgb(Some(ConvEncoderConfig::new(3, 8).with_channels(vec![4])))
        .with_depth(Some(ConvEncoderConfig::new(1, 8).with_channels(vec![2])))
        .with_vector_hidden(vec![8])
        .with_head_hidden(vec![16])
        .init::<B>(&device, &mut ChaCha8Rng::seed_from_u64(0));
    let config = DqnConfig::new()
        .with_steps_per_epoch(100)
        .with_learning_starts(32)
        .with_batch_size(8)
        .with_target_update_interval(20);
    let mut dqn =
        Dqn::<B, _>::with_network(config, q, spot_env(), &device, ChaCha8Rng::seed_from_u64(1))
            .unwrap();
    dqn.train_epoch().unwrap();
    let batch = dqn.replay().sample(1, &mut ChaCha8Rng::seed_from_u64(2));
    // A single-sample gradient, as QGI inverts: only the taken action's output bias moves.
    let record = dqn.gradient(&batch).unwrap();
    let bias = &record.get("head.layers.1.bias").unwrap().values;
    let nonzero: Vec<usize> = (0..4).filter(|&a| bias[a] != 0.0).collect();
    assert_eq!(nonzero, vec![batch.actions[0]]);
    let obs = spot_env().reset(Some(3)).to_flat();
    assert!(dqn.act(&obs, ActMode::Greedy) < 4);

    let policy = MultimodalNetConfig::new(4, 4)
        .with_rgb(Some(ConvEncoderConfig::new(3, 8).with_channels(vec![4])))
        .with_depth(Some(ConvEncoderConfig::new(1, 8).with_channels(vec![2])))
        .init::<B>(&device, &mut ChaCha8Rng::seed_from_u64(3));
    let mut reinforce = Reinforce::<B, _>::with_network(
        ReinforceConfig::new().with_entropy_coef(0.01),
        policy,
        spot_env(),
        &device,
        ChaCha8Rng::seed_from_u64(4),
    )
    .unwrap();
    let stats = reinforce.train_epoch().unwrap();
    assert_eq!(stats.env_steps, 8);
    let episode = reinforce.collect_episode().unwrap();
    assert_eq!(episode.obs.len(), 8 * 260);
    assert!(reinforce.gradient(&episode).unwrap().num_values() > 0);
}

#[test]
fn pgc_paper_network_has_112_parameters() {
    // θ^(c) ∈ R^{16×4}, θ^(p) ∈ R^{2×16}, θ^(v) ∈ R^{1×16}: d = 112 (PGC paper, section 4).
    let a3c = privrl_agents::A3c::<B>::for_env(
        privrl_agents::A3cConfig::pgc_paper().with_workers(1),
        "CartPole-v1",
        &Default::default(),
        0,
    )
    .unwrap();
    assert_eq!(burn::module::Module::num_params(&a3c.model()), 112);
}

#[test]
fn im2col_convolution_matches_burns_conv2d() {
    use burn::tensor::module::conv2d;
    use burn::tensor::ops::ConvOptions;
    let device = Default::default();
    // (stride, padding, kernel) on a non-square batch of 2, including a stride that does not
    // divide the padded size.
    for (stride, padding, kernel) in [(1, 0, 3), (2, 1, 3), (3, 2, 5), (2, 0, 1)] {
        let x = Tensor::<NdArray, 4>::random([2, 3, 11, 8], Distribution::Default, &device);
        let w = Tensor::<NdArray, 4>::random(
            [4, 3, kernel, kernel],
            Distribution::Normal(0.0, 1.0),
            &device,
        );
        let b = Tensor::<NdArray, 1>::random([4], Distribution::Normal(0.0, 1.0), &device);
        let options = ConvOptions::new([stride, stride], [padding, padding], [1, 1], 1);
        let expected = conv2d(x.clone(), w.clone(), Some(b.clone()), options);
        let got = privrl_agents::conv2d_im2col(x, w, b, stride, padding);
        assert_eq!(
            got.dims(),
            expected.dims(),
            "stride {stride} padding {padding}"
        );
        let error = (got - expected).abs().max().into_scalar();
        assert!(error < 1e-5, "stride {stride} padding {padding}: {error}");
    }
}

//! DP-SGD REINFORCE and DQN, their accounting, and the noisy-observation wrapper: without
//! noise or clipping DP-SGD is a plain step; clipped per-sample norms stay within C; the noise
//! has standard deviation σ·C/batch; ε matches the RDP accountant; observation noise has
//! standard deviation σ·IQR.

use burn::backend::{Autodiff, NdArray};
use burn::module::Module;
use burn::tensor::Tensor;
use privrl_agents::dp::private_td_gradient;
use privrl_agents::{
    AgentError, DpSgdTrainingConfig, Dqn, DqnConfig, GradientRecord, Mlp, PrivacyTally,
    PrivacyUnit, Reinforce, ReinforceConfig, TdLoss, TransitionBatch,
};
use privrl_agents::{DpSgdDqn, DpSgdReinforce, NoisyObservationEnv};
use privrl_envs::Env;
use privrl_privacy::{
    clip_l2, dp_sgd_epsilon, dp_sgd_epsilon_under, AccountantKind, Adjacency,
    BoundedObservationNoiseConfig, GradientMechanism, NoiseMode, ObservationNoiseConfig,
    RandomnessSource,
};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

type B = Autodiff<NdArray>;

fn cartpole() -> Box<dyn Env> {
    privrl_envs::make("CartPole-v1").unwrap()
}

fn flat_params(mlp: &Mlp<B>) -> Vec<f32> {
    let mut out = Vec::new();
    for layer in &mlp.layers {
        let values = |t: Tensor<B, 1>| t.into_data().convert::<f32>().into_vec::<f32>().unwrap();
        out.extend(values(layer.weight.val().flatten(0, 1)));
        if let Some(bias) = &layer.bias {
            out.extend(values(bias.val()));
        }
    }
    out
}

/// A DQN (3-layer MLP, hidden 128 as in the slides) with `steps` transitions in its buffer
/// and no gradient step taken yet.
fn dqn_with_transitions(steps: usize) -> Dqn<B> {
    let config = DqnConfig::new().with_learning_starts(1_000_000);
    let mut dqn = Dqn::<B>::new(config, cartpole(), &Default::default(), 3).unwrap();
    for _ in 0..steps {
        dqn.step().unwrap();
    }
    dqn
}

fn batch(dqn: &Dqn<B>, size: usize) -> TransitionBatch {
    let indices: Vec<usize> = (0..size).map(|i| (i * 7) % dqn.replay().len()).collect();
    dqn.replay().gather(&indices)
}

fn config(noise_multiplier: f64, clip: Option<f64>) -> DpSgdTrainingConfig {
    DpSgdTrainingConfig::new()
        .with_noise_multiplier(noise_multiplier)
        .with_clip(clip)
}

/// One record's gradient through the mechanism, as DP-SGD REINFORCE releases an episode's.
fn release_record(
    mechanism: &dyn GradientMechanism,
    gradient: &GradientRecord,
    rng: &mut ChaCha8Rng,
) -> GradientRecord {
    let released = mechanism.release(&gradient.flatten(), rng).unwrap();
    gradient.with_flat(&released).unwrap()
}

fn max_abs_diff(a: &[f32], b: &[f32]) -> f32 {
    assert_eq!(a.len(), b.len());
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f32::max)
}

#[test]
fn dp_sgd_without_noise_or_clipping_equals_a_plain_step() {
    // REINFORCE: the same seed plays the same episode; one plain Adam step against one
    // DP-SGD step with σ = 0 and no clipping.
    let reinforce =
        || Reinforce::<B>::new(ReinforceConfig::new(), cartpole(), &Default::default(), 5).unwrap();
    let mut plain = reinforce();
    let episode = plain.collect_episode().unwrap();
    plain.update(&episode).unwrap();
    let mut private = DpSgdReinforce::new(reinforce(), &config(0.0, None), 0).unwrap();
    let episode_return = private.train_episode().unwrap();
    assert_eq!(episode_return, episode.rewards.len() as f64);
    let (a, b) = (
        flat_params(plain.policy()),
        flat_params(private.agent().policy()),
    );
    // Identical up to the order in which Burn's autodiff sums contributions (last bits).
    assert!(max_abs_diff(&a, &b) <= 1e-6, "{}", max_abs_diff(&a, &b));
    assert_eq!(private.epsilon().unwrap(), f64::INFINITY);

    // DQN: the per-sample DP-SGD gradient with σ = 0, no clipping and L = |B| is the gradient
    // of the mean TD loss.
    let dqn = dqn_with_transitions(300);
    let batch = batch(&dqn, 64);
    let expected = dqn.gradient(&batch).unwrap();
    let mechanism = config(0.0, None).build(expected.num_values()).unwrap();
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    let (got, loss) =
        private_td_gradient(&dqn, &batch, mechanism.as_ref(), 64.0, &mut rng).unwrap();
    assert!(loss.is_finite() && loss > 0.0);
    assert_eq!(got.names(), expected.names());
    let scale = expected
        .flatten()
        .iter()
        .fold(0.0f32, |m, x| m.max(x.abs()));
    let diff = max_abs_diff(&got.flatten(), &expected.flatten());
    assert!(diff <= 1e-5 * scale.max(1.0), "diff {diff}, scale {scale}");
}

#[test]
fn clipped_per_sample_norms_never_exceed_c() {
    let dqn = dqn_with_transitions(300);
    let clip = 0.05;
    let mut rng = ChaCha8Rng::seed_from_u64(2);
    let mut clipped_count = 0;
    for i in 0..40 {
        let one = dqn.replay().gather(&[i * 5]);
        let norm = |mechanism| {
            let dim = dqn.q_network().num_params();
            let mechanism = match mechanism {
                true => config(0.0, Some(clip)).build(dim).unwrap(),
                false => config(0.0, None).build(dim).unwrap(),
            };
            let (g, _) =
                private_td_gradient(&dqn, &one, mechanism.as_ref(), 1.0, &mut rng.clone()).unwrap();
            g.l2_norm()
        };
        let (raw, after) = (norm(false), norm(true));
        assert!(
            after <= clip * (1.0 + 1e-5),
            "sample {i}: {after} > C = {clip}"
        );
        if raw > clip {
            clipped_count += 1;
            assert!((after - clip).abs() <= 1e-5 * clip, "{after} vs C");
        } else {
            assert!(
                (after - raw).abs() <= 1e-6 * raw.max(1e-12),
                "{after} vs {raw}"
            );
        }
    }
    assert!(clipped_count > 0, "C too large to clip anything");

    // The summed clipped gradient of a batch is at most |B|·C, and REINFORCE's episode
    // gradient is clipped to C as a whole.
    let dim = dqn.q_network().num_params();
    let mechanism = config(0.0, Some(clip)).build(dim).unwrap();
    let (mean, _) =
        private_td_gradient(&dqn, &batch(&dqn, 50), mechanism.as_ref(), 1.0, &mut rng).unwrap();
    assert!(mean.l2_norm() <= 50.0 * clip * (1.0 + 1e-5));
    let mut agent =
        Reinforce::<B>::new(ReinforceConfig::new(), cartpole(), &Default::default(), 0).unwrap();
    let episode = agent.collect_episode().unwrap();
    let gradient = agent.gradient(&episode).unwrap();
    let mechanism = config(0.0, Some(clip))
        .build(gradient.num_values())
        .unwrap();
    let private = release_record(mechanism.as_ref(), &gradient, &mut rng);
    assert!(gradient.l2_norm() > clip);
    assert!((private.l2_norm() - clip).abs() <= 1e-5 * clip);
}

#[test]
fn noise_std_matches_sigma_c_over_batch() {
    let dqn = dqn_with_transitions(300);
    let batch = batch(&dqn, 64);
    let (sigma, clip, expected_batch) = (1.5, 0.1, 64.0);
    let dim = dqn.q_network().num_params();
    let noisy = config(sigma, Some(clip)).build(dim).unwrap();
    let quiet = config(0.0, Some(clip)).build(dim).unwrap();
    let mut rng = ChaCha8Rng::seed_from_u64(4);
    let (with_noise, _) =
        private_td_gradient(&dqn, &batch, noisy.as_ref(), expected_batch, &mut rng).unwrap();
    let (without, _) =
        private_td_gradient(&dqn, &batch, quiet.as_ref(), expected_batch, &mut rng).unwrap();
    let noise: Vec<f64> = with_noise
        .flatten()
        .iter()
        .zip(without.flatten())
        .map(|(a, b)| f64::from(a - b))
        .collect();
    let n = noise.len() as f64;
    let mean = noise.iter().sum::<f64>() / n;
    let std = (noise.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n).sqrt();
    let target = sigma * clip / expected_batch;
    // d ≈ 17.5k values: the sample std is within ~1.1% (2σ) of the truth; allow 3%.
    assert!(dim > 10_000);
    assert!(
        (std / target - 1.0).abs() < 0.03,
        "std {std} vs σC/L = {target}"
    );
    assert!(mean.abs() < 3.0 * target / n.sqrt(), "mean {mean}");

    // REINFORCE: L = 1, so the noise on the clipped episode gradient has std σ·C.
    let agent =
        Reinforce::<B>::new(ReinforceConfig::new(), cartpole(), &Default::default(), 0).unwrap();
    let mut agent = agent;
    let episode = agent.collect_episode().unwrap();
    let gradient = agent.gradient(&episode).unwrap();
    let clean = config(0.0, Some(clip))
        .build(gradient.num_values())
        .unwrap();
    let noisy = config(sigma, Some(clip))
        .build(gradient.num_values())
        .unwrap();
    let a = release_record(noisy.as_ref(), &gradient, &mut rng).flatten();
    let b = release_record(clean.as_ref(), &gradient, &mut rng).flatten();
    let noise: Vec<f64> = a.iter().zip(&b).map(|(x, y)| f64::from(x - y)).collect();
    let n = noise.len() as f64;
    let std = (noise.iter().map(|x| x * x).sum::<f64>() / n).sqrt();
    // d = 898 values: the sample std is within ~5% (2σ) of the truth; allow 8%.
    assert!((std / (sigma * clip) - 1.0).abs() < 0.08, "std {std} vs σC");
}

#[test]
fn epsilon_follows_the_rdp_accountant() {
    let delta = 1e-5;
    // REINFORCE: one release per episode-record at q = 1.
    let agent =
        Reinforce::<B>::new(ReinforceConfig::new(), cartpole(), &Default::default(), 0).unwrap();
    let mut private = DpSgdReinforce::new(agent, &config(1.0, Some(1.0)), 0).unwrap();
    assert_eq!(private.epsilon().unwrap(), 0.0);
    for _ in 0..3 {
        private.train_episode().unwrap();
    }
    let one = dp_sgd_epsilon(1.0, 1.0, 1, delta).unwrap();
    assert!((private.epsilon().unwrap() - one).abs() < 1e-12);
    let three = dp_sgd_epsilon(1.0, 1.0, 3, delta).unwrap();
    assert!((private.epsilon_if_every_step().unwrap() - three).abs() < 1e-12);

    // Sampling rates are accounted exactly (no grid): Opacus' ε at that q.
    let (q, sigma, steps) = (0.0123, 1.1, 500);
    let mut tally = PrivacyTally::new(PrivacyUnit::Transition, sigma, delta);
    tally.record(q, steps / 2);
    tally.record(q, steps - steps / 2);
    assert_eq!(tally.schedule().blocks().len(), 1, "equal steps merge");
    let eps = tally.epsilon().unwrap();
    let exact = dp_sgd_epsilon(q, sigma, steps, delta).unwrap();
    assert!((eps - exact).abs() < 1e-9 * exact, "{eps} vs {exact}");

    // DQN: one release per gradient step, at q_t = |B| / n_t.
    let dqn_config = DqnConfig::new()
        .with_learning_starts(200)
        .with_batch_size(32)
        .with_hidden(vec![32, 32]);
    let dqn = Dqn::<B>::new(dqn_config.clone(), cartpole(), &Default::default(), 0).unwrap();
    let mut private = DpSgdDqn::new(dqn, &config(1.0, Some(1.0)), 0).unwrap();
    for _ in 0..260 {
        private.step().unwrap();
    }
    // The schedule alone predicts the run's tally.
    assert_eq!(
        private.tally(),
        PrivacyTally::dqn_schedule(&dqn_config, 260, 1.0, delta)
    );
    assert_eq!(private.tally().steps(), private.agent().updates());
    assert_eq!(private.tally().steps(), 61);
    let eps = private.epsilon().unwrap();
    // Bounded by 61 steps at the largest rate used (32/200) and above 61 at the smallest.
    let high = dp_sgd_epsilon(32.0 / 200.0, 1.0, 61, delta).unwrap();
    let low = dp_sgd_epsilon(32.0 / 260.0, 1.0, 61, delta).unwrap();
    assert!(low < eps && eps < high, "{low} < {eps} < {high}");
}

/// The DP-SGD suite's DQN schedule (a buffer that fills, then slides; a gradient step every
/// second environment step): the run's tally equals the schedule's, and its ε is the RDP
/// composition of the per-step rates, recomputed here step by step without the tally, exactly.
/// A constant q = |B|/capacity understates it.
#[test]
fn dqn_epsilon_composes_the_sampling_rate_of_every_step() {
    let delta = 1e-5;
    let dqn_config = DqnConfig::new()
        .with_learning_starts(40)
        .with_batch_size(16)
        .with_buffer_capacity(120)
        .with_train_frequency(2)
        .with_hidden(vec![16]);
    let steps = 400u64;
    let dqn = Dqn::<B>::new(dqn_config.clone(), cartpole(), &Default::default(), 1).unwrap();
    let mut private = DpSgdDqn::new(dqn, &config(0.8, Some(1.0)), 1).unwrap();
    for _ in 0..steps {
        private.step().unwrap();
    }
    let predicted = PrivacyTally::dqn_schedule(&dqn_config, steps, 0.8, delta);
    assert_eq!(private.tally(), predicted);
    assert_eq!(
        predicted.steps(),
        (40..=400).filter(|t| t % 2 == 0).count() as u64
    );

    // Independently: q_t = min(1, 16 / min(t, 120)) at every even t ≥ 40, one accountant step
    // per gradient step.
    let mut accountant = privrl_privacy::RdpAccountant::new(delta).unwrap();
    for t in (40..=steps).filter(|t| t % 2 == 0) {
        accountant
            .step((16.0 / t.min(120) as f64).min(1.0), 0.8, 1)
            .unwrap();
    }
    let exact = accountant.epsilon(delta).unwrap().0;
    let eps = private.epsilon().unwrap();
    assert!((eps - exact).abs() < 1e-9 * exact, "{eps} vs {exact}");
    let constant = dp_sgd_epsilon(16.0 / 120.0, 0.8, predicted.steps(), delta).unwrap();
    assert!(eps > constant * 1.05, "{eps} vs constant-q {constant}");
}

#[test]
fn invalid_parameters_are_named() {
    let name = |r: Result<_, AgentError>| match r {
        Err(AgentError::InvalidParameter { name, .. }) => name,
        Err(e) => panic!("unexpected error {e}"),
        Ok(_) => panic!("accepted an invalid config"),
    };
    assert_eq!(name(config(1.0, None).build(10)), "clip");
    assert_eq!(name(config(-1.0, Some(1.0)).build(10)), "noise_multiplier");
    assert_eq!(name(config(0.0, Some(0.0)).build(10)), "clip");
    assert_eq!(
        name(config(1.0, Some(1.0)).with_delta(1.0).build(10)),
        "delta"
    );
}

#[test]
fn observation_noise_has_std_sigma_iqr_and_leaves_rewards_alone() {
    // Warm-up states from a random rollout, as the suite fits them.
    let mut env = cartpole();
    let mut warmup = vec![env.reset(Some(0)).to_flat()];
    let mut rng = ChaCha8Rng::seed_from_u64(0);
    for t in 0..2000usize {
        let step = env.step(rand::Rng::random_range(&mut rng, 0..2)).unwrap();
        warmup.push(step.obs.to_flat());
        if step.done() {
            warmup.push(env.reset(Some(t as u64 + 1)).to_flat());
        }
    }
    let sigma = 0.5;
    let noise = ObservationNoiseConfig { noise_scale: sigma }
        .fit(&warmup)
        .unwrap();
    let std = noise.std().to_vec();
    let mut noisy =
        NoisyObservationEnv::new(cartpole(), noise, RandomnessSource::Seeded(9)).unwrap();
    let mut clean = cartpole();
    let state = [0.01, -0.02, 0.03, 0.04];
    let truth = clean.set_state(&state).unwrap().to_flat();
    let draws = 4000;
    let mut sum = [0.0f64; 4];
    let mut sum_sq = [0.0f64; 4];
    for _ in 0..draws {
        let obs = noisy.set_state(&state).unwrap().to_flat();
        for j in 0..4 {
            let e = f64::from(obs[j] - truth[j]);
            sum[j] += e;
            sum_sq[j] += e * e;
        }
    }
    for j in 0..4 {
        let mean = sum[j] / draws as f64;
        let sd = (sum_sq[j] / draws as f64 - mean * mean).sqrt();
        assert!(std[j] > 0.0);
        assert!(
            (sd / std[j] - 1.0).abs() < 0.05,
            "dim {j}: {sd} vs {}",
            std[j]
        );
        assert!(mean.abs() < 4.0 * std[j] / (draws as f64).sqrt());
    }
    // The dynamics and rewards are the clean environment's.
    let mut obs = vec![0.0; 4];
    noisy.reset_into(Some(3), &mut obs).unwrap();
    clean.reset(Some(3));
    for _ in 0..20 {
        let a = noisy.step_into(1, &mut obs).unwrap();
        let b = clean.step(1).unwrap();
        assert_eq!((a.reward, a.terminated), (b.reward, b.terminated));
        if b.done() {
            break;
        }
    }
}

/// Seeded noise repeats from its seed; secure noise (the OS CSPRNG) does not, whatever the
/// seed: two DP-SGD REINFORCE learners that play the same episode from the same seeds end with
/// equal parameters when seeded and different ones when secure.
#[test]
fn secure_noise_ignores_the_seed_and_seeded_noise_repeats() {
    let after_one_step = |mode: NoiseMode| {
        let agent = Reinforce::<B>::new(ReinforceConfig::new(), cartpole(), &Default::default(), 5)
            .unwrap();
        let config = config(1.0, Some(1.0)).with_noise_rng(mode);
        let mut private = DpSgdReinforce::new(agent, &config, 42).unwrap();
        private.train_episode().unwrap();
        flat_params(private.agent().policy())
    };
    assert_eq!(
        after_one_step(NoiseMode::Seeded),
        after_one_step(NoiseMode::Seeded)
    );
    assert!(
        max_abs_diff(
            &after_one_step(NoiseMode::Secure),
            &after_one_step(NoiseMode::Secure)
        ) > 0.0
    );
}

/// The adjacency chosen in the config reaches every ε, and the label printed beside it names
/// the unit and the relation. One episode at σ = 1, δ = 1e-5: 4.73 add/remove, 10.73
/// substitution (hand-worked in privrl-privacy's adjacency tests).
#[test]
fn adjacency_and_unit_reach_every_epsilon() {
    let reinforce =
        Reinforce::<B>::new(ReinforceConfig::new(), cartpole(), &Default::default(), 0).unwrap();
    let substitution = config(1.0, Some(1.0)).with_adjacency(Adjacency::Substitution);
    let mut private = DpSgdReinforce::new(reinforce, &substitution, 0).unwrap();
    private.train_episode().unwrap();
    let eps = private.epsilon().unwrap();
    assert!((eps - 10.725510).abs() < 1e-5, "{eps}");
    assert_eq!(
        private.tally().label(),
        "per episode, substitution, δ = 0.00001, RDP accountant"
    );
    // The PLD accountant, chosen in the config, gives the agent's ε: never below the exact ε
    // of the Gaussian mechanism at distance 2, 9.9972561 (Balle & Wang 2018, by bisection on
    // their δ(ε)), within its grid's slack (1e-3) above it, and below RDP's 10.7255.
    let reinforce =
        Reinforce::<B>::new(ReinforceConfig::new(), cartpole(), &Default::default(), 0).unwrap();
    let pld = substitution.clone().with_accountant(AccountantKind::Pld);
    let mut private = DpSgdReinforce::new(reinforce, &pld, 0).unwrap();
    private.train_episode().unwrap();
    let eps = private.epsilon().unwrap();
    assert!((9.997256..9.998256).contains(&eps), "{eps}");
    assert_eq!(
        private.tally().label(),
        "per episode, substitution, δ = 0.00001, PLD accountant"
    );

    let dqn_config = DqnConfig::new()
        .with_learning_starts(50)
        .with_batch_size(16)
        .with_hidden(vec![16]);
    let run = |adjacency| {
        let dqn = Dqn::<B>::new(dqn_config.clone(), cartpole(), &Default::default(), 0).unwrap();
        let mut private =
            DpSgdDqn::new(dqn, &config(1.0, Some(1.0)).with_adjacency(adjacency), 0).unwrap();
        for _ in 0..80 {
            private.step().unwrap();
        }
        private
    };
    let (add_remove, substitution) = (run(Adjacency::AddRemove), run(Adjacency::Substitution));
    assert_eq!(
        add_remove.tally().label(),
        "per transition, add/remove, δ = 0.00001, RDP accountant"
    );
    // The same releases, a larger ε under substitution; the schedule carries the relation.
    assert_eq!(add_remove.tally().steps(), substitution.tally().steps());
    assert!(substitution.epsilon().unwrap() > add_remove.epsilon().unwrap());
    assert_eq!(
        substitution.tally(),
        PrivacyTally::dqn_schedule(&dqn_config, 80, 1.0, 1e-5)
            .with_adjacency(Adjacency::Substitution)
    );
}

/// Train N steps, checkpoint, resume in a fresh agent for M steps: the tally, its ε and the
/// saved privacy state (tally and noise-generator position) are those of N + M uninterrupted
/// steps, byte for byte; a fresh tally would have restarted at zero.
#[test]
fn the_privacy_tally_survives_a_checkpoint() {
    let dir = std::env::temp_dir().join(format!("privrl-dp-resume-{}", std::process::id()));
    let (n, m) = (60, 50);
    let dqn_config = DqnConfig::new()
        .with_learning_starts(20)
        .with_batch_size(16)
        .with_buffer_capacity(70)
        .with_hidden(vec![16]);
    let dqn_with = |seed, private_config: &DpSgdTrainingConfig| {
        let dqn = Dqn::<B>::new(dqn_config.clone(), cartpole(), &Default::default(), seed);
        DpSgdDqn::new(dqn.unwrap(), private_config, 5).unwrap()
    };
    let dqn = |seed| dqn_with(seed, &config(0.9, Some(1.0)));
    let mut straight = dqn(2);
    for _ in 0..n + m {
        straight.step().unwrap();
    }
    let mut first = dqn(2);
    for _ in 0..n {
        first.step().unwrap();
    }
    first.save_checkpoint(&dir.join("dqn-n")).unwrap();
    let mut resumed = dqn(2);
    resumed.load_checkpoint(&dir.join("dqn-n")).unwrap();
    assert_eq!(resumed.tally(), first.tally());
    for _ in 0..m {
        resumed.step().unwrap();
    }
    assert_eq!(resumed.tally(), straight.tally());
    assert_eq!(resumed.epsilon().unwrap(), straight.epsilon().unwrap());
    // Adaptive clipping moves C every step: the checkpoint carries it with the releases and
    // the generator, the engine's whole state. (The network's later steps are not compared:
    // the agent's checkpoint does not hold the environment's mid-episode state; the engine
    // alone resumes bit for bit, tests/dp_engine.rs.)
    let adaptive = config(0.9, Some(1.0)).with_adaptive_clip_quantile(Some(0.5));
    let mut moving = dqn_with(2, &adaptive);
    for _ in 0..n {
        moving.step().unwrap();
    }
    assert_ne!(moving.engine().clip(), 1.0);
    moving.save_checkpoint(&dir.join("dqn-adaptive")).unwrap();
    let mut restored = dqn_with(2, &adaptive);
    restored.load_checkpoint(&dir.join("dqn-adaptive")).unwrap();
    assert_eq!(restored.engine().state(), moving.engine().state());
    assert!(resumed.epsilon().unwrap() > first.epsilon().unwrap());
    straight.save_checkpoint(&dir.join("dqn-straight")).unwrap();
    resumed.save_checkpoint(&dir.join("dqn-resumed")).unwrap();
    let state = |run: &str| std::fs::read(dir.join(run).join("dp_sgd.json")).unwrap();
    assert_eq!(state("dqn-straight"), state("dqn-resumed"));

    let reinforce = |l| {
        let agent = Reinforce::<B>::new(ReinforceConfig::new(), cartpole(), &Default::default(), 4);
        let config = config(1.0, Some(1.0)).with_episodes_per_step(l);
        DpSgdReinforce::new(agent.unwrap(), &config, 6).unwrap()
    };
    let mut straight = reinforce(2);
    for _ in 0..5 {
        straight.train_step().unwrap();
    }
    let mut first = reinforce(2);
    for _ in 0..3 {
        first.train_step().unwrap();
    }
    first.save_checkpoint(&dir.join("reinforce-n")).unwrap();
    let mut resumed = reinforce(2);
    resumed.load_checkpoint(&dir.join("reinforce-n")).unwrap();
    for _ in 0..2 {
        resumed.train_step().unwrap();
    }
    assert_eq!(resumed.steps(), straight.steps());
    assert_eq!(
        resumed.epsilon_if_every_step().unwrap(),
        straight.epsilon_if_every_step().unwrap()
    );
    straight
        .save_checkpoint(&dir.join("reinforce-straight"))
        .unwrap();
    resumed
        .save_checkpoint(&dir.join("reinforce-resumed"))
        .unwrap();
    assert_eq!(state("reinforce-straight"), state("reinforce-resumed"));

    // A checkpoint of another σ is refused, naming the file.
    let agent = Reinforce::<B>::new(ReinforceConfig::new(), cartpole(), &Default::default(), 4);
    let other = config(2.0, Some(1.0)).with_episodes_per_step(2);
    let mut other = DpSgdReinforce::new(agent.unwrap(), &other, 6).unwrap();
    let error = other
        .load_checkpoint(&dir.join("reinforce-n"))
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("dp_sgd.json") && error.contains("σ = 1"),
        "{error}"
    );
    std::fs::remove_dir_all(&dir).ok();
}

/// One DP-SGD step over L episodes: without noise it is exactly the mean of the L episodes'
/// gradients, each clipped to C on its own (replayed by hand on a plain agent from the same
/// seed); with noise the release differs from it by N(0, (σC/L)²) per value; the ε per
/// episode is one release whatever L, and one user's ε composes every step at σ/L.
#[test]
fn batched_reinforce_clips_per_episode_and_averages() {
    let (l, clip) = (3usize, 0.05);
    let agent =
        || Reinforce::<B>::new(ReinforceConfig::new(), cartpole(), &Default::default(), 9).unwrap();
    let clipped = config(0.0, Some(clip)).with_episodes_per_step(l);
    let mut private = DpSgdReinforce::new(agent(), &clipped, 0).unwrap();
    let mut by_hand = agent();
    for _ in 0..2 {
        private.train_step().unwrap();
        let mut sum: Vec<f64> = Vec::new();
        let mut layout = None;
        for _ in 0..l {
            let episode = by_hand.collect_episode().unwrap();
            let gradient = by_hand.gradient(&episode).unwrap();
            let mut flat = gradient.flatten();
            let norm = flat
                .iter()
                .map(|&x| f64::from(x).powi(2))
                .sum::<f64>()
                .sqrt();
            assert!(norm > clip, "clipping must be active for this test: {norm}");
            clip_l2(&mut flat, clip);
            sum.resize(flat.len(), 0.0);
            sum.iter_mut()
                .zip(&flat)
                .for_each(|(s, &x)| *s += f64::from(x));
            layout = Some(gradient);
        }
        // The clipped sum is accumulated in f64, rounded to f32, then divided by L.
        let mean: Vec<f32> = sum
            .iter()
            .map(|&s| (f64::from(s as f32) / l as f64) as f32)
            .collect();
        by_hand
            .apply_gradient(&layout.unwrap().with_flat(&mean).unwrap())
            .unwrap();
    }
    assert_eq!(
        privrl_agents::Agent::episode_log(private.agent()).episodes(),
        2 * l
    );
    assert_eq!(private.steps().steps(), 2);
    // The engine sums in f32 on the backend: equal to the last bits.
    let diff = max_abs_diff(
        &flat_params(private.agent().policy()),
        &flat_params(by_hand.policy()),
    );
    assert!(diff < 1e-6, "{diff}");

    // Noise: std σC/L on the mean.
    let sigma = 2.0;
    let mut fresh = agent();
    let per_episode: Vec<Vec<f32>> = (0..l)
        .map(|_| {
            let episode = fresh.collect_episode().unwrap();
            fresh.gradient(&episode).unwrap().flatten()
        })
        .collect();
    let d = per_episode[0].len();
    let noisy = config(sigma, Some(clip)).build(d).unwrap();
    let clean = config(0.0, Some(clip)).build(d).unwrap();
    let mut rng = NoiseMode::Seeded.rng(11).unwrap();
    let a = noisy
        .release_batch(&per_episode, l as f64, &mut rng)
        .unwrap();
    let b = clean
        .release_batch(&per_episode, l as f64, &mut rng)
        .unwrap();
    let std = (a
        .iter()
        .zip(&b)
        .map(|(x, y)| f64::from(x - y).powi(2))
        .sum::<f64>()
        / d as f64)
        .sqrt();
    assert!(
        (std / (sigma * clip / l as f64) - 1.0).abs() < 0.08,
        "std {std}"
    );

    // Accounting: per episode one release at q = 1; one user over 4 steps at σ/L.
    let with_noise = config(sigma, Some(clip)).with_episodes_per_step(l);
    let mut private = DpSgdReinforce::new(agent(), &with_noise, 0).unwrap();
    for _ in 0..4 {
        private.train_step().unwrap();
    }
    let delta = 1e-5;
    assert_eq!(
        private.epsilon().unwrap(),
        dp_sgd_epsilon(1.0, sigma, 1, delta).unwrap()
    );
    let user = dp_sgd_epsilon(1.0, sigma / l as f64, 4, delta).unwrap();
    assert!((private.epsilon_if_every_step().unwrap() - user).abs() < 1e-12);
    assert!(
        (dp_sgd_epsilon_under(Adjacency::Substitution, 1.0, sigma, 1, delta).unwrap()
            - dp_sgd_epsilon(1.0, sigma / 2.0, 1, delta).unwrap())
        .abs()
            < 1e-12
    );
    assert!(config(1.0, Some(1.0))
        .with_episodes_per_step(0)
        .build(10)
        .is_err());
}

/// Huber (smooth L1) on TD errors, by hand: d²/2 inside |d| < 1, |d| − 1/2 outside; MSE is d².
/// A DP-SGD DQN with Huber clips per-transition gradients whose TD factor is clamp(d, −1, 1):
/// at σ = 0 without clipping its step is the plain Huber DQN's.
#[test]
fn huber_td_loss_by_hand_and_in_the_private_step() {
    let errors = Tensor::<NdArray, 1>::from_floats([0.5, -2.0, 1.0, 0.0], &Default::default());
    let huber = TdLoss::Huber
        .per_sample(errors.clone())
        .into_data()
        .into_vec::<f32>()
        .unwrap();
    assert_eq!(huber, vec![0.125, 1.5, 0.5, 0.0]);
    let mse = TdLoss::Mse
        .per_sample(errors)
        .into_data()
        .into_vec::<f32>()
        .unwrap();
    assert_eq!(mse, vec![0.25, 4.0, 1.0, 0.0]);

    let huber = DqnConfig::new()
        .with_learning_starts(1_000_000)
        .with_td_loss(TdLoss::Huber);
    let mut dqn = Dqn::<B>::new(huber, cartpole(), &Default::default(), 3).unwrap();
    for _ in 0..200 {
        dqn.step().unwrap();
    }
    let b = batch(&dqn, 64);
    let none = config(0.0, None)
        .build(dqn.q_network().num_params())
        .unwrap();
    let mut rng = ChaCha8Rng::seed_from_u64(0);
    let (private, loss) = private_td_gradient(&dqn, &b, none.as_ref(), 64.0, &mut rng).unwrap();
    let reference = dqn.gradient(&b).unwrap();
    assert!(max_abs_diff(&private.flatten(), &reference.flatten()) < 1e-5);
    assert!(loss.is_finite() && loss > 0.0);
}

/// In secure mode the bounded observation noise is released on its grid (floating-point
/// safe: every output is b·n/M for an integer n, from any observation), and in seeded mode it
/// is the textbook Gaussian (off the grid), so seeded runs keep their bytes.
#[test]
fn secure_bounded_observation_noise_is_released_on_the_grid() {
    let config = BoundedObservationNoiseConfig {
        bounds: vec![2.4, 3.0, 0.2095, 3.5],
        noise_multiplier: 0.5,
    };
    let on_grid = |source: RandomnessSource| {
        let noise = config.build().unwrap();
        let steps = noise.grid_steps().unwrap() as f64;
        let mut env = NoisyObservationEnv::new(cartpole(), noise, source).unwrap();
        let mut all = true;
        for t in 0..200u64 {
            let obs = env.reset(Some(t)).to_flat();
            for (x, b) in obs.iter().zip(&config.bounds) {
                let units = f64::from(*x) / b * steps;
                all &= (units - units.round()).abs() < 1e-3 * units.abs().max(1.0);
            }
        }
        all
    };
    assert!(on_grid(RandomnessSource::Secure));
    assert!(!on_grid(RandomnessSource::Seeded(4)));
}

/// [`DpSgdDqn::step_observed`]'s view of a step at q < 1 (issue 44): without noise each release
/// is exactly the step's clipped sum over the Poisson batch it hands the observer, divided by
/// q_t·n_t = |B|; the batch is a proper, ascending subset of the buffer's indices; and one
/// transition's clipped gradient, given as a transition, is that record's clipped sum, of norm
/// at most C. A batch that did not match the release would fail the first check.
#[test]
fn dqn_step_observer_sees_the_batch_behind_each_release() {
    let (batch_size, clip) = (8, 0.5);
    let dqn_config = DqnConfig::new()
        .with_learning_starts(40)
        .with_batch_size(batch_size)
        .with_buffer_capacity(100)
        .with_hidden(vec![16]);
    let dqn = Dqn::<B>::new(dqn_config, cartpole(), &Default::default(), 5).unwrap();
    let mut private = DpSgdDqn::new(dqn, &config(0.0, Some(clip)), 5).unwrap();
    let mut sizes = Vec::new();
    while sizes.len() < 6 {
        private
            .step_observed(|step| {
                let n = step.agent().replay().len();
                let expected = step.expected_batch_size();
                assert!(
                    (expected - batch_size as f64).abs() < 1e-9,
                    "qN = {expected}"
                );
                assert_eq!(step.clip(), clip);
                let batch = step.batch();
                assert!(batch.windows(2).all(|w| w[0] < w[1]) && batch.iter().all(|&i| i < n));
                let sum = step.clipped_sum(batch)?.flatten();
                let released = step.released().flatten();
                assert_eq!(sum.len(), released.len());
                for (r, s) in released.iter().zip(&sum) {
                    let scaled = f64::from(*r) * expected;
                    assert!(
                        (scaled - f64::from(*s)).abs() <= 1e-5 * (1.0 + f64::from(*s).abs()),
                        "release × qN {scaled} against the batch's clipped sum {s}"
                    );
                }
                if let Some(&i) = batch.first() {
                    let one = step.clipped_gradient(&step.agent().replay().gather(&[i]))?;
                    let record = step.clipped_sum(&[i])?;
                    assert_eq!(one.flatten(), record.flatten());
                    let norm = one
                        .flatten()
                        .iter()
                        .map(|v| f64::from(*v).powi(2))
                        .sum::<f64>();
                    assert!(
                        norm.sqrt() <= clip * (1.0 + 1e-5),
                        "‖clip(g)‖ = {}",
                        norm.sqrt()
                    );
                }
                sizes.push((batch.len(), n));
                Ok(())
            })
            .unwrap();
    }
    // q_t = 8/n_t ≤ 0.2: no step drew the whole buffer.
    assert!(sizes.iter().all(|&(b, n)| b < n), "{sizes:?}");
}

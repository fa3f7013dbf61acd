//! The agents' losses: their gradients against central finite differences on tiny networks,
//! and their values against hand computations.
//!
//! Each check runs an agent on CartPole to get a real batch, asks the agent for its
//! `gradient(batch)` (a host-side `GradientRecord`), and compares every entry with
//! (L(θ + h eᵢ) − L(θ − h eᵢ)) / 2h, where θ ± h eᵢ is made by applying a one-hot record
//! through `to_gradients_params` and an SGD step, which checks that path too.

use burn::backend::{Autodiff, NdArray};
use burn::module::AutodiffModule;
use burn::optim::{Optimizer, SgdConfig};
use burn::tensor::activation::log_softmax;
use burn::tensor::{Tensor, TensorData};
use privrl_agents::losses::reinforce_loss;
use privrl_agents::losses::state_value;
use privrl_agents::losses::td_loss;
use privrl_agents::losses::{actor_critic_loss, episode_loss, value_targets};
use privrl_agents::losses::{clipped_surrogate, value_loss};
use privrl_agents::tensor::{matrix, one_hot, vector};
use privrl_agents::A3cEpisode;
use privrl_agents::{
    A3c, A3cConfig, Agent, Dqn, DqnConfig, GradientRecord, Network, Ppo, PpoConfig, Reinforce,
    ReinforceConfig,
};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// f64 so that central differences are accurate.
type B = Autodiff<NdArray<f64>>;

fn cartpole() -> Box<dyn privrl_envs::Env> {
    privrl_envs::make("CartPole-v1").unwrap()
}

fn scalar(t: Tensor<B, 1>) -> f64 {
    t.into_data().convert::<f64>().to_vec::<f64>().unwrap()[0]
}

/// Compares `analytic` with central differences of `loss` around `module`.
fn check_against_finite_differences<M: AutodiffModule<B>>(
    what: &str,
    module: &M,
    analytic: &GradientRecord,
    loss: impl Fn(&M) -> f64,
) {
    let h = 1e-6;
    let flat = analytic.flatten();
    assert!(!flat.is_empty(), "{what}: empty gradient");
    let scale = flat.iter().fold(0.0f64, |m, v| m.max(f64::from(v.abs())));
    assert!(scale > 1e-6, "{what}: the gradient vanished");
    let shifted = |i: usize, delta: f64| {
        // SGD with lr 1 computes θ − g: a record −δ eᵢ moves θᵢ by +δ.
        let mut direction = vec![0.0f32; flat.len()];
        direction[i] = -delta as f32;
        let grads = analytic
            .with_flat(&direction)
            .unwrap()
            .to_gradients_params(module)
            .unwrap();
        let mut sgd = SgdConfig::new().init::<B, M>();
        sgd.step(1.0, module.clone(), grads)
    };
    for (i, &g) in flat.iter().enumerate() {
        // The record holds f32, so δ must be representable: h = 2^-20.
        let h = (h as f32) as f64;
        let numeric = (loss(&shifted(i, h)) - loss(&shifted(i, -h))) / (2.0 * h);
        let error = (numeric - f64::from(g)).abs() / scale;
        assert!(
            error < 1e-4,
            "{what}: ∂L/∂θ[{i}] analytic {g} vs finite difference {numeric} (relative error {error:.1e})"
        );
    }
}

#[test]
fn ppo_surrogate_and_value_gradients_match_finite_differences() {
    let device = Default::default();
    let config = PpoConfig::new()
        .with_steps_per_epoch(40)
        .with_hidden(vec![5]);
    let mut ppo = Ppo::<B>::new(config, cartpole(), &device, 3).unwrap();
    let mut batch = ppo.collect_rollout().unwrap();
    // Move some old log-probabilities so that ratios fall on both sides of the clip range.
    let mut rng = ChaCha8Rng::seed_from_u64(0);
    for lp in batch.log_probs.iter_mut() {
        *lp += rng.random_range(-0.4..0.4);
    }
    let record = ppo.gradient(&batch).unwrap();
    let obs = matrix::<B>(&batch.obs, batch.obs_len, &device);
    let actions = one_hot::<B>(&batch.actions, 2, &device);
    let advantages = vector::<B>(&batch.advantages, &device);
    let log_probs = vector::<B>(&batch.log_probs, &device);
    let returns = vector::<B>(&batch.returns, &device);

    let surrogate = |actor: &privrl_agents::Mlp<B>| {
        let logits = actor.forward_flat(obs.clone());
        scalar(
            clipped_surrogate(
                logits,
                actions.clone(),
                advantages.clone(),
                log_probs.clone(),
                0.2,
            )
            .loss,
        )
    };
    let clipped = clipped_surrogate(
        ppo.actor().forward_flat(obs.clone()),
        actions.clone(),
        advantages.clone(),
        log_probs.clone(),
        0.2,
    );
    let clip_frac = scalar(clipped.clip_frac);
    assert!(
        clip_frac > 0.1 && clip_frac < 0.9,
        "clip fraction {clip_frac}"
    );
    check_against_finite_differences(
        "PPO surrogate",
        ppo.actor(),
        &record.strip_prefix("actor"),
        surrogate,
    );

    let critic_loss = |critic: &privrl_agents::Mlp<B>| {
        scalar(value_loss(
            state_value(critic.forward_flat(obs.clone())),
            returns.clone(),
        ))
    };
    check_against_finite_differences(
        "PPO value loss",
        ppo.critic(),
        &record.strip_prefix("critic"),
        critic_loss,
    );
}

#[test]
fn dqn_td_gradient_matches_finite_differences() {
    let device = Default::default();
    let config = DqnConfig::new()
        .with_hidden(vec![5])
        .with_learning_starts(50)
        .with_batch_size(16)
        .with_target_update_interval(30)
        .with_double_dqn(true);
    let mut dqn = Dqn::<B>::new(config, cartpole(), &device, 4).unwrap();
    for _ in 0..100 {
        dqn.step().unwrap();
    }
    let batch = dqn.replay().sample(16, &mut ChaCha8Rng::seed_from_u64(1));
    let record = dqn.gradient(&batch).unwrap();
    let targets = Tensor::<B, 1>::from_inner(dqn.td_targets(&batch));
    let obs = matrix::<B>(&batch.obs, batch.obs_len, &device);
    let actions = one_hot::<B>(&batch.actions, 2, &device);
    let loss = |q: &privrl_agents::Mlp<B>| {
        scalar(td_loss(
            q.forward_flat(obs.clone()),
            actions.clone(),
            targets.clone(),
        ))
    };
    check_against_finite_differences("DQN TD loss", dqn.q_network(), &record, loss);
}

#[test]
fn reinforce_gradient_with_entropy_and_dropout_matches_finite_differences() {
    let device = Default::default();
    let config = ReinforceConfig::new()
        .with_hidden(vec![6])
        .with_dropout(0.5)
        .with_entropy_coef(0.1);
    let mut agent = Reinforce::<B>::new(config, cartpole(), &device, 5).unwrap();
    let batch = agent.collect_episode().unwrap();
    assert_eq!(
        batch.dropout_masks.len(),
        1,
        "one mask matrix per hidden layer"
    );
    let record = agent.gradient(&batch).unwrap();
    let n = batch.len();
    let obs = matrix::<B>(&batch.obs, batch.obs_len, &device);
    let masks: Vec<Tensor<B, 2>> = batch
        .dropout_masks
        .iter()
        .map(|m| matrix::<B>(m, m.len() / n, &device))
        .collect();
    let actions = one_hot::<B>(&batch.actions, 2, &device);
    let returns = vector::<B>(&batch.returns, &device);
    let loss = |policy: &privrl_agents::Mlp<B>| {
        scalar(reinforce_loss(
            policy.forward_flat_masked(obs.clone(), &masks),
            actions.clone(),
            returns.clone(),
            0.1,
        ))
    };
    check_against_finite_differences("REINFORCE loss", agent.policy(), &record, loss);
}

#[test]
fn a3c_episode_gradient_matches_finite_differences() {
    let device = Default::default();
    let config = A3cConfig::new()
        .with_workers(1)
        .with_hidden(vec![5])
        .with_bias(true);
    let a3c = A3c::<B>::for_env(config.clone(), "CartPole-v1", &device, 6).unwrap();
    // A short random episode, cut off (bootstrapped) at step 12.
    let mut env = cartpole();
    let mut rng = ChaCha8Rng::seed_from_u64(2);
    let mut obs = env.reset(Some(0)).to_flat();
    let mut episode = A3cEpisode {
        obs_len: 4,
        obs: Vec::new(),
        actions: Vec::new(),
        rewards: Vec::new(),
        bootstrap_value: 0.7,
    };
    for _ in 0..12 {
        let action = rng.random_range(0..2);
        let step = env.step(action).unwrap();
        episode.obs.extend_from_slice(&obs);
        episode.actions.push(action);
        episode.rewards.push(step.reward as f32);
        obs = step.obs.to_flat();
    }
    let record = a3c.gradient(&episode).unwrap();
    // The advantage A_t = V̂_t − V(s_t) is held constant in the policy term, so the finite
    // differences keep V(s_t) at the unperturbed parameters there.
    let model = a3c.model();
    let obs = matrix::<B>(&episode.obs, 4, &device);
    let actions = one_hot::<B>(&episode.actions, 2, &device);
    let targets = vector::<B>(
        &value_targets(&episode.rewards, episode.bootstrap_value, 0.99),
        &device,
    );
    let base_values = model.forward(obs.clone()).1.detach();
    let loss = |m: &privrl_agents::ActorCritic<B>| {
        let (logits, values) = m.forward(obs.clone());
        let policy = actor_critic_loss(
            logits,
            base_values.clone(),
            actions.clone(),
            targets.clone(),
            0.0,
            0.01,
        );
        scalar(policy.loss) + 0.5 * scalar((targets.clone() - values).powi_scalar(2).sum())
    };
    let (total, _) = episode_loss(&model, &episode, &config, &device).unwrap();
    assert!((scalar(total) - loss(&model)).abs() < 1e-9);
    check_against_finite_differences("A3C loss", &model, &record, loss);
}

// ---------------------------------------------------------------------------------------------
// Values worked out by hand
// ---------------------------------------------------------------------------------------------

fn tensor2(values: &[f64], cols: usize) -> Tensor<B, 2> {
    Tensor::from_data(
        TensorData::new(values.to_vec(), [values.len() / cols, cols]),
        &Default::default(),
    )
}

fn tensor1(values: &[f64]) -> Tensor<B, 1> {
    Tensor::from_data(
        TensorData::new(values.to_vec(), [values.len()]),
        &Default::default(),
    )
}

#[test]
fn clipped_surrogate_by_hand() {
    // Two samples, both taking action 0 of two equally likely actions: log π = −ln 2.
    // Old log-probs chosen so that r_0 = 1.5 (clipped to 1.2) and r_1 = 0.5 (clipped to 0.8).
    let ln2 = std::f64::consts::LN_2;
    let logits = tensor2(&[0.0, 0.0, 0.0, 0.0], 2);
    let actions = tensor2(&[1.0, 0.0, 1.0, 0.0], 2);
    let old = tensor1(&[-ln2 - 1.5f64.ln(), -ln2 - 0.5f64.ln()]);
    // A = (+1, +1): min(1.5, 1.2) = 1.2 and min(0.5, 0.8) = 0.5 → L = −(1.2 + 0.5)/2 = −0.85.
    let terms = clipped_surrogate(
        logits.clone(),
        actions.clone(),
        tensor1(&[1.0, 1.0]),
        old.clone(),
        0.2,
    );
    assert!((scalar(terms.loss) + 0.85).abs() < 1e-12);
    assert!((scalar(terms.clip_frac) - 1.0).abs() < 1e-12);
    // KL estimate E[log π_old − log π] = (−ln 1.5 − ln 0.5)/2.
    assert!((scalar(terms.approx_kl) - (-(1.5f64.ln()) - 0.5f64.ln()) / 2.0).abs() < 1e-12);
    assert!((scalar(terms.entropy) - ln2).abs() < 1e-12);
    // A = (−1, −1): min(−1.5, −1.2) = −1.5 and min(−0.5, −0.8) = −0.8 → L = 1.15.
    let terms = clipped_surrogate(logits, actions, tensor1(&[-1.0, -1.0]), old, 0.2);
    assert!((scalar(terms.loss) - 1.15).abs() < 1e-12);
}

#[test]
fn td_and_value_losses_by_hand() {
    // Q = [[1, 2], [3, 5]], actions (1, 0), targets (0, 4): errors 2 and −1 → (4 + 1)/2.
    let loss = td_loss(
        tensor2(&[1.0, 2.0, 3.0, 5.0], 2),
        tensor2(&[0.0, 1.0, 1.0, 0.0], 2),
        tensor1(&[0.0, 4.0]),
    );
    assert!((scalar(loss) - 2.5).abs() < 1e-12);
    assert!((scalar(value_loss(tensor1(&[1.0, 3.0]), tensor1(&[0.0, 0.0]))) - 5.0).abs() < 1e-12);
}

#[test]
fn reinforce_loss_by_hand() {
    // logits (0, ln 3): π = (1/4, 3/4). Action 1 with R = 2, α = 0.5:
    // log π(1) = ln 0.75, H = −(¼ ln ¼ + ¾ ln ¾), L = −(2 ln 0.75 + 0.5 H).
    let logits = tensor2(&[0.0, 3f64.ln()], 2);
    let entropy = -(0.25 * 0.25f64.ln() + 0.75 * 0.75f64.ln());
    let expected = -(2.0 * 0.75f64.ln() + 0.5 * entropy);
    let loss = reinforce_loss(logits, tensor2(&[0.0, 1.0], 2), tensor1(&[2.0]), 0.5);
    assert!((scalar(loss) - expected).abs() < 1e-12);
}

#[test]
fn actor_critic_loss_and_targets_by_hand() {
    // eq. 18 with γ = 0.5, rewards (1, 1), V(s_T) = 4: V̂_1 = 1 + 0.5·4 = 3, V̂_0 = 1 + 0.5·3 = 2.5.
    assert_eq!(value_targets(&[1.0, 1.0], 4.0, 0.5), vec![2.5, 3.0]);
    // One step, uniform policy over 2 actions, V(s) = 1, V̂ = 3: A = 2.
    // L^(p) = −(−ln 2)·2 − β ln 2, L^(v) = 4, L = L^(p) + λ·4.
    let ln2 = std::f64::consts::LN_2;
    let terms = actor_critic_loss(
        tensor2(&[0.0, 0.0], 2),
        tensor1(&[1.0]),
        tensor2(&[1.0, 0.0], 2),
        tensor1(&[3.0]),
        0.5,
        0.1,
    );
    let policy = 2.0 * ln2 - 0.1 * ln2;
    assert!((scalar(terms.policy_loss) - policy).abs() < 1e-12);
    assert!((scalar(terms.value_loss) - 4.0).abs() < 1e-12);
    assert!((scalar(terms.loss) - (policy + 2.0)).abs() < 1e-12);
}

#[test]
fn categorical_head_matches_log_softmax() {
    let logits = tensor2(&[0.3, -1.2, 2.0, 0.1, 0.1, 0.1], 3);
    let pi = privrl_agents::Categorical::from_logits(logits.clone());
    let expected = log_softmax(logits, 1).into_data().to_vec::<f64>().unwrap();
    let got = pi.log_probs().into_data().to_vec::<f64>().unwrap();
    for (a, b) in expected.iter().zip(&got) {
        assert!((a - b).abs() < 1e-12);
    }
    // Uniform row: entropy ln 3.
    let entropy = pi.entropy().into_data().to_vec::<f64>().unwrap();
    assert!((entropy[1] - 3f64.ln()).abs() < 1e-12);
}

#[test]
fn agents_share_gradients_that_apply_back() {
    // A record round-trips through JSON and applies through the agent's optimizer.
    let device = Default::default();
    let mut agent = Reinforce::<B>::new(
        ReinforceConfig::new().with_hidden(vec![4]),
        cartpole(),
        &device,
        9,
    )
    .unwrap();
    let batch = agent.collect_episode().unwrap();
    let record = agent.gradient(&batch).unwrap();
    let json = serde_json::to_string(&record).unwrap();
    let back: GradientRecord = serde_json::from_str(&json).unwrap();
    assert_eq!(back, record);
    assert_eq!(record.num_values(), 4 * 4 + 4 + 4 * 2 + 2);
    let before = agent.policy().clone();
    agent.apply_gradient(&back).unwrap();
    assert_ne!(
        privrl_agents::HostMlp::from_mlp(&before),
        privrl_agents::HostMlp::from_mlp(agent.policy()),
        "applying the gradient moved no parameter"
    );
    assert_eq!(agent.episode_log().episodes(), 1);
    // A record that names a parameter the module lacks is refused.
    let mut wrong = record.clone();
    wrong.params[0].name = "layers.9.weight".into();
    assert!(wrong.to_gradients_params(agent.policy()).is_err());
    let mut wrong_shape = record;
    wrong_shape.params[0].shape = vec![2, 8];
    assert!(wrong_shape.to_gradients_params(agent.policy()).is_err());
}

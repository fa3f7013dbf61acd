//! Same seed, same bytes. Each test pins one source of run-to-run differences that privrl had,
//! in one process; `cargo xtask check determinism` (xtask/tests/determinism.rs) compares whole
//! runs across processes.

use burn::backend::{Autodiff, NdArray};
use burn::module::{Module, ModuleVisitor, Param, ParamId};
use burn::tensor::backend::Backend;
use burn::tensor::Tensor;
use privrl_agents::autodiff::exclusive;
use privrl_agents::MlpConfig;
use privrl_agents::{Agent, Ppo, PpoConfig};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

type B = Autodiff<NdArray>;

fn bits(values: &[f32]) -> Vec<u32> {
    values.iter().map(|v| v.to_bits()).collect()
}

/// burn-ndarray's `simd` feature computed 1/x (the backward of `log` and of a division) with
/// the approximate `rcp` instruction on the aligned middle of a buffer and exactly elsewhere,
/// so gradients carried ~4e-4 relative error that moved with the heap address. The workspace
/// turns the feature off; this fails if it comes back.
#[test]
fn log_and_division_backwards_divide_exactly() {
    let device = Default::default();
    let x: Vec<f32> = (0..1000).map(|i| 0.5 + i as f32 * 0.37).collect();
    let exact: Vec<u32> = x.iter().map(|x| (1.0 / x).to_bits()).collect();
    exclusive(|| {
        for _ in 0..4 {
            let leaf = Tensor::<B, 1>::from_floats(x.as_slice(), &device).require_grad();
            let grads = leaf.clone().log().sum().backward();
            let grad = leaf
                .grad(&grads)
                .unwrap()
                .into_data()
                .to_vec::<f32>()
                .unwrap();
            assert_eq!(bits(&grad), exact, "d/dx log x = 1/x");

            let denominator = Tensor::<B, 1>::from_floats(x.as_slice(), &device);
            let numerator = Tensor::<B, 1>::ones([x.len()], &device).require_grad();
            let grads = (numerator.clone() / denominator).sum().backward();
            let grad = numerator
                .grad(&grads)
                .unwrap()
                .into_data()
                .to_vec::<f32>()
                .unwrap();
            assert_eq!(bits(&grad), exact, "d/da (a / x) = 1/x");
        }
    });
}

fn cartpole_ppo(seed: u64) -> Ppo<B> {
    let config = PpoConfig::new().with_steps_per_epoch(300);
    Ppo::new(
        config,
        privrl_envs::make("CartPole-v1").unwrap(),
        &Default::default(),
        seed,
    )
    .unwrap()
}

/// The PPO policy gradient was the first place the rcp above showed: two bit patterns
/// alternated between calls on the same agent and batch.
#[test]
fn ppo_gradients_repeat_bit_for_bit() {
    let mut agent = cartpole_ppo(3);
    let batch = agent.collect_rollout().unwrap();
    let first = agent.gradient(&batch).unwrap().flatten();
    for _ in 0..5 {
        assert_eq!(
            bits(&agent.gradient(&batch).unwrap().flatten()),
            bits(&first)
        );
    }
    let mut twin = cartpole_ppo(3);
    let twin_batch = twin.collect_rollout().unwrap();
    assert_eq!(twin_batch, batch);
    assert_eq!(
        bits(&twin.gradient(&twin_batch).unwrap().flatten()),
        bits(&first)
    );
    // The critic trains on its untracked copy beside the actor's graph; it must come back
    // trainable, with the same update in both twins.
    agent.update(&batch).unwrap();
    twin.update(&twin_batch).unwrap();
    let after = agent.gradient(&batch).unwrap();
    assert_eq!(after.strip_prefix("critic").len(), 6, "{:?}", after.names());
    assert_eq!(after.strip_prefix("actor").len(), 6, "{:?}", after.names());
    let twin_after = twin.gradient(&batch).unwrap();
    assert_eq!(bits(&twin_after.flatten()), bits(&after.flatten()));
}

struct Ids(Vec<ParamId>);

impl<Bk: Backend> ModuleVisitor<Bk> for Ids {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<Bk, D>>) {
        self.0.push(param.id);
    }
}

fn param_ids<M: Module<B>>(module: &M) -> Vec<ParamId> {
    let mut ids = Ids(Vec::new());
    module.visit(&mut ids);
    ids.0
}

/// Burn draws parameter ids at random, and checkpoints store them; privrl derives them from
/// the initial values and positions instead.
#[test]
fn parameter_ids_follow_the_seed_and_are_unique() {
    let device = Default::default();
    let config = MlpConfig::new(4, vec![16, 16], 2).with_bias(true);
    let init = |seed| config.init::<B>(&device, &mut ChaCha8Rng::seed_from_u64(seed));
    let ids = param_ids(&init(1));
    assert_eq!(ids.len(), 6);
    assert_eq!(param_ids(&init(1)), ids);
    assert_ne!(param_ids(&init(2)), ids);
    let mut unique = ids.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(
        unique.len(),
        ids.len(),
        "ids must be unique within a module"
    );
}

/// Two agents from one seed, trained alike, write the same checkpoint bytes: networks, Adam
/// states (a hash map in Burn, written with sorted keys) and generator state.
#[test]
fn checkpoints_from_one_seed_are_byte_identical() {
    let dirs: Vec<_> = (0..2)
        .map(|i| {
            let dir =
                std::env::temp_dir().join(format!("privrl-determinism-{}-{i}", std::process::id()));
            let _ = std::fs::remove_dir_all(&dir);
            let mut agent = cartpole_ppo(5);
            agent.train_epoch().unwrap();
            agent.save_checkpoint(&dir).unwrap();
            dir
        })
        .collect();
    let mut names: Vec<_> = std::fs::read_dir(&dirs[0])
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    names.sort();
    assert!(
        names.len() >= 5,
        "networks, optimizers and state: {names:?}"
    );
    for name in names {
        let read = |dir: &std::path::PathBuf| std::fs::read(dir.join(&name)).unwrap();
        assert!(read(&dirs[0]) == read(&dirs[1]), "{name:?} differs");
    }
    for dir in dirs {
        let _ = std::fs::remove_dir_all(dir);
    }
}

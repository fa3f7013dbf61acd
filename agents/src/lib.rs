//! Reinforcement-learning agents for privrl, generic over the Burn backend.
//!
//! The networks ([`Mlp`], [`Dense`], the convolutions, [`MultimodalNet`]) are shared with
//! `privrl-attacks`, so an attack inverts exactly the model that an agent trains.
//!
//! Every public item has one path. The agents, their configs, networks, errors and the
//! [`PrivacyEngine`] are at the crate root; five public modules hold what a researcher extends
//! or calls from below an agent:
//!
//! - [`dp`]: DP-SGD's machinery (per-sample gradients one rule per layer, the one
//!   clip → sum → noise path [`dp::release_batch`], the parameter layout); the engine itself
//!   ([`PrivacyEngine`]) and the DP-SGD agents ([`DpSgdReinforce`], [`DpSgdDqn`]) are at the root.
//! - [`losses`]: the papers' loss functions (DQN's TD loss, REINFORCE, PPO-Clip, A3C, the
//!   privacy-aware penalty).
//! - [`autodiff`]: autodiff sections, which make concurrent use of Burn 0.21's autodiff safe.
//! - [`tensor`]: tensors in the backend's own float type; host data to tensors and back.
//! - [`params`]: every parameter with its path from the module tree, the one place paths are
//!   named.
//!
//! At the root, by family: [`Ppo`] (PPO-Clip as in Spinning Up, with an
//! [`AuxiliaryPolicyLoss`] hook); [`Dqn`] (replay, a target network, ε-greedy, MSE loss,
//! optional Double DQN); [`Reinforce`] (an entropy bonus, one episode per gradient);
//! privacy-preserving kickstarting ([`PrivateTeacher`], a Dirichlet-privatised teacher with a
//! ledger, and [`PrivacyAwareKickstarting`], the student's penalty E\[φ_λ\] for PPO); [`A3c`]
//! (worker threads submitting per-episode gradients to shared parameters); PGC-A3C
//! ([`run_pgc`], [`Aggregator`], [`PgcAgent`]: locally private distributed A3C over threads or,
//! with the `redis` feature, Redis Streams); the [`Agent`] trait and checkpoints;
//! [`GradientRecord`], the named gradient an agent shares; the optimisers ([`FlatAdam`]).
//! Private modules: one per family above, plus `buffer` (replay and rollout buffers), `env`
//! (observations to tensors), `error` (every error type, re-exported here) and `gradient`
//! (per-parameter gradients of a module).
//!
//! Every agent exposes `act`, `update(batch)`, `gradient(batch) -> GradientRecord` and
//! checkpoints; the [`Agent`] trait is the loop-level part that `cargo xtask train` uses.
//! Randomness comes from generators seeded by the caller, never from Burn's global generator
//! (dropout included), and a seeded run repeats bit for bit on the same build, machine and
//! backend: networks, batches, gradients and checkpoint files (`docs/determinism.md`;
//! `cargo xtask check determinism` checks a build). A3C and PGC with several workers are
//! asynchronous: each worker's gradient is exact for the θ′ it copied, but which θ′ that is
//! depends on thread scheduling. Privacy mechanisms can draw from the operating system instead
//! ([`privrl_privacy::NoiseMode`]).
//!
//! Every graph is built and differentiated inside an autodiff section ([`autodiff`]), which
//! makes the agents safe to use from several threads at once.
//!
//! PPO on CartPole for one epoch, on the CPU backend:
//!
//! ```
//! use burn::backend::{Autodiff, NdArray};
//! use privrl_agents::{Agent, Ppo, PpoConfig};
//!
//! let env = privrl_envs::make("CartPole-v1")?;
//! let config = PpoConfig::new().with_steps_per_epoch(500);
//! let mut ppo = Ppo::<Autodiff<NdArray>>::new(config, env, &Default::default(), 0)?;
//! let stats = ppo.train_epoch()?;
//! assert_eq!(stats.env_steps, 500);
//! println!("{} episodes, mean return {:.1}", stats.episodes, stats.mean_return_100);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! A round of PGC-A3C in one process: three agent threads submit Laplace-privatised gradients
//! (ε = 1 each) to an aggregator until it has applied 20:
//!
//! ```
//! use burn::backend::{Autodiff, NdArray};
//! use privrl_agents::run_pgc;
//! use privrl_agents::{A3cConfig, InProcess, PgcConfig};
//! use privrl_privacy::{Epsilon, GradientMechanismConfig};
//!
//! let config = PgcConfig::paper(GradientMechanismConfig::laplace(Epsilon::finite(1.0)?))
//!     .with_max_submissions(20)
//!     .with_a3c(A3cConfig::pgc_paper().with_workers(3));
//! let outcome = run_pgc::<Autodiff<NdArray>>(&config, &InProcess::new(), 0, &Default::default(), |_| {})?;
//! assert_eq!(outcome.applied, 20);
//! # Ok::<(), privrl_agents::PgcError>(())
//! ```

#![warn(missing_docs)]
#![warn(unreachable_pub)]

mod a3c;
mod agent;
pub mod autodiff;
mod buffer;
mod determinism;
pub mod dp;
mod dqn;
mod env;
mod error;
mod gradient;
mod heads;
mod kickstart;
pub mod losses;
mod network;
mod nn;
mod optim;
pub mod params;
mod pgc;
mod ppo;
mod record;
mod reinforce;
pub mod tensor;

pub use a3c::{
    A3c, A3cConfig, A3cEpisode, A3cStats, EnvFactory, Exploration, ExplorationClock,
    ExplorationTime, GradientHook, GreedyAction, LossReduction, RewardScheme, SubmissionRecord,
    MAX_WORKERS,
};
pub use agent::{ActMode, Agent, EpisodeLog, EpochStats};
pub use buffer::{ReplayBuffer, RolloutBatch, TransitionBatch};
pub use determinism::check_exact_division;
pub use dp::adaptive::AdaptiveClipping;
pub use dp::engine::{
    EngineState, NoiseCalibration, NonPrivateDiagnostics, PoissonSampling, PrivacyEngine,
    PrivacyEngineConfig, PrivateGradient, ValidPrivacyEngineConfig,
};
pub use dp::training::{
    DpPpo, DpPpoBenchPhase, DpPpoConfig, DpPpoNoise, DpPpoStats, DpPpoStep, DpSgdDqn, DpSgdDqnStep,
    DpSgdReinforce, DpSgdTrainingConfig, GivenEpisode, NoisyObservationEnv, PrivacyTally,
    PrivacyUnit,
};
pub use dqn::{Dqn, DqnConfig, DqnStats, TdLoss};
pub use error::{AgentError, EngineError, RecordError, MAX_HIDDEN_WIDTH};
pub use gradient::{param_gradients, ParamGradient};
pub use heads::{ActorCritic, ActorCriticConfig, Categorical};
pub use kickstart::{
    Demonstration, DirichletRelease, ExhaustedTeacher, PrivacyAwareConfig,
    PrivacyAwareKickstarting, PrivateTeacher, PrivateTeacherConfig, PrivateTeacherState, Teacher,
    TeacherPrivacySummary, VanishingUnit, MAX_GRID_POINTS,
};
pub use network::{trainable_from_inner, HostMlp, Network, TrainableNetwork};
pub use nn::{
    conv2d_im2col, fast_tanh, im2col, matmul_by_row_blocks, Activation, Conv2dLayer,
    Conv2dLayerConfig, Conv2dLayerRecord, ConvEncoder, ConvEncoderConfig, ConvEncoderRecord,
    ConvNet, ConvNetConfig, ConvNetRecord, Dense, DenseConfig, DenseRecord, ImageShape,
    LinearInputs, Mlp, MlpConfig, MlpRecord, MultimodalNet, MultimodalNetConfig,
    MultimodalNetRecord,
};
pub use optim::{AgentOptimizer, FlatAdam, OptimizerKind, ADAM_EPSILON};
pub use pgc::{
    average_scores, first_success_time, flatten_parameters, initial_parameters,
    load_flat_parameters, median_first_success, relative_area, run_agent, run_pgc, success_ratio,
    success_ratio_area, Aggregator, AggregatorState, AppliedSubmission, Delivery, InProcess,
    Parameters, PgcAgent, PgcConfig, PgcError, PgcOutcome, RoundRobin, Submission, SubmissionOrder,
    Transport,
};
#[cfg(feature = "redis")]
pub use pgc::{RedisTransport, DEFAULT_RECONNECT_TIMEOUT};
pub use ppo::{AuxiliaryPolicyLoss, Ppo, PpoConfig, PpoStats};
pub use record::{GradientRecord, NamedGradient};
pub use reinforce::{EpisodeBatch, Reinforce, ReinforceConfig, ReinforceStats};

/// The wgpu backend privrl runs on: burn-wgpu's `CubeBackend` (Vulkan, Metal, DX12), without
/// the operation fusion that `burn::backend::Wgpu` wraps it in.
///
/// Burn 0.21's fusion keeps one operation stream per thread, and privrl's autodiff sections
/// ([`autodiff`]) run on whichever thread of their pool is free, so one agent's tensors are
/// made on one thread and used on another. Under fusion that gives wrong values: a seeded DQN
/// matched burn-ndarray for 2 to 14 updates, then its TD loss was NaN, at a different update on
/// each run (upstream reports fusion's multi-thread handling failing, tracel-ai/burn#4328).
/// Without fusion the same DQN matches burn-ndarray to f32 rounding on every run
/// (`tests/backends.rs`).
#[cfg(feature = "wgpu")]
pub type WgpuBackend = burn_wgpu::CubeBackend<burn_wgpu::WgpuRuntime, f32, i32, u32>;

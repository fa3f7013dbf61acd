//! `train`'s command-line arguments and the algorithm's configuration they resolve to.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use burn::config::Config;
use burn::tensor::backend::AutodiffBackend;
use clap::{Args, ValueEnum};
use privrl_agents::{
    A3c, A3cConfig, Agent, DpPpo, DpPpoConfig, DpPpoNoise, Dqn, DqnConfig, Ppo, PpoConfig,
    Reinforce, ReinforceConfig,
};
use serde::{Deserialize, Serialize};

use crate::backend::BackendChoice;
use crate::sweep::{Seeds, Shard};

/// The algorithms `train` runs.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Algorithm {
    /// PPO-Clip, Spinning Up's defaults.
    Ppo,
    /// DQN with replay, target network and ε-greedy.
    Dqn,
    /// REINFORCE with an entropy bonus, one episode per update.
    Reinforce,
    /// A3C with worker threads (the PGC paper's setting).
    A3c,
    /// DP-PPO: PPO with one episode as the unit of privacy, every minibatch step a DP-SGD
    /// release (Poisson-sampled episodes, per-episode clipping, Gaussian noise); prints ε per
    /// episode as it runs.
    #[serde(rename = "dp-ppo")]
    DpPpo,
}

impl std::fmt::Display for Algorithm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Algorithm::Ppo => "ppo",
            Algorithm::Dqn => "dqn",
            Algorithm::Reinforce => "reinforce",
            Algorithm::A3c => "a3c",
            Algorithm::DpPpo => "dp-ppo",
        })
    }
}

/// Arguments of `train`.
#[derive(Args, Debug, Clone, Serialize)]
pub struct TrainArgs {
    /// Algorithm.
    #[arg(long, value_enum)]
    pub algo: Algorithm,
    /// Environment name (`cargo xtask env list`).
    #[arg(long, default_value = "CartPole-v1")]
    pub env: String,
    /// One seed (ignored when --seeds is given).
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Several seeds, run in parallel: `0..5`, `0..=4`, `0,3,7`.
    #[arg(long)]
    #[serde(skip)]
    pub seeds: Option<Seeds>,
    /// Environment steps per seed (summed over workers for A3C); at least 1.
    #[arg(long, default_value_t = 300_000, value_parser = clap::value_parser!(u64).range(1..))]
    pub steps: u64,
    /// Also stop a seed after this many finished episodes.
    #[arg(long)]
    pub episodes: Option<usize>,
    /// Stop a seed once the mean return of its last 100 episodes reaches the environment's
    /// reward threshold (CartPole-v1: 475).
    #[arg(long)]
    pub stop_when_solved: bool,
    /// PPO: environment steps per epoch (Spinning Up: 4000; the kickstarting paper: 1000).
    #[arg(long)]
    pub steps_per_epoch: Option<usize>,
    /// The algorithm's config as JSON (a `PpoConfig`, `DqnConfig`, ... as written in a run's
    /// `config.json` under `agent`); defaults otherwise.
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Save a checkpoint of the final agent in `<run>/checkpoint/`.
    #[arg(long)]
    pub checkpoint: bool,
    /// Backend.
    #[arg(long, value_enum, default_value_t = BackendChoice::default())]
    pub backend: BackendChoice,
    /// Suite directory under runs/.
    #[arg(long, default_value = "train")]
    pub suite: String,
    /// Run only this slice of the seeds: `--shard i/n`; join with `cargo xtask merge`.
    #[arg(long)]
    #[serde(skip)]
    pub shard: Option<Shard>,
    /// Worker threads for seed sweeps (0: one per core).
    #[arg(long, default_value_t = 0)]
    #[serde(skip)]
    pub threads: usize,
    /// The privacy and batch flags of dp-ppo.
    #[command(flatten)]
    pub dp_ppo: DpPpoArgs,
}

/// Flags of `--algo dp-ppo` (refused with any other algorithm). Each overrides the default or
/// the `--config` file's value.
#[derive(Args, Debug, Clone, Default, Serialize)]
pub struct DpPpoArgs {
    /// dp-ppo: calibrate σ so that ε per episode (one rollout's K steps) is at most this
    /// (> 0), by the RDP accountant, as Opacus' make_private_with_epsilon.
    #[arg(long, conflicts_with = "noise_multiplier")]
    pub target_epsilon: Option<f64>,
    /// dp-ppo: a given noise multiplier σ ≥ 0 instead of a target ε (0: no noise, ε = ∞).
    #[arg(long)]
    pub noise_multiplier: Option<f64>,
    /// dp-ppo: δ of the reported (ε, δ), in (0, 1); default 1e-5.
    #[arg(long)]
    pub delta: Option<f64>,
    /// dp-ppo: L2 bound C on each episode's joint actor-critic gradient (> 0); default 1.
    #[arg(long)]
    pub clip: Option<f64>,
    /// dp-ppo: adaptive clipping, C tracking this quantile of the per-episode gradient norms
    /// (0.5: the median), starting from --clip.
    #[arg(long)]
    pub adaptive_clip_quantile: Option<f64>,
    /// dp-ppo: N, whole episodes per rollout (the records one rollout's steps sample from).
    #[arg(long)]
    pub episodes_per_rollout: Option<usize>,
    /// dp-ppo: qN, expected episodes per minibatch step (≤ N); q = qN / N.
    #[arg(long)]
    pub minibatch_episodes: Option<usize>,
    /// dp-ppo: E, passes over each rollout (K = E·⌈N/qN⌉ steps per rollout).
    #[arg(long)]
    pub ppo_epochs: Option<usize>,
    /// dp-ppo: Adam's learning rate.
    #[arg(long)]
    pub lr: Option<f64>,
    /// dp-ppo: environment copies stepped together (at most N are used).
    #[arg(long)]
    pub num_envs: Option<usize>,
}

impl DpPpoArgs {
    /// The flags given, by name, for the error that refuses them with another algorithm.
    fn given(&self) -> Vec<&'static str> {
        let flags = [
            ("--target-epsilon", self.target_epsilon.is_some()),
            ("--noise-multiplier", self.noise_multiplier.is_some()),
            ("--delta", self.delta.is_some()),
            ("--clip", self.clip.is_some()),
            (
                "--adaptive-clip-quantile",
                self.adaptive_clip_quantile.is_some(),
            ),
            (
                "--episodes-per-rollout",
                self.episodes_per_rollout.is_some(),
            ),
            ("--minibatch-episodes", self.minibatch_episodes.is_some()),
            ("--ppo-epochs", self.ppo_epochs.is_some()),
            ("--lr", self.lr.is_some()),
            ("--num-envs", self.num_envs.is_some()),
        ];
        flags.iter().filter(|f| f.1).map(|f| f.0).collect()
    }

    /// `config` with these flags applied.
    fn apply(&self, mut config: DpPpoConfig) -> DpPpoConfig {
        if let Some(epsilon) = self.target_epsilon {
            config.noise = DpPpoNoise::TargetEpsilon(epsilon);
        }
        if let Some(sigma) = self.noise_multiplier {
            config.noise = DpPpoNoise::NoiseMultiplier(sigma);
        }
        if let Some(delta) = self.delta {
            config.delta = delta;
        }
        if let Some(clip) = self.clip {
            config.clip = Some(clip);
        }
        if let Some(quantile) = self.adaptive_clip_quantile {
            config.adaptive_clip_quantile = Some(quantile);
        }
        if let Some(n) = self.episodes_per_rollout {
            config.episodes_per_rollout = n;
        }
        if let Some(b) = self.minibatch_episodes {
            config.minibatch_episodes = b;
        }
        if let Some(e) = self.ppo_epochs {
            config.epochs = e;
        }
        if let Some(lr) = self.lr {
            config.lr = lr;
        }
        if let Some(m) = self.num_envs {
            config.num_envs = m;
        }
        config
    }
}

/// The algorithm's full configuration, defaults filled in.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "algo", rename_all = "lowercase")]
pub enum AgentConfig {
    /// PPO.
    Ppo(PpoConfig),
    /// DQN.
    Dqn(DqnConfig),
    /// REINFORCE.
    Reinforce(ReinforceConfig),
    /// A3C.
    A3c(A3cConfig),
    /// DP-PPO.
    #[serde(rename = "dp-ppo")]
    DpPpo(DpPpoConfig),
}

impl AgentConfig {
    /// Defaults for `algo`, or the JSON file `path`, with the command-line overrides.
    pub fn resolve(args: &TrainArgs) -> Result<Self> {
        let load_error =
            |path: &Path| format!("reading the {} config {}", args.algo, path.display());
        let mut config = match (args.algo, &args.config) {
            (Algorithm::Ppo, None) => AgentConfig::Ppo(PpoConfig::new()),
            (Algorithm::Dqn, None) => AgentConfig::Dqn(DqnConfig::new()),
            (Algorithm::Reinforce, None) => AgentConfig::Reinforce(ReinforceConfig::new()),
            (Algorithm::A3c, None) => AgentConfig::A3c(A3cConfig::new()),
            (Algorithm::DpPpo, None) => AgentConfig::DpPpo(DpPpoConfig::new()),
            (Algorithm::Ppo, Some(p)) => {
                AgentConfig::Ppo(PpoConfig::load(p).with_context(|| load_error(p))?)
            }
            (Algorithm::Dqn, Some(p)) => {
                AgentConfig::Dqn(DqnConfig::load(p).with_context(|| load_error(p))?)
            }
            (Algorithm::Reinforce, Some(p)) => {
                AgentConfig::Reinforce(ReinforceConfig::load(p).with_context(|| load_error(p))?)
            }
            (Algorithm::A3c, Some(p)) => {
                AgentConfig::A3c(A3cConfig::load(p).with_context(|| load_error(p))?)
            }
            (Algorithm::DpPpo, Some(p)) => {
                AgentConfig::DpPpo(DpPpoConfig::load(p).with_context(|| load_error(p))?)
            }
        };
        match &mut config {
            AgentConfig::DpPpo(c) => {
                *c = args.dp_ppo.apply(c.clone());
                // Every parameter checked now, by name, before any run directory is made.
                c.validate()?;
                c.engine_config().check()?;
            }
            _ => {
                let given = args.dp_ppo.given();
                if !given.is_empty() {
                    bail!(
                        "only --algo dp-ppo takes {}, not {}",
                        given.join(", "),
                        args.algo
                    );
                }
            }
        }
        if let Some(steps) = args.steps_per_epoch {
            match &mut config {
                AgentConfig::Ppo(c) => c.steps_per_epoch = steps,
                AgentConfig::Dqn(c) => c.steps_per_epoch = steps,
                _ => bail!(
                    "--steps-per-epoch applies to ppo and dqn; {} counts epochs in episodes",
                    args.algo
                ),
            }
        }
        Ok(config)
    }

    /// Builds the agent on `Autodiff<B>`.
    pub fn build<B: AutodiffBackend>(
        &self,
        env: &str,
        device: &B::Device,
        seed: u64,
    ) -> Result<Box<dyn Agent>> {
        let make = || privrl_envs::make(env).with_context(|| format!("--env {env}"));
        Ok(match self {
            AgentConfig::Ppo(c) => Box::new(Ppo::<B>::new(c.clone(), make()?, device, seed)?),
            AgentConfig::Dqn(c) => Box::new(Dqn::<B>::new(c.clone(), make()?, device, seed)?),
            AgentConfig::Reinforce(c) => {
                Box::new(Reinforce::<B>::new(c.clone(), make()?, device, seed)?)
            }
            AgentConfig::A3c(c) => Box::new(A3c::<B>::for_env(c.clone(), env, device, seed)?),
            AgentConfig::DpPpo(c) => Box::new(
                DpPpo::<B>::for_env(c.clone(), env, device, seed)
                    .with_context(|| format!("--env {env}"))?,
            ),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::train::tests::args;

    #[test]
    fn configs_resolve_with_overrides_and_round_trip_through_json() {
        let mut a = args(Algorithm::Ppo);
        a.steps_per_epoch = Some(1000);
        let AgentConfig::Ppo(ppo) = AgentConfig::resolve(&a).unwrap() else {
            panic!("expected a PPO config")
        };
        assert_eq!(ppo.steps_per_epoch, 1000);
        // A run's `agent` section loads back as a --config file.
        let dir = crate::run::tests::temp_dir("train-config");
        let path = dir.join("ppo.json");
        std::fs::write(
            &path,
            serde_json::to_string(&AgentConfig::Ppo(ppo)).unwrap(),
        )
        .unwrap();
        a.config = Some(path);
        a.steps_per_epoch = None;
        let AgentConfig::Ppo(loaded) = AgentConfig::resolve(&a).unwrap() else {
            panic!("expected a PPO config")
        };
        assert_eq!(loaded.steps_per_epoch, 1000);
        let mut r = args(Algorithm::Reinforce);
        r.steps_per_epoch = Some(10);
        assert!(AgentConfig::resolve(&r).is_err());
    }

    #[test]
    fn dp_ppo_flags_resolve_and_bad_ones_are_named() {
        let mut a = args(Algorithm::DpPpo);
        a.dp_ppo.target_epsilon = Some(1.0);
        a.dp_ppo.episodes_per_rollout = Some(512);
        a.dp_ppo.minibatch_episodes = Some(128);
        a.dp_ppo.delta = Some(1e-6);
        let AgentConfig::DpPpo(c) = AgentConfig::resolve(&a).unwrap() else {
            panic!("expected a DP-PPO config")
        };
        assert_eq!(c.noise, DpPpoNoise::TargetEpsilon(1.0));
        assert_eq!((c.episodes_per_rollout, c.minibatch_episodes), (512, 128));
        assert_eq!(c.delta, 1e-6);
        let error = |a: &TrainArgs| format!("{:#}", AgentConfig::resolve(a).unwrap_err());
        a.dp_ppo.target_epsilon = Some(-1.0);
        assert!(error(&a).contains("target_epsilon"), "{}", error(&a));
        a.dp_ppo.target_epsilon = Some(1.0);
        a.dp_ppo.minibatch_episodes = Some(1024);
        assert!(error(&a).contains("minibatch_episodes"), "{}", error(&a));
        // The privacy flags mean nothing to plain PPO: refused, not ignored.
        let mut p = args(Algorithm::Ppo);
        p.dp_ppo.target_epsilon = Some(1.0);
        assert!(error(&p).contains("--target-epsilon"), "{}", error(&p));
    }

    /// `--steps 0` is refused by name at parse time (it used to fail inside the plotter).
    #[test]
    fn zero_steps_is_a_named_error() {
        #[derive(clap::Parser)]
        struct Cli {
            #[command(flatten)]
            train: TrainArgs,
        }
        use clap::Parser;
        let parse = |steps: &str| Cli::try_parse_from(["train", "--algo", "ppo", "--steps", steps]);
        let err = match parse("0") {
            Ok(_) => panic!("--steps 0 must be refused"),
            Err(err) => err,
        };
        assert!(err.to_string().contains("--steps"), "{err}");
        assert_eq!(parse("1").map(|cli| cli.train.steps).ok(), Some(1));
    }
}

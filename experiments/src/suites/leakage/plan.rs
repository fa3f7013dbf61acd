//! `suite leakage`'s command-line arguments and the plan they resolve to (what the suite's
//! `config.json` records): the defences swept and the ε each cell is plotted at.

use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::Args;
use privrl_agents::{DqnConfig, PrivacyTally, PrivacyUnit};
use privrl_privacy::{Adjacency, Epsilon, GradientMechanismConfig};
use serde::Serialize;

use crate::backend::BackendChoice;
use crate::noise_rng::NoiseRng;
use crate::suites::dpsgd::{dqn_config, DQN_STEPS};
use crate::suites::inversion::Method;

/// Arguments of `suite leakage`.
#[derive(Args, Debug, Clone, Serialize)]
pub struct LeakageArgs {
    /// Quick mode: 16×16 images, 20 samples per cell, 300 iterations per stage (as `suite
    /// inversion --quick`).
    #[arg(long)]
    pub quick: bool,
    /// Samples per cell (attack × defence). Default 20 quick, 40 otherwise.
    #[arg(long)]
    pub samples: Option<usize>,
    /// Image size in pixels. Default 16 quick, 32 otherwise.
    #[arg(long)]
    pub image_size: Option<usize>,
    /// Optimisation iterations per attack stage. Default 300 quick, 1000 otherwise.
    #[arg(long)]
    pub iterations: Option<usize>,
    /// Weight λ of the attack's TV prior. Default 0.01 quick, 0.1 otherwise (as `suite
    /// inversion`).
    #[arg(long)]
    pub tv_weight: Option<f64>,
    /// DP-SGD noise multipliers σ to sweep (comma-separated, each > 0).
    #[arg(long, value_delimiter = ',', default_values_t = [0.001, 0.01, 0.1, 0.3, 1.0])]
    pub dp_sgd_noise: Vec<f64>,
    /// DP-SGD clipping norm C (the DP-SGD suite's default).
    #[arg(long, default_value_t = 1.0)]
    pub dp_sgd_clip: f64,
    /// ε of the Laplace and projected-random-sign releases to sweep (comma-separated, > 0, or
    /// `inf` for the mechanisms' noise-free limits). The PGC paper runs 1–10; larger values
    /// find where reconstruction comes back.
    #[arg(
        long,
        value_delimiter = ',',
        default_values = ["1", "10", "100", "1e3", "1e4", "1e5"]
    )]
    pub ldp_epsilon: Vec<Epsilon>,
    /// Laplace clipping C (L1 norm ≤ C/2; the PGC paper's 0.01). Whenever C/2 is below the
    /// gradient's L1 norm, the signal-to-noise ratio does not depend on C.
    #[arg(long, default_value_t = 0.01)]
    pub laplace_clip: f64,
    /// Projected-random-sign element-wise clip C (the PGC paper's 1).
    #[arg(long, default_value_t = 1.0)]
    pub prs_clip: f64,
    /// Environment steps of the DP-SGD DQN training run that σ is accounted over: the DP-SGD
    /// suite's DQN (|B| = 128, a 10k replay buffer, a gradient step every second environment
    /// step from step 1000). ε composes every gradient step at the Poisson rate
    /// q_t = min(1, 128 / n_t) it actually uses (n_t: the replay buffer's size), per
    /// transition.
    #[arg(long, default_value_t = DQN_STEPS)]
    pub train_env_steps: u64,
    /// δ of the DP-SGD accounting.
    #[arg(long, default_value_t = 1e-5)]
    pub delta: f64,
    /// Neighbouring relation of the DP-SGD ε: `add-remove` (one transition added or removed,
    /// as in Opacus) or `substitution` (one transition replaced; a larger ε).
    #[arg(long, default_value_t = Adjacency::AddRemove)]
    pub adjacency: Adjacency,
    /// The DP-SGD suite's runs, for the utility column (skipped if absent).
    #[arg(long)]
    pub dpsgd_runs: Option<PathBuf>,
    /// The PGC suite's runs, for the utility column (skipped if absent).
    #[arg(long)]
    pub pgc_runs: Option<PathBuf>,
    /// Seed of the samples, the victims, the attacks and the defences' noise.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Backend.
    #[arg(long, value_enum, default_value_t = BackendChoice::default())]
    pub backend: BackendChoice,
    /// Adam steps (lr 1e-3, minibatches of 16) that train each victim on its own objective
    /// before it is attacked, on 64 room samples apart from the attacked ones; 0 attacks
    /// freshly initialised victims, as the paper does.
    #[arg(long, default_value_t = 0)]
    pub victim_train_steps: usize,
    /// Batch sizes of the shared gradient for QGI without a defence (comma-separated, each in
    /// 1..=8): every size above 1 adds a cell `qgi-none-batch<B>`, attacked by the batch
    /// extension of QGI (actions enumerated from ∇b_last, Section IV-C1).
    #[arg(long, value_delimiter = ',', default_values_t = [1])]
    pub batch_sizes: Vec<usize>,
    /// Worker threads (0: one per core); each runs one (attack, defence) cell.
    #[arg(long, default_value_t = 0)]
    pub threads: usize,
    /// Where the defences' noise comes from: `seeded` (from --seed, reproducible) or `secure`
    /// (the OS CSPRNG: the attacker faces noise that no seed predicts).
    #[arg(long, value_enum, default_value_t = NoiseRng::Seeded)]
    pub noise_rng: NoiseRng,
}

impl LeakageArgs {
    /// `--quick` with everything else at its default (the quickstart's leakage part).
    pub fn quick(seed: u64, backend: BackendChoice, threads: usize) -> Self {
        Self {
            quick: true,
            samples: None,
            image_size: None,
            iterations: None,
            tv_weight: None,
            dp_sgd_noise: vec![0.001, 0.01, 0.1, 0.3, 1.0],
            dp_sgd_clip: 1.0,
            ldp_epsilon: [1.0, 10.0, 100.0, 1e3, 1e4, 1e5]
                .map(|e| Epsilon::finite(e).unwrap())
                .to_vec(),
            laplace_clip: 0.01,
            prs_clip: 1.0,
            train_env_steps: DQN_STEPS,
            delta: 1e-5,
            adjacency: Adjacency::AddRemove,
            dpsgd_runs: None,
            pgc_runs: None,
            victim_train_steps: 0,
            batch_sizes: vec![1],
            seed,
            backend,
            threads,
            noise_rng: NoiseRng::Seeded,
        }
    }

    pub(super) fn plan(&self) -> Result<LeakagePlan> {
        let pick =
            |v: Option<usize>, quick, full| v.unwrap_or(if self.quick { quick } else { full });
        let plan = LeakagePlan {
            samples: pick(self.samples, 20, 40),
            image_size: pick(self.image_size, 16, 32),
            iterations: pick(self.iterations, 300, 1000),
            tv_weight: self
                .tv_weight
                .unwrap_or(if self.quick { 0.01 } else { 0.1 }),
            seed: self.seed,
            backend: self.backend,
            train_env_steps: self.train_env_steps,
            train_dqn: dqn_config(),
            delta: self.delta,
            adjacency: self.adjacency,
            defences: self.defences(),
            victim_train_steps: self.victim_train_steps,
            batch_sizes: self.batch_sizes.clone(),
            noise_rng: self.noise_rng,
        };
        for &b in &plan.batch_sizes {
            anyhow::ensure!(
                (1..=privrl_attacks::MAX_BATCH).contains(&b),
                "--batch-sizes must each be in 1..={}, got {b}",
                privrl_attacks::MAX_BATCH
            );
        }
        anyhow::ensure!(plan.samples >= 1, "--samples must be at least 1");
        anyhow::ensure!(
            (8..=512).contains(&plan.image_size),
            "--image-size must be in 8..=512, got {}",
            plan.image_size
        );
        anyhow::ensure!(
            self.train_env_steps >= 1,
            "--train-env-steps must be at least 1"
        );
        anyhow::ensure!(
            self.delta > 0.0 && self.delta < 1.0,
            "--delta must be in (0, 1), got {}",
            self.delta
        );
        for defence in &plan.defences {
            defence
                .build(1, 1)
                .with_context(|| format!("defence {defence}"))?;
        }
        Ok(plan)
    }

    /// No defence, clipping alone, DP-SGD over σ, Laplace and PRS over ε.
    fn defences(&self) -> Vec<GradientMechanismConfig> {
        let mut defences = vec![
            GradientMechanismConfig::None,
            GradientMechanismConfig::Clip {
                clip: self.dp_sgd_clip,
            },
        ];
        defences.extend(self.dp_sgd_noise.iter().map(|&noise_multiplier| {
            GradientMechanismConfig::DpSgd {
                clip: self.dp_sgd_clip,
                noise_multiplier,
            }
        }));
        defences.extend(
            self.ldp_epsilon
                .iter()
                .map(|&epsilon| GradientMechanismConfig::Laplace {
                    epsilon,
                    clip: self.laplace_clip,
                }),
        );
        defences.extend(
            self.ldp_epsilon
                .iter()
                .map(|&epsilon| GradientMechanismConfig::Prs {
                    epsilon,
                    clip: self.prs_clip,
                }),
        );
        defences
    }
}

/// Resolved parameters (what `config.json` records).
#[derive(Debug, Clone, Serialize)]
pub(super) struct LeakagePlan {
    pub(super) samples: usize,
    pub(super) image_size: usize,
    pub(super) iterations: usize,
    pub(super) tv_weight: f64,
    pub(super) seed: u64,
    pub(super) backend: BackendChoice,
    pub(super) train_env_steps: u64,
    /// The DQN whose sampling schedule the DP-SGD ε is accounted over.
    pub(super) train_dqn: DqnConfig,
    pub(super) delta: f64,
    pub(super) adjacency: Adjacency,
    pub(super) defences: Vec<GradientMechanismConfig>,
    pub(super) victim_train_steps: usize,
    pub(super) batch_sizes: Vec<usize>,
    pub(super) noise_rng: NoiseRng,
}

impl LeakagePlan {
    /// ε per transition of the DP-SGD DQN training run at noise σ: the RDP composition of
    /// every gradient step at the sampling rate it uses ([`PrivacyTally::dqn_schedule`]), at δ,
    /// under the plan's adjacency.
    /// (One constant q = |B|/capacity over the run understated it about 2.7× at σ = 1: the
    /// buffer is small, so q large, early on.)
    pub(super) fn training_epsilon(&self, noise_multiplier: f64) -> f64 {
        PrivacyTally::dqn_schedule(
            &self.train_dqn,
            self.train_env_steps,
            noise_multiplier,
            self.delta,
        )
        .with_adjacency(self.adjacency)
        .epsilon()
        .unwrap_or(f64::INFINITY)
    }

    /// ε per episode of DP-SGD REINFORCE at noise σ: every episode enters exactly one release
    /// (the episodes of a step are fresh and discarded after it, see
    /// [`privrl_agents::DpSgdReinforce`]), so it is one Gaussian release at q = 1, whatever the
    /// training length, under the plan's adjacency and δ.
    pub(super) fn episode_epsilon(&self, noise_multiplier: f64) -> f64 {
        let mut tally = PrivacyTally::new(PrivacyUnit::Episode, noise_multiplier, self.delta)
            .with_adjacency(self.adjacency);
        tally.record(1.0, 1);
        tally.epsilon().unwrap_or(f64::INFINITY)
    }

    /// The unit a DP-SGD ε protects for the victim `method` attacks: a transition of DQN's
    /// replay buffer (QGI), an episode of REINFORCE (RGI). The two are not comparable, so
    /// they are never drawn on one ε axis.
    pub(super) fn dp_sgd_unit(method: Method) -> PrivacyUnit {
        match method {
            Method::Rgi => PrivacyUnit::Episode,
            _ => PrivacyUnit::Transition,
        }
    }

    /// What the DP-SGD ε of `method`'s victim means, for every label that prints it.
    pub(super) fn dp_sgd_epsilon_label(&self, method: Method) -> String {
        let unit = Self::dp_sgd_unit(method);
        let run = match unit {
            PrivacyUnit::Transition => {
                format!("DP-SGD DQN run of {} env steps", self.train_env_steps)
            }
            PrivacyUnit::Episode => "DP-SGD REINFORCE, each episode in one release".to_owned(),
        };
        format!(
            "ε per {} ({run}, RDP, {}, δ = {})",
            unit.name(),
            self.adjacency.name(),
            self.delta
        )
    }

    /// The ε a cell is plotted at: per release for Laplace and PRS, for DP-SGD that of the
    /// victim's own training ([`LeakagePlan::dp_sgd_unit`]), ∞ without a guarantee.
    pub(super) fn epsilon(&self, method: Method, defence: &GradientMechanismConfig) -> f64 {
        match *defence {
            GradientMechanismConfig::DpSgd {
                noise_multiplier, ..
            } => match Self::dp_sgd_unit(method) {
                PrivacyUnit::Transition => self.training_epsilon(noise_multiplier),
                PrivacyUnit::Episode => self.episode_epsilon(noise_multiplier),
            },
            _ => defence.epsilon().map_or(f64::INFINITY, Epsilon::value),
        }
    }

    /// The unit an ε of `defence` protects, for the tables: per transition or per episode for
    /// DP-SGD, per release (one gradient) for the local mechanisms.
    pub(super) fn epsilon_unit(method: Method, defence: &GradientMechanismConfig) -> String {
        match defence {
            GradientMechanismConfig::DpSgd { .. } => {
                format!("per {}", Self::dp_sgd_unit(method).name())
            }
            GradientMechanismConfig::Laplace { .. } | GradientMechanismConfig::Prs { .. } => {
                "per release".to_owned()
            }
            _ => String::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::suites::leakage::tests::tiny_args;

    #[test]
    fn rgi_cells_sit_at_reinforce_episode_epsilon_not_the_dqn_one() {
        let plan = tiny_args().plan().unwrap();
        let sigma = 1.0;
        let defence = GradientMechanismConfig::DpSgd {
            noise_multiplier: sigma,
            clip: 1.0,
        };
        // One Gaussian release (q = 1, one step), whatever the training length; the
        // accountant itself is checked against Opacus in privacy/tests/rdp_opacus.rs.
        let one_release = privrl_privacy::dp_sgd_epsilon(1.0, sigma, 1, plan.delta).unwrap();
        let rgi = plan.epsilon(Method::Rgi, &defence);
        assert!((rgi - one_release).abs() < 1e-9, "{rgi} vs {one_release}");
        let qgi = plan.epsilon(Method::Qgi, &defence);
        assert_eq!(qgi, plan.training_epsilon(sigma));
        assert!(
            qgi > rgi,
            "the DQN run composes many releases: {qgi} vs {rgi}"
        );
        assert!(plan
            .dp_sgd_epsilon_label(Method::Rgi)
            .contains("per episode"));
        assert!(plan
            .dp_sgd_epsilon_label(Method::Qgi)
            .contains("per transition"));
        assert_eq!(
            LeakagePlan::epsilon_unit(Method::Rgi, &defence),
            "per episode"
        );
    }

    #[test]
    fn quick_matches_what_clap_parses() {
        #[derive(clap::Parser)]
        struct Cli {
            #[command(flatten)]
            args: LeakageArgs,
        }
        let parsed = <Cli as clap::Parser>::parse_from(["leakage", "--quick", "--seed", "3"]).args;
        let built = LeakageArgs::quick(3, BackendChoice::default(), 0);
        assert_eq!(format!("{parsed:?}"), format!("{built:?}"));
    }

    /// The DP-SGD cells' ε composes the DQN's real sampling schedule: far above one constant
    /// q = |B|/capacity over as many steps, which the suite used to print.
    #[test]
    fn dp_sgd_epsilon_follows_the_replay_buffers_schedule() {
        let plan = tiny_args().plan().unwrap();
        let tally = PrivacyTally::dqn_schedule(&plan.train_dqn, DQN_STEPS, 1.0, plan.delta);
        // Gradient steps at every even t from 1000 to 20000.
        assert_eq!(tally.steps(), 9_501);
        let eps = plan.training_epsilon(1.0);
        assert_eq!(eps, tally.epsilon().unwrap());
        let constant_q = privrl_privacy::dp_sgd_epsilon(0.0128, 1.0, 9_501, plan.delta).unwrap();
        eprintln!("schedule ε = {eps}, constant-q ε = {constant_q}");
        assert!(eps > 2.0 * constant_q, "{eps} vs {constant_q}");
    }

    #[test]
    fn bad_input_is_refused_with_the_allowed_range() {
        let mut args = tiny_args();
        args.dp_sgd_noise = vec![-1.0];
        let error = format!("{:#}", args.plan().unwrap_err());
        assert!(error.contains("noise_multiplier"), "{error}");
        let mut args = tiny_args();
        args.train_env_steps = 0;
        assert!(args.plan().is_err());
        let mut args = tiny_args();
        args.batch_sizes = vec![16];
        let error = format!("{:#}", args.plan().unwrap_err());
        assert!(error.contains("1..=8"), "{error}");
    }
}

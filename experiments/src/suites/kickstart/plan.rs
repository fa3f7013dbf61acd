//! `suite kickstart`'s command-line arguments and the plan they resolve to (what the suite's
//! `config.json` records).

use clap::{Args, ValueEnum};
use privrl_agents::{
    DirichletRelease, ExhaustedTeacher, PpoConfig, PrivateTeacherConfig, VanishingUnit,
};
use privrl_privacy::SimplexMap;
use serde::{Deserialize, Serialize};

use super::SUITE;
use crate::backend::BackendChoice;
use crate::noise_rng::NoiseRng;

/// What an exhausted teacher shares (command-line form of [`ExhaustedTeacher`]).
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Exhausted {
    /// Uniformly random policies, (0, 0)-DP.
    Uniform,
    /// Nothing.
    Stop,
}

/// Command-line form of [`VanishingUnit`].
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum VanishingPer {
    /// Every PPO epoch.
    Rollout,
    /// Every episode.
    Trajectory,
}

/// Command-line form of [`SimplexMap`]: how the teacher's policy enters Δ_{m,η}.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MapOnto {
    /// (1 − mη)π + η: mix with the uniform policy (moves every policy, L shrinks by 1 − mη).
    Mix,
    /// The Euclidean projection (keeps policies already in Δ_{m,η}, 1-Lipschitz).
    Project,
}

impl MapOnto {
    pub(super) fn map(self) -> SimplexMap {
        match self {
            MapOnto::Mix => SimplexMap::MixWithUniform,
            MapOnto::Project => SimplexMap::EuclideanProjection,
        }
    }
}

/// How a student is kickstarted.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub(super) struct Kick {
    /// Dirichlet mechanism on (else the exact teacher policy).
    pub(super) mechanism: bool,
    /// Vanishing coefficient of k.
    pub(super) vanishing: f64,
    /// λ of eq. 15.
    pub(super) lambda: f64,
    /// k₀.
    pub(super) k0: f64,
    /// How the teacher's policy enters Δ_{m,η}.
    pub(super) map_onto: MapOnto,
    /// φ ≡ 0 on uniformly random releases.
    pub(super) ignore_uninformative: bool,
}

/// Arguments of `suite kickstart`.
#[derive(Args, Debug, Clone, Serialize)]
pub struct KickstartArgs {
    /// Quick mode: 2 seeds and 15 student epochs (the teacher and epoch length of the full run).
    #[arg(long)]
    pub quick: bool,
    /// Number of seeds per setting (0, 1, …, K−1). Default 2 quick, 10 otherwise (the
    /// paper: 30).
    #[arg(long)]
    pub seeds: Option<usize>,
    /// Environment id (`cargo xtask env list`, or `gymnasium:<id>` with the gymnasium
    /// feature). CartPole-v1 by measurement: (32, 32) PPO clearly lags (64, 64) there.
    #[arg(long, default_value = "CartPole-v1")]
    pub env: String,
    /// Student and baseline epochs per seed. Default 15 quick, 30 otherwise.
    #[arg(long)]
    pub epochs: Option<usize>,
    /// Teacher training epochs. Default 40.
    #[arg(long)]
    pub teacher_epochs: Option<usize>,
    /// Environment steps per epoch (the paper: 1000).
    #[arg(long)]
    pub steps_per_epoch: Option<usize>,
    /// Initial concentration k₀ of the Dirichlet mechanism (the paper: 5).
    #[arg(long, default_value_t = 5.0)]
    pub k0: f64,
    /// λ of the privacy-aware students in (c) (the paper: 0.5).
    #[arg(long, default_value_t = 0.5)]
    pub lambda: f64,
    /// Confidence level β of Lemma 1 in α_λ (eq. 15).
    #[arg(long, default_value_t = 0.05)]
    pub beta: f64,
    /// Weight of E\[φ_λ\] against the PPO surrogate (the paper's optional balance coefficient).
    #[arg(long, default_value_t = 1.0)]
    pub balance: f64,
    /// η of Δ_{m,η}. Default 0.4/m (0.2 for two actions: with τ = 0.0127 that gives δ ≈ 0.05
    /// at k = 5, the paper's δ).
    #[arg(long)]
    pub eta: Option<f64>,
    /// τ of Theorem 1 (outputs with an entry below τ are the δ event, eq. 6). Default: the
    /// largest τ whose δ at k₀ is `--target-delta` for the env's number of actions m (0.0127
    /// for m = 2).
    #[arg(long)]
    pub tau: Option<f64>,
    /// δ of one release at k₀ that the default τ is solved for (the paper: (4.46, 0.05) at
    /// k₀ = 5).
    #[arg(long, default_value_t = 0.05)]
    pub target_delta: f64,
    /// Confidence of the one-sided (Clopper–Pearson) upper bound on a Monte Carlo δ (m > 2),
    /// and of τ's solution for --target-delta. The default 1 − 1e-9 fails to cover the true δ
    /// with probability at most 1e-9 per distinct k. Units committed before 2026-11-28 ran at
    /// 0.95 with a two-sided Hoeffding half-width: give 0.95 to read them back (their
    /// config.json records it).
    #[arg(long, default_value_t = privrl_privacy::DELTA_CONFIDENCE)]
    pub delta_confidence: f64,
    /// Keep releasing at every k of the schedule down to the floor even where one release's δ
    /// is 0.5 or more (a near-vacuous guarantee). Without it a setting whose δ at k₀ is ≥ 0.5 is
    /// refused, and every other teacher stops sharing (is exhausted) before its first release
    /// with δ ≥ 0.5: the suite raises its concentration floor to the last k of the schedule
    /// k₀, c·k₀, c²·k₀, … whose δ is below 0.5.
    #[arg(long)]
    pub allow_weak_privacy: bool,
    /// How the teacher's policy enters Δ_{m,η} before Dir_k.
    #[arg(long, value_enum, default_value_t = MapOnto::Mix)]
    pub map_onto: MapOnto,
    /// Release each demonstration through the floating-point-safe grid variant of the
    /// Dirichlet mechanism with N grid points (two actions only, e.g. CartPole): one point
    /// (j/N, 1 − j/N) of Δ_{2,τ} drawn by exact integer arithmetic, pure ε-DP with
    /// ε = 2kΔG + 4μ and δ = 0 by its own accounting (docs/kickstarting.md, "Floating
    /// point"), composed in the teacher's ledger like Theorem 1's. N in [2, 2^20] with a point
    /// in [τ, 1 − τ]. Default: the paper's real-valued Dir(kπ), sampled in f64, with Theorem 1's
    /// (ε, δ).
    #[arg(long, value_name = "N")]
    pub grid_release: Option<u32>,
    /// Carry episodes over PPO epoch boundaries instead of Spinning Up's reset at every
    /// epoch's end.
    #[arg(long)]
    pub no_epoch_reset: bool,
    /// Instead of Fig. 2, the one-factor CartPole diagnosis: from the pre-fix setting (no
    /// epoch reset, φ on uniform releases, mixing, c = 0.3, λ = 0.5, k₀ = 5, τ = 0.0127) vary
    /// one of: epoch reset, φ ≡ 0 on uniform releases, projection, c ∈ 0.1…0.9,
    /// λ ∈ {0, 0.1, 1, 2}, k₀ ∈ {2, 10, 50}. Units go to `<out>/kickstart-<env>/`; finished
    /// units are skipped on a rerun.
    #[arg(long)]
    pub ablation: bool,
    /// Where the unit directories and report go, in a subdirectory per env
    /// (`<out>/kickstart-<env>/`, e.g. `results/kickstart-airraid`). Default: `results` with
    /// `--ablation`, else the run root (`runs/kickstart/`).
    #[arg(long)]
    pub out: Option<std::path::PathBuf>,
    /// Checkpoint each training run (teacher, student, baseline) every N epochs into its
    /// `partial/` directory, and start every PPO epoch from an environment reset seeded by the
    /// agent (so that the environment, even a Gymnasium process, can be restored): a rerun of
    /// the same command resumes an interrupted run from its last checkpoint, bit for bit. The
    /// seeded resets change the runs' outputs against 0, so it is part of each run's
    /// configuration. Settings that carry episodes over epochs (`--no-epoch-reset`) cannot
    /// be checkpointed and ignore it. 0: off.
    #[arg(long, default_value_t = 0)]
    pub checkpoint_every: usize,
    /// Stop after this many minutes of wall time: each run in progress checkpoints at its next
    /// epoch boundary and stops, the report is written from the finished runs, and a rerun of
    /// the same command continues (needs `--checkpoint-every`). For protocols longer than one
    /// sitting.
    #[arg(long)]
    #[serde(skip)]
    pub time_limit: Option<f64>,
    /// Write the report from the finished units only, train nothing (units are read whatever
    /// configuration they record; the report prints what each setting's units ran with).
    #[arg(long)]
    pub report_only: bool,
    /// Adjacency radius b of Definition 1 (the paper does not give its value).
    #[arg(long, default_value_t = 0.01)]
    pub adjacency: f64,
    /// The teacher is exhausted once k falls below this floor.
    #[arg(long, default_value_t = 0.01)]
    pub concentration_floor: f64,
    /// Total ε budget of the teacher under basic composition (none by default: the floor
    /// ends the sharing).
    #[arg(long)]
    pub budget_epsilon: Option<f64>,
    /// What an exhausted teacher shares.
    #[arg(long, value_enum, default_value_t = Exhausted::Uniform)]
    pub exhausted: Exhausted,
    /// When k is multiplied by the vanishing coefficient: every rollout (epoch; the default,
    /// because a paper AirRaid episode lasts about one 1000-step epoch while a CartPole episode
    /// starts at ~20 steps) or every trajectory (episode; the paper's wording).
    #[arg(long, value_enum, default_value_t = VanishingPer::Rollout)]
    pub vanishing_per: VanishingPer,
    /// Also run the full sweeps of (c): vanishing coefficients 0.1…0.9 at λ, and λ ∈ {0.1,
    /// 0.5, 1, 2} at coefficient 0.3.
    #[arg(long)]
    pub sweep: bool,
    /// Run only these settings (comma-separated names as in the report, e.g.
    /// `ppo-64,ppo-32,kickstart,aware-c0.3-l0.5,aware-c0.3-l1,unaware-c0.3`; `aware-c0.3-l1`
    /// exists with `--sweep`). Default: every setting of the chosen mode.
    #[arg(long, value_delimiter = ',')]
    pub settings: Vec<String>,
    /// Seed of the teacher's training (students and baselines use seeds 0..K).
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Backend.
    #[arg(long, value_enum, default_value_t = BackendChoice::default())]
    pub backend: BackendChoice,
    /// Worker threads (0: one per core); each trains one (setting, seed).
    #[arg(long, default_value_t = 0)]
    #[serde(skip)]
    pub threads: usize,
    /// Where the teacher's Dirichlet releases draw from: `seeded` (from each run's seed,
    /// reproducible) or `secure` (the OS CSPRNG).
    #[arg(long, value_enum, default_value_t = NoiseRng::Seeded)]
    pub noise_rng: NoiseRng,
}

/// A configuration the suite refuses, by name.
#[derive(Debug, thiserror::Error)]
pub enum KickstartError {
    /// One release at k₀ has δ ≥ 0.5 (or no guarantee at all): near-vacuous privacy.
    #[error(
        "weak privacy: setting `{setting}` releases with delta = {delta} per release at k0 = {k0} \
         (m = {actions} actions, eta = {eta}, tau = {tau}); delta >= 0.5 is a near-vacuous \
         guarantee. Lower --tau (or leave it unset to solve it for --target-delta), raise --k0 or \
         --eta, or pass --allow-weak-privacy to run it anyway"
    )]
    WeakPrivacy {
        setting: String,
        /// δ of one release (1 where Theorem 1 gives none).
        delta: f64,
        k0: f64,
        actions: usize,
        eta: f64,
        tau: f64,
    },
    /// `--settings` names a setting the chosen mode does not have.
    #[error("unknown setting `{name}` in --settings; this mode has: {known}")]
    UnknownSetting {
        /// The name given.
        name: String,
        /// The mode's settings, comma-separated.
        known: String,
    },
    /// `--time-limit` stopped a run the others need (the teacher) before it finished.
    #[error(
        "time limit reached: {run} stopped after epoch {epoch} of {epochs} and was checkpointed; \
         rerun the same command to continue it"
    )]
    TimeLimit {
        /// Which run.
        run: String,
        /// Epochs done.
        epoch: usize,
        /// Epochs planned.
        epochs: usize,
    },
}

/// Resolved parameters (what the suite's `config.json` records).
#[derive(Debug, Clone, Serialize, PartialEq)]
pub(super) struct KickstartPlan {
    pub(super) env: String,
    pub(super) seeds: usize,
    pub(super) epochs: usize,
    pub(super) teacher_epochs: usize,
    pub(super) steps_per_epoch: usize,
    pub(super) teacher_hidden: Vec<usize>,
    pub(super) student_hidden: Vec<usize>,
    pub(super) k0: f64,
    pub(super) lambda: f64,
    pub(super) beta: f64,
    pub(super) balance: f64,
    pub(super) eta: Option<f64>,
    pub(super) tau: Option<f64>,
    pub(super) target_delta: f64,
    pub(super) delta_confidence: f64,
    pub(super) allow_weak_privacy: bool,
    pub(super) map_onto: MapOnto,
    /// The grid release's N (`--grid-release`); absent from `config.json` when off.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) grid_release: Option<u32>,
    pub(super) epoch_reset: bool,
    pub(super) ablation: bool,
    /// Units go to `kickstart-<env>/` (the ablation, or `--out`), else to `kickstart/`.
    pub(super) dir_per_env: bool,
    pub(super) checkpoint_every: usize,
    pub(super) adjacency: f64,
    pub(super) concentration_floor: f64,
    pub(super) budget_epsilon: Option<f64>,
    pub(super) exhausted: Exhausted,
    pub(super) vanishing_per: VanishingPer,
    pub(super) sweep: bool,
    /// Only these settings (empty: all).
    pub(super) only: Vec<String>,
    pub(super) seed: u64,
    pub(super) backend: BackendChoice,
    pub(super) band_percentiles: (f64, f64),
    pub(super) noise_rng: NoiseRng,
}

impl KickstartArgs {
    /// Quick mode with every other flag at its default (for `quickstart`).
    pub fn quick(seed: u64, backend: BackendChoice, threads: usize) -> Self {
        Self {
            quick: true,
            seeds: None,
            env: "CartPole-v1".into(),
            epochs: None,
            teacher_epochs: None,
            steps_per_epoch: None,
            k0: 5.0,
            lambda: 0.5,
            beta: 0.05,
            balance: 1.0,
            eta: None,
            tau: None,
            target_delta: 0.05,
            delta_confidence: privrl_privacy::DELTA_CONFIDENCE,
            allow_weak_privacy: false,
            map_onto: MapOnto::Mix,
            grid_release: None,
            no_epoch_reset: false,
            ablation: false,
            out: None,
            checkpoint_every: 0,
            time_limit: None,
            report_only: false,
            adjacency: 0.01,
            concentration_floor: 0.01,
            budget_epsilon: None,
            exhausted: Exhausted::Uniform,
            vanishing_per: VanishingPer::Rollout,
            sweep: false,
            settings: Vec::new(),
            seed,
            backend,
            threads,
            noise_rng: NoiseRng::Seeded,
        }
    }

    pub(super) fn plan(&self) -> KickstartPlan {
        let pick =
            |v: Option<usize>, quick, full| v.unwrap_or(if self.quick { quick } else { full });
        KickstartPlan {
            env: self.env.clone(),
            seeds: pick(self.seeds, 2, 10),
            // Quick: the full run's teacher (40 epochs of 1000 steps returns 500 on CartPole)
            // and 15 student epochs: at epoch 15 of the CartPole ablation (its pre-fix setting)
            // exact-teacher students returned 342–500 against 136–465 for PPO (32, 32) from
            // scratch over 10 seeds; with a 12-epoch
            // teacher and 6 epochs of 500 steps no student could differ (40.6 against 42.0).
            epochs: pick(self.epochs, 15, 30),
            teacher_epochs: pick(self.teacher_epochs, 40, 40),
            steps_per_epoch: pick(self.steps_per_epoch, 1000, 1000),
            teacher_hidden: vec![64, 64],
            student_hidden: vec![32, 32],
            k0: self.k0,
            lambda: self.lambda,
            beta: self.beta,
            balance: self.balance,
            eta: self.eta,
            // The ablation starts from the pre-fix setting, whose τ was 0.0127.
            tau: self.tau.or(self.ablation.then_some(0.0127)),
            target_delta: self.target_delta,
            delta_confidence: self.delta_confidence,
            allow_weak_privacy: self.allow_weak_privacy,
            map_onto: self.map_onto,
            grid_release: self.grid_release,
            // The ablation's references and teacher are the pre-fix PPO (episodes carried over).
            epoch_reset: !self.no_epoch_reset && !self.ablation,
            ablation: self.ablation,
            dir_per_env: self.ablation || self.out.is_some(),
            checkpoint_every: self.checkpoint_every,
            adjacency: self.adjacency,
            concentration_floor: self.concentration_floor,
            budget_epsilon: self.budget_epsilon,
            exhausted: self.exhausted,
            vanishing_per: self.vanishing_per,
            sweep: self.sweep,
            only: self.settings.clone(),
            seed: self.seed,
            backend: self.backend,
            band_percentiles: (25.0, 75.0),
            noise_rng: self.noise_rng,
        }
    }
}

/// Where the suite's runs go, relative to the run root: `kickstart`, or for the ablation and
/// with `--out` `kickstart-<env>`, the env's name without backend, namespace, version or
/// options (`kickstart-cartpole`, `kickstart-airraid` for
/// `gymnasium:ALE/AirRaid-v5?obs_type=ram#obs_scale=1/255`).
pub(super) fn suite_dir_name(plan: &KickstartPlan) -> String {
    if plan.dir_per_env {
        let id = plan.env.rsplit(':').next().unwrap_or(&plan.env);
        let id = id.split(['?', '#']).next().unwrap_or(id);
        let id = id.rsplit('/').next().unwrap_or(id);
        let env = id.split('-').next().unwrap_or(id).to_lowercase();
        format!("{SUITE}-{env}")
    } else {
        SUITE.to_string()
    }
}

impl KickstartPlan {
    /// PPO for the teacher and the baselines, with the plan's epoch-end rule.
    pub(super) fn ppo(&self, hidden: &[usize]) -> PpoConfig {
        self.ppo_with_reset(hidden, self.epoch_reset)
    }

    pub(super) fn ppo_with_reset(&self, hidden: &[usize], epoch_reset: bool) -> PpoConfig {
        PpoConfig::new()
            .with_steps_per_epoch(self.steps_per_epoch)
            .with_hidden(hidden.to_vec())
            .with_reset_at_epoch_end(epoch_reset)
            .with_reseed_at_epoch_end(epoch_reset && self.checkpoint_every > 0)
    }

    /// The teacher's configuration for `kick` with m = `actions`: τ as given, else solved for
    /// `target_delta` at the plan's k₀ (not the setting's, so that varying k₀ varies k₀ only).
    pub(super) fn teacher_config(
        &self,
        actions: usize,
        kick: &Kick,
    ) -> Result<PrivateTeacherConfig, privrl_agents::AgentError> {
        let base = self.teacher_config_with_tau(actions, kick, self.tau.unwrap_or(0.0127));
        match self.tau {
            _ if !kick.mechanism => Ok(base),
            Some(_) => Ok(base),
            None => {
                let tau = base
                    .clone()
                    .with_initial_concentration(self.k0)
                    .calibrated_tau(actions, self.target_delta)?;
                Ok(base.with_tau(tau))
            }
        }
    }

    fn teacher_config_with_tau(
        &self,
        actions: usize,
        kick: &Kick,
        tau: f64,
    ) -> PrivateTeacherConfig {
        PrivateTeacherConfig::new()
            .with_mechanism(kick.mechanism)
            .with_initial_concentration(kick.k0)
            .with_vanishing_coefficient(kick.vanishing)
            .with_simplex_map(kick.map_onto.map())
            .with_release(match self.grid_release {
                Some(points) => DirichletRelease::Grid { points },
                None => DirichletRelease::Real,
            })
            .with_vanishing_unit(match self.vanishing_per {
                VanishingPer::Rollout => VanishingUnit::Rollout,
                VanishingPer::Trajectory => VanishingUnit::Trajectory,
            })
            .with_concentration_floor(self.concentration_floor)
            .with_eta(self.eta.unwrap_or(0.4 / actions as f64))
            .with_tau(tau)
            .with_adjacency(self.adjacency)
            .with_budget_epsilon(self.budget_epsilon)
            .with_exhausted(match self.exhausted {
                Exhausted::Uniform => ExhaustedTeacher::Uniform,
                Exhausted::Stop => ExhaustedTeacher::Stop,
            })
            .with_noise_rng(self.noise_rng.mode())
            .with_delta_confidence(self.delta_confidence)
    }
}

//! Privacy-preserving kickstarting (paper 000, Gohari et al., Sections 3–5).
//!
//! - [`Teacher`]: a trained policy network (host copy) with its certified Lipschitz bound L,
//!   computed once by [`privrl_privacy::mlp_lipschitz_bound`].
//! - [`PrivateTeacher`]: answers every state the student visits with a demonstration. With the
//!   mechanism on, the teacher's policy is mapped onto Δ_{m,η} and released through the
//!   Dirichlet mechanism Dir_k (eq. 5); k is multiplied by the *vanishing coefficient* at the
//!   start of every trajectory after the first (Section 5); every release goes to a
//!   [`Ledger`] with its (ε, δ) from Theorem 1 (eq. 12 and eq. 6/13). Once the budget is spent,
//!   k falls below the floor, or δ becomes vacuous, the teacher shares uniformly random
//!   policies ((0, 0)-DP, remark at the end of Section 4) or stops, as configured.
//! - [`PrivacyAwareKickstarting`]: the student's extra loss term E\[φ_λ\] (eq. 15–17), an
//!   [`AuxiliaryPolicyLoss`] for [`crate::Ppo`].
//!
//! Choices where the paper is silent:
//!
//! - the policy map onto Δ_{m,η} is [`SimplexMap::MixWithUniform`] by default, which is
//!   (1 − mη)-Lipschitz, so Theorem 1 uses L = (1 − mη) · L_softmax∘MLP; the Euclidean
//!   projection ([`PrivateTeacherConfig::simplex_map`]) is 1-Lipschitz and leaves policies
//!   already in Δ_{m,η} where they are;
//! - τ is the configured one; [`PrivateTeacherConfig::calibrated_tau`] solves for the τ that
//!   gives a target δ at k₀ for the teacher's m (a τ chosen for m = 2 is vacuous at m = 6);
//! - the first trajectory uses k₀; the coefficient multiplies k at the start of each later one;
//! - δ of a release is the one-sided Clopper–Pearson upper bound of its Monte Carlo estimate
//!   at confidence 1 − 1e-9 (exact for m = 2); because k changes only once per trajectory,
//!   (ε, δ) is computed once per distinct k and memoised, and by the union bound every δ of a
//!   run holds at once with probability at least 1 − (distinct k)·1e-9;
//! - the release is the real-valued Dir(kπ) sampled in f64 ([`DirichletRelease::Real`], the
//!   paper's mechanism, accounted by Theorem 1), or for two actions its floating-point-safe grid
//!   variant ([`DirichletRelease::Grid`], [`privrl_privacy::GridDirichletMechanism`], pure ε-DP
//!   with ε = 2kΔG + 4μ and δ = 0 by its own accounting), composed in the same ledger;
//! - a uniformly random release carries no information about the teacher, and by default the
//!   student gives it no weight (φ ≡ 0, [`PrivacyAwareConfig::ignore_uninformative`]); with that
//!   off it counts as k = 0 for the ball radius α_λ (the limit of eq. 15 as k → 0⁺). An exact
//!   (non-private) demonstration counts as k = ∞ (α_λ = 0).

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard};

use burn::config::Config;
use burn::tensor::backend::{AutodiffBackend, Backend};
use burn::tensor::{Tensor, TensorData};
use privrl_privacy::{
    mlp_lipschitz_bound, penalty_radius, restrict_to_simplex, DirichletConfig, DirichletPrivacy,
    DirichletSampler, GridDirichletMechanism, Ledger, LedgerRun, LipschitzBound, Matrix, Mechanism,
    MechanismRng, MechanismRngState, NoiseMode, OutputMap, PrivacyCost, SimplexMap,
};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use crate::agent::{load_json, save_json};
use crate::error::{check_count, check_non_negative, check_positive, AgentError};
use crate::heads::host_softmax;
use crate::network::HostMlp;
use crate::nn::{Activation, Mlp};
use crate::ppo::AuxiliaryPolicyLoss;
use crate::tensor::{float_of_mask, float_options};

// ---------------------------------------------------------------------------------------------
// Teacher
// ---------------------------------------------------------------------------------------------

/// A trained teacher policy: a host copy of its MLP and the Lipschitz bound of
/// softmax ∘ MLP in ‖·‖₂ (the L of Theorem 1 before the map onto Δ_{m,η}).
#[derive(Debug, Clone)]
pub struct Teacher {
    policy: HostMlp,
    lipschitz: LipschitzBound,
}

impl Teacher {
    /// The teacher whose policy is softmax(`actor`(s)). Computes L once.
    pub fn from_actor<B: Backend>(actor: &Mlp<B>) -> Result<Self, AgentError> {
        let layers = actor
            .layers
            .iter()
            .map(|layer| {
                let (d_input, d_output) = layer.dims();
                let weight: Vec<f32> = layer
                    .weight
                    .val()
                    .into_data()
                    .convert::<f32>()
                    .into_vec::<f32>()
                    .map_err(|_| AgentError::UnsupportedEnv {
                        env: "teacher".into(),
                        reason: "its weights could not be read as f32".into(),
                    })?;
                // Burn stores [d_input, d_output] (y = x W); the bound wants rows = outputs.
                Ok(Matrix::from_f32(d_input, d_output, &weight)?.transposed())
            })
            .collect::<Result<Vec<_>, AgentError>>()?;
        let hidden = match actor.activation {
            Activation::Tanh => privrl_privacy::Activation::Tanh,
            Activation::Relu => privrl_privacy::Activation::Relu,
        };
        let lipschitz = mlp_lipschitz_bound(&layers, hidden, OutputMap::Softmax)?;
        Ok(Self {
            policy: HostMlp::from_mlp(actor),
            lipschitz,
        })
    }

    /// Number of actions m.
    pub fn actions(&self) -> usize {
        self.policy.d_output()
    }

    /// Observation width.
    pub fn obs_len(&self) -> usize {
        self.policy.d_input()
    }

    /// The certified Lipschitz bound of softmax ∘ MLP, with its per-layer norms.
    pub fn lipschitz(&self) -> &LipschitzBound {
        &self.lipschitz
    }

    /// π^t(·|s), the teacher's action probabilities.
    pub fn policy(&self, obs: &[f32]) -> Vec<f64> {
        host_softmax(&self.policy.forward(obs))
            .into_iter()
            .map(f64::from)
            .collect()
    }
}

// ---------------------------------------------------------------------------------------------
// Private demonstrations
// ---------------------------------------------------------------------------------------------

/// What the teacher does once it may no longer release through Dir_k.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum ExhaustedTeacher {
    /// Share a uniformly random policy, Dir(1, …, 1): independent of the data, (0, 0)-DP.
    Uniform,
    /// Share nothing; the student's penalty is 0 on those states.
    Stop,
}

/// When the vanishing coefficient multiplies k.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum VanishingUnit {
    /// At the start of every trajectory (episode) after the first: the paper's wording.
    Trajectory,
    /// At the start of every rollout (PPO epoch) after the first. In the paper's AirRaid an
    /// episode lasts about as long as a 1000-step epoch, so on envs with short episodes this
    /// keeps the paper's schedule in environment steps.
    Rollout,
}

/// How a Dir_k release is drawn and what accounts for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum DirichletRelease {
    /// The paper's mechanism: one draw of the real-valued Dir(kπ), sampled in f64, with the
    /// (ε, δ) of Theorem 1 (eq. 12 and eq. 6/13), which holds for the real-valued mechanism
    /// (docs/kickstarting.md, "Floating point").
    Real,
    /// Two actions only: the floating-point-safe grid variant
    /// ([`privrl_privacy::GridDirichletMechanism`], built by
    /// [`DirichletPrivacy::grid_mechanism`]): one grid point (j/n, 1 − j/n) ∈ Δ_{2,τ}, drawn by
    /// exact integer arithmetic, pure ε-DP with ε = 2kΔG + 4μ and δ = 0 by its own accounting,
    /// with Theorem 1's k, η, τ, L and b.
    Grid {
        /// The grid's denominator n, in [2, [`MAX_GRID_POINTS`]].
        points: u32,
    },
}

/// The largest grid denominator n of [`DirichletRelease::Grid`]: a release computes n weights.
pub const MAX_GRID_POINTS: u32 = 1 << 20;

/// The teacher's side of privacy-preserving kickstarting (Sections 3 and 5 of paper 000).
#[derive(Config, Debug)]
pub struct PrivateTeacherConfig {
    /// Release through the Dirichlet mechanism; `false` shares the exact policy (conventional
    /// kickstarting, no privacy, no ledger entries).
    #[config(default = true)]
    pub mechanism: bool,
    /// k₀, the concentration of the first trajectory (the paper: 5).
    #[config(default = 5.0)]
    pub initial_concentration: f64,
    /// Vanishing coefficient c ∈ (0, 1]: k ← c·k at the start of every later trajectory.
    #[config(default = 1.0)]
    pub vanishing_coefficient: f64,
    /// What counts as a trajectory for the vanishing coefficient (read by the student's loss,
    /// which drives [`PrivateTeacher::start_trajectory`]).
    #[config(default = "VanishingUnit::Trajectory")]
    pub vanishing_unit: VanishingUnit,
    /// Below this k the teacher counts as exhausted (Dir(kπ) with k → 0 is a vertex drawn
    /// from π, whose δ of eq. 6 tends to 1).
    #[config(default = 0.01)]
    pub concentration_floor: f64,
    /// η ∈ (0, 1/m) of Δ_{m,η} (eq. 1).
    #[config(default = 0.1)]
    pub eta: f64,
    /// τ ∈ (0, 1/m) of Theorem 1: outputs outside Δ_{m,τ} are the δ event (eq. 6).
    #[config(default = 0.02)]
    pub tau: f64,
    /// Adjacency radius b of Definition 1 (observations within ‖·‖₂ ≤ b are neighbours).
    #[config(default = 0.01)]
    pub adjacency: f64,
    /// Total ε the teacher may spend under basic composition; `None`: no ε budget.
    pub budget_epsilon: Option<f64>,
    /// Total δ the teacher may spend under basic composition; `None`: no δ budget.
    pub budget_delta: Option<f64>,
    /// What the teacher shares once exhausted.
    #[config(default = "ExhaustedTeacher::Uniform")]
    pub exhausted: ExhaustedTeacher,
    /// How the teacher's policy is put into Δ_{m,η} before Dir_k (eq. 5 needs π ∈ Δ_{m,η}; the
    /// paper does not say how). Mixing with the uniform policy moves every policy (at η = 0.4/m
    /// it keeps 60% of the teacher) but shrinks L by (1 − mη); the Euclidean projection keeps
    /// policies already in Δ_{m,η} and L unchanged.
    #[config(default = "SimplexMap::MixWithUniform")]
    pub simplex_map: SimplexMap,
    /// Monte Carlo draws for δ (eq. 13) when m > 2.
    #[config(default = 20000)]
    pub delta_samples: usize,
    /// Confidence of δ's one-sided (Clopper–Pearson) upper bound when δ is estimated by Monte
    /// Carlo (m > 2); the default is `privrl_privacy::DELTA_CONFIDENCE`, 1 − 1e-9.
    #[config(default = "privrl_privacy::DELTA_CONFIDENCE")]
    pub delta_confidence: f64,
    /// Slack δ' of the advanced composition reported at the end.
    #[config(default = 1e-6)]
    pub advanced_slack: f64,
    /// Where the mechanism's randomness comes from: a generator seeded by the run, or the
    /// operating system's CSPRNG ([`NoiseMode`]).
    #[config(default = "NoiseMode::Seeded")]
    pub noise_rng: NoiseMode,
    /// How each Dir_k release is drawn and accounted: the real-valued Dir(kπ) (the paper's) or,
    /// for two actions, its floating-point-safe grid variant ([`DirichletRelease`]).
    #[config(default = "DirichletRelease::Real")]
    pub release: DirichletRelease,
}

impl PrivateTeacherConfig {
    /// The Lipschitz factor of the map onto Δ_{m,η}: 1 − mη for the mix, 1 for the projection.
    pub fn map_lipschitz(&self, actions: usize) -> f64 {
        match self.simplex_map {
            SimplexMap::MixWithUniform => 1.0 - actions as f64 * self.eta,
            SimplexMap::EuclideanProjection => 1.0,
        }
    }

    /// The largest τ whose δ (eq. 6, the upper bound the teacher accounts with) at k₀ is at most
    /// `target_delta` for `actions` = m, with this η: see [`DirichletPrivacy::solve_tau`]. It
    /// uses the generator [`PrivateTeacher::release_cost`] uses at k₀, so the teacher's δ at
    /// k₀ with the returned τ is at most the target.
    pub fn calibrated_tau(&self, actions: usize, target_delta: f64) -> Result<f64, AgentError> {
        self.validate()?;
        let privacy = DirichletConfig {
            actions,
            concentration: self.initial_concentration,
            eta: self.eta,
            tau: self.tau.min(0.5 / actions as f64),
            // δ does not depend on L.
            lipschitz: 1.0,
            adjacency: self.adjacency,
        }
        .build()?;
        Ok(privacy.solve_tau(
            target_delta,
            self.delta_samples,
            self.delta_confidence,
            || cost_rng(self.initial_concentration),
        )?)
    }

    /// Theorem 1's parameters at k₀ for a teacher with m = `actions` and certified bound
    /// `lipschitz` of softmax ∘ MLP: f = map ∘ softmax ∘ MLP has L = (1 − mη)·`lipschitz` for
    /// the mix, `lipschitz` for the projection.
    ///
    /// With [`DirichletRelease::Grid`] a teacher with m ≠ 2 is refused here
    /// ([`AgentError::InvalidParameter`] naming `release`), once, when the teacher is built.
    pub fn dirichlet_privacy(
        &self,
        actions: usize,
        lipschitz: f64,
    ) -> Result<DirichletPrivacy, AgentError> {
        if matches!(self.release, DirichletRelease::Grid { .. }) && actions != 2 {
            return Err(AgentError::InvalidParameter {
                name: "release",
                value: actions as f64,
                expected: "a teacher with 2 actions (the grid release exists for m = 2 only; \
                           use the real-valued Dirichlet release)",
            });
        }
        Ok(DirichletConfig {
            actions,
            concentration: self.initial_concentration,
            eta: self.eta,
            tau: self.tau,
            lipschitz: self.map_lipschitz(actions) * lipschitz,
            adjacency: self.adjacency,
        }
        .build()?)
    }

    /// (ε, δ) of one Dir_k release at `concentration` = k by Theorem 1 (with
    /// [`DirichletRelease::Grid`]: the grid mechanism's own pure ε, δ = 0), as the teacher
    /// accounts it ([`PrivateTeacher::release_cost`] memoises this), for a teacher with m =
    /// `actions` and certified bound `lipschitz`; `None` if δ's upper bound is ≥ 1 (no
    /// guarantee). Needs no network: a report can list the cost of every k a run used from
    /// the run's recorded configuration and the teacher's recorded bound.
    pub fn release_cost(
        &self,
        actions: usize,
        lipschitz: f64,
        concentration: f64,
    ) -> Result<Option<PrivacyCost>, AgentError> {
        cost_at(
            &self.dirichlet_privacy(actions, lipschitz)?,
            self,
            concentration,
        )
    }

    /// Checks every parameter that does not depend on m.
    pub fn validate(&self) -> Result<(), AgentError> {
        check_positive("initial_concentration", self.initial_concentration)?;
        check_positive("vanishing_coefficient", self.vanishing_coefficient)?;
        if self.vanishing_coefficient > 1.0 {
            return Err(AgentError::InvalidParameter {
                name: "vanishing_coefficient",
                value: self.vanishing_coefficient,
                expected: "in (0, 1]",
            });
        }
        check_non_negative("concentration_floor", self.concentration_floor)?;
        check_positive("eta", self.eta)?;
        check_positive("tau", self.tau)?;
        check_positive("adjacency", self.adjacency)?;
        if let Some(e) = self.budget_epsilon {
            check_non_negative("budget_epsilon", e)?;
        }
        if let Some(d) = self.budget_delta {
            check_non_negative("budget_delta", d)?;
        }
        check_count("delta_samples", self.delta_samples)?;
        check_positive("delta_confidence", self.delta_confidence)?;
        check_positive("advanced_slack", self.advanced_slack)?;
        if let DirichletRelease::Grid { points } = self.release {
            if !(2..=MAX_GRID_POINTS).contains(&points) {
                return Err(AgentError::InvalidParameter {
                    name: "release.points",
                    value: f64::from(points),
                    expected: "in [2, 2^20]",
                });
            }
        }
        Ok(())
    }
}

/// One demonstration π^t(s) as the student receives it.
#[derive(Debug, Clone, PartialEq)]
pub struct Demonstration {
    /// The shared policy (a point of Δ_m).
    pub policy: Vec<f64>,
    /// k it was released with: ∞ for an exact policy, 0 for a uniformly random one.
    pub concentration: f64,
}

/// What the teacher spent and shared over a run.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct TeacherPrivacySummary {
    /// Trajectories started.
    pub trajectories: u64,
    /// Releases through Dir_k (each in the ledger with its cost).
    pub dirichlet_releases: u64,
    /// Uniformly random releases ((0, 0), also in the ledger).
    pub uniform_releases: u64,
    /// Exact releases (mechanism off).
    pub exact_releases: u64,
    /// States answered with nothing (exhausted, [`ExhaustedTeacher::Stop`]).
    pub withheld: u64,
    /// The current k.
    pub concentration: f64,
    /// (ε, δ) of one release at k₀ (`None` with the mechanism off or δ vacuous at k₀).
    pub initial_release: Option<PrivacyCost>,
    /// Total under basic composition (Σε, Σδ).
    pub basic: PrivacyCost,
    /// Total under advanced composition (Kairouz et al.) with slack `advanced_slack`.
    pub advanced: PrivacyCost,
    /// Whether the teacher is exhausted.
    pub exhausted: bool,
}

/// The teacher's side of kickstarting: demonstrations with a vanishing k and a ledger.
#[derive(Debug)]
pub struct PrivateTeacher {
    teacher: Teacher,
    config: PrivateTeacherConfig,
    /// Theorem 1 at k₀ (mechanism on); other k by `with_concentration`.
    privacy: Option<DirichletPrivacy>,
    concentration: f64,
    trajectories: u64,
    ledger: Ledger,
    spent: PrivacyCost,
    /// (ε, δ) per distinct k (by its bits); `None` where δ is vacuous.
    costs: HashMap<u64, Option<PrivacyCost>>,
    /// The grid mechanism per distinct k (by its bits), with [`DirichletRelease::Grid`].
    grids: HashMap<u64, GridDirichletMechanism>,
    rng: MechanismRng,
    exhausted: bool,
    summary: TeacherPrivacySummary,
}

/// What a [`PrivateTeacher`] carries from one epoch to the next: its vanishing k, its ledger
/// (as runs of equal releases), what it spent and the position of its noise stream. A resumed
/// run restores it, so that ε and δ keep accumulating and no noise is drawn twice.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PrivateTeacherState {
    concentration: f64,
    trajectories: u64,
    ledger: Vec<LedgerRun>,
    spent: PrivacyCost,
    exhausted: bool,
    summary: TeacherPrivacySummary,
    rng: Option<MechanismRngState>,
}

/// The file a [`PrivacyAwareKickstarting`] term writes into its agent's checkpoint.
const TEACHER_STATE_FILE: &str = "private_teacher.json";

impl PrivateTeacher {
    /// The state to checkpoint (see [`PrivateTeacherState`]).
    pub fn state(&self) -> PrivateTeacherState {
        PrivateTeacherState {
            concentration: self.concentration,
            trajectories: self.trajectories,
            ledger: self.ledger.runs(),
            spent: self.spent,
            exhausted: self.exhausted,
            summary: self.summary,
            rng: self.rng.state(),
        }
    }

    /// Puts the teacher where [`PrivateTeacher::state`] found it. The caller checks that the
    /// state came from a teacher of the same configuration (the suites compare their
    /// `config.json`); the noise source must be of the same kind (seeded or secure).
    pub fn restore(&mut self, state: PrivateTeacherState) -> Result<(), AgentError> {
        check_non_negative("concentration", state.concentration)?;
        self.rng.restore(state.rng.as_ref())?;
        self.ledger = Ledger::from_runs(state.ledger)?;
        self.concentration = state.concentration;
        self.trajectories = state.trajectories;
        self.spent = state.spent;
        self.exhausted = state.exhausted;
        self.summary = state.summary;
        Ok(())
    }

    /// A teacher sharing through `config`, with its mechanism randomness seeded by `seed`, or
    /// drawn from the operating system's CSPRNG (`config.noise_rng`).
    pub fn new(
        teacher: Teacher,
        config: PrivateTeacherConfig,
        seed: u64,
    ) -> Result<Self, AgentError> {
        config.validate()?;
        let privacy = if config.mechanism {
            Some(config.dirichlet_privacy(teacher.actions(), teacher.lipschitz().upper_bound)?)
        } else {
            None
        };
        let mut this = Self {
            teacher,
            concentration: config.initial_concentration,
            privacy,
            trajectories: 0,
            ledger: Ledger::new(),
            spent: PrivacyCost::FREE,
            costs: HashMap::new(),
            grids: HashMap::new(),
            rng: config.noise_rng.rng(seed)?,
            exhausted: false,
            summary: TeacherPrivacySummary {
                trajectories: 0,
                dirichlet_releases: 0,
                uniform_releases: 0,
                exact_releases: 0,
                withheld: 0,
                concentration: config.initial_concentration,
                initial_release: None,
                basic: PrivacyCost::FREE,
                advanced: PrivacyCost::FREE,
                exhausted: false,
            },
            config,
        };
        if this.privacy.is_some() {
            this.summary.initial_release = this.release_cost(this.concentration)?;
        }
        Ok(this)
    }

    /// The configuration.
    pub fn config(&self) -> &PrivateTeacherConfig {
        &self.config
    }

    /// The teacher.
    pub fn teacher(&self) -> &Teacher {
        &self.teacher
    }

    /// L of Theorem 1: the map's factor ([`PrivateTeacherConfig::map_lipschitz`]) times the
    /// teacher's bound.
    pub fn lipschitz(&self) -> f64 {
        self.config.map_lipschitz(self.teacher.actions()) * self.teacher.lipschitz.upper_bound
    }

    /// The current concentration k.
    pub fn concentration(&self) -> f64 {
        self.concentration
    }

    /// Whether the teacher no longer releases through Dir_k.
    pub fn is_exhausted(&self) -> bool {
        self.exhausted
    }

    /// Every release so far.
    pub fn ledger(&self) -> &Ledger {
        &self.ledger
    }

    /// Spent so far under basic composition (kept as a running sum, equal to the ledger's).
    pub fn spent_basic(&self) -> PrivacyCost {
        self.spent
    }

    /// Counts and totals so far (advanced composition computed from the ledger).
    pub fn summary(&self) -> Result<TeacherPrivacySummary, AgentError> {
        Ok(TeacherPrivacySummary {
            basic: self.spent,
            advanced: self.ledger.spent_advanced(self.config.advanced_slack)?,
            concentration: self.concentration,
            exhausted: self.exhausted,
            trajectories: self.trajectories,
            ..self.summary
        })
    }

    /// Starts a trajectory: from the second one on, k ← c·k (Section 5).
    pub fn start_trajectory(&mut self) {
        if self.trajectories > 0 {
            self.concentration *= self.config.vanishing_coefficient;
        }
        self.trajectories += 1;
    }

    /// (ε, δ) of one Dir_k release by Theorem 1 (with [`DirichletRelease::Grid`]: the grid
    /// mechanism's pure ε and δ = 0), memoised per k; `None` if δ's upper bound is ≥ 1 (no
    /// guarantee).
    pub fn release_cost(&mut self, concentration: f64) -> Result<Option<PrivacyCost>, AgentError> {
        let Some(privacy) = &self.privacy else {
            return Ok(None);
        };
        if let Some(cost) = self.costs.get(&concentration.to_bits()) {
            return Ok(*cost);
        }
        let cost = cost_at(privacy, &self.config, concentration)?;
        self.costs.insert(concentration.to_bits(), cost);
        Ok(cost)
    }

    /// Builds (once per k) the grid mechanism at `concentration` on the grid {j/`points`}.
    fn build_grid(&mut self, concentration: f64, points: u32) -> Result<(), AgentError> {
        let Some(privacy) = &self.privacy else {
            return Err(AgentError::InvalidParameter {
                name: "mechanism",
                value: 0.0,
                expected: "true for a grid release",
            });
        };
        if let std::collections::hash_map::Entry::Vacant(e) =
            self.grids.entry(concentration.to_bits())
        {
            e.insert(
                privacy
                    .with_concentration(concentration)?
                    .grid_mechanism(points)?,
            );
        }
        Ok(())
    }

    fn within_budget(&self, cost: PrivacyCost) -> bool {
        let eps_ok = self
            .config
            .budget_epsilon
            .is_none_or(|b| self.spent.epsilon + cost.epsilon <= b);
        let delta_ok = self
            .config
            .budget_delta
            .is_none_or(|b| self.spent.delta + cost.delta <= b);
        eps_ok && delta_ok
    }

    /// The demonstration for the visited state `obs`: exact π^t(s) with the mechanism off,
    /// else Dir_k(π^t(s)) mapped onto Δ_{m,η} and recorded in the ledger, or after exhaustion a
    /// uniformly random policy (recorded at (0, 0)) or nothing.
    pub fn demonstrate(&mut self, obs: &[f32]) -> Result<Option<Demonstration>, AgentError> {
        if obs.len() != self.teacher.obs_len() {
            return Err(AgentError::ShapeMismatch {
                what: "teacher observation width",
                expected: self.teacher.obs_len(),
                got: obs.len(),
            });
        }
        let m = self.teacher.actions();
        if self.privacy.is_none() {
            self.summary.exact_releases += 1;
            return Ok(Some(Demonstration {
                policy: self.teacher.policy(obs),
                concentration: f64::INFINITY,
            }));
        }
        if !self.exhausted {
            let k = self.concentration;
            let cost = if k >= self.config.concentration_floor {
                self.release_cost(k)?
            } else {
                None
            };
            match cost {
                Some(cost) if self.within_budget(cost) => {
                    let policy = restrict_to_simplex(
                        &self.teacher.policy(obs),
                        self.config.eta,
                        self.config.simplex_map,
                    )?;
                    let released = match self.config.release {
                        DirichletRelease::Real => {
                            let released = DirichletSampler::new(m, k, self.config.eta)?
                                .sample(&policy, &mut self.rng)?;
                            self.ledger.record(
                                "dirichlet",
                                [("concentration".to_string(), k)],
                                cost,
                            )?;
                            released
                        }
                        DirichletRelease::Grid { points } => {
                            self.build_grid(k, points)?;
                            let mechanism = &self.grids[&k.to_bits()];
                            let released = mechanism.release(&policy, &mut self.rng)?;
                            self.ledger.record(
                                mechanism.name(),
                                [
                                    ("concentration".to_string(), k),
                                    ("grid".to_string(), f64::from(points)),
                                ],
                                cost,
                            )?;
                            released
                        }
                    };
                    self.spent.epsilon += cost.epsilon;
                    self.spent.delta += cost.delta;
                    self.summary.dirichlet_releases += 1;
                    return Ok(Some(Demonstration {
                        policy: released,
                        concentration: k,
                    }));
                }
                _ => self.exhausted = true,
            }
        }
        match self.config.exhausted {
            ExhaustedTeacher::Stop => {
                self.summary.withheld += 1;
                Ok(None)
            }
            ExhaustedTeacher::Uniform => {
                let uniform = vec![1.0 / m as f64; m];
                let released =
                    DirichletSampler::new(m, 0.0, 0.0)?.sample(&uniform, &mut self.rng)?;
                self.ledger.record(
                    "uniform",
                    [("concentration".to_string(), 0.0)],
                    PrivacyCost::FREE,
                )?;
                self.summary.uniform_releases += 1;
                Ok(Some(Demonstration {
                    policy: released,
                    concentration: 0.0,
                }))
            }
        }
    }
}

/// (ε, δ) of one release at k from Theorem 1's parameters at k₀ (the one home of a release's
/// cost); `None` if δ's upper bound is ≥ 1. With [`DirichletRelease::Grid`] the grid
/// mechanism's own accounting at k ([`GridDirichletMechanism`]: pure ε = 2kΔG + 4μ, δ = 0);
/// `None` at k = 0, where it has no mechanism.
fn cost_at(
    privacy: &DirichletPrivacy,
    config: &PrivateTeacherConfig,
    concentration: f64,
) -> Result<Option<PrivacyCost>, AgentError> {
    let at_k = privacy.with_concentration(concentration)?;
    if let DirichletRelease::Grid { points } = config.release {
        if concentration <= 0.0 {
            return Ok(None);
        }
        return Ok(Some(at_k.grid_mechanism(points)?.cost()));
    }
    // Its own generator, so that the mechanism's draws do not depend on the memo.
    let mut rng = cost_rng(concentration);
    let delta = at_k
        .delta(config.delta_samples, config.delta_confidence, &mut rng)?
        .upper();
    Ok((delta < 1.0).then(|| PrivacyCost {
        epsilon: at_k.epsilon(),
        delta,
    }))
}

/// The generator of δ's Monte Carlo at concentration k: fixed per k, so that (ε, δ) does not
/// depend on the order of the releases or on the memo.
fn cost_rng(concentration: f64) -> ChaCha8Rng {
    ChaCha8Rng::seed_from_u64(concentration.to_bits())
}

// ---------------------------------------------------------------------------------------------
// Student: the privacy-aware loss
// ---------------------------------------------------------------------------------------------

/// Hyper-parameters of the privacy-aware student's penalty (eq. 15–17).
#[derive(Config, Debug)]
pub struct PrivacyAwareConfig {
    /// λ ≥ 0 of eq. 15 (the paper's best: 0.5). λ = 0 is the privacy-unaware student.
    #[config(default = 0.5)]
    pub lambda: f64,
    /// Confidence level β ∈ (0, 1) of Lemma 1 in eq. 15.
    #[config(default = 0.05)]
    pub beta: f64,
    /// Weight of E\[φ_λ\] against the PPO surrogate (the "additional hyperparameter to balance
    /// the two terms" after eq. 17; the paper uses 1).
    #[config(default = 1.0)]
    pub balance: f64,
    /// φ ≡ 0 on releases known to carry no information about the teacher: the uniformly random
    /// policies of an exhausted teacher (k = 0).
    ///
    /// Why this is the default: Section 4 of paper 000 lets the teacher "set k = 0 once they
    /// expend their budget" on the premise that by then "the objective of the student will
    /// completely disregard the teacher demonstrations by (16) and the student will rely on
    /// its own interactions with the environment", so that random policies come "without
    /// harming the student's performance". Eq. 16 does not deliver that premise by itself: at
    /// k = 0, α_λ = λ·√(log(1/β)/2) (≈ 0.61 at λ = 0.5, β = 0.05) is below the diameter √2 of
    /// Δ_m, so φ_λ keeps pulling π_θ towards a fresh random point of Δ_m at every state, an
    /// entropy-like force that the paper's text says is absent. Dropping these rows is what the
    /// text describes; `false` is the literal eq. 16 with k → 0⁺.
    #[config(default = true)]
    pub ignore_uninformative: bool,
}

impl PrivacyAwareConfig {
    /// Checks λ ≥ 0, β ∈ (0, 1), balance ≥ 0.
    pub fn validate(&self) -> Result<(), AgentError> {
        check_non_negative("lambda", self.lambda)?;
        check_non_negative("balance", self.balance)?;
        if !(self.beta > 0.0 && self.beta < 1.0) {
            return Err(AgentError::InvalidParameter {
                name: "beta",
                value: self.beta,
                expected: "in (0, 1)",
            });
        }
        Ok(())
    }

    /// α_λ = λ·√(log(1/β) / (2(k + 1))) (eq. 15) for a release with concentration k: 0 for
    /// k = ∞ (an exact policy), the k → 0⁺ limit λ·√(log(1/β)/2) for k = 0.
    pub fn ball_radius(&self, concentration: f64) -> Result<f64, AgentError> {
        if concentration.is_infinite() {
            return Ok(0.0);
        }
        Ok(penalty_radius(
            self.lambda,
            concentration.max(f64::MIN_POSITIVE),
            self.beta,
        )?)
    }
}

/// E\[φ_λ\] over a batch (eq. 16, 17): φ_λ(s) = ‖π_θ(s) − π^t(s)‖₂ · 1{‖π_θ(s) − π^t(s)‖₂ > α_λ(s)},
/// weighted per row by `weights` (1 for a state with a demonstration, 0 without), averaged
/// over all rows. `probabilities` and `teacher` are `[batch, m]`, `radius` and `weights`
/// `[batch]`. The indicator is piecewise constant and carries no gradient; inside the ball the
/// gradient is 0, outside it is (π_θ − π^t)/‖π_θ − π^t‖₂. A norm under 1e-6 is clamped there
/// (no gradient), so a perfect match never divides by zero.
pub fn privacy_aware_penalty<B: Backend>(
    probabilities: Tensor<B, 2>,
    teacher: Tensor<B, 2>,
    radius: Tensor<B, 1>,
    weights: Tensor<B, 1>,
) -> Tensor<B, 1> {
    let difference = probabilities - teacher;
    // ‖π_θ(s) − π^t(s)‖₂ per row
    let norm = difference
        .powi_scalar(2)
        .sum_dim(1)
        .squeeze_dim::<1>(1)
        .clamp_min(1e-12)
        .sqrt();
    // 1{‖·‖ > α_λ}
    let outside = float_of_mask(norm.clone().detach().greater(radius));
    (norm * outside * weights).mean()
}

/// The privacy-aware student's term E\[φ_λ\] as an [`AuxiliaryPolicyLoss`]: it asks the
/// [`PrivateTeacher`] for a demonstration at every state the student visits (the teacher starts
/// a trajectory whenever the student does), and adds `balance`·E\[φ_λ\] to the PPO loss:
/// J̃ = J − E\[φ_λ\] (eq. 17).
///
/// λ = 0 with an exact teacher is conventional kickstarting with the 2-norm distance; λ = 0
/// with the mechanism is the privacy-unaware student.
#[derive(Debug)]
pub struct PrivacyAwareKickstarting {
    teacher: Arc<Mutex<PrivateTeacher>>,
    config: PrivacyAwareConfig,
    actions: usize,
    pending: DemonstrationRows,
    batch: DemonstrationRows,
}

#[derive(Debug, Default)]
struct DemonstrationRows {
    obs: Vec<f32>,
    policies: Vec<f32>,
    radii: Vec<f32>,
    weights: Vec<f32>,
}

impl DemonstrationRows {
    fn rows(&self) -> usize {
        self.weights.len()
    }
}

impl PrivacyAwareKickstarting {
    /// The loss term for `teacher` (shared: the caller keeps a handle to read the ledger).
    pub fn new(
        teacher: Arc<Mutex<PrivateTeacher>>,
        config: PrivacyAwareConfig,
    ) -> Result<Self, AgentError> {
        config.validate()?;
        let actions = PrivateTeacher::lock(&teacher).teacher().actions();
        Ok(Self {
            teacher,
            config,
            actions,
            pending: DemonstrationRows::default(),
            batch: DemonstrationRows::default(),
        })
    }

    /// The configuration.
    pub fn config(&self) -> &PrivacyAwareConfig {
        &self.config
    }

    /// The teacher.
    pub fn teacher(&self) -> &Arc<Mutex<PrivateTeacher>> {
        &self.teacher
    }

    /// The demonstrations of the prepared batch: teacher policies (row-major `[rows, m]`), ball
    /// radii α_λ and weights (0 where the teacher shared nothing, or, with
    /// `ignore_uninformative`, a uniformly random policy).
    pub fn prepared(&self) -> (&[f32], &[f32], &[f32]) {
        (&self.batch.policies, &self.batch.radii, &self.batch.weights)
    }
}

impl PrivateTeacher {
    /// Locks a teacher shared between a student and its caller; a poisoned lock (a panic
    /// elsewhere) still holds a consistent teacher, because every mutation completes before
    /// the guard drops.
    pub fn lock(shared: &Mutex<PrivateTeacher>) -> MutexGuard<'_, PrivateTeacher> {
        shared.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl<B: AutodiffBackend> AuxiliaryPolicyLoss<B> for PrivacyAwareKickstarting {
    fn name(&self) -> &'static str {
        "kickstart_penalty"
    }

    fn observe(&mut self, obs: &[f32], trajectory_start: bool) -> Result<(), AgentError> {
        let demonstration = {
            let mut teacher = PrivateTeacher::lock(&self.teacher);
            let start = match teacher.config().vanishing_unit {
                VanishingUnit::Trajectory => trajectory_start,
                VanishingUnit::Rollout => self.pending.rows() == 0,
            };
            if start {
                teacher.start_trajectory();
            }
            teacher.demonstrate(obs)?
        };
        let rows = &mut self.pending;
        rows.obs.extend_from_slice(obs);
        match demonstration {
            Some(d) if !(self.config.ignore_uninformative && d.concentration == 0.0) => {
                rows.policies.extend(d.policy.iter().map(|&p| p as f32));
                rows.radii
                    .push(self.config.ball_radius(d.concentration)? as f32);
                rows.weights.push(1.0);
            }
            _ => {
                rows.policies.extend(std::iter::repeat_n(0.0, self.actions));
                rows.radii.push(0.0);
                rows.weights.push(0.0);
            }
        }
        Ok(())
    }

    /// Saves the shared teacher's state. Between epochs the term itself holds nothing that
    /// the next epoch reads: its demonstrations were consumed by the update.
    fn save_state(&self, dir: &Path) -> Result<(), AgentError> {
        let state = PrivateTeacher::lock(&self.teacher).state();
        save_json(dir, TEACHER_STATE_FILE, &state)
    }

    fn load_state(&mut self, dir: &Path) -> Result<(), AgentError> {
        let state = load_json(dir, TEACHER_STATE_FILE)?;
        self.pending = DemonstrationRows::default();
        self.batch = DemonstrationRows::default();
        PrivateTeacher::lock(&self.teacher).restore(state)
    }

    fn prepare(&mut self, observations: &[f32], obs_len: usize) -> Result<(), AgentError> {
        if !self.pending.obs.is_empty() {
            self.batch = std::mem::take(&mut self.pending);
        }
        let rows = observations.len() / obs_len.max(1);
        if self.batch.rows() != rows || self.batch.obs != observations {
            return Err(AgentError::ShapeMismatch {
                what: "kickstarting demonstrations (one per visited state of the batch)",
                expected: rows,
                got: self.batch.rows(),
            });
        }
        Ok(())
    }

    fn loss(&mut self, _observations: &Tensor<B, 2>, probabilities: Tensor<B, 2>) -> Tensor<B, 1> {
        let device = probabilities.device();
        let rows = self.batch.rows();
        let teacher = Tensor::<B, 2>::from_data(
            TensorData::new(self.batch.policies.clone(), [rows, self.actions])
                .convert::<B::FloatElem>(),
            float_options::<B>(&device),
        );
        let vector = |v: &[f32]| {
            Tensor::<B, 1>::from_data(
                TensorData::new(v.to_vec(), [v.len()]).convert::<B::FloatElem>(),
                float_options::<B>(&device),
            )
        };
        // eq. 17: J̃ = J − E[φ_λ]; PPO minimises −J, so the penalty is added.
        privacy_aware_penalty(
            probabilities,
            teacher,
            vector(&self.batch.radii),
            vector(&self.batch.weights),
        ) * self.config.balance
    }
}

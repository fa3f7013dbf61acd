//! `suite dpsgd`'s command-line arguments, the four private methods, and the plan they
//! resolve to (what every run's `config.json` records).

use clap::{Args, ValueEnum};
use privrl_agents::{DqnConfig, PrivacyUnit, ReinforceConfig};
use privrl_privacy::{AccountantKind, Adjacency};
use serde::{Deserialize, Serialize};

use super::controls::Group;
use super::{ENV, SOLVED_RETURN, SOLVED_WINDOW, WARMUP_STEPS};
use crate::backend::BackendChoice;
use crate::noise_rng::NoiseRng;
use crate::sweep::Seeds;

/// Arguments of `suite dpsgd`.
#[derive(Args, Debug, Clone, Serialize)]
pub struct DpsgdArgs {
    /// Quick mode: one seed, two noise levels per method, 150 episodes and at most 8000
    /// environment steps per run (about a minute on 2 cores).
    #[arg(long)]
    pub quick: bool,
    /// Seeds per point, e.g. `0..5` or `0,3,7`. Default 0..5, quick 0.
    #[arg(long)]
    #[serde(skip)]
    pub seeds: Option<Seeds>,
    /// Noise multipliers σ of DP-SGD (noise std σ·C on the clipped sum), comma-separated.
    /// Default 0,0.1,0.3,1 (quick 0,0.3); σ = 0 clips without noise.
    #[arg(long, value_delimiter = ',')]
    pub dp_sgd_noise: Option<Vec<f64>>,
    /// Noise scales σ of the observation noise N(0, (σ·IQR)²), comma-separated. Default
    /// 0,0.1,0.3,1 (quick 0,0.3).
    #[arg(long, value_delimiter = ',')]
    pub ldp_noise: Option<Vec<f64>>,
    /// Episodes per run (every run trains this many, so rewards average over equal spans).
    /// Default 2000, quick 150; with `--reinforce-controls` and `--ldp-controls`, the
    /// REINFORCE budget (default 2000).
    #[arg(long)]
    pub episodes: Option<usize>,
    /// Also stop a DQN run after this many environment steps (DQN takes a gradient step per
    /// environment step, so its cost grows with the return). Default 20000, quick 8000; with
    /// `--ldp-controls`, the LDP DQN budget (default 150000).
    #[arg(long)]
    pub dqn_steps: Option<u64>,
    /// DP-SGD clipping bound C on each record's gradient (an episode's for REINFORCE, a
    /// transition's for DQN).
    #[arg(long, default_value_t = 1.0)]
    pub clip: f64,
    /// δ of the reported (ε, δ).
    #[arg(long, default_value_t = 1e-5)]
    pub delta: f64,
    /// Neighbouring relation of the reported ε: `add-remove` (one record added or removed, as
    /// in Opacus) or `substitution` (one record replaced; a larger ε). A record is an episode
    /// for REINFORCE and a transition for DQN.
    #[arg(long, default_value_t = Adjacency::AddRemove)]
    pub adjacency: Adjacency,
    /// Which accountant gives every DP-SGD ε: `rdp` or `pld`. `rdp` (default): Rényi DP, as
    /// Opacus reports it. `pld`: the privacy loss distribution accountant (as Google's
    /// dp-accounting), an upper bound too but tighter (a few % to tens of %); each ε composes
    /// the whole schedule by FFT, instant for REINFORCE (one release per episode) but tens of
    /// seconds for a DQN run, whose growing replay buffer gives many distinct sampling rates
    /// (25 s for a 20k-step run; the DQN controls' per-episode curve therefore keeps the RDP ε,
    /// labelled so). Training does not depend on it; every ε printed names its accountant.
    #[arg(long, default_value_t = AccountantKind::Rdp)]
    pub accountant: AccountantKind,
    /// DP-SGD REINFORCE: episodes L per DP-SGD step, each clipped on its own, noised once and
    /// averaged (1: the slides' one episode per gradient). The ε per episode does not depend
    /// on L; the noise on the mean gradient is σC/L.
    #[arg(long, default_value_t = 1)]
    pub reinforce_batch: usize,
    /// Which methods to run, comma-separated (default: all four).
    #[arg(long, value_enum, value_delimiter = ',')]
    pub methods: Option<Vec<Method>>,
    /// Backend.
    #[arg(long, value_enum, default_value_t = BackendChoice::default())]
    pub backend: BackendChoice,
    /// Worker threads (0: one per core); each runs one (method, σ, seed).
    #[arg(long, default_value_t = 0)]
    #[serde(skip)]
    pub threads: usize,
    /// Where the DP-SGD noise, the Poisson sampling and the observation noise come from:
    /// `seeded` (from each run's seed, reproducible) or `secure` (the OS CSPRNG).
    #[arg(long, value_enum, default_value_t = NoiseRng::Seeded)]
    pub noise_rng: NoiseRng,
    /// Run the DQN controls protocol instead of the σ sweep: DP-SGD DQN to `--budget`
    /// environment steps, against plain DQN, σ = 0 with clipping (clipping bias alone), a C
    /// sweep, a σ sweep, adaptive clipping and the Huber TD loss; one resumable unit per
    /// setting × seed under `--controls-dir` (default seeds 0,1,2), the report regenerated
    /// from whichever units exist.
    #[arg(long, conflicts_with_all = ["reinforce_controls", "ldp_controls"])]
    pub dqn_controls: bool,
    /// Run the REINFORCE controls protocol instead of the σ sweep: DP-SGD REINFORCE (one
    /// DP-SGD step per L episodes, each episode's gradient clipped to C, ε per episode)
    /// against plain REINFORCE for `--episodes` episodes (default 2000): plain, σ = 0 with
    /// clipping, the `--sigma-sweep` at C = `--clip` with L = 1 (the slides' one episode per
    /// gradient), and `--reinforce-batch-sweep` at `--control-sigma` (with plain REINFORCE at
    /// the same L); one resumable unit per setting × seed under `<--controls-dir>/reinforce`
    /// (default seeds 0,1,2), the report regenerated from whichever units exist.
    #[arg(long, conflicts_with = "ldp_controls")]
    pub reinforce_controls: bool,
    /// Run the local-DP protocol instead of the σ sweep (the slides' Figs. 12–14): plain
    /// REINFORCE (`--episodes`, default 2000) and plain DQN (`--dqn-steps`, default 150000
    /// environment steps) on CartPole-v1 behind observation noise, at every σ of `--ldp-noise`
    /// (N(0, (σ·IQR)²), the slides' noise, no (ε, δ); must include 0) and every z of
    /// `--ldp-bounded-noise` (observations clipped to a public range, Gaussian noise at noise
    /// multiplier z of its diameter: an (ε, δ) per observation and per episode); `--methods
    /// ldp-reinforce` or `ldp-dqn` runs one agent (default both). One resumable unit per
    /// setting × seed under `<--controls-dir>/ldp` (default seeds 10..15, none of those the
    /// budgets were fixed from), the report regenerated from whichever units exist.
    #[arg(long)]
    pub ldp_controls: bool,
    /// LDP protocol: noise multipliers z of the bounded observation noise, comma-separated
    /// (the noise std over the L2 diameter of the clipped box; ε per observation is that of
    /// one Gaussian release at noise multiplier z).
    #[arg(long, value_delimiter = ',', default_values_t = [0.01, 0.1, 1.0])]
    pub ldp_bounded_noise: Vec<f64>,
    /// REINFORCE controls: episodes per DP-SGD step L of the batch sweep, comma-separated (the
    /// ε per episode does not depend on L; the noise on the mean gradient is σC/L).
    #[arg(long, value_delimiter = ',', default_values_t = [10])]
    pub reinforce_batch_sweep: Vec<usize>,
    /// Controls: where the units and the report go.
    #[arg(long, default_value = "results/dpsgd")]
    pub controls_dir: std::path::PathBuf,
    /// Controls: environment steps per run. The default is where the suite's non-private DQN
    /// solved CartPole-v1 on each of seeds 0, 1, 2 (first at 77.6k, 65.6k and 108.9k steps).
    #[arg(long, default_value_t = CONTROL_BUDGET)]
    pub budget: u64,
    /// Controls: σ of the C sweep, adaptive clipping and Huber settings (C is `--clip`).
    #[arg(long, default_value_t = 1.0)]
    pub control_sigma: f64,
    /// Controls: clipping bounds C of the C sweep (at `--control-sigma`), comma-separated.
    #[arg(long, value_delimiter = ',', default_values_t = [0.1, 1.0, 10.0])]
    pub clip_sweep: Vec<f64>,
    /// Controls: noise multipliers σ of the σ sweep (at C = `--clip`), comma-separated; the
    /// smallest σ > 0 is the one the slides' "converges with reasonable noise" is judged at.
    #[arg(long, value_delimiter = ',', default_values_t = [0.3, 1.0, 3.0])]
    pub sigma_sweep: Vec<f64>,
    /// DQN controls: which settings to run, comma-separated: plain, clip-only, clip-sweep,
    /// sigma-sweep, adaptive, huber, lr-swap (the two smallest σ of the σ sweep at each
    /// other's effective Adam learning rate lr·B/(σC): the diagnosis of σ = 0.3 ending below
    /// σ = 1). Default: all. The report covers every unit present whatever this is.
    #[arg(long, value_enum, value_delimiter = ',', default_values_t = Group::ALL)]
    pub control_groups: Vec<Group>,
    /// Controls, adaptive clipping (Andrew et al. 2021): the target quantile γ of the
    /// per-transition gradient norms that C tracks.
    #[arg(long, default_value_t = 0.5)]
    pub adaptive_quantile: f64,
    /// Controls, adaptive clipping: the geometric learning rate η_C
    /// (C ← C·exp(−η_C (b̃ − γ)) after every step).
    #[arg(long, default_value_t = 0.2)]
    pub adaptive_lr: f64,
    /// Controls, adaptive clipping: σ_b, the noise on the clipped count (must exceed σ/2; the
    /// gradient's noise becomes σ_Δ = (σ⁻² − (2σ_b)⁻²)^(−1/2), so ε is that of σ). Default:
    /// the expected batch / 20 (6.4 for |B| = 128).
    #[arg(long)]
    pub adaptive_count_noise: Option<f64>,
}

/// One of the slides' four private variants.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Method {
    /// REINFORCE with a clipped, noised one-episode gradient.
    DpSgdReinforce,
    /// DQN with per-transition clipping and noise on Poisson-sampled replay batches.
    DpSgdDqn,
    /// REINFORCE on observations with N(0, (σ·IQR)²) noise.
    LdpReinforce,
    /// DQN on observations with N(0, (σ·IQR)²) noise.
    LdpDqn,
}

impl Method {
    pub(super) const ALL: [Method; 4] = [
        Method::DpSgdReinforce,
        Method::DpSgdDqn,
        Method::LdpReinforce,
        Method::LdpDqn,
    ];

    pub(super) fn name(self) -> &'static str {
        match self {
            Method::DpSgdReinforce => "DP-SGD REINFORCE",
            Method::DpSgdDqn => "DP-SGD DQN",
            Method::LdpReinforce => "LDP REINFORCE",
            Method::LdpDqn => "LDP DQN",
        }
    }

    pub(super) fn slug(self) -> &'static str {
        match self {
            Method::DpSgdReinforce => "dp-sgd-reinforce",
            Method::DpSgdDqn => "dp-sgd-dqn",
            Method::LdpReinforce => "ldp-reinforce",
            Method::LdpDqn => "ldp-dqn",
        }
    }

    pub(super) fn is_dp_sgd(self) -> bool {
        matches!(self, Method::DpSgdReinforce | Method::DpSgdDqn)
    }

    pub(super) fn is_dqn(self) -> bool {
        matches!(self, Method::DpSgdDqn | Method::LdpDqn)
    }

    /// The record its ε protects: DP-SGD DQN a transition, DP-SGD REINFORCE an episode; LDP
    /// has no ε.
    pub(super) fn unit(self) -> Option<PrivacyUnit> {
        match self {
            Method::DpSgdReinforce => Some(PrivacyUnit::Episode),
            Method::DpSgdDqn => Some(PrivacyUnit::Transition),
            Method::LdpReinforce | Method::LdpDqn => None,
        }
    }
}

/// Resolved parameters of the suite (what every run's `config.json` records).
#[derive(Debug, Clone, Serialize)]
pub(super) struct DpsgdPlan {
    pub(super) env: &'static str,
    pub(super) seeds: Vec<u64>,
    pub(super) dp_sgd_noise: Vec<f64>,
    pub(super) ldp_noise: Vec<f64>,
    pub(super) episodes: usize,
    pub(super) dqn_steps: u64,
    pub(super) clip: f64,
    pub(super) delta: f64,
    pub(super) adjacency: Adjacency,
    /// Not written for RDP, so a run recorded before the accountant was is reused.
    #[serde(skip_serializing_if = "is_rdp")]
    pub(super) accountant: AccountantKind,
    pub(super) reinforce_batch: usize,
    pub(super) methods: Vec<Method>,
    pub(super) backend: BackendChoice,
    pub(super) solved_window: usize,
    pub(super) solved_return: f64,
    pub(super) warmup_steps: usize,
    pub(super) reinforce: ReinforceConfig,
    pub(super) dqn: DqnConfig,
    pub(super) noise_rng: NoiseRng,
}

impl DpsgdArgs {
    /// Quick mode with one seed (what `quickstart` runs).
    pub fn quick(seed: u64, backend: BackendChoice, threads: usize) -> Self {
        Self {
            quick: true,
            seeds: Some(Seeds(vec![seed])),
            dp_sgd_noise: None,
            ldp_noise: None,
            episodes: None,
            dqn_steps: None,
            clip: 1.0,
            delta: 1e-5,
            adjacency: Adjacency::AddRemove,
            accountant: AccountantKind::Rdp,
            reinforce_batch: 1,
            methods: None,
            backend,
            threads,
            noise_rng: NoiseRng::Seeded,
            dqn_controls: false,
            reinforce_controls: false,
            ldp_controls: false,
            ldp_bounded_noise: vec![0.01, 0.1, 1.0],
            reinforce_batch_sweep: vec![10],
            controls_dir: "results/dpsgd".into(),
            budget: CONTROL_BUDGET,
            control_sigma: 1.0,
            clip_sweep: vec![0.1, 1.0, 10.0],
            sigma_sweep: vec![0.3, 1.0, 3.0],
            control_groups: Group::ALL.to_vec(),
            adaptive_quantile: 0.5,
            adaptive_lr: 0.2,
            adaptive_count_noise: None,
        }
    }

    pub(super) fn plan(&self) -> DpsgdPlan {
        let quick = self.quick;
        DpsgdPlan {
            env: ENV,
            seeds: self.seeds.as_ref().map_or_else(
                || if quick { vec![0] } else { (0..5).collect() },
                |s| s.0.clone(),
            ),
            dp_sgd_noise: self.dp_sgd_noise.clone().unwrap_or_else(|| {
                if quick {
                    vec![0.0, 0.3]
                } else {
                    vec![0.0, 0.1, 0.3, 1.0]
                }
            }),
            ldp_noise: self.ldp_noise.clone().unwrap_or_else(|| {
                if quick {
                    vec![0.0, 0.3]
                } else {
                    vec![0.0, 0.1, 0.3, 1.0]
                }
            }),
            episodes: self.episodes.unwrap_or(if quick { 150 } else { 2000 }),
            dqn_steps: self
                .dqn_steps
                .unwrap_or(if quick { 8_000 } else { DQN_STEPS }),
            clip: self.clip,
            delta: self.delta,
            adjacency: self.adjacency,
            accountant: self.accountant,
            reinforce_batch: self.reinforce_batch,
            methods: self.methods.clone().unwrap_or_else(|| Method::ALL.to_vec()),
            backend: self.backend,
            noise_rng: self.noise_rng,
            solved_window: SOLVED_WINDOW,
            solved_return: SOLVED_RETURN,
            warmup_steps: WARMUP_STEPS,
            // The slides: a 2-layer perceptron, h = 128, dropout 0.5, one episode per gradient.
            reinforce: ReinforceConfig::new(),
            dqn: dqn_config(),
        }
    }
}

fn is_rdp(accountant: &AccountantKind) -> bool {
    *accountant == AccountantKind::Rdp
}

/// Environment steps at which the suite's non-private DQN ([`dqn_config`]) solved
/// CartPole-v1 (mean of 25 consecutive returns ≥ 475) on every one of seeds 0, 1, 2, measured
/// with `suite dpsgd --methods ldp-dqn --ldp-noise 0 --seeds 0,1,2` (σ = 0 observation noise:
/// plain DQN): first solved at 77,632, 65,566 and 108,869 steps; rounded up.
pub const CONTROL_BUDGET: u64 = 110_000;

/// Environment steps of the full sweep's DQN runs.
pub(crate) const DQN_STEPS: u64 = 20_000;

/// The DQN of the sweep (and of the leakage suite's DP-SGD accounting).
///
/// The slides: a 3-layer perceptron, h = 128, |B| = 128. A 10k buffer keeps the Poisson rate
/// |B|/n ≥ 1.28%; ε decays over 10k steps and a gradient step every second environment step,
/// to fit the step budget on 2 cores.
pub(crate) fn dqn_config() -> DqnConfig {
    DqnConfig::new()
        .with_train_frequency(2)
        .with_buffer_capacity(10_000)
        .with_epsilon_decay_steps(10_000)
        .with_lr(1e-3)
}

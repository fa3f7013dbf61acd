//! What a PGC unit runs: a mechanism at ε with some factors changed from the paper's setting
//! (Section 4), the ablation's list of such settings, and each mechanism's |B| and the ε at
//! which its row runs. The ablation, the tables and the plan all name settings this way.

use privrl_agents::SubmissionOrder;
use privrl_agents::{A3cConfig, PgcConfig};
use privrl_privacy::{Epsilon, GradientMechanismConfig, MechanismKind};
use serde::{Deserialize, Serialize};

use super::learner::{ActionsArg, ClockArg, LearnerArgs, LossArg, OptimizerChoice, RewardArg};

/// One departure from the paper's setting (`--factors` spells it by its slug).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Factor {
    /// `--reward sparse`.
    SparseReward,
    /// `--loss mean`.
    MeanLoss,
    /// `--exploration-clock env-steps`.
    EnvStepClock,
    /// `--actions sampled`.
    SampledActions,
    /// `--bias`.
    Bias,
    /// `--optimizer adam` (lr 0.005).
    Adam,
    /// The mechanism's clip C × 10 (Laplace: C = 0.1, an L1 clip to 0.05).
    ClipX10,
    /// The mechanism's clip C × 100 (Laplace: C = 1, an L1 clip to 0.5).
    ClipX100,
    /// |B| = 100 submissions averaged per update.
    #[serde(rename = "buffer-100")]
    Buffer100,
}

impl Factor {
    /// The learner's factors (the ablation's stage 1 changes each alone).
    pub(super) const ALL: [Factor; 6] = [
        Factor::SparseReward,
        Factor::MeanLoss,
        Factor::EnvStepClock,
        Factor::SampledActions,
        Factor::Bias,
        Factor::Adam,
    ];

    /// The mechanism's C and |B| (the clip study's).
    pub(super) const MECHANISM: [Factor; 3] =
        [Factor::ClipX10, Factor::ClipX100, Factor::Buffer100];

    /// Every factor: the learner's, then the mechanism's.
    pub(super) fn every() -> impl Iterator<Item = Factor> {
        Factor::ALL.into_iter().chain(Factor::MECHANISM)
    }

    pub(super) fn slug(self) -> &'static str {
        match self {
            Factor::SparseReward => "sparse-reward",
            Factor::MeanLoss => "mean-loss",
            Factor::EnvStepClock => "env-step-clock",
            Factor::SampledActions => "sampled-actions",
            Factor::Bias => "bias",
            Factor::Adam => "adam",
            Factor::ClipX10 => "clip-x10",
            Factor::ClipX100 => "clip-x100",
            Factor::Buffer100 => "buffer-100",
        }
    }

    /// The factor whose slug is `text`.
    pub(super) fn from_slug(text: &str) -> Option<Factor> {
        Factor::every().find(|f| f.slug() == text)
    }

    pub(super) fn label(self) -> &'static str {
        match self {
            Factor::SparseReward => "reward 0 / −1 on failing / +1 at the cap",
            Factor::MeanLoss => "loss: mean over steps",
            Factor::EnvStepClock => "α clock: env steps",
            Factor::SampledActions => "actions: a ∼ π (α kept)",
            Factor::Bias => "biases (d = 131)",
            Factor::Adam => "Adam, lr 0.005",
            Factor::ClipX10 => "C × 10",
            Factor::ClipX100 => "C × 100",
            Factor::Buffer100 => "|B| = 100",
        }
    }
}

/// `--factors MECHANISM=FACTOR+FACTOR…` (or `MECHANISM=paper`): the learner of one mechanism
/// as an ablation setting, e.g. `laplace=sampled-actions+adam`, `prs=sparse-reward`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MechanismFactors {
    /// The mechanism.
    pub mechanism: MechanismKind,
    /// Its factors changed from the paper's setting.
    pub factors: Vec<Factor>,
}

impl std::str::FromStr for MechanismFactors {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let (mechanism, list) = text
            .split_once('=')
            .ok_or_else(|| format!("expected MECHANISM=FACTOR+…, got {text:?}"))?;
        let mechanism = mechanism
            .trim()
            .parse::<MechanismKind>()
            .ok()
            .filter(|m| {
                [
                    MechanismKind::Laplace,
                    MechanismKind::Prs,
                    MechanismKind::None,
                ]
                .contains(m)
            })
            .ok_or_else(|| {
                format!("unknown mechanism {mechanism:?} (expected laplace, prs or none)")
            })?;
        let list = list.trim();
        let factors = if list == "paper" || list.is_empty() {
            Vec::new()
        } else {
            list.split('+')
                .map(|slug| {
                    Factor::from_slug(slug.trim()).ok_or_else(|| {
                        let known: Vec<&str> = Factor::every().map(|f| f.slug()).collect();
                        format!(
                            "unknown factor {slug:?} (expected paper or a +-list of {})",
                            known.join(", ")
                        )
                    })
                })
                .collect::<Result<Vec<_>, _>>()?
        };
        Ok(Self { mechanism, factors })
    }
}

/// One setting: a mechanism at ε (∞ in the ablation, the tables' grid otherwise) with some
/// factors changed from the paper's setting.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Setting {
    pub(super) mechanism: MechanismKind,
    pub(super) factors: Vec<Factor>,
    pub(super) epsilon: Epsilon,
}

impl Setting {
    pub(super) fn new(mechanism: MechanismKind, factors: &[Factor]) -> Self {
        let mut factors = factors.to_vec();
        factors.sort();
        factors.dedup();
        Self {
            mechanism,
            factors,
            epsilon: Epsilon::INFINITE,
        }
    }

    /// The same setting at `epsilon`.
    pub(super) fn at(mut self, epsilon: Epsilon) -> Self {
        self.epsilon = epsilon;
        self
    }

    /// The factors' slugs joined by `+` (`paper` for none): what `--factors` takes.
    pub(super) fn factor_slugs(&self) -> String {
        if self.factors.is_empty() {
            "paper".into()
        } else {
            let slugs: Vec<&str> = self.factors.iter().map(|f| f.slug()).collect();
            slugs.join("+")
        }
    }

    /// `laplace-paper`, `laplace+adam+bias`, … at ε = ∞; `prs+sparse-reward@eps2` at ε = 2.
    pub(super) fn name(&self) -> String {
        let base = if self.factors.is_empty() {
            format!("{}-paper", self.mechanism.name())
        } else {
            format!("{}+{}", self.mechanism.name(), self.factor_slugs())
        };
        match self.epsilon.get() {
            None => base,
            Some(_) => format!("{base}@eps{}", self.epsilon.slug()),
        }
    }

    pub(super) fn learner(&self) -> LearnerArgs {
        let has = |f| self.factors.contains(&f);
        LearnerArgs {
            reward: if has(Factor::SparseReward) {
                RewardArg::Sparse
            } else {
                RewardArg::Gymnasium
            },
            loss: if has(Factor::MeanLoss) {
                LossArg::Mean
            } else {
                LossArg::Sum
            },
            exploration_clock: if has(Factor::EnvStepClock) {
                ClockArg::EnvSteps
            } else {
                ClockArg::Submissions
            },
            actions: if has(Factor::SampledActions) {
                ActionsArg::Sampled
            } else {
                ActionsArg::Argmax
            },
            bias: has(Factor::Bias),
        }
    }

    pub(super) fn optimizer(&self) -> OptimizerChoice {
        if self.factors.contains(&Factor::Adam) {
            OptimizerChoice::Adam
        } else {
            OptimizerChoice::Sgd
        }
    }

    /// The mechanism at ε: Section 4's, its C scaled by a clip factor.
    fn mechanism_config(&self) -> GradientMechanismConfig {
        let scale = if self.factors.contains(&Factor::ClipX10) {
            10.0
        } else if self.factors.contains(&Factor::ClipX100) {
            100.0
        } else {
            1.0
        };
        let mut config = self.mechanism.paper_default(self.epsilon);
        if let GradientMechanismConfig::Laplace { clip, .. }
        | GradientMechanismConfig::Prs { clip, .. } = &mut config
        {
            *clip *= scale;
        }
        config
    }

    /// |B|: the mechanism's (Section 4.1), or 100 with `buffer-100`.
    fn buffer_size(&self) -> usize {
        if self.factors.contains(&Factor::Buffer100) {
            100
        } else {
            buffer_size(self.mechanism)
        }
    }

    /// The run configuration: Section 4's setting for the mechanism at ε (its C and |B|),
    /// with this setting's factors, submissions applied in `order`.
    pub(super) fn config(
        &self,
        workers: usize,
        max_updates: u64,
        order: SubmissionOrder,
    ) -> PgcConfig {
        let optimizer = self.optimizer();
        let mut config = PgcConfig::paper(self.mechanism_config())
            .with_max_updates(max_updates)
            .with_stop_at_success(true)
            .with_order(order);
        config.a3c = self
            .learner()
            .apply(A3cConfig::pgc_paper())
            .with_workers(workers)
            .with_optimizer(optimizer.kind())
            .with_lr(optimizer.default_lr())
            .with_buffer_size(self.buffer_size());
        config
    }

    /// The `suite pgc` flags that run this setting's cell by hand.
    pub(super) fn flags(&self) -> String {
        format!(
            "--mechanisms {} --epsilons {} --factors {}={}",
            self.mechanism.name(),
            self.epsilon.slug(),
            self.mechanism.name(),
            self.factor_slugs()
        )
    }
}

/// The settings: stage 1, the paper's setting and each factor alone, for Laplace at ε = ∞
/// (|B| = 1, so the cutoff of 90,000 updates is 90,000 submissions) and for PRS at ε = ∞
/// (|B| = 100; its Adam row is the optimiser per mechanism); stage 2, on Laplace, the
/// combinations of the three factors that the earlier measurement changed together (Adam,
/// sampled actions, biases), pairs then all three.
pub(super) fn settings() -> Vec<Setting> {
    use Factor::*;
    let mut out = Vec::new();
    for mech in [MechanismKind::Laplace, MechanismKind::Prs] {
        out.push(Setting::new(mech, &[]));
        out.extend(Factor::ALL.iter().map(|&f| Setting::new(mech, &[f])));
    }
    for combo in [
        &[Adam, SampledActions][..],
        &[Adam, Bias],
        &[SampledActions, Bias],
        &[Adam, SampledActions, Bias],
    ] {
        out.push(Setting::new(MechanismKind::Laplace, combo));
    }
    out
}

/// MAX_BUF of the paper's runs (Section 4.1): 100 for PRS, 1 for Laplace and the raw gradient.
pub(super) fn buffer_size(mech: MechanismKind) -> usize {
    match mech {
        MechanismKind::Prs => 100,
        _ => 1,
    }
}

/// The cells a row runs: the non-private row (the paper's "non-private A3C", against which
/// Table 3 is relative when it runs) has only ε = ∞.
pub(super) fn runs_at(mech: MechanismKind, epsilon: Epsilon) -> bool {
    mech != MechanismKind::None || epsilon == Epsilon::INFINITE
}

//! The attack's configuration: the parts it combines and the optimiser's settings, with the
//! presets QGI, RGI, DLG and Inverting Gradients.

use burn::config::Config;

use crate::adam::TensorAdamConfig;
use crate::error::{check_non_negative, check_positive, AttackError};
use crate::parts::{
    ActionRecovery, ActionRule, GradientMatchingLoss, GradientSource, ImagePrior, LrSchedule,
    SignalRule, StateOptimisation,
};
use crate::victim::VictimKind;

/// An attack: the parts it combines and the optimiser's settings.
#[derive(Config, Debug)]
pub struct AttackConfig {
    /// How g_rec is computed: eq. 6's error direction (QGI, RGI) or the objective (DLG, IG).
    #[config(default = "GradientSource::ErrorDirection")]
    pub source: GradientSource,
    /// The gradient matching loss L(g_rec, g).
    #[config(default = "GradientMatchingLoss::Cosine")]
    pub matching: GradientMatchingLoss,
    /// Prior on the reconstructed images (stage 2 and the joint ablation only).
    #[config(default = "Some(ImagePrior::TotalVariation { weight: 0.1 })")]
    pub prior: Option<ImagePrior>,
    /// Two stages (linear part, then images) or the joint ablation.
    #[config(default = "StateOptimisation::TwoStage")]
    pub state: StateOptimisation,
    /// The rule that reads the action off the gradient (where a rule is used).
    #[config(default = "ActionRecovery::LargestBiasGradient")]
    pub action_recovery: ActionRecovery,
    /// Optimisation steps per stage (the paper runs 2×10⁴).
    #[config(default = 500)]
    pub iterations_per_stage: usize,
    /// Adam on the free variables.
    #[config(default = "TensorAdamConfig::new()")]
    pub optimizer: TensorAdamConfig,
    /// Learning-rate schedule within each stage.
    #[config(default = "LrSchedule::StepDecay")]
    pub schedule: LrSchedule,
    /// Each stage runs from this many Gaussian initialisations and keeps the one with the
    /// lowest final loss (Geiping et al.'s restarts; 1 is the paper's single run). Stage 1 is
    /// cheap and has local minima where a ReLU pattern of the linear part is wrong, so a few
    /// restarts make it much more reliable.
    #[config(default = 1)]
    pub restarts: usize,
    /// Standard deviation σ of the Gaussian initialisation N(0, σ²) of every free variable.
    #[config(default = 1.0)]
    pub init_std: f64,
    /// Seed of the Gaussian initialisation.
    #[config(default = 0)]
    pub seed: u64,
    /// Record the loss every this many iterations (and at the last one); each record is one
    /// device-to-host read.
    #[config(default = 10)]
    pub log_every: usize,
}

impl AttackConfig {
    /// QGI (Fig. 2 left): error-direction gradients, cosine + TV(λ = 0.1), two stages, action
    /// by eq. 7, target Q by the error-magnitude rule. The matching loss adds a magnitude
    /// term to eq. 5 ([`GradientMatchingLoss::CosineAndMagnitude`], μ = 0.1); set it to
    /// [`GradientMatchingLoss::Cosine`] for the paper's eq. 5 alone.
    pub fn qgi() -> Self {
        Self::new().with_matching(GradientMatchingLoss::error_direction_default())
    }

    /// RGI (Fig. 2 right): as QGI, with action and reward by eq. 8–9.
    pub fn rgi() -> Self {
        Self::qgi().with_action_recovery(ActionRecovery::PolicyGradientDirection)
    }

    /// DLG (Zhu et al.), Table II row 1: objective gradients with the action and the signal
    /// optimised jointly, squared-L2 matching, no prior.
    pub fn dlg() -> Self {
        Self::new()
            .with_source(GradientSource::Objective {
                action: ActionRule::Joint,
                signal: SignalRule::Joint,
            })
            .with_matching(GradientMatchingLoss::SquaredL2)
            .with_prior(None)
    }

    /// Inverting Gradients (Geiping et al.), Table II row 3: objective gradients, the action
    /// by iDLG's rule read off ∇_{b_last} (eq. 7 for an MSE victim), the signal optimised
    /// jointly, cosine + TV.
    pub fn inverting_gradients() -> Self {
        Self::new().with_source(GradientSource::Objective {
            action: ActionRule::FromBias,
            signal: SignalRule::Joint,
        })
    }

    /// Checks every parameter; the error names the first one out of range.
    pub fn validate(&self) -> Result<(), AttackError> {
        if self.iterations_per_stage == 0 {
            return Err(AttackError::OutOfRange {
                name: "iterations_per_stage",
                value: 0.0,
                expected: ">= 1",
            });
        }
        if self.restarts == 0 {
            return Err(AttackError::OutOfRange {
                name: "restarts",
                value: 0.0,
                expected: ">= 1",
            });
        }
        if self.log_every == 0 {
            return Err(AttackError::OutOfRange {
                name: "log_every",
                value: 0.0,
                expected: ">= 1",
            });
        }
        check_positive("init_std", self.init_std)?;
        check_non_negative("magnitude weight", self.matching.magnitude_weight())?;
        if let Some(prior) = &self.prior {
            check_non_negative("prior weight", prior.weight())?;
        }
        self.optimizer.validate()
    }

    /// Checks that the parts fit together and fit the victim.
    pub(crate) fn check_compatible(&self, kind: VictimKind) -> Result<(), AttackError> {
        if self.action_recovery == ActionRecovery::PolicyGradientDirection {
            if kind == VictimKind::Dqn {
                return Err(AttackError::Incompatible(
                    "action_recovery PolicyGradientDirection (eq. 8) needs a REINFORCE victim"
                        .into(),
                ));
            }
            if let GradientSource::Objective {
                action: ActionRule::FromBias,
                ..
            } = &self.source
            {
                return Err(AttackError::Incompatible(
                    "ActionRule::FromBias needs the action before the optimisation, but PolicyGradientDirection \
                     needs the stage-1 reconstruction; use LargestBiasGradient or OddSignBiasGradient"
                        .into(),
                ));
            }
        }
        Ok(())
    }
}

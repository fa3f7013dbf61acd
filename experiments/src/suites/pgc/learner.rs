//! The learner's factors that the paper leaves open or that its likely code base does
//! differently (reward, loss reduction, exploration clock, action choice, biases, optimiser),
//! as command-line options shared by `suite pgc` and `pgc aggregator|agents`, so that every
//! setting of the ablation can also be run by hand.

use std::fmt;
use std::str::FromStr;

use clap::{Args, ValueEnum};
use privrl_agents::{
    A3cConfig, Exploration, ExplorationClock, GreedyAction, LossReduction, OptimizerKind,
    RewardScheme,
};
use privrl_privacy::MechanismKind;
use serde::{Deserialize, Serialize};

/// `--reward`.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RewardArg {
    /// +1 per step, the failing step included (Gymnasium's CartPole; the paper's text).
    Gymnasium,
    /// 0 per step, −1 on failing, +1 on reaching the 200-step cap, which ends the episode
    /// without bootstrap (the Keras/TensorFlow A3C CartPole example's scheme).
    Sparse,
}

/// `--loss`.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum LossArg {
    /// Σ over the episode's steps (eq. 16–17 as written).
    Sum,
    /// The mean over the steps (tf.reduce_mean in the TensorFlow A3C code).
    Mean,
}

/// `--exploration-clock`.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ClockArg {
    /// n counts submissions (episodes): α = 0 after 900 of them.
    Submissions,
    /// n counts environment steps across agents (the TensorFlow code's frame counter): α = 0
    /// after 900 steps.
    EnvSteps,
}

/// `--actions`.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ActionsArg {
    /// argmax π with probability 1 − α, uniform with probability α (Algorithm 1 and Section 4).
    Argmax,
    /// a ∼ π with probability 1 − α, uniform with probability α (the TensorFlow A3C code).
    Sampled,
    /// a ∼ π always, no α (the original A3C).
    Policy,
}

/// The learner's factors (the paper's setting by default).
#[derive(Args, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LearnerArgs {
    /// The reward the loss sees (the score, steps survived, is the same under both):
    /// `gymnasium` (+1 per step, the paper's CartPole) or `sparse` (0 per step, −1 on failing,
    /// +1 on reaching the cap, no bootstrap: the Keras A3C CartPole example's).
    #[arg(long, value_enum, default_value_t = RewardArg::Gymnasium)]
    pub reward: RewardArg,
    /// The episode loss of one submission: `sum` over its steps (eq. 16–17) or their `mean`.
    /// Laplace clips the gradient's L1 norm to C/2 = 0.005, so this matters there only for
    /// gradients already that small.
    #[arg(long, value_enum, default_value_t = LossArg::Sum)]
    pub loss: LossArg,
    /// What the n of the exploration rate α = max(0, 0.5 − n/1800) counts: `submissions`
    /// (episodes) or `env-steps` (steps across all agents, advancing within an episode).
    #[arg(long, value_enum, default_value_t = ClockArg::Submissions)]
    pub exploration_clock: ClockArg,
    /// How agents act: `argmax` (argmax π, uniform with probability α: the paper), `sampled`
    /// (a ∼ π, uniform with probability α) or `policy` (a ∼ π always, no α).
    #[arg(long, value_enum, default_value_t = ActionsArg::Argmax)]
    pub actions: ActionsArg,
    /// Give the network biases (d = 131). The paper's d = 112 counts none, but its
    /// TensorFlow layers may well have had them (Keras' default).
    #[arg(long)]
    pub bias: bool,
}

impl Default for LearnerArgs {
    /// The paper's setting.
    fn default() -> Self {
        Self {
            reward: RewardArg::Gymnasium,
            loss: LossArg::Sum,
            exploration_clock: ClockArg::Submissions,
            actions: ActionsArg::Argmax,
            bias: false,
        }
    }
}

impl LearnerArgs {
    /// `a3c` (the paper's [`A3cConfig::pgc_paper`] or a variant) with these factors.
    pub fn apply(&self, a3c: A3cConfig) -> A3cConfig {
        let exploration = match (self.actions, a3c.exploration) {
            (ActionsArg::Policy, _) => Exploration::Sample,
            (actions, Exploration::EpsilonGreedy { start, decay, .. }) => {
                Exploration::EpsilonGreedy {
                    start,
                    decay,
                    clock: match self.exploration_clock {
                        ClockArg::Submissions => ExplorationClock::Submissions,
                        ClockArg::EnvSteps => ExplorationClock::EnvSteps,
                    },
                    greedy: if actions == ActionsArg::Sampled {
                        GreedyAction::Sample
                    } else {
                        GreedyAction::Argmax
                    },
                }
            }
            (_, Exploration::Sample) => Exploration::Sample,
        };
        a3c.with_exploration(exploration)
            .with_reward(match self.reward {
                RewardArg::Gymnasium => RewardScheme::Gymnasium,
                RewardArg::Sparse => RewardScheme::Sparse,
            })
            .with_loss_reduction(match self.loss {
                LossArg::Sum => LossReduction::Sum,
                LossArg::Mean => LossReduction::Mean,
            })
            .with_bias(self.bias)
    }

    /// The flags that reproduce these factors (empty for the paper's setting).
    pub fn flags(&self) -> String {
        let paper = Self::default();
        let mut out = String::new();
        if self.reward != paper.reward {
            out.push_str(&format!(" --reward {}", flag_value(&self.reward)));
        }
        if self.loss != paper.loss {
            out.push_str(&format!(" --loss {}", flag_value(&self.loss)));
        }
        if self.exploration_clock != paper.exploration_clock {
            out.push_str(&format!(
                " --exploration-clock {}",
                flag_value(&self.exploration_clock)
            ));
        }
        if self.actions != paper.actions {
            out.push_str(&format!(" --actions {}", flag_value(&self.actions)));
        }
        if self.bias {
            out.push_str(" --bias");
        }
        out
    }

    /// The factors in words, for a report.
    pub fn describe(&self) -> String {
        format!(
            "reward {}; loss {} over steps; α clock {}; actions {}; biases {}",
            flag_value(&self.reward),
            flag_value(&self.loss),
            flag_value(&self.exploration_clock),
            flag_value(&self.actions),
            if self.bias {
                "yes (d = 131)"
            } else {
                "none (d = 112)"
            }
        )
    }
}

/// How `value` is spelled on the command line.
pub(super) fn flag_value(value: &impl ValueEnum) -> String {
    value
        .to_possible_value()
        .map(|v| v.get_name().to_string())
        .unwrap_or_default()
}

/// The aggregator's update rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum OptimizerChoice {
    /// θ ← θ − η·mean(B) (eq. 22).
    Sgd,
    /// Adam (β = (0.9, 0.999), ε = 1e-8) on mean(B).
    Adam,
}

impl OptimizerChoice {
    /// The library's kind.
    pub fn kind(self) -> OptimizerKind {
        match self {
            Self::Sgd => OptimizerKind::Sgd,
            Self::Adam => OptimizerKind::Adam,
        }
    }

    /// The learning rate used when none is given: the paper's η = 0.5 for SGD, 0.005 for Adam.
    pub fn default_lr(self) -> f64 {
        match self {
            Self::Sgd => 0.5,
            Self::Adam => 0.005,
        }
    }
}

/// A value for every mechanism or for one: `VALUE` or `MECHANISM=VALUE` (`--optimizer
/// laplace=adam,prs=sgd`, `--lr 0.01`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PerMechanism<T> {
    /// The mechanism it applies to; `None` for all.
    pub mechanism: Option<MechanismKind>,
    /// The value.
    pub value: T,
}

impl FromStr for PerMechanism<OptimizerChoice> {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        parse_per_mechanism(text, |v| OptimizerChoice::from_str(v, true))
    }
}

impl FromStr for PerMechanism<f64> {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        parse_per_mechanism(text, |v| match v.parse::<f64>() {
            Ok(lr) if lr.is_finite() && lr > 0.0 => Ok(lr),
            _ => Err("expected a finite number > 0".to_string()),
        })
    }
}

/// Parses `[MECHANISM=]VALUE`; the error names the part that is wrong.
fn parse_per_mechanism<T>(
    text: &str,
    value: impl Fn(&str) -> Result<T, String>,
) -> Result<PerMechanism<T>, String> {
    let (mechanism, raw) = match text.split_once('=') {
        Some((m, v)) => {
            let kind = m
                .trim()
                .parse::<MechanismKind>()
                .ok()
                .filter(|k| crate::mechanism_arg::PGC_MECHANISMS.contains(k))
                .ok_or_else(|| {
                    format!("unknown mechanism {m:?} in {text:?} (expected none, laplace or prs)")
                })?;
            (Some(kind), v.trim())
        }
        None => (None, text.trim()),
    };
    let value = value(raw).map_err(|message| format!("invalid value {raw:?}: {message}"))?;
    Ok(PerMechanism { mechanism, value })
}

impl<T: fmt::Display> fmt::Display for PerMechanism<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.mechanism {
            Some(m) => write!(f, "{}={}", m.name(), self.value),
            None => write!(f, "{}", self.value),
        }
    }
}

impl fmt::Display for OptimizerChoice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&flag_value(self))
    }
}

/// The value for `mechanism`: the last entry naming it, else the last entry for all.
pub fn for_mechanism<T: Copy>(entries: &[PerMechanism<T>], mechanism: MechanismKind) -> Option<T> {
    entries
        .iter()
        .rev()
        .find(|e| e.mechanism == Some(mechanism))
        .or_else(|| entries.iter().rev().find(|e| e.mechanism.is_none()))
        .map(|e| e.value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn factors_reach_the_a3c_config() {
        let paper = A3cConfig::pgc_paper();
        let same = LearnerArgs::default().apply(paper.clone());
        assert_eq!(format!("{same:?}"), format!("{paper:?}"));
        assert_eq!(LearnerArgs::default().flags(), "");

        let all = LearnerArgs {
            reward: RewardArg::Sparse,
            loss: LossArg::Mean,
            exploration_clock: ClockArg::EnvSteps,
            actions: ActionsArg::Sampled,
            bias: true,
        };
        let a3c = all.apply(paper.clone());
        assert_eq!(a3c.reward, RewardScheme::Sparse);
        assert_eq!(a3c.loss_reduction, LossReduction::Mean);
        assert!(a3c.bias);
        assert_eq!(
            a3c.exploration,
            Exploration::EpsilonGreedy {
                start: 0.5,
                decay: 1800.0,
                clock: ExplorationClock::EnvSteps,
                greedy: GreedyAction::Sample,
            }
        );
        assert_eq!(
            all.flags(),
            " --reward sparse --loss mean --exploration-clock env-steps --actions sampled --bias"
        );
        let policy = LearnerArgs {
            actions: ActionsArg::Policy,
            ..LearnerArgs::default()
        };
        assert_eq!(policy.apply(paper).exploration, Exploration::Sample);
    }

    #[test]
    fn per_mechanism_values_parse_and_resolve() {
        let entries: Vec<PerMechanism<OptimizerChoice>> = ["sgd", "prs=adam"]
            .iter()
            .map(|t| t.parse().unwrap())
            .collect();
        assert_eq!(
            for_mechanism(&entries, MechanismKind::Prs),
            Some(OptimizerChoice::Adam)
        );
        assert_eq!(
            for_mechanism(&entries, MechanismKind::Laplace),
            Some(OptimizerChoice::Sgd)
        );
        assert_eq!(
            for_mechanism::<OptimizerChoice>(&[], MechanismKind::Prs),
            None
        );
        assert_eq!(entries[1].to_string(), "prs=adam");
        let lr: PerMechanism<f64> = "lap=0.01".parse().unwrap();
        assert_eq!(
            (lr.mechanism, lr.value),
            (Some(MechanismKind::Laplace), 0.01)
        );
        assert!("gauss=adam"
            .parse::<PerMechanism<OptimizerChoice>>()
            .is_err());
        assert!("prs=rmsprop"
            .parse::<PerMechanism<OptimizerChoice>>()
            .is_err());
        assert!("-1".parse::<PerMechanism<f64>>().is_err());
        assert!("prs=nan".parse::<PerMechanism<f64>>().is_err());
    }
}

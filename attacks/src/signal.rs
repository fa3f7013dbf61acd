//! The supervision signal's rule for attacks through the objective (DLG, IG): optimised
//! jointly, known to the attacker, or a rule of one's own registered by name.

use std::collections::HashMap;
use std::sync::{Arc, LazyLock, RwLock};

use rand::RngCore;

use crate::error::AttackError;
use crate::parts::{gaussian_noise, SignalRule};
use crate::victim::VictimKind;

/// A signal rule of one's own: whether the attacker knows the signal, and where a free
/// signal starts. Registered by name with [`register_signal_rule`] and chosen in an
/// [`AttackConfig`](crate::AttackConfig) by `SignalRule::Registered { name }`.
pub trait SignalSource: Send + Sync + 'static {
    /// `Some(signal)`: the attacker knows the signal for a victim of this kind, and J holds it
    /// fixed; `None`: the attack optimises it jointly with the state.
    fn known(&self, kind: VictimKind) -> Option<f64>;

    /// Where a free signal starts (called only when [`SignalSource::known`] is `None`), given
    /// the config's spread of initial values and the attack's generator.
    fn initial(&self, init_std: f64, rng: &mut dyn RngCore) -> f64;
}

impl SignalRule {
    /// Refuses a registered rule that is not registered.
    pub fn check_available(&self) -> Result<(), AttackError> {
        match self {
            SignalRule::Registered { name } => registered(name).map(|_| ()),
            SignalRule::Joint | SignalRule::Known { .. } => Ok(()),
        }
    }

    /// The signal J holds fixed, if the attacker knows it (no randomness drawn).
    pub(crate) fn known(&self, kind: VictimKind) -> Result<Option<f64>, AttackError> {
        Ok(match self {
            SignalRule::Joint => None,
            SignalRule::Known { value } => Some(*value),
            SignalRule::Registered { name } => registered(name)?.known(kind),
        })
    }

    /// Where a free signal starts, drawn from `rng` (only for a signal not [`Self::known`]).
    pub(crate) fn initial(
        &self,
        init_std: f64,
        rng: &mut impl RngCore,
    ) -> Result<f32, AttackError> {
        Ok(match self {
            SignalRule::Registered { name } => registered(name)?.initial(init_std, rng) as f32,
            _ => gaussian_noise(1, init_std, rng)[0],
        })
    }
}

static REGISTRY: LazyLock<RwLock<HashMap<String, Arc<dyn SignalSource>>>> =
    LazyLock::new(Default::default);

/// Registers `rule` under `name`, so that `SignalRule::Registered { name }` uses it in every
/// attack through the objective. Registering a name again replaces the rule. Process-wide.
///
/// ```
/// use privrl_attacks::{register_signal_rule, SignalRule, SignalSource, VictimKind};
/// use rand::RngCore;
///
/// /// REINFORCE's reward on CartPole is known (1 per step); a DQN's target Q is not, and
/// /// starts at CartPole's mean return-to-go instead of near 0.
/// struct CartPoleSignal;
/// impl SignalSource for CartPoleSignal {
///     fn known(&self, kind: VictimKind) -> Option<f64> {
///         matches!(kind, VictimKind::Reinforce { .. }).then_some(1.0)
///     }
///     fn initial(&self, _init_std: f64, _rng: &mut dyn RngCore) -> f64 {
///         50.0
///     }
/// }
/// register_signal_rule("cartpole", CartPoleSignal);
/// assert!(SignalRule::Registered { name: "cartpole".into() }.check_available().is_ok());
/// assert!(SignalRule::Registered { name: "other".into() }.check_available().is_err());
/// ```
pub fn register_signal_rule(name: &str, rule: impl SignalSource) {
    REGISTRY
        .write()
        .unwrap_or_else(|e| e.into_inner())
        .insert(name.to_string(), Arc::new(rule));
}

fn registered(name: &str) -> Result<Arc<dyn SignalSource>, AttackError> {
    let registry = REGISTRY.read().unwrap_or_else(|e| e.into_inner());
    registry
        .get(name)
        .cloned()
        .ok_or_else(|| AttackError::UnknownSignalRule {
            name: name.to_string(),
            known: {
                let mut names: Vec<&str> = registry.keys().map(String::as_str).collect();
                names.sort_unstable();
                names.join(", ")
            },
        })
}

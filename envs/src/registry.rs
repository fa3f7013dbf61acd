//! Environments by name, for configs and command lines (`xtask env list`).
//!
//! Two lists: the classic-control environments (Gymnasium ports with flat vector observations,
//! described by [`registry`]) and the rendered environments (image observations, named by
//! [`rendered_env_names`]). [`make`] builds either.

use serde::Serialize;

use crate::room::RoomEnv;
use crate::{Acrobot, CartPole, Env, EnvError, MountainCar, Space};

/// What `xtask env list` prints about one registered environment.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EnvSpec {
    /// Name that [`make`] takes, e.g. `cartpole-v1`.
    pub name: &'static str,
    /// Gymnasium's id for the same environment, e.g. `CartPole-v1` (also accepted by `make`).
    pub gymnasium_id: &'static str,
    /// Observation space.
    pub observation_space: Space,
    /// Action space.
    pub action_space: Space,
    /// Time limit after which episodes are truncated.
    pub max_episode_steps: Option<usize>,
    /// Gymnasium's `reward_threshold`: the average return at which the task counts as solved.
    pub reward_threshold: Option<f64>,
}

/// One registered environment: our name, Gymnasium's id, Gymnasium's reward threshold, and
/// how to build it.
struct Registration {
    name: &'static str,
    gymnasium_id: &'static str,
    reward_threshold: f64,
    build: fn() -> Box<dyn Env>,
}

/// Every environment [`make`] knows, with Gymnasium's registration values
/// (`gymnasium/envs/__init__.py`).
const REGISTERED: [Registration; 4] = [
    Registration {
        name: "cartpole-v1",
        gymnasium_id: "CartPole-v1",
        reward_threshold: 475.0,
        build: || Box::new(CartPole::v1()),
    },
    Registration {
        name: "cartpole-v0",
        gymnasium_id: "CartPole-v0",
        reward_threshold: 195.0,
        build: || Box::new(CartPole::v0()),
    },
    Registration {
        name: "acrobot-v1",
        gymnasium_id: "Acrobot-v1",
        reward_threshold: -100.0,
        build: || Box::new(Acrobot::new()),
    },
    Registration {
        name: "mountaincar-v0",
        gymnasium_id: "MountainCar-v0",
        reward_threshold: -110.0,
        build: || Box::new(MountainCar::new()),
    },
];

/// How a registered environment is built.
type BuildEnv = fn() -> Box<dyn Env>;

/// Environments with image observations: the active-perception room task in the paper's two
/// settings (150 × 150 images; see [`crate::room`]). They have no Gymnasium counterpart or
/// reward threshold, and their observations are multimodal, so [`registry`] (whose users
/// tabulate throughput and random baselines over flat vectors) leaves them out.
const RENDERED: [(&str, BuildEnv); 2] = [
    ("room-s1", || Box::new(RoomEnv::s1())),
    ("room-s2", || Box::new(RoomEnv::s2())),
];

/// Builds an environment by name: `cartpole-v1`, `cartpole-v0`, `acrobot-v1`,
/// `mountaincar-v0`, `room-s1` or `room-s2`. Names match case-insensitively, so Gymnasium's
/// spelling (`CartPole-v1`, `MountainCar-v0`) works too. An unknown name gives
/// [`EnvError::UnknownEnv`] listing the valid ones.
///
/// `gymnasium:<Gymnasium id>[?key=value&...]`, e.g. `gymnasium:ALE/AirRaid-v5?obs_type=ram`,
/// runs any Gymnasium environment in a Python worker (the `gymnasium` module, cargo feature
/// `gymnasium`); without the feature such a name gives [`EnvError::FeatureDisabled`].
pub fn make(name: &str) -> Result<Box<dyn Env>, EnvError> {
    if let Some(bridged) = make_gymnasium(name) {
        return bridged;
    }
    let wanted = name.trim().to_ascii_lowercase();
    REGISTERED
        .iter()
        .find(|registration| registration.name == wanted)
        .map(|registration| (registration.build)())
        .or_else(|| {
            RENDERED
                .iter()
                .find(|(rendered, _)| *rendered == wanted)
                .map(|(_, build)| build())
        })
        .ok_or_else(|| EnvError::UnknownEnv {
            name: name.to_string(),
            valid: env_names().iter().map(|n| n.to_string()).collect(),
        })
}

/// The prefix of a bridged Gymnasium environment's name (matched case-insensitively).
const GYMNASIUM_PREFIX: &str = "gymnasium:";

/// `Some` for a `gymnasium:` name: the bridged environment, or why there is none.
fn make_gymnasium(name: &str) -> Option<Result<Box<dyn Env>, EnvError>> {
    let trimmed = name.trim();
    let prefix = trimmed.get(..GYMNASIUM_PREFIX.len())?;
    if !prefix.eq_ignore_ascii_case(GYMNASIUM_PREFIX) {
        return None;
    }
    #[cfg(feature = "gymnasium")]
    let made = crate::gymnasium::GymnasiumConfig::parse(trimmed)
        .and_then(|config| config.build())
        .map(|env| Box::new(env) as Box<dyn Env>);
    #[cfg(not(feature = "gymnasium"))]
    let made = Err(EnvError::FeatureDisabled {
        name: name.to_string(),
        feature: "gymnasium".to_string(),
    });
    Some(made)
}

/// The names [`make`] accepts, `gymnasium:` names aside: the classic-control ones in registry
/// order, then the rendered ones ([`rendered_env_names`]).
pub fn env_names() -> Vec<&'static str> {
    REGISTERED
        .iter()
        .map(|registration| registration.name)
        .chain(rendered_env_names())
        .collect()
}

/// The rendered environments [`make`] builds (`room-s1`, `room-s2`), which [`registry`] does
/// not list.
pub fn rendered_env_names() -> Vec<&'static str> {
    RENDERED.iter().map(|(name, _)| *name).collect()
}

/// Every registered classic-control environment (flat vector observations) with its spaces,
/// time limit and reward threshold. The rendered environments are listed by
/// [`rendered_env_names`].
pub fn registry() -> Vec<EnvSpec> {
    REGISTERED
        .iter()
        .map(|registration| {
            let env = (registration.build)();
            EnvSpec {
                name: registration.name,
                gymnasium_id: registration.gymnasium_id,
                observation_space: env.observation_space(),
                action_space: env.action_space(),
                max_episode_steps: env.max_episode_steps(),
                reward_threshold: Some(registration.reward_threshold),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn make_accepts_our_names_and_gymnasium_spelling() {
        for spec in registry() {
            assert_eq!(make(spec.name).unwrap().id(), spec.name);
            assert_eq!(make(spec.gymnasium_id).unwrap().id(), spec.name);
        }
        assert_eq!(make("MOUNTAINCAR-V0").unwrap().id(), "mountaincar-v0");
    }

    #[test]
    fn unknown_name_lists_valid_names() {
        let err = make("Pendulum-v1").err().unwrap();
        assert_eq!(
            err,
            EnvError::UnknownEnv {
                name: "Pendulum-v1".into(),
                valid: vec![
                    "cartpole-v1".into(),
                    "cartpole-v0".into(),
                    "acrobot-v1".into(),
                    "mountaincar-v0".into(),
                    "room-s1".into(),
                    "room-s2".into()
                ],
            }
        );
        let message = err.to_string();
        assert!(message.contains("Pendulum-v1"), "{message}");
        assert!(
            message.contains("cartpole-v1, cartpole-v0, acrobot-v1, mountaincar-v0"),
            "{message}"
        );
    }

    #[test]
    fn registry_matches_gymnasium_registration() {
        let specs = registry();
        let limits: Vec<_> = specs.iter().map(|s| s.max_episode_steps).collect();
        assert_eq!(limits, [Some(500), Some(200), Some(500), Some(200)]);
        let dims: Vec<_> = specs
            .iter()
            .map(|s| (s.observation_space.flat_dim(), s.action_space.discrete_n()))
            .collect();
        assert_eq!(
            dims,
            [(4, Some(2)), (4, Some(2)), (6, Some(3)), (2, Some(3))]
        );
    }

    #[cfg(not(feature = "gymnasium"))]
    #[test]
    fn gymnasium_names_without_the_feature_name_the_feature() {
        let err = make("Gymnasium:ALE/AirRaid-v5?obs_type=ram").err().unwrap();
        assert_eq!(
            err,
            EnvError::FeatureDisabled {
                name: "Gymnasium:ALE/AirRaid-v5?obs_type=ram".into(),
                feature: "gymnasium".into()
            }
        );
        assert!(err.to_string().contains("--features privrl-envs/gymnasium"));
    }

    #[cfg(feature = "gymnasium")]
    #[test]
    fn gymnasium_names_are_parsed_before_python_starts() {
        let err = make("gymnasium:CartPole-v1?a=1&a=2").err().unwrap();
        assert!(
            matches!(err, EnvError::InvalidGymnasiumName { .. }),
            "{err:?}"
        );
    }

    #[test]
    fn make_builds_the_rendered_environments() {
        assert_eq!(rendered_env_names(), ["room-s1", "room-s2"]);
        for (name, obs_len) in [("room-s1", 4 * 150 * 150 + 4), ("ROOM-S2", 150 * 150 + 4)] {
            let env = make(name).unwrap();
            assert_eq!(env.id(), name.to_ascii_lowercase());
            assert_eq!(env.observation_space().flat_dim(), obs_len);
            assert_eq!(env.action_space(), Space::Discrete { n: 7 });
            assert_eq!(env.max_episode_steps(), Some(100));
        }
        assert!(registry().iter().all(|spec| !spec.name.starts_with("room")));
    }
}

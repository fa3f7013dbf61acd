//! Local DP on observations.

use privrl_envs::{Env, EnvError, Obs, Space, Step, StepInfo};
use privrl_privacy::{MechanismRng, ObservationNoise, RandomnessSource};

use crate::error::AgentError;

/// An environment whose observations carry N(0, (σ·IQR_j)²) noise on every dimension j
/// (paper 004, "LDP – noise calibration"): the agent, its replay buffer and its gradients only
/// ever see the noisy states. Rewards, termination and the physical state are untouched.
///
/// With [`RandomnessSource::Secure`] the bounded noise (the one with an ε) is released on a
/// grid with exact discrete Gaussian noise
/// ([`ObservationNoise::perturb_exact_in_place`]), so that its ε holds for the floating-point
/// values released, not only for the real-valued mechanism.
pub struct NoisyObservationEnv {
    inner: Box<dyn Env>,
    noise: ObservationNoise,
    rng: MechanismRng,
    /// Release on the grid (secure randomness and a bounded noise).
    exact: bool,
}

impl NoisyObservationEnv {
    /// Wraps `inner` (flat observations) with `noise` fitted on its warm-up states; the noise
    /// is drawn from `source` (a seed, or the operating system's CSPRNG).
    pub fn new(
        inner: Box<dyn Env>,
        noise: ObservationNoise,
        source: RandomnessSource,
    ) -> Result<Self, AgentError> {
        let width = inner.observation_space().flat_dim();
        if noise.std().len() != width {
            return Err(AgentError::ShapeMismatch {
                what: "observation noise width",
                expected: width,
                got: noise.std().len(),
            });
        }
        let exact = matches!(source, RandomnessSource::Secure) && noise.has_exact_release();
        Ok(Self {
            inner,
            noise,
            rng: MechanismRng::new(source)?,
            exact,
        })
    }

    /// The fitted noise (IQR and standard deviation per dimension).
    pub fn noise(&self) -> &ObservationNoise {
        &self.noise
    }

    fn perturb(&mut self, obs: &mut [f32]) -> Result<(), EnvError> {
        let released = if self.exact {
            self.noise.perturb_exact_in_place(obs, &mut self.rng)
        } else {
            self.noise.perturb_in_place(obs, &mut self.rng)
        };
        released.map_err(|e| EnvError::InvalidState {
            env: self.inner.id().to_string(),
            state: obs.iter().map(|&x| f64::from(x)).collect(),
            expected: format!("a finite observation to perturb ({e})"),
        })
    }

    fn perturb_obs(&mut self, obs: Obs) -> Result<Obs, EnvError> {
        match obs {
            Obs::Vector(mut v) => {
                self.perturb(&mut v)?;
                Ok(Obs::Vector(v))
            }
            other => Ok(other),
        }
    }
}

impl Env for NoisyObservationEnv {
    fn id(&self) -> &str {
        self.inner.id()
    }

    fn observation_space(&self) -> Space {
        self.inner.observation_space()
    }

    fn action_space(&self) -> Space {
        self.inner.action_space()
    }

    /// A non-finite first observation (which no classic-control environment produces) is
    /// returned unperturbed, since `reset` cannot fail; the agent's loss then reports it.
    fn reset(&mut self, seed: Option<u64>) -> Obs {
        let obs = self.inner.reset(seed);
        self.perturb_obs(obs.clone()).unwrap_or(obs)
    }

    fn step(&mut self, action: usize) -> Result<Step, EnvError> {
        let mut step = self.inner.step(action)?;
        step.obs = self.perturb_obs(step.obs)?;
        Ok(step)
    }

    fn set_state(&mut self, state: &[f64]) -> Result<Obs, EnvError> {
        let obs = self.inner.set_state(state)?;
        self.perturb_obs(obs)
    }

    fn max_episode_steps(&self) -> Option<usize> {
        self.inner.max_episode_steps()
    }

    fn step_into(&mut self, action: usize, obs: &mut [f32]) -> Result<StepInfo, EnvError> {
        let info = self.inner.step_into(action, obs)?;
        self.perturb(obs)?;
        Ok(info)
    }

    fn reset_into(&mut self, seed: Option<u64>, obs: &mut [f32]) -> Result<(), EnvError> {
        self.inner.reset_into(seed, obs)?;
        self.perturb(obs)
    }
}

//! [`GymnasiumEnv`]: a worker started and asked to make the environment, its spaces checked,
//! and the [`Env`] trait over the worker's replies, with the episode's state kept on the Rust
//! side.

use std::fmt;

use super::protocol::{self, MakeReply, WireSpace};
use super::worker::{Launch, Worker};
use super::GymnasiumConfig;
use crate::env::check_obs_len;
use crate::python::default_python;
use crate::{Env, EnvError, EpisodeEnd, Obs, Space, Step, StepInfo};

/// A worker that has been started and sent `make`, not yet answered.
pub(super) struct Starting {
    config: GymnasiumConfig,
    name: String,
    worker: Worker,
}

impl Starting {
    pub(super) fn spawn(config: &GymnasiumConfig) -> Result<Self, EnvError> {
        let name = config.name();
        let python = config.python.clone().unwrap_or_else(default_python);
        let mut worker = Worker::spawn(&Launch {
            name: &name,
            python: &python,
            python_path: &config.python_path,
        })?;
        // Sent at once: the pipe holds it while Python starts.
        worker.send("make", |buf| {
            protocol::make_request(buf, &config.id, &config.kwargs)
        })?;
        Ok(Self {
            config: config.clone(),
            name,
            worker,
        })
    }

    pub(super) fn finish(self) -> Result<GymnasiumEnv, EnvError> {
        let Starting {
            config,
            name,
            mut worker,
        } = self;
        let timeout = config.make_timeout;
        let during = format!("start-up of `{}`", worker.python());
        let hello = worker.receive(&during, timeout)?;
        let (version, versions) = match protocol::parse_hello(hello) {
            Ok(hello) => hello,
            Err(detail) => return Err(worker.protocol_error(&during, detail)),
        };
        if version != protocol::PROTOCOL_VERSION {
            let detail = format!(
                "worker speaks protocol {version}, this library {}",
                protocol::PROTOCOL_VERSION
            );
            return Err(worker.protocol_error(&during, detail));
        }
        let reply = worker.receive("make", timeout)?;
        let reply = match MakeReply::parse(reply) {
            Ok(reply) => reply,
            Err(detail) => return Err(worker.protocol_error("make", detail)),
        };
        GymnasiumEnv::new(config, name, worker, versions, reply)
    }
}

/// Where the current episode stands.
#[derive(Debug, Clone, PartialEq)]
enum Phase {
    NotStarted,
    Running,
    Finished(EpisodeEnd),
    /// The last reset or set_state failed; the next step returns this.
    ResetFailed(EnvError),
}

/// A Gymnasium environment running in a Python worker process, behind the [`Env`] trait.
/// Make one with [`crate::make`]`("gymnasium:...")` or [`GymnasiumConfig::build`]; see the
/// [module docs](super).
///
/// Like the native environments it refuses a step before the first reset, after the episode
/// ended and with an action outside `0..n` (without asking the worker). Truncation comes
/// from Gymnasium (its `TimeLimit` wrapper), and [`Env::max_episode_steps`] reports
/// Gymnasium's `spec.max_episode_steps`.
pub struct GymnasiumEnv {
    config: GymnasiumConfig,
    name: String,
    worker: Worker,
    versions: String,
    resolved: String,
    observation_space: Space,
    observation_shape: Vec<usize>,
    observation_dtype: String,
    action_space: Space,
    num_actions: usize,
    action_start: i64,
    obs_len: usize,
    max_episode_steps: Option<usize>,
    phase: Phase,
    elapsed_steps: usize,
    /// Set once the worker is dead: every later call returns it.
    failure: Option<EnvError>,
    /// A step was sent ([`Env::send_step`]) and its reply not yet read.
    step_in_flight: bool,
}

impl fmt::Debug for GymnasiumEnv {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GymnasiumEnv")
            .field("name", &self.name)
            .field("resolved", &self.resolved)
            .field("pid", &self.worker.pid())
            .field("observation_space", &self.observation_space.to_string())
            .field("action_space", &self.action_space)
            .finish_non_exhaustive()
    }
}

impl GymnasiumEnv {
    fn new(
        config: GymnasiumConfig,
        name: String,
        mut worker: Worker,
        versions: String,
        reply: MakeReply,
    ) -> Result<Self, EnvError> {
        let unsupported = |which: &str, space: String, supported: &str| {
            Err(EnvError::UnsupportedSpace {
                env: name.clone(),
                which: which.to_string(),
                space,
                supported: supported.to_string(),
            })
        };
        let (observation_space, observation_shape, observation_dtype) = match reply.observation {
            WireSpace::Box {
                shape,
                dtype,
                low,
                high,
            } => {
                let scaled = |bounds: Vec<f32>| match config.obs_scale {
                    Some(scale) => bounds.into_iter().map(|b| b * scale).collect(),
                    None => bounds,
                };
                let (low, high) = (scaled(low), scaled(high));
                (Space::Box { low, high }, shape, dtype)
            }
            WireSpace::Discrete { n, .. } => match usize::try_from(n) {
                Ok(n) if n > 0 => (Space::Discrete { n }, vec![n], "one-hot f32".to_string()),
                _ => return unsupported("observation", format!("Discrete({n})"), "n >= 1"),
            },
        };
        let (num_actions, action_start) = match reply.action {
            WireSpace::Discrete { n, start } => match usize::try_from(n) {
                Ok(num) if num > 0 => (num, start),
                _ => return unsupported("action", format!("Discrete({n})"), "n >= 1"),
            },
            WireSpace::Box { shape, dtype, .. } => {
                // The worker refuses these; a Box here means the two sides disagree.
                let detail = format!("a Box{shape:?} ({dtype}) action space");
                return Err(worker.protocol_error("make", detail));
            }
        };
        Ok(Self {
            obs_len: observation_space.flat_dim(),
            config,
            name,
            worker,
            versions,
            resolved: reply.resolved,
            observation_space,
            observation_shape,
            observation_dtype,
            action_space: Space::Discrete { n: num_actions },
            num_actions,
            action_start,
            max_episode_steps: reply.max_episode_steps,
            phase: Phase::NotStarted,
            elapsed_steps: 0,
            failure: None,
            step_in_flight: false,
        })
    }

    /// The configuration it was made from.
    pub fn config(&self) -> &GymnasiumConfig {
        &self.config
    }

    /// What Gymnasium made, e.g. `AirRaid-v0 with obs_type='ram'` for `AirRaid-ram-v0`.
    pub fn resolved(&self) -> &str {
        &self.resolved
    }

    /// The worker's Python, Gymnasium and NumPy versions.
    pub fn versions(&self) -> &str {
        &self.versions
    }

    /// The interpreter the worker runs on.
    pub fn python(&self) -> &str {
        self.worker.python()
    }

    /// The worker's process id.
    pub fn worker_pid(&self) -> u32 {
        self.worker.pid()
    }

    /// Gymnasium's observation shape before flattening (`[n]` for a one-hot `Discrete`).
    pub fn observation_shape(&self) -> &[usize] {
        &self.observation_shape
    }

    /// Gymnasium's observation dtype, e.g. `float32` or `uint8`.
    pub fn observation_dtype(&self) -> &str {
        &self.observation_dtype
    }

    /// The `start` of Gymnasium's `Discrete` action space, added to every action.
    pub fn action_start(&self) -> i64 {
        self.action_start
    }

    /// Like [`Env::reset`], but returns the error when the worker fails.
    pub fn try_reset(&mut self, seed: Option<u64>) -> Result<Obs, EnvError> {
        let mut obs = vec![0.0; self.obs_len];
        self.reset_into(seed, &mut obs)?;
        Ok(Obs::Vector(obs))
    }

    fn check_alive(&self) -> Result<(), EnvError> {
        match &self.failure {
            Some(failure) => Err(failure.clone()),
            None => Ok(()),
        }
    }

    /// Alive and with no step in flight: a request sent now would have its reply read as the
    /// sent step's (the worker answers in order).
    fn check_idle(&self, during: &str) -> Result<(), EnvError> {
        self.check_alive()?;
        if self.step_in_flight {
            return Err(EnvError::WorkerProtocol {
                env: self.name.clone(),
                during: during.to_string(),
                detail: "a step was sent and its outcome not yet received \
                         (Env::receive_step_into)"
                    .into(),
            });
        }
        Ok(())
    }

    /// Records `error`; a dead worker makes it permanent.
    fn record(&mut self, error: EnvError) -> EnvError {
        if matches!(
            error,
            EnvError::WorkerDied { .. }
                | EnvError::WorkerTimeout { .. }
                | EnvError::WorkerProtocol { .. }
        ) {
            self.failure = Some(error.clone());
        }
        error
    }

    /// Starts an episode after a reset or set_state whose reply was `outcome`: the worker's
    /// answer (`Err` for a failed call) holding the result of decoding the observation. On
    /// any failure no episode runs: the next step returns the error.
    fn start_episode(
        &mut self,
        during: &str,
        outcome: Result<Result<(), String>, EnvError>,
    ) -> Result<(), EnvError> {
        let result = match outcome {
            Ok(Ok(())) => Ok(()),
            Ok(Err(detail)) => Err(self.protocol_failure(during, detail)),
            Err(error) => Err(self.record(error)),
        };
        match &result {
            Ok(()) => self.phase = Phase::Running,
            Err(error) => self.phase = Phase::ResetFailed(error.clone()),
        }
        self.elapsed_steps = 0;
        result
    }

    /// Kills the worker for a malformed reply and records the error.
    fn protocol_failure(&mut self, during: &str, detail: String) -> EnvError {
        let error = self.worker.protocol_error(during, detail);
        self.record(error)
    }
}

/// Checks a reply's length and decodes its observation into `obs`, times `scale`
/// ([`GymnasiumConfig::obs_scale`]).
fn decode_obs(payload: &[u8], obs: &mut [f32], scale: Option<f32>) -> Result<(), String> {
    if payload.len() != 4 * obs.len() {
        return Err(format!(
            "observation of {} bytes; expected {} f32 values",
            payload.len(),
            obs.len()
        ));
    }
    protocol::decode_f32s(payload, obs);
    if let Some(scale) = scale {
        obs.iter_mut().for_each(|x| *x *= scale);
    }
    Ok(())
}

impl Env for GymnasiumEnv {
    /// The canonical name, `gymnasium:<id>[?key=value&...]`, which [`crate::make`] takes.
    fn id(&self) -> &str {
        &self.name
    }

    fn observation_space(&self) -> Space {
        self.observation_space.clone()
    }

    fn action_space(&self) -> Space {
        self.action_space.clone()
    }

    /// Gymnasium's `reset(seed=seed)`. Seeds go to Gymnasium's own generator (NumPy's
    /// PCG64), so they give Gymnasium's start states, not the native environments'. On
    /// failure returns zeros, and the next step returns the error; see
    /// [`GymnasiumEnv::try_reset`].
    fn reset(&mut self, seed: Option<u64>) -> Obs {
        let mut obs = vec![0.0; self.obs_len];
        if self.reset_into(seed, &mut obs).is_err() {
            // `reset_into` left the error for the next step.
            obs.fill(0.0);
        }
        Obs::Vector(obs)
    }

    fn step(&mut self, action: usize) -> Result<Step, EnvError> {
        let mut obs = vec![0.0; self.obs_len];
        let info = self.step_into(action, &mut obs)?;
        Ok(Step::from_flat(obs, info))
    }

    /// Resets, then writes `state` into `env.unwrapped.state` (classic control); the
    /// observation is the environment's own `_get_ob()`/`_get_obs()` where it has one, else
    /// the state cast to `f32`. Gymnasium's `TimeLimit` counter restarts at 0.
    fn set_state(&mut self, state: &[f64]) -> Result<Obs, EnvError> {
        self.check_idle("set_state")?;
        let timeout = self.config.step_timeout;
        let scale = self.config.obs_scale;
        let mut obs = vec![0.0; self.obs_len];
        let outcome = match self.worker.call("set_state", timeout, |buf| {
            protocol::set_state_request(buf, state)
        }) {
            Ok(reply) => Ok(decode_obs(reply, &mut obs, scale)),
            Err(error) => Err(error),
        };
        self.start_episode("set_state", outcome)?;
        Ok(Obs::Vector(obs))
    }

    fn max_episode_steps(&self) -> Option<usize> {
        self.max_episode_steps
    }

    fn step_into(&mut self, action: usize, obs: &mut [f32]) -> Result<StepInfo, EnvError> {
        check_obs_len(obs, self.obs_len)?;
        self.send_step(action)?;
        self.receive_step_into(obs)
    }

    /// Checks the step and writes it to the worker; the watchdog runs from here.
    fn send_step(&mut self, action: usize) -> Result<bool, EnvError> {
        self.check_idle("step")?;
        match &self.phase {
            Phase::Running => {}
            Phase::NotStarted => {
                return Err(EnvError::ResetRequired {
                    env: self.name.clone(),
                })
            }
            Phase::Finished(reason) => {
                return Err(EnvError::EpisodeFinished {
                    env: self.name.clone(),
                    reason: *reason,
                    steps: self.elapsed_steps,
                })
            }
            Phase::ResetFailed(error) => return Err(error.clone()),
        }
        if action >= self.num_actions {
            return Err(EnvError::InvalidAction {
                env: self.name.clone(),
                action,
                n: self.num_actions,
            });
        }
        let gym_action = self.action_start + action as i64;
        let timeout = self.config.step_timeout;
        if let Err(error) = self.worker.send_armed("step", timeout, |buf| {
            protocol::step_request(buf, gym_action)
        }) {
            return Err(self.record(error));
        }
        self.step_in_flight = true;
        Ok(true)
    }

    fn receive_step_into(&mut self, obs: &mut [f32]) -> Result<StepInfo, EnvError> {
        // A wrong buffer leaves the reply unread, for a later call with the right one.
        check_obs_len(obs, self.obs_len)?;
        self.check_alive()?;
        if !self.step_in_flight {
            return Err(EnvError::WorkerProtocol {
                env: self.name.clone(),
                during: "step".into(),
                detail: "a step's outcome was asked for, but no step was sent".into(),
            });
        }
        self.step_in_flight = false;
        let timeout = self.config.step_timeout;
        let scale = self.config.obs_scale;
        let decoded = match self.worker.receive_armed("step", timeout) {
            Ok(reply) => match reply.split_at_checked(protocol::STEP_HEAD_LEN) {
                Some((head, payload)) => decode_obs(payload, obs, scale).map(|()| {
                    let mut reward = [0; 8];
                    reward.copy_from_slice(&head[..8]);
                    (f64::from_le_bytes(reward), head[8])
                }),
                None => Err(format!("step reply of {} bytes", reply.len())),
            },
            Err(error) => return Err(self.record(error)),
        };
        let (reward, flags) = decoded.map_err(|detail| self.protocol_failure("step", detail))?;
        let terminated = flags & protocol::FLAG_TERMINATED != 0;
        let truncated = flags & protocol::FLAG_TRUNCATED != 0;
        self.elapsed_steps += 1;
        if terminated {
            self.phase = Phase::Finished(EpisodeEnd::Terminated);
        } else if truncated {
            self.phase = Phase::Finished(EpisodeEnd::Truncated);
        }
        Ok(StepInfo {
            reward,
            terminated,
            truncated,
        })
    }

    fn reset_into(&mut self, seed: Option<u64>, obs: &mut [f32]) -> Result<(), EnvError> {
        check_obs_len(obs, self.obs_len)?;
        self.check_idle("reset")?;
        let timeout = self.config.step_timeout;
        let scale = self.config.obs_scale;
        let outcome = match self
            .worker
            .call("reset", timeout, |buf| protocol::reset_request(buf, seed))
        {
            Ok(reply) => Ok(decode_obs(reply, obs, scale)),
            Err(error) => Err(error),
        };
        self.start_episode("reset", outcome)
    }
}

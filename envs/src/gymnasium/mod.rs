//! Every Gymnasium environment from Rust: [`GymnasiumEnv`] runs one in a Python worker process
//! (cargo feature `gymnasium`).
//!
//! # Naming an environment
//!
//! [`crate::make`] takes `gymnasium:<Gymnasium id>`, optionally followed by keyword arguments
//! for `gymnasium.make` in query-string form:
//!
//! ```text
//! gymnasium:CartPole-v1
//! gymnasium:ALE/AirRaid-v5?obs_type=ram
//! gymnasium:AirRaid-ram-v0                      (old Gym id: AirRaid-v0 with obs_type="ram")
//! gymnasium:FrozenLake-v1?is_slippery=false&map_name="4x4"
//! gymnasium:CartPole-v1?max_episode_steps=200&sutton_barto_reward=true
//! gymnasium:my_package.envs:MyEnv-v0             (Gymnasium imports `my_package.envs` first)
//! ```
//!
//! Values are typed as Python reads them: `true`/`false` (or `True`/`False`) are bools,
//! `none`/`None` is `None`, integers are `int`, other numbers (`0.25`, `1e-3`, `inf`) are
//! `float`, and anything else is a `str`. Quote a value (`"4x4"`, `'1'`) to force a string;
//! inside quotes `&` and `=` are plain characters. The id itself is case-sensitive, as in
//! Gymnasium; the `gymnasium:` prefix is not. [`GymnasiumConfig`] builds the same from Rust,
//! and [`GymnasiumEnv::id`] gives back the canonical name, which `make` takes again.
//!
//! Atari ids (`ALE/...`) need ale-py: the worker registers its environments on demand. Old
//! Gym's RAM ids (`<Game>-ram-v0`, `<Game>-ram-v4`, `<Game>-ramNoFrameskip-v4`), such as the
//! kickstarting paper's `AirRaid-ram-v0`, are no longer registered by ale-py ≥ 0.9; the worker
//! maps them to the same environment, `<Game>-v0` (etc.) with `obs_type="ram"`, which keeps
//! v0's sticky actions (0.25) and random frame skip (2 to 4). `ALE/AirRaid-v5?obs_type=ram` is
//! the modern form (frame skip 4, sticky actions 0.25).
//!
//! # Spaces
//!
//! - Observations: a `Box` of any shape and dtype is flattened in C order and cast to `f32`
//!   (Atari RAM: 128 values in 0..=255); a `Discrete(n, start)` observation becomes a one-hot
//!   vector of length `n` at index `obs - start`, which is what `observation_space().flat_dim()`
//!   promises and what `gymnasium.spaces.flatten` does. Other spaces are refused with
//!   [`EnvError::UnsupportedSpace`].
//! - Actions: `Discrete(n, start)` only. Rust's actions are always `0..n`; the bridge adds
//!   `start`, so action `a` is Gymnasium's `start + a`.
//!
//! # Python
//!
//! The interpreter is `PRIVRL_PYTHON` if set, else `.venv/bin/python` at the workspace root
//! if it exists (`scripts/test.sh` creates it), else `python3` from `PATH`
//! ([`default_python`]). It needs `gymnasium` ([`GYMNASIUM_REQUIREMENT`], the version tested)
//! and, for Atari, `ale-py` ([`ALE_PY_REQUIREMENT`]; the ROMs ship in its wheel). A missing
//! interpreter or package is an error that gives the exact `pip install` to run. The worker
//! script is compiled into the library, so it works from any working directory.
//!
//! # Protocol and failures
//!
//! Requests and replies are little-endian binary frames on the worker's stdin and stdout
//! (`u8 tag | u32 length | payload`; see `protocol.rs` and the worker's docstring): `make`,
//! `reset(seed)`, `step(action)` → `f64 reward | u8 flags | f32 observation`, and
//! `set_state`. Every read has a timeout ([`GymnasiumConfig::make_timeout`], 30 s, covers
//! start-up and `make`; [`GymnasiumConfig::step_timeout`], 10 s, each reset, step or
//! set_state). A worker that dies or misses a deadline gives [`EnvError::WorkerDied`] or
//! [`EnvError::WorkerTimeout`] with the tail of its stderr, never a hang; it is killed and
//! the environment stays failed (every later call returns the same error). An exception in
//! Gymnasium is [`EnvError::GymnasiumException`], and the worker lives on. Dropping the
//! environment kills its worker.
//!
//! [`Env::reset`] cannot return an error; when a reset fails, it returns an all-zero
//! observation and the next `step` returns the failure. [`GymnasiumEnv::try_reset`] and
//! [`Env::reset_into`] return it at once.
//!
//! # Vectorised
//!
//! `VecEnv::make("gymnasium:...", n)` works and runs one worker per environment;
//! [`GymnasiumConfig::build_vec`] does the same but starts the `n` workers concurrently, so
//! Python's start-up (about 0.3 s) is paid once rather than `n` times.
//!
//! ```no_run
//! use privrl_envs::{make, Env};
//!
//! # fn main() -> Result<(), privrl_envs::EnvError> {
//! let mut env = make("gymnasium:ALE/AirRaid-v5?obs_type=ram")?;
//! let obs = env.reset(Some(0));
//! assert_eq!(obs.flat_len(), 128);
//! let step = env.step(1)?;
//! # Ok(())
//! # }
//! ```

mod protocol;
mod worker;

use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Serialize;

use crate::env::check_obs_len;
use crate::{Env, EnvError, EpisodeEnd, Obs, Space, Step, StepInfo, VecEnv};
use protocol::{MakeReply, WireSpace};
use worker::{Launch, Worker};

/// The Gymnasium the bridge is tested with (and `scripts/test.sh` installs).
pub const GYMNASIUM_REQUIREMENT: &str = "gymnasium==1.4.0";
/// The ale-py the bridge is tested with, for the Atari environments; its wheel has the ROMs.
pub const ALE_PY_REQUIREMENT: &str = "ale-py==0.12.1";

/// The prefix that names a bridged environment in [`crate::make`].
pub const GYMNASIUM_PREFIX: &str = "gymnasium:";

/// Default limit on starting the worker and answering `make`.
pub const DEFAULT_MAKE_TIMEOUT: Duration = Duration::from_secs(30);
/// Default limit on answering one reset, step or set_state.
pub const DEFAULT_STEP_TIMEOUT: Duration = Duration::from_secs(10);

/// The Python interpreter the bridge starts: `PRIVRL_PYTHON` if set and non-empty, else
/// `.venv/bin/python` at the privrl workspace root if it exists, else `python3`.
pub fn default_python() -> PathBuf {
    if let Some(python) = std::env::var_os("PRIVRL_PYTHON").filter(|p| !p.is_empty()) {
        return PathBuf::from(python);
    }
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap_or(Path::new("."));
    let venv = if cfg!(windows) {
        workspace.join(".venv").join("Scripts").join("python.exe")
    } else {
        workspace.join(".venv").join("bin").join("python")
    };
    if venv.exists() {
        venv
    } else {
        PathBuf::from("python3")
    }
}

/// A keyword argument's value for `gymnasium.make`, typed as Python will see it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub enum KwargValue {
    /// `None`.
    None,
    /// `True` or `False`.
    Bool(bool),
    /// An `int`.
    Int(i64),
    /// A `float`.
    Float(f64),
    /// A `str`.
    Str(String),
}

impl KwargValue {
    /// Reads a value as written in a name (see the [module docs](self)): bools, `None`,
    /// integers and floats by their spelling, quoted or other text as a string.
    pub fn parse(text: &str) -> Self {
        let quoted = |q: char| text.len() >= 2 && text.starts_with(q) && text.ends_with(q);
        if quoted('"') || quoted('\'') {
            return KwargValue::Str(text[1..text.len() - 1].to_string());
        }
        match text {
            "true" | "True" => return KwargValue::Bool(true),
            "false" | "False" => return KwargValue::Bool(false),
            "none" | "None" => return KwargValue::None,
            _ => {}
        }
        if let Ok(int) = text.parse::<i64>() {
            return KwargValue::Int(int);
        }
        if let Ok(float) = text.parse::<f64>() {
            return KwargValue::Float(float);
        }
        KwargValue::Str(text.to_string())
    }
}

impl From<bool> for KwargValue {
    fn from(value: bool) -> Self {
        KwargValue::Bool(value)
    }
}

impl From<i64> for KwargValue {
    fn from(value: i64) -> Self {
        KwargValue::Int(value)
    }
}

impl From<f64> for KwargValue {
    fn from(value: f64) -> Self {
        KwargValue::Float(value)
    }
}

impl From<&str> for KwargValue {
    fn from(value: &str) -> Self {
        KwargValue::Str(value.to_string())
    }
}

impl From<String> for KwargValue {
    fn from(value: String) -> Self {
        KwargValue::Str(value)
    }
}

/// Writes the value so that [`KwargValue::parse`] reads it back: strings that would read as
/// something else, or that hold `&` or a quote, are quoted. (A string holding both kinds of
/// quote cannot be written in a name; build it with [`GymnasiumConfig::with_kwarg`].)
impl fmt::Display for KwargValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KwargValue::None => f.write_str("None"),
            KwargValue::Bool(b) => write!(f, "{b}"),
            KwargValue::Int(i) => write!(f, "{i}"),
            KwargValue::Float(x) => write!(f, "{x:?}"),
            KwargValue::Str(s) => {
                let plain = !s.contains(['&', '"', '\''])
                    && !s.is_empty()
                    && KwargValue::parse(s) == KwargValue::Str(s.clone());
                if plain {
                    f.write_str(s)
                } else if s.contains('"') {
                    write!(f, "'{s}'")
                } else {
                    write!(f, "\"{s}\"")
                }
            }
        }
    }
}

/// How to make a bridged Gymnasium environment: id, keyword arguments, interpreter and
/// timeouts. Build it with [`GymnasiumConfig::build`]:
///
/// ```no_run
/// use privrl_envs::gymnasium::GymnasiumConfig;
///
/// # fn main() -> Result<(), privrl_envs::EnvError> {
/// let env = GymnasiumConfig::new("ALE/AirRaid-v5")
///     .with_kwarg("obs_type", "ram")
///     .build()?;
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GymnasiumConfig {
    /// Gymnasium id, e.g. `CartPole-v1` or `ALE/AirRaid-v5`.
    pub id: String,
    /// Keyword arguments for `gymnasium.make`, in order.
    pub kwargs: Vec<(String, KwargValue)>,
    /// Interpreter; `None` for [`default_python`].
    pub python: Option<PathBuf>,
    /// Directories put in front of the worker's `PYTHONPATH`, e.g. for `my_envs:MyEnv-v0`.
    pub python_path: Vec<PathBuf>,
    /// Limit on starting the worker and making the environment (30 s).
    pub make_timeout: Duration,
    /// Limit on each reset, step and set_state (10 s).
    pub step_timeout: Duration,
}

impl GymnasiumConfig {
    /// The environment `id` with no keyword arguments and default interpreter and timeouts.
    pub fn new(id: impl Into<String>) -> Self {
        Self {
            id: id.into(),
            kwargs: Vec::new(),
            python: None,
            python_path: Vec::new(),
            make_timeout: DEFAULT_MAKE_TIMEOUT,
            step_timeout: DEFAULT_STEP_TIMEOUT,
        }
    }

    /// Reads a name such as `gymnasium:ALE/AirRaid-v5?obs_type=ram` (the prefix is optional
    /// here); see the [module docs](self) for the syntax.
    pub fn parse(name: &str) -> Result<Self, EnvError> {
        let invalid = |reason: String| EnvError::InvalidGymnasiumName {
            name: name.to_string(),
            reason,
        };
        let trimmed = name.trim();
        let body = strip_prefix(trimmed).unwrap_or(trimmed);
        let (id, query) = match body.split_once('?') {
            Some((id, query)) => (id, Some(query)),
            None => (body, None),
        };
        if id.is_empty() {
            return Err(invalid("the Gymnasium id is empty".into()));
        }
        if id.chars().any(char::is_whitespace) {
            return Err(invalid(format!(
                "the Gymnasium id `{id}` contains whitespace"
            )));
        }
        let mut config = Self::new(id);
        let pairs = match query.map(split_outside_quotes) {
            None => Vec::new(),
            Some(Some(pairs)) => pairs,
            Some(None) => {
                return Err(invalid(
                    "a quote in the keyword arguments is not closed".into(),
                ))
            }
        };
        for pair in pairs {
            let Some((key, value)) = pair.split_once('=') else {
                return Err(invalid(format!(
                    "`{pair}` is not a key=value pair (an empty `?` or `&&` is not allowed)"
                )));
            };
            let is_identifier = key
                .chars()
                .next()
                .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
            if !is_identifier {
                return Err(invalid(format!(
                    "keyword `{key}` is not a Python identifier"
                )));
            }
            if config.kwargs.iter().any(|(k, _)| k == key) {
                return Err(invalid(format!("keyword `{key}` is given twice")));
            }
            config
                .kwargs
                .push((key.to_string(), KwargValue::parse(value)));
        }
        Ok(config)
    }

    /// The canonical name, `gymnasium:<id>[?key=value&...]`, which [`crate::make`] and
    /// [`GymnasiumConfig::parse`] read back to the same id and keyword arguments.
    pub fn name(&self) -> String {
        let mut name = format!("{GYMNASIUM_PREFIX}{}", self.id);
        for (i, (key, value)) in self.kwargs.iter().enumerate() {
            name.push(if i == 0 { '?' } else { '&' });
            name.push_str(&format!("{key}={value}"));
        }
        name
    }

    /// Adds a keyword argument for `gymnasium.make` (replacing one of the same name).
    pub fn with_kwarg(mut self, key: impl Into<String>, value: impl Into<KwargValue>) -> Self {
        let (key, value) = (key.into(), value.into());
        match self.kwargs.iter_mut().find(|(k, _)| *k == key) {
            Some(slot) => slot.1 = value,
            None => self.kwargs.push((key, value)),
        }
        self
    }

    /// Uses this interpreter instead of [`default_python`].
    pub fn with_python(mut self, python: impl Into<PathBuf>) -> Self {
        self.python = Some(python.into());
        self
    }

    /// Puts a directory in front of the worker's `PYTHONPATH`.
    pub fn with_python_path(mut self, dir: impl Into<PathBuf>) -> Self {
        self.python_path.push(dir.into());
        self
    }

    /// Sets the limit on start-up plus `make`.
    pub fn with_make_timeout(mut self, timeout: Duration) -> Self {
        self.make_timeout = timeout;
        self
    }

    /// Sets the limit on each reset, step and set_state.
    pub fn with_step_timeout(mut self, timeout: Duration) -> Self {
        self.step_timeout = timeout;
        self
    }

    fn validate(&self) -> Result<(), EnvError> {
        for (name, timeout) in [
            ("make_timeout", self.make_timeout),
            ("step_timeout", self.step_timeout),
        ] {
            if timeout.is_zero() {
                return Err(EnvError::invalid_parameter(name, 0.0, "> 0 seconds"));
            }
        }
        Ok(())
    }

    /// Starts a worker and makes the environment in it. Errors: a missing interpreter or
    /// package ([`EnvError::PythonUnavailable`], [`EnvError::PythonPackageMissing`], each
    /// with the command that fixes it), an exception from `gymnasium.make` (unknown id, bad
    /// keyword argument), an unsupported space, or a worker that dies or times out.
    pub fn build(&self) -> Result<GymnasiumEnv, EnvError> {
        self.validate()?;
        Starting::spawn(self)?.finish()
    }

    /// `num_envs` environments, one worker each. All workers start before any is waited for,
    /// so Python's start-up overlaps.
    pub fn build_many(&self, num_envs: usize) -> Result<Vec<GymnasiumEnv>, EnvError> {
        self.validate()?;
        let starting = (0..num_envs)
            .map(|_| Starting::spawn(self))
            .collect::<Result<Vec<_>, _>>()?;
        starting.into_iter().map(Starting::finish).collect()
    }

    /// A [`VecEnv`] of `num_envs` bridged environments, one worker each, started concurrently
    /// (see [`GymnasiumConfig::build_many`]).
    pub fn build_vec(&self, num_envs: usize) -> Result<VecEnv<GymnasiumEnv>, EnvError> {
        VecEnv::new(self.build_many(num_envs)?)
    }
}

/// `name` without a case-insensitive `gymnasium:` prefix, if it has one.
pub(crate) fn strip_prefix(name: &str) -> Option<&str> {
    let prefix = name.get(..GYMNASIUM_PREFIX.len())?;
    prefix
        .eq_ignore_ascii_case(GYMNASIUM_PREFIX)
        .then(|| &name[GYMNASIUM_PREFIX.len()..])
}

/// Splits a query at `&`s that are not inside quotes; `None` if a quote is not closed.
fn split_outside_quotes(query: &str) -> Option<Vec<&str>> {
    let mut parts = Vec::new();
    let (mut start, mut quote) = (0, None);
    for (i, c) in query.char_indices() {
        match (quote, c) {
            (None, '"' | '\'') => quote = Some(c),
            (Some(q), c) if c == q => quote = None,
            (None, '&') => {
                parts.push(&query[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&query[start..]);
    quote.is_none().then_some(parts)
}

/// A worker that has been started and sent `make`, not yet answered.
struct Starting {
    config: GymnasiumConfig,
    name: String,
    worker: Worker,
}

impl Starting {
    fn spawn(config: &GymnasiumConfig) -> Result<Self, EnvError> {
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

    fn finish(self) -> Result<GymnasiumEnv, EnvError> {
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
/// [module docs](self).
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
            } => (Space::Box { low, high }, shape, dtype),
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

/// Checks a reply's length and decodes its observation into `obs`.
fn decode_obs(payload: &[u8], obs: &mut [f32]) -> Result<(), String> {
    if payload.len() != 4 * obs.len() {
        return Err(format!(
            "observation of {} bytes; expected {} f32 values",
            payload.len(),
            obs.len()
        ));
    }
    protocol::decode_f32s(payload, obs);
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
        Ok(Step {
            obs: Obs::Vector(obs),
            reward: info.reward,
            terminated: info.terminated,
            truncated: info.truncated,
        })
    }

    /// Resets, then writes `state` into `env.unwrapped.state` (classic control); the
    /// observation is the environment's own `_get_ob()`/`_get_obs()` where it has one, else
    /// the state cast to `f32`. Gymnasium's `TimeLimit` counter restarts at 0.
    fn set_state(&mut self, state: &[f64]) -> Result<Obs, EnvError> {
        self.check_alive()?;
        let timeout = self.config.step_timeout;
        let mut obs = vec![0.0; self.obs_len];
        let outcome = match self.worker.call("set_state", timeout, |buf| {
            protocol::set_state_request(buf, state)
        }) {
            Ok(reply) => Ok(decode_obs(reply, &mut obs)),
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
        self.check_alive()?;
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
        let decoded = match self.worker.call("step", timeout, |buf| {
            protocol::step_request(buf, gym_action)
        }) {
            Ok(reply) => match reply.split_at_checked(protocol::STEP_HEAD_LEN) {
                Some((head, payload)) => decode_obs(payload, obs).map(|()| {
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
        self.check_alive()?;
        let timeout = self.config.step_timeout;
        let outcome = match self
            .worker
            .call("reset", timeout, |buf| protocol::reset_request(buf, seed))
        {
            Ok(reply) => Ok(decode_obs(reply, obs)),
            Err(error) => Err(error),
        };
        self.start_episode("reset", outcome)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_into_id_and_typed_kwargs() {
        let config =
            GymnasiumConfig::parse("Gymnasium:ALE/AirRaid-v5?obs_type=ram&frameskip=4").unwrap();
        assert_eq!(config.id, "ALE/AirRaid-v5");
        assert_eq!(
            config.kwargs,
            [
                ("obs_type".to_string(), KwargValue::Str("ram".into())),
                ("frameskip".to_string(), KwargValue::Int(4)),
            ]
        );
        assert_eq!(
            config.name(),
            "gymnasium:ALE/AirRaid-v5?obs_type=ram&frameskip=4"
        );
        let config = GymnasiumConfig::parse("my.mod:Env-v0").unwrap();
        assert_eq!(config.id, "my.mod:Env-v0");
        assert!(config.kwargs.is_empty());
    }

    #[test]
    fn kwarg_values_are_typed_like_python() {
        for (text, value) in [
            ("true", KwargValue::Bool(true)),
            ("False", KwargValue::Bool(false)),
            ("None", KwargValue::None),
            ("-3", KwargValue::Int(-3)),
            ("0.25", KwargValue::Float(0.25)),
            ("1e-3", KwargValue::Float(1e-3)),
            ("-inf", KwargValue::Float(f64::NEG_INFINITY)),
            ("ram", KwargValue::Str("ram".into())),
            ("\"4\"", KwargValue::Str("4".into())),
            ("'a&b=c'", KwargValue::Str("a&b=c".into())),
            ("", KwargValue::Str(String::new())),
        ] {
            assert_eq!(KwargValue::parse(text), value, "{text}");
        }
    }

    #[test]
    fn canonical_names_read_back_to_the_same_config() {
        let config = GymnasiumConfig::new("FrozenLake-v1")
            .with_kwarg("is_slippery", false)
            .with_kwarg("map_name", "4x4")
            .with_kwarg("note", "a&b")
            .with_kwarg("digits", "17")
            .with_kwarg("quote", "say \"hi\"")
            .with_kwarg("empty", "")
            .with_kwarg("p", 0.5)
            .with_kwarg("n", 3i64)
            .with_kwarg("p", 1.0);
        let name = config.name();
        assert_eq!(
            name,
            "gymnasium:FrozenLake-v1?is_slippery=false&map_name=4x4&note=\"a&b\"&digits=\"17\"\
             &quote='say \"hi\"'&empty=\"\"&p=1.0&n=3"
        );
        assert_eq!(GymnasiumConfig::parse(&name).unwrap(), config);
    }

    #[test]
    fn bad_names_say_what_is_wrong() {
        for (name, needle) in [
            ("gymnasium:", "id is empty"),
            ("gymnasium:?a=1", "id is empty"),
            ("gymnasium:Cart Pole", "whitespace"),
            ("gymnasium:CartPole-v1?", "not a key=value pair"),
            ("gymnasium:CartPole-v1?a=1&&b=2", "not a key=value pair"),
            ("gymnasium:CartPole-v1?1a=1", "not a Python identifier"),
            ("gymnasium:CartPole-v1?a=1&a=2", "given twice"),
            ("gymnasium:CartPole-v1?a=it's", "not closed"),
        ] {
            let err = GymnasiumConfig::parse(name).unwrap_err();
            let message = err.to_string();
            assert!(
                matches!(err, EnvError::InvalidGymnasiumName { .. }),
                "{name}: {err:?}"
            );
            assert!(message.contains(needle), "{name}: {message}");
            assert!(message.contains("gymnasium:ALE/AirRaid-v5?obs_type=ram"));
        }
    }

    #[test]
    fn zero_timeouts_are_refused() {
        let err = GymnasiumConfig::new("CartPole-v1")
            .with_step_timeout(Duration::ZERO)
            .build()
            .unwrap_err();
        assert!(err.to_string().contains("step_timeout"), "{err}");
    }

    #[test]
    fn a_missing_interpreter_is_a_clear_error() {
        let err = GymnasiumConfig::new("CartPole-v1")
            .with_python("/nonexistent/privrl/python3")
            .build()
            .unwrap_err();
        assert!(matches!(err, EnvError::PythonUnavailable { .. }), "{err:?}");
        let message = err.to_string();
        assert!(message.contains("/nonexistent/privrl/python3"), "{message}");
        assert!(
            message.contains("pip install gymnasium==1.4.0"),
            "{message}"
        );
        assert!(message.contains("PRIVRL_PYTHON"), "{message}");
    }
}

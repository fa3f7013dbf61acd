//! Naming a bridged environment: the Gymnasium id and typed keyword arguments for
//! `gymnasium.make`, read from and written to `gymnasium:<id>?key=value&...` names, with the
//! interpreter and timeouts.

use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use serde::Serialize;

use super::env::Starting;
use super::{GymnasiumEnv, DEFAULT_MAKE_TIMEOUT, DEFAULT_STEP_TIMEOUT, GYMNASIUM_PREFIX};
use crate::{EnvError, VecEnv};

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
    /// Reads a value as written in a name (see the [module docs](super)): bools, `None`,
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
    /// Interpreter; `None` for [`default_python`](crate::python::default_python).
    pub python: Option<PathBuf>,
    /// Directories put in front of the worker's `PYTHONPATH`, e.g. for `my_envs:MyEnv-v0`.
    pub python_path: Vec<PathBuf>,
    /// Limit on starting the worker and making the environment (30 s).
    pub make_timeout: Duration,
    /// Limit on each reset, step and set_state (10 s).
    pub step_timeout: Duration,
    /// Factor applied to every observation value on the Rust side (and to the Box bounds), e.g.
    /// 1/255 for Atari RAM bytes, so that a network sees inputs in [0, 1] as it would after
    /// the usual preprocessing. Written `#obs_scale=1/255` after the keyword arguments in a
    /// name; `None` keeps Gymnasium's values.
    pub obs_scale: Option<f32>,
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
            obs_scale: None,
        }
    }

    /// Reads a name such as `gymnasium:ALE/AirRaid-v5?obs_type=ram` (the prefix is optional
    /// here); see the [module docs](super) for the syntax.
    pub fn parse(name: &str) -> Result<Self, EnvError> {
        let invalid = |reason: String| EnvError::InvalidGymnasiumName {
            name: name.to_string(),
            reason,
        };
        let trimmed = name.trim();
        let body = strip_prefix(trimmed).unwrap_or(trimmed);
        let (body, options) = match split_options(body) {
            Some((body, options)) => (body, Some(options)),
            None => (body, None),
        };
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
        if let Some(options) = options {
            for option in options.split('&') {
                match option.split_once('=') {
                    Some(("obs_scale", value)) => {
                        let scale = parse_scale(value).ok_or_else(|| {
                            invalid(format!(
                                "obs_scale `{value}` is not a positive finite number or a \
                                 fraction such as 1/255"
                            ))
                        })?;
                        config.obs_scale = Some(scale);
                    }
                    _ => {
                        return Err(invalid(format!(
                            "unknown option `{option}` after `#` (known: obs_scale=<factor>)"
                        )))
                    }
                }
            }
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
        if let Some(scale) = self.obs_scale {
            name.push_str(&format!("#obs_scale={scale:?}"));
        }
        name
    }

    /// Multiplies every observation value by `scale` (see [`GymnasiumConfig::obs_scale`]).
    pub fn with_obs_scale(mut self, scale: f32) -> Self {
        self.obs_scale = Some(scale);
        self
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

    /// Uses this interpreter instead of [`default_python`](crate::python::default_python).
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
        if let Some(scale) = self.obs_scale {
            if !(scale.is_finite() && scale > 0.0) {
                return Err(EnvError::invalid_parameter(
                    "obs_scale",
                    f64::from(scale),
                    "finite and > 0",
                ));
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

/// Splits `body` at its first `#` outside quotes into the Gymnasium part and privrl's own
/// options; `None` when there is no such `#`.
fn split_options(body: &str) -> Option<(&str, &str)> {
    let mut quote = None;
    for (i, c) in body.char_indices() {
        match (quote, c) {
            (None, '"' | '\'') => quote = Some(c),
            (Some(q), c) if c == q => quote = None,
            (None, '#') => return Some((&body[..i], &body[i + 1..])),
            _ => {}
        }
    }
    None
}

/// A positive finite factor written as a number (`0.5`) or a fraction (`1/255`).
fn parse_scale(text: &str) -> Option<f32> {
    let value = match text.split_once('/') {
        Some((num, den)) => {
            (num.trim().parse::<f64>().ok()? / den.trim().parse::<f64>().ok()?) as f32
        }
        // Parsed as f32 directly, so that the canonical name's `{:?}` reads back exactly.
        None => text.trim().parse::<f32>().ok()?,
    };
    (value.is_finite() && value > 0.0).then_some(value)
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
    fn an_observation_scale_follows_a_hash_and_reads_back() {
        let config =
            GymnasiumConfig::parse("gymnasium:ALE/AirRaid-v5?obs_type=ram#obs_scale=1/255")
                .unwrap();
        assert_eq!(config.id, "ALE/AirRaid-v5");
        assert_eq!(config.kwargs.len(), 1);
        assert_eq!(config.obs_scale, Some((1.0f64 / 255.0) as f32));
        assert_eq!(GymnasiumConfig::parse(&config.name()).unwrap(), config);
        let plain = GymnasiumConfig::parse("CartPole-v1#obs_scale=0.5").unwrap();
        assert_eq!((plain.kwargs.len(), plain.obs_scale), (0, Some(0.5)));
        // A `#` inside a quoted value is part of the value.
        let quoted = GymnasiumConfig::parse("X-v0?tag=\"a#b\"").unwrap();
        assert_eq!(quoted.kwargs[0].1, KwargValue::Str("a#b".into()));
        assert_eq!(quoted.obs_scale, None);
        for (name, needle) in [
            ("X-v0#obs_scale=0", "obs_scale `0`"),
            ("X-v0#obs_scale=-1", "obs_scale `-1`"),
            ("X-v0#obs_scale=1/0", "obs_scale `1/0`"),
            ("X-v0#obs_scale=nan", "obs_scale `nan`"),
            ("X-v0#frame_stack=4", "unknown option `frame_stack=4`"),
        ] {
            let err = GymnasiumConfig::parse(name).unwrap_err().to_string();
            assert!(err.contains(needle), "{name}: {err}");
        }
        let invalid = GymnasiumConfig::new("X-v0").with_obs_scale(f32::INFINITY);
        assert!(invalid.validate().is_err());
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

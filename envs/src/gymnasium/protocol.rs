//! The binary protocol between [`super::GymnasiumEnv`] and its Python worker
//! (`envs/python/privrl_gym_worker.py`, whose docstring describes the same format).
//!
//! Every frame, in both directions, is `u8 tag | u32 length | payload`, little-endian; strings
//! are `u32 length | UTF-8`. Requests: `M` make, `R` reset, `S` step, `T` set_state (and `Q`,
//! quit, which Rust does not send: it kills the worker on drop). Replies: `K` (ok) or `E` (error: `u8 kind | str detail | str message`). The worker sends one
//! unasked `K` hello (`u32 version | str versions`) when it starts.

use super::KwargValue;

/// Bumped whenever a frame changes; the worker reports its own in the hello frame.
pub(crate) const PROTOCOL_VERSION: u32 = 1;

/// Length of a frame header: tag and payload length.
pub(crate) const HEADER_LEN: usize = 5;

pub(crate) const MAKE: u8 = b'M';
pub(crate) const RESET: u8 = b'R';
pub(crate) const STEP: u8 = b'S';
pub(crate) const SET_STATE: u8 = b'T';
pub(crate) const OK: u8 = b'K';
pub(crate) const ERROR: u8 = b'E';

/// Error kinds of an `E` frame.
pub(crate) const KIND_EXCEPTION: u8 = 1;
pub(crate) const KIND_MISSING_MODULE: u8 = 2;
pub(crate) const KIND_UNSUPPORTED_SPACE: u8 = 3;

/// Start of a step reply's observation: `f64 reward | u8 flags`.
pub(crate) const STEP_HEAD_LEN: usize = 9;
pub(crate) const FLAG_TERMINATED: u8 = 1;
pub(crate) const FLAG_TRUNCATED: u8 = 2;

/// Starts a request frame in `buf` (cleared first); [`finish`] fills in the length.
fn begin(buf: &mut Vec<u8>, tag: u8) {
    buf.clear();
    buf.push(tag);
    buf.extend_from_slice(&[0; 4]);
}

fn finish(buf: &mut [u8]) {
    let len = (buf.len() - HEADER_LEN) as u32;
    buf[1..HEADER_LEN].copy_from_slice(&len.to_le_bytes());
}

fn put_str(buf: &mut Vec<u8>, text: &str) {
    buf.extend_from_slice(&(text.len() as u32).to_le_bytes());
    buf.extend_from_slice(text.as_bytes());
}

/// `M`: the Gymnasium id and its keyword arguments.
pub(crate) fn make_request(buf: &mut Vec<u8>, id: &str, kwargs: &[(String, KwargValue)]) {
    begin(buf, MAKE);
    put_str(buf, id);
    buf.extend_from_slice(&(kwargs.len() as u32).to_le_bytes());
    for (key, value) in kwargs {
        put_str(buf, key);
        match value {
            KwargValue::None => buf.push(0),
            KwargValue::Bool(b) => buf.extend_from_slice(&[1, u8::from(*b)]),
            KwargValue::Int(i) => {
                buf.push(2);
                buf.extend_from_slice(&i.to_le_bytes());
            }
            KwargValue::Float(f) => {
                buf.push(3);
                buf.extend_from_slice(&f.to_le_bytes());
            }
            KwargValue::Str(s) => {
                buf.push(4);
                put_str(buf, s);
            }
        }
    }
    finish(buf);
}

/// `R`: reset, reseeding when `seed` is given.
pub(crate) fn reset_request(buf: &mut Vec<u8>, seed: Option<u64>) {
    begin(buf, RESET);
    buf.push(u8::from(seed.is_some()));
    buf.extend_from_slice(&seed.unwrap_or(0).to_le_bytes());
    finish(buf);
}

/// `S`: one step with Gymnasium's action (the space's `start` already added).
pub(crate) fn step_request(buf: &mut Vec<u8>, action: i64) {
    begin(buf, STEP);
    buf.extend_from_slice(&action.to_le_bytes());
    finish(buf);
}

/// `T`: a physical state for `env.unwrapped.state`.
pub(crate) fn set_state_request(buf: &mut Vec<u8>, state: &[f64]) {
    begin(buf, SET_STATE);
    buf.extend_from_slice(&(state.len() as u32).to_le_bytes());
    for value in state {
        buf.extend_from_slice(&value.to_le_bytes());
    }
    finish(buf);
}

/// Reads a reply payload field by field; every read checks the length, so a short or garbled
/// frame is an error, never a panic.
pub(crate) struct Cursor<'a> {
    data: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    pub(crate) fn new(data: &'a [u8]) -> Self {
        Self { data, pos: 0 }
    }

    fn take<const N: usize>(&mut self) -> Result<[u8; N], String> {
        let bytes = self
            .data
            .get(self.pos..self.pos + N)
            .ok_or_else(|| format!("reply too short: {} bytes", self.data.len()))?;
        self.pos += N;
        let mut out = [0; N];
        out.copy_from_slice(bytes);
        Ok(out)
    }

    pub(crate) fn u8(&mut self) -> Result<u8, String> {
        Ok(self.take::<1>()?[0])
    }

    pub(crate) fn u32(&mut self) -> Result<u32, String> {
        self.take().map(u32::from_le_bytes)
    }

    pub(crate) fn i64(&mut self) -> Result<i64, String> {
        self.take().map(i64::from_le_bytes)
    }

    pub(crate) fn string(&mut self) -> Result<String, String> {
        let len = self.u32()? as usize;
        let bytes = self
            .data
            .get(self.pos..self.pos + len)
            .ok_or_else(|| format!("string of {len} bytes runs past the reply"))?;
        self.pos += len;
        Ok(String::from_utf8_lossy(bytes).into_owned())
    }

    pub(crate) fn f32s(&mut self, count: usize) -> Result<Vec<f32>, String> {
        let bytes = self
            .data
            .get(self.pos..self.pos + 4 * count)
            .ok_or_else(|| format!("{count} f32 values run past the reply"))?;
        self.pos += 4 * count;
        let mut out = vec![0.0; count];
        decode_f32s(bytes, &mut out);
        Ok(out)
    }

    /// Errors unless every byte was read.
    pub(crate) fn end(&self) -> Result<(), String> {
        if self.pos == self.data.len() {
            Ok(())
        } else {
            Err(format!(
                "{} unexpected bytes at the end of the reply",
                self.data.len() - self.pos
            ))
        }
    }
}

/// Decodes little-endian f32 values; `bytes` has `4 * out.len()` bytes.
pub(crate) fn decode_f32s(bytes: &[u8], out: &mut [f32]) {
    for (value, chunk) in out.iter_mut().zip(bytes.chunks_exact(4)) {
        *value = f32::from_le_bytes([chunk[0], chunk[1], chunk[2], chunk[3]]);
    }
}

/// A Gymnasium space as the worker describes it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum WireSpace {
    /// `Discrete(n, start)`.
    Discrete { n: i64, start: i64 },
    /// `Box(low, high, shape, dtype)`, bounds flattened in C order.
    Box {
        shape: Vec<usize>,
        dtype: String,
        low: Vec<f32>,
        high: Vec<f32>,
    },
}

impl WireSpace {
    fn read(cursor: &mut Cursor<'_>) -> Result<Self, String> {
        match cursor.u8()? {
            0 => Ok(WireSpace::Discrete {
                n: cursor.i64()?,
                start: cursor.i64()?,
            }),
            1 => {
                let ndim = cursor.u32()? as usize;
                let shape = (0..ndim)
                    .map(|_| cursor.u32().map(|d| d as usize))
                    .collect::<Result<Vec<_>, _>>()?;
                let count = shape.iter().product();
                Ok(WireSpace::Box {
                    dtype: cursor.string()?,
                    low: cursor.f32s(count)?,
                    high: cursor.f32s(count)?,
                    shape,
                })
            }
            other => Err(format!("unknown space kind {other}")),
        }
    }
}

/// The worker's answer to `make`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct MakeReply {
    /// The id Gymnasium made, with its keyword arguments, as the worker describes it.
    pub(crate) resolved: String,
    /// `env.spec.max_episode_steps`.
    pub(crate) max_episode_steps: Option<usize>,
    pub(crate) observation: WireSpace,
    pub(crate) action: WireSpace,
}

impl MakeReply {
    pub(crate) fn parse(payload: &[u8]) -> Result<Self, String> {
        let mut cursor = Cursor::new(payload);
        let resolved = cursor.string()?;
        let max_episode_steps = usize::try_from(cursor.i64()?).ok();
        let observation = WireSpace::read(&mut cursor)?;
        let action = WireSpace::read(&mut cursor)?;
        cursor.end()?;
        Ok(Self {
            resolved,
            max_episode_steps,
            observation,
            action,
        })
    }
}

/// The worker's hello: its protocol version and the versions of Python, Gymnasium and NumPy.
pub(crate) fn parse_hello(payload: &[u8]) -> Result<(u32, String), String> {
    let mut cursor = Cursor::new(payload);
    let version = cursor.u32()?;
    let versions = cursor.string()?;
    cursor.end()?;
    Ok((version, versions))
}

/// An `E` frame.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct WorkerFailure {
    pub(crate) kind: u8,
    pub(crate) detail: String,
    pub(crate) message: String,
}

impl WorkerFailure {
    pub(crate) fn parse(payload: &[u8]) -> Result<Self, String> {
        let mut cursor = Cursor::new(payload);
        let failure = Self {
            kind: cursor.u8()?,
            detail: cursor.string()?,
            message: cursor.string()?,
        };
        cursor.end()?;
        Ok(failure)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_carry_their_length() {
        let mut buf = Vec::new();
        step_request(&mut buf, 3);
        assert_eq!(buf, [b'S', 8, 0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0]);
        reset_request(&mut buf, None);
        assert_eq!(buf.len(), HEADER_LEN + 9);
        assert_eq!(&buf[..HEADER_LEN], &[b'R', 9, 0, 0, 0]);
        set_state_request(&mut buf, &[1.5]);
        assert_eq!(&buf[HEADER_LEN..HEADER_LEN + 4], &1u32.to_le_bytes());
        assert_eq!(&buf[HEADER_LEN + 4..], &1.5f64.to_le_bytes());
    }

    #[test]
    fn make_request_encodes_every_value_type() {
        let mut buf = Vec::new();
        let kwargs = vec![
            ("a".to_string(), KwargValue::None),
            ("b".to_string(), KwargValue::Bool(true)),
            ("c".to_string(), KwargValue::Int(-2)),
            ("d".to_string(), KwargValue::Float(0.5)),
            ("e".to_string(), KwargValue::Str("ram".into())),
        ];
        make_request(&mut buf, "X-v0", &kwargs);
        let mut expected = vec![b'M', 0, 0, 0, 0];
        expected.extend_from_slice(&4u32.to_le_bytes());
        expected.extend_from_slice(b"X-v0");
        expected.extend_from_slice(&5u32.to_le_bytes());
        for (key, value) in [
            ("a", vec![0]),
            ("b", vec![1, 1]),
            ("c", [vec![2], (-2i64).to_le_bytes().to_vec()].concat()),
            ("d", [vec![3], 0.5f64.to_le_bytes().to_vec()].concat()),
            (
                "e",
                [vec![4], 3u32.to_le_bytes().to_vec(), b"ram".to_vec()].concat(),
            ),
        ] {
            expected.extend_from_slice(&1u32.to_le_bytes());
            expected.extend_from_slice(key.as_bytes());
            expected.extend_from_slice(&value);
        }
        let len = (expected.len() - HEADER_LEN) as u32;
        expected[1..5].copy_from_slice(&len.to_le_bytes());
        assert_eq!(buf, expected);
    }

    #[test]
    fn make_reply_round_trip_and_short_replies_are_errors() {
        let mut payload = Vec::new();
        put_str(&mut payload, "CartPole-v1");
        payload.extend_from_slice(&500i64.to_le_bytes());
        payload.push(1);
        payload.extend_from_slice(&1u32.to_le_bytes());
        payload.extend_from_slice(&2u32.to_le_bytes());
        put_str(&mut payload, "float32");
        for v in [-1.0f32, -2.0, 1.0, 2.0] {
            payload.extend_from_slice(&v.to_le_bytes());
        }
        payload.push(0);
        payload.extend_from_slice(&2i64.to_le_bytes());
        payload.extend_from_slice(&0i64.to_le_bytes());
        let reply = MakeReply::parse(&payload).unwrap();
        assert_eq!(reply.max_episode_steps, Some(500));
        assert_eq!(
            reply.observation,
            WireSpace::Box {
                shape: vec![2],
                dtype: "float32".into(),
                low: vec![-1.0, -2.0],
                high: vec![1.0, 2.0]
            }
        );
        assert_eq!(reply.action, WireSpace::Discrete { n: 2, start: 0 });
        for cut in 0..payload.len() {
            assert!(MakeReply::parse(&payload[..cut]).is_err(), "cut at {cut}");
        }
        payload.push(0);
        assert!(MakeReply::parse(&payload).is_err());
    }
}

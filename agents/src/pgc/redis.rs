//! [`RedisTransport`]: PGC across processes and machines over Redis Streams.
//!
//! Keys, under a run prefix `P`:
//!
//! - `P:submissions`, a stream: agents `XADD` one entry per noisy gradient (field `s`, the
//!   [`Submission`] as JSON); the aggregator reads it through the consumer group `aggregator`
//!   (`XREADGROUP`) and `XACK`s an entry only after applying it and saving its checkpoint.
//! - `P:parameters`: the latest θ with its version, as JSON ([`Parameters`]).
//! - `P:closed`: set by the aggregator when training is over.
//!
//! After a restart the aggregator first re-reads its own pending entries (delivered, never
//! acknowledged), then new ones, so an entry is lost only if Redis loses it.

use std::sync::Mutex;
use std::time::Duration;

use redis::streams::StreamReadReply;
use redis::{Client, Connection, RedisError};

use super::{Delivery, Parameters, PgcError, Submission, Transport};

const GROUP: &str = "aggregator";
const FIELD: &str = "s";

fn redis_error(error: RedisError) -> PgcError {
    PgcError::Transport {
        transport: "redis",
        message: error.to_string(),
    }
}

fn json_error(error: serde_json::Error) -> PgcError {
    PgcError::Transport {
        transport: "redis",
        message: format!("malformed message: {error}"),
    }
}

/// A connection to one PGC run on a Redis server (5.0 or newer, for streams).
pub struct RedisTransport {
    /// For everything but the blocking read.
    connection: Mutex<Connection>,
    /// For `XREADGROUP ... BLOCK`, so that a waiting aggregator does not hold up the rest.
    reader: Mutex<Connection>,
    stream: String,
    parameters_key: String,
    closed_key: String,
    consumer: String,
    /// While re-reading pending entries after a restart: the last id seen (`0` at first);
    /// `None` once they are exhausted and only new entries are read (`>`).
    pending_cursor: Mutex<Option<String>>,
}

impl RedisTransport {
    /// Connects to `url` (e.g. `redis://127.0.0.1:6390/`) for the run under `prefix`. The
    /// aggregator's consumer name is fixed, so that a restarted aggregator finds the entries
    /// that its predecessor received but did not acknowledge.
    pub fn connect(url: &str, prefix: &str) -> Result<Self, PgcError> {
        if prefix.is_empty() {
            return Err(PgcError::InvalidParameter {
                name: "redis prefix",
                value: prefix.to_string(),
                expected: "a non-empty key prefix",
            });
        }
        let client = Client::open(url).map_err(redis_error)?;
        let timeout = Duration::from_secs(5);
        let connection = client
            .get_connection_with_timeout(timeout)
            .map_err(redis_error)?;
        let reader = client
            .get_connection_with_timeout(timeout)
            .map_err(redis_error)?;
        Ok(Self {
            connection: Mutex::new(connection),
            reader: Mutex::new(reader),
            stream: format!("{prefix}:submissions"),
            parameters_key: format!("{prefix}:parameters"),
            closed_key: format!("{prefix}:closed"),
            consumer: "aggregator-0".into(),
            pending_cursor: Mutex::new(Some("0".into())),
        })
    }

    /// Aggregator side: [`RedisTransport::connect`], then creates the stream and the consumer
    /// group if they do not exist (a group created after agents started still sees every
    /// entry: it starts at id 0).
    pub fn aggregator(url: &str, prefix: &str) -> Result<Self, PgcError> {
        let transport = Self::connect(url, prefix)?;
        let created: Result<(), RedisError> = redis::cmd("XGROUP")
            .arg("CREATE")
            .arg(&transport.stream)
            .arg(GROUP)
            .arg("0")
            .arg("MKSTREAM")
            .query(&mut *transport.lock_connection()?);
        match created {
            Ok(()) => {}
            Err(e) if e.code() == Some("BUSYGROUP") => {}
            Err(e) => return Err(redis_error(e)),
        }
        Ok(transport)
    }

    /// Deletes the run's keys (stream, θ, closed flag).
    pub fn delete_run(&self) -> Result<(), PgcError> {
        redis::cmd("DEL")
            .arg(&self.stream)
            .arg(&self.parameters_key)
            .arg(&self.closed_key)
            .query::<()>(&mut *self.lock_connection()?)
            .map_err(redis_error)
    }

    fn lock_connection(&self) -> Result<std::sync::MutexGuard<'_, Connection>, PgcError> {
        self.connection.lock().map_err(|_| PgcError::Transport {
            transport: "redis",
            message: "connection lock poisoned by a panicked thread".into(),
        })
    }

    fn read_group(
        &self,
        id: &str,
        max: usize,
        block: Option<Duration>,
    ) -> Result<Vec<Delivery>, PgcError> {
        let mut cmd = redis::cmd("XREADGROUP");
        cmd.arg("GROUP")
            .arg(GROUP)
            .arg(&self.consumer)
            .arg("COUNT")
            .arg(max.max(1));
        if let Some(block) = block {
            cmd.arg("BLOCK").arg(block.as_millis().max(1) as u64);
        }
        cmd.arg("STREAMS").arg(&self.stream).arg(id);
        let mut reader = self.reader.lock().map_err(|_| PgcError::Transport {
            transport: "redis",
            message: "reader lock poisoned by a panicked thread".into(),
        })?;
        let reply: Option<StreamReadReply> = cmd.query(&mut *reader).map_err(redis_error)?;
        let mut out = Vec::new();
        for key in reply.map(|r| r.keys).unwrap_or_default() {
            for entry in key.ids {
                let payload: Vec<u8> = entry.get(FIELD).ok_or_else(|| PgcError::Transport {
                    transport: "redis",
                    message: format!("stream entry {} has no field `{FIELD}`", entry.id),
                })?;
                let submission: Submission =
                    serde_json::from_slice(&payload).map_err(json_error)?;
                out.push(Delivery {
                    tag: entry.id,
                    submission,
                });
            }
        }
        Ok(out)
    }
}

impl Transport for RedisTransport {
    fn publish(&self, parameters: &Parameters) -> Result<(), PgcError> {
        let payload = serde_json::to_vec(parameters).map_err(json_error)?;
        redis::cmd("SET")
            .arg(&self.parameters_key)
            .arg(payload)
            .query::<()>(&mut *self.lock_connection()?)
            .map_err(redis_error)
    }

    fn parameters(&self) -> Result<Option<Parameters>, PgcError> {
        let payload: Option<Vec<u8>> = redis::cmd("GET")
            .arg(&self.parameters_key)
            .query(&mut *self.lock_connection()?)
            .map_err(redis_error)?;
        payload
            .map(|p| serde_json::from_slice(&p).map_err(json_error))
            .transpose()
    }

    fn submit(&self, submission: &Submission) -> Result<(), PgcError> {
        let payload = serde_json::to_vec(submission).map_err(json_error)?;
        redis::cmd("XADD")
            .arg(&self.stream)
            .arg("*")
            .arg(FIELD)
            .arg(payload)
            .query::<String>(&mut *self.lock_connection()?)
            .map(|_| ())
            .map_err(redis_error)
    }

    fn receive(&self, max: usize, wait: Duration) -> Result<Vec<Delivery>, PgcError> {
        let cursor = self
            .pending_cursor
            .lock()
            .map_err(|_| PgcError::Transport {
                transport: "redis",
                message: "cursor lock poisoned by a panicked thread".into(),
            })?
            .clone();
        if let Some(cursor) = cursor {
            // Pending entries of this consumer with ids after `cursor` (no blocking).
            let pending = self.read_group(&cursor, max, None)?;
            let mut slot = self
                .pending_cursor
                .lock()
                .map_err(|_| PgcError::Transport {
                    transport: "redis",
                    message: "cursor lock poisoned by a panicked thread".into(),
                })?;
            match pending.last() {
                Some(last) => {
                    *slot = Some(last.tag.clone());
                    return Ok(pending);
                }
                None => *slot = None,
            }
        }
        self.read_group(">", max, Some(wait))
    }

    fn acknowledge(&self, tags: &[String]) -> Result<(), PgcError> {
        if tags.is_empty() {
            return Ok(());
        }
        redis::cmd("XACK")
            .arg(&self.stream)
            .arg(GROUP)
            .arg(tags)
            .query::<u64>(&mut *self.lock_connection()?)
            .map(|_| ())
            .map_err(redis_error)
    }

    fn close(&self) -> Result<(), PgcError> {
        redis::cmd("SET")
            .arg(&self.closed_key)
            .arg(1)
            .query::<()>(&mut *self.lock_connection()?)
            .map_err(redis_error)
    }

    fn is_closed(&self) -> Result<bool, PgcError> {
        let closed: Option<u8> = redis::cmd("GET")
            .arg(&self.closed_key)
            .query(&mut *self.lock_connection()?)
            .map_err(redis_error)?;
        Ok(closed.is_some())
    }
}

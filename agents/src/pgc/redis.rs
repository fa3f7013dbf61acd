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
//!
//! The client is a minimal RESP2 implementation over `std::net::TcpStream` (the eight commands
//! above, URLs `redis://[:password@]host[:port][/db]`). We chose it over the `redis` crate
//! because that crate's dependencies change the features of crates that Burn shares, which
//! forces a full rebuild of Burn; the protocol subset needed here is small and tested.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::sync::Mutex;
use std::time::Duration;

use super::{Delivery, Parameters, PgcError, Submission, Transport};

const GROUP: &str = "aggregator";
const FIELD: &str = "s";

fn transport_error(message: impl Into<String>) -> PgcError {
    PgcError::Transport {
        transport: "redis",
        message: message.into(),
    }
}

fn json_error(error: serde_json::Error) -> PgcError {
    transport_error(format!("malformed message: {error}"))
}

/// One RESP2 reply.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Reply {
    /// `+OK`.
    Simple(String),
    /// `-ERR ...`.
    Error(String),
    /// `:42`.
    Integer(i64),
    /// `$n` bulk string; `None` for the null bulk string.
    Bulk(Option<Vec<u8>>),
    /// `*n` array; `None` for the null array.
    Array(Option<Vec<Reply>>),
}

impl Reply {
    fn into_result(self) -> Result<Reply, PgcError> {
        match self {
            Reply::Error(message) => Err(transport_error(message)),
            other => Ok(other),
        }
    }

    fn bulk(self) -> Result<Option<Vec<u8>>, PgcError> {
        match self {
            Reply::Bulk(bytes) => Ok(bytes),
            other => Err(transport_error(format!(
                "expected a bulk string, got {other:?}"
            ))),
        }
    }

    fn array(self) -> Result<Option<Vec<Reply>>, PgcError> {
        match self {
            Reply::Array(items) => Ok(items),
            other => Err(transport_error(format!("expected an array, got {other:?}"))),
        }
    }

    fn text(self) -> Result<String, PgcError> {
        self.bulk()?
            .map(|b| String::from_utf8_lossy(&b).into_owned())
            .ok_or_else(|| transport_error("unexpected null bulk string"))
    }
}

/// A blocking RESP2 connection.
pub(crate) struct RespConnection {
    reader: BufReader<TcpStream>,
    writer: TcpStream,
}

/// Host, port, password and database of a `redis://[:password@]host[:port][/db]` URL.
fn parse_url(url: &str) -> Result<(String, u16, Option<String>, Option<u32>), PgcError> {
    let invalid = |why: &str| PgcError::InvalidParameter {
        name: "redis url",
        value: url.to_string(),
        expected: if why.is_empty() {
            "redis://[:password@]host[:port][/db]"
        } else {
            "redis://[:password@]host[:port][/db] with a numeric port and db"
        },
    };
    let rest = url.strip_prefix("redis://").ok_or_else(|| invalid(""))?;
    let (authority, path) = rest.split_once('/').unwrap_or((rest, ""));
    let (password, host_port) = match authority.rsplit_once('@') {
        Some((user_info, host_port)) => (
            Some(
                user_info
                    .split_once(':')
                    .map_or(user_info, |(_, p)| p)
                    .to_string(),
            ),
            host_port,
        ),
        None => (None, authority),
    };
    let (host, port) = match host_port.rsplit_once(':') {
        Some((host, port)) => (host, port.parse().map_err(|_| invalid("port"))?),
        None => (host_port, 6379),
    };
    if host.is_empty() {
        return Err(invalid(""));
    }
    let db = match path.trim_end_matches('/') {
        "" => None,
        db => Some(db.parse().map_err(|_| invalid("db"))?),
    };
    Ok((
        host.to_string(),
        port,
        password.filter(|p| !p.is_empty()),
        db,
    ))
}

impl RespConnection {
    /// Connects to `url`, authenticating and selecting the database if the URL says so.
    pub(crate) fn open(url: &str, timeout: Duration) -> Result<Self, PgcError> {
        let (host, port, password, db) = parse_url(url)?;
        let address = std::net::ToSocketAddrs::to_socket_addrs(&(host.as_str(), port))
            .map_err(|e| transport_error(format!("resolving {host}:{port}: {e}")))?
            .next()
            .ok_or_else(|| transport_error(format!("{host}:{port} has no address")))?;
        let stream = TcpStream::connect_timeout(&address, timeout)
            .map_err(|e| transport_error(format!("connecting to {url}: {e}")))?;
        stream
            .set_nodelay(true)
            .and_then(|()| stream.set_read_timeout(Some(Duration::from_secs(120))))
            .map_err(|e| transport_error(e.to_string()))?;
        let writer = stream
            .try_clone()
            .map_err(|e| transport_error(e.to_string()))?;
        let mut connection = Self {
            reader: BufReader::new(stream),
            writer,
        };
        if let Some(password) = password {
            connection.command(&[b"AUTH", password.as_bytes()])?;
        }
        if let Some(db) = db {
            connection.command(&[b"SELECT", db.to_string().as_bytes()])?;
        }
        Ok(connection)
    }

    /// Sends one command and reads its reply; a Redis error reply becomes `Err`.
    pub(crate) fn command(&mut self, args: &[&[u8]]) -> Result<Reply, PgcError> {
        let mut out = Vec::with_capacity(64 + args.iter().map(|a| a.len() + 16).sum::<usize>());
        out.extend_from_slice(format!("*{}\r\n", args.len()).as_bytes());
        for arg in args {
            out.extend_from_slice(format!("${}\r\n", arg.len()).as_bytes());
            out.extend_from_slice(arg);
            out.extend_from_slice(b"\r\n");
        }
        self.writer
            .write_all(&out)
            .map_err(|e| transport_error(format!("sending: {e}")))?;
        self.read_reply()?.into_result()
    }

    fn read_line(&mut self) -> Result<String, PgcError> {
        let mut line = String::new();
        let n = self
            .reader
            .read_line(&mut line)
            .map_err(|e| transport_error(format!("reading: {e}")))?;
        if n == 0 || !line.ends_with("\r\n") {
            return Err(transport_error("connection closed by the server"));
        }
        line.truncate(line.len() - 2);
        Ok(line)
    }

    fn read_reply(&mut self) -> Result<Reply, PgcError> {
        let line = self.read_line()?;
        let (kind, rest) = line.split_at(line.len().min(1));
        let number = |rest: &str| {
            rest.parse::<i64>()
                .map_err(|_| transport_error(format!("bad reply header {line:?}")))
        };
        Ok(match kind {
            "+" => Reply::Simple(rest.to_string()),
            "-" => Reply::Error(rest.to_string()),
            ":" => Reply::Integer(number(rest)?),
            "$" => match number(rest)? {
                n if n < 0 => Reply::Bulk(None),
                n => {
                    let mut bytes = vec![0u8; n as usize + 2];
                    self.reader
                        .read_exact(&mut bytes)
                        .map_err(|e| transport_error(format!("reading: {e}")))?;
                    bytes.truncate(n as usize);
                    Reply::Bulk(Some(bytes))
                }
            },
            "*" => match number(rest)? {
                n if n < 0 => Reply::Array(None),
                n => Reply::Array(Some(
                    (0..n)
                        .map(|_| self.read_reply())
                        .collect::<Result<Vec<_>, _>>()?,
                )),
            },
            _ => return Err(transport_error(format!("unsupported reply {line:?}"))),
        })
    }
}

/// A connection to one PGC run on a Redis server (5.0 or newer, for streams).
pub struct RedisTransport {
    /// For everything but the blocking read.
    connection: Mutex<RespConnection>,
    /// For `XREADGROUP ... BLOCK`, so that a waiting aggregator does not hold up the rest.
    reader: Mutex<RespConnection>,
    stream: String,
    parameters_key: String,
    closed_key: String,
    consumer: String,
    /// While re-reading pending entries after a restart: the last id seen (`0` at first);
    /// `None` once they are exhausted and only new entries are read (`>`).
    pending_cursor: Mutex<Option<String>>,
}

fn lock<T>(mutex: &Mutex<T>) -> Result<std::sync::MutexGuard<'_, T>, PgcError> {
    mutex
        .lock()
        .map_err(|_| transport_error("lock poisoned by a panicked thread"))
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
        let timeout = Duration::from_secs(5);
        Ok(Self {
            connection: Mutex::new(RespConnection::open(url, timeout)?),
            reader: Mutex::new(RespConnection::open(url, timeout)?),
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
        let created = lock(&transport.connection)?.command(&[
            b"XGROUP",
            b"CREATE",
            transport.stream.as_bytes(),
            GROUP.as_bytes(),
            b"0",
            b"MKSTREAM",
        ]);
        match created {
            Ok(_) => {}
            Err(PgcError::Transport { message, .. }) if message.starts_with("BUSYGROUP") => {}
            Err(e) => return Err(e),
        }
        Ok(transport)
    }

    /// Deletes the run's keys (stream, θ, closed flag).
    pub fn delete_run(&self) -> Result<(), PgcError> {
        lock(&self.connection)?.command(&[
            b"DEL",
            self.stream.as_bytes(),
            self.parameters_key.as_bytes(),
            self.closed_key.as_bytes(),
        ])?;
        Ok(())
    }

    fn read_group(
        &self,
        id: &str,
        max: usize,
        block: Option<Duration>,
    ) -> Result<Vec<Delivery>, PgcError> {
        let count = max.max(1).to_string();
        let block_ms = block.map(|b| (b.as_millis().max(1) as u64).to_string());
        let mut args: Vec<&[u8]> = vec![
            b"XREADGROUP",
            b"GROUP",
            GROUP.as_bytes(),
            self.consumer.as_bytes(),
            b"COUNT",
            count.as_bytes(),
        ];
        if let Some(ms) = &block_ms {
            args.extend([b"BLOCK".as_slice(), ms.as_bytes()]);
        }
        args.extend([b"STREAMS".as_slice(), self.stream.as_bytes(), id.as_bytes()]);
        let reply = lock(&self.reader)?.command(&args)?;
        // [[stream, [[id, [field, value, ...]], ...]]] or null.
        let mut out = Vec::new();
        for stream in reply.array()?.unwrap_or_default() {
            let mut parts = stream.array()?.unwrap_or_default().into_iter();
            let entries = parts.nth(1).map(Reply::array).transpose()?.flatten();
            for entry in entries.unwrap_or_default() {
                let mut entry = entry.array()?.unwrap_or_default().into_iter();
                let tag = entry
                    .next()
                    .ok_or_else(|| transport_error("stream entry without id"))?
                    .text()?;
                let fields = entry.next().map(Reply::array).transpose()?.flatten();
                let mut fields = fields.unwrap_or_default().into_iter();
                let mut payload = None;
                while let (Some(name), Some(value)) = (fields.next(), fields.next()) {
                    if name.text()? == FIELD {
                        payload = value.bulk()?;
                    }
                }
                let payload = payload.ok_or_else(|| {
                    transport_error(format!("stream entry {tag} has no field `{FIELD}`"))
                })?;
                let submission: Submission =
                    serde_json::from_slice(&payload).map_err(json_error)?;
                out.push(Delivery { tag, submission });
            }
        }
        Ok(out)
    }
}

impl Transport for RedisTransport {
    fn publish(&self, parameters: &Parameters) -> Result<(), PgcError> {
        let payload = serde_json::to_vec(parameters).map_err(json_error)?;
        lock(&self.connection)?.command(&[b"SET", self.parameters_key.as_bytes(), &payload])?;
        Ok(())
    }

    fn parameters(&self) -> Result<Option<Parameters>, PgcError> {
        let payload = lock(&self.connection)?
            .command(&[b"GET", self.parameters_key.as_bytes()])?
            .bulk()?;
        payload
            .map(|p| serde_json::from_slice(&p).map_err(json_error))
            .transpose()
    }

    fn submit(&self, submission: &Submission) -> Result<(), PgcError> {
        let payload = serde_json::to_vec(submission).map_err(json_error)?;
        lock(&self.connection)?.command(&[
            b"XADD",
            self.stream.as_bytes(),
            b"*",
            FIELD.as_bytes(),
            &payload,
        ])?;
        Ok(())
    }

    fn receive(&self, max: usize, wait: Duration) -> Result<Vec<Delivery>, PgcError> {
        let cursor = lock(&self.pending_cursor)?.clone();
        if let Some(cursor) = cursor {
            // Pending entries of this consumer with ids after `cursor` (no blocking).
            let pending = self.read_group(&cursor, max, None)?;
            let mut slot = lock(&self.pending_cursor)?;
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
        let mut args: Vec<&[u8]> = vec![b"XACK", self.stream.as_bytes(), GROUP.as_bytes()];
        args.extend(tags.iter().map(|t| t.as_bytes()));
        lock(&self.connection)?.command(&args)?;
        Ok(())
    }

    fn close(&self) -> Result<(), PgcError> {
        lock(&self.connection)?.command(&[b"SET", self.closed_key.as_bytes(), b"1"])?;
        Ok(())
    }

    fn is_closed(&self) -> Result<bool, PgcError> {
        Ok(lock(&self.connection)?
            .command(&[b"GET", self.closed_key.as_bytes()])?
            .bulk()?
            .is_some())
    }
}

#[cfg(test)]
mod tests {
    use super::parse_url;

    #[test]
    fn redis_urls() {
        assert_eq!(
            parse_url("redis://127.0.0.1:6390/").unwrap(),
            ("127.0.0.1".into(), 6390, None, None)
        );
        assert_eq!(
            parse_url("redis://:secret@localhost/2").unwrap(),
            ("localhost".into(), 6379, Some("secret".into()), Some(2))
        );
        assert!(parse_url("http://localhost").is_err());
        assert!(parse_url("redis://localhost:port").is_err());
    }
}

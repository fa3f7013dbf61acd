//! [`RedisTransport`]: PGC across processes and machines over Redis Streams, on the `redis`
//! crate's blocking client (no async runtime).
//!
//! # Keys
//!
//! Every run has a run id `R` and keeps all its keys under `privrl:pgc:{R}:` (the braces make
//! them one hash slot on a Redis Cluster), so runs on one server never see each other:
//!
//! - `…:submissions`, a stream: agents `XADD` one entry per noisy gradient (field `s`, the
//!   [`Submission`] as JSON); the aggregator reads it through the consumer group `aggregator`
//!   (`XREADGROUP`) and `XACK`s an entry only after applying it and saving its checkpoint.
//! - `…:seqs`, a hash: the last `seq` each agent submitted, written in the same `MULTI` as the
//!   entry, so that an agent restarted under the same name resumes its sequence.
//! - `…:parameters`: the latest θ with its version, as JSON ([`Parameters`]).
//! - `…:epoch`: the fencing token. Each aggregator that takes the run over increments it and
//!   checks it, atomically in a Lua script, on every write; an aggregator that has been
//!   superseded gets [`PgcError::Fenced`] and writes nothing more.
//! - `…:dead`, a stream of dead letters: entries that are not a submission of this run
//!   (malformed JSON, missing field, a gradient of the wrong length or with non-finite values),
//!   each with its id, the reason and its raw fields; they are acknowledged and the run goes on.
//! - `…:closed`: set by the aggregator when training is over.
//!
//! Every 64 acknowledgements, and when the run closes, the stream is trimmed (`XTRIM MINID`) up
//! to the oldest entry still pending, so it holds only what a restarted aggregator could still
//! need.
//!
//! # Faults
//!
//! Each connection reconnects with exponential backoff (50 ms doubling to 1 s) on I/O errors,
//! dropped connections and a loading server, for up to the reconnect timeout; then the command
//! fails with the last error. Every command is safe to repeat: an `XADD` repeated after a lost
//! reply is a duplicate `(source, seq)` that the aggregator skips; after a reconnect the
//! aggregator re-reads its own pending entries, so an entry whose delivery reply was lost is
//! not stranded.

use std::collections::HashMap;
use std::fs::File;
use std::io::Write;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use redis::io::tcp::TcpSettings;
use redis::{
    Client, Connection, ErrorKind, IntoConnectionInfo, RedisError, RedisResult, ServerErrorKind,
    Value,
};

use super::{Delivery, Parameters, PgcError, Submission, Transport};

const GROUP: &str = "aggregator";
const CONSUMER: &str = "aggregator-0";
const FIELD: &str = "s";

/// The fenced writes of the aggregator: the epoch is checked and the write done in one atomic
/// step, so a superseded aggregator cannot slip a write in after its successor took over.
const FENCED_SCRIPT: &str = r"
local current = redis.call('GET', KEYS[1])
if not current then return redis.error_reply('RUNLOST the run has no epoch key') end
if current ~= ARGV[1] then return redis.error_reply('FENCED ' .. current) end
local op = ARGV[2]
if op == 'publish' then
  redis.call('SET', KEYS[4], ARGV[3])
elseif op == 'close' then
  redis.call('SET', KEYS[5], '1')
elseif op == 'dead' then
  redis.call('XADD', KEYS[3], '*', 'id', ARGV[4], 'reason', ARGV[5], 'entry', ARGV[6])
  redis.call('XACK', KEYS[2], ARGV[3], ARGV[4])
end
if op == 'ack' or op == 'close' then
  -- ARGV[3] group, ARGV[4] the id after the last delivered ('' none yet; '-' no trimming
  -- this time), then the ids to acknowledge.
  local n = #ARGV
  local i = 5
  while i <= n do
    local j = math.min(i + 999, n)
    redis.call('XACK', KEYS[2], ARGV[3], unpack(ARGV, i, j))
    i = j + 1
  end
  local floor = ARGV[4]
  if floor ~= '-' then
    local pending = redis.call('XPENDING', KEYS[2], ARGV[3])
    if pending[1] > 0 then floor = pending[2] end
    if floor ~= '' then redis.call('XTRIM', KEYS[2], 'MINID', floor) end
  end
end
return 1
";

fn transport_error(message: impl Into<String>) -> PgcError {
    PgcError::Transport {
        transport: "redis",
        message: message.into(),
    }
}

/// Whether `error` is worth a reconnect and a retry.
fn transient(error: &RedisError) -> bool {
    error.is_io_error()
        || error.is_connection_dropped()
        || error.is_connection_refusal()
        || error.is_timeout()
        || matches!(
            error.kind(),
            ErrorKind::Server(
                ServerErrorKind::BusyLoading
                    | ServerErrorKind::TryAgain
                    | ServerErrorKind::MasterDown
            )
        )
}

/// One connection that reconnects on transient errors.
struct Link {
    client: Client,
    connection: Option<Connection>,
    url: String,
    reconnect_timeout: Duration,
    /// Read timeout beyond a command's own blocking time: a server that answers nothing for
    /// this long is treated as gone.
    read_timeout: Duration,
    /// Connections opened so far; a change tells the reader to re-read its pending entries.
    generation: u64,
    /// The socket's read timeout as last set.
    timeout_set: Option<Duration>,
}

impl Link {
    fn new(client: Client, url: &str, reconnect_timeout: Duration) -> Self {
        Self {
            client,
            connection: None,
            url: redact(url),
            reconnect_timeout,
            read_timeout: Duration::from_secs(10),
            generation: 0,
            timeout_set: None,
        }
    }

    fn connection(&mut self, extra_wait: Duration) -> RedisResult<&mut Connection> {
        if self.connection.is_none() {
            let connection = self
                .client
                .get_connection_with_timeout(Duration::from_secs(5))?;
            connection.set_write_timeout(Some(self.read_timeout))?;
            self.generation += 1;
            self.connection = Some(connection);
            self.timeout_set = None;
        }
        let connection = self.connection.as_mut().expect("connected above");
        let timeout = self.read_timeout + extra_wait;
        if self.timeout_set != Some(timeout) {
            connection.set_read_timeout(Some(timeout))?;
            self.timeout_set = Some(timeout);
        }
        Ok(connection)
    }

    /// Runs `command` (which may block on the server for `extra_wait`), reconnecting and
    /// retrying with exponential backoff while the error is transient and the reconnect
    /// timeout has not passed.
    fn run<T>(
        &mut self,
        what: &str,
        extra_wait: Duration,
        mut command: impl FnMut(&mut Connection) -> RedisResult<T>,
    ) -> Result<T, PgcError> {
        let start = Instant::now();
        let mut backoff = Duration::from_millis(50);
        loop {
            let result = self.connection(extra_wait).and_then(&mut command);
            match result {
                Ok(value) => return Ok(value),
                Err(error) if transient(&error) => {
                    self.connection = None;
                    if start.elapsed() + backoff > self.reconnect_timeout {
                        return Err(transport_error(format!(
                            "{what}: lost {} and could not reconnect within {:?}: {error}",
                            self.url, self.reconnect_timeout
                        )));
                    }
                    std::thread::sleep(backoff);
                    backoff = (backoff * 2).min(Duration::from_secs(1));
                }
                Err(error) => return Err(classify(what, error)),
            }
        }
    }
}

/// A Redis error as a [`PgcError`]; the fenced script's errors become their named variants
/// in [`RedisTransport`]'s methods, which know the run.
fn classify(what: &str, error: RedisError) -> PgcError {
    transport_error(format!("{what}: {error}"))
}

/// `url` without its password, for messages.
fn redact(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(scheme), Some(at)) if at > scheme => {
            format!("{}://…@{}", &url[..scheme], &url[at + 1..])
        }
        _ => url.to_string(),
    }
}

fn lock<T>(mutex: &Mutex<T>) -> Result<MutexGuard<'_, T>, PgcError> {
    mutex
        .lock()
        .map_err(|_| transport_error("lock poisoned by a panicked thread"))
}

/// The keys of one run.
#[derive(Debug, Clone)]
struct Keys {
    epoch: String,
    stream: String,
    dead: String,
    parameters: String,
    closed: String,
    seqs: String,
}

impl Keys {
    fn new(run_id: &str) -> Self {
        let key = |name: &str| format!("privrl:pgc:{{{run_id}}}:{name}");
        Self {
            epoch: key("epoch"),
            stream: key("submissions"),
            dead: key("dead"),
            parameters: key("parameters"),
            closed: key("closed"),
            seqs: key("seqs"),
        }
    }

    fn all(&self) -> [&str; 6] {
        [
            &self.epoch,
            &self.stream,
            &self.dead,
            &self.parameters,
            &self.closed,
            &self.seqs,
        ]
    }
}

/// Checks a run id: what users type to tell runs apart, so printable and without the braces
/// and whitespace that would break the key layout.
pub(crate) fn check_run_id(run_id: &str) -> Result<(), PgcError> {
    let ok = !run_id.is_empty()
        && run_id.len() <= 200
        && run_id
            .chars()
            .all(|c| c.is_ascii_graphic() && c != '{' && c != '}');
    if ok {
        Ok(())
    } else {
        Err(PgcError::InvalidParameter {
            name: "run id",
            value: run_id.to_string(),
            expected: "1 to 200 printable ASCII characters without spaces or braces",
        })
    }
}

/// A stream entry as read: its id and its fields (`None` for an entry deleted while pending).
type RawEntry = (String, Option<HashMap<String, Vec<u8>>>);

/// The aggregator's reading position.
struct Reader {
    link: Link,
    /// While re-reading this consumer's pending entries (after a start or a reconnect): the
    /// last id seen (`0` at first); `None` once they are exhausted and only new entries are
    /// read (`>`).
    pending_cursor: Option<String>,
    /// The link generation the cursor belongs to.
    generation: u64,
    /// The successor of the newest id received: everything before it has been delivered.
    delivered_floor: String,
}

/// A connection to one PGC run on a Redis server (6.2 or newer, for `XTRIM MINID`).
///
/// URLs are the `redis` crate's: `redis://[user[:password]@]host[:port][/db]` (the user is
/// sent with `AUTH` for Redis ACLs), `rediss://…` for TLS with the `redis-tls` feature,
/// `redis+unix:///path`.
pub struct RedisTransport {
    /// For everything but the blocking read.
    link: Mutex<Link>,
    /// For `XREADGROUP ... BLOCK`, so that a waiting aggregator does not hold up the rest.
    reader: Mutex<Reader>,
    keys: Keys,
    run_id: String,
    /// This aggregator's fencing token, once it has claimed the run.
    epoch: Mutex<Option<u64>>,
    script_sha: String,
    /// Agents: every submission released, written ahead of the send, and its stream id once
    /// sent, as JSON lines (an audit trail).
    sent_log: Option<Arc<Mutex<File>>>,
    /// Fault injection ([`RedisTransport::with_crash_after_sends`]): the send count at which
    /// the process aborts, and the sends so far.
    crash_after: Option<(u64, std::sync::atomic::AtomicU64)>,
    /// Entries acknowledged since the stream was last trimmed.
    acked_since_trim: Mutex<usize>,
}

/// The stream is trimmed after this many acknowledgements (and at the end of the run): often
/// enough to bound it, rarely enough that |B| = 1 does not pay an `XTRIM` per submission.
const TRIM_EVERY: usize = 64;

/// The default time a connection keeps trying to reconnect.
pub const DEFAULT_RECONNECT_TIMEOUT: Duration = Duration::from_secs(30);

impl RedisTransport {
    /// Connects to `url` (e.g. `redis://127.0.0.1:6390/`) for the run `run_id`, reconnecting
    /// for up to [`DEFAULT_RECONNECT_TIMEOUT`] when the connection is lost. Agents use this;
    /// an aggregator then calls [`RedisTransport::claim`].
    pub fn connect(url: &str, run_id: &str) -> Result<Self, PgcError> {
        Self::connect_with_timeout(url, run_id, DEFAULT_RECONNECT_TIMEOUT)
    }

    /// [`RedisTransport::connect`] with a reconnect timeout.
    pub fn connect_with_timeout(
        url: &str,
        run_id: &str,
        reconnect_timeout: Duration,
    ) -> Result<Self, PgcError> {
        check_run_id(run_id)?;
        let invalid = |e: RedisError| PgcError::InvalidParameter {
            name: "redis url",
            value: format!("{} ({e})", redact(url)),
            expected: "redis://[user[:password]@]host[:port][/db] or rediss://… (TLS)",
        };
        // Small request-reply commands: Nagle's algorithm would only delay them.
        let info = url
            .into_connection_info()
            .map_err(invalid)?
            .set_tcp_settings(TcpSettings::default().set_nodelay(true));
        let client = Client::open(info).map_err(invalid)?;
        let mut link = Link::new(client.clone(), url, reconnect_timeout);
        // Fail fast on a wrong address or password: one connection attempt, no retries.
        link.connection(Duration::ZERO)
            .map_err(|e| transport_error(format!("connecting to {}: {e}", redact(url))))?;
        let script_sha = link.run("SCRIPT LOAD", Duration::ZERO, |c| {
            redis::cmd("SCRIPT")
                .arg("LOAD")
                .arg(FENCED_SCRIPT)
                .query::<String>(c)
        })?;
        let mut reader = Link::new(client, url, reconnect_timeout);
        reader
            .connection(Duration::ZERO)
            .map_err(|e| transport_error(format!("connecting to {}: {e}", redact(url))))?;
        Ok(Self {
            link: Mutex::new(link),
            reader: Mutex::new(Reader {
                generation: reader.generation,
                link: reader,
                pending_cursor: Some("0".into()),
                delivered_floor: String::new(),
            }),
            keys: Keys::new(run_id),
            run_id: run_id.to_string(),
            epoch: Mutex::new(None),
            script_sha,
            sent_log: None,
            crash_after: None,
            acked_since_trim: Mutex::new(0),
        })
    }

    /// Aggregator side for a fresh run: [`RedisTransport::connect`] then
    /// [`RedisTransport::claim`].
    pub fn aggregator(url: &str, run_id: &str) -> Result<Self, PgcError> {
        let transport = Self::connect(url, run_id)?;
        transport.claim()?;
        Ok(transport)
    }

    /// Agents: also append every submission to `log`, an audit trail of what this process
    /// released that never lists fewer releases than were made. Two JSON lines per
    /// submission: `{"event": "release", "submission": …}`, written and fsynced **before** the
    /// submission is sent, and `{"event": "sent", "source": …, "seq": …, "id": …}` with its
    /// stream id once the server accepted it. A `release` without its `sent` line (the process
    /// died, or the send failed, in between) may have reached the stream: count it as
    /// released.
    pub fn with_sent_log(mut self, log: Arc<Mutex<File>>) -> Self {
        self.sent_log = Some(log);
        self
    }

    /// Fault injection for the tests of the audit trail (`xtask/tests/pgc_redis.rs`): abort
    /// the process right after the server accepted the `sends`-th submission of this
    /// transport, before its `sent` line is written, the window in which a log written after
    /// the send would lose a release.
    #[doc(hidden)]
    pub fn with_crash_after_sends(mut self, sends: u64) -> Self {
        self.crash_after = Some((sends, std::sync::atomic::AtomicU64::new(0)));
        self
    }

    /// Appends `line` to the sent log, if any, and with `durable` waits for it to reach the
    /// disk.
    fn log_sent(&self, line: serde_json::Value, durable: bool) -> Result<(), PgcError> {
        let Some(log) = &self.sent_log else {
            return Ok(());
        };
        // One `write` of the whole line: `writeln!` writes a line in pieces, and another
        // worker's crash between two pieces left a torn last line (2 of 7 runs of
        // `agent_crash_after_send_leaves_the_release_in_the_sent_log`). A process that dies
        // between two whole writes leaves whole lines.
        let text = format!("{line}\n");
        let mut file = lock(log)?;
        file.write_all(text.as_bytes())
            .and_then(|()| file.flush())
            .and_then(|()| if durable { file.sync_data() } else { Ok(()) })
            .map_err(|e| transport_error(format!("writing the sent log: {e}")))
    }

    /// The run id.
    pub fn run_id(&self) -> &str {
        &self.run_id
    }

    /// Whether the server holds any state of this run (an aggregator ever claimed it, or an
    /// agent submitted to it).
    pub fn run_exists(&self) -> Result<bool, PgcError> {
        let keys = self.keys.clone();
        let n: u64 = lock(&self.link)?.run("EXISTS", Duration::ZERO, |c| {
            redis::cmd("EXISTS")
                .arg(&keys.epoch)
                .arg(&keys.parameters)
                .query(c)
        })?;
        Ok(n > 0)
    }

    /// Takes the run over as its aggregator: increments the epoch (fencing off any earlier
    /// aggregator of the run) and creates the stream and consumer group if they do not exist
    /// (a group created after agents started still sees every entry: it starts at id 0).
    /// Returns the new epoch.
    pub fn claim(&self) -> Result<u64, PgcError> {
        let keys = self.keys.clone();
        let mut link = lock(&self.link)?;
        let epoch: u64 = link.run("INCR epoch", Duration::ZERO, |c| {
            redis::cmd("INCR").arg(&keys.epoch).query(c)
        })?;
        let created = link.run("XGROUP CREATE", Duration::ZERO, |c| {
            redis::cmd("XGROUP")
                .arg("CREATE")
                .arg(&keys.stream)
                .arg(GROUP)
                .arg("0")
                .arg("MKSTREAM")
                .query::<()>(c)
        });
        match created {
            Ok(()) => {}
            Err(PgcError::Transport { message, .. }) if message.contains("BUSYGROUP") => {}
            Err(e) => return Err(e),
        }
        *lock(&self.epoch)? = Some(epoch);
        Ok(epoch)
    }

    /// This aggregator's epoch, once claimed.
    pub fn epoch(&self) -> Option<u64> {
        self.epoch.lock().ok().and_then(|e| *e)
    }

    /// Deletes all the run's keys (stream, dead letters, θ, epoch, sequences, closed flag):
    /// `cargo xtask pgc cleanup`.
    pub fn delete_run(&self) -> Result<u64, PgcError> {
        let keys = self.keys.clone();
        lock(&self.link)?.run("DEL", Duration::ZERO, |c| {
            redis::cmd("DEL").arg(&keys.all()[..]).query(c)
        })
    }

    /// Entries in the dead-letter stream.
    pub fn dead_letters(&self) -> Result<u64, PgcError> {
        let key = self.keys.dead.clone();
        lock(&self.link)?.run("XLEN", Duration::ZERO, |c| {
            redis::cmd("XLEN").arg(&key).query(c)
        })
    }

    /// Entries left in the submissions stream (after trimming: those not yet acknowledged
    /// and the newest ones).
    pub fn stream_len(&self) -> Result<u64, PgcError> {
        let key = self.keys.stream.clone();
        lock(&self.link)?.run("XLEN", Duration::ZERO, |c| {
            redis::cmd("XLEN").arg(&key).query(c)
        })
    }

    /// One fenced write (see [`FENCED_SCRIPT`]).
    fn fenced(&self, op: &str, args: &[&[u8]]) -> Result<(), PgcError> {
        let epoch = self.epoch().ok_or_else(|| {
            transport_error("an aggregator write before the run was claimed (call `claim`)")
        })?;
        let epoch_text = epoch.to_string();
        let keys = &self.keys;
        let result = lock(&self.link)?.run(op, Duration::ZERO, |c| {
            let mut sha = redis::cmd("EVALSHA");
            sha.arg(&self.script_sha);
            let mut eval = redis::cmd("EVAL");
            eval.arg(FENCED_SCRIPT);
            for command in [&mut sha, &mut eval] {
                command
                    .arg(5)
                    .arg(&keys.epoch)
                    .arg(&keys.stream)
                    .arg(&keys.dead)
                    .arg(&keys.parameters)
                    .arg(&keys.closed)
                    .arg(&epoch_text)
                    .arg(op);
                for a in args {
                    command.arg(*a);
                }
            }
            match sha.query::<i64>(c) {
                // A restarted server forgot the script: send it whole (which loads it).
                Err(e) if e.kind() == ErrorKind::Server(ServerErrorKind::NoScript) => {
                    eval.query::<i64>(c)
                }
                other => other,
            }
        });
        match result {
            Ok(_) => Ok(()),
            Err(PgcError::Transport { message, .. }) if message.contains("FENCED") => {
                // The script's reply is `FENCED <current epoch>`, however the client frames it.
                let current = message.split("FENCED").nth(1).and_then(|rest| {
                    let digits: String = rest
                        .trim_start_matches(|c: char| !c.is_ascii_digit())
                        .chars()
                        .take_while(char::is_ascii_digit)
                        .collect();
                    digits.parse().ok()
                });
                Err(PgcError::Fenced {
                    run_id: self.run_id.clone(),
                    epoch,
                    current,
                })
            }
            Err(PgcError::Transport { message, .. }) if message.contains("RUNLOST") => {
                Err(PgcError::RunLost {
                    run_id: self.run_id.clone(),
                    message: "its epoch key is gone (cleaned up, or a Redis restart without \
                              persistence lost the run)"
                        .into(),
                })
            }
            Err(e) => Err(e),
        }
    }

    fn read_group(
        &self,
        reader: &mut Reader,
        id: &str,
        max: usize,
        block: Option<Duration>,
    ) -> Result<Vec<RawEntry>, PgcError> {
        let stream = &self.keys.stream;
        let reply: Value = reader
            .link
            .run("XREADGROUP", block.unwrap_or_default(), |c| {
                let mut command = redis::cmd("XREADGROUP");
                command
                    .arg("GROUP")
                    .arg(GROUP)
                    .arg(CONSUMER)
                    .arg("COUNT")
                    .arg(max.max(1));
                if let Some(block) = block {
                    command.arg("BLOCK").arg(block.as_millis().max(1) as u64);
                }
                command.arg("STREAMS").arg(stream).arg(id).query(c)
            })
            .map_err(|e| match e {
                PgcError::Transport { message, .. } if message.contains("NOGROUP") => {
                    PgcError::RunLost {
                        run_id: self.run_id.clone(),
                        message: "its stream or consumer group is gone (cleaned up, or a \
                                      Redis restart without persistence lost the run)"
                            .into(),
                    }
                }
                e => e,
            })?;
        parse_entries(reply)
    }
}

/// `[[stream, [[id, [field, value, ...] | nil], ...]]]` (or a RESP3 map) as (id, fields),
/// fields `None` for an entry deleted while pending.
fn parse_entries(reply: Value) -> Result<Vec<RawEntry>, PgcError> {
    let bad = |what: &str| transport_error(format!("unexpected XREADGROUP reply: {what}"));
    let streams = match reply {
        Value::Nil => return Ok(Vec::new()),
        Value::Array(streams) => streams
            .into_iter()
            .map(|s| match s {
                Value::Array(mut parts) if parts.len() == 2 => Ok(parts.pop().expect("2")),
                _ => Err(bad("a stream is not [name, entries]")),
            })
            .collect::<Result<Vec<_>, _>>()?,
        Value::Map(streams) => streams.into_iter().map(|(_, v)| v).collect(),
        _ => return Err(bad("not an array")),
    };
    let text = |v: Value| match v {
        Value::BulkString(b) => Ok(b),
        Value::SimpleString(s) => Ok(s.into_bytes()),
        _ => Err(bad("a field is not a string")),
    };
    let mut out = Vec::new();
    for entries in streams {
        let Value::Array(entries) = entries else {
            return Err(bad("entries are not an array"));
        };
        for entry in entries {
            let Value::Array(mut entry) = entry else {
                return Err(bad("an entry is not an array"));
            };
            if entry.len() != 2 {
                return Err(bad("an entry is not [id, fields]"));
            }
            let fields = entry.pop().expect("2");
            let id = String::from_utf8_lossy(&text(entry.pop().expect("2"))?).into_owned();
            let fields = match fields {
                Value::Nil => None,
                Value::Array(items) => {
                    let mut map = HashMap::new();
                    let mut items = items.into_iter();
                    while let (Some(k), Some(v)) = (items.next(), items.next()) {
                        map.insert(String::from_utf8_lossy(&text(k)?).into_owned(), text(v)?);
                    }
                    Some(map)
                }
                Value::Map(items) => Some(
                    items
                        .into_iter()
                        .map(|(k, v)| {
                            Ok((String::from_utf8_lossy(&text(k)?).into_owned(), text(v)?))
                        })
                        .collect::<Result<_, PgcError>>()?,
                ),
                _ => return Err(bad("fields are not an array")),
            };
            out.push((id, fields));
        }
    }
    Ok(out)
}

/// The id right after stream id `id` (`ms-seq` → `ms-(seq+1)`).
fn next_id(id: &str) -> Option<String> {
    let (ms, seq) = id.split_once('-')?;
    let (ms, seq): (u64, u64) = (ms.parse().ok()?, seq.parse().ok()?);
    Some(match seq.checked_add(1) {
        Some(seq) => format!("{ms}-{seq}"),
        None => format!("{}-0", ms.checked_add(1)?),
    })
}

/// Why an entry is not a submission, or the submission.
fn decode(fields: Option<&HashMap<String, Vec<u8>>>) -> Result<Submission, String> {
    let fields = fields.ok_or("the entry was deleted while pending")?;
    let payload = fields
        .get(FIELD)
        .ok_or_else(|| format!("no field `{FIELD}` (fields: {:?})", fields.keys()))?;
    serde_json::from_slice(payload).map_err(|e| format!("not a submission: {e}"))
}

fn raw_text(fields: Option<&HashMap<String, Vec<u8>>>) -> String {
    let mut text = match fields {
        None => "(deleted)".to_string(),
        Some(fields) => {
            let mut pairs: Vec<_> = fields
                .iter()
                .map(|(k, v)| format!("{k}={}", String::from_utf8_lossy(v)))
                .collect();
            pairs.sort();
            pairs.join(" ")
        }
    };
    // Keep dead letters small: the reason matters, not a megabyte of payload.
    if text.len() > 4096 {
        let mut cut = 4096;
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        text.truncate(cut);
        text.push('…');
    }
    text
}

impl Transport for RedisTransport {
    fn publish(&self, parameters: &Parameters) -> Result<(), PgcError> {
        let payload = serde_json::to_vec(parameters)
            .map_err(|e| transport_error(format!("encoding θ: {e}")))?;
        self.fenced("publish", &[&payload])
    }

    fn parameters(&self) -> Result<Option<Parameters>, PgcError> {
        let key = self.keys.parameters.clone();
        let payload: Option<Vec<u8>> =
            lock(&self.link)?.run("GET parameters", Duration::ZERO, |c| {
                redis::cmd("GET").arg(&key).query(c)
            })?;
        payload
            .map(|p| {
                serde_json::from_slice(&p)
                    .map_err(|e| transport_error(format!("malformed θ under {key}: {e}")))
            })
            .transpose()
    }

    fn last_seq(&self, source: &str) -> Result<u64, PgcError> {
        let key = self.keys.seqs.clone();
        let seq: Option<u64> = lock(&self.link)?.run("HGET seqs", Duration::ZERO, |c| {
            redis::cmd("HGET").arg(&key).arg(source).query(c)
        })?;
        Ok(seq.unwrap_or(0))
    }

    fn submit(&self, submission: &Submission) -> Result<(), PgcError> {
        let payload = serde_json::to_vec(submission)
            .map_err(|e| transport_error(format!("encoding a submission: {e}")))?;
        let keys = &self.keys;
        // Write ahead: the release is on disk (fsynced) before it can reach the stream, so a
        // process killed between the two still lists it; an entry without its `sent` line
        // below may or may not have been released, and counts as released.
        self.log_sent(
            serde_json::json!({ "event": "release", "submission": submission }),
            true,
        )?;
        // The entry and the agent's sequence number together or not at all.
        let (id,): (String,) = lock(&self.link)?.run("XADD", Duration::ZERO, |c| {
            let mut pipe = redis::pipe();
            pipe.atomic()
                .cmd("XADD")
                .arg(&keys.stream)
                .arg("*")
                .arg(FIELD)
                .arg(&payload)
                .cmd("HSET")
                .arg(&keys.seqs)
                .arg(&submission.source)
                .arg(submission.seq)
                .ignore();
            pipe.query(c)
        })?;
        if let Some((at, sends)) = &self.crash_after {
            if sends.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1 == *at {
                std::process::abort();
            }
        }
        // The confirmation needs no fsync: lost, it leaves the release listed as unconfirmed,
        // which over-reports, never under-reports.
        self.log_sent(
            serde_json::json!({
                "event": "sent",
                "source": submission.source,
                "seq": submission.seq,
                "id": id,
            }),
            false,
        )
    }

    fn receive(&self, max: usize, wait: Duration) -> Result<Vec<Delivery>, PgcError> {
        let mut reader = lock(&self.reader)?;
        if reader.generation != reader.link.generation {
            // A new connection (the first, or after a reconnect): entries delivered on the old
            // one may have had their reply lost, so re-read this consumer's pending entries.
            reader.generation = reader.link.generation;
            reader.pending_cursor = Some("0".into());
        }
        let entries = match reader.pending_cursor.clone() {
            Some(cursor) => {
                let pending = self.read_group(&mut reader, &cursor, max, None)?;
                match pending.last() {
                    Some((last, _)) => {
                        reader.pending_cursor = Some(last.clone());
                        pending
                    }
                    None => {
                        reader.pending_cursor = None;
                        self.read_group(&mut reader, ">", max, Some(wait))?
                    }
                }
            }
            None => self.read_group(&mut reader, ">", max, Some(wait))?,
        };
        if reader.generation != reader.link.generation {
            // Reconnected during this read: the next call starts over with pending entries.
            reader.generation = reader.link.generation;
            reader.pending_cursor = Some("0".into());
        }
        if let Some(floor) = entries.last().and_then(|(id, _)| next_id(id)) {
            reader.delivered_floor = floor;
        }
        drop(reader);
        let mut out = Vec::with_capacity(entries.len());
        for (id, fields) in entries {
            match decode(fields.as_ref()) {
                Ok(submission) => out.push(Delivery {
                    tag: id,
                    submission,
                }),
                Err(reason) => self.reject(&id, &format!("malformed: {reason}"))?,
            }
        }
        // Keep a dead letter's raw fields in its reason's entry: done in `reject`.
        Ok(out)
    }

    fn acknowledge(&self, tags: &[String]) -> Result<(), PgcError> {
        // Trimming costs an XPENDING and an XTRIM: done once TRIM_EVERY entries have been
        // acknowledged since the last time, and always at `close`.
        let mut since = lock(&self.acked_since_trim)?;
        *since += tags.len();
        let floor = if *since >= TRIM_EVERY {
            *since = 0;
            lock(&self.reader)?.delivered_floor.clone()
        } else {
            "-".to_string()
        };
        drop(since);
        let mut args: Vec<&[u8]> = vec![GROUP.as_bytes(), floor.as_bytes()];
        args.extend(tags.iter().map(|t| t.as_bytes()));
        self.fenced("ack", &args)
    }

    fn reject(&self, tag: &str, reason: &str) -> Result<(), PgcError> {
        // The raw entry, for the dead letter (it may be gone if it was trimmed meanwhile).
        let key = self.keys.stream.clone();
        let raw: Value = lock(&self.link)?.run("XRANGE", Duration::ZERO, |c| {
            redis::cmd("XRANGE").arg(&key).arg(tag).arg(tag).query(c)
        })?;
        let raw = match raw {
            Value::Array(entries) => parse_entries(Value::Array(vec![Value::Array(vec![
                Value::BulkString(key.clone().into_bytes()),
                Value::Array(entries),
            ])]))?
            .pop()
            .map(|(_, fields)| raw_text(fields.as_ref()))
            .unwrap_or_else(|| "(gone)".into()),
            _ => "(unreadable)".into(),
        };
        self.fenced(
            "dead",
            &[
                GROUP.as_bytes(),
                tag.as_bytes(),
                reason.as_bytes(),
                raw.as_bytes(),
            ],
        )
    }

    fn check_fence(&self) -> Result<(), PgcError> {
        let Some(epoch) = self.epoch() else {
            return Ok(());
        };
        let key = self.keys.epoch.clone();
        let current: Option<u64> = lock(&self.link)?.run("GET epoch", Duration::ZERO, |c| {
            redis::cmd("GET").arg(&key).query(c)
        })?;
        match current {
            Some(current) if current == epoch => Ok(()),
            Some(current) => Err(PgcError::Fenced {
                run_id: self.run_id.clone(),
                epoch,
                current: Some(current),
            }),
            None => Err(PgcError::RunLost {
                run_id: self.run_id.clone(),
                message: "its epoch key is gone (cleaned up, or a Redis restart without \
                          persistence lost the run)"
                    .into(),
            }),
        }
    }

    fn close(&self) -> Result<(), PgcError> {
        let floor = lock(&self.reader)?.delivered_floor.clone();
        self.fenced("close", &[GROUP.as_bytes(), floor.as_bytes()])
    }

    fn is_closed(&self) -> Result<bool, PgcError> {
        let key = self.keys.closed.clone();
        let closed: Option<String> = lock(&self.link)?.run("GET closed", Duration::ZERO, |c| {
            redis::cmd("GET").arg(&key).query(c)
        })?;
        Ok(closed.is_some())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_ids_keys_and_ids() {
        assert!(check_run_id("exp-1.seed_3").is_ok());
        for bad in ["", "a b", "a{b}", "é"] {
            assert!(check_run_id(bad).is_err(), "{bad:?}");
        }
        assert_eq!(Keys::new("r1").stream, "privrl:pgc:{r1}:submissions");
        assert_eq!(
            next_id("1700000000000-0").as_deref(),
            Some("1700000000000-1")
        );
        assert_eq!(next_id(&format!("5-{}", u64::MAX)).as_deref(), Some("6-0"));
        assert_eq!(next_id("garbage"), None);
        assert_eq!(
            redact("redis://user:secret@host:6379/0"),
            "redis://…@host:6379/0"
        );
        assert_eq!(redact("redis://host/"), "redis://host/");
    }

    #[test]
    fn malformed_entries_have_a_reason() {
        let mut fields = HashMap::new();
        assert!(decode(None).unwrap_err().contains("deleted"));
        assert!(decode(Some(&fields)).unwrap_err().contains("no field"));
        fields.insert(FIELD.to_string(), b"{\"source\": 1}".to_vec());
        assert!(decode(Some(&fields))
            .unwrap_err()
            .contains("not a submission"));
        fields.insert(FIELD.to_string(), vec![b'x'; 10_000]);
        assert!(raw_text(Some(&fields)).len() < 4200);
    }
}

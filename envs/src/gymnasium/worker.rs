//! The Python worker process: start, request/reply with a timeout on every read, stderr
//! capture, and kill on drop.
//!
//! The main thread reads replies straight from the worker's stdout (no hand-off between
//! threads on the hot path). A watchdog thread per worker enforces the timeouts: each request
//! arms a deadline, and a worker still silent at the deadline is killed, which closes its
//! stdout and so ends the blocked read. The watchdog sleeps until the current deadline and is
//! woken only when a new deadline comes earlier than the one it sleeps towards, so a stream of
//! fast steps costs it nothing. A second thread drains stderr into a bounded tail, which error
//! messages quote.

use std::ffi::OsString;
use std::io::{BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::protocol::{self, WorkerFailure};
use super::{ALE_PY_REQUIREMENT, GYMNASIUM_REQUIREMENT};
use crate::EnvError;

/// The worker script, embedded so that the bridge works from any working directory.
const WORKER_SCRIPT: &str = include_str!("../../python/privrl_gym_worker.py");

/// How long the reader of a reply spins before it blocks on the pipe, when it may (see
/// [`may_spin`]). A blocked reader's CPU goes idle, and on a virtual machine waking an idle
/// CPU costs tens of microseconds: on a quiet 2-core VM a blocking round trip over a pipe took
/// 39 µs, 2 µs with both sides spinning, and the bridge stepped AirRaid-ram at 0.69× the speed
/// of native Gymnasium blocking, 0.94× spinning (`cargo xtask bench --compare-gymnasium`).
/// 2 ms covers an Atari step; a longer wait costs this much CPU, then blocks. The spin does
/// not yield: yielding handed the CPU to a background process for a whole time slice (0.52×
/// native beside a niced training run).
const CALLER_SPIN: Duration = Duration::from_millis(2);

/// How long a worker spins for its next request before it blocks (passed to it as
/// `PRIVRL_WORKER_SPIN_US`), when it may: long enough for the caller to choose the next
/// action.
const WORKER_SPIN: Duration = Duration::from_micros(200);

/// The environment variable that turns the spinning off (`PRIVRL_BRIDGE_SPIN=0`), e.g. on a
/// machine whose cores are all busy with other work.
pub const SPIN_VARIABLE: &str = "PRIVRL_BRIDGE_SPIN";

/// Live workers of this process.
static LIVE_WORKERS: AtomicUsize = AtomicUsize::new(0);

/// One worker counted in [`LIVE_WORKERS`] for as long as this lives.
struct LiveWorker {
    /// The live workers, this one included, when it was counted.
    count: usize,
}

impl LiveWorker {
    fn new() -> Self {
        Self {
            count: LIVE_WORKERS.fetch_add(1, Ordering::Relaxed) + 1,
        }
    }
}

impl Drop for LiveWorker {
    fn drop(&mut self) {
        LIVE_WORKERS.fetch_sub(1, Ordering::Relaxed);
    }
}

/// The cores that spinners may count on, read once: the available parallelism, or 0 where
/// [`SPIN_VARIABLE`] is `0`, `off` or `false` (no one spins). Read once because it is asked at
/// every reply, and finding the parallelism reads the affinity mask and cgroup quota.
fn spin_cores() -> usize {
    static CORES: OnceLock<usize> = OnceLock::new();
    *CORES.get_or_init(|| {
        let off =
            std::env::var(SPIN_VARIABLE).is_ok_and(|v| matches!(v.trim(), "0" | "off" | "false"));
        if off {
            0
        } else {
            std::thread::available_parallelism().map_or(1, usize::from)
        }
    })
}

/// Spinning is allowed only while the caller and `live` workers can each have a core
/// (`live + 1 <= cores`): a spinner takes the CPU of anything that shares its core. On 2
/// cores, a `VecEnv` of 2 workers fell from 9,400 to 570 steps/s with a spinning caller, and
/// one of 4 from 6,700 to 4,000 with spinning workers; a single environment (caller and one
/// worker) spins.
fn may_spin(live: usize) -> bool {
    live < spin_cores()
}

/// Bytes of stderr kept for error messages.
const STDERR_TAIL_BYTES: usize = 4096;

/// How long to wait for a worker that closed its stdout to exit, and for its stderr to drain,
/// before killing it.
const EXIT_GRACE: Duration = Duration::from_secs(2);

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// What the watchdog thread and the main thread share.
#[derive(Default)]
struct WatchState {
    /// When the outstanding request times out; `None` when none is outstanding.
    deadline: Option<Instant>,
    /// When the watchdog will next look; `None` while it sleeps until notified.
    sleeping_until: Option<Instant>,
    /// The watchdog killed the worker for missing a deadline.
    fired: bool,
    /// The worker is being dropped; the watchdog exits.
    stop: bool,
}

struct Watchdog {
    state: Mutex<WatchState>,
    wake: Condvar,
}

impl Watchdog {
    fn arm(&self, timeout: Duration) {
        let deadline = Instant::now() + timeout;
        let mut state = lock(&self.state);
        state.deadline = Some(deadline);
        if state.sleeping_until.is_none_or(|until| deadline < until) {
            self.wake.notify_one();
        }
    }

    fn disarm(&self) {
        lock(&self.state).deadline = None;
    }

    fn fired(&self) -> bool {
        lock(&self.state).fired
    }

    fn stop(&self) {
        lock(&self.state).stop = true;
        self.wake.notify_one();
    }

    /// The watchdog thread: kills the worker when a deadline passes.
    fn run(&self, child: &Mutex<Child>) {
        let mut state = lock(&self.state);
        loop {
            if state.stop {
                return;
            }
            match state.deadline {
                Some(deadline) => {
                    let now = Instant::now();
                    if now >= deadline {
                        state.fired = true;
                        state.deadline = None;
                        drop(state);
                        // Killing closes the worker's stdout, which ends the main thread's read.
                        let _ = lock(child).kill();
                        state = lock(&self.state);
                    } else {
                        state.sleeping_until = Some(deadline);
                        state = self
                            .wake
                            .wait_timeout(state, deadline - now)
                            .unwrap_or_else(PoisonError::into_inner)
                            .0;
                    }
                }
                None => {
                    state.sleeping_until = None;
                    state = self
                        .wake
                        .wait(state)
                        .unwrap_or_else(PoisonError::into_inner);
                }
            }
        }
    }
}

/// Where the worker is started from and how.
pub(crate) struct Launch<'a> {
    /// Name for error messages, e.g. `gymnasium:CartPole-v1`.
    pub(crate) name: &'a str,
    pub(crate) python: &'a Path,
    /// Directories put in front of the worker's `PYTHONPATH`.
    pub(crate) python_path: &'a [PathBuf],
}

/// One running worker process.
pub(crate) struct Worker {
    name: String,
    python: String,
    pid: u32,
    child: Arc<Mutex<Child>>,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    stderr_tail: Arc<Mutex<Vec<u8>>>,
    stderr_thread: Option<JoinHandle<()>>,
    watchdog: Arc<Watchdog>,
    watchdog_thread: Option<JoinHandle<()>>,
    /// Reused request and reply buffers, so that a step allocates nothing.
    request: Vec<u8>,
    reply: Vec<u8>,
    /// Counts this worker in [`LIVE_WORKERS`] until it drops.
    _live: LiveWorker,
}

impl Worker {
    /// Starts `python -c <worker script>` with piped stdin, stdout and stderr.
    pub(crate) fn spawn(launch: &Launch<'_>) -> Result<Self, EnvError> {
        let python = launch.python.display().to_string();
        // Counted from here until the worker (or, if it fails to start, this guard) drops.
        let live = LiveWorker::new();
        let mut command = Command::new(launch.python);
        command
            .arg("-c")
            .arg(WORKER_SCRIPT)
            .env("PYTHONUNBUFFERED", "1")
            .env(
                "PRIVRL_WORKER_SPIN_US",
                if may_spin(live.count) {
                    WORKER_SPIN.as_micros().to_string()
                } else {
                    "0".to_string()
                },
            )
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        if !launch.python_path.is_empty() {
            let mut paths: Vec<PathBuf> = launch.python_path.to_vec();
            if let Some(existing) = std::env::var_os("PYTHONPATH") {
                paths.extend(std::env::split_paths(&existing));
            }
            let joined = std::env::join_paths(paths).unwrap_or_else(|_| OsString::new());
            command.env("PYTHONPATH", joined);
        }
        let mut child = command.spawn().map_err(|err| EnvError::PythonUnavailable {
            python: python.clone(),
            reason: err.to_string(),
            requirement: GYMNASIUM_REQUIREMENT.to_string(),
        })?;
        let pid = child.id();
        let (Some(stdin), Some(stdout), Some(mut stderr)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            let _ = child.kill();
            let _ = child.wait();
            return Err(EnvError::PythonUnavailable {
                python,
                reason: "its standard streams could not be piped".into(),
                requirement: GYMNASIUM_REQUIREMENT.to_string(),
            });
        };

        let stderr_tail = Arc::new(Mutex::new(Vec::new()));
        let tail = Arc::clone(&stderr_tail);
        let stderr_thread = std::thread::Builder::new()
            .name(format!("gym-stderr-{pid}"))
            .spawn(move || {
                let mut chunk = [0u8; 4096];
                while let Ok(n @ 1..) = stderr.read(&mut chunk) {
                    let mut tail = lock(&tail);
                    tail.extend_from_slice(&chunk[..n]);
                    let excess = tail.len().saturating_sub(STDERR_TAIL_BYTES);
                    tail.drain(..excess);
                }
            })
            .ok();

        let child = Arc::new(Mutex::new(child));
        let watchdog = Arc::new(Watchdog {
            state: Mutex::new(WatchState::default()),
            wake: Condvar::new(),
        });
        let (dog, watched) = (Arc::clone(&watchdog), Arc::clone(&child));
        let watchdog_thread = std::thread::Builder::new()
            .name(format!("gym-watchdog-{pid}"))
            .spawn(move || dog.run(&watched));
        let watchdog_thread = match watchdog_thread {
            Ok(handle) => handle,
            Err(err) => {
                let mut child = lock(&child);
                let _ = child.kill();
                let _ = child.wait();
                return Err(EnvError::PythonUnavailable {
                    python,
                    reason: format!("no thread to watch it: {err}"),
                    requirement: GYMNASIUM_REQUIREMENT.to_string(),
                });
            }
        };

        Ok(Self {
            name: launch.name.to_string(),
            python,
            pid,
            child,
            stdin,
            stdout: BufReader::with_capacity(1 << 16, stdout),
            stderr_tail,
            stderr_thread,
            watchdog,
            watchdog_thread: Some(watchdog_thread),
            request: Vec::with_capacity(64),
            reply: Vec::with_capacity(64),
            _live: live,
        })
    }

    /// The worker's process id.
    pub(crate) fn pid(&self) -> u32 {
        self.pid
    }

    /// The interpreter, as it was started.
    pub(crate) fn python(&self) -> &str {
        &self.python
    }

    /// Builds a request with `build` and sends it, without waiting for the reply.
    pub(crate) fn send(
        &mut self,
        during: &str,
        build: impl FnOnce(&mut Vec<u8>),
    ) -> Result<(), EnvError> {
        build(&mut self.request);
        let written = self
            .stdin
            .write_all(&self.request)
            .and_then(|()| self.stdin.flush());
        written.map_err(|_| self.transport_error(during, None))
    }

    /// Sends a request and waits at most `timeout` for its reply; see [`Worker::receive`].
    pub(crate) fn call(
        &mut self,
        during: &str,
        timeout: Duration,
        build: impl FnOnce(&mut Vec<u8>),
    ) -> Result<&[u8], EnvError> {
        self.send_armed(during, timeout, build)?;
        self.receive_armed(during, timeout)
    }

    /// Arms the watchdog for `timeout` and sends a request; [`Worker::receive_armed`] collects
    /// the reply. Armed before writing: a worker that stopped reading cannot block us either.
    pub(crate) fn send_armed(
        &mut self,
        during: &str,
        timeout: Duration,
        build: impl FnOnce(&mut Vec<u8>),
    ) -> Result<(), EnvError> {
        self.watchdog.arm(timeout);
        if let Err(err) = self.send(during, build) {
            self.watchdog.disarm();
            return Err(err);
        }
        Ok(())
    }

    /// Waits at most `timeout` for the next reply and returns its payload. An `E` reply
    /// becomes the matching [`EnvError`]; a worker that exits, closes its stdout or misses the
    /// deadline becomes [`EnvError::WorkerDied`] or [`EnvError::WorkerTimeout`] with its
    /// stderr, and is dead from then on.
    pub(crate) fn receive(&mut self, during: &str, timeout: Duration) -> Result<&[u8], EnvError> {
        self.watchdog.arm(timeout);
        self.receive_armed(during, timeout)
    }

    /// Waits for the reply to a request sent by [`Worker::send_armed`] (the watchdog, armed
    /// then, enforces `timeout`); replies and failures as for [`Worker::receive`].
    pub(crate) fn receive_armed(
        &mut self,
        during: &str,
        timeout: Duration,
    ) -> Result<&[u8], EnvError> {
        if may_spin(LIVE_WORKERS.load(Ordering::Relaxed)) {
            spin_until_readable(&self.stdout, CALLER_SPIN);
        }
        let read = read_frame(&mut self.stdout, &mut self.reply);
        self.watchdog.disarm();
        match read {
            Ok(protocol::OK) => Ok(&self.reply),
            Ok(protocol::ERROR) => Err(match WorkerFailure::parse(&self.reply) {
                Ok(failure) => self.failure_error(during, failure),
                Err(detail) => self.protocol_error(during, detail),
            }),
            Ok(tag) => Err(self.protocol_error(during, format!("unknown reply tag {tag}"))),
            Err(_) => Err(self.transport_error(during, Some(timeout))),
        }
    }

    /// Kills the worker (it broke the protocol) and describes what was wrong.
    pub(crate) fn protocol_error(&mut self, during: &str, detail: String) -> EnvError {
        self.kill();
        EnvError::WorkerProtocol {
            env: self.name.clone(),
            during: during.to_string(),
            detail,
        }
    }

    /// The error for a worker that has stopped answering: it missed the deadline (killed by
    /// the watchdog) or it exited.
    fn transport_error(&mut self, during: &str, timeout: Option<Duration>) -> EnvError {
        let status = self.wait_for_exit();
        let stderr = self.stderr_tail();
        match timeout {
            Some(timeout) if self.watchdog.fired() => EnvError::WorkerTimeout {
                env: self.name.clone(),
                during: during.to_string(),
                timeout_s: timeout.as_secs_f64(),
                stderr,
            },
            _ => EnvError::WorkerDied {
                env: self.name.clone(),
                during: during.to_string(),
                status,
                stderr,
            },
        }
    }

    fn failure_error(&self, during: &str, failure: WorkerFailure) -> EnvError {
        match failure.kind {
            protocol::KIND_MISSING_MODULE => EnvError::PythonPackageMissing {
                python: self.python.clone(),
                requirement: pip_requirement(&failure.detail),
                module: failure.detail,
                detail: failure.message,
            },
            protocol::KIND_UNSUPPORTED_SPACE => {
                let supported = if failure.detail == "action" {
                    "Discrete (with any start)"
                } else {
                    "Box (any shape and dtype, flattened to f32) and Discrete (one-hot)"
                };
                EnvError::UnsupportedSpace {
                    env: self.name.clone(),
                    which: failure.detail,
                    space: failure.message,
                    supported: supported.to_string(),
                }
            }
            protocol::KIND_EXCEPTION => EnvError::GymnasiumException {
                env: self.name.clone(),
                during: during.to_string(),
                exception: failure.detail,
                message: failure.message,
            },
            kind => EnvError::WorkerProtocol {
                env: self.name.clone(),
                during: during.to_string(),
                detail: format!(
                    "the worker refused the request (kind {kind}, {}): {}",
                    failure.detail, failure.message
                ),
            },
        }
    }

    /// Waits briefly for the worker to exit (killing it if it does not) and describes how it
    /// ended.
    fn wait_for_exit(&mut self) -> String {
        let start = Instant::now();
        let mut child = lock(&self.child);
        loop {
            match child.try_wait() {
                Ok(Some(status)) => return status.to_string(),
                Ok(None) if start.elapsed() < EXIT_GRACE => {
                    drop(child);
                    std::thread::sleep(Duration::from_millis(10));
                    child = lock(&self.child);
                }
                Ok(None) => {
                    let _ = child.kill();
                    return match child.wait() {
                        Ok(status) => format!("closed its output, then killed: {status}"),
                        Err(err) => format!("closed its output, then killed: {err}"),
                    };
                }
                Err(err) => return format!("exit status unknown: {err}"),
            }
        }
    }

    /// The last lines the worker wrote to stderr, once the stream has drained (bounded wait).
    fn stderr_tail(&mut self) -> String {
        if let Some(handle) = self.stderr_thread.take() {
            let start = Instant::now();
            while !handle.is_finished() && start.elapsed() < EXIT_GRACE {
                std::thread::sleep(Duration::from_millis(5));
            }
            if handle.is_finished() {
                let _ = handle.join();
            } else {
                self.stderr_thread = Some(handle);
            }
        }
        let tail = lock(&self.stderr_tail);
        let text = String::from_utf8_lossy(&tail);
        let text = text.trim();
        if text.is_empty() {
            "(nothing on stderr)".to_string()
        } else {
            text.to_string()
        }
    }

    fn kill(&mut self) {
        let mut child = lock(&self.child);
        let _ = child.kill();
        let _ = child.wait();
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        // The worker holds no state worth a graceful exit (it would exit on `Q` or at the end
        // of its input too); killing it is immediate.
        self.kill();
        self.watchdog.stop();
        if let Some(handle) = self.watchdog_thread.take() {
            let _ = handle.join();
        }
        // The stderr thread ends by itself at end of stream; it is not joined, so that a
        // grandchild holding stderr open cannot block the drop.
    }
}

/// Returns once `reader` has data (buffered or in the pipe), the pipe is closed, or `budget`
/// has passed; see [`CALLER_SPIN`].
#[cfg(unix)]
fn spin_until_readable(reader: &BufReader<ChildStdout>, budget: Duration) {
    use std::os::fd::AsRawFd;
    if !reader.buffer().is_empty() {
        return;
    }
    let mut poll = libc::pollfd {
        fd: reader.get_ref().as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    let start = Instant::now();
    loop {
        // SAFETY: one initialised pollfd for a descriptor `reader` owns; a zero timeout
        // returns at once.
        let ready = unsafe { libc::poll(&mut poll, 1, 0) };
        // Ready (data, hang-up or error: the read that follows reports it), a failed poll
        // (the blocking read decides), or out of budget.
        if ready != 0 || start.elapsed() >= budget {
            return;
        }
        std::hint::spin_loop();
    }
}

/// Elsewhere the read blocks at once.
#[cfg(not(unix))]
fn spin_until_readable(_reader: &BufReader<ChildStdout>, _budget: Duration) {}

/// Reads one frame into `payload` and returns its tag.
fn read_frame(stdout: &mut impl Read, payload: &mut Vec<u8>) -> std::io::Result<u8> {
    let mut header = [0u8; protocol::HEADER_LEN];
    stdout.read_exact(&mut header)?;
    let len = u32::from_le_bytes([header[1], header[2], header[3], header[4]]) as usize;
    payload.resize(len, 0);
    stdout.read_exact(payload)?;
    Ok(header[0])
}

/// The pip requirement that provides a Python module.
fn pip_requirement(module: &str) -> String {
    match module {
        // NumPy comes with Gymnasium.
        "gymnasium" | "numpy" => GYMNASIUM_REQUIREMENT.to_string(),
        "ale_py" => ALE_PY_REQUIREMENT.to_string(),
        other => other.replace('_', "-"),
    }
}

"""privrl's Gymnasium worker: one Gymnasium environment behind a little binary protocol.

privrl-envs (cargo feature `gymnasium`) starts this script as `python -c <this file>` and
talks to it over stdin/stdout. Nothing here is meant to be run by hand; the Rust side,
`envs/src/gymnasium/protocol.rs`, is the other half and documents the same format.

Every frame, in both directions, is `u8 tag | u32 length | length bytes of payload`, all
little-endian. Strings are `u32 length | UTF-8`.

Requests (Rust -> worker):
    b"M" make       str id | u32 count | count x (str key | value)
                    value: u8 type (0 None, 1 bool as u8, 2 int as i64, 3 float as f64,
                    4 str) then the payload
    b"R" reset      u8 has_seed | u64 seed
    b"S" step       i64 action (Gymnasium's, so `start` is already added)
    b"T" set_state  u32 count | count x f64 (written to `env.unwrapped.state` after a reset)
    b"Q" quit       (empty); the worker exits 0

Replies (worker -> Rust): b"K" (ok) or b"E" (error).
    hello (sent unasked at start)   u32 protocol version | str versions
    make       str resolved | i64 max_episode_steps (-1: none) | space obs | space action
               space: u8 0 = Discrete: i64 n | i64 start
                      u8 1 = Box: u32 ndim | ndim x u32 shape | str dtype |
                             count x f32 low | count x f32 high
    reset, set_state   count x f32 observation
    step       f64 reward | u8 flags (1: terminated, 2: truncated) | count x f32 observation
    error      u8 kind | str detail | str message
               kind 1: a Python exception (detail: its type name)
               kind 2: a module that cannot be imported (detail: the module's name)
               kind 3: a space the bridge does not support (detail: "observation" or "action";
                       message: the space's repr)
               kind 4: a request the worker does not understand (detail: the tag)

Observations are flattened to float32 in C order. A Discrete observation becomes a one-hot
vector of length n (as `gymnasium.spaces.flatten` does), index `obs - start`.

The protocol stream uses private copies of file descriptors 0 and 1; fd 1 itself is pointed
at stderr, so a stray `print` in an environment (or ALE's banner) cannot corrupt it.
"""

import os
import re
import select
import struct
import sys
import time
import traceback

PROTOCOL_VERSION = 1

KIND_EXCEPTION = 1
KIND_MISSING_MODULE = 2
KIND_UNSUPPORTED_SPACE = 3
KIND_BAD_REQUEST = 4

HEADER = struct.Struct("<BI")
U32 = struct.Struct("<I")
I64 = struct.Struct("<q")
U64 = struct.Struct("<Q")
F64 = struct.Struct("<d")
RESET = struct.Struct("<BQ")
STEP_HEAD = struct.Struct("<dB")

# Old Gym's RAM ids, e.g. `AirRaid-ram-v0`: ale-py >= 0.9 registers `AirRaid-v0` and takes
# `obs_type="ram"` instead, which is the same environment.
LEGACY_RAM_ID = re.compile(
    r"^(?P<game>[A-Za-z0-9]+)-ram(?P<noframeskip>NoFrameskip)?-v(?P<version>[04])$"
)


class WorkerError(Exception):
    """An error to send back as an `E` frame."""

    def __init__(self, kind, detail, message):
        super().__init__(message)
        self.kind = kind
        self.detail = detail
        self.message = message


def pack_str(text):
    data = text.encode("utf-8", "replace")
    return U32.pack(len(data)) + data


class Reader:
    """Reads the fields of one request payload in order."""

    def __init__(self, payload):
        self.payload = payload
        self.offset = 0

    def take(self, fmt):
        values = fmt.unpack_from(self.payload, self.offset)
        self.offset += fmt.size
        return values[0] if len(values) == 1 else values

    def string(self):
        length = self.take(U32)
        data = self.payload[self.offset : self.offset + length]
        self.offset += length
        return bytes(data).decode("utf-8")

    def value(self):
        kind = self.payload[self.offset]
        self.offset += 1
        if kind == 0:
            return None
        if kind == 1:
            value = self.payload[self.offset] != 0
            self.offset += 1
            return value
        if kind == 2:
            return self.take(I64)
        if kind == 3:
            return self.take(F64)
        if kind == 4:
            return self.string()
        raise WorkerError(KIND_BAD_REQUEST, "M", f"unknown keyword value type {kind}")


def encode_space(space, which, np, spaces):
    if isinstance(space, spaces.Discrete):
        return bytes([0]) + I64.pack(int(space.n)) + I64.pack(int(space.start))
    if isinstance(space, spaces.Box) and which == "observation":
        low = np.asarray(space.low, dtype="<f4").reshape(-1)
        high = np.asarray(space.high, dtype="<f4").reshape(-1)
        shape = b"".join(U32.pack(int(d)) for d in space.shape)
        return (
            bytes([1])
            + U32.pack(len(space.shape))
            + shape
            + pack_str(str(space.dtype))
            + low.tobytes()
            + high.tobytes()
        )
    raise WorkerError(KIND_UNSUPPORTED_SPACE, which, repr(space))


class Worker:
    def __init__(self, gym, np):
        self.gym = gym
        self.np = np
        self.env = None
        self.obs_kind = None
        self.onehot = None
        self.discrete_start = 0

    # --- make ---------------------------------------------------------------------------
    def ensure_registered(self, env_id):
        """Registers ale-py's Atari ids when `env_id` is not known yet."""
        gym = self.gym
        if ":" in env_id or env_id in gym.registry:
            return
        try:
            import ale_py
        except ModuleNotFoundError as err:
            if err.name != "ale_py":
                raise
            if env_id.startswith("ALE/") or LEGACY_RAM_ID.match(env_id):
                raise WorkerError(
                    KIND_MISSING_MODULE,
                    "ale_py",
                    f"`{env_id}` is an Atari environment, which needs ale-py",
                ) from None
            return
        gym.register_envs(ale_py)

    def make(self, payload):
        reader = Reader(payload)
        env_id = reader.string()
        kwargs = {}
        for _ in range(reader.take(U32)):
            key = reader.string()
            kwargs[key] = reader.value()
        self.ensure_registered(env_id)
        resolved = env_id
        legacy = LEGACY_RAM_ID.match(env_id)
        if legacy and env_id not in self.gym.registry:
            resolved = f"{legacy['game']}{legacy['noframeskip'] or ''}-v{legacy['version']}"
            kwargs.setdefault("obs_type", "ram")
        env = self.gym.make(resolved, **kwargs)
        obs_space = encode_space(env.observation_space, "observation", self.np, self.gym.spaces)
        act_space = encode_space(env.action_space, "action", self.np, self.gym.spaces)
        if self.env is not None:
            self.env.close()
        self.env = env
        if isinstance(env.observation_space, self.gym.spaces.Discrete):
            self.onehot = self.np.zeros(int(env.observation_space.n), dtype="<f4")
            self.discrete_start = int(env.observation_space.start)
        else:
            self.onehot = None
        spec = env.spec
        max_steps = spec.max_episode_steps if spec is not None else None
        described = resolved
        if kwargs:
            described += " with " + ", ".join(f"{k}={v!r}" for k, v in kwargs.items())
        return (
            pack_str(described)
            + I64.pack(-1 if max_steps is None else int(max_steps))
            + obs_space
            + act_space
        )

    # --- episodes -----------------------------------------------------------------------
    def obs_bytes(self, obs):
        if self.onehot is not None:
            self.onehot.fill(0.0)
            self.onehot[int(obs) - self.discrete_start] = 1.0
            return self.onehot.tobytes()
        return self.np.asarray(obs, dtype="<f4").tobytes()

    def require_env(self):
        if self.env is None:
            raise WorkerError(KIND_BAD_REQUEST, "", "no environment: send make first")
        return self.env

    def reset(self, payload):
        env = self.require_env()
        has_seed, seed = RESET.unpack_from(payload)
        obs, _info = env.reset(seed=seed if has_seed else None)
        return self.obs_bytes(obs)

    def step(self, payload):
        env = self.require_env()
        (action,) = I64.unpack_from(payload)
        obs, reward, terminated, truncated, _info = env.step(action)
        flags = (1 if terminated else 0) | (2 if truncated else 0)
        return STEP_HEAD.pack(float(reward), flags) + self.obs_bytes(obs)

    def set_state(self, payload):
        env = self.require_env()
        np = self.np
        reader = Reader(payload)
        count = reader.take(U32)
        values = np.frombuffer(payload, dtype="<f8", count=count, offset=reader.offset)
        unwrapped = env.unwrapped
        # A reset first, so that TimeLimit's step counter restarts at 0.
        env.reset()
        state = getattr(unwrapped, "state", None)
        if state is None:
            raise WorkerError(
                KIND_EXCEPTION,
                "AttributeError",
                f"set_state needs an environment whose unwrapped env has a `state` array "
                f"(classic control); {type(unwrapped).__name__} has none",
            )
        old = np.asarray(state)
        if old.size != count:
            raise WorkerError(
                KIND_EXCEPTION,
                "ValueError",
                f"set_state got {count} values; {type(unwrapped).__name__}.state has {old.size}",
            )
        unwrapped.state = np.array(values, dtype=np.float64).reshape(old.shape)
        for getter in ("_get_ob", "_get_obs"):
            if hasattr(unwrapped, getter):
                return self.obs_bytes(getattr(unwrapped, getter)())
        return self.obs_bytes(np.array(unwrapped.state, dtype=np.float32))


def error_frame(kind, detail, message):
    payload = bytes([kind]) + pack_str(detail) + pack_str(message)
    return HEADER.pack(ord("E"), len(payload)) + payload


def exception_frame(err):
    if isinstance(err, WorkerError):
        return error_frame(err.kind, err.detail, err.message)
    if isinstance(err, ModuleNotFoundError) and err.name:
        return error_frame(KIND_MISSING_MODULE, err.name, str(err))
    # Gymnasium's own hint for missing extras (e.g. `pip install "gymnasium[box2d]"`).
    message = str(err) or type(err).__name__
    return error_frame(KIND_EXCEPTION, type(err).__name__, message)


# How long to spin for the next request before blocking on the pipe, in seconds: the Rust
# side passes PRIVRL_WORKER_SPIN_US (0: block at once). A blocked process's CPU goes idle, and
# waking an idle CPU on a virtual machine costs tens of microseconds per request; see
# WORKER_SPIN in envs/src/gymnasium/worker.rs for the measurements.
SPIN_SECONDS = int(os.environ.get("PRIVRL_WORKER_SPIN_US", "0") or 0) * 1e-6


def wait_readable(poller, budget):
    """Returns once the polled stream is readable (or closed) or `budget` seconds passed.

    The loop does not yield: `sched_yield` would hand the CPU to any background process for a
    whole time slice."""
    if budget <= 0:
        return
    deadline = time.perf_counter() + budget
    while not poller.poll(0):
        if time.perf_counter() >= deadline:
            return


def read_exact(stream, size):
    data = stream.read(size)
    if data is None or len(data) < size:
        return None
    return data


def main():
    # Private copies of the protocol streams; fd 1 now goes to stderr, fd 0 to /dev/null.
    proto_in = os.fdopen(os.dup(0), "rb", buffering=1 << 16)
    proto_out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    sys.stdout = sys.stderr

    def send(frame):
        proto_out.write(frame)
        proto_out.flush()

    try:
        import gymnasium as gym
        import numpy as np
    except ModuleNotFoundError as err:
        send(error_frame(KIND_MISSING_MODULE, err.name or "gymnasium", str(err)))
        return 1

    versions = (
        f"python {sys.version.split()[0]}; gymnasium {gym.__version__}; numpy {np.__version__}"
    )
    hello = U32.pack(PROTOCOL_VERSION) + pack_str(versions)
    send(HEADER.pack(ord("K"), len(hello)) + hello)

    worker = Worker(gym, np)
    handlers = {
        ord("M"): worker.make,
        ord("R"): worker.reset,
        ord("S"): worker.step,
        ord("T"): worker.set_state,
    }
    ok = ord("K")
    poller = select.poll()
    poller.register(proto_in.fileno(), select.POLLIN)
    while True:
        # Bytes already in proto_in's buffer are not seen by the poll: then the spin only
        # waits out its budget before the read returns them (the Rust side sends one request
        # at a time, so the buffer is empty here).
        wait_readable(poller, SPIN_SECONDS)
        header = read_exact(proto_in, HEADER.size)
        if header is None:
            return 0  # the Rust side closed our stdin
        tag, length = HEADER.unpack(header)
        payload = read_exact(proto_in, length) if length else b""
        if payload is None:
            return 0
        if tag == ord("Q"):
            return 0
        handler = handlers.get(tag)
        try:
            if handler is None:
                raise WorkerError(KIND_BAD_REQUEST, chr(tag), f"unknown request tag {tag}")
            reply = handler(payload)
        except Exception as err:  # noqa: BLE001 - every error goes back to Rust
            traceback.print_exc(file=sys.stderr)
            send(exception_frame(err))
            continue
        send(HEADER.pack(ok, len(reply)) + reply)


if __name__ == "__main__":
    sys.exit(main())

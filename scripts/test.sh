#!/usr/bin/env bash
# privrl's test command (the README's): sets up what the tests need on a fresh Debian machine,
# then runs every test, the wgpu ones on Mesa's lavapipe CPU Vulkan where no GPU is present.
set -euo pipefail
cd "$(dirname "$0")/.."

# The same feature set for every step, so that Burn is compiled once.
# privrl-envs/gymnasium: the Gymnasium bridge and its tests (envs/tests/gymnasium_bridge.rs).
FEATURES="privrl-agents/wgpu,xtask/wgpu,privrl-envs/gymnasium"

# Python for the Gymnasium bridge: a venv at .venv (git-ignored), which the bridge finds by
# itself, with the versions it was tested with (privrl_envs::gymnasium::GYMNASIUM_REQUIREMENT
# and ALE_PY_REQUIREMENT; ale-py's wheel carries the Atari ROMs, about 9 MB). Once it is set
# up, PRIVRL_REQUIRE_GYMNASIUM=1 makes the bridge tests fail rather than skip. Without Python
# (or without PyPI) they skip with a message, unless PRIVRL_REQUIRE_GYMNASIUM=1 was set by
# the caller (CI), which makes a failed set-up fatal here.
GYM_PIP="gymnasium==1.4.0 ale-py==0.12.1"
venv_ok() { .venv/bin/python -m pip --version >/dev/null 2>&1; }
setup_venv() {
  command -v python3 >/dev/null || { echo "no python3 on PATH" >&2; return 1; }
  if ! venv_ok; then
    rm -rf .venv
    if ! python3 -m venv .venv; then
      # Debian's python3 needs python3-venv (ensurepip) for this.
      if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
        echo "==> installing python3-venv"
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv >/dev/null
        rm -rf .venv
        python3 -m venv .venv || return 1
      else
        return 1
      fi
    fi
  fi
  # shellcheck disable=SC2086 # GYM_PIP is a list of requirements
  .venv/bin/python -m pip install -q --disable-pip-version-check $GYM_PIP
}
venv_start=$(date +%s)
echo "==> python venv .venv: $GYM_PIP (for the Gymnasium bridge tests)"
if setup_venv; then
  export PRIVRL_REQUIRE_GYMNASIUM=1
  echo "    ready in $(( $(date +%s) - venv_start ))s: $(.venv/bin/python --version)"
elif [ "${PRIVRL_REQUIRE_GYMNASIUM:-}" = 1 ]; then
  echo "error: could not set up .venv with $GYM_PIP, and PRIVRL_REQUIRE_GYMNASIUM=1" >&2
  exit 1
else
  echo "warning: no .venv with $GYM_PIP; the Gymnasium bridge tests will be skipped" >&2
fi

if [ -z "$(ls /usr/share/vulkan/icd.d/*.json 2>/dev/null)" ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "==> installing mesa-vulkan-drivers (lavapipe: a CPU Vulkan for the wgpu tests)"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq mesa-vulkan-drivers >/dev/null
  else
    echo "warning: no Vulkan driver; install mesa-vulkan-drivers or the wgpu tests fail" >&2
  fi
fi

# Redis for the PGC multi-process test (xtask/tests/pgc_redis.rs): Debian's redis-server on a
# loopback port, no persistence, stopped on exit. Without it that test skips with a message,
# unless PRIVRL_REQUIRE_REDIS=1 was set by the caller (CI), which makes a missing server fatal.
if ! command -v redis-server >/dev/null; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "==> installing redis-server (for the PGC multi-process test)"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server >/dev/null
  fi
fi
redis_dir=""
stop_redis() {
  if [ -n "$redis_dir" ] && [ -f "$redis_dir/redis.pid" ]; then
    kill "$(cat "$redis_dir/redis.pid")" 2>/dev/null || true
  fi
  [ -z "$redis_dir" ] || rm -rf "$redis_dir"
}
if command -v redis-server >/dev/null; then
  redis_port=$(( 6390 + RANDOM % 2000 ))
  redis_dir=$(mktemp -d)
  if redis-server --port "$redis_port" --bind 127.0.0.1 --save '' --appendonly no \
      --daemonize yes --pidfile "$redis_dir/redis.pid" --dir "$redis_dir" \
      --logfile "$redis_dir/redis.log" >/dev/null; then
    for _ in $(seq 50); do
      redis-cli -p "$redis_port" ping >/dev/null 2>&1 && break
      sleep 0.1
    done
    export PRIVRL_REDIS_URL="redis://127.0.0.1:$redis_port/"
    echo "==> redis-server on $PRIVRL_REDIS_URL"
  fi
fi
if [ -z "${PRIVRL_REDIS_URL:-}" ]; then
  if [ "${PRIVRL_REQUIRE_REDIS:-}" = 1 ]; then
    echo "error: no redis-server, and PRIVRL_REQUIRE_REDIS=1" >&2
    exit 1
  fi
  echo "warning: no redis-server; the PGC Redis test will be skipped" >&2
fi

log=$(mktemp)
trap 'rm -f "$log"; stop_redis' EXIT

# Tests run at cargo's default parallelism: privrl's autodiff sections
# (privrl_agents::autodiff) make concurrent graphs in one process safe, and
# agents/tests/concurrency.rs checks it.

echo "==> cargo test (CPU backend: ndarray)"
cargo test --workspace --features "$FEATURES" -- --skip wgpu 2>&1 | tee -a "$log"

echo "==> cargo test wgpu (lavapipe where there is no GPU)"
cargo test --workspace --features "$FEATURES" -- wgpu 2>&1 | tee -a "$log"

# One closing line over every test binary.
awk '/^test result:/ { for (i = 1; i <= NF; i++) { if ($(i+1) ~ /^passed/) p += $i; if ($(i+1) ~ /^failed/) f += $i } }
     END { printf "tests: %d passed, %d failed\n", p, f }' "$log"

#!/usr/bin/env bash
# privrl's test command (the README's): sets up what the tests need on a fresh Debian machine,
# then runs every test, the wgpu ones on Mesa's lavapipe CPU Vulkan where no GPU is present.
set -euo pipefail
cd "$(dirname "$0")/.."

# The same feature set for every step, so that Burn is compiled once.
FEATURES="privrl-agents/wgpu,xtask/wgpu"

if [ -z "$(ls /usr/share/vulkan/icd.d/*.json 2>/dev/null)" ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "==> installing mesa-vulkan-drivers (lavapipe: a CPU Vulkan for the wgpu tests)"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq mesa-vulkan-drivers >/dev/null
  else
    echo "warning: no Vulkan driver; install mesa-vulkan-drivers or the wgpu tests fail" >&2
  fi
fi

log=$(mktemp)
trap 'rm -f "$log"' EXIT

echo "==> cargo test (CPU backend: ndarray)"
cargo test --workspace --features "$FEATURES" -- --skip wgpu 2>&1 | tee -a "$log"

echo "==> cargo test wgpu (lavapipe where there is no GPU)"
cargo test --workspace --features "$FEATURES" -- wgpu 2>&1 | tee -a "$log"

# One closing line over every test binary.
awk '/^test result:/ { for (i = 1; i <= NF; i++) { if ($(i+1) ~ /^passed/) p += $i; if ($(i+1) ~ /^failed/) f += $i } }
     END { printf "tests: %d passed, %d failed\n", p, f }' "$log"

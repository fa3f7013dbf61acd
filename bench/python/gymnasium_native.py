"""Native Gymnasium throughput: the reference for privrl's Gymnasium bridge.

`cargo xtask bench --compare-gymnasium` runs this script first, then the same environment
through privrl's bridge (`gymnasium:<spec>`), and reports the ratio. Both sides take uniformly
random actions from a seeded generator and reset on `terminated or truncated`; this side calls
`gymnasium.make` and `env.step` directly, with no protocol, no copy and no conversion.

    python gymnasium_native.py --spec 'ALE/AirRaid-v5?obs_type=ram' --steps 20000

`--spec` is the part of a privrl name after `gymnasium:`: an id, then `?key=value&...`
keyword arguments for `gymnasium.make`, typed as privrl's `KwargValue::parse` types them
(quoted text is a string; true/false/none; integers; floats; anything else a string). A
`#...` suffix (privrl's own options, e.g. `#obs_scale=1/255`) is ignored: it does not reach
Gymnasium.

Prints one line: `GYMNASIUM_NATIVE steps=<n> seconds=<s> steps_per_s=<n/s> versions=<...>`.
"""

import argparse
import time


def parse_value(text):
    """A keyword argument's value as privrl's `KwargValue::parse` reads it."""
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'":
        return text[1:-1]
    if text in ("true", "True"):
        return True
    if text in ("false", "False"):
        return False
    if text in ("none", "None"):
        return None
    try:
        return int(text)
    except ValueError:
        pass
    try:
        return float(text)
    except ValueError:
        return text


def parse_spec(spec):
    """`(id, kwargs)` of `id?key=value&...` (a `#...` suffix dropped)."""
    spec = spec.split("#", 1)[0]
    env_id, _, query = spec.partition("?")
    kwargs = {}
    for pair in filter(None, query.split("&")):
        key, sep, value = pair.partition("=")
        if not sep:
            raise SystemExit(f"keyword argument without '=': {pair!r}")
        kwargs[key] = parse_value(value)
    return env_id, kwargs


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--spec", required=True, help="id?key=value&... (privrl's name less 'gymnasium:')")
    parser.add_argument("--steps", type=int, default=20_000, help="timed environment steps")
    parser.add_argument("--seed", type=int, default=0, help="seed of the reset and the actions")
    args = parser.parse_args()
    if args.steps <= 0:
        raise SystemExit("--steps must be positive")

    import gymnasium as gym
    import numpy as np

    versions = [f"gymnasium-{gym.__version__}", f"numpy-{np.__version__}"]
    env_id, kwargs = parse_spec(args.spec)
    if env_id.startswith("ALE/"):
        import ale_py

        gym.register_envs(ale_py)
        versions.append(f"ale-py-{ale_py.__version__}")
    env = gym.make(env_id, **kwargs)
    n = int(env.action_space.n)
    rng = np.random.default_rng(args.seed)
    actions = rng.integers(n, size=args.steps).tolist()
    env.reset(seed=args.seed)
    start = time.perf_counter()
    for action in actions:
        _, _, terminated, truncated, _ = env.step(action)
        if terminated or truncated:
            env.reset()
    seconds = time.perf_counter() - start
    env.close()
    print(
        f"GYMNASIUM_NATIVE steps={args.steps} seconds={seconds:.4f} "
        f"steps_per_s={args.steps / seconds:.1f} versions={','.join(versions)}"
    )


if __name__ == "__main__":
    main()

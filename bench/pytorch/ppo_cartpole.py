"""privrl's PPO in PyTorch, for timing the two side by side (`cargo xtask bench --compare-pytorch`).

The same algorithm, step for step, as `agents/src/ppo/` with `PpoConfig::new()` (Spinning Up's
PyTorch PPO, `spinup/algos/pytorch/ppo/ppo.py`):

- one CartPole-v1, in process: a pure-Python port of privrl's `envs/src/cartpole.rs` (itself a
  line-by-line port of Gymnasium's), not `gymnasium.make`, so that both sides pay the same kind
  of environment cost (a few arithmetic operations per step, no wrappers, no checks);
- separate actor and critic, (64, 64) tanh MLPs, PyTorch's default `nn.Linear` initialisation;
- 4000 environment steps per epoch, episodes capped at 1000 steps, the trajectory in progress
  cut and bootstrapped with V(s_T) at the epoch's end, Gymnasium's `truncated` bootstrapped too;
- acting as Spinning Up does: one batch-1 forward of the actor and of the critic per step under
  `torch.no_grad()`, a categorical sample, log pi(a|s);
- GAE-lambda (gamma 0.99, lambda 0.97) advantages normalised over the epoch, rewards-to-go as
  the critic's targets;
- the update: up to 80 full-batch Adam steps (lr 3e-4) on the clipped surrogate (eps = 0.2),
  stopping before the step at which the approximate KL exceeds 1.5 x 0.01, then 80 full-batch
  Adam steps (lr 1e-3) on the value loss.

One warm-up epoch, then `--epochs` timed epochs end to end (rollout and update), as
privrl's `PpoThroughput` does. Prints one machine-readable line:

    PPO_PYTORCH steps_per_s=<float> epochs=<n> steps=<n> policy_iters=<mean> threads=<n> torch=<version>

    python bench/pytorch/ppo_cartpole.py --epochs 3 [--threads N] [--hidden 64]
"""

import argparse
import math
import random
import time

import numpy as np
import torch
import torch.nn as nn


class CartPole:
    """privrl's `CartPole` (Gymnasium's CartPole-v1 and its 500-step TimeLimit)."""

    gravity = 9.8
    masscart = 1.0
    masspole = 0.1
    total_mass = masspole + masscart
    length = 0.5
    polemass_length = masspole * length
    force_mag = 10.0
    tau = 0.02
    theta_threshold_radians = 12 * 2 * math.pi / 360
    x_threshold = 2.4
    max_episode_steps = 500

    def __init__(self, seed):
        self.rng = random.Random(seed)
        self.state = [0.0, 0.0, 0.0, 0.0]
        self.steps = 0

    def reset(self):
        self.state = [self.rng.uniform(-0.05, 0.05) for _ in range(4)]
        self.steps = 0
        return np.array(self.state, dtype=np.float32)

    def step(self, action):
        x, x_dot, theta, theta_dot = self.state
        force = self.force_mag if action == 1 else -self.force_mag
        costheta = math.cos(theta)
        sintheta = math.sin(theta)
        temp = (force + self.polemass_length * (theta_dot * theta_dot) * sintheta) / self.total_mass
        thetaacc = (self.gravity * sintheta - costheta * temp) / (
            self.length * (4.0 / 3.0 - self.masspole * (costheta * costheta) / self.total_mass)
        )
        xacc = temp - self.polemass_length * thetaacc * costheta / self.total_mass
        x += self.tau * x_dot
        x_dot += self.tau * xacc
        theta += self.tau * theta_dot
        theta_dot += self.tau * thetaacc
        self.state = [x, x_dot, theta, theta_dot]
        self.steps += 1
        terminated = (
            x < -self.x_threshold
            or x > self.x_threshold
            or theta < -self.theta_threshold_radians
            or theta > self.theta_threshold_radians
        )
        truncated = self.steps >= self.max_episode_steps
        return np.array(self.state, dtype=np.float32), 1.0, terminated, truncated


def mlp(sizes):
    layers = []
    for j in range(len(sizes) - 1):
        layers.append(nn.Linear(sizes[j], sizes[j + 1]))
        if j < len(sizes) - 2:
            layers.append(nn.Tanh())
    return nn.Sequential(*layers)


def discount_cumsum(x, discount):
    out = np.zeros_like(x)
    running = 0.0
    for t in range(len(x) - 1, -1, -1):
        running = x[t] + discount * running
        out[t] = running
    return out


class Buffer:
    def __init__(self, obs_dim, size, gamma=0.99, lam=0.97):
        self.obs = np.zeros((size, obs_dim), dtype=np.float32)
        self.act = np.zeros(size, dtype=np.int64)
        self.rew = np.zeros(size, dtype=np.float64)
        self.val = np.zeros(size, dtype=np.float64)
        self.logp = np.zeros(size, dtype=np.float32)
        self.adv = np.zeros(size, dtype=np.float64)
        self.ret = np.zeros(size, dtype=np.float64)
        self.gamma, self.lam = gamma, lam
        self.ptr, self.path_start = 0, 0

    def store(self, obs, act, rew, val, logp):
        self.obs[self.ptr] = obs
        self.act[self.ptr] = act
        self.rew[self.ptr] = rew
        self.val[self.ptr] = val
        self.logp[self.ptr] = logp
        self.ptr += 1

    def finish_path(self, last_val):
        path = slice(self.path_start, self.ptr)
        rews = np.append(self.rew[path], last_val)
        vals = np.append(self.val[path], last_val)
        deltas = rews[:-1] + self.gamma * vals[1:] - vals[:-1]
        self.adv[path] = discount_cumsum(deltas, self.gamma * self.lam)
        self.ret[path] = discount_cumsum(rews, self.gamma)[:-1]
        self.path_start = self.ptr

    def get(self):
        n = self.ptr
        adv = self.adv[:n]
        adv = (adv - adv.mean()) / (adv.std() if adv.std() > 0 else 1.0)
        data = dict(
            obs=torch.as_tensor(self.obs[:n]),
            act=torch.as_tensor(self.act[:n]),
            adv=torch.as_tensor(adv, dtype=torch.float32),
            ret=torch.as_tensor(self.ret[:n], dtype=torch.float32),
            logp=torch.as_tensor(self.logp[:n]),
        )
        self.ptr, self.path_start = 0, 0
        return data


class Ppo:
    def __init__(self, hidden, seed, steps_per_epoch=4000):
        torch.manual_seed(seed)
        self.env = CartPole(seed)
        self.actor = mlp([4, *hidden, 2])
        self.critic = mlp([4, *hidden, 1])
        self.pi_optim = torch.optim.Adam(self.actor.parameters(), lr=3e-4)
        self.v_optim = torch.optim.Adam(self.critic.parameters(), lr=1e-3)
        self.steps_per_epoch = steps_per_epoch
        self.buf = Buffer(4, steps_per_epoch)
        self.obs = self.env.reset()
        self.ep_len = 0
        self.env_steps = 0
        self.policy_iters = []

    def rollout(self):
        steps = self.steps_per_epoch
        for t in range(steps):
            o = self.obs
            with torch.no_grad():
                obs = torch.as_tensor(o)
                pi = torch.distributions.Categorical(logits=self.actor(obs))
                a = pi.sample()
                logp = pi.log_prob(a).item()
                v = self.critic(obs).item()
                a = a.item()
            o2, r, terminated, truncated = self.env.step(a)
            self.env_steps += 1
            self.ep_len += 1
            self.buf.store(o, a, r, v, logp)
            self.obs = o2
            timeout = truncated or self.ep_len >= 1000
            terminal = terminated or timeout
            if terminal or t + 1 == steps:
                if terminated:
                    last = 0.0
                else:
                    with torch.no_grad():
                        last = self.critic(torch.as_tensor(self.obs)).item()
                self.buf.finish_path(last)
                self.obs, self.ep_len = self.env.reset(), 0

    def update(self, clip=0.2, target_kl=0.01, iters=80):
        data = self.buf.get()
        obs, act, adv, ret, logp_old = (
            data["obs"], data["act"], data["adv"], data["ret"], data["logp"],
        )
        stop = iters
        for i in range(iters):
            self.pi_optim.zero_grad()
            logits = self.actor(obs)
            pi = torch.distributions.Categorical(logits=logits)
            logp = pi.log_prob(act)
            ratio = torch.exp(logp - logp_old)
            clip_adv = torch.clamp(ratio, 1 - clip, 1 + clip) * adv
            loss_pi = -(torch.min(ratio * adv, clip_adv)).mean()
            # The diagnostics privrl reads back each iteration (KL, entropy, clip fraction).
            kl = (logp_old - logp).mean().item()
            _ent = pi.entropy().mean().item()
            _clip_frac = ratio.gt(1 + clip).logical_or(ratio.lt(1 - clip)).float().mean().item()
            if kl > 1.5 * target_kl:
                stop = i
                break
            loss_pi.backward()
            self.pi_optim.step()
        self.policy_iters.append(stop)
        for _ in range(iters):
            self.v_optim.zero_grad()
            loss_v = ((self.critic(obs).squeeze(-1) - ret) ** 2).mean()
            _ = loss_v.item()
            loss_v.backward()
            self.v_optim.step()

    def epoch(self):
        self.rollout()
        self.update()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--epochs", type=int, default=3, help="timed epochs after one warm-up")
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's default)")
    parser.add_argument("--hidden", type=int, default=64, help="width of both hidden layers")
    parser.add_argument("--steps-per-epoch", type=int, default=4000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    if args.threads > 0:
        torch.set_num_threads(args.threads)
    ppo = Ppo((args.hidden, args.hidden), args.seed, args.steps_per_epoch)
    ppo.epoch()
    ppo.policy_iters.clear()
    before = ppo.env_steps
    start = time.perf_counter()
    for _ in range(args.epochs):
        ppo.epoch()
    elapsed = time.perf_counter() - start
    steps = ppo.env_steps - before
    print(
        f"PPO_PYTORCH steps_per_s={steps / elapsed:.1f} epochs={args.epochs} steps={steps} "
        f"policy_iters={np.mean(ppo.policy_iters):.1f} threads={torch.get_num_threads()} "
        f"torch={torch.__version__}"
    )


if __name__ == "__main__":
    main()

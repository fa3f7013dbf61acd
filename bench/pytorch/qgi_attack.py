"""The QGI attack of `cargo xtask bench` in PyTorch, for timing the two side by side.

Same victim (privrl's `victim_config` for S1: RGB and depth encoders of two 3x3 stride-2 convs
with 16 and 32 channels, ReLU; a 4 -> 32 vector branch; a 64-unit hidden layer; 7 Q-values),
the same single-sample DQN gradient, and the same attack loop: eq. 6's error-direction
surrogate, cosine gradient matching (eq. 5) plus privrl's magnitude term
0.1 * (|g_rec| / |g| - 1)^2, TV prior (lambda = 0.1) on the images, Adam (lr 0.1,
step decay at 3/8, 5/8, 7/8), stage 1 over the linear part's inputs, stage 2 over the images.
Each stage runs `--iterations` steps and one final loss evaluation, as privrl's does.

    python bench/pytorch/qgi_attack.py --res 150 --iterations 10

prints the attack's wall time and iterations/s over both stages (the bench's definition).
"""

import argparse
import time

import torch
import torch.nn.functional as F


def init_uniform(shape, fan_in, gen):
    bound = 1.0 / fan_in**0.5
    return ((torch.rand(shape, generator=gen) * 2 - 1) * bound).requires_grad_()


class Victim:
    def __init__(self, res, gen, channels=(16, 32), hidden=64, actions=7, d_vector=4):
        self.params = {}

        def conv(name, c_in, c_out):
            self.params[f"{name}.weight"] = init_uniform((c_out, c_in, 3, 3), c_in * 9, gen)
            self.params[f"{name}.bias"] = init_uniform((c_out,), c_in * 9, gen)

        def dense(name, d_in, d_out):
            self.params[f"{name}.weight"] = init_uniform((d_in, d_out), d_in, gen)
            self.params[f"{name}.bias"] = init_uniform((d_out,), d_in, gen)

        size = res
        for branch, c_in in (("rgb", 3), ("depth", 1)):
            size = res
            for i, c_out in enumerate(channels):
                conv(f"{branch}.{i}", c_in, c_out)
                c_in = c_out
                size = (size + 2 - 3) // 2 + 1
        self.features = channels[-1] * size * size
        dense("vector.0", d_vector, 32)
        dense("head.0", 2 * self.features + 32, hidden)
        dense("head.1", hidden, actions)
        self.channels = channels

    def encode(self, branch, x):
        for i in range(len(self.channels)):
            p = self.params
            x = F.relu(F.conv2d(x, p[f"{branch}.{i}.weight"], p[f"{branch}.{i}.bias"], 2, 1))
        return x.flatten(1)

    def linear_part(self, rgb_features, depth_features, vector):
        p = self.params
        v = F.relu(vector @ p["vector.0.weight"] + p["vector.0.bias"])
        h = torch.cat([rgb_features, depth_features, v], 1)
        h = F.relu(h @ p["head.0.weight"] + p["head.0.bias"])
        return h @ p["head.1.weight"] + p["head.1.bias"]

    def forward(self, rgb, depth, vector):
        return self.linear_part(self.encode("rgb", rgb), self.encode("depth", depth), vector)

    def linear_names(self):
        return [n for n in self.params if n.startswith(("vector", "head"))]


def total_variation(x):
    return (x[:, :, 1:, :] - x[:, :, :-1, :]).abs().mean() + (
        x[:, :, :, 1:] - x[:, :, :, :-1]
    ).abs().mean()


def matching_loss(rec, target, magnitude_weight=0.1):
    dot = sum((r * t).sum() for r, t in zip(rec, target))
    norm_rec = (sum(r.pow(2).sum() for r in rec) + 1e-20).sqrt()
    norm_target = (sum(t.pow(2).sum() for t in target) + 1e-20).sqrt()
    ratio = norm_rec / norm_target
    return 1 - dot / (norm_rec * norm_target) + magnitude_weight * (ratio - 1) ** 2


def run_stage(free, loss_fn, iterations):
    optimiser = torch.optim.Adam(free, lr=0.1)
    milestones = [iterations * k // 8 for k in (3, 5, 7)]
    schedule = torch.optim.lr_scheduler.MultiStepLR(optimiser, milestones, gamma=0.1)
    for _ in range(iterations):
        optimiser.zero_grad()
        loss = loss_fn()
        loss.backward()
        optimiser.step()
        schedule.step()
    return loss_fn().item()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--res", type=int, default=150, help="image size in pixels")
    parser.add_argument("--iterations", type=int, default=10, help="iterations per stage")
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0: default)")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    gen = torch.Generator().manual_seed(0)
    victim = Victim(args.res, gen)
    names = list(victim.params)
    params = [victim.params[n] for n in names]

    # The shared gradient of one sample: J = (Q(s, a) - Q)^2.
    rgb = torch.rand((1, 3, args.res, args.res), generator=gen)
    depth = torch.rand((1, 1, args.res, args.res), generator=gen)
    vector = torch.rand((1, 4), generator=gen) * 2 - 1
    q = victim.forward(rgb, depth, vector)
    loss = (q[0, 2] - 1.0) ** 2
    shared = dict(zip(names, torch.autograd.grad(loss, params)))
    direction = shared["head.1.bias"].detach().view(1, -1)

    def matching(output, used):
        surrogate = (output * direction).sum()  # eq. 6
        rec = torch.autograd.grad(
            surrogate, [victim.params[n] for n in used], create_graph=True
        )
        return matching_loss(rec, [shared[n] for n in used])

    start = time.perf_counter()
    linear = victim.linear_names()
    rgb_f = torch.randn((1, victim.features), generator=gen).requires_grad_()
    depth_f = torch.randn((1, victim.features), generator=gen).requires_grad_()
    vec = torch.randn((1, 4), generator=gen).requires_grad_()
    run_stage(
        [rgb_f, depth_f, vec],
        lambda: matching(victim.linear_part(rgb_f, depth_f, vec), linear),
        args.iterations,
    )
    vec = vec.detach()
    rgb_rec = torch.randn(rgb.shape, generator=gen).requires_grad_()
    depth_rec = torch.randn(depth.shape, generator=gen).requires_grad_()
    run_stage(
        [rgb_rec, depth_rec],
        lambda: matching(victim.forward(rgb_rec, depth_rec, vec), names)
        + 0.1 * (total_variation(rgb_rec) + total_variation(depth_rec)),
        args.iterations,
    )
    wall = time.perf_counter() - start
    print(
        f"PyTorch {torch.__version__}, {torch.get_num_threads()} threads, QGI S1 "
        f"{args.res}x{args.res}, {args.iterations} iterations per stage: "
        f"attack {wall:.2f} s, {2 * args.iterations / wall:.2f} iterations/s"
    )


if __name__ == "__main__":
    main()

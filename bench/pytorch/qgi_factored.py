"""privrl's QGI attack in PyTorch with privrl's factored formulation, for timing the two side by
side (`cargo xtask bench --compare-pytorch`).

`qgi_attack.py` forms every reconstructed weight gradient; privrl does not. This peer does what
`attacks/src/attack/matching.rs` does: the linear part's (head's) weight gradients stay factored,
dW_l = x_l^T delta_l for the layer's input x_l and the surrogate's gradient delta_l with respect to
its output, and the cosine matching loss takes only the three numbers it needs from them
(`attacks/src/parts.rs`, `dot_and_norm_sq`): <dW_l, G_l> = sum((x_l G_l) * delta_l) and
|dW_l|^2 = sum((x_l x_l^T) * (delta_l delta_l^T)), with |G|^2 of the target computed once per
attack. Every other parameter's gradient (the convolutions and the vector branch) is formed by
autograd with create_graph, as privrl's inner autodiff forms it.

The same victim as privrl's `victim_config` for S1 (RGB and depth encoders of two 3x3 stride-2
convs with 16 and 32 channels, ReLU; a 4 -> 32 vector branch; a 64-unit hidden layer; 7
Q-values), the same single-sample DQN gradient, eq. 6's error-direction surrogate, cosine
matching (eq. 5) plus privrl's magnitude term 0.1 (|g_rec| / |g| - 1)^2, the TV prior (0.1) on
the images, Adam (lr 0.1, step decay at 3/8, 5/8, 7/8); stage 1 over the linear part's inputs
(matching the linear part's gradients), stage 2 over the images (all gradients). Each stage runs
`--iterations` steps and one final loss evaluation, as privrl's does. Prints one
machine-readable line:

    QGI_PYTORCH iterations_per_s=<float> attack_s=<float> res=<n> iterations=<n> threads=<n> torch=<version>

    python bench/pytorch/qgi_factored.py --res 150 --iterations 10 [--threads N]
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

    def linear_part(self, rgb_features, depth_features, vector, taps=None):
        """The head on the features; with `taps` (a list), appends (input, output) per head
        layer so that the surrogate's gradient with respect to each output can be taken."""
        p = self.params
        v = F.relu(vector @ p["vector.0.weight"] + p["vector.0.bias"])
        h = torch.cat([rgb_features, depth_features, v], 1)
        z = h @ p["head.0.weight"] + p["head.0.bias"]
        if taps is not None:
            taps.append((h, z))
        h = F.relu(z)
        out = h @ p["head.1.weight"] + p["head.1.bias"]
        if taps is not None:
            taps.append((h, out))
        return out

    def forward(self, rgb, depth, vector, taps=None):
        return self.linear_part(
            self.encode("rgb", rgb), self.encode("depth", depth), vector, taps
        )

    def linear_names(self):
        return [n for n in self.params if n.startswith(("vector", "head"))]


def total_variation(x):
    return (x[:, :, 1:, :] - x[:, :, :-1, :]).abs().mean() + (
        x[:, :, :, 1:] - x[:, :, :, :-1]
    ).abs().mean()


def matching_loss(dot, norm_rec_sq, norm_target_sq, magnitude_weight=0.1):
    norm_rec = (norm_rec_sq + 1e-20).sqrt()
    norm_target = (norm_target_sq + 1e-20) ** 0.5
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
    shared = {n: g.detach() for n, g in shared.items()}
    direction = shared["head.1.bias"].view(1, -1)
    target_norm_sq = {}

    head_weights = ("head.0.weight", "head.1.weight")
    head_biases = ("head.0.bias", "head.1.bias")

    def matching(forward, used):
        """Eq. 6's surrogate, its gradient (the head's weights factored), and eq. 5."""
        taps = []
        output = forward(taps)
        surrogate = (output * direction).sum()  # eq. 6
        formed = [n for n in used if n not in head_weights + head_biases]
        outputs = [z for _, z in taps]
        grads = torch.autograd.grad(
            surrogate, outputs + [victim.params[n] for n in formed], create_graph=True
        )
        deltas, formed_grads = grads[: len(outputs)], grads[len(outputs) :]
        dot = 0.0
        norm_rec_sq = 0.0
        for (x, _), delta, w, b in zip(taps, deltas, head_weights, head_biases):
            # dW = x^T delta, never formed; db = 1^T delta.
            dot = dot + ((x @ shared[w]) * delta).sum()
            norm_rec_sq = norm_rec_sq + ((x @ x.T) * (delta @ delta.T)).sum()
            db = delta.sum(0)
            dot = dot + (db * shared[b]).sum()
            norm_rec_sq = norm_rec_sq + db.pow(2).sum()
        for n, g in zip(formed, formed_grads):
            dot = dot + (g * shared[n]).sum()
            norm_rec_sq = norm_rec_sq + g.pow(2).sum()
        return matching_loss(dot, norm_rec_sq, target_norm_sq[tuple(used)])

    start = time.perf_counter()
    linear = victim.linear_names()
    # |G|^2 once per attack, per stage's set of matched parameters.
    for used in (linear, names):
        target_norm_sq[tuple(used)] = sum(shared[n].pow(2).sum().item() for n in used)
    rgb_f = torch.randn((1, victim.features), generator=gen).requires_grad_()
    depth_f = torch.randn((1, victim.features), generator=gen).requires_grad_()
    vec = torch.randn((1, 4), generator=gen).requires_grad_()
    run_stage(
        [rgb_f, depth_f, vec],
        lambda: matching(lambda taps: victim.linear_part(rgb_f, depth_f, vec, taps), linear),
        args.iterations,
    )
    vec = vec.detach()
    rgb_rec = torch.randn(rgb.shape, generator=gen).requires_grad_()
    depth_rec = torch.randn(depth.shape, generator=gen).requires_grad_()
    run_stage(
        [rgb_rec, depth_rec],
        lambda: matching(lambda taps: victim.forward(rgb_rec, depth_rec, vec, taps), names)
        + 0.1 * (total_variation(rgb_rec) + total_variation(depth_rec)),
        args.iterations,
    )
    wall = time.perf_counter() - start
    print(
        f"QGI_PYTORCH iterations_per_s={2 * args.iterations / wall:.3f} attack_s={wall:.3f} "
        f"res={args.res} iterations={args.iterations} threads={torch.get_num_threads()} "
        f"torch={torch.__version__}"
    )


if __name__ == "__main__":
    main()

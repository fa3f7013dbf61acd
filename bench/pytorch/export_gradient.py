"""Export a PyTorch DQN's shared gradient for `cargo xtask attack --gradients`.

Builds a PyTorch network with the architecture of one of privrl's victims, takes the gradient
of the DQN TD loss J = (Q(s)[a] - Q_target)^2 on one private transition (what a federated or
distributed learner shares), and writes

    OUT/weights.safetensors   the network's parameters, the architecture in the header
    OUT/gradient.safetensors  dJ/dw, one tensor per parameter
    OUT/truth.json            the private state, action and target Q (to score the attack)

Tensors are named by the parameter's path in the Burn module and laid out as Burn stores it:
a Dense weight is [d_in, d_out] (the transpose of nn.Linear's), a convolution's
[c_out, c_in, k, k] (as nn.Conv2d's). The header's `privrl.model` and `privrl.config` name the
network and its Burn config.

    python bench/pytorch/export_gradient.py --model mlp --out /tmp/grad
    cargo xtask attack --gradients /tmp/grad/gradient.safetensors \\
        --weights /tmp/grad/weights.safetensors

Models: `mlp` (an MLP on a vector state: Linear-ReLU-Linear, privrl's `Mlp`) and `cnn` (one
grayscale image: a 3x3 stride-2 convolution with padding 1 and ReLU, flattened, then
Linear-ReLU-Linear, privrl's `ConvNet`). Needs torch and safetensors.
"""

import argparse
import json
import os

import torch
import torch.nn as nn
from safetensors.torch import save_file


def mlp(args):
    net = nn.Sequential(
        nn.Linear(args.state, args.hidden), nn.ReLU(), nn.Linear(args.hidden, args.actions)
    )
    config = {
        "d_input": args.state,
        "hidden": [args.hidden],
        "d_output": args.actions,
        "activation": "Relu",
        "dropout": 0.0,
        "bias": True,
    }
    # Burn path of each PyTorch parameter, and whether its layout is transposed.
    names = {
        "0.weight": ("layers.0.weight", True),
        "0.bias": ("layers.0.bias", False),
        "2.weight": ("layers.1.weight", True),
        "2.bias": ("layers.1.bias", False),
    }
    state = torch.rand(1, args.state) * 2 - 1
    truth = {"vector": state[0].tolist()}
    return net, config, names, state, truth


def cnn(args):
    size, channels = args.image_size, args.channels
    side = (size + 2 - 3) // 2 + 1
    net = nn.Sequential(
        nn.Conv2d(1, channels, 3, stride=2, padding=1),
        nn.ReLU(),
        nn.Flatten(),
        nn.Linear(channels * side * side, args.hidden),
        nn.ReLU(),
        nn.Linear(args.hidden, args.actions),
    )
    config = {
        "encoder": {
            "channels_in": 1,
            "image_size": size,
            "channels": [channels],
            "kernel": 3,
            "stride": 2,
            "activation": "Relu",
        },
        "d_output": args.actions,
        "hidden": [args.hidden],
        "activation": "Relu",
    }
    names = {
        "0.weight": ("encoder.convs.0.weight", False),
        "0.bias": ("encoder.convs.0.bias", False),
        "3.weight": ("head.layers.0.weight", True),
        "3.bias": ("head.layers.0.bias", False),
        "5.weight": ("head.layers.1.weight", True),
        "5.bias": ("head.layers.1.bias", False),
    }
    # A smooth image in [0, 1]: a ramp and a blob.
    y, x = torch.meshgrid(torch.arange(size), torch.arange(size), indexing="ij")
    blob = torch.exp(-((x - size * 0.6) ** 2 + (y - size * 0.4) ** 2) / (0.1 * size * size))
    image = (0.2 + 0.3 * x / size + 0.5 * blob).clamp(0, 1).float()
    truth = {"depth": image.flatten().tolist()}
    return net, config, names, image.reshape(1, 1, size, size), truth


def burn_layout(tensors, names):
    out = {}
    for name, tensor in tensors.items():
        burn_name, transpose = names[name]
        tensor = tensor.detach().float()
        out[burn_name] = (tensor.t() if transpose else tensor).contiguous()
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", choices=["mlp", "cnn"], default="mlp")
    parser.add_argument("--out", required=True, help="output directory")
    parser.add_argument("--state", type=int, default=4, help="mlp: state length")
    parser.add_argument("--image-size", type=int, default=8, help="cnn: square image side")
    parser.add_argument("--channels", type=int, default=8, help="cnn: conv channels")
    parser.add_argument("--hidden", type=int, default=32, help="hidden Dense width")
    parser.add_argument("--actions", type=int, default=3)
    parser.add_argument("--action", type=int, default=1, help="the private action")
    parser.add_argument("--target-q", type=float, default=1.5, help="the private target Q")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    torch.manual_seed(args.seed)
    net, config, names, state, truth = (mlp if args.model == "mlp" else cnn)(args)
    q = net(state)
    loss = ((q[0, args.action] - args.target_q) ** 2).mean()
    loss.backward()

    params = dict(net.named_parameters())
    metadata = {"privrl.model": args.model, "privrl.config": json.dumps(config)}
    os.makedirs(args.out, exist_ok=True)
    save_file(
        burn_layout({n: p for n, p in params.items()}, names),
        os.path.join(args.out, "weights.safetensors"),
        metadata=metadata,
    )
    save_file(
        burn_layout({n: p.grad for n, p in params.items()}, names),
        os.path.join(args.out, "gradient.safetensors"),
    )
    truth.update({"action": args.action, "signal": args.target_q, "q": q[0].tolist()})
    with open(os.path.join(args.out, "truth.json"), "w") as f:
        json.dump(truth, f)
    print(f"wrote {args.out}: J = {loss.item():.6f}, Q(s) = {q[0].tolist()}")


if __name__ == "__main__":
    main()

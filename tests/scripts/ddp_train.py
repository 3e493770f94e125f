"""A small DDP training script (gloo, CPU) for tests/test_distributed.py, run under torchrun.

    torchrun --nproc_per_node=2 ddp_train.py --out DIR [--bug stale] [--guard]

Each rank trains on its own data shard; DDP averages the gradients, so every rank ends with the
same parameters, which rank 0 writes to DIR/params.pt. `--bug stale` builds a reference output
once, before the loop, and uses it in every iteration's loss: the second backward runs through
a graph the first one freed. `--guard` wraps the loop in GraphGuard (instead of `graphguard run`).
"""
from __future__ import annotations

import argparse
import os

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.body = nn.Sequential(nn.Linear(6, 16), nn.Tanh(), nn.Linear(16, 1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.body(x)


def train(bug: str | None, steps: int) -> nn.Module:
    rank = dist.get_rank()
    torch.manual_seed(0)  # same initial weights on every rank
    model = DDP(Net())
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    gen = torch.Generator().manual_seed(100 + rank)  # a different shard per rank
    anchor = torch.randn(4, 6, generator=gen)
    ref = model(anchor) if bug == "stale" else None  # the bug: built once, with history
    for step in range(steps):
        x = torch.randn(32, 6, generator=gen)
        y = x.sum(dim=1, keepdim=True).sin()
        loss = F.mse_loss(model(x), y)
        if ref is not None:
            loss = loss + 0.1 * (model(anchor) - ref).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    return model.module


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--bug", choices=("stale",))
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--guard", action="store_true", help="wrap the loop in GraphGuard()")
    args = ap.parse_args()
    # PyTorch's default timeout (30 min): a rank left waiting in a collective shows as a hang,
    # which the test's own timeout catches, instead of being cut short here
    dist.init_process_group("gloo")
    try:
        if args.guard:
            from graphguard import GraphGuard

            with GraphGuard():
                net = train(args.bug, args.steps)
        else:
            net = train(args.bug, args.steps)
        if dist.get_rank() == 0:
            os.makedirs(args.out, exist_ok=True)
            torch.save({k: v.detach().clone() for k, v in net.state_dict().items()},
                       os.path.join(args.out, "params.pt"))
        dist.barrier()
    finally:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()

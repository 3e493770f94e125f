# plain-torch: runs
"""GG020: gradient accumulation with every micro-step inside DDP's no_sync() (one gloo rank).

Nothing is ever all-reduced: each rank would step on its own gradients. On one rank no number
changes, so the damage is shown by DDP's communication hook, which is never called."""
from contextlib import nullcontext

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

from ddpkit import counted, one_rank


def batches(n=3):
    return [(torch.randn(4, 6), torch.randn(4, 1)) for _ in range(n)]


def buggy():
    torch.manual_seed(0)
    with one_rank():
        ddp_model = DDP(nn.Sequential(nn.Linear(6, 8), nn.Tanh(), nn.Linear(8, 1)))
        calls = counted(ddp_model)
        optimizer = torch.optim.Adam(ddp_model.parameters(), lr=1e-3)
        for _ in range(2):
            optimizer.zero_grad()
            with ddp_model.no_sync():  # around the whole loop: the last micro-step too
                for x, y in batches():
                    loss = nn.functional.mse_loss(ddp_model(x), y) / 3
                    loss.backward()
            optimizer.step()  # expect: GG020 ddp_model
        assert calls == [], "never all-reduced"


def clean():
    torch.manual_seed(0)
    with one_rank():
        model = DDP(nn.Sequential(nn.Linear(6, 8), nn.Tanh(), nn.Linear(8, 1)))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for _ in range(2):  # the last micro-step outside no_sync: it all-reduces the sum
            opt.zero_grad()
            data = batches()
            for i, (x, y) in enumerate(data):
                with (nullcontext() if i == len(data) - 1 else model.no_sync()):
                    nn.functional.mse_loss(model(x), y).backward()
            opt.step()
        # local SGD: no_sync on purpose, the gradients all-reduced by hand before the step
        for _ in range(2):
            opt.zero_grad()
            with model.no_sync():
                nn.functional.mse_loss(model(torch.randn(4, 6)), torch.randn(4, 1)).backward()
            for p in model.parameters():
                dist.all_reduce(p.grad)
                p.grad /= dist.get_world_size()
            opt.step()

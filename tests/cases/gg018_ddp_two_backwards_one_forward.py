# plain-torch: runs
"""GG018: two losses of one DDP forward, each with its own backward (one gloo rank, in-process).

DDP all-reduces once per forward: the second backward's gradients are never reduced. On one
rank that changes no number, so the damage is shown by DDP's own communication hook: it is
called for the first backward's buckets and not for the second's."""

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

from ddpkit import counted, one_rank


def buggy():
    torch.manual_seed(0)
    with one_rank():
        model = DDP(nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2)))
        calls = counted(model)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        out = model(torch.randn(3, 4))
        cls_loss = out[:, 0].mean()
        reg_loss = out[:, 1].pow(2).mean()
        opt.zero_grad()
        cls_loss.backward(retain_graph=True)
        reduced = len(calls)
        reg_loss.backward()  # expect: GG018 model
        opt.step()
        assert reduced > 0 and len(calls) == reduced, "the second backward was not all-reduced"


def clean():
    torch.manual_seed(0)
    with one_rank():
        model = DDP(nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2)))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for _ in range(2):
            out = model(torch.randn(3, 4))
            loss = out[:, 0].mean() + out[:, 1].pow(2).mean()  # one backward per forward
            opt.zero_grad()
            loss.backward()
            opt.step()
        # a gradient penalty: autograd.grad writes no .grad, the reducer never sees it
        x = torch.randn(3, 4, requires_grad=True)
        out = model(x)
        (g,) = torch.autograd.grad(out.sum(), x, create_graph=True)
        loss = out.mean() + g.pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()

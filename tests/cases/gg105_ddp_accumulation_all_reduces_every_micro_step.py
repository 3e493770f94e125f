# plain-torch: runs
"""GG105: gradient accumulation under DDP without no_sync() (one gloo rank, in-process).

Correct, but every micro-step all-reduces the whole model's gradients: DDP's communication hook
is called once per micro-batch instead of once per step."""

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

from ddpkit import counted, one_rank

ACCUM = 4


def buggy():
    torch.manual_seed(0)
    with one_rank():
        net = DDP(nn.Sequential(nn.Linear(5, 7), nn.ReLU(), nn.Linear(7, 3)))
        calls = counted(net)
        opt = torch.optim.SGD(net.parameters(), lr=0.05)
        for step in range(3 * ACCUM):
            logits = net(torch.randn(2, 5))
            loss = nn.functional.cross_entropy(logits, torch.randint(0, 3, (2,))) / ACCUM
            loss.backward()
            if (step + 1) % ACCUM == 0:
                opt.step()  # expect: GG105 net
                opt.zero_grad()
        assert len(calls) == 3 * ACCUM, "one all-reduce per micro-step"


def clean():
    torch.manual_seed(0)
    with one_rank():
        net = DDP(nn.Sequential(nn.Linear(5, 7), nn.ReLU(), nn.Linear(7, 3)))
        opt = torch.optim.SGD(net.parameters(), lr=0.05)
        for step in range(3 * ACCUM):
            last = (step + 1) % ACCUM == 0
            if last:
                logits = net(torch.randn(2, 5))
            else:
                with net.no_sync():
                    logits = net(torch.randn(2, 5))
            (nn.functional.cross_entropy(logits, torch.randint(0, 3, (2,))) / ACCUM).backward()
            if last:
                opt.step()
                opt.zero_grad()
        for _ in range(3):  # one backward per step: nothing to accumulate
            opt.zero_grad()
            nn.functional.cross_entropy(net(torch.randn(2, 5)), torch.randint(0, 3, (2,))).backward()
            opt.step()

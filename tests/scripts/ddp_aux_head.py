"""A two-head model under DistributedDataParallel (gloo, CPU), as in issue 30.

    torchrun --nproc_per_node 2 ddp_aux_head.py unused        # aux_head never called: DDP's error
    torchrun --nproc_per_node 2 ddp_aux_head.py find_unused   # clean: find_unused_parameters=True
    torchrun --nproc_per_node 2 ddp_aux_head.py no_sync       # clean: accumulation with no_sync
    ... --out DIR   rank 0 saves the trained parameters to DIR/params.pt
"""
import argparse
from contextlib import nullcontext

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Linear(8, 16)
        self.head = nn.Linear(16, 2)
        self.aux_head = nn.Linear(16, 2)  # built, but forward leaves it out unless asked

    def forward(self, x, use_aux=False):
        h = torch.relu(self.body(x))
        out = self.head(h)
        if use_aux:
            out = out + self.aux_head(h)
        return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("variant", choices=("unused", "find_unused", "no_sync"))
    ap.add_argument("--out")
    args = ap.parse_args()
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = DDP(Net(), find_unused_parameters=args.variant == "find_unused")
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    gen = torch.Generator().manual_seed(rank)
    try:
        for step in range(4):
            if args.variant == "no_sync":
                opt.zero_grad()
                for micro in range(2):  # two micro-batches, reduced once, at the last
                    ctx = model.no_sync() if micro == 0 else nullcontext()
                    with ctx:
                        out = model(torch.randn(4, 8, generator=gen), use_aux=True)
                        out.pow(2).mean().backward()
                opt.step()
                continue
            out = model(torch.randn(4, 8, generator=gen), use_aux=args.variant == "find_unused" and step % 2 == 1)
            loss = out.pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        if args.out and rank == 0:
            torch.save({k: v.detach().clone() for k, v in model.module.state_dict().items()},
                       f"{args.out}/params.pt")
    finally:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()

"""Ranks that stop making the same collective calls, or seem to (gloo, CPU, two ranks).

    torchrun --nproc_per_node 2 ddp_ranks.py skip       # rank 1 skips one backward: a hang
    torchrun --nproc_per_node 2 ddp_ranks.py together   # clean: the ranks decide the skip together
    torchrun --nproc_per_node 2 ddp_ranks.py slow       # clean: rank 0 saves for a while, rank 1 waits
"""
import sys
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

variant = sys.argv[1]
dist.init_process_group("gloo")
rank = dist.get_rank()
torch.manual_seed(0)
model = DDP(nn.Linear(4, 2))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(4):
    x = torch.randn(8, 4)
    loss = model(x).pow(2).mean()
    skip = variant != "slow" and rank == 1 and step == 2  # as a NaN check on one rank's own loss would
    if variant == "together":
        flag = torch.tensor(float(skip))
        dist.all_reduce(flag)  # every rank learns that some rank skips
        skip = bool(flag)
    if skip:
        continue
    opt.zero_grad()
    loss.backward()  # the backward that rank 0 waits in
    opt.step()
if variant == "slow" and rank == 0:
    time.sleep(float(sys.argv[2]) if len(sys.argv) > 2 else 8)  # a checkpoint being written
print(f"rank {rank} done", flush=True)
dist.barrier()  # where rank 1 waits
dist.destroy_process_group()

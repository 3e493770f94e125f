# plain-torch: raises Expected to have finished reduction in the prior iteration
"""GG017: a DDP model with an auxiliary head its forward never calls (one gloo rank, in-process).

The second forward is where DDP fails, naming parameter indices only."""

import torch
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

from ddpkit import one_rank


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Linear(8, 16)
        self.head = nn.Linear(16, 2)
        self.aux_head = nn.Linear(16, 4)

    def forward(self, x):
        return self.head(torch.relu(self.body(x)))


class NetWithAux(Net):
    def forward(self, x):
        h = torch.relu(self.body(x))
        return self.head(h), self.aux_head(h)


def train(model, steps=3, aux=False):
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(steps):
        x, y = torch.randn(4, 8), torch.randint(0, 2, (4,))
        out = model(x)  # expect: GG017 model.module.aux_head
        if aux == "sometimes":
            out, extra = out
            loss = nn.functional.cross_entropy(out, y) + (0.1 * extra.pow(2).mean() if step % 2 else 0)
        elif aux:
            out, extra = out
            loss = nn.functional.cross_entropy(out, y) + 0.1 * extra.pow(2).mean()
        else:
            loss = nn.functional.cross_entropy(out, y)
        opt.zero_grad()
        loss.backward()
        opt.step()


def buggy():
    torch.manual_seed(0)
    with one_rank():
        model = DDP(Net())
        train(model)


def clean():
    torch.manual_seed(0)
    with one_rank():
        # the auxiliary loss on odd steps only: DDP is told, and marks the head ready itself
        train(DDP(NetWithAux(), find_unused_parameters=True), aux="sometimes")
        train(DDP(NetWithAux(), static_graph=True), aux=True)
        train(DDP(NetWithAux()), aux=True)  # the head is called and its term is in the loss
        frozen = Net()
        frozen.aux_head.requires_grad_(False)  # the reducer holds no frozen parameter
        train(DDP(frozen))
        model = DDP(Net())
        with torch.no_grad():  # an evaluation forward prepares no reduction
            model(torch.randn(4, 8))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        with model.no_sync():  # gradient accumulation: no reduction inside no_sync
            nn.functional.cross_entropy(model(torch.randn(4, 8)), torch.randint(0, 2, (4,))).backward()
        model.module.aux_head.requires_grad_(False)

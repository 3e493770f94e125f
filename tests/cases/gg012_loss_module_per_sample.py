# plain-torch: raises "grad can be implicitly created only for scalar outputs"
"""GG012: a hand-written loss module returns one hinge per sample, and the training loop calls
backward on its result directly: the finding names the loss callable and points its fix-at at
the `return` that leaves the value unreduced."""
import torch
import torch.nn as nn


class MarginLoss(nn.Module):
    def __init__(self, margin: float, reduce: bool):
        super().__init__()
        self.margin = margin
        self.reduce = reduce

    def forward(self, pos, neg):
        hinge = (neg - pos + self.margin).clamp(min=0)
        if self.reduce:
            return hinge.mean()
        return hinge


class Trainer:
    def __init__(self, reduce: bool):
        torch.manual_seed(0)
        self.net = nn.Linear(5, 1)
        self.rank_loss = MarginLoss(0.5, reduce)
        self.opt = torch.optim.SGD(self.net.parameters(), lr=0.1)

    def step(self):
        a, b = torch.randn(12, 5), torch.randn(12, 5)
        self.opt.zero_grad()
        self.rank_loss(self.net(a), self.net(b)).backward()  # expect: GG012 self.rank_loss
        self.opt.step()


def per_pair(x, y):
    return (x - y).abs().sum(dim=1)


def buggy():
    Trainer(reduce=False).step()


def clean():
    t = Trainer(reduce=True)
    for _ in range(3):
        t.step()
    w = torch.randn(4, requires_grad=True)
    per_pair(w * torch.randn(3, 4), torch.zeros(3, 4)).sum().backward()

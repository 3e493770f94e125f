# plain-torch: runs
"""GG011: an output layer built inside forward(): new random weights at every call, never trained."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Scorer(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Linear(12, 16)

    def forward(self, x):
        h = F.gelu(self.embed(x))
        head = nn.Linear(16, 1)
        return head(h)  # expect: GG011 head


def data(n=3):
    g = torch.Generator().manual_seed(6)
    for _ in range(n):
        x = torch.randn(10, 12, generator=g)
        yield x, x.mean(1, keepdim=True)


def buggy():
    torch.manual_seed(0)
    model = Scorer()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    for x, y in data():
        opt.zero_grad()
        loss = F.mse_loss(model(x), y)
        loss.backward()
        opt.step()
    x = torch.randn(2, 12)
    assert not torch.allclose(model(x), model(x))  # not even a function of its input


class FixedScorer(Scorer):
    def __init__(self) -> None:
        super().__init__()
        self.head = nn.Linear(16, 1)

    def forward(self, x):
        return self.head(F.gelu(self.embed(x)))


def clean():
    torch.manual_seed(0)
    model = FixedScorer()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    for x, y in data():
        opt.zero_grad()
        F.mse_loss(model(x), y).backward()
        opt.step()
    # a distillation teacher built after the optimizer and run with grad on: wasteful, not ours
    teacher = FixedScorer()
    for x, y in data():
        opt.zero_grad()
        F.mse_loss(model(x), teacher(x)).backward()
        opt.step()

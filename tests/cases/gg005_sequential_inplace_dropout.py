# plain-torch: raises "modified by an inplace operation"
"""GG005: the in-place dropout sits inside an nn.Sequential, so the line that runs it calls the
container (`self.head(z)`); the finding names the constructor that says inplace=True."""
import torch
import torch.nn as nn


def head(inplace: bool, squash: nn.Module) -> nn.Sequential:
    return nn.Sequential(
        nn.Linear(6, 12),
        squash,
        nn.Dropout(p=0.3, inplace=inplace),
        nn.Linear(12, 1),
    )


class Regressor(nn.Module):
    def __init__(self, inplace: bool, squash: nn.Module):
        super().__init__()
        self.head = head(inplace, squash)

    def forward(self, z):
        return self.head(z)  # expect: GG005 nn.Dropout


def fit(model, steps):
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    for _ in range(steps):
        z, y = torch.randn(16, 6), torch.randn(16, 1)
        opt.zero_grad()
        ((model(z) - y) ** 2).mean().backward()
        opt.step()


def buggy():
    torch.manual_seed(0)
    fit(Regressor(inplace=True, squash=nn.Sigmoid()), 2)  # sigmoid saves its output


def clean():
    torch.manual_seed(0)
    fit(Regressor(inplace=False, squash=nn.Sigmoid()), 3)
    fit(Regressor(inplace=True, squash=nn.Identity()), 3)  # nothing saved the dropout's input

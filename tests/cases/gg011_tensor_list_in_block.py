# plain-torch: runs
"""GG011: per-branch scales kept as a plain list of nn.Parameter inside a block that is itself
registered (a ModuleList member): the block's convs train, its scales never do. Named by the
list attribute of the block (`model.blocks[0].scales`), made at its `self.scales = [...]` line."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class ScaledBlock(nn.Module):
    def __init__(self, width=6, branches=2, registered=False) -> None:
        super().__init__()
        self.branches = nn.ModuleList([nn.Linear(width, width) for _ in range(branches)])
        scales = [nn.Parameter(torch.ones(width)) for _ in range(branches)]
        self.scales = nn.ParameterList(scales) if registered else scales

    def forward(self, x):
        for lin, s in zip(self.branches, self.scales):
            x = x + torch.tanh(lin(x)) * s  # expect: GG011 model.blocks[0].scales
        return x


class Net(nn.Module):
    def __init__(self, registered=False) -> None:
        super().__init__()
        self.blocks = nn.ModuleList([ScaledBlock(registered=registered)])
        self.out = nn.Linear(6, 1)

    def forward(self, x):
        for b in self.blocks:
            x = b(x)
        return self.out(x)


def train(model, steps=3):
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    g = torch.Generator().manual_seed(6)
    for _ in range(steps):
        x = torch.randn(10, 6, generator=g)
        loss = F.mse_loss(model(x), x.mean(1, keepdim=True))
        opt.zero_grad()
        loss.backward()
        opt.step()


def buggy():
    torch.manual_seed(0)
    model = Net()
    train(model)
    s = model.blocks[0].scales[0]
    assert s.grad is not None and torch.equal(s.detach(), torch.ones(6))


def clean():
    torch.manual_seed(0)
    train(Net(registered=True))

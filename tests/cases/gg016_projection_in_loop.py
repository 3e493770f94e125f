# plain-torch: runs
"""GG016: a parameter reset through .data after each step: the optimizer's update is discarded."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(5, 4, bias=False)
        self.scale = nn.Parameter(torch.ones(4))

    def forward(self, x):
        return self.proj(x) * self.scale


def data(n=4):
    g = torch.Generator().manual_seed(5)
    for _ in range(n):
        yield torch.randn(6, 5, generator=g), torch.randn(6, 4, generator=g)


def buggy():
    torch.manual_seed(0)
    net = Net()
    opt = torch.optim.SGD(net.parameters(), lr=0.5)
    net.scale.data = torch.full((4,), 2.0)  # before any step: loading a value, fine
    for x, y in data():
        opt.zero_grad()
        F.mse_loss(net(x), y).backward()
        opt.step()
        w = net.scale
        w.data = w.data / w.data.norm()  # expect: GG016 w
    assert torch.allclose(net.scale.norm(), torch.tensor(1.0))  # every change of its norm discarded


def clean():
    torch.manual_seed(0)
    net = Net()
    ema = Net()
    for p in ema.parameters():
        p.requires_grad_(False)
    opt = torch.optim.SGD(net.parameters(), lr=0.5)
    for x, y in data():
        opt.zero_grad()
        F.mse_loss(net(x), y).backward()
        opt.step()
        with torch.no_grad():
            net.scale.clamp_(max=1.5)  # in place, after the step: what was meant
        for pe, p in zip(ema.parameters(), net.parameters()):
            pe.data = 0.9 * pe.data + 0.1 * p.data  # an EMA copy no optimizer holds

# plain-torch: runs
"""GG008: one parameter of a module whose other parameters train is read through `.data` in its
forward (a learned positional embedding), so it alone never gets a gradient: the finding names
the parameter, not the module. Don't trigger: the parameter used itself, or frozen on purpose."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Encoder(nn.Module):
    def __init__(self, use_data=True):
        super().__init__()
        self.use_data = use_data
        self.proj = nn.Linear(6, 6)
        self.pos_embedding = nn.Parameter(torch.randn(1, 4, 6) * 0.02)

    def forward(self, x):
        pos = self.pos_embedding.data if self.use_data else self.pos_embedding
        return self.proj(x) + pos.expand(x.shape[0], -1, -1)


class Net(nn.Module):
    def __init__(self, use_data=True):
        super().__init__()
        self.encoder = Encoder(use_data)
        self.head = nn.Linear(6, 3)

    def forward(self, x):
        return self.head(self.encoder(x).mean(1))


def batch():
    g = torch.Generator().manual_seed(5)
    return torch.randn(8, 4, 6, generator=g), torch.randint(0, 3, (8,), generator=g)


def train(net, steps=3):
    opt = torch.optim.AdamW(net.parameters(), lr=1e-2)
    for _ in range(steps):
        x, y = batch()
        opt.zero_grad()
        F.cross_entropy(net(x), y).backward()
        opt.step()
    return opt


def buggy():
    torch.manual_seed(0)
    net = Net(use_data=True)
    opt = torch.optim.AdamW(net.parameters(), lr=1e-2)
    for _ in range(3):
        x, y = batch()
        opt.zero_grad()
        F.cross_entropy(net(x), y).backward()
        opt.step()  # expect: GG008 net.encoder.pos_embedding
    assert net.encoder.pos_embedding.grad is None and net.encoder.proj.weight.grad is not None


def clean():
    torch.manual_seed(0)
    train(Net(use_data=False))
    frozen = Net(use_data=True)
    frozen.encoder.pos_embedding.requires_grad_(False)  # a fixed embedding, on purpose
    train(frozen)

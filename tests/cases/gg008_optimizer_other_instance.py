# plain-torch: runs
"""GG008: the optimizer was built over a first instance of the model; the loop trains a second."""
import torch
import torch.nn as nn
import torch.nn.functional as F


def make():
    return nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1))


def buggy():
    torch.manual_seed(0)
    net = make()
    opt = torch.optim.Adam(net.parameters(), lr=0.01)
    net = make()
    x, y = torch.randn(16, 4), torch.randn(16, 1)
    for _ in range(3):
        opt.zero_grad()
        loss = F.mse_loss(net(x), y)
        loss.backward()
        opt.step()  # expect: GG008 net
    assert all(p.grad is None for g in opt.param_groups for p in g["params"])


def clean():
    torch.manual_seed(0)
    net = make()
    opt = torch.optim.Adam(net.parameters(), lr=0.01)
    x, y = torch.randn(16, 4), torch.randn(16, 1)
    for _ in range(3):
        opt.zero_grad()
        loss = F.mse_loss(net(x), y)
        loss.backward()
        opt.step()

# plain-torch: runs
"""GG016: a snapshot taken before the step put back after it discards every update; putting back
a value the program perturbed itself since the step (SAM) does not."""
import torch
import torch.nn as nn
import torch.nn.functional as F


def data(n=4):
    g = torch.Generator().manual_seed(7)
    for _ in range(n):
        yield torch.randn(6, 4, generator=g), torch.randn(6, 1, generator=g)


def buggy():
    torch.manual_seed(0)
    model = nn.Linear(4, 1)
    opt = torch.optim.Adam(model.parameters(), lr=0.1)
    first = model.weight.detach().clone()
    for x, y in data():
        saved = {p: p.data.clone() for p in model.parameters()}
        opt.zero_grad()
        F.mse_loss(model(x), y).backward()
        opt.step()
        for p in model.parameters():
            p.data = saved[p]  # expect: GG016 p
    assert torch.equal(model.weight, first)  # every step undone


def clean():
    torch.manual_seed(0)
    model = nn.Linear(4, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    for x, y in data():
        F.mse_loss(model(x), y).backward()
        with torch.no_grad():
            old = {}
            for p in model.parameters():
                old[p] = p.data.clone()
                p.add_(0.05 * p.grad / (p.grad.norm() + 1e-12))  # climb to w + e(w)
        opt.zero_grad()
        F.mse_loss(model(x), y).backward()
        with torch.no_grad():
            for p in model.parameters():
                p.data = old[p]  # back to w: the update below is the real one
        opt.step()
        opt.zero_grad()

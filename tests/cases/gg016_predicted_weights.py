# plain-torch: runs
"""GG016: a hypernetwork's output written into another layer's .data: the hypernetwork never learns from it."""
import torch
import torch.nn as nn
import torch.nn.functional as F


def setup():
    torch.manual_seed(0)
    hyper = nn.Linear(3, 12)
    target = nn.Linear(4, 3, bias=False)
    target.weight.requires_grad_(False)
    return hyper, target, torch.optim.Adam(hyper.parameters(), lr=1e-2)


def data(n=3):
    g = torch.Generator().manual_seed(9)
    for _ in range(n):
        yield torch.randn(3, generator=g), torch.randn(5, 4, generator=g), torch.randn(5, 3, generator=g)


def buggy():
    hyper, target, opt = setup()
    for code, x, y in data():
        predicted = hyper(code).view(3, 4)
        target.weight.data = predicted  # expect: GG016 target.weight
        loss = F.mse_loss(target(x), y) + 1e-3 * predicted.pow(2).sum()
        opt.zero_grad()
        loss.backward()
        opt.step()
    assert not F.mse_loss(target(x), y).requires_grad


def clean():
    hyper, target, opt = setup()
    for code, x, y in data():
        predicted = hyper(code).view(3, 4)
        loss = F.mse_loss(torch.func.functional_call(target, {"weight": predicted}, (x,)), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        target.weight.data = predicted.detach()  # a snapshot, no history to lose

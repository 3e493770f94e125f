# plain-torch: runs
"""GG010: the gradients are cleared between backward and step (`model.zero_grad()` one line too
late), so every step sees no gradient at all and the model never moves."""
import torch
import torch.nn as nn
import torch.nn.functional as F


def batches(n=3):
    g = torch.Generator().manual_seed(4)
    for _ in range(n):
        yield torch.randn(8, 5, generator=g), torch.randn(8, 1, generator=g)


def buggy():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(5, 8), nn.ReLU(), nn.Linear(8, 1))
    sgd = torch.optim.SGD(model.parameters(), lr=0.1)
    start = [p.detach().clone() for p in model.parameters()]
    for x, y in batches():
        F.mse_loss(model(x), y).backward()
        model.zero_grad()
        sgd.step()  # expect: GG010 sgd
    assert all(torch.equal(a, p) for a, p in zip(start, model.parameters()))


def clean():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(5, 8), nn.ReLU(), nn.Linear(8, 1))
    sgd = torch.optim.SGD(model.parameters(), lr=0.1)
    for x, y in batches():
        model.zero_grad()
        F.mse_loss(model(x), y).backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)  # torch reads .grad between backward and step
        sgd.step()
    # zero_grad right after the step, before the next backward: fine
    sgd.zero_grad()
    for x, y in batches():
        F.mse_loss(model(x), y).backward()
        sgd.step()
        sgd.zero_grad()
    # gradients that are zero straight out of backward (a dead path) are not "cleared"
    gate = torch.zeros(1, requires_grad=True)
    opt_g = torch.optim.SGD([gate], lr=0.1)
    for x, _ in batches(2):
        opt_g.zero_grad()
        (gate * 0 * x.sum()).backward()
        opt_g.step()

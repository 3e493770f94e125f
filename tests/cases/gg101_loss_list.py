# plain-torch: runs
"""GG101: per-batch losses kept in a list (with their graphs) to plot a curve afterwards."""
import torch
import torch.nn as nn


def batches(n=6):
    g = torch.Generator().manual_seed(22)
    for _ in range(n):
        x = torch.randn(12, 3, generator=g)
        yield x, (x ** 2).sum(1, keepdim=True)


def fit(model, optimizer, loss_fn, history):
    for x, y in batches():
        loss = loss_fn(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        history.append(loss.detach())  # a tensor without history: nothing kept
    return history


def buggy():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 16), nn.Softplus(), nn.Linear(16, 1))
    optimizer = torch.optim.Adagrad(model.parameters(), lr=0.1)
    train_losses = []
    for x, y in batches():
        loss = nn.functional.huber_loss(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        train_losses.append(loss)  # expect: GG101 train_losses
    assert all(t.grad_fn is not None for t in train_losses)  # six graphs kept for a plot


def clean():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 16), nn.Softplus(), nn.Linear(16, 1))
    optimizer = torch.optim.Adagrad(model.parameters(), lr=0.1)
    curve = fit(model, optimizer, nn.functional.huber_loss, [])
    assert len(curve) == 6
    train_losses = []
    for x, y in batches():
        preds = []  # this batch's outputs only: rebuilt every iteration
        for chunk in x.split(4):
            preds.append(model(chunk))
        loss = nn.functional.huber_loss(torch.cat(preds), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        train_losses.append(loss.item())

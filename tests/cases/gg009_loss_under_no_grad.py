# plain-torch: raises "does not require grad and does not have a grad_fn"
"""GG009: the loss is computed inside an evaluation helper that uses torch.no_grad()."""
import torch
import torch.nn as nn
import torch.nn.functional as F


@torch.no_grad()
def evaluate(model, x, y):
    return F.mse_loss(model(x), y)


def compute(model, x, y):
    return F.mse_loss(model(x), y)


def train(loss_fn):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 8), nn.ReLU(), nn.Linear(8, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(2):
        x, y = torch.randn(5, 3), torch.randn(5, 1)
        loss = loss_fn(model, x, y)
        opt.zero_grad()
        loss.backward()  # expect: GG009 loss, GG014 loss
        opt.step()


def buggy():
    train(evaluate)


def clean():
    train(compute)

# plain-torch: runs
"""GG002: a focal-style weight computed from the predictions and passed as `weight=` (the weight learns to shrink the loss)."""
import torch
import torch.nn as nn
import torch.nn.functional as F


def setup():
    torch.manual_seed(0)
    head = nn.Linear(6, 3)
    return head, torch.optim.SGD(head.parameters(), lr=0.1)


def data():
    g = torch.Generator().manual_seed(4)
    return torch.randn(8, 6, generator=g), (torch.rand(8, 3, generator=g) > 0.5).float()


def buggy():
    head, opt = setup()
    x, y = data()
    logits = head(x)
    prob = torch.sigmoid(logits)
    modulating = (1 - (prob * y + (1 - prob) * (1 - y))) ** 2
    loss = F.mse_loss(prob, y, weight=modulating)  # expect: GG002 modulating
    opt.zero_grad()
    loss.backward()
    opt.step()
    assert modulating.grad_fn is not None  # the weight's own gradient reached the head


def clean():
    head, opt = setup()
    x, y = data()
    logits = head(x)
    prob = torch.sigmoid(logits).detach()
    modulating = (1 - (prob * y + (1 - prob) * (1 - y))) ** 2
    loss = F.binary_cross_entropy_with_logits(logits, y, weight=modulating, pos_weight=torch.ones(3))
    opt.zero_grad()
    loss.backward()
    opt.step()

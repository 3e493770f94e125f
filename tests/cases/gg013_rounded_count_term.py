# plain-torch: runs
"""GG013: one term of the loss goes through round(): the parameters learn from the other term
only, and the count penalty trains nothing. Clean: the fractional part `x - x.floor()` (the
identity path carries the gradient), sign(x) * |x|, a straight-through estimator."""
import torch
import torch.nn as nn
import torch.nn.functional as F


def setup():
    torch.manual_seed(0)
    net = nn.Linear(5, 3)
    opt = torch.optim.SGD(net.parameters(), lr=0.05)
    return net, opt, torch.randn(16, 5), torch.randint(0, 4, (16, 3)).float()


def buggy():
    net, opt, x, y = setup()
    for _ in range(2):
        pred = net(x)
        fit = F.mse_loss(pred, y)
        count_penalty = (pred.round() - y).abs().mean()
        total = fit + 0.1 * count_penalty
        opt.zero_grad()
        total.backward()  # expect: GG013 count_penalty
        opt.step()


def clean():
    net, opt, x, y = setup()
    for _ in range(2):
        pred = net(x)
        frac = (pred - pred.floor()).mean()
        signed = (torch.sign(pred) * pred.abs() - y).pow(2).mean()
        ste = (pred + (pred.round() - pred).detach() - y).abs().mean()
        total = F.mse_loss(pred, y) + frac + signed + ste
        opt.zero_grad()
        total.backward()
        opt.step()

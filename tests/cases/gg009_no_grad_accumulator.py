# plain-torch: raises "does not require grad and does not have a grad_fn"
"""GG009: the loss is accumulated inside a `with torch.no_grad():` block (an evaluation helper
pasted into the training loop): the value the block hands out, `total`, has no history. Clean: the
same loop with the metric, not the loss, under no_grad."""
import torch
import torch.nn as nn
import torch.nn.functional as F


def setup():
    torch.manual_seed(0)
    net = nn.Linear(4, 2)
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    return net, opt, torch.randn(6, 4), torch.randn(6, 2)


def buggy():
    net, opt, x, y = setup()
    total = 0
    for xs, ys in zip(x.split(3), y.split(3)):
        with torch.no_grad():
            out = net(xs)
            total += F.mse_loss(out, ys)
    mean = total / 2
    opt.zero_grad()
    mean.backward()  # expect: GG009 total, GG014 mean


def clean():
    net, opt, x, y = setup()
    total, seen = 0, 0
    for xs, ys in zip(x.split(3), y.split(3)):
        out = net(xs)
        total = total + F.mse_loss(out, ys)
        with torch.no_grad():
            seen += (out.argmax(1) == ys.argmax(1)).sum().item()
    mean = total / 2
    opt.zero_grad()
    mean.backward()
    opt.step()

# plain-torch: runs
"""GG009: the loss is re-wrapped as a new leaf (`torch.tensor(loss.item(), requires_grad=True)`,
`loss.data` + `requires_grad = True`): backward runs, but no optimized parameter gets a gradient."""
import torch
import torch.nn as nn
import torch.nn.functional as F


def setup():
    torch.manual_seed(0)
    net = nn.Linear(4, 1)
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    return net, opt, torch.randn(8, 4), torch.randn(8, 1)


def buggy():
    net, opt, x, y = setup()
    for _ in range(1):
        opt.zero_grad()
        raw = F.mse_loss(net(x), y)
        loss = torch.tensor(raw.item(), requires_grad=True)  # expect: GG103 loss
        loss.backward()  # expect: GG009 loss
    net, opt, x, y = setup()
    for _ in range(1):
        opt.zero_grad()
        total = F.mse_loss(net(x), y).data
        total.requires_grad = True
        total.backward()  # expect: GG009 total
    assert net.weight.grad is None


def clean():
    net, opt, x, y = setup()
    for _ in range(2):
        opt.zero_grad()
        loss = F.mse_loss(net(x), y)
        loss.backward()
        opt.step()
    # input gradients with no optimized tensor involved (a probe): quiet
    x = torch.randn(8, 4, requires_grad=True)
    F.mse_loss(x * 2, y).backward()

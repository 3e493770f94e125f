# plain-torch: raises "Trying to backward through the graph a second time"
"""GG001: a bounded (tanh) parametrization with its cache turned on around the whole training loop:
the weight is computed once, with history, and every later backward runs into the graph the first
one freed. The finding names the parametrized weight as registered and points its fix-at at the
`cached()` block."""
import torch
import torch.nn as nn
import torch.nn.utils.parametrize as P


class Bounded(nn.Module):
    def forward(self, W):
        return 0.5 * torch.tanh(W)  # tanh saves its output for the backward


def make():
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(4, 4), nn.Tanh(), nn.Linear(4, 1))
    P.register_parametrization(net[0], "weight", Bounded())
    return net, torch.optim.SGD(net.parameters(), lr=0.05)


def step(net, opt):
    x, y = torch.randn(8, 4), torch.randn(8, 1)
    opt.zero_grad()
    loss = ((net(x) - y) ** 2).mean()
    loss.backward()  # expect: GG001 net[0].weight
    opt.step()


def buggy():
    net, opt = make()
    with P.cached():
        for _ in range(3):
            step(net, opt)


def clean():
    net, opt = make()
    for _ in range(3):
        with P.cached():  # one cache per forward/backward
            step(net, opt)

# plain-torch: raises "modified by an inplace operation"
"""GG005: several updates on one forward start only after warm-up, once the guard has stopped
recording lines: the optimizer step is still named as what changed the saved weights, and the
forward output the next backward reuses is the subject."""
import torch
import torch.nn as nn


def setup():
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(4, 16), nn.Tanh(), nn.Linear(16, 1))
    return net, torch.optim.SGD(net.parameters(), lr=0.01)


def buggy():
    net, opt = setup()
    for epoch in range(5):
        x, y = torch.randn(8, 4), torch.randn(8, 1)
        pred = net(x)
        updates = 1 if epoch < 3 else 2  # extra updates after warm-up
        for k in range(updates):
            loss = (pred - y).pow(2).mean()
            opt.zero_grad()
            loss.backward(retain_graph=True)  # expect: GG001 pred, GG102 pred
            opt.step()  # expect: GG005 pred


def clean():
    net, opt = setup()
    for epoch in range(5):
        x, y = torch.randn(8, 4), torch.randn(8, 1)
        updates = 1 if epoch < 3 else 2
        for k in range(updates):
            pred = net(x)  # the forward again after each step
            loss = (pred - y).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()

# plain-torch: raises "backward through the graph a second time"
"""GG003: one trunk forward, then a loop over heads that each step their own optimizer: the
backward line runs once per optimizer of the same training step, so the second head's backward
is the second backward through the trunk, not an earlier iteration's graph."""
import torch
import torch.nn as nn


def setup():
    torch.manual_seed(0)
    trunk = nn.Sequential(nn.Linear(4, 8), nn.Tanh())
    heads = [nn.Linear(8, 1), nn.Linear(8, 1)]
    opts = [torch.optim.SGD(list(trunk.parameters()) + list(h.parameters()), lr=0.01) for h in heads]
    return trunk, heads, opts


def buggy():
    trunk, heads, opts = setup()
    for step in range(2):
        x, y = torch.randn(8, 4), torch.randn(8, 1)
        feats = trunk(x)
        for head, opt in zip(heads, opts):
            loss = (head(feats) - y).pow(2).mean()
            opt.zero_grad()
            loss.backward()  # expect: GG003 feats
            opt.step()


def clean():
    trunk, heads, opts = setup()
    for step in range(3):
        x, y = torch.randn(8, 4), torch.randn(8, 1)
        for head, opt in zip(heads, opts):
            feats = trunk(x)  # each head's own forward through the trunk
            loss = (head(feats) - y).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
    # one forward, each head's loss backwarded before any step, with the graph kept for the next
    feats = trunk(torch.randn(8, 4))
    for opt in opts:
        opt.zero_grad()
    for i, head in enumerate(heads):
        head(feats).pow(2).mean().backward(retain_graph=i < len(heads) - 1)
    for opt in opts:
        opt.step()

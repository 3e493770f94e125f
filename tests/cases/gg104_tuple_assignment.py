# plain-torch: runs
"""GG104: a penalty assembled with torch.tensor([...]) from per-layer terms that have history, as
one element of a tuple assignment: the copy is named by the target paired with it, not by the
terms it copies, and it adds nothing to the gradient."""
import torch
import torch.nn as nn
import torch.nn.functional as F


def batches(n=3):
    g = torch.Generator().manual_seed(4)
    for _ in range(n):
        yield torch.randn(8, 5, generator=g), torch.randint(0, 3, (8,), generator=g)


def buggy():
    torch.manual_seed(0)
    layers = nn.ModuleList([nn.Linear(5, 5), nn.Linear(5, 3)])
    opt = torch.optim.SGD(layers.parameters(), lr=0.1)
    for x, y in batches():
        h = torch.tanh(layers[0](x))
        logits = layers[1](h)
        terms = [layers[0].weight.pow(2).sum(), layers[1].weight.pow(2).sum()]
        (ce, n), penalty = (F.cross_entropy(logits, y), len(y)), torch.tensor(terms).sum()  # expect: GG104 penalty
        loss = ce + 1e-3 * penalty
        opt.zero_grad()
        loss.backward()
        opt.step()
    assert not penalty.requires_grad and n == 8


def clean():
    torch.manual_seed(0)
    layers = nn.ModuleList([nn.Linear(5, 5), nn.Linear(5, 3)])
    opt = torch.optim.SGD(layers.parameters(), lr=0.1)
    for x, y in batches():
        h = torch.tanh(layers[0](x))
        logits = layers[1](h)
        terms = [layers[0].weight.pow(2).sum(), layers[1].weight.pow(2).sum()]
        (ce, n), penalty = (F.cross_entropy(logits, y), len(y)), torch.stack(terms).sum()
        loss = ce + 1e-3 * penalty
        opt.zero_grad()
        loss.backward()
        opt.step()

# plain-torch: runs
"""GG015: a plain function checkpointed on the raw batch: its weights never get a gradient."""
import torch
import torch.nn as nn
from torch.utils.checkpoint import checkpoint

torch.manual_seed(0)
stem = nn.Linear(6, 10)
head = nn.Linear(10, 1)


def features(batch):
    return torch.relu(stem(batch))


def data(n=3):
    g = torch.Generator().manual_seed(2)
    for _ in range(n):
        yield torch.randn(8, 6, generator=g), torch.randn(8, 1, generator=g)


def buggy():
    opt = torch.optim.Adam(list(stem.parameters()) + list(head.parameters()), lr=1e-2)
    for batch, y in data():
        feats = checkpoint(features, batch, use_reentrant=True)  # expect: GG015 batch
        loss = ((head(feats) - y) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()  # expect: GG008 stem
    assert stem.weight.grad is None


def clean():
    opt = torch.optim.Adam(list(stem.parameters()) + list(head.parameters()), lr=1e-2)
    for batch, y in data():
        batch.requires_grad_(True)
        feats = checkpoint(features, batch, use_reentrant=True)
        loss = ((head(feats) - y) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    assert stem.weight.grad is not None
    # all parameters frozen on purpose: nothing to lose
    for p in stem.parameters():
        p.requires_grad_(False)
    for batch, y in data(1):
        loss = ((head(checkpoint(features, batch, use_reentrant=True)) - y) ** 2).mean()
        loss.backward()

# plain-torch: runs
"""GG016: weights quantized through .data for the forward and backward, the full-precision copy
put back before the step (BinaryConnect-style latent weights: the update lands on the copy) stays
quiet; without the put-back the update lands on the quantized values and is rounded away."""
import torch
import torch.nn as nn
import torch.nn.functional as F


def data(n=5):
    g = torch.Generator().manual_seed(3)
    for _ in range(n):
        yield torch.randn(8, 6, generator=g), torch.randn(8, 1, generator=g)


def quantize(w):
    return torch.round(w * 4) / 4


def buggy():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 8), nn.Tanh(), nn.Linear(8, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    latent = {p: p.detach().clone() for p in model.parameters() if p.dim() == 2}
    grid = None
    for x, y in data():
        for p, keep in latent.items():
            p.data = quantize(keep)  # expect: GG016 p
        if grid is None:
            grid = model[0].weight.detach().clone()
        opt.zero_grad()
        F.mse_loss(model(x), y).backward()
        opt.step()
        for p, keep in latent.items():
            keep.copy_(p.detach())
    assert torch.equal(quantize(model[0].weight.detach()), grid)  # every small update rounded away


def clean():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 8), nn.Tanh(), nn.Linear(8, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    latent = {p: p.detach().clone() for p in model.parameters() if p.dim() == 2}
    for x, y in data():
        for p, keep in latent.items():
            p.data = quantize(keep)  # train at the quantized point
        opt.zero_grad()
        F.mse_loss(model(x), y).backward()
        for p, keep in latent.items():
            p.data = keep  # the full-precision weights take the step (in place, into keep)
        opt.step()
    w = model[0].weight.detach()
    assert not torch.equal(w, quantize(w))  # the small updates were kept at full precision

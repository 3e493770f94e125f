# plain-torch: raises "modified by an inplace operation"
"""GG005: attention weights zeroed by slice assignment after softmax (softmax saves its output)."""
import torch
import torch.nn as nn


class Attention(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.q, self.k, self.v = nn.Linear(dim, dim), nn.Linear(dim, dim), nn.Linear(dim, dim)

    def forward(self, x, pad):
        scores = self.q(x) @ self.k(x).transpose(1, 2) / x.shape[-1] ** 0.5
        weights = torch.softmax(scores, dim=-1)
        weights[pad] = 0.0  # expect: GG005 weights
        return weights @ self.v(x)


class AttentionOk(Attention):
    def forward(self, x, pad):
        scores = self.q(x) @ self.k(x).transpose(1, 2) / x.shape[-1] ** 0.5
        scores = scores.masked_fill(pad, float("-inf"))  # mask before the softmax
        weights = torch.softmax(scores, dim=-1)
        return weights @ self.v(x)


def batch():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(2, 5, 8, generator=g)
    pad = torch.zeros(2, 5, 5, dtype=torch.bool)
    pad[:, :, 3:] = True
    return x, pad


def buggy():
    torch.manual_seed(0)
    attn = Attention(8)
    x, pad = batch()
    out = attn(x, pad)
    out.pow(2).mean().backward()


def clean():
    torch.manual_seed(0)
    attn = AttentionOk(8)
    x, pad = batch()
    out = attn(x, pad)
    out.pow(2).mean().backward()
    # writing into a fresh copy is fine too
    logits = torch.randn(3, 3, requires_grad=True)
    w = torch.softmax(logits, dim=-1)
    w2 = w.clone()
    w2[:, 0] = 0.0
    (w2 * torch.arange(3.0)).sum().backward()
    assert logits.grad is not None

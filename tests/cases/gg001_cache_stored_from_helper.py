# plain-torch: raises "backward through the graph a second time"
"""GG001: a helper computes a table from a parameter as a local; the caller caches it on `self`
keyed on the input length, so the next batch of the same length reuses the freed graph."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class RelativeBias(nn.Module):
    def __init__(self, heads=2, max_len=8, cache=True):
        super().__init__()
        self.slopes = nn.Parameter(torch.linspace(0.1, 0.5, heads))
        self.cache = cache
        self._bias_len = None
        self._bias = None

    def _build(self, n):
        pos = torch.arange(n, dtype=torch.float32)
        table = -(pos[None, :] - pos[:, None]).abs()
        return self.slopes[:, None, None] * table

    def forward(self, scores):
        n = scores.shape[-1]
        if self.cache and self._bias_len == n:
            return scores + self._bias
        bias = self._build(n)
        if self.cache:
            self._bias_len = n
            self._bias = bias
        return scores + bias


def train(cache):
    torch.manual_seed(0)
    rel = RelativeBias(cache=cache)
    proj = nn.Linear(4, 2)
    opt = torch.optim.SGD(list(rel.parameters()) + list(proj.parameters()), lr=0.1)
    for step in range(3):
        x = torch.randn(6, 4)
        scores = torch.einsum("ih,jh->hij", proj(x), proj(x))
        loss = F.softmax(rel(scores), dim=-1).pow(2).mean()
        opt.zero_grad()
        loss.backward()  # expect: GG001 self._bias
        opt.step()


def buggy():
    train(cache=True)


def clean():
    train(cache=False)

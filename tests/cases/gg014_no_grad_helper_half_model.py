# plain-torch: runs
"""GG014: a dual encoder whose query side is computed by a helper decorated with
`@torch.no_grad()`: the loss still has a graph through the document side, so backward runs and
the optimizer steps, but the query tower (in the optimizer) never gets a gradient. Reported at
the step, named by the query tower's output layer; the clean twin freezes that tower on purpose
(requires_grad_(False), left out of the optimizer) and keeps the decorator."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class DualEncoder(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.q_hidden = nn.Linear(6, 12)
        self.q_out = nn.Linear(12, 8)
        self.d_tower = nn.Sequential(nn.Linear(6, 12), nn.ReLU(), nn.Linear(12, 8))

    @torch.no_grad()
    def encode_query(self, q):
        h = torch.relu(self.q_hidden(q))
        return self.q_out(h)

    def forward(self, q, d):
        return self.encode_query(q), self.d_tower(d)


def pairs(n=3):
    g = torch.Generator().manual_seed(11)
    for _ in range(n):
        yield torch.randn(5, 6, generator=g), torch.randn(5, 6, generator=g)


def contrastive(zq, zd):
    logits = F.normalize(zq, dim=1) @ F.normalize(zd, dim=1).t() / 0.1
    return F.cross_entropy(logits, torch.arange(zq.shape[0]))


def buggy():
    torch.manual_seed(0)
    model = DualEncoder()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    for q, d in pairs():
        zq, zd = model(q, d)
        loss = contrastive(zq, zd)
        opt.zero_grad()
        loss.backward()
        opt.step()  # expect: GG014 model.q_out
    assert model.q_out.weight.grad is None and model.d_tower[0].weight.grad is not None


def clean():
    torch.manual_seed(0)
    model = DualEncoder()
    model.q_hidden.requires_grad_(False)
    model.q_out.requires_grad_(False)
    opt = torch.optim.AdamW(model.d_tower.parameters(), lr=1e-3)
    for q, d in pairs():
        zq, zd = model(q, d)
        loss = contrastive(zq, zd)
        opt.zero_grad()
        loss.backward()
        opt.step()

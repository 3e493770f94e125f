# plain-torch: raises "backward through the graph a second time"
"""GG001: a module caches a tensor computed from a parameter once, in __init__, and reuses it."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class ScaledEmbedding(nn.Module):
    def __init__(self, n, d):
        super().__init__()
        self.table = nn.Parameter(torch.randn(n, d))
        self.normed = F.normalize(self.table, dim=1)  # computed once, keeps the graph

    def forward(self, idx):
        return self.normed[idx]


class FixedEmbedding(ScaledEmbedding):
    def forward(self, idx):
        return F.normalize(self.table, dim=1)[idx]  # recomputed every call


def train(model_cls):
    torch.manual_seed(0)
    model = model_cls(10, 4)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    for step in range(3):
        idx = torch.randint(0, 10, (6,))
        target = torch.randn(6, 4)
        loss = F.mse_loss(model(idx), target)
        opt.zero_grad()
        loss.backward()  # expect: GG001 model.normed
        opt.step()


def buggy():
    train(ScaledEmbedding)


def clean():
    train(FixedEmbedding)

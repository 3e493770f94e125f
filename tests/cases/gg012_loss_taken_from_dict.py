# plain-torch: raises "grad can be implicitly created only for scalar outputs"
"""GG012: the loss is read out of a dict of per-sample terms and backward is called on that name."""
import torch
import torch.nn as nn
import torch.nn.functional as F


def losses_for(model, x, y, reduce):
    per_sample = F.smooth_l1_loss(model(x), y, reduction="none").sum(dim=1)
    return {"total": per_sample.mean() if reduce else per_sample, "count": len(x)}


def train(reduce):
    torch.manual_seed(0)
    model = nn.Linear(3, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(2):
        x, y = torch.randn(5, 3), torch.randn(5, 2)
        stats = losses_for(model, x, y, reduce)
        objective = stats["total"]
        opt.zero_grad()
        objective.backward()  # expect: GG012 objective
        opt.step()


def buggy():
    train(reduce=False)


def clean():
    train(reduce=True)

# plain-torch: raises "grad can be implicitly created only for scalar outputs"
"""GG012: a regression loss left unreduced (reduction="none") in a module-based training loop."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Regressor(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.body = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 1))

    def forward(self, x):
        return self.body(x)


def batches(n):
    g = torch.Generator().manual_seed(1)
    for _ in range(n):
        x = torch.randn(8, 6, generator=g)
        yield x, x.sum(dim=1, keepdim=True)


def buggy():
    torch.manual_seed(0)
    model = Regressor()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    for x, y in batches(3):
        opt.zero_grad()
        loss = F.mse_loss(model(x), y, reduction="none")  # per-sample weighting was planned
        loss.backward()  # expect: GG012 loss
        opt.step()


def clean():
    torch.manual_seed(0)
    model = Regressor()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    for i, (x, y) in enumerate(batches(3)):
        opt.zero_grad()
        per_sample = F.mse_loss(model(x), y, reduction="none")
        if i == 0:
            per_sample.mean().backward()
        elif i == 1:
            weights = torch.linspace(0.5, 1.5, 8).unsqueeze(1) / 8
            per_sample.backward(gradient=weights)  # explicit weighting: fine
        else:
            total = per_sample.sum(dim=0)  # shape [1]: a single element is a scalar for autograd
            total.backward()
        opt.step()

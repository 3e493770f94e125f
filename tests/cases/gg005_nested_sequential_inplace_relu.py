# plain-torch: raises "modified by an inplace operation"
"""GG005: an nn.ReLU(inplace=True) two Sequentials deep, built inline in the module's __init__,
right after an nn.Tanh (tanh saves its output). The line that runs it calls the outer container
(`self.trunk(x)`); the finding names the nested constructor, at its own line, not the container
and not the harmless in-place ReLU after the first Linear (a linear saves its input only)."""
import torch
import torch.nn as nn


class Scorer(nn.Module):
    def __init__(self, inplace: bool):
        super().__init__()
        self.trunk = nn.Sequential(
            nn.Linear(6, 16),
            nn.ReLU(inplace=True),
            nn.Sequential(
                nn.Linear(16, 16),
                nn.Sequential(
                    nn.Tanh(),
                    nn.ReLU(inplace=inplace),
                ),
            ),
            nn.Linear(16, 1),
        )

    def forward(self, x):
        return self.trunk(x)  # expect: GG005 nn.ReLU


def fit(model, steps):
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    for _ in range(steps):
        x, y = torch.randn(8, 6), torch.randn(8, 1)
        opt.zero_grad()
        ((model(x) - y) ** 2).mean().backward()
        opt.step()


def buggy():
    torch.manual_seed(0)
    fit(Scorer(inplace=True), 2)


def clean():
    torch.manual_seed(0)
    fit(Scorer(inplace=False), 3)  # the first ReLU stays in place: the linear saved its input only

# plain-torch: runs
"""GG014: a module of the user's takes a view of its own hand-made parameter inside
`with torch.no_grad():` (a row by indexing, then exp and clamp) and scales its output with it;
the rest trains, the parameter never gets a gradient. The view under no_grad still requires grad
with no grad_fn: the parameter behind it is its base. Named as the parameter, the user's own."""
import torch
import torch.nn as nn


class ScaledHead(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.log_scales = nn.Parameter(torch.zeros(2, 4))

    def forward(self, x, constrained=True):
        if constrained:
            with torch.no_grad():
                scale = self.log_scales[0].exp().clamp(max=3.0)
        else:
            scale = self.log_scales[0].exp().clamp(max=3.0)
        return self.lin(x) * scale


def buggy():
    torch.manual_seed(0)
    model = ScaledHead()
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    for _ in range(3):
        x, y = torch.randn(6, 4), torch.randn(6, 4)
        loss = ((model(x) - y) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()  # expect: GG014 model.log_scales
    assert model.log_scales.grad is None and model.lin.weight.grad is not None


def clean():
    torch.manual_seed(0)
    model = ScaledHead()
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    for _ in range(3):
        x, y = torch.randn(6, 4), torch.randn(6, 4)
        loss = ((model(x, constrained=False) - y) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        with torch.no_grad():
            model.log_scales[1].clamp_(-1.0, 1.0)
            size = model.log_scales[0].exp().sum().item()
    assert model.log_scales.grad is not None and size > 0

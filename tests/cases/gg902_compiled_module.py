# plain-torch: runs
"""GG902: a torch.compile'd model: the guard says once which part it cannot look inside."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Regressor(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 1))

    def forward(self, x):
        return self.body(x)


def buggy():
    # Not a bug: compiled code is simply invisible to graphguard. aot_eager compiles through
    # AOTAutograd like inductor does, without a C++ toolchain.
    torch.manual_seed(0)
    model = Regressor()
    cmodel = torch.compile(model, backend="aot_eager")
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    for step in range(3):
        x, y = torch.randn(8, 4), torch.randn(8, 1)
        pred = cmodel(x)
        loss = F.mse_loss(pred, y)
        opt.zero_grad()
        loss.backward()  # expect: GG902 pred
        opt.step()
    assert all(p.grad is not None for p in model.parameters())


def clean():
    torch.manual_seed(0)
    model = Regressor()
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    for step in range(3):
        x, y = torch.randn(8, 4), torch.randn(8, 1)
        pred = model(x)
        loss = F.mse_loss(pred, y)
        opt.zero_grad()
        loss.backward()
        opt.step()

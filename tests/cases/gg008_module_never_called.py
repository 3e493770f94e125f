# plain-torch: runs
"""GG008: a layer is built and optimized but forward never calls it (warning: some params train)."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Net(nn.Module):
    def __init__(self, use_extra):
        super().__init__()
        self.body = nn.Linear(4, 8)
        self.extra = nn.Linear(8, 8)
        self.head = nn.Linear(8, 1)
        self.use_extra = use_extra

    def forward(self, x):
        h = torch.relu(self.body(x))
        if self.use_extra:
            h = torch.relu(self.extra(h))
        return self.head(h)


def run(use_extra):
    torch.manual_seed(0)
    model = Net(use_extra)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = torch.randn(16, 4), torch.randn(16, 1)
    for _ in range(3):
        opt.zero_grad()
        loss = F.mse_loss(model(x), y)
        loss.backward()
        opt.step()  # expect: GG008 model.extra
    return model


def buggy():
    model = run(False)
    assert model.extra.weight.grad is None


def clean():
    run(True)
    # deliberately frozen: requires_grad=False parameters in the optimizer stay quiet
    torch.manual_seed(0)
    model = Net(False)
    model.extra.requires_grad_(False)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = torch.randn(16, 4), torch.randn(16, 1)
    for _ in range(3):
        opt.zero_grad()
        F.mse_loss(model(x), y).backward()
        opt.step()

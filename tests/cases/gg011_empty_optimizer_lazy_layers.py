# plain-torch: runs
"""GG011: a model that builds its layers on the first forward (`self.fc = nn.Linear(...)` inside
forward, to infer the input size) has no parameters yet when the optimizer is built, and PyTorch
raises "optimizer got an empty parameter list". Reported at the optimizer's line, before PyTorch
raises, naming the layer built inside forward (fix-at: that line)."""
import torch
import torch.nn as nn


class LazyNet(nn.Module):
    def forward(self, x):
        if not hasattr(self, "fc"):
            self.fc = nn.Linear(x.shape[1], 1)
        return self.fc(torch.relu(x))


class EagerNet(nn.Module):
    def __init__(self, d: int) -> None:
        super().__init__()
        self.fc = nn.Linear(d, 1)

    def forward(self, x):
        drop = nn.Dropout(0.1)  # a layer without parameters built in forward: harmless
        return self.fc(drop(torch.relu(x)))


def train(model):
    torch.manual_seed(0)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)  # expect: GG011 self.fc
    x, y = torch.randn(8, 5), torch.randn(8, 1)
    for _ in range(2):
        opt.zero_grad()
        ((model(x) - y) ** 2).mean().backward()
        opt.step()


def buggy():
    try:
        train(LazyNet())
    except ValueError as err:
        assert "empty parameter list" in str(err)
    else:
        raise AssertionError("expected PyTorch's empty parameter list error")


def clean():
    train(EagerNet(5))

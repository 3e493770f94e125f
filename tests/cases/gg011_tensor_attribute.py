# plain-torch: runs
"""GG011: a learnable temperature stored on the module as a plain tensor, not an nn.Parameter."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class TemperatureClassifier(nn.Module):
    def __init__(self, as_parameter=False) -> None:
        super().__init__()
        self.fc = nn.Linear(6, 4)
        init = torch.ones(1)
        self.temperature = nn.Parameter(init) if as_parameter else init.requires_grad_()

    def forward(self, x):
        return self.fc(x) / self.temperature  # expect: GG011 model.temperature


def batches(n=3):
    g = torch.Generator().manual_seed(12)
    for _ in range(n):
        x = torch.randn(20, 6, generator=g)
        yield x, x[:, :4].argmax(1)


def buggy():
    torch.manual_seed(0)
    model = TemperatureClassifier()
    optimizer = torch.optim.Adam(model.parameters(), lr=0.05)
    for x, y in batches():
        optimizer.zero_grad()
        F.cross_entropy(model(x), y).backward()
        optimizer.step()
    assert model.temperature.item() == 1.0 and model.temperature.grad is not None


def clean():
    torch.manual_seed(0)
    model = TemperatureClassifier(as_parameter=True)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.05)
    for x, y in batches():
        optimizer.zero_grad()
        F.cross_entropy(model(x), y).backward()
        optimizer.step()
    # adversarial training: the input's gradient is read by the user, not trained
    for x, y in batches():
        x = x.clone().requires_grad_(True)
        F.cross_entropy(model(x), y).backward()
        x_adv = (x + 0.1 * x.grad.sign()).detach()
        optimizer.zero_grad()
        F.cross_entropy(model(x_adv), y).backward()
        optimizer.step()

# plain-torch: runs
"""GG008 (info): a layer frozen with `requires_grad_(False)` after the optimizer was built: the
optimizer still holds it, and it never gets a gradient."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class TwoLayer(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.encode = nn.Linear(6, 8)
        self.head = nn.Linear(8, 2)

    def forward(self, x):
        return self.head(torch.relu(self.encode(x)))


def batches(n=3):
    g = torch.Generator().manual_seed(8)
    for _ in range(n):
        yield torch.randn(5, 6, generator=g), torch.randint(0, 2, (5,), generator=g)


def buggy():
    torch.manual_seed(0)
    model = TwoLayer()
    adam = torch.optim.Adam(model.parameters(), lr=1e-3)
    model.encode.requires_grad_(False)
    for x, y in batches():
        adam.zero_grad()
        F.cross_entropy(model(x), y).backward()
        adam.step()  # expect: GG008 model.encode
    assert model.encode.weight.grad is None


def clean():
    torch.manual_seed(0)
    model = TwoLayer()
    model.encode.requires_grad_(False)
    adam = torch.optim.Adam(filter(lambda p: p.requires_grad, model.parameters()), lr=1e-3)
    for x, y in batches():
        adam.zero_grad()
        F.cross_entropy(model(x), y).backward()
        adam.step()

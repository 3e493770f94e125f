# plain-torch: runs
"""GG011: a block's affine gamma / beta created as nn.Parameter inside forward, next to a conv the
optimizer holds: new, untrained values at every call, never given to the optimizer."""
import torch
import torch.nn as nn


class AffineBlock(nn.Module):
    def __init__(self, channels=4) -> None:
        super().__init__()
        self.conv = nn.Conv2d(channels, channels, 3, padding=1)
        self.channels = channels

    def forward(self, x):
        self.gamma = nn.Parameter(torch.ones(1, self.channels, 1, 1))
        self.beta = nn.Parameter(torch.zeros(1, self.channels, 1, 1))
        return x + self.gamma * self.conv(x) + self.beta  # expect: GG011 model.block.gamma


class AffineBlockInInit(AffineBlock):
    def __init__(self, channels=4) -> None:
        super().__init__(channels)
        self.gamma = nn.Parameter(torch.ones(1, channels, 1, 1))
        self.beta = nn.Parameter(torch.zeros(1, channels, 1, 1))

    def forward(self, x):
        return x + self.gamma * self.conv(x) + self.beta


class Net(nn.Module):
    def __init__(self, block) -> None:
        super().__init__()
        self.block = block
        self.head = nn.Linear(4, 2)

    def forward(self, x):
        return self.head(self.block(x).mean(dim=(2, 3)))


def train(model, steps=3):
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    g = torch.Generator().manual_seed(5)
    for _ in range(steps):
        x = torch.randn(3, 4, 5, 5, generator=g)
        y = torch.randint(0, 2, (3,), generator=g)
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    return opt


def buggy():
    torch.manual_seed(0)
    model = Net(AffineBlock())
    opt = train(model)
    gamma = model.block.gamma
    assert gamma.grad is not None
    assert all(gamma is not p for grp in opt.param_groups for p in grp["params"])


def clean():
    torch.manual_seed(0)
    train(Net(AffineBlockInInit()))

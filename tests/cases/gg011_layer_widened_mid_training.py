# plain-torch: runs
"""GG011: a helper widens a block's conv after some training; the optimizer built before never
sees the new layer (and keeps stepping the old one's parameters)."""
import torch
import torch.nn as nn
import torch.nn.functional as F


def widen(conv: nn.Conv2d, factor: int) -> nn.Conv2d:
    return nn.Conv2d(conv.in_channels, conv.out_channels * factor, conv.kernel_size,
                     padding=conv.padding, bias=conv.bias is not None)


class Block(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(2, 4, 3, padding=1, bias=False)

    def forward(self, x):
        h = F.relu(self.conv(x)).mean((2, 3))
        return h.view(h.shape[0], -1, 4).mean(1)

    def grow(self, factor: int) -> None:
        self.conv = widen(self.conv, factor)


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.block = Block()
        self.head = nn.Linear(4, 3)

    def forward(self, x):
        return self.head(self.block(x))


def batches(n=6):
    g = torch.Generator().manual_seed(5)
    for _ in range(n):
        yield torch.randn(4, 2, 6, 6, generator=g), torch.randint(0, 3, (4,), generator=g)


def train(model, optimizer, rebuild: bool):
    for i, (x, y) in enumerate(batches()):
        if i == 3:
            model.block.grow(2)
            model.head = nn.Linear(4, 3)
            if rebuild:
                optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
        optimizer.zero_grad()
        F.cross_entropy(model(x), y).backward()  # expect: GG011 model.head, GG011 model.block.conv
        optimizer.step()
    return optimizer


def buggy():
    torch.manual_seed(0)
    model = Net()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    train(model, optimizer, rebuild=False)
    held = {id(p) for g in optimizer.param_groups for p in g["params"]}
    assert id(model.block.conv.weight) not in held


def clean():
    torch.manual_seed(0)
    model = Net()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    optimizer = train(model, optimizer, rebuild=True)
    held = {id(p) for g in optimizer.param_groups for p in g["params"]}
    assert id(model.block.conv.weight) in held

# plain-torch: raises "modified by an inplace operation"
"""GG005: a residual added with += into a tensor the next layer saved as its input."""
import torch
import torch.nn as nn


class Block(nn.Module):
    def __init__(self, dim, fused_add):
        super().__init__()
        self.fc1 = nn.Linear(dim, dim)
        self.fc2 = nn.Linear(dim, dim)
        self.fused_add = fused_add

    def forward(self, x):
        h = self.fc1(x)
        update = self.fc2(h)  # fc2 saves its input h for the weight gradient
        if self.fused_add:
            h += update  # expect: GG005 h
        else:
            h = h + update
        return h


def run(fused_add):
    torch.manual_seed(0)
    model = nn.Sequential(Block(8, fused_add), nn.GELU(), nn.Linear(8, 1))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    for _ in range(2):
        x, y = torch.randn(4, 8), torch.randn(4, 1)
        loss = nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()


def buggy():
    run(fused_add=True)


def clean():
    run(fused_add=False)
    # ResNet style: `out += identity` after batch norm is fine (batch norm saves its input)
    conv, bn = nn.Conv2d(2, 2, 3, padding=1), nn.BatchNorm2d(2)
    x = torch.randn(2, 2, 5, 5)
    out = bn(conv(x))
    out += x
    out.relu_()
    out.sum().backward()

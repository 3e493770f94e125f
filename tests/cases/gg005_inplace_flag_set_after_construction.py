# plain-torch: raises "modified by an inplace operation"
"""GG005: a LeakyReLU built out of place is made in-place afterwards by a loop over modules();
the tanh before it saved the output the activation overwrites. The finding names the assignment
that set the flag (`layer.inplace`) and points its fix-at there."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Net(nn.Module):
    def __init__(self, squash: bool):
        super().__init__()
        self.squash = squash
        self.inp = nn.Linear(10, 24)
        self.act = nn.LeakyReLU(0.1)
        self.out = nn.Linear(24, 2)

    def forward(self, x):
        h = self.inp(x)
        if self.squash:
            h = torch.tanh(h)  # tanh saves its output for the backward
        h = self.act(h)  # expect: GG005 layer.inplace
        return self.out(h)


def make_inplace(model: nn.Module) -> nn.Module:
    for layer in model.modules():
        if isinstance(layer, nn.LeakyReLU):
            layer.inplace = True
    return model


def train(model, steps):
    opt = torch.optim.Adam(model.parameters(), 1e-3)
    for _ in range(steps):
        x, y = torch.randn(8, 10), torch.randint(0, 2, (8,))
        opt.zero_grad()
        F.cross_entropy(model(x), y).backward()
        opt.step()


def buggy():
    torch.manual_seed(0)
    train(make_inplace(Net(squash=True)), 2)


def clean():
    torch.manual_seed(0)
    train(make_inplace(Net(squash=False)), 3)  # linear saves its input, not its output
    train(Net(squash=True), 3)  # out of place after tanh
